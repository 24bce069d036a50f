//! The gRPC shells: the worker-facing `Jobs` service and the user-facing `Tablebase` service.
//! Both are thin: the scheduler, the store and the probing library do the work.

use crate::scheduler::{JobRecord, JobState, LeaseError, Scheduler};
use proto::v1::jobs_server::Jobs;
use proto::v1::tablebase_server::Tablebase;
use proto::v1::*;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use storage_format::store::{RecordTree, SledStore, TableStore};
use storage_format::{Signature, shard};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// Size of the chunks shards are streamed in (well under tonic's 4 MiB message limit).
pub const CHUNK_BYTES: usize = 512 * 1024;
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
    fn check<T>(&self, req: &Request<T>, write: bool) -> Result<(), Status> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        if !write && !self.token_for_reads {
            return Ok(());
        }
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        match given {
            None => Err(Status::unauthenticated(
                "missing authorization: Bearer token",
            )),
            Some(v)
                if v.strip_prefix("Bearer ")
                    .is_some_and(|t| constant_time_eq(t, token)) =>
            {
                Ok(())
            }
            Some(_) => Err(Status::unauthenticated("wrong token")),
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

/// A registered worker, for status output.
#[derive(Clone, Debug)]
struct WorkerInfo {
    name: String,
    threads: u32,
    last_seen: Instant,
    lease: Option<String>,
    progress: f64,
    phase: String,
}

/// Shared state of the coordinator.
pub struct State {
    /// Finished tables.
    pub store: Arc<SledStore>,
    scheduler: Mutex<Scheduler>,
    jobs_log: RecordTree,
    workers: Mutex<HashMap<String, WorkerInfo>>,
    next_worker: Mutex<u64>,
    access: Access,
    rules: storage_format::RuleSet,
    heartbeat_ms: u32,
    started: Instant,
    entries_at_start: u64,
    probe: storage_format::probe::Tablebase<Arc<SledStore>>,
    /// CRC-32 of each committed table's shard file (tables never change once committed).
    checksums: Mutex<HashMap<Signature, u32>>,
}

impl State {
    /// Opens the coordinator's state on `store`, resuming the persisted jobs.
    pub fn new(
        store: Arc<SledStore>,
        access: Access,
        config: crate::SchedulerConfig,
        rules: storage_format::RuleSet,
    ) -> anyhow::Result<State> {
        let jobs_log = store.records("jobs")?;
        let records: Vec<JobRecord> = jobs_log
            .all()?
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_slice(&v).ok())
            .collect();
        let prefix = format!("{:x}", now_ms());
        let mut scheduler = Scheduler::new(config, records, prefix);
        // Tables committed but not recorded (a crash between the two) count as finished.
        let mut changed = Vec::new();
        let finished: Vec<Signature> = scheduler
            .jobs()
            .filter(|(s, j)| {
                j.state != JobState::Finished && store.header(s).ok().flatten().is_some()
            })
            .map(|(s, _)| *s)
            .collect();
        for sig in finished {
            changed.extend(scheduler.mark_finished(&sig, now_ms()));
        }
        let entries_at_start = finished_entries(&scheduler);
        let state = State {
            probe: storage_format::probe::Tablebase::new(Arc::clone(&store)),
            store,
            scheduler: Mutex::new(scheduler),
            jobs_log,
            workers: Mutex::new(HashMap::new()),
            next_worker: Mutex::new(1),
            access,
            rules,
            heartbeat_ms: (config.lease_ttl_ms / 4).clamp(100, 10_000) as u32,
            started: Instant::now(),
            entries_at_start,
            checksums: Mutex::new(HashMap::new()),
        };
        state.persist(&changed)?;
        Ok(state)
    }

    fn persist(&self, records: &[JobRecord]) -> anyhow::Result<()> {
        for r in records {
            self.jobs_log.put(&r.signature, &serde_json::to_vec(r)?)?;
        }
        Ok(())
    }

    fn persist_status(&self, records: &[JobRecord]) -> Result<(), Status> {
        self.persist(records)
            .map_err(|e| Status::internal(format!("cannot save job state: {e}")))
    }

    /// Plans `targets` and their closure; returns the newly planned signatures.
    pub fn plan(&self, targets: &[Signature]) -> Result<Vec<Signature>, Status> {
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let (changed, new) = s.plan(targets, |sig| {
            self.store.header(sig).ok().flatten().is_some()
        });
        self.persist_status(&changed)?;
        Ok(new)
    }

    /// Whether every planned job is finished or failed.
    pub fn all_done(&self) -> bool {
        self.scheduler.lock().expect("scheduler lock").all_done()
    }

    /// The status report served by `Status`.
    pub fn status(&self) -> StatusResponse {
        let now = now_ms();
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let expired = s.expire(now);
        if !expired.is_empty() {
            metrics::counter!("xqtb_lease_expiries_total").increment(expired.len() as u64);
        }
        let _ = self.persist(&expired);
        let workers = self.workers.lock().expect("workers lock");
        let mut resp = StatusResponse {
            eta_seconds: -1.0,
            ..Default::default()
        };
        let mut remaining = 0u64;
        for (sig, job) in s.jobs() {
            let size = 2 * storage_format::TableIndex::size_of(sig);
            match job.state {
                JobState::Waiting => resp.waiting += 1,
                JobState::Ready => resp.ready += 1,
                JobState::Leased => resp.leased += 1,
                JobState::Finished => resp.finished += 1,
                JobState::Failed => resp.failed += 1,
            }
            resp.entries_total += size;
            if job.state == JobState::Finished {
                resp.entries_done += size;
            } else if job.state != JobState::Failed {
                remaining += size;
            }
            resp.jobs.push(JobStatus {
                signature: job.signature.clone(),
                state: job.state.name().into(),
                attempts: job.attempts,
                worker_id: job
                    .lease
                    .as_ref()
                    .map(|l| l.worker.clone())
                    .unwrap_or_default(),
                progress: job.progress,
                index_size: size / 2,
                last_error: job.last_error.clone().unwrap_or_default(),
            });
        }
        let secs = self.started.elapsed().as_secs_f64();
        let done_here = resp.entries_done.saturating_sub(self.entries_at_start);
        if secs > 0.0 && done_here > 0 {
            resp.entries_per_second = done_here as f64 / secs;
            resp.eta_seconds = remaining as f64 / resp.entries_per_second;
        } else if remaining == 0 {
            resp.eta_seconds = 0.0;
        }
        for (state, n) in [
            ("waiting", resp.waiting),
            ("ready", resp.ready),
            ("leased", resp.leased),
            ("finished", resp.finished),
            ("failed", resp.failed),
        ] {
            metrics::gauge!("xqtb_jobs", "state" => state).set(n as f64);
        }
        metrics::gauge!("xqtb_leases_active").set(resp.leased as f64);
        metrics::gauge!("xqtb_solve_entries_per_second").set(resp.entries_per_second);
        metrics::gauge!("xqtb_workers").set(workers.len() as f64);
        let (lookups, loads) = (self.probe.block_lookups(), self.probe.blocks_loaded());
        metrics::counter!("xqtb_block_cache_hits_total").absolute(lookups.saturating_sub(loads));
        metrics::counter!("xqtb_block_cache_misses_total").absolute(loads);
        if lookups > 0 {
            metrics::gauge!("xqtb_block_cache_hit_ratio")
                .set(lookups.saturating_sub(loads) as f64 / lookups as f64);
        }
        let mut ws: Vec<_> = workers.iter().collect();
        ws.sort_by(|a, b| a.0.cmp(b.0));
        for (id, w) in ws {
            let current = w
                .lease
                .as_ref()
                .and_then(|l| {
                    s.jobs()
                        .find(|(_, j)| j.lease.as_ref().is_some_and(|x| &x.id == l))
                })
                .map(|(sig, _)| sig.name())
                .unwrap_or_default();
            resp.workers.push(WorkerStatus {
                worker_id: id.clone(),
                name: w.name.clone(),
                threads: w.threads,
                current_job: current,
                progress: w.progress,
                phase: w.phase.clone(),
                last_seen_ms_ago: w.last_seen.elapsed().as_millis() as u64,
            });
        }
        resp
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

    /// The shard-file checksum of a committed table, computed once.
    fn shard_checksum(&self, sig: &Signature) -> Result<u32, Status> {
        if let Some(c) = self.checksums.lock().expect("lock").get(sig) {
            return Ok(*c);
        }
        let c = shard::file_checksum(&self.store.export_shard(sig).map_err(store_status)?);
        self.checksums.lock().expect("lock").insert(*sig, c);
        Ok(c)
    }

    fn touch_worker(&self, id: &str, f: impl FnOnce(&mut WorkerInfo)) {
        if let Some(w) = self.workers.lock().expect("workers lock").get_mut(id) {
            w.last_seen = Instant::now();
            f(w);
        }
    }

    /// Checks the upload of `bytes` for `lease_id` and commits it atomically. The scheduler lock
    /// is held throughout, so the lease cannot expire between the check and the commit.
    fn commit(&self, lease_id: &str, signature: &str, bytes: &[u8]) -> Result<String, Status> {
        let sig: Signature = signature
            .parse()
            .map_err(|e| Status::invalid_argument(format!("bad signature '{signature}': {e}")))?;
        let mut s = self.scheduler.lock().expect("scheduler lock");
        let now = now_ms();
        s.check_upload(lease_id, &sig, now).map_err(lease_status)?;
        let checked = shard::read_shard(bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                if t.header.signature != sig {
                    return Err(format!("the shard holds {}, not {sig}", t.header.signature));
                }
                if t.header.rules != self.rules {
                    return Err(format!(
                        "the shard was solved under {}",
                        t.header.rules.name()
                    ));
                }
                t.header
                    .check_index(&storage_format::TableIndex::new(sig))
                    .map_err(|e| e.to_string())?;
                Ok(t)
            });
        let table = match checked {
            Ok(t) => t,
            Err(msg) => {
                let msg = format!("upload of {sig} refused: {msg}");
                tracing::warn!(lease = lease_id, table = %sig, "{msg}");
                metrics::counter!("xqtb_uploads_total", "result" => "refused").increment(1);
                let r = s.fail(lease_id, &msg).map_err(lease_status)?;
                self.persist_status(&[r])?;
                return Err(Status::invalid_argument(msg));
            }
        };
        self.store
            .put_table(&table)
            .map_err(|e| Status::internal(format!("cannot store {sig}: {e}")))?;
        let changed = s.finish(lease_id, now).map_err(lease_status)?;
        self.persist_status(&changed)?;
        self.release_worker(lease_id);
        metrics::counter!("xqtb_uploads_total", "result" => "accepted").increment(1);
        metrics::counter!("xqtb_upload_bytes_total").increment(bytes.len() as u64);
        tracing::info!(lease = lease_id, table = %sig, bytes = bytes.len(), "table committed");
        Ok(format!("{sig} committed ({} bytes)", bytes.len()))
    }
}

fn finished_entries(s: &Scheduler) -> u64 {
    s.jobs()
        .filter(|(_, j)| j.state == JobState::Finished)
        .map(|(sig, _)| 2 * storage_format::TableIndex::size_of(sig))
        .sum()
}

fn lease_status(e: LeaseError) -> Status {
    Status::failed_precondition(e.to_string())
}

fn parse_sig(text: &str) -> Result<Signature, Status> {
    text.parse()
        .map_err(|e| Status::invalid_argument(format!("bad signature '{text}': {e}")))
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<ShardChunk, Status>> + Send>>;

/// Streams a stored table as shard bytes in chunks.
fn shard_stream(store: &SledStore, sig: &Signature) -> Result<ChunkStream, Status> {
    let bytes = store.export_shard(sig).map_err(store_status)?;
    let checksum = shard::file_checksum(&bytes);
    let total = bytes.len() as u64;
    let chunks: Vec<Result<ShardChunk, Status>> = bytes
        .chunks(CHUNK_BYTES)
        .enumerate()
        .map(|(i, c)| {
            Ok(ShardChunk {
                total_bytes: if i == 0 { total } else { 0 },
                file_checksum: if i == 0 { checksum } else { 0 },
                data: c.to_vec(),
            })
        })
        .collect();
    Ok(Box::pin(tokio_stream::iter(chunks)))
}

fn store_status(e: storage_format::store::StoreError) -> Status {
    match e {
        storage_format::store::StoreError::Missing { table, .. } => {
            Status::not_found(format!("table {table} is not in the store"))
        }
        other => Status::internal(other.to_string()),
    }
}

/// The worker-facing service.
pub struct JobsService(pub Arc<State>);

#[tonic::async_trait]
impl Jobs for JobsService {
    async fn register(
        &self,
        req: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        self.0.access.check(&req, true)?;
        let r = req.into_inner();
        let id = {
            let mut n = self.0.next_worker.lock().expect("lock");
            let id = format!("w{}-{}", *n, r.name);
            *n += 1;
            id
        };
        tracing::info!(worker = %id, threads = r.threads, version = %r.version, "worker registered");
        self.0.workers.lock().expect("lock").insert(
            id.clone(),
            WorkerInfo {
                name: r.name,
                threads: r.threads,
                last_seen: Instant::now(),
                lease: None,
                progress: 0.0,
                phase: "idle".into(),
            },
        );
        Ok(Response::new(RegisterResponse {
            worker_id: id,
            heartbeat_interval_ms: self.0.heartbeat_ms,
        }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseResponse>, Status> {
        self.0.access.check(&req, true)?;
        let worker = req.into_inner().worker_id;
        let (grant, changed, all_done) = {
            let mut s = self.0.scheduler.lock().expect("scheduler lock");
            let (grant, changed) = s.lease(&worker, now_ms());
            (grant, changed, s.all_done())
        };
        self.0.persist_status(&changed)?;
        let job = grant.map(|g| {
            metrics::counter!("xqtb_leases_granted_total").increment(1);
            if g.attempt > 1 {
                metrics::counter!("xqtb_job_retries_total").increment(1);
            }
            tracing::info!(worker = %worker, job = %g.signature, lease = %g.lease.id, attempt = g.attempt, "job leased");
            self.0.touch_worker(&worker, |w| {
                w.lease = Some(g.lease.id.clone());
                w.progress = 0.0;
                w.phase = "starting".into();
            });
            Job {
                signature: g.signature.name(),
                lease_id: g.lease.id,
                dependencies: g.dependencies.iter().map(|d| d.name()).collect(),
                expires_at_ms: g.lease.expires_at_ms,
                rules: self.0.rules.name().into(),
                attempt: g.attempt,
            }
        });
        Ok(Response::new(LeaseResponse {
            job,
            retry_after_ms: 500,
            all_done,
        }))
    }

    async fn heartbeat(
        &self,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        self.0.access.check(&req, true)?;
        let r = req.into_inner();
        self.0.touch_worker(&r.worker_id, |w| {
            w.progress = r.progress;
            w.phase = r.phase.clone();
        });
        let result = {
            let mut s = self.0.scheduler.lock().expect("scheduler lock");
            s.heartbeat(&r.lease_id, r.progress, now_ms())
        };
        match result {
            Ok((expires, record)) => {
                // Persisting the renewed expiry lets a restarted coordinator honour the lease.
                self.0.persist_status(&[record])?;
                Ok(Response::new(HeartbeatResponse {
                    keep_going: true,
                    expires_at_ms: expires,
                }))
            }
            Err(e) => {
                tracing::warn!(worker = %r.worker_id, lease = %r.lease_id, "heartbeat refused: {e}");
                self.0.release_worker(&r.lease_id);
                Ok(Response::new(HeartbeatResponse {
                    keep_going: false,
                    expires_at_ms: 0,
                }))
            }
        }
    }

    async fn upload(
        &self,
        req: Request<Streaming<UploadChunk>>,
    ) -> Result<Response<UploadResponse>, Status> {
        self.0.access.check(&req, true)?;
        let mut stream = req.into_inner();
        let first = stream
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("empty upload"))?;
        if first.total_bytes > MAX_UPLOAD_BYTES {
            return Err(Status::invalid_argument(format!(
                "upload of {} bytes exceeds the limit of {MAX_UPLOAD_BYTES}",
                first.total_bytes
            )));
        }
        let mut bytes = Vec::with_capacity(first.total_bytes as usize);
        bytes.extend_from_slice(&first.data);
        while let Some(chunk) = stream.message().await? {
            if bytes.len() as u64 + chunk.data.len() as u64 > first.total_bytes {
                return Err(Status::invalid_argument("upload longer than announced"));
            }
            bytes.extend_from_slice(&chunk.data);
        }
        let state = Arc::clone(&self.0);
        let (lease, sig) = (first.lease_id, first.signature);
        let message = tokio::task::spawn_blocking(move || state.commit(&lease, &sig, &bytes))
            .await
            .map_err(|e| Status::internal(e.to_string()))??;
        Ok(Response::new(UploadResponse {
            accepted: true,
            message,
        }))
    }

    async fn report_failure(
        &self,
        req: Request<FailureReport>,
    ) -> Result<Response<FailureResponse>, Status> {
        self.0.access.check(&req, true)?;
        let r = req.into_inner();
        tracing::warn!(worker = %r.worker_id, lease = %r.lease_id, "job failed: {}", r.message);
        let record = {
            let mut s = self.0.scheduler.lock().expect("scheduler lock");
            s.fail(&r.lease_id, &r.message).map_err(lease_status)?
        };
        self.0.persist_status(&[record])?;
        self.0.release_worker(&r.lease_id);
        Ok(Response::new(FailureResponse {}))
    }

    type FetchTableStream = ChunkStream;

    async fn fetch_table(
        &self,
        req: Request<FetchTableRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        self.0.access.check(&req, true)?;
        let sig = parse_sig(&req.get_ref().signature)?;
        Ok(Response::new(shard_stream(&self.0.store, &sig)?))
    }
}

/// The user-facing service.
pub struct TablebaseService(pub Arc<State>);

fn move_value(m: &storage_format::probe::MoveInfo) -> MoveValue {
    MoveValue {
        iccs: m.iccs.clone(),
        chinese: m.chinese.clone(),
        wxf: m.wxf.clone(),
        wdl: m.value.wdl().into(),
        dtm_plies: m.value.dtm_plies().map(u32::from),
    }
}

fn probe_status(e: storage_format::ProbeError) -> Status {
    use storage_format::ProbeError as E;
    match e {
        E::MissingTable(_) | E::NotInStore { .. } => Status::not_found(e.to_string()),
        E::Storage(..) => Status::internal(e.to_string()),
        _ => Status::invalid_argument(e.to_string()),
    }
}

impl TablebaseService {
    fn probe_one(&self, fen: &str) -> Result<ProbeResponse, Status> {
        let started = Instant::now();
        let r = self.0.probe.probe_fen(fen);
        metrics::counter!("xqtb_probes_total").increment(1);
        metrics::histogram!("xqtb_probe_seconds").record(started.elapsed().as_secs_f64());
        let r = r.map_err(probe_status)?;
        Ok(ProbeResponse {
            fen: r.fen.clone(),
            wdl: r.value.wdl().into(),
            dtm_plies: r.value.dtm_plies().map(u32::from),
            table: r.table.map_or_else(|| "-".into(), |t| t.name()),
            moves: r.moves.iter().map(move_value).collect(),
        })
    }
}

#[tonic::async_trait]
impl Tablebase for TablebaseService {
    async fn probe(&self, req: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        self.0.access.check(&req, false)?;
        Ok(Response::new(self.probe_one(&req.get_ref().fen)?))
    }

    async fn probe_batch(
        &self,
        req: Request<ProbeBatchRequest>,
    ) -> Result<Response<ProbeBatchResponse>, Status> {
        self.0.access.check(&req, false)?;
        let results = req
            .get_ref()
            .fens
            .iter()
            .map(|fen| ProbeResult {
                result: Some(match self.probe_one(fen) {
                    Ok(r) => probe_result::Result::Ok(r),
                    Err(e) => probe_result::Result::Error(e.message().to_string()),
                }),
            })
            .collect();
        Ok(Response::new(ProbeBatchResponse { results }))
    }

    async fn mainline(
        &self,
        req: Request<MainlineRequest>,
    ) -> Result<Response<MainlineResponse>, Status> {
        self.0.access.check(&req, false)?;
        let line = self
            .0
            .probe
            .mainline_fen(&req.get_ref().fen)
            .map_err(probe_status)?;
        Ok(Response::new(MainlineResponse {
            fen: line.fen.clone(),
            wdl: line.value.wdl().into(),
            dtm_plies: line.value.dtm_plies().map(u32::from),
            moves: line.moves.iter().map(move_value).collect(),
            ending: line.end.name().into(),
        }))
    }

    async fn list_shards(
        &self,
        req: Request<ListShardsRequest>,
    ) -> Result<Response<ListShardsResponse>, Status> {
        self.0.access.check(&req, false)?;
        let headers = self.0.store.list_tables().map_err(store_status)?;
        let shards = headers
            .iter()
            .map(|h| ShardInfo {
                signature: h.signature.name(),
                index_size: h.index_size,
                legal: h.counts.iter().map(|c| c.legal).collect(),
                shard_bytes: shard::shard_len_of(h),
                file_checksum: self.0.shard_checksum(&h.signature).unwrap_or(0),
                rules: h.rules.name().into(),
            })
            .collect();
        Ok(Response::new(ListShardsResponse { shards }))
    }

    type DownloadShardStream = ChunkStream;

    async fn download_shard(
        &self,
        req: Request<DownloadShardRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        self.0.access.check(&req, false)?;
        let sig = parse_sig(&req.get_ref().signature)?;
        Ok(Response::new(shard_stream(&self.0.store, &sig)?))
    }

    async fn submit(
        &self,
        req: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        self.0.access.check(&req, true)?;
        let sigs: Vec<Signature> = req
            .get_ref()
            .signatures
            .iter()
            .map(|s| parse_sig(s))
            .collect::<Result<_, _>>()?;
        let planned = self.0.plan(&sigs)?;
        tracing::info!(planned = planned.len(), "endgames submitted");
        Ok(Response::new(SubmitResponse {
            planned: planned.iter().map(|s| s.name()).collect(),
        }))
    }

    async fn status(
        &self,
        req: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        self.0.access.check(&req, false)?;
        Ok(Response::new(self.0.status()))
    }
}
