//! What the console knows about the cluster: every node and GPU with bounded histories, the
//! phases with their output and figures, the storage probe and the dataloader. It ingests
//! [`SourceEvent`]s and nothing else, so a live run, a replay and a simulation build the same
//! store. No UI types here: panes and triage read it.

pub mod history;

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use crate::model::SourceEvent;
use crate::model::units::Period;
use crate::model::{
    GpuInfo, GpuSample, NicSample, NodeFrame, NodeHello, NodeLink, PortCounters, UnixMillis,
    XidEvent,
};
use crate::phases::{PhaseEvent, PhaseMetric, Verdict};
use crate::plan::{PhaseSpec, Plan, default_plan};
use crate::probes::ProbeWindow;
use crate::store::history::History;

/// Slots kept per metric (defined in `model`, where the Prometheus source reads it too).
pub use crate::model::HISTORY_SLOTS;
/// A streaming node with no frame for this many periods is stale.
pub const STALE_AFTER_PERIODS: u64 = 3;
/// Output lines kept per phase on screen (the run record keeps all of them).
pub const LOG_LINES_PER_PHASE: usize = 2000;
/// Xid events kept per GPU on screen.
const XIDS_KEPT: usize = 32;

/// One GPU as the console sees it.
#[derive(Debug, Clone)]
pub struct GpuView {
    /// NVML index on its node.
    pub index: u32,
    /// Why the newest sample's GPM readings (SM, tensor, DRAM activity) are n/a: they read
    /// as idle while the GPU is loaded near its power limit, which cannot be (another process
    /// toggled GPM streaming, a profiler holds the counters).
    pub gpm_implausible: Option<String>,
    /// Facts from the hello, if one came.
    pub info: Option<GpuInfo>,
    /// The newest sample.
    pub latest: Option<GpuSample>,
    /// Power (1 s average), watts.
    pub power_watts: History,
    /// Utilization, percent.
    pub util_pct: History,
    /// Temperature, °C.
    pub temperature_c: History,
    /// SM clock, MHz.
    pub sm_clock_mhz: History,
    /// NVLink transmit, bytes/s.
    pub nvlink_tx: History,
    /// NVLink receive, bytes/s.
    pub nvlink_rx: History,
    /// NVLink CRC error counter (cumulative, as read).
    pub nvlink_crc: History,
    /// NVLink replay error counter (cumulative).
    pub nvlink_replay: History,
    /// NVLink recovery error counter (cumulative).
    pub nvlink_recovery: History,
    /// PCIe replay counter (cumulative).
    pub pcie_replay: History,
    /// GPM SM activity, percent (Hopper and later; gaps elsewhere).
    pub sm_active_pct: History,
    /// Xid events seen, newest last.
    pub xids: VecDeque<XidEvent>,
    /// Each link's error counters, a snapshot whenever they changed (newest last, bounded).
    pub link_errors: VecDeque<(UnixMillis, Vec<crate::model::NvlinkLinkErrors>)>,
}

/// Snapshots of per-link error counters kept per GPU: a minute of change every second.
const LINK_ERROR_SNAPSHOTS: usize = 64;

/// How much one link's counters rose over a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkRise {
    /// Link number.
    pub link: u32,
    /// CRC errors added.
    pub crc: u64,
    /// Replays added.
    pub replay: u64,
    /// Recoveries added.
    pub recovery: u64,
}

impl GpuView {
    /// Which links' error counters rose over the `window_ms` before the newest snapshot (since
    /// the first one seen, when that is younger): counts from before the console watched are
    /// history, not news.
    pub fn link_error_rises(&self, now_ms: UnixMillis, window_ms: u64) -> Vec<LinkRise> {
        let Some((_, newest)) = self.link_errors.back() else {
            return Vec::new();
        };
        let since = now_ms.saturating_sub(window_ms);
        let base = self
            .link_errors
            .iter()
            .rev()
            .find(|(t, _)| *t <= since)
            .or(self.link_errors.front())
            .map(|(_, v)| v.as_slice())
            .unwrap_or_default();
        newest
            .iter()
            .filter_map(|now| {
                let then = base.iter().find(|b| b.link == now.link);
                let rise = |f: fn(&crate::model::NvlinkLinkErrors) -> u64| {
                    f(now).saturating_sub(then.map_or(0, f))
                };
                let r = LinkRise {
                    link: now.link,
                    crc: rise(|e| e.crc),
                    replay: rise(|e| e.replay),
                    recovery: rise(|e| e.recovery),
                };
                (r.crc + r.replay + r.recovery > 0).then_some(r)
            })
            .collect()
    }

    fn new(index: u32, period: Period) -> Self {
        let h = || History::new(period, HISTORY_SLOTS);
        Self {
            index,
            gpm_implausible: None,
            info: None,
            latest: None,
            power_watts: h(),
            util_pct: h(),
            temperature_c: h(),
            sm_clock_mhz: h(),
            nvlink_tx: h(),
            nvlink_rx: h(),
            nvlink_crc: h(),
            nvlink_replay: h(),
            nvlink_recovery: h(),
            pcie_replay: h(),
            sm_active_pct: h(),
            xids: VecDeque::new(),
            link_errors: VecDeque::new(),
        }
    }

    /// True when the newest sample has no readings at all: NVML could not read the GPU.
    pub fn is_lost(&self) -> bool {
        self.latest.as_ref().is_some_and(|s| {
            s.power_avg_watts.is_none() && s.utilization_pct.is_none() && s.temperature_c.is_none()
        })
    }

    /// Power limit from the newest sample, else from the hello.
    pub fn power_limit_watts(&self) -> Option<f32> {
        self.latest
            .as_ref()
            .and_then(|s| s.power_limit_watts)
            .or_else(|| self.info.as_ref().and_then(|i| i.power_limit_watts))
    }

    /// Highest SM clock from the newest sample, else from the hello.
    pub fn sm_clock_max_mhz(&self) -> Option<u32> {
        self.latest
            .as_ref()
            .and_then(|s| s.sm_clock_max_mhz)
            .or_else(|| self.info.as_ref().and_then(|i| i.sm_clock_max_mhz))
    }

    fn ingest(&mut self, at_ms: UnixMillis, mut sample: GpuSample) {
        sample.drop_non_finite();
        // A GPM reading that cannot be true is n/a, with why, never evidence.
        let limit = sample
            .power_limit_watts
            .or_else(|| self.power_limit_watts());
        self.gpm_implausible = implausible_gpm(&sample, limit);
        if self.gpm_implausible.is_some() {
            sample.sm_active_pct = None;
            sample.tensor_active_pct = None;
            sample.dram_active_pct = None;
        }
        let f = |v: Option<f32>| v.map(f64::from);
        self.power_watts.push(at_ms, f(sample.power_avg_watts));
        self.util_pct.push(at_ms, f(sample.utilization_pct));
        self.temperature_c.push(at_ms, f(sample.temperature_c));
        self.sm_clock_mhz
            .push(at_ms, sample.sm_clock_mhz.map(f64::from));
        self.nvlink_tx.push(at_ms, sample.nvlink_tx_bytes_per_sec);
        self.nvlink_rx.push(at_ms, sample.nvlink_rx_bytes_per_sec);
        let count = |c: Option<u64>| c.map(|c| c as f64);
        self.nvlink_crc.push(at_ms, count(sample.nvlink_crc_errors));
        self.nvlink_replay
            .push(at_ms, count(sample.nvlink_replay_errors));
        self.nvlink_recovery
            .push(at_ms, count(sample.nvlink_recovery_errors));
        self.pcie_replay
            .push(at_ms, count(sample.pcie_replay_count));
        self.sm_active_pct.push(at_ms, f(sample.sm_active_pct));
        if self.link_errors.back().map(|(_, v)| v) != Some(&sample.nvlink_link_errors) {
            if self.link_errors.len() == LINK_ERROR_SNAPSHOTS {
                self.link_errors.pop_front();
            }
            self.link_errors
                .push_back((at_ms, sample.nvlink_link_errors.clone()));
        }
        for x in &sample.xid_events {
            if self.xids.len() == XIDS_KEPT {
                self.xids.pop_front();
            }
            self.xids.push_back(x.clone());
        }
        self.latest = Some(sample);
    }
}

/// GPM's SM and tensor activity read (all but) zero while utilization says loaded and the
/// power is over half the limit: no GPU does that (a bf16 GEMM at 688 W of 700 reads 95 % SM
/// activity; a kernel spinning on a few SMs draws 119 W). Seen on the H200 after another process
/// switched GPM streaming on and off; DCGM's profiling module can do the same.
fn implausible_gpm(s: &GpuSample, limit: Option<f32>) -> Option<String> {
    const ZERO: f32 = 0.5;
    let sm = s.sm_active_pct?;
    let (util, power, limit) = (s.utilization_pct?, s.power_avg_watts?, limit?);
    let all_zero = sm <= ZERO && s.tensor_active_pct.is_none_or(|t| t <= ZERO);
    (all_zero && util >= 50.0 && limit > 0.0 && power >= 0.5 * limit).then(|| {
        format!(
            "GPM reads SM {sm:.1} % / tensor {} at {power:.0} W of {limit:.0} W and {util:.0} % utilization: \
             not possible (another process toggling GPM streaming, or a profiler holding the counters)",
            s.tensor_active_pct
                .map_or_else(|| "n/a".into(), |t| format!("{t:.1} %"))
        )
    })
}

/// Samples of a port's cumulative counters kept for "did it rise lately" questions.
const NIC_COUNTER_SNAPSHOTS: usize = 64;

/// Recent snapshots of a port's cumulative counters, for "did it rise lately" questions.
#[derive(Debug, Clone, Default)]
pub struct CounterWindow {
    snapshots: VecDeque<(UnixMillis, PortCounters)>,
}

impl CounterWindow {
    /// `name +N` for each of `names` that rose over the last `window_ms`, in `names` order.
    pub fn rises(&self, names: &[&str], window_ms: u64) -> Vec<String> {
        names
            .iter()
            .filter_map(|c| {
                let r = self.rise(c, window_ms);
                (r > 0).then(|| format!("{c} +{r}"))
            })
            .collect()
    }

    fn push(&mut self, at_ms: UnixMillis, counters: PortCounters) {
        if self.snapshots.len() == NIC_COUNTER_SNAPSHOTS {
            self.snapshots.pop_front();
        }
        self.snapshots.push_back((at_ms, counters));
    }

    /// The newest counters.
    pub fn newest(&self) -> Option<&PortCounters> {
        self.snapshots.back().map(|(_, c)| c)
    }

    /// How much `counter` rose over the last `window_ms` (0 when it did not, or was reset).
    pub fn rise(&self, counter: &str, window_ms: u64) -> u64 {
        let Some((newest_at, newest)) = self.snapshots.back() else {
            return 0;
        };
        let then = self
            .snapshots
            .iter()
            .find(|(at, _)| newest_at.saturating_sub(*at) <= window_ms)
            .and_then(|(_, c)| c.get(counter));
        match (newest.get(counter), then) {
            (Some(now), Some(t)) if now > t => now - t,
            _ => 0,
        }
    }
}

/// One Ethernet interface as the console sees it.
#[derive(Debug, Clone)]
pub struct NetView {
    /// The newest sample (its `counters` live in `counters`).
    pub latest: crate::model::NetSample,
    /// Recent cumulative counters.
    pub counters: CounterWindow,
}

/// One RDMA port as the console sees it.
#[derive(Debug, Clone)]
pub struct NicView {
    /// The newest sample (its `counters` are empty: see [`NicView::counters`]).
    pub latest: NicSample,
    /// Transmit, bytes/s.
    pub tx: History,
    /// Receive, bytes/s.
    pub rx: History,
    /// Recent cumulative counters.
    counters: CounterWindow,
}

impl NicView {
    fn new(period: Period) -> Self {
        Self {
            latest: NicSample::default(),
            tx: History::new(period, HISTORY_SLOTS),
            rx: History::new(period, HISTORY_SLOTS),
            counters: CounterWindow::default(),
        }
    }

    fn ingest(&mut self, at_ms: UnixMillis, mut sample: NicSample) {
        sample.drop_non_finite();
        self.tx.push(at_ms, sample.tx_bytes_per_sec);
        self.rx.push(at_ms, sample.rx_bytes_per_sec);
        // The counters live in the window only (no copy per sample); `counters()` reads them.
        self.counters
            .push(at_ms, std::mem::take(&mut sample.counters));
        self.latest = sample;
    }

    /// The newest cumulative counters (the `counters` of `latest` are kept here instead).
    pub fn counters(&self) -> Option<&PortCounters> {
        self.counters.newest()
    }

    /// How much `counter` rose over the last `window_ms` (0 when it did not, or was reset).
    pub fn rise(&self, counter: &str, window_ms: u64) -> u64 {
        self.counters.rise(counter, window_ms)
    }

    /// `name +N` for each of `names` that rose over the last `window_ms`.
    pub fn rises(&self, names: &[&str], window_ms: u64) -> Vec<String> {
        self.counters.rises(names, window_ms)
    }

    /// Share of the trained line rate used by the larger direction, newest sample.
    pub fn line_share(&self) -> Option<f64> {
        let rate = f64::from(self.latest.rate_gbps?) * 1e9 / 8.0;
        let used = self
            .latest
            .tx_bytes_per_sec?
            .max(self.latest.rx_bytes_per_sec.unwrap_or(0.0));
        (rate > 0.0).then(|| used / rate)
    }
}

/// One node as the console sees it.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// Name as the inventory spells it.
    pub name: String,
    /// Connection state.
    pub link: NodeLink,
    /// The agent's hello, once it came.
    pub hello: Option<NodeHello>,
    /// When the newest frame was taken.
    pub last_frame_ms: Option<UnixMillis>,
    /// GPUs in index order.
    pub gpus: Vec<GpuView>,
    /// Sum of the node's NVLink transmit, bytes/s.
    pub nvlink_tx: History,
    /// Sum of the node's NVLink receive, bytes/s.
    pub nvlink_rx: History,
    /// RDMA ports, sorted by device and port.
    pub nics: Vec<NicView>,
    /// GPUs the inventory says the node has.
    pub expected_gpus: Option<u32>,
    /// Rate its RDMA ports should train at (inventory), Gb/s.
    pub expected_nic_rate_gbps: Option<f32>,
    /// Ethernet interfaces (bonds, physical ports).
    pub netdevs: Vec<NetView>,
    /// Sample period of its histories.
    period: Period,
    /// Lines of the node's stream that could not be decoded.
    pub garbled_lines: u64,
    /// The newest thing the node's agent said about itself.
    pub note: Option<String>,
    /// The first thing of the node's stream not kept because no node has that much (GPU
    /// indices past [`MAX_GPUS_PER_NODE`], more ports than [`MAX_PORTS_PER_NODE`]).
    pub over_limit: Option<String>,
    /// Samples dropped for that reason.
    pub over_limit_samples: u64,
}

/// GPU indices a node may have (0 to this − 1): what one node's stream can bring into the store.
pub const MAX_GPUS_PER_NODE: u32 = crate::model::MAX_GPUS_PER_NODE;

/// RDMA ports, and separately Ethernet interfaces, one node may have in the store.
pub const MAX_PORTS_PER_NODE: usize = 64;

/// Characters of a port's or interface's name kept (Linux's are at most 15 and 63).
pub const PORT_NAME_CHARS: usize = 64;

impl NodeView {
    fn new(name: String, period: Period) -> Self {
        Self {
            name,
            link: NodeLink::Connecting,
            hello: None,
            last_frame_ms: None,
            gpus: Vec::new(),
            nvlink_tx: History::new(period, HISTORY_SLOTS),
            nvlink_rx: History::new(period, HISTORY_SLOTS),
            nics: Vec::new(),
            expected_gpus: None,
            expected_nic_rate_gbps: None,
            netdevs: Vec::new(),
            period,
            garbled_lines: 0,
            note: None,
            over_limit: None,
            over_limit_samples: 0,
        }
    }

    /// The GPU of this index, made on first sight; `None` past [`MAX_GPUS_PER_NODE`] (counted
    /// in `over_limit`): a hostile or broken stream cannot grow the store without bound.
    fn gpu_mut(&mut self, index: u32) -> Option<&mut GpuView> {
        let pos =
            match self.gpus.binary_search_by_key(&index, |g| g.index) {
                Ok(pos) => pos,
                Err(_) if index >= MAX_GPUS_PER_NODE => {
                    self.drop_over_limit(|| format!(
                    "GPU index {index}: a node has at most {MAX_GPUS_PER_NODE} GPUs (0 to {})",
                    MAX_GPUS_PER_NODE - 1
                ));
                    return None;
                }
                Err(pos) => {
                    self.gpus.insert(pos, GpuView::new(index, self.period));
                    pos
                }
            };
        Some(&mut self.gpus[pos])
    }

    /// Count a sample not kept; the first reason stays.
    fn drop_over_limit(&mut self, why: impl FnOnce() -> String) {
        self.over_limit_samples += 1;
        if self.over_limit.is_none() {
            self.over_limit = Some(why());
        }
    }

    /// `over_limit` with the count, for the status table and triage.
    pub fn over_limit_words(&self) -> Option<String> {
        self.over_limit
            .as_ref()
            .map(|why| format!("{why}; {} sample(s) not kept", self.over_limit_samples))
    }

    fn ingest(&mut self, frame: NodeFrame) {
        let at = frame.at_ms;
        // Node totals in one pass; a node none of whose GPUs report NVLink has no total (n/a).
        let (mut tx, mut rx) = (None::<f64>, None::<f64>);
        for g in &frame.gpus {
            if let Some(v) = g.nvlink_tx_bytes_per_sec {
                tx = Some(tx.unwrap_or(0.0) + v);
            }
            if let Some(v) = g.nvlink_rx_bytes_per_sec {
                rx = Some(rx.unwrap_or(0.0) + v);
            }
        }
        self.nvlink_tx.push(at, tx);
        self.nvlink_rx.push(at, rx);
        for sample in frame.gpus {
            if let Some(g) = self.gpu_mut(sample.index) {
                g.ingest(at, sample);
            }
        }
        for mut d in frame.netdevs {
            d.drop_non_finite();
            d.iface = crate::model::fit(&d.iface, PORT_NAME_CHARS);
            let counters = std::mem::take(&mut d.counters);
            let full = self.netdevs.len() >= MAX_PORTS_PER_NODE;
            match self.netdevs.iter_mut().find(|v| v.latest.iface == d.iface) {
                Some(v) => {
                    v.counters.push(at, counters);
                    v.latest = d;
                }
                None if full => {
                    self.drop_over_limit(|| format!(
                        "interface {:?}: a node has at most {MAX_PORTS_PER_NODE} Ethernet interfaces",
                        crate::model::strip_controls(&d.iface)
                    ));
                }
                None => {
                    let mut window = CounterWindow::default();
                    window.push(at, counters);
                    self.netdevs.push(NetView {
                        latest: d,
                        counters: window,
                    });
                    self.netdevs
                        .sort_by(|a, b| a.latest.iface.cmp(&b.latest.iface));
                }
            }
        }
        for mut nic in frame.nics {
            nic.device = crate::model::fit(&nic.device, PORT_NAME_CHARS);
            let key = (nic.device.as_str(), nic.port);
            match self
                .nics
                .binary_search_by(|v| (v.latest.device.as_str(), v.latest.port).cmp(&key))
            {
                Ok(i) => self.nics[i].ingest(at, nic),
                Err(_) if self.nics.len() >= MAX_PORTS_PER_NODE => {
                    self.drop_over_limit(|| {
                        format!(
                            "RDMA port {:?}/{}: a node has at most {MAX_PORTS_PER_NODE} ports",
                            crate::model::strip_controls(&nic.device),
                            nic.port
                        )
                    });
                }
                Err(i) => {
                    let mut view = NicView::new(self.period);
                    view.ingest(at, nic);
                    self.nics.insert(i, view);
                }
            }
        }
        self.last_frame_ms = Some(self.last_frame_ms.map_or(at, |t| t.max(at)));
        self.link = NodeLink::Streaming;
    }
}

/// Where a phase stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    /// Not started.
    Pending,
    /// Running now.
    Running,
    /// Ended with a verdict.
    Done(Verdict),
}

/// One message size of a bus-bandwidth sweep, across the nodes that reported it.
#[derive(Debug, Clone, Default)]
pub struct BusBwRow {
    /// busbw per reporting node (`"all"` for one multi-node job).
    pub per_node: BTreeMap<String, f64>,
    /// Sum of #wrong over the rows that had validation on.
    pub wrong: u64,
    /// True when some row had validation off (`N/A`): correctness is then unproven.
    pub unvalidated: bool,
    /// Ranks of the job.
    pub ranks: u32,
}

impl BusBwRow {
    /// Median busbw over the reporting nodes.
    pub fn median(&self) -> Option<f64> {
        median(self.per_node.values().copied())
    }

    /// The slowest node and its busbw.
    pub fn slowest(&self) -> Option<(&str, f64)> {
        self.per_node
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(n, v)| (n.as_str(), *v))
    }
}

/// Median of some numbers (the upper one of the middle pair).
pub fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One phase as the console sees it.
#[derive(Debug, Clone)]
pub struct PhaseView {
    /// The plan's entry.
    pub spec: std::sync::Arc<PhaseSpec>,
    /// Where it stands.
    pub state: PhaseState,
    /// When it last started.
    pub started_ms: Option<UnixMillis>,
    /// When it last ended.
    pub finished_ms: Option<UnixMillis>,
    /// Why the verdict is what it is.
    pub reason: Option<String>,
    /// Output lines, newest last, bounded.
    pub log: VecDeque<String>,
    /// Lines dropped from the front of `log`.
    pub log_dropped: u64,
    /// Bus-bandwidth sweep by message size.
    pub busbw: BTreeMap<u64, BusBwRow>,
    /// Collective of the sweep.
    pub collective: Option<String>,
    /// The current run's figure-bearing metrics (GEMM, bandwidths, steps, named figures), for
    /// comparing peers while it runs; the oldest steps go first past [`PHASE_METRICS_KEPT`].
    pub figure_metrics: Vec<PhaseMetric>,
    /// Bumped whenever `figure_metrics` changes, so readers can cache what they derive.
    pub metrics_version: u64,
    /// The current run's checks (T0, T1): node, check, outcome, the line it read.
    pub checks: Vec<CheckRow>,
    /// A `together` phase's figures beside each member's run alone (sent as it ends).
    pub together: Vec<crate::plan::gates::FigureChange>,
    /// A drill's outcomes so far, step by step.
    pub drill: Vec<crate::plan::drill::SeriesOutcome>,
    /// What a drill asks the operator now.
    pub prompt: Option<String>,
}

/// One check of one node, as the phase's checklist shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    /// Node.
    pub node: String,
    /// Check name (`driver-branch`, `xid`, …).
    pub name: String,
    /// Outcome.
    pub status: crate::phases::CheckStatus,
    /// What it read.
    pub detail: String,
}

/// Check rows a phase view keeps (T0/T1 print a few dozen per node).
pub const CHECKS_KEPT: usize = 10_000;

/// Message sizes of the busbw sweep a phase view keeps (nccl-tests' 8 B to 16 GiB by 2× is 32).
pub const BUSBW_SIZES_KEPT: usize = 256;

/// Figure-bearing metrics a phase view keeps; past this, the older half of the steps is dropped.
pub const PHASE_METRICS_KEPT: usize = 20_000;

impl PhaseView {
    fn keep_metric(&mut self, metric: PhaseMetric) {
        if self.figure_metrics.len() >= PHASE_METRICS_KEPT {
            let steps = self
                .figure_metrics
                .iter()
                .filter(|m| matches!(m, PhaseMetric::Step { .. }))
                .count();
            // Steps are many and only their recent median matters; other figures are few, so
            // they go only when there are no steps to drop.
            let only_steps = steps > 0;
            let mut drop = if only_steps {
                steps / 2
            } else {
                self.figure_metrics.len() / 2
            };
            self.figure_metrics.retain(|m| {
                if drop > 0 && (!only_steps || matches!(m, PhaseMetric::Step { .. })) {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
        self.figure_metrics.push(metric);
        self.metrics_version += 1;
    }
}

impl PhaseView {
    /// Seconds it has run (or ran), as of `now_ms`.
    pub fn elapsed_s(&self, now_ms: UnixMillis) -> Option<u64> {
        let start = self.started_ms?;
        let end = match self.state {
            PhaseState::Running => now_ms,
            _ => self.finished_ms.unwrap_or(now_ms),
        };
        Some(end.saturating_sub(start) / 1000)
    }
}

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
}

impl StorageView {
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
    fn reset(&mut self, phase: String) {
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
}

impl Default for ClusterStore {
    fn default() -> Self {
        Self::new()
    }
}

fn phase_views(plan: &Plan) -> Vec<PhaseView> {
    fresh_views(plan.phases.iter())
}

fn fresh_views<'a>(specs: impl Iterator<Item = &'a std::sync::Arc<PhaseSpec>>) -> Vec<PhaseView> {
    specs
        .map(|spec| PhaseView {
            spec: spec.clone(),
            state: PhaseState::Pending,
            started_ms: None,
            finished_ms: None,
            reason: None,
            log: VecDeque::new(),
            log_dropped: 0,
            busbw: BTreeMap::new(),
            collective: None,
            figure_metrics: Vec::new(),
            metrics_version: 0,
            checks: Vec::new(),
            together: Vec::new(),
            drill: Vec::new(),
            prompt: None,
        })
        .collect()
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
        *self = Self::with_period(self.period);
        self.phases = phases;
    }

    /// An empty store over the default plan, sampled every second.
    pub fn new() -> Self {
        Self::with_period(Period::SECOND)
    }

    /// An empty store for sources that sample every `period`.
    pub fn with_period(period: Period) -> Self {
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
        }
    }

    fn node_mut(&mut self, name: &str) -> &mut NodeView {
        let idx = match self.node_index.get(name) {
            Some(&i) => i,
            None => {
                self.nodes
                    .push(NodeView::new(name.to_string(), self.period));
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
            SourceEvent::Hello(hello) => {
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
                }
                if s.node.as_deref() == Some(node.as_str()) {
                    s.ingest(window);
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
            | PhaseMetric::Problem { .. }
            | PhaseMetric::Together { .. }
            | PhaseMetric::Drill { .. }
            | PhaseMetric::LatencyCdf { .. } => {}
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};

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
        let mut gpu = GpuView::new(0, Period::SECOND);
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
        assert_eq!(n09.nics.len(), crate::sources::sim::NICS_PER_NODE);
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
