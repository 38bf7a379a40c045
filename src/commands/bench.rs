//! `burnin bench console` ([`console`]): the console's resident memory over a simulated
//! day, hour by hour (issue 29: flat after the first hour, at most 150 MB for 96 GPUs).
//!
//! `burnin bench ingest`: what the console pays per GPU-sample to decode agent lines and store
//! them, on the machine it runs on (issue 3's goal: ≥ 1 M GPU-samples/s on one core); and
//! `burnin bench record` ([`record`]): what the run record pays per frame and per day.
//!
//! The criterion bench (`benches/render.rs`, `decode+store`) feeds every iteration into a fresh
//! store, so each of its rounds also pays for allocating and first touching every GPU's history.
//! A console on a burn-in allocates that once and then ingests for days; this bench measures
//! both: a cold round into a fresh store, then warm rounds that carry on in the same store with
//! later timestamps. It lives in the main binary so the figure can be taken on a GPU host with
//! the binary already carried there, and it is deterministic enough to run under callgrind.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::agent::cpu::thread_cpu;
use crate::model::SourceEvent;
use crate::record::telemetry::{TelemetryRecorder, read_telemetry};
use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig, SimLoad};
use crate::store::{ClusterStore, median};
use crate::wire::{Decoded, Decoder, WireMessage, encode};

/// One measured round.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// GPU-samples decoded and stored.
    pub samples: u64,
    /// CPU time of the measuring thread.
    pub cpu: Duration,
    /// Wall-clock time.
    pub wall: Duration,
}

impl Round {
    /// GPU-samples per second of the thread's CPU time (what "one core" means here; a noisy
    /// host's stolen time does not count against it).
    pub fn per_cpu_second(&self) -> f64 {
        self.samples as f64 / self.cpu.as_secs_f64().max(1e-9)
    }

    /// GPU-samples per second of wall-clock time.
    pub fn per_wall_second(&self) -> f64 {
        self.samples as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// Agent lines of `nodes` simulated nodes under full load, one per node per second for
/// `seconds` seconds starting at second `from`, in the column form agents write.
pub fn agent_lines(sim: &mut SimCluster, nodes: usize, from: u64, seconds: u64) -> Vec<String> {
    let mut lines = Vec::with_capacity(nodes * seconds as usize);
    for s in from..from + seconds {
        for n in 0..nodes {
            let mut f = sim.node_frame(n, s, SimLoad::Full);
            f.at_ms = SIM_EPOCH_MS + s * 1000;
            lines.push(encode(&WireMessage::Frame(f)));
        }
    }
    lines
}

/// Decode `lines` and store every frame; the GPU-samples stored.
pub fn ingest(store: &mut ClusterStore, decoder: &mut Decoder, lines: &[String]) -> u64 {
    let mut samples = 0u64;
    for l in lines {
        if let Ok(Decoded::Message(WireMessage::Frame(f))) = decoder.decode(l) {
            samples += f.gpus.len() as u64;
            store.ingest(SourceEvent::Frame(f));
        }
    }
    samples
}

fn timed(work: impl FnOnce() -> u64) -> Round {
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    let samples = work();
    Round {
        samples,
        cpu: thread_cpu().saturating_sub(cpu0),
        wall: wall0.elapsed(),
    }
}

/// Everything one `burnin bench ingest` measured.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Into a fresh store (as the criterion bench does).
    pub cold: Round,
    /// Into the same store, carrying on in time.
    pub warm: Vec<Round>,
    /// Decoding alone, over the same lines as the warm rounds.
    pub decode_only: Vec<Round>,
}

/// Run the bench: `rounds` warm rounds of `seconds` simulated seconds each.
pub fn measure(nodes: usize, gpus: u32, seconds: u64, rounds: usize) -> Figures {
    let mut config = SimConfig::demo(1);
    config.nodes = nodes.max(1);
    config.gpus_per_node = gpus.max(1);
    let mut sim = SimCluster::new(config);
    let nodes = nodes.max(1);
    let mut store = ClusterStore::new();
    let mut decoder = Decoder::new();
    // One batch of lines at a time (made untimed): a round of 300 s at 12 x 8 is ~9 MB.
    let first = agent_lines(&mut sim, nodes, 0, seconds);
    let cold = timed(|| ingest(&mut store, &mut decoder, &first));
    drop(first);
    let (mut warm, mut decode_only) = (Vec::new(), Vec::new());
    for r in 1..=rounds as u64 {
        let batch = agent_lines(&mut sim, nodes, r * seconds, seconds);
        warm.push(timed(|| ingest(&mut store, &mut decoder, &batch)));
        decode_only.push(timed(|| {
            let mut d = Decoder::new();
            batch
                .iter()
                .map(|l| match d.decode(l) {
                    Ok(Decoded::Message(WireMessage::Frame(f))) => f.gpus.len() as u64,
                    _ => 0,
                })
                .sum()
        }));
    }
    Figures {
        cold,
        warm,
        decode_only,
    }
}

fn rate(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "n/a".to_string();
    };
    if v >= 1e6 {
        format!("{:.3} M/s", v / 1e6)
    } else {
        format!("{:.0} K/s", v / 1e3)
    }
}

impl Figures {
    /// The printed report: every round, then the medians.
    pub fn report(&self, nodes: usize, gpus: u32, seconds: u64) -> String {
        let mut out = format!(
            "burnin bench ingest: {nodes} nodes x {gpus} GPUs, agent lines (column form) of \
             {seconds} simulated s per round, one thread; GPU-samples per CPU second \
             (per wall second)\n"
        );
        let line = |name: &str, r: &Round| {
            format!(
                "{name:<34} {:>10}  ({})  {} samples\n",
                rate(Some(r.per_cpu_second())),
                rate(Some(r.per_wall_second())),
                r.samples
            )
        };
        out.push_str(&line("decode+store, fresh store", &self.cold));
        for (i, r) in self.warm.iter().enumerate() {
            out.push_str(&line(
                &format!("decode+store, warm store, round {}", i + 1),
                r,
            ));
        }
        for (i, r) in self.decode_only.iter().enumerate() {
            out.push_str(&line(&format!("decode only, round {}", i + 1), r));
        }
        out.push_str(&format!(
            "median: decode+store warm {} per CPU second ({} per wall second); decode only {}\n",
            rate(median(self.warm.iter().map(Round::per_cpu_second))),
            rate(median(self.warm.iter().map(Round::per_wall_second))),
            rate(median(self.decode_only.iter().map(Round::per_cpu_second))),
        ));
        out
    }
}

/// `burnin bench record`: write `hours` of a simulated cluster under full load (`nodes` ×
/// `gpus`, `per_second` frames per node per second) through the recorder into a temporary run
/// directory, then print the segment's size, the size scaled to 24 h, and the CPU per frame.
///
/// With `keep`, the run directory is written there (it must not exist) and kept with a summary
/// and an empty event log, so `burnin replay` and `burnin report` can be measured on a long
/// record.
pub fn record(
    hours: f64,
    nodes: usize,
    gpus: u32,
    per_second: u32,
    keep: Option<&Path>,
) -> Result<(), String> {
    let dir = match keep {
        Some(d) => {
            std::fs::create_dir(d).map_err(|e| format!("{}: {e}", d.display()))?;
            d.to_path_buf()
        }
        None => {
            let d =
                std::env::temp_dir().join(format!("burnin-bench-record-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            d
        }
    };
    let mut config = SimConfig::demo(1);
    config.faults.clear();
    config.nodes = nodes;
    config.gpus_per_node = gpus;
    let mut sim = SimCluster::new(config);
    let mut rec = TelemetryRecorder::create(&dir)?;
    let secs = (hours * 3600.0).round() as u64;
    let per_second = per_second.max(1);
    let step = 1000 / u64::from(per_second);
    let cpu = || {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
        let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) } == 0;
        // SAFETY: zeroed is a valid rusage, and getrusage wrote it when it returned 0.
        let ru = unsafe { ru.assume_init() };
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        if ok {
            t(ru.ru_utime) + t(ru.ru_stime)
        } else {
            0.0
        }
    };
    // Frames are made before the clock starts per second, so only the recorder is timed.
    let mut recorder_cpu = 0.0;
    let mut frames = 0u64;
    for s in 0..secs {
        let mut batch = Vec::with_capacity(nodes * per_second as usize);
        for n in 0..nodes {
            let base = sim.node_frame(n, s, SimLoad::Full);
            for k in 0..u64::from(per_second) {
                let mut f = base.clone();
                f.at_ms = SIM_EPOCH_MS + s * 1000 + k * step;
                batch.push(f);
            }
        }
        let t0 = cpu();
        for f in &batch {
            rec.frame(f)?;
        }
        recorder_cpu += cpu() - t0;
        frames += batch.len() as u64;
    }
    let t0 = cpu();
    rec.finish()?;
    recorder_cpu += cpu() - t0;
    let bytes = std::fs::metadata(rec.path())
        .map_err(|e| format!("{}: {e}", rec.path().display()))?
        .len();
    let raw: u64 = {
        let read = read_telemetry(&dir)?;
        read.seconds
            .iter()
            .map(|s| serde_json::to_string(s).map_or(0, |t| t.len() as u64 + 1))
            .sum()
    };
    let day = 86_400.0 / secs.max(1) as f64;
    crate::println_safe!(
        "record telemetry: {nodes} nodes x {gpus} GPUs, {per_second} frame(s)/s/node, {hours} h simulated under full load"
    );
    crate::println_safe!(
        "  {} node-second lines, {:.1} MB gzip ({:.1} MB as JSON), {:.1}x",
        rec.lines(),
        bytes as f64 / 1e6,
        raw as f64 / 1e6,
        raw as f64 / bytes.max(1) as f64
    );
    crate::println_safe!(
        "  24 h of {} GPUs: {:.0} MB gzip",
        nodes as u64 * u64::from(gpus),
        bytes as f64 * day / 1e6
    );
    crate::println_safe!(
        "  recorder CPU {:.2} s for {frames} frames: {:.1} us per frame, {:.2} us per GPU-sample",
        recorder_cpu,
        recorder_cpu * 1e6 / frames.max(1) as f64,
        recorder_cpu * 1e6 / (frames.max(1) as f64 * f64::from(gpus.max(1)))
    );
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(());
    }
    let summary = crate::record::Summary {
        schema: crate::record::SUMMARY_SCHEMA,
        run_id: "bench-record".into(),
        run_dir: dir.display().to_string(),
        inventory: "<simulated>".into(),
        plan: "<embedded>/default.toml".into(),
        baseline: None,
        burnin_version: env!("CARGO_PKG_VERSION").into(),
        started_ms: SIM_EPOCH_MS,
        ended_ms: Some(SIM_EPOCH_MS + secs * 1000),
        nodes: Vec::new(),
        phases: Vec::new(),
        verdict: None,
        interrupted: false,
    };
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("summary.json"), text + "\n")
        .and_then(|_| std::fs::write(dir.join("events.jsonl"), ""))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    crate::println_safe!("  kept in {}", dir.display());
    Ok(())
}

/// This process's resident and peak resident memory, kB (`VmRSS`, `VmHWM`), where the kernel
/// says.
pub fn memory_kb() -> (Option<u64>, Option<u64>) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Feed the simulated cluster (`nodes` × `gpus`, the demo's faults) into a console's state at
/// 1 Hz for `hours` simulated, and say after each simulated hour how much memory the process
/// holds. What a console adds on top (drawing, the terminal) is not in it; the sources'
/// decoding is `bench ingest`'s.
pub fn console(hours: f64, nodes: usize, gpus: u32, mut say: impl FnMut(String)) {
    use crate::app::state::{Event, State};
    let mut config = SimConfig::demo(1);
    config.nodes = nodes;
    config.gpus_per_node = gpus;
    let mut sim = SimCluster::new(config);
    let mut state = State::new(Vec::new(), Vec::new(), "bench console", (160, 48));
    let total_s = (hours * 3600.0).round() as u64;
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    let (rss0, _) = memory_kb();
    say(format!(
        "burnin bench console: {nodes} nodes × {gpus} GPUs at 1 Hz for {hours} simulated hour(s), \
         the demo's faults; resident memory before: {} kB",
        rss0.map_or("n/a".into(), |v| v.to_string())
    ));
    say("sim hour   RSS kB   peak kB   findings   CPU s so far".into());
    for s in 0..=total_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            state.update(Event::Source(e));
        }
        if s % 3600 == 0 || s == total_s {
            let (rss, hwm) = memory_kb();
            let show = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
            say(format!(
                "{:>8.2} {:>8} {:>9} {:>10} {:>14.1}",
                s as f64 / 3600.0,
                show(rss),
                show(hwm),
                state.shown().1.len(),
                (thread_cpu() - cpu0).as_secs_f64()
            ));
        }
    }
    let cpu = (thread_cpu() - cpu0).as_secs_f64();
    say(format!(
        "{total_s} simulated seconds in {:.1} s wall, {cpu:.1} s CPU: {:.0} µs of CPU per simulated second ({} GPU-samples)",
        wall0.elapsed().as_secs_f64(),
        cpu * 1e6 / total_s.max(1) as f64,
        total_s * nodes as u64 * u64::from(gpus)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_bench_reports_each_simulated_hour_and_the_cost() {
        let mut lines = Vec::new();
        console(0.02, 2, 2, |l| lines.push(l));
        assert!(
            lines[0].starts_with("burnin bench console: 2 nodes × 2 GPUs"),
            "{lines:?}"
        );
        // The start and the end (72 simulated seconds), then the cost line.
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[4].contains("72 simulated seconds"), "{lines:?}");
        assert!(lines[4].contains("288 GPU-samples"), "{lines:?}");
    }

    #[test]
    fn every_line_is_decoded_and_stored() {
        let figures = measure(2, 4, 3, 2);
        // 2 nodes x 4 GPUs x 3 s per round: nothing was dropped as garbled or undecoded.
        assert_eq!(figures.cold.samples, 24);
        assert!(figures.warm.iter().all(|r| r.samples == 24));
        assert!(figures.decode_only.iter().all(|r| r.samples == 24));
        let text = figures.report(2, 4, 3);
        assert!(text.contains("decode+store, warm store, round 2"), "{text}");
        assert!(
            text.starts_with("burnin bench ingest: 2 nodes x 4 GPUs"),
            "{text}"
        );
    }

    #[test]
    fn warm_rounds_carry_on_in_time() {
        let mut config = SimConfig::demo(1);
        config.nodes = 1;
        let mut sim = SimCluster::new(config);
        let first = agent_lines(&mut sim, 1, 0, 2);
        let second = agent_lines(&mut sim, 1, 2, 2);
        let mut store = ClusterStore::new();
        let mut d = Decoder::new();
        ingest(&mut store, &mut d, &first);
        ingest(&mut store, &mut d, &second);
        // Four one-second slots: the second batch extended the history, not overwrote it.
        let gpu = &store.nodes[0].gpus[0];
        assert_eq!(gpu.power_watts.len(), 4);
    }
}
