//! `burnin replay RUN_DIR`: the console over a run record. The record's events (phase events,
//! node states, AIStor windows) and its per-second telemetry (each second's last frame) are put
//! back on one timeline, with a clock tick per second ahead of that second's events as a live
//! source sends them, so the console shows what it showed live at the same instant (at a 1 s
//! sampling period exactly; faster sampling replays one frame per second). The replay starts at
//! `--at` and plays at `--speed`; in the console `p` pauses it, `<`/`>` halve and double the
//! speed, `[`/`]` and `{`/`}` seek a minute and ten minutes (backwards plays the record again
//! from its start, at once).

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::UnixMillis;
use crate::model::phase::{PhaseCommand, PhaseEvent};
use crate::model::{Source, SourceEvent, SourceTask};
use crate::record::telemetry::TelemetryStream;
use crate::record::{EventReader, RecordEvent, Recorded, read_summary};

/// The longest record a replay takes: a month, well past any burn-in.
pub const MAX_SPAN_S: u64 = 31 * 86_400;

/// A run record laid out in time. The record's events (sparse: phases, node states, AIStor
/// windows) are held; its telemetry (a line per node per second, gigabytes over a long
/// burn-in) is streamed from the segments while playing, and the clock ticks are made on the
/// way (see [`Timeline::play`]).
#[derive(Debug, Clone)]
pub struct Timeline {
    /// What each node said of itself, from the summary: played first.
    hellos: Vec<SourceEvent>,
    /// When the run started.
    pub start_ms: UnixMillis,
    /// The last instant the record knows.
    pub end_ms: UnixMillis,
    /// Lines of events.jsonl that did not decode, in words (a torn telemetry segment is said
    /// when the playing reaches it).
    pub damage: Vec<String>,
    run_dir: std::path::PathBuf,
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

/// A recorded event as the console takes it, with the instant it belongs to (`None`: the
/// console was not told it live).
fn timed(r: Recorded) -> Option<(UnixMillis, SourceEvent)> {
    Some(match r {
        Recorded::Phase(ev) => (ev.at_ms(), SourceEvent::Phase(ev)),
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
            (at_ms, SourceEvent::Link { node, at_ms, link })
        }
        Recorded::Run(RecordEvent::Probe { window }) => (window.at_ms, SourceEvent::Probe(window)),
        Recorded::Run(RecordEvent::Search { at_ms, search }) => {
            (at_ms, SourceEvent::Search(search))
        }
        // Replayed only where the live console was told: a simulated cluster tells nothing
        // of the kind, a fleet of real (or `sim`-mode) nodes does.
        Recorded::Run(RecordEvent::Expect {
            at_ms,
            node,
            gpus,
            nic_rate_gbps,
        }) => (
            at_ms,
            SourceEvent::Expect {
                node,
                gpus,
                nic_rate_gbps,
            },
        ),
        // Lines the record left to the node's log: said once per phase by the playing
        // (`Playthrough::fill_events`), not here: 96 nodes would say it every few seconds.
        Recorded::Run(RecordEvent::Held { .. }) => return None,
        Recorded::Run(RecordEvent::Finding { .. } | RecordEvent::Operator { .. }) => return None,
    })
}

impl Timeline {
    /// Walk `run_dir`'s events once for the record's end and damage (nothing is held: the
    /// events and the telemetry are streamed again each time the record plays).
    pub fn load(run_dir: &Path) -> Result<Self, crate::record::RecordError> {
        let summary = read_summary(run_dir)?;
        let mut reader = EventReader::open(run_dir)?;
        let mut last = None::<UnixMillis>;
        for r in reader.by_ref() {
            if let Some((t, _)) = timed(r) {
                last = Some(last.map_or(t, |l| l.max(t)));
            }
        }
        let bad = reader.finish()?;
        let mut damage = Vec::new();
        if bad > 0 {
            damage.push(format!("{bad} line(s) of events.jsonl did not decode"));
        }
        let start = summary.started_ms;
        let hellos = summary
            .nodes
            .iter()
            .filter_map(|n| n.hello.clone().map(SourceEvent::Hello))
            .collect();
        // The end as the summary and the events know it; telemetry written after the last
        // event of a crashed run still plays, the cursor just stops at this end.
        let end = last
            .unwrap_or(start)
            .max(summary.ended_ms.unwrap_or(start))
            .max(start);
        // A record whose times stray past any burn-in (a hand-edited file, a clock far off)
        // would have the replay tick through years: say so instead.
        let span_s = end.saturating_sub(start) / 1000;
        if span_s > MAX_SPAN_S {
            return Err(crate::record::RecordError::refused(
                run_dir,
                format!(
                    "the record spans {} days from its start ({}); no run is that long, so its times are not believable",
                    span_s / 86_400,
                    crate::record::utc_stamp(start / 1000)
                ),
            ));
        }
        Ok(Self {
            hellos,
            start_ms: start,
            end_ms: end,
            damage,
            run_dir: run_dir.to_path_buf(),
        })
    }

    /// The whole record from its start, in the order the console takes it: the events, a clock
    /// tick ahead of each second, and the telemetry streamed from disk.
    pub fn play(&self) -> Playthrough<'_> {
        let mut p = Playthrough {
            timeline: self,
            next_clock: self.start_ms / 1000,
            stream: TelemetryStream::open(&self.run_dir),
            stream_done: false,
            events: None,
            ahead: std::collections::BTreeMap::new(),
            newest_read: 0,
            newest_event: 0,
            thinned: std::collections::BTreeSet::new(),
            seq: 0,
        };
        let first = self.start_ms / 1000;
        for h in &self.hellos {
            p.queue(first, self.start_ms, h.clone());
        }
        match EventReader::open(&self.run_dir) {
            Ok(reader) => p.events = Some(reader),
            // Gone since the timeline was loaded: a record with telemetry only plays that.
            Err(crate::record::RecordError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => p.say(format!("replay: {e}")),
        }
        p
    }

    /// Everything up to and including the second `start + at_s`.
    pub fn until(&self, at_s: u64) -> impl Iterator<Item = SourceEvent> + '_ {
        let until = self.start_ms / 1000 + at_s;
        self.play()
            .take_while(move |(t, _)| t / 1000 <= until)
            .map(|(_, e)| e)
    }
}

/// How many seconds of telemetry the replay reads ahead to put lines in time order: a node's
/// second is written when its next frame comes, so lines of a segment can lag others by a
/// second or two.
const REORDER_S: u64 = 5;

/// Frames a replay never plays: dated outside the record's believable span.
fn out_of_span(timeline: &Timeline, t: UnixMillis) -> bool {
    t < timeline.start_ms - timeline.start_ms % 1000
        || t / 1000 > timeline.start_ms / 1000 + MAX_SPAN_S
}

/// One pass over a [`Timeline`] (see [`Timeline::play`]): the record's events and its
/// telemetry, both streamed from disk and put in time order within [`REORDER_S`].
pub struct Playthrough<'a> {
    timeline: &'a Timeline,
    /// The next second to tick, in Unix seconds.
    next_clock: u64,
    stream: TelemetryStream,
    stream_done: bool,
    /// The record's events, read as the playing needs them (`None`: read to the end).
    events: Option<EventReader>,
    /// Events and frames read ahead (and notices about the streams), by (second, where in
    /// its second, read order).
    ahead: std::collections::BTreeMap<(u64, u8, u64), (UnixMillis, SourceEvent)>,
    /// The newest second read from the telemetry so far.
    newest_read: u64,
    /// The newest second read from the events so far.
    newest_event: u64,
    /// Phases whose thinned output the playing has said.
    thinned: std::collections::BTreeSet<String>,
    seq: u64,
}

impl Playthrough<'_> {
    /// Queue `ev` to play in `second`, after whatever was read before it for that second
    /// and rank.
    fn queue(&mut self, second: u64, t: UnixMillis, ev: SourceEvent) {
        self.seq += 1;
        self.ahead.insert((second, rank(&ev), self.seq), (t, ev));
    }

    /// Say something about the stream where the playing has reached: after the newest line
    /// read.
    fn say(&mut self, text: String) {
        let second = self.newest_read.max(self.next_clock.saturating_sub(1));
        self.queue(second, second * 1000, SourceEvent::Notice { text });
    }

    /// Whether what is read ahead may play: nothing earlier can still come from `newest`.
    fn settled(&self, newest: u64) -> bool {
        self.ahead
            .first_key_value()
            .is_some_and(|((second, _, _), _)| newest > second + REORDER_S)
    }

    /// Read both streams until the earliest thing read ahead is safe to play (nothing
    /// earlier can still come from either) or they end.
    fn fill(&mut self) {
        self.fill_events();
        self.fill_telemetry();
    }

    fn fill_events(&mut self) {
        while self.events.is_some() && !self.settled(self.newest_event) {
            let next = self.events.as_mut().and_then(Iterator::next);
            match next {
                Some(Recorded::Run(RecordEvent::Held { at_ms, phase, .. })) => {
                    // The first time a phase's output was thinned: where the whole of it is.
                    if self.thinned.insert(phase.clone()) {
                        self.newest_event = self.newest_event.max(at_ms / 1000);
                        self.queue(
                            at_ms / 1000,
                            at_ms,
                            SourceEvent::Notice {
                                text: format!(
                                    "replay: the record keeps a sample of {phase}'s output past each node's first lines; all of it is in logs/{phase}/"
                                ),
                            },
                        );
                    }
                }
                Some(r) => {
                    let Some((t, ev)) = timed(r) else { continue };
                    self.newest_event = self.newest_event.max(t / 1000);
                    self.queue(t / 1000, t, ev);
                }
                None => {
                    // Counted when the timeline was loaded; only a read that failed is new.
                    if let Some(reader) = self.events.take()
                        && let Err(e) = reader.finish()
                    {
                        self.say(format!("replay: {e}"));
                    }
                }
            }
        }
    }

    fn fill_telemetry(&mut self) {
        while !self.stream_done && !self.settled(self.newest_read) {
            match self.stream.next() {
                Some(Ok(s)) => {
                    let t = s.last.at_ms;
                    if out_of_span(self.timeline, t) {
                        continue;
                    }
                    self.newest_read = self.newest_read.max(t / 1000);
                    self.queue(t / 1000, t, SourceEvent::Frame(s.replay_frame()));
                }
                // Said where the playing reaches the tear, after the segment's last whole line.
                Some(Err(why)) => self.say(format!("replay: {why}")),
                None => {
                    self.stream_done = true;
                    if let Some(e) = self.stream.failed.take() {
                        self.say(format!("replay: {e}"));
                    }
                    if self.stream.bad_lines > 0 {
                        self.say(format!(
                            "replay: {} telemetry line(s) did not decode and were skipped",
                            self.stream.bad_lines
                        ));
                    }
                }
            }
        }
    }
}

impl Iterator for Playthrough<'_> {
    type Item = (UnixMillis, SourceEvent);

    fn next(&mut self) -> Option<Self::Item> {
        self.fill();
        let first = self.ahead.first_key_value().map(|(k, _)| *k);
        // Tick while anything is left at or after this second, or the record's end is ahead.
        let last = first
            .map(|(s, _, _)| s)
            .into_iter()
            .chain(Some(self.timeline.end_ms / 1000))
            .max()?;
        let clock = (self.next_clock <= last).then_some(self.next_clock);
        // The smallest (second, rank) goes first; the clock before all but who the nodes
        // are (rank 0), as a live source ticks.
        let key_ahead = first.map(|(s, r, _)| (s, r));
        let key_clock = clock.map(|s| (s, 1u8));
        let best = [key_ahead, key_clock].into_iter().flatten().min()?;
        if key_ahead == Some(best) {
            return self.ahead.pop_first().map(|(_, ev)| ev);
        }
        self.next_clock += 1;
        let at_ms = best.0 * 1000;
        Some((at_ms, SourceEvent::Clock { at_ms }))
    }
}

/// What the console's replay keys ask of a playing replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlaybackCommand {
    /// Stop the record's clock where it is.
    Pause,
    /// Go on from where it stopped.
    Resume,
    /// Play this many record seconds a second.
    Speed(f64),
    /// Jump to this many seconds after the record's start (backwards replays from the start).
    Seek(u64),
}

/// The fastest a replay plays: a 72-hour record in about 4 minutes.
pub const MAX_SPEED: f64 = 1024.0;

fn sane_speed(speed: f64) -> f64 {
    if speed.is_finite() && speed > 0.0 {
        speed.clamp(1.0 / 16.0, MAX_SPEED)
    } else {
        1.0
    }
}

/// Plays a timeline into the console, obeying [`PlaybackCommand`]s.
pub struct ReplaySource {
    timeline: Timeline,
    speed: f64,
    at_s: u64,
    control: Option<mpsc::UnboundedReceiver<PlaybackCommand>>,
}

impl ReplaySource {
    /// Play `timeline` from `at_s` seconds after its start, `speed` record seconds a second.
    pub fn new(timeline: Timeline, speed: f64, at_s: u64) -> Self {
        Self {
            timeline,
            speed: sane_speed(speed),
            at_s,
            control: None,
        }
    }

    /// The same replay, steered through the returned sender (the console's replay keys).
    pub fn controlled(mut self) -> (Self, mpsc::UnboundedSender<PlaybackCommand>) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.control = Some(rx);
        (self, tx)
    }
}

/// Where a playing replay is: the record instant `pos_ms` was reached at wall time `wall`.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    pos_ms: UnixMillis,
    wall: tokio::time::Instant,
}

impl Anchor {
    /// When the record's clock reaches `t_ms` at `speed` (now, if it already has).
    fn due(&self, t_ms: UnixMillis, speed: f64) -> tokio::time::Instant {
        let ahead = t_ms.saturating_sub(self.pos_ms) as f64 / 1000.0 / speed;
        self.wall + Duration::from_secs_f64(ahead)
    }

    /// The record instant now.
    fn now(&self, speed: f64, paused: bool) -> UnixMillis {
        if paused {
            return self.pos_ms;
        }
        let wall = tokio::time::Instant::now().saturating_duration_since(self.wall);
        self.pos_ms + (wall.as_secs_f64() * speed * 1000.0) as u64
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
                mut speed,
                at_s,
                mut control,
            } = *self;
            for d in &timeline.damage {
                let _ = events
                    .send(SourceEvent::Notice {
                        text: format!("replay: {d}"),
                    })
                    .await;
            }
            let first_second = timeline.start_ms - timeline.start_ms % 1000;
            let last_second = timeline.end_ms - timeline.end_ms % 1000;
            // Events play by the second they belong to: a second's clock tick, frames and
            // phase lines go out together, as the live sources send them.
            let second_of = |t: UnixMillis| t - t % 1000;
            let mut anchor = Anchor {
                pos_ms: first_second
                    .saturating_add(at_s.saturating_mul(1000))
                    .min(last_second),
                wall: tokio::time::Instant::now(),
            };
            let mut paused = false;
            let mut feed = timeline.play().peekable();
            let mut said_end = false;
            loop {
                // Everything due by the record's clock now goes out at once.
                let now_pos = anchor.now(speed, paused);
                while let Some((t, _)) = feed.peek() {
                    if second_of(*t) > now_pos {
                        break;
                    }
                    let Some((_, ev)) = feed.next() else { break };
                    if events.send(ev).await.is_err() {
                        return;
                    }
                }
                let upcoming = feed.peek().map(|(t, _)| second_of(*t));
                if upcoming.is_none() && !said_end {
                    said_end = true;
                    let _ = events
                        .send(SourceEvent::Notice {
                            text: "replay: end of the record ([ or { goes back)".into(),
                        })
                        .await;
                }
                let wake = match upcoming {
                    Some(t) if !paused => Some(anchor.due(t, speed)),
                    _ => None,
                };
                let command = tokio::select! {
                    _ = async {
                        match wake {
                            Some(w) => tokio::time::sleep_until(w).await,
                            None => std::future::pending().await,
                        }
                    } => None,
                    c = async {
                        match control.as_mut() {
                            Some(c) => c.recv().await,
                            None => std::future::pending().await,
                        }
                    } => match c {
                        Some(c) => Some(c),
                        // The console dropped its sender: play on without keys.
                        None => {
                            control = None;
                            None
                        }
                    },
                    _ = events.closed() => return,
                };
                let Some(command) = command else { continue };
                let pos = anchor.now(speed, paused);
                match command {
                    PlaybackCommand::Pause => paused = true,
                    PlaybackCommand::Resume => paused = false,
                    PlaybackCommand::Speed(s) => speed = sane_speed(s),
                    PlaybackCommand::Seek(to_s) => {
                        let to = (first_second + to_s * 1000).min(last_second);
                        if to < pos {
                            if events.send(SourceEvent::Rewind).await.is_err() {
                                return;
                            }
                            feed = timeline.play().peekable();
                        }
                        said_end = false;
                        anchor = Anchor {
                            pos_ms: to,
                            wall: tokio::time::Instant::now(),
                        };
                        continue;
                    }
                }
                anchor = Anchor {
                    pos_ms: pos,
                    wall: tokio::time::Instant::now(),
                };
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: UnixMillis = 1_800_000_000_000;

    /// A record of `len_s` seconds with nothing in it: the replay's clock ticks are all it
    /// plays, which is all playback looks at.
    fn clocks(len_s: u64) -> Timeline {
        Timeline {
            hellos: Vec::new(),
            start_ms: START,
            end_ms: START + len_s * 1000,
            damage: Vec::new(),
            run_dir: std::env::temp_dir().join("burnin-replay-no-such-record"),
        }
    }

    /// Seconds into the record of the clock ticks received so far ("R" for a rewind, "end" for
    /// the end notice).
    fn drain(rx: &mut mpsc::Receiver<SourceEvent>) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            seen.push(match ev {
                SourceEvent::Clock { at_ms } => ((at_ms - START) / 1000).to_string(),
                SourceEvent::Rewind => "R".into(),
                SourceEvent::Notice { text } if text.contains("end of the record") => "end".into(),
                other => format!("{other:?}"),
            });
        }
        seen
    }

    fn seconds(range: std::ops::RangeInclusive<u64>) -> Vec<String> {
        range.map(|s| s.to_string()).collect()
    }

    async fn settle(secs: f64) {
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn keys_pause_speed_up_and_seek_both_ways() {
        let (source, keys) = ReplaySource::new(clocks(100), 1.0, 0).controlled();
        let (tx, mut rx) = mpsc::channel(4096);
        let (_cmd, cmd_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(Box::new(source).run(tx, cmd_rx));

        settle(10.5).await;
        assert_eq!(
            drain(&mut rx),
            seconds(0..=10),
            "one record second a second"
        );

        keys.send(PlaybackCommand::Pause).expect("send");
        settle(30.0).await;
        assert_eq!(
            drain(&mut rx),
            Vec::<String>::new(),
            "paused: the clock stands"
        );

        keys.send(PlaybackCommand::Speed(4.0)).expect("send");
        keys.send(PlaybackCommand::Resume).expect("send");
        settle(2.6).await;
        assert_eq!(drain(&mut rx), seconds(11..=20), "4x: ten seconds in 2.5 s");

        // Back: the console forgets and the record plays again up to the new instant at once.
        keys.send(PlaybackCommand::Seek(5)).expect("send");
        settle(0.01).await;
        let mut want = vec!["R".to_string()];
        want.extend(seconds(0..=5));
        assert_eq!(drain(&mut rx), want);

        // Forward: what lies between goes out at once, nothing is forgotten.
        keys.send(PlaybackCommand::Pause).expect("send");
        keys.send(PlaybackCommand::Seek(90)).expect("send");
        settle(5.0).await;
        assert_eq!(
            drain(&mut rx),
            seconds(6..=90),
            "seek while paused, then stand"
        );

        keys.send(PlaybackCommand::Resume).expect("send");
        settle(10.0).await;
        let mut want = seconds(91..=100);
        want.push("end".into());
        assert_eq!(drain(&mut rx), want);

        // Past the end the keys still work: back ten minutes is back to the start.
        keys.send(PlaybackCommand::Seek(0)).expect("send");
        settle(0.01).await;
        assert_eq!(drain(&mut rx), vec!["R".to_string(), "0".to_string()]);
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn without_keys_it_plays_from_at_to_the_end() {
        let source = ReplaySource::new(clocks(20), 2.0, 10);
        let (tx, mut rx) = mpsc::channel(4096);
        let (_cmd, cmd_rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(Box::new(source).run(tx, cmd_rx));
        settle(0.01).await;
        assert_eq!(drain(&mut rx), seconds(0..=10), "up to --at at once");
        settle(5.0).await;
        let mut want = seconds(11..=20);
        want.push("end".into());
        assert_eq!(drain(&mut rx), want);
        task.abort();
    }

    #[test]
    fn telemetry_streams_in_time_order_behind_each_clock_tick_and_damage_is_said() {
        use crate::record::telemetry::NodeSecond;
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("burnin-replay-stream-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("telemetry")).expect("dir");
        let line = |s: u64, node: &str| {
            let at = START + s * 1000 + 400;
            let last = crate::model::NodeFrame {
                node: node.into(),
                at_ms: at,
                gpus: Vec::new(),
                nics: Vec::new(),
                netdevs: Vec::new(),
            };
            let sec = NodeSecond {
                t: at - at % 1000,
                node: node.into(),
                n: 1,
                last,
                gpus: Vec::new(),
            };
            serde_json::to_string(&sec).expect("json") + "\n"
        };
        // Written as a recorder does: a node's second when its next frame came, so b's second 1
        // lands after a's second 2. The second segment (a restarted console) ends torn.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for l in [
            line(0, "a"),
            line(0, "b"),
            line(1, "a"),
            "{\"t\": not json\n".to_string(),
            line(2, "a"),
            line(1, "b"),
        ] {
            gz.write_all(l.as_bytes()).expect("gz");
        }
        std::fs::write(dir.join("telemetry/000.jsonl.gz"), gz.finish().expect("gz")).expect("w");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(line(3, "a").as_bytes()).expect("gz");
        let whole = gz.finish().expect("gz");
        std::fs::write(
            dir.join("telemetry/001.jsonl.gz"),
            &whole[..whole.len() - 6],
        )
        .expect("w");
        let timeline = Timeline {
            hellos: Vec::new(),
            start_ms: START,
            end_ms: START + 2000,
            damage: Vec::new(),
            run_dir: dir.clone(),
        };
        let played: Vec<String> = timeline
            .play()
            .map(|(_, ev)| match ev {
                SourceEvent::Clock { at_ms } => format!("tick {}", (at_ms - START) / 1000),
                SourceEvent::Frame(f) => format!("{} {}", f.node, (f.at_ms - START) / 1000),
                SourceEvent::Notice { text } => text,
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            played,
            [
                "tick 0",
                "a 0",
                "b 0",
                "tick 1",
                "a 1",
                "b 1",
                "tick 2",
                "a 2",
                "tick 3",
                "a 3",
                "replay: telemetry segment 001.jsonl.gz ends torn",
                "replay: 1 telemetry line(s) did not decode and were skipped",
            ],
            "a torn segment's lines before the tear still play; the tear and the bad line are said"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn speeds_stay_sane() {
        assert_eq!(sane_speed(f64::NAN), 1.0);
        assert_eq!(sane_speed(-3.0), 1.0);
        assert_eq!(sane_speed(1e9), MAX_SPEED);
        assert_eq!(sane_speed(1e-9), 1.0 / 16.0);
    }
}
