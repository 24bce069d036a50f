//! The trap graph's connected components, and the batches they are handed to the rule engine
//! in.
//!
//! After the safety pass ([`super::roles`]) the positions that kept a role are the nodes of the
//! trap graph. They are numbered ([`NodeSet`]) and joined into components by a union-find over
//! the graph's moves. A component none of whose positions was touched since the last round
//! ([`Flags::TOUCHED`]) is skipped: its positions and moves are those of the last round, which
//! found no trap in it. The others are handed to the rule engine in batches of a bounded number
//! of nodes, so that the explicit graphs stay small (a larger component makes a batch of its
//! own).

use super::phase::{Phase, entry_of, pos_of};
use super::roles::graph_moves;
use crate::error::SolveError;
use crate::state::{Flags, Undecided};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};
use xqtb_core::prefetch;

/// Nodes handed to the rule engine at once: bounds the memory of the explicit graphs (a larger
/// component makes a batch of its own).
const BATCH_NODES: u64 = 1 << 16;

/// A set of entries with the rank of each (its node id): one bit per entry and a running
/// count per 8 words.
pub(super) struct NodeSet {
    bits: Vec<u64>,
    ranks: Vec<u32>,
    pub(super) len: u32,
}

impl NodeSet {
    /// The undecided positions with the offender or the winner role (they lie in the blocks
    /// [`Phase::roles`] marks).
    fn of_roles(phase: &Phase) -> NodeSet {
        let size = phase.solver.len();
        let words: Vec<AtomicU64> = (0..(2 * size).div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        let _ = phase.par_marked(&phase.roles, false, |side, slots, _| {
            let states = phase.states(side);
            for slot in slots {
                if Undecided::of(states[slot as usize].load(Relaxed))
                    .is_some_and(|u| u.has(Flags::OFFENDER) || u.has(Flags::WINNER))
                {
                    let e = entry_of(size, (side, slot));
                    words[(e / 64) as usize].fetch_or(1 << (e % 64), Relaxed);
                }
            }
            Ok(())
        });
        let bits: Vec<u64> = words.into_iter().map(AtomicU64::into_inner).collect();
        let mut ranks = Vec::with_capacity(bits.len().div_ceil(8));
        let mut n = 0u32;
        for block in bits.chunks(8) {
            ranks.push(n);
            n += block.iter().map(|w| w.count_ones()).sum::<u32>();
        }
        NodeSet {
            bits,
            ranks,
            len: n,
        }
    }

    /// Marks in [`Phase::roles`] the blocks of the nodes, and only those: the next round's
    /// safety pass keeps or takes these positions' roles, gives others back ([`super::roles`]),
    /// and marks their blocks then.
    fn mark_roles(&self, phase: &Phase) {
        let size = phase.solver.len();
        phase.roles.clear();
        self.for_each_block(|block| {
            for (e, _) in block {
                let (side, slot) = pos_of(size, e);
                phase.roles.mark(phase.solver, side, slot);
            }
        });
    }

    /// The node id of entry `e`, if it is a node.
    pub(super) fn id(&self, e: u64) -> Option<u32> {
        let w = (e / 64) as usize;
        let b = e % 64;
        if self.bits[w] >> b & 1 == 0 {
            return None;
        }
        let block = w / 8 * 8;
        let before: u32 = self.bits[block..w].iter().map(|x| x.count_ones()).sum();
        Some(self.ranks[w / 8] + before + (self.bits[w] & ((1u64 << b) - 1)).count_ones())
    }

    /// The entries of the nodes `ids` (increasing, each below [`NodeSet::len`]), in order: one
    /// walk forward over the rank blocks, cheaper than a search for each node.
    fn entries(&self, ids: &[u32]) -> Vec<u64> {
        let mut out = Vec::with_capacity(ids.len());
        let mut blk = 0;
        for &id in ids {
            while blk + 1 < self.ranks.len() && self.ranks[blk + 1] <= id {
                blk += 1;
            }
            let mut left = id - self.ranks[blk];
            let w = (blk * 8..self.bits.len())
                .find(|&w| {
                    let n = self.bits[w].count_ones();
                    let here = left < n;
                    if !here {
                        left -= n;
                    }
                    here
                })
                .unwrap_or_else(|| unreachable!("node {id} of a set of {}", self.len));
            let mut x = self.bits[w];
            for _ in 0..left {
                x &= x - 1;
            }
            out.push(w as u64 * 64 + x.trailing_zeros() as u64);
        }
        out
    }

    /// The (entry, id) pairs of the set in the rank blocks `blocks`, in order.
    fn block(&self, blocks: std::ops::Range<usize>) -> impl Iterator<Item = (u64, u32)> + '_ {
        let end = blocks.end.min(self.ranks.len());
        let words = blocks.start * 8..(end * 8).min(self.bits.len());
        let mut id = self.ranks.get(blocks.start).copied().unwrap_or(self.len);
        words
            .flat_map(move |w| {
                let mut x = self.bits[w];
                std::iter::from_fn(move || {
                    (x != 0).then(|| {
                        let b = x.trailing_zeros() as u64;
                        x &= x - 1;
                        (w as u64 * 64 + b, ())
                    })
                })
            })
            .map(move |(e, ())| {
                let out = (e, id);
                id += 1;
                out
            })
    }

    /// Runs `f` over the (entry, id) pairs of the set in parallel pieces (each in order).
    fn for_each_block(&self, f: impl Fn(&mut dyn Iterator<Item = (u64, u32)>) + Sync) {
        (0..self.ranks.len().div_ceil(8))
            .into_par_iter()
            .for_each(|blk| f(&mut self.block(blk * 8..(blk + 1) * 8)));
    }
}

/// Union-find over node ids, safe to use from many threads; a root is the smallest id of its
/// component.
struct Components {
    parent: Vec<AtomicU32>,
}

impl Components {
    fn new(n: u32) -> Components {
        Components {
            parent: (0..n).map(AtomicU32::new).collect(),
        }
    }

    fn find(&self, mut x: u32) -> u32 {
        loop {
            let p = self.parent[x as usize].load(Relaxed);
            if p == x {
                return x;
            }
            let g = self.parent[p as usize].load(Relaxed);
            if g != p {
                // Path halving; losing the race only leaves a longer path.
                let _ = self.parent[x as usize].compare_exchange(p, g, Relaxed, Relaxed);
            }
            x = g;
        }
    }

    fn union(&self, a: u32, b: u32) {
        loop {
            let (ra, rb) = (self.find(a), self.find(b));
            if ra == rb {
                return;
            }
            let (hi, lo) = (ra.max(rb), ra.min(rb));
            if self.parent[hi as usize]
                .compare_exchange(hi, lo, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Hands the components of the trap graph that must be searched (those with a touched node,
/// or all of them in the first round: `all`) to `search`, in batches, each as the sorted
/// entries of its nodes. Returns how many nodes the graph has, and how many were searched in
/// how many batches.
pub(super) fn search_components(
    phase: &Phase,
    all: bool,
    search: &mut dyn FnMut(Vec<u64>) -> Result<(), SolveError>,
) -> Result<(u64, u64, u64), SolveError> {
    let s = phase.solver;
    let size = s.len();
    let nodes = NodeSet::of_roles(phase);
    nodes.mark_roles(phase);
    let comps = Components::new(nodes.len);
    // Every move of the graph joins a winner position and an offender position: a winner
    // position's moves of the graph lead to offender positions, and at the safety fixed point
    // every move of an offender position into an undecided position leads to a winner position.
    // So the winner positions' moves into offender positions and un-moves from them find every
    // move, and the offender positions, most of the nodes, need not be set up. One position per
    // piece of the set, not per node: setting one up fills its move and slot buffers.
    nodes.for_each_block(|block| {
        let mut pos = s.position();
        for (e, id) in block {
            let (side, slot) = pos_of(size, e);
            if !Undecided::of(phase.code((side, slot))).is_some_and(|u| u.has(Flags::WINNER))
                || !pos.load(slot, side)
            {
                continue;
            }
            let them = side.opponent();
            graph_moves(phase, &mut pos, false, |_, _, q| {
                if let Some(to) = nodes.id(entry_of(size, (them, q))) {
                    comps.union(id, to);
                }
            });
            let other = phase.states(them);
            for &p in pos.predecessors(|p| prefetch(&other[p])) {
                if Undecided::of(other[p].load(Relaxed)).is_some_and(|u| u.has(Flags::OFFENDER)) {
                    let from = nodes
                        .id(entry_of(size, (them, p as u64)))
                        .expect("an offender position is a node");
                    comps.union(id, from);
                }
            }
        }
    });
    // Per root: whether the component must be searched, and its size (few components: a map).
    let dirty: Vec<AtomicU64> = (0..(nodes.len as usize).div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let sizes = std::sync::Mutex::new(BTreeMap::<u32, u32>::new());
    nodes.for_each_block(|block| {
        let mut local = BTreeMap::<u32, u32>::new();
        for (e, id) in block {
            let r = comps.find(id);
            *local.entry(r).or_default() += 1;
            if all
                || Undecided::of(phase.code(pos_of(size, e))).is_some_and(|u| u.has(Flags::TOUCHED))
            {
                dirty[r as usize / 64].fetch_or(1 << (r % 64), Relaxed);
            }
        }
        let mut sizes = sizes.lock().expect("component sizes");
        for (r, n) in local {
            *sizes.entry(r).or_default() += n;
        }
    });
    let is_dirty = |r: u32| dirty[r as usize / 64].load(Relaxed) >> (r % 64) & 1 != 0;
    // Batches: runs of consecutive dirty roots up to the size bound, as ranges of roots.
    let mut batches: Vec<(u32, u32)> = Vec::new();
    let mut filled = 0u64;
    let mut searched = 0u64;
    for (&r, &n) in sizes.into_inner().expect("component sizes").iter() {
        if !is_dirty(r) {
            continue;
        }
        let n = n as u64;
        match batches.last_mut() {
            Some(b) if filled + n <= BATCH_NODES => b.1 = r + 1,
            _ => {
                batches.push((r, r + 1));
                filled = 0;
            }
        }
        filled += n;
        searched += n;
    }
    // Each dirty node's batch, in one pass over the nodes (a pass per batch would read every
    // node's root once per batch): node ids, in order, which take half the memory of entries.
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); batches.len()];
    if !batches.is_empty() {
        for id in 0..nodes.len {
            let r = comps.find(id);
            if is_dirty(r) {
                // The batch whose range of roots holds `r` (every dirty root is in one).
                let b = batches.partition_point(|&(lo, _)| lo <= r) - 1;
                members[b].push(id);
            }
        }
    }
    // The union-find is done with: freed before the batches' graphs are built (the phase's
    // peak memory is reached while one is).
    drop(comps);
    for ids in members {
        let entries = nodes.entries(&ids);
        drop(ids);
        search(entries)?;
    }
    Ok((nodes.len as u64, searched, batches.len() as u64))
}
