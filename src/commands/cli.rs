//! The command line (clap): every subcommand and its arguments, each number range-checked where
//! it is read. `commands::dispatch` runs them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A terminal console for GPU-cluster burn-in and acceptance.
#[derive(Debug, Parser)]
#[command(
    name = "burnin",
    version,
    about,
    long_about = None,
    after_help = "Examples:\n  burnin demo                   the console on a built-in simulated cluster\n  burnin init && burnin watch   write burnin.toml and plan.toml, then watch the nodes\n  burnin run --json             the plan, headless; exit code = verdict\n  burnin report burnin-runs/RUN_ID"
)]
pub struct Cli {
    /// Inventory and plan file.
    #[arg(
        short = 'c',
        long = "config",
        global = true,
        default_value = "burnin.toml"
    )]
    pub config: PathBuf,
    /// OpenSSH client config passed to ssh as -F.
    #[arg(long = "ssh-config", global = true)]
    pub ssh_config: Option<PathBuf>,
    /// Log file (the screen is the UI; diagnostics go here).
    #[arg(long = "log-file", global = true, env = "BURNIN_LOG")]
    pub log_file: Option<PathBuf>,
    /// What to do (default: watch).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Look options shared by every console.
#[derive(Debug, Clone, Args, Default)]
pub struct LookArgs {
    /// Theme: a shipped name (default, light, high-contrast, mono) or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
    /// Layout: a shipped name (overview, gpus, nccl, storage, triage, fabric) or a TOML file.
    #[arg(long)]
    pub layout: Option<String>,
    /// Redraw at most this many times a second (1 to 240).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=240))]
    pub fps: u32,
}

/// How a console over a simulation or a record runs: its pace, how long, where it draws.
#[derive(Debug, Clone, Args)]
pub struct PlayArgs {
    /// Run seconds shown per wall second, 1/16 to 1024 (the demo's plan takes about 6
    /// simulated minutes).
    #[arg(long, default_value_t = 1.0, value_parser = play_speed)]
    pub speed: f64,
    /// Leave after this many wall seconds (at most a year).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    pub duration: Option<u64>,
    /// Draw into an off-screen buffer of WxH instead of the terminal (for measurements; width
    /// 20 to 1000, height 5 to 1000).
    #[arg(long, value_name = "WxH", value_parser = screen_size)]
    pub headless: Option<(u16, u16)>,
    /// Look.
    #[command(flatten)]
    pub look: LookArgs,
}

/// The simulated cluster's knobs.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Seed: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Inject only these faults (repeatable): stall, thermal, xid79, nvlink-crc, aistor-p99,
    /// loader-wait, port-200g, symbol-errors, hang, ecc, pcie-replay, slow-clock, slow-storage,
    /// gds-compat. Default: the first eight, on the demo timeline.
    #[arg(long = "fault", value_name = "NAME")]
    pub faults: Vec<String>,
    /// Inject no faults: every phase should pass.
    #[arg(long, conflicts_with = "faults")]
    pub no_faults: bool,
}

/// The longest span a seconds option takes (`--duration`, replay's `--at`): a year, far past a
/// 72-hour burn-in and far from overflowing a clock.
pub const MAX_SECONDS: u64 = 366 * 86_400;

/// Counts read as everywhere else (defined in `model::units`).
pub use crate::model::units::count;

/// A console's pace: 1/16 to 1024 run seconds per wall second.
pub fn play_speed(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (1.0 / 16.0..=1024.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: give a speed from 0.0625 to 1024")),
    }
}

/// `run --demo`'s pace: 0 (as fast as it can) or 1/16 to 1024.
pub fn run_speed(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => play_speed(s).map_err(|e| format!("{e}, or 0 for as fast as it can")),
    }
}

/// `WxH` of an off-screen console: width 20 to 1000, height 5 to 1000.
pub fn screen_size(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("{s:?}: give WxH, width 20 to 1000 and height 5 to 1000, e.g. 200x60");
    let (w, h) = s.trim().split_once('x').ok_or_else(bad)?;
    match (w.parse::<u16>(), h.parse::<u16>()) {
        (Ok(w), Ok(h)) if (20..=1000).contains(&w) && (5..=1000).contains(&h) => Ok((w, h)),
        _ => Err(bad()),
    }
}

/// `localize --screen`: pairs or groups.
pub fn parse_screen(s: &str) -> Result<crate::phases::localize::search::Screen, String> {
    use crate::phases::localize::search::Screen;
    match s {
        "pairs" => Ok(Screen::Pairs),
        "groups" => Ok(Screen::Groups),
        _ => Err(format!("{:?}: pairs or groups", crate::model::excerpt(s))),
    }
}

/// A share in percent: finite, above 0 and at most 100.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!(
            "{:?}: a percentage above 0 and at most 100",
            crate::model::excerpt(s)
        )),
    }
}

/// `bench record --hours`: above 0 and at most 720 (30 days).
pub fn bench_hours(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 720.0 => Ok(v),
        _ => Err(format!("{s:?}: give hours above 0 and at most 720")),
    }
}

/// Durations on the command line read as everywhere else (defined in `model::units`).
pub use crate::model::units::parse_duration;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every command and subcommand, with its path (`burnin bench record`).
    fn every_command(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            every_command(sub, format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_subcommand_shows_examples_that_parse() {
        use clap::CommandFactory;
        let mut all = Vec::new();
        every_command(&Cli::command(), "burnin".into(), &mut all);
        assert!(all.len() > 20, "{}", all.len());
        for (path, cmd) in &all {
            if cmd.get_name() == "help" {
                continue;
            }
            let after = cmd
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let examples: Vec<&str> = after
                .strip_prefix("Examples:\n")
                .unwrap_or_else(|| panic!("`{path} --help` has no examples"))
                .lines()
                .collect();
            assert!(!examples.is_empty(), "{path}");
            for line in examples {
                // Each command of the line, up to a pipe or a redirect, as clap reads it;
                // what follows two spaces is the example's comment.
                let line = line.trim().split("  ").next().unwrap_or("");
                for part in line.split("&&") {
                    let words: Vec<&str> = part
                        .split(['|', '>'])
                        .next()
                        .unwrap_or("")
                        .split_whitespace()
                        .collect();
                    assert_eq!(words.first(), Some(&"burnin"), "{path}: {line}");
                    if let Err(e) = Cli::try_parse_from(&words) {
                        panic!("{path}: example `{line}` does not parse: {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn look_options_name_every_shipped_layout_and_theme() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let demo = cmd.find_subcommand_mut("demo").expect("demo");
        let help = demo.render_long_help().to_string();
        for (file, _) in crate::app::layout::EMBEDDED
            .iter()
            .chain(crate::app::theme::EMBEDDED)
        {
            let name = file.trim_end_matches(".toml");
            assert!(help.contains(name), "--help misses {name}: {help}");
        }
    }

    #[test]
    fn durations_parse_and_nonsense_is_an_error() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        for bad in [
            "25h",
            "5d",
            "1e30s",
            "0s",
            "0.0000001ms",
            "-1s",
            "fast",
            "",
            "1.5.2s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(screen_size("200x60"), Ok((200, 60)));
        for bad in ["200", "19x24", "80x4", "65535x65535", "x", "80x24x2"] {
            assert!(screen_size(bad).is_err(), "{bad:?}");
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Console over a built-in simulated cluster (12 nodes × 8 B300 + AIStor), faults injected.
    #[command(
        after_help = "Examples:\n  burnin demo\n  burnin demo --no-faults --speed 4\n  burnin demo --fault stall --theme light --layout nccl"
    )]
    Demo {
        /// Simulation knobs.
        #[command(flatten)]
        sim: SimArgs,
        /// Pace and screen.
        #[command(flatten)]
        play: PlayArgs,
    },
    /// Console over the cluster in burnin.toml (nodes over SSH, or local).
    #[command(
        after_help = "Examples:\n  burnin watch -c site/burnin.toml\n  burnin watch --record\n  burnin watch --resume burnin-runs/2026-12-05T0930Z-ab12"
    )]
    Watch {
        /// Look.
        #[command(flatten)]
        look: LookArgs,
        /// Take over this run (its console died): show its verdicts, re-attach to the phase
        /// still running on the nodes, and record the next phases into it.
        #[arg(long, value_name = "RUN_DIR")]
        resume: Option<PathBuf>,
        /// Open the run record now, not at the first phase start, so it is on disk from the
        /// first second, phase or not. Without it the console keeps what it sees in memory
        /// and the first phase writes that into the record it opens; a look with no phase
        /// leaves no run behind.
        #[arg(long)]
        record: bool,
    },
    /// One snapshot of every node and GPU (like nvidia-smi, for the cluster). Exit 0: every node
    /// answered with every GPU it should have; 1: a node unreachable, short of GPUs, or a GPU
    /// lost (--demo exits the same way); 2: no inventory.
    #[command(
        after_help = "Examples:\n  burnin status\n  burnin status --json | jq '.nodes[].gpus[].power_watts'\n  burnin status --demo --at 125"
    )]
    Status {
        /// Print JSON with a schema version.
        #[arg(long)]
        json: bool,
        /// Snapshot the built-in demo cluster instead of burnin.toml.
        #[arg(long)]
        demo: bool,
        /// Without --demo: how long to wait for every node to answer (default: the inventory's
        /// connect timeout plus three sample periods).
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        wait: Option<std::time::Duration>,
        /// With --demo: the simulated second to snapshot (at most an hour in: the demo's
        /// plan ends at about 6 minutes, and the snapshot steps every second up to it).
        #[arg(long, default_value_t = 130, value_name = "SECONDS",
              value_parser = clap::value_parser!(u64).range(0..=3600))]
        at: u64,
        /// With --demo: simulation knobs.
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Whether every phase of the plan can run on every node, the day before: on each node
    /// the tools each phase names and their versions, torch for the workloads, space for the
    /// run's control directory, the kernel log; here, the baseline and the runs directory.
    /// Exit 0: every phase that is set up can run everywhere; 1: something is missing; 2:
    /// could not look (no inventory, every node unreachable).
    #[command(
        after_help = "Examples:\n  burnin doctor\n  burnin doctor -c site/burnin.toml --json"
    )]
    Doctor {
        /// Print one JSON document (`schema` 1) instead of text.
        #[arg(long)]
        json: bool,
        /// Where `burnin run` would write its records.
        #[arg(long, default_value = "burnin-runs")]
        runs_dir: PathBuf,
        /// The baseline `burnin run` would read (default: burnin-baseline.json beside
        /// burnin.toml, if it exists).
        #[arg(long)]
        baseline: Option<PathBuf>,
    },
    /// Find the nodes, or links between two nodes, that make a multi-node phase slow: runs the
    /// phase's own command on groups of nodes, round by round (screen, bisect, confirm beside
    /// two good partners). Exit 0: nothing named; 1: a node or link named; 2: could not run.
    #[command(
        after_help = "Examples:\n  burnin localize\n  burnin localize --phase T7 --nodes node01,node02,node03,node04 --json\n  burnin localize --demo --sim-nodes 96 --fault bad-node:41 --fault bad-link:3-70"
    )]
    Localize {
        /// The multi-node phase whose command each group runs.
        #[arg(long, default_value = "T7")]
        phase: String,
        /// Search these nodes of the inventory only (comma-separated names).
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// The first round's partition: pairs (fewest rounds) or groups of √N (fewest tests);
        /// default: pairs from 4 nodes.
        #[arg(long, value_parser = parse_screen)]
        screen: Option<crate::phases::localize::search::Screen>,
        /// A group is slow under this share (%) of the upper quartile of the groups of its size.
        #[arg(long, default_value_t = 80.0, value_parser = parse_pct)]
        peers_pct: f64,
        /// Print one JSON document (`schema` 1) instead of text.
        #[arg(long)]
        json: bool,
        /// Search a simulated fabric instead of burnin.toml's nodes.
        #[arg(long)]
        demo: bool,
        /// With --demo: simulated nodes (2 to 4096).
        #[arg(long, default_value_t = 16, value_parser = count::<2, 4096>)]
        sim_nodes: usize,
        /// With --demo: a fabric fault, bad-node:N, bad-link:A-B or flaky-node:N (nodes from 1;
        /// repeatable).
        #[arg(long = "fault", value_parser = crate::commands::localize::parse_fabric_fault)]
        faults: Vec<crate::sim::fabric::FabricFault>,
        /// With --demo: the simulation's seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where the search's record goes (`localize-<id>/`: localize.json and each group's
        /// output under tests/).
        #[arg(long, default_value = "burnin-runs")]
        runs_dir: PathBuf,
        /// Keep the search in this run's record instead (its report then says where the fault
        /// is); the nodes' models its T0 found give each group the spec table's floors.
        #[arg(long, value_name = "RUN_DIR")]
        run: Option<PathBuf>,
    },
    /// Watch the nodes long enough to judge, then list stalled, throttled or erroring GPUs and
    /// links. Exit 0: nothing above info; 1: a warning; 2: a critical finding; 3: could not run.
    #[command(
        after_help = "Examples:\n  burnin triage\n  burnin triage --for 30s --json\n  burnin triage --demo --at 175"
    )]
    Triage {
        /// Print JSON (the `status --json` document, schema 1).
        #[arg(long)]
        json: bool,
        /// How long to watch (default: the stall window, 10 s, plus the connect timeout and
        /// three sample periods).
        #[arg(long = "for", value_parser = parse_duration, value_name = "DURATION")]
        watch_for: Option<std::time::Duration>,
        /// Judge the built-in demo cluster instead of burnin.toml (exits as on real nodes).
        #[arg(long, conflicts_with = "watch_for")]
        demo: bool,
        /// With --demo: the simulated second to judge at (triage judged every second up to
        /// it, as the console does).
        #[arg(long, default_value_t = 130, value_name = "SECONDS",
              value_parser = clap::value_parser!(u64).range(0..=3600))]
        at: u64,
        /// With --demo: simulation knobs.
        #[command(flatten)]
        sim: SimArgs,
    },
    /// On a node: sample GPUs and RDMA/Ethernet ports, write NDJSON frames to stdout (exits
    /// when stdout closes).
    #[command(
        after_help = "Examples:\n  burnin agent --interval 1s | head -3\n  burnin agent --sim --gpus 8 --fault stall:3\n  burnin agent --listen 127.0.0.1:9401 --no-frames"
    )]
    Agent(crate::agent::AgentArgs),
    /// Copy this binary to the nodes over SSH (air-gapped: no downloads).
    #[command(
        after_help = "Examples:\n  burnin deploy --dry-run\n  burnin deploy -c site/burnin.toml\n  burnin deploy --agent-binary target/aarch64-unknown-linux-gnu/release/burnin --agent-binary target/release/burnin"
    )]
    Deploy {
        /// Only say what would be copied.
        #[arg(long)]
        dry_run: bool,
        /// Send this build instead of this binary (repeatable: each node gets the one built
        /// for its architecture, e.g. an aarch64 build for Grace nodes).
        #[arg(long = "agent-binary", value_name = "PATH")]
        agent_binaries: Vec<PathBuf>,
    },
    /// Headless: run the plan, print progress, write the run record. Exit 0: every phase passed
    /// or warned; 1: a phase failed, timed out or was aborted; 2: it could not run (inventory,
    /// plan, record); 130: interrupted.
    #[command(
        after_help = "Examples:\n  burnin run\n  burnin run --only T1,T4 --json > t4.json\n  burnin run --demo && burnin report burnin-runs/*/"
    )]
    Run {
        /// Only these phases, e.g. T1,T4 (their `needs` are not enforced then).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Print the run's summary as JSON on stdout (progress still goes to stderr).
        #[arg(long)]
        json: bool,
        /// Where run records go.
        #[arg(long, default_value = "burnin-runs")]
        runs_dir: PathBuf,
        /// Baseline file for the gates (default: burnin-baseline.json beside burnin.toml, if
        /// it exists).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Print every output line of every node (they are always in the record).
        #[arg(short, long)]
        verbose: bool,
        /// Take over the run in this directory (its console died): re-attach to the phase that
        /// was running on the nodes, then go on with the phases not yet run.
        #[arg(long, value_name = "RUN_DIR", conflicts_with = "only")]
        resume: Option<PathBuf>,
        /// Do not stream the nodes' telemetry beside the phases (then Xid during a phase and
        /// stalled GPUs are not judged, and the record says so).
        #[arg(long)]
        no_telemetry: bool,
        /// Run the built-in simulated cluster's plan (T1-T8) instead of the inventory's nodes,
        /// on the compressed clock, and write a real record (for `report` without a cluster).
        #[arg(long, conflicts_with_all = ["only", "resume", "baseline", "no_telemetry"])]
        demo: bool,
        /// With --demo: simulated seconds per second, 1/16 to 1024 (0: as fast as it can).
        #[arg(long, default_value_t = 0.0, requires = "demo", value_parser = run_speed)]
        speed: f64,
        /// With --demo: the simulated cluster.
        #[command(flatten)]
        sim: SimArgs,
    },
    /// Storage probes (AIStor/S3 GET latency, throughput, checkpoint, dataloader wait).
    #[command(
        after_help = "Examples:\n  burnin probe s3 --endpoint https://aistor.site:9000 --bucket burnin --prefix shards/"
    )]
    Probe {
        /// Which probe.
        #[command(subcommand)]
        kind: ProbeKind,
    },
    /// Markdown + self-contained HTML report from a run record.
    #[command(after_help = "Examples:\n  burnin report burnin-runs/2026-12-05T0930Z-ab12")]
    Report {
        /// Run directory.
        run_dir: PathBuf,
    },
    /// Console over a recorded run.
    #[command(
        after_help = "Examples:\n  burnin replay burnin-runs/2026-12-05T0930Z-ab12\n  burnin replay burnin-runs/2026-12-05T0930Z-ab12 --at 3600 --speed 8"
    )]
    Replay {
        /// Run directory.
        run_dir: PathBuf,
        /// Start this many seconds into the run (what came before is applied at once).
        #[arg(long, value_name = "SECONDS", default_value_t = 0,
              value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
        at: u64,
        /// Pace and screen.
        #[command(flatten)]
        play: PlayArgs,
    },
    /// Keep a good run's figures as the gates' baseline.
    #[command(after_help = "Examples:\n  burnin baseline save burnin-runs/2026-12-05T0930Z-ab12")]
    Baseline {
        /// What to do.
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Print measured figures of burnin's own machinery.
    #[command(
        after_help = "Examples:\n  burnin bench ingest --nodes 96\n  burnin bench record --hours 1\n  burnin bench agent --slots 8"
    )]
    Bench {
        /// What to measure.
        #[command(subcommand)]
        what: BenchKind,
    },
    /// The PyTorch workloads shipped inside burnin (gemm, allreduce, train_synthetic).
    #[command(
        after_help = "Examples:\n  burnin workload list\n  burnin workload print gemm > gemm.py"
    )]
    Workload {
        /// What to do.
        #[command(subcommand)]
        action: WorkloadAction,
    },
    /// What burnin reads from a tool's output, offline: the rows, the figures with their
    /// units, the checks and failure lines, and the verdict each phase of the plan that reads
    /// that kind of output would give. Exit 0: every file read and no phase failed it; 1: a
    /// phase FAILED a file; 2: a file could not be read, or its kind not told.
    #[command(
        after_help = "Examples:\n  burnin parse all_reduce_perf.log\n  burnin parse nccl-tests node07.log --gpus 8\n  burnin parse ib_write_bw.txt --json"
    )]
    Parse {
        /// [KIND] FILE…: KIND is one of nccl-tests, perftest, nvbandwidth, trainlog, workload,
        /// sanity, preflight, s3-probe, gdsio, dcgm-diag, driver-version, kernel-log, lspci, gdscheck,
        /// fabricmanager-version, smi-csv, topo, dcgm-exporter, minio; detected per file when
        /// not given.
        #[arg(required = true, num_args = 1.., value_name = "[KIND] FILE")]
        args: Vec<String>,
        /// Print one JSON document (`schema` 1) instead of text.
        #[arg(long)]
        json: bool,
        /// The plan whose phases judge (default: the shipped plan).
        #[arg(long, value_name = "FILE")]
        plan: Option<PathBuf>,
        /// A baseline for the `baseline` gates (`burnin baseline save RUN`).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// GPUs the node should have (GPU-count checks; a 1-rank nccl-tests job on a node of
        /// more GPUs is no measurement; 1 to 64; default 8). With `--nics`, the GPUs each
        /// node has, which a job across nodes is judged per RDMA port by (not assumed).
        #[arg(long, value_parser = crate::config::inventory::gpu_count)]
        gpus: Option<u32>,
        /// For nvidia-smi CSV without a header: the --query-gpu fields, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "FIELD,…")]
        fields: Vec<String>,
        /// Save the figures of every phase that did not fail these files as a baseline (the
        /// format of `burnin baseline save`): a known-good output of the reference node
        /// becomes what the `baseline` gates compare with.
        #[arg(long, value_name = "FILE")]
        save_baseline: Option<PathBuf>,
        /// What the nodes behind the files were, for the gates that read the spec table.
        #[command(flatten)]
        hardware: ParseHardware,
    },
    /// Shell completions for every subcommand and option, on stdout.
    #[command(
        after_help = "Examples:\n  burnin completions bash > /etc/bash_completion.d/burnin\n  burnin completions zsh > \"${fpath[1]}/_burnin\"\n  burnin completions fish > ~/.config/fish/completions/burnin.fish"
    )]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The manual page (roff), on stdout; with --out-dir, one page per subcommand.
    #[command(
        after_help = "Examples:\n  burnin man | man -l -\n  burnin man --out-dir /usr/local/share/man/man1"
    )]
    Man {
        /// Write burnin.1 and burnin-SUBCOMMAND.1 into this directory instead.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Write a commented starter burnin.toml and plan.toml.
    #[command(after_help = "Examples:\n  burnin init\n  burnin init -c site/burnin.toml --force")]
    Init {
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// `burnin probe …`.
#[derive(Debug, Subcommand)]
pub enum ProbeKind {
    /// An AIStor/S3 endpoint: GET latency and throughput over a concurrency sweep, a
    /// dataloader's wait per step, checkpoint save/restore. Exit 0: every request succeeded;
    /// 1: some failed (partial results printed); 2: could not run; 130: interrupted.
    #[command(
        after_help = "Examples:\n  burnin probe s3 --endpoint https://aistor.site:9000 --bucket burnin --prefix shards/\n  burnin probe s3 --endpoint http://127.0.0.1:9000 --bucket b --json"
    )]
    S3(Box<S3ProbeArgs>),
}

/// `burnin probe s3` options (defined with the probe, which reads them).
pub use crate::probes::s3::cli::S3ProbeArgs;

/// `burnin baseline …`.
#[derive(Debug, Subcommand)]
pub enum BaselineAction {
    /// Save the figures of a run's passed (or warned) phases.
    #[command(
        after_help = "Examples:\n  burnin baseline save burnin-runs/2026-12-05T0930Z-ab12 --to site/baseline.json\n  burnin baseline save --fleet burnin-runs/2026-12-05T0930Z-ab12"
    )]
    Save {
        /// The run directory (burnin-runs/RUN_ID).
        run_dir: PathBuf,
        /// Baseline file to write (default: burnin-baseline.json beside burnin.toml).
        #[arg(long)]
        to: Option<PathBuf>,
        /// Build it from the fleet: per figure, the mean of every node of the run, each node
        /// worse than that mean by more than --drop-pct left out, again until none is (the
        /// nodes dropped are named). Phases that failed count too: their healthy nodes are
        /// the reference the slow ones missed.
        #[arg(long)]
        fleet: bool,
        /// With --fleet: how much worse than the fleet's mean a subject may be and still count.
        #[arg(long, default_value_t = 5.0, requires = "fleet", value_parser = drop_pct)]
        drop_pct: f64,
    },
}

/// A --drop-pct: above 0, below 100.
fn drop_pct(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is no number"))?;
    if v.is_finite() && v > 0.0 && v < 100.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not above 0 and below 100"))
    }
}

/// `burnin bench …`.
#[derive(Debug, Subcommand)]
pub enum BenchKind {
    /// Size and CPU cost of the run record's telemetry: a simulated cluster under full load
    /// written through the real recorder for HOURS of simulated time, then scaled to 24 h.
    #[command(
        after_help = "Examples:\n  burnin bench record --hours 1 --nodes 12\n  burnin bench record --hours 0.5 --keep /tmp/bench-run"
    )]
    Record {
        /// Simulated hours to write (above 0, at most 720).
        #[arg(long, default_value_t = 1.0, value_parser = bench_hours)]
        hours: f64,
        /// Nodes (1 to 4096).
        #[arg(long, default_value_t = 12, value_parser = count::<1, 4096>)]
        nodes: usize,
        /// GPUs per node (1 to 64).
        #[arg(long, default_value_t = 8, value_parser = crate::config::inventory::gpu_count)]
        gpus: u32,
        /// Samples per second per node (the agent's interval is 1 s by default; 1 to 1000).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        per_second: u32,
        /// Keep the record in this new directory (replayable and reportable) instead of
        /// deleting it.
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
    },
    /// The console's memory over a long burn-in: the simulated cluster fed into the console's
    /// state (store, triage, findings) at 1 Hz for HOURS of simulated time on a compressed
    /// clock, its resident memory printed each simulated hour. Nothing is drawn.
    #[command(
        after_help = "Examples:\n  burnin bench console --hours 24\n  burnin bench console --hours 2 --nodes 128 --gpus 8"
    )]
    Console {
        /// Simulated hours (above 0, at most 720).
        #[arg(long, default_value_t = 24.0, value_parser = bench_hours)]
        hours: f64,
        /// Nodes (1 to 4096).
        #[arg(long, default_value_t = 12, value_parser = count::<1, 4096>)]
        nodes: usize,
        /// GPUs per node (1 to 64).
        #[arg(long, default_value_t = 8, value_parser = crate::config::inventory::gpu_count)]
        gpus: u32,
    },
    /// GPU-samples per second the console decodes and stores on one thread: agent lines of a
    /// simulated cluster, into a fresh store, then warm rounds into the same store.
    #[command(after_help = "Examples:\n  burnin bench ingest --nodes 96 --gpus 8")]
    Ingest {
        /// Nodes (1 to 4096).
        #[arg(long, default_value_t = 12, value_parser = count::<1, 4096>)]
        nodes: usize,
        /// GPUs per node (1 to 64).
        #[arg(long, default_value_t = 8, value_parser = crate::config::inventory::gpu_count)]
        gpus: u32,
        /// Simulated seconds per round (one line per node per second; 1 to 86400).
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        seconds: u64,
        /// Warm rounds (1 to 1000).
        #[arg(long, default_value_t = 5, value_parser = count::<1, 1000>)]
        rounds: usize,
    },
    /// The fault search over simulated fabrics: rounds and tests for N nodes with K bad ones,
    /// beside disjoint pairs with a second pass and every pair; healthy nodes named, bad ones
    /// missed, over the seeds.
    #[command(
        after_help = "Examples:\n  burnin bench localize\n  burnin bench localize --nodes 96 --bad 1 --seeds 100"
    )]
    Localize {
        /// Node counts (default 16, 96, 232, 1024).
        #[arg(long, value_delimiter = ',', value_parser = count::<2, 4096>)]
        nodes: Vec<usize>,
        /// Bad node counts (default 0, 1, 2, 5).
        #[arg(long, value_delimiter = ',', value_parser = count::<0, 64>)]
        bad: Vec<usize>,
        /// Seeds per line (1 to 10000).
        #[arg(long, default_value_t = 100, value_parser = count::<1, 10000>)]
        seeds: usize,
    },
    /// The agent's CPU per GPU-sample on this node's NVML, as `burnin agent --stats` gives it,
    /// with SLOTS GPU slots read round robin from the GPUs here: a one-GPU machine makes the
    /// calls of an eight-GPU node (the GPUs behind the slots repeat; the report says so).
    #[command(after_help = "Examples:\n  burnin bench agent --slots 8 --interval 1s --frames 60")]
    Agent {
        /// GPU slots (at least the GPUs present; at most 64).
        #[arg(long, default_value_t = 8, value_parser = crate::config::inventory::gpu_count)]
        slots: u32,
        /// Sample period: `1s`, `100ms`, or milliseconds.
        #[arg(long, default_value = "1s", value_parser = crate::model::units::parse_period)]
        interval: crate::model::units::Period,
        /// Frames to write (1 to 10^7).
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        frames: u64,
        /// Also split the tick path (as `burnin agent --stats-split`).
        #[arg(long)]
        split: bool,
    },
}

/// `burnin workload …`.
#[derive(Debug, Subcommand)]
pub enum WorkloadAction {
    /// List the shipped workloads.
    #[command(after_help = "Examples:\n  burnin workload list")]
    List,
    /// Print one to stdout (e.g. `burnin workload print gemm > gemm.py`).
    #[command(after_help = "Examples:\n  burnin workload print gemm > gemm.py")]
    Print {
        /// gemm, allreduce or train_synthetic.
        name: String,
    },
}

/// `burnin parse`'s account of the nodes an output came from: the `spec` gates judge with
/// the spec table's entries for them (without it they are not judged offline).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ParseHardware {
    /// Nodes the job spanned (a job across nodes is judged per RDMA port with it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub nodes: Option<u32>,
    /// The GPU model of every node, as the spec table names it (`H100 SXM`, `B300`).
    #[arg(long, value_name = "MODEL")]
    pub gpu_model: Option<String>,
    /// Each node's RDMA ports NCCL can use, `COUNTxMODEL` (`8xConnectX-7`).
    #[arg(long, value_name = "COUNTxMODEL")]
    pub nics: Option<String>,
}
