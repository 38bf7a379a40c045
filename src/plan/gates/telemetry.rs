//! Gates on the telemetry beside the phase: no Xid, no finding of a rule.

use super::*;

/// `no-xid`: no Xid reached the telemetry from the phase's nodes while it ran.
pub(super) fn judge_no_xid(observed: &Observed, said: &mut Said) {
    match &observed.telemetry {
        None if observed.offline => said
            .summary
            .push("Xid not judged (no telemetry in a file)".into()),
        None => said
            .findings
            .push((Level::Warn, "no telemetry watched: Xid not judged".into())),
        Some(t) => {
            if let Some(x) = t.xids.first() {
                said.findings.push((
                    Level::Fail,
                    format!(
                        "{} Xid during the phase, first Xid {} on {} GPU{}",
                        t.xids.len(),
                        x.code,
                        x.node,
                        x.gpu
                    ),
                ));
            } else if !t.silent.is_empty() {
                said.findings.push((
                    Level::Warn,
                    format!(
                        "no telemetry from {}: Xid not judged there",
                        t.silent.join(", ")
                    ),
                ));
            } else {
                said.summary.push("no Xid".into());
            }
        }
    }
}

/// `no-finding`: the telemetry's triage raised no `rule` finding on the phase's nodes while it
/// ran (the window holds only the phase's nodes).
pub(super) fn judge_no_finding(rule: &str, observed: &Observed, said: &mut Said) {
    match &observed.telemetry {
        None if observed.offline => said
            .summary
            .push(format!("{rule} not judged (no telemetry in a file)")),
        None => said.findings.push((
            Level::Warn,
            format!("no telemetry watched: {rule} not judged"),
        )),
        Some(t) => {
            let hits: Vec<&str> = t
                .findings
                .iter()
                .filter(|f| f.rule == rule)
                .map(|f| f.text.as_str())
                .collect();
            if let Some(first) = hits.first() {
                said.findings.push((
                    Level::Fail,
                    format!(
                        "{} {rule} finding(s) during the phase, first {first}",
                        hits.len()
                    ),
                ));
            } else if !t.silent.is_empty() {
                said.findings.push((
                    Level::Warn,
                    format!(
                        "no telemetry from {}: {rule} not judged there",
                        t.silent.join(", ")
                    ),
                ));
            } else {
                said.summary.push(format!("no {rule}"));
            }
        }
    }
}
