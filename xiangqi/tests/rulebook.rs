//! The adjudicator on published repetition cases: each row of the files in `tests/data` is a
//! position, moves whose last position repeats an earlier one, and the verdict its source gives.
//! The sources are independent of this program (their provenance is in each file's header):
//! - `rulebook-repetitions.tsv`: the AXF/WXF rule book's worked examples, one cycle each;
//! - `rulebook-lines.tsv`: the rule book's own move lines for the diagrams, lead-in included;
//! - `fsf-repetitions.tsv`: Fairy-Stockfish's tests of its chasing rules;
//! - `orange-repetitions.tsv`: the orange-xiangqi engine's repetition tests.
//!
//! The adjudicator's verdict must be the source's, except for the rows listed in `KNOWN`, each
//! with the reason; a known row that comes to agree fails too, so that the list stays true.

use xiangqi::repetition::{Verdict, adjudicate};
use xiangqi::{Color, parse_fen};

/// Rows whose verdict differs from the source's, or that cannot be judged, with the reason.
const KNOWN: &[(&str, &str)] = &[(
    "ORX-103",
    "the position has a black pawn behind its starting rank, which no game can reach; the \
     FEN parser refuses it",
)];

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Draw => "draw",
        Verdict::Loses {
            loser: Color::Red, ..
        } => "red-loses",
        Verdict::Loses {
            loser: Color::Black,
            ..
        } => "black-loses",
    }
}

/// Judges every row of `data` (the contents of `file`); returns the number of rows and the
/// unexpected results.
fn judge_file(file: &str, data: &str) -> (usize, Vec<String>) {
    let mut rows = 0;
    let mut wrong = Vec::new();
    for line in data.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let (id, fen, moves, want, reason) = (f[0], f[2], f[3], f[4], f[5]);
        rows += 1;
        let known = KNOWN.iter().any(|(k, _)| *k == id);
        let got = (|| {
            let board = parse_fen(fen).map_err(|e| format!("bad FEN: {e}"))?;
            let mut b = board.clone();
            let mut seq = Vec::new();
            for text in moves.split_whitespace() {
                let m = xiangqi::notation::parse_iccs(&b, text)
                    .map_err(|e| format!("move {text}: {e}"))?;
                b.make(m);
                seq.push(m);
            }
            let a = adjudicate(&board, &seq).map_err(|e| e.to_string())?;
            Ok::<_, String>(a)
        })();
        match got {
            Ok(a) => {
                let got = verdict_name(a.verdict);
                if (got != want) != known {
                    let classes: Vec<String> = a
                        .cycle
                        .iter()
                        .map(|c| format!("{}:{}", c.mv, c.class))
                        .collect();
                    wrong.push(format!(
                        "{file} {id}: source {want}, adjudicator {got} (offences red {}, black \
                         {}); {reason}\n    {}",
                        a.offences[0].name(),
                        a.offences[1].name(),
                        classes.join(" ")
                    ));
                }
            }
            Err(e) if !known => wrong.push(format!("{file} {id}: {e}")),
            Err(_) => {}
        }
    }
    (rows, wrong)
}

#[test]
fn published_repetition_cases_get_their_sources_verdicts() {
    let files = [
        (
            "rulebook-repetitions.tsv",
            include_str!("data/rulebook-repetitions.tsv"),
            80,
        ),
        (
            "rulebook-lines.tsv",
            include_str!("data/rulebook-lines.tsv"),
            60,
        ),
        (
            "fsf-repetitions.tsv",
            include_str!("data/fsf-repetitions.tsv"),
            30,
        ),
        (
            "orange-repetitions.tsv",
            include_str!("data/orange-repetitions.tsv"),
            150,
        ),
    ];
    let mut wrong = Vec::new();
    for (file, data, at_least) in files {
        let (rows, w) = judge_file(file, data);
        assert!(rows >= at_least, "{file}: {rows} rows");
        wrong.extend(w);
    }
    assert!(
        wrong.is_empty(),
        "{} unexpected results:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
