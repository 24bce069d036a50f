//! `xqtb plan`: what generating a set of endgames costs, before anything runs. The jobs of the
//! closure in dependency order, each with its size and its estimated memory, stored size and CPU
//! time ([`JobCost`], whose rates BENCHMARKS.md's "Cost model" measures), and the totals.
//!
//! [`plan_rows`] computes the listing and nothing else, so that a simulation of the cluster's
//! scheduling can start from the same rows; the printing is separate.

use anyhow::{Result, bail};
pub use app::human_bytes;
use app::share_policy;
use app::simulate::{self, SimWorker, Simulation};
use clap::Args;
use rayon::prelude::*;
use serde_json::{Value as Json, json};
use xqtb_core::{JobCost, JobKey, Limits, MAX_PIECES, RuleSet, Signature, TableId, TableIndex};

/// Attacking pieces of both full armies together (2 R, 2 N, 2 C, 5 P a side).
const MAX_ATTACKERS: u8 = 22;

/// Arguments of `xqtb plan`.
#[derive(Args)]
#[command(after_long_help = JSON_HELP)]
pub struct PlanArgs {
    /// Material signatures to plan, with everything their captures lead into.
    #[arg(required_unless_present = "attackers", conflicts_with = "attackers")]
    signatures: Vec<String>,
    /// Plan every endgame with at most N attacking pieces (R N C P) over both sides together,
    /// with any defenders (up to 2 advisors and 2 elephants a side) and up to 5 pawns a side.
    #[arg(long, value_name = "N", value_parser = parse_attackers)]
    attackers: Option<u8>,
    /// With --attackers: only endgames of at most M pieces in total, kings included.
    #[arg(long, value_name = "M", requires = "attackers", conflicts_with = "signatures",
          value_parser = clap::value_parser!(u32).range(3..=MAX_PIECES as i64))]
    max_pieces: Option<u32>,
    /// Rule set the tables are solved under (the default of `solve` and `generate`).
    #[arg(long, default_value_t = RuleSet::default())]
    rules: RuleSet,
    /// Print one JSON object instead of the table (described below, under --help).
    #[arg(long)]
    json: bool,
    /// Also simulate a run on W identical workers with the coordinator's own scheduler (jobs
    /// only to workers that can hold them, the longest remaining path first) and print the
    /// predicted makespan and critical path.
    #[arg(long, value_name = "W", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    workers: Option<u32>,
    /// With --workers: solver threads of each worker (default: this machine's cores).
    #[arg(long, value_name = "T", requires = "workers",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    threads: Option<u32>,
    /// With --workers: memory of each worker, e.g. 256GiB (default: this machine's memory).
    #[arg(long, value_name = "BYTES", requires = "workers")]
    memory: Option<bytesize::ByteSize>,
    /// Tables with pawns of at least this many entries are one job per pawn slice, as the
    /// coordinator's option of the same name makes them.
    #[arg(long, value_name = "ENTRIES", default_value_t = app::scheduler::DEFAULT_SLICE_FROM_ENTRIES)]
    slice_from_entries: u64,
    /// With --workers: share each cycles-are-draws job (a whole table or a pawn slice) of at
    /// least --share-from-entries entries between up to this many workers, as the coordinator's
    /// option of the same name does (busy workers take their seats when they come free).
    #[arg(
        long,
        value_name = "WORKERS",
        default_value_t = 1,
        requires = "workers"
    )]
    share_by: usize,
    /// With --share-by: the smallest job shared (entries).
    #[arg(long, value_name = "ENTRIES", default_value_t = app::Sharing::default().from_entries)]
    share_from_entries: u64,
    /// With --share-by: the coordinator's network link in Gbit/s. It relays every shared job's
    /// traffic; while the shared jobs running would send more than it carries, they all run
    /// slower alike.
    #[arg(long, value_name = "GBIT", default_value_t = 10.0, value_parser = parse_link, requires = "workers")]
    coordinator_link: f64,
}

/// Bytes a second of a link of `gbit` Gbit/s.
fn link_bytes_per_second(gbit: f64) -> f64 {
    gbit * 1e9 / 8.0
}

fn parse_link(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(g) if g > 0.0 && g.is_finite() => Ok(g),
        _ => Err(format!(
            "'{text}' is not a link speed: give the coordinator's link in Gbit/s, e.g. 10 or 25"
        )),
    }
}

const JSON_HELP: &str = "\
With --json the plan is one JSON object (here `xqtb plan KRvKN --json`, shortened):
  {\"rules\": \"asian\",
   \"jobs\": [{\"signature\": \"KNvK\", ...}, {\"signature\": \"KRvK\", ...},
            {\"signature\": \"KRvKN\", \"rules\": \"asian\", \"slots\": 328500, \"entries\": 657000,
             \"dependencies\": [\"KNvK\", \"KRvK\"], \"dependency_entries\": 14760,
             \"solve_bytes\": 17872073, \"stored_bytes\": 94608, \"disk_bytes\": 96188,
             \"cpu_seconds\": 0.883}],
   \"totals\": {\"jobs\": 3, \"slots\": 335880, \"entries\": 671760, \"dependency_entries\": 14760,
              \"stored_bytes\": 96188, \"cpu_seconds\": 0.89, \"max_solve_bytes\": 17872073,
              \"max_solve_job\": \"KRvKN\", \"max_disk_bytes\": 96188}}
Jobs come in dependency order (every job after the jobs it depends on). slots: index slots per
side to move; entries: slots times both sides; dependencies: the tables its captures lead into,
whose entries (dependency_entries) a worker loads to solve it; solve_bytes: the peak memory of a
worker solving, verifying and encoding it with its states in memory (dependency tables counted
at most at the block cache a worker reads them through when they do not fit);
states_on_disk_bytes (whole tables under cycles-are-draws only): the peak with its states on
local disk instead, which a worker short of memory for solve_bytes does (the \"solve memory\"
column shows the smaller); seat_bytes (the same jobs): the peak of each worker when the job is
shared (--share-by) and the worker sends only the entries it wrote, with its states on local
disk and a bit per entry more (a worker with less memory sends whole words); stored_bytes: its compressed size in the
store (estimated); disk_bytes: the local disk a worker needs for it (the compressed tables it
depends on and its result); cpu_seconds: CPU time to solve, verify and encode it (estimated; divide by the
threads for the time). The totals are the sums over the jobs, except max_solve_bytes: the
largest of the jobs' least memory (the smaller of the two above), the memory the biggest worker needs, max_solve_job, the job that needs it
(null when the plan is empty), and max_disk_bytes, the most disk one job needs. A table with pawns of at least --slice-from-entries entries is
one job per pawn slice: such a job also has first_slot and end_slot (its slots) and
slice_dependencies, the [first_slot, end_slot] of each slice of its own table that its pawn
advances lead into, whose entries count in its dependency_entries. The estimates come from
measured rates (BENCHMARKS.md, \"Cost model\").";

fn parse_attackers(text: &str) -> Result<u8, String> {
    let n: u8 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of pieces"))?;
    match n {
        0 => Err(
            "a table needs at least 1 attacking piece (without one every position is a draw)"
                .into(),
        ),
        n if n > MAX_ATTACKERS => Err(format!(
            "two full armies have {MAX_ATTACKERS} attacking pieces; {n} is more"
        )),
        n => Ok(n),
    }
}

/// Every canonical endgame with at most `attackers` attacking pieces over both sides, any
/// defenders, at most 5 pawns a side and, if given, at most `max_pieces` pieces; dead draws
/// left out, dependencies first (the set holds everything its captures lead into).
pub fn endgames_with_attackers(attackers: u8, max_pieces: Option<u32>) -> Result<Vec<Signature>> {
    let limits = Limits {
        attackers_per_side: attackers,
        total_attackers: attackers,
        pawns_per_side: attackers.min(5),
        defenders_per_side: 4,
    };
    let mut sigs = Signature::enumerate(&limits);
    if let Some(m) = max_pieces {
        sigs.retain(|s| s.material().piece_count() <= m);
    }
    if let Some(big) = sigs
        .iter()
        .find(|s| s.material().piece_count() as usize > MAX_PIECES)
    {
        bail!(
            "with {attackers} attacking pieces and full defences an endgame has up to {} pieces \
             ({big}); a table index holds at most {MAX_PIECES}: add --max-pieces {MAX_PIECES} or fewer",
            big.material().piece_count()
        );
    }
    // A signature names only material an index can number (see `Signature::from_str`).
    if let Some(e) = sigs
        .iter()
        .find_map(|s| s.name().parse::<Signature>().err())
    {
        bail!("{e}: use a smaller --max-pieces");
    }
    Ok(sigs)
}

/// The jobs that generate `roots` and everything they depend on under `rules`, in dependency
/// order, each with its estimated cost. Index sizes are built in parallel (thousands of tables
/// for a whole endgame set).
pub fn plan_rows(
    roots: &[Signature],
    rules: RuleSet,
    slice_from_entries: u64,
) -> Vec<(JobKey, JobCost)> {
    let closure = xqtb_core::closure_of(roots);
    // Every dependency is in the closure: sizing each once here makes the costs cache hits.
    closure.par_iter().for_each(|s| {
        TableIndex::size_of(s);
    });
    closure
        .par_iter()
        .flat_map_iter(|&s| JobKey::jobs_of(TableId::new(rules, s), slice_from_entries))
        .map(|key| (key, JobCost::of(&key)))
        .collect()
}

/// The sums over a plan's jobs, and its largest job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Jobs.
    pub jobs: usize,
    /// Index slots per side to move.
    pub slots: u64,
    /// Entries (both sides to move).
    pub entries: u64,
    /// Dependency entries loaded, summed over the jobs.
    pub dependency_entries: u64,
    /// Estimated stored bytes.
    pub stored_bytes: u64,
    /// Estimated CPU seconds.
    pub cpu_seconds: f64,
    /// The largest job's solve bytes: the memory the biggest worker needs.
    pub max_solve_bytes: u64,
    /// The job that needs it.
    pub max_solve_job: Option<JobKey>,
    /// The most local disk one job needs.
    pub max_disk_bytes: u64,
}

/// The totals of `rows`; an error if a sum does not fit in 64 bits.
pub fn totals(rows: &[(JobKey, JobCost)]) -> Result<Totals> {
    let mut t = Totals {
        jobs: rows.len(),
        ..Totals::default()
    };
    let add = |sum: &mut u64, n: u64, what: &str| -> Result<()> {
        match sum.checked_add(n) {
            Some(s) => {
                *sum = s;
                Ok(())
            }
            None => bail!("the plan's total {what} do not fit in 64 bits"),
        }
    };
    for (key, c) in rows {
        add(&mut t.slots, c.slots, "slots")?;
        add(&mut t.entries, c.entries, "entries")?;
        add(
            &mut t.dependency_entries,
            c.dependency_entries,
            "dependency entries",
        )?;
        add(&mut t.stored_bytes, c.stored_bytes, "stored bytes")?;
        t.cpu_seconds += c.cpu_seconds;
        t.max_disk_bytes = t.max_disk_bytes.max(c.disk_bytes);
        if t.max_solve_job.is_none() || c.least_bytes() > t.max_solve_bytes {
            t.max_solve_bytes = c.least_bytes();
            t.max_solve_job = Some(*key);
        }
    }
    Ok(t)
}

/// `xqtb plan`.
pub fn plan(args: PlanArgs) -> Result<()> {
    let roots = match args.attackers {
        Some(n) => endgames_with_attackers(n, args.max_pieces)?,
        None => {
            let roots: Vec<Signature> = args
                .signatures
                .iter()
                .map(|s| crate::parse_signature(s))
                .collect::<Result<_>>()?;
            for s in roots.iter().filter(|s| s.is_dead_draw()) {
                eprintln!("{s}: no attacking piece on either side, no table is needed");
            }
            roots
        }
    };
    let rows = plan_rows(&roots, args.rules, args.slice_from_entries);
    let totals = totals(&rows)?;
    let simulated = args.workers.map(|n| {
        let threads = args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
        let memory_bytes = args
            .memory
            .map(|m| m.as_u64())
            .or_else(worker::available_memory_bytes);
        let workers: Vec<SimWorker> = (0..n)
            .map(|i| SimWorker {
                name: format!("sim{i}"),
                threads,
                memory_bytes,
            })
            .collect();
        let targets: Vec<TableId> = roots.iter().map(|s| TableId::new(args.rules, *s)).collect();
        let sharing = app::Sharing {
            workers: args.share_by.max(1),
            from_entries: args.share_from_entries,
            ..app::Sharing::default()
        };
        let sim = simulate::simulate(
            &targets,
            &workers,
            args.slice_from_entries,
            sharing,
            link_bytes_per_second(args.coordinator_link),
        );
        (workers, sim)
    });
    if args.json {
        let mut out = plan_json(args.rules, &rows, &totals);
        if let Some((workers, sim)) = &simulated {
            out["simulation"] = simulation_json(sim, workers);
        }
        println!("{out}");
    } else {
        print_plan(args.rules, &rows, &totals);
        if let Some((workers, sim)) = &simulated {
            print_simulation(sim, workers, &totals);
        }
    }
    Ok(())
}

fn job_json(key: &JobKey, c: &JobCost) -> Json {
    let deps: Vec<String> = key
        .table
        .dependencies()
        .iter()
        .map(|d| d.signature.name())
        .collect();
    let mut job = json!({
        "signature": key.table.signature.name(),
        "rules": key.table.rules.name(),
        "slots": c.slots,
        "entries": c.entries,
        "dependencies": deps,
        "dependency_entries": c.dependency_entries,
        "solve_bytes": c.solve_bytes,
        "stored_bytes": c.stored_bytes,
        "disk_bytes": c.disk_bytes,
        "cpu_seconds": c.cpu_seconds,
    });
    if let Some(bytes) = c.states_on_disk_bytes {
        job["states_on_disk_bytes"] = json!(bytes);
    }
    if let Some(bytes) = c.seat_bytes {
        job["seat_bytes"] = json!(bytes);
    }
    if !key.is_whole_table() {
        // A pawn slice: its slots, and the slices of its table its pawn advances read.
        job["first_slot"] = json!(key.slots.start);
        job["end_slot"] = json!(key.slots.end);
        job["slice_dependencies"] = key
            .slice_dependencies()
            .iter()
            .map(|r| json!([r.start, r.end]))
            .collect();
    }
    job
}

/// The plan as one JSON object (documented in `xqtb plan --help`).
pub fn plan_json(rules: RuleSet, rows: &[(JobKey, JobCost)], t: &Totals) -> Json {
    json!({
        "rules": rules.name(),
        "jobs": rows.iter().map(|(k, c)| job_json(k, c)).collect::<Vec<_>>(),
        "totals": {
            "jobs": t.jobs,
            "slots": t.slots,
            "entries": t.entries,
            "dependency_entries": t.dependency_entries,
            "stored_bytes": t.stored_bytes,
            "cpu_seconds": t.cpu_seconds,
            "max_solve_bytes": t.max_solve_bytes,
            "max_solve_job": t.max_solve_job.map(|k| k.table.signature.name()),
            "max_disk_bytes": t.max_disk_bytes,
        },
    })
}

/// A job's name in a plan of one rule set: the table, and its slots when it is a part of it.
fn job_name(key: &JobKey) -> String {
    if key.is_whole_table() {
        key.table.signature.name()
    } else {
        format!("{} slots {}", key.table.signature, key.slots)
    }
}

/// The plan as an aligned table, then its totals.
pub fn print_plan(rules: RuleSet, rows: &[(JobKey, JobCost)], t: &Totals) {
    println!(
        "plan under {rules} rules: {}, dependencies first (estimates: BENCHMARKS.md, \"Cost model\")",
        jobs(t.jobs)
    );
    let header = [
        "#",
        "table",
        "slots",
        "entries",
        "dep. entries",
        "solve memory",
        "stored (est.)",
        "disk",
        "CPU (est.)",
    ];
    let lines: Vec<[String; 9]> = rows
        .iter()
        .enumerate()
        .map(|(i, (k, c))| {
            [
                (i + 1).to_string(),
                job_name(k),
                c.slots.to_string(),
                c.entries.to_string(),
                c.dependency_entries.to_string(),
                human_bytes(c.least_bytes()),
                human_bytes(c.stored_bytes),
                human_bytes(c.disk_bytes),
                human_seconds(c.cpu_seconds),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for l in &lines {
        for (w, cell) in width.iter_mut().zip(l) {
            *w = (*w).max(cell.len());
        }
    }
    // The table's name is left-aligned, numbers right-aligned.
    let row = |cells: [&str; 9]| {
        let s: Vec<String> = cells
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 1 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        println!("{}", s.join("  ").trim_end());
    };
    row(header);
    for l in &lines {
        row(std::array::from_fn(|i| l[i].as_str()));
    }
    println!(
        "total: {}, {} slots, {} entries; stored about {}; about {} of CPU",
        jobs(t.jobs),
        t.slots,
        t.entries,
        human_bytes(t.stored_bytes),
        human_seconds(t.cpu_seconds),
    );
    if let Some(k) = t.max_solve_job {
        println!(
            "largest job: {}, about {} while solving (the memory the biggest worker needs); \
             at most {} of local disk for one job",
            job_name(&k),
            human_bytes(t.max_solve_bytes),
            human_bytes(t.max_disk_bytes)
        );
    }
}

/// `1 job`, `6 jobs`.
fn jobs(n: usize) -> String {
    if n == 1 {
        "1 job".into()
    } else {
        format!("{n} jobs")
    }
}

/// Prints a simulated run of the plan on `workers` identical workers (`xqtb plan --workers`).
pub fn print_simulation(sim: &Simulation, workers: &[SimWorker], t: &Totals) {
    let w = &workers[0];
    let memory = w.memory_bytes.map_or("any memory".to_string(), |m| {
        format!("{} each", human_bytes(m))
    });
    println!(
        "\nsimulated run on {} worker{} of {} threads, {memory} (the coordinator's scheduler; job times from the estimates, {:.0}% of each job serial):",
        workers.len(),
        if workers.len() == 1 { "" } else { "s" },
        w.threads,
        simulate::SERIAL_FRACTION * 100.0
    );
    println!(
        "  makespan {}; workers busy {:.0}% of the time; {} of CPU in all",
        human_seconds(sim.makespan_s),
        sim.utilisation * 100.0,
        human_seconds(t.cpu_seconds)
    );
    println!("  total stored size about {}", human_bytes(t.stored_bytes));
    let on_disk: Vec<JobCost> = sim
        .jobs
        .iter()
        .filter(|j| j.states_on_disk)
        .map(|j| JobCost::of(&j.key))
        .collect();
    if let Some(disk) = on_disk.iter().map(|c| c.disk_bytes + c.entries).max() {
        println!(
            "  {} {} states on local disk, short of memory to hold them (more CPU, and a byte \
             per entry of disk: up to {} for one job)",
            jobs(on_disk.len()),
            if on_disk.len() == 1 {
                "keeps its"
            } else {
                "keep their"
            },
            human_bytes(disk)
        );
    }
    let shared: Vec<&simulate::SimulatedJob> = sim.jobs.iter().filter(|j| j.seats > 1).collect();
    if let Some(most) = shared.iter().map(|j| j.seats).max() {
        println!(
            "  {} shared by up to {most} workers each ({:.0}% as fast per worker, an assumption \
             beyond two)",
            jobs(shared.len()),
            simulate::SHARED_EFFICIENCY * 100.0
        );
        println!(
            "  the coordinator relays {} between their workers (the kinds they send, {:.2} bytes \
             per entry, {:.2} from workers short of a seat's memory, and their parts of the table, \
             each to every other seat), at most {}/s at once \
             on its {} Gbit/s link (--coordinator-link); a worker receives at most {}/s; {} passes \
             per shared job, each a barrier of one round trip ({} ms assumed)",
            human_bytes(sim.relayed_bytes() as u64),
            share_policy::RELAYED_BYTES_PER_ENTRY,
            share_policy::RELAYED_WORD_BYTES_PER_ENTRY,
            human_bytes(sim.peak_relay_bytes_per_second as u64),
            sim.relay_link_bytes_per_second * 8.0 / 1e9,
            human_bytes(sim.peak_worker_bytes_per_second as u64),
            share_policy::SHARED_PASSES,
            share_policy::BARRIER_ROUND_TRIP_SECONDS * 1e3
        );
        if sim.relay_full_s > 0.0 {
            println!(
                "  the link was full for {}, slowing the shared jobs running then alike: share by \
                 fewer workers (--share-by) or give the coordinator a faster link",
                human_seconds(sim.relay_full_s)
            );
        }
    }
    if !sim.never_ran.is_empty() {
        let names: Vec<String> = sim.never_ran.iter().take(10).map(job_name).collect();
        println!(
            "  {} job{} never ran: no worker can hold them, or they wait for one that cannot be held ({}{})",
            sim.never_ran.len(),
            if sim.never_ran.len() == 1 { "" } else { "s" },
            names.join(", "),
            if sim.never_ran.len() > 10 {
                ", ..."
            } else {
                ""
            }
        );
        // Under asian the rule phase holds its states in memory: say so, since the same jobs
        // under cycles-are-draws would run with their states on disk.
        let memory = workers.iter().filter_map(|w| w.memory_bytes).max();
        let held_whole = sim
            .never_ran
            .iter()
            .filter(|k| {
                let cost = JobCost::of(k);
                cost.states_on_disk_bytes.is_none()
                    && k.table.rules == RuleSet::Asian
                    && memory.is_some_and(|m| cost.least_bytes() > m)
            })
            .count();
        if held_whole > 0 {
            println!(
                "  {} of them cannot be held because the asian rule phase keeps its two-byte \
                 states in memory (it does not work in groups on local disk yet: docs/scaling.md); \
                 under --rules cycles-are-draws they would keep their states on disk",
                held_whole
            );
        }
    }
    let chain_s: f64 = sim
        .critical_path
        .iter()
        .map(|&i| sim.jobs[i].end_s - sim.jobs[i].start_s)
        .sum();
    println!(
        "  critical path: {} jobs, {} of solving, {} waiting for a worker:",
        sim.critical_path.len(),
        human_seconds(chain_s),
        human_seconds(
            sim.critical_path
                .iter()
                .map(|&i| sim.jobs[i].waited_s)
                .sum()
        )
    );
    for &i in &sim.critical_path {
        let j = &sim.jobs[i];
        println!(
            "    {:<24} {:>10} .. {:>10}  ({}{}{})",
            job_name(&j.key),
            human_seconds(j.start_s),
            human_seconds(j.end_s),
            human_seconds(j.end_s - j.start_s),
            if j.seats > 1 {
                format!(" on {} workers", j.seats)
            } else {
                String::new()
            },
            if j.waited_s > 0.5 {
                format!(", waited {} for a worker", human_seconds(j.waited_s))
            } else {
                String::new()
            }
        );
    }
}

/// The JSON form of a simulated run.
pub fn simulation_json(sim: &Simulation, workers: &[SimWorker]) -> Json {
    let w = &workers[0];
    json!({
        "workers": workers.len(),
        "threads": w.threads,
        "memory_bytes": w.memory_bytes,
        "serial_fraction": simulate::SERIAL_FRACTION,
        "makespan_seconds": sim.makespan_s,
        "utilisation": sim.utilisation,
        "never_ran": sim.never_ran.iter().map(job_name).collect::<Vec<_>>(),
        "states_on_disk": sim.jobs.iter().filter(|j| j.states_on_disk).map(|j| job_name(&j.key)).collect::<Vec<_>>(),
        "shared_efficiency": simulate::SHARED_EFFICIENCY,
        "shared": sim.jobs.iter().filter(|j| j.seats > 1).map(|j| json!({"job": job_name(&j.key), "workers": j.seats, "relayed_bytes": j.relayed_bytes})).collect::<Vec<_>>(),
        "relay": {
            "bytes": sim.relayed_bytes(),
            "peak_bytes_per_second": sim.peak_relay_bytes_per_second,
            "peak_worker_bytes_per_second": sim.peak_worker_bytes_per_second,
            "link_bytes_per_second": sim.relay_link_bytes_per_second,
            "full_seconds": sim.relay_full_s,
            "bytes_per_entry": share_policy::RELAYED_BYTES_PER_ENTRY,
            "word_bytes_per_entry": share_policy::RELAYED_WORD_BYTES_PER_ENTRY,
            "passes_per_job": share_policy::SHARED_PASSES,
            "barrier_round_trip_seconds": share_policy::BARRIER_ROUND_TRIP_SECONDS,
        },
        "critical_path": sim.critical_path.iter().map(|&i| {
            let j = &sim.jobs[i];
            json!({
                "job": job_name(&j.key),
                "start_seconds": j.start_s,
                "end_seconds": j.end_s,
                "waited_seconds": j.waited_s,
                "workers": j.seats,
            })
        }).collect::<Vec<_>>(),
    })
}

/// Seconds as `0.4 s`, `85 s`, `12.5 min`, `3.2 h` or `14.1 d`.
pub fn human_seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 2.0 * 86400.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} d", s / 86400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(human_bytes(950), "950 B");
        assert_eq!(human_bytes(2_300_000_000_000), "2.3 TB");
        assert_eq!(human_bytes(12_345), "12.3 kB");
        assert_eq!(human_bytes(171_000_000), "171 MB");
        assert_eq!(human_bytes(4_100_000_000), "4.1 GB");
        assert_eq!(human_seconds(0.42), "0.4 s");
        assert_eq!(human_seconds(85.0), "85 s");
        assert_eq!(human_seconds(750.0), "12.5 min");
        assert_eq!(human_seconds(3.0 * 86400.0), "3.0 d");
    }

    #[test]
    fn the_attacker_set_is_closed_and_bounded() {
        let one = endgames_with_attackers(1, None).unwrap();
        assert!(one.iter().any(|s| s.name() == "KRvKAABB"));
        assert!(one.iter().all(|s| {
            let m = s.material();
            m.attackers(xiangqi::Color::Red) + m.attackers(xiangqi::Color::Black) == 1
        }));
        // Closed under captures: the closure adds nothing.
        assert_eq!(xqtb_core::closure_of(&one), one);
        let small = endgames_with_attackers(1, Some(4)).unwrap();
        assert!(small.iter().all(|s| s.material().piece_count() <= 4));
        assert!(small.len() < one.len() && small.iter().any(|s| s.name() == "KRvKA"));
        let err = endgames_with_attackers(7, None).unwrap_err().to_string();
        assert!(err.contains("--max-pieces"), "{err}");
    }
}
