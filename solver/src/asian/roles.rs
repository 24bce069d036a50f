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
//! while one of its moves leads to an offender position that keeps its role. The pass starts from
//! the roles given afresh each round and takes them away in waves: a position that loses its role
//! is flagged with the wave's flag, and its predecessors (un-moves) are looked at in the next wave.
//! What keeps a role may still be no trap: the rule engine decides that, with the moves' classes.

use super::phase::Phase;
use crate::position::{LEAVES, SlotPosition, prefetch};
use crate::state::{Flag, Flags, Undecided};
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::{Color, Move, MoveList};

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

/// Gives every forced position the offender role and every reached one the winner role (they
/// are flagged in the blocks [`Phase::roles`] marks), and finds the safety fixed point.
pub(super) fn keep_safe(phase: &Phase) {
    give_roles(phase);
    let s = phase.solver;
    let lose = |side: Color, slot: u64, role: Flag, wave: Flag| {
        if phase.clear_flag(side, slot, role) {
            phase.set_flag(side, slot, wave);
            let i = usize::from(wave == Flags::WAVE_OFFENDER);
            phase.waves[i].mark(s, side, slot);
        }
    };
    // The first wave: every offender position's moves lead to winner positions (a forced
    // position's moves into undecided positions are reached ones), so only winner positions can
    // fail: those without a move into an offender position.
    let _ = phase.par_marked(&phase.roles, false, |side, slots, pos| {
        for slot in slots {
            let Some(u) = phase.undecided(side, slot) else {
                continue;
            };
            if u.has(Flags::WINNER) && pos.load(slot, side) && !reaches_offender(phase, pos) {
                lose(side, slot, Flags::WINNER, Flags::WAVE_WINNER);
            }
        }
        Ok(())
    });
    // Then alternately: offender positions with a move to a position that lost its winner role
    // lose theirs; winner positions whose moves into offender positions led only to positions
    // that lost it lose theirs.
    loop {
        let mut any = false;
        for wave in [Flags::WAVE_WINNER, Flags::WAVE_OFFENDER] {
            any |= wave_predecessors(phase, wave, |them, p, u, scratch| {
                if wave == Flags::WAVE_WINNER && u.has(Flags::OFFENDER) {
                    lose(them, p, Flags::OFFENDER, Flags::WAVE_OFFENDER);
                } else if wave == Flags::WAVE_OFFENDER
                    && u.has(Flags::WINNER)
                    && scratch.load(p, them)
                    && !reaches_offender(phase, scratch)
                {
                    lose(them, p, Flags::WINNER, Flags::WAVE_WINNER);
                }
            });
        }
        if !any {
            return;
        }
    }
}

/// Gives the roles afresh: the offender role to every forced position and the winner role to
/// every reached one; no position keeps a role or a wave flag of the last search.
fn give_roles(phase: &Phase) {
    let _ = phase.par_marked(&phase.roles, false, |side, slots, _| {
        let states = phase.states(side);
        for slot in slots {
            let state = &states[slot as usize];
            let Some(u) = Undecided::of(state.load(Relaxed)) else {
                continue;
            };
            let mut n = u
                .without(Flags::OFFENDER)
                .without(Flags::WINNER)
                .without(Flags::WAVE_WINNER)
                .without(Flags::WAVE_OFFENDER);
            if u.has(Flags::FORCED) {
                n = n.with(Flags::OFFENDER);
            }
            if u.has(Flags::REACHED) {
                n = n.with(Flags::WINNER);
            }
            if n != u {
                state.store(n.code(), Relaxed);
            }
        }
        Ok(())
    });
    for marks in &phase.waves {
        marks.clear();
    }
}

/// One wave of the safety pass: takes `wave` ([`Flags::WAVE_WINNER`] or
/// [`Flags::WAVE_OFFENDER`]) from the positions that carry it and calls `f(side, slot, state,
/// scratch)` for each of their undecided predecessors, with a position to load it into. Returns
/// whether any position carried it.
fn wave_predecessors(
    phase: &Phase,
    wave: Flag,
    f: impl Fn(Color, u64, Undecided, &mut SlotPosition) + Sync,
) -> bool {
    let i = usize::from(wave == Flags::WAVE_OFFENDER);
    let woke = phase.par_marked(&phase.waves[i], true, |side, slots, pos| {
        let them = side.opponent();
        let preds = phase.states(them);
        let mut scratch = phase.solver.position();
        for slot in slots {
            let Some(u) = phase.undecided(side, slot) else {
                continue;
            };
            if !u.has(wave) {
                continue;
            }
            phase.clear_flag(side, slot, wave);
            if !pos.load(slot, side) {
                continue;
            }
            for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                if let Some(u) = Undecided::of(preds[p].load(Relaxed)) {
                    f(them, p as u64, u, &mut scratch);
                }
            }
        }
        Ok(true)
    });
    woke.unwrap_or_default().into_iter().any(|w| w)
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
