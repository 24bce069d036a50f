//! User errors print one message without a backtrace, also with `RUST_BACKTRACE=1`, and exit
//! with status 1 (2 for usage errors).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run xqtb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    let cases: [(&[&str], &str); 3] = [
        (&["probe", "not a fen", "--data", data], "bad FEN"),
        (&["solve", "KRXvK", "--data", data], "KRXvK"),
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
