//! Helpers shared by the end-to-end tests that start real `xqtb` processes: a temporary
//! directory, a child process killed when dropped (its log kept for failure messages), a free
//! port, running a command to completion, legal positions of a table, and a coordinator's
//! channel and shard downloads over gRPC.
//!
//! Each test crate that says `mod common;` compiles its own copy and uses only some of it,
//! hence the `dead_code` allowance.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xiangqi::Color;
use xqtb_core::TableIndex;

/// The `xqtb` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

/// A fresh directory under the system's temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `xqtb-test-NAME-PID`, emptied first (a crashed earlier run may have left it behind).
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("xqtb-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.0
    }

    /// `rel` inside the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// `rel` inside the directory, as a command-line argument.
    pub fn arg(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An `xqtb` child process, killed when dropped, its standard error in `DIR/NAME.log`.
pub struct Proc {
    /// The process.
    pub child: Child,
    log: PathBuf,
}

impl Proc {
    /// Starts `xqtb ARGS` with `RUST_LOG=info` and without the caller's `XQTB_TOKEN` (a token
    /// in the developer's environment must not change what a test sees).
    pub fn start(dir: &TempDir, name: &str, args: &[&str]) -> Proc {
        let log = dir.path(&format!("{name}.log"));
        let child = Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("XQTB_TOKEN")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Proc { child, log }
    }

    /// What the process wrote to standard error so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the process and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits up to `timeout` for the process to exit; whether it exited successfully.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Waits until something accepts connections on 127.0.0.1:`port`; panics with the log if
    /// the process exits first or nothing listens within `timeout`.
    pub fn wait_for_port(&mut self, port: u16, timeout: Duration) {
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("xqtb exited ({status}) before listening: {}", self.log());
            }
            assert!(
                start.elapsed() < timeout,
                "nothing listens on port {port} after {timeout:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `xqtb` as a server on a free port of 127.0.0.1 (`args` makes its arguments from the
/// address to listen on) and waits until its log shows `ready`, the server's own word that it
/// bound that address; returns it and the address. A free port is free only until someone
/// binds it, and tests run in parallel: waiting for anything to answer on the port could
/// reach another test's server. When the port was taken meanwhile the server exits, and it
/// is started again on another.
pub fn start_server(
    dir: &TempDir,
    name: &str,
    args: impl Fn(&str) -> Vec<String>,
    ready: &str,
) -> (Proc, String) {
    for _ in 0..5 {
        let addr = format!("127.0.0.1:{}", free_port());
        let argv = args(&addr);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut p = Proc::start(
            dir,
            &format!("{name}-{}", addr.replace([':', '.'], "-")),
            &argv,
        );
        let start = Instant::now();
        loop {
            if p.log().contains(ready) {
                return (p, addr);
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                let log = p.log();
                assert!(
                    log.contains("in use"),
                    "{name} exited ({status}) before it was ready: {log}"
                );
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{name} was not ready after 30 s: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("{name}: five free ports in a row were taken before the server bound them")
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `xqtb ARGS` to completion with `stdin`, returning standard output; panics on failure.
pub fn xqtb(args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("XQTB_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "xqtb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `n` distinct legal positions of `signature` (both sides to move, the side not to move not
/// in check), from a fixed seed.
pub fn positions(signature: &str, n: usize) -> Vec<String> {
    let index = TableIndex::new(signature.parse().unwrap());
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = std::collections::BTreeSet::new();
    while out.len() < n {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let slot = (seed >> 20) % index.size();
        let side = if seed & (1 << 40) == 0 {
            Color::Red
        } else {
            Color::Black
        };
        if let Some(b) = index.board(slot, side)
            && !b.opponent_in_check()
        {
            out.insert(b.fen());
        }
    }
    out.into_iter().collect()
}

/// A channel to the coordinator on `port` of 127.0.0.1, retried for up to 30 s while it starts.
pub async fn channel(port: u16) -> tonic::transport::Channel {
    let url = format!("http://127.0.0.1:{port}");
    let start = Instant::now();
    loop {
        match tonic::transport::Channel::from_shared(url.clone())
            .unwrap()
            .connect()
            .await
        {
            Ok(c) => return c,
            Err(e) if start.elapsed() > Duration::from_secs(30) => panic!("no coordinator: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The shard file of `sig` (the server's default rule set) as the coordinator streams it, each
/// chunk within gRPC's default 4 MiB message limit.
pub async fn download(
    c: &mut proto::v1::tablebase_client::TablebaseClient<tonic::transport::Channel>,
    sig: &str,
) -> Vec<u8> {
    let mut stream = c
        .download_shard(proto::v1::DownloadShardRequest {
            signature: sig.into(),
            rules: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.message().await.unwrap() {
        assert!(chunk.data.len() <= 4 << 20);
        bytes.extend_from_slice(&chunk.data);
    }
    bytes
}

/// The Prometheus text served on `port`.
pub fn scrape(port: u16) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out
}

/// Waits until something listens on the metrics `port`.
pub fn wait_for_metrics(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no metrics endpoint on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the unlabelled series `name` in Prometheus text `text`, if it is there.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}
