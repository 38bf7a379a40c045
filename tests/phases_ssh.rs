//! Phases on real nodes over real SSH (an sshd per node on loopback, tests/common/sshd.rs),
//! through the binary as an engineer runs it: `burnin run --json`. Stand-in benchmark programs
//! on the nodes replay real captured output line by line; the figures in the run record must be
//! the numbers in the captures. Abort must leave nothing running; a cut SSH link must neither
//! lose nor double a line; an Xid the telemetry sees during a phase fails it. The tests about
//! the phases themselves run with `--no-telemetry` (their nodes have no agent to watch).

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::site::{BIN, Site, finish, phase, replay_tool};

fn figure(doc: &serde_json::Value, id: &str, name: &str, subject: &str) -> Option<f64> {
    phase(doc, id)["figures"][name]
        .as_array()?
        .iter()
        .find(|s| s["subject"] == subject)?["value"]
        .as_f64()
}

/// The console's path without a terminal: a fleet source over the site's node (telemetry from
/// a simulated agent with `gpus` GPUs) with a phase driver, and a store fed from it.
struct Console {
    store: burnin::store::ClusterStore,
    /// The run directory the driver said it records into (`SourceEvent::Recording`).
    recording: Option<String>,
    rx: tokio::sync::mpsc::Receiver<burnin::model::SourceEvent>,
    commands: tokio::sync::mpsc::UnboundedSender<burnin::model::phase::PhaseCommand>,
    task: tokio::task::JoinHandle<()>,
}

impl Console {
    /// Start it (taking over `resume` when given).
    fn start(site: &Site, gpus: u32, resume: Option<&Path>) -> Console {
        Console::start_with(site, gpus, resume, false)
    }

    /// [`Console::start`], opening the run record with the console when `record_from_start`
    /// (`burnin watch --record`).
    fn start_with(
        site: &Site,
        gpus: u32,
        resume: Option<&Path>,
        record_from_start: bool,
    ) -> Console {
        use burnin::model::Source;
        use std::sync::Arc;
        let text = format!(
            "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\nagent_path = \"{BIN}\"\n\
             agent_args = [\"--sim\", \"--gpus\", \"{gpus}\"]\ngpus = {gpus}\n[[node]]\nhost = \"node01\"\n"
        );
        let inventory =
            burnin::config::inventory::Inventory::parse("test.toml", &text).expect("inventory");
        let plan = Arc::new(
            burnin::plan::Plan::parse(
                "plan.toml",
                &std::fs::read_to_string(site.cluster.dir.join("plan.toml")).expect("plan"),
            )
            .expect("plan parses"),
        );
        let ssh = burnin::transport::ssh::SshSettings {
            config_file: Some(site.cluster.ssh_config.clone()),
            control_dir: None,
            connect_timeout: Duration::from_secs(5),
        };
        let mut driver = burnin::console::driver::PhaseDriver::new(
            burnin::phases::runner::RunContext {
                run_id: String::new(),
                attempt: 1,
                earlier: Default::default(),
                confirm: None,
                plan: Arc::clone(&plan),
                nodes: burnin::commands::run::runner_nodes(&inventory, &ssh),
                baseline: None,
                telemetry: Some(Arc::new(burnin::triage::telemetry_log::TelemetryLog::new(
                    burnin::model::units::Period::from_millis(200).expect("period"),
                ))),
            },
            inventory.clone(),
            site.runs.clone(),
            None,
        );
        if let Some(dir) = resume {
            driver.resume(dir).expect("resume");
        }
        driver.set_record_from_start(record_from_start);
        let source = Box::new(burnin::console::beside::PhasesBeside::new(
            Box::new(burnin::sources::fleet::FleetSource::new(
                inventory,
                ssh,
                PathBuf::from(BIN),
            )),
            driver,
        ));
        let (tx, rx) = tokio::sync::mpsc::channel(8192);
        let (commands, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(source.run(tx, cmd_rx));
        let mut store = burnin::store::ClusterStore::with_period(
            burnin::model::units::Period::from_millis(200).expect("period"),
        );
        store.set_plan(&plan);
        Console {
            store,
            recording: None,
            rx,
            commands,
            task,
        }
    }

    /// Start phase `id` (the `s` key) and feed events until it has ended.
    async fn run_to_end(&mut self, id: &str) {
        self.commands
            .send(burnin::model::phase::PhaseCommand::Start(id.into()))
            .expect("send");
        self.until(&format!("{id} to end"), &|s| {
            matches!(
                s.phase(id).map(|p| p.state),
                Some(burnin::store::PhaseState::Done(_))
            )
        })
        .await;
    }

    /// Feed events into the store until `done` holds (40 s at most).
    async fn until(&mut self, what: &str, done: &dyn Fn(&burnin::store::ClusterStore) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
        while !done(&self.store) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(burnin::model::SourceEvent::Recording { dir })) => {
                    self.recording = Some(dir);
                }
                Ok(Some(ev)) => self.store.ingest(ev),
                _ => panic!("timed out waiting for {what}"),
            }
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start `burnin run`, kill it outright once node01's log of `phase` shows `marker`, and
/// return its run directory (the phase goes on running on the node).
fn kill_console_mid_phase(site: &Site, phase: &str, marker: &str) -> PathBuf {
    let mut first = site.spawn(&["run", "--json", "--no-telemetry"]);
    wait_for(marker, Duration::from_secs(30), || {
        site.phase_dir(phase, "node01")
            .and_then(|d| std::fs::read_to_string(d.join("log")).ok())
            .is_some_and(|l| l.contains(&format!("{marker}\n")))
    });
    first.kill().expect("kill the console");
    let _ = first.wait();
    site.the_run()
}

/// Wait (40 s at most) until the telemetry recorded in `run` satisfies `enough`.
fn wait_for_seconds(
    run: &Path,
    what: &str,
    enough: impl Fn(&[burnin::record::telemetry::NodeSecond]) -> bool,
) {
    wait_for(what, Duration::from_secs(40), || {
        burnin::record::telemetry::read_telemetry(run).is_ok_and(|t| enough(&t.seconds))
    });
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn replayed_benchmarks_give_the_numbers_in_the_captures() {
    let plan = r#"
[vars]
extra = ""
[[phase]]
id = "T4"
title = "single-node NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{ kind = "zero-wrong" }, { kind = "peers", figure = "busbw_all_reduce", pct = 90 }]
command = "all_reduce_perf -b 8 -e 8G -f 2 -g {gpus}"
[[phase]]
id = "T3"
title = "NVLink"
scope = "each-node"
parser = "nvbandwidth"
gates = [{ kind = "peers", figure = "pair_gb_per_s", pct = 90 }]
command = "nvbandwidth -t device_to_device_memcpy_read_ce"
[[phase]]
id = "S1"
title = "RDMA write"
scope = "launcher"
parser = "perftest"
gates = [{ kind = "min", figure = "link_gbit_per_s", value = 0.1 }]
command = "ib_write_bw -a -d mlx5_0 --report_gbits {hosts}"
[[phase]]
id = "Q"
title = "quoting"
scope = "each-node"
parser = "none"
command = "printf '%s|' 'a b' \"it's\" '$(touch PWNED)' ';' 'x;y' && echo"
"#;
    let Some(site) = Site::new(2, 8, plan) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &replay_tool("nccl-tests/h100-2node-16rank-allreduce.txt"),
    );
    site.cluster.install_tool(
        "nvbandwidth",
        &replay_tool("nvbandwidth/v0.2-h800-8gpu-d2d-read-ce.txt"),
    );
    site.cluster.install_tool(
        "ib_write_bw",
        &replay_tool("perftest/write-bw-sweep-ib-gbits-truncated.txt"),
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}");
    for node in ["node01", "node02"] {
        // The last row of the capture: 8589934592 B, busbw 338.82 GB/s.
        assert_eq!(
            figure(&doc, "T4", "busbw_all_reduce", node),
            Some(338.82),
            "{doc}"
        );
        // Cell 0 -> 1 of the read matrix.
        assert_eq!(
            figure(
                &doc,
                "T3",
                "pair_gb_per_s",
                &format!("{node} 0->1 memcpy_read_ce")
            ),
            Some(172.32)
        );
    }
    assert_eq!(phase(&doc, "T4")["verdict"], "PASS", "{doc}");
    assert_eq!(phase(&doc, "T3")["verdict"], "PASS", "{doc}");
    // The launcher phase ran once, on the first node, and read the 8-byte row (0.17 Gb/s).
    assert_eq!(
        figure(&doc, "S1", "link_gbit_per_s", "node01/mlx5_0 write"),
        Some(0.17)
    );
    assert_eq!(phase(&doc, "S1")["verdict"], "PASS", "{doc}");
    assert_eq!(doc["verdict"], "PASS");
    // Every line reached the record, once, in order.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let log = std::fs::read_to_string(run_dir.join("logs/T4/node02.log")).expect("log");
    let capture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt"),
    )
    .expect("fixture");
    let tool_lines: Vec<&str> = log.lines().collect();
    let want: Vec<&str> = capture.lines().skip(1).collect();
    assert_eq!(tool_lines, want);
    // Quotes, $(…) and ; in the command reached the program as written; nothing ran.
    let q = std::fs::read_to_string(run_dir.join("logs/Q/node01.log")).expect("Q log");
    assert!(q.contains("a b|it's|$(touch PWNED)|;|x;y|"), "{q}");
    let pwned = site.phase_dir("Q", "node01").map(|d| d.join("PWNED"));
    assert!(pwned.is_some_and(|p| !p.exists()));
    // The record is whole.
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert_eq!(events.matches(r#""event":"finished""#).count(), 4);
}

#[test]
fn abort_stops_the_whole_process_group_and_records_aborted() {
    let plan = r#"
[[phase]]
id = "T4"
title = "long"
scope = "each-node"
parser = "none"
command = "trap '' TERM; echo started; sleep 300 & sleep 300"
[[phase]]
id = "T5"
title = "after"
scope = "each-node"
parser = "none"
command = "echo never"
"#;
    let Some(site) = Site::new(2, 1, plan) else {
        return;
    };
    let child = site.spawn(&["run", "--json", "--no-telemetry"]);
    let mut pgids = Vec::new();
    for node in ["node01", "node02"] {
        wait_for("the phase to start", Duration::from_secs(30), || {
            site.phase_dir("T4", node)
                .and_then(|d| std::fs::read_to_string(d.join("log")).ok())
                .is_some_and(|l| l.contains("started"))
        });
        let pid = site.phase_dir("T4", node).expect("dir").join("pid");
        let pgid: i32 = std::fs::read_to_string(pid)
            .expect("pid")
            .trim()
            .parse()
            .expect("pgid");
        pgids.push(pgid);
    }
    // Ctrl-C, as the engineer would.
    // SAFETY: sending SIGINT to the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, doc, stderr) = finish(child);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(phase(&doc, "T4")["verdict"], "ABORTED", "{doc}");
    assert!(
        phase(&doc, "T4")["reason"]
            .as_str()
            .is_some_and(|r| r.contains("node01") && r.contains("node02")),
        "{doc}"
    );
    assert_eq!(phase(&doc, "T5")["verdict"], "SKIPPED");
    assert_eq!(doc["interrupted"], true);
    for pgid in pgids {
        // SAFETY: signal 0 only asks whether any process of the group is left.
        let alive = unsafe { libc::kill(-pgid, 0) } == 0;
        assert!(!alive, "process group {pgid} still has processes");
    }
    let stopped = site.phase_dir("T4", "node01").expect("dir").join("stopped");
    assert_eq!(
        std::fs::read_to_string(stopped).expect("stopped").trim(),
        "aborted"
    );
}

#[test]
fn a_cut_link_is_reattached_without_losing_or_doubling_a_line() {
    let plan = r#"
[[phase]]
id = "T5"
title = "steady output"
scope = "each-node"
parser = "none"
command = "i=0; while [ $i -lt 80 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done"
"#;
    let Some(mut site) = Site::new(1, 1, plan) else {
        return;
    };
    let child = site.spawn(&["run", "--json", "--no-telemetry"]);
    wait_for("line 10", Duration::from_secs(30), || {
        site.phase_dir("T5", "node01")
            .and_then(|d| std::fs::read_to_string(d.join("log")).ok())
            .is_some_and(|l| l.contains("line 10\n"))
    });
    // The node's sshd goes down with its sessions; the phase keeps running on the node.
    site.cluster.nodes[0].stop();
    std::thread::sleep(Duration::from_millis(1500));
    let sshd = site.cluster.sshd().to_path_buf();
    site.cluster.nodes[0].start(&sshd);
    let (code, doc, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(phase(&doc, "T5")["verdict"], "PASS", "{doc}");
    assert!(stderr.contains("re-attaching at byte"), "{stderr}");
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let log = std::fs::read_to_string(run_dir.join("logs/T5/node01.log")).expect("log");
    let lines: Vec<&str> = log.lines().collect();
    let want: Vec<String> = (0..80).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, want);
}

/// The console's path: telemetry and phases through one source; `s` starts a phase whose rows
/// fill the NCCL view as they arrive, `a` aborts a long one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_starts_and_aborts_phases_on_real_nodes() {
    use burnin::model::phase::{PhaseCommand, Verdict};
    use burnin::store::{ClusterStore, PhaseState};

    let plan_text = r#"
[[phase]]
id = "T4"
title = "single-node NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{ kind = "zero-wrong" }]
command = "all_reduce_perf -b 8 -e 8G -f 2 -g {gpus}"
[[phase]]
id = "T5"
title = "long"
scope = "each-node"
parser = "none"
command = "echo started; sleep 300"
"#;
    let Some(site) = Site::new(1, 4, plan_text) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &replay_tool("nccl-tests/h100-2node-16rank-allreduce.txt"),
    );
    let mut console = Console::start(&site, 4, None);
    let cmd = console.commands.clone();
    let phase_state = |s: &ClusterStore, id: &str| s.phase(id).map(|p| p.state);
    cmd.send(PhaseCommand::Start("T4".into())).expect("send");
    console
        .until("T4 rows", &|s| {
            s.phase("T4").is_some_and(|p| !p.busbw.is_empty())
        })
        .await;
    console
        .until("T4 to end", &|s| {
            matches!(phase_state(s, "T4"), Some(PhaseState::Done(_)))
        })
        .await;
    let t4 = console.store.phase("T4").expect("T4");
    assert_eq!(t4.state, PhaseState::Done(Verdict::Pass), "{:?}", t4.reason);
    // The first start opened the record, and the console was told (its status bar: REC).
    assert!(console.recording.is_some());
    assert_eq!(t4.busbw.len(), 31);
    assert_eq!(t4.busbw[&8_589_934_592].per_node["node01"], 338.82);
    assert!(
        t4.log.iter().any(|l| l.starts_with("node01| #  Rank  0")),
        "{:?}",
        t4.log
    );
    // `r`: the same phase again, in its own directory on the node.
    cmd.send(PhaseCommand::Start("T4".into())).expect("send");
    console
        .until("T4 to run again", &|s| {
            matches!(phase_state(s, "T4"), Some(PhaseState::Running))
        })
        .await;
    console
        .until("T4 to end again", &|s| {
            matches!(phase_state(s, "T4"), Some(PhaseState::Done(_)))
        })
        .await;
    assert_eq!(
        phase_state(&console.store, "T4"),
        Some(PhaseState::Done(Verdict::Pass))
    );
    assert!(
        site.phase_dir("T4.2", "node01")
            .is_some_and(|d| d.join("rc").exists())
    );
    // The GPUs stream beside it.
    console
        .until("telemetry", &|s| {
            s.node("node01").is_some_and(|n| n.gpus.len() == 4)
        })
        .await;
    // A long phase, aborted.
    cmd.send(PhaseCommand::Start("T5".into())).expect("send");
    console
        .until("T5 to print", &|s| {
            s.phase("T5")
                .is_some_and(|p| p.log.iter().any(|l| l.ends_with("| started")))
        })
        .await;
    cmd.send(PhaseCommand::Abort("T5".into())).expect("send");
    console
        .until("T5 to end", &|s| {
            matches!(phase_state(s, "T5"), Some(PhaseState::Done(_)))
        })
        .await;
    assert_eq!(
        phase_state(&console.store, "T5"),
        Some(PhaseState::Done(Verdict::Aborted))
    );
    // Both phases are in one run record.
    let run = site.the_run();
    // The summary is rewritten just after the console hears of the end.
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).expect("summary"))
            .expect("json")
    };
    wait_for(
        "the summary to hold both phases",
        Duration::from_secs(10),
        || read()["phases"].as_array().map(Vec::len) == Some(2),
    );
    let summary = read();
    assert_eq!(summary["verdict"], "ABORTED");
    // The operator's keys, and the GPUs' telemetry once the record opened, are in it too.
    let events = std::fs::read_to_string(run.join("events.jsonl")).expect("events");
    for (action, phase) in [("start", "T4"), ("start", "T5"), ("abort", "T5")] {
        assert!(
            events.lines().any(|l| l.contains(r#""event":"operator""#)
                && l.contains(&format!(r#""action":"{action}","phase":"{phase}""#))),
            "{action} {phase}: {events}"
        );
    }
    wait_for_seconds(&run, "the console's telemetry in the record", |s| {
        s.iter()
            .any(|s| s.node == "node01" && s.last.gpus.len() == 4)
    });
}

/// A plan of one quick phase (T5 prints a line), for the record-opening tests.
const ECHO_T5: &str = r#"
[[phase]]
id = "T5"
title = "echo"
scope = "each-node"
parser = "none"
command = "echo hello"
"#;

/// `burnin watch --record`: the record opens with the console, and the GPUs' telemetry is in
/// it before any phase starts; a phase started later goes into the same run. Watching without
/// it leaves no run behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_records_from_its_start_when_asked() {
    let Some(site) = Site::new(1, 2, ECHO_T5) else {
        return;
    };
    let runs = || -> Vec<PathBuf> {
        std::fs::read_dir(&site.runs)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let gpus_stream =
        |s: &burnin::store::ClusterStore| s.node("node01").is_some_and(|n| n.gpus.len() == 2);
    {
        let mut console = Console::start(&site, 2, None);
        console.until("telemetry", &gpus_stream).await;
        assert!(runs().is_empty(), "watching alone made a run: {:?}", runs());
        assert_eq!(console.recording, None);
    }
    let mut console = Console::start_with(&site, 2, None, true);
    console.until("telemetry", &gpus_stream).await;
    let found = runs();
    assert_eq!(found.len(), 1, "{found:?}");
    let run = found[0].clone();
    // The console was told, so its status bar shows that it records.
    assert_eq!(console.recording, Some(run.display().to_string()));
    wait_for_seconds(&run, "the telemetry before any phase in the record", |s| {
        s.iter()
            .any(|s| s.node == "node01" && s.last.gpus.len() == 2)
    });
    let events = std::fs::read_to_string(run.join("events.jsonl")).expect("events");
    assert!(!events.contains(r#""event":"operator""#), "{events}");
    console.run_to_end("T5").await;
    assert_eq!(runs(), vec![run.clone()]);
    let events = std::fs::read_to_string(run.join("events.jsonl")).expect("events");
    assert!(
        events.lines().any(|l| l.contains(r#""event":"operator""#)
            && l.contains(r#""action":"start","phase":"T5""#)),
        "{events}"
    );
}

/// Without `--record`, the console keeps what it sees in memory, and the first phase start
/// writes it into the record it opens: the run starts when the console did, its telemetry and
/// node states from before the phase are in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_phase_keeps_what_the_console_saw_before_it() {
    let Some(site) = Site::new(1, 2, ECHO_T5) else {
        return;
    };
    let opened_ms = burnin::model::now_ms();
    let mut console = Console::start(&site, 2, None);
    console
        .until("telemetry", &|s| {
            s.node("node01").is_some_and(|n| n.gpus.len() == 2)
        })
        .await;
    // Three seconds of watching before anything starts.
    let watched_until = burnin::model::now_ms() + 3000;
    console
        .until("three more seconds", &|s| s.now_ms >= watched_until)
        .await;
    assert!(
        std::fs::read_dir(&site.runs).map_or(true, |mut d| d.next().is_none()),
        "no run before a phase"
    );
    assert_eq!(console.recording, None);
    console.run_to_end("T5").await;
    let run = site.the_run();
    assert_eq!(console.recording, Some(run.display().to_string()));
    // The summary is rewritten just after the console hears of the end.
    let read = || -> serde_json::Value {
        std::fs::read_to_string(run.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    };
    wait_for("the summary to hold T5", Duration::from_secs(10), || {
        read()["phases"].as_array().is_some_and(|p| !p.is_empty())
    });
    let summary = read();
    let started = summary["started_ms"].as_u64().expect("started_ms");
    let t5_started = phase(&summary, "T5")["started_ms"]
        .as_u64()
        .expect("T5 started_ms");
    assert!(
        started >= opened_ms && started + 3000 <= t5_started,
        "the run starts with the console: {started} (console {opened_ms}, T5 {t5_started})"
    );
    wait_for_seconds(
        &run,
        "the telemetry from before the phase in the record",
        |s| {
            s.iter()
                .filter(|s| s.node == "node01" && s.t + 2000 < t5_started)
                .count()
                >= 2
        },
    );
    let events = std::fs::read_to_string(run.join("events.jsonl")).expect("events");
    // The node's state from the console's first second, written ahead of the phase's events.
    let lines: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let connecting = lines.iter().position(|e| {
        e["event"] == "node_state"
            && e["state"] == "connecting"
            && e["at_ms"].as_u64().is_some_and(|t| t < started + 1000)
    });
    let operator = lines.iter().position(|e| e["event"] == "operator");
    assert!(connecting.is_some() && connecting < operator, "{events}");
}

/// `a` on a `together` phase while its first member runs alone: the member is aborted and the
/// chain stops there (the group never starts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_together_phase_stops_its_chain() {
    use burnin::model::phase::{PhaseCommand, Verdict};
    use burnin::store::PhaseState;

    let plan_text = r#"
[[phase]]
id = "L"
title = "long"
scope = "each-node"
parser = "none"
command = "echo started; sleep 300"
[[phase]]
id = "Q"
title = "quick"
scope = "each-node"
parser = "none"
command = "echo quick"
[[phase]]
id = "G"
title = "both"
together = ["L", "Q"]
"#;
    let Some(site) = Site::new(1, 1, plan_text) else {
        return;
    };
    let mut console = Console::start(&site, 1, None);
    let cmd = console.commands.clone();
    cmd.send(PhaseCommand::Start("G".into())).expect("send");
    console
        .until("L to print", &|s| {
            s.phase("L")
                .is_some_and(|p| p.log.iter().any(|l| l.ends_with("| started")))
        })
        .await;
    // The group's id stops whichever of its chain runs.
    cmd.send(PhaseCommand::Abort("G".into())).expect("send");
    console
        .until("L to end", &|s| {
            matches!(s.phase("L").map(|p| p.state), Some(PhaseState::Done(_)))
        })
        .await;
    assert_eq!(
        console.store.phase("L").map(|p| p.state),
        Some(PhaseState::Done(Verdict::Aborted))
    );
    // Nothing more starts: Q and G stay pending while the console goes on.
    let quiet = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Some(ev)) = tokio::time::timeout_at(quiet, console.rx.recv()).await {
        console.store.ingest(ev);
    }
    for id in ["Q", "G"] {
        assert_eq!(
            console.store.phase(id).map(|p| p.state),
            Some(PhaseState::Pending),
            "{id}"
        );
    }
    assert!(site.phase_dir("Q", "node01").is_some_and(|d| !d.exists()));
}

/// The console's `s` on a `together` phase whose members have not run: they run alone first,
/// then at once; the group's comparison reaches the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_runs_a_together_phase_after_its_members_alone() {
    use burnin::model::phase::{PhaseCommand, Verdict};
    use burnin::store::PhaseState;

    let plan_text = r#"
[[phase]]
id = "N"
title = "NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{ kind = "zero-wrong" }]
command = "all_reduce_perf"
[[phase]]
id = "L"
title = "beside it"
scope = "each-node"
parser = "none"
command = "echo beside; sleep 1"
[[phase]]
id = "G"
title = "both"
together = ["N", "L"]
gates = [{ kind = "together", figure = "busbw_all_reduce", worse_pct = 5 }]
"#;
    let Some(site) = Site::new(1, 4, plan_text) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &replay_tool("nccl-tests/h100-2node-16rank-allreduce.txt"),
    );
    let mut console = Console::start(&site, 4, None);
    let cmd = console.commands.clone();
    cmd.send(PhaseCommand::Start("G".into())).expect("send");
    console
        .until("G to end", &|s| {
            matches!(s.phase("G").map(|p| p.state), Some(PhaseState::Done(_)))
        })
        .await;
    for id in ["N", "L"] {
        let p = console.store.phase(id).expect("member");
        assert_eq!(
            p.state,
            PhaseState::Done(Verdict::Pass),
            "{id}: {:?}",
            p.reason
        );
    }
    let g = console.store.phase("G").expect("G");
    assert_eq!(g.state, PhaseState::Done(Verdict::Pass), "{:?}", g.reason);
    // The same capture twice: no change, and the table says so.
    let row = g
        .together
        .iter()
        .find(|c| c.figure == "busbw_all_reduce" && c.subject == "node01")
        .unwrap_or_else(|| panic!("{:?}", g.together));
    assert_eq!((row.alone, row.together), (338.82, 338.82));
    assert!(
        g.log.iter().any(|l| l.starts_with("L@node01| beside")),
        "{:?}",
        g.log
    );
    assert!(
        site.phase_dir("G-N", "node01")
            .is_some_and(|d| d.join("rc").exists())
            && site
                .phase_dir("G-L", "node01")
                .is_some_and(|d| d.join("rc").exists())
    );
}

/// An operator drill under `burnin run`: the load (a stand-in all_reduce_perf printing the
/// real capture's header, then one 1 GiB row every 0.1 s at the busbw a file says, or nothing
/// while "stalled") runs; burnin asks, the test "pulls the cable" (stalls the load, then lets
/// it limp, then restores it) and confirms with Enter on stdin, as an engineer would.
#[test]
fn a_drill_asks_the_operator_and_times_the_recovery_after_each_confirmation() {
    use std::io::{BufRead, Write};
    let plan = r#"
[[phase]]
id = "D"
title = "Drill: pull a cable"
scope = "each-node"
parser = "nccl-tests"
timeout = "2m"
command = "all_reduce_perf"
[phase.drill]
watch = ["busbw_all_reduce"]
steady = "1s"
settle = "1s"
recover_pct = 90
[[phase.drill.steps]]
ask = "Pull the cable"
within = "20s"
[[phase.drill.steps]]
ask = "Put it back"
within = "20s"
"#;
    let Some(site) = Site::new(1, 8, plan) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    let level = site.cluster.dir.join("level");
    let warned = site.cluster.dir.join("warned");
    // The load reads the level every 0.1 s: a new level is renamed into place, so the load
    // never reads a file half-written (an empty level printed a row of 11 fields, which the
    // parser rightly reported, turning the verdict to WARN).
    let set_level = |text: &str| {
        let tmp = level.with_extension("new");
        std::fs::write(&tmp, text).expect("level");
        std::fs::rename(&tmp, &level).expect("level");
    };
    set_level("380.00");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsed -n 2,24p '{capture}'\nwhile :; do\n  l=$(cat '{level}')\n  case \"$l\" in\n    stall) [ -e '{warned}' ] || {{ echo 'node01:77:77 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with status=12 error, retrying'; touch '{warned}'; }} ;;\n    *) awk -v b=\"$l\" 'BEGIN {{ printf \"  1073741824   268435456  float  sum  -1  2800.0  %.2f  %.2f  0  2800.0  %.2f  %.2f  0\\n\", b / 1.875, b, b / 1.875, b }}' ;;\n  esac\n  sleep 0.1\ndone\n",
            capture = capture.display(),
            level = level.display(),
            warned = warned.display(),
        ),
    );
    let mut child = site
        .command(&["run", "--json", "--no-telemetry", "--only", "D"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("burnin run");
    let mut stdin = child.stdin.take().expect("stdin");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    let mut wait_line = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(what);
                    said.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no {what:?} on stderr:\n{}", said.join("\n")),
            }
        }
    };
    wait_line("ASKS     step 1/2: Pull the cable — press Enter when done");
    // The cable is out: the collective hangs and NCCL complains; then it limps; then it is back.
    set_level("stall");
    stdin.write_all(b"\n").expect("confirm");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(1500));
    set_level("150.00");
    std::thread::sleep(Duration::from_millis(1000));
    set_level("380.00");
    wait_line("ASKS     step 2/2: Put it back");
    stdin.write_all(b"\n").expect("confirm");
    stdin.flush().expect("flush");
    let out = child.wait_with_output().expect("wait");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("run --json");
    let d = phase(&doc, "D");
    assert_eq!(d["verdict"], "PASS", "{d}");
    assert_eq!(out.status.code(), Some(0));
    let rows = d["drill"].as_array().expect("drill rows");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (pull, back) = (&rows[0], &rows[1]);
    assert_eq!(
        (pull["step"].as_u64(), pull["dipped"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(pull["steady"].as_f64(), Some(380.0));
    // The stall counts as zero.
    assert_eq!(pull["low"].as_f64(), Some(0.0));
    // It was down for at least the 2.5 s the test held it down after confirming.
    assert!(
        pull["recovered_after_s"].as_f64().is_some_and(|s| s >= 2.0),
        "{pull}"
    );
    assert_eq!(pull["error_lines"].as_u64(), Some(1));
    assert!(
        pull["first_error"]
            .as_str()
            .is_some_and(|e| e.contains("NCCL WARN NET/IB"))
    );
    assert_eq!(
        (back["step"].as_u64(), back["dipped"].as_bool()),
        (Some(2), Some(false))
    );
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains("step 1: busbw_all_reduce node01 recovered in"),
        "{reason}"
    );
    assert!(
        reason.contains("step 2: busbw_all_reduce node01 not affected"),
        "{reason}"
    );
    assert!(reason.contains("step 1: 1 error/retry line(s)"), "{reason}");
    // The load was stopped as finished, not aborted, and nothing of it is left running.
    let dir = site.phase_dir("D", "node01").expect("phase dir");
    assert_eq!(
        std::fs::read_to_string(dir.join("stopped"))
            .map(|s| s.trim().to_string())
            .ok(),
        Some("finished".into())
    );
    // The report lists both steps.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(o.status.code(), Some(0));
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Drills"), "{md}");
    assert!(
        md.contains("| D | 2. Put it back | busbw_all_reduce | node01 | 380 |"),
        "{md}"
    );
}

/// A D2-like drill over real sshd on one node: a stand-in training job prints workload step
/// records; burnin's own step (`run`) "kills" it by a marker in its directory, and the job
/// does `on_kill` when it sees the marker. The run's exit code, summary and stderr.
fn kill_drill(on_kill: &str) -> Option<(Option<i32>, serde_json::Value, String)> {
    let plan = r#"
[[phase]]
id = "D2"
title = "Drill: kill training"
scope = "each-node"
parser = "workload"
timeout = "2m"
gates = [{ kind = "loss-finite" }]
command = "train"
[phase.drill]
watch = ["tokens_per_sec"]
steady = "2s"
settle = "1s"
[[phase.drill.steps]]
ask = "burnin kills the job"
run = "touch {dir}/killed && echo killed {node}"
within = "20s"
"#;
    let site = Site::new(1, 1, plan)?;
    site.cluster.install_tool(
        "train",
        &format!(
            "#!/bin/sh\ni=0\nwhile :; do\n  if [ -e killed ]; then {on_kill}; fi\n  printf '{{\"burnin\":\"step\",\"step\":%d,\"step_time_ms\":100.0,\"data_wait_ms\":0.5,\"tokens_per_sec\":8192.0,\"loss\":2.5,\"world\":1}}\\n' $i\n  i=$((i+1))\n  sleep 0.1\ndone\n"
        ),
    );
    Some(finish(site.spawn(&["run", "--json", "--no-telemetry"])))
}

/// A drill step burnin does itself (`run`): the job stalls when "killed", as a job restarting
/// from its checkpoint does; the drill times the first step after and the return.
#[test]
fn a_drill_step_burnin_runs_itself_times_the_first_step_after_it() {
    let Some((code, doc, stderr)) = kill_drill("rm -f killed; sleep 4") else {
        return;
    };
    let d = phase(&doc, "D2");
    assert_eq!(d["verdict"], "PASS", "{stderr}\n{d}");
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains("burnin kills the job: burnin does it")
            && stderr.contains("node01: ran `touch "),
        "{stderr}"
    );
    assert!(stderr.contains(": killed node01"), "{stderr}");
    let row = &d["drill"][0];
    assert_eq!(row["dipped"].as_bool(), Some(true), "{row}\n{stderr}");
    assert_eq!(row["low"].as_f64(), Some(0.0));
    assert!(
        row["first_after_s"].as_f64().is_some_and(|s| s >= 3.0),
        "{row}"
    );
    assert!(row["recovered_after_s"].as_f64().is_some(), "{row}");
    let reason = d["reason"].as_str().expect("reason");
    assert!(reason.contains("first sample again after"), "{reason}");
}

/// The same drill on a site whose job is not restarted (no loop, no supervisor): the step's
/// kill ends the load for good. The drill fails on that and says so, not "the load ended by
/// itself" (on the H200, tests/fixtures/h200-verdicts/d2-noloop, it was burnin's own kill).
#[test]
fn a_drill_whose_killed_job_never_comes_back_fails_naming_the_missing_restart() {
    let Some((code, doc, stderr)) = kill_drill("exit 137") else {
        return;
    };
    let d = phase(&doc, "D2");
    assert_eq!(d["verdict"], "FAIL", "{stderr}\n{d}");
    assert_eq!(code, Some(1));
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains(
            "the load ended during step 1/1 (burnin kills the job) and nothing started it again"
        ),
        "{reason}"
    );
    assert!(!reason.contains("ended by itself"), "{reason}");
}

/// T0 as shipped, over real SSH, against two stand-in nodes whose tools answer as an installed
/// node would (node01: R580 open module, 8 GPUs, services active) and as a node installed
/// wrong (node02: R550 proprietary, 7 of 8 GPUs, an Xid since boot). The stand-ins tell the
/// nodes apart by the address the SSH session reached ($SSH_CONNECTION).
#[test]
fn t0_preflight_runs_as_shipped_over_ssh_and_names_what_is_wrong_per_node() {
    let t0 = burnin::plan::default_plan().find("T0").expect("T0 shipped");
    // The command as shipped, written back as plan text with its braces doubled (the vars
    // read literally: `gds` is not "true"), but for the doctor, which the shipped plan turns on:
    // its probe is the runner's to fill in.
    let plan = format!(
        "[[phase]]\nid = \"T0\"\ntitle = \"preflight\"\nscope = \"each-node\"\nparser = \"preflight\"\ngates = [{{ kind = \"checks\" }}]\ncommand = '''\n{}\n'''\n",
        t0.command
            .replace('{', "{{")
            .replace('}', "}}")
            .replace("{{doctor}}", "true")
            .replace("{{doctor_probe}}", "{doctor_probe}")
    );
    let Some(site) = Site::new(2, 8, &plan) else {
        return;
    };
    // node02 is 127.0.0.3.
    let bad = r#"case "$SSH_CONNECTION" in *" 127.0.0.3 "*) bad=1 ;; *) bad= ;; esac"#;
    let tools: [(&str, String); 8] = [
        (
            "cat",
            format!(
                "#!/bin/sh\n{bad}\nif [ \"$1\" = /proc/driver/nvidia/version ]; then\n  if [ -n \"$bad\" ]; then echo 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024'; else echo 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:55:41 UTC 2025'; fi\n  echo 'GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)'\nelse exec /bin/cat \"$@\"; fi\n"
            ),
        ),
        (
            "nvidia-smi",
            format!(
                "#!/bin/sh\n{bad}\nn=8; [ -n \"$bad\" ] && n=7\ni=0; while [ $i -lt $n ]; do echo \"$i, NVIDIA B300 SXM6 AC, 00000000:1$i:00.0, Enabled\"; i=$((i+1)); done\n"
            ),
        ),
        ("uname", "#!/bin/sh\necho 6.8.0-60-generic\n".to_string()),
        (
            "nv-fabricmanager",
            "#!/bin/sh\necho 'Fabric Manager version is : 580.95.05'\n".to_string(),
        ),
        (
            "systemctl",
            "#!/bin/sh\n[ \"$1\" = is-active ] && echo active\n".to_string(),
        ),
        (
            "dpkg-query",
            "#!/bin/sh\nprintf 'ii  rdma-core 50.0-2ubuntu0.2\\nii  infiniband-diags 50.0-2ubuntu0.2\\n'\n"
                .to_string(),
        ),
        ("ibstat", "#!/bin/sh\nexit 0\n".to_string()),
        (
            "dmesg",
            format!(
                "#!/bin/sh\n{bad}\necho '[    0.000000] Linux version 6.8.0-60-generic'\n[ -n \"$bad\" ] && echo '[ 8812.402391] NVRM: Xid (PCI:0000:16:00): 79, pid=0, GPU has fallen off the bus.'\nexit 0\n"
            ),
        ),
    ];
    for (name, script) in &tools {
        site.cluster.install_tool(name, script);
    }
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    let t0 = phase(&doc, "T0");
    assert_eq!(t0["verdict"], "FAIL", "{stderr}\n{t0}");
    assert_eq!(code, Some(1));
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    let check = |node: &str, name: &str| -> (String, String) {
        common::site::check_in(&events, node, name)
            .unwrap_or_else(|| panic!("no {name} check for {node}:\n{events}"))
    };
    for name in [
        "driver-branch",
        "gpu-count",
        "persistenced",
        "rdma-userspace",
        "xid",
    ] {
        assert_eq!(
            check("node01", name).0,
            "ok",
            "node01 {name}: {:?}",
            check("node01", name)
        );
    }
    assert!(check("node01", "driver-branch").1.contains("580.95.05"));
    let (status, detail) = check("node02", "driver-branch");
    assert_eq!(status, "failed", "{detail}");
    assert!(detail.contains("550"), "{detail}");
    assert_eq!(check("node02", "gpu-count").0, "failed");
    assert_eq!(check("node02", "xid").0, "failed");
    let reason = t0["reason"].as_str().expect("reason");
    assert!(reason.contains("node02"), "{reason}");
    assert!(!reason.contains("node01 driver-branch"), "{reason}");
    // The shipped plan sets doctor = "true": the doctor's probe rode along in T0, and T0's own
    // tools are there on both nodes.
    for node in ["node01", "node02"] {
        let (status, detail) = check(node, "can-run-T0");
        assert_eq!(status, "ok", "{node}: {detail}");
        assert!(detail.contains("nvidia-smi"), "{node}: {detail}");
        let (status, detail) = check(node, "doctor");
        assert_eq!(status, "ok", "{node}: {detail}");
        assert!(
            detail.starts_with("1 of 1 phase(s) set up can run here"),
            "{detail}"
        );
    }
}

/// A drill that asks the operator under `burnin run` with stdin closed (a cron job, `< /dev/null`)
/// fails at once, saying why, instead of waiting out its time limit.
#[test]
fn a_drill_nobody_can_answer_fails_at_once_and_says_why() {
    let plan = r#"
[[phase]]
id = "D"
title = "Drill: pull a cable"
scope = "each-node"
parser = "nccl-tests"
timeout = "10m"
command = "all_reduce_perf"
[phase.drill]
watch = ["busbw_all_reduce"]
# 3 s, not 1: on a 2-core machine busy compiling, a 1 s window once caught a single sample.
steady = "3s"
[[phase.drill.steps]]
ask = "Pull the cable"
"#;
    let Some(site) = Site::new(1, 8, plan) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsed -n 2,24p '{}'\nwhile :; do printf '  1073741824   268435456  float  sum  -1  2800.0  202.67  380.00  0  2800.0  202.67  380.00  0\\n'; sleep 0.1; done\n",
            capture.display()
        ),
    );
    let started = Instant::now();
    let child = site
        .command(&["run", "--json", "--no-telemetry"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("burnin run");
    let (code, doc, stderr) = finish(child);
    let d = phase(&doc, "D");
    assert_eq!(d["verdict"], "FAIL", "{stderr}\n{d}");
    assert_eq!(code, Some(1));
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains("step 1/1: Pull the cable: nobody can confirm it here"),
        "{reason}"
    );
    // Not the 10-minute limit: the load was stopped as soon as the ask could not be answered.
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(!reason.contains("limit"), "{reason}");
}

/// The telemetry beside `burnin run`: an Xid on a node while a phase runs fails the phase's
/// `no-xid` gate and the record says which GPU, even though the phase itself exited 0.
#[test]
fn an_xid_during_a_phase_fails_it() {
    let plan = r#"
[[phase]]
id = "T2"
title = "quiet work"
scope = "each-node"
parser = "none"
gates = [{ kind = "no-xid" }]
command = "sleep 8; echo done"
"#;
    let Some(site) = Site::new(1, 2, plan) else {
        return;
    };
    // The node's agent is this binary, simulating 2 GPUs; GPU1 reports Xid 79 after 3 s.
    std::fs::write(
        &site.config,
        format!(
            "plan = \"plan.toml\"\n[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 2\n\
             agent_path = \"{BIN}\"\nagent_args = [\"--sim\", \"--gpus\", \"2\", \"--fault\", \"xid79:1@3\"]\n\
             [[node]]\nhost = \"node01\"\n"
        ),
    )
    .expect("inventory");
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json"]));
    assert_eq!(code, Some(1), "{stderr}");
    let t2 = phase(&doc, "T2");
    assert_eq!(t2["verdict"], "FAIL", "{doc}");
    let reason = t2["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Xid during the phase, first Xid 79 on node01 GPU1"),
        "{reason}"
    );
    let findings: Vec<&str> = t2["findings"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    assert!(
        findings.iter().any(|f| f.contains("node01 GPU1")),
        "{findings:?}"
    );
    // What the node said of itself is in the record: its GPUs and its topology.
    let hello = &doc["nodes"][0]["hello"];
    assert_eq!(hello["gpus"].as_array().map(Vec::len), Some(2), "{doc}");
    assert!(!hello["topology"].is_null(), "{doc}");
    // The run's telemetry is in the record, folded per second (200 ms samples: several a
    // second), with the Xid in its second; the finding is an event of the run.
    let dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let tele = burnin::record::telemetry::read_telemetry(&dir).expect("telemetry");
    let mine: Vec<_> = tele.seconds.iter().filter(|s| s.node == "node01").collect();
    assert!(mine.len() >= 5, "{} seconds", mine.len());
    assert!(
        mine.iter().any(|s| s.n >= 3),
        "several samples folded into a second"
    );
    assert!(
        mine.iter()
            .any(|s| s.gpus.iter().any(|g| g.i == 1 && g.xid.contains(&79))),
        "the Xid's second"
    );
    assert!(tele.torn.is_empty(), "{:?}", tele.torn);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    assert!(
        events.lines().any(|l| l.contains(r#""event":"finding""#)
            && l.contains(r#""rule":"xid","subject":"node01 GPU1""#)),
        "{events}"
    );
    // What the inventory expected is recorded, and a replay is told it as the console was.
    assert!(
        events.contains(r#""event":"expect""#) && events.contains(r#""node":"node01","gpus":2"#),
        "{events}"
    );
    let timeline = burnin::sources::replay::Timeline::load(&dir).expect("timeline");
    assert!(timeline.events.iter().any(|(_, e)| matches!(
        e,
        burnin::model::SourceEvent::Expect { node, gpus: 2, .. } if node == "node01"
    )));
}

/// The console dies mid-phase (killed outright); the phase keeps running on the node; a new
/// `burnin run --resume RUN_DIR` re-attaches, the record ends up with every line once, and the
/// phases not yet run go on.
#[test]
fn a_killed_console_is_taken_over_by_resume() {
    let plan = r#"
[[phase]]
id = "T5"
title = "steady output"
scope = "each-node"
parser = "none"
command = "i=0; while [ $i -lt 80 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done"
[[phase]]
id = "T6"
title = "after"
scope = "each-node"
parser = "none"
command = "echo after"
"#;
    let Some(site) = Site::new(1, 1, plan) else {
        return;
    };
    let run_dir = kill_console_mid_phase(&site, "T5", "line 20");
    let (code, doc, stderr) = finish(site.spawn(&[
        "run",
        "--json",
        "--no-telemetry",
        "--resume",
        run_dir.to_str().expect("utf-8 path"),
    ]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("re-attached after a console restart"),
        "{stderr}"
    );
    assert_eq!(phase(&doc, "T5")["verdict"], "PASS", "{doc}");
    assert_eq!(phase(&doc, "T6")["verdict"], "PASS", "{doc}");
    assert_eq!(doc["run_dir"], run_dir.to_str().expect("utf-8"));
    // Every line once in the events, in order, across both consoles.
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    let lines: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "line" && e["phase"] == "T5")
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .collect();
    let want: Vec<String> = (0..80).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, want);
    assert_eq!(
        events.matches(r#""event":"started","phase":"T5""#).count(),
        1,
        "{events}"
    );
}

/// The console's `--resume`: a run whose first console was killed mid-phase is taken over by a
/// console; it shows the recorded verdicts, re-attaches, and the phase ends in the same record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_takes_over_a_run_whose_console_died() {
    use burnin::model::phase::Verdict;
    use burnin::store::PhaseState;

    let plan_text = r#"
[[phase]]
id = "T1"
title = "quick"
scope = "each-node"
parser = "none"
command = "echo ok"
[[phase]]
id = "T5"
title = "steady output"
scope = "each-node"
parser = "none"
command = "i=0; while [ $i -lt 60 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done"
"#;
    let Some(site) = Site::new(1, 2, plan_text) else {
        return;
    };
    let run_dir = kill_console_mid_phase(&site, "T5", "line 15");

    let recorded_start = burnin::record::read_state(&run_dir)
        .expect("state")
        .started_ms["T5"];
    let mut console = Console::start(&site, 2, Some(&run_dir));
    // The re-attached phase shows running since its recorded start, so `a` can abort it.
    console
        .until("T5 shown running", &|s| {
            s.running_phase().is_some_and(|p| p.spec.id == "T5")
        })
        .await;
    assert_eq!(
        console.store.phase("T5").and_then(|p| p.started_ms),
        Some(recorded_start)
    );
    console
        .until("T5 to end", &|s| {
            matches!(s.phase("T5").map(|p| p.state), Some(PhaseState::Done(_)))
        })
        .await;
    assert_eq!(
        console.store.phase("T1").map(|p| p.state),
        Some(PhaseState::Done(Verdict::Pass)),
        "the recorded verdict is shown"
    );
    let t5 = console.store.phase("T5").expect("T5");
    assert_eq!(t5.state, PhaseState::Done(Verdict::Pass), "{:?}", t5.reason);
    // The taken-over run's record is open from the start, and the console was told.
    assert_eq!(console.recording, Some(run_dir.display().to_string()));
    drop(console);
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    let lines: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "line" && e["phase"] == "T5")
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .collect();
    let want: Vec<String> = (0..60).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, want);
    assert_eq!(
        events.matches(r#""event":"finished","phase":"T1""#).count(),
        1
    );
}

/// A `pairs` phase: a server on every node first, then every node a client of the next one;
/// the client's figures are the link's, the servers' lines are recorded beside them.
#[test]
fn pairs_run_a_server_on_every_node_and_a_client_of_the_next() {
    let plan = r#"
[vars]
ib_devs = "mlx5_0"
[[phase]]
id = "S1"
title = "RDMA write per link"
scope = "pairs"
parser = "perftest"
requires = ["ib_devs"]
gates = [{ kind = "peers", figure = "link_gbit_per_s", pct = 90 }]
server = "for d in {ib_devs}; do ib_write_bw -d $d -F --report_gbits; done"
command = "for d in {ib_devs}; do ib_write_bw -d $d -F --report_gbits {peer}; done"
"#;
    let Some(site) = Site::new(2, 1, plan) else {
        return;
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perftest");
    // The stand-in: with a peer (node01/node02) it is the client and replays a client capture;
    // without, the server, which says who called it.
    site.cluster.install_tool(
        "ib_write_bw",
        &format!(
            "#!/bin/sh\ncase \"$*\" in\n  *node0*) tail -n +2 '{c}'; echo \"peer: $(echo \"$*\" | grep -o 'node0.')\" ;;\n  *) tail -n +2 '{s}' ;;\nesac\n",
            c = fixtures.join("write-bw-sweep-ib-gbits-truncated.txt").display(),
            s = fixtures.join("write-bw-server-roce-duration-header-only.txt").display(),
        ),
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}");
    let s1 = phase(&doc, "S1");
    assert_eq!(s1["verdict"], "PASS", "{doc}");
    for node in ["node01", "node02"] {
        assert_eq!(
            figure(
                &doc,
                "S1",
                "link_gbit_per_s",
                &format!("{node}/mlx5_0 write")
            ),
            Some(0.17)
        );
    }
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    // The ring: node01 called node02, node02 called node01.
    let client = std::fs::read_to_string(run_dir.join("logs/S1/node01.log")).expect("log");
    assert!(client.contains("peer: node02"), "{client}");
    let client = std::fs::read_to_string(run_dir.join("logs/S1/node02.log")).expect("log");
    assert!(client.contains("peer: node01"), "{client}");
    let server = std::fs::read_to_string(run_dir.join("logs/S1/node01-server.log")).expect("log");
    assert!(server.contains("Waiting for client to connect"), "{server}");
}

#[test]
fn an_s3_probe_phase_runs_on_every_node_and_its_figures_are_gated() {
    use common::seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};
    let Some(s3) = Seaweed::start() else {
        return;
    };
    let Some(site) = Site::new(2, 1, "") else {
        return;
    };
    // Keys in a credentials file on the node, named by the plan; never in the plan itself.
    let creds = site.cluster.dir.join("aws-credentials");
    std::fs::write(
        &creds,
        format!(
            "[aistor]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .expect("credentials");
    let plan = format!(
        r#"[settings]
remote_dir = "{remote}"
grace_s = 1
[vars]
aistor_endpoint = "{ep}"
aistor_bucket = "burnin-phase"
aistor_prefix = "p/"
aistor_auth = "--profile aistor"
creds = "{creds}"
[[phase]]
id = "S2"
title = "AIStor GET"
scope = "each-node"
parser = "s3-probe"
requires = ["aistor_endpoint", "aistor_bucket"]
gates = [{{ kind = "max", figure = "s3_errors", value = 0 }}, {{ kind = "min", figure = "s3_gb_per_s", value = 0.000001 }}]
command = "AWS_SHARED_CREDENTIALS_FILE={{creds}} {{burnin}} probe s3 --endpoint {{aistor_endpoint}} --bucket {{aistor_bucket}} --prefix {{aistor_prefix}}{{node}}/ {{aistor_auth}} --create-bucket --prepare 2 --object-size 4MiB --concurrency 1,2 --duration 2s --metrics off --json-lines"
"#,
        remote = site.remote.display(),
        ep = s3.endpoint,
        creds = creds.display(),
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), plan).expect("plan");
    // The nodes run this very binary as their deployed burnin.
    let inventory = std::fs::read_to_string(&site.config).expect("inventory");
    std::fs::write(
        &site.config,
        inventory.replace("gpus = 1\n", &format!("gpus = 1\nagent_path = \"{BIN}\"\n")),
    )
    .expect("inventory");

    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}\n{doc}");
    assert_eq!(phase(&doc, "S2")["verdict"], "PASS", "{doc}");
    for node in ["node01", "node02"] {
        assert!(
            figure(&doc, "S2", "s3_gb_per_s", node).is_some_and(|v| v > 0.0),
            "{doc}"
        );
        assert_eq!(figure(&doc, "S2", "s3_errors", node), Some(0.0), "{doc}");
        assert!(
            figure(&doc, "S2", "s3_ttfb_p99_ms_c2", node).is_some_and(|v| v > 0.0),
            "{doc}"
        );
    }
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    // The record keeps the plan it ran: the site's file may change (here: break) afterwards.
    assert_eq!(
        std::fs::read_to_string(run_dir.join("plan.toml")).expect("plan copy"),
        std::fs::read_to_string(site.cluster.dir.join("plan.toml")).expect("plan")
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), "[[phase]\nbroken").expect("plan");
    let log = std::fs::read_to_string(run_dir.join("logs/S2/node01.log")).expect("log");
    assert!(log.contains("S3 over HTTP (TCP; not RDMA)"), "{log}");
    // The live pane's windows are in the record, and no key is anywhere in it.
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert!(
        events.contains("\"storage\""),
        "no storage windows recorded"
    );
    // The report plots each node's GET TTFB CDF per concurrency level, from the real probe.
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cdf = std::fs::read_to_string(run_dir.join("report-latency-S2.svg")).expect("cdf svg");
    for label in ["node01 c1", "node01 c2", "node02 c1", "node02 c2"] {
        assert!(cdf.contains(label), "{label} in the CDF legend");
    }
    assert!(!cdf.contains("no data recorded"));
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(md.contains("![S2: GET TTFB CDF per node and concurrency](report-latency-S2.svg)"));
    assert!(
        !md.contains("shipped plan"),
        "the report read the record's plan:\n{md}"
    );
    for entry in walk(&run_dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).expect("read")).into_owned();
        assert!(
            !text.contains(SECRET_KEY) && !text.contains(ACCESS_KEY),
            "a key leaked into {}",
            entry.display()
        );
    }
}

/// "NCCL and AIStor at once" with real parts where they exist: the real S3 probe against a
/// real SeaweedFS, and a stand-in all_reduce_perf that replays a real capture, a quarter
/// slower while the probe runs on its node (it looks for the probe's marker): the together
/// run must see it, which it can only if the two truly ran at the same time.
#[test]
fn a_together_phase_runs_its_members_at_once_and_compares_each_with_its_run_alone() {
    use common::seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};
    let Some(s3) = Seaweed::start() else {
        return;
    };
    let Some(site) = Site::new(2, 8, "") else {
        return;
    };
    let creds = site.cluster.dir.join("aws-credentials");
    std::fs::write(
        &creds,
        format!(
            "[aistor]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .expect("credentials");
    let marks = site.cluster.dir.join("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    // The capture, and the same capture with every bandwidth a quarter lower.
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    let text = std::fs::read_to_string(&capture).expect("capture");
    let shared: Vec<String> = text
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            if cols.len() == 13 && cols[0].bytes().all(|b| b.is_ascii_digit()) {
                let mut cols: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
                for i in [6, 7, 10, 11] {
                    let v: f64 = cols[i].parse().expect("bandwidth");
                    cols[i] = format!("{:.2}", v * 0.75);
                }
                cols.join("  ")
            } else {
                l.to_string()
            }
        })
        .collect();
    let shared_path = site.cluster.dir.join("allreduce-shared.txt");
    std::fs::write(&shared_path, shared.join("\n") + "\n").expect("shared capture");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsleep 2\nif [ -e \"$1\" ]; then f='{shared}'; else f='{alone}'; fi\ntail -n +2 \"$f\"\n",
            shared = shared_path.display(),
            alone = capture.display(),
        ),
    );
    let plan = format!(
        r#"[settings]
remote_dir = "{remote}"
grace_s = 1
[vars]
aistor_endpoint = "{ep}"
aistor_bucket = "burnin-together"
creds = "{creds}"
marks = "{marks}"
[[phase]]
id = "N"
title = "NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{{ kind = "zero-wrong" }}, {{ kind = "min", figure = "busbw_all_reduce", value = 300 }}]
command = "all_reduce_perf {{marks}}/s3-{{node}}"
[[phase]]
id = "S2"
title = "AIStor GET"
scope = "each-node"
parser = "s3-probe"
requires = ["aistor_endpoint"]
gates = [{{ kind = "max", figure = "s3_errors", value = 0 }}]
command = "touch {{marks}}/s3-{{node}}; AWS_SHARED_CREDENTIALS_FILE={{creds}} {{burnin}} probe s3 --endpoint {{aistor_endpoint}} --bucket {{aistor_bucket}} --prefix p/{{node}}/ --profile aistor --create-bucket --prepare 2 --object-size 4MiB --concurrency 1,2 --duration 2s --metrics off --json-lines; rc=$?; rm -f {{marks}}/s3-{{node}}; exit $rc"
[[phase]]
id = "C1"
title = "NCCL and AIStor at once"
together = ["N", "S2"]
gates = [{{ kind = "together", figure = "busbw_all_reduce", worse_pct = 20 }}, {{ kind = "together", figure = "s3_errors", worse_pct = 0 }}]
compare = ["s3_gb_per_s"]
"#,
        remote = site.remote.display(),
        ep = s3.endpoint,
        creds = creds.display(),
        marks = marks.display(),
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), plan).expect("plan");
    let inventory = std::fs::read_to_string(&site.config).expect("inventory");
    std::fs::write(
        &site.config,
        inventory.replace("gpus = 8\n", &format!("gpus = 8\nagent_path = \"{BIN}\"\n")),
    )
    .expect("inventory");

    // Only the group is asked for: its members run alone first.
    let (code, doc, stderr) =
        finish(site.spawn(&["run", "--json", "--no-telemetry", "--only", "C1"]));
    let ids: Vec<&str> = doc["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, ["N", "S2", "C1"], "{stderr}");
    assert_eq!(phase(&doc, "N")["verdict"], "PASS", "{stderr}\n{doc}");
    assert_eq!(phase(&doc, "S2")["verdict"], "PASS", "{stderr}\n{doc}");
    for node in ["node01", "node02"] {
        assert_eq!(figure(&doc, "N", "busbw_all_reduce", node), Some(338.82));
    }
    let c1 = phase(&doc, "C1");
    assert_eq!(c1["verdict"], "FAIL", "{doc}");
    assert_eq!(code, Some(1));
    let reason = c1["reason"].as_str().expect("reason");
    assert!(
        reason.contains("busbw_all_reduce more than 20 % worse together on 2 subject(s), worst N node01 339 -> 254 (-25.0 %)"),
        "{reason}"
    );
    // The members' own gates that read no figure held beside each other; the min gate on
    // busbw (254 < 300) is not theirs to judge together.
    assert!(
        !reason.contains("N FAIL") && !reason.contains("S2 FAIL"),
        "{reason}"
    );
    assert!(reason.contains("s3_errors together: worst S2"), "{reason}");
    let rows = c1["together"].as_array().expect("together rows");
    let row = |member: &str, figure: &str, subject: &str| {
        rows.iter()
            .find(|r| r["member"] == member && r["figure"] == figure && r["subject"] == subject)
            .unwrap_or_else(|| panic!("no {member} {figure} {subject} in {rows:?}"))
    };
    for node in ["node01", "node02"] {
        let b = row("N", "busbw_all_reduce", node);
        // 338.82 × 0.75, as the stand-in printed it.
        assert_eq!(
            (b["alone"].as_f64(), b["together"].as_f64()),
            (Some(338.82), Some(254.12))
        );
        let g = row("S2", "s3_gb_per_s", node);
        // Both are the real probe's measurements: alone from S2, together from C1.
        assert_eq!(g["alone"].as_f64(), figure(&doc, "S2", "s3_gb_per_s", node));
        assert!(g["together"].as_f64().is_some_and(|v| v > 0.0), "{g}");
        assert_eq!(row("S2", "s3_errors", node)["together"].as_f64(), Some(0.0));
    }
    // They truly overlapped: each member's log in the group says so in its own directory.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    for (member, node) in [("N", "node01"), ("S2", "node02")] {
        let log = run_dir.join(format!("logs/C1/{member}@{node}.log"));
        assert!(log.exists(), "{}", log.display());
    }
    let run = std::fs::read_dir(&site.remote)
        .expect("remote")
        .flatten()
        .next()
        .expect("run dir")
        .path();
    assert!(run.join("C1-N/node01").is_dir() && run.join("C1-S2/node02").is_dir());
    // The report sets alone, together and the change side by side.
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        md.contains(
            "| C1 | N | busbw_all_reduce | node01 | 339 | 254 | -25.0 % | worse | **over 20 %** |"
        ),
        "{md}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    common::files_under(dir)
}
