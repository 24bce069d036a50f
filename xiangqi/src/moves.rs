//! Moves and fixed-capacity move lists.

use crate::types::Square;
use std::fmt;

/// A move from one point to another, packed into two bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Move {
    from: Square,
    to: Square,
}

impl Move {
    /// The move `from` -> `to`.
    #[inline]
    pub const fn new(from: Square, to: Square) -> Move {
        Move { from, to }
    }

    /// Origin square.
    #[inline]
    pub const fn from(self) -> Square {
        self.from
    }

    /// Arrival square.
    #[inline]
    pub const fn to(self) -> Square {
        self.to
    }

    /// The same move seen in the mirror image of the board.
    pub const fn mirror(self) -> Move {
        Move::new(self.from.mirror(), self.to.mirror())
    }

    /// The same move seen on the board turned by 180 degrees.
    pub const fn rotate(self) -> Move {
        Move::new(self.from.rotate(), self.to.rotate())
    }

    /// ICCS notation, e.g. `h2e2`.
    pub fn iccs(self) -> String {
        format!("{}{}", self.from, self.to)
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from, self.to)
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from, self.to)
    }
}

/// Capacity of a [`MoveList`]: more than the pseudo-legal moves of any reachable position.
pub const MAX_MOVES: usize = 192;

/// A list of moves on the stack, for move generation without allocation.
#[derive(Clone)]
pub struct MoveList {
    len: usize,
    moves: [Move; MAX_MOVES],
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList::new()
    }
}

impl MoveList {
    /// An empty list.
    #[inline]
    pub const fn new() -> MoveList {
        const A1: Square = Square::new(0, 0);
        MoveList {
            len: 0,
            moves: [Move::new(A1, A1); MAX_MOVES],
        }
    }

    /// Appends `m`.
    #[inline]
    pub fn push(&mut self, m: Move) {
        self.moves[self.len] = m;
        self.len += 1;
    }

    /// Number of moves held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the list.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The moves as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }

    /// Iterates over the moves.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Move> {
        self.as_slice().iter()
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    // Indexing a list goes through here, in every move loop of the solver: without the hint
    // it can stay a function call across crates instead of a plain slice access.
    #[inline]
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

impl fmt::Debug for MoveList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
