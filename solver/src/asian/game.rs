//! One batch of components of the trap graph as an explicit game graph for the rule engine
//! ([`crate::rules`]): each node's moves of the trap graph, classified (check, chase of which
//! pieces, idle), with the pieces followed through each move.

use super::phase::{Phase, entry_of, pos_of};
use super::roles::graph_moves;
use crate::error::SolveError;
use crate::rules::{Edge, Game, Label, SLOTS, Target};
use crate::state::{Flags, Undecided};
use rayon::prelude::*;
use xiangqi::repetition::MoveClasses;
use xiangqi::{Color, Move, Square};
use xqtb_core::MAX_PIECES;

/// One batch of components of the trap graph, compactly: each node's moves of the trap graph
/// (see [`graph_moves`]); a node that is no offender position has further moves out of the
/// graph, to positions that are not lost for its side ([`Game::escapes`]).
pub(super) struct TableGame {
    pub(super) entries: Vec<u64>,
    size: u64,
    escapes: Vec<bool>,
    start: Vec<u32>,
    /// Packed moves: target node (bits 0-31), check (bit 32), chased slots (bits 34-49), slot
    /// map (bits 50-63, index into `maps` plus one, 0 for none).
    moves: Vec<u64>,
    maps: Vec<[u8; SLOTS]>,
}

impl TableGame {
    fn pack(to: u32, label: Label, map: u64) -> u64 {
        to as u64 | (label.check as u64) << 32 | (label.chase as u64) << 34 | map << 50
    }

    pub(super) fn build(phase: &Phase, entries: Vec<u64>) -> Result<TableGame, SolveError> {
        let s = phase.solver;
        let index = s.index;
        let size = s.len();
        let identical = (1..s.pieces.len()).any(|i| s.pieces[i] == s.pieces[i - 1]);
        let maps = std::sync::Mutex::new(Vec::<[u8; SLOTS]>::new());
        let parts: Vec<(Vec<u64>, Vec<u32>, Vec<bool>)> = entries
            .par_chunks(1024)
            .map(|chunk| {
                let mut pos = s.position();
                // Each node's moves are classified on a copy of its board in one scratch board
                // per chunk (a `Classifier` per node, with a board of its own, costs more).
                let mut scratch = xiangqi::Board::default();
                let mut moves = Vec::new();
                let mut ends = Vec::with_capacity(chunk.len());
                let mut escapes = Vec::with_capacity(chunk.len());
                for &e in chunk {
                    let (side, slot) = pos_of(size, e);
                    let offender = Undecided::of(phase.code((side, slot)))
                        .is_some_and(|u| u.has(Flags::OFFENDER));
                    escapes.push(!offender);
                    if pos.load(slot, side) {
                        let mut classes: Option<MoveClasses> = None;
                        graph_moves(phase, &mut pos, offender, |pos, m, q| {
                            let target = entry_of(size, (side.opponent(), q));
                            let to = entries
                                .binary_search(&target)
                                .expect("a move of the trap graph stays in its component")
                                as u32;
                            let map_slots = identical.then(|| {
                                let succ = pos.table_slot(q);
                                slot_map(index, &s.pieces, pos.squares(), m, succ)
                            });
                            let classes = classes.get_or_insert_with(|| {
                                scratch.clone_from(&pos.board);
                                MoveClasses::new(side)
                            });
                            let class = classes.class(&mut scratch, m);
                            let mut chase = 0u16;
                            for sq in class.chased.iter() {
                                let flat = pos.flat_at(sq) as u8;
                                chase |= 1 << map_slots.map_or(flat, |m| m[flat as usize]);
                            }
                            let label = Label {
                                check: class.check,
                                chase,
                            };
                            let map = match map_slots {
                                Some(ms) if ms.iter().enumerate().any(|(i, &j)| i as u8 != j) => {
                                    let mut all = maps.lock().expect("slot maps");
                                    let k = match all.iter().position(|x| *x == ms) {
                                        Some(k) => k,
                                        None => {
                                            all.push(ms);
                                            all.len() - 1
                                        }
                                    };
                                    k as u64 + 1
                                }
                                _ => 0,
                            };
                            moves.push(TableGame::pack(to, label, map));
                        });
                    }
                    ends.push(moves.len() as u32);
                }
                (moves, ends, escapes)
            })
            .collect();
        let mut start = Vec::with_capacity(entries.len() + 1);
        start.push(0u32);
        let mut packed = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
        let mut escapes = Vec::with_capacity(entries.len());
        for (m, ends, e) in parts {
            let base = packed.len() as u32;
            start.extend(ends.iter().map(|&end| base + end));
            packed.extend(m);
            escapes.extend(e);
        }
        Ok(TableGame {
            entries,
            size,
            escapes,
            start,
            moves: packed,
            maps: maps.into_inner().expect("slot maps"),
        })
    }
}

impl Game for TableGame {
    fn nodes(&self) -> usize {
        self.entries.len()
    }
    fn side(&self, n: usize) -> Color {
        pos_of(self.size, self.entries[n]).0
    }
    fn degree(&self, n: usize) -> usize {
        (self.start[n + 1] - self.start[n]) as usize
    }
    fn edge(&self, n: usize, i: usize) -> Edge {
        let x = self.moves[self.start[n] as usize + i];
        let label = Label {
            check: (x >> 32) & 1 != 0,
            chase: ((x >> 34) & 0xFFFF) as u16,
        };
        let map = (x >> 50) as usize;
        Edge {
            to: Target::Node(x as u32),
            label,
            slots: (map > 0).then(|| self.maps[map - 1]),
        }
    }
    fn escapes(&self, n: usize) -> bool {
        self.escapes[n]
    }
}

/// The flat positions of the pieces after a quiet move, numbered as the successor's slot
/// decodes them (which may be the mirror image of the board after the move): for each flat
/// position before the move, its position after.
fn slot_map(
    index: &xqtb_core::TableIndex,
    pieces: &[xiangqi::Piece],
    before: &[u8],
    m: Move,
    succ: u64,
) -> [u8; SLOTS] {
    let n = index.piece_count();
    let after: Vec<u8> = before
        .iter()
        .map(|&s| {
            if s == m.from().index() as u8 {
                m.to().index() as u8
            } else {
                s
            }
        })
        .collect();
    let mut decoded = [0u8; MAX_PIECES];
    index.decode(succ, &mut decoded);
    let mirror = |s: u8| {
        Square::from_index(s as usize)
            .expect("a square")
            .mirror()
            .index() as u8
    };
    // The stored placement is the board after the move or its mirror image: tell them apart by
    // piece and square, not by squares alone (a mirror image can occupy the same squares).
    let same = (0..n).all(|i| (0..n).any(|j| decoded[j] == after[i] && pieces[j] == pieces[i]));
    let mut map = [0u8; SLOTS];
    for (i, slot) in map.iter_mut().enumerate().take(n) {
        let want = if same { after[i] } else { mirror(after[i]) };
        *slot = (0..n)
            .find(|&j| decoded[j] == want && pieces[j] == pieces[i])
            .expect("the successor holds the same pieces") as u8;
    }
    for (i, slot) in map.iter_mut().enumerate().skip(n) {
        *slot = i as u8;
    }
    map
}
