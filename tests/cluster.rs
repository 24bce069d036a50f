//! End-to-end tests of the distributed service with real processes on 127.0.0.1: a coordinator
//! and workers started from the `xqtb` binary, driven and checked over gRPC.

mod common;

use common::{BIN, Proc, TempDir, channel, free_port, metric, scrape, wait_for_metrics};
use proto::v1::jobs_client::JobsClient;
use proto::v1::tablebase_client::TablebaseClient;
use proto::v1::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use xqtb_core::{JobKey, RuleSet, Signature, TableId};

/// The rule set of requests that name none (the coordinator's default).
const RULES: RuleSet = RuleSet::Asian;

/// The signature a job status names.
fn sig_of(j: &JobStatus) -> String {
    j.key
        .as_ref()
        .unwrap()
        .table
        .as_ref()
        .unwrap()
        .signature
        .clone()
}
use tonic::transport::Channel;

fn coordinator(dir: &TempDir, port: u16, extra: &[&str]) -> Proc {
    let listen = format!("127.0.0.1:{port}");
    let data = dir.path("coord").display().to_string();
    let mut args = vec!["coordinator", "--listen", &listen, "--data", &data];
    args.extend_from_slice(extra);
    Proc::start(
        dir,
        &format!("coordinator-{port}-{}", Instant::now().elapsed().as_nanos()),
        &args,
    )
}

fn worker(dir: &TempDir, port: u16, name: &str, extra: &[&str]) -> Proc {
    let url = format!("http://127.0.0.1:{port}");
    let cache = dir.path(&format!("cache-{name}")).display().to_string();
    let mut args = vec![
        "worker",
        "--coordinator",
        &url,
        "--cache",
        &cache,
        "--name",
        name,
    ];
    args.extend_from_slice(extra);
    Proc::start(dir, &format!("worker-{name}"), &args)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn wait_until(
    port: u16,
    what: &str,
    timeout: Duration,
    f: impl Fn(&StatusResponse) -> bool,
) -> StatusResponse {
    let start = Instant::now();
    loop {
        if let Ok(c) = Channel::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
        {
            let mut c = TablebaseClient::new(c);
            if let Ok(s) = c.status(StatusRequest {}).await {
                let s = s.into_inner();
                if f(&s) {
                    return s;
                }
                if start.elapsed() > timeout {
                    panic!("timed out waiting for {what}: {s:#?}");
                }
            }
        }
        if start.elapsed() > timeout {
            panic!("timed out waiting for {what}: coordinator unreachable");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn all_finished(s: &StatusResponse) -> bool {
    !s.jobs.is_empty() && s.jobs.iter().all(|j| j.state == "finished")
}

async fn download(port: u16, sig: &str) -> Vec<u8> {
    common::download(&mut TablebaseClient::new(channel(port).await), sig).await
}

fn run_ok(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "xqtb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The shard of `sig` as `xqtb solve` alone produces it, solving `sigs` first.
fn solo_shard(dir: &TempDir, sigs: &[&str], sig: &str) -> Vec<u8> {
    solo_shard_under(dir, sigs, sig, &[])
}

/// [`solo_shard`] with `flags` (such as the rule set) given to the solve and the export.
fn solo_shard_under(dir: &TempDir, sigs: &[&str], sig: &str, flags: &[&str]) -> Vec<u8> {
    let data = dir.path("solo").display().to_string();
    if !dir.path("solo").exists() {
        let mut args = vec!["solve", "--data", &data, "--threads", "2"];
        args.extend_from_slice(sigs);
        args.extend_from_slice(flags);
        run_ok(&args);
    }
    let out = dir.path(&format!("{sig}.solo.xqtb")).display().to_string();
    let mut args = vec!["export", sig, "-o", &out, "--data", &data];
    args.extend_from_slice(flags);
    run_ok(&args);
    std::fs::read(out).unwrap()
}

#[test]
fn two_workers_generate_what_solve_produces_alone() {
    let dir = TempDir::new("two-workers");
    let port = free_port();
    let targets = ["KRvKAB", "KNvKAB", "KCvKAB", "KPvKAB"];
    let plan = targets.join(",");
    let _c = coordinator(&dir, port, &["--plan", &plan]);
    let mut w1 = worker(&dir, port, "a", &["--threads", "1", "--exit-when-done"]);
    let mut w2 = worker(&dir, port, "b", &["--threads", "1", "--exit-when-done"]);
    let rt = rt();
    let s = rt.block_on(wait_until(
        port,
        "all tables",
        Duration::from_secs(300),
        all_finished,
    ));
    assert!(s.jobs.len() >= 10, "closure of {} tables", s.jobs.len());
    assert!(
        w1.wait_exit(Duration::from_secs(30)),
        "worker a: {}",
        w1.log()
    );
    assert!(
        w2.wait_exit(Duration::from_secs(30)),
        "worker b: {}",
        w2.log()
    );
    for job in &s.jobs {
        let remote = rt.block_on(download(port, &sig_of(job)));
        let solo = solo_shard(&dir, &targets, &sig_of(job));
        assert!(
            remote == solo,
            "{}: cluster shard differs from xqtb solve's",
            sig_of(job)
        );
    }
}

#[test]
fn killed_worker_lease_expires_and_another_finishes() {
    let dir = TempDir::new("kill-worker");
    let port = free_port();
    let _c = coordinator(&dir, port, &["--plan", "KRvK", "--lease-ttl-secs", "2"]);
    let mut slow = worker(
        &dir,
        port,
        "slow",
        &["--threads", "1", "--debug-delay-upload-ms", "60000"],
    );
    let rt = rt();
    rt.block_on(wait_until(port, "a lease", Duration::from_secs(60), |s| {
        s.jobs
            .iter()
            .any(|j| j.state == "leased" && j.worker_id.contains("slow"))
    }));
    // Let it solve, so it is killed in the middle of the job (waiting to upload).
    std::thread::sleep(Duration::from_millis(1500));
    slow.kill();
    let mut fast = worker(&dir, port, "fast", &["--threads", "1", "--exit-when-done"]);
    let s = rt.block_on(wait_until(
        port,
        "the job",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(fast.wait_exit(Duration::from_secs(30)), "{}", fast.log());
    let job = &s.jobs[0];
    assert_eq!(job.attempts, 2, "{job:?}");
    assert!(job.last_error.is_empty());
    let mut c = rt.block_on(async { TablebaseClient::new(channel(port).await) });
    let shards = rt
        .block_on(c.list_shards(ListShardsRequest {}))
        .unwrap()
        .into_inner()
        .shards;
    assert_eq!(shards.len(), 1, "stored once: {shards:?}");
}

#[test]
fn restarted_coordinator_resumes_without_solving_again() {
    let dir = TempDir::new("restart");
    let port = free_port();
    let mut c = coordinator(&dir, port, &["--plan", "KRvKN,KCvKN,KNvKN"]);
    let mut w = worker(
        &dir,
        port,
        "w",
        &[
            "--threads",
            "2",
            "--exit-when-done",
            "--debug-delay-upload-ms",
            "300",
        ],
    );
    let rt = rt();
    let before = rt.block_on(wait_until(
        port,
        "some tables",
        Duration::from_secs(120),
        |s| s.finished >= 3,
    ));
    c.kill();
    let finished_before: Vec<String> = before
        .jobs
        .iter()
        .filter(|j| j.state == "finished")
        .map(sig_of)
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let _c2 = coordinator(&dir, port, &[]);
    let after = rt.block_on(wait_until(
        port,
        "all tables",
        Duration::from_secs(300),
        all_finished,
    ));
    assert!(w.wait_exit(Duration::from_secs(60)), "worker: {}", w.log());
    assert_eq!(after.jobs.len(), before.jobs.len());
    for j in &after.jobs {
        if finished_before.contains(&sig_of(j)) {
            assert_eq!(j.attempts, 1, "{} was solved again: {j:?}", sig_of(j));
        }
    }
}

fn shard_of(sig: &str) -> Vec<u8> {
    let s: Signature = sig.parse().unwrap();
    let tables = solver::solve_closure_in_memory(&[s], RULES, |_, _| {}).unwrap();
    let table = tables.get(&TableId::new(RULES, s)).unwrap();
    storage_format::shard::write_shard(&storage_format::codec::encode_table(table))
}

type JobsClientWithAuth = JobsClient<rpc::Client>;

async fn upload(
    client: &mut JobsClientWithAuth,
    lease: &str,
    sig: &str,
    bytes: Vec<u8>,
) -> Result<UploadResponse, tonic::Status> {
    let total = bytes.len() as u64;
    let chunks: Vec<UploadChunk> = bytes
        .chunks(100_000)
        .enumerate()
        .map(|(i, c)| UploadChunk {
            lease_id: if i == 0 { lease.into() } else { String::new() },
            key: (i == 0)
                .then(|| rpc::job_key(&JobKey::whole(TableId::new(RULES, sig.parse().unwrap())))),
            total_bytes: total,
            data: c.to_vec(),
        })
        .collect();
    client
        .upload(tokio_stream::iter(chunks))
        .await
        .map(|r| r.into_inner())
}

async fn lease_job(c: &mut JobsClientWithAuth, id: &str) -> Job {
    let r = c
        .lease(LeaseRequest {
            worker_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    r.job.expect("a job is ready")
}

#[test]
fn uploads_tokens_and_errors_are_checked() {
    let dir = TempDir::new("checks");
    let port = free_port();
    let _c = coordinator(
        &dir,
        port,
        &[
            "--plan",
            "KRvK",
            "--lease-ttl-secs",
            "1",
            "--token",
            "sekret",
        ],
    );
    let rt = rt();
    rt.block_on(async {
        let ch = channel(port).await;
        let auth = |t: Option<&str>| rpc::Auth::new(t).unwrap();
        // Missing and wrong tokens.
        for t in [None, Some("wrong")] {
            let mut c = JobsClient::with_interceptor(ch.clone(), auth(t));
            let err = c
                .register(RegisterRequest {
                    name: "x".into(),
                    ..Default::default()
                })
                .await
                .unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err}");
            let mut tb = TablebaseClient::with_interceptor(ch.clone(), auth(t));
            let err = tb
                .submit(SubmitRequest {
                    signatures: vec!["KRvKR".into()],
                    ..Default::default()
                })
                .await
                .unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unauthenticated);
        }
        let mut c = JobsClient::with_interceptor(ch.clone(), auth(Some("sekret")));
        let id = c
            .register(RegisterRequest {
                name: "t".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .worker_id;
        // A corrupted upload is refused and the job goes back to the queue.
        let job = lease_job(&mut c, &id).await;
        let mut bad = shard_of("KRvK");
        let mid = bad.len() / 2;
        bad[mid] ^= 0x10;
        let err = upload(&mut c, &job.lease_id, "KRvK", bad)
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
        // The same lease is now stale; a new lease is granted for attempt 2.
        let job2 = lease_job(&mut c, &id).await;
        assert_eq!(job2.attempt, 2);
        // A stale lease: let it expire, then upload a good table.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        let err = upload(&mut c, &job2.lease_id, "KRvK", shard_of("KRvK"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err}");
        let job3 = lease_job(&mut c, &id).await;
        let ok = upload(&mut c, &job3.lease_id, "KRvK", shard_of("KRvK"))
            .await
            .unwrap();
        assert!(ok.accepted);
        // A duplicate upload of the finished job is refused.
        let err = upload(&mut c, &job3.lease_id, "KRvK", shard_of("KRvK"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::FailedPrecondition);

        // Reads stay open without a token.
        let mut tb = TablebaseClient::new(ch.clone());
        let err = tb
            .probe(ProbeRequest {
                rules: String::new(),
                fen: "4k4/9/9/9/9/9/9/9/9/4K4R w".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("row"), "{}", err.message());
        let err = tb
            .probe(ProbeRequest {
                rules: String::new(),
                fen: "3k5/9/9/9/9/9/9/9/9/3K5 w".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            tonic::Code::InvalidArgument,
            "kings facing: {err}"
        );
        let err = tb
            .probe(ProbeRequest {
                rules: String::new(),
                fen: "3k5/9/9/9/9/2n6/9/9/4R4/4KR3 w".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::NotFound, "{err}");
        assert!(err.message().contains("KRRvKN"), "{}", err.message());
        let r = tb
            .probe(ProbeRequest {
                rules: String::new(),
                fen: "4k4/9/9/9/9/9/9/9/9/3K1R3 w".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.category, "win");
    });
}

#[test]
fn concurrent_probes_and_downloads_are_correct() {
    let dir = TempDir::new("probes");
    let port = free_port();
    let _c = coordinator(&dir, port, &["--plan", "KRvKA"]);
    let mut w = worker(&dir, port, "w", &["--threads", "2", "--exit-when-done"]);
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "tables",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(w.wait_exit(Duration::from_secs(30)));
    // Expected answers from the library, solved in this process.
    let s: Signature = "KRvKA".parse().unwrap();
    let tables = solver::solve_closure_in_memory(&[s], RULES, |_, _| {}).unwrap();
    let table = tables.get(&TableId::new(RULES, s)).unwrap();
    let mut fens = Vec::new();
    let mut slot = 0;
    while fens.len() < 50 && slot < table.index().size() {
        if let Some(b) = table.index().board(slot, xiangqi::Color::Red)
            && !b.opponent_in_check()
        {
            let v = xqtb_core::Probe::probe(&tables, RULES, &b).unwrap();
            fens.push((b.fen(), v));
        }
        slot += 997;
    }
    let fens = std::sync::Arc::new(fens);
    rt.block_on(async {
        let ch = channel(port).await;
        let mut tasks = Vec::new();
        for i in 0..200 {
            let (ch, fens) = (ch.clone(), std::sync::Arc::clone(&fens));
            tasks.push(tokio::spawn(async move {
                let mut c = TablebaseClient::new(ch);
                for k in 0..5 {
                    let (fen, v) = &fens[(i * 7 + k) % fens.len()];
                    let r = c
                        .probe(ProbeRequest {
                            fen: fen.clone(),
                            ..Default::default()
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r.category, v.wdl(), "{fen}");
                    assert_eq!(r.dtm_plies, v.dtm_plies().map(u32::from), "{fen}");
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    // Download with the CLI: the table and every table probing it needs, checksums verified;
    // every position probes as the library solved it, with its moves.
    let out = dir.path("dl");
    let out_arg = out.display().to_string();
    let url = format!("http://127.0.0.1:{port}");
    run_ok(&["download", "KRvKA", "-o", &out_arg, "--server", &url]);
    let closure = xqtb_core::closure_of(&[s]);
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected: Vec<String> = closure
        .iter()
        .map(|&t| storage_format::store::ShardDir::file_name(&TableId::new(RULES, t)))
        .collect();
    expected.sort();
    assert_eq!(files, expected);
    let shards = probe::Tablebase::open_shards(&out).unwrap();
    let mut probed = 0;
    for slot in 0..table.index().size() {
        for side in xiangqi::Color::ALL {
            let Some(b) = table.index().board(slot, side) else {
                continue;
            };
            if b.opponent_in_check() {
                continue;
            }
            let v = xqtb_core::Probe::probe(&tables, RULES, &b).unwrap();
            let r = shards.probe_board(RULES, &b).unwrap();
            assert_eq!(r.value, v, "{}", b.fen());
            probed += 1;
        }
    }
    assert!(probed > 20_000, "{probed}");
    // Again: the files there are whole, so nothing is fetched.
    let again = run_ok(&["download", "KRvKA", "-o", &out_arg, "--server", &url]);
    assert_eq!(again.matches("kept").count(), closure.len(), "{again}");
    // --only fetches the named table alone; `tables` and `probe` then name what is missing
    // and the command that fetches it.
    let only = dir.path("only");
    let only_arg = only.display().to_string();
    run_ok(&[
        "download", "KRvKA", "--only", "-o", &only_arg, "--server", &url,
    ]);
    assert_eq!(std::fs::read_dir(&only).unwrap().count(), 1);
    let listed = run_ok(&["tables", "--shards", &only_arg]);
    let fetch = format!("`xqtb download KRvKA -o {only_arg} --server URL`");
    assert!(listed.contains("KRvKA: probing it needs KRvK"), "{listed}");
    assert!(listed.contains(&fetch), "{listed}");
    // A KRvK position: the capture KRvKA leads into.
    let refused = Command::new(BIN)
        .args(["probe", "3k5/9/9/9/9/9/9/9/9/R3K4 w", "--shards", &only_arg])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{e}");
    assert!(e.contains("is not in"), "{e}");
    assert!(e.contains("xqtb download"), "{e}");
    let listed = rt.block_on(async {
        let mut c = TablebaseClient::new(channel(port).await);
        c.list_shards(ListShardsRequest {})
            .await
            .unwrap()
            .into_inner()
            .shards
    });
    let file = std::fs::read(
        Path::new(&out).join(storage_format::store::ShardDir::file_name(&TableId::new(
            RULES, s,
        ))),
    )
    .unwrap();
    let info = listed.iter().find(|x| x.signature == "KRvKA").unwrap();
    assert_eq!(info.shard_bytes, file.len() as u64);
    assert_eq!(
        info.file_checksum,
        storage_format::shard::file_checksum(&file)
    );
}

#[test]
fn metrics_endpoints_serve_the_named_metrics() {
    let dir = TempDir::new("metrics");
    let (port, cm, wm) = (free_port(), free_port(), free_port());
    let (cm_addr, wm_addr) = (format!("127.0.0.1:{cm}"), format!("127.0.0.1:{wm}"));
    let _c = coordinator(
        &dir,
        port,
        &["--plan", "KRvKA", "--metrics-listen", &cm_addr],
    );
    wait_for_metrics(cm);
    // During the run: the worker waits before uploading, so jobs are leased while we scrape.
    let _w = worker(
        &dir,
        port,
        "m",
        &[
            "--threads",
            "1",
            "--metrics-listen",
            &wm_addr,
            "--debug-delay-upload-ms",
            "400",
        ],
    );
    let rt = rt();
    rt.block_on(wait_until(port, "a lease", Duration::from_secs(60), |s| {
        s.leased > 0
    }));
    let during = scrape(cm);
    assert!(during.contains("xqtb_leases_active 1"), "{during}");
    assert!(during.contains("xqtb_jobs_unholdable 0"), "{during}");
    rt.block_on(wait_until(
        port,
        "tables",
        Duration::from_secs(120),
        all_finished,
    ));
    rt.block_on(async {
        let mut c = TablebaseClient::new(channel(port).await);
        for _ in 0..3 {
            c.probe(ProbeRequest {
                fen: "4k4/9/9/9/9/9/9/9/9/3K1R3 w".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        }
        // The coordinator's tick refreshes the gauges every 500 ms.
        tokio::time::sleep(Duration::from_millis(1200)).await;
    });
    let text = scrape(cm);
    for name in [
        "xqtb_jobs{state=\"finished\"} 2",
        "xqtb_leases_granted_total 2",
        "xqtb_lease_expiries_total",
        "xqtb_job_retries_total",
        "xqtb_uploads_total{result=\"accepted\"} 2",
        "xqtb_upload_bytes_total",
        "xqtb_solve_entries_per_second",
        "xqtb_probes_total 3",
        "xqtb_probe_seconds_bucket",
        "xqtb_block_cache_hits_total",
        "xqtb_block_cache_misses_total",
        "xqtb_block_cache_hit_ratio",
        "xqtb_tables_open 1",
    ] {
        assert!(
            text.contains(name),
            "coordinator metrics lack {name}:\n{text}"
        );
    }
    // The probes decompressed at least one block, and the cache holds it.
    let cached = metric(&text, "xqtb_block_cache_bytes")
        .unwrap_or_else(|| panic!("coordinator metrics lack xqtb_block_cache_bytes:\n{text}"));
    assert!(cached > 0.0, "{text}");
    let text = scrape(wm);
    for name in [
        "xqtb_worker_tables_committed_total 2",
        "xqtb_worker_entries_solved_total",
        "xqtb_worker_solve_entries_per_second",
        "xqtb_worker_solve_seconds",
        "xqtb_worker_upload_bytes_total",
    ] {
        assert!(text.contains(name), "worker metrics lack {name}:\n{text}");
    }
}

#[test]
fn tls_with_a_ca_file() {
    let dir = TempDir::new("tls");
    let (key, cert, ca_key, ca) = (
        dir.path("key.pem"),
        dir.path("cert.pem"),
        dir.path("ca-key.pem"),
        dir.path("ca.pem"),
    );
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir.root())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    std::fs::write(
        dir.path("ext.cnf"),
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    let made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=xqtb test CA",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "key.pem",
        "-out",
        "req.pem",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "req.pem",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        "cert.pem",
    ]);
    if !made || !ca_key.exists() {
        eprintln!("skipping the TLS test: openssl cannot make test certificates");
        return;
    }
    let port = free_port();
    let (k, c) = (key.display().to_string(), cert.display().to_string());
    let ca = ca.display().to_string();
    let mut coord = coordinator(&dir, port, &["--tls-cert", &c, "--tls-key", &k]);
    let url = format!("https://localhost:{port}");
    let start = Instant::now();
    loop {
        let out = Command::new(BIN)
            .args(["health", "--server", &url, "--ca", &ca])
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no TLS health: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            coord.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Without the CA the server is not trusted; plain HTTP gets no answer.
    let out = Command::new(BIN)
        .args(["health", "--server", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(BIN)
        .args(["health", "--server", &format!("http://localhost:{port}")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    coord.kill();
}

/// The job of `sig` in a status report.
fn job_of<'a>(s: &'a StatusResponse, sig: &str) -> &'a JobStatus {
    s.jobs
        .iter()
        .find(|j| sig_of(j) == sig)
        .expect("the job is planned")
}

#[test]
fn a_faulty_worker_is_refused_by_the_sample_check_quarantined_and_replaced() {
    let dir = TempDir::new("faulty");
    let (port, cm) = (free_port(), free_port());
    let cm_addr = format!("127.0.0.1:{cm}");
    let _c = coordinator(
        &dir,
        port,
        &["--plan", "KRvK,KNvK", "--metrics-listen", &cm_addr],
    );
    wait_for_metrics(cm);
    // KRvKN's dependencies first, from a healthy worker.
    let mut first = worker(&dir, port, "first", &["--threads", "2", "--exit-when-done"]);
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "the dependencies",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(first.wait_exit(Duration::from_secs(30)), "{}", first.log());
    rt.block_on(async {
        let mut c = TablebaseClient::new(channel(port).await);
        c.submit(SubmitRequest {
            signatures: vec!["KRvKN".into()],
            rules: String::new(),
        })
        .await
        .unwrap();
    });
    // The faulty worker gives 200 of KRvKN's values, spread over the table, a wrong value after
    // verifying it. KRvKN has 380,325 legal positions, of which the default sample (1% or
    // 100,000, whichever is larger) checks 100,000: each wrong value escapes it with
    // probability 1 - 100,000/380,325 < 0.74, all 200 together with less than 0.74^200 < 1e-26
    // (a wrong value also shows when one of its predecessors is sampled, which only makes the
    // refusal likelier). The refusal is certain in practice; without the check the table would
    // be committed (the next test).
    let mut faulty = worker(
        &dir,
        port,
        "faulty",
        &["--threads", "2", "--debug-corrupt-values", "200"],
    );
    let s = rt.block_on(wait_until(
        port,
        "the refusal of the faulty upload",
        Duration::from_secs(120),
        |s| job_of(s, "KRvKN").last_error.contains("sample check"),
    ));
    let job = job_of(&s, "KRvKN");
    let bad = s.workers.iter().find(|w| w.name == "faulty").unwrap();
    // Status names the worker: in the job's last error, and as quarantined.
    assert_eq!((job.state.as_str(), job.attempts), ("ready", 1), "{job:?}");
    assert!(job.last_error.contains(&bad.worker_id), "{job:?}");
    assert!(job.last_error.contains("wrong value"), "{job:?}");
    assert_eq!(bad.phase, "quarantined", "{bad:?}");
    // So do the metrics.
    let metric = format!(
        "xqtb_sample_check_failures_total{{worker=\"{}\"}} 1",
        bad.worker_id
    );
    let text = scrape(cm);
    assert!(text.contains(&metric), "no {metric}:\n{text}");
    assert!(
        text.contains("xqtb_uploads_total{result=\"refused\"} 1"),
        "{text}"
    );
    // Quarantined, the faulty worker gets no more jobs: a healthy one solves the table.
    let mut healthy = worker(
        &dir,
        port,
        "healthy",
        &["--threads", "2", "--exit-when-done"],
    );
    let s = rt.block_on(wait_until(
        port,
        "the healthy worker's table",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(
        healthy.wait_exit(Duration::from_secs(30)),
        "{}",
        healthy.log()
    );
    assert_eq!(job_of(&s, "KRvKN").attempts, 2);
    let bad = s.workers.iter().find(|w| w.name == "faulty").unwrap();
    assert_eq!(bad.phase, "quarantined", "{bad:?}");
    assert!(faulty.log().contains("upload refused"), "{}", faulty.log());
    faulty.kill();
    let remote = rt.block_on(download(port, "KRvKN"));
    assert!(
        remote == solo_shard(&dir, &["KRvKN"], "KRvKN"),
        "the committed KRvKN differs from xqtb solve's"
    );
}

#[test]
fn without_the_sample_check_a_faulty_upload_is_committed() {
    // The control of the test above: with the check off, nothing else notices the wrong values
    // (the worker checksums what it changed), and the store is poisoned.
    let dir = TempDir::new("unchecked");
    let port = free_port();
    let _c = coordinator(
        &dir,
        port,
        &[
            "--plan",
            "KRvK",
            "--sample-percent",
            "0",
            "--sample-min",
            "0",
        ],
    );
    let mut faulty = worker(
        &dir,
        port,
        "faulty",
        &[
            "--threads",
            "2",
            "--exit-when-done",
            "--debug-corrupt-values",
            "20",
        ],
    );
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "KRvK",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(
        faulty.wait_exit(Duration::from_secs(30)),
        "{}",
        faulty.log()
    );
    let remote = rt.block_on(download(port, "KRvK"));
    assert!(remote != solo_shard(&dir, &["KRvK"], "KRvK"));
}

#[test]
fn a_worker_gets_only_the_jobs_its_memory_can_hold() {
    let dir = TempDir::new("memory-aware");
    let port = free_port();
    let c = coordinator(&dir, port, &["--plan", "KRvKR"]);
    let rt = rt();
    let s = rt.block_on(wait_until(port, "the plan", Duration::from_secs(30), |s| {
        s.jobs.len() == 2
    }));
    let need = |s: &StatusResponse, sig: &str| job_of(s, sig).memory_bytes;
    let (small_need, big_need) = (need(&s, "KRvK"), need(&s, "KRvKR"));
    assert!(0 < small_need && small_need < big_need, "{s:#?}");
    // Enough for KRvK, not for KRvKR.
    let memory = small_need.to_string();
    let _small = worker(
        &dir,
        port,
        "small",
        &["--threads", "1", "--memory", &memory],
    );
    let s = rt.block_on(wait_until(
        port,
        "KRvK, and KRvKR named as too large",
        Duration::from_secs(120),
        |s| job_of(s, "KRvK").state == "finished" && !job_of(s, "KRvKR").unholdable.is_empty(),
    ));
    let blocked = job_of(&s, "KRvKR");
    assert_eq!(blocked.state, "ready", "{blocked:?}");
    assert!(
        blocked.unholdable.contains("small") && blocked.unholdable.contains("needs"),
        "{}",
        blocked.unholdable
    );
    let small = s.workers.iter().find(|w| w.name == "small").unwrap();
    assert_eq!(small.memory_bytes, small_need);
    // It says what it holds between jobs (a worker process: some megabytes).
    assert!(
        (1_000_000..1_000_000_000).contains(&small.resident_bytes),
        "{small:?}"
    );
    // It stays unleased while only the small worker is there.
    std::thread::sleep(Duration::from_secs(2));
    let s = rt.block_on(wait_until(port, "status", Duration::from_secs(10), |_| {
        true
    }));
    assert_eq!(job_of(&s, "KRvKR").state, "ready");
    let _big = worker(&dir, port, "big", &["--threads", "1", "--exit-when-done"]);
    let s = rt.block_on(wait_until(
        port,
        "every job",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(s.jobs.iter().all(|j| j.unholdable.is_empty()), "{s:#?}");
    let leased: Vec<String> = c
        .log()
        .lines()
        .filter(|l| l.contains("job leased"))
        .map(str::to_string)
        .collect();
    assert_eq!(leased.len(), 2, "{leased:?}");
    assert!(
        leased
            .iter()
            .any(|l| l.contains("KRvKR") && l.contains("big") && !l.contains("small")),
        "{leased:?}"
    );
}

/// A table with pawns solved slice by slice through the cluster: one job per pawn slice, a
/// worker SIGKILLed in the middle of a slice, its slice leased again; the table the slices
/// assemble into equals `xqtb solve`'s byte for byte, and so does every other table.
#[test]
fn a_table_solved_in_pawn_slices_with_a_killed_worker_equals_a_local_solve() {
    let dir = TempDir::new("slices");
    let port = free_port();
    let _c = coordinator(
        &dir,
        port,
        &[
            "--plan",
            "KRvKP",
            "--slice-from-entries",
            "0",
            "--lease-ttl-secs",
            "2",
        ],
    );
    let slices = xqtb_core::TableIndex::new("KRvKP".parse().unwrap())
        .slices()
        .len();
    // Every job but KRvK's is a pawn slice (of KPvK or of KRvKP).
    let sliced = |j: &JobStatus| sig_of(j) != "KRvK";
    let mut slow = worker(
        &dir,
        port,
        "slow",
        &["--threads", "1", "--debug-delay-upload-ms", "60000"],
    );
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "a slice leased",
        Duration::from_secs(120),
        |s| {
            s.jobs
                .iter()
                .any(|j| sliced(j) && j.state == "leased" && j.worker_id.contains("slow"))
        },
    ));
    // Status shows a table in slices as one table with its jobs counted by state, and lists
    // its leased slice under it.
    let server = format!("http://127.0.0.1:{port}");
    let during = run_ok(&["status", "--server", &server]);
    let solving = during
        .lines()
        .find(|l| l.contains("solving") && l.contains(&format!("{slices} slices:")))
        .unwrap_or_else(|| panic!("no table in slices being solved: {during}"));
    assert!(solving.contains("1 leased"), "{during}");
    assert!(
        during
            .lines()
            .any(|l| l.starts_with("    slots ") && l.contains("leased") && l.contains("slow")),
        "{during}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    slow.kill();
    let mut a = worker(&dir, port, "a", &["--threads", "1", "--exit-when-done"]);
    let mut b = worker(&dir, port, "b", &["--threads", "1", "--exit-when-done"]);
    let s = rt.block_on(wait_until(
        port,
        "every slice",
        Duration::from_secs(300),
        all_finished,
    ));
    assert!(a.wait_exit(Duration::from_secs(30)), "{}", a.log());
    assert!(b.wait_exit(Duration::from_secs(30)), "{}", b.log());
    let krkp: Vec<&JobStatus> = s.jobs.iter().filter(|j| sig_of(j) == "KRvKP").collect();
    assert_eq!(krkp.len(), slices, "one job per slice: {krkp:#?}");
    let table = |sig: &str| {
        s.tables
            .iter()
            .find(|t| t.table.as_ref().is_some_and(|t| t.signature == sig))
            .unwrap_or_else(|| panic!("{sig} is not in the status: {:#?}", s.tables))
    };
    for sig in ["KPvK", "KRvKP"] {
        let t = table(sig);
        assert_eq!(
            (t.state.as_str(), t.jobs, t.finished_jobs),
            ("finished", slices as u32, slices as u32),
            "{t:?}"
        );
        assert_eq!(t.entries_done, t.entries_total);
    }
    assert_eq!(table("KRvK").jobs, 1);
    let after = run_ok(&["status", "--server", &server]);
    assert!(
        after.contains(&format!("{slices} slices: {slices} finished, 0 leased")),
        "{after}"
    );
    assert!(after.contains("tables: 3 finished, 0 solving"), "{after}");
    assert!(
        !after.contains("    slots "),
        "only slices worth a look are listed: {after}"
    );
    let every = run_ok(&["status", "--server", &server, "--slices"]);
    assert_eq!(every.matches("    slots ").count(), 2 * slices, "{every}");
    assert!(
        s.jobs.iter().any(|j| sliced(j) && j.attempts == 2),
        "the killed slice was leased again: {:#?}",
        s.jobs
    );
    for sig in ["KPvK", "KRvK", "KRvKP"] {
        let remote = rt.block_on(download(port, sig));
        assert!(
            remote == solo_shard(&dir, &["KRvKP"], sig),
            "{sig}: the cluster's shard differs from xqtb solve's"
        );
    }
}

/// A table shared by two workers (KRvKN under cycles-are-draws; its dependencies are solved
/// as usual), the one holding seat 1 hangs in the middle of the levels and is killed: its seat
/// is leased again, the new worker catches up from the coordinator's log, and the table seat 0
/// uploads is byte for byte the one `xqtb solve` makes alone. Status shows the shared job.
#[test]
fn a_shared_table_survives_a_killed_seat_and_equals_a_local_solve() {
    shared_table_survives_a_killed_seat(1);
}

/// The same with seat 0 killed, the seat that uploads the table: the job's attempt goes on,
/// the worker that takes the seat over uploads the table under the job's lease.
#[test]
fn a_shared_table_survives_a_killed_first_seat() {
    shared_table_survives_a_killed_seat(0);
}

/// The coordinator's flags of the tests that share KRvKN (2 x 328,500 entries), the only table
/// of its closure large enough to be shared, between two workers.
const SHARE_KRVKN: [&str; 8] = [
    "--rules",
    "cycles-are-draws",
    "--share-by",
    "2",
    "--share-from-entries",
    "600000",
    "--lease-ttl-secs",
    "2",
];

/// KRvKN's share in progress, if the status shows one.
fn krvkn_share(s: &StatusResponse) -> Option<ShareStatus> {
    let job = s.jobs.iter().find(|j| sig_of(j) == "KRvKN")?;
    job.share.clone()
}

/// A coordinator sharing KRvKN between workers `x` and `y`, whichever of them holds `seat`
/// hung before ending its sixth pass: the processes, and the status once both seats are held
/// and the last pass every seat ended is win 3.
struct HungSeat {
    coordinator: Proc,
    x: Proc,
    y: Proc,
    status: StatusResponse,
}

impl HungSeat {
    fn start(dir: &TempDir, port: u16, seat: usize, rt: &tokio::runtime::Runtime) -> HungSeat {
        let coordinator = coordinator(dir, port, &SHARE_KRVKN);
        let stall_at = format!("{seat}:5");
        let stall = ["--threads", "1", "--debug-stall-seat-at-pass", &stall_at];
        let x = worker(dir, port, "x", &stall);
        let y = worker(dir, port, "y", &stall);
        // A table is shared by the workers registered when it is leased: both, before the plan.
        rt.block_on(wait_until(
            port,
            "both workers",
            Duration::from_secs(60),
            |s| s.workers.len() >= 2,
        ));
        let server = format!("http://127.0.0.1:{port}");
        run_ok(&["submit", "KRvKN", "--server", &server]);
        let status = rt.block_on(wait_until(
            port,
            "both seats held, the hung seat at its pass",
            Duration::from_secs(120),
            |s| {
                krvkn_share(s).is_some_and(|sh| {
                    sh.seat_workers.iter().all(|w| !w.is_empty()) && sh.pass == "win 3"
                })
            },
        ));
        HungSeat {
            coordinator,
            x,
            y,
            status,
        }
    }

    /// Kills the worker that holds `seat` (the hung one).
    fn kill_holder(&mut self, seat: usize) {
        let share = krvkn_share(&self.status).expect("a share");
        match share.seat_workers[seat].ends_with("-x") {
            true => self.x.kill(),
            false => self.y.kill(),
        }
    }
}

/// Waits for KRvKN to be committed, and for `z` to exit; checks that the job took one attempt
/// and its table equals `xqtb solve`'s.
fn krvkn_committed_in_its_first_attempt(
    dir: &TempDir,
    port: u16,
    rt: &tokio::runtime::Runtime,
    z: &mut Proc,
) {
    let s = rt.block_on(wait_until(
        port,
        "the shared table",
        Duration::from_secs(300),
        all_finished,
    ));
    assert!(z.wait_exit(Duration::from_secs(60)), "{}", z.log());
    let job = s.jobs.iter().find(|j| sig_of(j) == "KRvKN").unwrap();
    assert_eq!(job.attempts, 1, "the job's attempt went on: {job:?}");
    let remote = rt.block_on(download(port, "KRvKN"));
    let cad = ["--rules", "cycles-are-draws"];
    assert!(
        remote == solo_shard_under(dir, &["KRvKN"], "KRvKN", &cad),
        "the shared table differs from xqtb solve's"
    );
}

/// Shares KRvKN between two workers, kills the one holding `seat` in its sixth pass, and checks
/// that a third worker takes the seat over and the table equals `xqtb solve`'s.
fn shared_table_survives_a_killed_seat(seat: usize) {
    let dir = TempDir::new(&format!("shared-{seat}"));
    let port = free_port();
    let rt = rt();
    let mut hung = HungSeat::start(&dir, port, seat, &rt);
    let server = format!("http://127.0.0.1:{port}");
    let share = krvkn_share(&hung.status).unwrap();
    assert_eq!(share.seats, 2, "{share:?}");
    assert!(share.bytes_relayed > 0, "{share:?}");
    let during = run_ok(&["status", "--server", &server]);
    assert!(
        during.contains("shared by 2 workers (seats 0 w") && during.contains("last pass win 3"),
        "{during}"
    );
    hung.kill_holder(seat);
    let mut z = worker(&dir, port, "z", &["--threads", "1", "--exit-when-done"]);
    krvkn_committed_in_its_first_attempt(&dir, port, &rt, &mut z);
    // z took the open seat: seat 0 uploads the table, another seat only hands its parts over.
    let done = match seat {
        0 => "1 tables committed",
        _ => "1 seats of shared tables done",
    };
    assert!(
        z.log().contains("solving a seat of a shared job") && z.log().contains(done),
        "z took seat {seat}: {}",
        z.log()
    );
    assert!(
        hung.coordinator
            .log()
            .contains("a seat of a shared job is open again"),
        "{}",
        hung.coordinator.log()
    );
}

/// A coordinator stopped (SIGKILL) in the middle of a shared table resumes its session: the
/// seats wait for workers, which catch up from the log the coordinator kept on its disk, and
/// the table is committed in the same attempt, equal to `xqtb solve`'s.
#[test]
fn a_shared_table_survives_a_restarted_coordinator() {
    let dir = TempDir::new("shared-restart");
    let port = free_port();
    let rt = rt();
    // Seat 1 stops before ending its sixth pass, which holds the table there.
    let mut hung = HungSeat::start(&dir, port, 1, &rt);
    hung.coordinator.kill();
    // The hung worker goes too; the other one finds its seat gone and asks again (whichever
    // seat it takes now, it does not stall: the knob holds for a worker's first seat only).
    hung.kill_holder(1);
    std::thread::sleep(Duration::from_millis(500));
    let c = coordinator(&dir, port, &SHARE_KRVKN);
    let mut z = worker(&dir, port, "z", &["--threads", "1", "--exit-when-done"]);
    krvkn_committed_in_its_first_attempt(&dir, port, &rt, &mut z);
    assert!(
        c.log().contains("a shared job's session resumed"),
        "{}",
        c.log()
    );
}

/// `download` without `--rules` fetches the tables of the coordinator's default rule set and
/// finds them again under their names: a repeated download keeps every file.
#[test]
fn download_without_rules_uses_the_coordinators_rule_set() {
    let dir = TempDir::new("download-rules");
    let port = free_port();
    let _c = coordinator(
        &dir,
        port,
        &["--rules", "cycles-are-draws", "--plan", "KRvKA"],
    );
    let mut w = worker(&dir, port, "w", &["--threads", "2", "--exit-when-done"]);
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "every job",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(w.wait_exit(Duration::from_secs(30)), "{}", w.log());
    let out = dir.path("dl");
    let out_arg = out.display().to_string();
    let url = format!("http://127.0.0.1:{port}");
    let first = run_ok(&["download", "KRvKA", "-o", &out_arg, "--server", &url]);
    let closure = xqtb_core::closure_of(&["KRvKA".parse().unwrap()]);
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected: Vec<String> = closure
        .iter()
        .map(|&t| {
            storage_format::store::ShardDir::file_name(&TableId::new(RuleSet::CyclesAreDraws, t))
        })
        .collect();
    expected.sort();
    assert_eq!(files, expected, "{first}");
    let again = run_ok(&["download", "KRvKA", "-o", &out_arg, "--server", &url]);
    assert_eq!(again.matches("kept").count(), closure.len(), "{again}");
}

/// A log without its colours' escape sequences.
fn plain(log: &str) -> String {
    log.split('\x1b')
        .map(|part| {
            part.split_once('m')
                .filter(|_| part.starts_with('['))
                .map_or(part, |p| p.1)
        })
        .collect()
}

/// A worker that reads the tables its jobs depend on through a small block cache, instead of
/// decoding them whole, produces the same tables byte for byte: whole tables with captures into
/// others, and pawn slices that also read the slices their advances lead into.
#[test]
fn a_worker_reading_dependencies_through_a_cache_equals_a_local_solve() {
    let dir = TempDir::new("dependency-cache");
    let port = free_port();
    let plan = "KRvKP,KRvKA";
    let _c = coordinator(&dir, port, &["--plan", plan, "--slice-from-entries", "0"]);
    let mut w = worker(
        &dir,
        port,
        "cached",
        &[
            "--threads",
            "2",
            "--dependency-cache",
            "1MiB",
            "--exit-when-done",
        ],
    );
    let rt = rt();
    let s = rt.block_on(wait_until(
        port,
        "every job",
        Duration::from_secs(300),
        all_finished,
    ));
    assert!(w.wait_exit(Duration::from_secs(30)), "{}", w.log());
    let log = plain(&w.log());
    assert!(log.contains("dependencies_whole=false"), "{log}");
    assert!(!log.contains("dependencies_whole=true"), "{log}");
    let mut tables: Vec<String> = s.jobs.iter().map(sig_of).collect();
    tables.sort();
    tables.dedup();
    assert_eq!(tables, ["KPvK", "KRvK", "KRvKA", "KRvKP"]);
    for sig in &tables {
        let remote = rt.block_on(download(port, sig));
        assert!(
            remote == solo_shard(&dir, &["KRvKP", "KRvKA"], sig),
            "{sig}: the shard read through a cache differs from xqtb solve's"
        );
    }
}

/// A worker whose memory cannot hold a job's states in memory keeps them on local disk: the
/// coordinator leases it the job by its estimate with the states on disk, the worker solves it
/// in groups (encoding each as a part and verifying the table from its blocks), and the table
/// is byte for byte what `xqtb solve` gives in memory.
#[test]
fn a_worker_short_of_memory_keeps_states_on_disk_and_equals_a_local_solve() {
    let dir = TempDir::new("states-on-disk");
    let port = free_port();
    let cad = ["--rules", "cycles-are-draws"];
    let plan = run_ok(&["plan", "KRNvKR", cad[0], cad[1], "--json"]);
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let job = plan["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["signature"] == "KRNvKR")
        .unwrap();
    let in_memory = job["solve_bytes"].as_u64().unwrap();
    let on_disk = job["states_on_disk_bytes"].as_u64().unwrap();
    assert!(on_disk < in_memory, "{job}");
    // Room for the job with its states on disk, not with them in memory.
    let memory = ((on_disk + in_memory) / 2).to_string();
    let _c = coordinator(&dir, port, &["--plan", "KRNvKR", cad[0], cad[1]]);
    let mut w = worker(
        &dir,
        port,
        "short",
        &[
            "--threads",
            "2",
            "--memory",
            &memory,
            "--group-memory",
            "8MiB",
            "--exit-when-done",
        ],
    );
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "every job",
        Duration::from_secs(600),
        all_finished,
    ));
    assert!(w.wait_exit(Duration::from_secs(30)), "{}", w.log());
    let log = plain(&w.log());
    let done = log
        .lines()
        .find(|l| l.contains("job done") && l.contains("KRNvKR"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(done.contains("states_on_disk=true"), "{done}");
    let remote = rt.block_on(download(port, "KRNvKR"));
    assert!(
        remote == solo_shard_under(&dir, &["KRNvKR"], "KRNvKR", &cad),
        "the table solved with its states on disk differs from xqtb solve's"
    );
}

/// An uploaded pawn slice is sample-checked like a whole table, reading the slices its pawn
/// advances lead into from the store: a faulty worker's slice is refused and the worker
/// quarantined, and the table assembled from a healthy worker's slices equals a local solve.
#[test]
fn a_faulty_slice_is_refused_by_the_sample_check() {
    let dir = TempDir::new("faulty-slice");
    let port = free_port();
    let _c = coordinator(&dir, port, &["--plan", "KPvK", "--slice-from-entries", "0"]);
    // A healthy worker solves the first slices, so that the faulty one gets a slice that
    // reads others.
    let mut first = worker(
        &dir,
        port,
        "first",
        &["--threads", "1", "--debug-delay-upload-ms", "300"],
    );
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "two slices",
        Duration::from_secs(120),
        |s| s.jobs.iter().filter(|j| j.state == "finished").count() >= 2,
    ));
    first.kill();
    let mut faulty = worker(
        &dir,
        port,
        "faulty",
        &["--threads", "1", "--debug-corrupt-values", "20"],
    );
    let s = rt.block_on(wait_until(
        port,
        "the refusal of the faulty slice",
        Duration::from_secs(120),
        |s| s.jobs.iter().any(|j| j.last_error.contains("sample check")),
    ));
    let bad = s.workers.iter().find(|w| w.name == "faulty").unwrap();
    assert_eq!(bad.phase, "quarantined", "{bad:?}");
    let mut healthy = worker(
        &dir,
        port,
        "healthy",
        &["--threads", "1", "--exit-when-done"],
    );
    rt.block_on(wait_until(
        port,
        "every slice",
        Duration::from_secs(120),
        all_finished,
    ));
    assert!(
        healthy.wait_exit(Duration::from_secs(30)),
        "{}",
        healthy.log()
    );
    faulty.kill();
    let remote = rt.block_on(download(port, "KPvK"));
    assert!(
        remote == solo_shard(&dir, &["KPvK"], "KPvK"),
        "the assembled KPvK differs from xqtb solve's"
    );
}

/// A forced mate in 3 plies with two rooks (no table holds KRRvK here); it has more than one
/// shortest line, and the search may answer any of them.
const MATE_IN_3: &str = "4k4/9/9/9/9/9/9/9/R8/1R1K5 w";

/// A position no search settles within a few seconds.
const HARD: &str = "2bak4/4a4/4b4/9/9/2N6/9/9/4C4/3K5 w";

fn search_request(fen: &str) -> SearchRequest {
    SearchRequest {
        fen: fen.into(),
        ..Default::default()
    }
}

/// `Search` over gRPC: a mate with its distance and line, limits capped by the server, a bad
/// FEN refused naming the fault, a position whose material is stored answered from its table
/// with the probe's value, a third search at once refused as RESOURCE_EXHAUSTED, searches
/// cancelled when their clients go away, and the searches counted in the metrics.
#[test]
fn searches_are_capped_refused_when_busy_and_agree_with_the_tables() {
    let dir = TempDir::new("search");
    let data = dir.arg("coord");
    run_ok(&["solve", "KRvKN", "--data", &data]);
    let (port, metrics) = (free_port(), free_port());
    let metrics_listen = format!("127.0.0.1:{metrics}");
    let _c = coordinator(&dir, port, &["--metrics-listen", &metrics_listen]);
    wait_for_metrics(metrics);
    rt().block_on(async {
        let mut tb = TablebaseClient::new(channel(port).await);

        // Greedy limits are capped; the mate is found all the same.
        let r = tb
            .search(SearchRequest {
                max_plies: Some(1000),
                nodes: Some(1_000_000_000_000),
                time_ms: Some(3_600_000),
                threads: Some(100),
                hash_mib: Some(1 << 30),
                ..search_request(MATE_IN_3)
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!((r.result.as_str(), r.dtm_plies), ("win", Some(3)), "{r:?}");
        assert_eq!(r.source, "search");
        assert!(["mate", "stalemate"].contains(&r.end.as_str()), "{r:?}");
        assert_eq!(r.line.len(), 3, "{r:?}");
        assert_eq!(r.best_move, r.line[0].iccs);
        assert_eq!(r.side_to_move, "red");
        assert_eq!(
            r.limits,
            Some(SearchLimits {
                max_plies: 63,
                nodes: 20_000_000,
                time_ms: 10_000,
                threads: 2,
                hash_mib: 256,
            })
        );
        // The defaults of a request that names no limit.
        let r = tb
            .search(search_request(MATE_IN_3))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            r.limits,
            Some(SearchLimits {
                max_plies: 41,
                nodes: 20_000_000,
                time_ms: 10_000,
                threads: 1,
                hash_mib: 64,
            })
        );
        // The search library's report, through the mapping clients use: what `xqtb search
        // --json` answers with the same limits (the same line, too), times and counts aside.
        let report = rpc::search_report(r).unwrap();
        let cli = run_ok(&["search", MATE_IN_3, "--json", "--threads", "1"]);
        let cli: search::SearchReport = serde_json::from_str(cli.trim()).unwrap();
        assert_eq!(
            search::SearchReport {
                nodes: cli.nodes,
                table_hits: cli.table_hits,
                time_ms: cli.time_ms,
                ..report
            },
            cli
        );

        // A bad FEN, an illegal position and a limit of 0: INVALID_ARGUMENT naming the fault.
        let e = tb.search(search_request("4k4/9/9 w")).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
        assert!(
            e.message().contains("bad FEN") && e.message().contains("rows"),
            "{e}"
        );
        let e = tb
            .search(search_request("3k5/9/9/9/9/9/9/9/9/3K5 w"))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
        assert!(e.message().contains("kings"), "{e}");
        let e = tb
            .search(SearchRequest {
                threads: Some(0),
                ..search_request(MATE_IN_3)
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
        assert!(e.message().contains("threads must be at least 1"), "{e}");
        let e = tb
            .search(SearchRequest {
                rules: "chess".into(),
                ..search_request(MATE_IN_3)
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");

        // Positions whose material is stored: the table's value, line and end.
        for fen in common::positions("KRvKN", 12) {
            let p = tb
                .probe(ProbeRequest {
                    fen: fen.clone(),
                    rules: String::new(),
                })
                .await
                .unwrap()
                .into_inner();
            let s = tb.search(search_request(&fen)).await.unwrap().into_inner();
            assert_eq!(s.source, "tables", "{fen}");
            assert_eq!(
                (s.result.as_str(), s.dtm_plies),
                (p.category.as_str(), p.dtm_plies)
            );
            if p.category != "draw" {
                let m = tb
                    .mainline(MainlineRequest {
                        fen: fen.clone(),
                        rules: String::new(),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                let want: Vec<&str> = m.moves.iter().map(|m| m.iccs.as_str()).collect();
                let got: Vec<&str> = s.line.iter().map(|m| m.iccs.as_str()).collect();
                assert_eq!((got, s.end.as_str()), (want, m.ending.as_str()), "{fen}");
            }
        }

        // Two searches run at once; a third is refused at once, not queued.
        let slow = |tb: &TablebaseClient<Channel>| {
            let mut tb = tb.clone();
            tokio::spawn(async move {
                tb.search(SearchRequest {
                    time_ms: Some(3000),
                    ..search_request(HARD)
                })
                .await
            })
        };
        let running = [slow(&tb), slow(&tb)];
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = Instant::now();
        let e = tb.search(search_request(MATE_IN_3)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
        assert!(e.message().contains("try again"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(1));
        for r in running {
            let r = r.await.unwrap().unwrap().into_inner();
            assert_eq!((r.result.as_str(), r.stopped.as_str()), ("unknown", "time"));
            assert!(r.time_ms >= 3000, "{r:?}");
        }

        // Clients that give up cancel their searches: the places are free again long before
        // the searches' ten seconds are up.
        let gave_up = Instant::now();
        for _ in 0..2 {
            let mut tb = tb.clone();
            let call = tb.search(search_request(HARD));
            assert!(
                tokio::time::timeout(Duration::from_millis(300), call)
                    .await
                    .is_err()
            );
        }
        loop {
            match tb.search(search_request(MATE_IN_3)).await {
                Ok(r) => {
                    assert_eq!(r.into_inner().dtm_plies, Some(3));
                    break;
                }
                Err(e) => assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}"),
            }
            assert!(
                gave_up.elapsed() < Duration::from_secs(5),
                "the searches of clients that went away still run"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let text = scrape(metrics);
    for series in [
        "xqtb_searches_total{result=\"win\"}",
        "xqtb_searches_total{result=\"busy\"}",
        "xqtb_searches_total{result=\"unknown\"}",
        "xqtb_search_seconds_bucket",
    ] {
        assert!(text.contains(series), "metrics lack {series}:\n{text}");
    }
}

/// The pawn slices of a table shared by two workers each (KRPvKA under cycles-are-draws, one
/// job per slice, the slices of at least 200,000 entries shared): the table the slices make is
/// byte for byte the one `xqtb solve` makes alone.
#[test]
fn shared_pawn_slices_equal_a_local_solve() {
    let dir = TempDir::new("shared-slices");
    let port = free_port();
    let c = coordinator(
        &dir,
        port,
        &[
            "--rules",
            "cycles-are-draws",
            "--slice-from-entries",
            "0",
            "--share-by",
            "2",
            "--share-from-entries",
            "200000",
        ],
    );
    let _x = worker(&dir, port, "x", &["--threads", "1"]);
    let _y = worker(&dir, port, "y", &["--threads", "1"]);
    let rt = rt();
    rt.block_on(wait_until(
        port,
        "both workers",
        Duration::from_secs(60),
        |s| s.workers.len() >= 2,
    ));
    let server = format!("http://127.0.0.1:{port}");
    run_ok(&["submit", "KRPvKA", "--server", &server]);
    rt.block_on(wait_until(
        port,
        "the table's slices",
        Duration::from_secs(300),
        all_finished,
    ));
    let log = plain(&c.log());
    assert!(
        log.lines()
            .any(|l| l.contains("job leased") && l.contains("KRPvKA") && l.contains("seats=2")),
        "no slice of KRPvKA was shared: {log}"
    );
    let remote = rt.block_on(download(port, "KRPvKA"));
    let cad = ["--rules", "cycles-are-draws"];
    assert!(
        remote == solo_shard_under(&dir, &["KRPvKA"], "KRPvKA", &cad),
        "the table of shared slices differs from xqtb solve's"
    );
}
