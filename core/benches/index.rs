//! Index benchmarks: decoding runs of consecutive slots (the solver's scans), decoding and
//! encoding scattered slots, and the slot of a shifted piece (every move the solver follows).
//!
//! `cargo bench -p xqtb-core --bench index -- --quick` for a fast run.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use xqtb_core::MAX_PIECES;
use xqtb_core::TableIndex;

const TABLES: [&str; 3] = ["KRNvKR", "KCPABvKAABB", "KNPvKB"];

/// Scattered slots of `ix`, from a fixed xorshift sequence.
fn scattered(ix: &TableIndex, n: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % ix.size()
        })
        .collect()
}

fn index(c: &mut Criterion) {
    let mut g = c.benchmark_group("index");
    for name in TABLES {
        let ix = TableIndex::new(name.parse().unwrap());
        let n = ix.piece_count();
        let slots = scattered(&ix, 1024);
        let mut sq = [0u8; MAX_PIECES];
        g.bench_function(format!("{name}/decode 1024 consecutive"), |b| {
            let start = ix.size() / 3;
            b.iter(|| {
                for s in start..start + 1024 {
                    ix.decode(s, &mut sq);
                    black_box(&sq);
                }
            })
        });
        g.bench_function(format!("{name}/decode 1024 scattered"), |b| {
            b.iter(|| {
                for &s in &slots {
                    ix.decode(s, &mut sq);
                    black_box(&sq);
                }
            })
        });
        let placements: Vec<[u8; MAX_PIECES]> = slots
            .iter()
            .map(|&s| {
                let mut p = [0u8; MAX_PIECES];
                ix.decode(s, &mut p);
                p
            })
            .collect();
        g.bench_function(format!("{name}/encode 1024 scattered"), |b| {
            b.iter(|| {
                for p in &placements {
                    black_box(ix.encode(&p[..n]));
                }
            })
        });
        // Every piece one point along the file (the last rank steps back), as a move would.
        g.bench_function(format!("{name}/shift every piece of 1024"), |b| {
            b.iter(|| {
                for (&s, p) in slots.iter().zip(&placements) {
                    for pos in 0..n {
                        let to = if p[pos] >= 81 { p[pos] - 9 } else { p[pos] + 9 };
                        black_box(ix.slot_after_shift(s, &p[..n], pos, to));
                    }
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, index);
criterion_main!(benches);
