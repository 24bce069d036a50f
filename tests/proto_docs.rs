//! `proto/xqtb.proto` documents every value a string field can take, for clients we did not
//! write. These tests pin those lists to the code that fills the fields: for each field with a
//! fixed set of values, the quoted values of its comment must be exactly the values the server
//! can send (produced here through the same conversions the services use), so a new value in
//! the code fails here until the proto's comment names it, and a value the code no longer sends
//! fails here until the comment drops it.

use app::TableReport;
use app::scheduler::JobState;
use probe::{Category, LineEnd, MainlineReport, ProbeReport, RuleName, Side};
use search::{Outcome, SearchReport, Source, StopReason};
use std::collections::{BTreeMap, BTreeSet};
use xqtb_core::{Rule, RuleSet};

/// The comment directly above each field, by (message, field).
fn field_comments() -> BTreeMap<(String, String), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/proto/xqtb.proto");
    let text = std::fs::read_to_string(path).expect("read proto/xqtb.proto");
    let mut out = BTreeMap::new();
    // Open blocks: `message` names, and `""` for the others (service, oneof).
    let mut blocks: Vec<String> = Vec::new();
    let mut comment = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(c) = line.strip_prefix("//") {
            comment.push_str(c);
            comment.push(' ');
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if line.ends_with('{') {
            let name = match words.as_slice() {
                ["message", name, ..] => name.to_string(),
                _ => String::new(),
            };
            blocks.push(name);
        } else if line.starts_with('}') {
            blocks.pop();
        } else if let Some(eq) = words.iter().position(|w| *w == "=")
            && eq >= 2
            && !line.starts_with("rpc ")
            && let Some(message) = blocks.iter().rev().find(|b| !b.is_empty())
        {
            out.insert(
                (message.clone(), words[eq - 1].to_string()),
                comment.clone(),
            );
        }
        comment.clear();
    }
    out
}

/// The `"quoted"` values of a comment.
fn quoted(comment: &str) -> BTreeSet<String> {
    comment
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every category. The match has no wildcard arm: a new variant does not compile here, and
/// whoever adds it to the match adds it to the list beside it.
fn categories() -> Vec<Category> {
    let all = vec![Category::Win, Category::Draw, Category::Loss];
    for c in &all {
        match c {
            Category::Win | Category::Draw | Category::Loss => {}
        }
    }
    all
}

/// Every repetition rule (exhaustive, as in [`categories`]).
fn rules() -> Vec<RuleName> {
    let all = vec![RuleName::PerpetualCheck, RuleName::PerpetualChase];
    for r in &all {
        match r {
            RuleName::PerpetualCheck | RuleName::PerpetualChase => {}
        }
    }
    all
}

/// Every way a main line ends (exhaustive, as in [`categories`]).
fn line_ends() -> Vec<LineEnd> {
    let all = vec![
        LineEnd::Mate,
        LineEnd::Stalemate,
        LineEnd::Draw,
        LineEnd::Rule(Rule::PerpetualCheck),
        LineEnd::Rule(Rule::PerpetualChase),
    ];
    for e in &all {
        match e {
            LineEnd::Mate
            | LineEnd::Stalemate
            | LineEnd::Draw
            | LineEnd::Rule(Rule::PerpetualCheck | Rule::PerpetualChase) => {}
        }
    }
    all
}

/// Every result of a search (exhaustive, as in [`categories`]).
fn outcomes() -> Vec<Outcome> {
    let all = vec![Outcome::Win, Outcome::Loss, Outcome::Draw, Outcome::Unknown];
    for o in &all {
        match o {
            Outcome::Win | Outcome::Loss | Outcome::Draw | Outcome::Unknown => {}
        }
    }
    all
}

/// Every source of a search's answer (exhaustive, as in [`categories`]), by the name the
/// library gives it.
fn sources() -> Vec<String> {
    let all = [Source::Tables, Source::Search];
    for s in &all {
        match s {
            Source::Tables | Source::Search => {}
        }
    }
    all.iter()
        .map(|s| {
            serde_json::to_value(s)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Every limit that stops a search (exhaustive, as in [`categories`]).
fn stop_reasons() -> Vec<StopReason> {
    let all = vec![
        StopReason::MaxPlies,
        StopReason::Nodes,
        StopReason::Time,
        StopReason::Cancelled,
    ];
    for r in &all {
        match r {
            StopReason::MaxPlies | StopReason::Nodes | StopReason::Time | StopReason::Cancelled => {
            }
        }
    }
    all
}

/// A search report with these values (the rest arbitrary).
fn search_report(
    side: Side,
    result: Outcome,
    end: Option<LineEnd>,
    source: &str,
    stopped: Option<StopReason>,
) -> SearchReport {
    SearchReport {
        fen: String::new(),
        side_to_move: side,
        rules: RuleSet::default().name().into(),
        result: result.name().into(),
        dtm_plies: None,
        shortest: false,
        best_move: None,
        line: Vec::new(),
        end: end.map(|e| e.name().into()),
        source: source.into(),
        searched_plies: 0,
        nodes: 0,
        table_hits: 0,
        time_ms: 0,
        stopped: stopped.map(|s| s.name().into()),
    }
}

/// A table's report in every state it can be in: its jobs (three) counted by state.
fn table_states() -> Vec<&'static str> {
    let table = xqtb_core::TableId::new(RuleSet::Asian, "KRPvKR".parse().unwrap());
    let report = |[waiting, ready, leased, finished, failed]: [u32; 5]| TableReport {
        table,
        jobs: 3,
        waiting,
        ready,
        leased,
        finished,
        failed,
        entries_total: 300,
        entries_done: 100 * finished as u64,
    };
    let states: Vec<&str> = [
        [3, 0, 0, 0, 0],
        [2, 1, 0, 0, 0],
        [1, 1, 1, 0, 0],
        [2, 0, 0, 1, 0],
        [0, 0, 0, 3, 0],
        [1, 0, 0, 1, 1],
    ]
    .into_iter()
    .map(|counts| report(counts).state())
    .collect();
    assert_eq!(set(states.iter().copied()), set(TableReport::STATES));
    states
}

/// Every job state (exhaustive, as in [`categories`]).
fn job_states() -> Vec<JobState> {
    let all = vec![
        JobState::Waiting,
        JobState::Ready,
        JobState::Leased,
        JobState::Finished,
        JobState::Failed,
    ];
    for s in &all {
        match s {
            JobState::Waiting
            | JobState::Ready
            | JobState::Leased
            | JobState::Finished
            | JobState::Failed => {}
        }
    }
    all
}

/// A probe report with these values (the rest arbitrary).
fn probe_report(side: Side, category: Category, rule: Option<RuleName>) -> ProbeReport {
    ProbeReport {
        fen: String::new(),
        side_to_move: side,
        table: None,
        rules: RuleSet::default().name().into(),
        category,
        dtm_plies: None,
        rule,
        rule_plies: None,
        rule_round: None,
        moves: Vec::new(),
    }
}

/// A main-line report ending in `end`.
fn mainline_report(end: LineEnd) -> MainlineReport {
    MainlineReport {
        fen: String::new(),
        side_to_move: Side::Red,
        rules: RuleSet::default().name().into(),
        category: Category::Win,
        dtm_plies: None,
        rule: None,
        rule_plies: None,
        rule_round: None,
        plies: 0,
        end: end.name().into(),
        moves: Vec::new(),
        cycle: Vec::new(),
    }
}

fn set<'a>(values: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    values
        .into_iter()
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_fixed_value_set_in_the_proto_is_what_the_code_sends() {
    let comments = field_comments();
    // The wire values, through the conversions the services use (`rpc`).
    let wire_categories: Vec<String> = categories()
        .into_iter()
        .map(|c| rpc::probe_response(&probe_report(Side::Red, c, None)).category)
        .collect();
    let wire_rules: Vec<String> = rules()
        .into_iter()
        .map(|r| rpc::probe_response(&probe_report(Side::Red, Category::Win, Some(r))).rule)
        .collect();
    let wire_sides: Vec<String> = [Side::Red, Side::Black]
        .into_iter()
        .map(|s| rpc::probe_response(&probe_report(s, Category::Win, None)).side_to_move)
        .collect();
    let wire_endings: Vec<String> = line_ends()
        .into_iter()
        .map(|e| rpc::mainline_response(&mainline_report(e)).ending)
        .collect();
    let rule_sets = set(RuleSet::ALL.iter().map(|r| r.name()));
    let categories = set(wire_categories.iter().map(String::as_str));
    let rule_names = set(wire_rules.iter().map(String::as_str));
    let sides = set(wire_sides.iter().map(String::as_str));
    let endings = set(wire_endings.iter().map(String::as_str));
    let states = set(job_states().into_iter().map(JobState::name));
    let search = |side, result, end, source: &str, stopped| {
        rpc::search_response(&search_report(side, result, end, source, stopped))
    };
    let wire: Vec<[String; 5]> = outcomes()
        .into_iter()
        .flat_map(|o| line_ends().into_iter().map(move |e| (o, e)))
        .zip(sources().into_iter().cycle())
        .zip(stop_reasons().into_iter().cycle())
        .zip([Side::Red, Side::Black].into_iter().cycle())
        .map(|((((o, e), source), stopped), side)| {
            let r = search(side, o, Some(e), &source, Some(stopped));
            [r.result, r.end, r.source, r.stopped, r.side_to_move]
        })
        .collect();
    let column = |i: usize| set(wire.iter().map(|w| w[i].as_str()));
    let (search_results, search_ends, search_sources, search_stops, search_sides) =
        (column(0), column(1), column(2), column(3), column(4));
    // Every value of each column is produced above (the pairing of the lists cycles).
    assert_eq!(search_results.len(), outcomes().len());
    assert_eq!(search_ends, endings);
    assert_eq!(search_sources.len(), 2);
    assert_eq!(search_stops.len(), stop_reasons().len());
    let table_states = set(table_states());

    let expected: Vec<(&str, &str, &BTreeSet<String>)> = vec![
        ("TableRef", "rules", &rule_sets),
        ("FetchTableRequest", "rules", &rule_sets),
        ("ProbeRequest", "rules", &rule_sets),
        ("ProbeBatchRequest", "rules", &rule_sets),
        ("MainlineRequest", "rules", &rule_sets),
        ("SearchRequest", "rules", &rule_sets),
        ("SearchResponse", "rules", &rule_sets),
        ("SearchResponse", "side_to_move", &search_sides),
        ("SearchResponse", "result", &search_results),
        ("SearchResponse", "end", &search_ends),
        ("SearchResponse", "source", &search_sources),
        ("SearchResponse", "stopped", &search_stops),
        ("DownloadShardRequest", "rules", &rule_sets),
        ("SubmitRequest", "rules", &rule_sets),
        ("SubmitResponse", "rules", &rule_sets),
        ("ShardInfo", "rules", &rule_sets),
        ("ProbeResponse", "rules", &rule_sets),
        ("MainlineResponse", "rules", &rule_sets),
        ("MoveValue", "category", &categories),
        ("ProbeResponse", "category", &categories),
        ("MainlineResponse", "category", &categories),
        ("MoveValue", "rule", &rule_names),
        ("ProbeResponse", "rule", &rule_names),
        ("MainlineResponse", "rule", &rule_names),
        ("ProbeResponse", "side_to_move", &sides),
        ("MainlineResponse", "side_to_move", &sides),
        ("MainlineResponse", "ending", &endings),
        ("JobStatus", "state", &states),
        ("TableStatus", "state", &table_states),
    ];
    for (message, field, want) in expected {
        let comment = comments
            .get(&(message.to_string(), field.to_string()))
            .unwrap_or_else(|| panic!("{message}.{field} has no comment in xqtb.proto"));
        assert_eq!(
            &quoted(comment),
            want,
            "{message}.{field}: the values its comment names differ from those the code sends \
             (comment: {comment})"
        );
    }
    // A value easily left out of the comment (stalemate is a loss in Xiangqi, and a line ends
    // with it), named outright so that the check above cannot pass without it.
    assert!(endings.contains("stalemate"));
}

#[test]
fn every_string_field_has_a_comment() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/proto/xqtb.proto");
    let text = std::fs::read_to_string(path).unwrap();
    let comments = field_comments();
    let mut strings = 0;
    let mut message = String::new();
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["message", name, ..] = words.as_slice() {
            message = name.to_string();
        }
        let field = match words.as_slice() {
            ["string", name, "=", ..] | ["repeated" | "optional", "string", name, "=", ..] => name,
            _ => continue,
        };
        strings += 1;
        let comment = &comments[&(message.clone(), field.to_string())];
        assert!(
            !comment.trim().is_empty(),
            "{message}.{field} is a string field without a comment"
        );
    }
    assert!(
        strings > 40,
        "only {strings} string fields found: the parser is off"
    );
}
