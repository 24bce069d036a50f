//! The xqtb worker: registers with a coordinator, leases a job, fetches the tables it depends
//! on into a local cache, solves and verifies it with all its threads while heartbeating,
//! uploads the result and repeats. It reconnects with backoff when the coordinator is away and
//! hands its job back on shutdown.
//!
//! A thin shell: the solver does the work, the storage crate keeps the cache, the `rpc` crate
//! maps the messages. Nothing here decides a value, and nothing here depends on the coordinator's
//! code: the protocol is the only contract between the two.

#![warn(missing_docs)]

mod fault;
mod grouped;
mod resources;
mod scratch;
mod seat;

pub use fault::{FaultArgs, Faults};
pub use grouped::{solve_in_groups, solve_shared_in_process};
pub use resources::{
    available_memory_bytes, cpu_seconds, peak_rss_bytes, reset_peak_rss, rss_bytes,
};
pub use scratch::DirScratch;

use anyhow::{Context, Result, anyhow};
use proto::v1::jobs_client::JobsClient;
use proto::v1::*;
use rpc::{Auth, Client, ShardReceiveError};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use storage_format::codec::encode_table;
use storage_format::shard;
use storage_format::store::{SledStore, TableStore};
use tokio::sync::watch;
use xqtb_core::{
    DEPENDENCY_CACHE_BYTES, JobCost, JobKey, MemoryTables, Probe, ProbeError, RuleSet, Signature,
    SlotRange, Table, TableId, Value,
};

/// Chunk size for uploads (well under the 4 MiB message limit).
const UPLOAD_CHUNK: usize = 512 * 1024;

/// How to run a worker.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Coordinator URL, e.g. `http://127.0.0.1:7070`.
    pub coordinator: String,
    /// Name shown in status output.
    pub name: String,
    /// Solver threads.
    pub threads: usize,
    /// Memory it can give one job, in bytes (0: not said); the coordinator leases only jobs
    /// whose estimated memory fits.
    pub memory_bytes: u64,
    /// Directory of the cache of dependency tables.
    pub cache: PathBuf,
    /// Cluster token, sent as `authorization: Bearer ...`.
    pub token: Option<String>,
    /// PEM CA certificate to trust for TLS (`https://` URLs).
    pub ca: Option<PathBuf>,
    /// Stop once the coordinator says every job is done (otherwise keep polling).
    pub exit_when_done: bool,
    /// Faults to inject, for tests: none (and no way to ask for any) without the crate's
    /// `fault-injection` feature.
    pub faults: Faults,
    /// Read dependency tables through a block cache of this many bytes for every job. Without
    /// it a job decodes them whole when its estimate with them fits in `memory_bytes` (or no
    /// memory is said), and reads them through a cache of [`DEPENDENCY_CACHE_BYTES`] otherwise.
    pub dependency_cache: Option<u64>,
    /// Bytes of the one group of a job's states held in memory when the job keeps them on
    /// local disk ([`JobCost::keeps_states_on_disk`]; two bytes a slot).
    pub group_bytes: u64,
    /// Measure each job's peak resident memory (the process's peak, reset when the job starts):
    /// only right when this worker has its process to itself, as `xqtb worker` has.
    pub measure_job_memory: bool,
}

/// What a worker did.
#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    /// Jobs solved and accepted.
    pub committed: Vec<JobKey>,
    /// Jobs whose upload the coordinator refused (or whose lease was lost).
    pub refused: Vec<JobKey>,
    /// Shared jobs of which this worker solved and verified a seat other than the first (the
    /// first uploads the table).
    pub shared: Vec<JobKey>,
}

type Jobs = JobsClient<Client>;

/// What the worker is doing with its job, as heartbeats report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    Fetching = 0,
    Solving = 1,
    Verifying = 2,
    Encoding = 3,
    Uploading = 4,
}

impl Phase {
    const ALL: [Phase; 5] = [
        Phase::Fetching,
        Phase::Solving,
        Phase::Verifying,
        Phase::Encoding,
        Phase::Uploading,
    ];

    fn name(self) -> &'static str {
        match self {
            Phase::Fetching => "fetching",
            Phase::Solving => "solving",
            Phase::Verifying => "verifying",
            Phase::Encoding => "encoding",
            Phase::Uploading => "uploading",
        }
    }
}

/// Progress and phase of the current job, shared with the heartbeat task.
#[derive(Default)]
struct JobProgress {
    fraction: AtomicU64,
    phase: AtomicU8,
}

impl JobProgress {
    fn set(&self, phase: Phase, fraction: f64) {
        self.phase.store(phase as u8, Relaxed);
        self.fraction.store(fraction.to_bits(), Relaxed);
    }

    fn get(&self) -> (Phase, f64) {
        let phase = Phase::ALL[self.phase.load(Relaxed) as usize % Phase::ALL.len()];
        (phase, f64::from_bits(self.fraction.load(Relaxed)))
    }
}

/// Resolves once `shutdown` turns true (the borrow guard never outlives this function, so the
/// worker future stays `Send`).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await.map(|_| ());
}

fn is_stopped(shutdown: &watch::Receiver<bool>) -> bool {
    *shutdown.borrow()
}

/// Runs the worker until every job is done (with `exit_when_done`) or `shutdown` turns true.
pub async fn run(
    config: WorkerConfig,
    mut shutdown: watch::Receiver<bool>,
) -> Result<WorkerSummary> {
    let cache = Arc::new(
        SledStore::open(&config.cache)
            .with_context(|| format!("cannot open the worker cache {}", config.cache.display()))?,
    );
    // States that a killed worker left on disk: only this worker uses the directory beside its
    // cache (the store's lock says no other does), and a new job starts its states afresh.
    let states = states_dir(&config);
    if states.exists() {
        std::fs::remove_dir_all(&states)
            .with_context(|| format!("cannot clear old job states in {}", states.display()))?;
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .build()?,
    );
    register_metrics();
    let mut summary = WorkerSummary::default();
    let mut backoff = Duration::from_millis(200);
    loop {
        if is_stopped(&shutdown) {
            return Ok(summary);
        }
        let session = session(
            &config,
            &cache,
            &pool,
            &mut shutdown,
            &mut summary,
            &mut backoff,
        );
        match session.await {
            Ok(()) => return Ok(summary),
            Err(e) => {
                tracing::warn!(worker = %config.name, "coordinator unavailable ({}); retrying in {backoff:?}", rpc::error_chain(e.as_ref()));
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stopped(&mut shutdown) => return Ok(summary),
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// One connection's worth of work; returns `Ok` when the worker should stop for good.
async fn session(
    config: &WorkerConfig,
    cache: &Arc<SledStore>,
    pool: &Arc<rayon::ThreadPool>,
    shutdown: &mut watch::Receiver<bool>,
    summary: &mut WorkerSummary,
    backoff: &mut Duration,
) -> Result<()> {
    let channel = rpc::connect(&config.coordinator, config.ca.as_deref()).await?;
    let mut client = JobsClient::with_interceptor(channel, Auth::new(config.token.as_deref())?)
        .max_decoding_message_size(16 << 20);
    let reg = client
        .register(RegisterRequest {
            name: config.name.clone(),
            threads: config.threads as u32,
            memory_bytes: config.memory_bytes,
            version: env!("CARGO_PKG_VERSION").into(),
        })
        .await?
        .into_inner();
    *backoff = Duration::from_millis(200);
    let worker_id = reg.worker_id;
    let beat = Duration::from_millis(reg.heartbeat_interval_ms.max(50) as u64);
    tracing::info!(worker = %worker_id, "registered");
    loop {
        if is_stopped(shutdown) {
            return Ok(());
        }
        let lease = client
            .lease(LeaseRequest {
                worker_id: worker_id.clone(),
                // Only a worker with its process to itself knows what it holds.
                resident_bytes: if config.measure_job_memory {
                    rss_bytes().unwrap_or(0)
                } else {
                    0
                },
            })
            .await?
            .into_inner();
        let Some(job) = lease.job else {
            if lease.all_done && config.exit_when_done {
                return Ok(());
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(lease.retry_after_ms.max(50) as u64)) => {}
                _ = stopped(shutdown) => return Ok(()),
            }
            continue;
        };
        let lease_id = job.lease_id.clone();
        let work = run_job(&mut client, cache, pool, &worker_id, beat, config, job);
        let outcome = tokio::select! {
            r = work => r,
            _ = stopped(shutdown) => {
                let _ = client.report_failure(FailureReport {
                    worker_id: worker_id.clone(),
                    lease_id,
                    message: "worker shutting down; job handed back".into(),
                }).await;
                return Ok(());
            }
        };
        match outcome {
            Ok(JobOutcome::Committed(key)) => summary.committed.push(key),
            Ok(JobOutcome::Refused(key)) => summary.refused.push(key),
            Ok(JobOutcome::SeatDone(key)) => summary.shared.push(key),
            Err(JobFailure::Transport(e)) => return Err(e),
            Err(JobFailure::Job(e)) => {
                let message = rpc::error_chain(e.as_ref());
                tracing::error!(worker = %worker_id, lease = %lease_id, "job failed: {message}");
                client
                    .report_failure(FailureReport {
                        worker_id: worker_id.clone(),
                        lease_id,
                        message,
                    })
                    .await?;
            }
        }
    }
}

enum JobOutcome {
    Committed(JobKey),
    Refused(JobKey),
    /// A seat of a shared job other than the first: done, its parts handed over and its
    /// entries verified.
    SeatDone(JobKey),
}

enum JobFailure {
    /// The coordinator could not be reached: reconnect.
    Transport(anyhow::Error),
    /// The job itself failed: report it.
    Job(anyhow::Error),
}

impl From<tonic::Status> for JobFailure {
    fn from(s: tonic::Status) -> Self {
        JobFailure::Transport(s.into())
    }
}

fn job_err(e: impl Into<anyhow::Error>) -> JobFailure {
    JobFailure::Job(e.into())
}

/// Sends heartbeats for `lease_id` every `beat` until aborted; sets `lost` when the coordinator
/// says the lease is gone.
fn spawn_heartbeats(
    mut client: Jobs,
    worker_id: String,
    lease_id: String,
    beat: Duration,
    progress: Arc<JobProgress>,
    lost: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(beat).await;
            let (phase, fraction) = progress.get();
            let r = client
                .heartbeat(HeartbeatRequest {
                    worker_id: worker_id.clone(),
                    lease_id: lease_id.clone(),
                    progress: fraction,
                    phase: phase.name().into(),
                })
                .await;
            if let Ok(r) = r
                && !r.into_inner().keep_going
            {
                lost.store(true, Relaxed);
                return;
            }
        }
    })
}

async fn run_job(
    client: &mut Jobs,
    cache: &Arc<SledStore>,
    pool: &Arc<rayon::ThreadPool>,
    worker_id: &str,
    beat: Duration,
    config: &WorkerConfig,
    job: Job,
) -> Result<JobOutcome, JobFailure> {
    #[cfg(feature = "fault-injection")]
    let faults = config.faults;
    let key = rpc::parse_job_key(job.key.as_ref()).map_err(job_err)?;
    let seat = seat::Seat::of(job.share.as_ref()).map_err(job_err)?;
    // A pawn slice job also reads the slices of its own table its pawn advances lead into.
    let slices = key.slice_dependencies();
    let deps: Vec<TableId> = job
        .dependencies
        .iter()
        .map(|t| rpc::parse_table(&t.signature, &t.rules, key.table.rules))
        .collect::<Result<_, _>>()
        .map_err(job_err)?;
    match seat {
        Some(s) => {
            tracing::info!(worker = %worker_id, job = %key, lease = %job.lease_id, seat = s.seat, seats = s.seats, "solving a seat of a shared job")
        }
        None => tracing::info!(worker = %worker_id, job = %key, lease = %job.lease_id, "solving"),
    }
    let usage = JobUsage::start(config.measure_job_memory);
    let progress = Arc::new(JobProgress::default());
    let lost = Arc::new(AtomicBool::new(false));
    // Heartbeats run beside everything else for the whole job, downloads included.
    let heartbeat = spawn_heartbeats(
        client.clone(),
        worker_id.to_string(),
        job.lease_id.clone(),
        beat,
        Arc::clone(&progress),
        Arc::clone(&lost),
    );
    let result = async {
        progress.set(Phase::Fetching, 0.0);
        for dep in &deps {
            if cache.header(dep).map_err(job_err)?.is_none() {
                let bytes = fetch(client, dep, None).await?;
                cache
                    .import_shard(&bytes)
                    .map_err(|e| job_err(anyhow!("dependency {dep}: {e}")))?;
            }
        }
        for &slots in &slices {
            let held = cache.header(&key.table).map_err(job_err)?.is_some()
                || cache
                    .part_headers(&key.table)
                    .map_err(job_err)?
                    .iter()
                    .any(|h| h.slots == slots);
            if !held {
                let bytes = fetch(client, &key.table, Some(slots)).await?;
                let part = shard::read_shard(&bytes)
                    .map_err(|e| job_err(anyhow!("slices {slots} of {}: {e}", key.table)))?;
                cache.put_part(&part).map_err(job_err)?;
            }
        }
        let cache_bytes = dependency_cache_bytes(config, &key);
        // A job whose states do not fit in this worker's memory keeps them on local disk, in a
        // directory beside its cache store that goes with the job.
        // So does every seat of a shared job: the seats exchange the kinds of its groups'
        // states.
        // Judged before the dependencies are loaded, as the coordinator judged the lease.
        let (cost, memory) = (JobCost::of(&key), memory_for_job(config));
        let states_dir = (seat.is_some() || cost.keeps_states_on_disk(memory))
            .then(|| states_dir(config));
        let sends = seat_sends(&cost, memory);
        let (on_disk, group_bytes) = (states_dir.is_some(), config.group_bytes);
        let mut tables = MemoryTables::new();
        if cache_bytes.is_none() {
            storage_format::load_into_memory(&**cache, &deps, &mut tables, |_, _| {})
                .map_err(job_err)?;
        }
        for &slots in &slices {
            let part = match cache.header(&key.table).map_err(job_err)? {
                Some(_) => cache.load_table(&key.table),
                None => cache.load_part(&key.table, slots.start),
            }
            .map_err(job_err)?;
            let part = storage_format::codec::decode_table(&part).map_err(job_err)?;
            tables.insert(Arc::new(part));
        }
        let through_cache = cache_bytes.map(|bytes| CachedDependencies {
            own: key.table,
            parts: std::mem::take(&mut tables),
            tables: probe::Tablebase::with_cache_bytes(Arc::clone(cache), bytes),
        });
        let (pool, p) = (Arc::clone(pool), Arc::clone(&progress));
        let started = std::time::Instant::now();
        let (share_client, runtime) = (client.clone(), tokio::runtime::Handle::current());
        let lease_id = job.lease_id.clone();
        #[cfg(feature = "fault-injection")]
        let stall_at_pass = seat.and_then(|_| faults.stall_seat_at_pass());
        let solved = tokio::task::spawn_blocking(move || {
            pool.install(|| {
                let report = |pr: solver::Progress| {
                    let share = |done: u64, total: u64| done as f64 / total.max(1) as f64;
                    match pr {
                        solver::Progress::Init { done, total } => {
                            p.set(Phase::Solving, 0.2 * share(done, total))
                        }
                        solver::Progress::Level { resolved, total, .. } => {
                            p.set(Phase::Solving, 0.2 + 0.4 * share(resolved, total))
                        }
                        solver::Progress::Rules { .. } => p.set(Phase::Solving, 0.6),
                        solver::Progress::Verify { done, total } => {
                            p.set(Phase::Verifying, 0.6 + 0.3 * share(done, total))
                        }
                    }
                };
                let deps: &dyn Probe = match &through_cache {
                    Some(c) => c,
                    None => &tables,
                };
                if let (Some(seat), Some(dir)) = (seat, &states_dir) {
                    let job = seat::SeatJob {
                        key,
                        seat,
                        lease_id: &lease_id,
                        client: share_client,
                        runtime,
                        dir,
                        sends,
                        #[cfg(feature = "fault-injection")]
                        stall_at_pass: stall_at_pass
                            .filter(|&(stalled, _)| stalled == seat.seat)
                            .map(|(_, pass)| pass),
                    };
                    return seat::solve_seat(job, deps, &report);
                }
                if let Some(dir) = &states_dir {
                    let scratch = DirScratch::create(dir)?;
                    let states = solver::StateStore::Groups {
                        group_slots: (group_bytes / 2).max(1),
                        scratch: &scratch,
                        share: None,
                    };
                    let (encoded, _) =
                        solve_in_groups(key.table, key.slots, states, deps, &report)?;
                    return Ok::<_, anyhow::Error>(Some(encoded));
                }
                let (table, _) = if key.is_whole_table() {
                    solver::solve_and_verify(key.table, deps, &report)?
                } else {
                    solver::solve_and_verify_range(
                        key.table,
                        key.slots,
                        solver::StateStore::Memory,
                        deps,
                        &report,
                    )?
                };
                #[cfg(feature = "fault-injection")]
                let table = faults.corrupt(&key, table);
                p.set(Phase::Encoding, 0.9);
                Ok::<_, anyhow::Error>(Some(encode_table(&table)))
            })
        })
        .await
        .map_err(|e| job_err(anyhow!("solver thread: {e}")))?
        .map_err(job_err)?;
        let secs = started.elapsed().as_secs_f64();
        let entries = key.entries();
        metrics::histogram!("xqtb_worker_solve_seconds").record(secs);
        metrics::gauge!("xqtb_worker_solve_entries_per_second").set(entries as f64 / secs.max(1e-9));
        metrics::counter!("xqtb_worker_entries_solved_total").increment(entries);
        let Some(solved) = solved else {
            tracing::info!(worker = %worker_id, job = %key, "seat of the shared job done: its parts handed over, its entries verified");
            return Ok(JobOutcome::SeatDone(key));
        };
        if lost.load(Relaxed) {
            tracing::warn!(worker = %worker_id, job = %key, "lease lost while solving; dropping the result");
            return Ok(JobOutcome::Refused(key));
        }
        #[cfg(feature = "fault-injection")]
        if faults.delay_upload().await && lost.load(Relaxed) {
            tracing::warn!(worker = %worker_id, job = %key, "lease lost while waiting to upload; dropping the result");
            return Ok(JobOutcome::Refused(key));
        }
        progress.set(Phase::Uploading, 0.95);
        let bytes = shard::write_shard(&solved);
        // Keep our own result: later jobs depend on it.
        if key.is_whole_table() {
            cache.put_table(&solved).map_err(job_err)?;
        } else {
            cache.put_part(&solved).map_err(job_err)?;
        }
        let outcome = upload(client, &job.lease_id, &key, &bytes, worker_id).await;
        usage.report(worker_id, &key, cache_bytes.is_none(), on_disk);
        drop(bytes);
        // The job's tables were freed; glibc would keep much of it for the next job.
        resources::release_freed_memory();
        outcome
    }
    .await;
    heartbeat.abort();
    result
}

/// The block cache a job reads its dependency tables through, or `None` to decode them whole:
/// whole when the job's estimate with them fits in the memory this worker has for it.
fn dependency_cache_bytes(config: &WorkerConfig, key: &JobKey) -> Option<u64> {
    if config.dependency_cache.is_some() {
        return config.dependency_cache;
    }
    let memory = memory_for_job(config);
    let whole = config.memory_bytes == 0 || JobCost::of(key).reads_dependencies_whole(memory);
    (!whole).then_some(DEPENDENCY_CACHE_BYTES)
}

/// Where this worker's jobs keep their states on local disk: a directory beside its cache.
fn states_dir(config: &WorkerConfig) -> PathBuf {
    config.cache.with_extension("states")
}

/// What a seat of a job of `cost` sends the others of a pass on a worker with `memory` for it
/// (0: not said): the entries it wrote when that holds a bit per entry more
/// ([`JobCost::seat_bytes`]), else whole words.
fn seat_sends(cost: &JobCost, memory: u64) -> solver::Sends {
    match cost.seat_bytes {
        Some(seat) if memory == 0 || seat <= memory => solver::Sends::WrittenEntries,
        _ => solver::Sends::WrittenWords,
    }
}

/// The memory this worker has for its next job ([`xqtb_core::memory_for_jobs`]; 0: not said).
fn memory_for_job(config: &WorkerConfig) -> u64 {
    // What the worker holds between jobs, as its lease request told the coordinator (only a
    // worker with its process to itself knows it).
    let resident = if config.measure_job_memory {
        rss_bytes().unwrap_or(0)
    } else {
        0
    };
    xqtb_core::memory_for_jobs(config.memory_bytes, resident)
}

/// A job's dependencies when its dependency tables are read through a block cache: the slices
/// of its own table (a pawn slice's advances lead into them) are held whole, every other table
/// is probed in the worker's cache store.
struct CachedDependencies {
    own: TableId,
    parts: MemoryTables,
    tables: probe::Tablebase<Arc<SledStore>>,
}

impl Probe for CachedDependencies {
    fn probe(&self, rules: RuleSet, board: &xiangqi::Board) -> Result<Value, ProbeError> {
        let table = Signature::new(xqtb_core::Material::of_board(board));
        if TableId::new(rules, table) == self.own {
            self.parts.probe(rules, board)
        } else {
            self.tables.probe(rules, board)
        }
    }

    fn has_table(&self, id: &TableId) -> bool {
        if *id == self.own {
            self.parts.has_table(id)
        } else {
            self.tables.has_table(id)
        }
    }

    fn has_slots(&self, id: &TableId, slots: SlotRange) -> bool {
        if *id == self.own {
            self.parts.has_slots(id, slots)
        } else {
            self.tables.has_table(id)
        }
    }

    fn table(&self, id: &TableId) -> Option<&Table> {
        self.parts.table(id)
    }
}

/// Seconds to one decimal, as logged.
fn tenths(secs: f64) -> f64 {
    (secs * 10.0).round() / 10.0
}

/// What one job used, from its lease to its upload, beside the plan's estimate for it.
struct JobUsage {
    started: std::time::Instant,
    cpu_at_start: Option<f64>,
    rss_at_start: Option<u64>,
    measure_peak: bool,
}

impl JobUsage {
    fn start(measure_peak: bool) -> JobUsage {
        JobUsage {
            started: std::time::Instant::now(),
            cpu_at_start: cpu_seconds(),
            rss_at_start: rss_bytes(),
            measure_peak: measure_peak && reset_peak_rss(),
        }
    }

    /// Logs the job's wall and CPU seconds and peak memory next to their estimates, and sets the
    /// gauges that operators compare with `xqtb plan`.
    /// `whole`: the job decoded its dependency tables whole (else it read them through a cache);
    /// `on_disk`: it kept its states on local disk.
    fn report(&self, worker_id: &str, key: &JobKey, whole: bool, on_disk: bool) {
        let estimate = xqtb_core::JobCost::of(key);
        let beside = estimate.solve_bytes_beside(self.rss_at_start.unwrap_or(0));
        let estimated_memory = match (on_disk, estimate.states_on_disk_bytes) {
            (true, Some(d)) => beside - estimate.solve_bytes + d,
            _ if whole => beside - estimate.solve_bytes + estimate.in_memory_bytes(),
            _ => beside,
        };
        let wall = self.started.elapsed().as_secs_f64();
        let cpu = cpu_seconds()
            .zip(self.cpu_at_start)
            .map(|(now, then)| now - then);
        let peak = self.measure_peak.then(peak_rss_bytes).flatten();
        metrics::gauge!("xqtb_worker_job_seconds").set(wall);
        if let Some(cpu) = cpu {
            metrics::gauge!("xqtb_worker_job_cpu_seconds").set(cpu);
        }
        if let Some(peak) = peak {
            metrics::gauge!("xqtb_worker_job_peak_memory_bytes").set(peak as f64);
        }
        tracing::info!(
            worker = %worker_id,
            job = %key,
            wall_seconds = tenths(wall),
            cpu_seconds = cpu.map(tenths),
            estimated_cpu_seconds = tenths(estimate.cpu_seconds),
            peak_memory_bytes = peak,
            // Beside what the worker held, as the coordinator matches them, for the way the
            // job read its dependencies.
            estimated_memory_bytes = estimated_memory,
            dependencies_whole = whole,
            states_on_disk = on_disk,
            memory_at_start_bytes = self.rss_at_start,
            "job done"
        );
    }
}

/// Streams the shard `bytes` of job `key` to the coordinator under `lease_id`.
async fn upload(
    client: &mut Jobs,
    lease_id: &str,
    key: &JobKey,
    bytes: &[u8],
    worker_id: &str,
) -> Result<JobOutcome, JobFailure> {
    let total = bytes.len() as u64;
    let chunks: Vec<UploadChunk> = bytes
        .chunks(UPLOAD_CHUNK)
        .enumerate()
        .map(|(i, c)| UploadChunk {
            lease_id: if i == 0 {
                lease_id.into()
            } else {
                String::new()
            },
            key: (i == 0).then(|| rpc::job_key(key)),
            total_bytes: total,
            data: c.to_vec(),
        })
        .collect();
    match client.upload(tokio_stream::iter(chunks)).await {
        Ok(r) => {
            metrics::counter!("xqtb_worker_tables_committed_total").increment(1);
            metrics::counter!("xqtb_worker_upload_bytes_total").increment(total);
            tracing::info!(worker = %worker_id, job = %key, "{}", r.into_inner().message);
            Ok(JobOutcome::Committed(*key))
        }
        Err(s)
            if matches!(
                s.code(),
                tonic::Code::FailedPrecondition | tonic::Code::InvalidArgument
            ) =>
        {
            tracing::warn!(worker = %worker_id, job = %key, "upload refused: {}", s.message());
            Ok(JobOutcome::Refused(*key))
        }
        Err(s) => Err(JobFailure::Transport(s.into())),
    }
}

/// Downloads the shard of table `id` from the coordinator, or of its committed part `part`.
async fn fetch(
    client: &mut Jobs,
    id: &TableId,
    part: Option<SlotRange>,
) -> Result<Vec<u8>, JobFailure> {
    let slots = part.unwrap_or(SlotRange { start: 0, end: 0 });
    let mut stream = client
        .fetch_table(FetchTableRequest {
            signature: id.signature.name(),
            rules: id.rules.name().into(),
            slot_start: slots.start,
            slot_end: slots.end,
        })
        .await?
        .into_inner();
    match rpc::receive_shard(&mut stream, id, |_, _| {}).await {
        Ok(bytes) => Ok(bytes),
        Err(ShardReceiveError::Transport(s)) => Err(s.into()),
        Err(e) => Err(job_err(e)),
    }
}

/// Describes the worker's metrics and creates its counters at zero.
fn register_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        "xqtb_worker_solve_entries_per_second",
        "Entries per second of the last solve"
    );
    describe_histogram!(
        "xqtb_worker_solve_seconds",
        Unit::Seconds,
        "Time to solve, verify and encode a table"
    );
    describe_gauge!(
        "xqtb_worker_job_seconds",
        Unit::Seconds,
        "Wall time of the last job, from its lease to its upload (compare with xqtb plan)"
    );
    describe_gauge!(
        "xqtb_worker_job_cpu_seconds",
        Unit::Seconds,
        "CPU time of this process during the last job (compare with xqtb plan)"
    );
    describe_gauge!(
        "xqtb_worker_job_peak_memory_bytes",
        Unit::Bytes,
        "Peak resident memory of this worker process during the last job (compare with the \
         job's memory estimate in xqtb plan)"
    );
    describe_counter!("xqtb_worker_entries_solved_total", "Index entries solved");
    describe_counter!(
        "xqtb_worker_tables_committed_total",
        "Tables the coordinator accepted"
    );
    describe_counter!(
        "xqtb_worker_upload_bytes_total",
        Unit::Bytes,
        "Bytes uploaded"
    );
    for name in [
        "xqtb_worker_entries_solved_total",
        "xqtb_worker_tables_committed_total",
        "xqtb_worker_upload_bytes_total",
    ] {
        metrics::counter!(name).increment(0);
    }
}
