//! A search's answer as the shells report it (JSON over HTTP, the CLI's `--json`).

use crate::answer::{Outcome, SearchResult, Source};
use crate::limits::StopReason;
use probe::Side;
use serde::{Deserialize, Serialize};

/// A move of the main line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineMoveReport {
    /// ICCS coordinates, e.g. `h2e2`.
    pub iccs: String,
    /// Chinese notation, e.g. `炮二平五`.
    pub chinese: String,
    /// WXF notation, e.g. `C2.5`.
    pub wxf: String,
}

/// A search's answer. Field names carry their units, as the probe's reports do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchReport {
    /// The position's FEN, normalised.
    pub fen: String,
    /// Whose turn it is.
    pub side_to_move: Side,
    /// The rule set of repetitions and tables.
    pub rules: String,
    /// `win`, `loss`, `draw` or `unknown`, for the side to move.
    pub result: String,
    /// Plies to mate (or to the repetition that wins) for a win or a loss: the shortest when
    /// `shortest`, else the length of a proven win, an upper bound.
    pub dtm_plies: Option<u16>,
    /// For a win or a loss: every shorter win was disproven. False when the limits stopped the
    /// search between proving a win and disproving every shorter one.
    pub shortest: bool,
    /// The first move of the main line, in ICCS.
    pub best_move: Option<String>,
    /// The main line: the winner's fastest win against the longest defence.
    pub line: Vec<LineMoveReport>,
    /// How the main line ends: `mate`, `stalemate`, `draw`, `perpetual-check` or
    /// `perpetual-chase`.
    pub end: Option<String>,
    /// `tables` when the position's own material is stored, else `search`.
    pub source: String,
    /// Every win of this many plies or fewer, for either side, was searched for and disproven.
    pub searched_plies: u16,
    /// Positions expanded.
    pub nodes: u64,
    /// Positions read from a table.
    pub table_hits: u64,
    /// Milliseconds taken.
    pub time_ms: u64,
    /// For an `unknown` result, or a win not known to be the shortest, the limit that stopped
    /// the search: `max-plies`, `nodes`, `time` or `cancelled`.
    pub stopped: Option<String>,
}

impl From<&SearchResult> for SearchReport {
    fn from(r: &SearchResult) -> SearchReport {
        let side = xiangqi::parse_fen(&r.fen)
            .map(|b| b.side_to_move())
            .unwrap_or(xiangqi::Color::Red);
        SearchReport {
            fen: r.fen.clone(),
            side_to_move: side.into(),
            rules: r.rules.name().into(),
            result: r.outcome.name().into(),
            dtm_plies: r.plies,
            shortest: r.shortest,
            best_move: r.best_move().map(|m| m.iccs.clone()),
            line: r
                .line
                .iter()
                .map(|m| LineMoveReport {
                    iccs: m.iccs.clone(),
                    chinese: m.chinese.clone(),
                    wxf: m.wxf.clone(),
                })
                .collect(),
            end: r.end.map(|e| e.name().into()),
            source: match r.source {
                Source::Tables => "tables",
                Source::Search => "search",
            }
            .into(),
            searched_plies: r.searched_plies,
            nodes: r.nodes,
            table_hits: r.table_hits,
            time_ms: r.elapsed.as_millis().min(u64::MAX as u128) as u64,
            stopped: r.stopped.map(|s: StopReason| s.name().into()),
        }
    }
}

impl SearchReport {
    /// The result, parsed back.
    pub fn outcome(&self) -> Outcome {
        match self.result.as_str() {
            "win" => Outcome::Win,
            "loss" => Outcome::Loss,
            "draw" => Outcome::Draw,
            _ => Outcome::Unknown,
        }
    }
}
