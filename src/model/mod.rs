//! The owned messages every source produces and the loop consumes: node and GPU identities, one
//! GPU's sample, one node's frame. Units are in the field names; a reading the hardware did not
//! give (NVML `NotSupported`, nvidia-smi `[N/A]`) is `None`, never zero.

pub mod bounds;
pub mod figures;
pub mod finding;
pub mod names;
pub mod phase;
pub mod probe;
pub mod search;
pub mod source;
pub mod spec;
pub mod stdout;
pub mod system;
pub mod thresholds;
pub mod topology;
pub mod units;
pub mod watch;
pub mod xid;

pub use source::{Source, SourceEvent, SourceTask};

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch. Sources stamp frames with it; the simulator uses a fixed
/// epoch so that seeded runs are identical.
pub type UnixMillis = u64;

/// The wall clock in Unix milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A line a parser could not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line_no}: {message}")]
pub struct LineError {
    /// 1-based line number in the output.
    pub line_no: usize,
    /// What was wrong.
    pub message: String,
}

/// NVML clock-event ("throttle") reason bits, as `nvmlClocksEventReasons` defines them. Kept as a
/// raw mask on the wire so that bits a newer driver adds survive untouched.
pub mod clock_events {
    /// GPU is idle and clocks are low on purpose.
    pub const GPU_IDLE: u64 = 0x1;
    /// Application clocks setting holds the clock down.
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    /// Software power cap: the normal state of a GPU at full load.
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Hardware slowdown (thermal or power brake, asserted by the board).
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Synchronised boost with other GPUs.
    pub const SYNC_BOOST: u64 = 0x10;
    /// Software thermal slowdown.
    pub const SW_THERMAL: u64 = 0x20;
    /// Hardware thermal slowdown: the GPU is too hot.
    pub const HW_THERMAL: u64 = 0x40;
    /// External power brake (the power supply asked the board to slow down).
    pub const HW_POWER_BRAKE: u64 = 0x80;
    /// Display clock setting.
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Every bit with its short name, in mask order; used by the UI and by triage.
    pub const NAMES: &[(u64, &str)] = &[
        (GPU_IDLE, "idle"),
        (APPLICATIONS_CLOCKS_SETTING, "app-clocks"),
        (SW_POWER_CAP, "sw-power-cap"),
        (HW_SLOWDOWN, "hw-slowdown"),
        (SYNC_BOOST, "sync-boost"),
        (SW_THERMAL, "sw-thermal"),
        (HW_THERMAL, "hw-thermal"),
        (HW_POWER_BRAKE, "hw-power-brake"),
        (DISPLAY_CLOCK_SETTING, "display-clocks"),
    ];

    /// Bits that mean the hardware or its cooling is in trouble (not just running at its cap).
    pub const TROUBLE: u64 = HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE;

    /// Names of the bits set in `mask`, unknown bits shown as hex.
    pub fn describe(mask: u64) -> Vec<String> {
        let mut out = Vec::new();
        let mut known = 0u64;
        for (bit, name) in NAMES {
            known |= bit;
            if mask & bit != 0 {
                out.push((*name).to_string());
            }
        }
        let unknown = mask & !known;
        if unknown != 0 {
            out.push(format!("0x{unknown:x}"));
        }
        out
    }
}

/// One Xid event as NVML's event set reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct XidEvent {
    /// The Xid code (for example 79: GPU has fallen off the bus).
    pub code: u32,
    /// When the event was seen.
    pub at_ms: UnixMillis,
}

/// Static facts about one GPU, sent once in the agent's hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML index on its node.
    pub index: u32,
    /// Product name, e.g. "NVIDIA B300".
    pub name: String,
    /// GPU UUID, stable across reboots.
    pub uuid: String,
    /// Enforced power limit.
    pub power_limit_watts: Option<f32>,
    /// Highest SM clock the GPU can reach.
    pub sm_clock_max_mhz: Option<u32>,
    /// Total framebuffer memory.
    pub memory_total_bytes: Option<u64>,
    /// NVLink links the GPU has (0 when it has none or they are not supported).
    pub nvlink_links: Option<u32>,
    /// What the vendor asks for on an RMA: the board's serial number, PCI bus id and VBIOS
    /// version (absent where the source cannot say).
    #[serde(default, skip_serializing_if = "GpuIdentity::is_empty")]
    pub identity: GpuIdentity,
}

/// A GPU's identity for a return: serial, PCI bus id, VBIOS (each `None` where not known).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuIdentity {
    /// Board serial number (NVML `serial`; nvidia-smi `serial`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// PCI bus id, `00000000:18:00.0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// VBIOS version, `96.00.A5.00.01`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vbios: Option<String>,
}

impl GpuIdentity {
    /// True when nothing is known.
    pub fn is_empty(&self) -> bool {
        self.serial.is_none() && self.pci_bus_id.is_none() && self.vbios.is_none()
    }

    /// Each field cut to 64 characters and stripped: they come from a node.
    pub fn bounded(self) -> Self {
        let b = |v: Option<String>| {
            v.map(|s| fit(&strip_controls(s.trim()), 64))
                .filter(|s| !s.is_empty())
        };
        Self {
            serial: b(self.serial),
            pci_bus_id: b(self.pci_bus_id),
            vbios: b(self.vbios),
        }
    }
}

/// One GPU's readings at one instant. Counters are cumulative; rates are per second. On the
/// wire a reading that is `None` is left out (smaller lines, cheaper to encode and decode).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuSample {
    /// NVML index on its node.
    pub index: u32,
    /// Power averaged over the last second (NVML `power_usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_avg_watts: Option<f32>,
    /// Instantaneous power (NVML field `POWER_INSTANT`); differs a lot from the average under load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_instant_watts: Option<f32>,
    /// Enforced power limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_limit_watts: Option<f32>,
    /// GPU core temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f32>,
    /// Current SM clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    /// Highest SM clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_clock_max_mhz: Option<u32>,
    /// Share of the last period a kernel ran (NVML utilization.gpu).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f32>,
    /// GPM SM activity, Hopper and later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_active_pct: Option<f32>,
    /// GPM tensor-core activity, Hopper and later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor_active_pct: Option<f32>,
    /// GPM DRAM bandwidth utilization, Hopper and later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram_active_pct: Option<f32>,
    /// Current memory clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<u32>,
    /// Framebuffer memory in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<u64>,
    /// Framebuffer memory in total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
    /// Clock-event reason mask (see [`clock_events`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_event_reasons: Option<u64>,
    /// Volatile corrected ECC errors since driver load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecc_corrected_volatile: Option<u64>,
    /// Volatile uncorrected ECC errors since driver load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected_volatile: Option<u64>,
    /// NVLink bytes sent per second over all links.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub nvlink_tx_bytes_per_sec: Option<f64>,
    /// NVLink bytes received per second over all links.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub nvlink_rx_bytes_per_sec: Option<f64>,
    /// NVLink CRC errors over all links, cumulative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_crc_errors: Option<u64>,
    /// NVLink replay errors over all links, cumulative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_replay_errors: Option<u64>,
    /// NVLink recovery errors over all links, cumulative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_recovery_errors: Option<u64>,
    /// PCIe replay counter, cumulative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcie_replay_count: Option<u64>,
    /// PCIe bytes sent per second (GPM on Hopper+, else the slow NVML counter).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub pcie_tx_bytes_per_sec: Option<f64>,
    /// PCIe bytes received per second.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub pcie_rx_bytes_per_sec: Option<f64>,
    /// NVLink links up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_links_active: Option<u32>,
    /// Per NVLink link (index = link number), whether it is up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_link_up: Option<Vec<bool>>,
    /// Rows remapped for correctable errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remapped_rows_correctable: Option<u32>,
    /// Rows remapped for uncorrectable errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remapped_rows_uncorrectable: Option<u32>,
    /// A remap waits for the next GPU reset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remapped_rows_pending: Option<bool>,
    /// A remap failed: the GPU needs service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remapped_rows_failure: Option<bool>,
    /// PIDs of the compute processes on the GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_pids: Option<Vec<u32>>,
    /// Xid events seen since the previous sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xid_events: Vec<XidEvent>,
    /// NVLink error counters of each link that has any (links with none are left out, so a
    /// healthy GPU adds nothing to the frame); the totals above are their sums.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlink_link_errors: Vec<NvlinkLinkErrors>,
}

/// One NVLink link's cumulative error counters, since the driver loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NvlinkLinkErrors {
    /// Link number, as `nvidia-smi nvlink -e` numbers it.
    pub link: u32,
    /// Data CRC errors.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub crc: u64,
    /// Replays (a flit resent after an error).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub replay: u64,
    /// Recoveries (the link retrained).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub recovery: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// Byte rates go on the wire as whole numbers: fractions of a byte per second are noise, and
/// shorter numbers are cheaper to write and to parse.
fn whole_rate<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.is_finite() => s.serialize_u64(x.max(0.0).round() as u64),
        Some(_) | None => s.serialize_none(),
    }
}

macro_rules! port_counters {
    ($($name:ident),* $(,)?) => {
        /// Cumulative error and congestion counters of a port, by their sysfs names (RDMA
        /// `counters/` and `hw_counters/`, Ethernet `statistics/`). Typed fields, not a map:
        /// no allocation per sample, and the JSON is the same object of name → value.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct PortCounters {
            $(
                #[allow(missing_docs)]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub $name: Option<u64>,
            )*
        }

        impl PortCounters {
            /// Every counter name this version knows.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// A counter by its sysfs name.
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $(stringify!($name) => self.$name,)*
                    _ => None,
                }
            }

            /// Set a counter by its sysfs name; false for a name this version does not know.
            pub fn set(&mut self, name: &str, value: u64) -> bool {
                match name {
                    $(stringify!($name) => { self.$name = Some(value); true })*
                    _ => false,
                }
            }

            /// Set the counter `NAMES[index]` (nothing for an index past the end).
            pub fn set_at(&mut self, index: usize, value: u64) {
                let mut i = 0;
                $(
                    if i == index {
                        self.$name = Some(value);
                        return;
                    }
                    i += 1;
                )*
                let _ = i;
            }

            /// True when no counter is known.
            pub fn is_empty(&self) -> bool {
                $(self.$name.is_none())&&*
            }
        }
    };
}

port_counters!(
    symbol_error,
    link_downed,
    link_error_recovery,
    port_rcv_errors,
    port_xmit_discards,
    port_rcv_remote_physical_errors,
    local_link_integrity_errors,
    excessive_buffer_overrun_errors,
    port_xmit_wait,
    out_of_sequence,
    packet_seq_err,
    local_ack_timeout_err,
    np_cnp_sent,
    rp_cnp_handled,
    roce_adp_retrans,
    rnr_nak_retry_err,
    rx_errors,
    tx_errors,
    rx_dropped,
    tx_dropped,
    rx_crc_errors,
    rx_missed_errors,
    tx_carrier_errors,
);

/// One RDMA port (InfiniBand or RoCE) at one instant. Error and congestion counters are
/// cumulative, as the kernel gives them; data rates are computed by the agent from deltas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NicSample {
    /// RDMA device, e.g. `mlx5_0`.
    pub device: String,
    /// Port number (1-based, as sysfs names it).
    pub port: u32,
    /// Logical state, e.g. `ACTIVE`, `DOWN`, `INIT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Physical state, e.g. `LinkUp`, `Polling`, `Disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phys_state: Option<String>,
    /// Trained rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f32>,
    /// `InfiniBand` or `Ethernet` (RoCE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<String>,
    /// NUMA node of the adapter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<i32>,
    /// Bytes sent per second.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub tx_bytes_per_sec: Option<f64>,
    /// Bytes received per second.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub rx_bytes_per_sec: Option<f64>,
    /// Cumulative error/congestion counters (`symbol_error`, `port_xmit_wait`, `np_cnp_sent`,
    /// …); counters the port lacks are absent.
    #[serde(skip_serializing_if = "PortCounters::is_empty")]
    pub counters: PortCounters,
}

/// A reading that is not a finite number is no reading (JSON's 1e39 read as f32 is infinite).
fn finite32(v: &mut Option<f32>) {
    *v = v.filter(|x| x.is_finite());
}

/// [`finite32`] for f64 readings.
fn finite64(v: &mut Option<f64>) {
    *v = v.filter(|x| x.is_finite());
}

impl GpuSample {
    /// Readings that are not finite numbers become absent: a stream cannot hand triage an
    /// infinite power or a NaN utilization as evidence.
    pub fn drop_non_finite(&mut self) {
        for v in [
            &mut self.power_avg_watts,
            &mut self.power_instant_watts,
            &mut self.power_limit_watts,
            &mut self.temperature_c,
            &mut self.utilization_pct,
            &mut self.sm_active_pct,
            &mut self.tensor_active_pct,
            &mut self.dram_active_pct,
        ] {
            finite32(v);
        }
        for v in [
            &mut self.nvlink_tx_bytes_per_sec,
            &mut self.nvlink_rx_bytes_per_sec,
            &mut self.pcie_tx_bytes_per_sec,
            &mut self.pcie_rx_bytes_per_sec,
        ] {
            finite64(v);
        }
    }
}

impl NodeHello {
    /// A GPU's power limit that is not a finite number is no limit (see
    /// [`GpuSample::drop_non_finite`]).
    pub fn drop_non_finite(&mut self) {
        for g in &mut self.gpus {
            finite32(&mut g.power_limit_watts);
        }
    }
}

impl NodeFrame {
    /// Every reading of the frame that is not a finite number becomes absent: JSON's 1e39 in
    /// an f32 field, or an overflowing CSV cell, is no reading.
    pub fn drop_non_finite(&mut self) {
        self.gpus.iter_mut().for_each(GpuSample::drop_non_finite);
        self.nics.iter_mut().for_each(NicSample::drop_non_finite);
        self.netdevs.iter_mut().for_each(NetSample::drop_non_finite);
    }
}

impl NicSample {
    /// Readings that are not finite numbers become absent (see [`GpuSample::drop_non_finite`]).
    pub fn drop_non_finite(&mut self) {
        finite32(&mut self.rate_gbps);
        finite64(&mut self.tx_bytes_per_sec);
        finite64(&mut self.rx_bytes_per_sec);
    }

    /// `mlx5_0/1`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }

    /// Up and carrying traffic: logical ACTIVE and physical LinkUp (when known).
    pub fn is_up(&self) -> bool {
        self.state.as_deref() == Some("ACTIVE")
            && self.phys_state.as_deref().is_none_or(|p| p == "LinkUp")
    }
}

/// One Ethernet interface (a bond, or a physical port carrying TCP: the S3 path) at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetSample {
    /// Interface name, e.g. `bond0`, `eth2`.
    pub iface: String,
    /// `up`, `down`, `lowerlayerdown` … (`operstate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operstate: Option<String>,
    /// Link speed in Mb/s (`speed`), when the driver knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// Bytes sent per second.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub tx_bytes_per_sec: Option<f64>,
    /// Bytes received per second.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "whole_rate")]
    pub rx_bytes_per_sec: Option<f64>,
    /// Cumulative error/drop counters from `statistics/` (`rx_errors`, `tx_dropped`, …).
    #[serde(skip_serializing_if = "PortCounters::is_empty")]
    pub counters: PortCounters,
}

impl NetSample {
    /// Readings that are not finite numbers become absent (see [`GpuSample::drop_non_finite`]).
    pub fn drop_non_finite(&mut self) {
        finite64(&mut self.tx_bytes_per_sec);
        finite64(&mut self.rx_bytes_per_sec);
    }
}

/// All GPUs (and RDMA ports) of one node at one instant: the unit every telemetry source sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFrame {
    /// Node name as the inventory spells it.
    pub node: String,
    /// When the node took the samples.
    pub at_ms: UnixMillis,
    /// One sample per GPU, in index order.
    pub gpus: Vec<GpuSample>,
    /// One sample per RDMA port; empty when the node has none (or the source cannot see them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<NicSample>,
    /// Ethernet interfaces (bonds and physical ports); empty when the source cannot see them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netdevs: Vec<NetSample>,
}

/// What a source says about a node beyond its frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeHello {
    /// Node name as the inventory spells it.
    pub node: String,
    /// Host name the node reports.
    pub host: String,
    /// Version of the agent (or source) that produced the frames.
    pub agent_version: String,
    /// NVIDIA driver version.
    pub driver: Option<String>,
    /// CUDA version the driver supports.
    pub cuda: Option<String>,
    /// The GPUs, in index order.
    pub gpus: Vec<GpuInfo>,
    /// Nearest NIC, NUMA node and CPUs of each GPU (from `nvidia-smi topo -m`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<topology::Topology>,
    /// Kernel, OS, fabric manager and NCCL versions, for the bill of materials (agents before
    /// this field send none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Box<system::SystemInfo>>,
    /// Readings this source cannot give for the node, each with why (a Prometheus without the
    /// series: opt-in, profiling), so the console says why a value is n/a.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

/// A reading a node's source cannot give, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    /// The reading in the console's words ("tensor active").
    pub reading: String,
    /// Why, with where it would come from.
    pub why: String,
}

/// A node's connection as the console sees it. A node that drops is state, never an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum NodeLink {
    /// Connection under way.
    Connecting,
    /// Frames arriving.
    Streaming,
    /// No frame for several periods.
    Stale,
    /// Cannot be reached; the reason is the transport's own words.
    Unreachable(String),
}

impl NodeLink {
    /// Short label for tables.
    pub fn label(&self) -> &str {
        match self {
            NodeLink::Connecting => "connecting",
            NodeLink::Streaming => "streaming",
            NodeLink::Stale => "stale",
            NodeLink::Unreachable(_) => "unreachable",
        }
    }
}

/// A duration in seconds the way a person reads it: `42s`, `3m05s`, `2h14m`.
pub fn human_secs(s: u64) -> String {
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    }
}

/// Slots the console keeps per metric: ten minutes at one sample per second. A source that
/// back-fills history sends no more than this.
pub const HISTORY_SLOTS: usize = 600;

/// The most GPUs a node may have: NVML numbers a node's GPUs from 0, and the largest nodes
/// today have 16. Also the cap on GPU indices one node's stream may bring into the console.
pub const MAX_GPUS_PER_NODE: u32 = 64;

/// Text from outside (a node, a tool's output, a file) made safe for a terminal: control
/// characters (C0, DEL, C1: escape sequences, bells, carriage returns) are dropped, a tab
/// becomes a space, so nothing a node prints can move the cursor, retitle the window or
/// write the clipboard.
pub fn strip_controls(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            '\t' => Some(' '),
            c if c.is_control() || is_bidi_control(c) => None,
            c => Some(c),
        })
        .collect()
}

/// A character no terminal may be sent from outside text: a control, or a bidi control.
pub fn is_terminal_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The Unicode bidirectional embeddings, overrides and isolates: printed, they reorder the
/// text around them, so a node's line could show a verdict other than the one it holds.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// [`strip_controls`] for whole messages: line breaks stay (a table, a JSON document), every
/// other control character goes. What burnin prints on stdout and stderr passes through here.
pub fn terminal_safe(s: &str) -> String {
    s.split('\n')
        .map(strip_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Most characters of outside text one error quotes: an error stays a line whatever it read.
pub const QUOTED_CHARS: usize = 160;

/// `text` as an error quotes it: whole when short, else its start and its end around a marked
/// cut, [`QUOTED_CHARS`] characters in all (serde_json's messages end with the line and column,
/// and quote a whole string value of the wrong type before them).
pub fn excerpt(text: &str) -> String {
    excerpt_chars(text, QUOTED_CHARS)
}

/// [`excerpt`] to `max` characters (a message of burnin's own that quotes outside text, where
/// its own words must stay whole).
pub fn excerpt_chars(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max || max < 3 {
        return text.to_string();
    }
    let half = (max - 1) / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!("{head}…{tail}")
}

/// Cut a string to `width` characters, marking the cut (tables, status lines, short reasons).
pub fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else if width == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(width - 1).collect();
        out.push('…');
        out
    }
}

/// `s` in at most `width` characters, cut at a word's end where that keeps a third of the
/// room or more (`T0 preflight…`, not `T0 preflight (instal…`); a single long word is cut
/// mid-word, as [`fit`] does.
pub fn fit_words(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    if width < 2 {
        return fit(s, width);
    }
    let room: String = s.chars().take(width - 1).collect();
    // A break is a space; what ends the kept text must not be an opening bracket or a
    // separator left dangling.
    let cut = room
        .char_indices()
        .rev()
        .filter(|(_, c)| *c == ' ')
        .map(|(i, _)| i)
        .find(|&i| room[..i].chars().count() * 3 >= width);
    match cut {
        Some(i) => {
            let kept = room[..i].trim_end_matches([' ', '(', '[', '·', ',', ':', '-', '—']);
            format!("{kept}…")
        }
        None => fit(s, width),
    }
}

/// A pane title in `width` columns of border: its ` · `-separated parts from the first, as
/// many as fit whole, else its first part cut at a word.
pub fn fit_title(title: &str, width: usize) -> String {
    let room = width.saturating_sub(2);
    if title.chars().count() <= room {
        return title.to_string();
    }
    let inner = title.trim();
    let mut kept = String::new();
    for part in inner.split(" · ") {
        let next = if kept.is_empty() {
            part.to_string()
        } else {
            format!("{kept} · {part}")
        };
        if next.chars().count() + 2 > room {
            break;
        }
        kept = next;
    }
    if kept.is_empty() {
        format!(" {} ", fit_words(inner, room.saturating_sub(2)))
    } else {
        format!(" {kept} ")
    }
}

/// Format a byte rate with a unit a person reads at a glance (decimal, as NCCL and NICs do).
pub fn format_rate(bytes_per_sec: f64) -> String {
    let (v, unit) = if bytes_per_sec >= 1e12 {
        (bytes_per_sec / 1e12, "TB/s")
    } else if bytes_per_sec >= 1e9 {
        (bytes_per_sec / 1e9, "GB/s")
    } else if bytes_per_sec >= 1e6 {
        (bytes_per_sec / 1e6, "MB/s")
    } else if bytes_per_sec >= 1e3 {
        (bytes_per_sec / 1e3, "kB/s")
    } else {
        (bytes_per_sec, "B/s")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// A file's size for people: `9.1 MB`, `331 MB`, `812 kB` (decimal, as `ls -lh --si` says it).
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.0} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// Format a message size the way nccl-tests users say it (binary units).
pub fn format_size(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes >= K * K * K && bytes.is_multiple_of(K * K * K) {
        format!("{}G", bytes / (K * K * K))
    } else if bytes >= K * K && bytes.is_multiple_of(K * K) {
        format!("{}M", bytes / (K * K))
    } else if bytes >= K && bytes.is_multiple_of(K) {
        format!("{}K", bytes / K)
    } else {
        format!("{bytes}B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cut_at_words_and_parts() {
        assert_eq!(
            fit_words("preflight (installed software and firmware)", 20),
            "preflight…"
        );
        assert_eq!(
            fit_words("preflight (installed software and firmware)", 24),
            "preflight (installed…"
        );
        assert_eq!(fit_words("multi-node NCCL (IB)", 18), "multi-node NCCL…");
        assert_eq!(fit_words("Supercalifragilistic", 8), "Superca…");
        assert_eq!(fit_words("short", 8), "short");
        assert_eq!(
            fit_title(
                " AIStor aistor.sim:9000 (simulated) · S3 over HTTP · from node01 ",
                45
            ),
            " AIStor aistor.sim:9000 (simulated) "
        );
        assert_eq!(
            fit_title(" AIStor a-very-long-endpoint-name:9000 ", 20),
            " AIStor… "
        );
        assert_eq!(fit_title(" NCCL ", 40), " NCCL ");
    }

    proptest::proptest! {
        #[test]
        fn cut_text_never_outgrows_its_room(s in "[a-z (·:]{0,40}", width in 0usize..50) {
            proptest::prop_assert!(fit_words(&s, width).chars().count() <= width);
            proptest::prop_assert!(fit_title(&s, width).chars().count() <= width.max(2));
        }
    }

    #[test]
    fn describes_known_and_unknown_bits() {
        assert_eq!(
            clock_events::describe(clock_events::SW_POWER_CAP | clock_events::HW_THERMAL | 0x10000),
            vec!["sw-power-cap", "hw-thermal", "0x10000"]
        );
        assert!(clock_events::describe(0).is_empty());
    }

    #[test]
    fn formats_rates_and_sizes() {
        assert_eq!(format_rate(812.4e9), "812 GB/s");
        assert_eq!(format_rate(1.25e12), "1.2 TB/s");
        assert_eq!(format_rate(0.0), "0.0 B/s");
        assert_eq!(format_size(8), "8B");
        assert_eq!(format_size(64 * 1024 * 1024), "64M");
        assert_eq!(format_size(8 * 1024 * 1024 * 1024), "8G");
    }

    #[test]
    fn link_state_serializes_with_reason() {
        let json = serde_json::to_string(&NodeLink::Unreachable("auth failed".into())).unwrap();
        assert_eq!(json, r#"{"state":"unreachable","reason":"auth failed"}"#);
    }
}
