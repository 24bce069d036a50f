//! The three coordinate-move parsers of `xiangqi::notation`: `parse_iccs`, `parse_ranks_1_10`
//! and `parse_move` (either form, one move at a time; the CLI's `adjudicate` reads its moves with
//! `parse_line`, which decides the form once for the whole sequence), on one board and one text.
//!
//! Input: `FEN '\n' MOVE`; without a newline, or when the FEN does not parse, the first byte
//! picks one of a few fixed positions and the rest is the move text.
//!
//! A move that parses is legal, is written back by `to_iccs` / `to_ranks_1_10` as the text
//! normalised (trimmed, lower case, without its dash), and reparses to itself. `parse_move`
//! agrees with the two single-form parsers: both readings legal is ambiguous, one legal is that
//! move, none is an error. On a board given by FEN, every legal move round-trips through both
//! forms and gets a Chinese and a WXF text.

use xiangqi::notation::{
    NotationError, parse_iccs, parse_move, parse_ranks_1_10, to_chinese, to_iccs, to_ranks_1_10,
    to_wxf,
};
use xiangqi::{Board, Move, parse_fen};

/// Positions for inputs without a FEN: the opening (both sides to move), an endgame, a
/// crowded middle game, and positions from the perft suite.
pub const BOARDS: [&str; 8] = [
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w",
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR b",
    "5k3/9/9/9/9/R8/9/4n4/9/3K5 w",
    "4k4/9/9/9/9/3r5/9/2N6/9/R4K3 w",
    "r1ba1a3/4kn3/2n1b4/pNp1p1p1p/4c4/6P2/P1P2R2P/1CcC5/9/2BAKAB2 w",
    "1cbak4/9/n2a5/2p1p3p/5cp2/2n2N3/6PCP/3AB4/2C6/3A1K1N1 w",
    "5a3/3k5/3aR4/9/5r3/5n3/9/3A1A3/5K3/2BC2B2 w",
    "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w",
];

pub fn run(data: &[u8]) {
    let text = super::text(data);
    let (board, mv, from_fen) = match text.split_once('\n') {
        Some((fen, mv)) => match parse_fen(fen) {
            Ok(b) => (b, mv, true),
            Err(_) => (fixed(data), mv, false),
        },
        None => (fixed(data), text.get(1..).unwrap_or(""), false),
    };
    check_text(&board, mv);
    if from_fen {
        check_board(&board);
    }
}

fn fixed(data: &[u8]) -> Board {
    let i = data.first().copied().unwrap_or(0) as usize % BOARDS.len();
    parse_fen(BOARDS[i]).expect("fixed positions parse")
}

/// The text as the parsers read it: trimmed, lower case, without a dash between the squares.
fn normalised(text: &str) -> String {
    text.trim().to_ascii_lowercase().replacen('-', "", 1)
}

fn check_legal(board: &Board, m: Move, text: &str, parser: &str) {
    assert!(
        board.legal_moves().iter().any(|&x| x == m),
        "{parser} accepted '{text}' as {m}, which is not legal in {}",
        board.fen()
    );
}

pub fn check_text(board: &Board, text: &str) {
    let iccs = parse_iccs(board, text);
    let ranks = parse_ranks_1_10(board, text);
    let any = parse_move(board, text);
    for e in [&iccs, &ranks, &any]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
    {
        assert!(!e.to_string().is_empty());
    }
    if let Ok(m) = iccs {
        check_legal(board, m, text, "parse_iccs");
        assert_eq!(to_iccs(m), normalised(text), "parse_iccs('{text}') = {m}");
        assert_eq!(parse_iccs(board, &to_iccs(m)), Ok(m));
    }
    if let Ok(m) = ranks {
        check_legal(board, m, text, "parse_ranks_1_10");
        assert_eq!(
            to_ranks_1_10(m),
            normalised(text),
            "parse_ranks_1_10('{text}') = {m}"
        );
        assert_eq!(parse_ranks_1_10(board, &to_ranks_1_10(m)), Ok(m));
    }
    match (&iccs, &ranks, &any) {
        (
            Ok(a),
            Ok(b),
            Err(NotationError::Ambiguous {
                iccs, ranks_1_10, ..
            }),
        ) => {
            assert_eq!((a, b), (iccs, ranks_1_10), "'{text}'");
        }
        (Ok(a), Err(_), Ok(m)) | (Err(_), Ok(a), Ok(m)) => assert_eq!(a, m, "'{text}'"),
        (Err(_), Err(_), Err(_)) => {}
        _ => panic!(
            "parse_move('{text}') = {any:?} disagrees with parse_iccs = {iccs:?} and parse_ranks_1_10 = {ranks:?} in {}",
            board.fen()
        ),
    }
}

/// Every legal move of `board` round-trips through both coordinate forms and is written in
/// Chinese and WXF.
pub fn check_board(board: &Board) {
    for &m in board.legal_moves().iter() {
        assert_eq!(parse_iccs(board, &to_iccs(m)), Ok(m));
        assert_eq!(parse_ranks_1_10(board, &to_ranks_1_10(m)), Ok(m));
        match parse_move(board, &to_iccs(m)) {
            Ok(x) => assert_eq!(x, m),
            Err(NotationError::Ambiguous { iccs, .. }) => assert_eq!(iccs, m),
            Err(e) => panic!("parse_move('{}') in {}: {e}", to_iccs(m), board.fen()),
        }
        assert!(!to_chinese(board, m).is_empty());
        assert!(!to_wxf(board, m).is_empty());
    }
}
