//! What the console knows about the cluster: every node and GPU with bounded histories, the
//! phases with their output and figures, the storage probe and the dataloader. It ingests
//! [`SourceEvent`]s and nothing else, so a live run, a replay and a simulation build the same
//! store. No UI types here: panes and triage read it.

pub mod history;
mod nodes;
mod phases;
mod storage;

pub use nodes::{
    ChangeWindow, CounterWindow, ErrorCounts, GpuView, LinkRise, MAX_GPUS_PER_NODE,
    MAX_PORTS_PER_NODE, NetView, NicView, NodeView, PORT_NAME_CHARS,
};
pub use phases::{
    BUSBW_SIZES_KEPT, BusBwRow, CHECKS_KEPT, CheckRow, PHASE_METRICS_KEPT, PhaseState, PhaseView,
    median,
};
use phases::{fresh_views, phase_views};
pub use storage::{
    GdsGpu, GdsRun, GdsView, LOADER_WINDOW_STEPS, LoaderView, MAX_GDS_GPUS, MAX_GDS_PATHS,
    MAX_STORAGE_NODES, NodeStorage, StorageView,
};

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use crate::model::SourceEvent;
use crate::model::phase::{PhaseEvent, PhaseMetric, Verdict};
use crate::model::probe::ProbeWindow;
use crate::model::units::Period;
use crate::model::{
    GpuInfo, GpuSample, NicSample, NodeFrame, NodeHello, NodeLink, PortCounters, UnixMillis,
    XidEvent,
};
use crate::plan::{PhaseSpec, Plan, default_plan};
use crate::store::history::History;

/// Slots kept per metric (defined in `model`, where the Prometheus source reads it too).
pub use crate::model::HISTORY_SLOTS;

/// A streaming node with no frame for this many periods is stale.
pub const STALE_AFTER_PERIODS: u64 = 3;

/// Output lines kept per phase on screen (the run record keeps all of them).
pub const LOG_LINES_PER_PHASE: usize = 2000;

/// Everything the console knows.
#[derive(Debug, Clone)]
pub struct ClusterStore {
    /// The source clock's newest instant.
    pub now_ms: UnixMillis,
    /// Sample period: one history slot each, and a node is stale after three without a frame.
    pub period: Period,
    /// Nodes in the order they were first heard of.
    pub nodes: Vec<NodeView>,
    node_index: HashMap<String, usize>,
    /// The plan's phases.
    pub phases: Vec<PhaseView>,
    /// The storage probe.
    pub storage: StorageView,
    /// The dataloader.
    pub loader: LoaderView,
    /// The latest fault search, as it stands (bounded where it is made: its latest tests).
    pub search: Option<Box<crate::model::search::SearchSnapshot>>,
    /// The baseline the phases are judged against, where the console knows it: panes draw
    /// its gate lines (the verdicts come from the judging side, not from this).
    pub baseline: Option<std::sync::Arc<crate::plan::gates::Baseline>>,
    /// Slots of each per-GPU and per-port history ([`HISTORY_SLOTS`] unless made smaller).
    history_slots: usize,
}

impl Default for ClusterStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterStore {
    /// Show `plan`'s phases instead of the default ladder (their state starts afresh).
    pub fn set_plan(&mut self, plan: &Plan) {
        self.phases = phase_views(plan);
    }

    /// Forget everything the sources said, keeping the plan's phases (afresh) and the period:
    /// a replay seeking backwards plays the record again from its start.
    pub fn rewind(&mut self) {
        let phases = fresh_views(self.phases.iter().map(|p| &p.spec));
        let baseline = self.baseline.take();
        *self = Self::with_period(self.period);
        self.phases = phases;
        self.baseline = baseline;
    }

    /// The gates' baseline, for the panes' gate lines.
    pub fn set_baseline(&mut self, baseline: Option<std::sync::Arc<crate::plan::gates::Baseline>>) {
        self.baseline = baseline;
    }

    /// A `baseline` gate's line for `figure` of `phase`: `pct` % of the baseline's median
    /// (`None`: no baseline, or none for this figure).
    pub fn baseline_line(&self, phase: &str, figure: &str, pct: f64) -> Option<f64> {
        let samples = self.baseline.as_ref()?.phases.get(phase)?.get(figure)?;
        median(samples.iter().map(|s| s.value)).map(|m| m * pct / 100.0)
    }

    /// An empty store over the default plan, sampled every second.
    pub fn new() -> Self {
        Self::with_period(Period::SECOND)
    }

    /// An empty store for sources that sample every `period`.
    pub fn with_period(period: Period) -> Self {
        Self::with_history(period, HISTORY_SLOTS)
    }

    /// An empty store whose per-GPU and per-port histories keep `slots` samples (1 to
    /// [`HISTORY_SLOTS`]): a store only triage reads needs its windows, not the panes' ten
    /// minutes (at 1024 GPUs that is 30 MB less).
    pub fn with_history(period: Period, slots: usize) -> Self {
        let history_slots = slots.clamp(1, HISTORY_SLOTS);
        let h = || History::new(period, HISTORY_SLOTS);
        Self {
            now_ms: 0,
            period,
            nodes: Vec::new(),
            node_index: HashMap::new(),
            phases: phase_views(default_plan()),
            storage: StorageView {
                latest: None,
                ttfb_p50_ms: h(),
                ttfb_p99_ms: h(),
                throughput: h(),
                requests_total: 0,
                errors_total: 0,
                phase: None,
                node: None,
                nodes: BTreeMap::new(),
                gds: GdsView::default(),
            },
            loader: LoaderView {
                phase: None,
                wait_ms: History::new(Period::MILLISECOND, HISTORY_SLOTS),
                step_ms: History::new(Period::MILLISECOND, HISTORY_SLOTS),
                last_step: None,
                first_batch_ms: None,
                tokens_per_sec: None,
                loss: None,
                node: None,
            },
            baseline: None,
            search: None,
            history_slots,
        }
    }

    fn node_mut(&mut self, name: &str) -> &mut NodeView {
        let idx = match self.node_index.get(name) {
            Some(&i) => i,
            None => {
                self.nodes.push(NodeView::new(
                    name.to_string(),
                    self.period,
                    self.history_slots,
                ));
                self.node_index
                    .insert(name.to_string(), self.nodes.len() - 1);
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[idx]
    }

    /// Find a node by name.
    pub fn node(&self, name: &str) -> Option<&NodeView> {
        self.node_index.get(name).map(|&i| &self.nodes[i])
    }

    /// Find a phase by id.
    pub fn phase(&self, id: &str) -> Option<&PhaseView> {
        self.phases.iter().find(|p| p.spec.id == id)
    }

    /// The phase running now, if any.
    pub fn running_phase(&self) -> Option<&PhaseView> {
        self.phases.iter().find(|p| p.state == PhaseState::Running)
    }

    /// Number of GPUs known.
    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.gpus.len()).sum()
    }

    /// Take in one event.
    pub fn ingest(&mut self, event: SourceEvent) {
        match event {
            SourceEvent::Clock { at_ms } => {
                self.now_ms = self.now_ms.max(at_ms);
                self.mark_stale();
            }
            SourceEvent::Hello(mut hello) => {
                // What identifies a GPU for a return comes from the node: stripped and cut.
                for info in &mut hello.gpus {
                    info.identity = std::mem::take(&mut info.identity).bounded();
                }
                let node = self.node_mut(&hello.node);
                for info in &hello.gpus {
                    if let Some(g) = node.gpu_mut(info.index) {
                        g.info = Some(info.clone());
                    }
                }
                node.hello = Some(hello);
            }
            SourceEvent::Frame(frame) => {
                self.now_ms = self.now_ms.max(frame.at_ms);
                match self.node_index.get(frame.node.as_str()) {
                    Some(&i) => self.nodes[i].ingest(frame),
                    None => {
                        let name = frame.node.clone();
                        self.node_mut(&name).ingest(frame);
                    }
                }
            }
            SourceEvent::Link { node, link, .. } => self.node_mut(&node).link = link,
            SourceEvent::Garbled { node, total } => self.node_mut(&node).garbled_lines = total,
            SourceEvent::Expect {
                node,
                gpus,
                nic_rate_gbps,
            } => {
                let n = self.node_mut(&node);
                n.expected_gpus = Some(gpus);
                n.expected_nic_rate_gbps = nic_rate_gbps;
            }
            SourceEvent::Note { node, text, .. } => self.node_mut(&node).note = Some(text),
            SourceEvent::Notice { .. } | SourceEvent::Recording { .. } => {}
            SourceEvent::Rewind => self.rewind(),
            SourceEvent::Phase(ev) => self.ingest_phase(ev),
            SourceEvent::Probe(window) => self.storage.ingest(window),
            SourceEvent::Search(search) => self.search = Some(bounded_search(search)),
        }
    }

    fn mark_stale(&mut self) {
        let now = self.now_ms;
        let stale_after = STALE_AFTER_PERIODS * self.period.millis();
        for node in &mut self.nodes {
            if node.link == NodeLink::Streaming
                && node
                    .last_frame_ms
                    .is_some_and(|t| now.saturating_sub(t) > stale_after)
            {
                node.link = NodeLink::Stale;
            }
        }
    }

    fn ingest_phase(&mut self, ev: PhaseEvent) {
        let is_note = matches!(ev, PhaseEvent::Note { .. });
        let Some(view) = self.phases.iter_mut().find(|p| p.spec.id == ev.phase()) else {
            return;
        };
        match ev {
            PhaseEvent::Started { at_ms, .. } => {
                view.state = PhaseState::Running;
                view.started_ms = Some(at_ms);
                view.finished_ms = None;
                view.reason = None;
                view.busbw.clear();
                view.collective = None;
                view.figure_metrics.clear();
                view.checks.clear();
                view.together.clear();
                view.drill.clear();
                view.prompt = None;
                view.gates.clear();
                view.metrics_version += 1;
                if !view.log.is_empty() {
                    view.log.push_back(String::from("── restarted ──"));
                }
            }
            PhaseEvent::Line { text, node, .. } | PhaseEvent::Note { text, node, .. } => {
                // Several nodes run a phase at once: say whose line it is, and which lines are
                // burnin's own.
                let text = match (node, is_note) {
                    (Some(n), false) => format!("{n}| {text}"),
                    (Some(n), true) => format!("{n}| burnin: {text}"),
                    (None, false) => text,
                    (None, true) => format!("burnin: {text}"),
                };
                if view.log.len() == LOG_LINES_PER_PHASE {
                    view.log.pop_front();
                    view.log_dropped += 1;
                }
                view.log.push_back(text);
            }
            PhaseEvent::Metric { metric, phase, .. } => {
                if matches!(
                    metric,
                    PhaseMetric::Tflops { .. }
                        | PhaseMetric::BusBw { .. }
                        | PhaseMetric::Figure { .. }
                        | PhaseMetric::PairBw { .. }
                        | PhaseMetric::LinkBw { .. }
                        | PhaseMetric::AvgBusBw { .. }
                        | PhaseMetric::PairLat { .. }
                        | PhaseMetric::LinkLat { .. }
                        | PhaseMetric::Step { .. }
                ) {
                    view.keep_metric(metric.clone());
                }
                if let PhaseMetric::Together { change } = &metric {
                    view.together.push(change.clone());
                }
                if let PhaseMetric::Drill { outcome } = &metric {
                    view.drill.push(outcome.clone());
                }
                if let PhaseMetric::Check {
                    node,
                    name,
                    status,
                    detail,
                } = &metric
                    && view.checks.len() < CHECKS_KEPT
                {
                    view.checks.push(CheckRow {
                        node: node.clone(),
                        name: name.clone(),
                        status: *status,
                        detail: detail.clone(),
                    });
                }
                self.ingest_metric(phase, metric)
            }
            PhaseEvent::Prompt { text, .. } => view.prompt = text,
            PhaseEvent::Finished {
                at_ms,
                verdict,
                reason,
                ..
            } => {
                view.prompt = None;
                view.state = PhaseState::Done(verdict);
                view.finished_ms = Some(at_ms);
                view.reason = Some(reason);
            }
        }
    }

    /// What a phase metric adds to the panes: the NCCL sweep, the loader, the storage probe.
    fn ingest_metric(&mut self, phase: String, metric: PhaseMetric) {
        let Some(view) = self.phases.iter_mut().find(|p| p.spec.id == phase) else {
            return;
        };
        match metric {
            PhaseMetric::BusBw {
                node,
                collective,
                size_bytes,
                busbw_gb_per_s,
                wrong,
                ranks,
                ..
            } => {
                // A sweep has a few dozen sizes; output naming endless sizes is not kept.
                if view.busbw.len() >= BUSBW_SIZES_KEPT && !view.busbw.contains_key(&size_bytes) {
                    return;
                }
                let row = view.busbw.entry(size_bytes).or_default();
                row.per_node
                    .insert(node.unwrap_or_else(|| "all".into()), busbw_gb_per_s);
                match wrong {
                    Some(w) => row.wrong = row.wrong.saturating_add(w),
                    None => row.unvalidated = true,
                }
                row.ranks = ranks;
                view.collective = Some(collective);
            }
            PhaseMetric::Step {
                node,
                step,
                step_time_ms,
                data_wait_ms,
                tokens_per_sec,
                loss,
                ..
            } => {
                let l = &mut self.loader;
                // The pane follows one job: the first node's, when a phase runs on several.
                if l.phase.as_deref() == Some(phase.as_str())
                    && l.node.is_some()
                    && node.is_some()
                    && l.node != node
                {
                    return;
                }
                // A new job (another phase, or the step count starting over) starts afresh.
                if l.phase.as_deref() != Some(phase.as_str()) || l.last_step >= Some(step) {
                    l.reset(phase);
                    l.node = node;
                }
                l.wait_ms.push(step, data_wait_ms);
                l.step_ms.push(step, step_time_ms);
                l.last_step = Some(step);
                l.tokens_per_sec = tokens_per_sec.or(l.tokens_per_sec);
                l.loss = loss.or(l.loss);
            }
            PhaseMetric::FirstBatch { ms } => {
                let l = &mut self.loader;
                if l.phase.as_deref() != Some(phase.as_str()) || l.last_step.is_some() {
                    l.reset(phase);
                }
                l.first_batch_ms = Some(ms);
            }
            PhaseMetric::Storage { node, window } => {
                let s = &mut self.storage;
                // The pane follows one probe: the first node's, when a phase runs it on
                // several at once.
                if s.phase.as_deref() != Some(phase.as_str()) {
                    s.phase = Some(phase);
                    s.node = Some(node.clone());
                    s.nodes.clear();
                }
                s.ingest_node(node.clone(), &window);
                if s.node.as_deref() == Some(node.as_str()) {
                    s.ingest(window);
                }
            }
            PhaseMetric::GdsRun { node, gpu, run } => {
                self.storage.gds.ingest(phase, node, gpu, run);
            }
            PhaseMetric::Gate {
                gate,
                status,
                words,
            } => {
                if view.gates.len() < phases::GATES_KEPT {
                    view.gates.push(crate::model::phase::GateOutcome {
                        gate,
                        status,
                        words,
                    });
                }
            }
            PhaseMetric::Tflops { .. }
            | PhaseMetric::Figure { .. }
            | PhaseMetric::PairBw { .. }
            | PhaseMetric::LinkBw { .. }
            | PhaseMetric::AvgBusBw { .. }
            | PhaseMetric::PairLat { .. }
            | PhaseMetric::LinkLat { .. }
            | PhaseMetric::Check { .. }
            | PhaseMetric::DiagGpu { .. }
            | PhaseMetric::Problem { .. }
            | PhaseMetric::Together { .. }
            | PhaseMetric::Drill { .. }
            | PhaseMetric::LatencyCdf { .. }
            | PhaseMetric::Parts { .. } => {}
        }
    }

    /// The data-wait line the loader is held to, in % of step time: the followed phase's own
    /// `max data_wait_pct` gate where its plan has one (what will judge it), else `triage_pct`
    /// (burnin.toml's `[triage] loader_wait_pct`). With whose line it is, for the words.
    pub fn loader_gate_pct(&self, triage_pct: f64) -> (f64, String) {
        let own = self.loader.phase.as_deref().and_then(|id| {
            let view = self.phase(id)?;
            view.spec.gates.iter().find_map(|g| match g {
                crate::plan::Gate::Max { figure, value }
                    if figure == "data_wait_pct" && value.is_finite() =>
                {
                    Some((*value, format!("{id}'s gate")))
                }
                _ => None,
            })
        });
        own.unwrap_or((triage_pct, "triage".into()))
    }

    /// Whether the storage pane shows GPUDirect Storage runs rather than the S3 probe: while
    /// the phase making them runs, or when no probe window ever came.
    pub fn storage_shows_gds(&self) -> bool {
        let g = &self.storage.gds;
        if g.gpus.is_empty() {
            return false;
        }
        let running = g.phase.as_deref().is_some_and(|id| {
            self.phases
                .iter()
                .any(|p| p.spec.id == id && p.state == PhaseState::Running)
        });
        running || self.storage.latest.is_none()
    }

    /// The drill asking the operator something now: (phase, words).
    pub fn drill_prompt(&self) -> Option<(&str, &str)> {
        self.phases
            .iter()
            .find_map(|p| p.prompt.as_deref().map(|t| (p.spec.id.as_str(), t)))
    }

    /// The phase whose bus-bandwidth sweep the NCCL pane shows: the running one if it has rows,
    /// else the most recently started one that has.
    pub fn busbw_phase(&self) -> Option<&PhaseView> {
        self.phases
            .iter()
            .filter(|p| !p.busbw.is_empty())
            .max_by_key(|p| (p.state == PhaseState::Running, p.started_ms))
    }
}

/// A search as the store keeps it: a record replayed may hold anything, so its lists and words
/// are held to what the overlay shows.
fn bounded_search(
    mut s: Box<crate::model::search::SearchSnapshot>,
) -> Box<crate::model::search::SearchSnapshot> {
    use crate::model::{fit, strip_controls};
    let clean = |t: &str, n: usize| fit(&strip_controls(t), n);
    s.phase = clean(&s.phase, 24);
    s.screen = clean(&s.screen, 16);
    for list in [&mut s.named, &mut s.links, &mut s.notes] {
        list.truncate(32);
        for l in list.iter_mut() {
            *l = clean(l, 300);
        }
    }
    let skip = s.tests.len().saturating_sub(64);
    s.tests.drain(..skip);
    for r in &mut s.tests {
        r.purpose = clean(&r.purpose, 16);
        r.nodes = clean(&r.nodes, 120);
        r.why = clean(&r.why, 300);
        r.figure = r.figure.filter(|f| f.is_finite());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};

    fn store_at(s: u64) -> ClusterStore {
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let mut store = ClusterStore::new();
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            store.ingest(e);
        }
        store
    }

    #[test]
    fn link_error_rises_count_only_what_came_within_the_window() {
        use crate::model::NvlinkLinkErrors;
        let mut gpu = GpuView::new(0, Period::SECOND, HISTORY_SLOTS);
        let at = |s: u64| 1_800_000_000_000 + s * 1000;
        let sample = |links: Vec<NvlinkLinkErrors>| GpuSample {
            nvlink_link_errors: links,
            ..GpuSample::default()
        };
        let link = |link, crc, replay| NvlinkLinkErrors {
            link,
            crc,
            replay,
            recovery: 0,
        };
        // Link 3 had 40 CRC errors before the console watched: history, not news.
        gpu.ingest(at(0), sample(vec![link(3, 40, 0)]));
        for s in 1..30 {
            gpu.ingest(at(s), sample(vec![link(3, 40, 0)]));
        }
        assert_eq!(
            gpu.link_errors.len(),
            1,
            "a snapshot only when something changed"
        );
        assert!(gpu.link_error_rises(at(29), 10_000).is_empty());
        // Link 3 gets 5 more and link 11 starts replaying.
        gpu.ingest(at(30), sample(vec![link(3, 45, 0), link(11, 0, 2)]));
        gpu.ingest(at(31), sample(vec![link(3, 45, 0), link(11, 0, 7)]));
        assert_eq!(
            gpu.link_error_rises(at(31), 10_000),
            vec![
                LinkRise {
                    link: 3,
                    crc: 5,
                    replay: 0,
                    recovery: 0
                },
                LinkRise {
                    link: 11,
                    crc: 0,
                    replay: 7,
                    recovery: 0
                },
            ]
        );
        // Quiet for longer than the window: nothing rose lately.
        for s in 32..50 {
            gpu.ingest(at(s), sample(vec![link(3, 45, 0), link(11, 0, 7)]));
        }
        assert!(gpu.link_error_rises(at(49), 10_000).is_empty());
    }

    #[test]
    fn builds_nodes_gpus_and_phases_from_the_simulation() {
        let store = store_at(130);
        assert_eq!(store.nodes.len(), 12);
        assert_eq!(store.gpu_count(), 96);
        assert_eq!(
            store.running_phase().map(|p| p.spec.id.as_str()),
            Some("T4")
        );
        let t4 = store.busbw_phase().expect("T4 has busbw rows");
        let first = t4.busbw.values().next().expect("a row");
        // node07 hung after the stall, so later sizes have 11 nodes.
        assert_eq!(first.per_node.len(), 12);
        assert_eq!(t4.busbw.values().last().map(|r| r.per_node.len()), Some(11));
    }

    #[test]
    fn a_silent_node_goes_stale_and_comes_back() {
        let mut store = store_at(5);
        store.ingest(SourceEvent::Clock {
            at_ms: SIM_EPOCH_MS + 10_000,
        });
        assert!(store.nodes.iter().all(|n| n.link == NodeLink::Stale));
        let mut sim = SimCluster::new(SimConfig::demo(1));
        for e in sim.advance_to(SIM_EPOCH_MS + 11_000) {
            store.ingest(e);
        }
        assert!(store.nodes.iter().all(|n| n.link == NodeLink::Streaming));
    }

    #[test]
    fn loader_keeps_first_batch_of_the_new_job() {
        let store = store_at(340);
        assert_eq!(store.loader.phase.as_deref(), Some("T8"));
        assert_eq!(store.loader.first_batch_ms, Some(2140.0));
        assert!(store.loader.wait_share().is_some_and(|s| s > 0.10));
    }

    #[test]
    fn stale_follows_the_sample_period() {
        let mut store = ClusterStore::with_period(Period::from_millis(5000).expect("period"));
        let mut sim = SimCluster::new(SimConfig::demo(1));
        for e in sim.advance_to(SIM_EPOCH_MS) {
            store.ingest(e);
        }
        store.ingest(SourceEvent::Clock {
            at_ms: SIM_EPOCH_MS + 10_000,
        });
        assert!(
            store.nodes.iter().all(|n| n.link == NodeLink::Streaming),
            "2 periods late"
        );
        store.ingest(SourceEvent::Clock {
            at_ms: SIM_EPOCH_MS + 16_000,
        });
        assert!(store.nodes.iter().all(|n| n.link == NodeLink::Stale));
    }

    #[test]
    fn nic_counters_rise_over_a_window() {
        let store = store_at(60);
        let n09 = store.node("node09").expect("node09");
        assert_eq!(n09.nics.len(), crate::sim::NICS_PER_NODE);
        assert!(n09.nics[0].rise("symbol_error", 10_000) > 0);
        assert_eq!(n09.nics[1].rise("symbol_error", 10_000), 0);
        let n05 = store.node("node05").expect("node05");
        assert_eq!(n05.nics[1].latest.rate_gbps, Some(200.0));
    }

    #[test]
    fn lost_gpu_is_recognised() {
        let store = store_at(175);
        let gpu = &store.node("node11").expect("node11").gpus[0];
        assert!(gpu.is_lost());
        assert_eq!(gpu.xids.back().map(|x| x.code), Some(79));
    }
}
