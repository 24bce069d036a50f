//! The rules of Xiangqi (Chinese chess) as a pure library: board, FEN, legal moves, check,
//! un-moves for retrograde analysis, board symmetries and move notation.
//!
//! Coordinates follow ICCS: files `a`..`i` left to right as Red sees the board, ranks `0`..`9`
//! from Red's home rank. Red moves first.
//!
//! The foundation of the workspace: it depends on nothing but `thiserror`, does no I/O and knows
//! nothing of tablebases.
//!
//! ```
//! use xiangqi::{START_FEN, notation, parse_fen, perft};
//! let board = parse_fen(START_FEN).unwrap();
//! assert_eq!(board.legal_moves().len(), 44);
//! let m = notation::parse_iccs(&board, "h2e2").unwrap();
//! assert_eq!(notation::to_chinese(&board, m), "炮二平五");
//! assert_eq!(notation::to_wxf(&board, m), "C2.5");
//! assert_eq!(perft(&mut board.clone(), 2), 1920);
//! ```

#![warn(missing_docs)]

mod board;
pub mod fen;
mod moves;
pub mod notation;
mod perft;
pub mod repetition;
mod tables;
mod types;

pub use board::Board;
pub use fen::{FenError, PositionError, parse_fen};
pub use moves::{MAX_MOVES, Move, MoveList};
pub use perft::{perft, perft_divide};
pub use tables::legal_squares;
pub use types::{Color, NUM_SQUARES, Piece, PieceKind, Square};

/// The FEN of the standard starting position.
pub const START_FEN: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1";
