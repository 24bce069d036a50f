//! Move generation benchmarks: legal moves, un-moves (the retrograde generator), and a shallow
//! perft of the start position. Depth-5 perft is timed separately from the CLI.
//!
//! `cargo bench -p xiangqi --bench movegen -- --quick` for a fast run.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use xiangqi::{Board, MoveList, START_FEN, parse_fen, perft};

/// Named positions: the start, a middlegame, and typical tablebase endgames.
const POSITIONS: &[(&str, &str)] = &[
    ("start", START_FEN),
    (
        "middlegame",
        "1rbaka2R/5r3/6n2/2p1p1p2/4P1bP1/PpC3Bc1/1nPR2P2/2N2AN2/1c2K1p2/2BAC4 w - - 0 1",
    ),
    ("KRNvKR", "4k4/9/9/9/9/3r5/9/2N6/9/R4K3 w - - 0 1"),
    ("KRvKAA", "3aka3/9/9/9/9/7R1/9/9/9/3K5 w - - 0 1"),
    ("KCPvKAB", "3k5/4a4/4b4/2P6/9/9/9/9/4C4/4K4 w - - 0 1"),
    ("KNPvKB", "4k1b2/9/9/4P4/3N5/9/9/9/5K3/9 w - - 0 1"),
];

fn boards() -> Vec<(&'static str, Board)> {
    POSITIONS
        .iter()
        .map(|&(name, fen)| {
            (
                name,
                parse_fen(fen).unwrap_or_else(|e| panic!("{name}: {e}")),
            )
        })
        .collect()
}

fn legal_moves(c: &mut Criterion) {
    let mut g = c.benchmark_group("legal_moves");
    for (name, board) in boards() {
        let mut list = MoveList::new();
        g.bench_function(name, |b| {
            b.iter(|| {
                list.clear();
                black_box(&board).legal_moves_into(&mut list);
                black_box(list.len())
            })
        });
    }
    g.finish();
}

/// The raw retrograde generator: geometric un-moves and un-capture moves, no legality test.
fn unmoves(c: &mut Criterion) {
    let mut g = c.benchmark_group("unmoves");
    for (name, board) in boards() {
        let mut list = MoveList::new();
        g.bench_function(name, |b| {
            b.iter(|| {
                list.clear();
                let board = black_box(&board);
                board.unmoves(&mut list);
                let quiet = list.len();
                list.clear();
                board.uncapture_moves(&mut list);
                black_box(quiet + list.len())
            })
        });
    }
    g.finish();
}

/// Un-moves and un-captures with every earlier position built and checked for legality.
fn legal_retractions(c: &mut Criterion) {
    let mut g = c.benchmark_group("legal_unmoves+uncaptures");
    for (name, board) in boards() {
        g.bench_function(name, |b| {
            b.iter(|| {
                let board = black_box(&board);
                black_box(board.legal_unmoves().len() + board.legal_uncaptures().len())
            })
        });
    }
    g.finish();
}

fn perft_start(c: &mut Criterion) {
    let mut board = parse_fen(START_FEN).unwrap();
    assert_eq!(perft(&mut board, 3), 79_666);
    let mut g = c.benchmark_group("perft");
    g.sample_size(20);
    g.bench_function("start/3", |b| b.iter(|| perft(black_box(&mut board), 3)));
    g.finish();
}

criterion_group!(
    benches,
    legal_moves,
    unmoves,
    legal_retractions,
    perft_start
);
criterion_main!(benches);
