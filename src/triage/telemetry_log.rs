//! What the telemetry saw while a phase ran, for its verdict and its record: Xid events per GPU,
//! the triage findings that came up (a stalled GPU, throttling, a NIC going down), and which
//! nodes sent no telemetry at all (so a clean Xid count is never claimed for a node that was
//! not watched). Fed by the same events the console gets; keeps its own store, as deep as its
//! triage's windows, and its own triage.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use crate::model::SourceEvent;
use crate::model::units::Period;
use crate::model::{UnixMillis, now_ms};
use crate::store::{ClusterStore, STALE_AFTER_PERIODS};
use crate::triage::watched::{Coverage, NodeXids};
use crate::triage::{Finding, Severity, Triage};

pub use crate::model::watch::{FindingSeen, Window, XidSeen};

const KEPT: usize = 4096;

/// A stretch without frames shorter than this (or the store's stale limit, or three of the
/// node's own intervals, whichever is longest) costs no evidence: an agent that is alive queues
/// its Xids and sends them with its next frame. A longer one is time nothing can be claimed
/// for.
const JUDGED_GAP_MS: u64 = 10_000;

struct Inner {
    store: ClusterStore,
    triage: Triage,
    /// Xids per node, each node bounded on its own (a storm on one keeps another's).
    xids: HashMap<String, NodeXids>,
    /// When each node's frames came.
    coverage: HashMap<String, Coverage>,
    /// How long without a frame makes a node stale (the store's limit).
    stale_ms: u64,
    findings: Vec<FindingSeen>,
    open: BTreeSet<(String, String)>,
    hellos: std::collections::BTreeMap<String, crate::model::NodeHello>,
}

/// Shared between the source that feeds it and the runner that asks it.
pub struct TelemetryLog {
    inner: Mutex<Inner>,
}

impl TelemetryLog {
    /// A log for telemetry sampled every `period`, judged by the default thresholds.
    pub fn new(period: Period) -> Self {
        Self::with_thresholds(period, crate::triage::Thresholds::default())
    }

    /// A log judged by `thresholds` (burnin.toml's `[triage]`).
    pub fn with_thresholds(period: Period, thresholds: crate::triage::Thresholds) -> Self {
        let triage = Triage::with_thresholds(thresholds);
        Self {
            inner: Mutex::new(Inner {
                // Only triage reads this store: its windows, not the panes' ten minutes.
                store: ClusterStore::with_history(period, triage.history_slots(period)),
                triage,
                xids: HashMap::new(),
                coverage: HashMap::new(),
                stale_ms: STALE_AFTER_PERIODS * period.millis(),
                findings: Vec::new(),
                open: BTreeSet::new(),
                hellos: std::collections::BTreeMap::new(),
            }),
        }
    }

    /// Take one event (stamped with the time it arrived here).
    pub fn observe(&self, ev: &SourceEvent) {
        self.observe_at(ev, now_ms());
    }

    /// Take one event stamped `at_ms` (a simulated run passes its own clock). Returns every
    /// current finding when the event was a clock tick and triage ran, for the run record.
    pub fn observe_at(&self, ev: &SourceEvent, at_ms: UnixMillis) -> Option<Vec<Finding>> {
        let Ok(mut g) = self.inner.lock() else {
            return None;
        };
        let inner = &mut *g;
        match ev {
            SourceEvent::Frame(f) => {
                let stale_ms = inner.stale_ms;
                inner
                    .coverage
                    .entry(f.node.clone())
                    .or_default()
                    .frame(at_ms, stale_ms.max(JUDGED_GAP_MS));
                for gpu in &f.gpus {
                    for x in &gpu.xid_events {
                        let kept = inner.xids.entry(f.node.clone()).or_default();
                        kept.push(XidSeen {
                            node: f.node.clone(),
                            gpu: gpu.index,
                            code: x.code,
                            at_ms,
                        });
                    }
                }
            }
            SourceEvent::Hello(h) => {
                inner.hellos.insert(h.node.clone(), h.clone());
            }
            SourceEvent::Phase(_) => return None,
            _ => {}
        }
        let is_clock = matches!(ev, SourceEvent::Clock { .. });
        inner.store.ingest(ev.clone());
        if is_clock {
            let found = inner.triage.evaluate(&inner.store);
            let mut now_open = BTreeSet::new();
            for f in found.iter().filter(|f| f.severity >= Severity::Warn) {
                let key = (f.rule.to_string(), f.subject());
                if !inner.open.contains(&key) {
                    if inner.findings.len() == KEPT {
                        inner.findings.remove(0);
                    }
                    inner.findings.push(FindingSeen {
                        at_ms,
                        node: f.node.clone(),
                        rule: f.rule.to_string(),
                        text: format!(
                            "{} {} {}: {}",
                            f.severity.label(),
                            f.rule,
                            f.subject(),
                            f.why
                        ),
                        crit: f.severity == Severity::Crit,
                    });
                }
                now_open.insert(key);
            }
            inner.open = now_open;
            return Some(found);
        }
        None
    }

    /// What each node said about itself (driver, GPUs, topology), newest per node.
    pub fn hellos(&self) -> std::collections::BTreeMap<String, crate::model::NodeHello> {
        self.inner
            .lock()
            .map(|g| g.hellos.clone())
            .unwrap_or_default()
    }

    /// What came up between `from_ms` and `to_ms` on `nodes`.
    pub fn window(&self, nodes: &[String], from_ms: UnixMillis, to_ms: UnixMillis) -> Window {
        let Ok(g) = self.inner.lock() else {
            return Window::default();
        };
        let inside = |t: UnixMillis| t >= from_ms && t <= to_ms;
        let mut silent = Vec::new();
        let mut stale = Vec::new();
        for n in nodes {
            match g
                .coverage
                .get(n)
                .and_then(|c| c.uncovered(from_ms, to_ms, g.stale_ms.max(JUDGED_GAP_MS)))
            {
                None => silent.push(n.clone()),
                Some(0) => {}
                Some(ms) => stale.push((n.clone(), ms, to_ms.saturating_sub(from_ms))),
            }
        }
        let mut xids: Vec<XidSeen> = nodes
            .iter()
            .filter_map(|n| g.xids.get(n))
            .flat_map(|x| x.within(from_ms, to_ms).cloned())
            .collect();
        xids.sort_by_key(|x| x.at_ms);
        Window {
            xids,
            xids_dropped: nodes
                .iter()
                .filter_map(|n| g.xids.get(n))
                .map(|x| x.dropped_within(from_ms, to_ms))
                .sum(),
            findings: {
                // A finding that comes and goes (a node reconnecting) is listed once.
                let mut seen = BTreeSet::new();
                g.findings
                    .iter()
                    .filter(|f| {
                        inside(f.at_ms)
                            && f.node.as_ref().is_none_or(|n| nodes.contains(n))
                            && seen.insert(f.text.clone())
                    })
                    .cloned()
                    .collect()
            },
            silent,
            stale,
        }
    }
}

impl std::fmt::Debug for TelemetryLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TelemetryLog")
    }
}

impl crate::model::watch::TelemetryWatch for TelemetryLog {
    fn observe_at(&self, ev: &SourceEvent, at_ms: UnixMillis) -> Option<Vec<Finding>> {
        TelemetryLog::observe_at(self, ev, at_ms)
    }

    fn window(&self, nodes: &[String], from_ms: UnixMillis, to_ms: UnixMillis) -> Window {
        TelemetryLog::window(self, nodes, from_ms, to_ms)
    }

    fn hellos(&self) -> std::collections::BTreeMap<String, crate::model::NodeHello> {
        TelemetryLog::hellos(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSample, NodeFrame, XidEvent};

    fn frame(node: &str, at_ms: UnixMillis, xids: &[u32]) -> SourceEvent {
        SourceEvent::Frame(NodeFrame {
            node: node.into(),
            at_ms,
            gpus: vec![GpuSample {
                index: 0,
                xid_events: xids.iter().map(|&code| XidEvent { code, at_ms }).collect(),
                ..GpuSample::default()
            }],
            nics: Vec::new(),
            netdevs: Vec::new(),
        })
    }

    /// Issue 41, case 2: node02's Xid storm filled the one shared buffer and node01's Xid 79
    /// was gone, so `no-xid` passed. Each node keeps its own.
    #[test]
    fn a_storm_on_one_node_keeps_the_xid_of_another() {
        let log = TelemetryLog::new(Period::from_millis(1000).expect("a period"));
        let nodes = ["node01".to_string(), "node02".to_string()];
        for s in 0..20u64 {
            let at = 1_000_000 + s * 1000;
            let codes: &[u32] = if s == 2 { &[79] } else { &[] };
            log.observe_at(&frame("node01", at, codes), at);
            log.observe_at(&frame("node02", at, &[13; 5000]), at);
        }
        let w = log.window(&nodes, 1_000_000, 1_019_000);
        assert!(
            w.xids.iter().any(|x| x.node == "node01" && x.code == 79),
            "{} kept",
            w.xids.len()
        );
        assert_eq!(w.xids.len() as u64 + w.xids_dropped, 100_001);
        assert!(w.silent.is_empty() && w.stale.is_empty(), "{w:?}");
    }

    /// Issue 41, case 1: an agent that hangs after 3 s is stale for the rest of the phase;
    /// the window says for how long.
    #[test]
    fn a_node_that_went_quiet_is_stale_for_the_rest_of_the_window() {
        let log = TelemetryLog::new(Period::from_millis(1000).expect("a period"));
        for s in 0..=31u64 {
            let at = 2_000_000 + s * 1000;
            log.observe_at(&frame("node01", at, &[]), at);
            if s <= 3 {
                log.observe_at(&frame("node03", at, &[]), at);
            }
        }
        let nodes = ["node01".to_string(), "node03".to_string()];
        let w = log.window(&nodes, 2_000_000, 2_031_000);
        assert_eq!(w.stale, [("node03".to_string(), 28_000, 31_000)]);
        assert!(w.silent.is_empty());
    }
}
