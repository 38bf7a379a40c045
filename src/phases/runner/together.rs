//! A `together` phase: its members started at once, each judged as it ran alone and beside
//! the others, their figures compared.

use super::*;

/// A `together` phase: its members launched at once, each on its nodes as it would run
/// alone (its own directory, parser and time limit), their events under the group's id;
/// then each member's figures beside its run alone earlier in this run. Members keep their
/// gates that read no figure (exit status, #wrong, NET/IB, loss, Xid); their figures are
/// judged by the group's `together` gates instead.
pub(super) async fn drive_together(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    recorded: Option<&BTreeMap<String, usize>>,
    started_ms: u64,
) -> (Verdict, String, Vec<PhaseMetric>, Vec<String>) {
    let mut members: Vec<Arc<PhaseSpec>> = Vec::new();
    for id in &spec.together {
        let Some(m) = ctx.plan.find(id) else {
            return (
                Verdict::Fail,
                format!("{id} is not in the plan"),
                Vec::new(),
                Vec::new(),
            );
        };
        if let Some(why) = skip_reason(&ctx.plan, m) {
            return (
                Verdict::Skipped,
                format!("{id}: {why}"),
                Vec::new(),
                Vec::new(),
            );
        }
        if !ctx.earlier.contains_key(id) {
            return (
                Verdict::Skipped,
                format!(
                    "{id} has not passed alone in this run, and its figures alone are what this compares with: run {id} first"
                ),
                Vec::new(),
                Vec::new(),
            );
        }
        let mut own = (**m).clone();
        own.gates.retain(|g| !g.reads_figures());
        members.push(Arc::new(own));
    }
    let mut set = tokio::task::JoinSet::new();
    for (i, m) in members.iter().enumerate() {
        let ctx = ctx.clone();
        let m = Arc::clone(m);
        let part = Part {
            component: format!("{}-{}", spec.id, m.id),
            event_phase: spec.id.clone(),
            member: Some(m.id.clone()),
        };
        let stop = stop.clone();
        let events = events.clone();
        let recorded = recorded.cloned();
        set.spawn(async move {
            let ran = execute(&ctx, &m, &part, stop, &events, recorded.as_ref()).await;
            (i, ran)
        });
    }
    let mut runs: Vec<Option<Executed>> = members.iter().map(|_| None).collect();
    while let Some(done) = set.join_next().await {
        if let Ok((i, ran)) = done
            && let Some(slot) = runs.get_mut(i)
        {
            *slot = Some(ran);
        }
    }
    let ended_ms = now_ms();
    let mut watched: BTreeSet<String> = BTreeSet::new();
    let mut stopped: Vec<(Verdict, String)> = Vec::new();
    for (m, ran) in members.iter().zip(&mut runs) {
        match ran {
            None => stopped.push((Verdict::Fail, format!("{}: its runner task died", m.id))),
            Some(r) => {
                if let Some((v, why)) = r.early.take() {
                    stopped.push((v, format!("{}: {why}", m.id)));
                }
                watched.extend(r.watched.iter().cloned());
            }
        }
    }
    let mut metrics: Vec<PhaseMetric> = Vec::new();
    if let Some(v) = [
        Verdict::Aborted,
        Verdict::Timeout,
        Verdict::Fail,
        Verdict::Skipped,
    ]
    .into_iter()
    .find(|v| stopped.iter().any(|s| s.0 == *v))
    {
        for r in runs.iter_mut().flatten() {
            metrics.append(&mut r.metrics);
        }
        let reason = stopped
            .iter()
            .map(|s| s.1.clone())
            .collect::<Vec<_>>()
            .join("; ");
        return (v, reason, metrics, Vec::new());
    }
    let watched: Vec<String> = watched.into_iter().collect();
    let window = ctx
        .telemetry
        .as_ref()
        .map(|t| t.window(&watched, started_ms, ended_ms));
    let mut observed = Observed {
        nodes: watched.clone(),
        telemetry: window.clone(),
        node_gpus: node_gpus(ctx),
        hardware: node_hardware(ctx),
        ..Observed::default()
    };
    // Figures compared: those the gates read and those the plan asks to see; every figure
    // both runs have when the plan names none.
    let mut wanted: Vec<String> = spec
        .gates
        .iter()
        .filter_map(|g| match g {
            Gate::Together { figure, .. } => Some(figure.clone()),
            _ => None,
        })
        .collect();
    wanted.extend(spec.compare.iter().cloned());
    for (m, ran) in members.iter().zip(runs.iter_mut()) {
        let Some(ran) = ran else { continue };
        ran.observed.telemetry = window.clone();
        let (verdict, reason, _) = verdict_of(ctx, m, ran);
        observed.members.push((m.id.clone(), verdict, reason));
        if let Some(alone) = ctx.earlier.get(&m.id) {
            let together = gates::figures(&ran.metrics);
            observed
                .changes
                .extend(gates::compare(&m.id, alone, &together, &wanted));
        }
        metrics.append(&mut ran.metrics);
    }
    let at_ms = now_ms();
    for change in &observed.changes {
        let metric = PhaseMetric::Together {
            change: change.clone(),
        };
        let _ = events
            .send(PhaseEvent::Metric {
                phase: spec.id.clone(),
                at_ms,
                metric: metric.clone(),
            })
            .await;
        metrics.push(metric);
    }
    let found = found_in(&observed);
    let judged = gates::judge_gates(spec, &metrics, &observed, ctx.baseline.as_deref());
    send_gate_outcomes(events, &spec.id, judged.gate_metrics(), &mut metrics).await;
    (judged.verdict, judged.reason, metrics, found)
}
