//! The storage probe's windows and the dataloader's steps, as the panes read them.

use super::*;

/// The AIStor/S3 probe's windows.
#[derive(Debug, Clone)]
pub struct StorageView {
    /// The newest window.
    pub latest: Option<ProbeWindow>,
    /// TTFB p50, ms.
    pub ttfb_p50_ms: History,
    /// TTFB p99, ms.
    pub ttfb_p99_ms: History,
    /// Throughput, bytes/s.
    pub throughput: History,
    /// Requests since the console started.
    pub requests_total: u64,
    /// Errors since the console started.
    pub errors_total: u64,
    /// Phase whose probe the view follows (`None`: a probe outside the plan, or the simulator).
    pub phase: Option<String>,
    /// Node whose probe the view follows.
    pub node: Option<String>,
    /// Every node's probe in the followed phase (a plan phase runs it on each node), so the
    /// slow one can be named. At most [`MAX_STORAGE_NODES`].
    pub nodes: BTreeMap<String, NodeStorage>,
}

/// Most nodes whose probes the storage view keeps (the inventory's limit).
pub const MAX_STORAGE_NODES: usize = crate::config::inventory::MAX_NODES;

/// One node's storage probe in the followed phase.
#[derive(Debug, Clone)]
pub struct NodeStorage {
    /// Its newest window.
    pub latest: ProbeWindow,
    /// GETs completed since the phase started.
    pub requests_total: u64,
    /// GETs failed since the phase started.
    pub failed_total: u64,
}

impl NodeStorage {
    /// Whether its newest window is over `gate_ms` at p99 TTFB, or failed GETs.
    pub fn in_trouble(&self, gate_ms: f64) -> bool {
        self.latest.ttfb_p99_ms > gate_ms || self.latest.errors > 0
    }
}

impl StorageView {
    /// The phase's nodes, worst first: over the p99 gate (highest first), then with failed
    /// GETs (most first), then the slowest throughput. A window with no completed GET (NaN
    /// latencies) is worst of all: the store stopped answering that node.
    pub fn nodes_worst_first(&self, gate_ms: f64) -> Vec<(&str, &NodeStorage)> {
        let mut rows: Vec<(&str, &NodeStorage)> =
            self.nodes.iter().map(|(n, s)| (n.as_str(), s)).collect();
        let badness = |s: &NodeStorage| {
            let p99 = s.latest.ttfb_p99_ms;
            let over = if p99.is_nan() {
                f64::INFINITY
            } else if p99 > gate_ms {
                p99
            } else {
                0.0
            };
            (over, s.latest.errors, -s.latest.throughput_bytes_per_sec)
        };
        rows.sort_by(|a, b| {
            let (ao, ae, at) = badness(a.1);
            let (bo, be, bt) = badness(b.1);
            bo.total_cmp(&ao)
                .then(be.cmp(&ae))
                .then(bt.total_cmp(&at))
                .then(a.0.cmp(b.0))
        });
        rows
    }

    /// A node's window of the followed phase.
    pub(super) fn ingest_node(&mut self, node: String, window: &ProbeWindow) {
        if !self.nodes.contains_key(&node) && self.nodes.len() >= MAX_STORAGE_NODES {
            return;
        }
        let entry = self.nodes.entry(node).or_insert_with(|| NodeStorage {
            latest: window.clone(),
            requests_total: 0,
            failed_total: 0,
        });
        entry.requests_total = entry.requests_total.saturating_add(window.requests);
        entry.failed_total = entry.failed_total.saturating_add(window.errors);
        entry.latest = window.clone();
    }

    /// Takes one window.
    pub fn ingest(&mut self, window: ProbeWindow) {
        self.ttfb_p50_ms
            .push(window.at_ms, Some(window.ttfb_p50_ms));
        self.ttfb_p99_ms
            .push(window.at_ms, Some(window.ttfb_p99_ms));
        self.throughput
            .push(window.at_ms, Some(window.throughput_bytes_per_sec));
        self.requests_total += window.requests;
        self.errors_total += window.errors;
        self.latest = Some(window);
    }
}

/// Dataloader figures from training steps.
#[derive(Debug, Clone)]
pub struct LoaderView {
    /// Phase the steps came from.
    pub phase: Option<String>,
    /// Node whose job the view follows (`None`: a single job, as in the simulator).
    pub node: Option<String>,
    /// Data wait per step, ms (one slot per step).
    pub wait_ms: History,
    /// Step time per step, ms.
    pub step_ms: History,
    /// Newest step number.
    pub last_step: Option<u64>,
    /// Time to first batch of the newest job.
    pub first_batch_ms: Option<f64>,
    /// Newest tokens/s.
    pub tokens_per_sec: Option<f64>,
    /// Newest loss.
    pub loss: Option<f64>,
}

/// Steps the dataloader share is computed over.
pub const LOADER_WINDOW_STEPS: usize = 20;

impl LoaderView {
    pub(super) fn reset(&mut self, phase: String) {
        self.wait_ms = History::new(Period::MILLISECOND, HISTORY_SLOTS);
        self.step_ms = History::new(Period::MILLISECOND, HISTORY_SLOTS);
        self.last_step = None;
        self.first_batch_ms = None;
        self.tokens_per_sec = None;
        self.loss = None;
        self.node = None;
        self.phase = Some(phase);
    }

    /// Share of step time spent waiting for data over the last [`LOADER_WINDOW_STEPS`] steps.
    pub fn wait_share(&self) -> Option<f64> {
        let wait: f64 = self.wait_ms.tail(LOADER_WINDOW_STEPS).flatten().sum();
        let step: f64 = self.step_ms.tail(LOADER_WINDOW_STEPS).flatten().sum();
        (step > 0.0).then(|| wait / step)
    }
}
