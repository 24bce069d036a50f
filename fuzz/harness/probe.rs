//! Probe requests: a FEN and options (rule set, main line) to the probing library
//! (`probe::Tablebase`, as `xqtb probe`, gRPC `Probe`/`Mainline` and the HTTP API call it) over
//! a store of small tables (KNvK, KRvK, KRvKA, KRvKN under the Asian rules).
//!
//! Input: the first byte holds the options (bit 0: ask under cycles-are-draws, which the store
//! does not hold; bit 1: also ask for the main line); the rest is the FEN.
//!
//! Nothing panics, and the answers equal the solved tables': a position's value, every legal
//! move listed once with the value of the position it leads to (a capture's rule value counted
//! as an exit, as the solver counts it); a FEN that does not parse is a bad-FEN error; a
//! position without a table is an error both ways; mirrored and colour-rotated positions get
//! the same value; the reports serialise; a main line is legal move by move, keeps the value and
//! is as long as the distance, ending as the value says.

use super::fixtures::{MemStore, RULES, fixtures};
use probe::{LineEnd, MainlineReport, ProbeReport, Tablebase};
use std::sync::OnceLock;
use xiangqi::{Board, parse_fen};
use xqtb_core::{Probe, ProbeError, RuleSet, Value};

fn tablebase() -> &'static Tablebase<MemStore> {
    static TB: OnceLock<Tablebase<MemStore>> = OnceLock::new();
    TB.get_or_init(|| Tablebase::new(MemStore::with(&fixtures().encoded)))
}

pub fn run(data: &[u8]) {
    let Some((&options, fen)) = data.split_first() else {
        return;
    };
    let fen = super::text(fen);
    let rules = if options & 1 == 0 {
        RULES
    } else {
        RuleSet::CyclesAreDraws
    };
    let tb = tablebase();
    let truth = &fixtures().tables;
    let result = tb.probe_fen(rules, &fen);
    let board = match parse_fen(&fen) {
        Ok(b) => b,
        Err(_) => {
            assert!(
                matches!(result, Err(ProbeError::BadFen(_))),
                "'{fen}' does not parse, yet the probe gave {result:?}"
            );
            return;
        }
    };
    let expected = truth.probe(rules, &board);
    let r = match (result, expected) {
        (Ok(r), Ok(v)) => {
            assert_eq!(r.value, v, "value of '{fen}'");
            r
        }
        (Err(e), Err(_)) => {
            assert!(!e.to_string().is_empty());
            return;
        }
        (Ok(r), Err(e)) => panic!(
            "'{fen}': the probe gives {}, the solved tables {e}",
            r.value
        ),
        (Err(e), Ok(v)) => panic!("'{fen}': the probe fails ({e}), the solved tables give {v}"),
    };

    let legal = board.legal_moves();
    assert_eq!(r.moves.len(), legal.len(), "moves of '{fen}'");
    for &m in legal.iter() {
        let info = r
            .moves
            .iter()
            .find(|i| i.mv == m)
            .unwrap_or_else(|| panic!("{m} missing from the moves of '{fen}'"));
        assert_eq!(info.iccs, m.iccs());
        let mut after = board.clone();
        let captured = after.make(m);
        let v = truth
            .probe(rules, &after)
            .expect("successors are in the tables");
        let v = if captured.is_some() { v.as_exit() } else { v };
        assert_eq!(info.value, v, "{m} from '{fen}'");
    }
    for w in r.moves.windows(2) {
        assert!(w[0].for_mover().preference() >= w[1].for_mover().preference());
    }
    for image in [board.mirrored(), board.rotated()] {
        let v = tb.probe(rules, &image).expect("symmetric image probes");
        assert_eq!(v, r.value, "'{}' is an image of '{fen}'", image.fen());
    }
    serde_json::to_string(&ProbeReport::from(&r)).expect("probe report serialises");

    if options & 2 != 0 {
        check_mainline(tb, rules, &board, r.value);
    }
}

fn check_mainline(tb: &Tablebase<MemStore>, rules: RuleSet, start: &Board, v: Value) {
    let fen = start.fen();
    let line = tb
        .mainline(rules, start)
        .unwrap_or_else(|e| panic!("main line of '{fen}': {e}"));
    assert_eq!(line.value, v);
    let mut b = start.clone();
    let mut value = v;
    for m in &line.moves {
        assert!(
            b.is_legal_move(m.mv),
            "{} is illegal in {}",
            m.iccs,
            b.fen()
        );
        assert_eq!(m.for_mover(), value, "{} in {}", m.iccs, b.fen());
        b.make(m.mv);
        value = tb.probe(rules, &b).unwrap();
        assert_eq!(value, m.value);
    }
    assert_eq!(line.end_board, b);
    match v {
        Value::Win(d) | Value::Loss(d) => {
            assert_eq!(line.moves.len(), d as usize, "main line of '{fen}'");
            assert!(
                !b.has_legal_move(),
                "the line of '{fen}' ends with a legal move left"
            );
            assert_eq!(value, Value::Loss(0));
            let end = match b.in_check(b.side_to_move()) {
                true => LineEnd::Mate,
                false => LineEnd::Stalemate,
            };
            assert_eq!(line.end, end);
        }
        Value::Draw => {
            assert!(line.moves.is_empty());
            assert_eq!(line.end, LineEnd::Draw);
        }
        Value::RuleWin(r) | Value::RuleLoss(r) => {
            assert_eq!(line.moves.len(), r.plies as usize, "main line of '{fen}'");
            assert_eq!(line.end, LineEnd::Rule(r.rule));
        }
        Value::Illegal => unreachable!("a probe never answers illegal"),
    }
    serde_json::to_string(&MainlineReport::from(&line)).expect("main line report serialises");
}
