//! `burnin doctor` over real SSH (an sshd per node on loopback, tests/common/sshd.rs), through
//! the binary as an engineer runs it. Stand-in tools on the nodes' PATH say what the real ones
//! would; python3 behaves per node by the address the node's sshd answered on
//! (`$SSH_CONNECTION`). The summary line must name exactly the phase, node and why; a hostile
//! tool's words must arrive stripped and bounded; nodes that cannot be reached exit 2.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::sshd::Cluster;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// Three phases: one each-node tool, a shipped workload (python3 and torch, behind the
/// plan's prefix), an mpirun job. The prefix (`{bin}` here) puts the stand-in python3 first
/// on PATH: a login shell's rc files (pyenv) may put another python3 ahead of sshd's PATH,
/// and a site's prefix is what chooses its python3 (a container) anyway.
const PLAN: &str = r#"
[vars]
prefix = "env PATH={bin}:/usr/bin:/bin"

[[phase]]
id = "N1"
title = "NVLink copies"
scope = "each-node"
parser = "none"
command = "nvbandwidth -t device_to_device_memcpy_read_ce"

[[phase]]
id = "W1"
title = "GEMM"
scope = "each-gpu"
parser = "workload"
command = "{prefix} python3 {workloads}/gemm.py --seconds 1"

[[phase]]
id = "M1"
title = "multi-node NCCL"
scope = "mpirun"
parser = "nccl-tests"
command = "mpirun -np {np} -H {hosts_slots} all_reduce_perf_mpi -b 8 -e 8"
"#;

/// A python3 whose torch imports everywhere except on the node at 127.0.0.3 (node02) when
/// `broken_on_node02`.
fn python3(broken_on_node02: bool) -> String {
    let good =
        r"printf 'burnin-torch\tok\ttorch 2.5.1, CUDA 12.4, cuda available True, 8 devices\n'";
    let bad = "echo 'Traceback (most recent call last):'; echo '  File \"<string>\", line 3, in <module>'; echo \"ModuleNotFoundError: No module named 'torch'\"; exit 1";
    if broken_on_node02 {
        format!(
            "#!/bin/sh\ncase \"$SSH_CONNECTION\" in *' 127.0.0.3 '*) {bad} ;; *) {good} ;; esac\n"
        )
    } else {
        format!("#!/bin/sh\n{good}\n")
    }
}

struct Site {
    cluster: Cluster,
    config: PathBuf,
    runtime: PathBuf,
}

impl Site {
    fn new() -> Option<Site> {
        let cluster = Cluster::start(2)?;
        let config = cluster.dir.join("burnin.toml");
        std::fs::write(
            &config,
            "plan = \"plan.toml\"\n[defaults]\nmode = \"agent\"\nconnect_timeout = \"5s\"\ngpus = 8\n[[node]]\nhost = \"node[01-02]\"\n",
        )
        .expect("inventory");
        std::fs::write(
            cluster.dir.join("plan.toml"),
            format!(
                "[settings]\nremote_dir = \"{}\"\n{}",
                cluster.dir.join("remote/runs").display(),
                PLAN.replace("{bin}", &cluster.bin.display().to_string())
            ),
        )
        .expect("plan");
        static SITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        // A short runtime dir, so ssh's multiplexing sockets fit the Unix socket path limit.
        let runtime = PathBuf::from(format!(
            "/tmp/bdr{}-{}",
            std::process::id(),
            SITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&runtime).expect("runtime dir");
        cluster.install_tool("mpirun", "#!/bin/sh\necho 'mpirun (Open MPI) 4.1.5'\n");
        cluster.install_tool("all_reduce_perf_mpi", "#!/bin/sh\nexit 0\n");
        Some(Site {
            cluster,
            config,
            runtime,
        })
    }

    /// `burnin doctor ARGS`: (exit code, stdout, stderr).
    fn doctor(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = Command::new(BIN)
            .arg("doctor")
            .args(args)
            .arg("-c")
            .arg(&self.config)
            .arg("--ssh-config")
            .arg(&self.cluster.ssh_config)
            .arg("--runs-dir")
            .arg(self.cluster.dir.join("runs"))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("BURNIN_LOG", self.cluster.dir.join("burnin.log"))
            .output()
            .expect("burnin doctor");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runtime);
    }
}

#[test]
fn a_clean_site_says_every_phase_can_run_on_every_node() {
    let Some(site) = Site::new() else { return };
    site.cluster.install_tool(
        "nvbandwidth",
        "#!/bin/sh\necho 'nvbandwidth Version: v0.7'\necho 'Built from Git version: v0.7'\n",
    );
    site.cluster.install_tool("python3", &python3(false));
    let (code, out, err) = site.doctor(&[]);
    eprintln!("--- burnin doctor, clean site (exit {code:?}):\n{out}{err}");
    assert_eq!(
        out.lines().next(),
        Some("doctor: all 3 phases can run on all 2 nodes"),
        "{out}{err}"
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("nvbandwidth Version: v0.7"), "{out}");
    assert!(out.contains("mpirun (Open MPI) 4.1.5"), "{out}");
    // mpirun is needed (and looked for) only where the job starts.
    assert_eq!(out.matches("mpirun (Open MPI)").count(), 1, "{out}");
    let (code, json, _) = site.doctor(&["--json"]);
    assert_eq!(code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(doc["schema"], 1);
    assert_eq!(
        doc["summary"],
        "doctor: all 3 phases can run on all 2 nodes"
    );
    assert_eq!(doc["phases"][1]["state"], "can-run");
    assert_eq!(
        doc["nodes"][1]["probe"]["torch"]["detail"],
        "torch 2.5.1, CUDA 12.4, cuda available True, 8 devices"
    );
}

#[test]
fn a_broken_site_names_each_phase_node_and_why() {
    let Some(site) = Site::new() else { return };
    // No nvbandwidth anywhere; torch missing on node02 only.
    site.cluster.install_tool("python3", &python3(true));
    let (code, out, err) = site.doctor(&[]);
    eprintln!("--- burnin doctor, broken site (exit {code:?}):\n{out}{err}");
    assert_eq!(
        out.lines().next(),
        Some(
            "doctor: 2 of 3 phases cannot run: N1 on all nodes (nvbandwidth not found), \
             W1 on node02 (torch not importable: ModuleNotFoundError: No module named 'torch')"
        ),
        "{out}{err}"
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let (code, json, _) = site.doctor(&["--json"]);
    assert_eq!(code, Some(1));
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(doc["exit"], 1);
    assert_eq!(doc["phases"][1]["state"], "cannot");
    assert_eq!(doc["phases"][1]["nodes"][0][0], "node02");
    assert_eq!(doc["phases"][2]["state"], "can-run");
}

#[test]
fn a_hostile_tool_is_stripped_and_bounded() {
    let Some(site) = Site::new() else { return };
    // A 10 MB version line, then escape sequences (OSC 52 writes the clipboard; a bell).
    site.cluster.install_tool(
        "nvbandwidth",
        "#!/bin/sh\nhead -c 10000000 /dev/zero | tr '\\000' 'A'; printf '\\n\\033]52;c;aGk=\\007\\033[2J\\n'\n",
    );
    site.cluster.install_tool(
        "python3",
        "#!/bin/sh\nprintf 'burnin-torch\\tok\\t\\033]0;owned\\007torch 9\\r\\033[31m red\\n'\n",
    );
    site.cluster.install_tool(
        "mpirun",
        "#!/bin/sh\nprintf '\\033]52;c;aGk=\\007mpirun \\233 evil\\n'\n",
    );
    let started = std::time::Instant::now();
    let (code, out, err) = site.doctor(&[]);
    eprintln!(
        "--- burnin doctor, hostile tools (exit {code:?}), {} bytes:\n{}",
        out.len(),
        out.replace(&"A".repeat(200), "A×200…")
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(started.elapsed().as_secs() < 120);
    for c in out.chars().chain(err.chars()) {
        assert!(
            c == '\n' || !c.is_control(),
            "control character {c:?} reached the terminal"
        );
    }
    assert!(out.len() < 16 * 1024, "{} bytes", out.len());
    let version = out
        .lines()
        .find(|l| l.trim_start().starts_with("nvbandwidth"))
        .expect("the nvbandwidth line");
    assert!(version.contains(&"A".repeat(290)), "{version}");
    assert!(!version.contains(&"A".repeat(301)), "{version}");
    assert!(
        out.contains("torch 9 [31m red") || out.contains("torch 9[31m red"),
        "{out}"
    );
}

#[test]
fn no_node_reachable_exits_2_with_each_nodes_reason() {
    let Some(mut site) = Site::new() else { return };
    for n in &mut site.cluster.nodes {
        n.stop();
    }
    let (code, out, err) = site.doctor(&[]);
    eprintln!("--- burnin doctor, no node reachable (exit {code:?}):\n{out}{err}");
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        out.lines().next(),
        Some("doctor: could not look: every node unreachable (node01: refused; node02: refused)"),
        "{out}"
    );
}

/// T0 where the plan asks (`{doctor_probe}` in its command): the same probe rides along in the
/// phase on each node, and T0 warns per phase and node what cannot run there, naming what is
/// missing: W1 on node02 (torch not importable), never node01; M1's launcher only on the first
/// node. T0 warns, never fails, on it: the install is the node's, the tools are the phases'.
#[test]
fn t0_carries_the_doctor_and_warns_where_a_phase_cannot_run() {
    let plan = format!(
        "[[phase]]\nid = \"T0\"\ntitle = \"preflight\"\nscope = \"each-node\"\nparser = \"preflight\"\ngates = [{{ kind = \"checks\" }}]\ncommand = '''\necho \"== doctor\"; {{doctor_probe}}\n'''\n{PLAN}"
    );
    let Some(site) = common::site::Site::new(2, 8, &plan) else {
        return;
    };
    let bin = site.cluster.bin.display().to_string();
    let plan_file = site.cluster.dir.join("plan.toml");
    let text = std::fs::read_to_string(&plan_file).expect("plan");
    std::fs::write(&plan_file, text.replace("{bin}", &bin)).expect("plan");
    site.cluster.install_tool("python3", &python3(true));
    site.cluster
        .install_tool("mpirun", "#!/bin/sh\necho 'mpirun (Open MPI) 4.1.5'\n");
    site.cluster
        .install_tool("all_reduce_perf_mpi", "#!/bin/sh\nexit 0\n");
    let (_, doc, stderr) =
        common::site::finish(site.spawn(&["run", "--json", "--no-telemetry", "--only", "T0"]));
    let t0 = common::site::phase(&doc, "T0");
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    let check = |node: &str, name: &str| -> (String, String) {
        common::site::check_in(&events, node, name)
            .unwrap_or_else(|| panic!("no {name} check for {node}: {stderr}\n{events}"))
    };
    let (status, detail) = check("node02", "can-run-W1");
    assert_eq!(status, "warn", "{detail}");
    assert!(
        detail.contains("torch not importable") && detail.contains("No module named 'torch'"),
        "{detail}"
    );
    assert_eq!(check("node01", "can-run-W1").0, "ok");
    // nvbandwidth is on neither node.
    for node in ["node01", "node02"] {
        let (status, detail) = check(node, "can-run-N1");
        assert_eq!(status, "warn", "{node}: {detail}");
        assert!(detail.contains("nvbandwidth not found"), "{detail}");
    }
    // M1 starts on node01 only, with mpirun there; node02 runs only its job's program.
    let (status, detail) = check("node01", "can-run-M1");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains("mpirun"), "{detail}");
    assert!(!check("node02", "can-run-M1").1.contains("mpirun"));
    let (status, detail) = check("node02", "doctor");
    assert_eq!(status, "ok", "{detail}");
    assert!(
        detail.starts_with("2 of 4 phase(s) set up can run here"),
        "{detail}"
    );
    // A missing tool warns, never fails, T0: every can-run check is ok or warn (this T0 fails
    // only on the install sections its stand-in nodes do not print).
    let can_run: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e.get("metric").cloned())
        .filter(|m| {
            m["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("can-run-"))
        })
        .map(|m| m["status"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(can_run.len(), 8, "4 phases on 2 nodes: {can_run:?}");
    assert!(
        can_run.iter().all(|s| s == "ok" || s == "warn"),
        "{can_run:?}"
    );
    assert!(
        t0["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("driver-branch")
    );
}
