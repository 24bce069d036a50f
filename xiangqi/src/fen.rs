//! FEN parsing and formatting, with a precise reason for every rejection.

use crate::board::Board;
use crate::types::{Color, Piece, PieceKind, Square};
use thiserror::Error;

/// Why a placement of pieces is not a legal Xiangqi position.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PositionError {
    /// A side has no king.
    #[error("{0} has no king")]
    MissingKing(Color),
    /// A side has more than one king.
    #[error("{0} has {1} kings; a side has exactly one")]
    ExtraKing(Color, usize),
    /// More pieces of one kind than a side starts with.
    #[error("{color} has {count} {kind}s; at most {max} are allowed", kind = .kind.name())]
    TooMany {
        /// The side.
        color: Color,
        /// The kind.
        kind: PieceKind,
        /// How many were found.
        count: usize,
        /// How many the game has.
        max: u8,
    },
    /// A piece stands on a point it can never reach.
    #[error("{piece} on {square} is off its legal points")]
    OffSquare {
        /// The piece.
        piece: Piece,
        /// Where it stands.
        square: Square,
    },
    /// The kings face each other on an open file.
    #[error("the kings face each other on an open file")]
    KingsFacing,
    /// The side that is not to move is in check, so the side to move could take its king.
    #[error("{0} is in check but it is not {0}'s turn")]
    SideNotToMoveInCheck(Color),
}

/// Why a FEN string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FenError {
    /// Nothing to parse.
    #[error("empty FEN")]
    Empty,
    /// The placement does not have ten rows.
    #[error("FEN placement has {0} rows; it needs 10 separated by '/'")]
    RowCount(usize),
    /// A row does not describe nine points.
    #[error("FEN row {row} (rank {rank}) covers {width} points; it needs 9", rank = 10 - .row)]
    RowWidth {
        /// Row number from the top, 1..=10.
        row: usize,
        /// Points it covers.
        width: usize,
    },
    /// A character that is neither a piece letter nor a digit.
    #[error("unknown letter '{letter}' in FEN row {row}")]
    UnknownLetter {
        /// The character.
        letter: char,
        /// Row number from the top, 1..=10.
        row: usize,
    },
    /// The side-to-move field is not `w`, `r` or `b`.
    #[error("side to move '{0}' is not one of w, r, b")]
    BadSideToMove(String),
    /// The pieces do not form a legal position.
    #[error("illegal position: {0}")]
    Illegal(#[from] PositionError),
}

/// Parses a FEN string. Trailing fields after the side to move are ignored; a missing side means Red.
pub fn parse_fen(fen: &str) -> Result<Board, FenError> {
    let mut fields = fen.split_whitespace();
    let placement = fields.next().ok_or(FenError::Empty)?;
    let side = match fields.next() {
        None | Some("w") | Some("r") | Some("W") | Some("R") => Color::Red,
        Some("b") | Some("B") => Color::Black,
        Some(other) => return Err(FenError::BadSideToMove(other.to_string())),
    };
    let rows: Vec<&str> = placement.split('/').collect();
    if rows.len() != 10 {
        return Err(FenError::RowCount(rows.len()));
    }
    let mut board = Board::empty(side);
    let mut kings = [0usize; 2];
    for (i, row) in rows.iter().enumerate() {
        let rank = 9 - i as u8;
        let mut file = 0usize;
        for c in row.chars() {
            if let Some(d) = c.to_digit(10) {
                file += d as usize;
                continue;
            }
            let kind = PieceKind::from_letter(c)
                .filter(|_| c.is_ascii_alphabetic())
                .ok_or(FenError::UnknownLetter {
                    letter: c,
                    row: i + 1,
                })?;
            let color = if c.is_ascii_uppercase() {
                Color::Red
            } else {
                Color::Black
            };
            if file < 9 {
                let s = Square::new(file as u8, rank);
                if kind == PieceKind::King {
                    kings[color.index()] += 1;
                    if kings[color.index()] > 1 {
                        file += 1;
                        continue;
                    }
                }
                board.put(s, Piece::new(color, kind));
            }
            file += 1;
        }
        if file != 9 {
            return Err(FenError::RowWidth {
                row: i + 1,
                width: file,
            });
        }
    }
    for c in Color::ALL {
        match kings[c.index()] {
            0 => return Err(PositionError::MissingKing(c).into()),
            1 => {}
            n => return Err(PositionError::ExtraKing(c, n).into()),
        }
    }
    validate(&board)?;
    Ok(board)
}

/// Checks that `board` is a legal position: one king a side, piece counts, legal points, kings
/// not facing, and the side not to move not in check.
pub fn validate(board: &Board) -> Result<(), PositionError> {
    for c in Color::ALL {
        if board.king_square(c).is_none() {
            return Err(PositionError::MissingKing(c));
        }
        for kind in PieceKind::ALL {
            let count = board.count(c, kind);
            if count > kind.max_count() as usize {
                return Err(if kind == PieceKind::King {
                    PositionError::ExtraKing(c, count)
                } else {
                    PositionError::TooMany {
                        color: c,
                        kind,
                        count,
                        max: kind.max_count(),
                    }
                });
            }
        }
    }
    for (s, p) in board.pieces() {
        if !s.is_legal_for(p.color(), p.kind()) {
            return Err(PositionError::OffSquare {
                piece: p,
                square: s,
            });
        }
    }
    if kings_facing(board) {
        return Err(PositionError::KingsFacing);
    }
    let waiting = board.side_to_move().opponent();
    if board.in_check(waiting) {
        return Err(PositionError::SideNotToMoveInCheck(waiting));
    }
    Ok(())
}

/// Whether both kings stand on one file with nothing between them.
pub fn kings_facing(board: &Board) -> bool {
    let (Some(r), Some(b)) = (
        board.king_square(Color::Red),
        board.king_square(Color::Black),
    ) else {
        return false;
    };
    r.file() == b.file()
        && (r.rank() + 1..b.rank()).all(|rank| board.is_empty(Square::new(r.file(), rank)))
}

/// Formats `board` as FEN with the fields `- - 0 1` after the side to move.
pub fn to_fen(board: &Board) -> String {
    let mut s = String::with_capacity(64);
    for rank in (0..10u8).rev() {
        let mut empty = 0;
        for file in 0..9u8 {
            match board.piece_at(Square::new(file, rank)) {
                None => empty += 1,
                Some(p) => {
                    if empty > 0 {
                        s.push(char::from(b'0' + empty));
                        empty = 0;
                    }
                    s.push(p.fen_char());
                }
            }
        }
        if empty > 0 {
            s.push(char::from(b'0' + empty));
        }
        if rank > 0 {
            s.push('/');
        }
    }
    s.push(' ');
    s.push(board.side_to_move().fen_char());
    s.push_str(" - - 0 1");
    s
}

impl std::str::FromStr for Board {
    type Err = FenError;
    fn from_str(s: &str) -> Result<Board, FenError> {
        parse_fen(s)
    }
}

impl Board {
    /// The FEN of this position.
    pub fn fen(&self) -> String {
        to_fen(self)
    }
}

/// A board shows as its FEN.
impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Board({})", to_fen(self))
    }
}
