//! The gRPC shells: the worker-facing `Jobs` service and the user-facing `Tablebase` service.
//! Each call takes the bearer token from the metadata, parses the message through [`rpc`], calls
//! one [`App`] method and maps the result; [`status_of`] maps every [`AppError`] to its gRPC
//! status.
//!
//! No call can hold the server: everything that may block (sled, zstd, probing, checking an
//! upload) runs on tokio's blocking pool, never on the async executor threads; every call but
//! an upload is answered within [`Limits::request_timeout`](app::Limits::request_timeout);
//! uploads and downloads end when their client sends or takes nothing for
//! [`Limits::stream_idle_timeout`](app::Limits::stream_idle_timeout) (an upload's job is then
//! handed back, a download's shard released).

use app::{
    App, AppError, AppliedLimits, CancelOnDrop, JobReport, SearchAnswer, SearchLimits,
    StatusReport, TableReport, WorkerReport,
};
use proto::v1::jobs_server::Jobs;
use proto::v1::tablebase_server::Tablebase;
use proto::v1::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use storage_format::store::StoreError;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use xqtb_core::{ProbeError, SlotRange, TableId};

/// The gRPC status of an application error.
pub fn status_of(e: AppError) -> Status {
    match &e {
        AppError::Unauthenticated(_) => Status::unauthenticated(e.to_string()),
        AppError::BadRequest(_) | AppError::UploadRefused(_) => {
            Status::invalid_argument(e.to_string())
        }
        AppError::Lease(_) => Status::failed_precondition(e.to_string()),
        AppError::Probe(p) => match p {
            ProbeError::MissingTable(_) | ProbeError::NotInStore { .. } => {
                Status::not_found(e.to_string())
            }
            ProbeError::Storage { .. } => Status::internal(e.to_string()),
            _ => Status::invalid_argument(e.to_string()),
        },
        AppError::Store(StoreError::Missing { table, .. }) => Status::not_found(format!(
            "table {} is not in the store (rule set {})",
            table.signature, table.rules
        )),
        AppError::Busy(_) => Status::resource_exhausted(e.to_string()),
        AppError::Store(_) | AppError::Persist(_) | AppError::SearchFailed(_) => {
            Status::internal(e.to_string())
        }
        AppError::Share(s) => match s {
            app::ShareError::Relay(app::RelayError::Replay { .. }) => {
                Status::aborted(e.to_string())
            }
            _ => Status::failed_precondition(e.to_string()),
        },
    }
}

/// The bearer token of a request, if it has one.
fn presented<T>(req: &Request<T>) -> Option<&str> {
    req.metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
}

/// Checks the token of `req` for a writing (`true`) or reading call.
fn authorize<T>(app: &App, req: &Request<T>, write: bool) -> Result<(), Status> {
    app.access().check(presented(req), write).map_err(status_of)
}

/// Answers DEADLINE_EXCEEDED when `call` takes longer than the request timeout. Work already
/// handed to the blocking pool finishes there; its answer is dropped.
async fn within<T>(app: &App, call: impl Future<Output = Result<T, Status>>) -> Result<T, Status> {
    let limit = app.limits().request_timeout;
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(Status::deadline_exceeded(format!(
            "the call took longer than the coordinator's request timeout of {} s \
             (--request-timeout-secs)",
            limit.as_secs_f64()
        )))
    })
}

/// Runs blocking application work (sled, zstd, probing) off the async executor threads.
async fn blocking<T: Send + 'static>(
    app: &Arc<App>,
    f: impl FnOnce(&App) -> Result<T, AppError> + Send + 'static,
) -> Result<T, Status> {
    let app = Arc::clone(app);
    tokio::task::spawn_blocking(move || f(&app))
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(status_of)
}

/// The status of a message that does not convert to the domain types.
fn malformed(e: rpc::ConvertError) -> Status {
    status_of(AppError::BadRequest(e.to_string()))
}

fn table_of(app: &App, signature: &str, rules: &str) -> Result<TableId, Status> {
    rpc::parse_table(signature, rules, app.default_rules()).map_err(malformed)
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<ShardChunk, Status>> + Send>>;

/// Streams a committed table as shard bytes in chunks. The chunks go through a small channel
/// from a task that gives up when the reader takes none for the idle timeout: it lets go of the
/// shard at once, so a stalled reader does not keep it in memory for as long as its connection
/// lives, and the stream then ends with DEADLINE_EXCEEDED after the chunks already queued, so a
/// reader that comes back learns why its download is short.
async fn shard_stream(
    app: &Arc<App>,
    table: TableId,
    part: Option<SlotRange>,
) -> Result<ChunkStream, Status> {
    let file = blocking(app, move |a| match part {
        None => a.shard(&table),
        Some(slots) => a.part_shard(&table, slots),
    })
    .await?;
    let idle = app.limits().stream_idle_timeout;
    let chunk_bytes = app.limits().download_chunk_bytes.max(1);
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    tokio::spawn(async move {
        let total = file.bytes.len() as u64;
        let chunks = file.bytes.len().div_ceil(chunk_bytes);
        for i in 0..chunks {
            let data = &file.bytes[i * chunk_bytes..((i + 1) * chunk_bytes).min(file.bytes.len())];
            let chunk = ShardChunk {
                total_bytes: if i == 0 { total } else { 0 },
                file_checksum: if i == 0 { file.checksum } else { 0 },
                data: data.to_vec(),
            };
            match tokio::time::timeout(idle, tx.send(Ok(chunk))).await {
                Ok(Ok(())) => {}
                // The reader went away.
                Ok(Err(_)) => return,
                Err(_) => {
                    tracing::warn!(
                        table = %table,
                        sent = i,
                        chunks,
                        "download stalled: the reader took no chunk for {} s; the download ends",
                        idle.as_secs_f64()
                    );
                    drop(file);
                    let stalled = Status::deadline_exceeded(format!(
                        "the download of {table} stalled: the reader took no chunk for {} s (the \
                         coordinator's --stream-idle-timeout-secs); {i} of {chunks} chunks were \
                         sent; download again",
                        idle.as_secs_f64()
                    ));
                    // Only this small message waits for the reader now; the connection's
                    // keepalive ends the wait when the reader is gone for good.
                    let _ = tx.send(Err(stalled)).await;
                    return;
                }
            }
        }
    });
    Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

/// The next chunk of an upload; DEADLINE_EXCEEDED when none comes within `idle`.
async fn next_chunk(
    stream: &mut Streaming<UploadChunk>,
    idle: Duration,
) -> Result<Option<UploadChunk>, Status> {
    tokio::time::timeout(idle, stream.message())
        .await
        .unwrap_or_else(|_| {
            Err(Status::deadline_exceeded(format!(
                "the upload stalled: no chunk for {} s (the coordinator's \
                 --stream-idle-timeout-secs)",
                idle.as_secs_f64()
            )))
        })
}

/// The rest of an upload after its first chunk's `data`: at most `announced` bytes in all.
async fn receive_upload(
    first: Vec<u8>,
    announced: u64,
    stream: &mut Streaming<UploadChunk>,
    idle: Duration,
) -> Result<Vec<u8>, Status> {
    let too_long = || {
        Status::invalid_argument(format!(
            "the upload runs past the {announced} bytes its first chunk announced"
        ))
    };
    if first.len() as u64 > announced {
        return Err(too_long());
    }
    // Reserved up to a point only: the announced length is a promise, not yet bytes.
    let mut bytes = Vec::with_capacity(announced.min(64 << 20) as usize);
    bytes.extend_from_slice(&first);
    while let Some(chunk) = next_chunk(stream, idle).await? {
        if bytes.len() as u64 + chunk.data.len() as u64 > announced {
            return Err(too_long());
        }
        bytes.extend_from_slice(&chunk.data);
    }
    Ok(bytes)
}

/// The worker-facing service.
pub struct JobsService(pub Arc<App>);

#[tonic::async_trait]
impl Jobs for JobsService {
    async fn register(
        &self,
        req: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        authorize(&self.0, &req, true)?;
        let r = req.into_inner();
        let memory = (r.memory_bytes > 0).then_some(r.memory_bytes);
        let reg = self.0.register(&r.name, r.threads, memory, &r.version);
        Ok(Response::new(RegisterResponse {
            worker_id: reg.worker_id,
            heartbeat_interval_ms: reg.heartbeat_interval_ms,
        }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let req = req.into_inner();
            let (worker, resident) = (req.worker_id, req.resident_bytes);
            let outcome = blocking(&self.0, move |a| a.lease(&worker, resident)).await?;
            let job = outcome.grant.map(|g| Job {
                key: Some(rpc::job_key(&g.key)),
                lease_id: g.lease.id,
                dependencies: g.dependencies.iter().map(rpc::table_ref).collect(),
                expires_at_ms: g.lease.expires_at_ms,
                attempt: g.attempt,
                share: outcome.seat.map(|s| ShareSeat {
                    seat: s.seat as u32,
                    seats: s.seats as u32,
                    group_slots: s.group_slots,
                }),
            });
            Ok(Response::new(LeaseResponse {
                job,
                retry_after_ms: outcome.retry_after_ms,
                all_done: outcome.all_done,
            }))
        })
        .await
    }

    async fn heartbeat(
        &self,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let r = req.into_inner();
            let result = blocking(&self.0, move |a| {
                Ok(a.heartbeat(&r.worker_id, &r.lease_id, r.progress, &r.phase))
            })
            .await?;
            Ok(Response::new(match result {
                Ok(expires_at_ms) => HeartbeatResponse {
                    keep_going: true,
                    expires_at_ms,
                },
                Err(_) => HeartbeatResponse {
                    keep_going: false,
                    expires_at_ms: 0,
                },
            }))
        })
        .await
    }

    /// Not bounded by the request timeout (a large table takes long to arrive) but by the idle
    /// timeout between chunks; the lease and the announced length are checked on the first
    /// chunk, before the rest is received.
    async fn upload(
        &self,
        req: Request<Streaming<UploadChunk>>,
    ) -> Result<Response<UploadResponse>, Status> {
        authorize(&self.0, &req, true)?;
        let idle = self.0.limits().stream_idle_timeout;
        let mut stream = req.into_inner();
        let first = next_chunk(&mut stream, idle)
            .await?
            .ok_or_else(|| Status::invalid_argument("empty upload"))?;
        let key = rpc::parse_job_key(first.key.as_ref()).map_err(malformed)?;
        let lease = first.lease_id;
        let announced = first.total_bytes;
        let l = lease.clone();
        blocking(&self.0, move |a| a.begin_upload(&l, &key, announced)).await?;
        let bytes = match receive_upload(first.data, announced, &mut stream, idle).await {
            Ok(bytes) => bytes,
            Err(status) => {
                let (l, why) = (lease.clone(), status.message().to_string());
                blocking(&self.0, move |a| a.abandon_upload(&l, &key, &why)).await?;
                return Err(status);
            }
        };
        let message = blocking(&self.0, move |a| a.commit_upload(&lease, &key, &bytes)).await?;
        Ok(Response::new(UploadResponse {
            accepted: true,
            message,
        }))
    }

    async fn report_failure(
        &self,
        req: Request<FailureReport>,
    ) -> Result<Response<FailureResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let r = req.into_inner();
            blocking(&self.0, move |a| {
                a.report_failure(&r.worker_id, &r.lease_id, &r.message)
            })
            .await?;
            Ok(Response::new(FailureResponse {}))
        })
        .await
    }

    type FetchTableStream = ChunkStream;

    async fn fetch_table(
        &self,
        req: Request<FetchTableRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let r = req.get_ref();
            let table = table_of(&self.0, &r.signature, &r.rules)?;
            let part = (r.slot_end > 0).then_some(SlotRange {
                start: r.slot_start,
                end: r.slot_end,
            });
            Ok(Response::new(shard_stream(&self.0, table, part).await?))
        })
        .await
    }

    async fn share_send(
        &self,
        req: Request<ShareBatch>,
    ) -> Result<Response<ShareSendResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let b = req.into_inner();
            let pass = app::pass_of(b.pass_kind, b.level).map_err(status_of)?;
            blocking(&self.0, move |a| {
                a.share_send(&b.lease_id, pass, b.data, b.words, b.resolved)
            })
            .await?;
            Ok(Response::new(ShareSendResponse {}))
        })
        .await
    }

    type ShareReceiveStream = Pin<Box<dyn Stream<Item = Result<ShareBatch, Status>> + Send>>;

    /// Not bounded by the request timeout: a pass ends when the slowest worker sharing the
    /// job ends it, which can take as long as the pass's work.
    async fn share_receive(
        &self,
        req: Request<ShareReceiveRequest>,
    ) -> Result<Response<Self::ShareReceiveStream>, Status> {
        authorize(&self.0, &req, true)?;
        let r = req.into_inner();
        let pass = app::pass_of(r.pass_kind, r.level).map_err(status_of)?;
        let app = &self.0;
        if let app::PassEnd::Waiting(complete) =
            app.share_end(&r.lease_id, pass).map_err(status_of)?
        {
            // Woken when the pass is complete, or when the job was given up.
            let _ = complete.await;
        }
        if !r.take && app.share_pass_complete(&r.lease_id, pass) {
            return Ok(Response::new(Box::pin(tokio_stream::empty())));
        }
        let batches = app.share_take(&r.lease_id, pass).map_err(status_of)?;
        let (kind, level) = pass.tag();
        let batches = if r.take { batches } else { Vec::new() };
        let messages = batches.into_iter().map(move |data| {
            Ok(ShareBatch {
                pass_kind: kind.into(),
                level: level.into(),
                data: data.to_vec(),
                ..ShareBatch::default()
            })
        });
        Ok(Response::new(Box::pin(tokio_stream::iter(messages))))
    }
}

/// The user-facing service.
pub struct TablebaseService(pub Arc<App>);

fn job_status(j: &JobReport) -> JobStatus {
    JobStatus {
        key: Some(rpc::job_key(&j.key)),
        state: j.state.name().into(),
        attempts: j.attempts,
        worker_id: j.worker.clone().unwrap_or_default(),
        progress: j.progress,
        index_size: j.key.slots.len(),
        last_error: j.last_error.clone().unwrap_or_default(),
        memory_bytes: j.memory_bytes,
        unholdable: j.unholdable.clone().unwrap_or_default(),
        share: j.share.as_ref().map(|s| ShareStatus {
            seats: s.seats as u32,
            seat_workers: s
                .seat_workers
                .iter()
                .map(|w| w.clone().unwrap_or_default())
                .collect(),
            pass: s.pass.map(|p| p.to_string()).unwrap_or_default(),
            bytes_relayed: s.bytes_relayed,
            bytes_held: s.bytes_held,
            replacements: s.replacements,
        }),
    }
}

fn table_status(t: &TableReport) -> TableStatus {
    TableStatus {
        table: Some(rpc::table_ref(&t.table)),
        state: t.state().into(),
        jobs: t.jobs,
        finished_jobs: t.finished,
        leased_jobs: t.leased,
        ready_jobs: t.ready,
        failed_jobs: t.failed,
        entries_total: t.entries_total,
        entries_done: t.entries_done,
    }
}

fn worker_status(w: &WorkerReport) -> WorkerStatus {
    WorkerStatus {
        worker_id: w.worker_id.clone(),
        name: w.name.clone(),
        threads: w.threads,
        current_job: w.current_job.as_ref().map(rpc::job_key),
        progress: w.progress,
        phase: w.phase.clone(),
        last_seen_ms_ago: w.last_seen_ms_ago,
        memory_bytes: w.memory_bytes.unwrap_or(0),
        resident_bytes: w.resident_bytes.unwrap_or(0),
    }
}

/// What a search request asks to spend (the server caps it).
fn search_limits(r: &SearchRequest) -> SearchLimits {
    SearchLimits {
        max_plies: r.max_plies,
        nodes: r.nodes,
        time: r.time_ms.map(Duration::from_millis),
        threads: r.threads,
        hash_mib: r.hash_mib,
    }
}

fn applied_limits(l: &AppliedLimits) -> proto::v1::SearchLimits {
    proto::v1::SearchLimits {
        max_plies: l.max_plies.into(),
        nodes: l.nodes,
        time_ms: l.time_ms,
        threads: l.threads as u64,
        hash_mib: l.hash_mib,
    }
}

/// The message form of a search's answer.
pub fn search_response(a: &SearchAnswer) -> SearchResponse {
    SearchResponse {
        limits: Some(applied_limits(&a.limits)),
        ..rpc::search_response(&a.report)
    }
}

/// The message form of a status report.
pub fn status_response(s: &StatusReport) -> StatusResponse {
    StatusResponse {
        waiting: s.waiting,
        ready: s.ready,
        leased: s.leased,
        finished: s.finished,
        failed: s.failed,
        jobs: s.jobs.iter().map(job_status).collect(),
        workers: s.workers.iter().map(worker_status).collect(),
        entries_per_second: s.entries_per_second,
        eta_seconds: s.eta_seconds.unwrap_or(-1.0),
        entries_done: s.entries_done,
        entries_total: s.entries_total,
        tables: s.tables.iter().map(table_status).collect(),
    }
}

#[tonic::async_trait]
impl Tablebase for TablebaseService {
    async fn probe(&self, req: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let r = req.into_inner();
            let rules = rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(malformed)?;
            let report = blocking(&self.0, move |a| a.probe(rules, &r.fen)).await?;
            Ok(Response::new(rpc::probe_response(&report)))
        })
        .await
    }

    async fn probe_batch(
        &self,
        req: Request<ProbeBatchRequest>,
    ) -> Result<Response<ProbeBatchResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let r = req.into_inner();
            app::check_batch_len(r.fens.len()).map_err(status_of)?;
            let rules = rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(malformed)?;
            let results = blocking(&self.0, move |a| {
                Ok(a.probe_batch(rules, &r.fens)?
                    .into_iter()
                    .map(|result| ProbeResult {
                        result: Some(match result {
                            Ok(report) => probe_result::Result::Ok(rpc::probe_response(&report)),
                            Err(e) => {
                                probe_result::Result::Error(status_of(e).message().to_string())
                            }
                        }),
                    })
                    .collect())
            })
            .await?;
            Ok(Response::new(ProbeBatchResponse { results }))
        })
        .await
    }

    async fn mainline(
        &self,
        req: Request<MainlineRequest>,
    ) -> Result<Response<MainlineResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let r = req.into_inner();
            let rules = rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(malformed)?;
            let line = blocking(&self.0, move |a| a.mainline(rules, &r.fen)).await?;
            Ok(Response::new(rpc::mainline_response(&line)))
        })
        .await
    }

    /// Runs on the blocking pool for up to the search's time limit (within the request
    /// timeout); a client that goes away, or a call past the timeout, cancels the search.
    async fn search(
        &self,
        req: Request<SearchRequest>,
    ) -> Result<Response<SearchResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let r = req.into_inner();
            let rules = rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(malformed)?;
            let limits = search_limits(&r);
            let cancel = CancelOnDrop(Arc::new(search::Control::new()));
            let control = Arc::clone(&cancel.0);
            let answer =
                blocking(&self.0, move |a| a.search(rules, &r.fen, &limits, &control)).await?;
            Ok(Response::new(search_response(&answer)))
        })
        .await
    }

    async fn list_shards(
        &self,
        req: Request<ListShardsRequest>,
    ) -> Result<Response<ListShardsResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let list = blocking(&self.0, |a| a.list_shards()).await?;
            let shards = list
                .iter()
                .map(|s| ShardInfo {
                    signature: s.table.signature.name(),
                    index_size: s.index_size,
                    legal: s.counts.0.iter().map(|c| c.legal).collect(),
                    shard_bytes: s.shard_bytes,
                    file_checksum: s.file_checksum,
                    rules: s.table.rules.name().into(),
                })
                .collect();
            Ok(Response::new(ListShardsResponse {
                shards,
                default_rules: self.0.default_rules().name().into(),
            }))
        })
        .await
    }

    type DownloadShardStream = ChunkStream;

    async fn download_shard(
        &self,
        req: Request<DownloadShardRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let r = req.get_ref();
            let table = table_of(&self.0, &r.signature, &r.rules)?;
            Ok(Response::new(shard_stream(&self.0, table, None).await?))
        })
        .await
    }

    async fn submit(
        &self,
        req: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, true)?;
            let r = req.into_inner();
            let rules = rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(malformed)?;
            let tables: Vec<TableId> = r
                .signatures
                .iter()
                .map(|s| table_of(&self.0, s, rules.name()))
                .collect::<Result<_, _>>()?;
            let planned = blocking(&self.0, move |a| a.submit(&tables)).await?;
            tracing::info!(planned = planned.len(), "endgames submitted");
            Ok(Response::new(SubmitResponse {
                planned: planned.iter().map(|k| k.table.signature.name()).collect(),
                rules: rules.name().into(),
            }))
        })
        .await
    }

    async fn status(
        &self,
        req: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        within(&self.0, async move {
            authorize(&self.0, &req, false)?;
            let report = blocking(&self.0, |a| Ok(a.status())).await?;
            Ok(Response::new(status_response(&report)))
        })
        .await
    }
}
