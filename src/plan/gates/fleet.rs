//! A baseline built from the fleet itself (`burnin baseline save --fleet RUN`), as SuperBench
//! builds its own (`superbench/analyzer/baseline_generation.py`,
//! `fix_threshold_outlier_detection`; `shared/research/peers.md` §1.2): per figure and group,
//! start from the mean of every subject, drop each subject worse than that mean by more than
//! `pct` %, take the mean of the rest, and again until nothing more is dropped. Every subject's
//! reference is then its group's mean, so a slow node is judged against its healthy peers,
//! never against itself (as a baseline saved from a run that held it would).

use serde::{Deserialize, Serialize};

use super::{Baseline, Figures, Sample};

/// Most dropped subjects the baseline names one by one (96 nodes × 8 GPUs × a dozen figures
/// would be thousands); the rest are counted.
pub const DROPPED_NAMED: usize = 500;

/// How a baseline from the fleet came to be: the rule and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetOrigin {
    /// A subject worse than its group's mean by more than this share was dropped.
    pub pct: f64,
    /// Subjects dropped, with why (at most [`DROPPED_NAMED`]).
    pub dropped: Vec<Dropped>,
    /// Dropped past those named.
    #[serde(default)]
    pub dropped_more: u64,
    /// Values left out as no number (not finite, negative).
    #[serde(default)]
    pub unusable: u64,
    /// Figures left out of the baseline whole, with why: a failed phase's figure of fewer than
    /// [`MIN_FLEET`] subjects (one job's figure cannot be told good from bad by its peers), or
    /// a group whose mean is no reference (0 where higher is better). At most
    /// [`DROPPED_NAMED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// Subjects a failed phase's figure needs for its mean to stand as the reference: with fewer,
/// the slow one may be the only one.
pub const MIN_FLEET: usize = 3;

/// One subject left out of its group's mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// Phase id.
    pub phase: String,
    /// Figure name.
    pub figure: String,
    /// Its subject (`node07`, `node03/gpu5`).
    pub subject: String,
    /// Its value.
    pub value: f64,
    /// The mean it was judged against when it was dropped.
    pub mean: f64,
    /// The round that dropped it (1: against every subject's mean).
    pub round: u32,
}

impl Dropped {
    /// In words: `T4 busbw_all_reduce node07 322 = 40 % of the fleet's 806 (round 1)`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} {} = {:.0} % of the fleet's {} (round {})",
            crate::model::excerpt(&self.phase),
            crate::model::excerpt(&self.figure),
            crate::model::excerpt(&self.subject),
            super::fmt_value(self.value),
            if self.mean > 0.0 {
                100.0 * self.value / self.mean
            } else {
                0.0
            },
            super::fmt_value(self.mean),
            self.round
        )
    }
}

/// The mean a group settles on and what it dropped on the way.
fn settle(values: &[(usize, f64)], pct: f64, lower_better: bool) -> (f64, Vec<(usize, f64, u32)>) {
    let mut kept: Vec<(usize, f64)> = values.to_vec();
    let mut dropped = Vec::new();
    let mut round = 0u32;
    loop {
        let mean = kept.iter().map(|(_, v)| v).sum::<f64>() / kept.len() as f64;
        round += 1;
        let worse = |v: f64| {
            if lower_better {
                v > mean * (1.0 + pct / 100.0)
            } else {
                v < mean * (1.0 - pct / 100.0)
            }
        };
        let (out, stay): (Vec<_>, Vec<_>) = kept.iter().partition(|(_, v)| worse(*v));
        // The best value of a group is never worse than its mean: the group never empties.
        if out.is_empty() || stay.is_empty() {
            return (mean, dropped);
        }
        dropped.extend(out.iter().map(|(i, _)| (*i, mean, round)));
        kept = stay;
    }
}

/// The fleet's baseline of `phases` (id, figures, whether the phase passed or warned), each
/// subject worse than its group's settled mean by more than `pct` % left out of it; a failed
/// phase's figure of fewer than [`MIN_FLEET`] subjects is left out whole. `source` says where
/// the figures came from.
pub fn fleet_baseline(phases: &[(&str, &Figures, bool)], pct: f64, source: &str) -> Baseline {
    let mut origin = FleetOrigin {
        pct,
        ..FleetOrigin::default()
    };
    let mut out = Baseline {
        schema: 1,
        source: source.to_string(),
        ..Baseline::default()
    };
    let leave = |why: String, origin: &mut FleetOrigin| {
        if origin.left_out.len() < DROPPED_NAMED {
            origin.left_out.push(why);
        }
    };
    for (phase, figures, passed) in phases {
        for (name, samples) in figures.iter() {
            if !passed && samples.len() < MIN_FLEET {
                leave(
                    format!(
                        "{} {}: {} subject(s) of a failed phase, too few to tell good from bad",
                        crate::model::excerpt(phase),
                        crate::model::excerpt(name),
                        samples.len()
                    ),
                    &mut origin,
                );
                continue;
            }
            let lower_better = crate::model::figures::lower_is_better(name);
            let mut groups: std::collections::BTreeMap<&str, Vec<(usize, f64)>> =
                std::collections::BTreeMap::new();
            for (i, s) in samples.iter().enumerate() {
                if s.value.is_finite() && s.value >= 0.0 {
                    groups
                        .entry(s.group.as_str())
                        .or_default()
                        .push((i, s.value));
                } else {
                    origin.unusable += 1;
                }
            }
            let mut refs: Vec<Sample> = Vec::new();
            for (group, values) in groups {
                let (mean, dropped) = settle(&values, pct, lower_better);
                if mean <= 0.0 && !lower_better {
                    leave(
                        format!(
                            "{} {}: its mean is {mean}, which every value passes",
                            crate::model::excerpt(phase),
                            crate::model::excerpt(name)
                        ),
                        &mut origin,
                    );
                    continue;
                }
                for (i, at, round) in dropped {
                    let d = Dropped {
                        phase: phase.to_string(),
                        figure: name.clone(),
                        subject: samples[i].subject.clone(),
                        value: samples[i].value,
                        mean: at,
                        round,
                    };
                    if origin.dropped.len() < DROPPED_NAMED {
                        origin.dropped.push(d);
                    } else {
                        origin.dropped_more += 1;
                    }
                }
                refs.extend(values.iter().map(|(i, _)| Sample {
                    subject: samples[*i].subject.clone(),
                    group: group.to_string(),
                    value: mean,
                }));
            }
            if !refs.is_empty() {
                out.phases
                    .entry(phase.to_string())
                    .or_default()
                    .insert(name.clone(), refs);
            }
        }
    }
    out.fleet = Some(origin);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figs(name: &str, values: &[(&str, f64)]) -> Figures {
        Figures::from([(
            name.to_string(),
            values
                .iter()
                .map(|(s, v)| Sample {
                    subject: s.to_string(),
                    group: String::new(),
                    value: *v,
                })
                .collect(),
        )])
    }

    /// Eleven nodes near 806 and one at 322: the slow one is dropped in the first round, the
    /// rest settle on their own mean, and every subject (the slow one too) is judged against it.
    #[test]
    fn a_slow_node_is_dropped_and_judged_against_its_peers() {
        let mut v: Vec<(String, f64)> = (1..=11)
            .map(|i| (format!("node{i:02}"), 800.0 + f64::from(i)))
            .collect();
        v.push(("node12".into(), 322.0));
        let refs: Vec<(&str, f64)> = v.iter().map(|(s, x)| (s.as_str(), *x)).collect();
        let f = figs("busbw_all_reduce", &refs);
        let b = fleet_baseline(&[("T4", &f, true)], 5.0, "run");
        let o = b.fleet.as_ref().expect("origin");
        assert_eq!(o.dropped.len(), 1, "{o:?}");
        assert_eq!(o.dropped[0].subject, "node12");
        assert_eq!(o.dropped[0].round, 1);
        let samples = &b.phases["T4"]["busbw_all_reduce"];
        assert_eq!(samples.len(), 12);
        assert!(
            samples.iter().all(|s| (s.value - 806.0).abs() < 1e-9),
            "{samples:?}"
        );
        assert!(
            o.dropped[0]
                .describe()
                .contains("node12 322 = 42 % of the fleet's 766"),
            "{}",
            o.dropped[0].describe()
        );
    }

    /// Two rounds: a node 8 % slow hides behind a very slow one in the first mean, and is
    /// found in the second; a lower-is-better figure drops the high ones.
    #[test]
    fn dropping_repeats_until_nothing_more_goes() {
        let f = figs(
            "busbw_all_reduce",
            &[
                ("a", 100.0),
                ("b", 100.0),
                ("c", 100.0),
                ("d", 92.0),
                ("e", 10.0),
            ],
        );
        let b = fleet_baseline(&[("T4", &f, true)], 5.0, "run");
        let o = b.fleet.expect("origin");
        let rounds: Vec<(&str, u32)> = o
            .dropped
            .iter()
            .map(|d| (d.subject.as_str(), d.round))
            .collect();
        assert_eq!(rounds, vec![("e", 1), ("d", 2)]);
        let f = figs("step_time_ms", &[("a", 100.0), ("b", 101.0), ("c", 150.0)]);
        let b = fleet_baseline(&[("T5", &f, true)], 5.0, "run");
        assert_eq!(b.fleet.expect("origin").dropped[0].subject, "c");
        assert_eq!(b.phases["T5"]["step_time_ms"][0].value, 100.5);
    }

    /// A value that is no number is left out and counted, never a mean of NaN.
    #[test]
    fn no_number_is_counted_not_averaged() {
        let f = figs(
            "busbw_all_reduce",
            &[("a", 100.0), ("b", f64::NAN), ("c", -1.0)],
        );
        let b = fleet_baseline(&[("T4", &f, true)], 5.0, "run");
        assert_eq!(b.fleet.as_ref().map(|o| o.unusable), Some(2));
        assert_eq!(b.phases["T4"]["busbw_all_reduce"].len(), 1);
        assert_eq!(b.unusable(), None);
    }

    /// A failed phase's one-subject figure (T7's job) is no reference: left out whole, said.
    /// A group that settles on 0 where higher is better is left out, not saved.
    #[test]
    fn a_failed_phases_lone_figure_and_a_zero_mean_are_left_out() {
        let job = figs("busbw_all_reduce", &[("job", 190.0)]);
        let zero = figs(
            "tflops_bf16",
            &[("a/gpu0", 0.0), ("b/gpu0", 0.0), ("c/gpu0", 0.0)],
        );
        let b = fleet_baseline(&[("T7", &job, false), ("T2", &zero, false)], 5.0, "run");
        assert!(b.phases.is_empty(), "{:?}", b.phases);
        let o = b.fleet.as_ref().expect("origin");
        assert_eq!(o.left_out.len(), 2, "{o:?}");
        assert!(
            o.left_out[0].contains("T7 busbw_all_reduce: 1 subject(s) of a failed phase"),
            "{o:?}"
        );
        assert_eq!(b.unusable(), None);
        let b = fleet_baseline(&[("T7", &job, true)], 5.0, "run");
        assert_eq!(b.phases["T7"]["busbw_all_reduce"][0].value, 190.0);
    }
}
