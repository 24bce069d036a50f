//! The deployment files stay in step with the binary: every YAML file parses, and every flag they
//! pass to `xqtb` exists in that subcommand's `--help`; both Dockerfiles take their base images as
//! build arguments; every variable of the compose file is documented in its header; and
//! `.dockerignore` keeps what the image build needs while leaving out build output and secrets.
//! (tests/containers.rs builds and runs the images for real, where Docker can run.)

use std::path::{Path, PathBuf};
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn deploy(rel: &str) -> String {
    read(&repo().join("deploy").join(rel))
}

fn yaml_docs(rel: &str) -> Vec<Yaml> {
    YamlLoader::load_from_str(&deploy(rel)).unwrap_or_else(|e| panic!("{rel} does not parse: {e}"))
}

fn help(sub: &str) -> String {
    let out = Command::new(BIN).args([sub, "--help"]).output().unwrap();
    assert!(out.status.success(), "xqtb {sub} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks an `xqtb` argument list: a known subcommand, then flags it accepts.
fn check_args(origin: &str, args: &[String]) {
    assert!(!args.is_empty(), "{origin}: no arguments");
    let sub = &args[0];
    let text = help(sub);
    let mut flags = 0;
    for a in args.iter().filter(|a| a.starts_with("--")) {
        let flag = a.split('=').next().unwrap();
        assert!(
            text.lines()
                .any(|l| l.split([' ', ',', '<']).any(|w| w == flag)),
            "{origin}: `xqtb {sub}` has no flag {flag}"
        );
        flags += 1;
    }
    assert!(flags > 0, "{origin}: expected some flags in {args:?}");
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| format!("{x:?}"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn compose_file_parses_and_uses_real_flags() {
    let docs = yaml_docs("compose.yaml");
    let services = &docs[0]["services"];
    let map = services.as_hash().expect("services");
    assert!(map.len() >= 2);
    for (name, svc) in map {
        let name = name.as_str().unwrap();
        check_args(&format!("compose {name}"), &strings(&svc["command"]));
        let test = strings(&svc["healthcheck"]["test"]);
        if !test.is_empty() {
            assert_eq!(test[0], "CMD");
            check_args(&format!("compose {name} healthcheck"), &test[2..]);
        }
    }
    assert_eq!(services["worker"]["deploy"]["replicas"].as_i64(), Some(3));
    // The image is a variable, so a runtime-only image (deploy/Dockerfile.runtime) can be used.
    for svc in ["coordinator", "worker"] {
        let image = services[svc]["image"].as_str().unwrap();
        assert!(image.starts_with("${XQTB_IMAGE:-"), "{svc}: image {image}");
        assert_eq!(services[svc]["restart"].as_str(), Some("unless-stopped"));
    }
    let args = &services["coordinator"]["build"]["args"];
    for arg in ["BUILD_IMAGE", "RUNTIME_IMAGE"] {
        assert!(args[arg].as_str().is_some(), "compose passes no {arg}");
    }
}

#[test]
fn compose_variables_are_documented_in_its_header() {
    let text = deploy("compose.yaml");
    let (header, body): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.trim_start().starts_with('#'));
    let header = header.join("\n");
    let mut seen = 0;
    for line in body {
        for piece in line.split("${").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                header.contains(&format!("#   {name} ")),
                "compose.yaml uses ${{{name}}} but its header does not document it"
            );
            seen += 1;
        }
    }
    assert!(seen >= 8, "expected the compose variables, found {seen}");
    // The project name comes from deploy/.env: docker-compose 1.29 rejects a top-level `name:`.
    assert!(yaml_docs("compose.yaml")[0]["name"].is_badvalue());
    assert!(deploy(".env").contains("COMPOSE_PROJECT_NAME=xqtb"));
}

/// A Dockerfile's instructions, continuation lines joined, comments dropped.
fn instructions(rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in deploy(rel).lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(part) => cur.push_str(part),
            None => {
                cur.push_str(t);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    out
}

#[test]
fn dockerfiles_take_their_bases_as_arguments_and_use_real_flags() {
    for (file, bases) in [
        ("Dockerfile", &["BUILD_IMAGE", "RUNTIME_IMAGE"][..]),
        ("Dockerfile.runtime", &["RUNTIME_IMAGE"][..]),
    ] {
        let ins = instructions(file);
        let first_from = ins.iter().position(|i| i.starts_with("FROM ")).unwrap();
        for base in bases {
            assert!(
                ins[..first_from]
                    .iter()
                    .any(|i| i.starts_with(&format!("ARG {base}="))),
                "{file}: no `ARG {base}=default` before the first FROM"
            );
            assert!(
                ins.iter()
                    .any(|i| i.starts_with(&format!("FROM ${{{base}}}"))),
                "{file}: no FROM ${{{base}}}"
            );
        }
        let json = |key: &str| -> Vec<String> {
            let i = ins.iter().find_map(|i| i.strip_prefix(key)).unwrap();
            serde_json::from_str(i).unwrap_or_else(|e| panic!("{file}: {key}{i}: {e}"))
        };
        assert_eq!(json("ENTRYPOINT "), ["/usr/local/bin/xqtb"]);
        check_args(&format!("{file} CMD"), &json("CMD "));
        // The compose worker mounts a volume on /cache as the `xqtb` user: the image makes it theirs.
        assert!(
            ins.iter().any(|i| i.contains("mkdir -p /data /cache")
                && i.contains("chown xqtb:xqtb /data /cache")),
            "{file}: /cache is not created for the xqtb user"
        );
        assert!(ins.iter().any(|i| i == "USER xqtb"), "{file}: runs as root");
    }
}

#[test]
fn deploy_scripts_are_strict() {
    for script in ["debian-base.sh", "runtime-image.sh", "compose-test.sh"] {
        let text = deploy(script);
        assert!(
            text.starts_with("#!/usr/bin/env bash\n"),
            "{script}: shebang"
        );
        assert!(
            text.contains("\nset -euo pipefail\n"),
            "{script}: not strict"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(repo().join("deploy").join(script))
                .unwrap()
                .permissions()
                .mode();
            assert!(mode & 0o111 != 0, "{script} is not executable");
        }
    }
}

/// `.dockerignore` semantics for plain patterns: `*` and `?` within one path segment, `**` for
/// any number of segments; a path is excluded when it or a parent directory matches, the last
/// matching pattern deciding (a `!pattern` includes again).
fn dockerignored(patterns: &[String], path: &str) -> bool {
    fn seg(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => seg(&p[1..], s) || (!s.is_empty() && seg(p, &s[1..])),
            (Some(b'?'), Some(_)) => seg(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => seg(&p[1..], &s[1..]),
            _ => false,
        }
    }
    fn segs(p: &[&str], s: &[&str]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((&"**", rest)) => (0..=s.len()).any(|i| segs(rest, &s[i..])),
            Some((first, rest)) => {
                !s.is_empty() && seg(first.as_bytes(), s[0].as_bytes()) && segs(rest, &s[1..])
            }
        }
    }
    let parts: Vec<&str> = path.split('/').collect();
    let mut ignored = false;
    for pat in patterns {
        let (include, pat) = match pat.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pat.as_str()),
        };
        let pp: Vec<&str> = pat.trim_matches('/').split('/').collect();
        if (1..=parts.len()).any(|n| segs(&pp, &parts[..n])) {
            ignored = !include;
        }
    }
    ignored
}

/// Every file under `dir` (relative to the repository), skipping build output.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                files_under(&p, out);
            }
        } else {
            out.push(p.strip_prefix(repo()).unwrap().to_path_buf());
        }
    }
}

#[test]
fn dockerignore_keeps_the_build_inputs_and_drops_output_and_secrets() {
    let patterns: Vec<String> = read(&repo().join(".dockerignore"))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    for gone in [
        "target/release/xqtb",
        "fuzz/target/x86_64-unknown-linux-gnu/release/fuzz_fen",
        ".git/HEAD",
        "deploy/xqtb.env",
        "web/dev/test_page.py",
        "xqtb-data/db",
    ] {
        assert!(
            dockerignored(&patterns, gone),
            ".dockerignore lets {gone} into the build context"
        );
    }
    // What `cargo build --release --locked --bin xqtb` reads: the manifests and lock file, the
    // root package, every workspace member, and whatever their sources `include_str!`.
    let manifest = read(&repo().join("Cargo.toml"));
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = ["))
        .expect("workspace members on one line");
    let mut needed = vec![PathBuf::from("Cargo.toml"), PathBuf::from("Cargo.lock")];
    files_under(&repo().join("src"), &mut needed);
    for m in members.trim_end_matches(']').split(',') {
        let m = m.trim().trim_matches('"');
        assert!(!m.is_empty());
        files_under(&repo().join(m), &mut needed);
    }
    let mut included = Vec::new();
    for f in needed
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let text = read(&repo().join(f));
        for piece in text
            .split("include_str!(\"")
            .chain(text.split("include_bytes!(\""))
            .skip(1)
        {
            let Some((rel, _)) = piece.split_once('"') else {
                continue;
            };
            let mut p = f.parent().unwrap().to_path_buf();
            for c in Path::new(rel).components() {
                match c {
                    std::path::Component::ParentDir => {
                        p.pop();
                    }
                    c => p.push(c),
                }
            }
            included.push(p);
        }
    }
    assert!(
        included.iter().any(|p| p == Path::new("web/index.html")),
        "expected the embedded web page among {included:?}"
    );
    for f in needed.iter().chain(&included) {
        let f = f.to_str().unwrap();
        assert!(
            !dockerignored(&patterns, f),
            ".dockerignore leaves {f} out of the build context, which the build needs"
        );
    }
}

#[test]
fn kubernetes_manifests_parse_and_use_real_flags() {
    let mut containers = 0;
    for file in [
        "coordinator.yaml",
        "workers.yaml",
        "hpa.yaml",
        "secret.yaml",
    ] {
        for doc in yaml_docs(&format!("kubernetes/{file}")) {
            assert!(
                doc["kind"].as_str().is_some(),
                "{file}: a document without kind"
            );
            for c in doc["spec"]["template"]["spec"]["containers"]
                .as_vec()
                .into_iter()
                .flatten()
            {
                check_args(
                    &format!("{file} {}", c["name"].as_str().unwrap()),
                    &strings(&c["args"]),
                );
                containers += 1;
            }
        }
    }
    assert_eq!(containers, 2);
}

#[test]
fn systemd_units_use_real_flags() {
    for unit in [
        "systemd/xqtb-coordinator.service",
        "systemd/xqtb-worker.service",
    ] {
        let text = deploy(unit);
        let exec = text
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart");
        let args: Vec<String> = exec.split_whitespace().skip(1).map(String::from).collect();
        check_args(unit, &args);
        for key in ["NoNewPrivileges=yes", "ProtectSystem=strict", "User=xqtb"] {
            assert!(text.contains(key), "{unit} lacks {key}");
        }
    }
}
