//! The retrograde solver of xqtb and its independent verifier.
//!
//! [`solve`] computes win/draw/loss and the distance to mate of every slot of a table by
//! retrograde analysis, level by level, on all threads of the current rayon pool; the result is
//! identical bit for bit for any thread count. [`verify`] re-derives every value from its
//! successors by forward move generation, sharing nothing with the solver's backward step. A
//! table is only ever handed on verified ([`solve_and_verify`]).
//!
//! A table with pawns can also be solved a pawn slice at a time ([`solve_range`],
//! [`solve_and_verify_range`]): each slice is a job of its own whose pawn advances, like its
//! captures, are read from the slices solved before. [`solve_by_slices`] does that for a whole
//! table in a given order and gives the same table as [`solve`].
//!
//! Pure computation: depends on the rules (`xiangqi`) and the table model (`xqtb-core`) only,
//! never on storage, async runtimes or the network.
//!
//! ```
//! use xqtb_core::{Probe, RuleSet, Signature, Value};
//! let sig: Signature = "KRvK".parse().unwrap();
//! let tables = solver::solve_closure_in_memory(&[sig], RuleSet::CyclesAreDraws, |_, _| {}).unwrap();
//! let board = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/9/R3K4 w").unwrap();
//! assert!(matches!(tables.probe(RuleSet::CyclesAreDraws, &board), Ok(Value::Win(_))));
//! ```

#![warn(missing_docs)]

mod asian;
mod capture;
mod position;
pub mod rules;
pub mod sample;
mod solve;
mod state;
mod verify;
mod verify_rules;

mod slices;

pub use slices::{SliceDeps, solve_by_slices};
pub use solve::{Progress, SolveError, solve, solve_range};
pub use verify::{VerifyError, verify, verify_reporting};

use std::sync::Arc;
use xqtb_core::{MemoryTables, Probe, RuleSet, Signature, SlotRange, Table, TableCounts, TableId};

/// Slots handed to one parallel task by the solver and the verifier: large enough to amortise
/// scheduling, small enough to balance two threads on the smallest tables.
pub const CHUNK_SLOTS: u64 = 1 << 13;

/// Why a table could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Solving failed.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// The solved table failed verification; it must not be stored.
    #[error(transparent)]
    Verify(#[from] Box<VerifyError>),
}

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
/// the slices its pawn advances lead into. A part that fails verification is an error, never
/// returned.
pub fn solve_and_verify_range(
    id: TableId,
    slots: SlotRange,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Table, TableCounts), JobError> {
    let table = solve_range(id, slots, deps, progress)?;
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
