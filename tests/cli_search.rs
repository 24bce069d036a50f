//! `xqtb search` end to end: a mate without tables, lines that run into a stored table agreeing
//! with that table's own values once it is stored too, and clear errors.

mod common;

use common::{TempDir, positions, xqtb};
use serde_json::Value as Json;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn search_json(args: &[&str]) -> Json {
    let mut all = vec!["search", "--json", "--threads", "2"];
    all.extend_from_slice(args);
    serde_json::from_str(&xqtb(&all, "")).unwrap()
}

#[test]
fn a_mate_without_tables_is_proven_with_its_line() {
    let empty = TempDir::new("cli-search-empty");
    let fen = "4k4/9/9/9/9/9/9/9/9/R2K5 w";
    let r = search_json(&[fen, "--shards", &empty.arg("")]);
    assert_eq!(r["result"], "win", "{r}");
    assert_eq!(r["dtm_plies"], 3, "{r}");
    assert_eq!(r["source"], "search", "{r}");
    let line: Vec<&str> = r["line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["iccs"].as_str().unwrap())
        .collect();
    assert_eq!(line.len(), 3);
    assert_eq!(r["best_move"], line[0]);
    // The line is legal and ends with the side to move out of moves.
    let mut b = xiangqi::parse_fen(fen).unwrap();
    for m in line {
        let mv = xiangqi::notation::parse_iccs(&b, m).unwrap();
        b.make(mv);
    }
    assert!(!b.has_legal_move());
}

#[test]
fn lines_into_a_stored_table_agree_with_the_table_once_it_is_stored() {
    let dir = TempDir::new("cli-search-tables");
    let data = dir.arg("data");
    xqtb(&["solve", "KRvK", "--data", &data], "");
    let fens = positions("KRvKA", 12);
    let searched: Vec<Json> = fens
        .iter()
        .map(|fen| search_json(&[fen, "--data", &data, "--max-plies", "31"]))
        .collect();
    assert!(
        searched.iter().any(|r| r["table_hits"].as_u64() > Some(0)),
        "no line reached KRvK"
    );
    // Now the positions' own table is stored: the answer comes from it, as probe gives it.
    xqtb(&["solve", "KRvKA", "--data", &data], "");
    let mut compared = 0;
    for (fen, s) in fens.iter().zip(&searched) {
        let t = search_json(&[fen, "--data", &data]);
        assert_eq!(t["source"], "tables", "{t}");
        let p: Json =
            serde_json::from_str(&xqtb(&["probe", fen, "--json", "--data", &data], "")).unwrap();
        assert_eq!(t["result"], p["category"], "{fen}: {t} against {p}");
        assert_eq!(t["dtm_plies"], p["dtm_plies"], "{fen}");
        if s["result"] != "unknown" {
            compared += 1;
            assert_eq!(s["result"], t["result"], "{fen}: search {s}, table {t}");
            if p["dtm_plies"].is_u64() {
                assert_eq!(
                    s["dtm_plies"], t["dtm_plies"],
                    "{fen}: search {s}, table {t}"
                );
            }
        }
    }
    assert!(
        compared >= 6,
        "only {compared} of {} searches settled",
        fens.len()
    );
}

fn error_of(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.starts_with("error: ") && !err.contains("acktrace"),
        "{err}"
    );
    err
}

#[test]
fn bad_input_is_an_error_that_says_what_is_wrong() {
    let dir = TempDir::new("cli-search-errors");
    let fen = "4k4/9/9/9/9/9/9/9/9/R2K5 w";
    let absent = dir.arg("absent");
    assert!(error_of(&["search", fen, "--data", &absent]).contains("no table store"));
    assert!(error_of(&["search", "4k4/9/9 w"]).contains("bad FEN"));
    assert!(error_of(&["search", fen, "--time=-1", "--shards", &dir.arg("")]).contains("--time"));
    assert!(
        error_of(&["search", fen, "--max-plies", "0", "--shards", &dir.arg("")])
            .contains("max plies")
    );
    assert!(
        error_of(&["search", fen, "--hash", "1KiB", "--shards", &dir.arg("")]).contains("hash")
    );
}
