//! A job whose retrograde states are kept in groups on local disk ([`solver::StateStore::Groups`]),
//! taken from solving to its encoded table without the table ever being whole in memory under
//! `cycles-are-draws`: each group's values are encoded as a part as soon as they are final, the
//! parts joined into the table's blocks, and the table verified from those blocks.

use anyhow::Result;
use solver::{Progress, StateStore};
use storage_format::codec::{self, EncodedBlocks, EncodedTable};
use xqtb_core::{Probe, RuleSet, SlotRange, TableCounts, TableId};

/// Solves, verifies and encodes the slots `slots` of table `id` with its states held as
/// `states` says; the encoded table is byte for byte what encoding the in-memory solve gives.
/// Under `asian` the rule phase and the verifier still take the table whole.
pub fn solve_in_groups(
    id: TableId,
    slots: SlotRange,
    states: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(EncodedTable, TableCounts)> {
    let whole = slots == SlotRange::whole(&id.signature);
    if id.rules != RuleSet::CyclesAreDraws || !whole {
        let (table, counts) = solver::solve_and_verify_range(id, slots, states, deps, progress)?;
        return Ok((codec::encode_table(&table), counts));
    }
    let mut parts = Vec::new();
    let mut encode = |part: xqtb_core::Table| parts.push(codec::encode_table(&part));
    let legal = solver::solve_range_in_parts(id, slots, states, deps, progress, &mut encode)?;
    let encoded = match parts.len() {
        1 => parts.pop().expect("one part"),
        _ => codec::assemble_parts(parts)?,
    };
    let started = std::time::Instant::now();
    let counts = solver::verify_blocks(&EncodedBlocks::new(&encoded)?, &legal, deps, progress)?;
    tracing::info!(table = %id, secs = started.elapsed().as_secs_f64(), "verified from its blocks");
    Ok((encoded, counts))
}
