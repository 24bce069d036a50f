//! A position of one table held both as a board (for move generation) and as the flat square
//! array of the index (for computing the slots of neighbours cheaply).

use xiangqi::{Board, Color, MAX_MOVES, Move, MoveList, Piece};
use xqtb_core::{MAX_PIECES, Shifts, TableIndex};

/// Board plus flat squares of a slot, with a map from square to flat position, and scratch lists
/// for its neighbours (kept here so the hot loops do not clear a fresh array per position).
pub(crate) struct SlotPosition<'a> {
    index: &'a TableIndex,
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
    pub fn new(index: &'a TableIndex, pieces: &'a [Piece]) -> Self {
        SlotPosition {
            index,
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

    /// Loads `slot` with `side` to move; `false` when the placement cannot be set up.
    pub fn load(&mut self, slot: u64, side: Color) -> bool {
        self.loaded = None;
        self.index.decode(slot, &mut self.squares);
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
        self.shifts.reload(slot, &self.squares);
        self.loaded = Some(slot);
        true
    }

    /// The slot the last successful [`SlotPosition::load`] set up (the board may have another
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

    /// The slot reached when the piece on `m.from()` goes to `m.to()` and nothing is captured
    /// (a move forward, or the reverse of a move when retracting).
    #[inline(always)]
    pub fn slot_after_shift(&self, from: u8, to: u8) -> u64 {
        self.shifts
            .slot_after(self.pos_of[from as usize] as usize, to)
            .expect("a move keeps pieces on their points")
    }

    /// Slot after the non-capturing move `m`.
    #[inline]
    pub fn slot_after_move(&self, m: Move) -> u64 {
        self.slot_after_shift(m.from().index() as u8, m.to().index() as u8)
    }

    /// Slot before the non-capturing move `m` that led here.
    #[inline]
    pub fn slot_before_move(&self, m: Move) -> u64 {
        self.slot_after_shift(m.to().index() as u8, m.from().index() as u8)
    }

    /// The slots of the positions this one is reached from by a non-capturing move (see
    /// [`Board::unmoves`]). `touch` sees each slot as soon as it is known, to prefetch its state.
    pub fn predecessors(&mut self, touch: impl Fn(usize)) -> &[usize] {
        self.moves.clear();
        self.board.unmoves(&mut self.moves);
        for (i, &m) in self.moves.iter().enumerate() {
            self.slots[i] = self.slot_before_move(m) as usize;
            touch(self.slots[i]);
        }
        &self.slots[..self.moves.len()]
    }

    /// The board, its pseudo-legal moves, and for each non-capturing move the slot it leads to at
    /// the same index (captures leave the table; their entries are meaningless). `touch` sees
    /// each slot as soon as it is known, to prefetch its state.
    pub fn successors(&mut self, touch: impl Fn(usize)) -> (&Board, &MoveList, &[usize]) {
        self.moves.clear();
        self.board.pseudo_moves(&mut self.moves);
        for (i, &m) in self.moves.iter().enumerate() {
            if self.board.is_empty(m.to()) {
                self.slots[i] = self.slot_after_move(m) as usize;
                touch(self.slots[i]);
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

/// Asks the CPU to start loading the cache line of `p`. Table lookups of neighbouring slots are
/// scattered over hundreds of megabytes, so issuing every load of a position's moves before using
/// any of them overlaps their cache misses.
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint without side effects on any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
