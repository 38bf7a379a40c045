//! NVML calls beyond nvml-wrapper's: batched field values with their timestamps, the
//! one-call process list, GPM metrics, NVLink link states and error counters, remapped rows.

use super::{SlowReadings, translate_field_id};
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::sys_exports::field_id;
use nvml_wrapper::{Device, GpmSample, Nvml};

/// Volatile ECC totals, corrected and uncorrected, through `nvmlDeviceGetTotalEccErrors`. The
/// two fields `ECC_SBE_VOL_TOTAL`/`ECC_DBE_VOL_TOTAL` would answer both in one call (~1 µs
/// against ~12), but "single/double bit" is not documented to equal "corrected/uncorrected" on
/// every generation, and the H200 could only show both at zero: an ECC count is an acceptance
/// verdict, so the agent keeps the documented call. `--probe-costs` prints both, side by side.
pub(super) fn volatile_ecc(d: &Device<'_>) -> (Option<u64>, Option<u64>) {
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
pub(super) fn compute_pids(
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
pub(super) fn process_list(
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
pub(super) const GPM_METRICS: [GpmMetricId; 7] = [
    GpmMetricId::SmUtil,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::PcieTxPerSec,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::NvlinkTotalTxPerSec,
    GpmMetricId::NvlinkTotalRxPerSec,
];

/// How many of [`GPM_METRICS`] come before the NVLink ones.
pub(super) const GPM_METRICS_WITHOUT_NVLINK: usize = 5;

/// GPM rates between two samples. PCIe and NVLink GPM rates are in MiB/s (NVML's unit string
/// says so; the agent logs it once).
pub(super) fn read_gpm(
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
pub(super) fn nvlink_link_states(d: &Device<'_>) -> Option<Vec<bool>> {
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
pub(super) fn link_totals(links: &[crate::model::NvlinkLinkErrors]) -> [Option<u64>; 3] {
    let sum = |f: fn(&crate::model::NvlinkLinkErrors) -> u64| Some(links.iter().map(f).sum());
    [sum(|l| l.crc), sum(|l| l.replay), sum(|l| l.recovery)]
}

/// How a GPU answers for its links' error counters, learnt on the first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkErrorSource {
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
pub(super) fn link_errors(
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

pub(super) fn nvlink_links_active(d: &Device<'_>) -> Option<u32> {
    nvlink_link_states(d).map(|s| s.iter().filter(|up| **up).count() as u32)
}

pub(super) fn remapped_rows(d: &Device<'_>) -> Option<(u32, u32, bool, bool)> {
    // SAFETY: the handle is valid for the life of `d`; the out-pointers are to locals.
    unsafe {
        let sym = d.nvml().lib().nvmlDeviceGetRemappedRows.as_ref().ok()?;
        let (mut corr, mut unc, mut pending, mut failure) = (0u32, 0u32, 0u32, 0u32);
        let ret = sym(d.handle(), &mut corr, &mut unc, &mut pending, &mut failure);
        (ret == 0).then_some((corr, unc, pending != 0, failure != 0))
    }
}

/// Whether a field-values call answered any of `ids` (the cost probe's success column).
pub(super) fn answers(d: &Device<'_>, renumbered: bool, ids: &[(u32, u32)]) -> bool {
    raw_field_values(d, renumbered, ids)
        .iter()
        .any(Option::is_some)
}

/// One `nvmlDeviceGetFieldValues` call with explicit scope IDs (nvml-wrapper's
/// `field_values_for` cannot set `scopeId`, which NVLink throughput needs). Each value is `None`
/// when NVML returned an error for it (NotSupported on GPUs without NVLink).
pub(super) fn raw_field_values(
    d: &Device<'_>,
    renumbered: bool,
    ids: &[(u32, u32)],
) -> Vec<Option<f64>> {
    raw_field_samples(d, renumbered, ids)
        .into_iter()
        .map(|v| v.map(|(value, _)| value))
        .collect()
}

/// Like [`raw_field_values`], with the CPU timestamp (µs) NVML took each value at: how the
/// cost probe tells a fresh reading from a cached one.
pub(super) fn raw_field_samples(
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
}
