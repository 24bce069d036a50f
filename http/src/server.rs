//! The axum router and server. Every request passes one guard that answers CORS
//! preflights, refuses other methods than GET and HEAD, bounds the URI's length, and for the API
//! checks the read token, applies the concurrency limit (503 with `Retry-After` beyond it) and
//! the request timeout. Probes run on the blocking pool, at most
//! [`HttpConfig::probe_threads`] at a time; the rest wait their turn within the timeout.

use crate::assets::ASSETS;
use crate::backend::{ApiError, Backend};
use anyhow::{Context, Result};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use percent_encoding::percent_decode_str;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use xqtb_core::RuleSet;

/// How to run an HTTP server.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// API requests served at once; more get 503 at once (default 1024, so that a burst of a
    /// few hundred concurrent requests is queued and answered, not refused).
    pub max_in_flight: usize,
    /// Probes computed at once on the blocking pool (default: twice the cores, at least 4).
    pub probe_threads: usize,
    /// Longest time an API request may take, waiting included; then 503 (default 10 s).
    pub timeout: Duration,
    /// Longest request URI (path and query) in bytes; longer gets 414 (default 4096).
    pub max_uri_bytes: usize,
}

impl Default for HttpConfig {
    fn default() -> HttpConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        HttpConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_in_flight: 1024,
            probe_threads: (2 * cores).max(4),
            timeout: Duration::from_secs(10),
            max_uri_bytes: 4096,
        }
    }
}

struct Shared {
    backend: Arc<dyn Backend>,
    config: HttpConfig,
    in_flight: Arc<Semaphore>,
    probe_slots: Arc<Semaphore>,
    started: Instant,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body<'a> {
            error: &'a str,
        }
        json(
            self.status,
            &Body {
                error: &self.message,
            },
        )
    }
}

/// A JSON response.
fn json(status: StatusCode, v: &impl Serialize) -> Response {
    match serde_json::to_vec(v) {
        Ok(body) => (
            status,
            [
                (header::CONTENT_TYPE, "application/json; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot serialise the answer: {e}"),
        )
            .into_response(),
    }
}

/// The router: the API, the page and its assets, JSON 404s for anything else.
pub fn router(backend: Arc<dyn Backend>, config: &HttpConfig) -> Router {
    let shared = Arc::new(Shared {
        backend,
        config: config.clone(),
        in_flight: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
        probe_slots: Arc::new(Semaphore::new(config.probe_threads.max(1))),
        started: Instant::now(),
    });
    let mut router = Router::new()
        .route("/api/v1/probe", get(probe))
        .route("/api/v1/mainline", get(mainline))
        .route("/api/v1/tables", get(tables))
        .route("/api/v1/status", get(status));
    for asset in ASSETS {
        router = router.route(
            asset.path,
            get(move || async move {
                (
                    [
                        (header::CONTENT_TYPE, asset.content_type),
                        (header::CACHE_CONTROL, "no-cache"),
                        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                    ],
                    asset.body,
                )
            }),
        );
    }
    router
        .fallback(|uri: Uri| async move {
            ApiError::not_found(format!("no such endpoint or file: {}", uri.path()))
        })
        .layer(from_fn_with_state(Arc::clone(&shared), guard))
        .with_state(shared)
}

/// The guard every request passes; adds `Access-Control-Allow-Origin: *` to every answer.
async fn guard(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let mut response = match check(&s, &req) {
        Verdict::Refused(r) => r,
        Verdict::Open => next.run(req).await,
        Verdict::Api(permit) => {
            let r = match tokio::time::timeout(s.config.timeout, next.run(req)).await {
                Ok(r) => r,
                Err(_) => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "the request took longer than {} s; try again later",
                        s.config.timeout.as_secs_f64()
                    ),
                )
                .into_response(),
            };
            drop(permit);
            r
        }
    };
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// What the guard decides about a request.
enum Verdict {
    /// Refused with this answer.
    Refused(Response),
    /// A file of the page (no token, no limit).
    Open,
    /// An API request, holding a concurrency permit.
    Api(tokio::sync::OwnedSemaphorePermit),
}

/// Refuses what the guard refuses; an API request that passes holds a concurrency permit.
fn check(s: &Shared, req: &Request) -> Verdict {
    let method = req.method();
    if method == Method::OPTIONS {
        return Verdict::Refused(
            (
                StatusCode::NO_CONTENT,
                [
                    (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, HEAD, OPTIONS"),
                    (
                        header::ACCESS_CONTROL_ALLOW_HEADERS,
                        "Authorization, Content-Type, Accept",
                    ),
                    (header::ACCESS_CONTROL_MAX_AGE, "86400"),
                ],
            )
                .into_response(),
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {method} is not allowed; use GET"),
        )
        .into_response();
        r.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        return Verdict::Refused(r);
    }
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > s.config.max_uri_bytes {
        return Verdict::Refused(
            ApiError::new(
                StatusCode::URI_TOO_LONG,
                format!(
                    "the request URI has {uri_len} bytes; at most {} are accepted",
                    s.config.max_uri_bytes
                ),
            )
            .into_response(),
        );
    }
    if !req.uri().path().starts_with("/api/") {
        return Verdict::Open;
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if let Err(e) = s.backend.access().check(presented, false) {
        let mut r = ApiError::new(StatusCode::UNAUTHORIZED, e.to_string()).into_response();
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Verdict::Refused(r);
    }
    match Arc::clone(&s.in_flight).try_acquire_owned() {
        Ok(permit) => Verdict::Api(permit),
        Err(_) => {
            let mut r = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server is busy ({} requests in progress); try again in a moment",
                    s.config.max_in_flight
                ),
            )
            .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Verdict::Refused(r)
        }
    }
}

/// The parameters of a probe or main line request.
struct PositionQuery {
    fen: String,
    rules: RuleSet,
}

fn decode(s: &str) -> Result<String, ApiError> {
    let s = s.replace('+', " ");
    percent_decode_str(&s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| ApiError::bad_request("a query parameter is not UTF-8 once percent-decoded"))
}

impl PositionQuery {
    /// Parses `fen=...&rules=...` (other parameters are ignored; `_` in the FEN stands for a
    /// space, as in some sites' links; an empty or absent `rules` is the default rule set).
    fn parse(query: Option<&str>, default_rules: RuleSet) -> Result<PositionQuery, ApiError> {
        let (mut fen, mut rules) = (None, None);
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match decode(k)?.as_str() {
                "fen" => &mut fen,
                "rules" => &mut rules,
                _ => continue,
            };
            if slot.is_some() {
                return Err(ApiError::bad_request(format!(
                    "parameter '{}' is given more than once",
                    decode(k)?
                )));
            }
            *slot = Some(decode(v)?);
        }
        let fen = fen.ok_or_else(|| {
            ApiError::bad_request(
                "missing parameter 'fen' (a position in FEN, e.g. fen=4k4/9/9/9/9/9/9/9/4R4/3K5%20w)",
            )
        })?;
        let fen = fen.replace('_', " ").trim().to_string();
        if fen.is_empty() {
            return Err(ApiError::bad_request("parameter 'fen' is empty"));
        }
        let rules = match rules.as_deref().map(str::trim) {
            None | Some("") => default_rules,
            Some(name) => name
                .parse()
                .map_err(|e: xqtb_core::UnknownRuleSet| ApiError::bad_request(e.to_string()))?,
        };
        Ok(PositionQuery { fen, rules })
    }
}

/// Runs blocking backend work on the blocking pool, at most `probe_threads` at a time.
async fn blocking<T: Serialize + Send + 'static>(
    s: &Shared,
    f: impl FnOnce(&dyn Backend) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    let permit = match Arc::clone(&s.probe_slots).acquire_owned().await {
        Ok(p) => p,
        Err(_) => return ApiError::internal("the server is shutting down").into_response(),
    };
    let backend = Arc::clone(&s.backend);
    let result = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        f(&*backend)
    })
    .await;
    match result {
        Ok(Ok(v)) => json(StatusCode::OK, &v),
        Ok(Err(e)) => e.into_response(),
        Err(e) => {
            tracing::error!("an HTTP request failed: {e}");
            ApiError::internal("the request failed inside the server").into_response()
        }
    }
}

async fn probe(State(s): State<Arc<Shared>>, uri: Uri) -> Response {
    match PositionQuery::parse(uri.query(), s.backend.default_rules()) {
        Ok(q) => blocking(&s, move |b| b.probe(q.rules, &q.fen)).await,
        Err(e) => e.into_response(),
    }
}

async fn mainline(State(s): State<Arc<Shared>>, uri: Uri) -> Response {
    match PositionQuery::parse(uri.query(), s.backend.default_rules()) {
        Ok(q) => blocking(&s, move |b| b.mainline(q.rules, &q.fen)).await,
        Err(e) => e.into_response(),
    }
}

async fn tables(State(s): State<Arc<Shared>>) -> Response {
    #[derive(Serialize)]
    struct Tables {
        default_rules: &'static str,
        tables: Vec<crate::backend::TableSummary>,
    }
    let default_rules = s.backend.default_rules().name();
    blocking(&s, move |b| {
        Ok(Tables {
            default_rules,
            tables: b.tables()?,
        })
    })
    .await
}

async fn status(State(s): State<Arc<Shared>>) -> Response {
    let uptime = s.started.elapsed();
    blocking(&s, move |b| b.status(uptime)).await
}

/// A running HTTP server.
pub struct HttpServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// Binds `config.listen` and serves `backend` in the background.
    pub async fn start(config: HttpConfig, backend: Arc<dyn Backend>) -> Result<HttpServer> {
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {} for HTTP", config.listen))?;
        let addr = listener.local_addr()?;
        // Small request/response exchanges must not wait for delayed ACKs (Nagle).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = router(backend, &config);
        let (shutdown, mut rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.wait_for(|stop| *stop).await;
                })
                .await
        });
        tracing::info!(%addr, "HTTP API and web page listening");
        Ok(HttpServer {
            addr,
            shutdown,
            task,
        })
    }

    /// Stops accepting, lets requests in progress finish, and waits for the server to end.
    pub async fn stop(self) -> Result<()> {
        let _ = self.shutdown.send(true);
        self.task.await??;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_with_defaults_and_name_their_faults() {
        let q = PositionQuery::parse(Some("fen=4k4%2F9_w&x=1"), RuleSet::Asian).unwrap();
        assert_eq!((q.fen.as_str(), q.rules), ("4k4/9 w", RuleSet::Asian));
        let q =
            PositionQuery::parse(Some("rules=cycles-are-draws&fen=a+b"), RuleSet::Asian).unwrap();
        assert_eq!((q.fen.as_str(), q.rules), ("a b", RuleSet::CyclesAreDraws));
        let q = PositionQuery::parse(Some("fen=a&rules="), RuleSet::Asian).unwrap();
        assert_eq!(q.rules, RuleSet::Asian);
        let e = |q| {
            PositionQuery::parse(Some(q), RuleSet::Asian)
                .err()
                .unwrap()
                .message
        };
        assert!(e("rules=asian").contains("missing parameter 'fen'"));
        assert!(e("fen=").contains("empty"));
        assert!(e("fen=a&rules=chess").contains("unknown rule set 'chess'"));
        assert!(e("fen=a&fen=b").contains("more than once"));
        assert!(e("fen=%FF").contains("UTF-8"));
    }
}
