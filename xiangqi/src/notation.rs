//! Move notation: ICCS, Chinese and WXF.
//!
//! # Input
//!
//! [`parse_move`] reads coordinate moves: ICCS (`h2e2`, ranks `0`..`9`, as UCCI engines and most
//! Chinese software write them) and the form with ranks `1`..`10` that Fairy-Stockfish uses in its
//! UCI mode (`h3e3`, `a10a9`). Case is ignored and one dash may separate the two squares
//! (`H2-E2`). A text that contains neither rank `0` nor rank `10` is valid in both readings; it is
//! accepted when exactly one reading is a legal move in the given position, and refused as
//! ambiguous when both are. [`parse_iccs`] and [`parse_ranks_1_10`] read one form only, for
//! callers that know which form they have.
//!
//! A sequence of moves is read with [`parse_line`], which decides the form once for the whole
//! sequence: a game written in ICCS often has moves that would be ambiguous one by one (`e7f7`
//! when another piece could play `e6f6`) while only one reading of the whole sequence is legal
//! move by move. [`parse_line_as`] reads a sequence in a form the caller names.
//!
//! # Output
//!
//! [`to_iccs`] writes ICCS and [`to_ranks_1_10`] the ranks-1-10 form. [`to_chinese`] and
//! [`to_wxf`] write the traditional notation, which describes a move from the mover's own point
//! of view:
//!
//! * **Files** are counted 1 to 9 from each player's own right: for Red file `i` is 1 and file `a`
//!   is 9; for Black file `a` is 1 and file `i` is 9. Red writes Chinese numerals
//!   (`一二三四五六七八九`), Black full-width digits (`１２３４５６７８９`); WXF writes ASCII digits for
//!   both sides.
//! * **Pieces**: Red `帅仕相马车炮兵`, Black `将士象马车炮卒`; WXF `K A E H R C P` for both.
//! * **Direction**: `进` / `+` towards the opponent, `退` / `-` back towards the mover's own side,
//!   `平` / `.` along the rank.
//! * **Last number**: for the king, chariot, cannon and pawn moving forward or backward, the number
//!   of ranks moved; moving sideways, the destination file. For the advisor, elephant and horse
//!   it is always the destination file.
//!
//! So `炮二平五` = `C2.5`, `马８进７` = `H8+7`, `车九进一` = `R9+1`.
//!
//! ## Several identical pieces on one file
//!
//! "Front" is the piece further forward from the mover's point of view (higher rank for Red,
//! lower rank for Black). The rules below follow the Chinese convention of the xqbase
//! specification "中国象棋电脑应用规范(二)：着法表示" and, for WXF, the official WXF/AXF page
//! "Official Xiangqi Piece Names and Notation" (wxf.org, section "Tandem Positions").
//!
//! * **Advisors and elephants** never take a front/back marker: when two stand on one file, one
//!   can only advance and the other only retreat, so the file number is kept
//!   (`仕六进五` / `A6+5` and `仕六退五` / `A6-5`).
//! * **Two chariots, horses or cannons on one file**: `前` / `后` replace the file and come before
//!   the piece name (`前车进一`, `后马退８`); WXF puts `+` / `-` after the letter in place of the
//!   file (`R++1`, `H--8`).
//! * **Pawns**, when only one file holds two or more of the mover's pawns:
//!
//!   | pawns on the file | Chinese, front to back      | WXF, front to back              |
//!   |-------------------|-----------------------------|---------------------------------|
//!   | 2                 | `前兵` `后兵`                | `P+` `P-`                       |
//!   | 3                 | `前兵` `中兵` `后兵`         | `P+` `P`*f* `P-`                |
//!   | 4                 | `一兵` `二兵` `三兵` `四兵`  | `++` `P+` `P-` `--`             |
//!   | 5                 | `一兵` ... `五兵`            | `++` `P+` `P`*f* `P-` `--`      |
//!
//!   where *f* is the file number (the middle pawn uses the ordinary notation in WXF). Black
//!   writes the ordinals with full-width digits (`１卒` ... `５卒`), like every other number of
//!   Black's. Example: three Red pawns on file 7 moving to file 6: `前兵平六` / `P+.6`,
//!   `中兵平六` / `P7.6`, `后兵平六` / `P-.6`.
//! * **Pawns on two files, each holding two or more of the mover's pawns** (2+2 or 3+2): the
//!   pawns on those two files (and only those) are numbered `一` `二` `三` `四` `五` (Black
//!   `１`..`５`), first the file nearer the mover's right (lower file number), front to back,
//!   then the other file, front to back; the number replaces the file before the piece name
//!   (`二兵平四`). WXF writes the file number followed by the pawn's place on its file, `+` front,
//!   `-` rear, the file number again for the middle one of three, and no letter: with three
//!   pawns on file 3 and two on file 7, `3+.4`, `33.4`, `3-.4`, `7+.6`, `7-.6`.
//!
//! Every string produced is exactly four characters long.

use crate::board::Board;
use crate::moves::Move;
use crate::types::{Color, Piece, PieceKind, Square};
use thiserror::Error;

/// Why a move text was not accepted by [`parse_move`], [`parse_iccs`] or [`parse_ranks_1_10`]
/// (and, inside a [`LineError::Move`], by [`parse_line`] or [`parse_line_as`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotationError {
    /// The text is not a coordinate move of the form `h2e2`, `h2-e2` or `a10a9`.
    #[error("malformed move '{text}': {reason}")]
    Malformed {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The origin square is empty.
    #[error("move '{text}': there is no piece on {square}")]
    NoPiece {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The empty origin square (ICCS).
        square: Square,
    },
    /// The piece on the origin square belongs to the side that is not to move.
    #[error("move '{text}': the piece on {square} is a {piece}, but it is {side_to_move}'s turn")]
    NotSideToMove {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The origin square (ICCS).
        square: Square,
        /// The piece standing there.
        piece: Piece,
        /// The side to move.
        side_to_move: Color,
    },
    /// The move is not legal in the position.
    #[error("move '{text}': {mv} is not a legal move in this position")]
    Illegal {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The move it denotes, in ICCS.
        mv: Move,
    },
    /// The text reads both as ICCS and with ranks 1-10, and neither reading is a legal move.
    #[error(
        "move '{text}' is illegal in both readings: as ICCS it is {iccs}, with ranks 1-10 it is \
         {ranks_1_10} (ICCS); neither is a legal move in this position"
    )]
    IllegalInBothReadings {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The move read as ICCS (ranks 0-9).
        iccs: Move,
        /// The move read with ranks 1-10, written in ICCS.
        ranks_1_10: Move,
    },
    /// The text reads both as ICCS and with ranks 1-10, and both readings are legal moves.
    #[error(
        "move '{text}' is ambiguous: as ICCS it is {iccs}, with ranks 1-10 it is {ranks_1_10} \
         (ICCS), and both are legal in this position; write rank 0 or 10, or use ICCS with a move \
         that only one reading allows"
    )]
    Ambiguous {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The move read as ICCS (ranks 0-9).
        iccs: Move,
        /// The move read with ranks 1-10, written in ICCS.
        ranks_1_10: Move,
    },
    /// The side to move has no king, so legality cannot be decided.
    #[error("move '{text}': {side_to_move} has no king on the board, so no move can be checked")]
    NoKing {
        /// The text as given, without surrounding whitespace.
        text: String,
        /// The side to move.
        side_to_move: Color,
    },
}

/// The coordinate form of move texts: how they count ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoordinateForm {
    /// ICCS: ranks `0`..`9` from Red's home rank (`h2e2`, `a9a8`).
    Iccs,
    /// Ranks `1`..`10` from Red's home rank, as Fairy-Stockfish's UCI mode writes them (`h3e3`,
    /// `a10a9`).
    Ranks1To10,
}

impl CoordinateForm {
    /// The other form.
    fn other(self) -> CoordinateForm {
        match self {
            CoordinateForm::Iccs => CoordinateForm::Ranks1To10,
            CoordinateForm::Ranks1To10 => CoordinateForm::Iccs,
        }
    }

    /// "as ICCS" or "with ranks 1-10", to follow "read".
    fn reading(self) -> &'static str {
        match self {
            CoordinateForm::Iccs => "as ICCS",
            CoordinateForm::Ranks1To10 => "with ranks 1-10",
        }
    }
}

impl std::fmt::Display for CoordinateForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CoordinateForm::Iccs => "ICCS",
            CoordinateForm::Ranks1To10 => "ranks 1-10",
        })
    }
}

/// Why a sequence of move texts was not accepted by [`parse_line`] or [`parse_line_as`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// A move of the sequence is not accepted in the position the moves before it lead to.
    ///
    /// Displayed as `move N ('TEXT') in FEN: ERROR`, with `, reading the moves as ICCS` (or
    /// `with ranks 1-10`) before the colon when `form` is set, and, when `other_fails_at` is
    /// set, `; with ranks 1-10 they fail earlier, at move M` (or `... they fail at this move
    /// too`; `as ICCS` for the other form) after `ERROR`; N and M count from 1.
    Move {
        /// The move's place in the sequence, from 0 (the message counts from 1).
        index: usize,
        /// The move's text, without surrounding whitespace.
        text: String,
        /// The FEN of the position the move was to be played in.
        fen: String,
        /// The form the moves were read in, or `None` when both readings stop at this move in
        /// the same position (then `error` speaks of both, as [`parse_move`]'s does).
        form: Option<CoordinateForm>,
        /// For [`parse_line`] when `form` is set: the index of the move at which the other
        /// reading stops (at most `index`). `None` from [`parse_line_as`].
        other_fails_at: Option<usize>,
        /// Why the move is not accepted.
        error: NotationError,
    },
    /// Both readings of the sequence are legal move by move: the form must be given.
    Ambiguous {
        /// The moves read as ICCS (ranks 0-9).
        iccs: Vec<Move>,
        /// The moves read with ranks 1-10, written in ICCS.
        ranks_1_10: Vec<Move>,
    },
}

/// The moves in ICCS, separated by spaces.
fn move_list(moves: &[Move]) -> String {
    moves.iter().map(|m| m.iccs()).collect::<Vec<_>>().join(" ")
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Move {
                index,
                text,
                fen,
                form,
                other_fails_at,
                error,
            } => {
                write!(f, "move {} ('{text}') in {fen}", index + 1)?;
                if let Some(form) = form {
                    write!(f, ", reading the moves {}", form.reading())?;
                }
                write!(f, ": {error}")?;
                if let (Some(form), Some(other)) = (form, other_fails_at) {
                    write!(f, "; {} they fail ", form.other().reading())?;
                    if other == index {
                        write!(f, "at this move too")?;
                    } else {
                        write!(f, "earlier, at move {}", other + 1)?;
                    }
                }
                Ok(())
            }
            LineError::Ambiguous { iccs, ranks_1_10 } => write!(
                f,
                "the moves are ambiguous: as ICCS they are {}, with ranks 1-10 they are {} \
                 (ICCS), and both readings are legal move by move, so the form must be given",
                move_list(iccs),
                move_list(ranks_1_10)
            ),
        }
    }
}

impl std::error::Error for LineError {}

/// One rank as written: a single digit `0`..`9` or `10`.
#[derive(Clone, Copy)]
enum RankToken {
    Digit(u8),
    Ten,
}

impl RankToken {
    /// The rank 0..10 in the ICCS reading, if this token is valid there.
    fn iccs(self) -> Option<u8> {
        match self {
            RankToken::Digit(d) => Some(d),
            RankToken::Ten => None,
        }
    }

    /// The rank 0..10 in the ranks-1-10 reading, if this token is valid there.
    fn one_based(self) -> Option<u8> {
        match self {
            RankToken::Digit(0) => None,
            RankToken::Digit(d) => Some(d - 1),
            RankToken::Ten => Some(9),
        }
    }
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

const TOO_SHORT: &str = "too short: a move is two squares such as h2e2";

/// Reads a file letter `a`..`i` (either case) as 0..9.
fn take_file(chars: &mut Chars<'_>) -> Result<u8, &'static str> {
    match chars.next() {
        Some(c @ ('a'..='i' | 'A'..='I')) => Ok(c.to_ascii_lowercase() as u8 - b'a'),
        Some(c) if c.is_ascii_alphabetic() => Err("file letter out of range: files are a to i"),
        Some(_) => Err("expected a file letter a to i"),
        None => Err(TOO_SHORT),
    }
}

/// Reads a rank: one digit, or `10`.
fn take_rank(chars: &mut Chars<'_>) -> Result<RankToken, &'static str> {
    let first = match chars.next() {
        Some(c @ '0'..='9') => c as u8 - b'0',
        Some(_) => return Err("expected a rank digit after the file letter"),
        None => return Err(TOO_SHORT),
    };
    match chars.peek() {
        Some('0') if first == 1 => {
            chars.next();
            Ok(RankToken::Ten)
        }
        Some('0'..='9') => Err("rank out of range: ranks are 0 to 9 (ICCS) or 1 to 10"),
        _ => Ok(RankToken::Digit(first)),
    }
}

/// Splits `text` (already trimmed) into file, rank, file, rank.
fn tokenize(text: &str) -> Result<(u8, RankToken, u8, RankToken), &'static str> {
    if text.is_empty() {
        return Err("empty text");
    }
    let mut chars = text.chars().peekable();
    let from_file = take_file(&mut chars)?;
    let from_rank = take_rank(&mut chars)?;
    if chars.peek() == Some(&'-') {
        chars.next();
    }
    let to_file = take_file(&mut chars)?;
    let to_rank = take_rank(&mut chars)?;
    if chars.next().is_some() {
        return Err("unexpected characters after the destination square");
    }
    Ok((from_file, from_rank, to_file, to_rank))
}

/// Checks that `m` is legal on `board`, naming the first thing that is wrong.
fn check_reading(board: &Board, text: &str, m: Move) -> Result<Move, NotationError> {
    let side = board.side_to_move();
    let Some(piece) = board.piece_at(m.from()) else {
        return Err(NotationError::NoPiece {
            text: text.to_string(),
            square: m.from(),
        });
    };
    if piece.color() != side {
        return Err(NotationError::NotSideToMove {
            text: text.to_string(),
            square: m.from(),
            piece,
            side_to_move: side,
        });
    }
    if board.king_square(side).is_none() {
        return Err(NotationError::NoKing {
            text: text.to_string(),
            side_to_move: side,
        });
    }
    if !board.is_legal_move(m) {
        return Err(NotationError::Illegal {
            text: text.to_string(),
            mv: m,
        });
    }
    Ok(m)
}

/// The two readings of a coordinate text: ICCS (ranks 0-9) and ranks 1-10, where valid.
struct Readings {
    text: String,
    iccs: Option<Move>,
    ranks_1_10: Option<Move>,
}

/// Tokenizes `text` and builds its readings; at least one exists when this succeeds.
fn readings(text: &str) -> Result<Readings, NotationError> {
    let trimmed = text.trim();
    let malformed = |reason| NotationError::Malformed {
        text: trimmed.to_string(),
        reason,
    };
    let (ff, fr, tf, tr) = tokenize(trimmed).map_err(malformed)?;
    let reading = |rank: fn(RankToken) -> Option<u8>| -> Option<Move> {
        Some(Move::new(
            Square::new(ff, rank(fr)?),
            Square::new(tf, rank(tr)?),
        ))
    };
    let r = Readings {
        text: trimmed.to_string(),
        iccs: reading(RankToken::iccs),
        ranks_1_10: reading(RankToken::one_based),
    };
    if r.iccs.is_none() && r.ranks_1_10.is_none() {
        return Err(malformed(
            "rank 0 (ICCS) and rank 10 (ranks 1-10) cannot appear in one move",
        ));
    }
    Ok(r)
}

/// Parses a coordinate move and checks that it is legal on `board`.
///
/// Accepted forms (surrounding whitespace and letter case are ignored, and one `-` may stand
/// between the squares):
///
/// * ICCS, ranks `0`..`9` from Red's home rank: `h2e2`, `H2-E2`;
/// * ranks `1`..`10`, as in Fairy-Stockfish's UCI mode: `h3e3`, `a10a9`.
///
/// A text containing rank `0` can only be ICCS and one containing rank `10` can only be the
/// ranks-1-10 form. Any other text (such as `h3e3`) is valid in both readings: it is accepted if
/// exactly one reading is a legal move here; if both are legal the result is
/// [`NotationError::Ambiguous`], if neither is, [`NotationError::IllegalInBothReadings`]. So an
/// ICCS text without a `0` is refused as ambiguous when the same text, read with ranks 1-10, is
/// also legal (`f3g3` with pieces able to play both `f3g3` and `f2g2`); a caller that knows which
/// form it has should use [`parse_iccs`] or [`parse_ranks_1_10`], which never guess. A sequence
/// of moves should be read with [`parse_line`], which decides the form once for all of them.
///
/// When only one reading exists, the error names the fault: [`NotationError::NoPiece`],
/// [`NotationError::NotSideToMove`] or [`NotationError::Illegal`] ([`NotationError::NoKing`]
/// for a board whose side to move has no king). Texts of any other shape give
/// [`NotationError::Malformed`]. Never panics.
pub fn parse_move(board: &Board, text: &str) -> Result<Move, NotationError> {
    let r = readings(text)?;
    match (r.iccs, r.ranks_1_10) {
        (Some(a), Some(b)) => match (
            check_reading(board, &r.text, a),
            check_reading(board, &r.text, b),
        ) {
            (Ok(_), Ok(_)) => Err(NotationError::Ambiguous {
                text: r.text,
                iccs: a,
                ranks_1_10: b,
            }),
            (Ok(m), Err(_)) | (Err(_), Ok(m)) => Ok(m),
            (Err(e @ NotationError::NoKing { .. }), Err(_))
            | (Err(_), Err(e @ NotationError::NoKing { .. })) => Err(e),
            (Err(_), Err(_)) => Err(NotationError::IllegalInBothReadings {
                text: r.text,
                iccs: a,
                ranks_1_10: b,
            }),
        },
        (Some(m), None) | (None, Some(m)) => check_reading(board, &r.text, m),
        // `readings` never returns this; answer as it would.
        (None, None) => Err(NotationError::Malformed {
            text: r.text,
            reason: "rank 0 (ICCS) and rank 10 (ranks 1-10) cannot appear in one move",
        }),
    }
}

/// Parses an ICCS move (ranks `0`..`9`: `h2e2`, `H2-E2`) and checks that it is legal on `board`.
///
/// Unlike [`parse_move`] this never tries the ranks-1-10 reading, so every legal move's
/// [`Move::iccs`] text parses back to it. A text with rank `10` is
/// [`NotationError::Malformed`]; otherwise the errors are those of [`parse_move`] for a text
/// with a single reading. Never panics.
pub fn parse_iccs(board: &Board, text: &str) -> Result<Move, NotationError> {
    parse_in(board, text, CoordinateForm::Iccs).map_err(|(e, _)| e)
}

/// Parses a move with ranks `1`..`10` (Fairy-Stockfish's UCI form: `h3e3`, `a10a9`) and checks
/// that it is legal on `board`.
///
/// Unlike [`parse_move`] this never tries the ICCS reading. A text with rank `0` is
/// [`NotationError::Malformed`]; otherwise the errors are those of [`parse_move`] for a text
/// with a single reading. Never panics.
pub fn parse_ranks_1_10(board: &Board, text: &str) -> Result<Move, NotationError> {
    parse_in(board, text, CoordinateForm::Ranks1To10).map_err(|(e, _)| e)
}

/// Parses `text` in `form` only. The flag on an error is true when the text is a coordinate
/// move of the other form only (rank `10` for ICCS, rank `0` for ranks 1-10).
fn parse_in(
    board: &Board,
    text: &str,
    form: CoordinateForm,
) -> Result<Move, (NotationError, bool)> {
    let r = readings(text).map_err(|e| (e, false))?;
    let (m, reason) = match form {
        CoordinateForm::Iccs => (r.iccs, "rank 10 does not exist in ICCS (ranks are 0 to 9)"),
        CoordinateForm::Ranks1To10 => (r.ranks_1_10, "rank 0 does not exist with ranks 1 to 10"),
    };
    match m {
        Some(m) => check_reading(board, &r.text, m).map_err(|e| (e, false)),
        None => Err((
            NotationError::Malformed {
                text: r.text,
                reason,
            },
            true,
        )),
    }
}

/// Where one reading of a sequence stops.
struct Stop {
    /// The index of the move not accepted.
    index: usize,
    /// The position it was to be played in (boxed: a board is large for an error).
    board: Box<Board>,
    /// Whether the move is written in the other form only.
    wrong_form: bool,
    error: NotationError,
}

/// Reads every text of `texts` in `form`, playing each move from `board` on.
fn walk(board: &Board, texts: &[&str], form: CoordinateForm) -> Result<Vec<Move>, Stop> {
    let mut board = board.clone();
    let mut moves = Vec::with_capacity(texts.len());
    for (index, text) in texts.iter().enumerate() {
        match parse_in(&board, text, form) {
            Ok(m) => {
                board.make(m);
                moves.push(m);
            }
            Err((error, wrong_form)) => {
                return Err(Stop {
                    index,
                    board: Box::new(board),
                    wrong_form,
                    error,
                });
            }
        }
    }
    Ok(moves)
}

impl Stop {
    fn into_error(
        self,
        texts: &[&str],
        form: Option<CoordinateForm>,
        other_fails_at: Option<usize>,
    ) -> LineError {
        LineError::Move {
            index: self.index,
            text: texts[self.index].trim().to_string(),
            fen: self.board.fen(),
            form,
            other_fails_at,
            error: self.error,
        }
    }
}

/// Parses a sequence of coordinate moves played from `board`, deciding their form once for the
/// whole sequence, and checks that each is legal in the position the ones before it lead to.
///
/// Each text is a move as [`parse_move`] accepts it (ICCS `h2e2`, or ranks 1-10 `h3e3`,
/// `a10a9`; any case, one optional dash). The sequence is read twice, entirely as ICCS and
/// entirely with ranks 1-10 (a text with rank `0` exists only in ICCS, one with rank `10` only
/// with ranks 1-10), each reading playing its moves in turn:
///
/// * if exactly one reading is legal move by move to the end, its moves are the answer, even
///   where a single move on its own would be ambiguous for [`parse_move`];
/// * if both are (so no text has rank `0` or `10`), the result is [`LineError::Ambiguous`] with
///   both move lists: the caller must say which form it has, with [`parse_line_as`];
/// * if neither is, the result is [`LineError::Move`] for the reading that got further: the
///   one whose failing move comes later, or, at the same move, the one for which that move is
///   written in its own form. At the first move (and wherever both readings stop in the same
///   position) the error is [`parse_move`]'s for that text, with `form` `None`; elsewhere a tie
///   reports the ICCS reading.
///
/// An empty sequence is `Ok` and empty. Never panics.
pub fn parse_line(board: &Board, texts: &[&str]) -> Result<Vec<Move>, LineError> {
    use CoordinateForm::{Iccs, Ranks1To10};
    use std::cmp::Ordering;
    let (iccs, ranks) = match (walk(board, texts, Iccs), walk(board, texts, Ranks1To10)) {
        (Ok(a), Ok(b)) if a == b => return Ok(a),
        (Ok(a), Ok(b)) => {
            return Err(LineError::Ambiguous {
                iccs: a,
                ranks_1_10: b,
            });
        }
        (Ok(m), Err(_)) | (Err(_), Ok(m)) => return Ok(m),
        (Err(a), Err(b)) => (a, b),
    };
    let reach = |s: &Stop| (s.index, !s.wrong_form);
    match reach(&iccs).cmp(&reach(&ranks)) {
        Ordering::Greater => Err(iccs.into_error(texts, Some(Iccs), Some(ranks.index))),
        Ordering::Less => Err(ranks.into_error(texts, Some(Ranks1To10), Some(iccs.index))),
        Ordering::Equal if iccs.board == ranks.board => {
            let error = match parse_move(&iccs.board, texts[iccs.index]) {
                Err(e) => e,
                // Both readings failed here, so `parse_move` does too; answer as one of them.
                Ok(_) => iccs.error.clone(),
            };
            Err(Stop { error, ..iccs }.into_error(texts, None, None))
        }
        Ordering::Equal => Err(iccs.into_error(texts, Some(Iccs), Some(ranks.index))),
    }
}

/// Parses a sequence of moves written in `form` played from `board`, checking that each is
/// legal in the position the ones before it lead to: [`parse_iccs`] or [`parse_ranks_1_10`]
/// move by move, for a caller that knows the form (such as after [`LineError::Ambiguous`]).
///
/// The error for the first move not accepted is [`LineError::Move`] with `form` set and
/// `other_fails_at` `None`. An empty sequence is `Ok` and empty. Never panics.
pub fn parse_line_as(
    board: &Board,
    texts: &[&str],
    form: CoordinateForm,
) -> Result<Vec<Move>, LineError> {
    walk(board, texts, form).map_err(|s| s.into_error(texts, Some(form), None))
}

/// The move written with ranks `1`..`10`, as Fairy-Stockfish's UCI mode writes it (`h3e3` for
/// ICCS `h2e2`).
pub fn to_ranks_1_10(m: Move) -> String {
    let square = |s: Square| format!("{}{}", (b'a' + s.file()) as char, s.rank() + 1);
    format!("{}{}", square(m.from()), square(m.to()))
}

/// The ICCS text of `m`, e.g. `h2e2` (the same as [`Move::iccs`]).
pub fn to_iccs(m: Move) -> String {
    m.iccs()
}

const RED_NUMERALS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
const BLACK_NUMERALS: [char; 9] = ['１', '２', '３', '４', '５', '６', '７', '８', '９'];

/// The file number 1..=9 of `file` (0 = a) counted from `color`'s own right.
fn own_file(color: Color, file: u8) -> u8 {
    match color {
        Color::Red => 9 - file,
        Color::Black => file + 1,
    }
}

/// How far forward `rank` is from `color`'s home rank (0..=9).
fn own_rank(color: Color, rank: u8) -> u8 {
    match color {
        Color::Red => rank,
        Color::Black => 9 - rank,
    }
}

/// A number in `color`'s Chinese notation: Chinese numerals for Red, full-width digits for
/// Black. Numbers outside 1..=9 (impossible for legal positions) fall back to ASCII digits.
fn chinese_number(color: Color, n: usize) -> String {
    let table = match color {
        Color::Red => &RED_NUMERALS,
        Color::Black => &BLACK_NUMERALS,
    };
    match n.checked_sub(1).and_then(|i| table.get(i)) {
        Some(c) => c.to_string(),
        None => n.to_string(),
    }
}

/// Piece names in the order of [`PieceKind::ALL`].
const RED_NAMES: [char; 7] = ['帅', '仕', '相', '马', '车', '炮', '兵'];
const BLACK_NAMES: [char; 7] = ['将', '士', '象', '马', '车', '炮', '卒'];

fn chinese_name(piece: Piece) -> char {
    match piece.color() {
        Color::Red => RED_NAMES[piece.kind().index()],
        Color::Black => BLACK_NAMES[piece.kind().index()],
    }
}

fn wxf_letter(kind: PieceKind) -> char {
    match kind {
        PieceKind::King => 'K',
        PieceKind::Advisor => 'A',
        PieceKind::Elephant => 'E',
        PieceKind::Horse => 'H',
        PieceKind::Rook => 'R',
        PieceKind::Cannon => 'C',
        PieceKind::Pawn => 'P',
    }
}

/// Whether `kind` moves along lines (so that its forward/backward number counts ranks).
fn moves_along_lines(kind: PieceKind) -> bool {
    matches!(
        kind,
        PieceKind::King | PieceKind::Rook | PieceKind::Cannon | PieceKind::Pawn
    )
}

/// How the moving piece is told apart from identical pieces.
enum Marker {
    /// No other identical piece on its file (or an advisor/elephant): the file number.
    File,
    /// `count` identical pieces on the file, this one `index`-th from the front (0 = front).
    Tandem { index: usize, count: usize },
    /// Pawns on several files that each hold two or more: `ordinal` counts over all of them
    /// (mover's right to left, front to back); `index` and `count` are within its own file.
    MultiFile {
        ordinal: usize,
        index: usize,
        count: usize,
    },
}

/// Ranks of `piece`s on `file`, front first from the owner's point of view.
fn column(board: &Board, piece: Piece, file: u8) -> Vec<u8> {
    let color = piece.color();
    let mut ranks: Vec<u8> = (0..10u8)
        .filter(|&r| board.piece_at(Square::new(file, r)) == Some(piece))
        .collect();
    ranks.sort_by_key(|&r| std::cmp::Reverse(own_rank(color, r)));
    ranks
}

fn marker(board: &Board, from: Square, piece: Piece) -> Marker {
    if matches!(
        piece.kind(),
        PieceKind::King | PieceKind::Advisor | PieceKind::Elephant
    ) {
        return Marker::File;
    }
    let own = column(board, piece, from.file());
    let Some(index) = own.iter().position(|&r| r == from.rank()) else {
        return Marker::File;
    };
    if own.len() < 2 {
        return Marker::File;
    }
    if piece.kind() != PieceKind::Pawn {
        return Marker::Tandem {
            index,
            count: own.len(),
        };
    }
    let color = piece.color();
    let mut files: Vec<u8> = (0..9u8)
        .filter(|&f| column(board, piece, f).len() >= 2)
        .collect();
    if files.len() < 2 {
        return Marker::Tandem {
            index,
            count: own.len(),
        };
    }
    files.sort_by_key(|&f| own_file(color, f));
    let mut ordinal = 0;
    for &f in &files {
        if f == from.file() {
            break;
        }
        ordinal += column(board, piece, f).len();
    }
    Marker::MultiFile {
        ordinal: ordinal + index,
        index,
        count: own.len(),
    }
}

/// Direction and last number of a move, independent of the notation's script.
struct Motion {
    /// 1 forward, 0 sideways, -1 backward.
    direction: i8,
    /// Ranks moved, or the destination file number.
    number: u8,
}

fn motion(color: Color, kind: PieceKind, m: Move) -> Motion {
    let (from, to) = (
        own_rank(color, m.from().rank()),
        own_rank(color, m.to().rank()),
    );
    let dest_file = own_file(color, m.to().file());
    let direction = match to.cmp(&from) {
        std::cmp::Ordering::Greater => 1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Less => -1,
    };
    let number = if direction != 0 && moves_along_lines(kind) {
        from.abs_diff(to)
    } else {
        dest_file
    };
    Motion { direction, number }
}

/// The Chinese notation of `m` in `board` (the position before the move), e.g. `炮二平五` or
/// `马２进３`; see the [module documentation](crate::notation) for the conventions, including
/// several identical pieces on one file.
///
/// `m` should be a legal move; the text describes the piece on its origin square whatever the
/// move's legality. If the origin square is empty, the ICCS text is returned instead.
pub fn to_chinese(board: &Board, m: Move) -> String {
    let Some(piece) = board.piece_at(m.from()) else {
        return m.iccs();
    };
    let color = piece.color();
    let name = chinese_name(piece);
    let mut s = String::with_capacity(12);
    match marker(board, m.from(), piece) {
        Marker::File => {
            s.push(name);
            s.push_str(&chinese_number(
                color,
                own_file(color, m.from().file()) as usize,
            ));
        }
        Marker::Tandem { index, count } => {
            match (count, index) {
                (2, 0) | (3, 0) => s.push('前'),
                (3, 1) => s.push('中'),
                (2, 1) | (3, 2) => s.push('后'),
                _ => s.push_str(&chinese_number(color, index + 1)),
            }
            s.push(name);
        }
        Marker::MultiFile { ordinal, .. } => {
            s.push_str(&chinese_number(color, ordinal + 1));
            s.push(name);
        }
    }
    let motion = motion(color, piece.kind(), m);
    s.push(match motion.direction {
        1 => '进',
        0 => '平',
        _ => '退',
    });
    s.push_str(&chinese_number(color, motion.number as usize));
    s
}

/// The WXF notation of `m` in `board` (the position before the move), e.g. `C2.5`, `H8+7` or
/// `R++1`; see the [module documentation](crate::notation) for the conventions, including
/// several identical pieces on one file.
///
/// `m` should be a legal move; the text describes the piece on its origin square whatever the
/// move's legality. If the origin square is empty, the ICCS text is returned instead.
pub fn to_wxf(board: &Board, m: Move) -> String {
    let Some(piece) = board.piece_at(m.from()) else {
        return m.iccs();
    };
    let color = piece.color();
    let letter = wxf_letter(piece.kind());
    let file = own_file(color, m.from().file());
    let mut s = String::with_capacity(6);
    match marker(board, m.from(), piece) {
        Marker::File => {
            s.push(letter);
            s.push_str(&file.to_string());
        }
        Marker::Tandem { index, count } => match (count, index) {
            (2, 0) | (3, 0) => {
                s.push(letter);
                s.push('+');
            }
            (2, 1) | (3, 2) => {
                s.push(letter);
                s.push('-');
            }
            (3, 1) | (5, 2) => {
                s.push(letter);
                s.push_str(&file.to_string());
            }
            (4 | 5, 0) => s.push_str("++"),
            (4 | 5, 1) => {
                s.push(letter);
                s.push('+');
            }
            (4, 2) | (5, 3) => {
                s.push(letter);
                s.push('-');
            }
            (4, 3) | (5, 4) => s.push_str("--"),
            _ => {
                s.push(letter);
                s.push_str(&(index + 1).to_string());
            }
        },
        Marker::MultiFile { index, count, .. } => {
            s.push_str(&file.to_string());
            match (count, index) {
                (_, 0) => s.push('+'),
                (2, 1) | (3, 2) => s.push('-'),
                (3, 1) => s.push_str(&file.to_string()),
                _ => s.push_str(&(index + 1).to_string()),
            }
        }
    }
    let motion = motion(color, piece.kind(), m);
    s.push(match motion.direction {
        1 => '+',
        0 => '.',
        _ => '-',
    });
    s.push_str(&motion.number.to_string());
    s
}
