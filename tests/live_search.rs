//! The fault search from the console, live, over real sshd: four nodes whose agents (`burnin
//! agent --sim`) send frames on their own clocks, and a stand-in `all_reduce_perf` that is slow
//! whenever node03 is among its hosts. The engineer selects T7, presses `f`, answers `y`; the
//! console's driver runs the search on the nodes while the frames keep coming. After every
//! event the search overlay and the triage pane are drawn: no healthy node is ever called bad,
//! and at the end the overlay and triage name node03 with its evidence.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use burnin::app::action::Effect;
use burnin::app::layout::PaneKind;
use burnin::app::state::{Event, State};
use burnin::config::inventory::Inventory;
use burnin::model::phase::PhaseCommand;
use burnin::model::{Source, SourceEvent};
use burnin::sources::fleet::FleetSource;
use burnin::transport::ssh::SshSettings;
use burnin::ui::{Ctx, panes};
use common::site::allreduce_stand_in;
use common::sshd::Cluster;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

const PLAN: &str = common::site::STAND_IN_T7;

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// The whole screen, as text.
fn screen(state: &State) -> String {
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    term.draw(|f| burnin::ui::render(state, f)).expect("draw");
    term.backend().to_string()
}

fn triage(state: &State) -> String {
    let ctx = Ctx::new(state);
    let mut term = Terminal::new(TestBackend::new(140, 10)).expect("terminal");
    term.draw(|f| {
        let area = f.area();
        panes::draw_pane(PaneKind::Triage, &ctx, true, area, f.buffer_mut());
    })
    .expect("draw");
    term.backend().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_search_from_the_console_names_the_bad_node_while_frames_keep_coming() {
    let Some(cluster) = Cluster::start(4) else {
        return;
    };
    cluster.install_tool(
        "all_reduce_perf",
        &allreduce_stand_in(&["node03"], &[], None, "/nonexistent"),
    );
    let dir = cluster.dir.clone();
    std::fs::write(
        dir.join("plan.toml"),
        format!(
            "[settings]\nremote_dir = \"{}\"\ngrace_s = 1\n{PLAN}",
            dir.join("remote").display()
        ),
    )
    .expect("plan");
    let text = format!(
        "plan = \"{}\"\n[defaults]\nmode = \"agent\"\ninterval = \"1s\"\nconnect_timeout = \"5s\"\ngpus = 1\nagent_path = \"{BIN}\"\nagent_args = [\"--sim\", \"--gpus\", \"1\"]\n[[node]]\nhost = \"node[01-04]\"\n",
        dir.join("plan.toml").display()
    );
    let inventory = Inventory::parse(dir.join("burnin.toml").to_str().unwrap(), &text)
        .unwrap_or_else(|e| panic!("{e}"));
    let plan = std::sync::Arc::new(burnin::commands::run::load_plan(&inventory).expect("plan"));
    let ssh = SshSettings {
        config_file: Some(cluster.ssh_config.clone()),
        control_dir: None,
        connect_timeout: Duration::from_secs(5),
    };
    let mut state = common::empty_state("watch: test (4 nodes)", (160, 48));
    state.set_period(inventory.interval);
    state.store.set_plan(&plan);
    let nodes = burnin::commands::run::runner_nodes(&inventory, &ssh);
    let mut driver = burnin::console::driver::PhaseDriver::new(
        burnin::phases::runner::RunContext {
            run_id: String::new(),
            attempt: 1,
            earlier: Default::default(),
            parts: Default::default(),
            confirm: None,
            plan: std::sync::Arc::clone(&plan),
            nodes,
            baseline: None,
            telemetry: None,
        },
        inventory.clone(),
        dir.join("runs"),
        None,
    );
    let source = Box::new(FleetSource::new(inventory, ssh, PathBuf::from(BIN)));
    let (tx, mut rx) = mpsc::channel(8192);
    let (_cmd, cmd_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx.clone(), cmd_rx));

    // Wait for frames, then f on T7 (the only phase), y.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut frames = 0;
    while frames < 8 {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("frames")
            .expect("open");
        frames += usize::from(matches!(ev, SourceEvent::Frame(_)));
        state.update(Event::Source(ev));
    }
    assert_eq!(state.update(key('f')), None);
    let Some(Effect::Command(cmd)) = state.update(key('y')) else {
        panic!("y starts the search: {}", screen(&state));
    };
    assert_eq!(cmd, PhaseCommand::Localize("T7".into()));
    driver.command(cmd, &tx).await;

    let (mut frames_during, mut snapshots) = (0usize, 0usize);
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("the search did not end in time:\n{}", screen(&state)))
            .expect("open");
        let done = matches!(&ev, SourceEvent::Search(s) if !s.running);
        snapshots += usize::from(matches!(ev, SourceEvent::Search(_)));
        frames_during += usize::from(matches!(ev, SourceEvent::Frame(_)));
        state.update(Event::Source(ev));
        let drawn = screen(&state);
        for healthy in ["node01", "node02", "node04"] {
            assert!(
                !drawn.contains(&format!("BAD NODE {healthy}")),
                "{healthy} called bad:\n{drawn}"
            );
        }
        if done {
            break;
        }
    }
    // One more tick: triage judges on the clock.
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(3), rx.recv()).await {
        let clock = matches!(ev, SourceEvent::Clock { .. });
        state.update(Event::Source(ev));
        if clock {
            break;
        }
    }
    task.abort();
    let drawn = screen(&state);
    assert!(
        snapshots >= 3,
        "a snapshot a round and the last: {snapshots}"
    );
    assert!(frames_during > 0, "frames kept coming during the search");
    assert!(drawn.contains("BAD NODE node03: slow beside"), "{drawn}");
    let pane = triage(&state);
    let line = pane
        .lines()
        .find(|l| l.contains("node03") && l.contains("bad-node"))
        .unwrap_or_else(|| panic!("{pane}"));
    assert!(line.contains("CRIT"), "{line}");
    eprintln!("the search over sshd, as the console draws it:\n{drawn}\n{pane}");
    // The run's record keeps the search.
    let runs: Vec<PathBuf> = std::fs::read_dir(dir.join("runs"))
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .collect();
    let kept = std::fs::read_dir(&runs[0])
        .expect("run")
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("localize-"));
    assert!(kept, "{runs:?}");
    // And its events, so a replay shows the search as the console did.
    let events = std::fs::read_to_string(runs[0].join("events.jsonl")).expect("events");
    assert!(
        events
            .lines()
            .any(|l| l.contains("\"search\"") && l.contains("node03: slow beside")),
        "{events}"
    );
    let timeline = burnin::sources::replay::Timeline::load(&runs[0]).expect("replay");
    let last = timeline
        .play()
        .filter_map(|(_, e)| match e {
            SourceEvent::Search(s) => Some(s),
            _ => None,
        })
        .last()
        .expect("the replay plays the search");
    assert!(
        !last.running && last.named[0].starts_with("node03:"),
        "{last:?}"
    );
}
