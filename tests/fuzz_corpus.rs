//! Replays the kept fuzz corpus on stable Rust: every file of `fuzz/corpus/<target>/` and of
//! `fuzz/regressions/<target>/` (inputs that once made a target fail, kept after the fix) through
//! the same harness functions the cargo-fuzz targets run (`fuzz/harness/`). A panic is a
//! failure; all failing files of a target are named.

#[path = "../fuzz/harness/mod.rs"]
mod harness;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for kind in ["corpus", "regressions"] {
        let Ok(dir) = std::fs::read_dir(fuzz.join(kind).join(target)) else {
            continue;
        };
        let mut here: Vec<PathBuf> = dir
            .map(|e| e.expect("corpus entry").path())
            .filter(|p| p.is_file())
            .collect();
        here.sort();
        files.extend(here);
    }
    files
}

fn replay(target: &str, run: fn(&[u8])) {
    let files = inputs(target);
    assert!(!files.is_empty(), "no corpus for the fuzz target {target}");
    let mut failed = Vec::new();
    for f in &files {
        let data = std::fs::read(f).expect("corpus file");
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

#[test]
fn fen() {
    replay("fen", harness::fen::run);
}

#[test]
fn signature() {
    replay("signature", harness::signature::run);
}

#[test]
fn notation() {
    replay("notation", harness::notation::run);
}

#[test]
fn shard_import() {
    replay("shard_import", harness::shard_import::run);
}

#[test]
fn upload() {
    replay("upload", harness::upload::run);
    harness::upload::reset();
}

#[test]
fn probe() {
    replay("probe", harness::probe::run);
}
