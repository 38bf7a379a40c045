//! Snapshots of the whole screen and of every pane, from the seeded simulation at fixed
//! simulated seconds: 30 s (T2 running, node03 GPU5 overheating), 125 s (node07 GPU3 stalled
//! during T4), 175 s (node11 GPU0 lost to Xid 79), 340 s (T8: AIStor p99 spike, loader wait).

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use burnin::app::layout::PaneKind;
use burnin::app::state::{Confirm, Event, Overlay};
use common::{demo_state, pane_alone, press as key, screen};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;

#[test]
fn overview_80x24_while_gpu_stalls() {
    let state = demo_state(125, (80, 24));
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn overview_160x48_while_gpu_stalls() {
    let state = demo_state(125, (160, 48));
    let term = screen(&state);
    let text = term.backend().to_string();
    assert!(
        text.contains("node07 GPU3") && text.contains("stalled"),
        "stall is on screen"
    );
    assert_snapshot!(term.backend());
}

#[test]
fn overview_160x48_thermal_in_gemm() {
    assert_snapshot!(screen(&demo_state(30, (160, 48))).backend());
}

#[test]
fn overview_160x48_gpu_lost() {
    assert_snapshot!(screen(&demo_state(175, (160, 48))).backend());
}

#[test]
fn overview_160x48_storage_trouble_in_t8() {
    assert_snapshot!(screen(&demo_state(340, (160, 48))).backend());
}

#[test]
fn every_layout_at_160x48() {
    for n in 1..=6u8 {
        let mut state = demo_state(125, (160, 48));
        key(&mut state, KeyCode::Char(char::from(b'0' + n)));
        let name = state.layout().name.clone();
        assert_snapshot!(format!("layout_{name}_160x48"), screen(&state).backend());
    }
}

#[test]
fn every_pane_alone() {
    for (at, pane) in [
        (125, PaneKind::Gpus),
        (125, PaneKind::Nvlink),
        (300, PaneKind::Fabric),
        (125, PaneKind::Nccl),
        (340, PaneKind::Storage),
        (340, PaneKind::Loader),
        (125, PaneKind::Phases),
        (125, PaneKind::Triage),
        (125, PaneKind::Log),
    ] {
        let state = demo_state(at, (100, 20));
        let term = pane_alone(&state, pane, (100, 20));
        assert_snapshot!(
            format!("pane_{}_100x20_at_{at}s", pane.name()),
            term.backend()
        );
    }
}

#[test]
fn a_finding_that_stopped_firing_is_shown_clearing_then_goes() {
    // The AIStor p99 spike ends at 346 s: for 5 s the finding stays, dimmed, as clearing.
    let state = demo_state(348, (100, 20));
    let term = pane_alone(&state, PaneKind::Triage, (100, 20));
    let text = term.backend().to_string();
    assert!(text.contains("clearing: GET TTFB p99"), "{text}");
    assert_snapshot!("pane_triage_100x20_at_348s_clearing", term.backend());
    let later = demo_state(353, (100, 20));
    let text = pane_alone(&later, PaneKind::Triage, (100, 20))
        .backend()
        .to_string();
    assert!(!text.contains("aistor-latency"), "{text}");
}

#[test]
fn help_overlay_lists_every_binding() {
    let mut state = demo_state(125, (160, 48));
    key(&mut state, KeyCode::Char('?'));
    let term = screen(&state);
    let text = term.backend().to_string();
    for b in burnin::app::keymap::BINDINGS {
        assert!(text.contains(b.help), "help overlay lacks {:?}", b.help);
    }
    assert_snapshot!(term.backend());
}

#[test]
fn abort_confirmation() {
    let mut state = demo_state(125, (80, 24));
    key(&mut state, KeyCode::Char('a'));
    assert_eq!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Abort("T4".into()))
    );
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn quit_confirmation_while_running() {
    let mut state = demo_state(125, (80, 24));
    key(&mut state, KeyCode::Char('q'));
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn details_of_the_stalled_gpu_from_triage() {
    let mut state = demo_state(125, (160, 48));
    state.ui.focus = PaneKind::Triage;
    let idx = state
        .findings
        .iter()
        .position(|f| f.rule == "stalled")
        .expect("stall finding");
    state.ui.finding = idx;
    key(&mut state, KeyCode::Enter);
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn details_of_a_gpu_with_nvlink_errors_name_the_link() {
    let mut state = demo_state(125, (120, 40));
    state.ui.focus = PaneKind::Triage;
    let idx = state
        .findings
        .iter()
        .position(|f| f.rule == "nvlink-errors" && f.gpu == Some(1))
        .expect("nvlink finding");
    state.ui.finding = idx;
    key(&mut state, KeyCode::Enter);
    let text = screen(&state).backend().to_string();
    assert!(
        text.contains("NVLink errors since driver load · link 8: CRC"),
        "{text}"
    );
    assert_snapshot!(text);
}

#[test]
fn phase_details_and_full_log() {
    let mut state = demo_state(125, (100, 30));
    state.ui.focus = PaneKind::Phases;
    key(&mut state, KeyCode::Up);
    key(&mut state, KeyCode::Enter);
    assert_snapshot!("phase_details_t3", screen(&state).backend());
    key(&mut state, KeyCode::Esc);
    key(&mut state, KeyCode::Char('L'));
    assert_snapshot!("full_log_t3", screen(&state).backend());
}

#[test]
fn filtered_grid() {
    let mut state = demo_state(125, (100, 30));
    key(&mut state, KeyCode::Char('/'));
    for c in "node0".chars() {
        key(&mut state, KeyCode::Char(c));
    }
    key(&mut state, KeyCode::Char('7'));
    key(&mut state, KeyCode::Enter);
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn paused_display_says_so() {
    let mut state = demo_state(30, (100, 30));
    key(&mut state, KeyCode::Char('p'));
    let text = screen(&state).backend().to_string();
    assert!(text.contains("PAUSED"));
}

/// A console whose run record is open says so in its status bar, and one whose is not does not.
#[test]
fn recording_console_says_so() {
    let mut state = demo_state(30, (100, 30));
    let before = screen(&state).backend().to_string();
    assert!(!before.contains("REC"), "{before}");
    state.update(Event::Source(burnin::model::SourceEvent::Recording {
        dir: "burnin-runs/20261204-140000".into(),
    }));
    let term = screen(&state);
    assert!(term.backend().to_string().contains("● REC"));
    assert_snapshot!(term.backend());
}

#[test]
fn tiny_terminal_does_not_panic() {
    for (w, h) in [(1, 1), (10, 3), (20, 5), (40, 10), (79, 23)] {
        let state = demo_state(125, (w, h));
        let _ = screen(&state);
    }
}

#[test]
fn node_states_in_the_grid() {
    use burnin::model::NodeLink;
    use burnin::model::SourceEvent;
    use burnin::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
    // Four real-looking nodes: one streaming, one refused by ssh auth, one gone quiet, one
    // still connecting.
    let mut config = SimConfig::demo(1);
    config.nodes = 3;
    config.faults.clear();
    let mut sim = SimCluster::new(config);
    let mut state =
        burnin::app::state::State::new(vec![], vec![], "watch: burnin.toml (4 nodes)", (100, 14));
    for e in sim.advance_to(SIM_EPOCH_MS + 5_000) {
        // node03 stops sending after its second frame.
        if matches!(&e, SourceEvent::Frame(f) if f.node == "node03" && f.at_ms > SIM_EPOCH_MS + 1_000)
        {
            continue;
        }
        state.update(Event::Source(e));
    }
    for (node, link) in [
        ("node02", NodeLink::Unreachable("auth failed".into())),
        ("node04", NodeLink::Connecting),
    ] {
        state.update(Event::Source(SourceEvent::Link {
            node: node.into(),
            at_ms: SIM_EPOCH_MS + 5_000,
            link,
        }));
    }
    state.update(Event::Source(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 5_000,
    }));
    let text = screen(&state).backend().to_string();
    assert!(text.contains("unreachable: auth failed"));
    assert_snapshot!(screen(&state).backend());
}

#[test]
fn storage_pane_follows_the_probe_of_a_plan_phase() {
    use burnin::model::SourceEvent;
    use burnin::model::phase::{PhaseEvent, PhaseMetric};
    use burnin::model::probe::ProbeWindow;
    let mut state =
        burnin::app::state::State::new(vec![], vec![], "watch: burnin.toml (2 nodes)", (100, 10));
    let t0 = 1_780_000_000_000u64;
    state.update(Event::Source(SourceEvent::Phase(PhaseEvent::Started {
        phase: "S2".into(),
        at_ms: t0,
    })));
    let window = |s: u64, node: &str, p50: f64, requests: u64, errors: u64| {
        Event::Source(SourceEvent::Phase(PhaseEvent::Metric {
            phase: "S2".into(),
            at_ms: t0 + s * 1000,
            metric: PhaseMetric::Storage {
                node: node.into(),
                window: ProbeWindow {
                    at_ms: t0 + s * 1000,
                    endpoint: "http://aistor.lan:9000".into(),
                    ttfb_p50_ms: p50,
                    ttfb_p99_ms: if p50.is_nan() { f64::NAN } else { p50 * 4.0 },
                    total_p99_ms: if p50.is_nan() { f64::NAN } else { p50 * 20.0 },
                    throughput_bytes_per_sec: requests as f64 * 256.0 * 1048576.0,
                    requests,
                    errors,
                    concurrency: Some(16),
                },
            },
        }))
    };
    for s in 1..=5 {
        state.update(window(s, "node01", 12.0 + s as f64, 20, 0));
        // A second node's probe runs at the same time; the pane stays on the first.
        state.update(window(s, "node02", 777.0, 1, 3));
    }
    // The store stopped answering: no GET completed in the last window.
    state.update(window(6, "node01", f64::NAN, 0, 16));
    let term = pane_alone(&state, PaneKind::Storage, (100, 11));
    let text = term.backend().to_string();
    assert!(text.contains("from node01 · 16 GETs in flight"), "{text}");
    assert!(text.contains("TTFB p50 —"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let followed = lines[..7].join("\n");
    assert!(
        !followed.contains("777") && !followed.contains("3108"),
        "node02's figures must not mix into node01's: {text}"
    );
    // Below: every node's probe, worst first. node01's last window completed no GET (the
    // store stopped answering it), so it leads; node02 fails GETs at 3108 ms p99.
    let table = lines[7..].join("\n");
    assert!(
        table.find("node01").expect("node01 row") < table.find("node02").expect("node02 row"),
        "{text}"
    );
    assert!(
        table.contains("3108 ms") && table.contains("3 · 15 of 20"),
        "{text}"
    );
    assert_snapshot!(term.backend());
}

#[test]
fn t0_checklist_shows_what_failed_warned_or_was_unknown_with_the_line_read() {
    use burnin::model::SourceEvent;
    use burnin::model::phase::{PhaseEvent, PhaseMetric};
    use burnin::parsers::preflight::PreflightParser;
    let mut state = common::empty_state("test", (110, 36));
    let t = 1_800_000_000_000u64;
    let phase = |ev| state_event(SourceEvent::Phase(ev));
    let mut events = vec![
        state_event(SourceEvent::Clock { at_ms: t }),
        phase(PhaseEvent::Started {
            phase: "T0".into(),
            at_ms: t,
        }),
    ];
    // The real H200 VM's answers and this container's, through the T0 parser.
    for (node, file, gpus) in [
        ("h200", "h200-vm-ubuntu24.txt", 1),
        ("devbox", "no-driver-container-debian12.txt", 8),
    ] {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/preflight/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture");
        let mut p = PreflightParser::new();
        for l in text.lines() {
            p.push(l);
        }
        for metric in p.finish(node, gpus) {
            assert!(matches!(
                metric,
                PhaseMetric::Check { .. } | PhaseMetric::Parts { .. }
            ));
            events.push(phase(PhaseEvent::Metric {
                phase: "T0".into(),
                at_ms: t,
                metric,
            }));
        }
    }
    for e in events {
        state.update(e);
    }
    state.ui.focus = PaneKind::Phases;
    state.ui.phase = 0;
    key(&mut state, KeyCode::Enter);
    let text = screen(&state).backend().to_string();
    assert!(text.contains("checks  "), "{text}");
    assert!(
        text.contains("FAIL devbox driver-branch: no NVIDIA driver loaded"),
        "{text}"
    );
    assert!(text.contains("FAIL h200 rdma-userspace"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn a_together_phase_shows_each_figure_alone_and_together_worst_first() {
    use burnin::model::SourceEvent;
    use burnin::model::phase::{PhaseEvent, PhaseMetric, Verdict};
    use burnin::plan::gates::FigureChange;
    let mut state = common::empty_state("test", (110, 30));
    let t = 1_800_000_000_000u64;
    let phase = |ev| state_event(SourceEvent::Phase(ev));
    let change = |member: &str, figure: &str, subject: &str, alone: f64, together: f64| {
        phase(PhaseEvent::Metric {
            phase: "C1".into(),
            at_ms: t + 600_000,
            metric: PhaseMetric::Together {
                change: FigureChange {
                    member: member.into(),
                    figure: figure.into(),
                    subject: subject.into(),
                    alone,
                    together,
                },
            },
        })
    };
    let mut events = vec![
        state_event(SourceEvent::Clock { at_ms: t }),
        phase(PhaseEvent::Started {
            phase: "C1".into(),
            at_ms: t,
        }),
        phase(PhaseEvent::Line {
            phase: "C1".into(),
            at_ms: t + 1000,
            node: Some("T7@gpu01".into()),
            text: "#  Rank  0 Group  0 Pid 6899 on gpu01 device 0".into(),
        }),
    ];
    events.push(change("T7", "busbw_all_reduce", "job", 391.0, 362.5));
    for (node, alone, together) in [("gpu01", 11.8, 16.1), ("gpu02", 12.4, 21.9)] {
        events.push(change("S2", "s3_ttfb_p99_ms_c32", node, alone, together));
    }
    events.push(change("S2", "s3_errors", "gpu01", 0.0, 0.0));
    events.push(change("S2", "s3_gb_per_s", "gpu01", 9.8, 8.1));
    events.push(phase(PhaseEvent::Finished {
        phase: "C1".into(),
        at_ms: t + 600_000,
        verdict: Verdict::Fail,
        reason: "s3_ttfb_p99_ms_c32 more than 50 % worse together on 1 subject(s), worst S2 gpu02 12.4 -> 21.9 (+76.6 %)".into(),
    }));
    for e in events {
        state.update(e);
    }
    state.ui.focus = PaneKind::Phases;
    state.ui.phase = state
        .store
        .phases
        .iter()
        .position(|p| p.spec.id == "C1")
        .expect("C1 in the shipped plan");
    key(&mut state, KeyCode::Enter);
    let text = screen(&state).backend().to_string();
    assert!(text.contains("runs    T7 + S2 at once"), "{text}");
    assert!(text.contains("scope   together"), "{text}");
    // Worst first: gpu02's TTFB (+76.6 %, over the 50 % gate) heads the table.
    let first = text.find("gpu02").expect("gpu02 row");
    let second = text.find("gpu01").expect("gpu01 row");
    assert!(first < second, "{text}");
    assert!(text.contains("+76.6 %"), "{text}");
    assert!(
        text.contains("over 50 %") && text.contains("within 10 %"),
        "{text}"
    );
    assert_snapshot!(text);
}

/// A drill asks: the status bar says so over everything else, `c` confirms it (the runner
/// hears `Confirm`), the ask goes away, and the phase details show each step's outcome.
#[test]
fn a_drill_asks_in_the_status_bar_and_c_confirms_it() {
    use burnin::app::action::Effect;
    use burnin::model::SourceEvent;
    use burnin::model::phase::{PhaseCommand, PhaseEvent, PhaseMetric};
    use burnin::plan::drill::SeriesOutcome;
    let mut state = common::empty_state("test", (110, 34));
    let t = 1_800_000_000_000u64;
    let phase = |ev| state_event(SourceEvent::Phase(ev));
    for e in [
        state_event(SourceEvent::Clock { at_ms: t }),
        phase(PhaseEvent::Started {
            phase: "D1".into(),
            at_ms: t,
        }),
        phase(PhaseEvent::Prompt {
            phase: "D1".into(),
            at_ms: t + 60_000,
            text: Some("step 1/2: Pull one leaf-spine cable now".into()),
        }),
    ] {
        state.update(e);
    }
    let text = screen(&state).backend().to_string();
    assert!(
        text.contains("D1 ASKS: step 1/2: Pull one leaf-spine cable now — c when done"),
        "{text}"
    );
    let effect = state.update(Event::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::NONE,
    )));
    assert_eq!(
        effect,
        Some(Effect::Command(PhaseCommand::Confirm("D1".into())))
    );
    // The runner takes the ask back, then reports the step.
    let outcome = |step: usize, ask: &str, low: f64, after: Option<f64>, errors: u64| {
        phase(PhaseEvent::Metric {
            phase: "D1".into(),
            at_ms: t + 120_000,
            metric: PhaseMetric::Drill {
                outcome: SeriesOutcome {
                    step,
                    ask: ask.into(),
                    figure: "busbw_all_reduce".into(),
                    subject: "job".into(),
                    steady: 391.0,
                    low: Some(low),
                    dipped: low < 391.0 * 0.9,
                    recovered_after_s: after,
                    first_after_s: None,
                    error_lines: errors,
                    first_error: (errors > 0).then(|| {
                        "gpu03:5531:5620 [2] NCCL WARN NET/IB : Got completion from peer 10.1.2.4 with status=12 error".into()
                    }),
                },
            },
        })
    };
    for e in [
        phase(PhaseEvent::Prompt {
            phase: "D1".into(),
            at_ms: t + 61_000,
            text: None,
        }),
        outcome(1, "Pull one leaf-spine cable now", 0.0, Some(14.2), 6),
        phase(PhaseEvent::Prompt {
            phase: "D1".into(),
            at_ms: t + 121_000,
            text: Some("step 2/2: Put the cable back".into()),
        }),
    ] {
        state.update(e);
    }
    // Step 2 is asked now; the details show step 1's outcome and the ask.
    state.ui.focus = PaneKind::Phases;
    state.ui.phase = state
        .store
        .phases
        .iter()
        .position(|p| p.spec.id == "D1")
        .expect("D1 in the shipped plan");
    key(&mut state, KeyCode::Enter);
    let text = screen(&state).backend().to_string();
    assert!(
        text.contains("busbw_all_reduce job recovered in 14.2 s (low 0.00 of steady 391)"),
        "{text}"
    );
    assert!(
        text.contains("6 error/retry line(s), first: gpu03"),
        "{text}"
    );
    assert!(
        text.contains("ASKS    step 2/2: Put the cable back"),
        "{text}"
    );
    assert_snapshot!(text);
    state.update(phase(PhaseEvent::Prompt {
        phase: "D1".into(),
        at_ms: t + 122_000,
        text: None,
    }));
    key(&mut state, KeyCode::Esc);
    let effect = state.update(Event::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::NONE,
    )));
    assert_eq!(effect, None, "nothing is asked now");
    let text = screen(&state).backend().to_string();
    assert!(text.contains("no drill is asking anything"), "{text}");
}

fn state_event(ev: burnin::model::SourceEvent) -> Event {
    Event::Source(ev)
}

#[test]
fn a_prometheus_node_says_why_its_blanks_are_blank() {
    use burnin::config::inventory::{DEFAULT_HOST_LABELS, Mode, NodeSpec, PrometheusSpec};
    use burnin::sim::SIM_EPOCH_MS;
    use burnin::sources::prometheus::PromNodes;
    use burnin::sources::promql::{Labels, Series};
    // A site whose dcgm-exporter runs its default counters: power, temperature, SM clock,
    // utilization, Xid; no profiling fields, no clock-event reasons.
    let spec = PrometheusSpec {
        url: "http://prometheus.site:9090".into(),
        selector: String::new(),
        host_labels: DEFAULT_HOST_LABELS.map(String::from).to_vec(),
        bearer_token_file: None,
        basic_auth: None,
        ca_file: None,
        timeout: std::time::Duration::from_secs(5),
    };
    let node = NodeSpec {
        name: "gpu01".into(),
        target: "gpu01".into(),
        user: None,
        port: None,
        identity: None,
        ssh_options: Vec::new(),
        gpus: 2,
        mode: Mode::Prometheus,
        agent_args: Vec::new(),
        agent_path: String::new(),
        nic_rate_gbps: None,
    };
    let mut watched = PromNodes::new(
        vec![node],
        &spec,
        burnin::model::units::Period::from_millis(5_000).expect("period"),
    );
    let series = |labels: &[(&str, &str)], v: f64| Series {
        labels: Labels::from_pairs(labels.iter().copied()),
        points: vec![(SIM_EPOCH_MS, v)],
    };
    let mut values = Vec::new();
    for gpu in ["0", "1"] {
        for (name, v) in [
            ("DCGM_FI_DEV_POWER_USAGE", 1010.0),
            ("DCGM_FI_DEV_GPU_TEMP", 64.0),
            ("DCGM_FI_DEV_SM_CLOCK", 1965.0),
            ("DCGM_FI_DEV_GPU_UTIL", 99.0),
            ("DCGM_FI_DEV_XID_ERRORS", 0.0),
        ] {
            values.push(series(
                &[("__name__", name), ("Hostname", "gpu01"), ("gpu", gpu)],
                v,
            ));
        }
    }
    let ids: Vec<Series> = ["0", "1"]
        .iter()
        .map(|g| {
            series(
                &[
                    ("Hostname", "gpu01"),
                    ("gpu", g),
                    ("UUID", &format!("GPU-0000000{g}")),
                    ("modelName", "NVIDIA B300"),
                ],
                1.0,
            )
        })
        .collect();
    let mut state =
        burnin::app::state::State::new(vec![], vec![], "watch: burnin.toml (1 node)", (110, 36));
    // The console's store keeps one slot per inventory interval (5 s here).
    state.store = burnin::store::ClusterStore::with_period(
        burnin::model::units::Period::from_millis(5_000).expect("period"),
    );
    for k in 0..3u64 {
        let at = SIM_EPOCH_MS + k * 5_000;
        let times = vec![series(&[("Hostname", "gpu01")], at as f64 / 1000.0)];
        let events = watched.step(&values, &times, (k == 0).then_some(&ids[..]), at + 1_000);
        for e in events {
            state.update(Event::Source(e));
        }
        state.update(Event::Source(burnin::model::SourceEvent::Clock {
            at_ms: at + 1_000,
        }));
    }
    state.ui.overlay = Overlay::GpuDetails;
    let text = screen(&state).backend().to_string();
    assert!(
        text.contains("n/a tensor active: opt-in profiling field"),
        "{text}"
    );
    assert!(text.contains("n/a clock-event reasons"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn long_host_names_show_the_part_that_differs() {
    // A site's names share their start: cut to a column, every node read `dgx-b3…`.
    let mut config = burnin::sim::SimConfig::demo(1);
    config.node_prefix = "dgx-b300-rack12-n".into();
    for (w, h) in [(160, 48), (80, 24)] {
        let state = common::demo_state_with(config.clone(), 125, (w, h));
        let term = screen(&state);
        let text = term.backend().to_string();
        assert!(!text.contains("dgx-b3…"), "{text}");
        assert!(text.contains("n07 GPU3"), "the stalled GPU's node: {text}");
        if w >= 160 {
            assert!(
                text.contains("dgx-b300-rack12-…"),
                "what the names share is said once: {text}"
            );
        }
        assert_snapshot!(format!("long_host_names_{w}x{h}"), term.backend());
    }
}

#[test]
fn the_triage_filter_narrows_the_findings_and_says_how_many() {
    let mut state = demo_state(125, (160, 48));
    key(&mut state, KeyCode::Char('/'));
    for c in "node02".chars() {
        key(&mut state, KeyCode::Char(c));
    }
    key(&mut state, KeyCode::Enter);
    let shown = state.filtered_findings();
    assert!(!shown.is_empty());
    let (_, findings) = state.shown();
    assert!(
        shown
            .iter()
            .all(|&i| findings[i].node.as_deref() == Some("node02")),
        "only node02's findings"
    );
    let text = screen(&state).backend().to_string();
    assert!(
        text.contains(&format!(
            "filter \"node02\" ({} of {})",
            shown.len(),
            findings.len()
        )),
        "{text}"
    );
}

#[test]
fn the_key_help_scrolls_at_80x24() {
    let mut state = demo_state(125, (80, 24));
    key(&mut state, KeyCode::Char('?'));
    let top = screen(&state).backend().to_string();
    assert!(top.contains("Keys 1–21 of"), "{top}");
    for _ in 0..3 {
        key(&mut state, KeyCode::PageDown);
    }
    let end = screen(&state).backend().to_string();
    assert!(
        end.contains("grid flags"),
        "the last line can be reached: {end}"
    );
    assert_snapshot!("help_overlay_80x24_scrolled_to_its_end", end);
}

#[test]
fn the_light_theme_brings_its_own_background() {
    // On a dark terminal, black text on the terminal's own background vanishes.
    let mut state = demo_state(125, (100, 30));
    while state.theme().name != "light" {
        key(&mut state, KeyCode::Char('t'));
    }
    let term = screen(&state);
    let buf = term.backend().buffer();
    let bare = buf
        .content()
        .iter()
        .filter(|c| matches!(c.bg, ratatui::style::Color::Reset))
        .count();
    assert_eq!(bare, 0, "every cell has the light theme's background");
}

/// The demo cluster at 160×48 with one fault, `phase` started by the operator at 2 s and
/// played to second `until_s`.
fn operator_started(
    fault: burnin::sim::FaultKind,
    phase: &str,
    until_s: u64,
) -> burnin::app::state::State {
    use burnin::model::phase::PhaseCommand;
    use burnin::sim::{Fault, SIM_EPOCH_MS, SimCluster, SimConfig};
    let mut config = SimConfig::demo(1);
    config.autorun = false;
    config.faults = vec![Fault::scheduled(fault)];
    let mut sim = SimCluster::new(config);
    let mut state = common::empty_state(common::DEMO_LABEL, (160, 48));
    let mut feed = |events: Vec<burnin::model::SourceEvent>| {
        for e in events {
            state.update(Event::Source(e));
        }
    };
    for s in 0..=2 {
        feed(sim.advance_to(SIM_EPOCH_MS + s * 1000));
    }
    feed(sim.command(PhaseCommand::Start(phase.into())));
    for s in 3..=until_s {
        feed(sim.advance_to(SIM_EPOCH_MS + s * 1000));
    }
    state
}

#[test]
fn the_storage_layout_names_the_node_slow_on_aistor() {
    let mut state = operator_started(burnin::sim::FaultKind::SlowStorage, "S2", 40);
    key(&mut state, KeyCode::Char('4'));
    assert_eq!(state.layout().name, "storage");
    // At 80×24 too: the slow node leads the list, the rest say how many.
    let mut small = state.clone();
    small.update(Event::Resize(80, 24));
    let small_text = screen(&small).backend().to_string();
    assert!(small_text.contains("node12"), "{small_text}");
    assert_snapshot!(
        "storage_layout_80x24_slow_node_in_s2",
        screen(&small).backend()
    );
    let term = screen(&state);
    let text = term.backend().to_string();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("GB/s")).collect();
    let first_node_row = rows
        .iter()
        .find(|l| l.contains("node"))
        .expect("per-node rows");
    assert!(first_node_row.contains("node12"), "worst first: {text}");
    let (_, findings) = state.shown();
    assert!(
        findings
            .iter()
            .any(|f| f.rule == "aistor-latency" && f.node.as_deref() == Some("node12")),
        "{findings:?}"
    );
    assert_snapshot!("storage_layout_160x48_slow_node_in_s2", term.backend());
}

#[test]
fn the_nccl_layout_draws_its_gates_at_80x24() {
    let mut state = demo_state(125, (80, 24));
    key(&mut state, KeyCode::Char('3'));
    assert_eq!(state.layout().name, "nccl");
    let text = screen(&state).backend().to_string();
    assert!(text.contains('┊'), "the gate lines on the bars: {text}");
    assert_snapshot!("layout_nccl_80x24", screen(&state).backend());
}

#[test]
fn the_storage_layout_shows_s4_live_and_names_the_node_in_compat_mode() {
    // Two GPUs of every node done, the third halfway through its runs.
    let mut state = operator_started(burnin::sim::FaultKind::GdsCompat, "S4", 17);
    key(&mut state, KeyCode::Char('4'));
    assert_eq!(state.layout().name, "storage");
    let term = screen(&state);
    let text = term.backend().to_string();
    assert!(text.contains("GPUDirect Storage · S4"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/gpu") && !l.contains("last run"))
        .collect();
    assert!(
        rows.first().is_some_and(|r| r.contains("node06/gpu")),
        "compat mode leads: {text}"
    );
    assert_snapshot!("storage_layout_160x48_s4_compat_node", term.backend());
    let mut small = state.clone();
    small.update(Event::Resize(80, 24));
    assert_snapshot!(
        "storage_layout_80x24_s4_compat_node",
        screen(&small).backend()
    );
}

#[test]
fn the_nccl_pane_names_the_node_that_stopped_and_the_gate_that_failed() {
    // T4 has ended: node07 exited after 32M, the phase FAILed.
    let state = demo_state(170, (120, 24));
    let term = pane_alone(&state, PaneKind::Nccl, (120, 24));
    let text = term.backend().to_string();
    assert!(text.contains("missing: node07 (last 32M)"), "{text}");
    assert!(text.contains("FAIL"), "{text}");
    assert_snapshot!("pane_nccl_120x24_t4_failed_node07_missing", term.backend());
    // T7 FAILs on what no busbw gate judges (ranks missing, nodes exited): its gate line says
    // so, never ✓ over a FAIL.
    let state = demo_state(315, (120, 24));
    let text = pane_alone(&state, PaneKind::Nccl, (120, 24))
        .backend()
        .to_string();
    assert!(text.contains("NCCL T7"), "{text}");
    let gates = text
        .lines()
        .find(|l| l.contains("gates:"))
        .unwrap_or_default();
    assert!(gates.contains("✗ FAIL: node07 exited 1"), "{text}");
}

/// While T7 runs, its flat floor is drawn with what it yields to: the line at 100 GB/s is the
/// plan's floor only where the spec table cannot judge the NIC model per RDMA port.
#[test]
fn t7s_flat_floor_is_drawn_as_yielding_to_the_spec() {
    let text = (240..315)
        .step_by(5)
        .map(|t| {
            pane_alone(&demo_state(t, (120, 24)), PaneKind::Nccl, (120, 24))
                .backend()
                .to_string()
        })
        .find(|text| text.contains("judged when T7 ends"))
        .expect("a moment while T7 runs");
    let gates = text
        .lines()
        .find(|l| l.contains("judged when T7 ends"))
        .unwrap_or_default();
    assert!(gates.contains("┊ floor 100 unless spec"), "{text}");
}

#[test]
fn at_120x36_panes_shrink_before_they_drop() {
    // The size of a laptop's terminal: the NCCL row shrinks in below the plan and findings,
    // and the grid keeps util and temperature beside power (eight GPUs in 120 columns).
    let state = demo_state(125, (120, 36));
    let text = screen(&state).backend().to_string();
    assert!(text.contains("NCCL T4 all_reduce"), "{text}");
    let node01 = text
        .lines()
        .find(|l| l.contains("node01   "))
        .unwrap_or_default();
    assert!(
        node01.contains(" 90  63% 55 "),
        "util, power and temperature: {node01}"
    );
    assert!(
        text.contains("Plan 3/19") && text.contains("Triage 2 crit"),
        "{text}"
    );
}

#[test]
fn a_long_status_message_never_hides_the_help_key() {
    let mut state = demo_state(60, (80, 24));
    state.say(
        burnin::app::state::Tone::Warn,
        "T2 FAIL: 1 below 90 % of baseline on tflops_bf16, first node03/gpu5 1237 = 71 % of 1750; and more words than fit",
    );
    let text = screen(&state).backend().to_string();
    let bar = text.lines().last().unwrap_or_default();
    assert!(bar.contains("T2 FAIL") && bar.contains("? help"), "{bar}");
}

#[test]
fn the_fabric_pane_puts_the_slow_port_first() {
    // node05's mlx5_1 trained at 200G beside 400G peers; node09's mlx5_0 counts symbol errors.
    let state = demo_state(125, (120, 30));
    let term = pane_alone(&state, PaneKind::Fabric, (120, 30));
    let text = term.backend().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains("node05"), "the worst node first:\n{text}");
    assert!(
        lines[2].contains("mlx5_1") && lines[2].contains("200G"),
        "its slow port first:\n{text}"
    );
    let node09 = lines
        .iter()
        .position(|l| l.contains("node09"))
        .unwrap_or(usize::MAX);
    let node01 = lines
        .iter()
        .position(|l| l.contains("node01"))
        .unwrap_or(usize::MAX);
    assert!(
        node09 < node01,
        "a port with errors before clean ones:\n{text}"
    );
    assert_snapshot!("pane_fabric_120x30_slow_port_first", term.backend());
}

#[test]
fn starting_a_phase_before_its_need_passed_asks_first() {
    // Before anything ran: T2 needs T1.
    let mut state = demo_state(0, (80, 24));
    state.ui.focus = PaneKind::Phases;
    state.ui.phase = 2;
    key(&mut state, KeyCode::Char('s'));
    let term = screen(&state);
    let text = term.backend().to_string();
    assert!(
        text.contains("Start T2?") && text.contains("needs T1 to pass first"),
        "{text}"
    );
    assert_snapshot!(term.backend());
}
