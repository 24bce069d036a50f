//! The check a proof must pass before it is reported, and the main line read from it.
//!
//! The prover's numbers live in a lossy, shared transposition table, and a repetition judged on
//! one line can be remembered for another (the "graph history interaction"): neither may leak
//! into an answer. So a proven win is replayed: from the root, every reply of the defender is
//! generated again and must lose, every attacker move chosen must be legal, mates are mates by
//! the move generator, a repetition that wins by rule is judged again on the line it occurs
//! on (any other repetition is no end: the plies left shrink, so the proof still ends), and a
//! position in a stored table is probed with the prober's consistency check (its stored value
//! against its moves' values), so a damaged table entry shows up here instead of in the answer.
//! Where the transposition table has lost a position, it is proven again. The length of the proof is
//! recomputed on the way: the answer's distance is the checked one.

use crate::error::SearchError;
use crate::prover::{Halt, Prover};
use probe::LineEnd;
use std::collections::HashMap;
use storage_format::store::TableStore;
use xiangqi::Move;
use xiangqi::repetition::{Offence, Verdict, adjudicate};
use xqtb_core::{Rule, Value};

/// How a checked line ends at a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leaf {
    /// The defender has no legal move.
    Mate { in_check: bool },
    /// The position is in a stored table with this value for its side to move.
    Table(Value),
    /// The position repeats an earlier one of the line and the defender loses the cycle.
    Repetition(Rule),
}

/// A position of a checked proof.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checked {
    /// Plies to the end of the proof: to mate, into a table plus the table's distance, or to
    /// the repetition.
    pub dist: u16,
    /// The move of the main line from here (the attacker's fastest win, the defender's longest
    /// resistance); `None` at a leaf.
    pub best: Option<Move>,
    pub leaf: Option<Leaf>,
    /// Whether a repetition on this line decided anything below: then the result holds on this
    /// line only and is not remembered.
    pub line_bound: bool,
}

/// Why a proof failed its check, in words.
type Failure = String;

/// Checked positions by key (with the attacker's salt applied by the prover's key), up to a
/// number of them that fits the memory it is given: past that, a position met again is checked
/// again, which costs time (counted against the limits) but no memory.
pub(crate) struct Memo {
    map: HashMap<u64, Checked>,
    capacity: usize,
}

impl Memo {
    /// A memo that holds at most about `bytes`.
    pub fn within(bytes: u64) -> Memo {
        // A hash map's buckets hold the entry and a control byte, and it may have grown to a
        // little over twice its entries.
        let per_entry = 3 * (std::mem::size_of::<(u64, Checked)>() as u64 + 1);
        Memo {
            map: HashMap::new(),
            capacity: (bytes / per_entry) as usize,
        }
    }

    fn get(&self, key: u64) -> Option<Checked> {
        self.map.get(&key).copied()
    }

    fn insert(&mut self, key: u64, checked: Checked) {
        if self.map.len() < self.capacity {
            self.map.insert(key, checked);
        }
    }
}

impl<S: TableStore> Prover<'_, S> {
    /// Checks that the attacker wins from the current position within `plies` (see the module
    /// documentation). `Err` for a table that cannot be read or contradicts itself,
    /// `Ok(Err(reason))` for a proof that does not hold.
    pub fn check(
        &mut self,
        plies: u16,
        memo: &mut Memo,
    ) -> Result<Result<Checked, Failure>, SearchError> {
        let leaf = |leaf, dist| Checked {
            dist,
            best: None,
            leaf: Some(leaf),
            line_bound: matches!(leaf, Leaf::Repetition(_)),
        };
        // Every position replayed counts against the limits, as the positions the prover
        // expands do: a proof with many transpositions and a full memo takes time, not memory.
        self.tick();
        if let Some(Halt::Limit(reason)) = self.halted {
            return Ok(Err(format!("stopped by the {} limit", reason.name())));
        }
        let attacker_to_move = self.board.side_to_move() == self.attacker;
        // A repetition the defender loses by rule ends the line in a win. Any other repetition
        // is no end: the proof must still reach its end within the plies left, which shrink at
        // every move, so it cannot go round for ever. (The prover does not search such lines,
        // but it can reach a position by another line where its proof came from.)
        if self.shared.rule_wins
            && let Some(i) = self.repeats()
            && let Ok(a) = adjudicate(self.line_start(i), self.line_moves(i))
            && let Verdict::Loses { loser, offence } = a.verdict
            && loser != self.attacker
        {
            let rule = match offence {
                Offence::PerpetualCheck => Rule::PerpetualCheck,
                _ => Rule::PerpetualChase,
            };
            return Ok(Ok(leaf(Leaf::Repetition(rule), 0)));
        }
        if !self.board.has_legal_move() {
            return Ok(if attacker_to_move {
                Err(format!("the attacker has no move in {}", self.fen()))
            } else {
                let in_check = self.board.in_check(self.board.side_to_move());
                Ok(leaf(Leaf::Mate { in_check }, 0))
            });
        }
        if self.table_value()?.is_some() {
            let value = match self.shared.tables {
                // The prober's full probe compares the stored value with its moves' values.
                Some(tb) => tb.probe_board(self.shared.rules, &self.board)?.value,
                None => Value::Draw,
            };
            let status = self.table_status(value, plies);
            return Ok(if status.is_proven() {
                Ok(leaf(Leaf::Table(value), status.dist))
            } else {
                Err(format!(
                    "the table gives {value} in {} with {plies} plies left",
                    self.fen()
                ))
            });
        }
        if plies == 0 {
            return Ok(Err(format!("no plies left in {}", self.fen())));
        }
        if let Some(c) = memo.get(self.memo_key())
            && c.dist <= plies
        {
            return Ok(Ok(c));
        }
        let checked = if attacker_to_move {
            self.check_attacker(plies, memo)?
        } else {
            self.check_defender(plies, memo)?
        };
        if let Ok(c) = &checked
            && !c.line_bound
        {
            memo.insert(self.memo_key(), *c);
        }
        Ok(checked)
    }

    /// At an attacker's move: the moves the prover found winning, shortest first, until one
    /// passes the check; proven again if the transposition table has lost them.
    fn check_attacker(
        &mut self,
        plies: u16,
        memo: &mut Memo,
    ) -> Result<Result<Checked, Failure>, SearchError> {
        // First the moves the transposition table knows to win; then, if none checks out (the
        // table lost them), the node is searched again on this line and its winning moves read
        // from that search; last, searched as if the game started here: the proof may have
        // come from another line, where a win that passes a position of this line was not cut
        // short as a repetition.
        let mut why = None;
        for attempt in 0..3 {
            let children = match attempt {
                0 => {
                    let mut children = Vec::new();
                    for &m in self.board.legal_moves().iter() {
                        children.push(self.child(m, plies - 1)?);
                    }
                    children
                }
                1 => self.prove_children(plies)?.1,
                _ => {
                    let mut fresh = Prover::new(self.shared, self.attacker, &self.board);
                    fresh.prove_children(plies)?.1
                }
            };
            let mut winning: Vec<_> = children
                .into_iter()
                .filter(|c| c.status.is_proven())
                .map(|c| (c.status.dist, c.mv.iccs(), c))
                .collect();
            winning.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            for (_, _, c) in winning {
                self.push(c.mv, c.key);
                let r = self.check(plies - 1, memo);
                self.pop();
                match r? {
                    Ok(checked) => {
                        return Ok(Ok(Checked {
                            dist: checked.dist + 1,
                            best: Some(c.mv),
                            leaf: None,
                            line_bound: checked.line_bound,
                        }));
                    }
                    Err(e) => why = Some(format!("{}: {e}", c.mv.iccs())),
                }
            }
        }
        Ok(Err(match why {
            Some(why) => format!("no winning move checks out in {} ({why})", self.fen()),
            None => format!("no move wins in {} with {plies} plies left", self.fen()),
        }))
    }

    /// At a defender's move: every reply must lose; the main line takes the longest.
    fn check_defender(
        &mut self,
        plies: u16,
        memo: &mut Memo,
    ) -> Result<Result<Checked, Failure>, SearchError> {
        let mut moves: Vec<Move> = self.board.legal_moves().iter().copied().collect();
        moves.sort_by_key(|m| m.iccs());
        let (mut longest, mut best, mut line_bound) = (0, None, false);
        for m in moves {
            let key = crate::zobrist::after(self.key, &self.board, m);
            self.push(m, key);
            let r = self.check(plies - 1, memo);
            self.pop();
            match r? {
                Ok(c) => {
                    line_bound |= c.line_bound;
                    if best.is_none() || c.dist + 1 > longest {
                        longest = c.dist + 1;
                        best = Some(m);
                    }
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(Checked {
            dist: longest,
            best,
            leaf: None,
            line_bound,
        }))
    }

    /// The main line from the current position, already checked with `plies` left: the moves
    /// and the leaf it reaches (the position is left at that leaf).
    pub fn main_line(
        &mut self,
        mut plies: u16,
        memo: &mut Memo,
    ) -> Result<Result<(Vec<Move>, Leaf), Failure>, SearchError> {
        let mut line = Vec::new();
        loop {
            let c = match self.check(plies, memo)? {
                Ok(c) => c,
                Err(e) => return Ok(Err(e)),
            };
            match (c.leaf, c.best) {
                (Some(leaf), _) => return Ok(Ok((line, leaf))),
                (None, Some(m)) => {
                    let key = crate::zobrist::after(self.key, &self.board, m);
                    self.push(m, key);
                    line.push(m);
                    plies -= 1;
                }
                (None, None) => return Ok(Err("a checked position without a move".into())),
            }
        }
    }
}

impl Leaf {
    /// How a line ending at this leaf ends, when the leaf is not a table (whose own main line
    /// continues it).
    pub fn end(self) -> LineEnd {
        match self {
            Leaf::Mate { in_check: true } => LineEnd::Mate,
            Leaf::Mate { in_check: false } => LineEnd::Stalemate,
            Leaf::Repetition(rule) => LineEnd::Rule(rule),
            Leaf::Table(_) => LineEnd::Draw,
        }
    }
}
