//! FEN rejections, one test per kind of fault: the exact error variant and a message that names the
//! fault. Then the forms the parser accepts beyond the canonical one.

use xiangqi::{Board, Color, FenError, Piece, PieceKind, PositionError, Square, parse_fen};

/// Parses a FEN that must be rejected and returns the error with its message.
fn reject(fen: &str) -> (FenError, String) {
    match parse_fen(fen) {
        Ok(b) => panic!("accepted {fen:?} as {b:?}"),
        Err(e) => {
            let msg = e.to_string();
            (e, msg)
        }
    }
}

/// Rejects a FEN whose rows parse but whose position is illegal.
fn illegal(fen: &str) -> (PositionError, String) {
    match reject(fen) {
        (FenError::Illegal(e), msg) => {
            assert!(msg.starts_with("illegal position: "), "{msg}");
            (e, msg)
        }
        (e, _) => panic!("{fen:?}: want an illegal position, got {e:?}"),
    }
}

fn accept(fen: &str) -> Board {
    parse_fen(fen).unwrap_or_else(|e| panic!("{fen:?} rejected: {e}"))
}

fn sq(s: &str) -> Square {
    Square::parse(s).unwrap()
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

/// Kings on d0 and e9, nothing else: a legal position.
const BARE: &str = "4k4/9/9/9/9/9/9/9/9/3K5";

// ---------------------------------------------------------------------------------------------
// Syntax
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_fen() {
    for fen in ["", "   ", "\t\n"] {
        let (e, msg) = reject(fen);
        assert_eq!(e, FenError::Empty);
        assert_mentions(&msg, &["empty"]);
    }
}

#[test]
fn too_few_rows() {
    let (e, msg) = reject("4k4/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(e, FenError::RowCount(9));
    assert_mentions(&msg, &["9 rows", "10"]);
}

#[test]
fn too_many_rows() {
    let (e, msg) = reject("4k4/9/9/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(e, FenError::RowCount(11));
    assert_mentions(&msg, &["11 rows", "10"]);
    // A trailing slash makes an empty eleventh row.
    let (e, _) = reject("4k4/9/9/9/9/9/9/9/9/3K5/ w");
    assert_eq!(e, FenError::RowCount(11));
}

#[test]
fn row_too_short() {
    let (e, msg) = reject("4k3/9/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(e, FenError::RowWidth { row: 1, width: 8 });
    assert_mentions(&msg, &["row 1", "rank 9", "8 points", "needs 9"]);
    let (e, msg) = reject("4k4/9/9/9/9/9/9/9/9/ w");
    assert_eq!(e, FenError::RowWidth { row: 10, width: 0 });
    assert_mentions(&msg, &["row 10", "rank 0", "0 points"]);
}

#[test]
fn row_too_long() {
    let (e, msg) = reject("4k4/9/9/9/9/9/9/9/9/3K6 w - - 0 1");
    assert_eq!(e, FenError::RowWidth { row: 10, width: 10 });
    assert_mentions(&msg, &["row 10", "rank 0", "10 points", "needs 9"]);
    // A piece beyond the ninth point.
    let (e, msg) = reject("4k4/9/9/9/9/R8R/9/9/9/3K5 w");
    assert_eq!(e, FenError::RowWidth { row: 6, width: 10 });
    assert_mentions(&msg, &["row 6", "rank 4", "10 points"]);
}

#[test]
fn unknown_letter() {
    let (e, msg) = reject("4k4/9/9/9/9/4X4/9/9/9/3K5 w - - 0 1");
    assert_eq!(
        e,
        FenError::UnknownLetter {
            letter: 'X',
            row: 6
        }
    );
    assert_mentions(&msg, &["'X'", "row 6"]);
    // Neither punctuation nor non-ASCII letters pass.
    let (e, _) = reject("4k4/9/9/9/9/4*4/9/9/9/3K5 w");
    assert_eq!(
        e,
        FenError::UnknownLetter {
            letter: '*',
            row: 6
        }
    );
    let (e, msg) = reject("4k4/9/9/9/9/9/9/9/9/3帅5 w");
    assert_eq!(
        e,
        FenError::UnknownLetter {
            letter: '帅',
            row: 10
        }
    );
    assert_mentions(&msg, &["'帅'", "row 10"]);
}

#[test]
fn bad_side_to_move() {
    for side in ["x", "red", "-", "0"] {
        let (e, msg) = reject(&format!("{BARE} {side} - - 0 1"));
        assert_eq!(e, FenError::BadSideToMove(side.to_string()));
        assert_mentions(&msg, &[&format!("'{side}'"), "side to move"]);
    }
}

// ---------------------------------------------------------------------------------------------
// Kings and piece counts
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_red_king() {
    let (e, msg) = illegal("4k4/9/9/9/9/9/9/9/9/9 w - - 0 1");
    assert_eq!(e, PositionError::MissingKing(Color::Red));
    assert_mentions(&msg, &["Red has no king"]);
}

#[test]
fn missing_black_king() {
    let (e, msg) = illegal("9/9/9/9/9/9/9/9/9/3K5 b - - 0 1");
    assert_eq!(e, PositionError::MissingKing(Color::Black));
    assert_mentions(&msg, &["Black has no king"]);
}

#[test]
fn two_kings_of_one_side() {
    let (e, msg) = illegal("3k1k3/9/9/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_eq!(e, PositionError::ExtraKing(Color::Black, 2));
    assert_mentions(&msg, &["Black has 2 kings"]);
    let (e, msg) = illegal("4k4/9/9/9/9/9/9/9/3K5/5K3 w - - 0 1");
    assert_eq!(e, PositionError::ExtraKing(Color::Red, 2));
    assert_mentions(&msg, &["Red has 2 kings"]);
}

fn assert_too_many(fen: &str, color: Color, kind: PieceKind, count: usize, words: &str) {
    let (e, msg) = illegal(fen);
    assert_eq!(
        e,
        PositionError::TooMany {
            color,
            kind,
            count,
            max: kind.max_count()
        },
        "{fen}"
    );
    assert_mentions(
        &msg,
        &[
            &format!("{color} has {count} {words}"),
            &format!("at most {}", kind.max_count()),
        ],
    );
}

#[test]
fn too_many_advisors() {
    assert_too_many(
        "4k4/9/9/9/9/9/9/9/4A4/3AKA3 w - - 0 1",
        Color::Red,
        PieceKind::Advisor,
        3,
        "advisors",
    );
}

#[test]
fn too_many_elephants() {
    assert_too_many(
        "2b1k1b2/9/4b4/9/9/9/9/9/9/3K5 w - - 0 1",
        Color::Black,
        PieceKind::Elephant,
        3,
        "elephants",
    );
}

#[test]
fn too_many_horses() {
    assert_too_many(
        "4k4/9/9/9/9/9/1N1N1N3/9/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Horse,
        3,
        "horses",
    );
}

#[test]
fn too_many_chariots() {
    assert_too_many(
        "4k4/9/9/9/r8/r8/r8/9/9/3K5 w - - 0 1",
        Color::Black,
        PieceKind::Rook,
        3,
        "chariots",
    );
}

#[test]
fn too_many_cannons() {
    assert_too_many(
        "4k4/9/9/9/9/9/9/C1C1C4/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Cannon,
        3,
        "cannons",
    );
}

#[test]
fn too_many_pawns() {
    assert_too_many(
        "4k4/9/9/9/P8/9/P1P1P1P1P/9/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Pawn,
        6,
        "pawns",
    );
    // All five pawns are fine.
    accept("4k4/9/9/9/9/9/P1P1P1P1P/9/9/3K5 w - - 0 1");
}

// ---------------------------------------------------------------------------------------------
// Pieces off their legal points
// ---------------------------------------------------------------------------------------------

fn assert_off_square(fen: &str, color: Color, kind: PieceKind, square: &str) {
    let (e, msg) = illegal(fen);
    assert_eq!(
        e,
        PositionError::OffSquare {
            piece: Piece::new(color, kind),
            square: sq(square),
        },
        "{fen}"
    );
    assert_mentions(
        &msg,
        &[
            &format!("{color} {} on {square}", kind.name()),
            "off its legal points",
        ],
    );
}

#[test]
fn advisor_off_its_points() {
    // e0 is in the palace but not on a diagonal point.
    assert_off_square(
        "4k4/9/9/9/9/9/9/9/9/3KA4 w - - 0 1",
        Color::Red,
        PieceKind::Advisor,
        "e0",
    );
    // Outside the palace altogether.
    assert_off_square(
        "4k4/9/9/9/9/9/9/9/9/2aK5 w - - 0 1",
        Color::Black,
        PieceKind::Advisor,
        "c0",
    );
}

#[test]
fn elephant_across_the_river() {
    assert_off_square(
        "4k4/9/9/4B4/9/9/9/9/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Elephant,
        "e6",
    );
    assert_off_square(
        "4k4/9/9/9/9/2b6/9/9/9/3K5 w - - 0 1",
        Color::Black,
        PieceKind::Elephant,
        "c4",
    );
    // And off the elephant's points on its own side.
    assert_off_square(
        "4k4/9/9/9/9/9/9/9/2B6/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Elephant,
        "c1",
    );
}

#[test]
fn king_outside_the_palace() {
    assert_off_square(
        "4k4/9/9/9/9/9/9/9/9/2K6 w - - 0 1",
        Color::Red,
        PieceKind::King,
        "c0",
    );
    assert_off_square(
        "9/9/9/3k5/9/9/9/9/9/4K4 w - - 0 1",
        Color::Black,
        PieceKind::King,
        "d6",
    );
}

#[test]
fn uncrossed_pawn_on_the_b_file() {
    assert_off_square(
        "4k4/9/9/9/9/9/1P7/9/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Pawn,
        "b3",
    );
    assert_off_square(
        "4k4/9/9/9/1p7/9/9/9/9/3K5 w - - 0 1",
        Color::Black,
        PieceKind::Pawn,
        "b5",
    );
    // Once across the river every file is open to it.
    accept("4k4/9/9/9/1P7/9/9/9/9/3K5 w - - 0 1");
}

#[test]
fn pawn_behind_its_start() {
    assert_off_square(
        "4k4/9/9/9/9/9/9/P8/9/3K5 w - - 0 1",
        Color::Red,
        PieceKind::Pawn,
        "a2",
    );
    assert_off_square(
        "4k4/9/4p4/9/9/9/9/9/9/3K5 w - - 0 1",
        Color::Black,
        PieceKind::Pawn,
        "e7",
    );
}

// ---------------------------------------------------------------------------------------------
// Kings facing and checks
// ---------------------------------------------------------------------------------------------

#[test]
fn kings_facing() {
    for side in ["w", "b"] {
        let (e, msg) = illegal(&format!("4k4/9/9/9/9/9/9/9/9/4K4 {side} - - 0 1"));
        assert_eq!(e, PositionError::KingsFacing);
        assert_mentions(&msg, &["kings face each other"]);
    }
    // Any piece between them breaks the line.
    accept("4k4/9/9/9/4N4/9/9/9/9/4K4 w - - 0 1");
}

fn assert_not_to_move_in_check(fen: &str, color: Color) {
    let (e, msg) = illegal(fen);
    assert_eq!(e, PositionError::SideNotToMoveInCheck(color), "{fen}");
    assert_mentions(
        &msg,
        &[
            &format!("{color} is in check"),
            &format!("not {color}'s turn"),
        ],
    );
}

#[test]
fn side_not_to_move_in_check_by_chariot() {
    assert_not_to_move_in_check("4k4/9/9/9/4R4/9/9/9/9/3K5 w - - 0 1", Color::Black);
    // The same position is legal with Black to move.
    accept("4k4/9/9/9/4R4/9/9/9/9/3K5 b - - 0 1");
    // Along a rank.
    assert_not_to_move_in_check("3k5/9/9/9/9/9/9/9/9/4K2r1 b - - 0 1", Color::Red);
}

#[test]
fn side_not_to_move_in_check_by_horse() {
    assert_not_to_move_in_check("4k4/9/3N5/9/9/9/9/9/9/3K5 w - - 0 1", Color::Black);
    // A piece on the horse's leg (d8) stops the check.
    accept("4k4/3R5/3N5/9/9/9/9/9/9/3K5 w - - 0 1");
    assert_not_to_move_in_check("4k4/9/9/9/9/9/9/2n6/9/3K5 b - - 0 1", Color::Red);
}

#[test]
fn side_not_to_move_in_check_by_cannon() {
    // The black advisor on e8 is the screen.
    assert_not_to_move_in_check("4k4/4a4/9/9/9/4C4/9/9/9/3K5 w - - 0 1", Color::Black);
    // Without a screen, or with two, there is no check.
    accept("4k4/9/9/9/9/4C4/9/9/9/3K5 w - - 0 1");
    accept("4k4/4a4/4b4/9/9/4C4/9/9/9/3K5 w - - 0 1");
}

#[test]
fn side_not_to_move_in_check_by_pawn() {
    // Straight ahead.
    assert_not_to_move_in_check("4k4/4P4/9/9/9/9/9/9/9/3K5 w - - 0 1", Color::Black);
    // From the side, once across the river.
    assert_not_to_move_in_check("3Pk4/9/9/9/9/9/9/9/9/3K5 w - - 0 1", Color::Black);
    // Black's pawn attacks downwards.
    assert_not_to_move_in_check("4k4/9/9/9/9/9/9/9/3p5/3K5 b - - 0 1", Color::Red);
    // A pawn never attacks backwards: the red pawn on e9 is behind the black king on e8.
    accept("4P4/4k4/9/9/9/9/9/9/9/3K5 w - - 0 1");
}

// ---------------------------------------------------------------------------------------------
// Accepted forms
// ---------------------------------------------------------------------------------------------

#[test]
fn elephant_and_horse_aliases() {
    let canonical = accept("2bk2n2/9/9/9/9/9/9/9/9/2B1K1N2 w - - 0 1");
    assert_eq!(
        accept("2ek2h2/9/9/9/9/9/9/9/9/2E1K1H2 w - - 0 1"),
        canonical
    );
    assert_eq!(
        canonical.piece_at(sq("c0")),
        Some(Piece::new(Color::Red, PieceKind::Elephant))
    );
    assert_eq!(
        canonical.piece_at(sq("g9")),
        Some(Piece::new(Color::Black, PieceKind::Horse))
    );
    // The output always uses B and N.
    assert_eq!(canonical.fen(), "2bk2n2/9/9/9/9/9/9/9/9/2B1K1N2 w - - 0 1");
}

#[test]
fn r_means_red() {
    let b = accept(&format!("{BARE} r - - 0 1"));
    assert_eq!(b.side_to_move(), Color::Red);
    assert_eq!(b, accept(&format!("{BARE} w - - 0 1")));
    assert_eq!(b.fen(), format!("{BARE} w - - 0 1"));
    assert_eq!(accept(&format!("{BARE} b")).side_to_move(), Color::Black);
}

#[test]
fn missing_trailing_fields() {
    let full = accept(&format!("{BARE} b - - 0 1"));
    assert_eq!(accept(&format!("{BARE} b")), full);
    assert_eq!(accept(&format!("{BARE} b -")), full);
    // Without a side-to-move field Red moves.
    let bare = accept(BARE);
    assert_eq!(bare.side_to_move(), Color::Red);
    assert_eq!(bare, accept(&format!("{BARE} w - - 0 1")));
}

#[test]
fn extra_trailing_fields() {
    let want = accept(&format!("{BARE} w - - 0 1"));
    assert_eq!(accept(&format!("{BARE} w - - 0 1 extra fields")), want);
    assert_eq!(accept(&format!("{BARE} w - - 57 99")), want);
    // Extra whitespace around the fields is fine too.
    assert_eq!(accept(&format!("  {BARE}   w  -\t- 0 1\n")), want);
    // `FromStr` is the same parser.
    assert_eq!(format!("{BARE} w foo").parse::<Board>(), Ok(want));
}
