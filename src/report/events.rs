//! The events a report reads from `events.jsonl`, walked one at a time so a record of
//! millions of lines is reported in little memory, and what it says of node output the
//! record's events keep only a sample of.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::phase::PhaseEvent;
use crate::record::{EventReader, RecordError, RecordEvent, Recorded};

/// The events the report reads, walked from `events.jsonl` one at a time.
pub(super) struct ReportEvents {
    /// Phase starts, ends and metrics, and findings: the output lines, notes and node states
    /// that make up most of a long record are never held.
    pub(super) kept: Vec<Recorded>,
    /// Lines that did not decode.
    pub(super) bad: u64,
    /// Per (phase, node): output lines `events.jsonl` holds, and lines it left to the log.
    pub(super) output: BTreeMap<(String, String), (u64, u64)>,
}

pub(super) fn report_events(run_dir: &Path) -> Result<ReportEvents, RecordError> {
    let mut reader = EventReader::open(run_dir)?;
    let mut kept = Vec::new();
    let mut output: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for e in reader.by_ref() {
        match &e {
            Recorded::Phase(PhaseEvent::Line {
                phase,
                node: Some(node),
                ..
            }) => output.entry((phase.clone(), node.clone())).or_default().0 += 1,
            Recorded::Run(RecordEvent::Held {
                phase, node, lines, ..
            }) => {
                let held = &mut output.entry((phase.clone(), node.clone())).or_default().1;
                *held = held.saturating_add(*lines);
            }
            Recorded::Phase(
                PhaseEvent::Started { .. }
                | PhaseEvent::Finished { .. }
                | PhaseEvent::Metric { .. },
            )
            | Recorded::Run(RecordEvent::Finding { .. }) => kept.push(e),
            _ => {}
        }
    }
    Ok(ReportEvents {
        kept,
        bad: reader.finish()?,
        output,
    })
}

/// Most nodes whose thinned output the report names one by one.
const OUTPUT_NOTES_MAX: usize = 12;

/// Where the report says a node's output was more than `events.jsonl` keeps: how much, and
/// the log (with its size on disk) that has all of it.
pub(super) fn output_notes(
    run_dir: &Path,
    output: &BTreeMap<(String, String), (u64, u64)>,
) -> Vec<String> {
    let thinned: Vec<_> = output.iter().filter(|(_, (_, held))| *held > 0).collect();
    let mut notes: Vec<String> = thinned
        .iter()
        .take(OUTPUT_NOTES_MAX)
        .map(|((phase, node), (kept, held))| {
            let gz = crate::record::logs::NodeLogs::compressed_path(run_dir, phase, node);
            let plain = crate::record::logs::NodeLogs::plain_path(run_dir, phase, node);
            let (file, size) = match (std::fs::symlink_metadata(&gz), std::fs::symlink_metadata(&plain)) {
                (Ok(m), _) => (format!("logs/{phase}/{node}.log.gz"), m.len()),
                (_, Ok(m)) => (format!("logs/{phase}/{node}.log"), m.len()),
                _ => (format!("logs/{phase}/{node}.log.gz (not found)"), 0),
            };
            format!(
                "{phase} {node} printed {} lines; the record's events keep {kept} of them, the whole output is {file} ({})",
                kept.saturating_add(*held),
                crate::model::format_bytes(size)
            )
        })
        .collect();
    if thinned.len() > OUTPUT_NOTES_MAX {
        notes.push(format!(
            "and {} more node logs like these under logs/",
            thinned.len() - OUTPUT_NOTES_MAX
        ));
    }
    notes
}
