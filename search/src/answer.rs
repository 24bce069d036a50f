//! What a search answers.

use crate::limits::StopReason;
use probe::LineEnd;
use std::time::Duration;
use xiangqi::Move;
use xqtb_core::RuleSet;

/// The result for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It forces mate (or a win by the repetition rules).
    Win,
    /// The opponent forces mate (or a win by the repetition rules) whatever it plays.
    Loss,
    /// Neither side can force a win: proven by the tables, or by a search in which every line
    /// ended in a table, a mate or a stalemate.
    Draw,
    /// Not settled within the limits. Never a guess.
    Unknown,
}

impl Outcome {
    /// `"win"`, `"loss"`, `"draw"` or `"unknown"`.
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Win => "win",
            Outcome::Loss => "loss",
            Outcome::Draw => "draw",
            Outcome::Unknown => "unknown",
        }
    }
}

/// Where the answer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The position's own material is stored: the answer is the table's.
    Tables,
    /// The proof-number search (whose leaves may be tables).
    Search,
}

/// A move of the main line in the three notations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineMove {
    /// The move.
    pub mv: Move,
    /// ICCS coordinates, e.g. `h2e2`.
    pub iccs: String,
    /// Chinese notation, e.g. `炮二平五`.
    pub chinese: String,
    /// WXF notation, e.g. `C2.5`.
    pub wxf: String,
}

/// A search's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchResult {
    /// The position's FEN, normalised.
    pub fen: String,
    /// The rule set repetitions and tables are read under.
    pub rules: RuleSet,
    /// The result for the side to move.
    pub outcome: Outcome,
    /// For a win or a loss: plies to mate, counting the tables' distances exactly (for a win by
    /// the repetition rules, plies until the losing cycle is complete or the table's rule
    /// distance). The shortest the winner can force against the longest defence when
    /// [`SearchResult::shortest`]; otherwise the length of a proven win, an upper bound.
    pub plies: Option<u16>,
    /// For a win or a loss: every shorter win was disproven, so `plies` is the shortest. False
    /// when the limits stopped the search after it proved a win but before it disproved every
    /// shorter one (and for a draw or an unknown result).
    pub shortest: bool,
    /// The main line: the winner's fastest win against the longest defence, continued through
    /// the tables to the end. Empty for a draw or an unknown result.
    pub line: Vec<LineMove>,
    /// How the main line ends.
    pub end: Option<LineEnd>,
    /// Where the answer comes from.
    pub source: Source,
    /// Every win of this many plies or fewer, for either side that has a piece that can give
    /// check, was searched for and disproven (for a shortest win or loss: the depth it was
    /// found at).
    pub searched_plies: u16,
    /// Positions expanded.
    pub nodes: u64,
    /// Positions whose value was read from a table.
    pub table_hits: u64,
    /// Time taken.
    pub elapsed: Duration,
    /// For an unknown result, or a win or loss not known to be the shortest: which limit
    /// stopped the search.
    pub stopped: Option<StopReason>,
}

impl SearchResult {
    /// The first move of the main line.
    pub fn best_move(&self) -> Option<&LineMove> {
        self.line.first()
    }
}
