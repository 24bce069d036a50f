//! The serde forms of a probe and of a main line: the one description of their fields that every
//! interface shows (`xqtb probe --json`, `xqtb query --json`, the gRPC responses, the HTTP API).
//! Field names carry their units: `dtm_plies` is the distance to mate in plies, `null` for a
//! draw; `wdl` is the value for the side to move (for a move: for the side to move after it).

use crate::prober::{LineEnd, MainLine, MoveInfo, ProbeResult};
use serde::{Deserialize, Serialize};
use xiangqi::{Board, Color};
use xqtb_core::Value;

/// Win, draw or loss, for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wdl {
    /// The side to move wins.
    Win,
    /// Neither side can force a win.
    Draw,
    /// The side to move loses.
    Loss,
}

impl Wdl {
    /// The category of `value` (`None` for [`Value::Illegal`], which no report carries).
    pub fn of(value: Value) -> Option<Wdl> {
        match value {
            Value::Win(_) => Some(Wdl::Win),
            Value::Draw => Some(Wdl::Draw),
            Value::Loss(_) => Some(Wdl::Loss),
            Value::Illegal => None,
        }
    }

    /// `"win"`, `"draw"` or `"loss"`.
    pub const fn name(self) -> &'static str {
        match self {
            Wdl::Win => "win",
            Wdl::Draw => "draw",
            Wdl::Loss => "loss",
        }
    }

    /// Parses [`Wdl::name`].
    pub fn from_name(s: &str) -> Option<Wdl> {
        [Wdl::Win, Wdl::Draw, Wdl::Loss]
            .into_iter()
            .find(|w| w.name() == s)
    }
}

/// A side, as reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// Red (uppercase in FEN, moves first).
    Red,
    /// Black.
    Black,
}

impl From<Color> for Side {
    fn from(c: Color) -> Side {
        match c {
            Color::Red => Side::Red,
            Color::Black => Side::Black,
        }
    }
}

/// One legal move and the value of the position it leads to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveReport {
    /// ICCS coordinates, e.g. `h2e2`.
    pub iccs: String,
    /// Chinese notation, e.g. `炮二平五`.
    pub chinese: String,
    /// WXF notation, e.g. `C2.5`.
    pub wxf: String,
    /// The value after the move, for the side to move then.
    pub wdl: Wdl,
    /// Its distance to mate in plies (`null` for a draw).
    pub dtm_plies: Option<u16>,
    /// The position after the move (main lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fen: Option<String>,
}

impl MoveReport {
    fn of(m: &MoveInfo, fen: Option<String>) -> MoveReport {
        MoveReport {
            iccs: m.iccs.clone(),
            chinese: m.chinese.clone(),
            wxf: m.wxf.clone(),
            wdl: Wdl::of(m.value).unwrap_or(Wdl::Draw),
            dtm_plies: m.value.dtm_plies(),
            fen,
        }
    }
}

/// A probed position: its value and every legal move's value, best first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// The position's FEN, normalised (`- - 0 1` after the side to move).
    pub fen: String,
    /// Whose turn it is.
    pub side_to_move: Side,
    /// The canonical table, `null` when neither side has an attacking piece (a draw without a
    /// table).
    pub table: Option<String>,
    /// The rule set of the values.
    pub rules: String,
    /// The value for the side to move.
    pub wdl: Wdl,
    /// Its distance to mate in plies (`null` for a draw).
    pub dtm_plies: Option<u16>,
    /// Every legal move, best first for the side to move.
    pub moves: Vec<MoveReport>,
}

impl From<&ProbeResult> for ProbeReport {
    fn from(r: &ProbeResult) -> ProbeReport {
        ProbeReport {
            fen: r.fen.clone(),
            side_to_move: r.board.side_to_move().into(),
            table: r.table.map(|s| s.name()),
            rules: r.rules.name().into(),
            wdl: Wdl::of(r.value).unwrap_or(Wdl::Draw),
            dtm_plies: r.value.dtm_plies(),
            moves: r.moves.iter().map(|m| MoveReport::of(m, None)).collect(),
        }
    }
}

/// A main line: the winner's fastest mate against the loser's longest defence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainlineReport {
    /// The starting position's FEN, normalised.
    pub fen: String,
    /// Whose turn it is at the start.
    pub side_to_move: Side,
    /// The rule set of the values.
    pub rules: String,
    /// The value of the start for its side to move.
    pub wdl: Wdl,
    /// Its distance to mate in plies (`null` for a draw).
    pub dtm_plies: Option<u16>,
    /// Plies in the line.
    pub plies: usize,
    /// How the line ends: `mate`, `stalemate` (no legal move without being in check: also a
    /// loss) or `draw` (a drawn start has no line).
    pub end: String,
    /// The moves, each with the value and FEN of the position it leads to.
    pub moves: Vec<MoveReport>,
}

impl From<&MainLine> for MainlineReport {
    fn from(line: &MainLine) -> MainlineReport {
        let mut board: Board = line.board.clone();
        let moves = line
            .moves
            .iter()
            .map(|m| {
                board.make(m.mv);
                MoveReport::of(m, Some(board.fen()))
            })
            .collect();
        MainlineReport {
            fen: line.fen.clone(),
            side_to_move: line.board.side_to_move().into(),
            rules: line.rules.name().into(),
            wdl: Wdl::of(line.value).unwrap_or(Wdl::Draw),
            dtm_plies: line.value.dtm_plies(),
            plies: line.moves.len(),
            end: line.end.name().into(),
            moves,
        }
    }
}

impl LineEnd {
    /// The ending with this [`LineEnd::name`].
    pub fn from_name(s: &str) -> Option<LineEnd> {
        [LineEnd::Mate, LineEnd::Stalemate, LineEnd::Draw]
            .into_iter()
            .find(|e| e.name() == s)
    }
}
