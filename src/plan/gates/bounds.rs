//! Gates on a figure's value: a floor or ceiling, its peers, the baseline, alone against together.

use super::*;

/// `together`: beside the others, no subject more than `worse_pct` % worse than alone.
pub(super) fn judge_together(
    figure: &String,
    worse_pct: &f64,
    observed: &Observed,
    said: &mut Said,
) {
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

/// `min` and `max`: every subject's figure within `value`, but for the subjects the phase's
/// `spec` gate judges (`spec_judged`: a `min` with `unless = "spec"`), which are its alone.
pub(super) fn judge_bound(
    is_min: bool,
    figure: &String,
    value: &f64,
    spec_judged: &BTreeSet<String>,
    j: &Judging<'_>,
    said: &mut Said,
) {
    let Some(samples) = j.figs.get(figure) else {
        said.findings.push(j.missing(figure));
        return;
    };
    let left: Vec<&Sample> = samples
        .iter()
        .filter(|s| !spec_judged.contains(&s.subject))
        .collect();
    if left.is_empty() {
        said.summary.push(format!(
            "{figure} limit {} not judged: the spec's floor for the model judges every subject",
            fmt_value(*value)
        ));
        return;
    }
    let bad: Vec<&&Sample> = left
        .iter()
        .filter(|s| {
            if is_min {
                s.value < *value
            } else {
                s.value > *value
            }
        })
        .collect();
    let others = if spec_judged.is_empty() {
        String::new()
    } else {
        format!(
            "; {} subject(s) judged by the spec's floor instead",
            samples.len() - left.len()
        )
    };
    if let Some(first) = bad.first() {
        said.findings.push((
            Level::Fail,
            format!(
                "{figure} {} {} on {} (limit {}{others})",
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
pub(super) fn judge_peers(figure: &String, pct: &f64, j: &Judging<'_>, said: &mut Said) {
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
        None => said
            .summary
            .push(format!("{figure}: no peers to compare, not judged")),
    }
}

/// `baseline`: every subject at least `pct` % of the saved baseline's.
pub(super) fn judge_baseline(figure: &String, pct: &f64, j: &Judging<'_>, said: &mut Said) {
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
