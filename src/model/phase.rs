//! What a phase says while it runs and when it ends: events, metrics, verdicts. The runner, the
//! simulator and the parsers speak them; the store, triage, the record and the report read them.

use serde::{Deserialize, Serialize};

use super::figures::fmt_value;

use crate::model::UnixMillis;

/// Identifier of a phase in the plan, e.g. "T4".
pub type PhaseId = String;

/// The judgement at the end of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Every gate met.
    Pass,
    /// Gates met, but something needs a look.
    Warn,
    /// A gate missed.
    Fail,
    /// The operator stopped it.
    Aborted,
    /// It ran past its time limit and was stopped.
    Timeout,
    /// Not run (a dependency failed, or the operator skipped it).
    Skipped,
}

impl Verdict {
    /// The word printed in tables and reports.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Aborted => "ABORTED",
            Verdict::Timeout => "TIMEOUT",
            Verdict::Skipped => "SKIPPED",
        }
    }
}

/// A figure a phase produced, already parsed from its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PhaseMetric {
    /// One nccl-tests row (or our allreduce workload's equivalent).
    BusBw {
        /// Node the row came from; `None` when the collective spans nodes.
        node: Option<String>,
        /// Collective name, e.g. "all_reduce".
        collective: String,
        /// Message size.
        size_bytes: u64,
        /// Out-of-place bus bandwidth.
        busbw_gb_per_s: f64,
        /// Out-of-place algorithm bandwidth.
        algbw_gb_per_s: f64,
        /// In-place bus bandwidth, where the row has it: never what a phase judges (the
        /// out-of-place column is, as documented), kept because vendors' pages quote the
        /// higher of the two and `burnin parse` shows the in-place peak where it is higher.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_place_busbw_gb_per_s: Option<f64>,
        /// Wrong elements found by validation (`None` when validation was off: `N/A`, or the
        /// log is one that prints a deviation instead of a count).
        wrong: Option<u64>,
        /// A pre-2.13 log printed a deviation rather than `#wrong`: validation ran, and its
        /// `Out of bounds values` line judged it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        deviation: bool,
        /// Ranks taking part.
        ranks: u32,
    },
    /// nccl-tests' own `# Avg bus bandwidth` of one run: the mean of every busbw of its table,
    /// both placements (the figure contracts quote).
    AvgBusBw {
        /// Node whose output it was.
        node: Option<String>,
        /// Collective name, e.g. "all_reduce".
        collective: String,
        /// Ranks taking part.
        ranks: u32,
        /// GB/s.
        gb_per_s: f64,
    },
    /// How one of the phase's gates judged it (sent as the phase ends, before its verdict),
    /// so the console and the report say which gates held, which did not, and which could not
    /// be judged and why.
    Gate {
        /// The gate in words (`busbw_all_reduce >= 100`).
        gate: String,
        /// What it found.
        status: GateStatus,
        /// Its words with the numbers, or why it was not judged.
        words: String,
    },
    /// A latency distribution as points of its CDF (the S3 probe's GET TTFB per concurrency
    /// level), for the report's plot.
    LatencyCdf {
        /// Node that measured it.
        node: String,
        /// What was timed, e.g. `GET TTFB`.
        what: String,
        /// Concurrency level, where the probe swept several.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        concurrency: Option<usize>,
        /// (latency ms, share of requests at or under it), share ascending.
        points: Vec<(f64, f64)>,
    },
    /// Tensor throughput of one GPU (T2).
    Tflops {
        /// Node name.
        node: String,
        /// GPU index.
        gpu: u32,
        /// "bf16" or "fp8".
        dtype: String,
        /// Measured TFLOP/s.
        tflops: f64,
    },
    /// One training step as our workload (or a parsed trainer log) reports it.
    Step {
        /// Node whose log it came from (`None` in the simulator's single job).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        /// Step number.
        step: u64,
        /// Wall time of the step (`None` where the log does not say: a Hugging Face Trainer's
        /// loss lines, torchtitan's).
        #[serde(default)]
        step_time_ms: Option<f64>,
        /// Time the step waited for its batch (`None` where the trainer does not print it).
        #[serde(default)]
        data_wait_ms: Option<f64>,
        /// Tokens per second over all ranks (`None` where the log does not say).
        #[serde(default)]
        tokens_per_sec: Option<f64>,
        /// Tokens per second of one GPU, where the log prints it so (NeMo's
        /// `tokens_per_sec_per_gpu`, Megatron's "tokens per second per GPU").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_per_sec_per_gpu: Option<f64>,
        /// TFLOP/s of one GPU as the trainer computed it (NeMo's `TFLOPS_per_GPU`), where the
        /// log prints it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tflops_per_gpu: Option<f64>,
        /// Training loss.
        #[serde(default)]
        loss: Option<f64>,
        /// GPUs the job ran on, where the log says (scaling compares 1 GPU with all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        world: Option<u32>,
        /// The job's variant where it ran more than one way (`numa_off`: loader not pinned to
        /// the GPU's NUMA node; `gds`: loader read through cuFile into GPU memory); its figures
        /// are kept beside the main ones with this suffix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        variant: Option<String>,
    },
    /// Time from job start to the first batch on the GPU.
    FirstBatch {
        /// Milliseconds.
        ms: f64,
    },
    /// One GPU-to-GPU (or host-to-GPU) copy bandwidth from nvbandwidth (T3).
    PairBw {
        /// Node name.
        node: String,
        /// nvbandwidth test case, e.g. `device_to_device_memcpy_write_ce`.
        test: String,
        /// Row id (source GPU, or 0 for the host row).
        src: u32,
        /// Column id.
        dst: u32,
        /// GB/s (10^9 B/s).
        gb_per_s: f64,
    },
    /// One GPU-to-GPU (or host-to-GPU) latency from nvbandwidth's latency test cases.
    PairLat {
        /// Node name.
        node: String,
        /// nvbandwidth test case, e.g. `device_to_device_latency_sm`.
        test: String,
        /// Row id.
        src: u32,
        /// Column id.
        dst: u32,
        /// Nanoseconds.
        ns: f64,
    },
    /// One perftest bandwidth row (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`).
    LinkBw {
        /// Node the client ran on.
        node: String,
        /// RDMA device, e.g. `mlx5_0`.
        device: Option<String>,
        /// What the test did: `write`, `read`, `send`, `write-bidir`… (`None`: the log showed
        /// no banner).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        test: Option<String>,
        /// Message size.
        size_bytes: u64,
        /// Average bandwidth, Gbit/s.
        bw_avg_gbit_per_s: f64,
        /// Peak bandwidth, Gbit/s (0 when perftest did not measure it).
        bw_peak_gbit_per_s: f64,
        /// Million messages a second.
        msg_rate_mpps: f64,
    },
    /// One perftest latency row (`ib_write_lat`, `ib_read_lat`, `ib_send_lat`).
    LinkLat {
        /// Node the client ran on.
        node: String,
        /// RDMA device.
        device: Option<String>,
        /// What the test did: `write`, `read`, `send`, `atomic`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        test: Option<String>,
        /// Message size.
        size_bytes: u64,
        /// Typical (median) latency, µs; the average in duration mode, which prints no other.
        latency_us: f64,
        /// 99th percentile, µs, where printed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99_us: Option<f64>,
    },
    /// A yes/no check of a sanity phase (T1), with what was seen.
    Check {
        /// Node name.
        node: String,
        /// Short name, e.g. `gpu-count`.
        name: String,
        /// Whether it held.
        status: CheckStatus,
        /// What was seen, in words and numbers.
        detail: String,
    },
    /// A storage probe's progress window (the live storage pane).
    Storage {
        /// Node the probe ran on.
        node: String,
        /// The window.
        window: crate::model::probe::ProbeWindow,
    },
    /// A named figure a tool computed itself (the storage probe's report, gdsio's runs):
    /// gated as is.
    Figure {
        /// Node it was measured on.
        node: String,
        /// The GPU it belongs to, when it is one GPU's (gdsio's `-d`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu: Option<u32>,
        /// Figure name, e.g. `s3_ttfb_p99_ms_c16`.
        name: String,
        /// Value.
        value: f64,
    },
    /// One gdsio run as it finishes (S4), for the live storage pane; the figures the gates
    /// judge come at the end of the output, per GPU ([`PhaseMetric::Figure`]).
    GdsRun {
        /// Node it ran on.
        node: String,
        /// The GPU (`-d`), when the output named it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu: Option<u32>,
        /// The run.
        #[serde(flatten)]
        run: GdsRun,
    },
    /// A `together` phase's figure beside the same member's run alone (sent as the phase ends).
    Together {
        /// The comparison.
        #[serde(flatten)]
        change: FigureChange,
    },
    /// How one watched series came through one step of a drill.
    Drill {
        /// The outcome.
        #[serde(flatten)]
        outcome: SeriesOutcome,
    },
    /// What DCGM's diagnostic said of one GPU, test by test (V1), for the report's table
    /// beside burnin's own verdict on that GPU.
    DiagGpu {
        /// Node name.
        node: String,
        /// The GPU as DCGM numbers it (its NVML index); `None`: the tests whose word ties to
        /// no GPU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu: Option<u32>,
        /// Each test DCGM ran on it, in DCGM's order.
        tests: Vec<DiagGpuTest>,
    },
    /// What T0 read the node to be made of (its GPUs' and RDMA ports' PCI IDs): kept in the
    /// record so later phases take their floors from the spec table for that model.
    Parts {
        /// Node name.
        node: String,
        /// Its parts.
        parts: crate::model::spec::NodeParts,
    },
    /// A failure the tool printed (NCCL/CUDA failure, ASSERT, Python traceback, OOM).
    Problem {
        /// Node name.
        node: String,
        /// The line that said so.
        text: String,
    },
}

/// One DCGM test's word on one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagGpuTest {
    /// The test as DCGM names it.
    pub test: String,
    /// DCGM's word: `Pass`, `Skip`, `Warn`, `Fail`, or what else it wrote.
    pub word: String,
    /// How burnin reads that word.
    pub status: CheckStatus,
    /// DCGM's first warning or error about this GPU in this test, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub says: Option<String>,
}

/// One gdsio run: its transfer and IO type, size, threads and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GdsRun {
    /// gdsio's transfer type as printed (`GPUD`, `CPU_GPU`, `CPUONLY`, …).
    pub xfer: String,
    /// gdsio's IO type as printed (`READ`, `WRITE`, …).
    pub io: String,
    /// IO size, KiB (`None`: a variable size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_size_kib: Option<u64>,
    /// Threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// GiB/s (`None`: not printed in GiB/s, or not a physical reading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gib_per_s: Option<f64>,
    /// Average latency, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_latency_us: Option<f64>,
}

/// How one of a phase's gates came out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateOutcome {
    /// The gate in words (`busbw_all_reduce >= 100`).
    pub gate: String,
    /// What it found.
    pub status: GateStatus,
    /// Its words with the numbers, or why it was not judged (empty: met, nothing to add).
    #[serde(default)]
    pub words: String,
}

/// How one gate judged a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Met.
    Met,
    /// Met with a caveat, or the figure sits in the warning band.
    Warned,
    /// Not met: the phase fails on it.
    Missed,
    /// Could not be judged (no baseline, no peers, no telemetry, not in this output): said,
    /// never counted as met.
    NotJudged,
}

impl GateStatus {
    /// A one-character mark for lists (`✓ ! ✗ –`).
    pub fn mark(self) -> char {
        match self {
            GateStatus::Met => '✓',
            GateStatus::Warned => '!',
            GateStatus::Missed => '✗',
            GateStatus::NotJudged => '–',
        }
    }

    /// The word for tables.
    pub fn label(self) -> &'static str {
        match self {
            GateStatus::Met => "met",
            GateStatus::Warned => "warned",
            GateStatus::Missed => "missed",
            GateStatus::NotJudged => "not judged",
        }
    }
}

/// The outcome of one sanity check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// It held.
    Ok,
    /// It did not.
    Failed,
    /// It could not be checked here (tool missing, no permission): says so instead of passing.
    Unknown,
    /// It held with a caveat the operator should read (a vendor kernel assumed backported, a
    /// setting that can block GPU↔NIC peer-to-peer).
    Warn,
}

/// What a phase runner reports to the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PhaseEvent {
    /// The phase started.
    Started {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
    },
    /// One line of the phase's output.
    Line {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
        /// The node whose output it is (`None`: the runner's own words, or the simulator).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        /// The text, without its newline.
        text: String,
    },
    /// What the runner itself says about a node's run of the phase (launched, lost the
    /// stream, re-attached, stopped) — kept apart from the tool's own output lines.
    Note {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
        /// The node it is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        /// What happened.
        text: String,
    },
    /// A parsed figure.
    Metric {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
        /// The figure.
        metric: PhaseMetric,
    },
    /// A drill asks the operator to do something and confirm (`text` `None`: the ask is over).
    Prompt {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
        /// What to do, in words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// The phase ended.
    Finished {
        /// Which phase.
        phase: PhaseId,
        /// When.
        at_ms: UnixMillis,
        /// The judgement.
        verdict: Verdict,
        /// One line saying why, with the numbers.
        reason: String,
    },
}

impl PhaseEvent {
    /// The phase this event belongs to.
    pub fn phase(&self) -> &str {
        match self {
            PhaseEvent::Started { phase, .. }
            | PhaseEvent::Line { phase, .. }
            | PhaseEvent::Note { phase, .. }
            | PhaseEvent::Metric { phase, .. }
            | PhaseEvent::Prompt { phase, .. }
            | PhaseEvent::Finished { phase, .. } => phase,
        }
    }

    /// When it happened.
    pub fn at_ms(&self) -> UnixMillis {
        match self {
            PhaseEvent::Started { at_ms, .. }
            | PhaseEvent::Line { at_ms, .. }
            | PhaseEvent::Note { at_ms, .. }
            | PhaseEvent::Metric { at_ms, .. }
            | PhaseEvent::Prompt { at_ms, .. }
            | PhaseEvent::Finished { at_ms, .. } => *at_ms,
        }
    }
}

/// What the console asks of a phase runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseCommand {
    /// Start (or restart) a phase.
    Start(PhaseId),
    /// Abort a running phase: TERM its process group, then KILL after a grace period.
    Abort(PhaseId),
    /// The operator did what a drill asked.
    Confirm(PhaseId),
    /// Search for the node or link that makes this multi-node phase slow (`burnin localize`).
    Localize(PhaseId),
}

/// One figure of one subject of a `together` phase's member: alone, and beside the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureChange {
    /// The member phase, e.g. `T7`.
    pub member: String,
    /// Figure name.
    pub figure: String,
    /// Whose figure (as in `plan::gates::Sample::subject`).
    pub subject: String,
    /// The member's run alone, earlier in this run.
    pub alone: f64,
    /// Beside the other members.
    pub together: f64,
}

impl FigureChange {
    /// Signed change together against alone, percent (`None` when alone is 0).
    pub fn change_pct(&self) -> Option<f64> {
        (self.alone != 0.0).then(|| 100.0 * (self.together - self.alone) / self.alone.abs())
    }

    /// How much worse together is, percent: positive is worse, whichever way the figure
    /// counts ([`super::figures::lower_is_better`]). From an alone value of 0, any worsening is
    /// infinite.
    pub fn worse_pct(&self) -> f64 {
        let lower = super::figures::lower_is_better(&self.figure);
        match self.change_pct() {
            Some(c) if lower => c,
            Some(c) => -c,
            None => {
                let worse = if lower {
                    self.together > 0.0
                } else {
                    self.together < 0.0
                };
                if worse { f64::INFINITY } else { 0.0 }
            }
        }
    }

    /// The change in words: `-25.0 %`, or `from 0`, or `no change` (both 0).
    pub fn change_words(&self) -> String {
        match self.change_pct() {
            Some(c) => format!("{c:+.1} %"),
            None if self.together == self.alone => "no change".into(),
            None => "from 0".into(),
        }
    }

    /// `400 -> 300 (-25.0 %)` for reasons and tables.
    pub fn describe(&self) -> String {
        format!(
            "{} -> {} ({})",
            fmt_value(self.alone),
            fmt_value(self.together),
            self.change_words()
        )
    }
}

/// How one series came through one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesOutcome {
    /// Which step (1-based).
    pub step: usize,
    /// What was asked.
    pub ask: String,
    /// Figure.
    pub figure: String,
    /// Whose.
    pub subject: String,
    /// Median before the first ask.
    pub steady: f64,
    /// Lowest value after the operator confirmed (`None`: no sample came).
    pub low: Option<f64>,
    /// It went below the recovery level.
    pub dipped: bool,
    /// Seconds from the confirmation to the first of the samples back at the level (`None`:
    /// it dipped and did not come back within the step's limit).
    pub recovered_after_s: Option<f64>,
    /// After a stall (no sample at all), seconds from the confirmation to the first sample
    /// again: a restarted training job's first step after its restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_after_s: Option<f64>,
    /// Error and retry lines the load printed during the step.
    pub error_lines: u64,
    /// The first of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl SeriesOutcome {
    /// The outcome in words, for reasons and tables.
    pub fn describe(&self) -> String {
        let fmt = fmt_value;
        let low = self.low.map_or("no sample".into(), fmt);
        match (self.dipped, self.recovered_after_s) {
            (false, _) if self.low.is_none() => format!(
                "{} {}: no sample after the confirmation",
                self.figure, self.subject
            ),
            (false, _) => format!(
                "{} {} not affected (low {low} of steady {})",
                self.figure,
                self.subject,
                fmt(self.steady)
            ),
            (true, Some(s)) => format!(
                "{} {} recovered in {s:.1} s{} (low {low} of steady {})",
                self.figure,
                self.subject,
                self.first_after_s.map_or(String::new(), |f| format!(
                    ", first sample again after {f:.1} s"
                )),
                fmt(self.steady)
            ),
            (true, None) => format!(
                "{} {} did not recover (low {low} of steady {})",
                self.figure,
                self.subject,
                fmt(self.steady)
            ),
        }
    }

    /// The step failed on this series.
    pub fn failed(&self) -> bool {
        (self.dipped && self.recovered_after_s.is_none()) || self.low.is_none()
    }
}
