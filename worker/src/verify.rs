//! Independent verification of a solved table by forward move generation.
//!
//! Every slot is recomputed from scratch: its position is set up from the index, its legal moves
//! are generated forwards, and the best of the successors' stored values (in this table, or in
//! the dependency tables for captures) must equal the stored value exactly. Illegal slots must be
//! exactly the placements that cannot be set up or leave the side not to move in check. Nothing
//! here shares code with the solver's backward step (un-moves and candidate checks).
//!
//! Why this suffices: stored wins and losses that are consistent with their successors are
//! well-founded (a loss in `d` only has successors won in less than `d`), so by induction on the
//! distance every stored decisive value is true, and every truly decisive position is stored as
//! such; what is left are the draws.

use rayon::prelude::*;
use storage_format::value::ILLEGAL;
use storage_format::{Probe, Signature, Table, Value};
use thiserror::Error;
use xiangqi::{Color, MoveList};

/// A slot whose stored value disagrees with its successors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "verification of {signature} failed at {side} to move, slot {slot} ({fen}): stored {stored}, successors give {expected}"
)]
pub struct VerifyError {
    /// The table.
    pub signature: Signature,
    /// Side to move.
    pub side: Color,
    /// The slot.
    pub slot: u64,
    /// The position, when the slot holds one.
    pub fen: String,
    /// The value in the table.
    pub stored: Value,
    /// The value its successors give.
    pub expected: Value,
}

/// Counts gathered while verifying.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Legal positions per side to move.
    pub legal: [u64; 2],
    /// Wins, draws and losses for the side to move, per side.
    pub wins: [u64; 2],
    /// Draws per side.
    pub draws: [u64; 2],
    /// Losses per side.
    pub losses: [u64; 2],
    /// Longest win per side: (plies, slot).
    pub longest_win: [Option<(u16, u64)>; 2],
}

impl TableStats {
    fn merge(mut self, o: TableStats) -> TableStats {
        for i in 0..2 {
            self.legal[i] += o.legal[i];
            self.wins[i] += o.wins[i];
            self.draws[i] += o.draws[i];
            self.losses[i] += o.losses[i];
            self.longest_win[i] = match (self.longest_win[i], o.longest_win[i]) {
                (Some(a), Some(b)) => Some(if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                    b
                } else {
                    a
                }),
                (a, b) => a.or(b),
            };
        }
        self
    }
}

const BLOCK: u64 = 1 << 12;

/// Verifies every slot of `table` against its successors. Returns the table's statistics.
pub fn verify(table: &Table, deps: &dyn Probe) -> Result<TableStats, Box<VerifyError>> {
    let size = table.index.size();
    let blocks = size.div_ceil(BLOCK);
    (0..2 * blocks)
        .into_par_iter()
        .map(|b| {
            let side = if b < blocks { Color::Red } else { Color::Black };
            let start = (b % blocks) * BLOCK;
            let end = (start + BLOCK).min(size);
            let mut stats = TableStats::default();
            for slot in start..end {
                verify_slot(table, deps, side, slot, &mut stats)?;
            }
            Ok(stats)
        })
        .try_reduce(TableStats::default, |a, b| Ok(a.merge(b)))
}

fn verify_slot(
    table: &Table,
    deps: &dyn Probe,
    side: Color,
    slot: u64,
    stats: &mut TableStats,
) -> Result<(), Box<VerifyError>> {
    let code = table.values[side.index()][slot as usize];
    let stored = Value::decode(code);
    let fail = |fen: String, expected: Value| {
        Box::new(VerifyError {
            signature: table.signature(),
            side,
            slot,
            fen,
            stored,
            expected,
        })
    };
    let board = match table.index.board(slot, side) {
        Some(b) if !b.opponent_in_check() => b,
        Some(b) if code != ILLEGAL => return Err(fail(b.fen(), Value::Illegal)),
        None if code != ILLEGAL => return Err(fail("-".into(), Value::Illegal)),
        _ => return Ok(()),
    };
    let mut moves = MoveList::new();
    board.legal_moves_into(&mut moves);
    let mut best = Value::Loss(0);
    let mut after = board.clone();
    for &m in moves.iter() {
        let captured = after.make(m);
        let v = if captured.is_some() {
            deps.probe(&after).unwrap_or(Value::Illegal)
        } else {
            match table.index.index_of(&after) {
                Some(s) => table.value(after.side_to_move(), s),
                None => Value::Illegal,
            }
        };
        after.unmake(m, captured);
        if v == Value::Illegal {
            return Err(fail(board.fen(), Value::Illegal));
        }
        let mine = v.for_mover();
        // Any move beats having none (Loss(0)): after a move the mover loses in 1 ply or more.
        if mine.preference() > best.preference() {
            best = mine;
        }
    }
    if stored != best {
        return Err(fail(board.fen(), best));
    }
    let i = side.index();
    stats.legal[i] += 1;
    match best {
        Value::Win(d) => {
            stats.wins[i] += 1;
            if stats.longest_win[i].is_none_or(|(l, _)| d > l) {
                stats.longest_win[i] = Some((d, slot));
            }
        }
        Value::Draw => stats.draws[i] += 1,
        _ => stats.losses[i] += 1,
    }
    Ok(())
}
