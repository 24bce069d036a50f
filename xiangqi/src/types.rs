//! Squares, colours and pieces.

use std::fmt;

/// Number of points on the board.
pub const NUM_SQUARES: usize = 90;

/// One of the two sides. Red moves first and sits on ranks 0-4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// Uppercase in FEN, moves first.
    Red = 0,
    /// Lowercase in FEN.
    Black = 1,
}

impl Color {
    /// Both colours, Red first.
    pub const ALL: [Color; 2] = [Color::Red, Color::Black];

    /// The other side.
    #[inline]
    pub const fn opponent(self) -> Color {
        match self {
            Color::Red => Color::Black,
            Color::Black => Color::Red,
        }
    }

    /// 0 for Red, 1 for Black.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The FEN side-to-move letter (`w` for Red, `b` for Black).
    pub const fn fen_char(self) -> char {
        match self {
            Color::Red => 'w',
            Color::Black => 'b',
        }
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::Red => "Red",
            Color::Black => "Black",
        })
    }
}

/// The seven kinds of piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PieceKind {
    /// 帅/将: one step orthogonally inside the palace.
    King = 0,
    /// 仕/士: one step diagonally inside the palace.
    Advisor = 1,
    /// 相/象: two points diagonally, blocked at the eye, never across the river.
    Elephant = 2,
    /// 马: one orthogonal then one diagonal step, blocked at the leg.
    Horse = 3,
    /// 车: any distance orthogonally.
    Rook = 4,
    /// 炮: moves like a rook, captures by jumping exactly one screen.
    Cannon = 5,
    /// 兵/卒: forward, and sideways after crossing the river.
    Pawn = 6,
}

impl PieceKind {
    /// Every kind, king first.
    pub const ALL: [PieceKind; 7] = [
        PieceKind::King,
        PieceKind::Advisor,
        PieceKind::Elephant,
        PieceKind::Horse,
        PieceKind::Rook,
        PieceKind::Cannon,
        PieceKind::Pawn,
    ];

    /// The kinds a capture can remove (everything but the king).
    pub const CAPTURABLE: [PieceKind; 6] = [
        PieceKind::Advisor,
        PieceKind::Elephant,
        PieceKind::Horse,
        PieceKind::Rook,
        PieceKind::Cannon,
        PieceKind::Pawn,
    ];

    /// 0..7 in the order of [`PieceKind::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// How many of this kind one side has at the start of a game.
    pub const fn max_count(self) -> u8 {
        match self {
            PieceKind::King => 1,
            PieceKind::Pawn => 5,
            _ => 2,
        }
    }

    /// Attacking pieces can cross the river: rook, horse, cannon and pawn.
    pub const fn is_attacker(self) -> bool {
        matches!(
            self,
            PieceKind::Rook | PieceKind::Horse | PieceKind::Cannon | PieceKind::Pawn
        )
    }

    /// Uppercase FEN letter.
    pub const fn letter(self) -> char {
        match self {
            PieceKind::King => 'K',
            PieceKind::Advisor => 'A',
            PieceKind::Elephant => 'B',
            PieceKind::Horse => 'N',
            PieceKind::Rook => 'R',
            PieceKind::Cannon => 'C',
            PieceKind::Pawn => 'P',
        }
    }

    /// Parses a FEN letter of either case, accepting `E` for elephant and `H` for horse.
    pub fn from_letter(c: char) -> Option<PieceKind> {
        Some(match c.to_ascii_uppercase() {
            'K' => PieceKind::King,
            'A' => PieceKind::Advisor,
            'B' | 'E' => PieceKind::Elephant,
            'N' | 'H' => PieceKind::Horse,
            'R' => PieceKind::Rook,
            'C' => PieceKind::Cannon,
            'P' => PieceKind::Pawn,
            _ => return None,
        })
    }

    /// English name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            PieceKind::King => "king",
            PieceKind::Advisor => "advisor",
            PieceKind::Elephant => "elephant",
            PieceKind::Horse => "horse",
            PieceKind::Rook => "chariot",
            PieceKind::Cannon => "cannon",
            PieceKind::Pawn => "pawn",
        }
    }
}

/// A coloured piece, packed into one byte: bit 4 always set (so no piece is zero, the board's
/// empty marker), bit 3 the colour, bits 0-2 the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece(u8);

impl Piece {
    /// A piece of `color` and `kind`.
    #[inline]
    pub const fn new(color: Color, kind: PieceKind) -> Piece {
        Piece(0x10 | ((color as u8) << 3) | kind as u8)
    }

    /// The piece with this packed byte, if it is one.
    #[inline]
    pub(crate) const fn from_code(code: u8) -> Option<Piece> {
        if code & 0x10 != 0 && code & 7 != 7 {
            Some(Piece(code))
        } else {
            None
        }
    }

    /// The piece's colour.
    #[inline]
    pub const fn color(self) -> Color {
        if self.0 & 8 == 0 {
            Color::Red
        } else {
            Color::Black
        }
    }

    /// The piece's kind.
    #[inline]
    pub const fn kind(self) -> PieceKind {
        PieceKind::ALL[(self.0 & 7) as usize]
    }

    /// The packed byte, never zero.
    #[inline]
    pub(crate) const fn code(self) -> u8 {
        self.0
    }

    /// FEN letter: uppercase for Red.
    pub const fn fen_char(self) -> char {
        let c = self.kind().letter();
        match self.color() {
            Color::Red => c,
            Color::Black => c.to_ascii_lowercase(),
        }
    }

    /// The same kind with the other colour.
    #[inline]
    pub const fn flipped(self) -> Piece {
        Piece(self.0 ^ 8)
    }
}

impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.color(), self.kind().name())
    }
}

/// A point on the board, `rank * 9 + file`, with files a..i = 0..8 and ranks 0..9 from Red's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// The square on `file` (0..9) and `rank` (0..10). Panics in debug builds when out of range.
    #[inline]
    pub const fn new(file: u8, rank: u8) -> Square {
        debug_assert!(file < 9 && rank < 10);
        Square(rank * 9 + file)
    }

    /// The square with this 0..90 number, if in range.
    #[inline]
    pub const fn from_index(i: usize) -> Option<Square> {
        if i < NUM_SQUARES {
            Some(Square(i as u8))
        } else {
            None
        }
    }

    /// The square with this number; the caller guarantees `i < 90`.
    #[inline]
    pub(crate) const fn from_u8(i: u8) -> Square {
        Square(i)
    }

    /// 0..90.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// File 0..9 (a..i).
    #[inline]
    pub const fn file(self) -> u8 {
        self.0 % 9
    }

    /// Rank 0..10 from Red's home rank.
    #[inline]
    pub const fn rank(self) -> u8 {
        self.0 / 9
    }

    /// Left-right mirror image.
    #[inline]
    pub const fn mirror(self) -> Square {
        Square(self.0 + 8 - 2 * self.file())
    }

    /// The square seen from the other side (rotation by 180 degrees).
    #[inline]
    pub const fn rotate(self) -> Square {
        Square(89 - self.0)
    }

    /// The same file with the rank counted from the other side (vertical flip).
    #[inline]
    pub const fn flip_vertical(self) -> Square {
        Square::new(self.file(), 9 - self.rank())
    }

    /// Every square, a0 first.
    pub fn all() -> impl Iterator<Item = Square> {
        (0..NUM_SQUARES as u8).map(Square)
    }

    /// Parses ICCS coordinates such as `e0` or `h9`.
    pub fn parse(s: &str) -> Option<Square> {
        let b = s.as_bytes();
        if b.len() != 2 {
            return None;
        }
        let file = b[0].to_ascii_lowercase().wrapping_sub(b'a');
        let rank = b[1].wrapping_sub(b'0');
        (file < 9 && rank < 10).then(|| Square::new(file, rank))
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", (b'a' + self.file()) as char, self.rank())
    }
}
