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

use crate::position::{SlotPosition, prefetch};
use rayon::prelude::*;
use storage_format::value::ILLEGAL;
use storage_format::{Probe, ProbeError, Signature, Table, Value};
use thiserror::Error;
use xiangqi::{Board, Color};

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
    (0..blocks)
        .into_par_iter()
        .map(|b| {
            let start = b * BLOCK;
            let end = (start + BLOCK).min(size);
            let mut stats = TableStats::default();
            let pieces = table.index.piece_list();
            let mut pos = SlotPosition::new(&table.index, &pieces);
            for slot in start..end {
                // Both sides to move share the placement: it is set up once.
                let possible = pos.load(slot, Color::Red);
                for side in Color::ALL {
                    pos.board.set_side_to_move(side);
                    verify_slot(table, deps, side, slot, possible, &mut pos, &mut stats)?;
                }
            }
            Ok(stats)
        })
        .try_reduce(TableStats::default, |a, b| Ok(a.merge(b)))
}

/// Verifies one entry; `pos` holds the slot's placement with `side` to move when `possible`.
fn verify_slot(
    table: &Table,
    deps: &dyn Probe,
    side: Color,
    slot: u64,
    possible: bool,
    pos: &mut SlotPosition,
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
    let board = &pos.board;
    match (possible && !board.opponent_in_check(), code == ILLEGAL) {
        (true, false) => {}
        (false, true) => return Ok(()),
        (true, true) => return Err(fail(board.fen(), Value::Illegal)),
        (false, false) => return Err(fail("-".into(), Value::Illegal)),
    }
    // Illegal moves are recognised by their successor: an illegal slot of this table (each
    // slot's own legality is checked above, so the marks are trusted only once verified as a
    // whole) or an illegal position in a dependency.
    let next = &table.values[side.opponent().index()];
    let (board, moves, slots) = pos.successors(|s| prefetch(&next[s]));
    let mut best = Value::Loss(0);
    let mut after: Option<Board> = None;
    for (i, &m) in moves.iter().enumerate() {
        let v = if board.is_empty(m.to()) {
            Value::decode(next[slots[i]])
        } else {
            let after = after.get_or_insert_with(|| board.clone());
            let captured = after.make(m);
            let v = deps.probe(after);
            after.unmake(m, captured);
            match v {
                Ok(v) => v,
                Err(ProbeError::Illegal(_)) => Value::Illegal,
                Err(e) => return Err(fail(format!("{} ({e})", board.fen()), Value::Illegal)),
            }
        };
        // Any legal move beats having none (Loss(0)): after a move the mover loses in 1 ply or
        // more.
        let mine = v.for_mover();
        if v != Value::Illegal && mine.preference() > best.preference() {
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
