//! The worker's gRPC loop: register, lease a job, fetch missing dependencies into the local
//! cache, solve and verify with all threads while heartbeating, upload, repeat. Reconnects with
//! backoff when the coordinator is away; on shutdown it hands its job back.

use crate::{Progress, solve_and_verify};
use anyhow::{Context, Result, anyhow};
use proto::v1::jobs_client::JobsClient;
use proto::v1::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use storage_format::codec::{decode_table, encode_table};
use storage_format::store::{SledStore, TableStore};
use storage_format::{MemoryTables, RuleSet, Signature, shard};
use tokio::sync::watch;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

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
    /// Directory of the cache of dependency tables.
    pub cache: PathBuf,
    /// Cluster token, sent as `authorization: Bearer ...`.
    pub token: Option<String>,
    /// PEM CA certificate to trust for TLS (`https://` URLs).
    pub ca: Option<PathBuf>,
    /// Stop once the coordinator says every job is done (otherwise keep polling).
    pub exit_when_done: bool,
    /// Fault injection for tests: wait this long (heartbeating) between solving and uploading.
    pub debug_delay_upload_ms: u64,
}

/// What a worker did.
#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    /// Tables solved and accepted.
    pub committed: Vec<String>,
    /// Uploads the coordinator refused.
    pub refused: Vec<String>,
}

type Client = JobsClient<InterceptedService<Channel, Auth>>;

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

impl Auth {
    /// The interceptor for `token`.
    pub fn new(token: Option<&str>) -> Result<Auth> {
        Ok(Auth(match token {
            Some(t) => Some(
                format!("Bearer {t}")
                    .parse()
                    .context("the token is not valid in a header")?,
            ),
            None => None,
        }))
    }
}

/// Opens a channel to `url`, with TLS when a CA file is given.
pub async fn connect(url: &str, ca: Option<&PathBuf>) -> Result<Channel> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .with_context(|| format!("bad coordinator URL '{url}'"))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).with_context(|| format!("cannot read {}", ca.display()))?;
        endpoint = endpoint
            .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))?;
    }
    endpoint
        .connect()
        .await
        .with_context(|| format!("cannot reach the coordinator at {url}"))
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
                tracing::warn!(worker = %config.name, "coordinator unavailable ({e:#}); retrying in {backoff:?}");
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
    let channel = connect(&config.coordinator, config.ca.as_ref()).await?;
    let mut client = JobsClient::with_interceptor(channel, Auth::new(config.token.as_deref())?)
        .max_decoding_message_size(16 << 20);
    let reg = client
        .register(RegisterRequest {
            name: config.name.clone(),
            threads: config.threads as u32,
            memory_bytes: 0,
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
        let work = run_job(
            &mut client,
            cache,
            pool,
            &worker_id,
            beat,
            config.debug_delay_upload_ms,
            job,
        );
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
            Ok(JobOutcome::Committed(sig)) => summary.committed.push(sig),
            Ok(JobOutcome::Refused(sig)) => summary.refused.push(sig),
            Err(JobFailure::Transport(e)) => return Err(e),
            Err(JobFailure::Job(e)) => {
                tracing::error!(worker = %worker_id, lease = %lease_id, "job failed: {e:#}");
                client
                    .report_failure(FailureReport {
                        worker_id: worker_id.clone(),
                        lease_id,
                        message: format!("{e:#}"),
                    })
                    .await?;
            }
        }
    }
}

enum JobOutcome {
    Committed(String),
    Refused(String),
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

async fn run_job(
    client: &mut Client,
    cache: &Arc<SledStore>,
    pool: &Arc<rayon::ThreadPool>,
    worker_id: &str,
    beat: Duration,
    delay: u64,
    job: Job,
) -> Result<JobOutcome, JobFailure> {
    let job_err = |e: anyhow::Error| JobFailure::Job(e);
    let sig: Signature = job
        .signature
        .parse()
        .map_err(|e| job_err(anyhow!("bad signature: {e}")))?;
    let rules: RuleSet = job.rules.parse().map_err(|e: String| job_err(anyhow!(e)))?;
    tracing::info!(worker = %worker_id, job = %sig, lease = %job.lease_id, "solving");
    let progress = Arc::new(AtomicU64::new(0));
    let lost = Arc::new(AtomicBool::new(false));
    // Heartbeats run beside everything else for the whole job, downloads included.
    let mut hb_client = client.clone();
    let (hb_worker, hb_lease) = (worker_id.to_string(), job.lease_id.clone());
    let (hb_progress, hb_lost) = (Arc::clone(&progress), Arc::clone(&lost));
    let heartbeat = tokio::spawn(async move {
        loop {
            tokio::time::sleep(beat).await;
            let p = f64::from_bits(hb_progress.load(Relaxed));
            let r = hb_client
                .heartbeat(HeartbeatRequest {
                    worker_id: hb_worker.clone(),
                    lease_id: hb_lease.clone(),
                    progress: p,
                    phase: if p < 0.9 {
                        "solving".into()
                    } else {
                        "verifying".into()
                    },
                })
                .await;
            if let Ok(r) = r
                && !r.into_inner().keep_going
            {
                hb_lost.store(true, Relaxed);
                return;
            }
        }
    });
    let result = async {
        let mut deps = MemoryTables::new();
        for dep in &job.dependencies {
            let dep: Signature = dep.parse().map_err(|e| job_err(anyhow!("bad dependency: {e}")))?;
            if cache.header(&dep).map_err(|e| job_err(e.into()))?.is_none() {
                let bytes = fetch(client, &dep).await?;
                cache.import_shard(&bytes).map_err(|e| job_err(anyhow!("dependency {dep}: {e}")))?;
            }
            let encoded = cache.load_table(&dep).map_err(|e| job_err(e.into()))?;
            let table = decode_table(&encoded).map_err(|e| job_err(e.into()))?;
            deps.insert(Arc::new(table));
        }
        let (pool, p) = (Arc::clone(pool), Arc::clone(&progress));
        let started = std::time::Instant::now();
        let solved = tokio::task::spawn_blocking(move || {
            pool.install(|| {
                let report = |pr: Progress| {
                    let f = match pr {
                        Progress::Init { done, total } => 0.3 * done as f64 / total.max(1) as f64,
                        Progress::Level { resolved, total, .. } => {
                            0.3 + 0.5 * resolved as f64 / total.max(1) as f64
                        }
                    };
                    p.store(f.to_bits(), Relaxed);
                };
                let (table, _) = solve_and_verify(sig, rules, &deps, &report)?;
                p.store(0.95f64.to_bits(), Relaxed);
                let encoded = encode_table(&table, rules);
                Ok::<_, anyhow::Error>(encoded)
            })
        })
        .await
        .map_err(|e| job_err(anyhow!("solver thread: {e}")))?
        .map_err(job_err)?;
        let secs = started.elapsed().as_secs_f64();
        let entries = 2 * solved.header.index_size;
        metrics::histogram!("xqtb_worker_solve_seconds").record(secs);
        metrics::gauge!("xqtb_worker_solve_entries_per_second").set(entries as f64 / secs.max(1e-9));
        metrics::counter!("xqtb_worker_entries_solved_total").increment(entries);
        if lost.load(Relaxed) {
            tracing::warn!(worker = %worker_id, job = %sig, "lease lost while solving; dropping the result");
            return Ok(JobOutcome::Refused(sig.name()));
        }
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if lost.load(Relaxed) {
                tracing::warn!(worker = %worker_id, job = %sig, "lease lost while waiting to upload; dropping the result");
                return Ok(JobOutcome::Refused(sig.name()));
            }
        }
        let bytes = shard::write_shard(&solved);
        // Keep our own result: later jobs depend on it.
        cache.put_table(&solved).map_err(|e| job_err(e.into()))?;
        let total = bytes.len() as u64;
        let chunks: Vec<UploadChunk> = bytes
            .chunks(UPLOAD_CHUNK)
            .enumerate()
            .map(|(i, c)| UploadChunk {
                lease_id: if i == 0 { job.lease_id.clone() } else { String::new() },
                signature: if i == 0 { sig.name() } else { String::new() },
                total_bytes: total,
                data: c.to_vec(),
            })
            .collect();
        match client.upload(tokio_stream::iter(chunks)).await {
            Ok(r) => {
                metrics::counter!("xqtb_worker_tables_committed_total").increment(1);
                metrics::counter!("xqtb_worker_upload_bytes_total").increment(total);
                tracing::info!(worker = %worker_id, job = %sig, "{}", r.into_inner().message);
                Ok(JobOutcome::Committed(sig.name()))
            }
            Err(s) if matches!(s.code(), tonic::Code::FailedPrecondition | tonic::Code::InvalidArgument) => {
                tracing::warn!(worker = %worker_id, job = %sig, "upload refused: {}", s.message());
                Ok(JobOutcome::Refused(sig.name()))
            }
            Err(s) => Err(JobFailure::Transport(s.into())),
        }
    }
    .await;
    heartbeat.abort();
    result
}

/// Downloads the shard of `sig` from the coordinator into the worker's hands.
async fn fetch(client: &mut Client, sig: &Signature) -> Result<Vec<u8>, JobFailure> {
    let mut stream = client
        .fetch_table(FetchTableRequest {
            signature: sig.name(),
        })
        .await?
        .into_inner();
    match receive_shard(&mut stream, sig, |_, _| {}).await {
        Ok(bytes) => Ok(bytes),
        Err(ShardReceiveError::Transport(s)) => Err(s.into()),
        Err(e) => Err(JobFailure::Job(e.into())),
    }
}

/// Why a streamed shard was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum ShardReceiveError {
    /// The stream broke off.
    #[error("download failed: {}: {}", .0.code(), .0.message())]
    Transport(#[from] tonic::Status),
    /// Nothing arrived.
    #[error("empty download of {0}")]
    Empty(Signature),
    /// The length differs from the announced one.
    #[error("download of {sig} has {got} bytes, expected {want}")]
    Length {
        /// The table.
        sig: Signature,
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        want: u64,
    },
    /// The bytes fail the announced checksum.
    #[error("download of {0} fails its checksum")]
    Checksum(Signature),
}

/// Collects a streamed shard file (from `FetchTable` or `DownloadShard`) and checks it against the
/// length and CRC-32 announced in its first chunk. `progress(received, total)` sees each chunk.
pub async fn receive_shard(
    stream: &mut tonic::Streaming<ShardChunk>,
    sig: &Signature,
    mut progress: impl FnMut(u64, u64),
) -> Result<Vec<u8>, ShardReceiveError> {
    let mut bytes = Vec::new();
    let mut expected = None;
    while let Some(chunk) = stream.message().await? {
        let (total, _) = *expected.get_or_insert((chunk.total_bytes, chunk.file_checksum));
        if bytes.is_empty() {
            bytes.reserve(total as usize);
        }
        bytes.extend_from_slice(&chunk.data);
        progress(bytes.len() as u64, total);
    }
    let (want, sum) = expected.ok_or(ShardReceiveError::Empty(*sig))?;
    if bytes.len() as u64 != want {
        return Err(ShardReceiveError::Length {
            sig: *sig,
            got: bytes.len() as u64,
            want,
        });
    }
    if shard::file_checksum(&bytes) != sum {
        return Err(ShardReceiveError::Checksum(*sig));
    }
    Ok(bytes)
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
