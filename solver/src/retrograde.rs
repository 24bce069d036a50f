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

use crate::CHUNK_SLOTS;
use crate::capture::ExitValues;
use crate::error::SolveError;
use crate::level_groups::{Kind, LevelGroups, Loaded, StateStore};
use crate::level_share::Pass;
use crate::level_state::{CANDIDATE, Capture, ILLEGAL, LOSES_BY_NOW};
use crate::position::{Job, SlotPosition};
use crate::progress::Progress;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::Relaxed};
use xiangqi::{Color, MoveList};
use xqtb_core::prefetch;
use xqtb_core::{MoveReading, Probe, ProbeError, Value};

const MAX_DTM: u16 = Value::MAX_DTM;

/// Level-by-level retrograde analysis to mate of `job`; returns its entries' states, per side
/// to move ([`LevelGroups`]), held as `store` says, for the rule phase or the finished table to
/// take.
pub(crate) fn retrograde<'s>(
    job: &Job,
    deps: &dyn Probe,
    store: StateStore<'s>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<LevelGroups<'s>, SolveError> {
    let signature = job.index.signature();
    let scratch_error = |e: std::io::Error| match e.get_ref().and_then(|e| e.downcast_ref()) {
        Some(ShareFailed(why)) => SolveError::Share(signature, why.clone()),
        None => SolveError::Scratch(signature, e.to_string()),
    };
    let mut solver = Levels::new(job, window(), store);
    if let Some(share) = solver.groups.share() {
        let groups = solver.groups.count();
        if share.worker >= share.workers || groups < share.workers {
            return Err(SolveError::Share(
                signature,
                format!(
                    "worker {} of {} cannot share a job of {groups} groups: each worker needs a \
                     group of its own (give the groups fewer slots)",
                    share.worker, share.workers
                ),
            ));
        }
    }
    let started = std::time::Instant::now();
    let max_pending = solver.init(deps, progress)?;
    let max_pending = solver.exchange_start(max_pending).map_err(scratch_error)?;
    tracing::info!(table = %signature, secs = started.elapsed().as_secs_f64(), groups = solver.groups.count(), "captures and mates folded");
    let started = std::time::Instant::now();
    let mut level: u16 = 1;
    let mut idle = 0;
    loop {
        if solver.groups.codes().must_slide(level) {
            solver.slide(level).map_err(scratch_error)?;
        }
        let changed = if level % 2 == 1 {
            solver.win_level(level)
        } else {
            solver.loss_level(level)
        }
        .map_err(scratch_error)?;
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
    // The last level's wins and marks for groups it had passed wait for them: taken in now.
    solver
        .over_groups(level, |_, _| false, |_, _| 0)
        .and_then(|_| solver.groups.unload())
        .map_err(scratch_error)?;
    let traffic = solver.groups.traffic();
    tracing::info!(table = %signature, levels = level, secs = started.elapsed().as_secs_f64(),
        scratch_read_bytes = traffic.read, scratch_written_bytes = traffic.written,
        scratch_secs = traffic.seconds, aside_bytes = solver.groups.aside_bytes(), "levels done");
    Ok(solver.groups)
}

/// Why exchanging updates with the other workers sharing a job failed (carried in an I/O error
/// by the passes, told apart from the failures of local disk).
#[derive(Debug)]
struct ShareFailed(String);

impl std::fmt::Display for ShareFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShareFailed {}

fn share_failed(e: std::io::Error) -> std::io::Error {
    std::io::Error::other(ShareFailed(e.to_string()))
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
struct Levels<'a, 's> {
    job: &'a Job<'a>,
    groups: LevelGroups<'s>,
    resolved: AtomicU64,
    /// Per chunk (Red's chunks, then Black's) and level parity: an entry was resolved there at
    /// the last level of that parity. Lets a level visit only the chunks with work.
    fresh: [Vec<AtomicBool>; 2],
    /// Per chunk: a candidate was marked there in this loss level.
    marked: Vec<AtomicBool>,
    /// Per chunk: the first level a capture falls due at there (a level to visit it at).
    pending: Vec<AtomicU16>,
    /// Per chunk, with several groups: another group set kinds there that the chunk's bytes
    /// must take when its group is next loaded.
    waiting: Vec<AtomicBool>,
    /// The last win level: the level of the wins waiting in [`Levels::waiting`] chunks.
    last_win: AtomicU16,
}

impl<'a, 's> Levels<'a, 's> {
    fn new(job: &'a Job<'a>, window: u16, store: StateStore<'s>) -> Self {
        let flags = || {
            (0..2 * job.chunks)
                .map(|_| AtomicBool::new(false))
                .collect::<Vec<_>>()
        };
        Levels {
            job,
            groups: LevelGroups::new(job, window, store),
            resolved: AtomicU64::new(0),
            fresh: [flags(), flags()],
            marked: flags(),
            pending: (0..2 * job.chunks)
                .map(|_| AtomicU16::new(u16::MAX))
                .collect(),
            waiting: flags(),
            last_win: AtomicU16::new(0),
        }
    }

    /// With the job shared, hands the other workers the kinds and the last capture level the
    /// start gave this worker's entries, and takes theirs in; returns the last capture level of
    /// the whole job.
    fn exchange_start(&self, last_capture: u16) -> std::io::Result<u16> {
        self.groups
            .send_updates(Pass::Start, 0, last_capture)
            .map_err(share_failed)?;
        let (_, others) = self
            .groups
            .receive_updates(Pass::Start, &mut |_, _, _| {})
            .map_err(share_failed)?;
        Ok(last_capture.max(others))
    }

    /// With the job shared, hands the other workers this worker's updates of `pass`, which
    /// resolved `resolved` entries, and takes theirs in: an entry of this worker's that another
    /// won or marked waits for its group's next load (and a won one is fresh, as if won here).
    /// Returns the entries all workers resolved in the pass.
    fn exchange(&self, pass: Pass, resolved: u64) -> std::io::Result<u64> {
        if self.groups.share().is_none() {
            return Ok(resolved);
        }
        self.groups
            .send_updates(pass, resolved, 0)
            .map_err(share_failed)?;
        let (others, _) = self
            .groups
            .receive_updates(pass, &mut |side, slot, kind| {
                let c = self.job.chunk_of(side, slot);
                match (pass, kind) {
                    (Pass::Win(n), Kind::WonOrIllegal) => {
                        self.waiting[c].store(true, Relaxed);
                        self.note_resolved(side, slot, n);
                    }
                    (Pass::Mark(_), Kind::Marked) => self.waiting[c].store(true, Relaxed),
                    _ => {}
                }
            })
            .map_err(share_failed)?;
        self.resolved.fetch_add(others, Relaxed);
        Ok(resolved + others)
    }

    /// Records that (`side`, `slot`) was resolved at `level`.
    #[inline]
    fn note_resolved(&self, side: Color, slot: usize, level: u16) {
        self.fresh[level as usize % 2][self.job.chunk_of(side, slot)].store(true, Relaxed);
    }

    /// The chunks of both sides of the job slots `slots` (Red's, then Black's), as indices of
    /// the job's; `slots` starts at a chunk's start.
    fn chunks_in(&self, slots: std::ops::Range<usize>) -> Vec<u64> {
        let red = slots.start as u64 / CHUNK_SLOTS..(slots.end as u64).div_ceil(CHUNK_SLOTS);
        red.clone()
            .chain(red.map(|c| c + self.job.chunks))
            .collect()
    }

    /// Runs `work` on each group in turn that `needs` (given a chunk of it) selects or that has
    /// chunks waiting, loaded and with its waiting kinds taken in as at level `n`; returns the
    /// sum of what `work` returns. With one group, `work` runs on it whatever `needs` says: the
    /// passes select its chunks themselves.
    fn over_groups(
        &mut self,
        n: u16,
        needs: impl Fn(&Self, usize) -> bool,
        work: impl Fn(&Self, &Loaded) -> u64,
    ) -> std::io::Result<u64> {
        let mut sum = 0;
        for g in self.groups.pass_order() {
            let wanted = self.groups.count() == 1
                || self
                    .chunks_in(self.groups.slots(g))
                    .iter()
                    .any(|&c| self.waiting[c as usize].load(Relaxed) || needs(self, c as usize));
            if !wanted {
                continue;
            }
            self.groups.load(g)?;
            let this = &*self;
            let cur = this.groups.current();
            this.take_waiting(&cur, n);
            sum += work(this, &cur);
        }
        Ok(sum)
    }

    /// Takes into the bytes of the group in memory, at level `n`, the kinds other groups set in
    /// its waiting chunks: wins of the last win level, and candidates of this loss level.
    fn take_waiting(&self, cur: &Loaded, n: u16) {
        if self.groups.count() == 1 {
            return;
        }
        let codes = cur.states;
        self.chunks_in(cur.start..cur.end)
            .into_par_iter()
            .filter(|&c| self.waiting[c as usize].swap(false, Relaxed))
            .for_each(|c| {
                let (side, slots) = self.job.chunk(c);
                for slot in slots.map(|s| s as usize) {
                    let a = cur.at(side, slot);
                    match cur.kind(side, slot) {
                        Kind::WonOrIllegal if codes.is_unresolved(a.load(Relaxed)) => {
                            cur.set(side, slot, codes.resolved(self.last_win.load(Relaxed)));
                        }
                        Kind::Marked => {
                            cur.note(side, slot, Kind::Unresolved);
                            if codes.may_lose_at(a.load(Relaxed), n) {
                                cur.set(side, slot, CANDIDATE);
                                self.marked[c as usize].store(true, Relaxed);
                            }
                        }
                        _ => {}
                    }
                }
            });
    }

    /// Moves every group's window up before level `n` ([`LevelStates::slide`]).
    fn slide(&mut self, n: u16) -> std::io::Result<()> {
        for g in self.groups.pass_order() {
            self.groups.load(g)?;
            self.take_waiting(&self.groups.current(), n);
            let chunks = self.chunks_in(self.groups.slots(g));
            let local: Vec<AtomicU16> = chunks.iter().map(|_| AtomicU16::new(0)).collect();
            self.groups.slide_current(n, &local)?;
            for (c, level) in chunks.iter().zip(local) {
                self.pending[*c as usize].store(level.into_inner(), Relaxed);
            }
        }
        Ok(())
    }

    /// Runs `f(side, slot, code, position)` in parallel over the slots of the group in memory
    /// whose code `wanted` accepts, in the chunks `visit` selects; `f` returns how many entries
    /// it resolved. Each visited chunk's pending capture level is recomputed past `level`.
    fn scan(
        &self,
        cur: &Loaded,
        g_chunks: Vec<u64>,
        level: u16,
        visit: impl Fn(usize) -> bool + Sync,
        wanted: impl Fn(u8) -> bool + Sync,
        f: impl Fn(Color, u64, u8, &mut SlotPosition) -> u64 + Sync,
    ) -> u64 {
        g_chunks
            .into_par_iter()
            .filter(|&c| visit(c as usize))
            .map(|c| {
                let (side, slots) = self.job.chunk(c);
                let mut pos = self.job.position();
                let states = cur.run(side, slots.start as usize, slots.end as usize);
                let mut changed = 0;
                let mut next_pending = u16::MAX;
                for (slot, a) in slots.zip(states) {
                    let code = a.load(Relaxed);
                    if let Some(d) = cur.states.capture_level(code)
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

    /// Marks illegal slots and mates, and folds every capture and exit into the slot's state,
    /// a group at a time. Returns the largest distance one defers to (levels must run at least
    /// that far).
    fn init(
        &mut self,
        deps: &dyn Probe,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<u16, SolveError> {
        let sig = self.job.index.signature();
        let scratch_error = |e: std::io::Error| SolveError::Scratch(sig, e.to_string());
        let done = AtomicU64::new(0);
        let exits = ExitValues::new(self.job.index, self.job.rules, deps);
        let mut max_pending = 0;
        for g in self.groups.own_groups() {
            self.groups.create(g).map_err(scratch_error)?;
            let chunks = self.chunks_in(self.groups.slots(g));
            let red = &chunks[..chunks.len() / 2];
            let cur = self.groups.current();
            let m = self.init_group(&cur, red, &exits, &done, progress)?;
            max_pending = max_pending.max(m);
        }
        self.groups.unload().map_err(scratch_error)?;
        Ok(max_pending)
    }

    /// [`Levels::init`] on the group in memory, whose Red chunks are `red`.
    fn init_group(
        &self,
        cur: &Loaded,
        red: &[u64],
        exits: &ExitValues,
        done: &AtomicU64,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<u16, SolveError> {
        let sig = self.job.index.signature();
        let size = self.job.len();
        // Both sides to move of a slot share one placement, so each is set up once.
        red.par_iter()
            .map(|&c| -> Result<u16, SolveError> {
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
                    let slot = slot as usize;
                    if !any_legal {
                        let mate = cur.states.resolved(0);
                        cur.at(side, slot).store(mate, Relaxed);
                        cur.note(side, slot, Kind::Lost);
                        self.note_resolved(side, slot, 0);
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
                    cur.states.set_unresolved(side, slot - cur.start, capture);
                    cur.note(side, slot, Kind::Unresolved);
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
            .try_reduce(|| 0, |a, b| Ok(a.max(b)))
    }

    /// Odd level: predecessors of positions lost in `n - 1`, and captures winning in `n`, are won
    /// in `n`.
    fn win_level(&mut self, n: u16) -> std::io::Result<u64> {
        let parity = (n as usize - 1) % 2;
        self.last_win.store(n, Relaxed);
        let changed = self.over_groups(
            n,
            |s, c| s.fresh[parity][c].load(Relaxed) || s.pending[c].load(Relaxed) == n,
            |s, cur| s.win_group(cur, n),
        )?;
        self.resolved.fetch_add(changed, Relaxed);
        self.exchange(Pass::Win(n), changed)
    }

    /// [`Levels::win_level`] on the group in memory.
    fn win_group(&self, cur: &Loaded, n: u16) -> u64 {
        let codes = cur.states;
        let lost = codes.resolved(n - 1);
        let won = codes.resolved(n);
        let cap_win = codes.wins(n);
        let fresh = &self.fresh[(n as usize - 1) % 2];
        let chunks = self.chunks_in(cur.start..cur.end);
        self.scan(
            cur,
            chunks,
            n,
            |b| fresh[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| c == lost || c == cap_win,
            |side, slot, code, pos| {
                if code == cap_win {
                    // Lost races with a predecessor write are harmless: both write `won`.
                    cur.set(side, slot as usize, won);
                    cur.note(side, slot as usize, Kind::WonOrIllegal);
                    self.note_resolved(side, slot as usize, n);
                    return 1;
                }
                let them = side.opponent();
                let mut changed = 0;
                let touch = |p| {
                    if cur.holds(p) {
                        prefetch(cur.at(them, p))
                    }
                };
                for &p in pos.predecessors(touch) {
                    let resolves = if cur.holds(p) {
                        let a = cur.at(them, p);
                        let now =
                            codes.is_unresolved(a.load(Relaxed)) && a.swap(won, Relaxed) != won;
                        if now {
                            cur.changed(them, p);
                            cur.note(them, p, Kind::WonOrIllegal);
                        }
                        now
                    } else if cur.claim_elsewhere(them, p, Kind::WonOrIllegal) {
                        self.waiting[self.job.chunk_of(them, p)].store(true, Relaxed);
                        true
                    } else {
                        false
                    };
                    if resolves {
                        self.note_resolved(them, p, n);
                        changed += 1;
                    }
                }
                changed
            },
        )
    }

    /// Even level: mark candidates (unresolved predecessors of positions won in `n - 1` whose
    /// captures all lose by `n`), then resolve each candidate, and each position whose captures
    /// fall due at `n`, as lost in `n` if every move leads to an opponent win. With several
    /// groups these are two passes over them: a candidate may be marked from any group.
    fn loss_level(&mut self, n: u16) -> std::io::Result<u64> {
        let parity = (n as usize - 1) % 2;
        if self.groups.count() == 1 {
            return self.over_groups(
                n,
                |_, _| true,
                |s, cur| {
                    s.mark_candidates(cur, n);
                    s.resolve_candidates(cur, n)
                },
            );
        }
        self.over_groups(
            n,
            |s, c| s.fresh[parity][c].load(Relaxed),
            |s, cur| {
                s.mark_candidates(cur, n);
                0
            },
        )?;
        self.exchange(Pass::Mark(n), 0)?;
        let changed = self.over_groups(
            n,
            |s, c| s.marked[c].load(Relaxed) || s.pending[c].load(Relaxed) == n,
            |s, cur| s.resolve_candidates(cur, n),
        )?;
        self.exchange(Pass::Resolve(n), changed)
    }

    /// The first half of [`Levels::loss_level`] on the group in memory: marks the candidates.
    fn mark_candidates(&self, cur: &Loaded, n: u16) {
        let codes = cur.states;
        let won = codes.resolved(n - 1);
        let fresh = &self.fresh[(n as usize - 1) % 2];
        self.scan(
            cur,
            self.chunks_in(cur.start..cur.end),
            n - 1,
            |b| fresh[b].swap(false, Relaxed),
            |c| c == won,
            |side, _slot, _code, pos| {
                let them = side.opponent();
                let touch = |p| {
                    if cur.holds(p) {
                        prefetch(cur.at(them, p))
                    }
                };
                for &p in pos.predecessors(touch) {
                    if !cur.holds(p) {
                        if cur.claim_elsewhere(them, p, Kind::Marked) {
                            self.waiting[self.job.chunk_of(them, p)].store(true, Relaxed);
                        }
                        continue;
                    }
                    // A position whose capture wins or draws is never lost; one whose capture
                    // loses later than `n` is tested when it falls due.
                    if codes.may_lose_at(cur.at(them, p).load(Relaxed), n) {
                        cur.set(them, p, CANDIDATE);
                        self.marked[self.job.chunk_of(them, p)].store(true, Relaxed);
                    }
                }
                0
            },
        );
    }

    /// The second half of [`Levels::loss_level`] on the group in memory: resolves the
    /// candidates and the positions falling due.
    fn resolve_candidates(&self, cur: &Loaded, n: u16) -> u64 {
        let codes = cur.states;
        let due = codes.loses(n);
        let lost = codes.resolved(n);
        let changed = self.scan(
            cur,
            self.chunks_in(cur.start..cur.end),
            n,
            |b| self.marked[b].swap(false, Relaxed) | (self.pending[b].load(Relaxed) == n),
            |c| c == CANDIDATE || c == due,
            |side, slot, _code, pos| {
                let slot = slot as usize;
                if self.all_moves_lose(cur, side, pos) {
                    cur.set(side, slot, lost);
                    cur.note(side, slot, Kind::Lost);
                    self.note_resolved(side, slot, n);
                    1
                } else {
                    cur.set(side, slot, LOSES_BY_NOW);
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
    fn all_moves_lose(&self, cur: &Loaded, side: Color, pos: &mut SlotPosition) -> bool {
        let them = side.opponent();
        // Slots are computed one by one: most candidates fail at one of their first moves.
        let mut list = MoveList::new();
        pos.board.pseudo_moves(&mut list);
        list.iter().filter_map(|&m| pos.stays(m)).all(|q| {
            if cur.holds(q) {
                let c = cur.at(them, q).load(Relaxed);
                c == ILLEGAL || cur.states.is_won(c)
            } else {
                cur.kind(them, q) == Kind::WonOrIllegal
            }
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
