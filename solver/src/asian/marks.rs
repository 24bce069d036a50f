//! Block marks: which blocks of slots hold an entry a pass of the rule phase has to visit.
//!
//! The phase's levels, waves and rounds decide few positions each, scattered over the table.
//! With one mark per chunk of slots, as the retrograde phase keeps, every pass would read most of
//! the table to find them; with a mark per block of 128 slots a pass reads only the blocks that
//! hold its entries.

use super::states::Solver;
use crate::CHUNK_SLOTS;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::Color;

/// Slots per block: a chunk's 64 bits mark its 64 blocks.
const BLOCK_SLOTS: u64 = CHUNK_SLOTS / 64;

/// Per chunk of both sides ([`crate::position::Job::chunk_of`]), a bit for each of its 64 blocks of slots.
pub(super) struct Marks(Vec<AtomicU64>);

impl Marks {
    /// No block marked, over the job of `solver`.
    pub(super) fn new(solver: &Solver) -> Marks {
        Marks((0..2 * solver.chunks).map(|_| AtomicU64::new(0)).collect())
    }

    /// Marks the block of `(side, slot)`.
    #[inline]
    pub(super) fn mark(&self, solver: &Solver, side: Color, slot: u64) {
        let word = &self.0[solver.chunk_of(side, slot as usize)];
        let bit = 1u64 << (slot % CHUNK_SLOTS / BLOCK_SLOTS);
        if word.load(Relaxed) & bit == 0 {
            word.fetch_or(bit, Relaxed);
        }
    }

    /// Takes every mark.
    pub(super) fn clear(&self) {
        self.0.par_iter().for_each(|w| w.store(0, Relaxed));
    }

    /// The marks of chunk `c`, taken when `take`.
    #[inline]
    pub(super) fn chunk(&self, c: usize, take: bool) -> u64 {
        if take {
            self.0[c].swap(0, Relaxed)
        } else {
            self.0[c].load(Relaxed)
        }
    }
}

/// The slots of the marked blocks of one chunk, in order.
pub(super) struct MarkedSlots {
    blocks: u64,
    start: u64,
    end: u64,
    block: std::ops::Range<u64>,
}

impl MarkedSlots {
    /// The slots of the blocks `blocks` marks in the chunk of slots `start..end`.
    pub(super) fn new(blocks: u64, start: u64, end: u64) -> MarkedSlots {
        MarkedSlots {
            blocks,
            start,
            end,
            block: 0..0,
        }
    }
}

impl Iterator for MarkedSlots {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(slot) = self.block.next() {
                return Some(slot);
            }
            if self.blocks == 0 {
                return None;
            }
            let b = self.blocks.trailing_zeros() as u64;
            self.blocks &= self.blocks - 1;
            let lo = self.start + b * BLOCK_SLOTS;
            self.block = lo..(lo + BLOCK_SLOTS).min(self.end);
        }
    }
}
