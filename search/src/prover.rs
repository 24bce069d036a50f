//! A depth-limited df-pn prover: does the attacker mate (or win by the tables or the
//! repetition rules) within a given number of plies?
//!
//! Proof-number search keeps, for every position, how many leaves would still have to be
//! proven to prove the attacker's win (the proof number) and how many to disprove it (the
//! disproof number). At a position where the attacker moves (an OR node) one good move suffices:
//! its proof number is the smallest of its children's, its disproof number their sum; where the
//! defender moves (an AND node) every reply must be answered, so the roles swap. The search
//! always descends into the child that looks cheapest to settle, which for mate problems means
//! into forcing lines: a defender with few replies (in check) gives a small proof number.
//!
//! df-pn (Nagai 2002) does this depth first with thresholds: a node is searched until its
//! numbers reach the thresholds its parent gave it, then the parent picks again. What it learns
//! is kept in the transposition table, not in a tree in memory.
//!
//! The search is bounded by a number of plies so that, deepened one ply at a time, the first
//! proof found is the shortest mate. A position is a leaf when:
//! - its side to move has no legal move (it has lost, by mate or stalemate);
//! - a capture has brought the material into a stored table: its value and exact distance come
//!   from the table (dead-draw material is a draw without one);
//! - it repeats a position of the current line: under the Asian rules the cycle is judged by
//!   [`xiangqi::repetition::adjudicate`] and counts as a win when the defender loses by it;
//!   otherwise the attacker made no progress and the line is not a win;
//! - no plies are left.
//!
//! A disproof that no depth limit and no repetition cut short is *exact*: the attacker cannot
//! win from there at any depth, and the table keeps it for every later, deeper search.

use crate::error::SearchError;
use crate::limits::{Control, Limits, StopReason};
use crate::transposition::{Entry, Table};
use crate::zobrist;
use probe::Tablebase;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use storage_format::store::TableStore;
use xiangqi::repetition::{Verdict, adjudicate};
use xiangqi::{Board, Color, Move};
use xqtb_core::{MAX_PIECES, Material, Orientation, Probe, RuleSet, Signature, TableId, Value};

/// A proof or disproof number that cannot grow any more: the node is settled the other way.
///
/// The numbers are 64 bits wide: a proof number sums the children's over every reply of every
/// defender's move, and on a deep quiet search that overflows 32 bits. A number pinned at a cap
/// would stop the search making progress (a child handed a threshold equal to its own number
/// returns at once), so the cap must be out of reach.
pub(crate) const INF: u64 = u64::MAX;

/// Largest finite proof or disproof number.
const CAP: u64 = 1 << 62;

/// A number as the transposition table keeps it: 0 and [`INF`] exactly, others below
/// `u32::MAX` (an open number read back is only a first guess).
fn narrow(n: u64) -> u32 {
    match n {
        INF => u32::MAX,
        n => n.min(u32::MAX as u64 - 1) as u32,
    }
}

/// Sum of proof or disproof numbers, kept at most [`CAP`] unless a term is `INF`.
fn add(a: u64, b: u64) -> u64 {
    if a == INF || b == INF {
        INF
    } else {
        (a + b).min(CAP)
    }
}

/// What is known about a position for the attacker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    pub pn: u64,
    pub dn: u64,
    /// For a proof: its length in plies.
    pub dist: u16,
    /// For a disproof: it holds at any depth.
    pub exact: bool,
    /// The index on the current line of the earliest position whose repetition decided this
    /// status ([`FREE`] when none did). A status decided by returning to a position above the
    /// node holds on this line only: it is not stored, so that no other line reads it.
    pub rep: u16,
}

/// [`Status::rep`] of a status no repetition above the node decided.
pub(crate) const FREE: u16 = u16::MAX;

impl Status {
    pub const fn proven(dist: u16) -> Status {
        Status {
            pn: 0,
            dn: INF,
            dist,
            exact: true,
            rep: FREE,
        }
    }

    pub const fn disproven(exact: bool) -> Status {
        Status {
            pn: INF,
            dn: 0,
            dist: 0,
            exact,
            rep: FREE,
        }
    }

    pub const fn open(pn: u64, dn: u64) -> Status {
        Status {
            pn,
            dn,
            dist: 0,
            exact: false,
            rep: FREE,
        }
    }

    pub const fn is_proven(&self) -> bool {
        self.pn == 0
    }

    pub const fn is_disproven(&self) -> bool {
        self.dn == 0
    }
}

/// A legal move of the node being searched and what is known of the position it leads to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Child {
    pub mv: Move,
    pub key: u64,
    pub status: Status,
}

/// What all threads of one search share.
pub(crate) struct Shared<'a, S: TableStore> {
    pub tt: &'a Table,
    pub tables: Option<&'a Tablebase<S>>,
    pub rules: RuleSet,
    pub limits: &'a Limits,
    pub control: &'a Control,
    /// Set when the answer is known and the other threads' work no longer matters.
    pub abort: &'a AtomicBool,
    /// Whether a win by the repetition rules counts (a cycle the defender loses, a table's rule
    /// value), as under the Asian rules, where it ends the game as mate does: the distance of
    /// such a win is the plies to the repetition, as referees and engines count it. Otherwise
    /// (cycles are draws) only mates do.
    pub rule_wins: bool,
}

/// Distinguishes the entries of the two attackers of a position in the transposition table,
/// and of mates only from wins by rule too: `[rule_wins][attacker]`.
const SALT: [[u64; 2]; 2] = [
    [0x2545_F491_4F6C_DD1D, 0x9E6C_63D0_676A_9A99],
    [0x3C6E_F372_FE94_F82B, 0xA54F_F53A_5F1D_36F1],
];

/// The first guess of the proof number of a position where the defender is not in check:
/// more than most checks leave it, so that checks are tried first.
const QUIET_PROOF_NUMBER: u64 = 10;

/// Nodes expanded between two looks at the limits.
const TICK: u64 = 1024;

/// One thread's prover for one attacker: the current line and its counters.
pub(crate) struct Prover<'a, S: TableStore> {
    pub shared: &'a Shared<'a, S>,
    pub attacker: Color,
    salt: u64,
    /// The current position and its key.
    pub board: Board,
    pub key: u64,
    /// The positions of the current line from the root, the current one last, and the moves
    /// between them: repetitions are found here.
    keys: Vec<u64>,
    boards: Vec<Board>,
    moves: Vec<Move>,
    /// What each move of the line captured.
    captured: Vec<Option<xiangqi::Piece>>,
    /// Whether each material (by canonical signature) has a stored table.
    stored: HashMap<Signature, bool>,
    /// Counters not yet added to the shared control.
    nodes: u64,
    table_hits: u64,
    /// Nodes expanded by this prover, all told.
    pub expanded: u64,
    /// The value of [`Prover::expanded`] at which the current call runs out of its budget.
    budget_end: u64,
    /// Why the last call returned with the root unsettled.
    pub halted: Option<Halt>,
}

/// Why a prover's call returned before it settled the position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Halt {
    /// The call's own node budget ran out: it may be called again, and resumes from what the
    /// transposition table kept.
    Budget,
    /// A limit of the whole search, or another thread's answer, stopped it.
    Limit(StopReason),
}

impl<'a, S: TableStore> Prover<'a, S> {
    pub fn new(shared: &'a Shared<'a, S>, attacker: Color, root: &Board) -> Prover<'a, S> {
        let key = zobrist::key(root);
        Prover {
            shared,
            attacker,
            salt: SALT[shared.rule_wins as usize][attacker.index()],
            board: root.clone(),
            key,
            keys: vec![key],
            boards: vec![root.clone()],
            moves: Vec::new(),
            captured: Vec::new(),
            stored: HashMap::new(),
            nodes: 0,
            table_hits: 0,
            expanded: 0,
            budget_end: u64::MAX,
            halted: None,
        }
    }

    /// Settles whether the attacker wins from the current position within `plies`, unless the
    /// limits or a budget of `budget` expanded positions stop it first (then the status is open
    /// and [`Prover::halted`] says why). The position must not be a leaf.
    pub fn prove(&mut self, plies: u16, budget: u64) -> Result<Status, SearchError> {
        self.halted = None;
        self.budget_end = self.expanded.saturating_add(budget);
        let status = self.mid(INF, INF, plies)?;
        self.budget_end = u64::MAX;
        self.flush();
        Ok(status)
    }

    /// Plays `m` on the current line.
    pub fn push(&mut self, m: Move, key: u64) {
        let captured = self.board.make(m);
        self.key = key;
        self.keys.push(key);
        self.boards.push(self.board.clone());
        self.moves.push(m);
        self.captured.push(captured);
    }

    /// Takes back the last move of the current line.
    pub fn pop(&mut self) {
        self.keys.pop();
        self.boards.pop();
        let m = self.moves.pop().expect("a move to take back");
        let captured = self.captured.pop().expect("a move to take back");
        self.board.unmake(m, captured);
        self.key = *self.keys.last().expect("the root stays");
    }

    /// The position where the line's `i`-th position stands.
    pub fn line_start(&self, i: usize) -> &xiangqi::Board {
        &self.boards[i]
    }

    /// The moves of the line from its `i`-th position to the current one.
    pub fn line_moves(&self, i: usize) -> &[Move] {
        &self.moves[i..]
    }

    /// The current position's FEN, for messages.
    pub fn fen(&self) -> String {
        self.board.fen()
    }

    /// The current position's key in a checked proof's memo.
    pub fn memo_key(&self) -> u64 {
        self.tt_key(self.key)
    }

    /// Adds this prover's counters to the shared control.
    pub fn flush(&mut self) {
        self.shared.control.add(self.nodes, self.table_hits);
        self.nodes = 0;
        self.table_hits = 0;
    }

    /// Counts one expanded node; every [`TICK`] nodes, looks at the limits.
    pub(crate) fn tick(&mut self) {
        self.nodes += 1;
        self.expanded += 1;
        if self.expanded >= self.budget_end {
            self.halted.get_or_insert(Halt::Budget);
        }
        if self.nodes >= TICK {
            let total = self.shared.control.add(self.nodes, self.table_hits);
            self.nodes = 0;
            self.table_hits = 0;
            if self.shared.abort.load(Relaxed) {
                self.halted = Some(Halt::Limit(StopReason::Cancelled));
            } else if let Some(reason) = self.shared.control.stop_reason(self.shared.limits, total)
            {
                self.halted = Some(Halt::Limit(reason));
            }
        }
    }

    fn tt_key(&self, key: u64) -> u64 {
        (key ^ self.salt).max(1)
    }

    /// What the transposition table knows of position `key` with `plies` left.
    fn lookup(&self, key: u64, plies: u16) -> Option<Status> {
        let e = self.shared.tt.get(self.tt_key(key))?;
        if e.pn == 0 && e.dist <= plies {
            Some(Status::proven(e.dist))
        } else if e.dn == 0 && (e.exact || e.plies >= plies) {
            Some(Status::disproven(e.exact))
        } else if e.pn == 0 || e.dn == 0 || plies == 0 || e.plies != plies {
            // Settled at another depth only, no plies left to search, or numbers found with
            // another number of plies left: no guess from it. Numbers from a shallower search
            // mislead a deeper one, whose mate may run through the very lines that looked
            // hopeless with fewer plies.
            None
        } else {
            Some(Status::open(e.pn as u64, e.dn as u64))
        }
    }

    fn store(&self, status: Status, plies: u16, work: u64) {
        self.shared.tt.put(Entry {
            key: self.tt_key(self.key),
            pn: narrow(status.pn),
            dn: narrow(status.dn),
            work: work.min(u32::MAX as u64) as u32,
            dist: status.dist,
            plies,
            exact: status.exact,
        });
    }

    /// The value of the current position from the tables when its material has one (or is a
    /// dead draw), for its side to move.
    pub fn table_value(&mut self) -> Result<Option<Value>, SearchError> {
        let material = Material::of_board(&self.board);
        if material.piece_count() as usize > MAX_PIECES {
            return Ok(None);
        }
        let o = Orientation::of_material(&material);
        if o.signature.is_dead_draw() {
            return Ok(Some(Value::Draw));
        }
        let Some(tb) = self.shared.tables else {
            return Ok(None);
        };
        let rules = self.shared.rules;
        let stored = *self
            .stored
            .entry(o.signature)
            .or_insert_with(|| tb.has_table(&TableId::new(rules, o.signature)));
        if !stored {
            return Ok(None);
        }
        self.table_hits += 1;
        Ok(Some(tb.probe(rules, &self.board)?))
    }

    /// What a table value means for the attacker with `plies` left.
    pub fn table_status(&self, value: Value, plies: u16) -> Status {
        if value.rule().is_some() && !self.shared.rule_wins {
            // Not a mate, but not a draw either: a disproof of the mate only.
            return Status::disproven(false);
        }
        let attacker_to_move = self.board.side_to_move() == self.attacker;
        let wins = if attacker_to_move {
            value.is_win()
        } else {
            value.is_loss()
        };
        let dist = value.dtm_plies().or(value.rule_plies()).unwrap_or(0);
        match (wins, dist <= plies) {
            (true, true) => Status::proven(dist),
            (true, false) => Status::disproven(false),
            (false, _) => Status::disproven(true),
        }
    }

    /// Where the current position repeats an earlier one of the line, its index there.
    pub fn repeats(&self) -> Option<usize> {
        self.on_line(self.key, self.keys.len() - 1)
    }

    /// The index of the last of the line's first `len` positions that is the current board,
    /// whose key is `key`.
    fn on_line(&self, key: u64, len: usize) -> Option<usize> {
        (0..len)
            .rev()
            .find(|&i| self.keys[i] == key && self.boards[i] == self.board)
    }

    /// The status of the current position, which repeats position `i` of the line: when wins
    /// by rule count, a win if the repetition rules make the defender lose the cycle; else not
    /// (the attacker made no progress). Neither holds beyond this line.
    pub fn repetition_status(&self, i: usize) -> Status {
        if self.shared.rule_wins
            && let Ok(a) = adjudicate(self.line_start(i), self.line_moves(i))
            && matches!(a.verdict, Verdict::Loses { loser, .. } if loser != self.attacker)
        {
            return Status {
                exact: false,
                rep: i as u16,
                ..Status::proven(0)
            };
        }
        Status {
            rep: i as u16,
            ..Status::disproven(false)
        }
    }

    /// Plays `m` from the current position and judges the position it leads to with `plies`
    /// left: a leaf is settled, otherwise the numbers come from the table or a first guess.
    pub fn child(&mut self, m: Move, plies: u16) -> Result<Child, SearchError> {
        let key = zobrist::after(self.key, &self.board, m);
        let captured = self.board.make(m);
        self.moves.push(m);
        let status = self.judge(key, captured.is_some(), plies);
        self.moves.pop();
        self.board.unmake(m, captured);
        Ok(Child {
            mv: m,
            key,
            status: status?,
        })
    }

    /// Judges the current position, reached by the line's last move (which is not pushed: the
    /// position is not in `keys`), whose key is `key`.
    fn judge(&mut self, key: u64, capture: bool, plies: u16) -> Result<Status, SearchError> {
        if !capture && let Some(i) = self.on_line(key, self.keys.len()) {
            return Ok(self.repetition_status(i));
        }
        if capture && let Some(v) = self.table_value()? {
            return Ok(self.table_status(v, plies));
        }
        let defender = self.attacker.opponent();
        let defender_to_move = self.board.side_to_move() == defender;
        if plies == 0 {
            // Only a position the defender has already lost is a win with no plies left (no
            // need to ask the transposition table: most positions searched are here).
            return Ok(if defender_to_move && !self.board.has_legal_move() {
                Status::proven(0)
            } else {
                Status::disproven(false)
            });
        }
        if let Some(s) = self.lookup(key, plies) {
            return Ok(s);
        }
        if !defender_to_move {
            return Ok(Status::open(1, 1));
        }
        // A first guess of the proof number: a defender in check has few replies, and is
        // counted exactly, so that checks, and the checks that leave fewest replies, are tried
        // first; whether a quiet position has a reply waits until it is searched.
        if !self.board.in_check(defender) {
            return Ok(Status::open(QUIET_PROOF_NUMBER, 1));
        }
        match self.board.count_legal_moves() {
            0 => Ok(Status::proven(0)),
            n => Ok(Status::open(n as u64, 1)),
        }
    }

    /// The numbers of a node from its children's. A proof takes the length of the shortest
    /// winning move (at an OR node) or of the longest reply (at an AND node); a settled node
    /// depends on the repetitions of the children that settle it, preferring children that
    /// depend on none.
    fn combine(or: bool, children: &[Child]) -> Status {
        let statuses = children.iter().map(|c| c.status);
        let earliest =
            |it: &mut dyn Iterator<Item = Status>| it.map(|s| s.rep).min().unwrap_or(FREE);
        if or {
            let pn = statuses.clone().map(|s| s.pn).min().unwrap_or(INF);
            let dn = statuses.clone().fold(0, |a, s| add(a, s.dn));
            if pn == 0 {
                let best = statuses
                    .filter(|s| s.is_proven())
                    .min_by_key(|s| (s.dist, std::cmp::Reverse(s.rep)))
                    .expect("a proven child");
                Status {
                    rep: best.rep,
                    ..Status::proven(best.dist + 1)
                }
            } else if dn == 0 {
                Status {
                    rep: earliest(&mut statuses.clone()),
                    ..Status::disproven(statuses.clone().all(|s| s.exact))
                }
            } else {
                Status::open(pn, dn)
            }
        } else {
            let pn = statuses.clone().fold(0, |a, s| add(a, s.pn));
            let dn = statuses.clone().map(|s| s.dn).min().unwrap_or(INF);
            if pn == 0 {
                let dist = statuses.clone().map(|s| s.dist).max().unwrap_or(0);
                Status {
                    rep: earliest(&mut statuses.clone()),
                    ..Status::proven(dist + 1)
                }
            } else if dn == 0 {
                let best = statuses
                    .filter(|s| s.is_disproven())
                    .max_by_key(|s| (s.exact, s.rep))
                    .expect("a disproven child");
                Status {
                    rep: best.rep,
                    ..Status::disproven(best.exact)
                }
            } else {
                Status::open(pn, dn)
            }
        }
    }

    /// The child to search next (the one with the smallest proof number at an OR node, the
    /// smallest disproof number at an AND node) and the second smallest such number.
    fn select(or: bool, children: &[Child]) -> (usize, u64) {
        let number = |c: &Child| if or { c.status.pn } else { c.status.dn };
        let (mut best, mut first, mut second) = (0, INF, INF);
        for (i, c) in children.iter().enumerate() {
            let n = number(c);
            if n < first {
                second = first;
                first = n;
                best = i;
            } else if n < second {
                second = n;
            }
        }
        (best, second)
    }

    /// Searches the current position until its numbers reach the thresholds.
    fn mid(&mut self, th_pn: u64, th_dn: u64, plies: u16) -> Result<Status, SearchError> {
        Ok(self.mid_children(th_pn, th_dn, plies)?.0)
    }

    /// Settles the current position (with `plies` left) as [`Prover::prove`] does, and returns
    /// its moves' statuses as the search left them (a proven node's winning moves among them).
    pub fn prove_children(&mut self, plies: u16) -> Result<(Status, Vec<Child>), SearchError> {
        let r = self.mid_children(INF, INF, plies)?;
        self.flush();
        Ok(r)
    }

    /// [`Prover::mid`], returning the children too.
    fn mid_children(
        &mut self,
        th_pn: u64,
        th_dn: u64,
        plies: u16,
    ) -> Result<(Status, Vec<Child>), SearchError> {
        self.tick();
        let start = self.expanded;
        let or = self.board.side_to_move() == self.attacker;
        let moves = self.board.legal_moves();
        if moves.is_empty() {
            // The side to move has lost (mate or stalemate).
            let status = if or {
                Status::disproven(true)
            } else {
                Status::proven(0)
            };
            self.store(status, plies, 1);
            return Ok((status, Vec::new()));
        }
        for &m in moves.iter() {
            let key = zobrist::after(self.key, &self.board, m);
            self.shared.tt.prefetch(self.tt_key(key));
        }
        let mut children = Vec::with_capacity(moves.len());
        for &m in moves.iter() {
            let c = self.child(m, plies - 1)?;
            let settled = if or {
                c.status.is_proven()
            } else {
                c.status.is_disproven()
            };
            children.push(c);
            // One proven move (or one refuting reply) settles the node; only its length
            // could still improve, and a shorter proof is looked for by the shallower
            // searches of the deepening.
            if settled && c.status.exact {
                break;
            }
        }
        // This node's index on the line: a repetition of it or of a position below is part of
        // its own subtree, and holds wherever the node is reached from.
        let here = (self.keys.len() - 1) as u16;
        loop {
            let mut status = Self::combine(or, &children);
            if status.rep >= here {
                status.rep = FREE;
            }
            if status.pn == 0
                || status.dn == 0
                || status.pn >= th_pn
                || status.dn >= th_dn
                || self.halted.is_some()
            {
                if status.rep == FREE {
                    self.store(status, plies, self.expanded - start);
                }
                return Ok((status, children));
            }
            let (best, second) = Self::select(or, &children);
            let c = children[best];
            // The 1+epsilon trick (Pawlewicz and Lew): a child may exceed the second best by a
            // quarter before the search switches to it, so that it does not thrash between two
            // children of nearly equal numbers.
            let next_best = |n: u64| add(n, n / 4 + 1);
            let (child_pn, child_dn) = if or {
                (
                    th_pn.min(next_best(second)),
                    add(th_dn - status.dn, c.status.dn),
                )
            } else {
                (
                    add(th_pn - status.pn, c.status.pn),
                    th_dn.min(next_best(second)),
                )
            };
            self.push(c.mv, c.key);
            let result = self.mid(child_pn, child_dn, plies - 1);
            self.pop();
            children[best].status = result?;
        }
    }
}
