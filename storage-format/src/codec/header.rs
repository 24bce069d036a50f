//! The header of a stored table: its fields, its bytes ([`TableHeader::to_bytes`],
//! [`TableHeader::from_bytes`]) and its checks, and [`EncodedTable`], a header with the blocks
//! and dictionary its block table describes.

use super::error::CodecError;
use super::layout::{Filler, ValueLayout};
use rayon::prelude::*;
use xiangqi::Color;
use xqtb_core::{
    Codes, MAX_PIECES, RuleSet, SCHEME_SLICED, SCHEME_WHOLE, SideCounts, Signature, SlotRange,
    Table, TableCounts, TableId, TableIndex, Value,
};

/// Version of the header and block encoding described here. Bump on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// Format version of a *part* of a table (a run of whole pawn slices, as a slice job uploads
/// it): version 1 with the slot range the blocks hold after the index fingerprint. A whole
/// table is always written as version 1, so its bytes do not depend on how it was solved.
pub const PART_FORMAT_VERSION: u32 = 2;

/// Largest block the format accepts, in values.
pub const MAX_BLOCK_VALUES: u32 = 1 << 20;

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
        // Tables of rule sets with repetition rules end with their rule counts; tables of
        // cycles-are-draws end with the block table, so those written before rule sets existed
        // read the same.
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
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CodecError> {
        if self.remaining() < n {
            return Err(CodecError::BadHeader(format!(
                "header ends inside the {what}"
            )));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn u8(&mut self, what: &str) -> Result<u8, CodecError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, CodecError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, CodecError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

fn blocks_for(size: u64, block_values: u32) -> u32 {
    size.div_ceil(block_values.max(1) as u64) as u32
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

/// Counts of one side's codes, the first of which is slot `first`'s: legal, W/D/L, longest win.
fn count_side(codes: &Codes, first: u64) -> SideCounts {
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
