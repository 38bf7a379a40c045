//! Node and GPU rules: a node unreachable, stale or short of GPUs; a GPU lost, stalled, busy but
//! idle, throttling, clocked low, power-limited below its peers, with ECC or row-remap trouble,
//! or with NVLink/PCIe error counters rising; Xid events with their playbook entry.

use super::{Ctx, Raw, Severity, raw, xid_info};
use crate::model::{NodeLink, clock_events};
use crate::store::history::History;
use crate::store::{ClusterStore, GpuView, NodeView, median};

/// Once a windowed rule fired, it keeps firing while this many newest samples still show it.
const HOLD_SAMPLES: usize = 3;

/// A GPU whose enforced power limit is under this share of its peers' median has been capped.
const POWER_LIMIT_PEER_SHARE: f64 = 0.95;

pub(super) fn node_rules(node: &NodeView, ctx: &Ctx, out: &mut Vec<Raw>) {
    let name = Some(node.name.clone());
    match &node.link {
        NodeLink::Unreachable(reason) => {
            out.push(raw(
                Severity::Crit,
                "unreachable",
                name,
                None,
                format!("cannot reach the node: {reason}"),
                "check the node's power and network; ssh to it by hand",
            ));
            return;
        }
        NodeLink::Stale => out.push(raw(
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
        out.push(raw(
            Severity::Crit,
            "gpus-missing",
            name.clone(),
            None,
            why,
            "nvidia-smi -L and dmesg on the node (Xid 79, fallen off the bus, driver not loaded)",
        ));
    }
    // A stream naming GPUs or ports no node has is no agent burnin knows: what it said past
    // the limits was not kept, and the rest of it is not to be trusted either.
    if let Some(why) = node.over_limit_words() {
        out.push(raw(
            Severity::Warn,
            "stream-over-limit",
            name.clone(),
            None,
            why,
            "check what runs at the node's agent_path (burnin deploy puts the agent there)",
        ));
    }
    for gpu in &node.gpus {
        gpu_rules(node, gpu, ctx, out);
    }
    power_limit_rules(node, out);
}

fn gpu_rules(node: &NodeView, gpu: &GpuView, ctx: &Ctx, out: &mut Vec<Raw>) {
    let name = Some(node.name.clone());
    let idx = Some(gpu.index);
    if let Some(x) = gpu.xids.back() {
        let info = xid_info(x.code);
        out.push(
            raw(
                info.severity,
                "xid",
                name.clone(),
                idx,
                format!("Xid {}: {}", x.code, info.meaning),
                info.next,
            )
            .at(x.at_ms),
        );
    }
    if gpu.is_lost() {
        out.push(raw(
            Severity::Crit,
            "gpu-lost",
            name.clone(),
            idx,
            "NVML returns no readings for this GPU".into(),
            "check dmesg for Xid 79 / PCIe errors; the GPU needs a reset or reseat",
        ));
        return;
    }

    // A kernel spinning on a few SMs reads as busy but is not working; that is the more
    // precise why, so the stall rule (which its low power may also trip) stays quiet then.
    if let Some((severity, why)) = super::hang::busy_idle(node, gpu, ctx) {
        out.push(raw(
            severity,
            "busy-idle",
            name.clone(),
            idx,
            why,
            "py-spy dump the rank on this GPU; NCCL_DEBUG=INFO names the peer it waits for: check that GPU and its NIC",
        ));
    } else if let Some(why) = stall_evidence(node, gpu, ctx) {
        out.push(raw(
            Severity::Crit,
            "stalled",
            name.clone(),
            idx,
            why,
            "py-spy/cuda-gdb the rank on this GPU; check its NCCL peers and Xid log",
        ));
    }

    throttle_rules(node, gpu, ctx, out);
    memory_rules(node, gpu, out);
    link_counter_rules(node, gpu, out);
}

/// One clock-event reason bit that means trouble: how bad, and what to do about it.
struct TroubleBit {
    bit: u64,
    severity: Severity,
    next: &'static str,
}

/// The trouble bits, worst first; the worst one set decides the finding's severity and next step.
const TROUBLE_BITS: &[TroubleBit] = &[
    TroubleBit {
        bit: clock_events::HW_POWER_BRAKE,
        severity: Severity::Crit,
        next: "the power supply asserted the brake: check PSU redundancy, the rack's power feed and the BMC log",
    },
    TroubleBit {
        bit: clock_events::HW_THERMAL,
        severity: Severity::Crit,
        next: "check inlet temperature, fans/liquid flow and the GPU's neighbours",
    },
    TroubleBit {
        bit: clock_events::HW_SLOWDOWN,
        severity: Severity::Crit,
        next: "nvidia-smi -q -d PERFORMANCE on the node: without thermal or power brake beside it, suspect the board (RMA)",
    },
    TroubleBit {
        bit: clock_events::SW_THERMAL,
        severity: Severity::Warn,
        next: "the driver slows the GPU for heat: check inlet temperature and airflow/liquid flow",
    },
];

fn throttle_rules(node: &NodeView, gpu: &GpuView, ctx: &Ctx, out: &mut Vec<Raw>) {
    let Some(sample) = &gpu.latest else { return };
    let name = Some(node.name.clone());
    let clock = match (sample.sm_clock_mhz, gpu.sm_clock_max_mhz()) {
        (Some(c), Some(m)) => format!("SM {c}/{m} MHz"),
        (Some(c), None) => format!("SM {c} MHz"),
        _ => "SM clock n/a".into(),
    };
    let mask = sample.clock_event_reasons.unwrap_or(0);
    if let Some(worst) = TROUBLE_BITS.iter().find(|t| mask & t.bit != 0) {
        let names = clock_events::describe(mask & clock_events::TROUBLE).join(", ");
        let temp = sample
            .temperature_c
            .map_or_else(|| "temp n/a".into(), |t| format!("{t:.0} °C"));
        out.push(raw(
            worst.severity,
            "throttling",
            name,
            Some(gpu.index),
            format!("{names}: {clock} at {temp}"),
            worst.next,
        ));
        return;
    }
    if let Some(why) = clock_low_evidence(node, gpu, ctx) {
        out.push(raw(
            Severity::Warn,
            "clock-low",
            name,
            Some(gpu.index),
            why,
            "nvidia-smi -q -d CLOCK,PERFORMANCE; reset application and locked clocks (nvidia-smi -rac, -rgc)",
        ));
    }
}

/// SW power cap under full load is how a GPU is meant to run: one info line for the cluster
/// says so (with how many GPUs, so a GPU missing from the count stands out).
pub(super) fn power_cap_summary(store: &ClusterStore, ctx: &Ctx, out: &mut Vec<Raw>) {
    let t = &ctx.thresholds;
    let (mut capped, mut loaded, mut nodes) = (0usize, 0usize, 0usize);
    let mut limits = Vec::new();
    for node in store.nodes.iter().filter(|n| n.link == NodeLink::Streaming) {
        let mut here = 0;
        for s in node.gpus.iter().filter_map(|g| g.latest.as_ref()) {
            if !s
                .utilization_pct
                .is_some_and(|u| f64::from(u) >= t.loaded_util_pct)
            {
                continue;
            }
            loaded += 1;
            if s.clock_event_reasons
                .is_some_and(|m| m & clock_events::SW_POWER_CAP != 0)
            {
                here += 1;
                limits.extend(s.power_limit_watts.map(f64::from));
            }
        }
        capped += here;
        nodes += usize::from(here > 0);
    }
    if capped > 0 {
        let limit = median(limits.into_iter());
        out.push(raw(
            Severity::Info,
            "power-capped",
            None,
            None,
            format!(
                "SW power cap on {capped} of {loaded} loaded GPUs on {nodes} node(s){}: normal at full load",
                limit.map_or_else(String::new, |l| format!(", limit {l:.0} W"))
            ),
            "none: at the power limit the clocks settle below max",
        ));
    }
}

/// A GPU whose enforced power limit is under its peers' has been capped by someone.
fn power_limit_rules(node: &NodeView, out: &mut Vec<Raw>) {
    let live: Vec<&GpuView> = node.gpus.iter().filter(|g| !g.is_lost()).collect();
    let peer_limit = median(
        live.iter()
            .filter_map(|g| g.power_limit_watts().map(f64::from)),
    );
    if live.len() < 2 {
        return;
    }
    let Some(peer) = peer_limit else { return };
    for g in &live {
        if let Some(l) = g.power_limit_watts().map(f64::from)
            && l < POWER_LIMIT_PEER_SHARE * peer
        {
            out.push(raw(
                Severity::Warn,
                "power-limit-low",
                Some(node.name.clone()),
                Some(g.index),
                format!("power limit {l:.0} W while its peers run at {peer:.0} W"),
                "nvidia-smi -q -d POWER; restore the limit (nvidia-smi -pl) or find what set it",
            ));
        }
    }
}

fn memory_rules(node: &NodeView, gpu: &GpuView, out: &mut Vec<Raw>) {
    let Some(s) = &gpu.latest else { return };
    let name = Some(node.name.clone());
    let idx = Some(gpu.index);
    if let Some(n) = s.ecc_uncorrected_volatile.filter(|n| *n > 0) {
        out.push(raw(
            Severity::Crit,
            "ecc-uncorrected",
            name.clone(),
            idx,
            format!(
                "{n} uncorrectable ECC error(s) since the driver loaded; remapped rows {} uncorrectable, {} correctable",
                fmt_count(s.remapped_rows_uncorrectable),
                fmt_count(s.remapped_rows_correctable)
            ),
            "drain the GPU; reset it so the rows are remapped; RMA if it recurs",
        ));
    }
    if s.remapped_rows_failure == Some(true) {
        out.push(raw(
            Severity::Crit,
            "remap-failed",
            name,
            idx,
            "row remapping failed: the GPU has no spare rows left for a failing one".into(),
            "drain the GPU and RMA it",
        ));
    } else if s.remapped_rows_pending == Some(true) {
        out.push(raw(
            Severity::Warn,
            "remap-pending",
            name,
            idx,
            format!(
                "a row remap waits for the next GPU reset (remapped rows {} uncorrectable)",
                fmt_count(s.remapped_rows_uncorrectable)
            ),
            "reset the GPU (nvidia-smi -r) at the next drain so the remap applies",
        ));
    }
}

fn fmt_count(v: Option<u32>) -> String {
    v.map_or_else(|| "n/a".into(), |v| v.to_string())
}

/// More NVLink errors in a second than any GPU's links carry flits (NVLink 5: 18 links of
/// 50 GB/s a direction in 16-byte flits is about 1.1e11 a second, both ways): a counter that
/// rose faster was not read right (a sentinel, a reset the driver did not say), and is no
/// evidence of a bad link.
const NVLINK_ERRORS_PER_S_MAX: f64 = 1e12;

fn link_counter_rules(node: &NodeView, gpu: &GpuView, out: &mut Vec<Raw>) {
    let window_ms = super::COUNTER_WINDOW_MS;
    let secs = window_ms / 1000;
    let counts = &gpu.error_counts;
    let mut impossible = Vec::new();
    let rises: Vec<String> = [
        ("CRC", counts.rise(window_ms, |c| c.nvlink_crc)),
        ("replay", counts.rise(window_ms, |c| c.nvlink_replay)),
        ("recovery", counts.rise(window_ms, |c| c.nvlink_recovery)),
    ]
    .into_iter()
    .filter_map(|(what, r)| {
        if r as f64 > NVLINK_ERRORS_PER_S_MAX * secs as f64 {
            impossible.push(format!("{what} +{r}"));
            return None;
        }
        (r > 0).then(|| format!("{what} +{r}"))
    })
    .collect();
    if !impossible.is_empty() {
        out.push(raw(
            Severity::Info,
            "nvlink-counter-implausible",
            Some(node.name.clone()),
            Some(gpu.index),
            format!(
                "NVLink {} in {secs} s is more than its links carry flits: not a reading (n/a), no evidence of a bad link",
                impossible.join(", ")
            ),
            "check the counters on the node (nvidia-smi nvlink -e); a driver reload resets them",
        ));
    }
    if !rises.is_empty() {
        // Name the links when the agent says which: the cable or tray to reseat.
        let links: Vec<String> = gpu
            .link_error_rises(node.last_frame_ms.unwrap_or(0), super::COUNTER_WINDOW_MS)
            .iter()
            .map(|r| {
                let parts: Vec<String> = [
                    ("CRC", r.crc),
                    ("replay", r.replay),
                    ("recovery", r.recovery),
                ]
                .into_iter()
                .filter(|(_, v)| *v > 0)
                .map(|(what, v)| format!("{what} +{v}"))
                .collect();
                format!("link {} ({})", r.link, parts.join(", "))
            })
            .collect();
        let on = if links.is_empty() {
            String::new()
        } else {
            format!(", on {}", links.join("; "))
        };
        out.push(raw(
            Severity::Warn,
            "nvlink-errors",
            Some(node.name.clone()),
            Some(gpu.index),
            format!("NVLink {} in the last {secs} s{on}", rises.join(", ")),
            "nvidia-smi nvlink -e on the node; reseat or replace the link's tray/cable",
        ));
    }
    let replays = counts.rise(window_ms, |c| c.pcie_replay);
    if replays > 0 {
        out.push(raw(
            Severity::Warn,
            "pcie-replay",
            Some(node.name.clone()),
            Some(gpu.index),
            format!("PCIe replay counter +{replays} in the last {secs} s"),
            "check the GPU's PCIe seating and riser (lspci -vv link status); rising replays often precede Xid 79",
        ));
    }
    if let Some(up) = gpu.latest.as_ref().and_then(|s| s.nvlink_link_up.as_ref()) {
        let down: Vec<String> = up
            .iter()
            .enumerate()
            .filter(|(_, u)| !**u)
            .map(|(i, _)| i.to_string())
            .collect();
        if !down.is_empty() {
            out.push(raw(
                if down.len() == up.len() {
                    Severity::Crit
                } else {
                    Severity::Warn
                },
                "nvlink-down",
                Some(node.name.clone()),
                Some(gpu.index),
                format!(
                    "NVLink link(s) {} down ({} of {} up)",
                    down.join(", "),
                    up.len() - down.len(),
                    up.len()
                ),
                "nvidia-smi nvlink -s; check the fabric manager log; reset the GPU or reseat the tray",
            ));
        }
    }
}

/// The newest samples of one metric, oldest first, gaps as `None`.
type Window = Vec<Option<f64>>;

/// A windowed rule: it fires when `judge` holds over the whole window; once fired, it keeps
/// firing while the newest few samples still hold. The evidence is the whole window's when it
/// still holds, so the numbers quoted always match the "for N s" they claim.
pub(super) fn windowed(
    ctx: &Ctx,
    rule: &'static str,
    node: &NodeView,
    gpu: &GpuView,
    judge: impl Fn(usize) -> Option<String>,
) -> Option<String> {
    judge(ctx.stall_samples).or_else(|| {
        ctx.was(rule, &node.name, Some(gpu.index))
            .then(|| judge(HOLD_SAMPLES.min(ctx.stall_samples)))
            .flatten()
    })
}

/// Stalled: idle (or far under its peers' power) for every one of the newest samples while the
/// node's other GPUs are loaded. Returns the evidence line.
fn stall_evidence(node: &NodeView, gpu: &GpuView, ctx: &Ctx) -> Option<String> {
    windowed(ctx, "stalled", node, gpu, |n| stall_over(node, gpu, ctx, n)).or_else(|| {
        ctx.was("stalled", &node.name, Some(gpu.index))
            .then(|| still_idle(gpu, ctx))
            .flatten()
    })
}

/// A stalled GPU stays stalled until it works again: when its peers fall idle too (between
/// phases) nothing tells a stall from a rest, so the finding holds while the GPU itself stays
/// idle, and is judged afresh once the peers load (it flapped at every phase boundary, its
/// `since` restarting each time).
fn still_idle(gpu: &GpuView, ctx: &Ctx) -> Option<String> {
    let n = HOLD_SAMPLES.min(ctx.stall_samples);
    let util: Vec<f64> = gpu.util_pct.tail(n).flatten().collect();
    if util.len() < n || util.iter().any(|u| *u >= ctx.thresholds.stall_util_pct) {
        return None;
    }
    Some(format!(
        "util {:.0} % and still idle; its peers are idle too now, so it is judged again when they load",
        util.last().copied().unwrap_or(0.0)
    ))
}

fn stall_over(node: &NodeView, gpu: &GpuView, ctx: &Ctx, n: usize) -> Option<String> {
    let (window_s, t) = (ctx.window_secs(n), &ctx.thresholds);
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

/// Clocked low: loaded, no trouble bit set, yet the SM clock stayed under `clock_low_pct` % of
/// its maximum for the whole window (application or locked clocks set low, or a board issue).
fn clock_low_evidence(node: &NodeView, gpu: &GpuView, ctx: &Ctx) -> Option<String> {
    windowed(ctx, "clock-low", node, gpu, |n| clock_low_over(gpu, ctx, n))
}

fn clock_low_over(gpu: &GpuView, ctx: &Ctx, n: usize) -> Option<String> {
    let t = &ctx.thresholds;
    let max = f64::from(gpu.sm_clock_max_mhz()?);
    let util: Vec<f64> = gpu.util_pct.tail(n).flatten().collect();
    let clock: Vec<f64> = gpu.sm_clock_mhz.tail(n).flatten().collect();
    if max <= 0.0 || util.len() < n || clock.len() < n {
        return None;
    }
    let loaded = util.iter().all(|u| *u >= t.loaded_util_pct);
    let low = clock.iter().all(|c| c / max * 100.0 < t.clock_low_pct);
    if !(loaded && low) {
        return None;
    }
    let now = clock.last().copied().unwrap_or(0.0);
    let reasons = gpu
        .latest
        .as_ref()
        .and_then(|s| s.clock_event_reasons)
        .map(clock_events::describe)
        .filter(|r| !r.is_empty())
        .map_or_else(|| "none".into(), |r| r.join(", "));
    Some(format!(
        "SM {now:.0}/{max:.0} MHz ({:.0} % of max) at {:.0} % util for {} s; reasons: {reasons}",
        now / max * 100.0,
        util.last().copied().unwrap_or(0.0),
        ctx.window_secs(n)
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Finding, Severity, Triage};
    use crate::model::SourceEvent;
    use crate::model::{GpuSample, NodeFrame, clock_events};
    use crate::store::ClusterStore;
    use crate::triage::tests::kit::has;

    /// A node of 8 loaded GPUs (util 98 %, 1000 of 1100 W, SM 1800/2000 MHz, SM activity 90 %,
    /// counters flat) for `secs` seconds, each sample passed through `edit(second, sample)`
    /// first; judged every second as the console does.
    fn judge(secs: u64, edit: impl Fn(u64, &mut GpuSample)) -> Vec<Finding> {
        crate::triage::tests::kit::judged_each_second(secs, Vec::new(), |s, g| {
            let mut x = GpuSample {
                index: g,
                power_avg_watts: Some(1000.0),
                power_limit_watts: Some(1100.0),
                temperature_c: Some(60.0),
                sm_clock_mhz: Some(1800),
                sm_clock_max_mhz: Some(2000),
                utilization_pct: Some(98.0),
                sm_active_pct: Some(90.0),
                clock_event_reasons: Some(0),
                ecc_uncorrected_volatile: Some(0),
                nvlink_crc_errors: Some(7),
                nvlink_replay_errors: Some(0),
                nvlink_recovery_errors: Some(0),
                pcie_replay_count: Some(2),
                nvlink_link_up: Some(vec![true; 18]),
                remapped_rows_pending: Some(false),
                remapped_rows_failure: Some(false),
                ..GpuSample::default()
            };
            edit(s, &mut x);
            x
        })
    }

    fn on_gpu1(s: &mut GpuSample, f: impl FnOnce(&mut GpuSample)) {
        if s.index == 1 {
            f(s)
        }
    }

    fn above_info(f: &[Finding]) -> Vec<&Finding> {
        f.iter().filter(|x| x.severity > Severity::Info).collect()
    }

    fn reading() -> impl proptest::strategy::Strategy<Value = Option<f32>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(None),
            any::<f32>().prop_map(Some),
            Just(Some(f32::NAN)),
            Just(Some(f32::INFINITY)),
            Just(Some(-1.0)),
        ]
    }

    proptest::proptest! {
        /// Whatever a node reports (NaN, infinities, negative power, counters that go backwards
        /// or wrap, frames out of order), the rules judge it without panicking.
        #[test]
        fn garbage_readings_never_panic(
            rows in proptest::collection::vec(
                (0u64..40, 0u32..4, reading(), reading(), reading(),
                 proptest::option::of(proptest::prelude::any::<u32>()),
                 proptest::option::of(proptest::prelude::any::<u64>()),
                 proptest::option::of(proptest::prelude::any::<u64>()),
                 proptest::option::of(proptest::collection::vec(proptest::prelude::any::<bool>(), 0..20))),
                1..60,
            )
        ) {
            let mut store = ClusterStore::with_period(crate::model::units::Period::from_millis(1000).expect("period"));
            let mut triage = Triage::new();
            for (s, g, util, power, sm, clock, mask, counter, links) in rows {
                let at_ms = s * 1000;
                store.ingest(SourceEvent::Frame(NodeFrame {
                    node: "n1".into(),
                    at_ms,
                    gpus: vec![GpuSample {
                        index: g,
                        utilization_pct: util,
                        power_avg_watts: power,
                        power_limit_watts: power,
                        sm_active_pct: sm,
                        sm_clock_mhz: clock,
                        sm_clock_max_mhz: clock.map(|c| c / 2),
                        clock_event_reasons: mask,
                        pcie_replay_count: counter,
                        nvlink_crc_errors: counter,
                        ecc_uncorrected_volatile: counter,
                        nvlink_link_up: links,
                        ..GpuSample::default()
                    }],
                    nics: Vec::new(),
                    netdevs: Vec::new(),
                }));
                store.ingest(SourceEvent::Clock { at_ms });
                let _ = triage.evaluate(&store);
            }
        }
    }

    #[test]
    fn a_healthy_loaded_node_has_no_findings() {
        assert_eq!(judge(15, |_, _| {}), vec![]);
    }

    #[test]
    fn each_trouble_bit_is_judged_on_its_own() {
        let cases = [
            (
                clock_events::HW_POWER_BRAKE,
                Severity::Crit,
                "hw-power-brake",
            ),
            (clock_events::HW_THERMAL, Severity::Crit, "hw-thermal"),
            (clock_events::HW_SLOWDOWN, Severity::Crit, "hw-slowdown"),
            (clock_events::SW_THERMAL, Severity::Warn, "sw-thermal"),
        ];
        let mut nexts = Vec::new();
        for (bit, severity, name) in cases {
            let f = judge(3, |_, s| {
                on_gpu1(s, |s| {
                    s.clock_event_reasons = Some(bit | clock_events::SW_POWER_CAP)
                })
            });
            let t = f
                .iter()
                .find(|x| x.rule == "throttling")
                .unwrap_or_else(|| panic!("{name}: {f:?}"));
            assert_eq!(t.subject(), "n1 GPU1");
            assert_eq!(t.severity, severity, "{name}");
            assert!(t.why.starts_with(name), "{name}: {}", t.why);
            assert!(t.why.contains("SM 1800/2000 MHz at 60 °C"), "{}", t.why);
            nexts.push(t.next);
        }
        nexts.sort_unstable();
        nexts.dedup();
        assert_eq!(nexts.len(), cases.len(), "each bit has its own next step");
        // Bits that are not trouble: nothing above info.
        for bit in [
            clock_events::GPU_IDLE,
            clock_events::APPLICATIONS_CLOCKS_SETTING,
            clock_events::SW_POWER_CAP,
            clock_events::SYNC_BOOST,
            clock_events::DISPLAY_CLOCK_SETTING,
        ] {
            let f = judge(3, |_, s| on_gpu1(s, |s| s.clock_event_reasons = Some(bit)));
            assert_eq!(above_info(&f), Vec::<&Finding>::new(), "bit {bit:#x}");
        }
    }

    #[test]
    fn power_cap_under_load_is_one_info_line_for_the_cluster() {
        let f = judge(3, |_, s| {
            s.clock_event_reasons = Some(clock_events::SW_POWER_CAP)
        });
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(
            f[0].why,
            "SW power cap on 8 of 8 loaded GPUs on 1 node(s), limit 1100 W: normal at full load"
        );
    }

    #[test]
    fn clocks_held_low_while_loaded_need_the_whole_window() {
        let low = |_: u64, s: &mut GpuSample| {
            on_gpu1(s, |s| {
                s.sm_clock_mhz = Some(700);
                s.clock_event_reasons = Some(clock_events::APPLICATIONS_CLOCKS_SETTING);
            })
        };
        assert!(!has(&judge(8, low), "clock-low", "n1 GPU1"));
        let f = judge(12, low);
        let c = f.iter().find(|x| x.rule == "clock-low").expect("clock-low");
        assert_eq!(c.severity, Severity::Warn);
        assert_eq!(
            c.why,
            "SM 700/2000 MHz (35 % of max) at 98 % util for 10 s; reasons: app-clocks"
        );
        // The same clock while idle is how an idle GPU runs.
        let idle = judge(12, |s, x| {
            low(s, x);
            x.utilization_pct = Some(0.0);
        });
        assert!(!idle.iter().any(|x| x.rule == "clock-low"), "{idle:?}");
    }

    #[test]
    fn a_power_limit_under_its_peers_is_named() {
        let f = judge(2, |_, s| on_gpu1(s, |s| s.power_limit_watts = Some(800.0)));
        let p = f
            .iter()
            .find(|x| x.rule == "power-limit-low")
            .expect("found");
        assert_eq!(p.why, "power limit 800 W while its peers run at 1100 W");
    }

    #[test]
    fn uncorrectable_ecc_and_row_remaps() {
        let f = judge(2, |_, s| {
            on_gpu1(s, |s| {
                s.ecc_uncorrected_volatile = Some(2);
                s.remapped_rows_uncorrectable = Some(1);
                s.remapped_rows_pending = Some(true);
            })
        });
        let get = |rule: &str| f.iter().find(|x| x.rule == rule).map(|x| x.severity);
        assert_eq!(get("ecc-uncorrected"), Some(Severity::Crit), "{f:?}");
        assert_eq!(get("remap-pending"), Some(Severity::Warn));
        let failed = judge(2, |_, s| {
            on_gpu1(s, |s| s.remapped_rows_failure = Some(true))
        });
        assert!(has(&failed, "remap-failed", "n1 GPU1"));
        assert!(!has(&failed, "remap-pending", "n1 GPU1"));
    }

    #[test]
    fn rising_link_counters_warn_and_flat_ones_do_not() {
        let f = judge(6, |t, s| {
            on_gpu1(s, |s| {
                s.nvlink_replay_errors = Some(t * 4);
                s.nvlink_recovery_errors = Some(1);
                s.pcie_replay_count = Some(2 + t);
            })
        });
        let why = |rule: &str| f.iter().find(|x| x.rule == rule).map(|x| x.why.clone());
        assert_eq!(
            why("nvlink-errors").as_deref(),
            Some("NVLink replay +20 in the last 10 s")
        );
        assert_eq!(
            why("pcie-replay").as_deref(),
            Some("PCIe replay counter +5 in the last 10 s")
        );
        assert_eq!(above_info(&f).len(), 2, "{f:?}");
    }

    /// Past 2^24 an `f32` cannot tell n from n + 1: a long-lived link's counter is kept in
    /// `u64`, so one more CRC error is still seen.
    #[test]
    fn one_more_error_on_a_counter_past_sixteen_million_is_seen() {
        let f = judge(4, |t, s| {
            on_gpu1(s, |s| {
                s.nvlink_crc_errors = Some(30_000_000 + u64::from(t >= 3));
                s.pcie_replay_count = Some(16_777_217 + u64::from(t >= 4));
            })
        });
        let why = |rule: &str| f.iter().find(|x| x.rule == rule).map(|x| x.why.clone());
        assert_eq!(
            why("nvlink-errors").as_deref(),
            Some("NVLink CRC +1 in the last 10 s")
        );
        assert_eq!(
            why("pcie-replay").as_deref(),
            Some("PCIe replay counter +1 in the last 10 s")
        );
    }

    #[test]
    fn nvlink_links_down() {
        let f = judge(2, |_, s| {
            on_gpu1(s, |s| {
                if let Some(up) = s.nvlink_link_up.as_mut() {
                    up[3] = false;
                    up[17] = false;
                }
            })
        });
        let d = f.iter().find(|x| x.rule == "nvlink-down").expect("found");
        assert_eq!(
            (d.severity, d.why.as_str()),
            (Severity::Warn, "NVLink link(s) 3, 17 down (16 of 18 up)")
        );
        let all = judge(2, |_, s| {
            on_gpu1(s, |s| s.nvlink_link_up = Some(vec![false; 18]))
        });
        assert_eq!(
            all.iter()
                .find(|x| x.rule == "nvlink-down")
                .map(|x| x.severity),
            Some(Severity::Crit)
        );
    }

    #[test]
    fn busy_but_idle_is_named_instead_of_stalled() {
        let hung = |_: u64, s: &mut GpuSample| {
            on_gpu1(s, |s| {
                s.utilization_pct = Some(100.0);
                s.sm_active_pct = Some(0.8);
                s.power_avg_watts = Some(250.0);
            })
        };
        let f = judge(12, hung);
        let b = f.iter().find(|x| x.rule == "busy-idle").expect("busy-idle");
        assert_eq!(b.severity, Severity::Crit);
        assert!(
            b.why
                .starts_with("util 100 % but SM activity 0.8 % at 250 W of 1100 for 10 s"),
            "{}",
            b.why
        );
        assert!(!has(&f, "stalled", "n1 GPU1"), "{f:?}");
        // Near its power limit a GPU is working, whatever GPM says: no busy-idle without the
        // power to back it.
        let at_limit = judge(12, |t, s| {
            hung(t, s);
            on_gpu1(s, |s| s.power_avg_watts = Some(900.0));
        });
        assert!(!has(&at_limit, "busy-idle", "n1 GPU1"), "{at_limit:?}");
        // Without GPM (pre-Hopper, or NotSupported), the rule stays quiet: the stall rule's
        // power comparison still sees it.
        let no_gpm = judge(12, |t, s| {
            hung(t, s);
            s.sm_active_pct = None;
        });
        assert!(!has(&no_gpm, "busy-idle", "n1 GPU1"));
        assert!(has(&no_gpm, "stalled", "n1 GPU1"), "{no_gpm:?}");
    }
}
