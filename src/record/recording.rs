//! What the nodes' telemetry writes into a run's record, for `burnin run`, `run --demo` and the
//! console alike: the per-second telemetry segment, findings raised and cleared, node state
//! changes and AIStor probe windows.

use std::sync::{Arc, Mutex};

use super::telemetry::TelemetryRecorder;
use super::{ChangeLog, RecordEvent};
use crate::phases::session::{RunSession, SharedRecord};
use crate::telemetry::SourceEvent;

/// What the telemetry writes into the run's record: the per-second telemetry segment, and
/// the findings and node states as they change.
pub struct TelemetryRecording {
    /// The record's `events.jsonl`.
    pub record: SharedRecord,
    /// This run's telemetry segment.
    pub telemetry: Arc<Mutex<TelemetryRecorder>>,
    changes: ChangeLog,
}

impl TelemetryRecording {
    /// Start the next telemetry segment of the run in `session`.
    pub fn new(session: &RunSession) -> Result<Self, String> {
        Ok(Self {
            record: session.record(),
            telemetry: Arc::new(Mutex::new(TelemetryRecorder::create(session.dir())?)),
            changes: ChangeLog::new(),
        })
    }

    /// Record what `ev` changes; `findings` are triage's findings when it just ran.
    pub fn observe(
        &mut self,
        ev: &SourceEvent,
        at_ms: crate::model::UnixMillis,
        findings: Option<&[crate::triage::Finding]>,
    ) -> Result<(), String> {
        let mut events = Vec::new();
        match ev {
            SourceEvent::Frame(f) => {
                if let Ok(mut t) = self.telemetry.lock() {
                    t.frame(f)?;
                }
            }
            SourceEvent::Link { node, link, .. } => {
                events.extend(self.changes.link(at_ms, node, link));
            }
            SourceEvent::Probe(window) => events.push(RecordEvent::Probe {
                window: window.clone(),
            }),
            SourceEvent::Expect {
                node,
                gpus,
                nic_rate_gbps,
            } => events.push(RecordEvent::Expect {
                at_ms,
                node: node.clone(),
                gpus: *gpus,
                nic_rate_gbps: *nic_rate_gbps,
            }),
            _ => {}
        }
        if let Some(found) = findings {
            events.extend(self.changes.findings(at_ms, found));
        }
        if !events.is_empty() {
            let mut record = self
                .record
                .lock()
                .map_err(|_| "run record: a writer panicked".to_string())?;
            for e in &events {
                record.record_event(e)?;
            }
        }
        Ok(())
    }

    /// Close the telemetry segment.
    pub fn finish(&self) -> Result<(), String> {
        match self.telemetry.lock() {
            Ok(mut t) => t.finish(),
            Err(_) => Err("telemetry segment: a writer panicked".into()),
        }
    }
}
