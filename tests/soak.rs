//! Soak benchmark: one coordinator, two workers and many probe clients for ten minutes while
//! tables are generated and the workers are killed and restarted.
//!
//! ```sh
//! cargo test --release --test soak -- --ignored --nocapture
//! XQTB_SOAK_SECS=120 XQTB_SOAK_CLIENTS=50 XQTB_SOAK_TABLES=KRNvK cargo test --release --test soak -- --ignored --nocapture
//! ```
//! It prints, per minute, the probes answered, their p50/p99 latency and the errors; the
//! coordinator's resident memory after its start, after the warm-up (which commits a large table,
//! `WARM_LARGE`) and a minute of load, and at the end; and it checks what an
//! operator would: no probe fails (the coordinator is never killed, so no kill explains one),
//! the coordinator's memory grows by less than 10%, and every generated table is byte for
//! byte the table a local `xqtb solve` writes. Figures go to BENCHMARKS.md; nothing here is
//! asserted about speed.

mod common;

use common::{
    BIN, Proc, TempDir, channel as connect, download, free_port, metric, positions, scrape,
    wait_for_metrics,
};
use proto::v1::tablebase_client::TablebaseClient;
use proto::v1::{MainlineRequest, ProbeRequest, StatusRequest, SubmitRequest};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// Tables probed from the start (small, finished during the warm-up).
const PROBED: [&str; 3] = ["KRvKN", "KRvKR", "KNvK"];
/// Tables generated while the clients probe (with their dependencies): enough work to keep
/// two one-thread workers busy through much of the run, with worker kills in the middle of
/// jobs; `XQTB_SOAK_TABLES` (comma-separated) replaces them.
const GENERATED: &str = "KRNvK,KRNvKR";
/// A large table (with its dependencies) committed during the warm-up, under the other rule set,
/// so that the memory read at the start is that of a coordinator which has committed a table of
/// the size it commits during the run: the first large commit sizes the allocator's arenas and
/// sled's log buffers and cleaner once (a step BENCHMARKS.md, "Soak", measures), and the bound
/// is about what grows after that, commit after commit and request after request.
const WARM_LARGE: (&str, &str) = ("KRNvKR", "cycles-are-draws");
/// The server's default rule set, the one `PROBED` and `GENERATED` are solved under.
const DEFAULT_RULES: &str = "asian";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn start_worker(dir: &TempDir, port: u16, name: &str, run: u32) -> Proc {
    let url = format!("http://127.0.0.1:{port}");
    let cache = dir.arg(&format!("cache-{name}"));
    Proc::start(
        dir,
        &format!("worker-{name}-{run}"),
        &[
            "worker",
            "--coordinator",
            &url,
            "--cache",
            &cache,
            "--name",
            name,
            "--threads",
            "1",
        ],
    )
}

async fn finished(c: &mut TablebaseClient<Channel>, sigs: &[&str], rules: &str) -> bool {
    let Ok(s) = c.status(StatusRequest {}).await else {
        return false;
    };
    let s = s.into_inner();
    sigs.iter().all(|sig| {
        s.jobs.iter().any(|j| {
            j.state == "finished"
                && j.key
                    .as_ref()
                    .and_then(|k| k.table.as_ref())
                    .is_some_and(|t| t.signature == *sig && t.rules == rules)
        })
    })
}

/// One latency sample: minute of the run, milliseconds, whether it failed.
type Sample = (u64, f64, bool);

#[test]
#[ignore = "benchmark: ten minutes"]
fn soak_probes_while_workers_are_killed() {
    let secs = env_or("XQTB_SOAK_SECS", 600);
    let clients = env_or("XQTB_SOAK_CLIENTS", 200) as usize;
    let generated: Vec<String> = std::env::var("XQTB_SOAK_TABLES")
        .unwrap_or_else(|_| GENERATED.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let generated: Vec<&str> = generated.iter().map(|s| s.as_str()).collect();
    let dir = TempDir::new("soak");
    let port = free_port();
    let metrics_port = free_port();
    let data = dir.arg("coord");
    let plan = PROBED.join(",");
    let mut coord = Proc::start(
        &dir,
        "coordinator",
        &[
            "coordinator",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data",
            &data,
            "--plan",
            &plan,
            "--lease-ttl-secs",
            "5",
            // The soak kills workers on purpose, more often than a job may take: the point is
            // that work resumes, not that a job gives up.
            "--max-attempts",
            "50",
            "--metrics-listen",
            &format!("127.0.0.1:{metrics_port}"),
        ],
    );
    wait_for_metrics(metrics_port);
    coord.wait_for_port(port, Duration::from_secs(30));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut runs = [0u32; 2];
    let names = ["soak-a", "soak-b"];
    let mut workers: Vec<Option<Proc>> = names
        .iter()
        .map(|n| Some(start_worker(&dir, port, n, 0)))
        .collect();
    let mut status = rt.block_on(async { TablebaseClient::new(connect(port).await) });
    let warm = Instant::now();
    rt.block_on(async {
        status
            .submit(SubmitRequest {
                signatures: vec![WARM_LARGE.0.to_string()],
                rules: WARM_LARGE.1.to_string(),
            })
            .await
            .unwrap()
    });
    let rss_fresh = rss_kib(coord.child.id());
    while !rt.block_on(finished(&mut status, &PROBED, DEFAULT_RULES))
        || !rt.block_on(finished(&mut status, &[WARM_LARGE.0], WARM_LARGE.1))
    {
        assert!(
            warm.elapsed() < Duration::from_secs(1200),
            "the warm-up tables did not finish: {}",
            coord.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let rss_warm = rss_kib(coord.child.id());
    rt.block_on(async {
        status
            .submit(SubmitRequest {
                signatures: generated.iter().map(|s| s.to_string()).collect(),
                rules: String::new(),
            })
            .await
            .unwrap()
    });
    let fens: Arc<Vec<String>> = Arc::new(PROBED.iter().flat_map(|s| positions(s, 300)).collect());
    println!(
        "warm-up {:.1} s (coordinator {rss_fresh} KiB after its start, {rss_warm} KiB after the warm-up's commits); {clients} clients for {secs} s over {} positions",
        warm.elapsed().as_secs_f64(),
        fens.len()
    );
    // Let the coordinator settle (connections, caches) before its memory is read.
    let channels: Vec<Channel> = rt.block_on(async {
        let mut out = Vec::new();
        for _ in 0..8 {
            out.push(connect(port).await);
        }
        out
    });
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let answered = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..clients)
        .map(|k| {
            let (fens, stop, answered) = (fens.clone(), stop.clone(), answered.clone());
            let mut c = TablebaseClient::new(channels[k % channels.len()].clone());
            rt.spawn(async move {
                let mut out: Vec<Sample> = Vec::new();
                let mut i = k;
                while !stop.load(Relaxed) {
                    let fen = fens[i % fens.len()].clone();
                    i += clients;
                    let t = Instant::now();
                    // One request in 50 is a main line (heavier), the rest plain probes.
                    let ok = if i % 50 == 0 {
                        c.mainline(MainlineRequest {
                            fen,
                            rules: String::new(),
                        })
                        .await
                        .is_ok()
                    } else {
                        c.probe(ProbeRequest {
                            fen,
                            rules: String::new(),
                        })
                        .await
                        .is_ok()
                    };
                    answered.fetch_add(1, Relaxed);
                    out.push((
                        start.elapsed().as_secs() / 60,
                        t.elapsed().as_secs_f64() * 1e3,
                        !ok,
                    ));
                    // A client thinks a little between requests, as a user of the web page does.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                out
            })
        })
        .collect();
    // Memory is read once the load has run for a minute (connections open, allocator arenas and
    // caches warm), then every few seconds.
    std::thread::sleep(Duration::from_secs(60.min(secs / 4)));
    let pid = coord.child.id();
    let rss_start = rss_kib(pid);
    let mut rss_by_minute = std::collections::BTreeMap::<u64, u64>::new();
    // The probe cache's size and misses, last read in each minute: what of the RSS is cache.
    let mut cache_by_minute = std::collections::BTreeMap::<u64, (f64, f64)>::new();
    let mut next_scrape = Instant::now();
    // Kill a worker every 90 s (alternately), restart it 5 s later.
    let mut kills = 0;
    let mut next_kill = Instant::now() + Duration::from_secs(60);
    let end = start + Duration::from_secs(secs);
    while Instant::now() < end {
        if Instant::now() >= next_kill {
            let w = kills % 2;
            if let Some(mut p) = workers[w].take() {
                p.kill();
            }
            println!(
                "{:>4.0} s: killed worker {} ({} requests answered so far)",
                start.elapsed().as_secs_f64(),
                names[w],
                answered.load(Relaxed)
            );
            std::thread::sleep(Duration::from_secs(5));
            runs[w] += 1;
            workers[w] = Some(start_worker(&dir, port, names[w], runs[w]));
            kills += 1;
            next_kill += Duration::from_secs(90);
        }
        std::thread::sleep(Duration::from_millis(500));
        let rss = rss_by_minute
            .entry(start.elapsed().as_secs() / 60)
            .or_default();
        *rss = (*rss).max(rss_kib(pid));
        if Instant::now() >= next_scrape {
            let text = scrape(metrics_port);
            cache_by_minute.insert(
                start.elapsed().as_secs() / 60,
                (
                    metric(&text, "xqtb_block_cache_bytes").unwrap_or(0.0),
                    metric(&text, "xqtb_block_cache_misses_total").unwrap_or(0.0),
                ),
            );
            next_scrape += Duration::from_secs(5);
        }
    }
    stop.store(true, Relaxed);
    let samples: Vec<Sample> = rt.block_on(async {
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    let rss_end = rss_kib(pid);
    println!(
        "| minute | requests | p50 ms | p99 ms | errors | coordinator RSS, max KiB | probe cache KiB | blocks read |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let minutes = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let mut errors = 0;
    for m in 0..=minutes {
        let mut lat: Vec<f64> = samples.iter().filter(|s| s.0 == m).map(|s| s.1).collect();
        let err = samples.iter().filter(|s| s.0 == m && s.2).count();
        errors += err;
        if lat.is_empty() {
            continue;
        }
        lat.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
        let rss = rss_by_minute
            .get(&m)
            .map_or("-".to_string(), |k| k.to_string());
        let (cache, misses) = cache_by_minute
            .get(&m)
            .map_or(("-".to_string(), "-".to_string()), |(bytes, misses)| {
                (format!("{:.0}", bytes / 1024.0), format!("{misses:.0}"))
            });
        println!(
            "| {m} | {} | {:.2} | {:.2} | {err} | {rss} | {cache} | {misses} |",
            lat.len(),
            pct(0.5),
            pct(0.99)
        );
    }
    let growth = rss_end as f64 / rss_start.max(1) as f64 - 1.0;
    println!(
        "coordinator memory: {rss_start} KiB after a minute of load, {rss_end} KiB at the end ({:+.1}%); {kills} worker kills; {errors} failed requests of {}",
        growth * 100.0,
        samples.len()
    );
    // The generated tables finish after the soak if they have not yet, and equal a local solve.
    let wait = Instant::now();
    while !rt.block_on(finished(&mut status, &generated, DEFAULT_RULES)) {
        assert!(
            wait.elapsed() < Duration::from_secs(1800),
            "the generated tables did not finish: {}",
            coord.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "generated tables finished {:.0} s after the start",
        start.elapsed().as_secs_f64()
    );
    drop(workers);
    let local = dir.arg("local");
    let mut solve = vec!["solve", "--threads", "2", "--data", &local];
    solve.extend(&generated);
    solve.extend(PROBED);
    let out = Command::new(BIN).args(&solve).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for sig in generated.iter().chain(PROBED.iter()) {
        let file = dir.arg(&format!("{sig}.local.xqtb"));
        let out = Command::new(BIN)
            .args(["export", sig, "-o", &file, "--data", &local])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let served = rt.block_on(download(&mut status, sig));
        assert!(
            served == std::fs::read(&file).unwrap(),
            "{sig}: the coordinator's table differs from a local solve"
        );
    }
    println!("every table equals a local solve");
    assert_eq!(errors, 0, "failed requests");
    assert!(
        growth < 0.10,
        "coordinator memory grew by {:.1}%",
        growth * 100.0
    );
}
