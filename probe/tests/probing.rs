//! Probing: colour-flipped and mirrored positions give the canonical answers, moves come best
//! first with consistent values, main lines are legal and as long as the stored distance (under
//! the Asian rules ending in a cycle ruled against the loser), and bad input gets a clear error.

mod common;

use common::{RULES, legal_positions, sig, solved};
use probe::{LineEnd, ProbeResult, Tablebase};
use std::sync::{Arc, OnceLock};
use storage_format::codec::encode_table;
use storage_format::store::{SledStore, TableStore};
use xiangqi::{Board, Move};
use xqtb_core::{Probe, ProbeError, Value};

/// One store with every solved table, shared by the tests of this binary.
fn tablebase() -> &'static Tablebase<Arc<SledStore>> {
    static TB: OnceLock<(tempfile::TempDir, Tablebase<Arc<SledStore>>)> = OnceLock::new();
    &TB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        for s in &solved().sigs {
            store.put_table(&encode_table(solved().table(s))).unwrap();
        }
        (dir, Tablebase::new(store))
    })
    .1
}

/// A sample of legal positions of `name`, every `step`-th.
fn sample(name: &str, step: usize) -> Vec<Board> {
    legal_positions(solved().table(&sig(name)))
        .step_by(step)
        .map(|(_, _, b)| b)
        .collect()
}

/// How a move maps onto the transformed board.
type MoveMap = fn(Move) -> Move;

/// The moves of a result as (move, value) after mapping each move through `f`, sorted.
fn moves_mapped(r: &ProbeResult, f: impl Fn(Move) -> Move) -> Vec<(String, Value)> {
    let mut v: Vec<_> = r.moves.iter().map(|m| (f(m.mv).iccs(), m.value)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn colour_flipped_and_mirrored_positions_give_the_canonical_answers() {
    let tb = tablebase();
    let mut checked = 0;
    for name in ["KRvKN", "KCvKA", "KNvK"] {
        for b in sample(name, 211) {
            let canon = tb.probe_board(RULES, &b).unwrap();
            assert_eq!(canon.table, Some(sig(name)));
            let flipped = b.rotated();
            let variants: [(Board, MoveMap); 3] = [
                (b.mirrored(), Move::mirror),
                (flipped.clone(), Move::rotate),
                (flipped.mirrored(), |m: Move| m.rotate().mirror()),
            ];
            for (other, map) in variants {
                // Through the FEN, as a user gives it: Black holds the stronger side in the
                // flipped boards.
                let r = tb.probe_fen(RULES, &other.fen()).unwrap();
                assert_eq!(r.value, canon.value, "{} vs {}", other.fen(), b.fen());
                assert_eq!(r.table, canon.table);
                assert_eq!(
                    moves_mapped(&r, map),
                    moves_mapped(&canon, |m| m),
                    "{}",
                    other.fen()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn moves_come_best_first_and_agree_with_the_position() {
    let tb = tablebase();
    for name in ["KRvKN", "KCvKA"] {
        for b in sample(name, 97) {
            let r = tb.probe_board(RULES, &b).unwrap();
            let legal = b.legal_moves();
            assert_eq!(r.moves.len(), legal.len());
            let prefs: Vec<i32> = r.moves.iter().map(|m| m.for_mover().preference()).collect();
            assert!(prefs.windows(2).all(|w| w[0] >= w[1]), "{}", b.fen());
            match r.moves.first() {
                Some(best) => assert_eq!(best.for_mover(), r.value),
                None => assert_eq!(r.value, Value::Loss(0)),
            }
            for m in &r.moves {
                let mut after = b.clone();
                after.make(m.mv);
                assert_eq!(tb.probe(RULES, &after).unwrap(), m.value);
                assert_eq!(m.iccs, m.mv.iccs());
                assert_eq!(m.wxf, xiangqi::notation::to_wxf(&b, m.mv));
                assert_eq!(m.chinese, xiangqi::notation::to_chinese(&b, m.mv));
            }
        }
    }
}

/// Checks a main line move by move; returns its length.
fn check_mainline(tb: &Tablebase<Arc<SledStore>>, start: &Board) -> usize {
    let line = tb.mainline(RULES, start).unwrap();
    let v = tb.probe(RULES, start).unwrap();
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
        value = tb.probe(RULES, &b).unwrap();
        assert_eq!(value, m.value);
    }
    assert_eq!(line.end_board, b);
    match v {
        Value::Win(d) | Value::Loss(d) => {
            assert_eq!(line.moves.len(), d as usize, "{}", start.fen());
            assert!(!b.has_legal_move(), "the line ends with a legal move left");
            assert_eq!(value, Value::Loss(0));
            let end = if b.in_check(b.side_to_move()) {
                LineEnd::Mate
            } else {
                LineEnd::Stalemate
            };
            assert_eq!(line.end, end);
        }
        Value::Draw => {
            assert!(line.moves.is_empty());
            assert_eq!(line.end, LineEnd::Draw);
        }
        Value::RuleWin(r) | Value::RuleLoss(r) => {
            assert_eq!(line.moves.len(), r.plies as usize, "{}", start.fen());
            assert_eq!(line.end, LineEnd::Rule(r.rule));
        }
        Value::Illegal => unreachable!(),
    }
    line.moves.len()
}

#[test]
fn main_lines_are_legal_end_in_mate_and_are_as_long_as_the_distance() {
    let tb = tablebase();
    let mut longest = 0;
    for name in ["KRvKN", "KCvKA", "KNvK"] {
        let t = solved().table(&sig(name));
        // The longest wins of each side, and a spread of other positions (wins, losses, draws).
        let stats = solver::verify(t, &solved().tables).unwrap();
        for side in xiangqi::Color::ALL {
            if let Some((d, slot)) = stats[side].longest_win {
                let b = t.index().board(slot, side).unwrap();
                assert_eq!(check_mainline(tb, &b), d as usize);
                longest = longest.max(d);
            }
        }
        for b in sample(name, 1009) {
            check_mainline(tb, &b);
        }
    }
    assert!(longest >= 25, "{longest}");
    // A line that leaves its table by a capture and goes on in the next table.
    let fen = "9/9/5k3/9/9/9/9/3K1n3/1R7/9 b";
    let line = tb.mainline_fen(RULES, fen).unwrap();
    assert_eq!(line.value, Value::Win(17));
    assert_eq!(
        xqtb_core::Material::of_board(&line.end_board).name(),
        "KvKN",
        "the line captures the rook and mates in KNvK"
    );
    check_mainline(tb, &xiangqi::parse_fen(fen).unwrap());
}

#[test]
fn positions_without_attackers_are_draws_without_a_table() {
    let tb = tablebase();
    let r = tb.probe_fen(RULES, "3k5/9/9/9/9/9/9/9/4A4/4K4 w").unwrap();
    assert_eq!((r.table, r.value), (None, Value::Draw));
    assert!(r.moves.iter().all(|m| m.value == Value::Draw));
    let line = tb.mainline(RULES, &r.board).unwrap();
    assert!(line.moves.is_empty() && line.end == LineEnd::Draw);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let tb = tablebase();
    let err = |fen: &str| tb.probe_fen(RULES, fen).unwrap_err();
    match err("4k4/9/9 w") {
        ProbeError::BadFen(m) => assert!(m.contains("rows"), "{m}"),
        e => panic!("{e:?}"),
    }
    // The side not to move is in check: Red's rook attacks Black's king with Red to move.
    match err("4k4/9/9/9/9/9/9/9/9/3KR4 w") {
        ProbeError::BadFen(m) => assert!(m.contains("check"), "{m}"),
        e => panic!("{e:?}"),
    }
    match err("4k4/9/9/9/9/9/9/9/9/4K4 w") {
        ProbeError::BadFen(m) => assert!(m.contains("face each other"), "{m}"),
        e => panic!("{e:?}"),
    }
    match err(xiangqi::START_FEN) {
        ProbeError::TooManyPieces { pieces: 32, max } => assert!(max < 32),
        e => panic!("{e:?}"),
    }
    assert!(
        err(xiangqi::START_FEN)
            .to_string()
            .contains("32 pieces; tables hold at most")
    );
    // A table not in the store.
    let e = err("3k5/9/9/9/9/9/9/9/r8/R2NK4 w");
    assert!(
        e.to_string()
            .starts_with("table KRNvKR is not in the store"),
        "{e}"
    );
    // The Probe trait refuses boards that cannot occur instead of guessing: the side not to
    // move in check (as a pseudo-legal capture can leave it), and a missing king.
    let mut b = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/9/R3K4 w").unwrap();
    b.set_side_to_move(xiangqi::Color::Black);
    let ok = tb.probe(RULES, &b).unwrap();
    assert!(matches!(ok, Value::Loss(_) | Value::Draw));
    let mut checked = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/9/R3K4 w").unwrap();
    checked.remove(xiangqi::Square::new(0, 0));
    checked.put(
        xiangqi::Square::new(3, 5),
        xiangqi::Piece::new(xiangqi::Color::Red, xiangqi::PieceKind::Rook),
    );
    assert!(matches!(
        tb.probe(RULES, &checked),
        Err(ProbeError::Illegal(_))
    ));
    let mut kingless = checked.clone();
    kingless.remove(xiangqi::Square::new(3, 9));
    assert!(matches!(
        tb.probe(RULES, &kingless),
        Err(ProbeError::Illegal(_))
    ));
}

/// Under the Asian rules, every rule-decided position of a table whose captures lead into
/// another table's rule values (KRAvKN: the horse takes the advisor into KRvKN) probes without
/// error, its best move keeps its value one ply deep (a capture's rule value counting as round
/// 0 of this table, as the solver counts it), and its main line is as long as its distance and
/// ends by the rule.
/// Checks that the cycle of a main line ending by `rule` repeats a position, in a cycle that the
/// adjudicator rules lost by `rule` for the side to move at the line's end; 1 if it does.
fn check_cycle(line: &probe::MainLine, rule: xqtb_core::Rule) -> usize {
    let mut boards = vec![line.end_board.clone()];
    for m in &line.cycle {
        let mut next = boards.last().unwrap().clone();
        assert!(next.is_legal_move(m.mv), "{} in {}", m.iccs, next.fen());
        next.make(m.mv);
        boards.push(next);
    }
    let last = boards.last().unwrap();
    let Some(i) = boards[..boards.len() - 1].iter().position(|b| b == last) else {
        return 0;
    };
    let moves: Vec<Move> = line.cycle[i..].iter().map(|m| m.mv).collect();
    let a = xiangqi::repetition::adjudicate(&boards[i], &moves).unwrap();
    let loser = line.end_board.side_to_move();
    assert!(
        matches!(a.verdict, xiangqi::repetition::Verdict::Loses { loser: l, offence }
            if l == loser && offence.name() == rule.name()),
        "{}: the cycle {:?} is ruled {:?}",
        line.end_board.fen(),
        line.cycle.iter().map(|m| &m.iccs).collect::<Vec<_>>(),
        a.verdict
    );
    1
}

/// Probes every rule-decided position of `root` (Asian rules, stored with its closure): the stored
/// value, every move's value one ply deep (a capture, and under `slices_apart` a pawn's step into
/// another slice, read as an exit: rule values there count as round 0), and the main line to the
/// rule's cycle (of every `lines_every`-th). Returns how many positions were decided by rule and
/// how many moves into rule values of another table or slice were probed.
fn probe_rule_values(root: &str, slices_apart: bool, lines_every: usize) -> (usize, usize) {
    let rules = xqtb_core::RuleSet::Asian;
    let root = sig(root);
    let tables = solver::solve_closure_in_memory(&[root], rules, |_, _| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    for s in xqtb_core::closure_of(&[root]) {
        let t = tables.get(&xqtb_core::TableId::new(rules, s)).unwrap();
        store.put_table(&encode_table(t)).unwrap();
    }
    let tb = Tablebase::new(store);
    let table = tables.get(&xqtb_core::TableId::new(rules, root)).unwrap();
    let index = table.index();
    assert_eq!(rules.solves_slices_apart(index), slices_apart);
    let (mut decided, mut exits, mut lines, mut cycles) = (0, 0, 0, 0);
    for (side, slot, b) in legal_positions(table) {
        let Some(_) = table.value(side, slot).rule() else {
            continue;
        };
        decided += 1;
        let r = tb
            .probe_board(rules, &b)
            .unwrap_or_else(|e| panic!("{}: {e}", b.fen()));
        assert_eq!(r.value, table.value(side, slot), "{}", b.fen());
        for m in &r.moves {
            let mut after = b.clone();
            let captured = after.make(m.mv);
            let v = tb.probe(rules, &after).unwrap();
            let crosses = captured.is_none()
                && slices_apart
                && index.slice_of(
                    index
                        .slot_of(&after, false)
                        .unwrap_or_else(|e| panic!("{} {}: {e}", b.fen(), m.iccs)),
                ) != index.slice_of(slot);
            if captured.is_some() || crosses {
                assert_eq!(m.value, v.as_exit(), "{} in {}", m.iccs, b.fen());
                exits += usize::from(v.rule().is_some_and(|_| v != v.as_exit()));
            } else {
                assert_eq!(m.value, v, "{} in {}", m.iccs, b.fen());
            }
        }
        if decided % lines_every != 0 {
            continue;
        }
        lines += 1;
        let line = tb.mainline(rules, &b).unwrap();
        let (Value::RuleWin(v) | Value::RuleLoss(v)) = r.value else {
            unreachable!()
        };
        assert_eq!(line.moves.len(), v.plies as usize, "{}", b.fen());
        assert_eq!(line.end, LineEnd::Rule(v.rule), "{}", b.fen());
        cycles += check_cycle(&line, v.rule);
    }
    assert_eq!(cycles, lines, "every main line shows its cycle");
    eprintln!(
        "{root}: {decided} positions decided by rule, {exits} moves into rule values of another table or slice, {lines} main lines"
    );
    (decided, exits)
}

#[test]
fn asian_rule_values_agree_one_ply_deep_across_captures() {
    let (decided, through_capture) = probe_rule_values("KRAvKN", false, 1);
    assert!(decided > 8000, "{decided}");
    assert!(
        through_capture > 0,
        "no capture into a rule value of a later round was probed"
    );
}

/// A pawn's step into another slice reads like a capture (the table is solved slice by slice):
/// the prober must read it so too, or it finds the stored values inconsistent with their moves.
/// KNvKPP is small and has such steps into rule values of another slice.
#[test]
fn asian_rule_values_agree_one_ply_deep_across_pawn_slices() {
    let (decided, across) = probe_rule_values("KNvKPP", true, 20);
    assert!(decided > 1000, "{decided}");
    assert!(
        across > 0,
        "no pawn step into a rule value of a later round of another slice was probed"
    );
}
