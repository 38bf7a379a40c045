//! `burnin agent`: runs on a node, writes the hello and then one frame per period to stdout as
//! NDJSON (see `wire`). It exits as soon as a write fails, which is what happens when
//! the SSH session that started it goes away: no orphans on the node.

pub mod cpu;
pub mod exporter;
pub mod fabric;
pub mod gpm_cadence;
pub mod nvml;
pub mod system;
pub mod topology;

use std::io::Write;
use std::time::{Duration, Instant};

use crate::agent::cpu::{process_cpu, thread_cpu};
use crate::agent::exporter::Exporter;
use crate::agent::fabric::FabricThread;
use crate::agent::nvml::NvmlSampler;
use crate::model::units::Period;
use crate::model::{NodeFrame, NodeHello, now_ms};
use crate::sim::{Fault, FaultKind, SimCluster, SimConfig, SimLoad};
use crate::wire::{WireMessage, encode};

/// `burnin agent` options.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArgs {
    /// Sample period: `1s`, `500ms`, or milliseconds.
    #[arg(long, default_value = "1s", value_parser = crate::model::units::parse_period)]
    pub interval: Period,
    /// Simulated GPUs instead of NVML (tests, demos behind real SSH).
    #[arg(long)]
    pub sim: bool,
    /// With --sim: number of GPUs (1 to 64).
    #[arg(long, default_value_t = 8, requires = "sim", value_parser = crate::config::inventory::gpu_count)]
    pub gpus: u32,
    /// With --sim: idle or full.
    #[arg(long, default_value = "idle", requires = "sim")]
    pub load: String,
    /// With --sim: inject a fault on a GPU, NAME:GPU[@S] (repeatable), e.g. stall:3, or
    /// xid79:0@30 (from 30 s after the agent starts).
    #[arg(long = "fault", value_name = "NAME:GPU[@S]", requires = "sim")]
    pub faults: Vec<String>,
    /// With --sim: seed.
    #[arg(long, default_value_t = 1, requires = "sim")]
    pub seed: u64,
    /// Stop after this many frames (measurements, tests).
    #[arg(long)]
    pub frames: Option<u64>,
    /// On exit, print frames, GPU-samples and CPU time per GPU-sample to stderr.
    #[arg(long)]
    pub stats: bool,
    /// With --stats, also split the tick path into GPU reads, encode+write and the rest (four
    /// reads of the thread's CPU clock per tick, which the split then includes).
    #[arg(long, requires = "stats")]
    pub stats_split: bool,
    /// Where sysfs is (RDMA ports are read from ROOT/class/infiniband): another tree in tests,
    /// or in containers that mount the host's /sys elsewhere.
    #[arg(long, default_value = "/sys", value_name = "ROOT")]
    pub sysfs_root: std::path::PathBuf,
    /// Also serve the latest frame as Prometheus text at http://ADDR/metrics, with
    /// dcgm-exporter's names and labels (e.g. 127.0.0.1:9401, 0.0.0.0:9401; port 0 picks one,
    /// said on stderr).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// With --listen: write no frames to stdout, only serve /metrics (an exporter run by a
    /// service manager rather than by a console over SSH).
    #[arg(long, requires = "listen")]
    pub no_frames: bool,
    /// The node name the agent reports (hello, frames, and the `Hostname` label of --listen)
    /// instead of the host's own: several simulated agents on one machine each need one.
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,
    /// Time every NVML read on this node and print the table, then exit.
    #[arg(long, conflicts_with = "sim")]
    pub probe_costs: bool,
}

/// Something that can fill a frame for every GPU of this host.
pub trait Sampler {
    /// The hello line's content.
    fn hello(&mut self) -> NodeHello;
    /// One frame, stamped now.
    fn sample(&mut self) -> NodeFrame;
    /// Messages worth sending as `{"error":…}` lines (background trouble), drained.
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

impl Sampler for NvmlSampler {
    fn hello(&mut self) -> NodeHello {
        NvmlSampler::hello(self)
    }
    fn sample(&mut self) -> NodeFrame {
        NvmlSampler::sample(self)
    }
    fn notes(&mut self) -> Vec<String> {
        self.take_notes()
    }
}

/// A node without usable GPUs (no driver, NVML broken): hello and frames with no GPUs, the
/// reason sent once as an error line.
pub struct NoGpuSampler {
    reason: Option<String>,
}

impl Sampler for NoGpuSampler {
    fn hello(&mut self) -> NodeHello {
        let host = nvml::hostname();
        NodeHello {
            node: host.clone(),
            host,
            agent_version: format!("burnin {}", env!("CARGO_PKG_VERSION")),
            driver: None,
            cuda: None,
            gpus: Vec::new(),
            topology: None,
            system: Some(Box::new(system::read_system())),
            unavailable: Vec::new(),
        }
    }
    fn sample(&mut self) -> NodeFrame {
        NodeFrame {
            node: nvml::hostname(),
            at_ms: now_ms(),
            gpus: Vec::new(),
            nics: Vec::new(),
            netdevs: Vec::new(),
        }
    }
    fn notes(&mut self) -> Vec<String> {
        self.reason.take().into_iter().collect()
    }
}

/// The simulator's one node, stamped with the real clock.
pub struct SimNodeSampler {
    cluster: SimCluster,
    load: SimLoad,
    started: Instant,
}

impl SimNodeSampler {
    /// A node of `gpus` simulated B300 with faults given as `NAME:GPU[@SECONDS]` (from that
    /// many seconds after the agent starts; default at once).
    pub fn new(gpus: u32, load: SimLoad, faults: &[String], seed: u64) -> Result<Self, String> {
        let mut config = SimConfig::demo(seed);
        config.nodes = 1;
        config.gpus_per_node = gpus.max(1);
        config.autorun = false;
        config.faults = faults
            .iter()
            .map(|f| {
                let (name, at) = f
                    .split_once(':')
                    .ok_or_else(|| format!("--fault {f:?}: use NAME:GPU[@S], e.g. stall:3"))?;
                let (gpu, from_s) = match at.split_once('@') {
                    Some((g, s)) => (
                        g,
                        s.parse::<u64>().map_err(|_| {
                            format!("--fault {f:?}: seconds after @ must be a number")
                        })?,
                    ),
                    None => (at, 0),
                };
                let gpu: u32 = gpu
                    .parse()
                    .map_err(|_| format!("--fault {f:?}: GPU must be a number"))?;
                if gpu >= config.gpus_per_node {
                    return Err(format!(
                        "--fault {f:?}: this node has {} GPUs",
                        config.gpus_per_node
                    ));
                }
                Ok(Fault {
                    kind: FaultKind::parse(name)?,
                    node: 0,
                    gpu,
                    from_s,
                    until_s: None,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            cluster: SimCluster::new(config),
            load,
            started: Instant::now(),
        })
    }
}

impl Sampler for SimNodeSampler {
    fn hello(&mut self) -> NodeHello {
        let mut h = self.cluster.hello(0);
        let host = nvml::hostname();
        h.node = host.clone();
        h.host = host;
        h
    }
    fn sample(&mut self) -> NodeFrame {
        let s = self.started.elapsed().as_secs();
        let mut f = self.cluster.node_frame(0, s, self.load);
        f.node = nvml::hostname();
        f.at_ms = now_ms();
        for g in &mut f.gpus {
            for x in &mut g.xid_events {
                x.at_ms = f.at_ms;
            }
        }
        f
    }
}

/// Another sampler under a name of its own (`--node-name`).
pub struct Renamed {
    /// The sampler whose readings are sent.
    pub inner: Box<dyn Sampler>,
    /// The name they go out under.
    pub name: String,
}

impl Sampler for Renamed {
    fn hello(&mut self) -> NodeHello {
        let mut h = self.inner.hello();
        h.node.clone_from(&self.name);
        h.host.clone_from(&self.name);
        h
    }
    fn sample(&mut self) -> NodeFrame {
        let mut f = self.inner.sample();
        f.node.clone_from(&self.name);
        f
    }
    fn notes(&mut self) -> Vec<String> {
        self.inner.notes()
    }
}

/// What one agent run did (for `--stats` and the measurements in the closing notes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentStats {
    /// Frames written.
    pub frames: u64,
    /// GPU samples written (frames × GPUs).
    pub gpu_samples: u64,
    /// CPU time of the sampling thread only (the tick path: reads, encode and write).
    pub tick_cpu: Duration,
    /// The part of `tick_cpu` spent reading the GPUs (`Sampler::sample`), which grows with the
    /// GPU count; the rest (encode, write) is paid once per frame.
    pub read_cpu: Duration,
    /// The part of `tick_cpu` spent encoding and writing frames.
    pub write_cpu: Duration,
    /// CPU time of the whole process (background threads included).
    pub process_cpu: Duration,
    /// Process CPU time after the first [`STEADY_AFTER`] frames, when start-up (loading NVML,
    /// the hello, the first GPM round, starting threads) is over: what a long run pays.
    pub steady_cpu: Duration,
    /// GPU samples written after the first [`STEADY_AFTER`] frames.
    pub steady_samples: u64,
    /// Wall-clock time after the first [`STEADY_AFTER`] frames.
    pub steady_wall: Duration,
    /// Wall-clock time of the whole run.
    pub run_wall: Duration,
    /// CPU time of each background thread ([`BACKGROUND`] order) over the whole run, start-up
    /// included.
    pub background_cpu: [Duration; 3],
    /// The same after the first [`STEADY_AFTER`] frames, over `steady_wall`: what each thread
    /// costs a long run.
    pub background_steady_cpu: [Duration; 3],
}

/// The background threads `--stats` reports, by name, in [`AgentStats::background_cpu`] order.
pub const BACKGROUND: [&str; 3] = ["NVML", "Xid", "fabric"];

/// Each background thread's CPU time now, in [`BACKGROUND`] order.
fn background_now() -> [Duration; 3] {
    use crate::agent::cpu::{FABRIC_THREAD, NVML_SLOW_THREAD, XID_THREAD};
    [
        NVML_SLOW_THREAD.total(),
        XID_THREAD.total(),
        FABRIC_THREAD.total(),
    ]
}

/// Whether and how finely `run` measures itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Nothing per tick (the agent as it runs on a node).
    Totals,
    /// The split of the tick path (reads, encode+write, the rest): four reads of the thread's
    /// CPU clock per tick, each a system call of about a microsecond in a VM, which the
    /// split's own figures then include.
    Split,
}

/// Frames after which the agent counts as started, for [`AgentStats::steady_cpu`].
pub const STEADY_AFTER: u64 = 10;

impl AgentStats {
    /// The `--stats` line. The goal's figure first: the whole process's CPU per GPU-sample
    /// after start-up. Then where it goes: the background threads per second (their cost is
    /// per node or per GPU per second, whatever the interval), and, when measured, the tick
    /// path split per GPU-sample and per frame, so a one-GPU measurement says what an
    /// eight-GPU node would pay.
    pub fn summary(&self, measure: Measure) -> String {
        let named = |cpu: &[Duration; 3], rate: &dyn Fn(Duration) -> f64| {
            BACKGROUND
                .iter()
                .zip(cpu)
                .map(|(name, d)| format!("{name} {:.0}", rate(*d)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let per = |d: Duration, n: u64| {
            if n == 0 {
                0.0
            } else {
                d.as_secs_f64() * 1e6 / n as f64
            }
        };
        let mut text = format!(
            "burnin agent: {} frames, {} GPU-samples; process CPU per GPU-sample after frame \
             {STEADY_AFTER}: {}; whole run {:.1} µs ({:.3} s)",
            self.frames,
            self.gpu_samples,
            if self.steady_samples == 0 {
                "n/a (too few frames)".to_string()
            } else {
                format!("{:.1} µs", per(self.steady_cpu, self.steady_samples))
            },
            per(self.process_cpu, self.gpu_samples),
            self.process_cpu.as_secs_f64(),
        );
        let wall = self.steady_wall.as_secs_f64();
        if wall > 0.0 {
            let per_second = |d: Duration| d.as_secs_f64() * 1e6 / wall;
            text.push_str(&format!(
                "; µs of CPU per second after frame {STEADY_AFTER}: process {:.0} (background \
                 threads: {})",
                per_second(self.steady_cpu),
                named(&self.background_steady_cpu, &per_second),
            ));
        }
        let run_wall = self.run_wall.as_secs_f64();
        if run_wall > 0.0 {
            let per_second = |d: Duration| d.as_secs_f64() * 1e6 / run_wall;
            text.push_str(&format!(
                "; background threads over the whole run, start-up included, µs/s: {}",
                named(&self.background_cpu, &per_second),
            ));
        }
        if measure == Measure::Split {
            text.push_str(&format!(
                "; tick path {:.1} µs per GPU-sample (GPU reads {:.1}; per frame: encode+write \
                 {:.1} µs, sleep and wake-up {:.1} µs)",
                per(self.tick_cpu, self.gpu_samples),
                per(self.read_cpu, self.gpu_samples),
                per(self.write_cpu, self.frames),
                per(
                    self.tick_cpu
                        .saturating_sub(self.read_cpu)
                        .saturating_sub(self.write_cpu),
                    self.frames
                ),
            ));
        }
        text
    }
}

/// Write the hello, then frames every `interval`, until `max_frames` or a failed write.
pub fn run(
    sampler: &mut dyn Sampler,
    fabric: Option<&FabricThread>,
    exporter: Option<&Exporter>,
    interval: Period,
    max_frames: Option<u64>,
    measure: Measure,
    out: &mut dyn Write,
) -> AgentStats {
    let mut stats = AgentStats::default();
    let split = measure == Measure::Split;
    let clock = || if split { thread_cpu() } else { Duration::ZERO };
    let tick_cpu_start = thread_cpu();
    let started = Instant::now();
    let hello = sampler.hello();
    if let Some(e) = exporter {
        e.hello(&hello);
    }
    if out
        .write_all(encode(&WireMessage::Hello(hello)).as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        return stats;
    }
    let mut next = Instant::now();
    // One buffer for every tick's lines: the tick path allocates nothing for encoding.
    let mut text: Vec<u8> = Vec::with_capacity(4096);
    let mut steady_from: Option<(Duration, [Duration; 3], u64, Instant)> = None;
    loop {
        if max_frames.is_some_and(|m| stats.frames >= m) {
            break;
        }
        if stats.frames == STEADY_AFTER && steady_from.is_none() {
            steady_from = Some((
                process_cpu(),
                background_now(),
                stats.gpu_samples,
                Instant::now(),
            ));
        }
        let read_start = clock();
        let mut frame = sampler.sample();
        stats.read_cpu += clock().saturating_sub(read_start);
        if let Some(f) = fabric {
            (frame.nics, frame.netdevs) = f.latest();
        }
        let write_start = clock();
        text.clear();
        for note in sampler.notes() {
            text.extend_from_slice(encode(&WireMessage::Error(note)).as_bytes());
        }
        stats.gpu_samples += frame.gpus.len() as u64;
        stats.frames += 1;
        crate::wire::scan::write_frame_line(&frame, &mut text);
        if let Some(e) = exporter {
            e.frame(frame);
        }
        if out.write_all(&text).and_then(|_| out.flush()).is_err() {
            // stdout closed: the SSH session is gone.
            break;
        }
        stats.write_cpu += clock().saturating_sub(write_start);
        if max_frames.is_some_and(|m| stats.frames >= m) {
            break;
        }
        next += interval.duration();
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Fell behind (suspended, overloaded): skip missed ticks rather than burst.
            next = now;
        }
    }
    stats.tick_cpu = thread_cpu().saturating_sub(tick_cpu_start);
    stats.process_cpu = process_cpu();
    stats.run_wall = started.elapsed();
    stats.background_cpu = background_now();
    if let Some((cpu, background, samples, at)) = steady_from {
        stats.steady_cpu = stats.process_cpu.saturating_sub(cpu);
        for (k, start) in background.iter().enumerate() {
            stats.background_steady_cpu[k] = stats.background_cpu[k].saturating_sub(*start);
        }
        stats.steady_samples = stats.gpu_samples - samples;
        stats.steady_wall = at.elapsed();
    }
    stats
}

/// `burnin bench agent`: the real agent (NVML sampler, its background threads, the fabric
/// thread, frames encoded and written to /dev/null) for `frames` frames, with `slots` GPU slots
/// read round robin from this host's GPUs, so a one-GPU machine pays for every call an
/// `slots`-GPU node would make. Returns the report: what was read, then the `--stats` line.
pub fn bench(
    slots: u32,
    interval: Period,
    frames: u64,
    measure: Measure,
) -> Result<String, nvml::NvmlUnavailable> {
    let mut sampler = NvmlSampler::open_slots(Some(slots))?;
    let hello = sampler.hello();
    let physical = sampler.physical_gpus();
    let fabric = FabricThread::start(
        std::path::PathBuf::from("/sys"),
        interval.duration().max(fabric::MIN_PERIOD),
    );
    // A real write per frame, as to the pipe of an SSH session.
    let mut out: Box<dyn Write> = match std::fs::OpenOptions::new().write(true).open("/dev/null") {
        Ok(f) => Box::new(f),
        Err(_) => Box::new(std::io::sink()),
    };
    let stats = run(
        &mut sampler,
        Some(&fabric),
        None,
        interval,
        Some(frames),
        measure,
        &mut out,
    );
    Ok(format!(
        "burnin bench agent: {} GPU slots over {physical} physical GPU(s) ({}), every {} ms, {} \
         frames to /dev/null{}\n{}\n",
        hello.gpus.len(),
        hello.gpus.first().map_or("none", |g| g.name.as_str()),
        interval.millis(),
        stats.frames,
        if hello.gpus.len() > physical {
            "; slots repeat GPUs: the calls and their CPU are real, the GPUs behind them are not \
             distinct, and a GPU read again right after itself answers cheaper than one read \
             once a round (a GPM sample ~5x: see --probe-costs), so this understates a node \
             with that many GPUs"
        } else {
            ""
        },
        stats.summary(measure)
    ))
}

/// `burnin agent`: returns the exit code.
pub fn main(args: &AgentArgs) -> i32 {
    if args.probe_costs {
        return match nvml::probe_costs(200) {
            Ok(table) => {
                crate::print_safe!("{table}");
                0
            }
            Err(e) => {
                crate::eprintln_safe!("burnin agent: {e}");
                1
            }
        };
    }
    let mut sampler: Box<dyn Sampler> = if args.sim {
        let load = match SimLoad::parse(&args.load) {
            Ok(l) => l,
            Err(e) => {
                crate::eprintln_safe!("burnin agent: {e}");
                return 2;
            }
        };
        match SimNodeSampler::new(args.gpus, load, &args.faults, args.seed) {
            Ok(s) => Box::new(s),
            Err(e) => {
                crate::eprintln_safe!("burnin agent: {e}");
                return 2;
            }
        }
    } else {
        match NvmlSampler::open() {
            Ok(s) => Box::new(s),
            Err(e) => {
                // A node whose driver is broken is exactly one to keep watching: stream its
                // fabric with no GPUs, and say why on the wire (and to a person at a shell).
                crate::eprintln_safe!("burnin agent: {e}; streaming without GPUs");
                Box::new(NoGpuSampler {
                    reason: Some(e.to_string()),
                })
            }
        }
    };
    if let Some(name) = &args.node_name {
        sampler = Box::new(Renamed {
            inner: sampler,
            name: name.clone(),
        });
    }
    // The simulator makes its own NICs; a real node's come from sysfs.
    let fabric = (!args.sim).then(|| {
        FabricThread::start(
            args.sysfs_root.clone(),
            args.interval.duration().max(fabric::MIN_PERIOD),
        )
    });
    let exporter = match args.listen.as_deref().map(Exporter::listen) {
        None => None,
        Some(Ok((exporter, addr))) => {
            crate::eprintln_safe!("burnin agent: serving metrics at http://{addr}/metrics");
            Some(exporter)
        }
        Some(Err(e)) => {
            crate::eprintln_safe!(
                "burnin agent: cannot listen on {}: {e}",
                args.listen.as_deref().unwrap_or_default()
            );
            return 2;
        }
    };
    let stdout = std::io::stdout();
    let mut out: Box<dyn Write> = if args.no_frames {
        Box::new(std::io::sink())
    } else {
        Box::new(stdout.lock())
    };
    let measure = if args.stats_split {
        Measure::Split
    } else {
        Measure::Totals
    };
    let stats = run(
        sampler.as_mut(),
        fabric.as_ref(),
        exporter.as_ref(),
        args.interval,
        args.frames,
        measure,
        &mut out,
    );
    if args.stats {
        crate::eprintln_safe!("{}", stats.summary(measure));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Decoded, Decoder};

    #[test]
    fn sim_agent_writes_hello_then_frames() {
        let mut s = SimNodeSampler::new(4, SimLoad::Full, &["stall:2".into()], 1).expect("sim");
        let mut out = Vec::new();
        let stats = run(
            &mut s,
            None,
            None,
            Period::MILLISECOND,
            Some(3),
            Measure::Split,
            &mut out,
        );
        assert_eq!((stats.frames, stats.gpu_samples), (3, 12));
        let text = String::from_utf8(out).expect("utf8");
        let mut d = Decoder::new();
        let msgs: Vec<_> = text.lines().map(|l| d.decode(l)).collect();
        assert!(
            matches!(msgs[0], Ok(Decoded::Message(WireMessage::Hello(ref h))) if h.gpus.len() == 4)
        );
        let Ok(Decoded::Message(WireMessage::Frame(f))) = &msgs[3] else {
            panic!("{:?}", msgs[3]);
        };
        assert!(
            f.gpus[2].utilization_pct.unwrap_or(100.0) < 5.0,
            "stalled GPU"
        );
        assert!(
            f.gpus[1].utilization_pct.unwrap_or(0.0) > 80.0,
            "loaded peer"
        );
    }

    /// The `--stats` figures are arithmetic on the counters: checked on hand-made counters, so
    /// a wrong divisor (per frame against per GPU-sample) shows.
    #[test]
    fn stats_summary_divides_by_the_right_counts() {
        let ms = Duration::from_millis;
        let stats = AgentStats {
            frames: 100,
            gpu_samples: 800,
            tick_cpu: ms(40),
            read_cpu: ms(24),
            write_cpu: ms(6),
            process_cpu: ms(160),
            steady_cpu: ms(144),
            steady_samples: 720,
            steady_wall: Duration::from_secs(9),
            run_wall: Duration::from_secs(10),
            background_cpu: [ms(10), ms(2), ms(5)],
            background_steady_cpu: [ms(9), ms(0), ms(3)],
        };
        let totals = stats.summary(Measure::Totals);
        // 144 ms over 720 samples; 160 ms over 800; 144 ms over 9 s.
        assert!(totals.contains("after frame 10: 200.0 µs"), "{totals}");
        assert!(totals.contains("whole run 200.0 µs (0.160 s)"), "{totals}");
        assert!(totals.contains("after frame 10: process 16000"), "{totals}");
        // 9, 0 and 3 ms over the 9 s after frame 10; 10, 2 and 5 ms over the 10 s run.
        assert!(
            totals.contains("process 16000 (background threads: NVML 1000, Xid 0, fabric 333)"),
            "{totals}"
        );
        assert!(
            totals.contains("start-up included, µs/s: NVML 1000, Xid 200, fabric 500"),
            "{totals}"
        );
        assert!(!totals.contains("tick path"), "{totals}");
        let split = stats.summary(Measure::Split);
        // 40 ms over 800 samples; 24 ms over 800; 6 ms over 100 frames; the rest 10 ms over 100.
        assert!(
            split.contains(
                "tick path 50.0 µs per GPU-sample (GPU reads 30.0; per frame: encode+write \
                 60.0 µs, sleep and wake-up 100.0 µs)"
            ),
            "{split}"
        );
        let short = AgentStats {
            frames: 3,
            gpu_samples: 3,
            ..AgentStats::default()
        };
        let text = short.summary(Measure::Totals);
        assert!(text.contains("n/a (too few frames)"), "{text}");
        assert!(!text.contains("per second"), "{text}");
    }

    #[test]
    fn stops_when_stdout_closes() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut s = SimNodeSampler::new(1, SimLoad::Idle, &[], 1).expect("sim");
        let stats = run(
            &mut s,
            None,
            None,
            Period::MILLISECOND,
            None,
            Measure::Totals,
            &mut Closed,
        );
        assert_eq!(stats.frames, 0);
    }

    #[test]
    fn fault_specs_are_checked() {
        assert!(SimNodeSampler::new(8, SimLoad::Idle, &["stall".into()], 1).is_err());
        assert!(SimNodeSampler::new(8, SimLoad::Idle, &["stall:9".into()], 1).is_err());
        assert!(SimNodeSampler::new(8, SimLoad::Idle, &["melt:1".into()], 1).is_err());
        assert!(SimNodeSampler::new(8, SimLoad::Idle, &["xid79:0".into()], 1).is_ok());
    }
}
