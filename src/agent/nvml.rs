//! Local GPUs through NVML (nvml-wrapper, loaded at run time: the binary runs on machines without
//! a driver and says so). Reads are split by cost, as measured on an H200 (shared/fixtures/h200):
//! the per-tick path makes only ~1 µs calls plus one batched field-value call; GPM metrics
//! (~2 ms), the PCIe replay counter, remapped rows, processes and NVLink link state are read by a
//! background thread; Xid events come from an NVML event set on a thread of their own.
//! `NotSupported` (and any per-reading failure) is `None`, never an error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::sys_exports::field_id;
use nvml_wrapper::{Device, GpmSample, Nvml};

use crate::agent::gpm_cadence::{self, GpmCadence, GpmRead};

use crate::model::{GpuInfo, GpuSample, NodeFrame, NodeHello, UnixMillis, XidEvent};

/// NVML's "all links" scope for NVLink field values.
const SCOPE_ALL_LINKS: u32 = u32::MAX;
/// How often the background thread refreshes the slow readings.
const SLOW_PERIOD: Duration = Duration::from_secs(2);
/// The moment between the two GPM samples of a GPU that turned suspect after a long gap.
const GPM_PRIME_GAP: Duration = Duration::from_millis(20);
/// Every how many slow rounds (30 s) the PCIe replay counter is read: one read costs ~190 µs
/// of CPU back to back and ~740 µs after the thread slept (`--probe-costs`, "cold", on the
/// H200 VM), and a cumulative error counter needs no finer grain on a burn-in.
const PCIE_REPLAY_EVERY: u32 = 15;
/// Instant power and the 1 s average, in one field-values call.
const POWER_FIELDS: [(u32, u32); 2] = [
    (field_id::NVML_FI_DEV_POWER_INSTANT, 0),
    (field_id::NVML_FI_DEV_POWER_AVERAGE, 0),
];
/// Volatile ECC totals, single-bit then double-bit (the cost probe compares them with the
/// calls the agent makes; see [`volatile_ecc`]).
const ECC_FIELDS: [(u32, u32); 2] = [
    (field_id::NVML_FI_DEV_ECC_SBE_VOL_TOTAL, 0),
    (field_id::NVML_FI_DEV_ECC_DBE_VOL_TOTAL, 0),
];
/// Xid events kept per GPU until the next frame takes them.
const XID_QUEUE: usize = 64;

/// Field IDs of NVML ≥ 13 Update 1 (drivers ≥ 580.82) renumbered 251–273. nvml-wrapper translates
/// for its own calls; our raw call must do the same. None of the IDs we read today is in the
/// range, but a future one will be.
pub fn translate_field_id(driver_at_least_580_82: bool, id: u32) -> u32 {
    if !driver_at_least_580_82 {
        return id;
    }
    match id {
        251..=255 => id + 18,
        256..=273 => id - 5,
        other => other,
    }
}

/// True when a driver version string ("580.159.04") is 580.82 or newer.
pub fn driver_renumbers_fields(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (580, 82)
}

/// Readings refreshed off the tick path.
#[derive(Debug, Clone, Default)]
struct SlowReadings {
    sm_active_pct: Option<f32>,
    tensor_active_pct: Option<f32>,
    dram_active_pct: Option<f32>,
    pcie_tx_bytes_per_sec: Option<f64>,
    pcie_rx_bytes_per_sec: Option<f64>,
    gpm_nvlink_tx_bytes_per_sec: Option<f64>,
    gpm_nvlink_rx_bytes_per_sec: Option<f64>,
    pcie_replay_count: Option<u64>,
    nvlink_links_active: Option<u32>,
    nvlink_link_up: Option<Vec<bool>>,
    remapped: Option<(u32, u32, bool, bool)>,
    compute_pids: Option<Vec<u32>>,
    memory: Option<(u64, u64)>,
    mem_clock_mhz: Option<u32>,
    ecc: (Option<u64>, Option<u64>),
    nvlink_errors: [Option<u64>; 3],
    nvlink_link_errors: Vec<crate::model::NvlinkLinkErrors>,
}

/// A GPU's GPM readings, carried between the rounds that read them.
#[derive(Debug, Clone, Copy, Default)]
struct GpmReadings {
    sm_active_pct: Option<f32>,
    tensor_active_pct: Option<f32>,
    dram_active_pct: Option<f32>,
    pcie_tx_bytes_per_sec: Option<f64>,
    pcie_rx_bytes_per_sec: Option<f64>,
    nvlink_tx_bytes_per_sec: Option<f64>,
    nvlink_rx_bytes_per_sec: Option<f64>,
}

impl GpmReadings {
    fn of(r: &SlowReadings) -> Self {
        Self {
            sm_active_pct: r.sm_active_pct,
            tensor_active_pct: r.tensor_active_pct,
            dram_active_pct: r.dram_active_pct,
            pcie_tx_bytes_per_sec: r.pcie_tx_bytes_per_sec,
            pcie_rx_bytes_per_sec: r.pcie_rx_bytes_per_sec,
            nvlink_tx_bytes_per_sec: r.gpm_nvlink_tx_bytes_per_sec,
            nvlink_rx_bytes_per_sec: r.gpm_nvlink_rx_bytes_per_sec,
        }
    }

    fn put(&self, r: &mut SlowReadings) {
        r.sm_active_pct = self.sm_active_pct;
        r.tensor_active_pct = self.tensor_active_pct;
        r.dram_active_pct = self.dram_active_pct;
        r.pcie_tx_bytes_per_sec = self.pcie_tx_bytes_per_sec;
        r.pcie_rx_bytes_per_sec = self.pcie_rx_bytes_per_sec;
        r.gpm_nvlink_tx_bytes_per_sec = self.nvlink_tx_bytes_per_sec;
        r.gpm_nvlink_rx_bytes_per_sec = self.nvlink_rx_bytes_per_sec;
    }
}

struct Shared {
    slow: Vec<SlowReadings>,
    xids: Vec<VecDeque<XidEvent>>,
    notes: Vec<String>,
}

/// Samples every GPU of this host through NVML.
pub struct NvmlSampler {
    nvml: &'static Nvml,
    devices: Vec<Device<'static>>,
    renumbered: bool,
    shared: Arc<Mutex<Shared>>,
    /// Previous cumulative NVLink KiB counters per GPU, for rates.
    prev_nvlink: Vec<Option<(u64, u64, Instant)>>,
    /// Whether each GPU answers NVLink throughput at all (decided once at start).
    has_nvlink: Vec<bool>,
    /// NVML's index of the GPU behind each slot (the same as the slot's, except under
    /// [`NvmlSampler::open_slots`]).
    nvml_index: Vec<u32>,
    hello: NodeHello,
}

/// Which physical GPU each of `slots` GPU slots reads, round robin over `count` GPUs: how
/// `burnin bench agent` makes a one-GPU machine pay for the calls of an eight-GPU node.
pub fn slot_gpus(count: u32, slots: u32) -> Vec<u32> {
    if count == 0 {
        return Vec::new();
    }
    (0..slots.max(count)).map(|k| k % count).collect()
}

/// Why NVML could not be used.
#[derive(Debug, thiserror::Error)]
#[error("NVML: {0}")]
pub struct NvmlUnavailable(pub String);

fn now_ms() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The host's name, for the hello.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

impl NvmlSampler {
    /// Load NVML and open every GPU. Fails with NVML's own words when there is no driver.
    pub fn open() -> Result<Self, NvmlUnavailable> {
        Self::open_slots(None)
    }

    /// [`NvmlSampler::open`], or, with `Some(n)` and fewer than `n` GPUs, a sampler whose `n`
    /// GPU slots read the host's GPUs round robin ([`slot_gpus`]): every call and every
    /// thread's round is made once per slot, as on a node with `n` GPUs, but the slots repeat
    /// physical GPUs ([`NvmlSampler::physical_gpus`]). For measuring the agent's CPU only.
    pub fn open_slots(slots: Option<u32>) -> Result<Self, NvmlUnavailable> {
        let nvml = Nvml::init().map_err(|e| NvmlUnavailable(e.to_string()))?;
        // The sampler lives for the whole agent process; leaking gives devices a 'static borrow
        // that the background threads can share.
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let count = nvml
            .device_count()
            .map_err(|e| NvmlUnavailable(format!("device count: {e}")))?;
        let mut devices = Vec::new();
        let mut nvml_index = Vec::new();
        for i in slot_gpus(count, slots.unwrap_or(count)) {
            match nvml.device_by_index(i) {
                Ok(d) => {
                    devices.push(d);
                    nvml_index.push(i);
                }
                Err(e) => tracing::warn!("GPU {i}: {e}"),
            }
        }
        let driver = nvml.sys_driver_version().ok();
        let cuda = nvml
            .sys_cuda_driver_version()
            .ok()
            .map(|v| format!("{}.{}", v / 1000, v % 1000 / 10));
        let renumbered = driver.as_deref().is_some_and(driver_renumbers_fields);
        let gpus = devices
            .iter()
            .enumerate()
            .map(|(i, d)| GpuInfo {
                index: if slots.is_some_and(|n| n > count) {
                    i as u32
                } else {
                    d.index().unwrap_or(i as u32)
                },
                name: d.name().unwrap_or_else(|_| "unknown".into()),
                uuid: d.uuid().unwrap_or_default(),
                power_limit_watts: d.enforced_power_limit().ok().map(|mw| mw as f32 / 1000.0),
                sm_clock_max_mhz: d.max_clock_info(Clock::SM).ok(),
                memory_total_bytes: d.memory_info().ok().map(|m| m.total),
                // Links that answer at all; the background thread asks only these GPUs again
                // (18 calls cost ~115 µs in a VM even when every one says NotSupported).
                nvlink_links: Some(nvlink_link_states(d).map_or(0, |s| s.len() as u32)),
                identity: crate::model::GpuIdentity {
                    serial: d.serial().ok(),
                    pci_bus_id: d.pci_info().ok().map(|p| p.bus_id),
                    vbios: d.vbios_version().ok(),
                }
                .bounded(),
            })
            .collect();
        let host = hostname();
        let hello = NodeHello {
            node: host.clone(),
            host,
            agent_version: format!("burnin {}", env!("CARGO_PKG_VERSION")),
            driver,
            cuda,
            gpus,
            topology: read_topology(),
            system: Some(Box::new(crate::agent::system::read_system())),
            unavailable: Vec::new(),
        };
        let n = devices.len();
        let shared = Arc::new(Mutex::new(Shared {
            slow: vec![SlowReadings::default(); n],
            xids: vec![VecDeque::new(); n],
            notes: Vec::new(),
        }));
        let has_nvlink = devices
            .iter()
            .map(|d| {
                raw_field_values(
                    d,
                    renumbered,
                    &[(
                        field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                        SCOPE_ALL_LINKS,
                    )],
                )[0]
                .is_some()
            })
            .collect();
        let sampler = Self {
            nvml,
            devices,
            renumbered,
            shared,
            prev_nvlink: vec![None; n],
            has_nvlink,
            nvml_index,
            hello,
        };
        sampler.spawn_slow_thread();
        sampler.spawn_xid_thread();
        Ok(sampler)
    }

    /// The hello line's content.
    pub fn hello(&self) -> NodeHello {
        self.hello.clone()
    }

    /// Notes from the background threads (e.g. "Xid events unavailable: …"), drained.
    pub fn take_notes(&self) -> Vec<String> {
        let mut s = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut s.notes)
    }

    /// How many distinct GPUs the slots read (fewer than the slots only under
    /// [`NvmlSampler::open_slots`]).
    pub fn physical_gpus(&self) -> usize {
        let mut seen = self.nvml_index.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// Fresh handles to the same GPUs, slot for slot, for a background thread (handles are not
    /// Clone). A GPU that does not open again is `None`, so the other slots keep their places.
    fn reopen(&self) -> Vec<Option<Device<'static>>> {
        self.nvml_index
            .iter()
            .map(|&i| self.nvml.device_by_index(i).ok())
            .collect()
    }

    fn spawn_slow_thread(&self) {
        let devices = self.reopen();
        let shared = Arc::clone(&self.shared);
        let has_links: Vec<bool> = self
            .hello
            .gpus
            .iter()
            .map(|g| g.nvlink_links.is_some_and(|n| n > 0))
            .collect();
        let mut reader = SlowReader::new(self.nvml, &devices, has_links, self.renumbered);
        let spawned = std::thread::Builder::new()
            .name("nvml-slow".into())
            .spawn(move || {
                crate::agent::cpu::NVML_SLOW_THREAD.register();
                for round in 0u32.. {
                    for (i, d) in devices.iter().enumerate() {
                        let Some(d) = d else { continue };
                        let r = reader.read(i, d, round);
                        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        if let Some(slot) = s.slow.get_mut(i) {
                            *slot = r;
                        }
                    }
                    crate::agent::cpu::NVML_SLOW_THREAD.publish();
                    std::thread::sleep(SLOW_PERIOD);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the slow NVML thread: {e}");
        }
    }

    fn spawn_xid_thread(&self) {
        let nvml = self.nvml;
        let devices = self.reopen();
        let nvml_index = self.nvml_index.clone();
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("nvml-xid".into())
            .spawn(move || {
                crate::agent::cpu::XID_THREAD.register();
                let note = |text: String| {
                    let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    s.notes.push(text);
                };
                let mut set = match nvml.create_event_set() {
                    Ok(s) => s,
                    Err(e) => return note(format!("Xid events unavailable: {e}")),
                };
                // Slot by slot; a GPU behind several slots (`open_slots`) registers once, and
                // its events go to its first slot.
                let mut uuids: Vec<String> = Vec::new();
                for (slot, d) in devices.iter().enumerate() {
                    let uuid = d.as_ref().and_then(|d| d.uuid().ok()).unwrap_or_default();
                    if let Some(d) = d
                        && !nvml_index[..slot].contains(&nvml_index[slot])
                    {
                        set = match d.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
                            Ok(s) => s,
                            Err(e) => {
                                return note(format!("Xid events unavailable: {}", e.error));
                            }
                        };
                    }
                    uuids.push(uuid);
                }
                loop {
                    crate::agent::cpu::XID_THREAD.publish();
                    // The wait returns as soon as an event comes; the timeout only bounds how
                    // stale the published CPU figure gets (each wake costs ~90 µs in a VM).
                    match set.wait(10_000) {
                        Ok(ev) => {
                            let code = match ev.event_data {
                                Some(XidError::Value(v)) => v as u32,
                                _ => 0,
                            };
                            let uuid = ev.device.uuid().unwrap_or_default();
                            let idx = uuids.iter().position(|u| *u == uuid);
                            let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                            if let Some(q) = idx.and_then(|i| s.xids.get_mut(i)) {
                                if q.len() == XID_QUEUE {
                                    q.pop_front();
                                }
                                q.push_back(XidEvent {
                                    code,
                                    at_ms: now_ms(),
                                });
                            }
                        }
                        Err(nvml_wrapper::error::NvmlError::Timeout) => {}
                        Err(e) => {
                            note(format!("Xid event wait failed: {e}"));
                            std::thread::sleep(Duration::from_secs(5));
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the Xid thread: {e}");
        }
    }

    /// One frame of every GPU: the cheap reads only.
    pub fn sample(&mut self) -> NodeFrame {
        let at_ms = now_ms();
        let now = Instant::now();
        let (slow, xids): (Vec<SlowReadings>, Vec<Vec<XidEvent>>) = {
            let mut s = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            let xids = s.xids.iter_mut().map(|q| q.drain(..).collect()).collect();
            (s.slow.clone(), xids)
        };
        let mut gpus = Vec::with_capacity(self.devices.len());
        for (i, d) in self.devices.iter().enumerate() {
            let info = &self.hello.gpus[i];
            // One field-values call carries both power readings (the 1 s average costs ~18 µs
            // through nvmlDeviceGetPowerUsage in a VM, ~0.5 µs as a field). NVLink throughput
            // is asked only of GPUs that have NVLink: it costs ~8 µs even when NotSupported.
            const NVLINK: [(u32, u32); 2] = [
                (
                    field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                    SCOPE_ALL_LINKS,
                ),
                (
                    field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
                    SCOPE_ALL_LINKS,
                ),
            ];
            let fields = if self.has_nvlink[i] {
                raw_field_values(
                    d,
                    self.renumbered,
                    &[POWER_FIELDS[0], POWER_FIELDS[1], NVLINK[0], NVLINK[1]],
                )
            } else {
                raw_field_values(d, self.renumbered, &POWER_FIELDS)
            };
            let f = |k: usize| fields.get(k).copied().flatten();
            // NVLink throughput counters are cumulative KiB; the rate needs two readings.
            let (tx_rate, rx_rate) = match (f(2), f(3)) {
                (Some(tx), Some(rx)) => {
                    let (tx, rx) = (tx as u64, rx as u64);
                    let rate = match self.prev_nvlink[i] {
                        Some((ptx, prx, t)) if tx >= ptx && rx >= prx => {
                            let dt = now.duration_since(t).as_secs_f64();
                            (dt > 0.0).then(|| {
                                (
                                    (tx - ptx) as f64 * 1024.0 / dt,
                                    (rx - prx) as f64 * 1024.0 / dt,
                                )
                            })
                        }
                        _ => None,
                    };
                    self.prev_nvlink[i] = Some((tx, rx, now));
                    (rate.map(|r| r.0), rate.map(|r| r.1))
                }
                _ => (None, None),
            };
            // Drivers without the average field answer through the classic call.
            let power_avg_mw = f(1).or_else(|| d.power_usage().ok().map(f64::from));
            let sl = &slow[i];
            let util = d.utilization_rates().ok();
            let remapped = sl.remapped;
            gpus.push(GpuSample {
                index: info.index,
                power_avg_watts: power_avg_mw.map(|mw| (mw / 1000.0) as f32),
                power_instant_watts: f(0).map(|mw| (mw / 1000.0) as f32),
                power_limit_watts: info.power_limit_watts,
                temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(|t| t as f32),
                sm_clock_mhz: d.clock_info(Clock::SM).ok(),
                sm_clock_max_mhz: info.sm_clock_max_mhz,
                utilization_pct: util.as_ref().map(|u| u.gpu as f32),
                sm_active_pct: sl.sm_active_pct,
                tensor_active_pct: sl.tensor_active_pct,
                dram_active_pct: sl.dram_active_pct,
                mem_clock_mhz: sl.mem_clock_mhz,
                memory_used_bytes: sl.memory.map(|m| m.0),
                memory_total_bytes: sl.memory.map(|m| m.1).or(info.memory_total_bytes),
                clock_event_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
                ecc_corrected_volatile: sl.ecc.0,
                ecc_uncorrected_volatile: sl.ecc.1,
                // GPM reports 0 B/s on a GPU without NVLink; only links that are up make it a
                // measurement rather than "n/a".
                nvlink_tx_bytes_per_sec: tx_rate.or(sl
                    .gpm_nvlink_tx_bytes_per_sec
                    .filter(|_| sl.nvlink_links_active.is_some_and(|n| n > 0))),
                nvlink_rx_bytes_per_sec: rx_rate.or(sl
                    .gpm_nvlink_rx_bytes_per_sec
                    .filter(|_| sl.nvlink_links_active.is_some_and(|n| n > 0))),
                nvlink_crc_errors: sl.nvlink_errors[0],
                nvlink_replay_errors: sl.nvlink_errors[1],
                nvlink_recovery_errors: sl.nvlink_errors[2],
                pcie_replay_count: sl.pcie_replay_count,
                pcie_tx_bytes_per_sec: sl.pcie_tx_bytes_per_sec,
                pcie_rx_bytes_per_sec: sl.pcie_rx_bytes_per_sec,
                nvlink_links_active: sl.nvlink_links_active,
                nvlink_link_up: sl.nvlink_link_up.clone(),
                remapped_rows_correctable: remapped.map(|r| r.0),
                remapped_rows_uncorrectable: remapped.map(|r| r.1),
                remapped_rows_pending: remapped.map(|r| r.2),
                remapped_rows_failure: remapped.map(|r| r.3),
                compute_pids: sl.compute_pids.clone(),
                nvlink_link_errors: sl.nvlink_link_errors.clone(),
                xid_events: xids.get(i).cloned().unwrap_or_default(),
            });
        }
        NodeFrame {
            node: self.hello.node.clone(),
            at_ms,
            gpus,
            nics: Vec::new(),
            netdevs: Vec::new(),
        }
    }
}

/// `nvidia-smi topo -m`, parsed; `None` when nvidia-smi is missing, fails, or takes longer than
/// 10 s (a wedged driver must not hold up the hello).
pub fn read_topology() -> Option<crate::agent::topology::Topology> {
    let mut child = std::process::Command::new("nvidia-smi")
        .args(["topo", "-m"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::warn!("nvidia-smi topo -m did not answer within 10 s");
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    crate::agent::topology::parse_topo_matrix(&text)
}

/// Time every read the agent makes, per GPU, and return a table (µs per call, mean of `rounds`).
/// `burnin agent --probe-costs` prints it: what sampling costs on this node.
pub fn probe_costs(rounds: u32) -> Result<String, NvmlUnavailable> {
    let nvml = Nvml::init().map_err(|e| NvmlUnavailable(e.to_string()))?;
    // A one-shot command: leaking gives devices the 'static borrow the slow reader takes.
    let nvml: &'static Nvml = Box::leak(Box::new(nvml));
    let driver = nvml.sys_driver_version().unwrap_or_default();
    let renumbered = driver_renumbers_fields(&driver);
    let count = nvml
        .device_count()
        .map_err(|e| NvmlUnavailable(e.to_string()))?;
    let mut out = format!(
        "driver {driver}, {count} GPUs, mean of {rounds} calls, µs: wall, then CPU of the \
         calling thread\n"
    );
    let rounds = rounds.max(1);
    for i in 0..count {
        let Ok(d) = nvml.device_by_index(i) else {
            continue;
        };
        // Wall time and this thread's CPU time: a call that waits on the GPU costs wall time
        // but not the node's CPU, and the CPU is what the agent's goal counts.
        let time = |out: &mut String, name: &str, f: &mut dyn FnMut() -> bool| {
            let (t, cpu) = (Instant::now(), crate::agent::cpu::thread_cpu());
            let mut ok = false;
            for _ in 0..rounds {
                ok = f();
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
            let cpu_us = crate::agent::cpu::thread_cpu()
                .saturating_sub(cpu)
                .as_secs_f64()
                * 1e6
                / f64::from(rounds);
            out.push_str(&format!(
                "GPU{i} {name:<32} {us:>10.1} {cpu_us:>8.1} {}\n",
                if ok { "ok" } else { "err/n.a." }
            ));
        };
        time(&mut out, "power_usage", &mut || d.power_usage().is_ok());
        time(&mut out, "temperature", &mut || {
            d.temperature(TemperatureSensor::Gpu).is_ok()
        });
        time(&mut out, "utilization_rates", &mut || {
            d.utilization_rates().is_ok()
        });
        time(&mut out, "clock_info(SM)", &mut || {
            d.clock_info(Clock::SM).is_ok()
        });
        time(&mut out, "clock_info(Memory)", &mut || {
            d.clock_info(Clock::Memory).is_ok()
        });
        time(&mut out, "current_throttle_reasons", &mut || {
            d.current_throttle_reasons().is_ok()
        });
        time(&mut out, "memory_info", &mut || d.memory_info().is_ok());
        time(&mut out, "total_ecc_errors(corrected)", &mut || {
            d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
                .is_ok()
        });
        time(&mut out, "total_ecc_errors(uncorrected)", &mut || {
            d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
                .is_ok()
        });
        time(&mut out, "field POWER_INSTANT", &mut || {
            raw_field_values(&d, renumbered, &[(field_id::NVML_FI_DEV_POWER_INSTANT, 0)])[0]
                .is_some()
        });
        time(&mut out, "fields NVLink tx/rx (all links)", &mut || {
            raw_field_values(
                &d,
                renumbered,
                &[
                    (
                        field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                        SCOPE_ALL_LINKS,
                    ),
                    (
                        field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
                        SCOPE_ALL_LINKS,
                    ),
                ],
            )[0]
            .is_some()
        });
        time(&mut out, "fields NVLink CRC/replay/recovery", &mut || {
            raw_field_values(
                &d,
                renumbered,
                &[
                    (field_id::NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0),
                ],
            )[0]
            .is_some()
        });
        time(&mut out, "field PCIE_REPLAY_COUNTER", &mut || {
            answers(
                &d,
                renumbered,
                &[(field_id::NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0)],
            )
        });
        time(&mut out, "fields ECC SBE+DBE volatile", &mut || {
            raw_field_values(&d, renumbered, &ECC_FIELDS)[0].is_some()
        });
        time(&mut out, "remapped_rows (raw)", &mut || {
            remapped_rows(&d).is_some()
        });
        time(&mut out, "running_compute_processes", &mut || {
            d.running_compute_processes().is_ok()
        });
        let mut process_buf = Vec::new();
        time(&mut out, "compute_pids (one call)", &mut || {
            compute_pids(&d, &mut process_buf).is_some()
        });
        time(&mut out, "nvlink is_active x18", &mut || {
            nvlink_links_active(&d).is_some()
        });
        time(&mut out, "field POWER_AVERAGE", &mut || {
            raw_field_values(&d, renumbered, &[(field_id::NVML_FI_DEV_POWER_AVERAGE, 0)])[0]
                .is_some()
        });
        time(&mut out, "fields POWER_INSTANT+AVERAGE", &mut || {
            raw_field_values(&d, renumbered, &POWER_FIELDS)[1].is_some()
        });
        time(&mut out, "gpm_sample", &mut || d.gpm_sample().is_ok());
        // Is the field fresh? NVML may serve fields from a cache; its timestamp says when the
        // value was taken. Compare with the classic call at the tick path's pace.
        out.push_str(&format!(
            "GPU{i} freshness, 12 reads 100 ms apart: power_usage mW | POWER_AVERAGE mW @ts µs | POWER_INSTANT mW @ts µs\n"
        ));
        for _ in 0..12 {
            let classic = d.power_usage().ok();
            let fields = raw_field_samples(
                &d,
                renumbered,
                &[
                    (field_id::NVML_FI_DEV_POWER_AVERAGE, 0),
                    (field_id::NVML_FI_DEV_POWER_INSTANT, 0),
                ],
            );
            let show = |v: Option<(f64, i64)>| {
                v.map_or("n/a".to_string(), |(value, ts)| format!("{value:.0} @{ts}"))
            };
            out.push_str(&format!(
                "GPU{i}   {} | {} | {}\n",
                classic.map_or("n/a".to_string(), |v| v.to_string()),
                show(fields[0]),
                show(fields[1])
            ));
            std::thread::sleep(Duration::from_millis(100));
        }
        // The process list both ways: the agent's one call must list what nvml-wrapper lists.
        out.push_str(&format!(
            "GPU{i} compute processes: nvml-wrapper {:?}, one call {:?}\n",
            d.running_compute_processes()
                .map(|ps| ps.iter().map(|p| p.pid).collect::<Vec<_>>()),
            compute_pids(&d, &mut Vec::new()),
        ));
        // Both ways of reading volatile ECC, side by side: the agent makes the calls.
        let ecc_fields = raw_field_values(&d, renumbered, &ECC_FIELDS);
        out.push_str(&format!(
            "GPU{i} ECC volatile (corrected, uncorrected): calls {:?}, fields SBE/DBE {:?}\n",
            volatile_ecc(&d),
            ecc_fields
        ));
        // The units NVML gives each GPM metric the agent reads (the rates assume MiB/s).
        if d.gpm_support().unwrap_or(false)
            && let Ok(first) = d.gpm_sample()
        {
            std::thread::sleep(Duration::from_millis(200));
            if let Ok(second) = d.gpm_sample() {
                time(&mut out, "gpm_metrics_get (7 metrics)", &mut || {
                    nvml_wrapper::gpm::gpm_metrics_get(d.nvml(), &first, &second, &GPM_METRICS)
                        .is_ok()
                });
                time(&mut out, "gpm_metrics_get (5, no NVLink)", &mut || {
                    nvml_wrapper::gpm::gpm_metrics_get(
                        d.nvml(),
                        &first,
                        &second,
                        &GPM_METRICS[..GPM_METRICS_WITHOUT_NVLINK],
                    )
                    .is_ok()
                });
                match nvml_wrapper::gpm::gpm_metrics_get(d.nvml(), &first, &second, &GPM_METRICS) {
                    Ok(results) => {
                        for res in results {
                            out.push_str(&format!("GPU{i} GPM {res:?}\n"));
                        }
                    }
                    Err(e) => out.push_str(&format!("GPU{i} GPM metrics: {e}\n")),
                }
            }
        }
        // One whole background round of this GPU, as the agent's thread makes it: 100 ms
        // apart, so caches are as cold as they are between real rounds.
        let has_links = nvlink_link_states(&d).is_some();
        let mut reader = SlowReader::new(
            nvml,
            &[nvml.device_by_index(i).ok()],
            vec![has_links],
            renumbered,
        );
        let (mut cpu, rounds_slow) = (Duration::ZERO, 12u32);
        for round in 0..rounds_slow {
            std::thread::sleep(Duration::from_millis(100));
            let start = crate::agent::cpu::thread_cpu();
            reader.read(0, &d, round);
            // The first round has no previous GPM sample, so it computes no metrics.
            if round > 0 {
                cpu += crate::agent::cpu::thread_cpu().saturating_sub(start);
            }
        }
        out.push_str(&format!(
            "GPU{i} background round, 100 ms apart (CPU, mean of {}): {:.1} µs\n",
            rounds_slow - 1,
            cpu.as_secs_f64() * 1e6 / f64::from(rounds_slow - 1)
        ));
        // The same calls one by one, each after 100 ms asleep: what a call costs when the
        // agent makes it (caches cold), against the back-to-back means above.
        // Wall beside CPU: a call that waits on the GPU's firmware sleeps (wall only), one that
        // polls for it burns CPU.
        let after = |out: &mut String,
                     name: &str,
                     gap: Duration,
                     before: &mut dyn FnMut(),
                     f: &mut dyn FnMut() -> bool| {
            let (mut cpu, mut wall, mut ok, n) = (Duration::ZERO, Duration::ZERO, false, 10u32);
            for _ in 0..n {
                std::thread::sleep(gap);
                before();
                let (t, start) = (Instant::now(), crate::agent::cpu::thread_cpu());
                ok = f();
                cpu += crate::agent::cpu::thread_cpu().saturating_sub(start);
                wall += t.elapsed();
            }
            out.push_str(&format!(
                "GPU{i} {name:<37} {:>8.1} {:>8.1} {}\n",
                wall.as_secs_f64() * 1e6 / f64::from(n),
                cpu.as_secs_f64() * 1e6 / f64::from(n),
                if ok { "ok" } else { "err/n.a." }
            ));
        };
        out.push_str(&format!(
            "GPU{i} each call alone after 100 ms asleep, mean of 10, µs: wall, then CPU\n"
        ));
        let mut cold = |name: &str, f: &mut dyn FnMut() -> bool| {
            after(
                &mut out,
                &format!("cold {name}"),
                Duration::from_millis(100),
                &mut || {},
                f,
            );
        };
        cold("fields POWER_INSTANT+AVERAGE", &mut || {
            raw_field_values(&d, renumbered, &POWER_FIELDS)[1].is_some()
        });
        cold("utilization_rates", &mut || d.utilization_rates().is_ok());
        cold("temperature", &mut || {
            d.temperature(TemperatureSensor::Gpu).is_ok()
        });
        cold("clock_info(SM)", &mut || d.clock_info(Clock::SM).is_ok());
        cold("current_throttle_reasons", &mut || {
            d.current_throttle_reasons().is_ok()
        });
        cold("gpm_sample", &mut || d.gpm_sample().is_ok());
        cold("field PCIE_REPLAY_COUNTER", &mut || {
            answers(
                &d,
                renumbered,
                &[(field_id::NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0)],
            )
        });
        cold("memory_info", &mut || d.memory_info().is_ok());
        cold("clock_info(Memory)", &mut || {
            d.clock_info(Clock::Memory).is_ok()
        });
        cold("total_ecc_errors x2", &mut || volatile_ecc(&d).0.is_some());
        cold("fields ECC SBE+DBE volatile", &mut || {
            answers(&d, renumbered, &ECC_FIELDS)
        });
        cold("remapped_rows (raw)", &mut || remapped_rows(&d).is_some());
        cold("running_compute_processes", &mut || {
            d.running_compute_processes().is_ok()
        });
        let mut process_buf = Vec::new();
        cold("compute_pids (one call)", &mut || {
            compute_pids(&d, &mut process_buf).is_some()
        });
        cold("nothing (the clock reads alone)", &mut || true);
        // What makes a GPM sample expensive after a pause (~260 µs of CPU against ~50 back to
        // back): the thread waking (then any first call pays it, and a round over eight GPUs
        // pays it once), or GPM itself going cold with time (then every GPU of a round pays it,
        // and eight GPUs cost eight times one). The gap rows say how fast it cools; the row
        // after memory_info says whether another call warms it.
        for (name, gap) in [
            ("gpm_sample 1 ms after the last", 1),
            ("gpm_sample 10 ms after the last", 10),
            ("gpm_sample 50 ms after the last", 50),
            ("gpm_sample 500 ms after the last", 500),
        ] {
            after(
                &mut out,
                name,
                Duration::from_millis(gap),
                &mut || {},
                &mut || d.gpm_sample().is_ok(),
            );
        }
        after(
            &mut out,
            "gpm_sample after memory_info, 100 ms",
            Duration::from_millis(100),
            &mut || {
                let _ = d.memory_info();
            },
            &mut || d.gpm_sample().is_ok(),
        );
        after(
            &mut out,
            "memory_info after gpm_sample, 100 ms",
            Duration::from_millis(100),
            &mut || {
                let _ = d.gpm_sample();
            },
            &mut || d.memory_info().is_ok(),
        );
    }
    Ok(out)
}

/// The background thread's reads of one GPU per round, with what they carry between rounds
/// (the previous GPM sample, the PCIe replay counter read every few rounds, how the GPU answers
/// for per-link errors). Apart from the thread so the cost probe can time exactly one round.
struct SlowReader {
    nvml: &'static Nvml,
    renumbered: bool,
    has_links: Vec<bool>,
    gpm_ok: Vec<bool>,
    gpm_prev: Vec<Option<GpmSample<'static>>>,
    /// When each GPU's GPM is read (`gpm_cadence`), and its last readings, carried between.
    gpm_cadence: Vec<GpmCadence>,
    gpm_last: Vec<GpmReadings>,
    /// The cadence's clock.
    started: Instant,
    pcie_replay: Vec<Option<u64>>,
    link_source: Vec<LinkErrorSource>,
    /// Where [`compute_pids`] reads the process list into, kept between rounds.
    process_buf: Vec<nvml_wrapper_sys::bindings::nvmlProcessInfo_t>,
}

impl SlowReader {
    fn new(
        nvml: &'static Nvml,
        devices: &[Option<Device<'static>>],
        has_links: Vec<bool>,
        renumbered: bool,
    ) -> Self {
        let n = devices.len();
        Self {
            nvml,
            renumbered,
            has_links,
            gpm_ok: devices
                .iter()
                .map(|d| d.as_ref().is_some_and(|d| d.gpm_support().unwrap_or(false)))
                .collect(),
            gpm_prev: (0..n).map(|_| None).collect(),
            gpm_cadence: vec![GpmCadence::default(); n],
            gpm_last: vec![GpmReadings::default(); n],
            started: Instant::now(),
            pcie_replay: vec![None; n],
            link_source: vec![LinkErrorSource::Untried; n],
            process_buf: Vec::new(),
        }
    }

    /// Round `round`'s readings of GPU `i`.
    fn read(&mut self, i: usize, d: &Device<'static>, round: u32) -> SlowReadings {
        let renumbered = self.renumbered;
        let has_links = self.has_links.get(i).copied().unwrap_or(false);
        let mut r = SlowReadings::default();
        if self.gpm_ok.get(i).copied().unwrap_or(false) {
            // Whether this GPU is a busy-idle suspect, from the cheap readings (~1 µs each).
            let suspect = gpm_cadence::is_suspect(
                d.utilization_rates().ok().map(|u| f64::from(u.gpu)),
                d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
                d.enforced_power_limit()
                    .ok()
                    .map(|mw| f64::from(mw) / 1000.0),
                self.gpm_last[i].sm_active_pct.map(f64::from),
            );
            let decision = self.gpm_cadence[i].decide(self.started.elapsed(), suspect, SLOW_PERIOD);
            if decision == GpmRead::Prime {
                // The previous sample is seconds old: a fresh one, and the reading over the
                // next moment only.
                self.gpm_prev[i] = d.gpm_sample().ok();
                std::thread::sleep(GPM_PRIME_GAP);
            }
            if decision != GpmRead::Carry
                && let Ok(sample) = d.gpm_sample()
            {
                if let Some(prev) = &self.gpm_prev[i] {
                    // NVLink GPM rates are asked only of GPUs that have links.
                    let metrics: &[GpmMetricId] = if has_links {
                        &GPM_METRICS
                    } else {
                        &GPM_METRICS[..GPM_METRICS_WITHOUT_NVLINK]
                    };
                    read_gpm(self.nvml, prev, &sample, metrics, &mut r);
                    self.gpm_last[i] = GpmReadings::of(&r);
                }
                self.gpm_prev[i] = Some(sample);
            } else {
                self.gpm_last[i].put(&mut r);
            }
        }
        if round.is_multiple_of(PCIE_REPLAY_EVERY) {
            let fields = raw_field_values(
                d,
                renumbered,
                &[(field_id::NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0)],
            );
            self.pcie_replay[i] = fields.first().copied().flatten().map(|v| v as u64);
        }
        r.pcie_replay_count = self.pcie_replay[i];
        if has_links {
            r.nvlink_link_up = nvlink_link_states(d);
            r.nvlink_links_active = r
                .nvlink_link_up
                .as_ref()
                .map(|s| s.iter().filter(|up| **up).count() as u32);
            let errs = raw_field_values(
                d,
                renumbered,
                &[
                    (field_id::NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0),
                ],
            );
            for (k, v) in errs.into_iter().take(3).enumerate() {
                r.nvlink_errors[k] = v.map(|v| v as u64);
            }
            // Which links the errors are on: asked when a total shows errors, and every round
            // where the totals are not answered at all (a driver that keeps only per-link
            // counters), whose sums then stand in for the totals.
            let totals_known = r.nvlink_errors.iter().any(Option::is_some);
            if !totals_known || r.nvlink_errors.iter().flatten().any(|v| *v > 0) {
                let links = r.nvlink_link_up.as_ref().map_or(0, Vec::len);
                r.nvlink_link_errors =
                    link_errors(d, renumbered, links as u32, &mut self.link_source[i]);
                if !totals_known
                    && matches!(
                        self.link_source[i],
                        LinkErrorSource::Fields | LinkErrorSource::Calls
                    )
                {
                    r.nvlink_errors = link_totals(&r.nvlink_link_errors);
                }
            }
        }
        r.memory = d.memory_info().ok().map(|m| (m.used, m.total));
        r.mem_clock_mhz = d.clock_info(Clock::Memory).ok();
        r.ecc = volatile_ecc(d);
        r.remapped = remapped_rows(d);
        r.compute_pids = compute_pids(d, &mut self.process_buf);
        r
    }
}

/// Volatile ECC totals, corrected and uncorrected, through `nvmlDeviceGetTotalEccErrors`. The
/// two fields `ECC_SBE_VOL_TOTAL`/`ECC_DBE_VOL_TOTAL` would answer both in one call (~1 µs
/// against ~12), but "single/double bit" is not documented to equal "corrected/uncorrected" on
/// every generation, and the H200 could only show both at zero: an ECC count is an acceptance
/// verdict, so the agent keeps the documented call. `--probe-costs` prints both, side by side.
fn volatile_ecc(d: &Device<'_>) -> (Option<u64>, Option<u64>) {
    (
        d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .ok(),
        d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
            .ok(),
    )
}

/// PIDs of the compute processes on a GPU, in one `nvmlDeviceGetComputeRunningProcesses_v3`
/// call into `buf`, which the caller keeps between rounds. nvml-wrapper's
/// `running_compute_processes` asks for the count first and then for the list: two calls
/// whenever a process runs, which is all through a burn-in: after the thread slept, with a
/// GEMM's process listed, the two cost ~170 µs of CPU and this one call ~141 µs
/// (`--probe-costs` on the H200). The buffer grows when NVML says it is too small; `None` when
/// NVML cannot say.
fn compute_pids(
    d: &Device<'_>,
    buf: &mut Vec<nvml_wrapper_sys::bindings::nvmlProcessInfo_t>,
) -> Option<Vec<u32>> {
    let get = d
        .nvml()
        .lib()
        .nvmlDeviceGetComputeRunningProcesses_v3
        .as_ref()
        .ok()?;
    process_list(buf, |count, infos| {
        // SAFETY: `infos` holds `*count` initialised entries; NVML writes at most that many
        // and sets `*count` to how many it wrote (or, when too small, how many there are).
        unsafe { get(d.handle(), count, infos.as_mut_ptr()) }
    })
}

/// The buffer handling of [`compute_pids`], apart from NVML so a test can play NVML's part:
/// `call` fills the slice and sets the count, or answers "insufficient size" with the count
/// it needs; the buffer then grows and the call is made once more (processes may start in
/// between, so a second "too small" gives up rather than loop).
fn process_list(
    buf: &mut Vec<nvml_wrapper_sys::bindings::nvmlProcessInfo_t>,
    mut call: impl FnMut(&mut u32, &mut [nvml_wrapper_sys::bindings::nvmlProcessInfo_t]) -> u32,
) -> Option<Vec<u32>> {
    use nvml_wrapper_sys::bindings::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE as TOO_SMALL;
    // SAFETY: nvmlProcessInfo_t is plain C data; all-zero is a valid empty entry.
    let empty: nvml_wrapper_sys::bindings::nvmlProcessInfo_t = unsafe { std::mem::zeroed() };
    if buf.is_empty() {
        buf.resize(16, empty);
    }
    for _ in 0..2 {
        let mut count = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        match call(&mut count, buf.as_mut_slice()) {
            0 => {
                let n = (count as usize).min(buf.len());
                return Some(buf[..n].iter().map(|p| p.pid).collect());
            }
            TOO_SMALL => buf.resize((count as usize).saturating_add(8).min(4096), empty),
            _ => return None,
        }
    }
    None
}

/// The GPM metrics the agent reads (the cost probe prints their units).
const GPM_METRICS: [GpmMetricId; 7] = [
    GpmMetricId::SmUtil,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::PcieTxPerSec,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::NvlinkTotalTxPerSec,
    GpmMetricId::NvlinkTotalRxPerSec,
];

/// How many of [`GPM_METRICS`] come before the NVLink ones.
const GPM_METRICS_WITHOUT_NVLINK: usize = 5;

/// GPM rates between two samples. PCIe and NVLink GPM rates are in MiB/s (NVML's unit string
/// says so; the agent logs it once).
fn read_gpm(
    nvml: &'static Nvml,
    prev: &GpmSample<'static>,
    cur: &GpmSample<'static>,
    metrics: &[GpmMetricId],
    r: &mut SlowReadings,
) {
    let Ok(results) = nvml_wrapper::gpm::gpm_metrics_get(nvml, prev, cur, metrics) else {
        return;
    };
    const MIB: f64 = 1024.0 * 1024.0;
    static UNITS_LOGGED: std::sync::Once = std::sync::Once::new();
    for res in results.into_iter().flatten() {
        UNITS_LOGGED.call_once(|| {
            tracing::info!(
                "GPM metric units as NVML reports them (first metric): {:?} = {:?}",
                res.metric_id,
                res.metric_info.unit
            );
        });
        if matches!(
            res.metric_id,
            GpmMetricId::PcieTxPerSec | GpmMetricId::NvlinkTotalTxPerSec
        ) {
            tracing::debug!("GPM {:?} unit {:?}", res.metric_id, res.metric_info.unit);
        }
        let v = res.value;
        if !v.is_finite() {
            continue;
        }
        match res.metric_id {
            GpmMetricId::SmUtil => r.sm_active_pct = Some(v as f32),
            GpmMetricId::AnyTensorUtil => r.tensor_active_pct = Some(v as f32),
            GpmMetricId::DramBwUtil => r.dram_active_pct = Some(v as f32),
            GpmMetricId::PcieTxPerSec => r.pcie_tx_bytes_per_sec = Some(v * MIB),
            GpmMetricId::PcieRxPerSec => r.pcie_rx_bytes_per_sec = Some(v * MIB),
            GpmMetricId::NvlinkTotalTxPerSec => r.gpm_nvlink_tx_bytes_per_sec = Some(v * MIB),
            GpmMetricId::NvlinkTotalRxPerSec => r.gpm_nvlink_rx_bytes_per_sec = Some(v * MIB),
            _ => {}
        }
    }
}

/// Up/down of each NVLink link NVML knows (18 on Hopper and Blackwell, NVML_NVLINK_MAX_LINKS);
/// `None` when the GPU has no NVLink (every link NotSupported).
fn nvlink_link_states(d: &Device<'_>) -> Option<Vec<bool>> {
    let mut states = Vec::new();
    let mut any = false;
    for link in 0..18 {
        if let Ok(up) = d.link_wrapper_for(link).is_active() {
            any = true;
            states.resize(link as usize, false);
            states.push(up);
        }
    }
    any.then_some(states)
}

/// CRC, replay and recovery totals over the links (the links left out had none).
fn link_totals(links: &[crate::model::NvlinkLinkErrors]) -> [Option<u64>; 3] {
    let sum = |f: fn(&crate::model::NvlinkLinkErrors) -> u64| Some(links.iter().map(f).sum());
    [sum(|l| l.crc), sum(|l| l.replay), sum(|l| l.recovery)]
}

/// How a GPU answers for its links' error counters, learnt on the first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkErrorSource {
    /// Not asked yet.
    Untried,
    /// One field-values call, the DL error fields scoped to each link.
    Fields,
    /// `nvmlDeviceGetNvLinkErrorCounter`, a call per link and counter.
    Calls,
    /// Neither answers: totals only.
    Unavailable,
}

/// Each link's CRC, replay and recovery counters, links with none left out. Unproven on real
/// NVLink so far (the one-GPU H200 has none; issue 8's machine will tell): the scoped fields
/// are tried first, then the classic per-link call.
fn link_errors(
    d: &Device<'_>,
    renumbered: bool,
    links: u32,
    source: &mut LinkErrorSource,
) -> Vec<crate::model::NvlinkLinkErrors> {
    use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
    let mut out = Vec::new();
    if matches!(*source, LinkErrorSource::Untried | LinkErrorSource::Fields) {
        let ids: Vec<(u32, u32)> = (0..links)
            .flat_map(|l| {
                [
                    (field_id::NVML_FI_DEV_NVLINK_ERROR_DL_CRC, l),
                    (field_id::NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, l),
                    (field_id::NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, l),
                ]
            })
            .collect();
        let values = raw_field_values(d, renumbered, &ids);
        if values.iter().any(Option::is_some) {
            *source = LinkErrorSource::Fields;
            for (l, v) in values.chunks(3).enumerate() {
                let c = |k: usize| v.get(k).copied().flatten().map_or(0, |x| x as u64);
                out.push(crate::model::NvlinkLinkErrors {
                    link: l as u32,
                    crc: c(0),
                    replay: c(1),
                    recovery: c(2),
                });
            }
        } else if *source == LinkErrorSource::Untried {
            *source = LinkErrorSource::Calls;
        }
    }
    if *source == LinkErrorSource::Calls {
        let mut any = false;
        for l in 0..links {
            let w = d.link_wrapper_for(l);
            let mut c =
                |k: ErrorCounter| w.error_counter(k).ok().inspect(|_| any = true).unwrap_or(0);
            out.push(crate::model::NvlinkLinkErrors {
                link: l,
                crc: c(ErrorCounter::DlCrcData),
                replay: c(ErrorCounter::DlReplay),
                recovery: c(ErrorCounter::DlRecovery),
            });
        }
        if !any {
            *source = LinkErrorSource::Unavailable;
        }
    }
    out.retain(|e| e.crc + e.replay + e.recovery > 0);
    out
}

fn nvlink_links_active(d: &Device<'_>) -> Option<u32> {
    nvlink_link_states(d).map(|s| s.iter().filter(|up| **up).count() as u32)
}

fn remapped_rows(d: &Device<'_>) -> Option<(u32, u32, bool, bool)> {
    // SAFETY: the handle is valid for the life of `d`; the out-pointers are to locals.
    unsafe {
        let sym = d.nvml().lib().nvmlDeviceGetRemappedRows.as_ref().ok()?;
        let (mut corr, mut unc, mut pending, mut failure) = (0u32, 0u32, 0u32, 0u32);
        let ret = sym(d.handle(), &mut corr, &mut unc, &mut pending, &mut failure);
        (ret == 0).then_some((corr, unc, pending != 0, failure != 0))
    }
}

/// Whether a field-values call answered any of `ids` (the cost probe's success column).
fn answers(d: &Device<'_>, renumbered: bool, ids: &[(u32, u32)]) -> bool {
    raw_field_values(d, renumbered, ids)
        .iter()
        .any(Option::is_some)
}

/// One `nvmlDeviceGetFieldValues` call with explicit scope IDs (nvml-wrapper's
/// `field_values_for` cannot set `scopeId`, which NVLink throughput needs). Each value is `None`
/// when NVML returned an error for it (NotSupported on GPUs without NVLink).
fn raw_field_values(d: &Device<'_>, renumbered: bool, ids: &[(u32, u32)]) -> Vec<Option<f64>> {
    raw_field_samples(d, renumbered, ids)
        .into_iter()
        .map(|v| v.map(|(value, _)| value))
        .collect()
}

/// Like [`raw_field_values`], with the CPU timestamp (µs) NVML took each value at: how the
/// cost probe tells a fresh reading from a cached one.
fn raw_field_samples(
    d: &Device<'_>,
    renumbered: bool,
    ids: &[(u32, u32)],
) -> Vec<Option<(f64, i64)>> {
    use nvml_wrapper_sys::bindings::nvmlFieldValue_t;
    let Ok(sym) = d.nvml().lib().nvmlDeviceGetFieldValues.as_ref() else {
        return vec![None; ids.len()];
    };
    // SAFETY: nvmlFieldValue_t is plain C data; zeroed is a valid "empty request".
    let mut values: Vec<nvmlFieldValue_t> = ids
        .iter()
        .map(|&(id, scope)| {
            // SAFETY: nvmlFieldValue_t is a plain C struct (integers and a union of numbers), for
            // which all-zero bytes are a valid value.
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = translate_field_id(renumbered, id);
            v.scopeId = scope;
            v
        })
        .collect();
    // SAFETY: `values` holds `len` initialised entries; the device handle is valid.
    let ret = unsafe { sym(d.handle(), values.len() as i32, values.as_mut_ptr()) };
    if ret != 0 {
        return vec![None; ids.len()];
    }
    values
        .iter()
        .map(|v| {
            if v.nvmlReturn != 0 {
                return None;
            }
            // SAFETY: valueType says which union member NVML wrote.
            let value = unsafe {
                match v.valueType {
                    0 => v.value.dVal,
                    1 => f64::from(v.value.uiVal),
                    2 => v.value.ulVal as f64,
                    3 => v.value.ullVal as f64,
                    4 => v.value.sllVal as f64,
                    5 => f64::from(v.value.siVal),
                    6 => f64::from(v.value.usVal),
                    _ => return None,
                }
            };
            Some((value, v.timestamp))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_sums_stand_in_for_missing_totals() {
        use crate::model::NvlinkLinkErrors;
        let links = [
            NvlinkLinkErrors {
                link: 3,
                crc: 5,
                replay: 1,
                recovery: 0,
            },
            NvlinkLinkErrors {
                link: 9,
                crc: 2,
                replay: 0,
                recovery: 4,
            },
        ];
        assert_eq!(link_totals(&links), [Some(7), Some(1), Some(4)]);
        assert_eq!(link_totals(&[]), [Some(0), Some(0), Some(0)]);
    }

    #[test]
    fn renumbering_follows_the_driver() {
        assert!(driver_renumbers_fields("580.159.04"));
        assert!(driver_renumbers_fields("580.82.07"));
        assert!(!driver_renumbers_fields("580.65.06"));
        assert!(!driver_renumbers_fields("570.133.20"));
        assert!(!driver_renumbers_fields("garbage"));
        assert_eq!(translate_field_id(true, 251), 269);
        assert_eq!(translate_field_id(true, 273), 268);
        assert_eq!(translate_field_id(true, 138), 138);
        assert_eq!(translate_field_id(false, 251), 251);
    }

    #[test]
    fn without_a_driver_open_says_why() {
        // The development and CI machines have no NVIDIA driver: NVML must fail cleanly.
        if std::path::Path::new("/proc/driver/nvidia/version").exists() {
            return;
        }
        let err = NvmlSampler::open()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("NVML: "), "{err}");
    }

    /// NVML's part played by hand: the list fits; it does not fit and then does; it grows
    /// again between the two calls (give up, do not loop); an error is `None`.
    #[test]
    fn process_list_grows_its_buffer_once() {
        use nvml_wrapper_sys::bindings::nvmlProcessInfo_t;
        let running = |pids: Vec<u32>| {
            move |count: &mut u32, infos: &mut [nvmlProcessInfo_t]| -> u32 {
                if (*count as usize) < pids.len() {
                    *count = pids.len() as u32;
                    return 7;
                }
                for (slot, pid) in infos.iter_mut().zip(&pids) {
                    slot.pid = *pid;
                }
                *count = pids.len() as u32;
                0
            }
        };
        let mut buf = Vec::new();
        assert_eq!(process_list(&mut buf, running(vec![])), Some(vec![]));
        assert_eq!(
            process_list(&mut buf, running(vec![660, 661])),
            Some(vec![660, 661])
        );
        let many: Vec<u32> = (1000..1040).collect();
        assert_eq!(process_list(&mut buf, running(many.clone())), Some(many));
        assert!(buf.len() >= 40, "the buffer stays grown: {}", buf.len());
        let mut calls = 0u32;
        let growing = |count: &mut u32, _: &mut [nvmlProcessInfo_t]| -> u32 {
            calls += 1;
            *count += 1;
            7
        };
        assert_eq!(process_list(&mut Vec::new(), growing), None);
        assert_eq!(calls, 2);
        assert_eq!(process_list(&mut buf, |_: &mut u32, _: &mut [_]| 999), None);
    }

    #[test]
    fn slots_read_the_gpus_round_robin() {
        assert_eq!(slot_gpus(1, 8), vec![0; 8]);
        assert_eq!(slot_gpus(2, 5), vec![0, 1, 0, 1, 0]);
        // Never fewer slots than GPUs: every GPU is read.
        assert_eq!(slot_gpus(4, 2), vec![0, 1, 2, 3]);
        assert_eq!(slot_gpus(8, 8), (0..8).collect::<Vec<u32>>());
        assert!(slot_gpus(0, 8).is_empty());
    }
}
