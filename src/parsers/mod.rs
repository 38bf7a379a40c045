//! Parsers of benchmark output: pure functions of the text, fed line by line as a phase runs,
//! with errors that name the line. Each tool has its own module with typed results;
//! [`OutputParser`] turns them into the [`PhaseMetric`]s a phase records and its gates judge.

#[cfg(test)]
pub(crate) mod fixtures;

pub mod dcgm_diag;
pub mod doctor;
pub mod gds;
pub mod gdsio;
pub mod launcher;
pub mod nccl_tests;
pub mod nvbandwidth;
pub mod perftest;
pub mod preflight;
pub mod s3_probe;
pub mod sanity;
pub mod trainlog;
pub mod workload;

use serde::{Deserialize, Serialize};

use crate::model::phase::PhaseMetric;

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

/// One nccl-tests run (a table) as it is read: what the zero-busbw check needs at its end.
#[derive(Debug, Default)]
struct NcclJob {
    /// The collective, from the program name the log printed, else told by the first row's
    /// shape ([`nccl_tests::infer_collective`]).
    collective: Option<String>,
    /// Distinct ranks of the `# Rank` lines (every rank, gathered to rank 0).
    ranks: u32,
    /// The rank numbers seen, and how many lines repeated one: separate processes each
    /// printing a 1-rank job's header, interleaved (a non-MPI binary under mpirun).
    rank_ids: std::collections::BTreeSet<u32>,
    repeated_ranks: u32,
    /// `# Rank 0` lines: one per job whose header is in the stream.
    rank0_lines: u32,
    /// Rows read.
    rows: u32,
    /// Rows whose collective is not told yet (a log that names no test and starts with
    /// empty rows): sent once a row tells it, or at the run's end as `unknown`.
    pending: Vec<nccl_tests::Row>,
    /// Rows of 1 MiB and more, and whether any of them moved data.
    large_rows: u32,
    large_nonzero: bool,
}

/// Rows held while a log's collective is not told yet.
const MAX_PENDING_ROWS: usize = 64;

impl NcclJob {
    fn new(collective: Option<String>) -> Self {
        Self {
            collective,
            ..Self::default()
        }
    }

    /// The rank count when the `# Rank` lines list every rank once, 0 to n-1 (a log's tail
    /// may show only its last rank; separate jobs repeat rank 0): `None` otherwise.
    fn every_rank_listed(&self) -> Option<u32> {
        let n = u32::try_from(self.rank_ids.len()).ok()?;
        let last = *self.rank_ids.last()?;
        (self.repeated_ranks == 0 && n == self.ranks && last.checked_add(1) == Some(n)).then_some(n)
    }

    /// One row as a metric of this run (its collective known, or `unknown`).
    fn row_metric(&mut self, node: &str, r: nccl_tests::Row) -> PhaseMetric {
        let placements = std::iter::once(r.out_of_place).chain(r.in_place);
        // Validated when any placement was checked: alltoall's in-place is never checked
        // (its #wrong is N/A) while its out-of-place is.
        let wrong = placements.fold(None, |acc: Option<u64>, p| match p.wrong {
            Some(w) => Some(acc.unwrap_or(0).saturating_add(w)),
            None => acc,
        });
        let busbw = r.out_of_place.busbw_gb_per_s.unwrap_or(0.0);
        self.rows += 1;
        if r.size_bytes >= 1 << 20 {
            self.large_rows += 1;
            let in_place = r.in_place.and_then(|p| p.busbw_gb_per_s).unwrap_or(0.0);
            self.large_nonzero |= busbw > 0.0 || in_place > 0.0;
        }
        PhaseMetric::BusBw {
            node: Some(node.to_string()),
            collective: self.collective.clone().unwrap_or_else(|| "unknown".into()),
            size_bytes: r.size_bytes,
            busbw_gb_per_s: busbw,
            algbw_gb_per_s: r.out_of_place.algbw_gb_per_s.unwrap_or(0.0),
            wrong,
            ranks: self.ranks,
            deviation: r.out_of_place.deviation || r.in_place.is_some_and(|p| p.deviation),
        }
    }

    /// The end of a run: rows still waiting for their collective go out as `unknown`, then
    /// why its bandwidth is no measurement, if it is none.
    fn close(&mut self, node: &str, expected_gpus: u32) -> Vec<PhaseMetric> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            self.collective.get_or_insert_with(|| "unknown".into());
            for row in std::mem::take(&mut self.pending) {
                out.push(self.row_metric(node, row));
            }
        }
        if let Some(why) = self.zero_busbw(expected_gpus) {
            out.push(PhaseMetric::Problem {
                node: node.to_string(),
                text: why,
            });
        }
        out
    }

    /// Why this run's bandwidth is no measurement, when busbw is 0 at every size of 1 MiB
    /// and up: a 1-rank job where the node has more GPUs (busbw is 0 by definition: a
    /// non-MPI nccl-tests binary under mpirun/srun runs one such job per process), or data
    /// that did not move.
    fn zero_busbw(&self, expected_gpus: u32) -> Option<String> {
        if self.large_rows == 0 || self.large_nonzero {
            return None;
        }
        // Only the `# Rank` lines count every rank (nThread × nGpus is one process's share).
        let c = self
            .collective
            .as_deref()
            .filter(|c| *c != "unknown")
            .unwrap_or("the collective");
        if self.repeated_ranks > 0 {
            return Some(format!(
                "{c} ran as {} separate jobs of {} rank(s) each (rank 0 printed {} times): \
                 busbw is 0 by definition; nccl-tests built without MPI under mpirun/srun \
                 starts one job per process: build it with MPI=1",
                self.rank0_lines.max(2),
                self.ranks,
                self.rank0_lines.max(2)
            ));
        }
        match self.ranks {
            1 if expected_gpus > 1 => Some(format!(
                "{c} ran as a 1-rank job on a node of {expected_gpus} GPUs: busbw is 0 by \
                 definition (nccl-tests built without MPI under mpirun/srun runs one such job \
                 per process; build with MPI=1, or run -g {expected_gpus})"
            )),
            n if n >= 2 => Some(format!(
                "{c} busbw 0.00 at every size of 1 MiB and up over {n} ranks: no data moved"
            )),
            _ => None,
        }
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
        tokens_per_sec_per_gpu: s.tokens_per_sec_per_gpu,
        loss: s.loss,
        world: s.world,
        variant: None,
    }
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
        let body = labelled.body;
        let at = self.stream(label.map(|(_, rank)| rank));
        let node = self.ctx.node.clone();
        let expected_gpus = self.ctx.expected_gpus;
        let line_no = self.line_no;
        let problem = |text: &str| PhaseMetric::Problem {
            node: node.clone(),
            text: crate::model::fit(text.trim(), 200),
        };
        let mut out = Vec::new();
        match &mut self.streams[at].1 {
            Inner::Nccl { parser, job } => match parser.push(body)? {
                Some(nccl_tests::Item::Started { program, .. }) => {
                    out.extend(job.close(&node, expected_gpus));
                    // The plan's echo, the tool's own "starting" line and its nThread line
                    // open one run together: a run that has no rank or row yet carries on.
                    if job.rows > 0 || job.ranks > 0 || !job.pending.is_empty() {
                        *job = NcclJob::new(None);
                    }
                    if let Some(p) = program {
                        job.collective = Some(collective_of(&p));
                    }
                }
                Some(nccl_tests::Item::Rank { rank, .. }) => match rank {
                    Some(0) if job.rank_ids.contains(&0) => {
                        job.rank0_lines += 1;
                        job.repeated_ranks += 1;
                    }
                    Some(0) => {
                        job.rank0_lines += 1;
                        job.rank_ids.insert(0);
                        job.ranks += 1;
                    }
                    Some(r) if job.rank_ids.contains(&r) => job.repeated_ranks += 1,
                    Some(r) if job.rank_ids.len() < 65_536 => {
                        job.rank_ids.insert(r);
                        job.ranks += 1;
                    }
                    _ => job.ranks += 1,
                },
                Some(nccl_tests::Item::Row(r)) => {
                    // Numbers that disagree with each other are no reading (a garbled or
                    // edited line): the row is left out and counted as not understood.
                    if let Some(c) = &job.collective
                        && let Some(ranks) = job.every_rank_listed()
                        && let Some(why) = nccl_tests::inconsistent_busbw(&r, c, ranks)
                    {
                        return Err(LineError {
                            line_no,
                            message: why,
                        });
                    }
                    if job.collective.is_none() {
                        match nccl_tests::infer_collective(&r, job.ranks) {
                            Some(c) => job.collective = Some(c.to_string()),
                            None if job.pending.len() < MAX_PENDING_ROWS => {
                                job.pending.push(r);
                                return Ok(out);
                            }
                            None => job.collective = Some("unknown".into()),
                        }
                    }
                    let pending = std::mem::take(&mut job.pending);
                    for row in pending.into_iter().chain(std::iter::once(r)) {
                        out.push(job.row_metric(&node, row));
                    }
                }
                Some(nccl_tests::Item::OutOfBounds { count }) if count > 0 => out.push(problem(
                    &format!("nccl-tests: {count} out-of-bounds checks found wrong values"),
                )),
                Some(nccl_tests::Item::AvgBusBw {
                    gb_per_s,
                    min_bw_ok,
                }) => {
                    out.push(PhaseMetric::AvgBusBw {
                        node: Some(node.clone()),
                        collective: job.collective.clone().unwrap_or_else(|| "unknown".into()),
                        ranks: job.ranks,
                        gb_per_s,
                    });
                    if min_bw_ok == Some(false) {
                        out.push(problem(&format!(
                            "nccl-tests' own check failed: avg busbw {gb_per_s} under 90 % of NCCL_TESTS_MIN_BW"
                        )));
                    }
                }
                Some(nccl_tests::Item::Failure { text }) => out.push(problem(&text)),
                Some(_) | None => {}
            },
            Inner::Perftest(p) => match p.push(body)? {
                Some(perftest::Item::Row(r)) => out.push(PhaseMetric::LinkBw {
                    node,
                    device: r.device,
                    test: r.test.map(|t| t.verb),
                    size_bytes: r.size_bytes,
                    bw_avg_gbit_per_s: r.bw_avg_gbit_per_s,
                    bw_peak_gbit_per_s: r.bw_peak_gbit_per_s,
                    msg_rate_mpps: r.msg_rate_mpps,
                }),
                Some(perftest::Item::Lat(r)) => {
                    if let Some(latency_us) = r.t_typical_us.or(r.t_avg_us) {
                        out.push(PhaseMetric::LinkLat {
                            node,
                            device: r.device,
                            test: r.test.map(|t| t.verb),
                            size_bytes: r.size_bytes,
                            latency_us,
                            p99_us: r.t_p99_us,
                        })
                    }
                }
                Some(perftest::Item::Failure { text }) => out.push(problem(&text)),
                None => {}
            },
            Inner::Nvbandwidth(p) => {
                if let Some(item) = p.push(body)? {
                    out.extend(nvbandwidth_metrics(&node, item));
                }
            }
            Inner::Workload => {
                if problem_line(body) {
                    out.push(problem(problem_text(body)));
                }
                match workload::parse_line(line_no, body)? {
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
                        reader,
                    }) => out.push(PhaseMetric::Step {
                        node: Some(node),
                        step,
                        step_time_ms: Some(step_time_ms),
                        data_wait_ms: Some(data_wait_ms),
                        tokens_per_sec: Some(tokens_per_sec),
                        tokens_per_sec_per_gpu: None,
                        loss: Some(loss),
                        world,
                        // Pinned (or unsaid) is the main job; unpinned and the loader through
                        // cuFile are the comparisons.
                        variant: if reader.as_deref() == Some("gds") {
                            Some("gds".to_string())
                        } else {
                            (numa.as_deref() == Some("off")).then(|| "numa_off".to_string())
                        },
                    }),
                    Some(workload::Record::GdsReader {
                        reader,
                        nvidia_fs,
                        why,
                        failed,
                        compat,
                    }) => out.push(workload::gds_reader_check(
                        &node,
                        &workload::GdsReaderSaid {
                            reader,
                            nvidia_fs,
                            why,
                            failed,
                            compat,
                        },
                    )),
                    Some(workload::Record::FirstBatch { ms }) => {
                        out.push(PhaseMetric::FirstBatch { ms })
                    }
                    Some(workload::Record::Error { text }) => out.push(problem(&text)),
                    Some(workload::Record::Other) | None => {}
                }
            }
            Inner::Trainlog(p) => {
                if problem_line(body) {
                    out.push(problem(problem_text(body)));
                } else if let Some(why) = trainlog::problem_of(body) {
                    out.push(problem(&why));
                }
                out.extend(p.push(body).into_iter().map(|s| step_metric(&node, s)));
            }
            Inner::Sanity(p) => p.push(body),
            Inner::Preflight(p) => p.push(body),
            Inner::DcgmDiag(p) => p.push(body),
            Inner::Gdsio(p) => {
                if gdsio::gdsio_failure(body) {
                    out.push(problem(body));
                }
                if let Some((gpu, r)) = p.push(body) {
                    out.push(gds_run(&node, gpu, r));
                }
            }
            Inner::S3Probe => match s3_probe::parse_line(line_no, body)? {
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
                            gpu: None,
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
                if problem_line(body) {
                    out.push(problem(problem_text(body)));
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
                    out.extend(job.close(&node, expected_gpus));
                    *job = NcclJob::new(None);
                }
                Inner::Nvbandwidth(p) => out.extend(
                    p.finish()
                        .into_iter()
                        .flat_map(|i| nvbandwidth_metrics(&node, i)),
                ),
                Inner::Trainlog(p) => {
                    out.extend(p.finish().into_iter().map(|s| step_metric(&node, s)))
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
        out
    }
}

/// A check a parser made on `node`'s output.
fn check_metric(
    node: &str,
    name: String,
    status: crate::model::phase::CheckStatus,
    detail: String,
) -> PhaseMetric {
    PhaseMetric::Check {
        node: node.to_string(),
        name,
        status,
        detail,
    }
}

/// One gdsio run as the live pane takes it ([`PhaseMetric::GdsRun`]).
pub fn gds_run(node: &str, gpu: Option<u32>, r: &gdsio::GdsioRow) -> PhaseMetric {
    PhaseMetric::GdsRun {
        node: node.to_string(),
        gpu,
        run: crate::model::phase::GdsRun {
            xfer: r.xfer.clone(),
            io: r.io.clone(),
            io_size_kib: r.io_size_kib,
            threads: r.threads,
            gib_per_s: r.gib_per_s,
            avg_latency_us: r.avg_latency_us,
        },
    }
}

fn nvbandwidth_metrics(node: &str, item: nvbandwidth::Item) -> Vec<PhaseMetric> {
    use crate::model::phase::CheckStatus;
    match item {
        nvbandwidth::Item::Matrix {
            test,
            unit,
            cells,
            sum,
        } => {
            let detail = format!(
                "{test}: {} cell(s) measured{}",
                cells.len(),
                sum.map(|s| format!(", SUM {s:.2} {}", unit.label()))
                    .unwrap_or_else(|| ", no SUM line (the log ended inside it)".into())
            );
            let mut out: Vec<PhaseMetric> = cells
                .into_iter()
                .map(|c| match unit {
                    nvbandwidth::Unit::GbPerS => PhaseMetric::PairBw {
                        node: node.to_string(),
                        test: test.clone(),
                        src: c.row,
                        dst: c.col,
                        gb_per_s: c.value,
                    },
                    nvbandwidth::Unit::Ns => PhaseMetric::PairLat {
                        node: node.to_string(),
                        test: test.clone(),
                        src: c.row,
                        dst: c.col,
                        ns: c.value,
                    },
                })
                .collect();
            out.push(PhaseMetric::Check {
                node: node.to_string(),
                name: "nvbandwidth-testcase".into(),
                status: if out.is_empty() {
                    CheckStatus::Failed
                } else {
                    CheckStatus::Ok
                },
                detail,
            });
            out
        }
        nvbandwidth::Item::Waived { text } => vec![PhaseMetric::Check {
            node: node.to_string(),
            name: "nvbandwidth-waived".into(),
            status: CheckStatus::Failed,
            detail: format!(
                "nvbandwidth waived {text}: not measured (peer test cases are waived where \
                 GPUs cannot reach each other peer-to-peer, or there are too few)"
            ),
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
    use crate::parsers::fixtures::tool_output;

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
