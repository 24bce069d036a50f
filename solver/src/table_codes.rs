//! Where the verifier's checks read the table's own codes: the whole decoded table, the
//! entries a sample needs ([`crate::sample`]), or blocks read as needed
//! ([`crate::block_reader`]); and a reader per thread ([`Readers`]), as the local pass and the
//! rule checks run on many threads.

use xiangqi::Color;
use xqtb_core::{RuleSet, SlotRange, Table, TableIndex};

/// Where the checks of one entry read the table's own codes: the whole decoded table or its
/// blocks for the verifier, only the entries a sample needs for the sample check of a table
/// still compressed ([`crate::sample`]).
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

/// Makes a [`Codes`] reader for each thread: a reader may keep what it read last for itself
/// (a block reader's front of blocks), so the threads do not share one.
pub(crate) trait Readers: Sync {
    /// The reader it makes.
    type Reader: Codes;
    /// A reader for the calling thread.
    fn reader(&self) -> Self::Reader;
}

impl<C: Codes, F: Fn() -> C + Sync> Readers for F {
    type Reader = C;
    #[inline]
    fn reader(&self) -> C {
        self()
    }
}

/// The codes of the slots `slots` of a reader's table (or part), read through the reader: a
/// pawn slice of a table verified slice by slice, without copying its codes out.
pub(crate) struct SliceCodes<C> {
    /// The reader of the whole.
    pub(crate) codes: C,
    /// The slots of the slice, within the whole's.
    pub(crate) slots: SlotRange,
}

impl<C: Codes> SliceCodes<C> {
    /// The whole's job slot of the slice's job slot `slot`.
    #[inline]
    fn outer(&self, slot: u64) -> u64 {
        self.slots.start - self.codes.slots().start + slot
    }
}

impl<C: Codes> Codes for SliceCodes<C> {
    fn index(&self) -> &TableIndex {
        self.codes.index()
    }
    fn rules(&self) -> RuleSet {
        self.codes.rules()
    }
    fn slots(&self) -> SlotRange {
        self.slots
    }
    #[inline]
    fn code(&self, side: Color, slot: u64) -> u16 {
        self.codes.code(side, self.outer(slot))
    }
    #[inline]
    fn prefetch(&self, side: Color, slot: u64) {
        self.codes.prefetch(side, self.outer(slot));
    }
}
