//! Step 2 of a round: the trap search, which finds the positions lost by rule now.
//!
//! 1. *Roles and safety* ([`super::roles`]): forced positions may be the offender's, the
//!    positions their offences reach the winner's; the safety fixed point keeps those that may
//!    lie in a trap.
//! 2. *Components* ([`super::components`]): what keeps a role is the trap graph; its connected
//!    components with a position touched since the last round are searched, in batches.
//! 3. *The rule engine* ([`crate::rules::traps`]) finds the traps of each batch, built as an
//!    explicit graph with every move classified ([`super::game`]); the offender positions of the
//!    traps are written as this round's terminals: lost by rule, 0 plies away.

use super::components::search_components;
use super::game::TableGame;
use super::phase::{Phase, pos_of, rule_value};
use super::roles::keep_safe;
use crate::error::SolveError;
use crate::rules::{Game, traps};
use crate::state::{Flags, Undecided};
use std::sync::atomic::Ordering::Relaxed;
use xqtb_core::Rule;

/// Finds this round's traps and writes their offender positions as lost by rule, 0 plies
/// away; the first round looks at every component. Returns how many it wrote.
pub(super) fn trap_round(phase: &Phase, round: u8) -> Result<u64, SolveError> {
    let s = phase.solver;
    let size = s.len();
    let t0 = std::time::Instant::now();
    // A winner role may be stale (every forced position leading there decided since). Such a
    // position stays a node: no offender position leads there, so no trap runs through it and
    // nobody's safety depends on it.
    keep_safe(phase);
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
