//! The xqtb worker: the retrograde solver, its independent verifier, and the loop that solves a
//! whole dependency closure.

mod capture;
pub mod client;
mod position;
pub mod solve;
pub mod verify;

pub use solve::{Progress, SolveError, solve};
pub use verify::{TableStats, VerifyError, verify};

use std::sync::Arc;
use storage_format::{MemoryTables, Probe, RuleSet, Signature, Table};

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
    signature: Signature,
    rules: RuleSet,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Table, TableStats), JobError> {
    let table = solve(signature, rules, deps, progress)?;
    let started = std::time::Instant::now();
    let stats = verify(&table, deps)?;
    tracing::info!(table = %signature, secs = started.elapsed().as_secs_f64(), "verified");
    Ok((table, stats))
}

/// Solves `targets` and everything they depend on, in dependency order, keeping the tables in
/// memory. `on_table` sees each finished table.
pub fn solve_closure_in_memory(
    targets: &[Signature],
    rules: RuleSet,
    mut on_table: impl FnMut(&Table, &TableStats),
) -> Result<MemoryTables, JobError> {
    let mut tables = MemoryTables::new();
    for sig in storage_format::closure_of(targets) {
        let (table, stats) = solve_and_verify(sig, rules, &tables, &|_| {})?;
        on_table(&table, &stats);
        tables.insert(Arc::new(table));
    }
    Ok(tables)
}

/// Legal positions of a table per side to move, counted slot by slot.
pub fn count_legal_slots(index: &storage_format::TableIndex) -> [u64; 2] {
    use rayon::prelude::*;
    (0..index.size())
        .into_par_iter()
        .map(|slot| index.legal_sides(slot).map(u64::from))
        .reduce(|| [0, 0], |a, b| [a[0] + b[0], a[1] + b[1]])
}
