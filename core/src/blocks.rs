//! A table read a block of codes at a time, such as one still compressed: what the checks
//! that must not hold a large table decoded (the coordinator's sample check, the verification
//! of a table solved in groups) read it through.

use crate::{RuleSet, SlotRange, Table, TableIndex};
use xiangqi::Color;

/// A table whose codes are read a block at a time, such as an upload still compressed: the
/// sample check then holds only the blocks it is decoding and the codes its sample needs, not
/// the decoded table (two bytes per entry).
pub trait BlockSource: Sync {
    /// The table's index.
    fn index(&self) -> &TableIndex;
    /// The table's rule set.
    fn rules(&self) -> RuleSet;
    /// The slots the source holds: all of the index unless it is a part of a table.
    fn slots(&self) -> SlotRange {
        SlotRange {
            start: 0,
            end: self.index().size(),
        }
    }
    /// Slots per block: block `b` of a side holds the source's slots `b * block_slots ..`
    /// (counted from [`BlockSource::slots`]' start), the last block what is left.
    fn block_slots(&self) -> u64;
    /// The codes of `side`'s block `block`. Illegal slots may hold anything: legality is taken
    /// from the index, as the decoder restores it.
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String>;
}

/// A decoded table is its own block source (blocks of 2^16 slots).
impl BlockSource for Table {
    fn index(&self) -> &TableIndex {
        Table::index(self)
    }
    fn rules(&self) -> RuleSet {
        Table::rules(self)
    }
    fn slots(&self) -> SlotRange {
        Table::slots(self)
    }
    fn block_slots(&self) -> u64 {
        1 << 16
    }
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
        let codes = self.codes(side);
        let start = (block << 16) as usize;
        let end = (start + (1 << 16)).min(codes.len());
        Ok(codes.slice(start.min(end)..end).into_owned())
    }
}
