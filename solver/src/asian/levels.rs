//! Backward propagation of one round of the rule phase, level by level as in the retrograde
//! solver: at odd level `n` every undecided predecessor of a position lost by rule in `n - 1`
//! (this round) is won by rule in `n`; at even level `n` the undecided predecessors of
//! positions won in `n - 1` that can lose become candidates, and a candidate is lost in `n`
//! when every move leads to a position won for the opponent. Positions whose value through a
//! capture into another table falls due at a level (round 0) are looked at then. A candidate
//! found lost gives its predecessors their wins of the next level at once, while it is set up;
//! the odd levels then set up only the terminals (level 0) and the positions lost when due.
//!
//! Within a level, writes do not depend on their order: wins at one level only compete with
//! wins of the same level (the better rule is kept, whoever writes first), and a candidate's
//! test only reads positions of the other side decided at earlier levels (the next level's
//! wins, written meanwhile, count as undecided).

use super::phase::{Due, IfLost, Phase, Pos, rule_value};
use crate::error::SolveError;
use crate::position::SlotPosition;
use crate::state::{Flags, Undecided, Witness, is_undecided};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU16;
use std::sync::atomic::Ordering::Relaxed;
use xqtb_core::prefetch;

use xqtb_core::{Rule, RuleValue, Value};

/// The codes of both rules' values of `round` at `plies`: perpetual check first (the better
/// one for the winner on a tie, with the lower code).
fn codes(phase: &Phase, round: u8, plies: u16) -> Result<[u16; 2], SolveError> {
    let s = phase.solver;
    Ok([
        rule_value(s, Rule::PerpetualCheck, round, plies)?.encode(),
        rule_value(s, Rule::PerpetualChase, round, plies)?.encode(),
    ])
}

/// Writes the win `code` (one of `pair`, this level's two win codes) into an undecided state,
/// or over the other rule's win of the same level when `code` is the better one. Returns
/// whether the state was undecided.
fn write_win(state: &AtomicU16, code: u16, pair: [u16; 2]) -> bool {
    let mut c = state.load(Relaxed);
    loop {
        let undecided = is_undecided(c);
        if !(undecided || (c == pair[1] && code == pair[0])) {
            return false;
        }
        match state.compare_exchange_weak(c, code, Relaxed, Relaxed) {
            Ok(_) => return undecided,
            Err(now) => c = now,
        }
    }
}

/// Writes the win `code` (of `pair`, level `level`'s two win codes) into every undecided
/// predecessor of the loaded position, which is lost by rule one level lower. Returns how many
/// it decided.
fn win_predecessors(
    phase: &Phase,
    pos: &mut SlotPosition,
    code: u16,
    pair: [u16; 2],
    level: u16,
) -> u64 {
    let them = pos.board.side_to_move().opponent();
    let preds = phase.states(them);
    let mut changed = 0;
    for &p in pos.predecessors(|p| prefetch(&preds[p])) {
        if write_win(&preds[p], code, pair) {
            phase.note_decided(them, p as u64, level);
            changed += 1;
        }
    }
    changed
}

/// Propagates round `round` from its terminals (already written, noted at level 0) and the
/// positions `pending` falls due at each level. Returns how many positions it decided.
pub(super) fn run(
    phase: &Phase,
    round: u8,
    mut pending: BTreeMap<u16, Vec<Pos>>,
) -> Result<u64, SolveError> {
    let mut level = 0u16;
    let mut idle = 0;
    let mut total = 0;
    loop {
        level += 1;
        if level > RuleValue::MAX_RULE_PLIES {
            // Only an error if anything is still to decide.
            codes(phase, round, level)?;
        }
        let due = pending.remove(&level).unwrap_or_default();
        let changed = if level % 2 == 1 {
            win_level(phase, round, level, &due)?
        } else {
            loss_level(phase, round, level, &due, &mut pending)?
        };
        total += changed;
        idle = if changed == 0 { idle + 1 } else { 0 };
        if idle >= 2 && pending.range(level + 1..).next().is_none() {
            return Ok(total);
        }
    }
}

/// Whether the value `v` is this round's and falls due at `level`.
fn is_due(v: Value, round: u8, level: u16) -> bool {
    matches!(v, Value::RuleWin(r) | Value::RuleLoss(r) if r.round == round && r.plies == level)
}

fn win_level(phase: &Phase, round: u8, level: u16, due: &[Pos]) -> Result<u64, SolveError> {
    let s = phase.solver;
    let lost = codes(phase, round, level - 1)?;
    let won = codes(phase, round, level)?;
    let read = Due::new(s, round, level)?;
    let changed: u64 = phase
        .par_marked(
            &phase.decided[(level as usize - 1) % 2],
            true,
            |side, slots, pos| {
                let states = phase.states(side);
                let mut changed = 0;
                for slot in slots {
                    let c = states[slot as usize].load(Relaxed);
                    let Some(rule) = lost.iter().position(|&l| l == c) else {
                        continue;
                    };
                    if pos.load(slot, side) {
                        changed += win_predecessors(phase, pos, won[rule], won, level);
                    }
                }
                Ok(changed)
            },
        )?
        .into_iter()
        .sum();
    let from_due: u64 = due
        .par_iter()
        .map_init(
            || s.position(),
            |pos, &(side, slot)| -> Result<u64, SolveError> {
                if !pos.load(slot, side) {
                    return Ok(0);
                }
                let look = phase.look(pos, Some(&read))?;
                if look.best.is_win()
                    && is_due(look.best, round, level)
                    && write_win(&phase.states(side)[slot as usize], look.best.encode(), won)
                {
                    phase.note_decided(side, slot, level);
                    return Ok(1);
                }
                Ok(0)
            },
        )
        .sum::<Result<u64, _>>()?;
    Ok(changed + from_due)
}

fn loss_level(
    phase: &Phase,
    round: u8,
    level: u16,
    due: &[Pos],
    pending: &mut BTreeMap<u16, Vec<Pos>>,
) -> Result<u64, SolveError> {
    let s = phase.solver;
    let won = codes(phase, round, level - 1)?;
    let read = Due::new(s, round, level)?;
    // Candidates: the undecided predecessors of this round's wins of the last level.
    phase.par_marked(
        &phase.decided[(level as usize - 1) % 2],
        true,
        |side, slots, pos| {
            let them = side.opponent();
            let preds = phase.states(them);
            let states = phase.states(side);
            for slot in slots {
                let c = states[slot as usize].load(Relaxed);
                if !won.contains(&c) || !pos.load(slot, side) {
                    continue;
                }
                for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                    let Some(u) = Undecided::of(preds[p].load(Relaxed)) else {
                        continue;
                    };
                    // A position that holds (its witness no successor has) never loses; one
                    // whose witness is another successor is still kept from losing by it.
                    let candidate = u.witness().may_be(slot);
                    let mut bits = Flags::TOUCHED.bit();
                    if candidate {
                        bits |= Flags::CANDIDATE.bit();
                    }
                    if u.code() & bits != bits {
                        preds[p].fetch_or(bits, Relaxed);
                    }
                    phase.touched.mark(s, them, p as u64);
                    if candidate {
                        phase.candidates.mark(s, them, p as u64);
                    }
                }
            }
            Ok(())
        },
    )?;
    let lost = |v: Value, open: bool| !open && v.is_loss() && is_due(v, round, level);
    let losses = codes(phase, round, level)?;
    // The wins of the next level, written as soon as a position is found lost (the test has it
    // set up, so the next win level need not set it up again). The tests of this level take
    // them for undecided, as they would be until that level.
    let wins = codes(phase, round, level + 1).ok();
    let found = phase.par_marked(&phase.candidates, true, |side, slots, pos| {
        let mut changed = 0u64;
        let mut later = Vec::new();
        let states = phase.states(side);
        for slot in slots {
            let state = &states[slot as usize];
            let was = state.load(Relaxed);
            let Some(u) = Undecided::of(was).filter(|u| u.has(Flags::CANDIDATE)) else {
                continue;
            };
            // Only this test and the next level's wins write the state now: a failed exchange
            // means it was won (never when this test finds it lost: a position with a move into
            // one lost at this level has an open move).
            let settle = |u: Undecided| {
                state
                    .compare_exchange(was, u.code(), Relaxed, Relaxed)
                    .is_ok()
            };
            let u = u.without(Flags::CANDIDATE);
            if !pos.load(slot, side) {
                settle(u);
                continue;
            }
            let look = match phase.look_if_lost(pos, &read, wins)? {
                IfLost::Open(q) => {
                    settle(u.with_witness(Witness::of_slot(q as u64)));
                    continue;
                }
                IfLost::AllWon(look) => look,
            };
            if lost(look.best, look.open) {
                let code = look.best.encode();
                if state.compare_exchange(was, code, Relaxed, Relaxed).is_err() {
                    continue;
                }
                changed += 1;
                let wins = match wins {
                    Some(w) => w,
                    None => codes(phase, round, level + 1)?,
                };
                let rule = usize::from(code == losses[1]);
                changed += win_predecessors(phase, pos, wins[rule], wins, level + 1);
                continue;
            }
            // Every move staying in the job loses: no witness (the moves leaving it may still
            // keep it from losing now, and not later).
            settle(u.with_witness(Witness::NONE));
            if !look.open
                && let Some(p) = look.best.rule_plies()
                && p > level
            {
                // Lost through a capture whose value falls due later (round 0 only).
                later.push((p, (side, slot)));
            }
        }
        Ok((changed, later))
    })?;
    let mut changed = 0;
    for (n, later) in found {
        changed += n;
        for (p, pos) in later {
            pending.entry(p).or_default().push(pos);
        }
    }
    let from_due: u64 = due
        .par_iter()
        .map_init(
            || s.position(),
            |pos, &(side, slot)| -> Result<u64, SolveError> {
                let state = &phase.states(side)[slot as usize];
                if !is_undecided(state.load(Relaxed)) || !pos.load(slot, side) {
                    return Ok(0);
                }
                let look = phase.look(pos, Some(&read))?;
                if lost(look.best, look.open) {
                    state.store(look.best.encode(), Relaxed);
                    phase.note_decided(side, slot, level);
                    return Ok(1);
                }
                Ok(0)
            },
        )
        .sum::<Result<u64, _>>()?;
    Ok(changed + from_due)
}
