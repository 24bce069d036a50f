//! A client we did not write: `tests/python/xqtb_client.py`, with Python stubs generated from
//! `proto/xqtb.proto` by grpcio-tools, against a coordinator serving a small store (KRvKN and
//! what it depends on). It probes positions with known answers, runs a batch probe against
//! `xqtb probe --batch`, follows a main line, runs a mate search, streams a shard download and
//! checks its CRC-32 against the checksums the server reports, and lists the services through
//! server reflection (v1alpha, as grpcio-reflection speaks).
//!
//! grpcio, grpcio-tools and grpcio-reflection come from PyPI: `.ci/run` installs them for
//! `python3`; elsewhere the test installs them into a virtual environment under the target
//! directory (kept for later runs). It skips with a message only where python3 is missing or
//! pip cannot install them.

mod common;

use common::{Proc, TempDir, free_port, positions, xqtb};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Python packages the client needs (PyPI names).
const PACKAGES: [&str; 3] = ["grpcio", "grpcio-tools", "grpcio-reflection"];

/// Whether `python` can import the packages.
fn has_grpc(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import grpc, grpc_tools, grpc_reflection"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program ARGS`; on failure, its standard error.
fn run(program: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {} failed ({}): {}",
            program.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A Python interpreter that can import grpcio, grpcio-tools and grpcio-reflection: `python3`
/// when it already can, else one of a virtual environment under the target directory into
/// which pip installs them (once; later runs reuse it). `Err` says why there is none.
fn python_with_grpc() -> Result<PathBuf, String> {
    let system = PathBuf::from("python3");
    run(&system, &["--version"]).map_err(|e| format!("python3 is unavailable: {e}"))?;
    if has_grpc(&system) {
        return Ok(system);
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-grpc-venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        let venv = venv.display().to_string();
        run(&system, &["-m", "venv", &venv]).map_err(|e| {
            format!("cannot make a virtual environment (Debian: apt-get install python3-venv): {e}")
        })?;
    }
    if !has_grpc(&python) {
        let mut args = vec!["-m", "pip", "install", "-q", "--retries", "2"];
        args.extend(PACKAGES);
        run(&python, &args).map_err(|e| format!("pip cannot install {PACKAGES:?}: {e}"))?;
    }
    if has_grpc(&python) {
        Ok(python)
    } else {
        Err(format!(
            "{} cannot import the packages pip installed",
            python.display()
        ))
    }
}

#[test]
fn a_python_client_generated_from_the_proto_works() {
    let python = match python_with_grpc() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipping the Python client test: {why}");
            return;
        }
    };
    let dir = TempDir::new("python-client");
    let data = dir.arg("data");
    xqtb(&["solve", "KRvKN", "--data", &data], "");
    // The batch's expected answers come from the command line over the same store: 40 legal
    // positions and one illegal one (its error text must match too).
    let mut fens = positions("KRvKN", 40);
    fens.push("5k3/9/9/9/9/R8/9/4n4/9/3K5 b".into());
    let expected = xqtb(&["probe", "--batch", "--data", &data], &fens.join("\n"));
    assert_eq!(expected.lines().count(), fens.len());
    let expected_file = dir.path("expected.jsonl");
    std::fs::write(&expected_file, expected).unwrap();

    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut coordinator = Proc::start(
        &dir,
        "coordinator",
        &["coordinator", "--listen", &listen, "--data", &data],
    );
    coordinator.wait_for_port(port, Duration::from_secs(30));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&python)
        .arg(root.join("tests/python/xqtb_client.py"))
        .arg("--server")
        .arg(&listen)
        .arg("--proto")
        .arg(root.join("proto/xqtb.proto"))
        .arg("--out")
        .arg(dir.path("generated"))
        .arg("--expected")
        .arg(&expected_file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the Python client failed ({}):\n{text}\ncoordinator log:\n{}",
        python.display(),
        coordinator.log()
    );
    assert!(text.lines().any(|l| l == "PASS"), "{text}");
    // Shown with --nocapture: what the client checked.
    println!("{text}");
}
