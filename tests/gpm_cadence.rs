//! The agent reads GPM rarely on a healthy GPU and every background round on a busy-idle
//! suspect (`agent::gpm_cadence`). Busy-idle must fire as soon as it did when every round read
//! GPM: on the real spinning kernel captured on the H200 and on the simulator's hung GPU, the
//! readings the frames would carry under each schedule are replayed into triage, and the
//! first second busy-idle fires is the same.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use burnin::agent::gpm_cadence::{GpmCadence, GpmRead, is_suspect};
use burnin::model::{NodeFrame, SourceEvent};
use burnin::sim::{Fault, FaultKind, SIM_EPOCH_MS, SimCluster, SimConfig};
use burnin::store::ClusterStore;
use burnin::triage::Triage;

/// The agent's background round.
const ROUND_S: u64 = 2;

/// A GPU's GPM activity readings: SM, tensor, DRAM.
type Activity = (Option<f32>, Option<f32>, Option<f32>);

/// Which schedule the frames' GPM readings follow.
#[derive(Clone, Copy, PartialEq)]
enum Schedule {
    /// Every background round, as before the cadence.
    EveryRound,
    /// The cadence.
    Cadence,
}

/// The frames as the agent would have sent them: each GPU's GPM readings (SM, tensor, DRAM
/// activity) as of its last read under `schedule`, reads happening every [`ROUND_S`] seconds
/// at most; a read takes the frame's own (fresh) values.
fn as_sent(frames: &[NodeFrame], schedule: Schedule) -> Vec<NodeFrame> {
    let mut cadence: HashMap<(String, u32), GpmCadence> = HashMap::new();
    let mut carried: HashMap<(String, u32), Activity> = HashMap::new();
    let t0 = frames.first().map_or(0, |f| f.at_ms);
    frames
        .iter()
        .map(|f| {
            let mut f = f.clone();
            let s = (f.at_ms - t0) / 1000;
            for g in &mut f.gpus {
                let key = (f.node.clone(), g.index);
                let last = carried.get(&key).copied();
                let round = s.is_multiple_of(ROUND_S);
                let read = round
                    && match schedule {
                        Schedule::EveryRound => true,
                        Schedule::Cadence => {
                            let suspect = is_suspect(
                                g.utilization_pct.map(f64::from),
                                g.power_avg_watts.map(f64::from),
                                g.power_limit_watts.map(f64::from),
                                last.and_then(|l| l.0).map(f64::from),
                            );
                            cadence.entry(key.clone()).or_default().decide(
                                Duration::from_secs(s),
                                suspect,
                                Duration::from_secs(ROUND_S),
                            ) != GpmRead::Carry
                        }
                    };
                if read || last.is_none() {
                    carried.insert(
                        key,
                        (g.sm_active_pct, g.tensor_active_pct, g.dram_active_pct),
                    );
                } else if let Some((sm, tensor, dram)) = last {
                    g.sm_active_pct = sm;
                    g.tensor_active_pct = tensor;
                    g.dram_active_pct = dram;
                }
            }
            f
        })
        .collect()
}

/// The first frame (seconds from the first) after which triage holds a busy-idle finding on
/// `node` `gpu`.
fn busy_idle_from(
    hellos: &[burnin::model::NodeHello],
    frames: &[NodeFrame],
    node: &str,
    gpu: u32,
) -> Option<u64> {
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    for h in hellos {
        store.ingest(SourceEvent::Hello(h.clone()));
    }
    let t0 = frames.first().map_or(0, |f| f.at_ms);
    for f in frames {
        let at_ms = f.at_ms;
        store.ingest(SourceEvent::Frame(f.clone()));
        store.ingest(SourceEvent::Clock { at_ms });
        let found = triage.evaluate(&store).into_iter().any(|x| {
            x.rule == "busy-idle" && x.node.as_deref() == Some(node) && x.gpu == Some(gpu)
        });
        if found {
            return Some((at_ms - t0) / 1000);
        }
    }
    None
}

#[test]
fn the_real_spinning_kernel_is_found_as_soon_as_before() {
    let (hellos, frames) = common::agent_capture("h200-burnin/agent-busy-idle.ndjson");
    let node = frames[0].node.clone();
    let before = busy_idle_from(&hellos, &as_sent(&frames, Schedule::EveryRound), &node, 0);
    let after = busy_idle_from(&hellos, &as_sent(&frames, Schedule::Cadence), &node, 0);
    assert!(before.is_some(), "busy-idle on the capture");
    assert_eq!(
        after, before,
        "the cadence finds it as soon as every round did"
    );
}

#[test]
fn the_simulators_hung_gpu_is_found_as_soon_as_before_and_healthy_gpus_are_read_rarely() {
    let mut config = SimConfig::demo(1);
    config.faults = vec![Fault::scheduled(FaultKind::Hang)];
    let mut sim = SimCluster::new(config);
    let (mut hellos, mut frames) = (Vec::new(), Vec::new());
    for s in 0..=220 {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            match e {
                SourceEvent::Hello(h) if h.node == "node04" => hellos.push(h),
                SourceEvent::Frame(f) if f.node == "node04" => frames.push(f),
                _ => {}
            }
        }
    }
    let before = busy_idle_from(
        &hellos,
        &as_sent(&frames, Schedule::EveryRound),
        "node04",
        2,
    );
    let after = busy_idle_from(&hellos, &as_sent(&frames, Schedule::Cadence), "node04", 2);
    let onset = Fault::scheduled(FaultKind::Hang).from_s;
    let found = before.expect("busy-idle on the hung GPU");
    assert!(found >= onset, "{found}");
    assert_eq!(
        after, before,
        "the cadence finds it as soon as every round did"
    );
    // What it saves: under T2's GEMM (near the power limit) and idle, a healthy GPU is read
    // every 10 s, not every 2 s. (Under NCCL its power sits below the suspect share, so it is
    // read every round, as before.)
    let changes = |sched: Schedule, from: usize, to: usize| {
        let sent = as_sent(&frames, sched);
        sent[from..to]
            .windows(2)
            .filter(|w| w[0].gpus[0].sm_active_pct != w[1].gpus[0].sm_active_pct)
            .count()
    };
    let (gemm_from, gemm_to) = (16, 48);
    let every = changes(Schedule::EveryRound, gemm_from, gemm_to);
    let cadence = changes(Schedule::Cadence, gemm_from, gemm_to);
    assert!(every >= 10, "every round: {every}");
    assert!(
        cadence <= 4,
        "under GEMM, read every 10 s: {cadence} changes in 32 s"
    );
}
