//! Probe latency and throughput from a sled store: cold (empty block cache) and warm, single-
//! and multi-threaded, for single values (`Probe::probe`) and for full answers (`probe_fen`:
//! FEN parsing, the value, and every move's value with its notation).
//!
//! ```sh
//! xqtb solve KRNvKR --data /tmp/xqtb-bench            # once
//! XQTB_DATA=/tmp/xqtb-bench XQTB_TABLE=KRNvKR cargo bench -p xqtb-probe --bench probe
//! ```
//! `XQTB_THREADS` sets the thread counts for throughput (default `1,2`); `XQTB_SHARDS=DIR` also
//! measures a directory of shard files read in place (`xqtb export`).

use probe::Tablebase;
use std::time::{Duration, Instant};
use storage_format::{SledStore, TableStore};
use xqtb_core::{Probe, RuleSet, Signature, TableId, TableIndex};

const RULES: RuleSet = RuleSet::CyclesAreDraws;
use xiangqi::{Board, Color};

fn percentiles(mut ns: Vec<f64>) -> String {
    ns.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |q: f64| ns[((ns.len() - 1) as f64 * q) as usize] / 1000.0;
    format!(
        "median {:.2} µs, p90 {:.2} µs, p99 {:.2} µs ({} probes)",
        p(0.5),
        p(0.9),
        p(0.99),
        ns.len()
    )
}

/// Random legal positions of `sig`, spread over the whole table.
fn positions(sig: Signature, n: usize) -> Vec<Board> {
    let index = TableIndex::new(sig);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slot = x % index.size();
        let side = Color::ALL[(x >> 40) as usize & 1];
        if let Some(b) = index.board(slot, side)
            && !b.opponent_in_check()
        {
            out.push(b);
        }
    }
    out
}

fn time_each(boards: &[Board], mut f: impl FnMut(&Board)) -> Vec<f64> {
    boards
        .iter()
        .map(|b| {
            let t = Instant::now();
            f(b);
            t.elapsed().as_nanos() as f64
        })
        .collect()
}

fn throughput<S: TableStore>(tb: &Tablebase<S>, boards: &[Board], threads: usize) -> f64 {
    let run = Duration::from_millis(1500);
    let counts: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let start = Instant::now();
                    let mut n = 0u64;
                    let mut i = t * 7919;
                    while start.elapsed() < run {
                        for _ in 0..1000 {
                            i = (i + 1) % boards.len();
                            std::hint::black_box(tb.probe(RULES, &boards[i]).unwrap());
                        }
                        n += 1000;
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    counts.iter().sum::<u64>() as f64 / run.as_secs_f64()
}

/// Cold, warm and multi-threaded figures for one tablebase, its block cache empty at first.
fn run<S: TableStore>(
    tb: Tablebase<S>,
    sig: Signature,
    boards: &[Board],
    fens: &[String],
    threads: &[usize],
) {
    let t = Instant::now();
    tb.header(&TableId::new(RULES, sig))
        .expect("table in the store");
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    println!("{sig}: table header and index loaded in {first_ms:.1} ms");
    let mut cold = Vec::new();
    for b in &boards[..4000] {
        let before = tb.blocks_loaded();
        let t = Instant::now();
        std::hint::black_box(tb.probe(RULES, b).unwrap());
        let ns = t.elapsed().as_nanos() as f64;
        if tb.blocks_loaded() > before {
            cold.push(ns);
        }
    }
    println!(
        "cold probe (reads and decompresses a block): {}",
        percentiles(cold)
    );

    // Warm: every block of the sample cached.
    for b in boards {
        tb.probe(RULES, b).unwrap();
    }
    let loaded = tb.blocks_loaded();
    let warm = time_each(boards, |b| {
        std::hint::black_box(tb.probe(RULES, b).unwrap());
    });
    assert_eq!(tb.blocks_loaded(), loaded, "warm probes read no block");
    println!(
        "warm probe (value only): {} ; {} blocks, {:.1} MB cached",
        percentiles(warm),
        loaded,
        tb.cached_bytes() as f64 / 1e6
    );
    let warm_board = time_each(&boards[..fens.len()], |b| {
        std::hint::black_box(tb.probe_board(RULES, b).unwrap());
    });
    println!(
        "warm probe_board (value and every move with notation): {}",
        percentiles(warm_board)
    );
    let warm_fen: Vec<f64> = fens
        .iter()
        .map(|f| {
            let t = Instant::now();
            std::hint::black_box(tb.probe_fen(RULES, f).unwrap());
            t.elapsed().as_nanos() as f64
        })
        .collect();
    println!(
        "warm probe_fen (parse, value, every move): {}",
        percentiles(warm_fen)
    );
    for &n in threads {
        println!(
            "throughput, warm, {n} thread(s): {:.0} probes/s",
            throughput(&tb, boards, n)
        );
    }
    // Cold again, cache cleared but the store's own cache warm: the cost of a block miss alone.
    tb.clear_cache();
    let mut miss = Vec::new();
    for b in &boards[4000..8000] {
        let before = tb.blocks_loaded();
        let t = Instant::now();
        std::hint::black_box(tb.probe(RULES, b).unwrap());
        let ns = t.elapsed().as_nanos() as f64;
        if tb.blocks_loaded() > before {
            miss.push(ns);
        }
    }
    println!(
        "block-cache miss with the store warm: {}",
        percentiles(miss)
    );
}

fn main() {
    let Ok(data) = std::env::var("XQTB_DATA") else {
        eprintln!(
            "set XQTB_DATA to a store holding the table (xqtb solve KRNvKR --data DIR); nothing to do"
        );
        return;
    };
    let sig: Signature = std::env::var("XQTB_TABLE")
        .unwrap_or_else(|_| "KRNvKR".into())
        .parse()
        .expect("signature");
    let threads: Vec<usize> = std::env::var("XQTB_THREADS")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .map(|s| s.trim().parse().expect("thread count"))
        .collect();
    let boards = positions(sig, 20_000);
    let fens: Vec<String> = boards.iter().take(2000).map(|b| b.fen()).collect();
    let t = Instant::now();
    let store = SledStore::open(&data).expect("open the store");
    println!(
        "sled store {data}: opened in {:.1} ms, {} bytes on disk",
        t.elapsed().as_secs_f64() * 1e3,
        store.size_on_disk().unwrap_or(0)
    );
    run(Tablebase::new(store), sig, &boards, &fens, &threads);
    if let Ok(dir) = std::env::var("XQTB_SHARDS") {
        let t = Instant::now();
        let tb = Tablebase::open_shards(&dir).expect("open the shard directory");
        println!(
            "shard directory {dir}: opened in {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        run(tb, sig, &boards, &fens, &threads);
    }
}
