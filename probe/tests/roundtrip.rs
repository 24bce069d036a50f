//! Round trips: solve -> encode -> decode, solve -> store -> probe, export -> import -> probe,
//! and probing shard files in place all give the solver's values for every slot.

mod common;

use common::{RULES, codes, id, legal_positions, sig, solved};
use probe::Tablebase;
use std::sync::Arc;
use storage_format::codec::{
    CodecError, CodecParams, Filler, LayoutChoice, ValueLayout, decode_table, encode_table,
    encode_table_with,
};
use storage_format::shard::read_shard_layout;
use storage_format::store::{ShardDir, SledStore, StoreError, TableStore};
use storage_format::{ShardError, write_shard};
use xiangqi::Color;
use xqtb_core::{Probe, ProbeError, Signature, Table, TableId, Value};

const ILLEGAL: u16 = Value::ILLEGAL_CODE;

/// Every legal position of every solved table probes to the solver's value through `probe`;
/// returns how many positions were checked.
fn assert_probes_match(probe: &dyn Probe, what: &str) -> u64 {
    let s = solved();
    let mut checked = 0;
    for sig in &s.sigs {
        let table = s.table(sig);
        for (side, slot, board) in legal_positions(table) {
            let want = table.value(side, slot);
            let got = probe
                .probe(RULES, &board)
                .unwrap_or_else(|e| panic!("{what}: {sig} {side} slot {slot}: {e}"));
            assert_eq!(
                got,
                want,
                "{what}: {sig} {side} slot {slot} {}",
                board.fen()
            );
            checked += 1;
        }
    }
    checked
}

fn store_all(store: &dyn TableStore) {
    for sig in &solved().sigs {
        store.put_table(&encode_table(solved().table(sig))).unwrap();
    }
}

#[test]
fn encode_decode_round_trips_under_every_parameter() {
    let s = solved();
    let variants = [
        CodecParams::default(),
        CodecParams {
            block_values: 1000,
            level: 1,
            ..CodecParams::default()
        },
        CodecParams {
            block_values: 4096,
            level: 3,
            layout: LayoutChoice::Fixed(ValueLayout::Planes),
            filler: Filler::Draw,
            ..CodecParams::default()
        },
        CodecParams {
            block_values: 1 << 16,
            level: 1,
            layout: LayoutChoice::Fixed(ValueLayout::Wide),
            filler: Filler::Marker,
            ..CodecParams::default()
        },
        CodecParams {
            block_values: 2048,
            level: 3,
            dictionary: Some(4096),
            filler: Filler::Marker,
            ..CodecParams::default()
        },
        CodecParams {
            block_values: 3000,
            level: 3,
            layout: LayoutChoice::Fixed(ValueLayout::Indexed),
            filler: Filler::Draw,
            ..CodecParams::default()
        },
        CodecParams {
            block_values: 2048,
            level: 3,
            layout: LayoutChoice::Fixed(ValueLayout::Indexed),
            dictionary: Some(4096),
            filler: Filler::Marker,
        },
    ];
    for sig in &s.sigs {
        let table = s.table(sig);
        for p in &variants {
            let enc = encode_table_with(table, p);
            assert_eq!(enc.header.block_values, p.block_values);
            assert_eq!(enc.header.signature, *sig);
            if let LayoutChoice::Fixed(l) = p.layout {
                assert_eq!(enc.header.layout, l, "{sig} {p:?}");
            }
            let dec = decode_table(&enc).unwrap_or_else(|e| panic!("{sig} {p:?}: {e}"));
            assert!(codes(&dec) == codes(table), "{sig} {p:?}: values differ");
        }
    }
    // The dictionary variant does train a dictionary on a table large enough.
    let enc = encode_table_with(s.table(&sig("KRvKN")), &variants[4]);
    assert!(enc.dictionary.is_some() && enc.header.dictionary.is_some());
}

#[test]
fn header_counts_match_the_verifier_and_decoded_tables_verify() {
    let s = solved();
    for sig in &s.sigs {
        let table = s.table(sig);
        let enc = encode_table(table);
        let dec = decode_table(&enc).unwrap();
        // The decoded table, illegal slots restored from the index, passes full verification.
        let stats = solver::verify(&dec, &s.tables).unwrap();
        for side in Color::ALL {
            let (c, v) = (&enc.header.counts[side], &stats[side]);
            assert_eq!(
                (c.legal, c.wins, c.draws, c.losses),
                (v.legal, v.wins, v.draws, v.losses),
                "{sig} {side}"
            );
            assert_eq!(c.longest_win, v.longest_win, "{sig} {side}");
        }
        assert_eq!(enc.header.layout, ValueLayout::Narrow, "{sig}");
    }
}

#[test]
fn codes_beyond_a_byte_switch_to_indexed_blocks_then_to_two_byte_planes() {
    // Synthetic tables (values need not be consistent for the codec): first a distance too
    // long for one byte, then 300 different codes in one block, more than it can index.
    let mut t: Table = solved().table(&sig("KRvK")).as_ref().clone();
    let legal: Vec<usize> = (0..t.codes(Color::Red).len())
        .filter(|&s| t.codes(Color::Red).get(s) != ILLEGAL)
        .collect();
    t.set_code(Color::Red, legal[0], Value::Win(301).encode());
    let enc = encode_table(&t);
    assert_eq!(enc.header.layout, ValueLayout::Indexed);
    assert_eq!(
        enc.header.counts[Color::Red].longest_win,
        Some((301, legal[0] as u64))
    );
    let dec = decode_table(&enc).unwrap();
    assert!(codes(&dec) == codes(&t));
    // Decoded a byte per slot where a side's codes fit one (the decoder learns the codes
    // before it writes them), two bytes where they do not.
    assert!(Color::ALL.iter().all(|&side| dec.codes(side).is_narrow()));
    assert!(legal[299] < 1 << 14, "300 legal slots in the first block");
    for (i, &s) in legal[..300].iter().enumerate() {
        t.set_code(Color::Red, s, Value::Win(2 * i as u16 + 1).encode());
    }
    let enc = encode_table(&t);
    assert_eq!(enc.header.layout, ValueLayout::Planes);
    let dec = decode_table(&enc).unwrap();
    assert!(codes(&dec) == codes(&t));
    assert!(!dec.codes(Color::Red).is_narrow() && dec.codes(Color::Black).is_narrow());
}

/// An indexed block whose checksums match but whose list of codes or indices is malformed (a
/// crafted shard) is an error naming the block, never a panic or a value.
#[test]
fn a_malformed_indexed_block_is_an_error() {
    let mut t: Table = solved().table(&sig("KRvK")).as_ref().clone();
    let slot = t
        .codes(Color::Red)
        .iter()
        .position(|c| c != ILLEGAL)
        .unwrap();
    t.set_code(Color::Red, slot, Value::Win(301).encode());
    let good = encode_table(&t);
    assert_eq!(good.header.layout, ValueLayout::Indexed);
    let raw = storage_format::codec::BlockDecoder::new(None)
        .decompress_block(&good.header, 0, &good.blocks[0][0])
        .unwrap();
    let codes_listed = raw[0] as usize + 1;
    let n = good.header.values_in_block(0);
    assert_eq!(raw.len(), 1 + 2 * codes_listed + n);
    let mut out_of_list = raw.clone();
    out_of_list[1 + 2 * codes_listed] = codes_listed as u8;
    let mut unordered = raw.clone();
    unordered.swap(1, 3);
    unordered.swap(2, 4);
    let mut short = raw.clone();
    short.pop();
    for (bad, why) in [
        (out_of_list, "index"),
        (unordered, "ascending"),
        (short, "bytes instead of"),
    ] {
        let mut enc = good.clone();
        enc.blocks[0][0] = zstd::bulk::compress(&bad, 3).unwrap();
        enc.header.blocks[0][0] = storage_format::codec::BlockInfo::of(&enc.blocks[0][0]);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&bad);
        let decoder = storage_format::codec::BlockDecoder::new(None);
        for b in 1..enc.blocks[0].len() {
            crc.update(
                &decoder
                    .decompress_block(&enc.header, b as u32, &enc.blocks[0][b])
                    .unwrap(),
            );
        }
        enc.header.values_crc[0] = crc.finalize();
        let err = decode_table(&enc).unwrap_err();
        assert!(
            matches!(err, CodecError::BadBlock { block: 0, .. }) && err.to_string().contains(why),
            "{why}: {err}"
        );
    }
}

#[test]
fn a_table_for_another_index_layout_is_refused() {
    let t = solved().table(&sig("KRvK"));
    let good = encode_table(t);
    let mut other_scheme = good.clone();
    other_scheme.header.index_scheme += 1;
    let mut other_fingerprint = good.clone();
    other_fingerprint.header.index_fingerprint ^= 1;
    for bad in [other_scheme, other_fingerprint] {
        match decode_table(&bad) {
            Err(CodecError::IndexMismatch { signature, .. }) => assert_eq!(signature, sig("KRvK")),
            other => panic!("expected an index mismatch, got {other:?}"),
        }
        // Import refuses it and leaves the store as it was.
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path()).unwrap();
        let err = store.import_shard(&write_shard(&bad)).unwrap_err();
        assert!(
            matches!(err, StoreError::Codec(CodecError::IndexMismatch { .. })),
            "{err}"
        );
        assert!(store.list_tables().unwrap().is_empty());
    }
}

#[test]
fn solve_store_probe_equals_the_solver_for_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        store_all(&store);
    }
    // Reopened: the tables are durable.
    let tb = Tablebase::open_sled(dir.path()).unwrap();
    let n = assert_probes_match(&tb, "sled store");
    assert!(n > 400_000, "{n} positions checked");
    let listed: Vec<Signature> = tb
        .store()
        .list_tables()
        .unwrap()
        .iter()
        .map(|h| h.signature)
        .collect();
    let mut want = solved().sigs.clone();
    want.sort_by_key(|s| s.name());
    assert_eq!(listed, want);
    // A second pass is served from the cache: no block is read again.
    let loaded = tb.blocks_loaded();
    assert_probes_match(&tb, "sled store, warm");
    assert_eq!(tb.blocks_loaded(), loaded);
}

#[test]
fn export_import_probe_equals_the_solver_for_every_slot() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let from = SledStore::open(a.path()).unwrap();
    store_all(&from);
    let to = SledStore::open(b.path()).unwrap();
    for sig in &solved().sigs {
        let bytes = from.export_shard(&TableId::new(RULES, *sig)).unwrap();
        let h = to.import_shard(&bytes).unwrap();
        assert_eq!(h.signature, *sig);
        assert_eq!(
            to.export_shard(&TableId::new(RULES, *sig)).unwrap(),
            bytes,
            "{sig}: re-export differs"
        );
    }
    drop(from);
    assert_probes_match(&Tablebase::new(to), "imported");
}

#[test]
fn probing_a_directory_of_shard_files_equals_the_solver_for_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    for sig in &solved().sigs {
        let bytes = write_shard(&encode_table(solved().table(sig)));
        std::fs::write(
            dir.path()
                .join(ShardDir::file_name(&TableId::new(RULES, *sig))),
            bytes,
        )
        .unwrap();
    }
    // Other files are ignored.
    std::fs::write(dir.path().join("README.txt"), "not a shard").unwrap();
    let tb = Tablebase::open_shards(dir.path()).unwrap();
    assert_eq!(tb.store().list_tables().unwrap().len(), solved().sigs.len());
    assert_probes_match(&tb, "shard directory");
    // A shard directory is a store too: export from it and write into it.
    let other = tempfile::tempdir().unwrap();
    let sd = ShardDir::open(other.path()).unwrap();
    for sig in &solved().sigs {
        sd.import_shard(&tb.store().export_shard(&TableId::new(RULES, *sig)).unwrap())
            .unwrap();
    }
    assert_probes_match(
        &Tablebase::open_shards(other.path()).unwrap(),
        "written shard dir",
    );
}

#[test]
fn the_solver_reads_its_dependencies_from_a_tablebase() {
    let s = solved();
    let target = sig("KRvKN");
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    for d in target.capture_targets() {
        store.put_table(&encode_table(s.table(&d))).unwrap();
    }
    let tb = Tablebase::new(store);
    assert!(tb.has_table(&id("KRvK")) && !tb.has_table(&TableId::new(RULES, target)));
    let table = solver::solve(TableId::new(RULES, target), &tb, &|_| {}).unwrap();
    assert!(codes(&table) == codes(s.table(&target)));
    solver::verify(&table, &tb).unwrap();
}

#[test]
fn writes_are_atomic_for_readers() {
    // A writer replaces a table again and again with two different encodings (different block
    // counts); readers must always see one whole version.
    let t = solved().table(&sig("KRvKN"));
    let v1 = encode_table_with(
        t,
        &CodecParams {
            block_values: 4096,
            level: 1,
            ..CodecParams::default()
        },
    );
    let v2 = encode_table_with(
        t,
        &CodecParams {
            block_values: 1000,
            level: 1,
            ..CodecParams::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    let s = sig("KRvKN");
    assert!(matches!(
        store.load_table(&TableId::new(RULES, s)),
        Err(StoreError::Missing { .. })
    ));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        let (v1, v2) = (v1.clone(), v2.clone());
        std::thread::spawn(move || {
            let mut seen = [0u32; 2];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match store.load_table(&TableId::new(RULES, s)) {
                    Ok(t) if t == v1 => seen[0] += 1,
                    Ok(t) if t == v2 => seen[1] += 1,
                    Ok(_) => panic!("a mixture of two versions"),
                    Err(StoreError::Missing { .. }) => {}
                    Err(e) => panic!("reader saw a partial table: {e}"),
                }
            }
            seen
        })
    };
    for i in 0..12 {
        store.put_table(if i % 2 == 0 { &v1 } else { &v2 }).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = reader.join().unwrap();
    assert!(seen[0] + seen[1] > 0, "the reader never saw the table");
    // The last version is whole, and the other version's extra blocks are gone.
    assert_eq!(store.load_table(&TableId::new(RULES, s)).unwrap(), v2);
    store.put_table(&v1).unwrap();
    assert_eq!(store.load_table(&TableId::new(RULES, s)).unwrap(), v1);
    assert!(matches!(
        store.block(
            &TableId::new(RULES, s),
            Color::Red,
            v1.header.blocks[0].len() as u32
        ),
        Err(StoreError::NoSuchBlock { .. })
    ));
}

#[test]
fn a_table_whose_blocks_do_not_match_its_header_is_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let mut enc = encode_table(solved().table(&sig("KRvKN")));
    enc.blocks[1][3][0] ^= 0x40;
    assert!(matches!(
        store.put_table(&enc),
        Err(StoreError::Codec(CodecError::BlockChecksum {
            side: Color::Black,
            block: 3,
            ..
        }))
    ));
    assert!(store.list_tables().unwrap().is_empty());
    assert!(store.header(&id("KRvKN")).unwrap().is_none());
}

#[test]
fn missing_tables_are_named_with_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let tb = Tablebase::open_sled(dir.path()).unwrap();
    let err = tb
        .probe_fen(RULES, "3k5/9/9/9/9/9/9/9/r8/R2NK4 w")
        .unwrap_err();
    assert!(
        matches!(&err, ProbeError::NotInStore { table, .. } if table.signature == sig("KRNvKR")),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("table KRNvKR is not in the store (sled store "),
        "{msg}"
    );
    // Through the Probe trait, as the solver sees it.
    assert!(!tb.has_table(&id("KRNvKR")));
    let board = xiangqi::parse_fen("3k5/9/9/9/9/9/9/9/r8/R2NK4 w").unwrap();
    assert!(matches!(
        tb.probe(RULES, &board),
        Err(ProbeError::NotInStore { .. })
    ));
}

#[test]
fn a_tablebase_rereads_a_table_replaced_in_the_store() {
    let s = sig("KRvKN");
    let t = solved().table(&s);
    let params = |block_values| CodecParams {
        block_values,
        level: 1,
        ..CodecParams::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    store
        .put_table(&encode_table_with(t, &params(4096)))
        .unwrap();
    let tb = Tablebase::new(Arc::clone(&store));
    let positions: Vec<_> = legal_positions(t).collect();
    for (side, slot, board) in positions.iter().take(20) {
        assert_eq!(tb.probe(RULES, board).unwrap(), t.value(*side, *slot));
    }
    assert_eq!(
        tb.header(&TableId::new(RULES, s)).unwrap().block_values,
        4096
    );
    // Replaced by another encoding: cached blocks of the old one are never mixed with the new
    // header, and every position still probes right.
    store
        .put_table(&encode_table_with(t, &params(1000)))
        .unwrap();
    for (side, slot, board) in &positions {
        assert_eq!(tb.probe(RULES, board).unwrap(), t.value(*side, *slot));
    }
    assert_eq!(
        tb.header(&TableId::new(RULES, s)).unwrap().block_values,
        1000
    );
}

fn shard_dir_with(sig: &Signature, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let name = ShardDir::file_name(&TableId::new(RULES, *sig));
    std::fs::write(dir.path().join(name), bytes).unwrap();
    dir
}

#[test]
fn a_damaged_block_in_a_shard_directory_is_an_error_never_a_value() {
    let s = sig("KRvKN");
    let t = encode_table(solved().table(&s));
    let bytes = write_shard(&t);
    let layout = read_shard_layout(&mut std::io::Cursor::new(&bytes)).unwrap();
    // Damage block 5 for Black to move.
    let mut bad = bytes.clone();
    bad[layout.block_offsets[1][5] as usize + 7] ^= 0x04;
    let dir = shard_dir_with(&s, &bad);
    let tb = Tablebase::open_shards(dir.path()).unwrap();
    let bv = t.header.block_values as u64;
    let mut refused = 0;
    for (side, slot, board) in legal_positions(solved().table(&s)) {
        match tb.probe(RULES, &board) {
            Ok(v) => {
                assert!(side == Color::Red || slot / bv != 5);
                assert_eq!(v, solved().table(&s).value(side, slot));
            }
            Err(ProbeError::Storage { table, source }) => {
                let msg = source.to_string();
                assert_eq!((table.signature, side, slot / bv), (s, Color::Black, 5));
                assert!(
                    msg.contains("block 5 for Black to move is corrupt"),
                    "{msg}"
                );
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 1000, "{refused}");
    // Export from the directory checks the whole file.
    assert!(matches!(
        tb.store().export_shard(&TableId::new(RULES, s)),
        Err(StoreError::Shard(ShardError::BlockChecksum {
            side: Color::Black,
            block: 5
        }))
    ));
}
