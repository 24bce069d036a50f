//! The rule phase of the Asian rule set: after plain retrograde analysis has resolved every
//! position that ends in mate, decide which of the rest the repetition rules win.
//!
//! A position is lost by rule when its side to move, to avoid losing otherwise, must offend for
//! ever (check on every move, or chase one and the same piece on every move) while the other
//! side can keep it there without offending as much (`docs/repetition-rules.md` defines the
//! game; [`crate::rules`] solves it on explicit graphs).
//!
//! # Rounds
//! The phase works in rounds, each on top of everything decided before it.
//! - **Round 0** takes up the moves that leave the job into rule-decided positions: captures
//!   into rule-decided positions of smaller tables, and pawn advances into rule-decided
//!   positions of pawn slices solved before, both settled facts here. Backward propagation
//!   ([`levels`]) gives the positions around them their values.
//! - **Round k ≥ 1** has three steps:
//!   1. *Forced positions* ([`forced`]): an undecided position whose side to move can only
//!      offend or lose (every move leads to a position already won for the other side, or is an
//!      offence into an undecided position: every one of them a check, or every one a chase of
//!      one same piece). Such a position is flagged `FORCED`, the positions its offences lead
//!      into `REACHED` ([`crate::state::Flags`]).
//!   2. *Traps* ([`search`]): the forced positions and the positions they reach form the trap
//!      graph. A trap is a part of it where the offender can only offend (or step into a loss)
//!      and the winner can keep it there without offending as much. A cheap necessary condition
//!      ([`roles`], the safety fixed point) and the graph's connected components
//!      ([`components`]) cut the graph into small pieces, which the rule engine solves as
//!      explicit graphs ([`game`]). The offender positions of the traps are lost by rule, 0
//!      plies away: the round's *terminals*.
//!   3. *Levels* ([`levels`]): backward propagation from the terminals, one ply per level, as
//!      in retrograde analysis to mate: at odd level n a position with a move into one lost at
//!      level n - 1 is won; at even level n a position whose every move leads into a position
//!      won for the other side is lost. Each value is consistent with its successors one ply
//!      deep, and its distance counts the plies to the round's terminal.
//!
//! Rounds stop when one finds no trap; what is left is a draw.
//!
//! # Bookkeeping
//! The phase keeps what it knows of a position in the position's two-byte state
//! ([`crate::state`]: a value, or an undecided state with a witness and flags). Of a move's
//! successor a pass reads its kind, never its value ([`phase::Due`]): undecided, decided at
//! the level before and by which rule, or else won or lost. Block marks
//! ([`marks`]) tell which blocks of slots hold the entries a pass has to visit, so that the many
//! passes over few entries (late levels, late rounds) do not read the whole table. Explicit
//! graphs exist only for one batch of trap-graph components at a time.
//!
//! Every step is a fixed point, or a level whose writes do not depend on their order, so the
//! result is the same bit for bit for any thread count.

mod components;
mod forced;
mod game;
mod levels;
mod marks;
mod phase;
mod roles;
mod search;
mod states;

use crate::capture::ExitValues;
use crate::error::SolveError;
use crate::position::Job;
use crate::progress::Progress;
use crate::state::Undecided;
use marks::Marks;
use phase::{Phase, Pos};
use rayon::prelude::*;
use states::Solver;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::Color;
use xqtb_core::{Probe, Value};

/// Round 0's start: the positions with a capture into another table's rule-decided position,
/// or an exit into one of another slice. Keeps [`crate::state::Witness::HOLDS`] exactly where a
/// capture or exit draws or wins by rule (the retrograde phase took a rule value there for a
/// draw) and returns the positions whose value through such moves falls due at a level, by
/// level.
fn capture_exits(phase: &Phase) -> Result<BTreeMap<u16, Vec<Pos>>, SolveError> {
    let found = phase.par_chunks(|side, slots, pos| {
        let states = phase.states(side);
        let mut out = Vec::new();
        for slot in slots {
            let holds =
                Undecided::of(states[slot as usize].load(Relaxed)).is_some_and(Undecided::holds);
            if !holds || !pos.load(slot, side) {
                continue;
            }
            // Before any level: every position decided so far was decided by mate.
            let look = phase.look(pos, None)?;
            if look.best_leaving.is_loss() {
                // No flag is set yet: the position starts afresh, with no witness.
                states[slot as usize].store(Undecided::new(false).code(), Relaxed);
            }
            if (look.best.is_win() || (look.best.is_loss() && !look.open))
                && look.best.rule().is_some()
            {
                out.push((look.best.rule_plies().expect("a rule value"), (side, slot)));
            }
        }
        Ok(out)
    })?;
    let mut pending: BTreeMap<u16, Vec<Pos>> = BTreeMap::new();
    for (level, p) in found.into_iter().flatten() {
        pending.entry(level).or_default().push(p);
    }
    Ok(pending)
}

/// What the rule phase has to look at in a job: whether a side may be forced to offend (traps),
/// and whether a move leaving the job may lead into a rule-decided position (exits).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RuleWork {
    traps: bool,
    exits: bool,
}

impl RuleWork {
    /// The rule phase's work in `job`, whose captures and exits `deps` values.
    pub(crate) fn of(job: &Job, deps: &dyn Probe) -> RuleWork {
        RuleWork {
            traps: job.index.signature().material().may_force_offence(),
            exits: dependencies_may_have_rule_values(job, deps),
        }
    }

    /// Whether there is none: no side can be forced to offend and no move leaving the job
    /// leads to a rule-decided position, so nothing in the job depends on the rules and what
    /// plain retrograde analysis leaves unresolved is a draw, as under cycles-are-draws.
    pub(crate) fn is_none(self) -> bool {
        !self.traps && !self.exits
    }
}

/// Whether any table `deps` holds in memory for this table's captures has a rule value (or the
/// dependencies are not in memory, so it cannot be told), or the job has exits (pawn advances
/// into slices outside it: a `Probe` does not hand out parts to look into, so they may).
fn dependencies_may_have_rule_values(job: &Job, deps: &dyn Probe) -> bool {
    let id = xqtb_core::TableId::new(job.rules, job.index.signature());
    let slots = job.slots;
    let inside = |r: xqtb_core::SlotRange| slots.start <= r.start && r.end <= slots.end;
    let slices = job.index.slices();
    let exits = slices
        .iter()
        .filter(|s| inside(s.slots))
        .any(|s| s.advances_into.iter().any(|&to| !inside(slices[to].slots)));
    exits
        || id.dependencies().iter().any(|d| match deps.table(d) {
            None => true,
            Some(t) => Color::ALL.iter().any(|&side| {
                t.codes(side)
                    .par_iter()
                    .any(|c| c != Value::ILLEGAL_CODE && c >= Value::MAX_DTM + 2)
            }),
        })
}

/// Decides, under the Asian rules, the positions plain retrograde analysis left unresolved in
/// `job` (its `codes`, [`crate::retrograde::retrograde`]), where there is `work`
/// ([`RuleWork::of`]); returns the final codes.
pub(crate) fn decide(
    job: Job,
    work: RuleWork,
    codes: [Vec<u16>; 2],
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<[Vec<u16>; 2], SolveError> {
    let solver = Solver::new(job, codes);
    decide_on(&solver, work, deps, progress)?;
    Ok(solver.finish())
}

/// The rule phase on `solver`'s states: round 0 from the moves leaving the job, then rounds of
/// forced positions, traps and levels until one finds no trap.
fn decide_on(
    solver: &Solver,
    RuleWork { traps, exits }: RuleWork,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), SolveError> {
    let started = std::time::Instant::now();
    let index = solver.index;
    let marks = || Marks::new(solver);
    let phase = Phase {
        solver,
        exits: ExitValues::new(index, solver.rules, deps),
        decided: [marks(), marks()],
        candidates: marks(),
        revived: marks(),
        touched: marks(),
        graph: marks(),
        roles: marks(),
    };
    let mut total = 0u64;
    if exits {
        let pending = capture_exits(&phase)?;
        total += levels::run(&phase, 0, pending)?;
        progress(Progress::Rules {
            round: 0,
            decided: total,
        });
    }
    if traps {
        for round in 1u8.. {
            let t0 = std::time::Instant::now();
            let limit = search::gained_limit(round, solver.len());
            let (newly_forced, gained) = forced::mark(&phase, round == 1, limit)?;
            let t1 = t0.elapsed().as_secs_f64();
            let terminals = search::trap_round(&phase, round, gained)?;
            let t2 = t0.elapsed().as_secs_f64();
            if terminals == 0 {
                tracing::debug!(table = %index.signature(), round, newly_forced, "no trap");
                break;
            }
            let decided = levels::run(&phase, round, BTreeMap::new())?;
            total += terminals + decided;
            progress(Progress::Rules {
                round,
                decided: total,
            });
            tracing::debug!(table = %index.signature(), round, newly_forced, terminals, decided = total,
                forced_secs = t1, search_secs = t2 - t1, levels_secs = t0.elapsed().as_secs_f64() - t2, "rule round");
        }
    }
    tracing::info!(table = %index.signature(), decided = total, secs = started.elapsed().as_secs_f64(), "rule phase done");
    Ok(())
}
