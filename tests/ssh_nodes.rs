//! Real nodes over real SSH: an OpenSSH server per node on loopback (tests/common/sshd.rs),
//! the system ssh client, and `burnin agent --sim` (or stand-in tools) on the far side.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use burnin::config::inventory::Inventory;
use burnin::model::NodeLink;
use burnin::model::{Source, SourceEvent};
use burnin::sources::fleet::FleetSource;
use burnin::store::ClusterStore;
use burnin::transport::ssh::SshSettings;
use common::sshd::Cluster;
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// Runs a fleet source and keeps a store of what it said.
struct Watcher {
    store: ClusterStore,
    rx: mpsc::Receiver<SourceEvent>,
    task: tokio::task::JoinHandle<()>,
    _cmd: mpsc::UnboundedSender<burnin::model::phase::PhaseCommand>,
}

impl Watcher {
    fn start(inventory: Inventory, cluster: &Cluster, multiplex: bool) -> Watcher {
        let control_dir = multiplex.then(|| {
            let d = cluster.dir.join("cm");
            std::fs::create_dir_all(&d).expect("cm dir");
            d
        });
        let ssh = SshSettings {
            config_file: Some(cluster.ssh_config.clone()),
            control_dir,
            connect_timeout: Duration::from_secs(5),
        };
        let period = inventory.interval;
        let source = Box::new(FleetSource::new(inventory, ssh, PathBuf::from(BIN)));
        let (tx, rx) = mpsc::channel(8192);
        let (cmd, cmd_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(source.run(tx, cmd_rx));
        Watcher {
            // As `watch` and `status` do: one history slot per sample period.
            store: ClusterStore::with_period(period),
            rx,
            task,
            _cmd: cmd,
        }
    }

    /// Feed events into the store until `done` holds; panics with the store's node states on
    /// timeout.
    async fn until(&mut self, what: &str, timeout: Duration, done: impl Fn(&ClusterStore) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        while !done(&self.store) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(ev)) => self.store.ingest(ev),
                _ => {
                    let states: Vec<_> = self
                        .store
                        .nodes
                        .iter()
                        .map(|n| {
                            (
                                n.name.clone(),
                                n.link.clone(),
                                n.gpus.len(),
                                n.garbled_lines,
                            )
                        })
                        .collect();
                    panic!("timed out waiting for {what}: {states:?}");
                }
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn streaming(store: &ClusterStore, node: &str, gpus: usize) -> bool {
    store.node(node).is_some_and(|n| {
        n.link == NodeLink::Streaming && n.gpus.len() == gpus && n.last_frame_ms.is_some()
    })
}

fn unreachable_reason(store: &ClusterStore, node: &str) -> Option<String> {
    match store.node(node).map(|n| &n.link) {
        Some(NodeLink::Unreachable(r)) => Some(r.clone()),
        _ => None,
    }
}

fn inventory(text: &str) -> Inventory {
    Inventory::parse("test.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn agent_inventory(nodes: &[&str], extra: &str) -> String {
    let mut s = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\nagent_path = \"{BIN}\"\n{extra}\n"
    );
    for n in nodes {
        s.push_str(&format!(
            "[[node]]\nhost = \"{n}\"\nagent_args = [\"--sim\", \"--gpus\", \"8\", \"--load\", \"full\", \"--seed\", \"7{}\"]\n",
            &n[4..]
        ));
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_stream_and_a_dropped_node_comes_back() {
    let Some(mut cluster) = Cluster::start(3) else {
        return;
    };
    let inv = inventory(&agent_inventory(&["node01", "node02", "node03"], ""));
    let mut w = Watcher::start(inv, &cluster, false);
    w.until("all three streaming", Duration::from_secs(30), |s| {
        ["node01", "node02", "node03"]
            .iter()
            .all(|n| streaming(s, n, 8))
    })
    .await;

    // node02 drops: its sshd goes away and its session's agent is killed.
    let sshd = cluster.sshd().to_path_buf();
    cluster.nodes[1].stop();
    // Stopping sshd may already have taken the session's agent with it; either way, none may
    // be left running.
    let _ = std::process::Command::new("pkill")
        .args(["-f", "--", "--seed 702"])
        .status();
    let gone = (0..50).any(|_| {
        let running = std::process::Command::new("pgrep")
            .args(["-f", "--", "--seed 702"])
            .status()
            .is_ok_and(|s| s.success());
        if running {
            std::thread::sleep(Duration::from_millis(100));
        }
        !running
    });
    assert!(gone, "node02's agent is still running");
    w.until("node02 unreachable", Duration::from_secs(15), |s| {
        unreachable_reason(s, "node02").is_some()
    })
    .await;
    let before = w
        .store
        .node("node01")
        .and_then(|n| n.last_frame_ms)
        .unwrap_or(0);
    w.until("node01 keeps streaming", Duration::from_secs(10), |s| {
        s.node("node01").and_then(|n| n.last_frame_ms).unwrap_or(0) > before + 400
    })
    .await;
    assert!(streaming(&w.store, "node03", 8));

    // While its sshd is down, every retry fails with a reason a person understands.
    w.until("node02 refused", Duration::from_secs(15), |s| {
        unreachable_reason(s, "node02").as_deref() == Some("refused")
    })
    .await;

    // Back: same console, node02 streams again.
    cluster.nodes[1].start(&sshd);
    w.until("node02 back", Duration::from_secs(45), |s| {
        streaming(s, "node02", 8)
    })
    .await;

    // The console goes away: the agents on the nodes notice their stdout closing and exit.
    drop(w);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = std::process::Command::new("pgrep")
            .args(["-f", "--", "--sim --gpus 8 --load full --seed 70"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "agents left running on the nodes: {left}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_is_auth_failed_not_a_hang() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    let extra = format!(
        "[[node]]\nhost = \"node01\"\nidentity = \"{}\"\nssh_options = [\"-o\", \"IdentitiesOnly=yes\", \"-o\", \"IdentityFile=none\"]\n",
        cluster.wrong_key.display()
    );
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\nagent_path = \"{BIN}\"\n{extra}"
    );
    // The ssh config names the right key for node01; -i adds the wrong one, so point -F at a
    // config without IdentityFile for this test.
    let cfg = std::fs::read_to_string(&cluster.ssh_config).expect("cfg");
    let cfg: String = cfg
        .lines()
        .filter(|l| !l.trim_start().starts_with("IdentityFile"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&cluster.ssh_config, cfg).expect("write cfg");
    let started = Instant::now();
    let mut w = Watcher::start(inventory(&text), &cluster, false);
    w.until("auth failed", Duration::from_secs(10), |s| {
        unreachable_reason(s, "node01").as_deref() == Some("auth failed")
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_host_key_is_named_and_never_bypassed() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    cluster.corrupt_known_hosts();
    let mut w = Watcher::start(
        inventory(&agent_inventory(&["node01"], "")),
        &cluster,
        false,
    );
    w.until("host key mismatch", Duration::from_secs(10), |s| {
        unreachable_reason(s, "node01").is_some_and(|r| r.starts_with("host key mismatch"))
    })
    .await;
    assert!(
        w.store.node("node01").is_some_and(|n| n.gpus.is_empty()),
        "no data through a bad key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_agent_is_named() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    let text = "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\n\
                agent_path = \"~/.cache/burnin-test-nowhere/bin/burnin\"\n[[node]]\nhost = \"node01\"\n";
    let mut w = Watcher::start(inventory(text), &cluster, false);
    w.until("agent missing", Duration::from_secs(10), |s| {
        unreachable_reason(s, "node01").is_some_and(|r| r.starts_with("agent missing"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_refuses_its_arguments_is_named_with_its_own_words() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\nagent_path = \"{BIN}\"\n\
         [[node]]\nhost = \"node01\"\nagent_args = [\"--sim\", \"--no-such-flag\"]\n"
    );
    let mut w = Watcher::start(inventory(&text), &cluster, false);
    // clap ends with "For more information, try '--help'."; the reason is its first line.
    w.until("the refusal", Duration::from_secs(10), |s| {
        unreachable_reason(s, "node01").as_deref()
            == Some("agent refused its arguments: unexpected argument '--no-such-flag' found")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_truncated_lines_are_counted_and_skipped() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    // A stand-in agent: one real hello and frame from the simulator, then noise, then more frames.
    let tool = cluster.install_tool(
        "noisy-agent",
        &format!(
            "#!/bin/sh\n{BIN} agent --sim --gpus 2 --frames 1 --interval 10ms\n\
             echo 'Warning: this is not JSON'\necho '{{\"frame\":{{\"node\":\"x\",\"at_ms\":'\n\
             printf '\\377\\376 binary\\n'\necho '{{\"future_kind\":{{}}}}'\n\
             head -c 3000000 /dev/zero | tr '\\0' x; echo\n\
             exec {BIN} agent --sim --gpus 2 --interval 200ms\n"
        ),
    );
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\n\
         agent_path = \"{}\"\ngpus = 2\n[[node]]\nhost = \"node01\"\n",
        tool.display()
    );
    let mut w = Watcher::start(inventory(&text), &cluster, false);
    w.until(
        "four garbled lines (one of them 3 MB) counted while streaming",
        Duration::from_secs(20),
        |s| s.node("node01").is_some_and(|n| n.garbled_lines == 4) && streaming(s, "node01", 2),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smi_mode_replays_real_output_and_falls_back_to_old_field_names() {
    let Some(cluster) = Cluster::start(2) else {
        return;
    };
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvidia-smi/h200-smi-stream.csv"
    );
    // A stand-in nvidia-smi: node01 replays the captured H200 stream (header and units);
    // on node02 the "driver" does not know the modern names, as old drivers do not.
    cluster.install_tool(
        "nvidia-smi",
        &format!(
            "#!/bin/sh\n\
             if [ \"$SSH_CONNECTION\" != \"${{SSH_CONNECTION#*127.0.0.3 }}\" ] && echo \"$*\" | grep -q power.draw.average; then\n\
               echo 'Field \"power.draw.average\" is not a valid field to query.'; exit 2\nfi\n\
             if echo \"$*\" | grep -q power.draw.average; then\n\
               while true; do tail -n +2 {fixture}; sleep 1; done\nfi\n\
             while true; do echo '0, GPU-1, NVIDIA H200, 350.50, 700.00, 41, 87, 1980, 1980, 3201, 1011, 143771, 0x0000000000000001, 0, 0, 535.183.01, 1654123045678, 00000000:18:00.0, 96.00.AF.00.01'; sleep 0.2; done\n",
        ),
    );
    let text = "[defaults]\nmode = \"smi\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 1\n\
                [[node]]\nhost = \"node[01-02]\"\n";
    let mut w = Watcher::start(inventory(text), &cluster, true);
    w.until("both smi nodes streaming", Duration::from_secs(30), |s| {
        streaming(s, "node01", 1) && streaming(s, "node02", 1)
    })
    .await;
    let g1 = w
        .store
        .node("node01")
        .and_then(|n| n.gpus[0].latest.clone())
        .expect("node01 sample");
    assert!(g1.power_avg_watts.is_some_and(|p| p > 500.0), "{g1:?}");
    assert_eq!(g1.clock_event_reasons, Some(4));
    let g2 = w
        .store
        .node("node02")
        .and_then(|n| n.gpus[0].latest.clone())
        .expect("node02 sample");
    assert_eq!(g2.power_avg_watts, Some(350.5));
    assert_eq!(g2.clock_event_reasons, Some(1));
    // The driver version the CSV carries is the node's, as an agent's hello would say.
    assert_eq!(
        w.store
            .node("node02")
            .and_then(|n| n.hello.as_ref())
            .and_then(|h| h.driver.clone())
            .as_deref(),
        Some("535.183.01")
    );
    // And what identifies its GPU for a return (the report's node table).
    let id = w
        .store
        .node("node02")
        .and_then(|n| n.hello.as_ref())
        .map(|h| h.gpus[0].identity.clone())
        .expect("node02 hello");
    assert_eq!(id.serial.as_deref(), Some("1654123045678"));
    assert_eq!(id.pci_bus_id.as_deref(), Some("00000000:18:00.0"));
    assert_eq!(id.vbios.as_deref(), Some("96.00.AF.00.01"));
    assert!(
        w.store
            .node("node02")
            .and_then(|n| n.note.clone())
            .is_some_and(|t| t.contains("not a valid field")),
        "the failed modern query is kept as the node's note"
    );
}

#[test]
fn status_and_deploy_through_the_binary() {
    let Some(mut cluster) = Cluster::start(2) else {
        return;
    };
    let agent_dir = cluster.dir.join("remote-home");
    let agent_path = agent_dir.join("bin/burnin");
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\nagent_path = \"{}\"\n\
         agent_args = [\"--sim\", \"--gpus\", \"4\"]\ngpus = 4\n[[node]]\nhost = \"node[01-02]\"\n",
        agent_path.display()
    );
    let inv = cluster.dir.join("burnin.toml");
    std::fs::write(&inv, text).expect("inventory");
    // A short runtime dir, so ssh's multiplexing sockets fit the Unix socket path limit.
    let runtime = PathBuf::from(format!("/tmp/brt{}", std::process::id()));
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .arg("-c")
            .arg(&inv)
            .arg("--ssh-config")
            .arg(&cluster.ssh_config)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("BURNIN_LOG", cluster.dir.join("burnin.log"))
            .output()
            .expect("run burnin");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // The multiplexing sockets are made in the runtime dir.
    // Nothing deployed yet: status names the missing agent and fails.
    let (code, out) = run(&["status"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("agent missing"), "{out}");
    // Deploy copies, a second deploy finds it up to date.
    let (code, out) = run(&["deploy"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.matches("copied to").count(), 2, "{out}");
    // What travels is stripped of debug info and compressed; what lands is the stripped
    // copy, which then runs as the node's agent below.
    assert!(
        out.contains("stripped of debug info") && out.contains(", gzip in"),
        "{out}"
    );
    assert!(out.contains("[2/2]"), "progress, node by node: {out}");
    let built = std::fs::metadata(BIN).expect("binary").len();
    let landed = std::fs::metadata(&agent_path).expect("deployed").len();
    assert!(landed < built / 2, "{landed} of {built} bytes");
    let (_, out) = run(&["deploy"]);
    assert_eq!(out.matches("up to date").count(), 2, "{out}");
    // Now every node answers with its GPUs.
    let (code, out) = run(&["status", "--json"]);
    assert_eq!(code, Some(0), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["nodes"][1]["gpus"].as_array().map(Vec::len), Some(4));
    // A node down: exit 1, with the reason.
    cluster.nodes[1].stop();
    let (code, out) = run(&["status"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("node02   unreachable: refused"), "{out}");
    let _ = std::fs::remove_dir_all(&runtime);
}

/// `burnin triage` cannot call a cluster healthy while a node sends no telemetry frame:
/// a hello and then silence, garbage that never decodes, one endless line. Each is a finding
/// naming what the node did send, and the exit code is critical (it was 0, "findings: none").
#[test]
fn triage_never_clears_a_node_that_sends_no_frame() {
    let Some(cluster) = Cluster::start(4) else {
        return;
    };
    let hello = r#"{"hello":{"node":"x","host":"x","agent_version":"t","gpus":[{"index":0,"name":"g","uuid":"u"}]}}"#;
    let mute = cluster.install_tool(
        "mute-agent",
        &format!("#!/bin/sh\necho '{hello}'\nexec sleep 600\n"),
    );
    let noisy = cluster.install_tool(
        "noise-agent",
        "#!/bin/sh\nwhile true; do echo 'Warning: not JSON at all'; sleep 0.1; done\n",
    );
    let endless = cluster.install_tool("endless-agent", "#!/bin/sh\nexec tr '\\0' x < /dev/zero\n");
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"3s\"\ngpus = 1\n\
         [[node]]\nhost = \"node01\"\nagent_path = \"{}\"\n\
         [[node]]\nhost = \"node02\"\nagent_path = \"{}\"\n\
         [[node]]\nhost = \"node03\"\nagent_path = \"{}\"\n\
         [[node]]\nhost = \"node04\"\nagent_path = \"{BIN}\"\nagent_args = [\"--sim\", \"--gpus\", \"1\", \"--load\", \"full\"]\n",
        mute.display(),
        noisy.display(),
        endless.display()
    );
    let inv = cluster.dir.join("burnin.toml");
    std::fs::write(&inv, text).expect("inventory");
    let runtime = PathBuf::from(format!("/tmp/brx{}", std::process::id()));
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    let out = std::process::Command::new(BIN)
        .args(["triage", "--for", "8s", "-c"])
        .arg(&inv)
        .arg("--ssh-config")
        .arg(&cluster.ssh_config)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("BURNIN_LOG", cluster.dir.join("burnin.log"))
        .output()
        .expect("run burnin triage");
    let _ = std::fs::remove_dir_all(&runtime);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(!text.contains("findings: none"), "{text}");
    let line = |node: &str| {
        text.lines()
            .find(|l| l.contains(node) && l.contains("unreachable"))
            .unwrap_or_else(|| panic!("no finding for {node}:\n{text}"))
            .to_string()
    };
    assert!(line("node01").contains("hello"), "{text}");
    assert!(line("node02").contains("that are no frame"), "{text}");
    assert!(line("node03").contains("no telemetry frame"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.contains("node04") && l.contains("unreachable")),
        "the healthy node is not a finding:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_a_wrong_clock_is_neither_stale_nor_moves_the_console_clock() {
    let Some(cluster) = Cluster::start(2) else {
        return;
    };
    // node02's clock is wrong: its agent stamps every frame 1970-01-01 (an unset RTC, NTP off).
    let tool = cluster.install_tool(
        "skewed-agent",
        "#!/bin/sh\n\
         echo '{\"hello\":{\"node\":\"x\",\"host\":\"x\",\"agent_version\":\"t\",\"gpus\":[{\"index\":0,\"name\":\"g\",\"uuid\":\"u\"}]}}'\n\
         while true; do echo '{\"frame\":{\"node\":\"x\",\"at_ms\":1000,\"gpus\":[{\"index\":0,\"utilization_pct\":50}]}}'; sleep 0.2; done\n",
    );
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 1\n\
         [[node]]\nhost = \"node01\"\nagent_path = \"{BIN}\"\nagent_args = [\"--sim\", \"--gpus\", \"1\"]\n\
         [[node]]\nhost = \"node02\"\nagent_path = \"{}\"\n",
        tool.display()
    );
    let mut w = Watcher::start(inventory(&text), &cluster, false);
    w.until("both streaming", Duration::from_secs(20), |s| {
        streaming(s, "node01", 1) && streaming(s, "node02", 1)
    })
    .await;
    // Well past three periods: a node judged by its own clock would flap to stale on every
    // console tick, and its history would never advance.
    let until = tokio::time::Instant::now() + Duration::from_secs(2);
    let mut went_stale = false;
    while let Ok(Some(ev)) = tokio::time::timeout_at(until, w.rx.recv()).await {
        w.store.ingest(ev);
        went_stale |= w
            .store
            .node("node02")
            .is_some_and(|n| n.link == NodeLink::Stale);
    }
    assert!(!went_stale, "node02 was marked stale while it streamed");
    let slots = w
        .store
        .node("node02")
        .map_or(0, |n| n.gpus[0].util_pct.len());
    assert!(
        slots >= 8,
        "node02's history advances with the console clock: {slots} slots"
    );
    assert!(streaming(&w.store, "node01", 1));
    let wall = burnin::sources::fleet::now_ms();
    assert!(
        w.store.now_ms.abs_diff(wall) < 10_000,
        "console clock follows the wall clock"
    );
    let note = w
        .store
        .node("node02")
        .and_then(|n| n.note.clone())
        .unwrap_or_default();
    assert!(
        note.starts_with("node clock differs from the console's by -"),
        "{note}"
    );
    assert!(
        w.store.node("node01").is_some_and(|n| n.note.is_none()),
        "a right clock is not noted"
    );
}
