//! Value layouts: how one block's codes are laid out as bytes before compression, and read
//! back from the decompressed bytes; what illegal slots hold ([`Filler`]).

use xqtb_core::Value;

/// The code of an illegal slot ([`Value::ILLEGAL_CODE`]).
pub(super) const ILLEGAL: u16 = Value::ILLEGAL_CODE;
/// The code of a draw ([`Value::DRAW_CODE`]).
pub(super) const DRAW: u16 = Value::DRAW_CODE;

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
    /// fit a byte but whose blocks use few of them each (rule values), so such tables also
    /// store smaller and compress faster (see `BENCHMARKS.md`, "Storage").
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
pub(super) fn indexable(codes: &[u16], filler: Filler) -> bool {
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
pub(super) fn block_bytes(codes: &[u16], layout: ValueLayout, filler: Filler) -> Vec<u8> {
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
