//! Gates on what the output says: its checks, nccl-tests' #wrong, a text every node printed.

use std::cmp::Reverse;

use super::*;

/// `checks`: every sanity or preflight check held; an unknown one warns.
pub(super) fn judge_checks(metrics: &[PhaseMetric], said: &mut Said) {
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
    // T0's gpu-model, across the nodes: one node of another model is a node to return (or a
    // plan whose floors fit none of them), whatever its own checks say.
    let models: Vec<(&str, &str)> = checks
        .iter()
        .filter(|c| c.1 == "gpu-model" && c.2 == CheckStatus::Ok)
        .map(|c| (c.0.as_str(), c.3.as_str()))
        .collect();
    if let Some(words) = crate::parsers::gpu_model::differing_nodes(&models) {
        said.findings
            .push((Level::Fail, format!("gpu-model: {words}")));
    }
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

/// Most groups of checks a phase without a `checks` gate says beside its gates.
const MAX_UNGATED_GROUPS: usize = 6;

/// A phase whose gates read no checks still says the checks its output made (T8's
/// `gds-loader`: which reader its GDS column used, or why there is none): one line per
/// (check, status, detail) with the nodes that said it. A failed or warning one warns, never
/// fails, the phase (its gates judge it); an ok or unknown one is said in the summary.
pub(super) fn say_ungated_checks(metrics: &[PhaseMetric], said: &mut Said) {
    let mut groups: BTreeMap<(Reverse<u8>, &str, &str), Vec<&str>> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::Check {
            node,
            name,
            status,
            detail,
        } = m
        {
            let rank = match status {
                CheckStatus::Failed => 3,
                CheckStatus::Warn => 2,
                CheckStatus::Unknown => 1,
                CheckStatus::Ok => 0,
            };
            let nodes = groups
                .entry((Reverse(rank), name.as_str(), detail.as_str()))
                .or_default();
            if !nodes.contains(&node.as_str()) {
                nodes.push(node);
            }
        }
    }
    let total = groups.len();
    for ((Reverse(rank), name, detail), nodes) in groups.into_iter().take(MAX_UNGATED_GROUPS) {
        let who = match nodes.as_slice() {
            [one] => (*one).to_string(),
            [first, ..] => format!("{} nodes (first {first})", nodes.len()),
            [] => "?".into(),
        };
        let line = format!("{who} {name}: {detail}");
        if rank >= 2 {
            said.findings.push((Level::Warn, line));
        } else {
            said.summary.push(line);
        }
    }
    if total > MAX_UNGATED_GROUPS {
        said.summary.push(format!(
            "{} more kinds of check result not shown (the record keeps them)",
            total - MAX_UNGATED_GROUPS
        ));
    }
}

/// `zero-wrong`: nccl-tests found no wrong element; unvalidated rows warn.
pub(super) fn judge_zero_wrong(metrics: &[PhaseMetric], said: &mut Said) {
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
pub(super) fn judge_output_contains(
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
