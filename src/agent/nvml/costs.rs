//! `burnin agent --probe-costs`: what each NVML read the agent makes costs on this node, back to
//! back and cold, in wall and CPU time, with the freshness of the power fields, the units of
//! the GPM metrics and one whole background round; how the sampler's split by cost was found.

use std::time::{Duration, Instant};

use nvml_wrapper::Device;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::sys_exports::field_id;

use super::calls::{
    GPM_METRICS, GPM_METRICS_WITHOUT_NVLINK, answers, compute_pids, nvlink_link_states,
    nvlink_links_active, raw_field_samples, raw_field_values, remapped_rows, volatile_ecc,
};
use super::slow::SlowReader;
use super::{ECC_FIELDS, NvmlUnavailable, POWER_FIELDS, SCOPE_ALL_LINKS, driver_renumbers_fields};

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
        back_to_back(&mut out, i, &d, renumbered, rounds);
        freshness(&mut out, i, &d, renumbered);
        processes_and_ecc(&mut out, i, &d, renumbered);
        gpm_units(&mut out, i, &d, rounds);
        background_round(&mut out, i, nvml, &d, renumbered);
        cold_calls(&mut out, i, &d, renumbered);
    }
    Ok(out)
}

/// Times `f` over `rounds` calls back to back: a row of wall and this thread's CPU per call.
/// A call that waits on the GPU costs wall time but not the node's CPU, and the CPU is what
/// the agent's goal counts.
fn time(out: &mut String, i: u32, rounds: u32, name: &str, f: &mut dyn FnMut() -> bool) {
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
}

/// Every read of the sampler, back to back.
fn back_to_back(out: &mut String, i: u32, d: &Device<'static>, renumbered: bool, rounds: u32) {
    time(out, i, rounds, "power_usage", &mut || {
        d.power_usage().is_ok()
    });
    time(out, i, rounds, "temperature", &mut || {
        d.temperature(TemperatureSensor::Gpu).is_ok()
    });
    time(out, i, rounds, "utilization_rates", &mut || {
        d.utilization_rates().is_ok()
    });
    time(out, i, rounds, "clock_info(SM)", &mut || {
        d.clock_info(Clock::SM).is_ok()
    });
    time(out, i, rounds, "clock_info(Memory)", &mut || {
        d.clock_info(Clock::Memory).is_ok()
    });
    time(out, i, rounds, "current_throttle_reasons", &mut || {
        d.current_throttle_reasons().is_ok()
    });
    time(out, i, rounds, "memory_info", &mut || {
        d.memory_info().is_ok()
    });
    time(out, i, rounds, "total_ecc_errors(corrected)", &mut || {
        d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .is_ok()
    });
    time(out, i, rounds, "total_ecc_errors(uncorrected)", &mut || {
        d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
            .is_ok()
    });
    time(out, i, rounds, "field POWER_INSTANT", &mut || {
        raw_field_values(d, renumbered, &[(field_id::NVML_FI_DEV_POWER_INSTANT, 0)])[0].is_some()
    });
    time(
        out,
        i,
        rounds,
        "fields NVLink tx/rx (all links)",
        &mut || {
            raw_field_values(
                d,
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
        },
    );
    time(
        out,
        i,
        rounds,
        "fields NVLink CRC/replay/recovery",
        &mut || {
            raw_field_values(
                d,
                renumbered,
                &[
                    (field_id::NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0),
                    (field_id::NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0),
                ],
            )[0]
            .is_some()
        },
    );
    time(out, i, rounds, "field PCIE_REPLAY_COUNTER", &mut || {
        answers(
            d,
            renumbered,
            &[(field_id::NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0)],
        )
    });
    time(out, i, rounds, "fields ECC SBE+DBE volatile", &mut || {
        raw_field_values(d, renumbered, &ECC_FIELDS)[0].is_some()
    });
    time(out, i, rounds, "remapped_rows (raw)", &mut || {
        remapped_rows(d).is_some()
    });
    time(out, i, rounds, "running_compute_processes", &mut || {
        d.running_compute_processes().is_ok()
    });
    let mut process_buf = Vec::new();
    time(out, i, rounds, "compute_pids (one call)", &mut || {
        compute_pids(d, &mut process_buf).is_some()
    });
    time(out, i, rounds, "nvlink is_active x18", &mut || {
        nvlink_links_active(d).is_some()
    });
    time(out, i, rounds, "field POWER_AVERAGE", &mut || {
        raw_field_values(d, renumbered, &[(field_id::NVML_FI_DEV_POWER_AVERAGE, 0)])[0].is_some()
    });
    time(out, i, rounds, "fields POWER_INSTANT+AVERAGE", &mut || {
        raw_field_values(d, renumbered, &POWER_FIELDS)[1].is_some()
    });
    time(out, i, rounds, "gpm_sample", &mut || d.gpm_sample().is_ok());
}

/// Is the field fresh? NVML may serve fields from a cache; its timestamp says when the value
/// was taken. Compare with the classic call at the tick path's pace.
fn freshness(out: &mut String, i: u32, d: &Device<'static>, renumbered: bool) {
    out.push_str(&format!(
        "GPU{i} freshness, 12 reads 100 ms apart: power_usage mW | POWER_AVERAGE mW @ts µs | POWER_INSTANT mW @ts µs\n"
    ));
    for _ in 0..12 {
        let classic = d.power_usage().ok();
        let fields = raw_field_samples(
            d,
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
}

/// The process list both ways (the agent's one call must list what nvml-wrapper lists), and
/// both ways of reading volatile ECC, side by side.
fn processes_and_ecc(out: &mut String, i: u32, d: &Device<'static>, renumbered: bool) {
    // The process list both ways: the agent's one call must list what nvml-wrapper lists.
    out.push_str(&format!(
        "GPU{i} compute processes: nvml-wrapper {:?}, one call {:?}\n",
        d.running_compute_processes()
            .map(|ps| ps.iter().map(|p| p.pid).collect::<Vec<_>>()),
        compute_pids(d, &mut Vec::new()),
    ));
    // Both ways of reading volatile ECC, side by side: the agent makes the calls.
    let ecc_fields = raw_field_values(d, renumbered, &ECC_FIELDS);
    out.push_str(&format!(
        "GPU{i} ECC volatile (corrected, uncorrected): calls {:?}, fields SBE/DBE {:?}\n",
        volatile_ecc(d),
        ecc_fields
    ));
}

/// The units NVML gives each GPM metric the agent reads (the rates assume MiB/s).
fn gpm_units(out: &mut String, i: u32, d: &Device<'static>, rounds: u32) {
    if d.gpm_support().unwrap_or(false)
        && let Ok(first) = d.gpm_sample()
    {
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(second) = d.gpm_sample() {
            time(out, i, rounds, "gpm_metrics_get (7 metrics)", &mut || {
                nvml_wrapper::gpm::gpm_metrics_get(d.nvml(), &first, &second, &GPM_METRICS).is_ok()
            });
            time(
                out,
                i,
                rounds,
                "gpm_metrics_get (5, no NVLink)",
                &mut || {
                    nvml_wrapper::gpm::gpm_metrics_get(
                        d.nvml(),
                        &first,
                        &second,
                        &GPM_METRICS[..GPM_METRICS_WITHOUT_NVLINK],
                    )
                    .is_ok()
                },
            );
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
}

/// One whole background round of this GPU, as the agent's thread makes it: 100 ms apart, so
/// caches are as cold as they are between real rounds.
fn background_round(
    out: &mut String,
    i: u32,
    nvml: &'static Nvml,
    d: &Device<'static>,
    renumbered: bool,
) {
    let has_links = nvlink_link_states(d).is_some();
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
        reader.read(0, d, round);
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
}

/// Calls `f` ten times, each `gap` after the last and after `before`: a row of wall and CPU
/// per call. Wall beside CPU: a call that waits on the GPU's firmware sleeps (wall only), one
/// that polls for it burns CPU.
fn after(
    out: &mut String,
    i: u32,
    name: &str,
    gap: Duration,
    before: &mut dyn FnMut(),
    f: &mut dyn FnMut() -> bool,
) {
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
}

/// The same calls one by one, each after 100 ms asleep: what a call costs when the agent makes
/// it (caches cold), against the back-to-back means.
fn cold_calls(out: &mut String, i: u32, d: &Device<'static>, renumbered: bool) {
    out.push_str(&format!(
        "GPU{i} each call alone after 100 ms asleep, mean of 10, µs: wall, then CPU\n"
    ));
    let mut cold = |name: &str, f: &mut dyn FnMut() -> bool| {
        after(
            out,
            i,
            &format!("cold {name}"),
            Duration::from_millis(100),
            &mut || {},
            f,
        );
    };
    cold("fields POWER_INSTANT+AVERAGE", &mut || {
        raw_field_values(d, renumbered, &POWER_FIELDS)[1].is_some()
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
            d,
            renumbered,
            &[(field_id::NVML_FI_DEV_PCIE_REPLAY_COUNTER, 0)],
        )
    });
    cold("memory_info", &mut || d.memory_info().is_ok());
    cold("clock_info(Memory)", &mut || {
        d.clock_info(Clock::Memory).is_ok()
    });
    cold("total_ecc_errors x2", &mut || volatile_ecc(d).0.is_some());
    cold("fields ECC SBE+DBE volatile", &mut || {
        answers(d, renumbered, &ECC_FIELDS)
    });
    cold("remapped_rows (raw)", &mut || remapped_rows(d).is_some());
    cold("running_compute_processes", &mut || {
        d.running_compute_processes().is_ok()
    });
    let mut process_buf = Vec::new();
    cold("compute_pids (one call)", &mut || {
        compute_pids(d, &mut process_buf).is_some()
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
            out,
            i,
            name,
            Duration::from_millis(gap),
            &mut || {},
            &mut || d.gpm_sample().is_ok(),
        );
    }
    after(
        out,
        i,
        "gpm_sample after memory_info, 100 ms",
        Duration::from_millis(100),
        &mut || {
            let _ = d.memory_info();
        },
        &mut || d.gpm_sample().is_ok(),
    );
    after(
        out,
        i,
        "memory_info after gpm_sample, 100 ms",
        Duration::from_millis(100),
        &mut || {
            let _ = d.gpm_sample();
        },
        &mut || d.memory_info().is_ok(),
    );
}
