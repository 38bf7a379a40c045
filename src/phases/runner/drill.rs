//! A drill: a workload kept running while the engineer breaks something on cue, each step
//! timed and confirmed, the run judged on how it came back.

use super::*;
use crate::plan::drill::{DrillAction, DrillTracker, sample_of};

/// Why a drill that asks the operator cannot go on where nobody can answer.
const NOBODY_CONFIRMS: &str = "nobody can confirm it here (burnin run reads Enter from its stdin, and that is closed): run the drill from a terminal or the console";

/// The operator's next confirmation; `false` when nobody can confirm any more.
async fn next_confirm(c: &mut Option<watch::Receiver<u64>>) -> bool {
    match c {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// An operator drill: the phase's load runs (until stopped) while [`DrillTracker`] learns each
/// watched series' steady level, asks the operator each step (a `Prompt` event), and times
/// the recovery after each confirmation; when the last step is done the load is stopped
/// (`finished`, not aborted). A step whose series did not recover within its limit, a load
/// that ended by itself before the drill did, or a load that never showed a watched series
/// fails the drill; the load's gates judge the rest.
pub(super) async fn drive_drill(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    recorded: Option<&BTreeMap<String, usize>>,
    started_ms: u64,
) -> (Verdict, String, Vec<PhaseMetric>, Vec<String>) {
    let Some(drill) = spec.drill.clone() else {
        return (
            Verdict::Fail,
            "no drill in the plan".into(),
            Vec::new(),
            Vec::new(),
        );
    };
    let (tap_tx, mut tap_rx) = mpsc::channel::<PhaseEvent>(1024);
    // The load's own switch: the operator's abort passes through it, and the drill sets it
    // (finished) when it is done.
    let (load_tx, load_rx) = watch::channel(None);
    let mut d = DrillRun::new(spec, events, drill, load_tx, ctx.confirm.clone());
    let mut operator = stop;
    let mut operator_live = true;
    let part = Part::alone(&spec.id);
    let ran = {
        let exec = execute(ctx, spec, &part, load_rx, &tap_tx, recorded);
        tokio::pin!(exec);
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        loop {
            let mut actions = Vec::new();
            tokio::select! {
                r = &mut exec => break r,
                Some(ev) = tap_rx.recv() => d.on_event(ev).await,
                _ = ticker.tick() => actions = d.tracker.tick(now_ms()),
                changed = operator.changed(), if operator_live => match changed {
                    Ok(()) => {
                        let why = *operator.borrow();
                        if why.is_some() {
                            let _ = d.load_tx.send(why);
                        }
                    }
                    Err(_) => operator_live = false,
                },
                ok = next_confirm(&mut d.confirm) => d.on_confirm(ok).await,
            }
            for a in actions {
                d.act(ctx, a).await;
            }
        }
    };
    d.drain(&mut tap_rx).await;
    d.judge(ctx, ran, started_ms)
}

/// A drill while its load runs: the tracker, the load's switch, the operator's confirmations,
/// the steps' outcomes and what went wrong.
struct DrillRun<'a> {
    spec: &'a Arc<PhaseSpec>,
    events: &'a mpsc::Sender<PhaseEvent>,
    steps: usize,
    tracker: DrillTracker,
    load_tx: watch::Sender<Option<StopReason>>,
    confirm: Option<watch::Receiver<u64>>,
    outcomes: Vec<crate::plan::drill::SeriesOutcome>,
    problems: Vec<String>,
    /// The drill is over (the load is being stopped as finished).
    done: bool,
    /// Failure lines that are a step's outcome or the load's last words: (node, text, after
    /// the drill was done).
    excused: Vec<(String, String, bool)>,
}

impl<'a> DrillRun<'a> {
    fn new(
        spec: &'a Arc<PhaseSpec>,
        events: &'a mpsc::Sender<PhaseEvent>,
        drill: crate::plan::drill::Drill,
        load_tx: watch::Sender<Option<StopReason>>,
        mut confirm: Option<watch::Receiver<u64>>,
    ) -> Self {
        // Confirmations from before this drill started are not for it.
        if let Some(c) = confirm.as_mut() {
            c.borrow_and_update();
        }
        Self {
            spec,
            events,
            steps: drill.steps.len(),
            tracker: DrillTracker::new(drill, now_ms()),
            load_tx,
            confirm,
            outcomes: Vec::new(),
            problems: Vec::new(),
            done: false,
            excused: Vec::new(),
        }
    }

    /// A note of the drill's, in the phase's log.
    async fn say(&self, text: String) {
        let _ = self
            .events
            .send(PhaseEvent::Note {
                phase: self.spec.id.clone(),
                at_ms: now_ms(),
                node: None,
                text,
            })
            .await;
    }

    /// The question the console shows the operator (`None` withdraws it).
    async fn prompt(&self, text: Option<String>) {
        let _ = self
            .events
            .send(PhaseEvent::Prompt {
                phase: self.spec.id.clone(),
                at_ms: now_ms(),
                text,
            })
            .await;
    }

    /// The load's event: fed to the tracker, then passed on.
    async fn on_event(&mut self, ev: PhaseEvent) {
        match &ev {
            // What a step provokes (a killed job's traceback) is the step's outcome, and what
            // the load says as burnin stops it is not judged.
            PhaseEvent::Metric {
                metric: PhaseMetric::Problem { node, text },
                ..
            } if self.done || self.tracker.watching() => {
                self.tracker.problem(text);
                self.excused.push((node.clone(), text.clone(), self.done));
            }
            PhaseEvent::Metric { metric, at_ms, .. } => {
                if let Some((f, who, v)) = sample_of(metric) {
                    self.tracker.sample(*at_ms, &f, &who, v);
                }
            }
            PhaseEvent::Line { text, .. } => self.tracker.line(text),
            _ => {}
        }
        let _ = self.events.send(ev).await;
    }

    /// The operator confirmed (`ok`), or nobody can any more.
    async fn on_confirm(&mut self, ok: bool) {
        let steps = self.steps;
        if !ok {
            self.confirm = None;
            if let Some(step) = self.tracker.asking() {
                self.problems
                    .push(format!("step {}/{steps}: {NOBODY_CONFIRMS}", step + 1));
                self.finish();
            }
        } else if let Some(step) = self.tracker.asking() {
            self.tracker.confirm(now_ms());
            self.prompt(None).await;
            self.say(format!(
                "the operator confirmed step {}/{steps}: timing the recovery",
                step + 1
            ))
            .await;
        } else {
            self.say("a confirmation while nothing was asked: ignored".into())
                .await;
        }
    }

    /// The drill is done: the load is stopped as finished.
    fn finish(&mut self) {
        self.done = true;
        let _ = self.load_tx.send(Some(StopReason::Finished));
    }

    /// What the tracker asks for: a step asked (or done by burnin itself), a step's outcome,
    /// no steady level, the end.
    async fn act(&mut self, ctx: &RunContext, action: DrillAction) {
        match action {
            DrillAction::Ask(step, text) => self.ask(ctx, step, text).await,
            DrillAction::StepDone(rows) => {
                for row in rows {
                    let _ = self
                        .events
                        .send(PhaseEvent::Metric {
                            phase: self.spec.id.clone(),
                            at_ms: now_ms(),
                            metric: PhaseMetric::Drill {
                                outcome: row.clone(),
                            },
                        })
                        .await;
                    self.outcomes.push(row);
                }
            }
            DrillAction::NoSteady(why) => self.problems.push(why),
            DrillAction::Done => self.finish(),
        }
    }

    /// Step `step`: burnin runs it where the plan says how, else the operator is asked (where
    /// anybody can answer).
    async fn ask(&mut self, ctx: &RunContext, step: usize, text: String) {
        let text = format!("step {}/{}: {text}", step + 1, self.steps);
        let run = self
            .spec
            .drill
            .as_ref()
            .and_then(|d| d.steps.get(step))
            .and_then(|s| s.run.clone());
        if let Some(command) = run {
            // burnin does this step itself, timed from when it is sent.
            let sent = now_ms();
            self.say(format!("{text}: burnin does it")).await;
            for line in run_step(ctx, self.spec, &command).await {
                self.say(line).await;
            }
            self.tracker.confirm(sent);
            return;
        }
        if self.confirm.is_none() {
            // Waiting would only end at the phase's time limit.
            self.problems.push(format!("{text}: {NOBODY_CONFIRMS}"));
            self.finish();
            return;
        }
        self.say(format!("asks the operator: {text}")).await;
        self.prompt(Some(text)).await;
    }

    /// What the load said after it ended, passed on; a question still asked is withdrawn.
    async fn drain(&mut self, tap_rx: &mut mpsc::Receiver<PhaseEvent>) {
        while let Ok(ev) = tap_rx.try_recv() {
            if let PhaseEvent::Metric {
                metric: PhaseMetric::Problem { node, text },
                ..
            } = &ev
                && self.done
            {
                self.excused.push((node.clone(), text.clone(), true));
            }
            let _ = self.events.send(ev).await;
        }
        if self.tracker.asking().is_some() {
            self.prompt(None).await;
        }
    }

    /// The drill's verdict: the load's gates, failed by any step that did not recover, a load
    /// that ended before the drill did, or nobody to confirm; every step told in numbers.
    fn judge(
        self,
        ctx: &RunContext,
        mut ran: Executed,
        started_ms: u64,
    ) -> (Verdict, String, Vec<PhaseMetric>, Vec<String>) {
        let Self {
            spec,
            steps,
            tracker,
            outcomes,
            mut problems,
            done,
            excused,
            ..
        } = self;
        let mut metrics = std::mem::take(&mut ran.metrics);
        let mut last_words = 0;
        for (node, text, after_done) in &excused {
            let at = metrics.iter().position(
                |m| matches!(m, PhaseMetric::Problem { node: n, text: t } if n == node && t == text),
            );
            if let Some(i) = at {
                metrics.remove(i);
                last_words += usize::from(*after_done);
            }
        }
        metrics.extend(
            outcomes
                .iter()
                .map(|o| PhaseMetric::Drill { outcome: o.clone() }),
        );
        if let Some((verdict, reason)) = ran.early.take() {
            return (verdict, reason, metrics, Vec::new());
        }
        if !done {
            problems.push(match tracker.step_timed() {
                // The step's action ended the load and nothing started it again: the drill's
                // whole point (a killed job comes back) failed, whatever the exit status says.
                Some(step) => format!(
                    "the load ended during step {}/{steps} ({}) and nothing started it again: it did \
                     not recover (the plan's command must bring it back: a restart loop or the \
                     site's supervisor)",
                    step + 1,
                    spec.drill
                        .as_ref()
                        .and_then(|d| d.steps.get(step))
                        .map_or("", |s| s.ask.as_str())
                ),
                None => format!(
                    "the load ended by itself before the drill did ({} of {steps} step(s) done)",
                    outcomes.iter().map(|o| o.step).max().unwrap_or(0)
                ),
            });
        }
        for o in outcomes.iter().filter(|o| o.failed()) {
            problems.push(format!("step {} ({}): {}", o.step, o.ask, o.describe()));
        }
        ran.observed.telemetry = ctx
            .telemetry
            .as_ref()
            .map(|t| t.window(&ran.watched, started_ms, now_ms()));
        let found = found_in(&ran.observed);
        ran.metrics = metrics;
        let (verdict, reason, _) = verdict_of(ctx, spec, &ran);
        // Every step in numbers, and what the load printed about errors and retries meanwhile.
        let mut told: Vec<String> = Vec::new();
        for o in outcomes.iter().filter(|o| !o.failed()) {
            told.push(format!("step {}: {}", o.step, o.describe()));
        }
        let mut by_step: BTreeMap<usize, (u64, Option<String>)> = BTreeMap::new();
        for o in &outcomes {
            by_step.insert(o.step, (o.error_lines, o.first_error.clone()));
        }
        for (step, (n, first)) in by_step {
            if n > 0 {
                told.push(format!(
                    "step {step}: {n} error/retry line(s), first {:?}",
                    first.unwrap_or_default()
                ));
            }
        }
        if last_words > 0 {
            told.push(format!(
                "{last_words} failure line(s) the load printed as burnin stopped it: not judged"
            ));
        }
        let verdict = if problems.is_empty() {
            verdict
        } else {
            Verdict::Fail
        };
        let reason = problems
            .into_iter()
            .chain(told)
            .chain(std::iter::once(reason))
            .collect::<Vec<_>>()
            .join("; ");
        (verdict, reason, ran.metrics, found)
    }
}

/// A drill step burnin does itself: `command` (templated like the phase's own) on each node
/// the phase runs on, with what each answered.
async fn run_step(ctx: &RunContext, spec: &PhaseSpec, command: &str) -> Vec<String> {
    let targets: Vec<&RunnerNode> = match spec.scope {
        Scope::Launcher | Scope::Mpirun => ctx.nodes.iter().take(1).collect(),
        _ => ctx.nodes.iter().collect(),
    };
    let mut said = Vec::new();
    for node in targets {
        let name = &node.spec.name;
        let Some(dir) = PhaseDir::new(
            &ctx.plan.remote_dir,
            &ctx.run_id,
            &ctx.phase_component(&spec.id),
            name,
        ) else {
            said.push(format!("{name}: not a directory name on the node"));
            continue;
        };
        let text = match template_values(ctx, node, &dir, "")
            .and_then(|v| render(command, &v).map_err(|e| e.to_string()))
        {
            Ok(t) => t,
            Err(e) => {
                said.push(format!("{name}: the step's command: {e}"));
                continue;
            }
        };
        let cmd = RemoteCommand {
            argv: vec!["sh".into(), "-c".into(), text.clone()],
        };
        match run_script(node.transport.as_ref(), &cmd).await {
            Ok((_, out, _)) => said.push(format!(
                "{name}: ran `{text}`{}",
                out.lines().next().map_or(String::new(), |l| format!(
                    ": {}",
                    crate::model::excerpt(l.trim())
                ))
            )),
            Err(why) => said.push(format!(
                "{name}: `{text}` failed: {}",
                crate::model::excerpt(&why)
            )),
        }
    }
    said
}
