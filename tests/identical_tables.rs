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

/// Every table of the closure of `tables`, solved by `xqtb solve` under `rules` with `extra`
/// arguments into a fresh store under `dir` (named after `name`), as exported shards; checks
/// `solve`'s output with `check`.
fn solved_shards(
    dir: &std::path::Path,
    name: &str,
    tables: &[&str],
    rules: &str,
    extra: &[&str],
    check: impl Fn(&str),
) -> Vec<Vec<u8>> {
    let data = dir.join(format!("data-{name}"));
    let data_s = data.to_str().unwrap();
    let mut args = vec!["solve", "--rules", rules, "--data", data_s];
    args.extend(tables);
    args.extend(extra);
    check(&run(&args));
    let sigs: Vec<xqtb_core::Signature> = tables.iter().map(|t| t.parse().unwrap()).collect();
    xqtb_core::closure_of(&sigs)
        .iter()
        .map(|sig| {
            let file = dir.join(format!("{}-{name}.xqtb", sig.name()));
            let file_s = file.to_str().unwrap();
            run(&[
                "export",
                &sig.name(),
                "-o",
                file_s,
                "--data",
                data_s,
                "--rules",
                rules,
            ]);
            std::fs::read(&file).unwrap()
        })
        .collect()
}

/// Reading the dependencies through a small block cache (`solve --dependency-cache`) gives the
/// same tables, byte for byte, as decoding them whole into memory: under the Asian rules, with
/// defenders and with pawns.
#[test]
fn a_dependency_cache_gives_the_same_tables() {
    let dir = std::env::temp_dir().join(format!("xqtb-dep-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tables = ["KRAvKR", "KRvKN", "KRvKP", "KRPvK"];
    let whole = solved_shards(&dir, "whole", &tables, "asian", &[], |out| {
        assert!(!out.contains("dependency cache:"), "{out}")
    });
    let cached = solved_shards(
        &dir,
        "cached",
        &tables,
        "asian",
        &["--dependency-cache", "1MiB"],
        |out| assert!(out.contains("dependency cache:"), "{out}"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(whole.len() >= 8, "{} tables", whole.len());
    assert!(whole == cached, "the tables differ");
}

/// Tables shared by three workers (`solve --states-on-disk --shared-by 3`, each worker with
/// its own groups of 65,536 slots) are the tables solved in memory, byte for byte; a table of
/// fewer groups than workers is shared by fewer, and the exchange is reported.
#[test]
fn tables_shared_by_several_workers_are_the_same_tables() {
    let dir = std::env::temp_dir().join(format!("xqtb-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tables = ["KRvKN", "KRNvK"];
    let rules = "cycles-are-draws";
    let states = dir.join("states");
    let states_s = states.to_str().unwrap();
    let whole = solved_shards(&dir, "whole", &tables, rules, &[], |_| {});
    let shared_args = [
        "--states-on-disk",
        states_s,
        "--group-memory",
        "128KiB",
        "--shared-by",
        "3",
        "--threads",
        "1",
    ];
    let shared = solved_shards(&dir, "shared", &tables, rules, &shared_args, |out| {
        assert!(out.contains("the workers sent each other"), "{out}")
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(whole.len() >= 4, "{} tables", whole.len());
    assert!(whole == shared, "the shared tables differ");
}
