//! Names of units of data and work: a table ([`TableId`]: material and rule set), a range of
//! its slots ([`SlotRange`]) and a job ([`JobKey`]: a table's slots to solve: the whole table,
//! or one pawn slice of a large table with pawns, see [`crate::Slice`]).

use crate::index::{SlotRange, TableIndex};
use crate::rules::RuleSet;
use crate::signature::Signature;
use std::fmt;

/// One table: a canonical material signature solved under one rule set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId {
    /// The rule set the table is solved under.
    pub rules: RuleSet,
    /// The material.
    pub signature: Signature,
}

impl TableId {
    /// The table of `signature` under `rules`.
    pub const fn new(rules: RuleSet, signature: Signature) -> TableId {
        TableId { rules, signature }
    }

    /// The tables its captures lead into, under the same rule set (see
    /// [`Signature::capture_targets`]).
    pub fn dependencies(&self) -> Vec<TableId> {
        self.signature
            .capture_targets()
            .into_iter()
            .map(|s| TableId::new(self.rules, s))
            .collect()
    }
}

impl fmt::Display for TableId {
    /// `KRNvKR (cycles-are-draws)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.signature, self.rules)
    }
}

/// The union of the closures of `targets` (tables of any rule sets), each table once, the
/// tables of each rule set dependencies first, rule sets in [`RuleSet::ALL`] order.
pub fn closure_of_tables(targets: &[TableId]) -> Vec<TableId> {
    RuleSet::ALL
        .iter()
        .flat_map(|&rules| {
            let roots: Vec<Signature> = targets
                .iter()
                .filter(|t| t.rules == rules)
                .map(|t| t.signature)
                .collect();
            crate::signature::closure_of(&roots)
                .into_iter()
                .map(move |s| TableId::new(rules, s))
        })
        .collect()
}

/// One job of the cluster: the slots of a table to solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    /// The table.
    pub table: TableId,
    /// Its slots to solve.
    pub slots: SlotRange,
}

impl JobKey {
    /// The job that solves all of `table`.
    pub fn whole(table: TableId) -> JobKey {
        JobKey {
            table,
            slots: SlotRange::whole(&table.signature),
        }
    }

    /// The jobs that solve `table`: one per pawn slice (its span, padding included) when the
    /// table has more than one slice and at least `slice_from_entries` entries, else one job
    /// for the whole table.
    pub fn jobs_of(table: TableId, slice_from_entries: u64) -> Vec<JobKey> {
        let whole = JobKey::whole(table);
        let slices = TableIndex::slices_of(&table.signature);
        if slices.len() < 2 || whole.entries() < slice_from_entries {
            return vec![whole];
        }
        slices
            .iter()
            .map(|(_, span)| JobKey {
                table,
                slots: *span,
            })
            .collect()
    }

    /// The other parts of its own table this job reads: the spans of the slices its slices'
    /// pawn advances lead into, outside its own slots, in slot order. Empty for a whole table.
    pub fn slice_dependencies(&self) -> Vec<SlotRange> {
        if self.is_whole_table() {
            return Vec::new();
        }
        let slices = TableIndex::slices_of(&self.table.signature);
        let inside = |r: &SlotRange| r.start >= self.slots.start && r.end <= self.slots.end;
        let mut out: Vec<SlotRange> = slices
            .iter()
            .filter(|(_, span)| inside(span))
            .flat_map(|(s, _)| s.advances_into.iter().map(|&j| slices[j].1))
            .filter(|span| !inside(span))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether the job covers its whole table.
    pub fn is_whole_table(&self) -> bool {
        self.slots == SlotRange::whole(&self.table.signature)
    }

    /// Index entries (slots times both sides to move) the job solves.
    pub fn entries(&self) -> u64 {
        2 * self.slots.len()
    }
}

impl fmt::Display for JobKey {
    /// `KRNvKR (cycles-are-draws)`, with `slots a..b` when the job is not the whole table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_whole_table() {
            write!(f, "{}", self.table)
        } else {
            write!(f, "{} slots {}", self.table, self.slots)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_pawn_table_is_one_job_per_slice_and_each_reads_the_slices_before_it() {
        let table = TableId::new(RuleSet::Asian, "KPPvKR".parse().unwrap());
        assert_eq!(JobKey::jobs_of(table, u64::MAX), vec![JobKey::whole(table)]);
        let jobs = JobKey::jobs_of(table, 0);
        let slices = TableIndex::slices_of(&table.signature);
        assert_eq!(jobs.len(), slices.len());
        let mut next = 0;
        for (i, job) in jobs.iter().enumerate() {
            assert_eq!(job.slots.start, next);
            next = job.slots.end;
            let deps = job.slice_dependencies();
            assert!(
                deps.iter().all(|d| d.end <= job.slots.start),
                "{job}: {deps:?}"
            );
            assert_eq!(deps.len(), slices[i].0.advances_into.len());
        }
        assert_eq!(next, TableIndex::size_of(&table.signature));
        // The most advanced slice reads no other; every other reads at least one.
        assert!(jobs[0].slice_dependencies().is_empty());
        assert!(jobs[1..].iter().all(|j| !j.slice_dependencies().is_empty()));
        let plain = TableId::new(RuleSet::Asian, "KRNvKR".parse().unwrap());
        assert_eq!(JobKey::jobs_of(plain, 0), vec![JobKey::whole(plain)]);
    }
}
