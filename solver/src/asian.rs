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
use crate::rules::{Edge, Graph, Label, NodeId, Outcome, SLOTS, Target, traps};
use crate::solve::{Progress, SolveError, Solver, is_unresolved};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use xiangqi::repetition::{MoveClass, classify};
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
            match classify(&pos.board, m) {
                MoveClass::Idle => return Ok(false),
                MoveClass::Check => chased = 0,
                MoveClass::Chase(sq) => {
                    checks = false;
                    chased &= sq.0;
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
        let mut candidates: Vec<Pos> = Vec::new();
        for round in 1u16.. {
            // Positions forced to offend: everywhere in the first round, later only where a
            // successor was decided since.
            let fresh = if round == 1 {
                phase.all_forced()?
            } else {
                let mut look_at = phase.predecessors(&last_round);
                look_at.extend(candidates.iter().copied());
                look_at.sort_unstable();
                look_at.dedup();
                phase.forced_positions(&look_at)?
            };
            candidates = fresh;
            if candidates.is_empty() {
                break;
            }
            let terminals = trap_positions(&phase, &candidates)?;
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
    let mut sorted_a = after.clone();
    sorted_a.sort_unstable();
    let mut sorted_d = decoded[..n].to_vec();
    sorted_d.sort_unstable();
    let mirrored = sorted_a != sorted_d;
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

/// The positions among the game graph around `forced` that lose by rule in this round.
fn trap_positions(phase: &Phase, forced: &[Pos]) -> Result<Vec<(Pos, Rule)>, SolveError> {
    let solver = phase.solver;
    let index = solver.index;
    // Nodes: the forced positions and the undecided positions their moves lead to.
    let mut nodes: Vec<Pos> = forced.to_vec();
    let mut pos = SlotPosition::new(index, &solver.pieces);
    let mut moves = MoveList::new();
    for &(side, slot) in forced {
        pos.load(slot, side);
        moves.clear();
        pos.board.pseudo_moves(&mut moves);
        for &m in moves.iter() {
            if pos.board.is_empty(m.to()) {
                let q = (side.opponent(), pos.slot_after_move(m));
                if phase.code(q) == UNDECIDED {
                    nodes.push(q);
                }
            }
        }
    }
    nodes.sort_unstable();
    nodes.dedup();
    let id: HashMap<Pos, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i as NodeId))
        .collect();
    let edges: Vec<Vec<Edge>> = nodes
        .par_chunks(64)
        .map(|chunk| -> Result<Vec<Vec<Edge>>, SolveError> {
            let mut pos = SlotPosition::new(index, &solver.pieces);
            let mut out = Vec::new();
            for &(side, slot) in chunk {
                pos.load(slot, side);
                let mut moves = MoveList::new();
                pos.board.pseudo_moves(&mut moves);
                let mut edges = Vec::new();
                let outcome = |v: Value| {
                    Target::Outcome(if v.is_win() {
                        Outcome::win_for(side)
                    } else if v.is_loss() {
                        Outcome::win_for(side.opponent())
                    } else {
                        Outcome::Draw
                    })
                };
                for &m in moves.iter() {
                    if !pos.board.is_empty(m.to()) {
                        match phase.capture_value(&mut pos, m)? {
                            Value::Illegal => {}
                            v => edges.push(Edge::new(outcome(v), Label::Idle)),
                        }
                        continue;
                    }
                    let q = (side.opponent(), pos.slot_after_move(m));
                    match phase.code(q) {
                        Value::ILLEGAL_CODE => continue,
                        UNDECIDED => {}
                        c => {
                            edges.push(Edge::new(
                                outcome(Value::decode(c).for_mover()),
                                Label::Idle,
                            ));
                            continue;
                        }
                    }
                    let Some(&node) = id.get(&q) else {
                        edges.push(Edge::new(Target::Outcome(Outcome::Draw), Label::Idle));
                        continue;
                    };
                    let map = slot_map(index, &solver.pieces, pos.squares(), m, q.1);
                    let label = match classify(&pos.board, m) {
                        MoveClass::Idle => Label::Idle,
                        MoveClass::Check => Label::Check,
                        MoveClass::Chase(sq) => {
                            // Victims are on squares after the move; name them by the
                            // successor's flat positions.
                            let mut bits = 0u16;
                            for s in sq.iter() {
                                bits |= 1 << map[pos.flat_at(s)];
                            }
                            Label::Chase(bits)
                        }
                    };
                    edges.push(Edge {
                        to: Target::Node(node),
                        label,
                        slots: Some(map),
                    });
                }
                out.push(edges);
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    let graph = Graph {
        side: nodes.iter().map(|p| p.0).collect(),
        edges,
    };
    let t = traps(&graph, &vec![None; graph.len()]);
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
