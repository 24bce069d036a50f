//! Shared fixtures: a few tables solved in memory once per test binary.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use xiangqi::{Board, Color};
use xqtb_core::{MemoryTables, RuleSet, Signature, Table, TableId};

/// The tables the tests store and probe: KRvKN and KCvKA with their dependencies
/// (KNvK, KRvK, KCvK).
pub const ROOTS: [&str; 2] = ["KRvKN", "KCvKA"];

/// The rule set of the fixtures.
pub const RULES: RuleSet = RuleSet::CyclesAreDraws;

pub fn sig(s: &str) -> Signature {
    s.parse().unwrap()
}

/// The table of `s` under the fixtures' rule set.
pub fn id(s: &str) -> TableId {
    TableId::new(RULES, sig(s))
}

pub struct Solved {
    pub tables: MemoryTables,
    pub sigs: Vec<Signature>,
    pub ids: Vec<TableId>,
}

impl Solved {
    pub fn table(&self, s: &Signature) -> &Arc<Table> {
        self.tables.get(&TableId::new(RULES, *s)).expect("solved")
    }
}

/// The solved tables (solved on first use).
pub fn solved() -> &'static Solved {
    static SOLVED: OnceLock<Solved> = OnceLock::new();
    SOLVED.get_or_init(|| {
        let roots: Vec<Signature> = ROOTS.iter().map(|s| sig(s)).collect();
        let tables = solver::solve_closure_in_memory(&roots, RULES, |_, _| {}).unwrap();
        let sigs = xqtb_core::closure_of(&roots);
        let ids = sigs.iter().map(|s| TableId::new(RULES, *s)).collect();
        Solved { tables, sigs, ids }
    })
}

/// Both sides' encoded values of a table.
pub fn codes(t: &Table) -> [&xqtb_core::Codes; 2] {
    [t.codes(Color::Red), t.codes(Color::Black)]
}

/// Every legal position of `table` with its slot, side to move and board.
pub fn legal_positions(table: &Table) -> impl Iterator<Item = (Color, u64, Board)> + '_ {
    Color::ALL.into_iter().flat_map(move |side| {
        (0..table.index().size()).filter_map(move |slot| {
            let b = table.index().board(slot, side)?;
            (!b.opponent_in_check()).then_some((side, slot, b))
        })
    })
}
