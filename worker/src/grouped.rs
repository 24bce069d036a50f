//! A job whose retrograde states are kept in groups on local disk ([`solver::StateStore::Groups`]),
//! taken from solving to its encoded table. Under `cycles-are-draws` the table is never whole
//! in memory: each group's values are encoded as a part as soon as they are final, the parts
//! joined into the table's blocks, and the table verified from those blocks
//! ([`solver::verify_blocks`]). Under `asian` the rule phase takes the job whole, so the job's
//! peak is there and the table is verified whole in memory: from its blocks
//! ([`solver::verify_blocks`] can) it would cost more CPU and lower no peak, until the rule
//! phase works a group at a time too.

use anyhow::Result;
use solver::{Progress, StateStore};
use storage_format::codec::{self, EncodedBlocks, EncodedTable};
use xqtb_core::{Probe, RuleSet, SlotRange, TableCounts, TableId};

/// Solves, verifies and encodes the slots `slots` of table `id` (the whole table or a pawn
/// slice) with its states held as `states` says; the encoded table or part is byte for byte
/// what encoding the in-memory solve gives, and verified (from its encoded blocks under
/// `cycles-are-draws`, whole in memory under `asian`).
pub fn solve_in_groups(
    id: TableId,
    slots: SlotRange,
    states: StateStore,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(EncodedTable, TableCounts)> {
    if id.rules != RuleSet::CyclesAreDraws {
        let (table, counts) = solver::solve_and_verify_range(id, slots, states, deps, progress)?;
        return Ok((codec::encode_table(&table), counts));
    }
    let mut parts = Vec::new();
    let mut encode = |part: xqtb_core::Table| parts.push(codec::encode_table(&part));
    let legal = solver::solve_range_in_parts(id, slots, states, deps, progress, &mut encode)?;
    join_and_verify(id, slots, parts, &legal, deps, progress)
}

/// Joins the encoded parts of slots `slots` of table `id`, in slot order, into their blocks
/// and verifies them from those blocks, `legal` telling their legal entries.
fn join_and_verify(
    id: TableId,
    slots: SlotRange,
    mut parts: Vec<EncodedTable>,
    legal: &solver::Legal,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(EncodedTable, TableCounts)> {
    let encoded = match parts.len() {
        1 => parts.pop().expect("one part"),
        _ => codec::assemble_parts(parts, slots)?,
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
        // As a worker with a seat's memory does.
        sends: solver::Sends::WrittenEntries,
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
    let (encoded, counts) = join_and_verify(id, slots, parts, &legal, deps, progress)?;
    Ok((encoded, counts, traffic))
}

#[cfg(test)]
mod tests {
    use storage_format::codec;
    use xiangqi::Color;
    use xqtb_core::{Probe, RuleSet, Signature, TableId, Value};

    /// Slots `slots` of table `id` solved with their states in groups of 65,536 slots on disk
    /// ([`super::solve_in_groups`]) are encoded byte for byte as their in-memory solve, and
    /// counted as it is verified.
    fn in_groups_as_in_memory(id: TableId, slots: xqtb_core::SlotRange, deps: &dyn Probe) {
        let memory = solver::StateStore::Memory;
        let (table, counts) =
            solver::solve_and_verify_range(id, slots, memory, deps, &|_| {}).unwrap();
        let dir = std::env::temp_dir().join(format!(
            "xqtb-groups-{}-{}-{}",
            id.signature,
            id.rules,
            std::process::id()
        ));
        let scratch = crate::DirScratch::create(&dir).unwrap();
        let states = solver::StateStore::Groups {
            group_slots: 1 << 16,
            scratch: &scratch,
            share: None,
        };
        let (encoded, grouped) = super::solve_in_groups(id, slots, states, deps, &|_| {}).unwrap();
        assert!(
            encoded == codec::encode_table(&table),
            "{id} {slots}: the tables differ"
        );
        assert_eq!(grouped, counts, "{id} {slots}");
        assert_eq!(grouped, encoded.header.counts, "{id} {slots}");
        drop(scratch);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A pawn slice solved with its states in groups on disk is the part its in-memory solve
    /// encodes to, byte for byte: under `cycles-are-draws` each group's values encoded as a
    /// part and the parts joined, under `asian` the levels in groups and the rule phase whole.
    #[test]
    fn a_pawn_slice_in_groups_encodes_as_in_memory() {
        let sig: Signature = "KRPvKA".parse().unwrap();
        for rules in [RuleSet::CyclesAreDraws, RuleSet::Asian] {
            let tables = solver::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
            let id = TableId::new(rules, sig);
            // The widest slice, past one group of 65,536 slots.
            let key = xqtb_core::JobKey::jobs_of(id, 0)
                .into_iter()
                .max_by_key(|k| k.slots.len())
                .unwrap();
            assert!(!key.is_whole_table() && key.slots.len() > 1 << 16);
            in_groups_as_in_memory(id, key.slots, &tables);
        }
    }

    /// Whole `asian` tables with rule values solved with their states in groups on disk,
    /// one without pawns and one of several pawn slices, are encoded as their in-memory
    /// solves.
    #[test]
    fn an_asian_table_in_groups_encodes_as_in_memory() {
        let rules = RuleSet::Asian;
        for name in ["KRvKN", "KNvKPP"] {
            let sig: Signature = name.parse().unwrap();
            // Without the table itself: the slices of one are read from its own blocks.
            let below: Vec<Signature> = sig.closure().into_iter().filter(|&d| d != sig).collect();
            let tables = solver::solve_closure_in_memory(&below, rules, |_, _| {}).unwrap();
            let id = TableId::new(rules, sig);
            let table = solver::solve(id, &tables, &|_| {}).unwrap();
            assert!(
                [Color::Red, Color::Black].iter().any(|&side| table
                    .codes(side)
                    .iter()
                    .any(|c| Value::decode(c).rule().is_some())),
                "{name} has rule values"
            );
            let whole = xqtb_core::SlotRange::whole(&sig);
            in_groups_as_in_memory(id, whole, &tables);
        }
    }

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
