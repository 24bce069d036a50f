//! `xqtb serve`: the HTTP JSON API and the web page over a local directory of tables (a store or
//! shard files), and the `--http-*` flags the coordinator and `generate` share with it.

use anyhow::{Result, bail};
use app::{Access, App};
use clap::Args;
use probe::Tablebase;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use storage_format::{ShardDir, SledStore, TableStore};
use xqtb_core::RuleSet;
use xqtb_http::{Backend, CoordinatorBackend, HttpConfig, HttpServer, LocalBackend};

/// The HTTP server's flags.
#[derive(Args, Clone, Debug)]
pub struct HttpArgs {
    /// Serve the HTTP JSON API (/api/v1/...) and the web page (/) on this address, e.g.
    /// 127.0.0.1:8080.
    #[arg(long)]
    pub http_listen: Option<SocketAddr>,
    /// HTTP API requests in progress at once; more are refused with 503 and Retry-After.
    #[arg(long, default_value_t = 1024)]
    pub http_max_in_flight: usize,
    /// Longest time an HTTP API request may take, waiting for a probe thread included (then 503);
    /// a mate search may take 10 s longer.
    #[arg(long, default_value_t = 10)]
    pub http_timeout_secs: u64,
}

impl HttpArgs {
    fn config(&self, listen: SocketAddr) -> HttpConfig {
        HttpConfig {
            listen,
            max_in_flight: self.http_max_in_flight.max(1),
            timeout: Duration::from_secs(self.http_timeout_secs.max(1)),
            ..HttpConfig::default()
        }
    }

    /// Starts the HTTP server over a coordinator's application layer, when `--http-listen` is
    /// given.
    pub async fn start_for(&self, app: &Arc<App>) -> Result<Option<HttpServer>> {
        let Some(listen) = self.http_listen else {
            return Ok(None);
        };
        let backend: Arc<dyn Backend> = Arc::new(CoordinatorBackend(Arc::clone(app)));
        let server = HttpServer::start(self.config(listen), backend).await?;
        eprintln!("HTTP API and web page on http://{}/", server.addr);
        Ok(Some(server))
    }
}

/// Arguments of `xqtb serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Directory of the table store (default ./xqtb-data).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Serve the shard files of this directory in place instead of a store.
    #[arg(long, conflicts_with = "data")]
    shards: Option<PathBuf>,
    /// Rule set of requests that name none.
    #[arg(long, default_value = "asian")]
    rules: RuleSet,
    /// Token the API requires with --token-for-reads (`Authorization: Bearer TOKEN`).
    #[arg(long, env = "XQTB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Require the token for every API request (the page and its files stay open).
    #[arg(long)]
    token_for_reads: bool,
    #[command(flatten)]
    http: HttpArgs,
}

/// `xqtb serve` (on 127.0.0.1:8080 unless `--http-listen` says otherwise).
pub fn serve(args: ServeArgs) -> Result<()> {
    if args.token_for_reads && args.token.is_none() {
        bail!("--token-for-reads needs a token (--token or XQTB_TOKEN)");
    }
    let store: Arc<dyn TableStore> = match &args.shards {
        Some(dir) => {
            if !dir.is_dir() {
                bail!("shard directory {} does not exist", dir.display());
            }
            Arc::new(ShardDir::open(dir)?)
        }
        None => {
            let dir = args
                .data
                .clone()
                .unwrap_or_else(|| crate::cli_tables::DEFAULT_DATA.into());
            if !dir.is_dir() {
                bail!(
                    "no table store at {} (generate some tables with `xqtb generate SIGNATURE --data {}`, or give --data DIR or --shards DIR)",
                    dir.display(),
                    dir.display()
                );
            }
            Arc::new(SledStore::open(&dir)?)
        }
    };
    let tables = store.list_tables()?.len();
    let source = store.describe();
    let access = Access {
        token: args.token.clone(),
        token_for_reads: args.token_for_reads,
    };
    let backend: Arc<dyn Backend> =
        Arc::new(LocalBackend::new(Tablebase::new(store), access, args.rules));
    let listen = args
        .http
        .http_listen
        .unwrap_or_else(|| HttpConfig::default().listen);
    let config = args.http.config(listen);
    crate::runtime::runtime()?.block_on(async {
        let server = HttpServer::start(config, backend).await?;
        eprintln!(
            "serving {tables} tables from {source} on http://{}/ (Ctrl-C stops)",
            server.addr
        );
        crate::runtime::termination().await;
        eprintln!("shutting down");
        server.stop().await
    })
}
