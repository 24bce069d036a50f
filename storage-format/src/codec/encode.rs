//! Encoding: a solved [`Table`] (or a part of one) into its header and compressed blocks, with
//! the parameters that choose the block size, zstd level, dictionary, layout and filler.

use super::header::{
    BlockInfo, EncodedTable, FORMAT_VERSION, MAX_BLOCK_VALUES, PART_FORMAT_VERSION, TableHeader,
    count_table, index_fingerprint,
};
use super::layout::{DRAW, Filler, ILLEGAL, ValueLayout, block_bytes, indexable};
use rayon::prelude::*;
use xiangqi::Color;
use xqtb_core::Table;

/// Values per block unless told otherwise (see `BENCHMARKS.md`, "Storage", for the comparison).
pub const DEFAULT_BLOCK_VALUES: u32 = 1 << 14;

/// zstd level unless told otherwise. Level 14 stores tables about as small as the levels above
/// it in much less time: above 14 zstd switches to optimal parsing, which costs far more CPU
/// than it saves bytes on these blocks (see `BENCHMARKS.md`, "Storage").
pub const DEFAULT_LEVEL: i32 = 14;

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
            .all(|block| indexable(&block, params.filler))
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
                    let raw = block_bytes(&chunk, layout, params.filler);
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
    // Blocks by side and number: a narrow table's block is widened only when it is sampled.
    let blocks: Vec<(Color, usize)> = Color::ALL
        .iter()
        .flat_map(|&side| (0..table.codes(side).len().div_ceil(bv)).map(move |b| (side, b)))
        .collect();
    let bytes_per_block = layout.max_block_len(bv);
    let want = (100 * max).div_ceil(bytes_per_block).max(8);
    let step = (blocks.len() / want).max(1);
    let samples: Vec<Vec<u8>> = blocks
        .par_iter()
        .step_by(step)
        .map(|&(side, b)| {
            let codes = table.codes(side);
            let block = codes.slice(b * bv..((b + 1) * bv).min(codes.len()));
            block_bytes(&block, layout, filler)
        })
        .collect();
    if samples.len() < 8 {
        return None;
    }
    zstd::dict::from_samples(&samples, max).ok()
}
