//! The verifier's checks of rule-decided values (Asian rule set), written apart from the solver's
//! rule phase and rule engine: it shares only the rules crate's move classification with them.
//!
//! The local pass of [`crate::verify`] checks every value against its successors, except the
//! positions stored as lost by rule 0 plies away (*terminals*): their value comes from the rule.
//! What is left to show:
//! 1. **Every terminal really is trapped.** For each round `k`, the terminals of round `k` and the
//!    positions their offences lead to must form a trap against the positions decided before
//!    round `k` (mates and earlier rounds): each terminal's every move loses outright or is an
//!    offence (a check, or a chase of one followed piece) into the trap, and the other side can
//!    keep it there while making infinitely many moves that are not checks (and, for chases,
//!    infinitely many moves that chase no single piece of the offender). Then the offender can
//!    only offend for ever, or step into a position already lost for it.
//! 2. **No trap was missed.** Among the drawn positions, those whose side to move can only offend
//!    or lose must contain no trap against all decided positions; otherwise some draw is a loss.
//!
//! Together with the local pass (decided values are well-founded: rule values count plies down
//! to terminals of the same round, terminals rest on earlier rounds), every stored value is then
//! the value of the game defined in `docs/repetition-rules.md`.

use crate::VerifyError;
use crate::position::SlotPosition;
use std::collections::{HashMap, HashSet};
use xiangqi::repetition::{MoveClass, classify};
use xiangqi::{Board, Color, Move, MoveList, PieceKind, Square};
use xqtb_core::{Probe, ProbeError, Rule, Table, Value};

use crate::verify::RuleFindings;

/// Whether the side to move of `board` can only offend or lose: every legal move leads to a
/// position lost for it, or is a quiet move into a drawn position that is a check (every one
/// of them), or chases one piece common to all of them. `slots` and `next` give quiet moves'
/// successors' codes; `capture(m)` the value of a capture for the mover (`None`: illegal).
pub(crate) fn forced_to_offend(
    board: &Board,
    moves: &MoveList,
    slots: &[usize],
    next: &[u16],
    capture: &mut dyn FnMut(Move) -> Option<Value>,
) -> bool {
    let mut checks = true;
    let mut chased = !0u128;
    for (i, &m) in moves.iter().enumerate() {
        let v = if board.is_empty(m.to()) {
            match Value::decode(next[slots[i]]) {
                Value::Illegal => continue,
                v => v.for_mover(),
            }
        } else {
            match capture(m) {
                None | Some(Value::Illegal) => continue,
                Some(v) => {
                    if v.is_loss() {
                        continue;
                    }
                    return false;
                }
            }
        };
        if v.is_loss() {
            continue;
        }
        if v != Value::Draw {
            return false;
        }
        match classify(board, m) {
            MoveClass::Idle => return false,
            MoveClass::Check => chased = 0,
            MoveClass::Chase(sq) => {
                checks = false;
                chased &= sq.0;
            }
        }
        if !checks && chased == 0 {
            return false;
        }
    }
    true
}

/// Where a move of the verifier's graph leads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum To {
    Node(usize),
    WinFor(Color),
    Draw,
}

/// One move of the verifier's graph: the move itself (to follow pieces by their squares) and
/// whether the successor's stored placement is the mirror image of the board after it.
#[derive(Clone, Copy)]
struct Arc {
    to: To,
    class: MoveClass,
    mv: Move,
    mirrored: bool,
}

impl Arc {
    /// Where the piece on `s` stands in the successor's stored placement.
    fn follow(&self, s: Square) -> Square {
        let s = if s == self.mv.from() { self.mv.to() } else { s };
        if self.mirrored { s.mirror() } else { s }
    }

    fn chases(&self, s: Square) -> bool {
        matches!(self.class, MoveClass::Chase(sq) if sq.contains(s))
    }
}

struct Node {
    side: Color,
    board: Board,
    arcs: Vec<Arc>,
}

/// The verifier's graph over a set of positions.
struct Net {
    nodes: Vec<Node>,
}

/// Builds the graph over `keys` (side, slot): every legal move of every node; a move into
/// another node is kept as a move, the others end in their stored value as `decided` says
/// (`None`: not decided, treated as a draw).
fn build(
    table: &Table,
    deps: &dyn Probe,
    keys: &[(Color, u64)],
    decided: &dyn Fn(Color, u64, Value) -> Option<Value>,
) -> Result<Net, Box<VerifyError>> {
    let index = table.index();
    let pieces = index.piece_list();
    let mut pos = SlotPosition::new(index, &pieces);
    let at: HashMap<(Color, u64), usize> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let mut nodes = Vec::with_capacity(keys.len());
    for &(side, slot) in keys {
        pos.load(slot, side);
        let board = pos.board.clone();
        let mut moves = MoveList::new();
        board.legal_moves_into(&mut moves);
        let mut arcs = Vec::new();
        for &m in moves.iter() {
            let mut after = board.clone();
            let captured = after.make(m);
            let outcome = |v: Value| {
                if v.is_win() {
                    To::WinFor(side)
                } else if v.is_loss() {
                    To::WinFor(side.opponent())
                } else {
                    To::Draw
                }
            };
            if captured.is_some() {
                let v = match deps.probe(table.rules(), &after) {
                    Ok(v) => v.as_exit().for_mover(),
                    Err(ProbeError::Illegal(_)) => continue,
                    Err(e) => {
                        return Err(fail(table, side, slot, &board, format!("{e}")));
                    }
                };
                arcs.push(Arc {
                    to: outcome(v),
                    class: MoveClass::Idle,
                    mv: m,
                    mirrored: false,
                });
                continue;
            }
            let q = index
                .slot_of(&after, false)
                .map_err(|e| fail(table, side, slot, &board, e.to_string()))?;
            let stored = table.value(side.opponent(), q);
            let to = match at.get(&(side.opponent(), q)) {
                Some(&n) => To::Node(n),
                None => match decided(side.opponent(), q, stored) {
                    Some(v) => outcome(v.for_mover()),
                    None => To::Draw,
                },
            };
            let mirrored = {
                let mut stored_board = index.board(q, side.opponent()).expect("a legal slot");
                stored_board.set_side_to_move(after.side_to_move());
                stored_board != after
            };
            arcs.push(Arc {
                to,
                class: classify(&board, m),
                mv: m,
                mirrored,
            });
        }
        nodes.push(Node { side, board, arcs });
    }
    Ok(Net { nodes })
}

fn fail(table: &Table, side: Color, slot: u64, board: &Board, why: String) -> Box<VerifyError> {
    Box::new(VerifyError {
        signature: table.signature(),
        side,
        slot,
        fen: format!("{} ({why})", board.fen()),
        stored: table.value(side, slot),
        expected: Value::Illegal,
    })
}

/// The squares of `side`'s pieces other than its king on `board`.
fn pieces_of(board: &Board, side: Color) -> Vec<Square> {
    board
        .pieces()
        .filter(|(_, p)| p.color() == side && p.kind() != PieceKind::King)
        .map(|(s, _)| s)
        .collect()
}

/// A state of a trap: a node, the followed victim's square (perpetual chase) and the followed
/// offender piece's square (for the winner's "not chasing it" condition).
type St = (usize, Option<Square>, Option<Square>);

impl Net {
    /// The offender nodes (side to move `winner.opponent()`) trapped for `winner` by `rule`.
    fn trapped(&self, winner: Color, rule: Rule) -> HashSet<usize> {
        let offender = winner.opponent();
        // The states: (node, victim) with the victim any piece of the winner for chases.
        let mut y: HashSet<(usize, Option<Square>)> = HashSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            match rule {
                Rule::PerpetualCheck => {
                    y.insert((i, None));
                }
                Rule::PerpetualChase => {
                    for v in pieces_of(&n.board, winner) {
                        y.insert((i, Some(v)));
                    }
                }
            }
        }
        loop {
            let mut keep: HashSet<(usize, Option<Square>)> = y.clone();
            // The winner must manage a non-check infinitely often, and for chases also, for
            // every offender piece, a move that does not chase it.
            let mut conditions: Vec<Option<()>> = vec![None];
            if rule == Rule::PerpetualChase {
                conditions.push(Some(()));
            }
            for cond in conditions {
                let reached = self.reach(winner, rule, &y, cond.is_some());
                keep.retain(|s| reached.contains(s));
            }
            if keep.len() == y.len() {
                break;
            }
            y = keep;
        }
        y.iter()
            .filter(|(i, _)| self.nodes[*i].side == offender)
            .map(|(i, _)| *i)
            .collect()
    }

    /// The states of `y` from which the winner can force a move meeting the condition (no check;
    /// or, with `per_piece`, not chasing the followed offender piece, for every such piece)
    /// while the play stays in `y`.
    fn reach(
        &self,
        winner: Color,
        rule: Rule,
        y: &HashSet<(usize, Option<Square>)>,
        per_piece: bool,
    ) -> HashSet<(usize, Option<Square>)> {
        let mut out = HashSet::new();
        for &(i, v) in y {
            let followed: Vec<Option<Square>> = if per_piece {
                pieces_of(&self.nodes[i].board, winner.opponent())
                    .into_iter()
                    .map(Some)
                    .collect()
            } else {
                vec![None]
            };
            if followed
                .iter()
                .all(|&u| self.forces(winner, rule, y, (i, v, u), per_piece))
            {
                out.insert((i, v));
            }
        }
        out
    }

    /// Whether the winner can force, from `start`, a good move while staying in `y`: a least
    /// fixed point over the states reachable from `start` in `y`.
    fn forces(
        &self,
        winner: Color,
        rule: Rule,
        y: &HashSet<(usize, Option<Square>)>,
        start: St,
        per_piece: bool,
    ) -> bool {
        // The states reachable from the start within y.
        let mut seen: Vec<St> = vec![start];
        let mut known: HashSet<St> = HashSet::from([start]);
        let mut k = 0;
        while k < seen.len() {
            let (i, v, u) = seen[k];
            k += 1;
            for a in &self.nodes[i].arcs {
                if let To::Node(j) = a.to {
                    let next = (j, v.map(|v| a.follow(v)), u.map(|u| a.follow(u)));
                    if y.contains(&(next.0, next.1)) && known.insert(next) {
                        seen.push(next);
                    }
                }
            }
        }
        let good_move = |a: &Arc, u: Option<Square>| {
            if per_piece {
                !u.is_some_and(|u| a.chases(u))
            } else {
                a.class != MoveClass::Check
            }
        };
        let mut won: HashSet<St> = HashSet::new();
        loop {
            let before = won.len();
            for &(i, v, u) in &seen {
                if won.contains(&(i, v, u)) {
                    continue;
                }
                let n = &self.nodes[i];
                let succ = |a: &Arc| match a.to {
                    To::Node(j) => Some((j, v.map(|v| a.follow(v)), u.map(|u| a.follow(u)))),
                    _ => None,
                };
                let ok = if n.side == winner {
                    n.arcs.iter().any(|a| match succ(a) {
                        Some(s) if y.contains(&(s.0, s.1)) => good_move(a, u) || won.contains(&s),
                        _ => false,
                    })
                } else {
                    !n.arcs.is_empty()
                        && n.arcs.iter().all(|a| {
                            if a.to == To::WinFor(winner) {
                                return true;
                            }
                            let offence = match rule {
                                Rule::PerpetualCheck => a.class == MoveClass::Check,
                                Rule::PerpetualChase => v.is_some_and(|v| a.chases(v)),
                            };
                            offence
                                && succ(a)
                                    .is_some_and(|s| y.contains(&(s.0, s.1)) && won.contains(&s))
                        })
                };
                if ok {
                    won.insert((i, v, u));
                }
            }
            if won.len() == before {
                return won.contains(&start);
            }
        }
    }
}

/// The rule checks of an Asian table (see the module documentation).
pub(crate) fn check(
    table: &Table,
    deps: &dyn Probe,
    found: RuleFindings,
) -> Result<(), Box<VerifyError>> {
    let mut rounds: Vec<u8> = found
        .terminals
        .iter()
        .filter_map(|&(_, _, v)| match v {
            Value::RuleLoss(r) => Some(r.round),
            _ => None,
        })
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    for round in rounds {
        let mut terms: Vec<(Color, u64, Rule)> = found
            .terminals
            .iter()
            .filter_map(|&(side, slot, v)| match v {
                Value::RuleLoss(r) if r.round == round => Some((side, slot, r.rule)),
                _ => None,
            })
            .collect();
        terms.sort_unstable_by_key(|t| (t.0, t.1));
        // Nodes: the terminals and the positions of this round their moves lead to.
        let mut keys: Vec<(Color, u64)> = terms.iter().map(|t| (t.0, t.1)).collect();
        let index = table.index();
        for &(side, slot, _) in &terms {
            let b = index.board(slot, side).expect("a legal slot");
            for &m in b.legal_moves().iter() {
                if b.is_empty(m.to()) {
                    let mut after = b.clone();
                    after.make(m);
                    let q = index.slot_of(&after, false).expect("a slot");
                    if matches!(table.value(side.opponent(), q), Value::RuleWin(r) if r.round == round)
                    {
                        keys.push((side.opponent(), q));
                    }
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let before_round = |_: Color, _: u64, v: Value| match v {
            Value::Win(_) | Value::Loss(_) => Some(v),
            Value::RuleWin(r) | Value::RuleLoss(r) if r.round < round => Some(v),
            _ => None,
        };
        let net = build(table, deps, &keys, &before_round)?;
        let at: HashMap<(Color, u64), usize> =
            keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let mut trapped: HashMap<Rule, HashSet<usize>> = HashMap::new();
        for &(side, slot, rule) in &terms {
            let node = at[&(side, slot)];
            let check = trapped
                .entry(Rule::PerpetualCheck)
                .or_insert_with(|| {
                    let mut s = net.trapped(Color::Red, Rule::PerpetualCheck);
                    s.extend(net.trapped(Color::Black, Rule::PerpetualCheck));
                    s
                })
                .contains(&node);
            let ok = match rule {
                Rule::PerpetualCheck => check,
                Rule::PerpetualChase => {
                    !check
                        && trapped
                            .entry(Rule::PerpetualChase)
                            .or_insert_with(|| {
                                let mut s = net.trapped(Color::Red, Rule::PerpetualChase);
                                s.extend(net.trapped(Color::Black, Rule::PerpetualChase));
                                s
                            })
                            .contains(&node)
                }
            };
            if !ok {
                let b = index.board(slot, side).expect("a legal slot");
                return Err(fail(
                    table,
                    side,
                    slot,
                    &b,
                    format!(
                        "stored as lost by {} in round {round}, but the positions around it do not trap it",
                        rule.name()
                    ),
                ));
            }
        }
    }
    // No trap among the draws.
    if found.forced_draws.is_empty() {
        return Ok(());
    }
    let mut keys = found.forced_draws.clone();
    let index = table.index();
    for &(side, slot) in &found.forced_draws {
        let b = index.board(slot, side).expect("a legal slot");
        for &m in b.legal_moves().iter() {
            if b.is_empty(m.to()) {
                let mut after = b.clone();
                after.make(m);
                let q = index.slot_of(&after, false).expect("a slot");
                if table.value(side.opponent(), q) == Value::Draw {
                    keys.push((side.opponent(), q));
                }
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    let all_decided = |_: Color, _: u64, v: Value| (v != Value::Draw).then_some(v);
    let net = build(table, deps, &keys, &all_decided)?;
    for winner in Color::ALL {
        for rule in [Rule::PerpetualCheck, Rule::PerpetualChase] {
            if let Some(&n) = net.trapped(winner, rule).iter().min() {
                let (side, slot) = keys[n];
                let b = index.board(slot, side).expect("a legal slot");
                return Err(fail(
                    table,
                    side,
                    slot,
                    &b,
                    format!(
                        "stored as a draw, but its side to move is trapped into {}",
                        rule.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}
