//! What the nodes' telemetry writes into a run's record, for `burnin run`, `run --demo` and the
//! console alike: the per-second telemetry segment, findings raised and cleared, node state
//! changes and AIStor probe windows.

use super::RecordError;
use std::sync::{Arc, Mutex};

use super::telemetry::TelemetryRecorder;
use super::{ChangeLog, RecordEvent};
use crate::model::SourceEvent;
use crate::record::session::{RunSession, SharedRecord};

/// What the telemetry writes into the run's record: the per-second telemetry segment, and
/// the findings and node states as they change.
pub struct TelemetryRecording {
    /// The record's `events.jsonl`; `None` while kept in memory ([`Self::in_memory`]).
    record: Option<SharedRecord>,
    /// This run's telemetry segment.
    pub telemetry: Arc<Mutex<TelemetryRecorder>>,
    changes: ChangeLog,
    /// Events waiting for the record while kept in memory.
    held: Vec<RecordEvent>,
}

/// Events a recording kept in memory holds at most; past this (or [`MAX_HELD_BYTES`] of
/// telemetry) the console starts keeping afresh rather than grow without bound.
pub const MAX_HELD_EVENTS: usize = 50_000;
/// Compressed telemetry a recording kept in memory holds at most (a 12-node cluster at 1 s
/// writes a few MB an hour).
pub const MAX_HELD_BYTES: usize = 48 << 20;

impl TelemetryRecording {
    /// Start the next telemetry segment of the run in `session`.
    pub fn new(session: &RunSession) -> Result<Self, RecordError> {
        Ok(Self {
            record: Some(session.record()),
            telemetry: Arc::new(Mutex::new(TelemetryRecorder::create(session.dir())?)),
            changes: ChangeLog::new(),
            held: Vec::new(),
        })
    }

    /// A recording with no run yet: telemetry and changes are kept in memory until
    /// [`Self::attach`] gives them one (what the console sees before its first phase).
    pub fn in_memory() -> Self {
        Self {
            record: None,
            telemetry: Arc::new(Mutex::new(TelemetryRecorder::in_memory())),
            changes: ChangeLog::new(),
            held: Vec::new(),
        }
    }

    /// Whether it writes into a run's record (rather than memory).
    pub fn attached(&self) -> bool {
        self.record.is_some()
    }

    /// Whether what is kept in memory has reached its bounds ([`MAX_HELD_EVENTS`],
    /// [`MAX_HELD_BYTES`]).
    pub fn full(&self) -> bool {
        !self.attached()
            && (self.held.len() >= MAX_HELD_EVENTS
                || self
                    .telemetry
                    .lock()
                    .is_ok_and(|t| t.memory_bytes() >= MAX_HELD_BYTES))
    }

    /// Write what was kept in memory into `session`'s record (events in order, telemetry as
    /// the run's next segment) and go on writing there.
    pub fn attach(&mut self, session: &RunSession) -> Result<(), RecordError> {
        if self.attached() {
            return Ok(());
        }
        self.telemetry
            .lock()
            .map_err(|_| RecordError::Poisoned("telemetry segment: a writer panicked"))?
            .persist(session.dir())?;
        let record = session.record();
        {
            let mut r = record
                .lock()
                .map_err(|_| RecordError::Poisoned("run record: a writer panicked"))?;
            for e in self.held.drain(..) {
                r.record_event(&e)?;
            }
        }
        self.record = Some(record);
        Ok(())
    }

    /// Record what `ev` changes; `findings` are triage's findings when it just ran.
    pub fn observe(
        &mut self,
        ev: &SourceEvent,
        at_ms: crate::model::UnixMillis,
        findings: Option<&[crate::triage::Finding]>,
    ) -> Result<(), RecordError> {
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
            SourceEvent::Search(search) => events.push(RecordEvent::Search {
                at_ms,
                search: search.clone(),
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
        if events.is_empty() {
            return Ok(());
        }
        let Some(record) = &self.record else {
            self.held.extend(events);
            return Ok(());
        };
        let mut record = record
            .lock()
            .map_err(|_| RecordError::Poisoned("run record: a writer panicked"))?;
        for e in &events {
            record.record_event(e)?;
        }
        Ok(())
    }

    /// Close the telemetry segment.
    pub fn finish(&self) -> Result<(), RecordError> {
        match self.telemetry.lock() {
            Ok(mut t) => t.finish(),
            Err(_) => Err(RecordError::Poisoned(
                "telemetry segment: a writer panicked",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeLink;

    /// Watching for hours without a phase: what is kept in memory says it is full at its bound
    /// (the driver then keeps afresh), and counts nothing before.
    #[test]
    fn a_recording_in_memory_is_full_at_its_bound() {
        let mut r = TelemetryRecording::in_memory();
        assert!(!r.attached() && !r.full());
        for i in 0..MAX_HELD_EVENTS as u64 {
            let link = if i % 2 == 0 {
                NodeLink::Connecting
            } else {
                NodeLink::Stale
            };
            let ev = SourceEvent::Link {
                node: "n1".into(),
                at_ms: i,
                link,
            };
            r.observe(&ev, i, None).expect("observe");
            assert_eq!(r.full(), i + 1 >= MAX_HELD_EVENTS as u64, "after {}", i + 1);
        }
    }
}
