//! No two files of one crate import each other, directly or round a longer cycle: every crate's
//! modules form layers a reader can take in order. A file's imports are the `crate::`,
//! `super::` and `self::` paths its code names outside comments and its test module (which ends
//! a file, by this project's custom); a name the crate root re-exports counts as an import of
//! the module that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module path of `file` under `src` (`crate` for the root, `a::b` for `a/b.rs` or
/// `a/b/mod.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p != "mod")
        .collect();
    match parts.join("::").as_str() {
        "lib" | "main" | "" => "crate".to_string(),
        m => m.to_string(),
    }
}

/// The code of a file that counts: without comments and without its test module.
fn code_of(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |k| &text[..k]);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `crate::`/`super::`/`self::` paths a file's code names, each with the names of a
/// `{...}` group after it.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start).map(|i| i + from) {
            from = i + start.len();
            // Only a whole word: `self::` inside `myself::` does not count.
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                continue;
            }
            let mut end = i;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':')
            {
                end += 1;
            }
            let path = code[i..end].trim_end_matches(':').to_string();
            if end < bytes.len() && bytes[end] == b'{' {
                let close = code[end..].find('}').map_or(bytes.len(), |c| c + end);
                for name in code[end + 1..close].split(|c: char| c == ',' || c.is_whitespace()) {
                    let name = name.split("::").next().unwrap_or("");
                    if !name.is_empty() && name != "self" {
                        out.push(format!("{path}::{name}"));
                    }
                }
            }
            out.push(path);
        }
    }
    out
}

/// The module a path names from module `from`: its longest prefix that is a module of the
/// crate, or for `crate::Name` the module the root re-exports `Name` from.
fn target(
    from: &str,
    path: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> Option<String> {
    let mut parts: Vec<&str> = path.split("::").collect();
    let mut base: Vec<&str> = if from == "crate" {
        Vec::new()
    } else {
        from.split("::").collect()
    };
    match parts.first() {
        Some(&"crate") => base.clear(),
        Some(&"super") => {
            while parts.first() == Some(&"super") {
                base.pop();
                parts.remove(0);
            }
            return longest(&base, &parts, modules);
        }
        Some(&"self") => {}
        _ => return None,
    }
    parts.remove(0);
    if base.is_empty()
        && let Some(m) = parts.first().and_then(|n| reexports.get(*n))
    {
        return Some(m.clone());
    }
    longest(&base, &parts, modules)
}

fn longest(base: &[&str], parts: &[&str], modules: &BTreeSet<String>) -> Option<String> {
    (1..=parts.len())
        .rev()
        .map(|i| [base, &parts[..i]].concat().join("::"))
        .find(|m| modules.contains(m))
}

/// The cycles among the files of the crate whose sources are in `src`, as lists of modules.
fn cycles_in(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let code: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            (
                module_of(src, f),
                code_of(&std::fs::read_to_string(f).unwrap()),
            )
        })
        .collect();
    let modules: BTreeSet<String> = code.keys().cloned().collect();
    // `pub use module::{A, B}` and `pub use module::A` at the crate root.
    let mut reexports = BTreeMap::new();
    if let Some(root) = code.get("crate") {
        for stmt in root.split("pub use ").skip(1) {
            let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
            let Some((module, names)) = stmt.split_once("::") else {
                continue;
            };
            if !modules.contains(module) {
                continue;
            }
            for name in names.split(|c: char| "{},".contains(c) || c.is_whitespace()) {
                if !name.is_empty() {
                    reexports.insert(name.to_string(), module.to_string());
                }
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in &code {
        for path in paths_in(text) {
            if let Some(t) = target(m, &path, &modules, &reexports)
                && t != *m
                && t != "crate"
            {
                edges.entry(m.clone()).or_default().insert(t);
            }
        }
    }
    // A module is in a cycle when it reaches itself; the cycle is what reaches it back.
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for t in edges.get(&m).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    stack.push(t.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        modules.iter().map(|m| (m, reach(m))).collect();
    let mut cycles: BTreeSet<Vec<String>> = BTreeSet::new();
    for m in &modules {
        if reaches[m].contains(m) {
            let cycle: Vec<String> = modules
                .iter()
                .filter(|o| reaches[m].contains(*o) && reaches[*o].contains(m))
                .cloned()
                .collect();
            cycles.insert(cycle);
        }
    }
    cycles.into_iter().collect()
}

#[test]
fn no_crate_has_files_that_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src")];
    for e in std::fs::read_dir(root).unwrap() {
        let src = e.unwrap().path().join("src");
        if src.is_dir() && src.parent().unwrap().join("Cargo.toml").is_file() {
            crates.push(src);
        }
    }
    assert!(crates.len() >= 10, "{crates:?}");
    let found: Vec<String> = crates
        .iter()
        .flat_map(|src| {
            cycles_in(src)
                .into_iter()
                .map(move |c| format!("{}: {}", src.display(), c.join(" <-> ")))
        })
        .collect();
    assert!(
        found.is_empty(),
        "files that import each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let dir = std::env::temp_dir().join(format!("xqtb-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Thing;\n");
    write("a/mod.rs", "use crate::b::f; // crate::c::nothing\n");
    write("b.rs", "fn g() { super::a::h() }\n");
    write(
        "c.rs",
        "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::a::x; }\n",
    );
    assert_eq!(
        cycles_in(&dir),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
    // Through a name the root re-exports, and with a group.
    write("b.rs", "use crate::{Thing, c};\n");
    write("c.rs", "use crate::a::{self, x};\n");
    write("a/mod.rs", "");
    assert!(cycles_in(&dir).is_empty());
    write("a/mod.rs", "use crate::Thing;\n");
    write("c.rs", "use crate::{a::x};\n");
    assert_eq!(
        cycles_in(&dir),
        vec![vec!["a".to_string(), "c".to_string()]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
