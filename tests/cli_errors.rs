//! User errors print one message without a backtrace, also with `RUST_BACKTRACE=1`, and exit
//! with status 1 (2 for usage errors). Where the fix is obvious the message says it: a missing
//! table names the command that generates it, an unreachable server its URL and the error.

mod common;

use common::{Proc, TempDir, free_port};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn run(args: &[&str]) -> (i32, String) {
    run_in(Path::new("."), args)
}

/// Runs `xqtb ARGS` in `dir` (without the caller's `XQTB_TOKEN`): its exit status and standard
/// error.
fn run_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .env_remove("XQTB_TOKEN")
        .output()
        .expect("run xqtb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a command that must fail with status 1 and one `error: ` line; returns that line.
fn error_of(dir: &Path, args: &[&str]) -> String {
    let (code, stderr) = run_in(dir, args);
    assert_eq!(code, 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(!stderr.contains("acktrace"), "{args:?}: {stderr}");
    stderr.trim_end().to_string()
}

/// The command a message quotes between backticks after `generate it`.
fn quoted_command(message: &str) -> Vec<String> {
    let rest = message.split("generate it").nth(1).expect("a fix");
    let command = rest.split('`').nth(1).expect("a quoted command");
    command.split_whitespace().map(str::to_string).collect()
}

#[test]
fn errors_are_one_message_without_a_backtrace() {
    let dir = std::env::temp_dir().join(format!("xqtb-cli-errors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let (code, stderr) = run(&["probe", "4k4/9/9/9/9/9/9/9/9/R3K4 w", "--data", data]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no table store"), "{stderr}");
    assert_eq!(run(&["solve", "KRvK", "--data", data]).0, 0);
    let states = dir.join("states");
    let states = states.to_str().unwrap();
    let shared = ["solve", "KRvK", "--data", data, "--states-on-disk", states];
    let cases: [(&[&str], &str); 4] = [
        (&["probe", "not a fen", "--data", data], "bad FEN"),
        (&["solve", "KRXvK", "--data", data], "KRXvK"),
        (
            &[&shared[..], &["--shared-by", "2"]].concat(),
            "--rules cycles-are-draws",
        ),
        (
            &["probe", "4k4/9/9/9/9/9/9/9/9/RC1K5 w", "--data", data],
            "KRCvK",
        ),
    ];
    for (args, want) in cases {
        let args: &[&str] = args;
        let (code, stderr) = run(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("acktrace"), "{args:?}: {stderr}");
    }
    // An illegal position's reason is said once, not once per error that carries it.
    let check = "Black is in check but it is not Black's turn";
    for args in [
        &["probe", "4k4/9/9/9/9/9/9/9/4R4/3K5 w", "--data", data][..],
        &["adjudicate", "4k4/9/9/9/9/9/9/9/4R4/3K5 w", "e1e0"][..],
    ] {
        let (code, stderr) = run(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert_eq!(stderr.matches(check).count(), 1, "{args:?}: {stderr}");
    }
    let (code, stderr) = run(&["probe", "--no-such-flag"]);
    assert_eq!(code, 2, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::process::Stdio;
    let dir = std::env::temp_dir().join(format!("xqtb-cli-pipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    assert_eq!(run(&["solve", "KRvK", "--data", data]).0, 0);
    let mut child = Command::new(BIN)
        .args(["probe", "4k4/9/9/9/9/9/9/9/9/R2K5 w", "--data", data])
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run xqtb");
    // The reader goes away before the command writes (it opens the store first).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A KRCvK position: the tests' stores hold only KRvK.
const KRCVK: &str = "4k4/9/9/9/9/9/9/9/9/RC1K5 w";

#[test]
fn a_missing_table_names_the_command_that_generates_it() {
    let dir = TempDir::new("cli-missing-table");
    let data = dir.arg("data");
    assert_eq!(run(&["solve", "KRvK", "--data", &data]).0, 0);
    let root = dir.root();

    let e = error_of(root, &["probe", KRCVK, "--data", &data]);
    let fix = format!("generate it with `xqtb generate KRCvK --data {data}`");
    assert!(e.contains("table KRCvK is not in the store"), "{e}");
    assert!(e.ends_with(&fix), "{e}");
    let e = error_of(root, &["mainline", KRCVK, "--data", &data]);
    assert!(e.ends_with(&fix), "{e}");
    let e = error_of(root, &["verify", "KRCvK", "--data", &data]);
    assert!(e.ends_with(&fix), "{e}");
    // A rule set other than the default is named; the default is not.
    let e = error_of(
        root,
        &[
            "probe",
            KRCVK,
            "--rules",
            "cycles-are-draws",
            "--data",
            &data,
        ],
    );
    assert!(
        e.ends_with(&format!(
            "generate it with `xqtb generate KRCvK --rules cycles-are-draws --data {data}`"
        )),
        "{e}"
    );
    // Without --data the command reads ./xqtb-data, which is generate's default too.
    assert_eq!(run_in(root, &["solve", "KRvK"]).0, 0);
    let e = error_of(root, &["probe", KRCVK]);
    assert!(e.ends_with("generate it with `xqtb generate KRCvK`"), "{e}");
    // A shard directory: generate, then export into it (a path with a space comes quoted).
    let shards = dir.path("my shards");
    std::fs::create_dir_all(&shards).unwrap();
    let shards = shards.display().to_string();
    let e = error_of(root, &["probe", KRCVK, "--shards", &shards]);
    assert!(
        e.ends_with(&format!(
            "generate it with `xqtb generate KRCvK` and write its shard file there with `xqtb export KRCvK -o '{shards}/KRCvK.asian.xqtb'`"
        )),
        "{e}"
    );

    // The command named is the fix: after it, the probe answers.
    let e = error_of(root, &["probe", KRCVK, "--data", &data]);
    let command = quoted_command(&e);
    assert_eq!(command[..3], ["xqtb", "generate", "KRCvK"], "{e}");
    let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
    let (code, stderr) = run_in(root, &args);
    assert_eq!(code, 0, "{command:?}: {stderr}");
    let (code, stderr) = run_in(root, &["probe", KRCVK, "--data", &data]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn an_unreachable_server_is_named_with_the_error() {
    let dir = TempDir::new("cli-unreachable");
    let root = dir.root();
    // Nothing listens on a port that was free a moment ago.
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = dir.arg("out");
    let commands: [&[&str]; 5] = [
        &["query", KRCVK, "--server", &url],
        &["status", "--server", &url],
        &["submit", "KRvK", "--server", &url],
        &["download", "KRvK", "-o", &out, "--server", &url],
        &["health", "--server", &url],
    ];
    for args in commands {
        let e = error_of(root, args);
        assert!(
            e.starts_with(&format!("error: cannot reach the coordinator at {url}: ")),
            "{e}"
        );
        assert!(e.contains("Connection refused"), "{e}");
        assert!(e.contains("is the coordinator running"), "{e}");
        // The transport's causes are not repeated.
        assert!(!e.contains("tcp connect error: tcp connect error"), "{e}");
    }
    let e = error_of(root, &["query", KRCVK, "--server", "127.0.0.1:7070"]);
    assert!(e.contains("bad coordinator URL '127.0.0.1:7070'"), "{e}");
    assert!(e.contains("http://HOST:PORT"), "{e}");
    let https = url.replace("http://", "https://");
    let e = error_of(root, &["status", "--server", &https]);
    assert!(e.contains(&https) && e.contains("needs --ca FILE"), "{e}");
    let e = error_of(root, &["status", "--server", &url, "--ca", "ca.pem"]);
    assert!(e.contains("use https://"), "{e}");
}

#[test]
fn a_coordinator_s_refusals_say_what_to_do() {
    let dir = TempDir::new("cli-coordinator-errors");
    let root = dir.root();
    let data = dir.arg("data");
    assert_eq!(run(&["solve", "KRvK", "--data", &data]).0, 0);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}");
    let mut coordinator = Proc::start(
        &dir,
        "coordinator",
        &[
            "coordinator",
            "--listen",
            &listen,
            "--data",
            &data,
            "--token",
            "s3cret",
            "--token-for-reads",
        ],
    );
    coordinator.wait_for_port(port, Duration::from_secs(30));

    let e = error_of(root, &["query", KRCVK, "--server", &url]);
    assert!(
        e.contains(&format!("the coordinator at {url} refused")),
        "{e}"
    );
    assert!(
        e.contains("give its cluster token with --token or XQTB_TOKEN"),
        "{e}"
    );
    let e = error_of(root, &["status", "--server", &url, "--token", "wrong"]);
    assert!(e.contains("wrong token; check --token"), "{e}");
    let token = ["--token", "s3cret"];
    let e = error_of(
        root,
        &[&["query", KRCVK, "--server", &url][..], &token].concat(),
    );
    assert!(e.contains("table KRCvK is not in the store"), "{e}");
    let submit = format!("`xqtb submit KRCvK --server {url}`");
    assert!(e.contains(&submit), "{e}");
    let e = error_of(
        root,
        &[
            &[
                "query",
                KRCVK,
                "--rules",
                "cycles-are-draws",
                "--server",
                &url,
            ][..],
            &token,
        ]
        .concat(),
    );
    assert!(
        e.contains(&format!(
            "`xqtb submit KRCvK --rules cycles-are-draws --server {url}`"
        )),
        "{e}"
    );
    let out = dir.arg("out");
    let e = error_of(
        root,
        &[
            &["download", "krck", "-o", &out, "--server", &url][..],
            &token,
        ]
        .concat(),
    );
    assert!(e.contains(&submit), "{e}");
    let e = error_of(
        root,
        &[&["query", "not a fen", "--server", &url][..], &token].concat(),
    );
    assert!(e.starts_with("error: bad FEN"), "{e}");
    coordinator.kill();
}

/// The main line of a KRPvKR position, moves then cycle (`xqtb mainline --json`): in ICCS, and
/// its 16th move, e7f7, is also e6f6 (a rook's) read with ranks 1-10.
const MAINLINE_FEN: &str = "7r1/4k4/9/9/5P3/9/9/9/9/3K2R2 w";
const MAINLINE: &str = "g0g8 e8e7 g8g1 h9h6 g1e1 e7f7 e1f1 f7e7 f5f6 e7e8 f6f7 h6e6 f7f8 e8e7 \
                        f1g1 e7f7 f8e8 f7e7 e8d8 e7f7 g1g7 f7f8 g7g8 f8f9 g8g1 e6a6 g1f1 f9e9 \
                        d8d9 e9e8 f1e1 e8f8 e1e2 a6a0 d0d1 a0a1 d1d0 a1a0";

/// Runs `xqtb ARGS`: its exit status, standard output and standard error.
fn output(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run xqtb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn adjudicate_reads_the_moves_in_one_form_for_the_whole_sequence() {
    let here = Path::new(".");
    // A main line with a move ambiguous on its own is read whole, as ICCS.
    let args: Vec<&str> = ["adjudicate", MAINLINE_FEN]
        .into_iter()
        .chain(MAINLINE.split_whitespace())
        .collect();
    let (code, stdout, stderr) = output(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("verdict: black loses by perpetual-check"),
        "{stdout}"
    );

    // Two rooks a side stacked on the a-file: the repetition is legal in both readings.
    let fen = "3k5/9/9/r8/r8/9/R8/R8/9/4K4 w";
    let shuffle = ["adjudicate", fen, "a3b3", "a6b6", "b3a3", "b6a6"];
    let e = error_of(here, &shuffle);
    assert!(
        e.contains(
            "as ICCS they are a3b3 a6b6 b3a3 b6a6, with ranks 1-10 they are a2b2 a5b5 b2a2 \
             b5a5 (ICCS)"
        ),
        "{e}"
    );
    assert!(
        e.ends_with("pass --notation iccs or --notation ranks-1-10"),
        "{e}"
    );
    // --notation settles it.
    for (notation, want) in [
        ("iccs", ["a3b3", "a6b6", "b3a3", "b6a6"]),
        ("ranks-1-10", ["a2b2", "a5b5", "b2a2", "b5a5"]),
    ] {
        let args = [&shuffle[..], &["--notation", notation, "--json"]].concat();
        let (code, stdout, stderr) = output(&args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        let cycle: Vec<&str> = v["cycle"]
            .as_array()
            .expect("a cycle")
            .iter()
            .map(|c| c["iccs"].as_str().expect("iccs"))
            .collect();
        assert_eq!(cycle, want, "{notation}: {stdout}");
    }

    // An illegal move is reported in the reading that got further, with its number and
    // position: ICCS here (g0g8 has no ranks-1-10 reading); the king may not leave the palace.
    let e = error_of(
        here,
        &["adjudicate", MAINLINE_FEN, "g0g8", "e8e7", "g8g1", "e7e6"],
    );
    assert_eq!(
        e,
        "error: move 4 ('e7e6') in 7r1/9/4k4/9/5P3/9/9/9/6R2/3K5 b - - 0 1, reading the moves as \
         ICCS: move 'e7e6': e7e6 is not a legal move in this position; with ranks 1-10 they fail \
         earlier, at move 1"
    );
    // Named, the form is the only one tried.
    let e = error_of(
        here,
        &[
            "adjudicate",
            MAINLINE_FEN,
            "g0g8",
            "--notation",
            "ranks-1-10",
        ],
    );
    assert!(
        e.contains(
            "move 1 ('g0g8') in 7r1/4k4/9/9/5P3/9/9/9/9/3K2R2 w - - 0 1, reading the moves \
             with ranks 1-10: malformed move 'g0g8'"
        ),
        "{e}"
    );
}
