//! The perfect-hash index: a bijection between the placements of a signature's pieces (mirror
//! images identified) and the slots `0..size`.
//!
//! A table without pawns is numbered by one [`layout`]. A table with pawns is split into *pawn
//! slices* (index scheme 2): the placements in which each side's pawns stand on given ranks.
//! Pawns never move back, so a slice's positions lead only into the slice itself, into slices
//! with a pawn further forward, or (by a capture) into other tables: a slice can be solved as a
//! job of its own once those are. Each slice is numbered by its own layout and takes one
//! contiguous range of slots; slices come in order of their pawns' advance (the most advanced
//! first, so every slice's dependencies come before it) and each starts at a multiple of
//! [`SLICE_ALIGN`] slots, so that a table is the concatenation of its slices' storage blocks.
//! The padding between slices holds no placement. Index scheme 1, one layout for every
//! placement, is how tables with pawns were numbered before slices; it stays readable.

mod layout;

pub use layout::MAX_PIECES;

use crate::signature::Signature;
use layout::Layout;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use xiangqi::{Board, Color, Piece, PieceKind, Square, legal_squares};

/// Index scheme of tables numbered by one layout: every table without pawns, and tables with
/// pawns written before slices existed.
pub const SCHEME_WHOLE: u32 = 1;

/// Index scheme of tables with pawns numbered slice by slice.
pub const SCHEME_SLICED: u32 = 2;

/// One slice's numbering and where its slots start.
#[derive(Clone)]
struct Part {
    base: u64,
    layout: Layout,
}

/// The index of one table: position <-> slot, for either side to move (both sides use the same
/// numbering, so a table holds `2 * size` entries).
///
/// Cheap to clone: the layouts are shared by every clone, and by every index of the same table
/// and scheme built while another is alive (a table of many pawn slices holds one index per
/// part, and a slice's layouts take hundreds of kilobytes).
#[derive(Clone)]
pub struct TableIndex {
    signature: Signature,
    scheme: u32,
    size: u64,
    layouts: Arc<Layouts>,
}

/// What an index is built from, shared between the clones of an index.
struct Layouts {
    /// One per slice, in slot order.
    parts: Vec<Part>,
    slices: Vec<Slice>,
    /// The flat positions of each side's pawns (`first..first + count`), for finding the slice
    /// of a placement.
    pawn_groups: Vec<(usize, usize)>,
    /// The slice of each pawn-rank profile (see [`profile_key`]).
    slice_by_profile: HashMap<u64, usize>,
}

/// A key of the pawn ranks of a placement: the sorted ranks of each side's pawns, four bits
/// each, Red's first.
fn profile_key(ranks: impl IntoIterator<Item = u8>) -> u64 {
    ranks.into_iter().fold(1u64, |k, r| (k << 4) | r as u64)
}

/// Every multiset of `n` ranks drawn from `ranks` (sorted), each in increasing order.
fn rank_multisets(ranks: &[u8], n: usize) -> Vec<Vec<u8>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &r) in ranks.iter().enumerate() {
        for mut rest in rank_multisets(&ranks[i..], n - 1) {
            rest.insert(0, r);
            out.push(rest);
        }
    }
    out
}

/// How far a side's pawns have come: the ranks advanced, summed.
fn advancement(color: Color, ranks: &[u8]) -> u32 {
    ranks
        .iter()
        .map(|&r| match color {
            Color::Red => r as u32,
            Color::Black => 9 - r as u32,
        })
        .sum()
}

impl TableIndex {
    /// Builds the index of `signature`: sliced when it has pawns.
    pub fn new(signature: Signature) -> TableIndex {
        Self::with_scheme(signature, SCHEME_SLICED).expect("a known scheme")
    }

    /// Builds the index of `signature` under index scheme `scheme` (a table's header names the
    /// scheme it was written with); `None` for a scheme this build does not know. A table
    /// without pawns has one layout under every scheme, and reports [`SCHEME_WHOLE`].
    pub fn with_scheme(signature: Signature, scheme: u32) -> Option<TableIndex> {
        type Cache = Mutex<HashMap<(Signature, u32), Weak<Layouts>>>;
        static LIVE: OnceLock<Cache> = OnceLock::new();
        let live = LIVE.get_or_init(Default::default);
        let key = (signature, scheme);
        let found = live
            .lock()
            .expect("index cache")
            .get(&key)
            .and_then(Weak::upgrade);
        if let Some(layouts) = found {
            return Some(TableIndex::from_layouts(signature, layouts));
        }
        let built = Self::build(signature, scheme)?;
        let mut live = live.lock().expect("index cache");
        live.retain(|_, w| w.strong_count() > 0);
        live.insert(key, Arc::downgrade(&built.layouts));
        Some(built)
    }

    /// An index over `layouts`, its scheme and size read from them.
    fn from_layouts(signature: Signature, layouts: Arc<Layouts>) -> TableIndex {
        let scheme = if layouts.slice_by_profile.is_empty() {
            SCHEME_WHOLE
        } else {
            SCHEME_SLICED
        };
        let size = layouts.slices.last().map_or(0, |s| s.slots.end);
        TableIndex {
            signature,
            scheme,
            size,
            layouts,
        }
    }

    /// Builds the layouts of [`TableIndex::with_scheme`].
    fn build(signature: Signature, scheme: u32) -> Option<TableIndex> {
        let m = *signature.material();
        let pawns = Color::ALL.map(|c| m.count(c, PieceKind::Pawn) as usize);
        let sliced = match scheme {
            SCHEME_WHOLE => false,
            SCHEME_SLICED => pawns.iter().any(|&n| n > 0),
            _ => return None,
        };
        if !sliced {
            let layout = Layout::new(signature, None);
            let size = layout.size();
            let layouts = Layouts {
                parts: vec![Part { base: 0, layout }],
                slices: vec![Slice {
                    slots: SlotRange {
                        start: 0,
                        end: size,
                    },
                    pawn_ranks: [Vec::new(), Vec::new()],
                    advances_into: Vec::new(),
                }],
                pawn_groups: Vec::new(),
                slice_by_profile: HashMap::new(),
            };
            return Some(TableIndex::from_layouts(signature, Arc::new(layouts)));
        }
        let legal_ranks = Color::ALL.map(|c| {
            let mask = legal_squares(c, PieceKind::Pawn);
            let mut ranks: Vec<u8> = (0..90usize)
                .filter(|&s| mask & (1u128 << s) != 0)
                .map(|s| Square::from_index(s).unwrap().rank())
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            ranks
        });
        let mut profiles: Vec<[Vec<u8>; 2]> = Vec::new();
        for red in rank_multisets(&legal_ranks[0], pawns[0]) {
            for black in rank_multisets(&legal_ranks[1], pawns[1]) {
                profiles.push([red.clone(), black]);
            }
        }
        let adv =
            |p: &[Vec<u8>; 2]| advancement(Color::Red, &p[0]) + advancement(Color::Black, &p[1]);
        profiles.sort_by(|a, b| adv(b).cmp(&adv(a)).then_with(|| a.cmp(b)));
        let key = |p: &[Vec<u8>; 2]| profile_key(p[0].iter().chain(&p[1]).copied());
        let slice_by_profile: HashMap<u64, usize> = profiles
            .iter()
            .enumerate()
            .map(|(i, p)| (key(p), i))
            .collect();
        let mut parts = Vec::with_capacity(profiles.len());
        let mut slices = Vec::with_capacity(profiles.len());
        let mut next = 0u64;
        for p in &profiles {
            let layout = Layout::new(signature, Some(p));
            let base = next.next_multiple_of(SLICE_ALIGN);
            next = base + layout.size();
            let mut advances_into: Vec<usize> = Vec::new();
            for (c, color) in Color::ALL.into_iter().enumerate() {
                for (i, &r) in p[c].iter().enumerate() {
                    let step = match color {
                        Color::Red => r.checked_add(1).filter(|&r| r <= 9),
                        Color::Black => r.checked_sub(1),
                    };
                    let Some(to) = step.filter(|t| legal_ranks[c].contains(t)) else {
                        continue;
                    };
                    let mut q = p.clone();
                    q[c][i] = to;
                    q[c].sort_unstable();
                    advances_into.push(slice_by_profile[&key(&q)]);
                }
            }
            advances_into.sort_unstable();
            advances_into.dedup();
            slices.push(Slice {
                slots: SlotRange {
                    start: base,
                    end: next,
                },
                pawn_ranks: p.clone(),
                advances_into,
            });
            parts.push(Part { base, layout });
        }
        let list = parts[0].layout.piece_list();
        let mut pawn_groups = Vec::new();
        for color in Color::ALL {
            let pawn = Piece::new(color, PieceKind::Pawn);
            if let Some(first) = list.iter().position(|&q| q == pawn) {
                pawn_groups.push((first, pawns[color.index()]));
            }
        }
        let layouts = Layouts {
            parts,
            slices,
            pawn_groups,
            slice_by_profile,
        };
        debug_assert_eq!(layouts.slices.last().map(|s| s.slots.end), Some(next));
        Some(TableIndex::from_layouts(signature, Arc::new(layouts)))
    }

    /// Slots per side to move of `sig`, remembered after the first call (for planning and
    /// status reports, where building the index each time would be wasteful).
    pub fn size_of(sig: &Signature) -> u64 {
        // The end of the last slice's span: one index built per table for both questions.
        Self::slices_of(sig).last().map_or(0, |(_, span)| span.end)
    }

    /// The slices of `sig` with their spans ([`TableIndex::slice_span`]), remembered after the
    /// first call (the scheduler asks for them for every job it plans).
    pub fn slices_of(sig: &Signature) -> Arc<[(Slice, SlotRange)]> {
        type Cache = Mutex<HashMap<Signature, Arc<[(Slice, SlotRange)]>>>;
        static SLICES: OnceLock<Cache> = OnceLock::new();
        let cache = SLICES.get_or_init(Default::default);
        if let Some(s) = cache.lock().expect("slice cache").get(sig) {
            return Arc::clone(s);
        }
        let index = TableIndex::new(*sig);
        let slices: Arc<[(Slice, SlotRange)]> = (0..index.layouts.slices.len())
            .map(|i| (index.layouts.slices[i].clone(), index.slice_span(i)))
            .collect();
        cache
            .lock()
            .expect("slice cache")
            .insert(*sig, Arc::clone(&slices));
        slices
    }

    /// The table's signature.
    pub fn signature(&self) -> Signature {
        self.signature
    }

    /// The index scheme: [`SCHEME_SLICED`] for a table with pawns numbered slice by slice,
    /// else [`SCHEME_WHOLE`].
    pub fn scheme(&self) -> u32 {
        self.scheme
    }

    /// Number of slots per side to move (the padding between slices included).
    #[inline]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Number of pieces, kings included: the length of a flat square array.
    #[inline]
    pub fn piece_count(&self) -> usize {
        self.layouts.parts[0].layout.piece_count()
    }

    /// The part that holds `slot` (or the padding after it).
    #[inline]
    fn part_of(&self, slot: u64) -> usize {
        if self.layouts.parts.len() == 1 {
            return 0;
        }
        self.layouts.parts.partition_point(|p| p.base <= slot) - 1
    }

    /// The part of the placement `squares`, by its pawns' ranks; `None` when they are on no
    /// slice's ranks.
    #[inline]
    fn part_of_squares(&self, squares: &[u8]) -> Option<usize> {
        if self.layouts.parts.len() == 1 {
            return Some(0);
        }
        let mut ranks = [0u8; MAX_PIECES];
        let mut n = 0;
        for &(first, count) in &self.layouts.pawn_groups {
            for (r, &s) in ranks[n..n + count]
                .iter_mut()
                .zip(&squares[first..first + count])
            {
                *r = Square::from_index(s as usize)?.rank();
            }
            ranks[n..n + count].sort_unstable();
            n += count;
        }
        self.layouts
            .slice_by_profile
            .get(&profile_key(ranks[..n].iter().copied()))
            .copied()
    }

    /// The piece at each position of the flat square array: Red king, Black king, Red's
    /// defenders, Black's defenders, then the free groups in index order.
    pub fn piece_list(&self) -> Vec<Piece> {
        self.layouts.parts[0].layout.piece_list()
    }

    /// Slot of the placement given as a flat square array (pieces of a group in any order), or
    /// `None` if a piece stands off its legal points or two home pieces share a point.
    #[inline]
    pub fn encode(&self, squares: &[u8]) -> Option<u64> {
        let part = &self.layouts.parts[self.part_of_squares(squares)?];
        Some(part.base + part.layout.encode(squares)?)
    }

    /// The placement in slot `slot` as a flat square array written to `out` (length at least
    /// [`TableIndex::piece_count`]); pieces of a group come in increasing square order. A slot
    /// of the padding between slices gives every piece square 0 (a placement that cannot be set
    /// up).
    #[inline]
    pub fn decode(&self, slot: u64, out: &mut [u8]) {
        debug_assert!(slot < self.size);
        let part = &self.layouts.parts[self.part_of(slot)];
        let local = slot - part.base;
        if local < part.layout.size() {
            part.layout.decode(local, out);
        } else {
            out[..self.piece_count()].fill(0);
        }
    }

    /// The slot after the piece at flat position `pos` of `squares`, the decoded placement of
    /// `slot`, moves to `to`; `None` when `to` is off that piece's points, as for
    /// [`TableIndex::encode`]. A pawn's step forward leads into another slice.
    pub fn slot_after_shift(&self, slot: u64, squares: &[u8], pos: usize, to: u8) -> Option<u64> {
        let part = &self.layouts.parts[self.part_of(slot)];
        if let Some(local) = part
            .layout
            .slot_after_shift(slot - part.base, squares, pos, to)
        {
            return Some(part.base + local);
        }
        if self.layouts.parts.len() == 1 {
            return None;
        }
        let mut sq = [0u8; MAX_PIECES];
        let n = self.piece_count();
        sq[..n].copy_from_slice(&squares[..n]);
        sq[pos] = to;
        self.encode(&sq[..n])
    }

    /// The slot arithmetic of the decoded placement `squares` of `slot`, for computing the slots
    /// of many single-piece shifts from it (every move of a position) with one multiply-add each.
    pub fn shifts(&self, slot: u64, squares: &[u8]) -> Shifts<'_> {
        let mut s = Shifts {
            index: self,
            layout: &self.layouts.parts[0].layout,
            part_base: 0,
            slot,
            squares: [0; MAX_PIECES],
            base: [u64::MAX; MAX_PIECES],
        };
        let mut sq = [0u8; MAX_PIECES];
        let n = self.piece_count();
        sq[..n].copy_from_slice(&squares[..n]);
        s.reload(slot, &sq);
        s
    }

    /// Whether the placement can be set up at all: no two pieces on one point and no two
    /// uncrossed pawns of one side on one file.
    pub fn placement_is_possible(&self, squares: &[u8]) -> bool {
        self.layouts.parts[0].layout.placement_is_possible(squares)
    }

    /// Whether no two uncrossed pawns of one side stand on one file (the part of
    /// [`TableIndex::placement_is_possible`] that is not about shared points).
    #[inline]
    pub fn pawn_files_possible(&self, squares: &[u8]) -> bool {
        self.layouts.parts[0].layout.pawn_files_possible(squares)
    }

    /// The board of slot `slot` with `side` to move, or `None` when the placement cannot be set
    /// up (see [`TableIndex::placement_is_possible`]). The board may still be illegal: test
    /// `opponent_in_check()`.
    pub fn board(&self, slot: u64, side: Color) -> Option<Board> {
        let mut sq = [0u8; MAX_PIECES];
        self.decode(slot, &mut sq);
        self.board_of(&sq, side)
    }

    /// The board of a flat square array, or `None` if the placement cannot be set up.
    pub fn board_of(&self, squares: &[u8], side: Color) -> Option<Board> {
        self.layouts.parts[0].layout.board_of(squares, side)
    }

    /// Which sides to move make slot `slot` a legal position, `[Red, Black]`: none when the
    /// placement cannot be set up, and a side only when the other side is not in check then.
    pub fn legal_sides(&self, slot: u64) -> [bool; 2] {
        match self.board(slot, Color::Red) {
            None => [false; 2],
            Some(b) => [!b.in_check(Color::Black), !b.in_check(Color::Red)],
        }
    }

    /// The flat position of each of `pieces`, in the order given, as pieces of this table:
    /// identical pieces take their group's positions in turn, and with `rotated` every colour is
    /// swapped first (the canonical table of a position whose stronger side is Black). `None`
    /// unless the pieces are exactly this table's material.
    pub fn flat_positions(
        &self,
        pieces: impl IntoIterator<Item = Piece>,
        rotated: bool,
    ) -> Option<[u8; MAX_PIECES]> {
        self.layouts.parts[0].layout.flat_positions(pieces, rotated)
    }

    /// The flat square array of `board` in this table, whose material must be this table's
    /// (with colours swapped and squares turned by 180 degrees when `rotated`). `None` if the
    /// material differs.
    pub fn squares_of(&self, board: &Board, rotated: bool) -> Option<[u8; MAX_PIECES]> {
        self.layouts.parts[0].layout.squares_of(board, rotated)
    }

    /// The slot of `board` in this table (turned as for [`TableIndex::squares_of`]), or why it
    /// has none.
    pub fn slot_of(&self, board: &Board, rotated: bool) -> Result<u64, SlotError> {
        let squares = self
            .squares_of(board, rotated)
            .ok_or(SlotError::MaterialMismatch)?;
        let squares = &squares[..self.piece_count()];
        if !self.placement_is_possible(squares) {
            return Err(SlotError::PawnsShareFile);
        }
        self.encode(squares).ok_or(SlotError::OffPoints)
    }

    /// The table's pawn slices in slot order (one slice of every slot for a table without
    /// pawns). See [`Slice`].
    pub fn slices(&self) -> &[Slice] {
        &self.layouts.slices
    }

    /// The slots of slice `i` with the padding after it, up to the next slice: the unit a job
    /// solves and stores (spans of consecutive slices join into runs of whole blocks).
    pub fn slice_span(&self, i: usize) -> SlotRange {
        SlotRange {
            start: self.layouts.slices[i].slots.start,
            end: self
                .layouts
                .slices
                .get(i + 1)
                .map_or(self.size, |s| s.slots.start),
        }
    }

    /// The slice that holds `slot` (padding after a slice counts as that slice's).
    pub fn slice_of(&self, slot: u64) -> usize {
        self.part_of(slot)
    }

    /// The number of slices `slots` holds slots of (one for a table without pawns).
    pub fn slices_in(&self, slots: SlotRange) -> usize {
        if slots.is_empty() {
            return 0;
        }
        self.slice_of(slots.end - 1) - self.slice_of(slots.start) + 1
    }

    /// Legal positions per side to move `[Red, Black]`, counted slot by slot in parallel.
    pub fn count_legal(&self) -> [u64; 2] {
        self.count_legal_with(&|_| {})
    }

    /// [`TableIndex::count_legal`], calling `progress` with the number of slots counted as
    /// each chunk of them is done.
    pub fn count_legal_with(&self, progress: &(dyn Fn(u64) + Sync)) -> [u64; 2] {
        use rayon::prelude::*;
        const CHUNK: u64 = 1 << 16;
        (0..self.size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let slots = c * CHUNK..((c + 1) * CHUNK).min(self.size);
                let n = slots.end - slots.start;
                let counts = slots
                    .map(|slot| self.legal_sides(slot).map(u64::from))
                    .fold([0, 0], |a, b| [a[0] + b[0], a[1] + b[1]]);
                progress(n);
                counts
            })
            .reduce(|| [0, 0], |a, b| [a[0] + b[0], a[1] + b[1]])
    }
}

/// One pawn slice of a table: the placements in which each side's pawns stand on given ranks.
/// Pawns never move back, so a move either keeps a position in its slice or leaves the table
/// (a capture) or the slice (a pawn's step forward, into a slice that comes earlier in slot
/// order). A slice is a contiguous range of slots; the padding after it, up to the next
/// multiple of [`SLICE_ALIGN`], holds no placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The slice's slots, padding excluded.
    pub slots: SlotRange,
    /// The ranks of Red's pawns and of Black's pawns, each in increasing order.
    pub pawn_ranks: [Vec<u8>; 2],
    /// The slices (by position in [`TableIndex::slices`]) that one pawn's step forward leads
    /// into from this one.
    pub advances_into: Vec<usize>,
}

/// Alignment of slice starts, in slots: a multiple of the storage block size, so that every
/// slice is a run of whole blocks and a table is the concatenation of its slices' blocks.
pub const SLICE_ALIGN: u64 = 1 << 14;

/// Why a board has no slot in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// The board's material is not the table's.
    #[error("material does not match the table")]
    MaterialMismatch,
    /// Two uncrossed pawns of one side stand on one file.
    #[error("two pawns of one side that have not crossed the river stand on one file")]
    PawnsShareFile,
    /// A piece stands on a point it can never reach.
    #[error("a piece stands off its legal points")]
    OffPoints,
}

/// The slot arithmetic of one decoded slot (see [`TableIndex::shifts`]). A lone piece of a free
/// group under an asymmetric home pair owns one digit of its slice's slot, so its shifts only
/// replace that digit; other shifts take [`TableIndex::slot_after_shift`].
#[derive(Clone)]
pub struct Shifts<'a> {
    index: &'a TableIndex,
    /// The layout of the slot's slice, and where the slice starts.
    layout: &'a Layout,
    part_base: u64,
    slot: u64,
    squares: [u8; MAX_PIECES],
    /// Per flat position: the slice's local slot with that piece's digit zeroed, or `u64::MAX`.
    base: [u64; MAX_PIECES],
}

impl Shifts<'_> {
    /// Re-targets these shifts, in place, at `slot` decoded as `squares` (as
    /// [`TableIndex::shifts`], without building a new value for every position of a scan).
    #[inline]
    pub fn reload(&mut self, slot: u64, squares: &[u8; MAX_PIECES]) {
        let ix = self.index;
        if ix.layouts.parts.len() > 1 {
            let part = &ix.layouts.parts[ix.part_of(slot)];
            self.layout = &part.layout;
            self.part_base = part.base;
        }
        self.slot = slot;
        self.squares = *squares;
        self.layout
            .shift_bases(slot - self.part_base, squares, &mut self.base);
    }

    /// The slot after the piece at flat position `pos` moves to `to`, as
    /// [`TableIndex::slot_after_shift`].
    #[inline(always)]
    pub fn slot_after(&self, pos: usize, to: u8) -> Option<u64> {
        let base = self.base[pos];
        if base != u64::MAX {
            match self.layout.shift_from_base(pos, base, to) {
                Some(local) => return Some(self.part_base + local),
                // Off the piece's points, unless a pawn steps into another slice.
                None if self.index.layouts.parts.len() == 1 => return None,
                None => {}
            }
        }
        self.index
            .slot_after_shift(self.slot, &self.squares, pos, to)
    }
}
/// A half-open range `start..end` of a table's slots (per side to move; both sides of each slot
/// belong to the range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotRange {
    /// First slot.
    pub start: u64,
    /// One past the last slot.
    pub end: u64,
}

impl SlotRange {
    /// Every slot of `signature`'s index.
    pub fn whole(signature: &Signature) -> SlotRange {
        SlotRange {
            start: 0,
            end: TableIndex::size_of(signature),
        }
    }

    /// Number of slots.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether the range holds no slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for SlotRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(name: &str) -> TableIndex {
        TableIndex::new(name.parse().unwrap())
    }

    #[test]
    fn indexes_of_one_table_share_their_layouts_while_one_is_alive() {
        let sig: Signature = "KRPvKP".parse().unwrap();
        let a = TableIndex::new(sig);
        let b = TableIndex::new(sig);
        assert!(Arc::ptr_eq(&a.layouts, &b.layouts));
        // Under the other scheme, another numbering.
        let whole = TableIndex::with_scheme(sig, SCHEME_WHOLE).unwrap();
        assert!(!Arc::ptr_eq(&a.layouts, &whole.layouts));
        assert_eq!((whole.scheme(), a.scheme()), (SCHEME_WHOLE, SCHEME_SLICED));
        assert_eq!(a.size(), b.size());
        // Once none is alive, the next is built anew, the same.
        let size = a.size();
        drop((a, b));
        assert_eq!(TableIndex::new(sig).size(), size);
    }

    #[test]
    fn sizes_are_within_the_published_figures() {
        for (name, published) in [
            ("KRvK", 4_050u64),
            ("KRvKR", 364_500),
            ("KRNvK", 364_500),
            ("KRvKAN", 1_530_900),
            ("KRNvKR", 32_805_000),
        ] {
            let size = index(name).size();
            assert!(size <= published, "{name}: {size} > {published}");
        }
        assert_eq!(index("KRvK").size(), 36 * 90 + 9 * 50);
        for name in ["KRvKAN", "KRNvKR", "KCPABvKAABB", "KRvKR"] {
            let ix = index(name);
            eprintln!("{name}: {}", ix.size());
        }
    }

    fn round_trip_all(name: &str) {
        let ix = index(name);
        let mut sq = [0u8; MAX_PIECES];
        for slot in 0..ix.size() {
            ix.decode(slot, &mut sq);
            let slice = &ix.slices()[ix.slice_of(slot)];
            if slot >= slice.slots.end {
                assert!(!ix.placement_is_possible(&sq[..ix.piece_count()]));
                continue;
            }
            assert_eq!(
                ix.encode(&sq),
                Some(slot),
                "{name} slot {slot}: {:?}",
                &sq[..ix.piece_count()]
            );
            let mut m = sq;
            for s in &mut m[..ix.piece_count()] {
                *s = Square::from_index(*s as usize).unwrap().mirror().index() as u8;
            }
            assert_eq!(ix.encode(&m), Some(slot), "{name} mirror of slot {slot}");
        }
    }

    #[test]
    fn exhaustive_round_trip_small_tables() {
        for name in [
            "KRvK", "KAvK", "KPPvK", "KABvKA", "KNNvK", "KPvKP", "KBBvKAA",
        ] {
            round_trip_all(name);
        }
    }

    #[test]
    fn slices_hold_exactly_the_placements_of_the_whole_layout() {
        for name in ["KPvK", "KPPvK", "KPvKP", "KRPvKA", "KPPvKP", "KPvKPP"] {
            let sliced = index(name);
            let whole = TableIndex::with_scheme(name.parse().unwrap(), SCHEME_WHOLE).unwrap();
            assert_eq!(sliced.scheme(), SCHEME_SLICED);
            assert!(sliced.slices().len() > 1, "{name}");
            let held: u64 = sliced.slices().iter().map(|s| s.slots.len()).sum();
            assert_eq!(held, whole.size(), "{name}");
            for (i, s) in sliced.slices().iter().enumerate() {
                assert_eq!(s.slots.start % SLICE_ALIGN, 0, "{name}");
                assert!(s.advances_into.iter().all(|&j| j < i), "{name}: {s:?}");
            }
            assert_eq!(sliced.count_legal(), whole.count_legal(), "{name}");
        }
        let plain = index("KRNvKR");
        assert_eq!((plain.scheme(), plain.slices().len()), (SCHEME_WHOLE, 1));
    }

    /// Every non-capturing move keeps its slice, except a pawn's step forward, which enters
    /// one of the slices its slice lists.
    #[test]
    fn only_a_pawn_advance_leaves_its_slice() {
        use xiangqi::MoveList;
        for name in ["KPPvK", "KPvKP", "KNPvKA"] {
            let ix = index(name);
            let mut sq = [0u8; MAX_PIECES];
            let mut moves = MoveList::new();
            for slot in 0..ix.size() {
                let Some(board) = ix.board(slot, Color::Red) else {
                    continue;
                };
                for side in Color::ALL {
                    let mut board = board.clone();
                    board.set_side_to_move(side);
                    ix.decode(slot, &mut sq);
                    let shifts = ix.shifts(slot, &sq);
                    moves.clear();
                    board.pseudo_moves(&mut moves);
                    let here = ix.slice_of(slot);
                    for &m in moves.iter().filter(|m| board.is_empty(m.to())) {
                        let pos = (0..ix.piece_count())
                            .find(|&i| sq[i] as usize == m.from().index())
                            .unwrap();
                        let to = m.to().index() as u8;
                        let after = shifts.slot_after(pos, to).unwrap();
                        assert_eq!(Some(after), ix.slot_after_shift(slot, &sq, pos, to));
                        let mut moved = sq;
                        moved[pos] = to;
                        assert_eq!(ix.encode(&moved[..ix.piece_count()]), Some(after));
                        let there = ix.slice_of(after);
                        let piece = board.piece_at(m.from()).unwrap();
                        let forward =
                            piece.kind() == PieceKind::Pawn && m.from().rank() != m.to().rank();
                        if forward {
                            assert!(ix.slices()[here].advances_into.contains(&there), "{name}");
                        } else {
                            assert_eq!(here, there, "{name}: {m} in {}", board.fen());
                        }
                    }
                }
            }
        }
    }
}
