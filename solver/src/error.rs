//! Why a table could not be solved or verified.

use thiserror::Error;
use xiangqi::Color;
use xqtb_core::{ProbeError, Signature, SlotRange, Value};

/// Why a table could not be solved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SolveError {
    /// A table that captures lead into is not available.
    #[error("cannot solve {table}: it depends on {missing}, which is not available")]
    MissingDependency {
        /// The table being solved.
        table: Signature,
        /// The missing dependency.
        missing: Signature,
    },
    /// Looking up a dependency failed.
    #[error("cannot solve {0}: {1}")]
    Probe(Signature, ProbeError),
    /// A distance too long for the state encoding.
    #[error("cannot solve {0}: a distance to mate exceeds {1} plies")]
    DtmOverflow(Signature, u16),
    /// The table has too many pieces for the index.
    #[error("cannot solve {0}: {1}")]
    Unsupported(Signature, String),
    /// Storing or reading back the states a job keeps on local disk failed.
    #[error("cannot solve {0}: its states on local disk: {1}")]
    Scratch(Signature, String),
    /// The workers sharing a job could not work together on it.
    #[error("cannot solve {0} shared by several workers: {1}")]
    Share(Signature, String),
    /// The slots asked for are not a union of whole slices of the table (or not within it).
    #[error("cannot solve slots {slots} of {table}: they are not a union of whole pawn slices")]
    NotSlices {
        /// The table.
        table: Signature,
        /// The slots asked for.
        slots: SlotRange,
    },
    /// An order to solve a table's slices in that does not name each slice once.
    #[error("cannot solve {table} slice by slice: {reason}")]
    SliceOrder {
        /// The table.
        table: Signature,
        /// What is wrong with the order.
        reason: String,
    },
    /// A slice of the same table that pawn advances lead into from the slots being solved is
    /// not available.
    #[error(
        "cannot solve slots {slots} of {table}: its pawn advances lead into slots {missing}, which are not available"
    )]
    MissingSlice {
        /// The table.
        table: Signature,
        /// The slots being solved.
        slots: SlotRange,
        /// The missing slice's slots.
        missing: SlotRange,
    },
}

/// A slot whose stored value disagrees with its successors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "verification of {signature} failed at {side} to move, slot {slot} ({fen}): stored {stored}, successors give {expected}"
)]
pub struct VerifyError {
    /// The table.
    pub signature: Signature,
    /// Side to move.
    pub side: Color,
    /// The slot.
    pub slot: u64,
    /// The position, when the slot holds one.
    pub fen: String,
    /// The value in the table.
    pub stored: Value,
    /// The value its successors give.
    pub expected: Value,
}

/// Why a job (solving a table and verifying it) failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Solving failed.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// The solved table failed verification; it must not be stored.
    #[error(transparent)]
    Verify(#[from] Box<VerifyError>),
    /// The table to verify could not be read a block at a time.
    #[error("cannot verify {0}: {1}")]
    Blocks(Signature, String),
}
