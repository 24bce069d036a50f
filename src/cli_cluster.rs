//! The distributed commands: `coordinator`, `worker`, `generate` (both in one process over
//! loopback), and the clients `submit`, `status`, `query`, `download`.

use crate::runtime::{runtime, termination};
use anyhow::{Context, Result, anyhow, bail};
use app::scheduler::{JobState, SchedulerConfig};
use app::{Access, Limits};
use clap::Args;
use coordinator::{Coordinator, CoordinatorConfig};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use proto::v1::tablebase_client::TablebaseClient;
use proto::v1::*;
use rpc::Auth;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use storage_format::store::ShardDir;
use tokio::sync::watch;
use worker::{Faults, WorkerConfig};
use xqtb_core::{JobKey, RuleSet, TableId};

/// Arguments of `xqtb coordinator`.
#[derive(Args)]
pub struct CoordinatorArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:7070")]
    listen: SocketAddr,
    /// Data directory (sled database of tables and job states).
    #[arg(long, default_value = "./xqtb-data")]
    data: PathBuf,
    /// Cluster token required from workers and for submit.
    #[arg(long, env = "XQTB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Also require the token for probes, listings and downloads.
    #[arg(long)]
    token_for_reads: bool,
    /// Endgames to plan at start, e.g. KRNvKR (their dependencies are added).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    plan: Vec<String>,
    /// Rule set of requests that name none (and of --plan).
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Lease time-to-live in seconds (renewed by heartbeats).
    #[arg(long, default_value_t = 30)]
    lease_ttl_secs: u64,
    /// Leases per job before it is marked failed.
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    /// Solve tables with pawns of at least this many entries as one job per pawn slice (the
    /// slices of one table then run on several workers at once, each holding only its slice).
    #[arg(long, default_value_t = app::scheduler::DEFAULT_SLICE_FROM_ENTRIES)]
    slice_from_entries: u64,
    /// Share each cycles-are-draws job (a whole table or a pawn slice) of at least
    /// --share-from-entries entries between up to this many workers at once, level by level (1: solve every job on one
    /// worker). The workers exchange their updates through the coordinator, which keeps them
    /// until the table is done so that a failed worker's seat can be taken over; it sends
    /// each worker's updates to the W - 1 others (`xqtb plan --workers N --share-by W` predicts
    /// the traffic).
    #[arg(long, default_value_t = 1, value_name = "WORKERS")]
    share_by: usize,
    /// The smallest job shared (entries: slots times both sides to move).
    #[arg(long, default_value_t = app::Sharing::default().from_entries, value_name = "ENTRIES")]
    share_from_entries: u64,
    /// PEM certificate for TLS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve Prometheus metrics on this address (e.g. 0.0.0.0:9100).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// Longest time a gRPC call may take until its answer starts, uploads excepted (then
    /// DEADLINE_EXCEEDED).
    #[arg(long, default_value_t = 30)]
    request_timeout_secs: u64,
    /// Longest wait for the next chunk of an upload (then the job is handed back) or for a
    /// download's reader to take the next chunk (then the download ends).
    #[arg(long, default_value_t = 30)]
    stream_idle_timeout_secs: u64,
    /// gRPC calls one connection may have in progress at once (more wait their turn).
    #[arg(long, default_value_t = 256)]
    max_calls_per_connection: usize,
    /// Share of every uploaded table's positions checked one ply deep before it is committed,
    /// in percent (with --sample-min; 0 and 0 turn the check off).
    #[arg(long, default_value_t = 1.0)]
    sample_percent: f64,
    /// Fewest positions checked per upload (every position of smaller tables).
    #[arg(long, default_value_t = 100_000)]
    sample_min: u64,
    #[command(flatten)]
    http: crate::cli_serve::HttpArgs,
}

/// Arguments of `xqtb worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// Coordinator URL.
    #[arg(long, default_value = "http://127.0.0.1:7070")]
    coordinator: String,
    /// Solver threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory this worker may use for one job, e.g. 8GiB or 512MB (default: the machine's
    /// memory, or its container's limit). The coordinator leases it only jobs whose estimated
    /// memory fits (see `xqtb plan`). Sharing a job, it sends the others only the entries it
    /// wrote when this covers a seat's estimate (`seat_bytes` in `xqtb plan --json`), else
    /// whole words, two to three times the bytes.
    #[arg(long)]
    memory: Option<bytesize::ByteSize>,
    /// Read the tables a job depends on through a block cache of this size (e.g. 256MiB)
    /// instead of decoding them whole (default: only for jobs whose estimate with them whole
    /// does not fit in --memory).
    #[arg(long, value_name = "SIZE")]
    dependency_cache: Option<bytesize::ByteSize>,
    /// For a job whose states do not fit in --memory (a whole table under cycles-are-draws):
    /// the memory of the one group of its states held at a time, the others on local disk
    /// beside --cache.
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    group_memory: bytesize::ByteSize,
    /// Cache directory for dependency tables.
    #[arg(long, default_value = "./xqtb-worker-cache")]
    cache: PathBuf,
    /// Cluster token.
    #[arg(long, env = "XQTB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Name shown in status output (default: host name and process id).
    #[arg(long)]
    name: Option<String>,
    /// PEM CA certificate to trust (for https:// coordinators).
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Exit once every planned job is done instead of waiting for more.
    #[arg(long)]
    exit_when_done: bool,
    /// Serve Prometheus metrics on this address (e.g. 0.0.0.0:9101).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    // Hidden fault-injection flags for the tests: they exist only in the binary the tests build
    // (see `worker::FaultArgs`).
    #[command(flatten)]
    faults: worker::FaultArgs,
}

/// Arguments of `xqtb generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// Endgames to generate (with everything they depend on).
    #[arg(required = true)]
    signatures: Vec<String>,
    /// Data directory the tables are left in.
    #[arg(long, default_value = "./xqtb-data")]
    data: PathBuf,
    /// Workers started in this process.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Threads per worker (default: all cores divided among the workers).
    #[arg(long)]
    threads: Option<usize>,
    /// Rule set to solve under.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// With --http-listen: the HTTP API and web page are served while generating and, once
    /// done, until Ctrl-C.
    #[command(flatten)]
    http: crate::cli_serve::HttpArgs,
}

/// Connection options of the client commands.
#[derive(Args, Clone)]
pub struct ServerArgs {
    /// Coordinator URL.
    #[arg(long, default_value = "http://127.0.0.1:7070")]
    server: String,
    /// Token (needed for submit, and for reads when the coordinator requires it).
    #[arg(long, env = "XQTB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// PEM CA certificate to trust (for https:// servers).
    #[arg(long)]
    ca: Option<PathBuf>,
}

/// Arguments of `xqtb submit`.
#[derive(Args)]
pub struct SubmitArgs {
    /// Endgames to generate.
    #[arg(required = true)]
    signatures: Vec<String>,
    /// Rule set to solve them under (default: the coordinator's).
    #[arg(long)]
    rules: Option<RuleSet>,
    #[command(flatten)]
    server: ServerArgs,
}

/// Arguments of `xqtb status`.
#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Keep refreshing until every job is done.
    #[arg(long)]
    watch: bool,
    /// List every slice job of a table solved in pawn slices (by default a table in slices is
    /// one line, followed by its slices that are leased, failed or cannot be held).
    #[arg(long)]
    slices: bool,
}

/// Arguments of `xqtb query`.
#[derive(Args)]
pub struct QueryArgs {
    /// Position in FEN.
    fen: String,
    /// Rule set of the tables (default: the coordinator's).
    #[arg(long)]
    rules: Option<RuleSet>,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// Arguments of `xqtb download`.
#[derive(Args)]
pub struct DownloadArgs {
    /// Tables to download, with every table probing them needs (the tables their captures
    /// lead into, and theirs) unless --only is given.
    #[arg(required = true)]
    signatures: Vec<String>,
    /// Download only the named tables, not the tables their captures lead into.
    #[arg(long)]
    only: bool,
    /// Rule set of the tables (default: the coordinator's).
    #[arg(long)]
    rules: Option<RuleSet>,
    /// Directory to write `<SIGNATURE>.xqtb` files into.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    server: ServerArgs,
}

fn tables(list: &[String], rules: RuleSet) -> Result<Vec<TableId>> {
    list.iter()
        .map(|s| Ok(TableId::new(rules, crate::parse_signature(s)?)))
        .collect()
}

fn rules_name(r: Option<RuleSet>) -> String {
    r.map(|r| r.name().to_string()).unwrap_or_default()
}

/// `xqtb coordinator`.
pub fn coordinator(args: CoordinatorArgs) -> Result<()> {
    if !(0.0..=100.0).contains(&args.sample_percent) {
        bail!(
            "--sample-percent {} is not a percentage (0 to 100)",
            args.sample_percent
        );
    }
    let limits = Limits {
        request_timeout: Duration::from_secs(args.request_timeout_secs.max(1)),
        stream_idle_timeout: Duration::from_secs(args.stream_idle_timeout_secs.max(1)),
        calls_per_connection: args.max_calls_per_connection.max(1),
        sample: solver::sample::SamplePolicy {
            percent: args.sample_percent,
            minimum: args.sample_min,
        },
        ..Limits::default()
    };
    let config = CoordinatorConfig {
        listen: args.listen,
        data: args.data,
        access: Access {
            token: args.token,
            token_for_reads: args.token_for_reads,
        },
        plan: tables(&args.plan, args.rules)?,
        scheduler: SchedulerConfig {
            lease_ttl_ms: args.lease_ttl_secs.max(1) * 1000,
            max_attempts: args.max_attempts.max(1),
            slice_from_entries: args.slice_from_entries,
        },
        default_rules: args.rules,
        tls: args.tls_cert.zip(args.tls_key),
        limits,
        sharing: app::Sharing {
            workers: args.share_by.max(1),
            from_entries: args.share_from_entries,
            ..app::Sharing::default()
        },
    };
    runtime()?.block_on(async {
        serve_metrics(args.metrics_listen)?;
        let c = Coordinator::start(config).await?;
        eprintln!("coordinator listening on {}", c.addr);
        let http = args.http.start_for(&c.app).await?;
        termination().await;
        eprintln!("shutting down");
        if let Some(h) = http {
            h.stop().await?;
        }
        c.stop().await
    })
}

/// Starts the Prometheus exporter's HTTP listener when an address is given.
fn serve_metrics(addr: Option<SocketAddr>) -> Result<()> {
    if let Some(addr) = addr {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .set_buckets(&[
                1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0,
            ])?
            .install()
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        eprintln!("metrics on http://{addr}/metrics");
    }
    Ok(())
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    format!("{}-{}", host.trim(), std::process::id())
}

/// `xqtb worker`.
pub fn worker(args: WorkerArgs) -> Result<()> {
    let machine = worker::available_memory_bytes();
    let memory_bytes = match (args.memory, machine) {
        (Some(m), Some(machine)) if m.as_u64() > machine => {
            tracing::warn!(
                memory = m.as_u64(),
                machine,
                "--memory is more than this machine has; jobs that large may run out of memory"
            );
            m.as_u64()
        }
        (Some(m), _) => m.as_u64(),
        (None, m) => m.unwrap_or(0),
    };
    let config = WorkerConfig {
        coordinator: args.coordinator,
        name: args.name.unwrap_or_else(default_name),
        threads: args.threads.unwrap_or_else(num_cpus),
        memory_bytes,
        cache: args.cache,
        token: args.token,
        ca: args.ca,
        exit_when_done: args.exit_when_done,
        dependency_cache: args.dependency_cache.map(|b| b.as_u64()),
        group_bytes: args.group_memory.as_u64(),
        faults: args.faults.faults(),
        measure_job_memory: true,
    };
    runtime()?.block_on(async {
        serve_metrics(args.metrics_listen)?;
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            termination().await;
            let _ = tx.send(true);
        });
        let summary = worker::run(config, rx).await?;
        eprintln!(
            "worker done: {} tables committed, {} uploads refused, {} seats of shared tables \
             done",
            summary.committed.len(),
            summary.refused.len(),
            summary.shared.len()
        );
        Ok(())
    })
}

/// Fails before anything starts when a job of the plan needs more memory than a local worker
/// has (it would wait forever).
fn refuse_jobs_too_large(targets: &[TableId], memory_bytes: u64, workers: usize) -> Result<()> {
    if memory_bytes == 0 {
        return Ok(());
    }
    for table in xqtb_core::closure_of_tables(targets) {
        let (sig, rules) = (table.signature, table.rules);
        let need = xqtb_core::JobCost::of(&JobKey::whole(table)).solve_bytes;
        if need > memory_bytes {
            let fix = if workers > 1 {
                " (use fewer --workers: they share the machine's memory)"
            } else {
                ""
            };
            bail!(
                "{sig} ({rules}) needs about {} to solve; each of the {workers} local workers has {}{fix}",
                app::human_bytes(need),
                app::human_bytes(memory_bytes)
            );
        }
    }
    Ok(())
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `xqtb generate`: the coordinator and `--workers` workers in this process over loopback.
pub fn generate(args: GenerateArgs) -> Result<()> {
    let targets = tables(&args.signatures, args.rules)?;
    let workers = args.workers.max(1);
    let threads = args
        .threads
        .unwrap_or_else(|| (num_cpus() / workers).max(1));
    // The in-process workers share the machine's memory.
    let memory_bytes = worker::available_memory_bytes().map_or(0, |m| m / workers as u64);
    refuse_jobs_too_large(&targets, memory_bytes, workers)?;
    std::fs::create_dir_all(&args.data)
        .with_context(|| format!("cannot create {}", args.data.display()))?;
    let config = CoordinatorConfig {
        listen: "127.0.0.1:0".parse().expect("valid address"),
        data: args.data.clone(),
        access: Access::default(),
        plan: targets,
        scheduler: SchedulerConfig::default(),
        default_rules: args.rules,
        tls: None,
        limits: Limits::default(),
        sharing: app::Sharing::default(),
    };
    let started = Instant::now();
    let cpu_start = crate::cli_solve::cpu_seconds();
    runtime()?.block_on(async {
        let c = Coordinator::start(config).await?;
        let http = args.http.start_for(&c.app).await?;
        let url = format!("http://{}", c.addr);
        let (stop_tx, stop_rx) = watch::channel(false);
        let cache_root = args.data.join("worker-cache");
        let mut handles = Vec::new();
        for i in 0..workers {
            let config = WorkerConfig {
                coordinator: url.clone(),
                name: format!("local{i}"),
                threads,
                memory_bytes,
                cache: cache_root.join(i.to_string()),
                token: None,
                ca: None,
                exit_when_done: true,
                dependency_cache: None,
                group_bytes: xqtb_core::GROUP_BYTES,
                faults: Faults::default(),
                // The coordinator and the other workers share this process.
                measure_job_memory: false,
            };
            handles.push(tokio::spawn(worker::run(config, stop_rx.clone())));
        }
        let interrupted = tokio::select! {
            _ = show_progress(&c) => false,
            _ = termination() => true,
        };
        let _ = stop_tx.send(true);
        for h in handles {
            h.await??;
        }
        let status = c.app.status();
        let _ = std::fs::remove_dir_all(&cache_root);
        let failed = (status.failed > 0).then(|| {
            let failed: Vec<String> = status
                .jobs
                .iter()
                .filter(|j| j.state == JobState::Failed)
                .map(|j| format!("{} ({})", j.key, j.last_error.as_deref().unwrap_or("")))
                .collect();
            format!("{} tables failed: {}", status.failed, failed.join("; "))
        });
        if !interrupted && failed.is_none() {
            println!(
                "generated {} tables into {} in {:.2} s wall, {:.2} s CPU, peak memory {}",
                status.finished,
                args.data.display(),
                started.elapsed().as_secs_f64(),
                crate::cli_solve::cpu_seconds() - cpu_start,
                crate::cli_solve::peak_memory()
            );
            println!(
                "query with: xqtb probe FEN --data {} --rules {}",
                args.data.display(),
                args.rules
            );
        }
        if let Some(h) = http {
            if !interrupted {
                eprintln!("serving http://{}/ until Ctrl-C", h.addr);
                termination().await;
            }
            h.stop().await?;
        }
        c.stop().await?;
        if interrupted {
            bail!(
                "interrupted; finished tables are kept in {}, run again to resume",
                args.data.display()
            );
        }
        if let Some(failed) = failed {
            bail!("{failed}");
        }
        Ok(())
    })
}

/// Draws one bar per table until every job is done.
async fn show_progress(c: &Coordinator) {
    let multi = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>12} [{bar:40}] {percent:>3}% {msg}")
        .expect("valid template")
        .progress_chars("=> ");
    // One bar per table: a table solved in pawn slices fills as its slices are solved.
    let mut bars: HashMap<TableId, ProgressBar> = HashMap::new();
    loop {
        let status = c.app.status();
        for t in &status.tables {
            let bar = bars.entry(t.table).or_insert_with(|| {
                let b = multi.add(ProgressBar::new(1000));
                b.set_style(style.clone());
                b.set_prefix(t.table.signature.name());
                b
            });
            let jobs = status.jobs.iter().filter(|j| j.key.table == t.table);
            let mut done = 0.0;
            let mut solving = Vec::new();
            for j in jobs {
                let share = j.key.entries() as f64 / t.entries_total.max(1) as f64;
                match (j.state, &j.worker) {
                    (JobState::Finished, _) => done += share,
                    (JobState::Leased, Some(w)) => {
                        done += share * j.progress;
                        solving.push(w.as_str());
                    }
                    _ => {}
                }
            }
            bar.set_position((done * 1000.0) as u64);
            let slices = match t.jobs {
                1 => String::new(),
                n => format!("{} of {n} slices done, ", t.finished),
            };
            let msg = match (t.state(), solving.is_empty()) {
                ("solving", false) => format!("{slices}solving on {}", solving.join(", ")),
                ("solving", true) => format!("{slices}waiting for its next slices"),
                (state, _) => state.to_string(),
            };
            bar.set_message(msg);
            if matches!(t.state(), "finished" | "failed") {
                bar.finish();
            }
        }
        if c.app.all_done() {
            multi.clear().ok();
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn tablebase_client(
    s: &ServerArgs,
) -> Result<
    TablebaseClient<
        tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Auth>,
    >,
> {
    let channel = rpc::connect(&s.server, s.ca.as_deref()).await?;
    Ok(
        TablebaseClient::with_interceptor(channel, Auth::new(s.token.as_deref())?)
            .max_decoding_message_size(16 << 20),
    )
}

/// A failed call to the coordinator of `server` as one message: the coordinator's own words,
/// with where they came from and what to do where that is clear. `fix`: what makes the table a
/// NOT_FOUND answer reports missing.
fn call_error(s: tonic::Status, server: &ServerArgs, fix: Option<String>) -> anyhow::Error {
    use tonic::Code;
    let url = &server.server;
    let msg = match s.message() {
        "" => s.code().description(),
        m => m,
    };
    match s.code() {
        Code::Unauthenticated if server.token.is_some() => anyhow!(
            "the coordinator at {url} refused the call: {msg}; check --token (or XQTB_TOKEN) against the coordinator's --token"
        ),
        Code::Unauthenticated => anyhow!(
            "the coordinator at {url} refused the call: {msg}; give its cluster token with --token or XQTB_TOKEN"
        ),
        Code::NotFound => match fix {
            Some(fix) => anyhow!("{msg}; {fix}"),
            None => anyhow!("{msg}"),
        },
        // The coordinator's message says what is wrong with the request itself.
        Code::InvalidArgument | Code::FailedPrecondition => anyhow!("{msg}"),
        Code::Unavailable => anyhow!("the coordinator at {url} is unavailable: {msg}"),
        Code::Unimplemented => anyhow!(
            "{url} does not answer this call ({msg}): is it an xqtb coordinator, of this version?"
        ),
        // Failures below gRPC (a connection reset, an HTTP/1 server on the port) come as
        // UNKNOWN or INTERNAL with the transport's error as the status's source.
        code => {
            let detail = std::error::Error::source(&s)
                .map(rpc::error_chain)
                .filter(|d| !msg.ends_with(d.as_str()))
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let hint = if matches!(code, Code::Unknown | Code::Internal) && !detail.is_empty() {
                "; is this the coordinator's gRPC address (its --listen, not --http-listen)?"
            } else {
                ""
            };
            anyhow!(
                "the coordinator at {url} answered {}: {msg}{detail}{hint}",
                code_name(code)
            )
        }
    }
}

/// [`call_error`] for calls whose NOT_FOUND has no obvious fix.
fn status_error(server: &ServerArgs) -> impl Fn(tonic::Status) -> anyhow::Error + '_ {
    move |s| call_error(s, server, None)
}

/// The canonical name of a gRPC status code, as the gRPC documentation and other clients
/// write it (`NOT_FOUND`; tonic's `Display` is a sentence).
fn code_name(code: tonic::Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// The command that generates `signature` on the coordinator of `server`, under `rules` (the
/// coordinator's default when `None`, as for the call that found it missing).
fn submit_fix(signature: &str, rules: Option<RuleSet>, server: &ServerArgs) -> String {
    let rules = rules.map(|r| format!(" --rules {r}")).unwrap_or_default();
    format!(
        "generate it on the coordinator with `xqtb submit {signature}{rules} --server {}` (needs the cluster token, if it has one)",
        server.server
    )
}

/// `xqtb submit`.
pub fn submit(args: SubmitArgs) -> Result<()> {
    tables(&args.signatures, RuleSet::default())?;
    runtime()?.block_on(async {
        let mut client = tablebase_client(&args.server).await?;
        let r = client
            .submit(SubmitRequest {
                signatures: args.signatures.clone(),
                rules: rules_name(args.rules),
            })
            .await
            .map_err(status_error(&args.server))?
            .into_inner();
        if r.planned.is_empty() {
            println!("nothing new to plan: every table is already planned or finished");
        } else {
            println!(
                "planned {} tables under {}: {}",
                r.planned.len(),
                r.rules,
                r.planned.join(" ")
            );
        }
        Ok(())
    })
}

/// `xqtb status`.
pub fn status(args: StatusArgs) -> Result<()> {
    runtime()?.block_on(async {
        let mut client = tablebase_client(&args.server).await?;
        loop {
            let s = client
                .status(StatusRequest {})
                .await
                .map_err(status_error(&args.server))?
                .into_inner();
            if args.watch {
                print!("\x1b[2J\x1b[H");
            }
            print_status(&s, args.slices);
            let done = s.waiting + s.ready + s.leased == 0;
            if !args.watch || done {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

fn print_status(s: &StatusResponse, every_slice: bool) {
    println!(
        "jobs: {} finished, {} leased, {} ready, {} waiting, {} failed",
        s.finished, s.leased, s.ready, s.waiting, s.failed
    );
    let tables_in = |state: &str| s.tables.iter().filter(|t| t.state == state).count();
    println!(
        "tables: {} finished, {} solving, {} ready, {} waiting, {} failed",
        tables_in("finished"),
        tables_in("solving"),
        tables_in("ready"),
        tables_in("waiting"),
        tables_in("failed")
    );
    let eta = if s.eta_seconds < 0.0 {
        "unknown".into()
    } else {
        format!("{:.0} s", s.eta_seconds)
    };
    println!(
        "entries: {} of {} done, {:.0} entries/s, estimated time left {eta}",
        s.entries_done, s.entries_total, s.entries_per_second
    );
    // A table solved in slices is one line, followed by the slices worth a look.
    let table_of = |j: &JobStatus| j.key.as_ref().and_then(|k| k.table.clone());
    for t in &s.tables {
        let jobs: Vec<&JobStatus> = s.jobs.iter().filter(|j| table_of(j) == t.table).collect();
        if t.jobs <= 1 {
            jobs.iter()
                .for_each(|j| print_job(j, &job_name(j.key.as_ref()), 2));
            continue;
        }
        let waiting = t.jobs - t.finished_jobs - t.leased_jobs - t.ready_jobs - t.failed_jobs;
        println!(
            "  {:<30} {:<9} {} slices: {} finished, {} leased, {} ready, {waiting} waiting{}; {:.0}% of its entries",
            table_name(t.table.as_ref()),
            t.state,
            t.jobs,
            t.finished_jobs,
            t.leased_jobs,
            t.ready_jobs,
            match t.failed_jobs {
                0 => String::new(),
                n => format!(", {n} failed"),
            },
            100.0 * t.entries_done as f64 / t.entries_total.max(1) as f64
        );
        for j in jobs {
            let notable =
                matches!(j.state.as_str(), "leased" | "failed") || !j.unholdable.is_empty();
            if every_slice || notable {
                let slots = j.key.as_ref().map_or(String::new(), |k| {
                    format!("slots {}..{}", k.first_slot, k.end_slot)
                });
                print_job(j, &slots, 4);
            }
        }
    }
    for w in &s.workers {
        let memory = match (w.memory_bytes, w.resident_bytes) {
            (0, _) => String::new(),
            (m, 0) => format!(", {}", app::human_bytes(m)),
            (m, r) => format!(
                ", {}, holds {} between jobs",
                app::human_bytes(m),
                app::human_bytes(r)
            ),
        };
        println!(
            "  worker {} ({} threads{memory}): {} {:.0}% {}, seen {} ms ago",
            w.worker_id,
            w.threads,
            match &w.current_job {
                None => "idle".to_string(),
                Some(k) => job_name(Some(k)),
            },
            w.progress * 100.0,
            w.phase,
            w.last_seen_ms_ago
        );
    }
}

/// One job's status line, named `name`, indented by `indent`.
fn print_job(j: &JobStatus, name: &str, indent: usize) {
    let mut extra = match j.state.as_str() {
        "leased" => format!(" on {} ({:.0}%)", j.worker_id, j.progress * 100.0),
        "failed" => format!(" ({})", j.last_error),
        _ => String::new(),
    };
    if !j.unholdable.is_empty() {
        extra = format!("{extra}; no worker can hold it: {}", j.unholdable);
    }
    println!(
        "{:indent$}{:<width$} {:<9} attempts {}, memory {}{extra}",
        "",
        name,
        j.state,
        j.attempts,
        app::human_bytes(j.memory_bytes),
        width = 32 - indent,
    );
    if let Some(s) = &j.share {
        let seats: Vec<String> = s
            .seat_workers
            .iter()
            .enumerate()
            .map(|(i, w)| match w.as_str() {
                "" => format!("{i} open"),
                w => format!("{i} {w}"),
            })
            .collect();
        println!(
            "{:indent$}  shared by {} workers (seats {}), last pass {}, {} relayed, {} held, {} \
             replaced",
            "",
            s.seats,
            seats.join(", "),
            if s.pass.is_empty() { "none" } else { &s.pass },
            app::human_bytes(s.bytes_relayed),
            app::human_bytes(s.bytes_held),
            s.replacements,
        );
    }
}

/// A table's name for status output: the signature, with the rule set unless it is the first
/// one.
fn table_name(table: Option<&proto::v1::TableRef>) -> String {
    match table {
        Some(t) if t.rules == RuleSet::CyclesAreDraws.name() => t.signature.clone(),
        Some(t) => format!("{} ({})", t.signature, t.rules),
        None => "?".into(),
    }
}

/// A job's name for status output: the signature, with the rule set unless it is the first
/// one, and the slots unless the job is the whole table.
fn job_name(key: Option<&proto::v1::JobKey>) -> String {
    match rpc::parse_job_key(key) {
        Ok(k) => {
            let mut name = k.table.signature.name();
            if k.table.rules != RuleSet::CyclesAreDraws {
                name = format!("{name} ({})", k.table.rules);
            }
            if !k.is_whole_table() {
                name = format!("{name} slots {}", k.slots);
            }
            name
        }
        Err(e) => format!("? ({e})"),
    }
}

/// `xqtb query`.
pub fn query(args: QueryArgs) -> Result<()> {
    runtime()?.block_on(async {
        let mut client = tablebase_client(&args.server).await?;
        let r = client
            .probe(ProbeRequest {
                fen: args.fen.clone(),
                rules: rules_name(args.rules),
            })
            .await
            .map_err(|s| {
                // NOT_FOUND names a table not generated: the position's own, whose closure
                // holds every table its moves lead into.
                let fix = xiangqi::parse_fen(&args.fen).ok().map(|board| {
                    let sig = xqtb_core::Signature::new(xqtb_core::Material::of_board(&board));
                    submit_fix(&sig.name(), args.rules, &args.server)
                });
                call_error(s, &args.server, fix)
            })?
            .into_inner();
        let r = rpc::probe_report(r).context("the coordinator's answer does not parse")?;
        if args.json {
            println!("{}", serde_json::to_string(&r)?);
        } else {
            let table = r.table.as_deref().unwrap_or("no table needed");
            let v = probe::value_text(r.category, r.dtm_plies, r.rule, r.rule_plies, r.rule_round);
            println!("{} ({table}, {}): {v}", r.fen, r.rules);
            for m in &r.moves {
                let v =
                    probe::value_text(m.category, m.dtm_plies, m.rule, m.rule_plies, m.rule_round);
                println!("  {} {} {}: {v}", m.iccs, m.chinese, m.wxf);
            }
        }
        Ok(())
    })
}

/// `xqtb download`: each file is checked and only renamed into place when whole.
pub fn download(args: DownloadArgs) -> Result<()> {
    // Without --rules the tables are the coordinator's default rule set's: ask which it is, so
    // that the files already here are looked for under their right names.
    let rules = match args.rules {
        Some(r) => r,
        None => runtime()?.block_on(async {
            let mut client = tablebase_client(&args.server).await?;
            let listed = client
                .list_shards(ListShardsRequest {})
                .await
                .map_err(|s| call_error(s, &args.server, None))?
                .into_inner();
            listed.default_rules.parse::<RuleSet>().map_err(|e| {
                anyhow!(
                    "the coordinator at {} names no default rule set ({e}); pass --rules",
                    args.server.server
                )
            })
        })?,
    };
    let named = tables(&args.signatures, rules)?;
    // A table the coordinator lacks is generated, with everything it needs, by submitting the
    // tables asked for.
    let asked: Vec<String> = named.iter().map(|t| t.signature.name()).collect();
    let asked = asked.join(" ");
    let wanted = if args.only {
        named
    } else {
        xqtb_core::closure_of_tables(&named)
    };
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    // Files already there and whole (every checksum right) are kept: a download interrupted
    // or repeated fetches only what is missing.
    let (present, missing): (Vec<TableId>, Vec<TableId>) = wanted
        .into_iter()
        .partition(|id| shard_is_whole(&args.output.join(ShardDir::file_name(id)), id));
    for id in &present {
        println!(
            "{}: already in {}, whole (checksums verified); kept",
            id.signature,
            args.output.display()
        );
    }
    if missing.is_empty() {
        return Ok(());
    }
    runtime()?.block_on(async {
        let mut client = tablebase_client(&args.server).await?;
        for table in missing {
            let sig = table.signature;
            let mut stream = client
                .download_shard(DownloadShardRequest {
                    signature: sig.name(),
                    rules: rules.name().into(),
                })
                .await
                .map_err(|s| {
                    let fix = submit_fix(&asked, args.rules, &args.server);
                    call_error(s, &args.server, Some(fix))
                })?
                .into_inner();
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(sig.name());
            let id = TableId::new(rules, sig);
            let bytes = rpc::receive_shard(&mut stream, &id, |done, total| {
                bar.set_length(total);
                bar.set_position(done);
            })
            .await
            .with_context(|| format!("nothing written for {sig}"))?;
            bar.finish_and_clear();
            let shard = storage_format::shard::read_shard(&bytes)
                .with_context(|| format!("download of {sig}"))?;
            let path = args.output.join(ShardDir::file_name(&shard.header.id()));
            let tmp = path.with_extension("part");
            std::fs::write(&tmp, &bytes)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            std::fs::rename(&tmp, &path)
                .with_context(|| format!("cannot rename to {}", path.display()))?;
            println!(
                "{sig}: {} bytes, checksum verified, written to {}",
                bytes.len(),
                path.display()
            );
        }
        Ok(())
    })
}

/// Whether `path` holds the whole shard file of `id`: it reads, and every checksum in it is
/// right.
fn shard_is_whole(path: &Path, id: &TableId) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| storage_format::shard::read_shard(&bytes).ok())
        .is_some_and(|shard| shard.header.id() == *id)
}

/// Arguments of `xqtb health`.
#[derive(Args)]
pub struct HealthArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// `xqtb health`: asks the standard gRPC health service; fails unless it reports serving.
pub fn health(args: HealthArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = rpc::connect(&args.server.server, args.server.ca.as_deref()).await?;
        let mut client = tonic_health::pb::health_client::HealthClient::new(channel);
        let r = client
            .check(tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            })
            .await
            .map_err(status_error(&args.server))?
            .into_inner();
        let serving =
            r.status == tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
        if !serving {
            bail!("not serving (status {})", r.status);
        }
        println!("serving");
        Ok(())
    })
}
