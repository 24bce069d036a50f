//! `xqtb adjudicate`: judges a played sequence whose last position repeats an earlier one under
//! the Asian repetition rules, and says why (which moves checked, which chased which piece).

use anyhow::{Context, Result, anyhow};
use clap::Args;
use serde_json::json;
use xiangqi::notation::{CoordinateForm, LineError, parse_line, parse_line_as};
use xiangqi::repetition::{Adjudication, MoveClass, Verdict, adjudicate};
use xiangqi::{Board, Color};

/// Arguments of `xqtb adjudicate`.
#[derive(Args)]
pub struct AdjudicateArgs {
    /// The position the sequence starts from, in FEN (quote it).
    fen: String,
    /// The moves, all in one form: ICCS (ranks 0-9, `h2e2`) or ranks 1-10 as Fairy-Stockfish
    /// writes them (`h3e3`, `a10a9`); see --notation. The last position must repeat an earlier
    /// one.
    #[arg(required = true)]
    moves: Vec<String>,
    /// The form of the moves: `iccs`, `ranks-1-10`, or `auto`, the one reading of the whole
    /// sequence that is legal move by move (refused, naming both, when both readings are).
    #[arg(long, default_value = "auto", value_parser = ["auto", "iccs", "ranks-1-10"])]
    notation: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn side(c: Color) -> &'static str {
    match c {
        Color::Red => "red",
        Color::Black => "black",
    }
}

/// What a move does, in words, naming the pieces it chases on `board` (the position after it).
fn describe(class: &MoveClass, after: &Board) -> (String, Vec<serde_json::Value>) {
    let sq = class.chased;
    let victims: Vec<serde_json::Value> = sq
        .iter()
        .map(|s| {
            let p = after.piece_at(s).expect("a chased piece");
            json!({"square": s.to_string(), "piece": p.kind().name(), "color": side(p.color())})
        })
        .collect();
    let names: Vec<String> = sq
        .iter()
        .map(|s| {
            format!(
                "{} on {s}",
                after.piece_at(s).expect("a piece").kind().name()
            )
        })
        .collect();
    let text = match (class.check, names.is_empty()) {
        (false, true) => "idle".to_string(),
        (true, true) => "check".to_string(),
        (false, false) => format!("chase of {}", names.join(", ")),
        (true, false) => format!("check and chase of {}", names.join(", ")),
    };
    (text, victims)
}

/// The `class` of a move in the JSON output.
fn class_name(class: &MoveClass) -> &'static str {
    match (class.check, class.is_chase()) {
        (false, false) => "idle",
        (true, false) => "check",
        (false, true) => "chase",
        (true, true) => "check-chase",
    }
}

/// `xqtb adjudicate`.
pub fn run(args: AdjudicateArgs) -> Result<()> {
    let start = xiangqi::parse_fen(&args.fen).with_context(|| format!("bad FEN '{}'", args.fen))?;
    let texts: Vec<&str> = args.moves.iter().map(String::as_str).collect();
    let moves = match args.notation.as_str() {
        "iccs" => parse_line_as(&start, &texts, CoordinateForm::Iccs)?,
        "ranks-1-10" => parse_line_as(&start, &texts, CoordinateForm::Ranks1To10)?,
        _ => parse_line(&start, &texts).map_err(|e| match e {
            LineError::Ambiguous { .. } => {
                anyhow!("{e}: pass --notation iccs or --notation ranks-1-10")
            }
            e => e.into(),
        })?,
    };
    let a: Adjudication = adjudicate(&start, &moves)?;
    let mut b = start.clone();
    for m in &moves[..a.cycle_start] {
        b.make(*m);
    }
    let mut rows = Vec::new();
    for c in &a.cycle {
        b.make(c.mv);
        let (text, victims) = describe(&c.class, &b);
        rows.push((c, text, victims));
    }
    let verdict_text = match a.verdict {
        Verdict::Draw => "draw".to_string(),
        Verdict::Loses { loser, offence } => format!("{} loses by {}", side(loser), offence.name()),
    };
    if args.json {
        let cycle: Vec<serde_json::Value> = rows
            .iter()
            .map(|(c, text, victims)| {
                json!({
                    "index": c.index, "mover": side(c.mover), "iccs": c.mv.iccs(),
                    "class": class_name(&c.class),
                    "chased": victims, "text": text,
                })
            })
            .collect();
        let (result, loser, offence) = match a.verdict {
            Verdict::Draw => ("draw", None, None),
            Verdict::Loses { loser, offence } => (
                if loser == Color::Red {
                    "red-loses"
                } else {
                    "black-loses"
                },
                Some(side(loser)),
                Some(offence.name()),
            ),
        };
        println!(
            "{}",
            json!({
                "result": result, "loser": loser, "offence": offence,
                "offences": {"red": a.offences[0].name(), "black": a.offences[1].name()},
                "cycle_start": a.cycle_start, "cycle": cycle,
            })
        );
        return Ok(());
    }
    println!(
        "the position after move {} repeats the one after move {}: a cycle of {} plies",
        moves.len(),
        a.cycle_start,
        a.cycle.len()
    );
    for (c, text, _) in &rows {
        println!(
            "  {:>3}. {:<5} {}  {text}",
            c.index + 1,
            side(c.mover),
            c.mv
        );
    }
    println!(
        "offences: red {}, black {}",
        a.offences[0].name(),
        a.offences[1].name()
    );
    println!("verdict: {verdict_text}");
    Ok(())
}
