//! The trap graph's roles and the safety fixed point: a cheap necessary condition for a position
//! to lie in a trap, which keeps the graphs handed to the rule engine small.
//!
//! Every position forced to offend ([`Flags::FORCED`]) may be the offender's position in a trap
//! ([`Flags::OFFENDER`]); every position an offence of one leads into ([`Flags::REACHED`]) may be
//! the winner's ([`Flags::WINNER`]). The *trap graph*'s moves are an offender position's moves into
//! undecided positions and a winner position's moves into offender positions ([`graph_moves`];
//! captures and exits are irreversible, so no trap runs through them).
//!
//! Inside a trap the offender cannot get out and the winner can always stay in. So, as a greatest
//! fixed point, an offender position keeps its role only while every one of its moves into an
//! undecided position leads to a winner position that keeps its role, and a winner position only
//! while one of its moves leads to an offender position that keeps its role. What keeps a role
//! may still be no trap: the rule engine decides that, with the moves' classes.
//!
//! The fixed point is kept from round to round. Between two rounds positions are decided, which
//! takes them out of the graph, and positions become forced or reached; a position outside the
//! last fixed point can only be in the next one if its moves changed (a successor was decided:
//! [`Flags::TOUCHED`]), it is new to the graph, or it has a move into such a position that was
//! outside too (by induction: otherwise it would have been in the last one). So a round gives
//! those positions their roles back ([`Flags::REVIVED`]), backwards from the changed ones, checks
//! them, and takes roles away again in waves: a position that loses its role makes its
//! predecessors (un-moves) look again. In the first round every position is new. The work is
//! proportional to what changed, not to the graph.

use super::phase::{Phase, Pos, entry_of, pos_of};
use crate::position::{LEAVES, SlotPosition};
use crate::state::{Flag, Flags, Undecided};
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::{Color, Move, MoveList};
use xqtb_core::prefetch;

/// Calls `f(pos, m, slot)` for each move of the trap graph from the loaded position: for an
/// `offender` position every move in the job into an undecided position, for a winner position
/// its moves in the job into offender positions.
pub(super) fn graph_moves(
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
        if let Some(u) = Undecided::of(them[q].load(Relaxed))
            && (offender || u.has(Flags::OFFENDER))
        {
            f(pos, m, q as u64);
        }
    }
}

/// Gives `(side, slot)`, undecided, the `role` ([`Flags::OFFENDER`] or [`Flags::WINNER`]) back
/// and flags it [`Flags::REVIVED`], to be checked. Returns whether it gained the role: its
/// predecessors may then gain theirs.
pub(super) fn revive(phase: &Phase, side: Color, slot: u64, role: Flag) -> bool {
    if phase.set_flag(side, slot, Flags::REVIVED) {
        phase.revived.mark(phase.solver, side, slot);
    }
    let gained = phase.set_flag(side, slot, role);
    if gained {
        phase.roles.mark(phase.solver, side, slot);
    }
    gained
}

/// The positions, as entries ([`entry_of`]), that gained a role or lost one in a pass, by
/// role: winners, then offenders.
pub(super) type ByRole = [Vec<u64>; 2];

fn by_role_index(role: Flag) -> usize {
    usize::from(role == Flags::OFFENDER)
}

/// Where a round's safety pass starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// From nothing: every forced position gets the offender role and every reached one the
    /// winner role. It reads every block holding such a position, so it costs about the same
    /// whatever changed: the first round's start, and a round's when much changed.
    Afresh,
    /// From the last round's fixed point, giving roles back only where something changed
    /// (see the module documentation): its work is proportional to the change.
    FromLastRound,
}

impl Start {
    /// The most positions that may gain a role as a round's forced positions are marked (a
    /// measure of how much changed) for the cheaper start to be from the last round, in a job
    /// of `size` slots a side: a fresh start reads the blocks of all the trap graph's
    /// positions, about the whole table, while a start from the last round sets up each changed
    /// position and its neighbours.
    pub(super) fn most_gained_from_last_round(size: u64) -> u64 {
        size / 64
    }
}

/// The positions that gained a role as a round's forced positions were marked
/// ([`super::forced::mark`]).
pub(super) enum Gained {
    /// Listed, as entries: winner positions, then offender positions.
    Listed(ByRole),
    /// Not listed: more than a start from the last round's fixed point is worth (or the first
    /// round, which starts afresh anyway). Lists of them would only add to the phase's peak
    /// memory: a fresh start does not read them.
    Unlisted,
}

impl Gained {
    /// Joins the lists that parallel pieces of a pass made, when they listed every position
    /// that gained a role ([`GainedCount`]).
    pub(super) fn join(parts: Vec<ByRole>, count: &GainedCount) -> Gained {
        if count.over() {
            Gained::Unlisted
        } else {
            Gained::Listed(merge(parts))
        }
    }
}

/// Counts, across the parallel pieces of a pass, the positions that gained a role, so that the
/// pieces stop keeping lists of them once there are more than a limit (with no limit, none are
/// kept).
pub(super) struct GainedCount {
    limit: Option<u64>,
    count: AtomicU64,
}

impl GainedCount {
    pub(super) fn new(limit: Option<u64>) -> GainedCount {
        GainedCount {
            limit,
            count: AtomicU64::new(0),
        }
    }

    /// A piece's lists, counted: kept while the count is within the limit, else dropped.
    pub(super) fn keep(&self, lists: ByRole) -> ByRole {
        let n: u64 = lists.iter().map(|l| l.len() as u64).sum();
        let Some(limit) = self.limit else {
            return Default::default();
        };
        if n == 0 || self.count.fetch_add(n, Relaxed).saturating_add(n) <= limit {
            lists
        } else {
            Default::default()
        }
    }

    /// Whether the lists are not kept: no limit, or more than it gained a role.
    fn over(&self) -> bool {
        self.limit
            .is_none_or(|limit| self.count.load(Relaxed) > limit)
    }
}

/// Finds this round's safety fixed point, from the last round's when the positions that gained
/// a role as the forced positions were marked ([`revive`]) are listed in `gained`, else afresh.
pub(super) fn keep_safe(phase: &Phase, gained: Gained) {
    match gained {
        Gained::Unlisted => give_roles(phase),
        Gained::Listed(mut gained) => {
            for (g, t) in gained.iter_mut().zip(revive_touched(phase)) {
                g.extend(t);
            }
            revive_backwards(phase, gained);
        }
    }
    let mut lost = check_revived(phase);
    while lost.iter().any(|l| !l.is_empty()) {
        lost = take_roles(phase, lost);
    }
}

/// Gives the roles afresh to every position of the trap graph (in the blocks [`Phase::graph`]
/// marks): the offender role to a forced one, the winner role to a reached one, which is then
/// to be checked. (A forced position's moves into undecided positions all lead to reached
/// ones, so with every reached position a winner no offender position needs a check.)
fn give_roles(phase: &Phase) {
    phase.roles.clear();
    let _ = phase.par_marked(&phase.graph, false, |side, slots, _| {
        let states = phase.states(side);
        for slot in slots {
            let state = &states[slot as usize];
            let Some(u) = Undecided::of(state.load(Relaxed)) else {
                continue;
            };
            let mut n = u
                .without(Flags::OFFENDER)
                .without(Flags::WINNER)
                .without(Flags::REVIVED);
            if u.has(Flags::FORCED) {
                n = n.with(Flags::OFFENDER);
            }
            if u.has(Flags::REACHED) {
                n = n.with(Flags::WINNER).with(Flags::REVIVED);
                phase.revived.mark(phase.solver, side, slot);
            }
            if n.has(Flags::OFFENDER) || n.has(Flags::WINNER) {
                phase.roles.mark(phase.solver, side, slot);
            }
            if n != u {
                state.store(n.code(), Relaxed);
            }
        }
        Ok(())
    });
}

/// Gives the touched positions (a successor decided since the last round) their roles back: a
/// reached one the winner role, to be checked (the offender position it reached may be the
/// one decided), a forced one the offender role if it lost it (one that kept it still has
/// only moves into winner positions, fewer of them: it needs no check). Returns those that
/// gained a role.
fn revive_touched(phase: &Phase) -> ByRole {
    each_flagged(
        phase,
        &phase.touched,
        false,
        Flags::TOUCHED,
        |side, slot, u, _, out| {
            let e = entry_of(phase.solver.len(), (side, slot));
            if u.has(Flags::REACHED) && revive(phase, side, slot, Flags::WINNER) {
                out[by_role_index(Flags::WINNER)].push(e);
            }
            if u.has(Flags::FORCED)
                && !u.has(Flags::OFFENDER)
                && revive(phase, side, slot, Flags::OFFENDER)
            {
                out[by_role_index(Flags::OFFENDER)].push(e);
            }
        },
    )
}

/// Runs `f` on every undecided position flagged `flag` in the blocks `marks` marks (taking
/// the marks when `take`), in parallel, with a position to load it into; joins the positions
/// `f` lists by role.
fn each_flagged(
    phase: &Phase,
    marks: &super::marks::Marks,
    take: bool,
    flag: Flag,
    f: impl Fn(Color, u64, Undecided, &mut SlotPosition, &mut ByRole) + Sync,
) -> ByRole {
    let found = phase
        .par_marked(marks, take, |side, slots, pos| {
            let mut out: ByRole = Default::default();
            for slot in slots {
                if let Some(u) = phase.undecided(side, slot).filter(|u| u.has(flag)) {
                    f(side, slot, u, pos, &mut out);
                }
            }
            Ok(out)
        })
        .unwrap_or_default();
    merge(found)
}

/// Gives roles back, wave by wave, to the positions with a move of the trap graph into a
/// position that gained its role: a winner position's move into an offender position, an
/// offender position's move into a winner position.
fn revive_backwards(phase: &Phase, mut gained: ByRole) {
    while gained.iter().any(|g| !g.is_empty()) {
        let mut next: ByRole = Default::default();
        for (i, list) in gained.iter().enumerate() {
            // A gained winner role may give the forced positions that move there theirs, a
            // gained offender role the reached positions that move there theirs.
            let (need, role) = if i == by_role_index(Flags::WINNER) {
                (Flags::FORCED, Flags::OFFENDER)
            } else {
                (Flags::REACHED, Flags::WINNER)
            };
            next[by_role_index(role)] = undecided_predecessors(phase, list, |them, p, u, _| {
                u.has(need) && !u.has(role) && revive(phase, them, p, role)
            });
        }
        gained = next;
    }
}

/// The undecided predecessors of the undecided positions `list` holds (as entries) for which
/// `f` (given the predecessor's side, slot and state, and a position to load slots into)
/// says yes, as entries. Positions are visited in parallel, a chunk of the list at a time.
fn undecided_predecessors(
    phase: &Phase,
    list: &[u64],
    f: impl Fn(Color, u64, Undecided, &mut SlotPosition) -> bool + Sync,
) -> Vec<u64> {
    let size = phase.solver.len();
    let found: Vec<Vec<u64>> = list
        .par_chunks(1024)
        .map_init(
            || (phase.solver.position(), phase.solver.position()),
            |(pos, scratch), chunk| {
                let mut out = Vec::new();
                for &e in chunk {
                    let (side, slot) = pos_of(size, e);
                    if phase.undecided(side, slot).is_none() || !pos.load(slot, side) {
                        continue;
                    }
                    let them = side.opponent();
                    let preds = phase.states(them);
                    for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                        if let Some(u) = Undecided::of(preds[p].load(Relaxed))
                            && f(them, p as u64, u, scratch)
                        {
                            out.push(entry_of(size, (them, p as u64)));
                        }
                    }
                }
                out
            },
        )
        .collect();
    // Joined into a list of the exact size (see [`merge`]).
    let mut all = Vec::with_capacity(found.iter().map(Vec::len).sum());
    all.extend(found.into_iter().flatten());
    all
}

/// The first wave: checks every position given a role back ([`Flags::REVIVED`], which it
/// takes): a winner position keeps its role only with a move into an offender position, an
/// offender position only when all its moves into undecided positions lead to winner
/// positions. Returns those that lost a role.
fn check_revived(phase: &Phase) -> ByRole {
    let size = phase.solver.len();
    each_flagged(
        phase,
        &phase.revived,
        true,
        Flags::REVIVED,
        |side, slot, u, pos, out| {
            phase.clear_flag(side, slot, Flags::REVIVED);
            let winner = u.has(Flags::WINNER);
            let offender = u.has(Flags::OFFENDER);
            if !(winner || offender) || !pos.load(slot, side) {
                return;
            }
            if winner && !reaches_offender(phase, pos) && lose(phase, side, slot, Flags::WINNER) {
                out[by_role_index(Flags::WINNER)].push(entry_of(size, (side, slot)));
            }
            if offender
                && !moves_into_winners(phase, pos)
                && lose(phase, side, slot, Flags::OFFENDER)
            {
                out[by_role_index(Flags::OFFENDER)].push(entry_of(size, (side, slot)));
            }
        },
    )
}

/// One wave of taking roles away: an offender position with a move into a position that lost
/// the winner role loses its own; a winner position whose moves into offender positions led
/// only to positions that lost that role loses its own. Returns those that lost a role.
fn take_roles(phase: &Phase, lost: ByRole) -> ByRole {
    let mut next: ByRole = Default::default();
    for (i, list) in lost.into_iter().enumerate() {
        let lost_winner = i == by_role_index(Flags::WINNER);
        let role = if lost_winner {
            Flags::OFFENDER
        } else {
            Flags::WINNER
        };
        next[by_role_index(role)] = undecided_predecessors(phase, &list, |them, p, u, scratch| {
            if lost_winner {
                u.has(Flags::OFFENDER) && lose(phase, them, p, Flags::OFFENDER)
            } else {
                u.has(Flags::WINNER)
                    && scratch.load(p, them)
                    && !reaches_offender(phase, scratch)
                    && lose(phase, them, p, Flags::WINNER)
            }
        });
    }
    next
}

/// Takes `role` from `(side, slot)`; returns whether it held it (so that only one pass
/// propagates the loss).
fn lose(phase: &Phase, side: Color, slot: u64, role: Flag) -> bool {
    phase.clear_flag(side, slot, role)
}

/// The lists of several parallel pieces, joined (into lists of the exact size: these lists
/// can hold millions of positions, and growing them by doubling would raise the peak memory).
pub(super) fn merge(parts: Vec<ByRole>) -> ByRole {
    let mut out: ByRole = Default::default();
    for (i, o) in out.iter_mut().enumerate() {
        o.reserve_exact(parts.iter().map(|p| p[i].len()).sum());
    }
    for part in parts {
        for (o, p) in out.iter_mut().zip(part) {
            o.extend(p);
        }
    }
    out
}

/// Whether every move of the loaded offender position into an undecided position leads to a
/// winner position.
fn moves_into_winners(phase: &Phase, pos: &mut SlotPosition) -> bool {
    let them = phase.states(pos.board.side_to_move().opponent());
    let mut all = true;
    graph_moves(phase, pos, true, |_, _, q| {
        all &= Undecided::of(them[q as usize].load(Relaxed)).is_some_and(|u| u.has(Flags::WINNER));
    });
    all
}

/// Whether the loaded position has a move in the job into an offender position.
fn reaches_offender(phase: &Phase, pos: &mut SlotPosition) -> bool {
    let them = phase.states(pos.board.side_to_move().opponent());
    // Slots one at a time, up to the first offender position: most winner positions have one.
    let mut moves = MoveList::new();
    pos.board.pseudo_moves(&mut moves);
    moves
        .iter()
        .filter_map(|&m| pos.stays(m))
        .any(|q| Undecided::of(them[q].load(Relaxed)).is_some_and(|u| u.has(Flags::OFFENDER)))
}

/// The entry numbers of positions, for [`keep_safe`]'s lists: `(side, slot)` numbered as the
/// trap search numbers them.
pub(super) fn entry(phase: &Phase, (side, slot): Pos) -> u64 {
    entry_of(phase.solver.len(), (side, slot))
}

#[cfg(test)]
mod tests {
    use super::{ByRole, Gained, GainedCount};

    fn lists(winners: u64, offenders: u64) -> ByRole {
        [(0..winners).collect(), (100..100 + offenders).collect()]
    }

    fn listed(g: Gained) -> Option<ByRole> {
        match g {
            Gained::Listed(l) => Some(l),
            Gained::Unlisted => None,
        }
    }

    #[test]
    fn gained_roles_are_listed_up_to_the_limit_and_not_beyond() {
        // Within the limit: every piece's lists, joined in order.
        let count = GainedCount::new(Some(5));
        let parts = vec![
            count.keep(lists(2, 1)),
            count.keep(lists(0, 0)),
            count.keep(lists(1, 1)),
        ];
        assert_eq!(
            listed(Gained::join(parts, &count)),
            Some([vec![0, 1, 0], vec![100, 100]])
        );
        // One more than the limit: nothing kept from then on, and nothing listed.
        let count = GainedCount::new(Some(5));
        let first = count.keep(lists(3, 0));
        assert_eq!(first, lists(3, 0));
        assert_eq!(count.keep(lists(2, 1)), ByRole::default());
        assert_eq!(count.keep(lists(1, 0)), ByRole::default());
        assert!(listed(Gained::join(vec![first], &count)).is_none());
        // Without a limit (a fresh start whatever changed) none are kept.
        let count = GainedCount::new(None);
        assert_eq!(count.keep(lists(1, 1)), ByRole::default());
        assert!(listed(Gained::join(vec![], &count)).is_none());
    }
}
