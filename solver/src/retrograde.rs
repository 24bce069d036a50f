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
//! [`Solver`] holds the job's states ([`crate::state`]); the rule phase ([`crate::asian`])
//! continues on them where this phase stops. Levels are barriers and every write within a level
//! is idempotent, so the result is the same bit for bit whatever the thread count.

use crate::CHUNK_SLOTS;
use crate::capture::ExitValues;
use crate::error::SolveError;
use crate::position::{SlotPosition, prefetch};
use crate::progress::Progress;
use crate::state::{Capture, ILLEGAL, Unresolved, is_resolved};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use xiangqi::{Color, MoveList, Piece};
use xqtb_core::{MoveReading, Probe, ProbeError, RuleSet, SlotRange, TableIndex, Value};

const MAX_DTM: u16 = Value::MAX_DTM;

/// Level-by-level retrograde analysis to mate.
pub(crate) fn retrograde(
    solver: &Solver,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), SolveError> {
    let index = solver.index;
    let signature = index.signature();
    let started = std::time::Instant::now();
    let max_pending = solver.init(deps, progress)?;
    tracing::info!(table = %signature, secs = started.elapsed().as_secs_f64(), "captures and mates folded");
    let started = std::time::Instant::now();
    let mut level: u16 = 1;
    let mut idle = 0;
    loop {
        let changed = if level % 2 == 1 {
            solver.win_level(level)
        } else {
            solver.loss_level(level)
        };
        progress(Progress::Level {
            level,
            resolved: solver.resolved.load(Relaxed),
            total: 2 * solver.slots.len(),
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
    Ok(())
}

pub(crate) struct Solver<'a> {
    pub(crate) index: &'a TableIndex,
    /// The job's slots: states are indexed by slot minus `slots.start`.
    pub(crate) slots: SlotRange,
    pub(crate) rules: RuleSet,
    pub(crate) pieces: Vec<Piece>,
    /// Per side to move and job slot: the entry's state ([`crate::state`]).
    state: [Vec<AtomicU16>; 2],
    resolved: AtomicU64,
    /// Blocks per side.
    pub(crate) chunks: u64,
    /// Per chunk (Red's chunks, then Black's) and level parity: an entry was resolved there at
    /// the last level of that parity. Lets a level visit only the chunks with work.
    pub(crate) fresh: [Vec<AtomicBool>; 2],
    /// Per chunk: a candidate was marked there in this loss level.
    pub(crate) marked: Vec<AtomicBool>,
    /// Per chunk: the smallest capture distance still pending there (a level to visit it at).
    pending: Vec<AtomicU16>,
}

impl<'a> Solver<'a> {
    pub(crate) fn new(index: &'a TableIndex, rules: RuleSet, slots: SlotRange) -> Self {
        let n = slots.len() as usize;
        let state = [0, 1].map(|_| (0..n).map(|_| AtomicU16::new(ILLEGAL)).collect());
        let chunks = slots.len().div_ceil(CHUNK_SLOTS);
        let flags = || {
            (0..2 * chunks)
                .map(|_| AtomicBool::new(false))
                .collect::<Vec<_>>()
        };
        Solver {
            index,
            slots,
            rules,
            pieces: index.piece_list(),
            state,
            resolved: AtomicU64::new(0),
            chunks,
            fresh: [flags(), flags()],
            marked: flags(),
            pending: (0..2 * chunks).map(|_| AtomicU16::new(u16::MAX)).collect(),
        }
    }

    /// Number of the job's slots (per side to move).
    #[inline]
    pub(crate) fn len(&self) -> u64 {
        self.slots.len()
    }

    /// A position to load the job's slots into.
    pub(crate) fn position(&self) -> SlotPosition<'_> {
        SlotPosition::new(self.index, &self.pieces, self.slots)
    }

    #[inline]
    pub(crate) fn chunk_of(&self, side: Color, slot: usize) -> usize {
        side.index() * self.chunks as usize + slot / CHUNK_SLOTS as usize
    }

    /// Records that (`side`, `slot`) was resolved at `level`.
    #[inline]
    pub(crate) fn note_resolved(&self, side: Color, slot: usize, level: u16) {
        self.fresh[level as usize % 2][self.chunk_of(side, slot)].store(true, Relaxed);
    }

    /// Runs `f(side, slot, code, position)` in parallel over the slots whose code `wanted`
    /// accepts, in the chunks `visit` selects; `f` returns how many entries it resolved. Each
    /// visited chunk's pending capture distance is recomputed past `level`.
    fn scan(
        &self,
        level: u16,
        visit: impl Fn(usize) -> bool + Sync,
        wanted: impl Fn(u16) -> bool + Sync,
        f: impl Fn(Color, u64, u16, &mut SlotPosition) -> u64 + Sync,
    ) -> u64 {
        let size = self.len();
        let chunks = self.chunks;
        (0..2 * chunks as usize)
            .into_par_iter()
            .filter(|&b| visit(b))
            .map(|b| {
                let side = if (b as u64) < chunks {
                    Color::Red
                } else {
                    Color::Black
                };
                let start = (b as u64 % chunks) * CHUNK_SLOTS;
                let end = (start + CHUNK_SLOTS).min(size);
                let mut pos = self.position();
                let states = &self.state[side.index()];
                let mut changed = 0;
                let mut next_pending = u16::MAX;
                for slot in start..end {
                    let code = states[slot as usize].load(Relaxed);
                    if let Some(Capture::Loses(d) | Capture::Wins(d)) =
                        Unresolved::of(code).map(Unresolved::capture)
                        && d > level
                    {
                        next_pending = next_pending.min(d);
                    }
                    if wanted(code) && pos.load(slot, side) {
                        changed += f(side, slot, code, &mut pos);
                    }
                }
                self.pending[b].store(next_pending, Relaxed);
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
        let sig = self.index.signature();
        let size = self.len();
        let chunks = size.div_ceil(CHUNK_SLOTS);
        let done = AtomicU64::new(0);
        let exits = ExitValues::new(self.index, self.rules, deps);
        // Both sides to move of a slot share one placement, so each is set up once.
        let max_pending = (0..chunks)
            .into_par_iter()
            .map(|b| -> Result<u16, SolveError> {
                let start = b * CHUNK_SLOTS;
                let end = (start + CHUNK_SLOTS).min(size);
                let mut pos = self.position();
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
                    let states = &self.state[side.index()];
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
                        states[slot as usize].store(Value::Loss(0).encode(), Relaxed);
                        self.note_resolved(side, slot as usize, 0);
                        resolved += 1;
                        continue;
                    }
                    let dist = if best_win != u16::MAX {
                        best_win
                    } else {
                        worst_loss
                    };
                    if dist > Capture::MAX_DISTANCE {
                        return Err(SolveError::DtmOverflow(sig, Capture::MAX_DISTANCE));
                    }
                    let capture = if best_win != u16::MAX {
                        Capture::Wins(best_win)
                    } else if draw {
                        Capture::Holds
                    } else {
                        Capture::Loses(worst_loss)
                    };
                    max_pending = max_pending.max(dist);
                    if dist > 0 {
                        let m = &mut min_pending[side.index()];
                        *m = (*m).min(dist);
                    }
                    states[slot as usize].store(Unresolved::new(capture).code(), Relaxed);
                }
                for side in Color::ALL {
                    let chunk = self.chunk_of(side, start as usize);
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
        let lost = Value::Loss(n - 1).encode();
        let won = Value::Win(n).encode();
        let cap_win = Unresolved::new(Capture::Wins(n)).code();
        let fresh = &self.fresh[(n as usize - 1) % 2];
        let changed = self.scan(
            n,
            |b| fresh[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| c == lost || c == cap_win,
            |side, slot, code, pos| {
                if code == cap_win {
                    // Lost races with a predecessor write are harmless: both write `won`.
                    self.state[side.index()][slot as usize].store(won, Relaxed);
                    self.note_resolved(side, slot as usize, n);
                    return 1;
                }
                let them = side.opponent();
                let preds = &self.state[them.index()];
                let mut changed = 0;
                for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                    let c = preds[p].load(Relaxed);
                    if Unresolved::of(c).is_some() && preds[p].swap(won, Relaxed) != won {
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

    /// Even level: mark candidates (unresolved predecessors of positions won in `n - 1` that
    /// could lose), then resolve each candidate lost in `n` if every move leads to an opponent
    /// win.
    fn loss_level(&self, n: u16) -> u64 {
        let won = Value::Win(n - 1).encode();
        let fresh = &self.fresh[(n as usize - 1) % 2];
        self.scan(
            n - 1,
            |b| fresh[b].swap(false, Relaxed),
            |c| c == won,
            |side, _slot, _code, pos| {
                let them = side.opponent();
                let preds = &self.state[them.index()];
                for &p in pos.predecessors(|p| prefetch(&preds[p])) {
                    let Some(u) = Unresolved::of(preds[p].load(Relaxed)) else {
                        continue;
                    };
                    // A position whose capture wins or draws is never lost.
                    if matches!(u.capture(), Capture::Loses(_)) && !u.is_candidate() {
                        preds[p].store(u.as_candidate().code(), Relaxed);
                        self.marked[self.chunk_of(them, p)].store(true, Relaxed);
                    }
                }
                0
            },
        );
        let due = Unresolved::new(Capture::Loses(n));
        let lost = Value::Loss(n).encode();
        let changed = self.scan(
            n,
            |b| self.marked[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| Unresolved::of(c).is_some_and(|u| u.is_candidate() || u == due),
            |side, slot, code, pos| {
                let u = Unresolved::of(code).expect("unresolved").not_candidate();
                let own = &self.state[side.index()][slot as usize];
                let Capture::Loses(d) = u.capture() else {
                    unreachable!("only positions whose captures lose are candidates")
                };
                if d <= n && self.all_moves_lose(side, pos) {
                    own.store(lost, Relaxed);
                    self.note_resolved(side, slot as usize, n);
                    1
                } else {
                    own.store(u.code(), Relaxed);
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
        let succ = &self.state[side.opponent().index()];
        // Slots are computed one by one: most candidates fail at one of their first moves.
        let mut list = MoveList::new();
        pos.board.pseudo_moves(&mut list);
        list.iter().filter_map(|&m| pos.stays(m)).all(|q| {
            let c = succ[q].load(Relaxed);
            c == ILLEGAL || (is_resolved(c) && matches!(Value::decode(c), Value::Win(_)))
        })
    }

    /// The states of the entries with `side` to move.
    #[inline]
    pub(crate) fn states(&self, side: Color) -> &[AtomicU16] {
        &self.state[side.index()]
    }

    /// Turns the states into final values: everything still open is a draw.
    pub(crate) fn finish(self) -> [Vec<u16>; 2] {
        let rules = self.rules;
        self.state.map(|v| {
            v.into_iter()
                .map(|a| crate::state::final_code(rules, a.into_inner()))
                .collect()
        })
    }
}
