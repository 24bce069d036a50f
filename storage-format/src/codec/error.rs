//! Why an encoded table or header is refused.

use thiserror::Error;
use xiangqi::Color;
use xqtb_core::Signature;

/// Why an encoded table or header was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    /// The header bytes do not parse.
    #[error("bad table header: {0}")]
    BadHeader(String),
    /// The table was written for another index layout than this build's.
    #[error(
        "table {signature} was written with index scheme {found}, but this build uses {expected}: re-solve or convert the table"
    )]
    IndexMismatch {
        /// The table.
        signature: Signature,
        /// What the header says.
        found: String,
        /// What this build has.
        expected: String,
    },
    /// A compressed block does not match its checksum.
    #[error("table {signature}: block {block} for {side} to move is corrupt (checksum mismatch)")]
    BlockChecksum {
        /// The table.
        signature: Signature,
        /// Side to move of the block.
        side: Color,
        /// Block number.
        block: u32,
    },
    /// The dictionary does not match its checksum.
    #[error("table {0}: the compression dictionary is corrupt (checksum mismatch)")]
    DictionaryChecksum(Signature),
    /// A block cannot be read: it is missing, does not match the header's block table, does
    /// not decompress, or its bytes are not a block of the header's layout.
    #[error("table {signature}: block {block} for {side} to move is corrupt: {reason}")]
    BadBlock {
        /// The table.
        signature: Signature,
        /// Side to move of the block.
        side: Color,
        /// Block number.
        block: u32,
        /// What went wrong.
        reason: String,
    },
    /// The decompressed values of a side do not match their checksum.
    #[error("table {signature}: the values for {side} to move do not match their checksum")]
    ValuesChecksum {
        /// The table.
        signature: Signature,
        /// Side to move.
        side: Color,
    },
    /// The blocks handed over do not agree with the header.
    #[error("table {0}: {1}")]
    Inconsistent(Signature, String),
}
