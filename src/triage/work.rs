//! Rules over the work itself: a phase's stragglers against their peers, NCCL's wrong elements,
//! AIStor latency and errors, dataloader wait.

use std::collections::{BTreeMap, HashMap};

use super::{Ctx, RELEASE_SHARE, Raw, Severity, raw};
use crate::model::phase::PhaseMetric;
use crate::plan::Gate;
use crate::plan::gates::{figures, fmt_value, peer_shares};
use crate::store::{ClusterStore, PhaseState, PhaseView, median};

/// Message sizes from which a collective is bandwidth-bound, so nodes compare fairly.
pub const BUSBW_COMPARED_FROM_BYTES: u64 = 64 << 20;

/// How old a probe's window may be and still be judged: a probe that ended (its phase done, a
/// node's stream stalled) does not keep a finding alive.
const STORAGE_FRESH_MS: u64 = 10_000;

pub(super) fn service_rules(store: &ClusterStore, ctx: &Ctx, out: &mut Vec<Raw>) {
    let t = &ctx.thresholds;
    // A phase that runs the probe on each node: the finding names the node that is slow or
    // failing, not "AIStor".
    let fresh = |at_ms: u64| at_ms.saturating_add(STORAGE_FRESH_MS) >= store.now_ms;
    let per_node: Vec<_> = store
        .storage
        .nodes
        .iter()
        .filter(|(_, n)| fresh(n.latest.at_ms))
        .collect();
    for &(node, n) in &per_node {
        let w = &n.latest;
        let gate = if ctx.was("aistor-latency", node, None) {
            RELEASE_SHARE * t.aistor_p99_ttfb_ms
        } else {
            t.aistor_p99_ttfb_ms
        };
        if w.ttfb_p99_ms > gate {
            out.push(raw(
                Severity::Warn,
                "aistor-latency",
                Some(node.clone()),
                None,
                format!(
                    "GET TTFB p99 {:.0} ms (p50 {:.0} ms) over {:.0} ms from this node to {}",
                    w.ttfb_p99_ms, w.ttfb_p50_ms, t.aistor_p99_ttfb_ms, w.endpoint
                ),
                "compare with the other nodes' probes: one slow node points at its own NIC, \
                 cable or route to the store; all slow at AIStor itself",
            ));
        }
        if w.errors > 0 {
            out.push(raw(
                Severity::Warn,
                "aistor-errors",
                Some(node.clone()),
                None,
                format!(
                    "{} of {} GETs from this node failed in the last window ({} since the phase started)",
                    w.errors,
                    w.requests + w.errors,
                    n.failed_total
                ),
                "look at the probe's error classes on this node and the AIStor server log",
            ));
        }
    }
    // The followed node's windows are in `latest` too: judged above, once.
    if per_node.is_empty()
        && let Some(w) = store.storage.latest.as_ref().filter(|w| fresh(w.at_ms))
    {
        // Level hysteresis: once over, the finding holds until p99 is well under the gate.
        let gate = if ctx.was_cluster("aistor-latency") {
            RELEASE_SHARE * t.aistor_p99_ttfb_ms
        } else {
            t.aistor_p99_ttfb_ms
        };
        if w.ttfb_p99_ms > gate {
            out.push(raw(
                Severity::Warn,
                "aistor-latency",
                None,
                None,
                format!(
                    "GET TTFB p99 {:.0} ms (p50 {:.0} ms) over {:.0} ms at {}",
                    w.ttfb_p99_ms, w.ttfb_p50_ms, t.aistor_p99_ttfb_ms, w.endpoint
                ),
                "check AIStor drive and node health, and fabric congestion counters",
            ));
        }
        if w.errors > 0 {
            out.push(raw(
                Severity::Warn,
                "aistor-errors",
                None,
                None,
                format!(
                    "{} of {} GETs failed in the last window",
                    w.errors,
                    w.requests + w.errors
                ),
                "look at the probe's error classes and the AIStor server log",
            ));
        }
    }
    let loader = &store.loader;
    let loader_live = loader
        .phase
        .as_deref()
        .and_then(|p| store.phase(p))
        .is_some_and(|p| p.state == PhaseState::Running);
    // The phase's own gate where its plan has one (T8: 5 %), so the finding and the verdict
    // agree; else the triage line.
    let (line, whose) = store.loader_gate_pct(t.loader_wait_pct);
    let gate = if ctx.was_cluster("dataloader-wait") {
        RELEASE_SHARE * line
    } else {
        line
    };
    if loader_live
        && let Some(share) = loader.wait_share()
        && share * 100.0 > gate
    {
        out.push(raw(
            Severity::Warn,
            "dataloader-wait",
            None,
            None,
            format!(
                "{} waits for data {:.0} % of step time ({whose} {line:.0} %)",
                loader.phase.as_deref().unwrap_or("training"),
                share * 100.0,
            ),
            "raise loader workers/prefetch; compare with a local-NVMe run; check AIStor p99",
        ));
    }
}

/// Findings from the figures of each phase's current (or last) run. They stand until the phase
/// runs again: a straggler measured is evidence, not a passing state. Cached per phase by its
/// metrics version, since figures are recomputed from all of the run's metrics.
pub(super) fn phase_rules(
    store: &ClusterStore,
    cache: &mut HashMap<String, (u64, Vec<Raw>)>,
    out: &mut Vec<Raw>,
) {
    for phase in &store.phases {
        if phase.state == PhaseState::Pending || phase.figure_metrics.is_empty() {
            cache.remove(&phase.spec.id);
            continue;
        }
        let entry = cache
            .entry(phase.spec.id.clone())
            .or_insert_with(|| (u64::MAX, Vec::new()));
        if entry.0 != phase.metrics_version {
            entry.1 = judge_phase(phase);
            entry.0 = phase.metrics_version;
        }
        out.extend(entry.1.iter().cloned());
    }
}

fn judge_phase(phase: &PhaseView) -> Vec<Raw> {
    let id = phase.spec.id.as_str();
    let mut worst: BTreeMap<(Option<String>, Option<u32>), (f64, Raw)> = BTreeMap::new();
    let mut keep = |share: f64, r: Raw| {
        let key = (r.node.clone(), r.gpu);
        if worst.get(&key).is_none_or(|(s, _)| share < *s) {
            worst.insert(key, (share, r));
        }
    };
    let figs = figures(&phase.figure_metrics);
    for gate in &phase.spec.gates {
        let Gate::Peers { figure, pct } = gate else {
            continue;
        };
        if let Some(collective) = figure.strip_prefix("busbw_") {
            for (share, r) in busbw_stragglers(phase, collective, *pct) {
                keep(share, r);
            }
            continue;
        }
        let Some(samples) = figs.get(figure) else {
            continue;
        };
        for p in peer_shares(samples) {
            if p.share_pct >= *pct {
                continue;
            }
            let (node, gpu) = subject_parts(&p.sample.subject);
            let r = raw(
                Severity::Warn,
                "straggler",
                node,
                gpu,
                format!(
                    "{figure} {} {} = {:.0} % of peer median {} (gate {pct:.0} %)",
                    p.sample.subject,
                    fmt_value(p.sample.value),
                    p.share_pct,
                    fmt_value(p.median)
                ),
                straggler_next(figure),
            )
            .in_phase(id);
            keep(p.share_pct, r);
        }
    }
    let mut out: Vec<Raw> = worst.into_values().map(|(_, r)| r).collect();
    out.extend(wrong_elements(phase));
    out
}

/// Nodes whose busbw is under `pct` % of the other nodes' median at the same collective, rank
/// count and message size (bandwidth-bound sizes only), with the share of the worst such size.
/// Nodes sweep at their own pace, so comparing the best figure so far would flag the node that
/// has not reached the large sizes yet.
fn busbw_stragglers(phase: &PhaseView, collective: &str, pct: f64) -> Vec<(f64, Raw)> {
    let mut rows: BTreeMap<(u32, u64), BTreeMap<&str, f64>> = BTreeMap::new();
    for m in &phase.figure_metrics {
        if let PhaseMetric::BusBw {
            node: Some(node),
            collective: c,
            size_bytes,
            busbw_gb_per_s,
            ranks,
            ..
        } = m
            && c == collective
            && *size_bytes >= BUSBW_COMPARED_FROM_BYTES
            && busbw_gb_per_s.is_finite()
        {
            rows.entry((*ranks, *size_bytes))
                .or_default()
                .insert(node, *busbw_gb_per_s);
        }
    }
    let mut worst: BTreeMap<&str, (f64, u32, u64, f64, f64)> = BTreeMap::new();
    for ((ranks, size), per_node) in &rows {
        if per_node.len() < 2 {
            continue;
        }
        let Some(med) = median(per_node.values().copied()).filter(|m| *m > 0.0) else {
            continue;
        };
        for (node, v) in per_node {
            let share = 100.0 * v / med;
            if share < pct && worst.get(node).is_none_or(|w| share < w.0) {
                worst.insert(node, (share, *ranks, *size, *v, med));
            }
        }
    }
    worst
        .into_iter()
        .map(|(node, (share, ranks, size, v, med))| {
            let r = raw(
                Severity::Warn,
                "straggler",
                Some(node.to_string()),
                None,
                format!(
                    "busbw {collective} {} GB/s at {} on {ranks} GPUs = {share:.0} % of the other nodes' median {} (gate {pct:.0} %)",
                    fmt_value(v),
                    fmt_size(size),
                    fmt_value(med)
                ),
                straggler_next("busbw_"),
            )
            .in_phase(&phase.spec.id);
            (share, r)
        })
        .collect()
}

/// NCCL's validation found wrong elements: the collective returned bad data.
fn wrong_elements(phase: &PhaseView) -> Vec<Raw> {
    let mut per_node: BTreeMap<Option<&str>, (u64, &str, u64, u32)> = BTreeMap::new();
    for m in &phase.figure_metrics {
        if let PhaseMetric::BusBw {
            node,
            collective,
            size_bytes,
            wrong: Some(w),
            ranks,
            ..
        } = m
            && *w > 0
        {
            let e = per_node
                .entry(node.as_deref())
                .or_insert((0, collective, *size_bytes, *ranks));
            e.0 += w;
        }
    }
    per_node
        .into_iter()
        .map(|(node, (wrong, collective, size, ranks))| {
            raw(
                Severity::Crit,
                "nccl-wrong",
                node.map(str::to_string),
                None,
                format!(
                    "{wrong} wrong element(s); first at {collective} {} on {ranks} GPUs",
                    fmt_size(size)
                ),
                "the collective returned bad data: run dcgmi diag -r 3 and nvidia-smi nvlink -e on the node; check for Xid 74/79",
            )
            .in_phase(&phase.spec.id)
        })
        .collect()
}

/// `node/gpu3` → (node, 3); `node/mlx5_0` and `node 0->1 read_ce` → node; `job` → neither.
fn subject_parts(subject: &str) -> (Option<String>, Option<u32>) {
    if subject == "job" || subject == "all" {
        return (None, None);
    }
    let head = subject.split(' ').next().unwrap_or(subject);
    match head.split_once('/') {
        Some((node, rest)) => (
            Some(node.to_string()),
            rest.strip_prefix("gpu").and_then(|g| g.parse().ok()),
        ),
        None => (Some(head.to_string()), None),
    }
}

fn straggler_next(figure: &str) -> &'static str {
    if figure.starts_with("tflops") {
        "compare its clocks, power limit and throttle reasons with its peers; rerun T2 on it alone"
    } else if figure.starts_with("busbw") {
        "compare the node's NVLink counters and GPU clocks with its peers; rerun nccl-tests on it alone"
    } else if figure.starts_with("pair") {
        "nvidia-smi nvlink -s and -e on the node for that pair's links; check the fabric manager log"
    } else if figure.starts_with("link") {
        "ibstat and perfquery on that port; check its cable and the switch port"
    } else if figure.starts_with("s3") {
        "check the node's NIC, its route to AIStor and its CPU load during the probe"
    } else {
        "look at the node's GPUs (clocks, power, throttling) and its data wait against its peers"
    }
}

/// 1 GiB, 64 MiB, 512 KiB, 8 B.
fn fmt_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024 && v.is_multiple_of(1024) && unit < UNITS.len() - 1 {
        v /= 1024;
        unit += 1;
    }
    format!("{v} {}", UNITS[unit])
}

/// A fault search named a node (slow beside two different good partners) or a link (two nodes
/// that each pass with others, slow together twice): critical, with the search's evidence.
pub(super) fn search_rules(store: &ClusterStore, out: &mut Vec<Raw>) {
    let Some(s) = store.search.as_deref() else {
        return;
    };
    for named in &s.named {
        let Some((node, why)) = named.split_once(": ") else {
            continue;
        };
        out.push(
            raw(
                Severity::Crit,
                "bad-node",
                Some(node.to_string()),
                None,
                format!("the {} search: {why}", s.phase),
                "take the node out of the job; run L1 and L2 on it alone to find the NIC, cable or \
                 leaf port, then re-run the search without it",
            )
            .in_phase(&s.phase),
        );
    }
    for link in &s.links {
        let Some((pair, why)) = link.split_once(": ") else {
            continue;
        };
        let Some((a, b)) = pair.split_once('–') else {
            continue;
        };
        out.push(
            raw(
                Severity::Crit,
                "bad-link",
                Some(a.to_string()),
                None,
                format!("the {} search: {pair} {why}", s.phase),
                "each node is fine with others: check the path between the two (the switch ports \
                 and cables that carry it, the routing between their leaves)",
            )
            .in_phase(&s.phase)
            .about(&format!("link to {b}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Finding, Severity, Triage};
    use crate::model::SourceEvent;
    use crate::model::phase::{PhaseEvent, PhaseMetric};
    use crate::store::ClusterStore;

    fn store_with(phase: &str, metrics: Vec<PhaseMetric>) -> ClusterStore {
        let mut store = ClusterStore::with_period(
            crate::model::units::Period::from_millis(1000).expect("period"),
        );
        store.ingest(SourceEvent::Phase(PhaseEvent::Started {
            phase: phase.into(),
            at_ms: 1_000,
        }));
        for metric in metrics {
            store.ingest(SourceEvent::Phase(PhaseEvent::Metric {
                phase: phase.into(),
                at_ms: 2_000,
                metric,
            }));
        }
        store.ingest(SourceEvent::Clock { at_ms: 3_000 });
        store
    }

    fn of(f: &[Finding], rule: &str) -> Vec<(String, String)> {
        f.iter()
            .filter(|x| x.rule == rule)
            .map(|x| (x.subject(), x.why.clone()))
            .collect()
    }

    #[test]
    fn a_gemm_straggler_is_named_with_its_peers_median() {
        let mut m = Vec::new();
        for node in ["n1", "n2"] {
            for gpu in 0..8 {
                let tflops = if node == "n2" && gpu == 5 {
                    1300.0
                } else {
                    1700.0
                };
                m.push(PhaseMetric::Tflops {
                    node: node.into(),
                    gpu,
                    dtype: "bf16".into(),
                    tflops,
                });
            }
        }
        let f = Triage::new().evaluate(&store_with("T2", m));
        assert_eq!(
            of(&f, "straggler"),
            [(
                "n2 GPU5".to_string(),
                "tflops_bf16 n2/gpu5 1300 = 76 % of peer median 1700 (gate 90 %)".to_string()
            )]
        );
        let s = f.iter().find(|x| x.rule == "straggler").expect("one");
        assert_eq!(
            (s.severity, s.phase.as_deref()),
            (Severity::Warn, Some("T2"))
        );
    }

    fn busbw(node: &str, ranks: u32, size: u64, gb: f64, wrong: Option<u64>) -> PhaseMetric {
        PhaseMetric::BusBw {
            node: Some(node.into()),
            collective: "all_reduce".into(),
            size_bytes: size,
            busbw_gb_per_s: gb,
            algbw_gb_per_s: gb / 1.75,
            in_place_busbw_gb_per_s: None,
            wrong,
            ranks,
            deviation: false,
        }
    }

    #[test]
    fn busbw_stragglers_compare_the_same_size_and_rank_count() {
        let gib = 1u64 << 30;
        let mut m = Vec::new();
        for node in ["n1", "n2", "n3"] {
            // n3 is slow at the large sizes of the 8-GPU run.
            let share = if node == "n3" { 0.7 } else { 1.0 };
            for size in [1 << 20, 64 << 20, gib] {
                m.push(busbw(node, 8, size, 480.0 * share, Some(0)));
            }
        }
        // n4 is still in its 4-GPU run: slower, but not comparable with the 8-GPU rows.
        m.push(busbw("n4", 4, gib, 300.0, Some(0)));
        // n5 has reached only a small size of the 8-GPU sweep: latency-bound, not judged.
        m.push(busbw("n5", 8, 1 << 20, 20.0, Some(0)));
        let f = Triage::new().evaluate(&store_with("T4", m));
        assert_eq!(
            of(&f, "straggler"),
            [(
                "n3".to_string(),
                "busbw all_reduce 336 GB/s at 64 MiB on 8 GPUs = 70 % of the other nodes' median 480 (gate 90 %)"
                    .to_string()
            )]
        );
        assert!(of(&f, "nccl-wrong").is_empty());
    }

    #[test]
    fn wrong_elements_are_critical() {
        let m = vec![
            busbw("n1", 8, 1 << 30, 480.0, Some(0)),
            busbw("n2", 8, 1 << 20, 480.0, Some(3)),
            busbw("n2", 8, 1 << 30, 480.0, Some(2)),
        ];
        let f = Triage::new().evaluate(&store_with("T4", m));
        let w: Vec<&Finding> = f.iter().filter(|x| x.rule == "nccl-wrong").collect();
        assert_eq!(w.len(), 1, "{f:?}");
        assert_eq!(w[0].severity, Severity::Crit);
        assert_eq!(w[0].subject(), "n2");
        assert_eq!(
            w[0].why,
            "5 wrong element(s); first at all_reduce 1 MiB on 8 GPUs"
        );
    }

    #[test]
    fn phase_findings_stand_until_the_phase_runs_again() {
        let m = vec![
            busbw("n1", 8, 1 << 30, 480.0, Some(0)),
            busbw("n2", 8, 1 << 30, 480.0, Some(1)),
        ];
        let mut store = store_with("T4", m);
        let mut triage = Triage::new();
        assert_eq!(of(&triage.evaluate(&store), "nccl-wrong").len(), 1);
        store.ingest(SourceEvent::Phase(PhaseEvent::Finished {
            phase: "T4".into(),
            at_ms: 60_000,
            verdict: crate::model::phase::Verdict::Fail,
            reason: "1 wrong elements".into(),
        }));
        store.ingest(SourceEvent::Clock { at_ms: 120_000 });
        assert_eq!(of(&triage.evaluate(&store), "nccl-wrong").len(), 1);
        store.ingest(SourceEvent::Phase(PhaseEvent::Started {
            phase: "T4".into(),
            at_ms: 121_000,
        }));
        store.ingest(SourceEvent::Clock { at_ms: 121_000 });
        assert_eq!(of(&triage.evaluate(&store), "nccl-wrong").len(), 0);
    }
}
