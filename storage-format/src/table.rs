//! Solved tables in memory and the lookup of any position in a set of tables.

use crate::index::{MAX_PIECES, TableIndex};
use crate::signature::{Material, Signature};
use crate::value::{ILLEGAL, Value};
use std::collections::HashMap;
use std::sync::Arc;
use thiserror::Error;
use xiangqi::{Board, Color};

/// Why a position could not be looked up.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProbeError {
    /// The table for the position's material is not available.
    #[error("table {0} is not available")]
    MissingTable(Signature),
    /// The position is not legal.
    #[error("illegal position: {0}")]
    Illegal(String),
    /// Reading the table failed.
    #[error("reading table {0} failed: {1}")]
    Storage(Signature, String),
    /// The table is not in the store or shard directory being probed.
    #[error("table {table} is not in the store ({store})")]
    NotInStore {
        /// The table.
        table: Signature,
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

/// A solved table: the values of every slot for both sides to move.
#[derive(Clone)]
pub struct Table {
    /// The index the values are laid out by.
    pub index: TableIndex,
    /// Encoded [`Value`]s, indexed by side to move then slot.
    pub values: [Vec<u16>; 2],
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Table({}, {} slots per side)",
            self.signature(),
            self.index.size()
        )
    }
}

impl Table {
    /// The value of `slot` with `side` to move.
    #[inline]
    pub fn value(&self, side: Color, slot: u64) -> Value {
        Value::decode(self.values[side.index()][slot as usize])
    }

    /// The table's signature.
    pub fn signature(&self) -> Signature {
        self.index.signature()
    }
}

/// Where a position lives: its canonical table, side to move and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The canonical table.
    pub signature: Signature,
    /// Side to move in the canonical orientation.
    pub side: Color,
    /// Slot in that table.
    pub slot: u64,
}

/// The board in the canonical orientation of its material: rotated with colours swapped when
/// Black holds the stronger side.
pub fn canonical_board(board: &Board) -> (Signature, Board) {
    let material = Material::of_board(board);
    if material.black_is_stronger() {
        (Signature::new(material), board.rotated())
    } else {
        (Signature::new(material), board.clone())
    }
}

/// Anything that answers "what is this position worth": a set of tables in memory, a store, a
/// directory of shard files.
pub trait Probe: Sync {
    /// The value of `board` with its side to move. Dead-draw material is a draw without a table.
    fn probe(&self, board: &Board) -> Result<Value, ProbeError>;

    /// Whether the table of `sig` is available.
    fn has_table(&self, sig: &Signature) -> bool;

    /// The whole table of `sig` when it is held in memory (the solver then reads it directly).
    fn table(&self, _sig: &Signature) -> Option<&Table> {
        None
    }
}

/// Solved tables held in memory, keyed by signature.
#[derive(Default, Clone)]
pub struct MemoryTables {
    tables: HashMap<Signature, Arc<Table>>,
}

impl MemoryTables {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a table.
    pub fn insert(&mut self, table: Arc<Table>) {
        self.tables.insert(table.signature(), table);
    }

    /// The table of `sig`, if held.
    pub fn get(&self, sig: &Signature) -> Option<&Arc<Table>> {
        self.tables.get(sig)
    }

    /// Keeps only the tables whose signature `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Signature) -> bool) {
        self.tables.retain(|sig, _| keep(sig));
    }

    /// Whether `sig` is held.
    pub fn contains(&self, sig: &Signature) -> bool {
        self.tables.contains_key(sig)
    }

    /// Locates `board` in its table: `None` for dead-draw material.
    pub fn locate(&self, board: &Board) -> Result<Option<(Location, &Table)>, ProbeError> {
        // As `canonical_board`, without copying the board when it is canonical already (this
        // runs for every capture the verifier follows).
        let material = Material::of_board(board);
        let sig = Signature::new(material);
        if sig.is_dead_draw() {
            return Ok(None);
        }
        let rotated;
        let canon = if material.black_is_stronger() {
            rotated = board.rotated();
            &rotated
        } else {
            board
        };
        let table = self.tables.get(&sig).ok_or(ProbeError::MissingTable(sig))?;
        let slot = slot_of(&table.index, canon)?;
        Ok(Some((
            Location {
                signature: sig,
                side: canon.side_to_move(),
                slot,
            },
            table,
        )))
    }
}

/// The slot of a canonical board in its table's index, or why it has none.
pub fn slot_of(index: &TableIndex, canon: &Board) -> Result<u64, ProbeError> {
    let squares: [u8; MAX_PIECES] = index
        .squares_of(canon)
        .ok_or_else(|| ProbeError::Illegal("material does not match the table".into()))?;
    let n = index.piece_count();
    if !index.placement_is_possible(&squares[..n]) {
        return Err(ProbeError::Illegal(
            "two pawns of one side that have not crossed the river stand on one file".into(),
        ));
    }
    index
        .encode(&squares[..n])
        .ok_or_else(|| ProbeError::Illegal("a piece stands off its legal points".into()))
}

impl Probe for MemoryTables {
    fn has_table(&self, sig: &Signature) -> bool {
        self.contains(sig)
    }

    fn table(&self, sig: &Signature) -> Option<&Table> {
        self.get(sig).map(|t| &**t)
    }

    fn probe(&self, board: &Board) -> Result<Value, ProbeError> {
        match self.locate(board)? {
            None if board.opponent_in_check() => Err(ProbeError::Illegal(
                "the side not to move is in check".into(),
            )),
            None => Ok(Value::Draw),
            Some((loc, table)) => {
                let code = table.values[loc.side.index()][loc.slot as usize];
                if code == ILLEGAL {
                    return Err(ProbeError::Illegal(
                        "the side not to move is in check".into(),
                    ));
                }
                Ok(Value::decode(code))
            }
        }
    }
}
