//! What the telemetry beside a run saw while a phase ran, as the runner and the gates ask it:
//! Xid events per GPU, the triage findings that came up, and which nodes sent no telemetry at
//! all (so a clean Xid count is never claimed for a node that was not watched). The log that
//! answers (`triage::telemetry_log::TelemetryLog`) sits a floor above, with the store and
//! triage it keeps.

use std::collections::BTreeMap;

use crate::model::SourceEvent;
use crate::model::finding::Finding;
use crate::model::{NodeHello, UnixMillis};

/// The telemetry beside a run: fed the events the console gets, asked for a phase's window.
pub trait TelemetryWatch: Send + Sync {
    /// Take in one event seen at `at_ms`; the findings that are up now, when it judged.
    fn observe_at(&self, ev: &SourceEvent, at_ms: UnixMillis) -> Option<Vec<Finding>>;
    /// What `nodes` showed between `from_ms` and `to_ms`.
    fn window(&self, nodes: &[String], from_ms: UnixMillis, to_ms: UnixMillis) -> Window;
    /// Each node's newest hello (for the record's bill of materials).
    fn hellos(&self) -> BTreeMap<String, NodeHello>;
}

/// One Xid as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidSeen {
    /// Node.
    pub node: String,
    /// GPU index.
    pub gpu: u32,
    /// Xid code.
    pub code: u32,
    /// When it arrived here.
    pub at_ms: UnixMillis,
}

/// One finding as it first came up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingSeen {
    /// When it first fired.
    pub at_ms: UnixMillis,
    /// Node it is about (`None`: AIStor, the cluster).
    pub node: Option<String>,
    /// The triage rule that raised it (`nvlink-errors`).
    pub rule: String,
    /// `warn` or `CRIT` and the rule, subject and why, in one line.
    pub text: String,
    /// Critical.
    pub crit: bool,
}

/// The telemetry of one window, for the nodes a phase ran on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Xid events that arrived in the window.
    pub xids: Vec<XidSeen>,
    /// Findings that came up in the window.
    pub findings: Vec<FindingSeen>,
    /// Nodes with no frame in the window.
    pub silent: Vec<String>,
    /// Nodes that sent frames but went without telemetry past the stale limit for part of the
    /// window: (node, ms without, the window's ms). Nothing is claimed for them either.
    pub stale: Vec<(String, u64, u64)>,
    /// Xids that arrived in the window but were not kept (a node's flood past its bound): the
    /// kept ones still hold every distinct code.
    pub xids_dropped: u64,
}
