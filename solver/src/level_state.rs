//! The retrograde phase's state of each entry (a position of the job: side to move and slot):
//! one byte, whatever the table's longest mate.
//!
//! Through the levels a position needs only to be known as illegal; or won or lost, and at
//! which level; or unresolved, with what its moves leaving the job give (a capture or exit that
//! wins at a given level, or one that loses no sooner than a given level, or one that holds)
//! and whether it is a candidate of the current loss level. Levels matter only near the level
//! being processed, so a byte holds them relative to a **window** of levels `[base, base +
//! window)`:
//!
//! - a position resolved at a level of the window holds that level (its parity tells win from
//!   loss: wins are found at odd levels, losses at even ones);
//! - one resolved before the window holds "won earlier" or "lost earlier": its level went to a
//!   **spill**, compressed a chunk at a time, when the window moved past it;
//! - an unresolved one whose capture wins, or loses at the latest, at a level of the window
//!   holds that level; one beyond the window is "far", its level in a short list per chunk
//!   (deep captures are rare);
//! - a capture that loses by the current level is one code, "loses by now": such a position can
//!   be lost at any level from then on, and the level its capture loses at no longer matters.
//!   Only such positions become candidates of a loss level (one whose capture loses later is
//!   tested at that level anyway, as a position falling due).
//!
//! Before a level that lies past the window, [`LevelStates::slide`] moves the window up. The
//! window spans 82 levels, so most tables never slide it.
//!
//! The states are held in segments of a quarter mebibyte, so that turning them into two-byte
//! codes or a finished table at the end ([`LevelStates::into_codes`],
//! [`LevelStates::into_values`]) returns each segment to the system as soon as
//! it is read: the phase's peak is one byte per entry, the change-over's two (less when each
//! side's codes are narrowed to a byte per slot as soon as they are built).

use crate::CHUNK_SLOTS;
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU16, Ordering::Relaxed};
use xiangqi::Color;
use xqtb_core::{Codes, Value};

/// Slots per segment: a whole number of chunks, and above glibc's mmap threshold (which the
/// binary fixes), so that a freed segment leaves the process at once.
const SEGMENT_SLOTS: usize = 1 << 18;
const _: () = assert!((SEGMENT_SLOTS as u64).is_multiple_of(CHUNK_SLOTS));

/// The largest window: three ranges of window codes (resolved, wins, loses) below the fixed
/// codes.
pub(crate) const MAX_WINDOW: u16 = 82;
const _: () = assert!(3 * MAX_WINDOW <= LOST_EARLIER as u16);

/// The fixed codes, above the window's.
const LOST_EARLIER: u8 = 248;
const WON_EARLIER: u8 = 249;
const LOSES_FAR: u8 = 250;
const WINS_FAR: u8 = 251;
/// Unresolved, and the moves leaving the job all lose, none later than the current level (or
/// there is none).
pub(crate) const LOSES_BY_NOW: u8 = 252;
/// Unresolved, its moves leaving the job losing by now, and a candidate of this loss level.
pub(crate) const CANDIDATE: u8 = 253;
/// Unresolved, and a move leaving the job draws (or leads to a rule-decided position): the
/// position cannot be lost.
pub(crate) const HOLDS: u8 = 254;
/// An illegal entry.
pub(crate) const ILLEGAL: u8 = 255;

/// A spilled entry's level, relative to the spill's base; [`NOT_SPILLED`] for the others.
const NOT_SPILLED: u8 = 0xFF;

/// What the moves leaving the job (captures and exits) give a position, as found before the
/// first level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Capture {
    /// Every move leaving the job loses, the slowest in this many plies (0: there is none).
    Loses(u16),
    /// A move leaving the job wins, the fastest in this many plies.
    Wins(u16),
    /// A move leaving the job draws (or leads to a rule-decided position).
    Holds,
}

/// The levels of the entries that left the window at one slide.
struct Spill {
    /// The window's base before the slide: a spilled byte is a level minus this.
    base: u16,
    /// Per chunk of both sides ([`LevelStates::chunk_of`]): the chunk's spilled levels, a byte
    /// per slot, zstd-compressed; `None` when the slide spilled nothing there.
    chunks: Vec<Option<Spilled>>,
}

/// A chunk's compressed spilled levels: in memory, or stored beside a job's states on local
/// disk ([`LevelStates::store_spills`]), since they are read only when the levels are done.
enum Spilled {
    Held(Box<[u8]>),
    Stored { at: u64, len: usize },
}

/// Reads back `bytes.len()` bytes that [`LevelStates::store_spills`] stored at `at` for a side.
pub(crate) type SpillReader<'r> = dyn Fn(u64, &mut [u8]) -> std::io::Result<()> + Sync + 'r;

/// The one-byte states of a job's entries (see the module's documentation).
pub(crate) struct LevelStates {
    window: u16,
    base: u16,
    /// Slots per side.
    len: usize,
    /// Chunks per side.
    chunks: usize,
    /// Per side to move: the states, in segments of [`SEGMENT_SLOTS`].
    segments: [Vec<Box<[AtomicU8]>>; 2],
    /// Per chunk of both sides: the far captures' levels, as (slot within the chunk, level),
    /// in slot order.
    far: Vec<Mutex<Vec<(u16, u16)>>>,
    spills: Vec<Spill>,
}

impl LevelStates {
    /// Every entry of a job of `len` slots per side illegal, with a window of `window` levels
    /// (at most [`MAX_WINDOW`], at least 2) from level 0.
    pub(crate) fn new(len: u64, window: u16) -> LevelStates {
        let mut states = LevelStates::without_states(len, window);
        for side in Color::ALL {
            states.fill_illegal(side);
        }
        states
    }

    /// As [`LevelStates::new`], but holding no states until [`LevelStates::put_segments`] gives
    /// them (a group of a job kept on disk).
    pub(crate) fn without_states(len: u64, window: u16) -> LevelStates {
        assert!((2..=MAX_WINDOW).contains(&window), "window {window}");
        let len = len as usize;
        let chunks = len.div_ceil(CHUNK_SLOTS as usize);
        LevelStates {
            window,
            base: 0,
            len,
            chunks,
            segments: [Vec::new(), Vec::new()],
            far: (0..2 * chunks).map(|_| Mutex::new(Vec::new())).collect(),
            spills: Vec::new(),
        }
    }

    /// Gives `side` its states, every entry illegal.
    fn fill_illegal(&mut self, side: Color) {
        assert!(
            self.segments[side.index()].is_empty(),
            "states held already"
        );
        let len = self.len;
        let segment = |start: usize| {
            let n = SEGMENT_SLOTS.min(len - start);
            (0..n).map(|_| AtomicU8::new(ILLEGAL)).collect::<Box<[_]>>()
        };
        self.segments[side.index()] = (0..len).step_by(SEGMENT_SLOTS).map(segment).collect();
    }

    /// The state of `(side, slot)`.
    #[inline(always)]
    pub(crate) fn at(&self, side: Color, slot: usize) -> &AtomicU8 {
        &self.segments[side.index()][slot / SEGMENT_SLOTS][slot % SEGMENT_SLOTS]
    }

    /// The states of the slots `start..end` of `side` (within one chunk).
    #[inline]
    pub(crate) fn run(&self, side: Color, start: usize, end: usize) -> &[AtomicU8] {
        let segment = &self.segments[side.index()][start / SEGMENT_SLOTS];
        &segment[start % SEGMENT_SLOTS..(end - 1) % SEGMENT_SLOTS + 1]
    }

    /// The chunk of both sides that `(side, slot)` lies in (Red's chunks first).
    #[inline]
    fn chunk_of(&self, side: Color, slot: usize) -> usize {
        side.index() * self.chunks + slot / CHUNK_SLOTS as usize
    }

    /// The code of a position resolved at `level` (a win when `level` is odd), which must lie
    /// in the window.
    #[inline]
    pub(crate) fn resolved(&self, level: u16) -> u8 {
        debug_assert!(level >= self.base && level - self.base < self.window);
        (level - self.base) as u8
    }

    /// The code of an unresolved position whose capture wins at `level`, in the window.
    #[inline]
    pub(crate) fn wins(&self, level: u16) -> u8 {
        debug_assert!(level >= self.base && level - self.base < self.window);
        (self.window + level - self.base) as u8
    }

    /// The code of an unresolved position whose captures lose, at the latest at `level`, in
    /// the window.
    #[inline]
    pub(crate) fn loses(&self, level: u16) -> u8 {
        debug_assert!(level >= self.base && level - self.base < self.window);
        (2 * self.window + level - self.base) as u8
    }

    /// Whether `code` is a position resolved as won (at whatever level).
    #[inline]
    pub(crate) fn is_won(&self, code: u8) -> bool {
        code == WON_EARLIER || (u16::from(code) < self.window && (self.base + code as u16) % 2 == 1)
    }

    /// Whether `code` is an unresolved position.
    #[inline]
    pub(crate) fn is_unresolved(&self, code: u8) -> bool {
        u16::from(code) >= self.window
            && code != ILLEGAL
            && code != WON_EARLIER
            && code != LOST_EARLIER
    }

    /// Whether `code` is an unresolved position that may become a candidate of loss level `n`:
    /// its captures all lose, by level `n` at the latest.
    #[inline]
    pub(crate) fn may_lose_at(&self, code: u8, n: u16) -> bool {
        code == LOSES_BY_NOW || {
            let i = u16::from(code).wrapping_sub(2 * self.window);
            i < self.window && self.base + i <= n
        }
    }

    /// The level of a capture still to fall due in window code `code` (a win or a loss in the
    /// window), if it holds one.
    #[inline]
    pub(crate) fn capture_level(&self, code: u8) -> Option<u16> {
        let i = u16::from(code).wrapping_sub(self.window);
        (i < 2 * self.window).then(|| self.base + i % self.window)
    }

    /// Writes the state of an unresolved position of `side`, in the job's initial pass (level
    /// 0): what its moves leaving the job give.
    pub(crate) fn set_unresolved(&self, side: Color, slot: usize, capture: Capture) {
        let far = |level: u16| level - self.base >= self.window;
        let code = match capture {
            Capture::Holds => HOLDS,
            Capture::Loses(0) => LOSES_BY_NOW,
            Capture::Wins(d) if far(d) => WINS_FAR,
            Capture::Loses(d) if far(d) => LOSES_FAR,
            Capture::Wins(d) => self.wins(d),
            Capture::Loses(d) => self.loses(d),
        };
        if code == WINS_FAR || code == LOSES_FAR {
            let d = match capture {
                Capture::Wins(d) | Capture::Loses(d) => d,
                Capture::Holds => unreachable!("a far capture has a level"),
            };
            let offset = (slot % CHUNK_SLOTS as usize) as u16;
            let mut far = self.far[self.chunk_of(side, slot)]
                .lock()
                .expect("far list");
            debug_assert!(far.last().is_none_or(|&(o, _)| o < offset));
            far.push((offset, d));
        }
        self.at(side, slot).store(code, Relaxed);
    }

    /// Whether level `n` lies past the window, so that [`LevelStates::slide`] must run first.
    pub(crate) fn must_slide(&self, n: u16) -> bool {
        n - self.base >= self.window
    }

    /// Moves the window up so that it starts at level `n - 1`, before level `n` is processed
    /// (no entry is a candidate then): the entries resolved before its new start go to a spill,
    /// the window codes move down, and the far captures that now fall in the window leave their
    /// lists. Sets `pending` (per chunk of both sides) to the first capture level from `n` on
    /// there, as the levels keep it.
    pub(crate) fn slide(&mut self, n: u16, pending: &[AtomicU16]) {
        let base = self.base;
        let new_base = n - 1;
        let shift = new_base - base;
        let window = self.window;
        let this = &*self;
        let spill = (0..2 * self.chunks)
            .into_par_iter()
            .map(|c| {
                let side = if c < this.chunks {
                    Color::Red
                } else {
                    Color::Black
                };
                let start = (c % this.chunks) * CHUNK_SLOTS as usize;
                let end = (start + CHUNK_SLOTS as usize).min(this.len);
                let states = this.run(side, start, end);
                let mut spilled = vec![NOT_SPILLED; end - start];
                let mut any = false;
                let mut next = u16::MAX;
                for (k, a) in states.iter().enumerate() {
                    let code = a.load(Relaxed);
                    let i = u16::from(code);
                    let new = if i < window {
                        if i < shift {
                            spilled[k] = code;
                            any = true;
                            if (base + i) % 2 == 1 {
                                WON_EARLIER
                            } else {
                                LOST_EARLIER
                            }
                        } else {
                            (i - shift) as u8
                        }
                    } else if i < 2 * window {
                        // A capture win falls due at its level at the latest: still unresolved,
                        // it lies at level `n` or later.
                        debug_assert!(base + i - window >= n);
                        next = next.min(base + i - window);
                        (i - shift) as u8
                    } else if i < 3 * window {
                        if base + i - 2 * window <= new_base {
                            LOSES_BY_NOW
                        } else {
                            next = next.min(base + i - 2 * window);
                            (i - shift) as u8
                        }
                    } else {
                        continue;
                    };
                    a.store(new, Relaxed);
                }
                let mut far = this.far[c].lock().expect("far list");
                far.retain(|&(offset, level)| {
                    let a = &states[offset as usize];
                    let code = a.load(Relaxed);
                    if code != WINS_FAR && code != LOSES_FAR {
                        return false; // resolved since
                    }
                    if level - new_base >= window {
                        return true;
                    }
                    next = next.min(level);
                    let i = level - new_base + if code == WINS_FAR { window } else { 2 * window };
                    a.store(i as u8, Relaxed);
                    false
                });
                pending[c].store(next, Relaxed);
                any.then(|| {
                    Spilled::Held(
                        zstd::bulk::compress(&spilled, 1)
                            .expect("compressing a byte array in memory")
                            .into_boxed_slice(),
                    )
                })
            })
            .collect();
        self.spills.push(Spill {
            base,
            chunks: spill,
        });
        self.base = new_base;
    }

    /// The two-byte codes of every entry, per side to move, for the rule phase of `asian`: its
    /// value where it was resolved, and where not the phase's first undecided state
    /// ([`crate::state::Undecided::new`]).
    pub(crate) fn into_codes(self) -> [Vec<u16>; 2] {
        self.convert(rule_phase_code, |code| code, |codes| codes)
    }

    /// Hands every spilled chunk held in memory to `store` (the chunk's side and compressed
    /// bytes; it returns where it put them) and keeps only where it went: a job with its states
    /// on local disk keeps its spills there too.
    pub(crate) fn store_spills(
        &mut self,
        store: &mut dyn FnMut(Color, &[u8]) -> std::io::Result<u64>,
    ) -> std::io::Result<()> {
        let chunks = self.chunks;
        for spill in &mut self.spills {
            for (c, chunk) in spill.chunks.iter_mut().enumerate() {
                if let Some(Spilled::Held(bytes)) = chunk {
                    let side = if c < chunks { Color::Red } else { Color::Black };
                    let at = store(side, bytes)?;
                    let len = bytes.len();
                    *chunk = Some(Spilled::Stored { at, len });
                }
            }
        }
        Ok(())
    }

    /// The finished values under `cycles-are-draws`, per side to move: the value where it was
    /// resolved, and a draw where not. A byte per entry whenever every mate is shorter than 254
    /// plies (the byte is then the value's code, 255 an illegal entry), written straight from
    /// the states, so that the finished table never takes more memory than the levels did.
    pub(crate) fn into_values(self) -> [Codes; 2] {
        // Every level resolved so far lies below the window's end.
        if !self.values_fit_a_byte() {
            return self.convert(draw_code, |code| code, Codes::from);
        }
        self.convert(draw_code, narrow_value, narrow_codes)
    }

    /// Whether every level resolved so far, plus one, fits a byte below 255 (the illegal
    /// entry's byte), so that the finished values can be written a byte per entry.
    pub(crate) fn values_fit_a_byte(&self) -> bool {
        self.base + self.window < u16::from(u8::MAX)
    }

    /// Every entry's two-byte code (`unresolved(holds)` for a position the levels did not
    /// resolve), stored as `out` makes it, each side handed to `finish` as soon as it is built,
    /// before the other side's is. Each segment is freed as soon as it is read, so the states
    /// and the result are never held whole together.
    fn convert<T: Copy + Default + Send + Sync, U>(
        mut self,
        unresolved: impl Fn(bool) -> u16 + Sync,
        out: impl Fn(u16) -> T + Sync,
        mut finish: impl FnMut(Vec<T>) -> U,
    ) -> [U; 2] {
        let held = |_: u64, _: &mut [u8]| -> std::io::Result<()> {
            unreachable!("the spills of states held whole stay in memory")
        };
        Color::ALL.map(|side| {
            let mut codes = vec![T::default(); self.len];
            self.convert_side_into(side, &unresolved, &out, &mut codes, &held)
                .expect("spills in memory");
            finish(codes)
        })
    }

    /// Writes the codes of `side`'s entries into `to` (a slot each), as
    /// [`LevelStates::convert`] does, freeing the side's segments as they are read; spills
    /// stored away ([`LevelStates::store_spills`]) are read back through `read`.
    pub(crate) fn convert_side_into<T: Send + Sync>(
        &mut self,
        side: Color,
        unresolved: &(impl Fn(bool) -> u16 + Sync),
        out: &(impl Fn(u16) -> T + Sync),
        to: &mut [T],
        read: &SpillReader,
    ) -> std::io::Result<()> {
        assert_eq!(to.len(), self.len, "one code per slot");
        let (window, base, chunks, spills) = (self.window, self.base, self.chunks, &self.spills);
        let chunks_per_segment = SEGMENT_SLOTS / CHUNK_SLOTS as usize;
        let segments = std::mem::take(&mut self.segments[side.index()]);
        segments
            .into_par_iter()
            .zip(to.par_chunks_mut(SEGMENT_SLOTS))
            .enumerate()
            .try_for_each(|(s, (segment, to))| -> std::io::Result<()> {
                for (k, (states, to)) in segment
                    .chunks(CHUNK_SLOTS as usize)
                    .zip(to.chunks_mut(CHUNK_SLOTS as usize))
                    .enumerate()
                {
                    let chunk = side.index() * chunks + s * chunks_per_segment + k;
                    let mut spilled: Vec<(u16, Vec<u8>)> = Vec::new();
                    for spill in spills {
                        let raw = match &spill.chunks[chunk] {
                            None => continue,
                            Some(Spilled::Held(bytes)) => decompress_spill(bytes)?,
                            Some(Spilled::Stored { at, len }) => {
                                let mut bytes = vec![0; *len];
                                read(*at, &mut bytes)?;
                                decompress_spill(&bytes)?
                            }
                        };
                        spilled.push((spill.base, raw));
                    }
                    let level_spilled = |k: usize| {
                        spilled
                            .iter()
                            .find_map(|(b, raw)| (raw[k] != NOT_SPILLED).then(|| b + raw[k] as u16))
                            .expect("an entry resolved before the window was spilled")
                    };
                    for (k, (a, to)) in states.iter().zip(to.iter_mut()).enumerate() {
                        let code = match a.load(Relaxed) {
                            ILLEGAL => Value::ILLEGAL_CODE,
                            WON_EARLIER | LOST_EARLIER => level_spilled(k) + 1,
                            HOLDS => unresolved(true),
                            c if u16::from(c) < window => base + c as u16 + 1,
                            _ => unresolved(false),
                        };
                        *to = out(code);
                    }
                }
                drop(segment);
                Ok(())
            })
    }

    /// The segments of `side`'s states, taken out (to be kept elsewhere until
    /// [`LevelStates::put_segments`] gives them back); the far lists and spills stay.
    pub(crate) fn take_segments(&mut self, side: Color) -> Vec<Box<[AtomicU8]>> {
        std::mem::take(&mut self.segments[side.index()])
    }

    /// Bytes the spills and the far captures' lists hold, which stay in memory whether or not
    /// the segments are held.
    pub(crate) fn aside_bytes(&self) -> usize {
        let spilled: usize = self
            .spills
            .iter()
            .flat_map(|s| s.chunks.iter().flatten())
            .map(|c| match c {
                Spilled::Held(bytes) => bytes.len(),
                Spilled::Stored { .. } => 0,
            })
            .sum();
        let far: usize = self
            .far
            .iter()
            .map(|f| f.lock().map_or(0, |f| f.capacity() * 4))
            .sum();
        spilled + far
    }

    /// Gives `side` its states back: segments as [`LevelStates::take_segments`] took them, or
    /// [`LevelStates::empty_segments`] filled since.
    pub(crate) fn put_segments(&mut self, side: Color, segments: Vec<Box<[AtomicU8]>>) {
        assert!(
            self.segments[side.index()].is_empty(),
            "states held already"
        );
        assert_eq!(
            segments.iter().map(|s| s.len()).sum::<usize>(),
            self.len,
            "a side's states"
        );
        self.segments[side.index()] = segments;
    }

    /// Segments for one side of a job of `len` slots, to be filled (zero bytes until then).
    pub(crate) fn empty_segments(len: usize) -> Vec<Box<[AtomicU8]>> {
        (0..len)
            .step_by(SEGMENT_SLOTS)
            .map(|start| {
                (start..len.min(start + SEGMENT_SLOTS))
                    .map(|_| AtomicU8::new(0))
                    .collect()
            })
            .collect()
    }
}

/// A chunk's spilled levels from their compressed bytes (an error when bytes stored away came
/// back damaged).
fn decompress_spill(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    zstd::bulk::decompress(bytes, CHUNK_SLOTS as usize)
}

/// The bytes of states held with exclusive access, to be copied to or from a file without a
/// byte-by-byte conversion.
pub(crate) fn bytes_of(states: &mut [AtomicU8]) -> &mut [u8] {
    // SAFETY: `AtomicU8` has the same size, alignment and bit validity as `u8` (as the standard
    // library documents), and the exclusive borrow means no atomic access can happen while the
    // bytes are borrowed.
    unsafe { std::slice::from_raw_parts_mut(states.as_mut_ptr().cast::<u8>(), states.len()) }
}

/// The rule phase's first code of a position the levels left unresolved
/// ([`crate::state::Undecided::new`]).
pub(crate) fn rule_phase_code(holds: bool) -> u16 {
    crate::state::Undecided::new(holds).code()
}

/// The finished code of a position the levels left unresolved under `cycles-are-draws`.
pub(crate) fn draw_code(_holds: bool) -> u16 {
    Value::DRAW_CODE
}

/// A finished value's code as a byte of a narrow side ([`narrow_codes`]).
pub(crate) fn narrow_value(code: u16) -> u8 {
    if code == Value::ILLEGAL_CODE {
        u8::MAX
    } else {
        code as u8
    }
}

/// A side whose bytes are its codes: every code below 255 stands for itself, and 255 for an
/// illegal entry.
pub(crate) fn narrow_codes(bytes: Vec<u8>) -> Codes {
    let dictionary = std::array::from_fn(|b| {
        if b == 255 {
            Value::ILLEGAL_CODE
        } else {
            b as u16
        }
    });
    Codes::from_bytes(bytes, dictionary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_and_spills_resolved_levels() {
        let n = 3 * CHUNK_SLOTS + 5;
        let mut s = LevelStates::new(n, 4);
        let pending: Vec<AtomicU16> = (0..8).map(|_| AtomicU16::new(0)).collect();
        s.at(Color::Red, 0).store(s.resolved(0), Relaxed);
        s.set_unresolved(Color::Red, 1, Capture::Wins(9));
        s.set_unresolved(Color::Red, 2, Capture::Loses(2));
        s.set_unresolved(Color::Black, 3, Capture::Holds);
        s.set_unresolved(Color::Black, CHUNK_SLOTS as usize + 1, Capture::Loses(6));
        s.at(Color::Black, 4).store(s.resolved(3), Relaxed);
        assert!(s.is_won(s.resolved(3)) && !s.is_won(s.resolved(2)));
        assert!(s.may_lose_at(s.loses(2), 2) && !s.may_lose_at(s.loses(2), 1));
        assert!(s.must_slide(4) && !s.must_slide(3));
        s.slide(4, &pending);
        // Level 0 left the window; level 3 stays; the loss by level 2 is now "by now".
        assert_eq!(s.at(Color::Red, 0).load(Relaxed), LOST_EARLIER);
        assert_eq!(s.at(Color::Black, 4).load(Relaxed), s.resolved(3));
        assert_eq!(s.at(Color::Red, 2).load(Relaxed), LOSES_BY_NOW);
        assert_eq!(
            s.at(Color::Black, CHUNK_SLOTS as usize + 1).load(Relaxed),
            s.loses(6)
        );
        assert_eq!(pending[5].load(Relaxed), 6);
        assert_eq!(s.at(Color::Red, 1).load(Relaxed), WINS_FAR);
        s.slide(8, &pending);
        assert_eq!(s.at(Color::Red, 1).load(Relaxed), s.wins(9));
        assert_eq!(pending[0].load(Relaxed), 9);
        assert_eq!(s.at(Color::Black, 4).load(Relaxed), WON_EARLIER);
        s.at(Color::Red, 1).store(s.resolved(9), Relaxed);
        let [red, black] = s.into_values();
        assert!(red.is_narrow() && black.is_narrow());
        assert_eq!(red.get(0), Value::Loss(0).encode());
        assert_eq!(red.get(1), Value::Win(9).encode());
        assert_eq!(red.get(2), Value::DRAW_CODE);
        assert_eq!(red.get(3), Value::ILLEGAL_CODE);
        assert_eq!(black.get(4), Value::Win(3).encode());
        assert_eq!(black.len(), n as usize);
    }
}
