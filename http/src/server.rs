//! The axum router and server. Every request passes one guard that answers CORS
//! preflights, refuses other methods than GET and HEAD (POST for the probe batch), bounds the
//! URI's length, and for the API checks the read token, applies the concurrency limit (503 with
//! `Retry-After` beyond it) and the request timeout, which covers reading the request's body
//! (a search may take [`app::MAX_SEARCH_TIME`] longer). Probes and searches run on the blocking
//! pool, at most [`HttpConfig::probe_threads`] at a time; the rest wait their turn within the
//! timeout. A search whose request times out or whose client goes away is cancelled. A
//! connection whose client takes longer than the timeout to send a request's headers, or stays
//! idle longer, is closed, so a slow or stalled client holds at most a socket, never a thread.

use crate::assets::ASSETS;
use crate::backend::{ApiError, Backend};
use anyhow::{Context, Result};
use app::{CancelOnDrop, MAX_PROBE_BATCH, MAX_SEARCH_TIME, SearchLimits};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use percent_encoding::percent_decode_str;
use probe::ProbeReport;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use xqtb_core::RuleSet;

/// The path of the probe batch, the one endpoint that takes a body (`POST`, JSON).
pub const BATCH_PATH: &str = "/api/v1/probe-batch";

/// The path of the mate search, the one endpoint whose requests may run longer than the
/// request timeout: by up to [`MAX_SEARCH_TIME`], the longest a search runs.
pub const SEARCH_PATH: &str = "/api/v1/search";

/// Longest body of a probe batch: [`MAX_PROBE_BATCH`] FENs of a generous 256 bytes each (a FEN
/// is under 100 bytes).
pub const MAX_BATCH_BODY_BYTES: usize = MAX_PROBE_BATCH * 256;

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
    /// Longest time an API request may take, waiting and reading its body included; then 503
    /// (default 10 s); a search may take [`MAX_SEARCH_TIME`] longer. Also the longest a client
    /// may take to send a request's headers, or leave its connection idle, before the
    /// connection is closed.
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
        let mut r = json(
            self.status,
            &Body {
                error: &self.message,
            },
        );
        // Every 503 is worth trying again: the server was busy or slow, not the request wrong.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
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
        .route(BATCH_PATH, post(probe_batch))
        .route("/api/v1/mainline", get(mainline))
        .route(SEARCH_PATH, get(search))
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
            let timeout = if req.uri().path() == SEARCH_PATH {
                s.config.timeout + MAX_SEARCH_TIME
            } else {
                s.config.timeout
            };
            let r = match tokio::time::timeout(timeout, next.run(req)).await {
                Ok(r) => r,
                Err(_) => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "the request took longer than {} s; try again later",
                        timeout.as_secs_f64()
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
                    (
                        header::ACCESS_CONTROL_ALLOW_METHODS,
                        "GET, HEAD, POST, OPTIONS",
                    ),
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
    let (allowed, allow, wanted) = if req.uri().path() == BATCH_PATH {
        (method == Method::POST, "POST, OPTIONS", "POST")
    } else {
        (
            method == Method::GET || method == Method::HEAD,
            "GET, HEAD, OPTIONS",
            "GET",
        )
    };
    if !allowed {
        let mut r = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {method} is not allowed; use {wanted}"),
        )
        .into_response();
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
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

/// The decoded values of the parameters `names` of a query, in their order; other parameters
/// are ignored, and one of `names` given twice is refused.
fn params<const N: usize>(
    query: Option<&str>,
    names: [&str; N],
) -> Result<[Option<String>; N], ApiError> {
    let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = decode(k)?;
        let Some(i) = names.iter().position(|n| *n == k) else {
            continue;
        };
        if values[i].is_some() {
            return Err(ApiError::bad_request(format!(
                "parameter '{k}' is given more than once"
            )));
        }
        values[i] = Some(decode(v)?);
    }
    Ok(values)
}

impl PositionQuery {
    /// Parses `fen=...&rules=...` (other parameters are ignored; `_` in the FEN stands for a
    /// space, as in some sites' links; an empty or absent `rules` is the default rule set).
    fn parse(query: Option<&str>, default_rules: RuleSet) -> Result<PositionQuery, ApiError> {
        let [fen, rules] = params(query, ["fen", "rules"])?;
        PositionQuery::of(fen, rules, default_rules)
    }

    /// The position and rule set of a query's `fen` and `rules` values.
    fn of(
        fen: Option<String>,
        rules: Option<String>,
        default_rules: RuleSet,
    ) -> Result<PositionQuery, ApiError> {
        let fen = fen.ok_or_else(|| {
            ApiError::bad_request(
                "missing parameter 'fen' (a position in FEN, e.g. fen=4k4/9/9/9/9/9/9/9/4R4/3K5%20w)",
            )
        })?;
        let fen = fen.replace('_', " ").trim().to_string();
        if fen.is_empty() {
            return Err(ApiError::bad_request("parameter 'fen' is empty"));
        }
        let rules = parse_rules(rules.as_deref(), default_rules)?;
        Ok(PositionQuery { fen, rules })
    }
}

/// The parameters of a search request: the position and what the search may spend.
struct SearchQuery {
    position: PositionQuery,
    limits: SearchLimits,
}

impl SearchQuery {
    /// Parses `fen=...&rules=...&max_plies=...&nodes=...&time_ms=...&threads=...&hash_mib=...`
    /// (the position as [`PositionQuery::parse`] reads it; every limit optional, a whole
    /// number, capped by the server later).
    fn parse(query: Option<&str>, default_rules: RuleSet) -> Result<SearchQuery, ApiError> {
        let [fen, rules, max_plies, nodes, time_ms, threads, hash_mib] = params(
            query,
            [
                "fen",
                "rules",
                "max_plies",
                "nodes",
                "time_ms",
                "threads",
                "hash_mib",
            ],
        )?;
        let position = PositionQuery::of(fen, rules, default_rules)?;
        let limits = SearchLimits {
            max_plies: number(
                "max_plies",
                max_plies,
                "the longest win looked for, in plies",
            )?,
            nodes: number("nodes", nodes, "the most positions expanded")?,
            time: number(
                "time_ms",
                time_ms,
                "the longest time spent, in milliseconds",
            )?
            .map(Duration::from_millis),
            threads: number("threads", threads, "threads searching at once")?,
            hash_mib: number("hash_mib", hash_mib, "MiB of the transposition table")?,
        };
        Ok(SearchQuery { position, limits })
    }
}

/// The value of the whole-number parameter `name` (`what` says what it counts), absent when
/// absent or empty. A number too large for 64 bits stands for the largest: the server caps it
/// anyway.
fn number(name: &str, value: Option<String>, what: &str) -> Result<Option<u64>, ApiError> {
    let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<u64>() {
        Ok(n) => Ok(Some(n)),
        Err(_) if v.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(u64::MAX)),
        Err(_) => Err(ApiError::bad_request(format!(
            "parameter '{name}' must be a whole number ({what}), e.g. {name}=10; got '{v}'"
        ))),
    }
}

/// A rule set named in a request; empty or absent means `default_rules`.
fn parse_rules(name: Option<&str>, default_rules: RuleSet) -> Result<RuleSet, ApiError> {
    match name.map(str::trim) {
        None | Some("") => Ok(default_rules),
        Some(name) => name
            .parse()
            .map_err(|e: xqtb_core::UnknownRuleSet| ApiError::bad_request(e.to_string())),
    }
}

/// The body of `POST /api/v1/probe-batch`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRequest {
    fens: Vec<String>,
    #[serde(default)]
    rules: Option<String>,
}

impl BatchRequest {
    /// Parses and checks a batch's body: JSON, at most [`MAX_PROBE_BATCH`] positions.
    fn parse(body: &[u8]) -> Result<BatchRequest, ApiError> {
        let batch: BatchRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body is not a probe batch ({e}); send {{\"fens\": [FEN, ...], \"rules\": \
                 \"asian\"}} (rules optional)"
            ))
        })?;
        if batch.fens.len() > MAX_PROBE_BATCH {
            return Err(ApiError::bad_request(format!(
                "a probe batch holds at most {MAX_PROBE_BATCH} positions; this one has {} \
                 (split it)",
                batch.fens.len()
            )));
        }
        Ok(batch)
    }
}

/// One answer of a probe batch: the probe report, or the position and why it has none.
#[derive(Serialize)]
#[serde(untagged)]
enum BatchAnswer {
    Ok(Box<ProbeReport>),
    Err { fen: String, error: String },
}

/// Runs blocking backend work on the blocking pool, at most `probe_threads` at a time, and
/// serialises its answer there too (a batch's answer is megabytes of JSON).
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
        match f(&*backend) {
            Ok(v) => json(StatusCode::OK, &v),
            Err(e) => e.into_response(),
        }
    })
    .await;
    match result {
        Ok(response) => response,
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

async fn probe_batch(State(s): State<Arc<Shared>>, body: axum::body::Body) -> Response {
    // The body is read here, within the guard's timeout: a client that sends it slowly is
    // answered 503 when the timeout runs out.
    let body = match axum::body::to_bytes(body, MAX_BATCH_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the body is longer than {MAX_BATCH_BODY_BYTES} bytes \
                     ({MAX_PROBE_BATCH} positions at most)"
                ),
            )
            .into_response();
        }
    };
    let batch = match BatchRequest::parse(&body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let rules = match parse_rules(batch.rules.as_deref(), s.backend.default_rules()) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    #[derive(Serialize)]
    struct Answers {
        results: Vec<BatchAnswer>,
    }
    let fens = batch.fens;
    blocking(&s, move |b| {
        let results = b.probe_batch(rules, &fens)?;
        Ok(Answers {
            results: fens
                .into_iter()
                .zip(results)
                .map(|(fen, r)| match r {
                    Ok(report) => BatchAnswer::Ok(Box::new(report)),
                    Err(e) => BatchAnswer::Err {
                        fen,
                        error: e.message,
                    },
                })
                .collect(),
        })
    })
    .await
}

async fn mainline(State(s): State<Arc<Shared>>, uri: Uri) -> Response {
    match PositionQuery::parse(uri.query(), s.backend.default_rules()) {
        Ok(q) => blocking(&s, move |b| b.mainline(q.rules, &q.fen)).await,
        Err(e) => e.into_response(),
    }
}

/// Runs the search on the blocking pool; the search is cancelled when this future is dropped
/// (the client went away, or the guard's timeout ran out) before it answers.
async fn search(State(s): State<Arc<Shared>>, uri: Uri) -> Response {
    let q = match SearchQuery::parse(uri.query(), s.backend.default_rules()) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let cancel = CancelOnDrop(Arc::new(search::Control::new()));
    let control = Arc::clone(&cancel.0);
    let (position, limits) = (q.position, q.limits);
    blocking(&s, move |b| {
        b.search(position.rules, &position.fen, &limits, &control)
    })
    .await
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
        let app = router(backend, &config);
        let (shutdown, rx) = watch::channel(false);
        let task = tokio::spawn(serve(listener, app, config.timeout, rx));
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

/// Resolves once `shutdown` turns true or its sender is gone (the borrow guard never outlives
/// this function, so the futures awaiting it stay `Send`).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await.map(|_| ());
}

/// Accepts connections until `shutdown`, then lets the requests in progress finish. Each
/// connection is served over HTTP/1.1 with a header timeout: a client that takes longer than
/// `header_timeout` to send a request's headers, or leaves the connection idle that long between
/// requests, is disconnected (axum's own server has no such timeout, so a client trickling
/// headers would keep its connection for ever).
async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    // Every connection holds a receiver; the sender sees them all dropped once they are done.
    let (open_tx, open_rx) = watch::channel(());
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors and the like: wait for connections to close
                    // rather than spin, and keep serving.
                    tracing::warn!("cannot accept an HTTP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stopped(&mut shutdown) => break,
        };
        // Small request/response exchanges must not wait for delayed ACKs (Nagle).
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let (mut stop, open) = (shutdown.clone(), open_rx.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(open);
        });
    }
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
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

    #[test]
    fn search_queries_parse_their_limits_and_name_their_faults() {
        let q = SearchQuery::parse(
            Some("fen=4k4%2F9_w&nodes=1000000000000&time_ms=250&threads=100&x=1"),
            RuleSet::Asian,
        )
        .unwrap();
        assert_eq!(q.position.fen, "4k4/9 w");
        assert_eq!(
            q.limits,
            SearchLimits {
                max_plies: None,
                nodes: Some(1_000_000_000_000),
                time: Some(Duration::from_millis(250)),
                threads: Some(100),
                hash_mib: None,
            }
        );
        let q = SearchQuery::parse(
            Some("fen=a&max_plies=99999999999999999999999&hash_mib="),
            RuleSet::Asian,
        )
        .unwrap();
        assert_eq!(
            (q.limits.max_plies, q.limits.hash_mib),
            (Some(u64::MAX), None)
        );
        let e = |q| {
            SearchQuery::parse(Some(q), RuleSet::Asian)
                .err()
                .unwrap()
                .message
        };
        assert!(e("nodes=5").contains("missing parameter 'fen'"));
        let m = e("fen=a&time_ms=1.5");
        assert!(
            m.contains("parameter 'time_ms' must be a whole number") && m.contains("'1.5'"),
            "{m}"
        );
        assert!(e("fen=a&threads=-1").contains("'threads'"));
        assert!(e("fen=a&nodes=1&nodes=2").contains("more than once"));
    }

    #[test]
    fn batches_parse_and_name_their_maximum() {
        let b = BatchRequest::parse(br#"{"fens": ["a", "b"], "rules": "asian"}"#).unwrap();
        assert_eq!((b.fens.len(), b.rules.as_deref()), (2, Some("asian")));
        assert!(
            BatchRequest::parse(br#"{"fens": []}"#)
                .unwrap()
                .rules
                .is_none()
        );
        let e = |body: &[u8]| BatchRequest::parse(body).err().unwrap().message;
        assert!(e(b"[1]").contains("not a probe batch"), "{}", e(b"[1]"));
        assert!(e(br#"{"fens": ["a"], "fen": "b"}"#).contains("unknown field"));
        let fens = vec!["x"; MAX_PROBE_BATCH + 1];
        let body = serde_json::to_vec(&serde_json::json!({ "fens": fens })).unwrap();
        assert!(e(&body).contains("at most 1000 positions; this one has 1001"));
        let fens = vec!["x"; MAX_PROBE_BATCH];
        let body = serde_json::to_vec(&serde_json::json!({ "fens": fens })).unwrap();
        assert!(BatchRequest::parse(&body).is_ok());
    }
}
