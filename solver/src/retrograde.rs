//! The retrograde phase: win/draw/loss and distance to mate for every position of a job by
//! retrograde analysis, level by level, one ply per level, so every distance is optimal for both
//! sides. At odd level `n` every unresolved predecessor of a position lost in `n - 1` is won in
//! `n`; at even level `n` every unresolved predecessor of a position won in `n - 1` is a
//! *candidate*, and a candidate is lost in `n` when all its moves lead to positions already won
//! for the opponent. Captures leave the table: their values come from the finished tables below
//! and are folded, once, into the position's state before the first level (the fastest capture
//! win, or the slowest capture loss, or "a capture draws, so this cannot be lost"); so are a
//! job's exits (pawn advances into slices another job solves).
//!
//! [`Levels`] holds the job's states, a byte per entry ([`crate::level_state`]); the phase ends
//! by turning them into two-byte codes, which the rule phase ([`crate::asian`]) continues on.
//! Levels are barriers and every write within a level is idempotent, so the result is the same
//! bit for bit whatever the thread count.

use crate::capture::ExitValues;
use crate::error::SolveError;
use crate::level_state::{CANDIDATE, Capture, ILLEGAL, LOSES_BY_NOW, LevelStates};
use crate::position::{Job, SlotPosition};
use crate::progress::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use xiangqi::{Color, MoveList};
use xqtb_core::prefetch;
use xqtb_core::{MoveReading, Probe, ProbeError, Value};

const MAX_DTM: u16 = Value::MAX_DTM;

/// Level-by-level retrograde analysis to mate of `job`; returns its entries' states, per side
/// to move ([`LevelStates`]), for the rule phase or the finished table to take.
pub(crate) fn retrograde(
    job: &Job,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<LevelStates, SolveError> {
    let signature = job.index.signature();
    let mut solver = Levels::new(job, window());
    let started = std::time::Instant::now();
    let max_pending = solver.init(deps, progress)?;
    tracing::info!(table = %signature, secs = started.elapsed().as_secs_f64(), "captures and mates folded");
    let started = std::time::Instant::now();
    let mut level: u16 = 1;
    let mut idle = 0;
    loop {
        if solver.states.must_slide(level) {
            solver.states.slide(level, &solver.pending);
        }
        let changed = if level % 2 == 1 {
            solver.win_level(level)
        } else {
            solver.loss_level(level)
        };
        progress(Progress::Level {
            level,
            resolved: solver.resolved.load(Relaxed),
            total: 2 * job.len(),
        });
        idle = if changed == 0 { idle + 1 } else { 0 };
        if idle >= 2 && level > max_pending {
            break;
        }
        if level >= MAX_DTM - 1 {
            return Err(SolveError::DtmOverflow(signature, MAX_DTM));
        }
        level += 1;
    }
    tracing::info!(table = %signature, levels = level, secs = started.elapsed().as_secs_f64(), "levels done");
    Ok(solver.states)
}

/// The window of levels a state byte spans ([`crate::level_state`]).
#[cfg(not(test))]
fn window() -> u16 {
    crate::level_state::MAX_WINDOW
}

/// Tests only: the window, smaller than the largest to make the levels slide it often.
#[cfg(test)]
pub(crate) static WINDOW: AtomicU16 = AtomicU16::new(crate::level_state::MAX_WINDOW);

#[cfg(test)]
fn window() -> u16 {
    WINDOW.load(Relaxed)
}

/// The retrograde phase's work on one job: its states, a byte per entry, and per chunk what
/// the next levels have to visit.
struct Levels<'a> {
    job: &'a Job<'a>,
    states: LevelStates,
    resolved: AtomicU64,
    /// Per chunk (Red's chunks, then Black's) and level parity: an entry was resolved there at
    /// the last level of that parity. Lets a level visit only the chunks with work.
    fresh: [Vec<AtomicBool>; 2],
    /// Per chunk: a candidate was marked there in this loss level.
    marked: Vec<AtomicBool>,
    /// Per chunk: the first level a capture falls due at there (a level to visit it at).
    pending: Vec<AtomicU16>,
}

impl<'a> Levels<'a> {
    fn new(job: &'a Job<'a>, window: u16) -> Self {
        let flags = || {
            (0..2 * job.chunks)
                .map(|_| AtomicBool::new(false))
                .collect::<Vec<_>>()
        };
        Levels {
            job,
            states: LevelStates::new(job.len(), window),
            resolved: AtomicU64::new(0),
            fresh: [flags(), flags()],
            marked: flags(),
            pending: (0..2 * job.chunks)
                .map(|_| AtomicU16::new(u16::MAX))
                .collect(),
        }
    }

    /// Records that (`side`, `slot`) was resolved at `level`.
    #[inline]
    fn note_resolved(&self, side: Color, slot: usize, level: u16) {
        self.fresh[level as usize % 2][self.job.chunk_of(side, slot)].store(true, Relaxed);
    }

    /// Runs `f(side, slot, code, position)` in parallel over the slots whose code `wanted`
    /// accepts, in the chunks `visit` selects; `f` returns how many entries it resolved. Each
    /// visited chunk's pending capture level is recomputed past `level`.
    fn scan(
        &self,
        level: u16,
        visit: impl Fn(usize) -> bool + Sync,
        wanted: impl Fn(u8) -> bool + Sync,
        f: impl Fn(Color, u64, u8, &mut SlotPosition) -> u64 + Sync,
    ) -> u64 {
        (0..2 * self.job.chunks)
            .into_par_iter()
            .filter(|&c| visit(c as usize))
            .map(|c| {
                let (side, slots) = self.job.chunk(c);
                let mut pos = self.job.position();
                let states = self
                    .states
                    .run(side, slots.start as usize, slots.end as usize);
                let mut changed = 0;
                let mut next_pending = u16::MAX;
                for (slot, a) in slots.zip(states) {
                    let code = a.load(Relaxed);
                    if let Some(d) = self.states.capture_level(code)
                        && d > level
                    {
                        next_pending = next_pending.min(d);
                    }
                    if wanted(code) && pos.load(slot, side) {
                        changed += f(side, slot, code, &mut pos);
                    }
                }
                self.pending[c as usize].store(next_pending, Relaxed);
                changed
            })
            .sum()
    }

    /// Marks illegal slots and mates, and folds every capture and exit into the slot's state.
    /// Returns the largest distance one defers to (levels must run at least that far).
    fn init(
        &self,
        deps: &dyn Probe,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<u16, SolveError> {
        let sig = self.job.index.signature();
        let size = self.job.len();
        let done = AtomicU64::new(0);
        let exits = ExitValues::new(self.job.index, self.job.rules, deps);
        // Both sides to move of a slot share one placement, so each is set up once.
        let max_pending = (0..self.job.chunks)
            .into_par_iter()
            .map(|c| -> Result<u16, SolveError> {
                let (_, slots) = self.job.chunk(c);
                let (start, end) = (slots.start, slots.end);
                let mut pos = self.job.position();
                let mut moves = MoveList::new();
                let mut max_pending = 0;
                let mut min_pending = [u16::MAX; 2];
                let mut resolved = 0;
                for (slot, side) in (start..end).flat_map(|s| Color::ALL.map(|c| (s, c))) {
                    let loaded = match side {
                        Color::Red => pos.load(slot, side),
                        Color::Black => pos.loaded_slot() == Some(slot),
                    };
                    if !loaded {
                        continue;
                    }
                    pos.board.set_side_to_move(side);
                    if pos.board.opponent_in_check() {
                        continue;
                    }
                    moves.clear();
                    pos.board.pseudo_moves(&mut moves);
                    let in_check = pos.board.in_check(side);
                    let mut any_legal = false;
                    let (mut best_win, mut draw, mut worst_loss) = (u16::MAX, false, 0u16);
                    for &m in moves.iter() {
                        let leaves = pos.leaves(m);
                        if !leaves && any_legal || !pos.board.is_legal_pseudo(m, in_check) {
                            continue;
                        }
                        any_legal = true;
                        if !leaves {
                            continue;
                        }
                        let v = MoveReading::leaving(exits.after(&mut pos, m)?);
                        match v.for_mover() {
                            Value::Win(d) => best_win = best_win.min(d),
                            Value::Loss(d) => worst_loss = worst_loss.max(d),
                            // Rule-decided positions of another table or slice do not end in
                            // mate: here they count as draws, and the rule phase takes them up.
                            Value::Draw | Value::RuleWin(_) | Value::RuleLoss(_) => draw = true,
                            Value::Illegal => {
                                return Err(SolveError::Probe(
                                    sig,
                                    ProbeError::Illegal(format!(
                                        "the move {m} in {} leads to an illegal position",
                                        pos.board.fen()
                                    )),
                                ));
                            }
                        }
                    }
                    if !any_legal {
                        let mate = self.states.resolved(0);
                        self.states.at(side, slot as usize).store(mate, Relaxed);
                        self.note_resolved(side, slot as usize, 0);
                        resolved += 1;
                        continue;
                    }
                    let dist = if best_win != u16::MAX {
                        best_win
                    } else {
                        worst_loss
                    };
                    let capture = if best_win != u16::MAX {
                        Capture::Wins(best_win)
                    } else if draw {
                        Capture::Holds
                    } else {
                        Capture::Loses(worst_loss)
                    };
                    max_pending = max_pending.max(dist);
                    if dist > 0 && capture != Capture::Holds {
                        let m = &mut min_pending[side.index()];
                        *m = (*m).min(dist);
                    }
                    self.states.set_unresolved(side, slot as usize, capture);
                }
                for side in Color::ALL {
                    let chunk = self.job.chunk_of(side, start as usize);
                    self.pending[chunk].store(min_pending[side.index()], Relaxed);
                }
                self.resolved.fetch_add(resolved, Relaxed);
                let d = done.fetch_add(2 * (end - start), Relaxed) + 2 * (end - start);
                progress(Progress::Init {
                    done: d,
                    total: 2 * size,
                });
                Ok(max_pending)
            })
            .try_reduce(|| 0, |a, b| Ok(a.max(b)))?;
        Ok(max_pending)
    }

    /// Odd level: predecessors of positions lost in `n - 1`, and captures winning in `n`, are won
    /// in `n`.
    fn win_level(&self, n: u16) -> u64 {
        let lost = self.states.resolved(n - 1);
        let won = self.states.resolved(n);
        let cap_win = self.states.wins(n);
        let fresh = &self.fresh[(n as usize - 1) % 2];
        let changed = self.scan(
            n,
            |b| fresh[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| c == lost || c == cap_win,
            |side, slot, code, pos| {
                if code == cap_win {
                    // Lost races with a predecessor write are harmless: both write `won`.
                    self.states.at(side, slot as usize).store(won, Relaxed);
                    self.note_resolved(side, slot as usize, n);
                    return 1;
                }
                let them = side.opponent();
                let mut changed = 0;
                for &p in pos.predecessors(|p| prefetch(self.states.at(them, p))) {
                    let a = self.states.at(them, p);
                    if self.states.is_unresolved(a.load(Relaxed)) && a.swap(won, Relaxed) != won {
                        self.note_resolved(them, p, n);
                        changed += 1;
                    }
                }
                changed
            },
        );
        self.resolved.fetch_add(changed, Relaxed);
        changed
    }

    /// Even level: mark candidates (unresolved predecessors of positions won in `n - 1` whose
    /// captures all lose by `n`), then resolve each candidate, and each position whose captures
    /// fall due at `n`, as lost in `n` if every move leads to an opponent win.
    fn loss_level(&self, n: u16) -> u64 {
        let won = self.states.resolved(n - 1);
        let fresh = &self.fresh[(n as usize - 1) % 2];
        self.scan(
            n - 1,
            |b| fresh[b].swap(false, Relaxed),
            |c| c == won,
            |side, _slot, _code, pos| {
                let them = side.opponent();
                for &p in pos.predecessors(|p| prefetch(self.states.at(them, p))) {
                    let a = self.states.at(them, p);
                    // A position whose capture wins or draws is never lost; one whose capture
                    // loses later than `n` is tested when it falls due.
                    if self.states.may_lose_at(a.load(Relaxed), n) {
                        a.store(CANDIDATE, Relaxed);
                        self.marked[self.job.chunk_of(them, p)].store(true, Relaxed);
                    }
                }
                0
            },
        );
        let due = self.states.loses(n);
        let lost = self.states.resolved(n);
        let changed = self.scan(
            n,
            |b| self.marked[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| c == CANDIDATE || c == due,
            |side, slot, _code, pos| {
                let own = self.states.at(side, slot as usize);
                if self.all_moves_lose(side, pos) {
                    own.store(lost, Relaxed);
                    self.note_resolved(side, slot as usize, n);
                    1
                } else {
                    own.store(LOSES_BY_NOW, Relaxed);
                    0
                }
            },
        );
        self.resolved.fetch_add(changed, Relaxed);
        changed
    }

    /// Whether every legal move of the loaded position that stays in the job leads to a
    /// resolved win for the opponent (the others are folded into its state). Moves into illegal
    /// slots are illegal moves and do not count.
    fn all_moves_lose(&self, side: Color, pos: &mut SlotPosition) -> bool {
        let them = side.opponent();
        // Slots are computed one by one: most candidates fail at one of their first moves.
        let mut list = MoveList::new();
        pos.board.pseudo_moves(&mut list);
        list.iter().filter_map(|&m| pos.stays(m)).all(|q| {
            let c = self.states.at(them, q).load(Relaxed);
            c == ILLEGAL || self.states.is_won(c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::WINDOW;
    use crate::level_state::MAX_WINDOW;
    use std::sync::atomic::Ordering::Relaxed;
    use xqtb_core::{RuleSet, TableId};

    /// The tables do not depend on the window of levels a state byte spans: with a window of 2
    /// the window slides at every level, every capture beyond the next level is far, and every
    /// position resolved two levels ago is spilled. KRvKN has mates of 25 plies and captures
    /// into KRvK and KNvK; under `asian` its rule phase starts from the slid states.
    #[test]
    fn tables_are_the_same_whatever_the_window() {
        let sig: xqtb_core::Signature = "KRvKN".parse().unwrap();
        for rules in [RuleSet::CyclesAreDraws, RuleSet::Asian] {
            let solve = |window: u16| {
                WINDOW.store(window, Relaxed);
                let tables = crate::solve_closure_in_memory(&[sig], rules, |_, _| {}).unwrap();
                WINDOW.store(MAX_WINDOW, Relaxed);
                let t = tables.get(&TableId::new(rules, sig)).unwrap().clone();
                xiangqi::Color::ALL.map(|side| t.codes(side).to_vec())
            };
            let wide = solve(MAX_WINDOW);
            for window in [2, 3, 7] {
                assert!(solve(window) == wide, "{rules:?}: window {window} differs");
            }
        }
    }
}
