//! Probes every legal position of one table in a directory of shard files, as `xqtb probe FEN
//! --shards DIR` does: the position's value and every legal move's value, captures included, so
//! each table the captures lead into must be there. `probe_board` also checks that the stored
//! value agrees with the values of the moves, so a missing or inconsistent dependency fails.
//! With a second directory (a sled store, such as the one the tables were generated into) every
//! value is also compared with the value stored there.
//!
//! cargo run --release --example probe_every_position -- DIR KRPvKR [asian] [SLED_DIR]

use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;
use xiangqi::Color;
use xqtb_core::{RuleSet, Signature, TableIndex};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(sig)) = (args.get(1), args.get(2)) else {
        anyhow::bail!("usage: probe_every_position SHARD_DIR SIGNATURE [RULES] [SLED_DIR]");
    };
    let sig: Signature = sig.parse()?;
    let rules: RuleSet = args.get(3).map_or("asian", |s| s.as_str()).parse()?;
    let shards = probe::Tablebase::open_shards(dir)?;
    let reference = args.get(4).map(probe::Tablebase::open_sled).transpose()?;
    let index = TableIndex::new(sig);
    let start = Instant::now();
    let (positions, moves) = (AtomicU64::new(0), AtomicU64::new(0));
    let chunk = 1 << 14;
    (0..index.size().div_ceil(chunk))
        .into_par_iter()
        .try_for_each(|c| -> anyhow::Result<()> {
            for slot in c * chunk..((c + 1) * chunk).min(index.size()) {
                for side in Color::ALL {
                    let Some(board) = index.board(slot, side) else {
                        continue;
                    };
                    if board.opponent_in_check() {
                        continue;
                    }
                    let fen = board.fen();
                    let r = shards
                        .probe_board(rules, &board)
                        .map_err(|e| anyhow::anyhow!("{fen}: {e}"))?;
                    if let Some(reference) = &reference {
                        let v = reference
                            .probe_board(rules, &board)
                            .map_err(|e| anyhow::anyhow!("{fen} in the sled store: {e}"))?;
                        anyhow::ensure!(
                            v.value == r.value,
                            "{fen}: {} in the shards, {} in the sled store",
                            r.value,
                            v.value
                        );
                    }
                    positions.fetch_add(1, Relaxed);
                    moves.fetch_add(r.moves.len() as u64, Relaxed);
                }
            }
            Ok(())
        })?;
    println!(
        "{sig} ({}): probed {} positions and {} moves from {dir}{} in {:.1} s, all consistent",
        rules.name(),
        positions.into_inner(),
        moves.into_inner(),
        if reference.is_some() {
            ", every value equal to the sled store's"
        } else {
            ""
        },
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
