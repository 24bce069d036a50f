//! Where the verifier's checks of one entry read the table's own codes: the whole decoded
//! table, the entries a sample needs ([`crate::sample`]), or blocks read as needed
//! ([`crate::block_reader`]).

use xiangqi::Color;
use xqtb_core::{RuleSet, SlotRange, Table, TableIndex};

/// Where the checks of one entry read the table's own codes: the whole decoded table for the
/// verifier, only the entries a sample needs for the sample check of a table still compressed
/// ([`crate::sample`]).
pub(crate) trait Codes {
    /// The table's index.
    fn index(&self) -> &TableIndex;
    /// The table's rule set.
    fn rules(&self) -> RuleSet;
    /// The slots the codes are of (all of the index, or a part's).
    fn slots(&self) -> SlotRange;
    /// The code of job slot `slot` (slot minus [`Codes::slots`]' start) with `side` to move
    /// ([`Value::ILLEGAL_CODE`] where illegal).
    fn code(&self, side: Color, slot: u64) -> u16;
    /// Hints that [`Codes::code`] of this entry comes soon.
    fn prefetch(&self, _side: Color, _slot: u64) {}
}

impl<T: Codes + ?Sized> Codes for &T {
    fn index(&self) -> &TableIndex {
        T::index(self)
    }
    fn rules(&self) -> RuleSet {
        T::rules(self)
    }
    fn slots(&self) -> SlotRange {
        T::slots(self)
    }
    #[inline]
    fn code(&self, side: Color, slot: u64) -> u16 {
        T::code(self, side, slot)
    }
    #[inline]
    fn prefetch(&self, side: Color, slot: u64) {
        T::prefetch(self, side, slot)
    }
}

impl Codes for Table {
    fn index(&self) -> &TableIndex {
        Table::index(self)
    }
    fn rules(&self) -> RuleSet {
        Table::rules(self)
    }
    fn slots(&self) -> SlotRange {
        Table::slots(self)
    }
    #[inline]
    fn code(&self, side: Color, slot: u64) -> u16 {
        self.codes(side).get(slot as usize)
    }
    #[inline]
    fn prefetch(&self, side: Color, slot: u64) {
        self.codes(side).prefetch(slot as usize);
    }
}
