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
use crate::position::{LEAVES, SlotPosition, prefetch};
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use xiangqi::repetition::{MoveClass, MoveClasses};
use xiangqi::{Board, Color, Move, MoveList, PieceKind, Square};
use xqtb_core::{MAX_PIECES, Probe, ProbeError, Rule, RuleValue, Table, Value};

/// Whether the side to move of `board` can only offend or lose, given that every legal move
/// leaving the table (or part), a capture or a pawn's step into another slice, loses for it:
/// every legal quiet move leads to a position lost for it, or is a move into a drawn position
/// that is a check (every one of them), or chases one piece common to all of them. `slots` and
/// `next` give the successors' codes of the moves that stay in the table (or part).
pub(crate) fn forced_to_offend(
    board: &Board,
    moves: &MoveList,
    slots: &[usize],
    next: &dyn Fn(usize) -> u16,
) -> bool {
    let mut checks = true;
    let mut chased = !0u128;
    // Moves are classified on a copy of the board (a classifier, with its own copy, cost more).
    let mut scratch = Board::default();
    let mut classes: Option<MoveClasses> = None;
    for (i, &m) in moves.iter().enumerate() {
        if slots[i] == LEAVES {
            continue;
        }
        let v = match Value::decode(next(slots[i])) {
            Value::Illegal => continue,
            v => v.for_mover(),
        };
        if v.is_loss() {
            continue;
        }
        if v != Value::Draw {
            return false;
        }
        let classes = classes.get_or_insert_with(|| {
            scratch.clone_from(board);
            MoveClasses::new(board.side_to_move())
        });
        match classes.class(&mut scratch, m) {
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

/// What the local pass of an Asian table gathers for the rule checks.
pub(crate) struct Findings {
    /// The drawn entries whose side to move is forced to offend.
    pub(crate) forced_draws: EntrySet,
    /// Per chunk of [`crate::CHUNK_SLOTS`] slots (both sides to move), the rounds with a
    /// position lost by rule 0 plies away there, a bit each: each round's check reads only the
    /// chunks holding its terminals (late rounds have few), not every code of the table.
    pub(crate) terminal_rounds: Vec<AtomicU32>,
}

impl Findings {
    /// Nothing yet, over a table of `size` slots per side.
    pub(crate) fn new(size: u64) -> Findings {
        Findings {
            forced_draws: EntrySet::new(size),
            terminal_rounds: (0..size.div_ceil(crate::CHUNK_SLOTS))
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }
}

// Every round has a bit.
const _: () = assert!(RuleValue::MAX_ROUND < 32);

/// A set of entries (side-major: Red's slots, then Black's), marked from many threads.
pub(crate) struct EntrySet {
    words: Vec<AtomicU64>,
}

impl EntrySet {
    /// The empty set over both sides of a table of `size` slots per side.
    pub(crate) fn new(size: u64) -> EntrySet {
        EntrySet {
            words: (0..(2 * size).div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Adds entry `e`.
    pub(crate) fn insert(&self, e: u64) {
        self.words[(e / 64) as usize].fetch_or(1 << (e % 64), Relaxed);
    }

    /// Adds every entry of `other`.
    fn union(&self, other: EntrySet) {
        self.words.par_iter().zip(other.words).for_each(|(w, o)| {
            w.fetch_or(o.into_inner(), Relaxed);
        });
    }

    fn is_empty(&self) -> bool {
        self.words.par_iter().all(|w| w.load(Relaxed) == 0)
    }

    /// The entries in order, by chunks of words processed in parallel.
    fn par_entries(&self) -> impl ParallelIterator<Item = Vec<u64>> + '_ {
        self.words
            .par_chunks(WORDS_PER_SCAN)
            .enumerate()
            .map(|(c, words)| {
                let mut out = Vec::new();
                for (i, w) in words.iter().enumerate() {
                    let base = ((c * WORDS_PER_SCAN + i) * 64) as u64;
                    let mut w = w.load(Relaxed);
                    while w != 0 {
                        out.push(base + w.trailing_zeros() as u64);
                        w &= w - 1;
                    }
                }
                out
            })
    }

    /// The set numbered: node `n` is its `n`-th entry in order.
    fn into_nodes(self) -> Nodes {
        let words: Vec<u64> = self.words.into_iter().map(AtomicU64::into_inner).collect();
        let mut blocks = Vec::with_capacity(words.len().div_ceil(WORDS_PER_BLOCK));
        let mut len = 0u32;
        for block in words.chunks(WORDS_PER_BLOCK) {
            blocks.push(len);
            len += block.iter().map(|w| w.count_ones()).sum::<u32>();
        }
        Nodes {
            words,
            blocks,
            len: len as usize,
        }
    }
}

/// Chunks of the parallel scans of an [`EntrySet`].
const WORDS_PER_SCAN: usize = 1 << 12;
/// Words per rank block of [`Nodes`].
const WORDS_PER_BLOCK: usize = 8;

/// A numbered set of entries: a bitset with the rank before each block of words.
struct Nodes {
    words: Vec<u64>,
    blocks: Vec<u32>,
    len: usize,
}

impl Nodes {
    /// The number of entry `e`, if it is in the set.
    fn rank(&self, e: u64) -> Option<usize> {
        let w = (e / 64) as usize;
        let bit = 1u64 << (e % 64);
        if self.words[w] & bit == 0 {
            return None;
        }
        let b = w / WORDS_PER_BLOCK;
        let before: u32 = self.words[b * WORDS_PER_BLOCK..w]
            .iter()
            .map(|w| w.count_ones())
            .sum();
        Some((self.blocks[b] + before + (self.words[w] & (bit - 1)).count_ones()) as usize)
    }

    /// The entries from node `n` on, in order.
    fn entries_from(&self, n: usize) -> impl Iterator<Item = u64> + '_ {
        let b = self.blocks.partition_point(|&r| r as usize <= n).max(1) - 1;
        let mut skip = n - self.blocks[b] as usize;
        let first = b * WORDS_PER_BLOCK;
        self.words[first..]
            .iter()
            .enumerate()
            .flat_map(move |(i, &w)| {
                let base = ((first + i) * 64) as u64;
                let mut w = w;
                std::iter::from_fn(move || {
                    (w != 0).then(|| {
                        let e = base + w.trailing_zeros() as u64;
                        w &= w - 1;
                        e
                    })
                })
            })
            .skip_while(move |_| {
                let s = skip > 0;
                skip = skip.saturating_sub(1);
                s
            })
    }
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

/// Follow maps an arc can name (14 bits).
const MAX_FOLLOWS: usize = (1 << 14) - 1;

impl Arc {
    fn pack(self) -> u64 {
        self.to as u64
            | (self.class as u64) << 32
            | (self.chased as u64) << 34
            | (self.follow as u64) << 50
    }

    fn unpack(a: u64) -> Arc {
        Arc {
            to: a as u32,
            class: (a >> 32) as u8 & 3,
            chased: (a >> 34) as u16,
            follow: (a >> 50) as u16,
        }
    }
}

/// Nodes per [`Part`] of the graph.
const PART_NODES: usize = 1 << 12;

/// The arcs of [`PART_NODES`] consecutive nodes, built together (parts are never concatenated,
/// so the graph's peak memory is its size, not twice that).
struct Part {
    /// Where each node's arcs end.
    ends: Vec<u32>,
    arcs: Vec<u64>,
    /// Whether the side to move has a move out of the set that does not lose for it.
    escapes: Vec<bool>,
}

/// The positions a check works on, with their moves inside the set. Moves out of the set only
/// matter to the offender: one that does not lose for it is an escape.
struct Net {
    nodes: Nodes,
    /// Nodes with Red to move (they come first).
    red: usize,
    parts: Vec<Part>,
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
    fn len(&self) -> usize {
        self.nodes.len
    }

    fn side(&self, n: usize) -> Color {
        if n < self.red {
            Color::Red
        } else {
            Color::Black
        }
    }

    /// The entry of node `n`.
    fn entry_of(&self, n: usize) -> u64 {
        self.nodes.entries_from(n).next().expect("a node")
    }

    fn escapes(&self, n: usize) -> bool {
        self.parts[n / PART_NODES].escapes[n % PART_NODES]
    }

    fn arcs(&self, n: usize) -> impl Iterator<Item = Arc> + Clone + '_ {
        let part = &self.parts[n / PART_NODES];
        let i = n % PART_NODES;
        let from = if i == 0 { 0 } else { part.ends[i - 1] as usize };
        part.arcs[from..part.ends[i] as usize]
            .iter()
            .map(|&a| Arc::unpack(a))
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

/// Builds the graph over `nodes`: for each node its quiet moves into another node, with their
/// classes, and whether it has a move out of the set that does not lose for its mover. `won`
/// says whether a position out of the set is won for its side to move, so that the move into it
/// loses for the mover.
fn build(
    table: &Table,
    deps: &dyn Probe,
    nodes: Nodes,
    won: &(dyn Fn(Value) -> bool + Sync),
) -> Result<Net, Box<VerifyError>> {
    let index = table.index();
    let size = table.slots().len();
    let start = table.slots().start;
    let pieces = index.piece_list();
    let identical = (1..pieces.len()).any(|i| pieces[i] == pieces[i - 1]);
    let follows = Mutex::new(Vec::<[u8; MAX_PIECES]>::new());
    let parts: Vec<Part> = (0..nodes.len.div_ceil(PART_NODES))
        .into_par_iter()
        .map(|p| {
            let mut pos = SlotPosition::new(index, &pieces, table.slots());
            let count = PART_NODES.min(nodes.len - p * PART_NODES);
            let mut part = Part {
                ends: Vec::with_capacity(count),
                arcs: Vec::new(),
                escapes: Vec::with_capacity(count),
            };
            for e in nodes.entries_from(p * PART_NODES).take(count) {
                let (side, slot) = split(size, e);
                let mut src = [0u8; MAX_PIECES];
                if identical {
                    index.decode(start + slot, &mut src);
                }
                let follow_of = |m: Move, q: u64| -> Result<u16, Box<VerifyError>> {
                    if !identical {
                        return Ok(0);
                    }
                    let mut dst = [0u8; MAX_PIECES];
                    index.decode(start + q, &mut dst);
                    let f = follow(&pieces, &src, &dst, m);
                    if (0..pieces.len()).all(|i| f[i] as usize == i) {
                        return Ok(0);
                    }
                    let mut all = follows.lock().expect("follow maps");
                    let k = match all.iter().position(|x| *x == f) {
                        Some(k) => k,
                        None if all.len() < MAX_FOLLOWS => {
                            all.push(f);
                            all.len() - 1
                        }
                        None => {
                            return Err(fail_at(
                                table,
                                side,
                                slot,
                                "too many ways of following identical pieces".into(),
                            ));
                        }
                    };
                    Ok(k as u16 + 1)
                };
                let escapes = node_arcs(
                    table,
                    deps,
                    &nodes,
                    won,
                    &mut pos,
                    side,
                    slot,
                    follow_of,
                    &mut part.arcs,
                )?;
                part.ends.push(part.arcs.len() as u32);
                part.escapes.push(escapes);
            }
            part.arcs.shrink_to_fit();
            Ok(part)
        })
        .collect::<Result<_, Box<VerifyError>>>()?;
    let red = nodes.entries_from(0).take_while(|&e| e < size).count();
    Ok(Net {
        nodes,
        red,
        parts,
        follows: follows.into_inner().expect("follow maps"),
        pieces,
    })
}

/// [`fail`] at an entry (of job slot `slot`) known to hold a legal position.
fn fail_at(table: &Table, side: Color, slot: u64, why: String) -> Box<VerifyError> {
    let board = table
        .index()
        .board(table.slots().start + slot, side)
        .expect("a legal slot");
    fail(table, side, slot, &board, why)
}

/// Pushes the arcs of node (`side`, `slot`) onto `out`; returns whether it escapes.
#[allow(clippy::too_many_arguments)]
fn node_arcs(
    table: &Table,
    deps: &dyn Probe,
    nodes: &Nodes,
    won: &(dyn Fn(Value) -> bool + Sync),
    pos: &mut SlotPosition,
    side: Color,
    slot: u64,
    mut follow_of: impl FnMut(Move, u64) -> Result<u16, Box<VerifyError>>,
    out: &mut Vec<u64>,
) -> Result<bool, Box<VerifyError>> {
    let size = table.slots().len();
    let them = side.opponent();
    let next = table.codes(them);
    if !pos.load(slot, side) {
        return Ok(false);
    }
    // Every move is looked at: their successors' codes are fetched all at once.
    pos.successors(|q| prefetch(&next[q]));
    let pos = &*pos;
    let board = &pos.board;
    let (moves, slots) = pos.last_successors();
    // Moves are classified on a copy of the board (a classifier, with its own copy, cost more).
    let mut scratch = Board::default();
    let mut classes: Option<MoveClasses> = None;
    // Moves out of the set are looked at only until one escapes, the captures (a probe each)
    // after the quiet moves.
    let mut escapes = false;
    let mut leaving = false;
    for (&m, &q) in moves.iter().zip(slots) {
        if q == LEAVES {
            leaving = true;
            continue;
        }
        let q = q as u64;
        let code = next[q as usize];
        if code == Value::ILLEGAL_CODE {
            continue;
        }
        if let Some(n) = nodes.rank(entry(size, them, q)) {
            let classes = classes.get_or_insert_with(|| {
                scratch.clone_from(board);
                MoveClasses::new(side)
            });
            let (class, chased) = match classes.class(&mut scratch, m) {
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
            out.push(
                Arc {
                    to: n as u32,
                    class,
                    chased,
                    follow: follow_of(m, q)?,
                }
                .pack(),
            );
            continue;
        }
        escapes = escapes || !won(Value::decode(code));
    }
    if escapes || !leaving {
        return Ok(escapes);
    }
    let mut after = board.clone();
    for (&m, &q) in moves.iter().zip(slots) {
        if q != LEAVES {
            continue;
        }
        let captured = after.make(m);
        let value = deps.probe(table.rules(), &after);
        after.unmake(m, captured);
        match value {
            Ok(v) if !won(v.as_exit()) => return Ok(true),
            Ok(_) | Err(ProbeError::Illegal(_)) => {}
            Err(e) => return Err(fail(table, side, slot, board, e.to_string())),
        }
    }
    Ok(false)
}

/// A failure at job slot `slot` of `table`.
fn fail(table: &Table, side: Color, slot: u64, board: &Board, why: String) -> Box<VerifyError> {
    let slot = table.slots().start + slot;
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
        let n = self.len();
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
            .map(|s| self.side(s / nv) == winner || !self.escapes(s / nv))
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
        let n = self.len();
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
                            arcs.clone().any(|a| {
                                let Some(v2) = next_v(&a, v) else {
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
                                good || won[idx(t, v2, next_u(&a, u))]
                            })
                        } else {
                            !self.escapes(node)
                                && arcs.clone().next().is_some()
                                && arcs.clone().all(|a| {
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
                                    let Some(v2) = next_v(&a, v) else {
                                        return false;
                                    };
                                    let t = a.to as usize;
                                    y[t * nv + v2] && won[idx(t, v2, next_u(&a, u))]
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

/// Adds to `out` the entries the quiet legal moves of entry `e` lead to whose code `pick`
/// accepts, setting `e` up in `pos`.
fn insert_successors(
    table: &Table,
    pos: &mut SlotPosition,
    out: &EntrySet,
    e: u64,
    pick: &(impl Fn(u16) -> bool + ?Sized),
) {
    let size = table.slots().len();
    let (side, slot) = split(size, e);
    if !pos.load(slot, side) {
        return;
    }
    let next = table.codes(side.opponent());
    let (_, _, slots) = pos.successors(|_| {});
    for &q in slots {
        if q != LEAVES && pick(next[q]) {
            out.insert(entry(size, side.opponent(), q as u64));
        }
    }
}

/// Adds to `set` the entries its entries' quiet legal moves lead to whose code `pick` accepts.
fn add_successors(table: &Table, set: &EntrySet, pick: &(dyn Fn(u16) -> bool + Sync)) {
    let pieces = table.index().piece_list();
    // Successors go to a set of their own, so that they are not visited in turn.
    let found = EntrySet::new(table.slots().len());
    set.par_entries().for_each(|entries| {
        let mut pos = SlotPosition::new(table.index(), &pieces, table.slots());
        for e in entries {
            insert_successors(table, &mut pos, &found, e, pick);
        }
    });
    set.union(found);
}

/// Adds to `set` the entries whose code `seeds` accepts, in the chunks of [`crate::CHUNK_SLOTS`]
/// slots `in_chunk` names, and the entries their quiet legal moves lead to whose code `pick`
/// accepts. Generic rather than over `dyn Fn`: `seeds` is asked about every code of those chunks.
fn add_seeds_and_successors<S, P>(
    table: &Table,
    set: &EntrySet,
    in_chunk: &(dyn Fn(usize) -> bool + Sync),
    seeds: &S,
    pick: &P,
) where
    S: Fn(u16) -> bool + Sync,
    P: Fn(u16) -> bool + Sync,
{
    let size = table.slots().len();
    let pieces = table.index().piece_list();
    for side in Color::ALL {
        table
            .codes(side)
            .par_chunks(crate::CHUNK_SLOTS as usize)
            .enumerate()
            .filter(|&(c, _)| in_chunk(c))
            .for_each(|(c, chunk)| {
                let mut pos = SlotPosition::new(table.index(), &pieces, table.slots());
                let base = c as u64 * crate::CHUNK_SLOTS;
                for (i, &code) in chunk.iter().enumerate() {
                    if seeds(code) {
                        let e = entry(size, side, base + i as u64);
                        set.insert(e);
                        insert_successors(table, &mut pos, set, e, pick);
                    }
                }
            });
    }
}

/// The rule checks of an Asian table (see the module documentation), from what its local pass
/// found. The draws are checked first: their set is then freed before the rounds' graphs are
/// built, which keeps the verifier's peak memory a set lower.
pub(crate) fn check(
    table: &Table,
    deps: &dyn Probe,
    found: Findings,
) -> Result<(), Box<VerifyError>> {
    let Findings {
        forced_draws,
        terminal_rounds,
    } = found;
    no_trap_among_draws(table, deps, forced_draws)?;
    let terminal_rounds: Vec<u32> = terminal_rounds
        .into_iter()
        .map(AtomicU32::into_inner)
        .collect();
    let all = terminal_rounds.iter().fold(0, |a, &r| a | r);
    for round in (0..=RuleValue::MAX_ROUND).filter(|r| all >> r & 1 != 0) {
        let in_chunk = |c: usize| terminal_rounds[c] >> round & 1 != 0;
        terminals_trapped(table, deps, round, &in_chunk)?;
    }
    Ok(())
}

/// Check 1 for `round`: its terminals and the positions their offences lead to form a trap.
/// `in_chunk` names the chunks of [`crate::CHUNK_SLOTS`] slots that hold its terminals.
fn terminals_trapped(
    table: &Table,
    deps: &dyn Probe,
    round: u8,
    in_chunk: &(dyn Fn(usize) -> bool + Sync),
) -> Result<(), Box<VerifyError>> {
    let size = table.slots().len();
    // The round's two terminal codes, compared with every code of the chunks holding its
    // terminals (decoding each one would cost more than the rest of the scan).
    let terminals = [Rule::PerpetualCheck, Rule::PerpetualChase].map(|rule| {
        Value::RuleLoss(RuleValue {
            rule,
            round,
            plies: 0,
        })
        .encode()
    });
    let terminal = |c: u16| -> Option<Rule> {
        if c == terminals[0] {
            Some(Rule::PerpetualCheck)
        } else if c == terminals[1] {
            Some(Rule::PerpetualChase)
        } else {
            None
        }
    };
    // Nodes: the terminals and the positions of this round their quiet moves lead to.
    let set = EntrySet::new(size);
    add_seeds_and_successors(
        table,
        &set,
        in_chunk,
        &|c| terminal(c).is_some(),
        &|c| matches!(Value::decode(c), Value::RuleWin(r) if r.round == round),
    );
    // Out of the graph, an offender's move loses when it leads to a position decided before
    // this round as won for the side to move there.
    let before_round = |v: Value| match v {
        Value::Win(_) => true,
        Value::RuleWin(r) => r.round < round,
        _ => false,
    };
    let t0 = std::time::Instant::now();
    let net = build(table, deps, set.into_nodes(), &before_round)?;
    tracing::debug!(
        round,
        nodes = net.len(),
        secs = t0.elapsed().as_secs_f64(),
        "rule check graph"
    );
    // The trapped sets, by winner and rule, computed when a terminal first asks for one.
    let mut trapped: [[Option<Vec<bool>>; 2]; 2] = Default::default();
    let mut is_trapped = |winner: Color, rule: Rule, node: usize| {
        trapped[winner.index()][rule as usize].get_or_insert_with(|| net.trapped(winner, rule))
            [node]
    };
    for (node, e) in net.nodes.entries_from(0).enumerate() {
        let (side, slot) = split(size, e);
        let Some(rule) = terminal(table.codes(side)[slot as usize]) else {
            continue;
        };
        let winner = side.opponent();
        let check = is_trapped(winner, Rule::PerpetualCheck, node);
        let ok = match rule {
            Rule::PerpetualCheck => check,
            Rule::PerpetualChase => !check && is_trapped(winner, Rule::PerpetualChase, node),
        };
        if !ok {
            return Err(fail_at(
                table,
                side,
                slot,
                format!(
                    "stored as lost by {} in round {round}, but the positions around it do not trap it",
                    rule.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Check 2: no trap among the drawn positions whose side to move can only offend or lose.
fn no_trap_among_draws(
    table: &Table,
    deps: &dyn Probe,
    forced_draws: EntrySet,
) -> Result<(), Box<VerifyError>> {
    let size = table.slots().len();
    if forced_draws.is_empty() {
        return Ok(());
    }
    add_successors(table, &forced_draws, &|c| c == Value::DRAW_CODE);
    let won = |v: Value| v.is_win();
    let t0 = std::time::Instant::now();
    let net = build(table, deps, forced_draws.into_nodes(), &won)?;
    tracing::debug!(
        nodes = net.len(),
        secs = t0.elapsed().as_secs_f64(),
        "draw check graph"
    );
    for winner in Color::ALL {
        for rule in [Rule::PerpetualCheck, Rule::PerpetualChase] {
            if let Some(n) = net.trapped(winner, rule).iter().position(|&t| t) {
                let (side, slot) = split(size, net.entry_of(n));
                return Err(fail_at(
                    table,
                    side,
                    slot,
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
