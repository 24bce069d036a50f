//! The rule phase of the Asian rule set: after plain retrograde analysis has resolved every
//! position that ends in mate, decide which of the rest the repetition rules win.
//!
//! The phase works in rounds over the undecided positions (see `docs/repetition-rules.md`):
//! - round 0 takes up captures into rule-decided positions of other tables, and propagates them
//!   backwards (a position is won with one move into a position lost for the opponent, lost when
//!   every move leads to a position won for the opponent);
//! - every later round finds the positions where one side is *forced to offend*: each of its
//!   moves either loses (leads to a position already won for the other side) or is a check (or
//!   a chase of one piece) into an undecided position. With the positions around them they form
//!   a small game graph, on which the rule engine ([`crate::rules::traps`]) finds the traps: the
//!   forced positions in which the offender cannot escape and the other side can keep it
//!   trapped without offending as much. Those positions are lost by rule, 0 plies away; backward
//!   propagation level by level gives the positions leading to them their values, one ply per
//!   level, so that every value is consistent with its successors' one ply deep.
//!
//! Rounds stop when one finds no trap; what is left is a draw. The sets involved are small next
//! to the table, so they are kept as lists, and each level is evaluated before any of its
//! decisions is written: the result does not depend on the thread count.

use crate::CHUNK_SLOTS;
use crate::capture::Captures;
use crate::position::SlotPosition;
use crate::rules::{Edge, Label, Outcome, SLOTS, Target, traps};
use crate::solve::{Progress, SolveError, Solver, is_unresolved};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::repetition::{Classifier, MoveClass};
use xiangqi::{Color, Move, MoveList, Square};
use xqtb_core::{MAX_PIECES, Probe, ProbeError, Rule, RuleValue, Value};

/// State of a position no phase has decided yet (a draw if it stays so).
pub(crate) const UNDECIDED: u16 = Value::FIRST_FREE_CODE;

type Pos = (Color, u64);

/// What the phase needs to look at positions and their moves.
struct Phase<'a> {
    solver: &'a Solver<'a>,
    deps: &'a dyn Probe,
    captures: Option<Captures<'a>>,
}

/// A position's best value for its side to move over the moves whose value is known, and
/// whether some move leads to an undecided or drawn position.
struct Look {
    best: Value,
    open: bool,
}

impl<'a> Phase<'a> {
    fn code(&self, (side, slot): Pos) -> u16 {
        self.solver.state[side.index()][slot as usize].load(Relaxed)
    }

    /// The value, for the mover, of the capture `m` from the loaded position; `Illegal` when the
    /// capture is not legal.
    fn capture_value(&self, pos: &mut SlotPosition, m: Move) -> Result<Value, SolveError> {
        let side = pos.board.side_to_move();
        let sig = self.solver.index.signature();
        let v = match &self.captures {
            Some(c) => c
                .value_after(
                    pos.squares(),
                    pos.flat_at(m.from()),
                    pos.flat_at(m.to()),
                    m.to().index() as u8,
                    side,
                )
                .ok_or_else(|| {
                    SolveError::Probe(
                        sig,
                        ProbeError::Illegal(format!("the capture {m} has no slot in its table")),
                    )
                })?,
            None => {
                let captured = pos.board.make(m);
                let v = self.deps.probe(self.solver.rules, &pos.board);
                pos.board.unmake(m, captured);
                match v {
                    Ok(v) => v,
                    Err(ProbeError::Illegal(_)) => Value::Illegal,
                    Err(e) => return Err(SolveError::Probe(sig, e)),
                }
            }
        };
        Ok(match v {
            Value::Illegal => Value::Illegal,
            v => v.as_exit().for_mover(),
        })
    }

    /// Looks at every legal move of the loaded position.
    fn look(&self, pos: &mut SlotPosition) -> Result<Look, SolveError> {
        let side = pos.board.side_to_move();
        let them = side.opponent();
        let mut moves = MoveList::new();
        pos.board.pseudo_moves(&mut moves);
        let mut best = Value::Illegal;
        let mut open = false;
        for &m in moves.iter() {
            let v = if pos.board.is_empty(m.to()) {
                let code = self.code((them, pos.slot_after_move(m)));
                match code {
                    Value::ILLEGAL_CODE => continue,
                    UNDECIDED => {
                        open = true;
                        Value::Draw
                    }
                    c => Value::decode(c).for_mover(),
                }
            } else {
                match self.capture_value(pos, m)? {
                    Value::Illegal => continue,
                    v => {
                        open |= !v.is_loss();
                        v
                    }
                }
            };
            if v.preference() > best.preference() {
                best = v;
            }
        }
        Ok(Look { best, open })
    }

    /// Whether the side to move of the loaded position is forced to offend: every legal move
    /// loses or is a check into an undecided position, or every one loses or chases one and
    /// the same piece into an undecided position.
    fn forced(&self, pos: &mut SlotPosition) -> Result<bool, SolveError> {
        let side = pos.board.side_to_move();
        let them = side.opponent();
        let mut moves = MoveList::new();
        pos.board.pseudo_moves(&mut moves);
        let mut checks = true;
        let mut chased = !0u128;
        let mut classifier: Option<Classifier> = None;
        for &m in moves.iter() {
            if !pos.board.is_empty(m.to()) {
                match self.capture_value(pos, m)? {
                    Value::Illegal => continue,
                    v if v.is_loss() => continue,
                    _ => return Ok(false),
                }
            }
            match self.code((them, pos.slot_after_move(m))) {
                Value::ILLEGAL_CODE => continue,
                UNDECIDED => {}
                c if Value::decode(c).for_mover().is_loss() => continue,
                _ => return Ok(false),
            }
            let classes = classifier.get_or_insert_with(|| Classifier::new(&pos.board));
            if classes.is_check(m) {
                chased = 0;
            } else {
                match classes.class(m) {
                    MoveClass::Chase(sq) => {
                        checks = false;
                        chased &= sq.0;
                    }
                    _ => return Ok(false),
                }
            }
            if !checks && chased == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The undecided positions among `positions` (each side's slots) whose side to move is
    /// forced to offend.
    fn forced_positions(&self, positions: &[Pos]) -> Result<Vec<Pos>, SolveError> {
        let s = self.solver;
        let found: Vec<Vec<Pos>> = positions
            .par_chunks(CHUNK_SLOTS as usize)
            .map(|chunk| -> Result<Vec<Pos>, SolveError> {
                let mut pos = SlotPosition::new(s.index, &s.pieces);
                let mut out = Vec::new();
                for &(side, slot) in chunk {
                    if self.code((side, slot)) != UNDECIDED || !pos.load(slot, side) {
                        continue;
                    }
                    if self.forced(&mut pos)? {
                        out.push((side, slot));
                    }
                }
                Ok(out)
            })
            .collect::<Result<_, _>>()?;
        Ok(found.into_iter().flatten().collect())
    }

    /// Every undecided position of the table whose side to move is forced to offend.
    fn all_forced(&self) -> Result<Vec<Pos>, SolveError> {
        let s = self.solver;
        let size = s.index.size();
        let chunks = size.div_ceil(CHUNK_SLOTS);
        let found: Vec<Vec<Pos>> = (0..2 * chunks)
            .into_par_iter()
            .map(|c| -> Result<Vec<Pos>, SolveError> {
                let side = if c < chunks { Color::Red } else { Color::Black };
                let start = (c % chunks) * CHUNK_SLOTS;
                let end = (start + CHUNK_SLOTS).min(size);
                let states = &s.state[side.index()];
                let mut pos = SlotPosition::new(s.index, &s.pieces);
                let mut out = Vec::new();
                for slot in start..end {
                    if states[slot as usize].load(Relaxed) != UNDECIDED || !pos.load(slot, side) {
                        continue;
                    }
                    if self.forced(&mut pos)? {
                        out.push((side, slot));
                    }
                }
                Ok(out)
            })
            .collect::<Result<_, _>>()?;
        Ok(found.into_iter().flatten().collect())
    }

    /// The undecided positions from which a quiet move leads to one of `decided`.
    fn predecessors(&self, decided: &[Pos]) -> Vec<Pos> {
        let s = self.solver;
        let mut out: Vec<Pos> = decided
            .par_chunks(256)
            .flat_map_iter(|chunk| {
                let mut pos = SlotPosition::new(s.index, &s.pieces);
                let mut out = Vec::new();
                for &(side, slot) in chunk {
                    if !pos.load(slot, side) {
                        continue;
                    }
                    let them = side.opponent();
                    for &p in pos.predecessors(|_| {}) {
                        if self.code((them, p as u64)) == UNDECIDED {
                            out.push((them, p as u64));
                        }
                    }
                }
                out
            })
            .collect();
        out.par_sort_unstable();
        out.dedup();
        out
    }
}

/// Whether `side` has a piece that can check or chase.
fn has_attacker(index: &xqtb_core::TableIndex, side: Color) -> bool {
    index
        .piece_list()
        .iter()
        .any(|p| p.color() == side && p.kind().is_attacker())
}

/// Whether any table `deps` holds in memory for this table's captures has a rule value (or the
/// dependencies are not in memory, so it cannot be told).
fn dependencies_may_have_rule_values(solver: &Solver, deps: &dyn Probe) -> bool {
    let id = xqtb_core::TableId::new(solver.rules, solver.index.signature());
    id.dependencies().iter().any(|d| match deps.table(d) {
        None => true,
        Some(t) => Color::ALL.iter().any(|&side| {
            t.codes(side)
                .par_iter()
                .any(|&c| c != Value::ILLEGAL_CODE && c >= Value::MAX_DTM + 2)
        }),
    })
}

fn overflow(solver: &Solver, what: String) -> SolveError {
    SolveError::Unsupported(solver.index.signature(), what)
}

/// The code of the rule value of `rule` in `round`, `plies` away.
fn rule_code(solver: &Solver, rule: Rule, round: u16, plies: u16) -> Result<Value, SolveError> {
    if round > RuleValue::MAX_ROUND as u16 {
        return Err(overflow(
            solver,
            format!(
                "the rule analysis needs more than {} rounds",
                RuleValue::MAX_ROUND
            ),
        ));
    }
    if plies > RuleValue::MAX_RULE_PLIES {
        return Err(overflow(
            solver,
            format!(
                "a rule-decided position lies more than {} plies from its rule",
                RuleValue::MAX_RULE_PLIES
            ),
        ));
    }
    let r = RuleValue {
        rule,
        round: round as u8,
        plies,
    };
    Ok(if plies % 2 == 1 {
        Value::RuleWin(r)
    } else {
        Value::RuleLoss(r)
    })
}

/// Decides, under the Asian rules, the positions plain retrograde analysis left unresolved in
/// `solver`'s states.
pub(crate) fn decide(
    solver: &Solver,
    deps: &dyn Probe,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), SolveError> {
    let started = std::time::Instant::now();
    for side in &solver.state {
        side.par_iter().for_each(|a| {
            if is_unresolved(a.load(Relaxed)) {
                a.store(UNDECIDED, Relaxed);
            }
        });
    }
    let index = solver.index;
    let both_attack = has_attacker(index, Color::Red) && has_attacker(index, Color::Black);
    let exits = dependencies_may_have_rule_values(solver, deps);
    if !both_attack && !exits {
        // No side can be forced to offend and no capture leads to a rule-decided position:
        // nothing here depends on the rules.
        return Ok(());
    }
    let phase = Phase {
        solver,
        deps,
        captures: Captures::new(index, solver.rules, deps),
    };
    let mut total = 0u64;
    let mut last_round: Vec<Pos> = Vec::new();
    if exits {
        // Round 0: captures into rule-decided positions of other tables.
        let all: Vec<Pos> = Color::ALL
            .iter()
            .flat_map(|&side| (0..index.size()).map(move |slot| (side, slot)))
            .filter(|&p| phase.code(p) == UNDECIDED)
            .collect();
        let mut pending: BTreeMap<u16, Vec<Pos>> = BTreeMap::new();
        let looks: Vec<(Pos, Value)> = all
            .par_chunks(CHUNK_SLOTS as usize)
            .map(|chunk| -> Result<Vec<(Pos, Value)>, SolveError> {
                let mut pos = SlotPosition::new(index, &solver.pieces);
                let mut out = Vec::new();
                for &(side, slot) in chunk {
                    if !pos.load(slot, side) {
                        continue;
                    }
                    let look = phase.look(&mut pos)?;
                    if (look.best.is_win() || (look.best.is_loss() && !look.open))
                        && look.best.rule().is_some()
                    {
                        out.push(((side, slot), look.best));
                    }
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        for (p, v) in looks {
            pending
                .entry(v.rule_plies().expect("a rule value"))
                .or_default()
                .push(p);
        }
        let decided = run_round(&phase, 0, Vec::new(), pending)?;
        total += decided.len() as u64;
        last_round = decided;
        progress(Progress::Rules {
            round: 0,
            decided: total,
        });
    }
    if both_attack {
        // The positions forced to offend, kept from round to round: a position's moves only
        // change status when a successor is decided, so each round looks again only at the
        // predecessors of what the last round decided.
        let mut forced: Vec<Pos> = Vec::new();
        for round in 1u16.. {
            let t0 = std::time::Instant::now();
            if round == 1 {
                forced = phase.all_forced()?;
            } else {
                let look_at = phase.predecessors(&last_round);
                let fresh = phase.forced_positions(&look_at)?;
                forced.retain(|p| phase.code(*p) == UNDECIDED && look_at.binary_search(p).is_err());
                forced.extend(fresh);
                forced.sort_unstable();
            }
            if forced.is_empty() {
                break;
            }
            let classified = t0.elapsed().as_secs_f64();
            let terminals = trap_positions(&phase, &forced)?;
            tracing::debug!(
                round,
                forced = forced.len(),
                classified,
                secs = t0.elapsed().as_secs_f64(),
                "traps found"
            );
            if terminals.is_empty() {
                break;
            }
            let mut frontier = Vec::with_capacity(terminals.len());
            for &(p, rule) in &terminals {
                let v = rule_code(solver, rule, round, 0)?;
                solver.state[p.0.index()][p.1 as usize].store(v.encode(), Relaxed);
                frontier.push(p);
            }
            let decided = run_round(&phase, round, frontier.clone(), BTreeMap::new())?;
            total += (frontier.len() + decided.len()) as u64;
            last_round = frontier;
            last_round.extend(decided);
            last_round.sort_unstable();
            progress(Progress::Rules {
                round: round as u8,
                decided: total,
            });
            tracing::debug!(table = %index.signature(), round, terminals = terminals.len(), decided = total, "rule round");
        }
    }
    tracing::info!(table = %index.signature(), decided = total, secs = started.elapsed().as_secs_f64(), "rule phase done");
    Ok(())
}

/// Backward propagation of round `round`: from the positions decided at level 0 (`frontier`)
/// and those whose value through captures is due at a level (`pending`), level by level.
/// Returns the positions it decided.
fn run_round(
    phase: &Phase,
    round: u16,
    mut frontier: Vec<Pos>,
    mut pending: BTreeMap<u16, Vec<Pos>>,
) -> Result<Vec<Pos>, SolveError> {
    let solver = phase.solver;
    let mut all = Vec::new();
    let mut level: u16 = 0;
    loop {
        if frontier.is_empty() && pending.range(level + 1..).next().is_none() {
            return Ok(all);
        }
        level += 1;
        let mut cand = phase.predecessors(&frontier);
        if let Some(p) = pending.remove(&level) {
            cand.extend(p);
            cand.sort_unstable();
            cand.dedup();
        }
        let decisions: Vec<(Pos, u16)> = cand
            .par_chunks(256)
            .map(|chunk| -> Result<Vec<(Pos, u16)>, SolveError> {
                let mut pos = SlotPosition::new(solver.index, &solver.pieces);
                let mut out = Vec::new();
                for &(side, slot) in chunk {
                    if phase.code((side, slot)) != UNDECIDED || !pos.load(slot, side) {
                        continue;
                    }
                    let look = phase.look(&mut pos)?;
                    let due = |v: Value| match v {
                        Value::RuleWin(r) | Value::RuleLoss(r) => {
                            r.round as u16 == round && r.plies == level
                        }
                        _ => false,
                    };
                    let decided = if level % 2 == 1 {
                        look.best.is_win() && due(look.best)
                    } else {
                        look.best.is_loss() && !look.open && due(look.best)
                    };
                    if decided {
                        out.push(((side, slot), look.best.encode()));
                    }
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        if level > RuleValue::MAX_RULE_PLIES && !decisions.is_empty() {
            rule_code(solver, Rule::PerpetualCheck, round, level)?;
        }
        frontier = Vec::with_capacity(decisions.len());
        for ((side, slot), code) in decisions {
            solver.state[side.index()][slot as usize].store(code, Relaxed);
            frontier.push((side, slot));
        }
        all.extend(frontier.iter().copied());
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
    let mirrored = !same;
    let mut map = [0u8; SLOTS];
    for (i, slot) in map.iter_mut().enumerate().take(n) {
        let want = if mirrored { mirror(after[i]) } else { after[i] };
        *slot = (0..n)
            .find(|&j| decoded[j] == want && pieces[j] == pieces[i])
            .expect("the successor holds the same pieces") as u8;
    }
    for (i, slot) in map.iter_mut().enumerate().skip(n) {
        *slot = i as u8;
    }
    map
}

/// The game graph around the forced positions, compactly: each node's moves that matter to the
/// rules (for a forced position its moves into undecided positions, all offences; for the
/// positions these lead to, their moves back into forced positions and one move standing for
/// all others, which leave the graph to an undecided outcome).
struct TableGame {
    side: Vec<Color>,
    start: Vec<u32>,
    /// Packed moves: target node (bits 0-31, `ESCAPE` for "out of the graph"), class (bits
    /// 32-33: 0 idle, 1 check, 2 chase), chased slots (bits 34-49), slot map (bits 50-63, index
    /// into `maps` plus one, 0 for none).
    moves: Vec<u64>,
    maps: Vec<[u8; SLOTS]>,
}

const ESCAPE: u32 = u32::MAX;

impl TableGame {
    fn pack(to: u32, label: Label, map: u64) -> u64 {
        let (kind, bits) = match label {
            Label::Idle => (0u64, 0u64),
            Label::Check => (1, 0),
            Label::Chase(b) => (2, b as u64),
        };
        to as u64 | kind << 32 | bits << 34 | map << 50
    }
}

impl crate::rules::Game for TableGame {
    fn nodes(&self) -> usize {
        self.side.len()
    }
    fn side(&self, n: usize) -> Color {
        self.side[n]
    }
    fn degree(&self, n: usize) -> usize {
        (self.start[n + 1] - self.start[n]) as usize
    }
    fn edge(&self, n: usize, i: usize) -> Edge {
        let x = self.moves[self.start[n] as usize + i];
        let to = x as u32;
        let label = match (x >> 32) & 3 {
            0 => Label::Idle,
            1 => Label::Check,
            _ => Label::Chase(((x >> 34) & 0xFFFF) as u16),
        };
        let map = (x >> 50) as usize;
        Edge {
            to: if to == ESCAPE {
                Target::Outcome(Outcome::Draw)
            } else {
                Target::Node(to)
            },
            label,
            slots: (map > 0).then(|| self.maps[map - 1]),
        }
    }
}

/// The positions among the game graph around `forced` (sorted) that lose by rule in this round.
fn trap_positions(phase: &Phase, forced: &[Pos]) -> Result<Vec<(Pos, Rule)>, SolveError> {
    let solver = phase.solver;
    let index = solver.index;
    let identical = {
        let p = &solver.pieces;
        (1..p.len()).any(|i| p[i] == p[i - 1])
    };
    // Nodes: the forced positions and the undecided positions their moves lead to.
    let succ: Vec<Pos> = forced
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            let mut pos = SlotPosition::new(index, &solver.pieces);
            let mut moves = MoveList::new();
            let mut out = Vec::new();
            for &(side, slot) in chunk {
                pos.load(slot, side);
                moves.clear();
                pos.board.pseudo_moves(&mut moves);
                for &m in moves.iter() {
                    if pos.board.is_empty(m.to()) {
                        let q = (side.opponent(), pos.slot_after_move(m));
                        if phase.code(q) == UNDECIDED && forced.binary_search(&q).is_err() {
                            out.push(q);
                        }
                    }
                }
            }
            out
        })
        .collect();
    let mut nodes: Vec<Pos> = forced.to_vec();
    nodes.extend(succ);
    nodes.par_sort_unstable();
    nodes.dedup();
    let node_of = |p: &Pos| nodes.binary_search(p).ok().map(|i| i as u32);
    let is_forced = |p: &Pos| forced.binary_search(p).is_ok();
    let maps = std::sync::Mutex::new(Vec::<[u8; SLOTS]>::new());
    let lists: Vec<Vec<u64>> = nodes
        .par_chunks(1024)
        .map(|chunk| -> Result<Vec<Vec<u64>>, SolveError> {
            let mut pos = SlotPosition::new(index, &solver.pieces);
            let mut moves = MoveList::new();
            let mut out = Vec::with_capacity(chunk.len());
            for &(side, slot) in chunk {
                pos.load(slot, side);
                moves.clear();
                pos.board.pseudo_moves(&mut moves);
                let own_forced = is_forced(&(side, slot));
                let mut list = Vec::new();
                let mut classes = Classifier::new(&pos.board);
                for &m in moves.iter() {
                    if !pos.board.is_empty(m.to()) {
                        continue;
                    }
                    let q = (side.opponent(), pos.slot_after_move(m));
                    if phase.code(q) != UNDECIDED {
                        continue;
                    }
                    // A forced position keeps all its moves into undecided positions; the
                    // others only their moves into forced positions.
                    if !own_forced && !is_forced(&q) {
                        continue;
                    }
                    let to = node_of(&q).expect("a node of the graph");
                    let map_slots =
                        identical.then(|| slot_map(index, &solver.pieces, pos.squares(), m, q.1));
                    let label = if classes.is_check(m) {
                        Label::Check
                    } else {
                        match classes.class(m) {
                            MoveClass::Idle | MoveClass::Check => Label::Idle,
                            MoveClass::Chase(sq) => {
                                let mut bits = 0u16;
                                for s in sq.iter() {
                                    let flat = pos.flat_at(s) as u8;
                                    let after = map_slots.map_or(flat, |m| m[flat as usize]);
                                    bits |= 1 << after;
                                }
                                Label::Chase(bits)
                            }
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
                    list.push(TableGame::pack(to, label, map));
                }
                if !own_forced {
                    list.push(TableGame::pack(ESCAPE, Label::Idle, 0));
                }
                out.push(list);
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    let mut start = Vec::with_capacity(nodes.len() + 1);
    start.push(0u32);
    let mut packed = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    for l in lists {
        packed.extend(l);
        start.push(packed.len() as u32);
    }
    let game = TableGame {
        side: nodes.iter().map(|p| p.0).collect(),
        start,
        moves: packed,
        maps: maps.into_inner().expect("slot maps"),
    };
    tracing::debug!(nodes = nodes.len(), moves = game.moves.len(), "trap graph");
    let te = std::time::Instant::now();
    let t = traps(&game, &vec![None; nodes.len()]);
    tracing::debug!(secs = te.elapsed().as_secs_f64(), "engine");
    let mut out: Vec<(Pos, Rule)> = t
        .check
        .iter()
        .map(|&n| (nodes[n as usize], Rule::PerpetualCheck))
        .chain(
            t.chase
                .iter()
                .map(|&n| (nodes[n as usize], Rule::PerpetualChase)),
        )
        .collect();
    out.sort_unstable_by_key(|(p, _)| *p);
    Ok(out)
}
