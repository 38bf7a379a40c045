//! One nccl-tests run (a table) as the output parser reads it: its collective, ranks and rows,
//! and what the zero-busbw check needs at its end.

use super::metrics::problem;
use super::nccl_tests;
use crate::model::LineError;
use crate::model::phase::PhaseMetric;

/// One nccl-tests run (a table) as it is read: what the zero-busbw check needs at its end.
#[derive(Debug, Default)]
pub(super) struct NcclJob {
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
    /// The hosts rank 0 was listed on (at most [`MAX_JOB_HOSTS`]).
    rank0_hosts: Vec<String>,
    /// `# nThread` headers that opened this run before any row or failure: nccl-tests prints
    /// its header from one process only, so two are two processes, each running a test of
    /// its own (or a run that printed nothing after its device list, retried: told apart by
    /// where rank 0 was listed).
    headers: u32,
    /// The second header came before any rank was listed: two processes started together.
    stacked: bool,
    /// Failure lines of this run.
    failures: u32,
    /// Rows and trailers of separate jobs, left out (they cannot be told apart).
    withheld_rows: u32,
    /// Each separate job's own `# Avg bus bandwidth`, as printed (at most [`MAX_JOB_HOSTS`]).
    job_averages: Vec<f64>,
    /// The processes the launcher's command line started, where the output shows it (set by
    /// the output parser): with the header's GPUs a process, what a cut device list is
    /// checked against.
    pub(super) launched: Option<u32>,
    /// GPUs each process drives (the `# nThread` header's nThread × nGpus).
    gpus_per_process: Option<u32>,
    /// A row was computed for the launcher's count of ranks, more than the device list
    /// names: the list was cut (a paste), and the job has the launcher's count.
    cut_to: Option<u32>,
    /// Rows read.
    rows: u32,
    /// Rows whose collective is not told yet (a log that names no test and starts with
    /// empty rows): sent once a row tells it, or at the run's end as `unknown`.
    pending: Vec<nccl_tests::Row>,
    /// Rows of 1 MiB and more, and whether any of them moved data.
    large_rows: u32,
    large_nonzero: bool,
    /// The most RDMA devices NCCL's `NET/IB : Using` lines listed (every rank prints one).
    net_ports: u32,
}

/// The figure of the RDMA devices NCCL said it uses, per node (the most a rank listed): what a
/// job across nodes is judged per RDMA port with (`plan::gates::spec`).
pub const NET_PORTS_FIGURE: &str = "nccl_net_ports";

/// Rows held while a log's collective is not told yet.
const MAX_PENDING_ROWS: usize = 64;

/// Hosts and averages of separate jobs named in words; more are counted.
const MAX_JOB_HOSTS: usize = 8;

impl NcclJob {
    pub(super) fn new(collective: Option<String>) -> Self {
        Self {
            collective,
            ..Self::default()
        }
    }

    /// The rank count when the `# Rank` lines list every rank once, 0 to n-1 (a log's tail
    /// may show only its last rank; separate jobs repeat rank 0): `None` otherwise.
    fn every_rank_listed(&self) -> Option<u32> {
        if self.cut_to.is_some() {
            return self.cut_to;
        }
        let n = u32::try_from(self.rank_ids.len()).ok()?;
        let last = *self.rank_ids.last()?;
        (self.repeated_ranks == 0 && n == self.ranks && last.checked_add(1) == Some(n)).then_some(n)
    }

    /// Whether this stream holds separate jobs, not one (a non-MPI nccl-tests binary under
    /// mpirun/srun runs one whole test per process; NVIDIA/nccl-tests#306): two headers
    /// printed together before any rank, or rank 0 listed on two hosts. A rank listed twice
    /// on one host is a run retried, not two jobs.
    fn separate(&self) -> bool {
        let hosts: std::collections::BTreeSet<&String> = self.rank0_hosts.iter().collect();
        self.stacked || hosts.len() > 1 || (self.repeated_ranks > 0 && hosts.is_empty())
    }

    /// Why separate jobs are no measurement across nodes, with what each job said.
    fn separate_jobs(&self) -> String {
        let c = self
            .collective
            .as_deref()
            .filter(|c| *c != "unknown")
            .unwrap_or("the collective");
        let jobs = self.headers.max(self.rank0_lines).max(2);
        // Each job lists its own ranks 0..n-1: the distinct ones are one job's.
        let size = match self.ranks {
            0 => String::new(),
            n => format!(" of {n} rank(s) each"),
        };
        let evidence = match (self.rank0_lines, self.headers) {
            (n, _) if n > 1 => format!(
                "rank 0 printed {n} times on {}",
                self.rank0_hosts.join(", ")
            ),
            (_, h) if h > 1 => format!("{h} test headers printed together"),
            _ => format!("{} rank line(s) listed twice", self.repeated_ranks),
        };
        let averages = match self.job_averages.len() {
            0 => String::new(),
            _ => format!(
                "; their own averages: {} GB/s",
                self.job_averages
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "{c} ran as {jobs} separate jobs{size} ({evidence}): each measured only its own \
             processes, no traffic between them, so this is no measurement across nodes; {} \
             row(s) of theirs are left out, since the jobs' rows cannot be told \
             apart{averages}. nccl-tests built without MPI under mpirun/srun starts one job \
             per process: build it with MPI=1",
            self.withheld_rows
        )
    }

    /// A `# Rank` line: a rank listed once counts; one listed again is another job's.
    fn rank(&mut self, rank: Option<u32>) {
        match rank {
            Some(0) if self.rank_ids.contains(&0) => {
                self.rank0_lines += 1;
                self.repeated_ranks += 1;
            }
            Some(0) => {
                self.rank0_lines += 1;
                self.rank_ids.insert(0);
                self.ranks += 1;
            }
            Some(r) if self.rank_ids.contains(&r) => self.repeated_ranks += 1,
            Some(r) if self.rank_ids.len() < 65_536 => {
                self.rank_ids.insert(r);
                self.ranks += 1;
            }
            _ => self.ranks += 1,
        }
    }

    /// The ranks a row is credited with: the device list's count, or 0 (unknown) once a row
    /// showed the list was cut.
    fn job_ranks(&self) -> u32 {
        self.cut_to.unwrap_or(self.ranks)
    }

    /// Ranks its device list named (each once).
    pub(super) fn ranks_listed(&self) -> u32 {
        self.ranks
    }

    /// Rows of separate jobs left out.
    pub(super) fn withheld(&self) -> u32 {
        self.withheld_rows
    }

    /// A row of the table: held while its collective is not told, checked against the
    /// ranks the device list names, then a metric (with any rows held before it).
    fn row(
        &mut self,
        r: nccl_tests::Row,
        node: &str,
        line_no: usize,
        out: &mut Vec<PhaseMetric>,
    ) -> Result<(), LineError> {
        if self.collective.is_none() {
            match nccl_tests::infer_collective(&r, self.ranks) {
                Some(c) => self.collective = Some(c.to_string()),
                None if self.pending.len() < MAX_PENDING_ROWS => {
                    self.pending.push(r);
                    return Ok(());
                }
                None => self.collective = Some("unknown".into()),
            }
        }
        // Numbers that disagree with each other are no reading (a garbled or
        // edited line): the row is left out and counted as not understood.
        if let Some(c) = &self.collective
            && let Some(ranks) = self.every_rank_listed()
            && let Some(why) = nccl_tests::inconsistent_busbw(&r, c, ranks)
        {
            // A row computed for the launcher's count, more than a pasted list shows: the
            // list was cut, and the job has the launcher's count.
            let launched = self
                .launched
                .map(|p| p.saturating_mul(self.gpus_per_process.unwrap_or(1)));
            match launched.filter(|n| *n > ranks) {
                Some(n) if nccl_tests::inconsistent_busbw(&r, c, n).is_none() => {
                    self.cut_to = Some(n);
                }
                _ => {
                    return Err(LineError {
                        line_no,
                        message: why,
                    });
                }
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for row in pending.into_iter().chain(std::iter::once(r)) {
            out.push(self.row_metric(node, row));
        }

        Ok(())
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
            in_place_busbw_gb_per_s: r.in_place.and_then(|p| p.busbw_gb_per_s),
            wrong,
            ranks: self.job_ranks(),
            deviation: r.out_of_place.deviation || r.in_place.is_some_and(|p| p.deviation),
        }
    }

    /// The end of a run: rows still waiting for their collective go out as `unknown`, then
    /// why its bandwidth is no measurement, if it is none.
    pub(super) fn close(&mut self, node: &str, expected_gpus: u32) -> Vec<PhaseMetric> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            self.collective.get_or_insert_with(|| "unknown".into());
            for row in std::mem::take(&mut self.pending) {
                out.push(self.row_metric(node, row));
            }
        }
        if self.separate() {
            out.push(PhaseMetric::Problem {
                node: node.to_string(),
                text: self.separate_jobs(),
            });
        } else if let Some(why) = self.zero_busbw(expected_gpus) {
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

    /// One item of nccl-tests' output into this run's metrics: a new run, a rank, a row (held
    /// while the collective is not told), the out-of-bounds count, the average, a failure.
    pub(super) fn take(
        &mut self,
        item: nccl_tests::Item,
        node: &str,
        expected_gpus: u32,
        line_no: usize,
        out: &mut Vec<PhaseMetric>,
    ) -> Result<(), LineError> {
        match item {
            nccl_tests::Item::Started {
                program,
                gpus_per_process,
            } => {
                // The plan's echo, the tool's own "starting" line and its nThread line
                // open one run together: a run that has no rank or row yet carries on.
                // A header after this run's ranks but before any row or failure is another
                // process's (launch skew): the run carries on, and where rank 0 is listed
                // tells separate jobs from a retry.
                let begun = self.rows > 0
                    || self.failures > 0
                    || !self.pending.is_empty()
                    || self.withheld_rows > 0
                    // nccl-tests 2.17+ prints its version and "starting" lines before each
                    // process's header: after ranks, those too are another process's.
                    || (self.ranks > 0 && self.headers == 0);
                if begun {
                    out.extend(self.close(node, expected_gpus));
                    let launched = self.launched;
                    *self = NcclJob::new(None);
                    self.launched = launched;
                }
                if gpus_per_process.is_some() {
                    self.gpus_per_process = gpus_per_process;
                    self.headers += 1;
                    self.stacked |= self.headers > 1 && self.ranks == 0;
                }
                if let Some(p) = program {
                    self.collective = Some(collective_of(&p));
                }
            }
            nccl_tests::Item::Rank { rank, host } => {
                let host = crate::model::excerpt(&crate::model::strip_controls(&host));
                // Rank 0 listed again on its host after another header: the run retried,
                // and its list starts over.
                if rank == Some(0) && self.headers > 1 && self.rank0_hosts.contains(&host) {
                    self.rank_ids.clear();
                    self.ranks = 0;
                    self.repeated_ranks = 0;
                    self.rank0_lines = 0;
                }
                if rank == Some(0)
                    && self.rank0_hosts.len() < MAX_JOB_HOSTS
                    && !self.rank0_hosts.contains(&host)
                {
                    self.rank0_hosts.push(host);
                }
                self.rank(rank);
            }
            nccl_tests::Item::Row(_) | nccl_tests::Item::AvgBusBw { .. } if self.separate() => {
                match item {
                    nccl_tests::Item::AvgBusBw { gb_per_s, .. }
                        if self.job_averages.len() < MAX_JOB_HOSTS =>
                    {
                        self.job_averages.push(gb_per_s)
                    }
                    nccl_tests::Item::Row(r) => {
                        self.withheld_rows += 1;
                        if self.collective.is_none() {
                            self.collective =
                                nccl_tests::infer_collective(&r, 0).map(str::to_string);
                        }
                    }
                    _ => {}
                }
            }
            nccl_tests::Item::Row(r) => self.row(r, node, line_no, out)?,
            nccl_tests::Item::OutOfBounds { count } if count > 0 => out.push(problem(
                node,
                &format!("nccl-tests: {count} out-of-bounds checks found wrong values"),
            )),
            nccl_tests::Item::AvgBusBw {
                gb_per_s,
                min_bw_ok,
            } => {
                out.push(PhaseMetric::AvgBusBw {
                    node: Some(node.to_string()),
                    collective: self.collective.clone().unwrap_or_else(|| "unknown".into()),
                    ranks: self.job_ranks(),
                    gb_per_s,
                });
                if min_bw_ok == Some(false) {
                    out.push(problem(node, &format!(
                        "nccl-tests' own check failed: avg busbw {gb_per_s} under 90 % of NCCL_TESTS_MIN_BW"
                    )));
                }
            }
            nccl_tests::Item::Failure { text } => {
                self.failures = self.failures.saturating_add(1);
                out.push(problem(node, &text));
            }
            // Said once per job, and again only when a rank lists more (a node of more rails).
            nccl_tests::Item::NetDevices { count } if count > self.net_ports => {
                self.net_ports = count;
                out.push(PhaseMetric::Figure {
                    node: node.to_string(),
                    gpu: None,
                    name: NET_PORTS_FIGURE.into(),
                    value: f64::from(count),
                });
            }
            nccl_tests::Item::NetDevices { .. } => {}
            _ => {}
        }
        Ok(())
    }
}

/// `all_reduce_perf_mpi` → `all_reduce` (words after the program name are a comment).
pub(super) fn collective_of(program: &str) -> String {
    let program = program.split_whitespace().next().unwrap_or(program);
    let base = program.rsplit('/').next().unwrap_or(program);
    let base = base.strip_suffix("_mpi").unwrap_or(base);
    base.strip_suffix("_perf").unwrap_or(base).to_string()
}

/// What a whole nccl-tests output says beside its tables: how big a job that died before its
/// first row was, and whether several launcher tasks each ran a test of their own.
#[derive(Debug, Default)]
pub(super) struct NcclSize {
    /// Rows read (and rows of separate jobs left out).
    rows: u64,
    failures: u64,
    /// The most ranks a device list named.
    listed: u32,
    /// The ranks the launcher's command line asked for, where the output shows it.
    pub(super) launched: Option<u32>,
    /// The highest rank a launcher label named.
    highest_label: Option<u32>,
    /// Launcher tasks whose own stream printed a test header (at most [`MAX_JOB_HOSTS`]
    /// named; a task of an MPI build's job never does, rank 0 prints for all).
    header_tasks: Vec<u32>,
    more_header_tasks: u32,
}

impl NcclSize {
    /// A line of the output, before its parser reads it.
    pub(super) fn line(&mut self, label: Option<u32>, body: &str) {
        if let Some(rank) = label {
            self.highest_label = self.highest_label.max(Some(rank));
        }
        if let Some(n) = super::launcher::ranks_from_command(body) {
            self.launched = Some(n);
        }
    }

    /// An item its parser read.
    pub(super) fn item(&mut self, label: Option<u32>, item: &nccl_tests::Item) {
        match item {
            nccl_tests::Item::Failure { .. } => self.failures += 1,
            nccl_tests::Item::Started {
                gpus_per_process: Some(_),
                ..
            } => {
                if let Some(task) = label.filter(|t| !self.header_tasks.contains(t)) {
                    if self.header_tasks.len() < MAX_JOB_HOSTS {
                        self.header_tasks.push(task);
                    } else {
                        self.more_header_tasks = self.more_header_tasks.saturating_add(1);
                    }
                }
            }
            _ => {}
        }
    }

    /// What a job's item, or its close, gave.
    pub(super) fn after(&mut self, job: &NcclJob, out: &[PhaseMetric]) {
        self.listed = self.listed.max(job.ranks_listed());
        let rows = out
            .iter()
            .filter(|m| matches!(m, PhaseMetric::BusBw { .. }))
            .count() as u64;
        self.rows = self
            .rows
            .saturating_add(rows)
            .max(u64::from(job.withheld()));
    }

    /// The problems of the whole output, at its end: no table at all (with the job's size),
    /// or several launcher tasks that each ran a test of their own.
    pub(super) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let tasks = self.header_tasks.len() as u64 + u64::from(self.more_header_tasks);
        if tasks > 1 {
            let named: Vec<String> = self.header_tasks.iter().map(u32::to_string).collect();
            out.push(format!(
                "{tasks} launcher tasks ({}{}) each printed a test of their own: separate \
                 jobs, each measuring only its own processes, so this is no measurement across \
                 nodes. nccl-tests built without MPI under mpirun/srun starts one job per \
                 process: build it with MPI=1",
                named.join(", "),
                if self.more_header_tasks > 0 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        if self.rows == 0 && self.failures > 0 {
            out.push(format!(
                "nccl-tests stopped before its first row: no bandwidth was measured (the job: \
                 {})",
                self.size()
            ));
        }
        out
    }

    /// The job's size and where that comes from.
    fn size(&self) -> String {
        match (self.listed, self.launched) {
            (0, Some(n)) => format!("{n} process(es) by the launcher's command line"),
            (l, Some(n)) if n != l && l > 0 => format!(
                "{l} rank(s) by its device list; the launcher's command line started {n} \
                 process(es)"
            ),
            (l, _) if l > 0 => format!("{l} rank(s) by its device list"),
            _ => match self.highest_label {
                Some(r) => format!(
                    "at least {} rank(s) by the launcher's labels",
                    u64::from(r) + 1
                ),
                None => "a rank count the output does not show".to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `lines` to one job as the output parser does; the metrics and line errors.
    fn run(lines: &[&str]) -> (Vec<PhaseMetric>, usize) {
        let mut parser = nccl_tests::NcclTestsParser::new();
        let mut job = NcclJob::new(None);
        let mut size = NcclSize::default();
        let mut out = Vec::new();
        let mut errors = 0;
        for (i, l) in lines.iter().enumerate() {
            size.line(None, l);
            job.launched = size.launched;
            match parser.push(l) {
                Ok(Some(item)) => {
                    if job.take(item, "n", 8, i + 1, &mut out).is_err() {
                        errors += 1;
                    }
                }
                Ok(None) => {}
                Err(_) => errors += 1,
            }
        }
        out.extend(job.close("n", 8));
        (out, errors)
    }

    const HEADER: &str = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0";
    const TITLES: &str = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong";
    const ROW: &str = "     1048576        262144     float     sum      -1    35.66   29.40   29.40      0    34.90   30.04   30.04      0";

    fn problems(out: &[PhaseMetric]) -> Vec<&str> {
        out.iter()
            .filter_map(|m| match m {
                PhaseMetric::Problem { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Launch skew: the second process's header after the first's ranks, rank 0 on another
    /// host: two jobs, rows left out. The same after a retry on the same host: one job.
    #[test]
    fn a_header_after_the_ranks_is_another_process_where_rank_0_moves_host() {
        let (out, _) = run(&[
            HEADER,
            "#  Rank  0 Group  0 Pid 1 on node3 device  0 [0000:0f:00] NVIDIA H20",
            "#  Rank  1 Group  0 Pid 1 on node3 device  1 [0000:10:00] NVIDIA H20",
            HEADER,
            "#  Rank  0 Group  0 Pid 2 on node2 device  0 [0000:0f:00] NVIDIA H20",
            "#  Rank  1 Group  0 Pid 2 on node2 device  1 [0000:10:00] NVIDIA H20",
            TITLES,
            ROW,
        ]);
        assert!(!out.iter().any(|m| matches!(m, PhaseMetric::BusBw { .. })));
        let p = problems(&out);
        assert!(
            p.iter().any(|t| t.contains(
                "ran as 2 separate jobs of 2 rank(s) each (rank 0 printed 2 times on node3, node2)"
            )),
            "{p:?}"
        );
        // nccl-tests 2.17+ prints its version and "starting" lines before each process's
        // header: the second process's, after the first's ranks, are not a new run either.
        let (out, _) = run(&[
            "# nccl-tests version 2.17.6 nccl-headers=22707 nccl-library=22707",
            "# Collective test starting: all_reduce_perf",
            HEADER,
            "#  Rank  0 Group  0 Pid 1 on node3 device  0 [0000:0f:00] NVIDIA H20",
            "# nccl-tests version 2.17.6 nccl-headers=22707 nccl-library=22707",
            "# Collective test starting: all_reduce_perf",
            HEADER,
            "#  Rank  0 Group  0 Pid 2 on node2 device  0 [0000:0f:00] NVIDIA H20",
            TITLES,
            ROW,
        ]);
        assert!(
            problems(&out)
                .iter()
                .any(|t| t.contains("rank 0 printed 2 times on node3, node2")),
            "{out:?}"
        );
        let (out, _) = run(&[
            HEADER,
            "#  Rank  0 Group  0 Pid 1 on node3 device  0 [0000:0f:00] NVIDIA H20",
            HEADER,
            "#  Rank  0 Group  0 Pid 2 on node3 device  0 [0000:0f:00] NVIDIA H20",
            TITLES,
            ROW,
        ]);
        assert!(problems(&out).is_empty(), "{out:?}");
        assert!(out.iter().any(|m| matches!(m, PhaseMetric::BusBw { .. })));
    }

    /// A device list cut short is believed only against the launcher's own count: with
    /// `-np 2` processes of 2 GPUs each, the 4-rank rows of a 2-rank list are the job's (4
    /// ranks); without it, a row that disagrees with its list is not understood.
    #[test]
    fn a_cut_device_list_needs_the_launchers_count() {
        let row4 = "     1048576        262144     float     sum      -1    35.66   20.00   30.00      0    34.90   20.00   30.00      0";
        let lines = |launch: Option<&'static str>| {
            let mut v: Vec<&str> = launch.into_iter().collect();
            v.extend([
                HEADER,
                "#  Rank  0 Group  0 Pid 1 on a device  0 [0000:0f:00] NVIDIA H100",
                "#  Rank  1 Group  0 Pid 1 on a device  1 [0000:10:00] NVIDIA H100",
                TITLES,
                row4,
                row4,
            ]);
            v
        };
        let (out, errors) = run(&lines(Some("mpirun -np 2 ./all_reduce_perf -b 1M -g 2")));
        assert_eq!(errors, 0, "{out:?}");
        assert!(
            out.iter()
                .filter(|m| matches!(m, PhaseMetric::BusBw { .. }))
                .all(|m| matches!(m, PhaseMetric::BusBw { ranks: 4, .. }))
        );
        let (_, errors) = run(&lines(None));
        assert_eq!(
            errors, 2,
            "no launcher count: the 4-rank rows are not understood"
        );
    }
}
