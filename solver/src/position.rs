//! A position of one job held both as a board (for move generation) and as the flat square
//! array of the index (for computing the slots of neighbours cheaply).
//!
//! A job solves or verifies a range of a table's slots (the whole table, or pawn slices), and
//! keeps its states indexed by slot minus the range's start: every slot this module takes or
//! returns is such a *job slot*. A quiet move whose target lies outside the range (a pawn's
//! step forward into another slice) leaves the job like a capture does; [`SlotPosition::stays`]
//! is the one test of that.

use crate::CHUNK_SLOTS;
use xiangqi::{Board, Color, MAX_MOVES, Move, MoveList, Piece};
use xqtb_core::{MAX_PIECES, RuleSet, Shifts, SlotRange, TableIndex};

/// A job: the slots of a table it solves and under which rules, and how its passes split them
/// into chunks of [`CHUNK_SLOTS`] (Red's chunks, then Black's).
pub(crate) struct Job<'a> {
    pub(crate) index: &'a TableIndex,
    /// The job's slots: states are indexed by slot minus `slots.start`.
    pub(crate) slots: SlotRange,
    pub(crate) rules: RuleSet,
    pub(crate) pieces: Vec<Piece>,
    /// Chunks per side.
    pub(crate) chunks: u64,
}

impl<'a> Job<'a> {
    /// The job over `slots` of `index` under `rules`.
    pub(crate) fn new(index: &'a TableIndex, rules: RuleSet, slots: SlotRange) -> Job<'a> {
        Job {
            index,
            slots,
            rules,
            pieces: index.piece_list(),
            chunks: slots.len().div_ceil(CHUNK_SLOTS),
        }
    }

    /// Number of the job's slots (per side to move).
    #[inline]
    pub(crate) fn len(&self) -> u64 {
        self.slots.len()
    }

    /// A position to load the job's slots into.
    pub(crate) fn position(&self) -> SlotPosition<'_> {
        SlotPosition::new(self.index, &self.pieces, self.slots)
    }

    /// The chunk of both sides that `(side, slot)` lies in.
    #[inline]
    pub(crate) fn chunk_of(&self, side: Color, slot: usize) -> usize {
        side.index() * self.chunks as usize + slot / CHUNK_SLOTS as usize
    }

    /// The side and the slots of chunk `c` of both sides.
    #[inline]
    pub(crate) fn chunk(&self, c: u64) -> (Color, std::ops::Range<u64>) {
        let side = if c < self.chunks {
            Color::Red
        } else {
            Color::Black
        };
        let start = (c % self.chunks) * CHUNK_SLOTS;
        (side, start..(start + CHUNK_SLOTS).min(self.len()))
    }
}

/// The entry of [`SlotPosition::successors`]' slots for a move that leaves the job (a capture,
/// or a quiet move to a slot outside the job's range).
pub(crate) const LEAVES: usize = usize::MAX;

/// Board plus flat squares of a slot, with a map from square to flat position, and scratch lists
/// for its neighbours (kept here so the hot loops do not clear a fresh array per position).
pub(crate) struct SlotPosition<'a> {
    index: &'a TableIndex,
    /// The job's first slot and number of slots.
    start: u64,
    len: u64,
    /// Whether the job is the whole table: then only captures leave it, and the range test
    /// is skipped.
    whole: bool,
    pieces: &'a [Piece],
    pub board: Board,
    squares: [u8; MAX_PIECES],
    pos_of: [u8; 90],
    /// The slot whose placement the board holds, if it could be set up.
    loaded: Option<u64>,
    shifts: Shifts<'a>,
    moves: MoveList,
    slots: [usize; MAX_MOVES],
}

impl<'a> SlotPosition<'a> {
    /// A position of the job over `slots` of `index`, whose pieces are `pieces`.
    pub fn new(index: &'a TableIndex, pieces: &'a [Piece], slots: SlotRange) -> Self {
        SlotPosition {
            index,
            start: slots.start,
            len: slots.len(),
            whole: slots.start == 0 && slots.end == index.size(),
            pieces,
            board: Board::empty(Color::Red),
            squares: [0; MAX_PIECES],
            pos_of: [0xFF; 90],
            loaded: None,
            shifts: index.shifts(0, &[0; MAX_PIECES]),
            moves: MoveList::new(),
            slots: [0; MAX_MOVES],
        }
    }

    /// Loads job slot `slot` with `side` to move; `false` when the placement cannot be set up.
    pub fn load(&mut self, slot: u64, side: Color) -> bool {
        self.loaded = None;
        self.index.decode(self.start + slot, &mut self.squares);
        let n = self.index.piece_count();
        self.board = Board::empty(side);
        for i in 0..n {
            let s = self.squares[i];
            let sq = xiangqi::Square::from_index(s as usize).unwrap();
            if !self.board.is_empty(sq) {
                return false;
            }
            self.board.put(sq, self.pieces[i]);
            self.pos_of[s as usize] = i as u8;
        }
        if !self.index.pawn_files_possible(&self.squares[..n]) {
            return false;
        }
        self.shifts.reload(self.start + slot, &self.squares);
        self.loaded = Some(slot);
        true
    }

    /// The job slot the last successful [`SlotPosition::load`] set up (the board may have another
    /// side to move since).
    #[inline]
    pub fn loaded_slot(&self) -> Option<u64> {
        self.loaded
    }

    /// The flat square array of the loaded slot.
    pub fn squares(&self) -> &[u8] {
        &self.squares[..self.index.piece_count()]
    }

    /// The flat position of the piece on `sq` (which must hold one).
    #[inline]
    pub fn flat_at(&self, sq: xiangqi::Square) -> usize {
        self.pos_of[sq.index()] as usize
    }

    /// The table slot of job slot `slot`.
    #[inline]
    pub fn table_slot(&self, slot: u64) -> u64 {
        self.start + slot
    }

    /// The job slot of table slot `slot`, if the job holds it.
    #[inline(always)]
    fn job_slot(&self, slot: u64) -> Option<usize> {
        let s = slot.wrapping_sub(self.start);
        (self.whole || s < self.len).then_some(s as usize)
    }

    /// The table slot reached when the piece on `from` goes to `to` and nothing is captured (a
    /// move forward, or the reverse of a move when retracting).
    #[inline(always)]
    fn slot_after_shift(&self, from: u8, to: u8) -> u64 {
        self.shifts
            .slot_after(self.pos_of[from as usize] as usize, to)
            .expect("a move keeps pieces on their points")
    }

    /// The job slot the pseudo-legal move `m` of the loaded position leads to, or `None` when
    /// the move leaves the job: a capture (into another table) or a quiet move into a slot
    /// outside the job (a pawn's step forward into another slice). The one test of "this move
    /// stays": everything else values leaving moves from the dependencies.
    #[inline(always)]
    pub fn stays(&self, m: Move) -> Option<usize> {
        if !self.board.is_empty(m.to()) {
            return None;
        }
        self.job_slot(self.slot_after_shift(m.from().index() as u8, m.to().index() as u8))
    }

    /// The table slot the quiet pseudo-legal move `m` leads to, in the job or not; `None` for a
    /// capture.
    #[inline]
    pub fn quiet_target(&self, m: Move) -> Option<u64> {
        self.board
            .is_empty(m.to())
            .then(|| self.slot_after_shift(m.from().index() as u8, m.to().index() as u8))
    }

    /// Whether the pseudo-legal move `m` leaves the job ([`SlotPosition::stays`] is `None`),
    /// without computing the slot on a whole table.
    #[inline(always)]
    pub fn leaves(&self, m: Move) -> bool {
        if !self.board.is_empty(m.to()) {
            return true;
        }
        !self.whole && self.stays(m).is_none()
    }

    /// The job slots of the positions in the job this one is reached from by a non-capturing
    /// move (see [`Board::unmoves`]); un-moves from outside the job (a pawn's step back, into a
    /// slice another job solves) are left out: that job reads this one's values as its exits.
    /// `touch` sees each slot as soon as it is known, to prefetch its state.
    pub fn predecessors(&mut self, touch: impl Fn(usize)) -> &[usize] {
        self.moves.clear();
        self.board.unmoves(&mut self.moves);
        let mut n = 0;
        for i in 0..self.moves.len() {
            let m = self.moves[i];
            let before = self.slot_after_shift(m.to().index() as u8, m.from().index() as u8);
            if let Some(p) = self.job_slot(before) {
                self.slots[n] = p;
                touch(p);
                n += 1;
            }
        }
        &self.slots[..n]
    }

    /// The board, its pseudo-legal moves, and for each move the job slot it leads to at the
    /// same index, or [`LEAVES`] when it leaves the job (see [`SlotPosition::stays`]). `touch`
    /// sees each slot as soon as it is known, to prefetch its state.
    pub fn successors(&mut self, touch: impl Fn(usize)) -> (&Board, &MoveList, &[usize]) {
        self.moves.clear();
        self.board.pseudo_moves(&mut self.moves);
        for i in 0..self.moves.len() {
            let q = self.stays(self.moves[i]).unwrap_or(LEAVES);
            self.slots[i] = q;
            if q != LEAVES {
                touch(q);
            }
        }
        (&self.board, &self.moves, &self.slots[..self.moves.len()])
    }

    /// The moves and slots the last [`SlotPosition::successors`] found, readable while the
    /// position is borrowed again (they stay until the next call of it or of
    /// [`SlotPosition::predecessors`]).
    #[inline]
    pub fn last_successors(&self) -> (&MoveList, &[usize]) {
        (&self.moves, &self.slots[..self.moves.len()])
    }
}
