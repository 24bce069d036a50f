//! The search against the retrograde solver: positions of a table searched with that table
//! left out of the store (its dependencies stored) must get the table's value, exactly.

use probe::Tablebase;
use search::{Control, Limits, Outcome, search};
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
        ("KRvKN", RuleSet::CyclesAreDraws, 8009),
        ("KRvKN", RuleSet::Asian, 6007),
    ] {
        let f = fixture(root, rules, |_| {});
        let table = f
            .tables
            .get(&TableId::new(rules, root.parse().unwrap()))
            .unwrap();
        let (mut proven, mut unknown, mut total, mut shorter) = (0, 0, 0, 0);
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
                    // Mates have the table's distance (a win not shown to be the shortest, an
                    // upper bound of it). Under the Asian rules the search also ends a line
                    // where the defender repeats a cycle it loses by rule (as a referee and
                    // other engines do), which can only shorten the win; the tables count such
                    // a defender's cycle as no end.
                    match (rules, value.dtm_plies()) {
                        (RuleSet::CyclesAreDraws, Some(d)) if r.shortest => {
                            assert_eq!(r.plies, Some(d), "{}", board.fen())
                        }
                        (RuleSet::CyclesAreDraws, Some(d)) => {
                            assert!(r.plies >= Some(d), "{}: {:?} plies", board.fen(), r.plies)
                        }
                        (RuleSet::Asian, Some(d)) if r.shortest => {
                            assert!(r.plies <= Some(d), "{}: {:?} plies", board.fen(), r.plies);
                            if r.plies != Some(d) {
                                shorter += 1;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        eprintln!(
            "{root} {rules}: {total} positions, {proven} settled ({shorter} shorter by a cycle), {unknown} unknown, {:.1} s",
            start.elapsed().as_secs_f64()
        );
        assert!(proven > total / 2, "{proven} of {total} settled");
    }
}

/// The first position of `line` played from `board` whose material differs from the start's
/// (the line's first capture), with the moves before it.
fn after_first_capture(board: &Board, line: &[xiangqi::Move]) -> Option<Board> {
    let mut b = board.clone();
    for &m in line {
        if b.make(m).is_some() {
            return Some(b);
        }
    }
    None
}

#[test]
fn a_damaged_table_entry_fails_the_proof_check() {
    let rules = RuleSet::CyclesAreDraws;
    let clean = fixture("KRvKA", rules, |_| {});
    let table = clean
        .tables
        .get(&TableId::new(rules, "KRvKA".parse().unwrap()))
        .unwrap();
    // A won position whose main line enters the stored KRvK table two or more plies from mate.
    let (board, leaf, leaf_value) = sample(table, 13)
        .into_iter()
        .filter(|(_, v)| matches!(v, Value::Win(d) if *d >= 5))
        .find_map(|(board, _)| {
            let r = search(Some(&clean.tb), rules, &board, &limits(), &Control::new()).ok()?;
            let moves: Vec<_> = r.line.iter().map(|m| m.mv).collect();
            let leaf = after_first_capture(&board, &moves)?;
            let v = clean.tb.probe_fen(rules, &leaf.fen()).ok()?.value;
            matches!(v, Value::Loss(d) if d >= 2).then_some((board, leaf, v))
        })
        .expect("a won KRvKA position whose line enters KRvK");
    // The same tables with that one entry two plies shorter: the search now finds a shorter
    // "mate" through it, and the proof's check must refuse it.
    let Value::Loss(d) = leaf_value else {
        unreachable!()
    };
    let o = xqtb_core::Orientation::of_board(&leaf);
    let krvk = o.signature;
    let slot = table_slot(&clean, rules, &leaf);
    let side = o.side(leaf.side_to_move());
    let damaged = fixture("KRvKA", rules, |t| {
        if t.signature() == krvk {
            t.set_code(side, slot as usize, Value::Loss(d - 2).encode());
        }
    });
    match search(Some(&damaged.tb), rules, &board, &limits(), &Control::new()) {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("inconsistent"), "{}: {text}", board.fen());
        }
        Ok(r) => panic!(
            "{}: a damaged table gave {:?} in {:?} plies",
            board.fen(),
            r.outcome,
            r.plies
        ),
    }
}

/// The slot of `board` in its table.
fn table_slot(f: &Fixture, rules: RuleSet, board: &Board) -> u64 {
    let o = xqtb_core::Orientation::of_board(board);
    let t = f.tables.get(&TableId::new(rules, o.signature)).unwrap();
    t.index().slot_of(board, o.rotated).unwrap()
}
