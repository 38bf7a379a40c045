//! Judging a phase: the figures its metrics add up to (per GPU, per node, per pair, per link),
//! the plan's gates over them, a saved baseline, and the verdict with its reason in numbers.
//! Pure: the runner hands in what it saw and gets a verdict back.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Gate, PhaseSpec};
use crate::model::phase::{CheckStatus, GateOutcome, GateStatus, PhaseMetric, Verdict};

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

mod bounds;
mod figures;
mod fleet;
mod output;
mod spec;
pub(crate) use spec::SpecGate;
mod telemetry;
mod training;

use bounds::{judge_baseline, judge_bound, judge_peers, judge_together};
pub(crate) use figures::median;
pub use figures::{PeerShare, figures, peer_shares};
pub use fleet::{DROPPED_NAMED, Dropped, FleetOrigin, fleet_baseline};
use output::{judge_checks, judge_output_contains, judge_zero_wrong, say_ungated_checks};
use telemetry::{judge_no_finding, judge_no_xid};
use training::{judge_loss, judge_scaling};

/// Figures of a good run, kept as the gates' baseline (`burnin baseline save RUN`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version.
    pub schema: u32,
    /// The run directory it was saved from.
    pub source: String,
    /// Phase id → figures.
    pub phases: BTreeMap<String, Figures>,
    /// Built from the fleet of one run (`burnin baseline save --fleet`): the rule and the
    /// subjects it left out. `None`: a good run's own figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetOrigin>,
}

impl Baseline {
    /// The first figure that can be no reference, and why: not a finite number, negative, or
    /// 0 where higher is better (every value is at least 0 % of it, so a `baseline` gate on it
    /// could never fail). A lower-is-better 0 (no data wait) is a reference, and so is a 0 of a
    /// figure no gate can name (a count the run kept beside its figures).
    pub fn unusable(&self) -> Option<String> {
        for (phase, figures) in &self.phases {
            for (name, samples) in figures {
                for s in samples {
                    let why = if !s.value.is_finite() {
                        "not a finite number"
                    } else if s.value < 0.0 {
                        "negative"
                    } else if s.value == 0.0
                        && crate::model::figures::known_figure(name)
                        && !crate::model::figures::lower_is_better(name)
                    {
                        "0, which every value passes"
                    } else {
                        continue;
                    };
                    return Some(format!(
                        "{} {} {}: {} is {why}",
                        crate::model::excerpt(phase),
                        crate::model::excerpt(name),
                        crate::model::excerpt(&s.subject),
                        s.value
                    ));
                }
            }
        }
        None
    }
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
    /// Each node's entries of the plan's spec table (from T0's PCI IDs, else its telemetry's
    /// GPU names), for the `spec` gates; a node absent here has no known model.
    pub hardware: BTreeMap<String, crate::model::spec::NodeHardware>,
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
    let j = judge_gates(spec, metrics, observed, baseline);
    (j.verdict, j.reason)
}

/// A phase's judgement: the verdict, why in one line, and how each of its gates judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one line with the numbers.
    pub reason: String,
    /// Each gate of the plan's entry, in its order: the gate in words, its outcome, and its
    /// own words (the numbers, or why it could not be judged).
    pub gates: Vec<GateOutcome>,
}

impl Judgement {
    /// The gates' outcomes as phase metrics, to send before the verdict.
    pub fn gate_metrics(&self) -> Vec<PhaseMetric> {
        self.gates
            .iter()
            .map(|g| PhaseMetric::Gate {
                gate: g.gate.clone(),
                status: g.status,
                words: g.words.clone(),
            })
            .collect()
    }
}

/// How one gate came out, from what it said: a failure misses it; words that all say "not
/// judged" (every gate says so in those words when it could not judge) leave it unjudged; a
/// warning (a partly judged gate says "not judged there") warns; nothing against it meets it.
fn gate_status(findings: &[(Level, String)], summary: &[String]) -> GateStatus {
    let fully_unjudged = |w: &str| w.contains("not judged") && !w.contains("not judged there");
    if findings.iter().any(|f| f.0 == Level::Fail) {
        GateStatus::Missed
    } else if (!findings.is_empty() || !summary.is_empty())
        && findings.iter().all(|f| fully_unjudged(&f.1))
        && summary.iter().all(|w| fully_unjudged(w))
    {
        GateStatus::NotJudged
    } else if findings.iter().any(|f| f.0 == Level::Warn) {
        GateStatus::Warned
    } else {
        GateStatus::Met
    }
}

/// [`judge`], with each gate's outcome.
pub fn judge_gates(
    spec: &PhaseSpec,
    metrics: &[PhaseMetric],
    observed: &Observed,
    baseline: Option<&Baseline>,
) -> Judgement {
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
    let outcomes = judge_each_gate(spec, metrics, observed, &j, &mut said);
    if !spec.gates.iter().any(|g| matches!(g, Gate::Checks)) {
        say_ungated_checks(metrics, &mut said);
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
            // Every figure with its unit: "tokens_per_sec 31092424" says nothing on paper.
            let unit = crate::model::figures::unit_of(name);
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(", {unit}")
            };
            summary.insert(
                0,
                format!(
                    "{name} median {} min {} (n={}{unit})",
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
        parts.push(NOTHING_FOUND.into());
    }
    Judgement {
        verdict,
        reason: parts.join("; "),
        gates: outcomes,
    }
}

/// Each gate of the plan's entry in its order, with what it said and how it came out.
fn judge_each_gate(
    spec: &PhaseSpec,
    metrics: &[PhaseMetric],
    observed: &Observed,
    j: &Judging<'_>,
    said: &mut Said,
) -> Vec<GateOutcome> {
    let mut outcomes = Vec::with_capacity(spec.gates.len());
    for gate in &spec.gates {
        let (f0, s0) = (said.findings.len(), said.summary.len());
        match gate {
            Gate::Checks => judge_checks(metrics, said),
            Gate::ZeroWrong => judge_zero_wrong(metrics, said),
            Gate::OutputContains { text, evidence } => {
                judge_output_contains(text, evidence, observed, said)
            }
            Gate::Scaling { pct } => judge_scaling(*pct, j, said),
            Gate::NoXid => judge_no_xid(observed, said),
            Gate::NoFinding { rule } => judge_no_finding(rule, observed, said),
            Gate::LossFalling => judge_loss(true, metrics, said),
            Gate::LossFinite => judge_loss(false, metrics, said),
            Gate::Together { figure, worse_pct } => {
                judge_together(figure, worse_pct, observed, said)
            }
            Gate::Min {
                figure,
                value,
                unless,
            } => {
                let spec_judged = match unless {
                    Some(_) => spec::judged_subjects(figure, metrics, j),
                    None => BTreeSet::new(),
                };
                judge_bound(true, figure, value, &spec_judged, j, said)
            }
            Gate::Max { figure, value } => {
                judge_bound(false, figure, value, &BTreeSet::new(), j, said)
            }
            Gate::Peers { figure, pct } => judge_peers(figure, pct, j, said),
            Gate::Baseline { figure, pct } => judge_baseline(figure, pct, j, said),
            Gate::Spec { .. } => {
                if let Some(gate) = SpecGate::from_gate(gate) {
                    spec::judge_spec(&gate, metrics, j, said)
                }
            }
        }
        let (found, summed) = (&said.findings[f0..], &said.summary[s0..]);
        let status = gate_status(found, summed);
        let words: Vec<&str> = found
            .iter()
            .map(|f| f.1.as_str())
            .chain(summed.iter().map(String::as_str))
            .collect();
        outcomes.push(GateOutcome {
            gate: gate.describe(),
            status,
            words: words.join("; "),
        });
    }
    outcomes
}

/// What a judgement says when its gates found nothing to say: true only where every node
/// exited 0, which the runner knows and says otherwise (it leaves these words out then).
pub const NOTHING_FOUND: &str = "exit 0 everywhere, no failure lines";

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

#[cfg(test)]
mod tests;
