//! A hung GPU: a kernel spinning on a few SMs (a collective waiting for a peer that never
//! comes) reads as loaded by NVML's utilization, which counts any resident kernel. Two signs tell
//! it from work: GPM's SM activity near zero (the precise one, where GPM reads true), and —
//! needing no GPM — scitix/sichek's rule: loaded, power under the model's floor, clocks high and
//! PCIe quiet, held for a minute and seen five times in a row. The finding is critical when GPM
//! reads plausibly and says so, or when both signs agree; the power sign alone warns (nothing
//! confirms it where GPM cannot be read, and a low-power kernel may look the same).

use super::{Ctx, Severity};
use crate::model::thresholds::{
    HANG_DETECTIONS, HANG_PCIE_BYTES_PER_SEC, HANG_POWER_DEFAULT_W, HANG_SM_CLOCK_DEFAULT_MHZ,
    HANG_UTIL_PCT, HANG_WINDOW_MS, samples_in,
};
use crate::store::{GpuView, NodeView};

/// The busy-idle finding's level and words, when either sign holds.
pub(super) fn busy_idle(node: &NodeView, gpu: &GpuView, ctx: &Ctx) -> Option<(Severity, String)> {
    let gpm = gpm_sign(node, gpu, ctx);
    let power = power_sign(gpu, ctx);
    match (gpm, power) {
        (Some(g), Some(p)) => Some((Severity::Crit, format!("{g}; and without GPM: {p}"))),
        (Some(g), None) => Some((Severity::Crit, g)),
        (None, Some(p)) => match gpm_mean(gpu, ctx) {
            // GPM read plausibly over most of the window says the SMs work: a low-power
            // kernel, not a hang.
            Some(sm) if sm >= ctx.thresholds.busy_idle_sm_pct => None,
            // GPM says the SMs idle (with a gap its own sign would not pass): both agree.
            Some(sm) => Some((
                Severity::Crit,
                format!("{p}; GPM agrees: SM activity {sm:.1} %"),
            )),
            None => Some((
                Severity::Warn,
                format!("{p} (no plausible GPM reading to confirm it: a warning until one does)"),
            )),
        },
        (None, None) => None,
    }
}

/// GPM's mean SM activity over the newest window, where it was read (and believed) in four
/// of five of its slots; `None` otherwise.
fn gpm_mean(gpu: &GpuView, ctx: &Ctx) -> Option<f64> {
    if gpu.gpm_implausible.is_some() {
        return None;
    }
    let n = ctx.stall_samples;
    let sm: Vec<f64> = gpu.sm_active_pct.tail(n).flatten().collect();
    (sm.len() * 5 >= n * 4 && !sm.is_empty()).then(|| sm.iter().sum::<f64>() / sm.len() as f64)
}

/// The power and clock the sign holds a model to: its own where the spec table has them (sichek
/// gives H100 and H200 theirs), sichek's default otherwise; and where they come from.
fn model_floors(gpu: &GpuView) -> (f64, f64, String) {
    let spec = crate::model::spec::HardwareSpec::shipped();
    let model = gpu.info.as_ref().and_then(|i| spec.gpu_by_name(&i.name));
    let own = |name: &str| model.and_then(|m| m.figure(name)).map(|f| f.value);
    match (
        model,
        own("hang_power_below_w"),
        own("hang_sm_clock_above_mhz"),
    ) {
        (Some(m), Some(w), Some(mhz)) => (w, mhz, format!("{}'s", m.model)),
        (Some(m), _, _) => (
            HANG_POWER_DEFAULT_W,
            HANG_SM_CLOCK_DEFAULT_MHZ,
            format!("sichek's default (no {} figure)", m.model),
        ),
        (None, _, _) => (
            HANG_POWER_DEFAULT_W,
            HANG_SM_CLOCK_DEFAULT_MHZ,
            "sichek's default (model not known)".into(),
        ),
    }
}

/// The sign that needs no GPM, over the newest `HANG_WINDOW_MS` (at a sample period so short
/// that the window outgrows every store's history, over the history's length), judged whole
/// at every evaluation: one reading that breaks the pattern clears it for a window (no hold on
/// a few samples, which could let it fire on less than the rule's window).
fn power_sign(gpu: &GpuView, ctx: &Ctx) -> Option<String> {
    let n = samples_in(HANG_WINDOW_MS, ctx.period_ms)
        .clamp(HANG_DETECTIONS, crate::store::HISTORY_SLOTS);
    power_sign_over(gpu, ctx, n)
}

fn power_sign_over(gpu: &GpuView, ctx: &Ctx, n: usize) -> Option<String> {
    let (watts_below, clock_above, whose) = model_floors(gpu);
    let util: Vec<f64> = gpu.util_pct.tail(n).flatten().collect();
    let power: Vec<f64> = gpu.power_watts.tail(n).flatten().collect();
    let clock: Vec<f64> = gpu.sm_clock_mhz.tail(n).flatten().collect();
    let tx: Vec<f64> = gpu.pcie_tx.tail(n).flatten().collect();
    let rx: Vec<f64> = gpu.pcie_rx.tail(n).flatten().collect();
    // Every reading the rule names, over the whole window (a history as long as it, four in
    // five of its slots read, sichek's five detections at the least): a sign with a reading
    // missing is no sign, and a stream younger than the window has not held it yet.
    let need = (n * 4).div_ceil(5).max(HANG_DETECTIONS.min(n));
    let spans = [
        &gpu.util_pct,
        &gpu.power_watts,
        &gpu.sm_clock_mhz,
        &gpu.pcie_tx,
        &gpu.pcie_rx,
    ]
    .iter()
    .all(|h| h.len() >= n);
    if !spans
        || [&util, &power, &clock, &tx, &rx]
            .iter()
            .any(|v| v.len() < need)
    {
        return None;
    }
    let holds = util.iter().all(|u| *u >= HANG_UTIL_PCT)
        // A loaded GPU reading 0 W is no reading (NVML's answer when it has none), never a sign.
        && power.iter().all(|w| *w > 0.0 && *w < watts_below)
        && clock.iter().all(|c| *c >= clock_above)
        && tx.iter().chain(&rx).all(|b| *b <= HANG_PCIE_BYTES_PER_SEC);
    // A power cap would explain low power with busy SMs: sichek's `pviol` at most 5 %.
    let capped = gpu
        .latest
        .as_ref()
        .and_then(|s| s.clock_event_reasons)
        .is_some_and(|r| r & crate::model::clock_events::SW_POWER_CAP != 0);
    if !holds || capped {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let most = |v: &[f64]| v.iter().copied().fold(0.0_f64, f64::max);
    Some(format!(
        "util {:.0} % at {:.0} W (under {whose} {watts_below:.0} W) with the SM clock at {:.0} MHz and PCIe at most {:.1} MB/s for {} s: loaded, yet drawing no work (a hung kernel?)",
        mean(&util),
        mean(&power),
        mean(&clock),
        most(&tx).max(most(&rx)) / 1e6,
        ctx.window_secs(n)
    ))
}

/// Busy but idle: utilization reads loaded while GPM says almost no SM is active, for the whole
/// window. NVML's utilization counts time with any kernel resident, so one kernel spinning on a
/// handful of SMs (a collective waiting for a peer that never comes) reads 100 %.
fn gpm_sign(node: &NodeView, gpu: &GpuView, ctx: &Ctx) -> Option<String> {
    super::gpu::windowed(ctx, "busy-idle", node, gpu, |n| busy_idle_over(gpu, ctx, n))
}

fn busy_idle_over(gpu: &GpuView, ctx: &Ctx, n: usize) -> Option<String> {
    let t = &ctx.thresholds;
    let util: Vec<f64> = gpu.util_pct.tail(n).flatten().collect();
    let sm: Vec<f64> = gpu.sm_active_pct.tail(n).flatten().collect();
    let power: Vec<f64> = gpu.power_watts.tail(n).flatten().collect();
    if util.len() < n || sm.len() < n {
        return None;
    }
    let busy = util.iter().all(|u| *u >= t.loaded_util_pct);
    let idle = sm.iter().all(|s| *s < t.busy_idle_sm_pct);
    if !(busy && idle) {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // The power must agree: a kernel spinning on a few SMs draws little. Without a power
    // reading and a limit, or with the GPU near its limit, GPM's word alone is no evidence.
    let limit = f64::from(gpu.power_limit_watts()?);
    if power.len() < n || limit <= 0.0 || mean(&power) >= t.busy_idle_power_pct / 100.0 * limit {
        return None;
    }
    Some(format!(
        "util {:.0} % but SM activity {:.1} % at {:.0} W of {:.0} for {} s: a kernel spins on a few SMs (a hung collective?)",
        mean(&util),
        mean(&sm),
        mean(&power),
        limit,
        ctx.window_secs(n)
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Finding, Severity};
    use crate::model::{GpuInfo, GpuSample, NodeHello, SourceEvent};

    /// Eight H200s over `secs` seconds, GPU 1 edited by `gpu1` each second; the findings after
    /// the last second. The other GPUs work (a GEMM near their limit, PCIe busy).
    fn judge(secs: u64, gpu1: impl Fn(u64, &mut GpuSample)) -> Vec<Finding> {
        let hello = SourceEvent::Hello(NodeHello {
            node: "n1".into(),
            host: "n1".into(),
            agent_version: "test".into(),
            driver: None,
            cuda: None,
            gpus: (0..8)
                .map(|i| GpuInfo {
                    index: i,
                    name: "NVIDIA H200".into(),
                    uuid: format!("GPU-{i}"),
                    power_limit_watts: Some(700.0),
                    sm_clock_max_mhz: Some(1980),
                    memory_total_bytes: None,
                    nvlink_links: Some(18),
                    identity: Default::default(),
                })
                .collect(),
            topology: None,
            system: None,
            unavailable: Vec::new(),
        });
        super::super::tests::kit::judged_each_second(secs, vec![hello], |s, g| {
            let mut x = GpuSample {
                index: g,
                power_avg_watts: Some(690.0),
                power_limit_watts: Some(700.0),
                sm_clock_mhz: Some(1600),
                sm_clock_max_mhz: Some(1980),
                utilization_pct: Some(100.0),
                pcie_tx_bytes_per_sec: Some(2e9),
                pcie_rx_bytes_per_sec: Some(2e9),
                clock_event_reasons: Some(crate::model::clock_events::SW_POWER_CAP),
                ..GpuSample::default()
            };
            if g == 1 {
                gpu1(s, &mut x);
            }
            x
        })
    }

    /// sichek's pattern on an H200: loaded, 120 W (its floor 160), the clock high, PCIe quiet,
    /// no power cap.
    fn spinning(_: u64, s: &mut GpuSample) {
        s.utilization_pct = Some(100.0);
        s.power_avg_watts = Some(120.0);
        s.sm_clock_mhz = Some(1980);
        s.pcie_tx_bytes_per_sec = Some(40e6);
        s.pcie_rx_bytes_per_sec = Some(35e6);
        s.clock_event_reasons = Some(0);
    }

    fn busy_idle(f: &[Finding]) -> Option<&Finding> {
        f.iter().find(|x| x.rule == "busy-idle" && x.gpu == Some(1))
    }

    /// Held 110 s without GPM: the power sign warns, with the model's own floor and its words.
    /// Held 80 s (under sichek's minute and four re-checks): nothing yet.
    #[test]
    fn the_power_sign_alone_warns_once_held_long_enough() {
        let f = judge(110, spinning);
        let b = busy_idle(&f).expect("busy-idle");
        assert_eq!(b.severity, Severity::Warn, "{b:?}");
        assert!(
            b.why.starts_with("util 100 % at 120 W (under H200's 160 W) with the SM clock at 1980 MHz and PCIe at most 40.0 MB/s for 100 s"),
            "{}",
            b.why
        );
        assert!(
            b.why.contains("no plausible GPM reading to confirm it"),
            "{}",
            b.why
        );
        assert!(busy_idle(&judge(80, spinning)).is_none());
    }

    /// One sample inside the window that breaks the pattern (a burst of work at 400 W) and the
    /// sign does not fire; a hundred seconds after it, it does.
    #[test]
    fn a_stream_that_breaks_the_pattern_once_is_no_hang() {
        let once = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            if t == 60 {
                s.power_avg_watts = Some(400.0);
            }
        };
        assert!(busy_idle(&judge(110, once)).is_none());
        assert!(busy_idle(&judge(161, once)).is_some());
        let pcie_busy = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            if t == 90 {
                s.pcie_rx_bytes_per_sec = Some(900e6);
            }
        };
        assert!(busy_idle(&judge(110, pcie_busy)).is_none());
        let gap = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            if t > 20 {
                s.pcie_tx_bytes_per_sec = None;
            }
        };
        assert!(
            busy_idle(&judge(110, gap)).is_none(),
            "a reading missing is no sign"
        );
    }

    /// Both signs agree: critical. A plausible GPM reading of working SMs outweighs the power
    /// sign: nothing.
    #[test]
    fn both_signs_are_critical_and_gpm_that_says_work_wins() {
        let both = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            s.sm_active_pct = Some(0.8);
        };
        let f = judge(110, both);
        let b = busy_idle(&f).expect("busy-idle");
        assert_eq!(b.severity, Severity::Crit);
        assert!(
            b.why.contains("; and without GPM: util 100 % at 120 W"),
            "{}",
            b.why
        );
        let working = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            s.sm_active_pct = Some(60.0);
        };
        assert!(busy_idle(&judge(110, working)).is_none());
    }

    /// GPM that says idle with a gap (its own sign needs every reading) and the power sign
    /// agree: critical, not silenced.
    #[test]
    fn gpm_idle_with_a_gap_and_the_power_sign_agree() {
        let gappy = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            s.sm_active_pct = (!t.is_multiple_of(10)).then_some(0.8);
        };
        let f = judge(110, gappy);
        let b = busy_idle(&f).expect("busy-idle");
        assert_eq!(b.severity, Severity::Crit, "{b:?}");
        assert!(
            b.why.contains("; GPM agrees: SM activity 0.8 %"),
            "{}",
            b.why
        );
    }

    /// A power that reads 0 W under load cannot be true: no sign on it.
    #[test]
    fn zero_watts_under_load_is_no_sign() {
        let zero = |t: u64, s: &mut GpuSample| {
            spinning(t, s);
            s.power_avg_watts = Some(0.0);
        };
        assert!(busy_idle(&judge(110, zero)).is_none());
    }
}
