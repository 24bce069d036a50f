//! `xqtb solve`: solve and verify a dependency closure with progress bars and a report per table,
//! and write each table into the store. Tables already stored are skipped; the ones a new table
//! depends on are loaded from the store into memory (the solver probes them millions of times).

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use storage_format::{
    MemoryTables, RuleSet, Signature, SledStore, Table, TableStore, decode_table, encode_table,
};
use worker::{Progress, TableStats};
use xiangqi::Color;

/// Arguments of `xqtb solve`.
#[derive(Args)]
pub struct SolveArgs {
    /// Material signatures to solve (their dependencies are solved first).
    #[arg(required = true)]
    signatures: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Rule set for repetitions.
    #[arg(long, default_value = "cycles-are-draws")]
    rules: RuleSet,
    /// Directory of the table store (created if needed).
    #[arg(long, default_value = crate::cli_tables::DEFAULT_DATA)]
    data: PathBuf,
}

pub fn run(args: SolveArgs) -> Result<()> {
    let targets: Vec<Signature> = args
        .signatures
        .iter()
        .map(|s| crate::parse_signature(s))
        .collect::<Result<_>>()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let closure = storage_format::closure_of(&targets);
    eprintln!(
        "solving {} tables on {} threads: {}",
        closure.len(),
        pool.current_num_threads(),
        closure
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let store = SledStore::open(&args.data)?;
    let mut tables = MemoryTables::new();
    let all_start = Instant::now();
    let cpu_start = cpu_seconds();
    for (i, &sig) in closure.iter().enumerate() {
        // Only tables that later ones capture into stay in memory, so a long closure holds its
        // dependencies, not everything solved so far.
        let later = &closure[i + 1..];
        let needed_later = |t: &Signature| later.iter().any(|s| s.capture_targets().contains(t));
        tables.retain(|t| needed_later(t) || sig.capture_targets().contains(t));
        if let Some(h) = store.header(&sig)? {
            if h.rules != args.rules {
                bail!(
                    "{sig} is in the store {} under the rule set {}, not {}: use another --data directory",
                    args.data.display(),
                    h.rules.name(),
                    args.rules.name()
                );
            }
            println!(
                "{sig}: already in the store {}, skipped",
                args.data.display()
            );
            continue;
        }
        for dep in sig.capture_targets() {
            if !tables.contains(&dep) {
                let start = Instant::now();
                let table = pool.install(|| -> Result<Table> {
                    let encoded = store
                        .load_table(&dep)
                        .with_context(|| format!("loading {dep}, which {sig} depends on"))?;
                    Ok(decode_table(&encoded)?)
                })?;
                eprintln!(
                    "{dep}: loaded from the store in {:.2} s",
                    start.elapsed().as_secs_f64()
                );
                tables.insert(Arc::new(table));
            }
        }
        let start = Instant::now();
        let bar = progress_bar(&sig);
        let on_progress = |p: Progress| match p {
            Progress::Init { done, total } => {
                bar.set_length(total);
                bar.set_position(done);
                bar.set_message("captures and mates");
            }
            Progress::Level {
                level,
                resolved,
                total,
            } => {
                bar.set_length(total);
                bar.set_position(resolved);
                bar.set_message(format!("ply {level}"));
            }
        };
        let (table, stats) = pool
            .install(|| worker::solve_and_verify(sig, args.rules, &tables, &on_progress))
            .map_err(|e| anyhow!(e))?;
        bar.finish_and_clear();
        report(&table, &stats, start.elapsed().as_secs_f64());
        let start = Instant::now();
        let encoded = pool.install(|| encode_table(&table, args.rules));
        let encode_secs = start.elapsed().as_secs_f64();
        let keep = needed_later(&sig).then(|| Arc::new(table));
        store.put_table(&encoded)?;
        let legal: u64 = stats.legal.iter().sum();
        println!(
            "  stored in {}: {} bytes in {} blocks ({:.3} bits per legal position), encoded in {encode_secs:.2} s",
            args.data.display(),
            encoded.stored_bytes(),
            encoded.blocks.iter().map(Vec::len).sum::<usize>(),
            encoded.stored_bytes() as f64 * 8.0 / legal.max(1) as f64,
        );
        if let Some(table) = keep {
            tables.insert(table);
        }
    }
    println!(
        "all done: {:.2} s wall, {:.2} s CPU, peak memory {}",
        all_start.elapsed().as_secs_f64(),
        cpu_seconds() - cpu_start,
        peak_memory()
    );
    Ok(())
}

fn progress_bar(sig: &Signature) -> ProgressBar {
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:40}] {percent:>3}% {msg} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(sig.name());
    bar
}

fn report(table: &Table, stats: &TableStats, secs: f64) {
    let size = table.index.size();
    println!(
        "{}: index size {size} per side, verified",
        table.signature()
    );
    for side in Color::ALL {
        let i = side.index();
        let longest = match stats.longest_win[i] {
            Some((d, slot)) => {
                let fen = table
                    .index
                    .board(slot, side)
                    .map(|b| b.fen())
                    .unwrap_or_default();
                format!("longest win {d} plies: {fen}")
            }
            None => "no wins".into(),
        };
        println!(
            "  {side} to move: {} legal, {} wins, {} draws, {} losses; {longest}",
            stats.legal[i], stats.wins[i], stats.draws[i], stats.losses[i]
        );
    }
    println!("  time {secs:.2} s, peak memory {}", peak_memory());
}

/// CPU seconds used by this process so far (user + system).
pub fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        })
        .unwrap_or(0.0)
}

/// Peak resident memory of this process, for reports.
pub fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.1} MB", kb as f64 / 1024.0))
        })
        .unwrap_or_else(|| "unknown".into())
}
