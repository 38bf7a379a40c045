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
use crate::store::ClusterStore;
use crate::triage::{Finding, Severity, Triage};

pub use crate::model::watch::{FindingSeen, Window, XidSeen};

const KEPT: usize = 4096;

struct Inner {
    store: ClusterStore,
    triage: Triage,
    xids: Vec<XidSeen>,
    frames: HashMap<String, Vec<UnixMillis>>,
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
                xids: Vec::new(),
                frames: HashMap::new(),
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
                let times = inner.frames.entry(f.node.clone()).or_default();
                if times.len() == KEPT {
                    times.remove(0);
                }
                times.push(at_ms);
                for gpu in &f.gpus {
                    for x in &gpu.xid_events {
                        if inner.xids.len() == KEPT {
                            inner.xids.remove(0);
                        }
                        inner.xids.push(XidSeen {
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
        Window {
            xids: g
                .xids
                .iter()
                .filter(|x| inside(x.at_ms) && nodes.contains(&x.node))
                .cloned()
                .collect(),
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
            silent: nodes
                .iter()
                .filter(|n| {
                    !g.frames
                        .get(*n)
                        .is_some_and(|t| t.iter().any(|t| inside(*t)))
                })
                .cloned()
                .collect(),
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
