//! The value codec: a solved [`Table`](xqtb_core::Table) as fixed-size blocks of encoded values,
//! each compressed by zstd, with a header that describes the table and checks every byte.
//!
//! # The picture
//!
//! A stored table is an [`EncodedTable`]: a [`TableHeader`], an optional zstd dictionary, and
//! per side to move (Red, then Black) a list of compressed blocks. A shard file
//! ([`crate::shard`]) writes it out as
//!
//! ```text
//! preamble | header | header CRC | dictionary | Red's blocks | Black's blocks | file CRC
//! ```
//!
//! where the preamble (magic, shard version, header and file lengths, its own CRC) belongs to the
//! shard file; a sled store keeps the same header and blocks under keys of its own.
//!
//! **Header** ([`TableHeader::to_bytes`]; integers little-endian, fields in this order):
//!
//! | field | bytes |
//! |---|---|
//! | format version: [`FORMAT_VERSION`] for a whole table, [`PART_FORMAT_VERSION`] for a part | 4 |
//! | signature: its length, then its canonical name (`KRvKP`) | 1 + n |
//! | rule set id | 1 |
//! | index scheme, index size, index fingerprint ([`index_fingerprint`]) | 4 + 8 + 4 |
//! | parts only: first slot and end of the slots the blocks hold | 8 + 8 |
//! | value layout id ([`ValueLayout::id`]), filler id ([`Filler::id`]) | 1 + 1 |
//! | values per block, zstd level | 4 + 4 |
//! | dictionary: 0, or 1 then its length and CRC-32 | 1 or 9 |
//! | per side: legal, wins, draws, losses; longest win (0, or 1 then distance and slot) | 32 + 1 or 11 |
//! | CRC-32 of each side's uncompressed block bytes, in block order (Red, Black) | 4 + 4 |
//! | **block table**, per side: the number of blocks, then each block's length and CRC-32 ([`BlockInfo`]) | 4 + 8 per block |
//! | rule sets other than cycles-are-draws: per side rule wins, rule losses, longest rule win | 16 + 1 or 11 |
//!
//! [`TableHeader::from_bytes`] checks every field, and [`TableHeader::check_shape`] that they
//! agree with each other.
//!
//! **Blocks.** Each side's slots are cut into blocks of [`CodecParams::block_values`] values
//! (the last block of a side may be shorter; a part starts on a block boundary). Illegal slots
//! first take a *filler* value ([`Filler`]): they are never read (a probe tests the position's
//! legality itself, and [`decode_table`] recomputes them), so any value will do; the default
//! repeats the previous legal value, which extends runs and compresses best (see
//! `BENCHMARKS.md`, "Storage"). Each block is then laid out as bytes and compressed on its own by
//! zstd, optionally with a dictionary trained on the table's own blocks, so one probe
//! decompresses one small block.
//!
//! **Value layouts** ([`ValueLayout`]): one byte per value when every code of the table fits
//! ([`ValueLayout::Narrow`], the usual case: distances to mate stay far below 254 plies);
//! otherwise, when no block holds more than 256 different codes (the usual case of tables with
//! rule values), one byte per value indexing the block's own list of codes
//! ([`ValueLayout::Indexed`]); otherwise the low bytes of the block followed by its high bytes
//! ([`ValueLayout::Planes`]). One table uses one layout for all its blocks.
//!
//! # The files
//!
//! Each file uses only those above it; this one only re-exports.
//!
//! - `error.rs`: [`CodecError`], why a table or header is refused.
//! - `layout.rs`: the value layouts and fillers, a block's codes to bytes and back.
//! - `header.rs`: [`TableHeader`] and its bytes, [`BlockInfo`], [`EncodedTable`], the format
//!   versions and the counts the header records ([`count_table`]).
//! - `encode.rs`: [`CodecParams`] and [`encode_table_with`].
//! - `decode.rs`: [`BlockDecoder`], reading a block, [`check_table`] and [`decode_table`].
//! - `assemble.rs`: joining the parts of a table ([`assemble_parts`], [`PartAssembler`]).

mod assemble;
mod decode;
mod encode;
mod error;
mod header;
mod layout;

pub use assemble::{PartAssembler, assemble_parts};
pub use decode::{
    BlockDecoder, EncodedBlocks, check_table, check_values, decode_block, decode_stored_block,
    decode_table,
};
pub use encode::{
    CodecParams, DEFAULT_BLOCK_VALUES, DEFAULT_LEVEL, LayoutChoice, encode_table, encode_table_with,
};
pub use error::CodecError;
pub use header::{
    BlockInfo, EncodedTable, FORMAT_VERSION, MAX_BLOCK_VALUES, PART_FORMAT_VERSION, TableHeader,
    count_table, index_fingerprint,
};
pub use layout::{Filler, ValueLayout};
