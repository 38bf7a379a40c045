//! What burnin's agent printed on a real H200 (tests/fixtures/h200-burnin/README.md) decodes,
//! reads as the GPU was (idle, then at its 700 W cap under a GEMM loop), and gives no false
//! findings; burnin's own nvidia-smi query output parses by position.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use burnin::model::SourceEvent;
use burnin::model::clock_events;
use burnin::sources::smi::{MODERN_FIELDS, SmiDecoder};
use burnin::store::ClusterStore;

/// The fields the H200 captures were asked for: the modern list before `driver_version` was
/// added to it (the capture's rows have these 16 cells).
const CAPTURED_FIELDS: &[&str] = MODERN_FIELDS.split_at(16).0;
use burnin::triage::{Severity, Triage};
use burnin::wire::{Decoded, Decoder, WireMessage};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/h200-burnin/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

fn decode(name: &str) -> Vec<WireMessage> {
    let mut d = Decoder::new();
    let msgs: Vec<WireMessage> = fixture(name)
        .lines()
        .map(|l| match d.decode(l) {
            Ok(Decoded::Message(m)) => m,
            other => panic!("{name}: {other:?}"),
        })
        .collect();
    assert_eq!(d.garbled(), 0);
    msgs
}

fn frames(msgs: &[WireMessage]) -> Vec<&burnin::model::GpuSample> {
    msgs.iter()
        .filter_map(|m| match m {
            WireMessage::Frame(f) => f.gpus.first(),
            _ => None,
        })
        .collect()
}

#[test]
fn hello_names_the_gpu_and_its_limits() {
    let msgs = decode("agent-idle.ndjson");
    let WireMessage::Hello(h) = &msgs[0] else {
        panic!("first line is the hello")
    };
    assert_eq!(h.driver.as_deref(), Some("580.159.04"));
    assert_eq!(h.gpus.len(), 1);
    assert_eq!(h.gpus[0].name, "NVIDIA H200");
    assert_eq!(h.gpus[0].power_limit_watts, Some(700.0));
    assert_eq!(h.gpus[0].sm_clock_max_mhz, Some(1980));
    assert_eq!(msgs.len(), 31);
}

#[test]
fn idle_reads_idle_and_load_reads_capped() {
    let idle = decode("agent-idle.ndjson");
    for s in frames(&idle) {
        assert_eq!(s.utilization_pct, Some(0.0));
        assert!(s.power_avg_watts.is_some_and(|p| p < 150.0), "{s:?}");
        assert!(
            s.clock_event_reasons
                .is_some_and(|m| m & clock_events::GPU_IDLE != 0)
        );
        // No NVLink peers on this machine: NVLink is absent ("n/a"), never zero.
        assert_eq!(s.nvlink_tx_bytes_per_sec, None);
        assert_eq!(s.nvlink_crc_errors, None);
    }
    let load = decode("agent-load.ndjson");
    let busy: Vec<_> = frames(&load)
        .into_iter()
        .filter(|s| s.utilization_pct.is_some_and(|u| u >= 95.0))
        .collect();
    assert!(
        busy.len() >= 20,
        "most of the 30 s were under load: {}",
        busy.len()
    );
    for s in &busy {
        assert!(s.power_avg_watts.is_some_and(|p| p > 500.0), "{s:?}");
        assert!(s.power_instant_watts.is_some());
    }
    let capped = busy
        .iter()
        .filter(|s| {
            s.clock_event_reasons
                .is_some_and(|m| m & clock_events::SW_POWER_CAP != 0)
        })
        .count();
    assert!(
        capped * 2 > busy.len(),
        "SW power cap is the normal state at full load"
    );
    assert!(
        busy.iter()
            .any(|s| s.tensor_active_pct.is_some_and(|t| t > 80.0)),
        "GPM tensor activity"
    );
}

#[test]
fn a_loaded_gpu_at_its_cap_is_not_a_finding() {
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    let mut findings = Vec::new();
    for m in decode("agent-load.ndjson") {
        let ev = match m {
            WireMessage::Hello(mut h) => {
                h.node = "h200".into();
                SourceEvent::Hello(h)
            }
            WireMessage::Frame(mut f) => {
                f.node = "h200".into();
                let at_ms = f.at_ms;
                store.ingest(SourceEvent::Frame(f));
                SourceEvent::Clock { at_ms }
            }
            WireMessage::Error(e) => panic!("{e}"),
        };
        store.ingest(ev);
        findings = triage.evaluate(&store);
    }
    // SW power cap at full load is how the GPU is meant to run: one info line, nothing more.
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].severity, Severity::Info);
    assert_eq!(findings[0].rule, "power-capped");
    assert!(
        findings[0]
            .why
            .starts_with("SW power cap on 1 of 1 loaded GPUs on 1 node(s), limit 700 W"),
        "{}",
        findings[0].why
    );
}

/// A captured agent stream replayed into a store as the console does: the store, and every
/// finding after each frame.
fn replay_into(name: &str) -> (ClusterStore, Vec<Vec<burnin::triage::Finding>>) {
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    let mut out = Vec::new();
    for m in decode(name) {
        match m {
            WireMessage::Hello(h) => store.ingest(SourceEvent::Hello(h)),
            WireMessage::Frame(f) => {
                let at_ms = f.at_ms;
                store.ingest(SourceEvent::Frame(f));
                store.ingest(SourceEvent::Clock { at_ms });
                out.push(triage.evaluate(&store));
            }
            WireMessage::Error(e) => panic!("{e}"),
        }
    }
    (store, out)
}

/// Every finding after each frame of a captured agent stream, replayed into a store.
fn replay(name: &str) -> Vec<Vec<burnin::triage::Finding>> {
    replay_into(name).1
}

#[test]
fn a_real_spinning_kernel_is_busy_but_idle() {
    // torch.cuda._sleep: one thread spinning on the clock. NVML says 100 %, GPM says 1 of 132 SMs.
    let evals = replay("agent-busy-idle.ndjson");
    let last = evals.last().expect("frames");
    let crit: Vec<_> = last
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .collect();
    assert_eq!(crit.len(), 1, "{last:?}");
    assert_eq!(
        (crit[0].rule, crit[0].severity),
        ("busy-idle", Severity::Crit)
    );
    assert!(
        crit[0]
            .why
            .starts_with("util 100 % but SM activity 0.8 % at 124 W of 700 for 10 s"),
        "{}",
        crit[0].why
    );
    // It takes the whole window: none in the first ten frames.
    assert!(
        evals[..10]
            .iter()
            .all(|f| f.iter().all(|x| x.rule != "busy-idle"))
    );
    // `burnin triage` on the device said the same and exited 2.
    let doc: serde_json::Value =
        serde_json::from_str(&fixture("triage-busy-idle.json")).expect("json");
    assert_eq!(doc["findings"][0]["rule"], "busy-idle");
    assert_eq!(doc["findings"][0]["severity"], "crit");
}

/// The store after a capture, and every finding above info it raised on the way.
fn through_triage(file: &str) -> (ClusterStore, Vec<burnin::triage::Finding>) {
    let (store, per_frame) = replay_into(file);
    let worst = per_frame
        .into_iter()
        .flatten()
        .filter(|f| f.severity > Severity::Info)
        .collect();
    (store, worst)
}

/// A bf16 GEMM on the H200 read by the agent after another process switched GPM streaming on
/// and off through NVML (`scripts/device-verdicts.sh`, 2026-12-04): SM and tensor activity
/// 0.0 % at ~690 W, 100 % utilization, every frame. The same GEMM a few seconds before the
/// switch read 88.4 % / 81.1 %. The GPM readings are n/a with why, and no busy-idle CRIT lands
/// on a healthy GPU. The spinning kernel above, at 124 W, still is one.
#[test]
fn gpm_reading_zero_under_a_full_gemm_is_na_not_busy_idle() {
    let (store, worst) = through_triage("agent-load-before-toggle.ndjson");
    assert_eq!(worst, vec![], "the GEMM before the switch");
    let gpu = &store.nodes[0].gpus[0];
    assert_eq!(gpu.gpm_implausible, None);
    assert!(
        gpu.sm_active_pct.latest().is_some_and(|v| v > 80.0),
        "GPM read before the switch"
    );

    let (store, worst) = through_triage("agent-load-gpm-zero.ndjson");
    assert_eq!(worst, vec![], "a healthy GEMM with GPM reading zero");
    let gpu = &store.nodes[0].gpus[0];
    let why = gpu.gpm_implausible.as_deref().expect("GPM marked n/a");
    assert!(
        why.starts_with("GPM reads SM 0.0 % / tensor 0.0 % at 69"),
        "{why}"
    );
    assert!(
        why.contains("of 700 W and 100 % utilization: not possible"),
        "{why}"
    );
    assert_eq!(gpu.sm_active_pct.latest(), None);
    // The status document (status/triage --json) says why the readings are left out.
    let doc = serde_json::to_value(burnin::commands::status::status_doc(
        &store,
        Vec::new(),
        "h200".into(),
    ))
    .expect("json");
    let g = &doc["nodes"][0]["gpus"][0];
    assert!(g["sm_active_pct"].is_null(), "{g}");
    assert!(
        g["gpm_na"]
            .as_str()
            .is_some_and(|w| w.contains("not possible")),
        "{g}"
    );
}

#[test]
fn the_smi_stream_under_load_is_not_a_finding_either() {
    let mut d = SmiDecoder::new("h200", CAPTURED_FIELDS, 1);
    let mut store =
        ClusterStore::with_period(burnin::model::units::Period::from_millis(100).expect("period"));
    let mut triage = Triage::new();
    let text = fixture("smi-modern-lms100-load.csv");
    let lines: Vec<&str> = text.lines().collect();
    let mut worst = Vec::new();
    // nvidia-smi rows carry no time of their own: stamp them 100 ms apart, as they came.
    for (i, line) in lines[..lines.len() - 1].iter().enumerate() {
        let at_ms = 1_000 + 100 * i as u64;
        for m in d.push_line(line, at_ms).expect("parses") {
            match m {
                WireMessage::Hello(h) => store.ingest(SourceEvent::Hello(h)),
                WireMessage::Frame(f) => store.ingest(SourceEvent::Frame(f)),
                WireMessage::Error(e) => panic!("{e}"),
            }
        }
        store.ingest(SourceEvent::Clock { at_ms });
        worst.extend(
            triage
                .evaluate(&store)
                .into_iter()
                .filter(|f| f.severity > Severity::Info),
        );
    }
    assert_eq!(worst, vec![]);
}

#[test]
fn our_smi_query_output_parses_by_position() {
    let mut d = SmiDecoder::new("h200", CAPTURED_FIELDS, 1);
    let mut n = 0;
    let text = fixture("smi-modern-lms100-load.csv");
    // The capture was cut at 100 kB: drop a possibly partial last line.
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines[..lines.len() - 1] {
        for m in d.push_line(line, 0).expect("parses") {
            if let WireMessage::Frame(f) = m {
                n += 1;
                let s = &f.gpus[0];
                assert!(
                    s.power_limit_watts == Some(700.0) && s.sm_clock_max_mhz == Some(1980),
                    "{s:?}"
                );
                assert!(s.memory_total_bytes == Some(143_771 * 1024 * 1024));
            }
        }
    }
    assert!(n > 250, "{n}");
    assert_eq!(d.garbled(), 0);
}

#[test]
fn status_json_from_the_device_is_complete() {
    let doc: serde_json::Value = serde_json::from_str(&fixture("status-local.json")).expect("json");
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["nodes"][0]["link"]["state"], "streaming");
    assert_eq!(doc["nodes"][0]["gpus"][0]["name"], "NVIDIA H200");
    assert_eq!(doc["nodes"][0]["expected_gpus"], 1);
}
