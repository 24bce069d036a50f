//! The search against Fairy-Stockfish: the positions of `tests/data/mates.tsv`, each made and
//! checked by `scripts/mate-positions.py` with Fairy-Stockfish's `go mate` (forced mates of 2 to
//! 9 moves for either side, composed positions of 9 to 16 pieces, positions a capture away from
//! small tables, positions where the side to move is mated, and positions without a mate).
//!
//! Within a fixed node budget per position the search must never claim what Fairy-Stockfish
//! refutes: no mate where it finds none, no longer mate than its claimed to be the shortest, no
//! win for the wrong side. A longer mate is allowed only as what it is, a proven mate whose
//! shorter alternatives the budget left open. A mate proven shorter than Fairy-Stockfish's is counted apart: the search's proofs are replayed
//! move by move, while the generator's "no shorter mate" is a search within node caps. The
//! share proven within the budget is held to a floor; `scripts/mate-bench.py` measures the same
//! set by time against Fairy-Stockfish (BENCHMARKS.md).

use probe::Tablebase;
use search::{Control, Limits, Outcome, search};
use std::sync::Arc;
use storage_format::codec::encode_table;
use storage_format::store::{SledStore, TableStore};
use xqtb_core::{RuleSet, Signature, TableId};

/// The small tables the `capture` positions run into, with their dependencies.
const TABLES: [&str; 4] = ["KRvKA", "KRvKB", "KNvK", "KPvK"];

/// Positions expanded per position at most.
const NODES: u64 = 250_000;

fn tablebase(dir: &std::path::Path) -> Tablebase<Arc<SledStore>> {
    let rules = RuleSet::Asian;
    let roots: Vec<Signature> = TABLES.iter().map(|s| s.parse().unwrap()).collect();
    let tables = solver::solve_closure_in_memory(&roots, rules, |_, _| {}).unwrap();
    let store = Arc::new(SledStore::open(dir).unwrap());
    for s in xqtb_core::closure_of(&roots) {
        store
            .put_table(&encode_table(tables.get(&TableId::new(rules, s)).unwrap()))
            .unwrap();
    }
    Tablebase::new(store)
}

struct Case {
    fen: String,
    category: String,
    /// The side to move's result and its plies, `None` where no mate is expected.
    expected: Option<(Outcome, u16)>,
}

fn cases() -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/mates.tsv");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (fen, category, expect) = (col("fen"), col("category"), col("expect"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let n = |s: &str| s.split_whitespace().nth(1).unwrap().parse::<u16>().unwrap();
            let e = f[expect];
            let expected = if e.starts_with("mate ") {
                Some((Outcome::Win, 2 * n(e) - 1))
            } else if e.starts_with("mated ") {
                Some((Outcome::Loss, 2 * n(e)))
            } else {
                None
            };
            Case {
                fen: f[fen].to_string(),
                category: f[category].to_string(),
                expected,
            }
        })
        .collect()
}

#[test]
fn the_search_agrees_with_fairy_stockfish() {
    let dir = tempfile::tempdir().unwrap();
    let tb = tablebase(dir.path());
    let limits = Limits {
        nodes: Some(NODES),
        threads: 1,
        ..Limits::default()
    };
    let cases = cases();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let (mut mates, mut same, mut shorter, mut wrong) = (0, 0, 0, Vec::new());
    let (mut bounds, mut longer) = (0, 0);
    for c in &cases {
        let board = xiangqi::parse_fen(&c.fen).unwrap();
        let r = search(Some(&tb), RuleSet::Asian, &board, &limits, &Control::new())
            .unwrap_or_else(|e| panic!("{}: {e}", c.fen));
        let got = (r.outcome, r.plies);
        match c.expected {
            None => {
                if matches!(r.outcome, Outcome::Win | Outcome::Loss) {
                    wrong.push(format!(
                        "{} ({}): {got:?} where none is expected",
                        c.fen, c.category
                    ));
                }
            }
            Some((outcome, plies)) => {
                mates += 1;
                match got {
                    (Outcome::Unknown, _) => {}
                    (o, Some(p)) if o == outcome && p == plies => {
                        same += 1;
                        bounds += !r.shortest as usize;
                    }
                    (o, Some(p)) if o == outcome && p > plies && !r.shortest => longer += 1,
                    (o, Some(p)) if o == outcome && p < plies => {
                        shorter += 1;
                        eprintln!("{}: {o:?} in {p} plies, Fairy-Stockfish {plies}", c.fen);
                    }
                    _ => wrong.push(format!(
                        "{} ({}): {got:?}, expected {outcome:?} in {plies}",
                        c.fen, c.category
                    )),
                }
            }
        }
    }
    eprintln!(
        "{} positions, {mates} with a mate: {same} proven with Fairy-Stockfish's length ({bounds} of them not shown to be the shortest), {shorter} shorter, {longer} longer and not shown to be the shortest, {} unknown within {NODES} nodes",
        cases.len(),
        mates - same - shorter - longer - wrong.len(),
    );
    assert!(wrong.is_empty(), "wrong claims:\n{}", wrong.join("\n"));
    assert!(
        (same + shorter) * 100 >= mates * MIN_PERCENT,
        "only {} of {mates} mates proven within {NODES} nodes",
        same + shorter
    );
}

/// The least share of the mates that must be proven within the node budget, in percent.
const MIN_PERCENT: usize = 65;
