//! The verifier's checks of rule-decided values (Asian rule set), written apart from the solver's
//! rule phase and rule engine: it shares only the rules crate's move classification and the
//! index with them, follows pieces by their squares, and finds its fixed points by forward
//! sweeps (no un-moves, no predecessor lists).
//!
//! The local pass of [`crate::verify`] checks every value against its successors, except the
//! positions stored as lost by rule 0 plies away (*terminals*): their value comes from the rule.
//! What is left to show:
//! 1. **Every terminal really is trapped.** For each round `k`, the terminals of round `k` and the
//!    positions their offences lead to must form a trap against the positions decided before
//!    round `k` (mates and earlier rounds): each terminal's every move loses outright or is an
//!    offence (a check, or a chase of one followed piece) into the trap, and the other side can
//!    keep it there while making infinitely many moves that are not checks (and, for chases,
//!    for every piece of the offender, infinitely many moves that do not chase it). Then the
//!    offender can only offend for ever, or step into a position already lost for it.
//! 2. **No trap was missed.** Among the drawn positions, those whose side to move can only offend
//!    or lose must contain no trap against all decided positions; otherwise some draw is a loss.
//!
//! Together with the local pass (decided values are well-founded: rule values count plies down
//! to terminals of the same round, terminals rest on earlier rounds), every stored value is then
//! the value of the game defined in `docs/repetition-rules.md`.

use crate::VerifyError;
use crate::verify::RuleFindings;
use rayon::prelude::*;
use xiangqi::repetition::{Classifier, MoveClass};
use xiangqi::{Board, Color, Move, MoveList, PieceKind, Square};
use xqtb_core::{MAX_PIECES, Probe, ProbeError, Rule, Table, Value};

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
    let mut classes: Option<Classifier> = None;
    for (i, &m) in moves.iter().enumerate() {
        let v = if board.is_empty(m.to()) {
            match Value::decode(next[slots[i]]) {
                Value::Illegal => continue,
                v => v.for_mover(),
            }
        } else {
            match capture(m) {
                None | Some(Value::Illegal) => continue,
                Some(v) if v.is_loss() => continue,
                Some(_) => return false,
            }
        };
        if v.is_loss() {
            continue;
        }
        if v != Value::Draw {
            return false;
        }
        match classes
            .get_or_insert_with(|| Classifier::new(board))
            .class(m)
        {
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

/// A move between two positions of the verifier's graph (quiet, so no piece leaves).
#[derive(Clone, Copy)]
struct Arc {
    to: u32,
    /// 0 idle, 1 check, 2 chase.
    class: u8,
    /// The chased pieces, by flat position in the source's stored placement.
    chased: u16,
    /// For each flat position of the source's placement, the piece's flat position in the
    /// target's (pieces followed by their squares, through a mirror image if the target is
    /// stored mirrored).
    follow: [u8; MAX_PIECES],
}

/// The positions a check works on, with their moves inside the set. Moves out of the set only
/// matter to the offender: one that does not lose for it is an escape.
struct Net {
    keys: Vec<(Color, u64)>,
    start: Vec<u32>,
    arcs: Vec<Arc>,
    /// Whether the side to move has a move out of the set that does not lose for it.
    escapes: Vec<bool>,
    pieces: Vec<xiangqi::Piece>,
}

impl Net {
    fn node(&self, k: &(Color, u64)) -> Option<u32> {
        self.keys.binary_search(k).ok().map(|i| i as u32)
    }

    fn arcs(&self, n: usize) -> &[Arc] {
        &self.arcs[self.start[n] as usize..self.start[n + 1] as usize]
    }
}

/// How each piece of `src` (a stored placement) ends up in `dst` after `m`.
fn follow(pieces: &[xiangqi::Piece], src: &[u8], dst: &[u8], m: Move) -> [u8; MAX_PIECES] {
    let np = pieces.len();
    let moved = |s: u8| {
        if s == m.from().index() as u8 {
            m.to().index() as u8
        } else {
            s
        }
    };
    let find = |want: u8, k: usize| (0..np).find(|&j| dst[j] == want && pieces[j] == pieces[k]);
    let direct = (0..np).all(|k| find(moved(src[k]), k).is_some());
    let mut out = [0u8; MAX_PIECES];
    for k in 0..np {
        let mut want = moved(src[k]);
        if !direct {
            want = Square::from_index(want as usize)
                .expect("a square")
                .mirror()
                .index() as u8;
        }
        out[k] = find(want, k).expect("the same pieces") as u8;
    }
    out
}

/// Builds the graph over `keys` (sorted): for each node its quiet moves into another node,
/// with their classes, and whether it has a move out of the set that does not lose for its
/// mover. `won` says whether a position out of the set is won for its side to move, so that
/// the move into it loses for the mover.
fn build(
    table: &Table,
    deps: &dyn Probe,
    keys: Vec<(Color, u64)>,
    won: &(dyn Fn(Value) -> bool + Sync),
) -> Result<Net, Box<VerifyError>> {
    let index = table.index();
    let pieces = index.piece_list();
    let at = |k: &(Color, u64)| keys.binary_search(k).ok();
    let node_arcs =
        |side: Color, slot: u64, out: &mut Vec<Arc>| -> Result<bool, Box<VerifyError>> {
            let mut src = [0u8; MAX_PIECES];
            index.decode(slot, &mut src);
            let board = index.board_of(&src, side).expect("a legal slot");
            let mut moves = MoveList::new();
            board.legal_moves_into(&mut moves);
            let mut classes = Classifier::new(&board);
            let mut escapes = false;
            for &m in moves.iter() {
                let mut after = board.clone();
                let captured = after.make(m);
                let value = if captured.is_some() {
                    match deps.probe(table.rules(), &after) {
                        Ok(v) => v.as_exit(),
                        Err(ProbeError::Illegal(_)) => continue,
                        Err(e) => return Err(fail(table, side, slot, &board, e.to_string())),
                    }
                } else {
                    let q = index
                        .slot_of(&after, false)
                        .map_err(|e| fail(table, side, slot, &board, e.to_string()))?;
                    if let Some(n) = at(&(side.opponent(), q)) {
                        let (class, chased) = match classes.class(m) {
                            MoveClass::Idle => (0, 0),
                            MoveClass::Check => (1, 0),
                            MoveClass::Chase(sq) => {
                                let mut bits = 0u16;
                                for s in sq.iter() {
                                    let i = (0..pieces.len())
                                        .find(|&i| src[i] == s.index() as u8)
                                        .expect("a chased piece");
                                    bits |= 1 << i;
                                }
                                (2, bits)
                            }
                        };
                        let mut dst = [0u8; MAX_PIECES];
                        index.decode(q, &mut dst);
                        out.push(Arc {
                            to: n as u32,
                            class,
                            chased,
                            follow: follow(&pieces, &src, &dst, m),
                        });
                        continue;
                    }
                    table.value(side.opponent(), q)
                };
                escapes |= !won(value);
            }
            Ok(escapes)
        };
    // Chunks keep the per-node overhead out of the peak memory.
    let parts: Vec<(Vec<Arc>, Vec<u32>, Vec<bool>)> = keys
        .par_chunks(4096)
        .map(|chunk| {
            let mut part = (
                Vec::new(),
                Vec::with_capacity(chunk.len()),
                Vec::with_capacity(chunk.len()),
            );
            for &(side, slot) in chunk {
                let escapes = node_arcs(side, slot, &mut part.0)?;
                part.1.push(part.0.len() as u32);
                part.2.push(escapes);
            }
            Ok(part)
        })
        .collect::<Result<_, Box<VerifyError>>>()?;
    let mut start = Vec::with_capacity(keys.len() + 1);
    start.push(0u32);
    let mut arcs = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    let mut escapes = Vec::with_capacity(keys.len());
    for (a, ends, e) in parts {
        let base = arcs.len() as u32;
        start.extend(ends.iter().map(|&end| base + end));
        arcs.extend(a);
        escapes.extend(e);
    }
    Ok(Net {
        keys,
        start,
        arcs,
        escapes,
        pieces,
    })
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

impl Net {
    /// The flat positions of `side`'s pieces other than the king.
    fn flats_of(&self, side: Color) -> Vec<usize> {
        (0..self.pieces.len())
            .filter(|&i| self.pieces[i].color() == side && self.pieces[i].kind() != PieceKind::King)
            .collect()
    }

    /// The nodes (side to move `winner.opponent()`) trapped for `winner` by `rule`: the greatest
    /// set of states (node, followed victim) from which the offender can only offend into the
    /// set or lose, and the winner can stay in the set while meeting each of its conditions
    /// infinitely often.
    fn trapped(&self, winner: Color, rule: Rule) -> Vec<bool> {
        let n = self.keys.len();
        let victims: Vec<Option<usize>> = match rule {
            Rule::PerpetualCheck => vec![None],
            Rule::PerpetualChase => self.flats_of(winner).into_iter().map(Some).collect(),
        };
        let nv = victims.len();
        if nv == 0 {
            return vec![false; n];
        }
        // The trap states: (node, followed victim).
        let mut y: Vec<bool> = (0..n * nv)
            .map(|s| self.keys[s / nv].0 == winner || !self.escapes[s / nv])
            .collect();
        // The winner's conditions: a non-check; for chases also, per offender piece, a move
        // that does not chase it.
        let mut conds: Vec<Option<usize>> = vec![None];
        if rule == Rule::PerpetualChase {
            conds.extend(self.flats_of(winner.opponent()).into_iter().map(Some));
        }
        loop {
            let mut keep = y.clone();
            for &cond in &conds {
                let z = self.forced_good(winner, rule, &y, &victims, cond);
                for (k, z) in keep.iter_mut().zip(z) {
                    *k &= z;
                }
            }
            if keep == y {
                break;
            }
            y = keep;
        }
        (0..n)
            .map(|i| self.keys[i].0 == winner.opponent() && (0..nv).any(|v| y[i * nv + v]))
            .collect()
    }

    /// Forward sweeps to the least fixed point: the states of `y` from which the winner can
    /// force a move meeting the condition (no check, or not chasing the followed offender
    /// piece `cond`, which the states then also follow) while the play stays in `y`.
    fn forced_good(
        &self,
        winner: Color,
        rule: Rule,
        y: &[bool],
        victims: &[Option<usize>],
        cond: Option<usize>,
    ) -> Vec<bool> {
        let n = self.keys.len();
        let nv = victims.len();
        let np = self.pieces.len();
        // Extended states: (node, victim index, followed offender piece's flat position).
        let nu = if cond.is_some() { np } else { 1 };
        let idx = |node: usize, v: usize, u: usize| (node * nv + v) * nu + u;
        let mut won = vec![false; n * nv * nu];
        let next_v = |a: &Arc, v: usize| -> Option<usize> {
            match victims[v] {
                None => Some(v),
                Some(f) => {
                    let g = a.follow[f] as usize;
                    victims.iter().position(|&x| x == Some(g))
                }
            }
        };
        let next_u = |a: &Arc, u: usize| if nu == 1 { 0 } else { a.follow[u] as usize };
        loop {
            let mut changed = false;
            for node in 0..n {
                let arcs = self.arcs(node);
                let offender = self.keys[node].0 != winner;
                for v in 0..nv {
                    if !y[node * nv + v] {
                        continue;
                    }
                    for u in 0..nu {
                        if won[idx(node, v, u)] {
                            continue;
                        }
                        let ok = if !offender {
                            arcs.iter().any(|a| {
                                let Some(v2) = next_v(a, v) else {
                                    return false;
                                };
                                let t = a.to as usize;
                                if !y[t * nv + v2] {
                                    return false;
                                }
                                let good = match cond {
                                    None => a.class != 1,
                                    Some(_) => !(a.class == 2 && a.chased & (1 << u) != 0),
                                };
                                good || won[idx(t, v2, next_u(a, u))]
                            })
                        } else {
                            !self.escapes[node]
                                && !arcs.is_empty()
                                && arcs.iter().all(|a| {
                                    let offence = match (rule, victims[v]) {
                                        (Rule::PerpetualCheck, _) => a.class == 1,
                                        (Rule::PerpetualChase, Some(f)) => {
                                            a.class == 2 && a.chased & (1 << f) != 0
                                        }
                                        _ => false,
                                    };
                                    if !offence {
                                        return false;
                                    }
                                    let Some(v2) = next_v(a, v) else {
                                        return false;
                                    };
                                    let t = a.to as usize;
                                    y[t * nv + v2] && won[idx(t, v2, next_u(a, u))]
                                })
                        };
                        if ok {
                            won[idx(node, v, u)] = true;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        (0..n * nv)
            .map(|s| {
                y[s] && match cond {
                    None => won[s],
                    Some(u) => won[s * nu + u],
                }
            })
            .collect()
    }
}

/// The rule checks of an Asian table (see the module documentation).
pub(crate) fn check(
    table: &Table,
    deps: &dyn Probe,
    found: RuleFindings,
) -> Result<(), Box<VerifyError>> {
    let index = table.index();
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
        let terms: Vec<(Color, u64, Rule)> = found
            .terminals
            .iter()
            .filter_map(|&(side, slot, v)| match v {
                Value::RuleLoss(r) if r.round == round => Some((side, slot, r.rule)),
                _ => None,
            })
            .collect();
        // Nodes: the terminals and the positions of this round their quiet moves lead to.
        let mut keys: Vec<(Color, u64)> = terms
            .par_iter()
            .flat_map_iter(|&(side, slot, _)| {
                let b = index.board(slot, side).expect("a legal slot");
                let mut out = vec![(side, slot)];
                for &m in b.legal_moves().iter() {
                    if b.is_empty(m.to()) {
                        let mut after = b.clone();
                        after.make(m);
                        let q = index.slot_of(&after, false).expect("a slot");
                        if matches!(table.value(side.opponent(), q), Value::RuleWin(r) if r.round == round)
                        {
                            out.push((side.opponent(), q));
                        }
                    }
                }
                out
            })
            .collect();
        keys.par_sort_unstable();
        keys.dedup();
        // Out of the graph, an offender's move loses when it leads to a position decided before
        // this round as won for the side to move there.
        let before_round = |v: Value| match v {
            Value::Win(_) => true,
            Value::RuleWin(r) => r.round < round,
            _ => false,
        };
        let t0 = std::time::Instant::now();
        let net = build(table, deps, keys, &before_round)?;
        tracing::debug!(
            round,
            nodes = net.keys.len(),
            arcs = net.arcs.len(),
            secs = t0.elapsed().as_secs_f64(),
            "rule check graph"
        );
        let mut trapped = std::collections::HashMap::new();
        for &(side, slot, rule) in &terms {
            let node = net.node(&(side, slot)).expect("a node") as usize;
            let winner = side.opponent();
            let check = trapped
                .entry((winner, Rule::PerpetualCheck))
                .or_insert_with(|| net.trapped(winner, Rule::PerpetualCheck))[node];
            let ok = match rule {
                Rule::PerpetualCheck => check,
                Rule::PerpetualChase => {
                    !check
                        && trapped
                            .entry((winner, Rule::PerpetualChase))
                            .or_insert_with(|| net.trapped(winner, Rule::PerpetualChase))[node]
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
    let mut keys: Vec<(Color, u64)> = found
        .forced_draws
        .par_iter()
        .flat_map_iter(|&(side, slot)| {
            let b = index.board(slot, side).expect("a legal slot");
            let mut out = vec![(side, slot)];
            for &m in b.legal_moves().iter() {
                if b.is_empty(m.to()) {
                    let mut after = b.clone();
                    after.make(m);
                    let q = index.slot_of(&after, false).expect("a slot");
                    if table.value(side.opponent(), q) == Value::Draw {
                        out.push((side.opponent(), q));
                    }
                }
            }
            out
        })
        .collect();
    keys.par_sort_unstable();
    keys.dedup();
    let won = |v: Value| v.is_win();
    let t0 = std::time::Instant::now();
    let net = build(table, deps, keys, &won)?;
    tracing::debug!(
        nodes = net.keys.len(),
        arcs = net.arcs.len(),
        secs = t0.elapsed().as_secs_f64(),
        "draw check graph"
    );
    for winner in Color::ALL {
        for rule in [Rule::PerpetualCheck, Rule::PerpetualChase] {
            if let Some(n) = net.trapped(winner, rule).iter().position(|&t| t) {
                let (side, slot) = net.keys[n];
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
