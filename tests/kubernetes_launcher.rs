//! `launcher = "kubernetes"`: `burnin run` drives a stand-in `kubectl` (no cluster here) that
//! records every call and the manifest it was given. A phase that passes applies one Job per
//! node, pinned to it, follows its log and takes the Job's success; an interrupted run deletes
//! every Job it applied (the abort path), and exits 130.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The stand-in: logs its arguments (one call a line) to $KUBE_LOG, keeps each applied
/// manifest, answers the queries the launcher script asks, and for `logs -f` prints a line
/// then either ends or, with $KUBE_HANG set, waits to be killed.
const FAKE_KUBECTL: &str = r#"#!/bin/sh
echo "$*" >> "$KUBE_LOG"
case "$*" in
  *" apply -f -"*) cat > "$KUBE_DIR/applied-$$.json"; echo "job.batch/x created" ;;
  *" get pods "*"status.phase"*) echo "Running " ;;
  *" logs -f "*) echo "phase output from the pod"; if [ -n "$KUBE_HANG" ]; then while :; do sleep 1; done; fi ;;
  *" get job "*) if [ -n "$KUBE_FAIL" ]; then echo ":1"; else echo "1:"; fi ;;
  *"terminated.exitCode"*) echo 3 ;;
  *" delete "*) echo "deleted" ;;
esac
exit 0
"#;

fn setup(name: &str) -> TempDir {
    let dir =
        TempDir(std::env::temp_dir().join(format!("burnin-kube-{name}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(dir.0.join("bin")).expect("dir");
    let kubectl = dir.0.join("bin/kubectl");
    std::fs::write(&kubectl, FAKE_KUBECTL).expect("kubectl");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::write(
        dir.0.join("plan.toml"),
        format!(
            "[settings]\nremote_dir = \"{}/runs\"\ngrace_s = 2\n\
             [kubernetes]\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\nnamespace = \"burn-in\"\n\
             context = \"site-a\"\nkubectl = \"{}\"\n\
             [[phase]]\nid = \"K1\"\ntitle = \"GEMM in a Job\"\nscope = \"each-node\"\n\
             parser = \"none\"\ntimeout = \"5m\"\nlauncher = \"kubernetes\"\n\
             command = \"echo {{nnodes}} {{nodelist}}; python3 {{workloads}}/gemm.py --seconds 20\"\n",
            dir.0.display(),
            kubectl.display()
        ),
    )
    .expect("plan");
    std::fs::write(
        dir.0.join("burnin.toml"),
        "plan = \"plan.toml\"\n[defaults]\nmode = \"sim\"\ngpus = 4\n\
         [[node]]\nhost = \"gpu[07-08]\"\n",
    )
    .expect("inventory");
    dir
}

fn burnin_run(dir: &Path, hang: bool) -> Command {
    burnin_run_with(dir, if hang { "KUBE_HANG" } else { "KUBE_NOTHING" })
}

fn burnin_run_with(dir: &Path, knob: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_burnin"));
    c.args(["run", "--no-telemetry", "--json", "--runs-dir"])
        .arg(dir.join("records"))
        .arg("-c")
        .arg(dir.join("burnin.toml"))
        .env("KUBE_LOG", dir.join("calls.log"))
        .env("KUBE_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.env(knob, "1");
    c
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn applied(dir: &Path) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("applied-"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|t| serde_json::from_str(&t).expect("applied manifest is JSON"))
        .collect();
    out.sort_by_key(|m| m["items"][1]["spec"]["template"]["spec"]["nodeSelector"].to_string());
    out
}

#[test]
fn a_kubernetes_phase_applies_a_job_per_node_and_follows_it() {
    let dir = setup("pass");
    let out = burnin_run(&dir.0, false).output().expect("burnin run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert_eq!(summary["phases"][0]["verdict"], "PASS", "{summary}");
    let manifests = applied(&dir.0);
    assert_eq!(manifests.len(), 2, "one Job per node: {:?}", calls(&dir.0));
    for (m, node) in manifests.iter().zip(["gpu07", "gpu08"]) {
        let job = &m["items"][1];
        assert_eq!(job["kind"], "Job");
        assert_eq!(job["metadata"]["namespace"], "burn-in");
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"]["kubernetes.io/hostname"], node);
        let c = &pod["containers"][0];
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "4");
        assert_eq!(
            c["command"][2], "echo 2 gpu07,gpu08; python3 /burnin/workloads/gemm.py --seconds 20",
            "the pod's own workloads path; srun's node count and list"
        );
        assert_eq!(m["items"][0]["kind"], "ConfigMap");
        assert!(
            m["items"][0]["data"]["gemm.py"]
                .as_str()
                .is_some_and(|t| t.contains("import")),
            "burnin's gemm.py travels in the ConfigMap"
        );
        assert_eq!(job["spec"]["activeDeadlineSeconds"], 300);
    }
    let calls = calls(&dir.0);
    for node in ["gpu07", "gpu08"] {
        assert!(
            calls.iter().any(
                |c| c.starts_with("--context site-a -n burn-in logs -f job/burnin-")
                    && c.ends_with(&format!("-k1-{node}"))
            ),
            "{calls:?}"
        );
    }
    assert!(
        !calls.iter().any(|c| c.contains(" delete ")),
        "a phase that ended by itself leaves the finished Jobs for `kubectl logs`: {calls:?}"
    );
}

#[test]
fn a_failed_job_fails_the_phase_with_the_containers_exit_code() {
    let dir = setup("fail");
    let out = burnin_run_with(&dir.0, "KUBE_FAIL")
        .output()
        .expect("burnin run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert_eq!(summary["phases"][0]["verdict"], "FAIL", "{summary}");
    assert!(
        stderr.contains("gpu07 exited 3; gpu08 exited 3"),
        "the container's exit code is the node's: {stderr}"
    );
}

#[test]
fn an_interrupted_run_deletes_the_jobs_it_applied() {
    let dir = setup("abort");
    let mut child = burnin_run(&dir.0, true).spawn().expect("burnin run");
    let until = Instant::now() + Duration::from_secs(60);
    while calls(&dir.0)
        .iter()
        .filter(|c| c.contains(" logs -f "))
        .count()
        < 2
    {
        assert!(
            Instant::now() < until,
            "both Jobs never got followed: {:?}",
            calls(&dir.0)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SIGINT, as Ctrl-C at `burnin run`'s terminal.
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is passed.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < until, "burnin run did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(130), "stderr: {stderr}");
    let calls = calls(&dir.0);
    for node in ["gpu07", "gpu08"] {
        let deleted = calls.iter().any(|c| {
            c.starts_with("--context site-a -n burn-in delete job burnin-")
                && c.contains(&format!("-k1-{node} "))
                && c.contains("--ignore-not-found --wait=false --cascade=foreground")
        });
        assert!(deleted, "{node}'s Job deleted: {calls:?}");
        assert!(
            calls
                .iter()
                .any(|c| c.contains("delete configmap burnin-")
                    && c.contains(&format!("-k1-{node} "))),
            "{node}'s ConfigMap deleted: {calls:?}"
        );
    }
}
