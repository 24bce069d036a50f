//! Codec parameter sweep: stored size, encoding time and block decompression time of real
//! tables under block sizes, zstd levels, dictionaries, value layouts and fillers.
//!
//! ```sh
//! xqtb solve KRNvKR --data /tmp/xqtb-bench            # once
//! XQTB_DATA=/tmp/xqtb-bench XQTB_TABLES=KRNvKR,KRvKR cargo bench -p storage-format --bench codec_sweep
//! ```
//! `XQTB_RULES` names the tables' rule set (default `cycles-are-draws`). `XQTB_SWEEP` picks
//! groups (comma-separated: `blocks`, `levels`, `dict`, `layout`, `filler`; default all). Sizes are exact; times are medians of three passes.

use std::time::Instant;
use storage_format::codec::{
    BlockDecoder, CodecParams, Filler, LayoutChoice, ValueLayout, decode_table, encode_table_with,
};
use storage_format::{SledStore, TableStore};
use xqtb_core::{RuleSet, Signature, TableId};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn variants(groups: &[String]) -> Vec<(String, CodecParams)> {
    let base = CodecParams::default();
    let want = |g: &str| groups.is_empty() || groups.iter().any(|x| x == g);
    let mut out = vec![("default".to_string(), base.clone())];
    if want("blocks") {
        for k in [4, 8, 32, 64] {
            out.push((
                format!("block {k}K"),
                CodecParams {
                    block_values: k << 10,
                    ..base.clone()
                },
            ));
        }
    }
    if want("levels") {
        for level in [1, 3, 9, 12, 13, 14, 15, 16, 19, 22] {
            out.push((
                format!("level {level}"),
                CodecParams {
                    level,
                    ..base.clone()
                },
            ));
        }
    }
    if want("dict") {
        for (k, d) in [(4, 16), (16, 16), (16, 64)] {
            out.push((
                format!("block {k}K + {d} KB dictionary"),
                CodecParams {
                    block_values: k << 10,
                    dictionary: Some(d << 10),
                    ..base.clone()
                },
            ));
        }
    }
    if want("layout") {
        for l in [ValueLayout::Indexed, ValueLayout::Planes, ValueLayout::Wide] {
            out.push((
                format!("layout {}", l.name()),
                CodecParams {
                    layout: LayoutChoice::Fixed(l),
                    ..base.clone()
                },
            ));
        }
    }
    if want("filler") {
        for f in [Filler::Draw, Filler::Marker] {
            out.push((
                format!("filler {}", f.name()),
                CodecParams {
                    filler: f,
                    ..base.clone()
                },
            ));
        }
    }
    out
}

fn main() {
    let Ok(data) = std::env::var("XQTB_DATA") else {
        eprintln!(
            "set XQTB_DATA to a store holding the tables (xqtb solve KRNvKR --data DIR); nothing to do"
        );
        return;
    };
    let tables: Vec<Signature> = std::env::var("XQTB_TABLES")
        .unwrap_or_else(|_| "KRvKR,KRNvK,KRvKN,KRNvKR".into())
        .split(',')
        .map(|s| s.trim().parse().expect("signature"))
        .collect();
    let groups: Vec<String> = std::env::var("XQTB_SWEEP")
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    let rules: RuleSet = std::env::var("XQTB_RULES")
        .map(|s| s.parse().expect("a rule set"))
        .unwrap_or(RuleSet::CyclesAreDraws);
    let store = SledStore::open(&data).expect("open the store");
    println!(
        "| table | variant | stored bytes | bits/legal pos | encode s | decompress µs/block | µs per 1000 values |"
    );
    println!("|---|---|---|---|---|---|---|");
    for sig in tables {
        let enc = store
            .load_table(&TableId::new(rules, sig))
            .expect("table in the store");
        let table = decode_table(&enc).expect("decodes");
        let legal: u64 = enc.header.counts.legal();
        for (name, p) in variants(&groups) {
            let start = Instant::now();
            let e = encode_table_with(&table, &p);
            let encode_s = start.elapsed().as_secs_f64();
            let dec = BlockDecoder::new(e.dictionary.as_deref());
            let blocks: Vec<(u32, &Vec<u8>)> = e.blocks[0]
                .iter()
                .enumerate()
                .map(|(i, b)| (i as u32, b))
                .collect();
            let step = (blocks.len() / 256).max(1);
            let sample: Vec<_> = blocks.iter().step_by(step).collect();
            let per_block: Vec<f64> = (0..3)
                .map(|_| {
                    let t = Instant::now();
                    for (i, b) in &sample {
                        let out = dec
                            .decompress_block(&e.header, *i, b)
                            .expect("decompresses");
                        std::hint::black_box(out);
                    }
                    t.elapsed().as_secs_f64() * 1e6 / sample.len() as f64
                })
                .collect();
            let us = median(per_block);
            println!(
                "| {sig} | {name} | {} | {:.3} | {encode_s:.2} | {us:.1} | {:.2} |",
                e.stored_bytes(),
                e.stored_bytes() as f64 * 8.0 / legal as f64,
                us * 1000.0 / p.block_values as f64
            );
        }
    }
}
