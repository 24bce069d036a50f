//! Step 2 of a round: the trap search, which finds the positions lost by rule now.
//!
//! 1. *Roles and safety* ([`super::roles`]): forced positions may be the offender's, the
//!    positions their offences reach the winner's; the safety fixed point, kept from round to
//!    round, keeps those that may lie in a trap.
//! 2. *Components* ([`super::components`]): what keeps a role is the trap graph; its connected
//!    components with a position touched since the last round are searched, in batches.
//! 3. *The rule engine* ([`crate::rules::traps`]) finds the traps of each batch, built as an
//!    explicit graph with every move classified ([`super::game`]); the offender positions of the
//!    traps are written as this round's terminals: lost by rule, 0 plies away.

use super::components::search_components;
use super::game::TableGame;
use super::phase::{Phase, pos_of, rule_value};
use super::roles::{Gained, Start, keep_safe};
use crate::error::SolveError;
use crate::rules::{Game, traps};
use crate::state::{Flags, Undecided};
use std::sync::atomic::Ordering::Relaxed;
use xqtb_core::Rule;

/// How many positions may gain a role as `round`'s forced positions are marked for its safety
/// pass to start from the last round's fixed point, in a job of `size` slots a side (`None`:
/// it starts afresh whatever changed). [`super::forced::mark`] lists them up to this.
pub(super) fn gained_limit(round: u8, size: u64) -> Option<u64> {
    match (round, forced_start()) {
        (1, _) | (_, Some(Start::Afresh)) => None,
        (_, Some(Start::FromLastRound)) => Some(u64::MAX),
        _ => Some(Start::most_gained_from_last_round(size)),
    }
}

/// Finds this round's traps and writes their offender positions as lost by rule, 0 plies
/// away; the first round looks at every component. `gained` holds the positions that gained a
/// role when this round's forced positions were marked ([`super::forced::mark`]), when few
/// enough to start from the last round's fixed point. Returns how many terminals it wrote.
pub(super) fn trap_round(phase: &Phase, round: u8, gained: Gained) -> Result<u64, SolveError> {
    let s = phase.solver;
    let size = s.len();
    let t0 = std::time::Instant::now();
    // A winner role may be stale (every forced position leading there decided since). Such a
    // position stays a node: no offender position leads there, so no trap runs through it and
    // nobody's safety depends on it.
    let start = match gained {
        Gained::Listed(_) => Start::FromLastRound,
        Gained::Unlisted => Start::Afresh,
    };
    keep_safe(phase, gained);
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
    let (nodes, searched, batches) = search_components(phase, round == 1, &mut search)?;
    clear_touched(phase);
    tracing::debug!(
        round,
        ?start,
        nodes,
        searched,
        batches,
        terminals,
        safety_secs = t1,
        engine_secs = engine,
        secs = t0.elapsed().as_secs_f64(),
        "trap search"
    );
    Ok(terminals)
}

/// Takes [`Flags::TOUCHED`] from every position, and its marks: the next round's touched
/// positions are those whose successors are decided from now on.
fn clear_touched(phase: &Phase) {
    let _ = phase.par_marked(&phase.touched, true, |side, slots, _| {
        let states = phase.states(side);
        for slot in slots {
            let a = &states[slot as usize];
            if let Some(u) = Undecided::of(a.load(Relaxed))
                && u.has(Flags::TOUCHED)
            {
                a.store(u.without(Flags::TOUCHED).code(), Relaxed);
            }
        }
        Ok(())
    });
}

/// Tests only: how the rounds after the first start their safety pass (0 as
/// [`gained_limit`] chooses, 1 always afresh, 2 always from the last round).
#[cfg(test)]
static FORCE_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

#[cfg(test)]
fn forced_start() -> Option<Start> {
    match FORCE_START.load(Relaxed) {
        1 => Some(Start::Afresh),
        2 => Some(Start::FromLastRound),
        _ => None,
    }
}

#[cfg(not(test))]
fn forced_start() -> Option<Start> {
    None
}

#[cfg(test)]
mod tests {
    use super::FORCE_START;
    use std::sync::atomic::Ordering::Relaxed;
    use xqtb_core::{RuleSet, TableId, Value};

    /// The safety pass started from the last round's fixed point finds the same traps as the
    /// pass afresh. KCAvKN has several rounds with a trap graph after the first, so the start
    /// from the last round is exercised; the four-piece tables of the reference tests have none.
    #[test]
    fn safety_passes_from_the_last_round_and_afresh_give_the_same_table() {
        let sig: xqtb_core::Signature = "KCAvKN".parse().unwrap();
        let solve = |mode: u8| {
            FORCE_START.store(mode, Relaxed);
            let tables = crate::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
            FORCE_START.store(0, Relaxed);
            let t = tables.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
            xiangqi::Color::ALL.map(|side| t.codes(side).to_vec())
        };
        let afresh = solve(1);
        let from_last = solve(2);
        let rounds: std::collections::BTreeSet<u8> = afresh
            .iter()
            .flatten()
            .filter_map(|&c| match Value::decode(c) {
                Value::RuleLoss(r) | Value::RuleWin(r) => Some(r.round),
                _ => None,
            })
            .collect();
        assert!(rounds.len() >= 3, "rule rounds {rounds:?}");
        assert!(afresh == from_last, "the two safety passes disagree");
    }
}
