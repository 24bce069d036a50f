//! The deployment files stay in step with the binary: every YAML file parses, and every flag they
//! pass to `xqtb` exists in that subcommand's `--help`.

use std::path::Path;
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

const BIN: &str = env!("CARGO_BIN_EXE_xqtb");

fn deploy(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
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
