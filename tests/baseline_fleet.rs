//! Issue 42: `burnin baseline save --fleet RUN` builds the baseline from every node of a run
//! (SuperBench's rule: the mean, less each node worse than it by more than 5 %, again until
//! none is), names the nodes it left out, and the report says which baseline judged it and how
//! it was made. The run is the simulated cluster's (`burnin run --demo`) with planted faults.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn burnin(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(args)
        .current_dir(dir)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .output()
        .expect("burnin")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("burnin-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

/// A demo run with only `faults` planted; its run directory.
fn demo_run(root: &Path, faults: &[&str]) -> PathBuf {
    let runs = root.join("runs");
    let mut args = vec!["run", "--demo", "--runs-dir", runs.to_str().expect("utf-8")];
    for f in faults {
        args.extend(["--fault", f]);
    }
    let o = burnin(&args, root);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_dir(&runs)
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory")
}

/// `burnin baseline save --fleet RUN --to TO`, run in `dir`.
fn save_fleet(run: &Path, to: &Path, dir: &Path) -> Output {
    burnin(
        &[
            "baseline",
            "save",
            "--fleet",
            run.to_str().expect("utf-8"),
            "--to",
            to.to_str().expect("utf-8"),
        ],
        dir,
    )
}

/// Planted: node10's GPU 7 runs its clock at half (T2: 52 % of nominal TFLOPS) and node07's
/// GPU 3 stalls during T4 (its all_reduce at ~40 %). The fleet baseline leaves out exactly
/// those subjects, in the first round, and every other figure of every node counts.
#[test]
fn the_fleet_baseline_drops_the_planted_slow_nodes_and_only_them() {
    let root = tmp("planted");
    let run = demo_run(&root, &["slow-clock", "stall"]);
    let to = root.join("fleet.json");
    let o = save_fleet(&run, &to, &root);
    let printed = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{printed}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&to).expect("written")).expect("json");
    let dropped: Vec<(String, String, String)> = b["fleet"]["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .map(|d| {
            (
                d["phase"].as_str().unwrap_or("").to_string(),
                d["figure"].as_str().unwrap_or("").to_string(),
                d["subject"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("T2", "tflops_bf16", "node10/gpu7"),
        ("T2", "tflops_fp8", "node10/gpu7"),
        ("T4", "busbw_all_reduce", "node07"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(dropped, want, "{printed}");
    assert!(
        printed.contains("dropped: 3") && printed.contains("T4 busbw_all_reduce node07 "),
        "{printed}"
    );
    // Every node's reference is the fleet's mean, node07's too: judged against its peers.
    let t4 = b["phases"]["T4"]["busbw_all_reduce"]
        .as_array()
        .expect("T4");
    assert_eq!(t4.len(), 12);
    let node07 = t4
        .iter()
        .find(|s| s["subject"] == "node07")
        .expect("node07");
    let node01 = t4
        .iter()
        .find(|s| s["subject"] == "node01")
        .expect("node01");
    assert_eq!(node07["value"], node01["value"]);
    assert!(node01["value"].as_f64().unwrap_or(0.0) > 700.0, "{node01}");

    // The same run without faults: nothing dropped.
    let clean_root = tmp("clean");
    let clean = demo_run(&clean_root, &["aistor-p99"]);
    let to = clean_root.join("fleet.json");
    let o = save_fleet(&clean, &to, &clean_root);
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("dropped: 0"), "{printed}");

    // The report of a run judged with it says which baseline and how it was made.
    let summary_path = run.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).expect("summary"))
            .expect("json");
    summary["baseline"] = serde_json::Value::String(root.join("fleet.json").display().to_string());
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary).expect("json"),
    )
    .expect("write");
    let o = burnin(&["report", run.to_str().expect("utf-8")], &root);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(
        md.contains("built from the fleet of")
            && md.contains(
                "a node more than 5 % worse left out: 3 left out, first T2 tflops_bf16 node10/gpu7"
            ),
        "{}",
        md.lines().find(|l| l.contains("baseline")).unwrap_or("")
    );
}
