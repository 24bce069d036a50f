//! Pawn slices as jobs of their own: a table with pawns solved slice by slice, in any order in
//! which each slice comes after the slices its pawn advances lead into, is the table solved
//! whole, under both rule sets; a slice job without one of those slices is a clear error.

use solver::{JobError, SliceDeps, SolveError, solve, solve_by_slices, solve_range};
use std::sync::Arc;
use xiangqi::Color;
use xqtb_core::{MemoryTables, RuleSet, Signature, SlotRange, Table, TableId, TableIndex, Value};

fn sig(s: &str) -> Signature {
    s.parse().unwrap()
}

/// The tables `s`'s captures lead into (solved whole) under `rules`.
fn deps_of(s: Signature, rules: RuleSet) -> MemoryTables {
    let deps: Vec<Signature> = s.closure().into_iter().filter(|d| *d != s).collect();
    solver::solve_closure_in_memory(&deps, rules, |_, _| {}).unwrap()
}

/// A fixed pseudo-random generator (SplitMix64), so a failing order can be reproduced.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// A random order of `index`'s slices in which every slice comes after those its pawn advances
/// lead into (Kahn's algorithm, picking a random ready slice each time).
fn random_order(index: &TableIndex, seed: u64) -> Vec<usize> {
    let slices = index.slices();
    let mut waiting: Vec<usize> = slices.iter().map(|s| s.advances_into.len()).collect();
    let mut ready: Vec<usize> = (0..slices.len()).filter(|&i| waiting[i] == 0).collect();
    let mut rng = Rng(seed);
    let mut order = Vec::with_capacity(slices.len());
    while !ready.is_empty() {
        let s = ready.swap_remove(rng.below(ready.len()));
        order.push(s);
        for (i, slice) in slices.iter().enumerate() {
            if slice.advances_into.contains(&s) {
                waiting[i] -= 1;
                if waiting[i] == 0 {
                    ready.push(i);
                }
            }
        }
    }
    assert_eq!(
        order.len(),
        slices.len(),
        "the slices' advances form a cycle"
    );
    order
}

/// Entries of `t` that hold a rule value (Asian rule set).
fn rule_values(t: &Table) -> usize {
    Color::ALL
        .iter()
        .map(|&side| {
            t.codes(side)
                .iter()
                .filter(|&c| Value::decode(c).rule().is_some())
                .count()
        })
        .sum()
}

/// The first slot (side to move, slot) where two tables differ, for a readable failure.
fn first_difference(a: &Table, b: &Table) -> Option<(Color, usize, u16, u16)> {
    Color::ALL.into_iter().find_map(|side| {
        let (x, y) = (a.codes(side), b.codes(side));
        (0..x.len())
            .find(|&i| x.get(i) != y.get(i))
            .map(|i| (side, i, x.get(i), y.get(i)))
    })
}

fn sliced_equals_whole(name: &str, rules: RuleSet) {
    let s = sig(name);
    let id = TableId::new(rules, s);
    let index = TableIndex::new(s);
    let slices = index.slices();
    assert!(
        slices.len() > 1,
        "{name} has {} slice(s): the test needs a sliced index",
        slices.len()
    );
    let deps = deps_of(s, rules);
    let started = std::time::Instant::now();
    let whole = solve(id, &deps, &|_| {}).unwrap();
    let whole_secs = started.elapsed().as_secs_f64();
    let in_slot_order: Vec<usize> = (0..slices.len()).collect();
    let orders = [
        in_slot_order,
        random_order(&index, 1),
        random_order(&index, 2),
    ];
    for (k, order) in orders.iter().enumerate() {
        // The first order's parts are also verified, each against the parts before it.
        let started = std::time::Instant::now();
        let sliced = solve_by_slices(id, &deps, order, k == 0, &|_| {}).unwrap();
        assert!(sliced.is_whole());
        if let Some((side, slot, w, p)) = first_difference(&whole, &sliced) {
            panic!(
                "{name} ({rules}) in order {order:?}: {side} to move, slot {slot} ({:?}): whole {:?}, \
                 by slices {:?}",
                index.board(slot as u64, side).map(|b| b.fen()),
                Value::decode(w),
                Value::decode(p)
            );
        }
        eprintln!(
            "{name} ({rules}): {} slices, {} rule values, whole {whole_secs:.2} s, by slices {:.2} s{}",
            slices.len(),
            rule_values(&whole),
            started.elapsed().as_secs_f64(),
            if k == 0 { " with verification" } else { "" }
        );
    }
}

macro_rules! sliced_tests {
    ($($test:ident: $name:literal,)*) => {
        mod cycles_are_draws {
            use super::*;
            $(#[test] fn $test() { sliced_equals_whole($name, RuleSet::CyclesAreDraws); })*
        }
        mod asian {
            use super::*;
            $(#[test] fn $test() { sliced_equals_whole($name, RuleSet::Asian); })*
        }
    };
}

/// Tables whose Asian rule values rest on rule values in other slices (a trap in one slice
/// reached through a pawn advance from another). A pawn's step forward ends every cycle, as a
/// capture does, so the rule phase's rounds start afresh behind it: the whole solve counts them
/// per slice (`solver::solve`), and the table is the same solved whole or by slices in any
/// order.
#[test]
fn asian_rule_values_across_slices_knvkpp() {
    sliced_equals_whole("KNvKPP", RuleSet::Asian);
}

#[test]
fn asian_rule_values_across_slices_kcvkpp() {
    sliced_equals_whole("KCvKPP", RuleSet::Asian);
}

#[test]
fn exact_under_cycles_are_draws_knvkpp() {
    sliced_equals_whole("KNvKPP", RuleSet::CyclesAreDraws);
}

#[test]
#[ignore = "slow (about a minute): run with --ignored"]
fn asian_rule_values_across_slices_krvkpp() {
    sliced_equals_whole("KRvKPP", RuleSet::Asian);
}

/// Larger tables, exact under both rule sets: too slow for every run, so run with --ignored.
mod slow {
    use super::*;
    #[test]
    #[ignore = "slow: run with --ignored"]
    fn kpppvk() {
        sliced_equals_whole("KPPPvK", RuleSet::CyclesAreDraws);
        sliced_equals_whole("KPPPvK", RuleSet::Asian);
    }
    #[test]
    #[ignore = "slow: run with --ignored"]
    fn kppvkp() {
        sliced_equals_whole("KPPvKP", RuleSet::CyclesAreDraws);
        sliced_equals_whole("KPPvKP", RuleSet::Asian);
    }
    #[test]
    #[ignore = "slow: run with --ignored"]
    fn krpvkp() {
        sliced_equals_whole("KRPvKP", RuleSet::CyclesAreDraws);
        sliced_equals_whole("KRPvKP", RuleSet::Asian);
    }
    #[test]
    #[ignore = "slow: run with --ignored"]
    fn krvkpp_cycles_are_draws() {
        sliced_equals_whole("KRvKPP", RuleSet::CyclesAreDraws);
    }
}

sliced_tests! {
    kpvk: "KPvK",
    kppvk: "KPPvK",
    kpvka: "KPvKA",
    kpvkb: "KPvKB",
    kpvkp: "KPvKP",
    krpvk: "KRPvK",
    krvkp: "KRvKP",
    knpvk: "KNPvK",
    kcpvk: "KCPvK",
    kcvkp: "KCvKP",
    knvkp: "KNvKP",
    krpvka: "KRPvKA",
    knpvka: "KNPvKA",
    kcpvka: "KCPvKA",
    kppvka: "KPPvKA",
}

#[test]
fn a_slice_without_a_slice_its_advances_lead_into_is_a_clear_error() {
    for rules in [RuleSet::CyclesAreDraws, RuleSet::Asian] {
        let s = sig("KPPvK");
        let id = TableId::new(rules, s);
        let index = TableIndex::new(s);
        let slices = index.slices();
        let deps = deps_of(s, rules);
        let (at, slice) = slices
            .iter()
            .enumerate()
            .find(|(_, x)| !x.advances_into.is_empty())
            .expect("some slice has pawn advances");
        // Nothing of the table at all.
        let missing = slices[slice.advances_into[0]].slots;
        let err = solve_range(id, slice.slots, &deps, &|_| {}).unwrap_err();
        assert_eq!(
            err,
            SolveError::MissingSlice {
                table: s,
                slots: slice.slots,
                missing
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("KPPvK") && text.contains(&missing.to_string()),
            "{text}"
        );
        // Every other slice of the table but that one.
        let whole = solve(id, &deps, &|_| {}).unwrap();
        let mut parts = SliceDeps::new(id, &deps);
        for (i, x) in slices.iter().enumerate() {
            if i != slice.advances_into[0] && i != at {
                parts.insert(Arc::new(part_of(&whole, x.slots)));
            }
        }
        let err = solve_range(id, slice.slots, &parts, &|_| {}).unwrap_err();
        assert!(
            matches!(err, SolveError::MissingSlice { missing: m, .. } if m == missing),
            "{err}"
        );
        // A slice order that puts a slice before one its advances lead into fails the same way.
        let reversed: Vec<usize> = (0..slices.len()).rev().collect();
        match solve_by_slices(id, &deps, &reversed, false, &|_| {}) {
            Err(JobError::Solve(SolveError::MissingSlice { table, .. })) => assert_eq!(table, s),
            other => panic!("expected a missing slice, got {other:?}"),
        }
        // Slots that cut a slice are refused.
        let cut = SlotRange {
            start: slice.slots.start,
            end: slice.slots.end - 1,
        };
        assert_eq!(
            solve_range(id, cut, &deps, &|_| {}).unwrap_err(),
            SolveError::NotSlices {
                table: s,
                slots: cut
            }
        );
    }
}

/// The part of `whole` over `slots`.
fn part_of(whole: &Table, slots: SlotRange) -> Table {
    let codes = Color::ALL.map(|side| {
        whole
            .codes(side)
            .slice(slots.start as usize..slots.end as usize)
            .into_owned()
    });
    Table::part(whole.index().clone(), whole.rules(), slots, codes)
}

#[test]
fn a_part_is_verified_against_the_slices_before_it() {
    let s = sig("KPvK");
    let rules = RuleSet::CyclesAreDraws;
    let id = TableId::new(rules, s);
    let deps = deps_of(s, rules);
    let whole = solve(id, &deps, &|_| {}).unwrap();
    let index = TableIndex::new(s);
    let slices = index.slices();
    // The last slice with pawn advances: its slots are far from slot 0.
    let slice = slices
        .iter()
        .rfind(|x| !x.advances_into.is_empty())
        .expect("some slice has pawn advances");
    let mut parts = SliceDeps::new(id, &deps);
    for x in slices {
        if x != slice {
            parts.insert(Arc::new(part_of(&whole, x.slots)));
        }
    }
    let good = part_of(&whole, slice.slots);
    assert!(solver::verify(&good, &parts).is_ok());
    // A win one ply too fast is caught in the part (at it or a predecessor), named by table
    // slot.
    let reds = good.codes(Color::Red);
    let i = (0..reds.len())
        .find(|&i| matches!(Value::decode(reds.get(i)), Value::Win(d) if d > 1))
        .expect("a win");
    let mut bad = good.clone();
    bad.set_code(Color::Red, i, Value::Win(1).encode());
    let err = solver::verify(&bad, &parts).expect_err("caught");
    assert!(
        slice.slots.start <= err.slot && err.slot < slice.slots.end,
        "{err}"
    );
}

/// The coordinator's sample check works on an uploaded slice: read through its blocks, with
/// the slices its pawn advances lead into as dependencies, a sound part passes and a part with
/// a few wrong values is caught.
#[test]
fn the_sample_check_reads_a_slice_and_the_slices_it_leads_into() {
    use solver::sample::{SampleError, SamplePolicy, check_sample, check_sample_blocks};
    use xqtb_core::BlockSource;
    let rules = RuleSet::Asian;
    let s = sig("KPPvK");
    let id = TableId::new(rules, s);
    let deps = deps_of(s, rules);
    let index = TableIndex::new(s);
    let last = index.slices().len() - 1;
    assert!(!index.slices()[last].advances_into.is_empty());
    let mut done = SliceDeps::new(id, &deps);
    for i in 0..last {
        done.insert(Arc::new(
            solve_range(id, index.slices()[i].slots, &done, &|_| {}).unwrap(),
        ));
    }
    let part = solve_range(id, index.slices()[last].slots, &done, &|_| {}).unwrap();
    let all = SamplePolicy {
        percent: 100.0,
        minimum: 0,
    };
    check_sample(&part, &done, all, 7).expect("a sound part passes");
    // The slices it reads handed over as block sources (as the coordinator reads them from its
    // store), with only the other tables in `deps`.
    let slices: Vec<&dyn BlockSource> = done
        .parts()
        .parts_of(&id)
        .iter()
        .map(|p| &**p as &dyn BlockSource)
        .collect();
    let legal = solver::sample::legal_entries(&part);
    check_sample_blocks(&part, &slices, legal, &deps, all, 7)
        .expect("a sound part passes, its slices read block by block");
    let mut bad = part.clone();
    let mut flipped = 0;
    bad.map_codes(|side, _, c| match Value::decode(c) {
        Value::Win(d) if side == Color::Red && flipped < 5 => {
            flipped += 1;
            Value::Win(d + 2).encode()
        }
        _ => c,
    });
    assert_eq!(flipped, 5);
    match check_sample(&bad, &done, all, 7) {
        Err(SampleError::Wrong(e)) => eprintln!("caught: {e}"),
        other => panic!("a wrong part passed the sample check: {other:?}"),
    }
    match check_sample_blocks(&bad, &slices, legal, &deps, all, 7) {
        Err(SampleError::Wrong(e)) => eprintln!("caught, slices read block by block: {e}"),
        other => panic!("a wrong part passed the sample check: {other:?}"),
    }
    // Without the slices it reads, the check cannot value its pawn steps: an error, not a pass.
    assert!(check_sample_blocks(&part, &[], legal, &deps, all, 7).is_err());
}

/// Under the Asian rules a whole table of several slices is made slice by slice, so a pawn's
/// step into another slice is read like a capture (rule values there count as round 0). The
/// coordinator's sample check of a whole uploaded table must read it so too: every legal
/// entry of these tables, solved as `xqtb solve` solves them, passes the one-ply check. (Read
/// as a quiet move instead, a position whose rule value comes through a pawn advance into a
/// round-1 rule value of another slice would look inconsistent and be refused.)
fn a_whole_sliced_table_passes_the_sample_check_everywhere(name: &str) {
    use solver::sample::{SamplePolicy, check_sample};
    let rules = RuleSet::Asian;
    let s = sig(name);
    let deps = deps_of(s, rules);
    let table = solve(TableId::new(rules, s), &deps, &|_| {}).unwrap();
    assert!(table.index().slices().len() > 1);
    let all = SamplePolicy {
        percent: 100.0,
        minimum: 0,
    };
    let report = check_sample(&table, &deps, all, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.checked, report.legal);
}

macro_rules! whole_sliced_tables_pass_the_sample_check {
    ($($test:ident: $name:literal),*) => {
        $(#[test] fn $test() { a_whole_sliced_table_passes_the_sample_check_everywhere($name); })*
    };
}

// Two tables small enough for CI that have such positions: rule values reached through a pawn
// advance into another slice.
whole_sliced_tables_pass_the_sample_check! {
    whole_knvkpp_passes_the_sample_check: "KNvKPP",
    whole_kcvkpp_passes_the_sample_check: "KCvKPP"
}

/// A job of several slices (a union of them, padding included) is the table's part of those
/// slots under both rule sets, and its part is verified: under the Asian rules its slices are
/// solved and verified one at a time, each reading the ones before it, as whole tables are.
#[test]
fn a_job_of_several_slices_is_the_part_of_the_whole_table() {
    for rules in [RuleSet::Asian, RuleSet::CyclesAreDraws] {
        let s = sig("KNvKPP");
        let id = TableId::new(rules, s);
        let deps = deps_of(s, rules);
        let whole = solve(id, &deps, &|_| {}).unwrap();
        let index = whole.index().clone();
        // The first slices in slot order lead only into each other, and from the fourth on
        // they read those.
        let first = SlotRange {
            start: 0,
            end: index.slice_span(2).end,
        };
        let next = SlotRange {
            start: first.end,
            end: index.slice_span(6).end,
        };
        assert_eq!(index.slices_in(first), 3);
        assert_eq!(index.slices_in(next), 4);
        let mut done = SliceDeps::new(id, &deps);
        for slots in [first, next] {
            let (part, _) = solver::solve_and_verify_range(
                id,
                slots,
                solver::StateStore::Memory,
                &done,
                &|_| {},
            )
            .unwrap();
            if let Some((side, slot, w, p)) = first_difference(&part_of(&whole, slots), &part) {
                panic!("{rules} {slots}: {side} slot {slot}: whole {w:#x}, job {p:#x}");
            }
            done.insert(Arc::new(part));
        }
    }
}
