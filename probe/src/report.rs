//! The serde forms of a probe and of a main line: the one description of their fields that every
//! interface shows (`xqtb probe --json`, `xqtb query --json`, the gRPC responses, the HTTP API).
//! Field names carry their units: `category` is win, draw or loss for the side to move (for a
//! move: for the side to move after it); `dtm_plies` the distance to mate in plies, `null` for
//! draws and for values a repetition rule decides; `rule` names that rule (`perpetual-check`,
//! `perpetual-chase`, `null` otherwise) and `rule_plies` the plies until the losing side is
//! forced into the perpetual offence (0 when it is so now), `rule_round` the round of the rule
//! analysis that decided it (the winner prefers earlier rounds, then fewer plies; see
//! `docs/repetition-rules.md`).

use crate::prober::{LineEnd, MainLine, MoveInfo, ProbeResult};
use serde::{Deserialize, Serialize};
use xiangqi::{Board, Color};
use xqtb_core::{Plies, Rule, Value};

/// Win, draw or loss, for the side to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// The side to move wins.
    Win,
    /// Neither side can force a win.
    Draw,
    /// The side to move loses.
    Loss,
}

impl Category {
    /// The category of `value` (`None` for [`Value::Illegal`], which no report carries).
    pub fn of(value: Value) -> Option<Category> {
        match value {
            Value::Win(_) | Value::RuleWin(_) => Some(Category::Win),
            Value::Draw => Some(Category::Draw),
            Value::Loss(_) | Value::RuleLoss(_) => Some(Category::Loss),
            Value::Illegal => None,
        }
    }

    /// `"win"`, `"draw"` or `"loss"`.
    pub const fn name(self) -> &'static str {
        match self {
            Category::Win => "win",
            Category::Draw => "draw",
            Category::Loss => "loss",
        }
    }

    /// Parses [`Category::name`].
    pub fn from_name(s: &str) -> Option<Category> {
        [Category::Win, Category::Draw, Category::Loss]
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

/// A value in words, from the report fields: `win in 25 plies`, `draw`, `loss by the
/// perpetual-check rule in 2 plies (round 1)`.
pub fn value_text(
    category: Category,
    dtm_plies: Option<u16>,
    rule: Option<RuleName>,
    rule_plies: Option<u16>,
    rule_round: Option<u8>,
) -> String {
    match (category, dtm_plies, rule) {
        (Category::Draw, _, _) => "draw".into(),
        (c, Some(d), _) => format!("{} in {}", c.name(), Plies(d as u64)),
        (c, None, Some(r)) => format!(
            "{} by the {} rule in {} (round {})",
            c.name(),
            r.name(),
            Plies(rule_plies.unwrap_or(0) as u64),
            rule_round.unwrap_or(0)
        ),
        (c, None, None) => c.name().into(),
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
    pub category: Category,
    /// Its distance to mate in plies (`null` for draws and rule-decided values).
    pub dtm_plies: Option<u16>,
    /// The repetition rule that decides it, if one does.
    pub rule: Option<RuleName>,
    /// Plies until the rule applies, for rule-decided values.
    pub rule_plies: Option<u16>,
    /// The round of the rule analysis that decided it (a win of an earlier round is preferred
    /// to one with fewer plies of a later round), for rule-decided values.
    pub rule_round: Option<u8>,
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
            category: Category::of(m.value).unwrap_or(Category::Draw),
            dtm_plies: m.value.dtm_plies(),
            rule: m.value.rule().map(RuleName::from),
            rule_plies: m.value.rule_plies(),
            rule_round: m.value.rule_round(),
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
    pub category: Category,
    /// Its distance to mate in plies (`null` for draws and rule-decided values).
    pub dtm_plies: Option<u16>,
    /// The repetition rule that decides it, if one does.
    pub rule: Option<RuleName>,
    /// Plies until the rule applies, for rule-decided values.
    pub rule_plies: Option<u16>,
    /// The round of the rule analysis that decided it (a win of an earlier round is preferred
    /// to one with fewer plies of a later round), for rule-decided values.
    pub rule_round: Option<u8>,
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
            category: Category::of(r.value).unwrap_or(Category::Draw),
            dtm_plies: r.value.dtm_plies(),
            rule: r.value.rule().map(RuleName::from),
            rule_plies: r.value.rule_plies(),
            rule_round: r.value.rule_round(),
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
    pub category: Category,
    /// Its distance to mate in plies (`null` for draws and rule-decided values).
    pub dtm_plies: Option<u16>,
    /// The repetition rule that decides it, if one does.
    pub rule: Option<RuleName>,
    /// Plies until the rule applies, for rule-decided values.
    pub rule_plies: Option<u16>,
    /// The round of the rule analysis that decided it (a win of an earlier round is preferred
    /// to one with fewer plies of a later round), for rule-decided values.
    pub rule_round: Option<u8>,
    /// Plies in the line.
    pub plies: usize,
    /// How the line ends: `mate`, `stalemate` (no legal move without being in check: also a
    /// loss), `draw` (a drawn start has no line), `perpetual-check` or `perpetual-chase` (the
    /// side to move at the end can only keep up that offence, which loses, or walk into a loss).
    pub end: String,
    /// The moves, each with the value and FEN of the position it leads to.
    pub moves: Vec<MoveReport>,
    /// For a line that ends by a rule: how the offence goes on from the end until a position
    /// repeats (empty otherwise).
    #[serde(default)]
    pub cycle: Vec<MoveReport>,
}

impl From<&MainLine> for MainlineReport {
    fn from(line: &MainLine) -> MainlineReport {
        let mut board: Board = line.board.clone();
        let mut report = |m: &crate::MoveInfo| {
            board.make(m.mv);
            MoveReport::of(m, Some(board.fen()))
        };
        let moves = line.moves.iter().map(&mut report).collect();
        let cycle = line.cycle.iter().map(&mut report).collect();
        MainlineReport {
            fen: line.fen.clone(),
            side_to_move: line.board.side_to_move().into(),
            rules: line.rules.name().into(),
            category: Category::of(line.value).unwrap_or(Category::Draw),
            dtm_plies: line.value.dtm_plies(),
            rule: line.value.rule().map(RuleName::from),
            rule_plies: line.value.rule_plies(),
            rule_round: line.value.rule_round(),
            plies: line.moves.len(),
            end: line.end.name().into(),
            moves,
            cycle,
        }
    }
}

impl LineEnd {
    /// The ending with this [`LineEnd::name`].
    pub fn from_name(s: &str) -> Option<LineEnd> {
        [
            LineEnd::Mate,
            LineEnd::Stalemate,
            LineEnd::Draw,
            LineEnd::Rule(Rule::PerpetualCheck),
            LineEnd::Rule(Rule::PerpetualChase),
        ]
        .into_iter()
        .find(|e| e.name() == s)
    }
}

/// A repetition rule, as reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleName {
    /// The losing side can only keep checking.
    PerpetualCheck,
    /// The losing side can only keep chasing one piece.
    PerpetualChase,
}

impl From<Rule> for RuleName {
    fn from(r: Rule) -> RuleName {
        match r {
            Rule::PerpetualCheck => RuleName::PerpetualCheck,
            Rule::PerpetualChase => RuleName::PerpetualChase,
        }
    }
}

impl RuleName {
    /// `"perpetual-check"` or `"perpetual-chase"`.
    pub const fn name(self) -> &'static str {
        match self {
            RuleName::PerpetualCheck => "perpetual-check",
            RuleName::PerpetualChase => "perpetual-chase",
        }
    }

    /// Parses [`RuleName::name`].
    pub fn from_name(s: &str) -> Option<RuleName> {
        [RuleName::PerpetualCheck, RuleName::PerpetualChase]
            .into_iter()
            .find(|r| r.name() == s)
    }
}
