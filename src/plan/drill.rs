//! Operator drills: a phase whose command is a load that runs until burnin stops it, and whose
//! plan entry asks the operator to do something physical ("pull one leaf-spine cable now").
//! burnin first learns each watched series' steady level, then asks; the operator confirms
//! with a key (`c` in the console, Enter on `burnin run`'s terminal); burnin times how long
//! each series takes to come back to `recover_pct` % of its steady level, counts the error and
//! retry lines the load printed meanwhile, and asks the next step. [`DrillTracker`] is the
//! pure part: samples and confirmations in, prompts and results out; the runner feeds it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::model::UnixMillis;
use crate::model::phase::PhaseMetric;

/// A drill as the plan gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drill {
    /// Series to watch: `busbw_<collective>`, `s3_gb_per_s`, `tokens_per_sec`.
    pub watch: Vec<String>,
    /// How long the load runs before the first ask: the steady level is the median over it.
    #[serde(with = "super::secs")]
    pub steady: Duration,
    /// A series that has not dipped this long after the operator confirmed was not affected.
    #[serde(with = "super::secs")]
    pub settle: Duration,
    /// Recovered: back to at least this percent of the steady level (three samples running).
    pub recover_pct: f64,
    /// What the operator is asked to do, in order.
    pub steps: Vec<DrillStep>,
}

/// One thing the operator is asked to do (or burnin does itself, with `run`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrillStep {
    /// The words on the screen.
    pub ask: String,
    /// A command burnin runs on the phase's nodes instead of asking (e.g. kill the training
    /// job); the step is timed from when it was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Longest a series may take to recover after the operator confirmed (else FAIL).
    #[serde(with = "super::secs")]
    pub within: Duration,
}

/// Series a drill can watch (they arrive while the load runs, not only at its end).
pub const WATCHABLE: &[&str] = &["busbw_", "s3_gb_per_s", "tokens_per_sec"];

/// Whether `figure` is a series a drill can time.
pub fn watchable(figure: &str) -> bool {
    figure == "s3_gb_per_s"
        || figure == "tokens_per_sec"
        || figure.strip_prefix("busbw_").is_some_and(|c| !c.is_empty())
}

/// Samples in a row at or above the recovery level that count as recovered.
pub const HOLD_SAMPLES: usize = 3;

/// One watched series' point from a live metric: (figure, subject, value).
pub fn sample_of(metric: &PhaseMetric) -> Option<(String, String, f64)> {
    match metric {
        PhaseMetric::BusBw {
            node,
            collective,
            busbw_gb_per_s,
            ..
        } => Some((
            format!("busbw_{collective}"),
            node.clone().unwrap_or_else(|| "job".into()),
            *busbw_gb_per_s,
        )),
        PhaseMetric::Storage { node, window } => Some((
            "s3_gb_per_s".into(),
            node.clone(),
            window.throughput_bytes_per_sec / 1e9,
        )),
        PhaseMetric::Step {
            node,
            tokens_per_sec: Some(t),
            ..
        } => Some((
            "tokens_per_sec".into(),
            node.clone().unwrap_or_else(|| "job".into()),
            *t,
        )),
        _ => None,
    }
    .filter(|(_, _, v)| v.is_finite())
}

/// Whether a load's output line reports an error or a retry (counted per step).
pub fn is_error_line(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "error",
        "retry",
        "retries",
        "retrying",
        "timeout",
        "timed out",
        "failed",
    ]
    .iter()
    .any(|w| l.contains(w))
}

pub use crate::model::phase::SeriesOutcome;

/// What the tracker wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum DrillAction {
    /// Ask the operator (step index, words).
    Ask(usize, String),
    /// A step ended: its outcomes.
    StepDone(Vec<SeriesOutcome>),
    /// Every step ended: stop the load.
    Done,
    /// The steady window passed without a sample of a watched series: the drill cannot time it.
    NoSteady(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Stage {
    Steady { until: UnixMillis },
    Asking { step: usize },
    Watching { step: usize, since: UnixMillis },
    Done,
}

#[derive(Debug, Default, Clone)]
struct Series {
    steady: Vec<f64>,
    level: Option<f64>,
    low: Option<f64>,
    dipped: bool,
    /// First time of the current run of samples at the level, and how many in the run.
    run_from: Option<(UnixMillis, usize)>,
    recovered_at: Option<UnixMillis>,
    /// When its samples came in the steady window (first, last), and the latest since.
    steady_span: Option<(UnixMillis, UnixMillis)>,
    last_at: Option<UnixMillis>,
    /// The longest gap between two samples in the steady window.
    steady_gap: u64,
    /// It has stalled in this step, and when the first sample after the stall came.
    stalled: bool,
    back_at: Option<UnixMillis>,
}

impl Series {
    /// Longer than this without a sample is a stall: the series counts as fallen to zero
    /// (a collective that hangs prints nothing at all). Pauses the load takes in its stride
    /// (a training job saving its checkpoint: 2.6-4.3 s on the H200) are learnt in the steady
    /// window: twice the longest gap seen there, and at least three mean intervals and 1 s.
    fn stall_after_ms(&self) -> u64 {
        let n = self.steady.len() as u64;
        let every = match self.steady_span {
            Some((a, b)) if n > 1 => (b - a) / (n - 1),
            _ => 1000,
        };
        (3 * every).max(2 * self.steady_gap).max(1000)
    }

    fn fall(&mut self, value: f64) {
        self.low = Some(self.low.map_or(value, |l: f64| l.min(value)));
        self.dipped = true;
        self.run_from = None;
        self.recovered_at = None;
    }
}

/// How long past its steady window a drill waits for a load that has not shown a watched
/// series yet, before it fails for want of a level.
pub const LOAD_START_WAIT_MS: u64 = 120_000;

/// The drill's state: fed samples, lines, confirmations and the clock.
#[derive(Debug, Clone)]
pub struct DrillTracker {
    drill: Drill,
    stage: Stage,
    /// The steady window ended before every watched series had shown: the load is still
    /// starting, and the window starts again once all have.
    late: bool,
    series: BTreeMap<(String, String), Series>,
    errors: u64,
    first_error: Option<String>,
}

impl DrillTracker {
    /// A drill whose load started at `start_ms`.
    pub fn new(drill: Drill, start_ms: UnixMillis) -> Self {
        let until = start_ms + drill.steady.as_millis() as u64;
        Self {
            drill,
            stage: Stage::Steady { until },
            late: false,
            series: BTreeMap::new(),
            errors: 0,
            first_error: None,
        }
    }

    /// The step the operator is being asked about, if any.
    pub fn asking(&self) -> Option<usize> {
        match self.stage {
            Stage::Asking { step } => Some(step),
            _ => None,
        }
    }

    /// One point of a series.
    pub fn sample(&mut self, at_ms: UnixMillis, figure: &str, subject: &str, value: f64) {
        if !value.is_finite() || !self.drill.watch.iter().any(|w| w == figure) {
            return;
        }
        let pct = self.drill.recover_pct / 100.0;
        let s = self
            .series
            .entry((figure.to_string(), subject.to_string()))
            .or_default();
        match self.stage {
            Stage::Steady { .. } => {
                s.steady.push(value);
                if let Some((_, last)) = s.steady_span {
                    s.steady_gap = s.steady_gap.max(at_ms.saturating_sub(last));
                }
                s.steady_span = Some(s.steady_span.map_or((at_ms, at_ms), |(a, _)| (a, at_ms)));
            }
            Stage::Watching { .. } => {
                // A series first seen after the steady window has no level: not timed.
                let Some(level) = s.level else { return };
                s.last_at = Some(at_ms);
                if s.stalled && s.back_at.is_none() {
                    s.back_at = Some(at_ms);
                }
                if value < level * pct {
                    s.fall(value);
                    return;
                }
                s.low = Some(s.low.map_or(value, |l: f64| l.min(value)));
                if s.dipped && s.recovered_at.is_none() {
                    let (from, n) = s.run_from.unwrap_or((at_ms, 0));
                    s.run_from = Some((from, n + 1));
                    if n + 1 >= HOLD_SAMPLES {
                        s.recovered_at = Some(from);
                    }
                }
            }
            _ => {}
        }
    }

    /// The step (0-based) being timed, if one is.
    pub fn step_timed(&self) -> Option<usize> {
        match self.stage {
            Stage::Watching { step, .. } => Some(step),
            _ => None,
        }
    }

    /// Whether a step is being timed (the operator confirmed, the series not yet resolved).
    pub fn watching(&self) -> bool {
        matches!(self.stage, Stage::Watching { .. })
    }

    /// A failure line of the load (a traceback, an NCCL failure) while a step is timed: what
    /// the step provoked, counted with its error lines.
    pub fn problem(&mut self, text: &str) {
        if self.watching() {
            self.errors += 1;
            self.first_error.get_or_insert_with(|| text.to_string());
        }
    }

    /// One line of the load's output.
    pub fn line(&mut self, text: &str) {
        if matches!(self.stage, Stage::Watching { .. }) && is_error_line(text) {
            self.errors += 1;
            self.first_error.get_or_insert_with(|| text.to_string());
        }
    }

    /// The operator says the step is done. Returns whether it was being asked.
    pub fn confirm(&mut self, at_ms: UnixMillis) -> bool {
        let Stage::Asking { step } = self.stage else {
            return false;
        };
        self.stage = Stage::Watching { step, since: at_ms };
        for s in self.series.values_mut() {
            s.low = None;
            s.dipped = false;
            s.run_from = None;
            s.recovered_at = None;
            s.last_at = Some(at_ms);
            s.stalled = false;
            s.back_at = None;
        }
        self.errors = 0;
        self.first_error = None;
        true
    }

    /// Move on as time passes: ask, close a step, finish.
    pub fn tick(&mut self, now_ms: UnixMillis) -> Vec<DrillAction> {
        let mut out = Vec::new();
        match self.stage.clone() {
            Stage::Steady { until } if now_ms >= until => {
                let mut missing = Vec::new();
                for w in &self.drill.watch {
                    if !self.series.keys().any(|(f, _)| f == w) {
                        missing.push(w.clone());
                    }
                }
                if !missing.is_empty() && now_ms < until.saturating_add(LOAD_START_WAIT_MS) {
                    // The load is still starting (mpirun over many nodes takes tens of
                    // seconds): wait for it rather than judge its silence.
                    self.late = true;
                    return out;
                }
                if missing.is_empty() && self.late {
                    // The window counts from when the last watched series first showed.
                    self.late = false;
                    let shown = self
                        .series
                        .values()
                        .filter_map(|s| s.steady_span.map(|(first, _)| first))
                        .max()
                        .unwrap_or(now_ms);
                    let again = shown.saturating_add(self.drill.steady.as_millis() as u64);
                    if again > now_ms {
                        self.stage = Stage::Steady { until: again };
                        return out;
                    }
                }
                if !missing.is_empty() {
                    self.stage = Stage::Done;
                    out.push(DrillAction::NoSteady(format!(
                        "no {} from the load in the {} s before the first ask, nor in the {} s after: nothing to time",
                        missing.join(", "),
                        self.drill.steady.as_secs(),
                        LOAD_START_WAIT_MS / 1000
                    )));
                    out.push(DrillAction::Done);
                    return out;
                }
                for s in self.series.values_mut() {
                    let mut v = s.steady.clone();
                    v.sort_by(f64::total_cmp);
                    s.level = v.get(v.len() / 2).copied();
                }
                out.extend(self.ask(0));
            }
            Stage::Watching { step, since } => {
                for s in self.series.values_mut() {
                    let stalled = s.level.is_some()
                        && s.recovered_at.is_none()
                        && s.last_at
                            .is_some_and(|l| now_ms.saturating_sub(l) > s.stall_after_ms());
                    if stalled {
                        s.fall(0.0);
                        if s.back_at.is_none() {
                            s.stalled = true;
                        }
                    }
                }
                let elapsed = now_ms.saturating_sub(since);
                let within = self.drill.steps[step].within.as_millis() as u64;
                let settle = self.drill.settle.as_millis() as u64;
                let resolved = self.series.values().all(|s| {
                    s.level.is_none()
                        || s.recovered_at.is_some()
                        // Not affected: samples at the level kept coming through `settle`.
                        || (!s.dipped
                            && elapsed >= settle
                            && s.low.is_some()
                            && s.last_at.is_some_and(|l| l >= since + settle))
                });
                if resolved || elapsed >= within {
                    out.push(DrillAction::StepDone(self.outcomes(step, since)));
                    out.extend(self.ask(step + 1));
                }
            }
            _ => {}
        }
        out
    }

    fn ask(&mut self, step: usize) -> Vec<DrillAction> {
        match self.drill.steps.get(step) {
            Some(s) => {
                self.stage = Stage::Asking { step };
                vec![DrillAction::Ask(step, s.ask.clone())]
            }
            None => {
                self.stage = Stage::Done;
                vec![DrillAction::Done]
            }
        }
    }

    fn outcomes(&self, step: usize, since: UnixMillis) -> Vec<SeriesOutcome> {
        self.series
            .iter()
            .filter_map(|((figure, subject), s)| {
                let steady = s.level?;
                Some(SeriesOutcome {
                    step: step + 1,
                    ask: self.drill.steps[step].ask.clone(),
                    figure: figure.clone(),
                    subject: subject.clone(),
                    steady,
                    low: s.low,
                    dipped: s.dipped,
                    recovered_after_s: s
                        .recovered_at
                        .map(|r| r.saturating_sub(since) as f64 / 1000.0),
                    first_after_s: s.back_at.map(|r| r.saturating_sub(since) as f64 / 1000.0),
                    error_lines: self.errors,
                    first_error: self.first_error.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drill() -> Drill {
        Drill {
            watch: vec!["busbw_all_reduce".into(), "s3_gb_per_s".into()],
            steady: Duration::from_secs(10),
            settle: Duration::from_secs(5),
            recover_pct: 90.0,
            steps: vec![
                DrillStep {
                    run: None,
                    ask: "pull one leaf-spine cable now".into(),
                    within: Duration::from_secs(60),
                },
                DrillStep {
                    run: None,
                    ask: "put the cable back".into(),
                    within: Duration::from_secs(20),
                },
            ],
        }
    }

    const T: UnixMillis = 1_800_000_000_000;
    fn at(s: f64) -> UnixMillis {
        T + (s * 1000.0) as u64
    }

    #[test]
    fn a_cable_pull_is_timed_from_the_confirmation_to_the_recovery() {
        let mut d = DrillTracker::new(drill(), T);
        for i in 0..10 {
            d.sample(at(i as f64), "busbw_all_reduce", "job", 380.0 + i as f64);
            d.sample(at(i as f64), "s3_gb_per_s", "gpu01", 9.0);
            d.sample(at(i as f64), "tflops_bf16", "x", 1.0);
            assert!(d.tick(at(i as f64)).is_empty());
        }
        assert_eq!(
            d.tick(at(10.0)),
            [DrillAction::Ask(0, "pull one leaf-spine cable now".into())]
        );
        // Samples while asking do not count; a confirmation while not asked is refused.
        d.sample(at(11.0), "busbw_all_reduce", "job", 10.0);
        assert!(d.confirm(at(12.0)));
        assert!(!d.confirm(at(12.5)));
        // busbw falls to 120, NCCL says it retried, then it comes back from 20 s on; the
        // store is not affected.
        d.line("NET/IB : Got completion from peer with error 12, retrying");
        d.line("busbw fine");
        for (s, v) in [(13.0, 300.0), (14.0, 120.0), (20.0, 350.0), (21.0, 360.0)] {
            d.sample(at(s), "busbw_all_reduce", "job", v);
            d.sample(at(s), "s3_gb_per_s", "gpu01", 8.9);
            assert!(d.tick(at(s)).is_empty(), "at {s}");
        }
        // A sample below the level breaks the run of good ones.
        d.sample(at(22.0), "busbw_all_reduce", "job", 200.0);
        for s in [22.0, 23.0, 24.0, 25.0] {
            d.sample(at(s), "s3_gb_per_s", "gpu01", 9.1);
        }
        for s in [23.0, 24.0] {
            d.sample(at(s), "busbw_all_reduce", "job", 384.0);
            assert!(d.tick(at(s)).is_empty());
        }
        d.sample(at(25.0), "busbw_all_reduce", "job", 385.0);
        let out = d.tick(at(25.0));
        let DrillAction::StepDone(rows) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(out[1], DrillAction::Ask(1, "put the cable back".into()));
        let busbw = &rows[0];
        assert_eq!(busbw.figure, "busbw_all_reduce");
        assert_eq!(busbw.steady, 385.0);
        assert_eq!(busbw.low, Some(120.0));
        assert_eq!(busbw.recovered_after_s, Some(11.0), "from 12 s to 23 s");
        assert_eq!(busbw.error_lines, 1);
        assert!(
            busbw
                .first_error
                .as_deref()
                .is_some_and(|e| e.contains("retrying"))
        );
        assert_eq!(
            busbw.describe(),
            "busbw_all_reduce job recovered in 11.0 s (low 120 of steady 385)"
        );
        let s3 = &rows[1];
        assert!(!s3.dipped && !s3.failed(), "{s3:?}");
        assert!(s3.describe().contains("not affected"), "{}", s3.describe());

        // Step 2: busbw dips and never comes back within 20 s.
        assert!(d.confirm(at(30.0)));
        d.sample(at(31.0), "busbw_all_reduce", "job", 100.0);
        d.sample(at(31.0), "s3_gb_per_s", "gpu01", 9.0);
        assert!(d.tick(at(49.0)).is_empty());
        let out = d.tick(at(50.0));
        let DrillAction::StepDone(rows) = &out[0] else {
            panic!("{out:?}")
        };
        assert!(rows[0].failed() && rows[0].recovered_after_s.is_none());
        assert!(rows[0].describe().contains("did not recover"));
        assert_eq!(out[1], DrillAction::Done);
    }

    #[test]
    fn a_load_that_stops_printing_has_stalled_and_its_return_is_timed() {
        let mut d = DrillTracker::new(
            Drill {
                watch: vec!["busbw_all_reduce".into()],
                ..drill()
            },
            T,
        );
        // A row every 0.5 s before the ask.
        for i in 0..20 {
            d.sample(at(i as f64 * 0.5), "busbw_all_reduce", "job", 380.0);
        }
        assert!(matches!(d.tick(at(10.0))[0], DrillAction::Ask(0, _)));
        assert!(d.confirm(at(10.0)));
        d.sample(at(10.5), "busbw_all_reduce", "job", 380.0);
        // Nothing for 1.5 s (three intervals) is a stall, not "not affected".
        assert!(d.tick(at(11.9)).is_empty());
        assert!(d.tick(at(12.1)).is_empty());
        for s in [30.0, 30.5, 31.0] {
            d.sample(at(s), "busbw_all_reduce", "job", 381.0);
        }
        let out = d.tick(at(31.0));
        let DrillAction::StepDone(rows) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(rows[0].low, Some(0.0));
        assert_eq!(rows[0].recovered_after_s, Some(20.0));
        // The stall was seen, and the first sample after it came 20 s after the confirmation.
        assert_eq!(rows[0].first_after_s, Some(20.0));
        assert!(
            rows[0]
                .describe()
                .contains("first sample again after 20.0 s")
        );
    }

    #[test]
    fn pauses_seen_before_the_ask_are_not_stalls() {
        let mut d = DrillTracker::new(
            Drill {
                watch: vec!["tokens_per_sec".into()],
                ..drill()
            },
            T,
        );
        // A step every 0.1 s, and a 3 s checkpoint save in the middle.
        let mut t = 0.0;
        while t < 10.0 {
            d.sample(at(t), "tokens_per_sec", "job", 266_000.0);
            t += if (4.0..4.1).contains(&t) { 3.0 } else { 0.1 };
        }
        assert!(matches!(d.tick(at(10.0))[0], DrillAction::Ask(0, _)));
        let mut again = d.clone();
        assert!(d.confirm(at(10.0)));
        // The same 3 s pause after the ask is not a stall: steps every 0.1 s, then a 3 s pause,
        // then steps again past `settle` (5 s): not affected.
        let mut t = 10.1;
        while t < 16.0 {
            d.sample(at(t), "tokens_per_sec", "job", 266_000.0);
            if (11.0..11.1).contains(&t) {
                // In the middle of the pause: neither a stall nor done.
                assert!(d.tick(at(t + 2.5)).is_empty());
                t += 3.0;
            } else {
                t += 0.1;
            }
        }
        let out = d.tick(at(16.0));
        let DrillAction::StepDone(rows) = &out[0] else {
            panic!("{out:?}")
        };
        assert!(
            !rows[0].dipped && rows[0].low == Some(266_000.0),
            "{rows:?}"
        );
        assert_eq!(rows[0].first_after_s, None);
        // Nothing for more than twice that pause is.
        assert!(again.confirm(at(10.0)));
        again.sample(at(10.1), "tokens_per_sec", "job", 266_000.0);
        assert!(again.tick(at(16.2)).is_empty());
        again.sample(at(20.0), "tokens_per_sec", "job", 266_000.0);
        again.sample(at(20.1), "tokens_per_sec", "job", 266_000.0);
        again.sample(at(20.2), "tokens_per_sec", "job", 266_000.0);
        let out = again.tick(at(20.2));
        let DrillAction::StepDone(rows) = &out[0] else {
            panic!("{out:?}")
        };
        assert!(rows[0].dipped && rows[0].low == Some(0.0), "{rows:?}");
        assert_eq!(rows[0].first_after_s, Some(10.0));
    }

    #[test]
    fn a_load_that_shows_no_watched_series_cannot_be_drilled() {
        let mut d = DrillTracker::new(drill(), T);
        d.sample(at(1.0), "busbw_all_reduce", "job", 380.0);
        // Waited for while it may still be starting…
        assert!(d.tick(at(10.0)).is_empty());
        assert!(d.tick(at(100.0)).is_empty());
        // …and failed once that wait is over.
        let out = d.tick(at(10.0 + LOAD_START_WAIT_MS as f64 / 1000.0));
        assert!(
            matches!(&out[0], DrillAction::NoSteady(why) if why.contains("no s3_gb_per_s")),
            "{out:?}"
        );
        assert_eq!(out[1], DrillAction::Done);
    }

    #[test]
    fn a_load_slow_to_start_gets_its_steady_window_from_when_it_showed() {
        // mpirun over many nodes: nothing for 25 s, then every series at once.
        let mut d = DrillTracker::new(drill(), T);
        assert!(
            d.tick(at(10.0)).is_empty(),
            "no level yet: not asked, not failed"
        );
        for i in 25..35 {
            d.sample(at(i as f64), "busbw_all_reduce", "job", 380.0);
            d.sample(at(i as f64), "s3_gb_per_s", "gpu01", 9.0);
            d.sample(at(i as f64), "tflops_bf16", "x", 1.0);
            let out = d.tick(at(i as f64));
            assert!(
                out.is_empty(),
                "asked {} s after the load showed: {out:?}",
                i - 25
            );
        }
        assert_eq!(
            d.tick(at(35.0)),
            [DrillAction::Ask(0, "pull one leaf-spine cable now".into())],
            "asked a steady window (10 s) after the load showed"
        );
    }

    #[test]
    fn series_come_from_live_metrics() {
        let m = PhaseMetric::BusBw {
            node: None,
            collective: "all_reduce".into(),
            size_bytes: 1 << 30,
            busbw_gb_per_s: 380.0,
            algbw_gb_per_s: 200.0,
            in_place_busbw_gb_per_s: None,
            wrong: Some(0),
            ranks: 16,
            deviation: false,
        };
        assert_eq!(
            sample_of(&m),
            Some(("busbw_all_reduce".into(), "job".into(), 380.0))
        );
        assert!(watchable("busbw_all_gather") && watchable("s3_gb_per_s"));
        assert!(!watchable("busbw_") && !watchable("tflops_bf16"));
        assert!(is_error_line(
            "NCCL WARN NET/IB : Got completion with error 12"
        ));
        assert!(!is_error_line("#  Rank  0 Group  0 Pid 6899"));
    }

    /// Whatever the load sends (any values, any gaps, out of order, NaN and infinities) and
    /// whenever the operator presses: no panic, and every outcome is one that can be true.
    mod any_input {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Input {
            Sample(u64, f64, bool),
            Confirm,
            Tick,
            Line(String),
        }

        fn input() -> impl Strategy<Value = Input> {
            prop_oneof![
                (0u64..5_000, any::<f64>(), any::<bool>())
                    .prop_map(|(dt, v, busbw)| Input::Sample(dt, v, busbw)),
                Just(Input::Confirm),
                Just(Input::Tick),
                "[a-z ]{0,20}".prop_map(Input::Line),
            ]
        }

        proptest! {
            #[test]
            fn the_tracker_never_panics_and_says_only_possible_things(
                inputs in proptest::collection::vec(input(), 0..300)
            ) {
                let mut d = DrillTracker::new(drill(), T);
                let mut now = T;
                let mut confirmed_at = None;
                for i in inputs {
                    match i {
                        Input::Sample(dt, v, busbw) => {
                            now += dt;
                            let figure = if busbw { "busbw_all_reduce" } else { "s3_gb_per_s" };
                            // Out of order too: a sample a little in the past.
                            d.sample(now.saturating_sub(dt / 3), figure, "job", v);
                        }
                        Input::Confirm => {
                            if d.confirm(now) {
                                confirmed_at = Some(now);
                            }
                        }
                        Input::Tick => {
                            now += 250;
                            for a in d.tick(now) {
                                if let DrillAction::StepDone(rows) = a {
                                    let since = confirmed_at.expect("a step ends only after a confirmation");
                                    let most = now.saturating_sub(since) as f64 / 1000.0 + 1e-9;
                                    for r in rows {
                                        prop_assert!(r.step >= 1 && r.step <= 2);
                                        for t in [r.recovered_after_s, r.first_after_s].into_iter().flatten() {
                                            prop_assert!(t >= 0.0 && t <= most, "{r:?} after {most} s");
                                        }
                                        prop_assert!(r.recovered_after_s.is_none() || r.dipped, "{r:?}");
                                        let _ = r.describe();
                                    }
                                }
                            }
                        }
                        Input::Line(l) => d.line(&l),
                    }
                }
            }
        }
    }
}
