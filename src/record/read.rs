//! Reading a record's `events.jsonl` back: one event at a time ([`EventReader`]), so a
//! record of millions of events is walked in constant memory, and what a console taking the
//! run over needs of it ([`read_state`]).

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::phase::PhaseEvent;
use crate::record::{RecordError, RecordEvent, files, logs};

/// What a run's record says about its phases, for a console that takes the run over.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RecordState {
    /// Phases with a verdict.
    pub finished: std::collections::BTreeSet<String>,
    /// Phases started and not finished, in the order they started.
    pub unfinished: Vec<String>,
    /// Output lines recorded per (phase, node) (the runner's own notes are not output).
    pub lines: BTreeMap<(String, String), usize>,
    /// When each phase last started.
    pub started_ms: BTreeMap<String, u64>,
    /// How many times each phase started (its attempt number on the nodes).
    pub attempts: BTreeMap<String, u32>,
}

/// Read `events.jsonl` and the logs of a run directory (a torn last line is skipped).
pub fn read_state(run_dir: &Path) -> Result<RecordState, RecordError> {
    let mut events = EventReader::open(run_dir)?;
    let mut st = RecordState::default();
    for ev in events.by_ref() {
        let ev = match ev {
            Recorded::Phase(ev) => ev,
            Recorded::Run(RecordEvent::Held {
                phase, node, lines, ..
            }) => {
                let n = usize::try_from(lines).unwrap_or(usize::MAX);
                let seen = st.lines.entry((phase, node)).or_default();
                *seen = seen.saturating_add(n);
                continue;
            }
            Recorded::Run(_) => continue,
        };
        match ev {
            PhaseEvent::Started { phase, at_ms } => {
                // A new attempt: a console re-attaching to it skips only its own lines.
                st.lines.retain(|(p, _), _| *p != phase);
                st.started_ms.insert(phase.clone(), at_ms);
                *st.attempts.entry(phase.clone()).or_default() += 1;
                st.finished.remove(&phase);
                st.unfinished.retain(|p| *p != phase);
                st.unfinished.push(phase);
            }
            PhaseEvent::Finished { phase, .. } => {
                st.unfinished.retain(|p| *p != phase);
                st.finished.insert(phase);
            }
            PhaseEvent::Line {
                phase,
                node: Some(node),
                ..
            } => {
                *st.lines.entry((phase, node)).or_default() += 1;
            }
            _ => {}
        }
    }
    events.finish()?;
    // A phase still running: its plain logs hold every line it printed, and a crash may
    // have cost the last `Held` event, not a line of the log.
    for ((phase, node), n) in st.lines.iter_mut() {
        if st.unfinished.contains(phase)
            && let Some(on_disk) = logs::plain_lines(run_dir, phase, node)
        {
            *n = (*n).max(usize::try_from(on_disk).unwrap_or(usize::MAX));
        }
    }
    Ok(st)
}

/// One line of `events.jsonl`: a phase's event or one of the run's own.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Started, line, note, metric, finished.
    Phase(PhaseEvent),
    /// Finding, node state, operator.
    Run(RecordEvent),
}

/// Walks `events.jsonl` one event at a time. Lines that do not decode (a line torn by a
/// crash, one past [`files::LINE_MAX_BYTES`]) are counted in `bad`; a read that fails ends the
/// walk with the error kept in `failed`.
pub struct EventReader {
    path: std::path::PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    buf: Vec<u8>,
    /// Lines that did not decode so far.
    pub bad: u64,
    /// Why the walk ended early, if it did.
    pub failed: Option<RecordError>,
    done: bool,
}

impl EventReader {
    /// Open `run_dir`'s `events.jsonl` (a plain file of at most
    /// [`files::EVENTS_WALK_MAX_BYTES`]: never a link, a device or a FIFO); it is read a line
    /// at a time.
    pub fn open(run_dir: &Path) -> Result<Self, RecordError> {
        let path = run_dir.join("events.jsonl");
        let file = files::open_regular(&path, files::EVENTS_WALK_MAX_BYTES)?;
        Ok(Self {
            path,
            reader: std::io::BufReader::with_capacity(1 << 16, file),
            buf: Vec::new(),
            bad: 0,
            failed: None,
            done: false,
        })
    }

    /// The error that ended the walk, or the count of lines that did not decode.
    pub fn finish(mut self) -> Result<u64, RecordError> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(self.bad),
        }
    }
}

impl Iterator for EventReader {
    type Item = Recorded;

    fn next(&mut self) -> Option<Recorded> {
        while !self.done {
            // Bytes, not a string: a crash can tear the last line inside a multi-byte
            // character, and that must cost the line, not the whole record.
            match files::read_line_bounded(&mut self.reader, &mut self.buf, files::LINE_MAX_BYTES) {
                Err(e) => {
                    self.failed = Some(RecordError::io(&self.path, e));
                    self.done = true;
                }
                Ok(files::Line::End) => self.done = true,
                Ok(files::Line::TooLong) => self.bad += 1,
                Ok(files::Line::Whole | files::Line::Unterminated) => {
                    let line = String::from_utf8_lossy(&self.buf);
                    if line.trim().is_empty() {
                        continue;
                    }
                    if let Ok(ev) = serde_json::from_str::<PhaseEvent>(&line) {
                        return Some(Recorded::Phase(ev));
                    } else if let Ok(ev) = serde_json::from_str::<RecordEvent>(&line) {
                        return Some(Recorded::Run(ev));
                    }
                    self.bad += 1;
                }
            }
        }
        None
    }
}

/// Every event of a run in order, and how many lines did not decode (a torn last line after
/// a crash among them). Held whole: for a record of bounded size ([`files::EVENTS_MAX_BYTES`]);
/// walk a record of any size with [`EventReader`].
pub fn read_events(run_dir: &Path) -> Result<(Vec<Recorded>, u64), RecordError> {
    let p = run_dir.join("events.jsonl");
    // Refused before reading when larger than a record held whole may be.
    drop(files::open_regular(&p, files::EVENTS_MAX_BYTES)?);
    let mut reader = EventReader::open(run_dir)?;
    let out: Vec<Recorded> = reader.by_ref().collect();
    let bad = reader.finish()?;
    Ok((out, bad))
}
