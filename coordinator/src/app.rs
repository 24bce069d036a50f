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
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use storage_format::shard;
use storage_format::store::{RecordTree, SledStore, StoreError, TableStore};
use thiserror::Error;
use xqtb_core::{JobKey, ProbeError, RuleSet, TableCounts, TableId, TableIndex};

/// Largest shard accepted in one upload.
pub const MAX_UPLOAD_BYTES: u64 = 4 << 30;

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
    last_seen: Instant,
    lease: Option<String>,
    progress: f64,
    phase: String,
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
    /// The job it holds.
    pub current_job: Option<JobKey>,
    /// Progress of that job (0..1).
    pub progress: f64,
    /// What it is doing (`idle`, `starting` or the phase it reported).
    pub phase: String,
    /// Milliseconds since it last called in.
    pub last_seen_ms_ago: u64,
}

/// Jobs, workers, rate and time left.
#[derive(Clone, Debug, Default)]
pub struct StatusReport {
    /// Jobs in plan order.
    pub jobs: Vec<JobReport>,
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
            entries_at_start,
            checksums: Mutex::new(HashMap::new()),
        };
        app.persist(&changed)?;
        Ok(app)
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

    /// Registers a worker.
    pub fn register(&self, name: &str, threads: u32, version: &str) -> Registration {
        let id = {
            let mut n = self.next_worker.lock().expect("lock");
            let id = format!("w{}-{}", *n, name);
            *n += 1;
            id
        };
        tracing::info!(worker = %id, threads, version, "worker registered");
        self.workers.lock().expect("lock").insert(
            id.clone(),
            WorkerInfo {
                name: name.into(),
                threads,
                last_seen: Instant::now(),
                lease: None,
                progress: 0.0,
                phase: "idle".into(),
            },
        );
        Registration {
            worker_id: id,
            heartbeat_interval_ms: self.heartbeat_ms,
        }
    }

    /// Leases the next ready job to `worker`, if any.
    pub fn lease(&self, worker: &str) -> Result<LeaseOutcome, AppError> {
        let (grant, all_done) = self.change(|s| {
            let (grant, changed) = s.lease(worker, now_ms());
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

    /// Checks an uploaded shard for job `key` under `lease_id` and commits it atomically. The
    /// scheduler lock is held throughout, so the lease cannot expire between the check and the
    /// commit. A shard that fails its checks hands the job back to the queue.
    pub fn commit_upload(
        &self,
        lease_id: &str,
        key: &JobKey,
        bytes: &[u8],
    ) -> Result<String, AppError> {
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let now = now_ms();
        s.check_upload(lease_id, key, now)?;
        let checked = shard::read_shard(bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                if t.header.id() != key.table {
                    return Err(format!(
                        "the shard holds {}, not {}",
                        t.header.id(),
                        key.table
                    ));
                }
                t.header
                    .check_index(&TableIndex::new(key.table.signature))
                    .map_err(|e| e.to_string())?;
                Ok(t)
            });
        let table = match checked {
            Ok(t) => t,
            Err(msg) => {
                let msg = format!("upload of {key} refused: {msg}");
                tracing::warn!(lease = lease_id, job = %key, "{msg}");
                metrics::counter!("xqtb_uploads_total", "result" => "refused").increment(1);
                let r = s.fail(lease_id, &msg)?;
                self.persist(&[r])?;
                return Err(AppError::UploadRefused(msg));
            }
        };
        self.store.put_table(&table)?;
        let changed = s.finish(lease_id, now)?;
        self.persist(&changed)?;
        drop(s);
        self.release_worker(lease_id);
        self.update_gauges();
        metrics::counter!("xqtb_uploads_total", "result" => "accepted").increment(1);
        metrics::counter!("xqtb_upload_bytes_total").increment(bytes.len() as u64);
        tracing::info!(lease = lease_id, job = %key, bytes = bytes.len(), "table committed");
        Ok(format!("{key} committed ({} bytes)", bytes.len()))
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
        metrics::gauge!("xqtb_leases_active").set(status.leased as f64);
        metrics::gauge!("xqtb_solve_entries_per_second").set(status.entries_per_second);
        metrics::gauge!("xqtb_workers").set(status.workers.len() as f64);
        let tb = &self.tablebase;
        let (lookups, loads) = (tb.block_lookups(), tb.blocks_loaded());
        metrics::counter!("xqtb_block_cache_hits_total").absolute(lookups.saturating_sub(loads));
        metrics::counter!("xqtb_block_cache_misses_total").absolute(loads);
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
        for job in s.jobs() {
            let entries = job.key.entries();
            match job.state {
                JobState::Waiting => r.waiting += 1,
                JobState::Ready => r.ready += 1,
                JobState::Leased => r.leased += 1,
                JobState::Finished => r.finished += 1,
                JobState::Failed => r.failed += 1,
            }
            r.entries_total += entries;
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
                current_job: w.lease.as_deref().and_then(|l| s.leased_job(l)),
                progress: w.progress,
                phase: w.phase.clone(),
                last_seen_ms_ago: w.last_seen.elapsed().as_millis() as u64,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
