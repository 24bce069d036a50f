//! The coordinator's application layer: everything the coordinator does, with typed results and
//! errors, and no transport types. The gRPC services (and any other front end) are thin shells
//! that authenticate, parse, call one method here and map the result.
//!
//! State lives in one sled database: the committed tables (the store), the job records (the
//! scheduler's persisted state) and nothing else; workers and caches are in memory and rebuilt
//! as workers call in.

use crate::scheduler::{Grant, JobRecord, JobState, LeaseError, Scheduler, SchedulerConfig};
use probe::{MainlineReport, ProbeReport, Tablebase};
use serde::Serialize;
use solver::sample::SamplePolicy;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use storage_format::codec::{self, EncodedTable};
use storage_format::shard;
use storage_format::store::{RecordTree, SledStore, StoreError, TableStore};
use thiserror::Error;
use xiangqi::Color;
use xqtb_core::{JobKey, ProbeError, RuleSet, SlotRange, TableCounts, TableId, TableIndex};

/// Largest upload accepted for any table: an upload is held in memory until it is committed.
pub const MAX_UPLOAD_BYTES: u64 = 4 << 30;

/// Bytes a shard may take per entry (slot and side to move): three for the value uncompressed
/// (two in two-byte layouts; an indexed block of `n` values lists up to `n` two-byte codes
/// before its `n` one-byte indices; zstd stores a block that does not compress as it is, plus a
/// few bytes of framing), and two more for each block's framing (its zstd frame header and its
/// line in the block table), which covers every block of 32 values or more (the codec writes
/// 16,384).
const SHARD_BYTES_PER_ENTRY: u64 = 5;

/// Bytes a shard may take beside its blocks: preamble, header, checksums and a compression
/// dictionary.
const SHARD_FIXED_BYTES: u64 = 1 << 20;

/// The longest upload accepted for a table of `index_size` slots per side: more than its shard
/// file can take with any value layout and any block size of 32 values or more, and at most
/// [`MAX_UPLOAD_BYTES`]. An upload that announces more is refused before a byte of it is held.
pub fn max_shard_bytes(index_size: u64) -> u64 {
    index_size
        .saturating_mul(2 * SHARD_BYTES_PER_ENTRY)
        .saturating_add(SHARD_FIXED_BYTES)
        .min(MAX_UPLOAD_BYTES)
}

/// Most positions one probe batch may hold (gRPC `ProbeBatch`, HTTP `POST
/// /api/v1/probe-batch`): a full batch is answered in well under a second, and its answer
/// (about 2 KB per position) stays far below the 16 MiB message limit.
pub const MAX_PROBE_BATCH: usize = 1000;

/// Refuses a probe batch of `n` positions if it holds more than [`MAX_PROBE_BATCH`].
pub fn check_batch_len(n: usize) -> Result<(), AppError> {
    if n > MAX_PROBE_BATCH {
        return Err(AppError::BadRequest(format!(
            "a probe batch holds at most {MAX_PROBE_BATCH} positions; this one has {n} (split it)"
        )));
    }
    Ok(())
}

/// What keeps one client from holding the server, and how much of every upload is checked
/// again before it is committed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Longest time a call may take until its answer starts (then DEADLINE_EXCEEDED). An
    /// upload is answered only after its last chunk, so uploads are bounded by
    /// `stream_idle_timeout` instead.
    pub request_timeout: Duration,
    /// Longest wait for the next chunk of an upload (then the job is handed back), and for a
    /// download's reader to take the next chunk (then the download ends).
    pub stream_idle_timeout: Duration,
    /// Size of the chunks a shard download is streamed in (well under tonic's 4 MiB message
    /// limit). With the reader's HTTP/2 window it bounds what a stalled download holds.
    pub download_chunk_bytes: usize,
    /// Calls one connection may have in progress at once; more wait for a free place.
    pub calls_per_connection: usize,
    /// Interval of HTTP/2 keepalive pings to each client; a connection whose client does not
    /// answer one within [`Limits::keepalive_timeout`] is closed, with its calls.
    pub keepalive_interval: Duration,
    /// How long to wait for the answer to a keepalive ping.
    pub keepalive_timeout: Duration,
    /// How much of every uploaded table is checked one ply deep before it is committed. Each
    /// upload's sample is drawn from a seed made of its lease id, so a retried job is checked on
    /// other positions, and the seed in a refusal's message reproduces the sample.
    pub sample: SamplePolicy,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request_timeout: Duration::from_secs(30),
            stream_idle_timeout: Duration::from_secs(30),
            download_chunk_bytes: 512 * 1024,
            calls_per_connection: 256,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(20),
            sample: SamplePolicy::DEFAULT,
        }
    }
}

/// An upload read a block at a time by the sample check.
struct UploadBlocks<'a> {
    table: &'a EncodedTable,
    index: TableIndex,
    decoder: codec::BlockDecoder,
}

impl solver::sample::BlockSource for UploadBlocks<'_> {
    fn index(&self) -> &TableIndex {
        &self.index
    }
    fn rules(&self) -> RuleSet {
        self.table.header.rules
    }
    fn slots(&self) -> SlotRange {
        self.table.header.slots
    }
    fn block_slots(&self) -> u64 {
        self.table.header.block_values as u64
    }
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
        let block = u32::try_from(block).map_err(|_| format!("no block {block}"))?;
        codec::decode_block(self.table, &self.decoder, side, block).map_err(|e| e.to_string())
    }
}

/// A committed part of a table (pawn slices) read from the store a block at a time, for the
/// sample check of a slice whose pawn advances lead into it.
struct StoredPart<'a> {
    store: &'a SledStore,
    header: codec::TableHeader,
    index: TableIndex,
    decoder: codec::BlockDecoder,
}

impl solver::sample::BlockSource for StoredPart<'_> {
    fn index(&self) -> &TableIndex {
        &self.index
    }
    fn rules(&self) -> RuleSet {
        self.header.rules
    }
    fn slots(&self) -> SlotRange {
        self.header.slots
    }
    fn block_slots(&self) -> u64 {
        self.header.block_values as u64
    }
    fn block(&self, side: Color, block: u64) -> Result<Vec<u16>, String> {
        let h = &self.header;
        let block = u32::try_from(block).map_err(|_| format!("no block {block}"))?;
        let stored = self
            .store
            .part_block(&h.id(), h.slots.start, side, block)
            .map_err(|e| e.to_string())?;
        codec::decode_stored_block(h, &self.decoder, side, block, &stored)
            .map_err(|e| e.to_string())
    }
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Who may call what.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The cluster token; `None` leaves every call open.
    pub token: Option<String>,
    /// Also require the token for probes, listings and downloads.
    pub token_for_reads: bool,
}

impl Access {
    /// Checks the bearer token a caller presented (`None`: no `authorization` header) for a call
    /// that writes (worker calls, submit) or only reads.
    pub fn check(&self, presented: Option<&str>, write: bool) -> Result<(), AppError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        if !write && !self.token_for_reads {
            return Ok(());
        }
        match presented {
            None => Err(AppError::Unauthenticated(
                "missing authorization: Bearer token",
            )),
            Some(v)
                if v.strip_prefix("Bearer ")
                    .is_some_and(|t| constant_time_eq(t, token)) =>
            {
                Ok(())
            }
            Some(_) => Err(AppError::Unauthenticated("wrong token")),
        }
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Why a request was refused or failed.
#[derive(Debug, Error)]
pub enum AppError {
    /// No token, or the wrong one.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// The request is malformed (bad signature, rule set, job key, size).
    #[error("{0}")]
    BadRequest(String),
    /// The lease is not current, or is for another job.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// An upload failed its checks; the job was handed back to the queue.
    #[error("{0}")]
    UploadRefused(String),
    /// A probe failed (bad FEN, missing table, damaged storage).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The store failed or lacks a table.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Persisting the job records failed.
    #[error("cannot save job state: {0}")]
    Persist(String),
}

impl From<rpc::ConvertError> for AppError {
    fn from(e: rpc::ConvertError) -> AppError {
        AppError::BadRequest(e.to_string())
    }
}

/// A registered worker.
#[derive(Clone, Debug)]
struct WorkerInfo {
    name: String,
    threads: u32,
    /// Memory it can give one job, `None` when it did not say.
    memory_bytes: Option<u64>,
    /// What it held between jobs at its last lease request, `None` when it did not say.
    resident_bytes: Option<u64>,
    last_seen: Instant,
    lease: Option<String>,
    progress: f64,
    phase: String,
    /// Why it gets no more jobs: an upload of it failed the sample check.
    quarantined: Option<String>,
}

/// What a newly registered worker is told.
#[derive(Clone, Debug)]
pub struct Registration {
    /// Its id for later calls.
    pub worker_id: String,
    /// How often to heartbeat while holding a lease.
    pub heartbeat_interval_ms: u32,
}

/// The answer to a lease request.
#[derive(Clone, Debug)]
pub struct LeaseOutcome {
    /// The job granted, if one is ready.
    pub grant: Option<Grant>,
    /// When to ask again if nothing was granted.
    pub retry_after_ms: u32,
    /// Every planned job is finished or failed: the worker may stop.
    pub all_done: bool,
}

/// A committed table's shard file.
#[derive(Clone, Debug)]
pub struct ShardFile {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its CRC-32 ([`shard::file_checksum`]).
    pub checksum: u32,
}

/// A finished table, as listings show it.
#[derive(Clone, Debug, Serialize)]
pub struct ShardSummary {
    /// The table.
    #[serde(serialize_with = "ser_table")]
    pub table: TableId,
    /// Slots per side to move.
    pub index_size: u64,
    /// Counts per side to move.
    #[serde(skip)]
    pub counts: TableCounts,
    /// Length of the shard file in bytes.
    pub shard_bytes: u64,
    /// CRC-32 of the shard file (0 when it could not be read).
    pub file_checksum: u32,
}

fn ser_table<S: serde::Serializer>(t: &TableId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.signature.name())
}

/// One job in a status report.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The job.
    pub key: JobKey,
    /// Where it stands.
    pub state: JobState,
    /// Leases granted so far.
    pub attempts: u32,
    /// The worker holding it, when leased.
    pub worker: Option<String>,
    /// Progress reported by the last heartbeat (0..1).
    pub progress: f64,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// Estimated peak memory to solve it ([`xqtb_core::JobCost::solve_bytes`]).
    pub memory_bytes: u64,
    /// Why no registered worker can take it (each has too little memory), if so.
    pub unholdable: Option<String>,
}

/// One table in a status report: its jobs (one, or one per pawn slice when it is solved in
/// slices) by state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableReport {
    /// The table.
    pub table: TableId,
    /// Its jobs.
    pub jobs: u32,
    /// Its jobs waiting for a dependency.
    pub waiting: u32,
    /// Its jobs ready to lease.
    pub ready: u32,
    /// Its jobs leased.
    pub leased: u32,
    /// Its jobs committed.
    pub finished: u32,
    /// Its jobs failed for good.
    pub failed: u32,
    /// Entries of the table (slots times both sides to move, padding between slices included).
    pub entries_total: u64,
    /// Entries of its committed jobs.
    pub entries_done: u64,
}

impl TableReport {
    fn new(table: TableId) -> TableReport {
        TableReport {
            table,
            jobs: 0,
            waiting: 0,
            ready: 0,
            leased: 0,
            finished: 0,
            failed: 0,
            entries_total: 0,
            entries_done: 0,
        }
    }

    fn add(&mut self, state: JobState, entries: u64) {
        self.jobs += 1;
        self.entries_total += entries;
        match state {
            JobState::Waiting => self.waiting += 1,
            JobState::Ready => self.ready += 1,
            JobState::Leased => self.leased += 1,
            JobState::Finished => {
                self.finished += 1;
                self.entries_done += entries;
            }
            JobState::Failed => self.failed += 1,
        }
    }

    /// Where the table stands: `finished` (every job committed; the table is stored whole),
    /// `failed` (a job failed for good), `solving` (some jobs leased or committed), `ready` or
    /// `waiting`.
    pub fn state(&self) -> &'static str {
        if self.finished == self.jobs {
            "finished"
        } else if self.failed > 0 {
            "failed"
        } else if self.leased + self.finished > 0 {
            "solving"
        } else if self.ready > 0 {
            "ready"
        } else {
            "waiting"
        }
    }

    /// Every state [`TableReport::state`] names, for documentation checks.
    pub const STATES: [&'static str; 5] = ["waiting", "ready", "solving", "finished", "failed"];
}

/// One worker in a status report.
#[derive(Clone, Debug)]
pub struct WorkerReport {
    /// Its id.
    pub worker_id: String,
    /// The name it registered with.
    pub name: String,
    /// Solver threads.
    pub threads: u32,
    /// Memory it can give one job, `None` when it did not say.
    pub memory_bytes: Option<u64>,
    /// What it held between jobs at its last lease request, `None` when it did not say.
    pub resident_bytes: Option<u64>,
    /// The job it holds.
    pub current_job: Option<JobKey>,
    /// Progress of that job (0..1).
    pub progress: f64,
    /// What it is doing (`idle`, `starting`, `quarantined`, `lost` when it missed four
    /// heartbeats, or the phase it reported).
    pub phase: String,
    /// Milliseconds since it last called in.
    pub last_seen_ms_ago: u64,
    /// Why it gets no more jobs (an upload of it failed the sample check), if so.
    pub quarantined: Option<String>,
}

/// Jobs, workers, rate and time left.
#[derive(Clone, Debug, Default)]
pub struct StatusReport {
    /// Jobs in plan order.
    pub jobs: Vec<JobReport>,
    /// Tables in plan order, each with its jobs counted by state.
    pub tables: Vec<TableReport>,
    /// Registered workers, by id.
    pub workers: Vec<WorkerReport>,
    /// Jobs per state: waiting, ready, leased, finished, failed.
    pub waiting: u32,
    /// Jobs ready to lease.
    pub ready: u32,
    /// Jobs leased.
    pub leased: u32,
    /// Jobs finished.
    pub finished: u32,
    /// Jobs failed for good.
    pub failed: u32,
    /// Index entries (slots times both sides) finished per second over this run.
    pub entries_per_second: f64,
    /// Estimated seconds left, `None` when unknown.
    pub eta_seconds: Option<f64>,
    /// Entries of finished jobs.
    pub entries_done: u64,
    /// Entries of every planned job.
    pub entries_total: u64,
}

/// The coordinator's state and operations.
pub struct App {
    store: Arc<SledStore>,
    scheduler: Mutex<Scheduler>,
    jobs_log: RecordTree,
    workers: Mutex<HashMap<String, WorkerInfo>>,
    next_worker: Mutex<u64>,
    access: Access,
    default_rules: RuleSet,
    heartbeat_ms: u32,
    started: Instant,
    entries_at_start: u64,
    tablebase: Tablebase<Arc<SledStore>>,
    /// CRC-32 of each committed table's shard file (tables never change once committed).
    checksums: Mutex<HashMap<TableId, u32>>,
    limits: Limits,
    /// When freed memory was last returned to the operating system.
    last_trim: Mutex<Instant>,
}

/// Why an upload is refused after it arrived whole.
struct Refusal {
    reason: String,
    /// The shard is well formed but its values are wrong: the worker is faulty.
    wrong_values: bool,
}

impl Refusal {
    fn malformed(reason: impl ToString) -> Refusal {
        Refusal {
            reason: reason.to_string(),
            wrong_values: false,
        }
    }
}

/// FNV-1a of `s`: a fixed hash, so that a lease id means the same sample seed everywhere.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Describes the metrics of the commit-time checks (the server describes the others).
fn describe_check_metrics() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(
        "xqtb_sample_check_failures_total",
        "Uploads whose values failed the sample check, by worker (the worker is quarantined)"
    );
    describe_histogram!(
        "xqtb_sample_check_seconds",
        Unit::Seconds,
        "Time to decode an upload and check its sample"
    );
}

impl App {
    /// Opens the coordinator's state on `store`, resuming the persisted jobs (records of the
    /// first version are migrated to job keys). `default_rules` is the rule set of requests that
    /// name none.
    pub fn open(
        store: Arc<SledStore>,
        access: Access,
        config: SchedulerConfig,
        default_rules: RuleSet,
    ) -> Result<App, AppError> {
        let jobs_log = store.records("jobs")?;
        let mut records = Vec::new();
        let mut migrated = Vec::new();
        for (name, bytes) in jobs_log.all()? {
            match JobRecord::from_json(&bytes) {
                Ok((r, old)) => {
                    if old {
                        migrated.push((name, r.clone()));
                    }
                    records.push(r);
                }
                Err(e) => tracing::warn!(record = %name, "ignoring an unreadable job record: {e}"),
            }
        }
        for (name, r) in &migrated {
            persist_record(&jobs_log, r)?;
            jobs_log.remove(name)?;
        }
        if !migrated.is_empty() {
            tracing::info!(
                records = migrated.len(),
                "migrated job records of the first version to job keys"
            );
        }
        let prefix = format!("{:x}", now_ms());
        let mut scheduler = Scheduler::new(config, records, prefix);
        // Tables committed but not recorded (a crash between the two) count as finished.
        let mut changed = Vec::new();
        let committed: Vec<TableId> = scheduler
            .jobs()
            .filter(|j| {
                j.state != JobState::Finished && store.header(&j.key.table).ok().flatten().is_some()
            })
            .map(|j| j.key.table)
            .collect();
        for table in committed {
            changed.extend(scheduler.mark_finished(&table, now_ms()));
        }
        let entries_at_start = scheduler
            .jobs()
            .filter(|j| j.state == JobState::Finished)
            .map(|j| j.key.entries())
            .sum();
        let app = App {
            tablebase: Tablebase::new(Arc::clone(&store)),
            store,
            scheduler: Mutex::new(scheduler),
            jobs_log,
            workers: Mutex::new(HashMap::new()),
            next_worker: Mutex::new(1),
            access,
            default_rules,
            heartbeat_ms: (config.lease_ttl_ms / 4).clamp(100, 10_000) as u32,
            started: Instant::now(),
            last_trim: Mutex::new(Instant::now()),
            entries_at_start,
            checksums: Mutex::new(HashMap::new()),
            limits: Limits::default(),
        };
        app.persist(&changed)?;
        describe_check_metrics();
        Ok(app)
    }

    /// Sets the limits (the defaults until called).
    pub fn with_limits(mut self, limits: Limits) -> App {
        self.limits = limits;
        self
    }

    /// What keeps one client from holding the server.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Who may call what.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The rule set of requests that name none.
    pub fn default_rules(&self) -> RuleSet {
        self.default_rules
    }

    /// The store of committed tables.
    pub fn store(&self) -> &Arc<SledStore> {
        &self.store
    }

    fn persist(&self, records: &[JobRecord]) -> Result<(), AppError> {
        for r in records {
            persist_record(&self.jobs_log, r)?;
        }
        Ok(())
    }

    /// Runs `f` on the scheduler and persists the records it changed before the lock is
    /// released, so that records reach the disk in the order they changed.
    fn change<R>(
        &self,
        f: impl FnOnce(&mut Scheduler) -> Result<(R, Vec<JobRecord>), AppError>,
    ) -> Result<R, AppError> {
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let (r, changed) = f(&mut s)?;
        self.persist(&changed)?;
        Ok(r)
    }

    /// Plans `targets` and their closure; returns the newly planned jobs.
    pub fn submit(&self, targets: &[TableId]) -> Result<Vec<JobKey>, AppError> {
        let new = self.change(|s| {
            let (changed, new) = s.plan(targets, |t| self.store.header(t).ok().flatten().is_some());
            Ok((new, changed))
        })?;
        self.update_gauges();
        Ok(new)
    }

    /// Whether every planned job is finished or failed.
    pub fn all_done(&self) -> bool {
        self.scheduler.lock().expect("scheduler lock").all_done()
    }

    /// Registers a worker with its solver threads and the memory it can give one job (`None`:
    /// not said, so it is trusted with any job).
    pub fn register(
        &self,
        name: &str,
        threads: u32,
        memory_bytes: Option<u64>,
        version: &str,
    ) -> Registration {
        let id = {
            let mut n = self.next_worker.lock().expect("lock");
            let id = format!("w{}-{}", *n, name);
            *n += 1;
            id
        };
        tracing::info!(worker = %id, threads, memory_bytes, version, "worker registered");
        let mut workers = self.workers.lock().expect("lock");
        // A restarted worker registers anew: forget the entries of those long silent, so that
        // neither `status` nor the map grows with every restart.
        workers.retain(|_, w| w.last_seen.elapsed() < FORGET_SILENT_WORKERS);
        workers.insert(
            id.clone(),
            WorkerInfo {
                name: name.into(),
                threads,
                memory_bytes,
                resident_bytes: None,
                last_seen: Instant::now(),
                lease: None,
                progress: 0.0,
                phase: "idle".into(),
                quarantined: None,
            },
        );
        Registration {
            worker_id: id,
            heartbeat_interval_ms: self.heartbeat_ms,
        }
    }

    /// Leases the next ready job to `worker`, if any: one its memory holds, less what it holds
    /// between jobs beyond a fresh worker's (`resident_bytes`, 0 if not said; see
    /// [`xqtb_core::memory_for_jobs`]). A quarantined worker gets none (until it registers
    /// again, as a restarted worker does).
    pub fn lease(&self, worker: &str, resident_bytes: u64) -> Result<LeaseOutcome, AppError> {
        if self.is_quarantined(worker) {
            self.touch_worker(worker, |_| {});
            return Ok(LeaseOutcome {
                grant: None,
                retry_after_ms: 5000,
                all_done: self.all_done(),
            });
        }
        let memory = self
            .workers
            .lock()
            .expect("workers lock")
            .get_mut(worker)
            .and_then(|w| {
                w.resident_bytes = (resident_bytes > 0).then_some(resident_bytes);
                w.memory_bytes
            })
            .map(|m| xqtb_core::memory_for_jobs(m, resident_bytes));
        let (grant, all_done) = self.change(|s| {
            let (grant, changed) = s.lease(worker, memory, now_ms());
            Ok(((grant, s.all_done()), changed))
        })?;
        if let Some(g) = &grant {
            self.update_gauges();
            metrics::counter!("xqtb_leases_granted_total").increment(1);
            if g.attempt > 1 {
                metrics::counter!("xqtb_job_retries_total").increment(1);
            }
            tracing::info!(worker = %worker, job = %g.key, lease = %g.lease.id, attempt = g.attempt, "job leased");
            self.touch_worker(worker, |w| {
                w.lease = Some(g.lease.id.clone());
                w.progress = 0.0;
                w.phase = "starting".into();
            });
        }
        Ok(LeaseOutcome {
            grant,
            retry_after_ms: 500,
            all_done,
        })
    }

    /// Renews `lease_id` and records the worker's progress; returns the new expiry. An error
    /// means the worker must stop the job.
    pub fn heartbeat(
        &self,
        worker: &str,
        lease_id: &str,
        progress: f64,
        phase: &str,
    ) -> Result<u64, AppError> {
        self.touch_worker(worker, |w| {
            w.progress = progress;
            w.phase = phase.into();
        });
        // Persisting the renewed expiry lets a restarted coordinator honour the lease.
        let result = self.change(|s| match s.heartbeat(lease_id, progress, now_ms()) {
            Ok((expires, record)) => Ok((Ok(expires), vec![record])),
            Err(e) => Ok((Err(e), Vec::new())),
        })?;
        match result {
            Ok(expires) => Ok(expires),
            Err(e) => {
                tracing::warn!(worker = %worker, lease = %lease_id, "heartbeat refused: {e}");
                self.release_worker(lease_id);
                Err(e.into())
            }
        }
    }

    /// Checks the first chunk of an upload before anything more of it is received: the lease
    /// must be current and for `key`, and the `announced` length must fit a shard of the table
    /// ([`max_shard_bytes`]); an upload too long for its table is refused and its job handed
    /// back. Returns the longest upload accepted.
    pub fn begin_upload(
        &self,
        lease_id: &str,
        key: &JobKey,
        announced: u64,
    ) -> Result<u64, AppError> {
        let slots = TableIndex::size_of(&key.table.signature);
        let bound = max_shard_bytes(slots);
        let mut s = self.scheduler.lock().expect("scheduler lock");
        s.check_upload(lease_id, key, now_ms())?;
        if announced > bound {
            let reason = format!(
                "it announces {announced} bytes, but a shard of {} ({slots} slots per side) has \
                 at most {bound} bytes",
                key.table
            );
            return Err(self.refuse(&mut s, lease_id, key, &reason));
        }
        Ok(bound)
    }

    /// Hands back the job of an upload that did not arrive whole (`why`: it stalled, broke off
    /// or ran past its announced length). A lease that is no longer current is left alone.
    pub fn abandon_upload(&self, lease_id: &str, key: &JobKey, why: &str) -> Result<(), AppError> {
        let mut s = self.scheduler.lock().expect("scheduler lock");
        if s.check_upload(lease_id, key, now_ms()).is_ok() {
            match self.refuse(&mut s, lease_id, key, why) {
                AppError::UploadRefused(_) => {}
                e => return Err(e),
            }
        }
        Ok(())
    }

    /// Refuses the upload under `lease_id` for `reason`: the job goes back to the queue (up to
    /// the retry limit) and the worker is marked idle. Returns the error to answer with.
    fn refuse(&self, s: &mut Scheduler, lease_id: &str, key: &JobKey, reason: &str) -> AppError {
        let worker = s.lease_holder(lease_id).unwrap_or("?").to_string();
        let msg = format!("upload of {key} by {worker} refused: {reason}");
        tracing::warn!(lease = lease_id, job = %key, worker = %worker, "{msg}");
        metrics::counter!("xqtb_uploads_total", "result" => "refused").increment(1);
        let failed = s.fail(lease_id, &msg).map_err(AppError::from);
        if let Err(e) = failed.and_then(|r| self.persist(&[r])) {
            return e;
        }
        self.release_worker(lease_id);
        AppError::UploadRefused(msg)
    }

    /// Checks an uploaded shard for job `key` under `lease_id` and commits it atomically: the
    /// lease must be current, the shard whole (every checksum, the header, the index scheme),
    /// and a sample of its values right one ply deep against the table itself and its stored
    /// dependencies ([`Limits::sample`]). A shard that fails hands the job back to the queue; a
    /// worker whose values are wrong is quarantined (it gets no more jobs) and counted in
    /// `xqtb_sample_check_failures_total`.
    ///
    /// The checks run without the scheduler lock (the sample takes seconds on large tables, and
    /// heartbeats, leases and status calls must not wait for it); the lease is checked again
    /// under the lock, which is then held until the job is marked finished, so the lease cannot
    /// expire between that check and the commit.
    pub fn commit_upload(
        &self,
        lease_id: &str,
        key: &JobKey,
        bytes: &[u8],
    ) -> Result<String, AppError> {
        // A stale upload is refused before the work of checking it.
        let worker = {
            let mut s = self.scheduler.lock().expect("scheduler lock");
            s.check_upload(lease_id, key, now_ms())?;
            s.lease_holder(lease_id).unwrap_or("?").to_string()
        };
        let checked = self.check_shard(key, bytes, lease_id);
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let now = now_ms();
        s.check_upload(lease_id, key, now)?;
        let table = match checked {
            Ok(t) => t,
            Err(refusal) => {
                if refusal.wrong_values {
                    self.quarantine(&worker, key, &refusal.reason);
                }
                return Err(self.refuse(&mut s, lease_id, key, &refusal.reason));
            }
        };
        if key.is_whole_table() {
            self.store.put_table(&table)?;
        } else if self.store.put_part(&table)? {
            tracing::info!(table = %key.table, "every slice committed: the table is stored whole");
        }
        let changed = s.finish(lease_id, now)?;
        self.persist(&changed)?;
        drop(s);
        self.release_worker(lease_id);
        self.update_gauges();
        // The upload's blocks, and the pages the store let go of after writing them, are free
        // now: hand them back rather than keep them in the allocator's arenas.
        drop(table);
        release_freed_memory();
        metrics::counter!("xqtb_uploads_total", "result" => "accepted").increment(1);
        metrics::counter!("xqtb_upload_bytes_total").increment(bytes.len() as u64);
        tracing::info!(lease = lease_id, job = %key, bytes = bytes.len(), "table committed");
        Ok(format!("{key} committed ({} bytes)", bytes.len()))
    }

    /// The checks of [`App::commit_upload`] on the bytes of an upload (no lock held).
    fn check_shard(
        &self,
        key: &JobKey,
        bytes: &[u8],
        lease_id: &str,
    ) -> Result<EncodedTable, Refusal> {
        let t = shard::read_shard(bytes).map_err(Refusal::malformed)?;
        if t.header.id() != key.table || t.header.slots != key.slots {
            return Err(Refusal::malformed(format!(
                "the shard holds {} slots {}, not {key}",
                t.header.id(),
                t.header.slots,
            )));
        }
        // Every block decompressed, the values' checksums and the header's counts: one pass, a
        // few blocks at a time, whatever the size of the table.
        let started = Instant::now();
        codec::check_table(&t).map_err(Refusal::malformed)?;
        let decode_secs = started.elapsed().as_secs_f64();
        let policy = self.limits.sample;
        if policy.is_off() {
            return Ok(t);
        }
        // A missing dependency is the store's fault, not the worker's: refused, the job handed
        // back, but nobody quarantined.
        for dep in key.table.dependencies() {
            if !matches!(self.store.header(&dep), Ok(Some(_))) {
                return Err(Refusal::malformed(format!(
                    "cannot check it: its dependency {dep} is not in the store"
                )));
            }
        }
        let checked = self.sample_check(key, &t, lease_id, started, decode_secs);
        // The check's scratch (the codes each round needs) was freed by many threads; glibc
        // keeps such memory in its arenas (when the check decoded whole tables, a coordinator
        // that had committed KRNvKR held 85 MB more from then on; the soak test measures it).
        release_freed_memory();
        checked.map(|()| t)
    }

    /// The sample check of an upload's table `t` (see [`Limits::sample`]), reading it a block
    /// at a time; `t` has passed [`codec::check_table`].
    fn sample_check(
        &self,
        key: &JobKey,
        t: &EncodedTable,
        lease_id: &str,
        started: Instant,
        decode_secs: f64,
    ) -> Result<(), Refusal> {
        let policy = self.limits.sample;
        let blocks = UploadBlocks {
            table: t,
            index: t.header.index().map_err(Refusal::malformed)?,
            decoder: codec::BlockDecoder::new(t.dictionary.as_deref()),
        };
        // Dependencies through a block cache of their own, so that the check neither evicts
        // the blocks users probe nor loads whole dependency tables into memory; a pawn slice's
        // also the committed slices its pawn advances lead into, read a block at a time like
        // the upload (their worker held them decoded; the coordinator holds what a round of the
        // sample needs).
        let tables = Tablebase::new(Arc::clone(&self.store));
        let stored = self
            .store
            .part_headers(&key.table)
            .map_err(Refusal::malformed)?;
        let mut parts = Vec::new();
        for slots in key.slice_dependencies() {
            let header = stored
                .iter()
                .find(|h| h.slots == slots)
                .cloned()
                .ok_or_else(|| {
                    Refusal::malformed(format!(
                        "cannot check it: the slices {slots} it reads are not in the store"
                    ))
                })?;
            parts.push(StoredPart {
                store: &self.store,
                index: header.index().map_err(Refusal::malformed)?,
                header,
                decoder: codec::BlockDecoder::new(None),
            });
        }
        let slices: Vec<&dyn solver::sample::BlockSource> = parts
            .iter()
            .map(|p| p as &dyn solver::sample::BlockSource)
            .collect();
        let seed = fnv1a(lease_id);
        let legal = t.header.counts.legal();
        let report =
            solver::sample::check_sample_blocks(&blocks, &slices, legal, &tables, policy, seed)
                .map_err(|e| match e {
                    solver::sample::SampleError::Wrong(e) => Refusal {
                        reason: format!(
                            "the sample check ({}% of the positions, at least {}, seed {seed:#x}) \
                         found a wrong value: {e}",
                            policy.percent, policy.minimum
                        ),
                        wrong_values: true,
                    },
                    e @ solver::sample::SampleError::Block { .. } => Refusal::malformed(e),
                })?;
        let secs = started.elapsed().as_secs_f64();
        metrics::histogram!("xqtb_sample_check_seconds").record(secs);
        tracing::info!(
            job = %key,
            checked = report.checked,
            legal = report.legal,
            seed = format_args!("{seed:#x}"),
            decode_secs,
            check_secs = secs - decode_secs,
            "sample check passed"
        );
        Ok(())
    }

    /// Gives `worker` no more jobs: its upload of `key` failed the sample check for `reason`.
    fn quarantine(&self, worker: &str, key: &JobKey, reason: &str) {
        tracing::error!(
            worker = %worker,
            job = %key,
            "worker quarantined: its table failed the sample check, so its results cannot be \
             trusted (check its memory and build, then restart it): {reason}"
        );
        metrics::counter!("xqtb_sample_check_failures_total", "worker" => worker.to_string())
            .increment(1);
        if let Some(w) = self.workers.lock().expect("workers lock").get_mut(worker) {
            w.quarantined = Some(format!("its upload of {key} failed the sample check"));
        }
    }

    fn is_quarantined(&self, worker: &str) -> bool {
        self.workers
            .lock()
            .expect("workers lock")
            .get(worker)
            .is_some_and(|w| w.quarantined.is_some())
    }

    /// Records that the job of `lease_id` failed on `worker`; it goes back to the queue (up to
    /// the retry limit).
    pub fn report_failure(
        &self,
        worker: &str,
        lease_id: &str,
        message: &str,
    ) -> Result<(), AppError> {
        tracing::warn!(worker = %worker, lease = %lease_id, "job failed: {message}");
        self.change(|s| Ok(((), vec![s.fail(lease_id, message)?])))?;
        self.release_worker(lease_id);
        self.update_gauges();
        Ok(())
    }

    /// The shard file of a committed table.
    pub fn shard(&self, table: &TableId) -> Result<ShardFile, AppError> {
        let bytes = self.store.export_shard(table)?;
        let checksum = shard::file_checksum(&bytes);
        self.checksums
            .lock()
            .expect("lock")
            .insert(*table, checksum);
        Ok(ShardFile { bytes, checksum })
    }

    /// The part shard of the committed slices `slots` of a table still being solved slice by
    /// slice (what a worker's slice job reads).
    pub fn part_shard(&self, table: &TableId, slots: SlotRange) -> Result<ShardFile, AppError> {
        let part = self.store.load_part(table, slots.start)?;
        if part.header.slots != slots {
            return Err(AppError::from(StoreError::Missing {
                table: *table,
                store: format!("{} (no part of slots {slots})", self.store.describe()),
            }));
        }
        let bytes = shard::write_shard(&part);
        let checksum = shard::file_checksum(&bytes);
        Ok(ShardFile { bytes, checksum })
    }

    /// The shard-file checksum of a committed table, computed once.
    fn shard_checksum(&self, table: &TableId) -> Result<u32, AppError> {
        if let Some(c) = self.checksums.lock().expect("lock").get(table) {
            return Ok(*c);
        }
        Ok(self.shard(table)?.checksum)
    }

    /// Every committed table.
    pub fn list_shards(&self) -> Result<Vec<ShardSummary>, AppError> {
        let headers = self.store.list_tables()?;
        Ok(headers
            .iter()
            .map(|h| ShardSummary {
                table: h.id(),
                index_size: h.index_size,
                counts: h.counts,
                shard_bytes: shard::shard_len_of(h),
                file_checksum: self.shard_checksum(&h.id()).unwrap_or(0),
            })
            .collect())
    }

    /// Probes every FEN of a batch under `rules`; refused as a whole when it holds more than
    /// [`MAX_PROBE_BATCH`] positions, else one result per position.
    pub fn probe_batch(
        &self,
        rules: RuleSet,
        fens: &[String],
    ) -> Result<Vec<Result<ProbeReport, AppError>>, AppError> {
        check_batch_len(fens.len())?;
        Ok(fens.iter().map(|fen| self.probe(rules, fen)).collect())
    }

    /// Probes a FEN under `rules`.
    pub fn probe(&self, rules: RuleSet, fen: &str) -> Result<ProbeReport, AppError> {
        let started = Instant::now();
        let r = self.tablebase.probe_fen(rules, fen);
        metrics::counter!("xqtb_probes_total").increment(1);
        metrics::histogram!("xqtb_probe_seconds").record(started.elapsed().as_secs_f64());
        Ok(ProbeReport::from(&r?))
    }

    /// The main line from a FEN under `rules`.
    pub fn mainline(&self, rules: RuleSet, fen: &str) -> Result<MainlineReport, AppError> {
        Ok(MainlineReport::from(
            &self.tablebase.mainline_fen(rules, fen)?,
        ))
    }

    /// Returns expired leases to the queue and refreshes the gauges; the server calls it on a
    /// timer, so expiry does not depend on anyone asking for the status.
    pub fn tick(&self) -> Result<usize, AppError> {
        let expired = self.change(|s| {
            let expired = s.expire(now_ms());
            Ok((expired.clone(), expired))
        })?;
        if !expired.is_empty() {
            metrics::counter!("xqtb_lease_expiries_total").increment(expired.len() as u64);
            for r in &expired {
                if let Some(w) = r.last_error.as_deref() {
                    tracing::warn!(job = %r.key, "{w}");
                }
            }
        }
        self.update_gauges();
        // Many threads (200 soak clients' requests) allocate and free in glibc's per-thread
        // arenas, which keep what was freed: without this the soak test saw the coordinator's
        // memory creep up by about 0.8 MB a minute while its live heap stayed flat.
        let mut last = self.last_trim.lock().expect("trim lock");
        if last.elapsed() >= TRIM_INTERVAL {
            *last = Instant::now();
            // Pages probes read stay in sled's cache until it is swept (see the store).
            if let Err(e) = self.store.sweep_page_cache() {
                tracing::warn!(error = %e, "sweeping the store's page cache");
            }
            release_freed_memory();
        }
        Ok(expired.len())
    }

    /// Sets the gauges from the current state (after every change and on every tick).
    fn update_gauges(&self) {
        let status = self.status();
        for (state, n) in [
            ("waiting", status.waiting),
            ("ready", status.ready),
            ("leased", status.leased),
            ("finished", status.finished),
            ("failed", status.failed),
        ] {
            metrics::gauge!("xqtb_jobs", "state" => state).set(n as f64);
        }
        for state in TableReport::STATES {
            let n = status.tables.iter().filter(|t| t.state() == state).count();
            metrics::gauge!("xqtb_tables", "state" => state).set(n as f64);
        }
        let slices = |t: &&TableReport| t.jobs > 1;
        metrics::gauge!("xqtb_slice_jobs", "state" => "finished").set(
            status
                .tables
                .iter()
                .filter(slices)
                .map(|t| t.finished)
                .sum::<u32>() as f64,
        );
        metrics::gauge!("xqtb_slice_jobs", "state" => "open").set(
            status
                .tables
                .iter()
                .filter(slices)
                .map(|t| t.jobs - t.finished - t.failed)
                .sum::<u32>() as f64,
        );
        metrics::gauge!("xqtb_leases_active").set(status.leased as f64);
        let unholdable = status
            .jobs
            .iter()
            .filter(|j| j.unholdable.is_some())
            .count();
        metrics::gauge!("xqtb_jobs_unholdable").set(unholdable as f64);
        metrics::gauge!("xqtb_solve_entries_per_second").set(status.entries_per_second);
        metrics::gauge!("xqtb_workers").set(status.workers.len() as f64);
        let tb = &self.tablebase;
        let (lookups, loads) = (tb.block_lookups(), tb.blocks_loaded());
        metrics::counter!("xqtb_block_cache_hits_total").absolute(lookups.saturating_sub(loads));
        metrics::counter!("xqtb_block_cache_misses_total").absolute(loads);
        metrics::gauge!("xqtb_block_cache_bytes").set(tb.cached_bytes() as f64);
        metrics::gauge!("xqtb_tables_open").set(tb.tables_open() as f64);
        if lookups > 0 {
            metrics::gauge!("xqtb_block_cache_hit_ratio")
                .set(lookups.saturating_sub(loads) as f64 / lookups as f64);
        }
    }

    /// Jobs, workers, rate and time left. A pure read: leases expire in [`App::tick`].
    pub fn status(&self) -> StatusReport {
        let s = self.scheduler.lock().expect("scheduler lock");
        let workers = self.workers.lock().expect("workers lock");
        let mut r = StatusReport::default();
        let mut remaining = 0u64;
        let mut table_at: HashMap<TableId, usize> = HashMap::new();
        let holder = largest_worker(&workers);
        for job in s.jobs() {
            let entries = job.key.entries();
            let need = s.cost(&job.key).map_or(0, |c| c.solve_bytes);
            match job.state {
                JobState::Waiting => r.waiting += 1,
                JobState::Ready => r.ready += 1,
                JobState::Leased => r.leased += 1,
                JobState::Finished => r.finished += 1,
                JobState::Failed => r.failed += 1,
            }
            r.entries_total += entries;
            let t = *table_at.entry(job.key.table).or_insert_with(|| {
                r.tables.push(TableReport::new(job.key.table));
                r.tables.len() - 1
            });
            r.tables[t].add(job.state, entries);
            if job.state == JobState::Finished {
                r.entries_done += entries;
            } else if job.state != JobState::Failed {
                remaining += entries;
            }
            r.jobs.push(JobReport {
                key: job.key,
                state: job.state,
                attempts: job.attempts,
                worker: job.lease.as_ref().map(|l| l.worker.clone()),
                progress: job.progress,
                last_error: job.last_error.clone(),
                memory_bytes: need,
                unholdable: match job.state {
                    JobState::Finished | JobState::Failed => None,
                    _ => why_unholdable(need, &holder),
                },
            });
        }
        let secs = self.started.elapsed().as_secs_f64();
        let done_here = r.entries_done.saturating_sub(self.entries_at_start);
        if secs > 0.0 && done_here > 0 {
            r.entries_per_second = done_here as f64 / secs;
            r.eta_seconds = Some(remaining as f64 / r.entries_per_second);
        } else if remaining == 0 {
            r.eta_seconds = Some(0.0);
        }
        let mut ws: Vec<_> = workers.iter().collect();
        ws.sort_by(|a, b| a.0.cmp(b.0));
        for (id, w) in ws {
            r.workers.push(WorkerReport {
                worker_id: id.clone(),
                name: w.name.clone(),
                threads: w.threads,
                memory_bytes: w.memory_bytes,
                resident_bytes: w.resident_bytes,
                current_job: w.lease.as_deref().and_then(|l| s.leased_job(l)),
                progress: w.progress,
                phase: if w.quarantined.is_some() {
                    "quarantined".into()
                } else if w.last_seen.elapsed().as_millis() > 4 * self.heartbeat_ms as u128 {
                    // Four heartbeats missed: its lease (if any) is about to expire.
                    "lost".into()
                } else {
                    w.phase.clone()
                },
                last_seen_ms_ago: w.last_seen.elapsed().as_millis() as u64,
                quarantined: w.quarantined.clone(),
            });
        }
        r
    }

    /// Marks the worker holding `lease_id` idle (its job was committed or handed back).
    fn release_worker(&self, lease_id: &str) {
        for w in self.workers.lock().expect("workers lock").values_mut() {
            if w.lease.as_deref() == Some(lease_id) {
                w.lease = None;
                w.progress = 0.0;
                w.phase = "idle".into();
            }
        }
    }

    fn touch_worker(&self, id: &str, f: impl FnOnce(&mut WorkerInfo)) {
        if let Some(w) = self.workers.lock().expect("workers lock").get_mut(id) {
            w.last_seen = Instant::now();
            f(w);
        }
    }
}

fn persist_record(log: &RecordTree, r: &JobRecord) -> Result<(), AppError> {
    let bytes = serde_json::to_vec(r).map_err(|e| AppError::Persist(e.to_string()))?;
    log.put(&JobRecord::record_name(&r.key), &bytes)
        .map_err(|e| AppError::Persist(e.to_string()))
}

/// The registered worker that can hold the largest job (quarantined ones left out): `None`
/// when there is none, a `None` memory when one did not say (and is trusted with any job).
fn largest_worker(workers: &HashMap<String, WorkerInfo>) -> Option<(String, Option<u64>)> {
    workers
        .iter()
        .filter(|(_, w)| w.quarantined.is_none())
        .map(|(id, w)| (id.clone(), w.memory_bytes))
        .max_by_key(|(id, m)| (m.unwrap_or(u64::MAX), std::cmp::Reverse(id.clone())))
}

/// Why a job needing `need` bytes cannot be leased to any registered worker, if it cannot.
fn why_unholdable(need: u64, holder: &Option<(String, Option<u64>)>) -> Option<String> {
    // With no worker registered at all the worker list says so; nothing is singled out.
    match holder {
        None | Some((_, None)) => None,
        Some((id, Some(m))) if *m < need => Some(format!(
            "needs {} to solve; the largest registered worker, {id}, has {}",
            human_bytes(need),
            human_bytes(*m)
        )),
        Some(_) => None,
    }
}

/// Bytes in decimal units, as operators size machines: `950 B`, `12.3 kB`, `171 MB`, `4.1 GB`,
/// `2.3 TB`.
pub fn human_bytes(n: u64) -> String {
    let x = n as f64;
    let scaled = |v: f64, unit: &str| {
        if v >= 100.0 {
            format!("{v:.0} {unit}")
        } else {
            format!("{v:.1} {unit}")
        }
    };
    if x >= 1e12 {
        scaled(x / 1e12, "TB")
    } else if x >= 1e9 {
        scaled(x / 1e9, "GB")
    } else if x >= 1e6 {
        scaled(x / 1e6, "MB")
    } else if x >= 1e3 {
        scaled(x / 1e3, "kB")
    } else {
        format!("{n} B")
    }
}

/// How long a worker may stay silent before a new registration forgets it.
const FORGET_SILENT_WORKERS: std::time::Duration = std::time::Duration::from_secs(600);

/// How often the tick sweeps the store's page cache and returns freed memory to the operating
/// system.
const TRIM_INTERVAL: Duration = Duration::from_secs(30);

/// Returns the memory freed so far to the operating system, where the allocator can.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's free lists; it is safe from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_shards_fit_the_upload_bound_with_any_layout_and_block_size() {
        use storage_format::codec::{CodecParams, LayoutChoice, ValueLayout, encode_table_with};
        let sig: xqtb_core::Signature = "KRvKA".parse().unwrap();
        let tables = solver::solve_closure_in_memory(&[sig], RuleSet::Asian, |_, _| {}).unwrap();
        let table = tables.get(&TableId::new(RuleSet::Asian, sig)).unwrap();
        let size = table.index().size();
        let params = [
            CodecParams::default(),
            // The widest layout in the smallest blocks the bound allows for.
            CodecParams {
                block_values: 32,
                layout: LayoutChoice::Fixed(ValueLayout::Wide),
                ..CodecParams::default()
            },
            CodecParams {
                block_values: 32,
                layout: LayoutChoice::Fixed(ValueLayout::Indexed),
                ..CodecParams::default()
            },
            CodecParams {
                block_values: 1 << 20,
                dictionary: Some(16 << 10),
                ..CodecParams::default()
            },
        ];
        for p in &params {
            let len = shard::write_shard(&encode_table_with(table, p)).len() as u64;
            // Within the allowance per entry alone, without the fixed allowance for
            // dictionaries.
            assert!(
                len <= size * 2 * SHARD_BYTES_PER_ENTRY + 4096,
                "{len} bytes with {p:?}"
            );
            assert!(len < max_shard_bytes(size));
        }
        assert_eq!(max_shard_bytes(u64::MAX), MAX_UPLOAD_BYTES);
        // The worst case of indexed blocks (values need not be consistent for the codec, nor
        // illegal slots be marked): every value of every block different and scattered, so
        // that each block lists as many codes as it holds values, and hardly compresses.
        let mut worst = (**table).clone();
        for side in xiangqi::Color::ALL {
            for (i, c) in worst.codes_mut(side).iter_mut().enumerate() {
                *c = xqtb_core::Value::Win(2 * (i * 2_654_435_761 % 4096) as u16 + 1).encode();
            }
        }
        let p = CodecParams {
            block_values: 32,
            layout: LayoutChoice::Fixed(ValueLayout::Indexed),
            ..CodecParams::default()
        };
        let encoded = encode_table_with(&worst, &p);
        assert_eq!(encoded.header.layout, ValueLayout::Indexed);
        let len = shard::write_shard(&encoded).len() as u64;
        assert!(
            len <= size * 2 * SHARD_BYTES_PER_ENTRY + 4096,
            "{len} bytes"
        );
    }

    #[test]
    fn batches_longer_than_the_maximum_are_refused_naming_it() {
        assert!(check_batch_len(MAX_PROBE_BATCH).is_ok());
        let e = check_batch_len(MAX_PROBE_BATCH + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at most 1000 positions; this one has 1001"),
            "{e}"
        );
    }

    #[test]
    fn job_records_of_the_first_version_are_migrated_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        let log = store.records("jobs").unwrap();
        // As the first version wrote them: keyed by signature, no rule set, no slots.
        log.put(
            "KRvK",
            br#"{"signature":"KRvK","state":"Ready","attempts":0,"lease":null,"last_error":null}"#,
        )
        .unwrap();
        let app = App::open(
            Arc::clone(&store),
            Access::default(),
            SchedulerConfig::default(),
            RuleSet::CyclesAreDraws,
        )
        .unwrap();
        let status = app.status();
        assert_eq!(status.ready, 1);
        let krk = TableId::new(RuleSet::CyclesAreDraws, "KRvK".parse().unwrap());
        assert_eq!(status.jobs[0].key, JobKey::whole(krk));
        let names: Vec<String> = log.all().unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["cycles-are-draws/KRvK/0-3690"]);
        // Reopened, the migrated record loads as it is.
        drop(app);
        let app = App::open(
            store,
            Access::default(),
            SchedulerConfig::default(),
            RuleSet::CyclesAreDraws,
        )
        .unwrap();
        assert_eq!(app.status().ready, 1);
    }

    /// A coordinator over an empty store in a temporary directory (kept while it is held),
    /// asian by default.
    fn empty_app() -> (tempfile::TempDir, App) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        let app = App::open(
            store,
            Access::default(),
            SchedulerConfig::default(),
            RuleSet::Asian,
        )
        .unwrap();
        (dir, app)
    }

    #[test]
    fn what_a_worker_holds_between_jobs_is_not_counted_as_free_for_a_job() {
        let (_dir, app) = empty_app();
        let krk = TableId::new(RuleSet::Asian, "KRvK".parse().unwrap());
        app.submit(&[krk]).unwrap();
        let need = xqtb_core::JobCost::of(&JobKey::whole(krk)).solve_bytes;
        let w = app.register("w", 1, Some(need), "test").worker_id;
        // A worker holding a megabyte more than a fresh one no longer has room for the job.
        let grown = xqtb_core::BASE_BYTES + 1_000_000;
        assert!(app.lease(&w, grown).unwrap().grant.is_none());
        // Up to a fresh worker's base, what it holds is already counted in the estimate.
        let g = app.lease(&w, xqtb_core::BASE_BYTES).unwrap().grant;
        assert_eq!(g.unwrap().key, JobKey::whole(krk));
    }

    #[test]
    fn silent_workers_show_as_lost_and_are_forgotten() {
        let (_dir, app) = empty_app();
        let a = app.register("a", 1, None, "test").worker_id;
        assert_eq!(app.status().workers[0].phase, "idle");
        // Makes `id` look silent for `by` (on a machine up for less than that, the test cannot).
        let backdate = |id: &str, by: std::time::Duration| -> bool {
            let mut workers = app.workers.lock().unwrap();
            let w = workers.get_mut(id).unwrap();
            match w.last_seen.checked_sub(by) {
                Some(t) => {
                    w.last_seen = t;
                    true
                }
                None => false,
            }
        };
        let heartbeat = std::time::Duration::from_millis(app.heartbeat_ms as u64);
        if !backdate(&a, 5 * heartbeat) || !backdate(&a, FORGET_SILENT_WORKERS) {
            eprintln!("skipped: the machine has not been up long enough to backdate a worker");
            return;
        }
        assert_eq!(app.status().workers[0].phase, "lost");
        let b = app.register("b", 1, None, "test").worker_id;
        let listed: Vec<String> = app
            .status()
            .workers
            .iter()
            .map(|w| w.worker_id.clone())
            .collect();
        assert_eq!(listed, [b]);
    }
}
