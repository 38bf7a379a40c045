//! The background thread's reads: GPM metrics, the PCIe replay counter, remapped rows,
//! processes and NVLink link state, one GPU per turn, off the per-tick path.

use std::time::Instant;

use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::sys_exports::field_id;
use nvml_wrapper::{Device, GpmSample, Nvml};

use super::calls::{
    GPM_METRICS, GPM_METRICS_WITHOUT_NVLINK, LinkErrorSource, compute_pids, link_errors,
    link_totals, nvlink_link_states, raw_field_values, read_gpm, remapped_rows, volatile_ecc,
};
use super::{GPM_PRIME_GAP, GpmReadings, PCIE_REPLAY_EVERY, SLOW_PERIOD, SlowReadings};
use crate::agent::gpm_cadence::{self, GpmCadence, GpmRead};

/// The background thread's reads of one GPU per round, with what they carry between rounds
/// (the previous GPM sample, the PCIe replay counter read every few rounds, how the GPU answers
/// for per-link errors). Apart from the thread so the cost probe can time exactly one round.
pub(super) struct SlowReader {
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
    pub(super) fn new(
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
    pub(super) fn read(&mut self, i: usize, d: &Device<'static>, round: u32) -> SlowReadings {
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
