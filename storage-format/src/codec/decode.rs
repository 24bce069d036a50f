//! Decoding: decompressing blocks ([`BlockDecoder`]), reading a table a block at a time, and
//! checking or decoding a whole table against its header.

use super::error::CodecError;
use super::header::{BlockInfo, EncodedTable, TableHeader, count_table};
use super::layout::ILLEGAL;
use rayon::prelude::*;
use std::fmt;
use xiangqi::Color;
use xqtb_core::{SideCounts, Table, TableCounts, TableIndex, Value};

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
