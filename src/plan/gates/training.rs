//! Gates on training: scaling from one GPU to all, loss finite and falling.

use super::*;

/// `scaling`: the full job at least `pct` % of 1-GPU tokens/s × GPUs, per node.
pub(super) fn judge_scaling(pct: f64, j: &Judging<'_>, said: &mut Said) {
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

/// `loss-falling` and `loss-finite`: per job, loss finite throughout (and falling, when `falling`).
pub(super) fn judge_loss(falling: bool, metrics: &[PhaseMetric], said: &mut Said) {
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
