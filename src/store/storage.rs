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
    /// S4's gdsio runs, per GPU, as they finish.
    pub gds: GdsView,
}

/// S4's gdsio runs as they finish: each GPU's newest rate per path, and the run just done.
#[derive(Debug, Clone, Default)]
pub struct GdsView {
    /// The phase the runs came from (a new phase starts afresh).
    pub phase: Option<String>,
    /// Each GPU's runs, keyed by (node, GPU). At most [`MAX_GDS_GPUS`].
    pub gpus: BTreeMap<(String, Option<u32>), GdsGpu>,
    /// Runs of GPUs past the cap, not kept.
    pub dropped_runs: u64,
    /// The newest run: (node, GPU, the run).
    pub latest: Option<(String, Option<u32>, GdsRun)>,
}

/// One GPU's gdsio runs: the newest of each transfer and IO type.
#[derive(Debug, Clone, Default)]
pub struct GdsGpu {
    /// At most [`MAX_GDS_PATHS`] kinds of run.
    pub runs: Vec<GdsRun>,
}

/// One gdsio run, as the pane reads it (the phase metric's).
pub use crate::model::phase::GdsRun;

/// GPUs whose runs the view keeps (96 on a 12 × 8 cluster; a node can name at most 64).
pub const MAX_GDS_GPUS: usize = 1024;
/// Kinds of run kept per GPU (S4 makes six).
pub const MAX_GDS_PATHS: usize = 16;

impl GdsGpu {
    /// The newest run of this transfer and IO type.
    pub fn run(&self, xfer: &str, io: &str) -> Option<&GdsRun> {
        self.runs.iter().find(|r| r.xfer == xfer && r.io == io)
    }

    /// GPU-direct read as a percentage of CPU→GPU read, where both were measured at the same
    /// size and threads (what S4's `gds-direct` check sets side by side).
    pub fn direct_pct(&self) -> Option<f64> {
        let d = self.run("GPUD", "READ")?;
        let c = self.run("CPU_GPU", "READ")?;
        if d.io_size_kib.is_none() || d.io_size_kib != c.io_size_kib || d.threads != c.threads {
            return None;
        }
        let (d, c) = (d.gib_per_s?, c.gib_per_s?);
        (c > 0.0).then(|| 100.0 * d / c)
    }
}

impl GdsView {
    /// Takes one finished run of `phase`. Its names may come from a record on disk: they are
    /// stripped and cut here, and a rate that is not a finite reading is none.
    pub fn ingest(&mut self, phase: String, node: String, gpu: Option<u32>, mut run: GdsRun) {
        let clean = |s: &str| crate::model::excerpt_chars(&crate::model::strip_controls(s), 24);
        run.xfer = clean(&run.xfer);
        run.io = clean(&run.io);
        run.gib_per_s = run.gib_per_s.filter(|v| v.is_finite() && *v >= 0.0);
        run.avg_latency_us = run.avg_latency_us.filter(|v| v.is_finite() && *v >= 0.0);
        if self.phase.as_deref() != Some(phase.as_str()) {
            *self = GdsView {
                phase: Some(phase),
                ..GdsView::default()
            };
        }
        let key = (node.clone(), gpu);
        if !self.gpus.contains_key(&key) && self.gpus.len() >= MAX_GDS_GPUS {
            self.dropped_runs = self.dropped_runs.saturating_add(1);
        } else {
            let g = self.gpus.entry(key).or_default();
            match g
                .runs
                .iter()
                .position(|r| r.xfer == run.xfer && r.io == run.io)
            {
                Some(at) => g.runs[at] = run.clone(),
                None if g.runs.len() < MAX_GDS_PATHS => g.runs.push(run.clone()),
                None => {}
            }
        }
        self.latest = Some((node, gpu, run));
    }

    /// The GPUs, worst first: GPU-direct read nearest to (or below) CPU→GPU first, then the
    /// slowest GPU-direct read; GPUs without both after.
    pub fn worst_first(&self) -> Vec<(&(String, Option<u32>), &GdsGpu)> {
        let mut rows: Vec<_> = self.gpus.iter().collect();
        let key = |g: &GdsGpu| {
            (
                g.direct_pct().unwrap_or(f64::INFINITY),
                g.run("GPUD", "READ")
                    .and_then(|r| r.gib_per_s)
                    .unwrap_or(f64::INFINITY),
            )
        };
        rows.sort_by(|a, b| {
            let (ap, ar) = key(a.1);
            let (bp, br) = key(b.1);
            ap.total_cmp(&bp).then(ar.total_cmp(&br)).then(a.0.cmp(b.0))
        });
        rows
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(xfer: &str, io: &str, gib: f64) -> GdsRun {
        GdsRun {
            xfer: xfer.into(),
            io: io.into(),
            io_size_kib: Some(1024),
            threads: Some(8),
            gib_per_s: Some(gib),
            avg_latency_us: Some(360.0),
        }
    }

    /// A record on disk may carry anything: names are stripped and cut, impossible rates are
    /// none, the GPUs and paths kept are bounded, and a new phase starts afresh.
    #[test]
    fn gds_runs_from_anywhere_are_bounded_and_clean() {
        let mut v = GdsView::default();
        v.ingest(
            "S4".into(),
            "n1".into(),
            Some(0),
            run(
                &format!("GPUD\u{1b}[2J{}", "X".repeat(500)),
                "READ",
                f64::NAN,
            ),
        );
        let (_, _, last) = v.latest.clone().expect("latest");
        assert!(!last.xfer.contains('\u{1b}') && last.xfer.chars().count() <= 24);
        assert_eq!(last.gib_per_s, None);
        for i in 0..40 {
            v.ingest(
                "S4".into(),
                "n1".into(),
                Some(0),
                run(&format!("X{i}"), "READ", 1.0),
            );
        }
        assert_eq!(
            v.gpus.values().next().map(|g| g.runs.len()),
            Some(MAX_GDS_PATHS)
        );
        for g in 0..(MAX_GDS_GPUS as u32 + 10) {
            v.ingest("S4".into(), "n2".into(), Some(g), run("GPUD", "READ", 1.0));
        }
        assert_eq!(v.gpus.len(), MAX_GDS_GPUS);
        assert_eq!(v.dropped_runs, 11);
        v.ingest("S4b".into(), "n1".into(), Some(0), run("GPUD", "READ", 1.0));
        assert_eq!(v.gpus.len(), 1);
        // Direct against CPU→GPU only at the same size and threads.
        let mut g = GdsGpu::default();
        g.runs.push(run("GPUD", "READ", 21.5));
        g.runs.push(run("CPU_GPU", "READ", 12.9));
        assert_eq!(g.direct_pct().map(|p| p.round()), Some(167.0));
        g.runs[1].threads = Some(4);
        assert_eq!(g.direct_pct(), None);
    }

    /// A run goes into the record and comes back the same (its fields flattened into the
    /// metric's line).
    #[test]
    fn a_gds_run_survives_the_record() {
        let m = PhaseMetric::GdsRun {
            node: "n1".into(),
            gpu: Some(3),
            run: run("GPUD", "READ", 6.816723),
        };
        let line = serde_json::to_string(&m).expect("json");
        assert!(line.contains("\"xfer\":\"GPUD\""), "{line}");
        let back: PhaseMetric = serde_json::from_str(&line).expect("back");
        assert_eq!(back, m);
    }
}
