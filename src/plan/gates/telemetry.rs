//! Gates on the telemetry beside the phase: no Xid, no finding of a rule. Both read the same
//! window and say "not judged" the same way; only what counts as a hit differs.

use super::*;

use crate::model::watch::Window;

/// `no-xid`: no Xid reached the telemetry from the phase's nodes while it ran.
pub(super) fn judge_no_xid(observed: &Observed, said: &mut Said) {
    judge_watched("Xid", observed, said, |t| {
        t.xids.first().map(|x| {
            format!(
                "{} Xid during the phase{}, first Xid {} on {} GPU{}",
                t.xids.len() as u64 + t.xids_dropped,
                if t.xids_dropped > 0 {
                    format!(" ({} repeats not kept)", t.xids_dropped)
                } else {
                    String::new()
                },
                x.code,
                x.node,
                x.gpu
            )
        })
    });
}

/// `no-finding`: the telemetry's triage raised no `rule` finding on the phase's nodes while it
/// ran (the window holds only the phase's nodes).
pub(super) fn judge_no_finding(rule: &str, observed: &Observed, said: &mut Said) {
    judge_watched(rule, observed, said, |t| {
        let hits: Vec<&str> = t
            .findings
            .iter()
            .filter(|f| f.rule == rule)
            .map(|f| f.text.as_str())
            .collect();
        hits.first().map(|first| {
            format!(
                "{} {rule} finding(s) during the phase, first {first}",
                hits.len()
            )
        })
    });
}

/// A gate that fails on what the telemetry window shows (`hit` says what, in words). Without
/// a window it is not judged: a summary line offline (a file has no telemetry), a warning in a
/// run; nodes that sent nothing in the window warn, as nothing can be claimed for them.
fn judge_watched(
    what: &str,
    observed: &Observed,
    said: &mut Said,
    hit: impl Fn(&Window) -> Option<String>,
) {
    match &observed.telemetry {
        None if observed.offline => said
            .summary
            .push(format!("{what} not judged (no telemetry in a file)")),
        None => said.findings.push((
            Level::Warn,
            format!("no telemetry watched: {what} not judged"),
        )),
        Some(t) => match hit(t) {
            Some(why) => said.findings.push((Level::Fail, why)),
            None if !t.silent.is_empty() || !t.stale.is_empty() => {
                let mut without: Vec<String> = Vec::new();
                if !t.silent.is_empty() {
                    without.push(format!("no telemetry from {}", t.silent.join(", ")));
                }
                for (node, missing, span) in &t.stale {
                    without.push(format!(
                        "{node} without telemetry for {} of {} s",
                        missing.div_ceil(1000),
                        span.div_ceil(1000)
                    ));
                }
                said.findings.push((
                    Level::Warn,
                    format!("{}: {what} not judged there", without.join("; ")),
                ));
            }
            None => said.summary.push(format!("no {what}")),
        },
    }
}
