//! The console's path without a terminal: phases started, aborted, recorded and taken over.

use super::*;

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
                parts: Default::default(),
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
