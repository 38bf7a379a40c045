//! Issue 42: the second sign of a hung GPU, the one that needs no GPM (scitix/sichek's rule:
//! loaded, power under the model's floor, SM clock high, PCIe quiet, held 60 s and re-checked
//! four times 10 s apart). The streams are real agent captures: on an H100
//! (`tests/fixtures/h100-hang/`), a spinning kernel for 130 s and gemm.py for 120 s, replayed as
//! captured; on an H200 (`tests/fixtures/h200-burnin/`), a 21-frame spin and an 8-frame GEMM,
//! cycled with fresh timestamps to the 110 s the rule needs (a stand-in stream made of real
//! readings) to break the pattern once with a real frame of work.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use burnin::model::finding::{Finding, Severity};
use burnin::model::{NodeFrame, NodeHello, SourceEvent};
use burnin::store::ClusterStore;
use burnin::triage::Triage;

fn capture(name: &str) -> (Vec<NodeHello>, Vec<NodeFrame>) {
    if name.contains('/') {
        common::agent_capture(name)
    } else {
        common::agent_capture(&format!("h200-burnin/{name}"))
    }
}

/// The spinning kernel's loaded frames (the agent started before the spin did).
fn spinning() -> (Vec<NodeHello>, Vec<NodeFrame>) {
    let (h, f) = capture("agent-busy-idle.ndjson");
    let loaded: Vec<NodeFrame> = f
        .into_iter()
        .filter(|f| f.gpus[0].utilization_pct == Some(100.0))
        .collect();
    assert_eq!(loaded.len(), 21, "the capture's loaded frames");
    (h, loaded)
}

/// `frames` one a second for `secs` seconds (cycled), `edit` applied at each second; the
/// busy-idle finding on GPU 0 after the last.
fn run(
    hellos: &[NodeHello],
    frames: &[NodeFrame],
    secs: u64,
    edit: impl Fn(u64, &mut NodeFrame),
) -> Option<Finding> {
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    for h in hellos {
        store.ingest(SourceEvent::Hello(h.clone()));
    }
    let t0 = frames[0].at_ms;
    let mut found = Vec::new();
    for s in 0..secs {
        let mut f = frames[s as usize % frames.len()].clone();
        f.at_ms = t0 + s * 1000;
        edit(s, &mut f);
        let at_ms = f.at_ms;
        store.ingest(SourceEvent::Frame(f));
        store.ingest(SourceEvent::Clock { at_ms });
        found = triage.evaluate(&store);
    }
    found
        .into_iter()
        .find(|x| x.rule == "busy-idle" && x.gpu == Some(0))
}

fn no_gpm(f: &mut NodeFrame) {
    for g in &mut f.gpus {
        g.sm_active_pct = None;
        g.tensor_active_pct = None;
        g.dram_active_pct = None;
    }
}

/// The real spin as captured: GPM says 0.76 % of SMs and the power sign agrees (124 W under the
/// H200's 160, 1980 MHz, PCIe under 7 MB/s): critical, both signs in the words. Without its
/// GPM readings (a GPU or agent that cannot read GPM): the power sign alone, a warning.
#[test]
fn the_real_spinning_kernel_shows_both_signs_and_the_power_sign_alone_warns() {
    let (h, f) = spinning();
    let both = run(&h, &f, 110, |_, _| {}).expect("busy-idle");
    assert_eq!(both.severity, Severity::Crit, "{both:?}");
    assert!(
        both.why.contains("; and without GPM: util 100 % at 124 W (under H200's 160 W) with the SM clock at 1980 MHz"),
        "{}",
        both.why
    );
    let alone = run(&h, &f, 110, |_, f| no_gpm(f)).expect("busy-idle");
    assert_eq!(alone.severity, Severity::Warn, "{alone:?}");
    assert!(alone.why.contains("for 100 s"), "{}", alone.why);
    // Under the rule's window it has not held long enough.
    assert!(run(&h, &f, 90, |_, f| no_gpm(f)).is_none());
}

/// One real GEMM frame (690 W) in the spin's window breaks the pattern: no sign until a full
/// window after it; the real GEMM alone never shows it.
#[test]
fn a_stream_broken_once_by_real_work_and_real_work_itself_show_no_hang() {
    let (h, f) = spinning();
    let (_, gemm) = capture("agent-load-before-toggle.ndjson");
    let work = gemm[0].gpus[0].clone();
    assert!(work.power_avg_watts.unwrap_or(0.0) > 600.0, "{work:?}");
    let broken = |s: u64, f: &mut NodeFrame| {
        no_gpm(f);
        if s == 60 {
            f.gpus[0] = work.clone();
            f.gpus[0].sm_active_pct = None;
        }
    };
    assert!(run(&h, &f, 110, broken).is_none());
    assert!(run(&h, &f, 162, broken).is_some());
    let (gh, gf) = capture("agent-load-before-toggle.ndjson");
    assert!(run(&gh, &gf, 110, |_, f| no_gpm(f)).is_none());
    assert!(run(&gh, &gf, 110, |_, _| {}).is_none());
}

/// The H100 capture as it came, 130 frames of a real spinning kernel: both signs, critical, as
/// the live `burnin triage` beside it said (`triage-spin-125s.json`); without GPM, the power
/// sign alone warns. gemm.py's 120 frames near the 700 W limit: no sign, with GPM or without.
#[test]
fn the_real_h100_spin_is_found_by_both_signs_and_its_gemm_by_neither() {
    let (h, f) = capture("h100-hang/agent-spin-130s.ndjson");
    assert_eq!(f.len(), 130);
    let as_is = |frames: &[NodeFrame], strip: bool| {
        run(&h, frames, frames.len() as u64, |_, f| {
            if strip {
                no_gpm(f)
            }
        })
    };
    let both = as_is(&f, false).expect("busy-idle");
    assert_eq!(both.severity, Severity::Crit, "{both:?}");
    assert!(
        both.why.contains("and without GPM: util 100 % at 118 W (under H100 SXM's 160 W) with the SM clock at 1980 MHz and PCIe at most 0.4 MB/s for 100 s"),
        "{}",
        both.why
    );
    let live: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/fixtures/h100-hang/triage-spin-125s.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture"),
    )
    .expect("json");
    assert_eq!(live["findings"][0]["rule"], "busy-idle");
    assert_eq!(live["findings"][0]["severity"], "crit");
    let alone = as_is(&f, true).expect("busy-idle");
    assert_eq!(alone.severity, Severity::Warn, "{alone:?}");
    let (gh, gemm) = capture("h100-hang/agent-gemm-120s.ndjson");
    assert_eq!(gemm.len(), 120);
    let watts = gemm[60].gpus[0].power_avg_watts.unwrap_or(0.0);
    assert!(watts > 500.0, "{watts}");
    assert!(run(&gh, &gemm, 120, |_, _| {}).is_none());
    assert!(run(&gh, &gemm, 120, |_, f| no_gpm(f)).is_none());
}
