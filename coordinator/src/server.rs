//! Starting the coordinator: the gRPC server with both services, health and reflection, lease
//! expiry in the background, and graceful shutdown.

use crate::SchedulerConfig;
use crate::app::{Access, App};
use crate::grpc::{JobsService, TablebaseService};
use anyhow::{Context, Result};
use proto::v1::jobs_server::JobsServer;
use proto::v1::tablebase_server::TablebaseServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use storage_format::store::SledStore;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use xqtb_core::{RuleSet, TableId};

/// Largest gRPC message accepted (chunks are much smaller; batch probes may be larger).
const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// How to run a coordinator.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Directory of the sled database (tables and job states).
    pub data: PathBuf,
    /// Access control.
    pub access: Access,
    /// Tables to plan at start (added to whatever the database already holds).
    pub plan: Vec<TableId>,
    /// Lease time-to-live and retry limit.
    pub scheduler: SchedulerConfig,
    /// Rule set of requests that name none.
    pub default_rules: RuleSet,
    /// PEM certificate and key files for TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
}

/// A running coordinator.
pub struct Coordinator {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Its application layer (for in-process use: status, all_done).
    pub app: Arc<App>,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl Coordinator {
    /// Opens the data directory, plans, binds and starts serving in the background.
    pub async fn start(config: CoordinatorConfig) -> Result<Coordinator> {
        let store = Arc::new(SledStore::open(&config.data).with_context(|| {
            format!("cannot open the data directory {}", config.data.display())
        })?);
        let app = Arc::new(App::open(
            store,
            config.access.clone(),
            config.scheduler,
            config.default_rules,
        )?);
        if !config.plan.is_empty() {
            app.submit(&config.plan)?;
        }
        register_metrics();
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = listener.local_addr()?;
        // Small request/response exchanges must not wait for delayed ACKs (Nagle).
        let incoming = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(std::time::Duration::from_secs(30)));
        let (shutdown, mut rx) = tokio::sync::watch::channel(false);

        let (health_reporter, health_service) = tonic_health::server::health_reporter();
        health_reporter
            .set_serving::<JobsServer<JobsService>>()
            .await;
        health_reporter
            .set_serving::<TablebaseServer<TablebaseService>>()
            .await;
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1()?;

        let mut builder = Server::builder();
        if let Some((cert, key)) = &config.tls {
            let cert =
                std::fs::read(cert).with_context(|| format!("cannot read {}", cert.display()))?;
            let key =
                std::fs::read(key).with_context(|| format!("cannot read {}", key.display()))?;
            builder = builder
                .tls_config(ServerTlsConfig::new().identity(Identity::from_pem(cert, key)))?;
        }
        let router = builder
            .add_service(health_service)
            .add_service(reflection)
            .add_service(
                JobsServer::new(JobsService(Arc::clone(&app)))
                    .max_decoding_message_size(MAX_MESSAGE_BYTES),
            )
            .add_service(
                TablebaseServer::new(TablebaseService(Arc::clone(&app)))
                    .max_decoding_message_size(MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_MESSAGE_BYTES),
            );
        let tick_app = Arc::clone(&app);
        let task = tokio::spawn(async move {
            // Leases expire on their own tick, whether or not anyone calls in.
            let ticker = tokio::spawn(async move {
                let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
                loop {
                    tick.tick().await;
                    let app = Arc::clone(&tick_app);
                    match tokio::task::spawn_blocking(move || app.tick()).await {
                        Ok(Err(e)) => tracing::error!("lease expiry failed: {e}"),
                        Err(e) => tracing::error!("lease expiry task failed: {e}"),
                        Ok(Ok(_)) => {}
                    }
                }
            });
            let result = router
                .serve_with_incoming_shutdown(incoming, async move {
                    let _ = rx.wait_for(|stop| *stop).await;
                })
                .await;
            ticker.abort();
            result.map_err(Into::into)
        });
        tracing::info!(%addr, data = %config.data.display(), "coordinator listening");
        Ok(Coordinator {
            addr,
            app,
            shutdown,
            task,
        })
    }

    /// Stops serving (in-flight calls finish) and waits for the server to end.
    pub async fn stop(self) -> Result<()> {
        let _ = self.shutdown.send(true);
        self.task.await?
    }
}

/// Describes the coordinator's metrics and creates the counters at zero, so a scrape shows every
/// series from the start (not only after its first event).
fn register_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!("xqtb_jobs", "Jobs by state");
    describe_gauge!("xqtb_leases_active", "Jobs currently leased");
    describe_counter!("xqtb_leases_granted_total", "Leases granted");
    describe_counter!(
        "xqtb_lease_expiries_total",
        "Leases that expired without a result"
    );
    describe_counter!(
        "xqtb_job_retries_total",
        "Leases granted for a job that was leased before"
    );
    describe_counter!("xqtb_uploads_total", "Uploads by result");
    describe_counter!(
        "xqtb_upload_bytes_total",
        Unit::Bytes,
        "Bytes of accepted uploads"
    );
    describe_gauge!(
        "xqtb_solve_entries_per_second",
        "Index entries finished per second"
    );
    describe_gauge!("xqtb_workers", "Registered workers");
    describe_counter!("xqtb_probes_total", "Probes served");
    describe_histogram!("xqtb_probe_seconds", Unit::Seconds, "Probe latency");
    describe_counter!("xqtb_block_cache_hits_total", "Block cache hits");
    describe_counter!(
        "xqtb_block_cache_misses_total",
        "Block cache misses (blocks read and decompressed)"
    );
    describe_gauge!("xqtb_block_cache_hit_ratio", "Block cache hits / lookups");
    for name in [
        "xqtb_leases_granted_total",
        "xqtb_lease_expiries_total",
        "xqtb_job_retries_total",
        "xqtb_upload_bytes_total",
        "xqtb_probes_total",
        "xqtb_block_cache_hits_total",
        "xqtb_block_cache_misses_total",
    ] {
        metrics::counter!(name).increment(0);
    }
    for result in ["accepted", "refused"] {
        metrics::counter!("xqtb_uploads_total", "result" => result).increment(0);
    }
}
