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
//!
//! These checks run after the local pass has accepted every entry, so the table's illegal marks
//! can be trusted to tell illegal moves.

use crate::VerifyError;
use crate::position::SlotPosition;
use rayon::prelude::*;
use std::sync::Mutex;
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
    /// Where each piece goes: 0 when every flat position stays (pieces that are all different),
    /// else one plus an index into [`Net::follows`].
    follow: u16,
}

/// The positions a check works on (entries numbered side-major: Red's slots, then Black's),
/// with their moves inside the set. Moves out of the set only matter to the offender: one that
/// does not lose for it is an escape.
struct Net {
    size: u64,
    keys: Vec<u64>,
    start: Vec<u32>,
    arcs: Vec<Arc>,
    /// Whether the side to move has a move out of the set that does not lose for it.
    escapes: Vec<bool>,
    /// For each flat position of the source's placement, the piece's flat position in the
    /// target's (followed by its square, through a mirror image if the target is stored
    /// mirrored).
    follows: Vec<[u8; MAX_PIECES]>,
    pieces: Vec<xiangqi::Piece>,
}

fn entry(size: u64, side: Color, slot: u64) -> u64 {
    side.index() as u64 * size + slot
}

fn split(size: u64, e: u64) -> (Color, u64) {
    if e < size {
        (Color::Red, e)
    } else {
        (Color::Black, e - size)
    }
}

impl Net {
    fn node(&self, side: Color, slot: u64) -> Option<usize> {
        self.keys.binary_search(&entry(self.size, side, slot)).ok()
    }

    fn side(&self, n: usize) -> Color {
        split(self.size, self.keys[n]).0
    }

    fn arcs(&self, n: usize) -> &[Arc] {
        &self.arcs[self.start[n] as usize..self.start[n + 1] as usize]
    }

    /// The flat position after arc `a` of the piece at flat position `i` before it.
    fn follow(&self, a: &Arc, i: usize) -> usize {
        match a.follow {
            0 => i,
            f => self.follows[f as usize - 1][i] as usize,
        }
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

/// Builds the graph over `keys` (sorted entries): for each node its quiet moves into another
/// node, with their classes, and whether it has a move out of the set that does not lose for
/// its mover. `won` says whether a position out of the set is won for its side to move, so
/// that the move into it loses for the mover.
fn build(
    table: &Table,
    deps: &dyn Probe,
    keys: Vec<u64>,
    won: &(dyn Fn(Value) -> bool + Sync),
) -> Result<Net, Box<VerifyError>> {
    let index = table.index();
    let size = index.size();
    let pieces = index.piece_list();
    let identical = (1..pieces.len()).any(|i| pieces[i] == pieces[i - 1]);
    let follows = Mutex::new(Vec::<[u8; MAX_PIECES]>::new());
    // Chunks keep the per-node overhead out of the peak memory.
    let parts: Vec<(Vec<Arc>, Vec<u32>, Vec<bool>)> = keys
        .par_chunks(4096)
        .map(|chunk| {
            let mut pos = SlotPosition::new(index, &pieces);
            let mut part = (
                Vec::new(),
                Vec::with_capacity(chunk.len()),
                Vec::with_capacity(chunk.len()),
            );
            for &e in chunk {
                let (side, slot) = split(size, e);
                let mut src = [0u8; MAX_PIECES];
                if identical {
                    index.decode(slot, &mut src);
                }
                let escapes = node_arcs(
                    table,
                    deps,
                    &keys,
                    won,
                    &mut pos,
                    side,
                    slot,
                    |m, q| {
                        if !identical {
                            return 0;
                        }
                        let mut dst = [0u8; MAX_PIECES];
                        index.decode(q, &mut dst);
                        let f = follow(&pieces, &src, &dst, m);
                        if (0..pieces.len()).all(|i| f[i] as usize == i) {
                            return 0;
                        }
                        let mut all = follows.lock().expect("follow maps");
                        let k = all.iter().position(|x| *x == f).unwrap_or_else(|| {
                            all.push(f);
                            all.len() - 1
                        });
                        k as u16 + 1
                    },
                    &mut part.0,
                )?;
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
        size,
        keys,
        start,
        arcs,
        escapes,
        follows: follows.into_inner().expect("follow maps"),
        pieces,
    })
}

/// Pushes the arcs of node (`side`, `slot`) onto `out`; returns whether it escapes.
#[allow(clippy::too_many_arguments)]
fn node_arcs(
    table: &Table,
    deps: &dyn Probe,
    keys: &[u64],
    won: &(dyn Fn(Value) -> bool + Sync),
    pos: &mut SlotPosition,
    side: Color,
    slot: u64,
    mut follow_of: impl FnMut(Move, u64) -> u16,
    out: &mut Vec<Arc>,
) -> Result<bool, Box<VerifyError>> {
    let size = table.index().size();
    let them = side.opponent();
    let next = table.codes(them);
    if !pos.load(slot, side) {
        return Ok(false);
    }
    let pos = &*pos;
    let board = &pos.board;
    let mut moves = MoveList::new();
    board.pseudo_moves(&mut moves);
    let mut classes: Option<Classifier> = None;
    let mut escapes = false;
    for &m in moves.iter() {
        let value = if board.is_empty(m.to()) {
            let q = pos.slot_after_move(m);
            let code = next[q as usize];
            if code == Value::ILLEGAL_CODE {
                continue;
            }
            if let Ok(n) = keys.binary_search(&entry(size, them, q)) {
                let classes = classes.get_or_insert_with(|| Classifier::new(board));
                let (class, chased) = match classes.class(m) {
                    MoveClass::Idle => (0, 0),
                    MoveClass::Check => (1, 0),
                    MoveClass::Chase(sq) => {
                        let mut bits = 0u16;
                        for s in sq.iter() {
                            bits |= 1 << pos.flat_at(s);
                        }
                        (2, bits)
                    }
                };
                out.push(Arc {
                    to: n as u32,
                    class,
                    chased,
                    follow: follow_of(m, q),
                });
                continue;
            }
            Value::decode(code)
        } else {
            let mut after = board.clone();
            after.make(m);
            match deps.probe(table.rules(), &after) {
                Ok(v) => v.as_exit(),
                Err(ProbeError::Illegal(_)) => continue,
                Err(e) => return Err(fail(table, side, slot, board, e.to_string())),
            }
        };
        escapes |= !won(value);
    }
    Ok(escapes)
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
            .map(|s| self.side(s / nv) == winner || !self.escapes[s / nv])
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
            .map(|i| self.side(i) == winner.opponent() && (0..nv).any(|v| y[i * nv + v]))
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
        // Extended states: (node, victim index, followed offender piece's flat position); when
        // pieces never change flat positions the followed piece is `cond` throughout.
        let moving = !self.follows.is_empty();
        let nu = if cond.is_some() && moving {
            self.pieces.len()
        } else {
            1
        };
        let flat_u = |u: usize| if nu == 1 { cond.unwrap_or(0) } else { u };
        let idx = |node: usize, v: usize, u: usize| (node * nv + v) * nu + u;
        let mut won = vec![false; n * nv * nu];
        let next_v = |a: &Arc, v: usize| -> Option<usize> {
            match victims[v] {
                None => Some(v),
                Some(f) => {
                    let g = self.follow(a, f);
                    victims.iter().position(|&x| x == Some(g))
                }
            }
        };
        let next_u = |a: &Arc, u: usize| if nu == 1 { 0 } else { self.follow(a, u) };
        loop {
            let mut changed = false;
            for node in 0..n {
                let arcs = self.arcs(node);
                let offender = self.side(node) != winner;
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
                                    Some(_) => !(a.class == 2 && a.chased & (1 << flat_u(u)) != 0),
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
                    Some(u) if nu > 1 => won[s * nu + u],
                    Some(_) => won[s],
                }
            })
            .collect()
    }
}

/// The entries (side-major) among both sides whose code `pick` accepts, in order.
fn entries_where(table: &Table, pick: impl Fn(u16) -> bool + Sync) -> Vec<u64> {
    let size = table.index().size();
    Color::ALL
        .iter()
        .flat_map(|&side| {
            let codes = table.codes(side);
            let pick = &pick;
            codes
                .par_chunks(crate::CHUNK_SLOTS as usize)
                .enumerate()
                .flat_map_iter(move |(c, chunk)| {
                    let base = c as u64 * crate::CHUNK_SLOTS;
                    chunk
                        .iter()
                        .enumerate()
                        .filter(|&(_, &code)| pick(code))
                        .map(move |(i, _)| entry(size, side, base + i as u64))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `nodes` (sorted entries) and the entries their quiet legal moves lead to that `pick`
/// accepts, sorted.
fn with_successors(table: &Table, nodes: &[u64], pick: impl Fn(u16) -> bool + Sync) -> Vec<u64> {
    let index = table.index();
    let size = index.size();
    let pieces = index.piece_list();
    let mut keys: Vec<u64> = nodes
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            let mut pos = SlotPosition::new(index, &pieces);
            let mut out = Vec::new();
            for &e in chunk {
                out.push(e);
                let (side, slot) = split(size, e);
                if !pos.load(slot, side) {
                    continue;
                }
                let next = table.codes(side.opponent());
                let (board, moves, slots) = pos.successors(|_| {});
                for (i, m) in moves.iter().enumerate() {
                    if board.is_empty(m.to()) && pick(next[slots[i]]) {
                        out.push(entry(size, side.opponent(), slots[i] as u64));
                    }
                }
            }
            out
        })
        .collect();
    keys.par_sort_unstable();
    keys.dedup();
    keys
}

/// The rule checks of an Asian table (see the module documentation); `forced_draws` are the
/// drawn entries (side-major) whose side to move the local pass found forced to offend.
pub(crate) fn check(
    table: &Table,
    deps: &dyn Probe,
    mut forced_draws: Vec<u64>,
) -> Result<(), Box<VerifyError>> {
    let index = table.index();
    let size = index.size();
    let decode_rule = |c: u16| match Value::decode(c) {
        Value::RuleLoss(r) | Value::RuleWin(r) => Some(r),
        _ => None,
    };
    let mut rounds: Vec<u8> = Color::ALL
        .iter()
        .flat_map(|&side| {
            table
                .codes(side)
                .par_iter()
                .filter_map(|&c| match Value::decode(c) {
                    Value::RuleLoss(r) if r.plies == 0 => Some(r.round),
                    _ => None,
                })
                .collect::<std::collections::BTreeSet<u8>>()
        })
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    for round in rounds {
        let terminal = |c: u16| matches!(Value::decode(c), Value::RuleLoss(r) if r.round == round && r.plies == 0);
        let terms = entries_where(table, terminal);
        // Nodes: the terminals and the positions of this round their quiet moves lead to.
        let keys = with_successors(
            table,
            &terms,
            |c| matches!(Value::decode(c), Value::RuleWin(r) if r.round == round),
        );
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
        for &e in &terms {
            let (side, slot) = split(size, e);
            let rule = decode_rule(table.codes(side)[slot as usize])
                .expect("a terminal")
                .rule;
            let node = net.node(side, slot).expect("a node");
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
    if forced_draws.is_empty() {
        return Ok(());
    }
    forced_draws.par_sort_unstable();
    let keys = with_successors(table, &forced_draws, |c| c == Value::DRAW_CODE);
    drop(forced_draws);
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
                let (side, slot) = split(size, net.keys[n]);
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
