//! Parsers of benchmark output: pure functions of the text, fed line by line as a phase runs,
//! with errors that name the line. Each tool has its own module with typed results;
//! [`OutputParser`] turns them into the [`PhaseMetric`]s a phase records and its gates judge.

#[cfg(test)]
pub(crate) mod fixtures;

pub mod dcgm_diag;
pub mod doctor;
pub mod gds;
pub mod gdsio;
pub mod gpu_model;
pub mod launcher;
mod metrics;
mod nccl_job;
pub use nccl_job::NET_PORTS_FIGURE;
pub mod nccl_tests;
pub mod nic_model;
pub mod nvbandwidth;
pub mod perftest;
pub mod preflight;
pub mod s3_probe;
pub mod sanity;
pub mod trainlog;
pub mod workload;

use serde::{Deserialize, Serialize};

use crate::model::phase::PhaseMetric;
pub use metrics::gds_run;
use metrics::{
    check_metric, nvbandwidth_metrics, perftest_metrics, problem, s3_metrics, step_metric,
    workload_metrics,
};
use nccl_job::{NcclJob, NcclSize};

/// A line a parser could not read, and why (defined in `model`: the Prometheus text reader in
/// `wire` reports the same way).
pub use crate::model::LineError;

/// How errors quote outside text (defined in `model`, where every layer can reach it).
pub use crate::model::{QUOTED_CHARS, excerpt};

/// Reads one JSON line `{"burnin": KIND, …}` of our own tools into `R`: `Ok(None)` for lines
/// that are not ours or of a kind `is_known` rejects (a newer tool, an older console), an
/// error naming `what` for a line that claims to be ours but does not fit.
pub fn tagged_json_line<R: serde::de::DeserializeOwned>(
    line_no: usize,
    line: &str,
    what: &str,
    is_known: impl Fn(&R) -> bool,
) -> Result<Option<R>, LineError> {
    let t = line.trim();
    if !t.starts_with('{') || !t.contains("\"burnin\"") {
        return Ok(None);
    }
    match serde_json::from_str::<R>(t) {
        Ok(r) if is_known(&r) => Ok(Some(r)),
        Ok(_) => Ok(None),
        Err(e) => Err(LineError {
            line_no,
            message: format!("{what}: {}", excerpt(&e.to_string())),
        }),
    }
}

/// Which parser reads a phase's output (the plan's `parser = "…"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParserKind {
    /// nccl-tests `*_perf` / `*_perf_mpi` (and our `allreduce.py`, which prints the same).
    NcclTests,
    /// perftest `ib_write_bw` / `ib_read_bw`.
    Perftest,
    /// nvbandwidth matrices.
    Nvbandwidth,
    /// JSON lines of our own workloads (`gemm.py`, `train_synthetic.py`).
    Workload,
    /// Megatron / NeMo / Lightning training logs.
    Trainlog,
    /// The T1 sanity sections.
    Sanity,
    /// The T0 preflight sections (install checks, read-only).
    Preflight,
    /// `burnin probe s3 --json-lines` (windows for the storage pane, figures for the gates).
    S3Probe,
    /// NVIDIA `gdsio` result lines (GPUDirect Storage against the CPU paths).
    Gdsio,
    /// NVIDIA DCGM's `dcgmi diag -j` document (or its table): each test a check.
    DcgmDiag,
    /// Nothing to parse: the exit status alone decides.
    None,
}

/// What a parser knows of where its output comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseContext {
    /// The node the output came from.
    pub node: String,
    /// GPUs the inventory expects there.
    pub expected_gpus: u32,
}

/// Lines that mean a job failed whatever the tool: a Python traceback, out of memory, NCCL
/// errors, a collective the NCCL watchdog timed out, a crash.
pub fn problem_line(line: &str) -> bool {
    problem_at(line).is_some()
}

/// Where in `line` its failure sign starts (a progress bar can have the watchdog's message
/// glued to its end): the failure is quoted from there.
fn problem_at(line: &str) -> Option<usize> {
    const SIGNS: [&str; 10] = [
        "Traceback (most recent call last)",
        "CUDA out of memory",
        "OutOfMemoryError",
        "NCCL error",
        "ncclInternalError",
        "ncclSystemError",
        "Segmentation fault",
        // PyTorch's NCCL watchdog: a collective hung past its timeout (the job is dead).
        "Watchdog caught collective operation timeout",
        "ChildFailedError",
        "CUDA error: ",
    ];
    SIGNS.iter().filter_map(|s| line.find(s)).min()
}

/// The failure part of a problem line, from its sign on (whole when it starts there).
fn problem_text(line: &str) -> &str {
    match problem_at(line) {
        Some(at) if at > 0 => &line[at..],
        _ => line,
    }
}

enum Inner {
    Nccl {
        parser: nccl_tests::NcclTestsParser,
        job: NcclJob,
    },
    Perftest(perftest::PerftestParser),
    Nvbandwidth(nvbandwidth::NvbandwidthParser),
    Workload,
    Trainlog(trainlog::TrainLogParser),
    Sanity(sanity::SanityParser),
    Preflight(preflight::PreflightParser),
    S3Probe,
    Gdsio(gdsio::GdsioParser),
    DcgmDiag(dcgm_diag::DcgmDiagParser),
    None,
}

impl Inner {
    fn new(kind: ParserKind) -> Self {
        match kind {
            ParserKind::NcclTests => Inner::Nccl {
                parser: nccl_tests::NcclTestsParser::new(),
                job: NcclJob::new(None),
            },
            ParserKind::Perftest => Inner::Perftest(perftest::PerftestParser::new()),
            ParserKind::Nvbandwidth => Inner::Nvbandwidth(nvbandwidth::NvbandwidthParser::new()),
            ParserKind::Workload => Inner::Workload,
            ParserKind::Trainlog => Inner::Trainlog(trainlog::TrainLogParser::new()),
            ParserKind::Sanity => Inner::Sanity(sanity::SanityParser::new()),
            ParserKind::Preflight => Inner::Preflight(preflight::PreflightParser::new()),
            ParserKind::S3Probe => Inner::S3Probe,
            ParserKind::Gdsio => Inner::Gdsio(gdsio::GdsioParser::new()),
            ParserKind::DcgmDiag => Inner::DcgmDiag(dcgm_diag::DcgmDiagParser::new()),
            ParserKind::None => Inner::None,
        }
    }
}

/// How many launcher-labelled streams one output keeps apart; a label past it shares the
/// unlabelled stream (a node's output cannot grow the parser without bound).
const MAX_STREAMS: usize = 1024;

/// One node's output of one phase, read line by line into figures.
///
/// Launcher prefixes (`srun -l`, `mpirun --tag-output`, Hydra's `-l`, torchrun's) are taken off
/// first ([`launcher`]); for the table tools (nccl-tests, perftest, nvbandwidth) each label's
/// lines go to a parser of their own, so tasks that each print a whole table (a non-MPI binary
/// under a launcher) are not read as one garbled table.
pub struct OutputParser {
    ctx: ParseContext,
    kind: ParserKind,
    /// The unlabelled stream, then one per label, in order of first appearance.
    streams: Vec<(Option<u32>, Inner)>,
    line_no: usize,
    launcher: Option<launcher::Launcher>,
    /// What the whole nccl-tests output says beside its tables (`nccl_job::NcclSize`).
    nccl: NcclSize,
}

impl OutputParser {
    /// A parser of `kind` for output from `ctx.node`.
    pub fn new(kind: ParserKind, ctx: ParseContext) -> Self {
        Self {
            ctx,
            kind,
            streams: vec![(None, Inner::new(kind))],
            line_no: 0,
            launcher: None,
            nccl: NcclSize::default(),
        }
    }

    /// The launcher whose prefixes the output carried, once one was seen.
    pub fn launcher(&self) -> Option<launcher::Launcher> {
        self.launcher
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.line_no
    }

    /// The stream a label's lines go to (created on first sight, up to [`MAX_STREAMS`]).
    fn stream(&mut self, label: Option<u32>) -> usize {
        let demux = matches!(
            self.kind,
            ParserKind::NcclTests | ParserKind::Perftest | ParserKind::Nvbandwidth
        );
        let key = if demux { label } else { None };
        if let Some(i) = self.streams.iter().position(|(k, _)| *k == key) {
            return i;
        }
        if self.streams.len() >= MAX_STREAMS {
            return 0;
        }
        // A labelled run whose unlabelled stream saw nothing takes that stream over, so the
        // common case (every line labelled `0:`) stays one stream.
        if self.streams.len() == 1 && self.line_no == 1 {
            self.streams[0].0 = key;
            return 0;
        }
        self.streams.push((key, Inner::new(self.kind)));
        self.streams.len() - 1
    }

    /// Read one line: the figures it completed, or why it could not be read.
    pub fn push(&mut self, line: &str) -> Result<Vec<PhaseMetric>, LineError> {
        self.line_no += 1;
        let raw = line.trim_end_matches(['\r', '\n']);
        // Nested launchers (srun over mpirun --tag-output) label twice: the inner label is
        // the rank.
        let mut labelled = launcher::strip(raw);
        let outer = labelled.label;
        let inner = launcher::strip(labelled.body);
        if inner.label.is_some() {
            labelled = inner;
        }
        let label = labelled.label.or(outer);
        if let Some((l, _)) = label {
            self.launcher.get_or_insert(l);
        }
        // Open MPI tags each chunk a rank writes: a row written in pieces carries tags inside it.
        let body = launcher::strip_inline(labelled.body, label);
        let body = body.as_ref();
        let at = self.stream(label.map(|(_, rank)| rank));
        let node = self.ctx.node.clone();
        let expected_gpus = self.ctx.expected_gpus;
        let line_no = self.line_no;
        let mut out = Vec::new();
        match &mut self.streams[at].1 {
            Inner::Nccl { parser, job } => {
                let size = &mut self.nccl;
                size.line(label.map(|(_, rank)| rank), body);
                job.launched = size.launched;
                if let Some(item) = parser.push(body)? {
                    size.item(label.map(|(_, rank)| rank), &item);
                    job.take(item, &node, expected_gpus, line_no, &mut out)?;
                    size.after(job, &out);
                }
            }
            Inner::Perftest(p) => {
                if let Some(item) = p.push(body)? {
                    perftest_metrics(&node, item, &mut out);
                }
            }
            Inner::Nvbandwidth(p) => {
                if let Some(item) = p.push(body)? {
                    out.extend(nvbandwidth_metrics(&node, item));
                }
            }
            Inner::Workload => {
                if problem_line(body) {
                    out.push(problem(&node, problem_text(body)));
                }
                if let Some(record) = workload::parse_line(line_no, body)? {
                    workload_metrics(&node, record, &mut out);
                }
            }
            Inner::Trainlog(p) => {
                if problem_line(body) {
                    out.push(problem(&node, problem_text(body)));
                } else if let Some(why) = trainlog::problem_of(body) {
                    out.push(problem(&node, &why));
                }
                out.extend(p.push(body).into_iter().map(|s| step_metric(&node, s)));
            }
            Inner::Sanity(p) => p.push(body),
            Inner::Preflight(p) => p.push(body),
            Inner::DcgmDiag(p) => p.push(body),
            Inner::Gdsio(p) => {
                if gdsio::gdsio_failure(body) {
                    out.push(problem(&node, body));
                }
                if let Some((gpu, r)) = p.push(body) {
                    out.push(gds_run(&node, gpu, r));
                }
            }
            Inner::S3Probe => {
                if let Some(record) = s3_probe::parse_line(line_no, body)? {
                    s3_metrics(&node, record, &mut out);
                }
            }
            Inner::None => {
                if problem_line(body) {
                    out.push(problem(&node, problem_text(body)));
                }
            }
        }
        Ok(out)
    }

    /// The end of the output: figures that needed it (T1 checks, an unfinished matrix, a
    /// run whose bandwidth was zero throughout).
    pub fn finish(&mut self) -> Vec<PhaseMetric> {
        let node = self.ctx.node.clone();
        let expected_gpus = self.ctx.expected_gpus;
        let mut out = Vec::new();
        for (_, inner) in &mut self.streams {
            match inner {
                Inner::Nccl { job, .. } => {
                    let closed = job.close(&node, expected_gpus);
                    self.nccl.after(job, &closed);
                    out.extend(closed);
                    *job = NcclJob::new(None);
                }
                Inner::Nvbandwidth(p) => out.extend(
                    p.finish()
                        .into_iter()
                        .flat_map(|i| nvbandwidth_metrics(&node, i)),
                ),
                Inner::Trainlog(p) => {
                    out.extend(p.finish().into_iter().map(|s| step_metric(&node, s)));
                    out.extend(p.summary().iter().map(|(name, value)| PhaseMetric::Figure {
                        node: node.clone(),
                        gpu: None,
                        name: (*name).to_string(),
                        value: *value,
                    }));
                }
                Inner::Sanity(p) => out.extend(p.finish(&node, expected_gpus)),
                Inner::Preflight(p) => out.extend(p.finish(&node, expected_gpus)),
                Inner::DcgmDiag(p) => {
                    let (checks, gpus) = p.results();
                    out.extend(
                        checks.into_iter().map(|(name, status, detail)| {
                            check_metric(&node, name, status, detail)
                        }),
                    );
                    out.extend(gpus.into_iter().map(|(gpu, tests)| PhaseMetric::DiagGpu {
                        node: node.clone(),
                        gpu,
                        tests,
                    }));
                }
                Inner::Gdsio(p) => {
                    if let Some((gpu, r)) = p.finish() {
                        out.push(gds_run(&node, gpu, r));
                    }
                    out.extend(p.figures().into_iter().map(|(gpu, name, value)| {
                        PhaseMetric::Figure {
                            node: node.clone(),
                            gpu,
                            name,
                            value,
                        }
                    }));
                    out.extend(p.checks().into_iter().map(|(name, status, detail)| {
                        check_metric(&node, name.to_string(), status, detail)
                    }));
                }
                _ => {}
            }
        }
        if self.kind == ParserKind::NcclTests {
            out.extend(self.nccl.problems().into_iter().map(|w| problem(&node, &w)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;
    use nccl_job::collective_of;

    fn metrics(kind: ParserKind, rel: &str) -> Vec<PhaseMetric> {
        let mut p = OutputParser::new(
            kind,
            ParseContext {
                node: "gpu01".into(),
                expected_gpus: 8,
            },
        );
        let mut out = Vec::new();
        for l in tool_output(rel).lines() {
            out.extend(p.push(l).unwrap_or_else(|e| panic!("{rel}: {e}")));
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn an_excerpt_keeps_both_ends_of_long_text() {
        assert_eq!(excerpt("short"), "short");
        let long = format!("start{}end", "x".repeat(10_000));
        let e = excerpt(&long);
        assert!(e.chars().count() <= QUOTED_CHARS, "{e}");
        assert!(
            e.starts_with("start") && e.ends_with("end") && e.contains('…'),
            "{e}"
        );
    }

    /// Two launcher tasks (`srun -l`) that each print a test header are two jobs, not one:
    /// an MPI build's job prints its header from rank 0 only. One task's header is one job.
    #[test]
    fn launcher_tasks_that_each_print_a_header_are_separate_jobs() {
        let header = "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0";
        let problems = |tasks: &[u32]| {
            let mut p = OutputParser::new(
                ParserKind::NcclTests,
                ParseContext {
                    node: "gpu01".into(),
                    expected_gpus: 8,
                },
            );
            for t in tasks {
                p.push(&format!("{t}: {header}")).expect("a header");
            }
            p.finish()
                .into_iter()
                .filter_map(|m| match m {
                    PhaseMetric::Problem { text, .. } => Some(text),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let two = problems(&[0, 1]);
        assert!(
            two.iter()
                .any(|t| t.starts_with("2 launcher tasks (0, 1) each printed a test of their own")),
            "{two:?}"
        );
        assert!(problems(&[0]).is_empty());
    }

    /// A real 8 × H100 all_reduce log (every busbw = algbw × 2·7/8, as nccl-tests computes
    /// it), then the same log with its peak row's busbw edited to 999.99: that row is no
    /// reading, left out with why, and the figure is what the untouched rows say.
    #[test]
    fn a_json_line_error_quotes_no_whole_value() {
        // serde_json quotes a string of the wrong type whole; found by tests/fuzz/.
        let line = format!(
            "{{\"burnin\":\"gemm\",\"tflops\":\"{}\"}}",
            "x".repeat(70_000)
        );
        let mut p = OutputParser::new(
            ParserKind::Workload,
            ParseContext {
                node: "gpu01".into(),
                expected_gpus: 8,
            },
        );
        let e = p.push(&line).unwrap_err();
        assert!(e.message.len() < 400, "{} bytes: {e}", e.message.len());
    }

    #[test]
    fn an_all_reduce_row_whose_busbw_disagrees_with_its_algbw_is_left_out() {
        let rel =
            "../corpus/nccl-tests/allreduce-1x8h100-dgx-8rank-side-work-header-fields-480gbps.txt";
        let real = tool_output(rel);
        let run = |text: &str| {
            let mut p = OutputParser::new(
                ParserKind::NcclTests,
                ParseContext {
                    node: "gpu01".into(),
                    expected_gpus: 8,
                },
            );
            let (mut rows, mut errors) = (Vec::new(), Vec::new());
            for l in text.lines() {
                match p.push(l) {
                    Ok(m) => rows.extend(m),
                    Err(e) => errors.push(e.message),
                }
            }
            let peak = rows
                .iter()
                .filter_map(|m| match m {
                    PhaseMetric::BusBw { busbw_gb_per_s, .. } => Some(*busbw_gb_per_s),
                    _ => None,
                })
                .fold(0.0, f64::max);
            (peak, errors)
        };
        let (peak, errors) = run(&real);
        assert_eq!((peak, errors.len()), (480.16, 0), "{errors:?}");
        let edited = real.replacen("274.38  480.16", "274.38  999.99", 1);
        assert_ne!(edited, real);
        let (peak, errors) = run(&edited);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .starts_with("busbw 999.99 is not algbw 274.38 x 1.7500 (all_reduce, 8 ranks)"),
            "{errors:?}"
        );
        assert!(peak < 480.0, "the edited row is no figure: {peak}");
    }

    #[test]
    fn nccl_rows_become_busbw_with_collective_and_ranks() {
        let m = metrics(
            ParserKind::NcclTests,
            "nccl-tests/v2.18.0-tag-output-allgather-2rank.txt",
        );
        let Some(PhaseMetric::BusBw {
            collective,
            ranks,
            wrong,
            ..
        }) = m.iter().rfind(|x| matches!(x, PhaseMetric::BusBw { .. }))
        else {
            panic!("{m:?}")
        };
        assert_eq!(collective, "all_gather");
        assert_eq!(*ranks, 2);
        assert_eq!(*wrong, Some(0));
        // nccl-tests' own average, a figure of its own.
        assert!(m.contains(&PhaseMetric::AvgBusBw {
            node: Some("gpu01".into()),
            collective: "all_gather".into(),
            ranks: 2,
            gb_per_s: 1.54321
        }));
    }

    #[test]
    fn validation_off_gives_no_wrong_count() {
        let m = metrics(
            ParserKind::NcclTests,
            "nccl-tests/k80-2node-validation0-NA.txt",
        );
        assert!(
            m.iter()
                .filter(|x| matches!(x, PhaseMetric::BusBw { .. }))
                .all(|x| matches!(x, PhaseMetric::BusBw { wrong: None, .. }))
        );
    }

    #[test]
    fn nvbandwidth_cells_and_perftest_rows() {
        let m = metrics(
            ParserKind::Nvbandwidth,
            "nvbandwidth/v0.2-h800-8gpu-d2d-read-ce.txt",
        );
        let pairs = m
            .iter()
            .filter(|x| matches!(x, PhaseMetric::PairBw { .. }))
            .count();
        assert_eq!(pairs, 56);
        // The test case that ran is a check of its own, so T3's `checks` gate has one.
        assert!(m.iter().any(|x| matches!(
            x,
            PhaseMetric::Check { status: crate::model::phase::CheckStatus::Ok, detail, .. }
                if detail.contains("device_to_device_memcpy_read_ce: 56 cell(s) measured, SUM 9642.08 GB/s")
        )));
        let m = metrics(
            ParserKind::Perftest,
            "perftest/write-bw-sweep-ib-gbits-truncated.txt",
        );
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn our_allreduce_py_output_as_printed_on_the_h200() {
        let m = metrics(
            ParserKind::NcclTests,
            "h200-run/run3-telemetry/logs/AR/h200.log",
        );
        assert_eq!(m.len(), 19);
        assert!(m.iter().all(|x| matches!(
            x,
            PhaseMetric::BusBw { collective, wrong: Some(0), ranks: 0, .. } if collective == "all_reduce"
        )));
    }

    #[test]
    fn collective_names() {
        assert_eq!(collective_of("all_reduce_perf_mpi"), "all_reduce");
        assert_eq!(
            collective_of("/opt/nccl-tests/build/reduce_scatter_perf"),
            "reduce_scatter"
        );
        assert_eq!(
            collective_of("all_reduce_perf (burnin allreduce.py)"),
            "all_reduce"
        );
    }
}
