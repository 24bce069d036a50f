//! The protocol's messages from and to the domain types. Every message field that names a table,
//! a job or a value is mapped here, in both directions, so that the services and the clients
//! agree on what each field means.

use probe::{Category, LineEnd, MainlineReport, MoveReport, ProbeReport, RuleName, Side};
use proto::v1 as pb;
use search::{LineMoveReport, SearchReport};
use thiserror::Error;
use xqtb_core::{
    JobKey, RuleSet, Signature, SignatureError, SlotRange, TableId, TableIndex, UnknownRuleSet,
};

/// Why a message could not be mapped to the domain types.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// A signature that does not parse.
    #[error("bad signature '{text}': {error}")]
    BadSignature {
        /// The text sent.
        text: String,
        /// Why it was refused.
        error: SignatureError,
    },
    /// A rule set name that names no rule set.
    #[error(transparent)]
    UnknownRules(#[from] UnknownRuleSet),
    /// A field the message must have is missing.
    #[error("the message has no {0}")]
    Missing(&'static str),
    /// A field holds a value outside its range.
    #[error("bad {field}: {value}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// What it holds.
        value: String,
    },
}

/// The rule set named `name`, `default` when the name is empty.
pub fn parse_rules(name: &str, default: RuleSet) -> Result<RuleSet, ConvertError> {
    if name.is_empty() {
        Ok(default)
    } else {
        Ok(name.parse()?)
    }
}

/// The table of `signature` (any spelling) under the rule set `rules` (`default` when empty).
pub fn parse_table(
    signature: &str,
    rules: &str,
    default: RuleSet,
) -> Result<TableId, ConvertError> {
    let sig: Signature = signature
        .parse()
        .map_err(|error| ConvertError::BadSignature {
            text: signature.to_string(),
            error,
        })?;
    Ok(TableId::new(parse_rules(rules, default)?, sig))
}

/// The message form of table `id`.
pub fn table_ref(id: &TableId) -> pb::TableRef {
    pb::TableRef {
        rules: id.rules.name().into(),
        signature: id.signature.name(),
    }
}

/// The message form of job `key`.
pub fn job_key(key: &JobKey) -> pb::JobKey {
    pb::JobKey {
        table: Some(table_ref(&key.table)),
        first_slot: key.slots.start,
        end_slot: key.slots.end,
    }
}

/// The job a message names; its slots must lie within the table's index.
pub fn parse_job_key(key: Option<&pb::JobKey>) -> Result<JobKey, ConvertError> {
    let key = key.ok_or(ConvertError::Missing("job key"))?;
    let t = key.table.as_ref().ok_or(ConvertError::Missing("table"))?;
    if t.rules.is_empty() {
        return Err(ConvertError::Missing("rule set of the job"));
    }
    let table = parse_table(&t.signature, &t.rules, RuleSet::default())?;
    let size = TableIndex::size_of(&table.signature);
    if key.first_slot >= key.end_slot || key.end_slot > size {
        return Err(ConvertError::BadValue {
            field: "slot range",
            value: format!(
                "{}..{} (the table has {size} slots)",
                key.first_slot, key.end_slot
            ),
        });
    }
    Ok(JobKey {
        table,
        slots: SlotRange {
            start: key.first_slot,
            end: key.end_slot,
        },
    })
}

fn side_name(s: Side) -> &'static str {
    match s {
        Side::Red => "red",
        Side::Black => "black",
    }
}

fn parse_side(s: &str) -> Result<Side, ConvertError> {
    match s {
        "red" => Ok(Side::Red),
        "black" => Ok(Side::Black),
        other => Err(ConvertError::BadValue {
            field: "side to move",
            value: other.into(),
        }),
    }
}

fn parse_category(s: &str) -> Result<Category, ConvertError> {
    Category::from_name(s).ok_or_else(|| ConvertError::BadValue {
        field: "category",
        value: s.into(),
    })
}

fn rule_name(r: Option<RuleName>) -> String {
    r.map(|r| r.name().to_string()).unwrap_or_default()
}

fn parse_rule(s: &str) -> Result<Option<RuleName>, ConvertError> {
    if s.is_empty() {
        return Ok(None);
    }
    RuleName::from_name(s)
        .map(Some)
        .ok_or_else(|| ConvertError::BadValue {
            field: "rule",
            value: s.into(),
        })
}

fn dtm(d: Option<u32>) -> Result<Option<u16>, ConvertError> {
    d.map(|d| {
        u16::try_from(d).map_err(|_| ConvertError::BadValue {
            field: "dtm_plies",
            value: d.to_string(),
        })
    })
    .transpose()
}

fn round(r: Option<u32>) -> Result<Option<u8>, ConvertError> {
    r.map(|r| {
        u8::try_from(r).map_err(|_| ConvertError::BadValue {
            field: "rule_round",
            value: r.to_string(),
        })
    })
    .transpose()
}

fn move_value(m: &MoveReport) -> pb::MoveValue {
    pb::MoveValue {
        iccs: m.iccs.clone(),
        chinese: m.chinese.clone(),
        wxf: m.wxf.clone(),
        category: m.category.name().into(),
        dtm_plies: m.dtm_plies.map(u32::from),
        fen: m.fen.clone().unwrap_or_default(),
        rule: rule_name(m.rule),
        rule_plies: m.rule_plies.map(u32::from),
        rule_round: m.rule_round.map(u32::from),
    }
}

fn move_report(m: pb::MoveValue) -> Result<MoveReport, ConvertError> {
    Ok(MoveReport {
        category: parse_category(&m.category)?,
        dtm_plies: dtm(m.dtm_plies)?,
        rule: parse_rule(&m.rule)?,
        rule_plies: dtm(m.rule_plies)?,
        rule_round: round(m.rule_round)?,
        iccs: m.iccs,
        chinese: m.chinese,
        wxf: m.wxf,
        fen: (!m.fen.is_empty()).then_some(m.fen),
    })
}

/// The message form of a probe.
pub fn probe_response(r: &ProbeReport) -> pb::ProbeResponse {
    pb::ProbeResponse {
        fen: r.fen.clone(),
        category: r.category.name().into(),
        dtm_plies: r.dtm_plies.map(u32::from),
        rule: rule_name(r.rule),
        rule_plies: r.rule_plies.map(u32::from),
        rule_round: r.rule_round.map(u32::from),
        table: r.table.clone().unwrap_or_default(),
        moves: r.moves.iter().map(move_value).collect(),
        side_to_move: side_name(r.side_to_move).into(),
        rules: r.rules.clone(),
    }
}

/// The probe a response describes.
pub fn probe_report(r: pb::ProbeResponse) -> Result<ProbeReport, ConvertError> {
    Ok(ProbeReport {
        side_to_move: parse_side(&r.side_to_move)?,
        table: (!r.table.is_empty()).then_some(r.table),
        category: parse_category(&r.category)?,
        dtm_plies: dtm(r.dtm_plies)?,
        rule: parse_rule(&r.rule)?,
        rule_plies: dtm(r.rule_plies)?,
        rule_round: round(r.rule_round)?,
        moves: r
            .moves
            .into_iter()
            .map(move_report)
            .collect::<Result<_, _>>()?,
        fen: r.fen,
        rules: r.rules,
    })
}

/// The message form of a main line.
pub fn mainline_response(r: &MainlineReport) -> pb::MainlineResponse {
    pb::MainlineResponse {
        fen: r.fen.clone(),
        category: r.category.name().into(),
        dtm_plies: r.dtm_plies.map(u32::from),
        rule: rule_name(r.rule),
        rule_plies: r.rule_plies.map(u32::from),
        rule_round: r.rule_round.map(u32::from),
        moves: r.moves.iter().map(move_value).collect(),
        cycle: r.cycle.iter().map(move_value).collect(),
        ending: r.end.clone(),
        side_to_move: side_name(r.side_to_move).into(),
        rules: r.rules.clone(),
    }
}

/// The main line a response describes.
pub fn mainline_report(r: pb::MainlineResponse) -> Result<MainlineReport, ConvertError> {
    if LineEnd::from_name(&r.ending).is_none() {
        return Err(ConvertError::BadValue {
            field: "ending",
            value: r.ending,
        });
    }
    let moves: Vec<MoveReport> = r
        .moves
        .into_iter()
        .map(move_report)
        .collect::<Result<_, _>>()?;
    let cycle: Vec<MoveReport> = r
        .cycle
        .into_iter()
        .map(move_report)
        .collect::<Result<_, _>>()?;
    Ok(MainlineReport {
        side_to_move: parse_side(&r.side_to_move)?,
        category: parse_category(&r.category)?,
        dtm_plies: dtm(r.dtm_plies)?,
        rule: parse_rule(&r.rule)?,
        rule_plies: dtm(r.rule_plies)?,
        rule_round: round(r.rule_round)?,
        cycle,
        plies: moves.len(),
        moves,
        fen: r.fen,
        rules: r.rules,
        end: r.ending,
    })
}

/// The text of an optional field; empty when absent.
fn text(s: &Option<String>) -> String {
    s.clone().unwrap_or_default()
}

/// An optional field from its text; absent when empty.
fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Refuses a value outside the names `field` may take.
fn one_of(field: &'static str, value: &str, names: &[&str]) -> Result<(), ConvertError> {
    if value.is_empty() || names.contains(&value) {
        Ok(())
    } else {
        Err(ConvertError::BadValue {
            field,
            value: value.into(),
        })
    }
}

/// The message form of a search's report (without the limits it ran under, which the server
/// adds).
pub fn search_response(r: &SearchReport) -> pb::SearchResponse {
    pb::SearchResponse {
        fen: r.fen.clone(),
        side_to_move: side_name(r.side_to_move).into(),
        rules: r.rules.clone(),
        result: r.result.clone(),
        dtm_plies: r.dtm_plies.map(u32::from),
        shortest: r.shortest,
        best_move: text(&r.best_move),
        line: r
            .line
            .iter()
            .map(|m| pb::SearchMove {
                iccs: m.iccs.clone(),
                chinese: m.chinese.clone(),
                wxf: m.wxf.clone(),
            })
            .collect(),
        end: text(&r.end),
        source: r.source.clone(),
        searched_plies: r.searched_plies.into(),
        nodes: r.nodes,
        table_hits: r.table_hits,
        time_ms: r.time_ms,
        stopped: text(&r.stopped),
        limits: None,
    }
}

/// The search report a response describes.
pub fn search_report(r: pb::SearchResponse) -> Result<SearchReport, ConvertError> {
    one_of("result", &r.result, &["win", "loss", "draw", "unknown"])?;
    one_of("source", &r.source, &["tables", "search"])?;
    if !r.end.is_empty() && LineEnd::from_name(&r.end).is_none() {
        return Err(ConvertError::BadValue {
            field: "end",
            value: r.end,
        });
    }
    let searched_plies = u16::try_from(r.searched_plies).map_err(|_| ConvertError::BadValue {
        field: "searched_plies",
        value: r.searched_plies.to_string(),
    })?;
    Ok(SearchReport {
        side_to_move: parse_side(&r.side_to_move)?,
        dtm_plies: dtm(r.dtm_plies)?,
        shortest: r.shortest,
        fen: r.fen,
        rules: r.rules,
        result: r.result,
        best_move: non_empty(r.best_move),
        line: r
            .line
            .into_iter()
            .map(|m| LineMoveReport {
                iccs: m.iccs,
                chinese: m.chinese,
                wxf: m.wxf,
            })
            .collect(),
        end: non_empty(r.end),
        source: r.source,
        searched_plies,
        nodes: r.nodes,
        table_hits: r.table_hits,
        time_ms: r.time_ms,
        stopped: non_empty(r.stopped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_keys_round_trip_and_bad_ranges_are_refused() {
        let table = parse_table("krnkr", "", RuleSet::CyclesAreDraws).unwrap();
        let key = JobKey::whole(table);
        assert_eq!(parse_job_key(Some(&job_key(&key))), Ok(key));
        let mut bad = job_key(&key);
        bad.end_slot += 1;
        assert!(matches!(
            parse_job_key(Some(&bad)),
            Err(ConvertError::BadValue { .. })
        ));
        assert_eq!(parse_job_key(None), Err(ConvertError::Missing("job key")));
        assert!(parse_table("KRXvK", "", RuleSet::CyclesAreDraws).is_err());
        assert!(parse_rules("nonsense", RuleSet::CyclesAreDraws).is_err());
    }

    #[test]
    fn reports_round_trip_through_their_messages() {
        let m = MoveReport {
            iccs: "h2e2".into(),
            chinese: "炮二平五".into(),
            wxf: "C2.5".into(),
            category: Category::Loss,
            dtm_plies: Some(12),
            rule: None,
            rule_plies: None,
            rule_round: None,
            fen: None,
        };
        let probe = ProbeReport {
            fen: "x".into(),
            side_to_move: Side::Black,
            table: None,
            rules: "cycles-are-draws".into(),
            category: Category::Win,
            dtm_plies: None,
            rule: Some(RuleName::PerpetualCheck),
            rule_plies: Some(3),
            rule_round: Some(2),
            moves: vec![m.clone()],
        };
        assert_eq!(probe_report(probe_response(&probe)), Ok(probe));
        let line = MainlineReport {
            fen: "y".into(),
            side_to_move: Side::Red,
            rules: "cycles-are-draws".into(),
            category: Category::Draw,
            dtm_plies: None,
            rule: None,
            rule_plies: None,
            rule_round: None,
            plies: 1,
            end: "perpetual-chase".into(),
            moves: vec![MoveReport {
                fen: Some("z".into()),
                ..m.clone()
            }],
            cycle: vec![MoveReport {
                fen: Some("w".into()),
                ..m
            }],
        };
        assert_eq!(mainline_report(mainline_response(&line)), Ok(line));
    }

    #[test]
    fn search_reports_round_trip_through_their_messages() {
        let won = SearchReport {
            fen: "x".into(),
            side_to_move: Side::Black,
            rules: "asian".into(),
            result: "win".into(),
            dtm_plies: Some(3),
            shortest: true,
            best_move: Some("b0b8".into()),
            line: vec![LineMoveReport {
                iccs: "b0b8".into(),
                chinese: "车八进八".into(),
                wxf: "R8+8".into(),
            }],
            end: Some("mate".into()),
            source: "search".into(),
            searched_plies: 3,
            nodes: 6,
            table_hits: 0,
            time_ms: 1,
            stopped: None,
        };
        assert_eq!(search_report(search_response(&won)), Ok(won.clone()));
        let unknown = SearchReport {
            result: "unknown".into(),
            dtm_plies: None,
            shortest: false,
            best_move: None,
            line: Vec::new(),
            end: None,
            stopped: Some("time".into()),
            ..won
        };
        assert_eq!(
            search_report(search_response(&unknown)),
            Ok(unknown.clone())
        );
        let mut bad = search_response(&unknown);
        bad.result = "maybe".into();
        assert!(matches!(
            search_report(bad),
            Err(ConvertError::BadValue {
                field: "result",
                ..
            })
        ));
    }
}
