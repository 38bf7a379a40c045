//! A drill: a workload kept running while the engineer breaks something on cue, each step
//! timed and confirmed, the run judged on how it came back.

use super::*;

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
    use crate::plan::drill::{DrillAction, DrillTracker, sample_of};
    let Some(drill) = spec.drill.clone() else {
        return (
            Verdict::Fail,
            "no drill in the plan".into(),
            Vec::new(),
            Vec::new(),
        );
    };
    let steps = drill.steps.len();
    let mut tracker = DrillTracker::new(drill, now_ms());
    let (tap_tx, mut tap_rx) = mpsc::channel::<PhaseEvent>(1024);
    // The load's own switch: the operator's abort passes through it, and the drill sets it
    // (finished) when it is done.
    let (load_tx, load_rx) = watch::channel(None);
    let mut operator = stop;
    let mut operator_live = true;
    let mut confirm = ctx.confirm.clone();
    // Confirmations from before this drill started are not for it.
    if let Some(c) = confirm.as_mut() {
        c.borrow_and_update();
    }
    let mut outcomes: Vec<crate::plan::drill::SeriesOutcome> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut done = false;
    let mut excused: Vec<(String, String, bool)> = Vec::new();
    let part = Part::alone(&spec.id);
    let say = |text: String| PhaseEvent::Note {
        phase: spec.id.clone(),
        at_ms: now_ms(),
        node: None,
        text,
    };
    let mut ran = {
        let exec = execute(ctx, spec, &part, load_rx, &tap_tx, recorded);
        tokio::pin!(exec);
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        loop {
            let mut actions = Vec::new();
            tokio::select! {
                r = &mut exec => break r,
                Some(ev) = tap_rx.recv() => {
                    match &ev {
                        // What a step provokes (a killed job's traceback) is the step's
                        // outcome, and what the load says as burnin stops it is not judged.
                        PhaseEvent::Metric { metric: PhaseMetric::Problem { node, text }, .. }
                            if done || tracker.watching() =>
                        {
                            tracker.problem(text);
                            excused.push((node.clone(), text.clone(), done));
                        }
                        PhaseEvent::Metric { metric, at_ms, .. } => {
                            if let Some((f, who, v)) = sample_of(metric) {
                                tracker.sample(*at_ms, &f, &who, v);
                            }
                        }
                        PhaseEvent::Line { text, .. } => tracker.line(text),
                        _ => {}
                    }
                    let _ = events.send(ev).await;
                }
                _ = ticker.tick() => actions = tracker.tick(now_ms()),
                changed = operator.changed(), if operator_live => match changed {
                    Ok(()) => {
                        let why = *operator.borrow();
                        if why.is_some() {
                            let _ = load_tx.send(why);
                        }
                    }
                    Err(_) => operator_live = false,
                },
                ok = next_confirm(&mut confirm) => {
                    if !ok {
                        confirm = None;
                        if let Some(step) = tracker.asking() {
                            problems.push(format!("step {}/{steps}: {NOBODY_CONFIRMS}", step + 1));
                            done = true;
                            let _ = load_tx.send(Some(StopReason::Finished));
                        }
                    } else if let Some(step) = tracker.asking() {
                        tracker.confirm(now_ms());
                        let _ = events.send(PhaseEvent::Prompt { phase: spec.id.clone(), at_ms: now_ms(), text: None }).await;
                        let _ = events.send(say(format!("the operator confirmed step {}/{steps}: timing the recovery", step + 1))).await;
                    } else {
                        let _ = events.send(say("a confirmation while nothing was asked: ignored".into())).await;
                    }
                }
            }
            for a in actions {
                match a {
                    DrillAction::Ask(step, text) => {
                        let text = format!("step {}/{steps}: {text}", step + 1);
                        let run = spec
                            .drill
                            .as_ref()
                            .and_then(|d| d.steps.get(step))
                            .and_then(|s| s.run.clone());
                        if let Some(command) = run {
                            // burnin does this step itself, timed from when it is sent.
                            let sent = now_ms();
                            let _ = events.send(say(format!("{text}: burnin does it"))).await;
                            for line in run_step(ctx, spec, &command).await {
                                let _ = events.send(say(line)).await;
                            }
                            tracker.confirm(sent);
                            continue;
                        }
                        if confirm.is_none() {
                            // Waiting would only end at the phase's time limit.
                            problems.push(format!("{text}: {NOBODY_CONFIRMS}"));
                            done = true;
                            let _ = load_tx.send(Some(StopReason::Finished));
                            continue;
                        }
                        let _ = events.send(say(format!("asks the operator: {text}"))).await;
                        let _ = events
                            .send(PhaseEvent::Prompt {
                                phase: spec.id.clone(),
                                at_ms: now_ms(),
                                text: Some(text),
                            })
                            .await;
                    }
                    DrillAction::StepDone(rows) => {
                        for row in rows {
                            let _ = events
                                .send(PhaseEvent::Metric {
                                    phase: spec.id.clone(),
                                    at_ms: now_ms(),
                                    metric: PhaseMetric::Drill {
                                        outcome: row.clone(),
                                    },
                                })
                                .await;
                            outcomes.push(row);
                        }
                    }
                    DrillAction::NoSteady(why) => problems.push(why),
                    DrillAction::Done => {
                        done = true;
                        let _ = load_tx.send(Some(StopReason::Finished));
                    }
                }
            }
        }
    };
    while let Ok(ev) = tap_rx.try_recv() {
        if let PhaseEvent::Metric {
            metric: PhaseMetric::Problem { node, text },
            ..
        } = &ev
            && done
        {
            excused.push((node.clone(), text.clone(), true));
        }
        let _ = events.send(ev).await;
    }
    if tracker.asking().is_some() {
        let _ = events
            .send(PhaseEvent::Prompt {
                phase: spec.id.clone(),
                at_ms: now_ms(),
                text: None,
            })
            .await;
    }
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
