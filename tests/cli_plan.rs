//! `xqtb plan` lists the closure `info` names, in the same order, with costs whose totals are
//! the sums of the rows; it answers in seconds for the whole two-attacker set, whose size follows
//! from counting; bad input is refused the way the other commands refuse it.

mod common;

use common::{BIN, xqtb};
use serde_json::Value as Json;
use std::process::Command;
use std::time::Instant;

fn plan_json(args: &[&str]) -> Json {
    let mut all = vec!["plan", "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&xqtb(&all, "")).expect("plan --json prints one JSON object")
}

fn names(plan: &Json) -> Vec<String> {
    plan["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["signature"].as_str().unwrap().to_string())
        .collect()
}

fn u(v: &Json) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The totals are the sums of the rows (the largest solve bytes their maximum), every job comes
/// after the jobs it depends on, and each job's dependency entries are its dependencies' entries.
fn check_consistent(plan: &Json) {
    let jobs = plan["jobs"].as_array().unwrap();
    let t = &plan["totals"];
    assert_eq!(u(&t["jobs"]), jobs.len() as u64);
    for field in ["slots", "entries", "dependency_entries", "stored_bytes"] {
        let sum: u64 = jobs.iter().map(|j| u(&j[field])).sum();
        assert_eq!(u(&t[field]), sum, "{field}");
    }
    let cpu: f64 = jobs
        .iter()
        .map(|j| j["cpu_seconds"].as_f64().unwrap())
        .sum();
    let total_cpu = t["cpu_seconds"].as_f64().unwrap();
    assert!(
        (cpu - total_cpu).abs() <= 1e-9 * cpu.max(1.0),
        "{cpu} {total_cpu}"
    );
    // The least memory a job needs: with its states on disk where it can be solved so.
    let least = |j: &Json| match j.get("states_on_disk_bytes") {
        Some(d) => u(d).min(u(&j["solve_bytes"])),
        None => u(&j["solve_bytes"]),
    };
    let max = jobs.iter().map(least).max().unwrap_or(0);
    assert_eq!(u(&t["max_solve_bytes"]), max);
    let max_disk = jobs.iter().map(|j| u(&j["disk_bytes"])).max().unwrap_or(0);
    assert_eq!(u(&t["max_disk_bytes"]), max_disk);
    // A job's disk holds its own result and the tables it depends on, stored.
    // (Only where the plan holds each dependency as one job: a table in slices has padding
    // between its slices that the whole table's estimate counts.)
    let mut stored = std::collections::HashMap::<String, Vec<u64>>::new();
    for j in jobs {
        stored
            .entry(j["signature"].as_str().unwrap().to_string())
            .or_default()
            .push(u(&j["stored_bytes"]));
    }
    for j in jobs {
        let deps: Vec<&Vec<u64>> = j["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &stored[d.as_str().unwrap()])
            .collect();
        if j.get("first_slot").is_none() && deps.iter().all(|d| d.len() == 1) {
            let deps: u64 = deps.iter().map(|d| d[0]).sum();
            assert!(
                u(&j["disk_bytes"]).abs_diff(u(&j["stored_bytes"]) + deps) <= 16,
                "{j}"
            );
        }
    }
    let mut entries = std::collections::HashMap::new();
    for j in jobs {
        assert_eq!(u(&j["entries"]), 2 * u(&j["slots"]), "{j}");
        assert!(u(&j["solve_bytes"]) > 2 * u(&j["entries"]), "{j}");
        assert!(j["cpu_seconds"].as_f64().unwrap() > 0.0, "{j}");
        let deps = j["dependencies"].as_array().unwrap();
        let dep_entries: u64 = deps
            .iter()
            .map(|d| {
                let d = d.as_str().unwrap();
                *entries
                    .get(d)
                    .unwrap_or_else(|| panic!("{d} is listed after {}", j["signature"]))
            })
            .sum();
        // A pawn slice also reads the slices its pawn advances lead into.
        let slice_entries: u64 = j["slice_dependencies"]
            .as_array()
            .map_or(0, |s| s.iter().map(|r| 2 * (u(&r[1]) - u(&r[0]))).sum());
        assert_eq!(
            u(&j["dependency_entries"]),
            dep_entries + slice_entries,
            "{j}"
        );
        assert_eq!(j["rules"], plan["rules"]);
        // A table's entries are those of all its jobs (its slices come one after another).
        *entries
            .entry(j["signature"].as_str().unwrap().to_string())
            .or_insert(0) += u(&j["entries"]);
    }
    if let Some(job) = t["max_solve_job"].as_str() {
        let biggest = jobs.iter().find(|j| j["signature"] == job).unwrap();
        assert_eq!(least(biggest), u(&t["max_solve_bytes"]));
    }
}

#[test]
fn the_plan_of_a_closure_is_the_closure_info_prints() {
    let info = xqtb(&["info", "krnkr", "--data", "/nonexistent/xqtb-data"], "");
    let closure: Vec<String> = info
        .lines()
        .find_map(|l| l.strip_prefix("closure (6 tables, dependencies first): "))
        .unwrap_or_else(|| panic!("{info}"))
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let plan = plan_json(&["krnkr"]);
    assert_eq!(names(&plan), closure);
    // The project's default rule set, as `solve` and `generate` use it.
    assert_eq!(plan["rules"], "asian");
    check_consistent(&plan);
    let krnkr = &plan["jobs"][5];
    assert_eq!(u(&krnkr["slots"]), 29_529_000);
    assert_eq!(
        krnkr["dependencies"],
        serde_json::json!(["KRNvK", "KRvKN", "KRvKR"])
    );
    assert_eq!(plan["totals"]["max_solve_job"], "KRNvKR");

    // The other rule set costs less CPU and memory for the same jobs.
    let cad = plan_json(&["KRNvKR", "--rules", "cycles-are-draws"]);
    assert_eq!(names(&cad), closure);
    check_consistent(&cad);
    let total = |p: &Json, f: &str| p["totals"][f].as_f64().unwrap();
    assert!(total(&cad, "cpu_seconds") < total(&plan, "cpu_seconds"));
    assert!(total(&cad, "max_solve_bytes") < total(&plan, "max_solve_bytes"));

    // The human table lists the same jobs in the same order, then the totals.
    let text = xqtb(&["plan", "KRNvKR"], "");
    let listed: Vec<String> = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(listed, closure, "{text}");
    assert!(text.contains("total: 6 jobs"), "{text}");
    assert!(text.contains("largest job: KRNvKR, about "), "{text}");

    // Several roots: the union of their closures, each table once.
    let two = plan_json(&["KRNvKR", "KRvKR", "KCvK"]);
    let mut want = closure.clone();
    want.insert(0, "KCvK".into());
    assert_eq!(names(&two), want);

    // `info` prints the estimate the plan lists.
    let estimate = info
        .lines()
        .find(|l| l.starts_with("to solve under asian: about "))
        .unwrap_or_else(|| panic!("{info}"));
    let krnkr_row = text.lines().find(|l| l.contains(" KRNvKR ")).unwrap();
    let memory = estimate
        .strip_prefix("to solve under asian: about ")
        .unwrap()
        .split(" of memory")
        .next()
        .unwrap();
    assert!(krnkr_row.contains(memory), "{estimate} / {krnkr_row}");
}

#[test]
fn every_two_attacker_endgame_is_planned_in_seconds() {
    let started = Instant::now();
    let plan = plan_json(&["--attackers", "2"]);
    let secs = started.elapsed().as_secs_f64();
    // "In seconds" on a developer's machine; the bound leaves room for a loaded test machine.
    assert!(secs < 60.0, "plan --attackers 2 took {secs:.1} s");
    // One attacker (4 kinds) with any defenders on each side (3 x 3 advisor and elephant counts
    // a side, 9 x 9): 324; two attackers on the same side (10 pairs of kinds): 810; one each
    // (unordered pairs of the 36 sides of one attacker and defenders, with repetition): 666.
    let mut tables = names(&plan);
    tables.dedup();
    assert_eq!(tables.len(), 324 + 810 + 666);
    // The large tables with pawns are planned as one job per pawn slice.
    assert!(names(&plan).len() > tables.len());
    check_consistent(&plan);
    let all = names(&plan);
    for t in [
        "KRvK",
        "KPvK",
        "KRvKR",
        "KRNvK",
        "KPPvK",
        "KRAABBvKRAABB",
        "KNPAABBvKAABB",
    ] {
        assert!(all.iter().any(|n| n == t), "{t} missing");
    }
    for t in ["KRNvKR", "KRNCvK"] {
        assert!(!all.iter().any(|n| n == t), "{t} has three attackers");
    }
    assert!(u(&plan["totals"]["slots"]) > 100_000_000_000);

    // At most 4 pieces: one attacker alone (4) or with one defender on either side (4 x 4), or
    // two attackers without defenders (10 + 10).
    let small = plan_json(&["--attackers", "2", "--max-pieces", "4"]);
    assert_eq!(names(&small).len(), 4 + 16 + 20);
    check_consistent(&small);
    assert!(names(&small).iter().all(|n| all.contains(n)));
}

/// Runs `xqtb ARGS`: its exit status and standard error.
fn fails(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run xqtb");
    assert!(out.stdout.is_empty(), "{args:?} printed a plan");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_plans_are_refused_with_the_reason() {
    // Errors the command finds: status 1, one message.
    for (args, want) in [
        (&["plan", "KRXvK"][..], "KRXvK"),
        (&["plan", "KRvK", "KRNNNvK"], "at most 2"),
        (&["plan", "--attackers", "7"], "--max-pieces 16"),
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("acktrace"), "{args:?}: {err}");
    }
    // Usage errors: status 2 from the argument parser, with the reason.
    for (args, want) in [
        (
            &["plan", "--attackers", "0"][..],
            "at least 1 attacking piece",
        ),
        (&["plan", "--attackers", "23"], "22"),
        (&["plan", "--attackers", "lots"], "not a number"),
        (&["plan", "--attackers", "2", "--max-pieces", "17"], "17"),
        (&["plan", "--max-pieces", "5", "KRvK"], "--attackers"),
        (&["plan", "KRvK", "--attackers", "1"], "cannot be used with"),
        (&["plan"], "required"),
        (&["plan", "KRvK", "--rules", "chinese"], "chinese"),
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A dead draw needs no table: an empty plan, and a note saying why.
    let out = Command::new(BIN)
        .args(["plan", "KAvKB", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let plan: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&plan["totals"]["jobs"]), 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no table is needed"));
}

/// `--workers` simulates the coordinator's scheduler: one worker runs the jobs one after the
/// other (the makespan is the sum of their times), more workers finish no later but never
/// before the critical path, and a memory smaller than the largest job leaves it (and what
/// waits for it) unrun, named in the output.
#[test]
fn workers_simulate_a_run_with_the_coordinators_scheduler() {
    let sim = |args: &[&str]| {
        let mut all = vec!["KRNvKR", "KRCvKR"];
        all.extend_from_slice(args);
        plan_json(&all)["simulation"].clone()
    };
    let one = sim(&["--workers", "1", "--threads", "2", "--memory", "1GiB"]);
    let many = sim(&["--workers", "8", "--threads", "2", "--memory", "1GiB"]);
    let span = |s: &Json| s["makespan_seconds"].as_f64().unwrap();
    assert_eq!(u(&one["workers"]), 1);
    assert!(one["never_ran"].as_array().unwrap().is_empty(), "{one}");
    assert!(span(&many) < span(&one), "{many} {one}");
    let path: Vec<&Json> = many["critical_path"].as_array().unwrap().iter().collect();
    let last = path.last().unwrap();
    assert!((last["end_seconds"].as_f64().unwrap() - span(&many)).abs() < 1e-6);
    for w in path.windows(2) {
        assert!(
            w[0]["end_seconds"].as_f64() <= w[1]["start_seconds"].as_f64(),
            "{w:?}"
        );
    }
    // KRNvKR and KRCvKR each need more than 100 MB; their dependencies much less.
    let small = sim(&["--workers", "2", "--threads", "1", "--memory", "100MB"]);
    let never: Vec<&str> = small["never_ran"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(never, ["KRCvKR", "KRNvKR"], "{small}");
    let text = xqtb(
        &[
            "plan",
            "KRNvKR",
            "--workers",
            "2",
            "--threads",
            "1",
            "--memory",
            "100MB",
        ],
        "",
    );
    assert!(
        text.contains("simulated run on 2 workers") && text.contains("1 job never ran"),
        "{text}"
    );
    assert!(
        text.contains("1 of them cannot be held because the asian rule phase keeps"),
        "{text}"
    );
    // Under cycles-are-draws the same workers keep those two jobs' states on local disk, for
    // more CPU: every job runs, and the output says which ran on disk.
    let cad = [
        "--workers",
        "2",
        "--threads",
        "1",
        "--rules",
        "cycles-are-draws",
    ];
    let on_disk = |memory: &str| {
        let mut args = cad.to_vec();
        args.extend_from_slice(&["--memory", memory]);
        sim(&args)
    };
    let small = on_disk("100MB");
    assert!(small["never_ran"].as_array().unwrap().is_empty(), "{small}");
    let mut kept: Vec<&str> = small["states_on_disk"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    kept.sort();
    assert_eq!(kept, ["KRCvKR", "KRNvKR"], "{small}");
    let large = on_disk("1GiB");
    assert!(
        large["states_on_disk"].as_array().unwrap().is_empty(),
        "{large}"
    );
    assert!(span(&small) > span(&large), "{small} {large}");
    let mut args = vec!["plan", "KRNvKR", "--memory", "100MB"];
    args.extend_from_slice(&cad);
    let text = xqtb(&args, "");
    assert!(
        text.contains("1 job keeps its states on local disk"),
        "{text}"
    );
    // The simulation options need --workers.
    let out = Command::new(BIN)
        .args(["plan", "KRNvKR", "--threads", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `--share-by` shares the large cycles-are-draws jobs between workers; their traffic goes
/// through the coordinator's link (`--coordinator-link`, Gbit/s), and a link too slow for it
/// slows them: the plan ends later, says how long the link was full, and never relays more
/// than the link carries.
#[test]
fn a_slow_coordinator_link_slows_the_shared_jobs() {
    let sim = |link: &str| {
        plan_json(&[
            "KRNvKR",
            "--rules",
            "cycles-are-draws",
            "--workers",
            "4",
            "--threads",
            "1",
            "--share-by",
            "4",
            "--share-from-entries",
            "1000000",
            "--coordinator-link",
            link,
        ])["simulation"]
            .clone()
    };
    let fast = sim("100");
    let shared = fast["shared"].as_array().unwrap();
    assert!(!shared.is_empty(), "{fast}");
    let peak = fast["relay"]["peak_bytes_per_second"].as_f64().unwrap();
    assert_eq!(fast["relay"]["full_seconds"].as_f64(), Some(0.0), "{fast}");
    // A link of a quarter of that peak, in Gbit/s.
    let slow = sim(&format!("{}", peak / 4.0 * 8.0 / 1e9));
    let span = |s: &Json| s["makespan_seconds"].as_f64().unwrap();
    assert!(span(&slow) > span(&fast), "{slow} {fast}");
    assert!(
        slow["relay"]["full_seconds"].as_f64().unwrap() > 0.0,
        "{slow}"
    );
    let link = slow["relay"]["link_bytes_per_second"].as_f64().unwrap();
    assert!((link - peak / 4.0).abs() < 1.0, "{slow}");
    assert!(slow["relay"]["peak_bytes_per_second"].as_f64().unwrap() <= link * 1.000_001);
    // A link that carries nothing is no link.
    for bad in ["0", "-1", "fast"] {
        let out = Command::new(BIN)
            .args(["plan", "KRvKN", "--workers", "2"])
            .arg(format!("--coordinator-link={bad}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("is not a link speed"), "{bad}: {err}");
    }
}
