//! Starting the coordinator: the gRPC server with both services, health and reflection (v1 and
//! v1alpha), lease expiry in the background, and graceful shutdown.

use crate::grpc::{JobsService, TablebaseService};
use anyhow::{Context, Result};
use app::scheduler::SchedulerConfig;
use app::{Access, App, Limits};
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
    /// Deadlines, stream and connection limits, and the sample check of uploads.
    pub limits: Limits,
    /// Which jobs several workers share.
    pub sharing: app::Sharing,
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
        let app = Arc::new(
            App::open(
                store,
                config.access.clone(),
                config.scheduler,
                config.default_rules,
            )?
            .with_limits(config.limits)
            .with_sharing(config.sharing, Some(config.data.join("share-logs")))?,
        );
        if !config.plan.is_empty() {
            app.submit(&config.plan)?;
        }
        app::register_metrics();
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
        let (reflection_v1, reflection_v1alpha) = reflection_services()?;

        // Per call, the request timeout is applied by the services (uploads are bounded by
        // their idle timeout instead); here: dead or unresponsive clients lose their connection,
        // and no connection runs more than its share of calls at once.
        let limits = config.limits;
        let mut builder = Server::builder()
            .http2_keepalive_interval(Some(limits.keepalive_interval))
            .http2_keepalive_timeout(Some(limits.keepalive_timeout))
            .concurrency_limit_per_connection(limits.calls_per_connection.max(1));
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
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
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

/// The server reflection service in both protocol versions, `grpc.reflection.v1` and
/// `grpc.reflection.v1alpha`: the standard is v1, but Python's grpcio-reflection, older grpcurl
/// releases and many GUI clients speak only v1alpha (and get UNIMPLEMENTED from a v1-only
/// server).
/// Both describe the same files: xqtb's, the health service's, and both reflection protocols, so
/// a client listing services through either version sees every service the server answers.
fn reflection_services() -> Result<(
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    tonic_reflection::server::v1alpha::ServerReflectionServer<
        impl tonic_reflection::server::v1alpha::ServerReflection,
    >,
)> {
    use tonic_reflection::pb::{v1, v1alpha};
    // The builder is consumed by `build_*` and is not `Clone`: one per version. Each adds its own
    // protocol's descriptors; the other version's are registered here.
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = builder()
        .register_encoded_file_descriptor_set(v1alpha::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let v1alpha = builder()
        .register_encoded_file_descriptor_set(v1::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    Ok((v1, v1alpha))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_reflection::pb::{v1, v1alpha};

    /// Every service the coordinator answers, as reflection must list it.
    const SERVICES: [&str; 5] = [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "xqtb.v1.Jobs",
        "xqtb.v1.Tablebase",
    ];

    async fn start(dir: &std::path::Path) -> Coordinator {
        Coordinator::start(CoordinatorConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            data: dir.to_path_buf(),
            access: Access::default(),
            plan: Vec::new(),
            scheduler: SchedulerConfig::default(),
            default_rules: RuleSet::default(),
            tls: None,
            limits: Limits::default(),
            sharing: app::Sharing::default(),
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn reflection_lists_every_service_in_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        let c = start(dir.path()).await;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", c.addr))
            .unwrap()
            .connect()
            .await
            .unwrap();

        // The two versions' generated types differ only in their module: one check for both.
        macro_rules! check_reflection {
            ($v:ident, $name:literal) => {{
                let mut client =
                    $v::server_reflection_client::ServerReflectionClient::new(channel.clone());
                let ask = |m| $v::ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(m),
                };
                use $v::server_reflection_request::MessageRequest as Q;
                let requests = [
                    ask(Q::ListServices(String::new())),
                    ask(Q::FileContainingSymbol("xqtb.v1.Tablebase".into())),
                ];
                let mut answers = client
                    .server_reflection_info(tokio_stream::iter(requests))
                    .await
                    .unwrap()
                    .into_inner();
                use $v::server_reflection_response::MessageResponse as R;
                match answers.message().await.unwrap().unwrap().message_response {
                    Some(R::ListServicesResponse(l)) => {
                        let mut names: Vec<_> = l.service.into_iter().map(|s| s.name).collect();
                        names.sort();
                        assert_eq!(names, SERVICES, $name);
                    }
                    other => panic!("{}: not a service list: {other:?}", $name),
                }
                match answers.message().await.unwrap().unwrap().message_response {
                    Some(R::FileDescriptorResponse(f)) => {
                        assert!(!f.file_descriptor_proto.is_empty())
                    }
                    other => panic!("{}: no descriptor of xqtb.v1.Tablebase: {other:?}", $name),
                }
            }};
        }
        check_reflection!(v1, "v1");
        check_reflection!(v1alpha, "v1alpha");
        c.stop().await.unwrap();
    }
}
