//! Shared fixtures: a few tables solved in memory once per test binary.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use storage_format::{MemoryTables, RuleSet, Signature, Table};
use xiangqi::{Board, Color};

/// The tables the tests store and probe: KRvKN and KCvKA with their dependencies
/// (KNvK, KRvK, KCvK).
pub const ROOTS: [&str; 2] = ["KRvKN", "KCvKA"];

pub fn sig(s: &str) -> Signature {
    s.parse().unwrap()
}

pub struct Solved {
    pub tables: MemoryTables,
    pub sigs: Vec<Signature>,
}

impl Solved {
    pub fn table(&self, s: &Signature) -> &Arc<Table> {
        self.tables.get(s).expect("solved")
    }
}

/// The solved tables (solved on first use).
pub fn solved() -> &'static Solved {
    static SOLVED: OnceLock<Solved> = OnceLock::new();
    SOLVED.get_or_init(|| {
        let roots: Vec<Signature> = ROOTS.iter().map(|s| sig(s)).collect();
        let tables =
            worker::solve_closure_in_memory(&roots, RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
        let sigs = storage_format::closure_of(&roots);
        Solved { tables, sigs }
    })
}

/// Every legal position of `table` with its slot, side to move and board.
pub fn legal_positions(table: &Table) -> impl Iterator<Item = (Color, u64, Board)> + '_ {
    Color::ALL.into_iter().flat_map(move |side| {
        (0..table.index.size()).filter_map(move |slot| {
            let b = table.index.board(slot, side)?;
            (!b.opponent_in_check()).then_some((side, slot, b))
        })
    })
}
