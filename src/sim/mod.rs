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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::phase::CheckStatus;
use crate::model::phase::{PhaseCommand, PhaseEvent, PhaseMetric, Verdict};
use crate::model::probe::ProbeWindow;
use crate::model::units::Period;
use crate::model::{
    GpuInfo, GpuSample, NicSample, NodeFrame, NodeHello, UnixMillis, XidEvent, clock_events,
};
use crate::model::{Source, SourceEvent, SourceTask};
use crate::plan::default_plan;
use crate::plan::gates::{self, Baseline, Observed};
use crate::triage::telemetry_log::TelemetryLog;

pub mod fabric;
mod frames;
mod phases;
#[cfg(test)]
mod tests;

pub use phases::nominal_baseline;

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
/// S2's GET throughput per node at the sweep's top: about 90 % of a 100G storage NIC.
const S3_NODE_GB_PER_S: f64 = 11.2;
/// S4's gdsio rates per GPU, GiB/s, 1 MiB x 8 threads from a Gen5 NVMe array on the GPU's own
/// socket: (transfer type, `-x`, read, write). Through the CPU is slower than GPU-direct.
const GDS_GIB_PER_S: [(&str, u32, f64, f64); 3] = [
    ("GPUD", 0, 21.5, 17.8),
    ("CPU_GPU", 2, 12.9, 11.2),
    ("CPUONLY", 1, 14.6, 12.5),
];
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
    /// One node's GETs from AIStor go through a degraded path (a storage NIC that trained
    /// low, a bad cable): a third of its peers' throughput, p99 TTFB several times theirs.
    SlowStorage,
    /// One node's GPUDirect Storage runs in compat mode: cuFile reads through a CPU bounce
    /// buffer, GPU-direct measures what CPU→GPU does and cuFile counts every read as POSIX.
    GdsCompat,
}

impl FaultKind {
    /// Every fault, in the order `--fault` help lists them.
    pub const ALL: [FaultKind; 14] = [
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
        FaultKind::SlowStorage,
        FaultKind::GdsCompat,
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
            FaultKind::SlowStorage => "slow-storage",
            FaultKind::GdsCompat => "gds-compat",
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
    /// PCIe replays climb from 30 s, node10 GPU7 runs with its clocks held low from the start,
    /// node12's GETs from AIStor are slow from the start (seen when S2 runs), node06 reads GDS
    /// in compat mode from the start (seen when S4 runs).
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
            FaultKind::SlowStorage => (11, 0, 0, None),
            FaultKind::GdsCompat => (5, 0, 0, None),
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
    /// Number of nodes (named `{node_prefix}01`, `{node_prefix}02`, …).
    pub nodes: usize,
    /// What every node's name starts with (`node`; a site's `dgx-b300-rack12-n`).
    pub node_prefix: String,
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
            node_prefix: "node".into(),
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
    pub fn node_name(&self, index: usize) -> String {
        format!("{}{:02}", self.node_prefix, index + 1)
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

/// The ladder the simulator plays by itself, in order.
pub const SIMULATED_PHASES: [&str; 8] = ["T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8"];

/// Phases the simulator plays only when the operator starts them.
pub const ON_REQUEST_PHASES: [&str; 2] = ["S2", "S4"];

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
    /// S2 so far, per node: best GB/s and failed GETs.
    s3_best: BTreeMap<String, (f64, u64)>,
    /// S4 so far, per node: the lines its command printed (read by the real parser at the end).
    gds_lines: BTreeMap<String, Vec<String>>,
    /// A fault search (`f`) played one round a second: what the console gets next.
    search_rounds: std::collections::VecDeque<SourceEvent>,
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
            // The simulator plays the T1–T8 ladder; S2 (the S3 probe on every node) plays when
            // started; the other phases of the plan are shown but not simulated.
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
            s3_best: BTreeMap::new(),
            gds_lines: BTreeMap::new(),
            search_rounds: std::collections::VecDeque::new(),
        }
    }

    /// `f` in the demo: a fault search of `id` over the simulated fabric, where a node with a
    /// port trained at 200G runs every test it is in at half rate; played one round a second.
    fn localize(&mut self, id: &str, out: &mut Vec<SourceEvent>) {
        use crate::phases::localize::doc::LocalizeDoc;
        use crate::phases::localize::search::{Screen, Search, SearchConfig};
        if !self.search_rounds.is_empty() {
            out.push(SourceEvent::Notice {
                text: "a search is running".into(),
            });
            return;
        }
        let nodes = self.config.nodes;
        let faults: Vec<fabric::FabricFault> = self
            .config
            .faults
            .iter()
            .filter(|f| f.kind == FaultKind::Port200g && f.node < nodes)
            .map(|f| fabric::FabricFault::BadNode(f.node))
            .collect();
        let mut fab = fabric::SimFabric::new(nodes, faults, self.config.seed);
        let names: Vec<String> = (0..nodes).map(|n| self.config.node_name(n)).collect();
        let config = SearchConfig {
            screen: if nodes <= 3 {
                Screen::Groups
            } else {
                Screen::Pairs
            },
            peers_pct: 80.0,
        };
        let screen = config.screen;
        let mut search = Search::new(nodes, config);
        while let Some(round) = search.next_round() {
            let results = round.iter().map(|t| (t.id, fab.run(t))).collect();
            search.record(results);
            let doc = LocalizeDoc::of(id, &names, screen, &search);
            self.search_rounds
                .push_back(SourceEvent::Search(Box::new(doc.snapshot(true))));
        }
        let doc = LocalizeDoc::of(id, &names, screen, &search);
        self.search_rounds
            .push_back(SourceEvent::Search(Box::new(doc.snapshot(false))));
        let head = doc.words().lines().next().unwrap_or_default().to_string();
        self.search_rounds
            .push_back(SourceEvent::Notice { text: head });
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
                let Some(spec) = default_plan().find(&id).filter(|p| {
                    SIMULATED_PHASES.contains(&p.id.as_str())
                        || ON_REQUEST_PHASES.contains(&p.id.as_str())
                }) else {
                    out.push(SourceEvent::Notice {
                        text: format!("{id} is not simulated: the demo plays T1-T8, S2 and S4"),
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
            PhaseCommand::Localize(id) => self.localize(&id, &mut out),
            PhaseCommand::Abort(id) if id.starts_with(crate::model::search::SEARCH_PREFIX) => {
                if !self.search_rounds.is_empty() {
                    self.search_rounds.clear();
                    out.push(SourceEvent::Notice {
                        text: format!("{id} aborted: the search stopped before its end"),
                    });
                }
            }
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
        let name = self.config.node_name(n);
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
                            identity: crate::model::GpuIdentity {
                                serial: Some(format!(
                                    "SIM{n:02}{g:02}{:06}",
                                    self.config.seed % 1_000_000
                                )),
                                pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x18 + 0x10 * g)),
                                vbios: Some("97.00.00.00.00 (simulated)".into()),
                            },
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

    /// Nodes whose ranks cannot finish a job at second `s` (a GPU stalled, lost or hung in a
    /// collective), each once.
    fn unhealthy_nodes(&self, s: u64) -> Vec<usize> {
        (0..self.config.nodes)
            .filter(|&n| {
                [FaultKind::Stall, FaultKind::Xid79, FaultKind::Hang]
                    .into_iter()
                    .any(|kind| self.node_faulty(kind, n, s).is_some())
            })
            .collect()
    }

    fn start(&mut self, id: &str, s: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        // An aborted S4 leaves its lines: a new run starts without them.
        self.gds_lines.clear();
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
        // A search in the demo: one round a second (its last snapshot and words together).
        while let Some(ev) = self.search_rounds.pop_front() {
            let last = matches!(&ev, SourceEvent::Search(snap) if !snap.running);
            out.push(ev);
            if !last {
                break;
            }
        }

        // Phase bookkeeping first, so the frame of this second reflects the phase now running.
        if let Some(r) = &self.running
            && s >= r.started_s + phase_duration_s(&r.id)
            && let Some(r) = self.running.take()
        {
            let judgement = self.judge(&r, s);
            for metric in judgement.gate_metrics() {
                out.push(SourceEvent::Phase(PhaseEvent::Metric {
                    phase: r.id.clone(),
                    at_ms,
                    metric,
                }));
            }
            out.push(SourceEvent::Phase(PhaseEvent::Finished {
                phase: r.id,
                at_ms,
                verdict: judgement.verdict,
                reason: judgement.reason,
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
        // The console's own probe of the store; while S2 probes from every node, the pane
        // follows S2's windows and this one would mix into them.
        if self.running.as_ref().is_none_or(|r| r.id != "S2") {
            out.push(SourceEvent::Probe(self.probe_window(s)));
        }
    }
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
