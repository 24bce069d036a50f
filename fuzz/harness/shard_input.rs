//! Turning fuzz bytes into a shard file that gets past the checksums.
//!
//! Random bytes almost never carry four matching CRC-32s, so a fuzzer fed raw files only
//! explores the first checks. The first input byte is a mode; the rest is the file:
//!
//! * bit 0 set: the preamble is repaired (magic, version, the real file length, the header
//!   length clamped to the file) and the preamble, header and whole-file checksums recomputed;
//! * bit 1 set (with bit 0): when the header parses, its block table's checksums (and the
//!   dictionary's) are recomputed from the bytes where the blocks are;
//! * bit 2 set (with bits 0 and 1): the values checksums are recomputed from the blocks as they
//!   decompress.
//!
//! So a mutated header field, block length or block byte reaches the checks behind the
//! checksums: header fields, the block table against the file, the index, decompression and
//! the values.

use storage_format::codec::{BlockDecoder, TableHeader};
use storage_format::shard::{MAGIC, PREAMBLE_LEN, SHARD_VERSION};

/// The shard file an input describes.
pub fn shard_file(data: &[u8]) -> Vec<u8> {
    let Some((&mode, file)) = data.split_first() else {
        return Vec::new();
    };
    let mut f = file.to_vec();
    if mode & 1 == 0 {
        return f;
    }
    if f.len() < PREAMBLE_LEN + 8 {
        f.resize(PREAMBLE_LEN + 8, 0);
    }
    let len = f.len();
    f[..8].copy_from_slice(&MAGIC);
    f[8..12].copy_from_slice(&SHARD_VERSION.to_le_bytes());
    let mut header_len = le_u32(&f[12..16]) as usize;
    if PREAMBLE_LEN + header_len + 8 > len {
        header_len = len - PREAMBLE_LEN - 8;
        f[12..16].copy_from_slice(&(header_len as u32).to_le_bytes());
    }
    f[16..24].copy_from_slice(&(len as u64).to_le_bytes());
    let pre = crc32(&f[..24]);
    f[24..28].copy_from_slice(&pre.to_le_bytes());
    let end = PREAMBLE_LEN + header_len;
    if mode & 2 != 0
        && let Ok(mut h) = TableHeader::from_bytes(&f[PREAMBLE_LEN..end])
    {
        fix_blocks(&mut h, &f[end + 4..len - 4], mode & 4 != 0);
        let bytes = h.to_bytes();
        if bytes.len() == header_len {
            f[PREAMBLE_LEN..end].copy_from_slice(&bytes);
        }
    }
    let crc = crc32(&f[PREAMBLE_LEN..end]);
    f[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32(&f[..len - 4]);
    f[len - 4..].copy_from_slice(&crc.to_le_bytes());
    f
}

/// Recomputes the block table's checksums (and, with `values`, the values checksums) of `h`
/// from `body`, the bytes between the header checksum and the file checksum.
fn fix_blocks(h: &mut TableHeader, body: &[u8], values: bool) {
    let mut at = 0usize;
    let mut take = |n: u32| -> Option<&[u8]> {
        let s = body.get(at..at.checked_add(n as usize)?)?;
        at += n as usize;
        Some(s)
    };
    let mut dictionary = None;
    if let Some(d) = &mut h.dictionary {
        match take(d.len) {
            Some(bytes) => {
                d.crc = crc32(bytes);
                dictionary = Some(bytes.to_vec());
            }
            None => return,
        }
    }
    let decoder = values.then(|| BlockDecoder::new(dictionary.as_deref()));
    for side in 0..2 {
        let mut values_crc = crc32fast::Hasher::new();
        let mut whole = true;
        for b in 0..h.blocks[side].len() {
            let Some(bytes) = take(h.blocks[side][b].len) else {
                return;
            };
            h.blocks[side][b].crc = crc32(bytes);
            if let Some(d) = &decoder {
                match d.decompress_block(h, b as u32, bytes) {
                    Ok(raw) => values_crc.update(&raw),
                    Err(_) => whole = false,
                }
            }
        }
        if decoder.is_some() && whole {
            h.values_crc[side] = values_crc.finalize();
        }
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn crc32(b: &[u8]) -> u32 {
    crc32fast::hash(b)
}
