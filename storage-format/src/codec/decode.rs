//! Decoding: decompressing blocks ([`BlockDecoder`]), reading a table a block at a time, and
//! checking or decoding a whole table against its header.

use super::error::CodecError;
use super::header::{BlockInfo, EncodedTable, TableHeader};
use super::layout::ILLEGAL;
use rayon::prelude::*;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::Color;
use xqtb_core::{
    BlockSource, CodeSet, Codes, Narrowing, RuleSet, SideCounts, SlotRange, Table, TableCounts,
    TableIndex, Value,
};

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
    ///
    /// [`ValueLayout::check_block`]: super::ValueLayout::check_block
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
///
/// [`ValueLayout::check_block`]: super::ValueLayout::check_block
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
pub(super) fn raw_block(
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
    let index = encoded.header.index()?;
    let decoder = BlockDecoder::new(encoded.dictionary.as_deref());
    scan(encoded, &index, &decoder, None)?;
    Ok(())
}

/// What a pass over a table's blocks finds of one side to move: the checksum of its stored
/// values, the counts of its legal slots' values, and their codes.
#[derive(Default)]
struct SideScan {
    crc: crc32fast::Hasher,
    counts: SideCounts,
    codes: CodeSet,
}

/// A bit per slot of a table or part (from its first slot), for one side to move.
type SlotBits = Vec<AtomicU64>;

fn slot_bits(slots: u64) -> SlotBits {
    (0..slots.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
}

fn has_bit(bits: &SlotBits, i: usize) -> bool {
    bits[i / 64].load(Relaxed) >> (i % 64) & 1 == 1
}

/// Reads both sides' blocks once, a few at a time in parallel, and checks them: each block
/// well-formed, each side's checksum and the counts of its legal values those of the header.
/// Returns each side's scan; `legal`, when given, gets a bit for each slot legal with that side
/// to move.
fn scan(
    encoded: &EncodedTable,
    index: &TableIndex,
    decoder: &BlockDecoder,
    legal: Option<&[SlotBits; 2]>,
) -> Result<[SideScan; 2], CodecError> {
    let h = &encoded.header;
    let empty = <[SideScan; 2]>::default;
    // Both sides' blocks `b` cover the same slots, whose legality is computed once for both.
    let [red, black] = (0..h.block_count())
        .into_par_iter()
        .map(|b| {
            let raw =
                [Color::Red, Color::Black].map(|side| block_bytes_of(encoded, decoder, side, b));
            let [red_raw, black_raw] = raw;
            let raw = [red_raw?, black_raw?];
            let n = h.values_in_block(b);
            let first = h.block_start(b);
            let mut part = empty();
            for (side, p) in part.iter_mut().enumerate() {
                p.crc.update(&raw[side]);
            }
            let mut words = [0u64; 2];
            for i in 0..n {
                let slot = first + i as u64;
                // The bits count from the part's first slot, which may be any slot.
                let bit = slot - h.slots.start;
                let is_legal = index.legal_sides(slot);
                for side in 0..2 {
                    if is_legal[side] {
                        let code = h.layout.code_at(&raw[side], n, i);
                        part[side].counts.add(slot, Value::decode(code));
                        part[side].codes.insert(code);
                        words[side] |= 1 << (bit % 64);
                    }
                }
                // A word of bits is written when it is full or the block ends (blocks may
                // share a word when their length is no multiple of 64).
                if let Some(legal) = legal
                    && (bit % 64 == 63 || i + 1 == n)
                {
                    for side in 0..2 {
                        legal[side][(bit / 64) as usize]
                            .fetch_or(std::mem::take(&mut words[side]), Relaxed);
                    }
                }
            }
            Ok(part)
        })
        // rayon reduces neighbouring ranges in order, so the checksums combine in block order.
        .try_reduce(empty, |mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                x.crc.combine(&y.crc);
                x.counts = x.counts.merge(y.counts);
                x.codes.union(&y.codes);
            }
            Ok(a)
        })?;
    for (side, s) in [Color::Red, Color::Black].iter().zip([&red, &black]) {
        if s.crc.clone().finalize() != h.values_crc[side.index()] {
            return Err(CodecError::ValuesChecksum {
                signature: h.signature,
                side: *side,
            });
        }
    }
    if TableCounts([red.counts, black.counts]) != h.counts {
        return Err(CodecError::Inconsistent(
            h.signature,
            "decoded values do not give the header's counts".into(),
        ));
    }
    Ok([red, black])
}

/// Decodes a whole table: checks every block, the values' checksums, the index scheme and the
/// header's counts, decompresses, and restores the [`Value::ILLEGAL_CODE`] code of every
/// illegal slot by recomputing slot legality from the index (in parallel), so the result can
/// be verified like a freshly solved table.
///
/// A side whose codes fit a byte per slot is written a byte per slot at once ([`Codes`]): the
/// blocks are read twice, once to check them and learn the codes and the legal slots, once to
/// write them, so that no side is ever held at two bytes per slot first (the tables a job
/// depends on are decoded so).
pub fn decode_table(encoded: &EncodedTable) -> Result<Table, CodecError> {
    encoded.validate()?;
    let h = &encoded.header;
    let index = h.index()?;
    let decoder = BlockDecoder::new(encoded.dictionary.as_deref());
    let slots = h.slots.len();
    let legal = [slot_bits(slots), slot_bits(slots)];
    let [red, black] = scan(encoded, &index, &decoder, Some(&legal))?;
    let side_codes = |side: Color, scan: SideScan| -> Result<Codes, CodecError> {
        let legal = &legal[side.index()];
        let mut set = scan.codes;
        let legal_slots: u64 = legal
            .iter()
            .map(|w| w.load(Relaxed).count_ones() as u64)
            .sum();
        if legal_slots < slots {
            set.insert(ILLEGAL);
        }
        Ok(match Narrowing::of(&set) {
            Some(narrowing) => {
                let bytes = fill_side(encoded, &decoder, side, legal, |c| narrowing.byte(c))?;
                narrowing.codes(bytes)
            }
            None => Codes::from(fill_side(encoded, &decoder, side, legal, |c| c)?),
        })
    };
    let codes = [
        side_codes(Color::Red, red)?,
        side_codes(Color::Black, black)?,
    ];
    Ok(Table::part(index, h.rules, h.slots, codes))
}

/// The values of `side`, block by block in parallel, each slot's code (the illegal code where
/// `legal` has no bit) written as `map` gives it.
fn fill_side<T: Copy + Default + Send>(
    encoded: &EncodedTable,
    decoder: &BlockDecoder,
    side: Color,
    legal: &SlotBits,
    map: impl Fn(u16) -> T + Sync,
) -> Result<Vec<T>, CodecError> {
    let h = &encoded.header;
    let mut out = vec![T::default(); h.slots.len() as usize];
    out.par_chunks_mut(h.block_values as usize)
        .enumerate()
        .try_for_each(|(b, chunk)| {
            let b = b as u32;
            let raw = block_bytes_of(encoded, decoder, side, b)?;
            let n = h.values_in_block(b);
            let first = (h.block_start(b) - h.slots.start) as usize;
            for (i, o) in chunk.iter_mut().enumerate() {
                let code = if has_bit(legal, first + i) {
                    h.layout.code_at(&raw, n, i)
                } else {
                    ILLEGAL
                };
                *o = map(code);
            }
            Ok(())
        })?;
    Ok(out)
}

/// An encoded table read a block at a time ([`BlockSource`]), each block decoded when asked
/// for: what the checks that must not decode a large table whole read (the coordinator's sample
/// check of an upload, the verification of a table solved in groups).
pub struct EncodedBlocks<'a> {
    table: &'a EncodedTable,
    index: TableIndex,
    decoder: BlockDecoder,
}

impl<'a> EncodedBlocks<'a> {
    /// Reads `table` a block at a time; fails when its header names no index this build has.
    pub fn new(table: &'a EncodedTable) -> Result<EncodedBlocks<'a>, CodecError> {
        Ok(EncodedBlocks {
            table,
            index: table.header.index()?,
            decoder: BlockDecoder::new(table.dictionary.as_deref()),
        })
    }
}

impl BlockSource for EncodedBlocks<'_> {
    fn index(&self) -> &TableIndex {
        &self.index
    }
    fn rules(&self) -> RuleSet {
        self.table.header.rules
    }
    fn slots(&self) -> SlotRange {
        self.table.header.slots
    }
    fn block_slots(&self) -> u64 {
        self.table.header.block_values as u64
    }
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
        let block = u32::try_from(block).map_err(|_| format!("no block {block}"))?;
        decode_block(self.table, &self.decoder, side, block).map_err(|e| e.to_string())
    }
}
