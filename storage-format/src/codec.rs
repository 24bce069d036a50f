//! The value codec: a solved [`Table`] as fixed-size blocks of encoded values, each compressed
//! by zstd, with a header that describes the table and checks every byte.
//!
//! Encoding, per side to move:
//! 1. Illegal slots take a *filler* value. They are never read (a probe tests the position's
//!    legality itself, and [`decode_table`] recomputes them), so any value will do; the default
//!    repeats the previous legal value, which extends runs and compresses best (see
//!    `BENCHMARKS.md`, "Storage").
//! 2. The slots are cut into blocks of [`CodecParams::block_values`] values (the last block of a
//!    side may be shorter), and each block's values are laid out as bytes: one byte per value
//!    when every code of the table fits ([`ValueLayout::Narrow`], the usual case: distances to
//!    mate stay far below 254 plies); otherwise, when no block holds more than 256 different
//!    codes (the usual case of tables with rule values), one byte per value indexing the block's
//!    own list of codes ([`ValueLayout::Indexed`]); otherwise the low bytes of the block followed
//!    by its high bytes ([`ValueLayout::Planes`]).
//! 3. Each block is compressed on its own by zstd, optionally with a dictionary trained on the
//!    table's own blocks, so one probe decompresses one small block.
//!
//! The [`TableHeader`] records the format version, the signature, the rule set, the index scheme
//! (its layout version, size and a fingerprint of the layout, so a table is never read with a
//! different index), counts and longest wins per side, a CRC-32 of each side's uncompressed
//! values, and the block table (compressed length and CRC-32 of every block).

use rayon::prelude::*;
use std::fmt;
use thiserror::Error;
use xiangqi::Color;
use xqtb_core::{
    MAX_PIECES, RuleSet, SCHEME_SLICED, SCHEME_WHOLE, SideCounts, Signature, SlotRange, Table,
    TableCounts, TableId, TableIndex, Value,
};

const ILLEGAL: u16 = Value::ILLEGAL_CODE;
const DRAW: u16 = Value::DRAW_CODE;

/// Version of the header and block encoding described here. Bump on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// Format version of a *part* of a table (a run of whole pawn slices, as a slice job uploads
/// it): version 1 with the slot range the blocks hold after the index fingerprint. A whole
/// table is always written as version 1, so its bytes do not depend on how it was solved.
pub const PART_FORMAT_VERSION: u32 = 2;

/// Values per block unless told otherwise (see `BENCHMARKS.md`, "Storage", for the comparison).
pub const DEFAULT_BLOCK_VALUES: u32 = 1 << 14;

/// zstd level unless told otherwise. Level 14 stores KRNvKR within 0.3% of level 16 and encodes
/// in about 60% of its time; above 14 zstd switches to optimal parsing, which costs far more CPU
/// than it saves bytes on these blocks (see `BENCHMARKS.md`, "Storage").
pub const DEFAULT_LEVEL: i32 = 14;

/// Largest block the format accepts, in values.
pub const MAX_BLOCK_VALUES: u32 = 1 << 20;

/// How a block's values are laid out as bytes before compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueLayout {
    /// One byte per value: the two-byte code of [`Value::encode`] when it is below 255.
    Narrow,
    /// Two bytes per value: the block's low bytes, then its high bytes.
    Planes,
    /// Two bytes per value, little-endian, value by value (kept for comparison).
    Wide,
    /// One byte per value, an index into the block's own list of codes, which comes first: the
    /// number of codes less one (a byte), then the codes in ascending order (two bytes each,
    /// little-endian). Half the bytes of [`ValueLayout::Planes`] for tables whose codes do not
    /// fit a byte but whose blocks use few of them each (rule values); on KRNvKR under the Asian
    /// rules a quarter smaller and twice as fast to compress (see `BENCHMARKS.md`, "Storage").
    Indexed,
}

/// Codes an [`ValueLayout::Indexed`] block can list.
const MAX_BLOCK_CODES: usize = 256;

impl ValueLayout {
    /// Stable id used in headers.
    pub const fn id(self) -> u8 {
        match self {
            ValueLayout::Narrow => 1,
            ValueLayout::Planes => 2,
            ValueLayout::Wide => 3,
            ValueLayout::Indexed => 4,
        }
    }

    /// The layout with this id.
    pub const fn from_id(id: u8) -> Option<ValueLayout> {
        match id {
            1 => Some(ValueLayout::Narrow),
            2 => Some(ValueLayout::Planes),
            3 => Some(ValueLayout::Wide),
            4 => Some(ValueLayout::Indexed),
            _ => None,
        }
    }

    /// The bytes of a decompressed block of `n` values, when the layout fixes them (all but
    /// [`ValueLayout::Indexed`], whose list of codes varies).
    pub const fn block_len(self, n: usize) -> Option<usize> {
        match self {
            ValueLayout::Narrow => Some(n),
            ValueLayout::Planes | ValueLayout::Wide => Some(2 * n),
            ValueLayout::Indexed => None,
        }
    }

    /// The most bytes a decompressed block of `n` values can take.
    pub const fn max_block_len(self, n: usize) -> usize {
        match self.block_len(n) {
            Some(len) => len,
            None => 1 + 2 * MAX_BLOCK_CODES + n,
        }
    }

    /// Checks that `bytes` are a well-formed block of `n` values, so that [`ValueLayout::code_at`]
    /// can read any of them: the length, and for [`ValueLayout::Indexed`] a list of codes in
    /// ascending order that every index falls within.
    pub fn check_block(self, bytes: &[u8], n: usize) -> Result<(), String> {
        let len = match self.block_len(n) {
            Some(len) => len,
            None => {
                let Some(&last) = bytes.first() else {
                    return Err("an empty block".into());
                };
                let codes = last as usize + 1;
                let list = &bytes[1..bytes.len().min(1 + 2 * codes)];
                let ascending = list
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .try_fold(None, |prev, c| match prev {
                        Some(p) if p >= c => None,
                        _ => Some(Some(c)),
                    })
                    .is_some();
                if !ascending {
                    return Err("the block's list of codes is not in ascending order".into());
                }
                if let Some(&i) = bytes.get(1 + 2 * codes..).and_then(|v| v.iter().max())
                    && i as usize >= codes
                {
                    return Err(format!("index {i} into a list of {codes} codes"));
                }
                1 + 2 * codes + n
            }
        };
        if bytes.len() != len {
            return Err(format!("{} bytes instead of {len}", bytes.len()));
        }
        Ok(())
    }

    /// Stable name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            ValueLayout::Narrow => "narrow",
            ValueLayout::Planes => "planes",
            ValueLayout::Wide => "wide",
            ValueLayout::Indexed => "indexed",
        }
    }

    /// The code of value `i` of a decompressed block of `n` values (checked by
    /// [`ValueLayout::check_block`]).
    #[inline]
    pub fn code_at(self, bytes: &[u8], n: usize, i: usize) -> u16 {
        match self {
            ValueLayout::Narrow => bytes[i] as u16,
            ValueLayout::Planes => bytes[i] as u16 | (bytes[n + i] as u16) << 8,
            ValueLayout::Wide => u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]),
            ValueLayout::Indexed => {
                let codes = bytes[0] as usize + 1;
                let k = 1 + 2 * bytes[1 + 2 * codes + i] as usize;
                u16::from_le_bytes([bytes[k], bytes[k + 1]])
            }
        }
    }
}

/// Which layout to choose when encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutChoice {
    /// [`ValueLayout::Narrow`] when every code fits a byte, else [`ValueLayout::Indexed`] when
    /// no block holds more than 256 different codes, else [`ValueLayout::Planes`].
    Auto,
    /// Always this layout ([`ValueLayout::Narrow`] and [`ValueLayout::Indexed`] fall back as
    /// `Auto` does when the codes do not fit).
    Fixed(ValueLayout),
}

/// What illegal slots hold in the stored blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filler {
    /// The previous legal value of the block (the first legal one for leading illegal slots).
    Previous,
    /// A draw.
    Draw,
    /// The illegal code itself (`0xFF` in one-byte layouts): no filling, for comparison.
    Marker,
}

impl Filler {
    /// Stable id used in headers.
    pub const fn id(self) -> u8 {
        match self {
            Filler::Previous => 1,
            Filler::Draw => 2,
            Filler::Marker => 3,
        }
    }

    /// The filler with this id.
    pub const fn from_id(id: u8) -> Option<Filler> {
        match id {
            1 => Some(Filler::Previous),
            2 => Some(Filler::Draw),
            3 => Some(Filler::Marker),
            _ => None,
        }
    }

    /// Stable name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Filler::Previous => "previous",
            Filler::Draw => "draw",
            Filler::Marker => "marker",
        }
    }
}

/// Encoding parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecParams {
    /// Values per block (1 to [`MAX_BLOCK_VALUES`]).
    pub block_values: u32,
    /// zstd compression level.
    pub level: i32,
    /// Train a per-table zstd dictionary of at most this many bytes (`None`: no dictionary).
    pub dictionary: Option<u32>,
    /// Byte layout of the values.
    pub layout: LayoutChoice,
    /// What illegal slots hold.
    pub filler: Filler,
}

impl Default for CodecParams {
    fn default() -> Self {
        CodecParams {
            block_values: DEFAULT_BLOCK_VALUES,
            level: DEFAULT_LEVEL,
            dictionary: None,
            layout: LayoutChoice::Auto,
            filler: Filler::Previous,
        }
    }
}

/// Place and checksum of one compressed block (or of the dictionary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// Compressed length in bytes.
    pub len: u32,
    /// CRC-32 (IEEE) of the compressed bytes.
    pub crc: u32,
}

impl BlockInfo {
    /// The info of `bytes`.
    pub fn of(bytes: &[u8]) -> BlockInfo {
        BlockInfo {
            len: bytes.len() as u32,
            crc: crc32fast::hash(bytes),
        }
    }

    /// Whether `bytes` has this length and checksum.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() == self.len as usize && crc32fast::hash(bytes) == self.crc
    }
}

/// Everything about a stored table except its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableHeader {
    /// [`FORMAT_VERSION`] of the encoding.
    pub format_version: u32,
    /// The table.
    pub signature: Signature,
    /// The rule set it was solved under.
    pub rules: RuleSet,
    /// Index scheme the slots are numbered by ([`TableIndex::scheme`]: 1 for one layout, 2 for
    /// pawn slices).
    pub index_scheme: u32,
    /// Slots per side to move.
    pub index_size: u64,
    /// Checksum of the placements of a few slots spread over the index (see
    /// [`index_fingerprint`]): catches a changed layout even if the scheme was not bumped.
    pub index_fingerprint: u32,
    /// The slots the blocks hold: `0..index_size` for a table, a run of whole pawn slices for
    /// a part ([`PART_FORMAT_VERSION`]), starting on a block boundary.
    pub slots: SlotRange,
    /// Byte layout of the values.
    pub layout: ValueLayout,
    /// What illegal slots hold (informational: decoding recomputes them).
    pub filler: Filler,
    /// Values per block.
    pub block_values: u32,
    /// zstd level the blocks were compressed with (informational).
    pub level: i32,
    /// The zstd dictionary, when there is one.
    pub dictionary: Option<BlockInfo>,
    /// Counts per side to move.
    pub counts: TableCounts,
    /// CRC-32 of each side's uncompressed block bytes, in block order.
    pub values_crc: [u32; 2],
    /// The compressed blocks per side to move.
    pub blocks: [Vec<BlockInfo>; 2],
}

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

/// A table in its stored form: the header and the compressed blocks of each side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedTable {
    /// The header; its block table describes `blocks`.
    pub header: TableHeader,
    /// The zstd dictionary, if the header names one.
    pub dictionary: Option<Vec<u8>>,
    /// Compressed blocks per side to move (Red, Black).
    pub blocks: [Vec<Vec<u8>>; 2],
}

impl EncodedTable {
    /// Compressed bytes: blocks and dictionary.
    pub fn stored_bytes(&self) -> u64 {
        self.header.stored_bytes()
    }

    /// Checks that the blocks and dictionary match the header's block table and checksums.
    pub fn validate(&self) -> Result<(), CodecError> {
        let h = &self.header;
        let sig = h.signature;
        h.check_shape()?;
        match (&h.dictionary, &self.dictionary) {
            (None, None) => {}
            (Some(info), Some(d)) => {
                if !info.matches(d) {
                    return Err(CodecError::DictionaryChecksum(sig));
                }
            }
            _ => {
                return Err(CodecError::Inconsistent(
                    sig,
                    "dictionary present in only one of header and table".into(),
                ));
            }
        }
        for side in Color::ALL {
            let infos = &h.blocks[side.index()];
            let blocks = &self.blocks[side.index()];
            if infos.len() != blocks.len() {
                return Err(CodecError::Inconsistent(
                    sig,
                    format!(
                        "{} blocks for {side} to move, the header lists {}",
                        blocks.len(),
                        infos.len()
                    ),
                ));
            }
            for (b, (info, bytes)) in infos.iter().zip(blocks).enumerate() {
                if !info.matches(bytes) {
                    return Err(CodecError::BlockChecksum {
                        signature: sig,
                        side,
                        block: b as u32,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A fingerprint of the index layout of `index`: the CRC-32 of the placements of 64 slots
/// spread evenly over the index (with the index size).
pub fn index_fingerprint(index: &TableIndex) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let size = index.size();
    h.update(&size.to_le_bytes());
    let mut sq = [0u8; MAX_PIECES];
    for i in 0..64u64 {
        let slot = (size as u128 * i as u128 / 64) as u64;
        if slot < size {
            index.decode(slot, &mut sq);
            h.update(&sq[..index.piece_count()]);
        }
    }
    h.finalize()
}

impl TableHeader {
    /// The table the header describes.
    pub fn id(&self) -> TableId {
        TableId::new(self.rules, self.signature)
    }

    /// Blocks per side.
    pub fn block_count(&self) -> u32 {
        blocks_for(self.slots.len(), self.block_values)
    }

    /// Whether this is the header of a part of a table, not of a whole one.
    pub fn is_part(&self) -> bool {
        self.slots.start != 0 || self.slots.end != self.index_size
    }

    /// The first slot of block `block`.
    pub fn block_start(&self, block: u32) -> u64 {
        self.slots.start + block as u64 * self.block_values as u64
    }

    /// Compressed bytes: blocks and dictionary.
    pub fn stored_bytes(&self) -> u64 {
        self.blocks
            .iter()
            .flatten()
            .chain(self.dictionary.iter())
            .map(|b| b.len as u64)
            .sum()
    }

    /// Number of values in block `block` (the last one may be short).
    pub fn values_in_block(&self, block: u32) -> usize {
        let start = self.block_start(block);
        (self.slots.end.saturating_sub(start)).min(self.block_values as u64) as usize
    }

    /// The index the table's slots are numbered by: the header's index scheme, checked against
    /// the header (see [`TableHeader::check_index`]).
    pub fn index(&self) -> Result<TableIndex, CodecError> {
        let index =
            TableIndex::with_scheme(self.signature, self.index_scheme).ok_or_else(|| {
                CodecError::IndexMismatch {
                    signature: self.signature,
                    found: format!("index scheme {}", self.index_scheme),
                    expected: format!("index scheme {SCHEME_WHOLE} or {SCHEME_SLICED}"),
                }
            })?;
        self.check_index(&index)?;
        Ok(index)
    }

    /// Checks that the header describes a table numbered by `index`: same index scheme, index
    /// size and layout fingerprint.
    pub fn check_index(&self, index: &TableIndex) -> Result<(), CodecError> {
        let found = (self.index_scheme, self.index_size, self.index_fingerprint);
        let expected = (index.scheme(), index.size(), index_fingerprint(index));
        if found != expected || index.signature() != self.signature {
            let show = |(s, n, f): (u32, u64, u32)| format!("{s} (size {n}, fingerprint {f:08x})");
            return Err(CodecError::IndexMismatch {
                signature: self.signature,
                found: show(found),
                expected: show(expected),
            });
        }
        Ok(())
    }

    /// Checks the header's own consistency: block size, block counts, lengths.
    pub fn check_shape(&self) -> Result<(), CodecError> {
        let bad = |m: String| Err(CodecError::BadHeader(m));
        let version = if self.is_part() {
            PART_FORMAT_VERSION
        } else {
            FORMAT_VERSION
        };
        if self.format_version != version {
            return bad(format!(
                "format version {} is not {version}",
                self.format_version
            ));
        }
        if self.block_values == 0 || self.block_values > MAX_BLOCK_VALUES {
            return bad(format!(
                "block size {} values is out of range",
                self.block_values
            ));
        }
        if self.index_size == 0 || self.index_size > u32::MAX as u64 * self.block_values as u64 {
            return bad(format!("index size {} is out of range", self.index_size));
        }
        let s = self.slots;
        if s.start >= s.end
            || s.end > self.index_size
            || !s.start.is_multiple_of(self.block_values as u64)
        {
            return bad(format!(
                "slots {s} are not a run of whole blocks of the index of {} slots",
                self.index_size
            ));
        }
        let n = self.block_count() as usize;
        for side in Color::ALL {
            let got = self.blocks[side.index()].len();
            if got != n {
                return bad(format!(
                    "{got} blocks listed for {side} to move, the index size needs {n}"
                ));
            }
            let c = self.counts.side(side);
            // Checked: counts near 2^64 must not wrap around to a plausible sum.
            let sum = c
                .wins
                .checked_add(c.draws)
                .and_then(|n| n.checked_add(c.losses));
            if sum != Some(c.legal) || c.legal > self.slots.len() {
                return bad(format!("counts for {side} to move do not add up"));
            }
        }
        Ok(())
    }

    /// The header as bytes (see [`TableHeader::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(128 + 8 * 2 * self.blocks[0].len());
        put_u32(&mut w, self.format_version);
        let name = self.signature.name();
        w.push(name.len() as u8);
        w.extend_from_slice(name.as_bytes());
        w.push(self.rules.id());
        put_u32(&mut w, self.index_scheme);
        put_u64(&mut w, self.index_size);
        put_u32(&mut w, self.index_fingerprint);
        if self.format_version == PART_FORMAT_VERSION {
            put_u64(&mut w, self.slots.start);
            put_u64(&mut w, self.slots.end);
        }
        w.push(self.layout.id());
        w.push(self.filler.id());
        put_u32(&mut w, self.block_values);
        put_u32(&mut w, self.level as u32);
        match &self.dictionary {
            None => w.push(0),
            Some(d) => {
                w.push(1);
                put_u32(&mut w, d.len);
                put_u32(&mut w, d.crc);
            }
        }
        for c in &self.counts.0 {
            put_u64(&mut w, c.legal);
            put_u64(&mut w, c.wins);
            put_u64(&mut w, c.draws);
            put_u64(&mut w, c.losses);
            match c.longest_win {
                None => w.push(0),
                Some((d, slot)) => {
                    w.push(1);
                    w.extend_from_slice(&d.to_le_bytes());
                    put_u64(&mut w, slot);
                }
            }
        }
        for crc in self.values_crc {
            put_u32(&mut w, crc);
        }
        for side in &self.blocks {
            put_u32(&mut w, side.len() as u32);
            for b in side {
                put_u32(&mut w, b.len);
                put_u32(&mut w, b.crc);
            }
        }
        // Tables of rule sets with repetition rules end with their rule counts (tables of
        // cycles-are-draws, written before rules existed, end with the block table).
        if self.rules != RuleSet::CyclesAreDraws {
            for c in &self.counts.0 {
                put_u64(&mut w, c.rule_wins);
                put_u64(&mut w, c.rule_losses);
                match c.longest_rule_win {
                    None => w.push(0),
                    Some((d, slot)) => {
                        w.push(1);
                        w.extend_from_slice(&d.to_le_bytes());
                        put_u64(&mut w, slot);
                    }
                }
            }
        }
        w
    }

    /// Parses [`TableHeader::to_bytes`]; every field is checked, nothing panics.
    pub fn from_bytes(bytes: &[u8]) -> Result<TableHeader, CodecError> {
        let mut r = Reader { bytes, at: 0 };
        let format_version = r.u32("format version")?;
        if format_version != FORMAT_VERSION && format_version != PART_FORMAT_VERSION {
            return Err(CodecError::BadHeader(format!(
                "format version {format_version} is not supported (this build reads \
                 {FORMAT_VERSION}, and {PART_FORMAT_VERSION} for parts of tables)"
            )));
        }
        let name_len = r.u8("signature length")? as usize;
        let name = r.take(name_len, "signature")?;
        let name = std::str::from_utf8(name)
            .map_err(|_| CodecError::BadHeader("signature is not text".into()))?;
        let signature: Signature = name
            .parse()
            .map_err(|e| CodecError::BadHeader(format!("signature '{name}': {e}")))?;
        if signature.name() != name {
            return Err(CodecError::BadHeader(format!(
                "signature '{name}' is not canonical"
            )));
        }
        if signature.material().piece_count() as usize > MAX_PIECES {
            return Err(CodecError::BadHeader(format!(
                "signature '{name}' has more than {MAX_PIECES} pieces"
            )));
        }
        let rules_id = r.u8("rule set")?;
        let rules = RuleSet::from_id(rules_id)
            .ok_or_else(|| CodecError::BadHeader(format!("unknown rule set id {rules_id}")))?;
        let index_scheme = r.u32("index scheme")?;
        let index_size = r.u64("index size")?;
        let index_fingerprint = r.u32("index fingerprint")?;
        let slots = if format_version == PART_FORMAT_VERSION {
            SlotRange {
                start: r.u64("first slot")?,
                end: r.u64("end of the slots")?,
            }
        } else {
            SlotRange {
                start: 0,
                end: index_size,
            }
        };
        let layout_id = r.u8("value layout")?;
        let layout = ValueLayout::from_id(layout_id)
            .ok_or_else(|| CodecError::BadHeader(format!("unknown value layout {layout_id}")))?;
        let filler_id = r.u8("filler")?;
        let filler = Filler::from_id(filler_id)
            .ok_or_else(|| CodecError::BadHeader(format!("unknown filler {filler_id}")))?;
        let block_values = r.u32("block size")?;
        let level = r.u32("level")? as i32;
        let dictionary = match r.u8("dictionary flag")? {
            0 => None,
            1 => Some(BlockInfo {
                len: r.u32("dictionary length")?,
                crc: r.u32("dictionary checksum")?,
            }),
            f => return Err(CodecError::BadHeader(format!("bad dictionary flag {f}"))),
        };
        let mut counts = TableCounts::default();
        for c in &mut counts.0 {
            c.legal = r.u64("legal count")?;
            c.wins = r.u64("win count")?;
            c.draws = r.u64("draw count")?;
            c.losses = r.u64("loss count")?;
            c.longest_win = match r.u8("longest win flag")? {
                0 => None,
                1 => {
                    let d = u16::from_le_bytes([r.u8("longest win")?, r.u8("longest win")?]);
                    Some((d, r.u64("longest win slot")?))
                }
                f => return Err(CodecError::BadHeader(format!("bad longest-win flag {f}"))),
            };
        }
        let values_crc = [r.u32("values checksum")?, r.u32("values checksum")?];
        let mut blocks: [Vec<BlockInfo>; 2] = [Vec::new(), Vec::new()];
        for side in &mut blocks {
            let n = r.u32("block count")? as usize;
            if n > r.remaining() / 8 {
                return Err(CodecError::BadHeader(format!(
                    "block table of {n} blocks does not fit the header"
                )));
            }
            side.reserve(n);
            for _ in 0..n {
                side.push(BlockInfo {
                    len: r.u32("block length")?,
                    crc: r.u32("block checksum")?,
                });
            }
        }
        if rules != RuleSet::CyclesAreDraws {
            for c in &mut counts.0 {
                c.rule_wins = r.u64("rule win count")?;
                c.rule_losses = r.u64("rule loss count")?;
                c.longest_rule_win = match r.u8("longest rule win flag")? {
                    0 => None,
                    1 => {
                        let d = u16::from_le_bytes([
                            r.u8("longest rule win")?,
                            r.u8("longest rule win")?,
                        ]);
                        Some((d, r.u64("longest rule win slot")?))
                    }
                    f => {
                        return Err(CodecError::BadHeader(format!(
                            "bad longest-rule-win flag {f}"
                        )));
                    }
                };
                if c.rule_wins > c.wins || c.rule_losses > c.losses {
                    return Err(CodecError::BadHeader(
                        "rule counts exceed the counts".into(),
                    ));
                }
            }
        }
        if r.remaining() != 0 {
            return Err(CodecError::BadHeader(format!(
                "{} unexpected bytes after the block table",
                r.remaining()
            )));
        }
        let header = TableHeader {
            format_version,
            signature,
            rules,
            index_scheme,
            index_size,
            index_fingerprint,
            slots,
            layout,
            filler,
            block_values,
            level,
            dictionary,
            counts,
            values_crc,
            blocks,
        };
        header.check_shape()?;
        Ok(header)
    }
}

fn put_u32(w: &mut Vec<u8>, v: u32) {
    w.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(w: &mut Vec<u8>, v: u64) {
    w.extend_from_slice(&v.to_le_bytes());
}

/// A bounds-checked little-endian reader.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CodecError> {
        if self.remaining() < n {
            return Err(CodecError::BadHeader(format!(
                "header ends inside the {what}"
            )));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, CodecError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, CodecError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, CodecError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

fn blocks_for(size: u64, block_values: u32) -> u32 {
    size.div_ceil(block_values.max(1) as u64) as u32
}

/// Counts of one side's codes, the first of which is slot `first`'s: legal, W/D/L, longest win.
fn count_side(codes: &[u16], first: u64) -> SideCounts {
    const CHUNK: usize = 1 << 16;
    codes
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut s = SideCounts::default();
            for (i, &code) in chunk.iter().enumerate() {
                s.add(first + (c * CHUNK + i) as u64, Value::decode(code));
            }
            s
        })
        .reduce(SideCounts::default, SideCounts::merge)
}

/// Counts of a table's values.
pub fn count_table(table: &Table) -> TableCounts {
    TableCounts(Color::ALL.map(|side| count_side(table.codes(side), table.slots().start)))
}

/// The codes of one block as stored: `codes` with the illegal slots filled.
fn filled(codes: &[u16], filler: Filler) -> impl Iterator<Item = u16> + Clone + '_ {
    let first_legal = codes
        .iter()
        .copied()
        .find(|&c| c != ILLEGAL)
        .unwrap_or(DRAW);
    codes.iter().scan(first_legal, move |last, &c| {
        Some(if c != ILLEGAL {
            *last = c;
            c
        } else {
            match filler {
                Filler::Previous => *last,
                Filler::Draw => DRAW,
                Filler::Marker => ILLEGAL,
            }
        })
    })
}

/// The set of codes `codes` takes: a bit per code.
fn code_set(codes: impl Iterator<Item = u16>) -> Vec<u64> {
    let mut set = vec![0u64; 1 << 10];
    for c in codes {
        set[c as usize / 64] |= 1 << (c % 64);
    }
    set
}

/// Whether one block of `codes`, filled, can be laid out as [`ValueLayout::Indexed`].
fn indexable(codes: &[u16], filler: Filler) -> bool {
    let set = code_set(filled(codes, filler));
    set.iter().map(|w| w.count_ones() as usize).sum::<usize>() <= MAX_BLOCK_CODES
}

/// The [`ValueLayout::Indexed`] bytes of the codes `filled` (at most 256 different ones).
fn indexed_bytes(filled: impl Iterator<Item = u16> + Clone) -> Vec<u8> {
    let set = code_set(filled.clone());
    // The rank of the first code of each word of the set.
    let mut rank = Vec::with_capacity(set.len());
    let mut count = 0usize;
    for w in &set {
        rank.push(count);
        count += w.count_ones() as usize;
    }
    assert!(
        (1..=MAX_BLOCK_CODES).contains(&count),
        "a block of 1 to 256 different codes"
    );
    let mut out = vec![(count - 1) as u8];
    for (i, &w) in set.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            let code = (i * 64) as u16 + w.trailing_zeros() as u16;
            out.extend(code.to_le_bytes());
            w &= w - 1;
        }
    }
    out.extend(filled.map(|c| {
        let (w, bit) = (c as usize / 64, c % 64);
        (rank[w] + (set[w] & ((1u64 << bit) - 1)).count_ones() as usize) as u8
    }));
    out
}

/// The bytes of one block of `codes`, illegal slots filled, in `layout` (for
/// [`ValueLayout::Indexed`], a block with at most 256 different codes, [`indexable`]).
fn block_bytes(codes: &[u16], layout: ValueLayout, filler: Filler) -> Vec<u8> {
    let filled = filled(codes, filler);
    match layout {
        ValueLayout::Narrow => filled.map(|c| c as u8).collect(),
        ValueLayout::Wide => filled.flat_map(|c| c.to_le_bytes()).collect(),
        ValueLayout::Indexed => indexed_bytes(filled),
        ValueLayout::Planes => {
            let mut out = vec![0u8; 2 * codes.len()];
            let (lo, hi) = out.split_at_mut(codes.len());
            for (i, c) in filled.enumerate() {
                lo[i] = c as u8;
                hi[i] = (c >> 8) as u8;
            }
            out
        }
    }
}

/// Encodes `table` with the default parameters; the header records the table's rule set.
pub fn encode_table(table: &Table) -> EncodedTable {
    encode_table_with(table, &CodecParams::default())
}

/// Encodes `table` with `params`. Blocks are compressed in parallel.
///
/// # Panics
/// If `params.block_values` is 0 or above [`MAX_BLOCK_VALUES`] (a programming error, not bad
/// input).
pub fn encode_table_with(table: &Table, params: &CodecParams) -> EncodedTable {
    assert!(
        params.block_values > 0 && params.block_values <= MAX_BLOCK_VALUES,
        "block size out of range"
    );
    let size = table.index().size();
    let slots = table.slots();
    assert!(
        slots.start.is_multiple_of(params.block_values as u64),
        "a part of a table starts on a block boundary"
    );
    let values = Color::ALL.map(|side| table.codes(side));
    let counts = count_table(table);
    // Codes that must fit: every legal code, and the illegal marker if it is stored as such.
    let max_code = values
        .par_iter()
        .flat_map(|v| v.par_iter())
        .copied()
        .filter(|&c| c != ILLEGAL)
        .max()
        .unwrap_or(DRAW);
    let narrow_fits = if params.filler == Filler::Marker {
        max_code < 0xFF
    } else {
        max_code <= 0xFF
    };
    let bv = params.block_values as usize;
    let indexable = || {
        values
            .par_iter()
            .flat_map(|v| v.par_chunks(bv))
            .all(|block| indexable(block, params.filler))
    };
    let layout = match params.layout {
        LayoutChoice::Auto | LayoutChoice::Fixed(ValueLayout::Narrow) if narrow_fits => {
            ValueLayout::Narrow
        }
        LayoutChoice::Auto | LayoutChoice::Fixed(ValueLayout::Narrow | ValueLayout::Indexed)
            if indexable() =>
        {
            ValueLayout::Indexed
        }
        LayoutChoice::Auto | LayoutChoice::Fixed(ValueLayout::Narrow | ValueLayout::Indexed) => {
            ValueLayout::Planes
        }
        LayoutChoice::Fixed(l) => l,
    };
    // A table in pawn slices may be assembled from parts solved apart, which cannot share a
    // dictionary trained on the whole; its slices are encoded alike either way.
    let sliced = table.index().slices().len() > 1;
    let dictionary = params
        .dictionary
        .filter(|_| !sliced)
        .and_then(|max| train_dictionary(table, layout, params.filler, bv, max as usize));
    // Each block is laid out, checksummed and compressed in one pass, so the uncompressed
    // bytes of the whole table never sit in memory at once.
    let prepared = dictionary
        .as_deref()
        .map(|d| zstd::dict::EncoderDictionary::copy(d, params.level));
    let per_side: [Vec<(Vec<u8>, crc32fast::Hasher)>; 2] = [0, 1].map(|s| {
        values[s]
            .par_chunks(bv)
            .map_init(
                || {
                    match &prepared {
                        None => zstd::bulk::Compressor::new(params.level),
                        Some(d) => zstd::bulk::Compressor::with_prepared_dictionary(d),
                    }
                    .expect("zstd compressor")
                },
                |c, chunk| {
                    let raw = block_bytes(chunk, layout, params.filler);
                    let mut crc = crc32fast::Hasher::new();
                    crc.update(&raw);
                    let mut block = c.compress(&raw).expect("zstd compression of a block");
                    // The buffer is sized for the worst case, ten times a typical block: keeping
                    // it would hold tens of megabytes of a large table's encoding.
                    block.shrink_to_fit();
                    (block, crc)
                },
            )
            .collect()
    });
    let values_crc = [0, 1].map(|s| {
        let mut h = crc32fast::Hasher::new();
        for (_, crc) in &per_side[s] {
            h.combine(crc);
        }
        h.finalize()
    });
    let blocks: [Vec<Vec<u8>>; 2] = per_side.map(|v| v.into_iter().map(|(b, _)| b).collect());
    let header = TableHeader {
        format_version: if table.is_whole() {
            FORMAT_VERSION
        } else {
            PART_FORMAT_VERSION
        },
        signature: table.signature(),
        rules: table.rules(),
        index_scheme: table.index().scheme(),
        index_size: size,
        index_fingerprint: index_fingerprint(table.index()),
        slots,
        layout,
        filler: params.filler,
        block_values: params.block_values,
        level: params.level,
        dictionary: dictionary.as_deref().map(BlockInfo::of),
        counts,
        values_crc,
        blocks: [0, 1].map(|s| blocks[s].iter().map(|b| BlockInfo::of(b)).collect()),
    };
    EncodedTable {
        header,
        dictionary,
        blocks,
    }
}

/// Trains a zstd dictionary of at most `max` bytes on blocks spread over the table (about 100
/// times the dictionary size in samples); `None` when training fails (too little data).
fn train_dictionary(
    table: &Table,
    layout: ValueLayout,
    filler: Filler,
    bv: usize,
    max: usize,
) -> Option<Vec<u8>> {
    let blocks: Vec<&[u16]> = Color::ALL
        .iter()
        .flat_map(|&side| table.codes(side).chunks(bv))
        .collect();
    let bytes_per_block = layout.max_block_len(bv);
    let want = (100 * max).div_ceil(bytes_per_block).max(8);
    let step = (blocks.len() / want).max(1);
    let samples: Vec<Vec<u8>> = blocks
        .par_iter()
        .step_by(step)
        .map(|c| block_bytes(c, layout, filler))
        .collect();
    if samples.len() < 8 {
        return None;
    }
    zstd::dict::from_samples(&samples, max).ok()
}

/// A block decompressor for one table: the prepared dictionary, if any.
pub struct BlockDecoder {
    dictionary: Option<zstd::dict::DecoderDictionary<'static>>,
}

impl fmt::Debug for BlockDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockDecoder(dictionary: {})", self.dictionary.is_some())
    }
}

thread_local! {
    static DCTX: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

impl BlockDecoder {
    /// A decoder using `dictionary` (which must match the table's header).
    pub fn new(dictionary: Option<&[u8]>) -> BlockDecoder {
        BlockDecoder {
            dictionary: dictionary.map(zstd::dict::DecoderDictionary::copy),
        }
    }

    /// Decompresses block `block` of a table (or part) with header `h` from its stored bytes
    /// `compressed`, checked to be a well-formed block of the header's layout
    /// ([`ValueLayout::check_block`]).
    pub fn decompress_block(
        &self,
        h: &TableHeader,
        block: u32,
        compressed: &[u8],
    ) -> Result<Vec<u8>, String> {
        let n = h.values_in_block(block);
        let raw = self.decompress(compressed, h.layout.max_block_len(n))?;
        h.layout.check_block(&raw, n)?;
        Ok(raw)
    }

    /// Decompresses `compressed` into at most `max` bytes.
    fn decompress(&self, compressed: &[u8], max: usize) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(max.max(1));
        DCTX.with(|cell| {
            let mut slot = cell.borrow_mut();
            let ctx = match slot.as_mut() {
                Some(c) => c,
                None => slot.insert(
                    zstd::zstd_safe::DCtx::try_create()
                        .ok_or_else(|| "cannot allocate a zstd context".to_string())?,
                ),
            };
            let r = match &self.dictionary {
                None => ctx.decompress(&mut out, compressed),
                Some(d) => ctx.decompress_using_ddict(&mut out, compressed, d.as_ddict()),
            };
            r.map_err(|code| match zstd::zstd_safe::get_error_name(code) {
                "Destination buffer is too small" => {
                    format!("it decompresses to more than {max} bytes")
                }
                name => format!("it does not decompress ({name})"),
            })
        })?;
        Ok(out)
    }
}

/// Checks that every block of `encoded` decompresses to a well-formed block of the header's
/// layout ([`ValueLayout::check_block`]) and that each side's values match the header's values
/// checksum, one block at a time: the checks of [`decode_table`] short of the index and the
/// counts, without holding the decoded table.
pub fn check_values(encoded: &EncodedTable) -> Result<(), CodecError> {
    encoded.validate()?;
    let h = &encoded.header;
    let decoder = BlockDecoder::new(encoded.dictionary.as_deref());
    for side in Color::ALL {
        let mut crc = crc32fast::Hasher::new();
        for (b, c) in encoded.blocks[side.index()].iter().enumerate() {
            let raw = raw_block(h, &decoder, side, b as u32, c)?;
            crc.update(&raw);
        }
        if crc.finalize() != h.values_crc[side.index()] {
            return Err(CodecError::ValuesChecksum {
                signature: h.signature,
                side,
            });
        }
    }
    Ok(())
}

/// The decompressed bytes of `side`'s block `block` of `encoded`, checked for their length.
fn block_bytes_of(
    encoded: &EncodedTable,
    decoder: &BlockDecoder,
    side: Color,
    block: u32,
) -> Result<Vec<u8>, CodecError> {
    let h = &encoded.header;
    let compressed = encoded.blocks[side.index()]
        .get(block as usize)
        .ok_or_else(|| CodecError::BadBlock {
            signature: h.signature,
            side,
            block,
            reason: "no such block".into(),
        })?;
    raw_block(h, decoder, side, block, compressed)
}

/// Block `block` of `side` of a table with header `h`, decompressed from `compressed`.
fn raw_block(
    h: &TableHeader,
    decoder: &BlockDecoder,
    side: Color,
    block: u32,
    compressed: &[u8],
) -> Result<Vec<u8>, CodecError> {
    decoder
        .decompress_block(h, block, compressed)
        .map_err(|reason| CodecError::BadBlock {
            signature: h.signature,
            side,
            block,
            reason,
        })
}

/// The codes of block `block` of `side` of a table or part with header `h`, from the block's
/// stored bytes `compressed` (checked against the header's block table first), as
/// [`decode_block`] gives them: for reading a stored table a block at a time.
pub fn decode_stored_block(
    h: &TableHeader,
    decoder: &BlockDecoder,
    side: Color,
    block: u32,
    compressed: &[u8],
) -> Result<Vec<u16>, CodecError> {
    let bad = |reason: String| CodecError::BadBlock {
        signature: h.signature,
        side,
        block,
        reason,
    };
    let info = h.blocks[side.index()]
        .get(block as usize)
        .ok_or_else(|| bad("no such block".into()))?;
    if BlockInfo::of(compressed) != *info {
        return Err(bad(
            "its bytes do not match the header's length and checksum".into(),
        ));
    }
    let raw = raw_block(h, decoder, side, block, compressed)?;
    let n = h.values_in_block(block);
    Ok((0..n).map(|i| h.layout.code_at(&raw, n, i)).collect())
}

/// The codes of one block as stored, for reading a table a block at a time without decoding it
/// whole: every legal slot's code is the one [`decode_table`] gives, an illegal slot holds the
/// filler (take legality from [`TableIndex::legal_sides`]). `decoder` is made with the table's
/// dictionary.
pub fn decode_block(
    encoded: &EncodedTable,
    decoder: &BlockDecoder,
    side: Color,
    block: u32,
) -> Result<Vec<u16>, CodecError> {
    let raw = block_bytes_of(encoded, decoder, side, block)?;
    let h = &encoded.header;
    let n = h.values_in_block(block);
    Ok((0..n).map(|i| h.layout.code_at(&raw, n, i)).collect())
}

/// Every check of [`decode_table`] (the blocks, the values' checksums, the index scheme, the
/// header's counts), a few blocks at a time in parallel, without holding the decoded table: the
/// coordinator checks uploads this way (a table of 5e8 entries decoded would take 1 GB).
pub fn check_table(encoded: &EncodedTable) -> Result<(), CodecError> {
    encoded.validate()?;
    let h = &encoded.header;
    let index = h.index()?;
    let decoder = BlockDecoder::new(encoded.dictionary.as_deref());
    type Part = [(crc32fast::Hasher, SideCounts); 2];
    let empty = || -> Part { Default::default() };
    // Both sides' blocks `b` cover the same slots, whose legality is computed once for both.
    let [red, black] = (0..h.block_count())
        .into_par_iter()
        .map(|b| {
            let raw =
                [Color::Red, Color::Black].map(|side| block_bytes_of(encoded, &decoder, side, b));
            let [red_raw, black_raw] = raw;
            let raw = [red_raw?, black_raw?];
            let n = h.values_in_block(b);
            let first = h.block_start(b);
            let mut part = empty();
            for (side, (crc, _)) in part.iter_mut().enumerate() {
                crc.update(&raw[side]);
            }
            for i in 0..n {
                let slot = first + i as u64;
                let legal = index.legal_sides(slot);
                for side in 0..2 {
                    if legal[side] {
                        let code = h.layout.code_at(&raw[side], n, i);
                        part[side].1.add(slot, Value::decode(code));
                    }
                }
            }
            Ok(part)
        })
        // rayon reduces neighbouring ranges in order, so the checksums combine in block order.
        .try_reduce(empty, |mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                x.0.combine(&y.0);
                x.1 = x.1.merge(y.1);
            }
            Ok(a)
        })?;
    for (side, (crc, _)) in [Color::Red, Color::Black].iter().zip([&red, &black]) {
        if crc.clone().finalize() != h.values_crc[side.index()] {
            return Err(CodecError::ValuesChecksum {
                signature: h.signature,
                side: *side,
            });
        }
    }
    if TableCounts([red.1, black.1]) != h.counts {
        return Err(CodecError::Inconsistent(
            h.signature,
            "decoded values do not give the header's counts".into(),
        ));
    }
    Ok(())
}

/// Decodes a whole table: checks every block, the values' checksums and the index scheme,
/// decompresses, and restores the [`Value::ILLEGAL_CODE`] code of every illegal slot by recomputing slot
/// legality from the index (in parallel), so the result can be verified like a freshly solved
/// table.
pub fn decode_table(encoded: &EncodedTable) -> Result<Table, CodecError> {
    encoded.validate()?;
    let h = &encoded.header;
    let index = h.index()?;
    let decoder = BlockDecoder::new(encoded.dictionary.as_deref());
    let mut values: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
    for side in Color::ALL {
        let s = side.index();
        let raw: Vec<Vec<u8>> = encoded.blocks[s]
            .par_iter()
            .enumerate()
            .map(|(b, c)| raw_block(h, &decoder, side, b as u32, c))
            .collect::<Result<_, _>>()?;
        let mut crc = crc32fast::Hasher::new();
        for b in &raw {
            crc.update(b);
        }
        if crc.finalize() != h.values_crc[s] {
            return Err(CodecError::ValuesChecksum {
                signature: h.signature,
                side,
            });
        }
        let mut codes = vec![0u16; h.slots.len() as usize];
        codes
            .par_chunks_mut(h.block_values as usize)
            .zip(raw.par_iter())
            .for_each(|(out, bytes)| {
                let n = out.len();
                for (i, o) in out.iter_mut().enumerate() {
                    *o = h.layout.code_at(bytes, n, i);
                }
            });
        values[s] = codes;
    }
    restore_illegal_from(&index, h.slots.start, &mut values);
    let table = Table::part(index, h.rules, h.slots, values);
    if count_table(&table) != h.counts {
        return Err(CodecError::Inconsistent(
            h.signature,
            "decoded values do not give the header's counts".into(),
        ));
    }
    Ok(table)
}

/// Sets every slot whose placement cannot be set up, or whose side not to move is in check, to
/// [`Value::ILLEGAL_CODE`]; leaves the others alone.
pub fn restore_illegal(index: &TableIndex, values: &mut [Vec<u16>; 2]) {
    restore_illegal_from(index, 0, values)
}

/// [`restore_illegal`] for the values of the slots from `first` on.
fn restore_illegal_from(index: &TableIndex, first: u64, values: &mut [Vec<u16>; 2]) {
    let [red, black] = values;
    const CHUNK: usize = 1 << 12;
    red.par_chunks_mut(CHUNK)
        .zip(black.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (r, b))| {
            for i in 0..r.len() {
                let [red_legal, black_legal] = index.legal_sides(first + (c * CHUNK + i) as u64);
                if !red_legal {
                    r[i] = ILLEGAL;
                }
                if !black_legal {
                    b[i] = ILLEGAL;
                }
            }
        });
}

/// Joins the parts of one table, in slot order and covering every slot, into the whole table:
/// the blocks concatenated, the counts merged and the values' checksums combined. The result
/// is byte for byte what [`encode_table`] gives for the whole table solved at once: where the
/// parts' value layouts differ (some need two bytes per value), the one-byte blocks are
/// widened, which is what encoding the whole would have chosen. The parts' blocks are trusted
/// as checked ([`check_table`]); only the parts' agreement is checked here.
pub fn assemble_parts(parts: Vec<EncodedTable>) -> Result<EncodedTable, CodecError> {
    let headers: Vec<TableHeader> = parts.iter().map(|p| p.header.clone()).collect();
    let mut assembly = PartAssembler::new(&headers)?;
    let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for p in parts {
        assembly.start_part(&p.header);
        for side in Color::ALL {
            for (b, stored) in p.blocks[side.index()].iter().enumerate() {
                let block = assembly.block(&p.header, side, b as u32, stored.clone())?;
                blocks[side.index()].push(block);
            }
        }
    }
    Ok(EncodedTable {
        header: assembly.finish()?,
        dictionary: None,
        blocks,
    })
}

/// [`assemble_parts`] one block at a time, for a store that joins the parts of a table of any
/// size in bounded memory: [`PartAssembler::new`] checks that the parts' headers join, then
/// for each part in slot order [`PartAssembler::start_part`] and its blocks, side by side and
/// in order, through [`PartAssembler::block`] (which hands back each block as the whole table
/// stores it), and [`PartAssembler::finish`] gives the whole table's header.
pub struct PartAssembler {
    template: TableHeader,
    layout: ValueLayout,
    counts: TableCounts,
    crc: [crc32fast::Hasher; 2],
    blocks: [Vec<BlockInfo>; 2],
    decoder: BlockDecoder,
    compressor: Option<zstd::bulk::Compressor<'static>>,
}

impl PartAssembler {
    /// Checks that the parts with headers `parts` (in slot order) were encoded alike and cover
    /// their table exactly, and picks the whole table's value layout.
    pub fn new(parts: &[TableHeader]) -> Result<PartAssembler, CodecError> {
        let h0 = parts
            .first()
            .ok_or_else(|| CodecError::BadHeader("no parts to assemble".into()))?;
        let sig = h0.signature;
        let mismatch = |m: String| CodecError::Inconsistent(sig, m);
        let mut next = 0u64;
        for h in parts {
            let same = (
                h.signature,
                h.rules,
                h.index_scheme,
                h.index_size,
                h.index_fingerprint,
                h.filler,
                h.block_values,
                h.level,
            ) == (
                h0.signature,
                h0.rules,
                h0.index_scheme,
                h0.index_size,
                h0.index_fingerprint,
                h0.filler,
                h0.block_values,
                h0.level,
            );
            if !same || h.dictionary.is_some() {
                return Err(mismatch(format!(
                    "the part of slots {} was encoded unlike the first part",
                    h.slots
                )));
            }
            if h.slots.start != next {
                return Err(mismatch(format!(
                    "the parts do not join: slots {} follow slot {next}",
                    h.slots
                )));
            }
            next = h.slots.end;
        }
        if next != h0.index_size {
            return Err(mismatch(format!(
                "the parts end at slot {next} of {}",
                h0.index_size
            )));
        }
        // What encoding the whole chooses: one byte per value if every part has it, else
        // indexed if every block can be (every part's can), else two bytes per value.
        let rank = |l: ValueLayout| match l {
            ValueLayout::Narrow => Some(0),
            ValueLayout::Indexed => Some(1),
            ValueLayout::Planes => Some(2),
            ValueLayout::Wide => None,
        };
        let layout = if parts.iter().all(|h| h.layout == h0.layout) {
            h0.layout
        } else if parts.iter().all(|h| rank(h.layout).is_some()) {
            let widest = parts.iter().max_by_key(|h| rank(h.layout));
            widest.map_or(h0.layout, |h| h.layout)
        } else {
            return Err(mismatch("the parts' value layouts cannot be joined".into()));
        };
        Ok(PartAssembler {
            template: h0.clone(),
            layout,
            counts: TableCounts::default(),
            crc: [crc32fast::Hasher::new(), crc32fast::Hasher::new()],
            blocks: [Vec::new(), Vec::new()],
            decoder: BlockDecoder::new(None),
            compressor: None,
        })
    }

    /// Starts the next part, with header `h`: its counts, and the checksums of its values
    /// when its blocks are kept as they are and their length is known without decompressing
    /// them (all layouts but [`ValueLayout::Indexed`]).
    pub fn start_part(&mut self, h: &TableHeader) {
        self.counts = self.counts.merge(h.counts);
        if h.layout == self.layout
            && let Some(len) = self.layout.block_len(h.slots.len() as usize)
        {
            for (c, &part_crc) in self.crc.iter_mut().zip(&h.values_crc) {
                c.combine(&crc32fast::Hasher::new_with_initial_len(
                    part_crc, len as u64,
                ));
            }
        }
    }

    /// Block `block` of `side` of the current part (header `h`), as stored (`stored`, checked
    /// against the part's header): the block the whole table stores in its place, the same
    /// bytes, or the values laid out again when another part needed a wider layout than this
    /// one (one byte per value, then indexed, then two bytes: what encoding the whole table at
    /// once chooses).
    pub fn block(
        &mut self,
        h: &TableHeader,
        side: Color,
        block: u32,
        stored: Vec<u8>,
    ) -> Result<Vec<u8>, CodecError> {
        let out = if h.layout == self.layout {
            if self.layout.block_len(h.values_in_block(block)).is_none() {
                // Checksummed by its decompressed bytes, whose length varies.
                let raw = raw_block(h, &self.decoder, side, block, &stored)?;
                self.crc[side.index()].update(&raw);
            }
            stored
        } else {
            let raw = raw_block(h, &self.decoder, side, block, &stored)?;
            let n = h.values_in_block(block);
            let codes: Vec<u16> = (0..n)
                .map(|i| match h.layout.code_at(&raw, n, i) {
                    // One byte per value holds the illegal marker as 0xFF; the other layouts
                    // hold it whole, and 0xFF there is a value.
                    0xFF if h.filler == Filler::Marker && h.layout == ValueLayout::Narrow => {
                        ILLEGAL
                    }
                    c => c,
                })
                .collect();
            let raw = block_bytes(&codes, self.layout, h.filler);
            self.crc[side.index()].update(&raw);
            let level = self.template.level;
            let compressor = self.compressor.get_or_insert_with(|| {
                zstd::bulk::Compressor::new(level).expect("zstd compressor")
            });
            let mut block = compressor
                .compress(&raw)
                .expect("zstd compression of a block");
            block.shrink_to_fit();
            block
        };
        self.blocks[side.index()].push(BlockInfo::of(&out));
        Ok(out)
    }

    /// The whole table's header, once every part's blocks have been through
    /// [`PartAssembler::block`].
    pub fn finish(self) -> Result<TableHeader, CodecError> {
        let h0 = self.template;
        let header = TableHeader {
            format_version: FORMAT_VERSION,
            slots: SlotRange {
                start: 0,
                end: h0.index_size,
            },
            layout: self.layout,
            counts: self.counts,
            values_crc: self.crc.map(|c| c.finalize()),
            blocks: self.blocks,
            ..h0
        };
        header.check_shape()?;
        Ok(header)
    }
}
