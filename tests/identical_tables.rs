//! Tables stay byte-identical across refactorings: the 36 reference-solver tables are solved and
//! exported with the `xqtb` binary, and each shard file's length and checksum must equal the ones
//! recorded in `tests/data/reference-shards.tsv` (written by the build that first produced them).
//! A deliberate change of the values or of the shard format updates that file in the same commit
//! and says why. `scripts/shard-digests.sh` compares whole files (SHA-256), also for KRNvKR.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run xqtb");
    assert!(
        out.status.success(),
        "xqtb {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn reference_tables_are_byte_identical_to_the_recorded_ones() {
    let recorded = include_str!("data/reference-shards.tsv");
    let expected: Vec<(&str, u64, u32)> = recorded
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0],
                f[1].parse().unwrap(),
                u32::from_str_radix(f[2], 16).unwrap(),
            )
        })
        .collect();
    assert_eq!(expected.len(), 36);
    let dir = std::env::temp_dir().join(format!("xqtb-identical-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let data_s = data.to_str().unwrap();
    let mut args = vec!["solve", "--rules", "cycles-are-draws", "--data", data_s];
    args.extend(expected.iter().map(|e| e.0));
    run(&args);
    let mut differ = Vec::new();
    for &(table, len, crc) in &expected {
        let file: PathBuf = dir.join(format!("{table}.xqtb"));
        run(&[
            "export",
            table,
            "--rules",
            "cycles-are-draws",
            "-o",
            file.to_str().unwrap(),
            "--data",
            data_s,
        ]);
        let bytes = std::fs::read(&file).unwrap();
        let got = (
            bytes.len() as u64,
            crc32fast::hash(&bytes[..bytes.len() - 4]),
        );
        if got != (len, crc) {
            differ.push(format!(
                "{table}: {} bytes, CRC {:08x}; recorded {len} bytes, CRC {crc:08x}",
                got.0, got.1
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(differ.is_empty(), "tables changed:\n{}", differ.join("\n"));
}

/// Reading the dependencies through a small block cache (`solve --dependency-cache`) gives the
/// same tables, byte for byte, as decoding them whole into memory: under the Asian rules, with
/// defenders and with pawns.
#[test]
fn a_dependency_cache_gives_the_same_tables() {
    let dir = std::env::temp_dir().join(format!("xqtb-dep-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tables = ["KRAvKR", "KRvKN", "KRvKP", "KRPvK"];
    let shards: Vec<Vec<Vec<u8>>> = [None, Some("1MiB")]
        .iter()
        .enumerate()
        .map(|(i, cache)| {
            let data = dir.join(format!("data-{i}"));
            let data_s = data.to_str().unwrap();
            let mut args = vec!["solve", "--rules", "asian", "--data", data_s];
            args.extend(tables);
            if let Some(size) = cache {
                args.extend(["--dependency-cache", size]);
            }
            let out = run(&args);
            assert_eq!(out.contains("dependency cache:"), cache.is_some(), "{out}");
            let closure = xqtb_core::closure_of(&tables.map(|t| t.parse().unwrap()));
            closure
                .iter()
                .map(|sig| {
                    let file = dir.join(format!("{}-{i}.xqtb", sig.name()));
                    run(&[
                        "export",
                        &sig.name(),
                        "-o",
                        file.to_str().unwrap(),
                        "--data",
                        data_s,
                    ]);
                    std::fs::read(&file).unwrap()
                })
                .collect()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(shards[0].len() >= 8, "{} tables", shards[0].len());
    assert!(shards[0] == shards[1], "the tables differ");
}
