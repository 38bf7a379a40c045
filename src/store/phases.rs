//! The plan's phases as the store keeps them: state, output lines, figures, checks, busbw
//! rows, each bounded.

use super::*;

/// Where a phase stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    /// Not started.
    Pending,
    /// Running now.
    Running,
    /// Ended with a verdict.
    Done(Verdict),
}

/// One message size of a bus-bandwidth sweep, across the nodes that reported it.
#[derive(Debug, Clone, Default)]
pub struct BusBwRow {
    /// busbw per reporting node (`"all"` for one multi-node job).
    pub per_node: BTreeMap<String, f64>,
    /// Sum of #wrong over the rows that had validation on.
    pub wrong: u64,
    /// True when some row had validation off (`N/A`): correctness is then unproven.
    pub unvalidated: bool,
    /// Ranks of the job.
    pub ranks: u32,
}

impl BusBwRow {
    /// Median busbw over the reporting nodes.
    pub fn median(&self) -> Option<f64> {
        median(self.per_node.values().copied())
    }

    /// The slowest node and its busbw.
    pub fn slowest(&self) -> Option<(&str, f64)> {
        self.per_node
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(n, v)| (n.as_str(), *v))
    }
}

/// Median of some numbers (the upper one of the middle pair).
pub fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One phase as the console sees it.
#[derive(Debug, Clone)]
pub struct PhaseView {
    /// The plan's entry.
    pub spec: std::sync::Arc<PhaseSpec>,
    /// Where it stands.
    pub state: PhaseState,
    /// When it last started.
    pub started_ms: Option<UnixMillis>,
    /// When it last ended.
    pub finished_ms: Option<UnixMillis>,
    /// Why the verdict is what it is.
    pub reason: Option<String>,
    /// Output lines, newest last, bounded.
    pub log: VecDeque<String>,
    /// Lines dropped from the front of `log`.
    pub log_dropped: u64,
    /// Bus-bandwidth sweep by message size.
    pub busbw: BTreeMap<u64, BusBwRow>,
    /// Collective of the sweep.
    pub collective: Option<String>,
    /// The current run's figure-bearing metrics (GEMM, bandwidths, steps, named figures), for
    /// comparing peers while it runs; the oldest steps go first past [`PHASE_METRICS_KEPT`].
    pub figure_metrics: Vec<PhaseMetric>,
    /// Bumped whenever `figure_metrics` changes, so readers can cache what they derive.
    pub metrics_version: u64,
    /// The current run's checks (T0, T1): node, check, outcome, the line it read.
    pub checks: Vec<CheckRow>,
    /// A `together` phase's figures beside each member's run alone (sent as it ends).
    pub together: Vec<crate::plan::gates::FigureChange>,
    /// A drill's outcomes so far, step by step.
    pub drill: Vec<crate::plan::drill::SeriesOutcome>,
    /// What a drill asks the operator now.
    pub prompt: Option<String>,
    /// How each gate judged the last run (gate in words, outcome, its words); empty until
    /// the phase ends.
    pub gates: Vec<crate::model::phase::GateOutcome>,
}

/// Gate outcomes a phase view keeps (a plan entry has a handful).
pub const GATES_KEPT: usize = 64;

/// One check of one node, as the phase's checklist shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    /// Node.
    pub node: String,
    /// Check name (`driver-branch`, `xid`, …).
    pub name: String,
    /// Outcome.
    pub status: crate::model::phase::CheckStatus,
    /// What it read.
    pub detail: String,
}

/// Check rows a phase view keeps (T0/T1 print a few dozen per node).
pub const CHECKS_KEPT: usize = 10_000;

/// Message sizes of the busbw sweep a phase view keeps (nccl-tests' 8 B to 16 GiB by 2× is 32).
pub const BUSBW_SIZES_KEPT: usize = 256;

/// Figure-bearing metrics a phase view keeps; past this, the older half of the steps is dropped.
pub const PHASE_METRICS_KEPT: usize = 20_000;

impl PhaseView {
    pub(super) fn keep_metric(&mut self, metric: PhaseMetric) {
        if self.figure_metrics.len() >= PHASE_METRICS_KEPT {
            let steps = self
                .figure_metrics
                .iter()
                .filter(|m| matches!(m, PhaseMetric::Step { .. }))
                .count();
            // Steps are many and only their recent median matters; other figures are few, so
            // they go only when there are no steps to drop.
            let only_steps = steps > 0;
            let mut drop = if only_steps {
                steps / 2
            } else {
                self.figure_metrics.len() / 2
            };
            self.figure_metrics.retain(|m| {
                if drop > 0 && (!only_steps || matches!(m, PhaseMetric::Step { .. })) {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
        self.figure_metrics.push(metric);
        self.metrics_version += 1;
    }
}

impl PhaseView {
    /// The nodes whose busbw rows stopped before the largest size any node reached, with the
    /// last size each reached: a node that exited, hung or was killed mid-sweep. Empty when one
    /// job speaks for every node.
    pub fn busbw_stopped(&self) -> Vec<(String, u64)> {
        let Some((&largest, last_row)) = self.busbw.iter().next_back() else {
            return Vec::new();
        };
        let mut last_seen: BTreeMap<&str, u64> = BTreeMap::new();
        for (size, row) in &self.busbw {
            for node in row.per_node.keys() {
                last_seen.insert(node.as_str(), *size);
            }
        }
        last_seen
            .into_iter()
            .filter(|(node, size)| *size < largest && !last_row.per_node.contains_key(*node))
            .map(|(node, size)| (node.to_string(), size))
            .collect()
    }

    /// Seconds it has run (or ran), as of `now_ms`.
    pub fn elapsed_s(&self, now_ms: UnixMillis) -> Option<u64> {
        let start = self.started_ms?;
        let end = match self.state {
            PhaseState::Running => now_ms,
            _ => self.finished_ms.unwrap_or(now_ms),
        };
        Some(end.saturating_sub(start) / 1000)
    }
}

pub(super) fn phase_views(plan: &Plan) -> Vec<PhaseView> {
    fresh_views(plan.phases.iter())
}

pub(super) fn fresh_views<'a>(
    specs: impl Iterator<Item = &'a std::sync::Arc<PhaseSpec>>,
) -> Vec<PhaseView> {
    specs
        .map(|spec| PhaseView {
            spec: spec.clone(),
            state: PhaseState::Pending,
            started_ms: None,
            finished_ms: None,
            reason: None,
            log: VecDeque::new(),
            log_dropped: 0,
            busbw: BTreeMap::new(),
            collective: None,
            figure_metrics: Vec::new(),
            metrics_version: 0,
            checks: Vec::new(),
            together: Vec::new(),
            drill: Vec::new(),
            prompt: None,
            gates: Vec::new(),
        })
        .collect()
}
