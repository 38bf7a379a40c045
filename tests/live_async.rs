//! The console's live views on asynchronous agent frames: real `burnin agent --sim` processes
//! behind a real sshd per node, each sending frames on its own clock, and the fleet source's
//! clock ticking between them, as on burn-in day. The demo's frames arrive in step with its
//! clock, so tests on the demo alone never see what frames arriving between two evaluations do.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use burnin::app::layout::PaneKind;
use burnin::app::state::{Event, State};
use burnin::config::inventory::Inventory;
use burnin::model::{Source, SourceEvent};
use burnin::sources::fleet::FleetSource;
use burnin::transport::ssh::SshSettings;
use burnin::ui::{Ctx, panes};
use common::sshd::Cluster;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// Two agent nodes at the default 1 s interval; node01's GPU3 stalls from the start.
fn stalled_inventory() -> Inventory {
    let text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"1s\"\nconnect_timeout = \"5s\"\nagent_path = \"{BIN}\"\n\
         [[node]]\nhost = \"node01\"\nagent_args = [\"--sim\", \"--gpus\", \"8\", \"--load\", \"full\", \"--seed\", \"71\", \"--fault\", \"stall:3\"]\n\
         [[node]]\nhost = \"node02\"\nagent_args = [\"--sim\", \"--gpus\", \"8\", \"--load\", \"full\", \"--seed\", \"72\"]\n"
    );
    Inventory::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The triage pane alone, as text.
fn triage_pane(state: &State) -> String {
    let ctx = Ctx::new(state);
    let mut term = Terminal::new(TestBackend::new(120, 12)).expect("terminal");
    term.draw(|f| {
        let area = f.area();
        panes::draw_pane(PaneKind::Triage, &ctx, true, area, f.buffer_mut());
    })
    .expect("draw");
    term.backend().to_string()
}

/// The pane's line about node01 GPU3's stall, if it lists one.
fn stall_line(pane: &str) -> Option<String> {
    pane.lines()
        .find(|l| l.contains("node01 GPU3") && l.contains("stalled"))
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_seen_over_sshd_stays_a_firing_crit_between_evaluations() {
    let Some(cluster) = Cluster::start(2) else {
        return;
    };
    let inventory = stalled_inventory();
    let mut state = common::empty_state("watch: test.toml (2 nodes)", (120, 36));
    state.set_period(inventory.interval);
    let ssh = SshSettings {
        config_file: Some(cluster.ssh_config.clone()),
        control_dir: None,
        connect_timeout: Duration::from_secs(5),
    };
    let source = Box::new(FleetSource::new(inventory, ssh, PathBuf::from(BIN)));
    let (tx, mut rx) = mpsc::channel(8192);
    let (_cmd, cmd_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));

    // Judge the pane after every event, as the console may draw after any of them: the
    // stall must read as a firing CRIT at every draw from the moment it is first listed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut first_seen = None;
    let (mut frames_after, mut clocks_after) = (0usize, 0usize);
    let mut lines = Vec::new();
    while frames_after < 16 || clocks_after < 6 {
        let ev = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(ev)) => ev,
            _ => panic!(
                "no stall listed with 16 frames and 6 ticks after it within 60 s; pane:\n{}",
                triage_pane(&state)
            ),
        };
        let (frame, clock) = (
            matches!(ev, SourceEvent::Frame(_)),
            matches!(ev, SourceEvent::Clock { .. }),
        );
        state.update(Event::Source(ev));
        let pane = triage_pane(&state);
        let Some(line) = stall_line(&pane) else {
            assert!(
                first_seen.is_none(),
                "the stall went from the list:\n{pane}"
            );
            continue;
        };
        first_seen.get_or_insert(state.store.now_ms);
        frames_after += usize::from(frame);
        clocks_after += usize::from(clock);
        assert!(
            line.contains("CRIT node01 GPU3") && !line.contains("clearing"),
            "a stall that still fires reads as going away:\n{pane}"
        );
        lines.push(line);
    }
    task.abort();
    // Both nodes streamed: frames of node02 arrived between node01's and the clock's.
    assert!(
        state
            .store
            .node("node02")
            .is_some_and(|n| n.gpus.len() == 8)
    );
    let last = lines.last().unwrap();
    assert!(last.contains("util 0 %"), "{last}");
    eprintln!("triage pane over sshd:\n{}", triage_pane(&state));
}
