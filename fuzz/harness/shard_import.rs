//! Shard files: `read_shard`, `read_shard_layout` and the import path of `xqtb import`
//! (`TableStore::import_shard`), on the file `shard_input::shard_file` makes of the input.
//!
//! Nothing panics. The two readers agree: a file `read_shard` accepts has the layout
//! `read_shard_layout` reports (same header, blocks where it says), and is written back byte for
//! byte by `write_shard`. Import accepts exactly the files `read_shard` accepts whose index
//! matches this build and whose blocks decompress to values matching the header's values
//! checksums (the README: every checksum is checked before anything is written); a refused
//! file leaves the store as it was, an accepted one exports back unchanged. Decoding a table
//! never panics.

use super::fixtures::{MemStore, fixtures};
use super::shard_input::shard_file;
use super::signature::cheap_index;
use std::io::Cursor;
use storage_format::codec::{BlockDecoder, EncodedTable, decode_table};
use storage_format::shard::{read_shard, read_shard_layout, write_shard};
use storage_format::store::TableStore;

pub fn run(data: &[u8]) {
    let file = shard_file(data);
    let parsed = read_shard(&file);
    let layout = read_shard_layout(&mut Cursor::new(&file));
    if let Ok(t) = &parsed {
        let layout =
            layout.unwrap_or_else(|e| panic!("read_shard accepts, the layout refuses: {e}"));
        assert_eq!(layout.header, t.header);
        let at = |offset: u64, len: u32| &file[offset as usize..offset as usize + len as usize];
        if let (Some(info), Some(d)) = (&t.header.dictionary, &t.dictionary) {
            assert_eq!(at(layout.dictionary_offset, info.len), &d[..]);
        }
        for side in 0..2 {
            assert_eq!(layout.block_offsets[side].len(), t.blocks[side].len());
            for (b, &o) in layout.block_offsets[side].iter().enumerate() {
                assert_eq!(at(o, t.header.blocks[side][b].len), &t.blocks[side][b][..]);
            }
        }
        assert!(
            write_shard(t) == file,
            "write_shard(read_shard(file)) differs from the file"
        );
    }
    let parsed = match parsed {
        Ok(t) if cheap_index(&t.header.signature) => t,
        // Building a big table's index takes seconds; the header parsed, that is what matters.
        Ok(_) => return,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(MemStore::new().import_shard(&file).is_err());
            return;
        }
    };

    // A store holding the fixtures: an import must leave the other tables alone.
    let store = MemStore::with(&fixtures().encoded);
    let before: Vec<_> = store.list_tables().unwrap();
    let id = parsed.header.id();
    let old = store.load_table(&id).ok();
    match store.import_shard(&file) {
        Ok(h) => {
            assert_eq!(h, parsed.header);
            assert!(
                values_check(&parsed),
                "import accepted a table whose values do not match their checksums"
            );
            assert_eq!(store.load_table(&id).unwrap(), parsed);
            assert!(
                store.export_shard(&id).unwrap() == file,
                "export differs from the imported file"
            );
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(
                store.list_tables().unwrap(),
                before,
                "a refused import changed the store"
            );
            assert_eq!(store.load_table(&id).ok(), old);
        }
    }
    // Decoding checks everything again (values, counts); it may refuse, never panic.
    let _ = decode_table(&parsed);
}

/// Whether every block of `t` decompresses to its size and each side's values match the
/// header's values checksum (the checks of `decode_table` short of the counts).
fn values_check(t: &EncodedTable) -> bool {
    let h = &t.header;
    let decoder = BlockDecoder::new(t.dictionary.as_deref());
    (0..2).all(|side| {
        let mut crc = crc32fast::Hasher::new();
        for (b, block) in t.blocks[side].iter().enumerate() {
            match decoder.decompress_block(h, b as u32, block) {
                Ok(raw) => crc.update(&raw),
                Err(_) => return false,
            }
        }
        crc.finalize() == h.values_crc[side]
    })
}
