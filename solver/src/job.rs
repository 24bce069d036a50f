//! Jobs as the workers run them: a table (or a union of its pawn slices) solved and then
//! verified, never handed on unverified; and the ways of solving many jobs in memory (a closure
//! of tables, a table slice by slice) that tests and local use need.

use crate::error::{JobError, SolveError};
use crate::level_groups::StateStore;
use crate::progress::Progress;
use crate::slices::{SliceDeps, assemble};
use crate::solve::{solve, solve_range, solve_range_in};
use crate::verify::verify_reporting;
use std::sync::Arc;
use xqtb_core::{
    MemoryTables, Probe, RuleSet, Signature, SlotRange, Table, TableCounts, TableId, TableIndex,
};

/// Solves and verifies one table. A table that fails verification is an error, never returned.
pub fn solve_and_verify(
    id: TableId,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Table, TableCounts), JobError> {
    let table = solve(id, deps, progress)?;
    let started = std::time::Instant::now();
    let counts = verify_reporting(&table, deps, progress)?;
    tracing::info!(table = %id, secs = started.elapsed().as_secs_f64(), "verified");
    Ok((table, counts))
}

/// Solves and verifies the slots `slots` of table `id` (a union of whole pawn slices, see
/// [`solve_range`]) as a part of the table. `deps` holds the tables its captures lead into and
/// the slices its pawn advances lead into; the retrograde phase holds its states as `store`
/// says ([`crate::solve_range_in`]). A part that fails verification is an error, never
/// returned.
pub fn solve_and_verify_range(
    id: TableId,
    slots: SlotRange,
    store: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Table, TableCounts), JobError> {
    let table = solve_range_in(id, slots, store, deps, progress)?;
    let started = std::time::Instant::now();
    let counts = verify_reporting(&table, deps, progress)?;
    tracing::info!(table = %id, %slots, secs = started.elapsed().as_secs_f64(), "verified");
    Ok((table, counts))
}

/// Solves `targets` and everything they depend on under `rules`, in dependency order, keeping
/// the tables in memory. `on_table` sees each finished table.
pub fn solve_closure_in_memory(
    targets: &[Signature],
    rules: RuleSet,
    mut on_table: impl FnMut(&Table, &TableCounts),
) -> Result<MemoryTables, JobError> {
    let mut tables = MemoryTables::new();
    for sig in xqtb_core::closure_of(targets) {
        let (table, counts) = solve_and_verify(TableId::new(rules, sig), &tables, &|_| {})?;
        on_table(&table, &counts);
        tables.insert(Arc::new(table));
    }
    Ok(tables)
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
            solve_and_verify_range(id, slots, StateStore::Memory, &done, progress)?.0
        } else {
            solve_range(id, slots, &done, progress)?
        };
        done.insert(Arc::new(part));
    }
    let whole = SlotRange::whole(&id.signature);
    Ok(assemble(id, index, whole, done))
}
