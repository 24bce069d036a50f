//! Figures behind the home-configuration slicing of a table without pawns (docs/scaling.md):
//! how many slices (pairs of home configurations, mirror images folded), how large they are,
//! and what share of the quiet moves of legal positions cross from one slice to another
//! (exactly the moves of kings, advisors and elephants; every other piece's move stays in its
//! slice). The share is sampled over evenly spaced slots of both sides to move.
//!
//! cargo run --release --example slice_stats -- KRNvKRAB [SAMPLES]

use xiangqi::{Color, PieceKind, legal_squares};
use xqtb_core::{Signature, TableIndex};

/// The points of `color`'s home pieces (king, advisors, elephants) in every placement: a list
/// of sorted point sets per kind, combined.
fn home_configurations(sig: &Signature, color: Color) -> Vec<Vec<u8>> {
    let mut configs: Vec<Vec<u8>> = vec![Vec::new()];
    for kind in [PieceKind::King, PieceKind::Advisor, PieceKind::Elephant] {
        let n = sig.material().count(color, kind) as usize;
        let points: Vec<u8> = (0..90u8)
            .filter(|&s| legal_squares(color, kind) >> s & 1 == 1)
            .collect();
        let mut next = Vec::new();
        for c in &configs {
            for set in subsets(&points, n) {
                if set.iter().all(|p| !c.contains(p)) {
                    let mut d = c.clone();
                    d.extend(set);
                    next.push(d);
                }
            }
        }
        configs = next;
    }
    configs
}

fn subsets(points: &[u8], n: usize) -> Vec<Vec<u8>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        for mut rest in subsets(&points[i + 1..], n - 1) {
            rest.insert(0, p);
            out.push(rest);
        }
    }
    out
}

/// The same point set, mirrored left to right (files a..i, nine points per rank).
fn mirrored(set: &[u8]) -> Vec<u8> {
    let mut m: Vec<u8> = set.iter().map(|&s| s - s % 9 + (8 - s % 9)).collect();
    m.sort_unstable();
    m
}

fn sorted(set: &[u8]) -> Vec<u8> {
    let mut s = set.to_vec();
    s.sort_unstable();
    s
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let sig: Signature = args.get(1).map_or("KRNvKRAB", |s| s.as_str()).parse()?;
    let samples: u64 = args.get(2).map_or(Ok(200_000), |s| s.parse())?;
    let index = TableIndex::new(sig);
    let (red, black) = (
        home_configurations(&sig, Color::Red),
        home_configurations(&sig, Color::Black),
    );
    let pairs = red.len() as u64 * black.len() as u64;
    let symmetric = red.iter().filter(|c| mirrored(c) == sorted(c)).count() as u64
        * black.iter().filter(|c| mirrored(c) == sorted(c)).count() as u64;
    let slices = (pairs + symmetric) / 2;
    println!(
        "{sig}: {} slots, {} Red and {} Black home configurations, {pairs} pairs, {slices} slices \
         with the mirror folded ({symmetric} symmetric), {:.0} slots per slice on average",
        index.size(),
        red.len(),
        black.len(),
        index.size() as f64 / slices as f64
    );
    // Crossing moves when slices are pairs of home configurations (any home piece's move
    // crosses), and when they are one side's home configuration (only that side's home pieces'
    // moves cross): the side with more home configurations, so the slices are more.
    let sliced_by = if black.len() >= red.len() {
        Color::Black
    } else {
        Color::Red
    };
    let (mut quiet, mut crossing, mut crossing_one, mut legal) = (0u64, 0u64, 0u64, 0u64);
    let step = (index.size() / samples.max(1)).max(1);
    for slot in (0..index.size()).step_by(step as usize) {
        for side in Color::ALL {
            let Some(board) = index.board(slot, side) else {
                continue;
            };
            if board.opponent_in_check() {
                continue;
            }
            legal += 1;
            for m in board.legal_moves().iter() {
                if !board.is_empty(m.to()) {
                    continue;
                }
                quiet += 1;
                let piece = board.piece_at(m.from());
                if matches!(
                    piece.map(|p| p.kind()),
                    Some(PieceKind::King | PieceKind::Advisor | PieceKind::Elephant)
                ) {
                    crossing += 1;
                    crossing_one += u64::from(piece.map(|p| p.color()) == Some(sliced_by));
                }
            }
        }
    }
    let share = |n: u64| 100.0 * n as f64 / quiet.max(1) as f64;
    println!(
        "{legal} legal positions sampled, {:.1} quiet moves each: {:.1}% of them cross slices of \
         home-configuration pairs; with slices of {sliced_by:?}'s home configuration alone \
         ({} slices before folding the mirror), {:.1}% cross",
        quiet as f64 / legal.max(1) as f64,
        share(crossing),
        if sliced_by == Color::Black {
            black.len()
        } else {
            red.len()
        },
        share(crossing_one)
    );
    Ok(())
}
