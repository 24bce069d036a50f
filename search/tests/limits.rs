//! What a search does at its limits and with bad input: it answers `unknown` when a limit
//! stops it, never a guess, and refuses what it cannot do with a clear error.

use probe::Tablebase;
use search::{Control, Limits, Outcome, SearchError, StopReason, search};
use std::time::Duration;
use xiangqi::{Board, parse_fen};
use xqtb_core::RuleSet;

type NoTables = Option<&'static Tablebase>;

fn board(fen: &str) -> Board {
    parse_fen(fen).unwrap()
}

fn run(fen: &str, limits: &Limits) -> Result<search::SearchResult, SearchError> {
    search(
        None as NoTables,
        RuleSet::Asian,
        &board(fen),
        limits,
        &Control::new(),
    )
}

/// A mate in 3 plies (a stalemate: the black king has no move and is not in check).
const MATE_IN_3: &str = "4k4/9/9/9/9/9/9/9/9/R2K5 w";
/// A composed mate in 9 plies (docs/search.md).
const COMPOSED_MATE_IN_9: &str = "3N1aC2/4k4/2Par4/3R5/2b3b2/9/9/9/9/3K5 w";
/// A harder position: a chariot and a horse against advisors, no mate in a few plies.
const HARD: &str = "3akab2/9/4b4/9/9/9/9/9/4N4/3K1R3 w";

#[test]
fn a_mate_is_found_with_its_line_and_distance() {
    let r = run(MATE_IN_3, &Limits::default()).unwrap();
    assert_eq!(r.outcome, Outcome::Win);
    assert_eq!(r.plies, Some(3));
    assert!(r.shortest);
    assert_eq!(r.line.len(), 3);
    // The line is legal and its end has no legal move.
    let mut b = board(MATE_IN_3);
    for m in &r.line {
        assert!(b.is_legal_move(m.mv), "{} in {}", m.iccs, b.fen());
        b.make(m.mv);
    }
    assert!(!b.has_legal_move());
}

#[test]
fn the_loser_to_move_gets_a_loss() {
    // After the chariot's first move the black king is lost in 2 plies.
    let mut b = board(MATE_IN_3);
    let first = run(MATE_IN_3, &Limits::default()).unwrap().line[0].mv;
    b.make(first);
    let r = search(
        None as NoTables,
        RuleSet::Asian,
        &b,
        &Limits::default(),
        &Control::new(),
    )
    .unwrap();
    assert_eq!((r.outcome, r.plies), (Outcome::Loss, Some(2)));
}

#[test]
fn one_or_two_threads_and_any_hash_give_the_same_answer() {
    let fen = "3k5/9/9/9/9/9/9/9/4R4/4K4 w";
    let mut answers = Vec::new();
    for (threads, hash) in [
        (1, 64 << 20),
        (2, 64 << 20),
        (1, search::MIN_HASH_BYTES),
        (2, search::MIN_HASH_BYTES),
    ] {
        let limits = Limits {
            threads,
            hash_bytes: hash,
            ..Limits::default()
        };
        // The composed mate's proof, checked with the least hash, has more positions than the
        // check's memo then holds.
        for fen in [fen, MATE_IN_3, COMPOSED_MATE_IN_9] {
            let r = run(fen, &limits).unwrap();
            answers.push((fen, threads, hash, r.outcome, r.plies));
        }
    }
    for a in &answers {
        let first = answers.iter().find(|b| b.0 == a.0).unwrap();
        assert_eq!((a.3, a.4), (first.3, first.4), "{a:?} against {first:?}");
    }
}

#[test]
fn a_node_limit_gives_unknown() {
    let limits = Limits {
        nodes: Some(2_000),
        ..Limits::default()
    };
    let r = run(HARD, &limits).unwrap();
    assert_eq!(r.outcome, Outcome::Unknown);
    assert_eq!(r.stopped, Some(StopReason::Nodes));
    assert!(r.line.is_empty() && r.plies.is_none());
}

#[test]
fn a_time_limit_gives_unknown() {
    let limits = Limits {
        time: Some(Duration::from_millis(200)),
        threads: 2,
        ..Limits::default()
    };
    let r = run(HARD, &limits).unwrap();
    assert_eq!(r.outcome, Outcome::Unknown);
    assert_eq!(r.stopped, Some(StopReason::Time));
}

#[test]
fn a_cancelled_search_stops() {
    let control = Control::new();
    control.cancel();
    let r = search(
        None as NoTables,
        RuleSet::Asian,
        &board(HARD),
        &Limits::default(),
        &control,
    )
    .unwrap();
    assert_eq!(
        (r.outcome, r.stopped),
        (Outcome::Unknown, Some(StopReason::Cancelled))
    );
}

#[test]
fn few_plies_give_unknown_by_the_ply_limit() {
    let limits = Limits {
        max_plies: 2,
        ..Limits::default()
    };
    let r = run(MATE_IN_3, &limits).unwrap();
    assert_eq!(
        (r.outcome, r.stopped),
        (Outcome::Unknown, Some(StopReason::MaxPlies))
    );
    assert_eq!(r.searched_plies, 2);
}

#[test]
fn a_position_already_lost_needs_no_search() {
    // Black is mated on the board.
    let r = run("3k5/9/9/9/9/9/9/9/3R5/4K4 b", &Limits::default()).unwrap();
    assert_eq!((r.outcome, r.plies), (Outcome::Loss, Some(0)));
    assert_eq!(r.end.map(|e| e.name()), Some("mate"));
}

#[test]
fn dead_draw_material_is_a_draw() {
    let r = run("3k5/9/9/9/9/9/9/9/4A4/4K4 w", &Limits::default()).unwrap();
    assert_eq!(r.outcome, Outcome::Draw);
    assert_eq!(r.source, search::Source::Tables);
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let bad = |limits: Limits, what: &str| {
        let e = run(MATE_IN_3, &limits).unwrap_err();
        assert!(matches!(e, SearchError::Limits(_)), "{e}");
        assert!(e.to_string().contains(what), "{e}");
    };
    bad(
        Limits {
            max_plies: 0,
            ..Limits::default()
        },
        "max plies",
    );
    bad(
        Limits {
            max_plies: 1000,
            ..Limits::default()
        },
        "max plies",
    );
    bad(
        Limits {
            threads: 0,
            ..Limits::default()
        },
        "threads",
    );
    bad(
        Limits {
            hash_bytes: 10,
            ..Limits::default()
        },
        "hash",
    );
    // Red is in check with Black to move: not a position that can occur.
    let mut red_in_check = board("3k5/9/9/9/9/9/9/9/9/3r1K3 w");
    red_in_check.set_side_to_move(xiangqi::Color::Black);
    let e = search(
        None as NoTables,
        RuleSet::Asian,
        &red_in_check,
        &Limits::default(),
        &Control::new(),
    );
    let e = e.unwrap_err();
    assert!(e.to_string().contains("in check"), "{e}");
}

#[test]
fn a_server_caps_what_a_request_asks() {
    let cap = Limits {
        max_plies: 41,
        nodes: Some(1_000),
        time: Some(Duration::from_secs(10)),
        threads: 2,
        hash_bytes: 1 << 20,
    };
    let asked = Limits {
        max_plies: 200,
        nodes: None,
        time: Some(Duration::from_secs(60)),
        threads: 64,
        hash_bytes: 1 << 40,
    };
    assert_eq!(asked.capped_by(&cap), cap);
}

#[test]
fn a_mate_proven_before_the_shorter_ones_are_ruled_out_is_an_upper_bound() {
    // Black mates in 7 moves (13 plies) by Fairy-Stockfish (tests/data/mates.tsv). On one
    // thread with this node budget the scout proves the mate at its own depth, and the budget
    // runs out while the deepening is still disproving the shallower ones: the answer is the
    // checked mate, not claimed to be the shortest.
    let fen = "4k4/9/9/9/6r2/3n5/9/5A2B/4A4/2B2K3 b";
    let limits = Limits {
        nodes: Some(400_000),
        threads: 1,
        ..Limits::default()
    };
    let r = run(fen, &limits).unwrap();
    assert_eq!((r.outcome, r.plies), (Outcome::Win, Some(13)));
    assert!(!r.shortest);
    assert_eq!(r.stopped, Some(StopReason::Nodes));
    assert!(r.searched_plies < 12, "{}", r.searched_plies);
    let mut b = board(fen);
    for m in &r.line {
        assert!(b.is_legal_move(m.mv), "{} in {}", m.iccs, b.fen());
        b.make(m.mv);
    }
    assert_eq!(r.line.len(), 13);
    assert!(!b.has_legal_move() && b.in_check(b.side_to_move()));
}
