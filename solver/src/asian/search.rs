//! The trap search of one round: which forced positions lose by rule now.
//!
//! 1. *Roles.* Every forced position may be an offender in a trap; every undecided position one
//!    of its moves leads to may be a position of the winner inside one.
//! 2. *Safety.* A necessary condition is kept as a greatest fixed point over the flags: an
//!    offender position stays when all its moves into undecided positions lead to winner
//!    positions that stay, a winner position stays when one of its moves leads to an offender
//!    position that stays. Killed positions wake their predecessors (un-moves), wave by wave.
//!    After the first round the pass starts from the last round's fixed point, less what was
//!    decided since: a position outside it can only be in the new one if its moves changed
//!    (touched), it got its role this round, or it has a move into such a position that was
//!    outside too (by induction: otherwise it would have been in the last one). Those get
//!    their roles back, wave by wave backwards, and are checked before the kills propagate.
//! 3. *Components.* What stays forms the trap graph; it falls apart into connected components
//!    (lock-free union-find over the winner positions' moves and un-moves, every root the
//!    smallest node of its component). A component none of whose positions was touched since
//!    the last round is skipped: its positions and moves are those of the last round, which
//!    found no trap in it. When the safety pass started from the last round's fixed point (few
//!    positions touched), the components with a touched node are found instead by a walk from
//!    those nodes along the graph's moves both ways (un-moves backwards), which does not read
//!    the whole table.
//! 4. *Batches.* Components are handed to the rule engine in batches of bounded size, each as
//!    an explicit graph with every move classified (check, chase of which pieces, idle); the
//!    engine's traps are written as this round's terminals.

use super::{
    FORCED, OFFENDER, Phase, Pos, REVIVED, ROLE_FLAGS, ROLE_WINNER, TOUCHED, WAVE_OFFENDER,
    WAVE_WINNER, WINNER, flagged, has_role, is_undecided, rule_value,
};
use crate::position::{LEAVES, SlotPosition, prefetch};
use crate::rules::{Edge, Game, Label, SLOTS, Target, traps};
use crate::solve::SolveError;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};
use xiangqi::repetition::{MoveClass, MoveClasses};
use xiangqi::{Color, Move, MoveList, Square};
use xqtb_core::{MAX_PIECES, Rule};

/// Nodes handed to the rule engine at once: bounds the memory of the explicit graphs (a larger
/// component makes a batch of its own).
const BATCH_NODES: u64 = 1 << 16;

/// The job's entries are numbered side-major: Red's job slots, then Black's.
fn entry_of(size: u64, (side, slot): Pos) -> u64 {
    side.index() as u64 * size + slot
}

fn pos_of(size: u64, e: u64) -> Pos {
    if e < size {
        (Color::Red, e)
    } else {
        (Color::Black, e - size)
    }
}

/// A set of entries with the rank of each (its node id): one bit per entry and a running
/// count per 8 words.
struct NodeSet {
    bits: Vec<u64>,
    ranks: Vec<u32>,
    len: u32,
}

impl NodeSet {
    /// The undecided positions with any of `flags` (see [`flagged`]); on the way, counts those
    /// with any of `counted` (the scan reads the whole table: a second one would cost as much).
    fn of(phase: &Phase, flags: u16, counted: u16) -> (NodeSet, u64) {
        let size = phase.solver.len();
        let total = 2 * size;
        let count = AtomicU64::new(0);
        let bits: Vec<u64> = (0..total.div_ceil(64))
            .into_par_iter()
            .map(|w| {
                let first = w * 64;
                let with = |c: u16, f: u16| (is_undecided(c) && flagged(c, f)) as u64;
                let (side, slot) = pos_of(size, first);
                let (x, n) = if slot + 64 <= size {
                    // The whole word lies on one side: a branch-free scan of its 64 states.
                    let states = &phase.states(side)[slot as usize..slot as usize + 64];
                    states
                        .iter()
                        .enumerate()
                        .fold((0u64, 0u64), |(x, n), (b, a)| {
                            let c = a.load(Relaxed);
                            (x | with(c, flags) << b, n + with(c, counted))
                        })
                } else {
                    (0..64)
                        .take_while(|b| first + b < total)
                        .fold((0u64, 0u64), |(x, n), b| {
                            let c = phase.code(pos_of(size, first + b));
                            (x | with(c, flags) << b, n + with(c, counted))
                        })
                };
                if n > 0 {
                    count.fetch_add(n, Relaxed);
                }
                x
            })
            .collect();
        let mut ranks = Vec::with_capacity(bits.len().div_ceil(8));
        let mut n = 0u32;
        for block in bits.chunks(8) {
            ranks.push(n);
            n += block.iter().map(|w| w.count_ones()).sum::<u32>();
        }
        let set = NodeSet {
            bits,
            ranks,
            len: n,
        };
        (set, count.into_inner())
    }

    fn id(&self, e: u64) -> Option<u32> {
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
    /// walk forward over the rank blocks (a binary search over them for each node cost KRNvKR
    /// 0.07-0.09 s a round, on one thread while the other waits).
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

/// Calls `f(m, slot)` for each move of the trap graph from the loaded position (an `offender`
/// position or not): for an offender position every move in the job into an undecided position,
/// for a winner position its moves in the job into offender positions. (Captures and exits are
/// irreversible: no trap runs through them.)
fn graph_moves(
    phase: &Phase,
    pos: &mut SlotPosition,
    offender: bool,
    mut f: impl FnMut(&SlotPosition, Move, u64),
) {
    let them = phase.states(pos.board.side_to_move().opponent());
    pos.successors(|q| prefetch(&them[q]));
    let pos = &*pos;
    let (moves, slots) = pos.last_successors();
    for (i, &m) in moves.iter().enumerate() {
        let q = slots[i];
        if q == LEAVES {
            continue;
        }
        let sc = them[q].load(Relaxed);
        if is_undecided(sc) && (offender || flagged(sc, OFFENDER)) {
            f(pos, m, q as u64);
        }
    }
}

/// Finds this round's traps and writes their offender positions as lost by rule, 0 plies
/// away; `all` looks at every component (the first round). Returns how many it wrote.
pub(super) fn trap_round(phase: &Phase, round: u8, all: bool) -> Result<u64, SolveError> {
    let s = phase.solver;
    let size = s.len();
    let t0 = std::time::Instant::now();
    let fresh = all || start_override().unwrap_or_else(|| touched_many(phase));
    // The first round's forced test gave the roles as it marked the positions.
    if !all {
        if fresh {
            give_roles_afresh(phase);
        } else {
            revive_touched(phase);
            revive_backwards(phase);
        }
    }
    // A winner role given afresh may be stale (every forced position leading there decided
    // since). Such a position stays a node, as it does when the roles are kept from the last
    // round: no offender position leads there, so no trap runs through it and nobody's safety
    // depends on it. Taking the role away cost a read of every winner position's un-moves.
    keep_safe(phase, fresh);
    let t1 = t0.elapsed().as_secs_f64();
    let codes = [
        rule_value(s, Rule::PerpetualCheck, round, 0)?.encode(),
        rule_value(s, Rule::PerpetualChase, round, 0)?.encode(),
    ];
    let mut terminals = 0u64;
    let mut engine = 0f64;
    let mut search = |entries: Vec<u64>| -> Result<(), SolveError> {
        let game = TableGame::build(phase, entries)?;
        let te = std::time::Instant::now();
        let found = traps(&game, &vec![None; game.nodes()]);
        engine += te.elapsed().as_secs_f64();
        for (list, code) in [(&found.check, codes[0]), (&found.chase, codes[1])] {
            for &n in list {
                let (side, slot) = pos_of(size, game.entries[n as usize]);
                phase.states(side)[slot as usize].store(code, Relaxed);
                phase.note_decided(side, slot, 0);
            }
            terminals += list.len() as u64;
        }
        Ok(())
    };
    let searched = if fresh {
        search_by_union(phase, all, &mut search)?
    } else {
        search_from_touched(phase, &mut search)?
    };
    // The roles that stayed are the next round's start (see the module documentation).
    clear_touched(phase);
    tracing::debug!(
        round,
        fresh,
        nodes = searched.nodes,
        searched = searched.searched,
        batches = searched.batches,
        terminals,
        safety_secs = t1,
        engine_secs = engine,
        secs = t0.elapsed().as_secs_f64(),
        "trap search"
    );
    Ok(terminals)
}

/// What a round's search looked at: the nodes of the trap graph it found, those in components
/// it searched, and the batches it searched them in.
struct Searched {
    nodes: u64,
    searched: u64,
    batches: u64,
}

/// Hands the components of the trap graph that must be searched (all of them, or those with a
/// touched node) to `search`, in batches: the components are found by a union over every node of
/// the graph. Also counts the positions with a role for the next round's [`touched_many`].
fn search_by_union(
    phase: &Phase,
    all: bool,
    search: &mut dyn FnMut(Vec<u64>) -> Result<(), SolveError>,
) -> Result<Searched, SolveError> {
    let s = phase.solver;
    let size = s.len();
    let (nodes, roles) = NodeSet::of(phase, OFFENDER | WINNER, FORCED | ROLE_WINNER);
    phase.roles.store(roles, Relaxed);
    let comps = Components::new(nodes.len);
    // Every move of the graph joins a winner position and an offender position: a winner
    // position's moves of the graph lead to offender positions, and at the safety fixed point
    // every move of an offender position into an undecided position leads to a winner position.
    // So the winner positions' moves into offender positions and un-moves from them find every
    // move, and the offender positions need not be set up (on KRNvKR three in four nodes are
    // offender positions). One position per piece of the set, not per node: setting one up
    // fills its move and slot buffers and its slot arithmetic.
    nodes.for_each_block(|block| {
        let mut pos = s.position();
        for (e, id) in block {
            let (side, slot) = pos_of(size, e);
            if !flagged(phase.code((side, slot)), WINNER) || !pos.load(slot, side) {
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
                let c = other[p].load(Relaxed);
                if is_undecided(c) && flagged(c, OFFENDER) {
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
            if all || phase.code(pos_of(size, e)) & TOUCHED != 0 {
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
    // Each dirty node's batch, in one pass (a pass per batch read every node's root each time):
    // node ids, in order, which take half the memory of entries.
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
    Ok(Searched {
        nodes: nodes.len as u64,
        searched,
        batches: batches.len() as u64,
    })
}

/// Hands the components of the trap graph with a touched node to `search`, in batches, found by
/// a walk from those nodes along the graph's moves both ways: after a round that touched few
/// positions, a union over every node (and the scan that numbers them) would cost far more than
/// the components it finds.
fn search_from_touched(
    phase: &Phase,
    search: &mut dyn FnMut(Vec<u64>) -> Result<(), SolveError>,
) -> Result<Searched, SolveError> {
    let s = phase.solver;
    let size = s.len();
    let is_node = |c: u16| is_undecided(c) && flagged(c, OFFENDER | WINNER);
    let seeds: Vec<u64> = phase
        .par_in_marks(&phase.touched, false, |side, slots, _| {
            let states = phase.states(side);
            Ok(slots
                .filter(|&slot| {
                    let c = states[slot as usize].load(Relaxed);
                    c & TOUCHED != 0 && is_node(c)
                })
                .map(|slot| entry_of(size, (side, slot)))
                .collect::<Vec<u64>>())
        })?
        .into_iter()
        .flatten()
        .collect();
    // One bit per entry: with a hash set, KRNvKR's rounds 4 to 6 took a third longer.
    let mut seen = vec![0u64; (2 * size).div_ceil(64) as usize];
    let mut insert = |e: u64| {
        let (w, bit) = ((e / 64) as usize, 1u64 << (e % 64));
        let new = seen[w] & bit == 0;
        seen[w] |= bit;
        new
    };
    let mut pos = s.position();
    let mut found = Vec::new();
    let mut batch: Vec<u64> = Vec::new();
    let mut out = Searched {
        nodes: 0,
        searched: 0,
        batches: 0,
    };
    for seed in seeds {
        if !insert(seed) {
            continue;
        }
        let mut component = vec![seed];
        let mut next = 0;
        while next < component.len() {
            let (side, slot) = pos_of(size, component[next]);
            next += 1;
            let c = phase.code((side, slot));
            if !pos.load(slot, side) {
                continue;
            }
            let them = side.opponent();
            // Successors and predecessors alike have the other side to move.
            let other = phase.states(them);
            found.clear();
            graph_moves(phase, &mut pos, flagged(c, OFFENDER), |_, _, q| {
                if is_node(other[q as usize].load(Relaxed)) {
                    found.push(q)
                }
            });
            // A move of the graph into this node: from an offender position, or from a winner
            // position into an offender position.
            for &p in pos.predecessors(|p| prefetch(&other[p])) {
                let pc = other[p].load(Relaxed);
                if is_node(pc) && (flagged(pc, OFFENDER) || flagged(c, OFFENDER)) {
                    found.push(p as u64);
                }
            }
            for &q in &found {
                let e = entry_of(size, (them, q));
                if insert(e) {
                    component.push(e);
                }
            }
        }
        let n = component.len() as u64;
        if !batch.is_empty() && batch.len() as u64 + n > BATCH_NODES {
            batch.sort_unstable();
            search(std::mem::take(&mut batch))?;
            out.batches += 1;
        }
        batch.extend(component);
        out.searched += n;
    }
    if !batch.is_empty() {
        batch.sort_unstable();
        search(batch)?;
        out.batches += 1;
    }
    out.nodes = out.searched;
    Ok(out)
}

/// Whether the loaded position has a quiet move into an offender position.
fn reaches_offender(phase: &Phase, pos: &mut SlotPosition) -> bool {
    let them = phase.states(pos.board.side_to_move().opponent());
    // Slots one by one, up to the first offender position: most winner positions have one.
    let mut moves = MoveList::new();
    pos.board.pseudo_moves(&mut moves);
    moves.iter().filter_map(|&m| pos.stays(m)).any(|q| {
        let c = them[q].load(Relaxed);
        is_undecided(c) && flagged(c, OFFENDER)
    })
}

/// Tests only: how the rounds after the first start their safety pass (0 as
/// [`touched_many`] chooses, 1 always afresh, 2 always from the last round's fixed point).
#[cfg(test)]
static SAFETY_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

#[cfg(test)]
fn start_override() -> Option<bool> {
    match SAFETY_START.load(Relaxed) {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    }
}

#[cfg(not(test))]
fn start_override() -> Option<bool> {
    None
}

/// Whether more than a quarter of the positions with a role in the trap graph (forced to offend,
/// or led to from such a position; as the last search counted them) were touched since the last
/// round: giving them their roles back and checking them then costs about as much as finding
/// the fixed point afresh (KRNvKR: 0.56 against 0.60 s at a quarter, rounds 2 and 3 about twice
/// as much as afresh above it, the last rounds a fifth of it or less).
fn touched_many(phase: &Phase) -> bool {
    let touched: u64 = phase
        .par_in_marks(&phase.touched, false, |side, slots, _| {
            let states = phase.states(side);
            Ok(slots
                .filter(|&slot| {
                    let c = states[slot as usize].load(Relaxed);
                    is_undecided(c) && c & TOUCHED != 0 && c & (FORCED | ROLE_WINNER) != 0
                })
                .count() as u64)
        })
        .map_or(0, |v| v.into_iter().sum());
    4 * touched > phase.roles.load(Relaxed)
}

/// Takes [`TOUCHED`] from every position, and its marks.
fn clear_touched(phase: &Phase) {
    let _ = phase.par_marked(&phase.touched, |side, slots, _| {
        let states = phase.states(side);
        for slot in slots {
            let a = &states[slot as usize];
            let c = a.load(Relaxed);
            if is_undecided(c) && c & TOUCHED != 0 {
                a.store(c & !TOUCHED, Relaxed);
            }
        }
        Ok(())
    });
}

/// Gives the roles afresh, in one pass over the table: takes every role of the last search (and
/// what was given back this round), then flags the forced positions as offenders and the
/// undecided positions their moves lead to as winner positions (those marked [`ROLE_WINNER`]
/// when a position leading there was marked forced, which may outlast that position).
fn give_roles_afresh(phase: &Phase) {
    for side in Color::ALL {
        phase.states(side).par_iter().for_each(|a| {
            let c = a.load(Relaxed);
            if !is_undecided(c) {
                return;
            }
            // The role flags' bits extend the witness of a position without a role.
            let mut n = c & !REVIVED;
            if has_role(c) {
                n &= !ROLE_FLAGS;
                if c & FORCED != 0 {
                    n |= OFFENDER;
                }
                if c & ROLE_WINNER != 0 {
                    n |= WINNER;
                }
            }
            if n != c {
                a.store(n, Relaxed);
            }
        });
    }
    for marks in phase.waves.iter().chain([&phase.revived]) {
        marks.clear();
    }
}

/// Gives the undecided position `(side, slot)` the search's `role` ([`OFFENDER`] or
/// [`WINNER`]) back this round: it is to be checked ([`REVIVED`]) and, when it did not hold the
/// role, its predecessors are to be looked at ([`revive_backwards`]).
pub(super) fn revive(phase: &Phase, side: Color, slot: u64, role: u16) {
    let s = phase.solver;
    let state = &phase.states(side)[slot as usize];
    let old = state.fetch_or(role | REVIVED, Relaxed);
    if old & REVIVED == 0 {
        phase.revived.mark(s, side, slot);
    }
    if old & role == 0 {
        let (wave, marks) = if role == WINNER {
            (WAVE_WINNER, &phase.waves[0])
        } else {
            (WAVE_OFFENDER, &phase.waves[1])
        };
        state.fetch_or(wave, Relaxed);
        marks.mark(s, side, slot);
    }
}

/// Gives the positions touched since the last round their roles back: their moves changed.
/// (Those forced to offend this round are touched; the positions their moves lead to were given
/// the winner role as they were marked.)
fn revive_touched(phase: &Phase) {
    let _ = phase.par_in_marks(&phase.touched, false, |side, slots, _| {
        let states = phase.states(side);
        for slot in slots {
            let c = states[slot as usize].load(Relaxed);
            if !is_undecided(c) || c & TOUCHED == 0 {
                continue;
            }
            if c & FORCED != 0 {
                revive(phase, side, slot, OFFENDER);
            }
            if c & ROLE_WINNER != 0 {
                revive(phase, side, slot, WINNER);
            }
        }
        Ok(())
    });
}

/// Gives roles back, wave by wave, to the positions outside the fixed point with a move of the
/// trap graph into a position that got its role back: a winner position's move into an
/// offender position, an offender position's move into a winner position.
fn revive_backwards(phase: &Phase) {
    loop {
        let mut any = false;
        for (i, wave) in [WAVE_WINNER, WAVE_OFFENDER].into_iter().enumerate() {
            any |= wave_predecessors(phase, i, |them, p, c, _| {
                if wave == WAVE_WINNER && c & FORCED != 0 && c & OFFENDER == 0 {
                    revive(phase, them, p, OFFENDER);
                } else if wave == WAVE_OFFENDER && c & ROLE_WINNER != 0 && c & WINNER == 0 {
                    revive(phase, them, p, WINNER);
                }
            });
        }
        if !any {
            return;
        }
    }
}

/// One wave of the safety pass: takes the flag of wave `i` (`phase.waves[i]`: [`WAVE_WINNER`],
/// [`WAVE_OFFENDER`]) from the positions that carry it and calls `f(side, slot, state, scratch)`
/// for each of their undecided predecessors, with a position to load it into. Returns whether
/// any position carried it.
fn wave_predecessors(
    phase: &Phase,
    i: usize,
    f: impl Fn(Color, u64, u16, &mut SlotPosition) + Sync,
) -> bool {
    let wave = [WAVE_WINNER, WAVE_OFFENDER][i];
    let woke = phase.par_marked(&phase.waves[i], |side, slots, pos| {
        let states = phase.states(side);
        let them = side.opponent();
        let preds = phase.states(them);
        let mut scratch = phase.solver.position();
        for slot in slots {
            let c = states[slot as usize].load(Relaxed);
            if !is_undecided(c) || !flagged(c, wave) {
                continue;
            }
            states[slot as usize].fetch_and(!wave, Relaxed);
            if !pos.load(slot, side) {
                continue;
            }
            for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                let c = preds[p].load(Relaxed);
                if is_undecided(c) {
                    f(them, p as u64, c, &mut scratch);
                }
            }
        }
        Ok(true)
    });
    woke.unwrap_or_default().into_iter().any(|w| w)
}

/// Whether every move of the loaded offender position into an undecided position leads to a
/// winner position.
fn moves_into_winners(phase: &Phase, pos: &mut SlotPosition) -> bool {
    let them = phase.states(pos.board.side_to_move().opponent());
    let mut all = true;
    graph_moves(phase, pos, true, |_, _, q| {
        all &= flagged(them[q as usize].load(Relaxed), WINNER);
    });
    all
}

/// The safety fixed point (see the module documentation), wave by wave: the positions that lost
/// a role in the last wave carry a `WAVE_` flag, and the blocks holding them a mark. The first
/// wave checks every winner position (`fresh`, roles given afresh: every offender position's
/// moves lead to winner positions then) or the positions given a role back.
fn keep_safe(phase: &Phase, fresh: bool) {
    let s = phase.solver;
    let [wave_winners, wave_offenders] = &phase.waves;
    let lose = |side: Color, slot: u64, role: u16, wave: u16| {
        let state = &phase.states(side)[slot as usize];
        if state.fetch_and(!role, Relaxed) & role != 0 {
            state.fetch_or(wave, Relaxed);
            let marks = if wave == WAVE_WINNER {
                wave_winners
            } else {
                wave_offenders
            };
            marks.mark(s, side, slot);
        }
    };
    if fresh {
        phase.revived.fill();
    }
    let check = |c: u16| {
        if fresh {
            flagged(c, WINNER)
        } else {
            c & REVIVED != 0
        }
    };
    let _ = phase.par_marked(&phase.revived, |side, slots, pos| {
        let states = phase.states(side);
        for slot in slots {
            let c = states[slot as usize].load(Relaxed);
            if !is_undecided(c) || !check(c) {
                continue;
            }
            if c & REVIVED != 0 {
                states[slot as usize].fetch_and(!REVIVED, Relaxed);
            }
            if !pos.load(slot, side) {
                continue;
            }
            if flagged(c, WINNER) && !reaches_offender(phase, pos) {
                lose(side, slot, WINNER, WAVE_WINNER);
            }
            if !fresh && flagged(c, OFFENDER) && !moves_into_winners(phase, pos) {
                lose(side, slot, OFFENDER, WAVE_OFFENDER);
            }
        }
        Ok(())
    });
    // Then alternately: offender positions with a move to a position that lost its winner
    // role lose theirs; winner positions whose moves into offender positions led only to
    // positions that lost it lose theirs.
    loop {
        let mut any = false;
        for (i, wave) in [WAVE_WINNER, WAVE_OFFENDER].into_iter().enumerate() {
            any |= wave_predecessors(phase, i, |them, p, c, q| {
                if wave == WAVE_WINNER && flagged(c, OFFENDER) {
                    lose(them, p, OFFENDER, WAVE_OFFENDER);
                } else if wave == WAVE_OFFENDER
                    && flagged(c, WINNER)
                    && q.load(p, them)
                    && !reaches_offender(phase, q)
                {
                    lose(them, p, WINNER, WAVE_WINNER);
                }
            });
        }
        if !any {
            return;
        }
    }
}

/// One batch of components of the trap graph, compactly: each node's moves of the trap graph
/// (see [`graph_moves`]); a node that is no offender position has further moves out of the
/// graph, to positions that are not lost for its side ([`Game::escapes`]).
struct TableGame {
    entries: Vec<u64>,
    size: u64,
    escapes: Vec<bool>,
    start: Vec<u32>,
    /// Packed moves: target node (bits 0-31), class (bits 32-33: 0 idle, 1 check, 2 chase),
    /// chased slots (bits 34-49), slot map (bits 50-63, index into `maps` plus one, 0 for
    /// none).
    moves: Vec<u64>,
    maps: Vec<[u8; SLOTS]>,
}

impl TableGame {
    fn pack(to: u32, label: Label, map: u64) -> u64 {
        let (kind, bits) = match label {
            Label::Idle => (0u64, 0u64),
            Label::Check => (1, 0),
            Label::Chase(b) => (2, b as u64),
        };
        to as u64 | kind << 32 | bits << 34 | map << 50
    }

    fn build(phase: &Phase, entries: Vec<u64>) -> Result<TableGame, SolveError> {
        let s = phase.solver;
        let index = s.index;
        let size = s.len();
        let identical = (1..s.pieces.len()).any(|i| s.pieces[i] == s.pieces[i - 1]);
        let maps = std::sync::Mutex::new(Vec::<[u8; SLOTS]>::new());
        let parts: Vec<(Vec<u64>, Vec<u32>, Vec<bool>)> = entries
            .par_chunks(1024)
            .map(|chunk| {
                let mut pos = s.position();
                // Each node's moves are classified on a copy of its board (a classifier of its
                // own per node, with its copy, cost more).
                let mut scratch = xiangqi::Board::default();
                let mut moves = Vec::new();
                let mut ends = Vec::with_capacity(chunk.len());
                let mut escapes = Vec::with_capacity(chunk.len());
                for &e in chunk {
                    let (side, slot) = pos_of(size, e);
                    let c = phase.code((side, slot));
                    escapes.push(!flagged(c, OFFENDER));
                    if pos.load(slot, side) {
                        let mut classes: Option<MoveClasses> = None;
                        graph_moves(phase, &mut pos, flagged(c, OFFENDER), |pos, m, q| {
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
                            let label = match classes.class(&mut scratch, m) {
                                MoveClass::Check => Label::Check,
                                MoveClass::Idle => Label::Idle,
                                MoveClass::Chase(sq) => {
                                    let mut bits = 0u16;
                                    for sq in sq.iter() {
                                        let flat = pos.flat_at(sq) as u8;
                                        let after = map_slots.map_or(flat, |m| m[flat as usize]);
                                        bits |= 1 << after;
                                    }
                                    Label::Chase(bits)
                                }
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
        let label = match (x >> 32) & 3 {
            0 => Label::Idle,
            1 => Label::Check,
            _ => Label::Chase(((x >> 34) & 0xFFFF) as u16),
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

#[cfg(test)]
mod tests {
    use super::SAFETY_START;
    use std::sync::atomic::Ordering::Relaxed;
    use xqtb_core::{RuleSet, TableId, Value};

    /// The safety pass started from the last round's fixed point finds the same traps as the
    /// pass afresh. KCAvKN has five rounds, three of them with a trap graph after the first
    /// (752, 255 and 38 positions), so the incremental pass is exercised; the four-piece tables
    /// of the reference tests have none.
    #[test]
    fn incremental_and_fresh_safety_passes_give_the_same_table() {
        let sig: xqtb_core::Signature = "KCAvKN".parse().unwrap();
        let solve = |mode: u8| {
            SAFETY_START.store(mode, Relaxed);
            let tables = crate::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
            SAFETY_START.store(0, Relaxed);
            let t = tables.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
            xiangqi::Color::ALL.map(|side| t.codes(side).to_vec())
        };
        let afresh = solve(1);
        let incremental = solve(2);
        let rounds: std::collections::BTreeSet<u8> = afresh
            .iter()
            .flatten()
            .filter_map(|&c| match Value::decode(c) {
                Value::RuleLoss(r) | Value::RuleWin(r) => Some(r.round),
                _ => None,
            })
            .collect();
        assert!(rounds.len() >= 3, "rule rounds {rounds:?}");
        assert!(afresh == incremental, "the two safety passes disagree");
    }
}
