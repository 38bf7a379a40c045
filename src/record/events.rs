//! The run's own events beside the phase events in `events.jsonl`: findings raised and cleared,
//! node state changes, and what the operator did. Same file, same `event` tag, other names, so
//! one reader walks the whole run in order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{NodeLink, UnixMillis};
use crate::triage::Finding;

/// A finding came up or went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It fired for the first time (or again after it cleared).
    Raised,
    /// Triage dropped it.
    Cleared,
}

/// One event of the run that is not a phase's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RecordEvent {
    /// A triage finding raised or cleared.
    Finding {
        /// When.
        at_ms: UnixMillis,
        /// Raised or cleared.
        change: Change,
        /// `info`, `warn` or `crit`.
        severity: String,
        /// The rule.
        rule: String,
        /// "node07 GPU3", "AIStor", …
        subject: String,
        /// Phase whose figures it judged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
        /// The evidence when it was raised (or last seen).
        why: String,
        /// The next step.
        next: String,
    },
    /// A node's connection state changed.
    NodeState {
        /// When.
        at_ms: UnixMillis,
        /// Node.
        node: String,
        /// `connecting`, `streaming`, `stale`, `unreachable`.
        state: String,
        /// Why (the ssh reason when unreachable).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// What the inventory told the console to expect of a node (its GPUs, its NIC rate), so a
    /// replay is told the same.
    Expect {
        /// When.
        at_ms: UnixMillis,
        /// Node.
        node: String,
        /// GPUs expected.
        gpus: u32,
        /// Rate its RDMA ports should train at, Gb/s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nic_rate_gbps: Option<f32>,
    },
    /// One window of the AIStor probe the console showed (outside a phase's own metrics).
    Probe {
        /// The window.
        window: crate::model::probe::ProbeWindow,
    },
    /// A fault search as the console showed it (after a round, and at its end).
    Search {
        /// When.
        at_ms: UnixMillis,
        /// The search as it stood.
        search: Box<crate::model::search::SearchSnapshot>,
    },
    /// Lines of a node's output written to its log only (`record::logs` says which
    /// `events.jsonl` keeps), counted since the last such event of that node and phase.
    Held {
        /// When it was said.
        at_ms: UnixMillis,
        /// The phase.
        phase: String,
        /// The node.
        node: String,
        /// How many lines.
        lines: u64,
    },
    /// The operator did something: started or aborted a phase, quit, detached.
    Operator {
        /// When.
        at_ms: UnixMillis,
        /// What, e.g. `abort`.
        action: String,
        /// The phase it was about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
    },
}

type FindingKey = (String, String, Option<String>);

/// Turns successive finding lists into raised/cleared events, and link changes into node events.
#[derive(Debug, Default)]
pub struct ChangeLog {
    open: BTreeMap<FindingKey, Finding>,
    links: BTreeMap<String, String>,
}

impl ChangeLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events between the previous list and `now` (evaluated at `at_ms`).
    pub fn findings(&mut self, at_ms: UnixMillis, now: &[Finding]) -> Vec<RecordEvent> {
        let mut out = Vec::new();
        let mut open = BTreeMap::new();
        for f in now {
            let key = (f.rule.to_string(), f.subject(), f.phase.clone());
            if !self.open.contains_key(&key) {
                out.push(finding_event(at_ms, Change::Raised, f));
            }
            open.insert(key, f.clone());
        }
        for (key, f) in &self.open {
            if !open.contains_key(key) {
                out.push(finding_event(at_ms, Change::Cleared, f));
            }
        }
        self.open = open;
        out
    }

    /// A node event when `link` differs from what the node was.
    pub fn link(&mut self, at_ms: UnixMillis, node: &str, link: &NodeLink) -> Option<RecordEvent> {
        let (state, detail) = match link {
            NodeLink::Connecting => ("connecting", None),
            NodeLink::Streaming => ("streaming", None),
            NodeLink::Stale => ("stale", None),
            NodeLink::Unreachable(why) => ("unreachable", Some(why.clone())),
        };
        let label = format!("{state}{}", detail.as_deref().unwrap_or(""));
        if self.links.get(node) == Some(&label) {
            return None;
        }
        self.links.insert(node.to_string(), label);
        Some(RecordEvent::NodeState {
            at_ms,
            node: node.to_string(),
            state: state.to_string(),
            detail,
        })
    }
}

fn finding_event(at_ms: UnixMillis, change: Change, f: &Finding) -> RecordEvent {
    RecordEvent::Finding {
        at_ms,
        change,
        severity: format!("{:?}", f.severity).to_lowercase(),
        rule: f.rule.to_string(),
        subject: f.subject(),
        phase: f.phase.clone(),
        why: f.why.clone(),
        next: f.next.to_string(),
    }
}
