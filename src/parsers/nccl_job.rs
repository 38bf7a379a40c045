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
    /// `# nThread` headers that opened this run before any rank or row: nccl-tests prints
    /// its header from one process only, so two stacked headers are two processes, each
    /// running a test of its own.
    headers: u32,
    /// Rows and trailers of separate jobs, left out (they cannot be told apart).
    withheld_rows: u32,
    /// Each separate job's own `# Avg bus bandwidth`, as printed (at most [`MAX_JOB_HOSTS`]).
    job_averages: Vec<f64>,
    /// A row was computed for more ranks than the device list names: the list was cut (a
    /// paste), and the job's rank count is unknown.
    list_cut: bool,
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
        if self.list_cut {
            return None;
        }
        let n = u32::try_from(self.rank_ids.len()).ok()?;
        let last = *self.rank_ids.last()?;
        (self.repeated_ranks == 0 && n == self.ranks && last.checked_add(1) == Some(n)).then_some(n)
    }

    /// Whether this stream holds separate jobs, not one: two processes each printed a
    /// header, or a rank number was listed twice (a non-MPI nccl-tests binary under
    /// mpirun/srun runs one whole test per process; NVIDIA/nccl-tests#306).
    fn separate(&self) -> bool {
        self.headers > 1 || self.repeated_ranks > 0
    }

    /// Why separate jobs are no measurement across nodes, with what each job said.
    fn separate_jobs(&self) -> String {
        let c = self
            .collective
            .as_deref()
            .filter(|c| *c != "unknown")
            .unwrap_or("the collective");
        let jobs = self.headers.max(self.rank0_lines).max(2);
        let per_job = if self.repeated_ranks > 0 {
            self.ranks
        } else {
            self.ranks / jobs
        };
        let hosts = match self.rank0_hosts.len() {
            0 => String::new(),
            _ => format!(" on {}", self.rank0_hosts.join(", ")),
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
            "{c} ran as {jobs} separate jobs of {per_job} rank(s) each (rank 0 printed {} \
             times{hosts}): each measured only its own processes, no traffic between them, so \
             this is no measurement across nodes; {} row(s) of theirs are left out, since the \
             jobs' rows cannot be told apart{averages}. nccl-tests built without MPI under \
             mpirun/srun starts one job per process: build it with MPI=1",
            self.rank0_lines.max(jobs),
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
        if self.list_cut { 0 } else { self.ranks }
    }

    /// Ranks its device list named (each once).
    pub(super) fn ranks_listed(&self) -> u32 {
        self.ranks
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
            // A row computed for more ranks than a pasted list shows: the list was
            // cut, and its count is no count of the job (unknown from here on).
            if !nccl_tests::fits_more_ranks(&r, c, ranks) {
                return Err(LineError {
                    line_no,
                    message: why,
                });
            }
            self.list_cut = true;
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
                let begun = self.rows > 0
                    || self.ranks > 0
                    || !self.pending.is_empty()
                    || self.withheld_rows > 0;
                if begun {
                    out.extend(self.close(node, expected_gpus));
                    *self = NcclJob::new(None);
                }
                if gpus_per_process.is_some() {
                    self.headers += 1;
                }
                if let Some(p) = program {
                    self.collective = Some(collective_of(&p));
                }
            }
            nccl_tests::Item::Rank { rank, host } => {
                if rank == Some(0) && self.rank0_hosts.len() < MAX_JOB_HOSTS {
                    self.rank0_hosts
                        .push(crate::model::excerpt(&crate::model::strip_controls(&host)));
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
            nccl_tests::Item::Failure { text } => out.push(problem(node, &text)),
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
