//! One hand-built position per clause of the Asian repetition rules, each with a played cycle
//! (ICCS moves) whose last position repeats the first, judged by
//! [`xiangqi::repetition::adjudicate`].
//!
//! The expected verdict of every test is taken from the rule text, never from the program:
//! the doc comment of each test quotes or paraphrases the clause, with its source:
//! - `rules-asian.md`: the project brief's summary of the rule texts ("What the rule texts
//!   say"), as restated in `docs/repetition-rules.md`;
//! - `rules-notes.md`: quotations of the AXF rule book ("Asian Chinese Chess Rules", chapter
//!   4, rules 1-40, [ASIA]) and of the WXF rules ([WXF]); `docs/repetition-rules.md` cites the
//!   rules and diagrams it relies on.
//!
//! Every position of every cycle is checked to be legal (both kings, kings not facing, the
//! side not to move not in check) by round-tripping it through the FEN parser, and every move
//! is checked to be legal and not a capture.
//!
//! Coordinates: files `a`..`i` from Red's left, ranks `0`..`9` from Red's side; FEN rows run
//! from rank 9 down to rank 0.

use xiangqi::repetition::{Adjudication, Offence, Verdict, adjudicate};
use xiangqi::{Board, Color, parse_fen};

/// Plays `moves` (ICCS, space separated) from `fen` and adjudicates them, after checking that
/// every position on the way is legal, that no move captures, and that the whole sequence is
/// one cycle (its last position is its first).
fn judge(fen: &str, moves: &str) -> Adjudication {
    let start = parse_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
    let mut board = start.clone();
    let mut seq = Vec::new();
    for text in moves.split_whitespace() {
        let m = xiangqi::notation::parse_iccs(&board, text)
            .unwrap_or_else(|e| panic!("{fen}: move {text}: {e}"));
        assert!(
            board.is_legal_move(m),
            "{text} is not legal in {}",
            board.fen()
        );
        assert!(
            board.piece_at(m.to()).is_none(),
            "{text} captures in {}",
            board.fen()
        );
        board.make(m);
        // The FEN parser rejects facing kings and a side not to move in check.
        let reparsed: Board = parse_fen(&board.fen())
            .unwrap_or_else(|e| panic!("after {text}: {} is not legal: {e}", board.fen()));
        assert_eq!(reparsed, board);
        seq.push(m);
    }
    assert_eq!(board, start, "the moves do not return to the start");
    let a = adjudicate(&start, &seq).unwrap_or_else(|e| panic!("{fen}: {e}"));
    assert_eq!(a.cycle_start, 0, "the cycle is the whole sequence");
    assert_eq!(a.cycle.len(), seq.len());
    a
}

/// The class of each move of the cycle, in order: `"check"`, `"idle"`, or `"chase "` followed
/// by the squares (after the move) of the pieces chased.
fn classes(a: &Adjudication) -> Vec<String> {
    a.cycle
        .iter()
        .map(|c| {
            let squares: Vec<String> = c.class.chased.iter().map(|q| q.to_string()).collect();
            match (c.class.check, squares.is_empty()) {
                (false, true) => "idle".to_string(),
                (true, true) => "check".to_string(),
                (false, false) => format!("chase {}", squares.join(" ")),
                (true, false) => format!("check chase {}", squares.join(" ")),
            }
        })
        .collect()
}

/// Plays `setup` from `fen`, then checks that the side that made the last move could play the
/// capture `take` there and that the other side could then play the recapture `back`.
fn assert_can_take_back(fen: &str, setup: &str, take: &str, back: &str) {
    let mut b = parse_fen(fen).unwrap();
    let mut mover = b.side_to_move();
    for t in setup.split_whitespace() {
        mover = b.side_to_move();
        let m = xiangqi::notation::parse_iccs(&b, t).unwrap();
        b.make(m);
    }
    b.set_side_to_move(mover);
    let m = xiangqi::notation::parse_iccs(&b, take)
        .unwrap_or_else(|e| panic!("{take} after {setup}: {e}"));
    assert!(b.is_legal_move(m), "{take} is legal after {setup}");
    assert!(b.piece_at(m.to()).is_some(), "{take} captures");
    b.make(m);
    let r = xiangqi::notation::parse_iccs(&b, back)
        .unwrap_or_else(|e| panic!("{back} after {setup} {take}: {e}"));
    assert!(b.is_legal_move(r), "{back} takes back after {setup} {take}");
}

fn loses(loser: Color, offence: Offence) -> Verdict {
    Verdict::Loses { loser, offence }
}

/// A side's offence must be the same whichever of its moves the cycle is started from: the
/// rules judge a repetition, not where one begins to count it.
fn assert_rotation_invariant(fen: &str, moves: &str, want: Verdict) {
    let start = parse_fen(fen).unwrap();
    let texts: Vec<&str> = moves.split_whitespace().collect();
    let mut board = start.clone();
    for k in 0..texts.len() {
        let rotated: Vec<&str> = texts[k..].iter().chain(&texts[..k]).copied().collect();
        let a = judge(&board.fen(), &rotated.join(" "));
        assert_eq!(a.verdict, want, "cycle started at move {k} ({})", texts[k]);
        let m = xiangqi::notation::parse_iccs(&board, texts[k]).unwrap();
        board.make(m);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Forced perpetual check
// ---------------------------------------------------------------------------------------------

/// Clause 1, forced perpetual check: the checker loses.
///
/// Rule text: "Perpetual check loses, whatever the other side does, unless the other side also
/// checks perpetually" (rules-asian.md, "What the rule texts say", first item); [ASIA] rule 6:
/// "Under any circumstance, the side that perpetually checks with one piece or several pieces
/// will be ruled as loss" (rules-notes.md §2).
///
/// Position `5k3/7R1/5a3/9/9/9/9/9/9/3K5 w`: Red K d0, R h8; Black k f9, advisor f7.
/// Red's rook checks on every move (h8h9 along rank 9, h9h8 along rank 8); every black reply
/// is Black's only legal move (from f9 only f8, since e9 is on the rook's rank; from f8 only
/// f9, since e8 is on the rook's rank and f7 holds the advisor). Red checks every move, Black
/// checks never: Red loses by perpetual check.
#[test]
fn clause_01_forced_perpetual_check_loses_for_the_checker() {
    let fen = "5k3/7R1/5a3/9/9/9/9/9/9/3K5 w";
    let moves = "h8h9 f9f8 h9h8 f8f9";
    // Black's replies really are forced.
    let mut b = parse_fen(fen).unwrap();
    for (i, text) in moves.split_whitespace().enumerate() {
        if i % 2 == 1 {
            let only: Vec<String> = b.legal_moves().iter().map(|m| m.iccs()).collect();
            assert_eq!(only, [text.to_string()], "black's only move in {}", b.fen());
        }
        let m = xiangqi::notation::parse_iccs(&b, text).unwrap();
        b.make(m);
    }
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["check", "idle", "check", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualCheck, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualCheck));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// 2. An idle escape
// ---------------------------------------------------------------------------------------------

/// Clause 2, an idle move in the checker's cycle: draw.
///
/// Rule text: [ASIA] rule 13: "'One check one idle' and 'one check and one threatening to check
/// and capture' are both ruled as draw" (rules-notes.md §4). Only a side that checks on every
/// one of its moves is a perpetual checker (rules-asian.md, "Two checks, one check back (one
/// side checks every move ...)"; rules-notes.md §2: "So 'perpetual' means *every* move of that
/// side in the cycle"); nobody else offends, and a repetition without a violation is a draw
/// ([ASIA] rule 5, rules-notes.md §1).
///
/// Position `5k3/9/7R1/9/9/9/9/9/9/3K5 w`: Red K d0, R h7; Black k f9. Red checks (h7h9), the
/// king steps to f8, Red retreats without check (h9h7: the rook on h7 attacks neither f8 nor
/// f9), the king returns. One check, one idle: draw.
#[test]
fn clause_02_one_check_one_idle_is_a_draw() {
    let fen = "5k3/9/7R1/9/9/9/9/9/9/3K5 w";
    let moves = "h7h9 f9f8 h9h7 f8f9";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["check", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 3. Mutual perpetual check
// ---------------------------------------------------------------------------------------------

/// Clause 3, mutual perpetual check: draw.
///
/// Rule text: "Perpetual check loses ... unless the other side also checks perpetually (mutual
/// perpetual check is a draw)" (rules-asian.md, first item); [ASIA] rule 7: "It is a draw when
/// both sides keep checking. ('Resolve check and check back' is a draw.)" (rules-notes.md §2).
///
/// Position `3r1k3/9/9/9/5c3/5R3/9/5C3/3K5/9 w`: Red K d1, R f4, C f2; Black k f9, r d9,
/// c f5. Red is in check from the rook d9 (the d-file is open).
/// 1. f4d4: blocks the d-file and uncovers the cannon f2, whose only screen on the f-file is
///    now the black cannon f5: check.
/// 2. f5d5: the black cannon leaves the f-file (no screen: check resolved) and lands on d5,
///    where it jumps the red rook d4 onto the king d1: check.
/// 3. d4f4: the rook leaves the d-file (the black cannon loses its screen, the black rook d9
///    is blocked by its own cannon) and becomes the screen of the cannon f2: check.
/// 4. d5f5: the black cannon blocks the f-file (two screens) and uncovers the rook d9: check.
///
/// Every move of both sides checks: draw.
#[test]
fn clause_03_mutual_perpetual_check_is_a_draw() {
    let fen = "3r1k3/9/9/9/5c3/5R3/9/5C3/3K5/9 w";
    let moves = "f4d4 f5d5 d4f4 d5f5";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["check", "check", "check", "check"]);
    assert_eq!(
        a.offences,
        [Offence::PerpetualCheck, Offence::PerpetualCheck]
    );
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 4. Two checks, one check back
// ---------------------------------------------------------------------------------------------

/// Clause 4, "two checks, one check back": the side that checks on every move loses.
///
/// Rule text: "'Two checks, one check back' (one side checks every move, the other checks on
/// some moves): the side that checks every move loses" (rules-asian.md); [ASIA] rule 8: "In
/// 'Two checks one check back', the perpetually checking side will be ruled to lose" (rules-
/// notes.md §2, Diagram 5: Red checks on both of its moves, Black on one of its two, the other
/// being idle). This is not "one check one idle" (rule 13, clause 2 above), which concerns the
/// side that does *not* check every move: here that side is Black, which is allowed its one
/// check and one idle move, while Red, checking every move, is the perpetual checker.
///
/// Position `5k3/9/9/9/5c3/5R3/9/5C3/3K5/9 w`: the position of clause 3 without the black rook
/// d9. 1. f4d4 (uncovers the cannon f2 through the screen f5: check), 2. f5d5 (resolves it
/// and checks d1 through the screen d4), 3. d4f4 (resolves it, checks f9 through the screen
/// f4), 4. d5f5 (blocks with a second screen; no black rook behind it now: idle).
/// Red: check, check; Black: check, idle. Red loses by perpetual check.
#[test]
fn clause_04_two_checks_one_check_back_loses_for_the_perpetual_checker() {
    let fen = "5k3/9/9/9/5c3/5R3/9/5C3/3K5/9 w";
    let moves = "f4d4 f5d5 d4f4 d5f5";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["check", "check", "check", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualCheck, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualCheck));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// 5. One check, one chase
// ---------------------------------------------------------------------------------------------

/// Clause 5, "one check, one chase": draw.
///
/// Rule text: "'One check, one chase' is a draw" (rules-asian.md, "Not chases" item); [ASIA]
/// rule 12: "'One check one chase' or 'several checks and one chase' should be ruled as a
/// draw", Diagram 13: "Red's rook checks once or several times then chase Black's cannon.
/// Although Black's cannon is not protected, this is not a perpetual chase (Red checked)"
/// (rules-notes.md §4).
///
/// Position `5k3/9/9/9/9/7R1/9/1c7/9/3K5 w`: Red K d0, R h4; Black k f9, c b2 (unprotected).
/// The rook alternately checks the king (h4h9, h2h8) and attacks the cannon along a rank
/// (h9h2 on rank 2, h8h4 on rank 4); the king steps f9/f8, the cannon runs b2/b4 each time.
/// Red: check, chase, check, chase of the same cannon; neither a perpetual check nor a
/// perpetual chase: draw.
#[test]
fn clause_05_one_check_one_chase_is_a_draw() {
    let fen = "5k3/9/9/9/9/7R1/9/1c7/9/3K5 w";
    let moves = "h4h9 f9f8 h9h2 b2b4 h2h8 f8f9 h8h4 b4b2";
    let a = judge(fen, moves);
    assert_eq!(
        classes(&a),
        [
            "check", "idle", "chase b2", "idle", "check", "idle", "chase b4", "idle"
        ]
    );
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 6. Horse or cannon chasing a protected chariot
// ---------------------------------------------------------------------------------------------

/// Clause 6 (cannon), a cannon chasing a protected chariot: the chaser loses.
///
/// Rule text: a chase is a move that threatens to win a piece, which includes "a horse or
/// cannon attacks a chariot (protected or not)"; "Perpetual chase loses" (rules-asian.md);
/// [ASIA] rule 15: "One or two cannons cannot perpetually chase a rook even if the rook is
/// protected" (rules-notes.md §5).
///
/// Position `4k4/9/4b4/9/6r2/9/2P3P2/9/3K5/2C6 w`: Red K d1, C c0, pawns c3 g3 (the cannon's
/// screens); Black k e9, elephant e7, r g5. The chariot runs between g5 and c5, both covered
/// by the elephant e7 (it recaptures on either square), and the cannon follows along rank 0
/// (c0g0 attacks g5 over g3, g0c0 attacks c5 over c3). The chariot's own moves attack only the
/// uncrossed pawns c3/g3, which are never chased. Red chases the same protected chariot on
/// every move: Red loses by perpetual chase.
#[test]
fn clause_06_cannon_chasing_a_protected_chariot_loses() {
    let fen = "4k4/9/4b4/9/6r2/9/2P3P2/9/3K5/2C6 w";
    let moves = "c0g0 g5c5 g0c0 c5g5";
    // The chariot is protected on both squares: the elephant can take back.
    assert_can_take_back(fen, "c0g0", "g0g5", "e7g5");
    assert_can_take_back(fen, "c0g0 g5c5 g0c0", "c0c5", "e7c5");
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase g5", "idle", "chase c5", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualChase, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

/// Clause 6 (horse), a horse chasing a protected chariot: the chaser loses.
///
/// Rule text: as for the cannon: "a horse or cannon attacks a chariot (protected or not)" is a
/// chase, and "Perpetual chase loses" (rules-asian.md); [ORANGE]'s "cannon and horse cannot
/// perpetually chase a chariot" for Diagrams 42-47 (rules-notes.md §5, "Horse or cannon
/// against a chariot").
///
/// Position `5k3/4a4/5r3/6N2/9/9/9/9/9/4K4 w`: Red K e0, N g6; Black k f9, advisor e8, r f7.
/// The chariot steps between f7 (covered by the advisor e8) and f8 (covered by the king f9);
/// the horse follows between e5 (attacking f7) and g6 (attacking f8). The chariot never
/// attacks the horse. Red chases the same protected chariot on every move: Red loses.
#[test]
fn clause_06_horse_chasing_a_protected_chariot_loses() {
    let fen = "5k3/4a4/5r3/6N2/9/9/9/9/9/4K4 w";
    let moves = "g6e5 f7f8 e5g6 f8f7";
    // Protected on both squares: after the horse takes, Black can take back.
    assert_can_take_back(fen, "g6e5", "e5f7", "e8f7");
    assert_can_take_back(fen, "g6e5 f7f8 e5g6", "g6f8", "f9f8");
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase f7", "idle", "chase f8", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualChase, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// 7. Chasing an uncrossed pawn
// ---------------------------------------------------------------------------------------------

/// Clause 7, chasing a pawn that has not crossed the river: not a chase, draw.
///
/// Rule text: "Not chases: ... attacks on a pawn that has not crossed the river" (rules-
/// asian.md); [ASIA] rule 25: "When a Cannon is attacking an unprotected Knight, Guard,
/// Minister, or Pawn that has crossed the river, it will be a perpetual chase even if only the
/// cannon mount moves ... However, perpetually chasing a Pawn that has NOT crossed the river is
/// allowed"; [WXF] general rule 3: "Perpetual chase of one piece on another piece (other than a
/// pawn that has yet to cross the river) will be ruled as a loss" (rules-notes.md §5).
///
/// Position `4k4/9/9/2p6/2b6/2B6/9/9/9/2CK5 w`: Red K d0, C c0, elephant c4; Black k e9,
/// elephant c5, pawn c6 (on Black's own side: not crossed). Between the cannon c0 and the pawn
/// c6 stand the two elephants. Red's elephant leaves (c4e2): the black elephant is the only
/// screen, the cannon attacks the unprotected pawn. Black's elephant leaves too (c5e7): no
/// screen. Red's elephant returns (e2c4): a screen again, the pawn is attacked again. Black's
/// elephant returns (e7c5). Every red move attacks the same unprotected pawn, but the pawn has
/// not crossed the river: no chase, nobody offends, draw.
#[test]
fn clause_07_chasing_an_uncrossed_pawn_is_a_draw() {
    let fen = "4k4/9/9/2p6/2b6/2B6/9/9/9/2CK5 w";
    let moves = "c4e2 c5e7 e2c4 e7c5";
    // The pawn really is attacked, and unprotected, after each red move.
    let mut b = parse_fen(fen).unwrap();
    let c6 = xiangqi::Square::parse("c6").unwrap();
    let c0 = xiangqi::Square::parse("c0").unwrap();
    for (i, text) in moves.split_whitespace().enumerate() {
        let m = xiangqi::notation::parse_iccs(&b, text).unwrap();
        b.make(m);
        if i % 2 == 0 {
            let mut c = b.clone();
            c.set_side_to_move(Color::Red);
            let take = xiangqi::Move::new(c0, c6);
            assert!(c.is_legal_move(take), "the cannon attacks c6 after {text}");
            c.make(take);
            assert!(
                !c.legal_moves().iter().any(|r| r.to() == c6),
                "the pawn is unprotected after {text}"
            );
        }
    }
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["idle", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

/// Clause 7, the control: the same cannon-mount manoeuvre against a pawn that HAS crossed the
/// river is a perpetual chase, and the chaser loses.
///
/// Rule text: [ASIA] rule 25, first sentence: "When a Cannon is attacking an unprotected
/// Knight, Guard, Minister, or Pawn that has crossed the river, it will be a perpetual chase
/// even if only the cannon mount moves but neither the attacking Cannon nor the attacked piece
/// moves" (rules-notes.md §5; the book's minimal pair is Diagrams 59/60); "Perpetual chase
/// loses" (rules-asian.md).
///
/// Position `4k4/9/2C6/9/2b6/2B6/2p6/9/9/3K5 w`: as above seen from the other end: Red K d0,
/// C c7, elephant c4; Black k e9, elephant c5, pawn c3 (on Red's side: crossed). The same
/// elephant moves make the cannon c7 attack the unprotected pawn on every red move: Red loses
/// by perpetual chase.
#[test]
fn clause_07_control_chasing_a_crossed_pawn_loses() {
    let fen = "4k4/9/2C6/9/2b6/2B6/2p6/9/9/3K5 w";
    let moves = "c4e2 c5e7 e2c4 e7c5";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase c3", "idle", "chase c3", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualChase, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// 8. King or pawn chasing
// ---------------------------------------------------------------------------------------------

/// Clause 8 (pawn), a pawn chasing: allowed, draw.
///
/// Rule text: "Not chases: moves by the king; moves by pawns" (rules-asian.md); [ASIA] rule
/// 29: "A Pawn can perpetually chase" (rules-notes.md §5, "King and pawn as chasers").
///
/// Position `5k3/9/3c5/2P6/9/9/9/9/9/4K4 w`: Red K e0, pawn c6 (crossed); Black k f9, c d7
/// (unprotected). The pawn steps sideways to attack the cannon (c6d6 attacks d7), the cannon
/// steps aside (d7c7), the pawn follows (d6c6 attacks c7), the cannon returns (c7d7). Red
/// attacks the same unprotected cannon on every move, but with a pawn: draw.
#[test]
fn clause_08_pawn_chasing_is_a_draw() {
    let fen = "5k3/9/3c5/2P6/9/9/9/9/9/4K4 w";
    let moves = "c6d6 d7c7 d6c6 c7d7";
    // The pawn does attack the cannon after each of its moves.
    let mut b = parse_fen(fen).unwrap();
    for (i, text) in moves.split_whitespace().enumerate() {
        let m = xiangqi::notation::parse_iccs(&b, text).unwrap();
        b.make(m);
        if i % 2 == 0 {
            let mut c = b.clone();
            c.set_side_to_move(Color::Red);
            let cannon = if i == 0 { "d7" } else { "c7" };
            let take = xiangqi::notation::parse_iccs(&c, &format!("{}{cannon}", &text[2..]));
            assert!(
                take.is_ok_and(|t| c.is_legal_move(t)),
                "the pawn attacks {cannon} after {text}"
            );
        }
    }
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["idle", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

/// Clause 8 (king), the king chasing: allowed, draw.
///
/// Rule text: "Not chases: moves by the king" (rules-asian.md); [ASIA] rule 28: "The King can
/// perpetually chase an enemy piece" (rules-notes.md §5).
///
/// Position `5k3/9/9/9/9/9/9/9/4c4/3K5 w`: Red K d0; Black k f9, c e1 (unprotected, inside
/// Red's palace). The king steps next to the cannon (d0e0 attacks e1), the cannon steps
/// aside (e1d1), the king follows (e0d0 attacks d1), the cannon returns (d1e1). Red attacks
/// the same unprotected cannon on every move, but with the king: draw.
#[test]
fn clause_08_king_chasing_is_a_draw() {
    let fen = "5k3/9/9/9/9/9/9/9/4c4/3K5 w";
    let moves = "d0e0 e1d1 e0d0 d1e1";
    let mut b = parse_fen(fen).unwrap();
    for (i, text) in moves.split_whitespace().enumerate() {
        let m = xiangqi::notation::parse_iccs(&b, text).unwrap();
        b.make(m);
        if i % 2 == 0 {
            let mut c = b.clone();
            c.set_side_to_move(Color::Red);
            let cannon = if i == 0 { "e1" } else { "d1" };
            let take = xiangqi::notation::parse_iccs(&c, &format!("{}{cannon}", &text[2..]));
            assert!(
                take.is_ok_and(|t| c.is_legal_move(t)),
                "the king can take {cannon} after {text}"
            );
        }
    }
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["idle", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 9. Alternating targets
// ---------------------------------------------------------------------------------------------

/// Clause 9, chasing two different pieces in turn: draw.
///
/// Rule text: "Alternately chasing two different pieces is allowed (draw)" (rules-asian.md);
/// [ASIA] rule 32: "One piece perpetually chases two pieces or more should be ruled as a
/// draw" (rules-notes.md §6: "A perpetual chase is about one victim being chased on every move
/// of the cycle").
///
/// Position `2b1k1b2/9/9/9/9/9/9/R8/9/3K5 w`: Red K d0, R a2; Black k e9, elephants c9 and
/// g9 (unprotected: neither covers the other's squares). The rook runs along rank 2 and
/// attacks up a file: g2 (elephant g9, which runs to i7), c2 (elephant c9, runs to a7), i2
/// (elephant i7, back to g9), a2 (elephant a7, back to c9). Every red move chases, but the
/// victims alternate: draw.
#[test]
fn clause_09_alternating_targets_is_a_draw() {
    let fen = "2b1k1b2/9/9/9/9/9/9/R8/9/3K5 w";
    let moves = "a2g2 g9i7 g2c2 c9a7 c2i2 i7g9 i2a2 a7c9";
    let a = judge(fen, moves);
    assert_eq!(
        classes(&a),
        [
            "chase g9", "idle", "chase c9", "idle", "chase i7", "idle", "chase a7", "idle"
        ]
    );
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 10. Check against chase
// ---------------------------------------------------------------------------------------------

/// Clause 10, perpetual check against perpetual chase: the checker loses.
///
/// Rule text: "Check outranks chase: if one side perpetually checks and the other perpetually
/// chases, the checker loses" (rules-asian.md); rules-notes.md §7 quotes [HUB] "If only one
/// side keeps checking, he should change his moves" and Wikipedia "If one side perpetually
/// checks and the other side perpetually chases, the checking side has to stop or be ruled to
/// have lost" (no book diagram exists for this case). Also [ASIA] rule 6: perpetual check loses
/// "under any circumstance".
///
/// Position `1R4b1c/4k1P1c/9/9/9/9/9/9/9/3K5 w`: Red K d0, R b9, pawn g8; Black k e8,
/// cannons i8 and i9, elephant g9. The red pawn g8 and the black elephant g9 are the screens
/// of the cannons on ranks 8 and 9.
/// 1. b9b8: check along rank 8. The cannon i8 does not reach the rook: the king on e8 is a
///    second piece behind its screen g8.
/// 2. e8e9: the king steps up, out of the cannon's line: now the cannon i8 attacks the rook b8
///    over g8 (a cannon attacking a chariot is always a chase).
/// 3. b8b9: the rook escapes with check along rank 9, where the king on e9 blocks the cannon i9.
/// 4. e9e8: the king steps down, and the cannon i9 attacks the rook b9 over g9.
///
/// Red checks on every move; Black chases the same chariot on every move: Red loses, by
/// perpetual check.
#[test]
fn clause_10_perpetual_check_against_perpetual_chase_loses_for_the_checker() {
    let fen = "1R4b1c/4k1P1c/9/9/9/9/9/9/9/3K5 w";
    let moves = "b9b8 e8e9 b8b9 e9e8";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["check", "chase b8", "check", "chase b9"]);
    assert_eq!(
        a.offences,
        [Offence::PerpetualCheck, Offence::PerpetualChase]
    );
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualCheck));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// 11. Mutual chase
// ---------------------------------------------------------------------------------------------

/// Clause 11, mutual perpetual chase: draw.
///
/// Rule text: "Both sides committing the same offence: draw" (rules-asian.md); rules-notes.md
/// §7: "Mutual perpetual chase: draw (Diagram 48 ...)", [HUB]: "If both sides repeat forbidden
/// moves, the game is ruled a draw".
///
/// Position `3k5/9/9/4R4/6n2/9/9/9/9/5K3 w`: Red K f0, R e6; Black k d9, N g5. Rook and horse
/// chase each other around: every rook move attacks the unprotected horse (e5 attacks g5,
/// f5 attacks f7, f6 attacks d6, e6 attacks e4), every horse move escapes and attacks the
/// chariot (f7 attacks e5, d6 attacks f5, e4 attacks f6, g5 attacks e6). Each side chases one
/// and the same piece on every move: both perpetually chase, draw.
#[test]
fn clause_11_mutual_perpetual_chase_is_a_draw() {
    let fen = "3k5/9/9/4R4/6n2/9/9/9/9/5K3 w";
    let moves = "e6e5 g5f7 e5f5 f7d6 f5f6 d6e4 f6e6 e4g5";
    let a = judge(fen, moves);
    assert_eq!(
        classes(&a),
        [
            "chase g5", "chase e5", "chase f7", "chase f5", "chase d6", "chase f6", "chase e4",
            "chase e6"
        ]
    );
    assert_eq!(
        a.offences,
        [Offence::PerpetualChase, Offence::PerpetualChase]
    );
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

// ---------------------------------------------------------------------------------------------
// 12-16. The readings of issue 43: what a new threat is, and who may threaten
// ---------------------------------------------------------------------------------------------

/// Clause 12, a move judged two ways takes the forbidden reading: a check that also makes a
/// new threat chases too, so a side whose every move chases one piece, some of them while
/// checking, perpetually chases it.
///
/// Source: Fairy-Stockfish's test "Discovered and anti-discovered chase by cannon"
/// (`tests/data/fsf-repetitions.tsv`, FSF-05: Red loses).
///
/// Position `5k3/9/9/5C3/5c3/5C3/9/9/5p3/4K4 w`: Red K e0, cannons f6 and f4; Black k f9, c f5,
/// p f1. Red's cannon leaves f4 (the f6 cannon, over the black cannon, now hits the unprotected
/// crossed pawn on f1) and comes back (a check over its partner on f6, while again the f6
/// cannon's screen for the pawn): every Red move chases the pawn, one of them checking.
#[test]
fn clause_12_a_check_that_chases_is_a_chase() {
    let fen = "5k3/9/9/5C3/5c3/5C3/9/9/5p3/4K4 w";
    let moves = "f4d4 f5d5 d4f4 d5f5";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase f1", "idle", "check chase f1", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualChase, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

/// Clause 13, a threat that a check held in suspense is no new threat: a king stepping out of
/// check does not chase a piece its side attacked all along.
///
/// Source: issue 43's example (Fairy-Stockfish rules it a draw); H. G. Muller on the AXF rules
/// (Fairy-Stockfish issue 55): "attacks that existed before never count as chases, even when
/// they temporarily were not legal because a check has to be resolved first".
///
/// Position `4k4/8R/9/9/9/9/9/9/r3A4/5K3 w`: Red K f0, R i8, advisor e1; Black k e9, r a1.
/// Red checks with the rook and its advisor runs between e1 and d2; Black's rook follows the
/// advisor, and its king steps out of each check: the rook's attack on the advisor, held in
/// suspense by the check, is no new threat then. Red checks and idles, Black chases and idles:
/// a draw.
#[test]
fn clause_13_a_threat_held_by_a_check_is_not_new() {
    let fen = "4k4/8R/9/9/9/9/9/9/r3A4/5K3 w";
    let moves = "i8i9 e9e8 e1d2 a1a2 i9i8 e8e9 d2e1 a2a1";
    let a = judge(fen, moves);
    assert_eq!(
        classes(&a),
        [
            "check", "idle", "idle", "chase d2", "check", "idle", "idle", "chase e1"
        ]
    );
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

/// Clause 14, the chased piece is followed whoever attacks it: a threat by another piece on a
/// piece already threatened is a new threat.
///
/// Source: issue 43 ("when a retreating horse becomes the screen of a cannon that then attacks
/// the chariot the horse had attacked, the chase of that chariot goes on"); rule book rule 15
/// ("one or two cannons cannot perpetually chase a rook"), diagram 24 (two cannons take turns).
/// Fairy-Stockfish rules this cycle a loss for Red too.
///
/// Position `3k5/9/4r4/9/3N5/9/9/9/9/4CK3 w`: Red K f0, C e0, N d5; Black k d9, r e7. The horse
/// attacks the chariot from d5; stepping back to e3 it becomes the cannon's screen, and the
/// cannon attacks the chariot; back on d5 the horse attacks it again. Every Red move threatens
/// the chariot anew, by another piece: a perpetual chase. Black's king only shuffles.
#[test]
fn clause_14_the_chased_piece_is_followed_whoever_attacks_it() {
    let fen = "3k5/9/4r4/9/3N5/9/9/9/9/4CK3 w";
    let moves = "d5e3 d9d8 e3d5 d8d9";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase e7", "idle", "chase e7", "idle"]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

/// Clause 15, advisors and elephants threaten like any other piece: only the king and pawns may
/// chase for ever. A chariot attacked by an elephant (worth less) is threatened, protected or
/// not.
///
/// Source: rule book rules 28 and 29 (the king, and pawns, "can perpetually chase"; no other
/// piece is named); Fairy-Stockfish's chasing tests (`fsf-repetitions.tsv`, FSF-12: Black
/// loses).
///
/// Position `4k4/9/4b4/2c2nR2/9/9/9/9/9/3K5 w`: Red K d0, R g6; Black k e9, elephant e7,
/// c c6, n f6. The black horse steps from f6 to g8 and back: from g8 it opens the elephant's
/// eye, and the elephant attacks the chariot on g5; back on f6 it is the screen over which the
/// cannon attacks the chariot on g6. Every Black move threatens the chariot: Black chases it
/// perpetually and loses (Red's rook chases only on one move of two).
#[test]
fn clause_15_advisors_and_elephants_chase() {
    let fen = "4k4/9/4b4/2c2nR2/9/9/9/9/9/3K5 w";
    let moves = "g6g5 f6g8 g5g6 g8f6";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["idle", "chase g5", "chase c6", "chase g6"]);
    assert_eq!(a.verdict, loses(Color::Black, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

/// Clause 16, a move that defends chases only with the attacks it makes itself: a threat that
/// arises only because the defence happens to take a victim's protection away is not a chase.
///
/// Source: rule book rule 26 and diagram 61 (Red's elephant moves as the cannon's mount so
/// that the cannon keeps attacking the black chariot; Black's horse answers by blocking: "Red
/// has to change the move"), rule 19 with diagrams 39-41 ("because the Black Rook doesn't move,
/// it is not considered as a perpetual chase").
///
/// Position `3akab2/9/4b4/r3p4/p1p6/4P4/P1P6/NCr1B1nC1/4A4/R2AK1B2 w` (diagram 61). Each of
/// Black's horse moves blocks the cannon's line to its chariot, or takes the mount away, and in
/// doing so leaves the red cannon on b2, which the black chariot attacks, without its
/// protector: a defence, not a chase. (The horse's step to h4 also opens the chariot's line to
/// the red cannon on h2, an attack the move makes itself: a chase, but of another piece on one
/// move only.)
#[test]
fn clause_16_a_defence_does_not_chase_by_taking_protection_away() {
    let fen = "3akab2/9/4b4/r3p4/p1p6/4P4/P1P6/NCr1B1nC1/4A4/R2AK1B2 w";
    let moves = "e2g4 g2h4 g4e2 h4g2";
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase c2", "chase h2", "chase c2", "idle"]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

// ---------------------------------------------------------------------------------------------
// Supplements: what "protected" means for the chase clauses
// ---------------------------------------------------------------------------------------------

/// Supplement to clauses 6 and 7: a protector that cannot legally recapture does not protect,
/// so a chariot chasing a cannon "protected" only by such a piece chases it, and loses.
///
/// Rule text: a chase "attacks an unprotected piece (a protector that cannot legally recapture
/// does not count)" (rules-asian.md); [WXF] terms: "Fake root: When a protected piece is
/// captured, the protector is immobilized and cannot take the captor immediately", a fake root
/// does not protect (rules-notes.md §5, Diagrams 83-85); "Perpetual chase loses".
///
/// Position `4k4/9/4b4/9/6c2/9/9/9/4K4/2R6 w`: Red K e1, R c0; Black k e9, elephant e7,
/// c g5. The cannon runs between g5 and c5, the squares the elephant e7 covers, and the
/// chariot follows along rank 0. But the elephant stands between the two kings on the e-file:
/// if it recaptured, the kings would face each other, so it cannot. The cannon is unprotected
/// on both squares: Red chases it on every move and loses.
#[test]
fn supplement_a_fake_root_does_not_protect() {
    let fen = "4k4/9/4b4/9/6c2/9/9/9/4K4/2R6 w";
    let moves = "c0g0 g5c5 g0c0 c5g5";
    // The elephant's recapture is illegal (facing kings).
    let mut b = parse_fen(fen).unwrap();
    b.make(xiangqi::notation::parse_iccs(&b, "c0g0").unwrap());
    b.set_side_to_move(Color::Red);
    b.make(xiangqi::notation::parse_iccs(&b, "g0g5").unwrap());
    let back = xiangqi::notation::parse_iccs(&b, "e7g5");
    assert!(back.is_err() || !b.is_legal_move(back.unwrap()));
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase g5", "idle", "chase c5", "idle"]);
    assert_eq!(a.offences, [Offence::PerpetualChase, Offence::None]);
    assert_eq!(a.verdict, loses(Color::Red, Offence::PerpetualChase));
    assert_rotation_invariant(fen, moves, a.verdict);
}

/// Supplement, the minimal pair of the one above: with the red king off the e-file the
/// elephant is a real protector on both squares, and the chariot may chase the cannon.
///
/// Rule text: [ASIA] rule 17: "Rook can perpetually chase protected cannon" (rules-notes.md
/// §5, "Protected pieces"), i.e. a chariot attacking a protected cannon is not a chase; a
/// repetition without a violation is a draw ([ASIA] rule 5).
///
/// Position `4k4/9/4b4/9/6c2/9/9/9/3K5/2R6 w`: the same with the red king on d1.
#[test]
fn supplement_a_real_root_protects() {
    let fen = "4k4/9/4b4/9/6c2/9/9/9/3K5/2R6 w";
    let moves = "c0g0 g5c5 g0c0 c5g5";
    assert_can_take_back(fen, "c0g0", "g0g5", "e7g5");
    assert_can_take_back(fen, "c0g0 g5c5 g0c0", "c0c5", "e7c5");
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["idle", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}

/// Supplement: a piece protected on one of its two squares may be chased.
///
/// Rule text: [ASIA] rule 17: "Rook can perpetually chase protected cannon. If the cannon is
/// protected in one move and not in another move, this chase is still allowed" (rules-notes.md
/// §5; the book's Diagrams 29-31).
///
/// Position `4k4/9/b8/9/6c2/9/9/9/3K5/2R6 w`: Red K d1, R c0; Black k e9, elephant a7,
/// c g5. The elephant a7 covers c5 but not g5: the chariot's attack on g5 is a chase, its
/// attack on c5 is not. Not every red move chases: draw.
#[test]
fn supplement_protected_on_one_of_two_squares_may_be_chased() {
    let fen = "4k4/9/b8/9/6c2/9/9/9/3K5/2R6 w";
    let moves = "c0g0 g5c5 g0c0 c5g5";
    assert_can_take_back(fen, "c0g0 g5c5 g0c0", "c0c5", "a7c5");
    let a = judge(fen, moves);
    assert_eq!(classes(&a), ["chase g5", "idle", "idle", "idle"]);
    assert_eq!(a.offences, [Offence::None, Offence::None]);
    assert_eq!(a.verdict, Verdict::Draw);
    assert_rotation_invariant(fen, moves, Verdict::Draw);
}
