//! Rules over the cluster store that point at the GPU, link or service in trouble and say why,
//! with the evidence numbers and the next step. They read only what sources report, so they work
//! the same on the simulator and on real nodes. This is the first rule set; thresholds from
//! burnin.toml, hysteresis and the full Xid playbook come with the triage issue.

use std::collections::HashMap;

use serde::Serialize;

use crate::cluster::{ClusterStore, GpuView, NodeView, median};
use crate::model::{NodeLink, UnixMillis, clock_events};
use crate::telemetry::history::History;

/// How bad a finding is. Ordered so that sorting puts the worst first when reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a fault.
    Info,
    /// Needs a look; may fail a gate.
    Warn,
    /// Broken: a GPU, link or node is out of the run.
    Crit,
}

impl Severity {
    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Crit => "CRIT",
        }
    }
}

/// One thing triage found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// Rule that fired, e.g. "stalled".
    pub rule: &'static str,
    /// Node, if the finding is about one.
    pub node: Option<String>,
    /// GPU index, if the finding is about one.
    pub gpu: Option<u32>,
    /// When the rule first fired for this subject (kept while it keeps firing).
    pub since_ms: UnixMillis,
    /// One line with the evidence numbers.
    pub why: String,
    /// What an engineer would do next.
    pub next: &'static str,
}

impl Finding {
    /// "node07 GPU3", "node02", or "AIStor".
    pub fn subject(&self) -> String {
        match (&self.node, self.gpu) {
            (Some(n), Some(g)) => format!("{n} GPU{g}"),
            (Some(n), None) => n.clone(),
            _ => self.rule_subject().to_string(),
        }
    }

    fn rule_subject(&self) -> &'static str {
        match self.rule {
            "aistor-latency" | "aistor-errors" => "AIStor",
            "nic-down" | "nic-slow" | "nic-errors" | "nic-retrans" | "nic-congested"
            | "netdev-down" | "netdev-errors" | "netdev-drops" => "fabric",
            "dataloader-wait" => "dataloader",
            _ => "cluster",
        }
    }
}

/// How long a GPU must have been idle, amid loaded peers, to count as stalled.
pub const STALL_WINDOW_MS: u64 = 10_000;
/// How far back error counters must not rise.
pub const COUNTER_WINDOW_MS: u64 = 10_000;

/// Samples covering `window_ms` at `period_ms` (at least three, so one odd sample never decides).
pub fn samples_in(window_ms: u64, period_ms: u64) -> usize {
    (window_ms.div_ceil(period_ms.max(1)) as usize).max(3)
}
/// Below this utilization a GPU counts as idle.
pub const STALL_UTIL_PCT: f64 = 5.0;
/// Peers' median utilization above which the node counts as loaded.
pub const LOADED_UTIL_PCT: f64 = 50.0;
/// A GPU under this share of its peers' median power while they are loaded is stalled.
pub const STALL_POWER_SHARE: f64 = 0.40;
/// AIStor p99 TTFB above this is a finding.
pub const AISTOR_P99_TTFB_MS: f64 = 200.0;
/// Dataloader wait above this share of step time is a finding.
pub const LOADER_WAIT_SHARE: f64 = 0.10;

/// The numbers the rules judge by: burnin.toml's `[triage]` table, or these defaults (sensible
/// for H200/B300 under a burn-in load).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// How long a GPU must be idle amid loaded peers to count as stalled, ms.
    pub stall_window_ms: u64,
    /// Below this utilization a GPU counts as idle, %.
    pub stall_util_pct: f64,
    /// Peers' median utilization above which the node counts as loaded, %.
    pub loaded_util_pct: f64,
    /// Under this share of its peers' median power, a GPU of a loaded node is stalled, %.
    pub stall_power_pct: f64,
    /// AIStor GET p99 TTFB above this is a finding, ms.
    pub aistor_p99_ttfb_ms: f64,
    /// Dataloader wait above this share of step time is a finding, %.
    pub loader_wait_pct: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            stall_window_ms: STALL_WINDOW_MS,
            stall_util_pct: STALL_UTIL_PCT,
            loaded_util_pct: LOADED_UTIL_PCT,
            stall_power_pct: STALL_POWER_SHARE * 100.0,
            aistor_p99_ttfb_ms: AISTOR_P99_TTFB_MS,
            loader_wait_pct: LOADER_WAIT_SHARE * 100.0,
        }
    }
}

/// What an Xid means, how bad it is, and what an engineer does next (NVIDIA's Xid catalogue,
/// shortened for one line each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    /// What happened.
    pub meaning: &'static str,
    /// Crit for the hardware's own faults; warn where the application is the usual cause (a GPU
    /// fault only if it recurs across jobs) or the GPU only asks for a reset later.
    pub severity: Severity,
    /// The next step.
    pub next: &'static str,
}

const XID_UNKNOWN_NEXT: &str =
    "drain the node; collect nvidia-bug-report.sh; look the code up in NVIDIA's Xid catalogue";

/// The playbook entry for an Xid code.
pub fn xid_info(code: u32) -> XidInfo {
    use Severity::{Crit, Warn};
    let (meaning, severity, next) = match code {
        13 => (
            "graphics engine exception (often the application: illegal instruction or address)",
            Warn,
            "read the job's error; if burnin's own workload or several jobs hit it, run dcgmi diag -r 3 on the GPU",
        ),
        31 => (
            "GPU memory page fault (usually an illegal address in the application)",
            Warn,
            "check the job for an illegal memory access; if it recurs across jobs, run dcgmi diag -r 3",
        ),
        43 => (
            "GPU stopped processing (a channel was reset; usually the application faulted)",
            Warn,
            "look at the job that was stopped; the GPU itself keeps working",
        ),
        45 => (
            "preemptive cleanup after earlier errors",
            Warn,
            "look at the Xid before it on this GPU: that one is the cause",
        ),
        48 => (
            "double-bit ECC error (uncorrectable memory error)",
            Crit,
            "drain the GPU, reset it so the row is remapped, check remapped rows; RMA if it recurs",
        ),
        61 => (
            "internal micro-controller breakpoint/warning",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU; check driver and firmware versions if it recurs",
        ),
        62 => (
            "internal micro-controller halt",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU; RMA if it recurs",
        ),
        63 => (
            "ECC row remap recorded (takes effect at the next GPU reset)",
            Warn,
            "reset the GPU at the next drain so the remap applies; watch the remapped-row counts",
        ),
        64 => (
            "ECC row remap failed to record",
            Crit,
            "drain the GPU: it cannot remap the failing row; RMA",
        ),
        74 => (
            "NVLink error",
            Crit,
            "read nvidia-smi nvlink -e and the fabric manager log; reset the GPU; RMA the board if it recurs",
        ),
        79 => (
            "GPU has fallen off the bus",
            Crit,
            "check power, PCIe seating and temperatures; reboot the node; RMA if it recurs",
        ),
        92 => (
            "high single-bit ECC error rate",
            Warn,
            "watch the corrected ECC counts; run dcgmi diag -r 3; plan an RMA if the rate stays high",
        ),
        94 => (
            "contained ECC error (the job on that memory was stopped)",
            Crit,
            "reset the GPU once drained so the row is remapped; check remapped rows",
        ),
        95 => (
            "uncontained ECC error (every job on the GPU is affected)",
            Crit,
            "drain and reset the GPU now; check row remapping; RMA if it recurs",
        ),
        119 => (
            "GSP RPC timeout (the GPU's firmware did not answer)",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU or reboot the node; check the driver version",
        ),
        120 => (
            "GSP error (the GPU's firmware faulted)",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU or reboot the node; check the driver version",
        ),
        140 => (
            "unrecovered ECC error",
            Crit,
            "drain and reset the GPU; check row remapping; RMA if it recurs",
        ),
        _ => ("see NVIDIA's Xid catalogue", Crit, XID_UNKNOWN_NEXT),
    };
    XidInfo {
        meaning,
        severity,
        next,
    }
}

/// What an Xid code means (see [`xid_info`]).
pub fn xid_meaning(code: u32) -> &'static str {
    xid_info(code).meaning
}

/// Evaluates the rules and remembers since when each finding has held.
#[derive(Debug, Clone, Default)]
pub struct Triage {
    since: HashMap<(&'static str, Option<String>, Option<u32>), UnixMillis>,
    thresholds: Thresholds,
}

impl Triage {
    /// A triage with no history and the default thresholds.
    pub fn new() -> Self {
        Self::default()
    }

    /// A triage with no history judging by `thresholds`.
    pub fn with_thresholds(thresholds: Thresholds) -> Self {
        Self {
            since: HashMap::new(),
            thresholds,
        }
    }

    /// The thresholds it judges by.
    pub fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// Run every rule over `store`; findings sorted worst first, then by subject.
    pub fn evaluate(&mut self, store: &ClusterStore) -> Vec<Finding> {
        let now = store.now_ms;
        let mut raw = Vec::new();
        let t = &self.thresholds;
        let windows = Windows {
            stall: samples_in(t.stall_window_ms, store.period_ms),
            counter: samples_in(COUNTER_WINDOW_MS, store.period_ms),
            stall_s: t.stall_window_ms / 1000,
            thresholds: *t,
        };
        for node in &store.nodes {
            node_rules(node, &windows, &mut raw);
        }
        fabric_rules(store, COUNTER_WINDOW_MS, &mut raw);
        cluster_rules(store, t, &mut raw);

        let mut since = HashMap::with_capacity(raw.len());
        let mut findings: Vec<Finding> = raw
            .into_iter()
            .map(|(severity, rule, node, gpu, why, next)| {
                let key = (rule, node.clone(), gpu);
                let t = self.since.get(&key).copied().unwrap_or(now);
                since.insert(key, t);
                Finding {
                    severity,
                    rule,
                    node,
                    gpu,
                    since_ms: t,
                    why,
                    next,
                }
            })
            .collect();
        self.since = since;
        findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then_with(|| a.node.cmp(&b.node))
                .then_with(|| a.gpu.cmp(&b.gpu))
                .then_with(|| a.rule.cmp(b.rule))
        });
        findings
    }
}

type RawFinding = (
    Severity,
    &'static str,
    Option<String>,
    Option<u32>,
    String,
    &'static str,
);

/// Rule windows in samples at the store's period.
struct Windows {
    stall: usize,
    counter: usize,
    stall_s: u64,
    thresholds: Thresholds,
}

fn node_rules(node: &NodeView, windows: &Windows, out: &mut Vec<RawFinding>) {
    let name = Some(node.name.clone());
    match &node.link {
        NodeLink::Unreachable(reason) => {
            out.push((
                Severity::Crit,
                "unreachable",
                name,
                None,
                format!("cannot reach the node: {reason}"),
                "check the node's power and network; ssh to it by hand",
            ));
            return;
        }
        NodeLink::Stale => out.push((
            Severity::Warn,
            "stale",
            name.clone(),
            None,
            "no telemetry frame for more than 3 periods".into(),
            "check the SSH session and the agent on the node",
        )),
        NodeLink::Connecting | NodeLink::Streaming => {}
    }

    // GPUs missing from the count: the hello lists what the node sees.
    if node.link == NodeLink::Streaming
        && let (Some(want), Some(hello)) = (node.expected_gpus, &node.hello)
        && (hello.gpus.len() as u32) < want
    {
        let have = hello.gpus.len();
        let why = match &node.note {
            Some(note) if have == 0 => format!("0 of {want} GPUs answer: {note}"),
            _ => format!("{have} of {want} GPUs answer"),
        };
        out.push((
            Severity::Crit,
            "gpus-missing",
            Some(node.name.clone()),
            None,
            why,
            "nvidia-smi -L and dmesg on the node (Xid 79, fallen off the bus, driver not loaded)",
        ));
    }
    for gpu in &node.gpus {
        gpu_rules(node, gpu, windows, out);
    }
}

/// Port counters whose rise means a bad link (cable, transceiver, port).
const LINK_ERROR_COUNTERS: &[&str] = &[
    "symbol_error",
    "link_error_recovery",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "port_rcv_remote_physical_errors",
    "excessive_buffer_overrun_errors",
];

/// `port_xmit_wait` ticks per second above which a port counts as waiting to send. A tick is a
/// device-specific interval (tens of ns on ConnectX), so this is a heuristic: it matters only
/// together with low throughput, which is what congestion (not load) looks like.
pub const XMIT_WAIT_TICKS_PER_SEC: f64 = 1.0e6;
/// Line-rate share below which a waiting port is congested rather than busy.
pub const CONGESTED_LINE_SHARE: f64 = 0.25;

/// Counters whose rise means RDMA retransmissions (RoCE and IB reliable connections).
const RETRANS_COUNTERS: &[&str] = &[
    "roce_adp_retrans",
    "local_ack_timeout_err",
    "out_of_sequence",
    "packet_seq_err",
];

/// RDMA ports: down, trained below their peers, erroring, retransmitting.
fn fabric_rules(store: &ClusterStore, window_ms: u64, out: &mut Vec<RawFinding>) {
    // The expected rate is what most ports of the same link layer trained at.
    let mut rates: HashMap<(&str, u32), usize> = HashMap::new();
    for n in &store.nodes {
        for p in &n.nics {
            if let Some(r) = p.latest.rate_gbps {
                let layer = p.latest.link_layer.as_deref().unwrap_or("");
                *rates.entry((layer, r.to_bits())).or_default() += 1;
            }
        }
    }
    let usual = |layer: &str| {
        rates
            .iter()
            .filter(|((l, _), _)| *l == layer)
            .max_by_key(|(k, count)| (**count, k.1))
            .map(|((_, r), _)| f32::from_bits(*r))
    };
    let secs = window_ms / 1000;
    for n in &store.nodes {
        if matches!(n.link, NodeLink::Unreachable(_)) {
            continue;
        }
        // A GPU whose nearest NICs are all down sends its traffic the long way, or not at all.
        if let Some(topo) = n.hello.as_ref().and_then(|h| h.topology.as_ref()) {
            for place in &topo.gpus {
                let ports: Vec<&crate::cluster::NicView> = n
                    .nics
                    .iter()
                    .filter(|p| place.nearest_nics.contains(&p.latest.device))
                    .collect();
                if !ports.is_empty() && ports.iter().all(|p| !p.latest.is_up()) {
                    let names: Vec<String> = ports.iter().map(|p| p.latest.label()).collect();
                    out.push((
                        Severity::Crit,
                        "gpu-nic-down",
                        Some(n.name.clone()),
                        Some(place.index),
                        format!("nearest NIC {} is down; GPUDirect RDMA for this GPU crosses to a farther NIC", names.join(", ")),
                        "bring the port up (cable, switch port) before multi-node phases",
                    ));
                }
            }
        }
        for view in &n.netdevs {
            let d = &view.latest;
            if d.operstate.as_deref().is_some_and(|s| s != "up") {
                out.push((
                    Severity::Warn,
                    "netdev-down",
                    Some(n.name.clone()),
                    None,
                    format!("{} is {}", d.iface, d.operstate.as_deref().unwrap_or("?")),
                    "check the cable and the switch port; for a bond, its members",
                ));
                continue;
            }
            let errors = view.counters.rises(
                &[
                    "rx_errors",
                    "tx_errors",
                    "rx_crc_errors",
                    "tx_carrier_errors",
                ],
                window_ms,
            );
            if !errors.is_empty() {
                out.push((
                    Severity::Warn,
                    "netdev-errors",
                    Some(n.name.clone()),
                    None,
                    format!("{}: {} in the last {secs} s", d.iface, errors.join(", ")),
                    "ethtool -S on the interface; replace the cable/transceiver if CRC errors keep rising",
                ));
            }
            let drops = view
                .counters
                .rises(&["rx_dropped", "tx_dropped", "rx_missed_errors"], window_ms);
            if !drops.is_empty() {
                out.push((
                    Severity::Info,
                    "netdev-drops",
                    Some(n.name.clone()),
                    None,
                    format!("{}: {} in the last {secs} s", d.iface, drops.join(", ")),
                    "ring buffer size and IRQ affinity (ethtool -g/-G); drops slow the S3 path",
                ));
            }
        }
        for p in &n.nics {
            let l = &p.latest;
            let subject = Some(n.name.clone());
            let port = l.label();
            if !l.is_up() {
                out.push((
                    Severity::Crit,
                    "nic-down",
                    subject,
                    None,
                    format!(
                        "{port} is {} ({})",
                        l.state.as_deref().unwrap_or("in an unknown state"),
                        l.phys_state.as_deref().unwrap_or("physical state n/a")
                    ),
                    "check the cable, transceiver and switch port; ibstat on the node",
                ));
                continue;
            }
            let layer = l.link_layer.as_deref().unwrap_or("");
            let (want, whose) = match n.expected_nic_rate_gbps {
                Some(r) => (Some(r), "the inventory expects"),
                None => (usual(layer), "its peers run at"),
            };
            if let (Some(rate), Some(want)) = (l.rate_gbps, want)
                && rate < want
            {
                out.push((
                    Severity::Warn,
                    "nic-slow",
                    subject.clone(),
                    None,
                    format!("{port} trained at {rate:.0} Gb/s; {whose} {want:.0} Gb/s"),
                    "reseat or replace the cable/transceiver; check the switch port speed",
                ));
            }
            let link_errors = p.rises(LINK_ERROR_COUNTERS, window_ms);
            let downed = p.rise("link_downed", window_ms);
            if downed > 0 || !link_errors.is_empty() {
                let mut why = link_errors;
                if downed > 0 {
                    why.insert(0, format!("link_downed +{downed}"));
                }
                out.push((
                    if downed > 0 {
                        Severity::Crit
                    } else {
                        Severity::Warn
                    },
                    "nic-errors",
                    subject.clone(),
                    None,
                    format!("{port}: {} in the last {secs} s", why.join(", ")),
                    "ibdiagnet/perfquery on the link; replace the cable if errors keep rising",
                ));
            }
            let wait_per_s =
                p.rise("port_xmit_wait", window_ms) as f64 / (window_ms as f64 / 1000.0);
            if wait_per_s > XMIT_WAIT_TICKS_PER_SEC
                && p.line_share().is_some_and(|s| s < CONGESTED_LINE_SHARE)
            {
                out.push((
                    Severity::Warn,
                    "nic-congested",
                    subject.clone(),
                    None,
                    format!(
                        "{port} waits to send ({wait_per_s:.0} xmit_wait ticks/s) while moving {:.0} % of line rate",
                        p.line_share().unwrap_or(0.0) * 100.0
                    ),
                    "check PFC/ECN settings and the switch's egress queues on this path",
                ));
            }
            let retrans = p.rises(RETRANS_COUNTERS, window_ms);
            if !retrans.is_empty() {
                out.push((
                    Severity::Warn,
                    "nic-retrans",
                    subject,
                    None,
                    format!("{port}: {} in the last {secs} s", retrans.join(", ")),
                    "look for congestion (PFC/ECN/CNP counters) and lossy links on the path",
                ));
            }
        }
    }
}

fn gpu_rules(node: &NodeView, gpu: &GpuView, windows: &Windows, out: &mut Vec<RawFinding>) {
    let name = Some(node.name.clone());
    let idx = Some(gpu.index);
    if let Some(x) = gpu.xids.back() {
        let info = xid_info(x.code);
        out.push((
            info.severity,
            "xid",
            name.clone(),
            idx,
            format!("Xid {}: {}", x.code, info.meaning),
            info.next,
        ));
    }
    if gpu.is_lost() {
        out.push((
            Severity::Crit,
            "gpu-lost",
            name.clone(),
            idx,
            "NVML returns no readings for this GPU".into(),
            "check dmesg for Xid 79 / PCIe errors; the GPU needs a reset or reseat",
        ));
        return;
    }

    if let Some(why) = stall_evidence(node, gpu, windows) {
        out.push((
            Severity::Crit,
            "stalled",
            name.clone(),
            idx,
            why,
            "py-spy/cuda-gdb the rank on this GPU; check its NCCL peers and Xid log",
        ));
    }

    if let Some(sample) = &gpu.latest
        && let Some(mask) = sample.clock_event_reasons
        && mask & clock_events::TROUBLE != 0
    {
        let names = clock_events::describe(mask & clock_events::TROUBLE).join(", ");
        let clock = match (sample.sm_clock_mhz, gpu.sm_clock_max_mhz()) {
            (Some(c), Some(m)) => format!("SM {c}/{m} MHz"),
            (Some(c), None) => format!("SM {c} MHz"),
            _ => "SM clock n/a".into(),
        };
        let temp = sample
            .temperature_c
            .map_or_else(|| "temp n/a".into(), |t| format!("{t:.0} °C"));
        let hw = mask
            & (clock_events::HW_SLOWDOWN | clock_events::HW_THERMAL | clock_events::HW_POWER_BRAKE)
            != 0;
        out.push((
            if hw { Severity::Crit } else { Severity::Warn },
            "throttling",
            name.clone(),
            idx,
            format!("{names}: {clock} at {temp}"),
            "check inlet temperature, fans/liquid flow and the GPU's neighbours",
        ));
    }

    let crc_rise = counter_rise(&gpu.nvlink_crc, windows.counter);
    if crc_rise > 0.0 {
        out.push((
            Severity::Warn,
            "nvlink-errors",
            name,
            idx,
            format!(
                "NVLink CRC errors +{crc_rise:.0} in the last {} s",
                COUNTER_WINDOW_MS / 1000
            ),
            "nvidia-smi nvlink -e on the node; reseat or replace the link's tray/cable",
        ));
    }
}

/// Rise of a cumulative counter over the newest `n` samples (0 when it did not rise or reset).
fn counter_rise(h: &History, n: usize) -> f64 {
    let vals: Vec<f64> = h.tail(n + 1).flatten().collect();
    match (vals.first(), vals.last()) {
        (Some(first), Some(last)) if last > first => last - first,
        _ => 0.0,
    }
}

/// The newest samples of one metric, oldest first, gaps as `None`.
type Window = Vec<Option<f64>>;

/// Stalled: idle (or far under its peers' power) for every one of the newest samples while the
/// node's other GPUs are loaded. Returns the evidence line.
fn stall_evidence(node: &NodeView, gpu: &GpuView, windows: &Windows) -> Option<String> {
    let (n, window_s, t) = (windows.stall, windows.stall_s, &windows.thresholds);
    let window = |h: &History| h.tail(n).collect::<Vec<_>>();
    let mine_util = window(&gpu.util_pct);
    let mine_power = window(&gpu.power_watts);
    if mine_util.len() < n || mine_util.iter().any(Option::is_none) {
        return None;
    }
    let peers: Vec<(Window, Window)> = node
        .gpus
        .iter()
        .filter(|p| p.index != gpu.index && !p.is_lost())
        .map(|p| (window(&p.util_pct), window(&p.power_watts)))
        .collect();
    if peers.is_empty() {
        return None;
    }
    let (mut peer_util_sum, mut peer_power_sum, mut my_power_sum) = (0.0, 0.0, 0.0);
    for (i, (util, power)) in mine_util.iter().zip(&mine_power).enumerate() {
        let at = |v: &Window| v.get(i).copied().flatten();
        let peer_util = median(peers.iter().filter_map(|(u, _)| at(u)))?;
        let peer_power = median(peers.iter().filter_map(|(_, p)| at(p)));
        let util = (*util)?;
        let idle = util < t.stall_util_pct;
        let starved = matches!((power, peer_power),
            (Some(p), Some(pp)) if *p < t.stall_power_pct / 100.0 * pp);
        if peer_util < t.loaded_util_pct || !(idle || starved) {
            return None;
        }
        peer_util_sum += peer_util;
        peer_power_sum += peer_power.unwrap_or(0.0);
        my_power_sum += power.unwrap_or(0.0);
    }
    let k = n as f64;
    Some(format!(
        "util {:.0} % for {window_s} s while peers run at {:.0} %; power {:.0} W vs peers {:.0} W",
        gpu.util_pct.latest().unwrap_or(0.0),
        peer_util_sum / k,
        my_power_sum / k,
        peer_power_sum / k,
    ))
}

fn cluster_rules(store: &ClusterStore, t: &Thresholds, out: &mut Vec<RawFinding>) {
    if let Some(w) = &store.storage.latest {
        if w.ttfb_p99_ms > t.aistor_p99_ttfb_ms {
            out.push((
                Severity::Warn,
                "aistor-latency",
                None,
                None,
                format!(
                    "GET TTFB p99 {:.0} ms (p50 {:.0} ms) over {:.0} ms at {}",
                    w.ttfb_p99_ms, w.ttfb_p50_ms, t.aistor_p99_ttfb_ms, w.endpoint
                ),
                "check AIStor drive and node health, and fabric congestion counters",
            ));
        }
        if w.errors > 0 {
            out.push((
                Severity::Warn,
                "aistor-errors",
                None,
                None,
                format!(
                    "{} of {} GETs failed in the last window",
                    w.errors,
                    w.requests + w.errors
                ),
                "look at the probe's error classes and the AIStor server log",
            ));
        }
    }
    let loader = &store.loader;
    let loader_live = loader
        .phase
        .as_deref()
        .and_then(|p| store.phase(p))
        .is_some_and(|p| p.state == crate::cluster::PhaseState::Running);
    if loader_live
        && let Some(share) = loader.wait_share()
        && share * 100.0 > t.loader_wait_pct
    {
        out.push((
            Severity::Warn,
            "dataloader-wait",
            None,
            None,
            format!(
                "{} waits for data {:.0} % of step time (gate {:.0} %)",
                loader.phase.as_deref().unwrap_or("training"),
                share * 100.0,
                t.loader_wait_pct
            ),
            "raise loader workers/prefetch; compare with a local-NVMe run; check AIStor p99",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::SourceEvent;
    use crate::telemetry::sim::{FaultKind, SIM_EPOCH_MS, SimCluster, SimConfig};

    fn findings_at(config: SimConfig, s: u64) -> Vec<Finding> {
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
    fn findings_after(
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

    fn has(findings: &[Finding], rule: &str, subject: &str) -> bool {
        findings
            .iter()
            .any(|f| f.rule == rule && f.subject() == subject)
    }

    #[test]
    fn thresholds_decide_the_aistor_rule() {
        let mut store = ClusterStore::with_period(1000);
        store.ingest(crate::telemetry::SourceEvent::Probe(
            crate::probes::ProbeWindow {
                at_ms: 1_000,
                endpoint: "http://aistor:9000".into(),
                ttfb_p50_ms: 20.0,
                ttfb_p99_ms: 150.0,
                total_p99_ms: 900.0,
                throughput_bytes_per_sec: 1e9,
                requests: 100,
                errors: 0,
                concurrency: Some(16),
            },
        ));
        assert!(!has(
            &Triage::new().evaluate(&store),
            "aistor-latency",
            "cluster"
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
            assert_eq!(findings_at(config.clone(), s), vec![], "at {s} s");
        }
    }

    #[test]
    fn each_fault_fires_its_rule() {
        let only = |k: FaultKind| {
            let mut c = SimConfig::demo(1);
            c.faults.retain(|f| f.kind == k);
            c
        };
        assert!(has(
            &findings_at(only(FaultKind::Thermal), 35),
            "throttling",
            "node03 GPU5"
        ));
        assert!(has(
            &findings_at(only(FaultKind::NvlinkCrc), 70),
            "nvlink-errors",
            "node02 GPU1"
        ));
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
    }

    #[test]
    fn a_gpu_whose_nearest_nic_is_down_is_named() {
        let f = findings_after(1, 3, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                f.nics[1].state = Some("DOWN".into());
                f.nics[1].phys_state = Some("Disabled".into());
            }
        });
        let gpus: Vec<u32> = f
            .iter()
            .filter(|x| x.rule == "gpu-nic-down")
            .filter_map(|x| x.gpu)
            .collect();
        assert_eq!(gpus, [4, 5, 6, 7], "{f:?}");
        assert!(
            f.iter()
                .any(|x| x.rule == "nic-down" && x.why == "mlx5_1/1 is DOWN (Disabled)")
        );
    }

    #[test]
    fn waiting_while_idle_is_congestion_waiting_while_busy_is_not() {
        let mut wait = 0u64;
        let f = findings_after(1, 12, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                wait += 50_000_000;
                f.nics[0].counters.port_xmit_wait = Some(wait);
                f.nics[0].tx_bytes_per_sec = Some(2e9);
            }
        });
        assert!(
            f.iter()
                .any(|x| x.rule == "nic-congested" && x.why.starts_with("mlx5_0/1 waits")),
            "{f:?}"
        );
        assert!(
            !f.iter()
                .any(|x| x.rule == "nic-congested" && x.why.starts_with("mlx5_1/1"))
        );
    }

    #[test]
    fn ethernet_errors_warn_and_drops_inform() {
        use crate::model::NetSample;
        let mut k = 0u64;
        let f = findings_after(1, 5, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                k += 1;
                let counters = crate::model::PortCounters {
                    rx_crc_errors: Some(k * 3),
                    rx_dropped: Some(k),
                    tx_errors: Some(0),
                    ..Default::default()
                };
                f.netdevs = vec![
                    NetSample {
                        iface: "bond0".into(),
                        operstate: Some("up".into()),
                        counters,
                        ..NetSample::default()
                    },
                    NetSample {
                        iface: "eth3".into(),
                        operstate: Some("down".into()),
                        ..NetSample::default()
                    },
                ];
            }
        });
        let get = |rule: &str| {
            f.iter()
                .find(|x| x.rule == rule)
                .map(|x| (x.severity, x.why.clone()))
        };
        assert_eq!(
            get("netdev-errors"),
            Some((
                Severity::Warn,
                "bond0: rx_crc_errors +15 in the last 10 s".into()
            ))
        );
        assert_eq!(get("netdev-drops").map(|x| x.0), Some(Severity::Info));
        assert_eq!(
            get("netdev-down"),
            Some((Severity::Warn, "eth3 is down".into()))
        );
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
        assert_eq!(slow.len(), 2, "{slow:?}");
        assert!(slow.iter().all(|x| x.node.as_deref() == Some("node02")));
        assert!(slow[0].why.ends_with("the inventory expects 800 Gb/s"));
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
}
