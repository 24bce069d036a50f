//! The limits that keep one client from holding a server, each tested against servers started
//! in this process (the library the binary runs): uploads longer than their table's shard can
//! be, stalled uploads and downloads, probe batches over the maximum (gRPC and HTTP), the request deadline,
//! clients that send HTTP headers or bodies slowly or idle on a connection, and blocking work
//! (probing, reading shards) kept off the async executor threads.

mod common;

use common::positions;

use app::scheduler::SchedulerConfig;
use app::{Access, Limits, MAX_PROBE_BATCH, max_shard_bytes};
use coordinator::{Coordinator, CoordinatorConfig};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use proto::v1::jobs_client::JobsClient;
use proto::v1::tablebase_client::TablebaseClient;
use proto::v1::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage_format::store::{SledStore, TableStore};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use xqtb_core::{JobKey, RuleSet, Signature, TableId};
use xqtb_http::{CoordinatorBackend, HttpConfig, HttpServer, LocalBackend};

const RULES: RuleSet = RuleSet::Asian;

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("xqtb-limits-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn table(sig: &str) -> TableId {
    TableId::new(RULES, sig.parse().unwrap())
}

/// The shard of `sig` as a worker uploads it.
fn shard_of(sig: &str) -> Vec<u8> {
    let s: Signature = sig.parse().unwrap();
    let tables = solver::solve_closure_in_memory(&[s], RULES, |_, _| {}).unwrap();
    let t = tables.get(&table(sig)).unwrap();
    storage_format::shard::write_shard(&storage_format::codec::encode_table(t))
}

/// Solves `sig` and its closure into a store in `dir` (closed again before a server opens it:
/// sled allows one process, and one handle, per directory).
fn solved_store(dir: &Path, sig: &str) {
    let s: Signature = sig.parse().unwrap();
    let store = SledStore::open(dir).unwrap();
    solver::solve_closure_in_memory(&[s], RULES, |t, _| {
        store
            .put_table(&storage_format::codec::encode_table(t))
            .unwrap();
    })
    .unwrap();
}

async fn start(data: &Path, plan: &[&str], limits: Limits) -> Coordinator {
    Coordinator::start(CoordinatorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data: data.to_path_buf(),
        access: Access::default(),
        plan: plan.iter().map(|s| table(s)).collect(),
        scheduler: SchedulerConfig::default(),
        default_rules: RULES,
        tls: None,
        limits,
        sharing: app::Sharing::default(),
    })
    .await
    .unwrap()
}

/// A coordinator with `limits` serving a store in which `sig` and its closure are solved (the
/// directory lives as long as the returned guard).
async fn serving(name: &str, sig: &str, limits: Limits) -> (TempDir, Coordinator) {
    let dir = TempDir::new(name);
    solved_store(&dir.0, sig);
    let c = start(&dir.0, &[], limits).await;
    (dir, c)
}

async fn channel(c: &Coordinator) -> Channel {
    Channel::from_shared(format!("http://{}", c.addr))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// Registers a worker and leases the one ready job.
async fn lease(jobs: &mut JobsClient<Channel>) -> (String, Job) {
    let id = jobs
        .register(RegisterRequest {
            name: "t".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .worker_id;
    let job = jobs
        .lease(LeaseRequest {
            worker_id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .expect("a job is ready");
    (id, job)
}

/// The first chunk of an upload for `sig` under `lease`, announcing `total` bytes.
fn first_chunk(lease: &str, sig: &str, total: u64, data: Vec<u8>) -> UploadChunk {
    UploadChunk {
        lease_id: lease.into(),
        key: Some(rpc::job_key(&JobKey::whole(table(sig)))),
        total_bytes: total,
        data,
    }
}

/// Starts an upload whose stream stays open (until the returned sender is dropped) after the
/// chunks given, and returns its answer: a stalled or lying client, as the server sees it.
async fn open_upload(
    jobs: &mut JobsClient<Channel>,
    chunks: Vec<UploadChunk>,
) -> (
    Result<UploadResponse, tonic::Status>,
    mpsc::Sender<UploadChunk>,
) {
    let (tx, rx) = mpsc::channel(16);
    for c in chunks {
        tx.send(c).await.unwrap();
    }
    let r = jobs
        .upload(ReceiverStream::new(rx))
        .await
        .map(|r| r.into_inner());
    (r, tx)
}

async fn job_status(c: &Coordinator) -> JobStatus {
    let mut tb = TablebaseClient::new(channel(c).await);
    let s = tb.status(StatusRequest {}).await.unwrap().into_inner();
    s.jobs.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_longer_than_their_shard_can_be_are_refused_before_they_are_buffered() {
    let dir = TempDir::new("oversized");
    // A long idle timeout: an upload the server waited for would hang far longer than the test.
    let limits = Limits {
        stream_idle_timeout: Duration::from_secs(600),
        ..Limits::default()
    };
    let c = start(&dir.0, &["KRvK"], limits).await;
    let mut jobs = JobsClient::new(channel(&c).await);
    let (id, job) = lease(&mut jobs).await;
    let shard = shard_of("KRvK");
    let bound = max_shard_bytes(3690);
    assert!(
        (shard.len() as u64) < bound,
        "the real shard ({} bytes) fits the bound {bound}",
        shard.len()
    );

    // One byte more than the bound, announced in a first chunk of ten bytes; the client then
    // sends nothing more and keeps the stream open. The answer comes at once.
    let started = Instant::now();
    let (r, open) = open_upload(
        &mut jobs,
        vec![first_chunk(&job.lease_id, "KRvK", bound + 1, vec![0; 10])],
    )
    .await;
    let err = r.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(
        err.message().contains(&format!("at most {bound} bytes"))
            && err.message().contains(&(bound + 1).to_string())
            && err.message().contains(&id),
        "{}",
        err.message()
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "refused before the stream ended"
    );
    drop(open);
    // The job went back to the queue at once.
    let s = job_status(&c).await;
    assert_eq!((s.state.as_str(), s.attempts), ("ready", 1), "{s:?}");
    assert!(s.last_error.contains("at most"), "{s:?}");

    // A stream that runs past what its first chunk announced is refused too.
    let job = jobs
        .lease(LeaseRequest {
            worker_id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    let (r, open) = open_upload(
        &mut jobs,
        vec![
            first_chunk(&job.lease_id, "KRvK", 100, vec![0; 60]),
            UploadChunk {
                data: vec![0; 60],
                ..Default::default()
            },
        ],
    )
    .await;
    let err = r.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(
        err.message().contains("runs past the 100 bytes"),
        "{}",
        err.message()
    );
    drop(open);

    // The real shard, within its bound, is committed.
    let job = jobs
        .lease(LeaseRequest {
            worker_id: id,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(job.attempt, 3);
    let total = shard.len() as u64;
    let chunks: Vec<UploadChunk> = shard
        .chunks(1000)
        .enumerate()
        .map(|(i, d)| match i {
            0 => first_chunk(&job.lease_id, "KRvK", total, d.to_vec()),
            _ => UploadChunk {
                data: d.to_vec(),
                ..Default::default()
            },
        })
        .collect();
    let ok = jobs.upload(tokio_stream::iter(chunks)).await.unwrap();
    assert!(ok.into_inner().accepted);
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_times_out_and_hands_its_job_back() {
    let dir = TempDir::new("stalled");
    let limits = Limits {
        stream_idle_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let c = start(&dir.0, &["KRvK"], limits).await;
    let mut jobs = JobsClient::new(channel(&c).await);
    let (_, job) = lease(&mut jobs).await;
    let shard = shard_of("KRvK");
    // The first half, then nothing, the stream held open.
    let started = Instant::now();
    let (r, open) = open_upload(
        &mut jobs,
        vec![first_chunk(
            &job.lease_id,
            "KRvK",
            shard.len() as u64,
            shard[..shard.len() / 2].to_vec(),
        )],
    )
    .await;
    let waited = started.elapsed();
    let err = r.unwrap_err();
    assert_eq!(err.code(), tonic::Code::DeadlineExceeded, "{err}");
    assert!(
        err.message().contains("stalled") && err.message().contains("--stream-idle-timeout-secs"),
        "{}",
        err.message()
    );
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
    drop(open);
    let s = job_status(&c).await;
    assert_eq!(s.state, "ready", "{s:?}");
    assert!(s.last_error.contains("stalled"), "{s:?}");
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_download_ends_with_deadline_exceeded() {
    // Small chunks, so that KRvKN's shard (over 64 KiB, checked below) is many more than the
    // reader's window, the encoder's buffer and the channel hold between them.
    let limits = Limits {
        stream_idle_timeout: Duration::from_secs(1),
        download_chunk_bytes: 512,
        ..Limits::default()
    };
    let (_dir, c) = serving("stalled-download", "KRvKN", limits).await;
    let whole = common::download(&mut TablebaseClient::new(channel(&c).await), "KRvKN").await;
    assert!(whole.len() > 64 * 1024, "{} bytes", whole.len());

    // A reader with a 4 KiB HTTP/2 window that takes the first chunk and then nothing.
    let slow = Channel::from_shared(format!("http://{}", c.addr))
        .unwrap()
        .initial_stream_window_size(4096)
        .initial_connection_window_size(4096)
        .connect()
        .await
        .unwrap();
    let mut stream = TablebaseClient::new(slow)
        .download_shard(DownloadShardRequest {
            signature: "KRvKN".into(),
            rules: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert_eq!(first.total_bytes, whole.len() as u64);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut got = first.data.len();
    let err = loop {
        match stream.message().await {
            Ok(Some(chunk)) => got += chunk.data.len(),
            Ok(None) => panic!("the stalled download ended without an error after {got} bytes"),
            Err(e) => break e,
        }
    };
    assert!(got < whole.len(), "{got} of {} bytes", whole.len());
    assert_eq!(err.code(), tonic::Code::DeadlineExceeded, "{err}");
    assert!(
        err.message()
            .contains("the download of KRvKN (asian) stalled")
            && err.message().contains("--stream-idle-timeout-secs"),
        "{}",
        err.message()
    );
    // The server is not held: a fresh download right after is whole.
    let again = common::download(&mut TablebaseClient::new(channel(&c).await), "KRvKN").await;
    assert_eq!(again, whole);
    c.stop().await.unwrap();
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

struct Reply {
    status: u16,
    body: serde_json::Value,
}

async fn http(c: &HttpClient, method: &str, url: &str, body: Vec<u8>) -> Reply {
    let req = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = c.request(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        body: serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes))),
    }
}

fn batch_body(fens: &[String]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "fens": fens })).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_batches_have_a_maximum_over_grpc_and_http() {
    let (_dir, c) = serving("batch", "KRvKN", Limits::default()).await;
    let web = HttpServer::start(
        HttpConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..HttpConfig::default()
        },
        Arc::new(CoordinatorBackend(Arc::clone(&c.app))),
    )
    .await
    .unwrap();
    let mut fens = positions("KRvKN", MAX_PROBE_BATCH);
    fens[1] = "not a fen".into();

    let mut tb = TablebaseClient::new(channel(&c).await);
    let full = tb
        .probe_batch(ProbeBatchRequest {
            fens: fens.clone(),
            rules: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(full.results.len(), MAX_PROBE_BATCH);
    assert!(matches!(
        full.results[1].result,
        Some(probe_result::Result::Error(_))
    ));
    let mut over = fens.clone();
    over.push(fens[0].clone());
    let err = tb
        .probe_batch(ProbeBatchRequest {
            fens: over.clone(),
            rules: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message()
            .contains("at most 1000 positions; this one has 1001"),
        "{}",
        err.message()
    );

    let base = format!("http://{}/api/v1/probe-batch", web.addr);
    let hc: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let r = http(&hc, "POST", &base, batch_body(&fens)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let results = r.body["results"].as_array().unwrap();
    assert_eq!(results.len(), MAX_PROBE_BATCH);
    assert_eq!(results[1]["fen"], "not a fen");
    assert!(
        results[1]["error"].as_str().unwrap().contains("FEN"),
        "{}",
        results[1]
    );
    // The same answers as gRPC's, position by position.
    for (h, g) in results.iter().zip(&full.results).skip(2).take(50) {
        let Some(probe_result::Result::Ok(g)) = &g.result else {
            panic!("{g:?}")
        };
        assert_eq!(h["category"], g.category.as_str());
        assert_eq!(h["dtm_plies"].as_u64(), g.dtm_plies.map(u64::from));
    }
    let r = http(&hc, "POST", &base, batch_body(&over)).await;
    assert_eq!(r.status, 400);
    let e = r.body["error"].as_str().unwrap();
    assert!(
        e.contains("at most 1000 positions; this one has 1001"),
        "{e}"
    );
    let r = http(&hc, "GET", &base, Vec::new()).await;
    assert_eq!(r.status, 405);
    assert!(r.body["error"].as_str().unwrap().contains("use POST"));
    let r = http(
        &hc,
        "POST",
        &base,
        vec![b' '; xqtb_http::server::MAX_BATCH_BODY_BYTES + 1],
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.body);
    let r = http(&hc, "POST", &base, b"{\"fen\": 3}".to_vec()).await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("not a probe batch")
    );
    web.stop().await.unwrap();
    c.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_longer_than_the_request_timeout_get_deadline_exceeded() {
    // A thousand probes take well over a millisecond.
    let limits = Limits {
        request_timeout: Duration::from_millis(1),
        ..Limits::default()
    };
    let (_dir, c) = serving("deadline", "KRvKN", limits).await;
    let mut tb = TablebaseClient::new(channel(&c).await);
    let err = tb
        .probe_batch(ProbeBatchRequest {
            fens: positions("KRvKN", MAX_PROBE_BATCH),
            rules: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::DeadlineExceeded, "{err}");
    assert!(
        err.message()
            .contains("request timeout of 0.001 s (--request-timeout-secs)"),
        "{}",
        err.message()
    );
    c.stop().await.unwrap();
}

/// Reads from `s` until the server closes the connection (or `limit` passes); returns what
/// came and how long it took.
fn read_until_closed(s: &mut std::net::TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    (
        String::from_utf8_lossy(&out).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_http_clients_are_cut_off() {
    let dir = TempDir::new("slow-http");
    solved_store(&dir.0, "KRvK");
    let store: Arc<dyn TableStore> = Arc::new(SledStore::open(&dir.0).unwrap());
    let tb = probe::Tablebase::new(store);
    let web = HttpServer::start(
        HttpConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            timeout: Duration::from_secs(1),
            ..HttpConfig::default()
        },
        Arc::new(LocalBackend::new(tb, Access::default(), RULES)),
    )
    .await
    .unwrap();
    let addr = web.addr;
    let cut_off = tokio::task::spawn_blocking(move || {
        // Headers sent half-way, then nothing: the connection is closed after the timeout.
        let mut half = std::net::TcpStream::connect(addr).unwrap();
        write!(half, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n").unwrap();
        let (_, headers_cut) = read_until_closed(&mut half, Duration::from_secs(20));
        // A body sent half-way: the request is answered 503 when its timeout runs out.
        let mut slow = std::net::TcpStream::connect(addr).unwrap();
        write!(
            slow,
            "POST /api/v1/probe-batch HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{{\"fens\""
        )
        .unwrap();
        let (answer, body_cut) = read_until_closed(&mut slow, Duration::from_secs(20));
        // A whole request, answered; then the connection idles and is closed.
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        write!(idle, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (status, idle_cut) = read_until_closed(&mut idle, Duration::from_secs(20));
        (headers_cut, answer, body_cut, status, idle_cut)
    });
    // Meanwhile other clients are served as usual.
    let hc: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    for _ in 0..5 {
        let r = http(
            &hc,
            "GET",
            &format!("http://{addr}/api/v1/status"),
            Vec::new(),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    let (headers_cut, answer, body_cut, status, idle_cut) = cut_off.await.unwrap();
    let within = |d: Duration| d >= Duration::from_millis(900) && d < Duration::from_secs(15);
    assert!(
        within(headers_cut),
        "half-sent headers cut off after {headers_cut:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("longer than 1 s"), "{answer}");
    assert!(
        within(body_cut),
        "half-sent body answered after {body_cut:?}"
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(
        within(idle_cut),
        "idle connection closed after {idle_cut:?}"
    );
    web.stop().await.unwrap();
}

/// Runs `heavy` one after another and returns how long the server's one executor thread was
/// busy meanwhile, and how long they took. A server that did their work (probing, reading and
/// compressing shards) on that thread would be busy about as long as they took; one that hands
/// it to the blocking pool is busy only for the network and the message framing.
async fn executor_share<H>(server: &tokio::runtime::Handle, heavy: Vec<H>) -> (Duration, Duration)
where
    H: std::future::Future<Output = ()>,
{
    let busy = || server.metrics().worker_total_busy_duration(0);
    let (before, started) = (busy(), Instant::now());
    for h in heavy {
        h.await;
    }
    (busy() - before, started.elapsed())
}

#[test]
fn probes_and_shard_reads_run_off_the_executor_threads() {
    let dir = TempDir::new("executor");
    solved_store(&dir.0, "KRvKN");
    // The servers get one executor thread; the clients run on their own runtime.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (c, web) = server_rt.block_on(async {
        let c = start(&dir.0, &[], Limits::default()).await;
        let web = HttpServer::start(
            HttpConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                ..HttpConfig::default()
            },
            Arc::new(CoordinatorBackend(Arc::clone(&c.app))),
        )
        .await
        .unwrap();
        (c, web)
    });
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fens = positions("KRvKN", MAX_PROBE_BATCH);
    let server = server_rt.handle();
    client_rt.block_on(async {
        let ch = channel(&c).await;
        // gRPC: batches of probes, and shard downloads.
        let mut tb = TablebaseClient::new(ch);
        let heavy: Vec<_> = (0..6)
            .map(|i| {
                let (mut tb, fens) = (tb.clone(), fens.clone());
                async move {
                    if i % 3 == 2 {
                        let mut s = tb
                            .download_shard(DownloadShardRequest {
                                signature: "KRvKN".into(),
                                rules: String::new(),
                            })
                            .await
                            .unwrap()
                            .into_inner();
                        while s.message().await.unwrap().is_some() {}
                    } else {
                        let r = tb.probe_batch(ProbeBatchRequest {
                            fens,
                            rules: String::new(),
                        });
                        let results = r.await.unwrap().into_inner().results;
                        assert_eq!(results.len(), MAX_PROBE_BATCH);
                    }
                }
            })
            .collect();
        let (busy, took) = executor_share(server, heavy).await;
        eprintln!("gRPC: the executor was busy {busy:?} of the {took:?} the calls took");
        assert!(
            busy * 2 < took,
            "gRPC: the executor was busy {busy:?} of the {took:?} the calls took"
        );
        // The executor stayed free for other calls.
        tb.status(StatusRequest {}).await.unwrap();

        // HTTP: batches of probes.
        let hc: HttpClient = Client::builder(TokioExecutor::new()).build_http();
        let batch = format!("http://{}/api/v1/probe-batch", web.addr);
        let heavy: Vec<_> = (0..4)
            .map(|_| {
                let (hc, batch, body) = (hc.clone(), batch.clone(), batch_body(&fens));
                async move {
                    let req = hyper::Request::post(batch)
                        .body(Full::new(Bytes::from(body)))
                        .unwrap();
                    let r = hc.request(req).await.unwrap();
                    assert_eq!(r.status(), 200);
                    r.into_body().collect().await.unwrap();
                }
            })
            .collect();
        let (busy, took) = executor_share(server, heavy).await;
        eprintln!("HTTP: the executor was busy {busy:?} of the {took:?} the requests took");
        assert!(
            busy * 2 < took,
            "HTTP: the executor was busy {busy:?} of the {took:?} the requests took"
        );
    });
    server_rt.block_on(async {
        web.stop().await.unwrap();
        c.stop().await.unwrap();
    });
}
