//! Properties of the fast solver beyond agreement with the reference: determinism across thread
//! counts, the verifier catching corruption, and clear errors for missing dependencies.

use solver::{JobError, SolveError, solve, solve_closure_in_memory, verify};
use std::sync::Arc;
use xiangqi::Color;
use xqtb_core::{MemoryTables, RuleSet, Signature, Table, TableId, Value};

fn sig(s: &str) -> Signature {
    s.parse().unwrap()
}

/// The table of `s` under cycles-are-draws.
fn cad(s: Signature) -> TableId {
    TableId::new(RuleSet::CyclesAreDraws, s)
}

/// Both sides' encoded values.
fn codes(t: &Table) -> [&xqtb_core::Codes; 2] {
    [t.codes(Color::Red), t.codes(Color::Black)]
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn one_and_two_threads_give_identical_tables() {
    for name in ["KRvKN", "KCPvK", "KNvKAB"] {
        let s = sig(name);
        let deps: Vec<Signature> = s.closure().into_iter().filter(|d| *d != s).collect();
        let tables = solve_closure_in_memory(&deps, RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
        let one = in_pool(1, || solve(cad(s), &tables, &|_| {}).unwrap());
        let two = in_pool(2, || solve(cad(s), &tables, &|_| {}).unwrap());
        let four = in_pool(4, || solve(cad(s), &tables, &|_| {}).unwrap());
        assert!(codes(&one) == codes(&two), "{name}: 1 vs 2 threads differ");
        assert!(codes(&one) == codes(&four), "{name}: 1 vs 4 threads differ");
    }
}

#[test]
fn verifier_catches_corrupted_values() {
    let s = sig("KRvKA");
    let tables = solve_closure_in_memory(&[s], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    let good = tables.get(&cad(s)).unwrap().as_ref().clone();
    let deps = tables.clone();
    assert!(verify(&good, &deps).is_ok());
    // Pick slots of each kind and change them in ways that keep the code valid.
    let reds = good.codes(Color::Red);
    let find = |want: fn(Value) -> bool| {
        (0..reds.len())
            .find(|&i| want(Value::decode(reds.get(i))))
            .expect("such a slot exists")
    };
    let corruptions: Vec<(usize, Value)> = vec![
        (find(|v| matches!(v, Value::Win(d) if d > 1)), Value::Win(1)),
        (find(|v| matches!(v, Value::Win(_))), Value::Draw),
        (
            find(|v| matches!(v, Value::Win(d) if d > 3)),
            Value::Loss(2),
        ),
        (find(|v| v == Value::Illegal), Value::Draw),
        (find(|v| matches!(v, Value::Win(_))), Value::Illegal),
    ];
    for (slot, bad) in corruptions {
        let mut t = good.clone();
        t.set_code(Color::Red, slot, bad.encode());
        let err = verify(&t, &deps).expect_err("corruption must be caught");
        assert_eq!(err.signature, s);
        assert!(
            err.to_string().contains("verification of KRvKA failed"),
            "{err}"
        );
    }
    // A corrupted value in a position's successor is caught too (by the predecessor's check or
    // its own): flip one loss to a longer loss.
    let black = good.codes(Color::Black);
    let slot = (0..black.len())
        .find(|&i| matches!(Value::decode(black.get(i)), Value::Loss(d) if d >= 2))
        .unwrap();
    let mut t = good.clone();
    let Value::Loss(d) = Value::decode(t.codes(Color::Black).get(slot)) else {
        unreachable!()
    };
    t.set_code(Color::Black, slot, Value::Loss(d + 2).encode());
    assert!(verify(&t, &deps).is_err());
}

#[test]
fn missing_dependency_is_named() {
    let mut partial = MemoryTables::new();
    let krk = solve_closure_in_memory(&[sig("KRvK")], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    partial.insert(Arc::clone(krk.get(&cad(sig("KRvK"))).unwrap()));
    let err = solve(cad(sig("KRvKR")), &MemoryTables::new(), &|_| {});
    assert_eq!(
        err.unwrap_err(),
        SolveError::MissingDependency {
            table: sig("KRvKR"),
            missing: sig("KRvK")
        }
    );
    let err = solve(cad(sig("KRNvK")), &partial, &|_| {}).unwrap_err();
    match &err {
        SolveError::MissingDependency { table, missing } => {
            assert_eq!(*table, sig("KRNvK"));
            assert_eq!(*missing, sig("KNvK"));
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().contains("KNvK"), "{err}");
    let JobError::Solve(_) =
        solver::solve_and_verify(cad(sig("KRNvK")), &partial, &|_| {}).unwrap_err()
    else {
        panic!("expected a solve error");
    };
}

/// Dependencies behind `Probe` alone (as a store would be): every capture goes through the
/// general lookup instead of the solver's capture leads.
struct ProbeOnly<'a>(&'a MemoryTables);

impl xqtb_core::Probe for ProbeOnly<'_> {
    fn probe(
        &self,
        rules: RuleSet,
        board: &xiangqi::Board,
    ) -> Result<Value, xqtb_core::ProbeError> {
        self.0.probe(rules, board)
    }
    fn has_table(&self, id: &TableId) -> bool {
        self.0.has_table(id)
    }
}

#[test]
fn capture_leads_agree_with_general_probing() {
    use xqtb_core::Probe;
    // Colour-swapped targets (KRvKN after Red's rook goes: KNvK), dead draws and pawns.
    for name in ["KRvKN", "KCPvKA", "KNPvKB", "KRvKR"] {
        let s = sig(name);
        let deps: Vec<Signature> = s.closure().into_iter().filter(|d| *d != s).collect();
        let tables = solve_closure_in_memory(&deps, RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
        assert!(
            s.capture_targets()
                .iter()
                .all(|t| tables.table(&cad(*t)).is_some())
        );
        let fast = solve(cad(s), &tables, &|_| {}).unwrap();
        let general = solve(cad(s), &ProbeOnly(&tables), &|_| {}).unwrap();
        assert!(
            codes(&fast) == codes(&general),
            "{name}: capture paths differ"
        );
    }
}

/// The table of `s` under the Asian rules.
fn asian(s: Signature) -> TableId {
    TableId::new(RuleSet::Asian, s)
}

/// Verifies `table` both ways, decoded ([`verify`]) and from its blocks
/// ([`solver::verify_blocks`]), which must agree: the same counts, or both refuse it for a wrong
/// value (the errors of each, in that order).
fn verify_both_ways(
    table: &Table,
    deps: &MemoryTables,
) -> Result<xqtb_core::TableCounts, (String, String)> {
    let legal = solver::Legal::of(table.index(), table.slots());
    let blocks = solver::verify_blocks(table, &legal, deps, &|_| {});
    match (verify(table, deps), blocks) {
        (Ok(whole), Ok(blocks)) => {
            assert_eq!(whole, blocks, "the counts differ");
            Ok(whole)
        }
        (Err(whole), Err(JobError::Verify(blocks))) => {
            assert_eq!(whole.signature, blocks.signature);
            Err((whole.to_string(), blocks.to_string()))
        }
        (whole, blocks) => panic!("decoded: {whole:?}; from blocks: {blocks:?}"),
    }
}

#[test]
fn verifier_catches_corrupted_rule_values() {
    use xqtb_core::{Rule, RuleValue};
    let s = sig("KRvKN");
    let tables = solve_closure_in_memory(&[s], RuleSet::Asian, |_, _| {}).unwrap();
    let good = tables.get(&asian(s)).unwrap().as_ref().clone();
    let deps = tables.clone();
    let counts = verify_both_ways(&good, &deps).expect("the solved table passes");
    assert!(counts.legal() > 0);
    let find = |side: Color, want: &dyn Fn(Value) -> bool| {
        let codes = good.codes(side);
        (0..codes.len())
            .find(|&i| want(Value::decode(codes.get(i))))
            .expect("such a slot exists")
    };
    let terminal = |v: Value| matches!(v, Value::RuleLoss(r) if r.plies == 0);
    let t = find(Color::Black, &terminal);
    let Value::RuleLoss(r) = good.value(Color::Black, t as u64) else {
        unreachable!()
    };
    let other_rule = match r.rule {
        Rule::PerpetualCheck => Rule::PerpetualChase,
        Rule::PerpetualChase => Rule::PerpetualCheck,
    };
    // Drawn positions without a capture, and with one (of the chariot, into KNvK: a draw).
    let draw_with = |capture: bool| {
        (0..good.codes(Color::Black).len())
            .find(|&i| {
                good.value(Color::Black, i as u64) == Value::Draw
                    && good.index().board(i as u64, Color::Black).is_some_and(|b| {
                        b.legal_moves().iter().any(|m| b.piece_at(m.to()).is_some()) == capture
                    })
            })
            .expect("such a draw")
    };
    let (draw, capture) = (draw_with(false), draw_with(true));
    let corruptions: Vec<(Color, usize, Value, &str)> = vec![
        // A terminal whose rule is not the one that traps it.
        (
            Color::Black,
            t,
            Value::RuleLoss(RuleValue {
                rule: other_rule,
                ..r
            }),
            "trap",
        ),
        // A draw stored as lost by rule: nothing traps it.
        (Color::Black, draw, Value::RuleLoss(r), "trap"),
        // A terminal with a capture that does not lose: it leaves any trap.
        (
            Color::Black,
            capture,
            Value::RuleLoss(r),
            "leaves for a position not won",
        ),
        // A terminal stored as a draw: its predecessors' rule wins lose their ground.
        (Color::Black, t, Value::Draw, ""),
    ];
    // Each is caught decoded and from the table's blocks alike.
    for (side, slot, bad, why) in corruptions {
        let mut c = good.clone();
        c.set_code(side, slot, bad.encode());
        let err = verify(&c, &deps).expect_err("corruption must be caught");
        assert_eq!(err.signature, s);
        let (whole, blocks) = verify_both_ways(&c, &deps).expect_err("caught both ways");
        assert!(whole.contains(why), "{whole}");
        assert!(blocks.contains(why), "{blocks}");
    }
    // Every rule value forgotten (stored as a draw) leaves the mate values consistent one ply
    // deep: only the search for missed traps among the draws can tell.
    let mut c = good.clone();
    c.map_codes(|_, _, code| {
        if Value::decode(code).rule().is_some() {
            Value::Draw.encode()
        } else {
            code
        }
    });
    let (whole, blocks) = verify_both_ways(&c, &deps).expect_err("missing rule values caught");
    assert!(whole.contains("trapped into"), "{whole}");
    assert!(blocks.contains("trapped into"), "{blocks}");
}
