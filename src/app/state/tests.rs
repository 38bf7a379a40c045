//! The console's update, key by key and frame by frame.

use super::*;
use crate::app::keymap;
use crate::model::phase::PhaseCommand;
use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
use crossterm::event::KeyCode;
use crossterm::event::KeyModifiers;

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn state_at(s: u64) -> State {
    let mut state = State::new(vec![], vec![], "test", (160, 48));
    let mut sim = SimCluster::new(SimConfig::demo(1));
    for sec in 0..=s {
        for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
            state.update(Event::Source(e));
        }
    }
    state
}

/// A node that sends a frame every 5 s is not stale between its frames once the console
/// knows the period (it was, at the default 1 s, in every Prometheus-mode site).
#[test]
fn a_five_second_period_is_not_stale_between_frames() {
    use crate::model::{NodeFrame, NodeHello};
    let hello = NodeHello {
        node: "n1".into(),
        host: "n1".into(),
        agent_version: "test".into(),
        driver: None,
        cuda: None,
        gpus: Vec::new(),
        topology: None,
        system: None,
        unavailable: Vec::new(),
    };
    let stale_at = |state: &mut State| {
        state.update(Event::Source(SourceEvent::Hello(hello.clone())));
        for at_ms in (0..=4).map(|i| 1_000 + i * 5_000) {
            state.update(Event::Source(SourceEvent::Frame(NodeFrame {
                node: "n1".into(),
                at_ms,
                gpus: Vec::new(),
                nics: Vec::new(),
                netdevs: Vec::new(),
            })));
            for t in [at_ms, at_ms + 4_000] {
                state.update(Event::Source(SourceEvent::Clock { at_ms: t }));
                if state.findings.iter().any(|f| f.rule == "stale") {
                    return Some(t);
                }
            }
        }
        None
    };
    let mut five = State::new(vec![], vec![], "test", (80, 24));
    five.set_period(Period::from_millis(5_000).expect("period"));
    assert_eq!(stale_at(&mut five), None);
    let mut default = State::new(vec![], vec![], "test", (80, 24));
    assert_eq!(
        stale_at(&mut default),
        Some(5_000),
        "the failure this guards against"
    );
}

/// The demo's node07 GPU3 stalls in T4 and never recovers: its finding lives from the first
/// raise to the end of the plan, across every phase boundary, with one `since` (it used to
/// flap at each boundary: "stalled 48s", then "18s", then "0s").
#[test]
fn a_stalled_gpu_stays_stalled_across_phase_boundaries() {
    let mut state = State::new(vec![], vec![], "test", (160, 48));
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let mut first: Option<(u64, u64)> = None;
    for sec in 0..=380 {
        for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
            state.update(Event::Source(e));
        }
        let stall = state.findings.iter().find(|f| {
            f.rule == "stalled" && f.node.as_deref() == Some("node07") && f.gpu == Some(3)
        });
        match (first, stall) {
            (None, Some(f)) => first = Some((sec, f.since_ms)),
            (Some((from, since)), Some(f)) => {
                assert_eq!(
                    f.since_ms, since,
                    "since moved at {sec} s (raised at {from} s)"
                );
                assert!(
                    f.last_seen_ms >= SIM_EPOCH_MS + sec * 1000,
                    "clearing at {sec} s (raised at {from} s): {}",
                    f.why
                );
            }
            (Some((from, _)), None) => panic!("gone at {sec} s (raised at {from} s)"),
            (None, None) => {}
        }
    }
    assert!(
        first.is_some_and(|(s, _)| (110..130).contains(&s)),
        "{first:?}"
    );
}

#[test]
fn abort_asks_first_then_commands() {
    let mut state = state_at(30);
    assert_eq!(state.update(key('a')), None);
    assert_eq!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Abort("T2".into()))
    );
    assert_eq!(
        state.update(key('y')),
        Some(Effect::Command(PhaseCommand::Abort("T2".into())))
    );
    assert_eq!(state.ui.overlay, Overlay::None);
}

#[test]
fn a_phase_that_ends_while_its_abort_is_asked_says_so_and_the_question_goes() {
    // T2 runs from 11 s to 51 s in the demo; the operator asks to abort it at 50 s.
    let mut state = State::new(vec![], vec![], "test", (160, 48));
    let mut sim = SimCluster::new(SimConfig::demo(1));
    for sec in 0..=50 {
        for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
            state.update(Event::Source(e));
        }
    }
    state.update(key('a'));
    assert_eq!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Abort("T2".into()))
    );
    for sec in 51..=53 {
        for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
            state.update(Event::Source(e));
        }
    }
    assert_eq!(
        state.ui.overlay,
        Overlay::None,
        "no question over a finished phase"
    );
    let said = state
        .ui
        .status
        .as_ref()
        .map(|(_, t)| t.clone())
        .unwrap_or_default();
    assert!(
        said.contains("T2 FAIL (finished before the abort)"),
        "{said}"
    );
    // `y` now aborts nothing.
    assert_eq!(state.update(key('y')), None);
}

#[test]
fn abort_can_be_cancelled() {
    let mut state = state_at(30);
    state.update(key('a'));
    assert_eq!(state.update(code(KeyCode::Esc)), None);
    assert_eq!(state.ui.overlay, Overlay::None);
}

#[test]
fn quit_asks_while_a_phase_runs() {
    let mut state = state_at(30);
    assert_eq!(state.update(key('q')), None);
    assert!(matches!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Quit(_))
    ));
    assert_eq!(
        state.update(key('a')),
        Some(Effect::AbortAndQuit(PhaseCommand::Abort("T2".into())))
    );
    let mut idle = State::new(vec![], vec![], "test", (80, 24));
    assert_eq!(idle.update(key('q')), Some(Effect::Quit));
    // The demo and a replay run nothing on any node: nothing to leave running.
    let mut demo = state_at(30);
    demo.phases_on_nodes = false;
    assert_eq!(demo.update(key('q')), Some(Effect::Quit));
    assert_eq!(demo.ui.overlay, Overlay::None);
}

#[test]
fn focus_moves_as_the_screen_reads() {
    // The overview at 160×48: GPUs on top, then Plan left of Triage, then the charts.
    let mut state = state_at(30);
    state.ui.size = (160, 48);
    let order = state.visible_panes();
    let at = |p: PaneKind| order.iter().position(|x| *x == p).expect("visible");
    assert_eq!(order[0], PaneKind::Gpus);
    assert!(at(PaneKind::Phases) < at(PaneKind::Triage), "{order:?}");
    assert!(at(PaneKind::Triage) < at(PaneKind::Nccl), "{order:?}");
}

#[test]
fn the_key_help_scrolls_and_stops_at_its_end() {
    let mut state = state_at(30);
    state.update(key('?'));
    assert_eq!(state.ui.overlay, Overlay::Help);
    state.update(code(KeyCode::Down));
    state.update(code(KeyCode::Down));
    assert_eq!(state.ui.help_scroll, 2);
    assert_eq!(state.ui.node, 0, "the grid's selection stays");
    for _ in 0..10 {
        state.update(code(KeyCode::PageDown));
    }
    assert_eq!(state.ui.help_scroll, keymap::HELP_LINES);
    state.update(key('?'));
    state.update(key('?'));
    assert_eq!(state.ui.help_scroll, 0, "opened again from the top");
}

#[test]
fn start_refuses_while_another_runs_and_starts_when_idle() {
    let mut state = state_at(30);
    state.ui.focus = PaneKind::Phases;
    state.update(code(KeyCode::Down));
    assert_eq!(state.update(key('s')), None);
    assert!(
        state
            .ui
            .status
            .as_ref()
            .is_some_and(|(_, m)| m.contains("abort it first"))
    );
    let mut idle = State::new(vec![], vec![], "test", (80, 24));
    assert_eq!(
        idle.update(key('s')),
        Some(Effect::Command(PhaseCommand::Start("T0".into())))
    );
    assert_eq!(
        idle.update(key('r')),
        None,
        "retry of a pending phase is refused"
    );
}

#[test]
fn selection_follows_the_running_phase_until_moved() {
    let state = state_at(90);
    assert_eq!(state.store.phases[state.ui.phase].spec.id, "T4");
}

#[test]
fn enter_on_a_finding_selects_its_gpu() {
    let mut state = state_at(130);
    state.ui.focus = PaneKind::Triage;
    let idx = state
        .findings
        .iter()
        .position(|f| f.rule == "stalled")
        .expect("stall finding");
    state.ui.finding = idx;
    state.update(code(KeyCode::Enter));
    assert_eq!(state.store.nodes[state.ui.node].name, "node07");
    assert_eq!(state.ui.gpu, 3);
    assert_eq!(state.ui.overlay, Overlay::GpuDetails);
}

#[test]
fn filter_narrows_node_navigation() {
    let mut state = state_at(3);
    state.update(key('/'));
    for c in "node1".chars() {
        state.update(key(c));
    }
    state.update(code(KeyCode::Enter));
    assert_eq!(state.filtered_nodes().len(), 3, "node10, node11, node12");
    assert_eq!(state.store.nodes[state.ui.node].name, "node10");
    state.update(code(KeyCode::Esc));
    assert_eq!(state.filtered_nodes().len(), 12);
}

#[test]
fn pause_freezes_what_is_shown_but_keeps_collecting() {
    let mut state = state_at(10);
    state.update(key('p'));
    let shown_before = state.shown().0.now_ms;
    let mut sim = SimCluster::new(SimConfig::demo(1));
    for e in sim.advance_to(SIM_EPOCH_MS + 20_000) {
        state.update(Event::Source(e));
    }
    assert_eq!(state.shown().0.now_ms, shown_before);
    assert!(state.store.now_ms > shown_before);
    state.update(key('p'));
    assert_eq!(state.shown().0.now_ms, state.store.now_ms);
}

#[test]
fn layouts_and_themes_switch_and_focus_stays_visible() {
    let mut state = State::new(
        crate::app::theme::EMBEDDED
            .iter()
            .map(|(n, t)| Theme::parse(n, t).expect("theme"))
            .collect(),
        crate::app::layout::EMBEDDED
            .iter()
            .map(|(n, t)| Layout::parse(n, t).expect("layout"))
            .collect(),
        "test",
        (80, 24),
    );
    state.update(key('5'));
    assert_eq!(state.layout().name, "triage");
    assert!(state.visible_panes().contains(&state.ui.focus));
    state.update(key('9'));
    assert!(
        state
            .ui
            .status
            .as_ref()
            .is_some_and(|(_, m)| m.contains("no layout 9"))
    );
    state.update(key('t'));
    assert_eq!(state.theme().name, "light");
    for _ in 0..10 {
        state.update(code(KeyCode::Tab));
        assert!(state.visible_panes().contains(&state.ui.focus));
    }
}

#[test]
fn a_status_message_goes_when_its_time_is_up() {
    let mut state = state_at(60);
    state.say(Tone::Info, "T1 PASS: 48/48 checks ok");
    state.update(Event::Source(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 70_000,
    }));
    assert!(state.ui.status.is_some(), "still news 10 s later");
    state.update(Event::Source(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 81_000,
    }));
    assert_eq!(state.ui.status, None, "stale 21 s later");
    state.say(Tone::Warn, "T2 FAIL: …");
    state.update(Event::Source(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 121_000,
    }));
    assert!(state.ui.status.is_some(), "a warning stays a minute");
}

#[test]
fn starting_before_a_need_passed_or_with_no_node_answering_asks_first() {
    // T2 needs T1; nothing has run.
    let mut state = State::new(vec![], vec![], "test", (160, 48));
    state.ui.focus = PaneKind::Phases;
    state.ui.phase = state
        .store
        .phases
        .iter()
        .position(|p| p.spec.id == "T2")
        .expect("T2 in the plan");
    assert_eq!(state.update(key('s')), None, "asked, not started");
    match &state.ui.overlay {
        Overlay::Confirm(Confirm::Start { phase, why, .. }) => {
            assert_eq!(phase, "T2");
            assert!(why.contains("needs T1 to pass first"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        state.update(key('y')),
        Some(Effect::Command(PhaseCommand::Start("T2".into())))
    );
    // T0 needs nothing, but the only node does not answer.
    let mut lonely = State::new(vec![], vec![], "test", (160, 48));
    lonely.update(Event::Source(SourceEvent::Link {
        node: "gpu01".into(),
        at_ms: 1_000,
        link: crate::model::NodeLink::Unreachable("refused".into()),
    }));
    assert_eq!(lonely.update(key('s')), None);
    assert!(matches!(
        &lonely.ui.overlay,
        Overlay::Confirm(Confirm::Start { why, .. }) if why.contains("no node is answering")
    ));
    assert_eq!(lonely.update(key('n')), None, "n leaves it");
    assert_eq!(lonely.ui.overlay, Overlay::None);
}

/// `burnin watch` on the inventory `burnin init` wrote: once every node has failed, the status
/// bar says they are the starter's example hosts, once; a site whose nodes answer never hears it.
#[test]
fn example_hosts_are_named_once_every_node_failed() {
    let link = |node: &str, link| {
        Event::Source(SourceEvent::Link {
            node: node.into(),
            at_ms: 1_000,
            link,
        })
    };
    let expect = |node: &str| {
        Event::Source(SourceEvent::Expect {
            node: node.into(),
            gpus: 8,
            nic_rate_gbps: None,
        })
    };
    let mut state = State::new(vec![], vec![], "test", (160, 48));
    state.example_hosts = Some("burnin.toml still lists burnin init's example hosts".into());
    state.update(expect("gpu01"));
    state.update(expect("gpu02"));
    state.update(link(
        "gpu01",
        crate::model::NodeLink::Unreachable("no such host".into()),
    ));
    state.update(link("gpu02", crate::model::NodeLink::Connecting));
    assert!(
        !state
            .ui
            .status
            .as_ref()
            .is_some_and(|(_, t)| t.contains("example hosts")),
        "gpu02 may still answer: {:?}",
        state.ui.status
    );
    state.update(link(
        "gpu02",
        crate::model::NodeLink::Unreachable("no such host".into()),
    ));
    let said = state.ui.status.clone().map(|(_, t)| t).unwrap_or_default();
    assert!(said.contains("example hosts"), "{said}");
    assert!(state.example_hosts.is_none(), "said once");

    let mut answering = State::new(vec![], vec![], "test", (160, 48));
    answering.example_hosts = Some("example hosts".into());
    answering.update(link("gpu01", crate::model::NodeLink::Streaming));
    answering.update(link(
        "gpu02",
        crate::model::NodeLink::Unreachable("refused".into()),
    ));
    assert!(
        !answering
            .ui
            .status
            .as_ref()
            .is_some_and(|(_, t)| t.contains("example hosts"))
    );
}
