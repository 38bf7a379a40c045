use super::*;
use std::collections::BTreeMap;

fn run_to(cluster: &mut SimCluster, s: u64) -> Vec<SourceEvent> {
    cluster.advance_to(SIM_EPOCH_MS + s * SIM_PERIOD_MS)
}

#[test]
fn same_seed_same_events() {
    let mut a = SimCluster::new(SimConfig::demo(7));
    let mut b = SimCluster::new(SimConfig::demo(7));
    assert_eq!(run_to(&mut a, 130), run_to(&mut b, 130));
    let mut c = SimCluster::new(SimConfig::demo(8));
    assert_ne!(run_to(&mut a, 140), run_to(&mut c, 140));
}

#[test]
fn runs_the_whole_plan_with_verdicts() {
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let events = run_to(&mut sim, 400);
    let verdicts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SourceEvent::Phase(PhaseEvent::Finished { phase, verdict, .. }) => {
                Some((phase.as_str(), *verdict))
            }
            _ => None,
        })
        .collect();
    assert_eq!(verdicts.len(), 8, "{verdicts:?}");
    assert_eq!(verdicts[0], ("T1", Verdict::Pass));
    assert_eq!(verdicts[1], ("T2", Verdict::Fail));
    assert_eq!(verdicts[3], ("T4", Verdict::Fail));
    assert_eq!(verdicts[7], ("T8", Verdict::Fail));
}

#[test]
fn the_demo_is_judged_by_the_plans_own_gates() {
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let reasons: BTreeMap<String, (Verdict, String)> = run_to(&mut sim, 400)
        .into_iter()
        .filter_map(|e| match e {
            SourceEvent::Phase(PhaseEvent::Finished {
                phase,
                verdict,
                reason,
                ..
            }) => Some((phase, (verdict, reason))),
            _ => None,
        })
        .collect();
    // The plan's T8 gate is data wait <= 5 % (the simulator once judged < 10 % itself).
    let (v, why) = &reasons["T8"];
    assert_eq!(*v, Verdict::Fail);
    assert!(
        why.contains("data_wait_pct job") && why.contains("(limit 5.00)"),
        "{why}"
    );
    // T2: the throttled GPU against the peers and the nominal baseline, in the gates' words.
    let (v, why) = &reasons["T2"];
    assert_eq!(*v, Verdict::Fail);
    assert!(
        why.contains("node03/gpu5") && why.contains("% of baseline"),
        "{why}"
    );
    // T3: NVLink CRC errors climbing beside it, by the plan's no-finding gate.
    let (v, why) = &reasons["T3"];
    assert_eq!(*v, Verdict::Fail);
    assert!(why.starts_with("2 nvlink-errors finding(s)"), "{why}");
    // T5: the GPU lost to Xid 79 is seen by the telemetry watch beside the phase.
    let (v, why) = &reasons["T5"];
    assert_eq!(*v, Verdict::Fail);
    assert!(why.contains("Xid 79 on node11 GPU0"), "{why}");
    // T7: the nodes that dropped out are missing ranks of the inventory's GPUs.
    let (v, why) = &reasons["T7"];
    assert_eq!(*v, Verdict::Fail);
    assert!(why.contains("the inventory has 96 GPUs"), "{why}");
}

#[test]
fn without_faults_every_phase_passes() {
    let mut config = SimConfig::demo(1);
    config.faults.clear();
    let mut sim = SimCluster::new(config);
    for e in run_to(&mut sim, 400) {
        if let SourceEvent::Phase(PhaseEvent::Finished {
            phase,
            verdict,
            reason,
            ..
        }) = e
        {
            assert_eq!(verdict, Verdict::Pass, "{phase}: {reason}");
        }
    }
}

#[test]
fn stalled_gpu_collapses_while_peers_stay_loaded() {
    let mut sim = SimCluster::new(SimConfig::demo(3));
    let events = run_to(&mut sim, 125);
    let frame = events
        .iter()
        .rev()
        .find_map(|e| match e {
            SourceEvent::Frame(f) if f.node == "node07" => Some(f),
            _ => None,
        })
        .expect("node07 frame");
    assert!(frame.gpus[3].utilization_pct.unwrap_or(100.0) < 5.0);
    assert!(frame.gpus[2].utilization_pct.unwrap_or(0.0) > 80.0);
}

#[test]
fn abort_stops_the_phase_and_autorun() {
    let mut sim = SimCluster::new(SimConfig::demo(1));
    run_to(&mut sim, 20);
    let out = sim.command(PhaseCommand::Abort("T2".into()));
    assert!(matches!(
        out.as_slice(),
        [SourceEvent::Phase(PhaseEvent::Finished {
            verdict: Verdict::Aborted,
            ..
        })]
    ));
    let later = run_to(&mut sim, 60);
    assert!(
        !later
            .iter()
            .any(|e| matches!(e, SourceEvent::Phase(PhaseEvent::Started { .. })))
    );
    let out = sim.command(PhaseCommand::Start("T3".into()));
    assert!(matches!(
        out.as_slice(),
        [SourceEvent::Phase(PhaseEvent::Started { .. })]
    ));
}

#[test]
fn fault_names_round_trip() {
    for f in FaultKind::ALL {
        assert_eq!(FaultKind::parse(f.name()), Ok(f));
    }
    assert!(FaultKind::parse("meltdown").unwrap_err().contains("stall"));
}

/// S2 on the simulated cluster with `faults`, started by the operator at 2 s: its verdict
/// and reason, and the store after it.
fn s2_with(faults: Vec<FaultKind>) -> (Verdict, String, crate::store::ClusterStore) {
    on_request_with("S2", faults)
}

/// A phase the operator starts at 2 s on the simulated cluster with `faults`: its verdict and
/// reason, and the store after it.
fn on_request_with(
    id: &str,
    faults: Vec<FaultKind>,
) -> (Verdict, String, crate::store::ClusterStore) {
    let mut config = SimConfig::demo(1);
    config.faults = faults.into_iter().map(Fault::scheduled).collect();
    on_request_in(id, config)
}

/// A phase the operator starts at 2 s on a simulated cluster of `config`'s shape.
fn on_request_in(id: &str, mut config: SimConfig) -> (Verdict, String, crate::store::ClusterStore) {
    config.autorun = false;
    let mut sim = SimCluster::new(config);
    let mut store = crate::store::ClusterStore::new();
    let mut events = run_to(&mut sim, 2);
    events.extend(sim.command(PhaseCommand::Start(id.into())));
    events.extend(run_to(&mut sim, 70));
    let mut finished = None;
    for e in events {
        if let SourceEvent::Phase(PhaseEvent::Finished {
            phase,
            verdict,
            reason,
            ..
        }) = &e
            && phase == id
        {
            finished = Some((*verdict, reason.clone()));
        }
        store.ingest(e);
    }
    let (verdict, reason) = finished.expect("the phase finished");
    (verdict, reason, store)
}

#[test]
fn s2_probes_every_node_and_names_the_slow_one() {
    let (verdict, reason, _) = s2_with(Vec::new());
    assert_eq!(verdict, Verdict::Pass, "{reason}");
    let (verdict, reason, store) = s2_with(vec![FaultKind::SlowStorage]);
    assert_eq!(verdict, Verdict::Fail, "{reason}");
    assert!(reason.contains("node12"), "{reason}");
    assert_eq!(store.storage.nodes.len(), 12);
    let worst = store.storage.nodes_worst_first(200.0);
    assert_eq!(worst[0].0, "node12");
}

/// S4 on the simulated cluster: every GPU's runs reach the storage pane as they finish, the
/// real gdsio parser reads each node's output at the end, and the plan's gates judge it. A
/// node in compat mode FAILs on cuFile's own count, and leads the pane.
#[test]
fn s4_runs_on_every_gpu_and_names_the_node_in_compat_mode() {
    let (verdict, reason, store) = on_request_with("S4", Vec::new());
    assert_eq!(verdict, Verdict::Pass, "{reason}");
    assert_eq!(store.storage.gds.gpus.len(), 96);
    let (verdict, reason, store) = on_request_with("S4", vec![FaultKind::GdsCompat]);
    assert_eq!(verdict, Verdict::Fail, "{reason}");
    assert!(
        reason.contains("node06") && reason.contains("compat mode"),
        "{reason}"
    );
    let worst = store.storage.gds.worst_first();
    assert_eq!(worst[0].0.0, "node06");
    let pct = worst[0].1.direct_pct().expect("paired");
    assert!((95.0..105.0).contains(&pct), "{pct}");
    // Ten GPUs a node: more runs than seconds, still every GPU within the phase's time.
    let mut config = SimConfig::demo(1);
    config.faults.clear();
    config.nodes = 2;
    config.gpus_per_node = 10;
    let (verdict, reason, store) = on_request_in("S4", config);
    assert_eq!(verdict, Verdict::Pass, "{reason}");
    assert_eq!(store.storage.gds.gpus.len(), 20);
}
