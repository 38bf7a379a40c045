//! Rules over the cluster store that point at the GPU, link or service in trouble and say why,
//! with the evidence numbers and the next step. They read only what sources report, so they work
//! the same on the simulator and on real nodes.
//!
//! Hysteresis keeps a finding from flapping or lingering: a level rule that fired keeps firing
//! until its number falls below [`RELEASE_SHARE`] of the threshold (or, for windowed rules, until
//! the newest few samples are clean), and a finding whose rule stopped firing stays listed for
//! `clear_after_ms` before it goes. Findings about a state (a node unreachable, a port down)
//! follow the state at once: the state is already debounced where it is made.

mod fabric;
mod gpu;
mod hang;
use crate::model::thresholds;
pub mod telemetry_log;
pub mod watched;
mod work;

use std::collections::HashMap;

use crate::model::UnixMillis;
use crate::store::ClusterStore;

pub use crate::model::xid::{XidInfo, xid_info, xid_meaning};
pub use thresholds::{
    AISTOR_P99_TTFB_MS, BUSY_IDLE_SM_PCT, CLEAR_AFTER_MS, CLOCK_LOW_PCT, COUNTER_WINDOW_MS,
    LOADED_UTIL_PCT, LOADER_WAIT_SHARE, RELEASE_SHARE, STALL_POWER_SHARE, STALL_UTIL_PCT,
    STALL_WINDOW_MS, Thresholds, samples_in,
};

pub use crate::model::finding::{Finding, Severity};

/// What a rule reports before triage gives it its times.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    severity: Severity,
    rule: &'static str,
    node: Option<String>,
    gpu: Option<u32>,
    phase: Option<String>,
    /// Which part of the subject (a NIC port, an interface), when a node has several.
    part: Option<String>,
    /// When the reported event happened, for findings about an event rather than a state.
    event_ms: Option<UnixMillis>,
    why: String,
    next: &'static str,
}

/// A finding about a node or GPU (or neither), as rules report it.
pub(crate) fn raw(
    severity: Severity,
    rule: &'static str,
    node: Option<String>,
    gpu: Option<u32>,
    why: String,
    next: &'static str,
) -> Raw {
    debug_assert!(
        crate::model::finding::RULES.contains(&rule),
        "triage rule {rule:?} is not in model::finding::RULES"
    );
    Raw {
        severity,
        rule,
        node,
        gpu,
        phase: None,
        part: None,
        event_ms: None,
        why,
        next,
    }
}

impl Raw {
    fn in_phase(mut self, phase: &str) -> Self {
        self.phase = Some(phase.to_string());
        self
    }

    fn about(mut self, part: &str) -> Self {
        self.part = Some(part.to_string());
        self
    }

    fn at(mut self, event_ms: UnixMillis) -> Self {
        self.event_ms = Some(event_ms);
        self
    }

    fn key(&self) -> Key {
        (
            self.rule,
            self.node.clone(),
            self.gpu,
            self.phase.clone(),
            self.part.clone(),
        )
    }
}

/// Rule, node, GPU, phase, part: what a finding is about.
type Key = (
    &'static str,
    Option<String>,
    Option<u32>,
    Option<String>,
    Option<String>,
);

/// Rules whose findings report a state that is already debounced where it is made: they clear
/// the moment the state does.
const FOLLOWS_STATE: &[&str] = &[
    "unreachable",
    "stale",
    "gpus-missing",
    "gpu-lost",
    "nic-down",
    "netdev-down",
    "gpu-nic-down",
    "nccl-wrong",
];

/// What rules may ask about the evaluation they run in.
pub(crate) struct Ctx<'a> {
    thresholds: Thresholds,
    /// Samples in the stall window at the store's period.
    stall_samples: usize,
    /// Findings held from earlier evaluations.
    held: &'a HashMap<Key, Finding>,
    /// When the previous evaluation ran.
    previous_ms: Option<UnixMillis>,
    /// The store's sample period.
    period_ms: u64,
}

impl Ctx<'_> {
    /// Seconds that `samples` newest samples cover.
    fn window_secs(&self, samples: usize) -> u64 {
        samples as u64 * self.period_ms / 1000
    }

    /// Whether `rule` fired for this node/GPU at the previous evaluation (level hysteresis).
    fn was(&self, rule: &'static str, node: &str, gpu: Option<u32>) -> bool {
        self.firing(&(rule, Some(node.to_string()), gpu, None, None))
    }

    /// Whether a cluster-wide `rule` fired at the previous evaluation.
    fn was_cluster(&self, rule: &'static str) -> bool {
        self.firing(&(rule, None, None, None, None))
    }

    fn firing(&self, key: &Key) -> bool {
        self.held
            .get(key)
            .is_some_and(|f| Some(f.last_seen_ms) == self.previous_ms)
    }
}

/// Evaluates the rules and remembers since when each finding has held.
#[derive(Debug, Clone, Default)]
pub struct Triage {
    held: HashMap<Key, Finding>,
    thresholds: Thresholds,
    /// Per phase: the metrics version its figure rules last saw, and what they found.
    phase_cache: HashMap<String, (u64, Vec<Raw>)>,
    /// When the previous evaluation ran.
    previous_ms: Option<UnixMillis>,
}

impl Triage {
    /// A triage with no history and the default thresholds.
    pub fn new() -> Self {
        Self::default()
    }

    /// A triage with no history judging by `thresholds`.
    pub fn with_thresholds(thresholds: Thresholds) -> Self {
        Self {
            thresholds,
            ..Self::default()
        }
    }

    /// The thresholds it judges by.
    pub fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// History slots a store needs for these rules to judge it at `period`: the stall
    /// window or the hang sign's, and one more (at most the panes' ten minutes, which is all any store keeps).
    /// Counters are judged from their change windows, which every store keeps whole.
    pub fn history_slots(&self, period: crate::model::units::Period) -> usize {
        samples_in(self.thresholds.stall_window_ms, period.millis())
            .max(samples_in(thresholds::HANG_WINDOW_MS, period.millis()))
            .saturating_add(1)
            .min(crate::store::HISTORY_SLOTS)
    }

    /// Run every rule over `store`; findings sorted worst first, then by subject. Findings
    /// whose rule stopped firing less than `clear_after_ms` ago are still listed.
    pub fn evaluate(&mut self, store: &ClusterStore) -> Vec<Finding> {
        let now = store.now_ms;
        let t = self.thresholds;
        let mut raw = Vec::new();
        {
            let ctx = Ctx {
                thresholds: t,
                stall_samples: samples_in(t.stall_window_ms, store.period.millis()),
                held: &self.held,
                previous_ms: self.previous_ms,
                period_ms: store.period.millis(),
            };
            for node in &store.nodes {
                gpu::node_rules(node, &ctx, &mut raw);
            }
            gpu::power_cap_summary(store, &ctx, &mut raw);
            fabric::fabric_rules(store, COUNTER_WINDOW_MS, &mut raw);
            work::service_rules(store, &ctx, &mut raw);
        }
        work::phase_rules(store, &mut self.phase_cache, &mut raw);
        work::search_rules(store, &mut raw);

        let mut held = HashMap::with_capacity(raw.len() + self.held.len());
        for r in raw {
            let key = r.key();
            let since = match (r.event_ms, self.held.get(&key)) {
                (Some(at), _) => at,
                (None, Some(prev)) => prev.since_ms,
                (None, None) => now,
            };
            held.insert(
                key,
                Finding {
                    severity: r.severity,
                    rule: r.rule,
                    node: r.node,
                    gpu: r.gpu,
                    phase: r.phase,
                    since_ms: since,
                    last_seen_ms: now,
                    clearing: false,
                    why: r.why,
                    next: r.next,
                },
            );
        }
        // Time hysteresis: a finding that stopped firing stays a while, so it does not flap.
        for (key, f) in self.held.drain() {
            if held.contains_key(&key) || FOLLOWS_STATE.contains(&f.rule) {
                continue;
            }
            if now.saturating_sub(f.last_seen_ms) < t.clear_after_ms {
                held.insert(
                    key,
                    Finding {
                        clearing: true,
                        ..f
                    },
                );
            }
        }
        self.held = held;
        self.previous_ms = Some(now);
        let mut findings: Vec<Finding> = self.held.values().cloned().collect();
        findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then_with(|| a.node.cmp(&b.node))
                .then_with(|| a.gpu.cmp(&b.gpu))
                .then_with(|| a.phase.cmp(&b.phase))
                .then_with(|| a.rule.cmp(b.rule))
        });
        findings
    }
}

#[cfg(test)]
mod tests {
    /// Shared helpers for the rule tests: a simulated cluster played into a store and judged.
    pub(super) mod kit {
        use crate::model::SourceEvent;
        use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
        use crate::store::ClusterStore;
        use crate::triage::{Finding, Triage};

        /// Findings after playing `config` to simulated second `s`, judged every second as the console
        /// does (so hysteresis and "since" see the whole history).
        pub fn findings_at(config: SimConfig, s: u64) -> Vec<Finding> {
            let mut sim = SimCluster::new(config);
            let mut store = ClusterStore::new();
            let mut triage = Triage::new();
            let mut out = Vec::new();
            for sec in 0..=s {
                for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
                    store.ingest(e);
                }
                out = triage.evaluate(&store);
            }
            out
        }

        /// Findings over a fault-free simulated cluster of `nodes` nodes run to `secs`, after the
        /// `before` events; each simulated event passes through `edit` first (how a test puts a
        /// real-world condition into the stream).
        pub fn findings_after(
            nodes: usize,
            secs: u64,
            before: Vec<SourceEvent>,
            mut edit: impl FnMut(&mut SourceEvent),
        ) -> Vec<Finding> {
            let mut config = SimConfig::demo(1);
            config.faults.clear();
            config.nodes = nodes;
            let mut sim = SimCluster::new(config);
            let mut store = ClusterStore::new();
            for e in before {
                store.ingest(e);
            }
            for mut e in sim.advance_to(SIM_EPOCH_MS + secs * 1000) {
                edit(&mut e);
                store.ingest(e);
            }
            Triage::new().evaluate(&store)
        }

        /// Findings of one node `n1` of eight GPUs, a frame a second for `secs` seconds (each
        /// GPU's sample from `sample(second, gpu)`), after the `before` events, judged every
        /// second as the console does.
        pub fn judged_each_second(
            secs: u64,
            before: Vec<SourceEvent>,
            sample: impl Fn(u64, u32) -> crate::model::GpuSample,
        ) -> Vec<Finding> {
            let mut store = ClusterStore::with_period(
                crate::model::units::Period::from_millis(1000).expect("period"),
            );
            for e in before {
                store.ingest(e);
            }
            let mut triage = Triage::new();
            let mut out = Vec::new();
            for s in 1..=secs {
                let at_ms = s * 1000;
                store.ingest(SourceEvent::Frame(crate::model::NodeFrame {
                    node: "n1".into(),
                    at_ms,
                    gpus: (0..8).map(|g| sample(s, g)).collect(),
                    nics: Vec::new(),
                    netdevs: Vec::new(),
                }));
                store.ingest(SourceEvent::Clock { at_ms });
                out = triage.evaluate(&store);
            }
            out
        }

        /// Whether a finding of `rule` about `subject` is among `findings`.
        pub fn has(findings: &[Finding], rule: &str, subject: &str) -> bool {
            findings
                .iter()
                .any(|f| f.rule == rule && f.subject() == subject)
        }
    }

    use super::*;
    use crate::model::SourceEvent;
    use crate::model::xid::XID_UNKNOWN_NEXT;
    use crate::sim::{FaultKind, SIM_EPOCH_MS, SimCluster, SimConfig, SimLoad};
    use kit::{findings_after, findings_at, has};

    #[test]
    fn thresholds_decide_the_aistor_rule() {
        let mut store = ClusterStore::with_period(
            crate::model::units::Period::from_millis(1000).expect("period"),
        );
        store.ingest(SourceEvent::Probe(crate::model::probe::ProbeWindow {
            at_ms: 1_000,
            endpoint: "http://aistor:9000".into(),
            ttfb_p50_ms: 20.0,
            ttfb_p99_ms: 150.0,
            total_p99_ms: 900.0,
            throughput_bytes_per_sec: 1e9,
            requests: 100,
            errors: 0,
            concurrency: Some(16),
        }));
        assert!(!has(
            &Triage::new().evaluate(&store),
            "aistor-latency",
            "AIStor"
        ));
        let strict = Thresholds {
            aistor_p99_ttfb_ms: 100.0,
            ..Thresholds::default()
        };
        let findings = Triage::with_thresholds(strict).evaluate(&store);
        let f = findings
            .iter()
            .find(|f| f.rule == "aistor-latency")
            .expect("a stricter gate fires");
        assert!(f.why.contains("over 100 ms"), "{}", f.why);
    }

    /// S2 as a plan runs it: the probe on each node at once, one window a second each.
    fn s2_windows(store: &mut ClusterStore, seconds: std::ops::RangeInclusive<u64>, slow: &str) {
        use crate::model::phase::{PhaseEvent, PhaseMetric};
        for s in seconds {
            for node in ["gpu01", "gpu02", "gpu03"] {
                let (p99, errors) = if node == slow { (640.0, 2) } else { (48.0, 0) };
                store.ingest(SourceEvent::Phase(PhaseEvent::Metric {
                    phase: "S2".into(),
                    at_ms: s * 1000,
                    metric: PhaseMetric::Storage {
                        node: node.into(),
                        window: crate::model::probe::ProbeWindow {
                            at_ms: s * 1000,
                            endpoint: "http://aistor:9000".into(),
                            ttfb_p50_ms: 12.0,
                            ttfb_p99_ms: p99,
                            total_p99_ms: p99 + 200.0,
                            throughput_bytes_per_sec: if node == slow { 0.4e9 } else { 4.1e9 },
                            requests: 160,
                            errors,
                            concurrency: Some(16),
                        },
                    },
                }));
            }
            store.ingest(SourceEvent::Clock { at_ms: s * 1000 });
        }
    }

    #[test]
    fn a_node_slow_on_storage_is_named_and_its_peers_are_not() {
        use crate::model::phase::PhaseEvent;
        let mut store = ClusterStore::with_period(
            crate::model::units::Period::from_millis(1000).expect("period"),
        );
        store.ingest(SourceEvent::Phase(PhaseEvent::Started {
            phase: "S2".into(),
            at_ms: 1000,
        }));
        s2_windows(&mut store, 1..=5, "gpu03");
        let mut triage = Triage::new();
        let findings = triage.evaluate(&store);
        let latency: Vec<_> = findings
            .iter()
            .filter(|f| f.rule == "aistor-latency")
            .collect();
        assert_eq!(latency.len(), 1, "{findings:?}");
        assert_eq!(latency[0].node.as_deref(), Some("gpu03"));
        assert!(latency[0].why.contains("640 ms"), "{}", latency[0].why);
        let errors: Vec<_> = findings
            .iter()
            .filter(|f| f.rule == "aistor-errors")
            .collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].node.as_deref(), Some("gpu03"));
        assert!(
            errors[0].why.contains("10 since the phase started"),
            "{}",
            errors[0].why
        );
        // The pane's order: the slow node first, then by throughput.
        let order: Vec<&str> = store
            .storage
            .nodes_worst_first(200.0)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(order[0], "gpu03");
        // The phase's probes end: their windows age out, and so do the findings.
        store.ingest(SourceEvent::Clock { at_ms: 30_000 });
        let later = triage.evaluate(&store);
        let later = triage
            .evaluate(&store)
            .into_iter()
            .chain(later)
            .collect::<Vec<_>>();
        assert!(
            !later
                .iter()
                .any(|f| f.rule.starts_with("aistor") && f.is_firing()),
            "{later:?}"
        );
    }

    #[test]
    fn every_xid_the_site_meets_has_its_own_playbook() {
        for code in [
            13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140,
        ] {
            let info = xid_info(code);
            assert_ne!(info.meaning, "see NVIDIA's Xid catalogue", "Xid {code}");
            assert_ne!(info.next, XID_UNKNOWN_NEXT, "Xid {code}");
        }
        // The hardware's own faults are critical; application-caused ones warn.
        for code in [48, 64, 74, 79, 95, 119, 140] {
            assert_eq!(xid_info(code).severity, Severity::Crit, "Xid {code}");
        }
        for code in [13, 31, 43, 45] {
            assert_eq!(xid_info(code).severity, Severity::Warn, "Xid {code}");
        }
        assert_eq!(xid_info(9999).severity, Severity::Crit);
    }

    #[test]
    fn no_faults_no_findings() {
        let mut config = SimConfig::demo(1);
        config.faults.clear();
        for s in [30, 125, 340] {
            let above_info: Vec<Finding> = findings_at(config.clone(), s)
                .into_iter()
                .filter(|f| f.severity > Severity::Info)
                .collect();
            assert_eq!(above_info, vec![], "at {s} s");
        }
    }

    #[test]
    fn each_fault_fires_its_rule() {
        let only = |k: FaultKind| {
            let mut c = SimConfig::demo(1);
            c.faults = vec![crate::sim::Fault::scheduled(k)];
            c
        };
        assert!(has(
            &findings_at(only(FaultKind::Thermal), 35),
            "throttling",
            "node03 GPU5"
        ));
        let crc = findings_at(only(FaultKind::NvlinkCrc), 70);
        assert!(has(&crc, "nvlink-errors", "node02 GPU1"));
        // The finding names the link the errors are on (the simulator puts GPU1's on link 8).
        let why = crc
            .iter()
            .find(|f| f.rule == "nvlink-errors")
            .map(|f| f.why.clone())
            .unwrap_or_default();
        assert!(
            why.contains(&format!(
                "on link {} (CRC +",
                crate::sim::sim_faulty_link(1)
            )),
            "{why}"
        );
        let stall = findings_at(only(FaultKind::Stall), 125);
        assert!(has(&stall, "stalled", "node07 GPU3"), "{stall:?}");
        assert_eq!(stall.iter().filter(|f| f.rule == "stalled").count(), 1);
        let xid = findings_at(only(FaultKind::Xid79), 175);
        assert!(has(&xid, "xid", "node11 GPU0") && has(&xid, "gpu-lost", "node11 GPU0"));
        assert!(has(
            &findings_at(only(FaultKind::AistorP99), 335),
            "aistor-latency",
            "AIStor"
        ));
        assert!(has(
            &findings_at(only(FaultKind::LoaderWait), 350),
            "dataloader-wait",
            "dataloader"
        ));
        // The faults outside the demo's set.
        let hang = findings_at(only(FaultKind::Hang), 175);
        assert!(has(&hang, "busy-idle", "node04 GPU2"), "{hang:?}");
        assert!(!has(&hang, "stalled", "node04 GPU2"));
        let ecc = findings_at(only(FaultKind::Ecc), 95);
        for rule in ["ecc-uncorrected", "remap-pending", "xid"] {
            assert!(has(&ecc, rule, "node06 GPU6"), "{rule}: {ecc:?}");
        }
        let xid = ecc.iter().find(|f| f.rule == "xid").expect("xid");
        assert_eq!(
            xid.since_ms,
            SIM_EPOCH_MS + 90_000,
            "since the event itself"
        );
        assert!(has(
            &findings_at(only(FaultKind::PcieReplay), 35),
            "pcie-replay",
            "node08 GPU4"
        ));
        let slow = findings_at(only(FaultKind::SlowClock), 30);
        assert!(has(&slow, "clock-low", "node10 GPU7"), "{slow:?}");
        // T2 reports its GEMM figures as it ends (51 s): the slow GPU is its straggler.
        let after_t2 = findings_at(only(FaultKind::SlowClock), 53);
        let s = after_t2
            .iter()
            .find(|f| f.rule == "straggler")
            .expect("straggler");
        assert_eq!(
            (s.subject(), s.phase.as_deref()),
            ("node10 GPU7".into(), Some("T2"))
        );
    }

    /// Everything above info that was ever listed while `config` played for `secs` seconds.
    fn worst_seen(config: SimConfig, secs: u64, load: Option<SimLoad>) -> Vec<Finding> {
        let mut sim = SimCluster::new(config.clone());
        let mut store = ClusterStore::new();
        let mut triage = Triage::new();
        let mut seen: Vec<Finding> = Vec::new();
        for n in 0..config.nodes {
            store.ingest(SourceEvent::Hello(sim.hello(n)));
        }
        for s in 0..=secs {
            let at_ms = SIM_EPOCH_MS + s * 1000;
            match load {
                Some(load) => {
                    for n in 0..config.nodes {
                        store.ingest(SourceEvent::Frame(sim.node_frame(n, s, load)));
                    }
                    store.ingest(SourceEvent::Clock { at_ms });
                }
                None => {
                    for e in sim.advance_to(at_ms) {
                        store.ingest(e);
                    }
                }
            }
            for f in triage.evaluate(&store) {
                if f.severity > Severity::Info && !seen.iter().any(|x| x.rule == f.rule) {
                    seen.push(f);
                }
            }
        }
        seen
    }

    #[test]
    fn a_healthy_cluster_under_full_load_for_30_minutes_cries_no_wolf() {
        let mut config = SimConfig::demo(7);
        config.faults.clear();
        assert_eq!(
            worst_seen(config.clone(), 1800, Some(SimLoad::Full)),
            vec![]
        );
        // The whole plan, then idle, on the same clock.
        assert_eq!(worst_seen(config, 1800, None), vec![]);
    }

    /// A store fed AIStor probe windows with these p99s, one a second, judged after each.
    fn aistor_series(p99s: &[f64]) -> Vec<Vec<Finding>> {
        let mut store = ClusterStore::with_period(
            crate::model::units::Period::from_millis(1000).expect("period"),
        );
        let mut triage = Triage::new();
        p99s.iter()
            .enumerate()
            .map(|(i, p99)| {
                let at_ms = 1_000 * (i as u64 + 1);
                store.ingest(SourceEvent::Probe(crate::model::probe::ProbeWindow {
                    at_ms,
                    endpoint: "http://aistor:9000".into(),
                    ttfb_p50_ms: 20.0,
                    ttfb_p99_ms: *p99,
                    total_p99_ms: 900.0,
                    throughput_bytes_per_sec: 1e9,
                    requests: 100,
                    errors: 0,
                    concurrency: Some(16),
                }));
                store.ingest(SourceEvent::Clock { at_ms });
                triage.evaluate(&store)
            })
            .collect()
    }

    #[test]
    fn a_finding_near_its_threshold_does_not_flap() {
        // Over 200 ms once, then hovering around the gate: listed throughout, one since.
        let evals = aistor_series(&[250.0, 190.0, 210.0, 170.0, 230.0, 185.0, 195.0]);
        let listed: Vec<_> = evals
            .iter()
            .map(|f| f.iter().find(|x| x.rule == "aistor-latency"))
            .collect();
        assert!(listed.iter().all(Option::is_some), "{listed:?}");
        let since: Vec<_> = listed.iter().flatten().map(|f| f.since_ms).collect();
        assert!(since.iter().all(|s| *s == 1_000), "{since:?}");
        // Under 80 % of the gate it stops firing, but stays listed (as clearing) for 5 s.
        let evals = aistor_series(&[250.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0]);
        let firing: Vec<Option<bool>> = evals
            .iter()
            .map(|f| {
                f.iter()
                    .find(|x| x.rule == "aistor-latency")
                    .map(Finding::is_firing)
            })
            .collect();
        assert_eq!(
            firing,
            [
                Some(true),
                Some(false),
                Some(false),
                Some(false),
                Some(false),
                None,
                None
            ],
            "listed while clearing, then gone: it does not linger"
        );
    }

    #[test]
    fn a_stall_with_a_blip_stays_one_finding() {
        let mut c = SimConfig::demo(1);
        c.faults.retain(|f| f.kind == FaultKind::Stall);
        let mut sim = SimCluster::new(c);
        let mut store = ClusterStore::new();
        let mut triage = Triage::new();
        let mut since = Vec::new();
        for sec in 0..=140 {
            for mut e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
                // One busy sample every 6 s on the stalled GPU: a rank that wakes briefly.
                if let SourceEvent::Frame(f) = &mut e
                    && f.node == "node07"
                    && sec > 125
                    && sec % 6 == 0
                {
                    f.gpus[3].utilization_pct = Some(90.0);
                }
                store.ingest(e);
            }
            let f = triage.evaluate(&store);
            if sec >= 120 {
                since.push(
                    f.iter()
                        .find(|x| x.rule == "stalled" && x.subject() == "node07 GPU3")
                        .map(|x| x.since_ms),
                );
            }
        }
        assert!(
            since.iter().all(|s| *s == Some(SIM_EPOCH_MS + 119_000)),
            "{since:?}"
        );
    }

    #[test]
    fn a_node_that_comes_back_is_cleared_at_once() {
        let mut store = ClusterStore::with_period(
            crate::model::units::Period::from_millis(1000).expect("period"),
        );
        let mut triage = Triage::new();
        store.ingest(SourceEvent::Link {
            node: "n1".into(),
            at_ms: 1_000,
            link: crate::model::NodeLink::Unreachable("timeout".into()),
        });
        assert!(has(&triage.evaluate(&store), "unreachable", "n1"));
        store.ingest(SourceEvent::Link {
            node: "n1".into(),
            at_ms: 2_000,
            link: crate::model::NodeLink::Connecting,
        });
        assert!(!has(&triage.evaluate(&store), "unreachable", "n1"));
    }

    #[test]
    fn missing_gpus_are_counted() {
        let f = findings_after(
            2,
            2,
            vec![
                SourceEvent::Expect {
                    node: "node01".into(),
                    gpus: 8,
                    nic_rate_gbps: None,
                },
                SourceEvent::Expect {
                    node: "node02".into(),
                    gpus: 8,
                    nic_rate_gbps: Some(800.0),
                },
            ],
            |e| {
                if let SourceEvent::Hello(h) = e
                    && h.node == "node02"
                {
                    h.gpus.truncate(7);
                }
            },
        );
        let missing: Vec<_> = f.iter().filter(|x| x.rule == "gpus-missing").collect();
        assert_eq!(missing.len(), 1, "{f:?}");
        assert_eq!(missing[0].why, "7 of 8 GPUs answer");
        // node02's inventory expects 800G ports: its 400G ports are slow, node01's are not.
        let slow: Vec<_> = f.iter().filter(|x| x.rule == "nic-slow").collect();
        assert_eq!(slow.len(), crate::sim::NICS_PER_NODE, "{slow:?}");
        assert!(slow.iter().all(|x| x.node.as_deref() == Some("node02")));
        assert!(slow[0].why.ends_with("the inventory expects 800 Gb/s"));
    }

    #[test]
    fn a_store_for_triage_alone_keeps_its_longest_window_and_one_more() {
        let second = crate::model::units::Period::SECOND;
        // The hang sign's 100 s (sichek's minute and four re-checks) is the longest.
        assert_eq!(Triage::default().history_slots(second), 101);
        let long = Thresholds {
            stall_window_ms: 200_000,
            ..Thresholds::default()
        };
        assert_eq!(Triage::with_thresholds(long).history_slots(second), 201);
        let hour = Thresholds {
            stall_window_ms: 3_600_000,
            ..Thresholds::default()
        };
        let slots = Triage::with_thresholds(hour).history_slots(second);
        assert_eq!(
            slots,
            crate::store::HISTORY_SLOTS,
            "never more than any store keeps"
        );
    }

    #[test]
    fn a_stall_needs_the_whole_window() {
        let mut c = SimConfig::demo(1);
        c.faults.retain(|f| f.kind == FaultKind::Stall);
        // Stall begins at 110 s; at 115 s it is 6 samples old: not yet a finding.
        assert!(!has(&findings_at(c.clone(), 115), "stalled", "node07 GPU3"));
        let f = findings_at(c, 130);
        let stall = f.iter().find(|f| f.rule == "stalled").expect("stall");
        assert_eq!(stall.since_ms, SIM_EPOCH_MS + 119_000);
        assert_eq!(stall.severity, Severity::Crit);
    }

    /// A counter reading no NVLink could produce (a sentinel near 2^64 after a real value) is
    /// n/a with its reason, never an `nvlink-errors` finding that would fail T3; a real rise
    /// beside it is still evidence.
    #[test]
    fn an_nvlink_counter_jump_no_link_could_make_is_no_evidence() {
        let mut tick = 0u64;
        let f = findings_after(1, 20, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                tick += 1;
                let g = &mut f.gpus[1];
                g.nvlink_crc_errors = Some(if tick < 15 { 7 } else { u64::MAX - 1 });
            }
        });
        assert!(!f.iter().any(|x| x.rule == "nvlink-errors"), "{f:?}");
        let n = f
            .iter()
            .find(|x| x.rule == "nvlink-counter-implausible")
            .expect("said as n/a");
        assert_eq!(n.severity, Severity::Info);
        assert_eq!(n.gpu, Some(1));
        assert!(n.why.contains("not a reading (n/a)"), "{}", n.why);
        // A real rise of a few hundred beside it is a bad link still.
        let mut tick = 0u64;
        let f = findings_after(1, 20, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                tick += 1;
                f.gpus[1].nvlink_crc_errors = Some(if tick < 15 { 7 } else { u64::MAX - 1 });
                f.gpus[1].nvlink_replay_errors = Some(tick * 40);
            }
        });
        let e = f
            .iter()
            .find(|x| x.rule == "nvlink-errors")
            .expect("the replay rise is evidence");
        assert!(
            e.why.contains("replay +") && !e.why.contains("CRC"),
            "{}",
            e.why
        );
    }

    /// A plan's `no-finding` gate names a rule from `model::finding::RULES`: the list must be
    /// exactly the rules this module's code raises, or a gate could name one that never fires.
    #[test]
    fn the_rule_list_is_every_rule_triage_raises() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/triage");
        let call = regex::Regex::new(r#"raw\(\s*[^,]+,\s*"([a-z0-9-]+)""#).expect("re");
        let mut raised = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&dir).expect("src/triage") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("read");
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for c in call.captures_iter(code) {
                raised.insert(c[1].to_string());
            }
        }
        let listed: std::collections::BTreeSet<String> = crate::model::finding::RULES
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(raised, listed);
    }
}
