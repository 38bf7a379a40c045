//! `burnin parse` through the built binary: text and JSON, the kind given or detected, and the
//! exit code a script can act on (0 read and not failed, 1 a phase FAILED the file, 2 a file
//! could not be read or its kind not told).

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

fn corpus(rel: &str) -> String {
    format!("{}/tests/corpus/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn parse(args: &[&str]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("burnin-parse-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let out = Command::new(BIN)
        .arg("parse")
        .args(args)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .output()
        .expect("burnin parse");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_healthy_run_without_nccl_info_lines_warns_and_never_fails_for_want_of_net_ib() {
    let f = corpus("nccl-tests/allreduce-2x8h200-runai-mpi-k8s-1g-16g.txt");
    let (code, out, err) = parse(&["--json", &f]);
    // NCCL ran below INFO level: which network carried it cannot be told, and is said.
    assert_eq!(code, Some(0), "nothing fails it: {out}{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["schema"], 1);
    let file = &doc["files"][0];
    assert_eq!(file["kind"], "nccl-tests");
    assert_eq!(file["detected"], true);
    let t4 = file["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["phase"] == "T4"))
        .expect("T4 judged");
    assert_eq!(t4["verdict"], "WARN");
    let t7 = file["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["phase"] == "T7"))
        .expect("T7 judged");
    assert_eq!(t7["verdict"], "WARN");
    assert!(
        t7["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not judged") && r.contains("no \"Using network\" line")),
        "{t7}"
    );
    let fig = file["figures"]
        .as_array()
        .and_then(|v| v.iter().find(|f| f["name"] == "busbw_all_reduce"))
        .expect("figure");
    assert_eq!(fig["value"], 478.15);
    assert_eq!(fig["unit"], "GB/s");
}

#[test]
fn a_kind_named_first_and_a_baseline_from_the_file_itself() {
    let f = corpus("nvbandwidth/v0.10-h100-8gpu-d2d-read-ce-cov.txt");
    // A baseline saved from this very output: every pair is 100 % of itself.
    let dir = std::env::temp_dir().join(format!("burnin-parse-base-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (_, out, _) = parse(&["--json", "nvbandwidth", &f]);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let mut figures = serde_json::Map::new();
    let mut samples = Vec::new();
    for fig in doc["files"][0]["figures"].as_array().expect("figures") {
        if fig["name"] == "pair_gb_per_s" {
            samples.push(
                serde_json::json!({"subject": fig["subject"], "group": "", "value": fig["value"]}),
            );
        }
    }
    figures.insert("pair_gb_per_s".into(), serde_json::Value::Array(samples));
    let base = serde_json::json!({"schema": 1, "source": "this file", "phases": {"T3": figures}});
    let base_path = dir.join("baseline.json");
    std::fs::write(&base_path, base.to_string()).expect("baseline");
    let (code, out, err) = parse(&["nvbandwidth", &f, "--baseline", base_path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("T3 PASS"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_and_unknown_files_exit_2_with_the_reason() {
    let (code, _, err) = parse(&["/nonexistent/file.log"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("/nonexistent/file.log"), "{err}");
    let f = corpus("preflight/ibstat-a100-hdr200-all-active.txt");
    let (code, _, err) = parse(&[&f]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not an output burnin reads"), "{err}");
}

#[test]
fn a_kind_that_is_no_kind_is_said_as_such() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/corpus/dcgm-diag/dcgm4-r1-gb10-software-fail-persistence-mode-unknown-repo.json",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(["parse", "nccltests"])
        .arg(&file)
        .output()
        .expect("burnin parse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown kind \"nccltests\"") && err.contains("nccl-tests"),
        "{err}"
    );
}

/// Issue 41, case 7: a baseline written to a path that is a symbolic link wrote through it
/// (the link's target was replaced). It is refused; the target stays as it was.
#[test]
fn a_baseline_is_never_written_through_a_link() {
    let f = corpus("nvbandwidth/v0.10-h100-8gpu-d2d-read-ce-cov.txt");
    let dir = std::env::temp_dir().join(format!("burnin-parse-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let target = dir.join("elsewhere.json");
    std::fs::write(&target, "untouched").expect("target");
    let link = dir.join("burnin-baseline.json");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let (code, out, err) = parse(&[
        "nvbandwidth",
        &f,
        "--save-baseline",
        link.to_str().expect("utf-8"),
    ]);
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "untouched"
    );
    // A plain path is written, and reads back as a baseline.
    let plain = dir.join("plain.json");
    let (code, out, err) = parse(&[
        "nvbandwidth",
        &f,
        "--save-baseline",
        plain.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    burnin::record::session::read_baseline(&plain).expect("a baseline");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--nics` says the nodes' ports, not their GPUs: without `--gpus` the share of a node's
/// ports the ranks used is not known, and a job across nodes is not judged per RDMA port (a
/// default of 8 GPUs would have read the 64 × 4 GH200 run over 2 ports, and a fabric at half
/// speed as healthy).
#[test]
fn nics_without_gpus_is_not_judged_per_port() {
    let file = corpus(
        "nccl-tests/allreduce-64x4gh200-alps-slingshot11-4nics-srun-l-xtrace-whole-job-log.txt",
    );
    let (_, out, err) = parse(&[
        "nccl-tests",
        &file,
        "--nodes",
        "64",
        "--nics",
        "4xConnectX-7",
    ]);
    assert!(
        out.contains(
            "the nodes' GPU count is not known (burnin parse: --nics, --gpus): not judged"
        ),
        "{out}\n{err}"
    );
    let (_, out, err) = parse(&[
        "nccl-tests",
        &file,
        "--nodes",
        "64",
        "--gpus",
        "4",
        "--nics",
        "4xConnectX-7",
    ]);
    assert!(
        out.contains("92.2 GB/s over 4 RDMA ports a node (as given) = 184 Gbit/s a port, 46 % of ConnectX-7's"),
        "{out}\n{err}"
    );
}
