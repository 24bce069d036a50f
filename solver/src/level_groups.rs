//! The retrograde phase's states of a job, held whole in memory or in **groups** of slots of
//! which one is in memory at a time, the others in a [`Scratch`] (local disk), so that a job
//! larger than its worker's memory can be solved.
//!
//! A group is a contiguous range of the job's slots (both sides to move), a whole number of
//! chunks; its states are a [`LevelStates`] of its own, and all groups slide their windows
//! together. A level is a pass over the groups that have work, each loaded, scanned as the
//! whole job is in memory, and stored again. A move that crosses from one group into another
//! cannot write the other group's byte directly, so two things stand in for it:
//!
//! - a **kind** per entry, two bits held in memory for the whole job ([`Kind`]: unresolved, a
//!   candidate marked from another group, lost, or won or illegal), which every group keeps up
//!   to date: it answers "is this position still unresolved" and "does this move lead to a
//!   position won for the opponent (or an illegal one)" for any slot, which is all a level asks
//!   of another group. A pass that resolves or marks an entry of another group sets its kind
//!   (and a flag on its chunk);
//! - when a group is next loaded, before it is scanned, its flagged chunks take those kinds
//!   into their bytes: a won kind over an unresolved byte is a win of the last win level, a
//!   marked kind a candidate of this loss level. Every flagged group is loaded in the pass right
//!   after the one that flagged it, so the level is always known.
//!
//! Both are exact: within a level every write is idempotent and independent of the order the
//! positions are visited in, so the states, and the finished table, are the same bit for bit as
//! with the whole job in memory (`tests::groups_give_the_tables_memory_gives`). Nothing is
//! queued, so the memory of a job in groups is its kinds (a quarter byte per entry) and one
//! group's states, whatever crosses between groups.
//!
//! A group is read back whole when it is loaded, but stored by its **changed chunks** only:
//! every write into a loaded group notes its chunk ([`Loaded::set`], [`Loaded::changed`]), and
//! storing the group writes those chunks over the bytes stored before. Most levels after the
//! first few change a small part of a group, so this saves most of the writing. Groups are
//! visited in ascending order, or descending when the one in memory lies in the upper half, so
//! that a pass most often starts with the group the previous pass ended with and need not load
//! it again. The levels a slide of the window spills ([`crate::level_state`]) are written after
//! their group's states in scratch, since they are read only when the levels are done.
//!
//! A job in groups can be shared by several workers ([`crate::level_share`]): each visits only
//! its own groups, keeps a replica of every entry's kind, and at the end of each pass sends
//! the others the kinds it wrote in the pass ([`LevelGroups::send_updates`]) and takes theirs
//! in ([`LevelGroups::receive_updates`]). Every change reaches the others in the pass that
//! makes it, so an entry the pass did not write needs no sending: a bit per entry marks those
//! written, and the updates hold only them (a receiver keeps the larger kind of each entry, so
//! the others' 0 changes nothing). A worker without the memory for that bit keeps one per word
//! of kinds and sends the words whole ([`crate::level_share::Sends`]).
//!
//! With the whole job in memory there is one group, always loaded, and no kinds.

use crate::CHUNK_SLOTS;
use crate::level_share::{self, ENTRIES_PER_WORD, Pass, Sends, Share, Updates};
use crate::level_state::{self, LevelStates};
use crate::position::Job;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};
use xiangqi::Color;
use xqtb_core::Codes;

/// Groups start at multiples of this many slots: whole chunks, and whole blocks of the stored
/// table (whatever its block size, up to this), so that each group can be encoded as a part of
/// the table on its own.
const GROUP_ALIGN: u64 = 1 << 16;
const _: () = assert!(GROUP_ALIGN.is_multiple_of(CHUNK_SLOTS));

/// Where a job keeps the states of the groups it does not hold in memory: each group's states
/// of one side to move as bytes at offsets, written and read back in pieces. Implemented over a
/// directory of local files by the shells (`worker::DirScratch`), and in memory for tests.
///
/// A group is read back whole when it is loaded, but only the chunks a pass changed are written
/// when it is stored: late levels change few, so most of a group's bytes are written once.
pub trait Scratch: Sync {
    /// Writes `bytes` at byte `at` of the states of `group` for `side` to move, over what was
    /// written there before.
    fn write_at(&self, group: usize, side: Color, at: u64, bytes: &[u8]) -> std::io::Result<()>;
    /// Reads back into `bytes` what [`Scratch::write_at`] wrote at bytes `at..at + bytes.len()`
    /// of `group` and `side`.
    fn read_at(&self, group: usize, side: Color, at: u64, bytes: &mut [u8]) -> std::io::Result<()>;
}

/// How a job holds its level states.
#[derive(Clone, Copy, Default)]
pub enum StateStore<'a> {
    /// Every state in memory, a byte per entry.
    #[default]
    Memory,
    /// In groups of about `group_slots` slots (rounded up to a multiple of 65,536), one in
    /// memory at a time and the others in `scratch`.
    Groups {
        /// Slots per group.
        group_slots: u64,
        /// Where the groups not in memory are kept.
        scratch: &'a dyn Scratch,
        /// With several workers sharing the job: this worker solves only the groups
        /// [`Share::owner`] gives it, and trades updates with the others through
        /// [`Share::exchange`].
        share: Option<Share<'a>>,
    },
}

/// How many groups a job of `len` slots per side has in groups of about `group_slots` slots
/// ([`StateStore::Groups`]).
pub fn group_count(len: u64, group_slots: u64) -> usize {
    len.div_ceil(group_step(group_slots)) as usize
}

/// The group of job slot `slot` in groups of about `group_slots` slots.
pub(crate) fn group_of(slot: u64, group_slots: u64) -> usize {
    (slot / group_step(group_slots)) as usize
}

/// The slots of each group but the last: `group_slots` rounded up to whole groups' alignment.
fn group_step(group_slots: u64) -> u64 {
    group_slots.div_ceil(GROUP_ALIGN).max(1) * GROUP_ALIGN
}

/// The kind of an entry, two bits: see the module documentation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u64)]
pub(crate) enum Kind {
    Unresolved = 0,
    /// Unresolved, and marked from another group as a candidate of this loss level.
    Marked = 1,
    Lost = 2,
    /// Won, or illegal: either way a move into it does not save the mover.
    WonOrIllegal = 3,
}

/// The kinds of every entry, 32 to a word, per side to move.
struct Kinds {
    words: [Vec<AtomicU64>; 2],
    /// With the job shared: per side, a bit per entry (or per word, as [`Sends`] says), set
    /// when the pass writes the entry's kind, for the updates sent at the end of the pass. Only
    /// the entries written need sending: the others hold the rest already.
    written: Option<[Vec<AtomicU64>; 2]>,
    /// The entries a bit of `written` stands for, as a power of two: 1, or
    /// [`ENTRIES_PER_WORD`] (a shift, since every write of the pass looks it up).
    bit_shift: u32,
}

impl Kinds {
    /// Every entry illegal; with the job shared, keeps track of the entries written as `sends`
    /// says.
    fn new(len: usize, sends: Option<Sends>) -> Kinds {
        let words = len.div_ceil(ENTRIES_PER_WORD);
        let entries_per_bit = match sends {
            Some(Sends::WrittenEntries) => 1,
            _ => ENTRIES_PER_WORD,
        };
        let bits = || (0..len.div_ceil(64 * entries_per_bit)).map(|_| AtomicU64::new(0));
        Kinds {
            words: [0, 1].map(|_| (0..words).map(|_| AtomicU64::new(u64::MAX)).collect()),
            written: sends.map(|_| [0, 1].map(|_| bits().collect())),
            bit_shift: entries_per_bit.trailing_zeros(),
        }
    }

    #[inline]
    fn word(&self, side: Color, slot: usize) -> (&AtomicU64, u32) {
        let shift = 2 * (slot % ENTRIES_PER_WORD) as u32;
        (&self.words[side.index()][slot / ENTRIES_PER_WORD], shift)
    }

    /// Notes, when the job is shared, that the pass writes the kind of entry `slot` of `side`.
    #[inline]
    fn touch(&self, side: Color, slot: usize) {
        if let Some(written) = &self.written {
            let bit = slot >> self.bit_shift;
            let (bits, bit) = (&written[side.index()][bit / 64], 1u64 << (bit % 64));
            if bits.load(Relaxed) & bit == 0 {
                bits.fetch_or(bit, Relaxed);
            }
        }
    }

    /// Takes the words of `side` that the pass wrote entries of, in index order, handing each
    /// to `f` with its index, what it holds now and the mask of the entries written in it
    /// (every entry, when a bit stands for a word).
    fn take_written(
        &self,
        side: Color,
        f: &mut dyn FnMut(u64, u64, u64) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some(written) = &self.written else {
            return Ok(());
        };
        let words = &self.words[side.index()];
        // The words of kinds one word of bits covers, and the bits each of them takes.
        let entries_per_bit = 1 << self.bit_shift;
        let covered = 64 * entries_per_bit / ENTRIES_PER_WORD;
        let bits_per_word = 64 / covered;
        for (i, bits) in written[side.index()].iter().enumerate() {
            let b = bits.swap(0, Relaxed);
            if b == 0 {
                continue;
            }
            for j in 0..covered {
                let entries = (b >> (j * bits_per_word)) & ((1 << bits_per_word) - 1);
                if entries != 0 {
                    let w = i * covered + j;
                    let mask = match entries_per_bit {
                        1 => level_share::kinds_mask(entries as u32),
                        _ => u64::MAX,
                    };
                    f(w as u64, words[w].load(Relaxed), mask)?;
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn get(&self, side: Color, slot: usize) -> Kind {
        let (w, shift) = self.word(side, slot);
        match (w.load(Relaxed) >> shift) & 3 {
            0 => Kind::Unresolved,
            1 => Kind::Marked,
            2 => Kind::Lost,
            _ => Kind::WonOrIllegal,
        }
    }

    /// Sets the kind of an entry; only its own bits change.
    #[inline]
    fn set(&self, side: Color, slot: usize, kind: Kind) {
        let (w, shift) = self.word(side, slot);
        w.fetch_and(!(3 << shift), Relaxed);
        w.fetch_or((kind as u64) << shift, Relaxed);
        self.touch(side, slot);
    }

    /// Makes an unresolved entry `kind`; `false` when it was not [`Kind::Unresolved`].
    #[inline]
    fn claim(&self, side: Color, slot: usize, kind: Kind) -> bool {
        let (w, shift) = self.word(side, slot);
        let claimed = w
            .fetch_update(Relaxed, Relaxed, |x| {
                ((x >> shift) & 3 == 0).then_some(x | (kind as u64) << shift)
            })
            .is_ok();
        if claimed {
            self.touch(side, slot);
        }
        claimed
    }

    /// The words of `side`, for the updates of other workers.
    fn side(&self, side: Color) -> &[AtomicU64] {
        &self.words[side.index()]
    }
}

/// A job's level states, in one group or several (see the module documentation).
pub(crate) struct LevelGroups<'s> {
    /// Each group's first job slot, and the job's length last.
    bounds: Vec<usize>,
    states: Vec<LevelStates>,
    /// Where the groups not loaded are kept; `None` with one group.
    scratch: Option<&'s dyn Scratch>,
    /// The group in memory.
    loaded: Option<usize>,
    /// With several groups: every entry's kind.
    kinds: Option<Kinds>,
    /// With several groups: per chunk of the job (Red's, then Black's), whether a pass changed
    /// a state there since its group was last stored.
    changed: Option<Vec<AtomicBool>>,
    /// The job's chunks per side to move.
    chunks: usize,
    /// What moving groups between memory and scratch has cost so far, for the log.
    traffic: Traffic,
    /// Per group and side, where the spills stored in scratch end: they follow the group's
    /// states (a byte per slot).
    spill_ends: Vec<[u64; 2]>,
    /// Per side: the segments of the group stored last, for the next group loaded to fill
    /// (memory the allocator would otherwise return and fault in again at every load).
    spare: [Vec<Box<[AtomicU8]>>; 2],
    /// With the job shared by several workers: how, and which groups are this worker's.
    share: Option<Share<'s>>,
    owned: Vec<bool>,
}

/// Bytes moved between memory and scratch, and the time it took.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Traffic {
    pub(crate) read: u64,
    pub(crate) written: u64,
    pub(crate) seconds: f64,
}

/// The group in memory, as the passes see it: job slots in and out of it.
pub(crate) struct Loaded<'x> {
    pub(crate) states: &'x LevelStates,
    pub(crate) start: usize,
    pub(crate) end: usize,
    groups: &'x LevelGroups<'x>,
}

impl Loaded<'_> {
    /// Whether job slot `slot` lies in this group.
    #[inline(always)]
    pub(crate) fn holds(&self, slot: usize) -> bool {
        slot.wrapping_sub(self.start) < self.end - self.start
    }

    /// The state of `(side, slot)`, a slot of this group. A pass that writes it through this
    /// reference notes the change with [`Loaded::changed`].
    #[inline(always)]
    pub(crate) fn at(&self, side: Color, slot: usize) -> &std::sync::atomic::AtomicU8 {
        self.states.at(side, slot - self.start)
    }

    /// Writes `code` into the state of `(side, slot)`, a slot of this group.
    #[inline(always)]
    pub(crate) fn set(&self, side: Color, slot: usize, code: u8) {
        self.at(side, slot).store(code, Relaxed);
        self.changed(side, slot);
    }

    /// Notes that the state of `(side, slot)`, a slot of this group, was changed: its chunk is
    /// written when the group is stored.
    #[inline(always)]
    pub(crate) fn changed(&self, side: Color, slot: usize) {
        if let Some(changed) = &self.groups.changed {
            let flag = &changed[side.index() * self.groups.chunks + slot / CHUNK_SLOTS as usize];
            // Read first: most writes find the flag set, and a store would take the cache line.
            if !flag.load(Relaxed) {
                flag.store(true, Relaxed);
            }
        }
    }

    /// The states of the slots `start..end` of `side` (within one chunk of this group).
    #[inline]
    pub(crate) fn run(
        &self,
        side: Color,
        start: usize,
        end: usize,
    ) -> &[std::sync::atomic::AtomicU8] {
        self.states.run(side, start - self.start, end - self.start)
    }

    /// Records the kind of an entry of this group that a pass resolved (or, in the first pass,
    /// found legal), for the other groups to read.
    #[inline]
    pub(crate) fn note(&self, side: Color, slot: usize, kind: Kind) {
        if let Some(k) = &self.groups.kinds {
            k.set(side, slot, kind);
        }
    }

    /// The kind of an entry (of any group).
    #[inline]
    pub(crate) fn kind(&self, side: Color, slot: usize) -> Kind {
        self.groups
            .kinds
            .as_ref()
            .expect("several groups")
            .get(side, slot)
    }

    /// Claims an unresolved entry of another group as `kind` (won, or marked); `false` if it
    /// was not unresolved.
    #[inline]
    pub(crate) fn claim_elsewhere(&self, side: Color, slot: usize, kind: Kind) -> bool {
        self.groups
            .kinds
            .as_ref()
            .expect("several groups")
            .claim(side, slot, kind)
    }
}

impl<'s> LevelGroups<'s> {
    /// The states of `job`, every entry illegal, with a window of `window` levels, held as
    /// `store` says.
    pub(crate) fn new(job: &Job, window: u16, store: StateStore<'s>) -> LevelGroups<'s> {
        let len = job.len() as usize;
        let (bounds, scratch, share) = match store {
            StateStore::Memory => (vec![0, len], None, None),
            StateStore::Groups {
                group_slots,
                scratch,
                share,
            } => {
                let step = group_step(group_slots) as usize;
                let mut b: Vec<usize> = (0..len).step_by(step).collect();
                b.push(len);
                (b, Some(scratch), share)
            }
        };
        let groups = bounds.len() - 1;
        let several = groups > 1;
        let owned = (0..groups)
            .map(|g| share.is_none_or(|s| s.owner(g) == s.worker))
            .collect();
        LevelGroups {
            // With several groups each is given its states when the first pass creates it.
            states: (0..groups)
                .map(|g| {
                    let len = (bounds[g + 1] - bounds[g]) as u64;
                    if several {
                        LevelStates::without_states(len, window)
                    } else {
                        LevelStates::new(len, window)
                    }
                })
                .collect(),
            scratch: scratch.filter(|_| several),
            loaded: (!several).then_some(0),
            kinds: several.then(|| Kinds::new(len, share.as_ref().map(|s| s.sends))),
            changed: several.then(|| {
                (0..2 * job.chunks)
                    .map(|_| AtomicBool::new(false))
                    .collect()
            }),
            chunks: job.chunks as usize,
            traffic: Traffic::default(),
            spill_ends: (0..groups)
                .map(|g| [(bounds[g + 1] - bounds[g]) as u64; 2])
                .collect(),
            spare: [Vec::new(), Vec::new()],
            bounds,
            share,
            owned,
        }
    }

    /// The groups this worker solves: all of them unless the job is shared.
    pub(crate) fn own_groups(&self) -> Vec<usize> {
        (0..self.count()).filter(|&g| self.owned[g]).collect()
    }

    /// Whether job slot `slot` lies in one of this worker's groups.
    pub(crate) fn owns(&self, slot: usize) -> bool {
        self.owned[self.bounds.partition_point(|&b| b <= slot) - 1]
    }

    /// How the job is shared, if it is.
    pub(crate) fn share(&self) -> Option<Share<'s>> {
        self.share
    }

    /// With the job shared, hands the other workers this worker's updates of `pass`
    /// ([`crate::level_share`]): the kinds written in it (the start's words whole; after a
    /// loss level's first pass only those of other workers' entries, whose marks are then
    /// dropped here), the entries it resolved, and after the start the last level a capture
    /// falls due at.
    pub(crate) fn send_updates(
        &self,
        pass: Pass,
        resolved: u64,
        last_capture: u16,
    ) -> std::io::Result<()> {
        let Some(share) = self.share else {
            return Ok(());
        };
        let empty = || Updates {
            pass,
            ..Updates::default()
        };
        let mut batch = empty();
        let mut words = 0;
        if let Some(kinds) = &self.kinds {
            for side in Color::ALL {
                kinds.take_written(side, &mut |w, word, written| {
                    let own = self.owns(w as usize * ENTRIES_PER_WORD);
                    if matches!(pass, Pass::Mark(_)) {
                        if own {
                            return Ok(());
                        }
                        let a = &kinds.side(side)[w as usize];
                        a.store(level_share::unmark_word(a.load(Relaxed)), Relaxed);
                    }
                    // The start's words whole (the others store them); after it, the entries
                    // written in the pass: the others hold the rest already.
                    let word = match pass {
                        Pass::Start => word,
                        _ => word & written,
                    };
                    if word == 0 && pass != Pass::Start {
                        return Ok(());
                    }
                    batch.words[side.index()].push((w, word));
                    words += 1;
                    if words == level_share::BATCH_WORDS {
                        words = 0;
                        share
                            .exchange
                            .send(share.worker, std::mem::replace(&mut batch, empty()))?;
                    }
                    Ok(())
                })?;
            }
        }
        batch.resolved = resolved;
        batch.last_capture = last_capture;
        share.exchange.send(share.worker, batch)
    }

    /// With the job shared, takes in the other workers' updates of `pass` (see
    /// [`LevelGroups::send_updates`]), calling `on_own(side, slot, kind)` for each entry of
    /// this worker's whose kind they changed. Returns the entries they resolved in the pass and
    /// the last level their captures fall due at.
    pub(crate) fn receive_updates(
        &self,
        pass: Pass,
        on_own: &mut dyn FnMut(Color, usize, Kind),
    ) -> std::io::Result<(u64, u16)> {
        let Some(share) = self.share else {
            return Ok((0, 0));
        };
        let (mut resolved, mut last_capture) = (0, 0);
        share.exchange.receive(share.worker, pass, &mut |u: Updates| {
            if u.pass != pass {
                return Err(std::io::Error::other(format!(
                    "updates of {:?} came during {pass:?}: the workers sharing the job are out of step",
                    u.pass
                )));
            }
            resolved += u.resolved;
            last_capture = last_capture.max(u.last_capture);
            let Some(kinds) = &self.kinds else {
                return Ok(());
            };
            for side in Color::ALL {
                let words = kinds.side(side);
                for &(w, word) in &u.words[side.index()] {
                    let Some(a) = words.get(w as usize) else {
                        return Err(std::io::Error::other(format!(
                            "updates of {pass:?} name word {w}, past the job's {}",
                            words.len()
                        )));
                    };
                    let own = self.owns(w as usize * ENTRIES_PER_WORD);
                    match (pass, own) {
                        // The start sends each worker's own entries, which no other writes.
                        (Pass::Start, false) => a.store(word, Relaxed),
                        (Pass::Start, true) | (Pass::Mark(_), false) => {}
                        _ => {
                            let old = a
                                .fetch_update(Relaxed, Relaxed, |x| {
                                    Some(level_share::merge_word(x, word))
                                })
                                .expect("always updates");
                            let new = level_share::merge_word(old, word);
                            if own && new != old {
                                self.changed_kinds(side, w, old, new, on_own);
                            }
                        }
                    }
                }
            }
            Ok(())
        })?;
        Ok((resolved, last_capture))
    }

    /// Calls `on_own` for each entry of word `w` of `side` whose kind went from `old` to `new`.
    fn changed_kinds(
        &self,
        side: Color,
        w: u64,
        old: u64,
        new: u64,
        on_own: &mut dyn FnMut(Color, usize, Kind),
    ) {
        let mut diff = old ^ new;
        while diff != 0 {
            let i = diff.trailing_zeros() / 2;
            diff &= !(3 << (2 * i));
            let slot = w as usize * ENTRIES_PER_WORD + i as usize;
            on_own(
                side,
                slot,
                self.kinds.as_ref().expect("kinds").get(side, slot),
            );
        }
    }

    /// Number of groups.
    pub(crate) fn count(&self) -> usize {
        self.states.len()
    }

    /// The groups in the order a pass visits them: ascending, or descending when the group in
    /// memory lies in the upper half, so that the pass most often starts with it (the last
    /// pass ended with it, and the groups beyond it had no work then).
    pub(crate) fn pass_order(&self) -> Vec<usize> {
        let mut order = self.own_groups();
        let n = self.count();
        if self.loaded.is_some_and(|g| n > 1 && 2 * g >= n) {
            order.reverse();
        }
        order
    }

    /// The job slots of group `g`.
    pub(crate) fn slots(&self, g: usize) -> std::ops::Range<usize> {
        self.bounds[g]..self.bounds[g + 1]
    }

    /// The states of any of this worker's groups, for their window codes (every group has
    /// the same window).
    pub(crate) fn codes(&self) -> &LevelStates {
        let first = self
            .owned
            .iter()
            .position(|&o| o)
            .expect("a group of this worker's");
        &self.states[first]
    }

    /// Brings group `g` into memory, storing the one there first.
    pub(crate) fn load(&mut self, g: usize) -> std::io::Result<()> {
        if self.loaded != Some(g) {
            self.unload()?;
            let started = std::time::Instant::now();
            for side in Color::ALL {
                self.read_side(g, side)?;
            }
            self.traffic.seconds += started.elapsed().as_secs_f64();
            self.loaded = Some(g);
        }
        Ok(())
    }

    /// Bytes every group's spills and far captures' lists hold in memory.
    pub(crate) fn aside_bytes(&self) -> usize {
        self.states.iter().map(LevelStates::aside_bytes).sum()
    }

    /// What moving groups between memory and scratch has cost so far.
    pub(crate) fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Writes the changed chunks of group `h` (in memory) to scratch.
    fn store(&mut self, h: usize) -> std::io::Result<()> {
        let scratch = self.scratch.expect("several groups");
        for side in Color::ALL {
            let runs = self.take_changed(side, self.slots(h));
            let mut segments = self.states[h].take_segments(side);
            let mut at = 0;
            for segment in &mut segments {
                let bytes = &*level_state::bytes_of(segment);
                let end = at + bytes.len();
                for run in runs.iter().filter(|r| r.start < end && at < r.end) {
                    let (from, to) = (run.start.max(at), run.end.min(end));
                    scratch.write_at(h, side, from as u64, &bytes[from - at..to - at])?;
                    self.traffic.written += (to - from) as u64;
                }
                at = end;
            }
            self.spare[side.index()] = segments;
        }
        Ok(())
    }

    /// Takes the changed flags of the chunks of `side` over the job slots `slots` (a group's),
    /// and returns the changed slots as runs relative to `slots.start`, adjacent chunks joined.
    fn take_changed(
        &self,
        side: Color,
        slots: std::ops::Range<usize>,
    ) -> Vec<std::ops::Range<usize>> {
        let changed = self.changed.as_ref().expect("several groups");
        let chunk = CHUNK_SLOTS as usize;
        let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
        for s in slots.clone().step_by(chunk) {
            if !changed[side.index() * self.chunks + s / chunk].swap(false, Relaxed) {
                continue;
            }
            let run = s - slots.start..(s + chunk).min(slots.end) - slots.start;
            match runs.last_mut() {
                Some(last) if last.end == run.start => last.end = run.end,
                _ => runs.push(run),
            }
        }
        runs
    }

    /// Notes every chunk of group `g` as changed (a group created, or its window slid).
    fn all_changed(&self, g: usize) {
        if let Some(changed) = &self.changed {
            let chunk = CHUNK_SLOTS as usize;
            for s in self.slots(g).step_by(chunk) {
                for side in Color::ALL {
                    changed[side.index() * self.chunks + s / chunk].store(true, Relaxed);
                }
            }
        }
    }

    /// Segments to hold the states of group `g` for `side`: the spare ones when they fit.
    fn segments_for(&mut self, g: usize, side: Color) -> Vec<Box<[AtomicU8]>> {
        let len = self.bounds[g + 1] - self.bounds[g];
        let spare = std::mem::take(&mut self.spare[side.index()]);
        if spare.iter().map(|s| s.len()).sum::<usize>() == len {
            spare
        } else {
            LevelStates::empty_segments(len)
        }
    }

    /// Reads the states of group `g` for `side` back from scratch.
    fn read_side(&mut self, g: usize, side: Color) -> std::io::Result<()> {
        let scratch = self.scratch.expect("several groups");
        let mut segments = self.segments_for(g, side);
        let mut at = 0;
        for segment in &mut segments {
            let bytes = level_state::bytes_of(segment);
            scratch.read_at(g, side, at, bytes)?;
            at += bytes.len() as u64;
            self.traffic.read += bytes.len() as u64;
        }
        self.states[g].put_segments(side, segments);
        Ok(())
    }

    /// Stores the group in memory, if several groups share it (the first pass creates each
    /// group in memory and stores it with this).
    pub(crate) fn unload(&mut self) -> std::io::Result<()> {
        if self.scratch.is_some()
            && let Some(h) = self.loaded.take()
        {
            let started = std::time::Instant::now();
            self.store(h)?;
            self.traffic.seconds += started.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Stores the group in memory and lets go of what only the levels need (the kinds, a
    /// quarter byte per entry, and the changed flags), before the groups are read back to be
    /// turned into codes or values.
    fn end_levels(&mut self) -> std::io::Result<()> {
        self.unload()?;
        self.kinds = None;
        self.changed = None;
        Ok(())
    }

    /// Brings group `g` into memory for the first time, every entry illegal (the first
    /// pass), storing the one there first.
    pub(crate) fn create(&mut self, g: usize) -> std::io::Result<()> {
        if self.loaded == Some(g) {
            return Ok(());
        }
        self.unload()?;
        for side in Color::ALL {
            let mut segments = self.segments_for(g, side);
            for segment in &mut segments {
                level_state::bytes_of(segment).fill(level_state::ILLEGAL);
            }
            self.states[g].put_segments(side, segments);
        }
        self.all_changed(g);
        self.loaded = Some(g);
        Ok(())
    }

    /// The group in memory.
    pub(crate) fn current(&self) -> Loaded<'_> {
        let g = self.loaded.expect("a group in memory");
        Loaded {
            states: &self.states[g],
            start: self.bounds[g],
            end: self.bounds[g + 1],
            groups: self,
        }
    }

    /// Slides the window of the group in memory before level `n` ([`LevelStates::slide`],
    /// which changes any of its states, and sets `pending` for its chunks). With several groups
    /// the levels the slide spilled go to scratch, after the group's states: they are read only
    /// when the levels are done, and would otherwise grow in memory with the job.
    pub(crate) fn slide_current(
        &mut self,
        n: u16,
        pending: &[std::sync::atomic::AtomicU16],
    ) -> std::io::Result<()> {
        let g = self.loaded.expect("a group in memory");
        self.all_changed(g);
        self.states[g].slide(n, pending);
        if let Some(scratch) = self.scratch {
            let ends = &mut self.spill_ends[g];
            self.states[g].store_spills(&mut |side, bytes| {
                let at = ends[side.index()];
                scratch.write_at(g, side, at, bytes)?;
                ends[side.index()] += bytes.len() as u64;
                Ok(at)
            })?;
        }
        Ok(())
    }

    /// The two-byte codes of every entry for the rule phase (see
    /// [`LevelStates::into_codes`]).
    pub(crate) fn into_codes(mut self) -> std::io::Result<[Vec<u16>; 2]> {
        if self.count() == 1 {
            return Ok(self.states.pop().expect("one group").into_codes());
        }
        self.gather(level_state::rule_phase_code, |code| code, |codes| codes)
    }

    /// The finished values under `cycles-are-draws` (see [`LevelStates::into_values`]).
    pub(crate) fn into_values(mut self) -> std::io::Result<[Codes; 2]> {
        if self.count() == 1 {
            return Ok(self.states.pop().expect("one group").into_values());
        }
        if self.codes().values_fit_a_byte() {
            self.gather(
                level_state::draw_code,
                level_state::narrow_value,
                level_state::narrow_codes,
            )
        } else {
            self.gather(level_state::draw_code, |code| code, Codes::from)
        }
    }

    /// The finished values under `cycles-are-draws` (see [`LevelStates::into_values`]) a group
    /// at a time, in slot order: `on_part` gets each group's job slots and values, so that the
    /// whole table need never be in memory.
    pub(crate) fn into_value_parts(
        mut self,
        on_part: &mut dyn FnMut(std::ops::Range<usize>, [Codes; 2]),
    ) -> std::io::Result<()> {
        if self.count() == 1 {
            let values = self.states.pop().expect("one group").into_values();
            on_part(0..self.bounds[1], values);
            return Ok(());
        }
        self.end_levels()?;
        // Every group narrow or every group wide, as the whole job would be.
        let narrow = self.codes().values_fit_a_byte();
        for g in self.own_groups() {
            let red = self.values_of(g, Color::Red, narrow)?;
            let black = self.values_of(g, Color::Black, narrow)?;
            on_part(self.bounds[g]..self.bounds[g + 1], [red, black]);
        }
        Ok(())
    }

    /// The finished values of group `g` for `side`, read back from scratch: a byte per entry
    /// when `narrow`, else two.
    fn values_of(&mut self, g: usize, side: Color, narrow: bool) -> std::io::Result<Codes> {
        let len = self.bounds[g + 1] - self.bounds[g];
        self.read_side(g, side)?;
        let scratch = self.scratch.expect("several groups");
        let read = |at, bytes: &mut [u8]| scratch.read_at(g, side, at, bytes);
        let states = &mut self.states[g];
        let draw = level_state::draw_code;
        Ok(if narrow {
            let mut to = vec![0u8; len];
            states.convert_side_into(side, &draw, &level_state::narrow_value, &mut to, &read)?;
            level_state::narrow_codes(to)
        } else {
            let mut wide = vec![0u16; len];
            states.convert_side_into(side, &draw, &|c| c, &mut wide, &read)?;
            Codes::from(wide)
        })
    }

    /// Every entry's code from several groups, a side at a time, each group read back in turn.
    fn gather<T: Copy + Default + Send + Sync, U>(
        mut self,
        unresolved: impl Fn(bool) -> u16 + Sync,
        out: impl Fn(u16) -> T + Sync,
        mut finish: impl FnMut(Vec<T>) -> U,
    ) -> std::io::Result<[U; 2]> {
        self.end_levels()?;
        let len = *self.bounds.last().expect("bounds");
        let mut side_codes = |side: Color| -> std::io::Result<U> {
            let mut codes = vec![T::default(); len];
            for g in 0..self.count() {
                self.read_side(g, side)?;
                let to = &mut codes[self.bounds[g]..self.bounds[g + 1]];
                let scratch = self.scratch.expect("several groups");
                let read = |at, bytes: &mut [u8]| scratch.read_at(g, side, at, bytes);
                self.states[g].convert_side_into(side, &unresolved, &out, to, &read)?;
            }
            Ok(finish(codes))
        };
        let red = side_codes(Color::Red)?;
        let black = side_codes(Color::Black)?;
        Ok([red, black])
    }
}

/// Groups kept in memory, as a directory of files would keep them; counts the bytes
/// written.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct MemoryScratch {
    groups: std::sync::Mutex<std::collections::HashMap<(usize, Color), Vec<u8>>>,
    pub(crate) written: std::sync::atomic::AtomicUsize,
}

#[cfg(test)]
impl Scratch for MemoryScratch {
    fn write_at(&self, group: usize, side: Color, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.written.fetch_add(bytes.len(), Relaxed);
        let mut groups = self.groups.lock().unwrap();
        let stored = groups.entry((group, side)).or_default();
        let (at, end) = (at as usize, at as usize + bytes.len());
        if stored.len() < end {
            stored.resize(end, 0);
        }
        stored[at..end].copy_from_slice(bytes);
        Ok(())
    }

    fn read_at(&self, group: usize, side: Color, at: u64, bytes: &mut [u8]) -> std::io::Result<()> {
        let groups = self.groups.lock().unwrap();
        let at = at as usize;
        bytes.copy_from_slice(&groups[&(group, side)][at..at + bytes.len()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{GROUP_ALIGN, MemoryScratch, StateStore};
    use crate::CHUNK_SLOTS;
    use std::sync::atomic::Ordering::Relaxed;
    use xiangqi::Color;
    use xqtb_core::{RuleSet, Signature, SlotRange, TableId};

    /// A job solved with its states in groups gives the table the whole job in memory gives,
    /// bit for bit, under both rule sets, whatever the group size and the window of levels
    /// (small windows slide at almost every level, spilling every group). KRvKN has mates of
    /// 25 plies and captures into two tables; KCvKA fits one group; KNPvK is solved whole in
    /// groups under `cycles-are-draws`, a pawn slice at a time under `asian`.
    #[test]
    fn groups_give_the_tables_memory_gives() {
        for sig in ["KRvKN", "KCvKA", "KNPvK"] {
            let sig: Signature = sig.parse().unwrap();
            for rules in [RuleSet::CyclesAreDraws, RuleSet::Asian] {
                let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
                let id = TableId::new(rules, sig);
                let whole = tables.get(&id).unwrap().clone();
                for (group_slots, window) in [(CHUNK_SLOTS, 82), (5 * CHUNK_SLOTS, 3), (1, 2)] {
                    crate::retrograde::WINDOW.store(window, Relaxed);
                    let scratch = MemoryScratch::default();
                    let store = StateStore::Groups {
                        group_slots,
                        scratch: &scratch,
                        share: None,
                    };
                    let slots = SlotRange::whole(&sig);
                    let t = crate::solve_range_in(id, slots, store, &tables, &|_| {}).unwrap();
                    crate::retrograde::WINDOW.store(crate::level_state::MAX_WINDOW, Relaxed);
                    for side in Color::ALL {
                        assert!(
                            t.codes(side).to_vec() == whole.codes(side).to_vec(),
                            "{sig} {rules:?}: groups of {group_slots} slots, window {window}"
                        );
                    }
                    let index = xqtb_core::TableIndex::new(sig);
                    let largest_job = if rules.solves_slices_apart(&index) {
                        index.slices().iter().map(|s| s.slots.len()).max().unwrap()
                    } else {
                        index.size()
                    };
                    let several = largest_job > group_slots.div_ceil(GROUP_ALIGN) * GROUP_ALIGN;
                    assert_eq!(
                        scratch.written.load(Relaxed) > 0,
                        several,
                        "{sig}: groups stored"
                    );
                }
            }
        }
    }
}
