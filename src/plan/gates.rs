//! Judging a phase: the figures its metrics add up to (per GPU, per node, per pair, per link),
//! the plan's gates over them, a saved baseline, and the verdict with its reason in numbers.
//! Pure: the runner hands in what it saw and gets a verdict back.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Gate, PhaseSpec};
use crate::model::phase::{CheckStatus, PhaseMetric, Verdict};

/// One value of a figure: whose it is, which peers it is compared with, and the number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// e.g. `gpu01/gpu3`, `gpu01`, `gpu01 0->1`.
    pub subject: String,
    /// Samples compare with the median of their own group only (e.g. one nvbandwidth test).
    pub group: String,
    /// The value.
    pub value: f64,
}

/// Figure name → its samples, in a stable order.
pub type Figures = BTreeMap<String, Vec<Sample>>;

/// Logged steps a job needs before `loss-falling` judges a trend: losses are noisy from one
/// logged step to the next, and an excerpt of a few steps of a healthy run can end higher than
/// it began.
pub const MIN_LOSS_STEPS: usize = 20;

/// Which of a subject's values a figure keeps when it sees several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The highest (a bandwidth's peak over sizes).
    Max,
    /// The lowest (a latency over sizes).
    Min,
    /// The last one seen.
    Last,
}

fn put(f: &mut Figures, figure: String, subject: String, group: &str, value: f64, keep: Keep) {
    if !value.is_finite() {
        return;
    }
    let samples = f.entry(figure).or_default();
    match samples.iter_mut().find(|s| s.subject == subject) {
        Some(s) => {
            s.value = match keep {
                Keep::Max => s.value.max(value),
                Keep::Min => s.value.min(value),
                Keep::Last => value,
            }
        }
        None => samples.push(Sample {
            subject,
            group: group.to_string(),
            value,
        }),
    }
}

/// nvbandwidth test cases whose cells are GPU pairs (not per-GPU totals of all-to-one,
/// one-to-all or broadcast, not host copies): single-node, multinode (GB200/GB300 NVL72
/// domains, processes numbered across the domain) and the multinode bisect pairs.
fn pair_test(test: &str) -> bool {
    let peer = test.starts_with("device_to_device")
        || test.starts_with("multinode_device_to_device")
        || test.starts_with("multinode_bisect");
    peer && !["all_to_one", "all_from_one", "broadcast"]
        .iter()
        .any(|w| test.contains(w))
}

/// The subject of a pair figure: `node 0->1 memcpy_read_ce`.
fn pair_subject(node: &str, src: u32, dst: u32, test: &str) -> String {
    let short = test
        .trim_start_matches("multinode_")
        .trim_start_matches("device_to_device_");
    format!("{node} {src}->{dst} {short}")
}

/// The subject of an RDMA link figure: `node/mlx5_0 write` (the test named when the log
/// showed its banner, so write, read and send are never compared with each other).
fn link_subject(node: &str, device: Option<&str>, test: Option<&str>) -> String {
    let base = format!("{node}/{}", device.unwrap_or("?"));
    match test {
        Some(t) => format!("{base} {t}"),
        None => base,
    }
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The figures of a phase's metrics. Peaks for bandwidths (the tool's sweep reaches them at the
/// large sizes); for training, the median over steps after the first tenth (warm-up).
pub fn figures(metrics: &[PhaseMetric]) -> Figures {
    let mut f = Figures::new();
    // Per node and job size: (step, step time, data wait, tokens/s).
    // Per node and variant, then job size.
    let mut steps: BTreeMap<(String, Option<String>), BTreeMap<u32, Vec<StepRow>>> =
        BTreeMap::new();
    // The most ranks each collective ran with, per node.
    let mut most_ranks: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::BusBw {
            node,
            collective,
            ranks,
            ..
        } = m
        {
            let e = most_ranks
                .entry((collective.as_str(), node.as_deref().unwrap_or("job")))
                .or_default();
            *e = (*e).max(*ranks);
        }
    }
    for m in metrics {
        match m {
            PhaseMetric::Tflops {
                node,
                gpu,
                dtype,
                tflops,
            } => put(
                &mut f,
                format!("tflops_{dtype}"),
                format!("{node}/gpu{gpu}"),
                "",
                *tflops,
                Keep::Max,
            ),
            PhaseMetric::BusBw {
                node,
                collective,
                busbw_gb_per_s,
                ranks,
                ..
            } => {
                let subject = node.clone().unwrap_or_else(|| "job".into());
                let name = busbw_name("busbw", collective, *ranks, &most_ranks, &subject);
                put(&mut f, name, subject, "", *busbw_gb_per_s, Keep::Max)
            }
            PhaseMetric::AvgBusBw {
                node,
                collective,
                ranks,
                gb_per_s,
            } => {
                let subject = node.clone().unwrap_or_else(|| "job".into());
                let name = busbw_name("avg_busbw", collective, *ranks, &most_ranks, &subject);
                put(&mut f, name, subject, "", *gb_per_s, Keep::Max)
            }
            PhaseMetric::PairBw {
                node,
                test,
                src,
                dst,
                gb_per_s,
            } if pair_test(test) => put(
                &mut f,
                "pair_gb_per_s".into(),
                pair_subject(node, *src, *dst, test),
                test,
                *gb_per_s,
                Keep::Max,
            ),
            PhaseMetric::PairLat {
                node,
                test,
                src,
                dst,
                ns,
            } => put(
                &mut f,
                "pair_latency_ns".into(),
                pair_subject(node, *src, *dst, test),
                test,
                *ns,
                Keep::Min,
            ),
            PhaseMetric::LinkBw {
                node,
                device,
                test,
                bw_avg_gbit_per_s,
                ..
            } => put(
                &mut f,
                "link_gbit_per_s".into(),
                link_subject(node, device.as_deref(), test.as_deref()),
                test.as_deref().unwrap_or(""),
                *bw_avg_gbit_per_s,
                Keep::Max,
            ),
            PhaseMetric::LinkLat {
                node,
                device,
                test,
                latency_us,
                ..
            } => put(
                &mut f,
                "link_latency_us".into(),
                link_subject(node, device.as_deref(), test.as_deref()),
                test.as_deref().unwrap_or(""),
                *latency_us,
                Keep::Min,
            ),
            PhaseMetric::Step {
                node,
                step,
                step_time_ms,
                data_wait_ms,
                tokens_per_sec,
                tokens_per_sec_per_gpu,
                world,
                variant,
                ..
            } => steps
                .entry((
                    node.clone().unwrap_or_else(|| "job".into()),
                    variant.clone(),
                ))
                .or_default()
                .entry(world.unwrap_or(0))
                .or_default()
                .push(StepRow {
                    step: *step,
                    step_time_ms: *step_time_ms,
                    data_wait_ms: *data_wait_ms,
                    tokens_per_sec: *tokens_per_sec,
                    tokens_per_sec_per_gpu: *tokens_per_sec_per_gpu,
                }),
            PhaseMetric::FirstBatch { ms } => put(
                &mut f,
                "first_batch_ms".into(),
                "job".into(),
                "",
                *ms,
                Keep::Last,
            ),
            PhaseMetric::Figure { node, name, value } => {
                put(&mut f, name.clone(), node.clone(), "", *value, Keep::Last)
            }
            _ => {}
        }
    }
    for ((node, variant), worlds) in steps {
        // The figures of a node are those of its largest job; a 1-GPU job beside it gives
        // the scaling efficiency. A variant's (e.g. the loader not NUMA-pinned) are kept
        // beside them, suffixed.
        let Some((&largest, rows)) = worlds.iter().next_back() else {
            continue;
        };
        let suffix = variant.map(|v| format!("_{v}")).unwrap_or_default();
        let big = step_figures(rows);
        let per_node = [
            ("step_time_ms", big.step_time_ms),
            ("tokens_per_sec", big.tokens_per_sec),
            ("tokens_per_sec_per_gpu", big.tokens_per_sec_per_gpu),
            ("data_wait_pct", big.data_wait_pct),
        ];
        for (name, value) in per_node {
            if let Some(v) = value {
                put(
                    &mut f,
                    format!("{name}{suffix}"),
                    node.clone(),
                    "",
                    v,
                    Keep::Last,
                );
            }
        }
        if suffix.is_empty()
            && largest > 1
            && let Some(one) = worlds.get(&1).map(|r| step_figures(r))
            && let (Some(t1), Some(tn)) = (one.tokens_per_sec, big.tokens_per_sec)
            && t1 > 0.0
        {
            let pct = 100.0 * tn / (t1 * f64::from(largest));
            put(
                &mut f,
                "scaling_pct".into(),
                node.clone(),
                "",
                pct,
                Keep::Last,
            );
        }
    }
    f
}

/// The name of a busbw figure: the run with the most ranks of its collective on its subject
/// is the one gates judge; smaller runs (2, 4 GPUs) are kept beside it as the scaling curve.
fn busbw_name(
    prefix: &str,
    collective: &str,
    ranks: u32,
    most_ranks: &BTreeMap<(&str, &str), u32>,
    subject: &str,
) -> String {
    let top = most_ranks.get(&(collective, subject)).copied().unwrap_or(0);
    if ranks < top {
        format!("{prefix}_{collective}_{ranks}gpu")
    } else {
        format!("{prefix}_{collective}")
    }
}

/// One step of one job as the figures read it.
#[derive(Debug, Clone, Copy)]
struct StepRow {
    step: u64,
    step_time_ms: Option<f64>,
    data_wait_ms: Option<f64>,
    tokens_per_sec: Option<f64>,
    tokens_per_sec_per_gpu: Option<f64>,
}

/// Medians of one job's steps after the first tenth (warm-up), and its data-wait share.
struct StepFigures {
    step_time_ms: Option<f64>,
    tokens_per_sec: Option<f64>,
    tokens_per_sec_per_gpu: Option<f64>,
    data_wait_pct: Option<f64>,
}

fn step_figures(rows: &[StepRow]) -> StepFigures {
    let mut s = rows.to_vec();
    s.sort_by_key(|x| x.step);
    let skip = if s.len() >= 10 { s.len() / 10 } else { 0 };
    let s = &s[skip..];
    let mut times: Vec<f64> = s.iter().filter_map(|x| x.step_time_ms).collect();
    let mut tokens: Vec<f64> = s.iter().filter_map(|x| x.tokens_per_sec).collect();
    let mut per_gpu: Vec<f64> = s.iter().filter_map(|x| x.tokens_per_sec_per_gpu).collect();
    let waited: Vec<(f64, f64)> = s
        .iter()
        .filter_map(|x| x.data_wait_ms.zip(x.step_time_ms))
        .collect();
    let step_sum: f64 = waited.iter().map(|x| x.1).sum();
    let wait_sum: f64 = waited.iter().map(|x| x.0).sum();
    StepFigures {
        step_time_ms: median(&mut times),
        tokens_per_sec: median(&mut tokens),
        tokens_per_sec_per_gpu: median(&mut per_gpu),
        data_wait_pct: (step_sum > 0.0).then(|| 100.0 * wait_sum / step_sum),
    }
}

/// One subject's figure against the median of its group (its peers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerShare<'a> {
    /// The subject's sample.
    pub sample: &'a Sample,
    /// Median of its group.
    pub median: f64,
    /// The sample as a percentage of that median.
    pub share_pct: f64,
}

/// Every sample of a figure against its group's median, in sample order. Groups of one, and
/// groups whose median is not positive, have no peers to compare with and are left out. The
/// `peers` gate and triage's straggler rule both judge by this.
pub fn peer_shares(samples: &[Sample]) -> Vec<PeerShare<'_>> {
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for s in samples {
        groups.entry(&s.group).or_default().push(s.value);
    }
    let medians: BTreeMap<&str, f64> = groups
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .filter_map(|(g, mut v)| median(&mut v).map(|m| (g, m)))
        .filter(|(_, m)| *m > 0.0)
        .collect();
    samples
        .iter()
        .filter_map(|s| {
            let m = *medians.get(s.group.as_str())?;
            Some(PeerShare {
                sample: s,
                median: m,
                share_pct: 100.0 * s.value / m,
            })
        })
        .collect()
}

/// Figures of a good run, kept as the gates' baseline (`burnin baseline save RUN`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version.
    pub schema: u32,
    /// The run directory it was saved from.
    pub source: String,
    /// Phase id → figures.
    pub phases: BTreeMap<String, Figures>,
}

/// What the runner saw of a phase, beyond its metrics.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Nodes the phase ran on.
    pub nodes: Vec<String>,
    /// Exit status per node (`None`: it ended without one, e.g. killed).
    pub exit: BTreeMap<String, Option<i32>>,
    /// For each `output-contains` text, the nodes whose output showed it.
    pub seen: BTreeMap<String, BTreeSet<String>>,
    /// Lines no parser understood: count and the first one's error.
    pub unparsed: (u64, Option<String>),
    /// What the telemetry saw meanwhile (`None`: no telemetry was watched).
    pub telemetry: Option<crate::model::watch::Window>,
    /// A `together` phase: how each member ended within it (id, verdict, reason).
    pub members: Vec<(String, Verdict, String)>,
    /// A `together` phase: its figures beside the same members' runs alone.
    pub changes: Vec<FigureChange>,
    /// A phase run as one job over the inventory (`mpirun` scope): the GPUs of every node,
    /// which its ranks should number.
    pub expected_ranks: Option<u32>,
    /// GPUs each node of the phase should have, from the inventory (absent: not known).
    pub node_gpus: BTreeMap<String, u32>,
    /// Judged offline from a file (`burnin parse`): no exit status and no telemetry exist,
    /// so the gates that need them say they were not judged instead of warning.
    pub offline: bool,
}

pub use crate::model::phase::FigureChange;

/// The figures of `member` alone and together, subject by subject: those named in `wanted`,
/// or every figure both runs have when `wanted` is empty.
pub fn compare(
    member: &str,
    alone: &Figures,
    together: &Figures,
    wanted: &[String],
) -> Vec<FigureChange> {
    let mut out = Vec::new();
    for (figure, samples) in together {
        if !wanted.is_empty() && !wanted.contains(figure) {
            continue;
        }
        let Some(before) = alone.get(figure) else {
            continue;
        };
        for s in samples {
            if let Some(b) = before.iter().find(|b| b.subject == s.subject) {
                out.push(FigureChange {
                    member: member.to_string(),
                    figure: figure.clone(),
                    subject: s.subject.clone(),
                    alone: b.value,
                    together: s.value,
                });
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Pass,
    Warn,
    Fail,
}

pub use crate::model::figures::fmt_value;

/// Judge a finished phase. `metrics` are all nodes' figures; the reason names the numbers.
pub fn judge(
    spec: &PhaseSpec,
    metrics: &[PhaseMetric],
    observed: &Observed,
    baseline: Option<&Baseline>,
) -> (Verdict, String) {
    let mut findings: Vec<(Level, String)> = Vec::new();
    for (node, code) in &observed.exit {
        match code {
            Some(0) => {}
            Some(c) => findings.push((Level::Fail, format!("{node} exited {c}"))),
            None => findings.push((Level::Fail, format!("{node} ended without an exit status"))),
        }
    }
    let problems: Vec<String> = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::Problem { node, text } => Some(format!("{node}: {text}")),
            _ => None,
        })
        .collect();
    if let Some(first) = problems.first() {
        findings.push((
            Level::Fail,
            format!("{} failure(s), first {first}", problems.len()),
        ));
    }
    if let Some(expected) = observed.expected_ranks {
        let most = metrics
            .iter()
            .filter_map(|m| match m {
                PhaseMetric::BusBw { ranks, .. } => Some(*ranks),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        // Zero: the output listed no ranks (a log without its device list), not judged.
        if most > 0 && most < expected {
            findings.push((
                Level::Fail,
                format!(
                    "the job ran on {most} ranks, the inventory has {expected} GPUs: not every node \
                     took part (an acceptance phase must run on all of them)"
                ),
            ));
        }
    }
    if observed.unparsed.0 > 0 {
        findings.push((
            Level::Warn,
            format!(
                "{} output line(s) not understood ({})",
                observed.unparsed.0,
                observed.unparsed.1.as_deref().unwrap_or("")
            ),
        ));
    }
    for (member, verdict, why) in &observed.members {
        let level = match verdict {
            Verdict::Pass | Verdict::Skipped => continue,
            Verdict::Warn => Level::Warn,
            Verdict::Fail | Verdict::Timeout | Verdict::Aborted => Level::Fail,
        };
        findings.push((level, format!("{member} {}: {why}", verdict.label())));
    }
    let figs = figures(metrics);
    // Whether a check passed: a file of checks measured something (see `Judging::missing`).
    let checked_ok = metrics.iter().any(|m| {
        matches!(
            m,
            PhaseMetric::Check {
                status: CheckStatus::Ok,
                ..
            }
        )
    });
    let summary: Vec<String> = Vec::new();
    // Critical telemetry findings while it ran are worth a look whatever the gates say.
    if let Some(t) = &observed.telemetry {
        let crit: Vec<&str> = t
            .findings
            .iter()
            .filter(|f| f.crit)
            .map(|f| f.text.as_str())
            .collect();
        if let Some(first) = crit.first() {
            findings.push((
                Level::Warn,
                format!(
                    "telemetry during the phase: {} critical, first {first}",
                    crit.len()
                ),
            ));
        }
    }
    let mut said = Said { findings, summary };
    let j = Judging {
        spec,
        observed,
        baseline,
        figs: &figs,
        checked_ok,
    };
    for gate in &spec.gates {
        match gate {
            Gate::Checks => judge_checks(metrics, &mut said),
            Gate::ZeroWrong => judge_zero_wrong(metrics, &mut said),
            Gate::OutputContains { text, evidence } => {
                judge_output_contains(text, evidence, observed, &mut said)
            }
            Gate::Scaling { pct } => judge_scaling(*pct, &j, &mut said),
            Gate::NoXid => judge_no_xid(observed, &mut said),
            Gate::NoFinding { rule } => judge_no_finding(rule, observed, &mut said),
            Gate::LossFalling => judge_loss(true, metrics, &mut said),
            Gate::LossFinite => judge_loss(false, metrics, &mut said),
            Gate::Together { figure, worse_pct } => {
                judge_together(figure, worse_pct, observed, &mut said)
            }
            Gate::Min { figure, value } => judge_bound(true, figure, value, &j, &mut said),
            Gate::Max { figure, value } => judge_bound(false, figure, value, &j, &mut said),
            Gate::Peers { figure, pct } => judge_peers(figure, pct, &j, &mut said),
            Gate::Baseline { figure, pct } => judge_baseline(figure, pct, &j, &mut said),
        }
    }
    let Said {
        mut findings,
        mut summary,
    } = said;
    // The headline numbers, so a PASS says what passed (a `together` phase's are its changes,
    // said by its gates and in its comparison table).
    let headline = if spec.together.is_empty() {
        &figs
    } else {
        &Figures::new()
    };
    for (name, samples) in headline {
        let mut v: Vec<f64> = samples.iter().map(|s| s.value).collect();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        if let Some(med) = median(&mut v) {
            summary.insert(
                0,
                format!(
                    "{name} median {} min {} (n={})",
                    fmt_value(med),
                    fmt_value(lo),
                    samples.len()
                ),
            );
        }
    }
    let level = findings.iter().map(|f| f.0).max().unwrap_or(Level::Pass);
    let verdict = match level {
        Level::Pass => Verdict::Pass,
        Level::Warn => Verdict::Warn,
        Level::Fail => Verdict::Fail,
    };
    findings.sort_by_key(|f| std::cmp::Reverse(f.0));
    // Several gates on one missing figure each say so: once is enough.
    let mut said = BTreeSet::new();
    findings.retain(|f| said.insert(f.1.clone()));
    let mut parts: Vec<String> = findings.into_iter().map(|f| f.1).collect();
    parts.extend(summary);
    if parts.is_empty() {
        parts.push("exit 0 everywhere, no failure lines".into());
    }
    (verdict, parts.join("; "))
}

/// What one judgement says so far: findings (a level and words) and summary lines.
struct Said {
    findings: Vec<(Level, String)>,
    summary: Vec<String>,
}

/// What the gates of one judgement read besides their own numbers.
struct Judging<'a> {
    spec: &'a PhaseSpec,
    observed: &'a Observed,
    baseline: Option<&'a Baseline>,
    figs: &'a Figures,
    /// Some check of the output passed (a file of checks measured something).
    checked_ok: bool,
}

impl Judging<'_> {
    /// A figure a gate reads is missing. In a run the phase's own command made the output, so
    /// that is a failure; a file judged offline may be another command's (an all_gather log
    /// before T4's all_reduce gates): where it measured other figures, it is not judged.
    fn missing(&self, figure: &str) -> (Level, String) {
        let figs = self.figs;
        if self.observed.offline && (!figs.is_empty() || self.checked_ok) {
            let measured: Vec<&str> = figs.keys().map(String::as_str).take(3).collect();
            (
                Level::Warn,
                if measured.is_empty() {
                    format!("no {figure} in this output (it measured something else): not judged")
                } else {
                    format!(
                        "no {figure} in this output (it measured {}{}): not judged",
                        measured.join(", "),
                        if figs.len() > 3 { ", …" } else { "" }
                    )
                },
            )
        } else {
            (Level::Fail, format!("no {figure} in the output"))
        }
    }
}

/// `checks`: every sanity or preflight check held; an unknown one warns.
fn judge_checks(metrics: &[PhaseMetric], said: &mut Said) {
    let checks: Vec<(&String, &String, CheckStatus, &String)> = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::Check {
                node,
                name,
                status,
                detail,
            } => Some((node, name, *status, detail)),
            _ => None,
        })
        .collect();
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| c.2 == CheckStatus::Failed)
        .map(|c| format!("{} {}: {}", c.0, c.1, c.3))
        .collect();
    let unknown: Vec<String> = checks
        .iter()
        .filter(|c| c.2 == CheckStatus::Unknown)
        .map(|c| format!("{} {}: {}", c.0, c.1, c.3))
        .collect();
    let warned: Vec<String> = checks
        .iter()
        .filter(|c| c.2 == CheckStatus::Warn)
        .map(|c| format!("{} {}: {}", c.0, c.1, c.3))
        .collect();
    if checks.is_empty() {
        said.findings
            .push((Level::Fail, "no checks in the output".into()));
    } else if let Some(first) = bad.first() {
        said.findings.push((
            Level::Fail,
            format!("{} check(s) failed, first {first}", bad.len()),
        ));
    } else if let Some(first) = unknown.first() {
        said.findings.push((
            Level::Warn,
            format!(
                "{} check(s) could not be made, first {first}",
                unknown.len()
            ),
        ));
    }
    if bad.is_empty()
        && let Some(first) = warned.first()
    {
        said.findings.push((
            Level::Warn,
            format!("{} check(s) warn, first {first}", warned.len()),
        ));
    }
    said.summary.push(format!(
        "{}/{} checks ok",
        checks.iter().filter(|c| c.2 == CheckStatus::Ok).count(),
        checks.len()
    ));
}

/// `zero-wrong`: nccl-tests found no wrong element; unvalidated rows warn.
fn judge_zero_wrong(metrics: &[PhaseMetric], said: &mut Said) {
    let rows: Vec<(Option<u64>, bool)> = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::BusBw {
                wrong, deviation, ..
            } => Some((*wrong, *deviation)),
            _ => None,
        })
        .collect();
    // Saturating: a damaged row's #wrong can be any u64, and two of them must not wrap to a
    // small count (or panic).
    let wrong: u64 = rows
        .iter()
        .filter_map(|r| r.0)
        .fold(0u64, u64::saturating_add);
    let unvalidated = rows.iter().filter(|r| r.0.is_none() && !r.1).count();
    let by_deviation = rows.iter().filter(|r| r.0.is_none() && r.1).count();
    // The trailer's "Out of bounds values" line (failures become problems) comes
    // right before its "Avg bus bandwidth" line.
    let trailer = metrics
        .iter()
        .any(|m| matches!(m, PhaseMetric::AvgBusBw { .. }));
    if rows.is_empty() {
        said.findings
            .push((Level::Fail, "no nccl-tests rows in the output".into()));
    } else if wrong > 0 {
        said.findings
            .push((Level::Fail, format!("{wrong} wrong elements")));
    } else if unvalidated > 0 {
        said.findings.push((
            Level::Warn,
            format!("{unvalidated} rows not validated (#wrong N/A: run with -c 1)"),
        ));
    } else if by_deviation > 0 && !trailer {
        said.findings.push((
                Level::Warn,
                format!(
                    "{by_deviation} rows of a pre-2.13 nccl-tests print a deviation, not a count, and the log ends before its Out of bounds line judges them"
                ),
            ));
    } else if by_deviation > 0 {
        said.summary.push(format!(
            "{by_deviation} rows checked by deviation (pre-2.13), judged by the Out of bounds line"
        ));
    } else {
        said.summary
            .push(format!("#wrong 0 over {} rows", rows.len()));
    }
}

/// `output-contains`: the text on every node that ran; where no `evidence` line came, not judged.
fn judge_output_contains(
    text: &String,
    evidence: &Option<String>,
    observed: &Observed,
    said: &mut Said,
) {
    let showed = |t: &String, n: &String| observed.seen.get(t).is_some_and(|s| s.contains(n));
    let (missing, silent): (Vec<&String>, Vec<&String>) = observed
        .nodes
        .iter()
        .filter(|n| !showed(text, n))
        .partition(|n| evidence.as_ref().is_none_or(|e| showed(e, n)));
    if !silent.is_empty() {
        said.findings.push((
            Level::Warn,
            format!(
                "{text:?} not judged on {}: no {:?} line in the output",
                silent
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                evidence.as_deref().unwrap_or_default()
            ),
        ));
    }
    if !missing.is_empty() {
        said.findings.push((
            Level::Fail,
            format!(
                "{text:?} not in the output of {}",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
}

/// `scaling`: the full job at least `pct` % of 1-GPU tokens/s × GPUs, per node.
fn judge_scaling(pct: f64, j: &Judging<'_>, said: &mut Said) {
    let observed = j.observed;
    let pct = &pct;
    match j.figs.get("scaling_pct") {
        // A node of one GPU has nothing to scale to: its full job is the 1-GPU job.
        None if !observed.nodes.is_empty()
            && observed
                .nodes
                .iter()
                .all(|n| observed.node_gpus.get(n) == Some(&1)) =>
        {
            said.summary.push("scaling n/a: 1 GPU per node".into())
        }
        None => said.findings.push((
            Level::Warn,
            "scaling not judged: no run on 1 GPU beside a larger one".into(),
        )),
        Some(samples) => {
            let low: Vec<&Sample> = samples.iter().filter(|s| s.value < *pct).collect();
            if let Some(first) = low.first() {
                said.findings.push((
                    Level::Fail,
                    format!(
                        "scaling below {pct} % on {} node(s), first {} {:.0} %",
                        low.len(),
                        first.subject,
                        first.value
                    ),
                ));
            }
        }
    }
}

/// `no-xid`: no Xid reached the telemetry from the phase's nodes while it ran.
fn judge_no_xid(observed: &Observed, said: &mut Said) {
    match &observed.telemetry {
        None if observed.offline => said
            .summary
            .push("Xid not judged (no telemetry in a file)".into()),
        None => said
            .findings
            .push((Level::Warn, "no telemetry watched: Xid not judged".into())),
        Some(t) => {
            if let Some(x) = t.xids.first() {
                said.findings.push((
                    Level::Fail,
                    format!(
                        "{} Xid during the phase, first Xid {} on {} GPU{}",
                        t.xids.len(),
                        x.code,
                        x.node,
                        x.gpu
                    ),
                ));
            } else if !t.silent.is_empty() {
                said.findings.push((
                    Level::Warn,
                    format!(
                        "no telemetry from {}: Xid not judged there",
                        t.silent.join(", ")
                    ),
                ));
            } else {
                said.summary.push("no Xid".into());
            }
        }
    }
}

/// `no-finding`: the telemetry's triage raised no `rule` finding on the phase's nodes while it
/// ran (the window holds only the phase's nodes).
fn judge_no_finding(rule: &str, observed: &Observed, said: &mut Said) {
    match &observed.telemetry {
        None if observed.offline => said
            .summary
            .push(format!("{rule} not judged (no telemetry in a file)")),
        None => said.findings.push((
            Level::Warn,
            format!("no telemetry watched: {rule} not judged"),
        )),
        Some(t) => {
            let hits: Vec<&str> = t
                .findings
                .iter()
                .filter(|f| f.rule == rule)
                .map(|f| f.text.as_str())
                .collect();
            if let Some(first) = hits.first() {
                said.findings.push((
                    Level::Fail,
                    format!(
                        "{} {rule} finding(s) during the phase, first {first}",
                        hits.len()
                    ),
                ));
            } else if !t.silent.is_empty() {
                said.findings.push((
                    Level::Warn,
                    format!(
                        "no telemetry from {}: {rule} not judged there",
                        t.silent.join(", ")
                    ),
                ));
            } else {
                said.summary.push(format!("no {rule}"));
            }
        }
    }
}

/// `loss-falling` and `loss-finite`: per job, loss finite throughout (and falling, when `falling`).
fn judge_loss(falling: bool, metrics: &[PhaseMetric], said: &mut Said) {
    // Per job: a node's series starts a new job where its step count starts over
    // (the same workload run twice, e.g. on one GPU and then on all).
    let mut jobs: BTreeMap<String, Vec<Vec<(u64, f64)>>> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::Step {
            node,
            step,
            loss: Some(loss),
            world,
            variant,
            ..
        } = m
        {
            // Each job on its own (a 1-GPU run beside the full one starts over).
            let node = node.clone().unwrap_or_else(|| "job".into());
            let mut key = match world {
                Some(w) => format!("{node} ({w} GPU)"),
                None => node,
            };
            if let Some(v) = variant {
                key = format!("{key} {v}");
            }
            let runs = jobs.entry(key).or_default();
            match runs.last_mut() {
                Some(run) if run.last().is_some_and(|(last, _)| step > last) => {
                    run.push((*step, *loss))
                }
                _ => runs.push(vec![(*step, *loss)]),
            }
        }
    }
    if jobs.is_empty() {
        said.findings
            .push((Level::Fail, "no loss in the output".into()));
    }
    let labelled = jobs.into_iter().flat_map(|(key, runs)| {
        let several = runs.len() > 1;
        runs.into_iter().enumerate().map(move |(i, run)| {
            let label = if several {
                format!("{key} job {}", i + 1)
            } else {
                key.clone()
            };
            (label, run)
        })
    });
    for (node, mut s) in labelled {
        s.sort_by_key(|x| x.0);
        if let Some((step, l)) = s.iter().find(|x| !x.1.is_finite()) {
            said.findings
                .push((Level::Fail, format!("{node}: loss {l} at step {step}")));
            continue;
        }
        // A loss of exactly 0 is no training signal: labels all masked, or an
        // fp16 overflow the trainer skipped and logged as 0.
        let last = s.last().map_or(f64::NAN, |x| x.1);
        if s.len() >= 2 && last == 0.0 {
            let zeros = s.iter().rev().take_while(|x| x.1 == 0.0).count();
            said.findings.push((
                    Level::Fail,
                    format!(
                        "{node}: loss 0 on the last {zeros} of {} logged steps: no training signal (labels all masked, or an fp16 overflow skipped and logged as 0)",
                        s.len()
                    ),
                ));
            continue;
        }
        // The first and last fifth of the steps, so one noisy step decides nothing.
        let k = (s.len() / 5).max(1);
        let head: f64 = s[..k].iter().map(|x| x.1).sum::<f64>() / k as f64;
        let tail: f64 = s[s.len() - k..].iter().map(|x| x.1).sum::<f64>() / k as f64;
        if !falling {
            said.summary
                .push(format!("{node} loss finite over {} steps", s.len()));
        } else if s.len() < MIN_LOSS_STEPS {
            said.findings.push((
                    Level::Warn,
                    format!(
                        "{node}: {} logged step(s) are too few to tell whether loss falls (it takes {MIN_LOSS_STEPS}; {} -> {})",
                        s.len(),
                        fmt_value(head),
                        fmt_value(tail)
                    ),
                ));
        } else if tail >= head {
            said.findings.push((
                Level::Fail,
                format!(
                    "{node}: loss not falling ({} -> {} over {} steps)",
                    fmt_value(head),
                    fmt_value(tail),
                    s.len()
                ),
            ));
        } else {
            said.summary.push(format!(
                "{node} loss {} -> {}",
                fmt_value(head),
                fmt_value(tail)
            ));
        }
    }
}

/// `together`: beside the others, no subject more than `worse_pct` % worse than alone.
fn judge_together(figure: &String, worse_pct: &f64, observed: &Observed, said: &mut Said) {
    let rows: Vec<&FigureChange> = observed
        .changes
        .iter()
        .filter(|c| c.figure == *figure)
        .collect();
    // The first of equals (max_by keeps the last).
    let worst = rows
        .iter()
        .rev()
        .max_by(|a, b| a.worse_pct().total_cmp(&b.worse_pct()));
    match worst {
        None => said.findings.push((
            Level::Warn,
            format!("{figure} not compared: no member gave it both alone and together"),
        )),
        Some(w) => {
            let over = rows.iter().filter(|c| c.worse_pct() > *worse_pct).count();
            if over > 0 {
                said.findings.push((
                        Level::Fail,
                        format!(
                            "{figure} more than {worse_pct} % worse together on {over} subject(s), worst {} {} {}",
                            w.member,
                            w.subject,
                            w.describe()
                        ),
                    ));
            } else {
                said.summary.push(format!(
                    "{figure} together: worst {} {} {}",
                    w.member,
                    w.subject,
                    w.describe()
                ));
            }
        }
    }
}

/// `min` and `max`: every subject's figure within `value`.
fn judge_bound(is_min: bool, figure: &String, value: &f64, j: &Judging<'_>, said: &mut Said) {
    let Some(samples) = j.figs.get(figure) else {
        said.findings.push(j.missing(figure));
        return;
    };
    let bad: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            if is_min {
                s.value < *value
            } else {
                s.value > *value
            }
        })
        .collect();
    if let Some(first) = bad.first() {
        said.findings.push((
            Level::Fail,
            format!(
                "{figure} {} {} on {} (limit {})",
                first.subject,
                fmt_value(first.value),
                if bad.len() > 1 {
                    format!("{} subjects", bad.len())
                } else {
                    "1 subject".into()
                },
                fmt_value(*value)
            ),
        ));
    }
}

/// `peers`: no subject below `pct` % of its peers' median.
fn judge_peers(figure: &String, pct: &f64, j: &Judging<'_>, said: &mut Said) {
    let Some(samples) = j.figs.get(figure) else {
        said.findings.push(j.missing(figure));
        return;
    };
    let shares = peer_shares(samples);
    let stragglers = shares.iter().filter(|p| p.share_pct < *pct).count();
    let worst = shares
        .iter()
        .min_by(|a, b| a.share_pct.total_cmp(&b.share_pct))
        .map(|p| (p.share_pct, p.sample, p.median));
    match worst {
        Some((share, s, med)) if stragglers > 0 => said.findings.push((
            Level::Fail,
            format!(
                "{stragglers} straggler(s) on {figure}: {} {} = {share:.0} % of peer median {}",
                s.subject,
                fmt_value(s.value),
                fmt_value(med)
            ),
        )),
        Some((share, s, _)) => said.summary.push(format!(
            "{figure} slowest {} at {share:.0} % of peers",
            s.subject
        )),
        None => said.summary.push(format!("{figure}: no peers to compare")),
    }
}

/// `baseline`: every subject at least `pct` % of the saved baseline's.
fn judge_baseline(figure: &String, pct: &f64, j: &Judging<'_>, said: &mut Said) {
    let Some(samples) = j.figs.get(figure) else {
        said.findings.push(j.missing(figure));
        return;
    };
    let base = j
        .baseline
        .and_then(|b| b.phases.get(&j.spec.id))
        .and_then(|p| p.get(figure));
    let Some(base) = base.filter(|b| !b.is_empty()) else {
        said.findings.push((
            Level::Warn,
            format!("no baseline for {figure}: not judged (burnin baseline save RUN_DIR)"),
        ));
        return;
    };
    let mut all: Vec<f64> = base.iter().map(|s| s.value).collect();
    let Some(fallback) = median(&mut all) else {
        return;
    };
    let mut below = Vec::new();
    for s in samples {
        let b = base
            .iter()
            .find(|x| x.subject == s.subject)
            .map_or(fallback, |x| x.value);
        if b > 0.0 && 100.0 * s.value / b < *pct {
            below.push((s, b));
        }
    }
    if let Some((s, b)) = below.first() {
        said.findings.push((
            Level::Fail,
            format!(
                "{} below {pct} % of baseline on {figure}, first {} {} = {:.0} % of {}",
                below.len(),
                s.subject,
                fmt_value(s.value),
                100.0 * s.value / b,
                fmt_value(*b)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::default_plan;

    #[test]
    fn wrong_counts_past_u64_saturate_and_fail() {
        // Found by a long run of tests/fuzz.rs: two damaged rows' #wrong summed past u64.
        let row = |w: u64| PhaseMetric::BusBw {
            node: Some("n".into()),
            collective: "all_reduce".into(),
            size_bytes: 8,
            busbw_gb_per_s: 1.0,
            algbw_gb_per_s: 1.0,
            wrong: Some(w),
            deviation: false,
            ranks: 2,
        };
        let mut said = Said {
            findings: Vec::new(),
            summary: Vec::new(),
        };
        judge_zero_wrong(&[row(u64::MAX), row(u64::MAX)], &mut said);
        assert_eq!(said.findings[0].0, Level::Fail);
        assert!(
            said.findings[0].1.contains(&u64::MAX.to_string()),
            "{:?}",
            said.findings
        );
    }

    fn tflops(node: &str, gpu: u32, v: f64) -> PhaseMetric {
        PhaseMetric::Tflops {
            node: node.into(),
            gpu,
            dtype: "bf16".into(),
            tflops: v,
        }
    }

    fn observed(nodes: &[&str]) -> Observed {
        Observed {
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            exit: nodes.iter().map(|s| (s.to_string(), Some(0))).collect(),
            // Watched throughout, and quiet.
            telemetry: Some(crate::model::watch::Window::default()),
            ..Observed::default()
        }
    }

    fn fp8_too(m: &mut Vec<PhaseMetric>) {
        let extra: Vec<PhaseMetric> = m
            .iter()
            .filter_map(|x| match x {
                PhaseMetric::Tflops {
                    node, gpu, tflops, ..
                } => Some(PhaseMetric::Tflops {
                    node: node.clone(),
                    gpu: *gpu,
                    dtype: "fp8".into(),
                    tflops: tflops * 2.0,
                }),
                _ => None,
            })
            .collect();
        m.extend(extra);
    }

    #[test]
    fn a_straggler_gpu_fails_t2_with_numbers() {
        let t2 = default_plan().find("T2").unwrap();
        let mut m: Vec<PhaseMetric> = (0..8).map(|g| tflops("n1", g, 700.0 + g as f64)).collect();
        m.push(tflops("n2", 0, 560.0));
        fp8_too(&mut m);
        let (v, why) = judge(t2, &m, &observed(&["n1", "n2"]), None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(
            why.contains("n2/gpu0 560 = 80 % of peer median 703"),
            "{why}"
        );
    }

    #[test]
    fn without_a_baseline_t2_warns_and_says_so() {
        let t2 = default_plan().find("T2").unwrap();
        let mut m: Vec<PhaseMetric> = (0..8).map(|g| tflops("n1", g, 700.0)).collect();
        fp8_too(&mut m);
        let (v, why) = judge(t2, &m, &observed(&["n1"]), None);
        assert_eq!(v, Verdict::Warn, "{why}");
        assert!(why.contains("no baseline for tflops_bf16"), "{why}");
        let base = Baseline {
            schema: 1,
            source: "r".into(),
            phases: [("T2".to_string(), figures(&m))].into_iter().collect(),
        };
        let (v, why) = judge(t2, &m, &observed(&["n1"]), Some(&base));
        assert_eq!(v, Verdict::Pass, "{why}");
        assert!(why.contains("tflops_bf16 median 700"), "{why}");
        let slower: Vec<PhaseMetric> = m
            .iter()
            .map(|x| match x {
                PhaseMetric::Tflops {
                    node,
                    gpu,
                    dtype,
                    tflops,
                } => PhaseMetric::Tflops {
                    node: node.clone(),
                    gpu: *gpu,
                    dtype: dtype.clone(),
                    tflops: tflops * 0.85,
                },
                o => o.clone(),
            })
            .collect();
        let (v, why) = judge(t2, &slower, &observed(&["n1"]), Some(&base));
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(
            why.contains("8 below 90 % of baseline on tflops_bf16"),
            "{why}"
        );
    }

    #[test]
    fn smaller_nccl_runs_are_kept_as_the_scaling_curve() {
        let row = |ranks: u32, busbw: f64| PhaseMetric::BusBw {
            node: Some("n1".into()),
            collective: "all_reduce".into(),
            size_bytes: 1 << 30,
            busbw_gb_per_s: busbw,
            algbw_gb_per_s: busbw / 1.75,
            wrong: Some(0),
            ranks,
            deviation: false,
        };
        let f = figures(&[row(2, 300.0), row(4, 600.0), row(8, 800.0)]);
        assert_eq!(f["busbw_all_reduce"][0].value, 800.0);
        assert_eq!(f["busbw_all_reduce_2gpu"][0].value, 300.0);
        assert_eq!(f["busbw_all_reduce_4gpu"][0].value, 600.0);
    }

    #[test]
    fn the_unpinned_loader_run_is_kept_beside_the_pinned_one() {
        let step = |i: u64, wait: f64, variant: Option<&str>| PhaseMetric::Step {
            node: Some("n1".into()),
            step: i,
            step_time_ms: Some(100.0),
            data_wait_ms: Some(wait),
            tokens_per_sec: Some(1000.0),
            tokens_per_sec_per_gpu: None,
            loss: Some(10.0),
            world: Some(8),
            variant: variant.map(str::to_string),
        };
        let mut m: Vec<PhaseMetric> = (0..10).map(|i| step(i, 12.0, Some("numa_off"))).collect();
        m.extend((0..10).map(|i| step(i, 3.0, None)));
        let f = figures(&m);
        assert_eq!(f["data_wait_pct"][0].value, 3.0);
        assert_eq!(f["data_wait_pct_numa_off"][0].value, 12.0);
        let t8 = default_plan().find("T8").unwrap();
        let (_, why) = judge(t8, &m, &observed(&["n1"]), None);
        assert!(why.contains("data_wait_pct_numa_off median 12.0"), "{why}");
    }

    #[test]
    fn output_contains_with_evidence_warns_where_the_tool_was_silent() {
        let t7 = default_plan().find("T7").unwrap();
        let row = |node: &str| PhaseMetric::BusBw {
            node: Some(node.into()),
            collective: "all_reduce".into(),
            size_bytes: 1 << 30,
            ranks: 16,
            busbw_gb_per_s: 400.0,
            algbw_gb_per_s: 213.0,
            wrong: Some(0),
            deviation: false,
        };
        let m = vec![row("n1"), row("n2"), row("n3")];
        let mut o = observed(&["n1", "n2", "n3"]);
        // n1 named NET/IB; n2 named another network; n3 never said which (no INFO lines).
        for (text, nodes) in [
            ("NET/IB", &["n1"][..]),
            ("Using network", &["n1", "n2"][..]),
        ] {
            o.seen
                .insert(text.into(), nodes.iter().map(|n| n.to_string()).collect());
        }
        let (v, why) = judge(t7, &m, &o, None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(why.contains("\"NET/IB\" not in the output of n2"), "{why}");
        assert!(
            why.contains("\"NET/IB\" not judged on n3: no \"Using network\" line in the output"),
            "{why}"
        );
        // Only silent nodes: WARN, never a FAIL for want of a line the tool never prints.
        o.seen
            .insert("Using network".into(), ["n1".to_string()].into());
        o.nodes = vec!["n1".into(), "n3".into()];
        let (v, why) = judge(t7, &m, &o, None);
        assert_eq!(v, Verdict::Warn, "{why}");
    }

    #[test]
    fn a_missing_figure_fails_a_run_but_not_a_file_that_measured_something_else() {
        let t4 = default_plan().find("T4").unwrap();
        let m = vec![PhaseMetric::BusBw {
            node: Some("n1".into()),
            collective: "all_gather".into(),
            size_bytes: 1 << 30,
            ranks: 8,
            busbw_gb_per_s: 350.0,
            algbw_gb_per_s: 400.0,
            wrong: Some(0),
            deviation: false,
        }];
        let mut o = observed(&["n1"]);
        let (v, why) = judge(t4, &m, &o, None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(why.contains("no busbw_all_reduce in the output"), "{why}");
        o.offline = true;
        let (v, why) = judge(t4, &m, &o, None);
        assert_eq!(v, Verdict::Warn, "{why}");
        assert!(
            why.contains(
                "no busbw_all_reduce in this output (it measured busbw_all_gather): not judged"
            ),
            "{why}"
        );
        // A file that measured nothing still fails.
        let (v, _) = judge(t4, &[], &o, None);
        assert_eq!(v, Verdict::Fail);
    }

    #[test]
    fn scaling_compares_the_full_job_with_one_gpu() {
        let t5 = default_plan().find("T5").unwrap();
        let step = |node: &str, world: u32, i: u64, tokens: f64| PhaseMetric::Step {
            node: Some(node.into()),
            step: i,
            step_time_ms: Some(100.0),
            data_wait_ms: Some(1.0),
            tokens_per_sec: Some(tokens),
            tokens_per_sec_per_gpu: None,
            loss: Some(5.0 - i as f64 * 0.01),
            world: Some(world),
            variant: None,
        };
        let mut m = Vec::new();
        for i in 0..20 {
            m.push(step("n1", 1, i, 1000.0));
            m.push(step("n1", 8, i, 7000.0)); // 87.5 %
            m.push(step("n2", 1, i, 1000.0));
            m.push(step("n2", 8, i, 6000.0)); // 75 %: below 81
        }
        let f = figures(&m);
        assert_eq!(f["scaling_pct"][0].value, 87.5);
        assert_eq!(
            f["tokens_per_sec"][0].value, 7000.0,
            "the full job's figure"
        );
        let (v, why) = judge(t5, &m, &observed(&["n1", "n2"]), None);
        assert_eq!(v, Verdict::Fail);
        assert!(
            why.contains("scaling below 81 % on 1 node(s), first n2 75 %"),
            "{why}"
        );
        assert!(why.contains("n1 (8 GPU) loss"), "{why}");
        // One GPU only: not judged, and said.
        let one: Vec<PhaseMetric> = (0..20).map(|i| step("n1", 1, i, 1000.0)).collect();
        let (_, why) = judge(t5, &one, &observed(&["n1"]), None);
        assert!(why.contains("scaling not judged"), "{why}");
        // ... unless the node has one GPU: nothing to scale to, the gate holds and says so.
        let mut single = observed(&["n1"]);
        single.node_gpus.insert("n1".into(), 1);
        let (v, why) = judge(t5, &one, &single, None);
        assert!(why.contains("scaling n/a: 1 GPU per node"), "{why}");
        assert!(!why.contains("scaling not judged"), "{why}");
        assert_ne!(v, Verdict::Fail, "{why}");
        // A node of 8 GPUs whose jobs all ran on 1 is still not judged.
        single.node_gpus.insert("n1".into(), 8);
        let (_, why) = judge(t5, &one, &single, None);
        assert!(why.contains("scaling not judged"), "{why}");
    }

    #[test]
    fn a_job_run_twice_is_judged_per_run() {
        let t5 = default_plan().find("T5").unwrap();
        let step = |i: u64, loss: f64| PhaseMetric::Step {
            node: Some("n1".into()),
            step: i,
            step_time_ms: Some(100.0),
            data_wait_ms: Some(1.0),
            tokens_per_sec: Some(1000.0),
            tokens_per_sec_per_gpu: None,
            loss: Some(loss),
            world: Some(1),
            variant: None,
        };
        // Both runs fall on their own; merged by step number they would not.
        let mut m: Vec<PhaseMetric> = (0..20).map(|i| step(i, 9.0 - i as f64 * 0.2)).collect();
        m.extend((0..20).map(|i| step(i, 9.5 - i as f64 * 0.1)));
        let (_, why) = judge(t5, &m, &observed(&["n1"]), None);
        assert!(why.contains("n1 (1 GPU) job 1 loss 8.70 -> 5.50"), "{why}");
        assert!(why.contains("n1 (1 GPU) job 2 loss 9.35 -> 7.75"), "{why}");
        assert!(!why.contains("not falling"), "{why}");
    }

    #[test]
    fn xid_and_unwatched_nodes() {
        use crate::model::watch::{Window, XidSeen};
        let t2 = default_plan().find("T2").unwrap();
        let mut m: Vec<PhaseMetric> = (0..2).map(|g| tflops("n1", g, 700.0)).collect();
        fp8_too(&mut m);
        let mut o = observed(&["n1"]);
        o.telemetry = None;
        let (v, why) = judge(t2, &m, &o, None);
        assert_eq!(v, Verdict::Warn);
        assert!(
            why.contains("no telemetry watched: Xid not judged"),
            "{why}"
        );
        o.telemetry = Some(Window {
            silent: vec!["n1".into()],
            ..Window::default()
        });
        let (_, why) = judge(t2, &m, &o, None);
        assert!(why.contains("no telemetry from n1"), "{why}");
        o.telemetry = Some(Window {
            xids: vec![XidSeen {
                node: "n1".into(),
                gpu: 1,
                code: 48,
                at_ms: 5,
            }],
            ..Window::default()
        });
        let (v, why) = judge(t2, &m, &o, None);
        assert_eq!(v, Verdict::Fail);
        assert!(
            why.starts_with("1 Xid during the phase, first Xid 48 on n1 GPU1"),
            "{why}"
        );
    }

    #[test]
    fn nvlink_errors_beside_t3_fail_it_and_unwatched_nodes_warn() {
        use crate::model::watch::{FindingSeen, Window};
        let t3 = default_plan().find("T3").unwrap();
        let mut m: Vec<PhaseMetric> = (0..4)
            .map(|d| PhaseMetric::PairBw {
                node: "n1".into(),
                test: "device_to_device_memcpy_read_ce".into(),
                src: 0,
                dst: d + 1,
                gb_per_s: 742.0,
            })
            .collect();
        m.push(PhaseMetric::Check {
            node: "n1".into(),
            name: "nvbandwidth-testcase".into(),
            status: CheckStatus::Ok,
            detail: "4 cell(s) measured".into(),
        });
        let mut o = observed(&["n1"]);
        let (v, why) = judge(t3, &m, &o, None);
        assert_ne!(v, Verdict::Fail, "{why}");
        assert!(why.contains("no nvlink-errors"), "{why}");
        // A warn finding of the rule fails the gate: its severity is triage's, the gate's
        // promise is that the counters did not rise.
        o.telemetry = Some(Window {
            findings: vec![FindingSeen {
                at_ms: 5,
                node: Some("n1".into()),
                rule: "nvlink-errors".into(),
                text: "warn nvlink-errors n1 GPU1: NVLink CRC +128 in the last 10 s".into(),
                crit: false,
            }],
            ..Window::default()
        });
        let (v, why) = judge(t3, &m, &o, None);
        assert_eq!(v, Verdict::Fail);
        assert!(
            why.starts_with(
                "1 nvlink-errors finding(s) during the phase, first warn nvlink-errors n1 GPU1"
            ),
            "{why}"
        );
        o.telemetry = Some(Window {
            silent: vec!["n1".into()],
            ..Window::default()
        });
        let (v, why) = judge(t3, &m, &o, None);
        assert_eq!(v, Verdict::Warn);
        assert!(
            why.contains("no telemetry from n1: nvlink-errors not judged there"),
            "{why}"
        );
        // A file judged offline has no telemetry to read: not judged, not a warning.
        o.telemetry = None;
        o.offline = true;
        let (_, why) = judge(t3, &m, &o, None);
        assert!(
            why.contains("nvlink-errors not judged (no telemetry in a file)"),
            "{why}"
        );
    }

    #[test]
    fn exit_status_and_failure_lines_fail_any_phase() {
        let t4 = default_plan().find("T4").unwrap();
        let mut o = observed(&["n1", "n2"]);
        o.exit.insert("n2".into(), Some(1));
        let m = vec![PhaseMetric::Problem {
            node: "n1".into(),
            text: "n1: Test NCCL failure common.cu:1204".into(),
        }];
        let (v, why) = judge(t4, &m, &o, None);
        assert_eq!(v, Verdict::Fail);
        assert!(why.starts_with("n2 exited 1; 1 failure(s)"), "{why}");
        assert!(why.contains("no nccl-tests rows"), "{why}");
    }

    #[test]
    fn training_figures_skip_warmup_and_judge_loss() {
        let t5 = default_plan().find("T5").unwrap();
        let step = |node: &str, i: u64, loss: f64| PhaseMetric::Step {
            node: Some(node.into()),
            step: i,
            step_time_ms: Some(if i < 2 { 5000.0 } else { 100.0 }),
            data_wait_ms: Some(if i < 2 { 4000.0 } else { 2.0 }),
            tokens_per_sec: Some(if i < 2 { 10.0 } else { 1000.0 }),
            tokens_per_sec_per_gpu: None,
            loss: Some(loss),
            world: None,
            variant: None,
        };
        let m: Vec<PhaseMetric> = (0..20)
            .map(|i| step("n1", i, 5.0 - i as f64 * 0.1))
            .collect();
        let f = figures(&m);
        assert_eq!(f["tokens_per_sec"][0].value, 1000.0);
        assert_eq!(f["data_wait_pct"][0].value, 2.0);
        let (v, why) = judge(t5, &m, &observed(&["n1"]), None);
        assert_eq!(v, Verdict::Warn, "{why}");
        assert!(why.contains("n1 loss 4.85 -> 3.25"), "{why}");
        // A few logged steps say nothing of a trend: too few, said so, not a FAIL.
        let (v, why) = judge(t5, &m[..6], &observed(&["n1"]), None);
        assert_eq!(v, Verdict::Warn, "{why}");
        assert!(why.contains("6 logged step(s) are too few"), "{why}");
        // A loss that collapsed to exactly 0 is no training.
        let zero: Vec<PhaseMetric> = (0..20)
            .map(|i| step("n1", i, if i < 3 { 5.0 } else { 0.0 }))
            .collect();
        let (v, why) = judge(t5, &zero, &observed(&["n1"]), None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(
            why.contains("loss 0 on the last 17 of 20 logged steps"),
            "{why}"
        );
        let flat: Vec<PhaseMetric> = (0..20).map(|i| step("n1", i, f64::NAN)).collect();
        let (v, why) = judge(t5, &flat, &observed(&["n1"]), None);
        assert_eq!(v, Verdict::Fail);
        assert!(why.contains("loss NaN at step 0"), "{why}");
    }

    /// The H200 run's logs, parsed again, give the figures its summary recorded.
    #[test]
    fn the_h200_run_record_reparses_to_its_own_figures() {
        use crate::parsers::{OutputParser, ParseContext, ParserKind};
        let summary: serde_json::Value = serde_json::from_str(
            &crate::parsers::fixtures::tool_output("h200-run/run1/summary.json"),
        )
        .unwrap();
        for (id, kind) in [
            ("T1", ParserKind::Sanity),
            ("T2", ParserKind::Workload),
            ("T5", ParserKind::Workload),
            ("T8", ParserKind::Workload),
        ] {
            let mut p = OutputParser::new(
                kind,
                ParseContext {
                    node: "h200".into(),
                    expected_gpus: 1,
                },
            );
            let mut m = Vec::new();
            for line in
                crate::parsers::fixtures::tool_output(&format!("h200-run/run1/logs/{id}/h200.log"))
                    .lines()
            {
                // These logs were recorded before the runner's notes left the node logs; its
                // launch line is the only one that is not the tool's.
                if !line.starts_with("burnin: launched") {
                    m.extend(p.push(line).unwrap());
                }
            }
            m.extend(p.finish());
            let phase = summary["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["id"] == id)
                .unwrap();
            let recorded: Figures = serde_json::from_value(phase["figures"].clone()).unwrap();
            assert_eq!(figures(&m), recorded, "{id}");
            if id == "T1" {
                let ok = m
                    .iter()
                    .filter(|x| {
                        matches!(
                            x,
                            PhaseMetric::Check {
                                status: CheckStatus::Ok,
                                ..
                            }
                        )
                    })
                    .count();
                assert_eq!(ok, 3);
            }
        }
        let t2 = &summary["phases"][1]["figures"];
        assert_eq!(t2["tflops_bf16"][0]["value"], 664.9);
        assert_eq!(t2["tflops_fp8"][0]["value"], 1221.0);
    }

    #[test]
    fn a_together_phase_is_judged_by_how_much_worse_each_figure_got() {
        let c1 = default_plan().find("C1").expect("C1");
        let fig = |name: &str, rows: &[(&str, f64)]| -> Figures {
            let mut f = Figures::new();
            for (subject, value) in rows {
                put(
                    &mut f,
                    name.into(),
                    (*subject).into(),
                    "",
                    *value,
                    Keep::Last,
                );
            }
            f
        };
        // T7's busbw alone and together; S2's p99 TTFB alone and together.
        let mut changes = compare(
            "T7",
            &fig("busbw_all_reduce", &[("job", 400.0)]),
            &fig("busbw_all_reduce", &[("job", 376.0)]),
            &["busbw_all_reduce".into()],
        );
        changes.extend(compare(
            "S2",
            &fig("s3_ttfb_p99_ms_c32", &[("gpu01", 10.0), ("gpu02", 12.0)]),
            &fig(
                "s3_ttfb_p99_ms_c32",
                &[("gpu01", 14.0), ("gpu02", 19.0), ("gpu03", 1.0)],
            ),
            &[],
        ));
        // gpu03 has nothing alone: not compared.
        assert_eq!(changes.len(), 3);
        assert!(
            (changes[0].worse_pct() - 6.0).abs() < 1e-9,
            "busbw 6 % lower"
        );
        assert!(
            (changes[2].worse_pct() - 100.0 * 7.0 / 12.0).abs() < 1e-9,
            "p99 58 % higher"
        );
        assert_eq!(changes[0].describe(), "400 -> 376 (-6.0 %)");
        let observed = |changes: Vec<FigureChange>| Observed {
            members: vec![
                ("T7".into(), Verdict::Pass, "ok".into()),
                ("S2".into(), Verdict::Pass, "ok".into()),
            ],
            changes,
            telemetry: Some(Default::default()),
            ..Observed::default()
        };
        let (v, why) = judge(c1, &[], &observed(changes.clone()), None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(
            why.contains("s3_ttfb_p99_ms_c32 more than 50 % worse together on 1 subject(s), worst S2 gpu02 12.0 -> 19.0 (+58.3 %)"),
            "{why}"
        );
        assert!(
            why.contains("busbw_all_reduce together: worst T7 job 400 -> 376 (-6.0 %)"),
            "{why}"
        );
        // Within the contract: PASS, and the reason says the changes, not the raw figures.
        changes[2].together = 17.0;
        let (v, why) = judge(c1, &[], &observed(changes.clone()), None);
        assert_eq!(v, Verdict::Pass, "{why}");
        assert!(!why.contains("median"), "{why}");
        // A figure nobody gave both ways is not judged: WARN, saying which.
        let (v, why) = judge(c1, &[], &observed(changes[..1].to_vec()), None);
        assert_eq!(v, Verdict::Warn, "{why}");
        assert!(why.contains("s3_ttfb_p99_ms_c32 not compared"), "{why}");
        // A member that failed beside the other fails the group, whatever the figures.
        let mut o = observed(changes.clone());
        o.members[0] = ("T7".into(), Verdict::Fail, "node01 exited 1".into());
        let (v, why) = judge(c1, &[], &o, None);
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(why.starts_with("T7 FAIL: node01 exited 1"), "{why}");
        // From zero: errors appearing only together are infinitely worse.
        let errors = FigureChange {
            member: "S2".into(),
            figure: "s3_errors".into(),
            subject: "gpu01".into(),
            alone: 0.0,
            together: 3.0,
        };
        assert!(errors.worse_pct().is_infinite() && errors.change_pct().is_none());
        assert_eq!(errors.describe(), "0.00 -> 3.00 (from 0)");
    }
}
