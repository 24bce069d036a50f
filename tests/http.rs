//! End-to-end tests of the HTTP JSON API and the web page with real processes on 127.0.0.1:
//! `xqtb serve` over a store and over shard files, `xqtb coordinator --http-listen` beside gRPC
//! with the read token, and `xqtb generate --http-listen`; values compared with
//! `xqtb probe --json` / `xqtb mainline --json` / `xqtb query --json`.

mod common;

use common::{Proc, TempDir, free_port, start_server, xqtb as run};
use http_body_util::{BodyExt, Empty};
use hyper::header::HeaderMap;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value as Json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A store with KRvKN and KCvK (and what they depend on) solved under the default rules.
fn solved_store(dir: &TempDir) -> String {
    let data = dir.arg("data");
    run(&["solve", "KRvKN", "KCvK", "--data", &data], "");
    data
}

/// `n` distinct legal KRvKN positions (both sides to move), from a fixed seed.
fn positions(n: usize) -> Vec<String> {
    common::positions("KRvKN", n)
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

type HttpClient = Client<HttpConnector, Empty<&'static [u8]>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1024)
        .build_http()
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or(""))
    }
    /// The `error` message of an error answer.
    fn error(&self) -> String {
        let j = self.json();
        assert_eq!(
            j.as_object().map(|o| o.len()),
            Some(1),
            "an error answer is {{\"error\": ...}}: {}",
            self.body
        );
        j["error"].as_str().unwrap().to_string()
    }
}

async fn request(c: &HttpClient, method: &str, url: &str, auth: Option<&str>) -> Reply {
    let mut req = hyper::Request::builder().method(method).uri(url);
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let resp = c.request(req.body(Empty::new()).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

async fn get(c: &HttpClient, url: &str) -> Reply {
    request(c, "GET", url, None).await
}

/// Waits until the HTTP server of `proc` answers `/api/v1/status` (any status).
async fn wait_ready(c: &HttpClient, proc: &mut Proc, base: &str) {
    let start = Instant::now();
    loop {
        let req = hyper::Request::get(format!("{base}/api/v1/status"))
            .body(Empty::new())
            .unwrap();
        if c.request(req).await.is_ok() {
            return;
        }
        if let Ok(Some(status)) = proc.child.try_wait() {
            panic!("the server exited ({status}): {}", proc.log());
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the HTTP server did not come up: {}",
            proc.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn serve(dir: &TempDir, source: &[&str], extra: &[&str]) -> (Proc, String) {
    let args = |listen: &str| {
        let mut args = vec!["serve", "--http-listen", listen];
        args.extend_from_slice(source);
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect()
    };
    let (proc, listen) = start_server(dir, "serve", args, "HTTP API and web page listening");
    (proc, format!("http://{listen}"))
}

/// `xqtb probe --batch` over `fens`: the expected answers, by FEN.
fn cli_probes(data_args: &[&str], fens: &[String]) -> Vec<Json> {
    let mut args = vec!["probe", "--batch"];
    args.extend_from_slice(data_args);
    let out = run(&args, &fens.join("\n"));
    let lines: Vec<Json> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), fens.len());
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_mainline_and_tables_equal_the_cli_on_hundreds_of_positions() {
    let dir = TempDir::new("values");
    let data = solved_store(&dir);
    let fens = positions(300);
    let expected = cli_probes(&["--data", &data], &fens);
    assert!(expected.iter().all(|e| e.get("error").is_none()));
    let wins = expected.iter().filter(|e| e["category"] == "win").count();
    let losses = expected.iter().filter(|e| e["category"] == "loss").count();
    assert!(wins > 20 && losses > 20, "{wins} wins, {losses} losses");
    // Main lines of a few dozen of them (sled allows one process: the CLI runs first).
    let lines: Vec<(String, Json)> = fens
        .iter()
        .step_by(10)
        .map(|f| {
            let out = run(&["mainline", f, "--json", "--data", &data], "");
            (f.clone(), serde_json::from_str(out.trim()).unwrap())
        })
        .collect();
    let tables: Vec<Json> = run(&["tables", "--json", "--data", &data], "")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for fen in fens.clone() {
        let (c, base) = (c.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            get(&c, &format!("{base}/api/v1/probe?fen={}", enc(&fen))).await
        }));
    }
    for (task, want) in tasks.into_iter().zip(&expected) {
        let r = task.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.header("content-type").starts_with("application/json"));
        assert_eq!(r.header("access-control-allow-origin"), "*");
        assert_eq!(&r.json(), want);
    }
    eprintln!(
        "300 probes over HTTP equal `xqtb probe --json` ({:.0} ms)",
        start.elapsed().as_secs_f64() * 1e3
    );
    // The rule set named explicitly gives the same answer; `_` stands for the space.
    let fen = &fens[0];
    let r = get(
        &c,
        &format!(
            "{base}/api/v1/probe?fen={}&rules=asian",
            fen.replace(' ', "_")
        ),
    )
    .await;
    assert_eq!(r.json(), expected[0]);
    for (fen, want) in &lines {
        let r = get(&c, &format!("{base}/api/v1/mainline?fen={}", enc(fen))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(&r.json(), want, "main line of {fen}");
    }
    assert!(lines.iter().any(|(_, l)| l["end"] == "mate"));

    let r = get(&c, &format!("{base}/api/v1/tables")).await;
    assert_eq!(r.status, 200);
    let got = r.json();
    assert_eq!(got["default_rules"], "asian");
    let got = got["tables"].as_array().unwrap();
    assert_eq!(got.len(), tables.len());
    for (g, t) in got.iter().zip(&tables) {
        for key in ["table", "rules", "index_size", "stored_bytes"] {
            assert_eq!(g[key], t[key], "{key} of {}", t["table"]);
        }
        for side in ["red_to_move", "black_to_move"] {
            for key in ["legal", "wins", "draws", "losses", "longest_win_plies"] {
                assert_eq!(g[side][key], t[side][key], "{side}.{key} of {}", t["table"]);
            }
        }
    }
    // The example position of KRvKN is its longest win, and probes as such.
    let krkn = got.iter().find(|t| t["table"] == "KRvKN").unwrap();
    let example = krkn["example_fen"].as_str().unwrap();
    let r = get(&c, &format!("{base}/api/v1/probe?fen={}", enc(example))).await;
    assert_eq!(
        r.json()["dtm_plies"],
        krkn["red_to_move"]["longest_win_plies"]
    );

    let r = get(&c, &format!("{base}/api/v1/status")).await;
    assert_eq!(r.status, 200);
    let s = r.json();
    assert_eq!(s["server"], "serve");
    assert_eq!(s["tables"], tables.len());
    assert!(s["uptime_seconds"].as_f64().unwrap() > 0.0);
    assert!(
        s["tables_served"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["table"] == "KRvKN" && t["rules"] == "asian")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_shard_files_in_place() {
    let dir = TempDir::new("shards");
    let data = solved_store(&dir);
    let shards = dir.arg("shards");
    std::fs::create_dir_all(&shards).unwrap();
    for sig in ["KRvKN", "KRvK", "KNvK", "KCvK"] {
        let file = format!("{shards}/{sig}.xqtb");
        run(&["export", sig, "-o", &file, "--data", &data], "");
    }
    let fens = positions(40);
    let expected = cli_probes(&["--shards", &shards], &fens);
    let (mut server, base) = serve(&dir, &["--shards", &shards], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    for (fen, want) in fens.iter().zip(&expected) {
        let r = get(&c, &format!("{base}/api/v1/probe?fen={}", enc(fen))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(&r.json(), want);
    }
    let r = get(&c, &format!("{base}/api/v1/status")).await;
    assert!(r.json()["source"].as_str().unwrap().contains("shard"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_json_with_the_right_status_and_cors_is_allowed() {
    let dir = TempDir::new("errors");
    let data = solved_store(&dir);
    let bad = [
        "5k3/9/9 w",
        "5k3/9/9/9/9/R8/9/4n4/9/3KK4 w",
        "5k3/9/9/9/9/R8/9/4n4/9/3K5 x",
        "4k4/4R4/9/9/9/9/9/9/9/4K4 w",
    ];
    let bad: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
    let cli = cli_probes(&["--data", &data], &bad);
    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;

    // A bad FEN: 400 with the FEN parser's reason, exactly as the CLI words it.
    for (fen, want) in bad.iter().zip(&cli) {
        let r = get(&c, &format!("{base}/api/v1/probe?fen={}", enc(fen))).await;
        assert_eq!(r.status, 400, "{fen}: {}", r.body);
        assert_eq!(r.header("access-control-allow-origin"), "*");
        assert_eq!(r.error(), want["error"].as_str().unwrap(), "{fen}");
        let r = get(&c, &format!("{base}/api/v1/mainline?fen={}", enc(fen))).await;
        assert_eq!(r.status, 400, "{fen}: {}", r.body);
    }
    assert!(cli[0]["error"].as_str().unwrap().contains("3 rows"));
    // Bad or missing parameters name the fault.
    let r = get(&c, &format!("{base}/api/v1/probe")).await;
    assert_eq!(r.status, 400);
    assert!(r.error().contains("missing parameter 'fen'"), "{}", r.body);
    let r = get(&c, &format!("{base}/api/v1/probe?fen=")).await;
    assert_eq!((r.status, r.error().contains("empty")), (400, true));
    let fen = enc("5k3/9/9/9/9/R8/9/4n4/9/3K5 w");
    let r = get(&c, &format!("{base}/api/v1/probe?fen={fen}&rules=chess")).await;
    assert_eq!(r.status, 400);
    assert!(r.error().contains("unknown rule set 'chess'"), "{}", r.body);
    // An empty rule set is the server's default.
    let r = get(&c, &format!("{base}/api/v1/probe?fen={fen}&rules=")).await;
    assert_eq!((r.status, r.json()["rules"].clone()), (200, "asian".into()));
    // A table that is not generated: 404 naming it and the rule set.
    let krrkn = enc("4k4/9/4n4/9/9/9/9/2R6/2R6/4K4 w");
    let r = get(&c, &format!("{base}/api/v1/probe?fen={krrkn}")).await;
    assert_eq!(r.status, 404);
    let e = r.error();
    assert!(e.contains("KRRvKN") && e.contains("asian"), "{e}");
    let r = get(&c, &format!("{base}/api/v1/mainline?fen={krrkn}")).await;
    assert_eq!(r.status, 404);
    let r = get(
        &c,
        &format!("{base}/api/v1/probe?fen={fen}&rules=cycles-are-draws"),
    )
    .await;
    assert_eq!(r.status, 404);
    let e = r.error();
    assert!(e.contains("KRvKN") && e.contains("cycles-are-draws"), "{e}");
    // A position without attacking pieces needs no table.
    let r = get(
        &c,
        &format!(
            "{base}/api/v1/probe?fen={}",
            enc("4k4/9/9/9/9/9/9/9/9/3K5 w")
        ),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["category"].clone()),
        (200, "draw".into())
    );
    // Bounded request size: a FEN parameter of 5000 bytes is refused before any work.
    let long = "9/".repeat(2500);
    let r = get(&c, &format!("{base}/api/v1/probe?fen={long}")).await;
    assert_eq!(r.status, 414, "{}", r.body);
    assert!(r.error().contains("at most 4096"));
    // Unknown paths and methods.
    let r = get(&c, &format!("{base}/api/v1/nothing")).await;
    assert_eq!(r.status, 404);
    assert!(r.error().contains("/api/v1/nothing"));
    let r = request(&c, "POST", &format!("{base}/api/v1/probe?fen={fen}"), None).await;
    assert_eq!(r.status, 405);
    assert!(r.error().contains("POST"));
    // CORS preflight.
    let r = request(
        &c,
        "OPTIONS",
        &format!("{base}/api/v1/probe?fen={fen}"),
        None,
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.header("access-control-allow-origin"), "*");
    assert!(r.header("access-control-allow-methods").contains("GET"));
    assert!(
        r.header("access-control-allow-headers")
            .to_lowercase()
            .contains("authorization")
    );
}

/// A forced mate in 3 plies with two rooks (no table holds KRRvK here); it has more than one
/// shortest line, and the search may answer any of them.
const MATE_IN_3: &str = "4k4/9/9/9/9/9/9/9/R8/1R1K5 w";

/// A position no search settles within a few seconds.
const HARD: &str = "2bak4/4a4/4b4/9/9/2N6/9/9/4C4/3K5 w";

/// The moves of a line (`line` of a search, `moves` of a main line) in ICCS.
fn iccs(moves: &Json) -> Vec<String> {
    moves
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["iccs"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_find_mates_within_capped_limits_and_agree_with_the_tables() {
    let dir = TempDir::new("search");
    let data = solved_store(&dir);
    let fens = positions(12);
    let probes = cli_probes(&["--data", &data], &fens);
    let lines: Vec<Json> = fens
        .iter()
        .map(|f| {
            let out = run(&["mainline", f, "--json", "--data", &data], "");
            serde_json::from_str(out.trim()).unwrap()
        })
        .collect();
    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let search = |query: String| {
        let (c, base) = (c.clone(), base.clone());
        async move { get(&c, &format!("{base}/api/v1/search?{query}")).await }
    };

    // A mate beyond the tables: its distance, line and end, under the server's defaults.
    let r = search(format!("fen={}", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), "*");
    let j = r.json();
    assert_eq!(
        (j["result"].clone(), j["dtm_plies"].clone()),
        ("win".into(), 3.into())
    );
    let line = iccs(&j["line"]);
    assert_eq!(line.len(), 3, "{j}");
    assert_eq!(j["best_move"], line[0]);
    for m in j["line"].as_array().unwrap() {
        assert!(
            !m["chinese"].as_str().unwrap().is_empty() && !m["wxf"].as_str().unwrap().is_empty()
        );
    }
    assert!(j["end"] == "mate" || j["end"] == "stalemate", "{j}");
    assert_eq!(
        (j["source"].clone(), j["side_to_move"].clone()),
        ("search".into(), "red".into())
    );
    assert_eq!(
        (j["rules"].clone(), j["stopped"].clone()),
        ("asian".into(), Json::Null)
    );
    assert_eq!(j["fen"], "4k4/9/9/9/9/9/9/9/R8/1R1K5 w - - 0 1");
    assert!(j["nodes"].as_u64().unwrap() > 0);
    assert_eq!(
        j["limits"],
        serde_json::json!({"max_plies": 41, "nodes": 20_000_000, "time_ms": 10_000,
                           "threads": 1, "hash_mib": 64})
    );
    // The same object as `xqtb search --json` (the same line, too), with the limits beside it.
    let cli: Json =
        serde_json::from_str(run(&["search", MATE_IN_3, "--json", "--threads", "1"], "").trim())
            .unwrap();
    for (k, v) in cli.as_object().unwrap() {
        if !["nodes", "table_hits", "time_ms"].contains(&k.as_str()) {
            assert_eq!(&j[k], v, "{k}");
        }
    }

    // Greedy limits are capped; modest ones are kept.
    let r = search(format!(
        "fen={}&max_plies=1000&nodes=1000000000000&time_ms=99999999999999999999&threads=100\
         &hash_mib=1048576",
        enc(MATE_IN_3)
    ))
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["limits"],
        serde_json::json!({"max_plies": 63, "nodes": 20_000_000, "time_ms": 10_000,
                           "threads": 2, "hash_mib": 256})
    );
    assert_eq!(r.json()["dtm_plies"], 3);
    let r = search(format!(
        "fen={}&max_plies=2&nodes=500&time_ms=2000&threads=2&hash_mib=1",
        enc(MATE_IN_3)
    ))
    .await;
    let j = r.json();
    assert_eq!(
        j["limits"],
        serde_json::json!({"max_plies": 2, "nodes": 500, "time_ms": 2000,
                           "threads": 2, "hash_mib": 1})
    );
    // Two plies are too few for a mate in three: unknown, and why.
    assert_eq!(
        (j["result"].clone(), j["stopped"].clone()),
        ("unknown".into(), "max-plies".into())
    );

    // Bad input: 400 naming the fault.
    let r = search(format!("fen={}", enc("4k4/9/9 w"))).await;
    assert_eq!(r.status, 400, "{}", r.body);
    let e = r.error();
    assert!(e.contains("bad FEN") && e.contains("rows"), "{e}");
    let r = search(format!("fen={}", enc("3k5/9/9/9/9/9/9/9/9/3K5 w"))).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("kings"), "{}", r.body);
    let r = search(format!("fen={}&nodes=lots", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 400);
    assert!(
        r.error()
            .contains("parameter 'nodes' must be a whole number"),
        "{}",
        r.body
    );
    let r = search(format!("fen={}&time_ms=0", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 400);
    assert!(
        r.error().contains("time_ms must be at least 1"),
        "{}",
        r.body
    );
    let r = search("nodes=5".into()).await;
    assert_eq!(r.status, 400);
    assert!(r.error().contains("missing parameter 'fen'"), "{}", r.body);
    let r = search(format!("fen={}&rules=chess", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 400);
    assert!(r.error().contains("unknown rule set 'chess'"), "{}", r.body);

    // Positions whose material is stored: the table's value, its main line and end.
    for ((fen, probe), line) in fens.iter().zip(&probes).zip(&lines) {
        let r = search(format!("fen={}", enc(fen))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(j["source"], "tables", "{fen}");
        assert_eq!(j["result"], probe["category"], "{fen}");
        assert_eq!(j["dtm_plies"], probe["dtm_plies"], "{fen}");
        if probe["category"] != "draw" {
            assert_eq!(iccs(&j["line"]), iccs(&line["moves"]), "{fen}");
            assert_eq!(j["end"], line["end"], "{fen}");
        }
    }

    // Two searches run at once; a third is refused at once with 503 and Retry-After.
    let hard = format!("fen={}&time_ms=3000", enc(HARD));
    let running = [
        tokio::spawn(search(hard.clone())),
        tokio::spawn(search(hard.clone())),
    ];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = search(format!("fen={}", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), "1");
    assert!(
        r.error().contains("busy") && r.error().contains("try again"),
        "{}",
        r.body
    );
    for r in running {
        let r = r.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            (r.json()["result"].clone(), r.json()["stopped"].clone()),
            ("unknown".into(), "time".into())
        );
    }
    let r = search(format!("fen={}", enc(MATE_IN_3))).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Clients that hang up cancel their searches: the places are free again long before the
    // searches' ten seconds are up.
    let gave_up = Instant::now();
    for _ in 0..2 {
        let call = search(format!("fen={}", enc(HARD)));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), call)
                .await
                .is_err()
        );
    }
    loop {
        let r = search(format!("fen={}", enc(MATE_IN_3))).await;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(
            gave_up.elapsed() < Duration::from_secs(5),
            "the searches of clients that hung up still run"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_serves_http_beside_grpc_with_the_read_token() {
    let dir = TempDir::new("coordinator");
    let data = solved_store(&dir);
    let fens = positions(20);
    let expected = cli_probes(&["--data", &data], &fens);
    let (grpc, http) = (free_port(), free_port());
    let grpc_listen = format!("127.0.0.1:{grpc}");
    let http_listen = format!("127.0.0.1:{http}");
    let mut coord = Proc::start(
        &dir,
        "coordinator",
        &[
            "coordinator",
            "--listen",
            &grpc_listen,
            "--http-listen",
            &http_listen,
            "--data",
            &data,
            "--token",
            "s3cret",
            "--token-for-reads",
        ],
    );
    let base = format!("http://{http_listen}");
    let c = client();
    wait_ready(&c, &mut coord, &base).await;
    let url = format!("{base}/api/v1/probe?fen={}", enc(&fens[0]));
    let r = request(&c, "GET", &url, None).await;
    assert_eq!(r.status, 401);
    assert!(r.error().contains("missing authorization"), "{}", r.body);
    assert_eq!(r.header("www-authenticate"), "Bearer");
    assert_eq!(r.header("access-control-allow-origin"), "*");
    let r = request(&c, "GET", &url, Some("Bearer wrong")).await;
    assert_eq!((r.status, r.error()), (401, "wrong token".to_string()));
    let r = request(&c, "GET", &format!("{base}/api/v1/status"), None).await;
    assert_eq!(r.status, 401);
    // The page itself stays open; its API calls need the token.
    assert_eq!(get(&c, &format!("{base}/")).await.status, 200);
    for (fen, want) in fens.iter().zip(&expected) {
        let url = format!("{base}/api/v1/probe?fen={}", enc(fen));
        let r = request(&c, "GET", &url, Some("Bearer s3cret")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(&r.json(), want);
    }
    // gRPC answers the same (one serde report behind both).
    let grpc_json = run(
        &[
            "query",
            &fens[0],
            "--json",
            "--server",
            &format!("http://{grpc_listen}"),
            "--token",
            "s3cret",
        ],
        "",
    );
    let grpc_json: Json = serde_json::from_str(grpc_json.trim()).unwrap();
    assert_eq!(grpc_json, expected[0]);
    // Searches go through the coordinator's application layer too, with the token.
    let url = format!("{base}/api/v1/search?fen={}", enc(MATE_IN_3));
    assert_eq!(request(&c, "GET", &url, None).await.status, 401);
    let r = request(&c, "GET", &url, Some("Bearer s3cret")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["dtm_plies"], 3);
    assert_eq!(iccs(&r.json()["line"]).len(), 3);
    let url = format!("{base}/api/v1/search?fen={}", enc(&fens[0]));
    let r = request(&c, "GET", &url, Some("Bearer s3cret")).await;
    assert_eq!(r.json()["source"], "tables");
    assert_eq!(r.json()["dtm_plies"], expected[0]["dtm_plies"]);
    let r = request(
        &c,
        "GET",
        &format!("{base}/api/v1/status"),
        Some("Bearer s3cret"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = r.json();
    assert_eq!(s["server"], "coordinator");
    assert_eq!(s["default_rules"], "asian");
    assert_eq!(s["jobs"]["failed"], 0);
    assert!(s["tables"].as_u64().unwrap() >= 4, "{s}");
    let r = request(
        &c,
        "GET",
        &format!("{base}/api/v1/tables"),
        Some("Bearer s3cret"),
    )
    .await;
    assert!(
        r.json()["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["table"] == "KRvKN")
    );
}

/// 500 requests at once, each on its own connection.
async fn burst(c: &HttpClient, base: &str, fens: &[String], kind: &str) -> Vec<(usize, Reply)> {
    let mut tasks = Vec::new();
    for i in 0..500 {
        let (c, url) = (
            c.clone(),
            format!("{base}/api/v1/{kind}?fen={}", enc(&fens[i % fens.len()])),
        );
        tasks.push(tokio::spawn(async move { (i, get(&c, &url).await) }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_500_concurrent_requests_is_answered() {
    let dir = TempDir::new("burst");
    let data = solved_store(&dir);
    let fens = positions(100);
    let expected = cli_probes(&["--data", &data], &fens);

    // At the default limits (1024 API requests in flight) every one is answered correctly.
    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let start = Instant::now();
    let replies = burst(&c, &base, &fens, "probe").await;
    let secs = start.elapsed().as_secs_f64();
    for (i, r) in &replies {
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json(), expected[i % fens.len()]);
    }
    eprintln!("500 concurrent probes: all correct in {:.0} ms", secs * 1e3);
    drop(server);

    // With a limit of 2, the excess is refused at once with 503 and Retry-After; whatever is
    // answered is right.
    let (mut server, base) = serve(&dir, &["--data", &data], &["--http-max-in-flight", "2"]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let start = Instant::now();
    let replies = burst(&c, &base, &fens, "mainline").await;
    let secs = start.elapsed().as_secs_f64();
    let (mut ok, mut refused) = (0, 0);
    for (i, r) in &replies {
        match r.status {
            200 => {
                ok += 1;
                assert_eq!(r.json()["fen"], expected[i % fens.len()]["fen"]);
                assert_eq!(r.json()["dtm_plies"], expected[i % fens.len()]["dtm_plies"]);
            }
            503 => {
                refused += 1;
                assert_eq!(r.header("retry-after"), "1");
                assert!(r.error().contains("busy"), "{}", r.body);
            }
            s => panic!("status {s}: {}", r.body),
        }
    }
    eprintln!(
        "500 concurrent main lines with --http-max-in-flight 2: {ok} answered, {refused} refused with 503 in {:.0} ms",
        secs * 1e3
    );
    assert!(ok > 0 && refused > 0, "{ok} answered, {refused} refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_are_served_with_their_content_types() {
    let dir = TempDir::new("page");
    let data = solved_store(&dir);
    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
    for (path, file, ctype) in [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/index.html", "index.html", "text/html; charset=utf-8"),
        ("/style.css", "style.css", "text/css; charset=utf-8"),
        ("/app.js", "app.js", "text/javascript; charset=utf-8"),
        ("/board.js", "board.js", "text/javascript; charset=utf-8"),
        ("/glyphs.js", "glyphs.js", "text/javascript; charset=utf-8"),
        (
            "/xiangqi.js",
            "xiangqi.js",
            "text/javascript; charset=utf-8",
        ),
    ] {
        let r = get(&c, &format!("{base}{path}")).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), ctype, "{path}");
        assert_eq!(
            r.body,
            std::fs::read_to_string(web.join(file)).unwrap(),
            "{path}"
        );
    }
    let page = get(&c, &format!("{base}/")).await.body;
    for asset in ["style.css", "app.js", "board.js", "glyphs.js", "xiangqi.js"] {
        assert!(page.contains(asset), "the page loads {asset}");
        // Nothing is fetched from elsewhere (XML namespace names are not fetched).
        let body = get(&c, &format!("{base}/{asset}")).await.body + &page;
        let body = body.replace("http://www.w3.org/", "");
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{asset} refers to nothing external"
        );
    }
    let r = get(&c, &format!("{base}/dev/mock_server.py")).await;
    assert_eq!(r.status, 404, "development files are not served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_serves_http_while_and_after_generating() {
    let dir = TempDir::new("generate");
    let data = dir.arg("data");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut proc = Proc::start(
        &dir,
        "generate",
        &[
            "generate",
            "KRvK",
            "--data",
            &data,
            "--http-listen",
            &listen,
        ],
    );
    let base = format!("http://{listen}");
    let c = client();
    wait_ready(&c, &mut proc, &base).await;
    let start = Instant::now();
    loop {
        let s = get(&c, &format!("{base}/api/v1/status")).await.json();
        assert_eq!(s["server"], "coordinator");
        if s["jobs"]["finished"] == 1 && s["jobs"]["ready"] == 0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = get(
        &c,
        &format!(
            "{base}/api/v1/probe?fen={}",
            enc("4k4/9/9/9/9/9/9/9/R8/3K5 w")
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["table"], "KRvK");
    assert_eq!(r.json()["category"], "win");
}

/// Whether the browser test can run here: headless Chromium, its driver and Selenium for
/// Python (`.ci/run` installs them when missing); otherwise why not.
fn browser_missing() -> Option<String> {
    for bin in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        if !std::path::Path::new(bin).exists() {
            return Some(format!(
                "{bin} is missing (apt-get install chromium chromium-driver)"
            ));
        }
    }
    let selenium = Command::new("python3")
        .args(["-c", "import selenium"])
        .status()
        .is_ok_and(|s| s.success());
    (!selenium).then(|| "Python's selenium is missing (pip install selenium)".into())
}

/// The web page in real headless Chromium against `xqtb serve` (`web/dev/test_page.py`): load
/// the page, enter a FEN, check the value shown, check that the pieces', the river's and the
/// Chinese notation's characters are drawn from the page's own glyphs (screen crops: every one
/// has ink, different characters differ; it passes on a machine without CJK fonts, where
/// system-font text shows empty boxes), click a winning move on the board, check that board and
/// value update, play the main line to mate, flip the board, show an error; the screenshots
/// (desktop and phone width, and the glyph crops `glyph-*.png`) are kept in
/// `target/browser-screenshots`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_works_in_headless_chromium() {
    if let Some(why) = browser_missing() {
        eprintln!("skipping the browser test: {why}");
        return;
    }
    let dir = TempDir::new("browser");
    let data = solved_store(&dir);
    let (mut server, base) = serve(&dir, &["--data", &data], &[]);
    let c = client();
    wait_ready(&c, &mut server, &base).await;
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web/dev/test_page.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .arg(format!("{base}/"))
            .arg(&shots)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the page test failed:\n{text}\nserver log:\n{}",
        server.log()
    );
    assert!(text.contains("PASS"), "{text}");
    for checked in ["pieces: ", "river: ", "notation "] {
        assert!(
            text.contains(checked),
            "no glyph check {checked:?} in:\n{text}"
        );
    }
}

/// Benchmark, not a test (`cargo test --release --test http -- --ignored --nocapture
/// probe_rates`): probes per second and latency percentiles of HTTP and gRPC against one
/// coordinator serving both over the same store, 32 concurrent clients, interleaved rounds of
/// 5 s each. Figures go to BENCHMARKS.md; nothing here is asserted about speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn probe_rates_of_http_and_grpc() {
    use proto::v1::ProbeRequest;
    use proto::v1::tablebase_client::TablebaseClient;
    let dir = TempDir::new("rates");
    let data = solved_store(&dir);
    let fens = std::sync::Arc::new(positions(200));
    let (grpc, http) = (free_port(), free_port());
    let mut coord = Proc::start(
        &dir,
        "coordinator",
        &[
            "coordinator",
            "--listen",
            &format!("127.0.0.1:{grpc}"),
            "--http-listen",
            &format!("127.0.0.1:{http}"),
            "--data",
            &data,
        ],
    );
    let base = format!("http://127.0.0.1:{http}");
    let c = client();
    wait_ready(&c, &mut coord, &base).await;
    let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{grpc}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    const CLIENTS: usize = 32;
    const SECONDS: u64 = 5;
    for round in 0..4 {
        let over_http = round % 2 == 0;
        let until = Instant::now() + Duration::from_secs(SECONDS);
        let mut tasks = Vec::new();
        for k in 0..CLIENTS {
            let fens = fens.clone();
            let (c, base) = (c.clone(), base.clone());
            let mut g = TablebaseClient::new(channel.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut i = k;
                while Instant::now() < until {
                    let fen = &fens[i % fens.len()];
                    i += CLIENTS;
                    let t = Instant::now();
                    if over_http {
                        let r = get(&c, &format!("{base}/api/v1/probe?fen={}", enc(fen))).await;
                        assert_eq!(r.status, 200, "{}", r.body);
                    } else {
                        g.probe(ProbeRequest {
                            fen: fen.clone(),
                            rules: String::new(),
                        })
                        .await
                        .unwrap();
                    }
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                }
                lat
            }));
        }
        let mut lat: Vec<f64> = Vec::new();
        for t in tasks {
            lat.extend(t.await.unwrap());
        }
        lat.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
        println!(
            "{}: {} probes in {SECONDS} s = {:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
            if over_http { "HTTP" } else { "gRPC" },
            lat.len(),
            lat.len() as f64 / SECONDS as f64,
            pct(0.5),
            pct(0.99)
        );
    }
}
