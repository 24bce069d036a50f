//! The application layer and the HTTP API build without gRPC: neither `xqtb-app` nor
//! `xqtb-http` reaches tonic, prost, the protocol crate, its mapping or the coordinator's gRPC
//! shell, directly or through any crate they use. Read from `Cargo.lock`, whose dependency lists
//! also hold dev-dependencies, so the check is stricter than `cargo tree -e normal`: no crate in
//! the closure may even test with gRPC.

use std::collections::{BTreeMap, BTreeSet};

/// Each package of a `Cargo.lock` with the names of its dependencies (the union over its
/// versions when it has several).
fn dependencies(lock: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for package in lock.split("[[package]]").skip(1) {
        let name = package
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .expect("a package has a name")
            .trim_matches('"')
            .to_string();
        let deps = graph.entry(name).or_default();
        if let Some(list) = package.split("dependencies = [").nth(1) {
            let list = &list[..list.find(']').expect("the list ends")];
            for entry in list.split(',') {
                // `"name"`, or `"name version"` (and a source) when several versions are locked.
                let entry = entry.trim().trim_matches('"');
                if let Some(dep) = entry.split_whitespace().next() {
                    deps.insert(dep.to_string());
                }
            }
        }
    }
    graph
}

/// Every package `root` depends on, directly or not.
fn closure(graph: &BTreeMap<String, BTreeSet<String>>, root: &str) -> BTreeSet<String> {
    assert!(graph.contains_key(root), "{root} is not in the lock file");
    let mut seen = BTreeSet::new();
    let mut stack = vec![root.to_string()];
    while let Some(p) = stack.pop() {
        for d in graph.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                stack.push(d.clone());
            }
        }
    }
    seen
}

/// The packages of the closure of `root` that belong to gRPC.
fn grpc_in(graph: &BTreeMap<String, BTreeSet<String>>, root: &str) -> Vec<String> {
    closure(graph, root)
        .into_iter()
        .filter(|p| {
            p.starts_with("tonic")
                || p.starts_with("prost")
                || ["xqtb-proto", "xqtb-rpc", "xqtb-coordinator"].contains(&p.as_str())
        })
        .collect()
}

#[test]
fn the_application_layer_and_the_http_api_build_without_grpc() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
        .expect("Cargo.lock");
    let graph = dependencies(&lock);
    for root in ["xqtb-app", "xqtb-http"] {
        let found = grpc_in(&graph, root);
        assert!(
            found.is_empty(),
            "{root} depends on {found:?} (see `cargo tree -p {root} -i {}`); the application \
             layer and the HTTP API must build without gRPC",
            found[0]
        );
    }
    // The check sees what it must: the coordinator's closure holds both the app crate and
    // tonic, which a misread lock file (no packages, or no dependencies) would not show.
    let coordinator = closure(&graph, "xqtb-coordinator");
    assert!(coordinator.contains("xqtb-app") && coordinator.contains("tonic"));
}

#[test]
fn the_lock_file_reader_follows_versions_and_sources() {
    let lock = r#"
[[package]]
name = "a"
version = "1.0.0"
dependencies = [
 "b 1.0.0",
 "c",
]

[[package]]
name = "b"
version = "1.0.0"

[[package]]
name = "b"
version = "2.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
dependencies = [
 "tonic-prost 0.14.0 (registry+https://github.com/rust-lang/crates.io-index)",
]

[[package]]
name = "c"
version = "1.0.0"
"#;
    let graph = dependencies(lock);
    assert_eq!(grpc_in(&graph, "a"), ["tonic-prost"]);
    assert!(grpc_in(&graph, "c").is_empty());
}
