//! `xqtb search`: proves forced wins from positions with more pieces than the tables hold,
//! reading the stored tables wherever a line reaches their material.

use crate::cli_tables::Source;
use anyhow::{Context, Result, bail};
use clap::Args;
use search::{Control, Limits, Outcome, SearchReport, search};
use std::sync::Arc;
use std::time::Duration;
use xqtb_core::{Plies, RuleSet};

/// Arguments of `xqtb search`.
#[derive(Args)]
pub struct SearchArgs {
    /// Position in FEN (quote it).
    fen: String,
    /// Rule set of repetitions and of the tables read.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Longest win looked for, in plies, counting the distances read from the tables.
    #[arg(long, default_value_t = Limits::default().max_plies)]
    max_plies: u16,
    /// Stop after expanding this many positions (the answer is then `unknown`).
    #[arg(long)]
    nodes: Option<u64>,
    /// Stop after this many seconds (the answer is then `unknown`).
    #[arg(long)]
    time: Option<f64>,
    /// Threads searching at once (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Size of the transposition table, e.g. 256MiB (the check of a proof takes a quarter as
    /// much again); a search that fills it still answers.
    #[arg(long, default_value = "64MiB")]
    hash: bytesize::ByteSize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

pub fn run(args: SearchArgs) -> Result<()> {
    let board = xiangqi::parse_fen(&args.fen).with_context(|| format!("bad FEN '{}'", args.fen))?;
    let time = match args.time {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            bail!("--time {t} is not a positive number of seconds")
        }
        t => t.map(Duration::from_secs_f64),
    };
    let limits = Limits {
        max_plies: args.max_plies,
        nodes: args.nodes,
        time,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        hash_bytes: args.hash.as_u64(),
    };
    let tables = args.source.tablebase_if_any()?;
    if tables.is_none() && !args.json {
        eprintln!(
            "note: no table store at ./xqtb-data; searching without tables (give --data DIR or --shards DIR)"
        );
    }
    let control = Arc::new(Control::new());
    let progress = show_progress(Arc::clone(&control), args.json);
    let result = search(tables.as_ref(), args.rules, &board, &limits, &control);
    progress.finish();
    let result = result?;
    let report = SearchReport::from(&result);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!("{}", result.fen);
    let us = board.side_to_move();
    let stopped = result
        .stopped
        .map(|s| format!(" (stopped by the {} limit)", s.name()))
        .unwrap_or_default();
    let what = match (result.outcome, result.plies) {
        (Outcome::Win | Outcome::Loss, Some(p)) if result.shortest => {
            let end = result.end.map_or("mate", |e| e.name());
            format!("{} in {} ({end})", result.outcome.name(), Plies(p as u64))
        }
        (Outcome::Win | Outcome::Loss, Some(p)) => {
            let end = result.end.map_or("mate", |e| e.name());
            format!(
                "{} in at most {} ({end}); no win of either side in {} or fewer{stopped}",
                result.outcome.name(),
                Plies(p as u64),
                Plies(result.searched_plies as u64),
            )
        }
        (Outcome::Unknown, _) => format!(
            "unknown: no win of either side in {} or fewer{stopped}",
            Plies(result.searched_plies as u64),
        ),
        (o, _) => o.name().to_string(),
    };
    println!("{us} to move: {what}");
    println!(
        "from the {}: {} positions, {} table hits, {:.2} s",
        report.source,
        result.nodes,
        result.table_hits,
        result.elapsed.as_secs_f64()
    );
    if !result.line.is_empty() {
        let line: Vec<String> = result
            .line
            .iter()
            .map(|m| format!("{} ({})", m.iccs, m.wxf))
            .collect();
        println!("line: {}", line.join(" "));
    }
    Ok(())
}

/// A spinner on stderr with the search's progress, when stderr is a terminal and the output is
/// not JSON.
struct ProgressLine {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProgressLine {
    fn finish(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn show_progress(control: Arc<Control>, json: bool) -> ProgressLine {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let thread = (!json).then(|| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let bar = indicatif::ProgressBar::new_spinner();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let p = control.progress();
                bar.set_message(format!(
                    "searching wins of up to {} plies: {} positions, {} table hits",
                    p.plies, p.nodes, p.table_hits
                ));
                bar.tick();
                std::thread::sleep(Duration::from_millis(200));
            }
            bar.finish_and_clear();
        })
    });
    ProgressLine { stop, thread }
}
