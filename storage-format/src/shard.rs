//! The shard file: one self-describing, checksummed file per table.
//!
//! Layout (all integers little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `XQTBSHRD` |
//! | 8 | 4 | format version ([`SHARD_VERSION`]) |
//! | 12 | 4 | header length `H` |
//! | 16 | 8 | file length `L` |
//! | 24 | 4 | CRC-32 of bytes 0..24 (the preamble) |
//! | 28 | `H` | the [`TableHeader`]: signature, rule set, index scheme, counts, longest wins, values checksums, dictionary entry and block table |
//! | 28 + H | 4 | CRC-32 of the header |
//! | 32 + H | `D` | the zstd dictionary, if the header lists one |
//! | ... | | the compressed blocks: Red to move's in order, then Black to move's |
//! | L - 4 | 4 | CRC-32 of bytes 0..L-4 (the whole file) |
//!
//! Checksums are CRC-32 (IEEE) from `crc32fast`: it detects every single-bit error and every
//! burst of up to 32 bits with certainty (a hash only makes them unlikely), runs at several GB/s
//! with the CPU's carry-less multiply, and is the checksum of zip, gzip and PNG, so any tool can
//! check a block by hand.
//!
//! Reading checks the most specific thing first, so each fault gets its own error: magic,
//! version, preamble checksum, length (truncated or trailing bytes), header checksum, header
//! fields, block table against the file length, each block's checksum, then the file checksum.

use crate::codec::{BlockInfo, CodecError, EncodedTable, TableHeader};
use std::io::{self, Read, Seek, SeekFrom};
use thiserror::Error;
use xiangqi::Color;

/// First eight bytes of every shard file.
pub const MAGIC: [u8; 8] = *b"XQTBSHRD";

/// Version of the shard layout described in this module.
pub const SHARD_VERSION: u32 = 1;

/// Bytes before the header: magic, version, header length, file length, preamble checksum.
pub const PREAMBLE_LEN: usize = 28;

/// File name extension of shard files.
pub const EXTENSION: &str = "xqtb";

/// Why a shard file was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShardError {
    /// The file does not start with [`MAGIC`].
    #[error("not an xqtb shard file (bad magic)")]
    BadMagic,
    /// A shard format this build does not read.
    #[error("shard format version {0} is not supported (this build reads version {SHARD_VERSION})")]
    UnsupportedVersion(u32),
    /// The file is shorter than its own description says.
    #[error("shard file is truncated: {len} bytes, {needed} expected")]
    Truncated {
        /// Bytes the file should have.
        needed: u64,
        /// Bytes it has.
        len: u64,
    },
    /// The file is longer than its own description says.
    #[error("shard file has trailing data: {len} bytes, {expected} expected")]
    TrailingData {
        /// Bytes the file should have.
        expected: u64,
        /// Bytes it has.
        len: u64,
    },
    /// The preamble (magic, version, lengths) does not match its checksum.
    #[error("shard preamble is corrupt (checksum mismatch)")]
    PreambleChecksum,
    /// The header does not match its checksum.
    #[error("shard header is corrupt (checksum mismatch)")]
    HeaderChecksum,
    /// The header matches its checksum but does not make sense.
    #[error("bad shard header: {0}")]
    BadHeader(String),
    /// The dictionary does not match its checksum.
    #[error("shard dictionary is corrupt (checksum mismatch)")]
    DictionaryChecksum,
    /// A block does not match its checksum.
    #[error("shard block {block} for {side} to move is corrupt (checksum mismatch)")]
    BlockChecksum {
        /// Side to move of the block.
        side: Color,
        /// Block number.
        block: u32,
    },
    /// The file does not match its whole-file checksum.
    #[error("shard file is corrupt (whole-file checksum mismatch)")]
    FileChecksum,
    /// Reading the file failed.
    #[error("{0}")]
    Io(#[from] crate::io_error::IoError),
}

impl From<CodecError> for ShardError {
    fn from(e: CodecError) -> ShardError {
        match e {
            CodecError::BadHeader(m) => ShardError::BadHeader(m),
            other => ShardError::BadHeader(other.to_string()),
        }
    }
}

impl From<io::Error> for ShardError {
    fn from(e: io::Error) -> ShardError {
        ShardError::Io(crate::io_error::IoError::new("reading shard file", e))
    }
}

/// Total length of the shard of `header`.
pub fn shard_len(header_len: usize, header: &TableHeader) -> u64 {
    PREAMBLE_LEN as u64 + header_len as u64 + 4 + header.stored_bytes() + 4
}

/// Length of the shard file of the table with header `header`.
pub fn shard_len_of(header: &TableHeader) -> u64 {
    shard_len(header.to_bytes().len(), header)
}

/// CRC-32 of a whole file as transferred (every byte, trailer included): a cheap check that a
/// download arrived intact before [`read_shard`] checks it in detail.
pub fn file_checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Writes `table` as a shard file. The table's blocks are assumed to match its header (as they
/// do for anything [`crate::codec::encode_table`] or a store returns).
pub fn write_shard(table: &EncodedTable) -> Vec<u8> {
    let header = table.header.to_bytes();
    let len = shard_len(header.len(), &table.header);
    let mut out = Vec::with_capacity(len as usize);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&SHARD_VERSION.to_le_bytes());
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    let pre = crc32fast::hash(&out);
    out.extend_from_slice(&pre.to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&crc32fast::hash(&header).to_le_bytes());
    if let Some(d) = &table.dictionary {
        out.extend_from_slice(d);
    }
    for side in &table.blocks {
        for b in side {
            out.extend_from_slice(b);
        }
    }
    let file = crc32fast::hash(&out);
    out.extend_from_slice(&file.to_le_bytes());
    debug_assert_eq!(out.len() as u64, len);
    out
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// What the preamble says.
struct Preamble {
    header_len: usize,
    file_len: u64,
}

/// Checks the preamble of a file of `len` bytes whose first bytes are `head` (at least
/// [`PREAMBLE_LEN`] of them unless the file is shorter).
fn read_preamble(head: &[u8], len: u64) -> Result<Preamble, ShardError> {
    let m = head.len().min(MAGIC.len());
    if head[..m] != MAGIC[..m] {
        return Err(ShardError::BadMagic);
    }
    if head.len() < PREAMBLE_LEN {
        return Err(ShardError::Truncated {
            needed: PREAMBLE_LEN as u64,
            len,
        });
    }
    let version = le_u32(&head[8..12]);
    if version != SHARD_VERSION {
        return Err(ShardError::UnsupportedVersion(version));
    }
    if crc32fast::hash(&head[..24]) != le_u32(&head[24..28]) {
        return Err(ShardError::PreambleChecksum);
    }
    let header_len = le_u32(&head[12..16]) as usize;
    let mut fl = [0u8; 8];
    fl.copy_from_slice(&head[16..24]);
    let file_len = u64::from_le_bytes(fl);
    if file_len > len {
        return Err(ShardError::Truncated {
            needed: file_len,
            len,
        });
    }
    if file_len < len {
        return Err(ShardError::TrailingData {
            expected: file_len,
            len,
        });
    }
    if (PREAMBLE_LEN + header_len + 4 + 4) as u64 > file_len {
        return Err(ShardError::BadHeader(format!(
            "header length {header_len} does not fit a file of {file_len} bytes"
        )));
    }
    Ok(Preamble {
        header_len,
        file_len,
    })
}

/// Parses and checks the header bytes (with their checksum) against the file length.
fn read_header(bytes: &[u8], p: &Preamble) -> Result<TableHeader, ShardError> {
    let end = PREAMBLE_LEN + p.header_len;
    let header_bytes = &bytes[PREAMBLE_LEN..end];
    if crc32fast::hash(header_bytes) != le_u32(&bytes[end..end + 4]) {
        return Err(ShardError::HeaderChecksum);
    }
    let header = TableHeader::from_bytes(header_bytes)?;
    let expected = shard_len(p.header_len, &header);
    if expected != p.file_len {
        return Err(ShardError::BadHeader(format!(
            "the block table adds up to {expected} bytes, the file has {}",
            p.file_len
        )));
    }
    Ok(header)
}

/// Reads a shard file, checking every checksum. Nothing is trusted before it is checked, and
/// no input makes this panic.
pub fn read_shard(bytes: &[u8]) -> Result<EncodedTable, ShardError> {
    let p = read_preamble(bytes, bytes.len() as u64)?;
    let header = read_header(bytes, &p)?;
    let mut at = PREAMBLE_LEN + p.header_len + 4;
    let mut take = |info: &BlockInfo| {
        let s = &bytes[at..at + info.len as usize];
        at += info.len as usize;
        s
    };
    let dictionary = match &header.dictionary {
        None => None,
        Some(info) => {
            let d = take(info);
            if !info.matches(d) {
                return Err(ShardError::DictionaryChecksum);
            }
            Some(d.to_vec())
        }
    };
    let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for side in Color::ALL {
        let infos = &header.blocks[side.index()];
        let out = &mut blocks[side.index()];
        out.reserve(infos.len());
        for (b, info) in infos.iter().enumerate() {
            let data = take(info);
            if !info.matches(data) {
                return Err(ShardError::BlockChecksum {
                    side,
                    block: b as u32,
                });
            }
            out.push(data.to_vec());
        }
    }
    let body = p.file_len as usize - 4;
    if crc32fast::hash(&bytes[..body]) != le_u32(&bytes[body..]) {
        return Err(ShardError::FileChecksum);
    }
    Ok(EncodedTable {
        header,
        dictionary,
        blocks,
    })
}

/// Where the parts of a shard file are, from its header alone.
#[derive(Clone, Debug)]
pub struct ShardLayout {
    /// The header.
    pub header: TableHeader,
    /// Offset of the dictionary (meaningful when the header lists one).
    pub dictionary_offset: u64,
    /// Offset of every block per side to move.
    pub block_offsets: [Vec<u64>; 2],
}

/// Reads and checks only the preamble and header of a shard file (a few kilobytes), for
/// reading its blocks in place. Blocks are checked against their checksums when read.
pub fn read_shard_layout<R: Read + Seek>(file: &mut R) -> Result<ShardLayout, ShardError> {
    let len = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(0))?;
    let mut head = vec![0u8; (PREAMBLE_LEN as u64).min(len) as usize];
    file.read_exact(&mut head)?;
    let p = read_preamble(&head, len)?;
    let mut bytes = head;
    bytes.resize(PREAMBLE_LEN + p.header_len + 4, 0);
    file.read_exact(&mut bytes[PREAMBLE_LEN..])?;
    let header = read_header(&bytes, &p)?;
    let mut at = (PREAMBLE_LEN + p.header_len + 4) as u64;
    let dictionary_offset = at;
    if let Some(d) = &header.dictionary {
        at += d.len as u64;
    }
    let block_offsets = [0, 1].map(|s| {
        header.blocks[s]
            .iter()
            .map(|b| {
                let o = at;
                at += b.len as u64;
                o
            })
            .collect()
    });
    Ok(ShardLayout {
        header,
        dictionary_offset,
        block_offsets,
    })
}
