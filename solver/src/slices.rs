//! The parts of a table solved slice by slice: each pawn slice a job of its own
//! ([`crate::solve_range`]), in an order in which every slice comes after the slices its pawn
//! advances lead into, the finished parts kept in memory for the jobs after them
//! ([`SliceDeps`]), and put together into one table at the end.

use std::sync::Arc;
use xiangqi::{Board, Color};
use xqtb_core::{
    MemoryTables, Orientation, Probe, ProbeError, RuleSet, SlotRange, Table, TableId, TableIndex,
    Value,
};

/// The dependencies of one table's slice jobs: the parts of that table solved so far, in
/// memory, over the other tables in `deps`. A position of the table is looked up in its parts,
/// any other in `deps`.
pub struct SliceDeps<'a> {
    table: TableId,
    parts: MemoryTables,
    deps: &'a dyn Probe,
}

impl<'a> SliceDeps<'a> {
    /// No part of `table` yet, the other tables from `deps`.
    pub fn new(table: TableId, deps: &'a dyn Probe) -> SliceDeps<'a> {
        SliceDeps {
            table,
            parts: MemoryTables::new(),
            deps,
        }
    }

    /// Adds a solved part of the table.
    pub fn insert(&mut self, part: Arc<Table>) {
        assert_eq!(part.id(), self.table, "a part of another table");
        self.parts.insert(part);
    }

    /// The parts held so far.
    pub fn parts(&self) -> &MemoryTables {
        &self.parts
    }
}

impl Probe for SliceDeps<'_> {
    fn probe(&self, rules: RuleSet, board: &Board) -> Result<Value, ProbeError> {
        let o = Orientation::of_board(board);
        if rules == self.table.rules && o.signature == self.table.signature {
            // Slices solved before this set's (by an enclosing job) are in `deps`.
            match self.parts.probe(rules, board) {
                Err(ProbeError::MissingTable(_)) => self.deps.probe(rules, board),
                v => v,
            }
        } else {
            self.deps.probe(rules, board)
        }
    }

    fn has_table(&self, id: &TableId) -> bool {
        if *id == self.table {
            self.parts.has_table(id) || self.deps.has_table(id)
        } else {
            self.deps.has_table(id)
        }
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        if *id == self.table {
            self.parts.has_slots(id, slots) || self.deps.has_slots(id, slots)
        } else {
            self.deps.has_slots(id, slots)
        }
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        if *id == self.table {
            self.parts.table(id)
        } else {
            self.deps.table(id)
        }
    }
}

/// The part of exactly `slots` made of the parts of `id` in `done`: their codes in slot order,
/// the padding between slices illegal like every other impossible slot. Each part is appended
/// and freed in turn, so the table is not held twice.
pub(crate) fn assemble(
    id: TableId,
    index: TableIndex,
    slots: SlotRange,
    mut done: SliceDeps,
) -> Table {
    let size = slots.len() as usize;
    let mut codes = [0, 1].map(|_| Vec::with_capacity(size));
    for part in done.parts.take_parts(&id) {
        let start = (part.slots().start - slots.start) as usize;
        for (all, side) in codes.iter_mut().zip(Color::ALL) {
            all.resize(start, Value::ILLEGAL_CODE);
            all.extend(part.codes(side).iter());
        }
    }
    for all in &mut codes {
        all.resize(size, Value::ILLEGAL_CODE);
    }
    Table::part(index, id.rules, slots, codes)
}
