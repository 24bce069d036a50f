//! Move notation: ICCS / ranks-1-10 parsing, and Chinese and WXF output.
//!
//! The expected Chinese and WXF strings below were worked out by hand from the conventions in
//! the module documentation of `xiangqi::notation` (files counted from the mover's own right,
//! front = further towards the opponent), not produced by the code under test.

use std::collections::HashSet;
use xiangqi::notation::{
    CoordinateForm, LineError, NotationError, parse_iccs, parse_line, parse_line_as, parse_move,
    parse_ranks_1_10, to_chinese, to_iccs, to_ranks_1_10, to_wxf,
};
use xiangqi::{Board, Color, Move, Piece, PieceKind, START_FEN, Square, parse_fen};

fn board(fen: &str) -> Board {
    parse_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"))
}

fn sq(s: &str) -> Square {
    Square::parse(s).unwrap_or_else(|| panic!("bad square {s}"))
}

fn mv(iccs: &str) -> Move {
    Move::new(sq(&iccs[..2]), sq(&iccs[2..]))
}

/// Checks the Chinese and WXF text of each `(iccs, chinese, wxf)` in the position `fen`, after
/// making sure the move is legal there.
fn check_notation(fen: &str, cases: &[(&str, &str, &str)]) {
    let b = board(fen);
    for &(iccs, chinese, wxf) in cases {
        let m = mv(iccs);
        assert!(b.is_legal_move(m), "{iccs} is not legal in {fen}");
        assert_eq!(to_chinese(&b, m), chinese, "Chinese of {iccs} in {fen}");
        assert_eq!(to_wxf(&b, m), wxf, "WXF of {iccs} in {fen}");
    }
}

fn after(fen: &str, moves: &[&str]) -> Board {
    let mut b = board(fen);
    for &t in moves {
        let m = parse_move(&b, t).unwrap_or_else(|e| panic!("{e}"));
        b.make(m);
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Hand-checked Chinese and WXF strings
// ---------------------------------------------------------------------------------------------

#[test]
fn start_position_red() {
    check_notation(
        START_FEN,
        &[
            ("h2e2", "炮二平五", "C2.5"),
            ("h0g2", "马二进三", "H2+3"),
            ("b2e2", "炮八平五", "C8.5"),
            ("a0a1", "车九进一", "R9+1"),
            ("f0e1", "仕四进五", "A4+5"),
            ("d0e1", "仕六进五", "A6+5"),
            ("g0e2", "相三进五", "E3+5"),
            ("b0c2", "马八进七", "H8+7"),
            ("c3c4", "兵七进一", "P7+1"),
            ("h2h9", "炮二进七", "C2+7"),
            ("e0e1", "帅五进一", "K5+1"),
        ],
    );
}

#[test]
fn start_position_black_replies() {
    let b = after(START_FEN, &["h2e2"]);
    let fen = b.fen();
    check_notation(
        &fen,
        &[
            // Black's h-file is Black's 8th file (counted from Black's right, file a = 1).
            ("h7e7", "炮８平５", "C8.5"),
            ("b9c7", "马２进３", "H2+3"),
            ("h9g7", "马８进７", "H8+7"),
            ("c9e7", "象３进５", "E3+5"),
            ("d9e8", "士４进５", "A4+5"),
            ("f9e8", "士６进５", "A6+5"),
            ("b7b0", "炮２进７", "C2+7"),
            ("a6a5", "卒１进１", "P1+1"),
            ("i6i5", "卒９进１", "P9+1"),
            ("e9e8", "将５进１", "K5+1"),
            ("a9a8", "车１进１", "R1+1"),
        ],
    );
}

#[test]
fn backward_moves() {
    // Red chariot on h4.
    check_notation(
        "4k4/9/9/9/9/7R1/9/9/9/3K5 w - - 0 1",
        &[
            ("h4h1", "车二退三", "R2-3"),
            ("h4h9", "车二进五", "R2+5"),
            ("h4c4", "车二平七", "R2.7"),
        ],
    );
    // Black elephant on e7: towards rank 9 is backward for Black.
    check_notation(
        "4k4/9/4b4/9/9/9/9/9/9/3K5 b - - 0 1",
        &[("e7g9", "象５退７", "E5-7"), ("e7c5", "象５进３", "E5+3")],
    );
    // Black horse retreating.
    check_notation(
        "4k4/9/9/9/9/4n4/9/9/9/3K5 b - - 0 1",
        &[("e4d6", "马５退４", "H5-4"), ("e4f2", "马５进６", "H5+6")],
    );
}

#[test]
fn king_moves() {
    check_notation(
        "3k5/9/9/9/9/9/9/9/9/4K4 w - - 0 1",
        &[("e0f0", "帅五平四", "K5.4"), ("e0e1", "帅五进一", "K5+1")],
    );
    check_notation(
        "4k4/9/9/9/9/9/9/9/3K5/9 w - - 0 1",
        &[("d1d0", "帅六退一", "K6-1"), ("d1d2", "帅六进一", "K6+1")],
    );
    check_notation(
        "3k5/9/9/9/9/9/9/9/9/4K4 b - - 0 1",
        &[("d9d8", "将４进１", "K4+1")],
    );
    check_notation(
        "9/3k5/9/9/9/9/9/9/9/5K3 b - - 0 1",
        &[
            ("d8d9", "将４退１", "K4-1"),
            ("d8d7", "将４进１", "K4+1"),
            ("d8e8", "将４平５", "K4.5"),
        ],
    );
}

#[test]
fn pawns_sideways_after_the_river() {
    check_notation(
        "4k4/9/9/9/4P4/9/9/9/9/3K5 w - - 0 1",
        &[
            ("e5d5", "兵五平六", "P5.6"),
            ("e5f5", "兵五平四", "P5.4"),
            ("e5e6", "兵五进一", "P5+1"),
        ],
    );
    check_notation(
        "4k4/9/9/9/9/2p6/9/9/9/3K5 b - - 0 1",
        &[
            ("c4b4", "卒３平２", "P3.2"),
            ("c4d4", "卒３平４", "P3.4"),
            ("c4c3", "卒３进１", "P3+1"),
        ],
    );
}

#[test]
fn two_chariots_on_one_file() {
    // Red chariots a4 (front) and a2 (rear) on Red's 9th file.
    check_notation(
        "3k5/9/9/9/9/R8/9/R8/9/4K4 w - - 0 1",
        &[
            ("a4a7", "前车进三", "R++3"),
            ("a4a3", "前车退一", "R+-1"),
            ("a2a3", "后车进一", "R-+1"),
            ("a2b2", "后车平八", "R-.8"),
        ],
    );
    // Black chariots a5 (front: nearer Red) and a7 (rear) on Black's 1st file.
    check_notation(
        "4k4/9/r8/9/r8/9/9/9/9/3K5 b - - 0 1",
        &[
            ("a5a0", "前车进５", "R++5"),
            ("a5c5", "前车平３", "R+.3"),
            ("a7a6", "后车进１", "R-+1"),
            ("a7a9", "后车退２", "R--2"),
        ],
    );
}

#[test]
fn two_horses_on_one_file() {
    // Red horses c4 (front) and c2 (rear) on Red's 7th file.
    check_notation(
        "4k4/9/9/9/9/2N6/9/2N6/9/3K5 w - - 0 1",
        &[
            ("c4d6", "前马进六", "H++6"),
            ("c4a3", "前马退九", "H+-9"),
            ("c2e3", "后马进五", "H-+5"),
            ("c2b0", "后马退八", "H--8"),
        ],
    );
    // Black horses g4 (front) and g6 (rear) on Black's 7th file.
    check_notation(
        "4k4/9/9/6n2/9/6n2/9/9/9/3K5 b - - 0 1",
        &[
            ("g4f2", "前马进６", "H++6"),
            ("g6h8", "后马退８", "H--8"),
            ("g6e5", "后马进５", "H-+5"),
        ],
    );
}

#[test]
fn two_cannons_on_one_file() {
    // Red cannons b4 (front) and b2 (rear) on Red's 8th file.
    check_notation(
        "4k4/9/9/9/9/1C7/9/1C7/9/3K5 w - - 0 1",
        &[
            ("b4e4", "前炮平五", "C+.5"),
            ("b4b9", "前炮进五", "C++5"),
            ("b2b3", "后炮进一", "C-+1"),
            ("b2a2", "后炮平九", "C-.9"),
        ],
    );
}

#[test]
fn two_pawns_on_one_file() {
    // Red pawns c6 (front) and c5 (rear) on Red's 7th file.
    check_notation(
        "4k4/9/9/2P6/2P6/9/9/9/9/3K5 w - - 0 1",
        &[
            ("c6c7", "前兵进一", "P++1"),
            ("c6d6", "前兵平六", "P+.6"),
            ("c5b5", "后兵平八", "P-.8"),
        ],
    );
    // Black pawns g3 (front) and g4 (rear) on Black's 7th file.
    check_notation(
        "4k4/9/9/9/9/6p2/6p2/9/9/3K5 b - - 0 1",
        &[
            ("g3g2", "前卒进１", "P++1"),
            ("g3h3", "前卒平８", "P+.8"),
            ("g4f4", "后卒平６", "P-.6"),
        ],
    );
}

#[test]
fn advisors_and_elephants_keep_their_file() {
    // Two Red advisors on d0 and d2: both can reach e1, one advancing, one retreating.
    check_notation(
        "3k5/9/9/9/9/9/9/3A5/9/3A1K3 w - - 0 1",
        &[("d0e1", "仕六进五", "A6+5"), ("d2e1", "仕六退五", "A6-5")],
    );
    // Two Red elephants on c0 and c4.
    check_notation(
        "3k5/9/9/9/9/2B6/9/9/9/2B1K4 w - - 0 1",
        &[
            ("c4e2", "相七退五", "E7-5"),
            ("c0e2", "相七进五", "E7+5"),
            ("c0a2", "相七进九", "E7+9"),
        ],
    );
}

#[test]
fn three_pawns_on_one_file() {
    // Red pawns c7, c6, c5.
    check_notation(
        "4k4/9/2P6/2P6/2P6/9/9/9/9/3K5 w - - 0 1",
        &[
            ("c7c8", "前兵进一", "P++1"),
            ("c6d6", "中兵平六", "P7.6"),
            ("c5b5", "后兵平八", "P-.8"),
        ],
    );
    // Black pawns g2 (front), g3, g4.
    check_notation(
        "4k4/9/9/9/9/6p2/6p2/6p2/9/3K5 b - - 0 1",
        &[
            ("g2g1", "前卒进１", "P++1"),
            ("g3f3", "中卒平６", "P7.6"),
            ("g4h4", "后卒平８", "P-.8"),
        ],
    );
}

#[test]
fn four_and_five_pawns_on_one_file() {
    // Red pawns c8, c7, c6, c5.
    check_notation(
        "4k4/2P6/2P6/2P6/2P6/9/9/9/9/3K5 w - - 0 1",
        &[
            ("c8b8", "一兵平八", "++.8"),
            ("c7d7", "二兵平六", "P+.6"),
            ("c6b6", "三兵平八", "P-.8"),
            ("c5d5", "四兵平六", "--.6"),
        ],
    );
    // Red pawns c9, c8, c7, c6, c5.
    check_notation(
        "2P1k4/2P6/2P6/2P6/2P6/9/9/9/9/3K5 w - - 0 1",
        &[
            ("c9b9", "一兵平八", "++.8"),
            ("c8d8", "二兵平六", "P+.6"),
            ("c7d7", "三兵平六", "P7.6"),
            ("c6b6", "四兵平八", "P-.8"),
            ("c5d5", "五兵平六", "--.6"),
        ],
    );
}

#[test]
fn pawns_on_two_files() {
    // Red: three pawns on c (Red's 7th file), two on g (Red's 3rd file). Numbering starts on the
    // file nearer Red's right (3rd), front to back.
    check_notation(
        "4k4/9/2P6/2P3P2/2P3P2/9/9/9/9/3K5 w - - 0 1",
        &[
            ("g6f6", "一兵平四", "3+.4"),
            ("g5h5", "二兵平二", "3-.2"),
            ("c7c8", "三兵进一", "7++1"),
            ("c6d6", "四兵平六", "77.6"),
            ("c5b5", "五兵平八", "7-.8"),
        ],
    );
    // Black: two pawns on c (Black's 3rd file) and two on g (Black's 7th file).
    check_notation(
        "4k4/9/9/9/9/2p3p2/2p3p2/9/9/3K5 b - - 0 1",
        &[
            ("c3c2", "１卒进１", "3++1"),
            ("c4b4", "２卒平２", "3-.2"),
            ("g3h3", "３卒平８", "7+.8"),
            ("g4f4", "４卒平６", "7-.6"),
        ],
    );
}

#[test]
fn empty_origin_falls_back_to_iccs() {
    let b = board(START_FEN);
    let m = mv("e5e6");
    assert_eq!(to_chinese(&b, m), "e5e6");
    assert_eq!(to_wxf(&b, m), "e5e6");
    assert_eq!(to_iccs(mv("h2e2")), "h2e2");
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

#[test]
fn parse_forms() {
    let b = board(START_FEN);
    for t in ["h2e2", "H2E2", "h2-e2", "H2-E2", " h2e2\n", "h3e3", "H3-E3"] {
        assert_eq!(parse_move(&b, t), Ok(mv("h2e2")), "{t:?}");
    }
    // a1a2: ICCS a1 is empty; ranks 1-10 it is a0a1.
    assert_eq!(parse_move(&b, "a1a2"), Ok(mv("a0a1")));
    // h2h3: ICCS cannon h2 -> h3; ranks 1-10 h1h2 has no piece.
    assert_eq!(parse_move(&b, "h2h3"), Ok(mv("h2h3")));
    let b = after(START_FEN, &["h2e2"]);
    assert_eq!(parse_move(&b, "a10a9"), Ok(mv("a9a8")));
    assert_eq!(parse_move(&b, "A10-A9"), Ok(mv("a9a8")));
    assert_eq!(parse_move(&b, "h8e8"), Ok(mv("h7e7")));
    assert_eq!(parse_move(&b, "b10c8"), Ok(mv("b9c7")));
}

#[test]
fn strict_parsers_and_ranks_1_10_output() {
    let b = board(START_FEN);
    assert_eq!(to_ranks_1_10(mv("h2e2")), "h3e3");
    assert_eq!(to_ranks_1_10(mv("a9a8")), "a10a9");
    assert_eq!(to_ranks_1_10(mv("a0a1")), "a1a2");
    assert_eq!(parse_iccs(&b, "h2e2"), Ok(mv("h2e2")));
    assert_eq!(parse_iccs(&b, "b0-c2"), Ok(mv("b0c2")));
    assert_eq!(parse_ranks_1_10(&b, "h3e3"), Ok(mv("h2e2")));
    assert_eq!(parse_ranks_1_10(&b, "B1-C3"), Ok(mv("b0c2")));
    // Each reading is the only one tried: ICCS h3e3 has no piece on h3.
    assert_eq!(
        parse_iccs(&b, "h3e3"),
        Err(NotationError::NoPiece {
            text: "h3e3".into(),
            square: sq("h3"),
        })
    );
    // With ranks 1-10, h2e2 is ICCS h1e1: no piece on h1.
    assert_eq!(
        parse_ranks_1_10(&b, "h2e2"),
        Err(NotationError::NoPiece {
            text: "h2e2".into(),
            square: sq("h1"),
        })
    );
    assert!(matches!(
        parse_iccs(&b, "a10a9"),
        Err(NotationError::Malformed { .. })
    ));
    assert!(matches!(
        parse_ranks_1_10(&b, "h0g2"),
        Err(NotationError::Malformed { .. })
    ));
    assert!(matches!(
        parse_iccs(&b, "h2e2!"),
        Err(NotationError::Malformed { .. })
    ));
}

#[test]
fn parse_ambiguous() {
    // Red chariots on a3 and a2: "a3b3" is a3b3 in ICCS and a2b2 with ranks 1-10.
    let b = board("3k5/9/9/9/9/9/R8/R8/9/4K4 w - - 0 1");
    let err = parse_move(&b, "a3b3").unwrap_err();
    assert_eq!(
        err,
        NotationError::Ambiguous {
            text: "a3b3".into(),
            iccs: mv("a3b3"),
            ranks_1_10: mv("a2b2"),
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("ambiguous") && msg.contains("a3b3") && msg.contains("a2b2"),
        "{msg}"
    );
    // The strict parsers do not guess.
    assert_eq!(parse_iccs(&b, "a3b3"), Ok(mv("a3b3")));
    assert_eq!(parse_ranks_1_10(&b, "a3b3"), Ok(mv("a2b2")));
    assert_eq!(parse_ranks_1_10(&b, "A3-B3"), Ok(mv("a2b2")));
    // "a2b2": ICCS chariot a2 -> b2; ranks 1-10 it would be a1b1, and a1 is empty.
    assert_eq!(parse_move(&b, "a2b2"), Ok(mv("a2b2")));
    // "a4a5": ICCS a4 is empty, ranks 1-10 it is a3a4.
    assert_eq!(parse_move(&b, "a4a5"), Ok(mv("a3a4")));
}

#[test]
fn parse_errors() {
    let b = board(START_FEN);
    // Malformed.
    for t in [
        "",
        "   ",
        "h",
        "h2",
        "h2e",
        "h2e2e",
        "h2e2x",
        "j2e2",
        "h2j2",
        "z2e2",
        "h2e11",
        "h11e2",
        "h02e2",
        "h2--e2",
        "h2 e2",
        "2he2",
        "h-2e2",
        "炮二平五",
        "C2.5",
        "a0a10",
        "h2e2-",
    ] {
        match parse_move(&b, t) {
            Err(NotationError::Malformed { .. }) => {}
            other => panic!("{t:?}: expected Malformed, got {other:?}"),
        }
    }
    // Only one reading: the error names the fault.
    assert_eq!(
        parse_move(&b, "e5e0"),
        Err(NotationError::NoPiece {
            text: "e5e0".into(),
            square: sq("e5"),
        })
    );
    assert_eq!(
        parse_move(&b, "e6e10"),
        Err(NotationError::NoPiece {
            text: "e6e10".into(),
            square: sq("e5"),
        })
    );
    assert_eq!(
        parse_move(&b, "a9a0"),
        Err(NotationError::NotSideToMove {
            text: "a9a0".into(),
            square: sq("a9"),
            piece: Piece::new(Color::Black, PieceKind::Rook),
            side_to_move: Color::Red,
        })
    );
    assert_eq!(
        parse_move(&b, "a10a9"),
        Err(NotationError::NotSideToMove {
            text: "a10a9".into(),
            square: sq("a9"),
            piece: Piece::new(Color::Black, PieceKind::Rook),
            side_to_move: Color::Red,
        })
    );
    assert_eq!(
        parse_move(&b, "a0a4"),
        Err(NotationError::Illegal {
            text: "a0a4".into(),
            mv: mv("a0a4"),
        })
    );
    assert_eq!(
        parse_move(&b, "e0e9"),
        Err(NotationError::Illegal {
            text: "e0e9".into(),
            mv: mv("e0e9"),
        })
    );
    // Both readings exist and neither is legal.
    assert_eq!(
        parse_move(&b, "e5e6"),
        Err(NotationError::IllegalInBothReadings {
            text: "e5e6".into(),
            iccs: mv("e5e6"),
            ranks_1_10: mv("e4e5"),
        })
    );
    assert_eq!(
        parse_move(&b, "a1a5"),
        Err(NotationError::IllegalInBothReadings {
            text: "a1a5".into(),
            iccs: mv("a1a5"),
            ranks_1_10: mv("a0a4"),
        })
    );
    // A move that leaves the mover in check (flying general) is illegal.
    let pinned = board("4k4/9/9/9/4C4/9/9/9/9/4K4 w - - 0 1");
    assert_eq!(
        parse_move(&pinned, "e5d5"),
        Err(NotationError::IllegalInBothReadings {
            text: "e5d5".into(),
            iccs: mv("e5d5"),
            ranks_1_10: mv("e4d4"),
        })
    );
    assert_eq!(
        parse_iccs(&pinned, "e5d5"),
        Err(NotationError::Illegal {
            text: "e5d5".into(),
            mv: mv("e5d5"),
        })
    );
    // Error messages name the move.
    let msg = parse_move(&b, "e5e0").unwrap_err().to_string();
    assert!(msg.contains("e5e0") && msg.contains("e5"), "{msg}");
}

#[test]
fn parse_without_king_does_not_panic() {
    let mut b = Board::empty(Color::Red);
    b.put(sq("a0"), Piece::new(Color::Red, PieceKind::Rook));
    assert_eq!(
        parse_move(&b, "a0a1"),
        Err(NotationError::NoKing {
            text: "a0a1".into(),
            side_to_move: Color::Red,
        })
    );
    assert!(matches!(
        parse_move(&b, "a1a2"),
        Err(NotationError::NoKing { .. })
    ));
    assert!(matches!(
        parse_move(&b, "b1b2"),
        Err(NotationError::IllegalInBothReadings { .. })
    ));
    let m = mv("a0a1");
    assert_eq!(to_chinese(&b, m), "车九进一");
    assert_eq!(to_wxf(&b, m), "R9+1");
}

// ---------------------------------------------------------------------------------------------
// Sequences: the form is decided once for the whole line
// ---------------------------------------------------------------------------------------------

/// Black rooks on h7 and h6, Red rooks on c5 and c4, Black to move: a rook move along the rank
/// is ambiguous on its own (`h7e7` is also `h6e6` read with ranks 1-10).
const STACKED_ROOKS: &str = "9/4k4/7r1/7r1/2R6/2R6/9/3K5/9/9 b - - 0 1";

/// The position after `moves` (ICCS, each checked legal) from `fen`.
fn play(fen: &str, moves: &[&str]) -> Board {
    let mut b = board(fen);
    for &t in moves {
        assert!(b.is_legal_move(mv(t)), "{t} in {}", b.fen());
        b.make(mv(t));
    }
    b
}

fn moves(iccs: &[&str]) -> Vec<Move> {
    iccs.iter().map(|t| mv(t)).collect()
}

/// Asserts that every text is ambiguous for `parse_move` in the position `line` reaches there.
fn each_ambiguous_alone(fen: &str, texts: &[&str], line: &[Move]) {
    let mut b = board(fen);
    for (t, &m) in texts.iter().zip(line) {
        assert!(
            matches!(parse_move(&b, t), Err(NotationError::Ambiguous { .. })),
            "{t} in {}: {:?}",
            b.fen(),
            parse_move(&b, t)
        );
        b.make(m);
    }
}

#[test]
fn line_of_moves_each_ambiguous_alone_is_read_in_its_one_legal_form() {
    use CoordinateForm::{Iccs, Ranks1To10};
    let b = board(STACKED_ROOKS);
    // As ICCS: the rook h7 goes to e7, and the king's e8f8 is then also the rook's e7f7. With
    // ranks 1-10 the rook h6 went to e6, so the last text (e7f7) finds no piece on e7.
    let texts = ["h7e7", "c5d5", "e8f8"];
    let iccs = moves(&["h7e7", "c5d5", "e8f8"]);
    each_ambiguous_alone(STACKED_ROOKS, &texts, &iccs);
    assert_eq!(parse_line(&b, &texts), Ok(iccs.clone()));
    assert_eq!(parse_line_as(&b, &texts, Iccs), Ok(iccs));
    assert_eq!(
        parse_line_as(&b, &texts, Ranks1To10),
        Err(LineError::Move {
            index: 2,
            text: "e8f8".into(),
            fen: play(STACKED_ROOKS, &["h6e6", "c4d4"]).fen(),
            form: Some(Ranks1To10),
            other_fails_at: None,
            error: NotationError::NoPiece {
                text: "e8f8".into(),
                square: sq("e7"),
            },
        })
    );

    // The same the other way round: the first two moves are ambiguous alone, and the king's
    // e9f9 (ICCS e8f8) has no ICCS reading here, as e9 is empty.
    let texts = ["H7-E7", " c5d5", "e9f9"];
    let ranks = moves(&["h6e6", "c4d4", "e8f8"]);
    each_ambiguous_alone(STACKED_ROOKS, &texts[..2], &ranks);
    assert_eq!(parse_line(&b, &texts), Ok(ranks.clone()));
    assert_eq!(parse_line_as(&b, &texts, Ranks1To10), Ok(ranks));

    // An empty line is empty in both readings.
    assert_eq!(parse_line(&b, &[]), Ok(Vec::new()));
}

/// The main line of `7r1/4k4/9/9/5P3/9/9/9/9/3K2R2 w` (KRPvKR, asian rules), moves then cycle,
/// from `xqtb mainline --json`: move 16, e7f7, is also e6f6 (the rook's) read with ranks 1-10.
const MAINLINE_FEN: &str = "7r1/4k4/9/9/5P3/9/9/9/9/3K2R2 w - - 0 1";
const MAINLINE: &str = "g0g8 e8e7 g8g1 h9h6 g1e1 e7f7 e1f1 f7e7 f5f6 e7e8 f6f7 h6e6 f7f8 e8e7 \
                        f1g1 e7f7 f8e8 f7e7 e8d8 e7f7 g1g7 f7f8 g7g8 f8f9 g8g1 e6a6 g1f1 f9e9 \
                        d8d9 e9e8 f1e1 e8f8 e1e2 a6a0 d0d1 a0a1 d1d0 a1a0";

#[test]
fn a_main_line_in_iccs_reads_back_whole() {
    let texts: Vec<&str> = MAINLINE.split_whitespace().collect();
    let line = moves(&texts);
    let b = board(MAINLINE_FEN);
    assert_eq!(parse_line(&b, &texts), Ok(line.clone()));
    // Move by move, the 16th is ambiguous: the reason for reading the line as a whole.
    let p = play(MAINLINE_FEN, &texts[..15]);
    assert_eq!(
        parse_move(&p, texts[15]),
        Err(NotationError::Ambiguous {
            text: "e7f7".into(),
            iccs: mv("e7f7"),
            ranks_1_10: mv("e6f6"),
        })
    );
    // Written with ranks 1-10, the line reads back too.
    let ranks: Vec<String> = line.iter().map(|&m| to_ranks_1_10(m)).collect();
    let ranks: Vec<&str> = ranks.iter().map(String::as_str).collect();
    assert_eq!(parse_line(&b, &ranks), Ok(line));
}

#[test]
fn a_line_legal_in_both_readings_is_ambiguous_and_names_both() {
    use CoordinateForm::{Iccs, Ranks1To10};
    let b = board(STACKED_ROOKS);
    let texts = ["h7e7", "c5d5"];
    let iccs = moves(&["h7e7", "c5d5"]);
    let ranks = moves(&["h6e6", "c4d4"]);
    let err = parse_line(&b, &texts).unwrap_err();
    assert_eq!(
        err,
        LineError::Ambiguous {
            iccs: iccs.clone(),
            ranks_1_10: ranks.clone(),
        }
    );
    assert_eq!(
        err.to_string(),
        "the moves are ambiguous: as ICCS they are h7e7 c5d5, with ranks 1-10 they are h6e6 \
         c4d4 (ICCS), and both readings are legal move by move, so the form must be given"
    );
    // Naming the form settles it.
    assert_eq!(parse_line_as(&b, &texts, Iccs), Ok(iccs));
    assert_eq!(parse_line_as(&b, &texts, Ranks1To10), Ok(ranks));

    // A repetition with two rooks a side stacked on the a-file: the ranks-1-10 reading moves
    // the other rook of each pair, and is as legal as the ICCS one all the way.
    let fen = "3k5/9/9/r8/r8/9/R8/R8/9/4K4 w - - 0 1";
    let texts = ["a3b3", "a6b6", "b3a3", "b6a6"];
    assert_eq!(
        parse_line(&board(fen), &texts),
        Err(LineError::Ambiguous {
            iccs: moves(&texts),
            ranks_1_10: moves(&["a2b2", "a5b5", "b2a2", "b5a5"]),
        })
    );
}

#[test]
fn an_illegal_line_reports_the_reading_that_got_further() {
    use CoordinateForm::{Iccs, Ranks1To10};
    let b = board(STACKED_ROOKS);

    // With ranks 1-10 the first three moves are legal (h6e6 c4d4 e8f8) and the fourth, d2d3,
    // takes the king out of its palace; as ICCS the third already fails (e9 is empty).
    let texts = ["h7e7", "c5d5", "e9f9", "d3d4"];
    let err = parse_line(&b, &texts).unwrap_err();
    let fen = play(STACKED_ROOKS, &["h6e6", "c4d4", "e8f8"]).fen();
    assert_eq!(
        err,
        LineError::Move {
            index: 3,
            text: "d3d4".into(),
            fen: fen.clone(),
            form: Some(Ranks1To10),
            other_fails_at: Some(2),
            error: NotationError::Illegal {
                text: "d3d4".into(),
                mv: mv("d2d3"),
            },
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "move 4 ('d3d4') in {fen}, reading the moves with ranks 1-10: move 'd3d4': d2d3 is \
             not a legal move in this position; as ICCS they fail earlier, at move 3"
        )
    );
    // The strict reading stops at its own first failure and names no other.
    assert_eq!(
        parse_line_as(&b, &texts, Iccs),
        Err(LineError::Move {
            index: 2,
            text: "e9f9".into(),
            fen: play(STACKED_ROOKS, &["h7e7", "c5d5"]).fen(),
            form: Some(Iccs),
            other_fails_at: None,
            error: NotationError::NoPiece {
                text: "e9f9".into(),
                square: sq("e9"),
            },
        })
    );

    // Both readings fail at the third move, in different positions: the ICCS one is reported.
    let err = parse_line(&b, &["h7e7", "c5d5", "e8e7"]).unwrap_err();
    let fen = play(STACKED_ROOKS, &["h7e7", "c5d5"]).fen();
    assert_eq!(
        err,
        LineError::Move {
            index: 2,
            text: "e8e7".into(),
            fen: fen.clone(),
            form: Some(Iccs),
            other_fails_at: Some(2),
            error: NotationError::Illegal {
                text: "e8e7".into(),
                mv: mv("e8e7"),
            },
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "move 3 ('e8e7') in {fen}, reading the moves as ICCS: move 'e8e7': e8e7 is not a \
             legal move in this position; with ranks 1-10 they fail at this move too"
        )
    );

    // At the same move, a text written in the other form only stops that reading first: e8e10
    // has no ICCS reading, so the ranks-1-10 error (no piece on e7) is the one reported.
    assert_eq!(
        parse_line(&b, &["h7e7", "c5d5", "e8e10"]),
        Err(LineError::Move {
            index: 2,
            text: "e8e10".into(),
            fen: play(STACKED_ROOKS, &["h6e6", "c4d4"]).fen(),
            form: Some(Ranks1To10),
            other_fails_at: Some(2),
            error: NotationError::NoPiece {
                text: "e8e10".into(),
                square: sq("e7"),
            },
        })
    );

    // The first move: both readings stop in the start position, and the error is
    // parse_move's, which speaks of both.
    let start = board(START_FEN);
    let err = parse_line(&start, &["e5e6", "h2e2"]).unwrap_err();
    assert_eq!(
        err,
        LineError::Move {
            index: 0,
            text: "e5e6".into(),
            fen: start.fen(),
            form: None,
            other_fails_at: None,
            error: parse_move(&start, "e5e6").unwrap_err(),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "move 1 ('e5e6') in {}: {}",
            start.fen(),
            parse_move(&start, "e5e6").unwrap_err()
        )
    );
    // A malformed text stops both readings; ICCS got further (h1e1 has no piece).
    assert_eq!(
        parse_line(&start, &[" h2e2 ", " h2e2! "]),
        Err(LineError::Move {
            index: 1,
            text: "h2e2!".into(),
            fen: play(START_FEN, &["h2e2"]).fen(),
            form: Some(Iccs),
            other_fails_at: Some(0),
            error: NotationError::Malformed {
                text: "h2e2!".into(),
                reason: "unexpected characters after the destination square",
            },
        })
    );
}

#[test]
fn random_games_read_back_as_lines() {
    use CoordinateForm::{Iccs, Ranks1To10};
    let roots = [
        START_FEN,
        STACKED_ROOKS,
        "3k5/9/9/r8/r8/9/R8/R8/9/4K4 w - - 0 1",
        "3k5/9/P1P1P1P1P/9/9/9/9/p1p1p1p1p/9/4K4 w - - 0 1",
    ];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut lines, mut ambiguous_lines, mut resolved) = (0, 0, 0);
    for root in roots {
        let start = board(root);
        for _ in 0..40 {
            let mut b = start.clone();
            let mut game = Vec::new();
            let mut ambiguous_move = false;
            for _ in 0..40 {
                let legal = b.legal_moves();
                if legal.is_empty() {
                    break;
                }
                let m = legal[rng.below(legal.len())];
                ambiguous_move |= matches!(
                    parse_move(&b, &m.iccs()),
                    Err(NotationError::Ambiguous { .. })
                );
                b.make(m);
                game.push(m);
                let iccs: Vec<String> = game.iter().map(|m| m.iccs()).collect();
                let iccs: Vec<&str> = iccs.iter().map(String::as_str).collect();
                let ranks: Vec<String> = game.iter().map(|&m| to_ranks_1_10(m)).collect();
                let ranks: Vec<&str> = ranks.iter().map(String::as_str).collect();
                assert_eq!(parse_line_as(&start, &iccs, Iccs), Ok(game.clone()));
                assert_eq!(parse_line_as(&start, &ranks, Ranks1To10), Ok(game.clone()));
                lines += 2;
                // Each text list reads as the game, or is ambiguous with the game as its reading
                // in its own form and the other reading legal throughout.
                match parse_line(&start, &iccs) {
                    Ok(x) => {
                        assert_eq!(x, game, "{root}: {iccs:?}");
                        resolved += ambiguous_move as usize;
                    }
                    Err(LineError::Ambiguous {
                        iccs: a,
                        ranks_1_10,
                    }) => {
                        assert_eq!(a, game, "{root}: {iccs:?}");
                        assert_eq!(parse_line_as(&start, &iccs, Ranks1To10), Ok(ranks_1_10));
                        ambiguous_lines += 1;
                    }
                    Err(e) => panic!("{root}: {iccs:?}: {e}"),
                }
                match parse_line(&start, &ranks) {
                    Ok(x) => assert_eq!(x, game, "{root}: {ranks:?}"),
                    Err(LineError::Ambiguous {
                        iccs: a,
                        ranks_1_10,
                    }) => {
                        assert_eq!(ranks_1_10, game, "{root}: {ranks:?}");
                        assert_eq!(parse_line_as(&start, &ranks, Iccs), Ok(a));
                        ambiguous_lines += 1;
                    }
                    Err(e) => panic!("{root}: {ranks:?}: {e}"),
                }
            }
        }
    }
    assert!(
        resolved > 0,
        "no ICCS line with a move ambiguous alone read back"
    );
    assert!(ambiguous_lines > 0, "no line legal in both readings");
    eprintln!(
        "{lines} lines, {ambiguous_lines} legal in both readings, {resolved} ICCS lines with a \
         move ambiguous alone read back whole"
    );
}

// ---------------------------------------------------------------------------------------------
// Round trips and whole-position properties
// ---------------------------------------------------------------------------------------------

fn perft_fens() -> Vec<String> {
    let mut seen = HashSet::new();
    include_str!("data/perft.tsv")
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').nth(1))
        .filter(|fen| seen.insert(fen.to_string()))
        .map(str::to_string)
        .collect()
}

/// Every position within `depth` plies of `root`, without duplicates.
fn positions(root: &Board, depth: u32) -> Vec<Board> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut frontier = vec![root.clone()];
    seen.insert(root.clone());
    for _ in 0..=depth {
        let mut next = Vec::new();
        for b in frontier {
            for &m in b.legal_moves().iter() {
                let mut c = b.clone();
                c.make(m);
                if seen.insert(c.clone()) {
                    next.push(c);
                }
            }
            out.push(b);
        }
        frontier = next;
    }
    out
}

#[derive(Default)]
struct Tally {
    positions: usize,
    moves: usize,
    ambiguous: usize,
    one_based_only: usize,
}

/// Round-trips every legal move of `b` through ICCS and the ranks-1-10 form, and checks that the
/// Chinese and WXF texts are four characters long and tell all legal moves apart.
fn check_position(b: &Board, tally: &mut Tally) {
    let fen = b.fen();
    let moves = b.legal_moves();
    let mut chinese = HashSet::new();
    let mut wxf = HashSet::new();
    let shifted = |m: Move, up: bool| -> Option<Move> {
        let shift = |s: Square| {
            let r = if up {
                s.rank().checked_add(1)?
            } else {
                s.rank().checked_sub(1)?
            };
            (r < 10).then(|| Square::new(s.file(), r))
        };
        Some(Move::new(shift(m.from())?, shift(m.to())?))
    };
    for &m in moves.iter() {
        // ICCS, strict: always parses back.
        let iccs = m.iccs();
        assert_eq!(parse_iccs(b, &iccs), Ok(m), "{fen}: {iccs}");
        let dashed = format!("{}-{}", m.from(), m.to()).to_uppercase();
        assert_eq!(parse_iccs(b, &dashed), Ok(m), "{fen}: {dashed}");
        // ICCS through parse_move: the same text read with ranks 1-10 is the move one rank
        // lower; only when that is legal too is the text ambiguous.
        let lower = if iccs.contains('0') {
            None
        } else {
            shifted(m, false)
        };
        match lower.filter(|l| moves.contains(l)) {
            Some(l) => {
                tally.ambiguous += 1;
                let want = |text: &str| NotationError::Ambiguous {
                    text: text.to_string(),
                    iccs: m,
                    ranks_1_10: l,
                };
                assert_eq!(parse_move(b, &iccs), Err(want(&iccs)), "{fen}: {iccs}");
                assert_eq!(
                    parse_move(b, &dashed),
                    Err(want(&dashed)),
                    "{fen}: {dashed}"
                );
            }
            None => {
                assert_eq!(parse_move(b, &iccs), Ok(m), "{fen}: {iccs}");
                assert_eq!(parse_move(b, &dashed), Ok(m), "{fen}: {dashed}");
            }
        }

        // Ranks 1-10, strict: always parses back.
        let t = to_ranks_1_10(m);
        assert_eq!(parse_ranks_1_10(b, &t), Ok(m), "{fen}: {t}");
        // Ranks 1-10 through parse_move: the same text read as ICCS is the move one rank higher.
        let higher = if t.contains("10") {
            None
        } else {
            shifted(m, true)
        };
        if t.contains("10") {
            tally.one_based_only += 1;
        }
        match higher.filter(|h| moves.contains(h)) {
            Some(h) => assert_eq!(
                parse_move(b, &t),
                Err(NotationError::Ambiguous {
                    text: t.clone(),
                    iccs: h,
                    ranks_1_10: m,
                }),
                "{fen}: {t}"
            ),
            None => assert_eq!(parse_move(b, &t), Ok(m), "{fen}: {t}"),
        }

        let c = to_chinese(b, m);
        let w = to_wxf(b, m);
        assert_eq!(c.chars().count(), 4, "{fen}: {m} -> {c}");
        assert_eq!(w.chars().count(), 4, "{fen}: {m} -> {w}");
        assert!(w.is_ascii(), "{fen}: {m} -> {w}");
        assert!(chinese.insert(c.clone()), "{fen}: {c} names two moves");
        assert!(wxf.insert(w.clone()), "{fen}: {w} names two moves");
    }
    tally.positions += 1;
    tally.moves += moves.len();
}

#[test]
fn round_trip_perft_positions_and_two_plies_below() {
    let mut tally = Tally::default();
    for fen in perft_fens() {
        for b in positions(&board(&fen), 2) {
            check_position(&b, &mut tally);
        }
    }
    assert!(
        tally.positions > 10_000,
        "only {} positions",
        tally.positions
    );
    assert!(tally.ambiguous > 0, "no ambiguous ranks-1-10 text met");
    assert!(tally.one_based_only > 0, "no rank-10 text met");
    eprintln!(
        "{} positions, {} moves, {} ambiguous ranks-1-10 texts, {} with rank 10",
        tally.positions, tally.moves, tally.ambiguous, tally.one_based_only
    );
}

/// A small deterministic generator (xorshift64*), so the test needs no extra crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

#[test]
fn random_games_with_many_pawns() {
    // Pawn-heavy positions, where several pawns end up on one file, plus the start position.
    let roots = [
        "3k5/9/P1P1P1P1P/9/9/9/9/p1p1p1p1p/9/4K4 w - - 0 1",
        "3k5/9/9/P1P1P1P1P/9/9/p1p1p1p1p/9/9/4K4 b - - 0 1",
        "3akab2/9/4b4/P1P1P1P1P/9/9/p1p1p1p1p/4B4/9/2BAKA3 w - - 0 1",
        START_FEN,
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut tally = Tally::default();
    let mut multi_pawn_files = 0;
    for root in roots {
        for _ in 0..60 {
            let mut b = board(root);
            for _ in 0..120 {
                check_position(&b, &mut tally);
                for color in Color::ALL {
                    let pawn = Piece::new(color, PieceKind::Pawn);
                    let files = (0..9u8)
                        .filter(|&f| {
                            (0..10u8)
                                .filter(|&r| b.piece_at(Square::new(f, r)) == Some(pawn))
                                .count()
                                >= 2
                        })
                        .count();
                    if files >= 2 {
                        multi_pawn_files += 1;
                    }
                }
                let moves = b.legal_moves();
                if moves.is_empty() {
                    break;
                }
                b.make(moves[rng.below(moves.len())]);
            }
        }
    }
    assert!(
        multi_pawn_files > 0,
        "no position with pawns doubled on two files"
    );
    eprintln!(
        "{} positions, {} moves, {} with pawns doubled on two files",
        tally.positions, tally.moves, multi_pawn_files
    );
}
