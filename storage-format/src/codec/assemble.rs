//! Joining the parts of a table (runs of whole pawn slices, or groups of a job's slots, solved
//! and encoded apart) into the whole table or a larger part of it, byte for byte as encoding it
//! at once would give.

use super::decode::{BlockDecoder, raw_block};
use super::error::CodecError;
use super::header::{BlockInfo, EncodedTable, FORMAT_VERSION, PART_FORMAT_VERSION, TableHeader};
use super::layout::{Filler, ILLEGAL, ValueLayout, block_bytes};
use xiangqi::Color;
use xqtb_core::{SlotRange, TableCounts};

/// Joins the parts of one table, in slot order and covering the slots `slots` exactly (all of
/// the table's, or a part's such as a pawn slice's), into the table or part of those slots:
/// the blocks concatenated, the counts merged and the values' checksums combined. The result
/// is byte for byte what [`encode_table`] gives for those slots solved at once: where the
/// parts' value layouts differ (some need two bytes per value), the one-byte blocks are
/// widened, which is what encoding the whole would have chosen. The parts' blocks are trusted
/// as checked ([`check_table`]); only the parts' agreement is checked here.
///
/// [`encode_table`]: super::encode_table
/// [`check_table`]: super::check_table
pub fn assemble_parts(
    parts: Vec<EncodedTable>,
    slots: SlotRange,
) -> Result<EncodedTable, CodecError> {
    let headers: Vec<TableHeader> = parts.iter().map(|p| p.header.clone()).collect();
    let mut assembly = PartAssembler::new(&headers, slots)?;
    let mut blocks: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for p in parts {
        assembly.start_part(&p.header);
        // Each block moves into the whole table (most are kept as they are), so the table's
        // bytes are never on the heap twice.
        let [red, black] = p.blocks;
        for (side, side_blocks) in [(Color::Red, red), (Color::Black, black)] {
            for (b, stored) in side_blocks.into_iter().enumerate() {
                let block = assembly.block(&p.header, side, b as u32, stored)?;
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
/// in order, through [`PartAssembler::block`] (which hands back each block as the joined
/// table stores it), and [`PartAssembler::finish`] gives the joined table's header.
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
    /// the slots `slots` of their table exactly, and picks the joined table's value layout.
    pub fn new(parts: &[TableHeader], slots: SlotRange) -> Result<PartAssembler, CodecError> {
        let h0 = parts
            .first()
            .ok_or_else(|| CodecError::BadHeader("no parts to assemble".into()))?;
        let sig = h0.signature;
        let mismatch = |m: String| CodecError::Inconsistent(sig, m);
        let mut next = slots.start;
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
        if next != slots.end || slots.end > h0.index_size {
            return Err(mismatch(format!(
                "the parts end at slot {next}, not at the end of slots {slots} ({} in all)",
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
            template: TableHeader {
                slots,
                ..h0.clone()
            },
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

    /// The joined table's header, once every part's blocks have been through
    /// [`PartAssembler::block`].
    pub fn finish(self) -> Result<TableHeader, CodecError> {
        let h0 = self.template;
        let header = TableHeader {
            format_version: if h0.is_part() {
                PART_FORMAT_VERSION
            } else {
                FORMAT_VERSION
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
