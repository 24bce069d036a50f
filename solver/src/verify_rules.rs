//! The verifier's checks of rule-decided values (Asian rule set), written apart from the solver's
//! rule phase and rule engine: it shares only the rules crate's move classification and the
//! index with them, follows pieces by their squares, and finds its fixed points by forward
//! sweeps (no un-moves, no predecessor lists).
//!
//! The local pass of [`crate::verify`] checks every value against its successors, except the
//! positions stored as lost by rule 0 plies away (*terminals*): their value comes from the rule.
//! Of a terminal it checks only that every legal move leaving the table loses to a position
//! won before its round, and of a draw whose side to move is forced to offend that every such
//! move loses: the checks below take those moves of their seeds as settled.
//! What is left to show:
//! 1. **Every terminal really is trapped.** For each round `k`, the terminals of round `k` and the
//!    positions their offences lead to must form a trap against the positions decided before round
//!    `k` (mates and earlier rounds): each terminal's every move loses outright or is an offence (a
//!    check, or a chase of one followed piece, a check that chases it included) into the trap, and
//!    the other side can keep it there while making infinitely many moves that are not checks (and,
//!    for chases, for every piece of the offender, infinitely many moves that do not chase it).
//!    Then the offender can only offend for ever, or step into a position already lost for it.
//! 2. **No trap was missed.** Among the drawn positions, those whose side to move can only offend
//!    or lose must contain no trap against all decided positions; otherwise some draw is a loss.
//!
//! Together with the local pass (decided values are well-founded: rule values count plies down
//! to terminals of the same round, terminals rest on earlier rounds), every stored value is then
//! the value of the game defined in `docs/repetition-rules.md`.
//!
//! These checks run after the local pass has accepted every entry, so the table's illegal marks
//! can be trusted to tell illegal moves.
//!
//! They read the table's codes through a reader per thread ([`Checked`]): the decoded table, or
//! its encoded blocks through the verifier's cache ([`crate::verify_blocks`]). Each pass reads
//! the slots in order, a chunk at a time, and a position's successors near it, as the local
//! pass does; but each round's passes go over the table again, so read from blocks through a
//! cache smaller than the table they decode most blocks anew every time: more processor time,
//! for not holding the table. What they build (the node sets and the graphs) is held whole
//! either way.

use crate::error::VerifyError;
use crate::position::{LEAVES, SlotPosition};
use crate::table_codes::{Codes, Readers};
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use xiangqi::repetition::{MoveClasses, gives_check};
use xiangqi::{Board, Color, Move, MoveList, PieceKind, Square};
use xqtb_core::{
    MAX_PIECES, MoveReading, Probe, ProbeError, Rule, RuleValue, SlotRange, TableIndex, Value,
};

/// Whether the side to move of `board` can only offend or lose, given that every legal move
/// leaving the table (or part), a capture or a pawn's step into another slice, loses for it:
/// every legal quiet move leads to a position lost for it, or is a move into a drawn position
/// that is a check (every one of them), or chases one piece common to all of them (checks that
/// chase it included). `slots` and `next` give the successors' codes of the moves that stay in
/// the table (or part).
pub(crate) fn forced_to_offend(
    board: &Board,
    moves: &MoveList,
    slots: &[usize],
    next: &dyn Fn(usize) -> u16,
) -> bool {
    // Whether every move into a drawn position so far is a check, and the pieces every one
    // chases. While all are checks the side is forced whatever they chase: their chases are
    // read only once a move that is no check turns up (`checks_only` holds them till then).
    let mut checks = true;
    let mut chased = !0u128;
    let mut checks_only = MoveList::new();
    // Moves are classified on a copy of the board, made when a move first needs it (a
    // `Classifier`, with a board of its own, costs more).
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
        if checks && gives_check(&mut scratch, m) {
            checks_only.push(m);
            continue;
        }
        if checks {
            checks = false;
            for &c in checks_only.iter() {
                chased &= classes.class(&mut scratch, c).chased.0;
            }
        }
        chased &= classes.class(&mut scratch, m).chased.0;
        if chased == 0 {
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

    /// The entries from `lo` up to `hi` (exclusive), in order.
    fn entries_in(&self, lo: u64, hi: u64) -> impl Iterator<Item = u64> + '_ {
        bits_in(lo, hi, move |w| self.words[w].load(Relaxed))
    }

    fn is_empty(&self) -> bool {
        self.words.par_iter().all(|w| w.load(Relaxed) == 0)
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

/// The set bits from `lo` up to `hi` (exclusive) of a bitset whose word `w` is `word(w)`, in
/// order.
fn bits_in(lo: u64, hi: u64, word: impl Fn(usize) -> u64) -> impl Iterator<Item = u64> {
    let words = (lo / 64) as usize..hi.div_ceil(64) as usize;
    words.flat_map(move |w| {
        let base = w as u64 * 64;
        let mut x = word(w);
        // Bits before `lo` and from `hi` on are not in the range.
        if base < lo {
            x &= !0u64 << (lo - base);
        }
        if base + 64 > hi {
            x &= (1u64 << (hi - base)) - 1;
        }
        std::iter::from_fn(move || {
            (x != 0).then(|| {
                let e = base + x.trailing_zeros() as u64;
                x &= x - 1;
                e
            })
        })
    })
}

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
        let in_set = self.words[(e / 64) as usize] >> (e % 64) & 1 != 0;
        in_set.then(|| self.count_before(e))
    }

    /// The number of nodes whose entry is below `e` (at most the number of entries).
    fn count_before(&self, e: u64) -> usize {
        let w = (e / 64) as usize;
        if w >= self.words.len() {
            return self.len;
        }
        let b = w / WORDS_PER_BLOCK;
        let before: u32 = self.words[b * WORDS_PER_BLOCK..w]
            .iter()
            .map(|w| w.count_ones())
            .sum();
        let bit = 1u64 << (e % 64);
        (self.blocks[b] + before + (self.words[w] & (bit - 1)).count_ones()) as usize
    }

    /// The entries from `lo` up to `hi` (exclusive) that are nodes, in order.
    fn entries_in(&self, lo: u64, hi: u64) -> impl Iterator<Item = u64> + '_ {
        bits_in(lo, hi, move |w| self.words[w])
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
    /// The move checks.
    check: bool,
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
            | (self.check as u64) << 32
            | (self.chased as u64) << 34
            | (self.follow as u64) << 50
    }

    fn unpack(a: u64) -> Arc {
        Arc {
            to: a as u32,
            check: (a >> 32) & 1 != 0,
            chased: (a >> 34) as u16,
            follow: (a >> 50) as u16,
        }
    }
}

/// The arcs of the nodes of one chunk of [`crate::CHUNK_SLOTS`] slots of one side, built
/// together (groups are never concatenated, so the graph's peak memory is its size, not twice
/// that).
struct Group {
    /// The group's first node.
    first: u32,
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
    /// The groups that hold nodes, in order.
    groups: Vec<Group>,
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

    /// Every node in order with its arcs and whether it escapes (the sweeps read the nodes in
    /// order, group by group: no lookup of a node's group).
    fn each_node(
        &self,
    ) -> impl Iterator<Item = (usize, impl Iterator<Item = Arc> + Clone + '_, bool)> + '_ {
        self.groups.iter().flat_map(|group| {
            (0..group.ends.len()).map(move |i| {
                let from = if i == 0 {
                    0
                } else {
                    group.ends[i - 1] as usize
                };
                let arcs = group.arcs[from..group.ends[i] as usize]
                    .iter()
                    .map(|&a| Arc::unpack(a));
                (group.first as usize + i, arcs, group.escapes[i])
            })
        })
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

/// The table (or part) the rule checks verify: its index and the slots it holds, its codes read
/// through a reader per thread that `readers` makes (the decoded table itself, or a reader of
/// its encoded blocks through a shared cache: the checks never need the table whole).
pub(crate) struct Checked<'a, R> {
    pub(crate) index: &'a TableIndex,
    pub(crate) slots: SlotRange,
    pub(crate) readers: &'a R,
}

impl<R: Readers> Checked<'_, R> {
    /// A position of the table for one thread.
    fn position<'p>(&'p self, pieces: &'p [xiangqi::Piece]) -> SlotPosition<'p> {
        SlotPosition::new(self.index, pieces, self.slots)
    }
}

/// The follow maps of a graph's arcs (see [`Net::follows`]), gathered from many threads.
struct Follows<'a> {
    index: &'a TableIndex,
    slots: SlotRange,
    pieces: &'a [xiangqi::Piece],
    /// Whether the table has identical pieces (else every arc keeps flat positions).
    identical: bool,
    maps: Mutex<Vec<[u8; MAX_PIECES]>>,
}

impl<'a> Follows<'a> {
    fn new(index: &'a TableIndex, slots: SlotRange, pieces: &'a [xiangqi::Piece]) -> Follows<'a> {
        Follows {
            index,
            slots,
            pieces,
            identical: (1..pieces.len()).any(|i| pieces[i] == pieces[i - 1]),
            maps: Mutex::new(Vec::new()),
        }
    }

    /// The follow field of the arc of move `m` from job slot `slot` (`side` to move, stored
    /// placement `src`) into job slot `q`; `codes` reads the table's codes (for a failure's
    /// report).
    fn of<C: Codes>(
        &self,
        codes: &C,
        side: Color,
        slot: u64,
        src: &[u8; MAX_PIECES],
        m: Move,
        q: u64,
    ) -> Result<u16, Box<VerifyError>> {
        if !self.identical {
            return Ok(0);
        }
        let mut dst = [0u8; MAX_PIECES];
        self.index.decode(self.slots.start + q, &mut dst);
        let f = follow(self.pieces, src, &dst, m);
        if (0..self.pieces.len()).all(|i| f[i] as usize == i) {
            return Ok(0);
        }
        let mut all = self.maps.lock().expect("follow maps");
        let k = match all.iter().position(|x| *x == f) {
            Some(k) => k,
            None if all.len() < MAX_FOLLOWS => {
                all.push(f);
                all.len() - 1
            }
            None => {
                return Err(fail_at(
                    codes,
                    side,
                    slot,
                    "too many ways of following identical pieces".into(),
                ));
            }
        };
        Ok(k as u16 + 1)
    }
    /// Pushes the arcs of node (`side`, `slot`) onto `out`; returns whether it escapes. `target`
    /// gives, for a legal successor's job slot and code, the arc's target when the successor is a
    /// node of the set. Arcs carry their follow fields. `leaving_lose`: the local pass has shown
    /// that every legal move leaving the table loses for the mover (a seed: a terminal, or a draw
    /// forced to offend), so those moves are not probed. `codes` reads the table's codes.
    #[allow(clippy::too_many_arguments)]
    fn node_arcs<C: Codes>(
        &self,
        codes: &C,
        deps: &dyn Probe,
        won: &(dyn Fn(Value) -> bool + Sync),
        pos: &mut SlotPosition,
        side: Color,
        slot: u64,
        mut target: impl FnMut(u64, u16) -> Option<u32>,
        leaving_lose: bool,
        out: &mut Vec<u64>,
    ) -> Result<bool, Box<VerifyError>> {
        let mut src = [0u8; MAX_PIECES];
        if self.identical {
            self.index.decode(self.slots.start + slot, &mut src);
        }
        let them = side.opponent();
        if !pos.load(slot, side) {
            return Ok(false);
        }
        // Every move is looked at: their successors' codes are fetched all at once.
        pos.successors(|q| codes.prefetch(them, q as u64));
        let pos = &*pos;
        let board = &pos.board;
        let (moves, slots) = pos.last_successors();
        // Moves are classified on a copy of the board, made when a move first needs it (a
        // `Classifier`, with a board of its own, costs more).
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
            let code = codes.code(them, q);
            if code == Value::ILLEGAL_CODE {
                continue;
            }
            if let Some(to) = target(q, code) {
                let classes = classes.get_or_insert_with(|| {
                    scratch.clone_from(board);
                    MoveClasses::new(side)
                });
                let class = classes.class(&mut scratch, m);
                let mut chased = 0u16;
                for s in class.chased.iter() {
                    chased |= 1 << pos.flat_at(s);
                }
                out.push(
                    Arc {
                        to,
                        check: class.check,
                        chased,
                        follow: self.of(codes, side, slot, &src, m, q)?,
                    }
                    .pack(),
                );
                continue;
            }
            escapes = escapes || !won(Value::decode(code));
        }
        if escapes || !leaving || leaving_lose {
            return Ok(escapes);
        }
        let mut after = board.clone();
        for (&m, &q) in moves.iter().zip(slots) {
            if q != LEAVES {
                continue;
            }
            let captured = after.make(m);
            let value = deps.probe(codes.rules(), &after);
            after.unmake(m, captured);
            match value {
                Ok(v) if !won(MoveReading::leaving(v)) => return Ok(true),
                Ok(_) | Err(ProbeError::Illegal(_)) => {}
                Err(e) => return Err(fail(codes, side, slot, board, e.to_string())),
            }
        }
        Ok(false)
    }
}

/// The arcs of the seeds of a node set (a round's terminals, or the forced draws) in one chunk
/// of [`crate::CHUNK_SLOTS`] slots of one side, found while the set is gathered, so that a
/// seed's moves are generated once rather than again in a second pass over the seeds when the
/// graph is built: the seeds' job slots in order, each with its arcs and whether it escapes.
/// Until the set is numbered an arc's target is the successor's job slot.
#[derive(Default)]
struct SeedArcs {
    slots: Vec<u32>,
    ends: Vec<u32>,
    arcs: Vec<u64>,
    escapes: Vec<bool>,
}

impl SeedArcs {
    /// `None` for a chunk without seeds; the vectors trimmed to their length (all of a check's
    /// seeds are held until the graph is built).
    fn finish(mut self) -> Option<SeedArcs> {
        if self.slots.is_empty() {
            return None;
        }
        self.slots.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.arcs.shrink_to_fit();
        self.escapes.shrink_to_fit();
        Some(self)
    }
}

/// The chunks of [`crate::CHUNK_SLOTS`] slots per side of a table of `size` slots per side.
fn chunks_of(size: u64) -> usize {
    size.div_ceil(crate::CHUNK_SLOTS) as usize
}

/// The side and the range of job slots of group `g` (chunks of Red's slots, then of Black's).
fn group_slots(size: u64, g: usize) -> (Color, std::ops::Range<u64>) {
    let chunks = chunks_of(size);
    let side = if g < chunks { Color::Red } else { Color::Black };
    let start = (g % chunks) as u64 * crate::CHUNK_SLOTS;
    (side, start..(start + crate::CHUNK_SLOTS).min(size))
}

/// Builds the graph over `nodes`: for each node its quiet moves into another node, with their
/// classes, and whether it has a move out of the set that does not lose for its mover. `won`
/// says whether a position out of the set is won for its side to move, so that the move into it
/// loses for the mover. The arcs of the seeds in `seeds` (one entry per chunk of each side, see
/// [`group_slots`]) are taken from there, each chunk's freed as its group is built.
fn build<R: Readers>(
    table: &Checked<R>,
    deps: &dyn Probe,
    nodes: Nodes,
    won: &(dyn Fn(Value) -> bool + Sync),
    seeds: Vec<Option<SeedArcs>>,
    follows: Follows,
) -> Result<Net, Box<VerifyError>> {
    let size = table.slots.len();
    assert_eq!(seeds.len(), 2 * chunks_of(size), "seed arcs per chunk");
    let groups: Vec<Group> = seeds
        .into_par_iter()
        .enumerate()
        .map_init(
            || (table.position(follows.pieces), table.readers.reader()),
            |(pos, codes), (g, seed)| {
                let (side, slots) = group_slots(size, g);
                let them = side.opponent();
                let (lo, hi) = (entry(size, side, slots.start), entry(size, side, slots.end));
                let mut group = Group {
                    first: nodes.count_before(lo) as u32,
                    ends: Vec::new(),
                    arcs: Vec::new(),
                    escapes: Vec::new(),
                };
                let mut next_seed = 0;
                for e in nodes.entries_in(lo, hi) {
                    let slot = e - lo + slots.start;
                    let recorded = seed
                        .as_ref()
                        .filter(|c| c.slots.get(next_seed) == Some(&(slot as u32)));
                    let escapes = match recorded {
                        Some(c) => {
                            let i = next_seed;
                            next_seed += 1;
                            let from = if i == 0 { 0 } else { c.ends[i - 1] as usize };
                            for &a in &c.arcs[from..c.ends[i] as usize] {
                                let mut arc = Arc::unpack(a);
                                arc.to = nodes
                                    .rank(entry(size, them, arc.to as u64))
                                    .expect("a seed's move into the set leads to a node")
                                    as u32;
                                group.arcs.push(arc.pack());
                            }
                            c.escapes[i]
                        }
                        None => follows.node_arcs(
                            &*codes,
                            deps,
                            won,
                            pos,
                            side,
                            slot,
                            |q, _| nodes.rank(entry(size, them, q)).map(|n| n as u32),
                            false,
                            &mut group.arcs,
                        )?,
                    };
                    group.ends.push(group.arcs.len() as u32);
                    group.escapes.push(escapes);
                }
                debug_assert!(seed.as_ref().is_none_or(|c| next_seed == c.slots.len()));
                group.ends.shrink_to_fit();
                group.arcs.shrink_to_fit();
                group.escapes.shrink_to_fit();
                Ok(group)
            },
        )
        .filter(|g| g.as_ref().map_or(true, |g| !g.ends.is_empty()))
        .collect::<Result<_, Box<VerifyError>>>()?;
    Ok(Net {
        red: nodes.count_before(size),
        nodes,
        groups,
        follows: follows.maps.into_inner().expect("follow maps"),
        pieces: follows.pieces.to_vec(),
    })
}

/// [`fail`] at an entry (of job slot `slot`) known to hold a legal position.
fn fail_at<C: Codes>(codes: &C, side: Color, slot: u64, why: String) -> Box<VerifyError> {
    let board = codes
        .index()
        .board(codes.slots().start + slot, side)
        .expect("a legal slot");
    fail(codes, side, slot, &board, why)
}

/// A failure at job slot `slot` of the table `codes` reads.
fn fail<C: Codes>(
    codes: &C,
    side: Color,
    slot: u64,
    board: &Board,
    why: String,
) -> Box<VerifyError> {
    Box::new(VerifyError {
        signature: codes.index().signature(),
        side,
        slot: codes.slots().start + slot,
        fen: format!("{} ({why})", board.fen()),
        stored: Value::decode(codes.code(side, slot)),
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
        let mut y = Bits::new(n * nv);
        for (node, _, escapes) in self.each_node() {
            if self.side(node) == winner || !escapes {
                for v in 0..nv {
                    y.insert(node * nv + v);
                }
            }
        }
        // The winner's conditions: a non-check; for chases also, per offender piece, a move
        // that does not chase it.
        let mut conds: Vec<Option<usize>> = vec![None];
        if rule == Rule::PerpetualChase {
            conds.extend(self.flats_of(winner.opponent()).into_iter().map(Some));
        }
        loop {
            let mut keep = y.clone();
            for &cond in &conds {
                keep.retain(&self.forced_good(winner, rule, &y, &victims, cond));
            }
            if keep == y {
                break;
            }
            y = keep;
        }
        (0..n)
            .map(|i| self.side(i) == winner.opponent() && (0..nv).any(|v| y.contains(i * nv + v)))
            .collect()
    }

    /// Forward sweeps to the least fixed point: the states of `y` from which the winner can
    /// force a move meeting the condition (no check, or not chasing the followed offender
    /// piece `cond`, which the states then also follow) while the play stays in `y`. Against a
    /// perpetual chase the condition "not chasing `cond`" is also met where the winner can hold
    /// the offender to checks for ever (a perpetual checker, against whom chasing is allowed)
    /// while making moves that are no checks again and again ([`Net::held_to_checks`]).
    fn forced_good(
        &self,
        winner: Color,
        rule: Rule,
        y: &Bits,
        victims: &[Option<usize>],
        cond: Option<usize>,
    ) -> Bits {
        let space = Space::new(self, y, victims, cond);
        let offence = |a: &Arc, v: usize| match (rule, victims[v]) {
            (Rule::PerpetualCheck, _) => a.check,
            (Rule::PerpetualChase, Some(f)) => a.chased & (1 << f) != 0,
            _ => false,
        };
        let good = |a: &Arc, u: usize| match cond {
            None => !a.check,
            Some(_) => a.chased & (1 << space.flat_u(u)) == 0,
        };
        let mut won = self.sweep(
            winner,
            &space,
            Bits::new(space.states()),
            |a, u, t, won| (good(a, u) && space.in_y(t)) || won.contains(t),
            |a, v, t, won| offence(a, v) && won.contains(t),
        );
        // Only an offender that can check may be held to checks.
        let offender_checks = || {
            self.each_node().any(|(node, mut arcs, _)| {
                self.side(node) != winner
                    && (0..space.nv).any(|v| y.contains(node * space.nv + v))
                    && arcs.any(|a| a.check)
            })
        };
        if rule == Rule::PerpetualChase && cond.is_some() && offender_checks() {
            loop {
                let held = self.held_to_checks(winner, &space, &won, &offence);
                if (0..space.states()).all(|x| !held.contains(x) || won.contains(x)) {
                    break;
                }
                for x in (0..space.states()).filter(|&x| held.contains(x)) {
                    won.insert(x);
                }
                won = self.sweep(
                    winner,
                    &space,
                    won,
                    |_, _, t, won| won.contains(t),
                    |a, v, t, won| offence(a, v) && won.contains(t),
                );
            }
        }
        space.project(&won)
    }

    /// The states from which the winner, staying in `y`, can hold the offender to checks (its
    /// other offences leading only into `won`) while making a move that is no check again and
    /// again: the greatest set `Z` such that from each of its states the winner can force the
    /// play into `won`, or to a winner's move that is no check into `Z`.
    fn held_to_checks(
        &self,
        winner: Color,
        space: &Space,
        won: &Bits,
        offence: &impl Fn(&Arc, usize) -> bool,
    ) -> Bits {
        let mut z = Bits::new(space.states());
        for x in (0..space.states()).filter(|&x| space.in_y(x)) {
            z.insert(x);
        }
        loop {
            let forced = self.sweep(
                winner,
                space,
                won.clone(),
                |a, _, t, now| (!a.check && (z.contains(t) || won.contains(t))) || now.contains(t),
                |a, v, t, now| {
                    offence(a, v)
                        && if a.check {
                            now.contains(t)
                        } else {
                            won.contains(t)
                        }
                },
            );
            if forced == z {
                return z;
            }
            z = forced;
        }
    }

    /// Sweeps forward to the least fixed point over the states of `space`, from `won`: a
    /// winner's state of `y` joins when one of its arcs is one `winner_ok(arc, followed piece,
    /// target state, won)` accepts; an offender's (without an escape and with an arc) when every
    /// arc is one `offender_ok(arc, victim, target state, won)` accepts. Arcs whose followed
    /// victim or piece is lost lead nowhere.
    fn sweep(
        &self,
        winner: Color,
        space: &Space,
        mut won: Bits,
        winner_ok: impl Fn(&Arc, usize, usize, &Bits) -> bool,
        offender_ok: impl Fn(&Arc, usize, usize, &Bits) -> bool,
    ) -> Bits {
        loop {
            let mut changed = false;
            for (node, arcs, escapes) in self.each_node() {
                let offender = self.side(node) != winner;
                for v in 0..space.nv {
                    if !space.y.contains(node * space.nv + v) {
                        continue;
                    }
                    for u in 0..space.nu {
                        let x = space.idx(node, v, u);
                        if won.contains(x) {
                            continue;
                        }
                        let target = |a: &Arc| space.target(self, a, v, u);
                        let ok = if !offender {
                            arcs.clone()
                                .any(|a| target(&a).is_some_and(|t| winner_ok(&a, u, t, &won)))
                        } else {
                            !escapes
                                && arcs.clone().next().is_some()
                                && arcs.clone().all(|a| {
                                    target(&a).is_some_and(|t| offender_ok(&a, v, t, &won))
                                })
                        };
                        if ok {
                            won.insert(x);
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                return won;
            }
        }
    }
}

/// The states of one of [`Net::forced_good`]'s fixed points: (node, victim index, followed
/// offender piece's flat position); when pieces never change flat positions the followed piece
/// is the condition's throughout, and one state per (node, victim) suffices.
struct Space<'a> {
    y: &'a Bits,
    victims: &'a [Option<usize>],
    cond: Option<usize>,
    nv: usize,
    nu: usize,
    nodes: usize,
}

impl<'a> Space<'a> {
    fn new(net: &Net, y: &'a Bits, victims: &'a [Option<usize>], cond: Option<usize>) -> Self {
        let moving = !net.follows.is_empty();
        Space {
            y,
            victims,
            cond,
            nv: victims.len(),
            nu: if cond.is_some() && moving {
                net.pieces.len()
            } else {
                1
            },
            nodes: net.len(),
        }
    }

    fn states(&self) -> usize {
        self.nodes * self.nv * self.nu
    }

    fn idx(&self, node: usize, v: usize, u: usize) -> usize {
        (node * self.nv + v) * self.nu + u
    }

    /// The followed piece's flat position in state component `u`.
    fn flat_u(&self, u: usize) -> usize {
        if self.nu == 1 {
            self.cond.unwrap_or(0)
        } else {
            u
        }
    }

    /// Whether the state `x`'s (node, victim) is in `y`.
    fn in_y(&self, x: usize) -> bool {
        self.y.contains(x / self.nu)
    }

    /// The state arc `a` leads to from the state with victim index `v` and followed piece `u`.
    fn target(&self, net: &Net, a: &Arc, v: usize, u: usize) -> Option<usize> {
        let v2 = match self.victims[v] {
            None => v,
            Some(f) => {
                let g = net.follow(a, f);
                self.victims.iter().position(|&x| x == Some(g))?
            }
        };
        let u2 = if self.nu == 1 { 0 } else { net.follow(a, u) };
        Some(self.idx(a.to as usize, v2, u2))
    }

    /// The states of (node, victim) whose followed piece is the condition's own: the fixed
    /// point as a set over (node, victim).
    fn project(&self, won: &Bits) -> Bits {
        match self.cond {
            Some(u) if self.nu > 1 => {
                let mut out = Bits::new(self.nodes * self.nv);
                for s in (0..self.nodes * self.nv).filter(|&s| won.contains(s * self.nu + u)) {
                    out.insert(s);
                }
                out
            }
            _ => won.clone(),
        }
    }
}

/// A set of states of the fixed points, one bit each: the sweeps read them at random, and a
/// bit per state (rather than a byte) keeps eight times as many of them in the processor's
/// cache on large graphs.
#[derive(Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    /// The empty set of states below `n`.
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    #[inline]
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 != 0
    }

    #[inline]
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Keeps the states `other` holds too.
    fn retain(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
    }
}

/// How the node set of a check grows from its seeds: a seed's quiet legal moves into positions
/// whose code `pick` accepts add those positions; `member` says, from its code, whether a
/// seed's successor is a node of the finished set (picked, or a seed itself); `won` as for
/// [`build`].
struct Growth<'a, P, M> {
    deps: &'a dyn Probe,
    pick: &'a P,
    member: &'a M,
    won: &'a (dyn Fn(Value) -> bool + Sync),
    /// Whether the seeds' arcs are recorded ([`SeedArcs`]; see [`records_fit`]).
    record: bool,
}

impl<P, M> Growth<'_, P, M>
where
    P: Fn(u16) -> bool + Sync,
    M: Fn(u16) -> bool + Sync,
{
    /// Adds to `found` the successors seed `e` picks, setting `e` up in `pos`, and pushes the
    /// seed's arcs onto `out` (targets: job slots) when they are recorded; else [`build`] finds
    /// the seed's arcs as any node's. `codes` reads the table's codes.
    #[allow(clippy::too_many_arguments)]
    fn seed<C: Codes>(
        &self,
        codes: &C,
        follows: &Follows,
        pos: &mut SlotPosition,
        found: &EntrySet,
        e: u64,
        out: &mut SeedArcs,
    ) -> Result<(), Box<VerifyError>> {
        let size = follows.slots.len();
        let (side, slot) = split(size, e);
        let them = side.opponent();
        let target = |q: u64, code: u16| {
            if (self.pick)(code) {
                found.insert(entry(size, them, q));
            }
            (self.member)(code).then_some(q as u32)
        };
        if !self.record {
            if pos.load(slot, side) {
                let (_, _, slots) = pos.successors(|_| {});
                for &q in slots.iter().filter(|&&q| q != LEAVES) {
                    let code = codes.code(them, q as u64);
                    if code != Value::ILLEGAL_CODE {
                        target(q as u64, code);
                    }
                }
            }
            return Ok(());
        }
        let escapes = follows.node_arcs(
            codes,
            self.deps,
            self.won,
            pos,
            side,
            slot,
            target,
            true,
            &mut out.arcs,
        )?;
        out.slots.push(slot as u32);
        out.ends.push(out.arcs.len() as u32);
        out.escapes.push(escapes);
        Ok(())
    }

    /// Adds to `set` the successors its entries pick; returns the arcs of its entries, per chunk
    /// of each side ([`group_slots`]).
    fn successors<R: Readers>(
        &self,
        table: &Checked<R>,
        follows: &Follows,
        set: &EntrySet,
    ) -> Result<Vec<Option<SeedArcs>>, Box<VerifyError>> {
        let size = table.slots.len();
        // Successors go to a set of their own, so that they are not visited in turn.
        let found = EntrySet::new(size);
        let seeds = (0..2 * chunks_of(size))
            .into_par_iter()
            .map_init(
                || (table.position(follows.pieces), table.readers.reader()),
                |(pos, codes), g| {
                    let (side, slots) = group_slots(size, g);
                    let (lo, hi) = (entry(size, side, slots.start), entry(size, side, slots.end));
                    let mut out = SeedArcs::default();
                    for e in set.entries_in(lo, hi) {
                        self.seed(&*codes, follows, pos, &found, e, &mut out)?;
                    }
                    Ok(out.finish())
                },
            )
            .collect::<Result<_, Box<VerifyError>>>()?;
        set.union(found);
        Ok(seeds)
    }

    /// Adds to `set` the entries whose code `seeds` accepts, in the chunks of
    /// [`crate::CHUNK_SLOTS`] slots `in_chunk` names, and the successors they pick; returns
    /// their arcs, per chunk of each side ([`group_slots`]). Generic rather than over `dyn Fn`:
    /// `seeds` is asked about every code of those chunks.
    fn seeds_and_successors<R: Readers, S: Fn(u16) -> bool + Sync>(
        &self,
        table: &Checked<R>,
        follows: &Follows,
        set: &EntrySet,
        in_chunk: &(dyn Fn(usize) -> bool + Sync),
        seeds: &S,
    ) -> Result<Vec<Option<SeedArcs>>, Box<VerifyError>> {
        let size = table.slots.len();
        let mut all = Vec::with_capacity(2 * chunks_of(size));
        for side in Color::ALL {
            let chunks: Vec<Option<SeedArcs>> = (0..chunks_of(size))
                .into_par_iter()
                .map_init(
                    || (table.position(follows.pieces), table.readers.reader()),
                    |(pos, codes), c| {
                        let mut out = SeedArcs::default();
                        if !in_chunk(c) {
                            return Ok(None);
                        }
                        let base = c as u64 * crate::CHUNK_SLOTS;
                        let end = (base + crate::CHUNK_SLOTS).min(size);
                        for slot in base..end {
                            if seeds(codes.code(side, slot)) {
                                let e = entry(size, side, slot);
                                set.insert(e);
                                self.seed(&*codes, follows, pos, set, e, &mut out)?;
                            }
                        }
                        Ok(out.finish())
                    },
                )
                .collect::<Result<_, Box<VerifyError>>>()?;
            all.extend(chunks);
        }
        Ok(all)
    }
}

/// The rule checks of an Asian table (see the module documentation), from what its local pass
/// found. The draws are checked first: their set is then freed before the rounds' graphs are
/// built, which keeps the verifier's peak memory a set lower.
pub(crate) fn check<R: Readers>(
    table: &Checked<R>,
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

/// Whether `v` is a win for its side to move decided before round `round` of the rule phase (by
/// mate, or by a rule in an earlier round): a move into it loses for a terminal of that round.
pub(crate) fn won_before(v: Value, round: u8) -> bool {
    match v {
        Value::Win(_) => true,
        Value::RuleWin(r) => r.round < round,
        _ => false,
    }
}

/// The rule of a terminal of `round` from its code (`None`: no such terminal). The round's two
/// terminal codes are compared with every code of the chunks holding its terminals (decoding
/// each one would cost more than the rest of the scan).
fn terminal_of(round: u8) -> impl Fn(u16) -> Option<Rule> + Sync {
    let terminals = [Rule::PerpetualCheck, Rule::PerpetualChase].map(|rule| {
        Value::RuleLoss(RuleValue {
            rule,
            round,
            plies: 0,
        })
        .encode()
    });
    move |c: u16| {
        if c == terminals[0] {
            Some(Rule::PerpetualCheck)
        } else if c == terminals[1] {
            Some(Rule::PerpetualChase)
        } else {
            None
        }
    }
}

/// Whether a job slot of a table of `slots` fits an arc's target, so that seeds' arcs can be
/// recorded as the node set is gathered ([`SeedArcs`]).
fn records_fit(slots: SlotRange) -> bool {
    slots.len() <= u32::MAX as u64 + 1
}

/// The graph of check 1 for `round`: its terminals (in the chunks `in_chunk` names) and the
/// positions of this round their quiet moves lead to. `record`: the terminals' arcs are
/// recorded as they are found ([`SeedArcs`]).
fn round_net<R: Readers>(
    table: &Checked<R>,
    deps: &dyn Probe,
    round: u8,
    in_chunk: &(dyn Fn(usize) -> bool + Sync),
    record: bool,
) -> Result<Net, Box<VerifyError>> {
    let terminal = terminal_of(round);
    // Out of the graph, an offender's move loses when it leads to a position decided before
    // this round as won for the side to move there.
    let before_round = |v: Value| won_before(v, round);
    let pick = |c: u16| matches!(Value::decode(c), Value::RuleWin(r) if r.round == round);
    let member = |c: u16| pick(c) || terminal(c).is_some();
    let growth = Growth {
        deps,
        pick: &pick,
        member: &member,
        won: &before_round,
        record,
    };
    let pieces = table.index.piece_list();
    let follows = Follows::new(table.index, table.slots, &pieces);
    let set = EntrySet::new(table.slots.len());
    let seeds =
        growth.seeds_and_successors(table, &follows, &set, in_chunk, &|c| terminal(c).is_some())?;
    build(table, deps, set.into_nodes(), &before_round, seeds, follows)
}

/// The graph of check 2: the drawn positions `seeds` and the drawn positions their quiet moves
/// lead to. `record` as for [`round_net`].
fn draw_net<R: Readers>(
    table: &Checked<R>,
    deps: &dyn Probe,
    seeds: EntrySet,
    record: bool,
) -> Result<Net, Box<VerifyError>> {
    let won = |v: Value| v.is_win();
    // The seeds are drawn: picked as any drawn successor is.
    let pick = |c: u16| c == Value::DRAW_CODE;
    let growth = Growth {
        deps,
        pick: &pick,
        member: &pick,
        won: &won,
        record,
    };
    let pieces = table.index.piece_list();
    let follows = Follows::new(table.index, table.slots, &pieces);
    let arcs = growth.successors(table, &follows, &seeds)?;
    build(table, deps, seeds.into_nodes(), &won, arcs, follows)
}

/// Check 1 for `round`: its terminals and the positions their offences lead to form a trap.
/// `in_chunk` names the chunks of [`crate::CHUNK_SLOTS`] slots that hold its terminals.
fn terminals_trapped<R: Readers>(
    table: &Checked<R>,
    deps: &dyn Probe,
    round: u8,
    in_chunk: &(dyn Fn(usize) -> bool + Sync),
) -> Result<(), Box<VerifyError>> {
    let size = table.slots.len();
    let terminal = terminal_of(round);
    let t0 = std::time::Instant::now();
    let net = round_net(table, deps, round, in_chunk, records_fit(table.slots))?;
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
    let codes = table.readers.reader();
    for (node, e) in net.nodes.entries_from(0).enumerate() {
        let (side, slot) = split(size, e);
        let Some(rule) = terminal(codes.code(side, slot)) else {
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
                &codes,
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
fn no_trap_among_draws<R: Readers>(
    table: &Checked<R>,
    deps: &dyn Probe,
    forced_draws: EntrySet,
) -> Result<(), Box<VerifyError>> {
    let size = table.slots.len();
    if forced_draws.is_empty() {
        return Ok(());
    }
    let t0 = std::time::Instant::now();
    let net = draw_net(table, deps, forced_draws, records_fit(table.slots))?;
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
                    &table.readers.reader(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use xqtb_core::{RuleSet, TableId};

    /// Each node's arcs and whether it escapes.
    fn graph(net: &Net) -> Vec<(Vec<u64>, bool)> {
        let g: Vec<_> = net
            .each_node()
            .map(|(_, arcs, escapes)| (arcs.map(Arc::pack).collect(), escapes))
            .collect();
        assert!(net.each_node().map(|(n, _, _)| n).eq(0..net.len()));
        g
    }

    /// The seeds' arcs recorded while the node set is gathered are those the build finds for any
    /// node: both ways give the same graphs, for every round's check and for the draws (the
    /// second way is what a table too large for job slots in arc targets takes).
    #[test]
    fn recorded_seed_arcs_give_the_graphs_built_afresh() {
        let sig: xqtb_core::Signature = "KCAvKN".parse().unwrap();
        let tables = crate::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
        let table = tables.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
        let size = table.slots().len();
        let checked = Checked {
            index: table.index(),
            slots: table.slots(),
            readers: &|| table.as_ref(),
        };
        let mut rounds = 0;
        for round in 1..=RuleValue::MAX_ROUND {
            let terminal = terminal_of(round);
            if !Color::ALL
                .iter()
                .any(|&side| table.codes(side).iter().any(|c| terminal(c).is_some()))
            {
                continue;
            }
            let net = |record| round_net(&checked, &tables, round, &|_| true, record).unwrap();
            let (recorded, afresh) = (net(true), net(false));
            let g = graph(&recorded);
            assert!(g.iter().any(|(arcs, _)| !arcs.is_empty()), "round {round}");
            assert!(g == graph(&afresh), "round {round}");
            rounds += 1;
        }
        assert!(rounds >= 3, "{rounds} rounds");
        // The draws' seeds are those of the verifier: the draws forced to offend, as its local
        // pass finds them (each of their moves leaving the table loses, which a seed's recorded
        // arcs take as settled).
        let draws = || {
            let found = Findings::new(size);
            crate::verify::verify_values(table, &tables, &|_| {}, Some(&found)).unwrap();
            found.forced_draws
        };
        let net = |record| draw_net(&checked, &tables, draws(), record).unwrap();
        let (recorded, afresh) = (net(true), net(false));
        let g = graph(&recorded);
        assert!(g.len() > 1000, "{} nodes", g.len());
        assert!(g.iter().filter(|(arcs, _)| !arcs.is_empty()).count() > 1000);
        assert!(g == graph(&afresh));
    }
}
