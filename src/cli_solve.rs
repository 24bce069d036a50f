//! `xqtb solve`: solve and verify a dependency closure with progress bars and a report per table,
//! and write each table into the store. Tables already stored are skipped; the ones a new table
//! depends on are loaded from the store into memory (the solver probes them millions of times),
//! or with `--dependency-cache` read block by block through a cache of bounded size.

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use solver::Progress;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use storage_format::{SledStore, TableStore, encode_table, load_into_memory};
use xiangqi::Color;
use xqtb_core::{MemoryTables, Plies, RuleSet, Signature, TableCounts, TableId};

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
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Directory of the table store (created if needed).
    #[arg(long, default_value = crate::cli_tables::DEFAULT_DATA)]
    data: PathBuf,
    /// Read the tables a table depends on from the store through a cache of decompressed
    /// blocks of this size (e.g. 64MiB) instead of decoding them whole into memory: memory
    /// then no longer grows with the dependencies, for more CPU time. The tables are the same.
    #[arg(long, value_name = "SIZE")]
    dependency_cache: Option<bytesize::ByteSize>,
    /// Keep the retrograde levels' states on local disk under this directory, in groups of
    /// slots of which one is in memory at a time: memory then holds a quarter byte per entry
    /// plus one group, for disk traffic. The tables are the same.
    #[arg(long, value_name = "DIR")]
    states_on_disk: Option<PathBuf>,
    /// With --states-on-disk: the memory of one group's states (two bytes per slot).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64MiB",
        requires = "states_on_disk"
    )]
    group_memory: bytesize::ByteSize,
    /// With --states-on-disk, under cycles-are-draws: this many workers share each table in
    /// this process, each with --threads threads, solving its own groups level by level and
    /// handing the others what crosses between them, as workers on several machines do. The
    /// tables are the same; what each level sent is logged.
    #[arg(
        long,
        value_name = "WORKERS",
        requires = "states_on_disk",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
    )]
    shared_by: Option<usize>,
}

pub fn run(args: SolveArgs) -> Result<()> {
    let targets: Vec<Signature> = args
        .signatures
        .iter()
        .map(|s| crate::parse_signature(s))
        .collect::<Result<_>>()?;
    if args.shared_by.is_some() && args.rules != RuleSet::CyclesAreDraws {
        bail!(
            "--shared-by needs --rules cycles-are-draws: under {} the rule phase takes the whole \
             table, and it is not shared yet",
            args.rules
        );
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let closure = xqtb_core::closure_of(&targets);
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
    let store = Arc::new(SledStore::open(&args.data)?);
    // With a dependency cache, the solver probes the store itself (the tables solved in this
    // run are written there before the next one starts).
    let cached = args
        .dependency_cache
        .map(|size| probe::Tablebase::with_cache_bytes(Arc::clone(&store), size.as_u64()));
    let mut tables = MemoryTables::new();
    let all_start = Instant::now();
    let cpu_start = cpu_seconds();
    for (i, &sig) in closure.iter().enumerate() {
        let id = TableId::new(args.rules, sig);
        // Only tables that later ones capture into stay in memory, so a long closure holds its
        // dependencies, not everything solved so far.
        let later = &closure[i + 1..];
        let needed_later = |t: &TableId| {
            later
                .iter()
                .any(|s| s.capture_targets().contains(&t.signature))
        };
        tables.retain(|t| cached.is_none() && (needed_later(t) || id.dependencies().contains(t)));
        if store.header(&id)?.is_some() {
            println!(
                "{sig}: already in the store {}, skipped",
                args.data.display()
            );
            continue;
        }
        if cached.is_none() {
            pool.install(|| {
                load_into_memory(&*store, &id.dependencies(), &mut tables, |dep, secs| {
                    eprintln!("{}: loaded from the store in {secs:.2} s", dep.signature)
                })
            })
            .with_context(|| format!("loading the tables {sig} depends on"))?;
        }
        let deps: &dyn xqtb_core::Probe = match &cached {
            Some(c) => c,
            None => &tables,
        };
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
            Progress::Rules { round, decided } => {
                bar.set_message(format!("rules, round {round}: {decided} decided"));
            }
            Progress::Verify { done, total } => {
                bar.set_length(total);
                bar.set_position(done);
                bar.set_message("verifying");
            }
        };
        // With the states on disk the parts are encoded as they are solved, so the encoding has
        // no time of its own to report.
        let (encoded, counts, table, encode_secs) = match (&args.states_on_disk, args.shared_by) {
            (None, _) => {
                let (table, counts) = pool
                    .install(|| solver::solve_and_verify(id, deps, &on_progress))
                    .map_err(|e| anyhow!(e))?;
                let start = Instant::now();
                let encoded = pool.install(|| encode_table(&table));
                (encoded, counts, Some(table), Some(start.elapsed()))
            }
            (Some(dir), Some(workers)) => {
                // Each worker has a pool of its own; the verification, which workers would
                // share too, runs on as many threads as they have together.
                let threads = args.threads.unwrap_or(0) * workers;
                let verify_pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?;
                let (encoded, counts, traffic) = verify_pool.install(|| {
                    worker::solve_shared_in_process(
                        id,
                        workers,
                        args.threads.unwrap_or(0),
                        (args.group_memory.as_u64() / 2).max(1),
                        dir,
                        deps,
                        &on_progress,
                    )
                })?;
                log_traffic(id, &traffic);
                (encoded, counts, None, None)
            }
            (Some(dir), None) => {
                let scratch = worker::DirScratch::create(dir).with_context(|| {
                    format!(
                        "cannot create a directory for states under {}",
                        dir.display()
                    )
                })?;
                let states = solver::StateStore::Groups {
                    group_slots: (args.group_memory.as_u64() / 2).max(1),
                    scratch: &scratch,
                    share: None,
                };
                let slots = xqtb_core::SlotRange::whole(&sig);
                let (encoded, counts) = pool
                    .install(|| worker::solve_in_groups(id, slots, states, deps, &on_progress))?;
                (encoded, counts, None, None)
            }
        };
        bar.finish_and_clear();
        report(
            id,
            &counts,
            (start.elapsed() - encode_secs.unwrap_or_default()).as_secs_f64(),
        );
        let keep = cached.is_none() && needed_later(&id);
        let keep = match (keep, table) {
            (false, _) => None,
            (true, Some(table)) => Some(Arc::new(table)),
            (true, None) => Some(Arc::new(storage_format::decode_table(&encoded)?)),
        };
        store.put_table(&encoded)?;
        let legal = counts.legal();
        println!(
            "  stored in {}: {} bytes in {} blocks ({:.3} bits per legal position){}",
            args.data.display(),
            encoded.stored_bytes(),
            encoded.blocks.iter().map(Vec::len).sum::<usize>(),
            encoded.stored_bytes() as f64 * 8.0 / legal.max(1) as f64,
            encode_secs.map_or(String::new(), |d| format!(
                ", encoded in {:.2} s",
                d.as_secs_f64()
            )),
        );
        if let Some(table) = keep {
            tables.insert(table);
        }
    }
    if let Some(c) = &cached {
        println!(
            "dependency cache: {} block lookups, {} blocks read from the store",
            c.block_lookups(),
            c.blocks_loaded()
        );
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

fn report(id: TableId, counts: &TableCounts, secs: f64) {
    let index = xqtb_core::TableIndex::new(id.signature);
    println!(
        "{}: index size {} per side, verified",
        id.signature,
        index.size()
    );
    for side in Color::ALL {
        let c = &counts[side];
        let fen_of = |slot: u64| index.board(slot, side).map(|b| b.fen()).unwrap_or_default();
        let longest = match c.longest_win {
            Some((d, slot)) => format!("longest win {}: {}", Plies(d as u64), fen_of(slot)),
            None => "no wins".into(),
        };
        println!(
            "  {side} to move: {} legal, {} wins, {} draws, {} losses; {longest}",
            c.legal, c.wins, c.draws, c.losses
        );
        if id.rules != xqtb_core::RuleSet::CyclesAreDraws {
            let longest = match c.longest_rule_win {
                Some((d, slot)) => {
                    format!(
                        "the rule furthest away ({}): {}",
                        Plies(d as u64),
                        fen_of(slot)
                    )
                }
                None => "none".into(),
            };
            println!(
                "    decided by the repetition rules: {} wins, {} losses; {longest}",
                c.rule_wins, c.rule_losses
            );
        }
    }
    println!("  time {secs:.2} s, peak memory {}", peak_memory());
}

/// CPU seconds this process has used (0 where that cannot be read), for reports.
pub fn cpu_seconds() -> f64 {
    worker::cpu_seconds().unwrap_or(0.0)
}

/// Peak resident memory of this process, for reports, in MB of 10^6 bytes (as every size the
/// tool prints).
pub fn peak_memory() -> String {
    worker::peak_rss_bytes()
        .map_or_else(|| "unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

/// Logs what the workers sharing table `id` sent each other, per level and in all.
fn log_traffic(id: TableId, traffic: &[solver::PassTraffic]) {
    let (mut words, mut bytes) = (0, 0);
    for t in traffic {
        tracing::info!(table = %id, pass = ?t.pass, words = t.words, bytes = t.bytes, resolved = t.resolved, "updates sent");
        words += t.words;
        bytes += t.bytes;
    }
    println!(
        "  {id}: the workers sent each other {words} words of kinds in {} passes, {bytes} bytes",
        traffic.len()
    );
}
