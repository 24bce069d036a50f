//! Properties of the fast solver beyond agreement with the reference: determinism across thread
//! counts, the verifier catching corruption, and clear errors for missing dependencies.

use std::sync::Arc;
use storage_format::{MemoryTables, RuleSet, Signature, Value};
use worker::{JobError, SolveError, solve, solve_closure_in_memory, verify};

fn sig(s: &str) -> Signature {
    s.parse().unwrap()
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
        let one = in_pool(1, || {
            solve(s, RuleSet::CyclesAreDraws, &tables, &|_| {}).unwrap()
        });
        let two = in_pool(2, || {
            solve(s, RuleSet::CyclesAreDraws, &tables, &|_| {}).unwrap()
        });
        let four = in_pool(4, || {
            solve(s, RuleSet::CyclesAreDraws, &tables, &|_| {}).unwrap()
        });
        assert!(one.values == two.values, "{name}: 1 vs 2 threads differ");
        assert!(one.values == four.values, "{name}: 1 vs 4 threads differ");
    }
}

#[test]
fn verifier_catches_corrupted_values() {
    let s = sig("KRvKA");
    let tables = solve_closure_in_memory(&[s], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    let good = tables.get(&s).unwrap().as_ref().clone();
    let deps = tables.clone();
    assert!(verify(&good, &deps).is_ok());
    // Pick slots of each kind and change them in ways that keep the code valid.
    let reds = &good.values[0];
    let find = |want: fn(Value) -> bool| {
        (0..reds.len())
            .find(|&i| want(Value::decode(reds[i])))
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
        t.values[0][slot] = bad.encode();
        let err = verify(&t, &deps).expect_err("corruption must be caught");
        assert_eq!(err.signature, s);
        assert!(
            err.to_string().contains("verification of KRvKA failed"),
            "{err}"
        );
    }
    // A corrupted value in a position's successor is caught too (by the predecessor's check or
    // its own): flip one loss to a longer loss.
    let black = &good.values[1];
    let slot = (0..black.len())
        .find(|&i| matches!(Value::decode(black[i]), Value::Loss(d) if d >= 2))
        .unwrap();
    let mut t = good.clone();
    let Value::Loss(d) = Value::decode(t.values[1][slot]) else {
        unreachable!()
    };
    t.values[1][slot] = Value::Loss(d + 2).encode();
    assert!(verify(&t, &deps).is_err());
}

#[test]
fn missing_dependency_is_named() {
    let mut partial = MemoryTables::new();
    let krk = solve_closure_in_memory(&[sig("KRvK")], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
    partial.insert(Arc::clone(krk.get(&sig("KRvK")).unwrap()));
    let err = solve(
        sig("KRvKR"),
        RuleSet::CyclesAreDraws,
        &MemoryTables::new(),
        &|_| {},
    );
    assert_eq!(
        err.unwrap_err(),
        SolveError::MissingDependency {
            table: sig("KRvKR"),
            missing: sig("KRvK")
        }
    );
    let err = solve(sig("KRNvK"), RuleSet::CyclesAreDraws, &partial, &|_| {}).unwrap_err();
    match &err {
        SolveError::MissingDependency { table, missing } => {
            assert_eq!(*table, sig("KRNvK"));
            assert_eq!(*missing, sig("KNvK"));
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().contains("KNvK"), "{err}");
    let JobError::Solve(_) =
        worker::solve_and_verify(sig("KRNvK"), RuleSet::CyclesAreDraws, &partial, &|_| {})
            .unwrap_err()
    else {
        panic!("expected a solve error");
    };
}

/// Dependencies behind `Probe` alone (as a store would be): every capture goes through the
/// general lookup instead of the solver's capture leads.
struct ProbeOnly<'a>(&'a MemoryTables);

impl storage_format::Probe for ProbeOnly<'_> {
    fn probe(&self, board: &xiangqi::Board) -> Result<Value, storage_format::ProbeError> {
        self.0.probe(board)
    }
    fn has_table(&self, sig: &Signature) -> bool {
        self.0.has_table(sig)
    }
}

#[test]
fn capture_leads_agree_with_general_probing() {
    use storage_format::Probe;
    // Colour-swapped targets (KRvKN after Red's rook goes: KNvK), dead draws and pawns.
    for name in ["KRvKN", "KCPvKA", "KNPvKB", "KRvKR"] {
        let s = sig(name);
        let deps: Vec<Signature> = s.closure().into_iter().filter(|d| *d != s).collect();
        let tables = solve_closure_in_memory(&deps, RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
        assert!(
            s.capture_targets()
                .iter()
                .all(|t| tables.table(t).is_some())
        );
        let fast = solve(s, RuleSet::CyclesAreDraws, &tables, &|_| {}).unwrap();
        let general = solve(s, RuleSet::CyclesAreDraws, &ProbeOnly(&tables), &|_| {}).unwrap();
        assert!(
            fast.values == general.values,
            "{name}: capture paths differ"
        );
    }
}
