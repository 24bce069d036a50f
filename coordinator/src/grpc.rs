//! The gRPC shells: the worker-facing `Jobs` service and the user-facing `Tablebase` service.
//! Each call takes the bearer token from the metadata, parses the message through [`rpc`], calls
//! one [`App`] method (off the async executor when it does blocking work) and maps the result;
//! [`status_of`] maps every [`AppError`] to its gRPC status.

use crate::app::{App, AppError, JobReport, MAX_UPLOAD_BYTES, StatusReport, WorkerReport};
use proto::v1::jobs_server::Jobs;
use proto::v1::tablebase_server::Tablebase;
use proto::v1::*;
use std::pin::Pin;
use std::sync::Arc;
use storage_format::store::StoreError;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use xqtb_core::{ProbeError, TableId};

/// Size of the chunks shards are streamed in (well under tonic's 4 MiB message limit).
pub const CHUNK_BYTES: usize = 512 * 1024;

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
        AppError::Store(_) | AppError::Persist(_) => Status::internal(e.to_string()),
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

fn table_of(app: &App, signature: &str, rules: &str) -> Result<TableId, Status> {
    rpc::parse_table(signature, rules, app.default_rules()).map_err(|e| status_of(e.into()))
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<ShardChunk, Status>> + Send>>;

/// Streams a committed table as shard bytes in chunks.
async fn shard_stream(app: &Arc<App>, table: TableId) -> Result<ChunkStream, Status> {
    let file = blocking(app, move |a| a.shard(&table)).await?;
    let total = file.bytes.len() as u64;
    let chunks: Vec<Result<ShardChunk, Status>> = file
        .bytes
        .chunks(CHUNK_BYTES)
        .enumerate()
        .map(|(i, c)| {
            Ok(ShardChunk {
                total_bytes: if i == 0 { total } else { 0 },
                file_checksum: if i == 0 { file.checksum } else { 0 },
                data: c.to_vec(),
            })
        })
        .collect();
    Ok(Box::pin(tokio_stream::iter(chunks)))
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
        let reg = self.0.register(&r.name, r.threads, &r.version);
        Ok(Response::new(RegisterResponse {
            worker_id: reg.worker_id,
            heartbeat_interval_ms: reg.heartbeat_interval_ms,
        }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseResponse>, Status> {
        authorize(&self.0, &req, true)?;
        let worker = req.into_inner().worker_id;
        let outcome = blocking(&self.0, move |a| a.lease(&worker)).await?;
        let job = outcome.grant.map(|g| Job {
            key: Some(rpc::job_key(&g.key)),
            lease_id: g.lease.id,
            dependencies: g.dependencies.iter().map(rpc::table_ref).collect(),
            expires_at_ms: g.lease.expires_at_ms,
            attempt: g.attempt,
        });
        Ok(Response::new(LeaseResponse {
            job,
            retry_after_ms: outcome.retry_after_ms,
            all_done: outcome.all_done,
        }))
    }

    async fn heartbeat(
        &self,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
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
    }

    async fn upload(
        &self,
        req: Request<Streaming<UploadChunk>>,
    ) -> Result<Response<UploadResponse>, Status> {
        authorize(&self.0, &req, true)?;
        let mut stream = req.into_inner();
        let first = stream
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("empty upload"))?;
        let key = rpc::parse_job_key(first.key.as_ref()).map_err(|e| status_of(e.into()))?;
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
        let lease = first.lease_id;
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
        authorize(&self.0, &req, true)?;
        let r = req.into_inner();
        blocking(&self.0, move |a| {
            a.report_failure(&r.worker_id, &r.lease_id, &r.message)
        })
        .await?;
        Ok(Response::new(FailureResponse {}))
    }

    type FetchTableStream = ChunkStream;

    async fn fetch_table(
        &self,
        req: Request<FetchTableRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        authorize(&self.0, &req, true)?;
        let r = req.get_ref();
        let table = table_of(&self.0, &r.signature, &r.rules)?;
        Ok(Response::new(shard_stream(&self.0, table).await?))
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
    }
}

#[tonic::async_trait]
impl Tablebase for TablebaseService {
    async fn probe(&self, req: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        authorize(&self.0, &req, false)?;
        let r = req.into_inner();
        let rules =
            rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(|e| status_of(e.into()))?;
        let report = blocking(&self.0, move |a| a.probe(rules, &r.fen)).await?;
        Ok(Response::new(rpc::probe_response(&report)))
    }

    async fn probe_batch(
        &self,
        req: Request<ProbeBatchRequest>,
    ) -> Result<Response<ProbeBatchResponse>, Status> {
        authorize(&self.0, &req, false)?;
        let r = req.into_inner();
        let rules =
            rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(|e| status_of(e.into()))?;
        let results = blocking(&self.0, move |a| {
            Ok(r.fens
                .iter()
                .map(|fen| ProbeResult {
                    result: Some(match a.probe(rules, fen) {
                        Ok(report) => probe_result::Result::Ok(rpc::probe_response(&report)),
                        Err(e) => probe_result::Result::Error(status_of(e).message().to_string()),
                    }),
                })
                .collect())
        })
        .await?;
        Ok(Response::new(ProbeBatchResponse { results }))
    }

    async fn mainline(
        &self,
        req: Request<MainlineRequest>,
    ) -> Result<Response<MainlineResponse>, Status> {
        authorize(&self.0, &req, false)?;
        let r = req.into_inner();
        let rules =
            rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(|e| status_of(e.into()))?;
        let line = blocking(&self.0, move |a| a.mainline(rules, &r.fen)).await?;
        Ok(Response::new(rpc::mainline_response(&line)))
    }

    async fn list_shards(
        &self,
        req: Request<ListShardsRequest>,
    ) -> Result<Response<ListShardsResponse>, Status> {
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
        Ok(Response::new(ListShardsResponse { shards }))
    }

    type DownloadShardStream = ChunkStream;

    async fn download_shard(
        &self,
        req: Request<DownloadShardRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        authorize(&self.0, &req, false)?;
        let r = req.get_ref();
        let table = table_of(&self.0, &r.signature, &r.rules)?;
        Ok(Response::new(shard_stream(&self.0, table).await?))
    }

    async fn submit(
        &self,
        req: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        authorize(&self.0, &req, true)?;
        let r = req.into_inner();
        let rules =
            rpc::parse_rules(&r.rules, self.0.default_rules()).map_err(|e| status_of(e.into()))?;
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
    }

    async fn status(
        &self,
        req: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        authorize(&self.0, &req, false)?;
        let report = blocking(&self.0, |a| Ok(a.status())).await?;
        Ok(Response::new(status_response(&report)))
    }
}
