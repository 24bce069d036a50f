//! Names of units of data and work: a table ([`TableId`]: material and rule set), a range of
//! its slots ([`SlotRange`]) and a job ([`JobKey`]: a table's slots to solve). Today a job is
//! always a whole table; slices of a table are ranges of its slots.

use crate::index::TableIndex;
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

/// A half-open range `start..end` of a table's slots (per side to move; both sides of each slot
/// belong to the range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotRange {
    /// First slot.
    pub start: u64,
    /// One past the last slot.
    pub end: u64,
}

impl SlotRange {
    /// Every slot of `signature`'s index.
    pub fn whole(signature: &Signature) -> SlotRange {
        SlotRange {
            start: 0,
            end: TableIndex::size_of(signature),
        }
    }

    /// Number of slots.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether the range holds no slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for SlotRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
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
