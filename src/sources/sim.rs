//! The built-in simulated cluster: 12 nodes × 8 B300 plus an AIStor endpoint, deterministic for a
//! seed. It runs the T1–T8 plan on a compressed clock and injects faults on a timeline, speaking
//! the same [`SourceEvent`]s a real source sends. Every figure it makes is labelled simulated
//! where a user meets it (hello `agent_version`, endpoint name).
//!
//! The core ([`SimCluster`]) is a pure step function of simulated time, so tests and snapshots
//! drive it to an exact instant; [`SimSource`] paces it against the wall clock for `burnin demo`.
//!
//! The simulator makes figures, never verdicts: a phase's metrics, the lines its tool would
//! print, and the telemetry beside it go to the plan's own gates ([`crate::plan::gates::judge`])
//! with a real telemetry watch ([`TelemetryLog`]), judged against [`nominal_baseline`], the
//! figures of the simulated cluster in health. So the demo cannot drift from the gates a site
//! runs: change a gate in the plan and the demo's verdicts follow.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::phase::CheckStatus;
use crate::model::units::Period;
use crate::model::{
    GpuInfo, GpuSample, NicSample, NodeFrame, NodeHello, UnixMillis, XidEvent, clock_events,
};
use crate::model::{Source, SourceEvent, SourceTask};
use crate::phases::{PhaseCommand, PhaseEvent, PhaseMetric, Verdict};
use crate::plan::default_plan;
use crate::plan::gates::{self, Baseline, Observed};
use crate::probes::ProbeWindow;
use crate::triage::telemetry_log::TelemetryLog;

/// Start of simulated time: 2026-12-02 09:00:00 UTC. Fixed so seeded runs are identical.
pub const SIM_EPOCH_MS: UnixMillis = 1_796_202_000_000;
/// One telemetry sample per simulated second.
pub const SIM_PERIOD_MS: u64 = SIM_PERIOD.millis();
/// The same, as a period.
pub const SIM_PERIOD: Period = Period::SECOND;

const POWER_LIMIT_WATTS: f32 = 1100.0;
const IDLE_POWER_WATTS: f32 = 190.0;
const SM_CLOCK_MAX_MHZ: u32 = 1965;
const SM_CLOCK_IDLE_MHZ: u32 = 345;
const MEMORY_TOTAL_BYTES: u64 = 275_040 * 1024 * 1024;
const NVLINK_PEAK_BYTES_PER_SEC: f64 = 900e9;
const NVLINK_LINKS: u32 = 18;
/// NICs per simulated node: one 400G NDR port per GPU, rail-optimized (so a cross-node
/// all_reduce can reach the plan's 100 GB/s floor, as on a real HGX B300 node).
pub const NICS_PER_NODE: usize = 8;
const NIC_RATE_GBPS: f32 = 400.0;
const BF16_TFLOPS_NOMINAL: f64 = 1750.0;
const FP8_TFLOPS_NOMINAL: f64 = 3300.0;
/// nvbandwidth's copy-engine read/write between two GPUs of a node, per direction.
const NVLINK_PAIR_GB_PER_S: f64 = 742.0;
/// The nvbandwidth test cases T3 runs (the plan's command).
const NVBANDWIDTH_TESTS: [&str; 2] = [
    "device_to_device_memcpy_read_ce",
    "device_to_device_memcpy_write_ce",
];
/// T5's one-GPU run, before the full one (the scaling gate compares them).
const T5_ONE_GPU_STEPS: u64 = 20;
/// Tokens/s of the full T5 job against one GPU's × GPUs.
const T5_SCALING: f64 = 0.93;
/// A training step of T5 and T8 (before any data wait), and of T6.
const T5_STEP_MS: f64 = 810.0;
const T6_STEP_MS: f64 = 1240.0;
const NCCL_NODE_PEAK_BUSBW: f64 = 810.0;
/// all_reduce busbw across nodes: about 92 % of eight 400G rails (50 GB/s each).
const NCCL_NET_PEAK_BUSBW: f64 = 370.0;
const GAP_BETWEEN_PHASES_S: u64 = 2;
const STEP_TOKENS: f64 = 8.0 * 8192.0 * 4.0;

/// Simulated duration of each phase on the compressed clock, in seconds.
fn phase_duration_s(id: &str) -> u64 {
    match id {
        "T1" => 8,
        "T2" | "T6" => 40,
        "T3" => 30,
        _ => 60,
    }
}

/// A fault the simulator can inject. Names match `--fault NAME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// A GPU's utilization and power collapse while its peers stay loaded.
    Stall,
    /// A GPU enters hardware thermal slowdown.
    Thermal,
    /// Xid 79: a GPU falls off the bus and stops answering.
    Xid79,
    /// NVLink CRC error counters climb on a node.
    NvlinkCrc,
    /// AIStor p99 GET latency spikes.
    AistorP99,
    /// Dataloader wait rises during T8.
    LoaderWait,
    /// A node's second NIC port trained at 200G instead of 400G.
    Port200g,
    /// Symbol errors climb on a node's first NIC port.
    SymbolErrors,
    /// A GPU hangs in a collective: utilization reads 100 % while GPM shows almost no SM active.
    Hang,
    /// A GPU reports an uncorrectable ECC error (Xid 94) and a row remap pending a reset.
    Ecc,
    /// A GPU's PCIe replay counter climbs (a marginal riser or slot).
    PcieReplay,
    /// A GPU's application clocks are held low: it runs loaded at half its clock, no throttle bit.
    SlowClock,
}

impl FaultKind {
    /// Every fault, in the order `--fault` help lists them.
    pub const ALL: [FaultKind; 12] = [
        FaultKind::Stall,
        FaultKind::Thermal,
        FaultKind::Xid79,
        FaultKind::NvlinkCrc,
        FaultKind::AistorP99,
        FaultKind::LoaderWait,
        FaultKind::Port200g,
        FaultKind::SymbolErrors,
        FaultKind::Hang,
        FaultKind::Ecc,
        FaultKind::PcieReplay,
        FaultKind::SlowClock,
    ];

    /// The faults the demo plays when none are named (the first eight): one story per phase,
    /// so the demo stays readable; the others are there for `--fault NAME` and the tests.
    pub const DEMO: &[FaultKind] = Self::ALL.split_at(8).0;

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Stall => "stall",
            FaultKind::Thermal => "thermal",
            FaultKind::Xid79 => "xid79",
            FaultKind::NvlinkCrc => "nvlink-crc",
            FaultKind::AistorP99 => "aistor-p99",
            FaultKind::LoaderWait => "loader-wait",
            FaultKind::Port200g => "port-200g",
            FaultKind::SymbolErrors => "symbol-errors",
            FaultKind::Hang => "hang",
            FaultKind::Ecc => "ecc",
            FaultKind::PcieReplay => "pcie-replay",
            FaultKind::SlowClock => "slow-clock",
        }
    }

    /// Parse a command-line fault name.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault {name:?}; known: {}", names.join(", "))
            })
    }
}

/// One injected fault: what, where, from when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// Node index (0-based); ignored for cluster-wide faults.
    pub node: usize,
    /// GPU index on that node.
    pub gpu: u32,
    /// Simulated second the fault begins.
    pub from_s: u64,
    /// Simulated second it ends (exclusive); `None` for faults that persist, as real ones do.
    pub until_s: Option<u64>,
}

impl Fault {
    /// The demo's timeline for a fault: node07 GPU3 stalls during T4, node03 GPU5 overheats in
    /// T2, node11 GPU0 hits Xid 79 in T5, node02's NVLink CRCs climb in T3, AIStor p99 spikes and
    /// loader wait rises in T8; node05's second NIC port trained at 200G from the start, and
    /// node09's first port counts symbol errors from 40 s. Outside the demo's set: node04 GPU2
    /// hangs in T5's collective, node06 GPU6 hits an uncorrectable ECC error in T4, node08 GPU4's
    /// PCIe replays climb from 30 s, node10 GPU7 runs with its clocks held low from the start.
    pub fn scheduled(kind: FaultKind) -> Fault {
        let (node, gpu, from_s, until_s) = match kind {
            FaultKind::Thermal => (2, 5, 20, None),
            FaultKind::NvlinkCrc => (1, 1, 60, None),
            FaultKind::Stall => (6, 3, 110, None),
            FaultKind::Xid79 => (10, 0, 170, None),
            FaultKind::AistorP99 => (0, 0, 330, Some(346)),
            FaultKind::LoaderWait => (0, 0, 320, None),
            // `gpu` is the NIC port index for the fabric faults.
            FaultKind::Port200g => (4, 1, 0, None),
            FaultKind::SymbolErrors => (8, 0, 40, None),
            FaultKind::Hang => (3, 2, 160, None),
            FaultKind::Ecc => (5, 6, 90, None),
            FaultKind::PcieReplay => (7, 4, 30, None),
            FaultKind::SlowClock => (9, 7, 0, None),
        };
        Fault {
            kind,
            node,
            gpu,
            from_s,
            until_s,
        }
    }

    fn active_at(&self, s: u64) -> bool {
        s >= self.from_s && self.until_s.is_none_or(|u| s < u)
    }
}

/// What the simulated cluster looks like.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Seed for every random figure.
    pub seed: u64,
    /// Number of nodes (named node01, node02, …).
    pub nodes: usize,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// Run the plan's phases one after another without being asked.
    pub autorun: bool,
}

impl SimConfig {
    /// The demo cluster: 12 × 8 B300, every fault on its timeline.
    pub fn demo(seed: u64) -> Self {
        Self {
            seed,
            nodes: 12,
            gpus_per_node: 8,
            faults: FaultKind::DEMO
                .iter()
                .copied()
                .map(Fault::scheduled)
                .collect(),
            autorun: true,
        }
    }

    /// Node name for an index.
    pub fn node_name(index: usize) -> String {
        format!("node{:02}", index + 1)
    }
}

/// A steady load for the single-node simulator behind `burnin agent --sim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimLoad {
    /// Nothing running.
    Idle,
    /// A training job's load (as in T5).
    Full,
}

impl SimLoad {
    /// Parse `idle` or `full`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "idle" => Ok(SimLoad::Idle),
            "full" => Ok(SimLoad::Full),
            other => Err(format!("unknown load {other:?}; use idle or full")),
        }
    }
}

/// How hard a phase drives the GPUs at a moment.
#[derive(Debug, Clone, Copy, Default)]
struct Load {
    util: f64,
    power: f64,
    nvlink: f64,
    tensor: f64,
    memory: f64,
    /// Share of the NICs' line rate in use (collectives across nodes, storage reads).
    net: f64,
}

fn phase_load(id: Option<&str>, progress: f64) -> Load {
    let l = |util, power, nvlink, tensor, memory, net| Load {
        util,
        power,
        nvlink,
        tensor,
        memory,
        net,
    };
    match id {
        Some("T1") => l(0.05, 0.05, 0.0, 0.0, 0.02, 0.0),
        Some("T2") => l(1.0, 1.0, 0.0, 0.93, 0.35, 0.0),
        Some("T3") => l(0.7, 0.45, 0.92, 0.0, 0.2, 0.0),
        // The NCCL sweep grows its message size, so NVLink traffic follows the sweep.
        Some("T4") => l(0.9, 0.55, 0.2 + 0.7 * progress, 0.0, 0.5, 0.0),
        Some("T5") => l(0.97, 0.88, 0.35, 0.7, 0.85, 0.0),
        Some("T6") => l(0.95, 0.8, 0.3, 0.6, 0.9, 0.0),
        Some("T7") => l(0.85, 0.5, 0.1, 0.0, 0.5, 0.2 + 0.7 * progress),
        Some("T8") => l(0.93, 0.82, 0.3, 0.65, 0.8, 0.35),
        _ => l(0.0, 0.0, 0.0, 0.0, 0.01, 0.0),
    }
}

/// Deterministic noise in [-1, 1] for a seed and a coordinate (splitmix64 finaliser).
fn noise(seed: u64, a: u64, b: u64, c: u64) -> f64 {
    let mut z = seed
        ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ b.wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ c.wrapping_mul(0x94D0_49BB_1331_11EB);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

#[derive(Debug, Clone)]
struct Running {
    id: String,
    started_s: u64,
    step: u64,
    /// Every metric the phase produced, for the gates.
    metrics: Vec<PhaseMetric>,
    /// Every line the phase printed, for the gates that look for a text.
    lines: Vec<String>,
}

/// The phases the simulator knows how to play.
pub const SIMULATED_PHASES: [&str; 8] = ["T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8"];

/// The simulated cluster, stepped one simulated second at a time.
#[derive(Debug, Clone)]
pub struct SimCluster {
    config: SimConfig,
    /// Next simulated second to produce.
    next_s: u64,
    running: Option<Running>,
    pending: Vec<&'static str>,
    autorun: bool,
    idle_until_s: u64,
    crc_counters: Vec<u64>,
    /// Per GPU: PCIe replays (cumulative).
    pcie_replays: Vec<u64>,
    /// Per node and port: symbol errors, xmit wait ticks, CNPs sent (cumulative).
    nic_counters: Vec<[u64; 3]>,
    hellos_sent: bool,
    /// The telemetry beside the phases, as a real run watches it (made when the first second
    /// is stepped: the agent's use of the simulator never steps, and needs none).
    watch: Option<Arc<TelemetryLog>>,
}

impl SimCluster {
    /// A cluster at simulated time zero.
    pub fn new(config: SimConfig) -> Self {
        let autorun = config.autorun;
        let gpus = config.nodes * config.gpus_per_node as usize;
        let ports = config.nodes * NICS_PER_NODE;
        Self {
            config,
            next_s: 0,
            running: None,
            // The simulator plays the T1–T8 ladder; other phases of the plan (storage steps)
            // are shown but not simulated.
            pending: default_plan()
                .phases
                .iter()
                .map(|p| p.id.as_str())
                .filter(|id| SIMULATED_PHASES.contains(id))
                .collect(),
            autorun,
            idle_until_s: 1,
            crc_counters: vec![0; gpus],
            pcie_replays: vec![0; gpus],
            nic_counters: vec![[0; 3]; ports],
            hellos_sent: false,
            watch: None,
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Simulated "now": the instant the last step produced.
    pub fn now_ms(&self) -> UnixMillis {
        SIM_EPOCH_MS + self.next_s.saturating_sub(1) * SIM_PERIOD_MS
    }

    /// Produce everything that happened up to and including `until_ms`, in time order.
    pub fn advance_to(&mut self, until_ms: UnixMillis) -> Vec<SourceEvent> {
        let mut out = Vec::new();
        if !self.hellos_sent {
            self.hellos_sent = true;
            out.extend(self.hellos());
        }
        while SIM_EPOCH_MS + self.next_s * SIM_PERIOD_MS <= until_ms {
            let s = self.next_s;
            self.step(s, &mut out);
            self.next_s += 1;
        }
        out
    }

    /// Obey a phase command at the current simulated instant.
    pub fn command(&mut self, command: PhaseCommand) -> Vec<SourceEvent> {
        let s = self.next_s.saturating_sub(1);
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let mut out = Vec::new();
        match command {
            PhaseCommand::Start(id) => {
                if self.running.is_some() {
                    return out;
                }
                let Some(spec) = default_plan()
                    .find(&id)
                    .filter(|p| SIMULATED_PHASES.contains(&p.id.as_str()))
                else {
                    out.push(SourceEvent::Notice {
                        text: format!("{id} is not simulated: the demo plays T1-T8"),
                    });
                    return out;
                };
                let id = spec.id.as_str();
                self.pending.retain(|p| *p != id);
                self.autorun = true;
                self.start(id, s, &mut out);
            }
            PhaseCommand::Confirm(id) => out.push(SourceEvent::Notice {
                text: format!("{id}: the demo simulates no drill"),
            }),
            PhaseCommand::Abort(id) => {
                if let Some(r) = self.running.take_if(|r| r.id == id) {
                    self.autorun = false;
                    out.push(SourceEvent::Phase(PhaseEvent::Finished {
                        phase: r.id,
                        at_ms,
                        verdict: Verdict::Aborted,
                        reason: format!(
                            "aborted by the operator after {} s; process group sent TERM",
                            s - r.started_s
                        ),
                    }));
                    self.idle_until_s = s + GAP_BETWEEN_PHASES_S;
                }
            }
        }
        out
    }

    fn hellos(&self) -> Vec<SourceEvent> {
        (0..self.config.nodes)
            .map(|n| SourceEvent::Hello(self.hello(n)))
            .collect()
    }

    /// The hello of node `n` (0-based).
    pub fn hello(&self, n: usize) -> NodeHello {
        let name = SimConfig::node_name(n);
        {
            {
                NodeHello {
                    node: name.clone(),
                    host: name,
                    agent_version: format!("burnin-sim {}", env!("CARGO_PKG_VERSION")),
                    driver: Some("580.95.05".into()),
                    cuda: Some("13.0".into()),
                    gpus: (0..self.config.gpus_per_node)
                        .map(|g| GpuInfo {
                            index: g,
                            name: "NVIDIA B300 (simulated)".into(),
                            uuid: format!(
                                "GPU-5e{:06x}-{n:02}{g:02}-sim",
                                self.config.seed & 0xff_ffff
                            ),
                            power_limit_watts: Some(POWER_LIMIT_WATTS),
                            sm_clock_max_mhz: Some(SM_CLOCK_MAX_MHZ),
                            memory_total_bytes: Some(MEMORY_TOTAL_BYTES),
                            nvlink_links: Some(NVLINK_LINKS),
                        })
                        .collect(),
                    topology: Some(self.topology()),
                    system: Some(Box::new(crate::model::system::SystemInfo {
                        kernel: Some("6.8.0-60-generic (simulated)".into()),
                        os: Some("Ubuntu 24.04.2 LTS (simulated)".into()),
                        fabric_manager: Some("580.95.05".into()),
                        nccl: vec!["2.27.3 (simulated)".into()],
                    })),
                    unavailable: Vec::new(),
                }
            }
        }
    }

    /// The simulated board: the first half of the GPUs sits on NUMA node 0, the second half on
    /// NUMA node 1; GPU g shares a PCIe switch with its rail's NIC, mlx5_g.
    fn topology(&self) -> crate::model::topology::Topology {
        use crate::model::topology::{GpuPlace, Link, Topology};
        let half = (self.config.gpus_per_node / 2).max(1);
        Topology {
            gpus: (0..self.config.gpus_per_node)
                .map(|g| {
                    let side = (g / half).min(1);
                    let nic = g as usize % NICS_PER_NODE;
                    GpuPlace {
                        index: g,
                        cpu_affinity: Some(
                            if side == 0 {
                                "0-55,112-167"
                            } else {
                                "56-111,168-223"
                            }
                            .into(),
                        ),
                        numa_node: Some(side as i32),
                        nearest_nics: vec![format!("mlx5_{nic}")],
                        nic_link: Some(Link::Pix),
                    }
                })
                .collect(),
            nics: (0..NICS_PER_NODE).map(|p| format!("mlx5_{p}")).collect(),
        }
    }

    /// Frame of node `n` at simulated second `s` under a steady load, outside the plan: what
    /// `burnin agent --sim` streams. Faults apply as configured.
    pub fn node_frame(&mut self, n: usize, s: u64, load: SimLoad) -> NodeFrame {
        let load = match load {
            SimLoad::Idle => phase_load(None, 0.0),
            SimLoad::Full => phase_load(Some("T5"), 0.5),
        };
        self.frame(n, s, load)
    }

    fn fault(&self, kind: FaultKind) -> Option<&Fault> {
        self.config.faults.iter().find(|f| f.kind == kind)
    }

    fn fault_hits(&self, kind: FaultKind, node: usize, gpu: u32, s: u64) -> bool {
        self.fault(kind)
            .is_some_and(|f| f.node == node && f.gpu == gpu && f.active_at(s))
    }

    fn node_faulty(&self, kind: FaultKind, node: usize, s: u64) -> Option<u32> {
        self.fault(kind)
            .filter(|f| f.node == node && f.active_at(s))
            .map(|f| f.gpu)
    }

    fn unhealthy_nodes(&self, s: u64) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for n in 0..self.config.nodes {
            if let Some(g) = self.node_faulty(FaultKind::Stall, n, s) {
                out.push((n, format!("GPU{g} stalled")));
            }
            if let Some(g) = self.node_faulty(FaultKind::Xid79, n, s) {
                out.push((n, format!("GPU{g} lost (Xid 79)")));
            }
            if let Some(g) = self.node_faulty(FaultKind::Hang, n, s) {
                out.push((n, format!("GPU{g} hung in a collective")));
            }
        }
        out
    }

    fn start(&mut self, id: &str, s: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        self.running = Some(Running {
            id: id.to_string(),
            started_s: s,
            step: 0,
            metrics: Vec::new(),
            lines: Vec::new(),
        });
        out.push(SourceEvent::Phase(PhaseEvent::Started {
            phase: id.to_string(),
            at_ms,
        }));
    }

    fn step(&mut self, s: u64, out: &mut Vec<SourceEvent>) {
        let first = out.len();
        self.step_events(s, out);
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let watch = self
            .watch
            .get_or_insert_with(|| Arc::new(TelemetryLog::new(SIM_PERIOD)))
            .clone();
        for e in &out[first..] {
            watch.observe_at(e, at_ms);
            if let (Some(r), SourceEvent::Phase(p)) = (self.running.as_mut(), e) {
                match p {
                    PhaseEvent::Metric { phase, metric, .. } if *phase == r.id => {
                        r.metrics.push(metric.clone())
                    }
                    PhaseEvent::Line { phase, text, .. } if *phase == r.id => {
                        r.lines.push(text.clone())
                    }
                    _ => {}
                }
            }
        }
    }

    /// Everything of simulated second `s`: the clock, a phase ending or starting, every node's
    /// frame, the running phase's output, the storage probe's window.
    fn step_events(&mut self, s: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        out.push(SourceEvent::Clock { at_ms });

        // Phase bookkeeping first, so the frame of this second reflects the phase now running.
        if let Some(r) = &self.running
            && s >= r.started_s + phase_duration_s(&r.id)
            && let Some(r) = self.running.take()
        {
            let (verdict, reason) = self.judge(&r, s);
            out.push(SourceEvent::Phase(PhaseEvent::Finished {
                phase: r.id,
                at_ms,
                verdict,
                reason,
            }));
            self.idle_until_s = s + GAP_BETWEEN_PHASES_S;
        }
        if self.running.is_none()
            && self.autorun
            && s >= self.idle_until_s
            && !self.pending.is_empty()
        {
            let id = self.pending.remove(0);
            self.start(id, s, out);
        }

        let (phase_id, progress) = match &self.running {
            Some(r) => (
                Some(r.id.clone()),
                (s - r.started_s) as f64 / phase_duration_s(&r.id) as f64,
            ),
            None => (None, 0.0),
        };
        let load = phase_load(phase_id.as_deref(), progress);

        for n in 0..self.config.nodes {
            let frame = self.frame(n, s, load);
            out.push(SourceEvent::Frame(frame));
        }
        if let Some(id) = phase_id {
            self.phase_output(&id, s, out);
        }
        out.push(SourceEvent::Probe(self.probe_window(s)));
    }

    fn frame(&mut self, n: usize, s: u64, load: Load) -> NodeFrame {
        let seed = self.config.seed;
        let gpus_per_node = self.config.gpus_per_node;
        let mut gpus = Vec::with_capacity(gpus_per_node as usize);
        for g in 0..gpus_per_node {
            let key = (n as u64) << 8 | g as u64;
            let r = |salt: u64| noise(seed, key, s, salt);
            if self
                .fault(FaultKind::Xid79)
                .is_some_and(|f| f.node == n && f.gpu == g && s >= f.from_s)
            {
                let from = self.fault(FaultKind::Xid79).map_or(0, |f| f.from_s);
                // The first frame after the fault carries the event; afterwards NVML cannot read
                // the GPU at all, which is exactly what "fell off the bus" looks like.
                gpus.push(GpuSample {
                    index: g,
                    xid_events: if s == from {
                        vec![XidEvent {
                            code: 79,
                            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
                        }]
                    } else {
                        Vec::new()
                    },
                    ..GpuSample::default()
                });
                continue;
            }
            let stalled = self.fault_hits(FaultKind::Stall, n, g, s);
            let thermal = self.fault_hits(FaultKind::Thermal, n, g, s);
            let hung = self.fault_hits(FaultKind::Hang, n, g, s) && load.util > 0.1;
            let slow_clock = self.fault_hits(FaultKind::SlowClock, n, g, s);
            // Since when this GPU's ECC fault holds (the Xid comes with its first second).
            let ecc: Option<u64> = self
                .fault(FaultKind::Ecc)
                .filter(|f| f.node == n && f.gpu == g && f.active_at(s))
                .map(|f| f.from_s);
            let mut l = load;
            if stalled {
                l = Load {
                    util: 0.0,
                    power: 0.0,
                    nvlink: 0.0,
                    tensor: 0.0,
                    memory: load.memory,
                    net: load.net,
                };
            }
            if hung {
                // One kernel resident, spinning on a few SMs: busy to NVML, idle to GPM.
                l = Load {
                    util: 1.0,
                    power: 0.12,
                    nvlink: 0.0,
                    tensor: 0.0,
                    memory: load.memory,
                    net: 0.0,
                };
            }
            let util = (l.util * 100.0 + r(1) * 2.0 * l.util).clamp(0.0, 100.0);
            let mut power =
                IDLE_POWER_WATTS as f64 + (POWER_LIMIT_WATTS - IDLE_POWER_WATTS) as f64 * l.power;
            power += r(2) * 12.0;
            let mut reasons = 0u64;
            let mut clock = if l.util < 0.1 {
                reasons |= clock_events::GPU_IDLE;
                SM_CLOCK_IDLE_MHZ as f64
            } else {
                SM_CLOCK_MAX_MHZ as f64
            };
            if l.power > 0.85 {
                // At the power cap the clock settles below max and SW_POWER_CAP is set: normal.
                reasons |= clock_events::SW_POWER_CAP;
                clock = 1720.0 + r(3) * 60.0;
                power = POWER_LIMIT_WATTS as f64 - 15.0 + r(2) * 10.0;
            }
            let mut temp = 34.0 + 40.0 * l.power + r(4) * 1.5;
            if thermal {
                let ramp = ((s - self.fault(FaultKind::Thermal).map_or(s, |f| f.from_s)) as f64
                    / 8.0)
                    .min(1.0);
                temp = temp + (93.0 - temp) * ramp + r(4);
                if ramp > 0.5 && l.util > 0.1 {
                    reasons = (reasons & !clock_events::SW_POWER_CAP)
                        | clock_events::HW_THERMAL
                        | clock_events::HW_SLOWDOWN;
                    clock = 1190.0 + r(3) * 40.0;
                    power *= 0.68;
                }
            }
            if slow_clock && l.util > 0.1 {
                reasons = (reasons & !clock_events::SW_POWER_CAP)
                    | clock_events::APPLICATIONS_CLOCKS_SETTING;
                clock = 900.0 + r(3) * 10.0;
                power *= 0.6;
            }
            let instant = power * (1.0 + r(5) * 0.18 * l.power.max(0.05));
            let crc_idx = n * gpus_per_node as usize + g as usize;
            if let Some(f) = self.fault(FaultKind::NvlinkCrc)
                && f.node == n
                && (g == f.gpu || g == f.gpu + 1)
                && f.active_at(s)
            {
                self.crc_counters[crc_idx] += 3 + (r(6).abs() * 17.0) as u64;
            }
            if self.fault_hits(FaultKind::PcieReplay, n, g, s) {
                self.pcie_replays[crc_idx] += 1 + (r(10).abs() * 4.0) as u64;
            }
            let tx = NVLINK_PEAK_BYTES_PER_SEC * l.nvlink * (1.0 + r(7) * 0.03);
            let rx = NVLINK_PEAK_BYTES_PER_SEC * l.nvlink * (1.0 + r(8) * 0.03);
            gpus.push(GpuSample {
                index: g,
                power_avg_watts: Some(power as f32),
                power_instant_watts: Some(instant as f32),
                power_limit_watts: Some(POWER_LIMIT_WATTS),
                temperature_c: Some(temp.round() as f32),
                sm_clock_mhz: Some(clock.round() as u32),
                sm_clock_max_mhz: Some(SM_CLOCK_MAX_MHZ),
                utilization_pct: Some(util.round() as f32),
                sm_active_pct: Some(if hung {
                    1.5 + r(9).abs() as f32
                } else {
                    (util * 0.96) as f32
                }),
                tensor_active_pct: Some((util * l.tensor) as f32),
                memory_used_bytes: Some((MEMORY_TOTAL_BYTES as f64 * l.memory) as u64),
                memory_total_bytes: Some(MEMORY_TOTAL_BYTES),
                clock_event_reasons: Some(reasons),
                ecc_corrected_volatile: Some(0),
                ecc_uncorrected_volatile: Some(u64::from(ecc.is_some())),
                remapped_rows_uncorrectable: Some(u32::from(ecc.is_some())),
                remapped_rows_correctable: Some(0),
                remapped_rows_pending: Some(ecc.is_some()),
                remapped_rows_failure: Some(false),
                nvlink_tx_bytes_per_sec: Some(tx.max(0.0)),
                nvlink_rx_bytes_per_sec: Some(rx.max(0.0)),
                nvlink_crc_errors: Some(self.crc_counters[crc_idx]),
                nvlink_replay_errors: Some(0),
                nvlink_recovery_errors: Some(0),
                // A bad cable or tray sits on one link: all of a GPU's CRC errors are there.
                nvlink_link_errors: match self.crc_counters[crc_idx] {
                    0 => Vec::new(),
                    crc => vec![crate::model::NvlinkLinkErrors {
                        link: sim_faulty_link(g),
                        crc,
                        ..Default::default()
                    }],
                },
                pcie_replay_count: Some(self.pcie_replays[crc_idx]),
                xid_events: match ecc {
                    Some(from) if from == s => vec![XidEvent {
                        code: 94,
                        at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
                    }],
                    _ => Vec::new(),
                },
                ..GpuSample::default()
            });
        }
        let nics = self.nics(n, s, load);
        NodeFrame {
            node: SimConfig::node_name(n),
            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
            gpus,
            nics,
            netdevs: Vec::new(),
        }
    }

    fn nics(&mut self, n: usize, s: u64, load: Load) -> Vec<NicSample> {
        let seed = self.config.seed;
        (0..NICS_PER_NODE)
            .map(|p| {
                let r = |salt: u64| noise(seed, 0xF1B0 + ((n as u64) << 4 | p as u64), s, salt);
                let slow = self.fault_hits(FaultKind::Port200g, n, p as u32, s);
                let rate = if slow { 200.0 } else { NIC_RATE_GBPS };
                let line = f64::from(rate) * 1e9 / 8.0;
                // A slow port carries what it can; the collective then runs at its pace.
                let want = NIC_RATE_GBPS as f64 * 1e9 / 8.0 * load.net;
                let tx = (want * (1.0 + r(1) * 0.02)).min(line * 0.97);
                let rx = (want * (1.0 + r(2) * 0.02)).min(line * 0.97);
                let c = &mut self.nic_counters[n * NICS_PER_NODE + p];
                if self.config.faults.iter().any(|f| {
                    f.kind == FaultKind::SymbolErrors
                        && f.node == n
                        && f.gpu == p as u32
                        && f.active_at(s)
                }) {
                    c[0] += 2 + (r(3).abs() * 6.0) as u64;
                }
                c[1] += (load.net * load.net * 4.0e5 * (1.0 + r(4) * 0.1)) as u64;
                c[2] += (load.net * 120.0 * (1.0 + r(5) * 0.2)) as u64;
                let mut counters = crate::model::PortCounters::default();
                for (name, v) in [
                    ("symbol_error", c[0]),
                    ("link_downed", 0),
                    ("link_error_recovery", 0),
                    ("port_rcv_errors", 0),
                    ("port_xmit_discards", 0),
                    ("port_xmit_wait", c[1]),
                    ("np_cnp_sent", c[2]),
                ] {
                    counters.set(name, v);
                }
                NicSample {
                    device: format!("mlx5_{p}"),
                    port: 1,
                    state: Some("ACTIVE".into()),
                    phys_state: Some("LinkUp".into()),
                    rate_gbps: Some(rate),
                    link_layer: Some("InfiniBand".into()),
                    numa_node: Some((p / (NICS_PER_NODE / 2).max(1)) as i32),
                    tx_bytes_per_sec: Some(tx.max(0.0)),
                    rx_bytes_per_sec: Some(rx.max(0.0)),
                    counters,
                }
            })
            .collect()
    }

    fn probe_window(&self, s: u64) -> ProbeWindow {
        let seed = self.config.seed;
        let r = |salt| noise(seed, 0xA157, s, salt);
        let in_t8 = self.running.as_ref().is_some_and(|r| r.id == "T8");
        let spike = self
            .fault(FaultKind::AistorP99)
            .is_some_and(|f| f.active_at(s));
        let p50 = 11.0 + r(1) * 1.5 + if in_t8 { 6.0 } else { 0.0 };
        let mut p99 = 38.0 + r(2) * 6.0 + if in_t8 { 22.0 } else { 0.0 };
        if spike {
            p99 = 640.0 + r(3) * 80.0;
        }
        let throughput = if in_t8 {
            41e9 * (1.0 + r(4) * 0.04) * if spike { 0.6 } else { 1.0 }
        } else {
            0.35e9 * (1.0 + r(4) * 0.1)
        };
        let requests = if in_t8 { 160 } else { 4 };
        ProbeWindow {
            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
            endpoint: "aistor.sim:9000 (simulated)".into(),
            ttfb_p50_ms: p50,
            ttfb_p99_ms: p99,
            total_p99_ms: p99 + 180.0 + r(5) * 20.0,
            throughput_bytes_per_sec: throughput,
            requests,
            errors: if spike && r(6) > 0.3 { 2 } else { 0 },
            concurrency: None,
        }
    }

    fn line(id: &str, at_ms: UnixMillis, text: String) -> SourceEvent {
        SourceEvent::Phase(PhaseEvent::Line {
            phase: id.to_string(),
            at_ms,
            node: None,
            text,
        })
    }

    fn metric(id: &str, at_ms: UnixMillis, metric: PhaseMetric) -> SourceEvent {
        SourceEvent::Phase(PhaseEvent::Metric {
            phase: id.to_string(),
            at_ms,
            metric,
        })
    }

    fn phase_output(&mut self, id: &str, s: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let Some(started_s) = self.running.as_ref().map(|r| r.started_s) else {
            return;
        };
        let t = s - started_s;
        let nodes = self.config.nodes;
        match id {
            "T1" if (t as usize) < nodes => self.sanity_output(id, t, at_ms, out),
            "T2" => self.gemm_output(id, s, t, at_ms, out),
            "T3" if t.is_multiple_of(5) && (t / 5) < 6 => {
                self.nvbandwidth_output(id, s, t, at_ms, out)
            }
            "T4" | "T7" => self.nccl_output(id, s, t, out),
            "T5" | "T6" | "T8" => self.training_output(id, s, t, started_s, at_ms, out),
            _ => {}
        }
    }

    /// T1's output: one node a second, its sanity line and the checks the sanity parser makes.
    fn sanity_output(&mut self, id: &str, t: u64, at_ms: UnixMillis, out: &mut Vec<SourceEvent>) {
        let gpus = self.config.gpus_per_node;
        let n = t as usize;
        let node = SimConfig::node_name(n);
        out.push(Self::line(
                id,
                at_ms,
                format!(
                    "{node}: {gpus} GPUs (expected {gpus}), driver 580.95.05, nvidia-fabricmanager 580.95.05 active, Xid since boot: 0"
                ),
            ));
        // The checks the sanity parser makes of the same output.
        for (name, detail) in [
            ("gpu-count", format!("{gpus} GPUs (expected {gpus})")),
            ("driver-version", "580.95.05 on every GPU".to_string()),
            (
                "fabric-manager-version",
                "nvidia-fabricmanager 580.95.05 = driver 580.95.05".to_string(),
            ),
            ("fabric-manager-active", "active".to_string()),
            (
                "fabric-registration",
                format!("{gpus} of {gpus} GPUs completed"),
            ),
            ("xid", "no Xid in the kernel log".to_string()),
        ] {
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::Check {
                    node: node.clone(),
                    name: name.into(),
                    status: CheckStatus::Ok,
                    detail,
                },
            ));
        }
    }

    /// T2's output: warm-up lines, then each GPU's bf16 and fp8 TFLOPS at the end.
    fn gemm_output(
        &mut self,
        id: &str,
        s: u64,
        t: u64,
        at_ms: UnixMillis,
        out: &mut Vec<SourceEvent>,
    ) {
        let seed = self.config.seed;
        let nodes = self.config.nodes;
        let gpus = self.config.gpus_per_node;
        let duration = phase_duration_s(id);
        if t + 1 == duration {
            // Each GPU's throughput follows its measured clock during the phase.
            for n in 0..nodes {
                for g in 0..gpus {
                    let thermal = self.fault_hits(FaultKind::Thermal, n, g, s);
                    let dead = self
                        .fault(FaultKind::Xid79)
                        .is_some_and(|f| f.node == n && f.gpu == g && s >= f.from_s);
                    if dead {
                        continue;
                    }
                    let key = (n as u64) << 8 | g as u64;
                    let slow = self.fault_hits(FaultKind::SlowClock, n, g, s);
                    let factor = if thermal {
                        0.71
                    } else if slow {
                        0.52
                    } else {
                        1.0
                    };
                    let tflops =
                        BF16_TFLOPS_NOMINAL * factor * (1.0 + noise(seed, key, 2, 9) * 0.015);
                    let fp8 = FP8_TFLOPS_NOMINAL * factor * (1.0 + noise(seed, key, 2, 10) * 0.015);
                    for (dtype, tflops) in [("bf16", tflops), ("fp8", fp8)] {
                        out.push(Self::metric(
                            id,
                            at_ms,
                            PhaseMetric::Tflops {
                                node: SimConfig::node_name(n),
                                gpu: g,
                                dtype: dtype.into(),
                                tflops,
                            },
                        ));
                    }
                    out.push(Self::line(
                        id,
                        at_ms,
                        format!(
                            "{}: {{\"gpu\": {g}, \"dtype\": \"bf16\", \"m\": 8192, \"n\": 8192, \"k\": 8192, \"tflops\": {tflops:.1}}}",
                            SimConfig::node_name(n)
                        ),
                    ));
                }
            }
        } else if t.is_multiple_of(10) {
            out.push(Self::line(
                id,
                at_ms,
                format!(
                    "all nodes: gemm bf16 8192x8192x8192 warm, iteration {}",
                    t * 40
                ),
            ));
        }
    }

    /// T3's output: two nodes every five seconds, every GPU pair of both test cases.
    fn nvbandwidth_output(
        &mut self,
        id: &str,
        s: u64,
        t: u64,
        at_ms: UnixMillis,
        out: &mut Vec<SourceEvent>,
    ) {
        let seed = self.config.seed;
        let nodes = self.config.nodes;
        let gpus = self.config.gpus_per_node;
        let n0 = (t / 5) as usize * 2;
        for n in n0..(n0 + 2).min(nodes) {
            let crc = self.node_faulty(FaultKind::NvlinkCrc, n, s).is_some();
            let bw = NVLINK_PAIR_GB_PER_S
                * (1.0 + noise(seed, n as u64, 3, 1) * 0.01)
                * if crc { 0.93 } else { 1.0 };
            let node = SimConfig::node_name(n);
            for (t, test) in NVBANDWIDTH_TESTS.iter().enumerate() {
                for src in 0..gpus {
                    for dst in (0..gpus).filter(|d| *d != src) {
                        let pair = u64::from(src) << 8 | u64::from(dst);
                        out.push(Self::metric(
                            id,
                            at_ms,
                            PhaseMetric::PairBw {
                                node: node.clone(),
                                test: (*test).into(),
                                src,
                                dst,
                                gb_per_s: bw
                                    * (1.0 + noise(seed, n as u64, pair, 20 + t as u64) * 0.005),
                            },
                        ));
                    }
                }
                out.push(Self::metric(
                    id,
                    at_ms,
                    PhaseMetric::Check {
                        node: node.clone(),
                        name: "nvbandwidth-testcase".into(),
                        status: CheckStatus::Ok,
                        detail: format!(
                            "{test}: {} cell(s) measured",
                            gpus * gpus.saturating_sub(1)
                        ),
                    },
                ));
            }
            out.push(Self::line(
                    id,
                    at_ms,
                    format!(
                        "{}: nvbandwidth device_to_device_bidirectional_memcpy_read_ce  min {:.1} GB/s  avg {bw:.1} GB/s",
                        SimConfig::node_name(n),
                        bw * 0.985
                    ),
                ));
        }
    }

    /// T5, T6 and T8: one training step a second (T5 on one GPU first), data wait and loss.
    fn training_output(
        &mut self,
        id: &str,
        s: u64,
        t: u64,
        started_s: u64,
        at_ms: UnixMillis,
        out: &mut Vec<SourceEvent>,
    ) {
        let seed = self.config.seed;
        let nodes = self.config.nodes;
        let gpus = self.config.gpus_per_node;
        let Some(r) = self.running.as_mut() else {
            return;
        };
        r.step += 1;
        // T5 runs the workload on one GPU first, then on all: the step count starts
        // over, as the real workload's second run does.
        let one_gpu = id == "T5" && r.step <= T5_ONE_GPU_STEPS;
        let step = if id == "T5" && !one_gpu {
            r.step - T5_ONE_GPU_STEPS
        } else {
            r.step
        };
        let base_step_ms = if id == "T6" { T6_STEP_MS } else { T5_STEP_MS };
        let step_ms = base_step_ms * (1.0 + noise(seed, 5, s, 1) * 0.02);
        let mut wait_ms = step_ms * (0.015 + noise(seed, 5, s, 2).abs() * 0.01);
        if id == "T8"
            && let Some(f) = self
                .config
                .faults
                .iter()
                .find(|f| f.kind == FaultKind::LoaderWait)
            && t >= 8
            && s >= f.from_s.min(started_s + 8)
        {
            let ramp = ((t - 8) as f64 / 20.0).min(1.0);
            wait_ms = step_ms * (0.02 + 0.24 * ramp) * (1.0 + noise(seed, 5, s, 3) * 0.1);
        }
        let step_total = step_ms + if id == "T8" { wait_ms } else { 0.0 };
        let loss = 2.9 * (-(step as f64) / 90.0).exp() + 1.6 + noise(seed, 5, s, 4) * 0.02;
        let world = f64::from(gpus) * nodes as f64;
        let mut tokens = STEP_TOKENS * world / (step_total / 1000.0);
        if one_gpu {
            tokens /= world * T5_SCALING;
        }
        if step == 1 && id == "T8" {
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::FirstBatch { ms: 2140.0 },
            ));
            out.push(Self::line(
                id,
                at_ms,
                "rank 0: first batch after 2.14 s (aistor.sim:9000, 16 workers, prefetch 4)".into(),
            ));
        }
        out.push(Self::metric(
            id,
            at_ms,
            PhaseMetric::Step {
                node: None,
                step,
                step_time_ms: Some(step_total),
                data_wait_ms: Some(wait_ms),
                tokens_per_sec: Some(tokens),
                tokens_per_sec_per_gpu: None,
                loss: Some(loss),
                world: (id == "T5").then_some(if one_gpu { 1 } else { world as u32 }),
                variant: None,
            },
        ));
        out.push(Self::line(
            id,
            at_ms,
            format!(
                "{{\"step\": {step}, \"step_time_ms\": {step_total:.1}, \"data_wait_ms\": {wait_ms:.1}, \"tokens_per_s\": {tokens:.0}, \"loss\": {loss:.4}}}"
            ),
        ));
        if id == "T6" && t + 2 == phase_duration_s(id) {
            out.push(Self::line(
                id,
                at_ms,
                "checkpoint saved: /scratch/lora/ckpt-step40 (41.2 GB in 18.3 s)".into(),
            ));
        }
    }

    fn nccl_output(&mut self, id: &str, s: u64, t: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let seed = self.config.seed;
        let nodes = self.config.nodes;
        let gpus = self.config.gpus_per_node;
        const FIRST_SIZE: u64 = 1 << 20;
        const SIZES: u32 = 14; // 1 MiB .. 8 GiB
        let per_size_s = phase_duration_s(id) / SIZES as u64;
        if t == 0 {
            out.push(Self::line(
                id,
                at_ms,
                "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0".into(),
            ));
            out.push(Self::line(
                id,
                at_ms,
                "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong".into(),
            ));
        }
        if t == 0 && id == "T7" {
            // NCCL's own words on the transport it chose, as NCCL_DEBUG=INFO prints them on
            // each rank's host (the T7 gate looks for NET/IB there).
            let unhealthy = self.unhealthy_nodes(s);
            for n in (0..nodes).filter(|n| !unhealthy.iter().any(|(u, _)| u == n)) {
                let node = SimConfig::node_name(n);
                let pid = 41_000 + n;
                out.push(Self::line(
                    id,
                    at_ms,
                    format!(
                        "{node}:{pid}:{pid} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB bond0:10.0.0.{}<0>",
                        n + 1
                    ),
                ));
                out.push(Self::line(
                    id,
                    at_ms,
                    format!("{node}:{pid}:{pid} [0] NCCL INFO Using network IB"),
                ));
            }
        }
        if t % per_size_s != per_size_s - 1 {
            return;
        }
        let k = (t / per_size_s) as u32;
        if k >= SIZES {
            return;
        }
        let size = FIRST_SIZE << k;
        let unhealthy = self.unhealthy_nodes(s);
        let (groups, peak, ranks): (Vec<Option<usize>>, f64, u32) = if id == "T4" {
            ((0..nodes).map(Some).collect(), NCCL_NODE_PEAK_BUSBW, gpus)
        } else {
            let healthy = nodes - unhealthy.len();
            (vec![None], NCCL_NET_PEAK_BUSBW, healthy as u32 * gpus)
        };
        for node in groups {
            if let Some(n) = node
                && unhealthy.iter().any(|(u, _)| *u == n)
            {
                // A stalled or lost GPU hangs the node's collective: no more rows from it.
                continue;
            }
            let half = 48.0 * (1 << 20) as f64;
            let x = size as f64;
            let busbw = peak * x / (x + half)
                * (1.0 + noise(seed, node.map_or(99, |n| n as u64), k as u64, 11) * 0.01);
            let n_ranks = ranks as f64;
            let algbw = busbw * n_ranks / (2.0 * (n_ranks - 1.0));
            let time_us = x / (algbw * 1e3);
            let prefix = node.map_or_else(|| "all".to_string(), SimConfig::node_name);
            out.push(Self::line(
                id,
                at_ms,
                format!(
                    "{prefix}: {size:>12} {count:>13} {ty:>9} {op:>7} {root:>7} {time_us:>8.1} {algbw:>7.2} {busbw:>7.2} {wrong:>6} {time_us:>8.1} {algbw:>7.2} {busbw:>7.2} {wrong:>6}",
                    count = size / 2,
                    ty = "bfloat16",
                    op = "sum",
                    root = -1,
                    wrong = 0,
                ),
            ));
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::BusBw {
                    node: node.map(SimConfig::node_name),
                    collective: "all_reduce".into(),
                    size_bytes: size,
                    busbw_gb_per_s: busbw,
                    algbw_gb_per_s: algbw,
                    wrong: Some(0),
                    ranks,
                    deviation: false,
                },
            ));
        }
    }

    /// The phase's verdict: the plan's own gates over what the simulation produced, as the
    /// runner would observe it (exit status per node, the lines, the telemetry beside it).
    fn judge(&self, r: &Running, s: u64) -> (Verdict, String) {
        let plan = default_plan();
        let Some(spec) = plan.find(&r.id) else {
            return (Verdict::Skipped, format!("{} is not in the plan", r.id));
        };
        let nodes: Vec<String> = (0..self.config.nodes).map(SimConfig::node_name).collect();
        let unhealthy = self.unhealthy_nodes(s);
        let mut observed = Observed {
            nodes: nodes.clone(),
            ..Observed::default()
        };
        for (n, name) in nodes.iter().enumerate() {
            let code = match unhealthy.iter().find(|(u, _)| *u == n) {
                // A collective that hangs never ends by itself: the time limit kills it.
                Some(_) if self.node_faulty(FaultKind::Hang, n, s).is_some() => None,
                Some(_) => Some(1),
                None => Some(0),
            };
            observed.exit.insert(name.clone(), code);
            observed
                .node_gpus
                .insert(name.clone(), self.config.gpus_per_node);
        }
        for gate in &spec.gates {
            if let crate::plan::Gate::OutputContains { text, evidence } = gate {
                for t in std::iter::once(text).chain(evidence) {
                    let showed: BTreeSet<String> = r
                        .lines
                        .iter()
                        .filter(|l| l.contains(t.as_str()))
                        .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_string()))
                        .filter(|n| nodes.contains(n))
                        .collect();
                    observed.seen.insert(t.clone(), showed);
                }
            }
        }
        if spec.scope == crate::plan::Scope::Mpirun {
            observed.expected_ranks = Some(self.config.nodes as u32 * self.config.gpus_per_node);
        }
        let from_ms = SIM_EPOCH_MS + r.started_s * SIM_PERIOD_MS;
        let to_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        observed.telemetry = self
            .watch
            .as_ref()
            .map(|w| w.window(&nodes, from_ms, to_ms));
        gates::judge(
            spec,
            &r.metrics,
            &observed,
            Some(&nominal_baseline(&self.config)),
        )
    }
}

/// The simulated cluster's figures in health, per phase: the baseline its phases are judged
/// against (a site saves its own with `burnin baseline save RUN`). One subject per figure, so
/// every GPU, pair or node is held to the nominal figure.
pub fn nominal_baseline(config: &SimConfig) -> Baseline {
    let gpus = f64::from(config.gpus_per_node) * config.nodes as f64;
    let training = |step_ms: f64| STEP_TOKENS * gpus / (step_ms / 1000.0);
    let figures: [(&str, &str, f64); 8] = [
        ("T2", "tflops_bf16", BF16_TFLOPS_NOMINAL),
        ("T2", "tflops_fp8", FP8_TFLOPS_NOMINAL),
        ("T3", "pair_gb_per_s", NVLINK_PAIR_GB_PER_S),
        ("T4", "busbw_all_reduce", NCCL_NODE_PEAK_BUSBW),
        ("T5", "tokens_per_sec", training(T5_STEP_MS)),
        ("T6", "tokens_per_sec", training(T6_STEP_MS)),
        ("T7", "busbw_all_reduce", NCCL_NET_PEAK_BUSBW),
        ("T8", "tokens_per_sec", training(T5_STEP_MS)),
    ];
    let mut baseline = Baseline {
        schema: 1,
        source: "the simulated cluster's nominal figures".into(),
        ..Baseline::default()
    };
    for (phase, figure, value) in figures {
        baseline
            .phases
            .entry(phase.to_string())
            .or_default()
            .insert(
                figure.to_string(),
                vec![gates::Sample {
                    subject: "nominal".into(),
                    group: String::new(),
                    value,
                }],
            );
    }
    baseline
}

/// [`SimCluster`] paced against the wall clock: `speed` simulated seconds per wall second.
pub struct SimSource {
    cluster: SimCluster,
    speed: f64,
}

impl SimSource {
    /// Pace `cluster` at `speed` (1.0 = real time on the compressed plan).
    pub fn new(cluster: SimCluster, speed: f64) -> Self {
        Self {
            cluster,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
        }
    }
}

impl Source for SimSource {
    fn run(
        self: Box<Self>,
        events: mpsc::Sender<SourceEvent>,
        mut commands: mpsc::UnboundedReceiver<PhaseCommand>,
    ) -> SourceTask {
        Box::pin(async move {
            let SimSource { mut cluster, speed } = *self;
            let started = tokio::time::Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                let batch = tokio::select! {
                    _ = tick.tick() => {
                        let sim_ms = (started.elapsed().as_secs_f64() * speed * 1000.0) as u64;
                        cluster.advance_to(SIM_EPOCH_MS + sim_ms)
                    }
                    cmd = commands.recv() => match cmd {
                        Some(cmd) => cluster.command(cmd),
                        None => Vec::new(),
                    },
                };
                for ev in batch {
                    if events.send(ev).await.is_err() {
                        return;
                    }
                }
                if events.is_closed() {
                    return;
                }
            }
        })
    }
}

/// The NVLink link a simulated GPU's CRC errors land on (B300: 18 links a GPU).
pub fn sim_faulty_link(gpu: u32) -> u32 {
    (gpu * 5 + 3) % 18
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run_to(cluster: &mut SimCluster, s: u64) -> Vec<SourceEvent> {
        cluster.advance_to(SIM_EPOCH_MS + s * SIM_PERIOD_MS)
    }

    #[test]
    fn same_seed_same_events() {
        let mut a = SimCluster::new(SimConfig::demo(7));
        let mut b = SimCluster::new(SimConfig::demo(7));
        assert_eq!(run_to(&mut a, 130), run_to(&mut b, 130));
        let mut c = SimCluster::new(SimConfig::demo(8));
        assert_ne!(run_to(&mut a, 140), run_to(&mut c, 140));
    }

    #[test]
    fn runs_the_whole_plan_with_verdicts() {
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let events = run_to(&mut sim, 400);
        let verdicts: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                SourceEvent::Phase(PhaseEvent::Finished { phase, verdict, .. }) => {
                    Some((phase.as_str(), *verdict))
                }
                _ => None,
            })
            .collect();
        assert_eq!(verdicts.len(), 8, "{verdicts:?}");
        assert_eq!(verdicts[0], ("T1", Verdict::Pass));
        assert_eq!(verdicts[1], ("T2", Verdict::Fail));
        assert_eq!(verdicts[3], ("T4", Verdict::Fail));
        assert_eq!(verdicts[7], ("T8", Verdict::Fail));
    }

    #[test]
    fn the_demo_is_judged_by_the_plans_own_gates() {
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let reasons: BTreeMap<String, (Verdict, String)> = run_to(&mut sim, 400)
            .into_iter()
            .filter_map(|e| match e {
                SourceEvent::Phase(PhaseEvent::Finished {
                    phase,
                    verdict,
                    reason,
                    ..
                }) => Some((phase, (verdict, reason))),
                _ => None,
            })
            .collect();
        // The plan's T8 gate is data wait <= 5 % (the simulator once judged < 10 % itself).
        let (v, why) = &reasons["T8"];
        assert_eq!(*v, Verdict::Fail);
        assert!(
            why.contains("data_wait_pct job") && why.contains("(limit 5.00)"),
            "{why}"
        );
        // T2: the throttled GPU against the peers and the nominal baseline, in the gates' words.
        let (v, why) = &reasons["T2"];
        assert_eq!(*v, Verdict::Fail);
        assert!(
            why.contains("node03/gpu5") && why.contains("% of baseline"),
            "{why}"
        );
        // T3: NVLink CRC errors climbing beside it, by the plan's no-finding gate.
        let (v, why) = &reasons["T3"];
        assert_eq!(*v, Verdict::Fail);
        assert!(why.starts_with("2 nvlink-errors finding(s)"), "{why}");
        // T5: the GPU lost to Xid 79 is seen by the telemetry watch beside the phase.
        let (v, why) = &reasons["T5"];
        assert_eq!(*v, Verdict::Fail);
        assert!(why.contains("Xid 79 on node11 GPU0"), "{why}");
        // T7: the nodes that dropped out are missing ranks of the inventory's GPUs.
        let (v, why) = &reasons["T7"];
        assert_eq!(*v, Verdict::Fail);
        assert!(why.contains("the inventory has 96 GPUs"), "{why}");
    }

    #[test]
    fn without_faults_every_phase_passes() {
        let mut config = SimConfig::demo(1);
        config.faults.clear();
        let mut sim = SimCluster::new(config);
        for e in run_to(&mut sim, 400) {
            if let SourceEvent::Phase(PhaseEvent::Finished {
                phase,
                verdict,
                reason,
                ..
            }) = e
            {
                assert_eq!(verdict, Verdict::Pass, "{phase}: {reason}");
            }
        }
    }

    #[test]
    fn stalled_gpu_collapses_while_peers_stay_loaded() {
        let mut sim = SimCluster::new(SimConfig::demo(3));
        let events = run_to(&mut sim, 125);
        let frame = events
            .iter()
            .rev()
            .find_map(|e| match e {
                SourceEvent::Frame(f) if f.node == "node07" => Some(f),
                _ => None,
            })
            .expect("node07 frame");
        assert!(frame.gpus[3].utilization_pct.unwrap_or(100.0) < 5.0);
        assert!(frame.gpus[2].utilization_pct.unwrap_or(0.0) > 80.0);
    }

    #[test]
    fn abort_stops_the_phase_and_autorun() {
        let mut sim = SimCluster::new(SimConfig::demo(1));
        run_to(&mut sim, 20);
        let out = sim.command(PhaseCommand::Abort("T2".into()));
        assert!(matches!(
            out.as_slice(),
            [SourceEvent::Phase(PhaseEvent::Finished {
                verdict: Verdict::Aborted,
                ..
            })]
        ));
        let later = run_to(&mut sim, 60);
        assert!(
            !later
                .iter()
                .any(|e| matches!(e, SourceEvent::Phase(PhaseEvent::Started { .. })))
        );
        let out = sim.command(PhaseCommand::Start("T3".into()));
        assert!(matches!(
            out.as_slice(),
            [SourceEvent::Phase(PhaseEvent::Started { .. })]
        ));
    }

    #[test]
    fn fault_names_round_trip() {
        for f in FaultKind::ALL {
            assert_eq!(FaultKind::parse(f.name()), Ok(f));
        }
        assert!(FaultKind::parse("meltdown").unwrap_err().contains("stall"));
    }
}
