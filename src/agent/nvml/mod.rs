//! Local GPUs through NVML (nvml-wrapper, loaded at run time: the binary runs on machines without
//! a driver and says so). Reads are split by cost, as measured on an H200 (shared/fixtures/h200):
//! the per-tick path makes only ~1 µs calls plus one batched field-value call; GPM metrics
//! (~2 ms), the PCIe replay counter, remapped rows, processes and NVLink link state are read by a
//! background thread; Xid events come from an NVML event set on a thread of their own.
//! `NotSupported` (and any per-reading failure) is `None`, never an error.

mod calls;
mod costs;
mod slow;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::sys_exports::field_id;
use nvml_wrapper::{Device, Nvml};

use crate::model::{GpuInfo, GpuSample, NodeFrame, NodeHello, UnixMillis, XidEvent};

use calls::{nvlink_link_states, raw_field_values};
pub use costs::probe_costs;
use slow::SlowReader;

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

#[cfg(test)]
mod tests {
    use super::*;

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
