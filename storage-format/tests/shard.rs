//! Shard files refuse every kind of damage with its own error, without panicking, and a refused
//! import leaves the store untouched.

#[path = "../../probe/tests/common/mod.rs"]
mod common;

use common::{RULES, id, sig, solved};
use storage_format::codec::{
    BlockDecoder, BlockInfo, CodecParams, EncodedTable, check_table, decode_block, decode_table,
    encode_table, encode_table_with,
};
use storage_format::shard::{MAGIC, PREAMBLE_LEN, SHARD_VERSION};
use storage_format::store::{ShardDir, SledStore, StoreError, TableStore};
use storage_format::{ShardError, read_shard, write_shard};
use xiangqi::Color;
use xqtb_core::{Signature, TableId};

/// KNvK in 64-value blocks: 58 blocks per side in a file of a few kilobytes, so every bit of it
/// can be flipped.
fn small_table(dictionary: bool) -> EncodedTable {
    encode_table_with(
        solved().table(&sig("KNvK")),
        &CodecParams {
            block_values: 64,
            level: 3,
            dictionary: dictionary.then_some(1024),
            ..CodecParams::default()
        },
    )
}

/// What a flipped bit at `byte` must be reported as.
fn expected_error(t: &EncodedTable, header_len: usize, file_len: usize, byte: usize) -> ShardError {
    let header_end = PREAMBLE_LEN + header_len + 4;
    match byte {
        0..8 => ShardError::BadMagic,
        8..12 => ShardError::UnsupportedVersion(0),
        12..PREAMBLE_LEN => ShardError::PreambleChecksum,
        b if b < header_end => ShardError::HeaderChecksum,
        b if b >= file_len - 4 => ShardError::FileChecksum,
        b => {
            let mut at = header_end;
            if let Some(d) = &t.dictionary {
                if b < at + d.len() {
                    return ShardError::DictionaryChecksum;
                }
                at += d.len();
            }
            for side in Color::ALL {
                for (i, blk) in t.blocks[side.index()].iter().enumerate() {
                    if b < at + blk.len() {
                        return ShardError::BlockChecksum {
                            side,
                            block: i as u32,
                        };
                    }
                    at += blk.len();
                }
            }
            unreachable!("byte {b} is past the blocks")
        }
    }
}

#[test]
fn a_flipped_bit_anywhere_is_refused_with_the_error_of_its_part() {
    for dictionary in [false, true] {
        let t = small_table(dictionary);
        assert_eq!(t.header.dictionary.is_some(), dictionary);
        let bytes = write_shard(&t);
        assert_eq!(read_shard(&bytes).unwrap(), t);
        let header_len = t.header.to_bytes().len();
        let mut seen = std::collections::HashSet::new();
        for byte in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[byte] ^= 1 << bit;
                let err = read_shard(&bad).expect_err("a flipped bit must be refused");
                let want = expected_error(&t, header_len, bytes.len(), byte);
                match (&err, &want) {
                    (ShardError::UnsupportedVersion(v), ShardError::UnsupportedVersion(_)) => {
                        assert_eq!(*v, SHARD_VERSION ^ (1 << (8 * (byte - 8) + bit)));
                    }
                    _ => assert_eq!(err, want, "bit {bit} of byte {byte}"),
                }
                seen.insert(std::mem::discriminant(&err));
            }
        }
        // Magic, version, preamble, header, file, blocks, and the dictionary when there is one.
        assert_eq!(seen.len(), 6 + dictionary as usize);
    }
}

#[test]
fn a_truncated_file_is_refused_at_every_length() {
    let bytes = write_shard(&small_table(false));
    for len in 0..bytes.len() {
        match read_shard(&bytes[..len]) {
            Err(ShardError::Truncated { needed, len: l }) => {
                assert_eq!(l, len as u64);
                assert!(needed > l);
            }
            other => panic!("{len} bytes: {other:?}"),
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        read_shard(&longer),
        Err(ShardError::TrailingData { .. })
    ));
}

#[test]
fn wrong_magic_and_version_are_refused() {
    let bytes = write_shard(&small_table(false));
    let mut zip = bytes.clone();
    zip[..4].copy_from_slice(b"PK\x03\x04");
    assert_eq!(read_shard(&zip), Err(ShardError::BadMagic));
    assert_eq!(read_shard(b"hello"), Err(ShardError::BadMagic));
    assert_eq!(&bytes[..8], &MAGIC);
    let mut v2 = bytes.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let err = read_shard(&v2).unwrap_err();
    assert_eq!(err, ShardError::UnsupportedVersion(2));
    assert!(
        err.to_string().contains("version 2 is not supported"),
        "{err}"
    );
    // Each error names what is wrong.
    for (e, words) in [
        (ShardError::BadMagic, "not an xqtb shard"),
        (
            ShardError::Truncated { needed: 9, len: 3 },
            "truncated: 3 bytes, 9 expected",
        ),
        (
            ShardError::BlockChecksum {
                side: Color::Black,
                block: 7,
            },
            "block 7 for Black to move is corrupt",
        ),
        (ShardError::FileChecksum, "whole-file checksum"),
    ] {
        assert!(e.to_string().contains(words), "{e}");
    }
}

#[test]
fn a_header_that_passes_its_checksum_but_lies_is_refused() {
    // Headers written with a good checksum but contents that do not hold together.
    let t = small_table(false);
    let mut counts = t.clone();
    counts.header.counts[Color::Black].wins += 1;
    match read_shard(&write_shard(&counts)) {
        Err(ShardError::BadHeader(m)) => assert!(m.contains("do not add up"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Counts whose sum wraps around 2^64 to the legal count (the input of
    // fuzz/regressions/upload/counts-overflow): refused, never added with an overflow, which
    // panics in debug builds.
    let mut wrapping = t.clone();
    let c = &mut wrapping.header.counts[Color::Black];
    c.wins += 1 << 63;
    c.draws += 1 << 63;
    match read_shard(&write_shard(&wrapping)) {
        Err(ShardError::BadHeader(m)) => assert!(m.contains("do not add up"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Block boundaries moved by one byte (the total still adds up): the blocks fail.
    let mut shifted = t.clone();
    shifted.header.blocks[0][0].len += 1;
    shifted.header.blocks[0][1].len -= 1;
    assert_eq!(
        read_shard(&write_shard(&shifted)),
        Err(ShardError::BlockChecksum {
            side: Color::Red,
            block: 0
        })
    );
}

#[test]
fn a_refused_import_leaves_the_store_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let krk = encode_table(solved().table(&sig("KRvK")));
    store.put_table(&krk).unwrap();
    let before = store.list_tables().unwrap();
    let good = write_shard(&small_table(false));
    let mut flipped = good.clone();
    let mid = good.len() / 2;
    flipped[mid] ^= 0x10;
    let mut wrong_version = good.clone();
    wrong_version[8] = 9;
    // A damaged copy of a table already stored does not touch the stored one either.
    let mut krk_bad = write_shard(&krk);
    let n = krk_bad.len();
    krk_bad[n - 10] ^= 1;
    for (what, bad) in [
        ("flipped bit", flipped),
        ("truncated", good[..good.len() - 1].to_vec()),
        ("wrong version", wrong_version),
        ("bad magic", b"XQTBSHRE".to_vec()),
        ("damaged KRvK", krk_bad),
    ] {
        let err = store.import_shard(&bad).expect_err(what);
        assert!(matches!(err, StoreError::Shard(_)), "{what}: {err}");
        assert_eq!(store.list_tables().unwrap(), before, "{what}");
        assert!(store.header(&id("KNvK")).unwrap().is_none(), "{what}");
        assert_eq!(store.load_table(&id("KRvK")).unwrap(), krk, "{what}");
    }
    store.import_shard(&good).unwrap();
    assert_eq!(store.list_tables().unwrap().len(), 2);
}

/// A file whose blocks match their checksums but not the values checksum (or do not
/// decompress) is refused at import and leaves the store empty, as the fuzzer's inputs in
/// fuzz/regressions/shard_import/ must be.
#[test]
fn an_import_checks_the_values_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let t = small_table(false);
    // Two full blocks of different content swapped, with the block table to match.
    let red = &t.header.blocks[0];
    let (i, j) = (1..red.len() - 1)
        .find_map(|j| (t.blocks[0][0] != t.blocks[0][j]).then_some((0, j)))
        .unwrap();
    let mut swapped = t.clone();
    swapped.blocks[0].swap(i, j);
    swapped.header.blocks[0].swap(i, j);
    // A block that is not zstd at all.
    let mut garbage = t.clone();
    garbage.blocks[1][0] = b"not zstd".to_vec();
    garbage.header.blocks[1][0] = BlockInfo::of(b"not zstd");
    for (what, bad, want) in [
        ("swapped blocks", swapped, "do not match their checksum"),
        ("garbage block", garbage, "does not decompress"),
    ] {
        let file = write_shard(&bad);
        assert!(read_shard(&file).is_ok(), "{what}: the frame checks pass");
        let err = store.import_shard(&file).expect_err(what);
        assert!(err.to_string().contains(want), "{what}: {err}");
        assert!(store.list_tables().unwrap().is_empty(), "{what}");
    }
    store.import_shard(&write_shard(&t)).unwrap();
}

#[test]
fn checking_a_table_block_by_block_finds_what_decoding_it_finds() {
    let t = small_table(true);
    let index = xqtb_core::TableIndex::new(t.header.signature);
    let decoded = decode_table(&t).unwrap();
    let decoder = BlockDecoder::new(t.dictionary.as_deref());
    for side in Color::ALL {
        let blocks: Vec<u16> = (0..t.blocks[side.index()].len() as u32)
            .flat_map(|b| decode_block(&t, &decoder, side, b).unwrap())
            .collect();
        assert_eq!(blocks.len(), decoded.codes(side).len());
        for (slot, (&stored, code)) in blocks.iter().zip(decoded.codes(side).iter()).enumerate() {
            if index.legal_sides(slot as u64)[side.index()] {
                assert_eq!(stored, code, "{side} slot {slot}");
            }
        }
    }
    let mut swapped = t.clone();
    let j = (1..swapped.blocks[1].len() - 1)
        .find(|&j| swapped.blocks[1][0] != swapped.blocks[1][j])
        .unwrap();
    swapped.blocks[1].swap(0, j);
    swapped.header.blocks[1].swap(0, j);
    let mut garbage = t.clone();
    garbage.blocks[0][3] = b"not zstd".to_vec();
    garbage.header.blocks[0][3] = BlockInfo::of(b"not zstd");
    let mut lying = t.clone();
    lying.header.counts.0[0].wins += 1;
    for (what, table) in [
        ("sound", t),
        ("swapped blocks", swapped),
        ("garbage block", garbage),
        ("lying counts", lying),
    ] {
        let whole = decode_table(&table).map(|_| ()).map_err(|e| e.to_string());
        let blockwise = check_table(&table).map_err(|e| e.to_string());
        assert_eq!(blockwise, whole, "{what}");
        assert_eq!(blockwise.is_ok(), what == "sound", "{what}: {blockwise:?}");
    }
}

fn shard_dir_with(sig: &Signature, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let name = ShardDir::file_name(&TableId::new(RULES, *sig));
    std::fs::write(dir.path().join(name), bytes).unwrap();
    dir
}

#[test]
fn a_damaged_header_in_a_shard_directory_names_the_file() {
    let s = sig("KRvK");
    let mut bytes = write_shard(&encode_table(solved().table(&s)));
    bytes[PREAMBLE_LEN + 3] ^= 1;
    let dir = shard_dir_with(&s, &bytes);
    match ShardDir::open(dir.path()) {
        Err(StoreError::BadFile { path, error }) => {
            assert!(path.ends_with("KRvK.xqtb"), "{path}");
            assert_eq!(error, ShardError::HeaderChecksum);
        }
        other => panic!("{other:?}"),
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any bytes at all: an error or a table, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = read_shard(&bytes);
            let _ = storage_format::TableHeader::from_bytes(&bytes);
        }

        /// Several bytes of a real shard overwritten: always refused, never a panic.
        #[test]
        fn damaged_shards_are_refused(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)
        ) {
            let good = write_shard(&small_table(false));
            let mut bad = good.clone();
            for (at, byte) in edits {
                let i = at.index(bad.len());
                bad[i] = byte;
            }
            prop_assume!(bad != good);
            prop_assert!(read_shard(&bad).is_err());
        }
    }

    #[test]
    fn headers_round_trip() {
        for t in [small_table(false), small_table(true)] {
            let bytes = t.header.to_bytes();
            assert_eq!(
                storage_format::TableHeader::from_bytes(&bytes).unwrap(),
                t.header
            );
            // Every strict prefix is refused.
            for n in 0..bytes.len() {
                assert!(storage_format::TableHeader::from_bytes(&bytes[..n]).is_err());
            }
        }
    }
}

/// A table with pawns numbered by index scheme 1 (one layout, no pawn slices) stays readable:
/// its header names its scheme, it decodes under that index, and every position probes to the
/// value the sliced table gives it.
#[test]
fn a_pawn_table_of_index_scheme_1_stays_readable() {
    use xqtb_core::{MAX_PIECES, MemoryTables, Probe, SCHEME_SLICED, SCHEME_WHOLE, Table};
    let tables = solver::solve_closure_in_memory(&[sig("KRvKP")], RULES, |_, _| {}).unwrap();
    let sliced = tables.get(&id("KRvKP")).unwrap();
    assert_eq!(sliced.index().scheme(), SCHEME_SLICED);
    let old = xqtb_core::TableIndex::with_scheme(sliced.signature(), SCHEME_WHOLE).unwrap();
    let mut sq = [0u8; MAX_PIECES];
    let n = old.piece_count();
    let codes = Color::ALL.map(|side| {
        (0..old.size())
            .map(|slot| {
                old.decode(slot, &mut sq);
                match sliced.index().encode(&sq[..n]) {
                    Some(s) if old.placement_is_possible(&sq[..n]) => {
                        sliced.codes(side).get(s as usize)
                    }
                    _ => xqtb_core::Value::ILLEGAL_CODE,
                }
            })
            .collect::<Vec<u16>>()
    });
    let old_table = Table::new(old, RULES, codes);
    let bytes = write_shard(&encode_table(&old_table));
    let read = decode_table(&read_shard(&bytes).unwrap()).unwrap();
    assert_eq!(read.index().scheme(), SCHEME_WHOLE);
    assert_eq!(read.index().size(), old_table.index().size());
    let (mut then, mut now) = (MemoryTables::new(), MemoryTables::new());
    then.insert(std::sync::Arc::new(read));
    now.insert(sliced.clone());
    let mut checked = 0;
    for slot in 0..sliced.index().size() {
        for side in Color::ALL {
            let Some(board) = sliced.index().board(slot, side) else {
                continue;
            };
            if board.opponent_in_check() {
                continue;
            }
            assert_eq!(
                then.probe(RULES, &board),
                now.probe(RULES, &board),
                "{}",
                board.fen()
            );
            checked += 1;
        }
    }
    assert!(checked > 100_000, "{checked}");
}

/// KRvKP (whose index has several pawn slices) solved whole.
fn krvkp() -> std::sync::Arc<xqtb_core::Table> {
    let tables = solver::solve_closure_in_memory(&[sig("KRvKP")], RULES, |_, _| {}).unwrap();
    tables.get(&id("KRvKP")).unwrap().clone()
}

/// `t` cut into its slices' spans, each encoded as a part.
fn encoded_parts(t: &xqtb_core::Table) -> Vec<EncodedTable> {
    let index = t.index();
    (0..index.slices().len())
        .map(|i| {
            let span = index.slice_span(i);
            let codes = Color::ALL.map(|side| {
                t.codes(side)
                    .slice(span.start as usize..span.end as usize)
                    .into_owned()
            });
            encode_table(&xqtb_core::Table::part(index.clone(), RULES, span, codes))
        })
        .collect()
}

/// A part decodes to its own codes, illegal slots included, whatever block size it was encoded
/// with: its first slot, a block boundary, need not be a multiple of 64 (the decoder keeps a bit
/// per slot counted from the part's first slot).
#[test]
fn a_part_starting_at_any_slot_decodes_to_its_codes() {
    use storage_format::codec::{CodecParams, decode_table, encode_table_with};
    let whole = krvkp();
    let index = whole.index();
    let size = index.size();
    for (start, end, block_values) in [(1000, 70_000, 1000), (16_384, size, 16_384), (7, 72, 7)] {
        let span = xqtb_core::SlotRange { start, end };
        let codes = Color::ALL.map(|side| {
            whole
                .codes(side)
                .slice(start as usize..end as usize)
                .into_owned()
        });
        let part = xqtb_core::Table::part(index.clone(), RULES, span, codes);
        let params = CodecParams {
            block_values,
            ..CodecParams::default()
        };
        let back = decode_table(&encode_table_with(&part, &params)).unwrap();
        for side in Color::ALL {
            assert!(back.codes(side) == part.codes(side), "{span} {side:?}");
            assert!(back.codes(side).is_narrow(), "{span} {side:?}");
        }
        assert!(
            part.codes(Color::Red)
                .iter()
                .any(|c| c == xqtb_core::Value::ILLEGAL_CODE),
            "{span} holds illegal slots"
        );
    }
}

/// All the slots of `t`'s table.
fn whole_slots(t: &xqtb_core::Table) -> xqtb_core::SlotRange {
    xqtb_core::SlotRange::whole(&t.signature())
}

/// The parts of a sliced table, encoded one by one, assemble into exactly the bytes of the
/// whole table encoded at once, also when the parts' value layouts differ (one part's codes do
/// not fit a byte, and another's blocks hold too many codes to be indexed); parts that do not
/// join are refused.
#[test]
fn parts_assemble_into_the_whole_table_byte_for_byte() {
    use storage_format::codec::{ValueLayout, assemble_parts};
    let whole = krvkp();
    let index = whole.index();
    assert!(index.slices().len() > 1);
    let parts_of = encoded_parts;
    let long = with_a_long_value(&whole);
    let many = with_many_codes(&long);
    for t in [&*whole, &long, &many] {
        let expected = encode_table(t);
        let parts = parts_of(t);
        assert!(parts.iter().all(|p| p.header.is_part()));
        for p in &parts {
            let back = read_shard(&write_shard(p)).unwrap();
            assert_eq!(&back, p);
            storage_format::codec::check_table(p).unwrap();
            let d = decode_table(p).unwrap();
            let span = p.header.slots;
            assert_eq!(d.slots(), span);
            for side in Color::ALL {
                assert_eq!(
                    d.codes(side).to_vec(),
                    t.codes(side)
                        .slice(span.start as usize..span.end as usize)
                        .into_owned()
                );
            }
        }
        // A run of parts joins into the part of their slots, as it is encoded at once.
        let (a, b) = (parts[1].header.slots.start, parts[3].header.slots.end);
        let run = xqtb_core::SlotRange { start: a, end: b };
        let codes = Color::ALL.map(|side| t.codes(side).slice(a as usize..b as usize).into_owned());
        let part = xqtb_core::Table::part(index.clone(), RULES, run, codes);
        let joined = assemble_parts(parts[1..4].to_vec(), run).unwrap();
        assert_eq!(joined.header.slots, run);
        assert_eq!(write_shard(&joined), write_shard(&encode_table(&part)));
        let assembled = assemble_parts(parts, whole_slots(t)).unwrap();
        assert_eq!(write_shard(&assembled), write_shard(&expected));
    }
    assert_eq!(encode_table(&whole).header.layout, ValueLayout::Narrow);
    assert_eq!(encode_table(&long).header.layout, ValueLayout::Indexed);
    assert_eq!(encode_table(&many).header.layout, ValueLayout::Planes);
    let layouts: std::collections::HashSet<_> =
        parts_of(&many).iter().map(|p| p.header.layout).collect();
    assert_eq!(layouts.len(), 3, "{layouts:?}");
    let mut gap = parts_of(&whole);
    gap.remove(1);
    let err = assemble_parts(gap, whole_slots(&whole))
        .unwrap_err()
        .to_string();
    assert!(err.contains("do not join"), "{err}");
    let mut short = parts_of(&whole);
    short.pop();
    let err = assemble_parts(short, whole_slots(&whole))
        .unwrap_err()
        .to_string();
    assert!(err.contains("end at slot"), "{err}");
}

/// `t` with one value that needs two bytes in its third slice, so that its parts have mixed
/// value layouts (the others one byte).
fn with_a_long_value(t: &xqtb_core::Table) -> xqtb_core::Table {
    use xqtb_core::Value;
    let mut long = t.clone();
    let first = t.index().slices()[2].slots.start as usize;
    let slot = first
        + long
            .codes(Color::Red)
            .iter()
            .skip(first)
            .position(|c| c != Value::ILLEGAL_CODE)
            .unwrap();
    long.set_code(Color::Red, slot, Value::Win(301).encode());
    long
}

/// Parts whose illegal slots hold the illegal marker join byte for byte too: a part laid out
/// again reads its marker as illegal only where it is one (0xFF in one byte per value), not the
/// code 0xFF of an indexed part.
#[test]
fn parts_keeping_the_illegal_marker_assemble_byte_for_byte() {
    use storage_format::codec::{CodecParams, Filler, assemble_parts, encode_table_with};
    let params = CodecParams {
        filler: Filler::Marker,
        ..CodecParams::default()
    };
    let mut t = with_many_codes(&with_a_long_value(&krvkp()));
    let first = t.index().slices()[2].slots.start as usize;
    let codes = t.codes(Color::Black);
    let slot = first + codes.iter().skip(first).position(|c| c != 0xFFFF).unwrap();
    t.set_code(Color::Black, slot, 0xFF);
    let index = t.index().clone();
    let parts: Vec<EncodedTable> = (0..index.slices().len())
        .map(|i| {
            let span = index.slice_span(i);
            let codes = Color::ALL.map(|side| {
                t.codes(side)
                    .slice(span.start as usize..span.end as usize)
                    .into_owned()
            });
            let part = xqtb_core::Table::part(index.clone(), RULES, span, codes);
            encode_table_with(&part, &params)
        })
        .collect();
    let assembled = assemble_parts(parts, whole_slots(&t)).unwrap();
    assert!(
        write_shard(&assembled) == write_shard(&encode_table_with(&t, &params)),
        "the assembled table differs from the whole encoded at once"
    );
}

/// `t` with 300 different codes in one block of its fifth slice, so that its parts' layouts
/// are all three: one byte per value, indexed (the third slice, see [`with_a_long_value`]) and
/// two bytes per value.
fn with_many_codes(t: &xqtb_core::Table) -> xqtb_core::Table {
    use xqtb_core::Value;
    let mut many = t.clone();
    let first = t.index().slices()[4].slots.start as usize;
    let codes = many.codes(Color::Black);
    let legal: Vec<usize> = (first..first + 16384)
        .filter(|&s| codes.get(s) != Value::ILLEGAL_CODE)
        .take(300)
        .collect();
    assert_eq!(legal.len(), 300);
    for (i, s) in legal.into_iter().enumerate() {
        many.set_code(Color::Black, s, Value::Win(2 * i as u16 + 1).encode());
    }
    many
}

/// A sled store keeps the parts of a table until they cover it, across a reopening, and then
/// holds the table whole, byte for byte as if it had been stored whole (also when some parts'
/// blocks are widened to two bytes per value), and no part.
#[test]
fn a_store_assembles_a_table_from_its_parts_in_any_order() {
    let whole = krvkp();
    let n = whole.index().slices().len();
    for (t, mixed) in [((*whole).clone(), false), (with_a_long_value(&whole), true)] {
        let mut parts = encoded_parts(&t);
        let layouts_differ = parts
            .iter()
            .any(|p| p.header.layout != parts[0].header.layout);
        assert_eq!(layouts_differ, mixed);
        parts.swap(0, n - 1);
        parts.swap(1, 3);
        let dir = tempfile::tempdir().unwrap();
        let last = parts.pop().unwrap();
        {
            let store = SledStore::open(dir.path()).unwrap();
            let err = store.put_table(&parts[0]).unwrap_err().to_string();
            assert!(err.contains("cannot store a part"), "{err}");
            for p in &parts {
                assert!(!store.put_part(p).unwrap());
            }
            // The same part again replaces itself.
            assert!(!store.put_part(&parts[0]).unwrap());
            assert_eq!(store.part_headers(&id("KRvKP")).unwrap().len(), n - 1);
            assert!(store.header(&id("KRvKP")).unwrap().is_none());
            assert!(store.list_tables().unwrap().is_empty());
        }
        let store = SledStore::open(dir.path()).unwrap();
        assert_eq!(store.part_headers(&id("KRvKP")).unwrap().len(), n - 1);
        assert!(store.put_part(&last).unwrap());
        assert!(store.part_headers(&id("KRvKP")).unwrap().is_empty());
        assert_eq!(
            store.export_shard(&id("KRvKP")).unwrap(),
            write_shard(&encode_table(&t))
        );
        drop(store);
        // Nothing of the parts is left in the database.
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("xqtb-tables").unwrap();
        assert_eq!(tree.scan_prefix(b"p/").count(), 0);
        assert_eq!(tree.scan_prefix(b"w/").count(), 0);
    }
}

/// A write cut short (a crash: blocks written, the header not yet, the write's marker still
/// set) is wiped when the store is opened again; the tables written whole are untouched.
#[test]
fn an_interrupted_write_is_wiped_when_the_store_opens() {
    let whole = krvkp();
    let dir = tempfile::tempdir().unwrap();
    let krvkn = solver::solve_closure_in_memory(&[sig("KRvKN")], RULES, |_, _| {}).unwrap();
    let krvkn = encode_table(krvkn.get(&id("KRvKN")).unwrap());
    SledStore::open(dir.path())
        .unwrap()
        .put_table(&krvkn)
        .unwrap();
    let name = storage_format::store::store_name(&id("KRvKP"));
    {
        // What a crash leaves: a table's and a part's blocks under their markers, no header.
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("xqtb-tables").unwrap();
        let parts = encoded_parts(&whole);
        for (prefix, blocks) in [
            (format!("b/{name}/"), &encode_table(&whole).blocks[0]),
            (format!("p/{name}/\0\0\0\0\0\0\0\0"), &parts[0].blocks[0]),
        ] {
            tree.insert(format!("w/{prefix}"), &[][..]).unwrap();
            for (b, data) in blocks.iter().enumerate().take(3) {
                let mut key = prefix.clone().into_bytes();
                if prefix.starts_with("p/") {
                    key.push(b'b');
                }
                key.push(0);
                key.extend_from_slice(&(b as u32).to_be_bytes());
                tree.insert(key, data.as_slice()).unwrap();
            }
        }
        assert_eq!(tree.scan_prefix(b"w/").count(), 2);
        db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert!(store.header(&id("KRvKP")).unwrap().is_none());
    assert!(store.part_headers(&id("KRvKP")).unwrap().is_empty());
    assert_eq!(store.load_table(&id("KRvKN")).unwrap(), krvkn);
    drop(store);
    let db = sled::open(dir.path()).unwrap();
    let tree = db.open_tree("xqtb-tables").unwrap();
    for prefix in ["w/", "p/", &format!("b/{name}/")] {
        assert_eq!(tree.scan_prefix(prefix.as_bytes()).count(), 0, "{prefix}");
    }
}

/// A store lists the tables it holds parts of, under either rule set, and forgets a table once
/// its parts are assembled.
#[test]
fn a_store_lists_the_tables_it_holds_parts_of() {
    use xqtb_core::RuleSet;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    assert!(store.tables_in_parts().unwrap().is_empty());
    let mut last = Vec::new();
    for rules in [RuleSet::Asian, RuleSet::CyclesAreDraws] {
        let tables = solver::solve_closure_in_memory(&[sig("KRvKP")], rules, |_, _| {}).unwrap();
        let t = tables.get(&TableId::new(rules, sig("KRvKP"))).unwrap();
        let index = t.index();
        let mut parts: Vec<EncodedTable> = (0..index.slices().len())
            .map(|i| {
                let span = index.slice_span(i);
                let codes = Color::ALL.map(|side| {
                    t.codes(side)
                        .slice(span.start as usize..span.end as usize)
                        .into_owned()
                });
                encode_table(&xqtb_core::Table::part(index.clone(), rules, span, codes))
            })
            .collect();
        last.push(parts.pop().unwrap());
        for p in &parts {
            assert!(!store.put_part(p).unwrap());
        }
        // A whole table is not listed here.
        store
            .put_table(&encode_table(
                tables.get(&TableId::new(rules, sig("KRvK"))).unwrap(),
            ))
            .unwrap();
    }
    let krvkp = |rules| TableId::new(rules, sig("KRvKP"));
    // In store-name order: `KRvKP` before `asian/KRvKP`.
    assert_eq!(
        store.tables_in_parts().unwrap(),
        [krvkp(RuleSet::CyclesAreDraws), krvkp(RuleSet::Asian)]
    );
    assert!(store.put_part(&last.pop().unwrap()).unwrap());
    assert_eq!(store.tables_in_parts().unwrap(), [krvkp(RuleSet::Asian)]);
}

/// Sweeping sled's page cache (after enough writes, and when asked) loses nothing: the tables
/// written around sweeps read back byte for byte, also after the store is opened again, and the
/// sweep's own keys are not listed as tables. (What a sweep frees is measured by the soak test.)
#[test]
fn sweeping_the_page_cache_keeps_every_table() {
    let dir = tempfile::tempdir().unwrap();
    // KNvK in 64-value blocks: 116 blocks, so writing it three times sweeps at least once.
    let knvk = small_table(false);
    let krvkn = solver::solve_closure_in_memory(&[sig("KRvKN")], RULES, |_, _| {}).unwrap();
    let krvkn = encode_table(krvkn.get(&id("KRvKN")).unwrap());
    {
        let store = SledStore::open(dir.path()).unwrap();
        for _ in 0..3 {
            store.put_table(&knvk).unwrap();
        }
        store.sweep_page_cache().unwrap();
        store.put_table(&krvkn).unwrap();
        assert_eq!(store.load_table(&id("KNvK")).unwrap(), knvk);
        store.sweep_page_cache().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    store.sweep_page_cache().unwrap();
    let listed: Vec<TableId> = store
        .list_tables()
        .unwrap()
        .iter()
        .map(|h| h.id())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(store.load_table(&id("KNvK")).unwrap(), knvk);
    assert_eq!(store.load_table(&id("KRvKN")).unwrap(), krvkn);
}
