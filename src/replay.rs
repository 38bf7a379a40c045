//! `burnin replay RUN_DIR`: the console over a run record. The record's events (phase events,
//! node states, AIStor windows) and its per-second telemetry (each second's last frame) are put
//! back on one timeline, with a clock tick per second ahead of that second's events as a live
//! source sends them, so the console shows what it showed live at the same instant (at a 1 s
//! sampling period exactly; faster sampling replays one frame per second). The replay plays at
//! `--speed`, starts at `--at`, and the console's pause key freezes it.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::UnixMillis;
use crate::phases::{PhaseCommand, PhaseEvent};
use crate::record::telemetry::read_telemetry;
use crate::record::{RecordEvent, Recorded, read_events, read_summary};
use crate::telemetry::{Source, SourceEvent, SourceTask};

/// The longest record a replay takes: a month, well past any burn-in.
pub const MAX_SPAN_S: u64 = 31 * 86_400;

/// A run record laid out in time.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Events with the instant they belong to, in the order the console takes them.
    pub events: Vec<(UnixMillis, SourceEvent)>,
    /// When the run started.
    pub start_ms: UnixMillis,
    /// The last instant the record knows.
    pub end_ms: UnixMillis,
    /// Lines that did not decode and telemetry segments torn by a crash, in words.
    pub damage: Vec<String>,
}

/// Where an event sits within its second: what the nodes are, the clock (as a live source
/// ticks), then phase starts and ends, frames, phase output, and the rest.
fn rank(ev: &SourceEvent) -> u8 {
    match ev {
        // Who the nodes are comes before anything about them, as a live source says it.
        SourceEvent::Expect { .. } | SourceEvent::Hello(_) => 0,
        SourceEvent::Clock { .. } => 1,
        SourceEvent::Phase(PhaseEvent::Started { .. } | PhaseEvent::Finished { .. }) => 2,
        SourceEvent::Frame(_) => 3,
        SourceEvent::Phase(_) => 4,
        _ => 5,
    }
}

impl Timeline {
    /// Read `run_dir` into a timeline.
    pub fn load(run_dir: &Path) -> Result<Self, String> {
        let summary = read_summary(run_dir)?;
        let (recorded, bad) = read_events(run_dir)?;
        let tele = read_telemetry(run_dir)?;
        let mut damage = Vec::new();
        if bad > 0 {
            damage.push(format!("{bad} line(s) of events.jsonl did not decode"));
        }
        for t in &tele.torn {
            damage.push(format!("telemetry segment {t} ends torn"));
        }
        let start = summary.started_ms;
        let mut timed: Vec<(UnixMillis, SourceEvent)> = Vec::new();
        for n in &summary.nodes {
            if let Some(h) = &n.hello {
                timed.push((start, SourceEvent::Hello(h.clone())));
            }
        }
        for r in recorded {
            match r {
                Recorded::Phase(ev) => timed.push((ev.at_ms(), SourceEvent::Phase(ev))),
                Recorded::Run(RecordEvent::NodeState {
                    at_ms,
                    node,
                    state,
                    detail,
                }) => {
                    let link = match state.as_str() {
                        "streaming" => crate::model::NodeLink::Streaming,
                        "stale" => crate::model::NodeLink::Stale,
                        "unreachable" => crate::model::NodeLink::Unreachable(
                            detail.unwrap_or_else(|| "unreachable".into()),
                        ),
                        _ => crate::model::NodeLink::Connecting,
                    };
                    timed.push((at_ms, SourceEvent::Link { node, at_ms, link }));
                }
                Recorded::Run(RecordEvent::Probe { window }) => {
                    timed.push((window.at_ms, SourceEvent::Probe(window)));
                }
                // Replayed only where the live console was told: a simulated cluster tells
                // nothing of the kind, a fleet of real (or `sim`-mode) nodes does.
                Recorded::Run(RecordEvent::Expect {
                    at_ms,
                    node,
                    gpus,
                    nic_rate_gbps,
                }) => timed.push((
                    at_ms,
                    SourceEvent::Expect {
                        node,
                        gpus,
                        nic_rate_gbps,
                    },
                )),
                Recorded::Run(RecordEvent::Finding { .. } | RecordEvent::Operator { .. }) => {}
            }
        }
        for s in &tele.seconds {
            timed.push((s.last.at_ms, SourceEvent::Frame(s.replay_frame())));
        }
        let end = timed
            .iter()
            .map(|(t, _)| *t)
            .max()
            .unwrap_or(start)
            .max(summary.ended_ms.unwrap_or(start));
        // A record whose times stray past any burn-in (a hand-edited file, a clock far off)
        // would have the replay tick through years: say so instead.
        let span_s = end.saturating_sub(start) / 1000;
        if span_s > MAX_SPAN_S {
            return Err(format!(
                "{}: the record spans {} days from its start ({}); no run is that long, so its times are not believable",
                run_dir.display(),
                span_s / 86_400,
                crate::record::utc_stamp(start / 1000)
            ));
        }
        // One clock tick per second, as the live sources send them.
        let mut t = start - start % 1000;
        while t <= end {
            timed.push((t, SourceEvent::Clock { at_ms: t }));
            t += 1000;
        }
        // Stable: within a second and rank, the record's own order stands.
        timed.sort_by_key(|(t, ev)| (t / 1000, rank(ev)));
        Ok(Self {
            events: timed,
            start_ms: start,
            end_ms: end,
            damage,
        })
    }

    /// Everything up to and including the second `start + at_s`.
    pub fn until(&self, at_s: u64) -> impl Iterator<Item = &SourceEvent> {
        let until = self.start_ms / 1000 + at_s;
        self.events
            .iter()
            .take_while(move |(t, _)| t / 1000 <= until)
            .map(|(_, e)| e)
    }
}

/// Plays a timeline into the console.
pub struct ReplaySource {
    timeline: Timeline,
    speed: f64,
    at_s: u64,
}

impl ReplaySource {
    /// Play `timeline` from `at_s` seconds after its start, `speed` record seconds a second.
    pub fn new(timeline: Timeline, speed: f64, at_s: u64) -> Self {
        Self {
            timeline,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
            at_s,
        }
    }
}

impl Source for ReplaySource {
    fn run(
        self: Box<Self>,
        events: mpsc::Sender<SourceEvent>,
        _commands: mpsc::UnboundedReceiver<PhaseCommand>,
    ) -> SourceTask {
        Box::pin(async move {
            let ReplaySource {
                timeline,
                speed,
                at_s,
            } = *self;
            for d in &timeline.damage {
                let _ = events
                    .send(SourceEvent::Notice {
                        text: format!("replay: {d}"),
                    })
                    .await;
            }
            let from_ms = timeline.start_ms - timeline.start_ms % 1000 + at_s * 1000;
            let started = tokio::time::Instant::now();
            for (t, ev) in timeline.events {
                if t >= from_ms + 1000 {
                    let due = Duration::from_secs_f64((t - from_ms) as f64 / 1000.0 / speed);
                    tokio::time::sleep_until(started + due).await;
                }
                if events.send(ev).await.is_err() {
                    return;
                }
            }
            let _ = events
                .send(SourceEvent::Notice {
                    text: "replay: end of the record".into(),
                })
                .await;
            // Stay until the console quits, showing the end.
            events.closed().await;
        })
    }
}
