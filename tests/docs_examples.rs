//! Every example in `docs/` is a command that runs: a `console` block quotes `$ xqtb ...` lines
//! and what each prints, and this test runs them and compares. The blocks of one document run in
//! the order they appear, in one directory of its own, so a document's first block can `solve`
//! the tables its later blocks probe (in `./xqtb-data`, the default store). In a quoted output a
//! line `...` stands for any number of lines (timings, for example).
//!
//! So that no example escapes the check, a position (a FEN) quoted anywhere in a document outside
//! a `console` block fails the test: an example that is worth showing is worth running.

mod common;

use common::{BIN, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One `$ xqtb ...` line of a document and the output quoted under it.
struct Example {
    /// Where the command is quoted, `docs/FILE.md:LINE`.
    place: String,
    /// The arguments after `xqtb`.
    args: Vec<String>,
    /// The quoted output, line by line.
    expected: Vec<String>,
}

/// The `console` examples of one document, and any FEN quoted outside them.
fn read_document(path: &Path) -> (Vec<Example>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
    let (mut examples, mut stray) = (Vec::<Example>::new(), Vec::new());
    let mut in_console = false;
    let mut in_other_block = false;
    for (n, line) in text.lines().enumerate() {
        let place = format!("{name}:{}", n + 1);
        if line.starts_with("```") {
            if in_console || in_other_block {
                (in_console, in_other_block) = (false, false);
            } else if line.trim() == "```console" {
                in_console = true;
            } else {
                in_other_block = true;
            }
            continue;
        }
        if !in_console {
            stray.extend(fens_in(line).into_iter().map(|f| format!("{place}: {f}")));
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            let words = shlex::split(command)
                .unwrap_or_else(|| panic!("{place}: unbalanced quotes in `{command}`"));
            assert_eq!(
                words.first().map(String::as_str),
                Some("xqtb"),
                "{place}: a console example runs `xqtb`, not `{command}`"
            );
            examples.push(Example {
                place,
                args: words[1..].to_vec(),
                expected: Vec::new(),
            });
        } else {
            let example = examples
                .last_mut()
                .unwrap_or_else(|| panic!("{place}: output quoted before any `$ xqtb` line"));
            example.expected.push(line.to_string());
        }
    }
    (examples, stray)
}

/// Whether a word is the board part of a FEN: ten ranks of pieces and empty counts.
fn is_board(word: &str) -> bool {
    word.split('/').count() == 10
        && word.split('/').all(|rank| {
            !rank.is_empty() && rank.chars().all(|c| "123456789kabnrcpKABNRCP".contains(c))
        })
}

/// The boards quoted in a line of prose.
fn fens_in(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || "`'\"(),;:".contains(c))
        .filter(|w| is_board(w))
        .map(str::to_string)
        .collect()
}

/// Whether `actual` reads as `expected`, where an expected line `...` stands for any lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            actual
                .first()
                .is_some_and(|a| a.trim_end() == first.trim_end())
                && matches(rest, &actual[1..])
        }
    }
}

fn documents() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut docs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs
}

#[test]
fn every_example_in_the_docs_prints_what_the_docs_say() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in documents() {
        let (examples, stray) = read_document(&path);
        failures.extend(
            stray
                .into_iter()
                .map(|s| format!("{s}\n  a position quoted outside a `console` block is not checked: show it as a command and its output")),
        );
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let dir = TempDir::new(&format!("docs-{stem}"));
        for example in examples {
            let out = Command::new(BIN)
                .args(&example.args)
                .current_dir(dir.root())
                .env_remove("XQTB_TOKEN")
                .env_remove("RUST_LOG")
                .output()
                .unwrap();
            ran += 1;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let actual: Vec<&str> = stdout.lines().collect();
            if !out.status.success() || !matches(&example.expected, &actual) {
                failures.push(format!(
                    "{}: `xqtb {}` ({})\n--- the docs say:\n{}\n--- it prints:\n{}{}",
                    example.place,
                    example.args.join(" "),
                    out.status,
                    example.expected.join("\n"),
                    stdout,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The docs hold examples (a parser that found none would pass everything).
    assert!(ran >= 10, "only {ran} examples found in docs/");
}

#[test]
fn the_example_checker_reads_what_it_should() {
    let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(matches(&lines("a\n...\nd"), &["a", "b", "c", "d"]));
    assert!(matches(&lines("a\n...\nd"), &["a", "d"]));
    assert!(!matches(&lines("a\n...\nd"), &["a", "b"]));
    assert!(!matches(&lines("a\nb"), &["a", "b", "c"]));
    assert_eq!(
        fens_in("see `9/9/4k4/9/9/9/9/9/1n7/R2K5 w - - 0 1`, a loss"),
        vec!["9/9/4k4/9/9/9/9/9/1n7/R2K5".to_string()]
    );
    assert!(fens_in("KRvKN and 1/2 of them, 3/4/5").is_empty());
}
