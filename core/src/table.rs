//! Solved tables in memory, the lookup of any position in a set of tables ([`Probe`]), and why a
//! lookup can fail ([`ProbeError`]).

use crate::codes::Codes;
use crate::index::SlotRange;
use crate::index::TableIndex;
use crate::key::TableId;
use crate::rules::RuleSet;
use crate::signature::{Material, Signature};
use crate::value::Value;
use std::collections::HashMap;
use std::sync::Arc;
use thiserror::Error;
use xiangqi::{Board, Color};

/// Why a position could not be looked up.
#[derive(Debug, Clone, Error)]
pub enum ProbeError {
    /// The table for the position's material is not available.
    #[error("table {0} is not available")]
    MissingTable(TableId),
    /// The position is not legal.
    #[error("illegal position: {0}")]
    Illegal(String),
    /// Reading the table failed; `source` says why.
    #[error("reading table {table} failed: {source}")]
    Storage {
        /// The table.
        table: TableId,
        /// What went wrong.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The table is not in the store or shard directory being probed.
    #[error("table {} is not in the store ({store}; rule set {})", table.signature, table.rules)]
    NotInStore {
        /// The table.
        table: TableId,
        /// The store, e.g. `sled store ./xqtb-data`.
        store: String,
    },
    /// The FEN does not parse or describes an illegal position; carries the parser's reason.
    #[error("bad FEN: {0}")]
    BadFen(String),
    /// More pieces than any table holds.
    #[error("the position has {pieces} pieces; tables hold at most {max}")]
    TooManyPieces {
        /// Pieces on the board, kings included.
        pieces: u32,
        /// Most pieces a table holds.
        max: u32,
    },
}

impl ProbeError {
    /// A storage fault of `table` with the error that caused it.
    pub fn storage(
        table: TableId,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ProbeError::Storage {
            table,
            source: Arc::from(source.into()),
        }
    }
}

impl PartialEq for ProbeError {
    fn eq(&self, other: &Self) -> bool {
        use ProbeError::*;
        match (self, other) {
            (MissingTable(a), MissingTable(b)) => a == b,
            (Illegal(a), Illegal(b)) | (BadFen(a), BadFen(b)) => a == b,
            (
                Storage {
                    table: a,
                    source: x,
                },
                Storage {
                    table: b,
                    source: y,
                },
            ) => a == b && x.to_string() == y.to_string(),
            (NotInStore { table: a, store: x }, NotInStore { table: b, store: y }) => {
                a == b && x == y
            }
            (TooManyPieces { pieces: a, max: x }, TooManyPieces { pieces: b, max: y }) => {
                a == b && x == y
            }
            _ => false,
        }
    }
}

impl Eq for ProbeError {}

/// A solved table, or a solved part of one (a range of its slots, such as a pawn slice): its
/// rule set and the values of its slots for both sides to move.
#[derive(Clone)]
pub struct Table {
    index: TableIndex,
    rules: RuleSet,
    /// The slots held: every slot of the index for a whole table.
    slots: SlotRange,
    /// Encoded [`Value`]s, indexed by side to move then slot minus `slots.start`.
    codes: [Codes; 2],
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Table({}, slots {} of {} per side)",
            self.id(),
            self.slots,
            self.index.size()
        )
    }
}

impl Table {
    /// A table of `index` solved under `rules`, from the encoded values of each side to move
    /// ([`Value::encode`]; [`Value::ILLEGAL_CODE`] for slots without a legal position).
    ///
    /// Each side's codes are held a byte per slot when they are few enough ([`Codes`]): given
    /// as vectors, they are narrowed one side at a time.
    ///
    /// # Panics
    /// If a side's codes do not cover the index exactly (a programming error).
    pub fn new(index: TableIndex, rules: RuleSet, codes: [impl Into<Codes>; 2]) -> Table {
        let slots = SlotRange {
            start: 0,
            end: index.size(),
        };
        Table::part(index, rules, slots, codes)
    }

    /// The part of a table of `index` that holds the slots `slots`, from the encoded values of
    /// each side to move (the first code is slot `slots.start`'s).
    ///
    /// # Panics
    /// If `slots` is not within the index or a side's codes do not cover it exactly (a
    /// programming error).
    pub fn part(
        index: TableIndex,
        rules: RuleSet,
        slots: SlotRange,
        codes: [impl Into<Codes>; 2],
    ) -> Table {
        assert!(
            slots.start <= slots.end && slots.end <= index.size(),
            "slots {slots} are not within the index"
        );
        let codes = codes.map(Into::into);
        for c in &codes {
            assert_eq!(c.len() as u64, slots.len(), "values do not match the slots");
        }
        Table {
            index,
            rules,
            slots,
            codes,
        }
    }

    /// The slots this table holds (all of its index unless it is a part).
    #[inline]
    pub fn slots(&self) -> SlotRange {
        self.slots
    }

    /// Whether this holds every slot of its index.
    pub fn is_whole(&self) -> bool {
        self.slots.start == 0 && self.slots.end == self.index.size()
    }

    /// Whether slot `slot` is held.
    #[inline]
    pub fn holds(&self, slot: u64) -> bool {
        self.slots.start <= slot && slot < self.slots.end
    }

    /// The index the values are laid out by.
    #[inline]
    pub fn index(&self) -> &TableIndex {
        &self.index
    }

    /// The rule set the table was solved under.
    #[inline]
    pub fn rules(&self) -> RuleSet {
        self.rules
    }

    /// The table's signature.
    pub fn signature(&self) -> Signature {
        self.index.signature()
    }

    /// Which table this is: signature and rule set.
    pub fn id(&self) -> TableId {
        TableId::new(self.rules, self.signature())
    }

    /// The value of `slot` (one of the held slots) with `side` to move.
    #[inline]
    pub fn value(&self, side: Color, slot: u64) -> Value {
        Value::decode(self.codes[side.index()].get((slot - self.slots.start) as usize))
    }

    /// The encoded values of `side` to move, by slot (from [`Table::slots`]'s start).
    #[inline]
    pub fn codes(&self, side: Color) -> &Codes {
        &self.codes[side.index()]
    }

    /// The encoded values of both sides to move, taken out of the table, two bytes each.
    pub fn into_codes(self) -> [Vec<u16>; 2] {
        self.codes.map(Codes::into_vec)
    }

    /// Sets the code of slot `i` (from [`Table::slots`]'s start) with `side` to move (tests and
    /// fault injection corrupt tables this way). A code the table did not hold may cost that
    /// side's codes two bytes per slot.
    ///
    /// # Panics
    /// If `i` is not below the number of slots held.
    pub fn set_code(&mut self, side: Color, i: usize, code: u16) {
        self.codes[side.index()].set(i, code);
    }

    /// Replaces every code by `f(side, i, code)` (`i` counted from [`Table::slots`]'s start),
    /// Red's slots then Black's, in slot order. The new codes are held a byte per slot when
    /// they are few enough, as by [`Table::new`].
    pub fn map_codes(&mut self, mut f: impl FnMut(Color, usize, u16) -> u16) {
        for side in Color::ALL {
            let codes = &mut self.codes[side.index()];
            let new: Vec<u16> = codes
                .iter()
                .enumerate()
                .map(|(i, c)| f(side, i, c))
                .collect();
            *codes = new.into();
        }
    }
}

/// Where a position lives: its canonical table, side to move and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The canonical table's signature.
    pub signature: Signature,
    /// Side to move in the canonical orientation.
    pub side: Color,
    /// Slot in that table.
    pub slot: u64,
}

/// How a position is turned into the orientation of its canonical table: the canonical
/// signature of its material, and whether the board is rotated by 180 degrees with the colours
/// swapped (when Black holds the stronger side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Orientation {
    /// The canonical signature.
    pub signature: Signature,
    /// Whether the canonical table sees the board rotated with colours swapped.
    pub rotated: bool,
}

impl Orientation {
    /// The orientation of `material`.
    pub fn of_material(material: &Material) -> Orientation {
        Orientation {
            signature: Signature::new(*material),
            rotated: material.black_is_stronger(),
        }
    }

    /// The orientation of the material on `board`.
    pub fn of_board(board: &Board) -> Orientation {
        Orientation::of_material(&Material::of_board(board))
    }

    /// The side to move in the canonical table when `side` is to move on the board.
    #[inline]
    pub fn side(&self, side: Color) -> Color {
        if self.rotated { side.opponent() } else { side }
    }

    /// The canonical table's point of board square number `square`.
    #[inline]
    pub fn square(&self, square: u8) -> u8 {
        if self.rotated { 89 - square } else { square }
    }
}

/// Anything that answers "what is this position worth": a set of tables in memory, a store, a
/// directory of shard files. Values are asked for under one rule set at a time.
pub trait Probe: Sync {
    /// The value of `board` with its side to move, in the tables of `rules`. Dead-draw material
    /// is a draw without a table.
    fn probe(&self, rules: RuleSet, board: &Board) -> Result<Value, ProbeError>;

    /// Whether the table `id` is available whole.
    fn has_table(&self, id: &TableId) -> bool;

    /// Whether every slot of `slots` of table `id` is available (a whole table, or a part that
    /// holds them: the solver of a pawn slice needs the slices its pawn advances lead into).
    fn has_slots(&self, id: &TableId, _slots: SlotRange) -> bool {
        self.has_table(id)
    }

    /// The whole table `id` when it is held in memory (the solver then reads it directly).
    fn table(&self, _id: &TableId) -> Option<&Table> {
        None
    }
}

/// Solved tables held in memory, keyed by table (signature and rule set), whole or in parts.
#[derive(Default, Clone)]
pub struct MemoryTables {
    tables: HashMap<TableId, Arc<Table>>,
    /// Parts of tables not held whole, by their first slot.
    parts: HashMap<TableId, Vec<Arc<Table>>>,
}

impl MemoryTables {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a table, or adds a part of one (replacing a part with the same first
    /// slot). A whole table replaces its parts.
    pub fn insert(&mut self, table: Arc<Table>) {
        let id = table.id();
        if table.is_whole() {
            self.parts.remove(&id);
            self.tables.insert(id, table);
            return;
        }
        let parts = self.parts.entry(id).or_default();
        let start = table.slots().start;
        match parts.binary_search_by_key(&start, |p| p.slots().start) {
            Ok(i) => parts[i] = table,
            Err(i) => parts.insert(i, table),
        }
    }

    /// The whole table `id`, if held.
    pub fn get(&self, id: &TableId) -> Option<&Arc<Table>> {
        self.tables.get(id)
    }

    /// The held table or part of `id` that holds `slot`.
    pub fn holding(&self, id: &TableId, slot: u64) -> Option<&Arc<Table>> {
        if let Some(t) = self.tables.get(id) {
            return Some(t);
        }
        part_holding(self.parts.get(id)?, slot)
    }

    /// Keeps only the tables (and parts) `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&TableId) -> bool) {
        self.tables.retain(|id, _| keep(id));
        self.parts.retain(|id, _| keep(id));
    }

    /// The held parts of `id`, in slot order (none when it is held whole).
    pub fn parts_of(&self, id: &TableId) -> &[Arc<Table>] {
        self.parts.get(id).map_or(&[], |p| p.as_slice())
    }

    /// Takes the held parts of `id` out of the set, in slot order.
    pub fn take_parts(&mut self, id: &TableId) -> Vec<Arc<Table>> {
        self.parts.remove(id).unwrap_or_default()
    }

    /// Whether `id` is held whole.
    pub fn contains(&self, id: &TableId) -> bool {
        self.tables.contains_key(id)
    }

    /// Whether every slot of `slots` of `id` is held, whole or by parts.
    pub fn contains_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        if self.contains(id) {
            return true;
        }
        let mut next = slots.start;
        while next < slots.end {
            match self.holding(id, next) {
                Some(p) => next = p.slots().end,
                None => return false,
            }
        }
        true
    }

    /// Locates `board` in its table of `rules`: `None` for dead-draw material.
    pub fn locate(
        &self,
        rules: RuleSet,
        board: &Board,
    ) -> Result<Option<(Location, &Table)>, ProbeError> {
        let o = Orientation::of_board(board);
        if o.signature.is_dead_draw() {
            return Ok(None);
        }
        let id = TableId::new(rules, o.signature);
        let slot_in = |t: &Table| {
            t.index
                .slot_of(board, o.rotated)
                .map_err(|e| ProbeError::Illegal(e.to_string()))
        };
        // One lookup of the id for a table held whole, as every capture probe of the solver
        // and the verifier finds it: this runs once per capture, so a second hash of the id
        // would show in every solve.
        let (slot, table) = match self.tables.get(&id) {
            Some(t) => (slot_in(t)?, &**t),
            None => {
                let parts = self.parts.get(&id).ok_or(ProbeError::MissingTable(id))?;
                let slot = slot_in(parts.first().ok_or(ProbeError::MissingTable(id))?)?;
                let part = part_holding(parts, slot).ok_or(ProbeError::MissingTable(id))?;
                (slot, &**part)
            }
        };
        Ok(Some((
            Location {
                signature: o.signature,
                side: o.side(board.side_to_move()),
                slot,
            },
            table,
        )))
    }
}

/// The part of `parts` (in slot order) that holds `slot`.
fn part_holding(parts: &[Arc<Table>], slot: u64) -> Option<&Arc<Table>> {
    let i = parts.partition_point(|p| p.slots().start <= slot);
    parts[..i].last().filter(|p| p.holds(slot))
}

impl Probe for MemoryTables {
    fn has_table(&self, id: &TableId) -> bool {
        self.contains(id)
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        self.contains_slots(id, slots)
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        self.get(id).map(|t| &**t)
    }

    fn probe(&self, rules: RuleSet, board: &Board) -> Result<Value, ProbeError> {
        let in_check = || ProbeError::Illegal("the side not to move is in check".into());
        match self.locate(rules, board)? {
            None if board.opponent_in_check() => Err(in_check()),
            None => Ok(Value::Draw),
            Some((loc, table)) => match table.value(loc.side, loc.slot) {
                Value::Illegal => Err(in_check()),
                v => Ok(v),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KRvK table (values need not be consistent here) whose Red codes are `red(i)`, Black's
    /// all draws.
    fn table_of(red: impl Fn(usize) -> u16) -> (Table, [Vec<u16>; 2]) {
        let index = TableIndex::new("KRvK".parse().unwrap());
        let n = index.size() as usize;
        let codes = [(0..n).map(red).collect(), vec![0; n]];
        let t = Table::new(index, RuleSet::CyclesAreDraws, codes.clone());
        (t, codes)
    }

    fn check(t: &Table, want: &[Vec<u16>; 2]) {
        for side in Color::ALL {
            let w = &want[side.index()];
            assert!(t.codes(side).iter().eq(w.iter().copied()), "{side}");
            for slot in [0, 1, w.len() as u64 / 2, w.len() as u64 - 1] {
                assert_eq!(t.value(side, slot), Value::decode(w[slot as usize]));
            }
        }
        assert_eq!(&t.clone().into_codes(), want);
    }

    #[test]
    fn a_table_of_few_codes_holds_a_byte_per_slot_and_reads_the_same() {
        let (t, want) = table_of(|i| (i % 200) as u16);
        assert!(Color::ALL.iter().all(|&s| t.codes(s).is_narrow()));
        check(&t, &want);
        // 257 codes for Red: only Black's are a byte each.
        let (t, want) = table_of(|i| (i % 257) as u16);
        assert!(!t.codes(Color::Red).is_narrow() && t.codes(Color::Black).is_narrow());
        check(&t, &want);
    }

    #[test]
    fn codes_set_or_mapped_are_read_back() {
        let (mut t, mut want) = table_of(|i| (i % 100) as u16);
        t.set_code(Color::Red, 5, 99);
        want[0][5] = 99;
        assert!(t.codes(Color::Red).is_narrow());
        check(&t, &want);
        t.set_code(Color::Black, 7, 0x4321);
        want[1][7] = 0x4321;
        assert!(!t.codes(Color::Black).is_narrow());
        check(&t, &want);
        // Back to few codes: narrow again.
        let mut seen = Vec::new();
        t.map_codes(|side, i, c| {
            seen.push((side, i));
            if c == 0x4321 { 0 } else { c }
        });
        want[1][7] = 0;
        let n = want[0].len();
        assert_eq!(seen.len(), 2 * n);
        assert_eq!((seen[0], seen[n]), ((Color::Red, 0), (Color::Black, 0)));
        assert!(Color::ALL.iter().all(|&s| t.codes(s).is_narrow()));
        check(&t, &want);
        // Many codes: two bytes each.
        t.map_codes(|_, i, _| (i % 1000) as u16);
        want = [0, 1].map(|_| (0..n).map(|i| (i % 1000) as u16).collect());
        assert!(Color::ALL.iter().all(|&s| !t.codes(s).is_narrow()));
        check(&t, &want);
    }
}
