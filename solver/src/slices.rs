//! Solving a table slice by slice: each pawn slice a job of its own ([`crate::solve_range`]),
//! in an order in which every slice comes after the slices its pawn advances lead into, the
//! finished parts kept in memory for the jobs after them. For tests and local use: the cluster
//! runs the same jobs on many workers, with the parts in its store.

use crate::{JobError, Progress, SolveError, solve_and_verify_range, solve_range};
use std::sync::Arc;
use xiangqi::Board;
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

/// Solves table `id` slice by slice in the order `order` (positions in
/// [`TableIndex::slices`], each once; a slice after every slice its pawn advances lead into,
/// or the job of the first one out of order fails with [`SolveError::MissingSlice`]), each as
/// a separate [`solve_range`] job reading the parts before it, and verifies each part when
/// `verify` is set. Returns the whole table: the parts' codes in slot order, the padding
/// between slices illegal like every other impossible slot. `deps` holds the tables the
/// captures lead into.
pub fn solve_by_slices(
    id: TableId,
    deps: &dyn Probe,
    order: &[usize],
    verify_parts: bool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, JobError> {
    let index = TableIndex::new(id.signature);
    let slices = index.slices();
    let mut seen = vec![false; slices.len()];
    for &s in order {
        if s >= slices.len() || std::mem::replace(&mut seen[s], true) {
            return Err(SolveError::SliceOrder {
                table: id.signature,
                reason: format!("slice {s} is not one of the table's or comes twice"),
            }
            .into());
        }
    }
    if let Some(s) = seen.iter().position(|&x| !x) {
        return Err(SolveError::SliceOrder {
            table: id.signature,
            reason: format!("slice {s} is missing"),
        }
        .into());
    }
    let mut done = SliceDeps::new(id, deps);
    for &s in order {
        let slots = slices[s].slots;
        let part = if verify_parts {
            solve_and_verify_range(id, slots, &done, progress)?.0
        } else {
            solve_range(id, slots, &done, progress)?
        };
        done.insert(Arc::new(part));
    }
    let whole = SlotRange::whole(&id.signature);
    Ok(assemble(id, index, whole, done))
}

/// Solves the slices of `slots` (more than one, checked by the caller to be whole slices whose
/// advances out of `slots` `deps` holds) one job each, in slot order (the most advanced first,
/// so each comes after those its advances lead into), and returns the part of exactly `slots`.
pub(crate) fn solve_in_slot_order(
    id: TableId,
    index: TableIndex,
    slots: SlotRange,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Table, SolveError> {
    let mut done = SliceDeps::new(id, deps);
    for slice in index.slices() {
        if slots.start <= slice.slots.start && slice.slots.end <= slots.end {
            done.insert(Arc::new(solve_range(id, slice.slots, &done, progress)?));
        }
    }
    Ok(assemble(id, index, slots, done))
}

/// The part of exactly `slots` made of the parts of `id` in `done`: their codes in slot order,
/// the padding between slices illegal like every other impossible slot. Each part is appended
/// and freed in turn, so the table is not held twice.
fn assemble(id: TableId, index: TableIndex, slots: SlotRange, mut done: SliceDeps) -> Table {
    let size = slots.len() as usize;
    let mut codes = [0, 1].map(|_| Vec::with_capacity(size));
    for part in done.parts.take_parts(&id) {
        let start = (part.slots().start - slots.start) as usize;
        let part = Arc::try_unwrap(part).unwrap_or_else(|shared| (*shared).clone());
        for (all, c) in codes.iter_mut().zip(part.into_codes()) {
            all.resize(start, Value::ILLEGAL_CODE);
            all.extend_from_slice(&c);
        }
    }
    for all in &mut codes {
        all.resize(size, Value::ILLEGAL_CODE);
    }
    Table::part(index, id.rules, slots, codes)
}
