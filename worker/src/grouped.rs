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
    join_and_verify(id, parts, &legal, deps, progress)
}

/// Joins the encoded parts of table `id`, in slot order, into its blocks and verifies the table
/// from them, `legal` telling its legal entries.
fn join_and_verify(
    id: TableId,
    mut parts: Vec<EncodedTable>,
    legal: &solver::Legal,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(EncodedTable, TableCounts)> {
    let encoded = match parts.len() {
        1 => parts.pop().expect("one part"),
        _ => codec::assemble_parts(parts, SlotRange::whole(&id.signature))?,
    };
    let started = std::time::Instant::now();
    let counts = solver::verify_blocks(&EncodedBlocks::new(&encoded)?, legal, deps, progress)?;
    tracing::info!(table = %id, secs = started.elapsed().as_secs_f64(), "verified from its blocks");
    Ok((encoded, counts))
}

/// Solves, verifies and encodes the whole table `id` under `cycles-are-draws` with `workers`
/// workers (at most one per group) of `threads` threads each sharing it in this process
/// ([`solver::solve_shared_in_process`]), each keeping its groups of about `group_slots` slots
/// in a scratch directory of its own under `dir`. The encoded table is byte for byte what the
/// in-memory solve gives; each part is encoded as soon as its worker hands it over. Also
/// returns what each pass of the exchange carried.
pub fn solve_shared_in_process(
    id: TableId,
    workers: usize,
    threads: usize,
    group_slots: u64,
    dir: &std::path::Path,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(EncodedTable, TableCounts, Vec<solver::PassTraffic>)> {
    // A worker needs a group of its own: a table of fewer groups is shared by fewer workers.
    let slots = SlotRange::whole(&id.signature);
    let workers = workers.clamp(1, solver::group_count(slots.len(), group_slots));
    let scratch_for =
        |_worker: usize, _attempt: usize| -> std::io::Result<Box<dyn solver::Scratch>> {
            Ok(Box::new(crate::DirScratch::create(dir)?))
        };
    let run = solver::SharedRun {
        group_slots,
        threads,
        // Workers in one process fail together: nothing to replace.
        replacements: 0,
    };
    let parts = std::sync::Mutex::new(Vec::new());
    let encode = |_worker: usize, part: xqtb_core::Table| {
        let encoded = codec::encode_table(&part);
        parts.lock().expect("parts").push(encoded);
    };
    let (legal, traffic) =
        solver::solve_shared_in_process(id, slots, workers, run, &scratch_for, deps, &encode)?;
    let mut parts = parts.into_inner().expect("parts");
    parts.sort_by_key(|p| p.header.slots.start);
    let (encoded, counts) = join_and_verify(id, parts, &legal, deps, progress)?;
    Ok((encoded, counts, traffic))
}

#[cfg(test)]
mod tests {
    use storage_format::codec;
    use xqtb_core::{RuleSet, Signature, TableId};

    /// A table shared by three workers in one process (KRvKN in six groups, two each) is
    /// encoded byte for byte as the table solved whole in memory, and verified: the parts
    /// each worker hands over, joined, are the whole table.
    #[test]
    fn a_table_shared_in_process_encodes_as_the_whole_solve() {
        let sig: Signature = "KRvKN".parse().unwrap();
        let rules = RuleSet::CyclesAreDraws;
        let tables = solver::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
        let id = TableId::new(rules, sig);
        let whole = codec::encode_table(tables.get(&id).unwrap());
        let dir = std::env::temp_dir();
        let (encoded, counts, traffic) =
            super::solve_shared_in_process(id, 3, 1, 1 << 16, &dir, &tables, &|_| {}).unwrap();
        assert!(encoded == whole, "the shared table differs");
        assert_eq!(counts, whole.header.counts);
        assert!(traffic.iter().map(|t| t.bytes).sum::<u64>() > 0);
    }
}
