//! Parsers of benchmark output: pure functions of the text, fed line by line as a phase runs,
//! with errors that name the line. Each tool has its own module with typed results;
//! [`OutputParser`] turns them into the [`PhaseMetric`]s a phase records and its gates judge.

pub mod nccl_tests;
pub mod nvbandwidth;
pub mod perftest;
pub mod preflight;
pub mod prometheus;
pub mod s3_probe;
pub mod sanity;
pub mod trainlog;
pub mod workload;

use serde::{Deserialize, Serialize};

use crate::phases::PhaseMetric;

/// A line a parser could not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line_no}: {message}")]
pub struct LineError {
    /// 1-based line number in the output.
    pub line_no: usize,
    /// What was wrong.
    pub message: String,
}

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
            message: format!("{what}: {e}"),
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
/// errors, a crash.
pub fn problem_line(line: &str) -> bool {
    const SIGNS: [&str; 7] = [
        "Traceback (most recent call last)",
        "CUDA out of memory",
        "OutOfMemoryError",
        "NCCL error",
        "ncclInternalError",
        "ncclSystemError",
        "Segmentation fault",
    ];
    SIGNS.iter().any(|s| line.contains(s))
}

enum Inner {
    Nccl {
        parser: nccl_tests::NcclTestsParser,
        collective: String,
        ranks: u32,
    },
    Perftest(perftest::PerftestParser),
    Nvbandwidth(nvbandwidth::NvbandwidthParser),
    Workload,
    Trainlog(trainlog::TrainLogParser),
    Sanity(sanity::SanityParser),
    Preflight(preflight::PreflightParser),
    S3Probe,
    None,
}

/// One node's output of one phase, read line by line into figures.
pub struct OutputParser {
    ctx: ParseContext,
    inner: Inner,
    line_no: usize,
}

/// `all_reduce_perf_mpi` → `all_reduce` (words after the program name are a comment).
fn collective_of(program: &str) -> String {
    let program = program.split_whitespace().next().unwrap_or(program);
    let base = program.rsplit('/').next().unwrap_or(program);
    let base = base.strip_suffix("_mpi").unwrap_or(base);
    base.strip_suffix("_perf").unwrap_or(base).to_string()
}

fn step_metric(node: &str, s: trainlog::Step) -> PhaseMetric {
    PhaseMetric::Step {
        node: Some(node.to_string()),
        step: s.step,
        step_time_ms: s.step_time_ms,
        data_wait_ms: s.data_wait_ms,
        tokens_per_sec: s.tokens_per_sec,
        loss: s.loss,
        world: None,
        variant: None,
    }
}

impl OutputParser {
    /// A parser of `kind` for output from `ctx.node`.
    pub fn new(kind: ParserKind, ctx: ParseContext) -> Self {
        let inner = match kind {
            ParserKind::NcclTests => Inner::Nccl {
                parser: nccl_tests::NcclTestsParser::new(),
                collective: "all_reduce".into(),
                ranks: 0,
            },
            ParserKind::Perftest => Inner::Perftest(perftest::PerftestParser::new()),
            ParserKind::Nvbandwidth => Inner::Nvbandwidth(nvbandwidth::NvbandwidthParser::new()),
            ParserKind::Workload => Inner::Workload,
            ParserKind::Trainlog => Inner::Trainlog(trainlog::TrainLogParser::new()),
            ParserKind::Sanity => Inner::Sanity(sanity::SanityParser::new()),
            ParserKind::Preflight => Inner::Preflight(preflight::PreflightParser::new()),
            ParserKind::S3Probe => Inner::S3Probe,
            ParserKind::None => Inner::None,
        };
        Self {
            ctx,
            inner,
            line_no: 0,
        }
    }

    /// Read one line: the figures it completed, or why it could not be read.
    pub fn push(&mut self, line: &str) -> Result<Vec<PhaseMetric>, LineError> {
        self.line_no += 1;
        let node = self.ctx.node.clone();
        let problem = |text: &str| PhaseMetric::Problem {
            node: node.clone(),
            text: crate::model::fit(text.trim(), 200),
        };
        let mut out = Vec::new();
        match &mut self.inner {
            Inner::Nccl {
                parser,
                collective,
                ranks,
            } => match parser.push(line)? {
                Some(nccl_tests::Item::Started { program }) => {
                    *ranks = 0;
                    if let Some(p) = program {
                        *collective = collective_of(&p);
                    }
                }
                Some(nccl_tests::Item::Rank { .. }) => *ranks += 1,
                Some(nccl_tests::Item::Row(r)) => {
                    let placements = std::iter::once(r.out_of_place).chain(r.in_place);
                    let wrong = placements
                        .map(|p| p.wrong)
                        .try_fold(0u64, |acc, w| w.map(|w| acc + w));
                    out.push(PhaseMetric::BusBw {
                        node: Some(node.clone()),
                        collective: collective.clone(),
                        size_bytes: r.size_bytes,
                        busbw_gb_per_s: r.out_of_place.busbw_gb_per_s.unwrap_or(0.0),
                        algbw_gb_per_s: r.out_of_place.algbw_gb_per_s.unwrap_or(0.0),
                        wrong,
                        ranks: *ranks,
                    });
                }
                Some(nccl_tests::Item::OutOfBounds { count }) if count > 0 => out.push(problem(
                    &format!("nccl-tests: {count} out-of-bounds checks found wrong values"),
                )),
                Some(nccl_tests::Item::Failure { text }) => out.push(problem(&text)),
                Some(_) | None => {}
            },
            Inner::Perftest(p) => match p.push(line)? {
                Some(perftest::Item::Row(r)) => out.push(PhaseMetric::LinkBw {
                    node,
                    device: r.device,
                    size_bytes: r.size_bytes,
                    bw_avg_gbit_per_s: r.bw_avg_gbit_per_s,
                    bw_peak_gbit_per_s: r.bw_peak_gbit_per_s,
                    msg_rate_mpps: r.msg_rate_mpps,
                }),
                Some(perftest::Item::Failure { text }) => out.push(problem(&text)),
                None => {}
            },
            Inner::Nvbandwidth(p) => {
                if let Some(item) = p.push(line)? {
                    out.extend(nvbandwidth_metrics(&node, item));
                }
            }
            Inner::Workload => {
                if problem_line(line) {
                    out.push(problem(line));
                }
                match workload::parse_line(self.line_no, line)? {
                    Some(workload::Record::Gemm { gpu, dtype, tflops }) => {
                        out.push(PhaseMetric::Tflops {
                            node,
                            gpu,
                            dtype,
                            tflops,
                        })
                    }
                    Some(workload::Record::Step {
                        step,
                        step_time_ms,
                        data_wait_ms,
                        tokens_per_sec,
                        loss,
                        world,
                        numa,
                    }) => out.push(PhaseMetric::Step {
                        node: Some(node),
                        step,
                        step_time_ms,
                        data_wait_ms: Some(data_wait_ms),
                        tokens_per_sec: Some(tokens_per_sec),
                        loss: Some(loss),
                        world,
                        // Pinned (or unsaid) is the main job; unpinned is the comparison.
                        variant: (numa.as_deref() == Some("off")).then(|| "numa_off".to_string()),
                    }),
                    Some(workload::Record::FirstBatch { ms }) => {
                        out.push(PhaseMetric::FirstBatch { ms })
                    }
                    Some(workload::Record::Error { text }) => out.push(problem(&text)),
                    Some(workload::Record::Other) | None => {}
                }
            }
            Inner::Trainlog(p) => {
                if problem_line(line) {
                    out.push(problem(line));
                }
                out.extend(p.push(line).into_iter().map(|s| step_metric(&node, s)));
            }
            Inner::Sanity(p) => p.push(line),
            Inner::Preflight(p) => p.push(line),
            Inner::S3Probe => match s3_probe::parse_line(self.line_no, line)? {
                Some(s3_probe::Record::S3Window(window)) => {
                    out.push(PhaseMetric::Storage { node, window })
                }
                Some(s3_probe::Record::S3Report { report }) => {
                    for level in &report.levels {
                        if let Some(cdf) = level.ttfb.map(|t| t.cdf()).filter(|c| !c.is_empty()) {
                            out.push(PhaseMetric::LatencyCdf {
                                node: node.clone(),
                                what: "GET TTFB".into(),
                                concurrency: Some(level.concurrency),
                                points: cdf,
                            });
                        }
                    }
                    for (name, value) in report.figures() {
                        out.push(PhaseMetric::Figure {
                            node: node.clone(),
                            name,
                            value,
                        });
                    }
                    if let Some(f) = &report.failure {
                        out.push(problem(&format!("probe s3: {f}")));
                    }
                }
                Some(s3_probe::Record::Error { text }) => out.push(problem(&text)),
                Some(s3_probe::Record::Other) | None => {}
            },
            Inner::None => {
                if problem_line(line) {
                    out.push(problem(line));
                }
            }
        }
        Ok(out)
    }

    /// The end of the output: figures that needed it (T1 checks, an unfinished matrix).
    pub fn finish(&mut self) -> Vec<PhaseMetric> {
        let node = self.ctx.node.clone();
        match &mut self.inner {
            Inner::Nvbandwidth(p) => p
                .finish()
                .map(|i| nvbandwidth_metrics(&node, i))
                .unwrap_or_default(),
            Inner::Trainlog(p) => p
                .finish()
                .map(|s| step_metric(&node, s))
                .into_iter()
                .collect(),
            Inner::Sanity(p) => p.finish(&node, self.ctx.expected_gpus),
            Inner::Preflight(p) => p.finish(&node, self.ctx.expected_gpus),
            _ => Vec::new(),
        }
    }
}

fn nvbandwidth_metrics(node: &str, item: nvbandwidth::Item) -> Vec<PhaseMetric> {
    match item {
        nvbandwidth::Item::Matrix { test, cells, .. } => cells
            .into_iter()
            .map(|c| PhaseMetric::PairBw {
                node: node.to_string(),
                test: test.clone(),
                src: c.row,
                dst: c.col,
                gb_per_s: c.gb_per_s,
            })
            .collect(),
        nvbandwidth::Item::Waived { text } => vec![PhaseMetric::Check {
            node: node.to_string(),
            name: "nvbandwidth-waived".into(),
            status: crate::phases::CheckStatus::Unknown,
            detail: format!("nvbandwidth waived {text}"),
        }],
        nvbandwidth::Item::Failure { text } => vec![PhaseMetric::Problem {
            node: node.to_string(),
            text,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tool_output;

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
        }) = m.last()
        else {
            panic!("{m:?}")
        };
        assert_eq!(collective, "all_gather");
        assert_eq!(*ranks, 2);
        assert_eq!(*wrong, Some(0));
    }

    #[test]
    fn validation_off_gives_no_wrong_count() {
        let m = metrics(
            ParserKind::NcclTests,
            "nccl-tests/k80-2node-validation0-NA.txt",
        );
        assert!(
            m.iter()
                .all(|x| matches!(x, PhaseMetric::BusBw { wrong: None, .. }))
        );
    }

    #[test]
    fn nvbandwidth_cells_and_perftest_rows() {
        let m = metrics(
            ParserKind::Nvbandwidth,
            "nvbandwidth/v0.2-h800-8gpu-d2d-read-ce.txt",
        );
        assert_eq!(m.len(), 56);
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
