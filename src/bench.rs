//! `burnin bench ingest`: what the console pays per GPU-sample to decode agent lines and store
//! them, on the machine it runs on (issue 3's goal: ≥ 1 M GPU-samples/s on one core).
//!
//! The criterion bench (`benches/render.rs`, `decode+store`) feeds every iteration into a fresh
//! store, so each of its rounds also pays for allocating and first touching every GPU's history.
//! A console on a burn-in allocates that once and then ingests for days; this bench measures
//! both: a cold round into a fresh store, then warm rounds that carry on in the same store with
//! later timestamps. It lives in the main binary so the figure can be taken on a GPU host with
//! the binary already carried there, and it is deterministic enough to run under callgrind.

use std::time::{Duration, Instant};

use crate::cluster::{ClusterStore, median};
use crate::telemetry::SourceEvent;
use crate::telemetry::cpu::thread_cpu;
use crate::telemetry::sim::{SIM_EPOCH_MS, SimCluster, SimConfig, SimLoad};
use crate::telemetry::wire::{Decoded, Decoder, WireMessage, encode};

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

#[cfg(test)]
mod tests {
    use super::*;

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
