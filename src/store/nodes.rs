//! A node as the store keeps it: its GPUs with their histories and counter windows, its RDMA
//! ports and interfaces, bounded per node.

use super::*;

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
    /// NVLink and PCIe error counters (cumulative, as read), over the counter window.
    pub error_counts: ChangeWindow<ErrorCounts>,
    /// GPM SM activity, percent (Hopper and later; gaps elsewhere).
    pub sm_active_pct: History,
    /// PCIe transmit, bytes/s (a hung GPU's link is quiet).
    pub pcie_tx: History,
    /// PCIe receive, bytes/s.
    pub pcie_rx: History,
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

    pub(super) fn new(index: u32, period: Period, slots: usize) -> Self {
        let h = || History::new(period, slots);
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
            error_counts: ChangeWindow::default(),
            sm_active_pct: h(),
            pcie_tx: h(),
            pcie_rx: h(),
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

    pub(super) fn ingest(&mut self, at_ms: UnixMillis, mut sample: GpuSample) {
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
        self.error_counts.push(
            at_ms,
            ErrorCounts {
                nvlink_crc: sample.nvlink_crc_errors,
                nvlink_replay: sample.nvlink_replay_errors,
                nvlink_recovery: sample.nvlink_recovery_errors,
                pcie_replay: sample.pcie_replay_count,
            },
        );
        self.sm_active_pct.push(at_ms, f(sample.sm_active_pct));
        self.pcie_tx.push(at_ms, sample.pcie_tx_bytes_per_sec);
        self.pcie_rx.push(at_ms, sample.pcie_rx_bytes_per_sec);
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

/// Change points a [`ChangeWindow`] holds at most (a value that changes every sample at a
/// 100 ms period still fits a 10 s window).
const WINDOW_CHANGES: usize = 128;

/// Recent values of cumulative counters, for "did it rise lately" questions over windows up
/// to [`COUNTER_WINDOW_MS`](crate::model::thresholds::COUNTER_WINDOW_MS), exact in `u64`.
///
/// Only changes are kept, and only as far back as that window needs: a sample equal to the
/// last one moves the clock on without a copy. Keeping every port's sample of the last minute
/// cost 48 MB at 128 nodes (the largest share of the console's heap, measured with heaptrack);
/// most counters of a healthy port never move. A counter kept in an `f32` history loses its
/// rises past 2^24 (16.7 million), which a long-lived link's CRC counter can pass.
#[derive(Debug, Clone)]
pub struct ChangeWindow<T> {
    /// (first seen at, value) for each change, oldest first.
    changes: VecDeque<(UnixMillis, T)>,
    /// When the newest sample came.
    newest_at: UnixMillis,
}

impl<T> Default for ChangeWindow<T> {
    fn default() -> Self {
        Self {
            changes: VecDeque::new(),
            newest_at: 0,
        }
    }
}

impl<T: PartialEq> ChangeWindow<T> {
    /// Take the sample read at `at_ms`; one older than the newest is dropped (a late frame must
    /// not rewrite the window).
    pub fn push(&mut self, at_ms: UnixMillis, value: T) {
        if at_ms < self.newest_at {
            return;
        }
        self.newest_at = at_ms;
        if self.changes.back().is_some_and(|(_, c)| *c == value) {
            return;
        }
        if self.changes.len() == WINDOW_CHANGES {
            self.changes.pop_front();
        }
        self.changes.push_back((at_ms, value));
        // The oldest change is needed only while it is the value at the window's start.
        let start = self
            .newest_at
            .saturating_sub(crate::model::thresholds::COUNTER_WINDOW_MS);
        while self.changes.get(1).is_some_and(|(at, _)| *at <= start) {
            self.changes.pop_front();
        }
    }

    /// The newest value.
    pub fn newest(&self) -> Option<&T> {
        self.changes.back().map(|(_, c)| c)
    }

    /// How much the counter that `read` picks rose over the last `window_ms`: its newest value
    /// against its value at the window's start (its oldest known when the window reaches
    /// further back than it was seen). 0 when it did not rise, or was reset.
    pub fn rise(&self, window_ms: u64, read: impl Fn(&T) -> Option<u64>) -> u64 {
        let start = self.newest_at.saturating_sub(window_ms);
        let from = self
            .changes
            .iter()
            .rposition(|(at, _)| *at <= start)
            .unwrap_or(0);
        let mut seen = self.changes.iter().skip(from).filter_map(|(_, v)| read(v));
        let first = seen.next();
        match (first, seen.last()) {
            (Some(then), Some(now)) if now > then => now - then,
            _ => 0,
        }
    }
}

/// Recent snapshots of a port's cumulative counters.
pub type CounterWindow = ChangeWindow<PortCounters>;

impl CounterWindow {
    /// `name +N` for each of `names` that rose over the last `window_ms`, in `names` order.
    pub fn rises(&self, names: &[&str], window_ms: u64) -> Vec<String> {
        names
            .iter()
            .filter_map(|c| {
                let r = self.rise_of(c, window_ms);
                (r > 0).then(|| format!("{c} +{r}"))
            })
            .collect()
    }

    /// How much the counter named `counter` rose over the last `window_ms`.
    pub fn rise_of(&self, counter: &str, window_ms: u64) -> u64 {
        self.rise(window_ms, |c| c.get(counter))
    }
}

/// A GPU's cumulative error counters, exact (see [`ChangeWindow`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// NVLink CRC errors, all links.
    pub nvlink_crc: Option<u64>,
    /// NVLink replay errors, all links.
    pub nvlink_replay: Option<u64>,
    /// NVLink recovery errors, all links.
    pub nvlink_recovery: Option<u64>,
    /// PCIe replays.
    pub pcie_replay: Option<u64>,
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
    fn new(period: Period, slots: usize) -> Self {
        Self {
            latest: NicSample::default(),
            tx: History::new(period, slots),
            rx: History::new(period, slots),
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
        self.counters.rise_of(counter, window_ms)
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
    /// Slots of each history.
    history_slots: usize,
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
    pub(super) fn new(name: String, period: Period, history_slots: usize) -> Self {
        Self {
            name,
            link: NodeLink::Connecting,
            hello: None,
            last_frame_ms: None,
            gpus: Vec::new(),
            nvlink_tx: History::new(period, history_slots),
            nvlink_rx: History::new(period, history_slots),
            nics: Vec::new(),
            expected_gpus: None,
            expected_nic_rate_gbps: None,
            netdevs: Vec::new(),
            period,
            history_slots,
            garbled_lines: 0,
            note: None,
            over_limit: None,
            over_limit_samples: 0,
        }
    }

    /// The GPU of this index, made on first sight; `None` past [`MAX_GPUS_PER_NODE`] (counted
    /// in `over_limit`): a hostile or broken stream cannot grow the store without bound.
    pub(super) fn gpu_mut(&mut self, index: u32) -> Option<&mut GpuView> {
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
                    self.gpus
                        .insert(pos, GpuView::new(index, self.period, self.history_slots));
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

    pub(super) fn ingest(&mut self, frame: NodeFrame) {
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
                    let mut view = NicView::new(self.period, self.history_slots);
                    view.ingest(at, nic);
                    self.nics.insert(i, view);
                }
            }
        }
        self.last_frame_ms = Some(self.last_frame_ms.map_or(at, |t| t.max(at)));
        self.link = NodeLink::Streaming;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::thresholds::COUNTER_WINDOW_MS;

    fn counters(symbol_error: u64, xmit_wait: u64) -> PortCounters {
        PortCounters {
            symbol_error: Some(symbol_error),
            port_xmit_wait: Some(xmit_wait),
            ..PortCounters::default()
        }
    }

    #[test]
    fn a_rise_is_counted_for_the_window_after_it_and_not_after() {
        let mut w = CounterWindow::default();
        for s in 0..30u64 {
            // symbol_error rises by 5 at second 20.
            let errors = if s >= 20 { 5 } else { 0 };
            w.push(s * 1000, counters(errors, 0));
            let rise = w.rise_of("symbol_error", COUNTER_WINDOW_MS);
            if (20..30).contains(&s) {
                assert_eq!(rise, 5, "second {s}");
            } else {
                assert_eq!(rise, 0, "second {s}");
            }
        }
        w.push(30_000, counters(5, 0));
        assert_eq!(
            w.rise_of("symbol_error", COUNTER_WINDOW_MS),
            0,
            "10 s after"
        );
        assert_eq!(w.rises(&["symbol_error"], 11_000), vec!["symbol_error +5"]);
        assert_eq!(w.newest().and_then(|c| c.symbol_error), Some(5));
    }

    #[test]
    fn a_port_seen_for_less_than_the_window_is_judged_from_its_first_sample() {
        let mut w = CounterWindow::default();
        w.push(1000, counters(7, 0));
        w.push(2000, counters(9, 0));
        assert_eq!(w.rise_of("symbol_error", COUNTER_WINDOW_MS), 2);
        // A reset (the port came back) is no rise.
        w.push(3000, counters(1, 0));
        assert_eq!(w.rise_of("symbol_error", 500), 0);
    }

    #[test]
    fn the_window_holds_changes_only_and_only_as_far_back_as_it_needs() {
        let mut w = CounterWindow::default();
        for s in 0..10_000u64 {
            w.push(s * 1000, counters(3, 0));
        }
        assert_eq!(w.changes.len(), 1, "a quiet port keeps one copy");
        // port_xmit_wait moves every second under traffic: the last 10 s and one before.
        for s in 10_000..20_000u64 {
            w.push(s * 1000, counters(3, s));
        }
        let per_second = (COUNTER_WINDOW_MS / 1000) as usize;
        assert!(w.changes.len() <= per_second + 1, "{}", w.changes.len());
        assert_eq!(
            w.rise_of("port_xmit_wait", COUNTER_WINDOW_MS),
            10,
            "one a second for 10 s"
        );
        // Every 10 ms (faster than any period), the cap holds.
        for ms in 0..50_000u64 {
            w.push(20_000_000 + ms * 10, counters(3, ms));
        }
        assert!(w.changes.len() <= WINDOW_CHANGES);
    }
}
