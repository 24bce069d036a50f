//! Every row of the published perft table (`tests/data/perft.tsv`, a copy of the shared test data).
//! Rows above `CI_LIMIT` leaves run only with `--ignored`.

use xiangqi::{parse_fen, perft};

const CI_LIMIT: u64 = 20_000_000;

struct Row {
    name: String,
    fen: String,
    depth: u32,
    nodes: u64,
}

fn rows() -> Vec<Row> {
    include_str!("data/perft.tsv")
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                name: f[0].to_string(),
                fen: f[1].to_string(),
                depth: f[2].parse().unwrap(),
                nodes: f[3].parse().unwrap(),
            }
        })
        .collect()
}

fn check(filter: impl Fn(&Row) -> bool) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for row in rows().iter().filter(|r| filter(r)) {
        let mut board = parse_fen(&row.fen).unwrap_or_else(|e| panic!("{}: {e}", row.name));
        let got = perft(&mut board, row.depth);
        ran += 1;
        if got != row.nodes {
            failures.push(format!(
                "{} depth {}: got {got}, want {}",
                row.name, row.depth, row.nodes
            ));
        }
    }
    assert!(ran > 0, "no perft rows selected");
    assert!(
        failures.is_empty(),
        "perft mismatches:\n{}",
        failures.join("\n")
    );
}

#[test]
fn perft_rows_up_to_ci_limit() {
    check(|r| r.nodes <= CI_LIMIT);
}

#[test]
#[ignore = "large perft rows; run with --ignored"]
fn perft_rows_above_ci_limit() {
    check(|r| r.nodes > CI_LIMIT);
}

#[test]
fn perft_is_unchanged_under_both_symmetries() {
    for row in rows().iter().filter(|r| r.nodes <= 200_000) {
        let board = parse_fen(&row.fen).unwrap();
        let mut mirrored = board.mirrored();
        let mut rotated = board.rotated();
        assert_eq!(
            perft(&mut mirrored, row.depth),
            row.nodes,
            "{} mirrored",
            row.name
        );
        assert_eq!(
            perft(&mut rotated, row.depth),
            row.nodes,
            "{} rotated",
            row.name
        );
    }
}
