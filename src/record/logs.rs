//! Each node's raw output in a run record, and how much of it `events.jsonl` keeps.
//!
//! A verbose job (`NCCL_DEBUG=INFO` on many ranks) prints millions of lines: all of them go to
//! `logs/<phase>/<node>.log`, plain while the phase runs (flushed per line: a crash loses
//! nothing, and a resumed run counts what it already has), gzip-compressed into
//! `<node>.log.gz` when the phase ends (by a thread of its own, so the run does not wait). The
//! events file keeps what judging, replay and the report need: each node's first
//! [`KEEP_FIRST`] lines of a phase, then [`KEEP_PER_S`] a second (a phase's nodes together
//! at most [`PHASE_KEEP_PER_S`] a second past its first [`PHASE_KEEP_FIRST`]), and says how
//! many it left to the log (`RecordEvent::Held`), so a 96-node, 72-hour record stays
//! reportable.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::model::UnixMillis;
use crate::record::{RecordError, RecordEvent};

/// Lines of one node's output in one phase that `events.jsonl` keeps before it thins them.
pub const KEEP_FIRST: f64 = 1000.0;
/// Lines a second of one node's output that `events.jsonl` keeps past its first
/// [`KEEP_FIRST`].
pub const KEEP_PER_S: f64 = 2.0;
/// Lines of one phase's output (all its nodes) that `events.jsonl` keeps before it thins
/// them.
pub const PHASE_KEEP_FIRST: f64 = 20_000.0;
/// Lines a second of one phase's output (all its nodes) that `events.jsonl` keeps past its
/// first [`PHASE_KEEP_FIRST`]: 72 hours of it are about 5 million lines.
pub const PHASE_KEEP_PER_S: f64 = 20.0;

/// How often a node's lines left to its log are said in `events.jsonl` while they flood
/// (and at the phase's end): 96 nodes flooding for 72 hours add about 2.5 million short
/// events. A resumed run counts a running phase's lines from its plain log, not from these.
pub const HELD_SAID_MS: u64 = 10_000;

/// A token bucket in the run's own time: `first` to start with, `per_s` more each second.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at_ms: UnixMillis,
    first: f64,
    per_s: f64,
}

impl Bucket {
    fn new(first: f64, per_s: f64, at_ms: UnixMillis) -> Self {
        Self {
            tokens: first,
            at_ms,
            first,
            per_s,
        }
    }

    fn refill(&mut self, at_ms: UnixMillis) {
        // A clock going back refills nothing; one going forward refills at most the start.
        let dt = at_ms.saturating_sub(self.at_ms) as f64 / 1000.0;
        self.tokens = (self.tokens + dt * self.per_s).min(self.first);
        self.at_ms = self.at_ms.max(at_ms);
    }
}

/// What a log's writing came to, for the summary and the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogCount {
    /// Lines written to the log.
    pub lines: u64,
    /// Their bytes, newlines included (uncompressed).
    pub bytes: u64,
    /// How many of them `events.jsonl` keeps too.
    pub in_events: u64,
}

/// One (phase, node) log being written.
struct OpenLog {
    writer: BufWriter<File>,
    bucket: Bucket,
    /// Lines left to the log since the last `Held` event said so.
    held: u64,
    held_said_ms: UnixMillis,
}

/// The logs of a record being written, and what `events.jsonl` keeps of them.
pub struct NodeLogs {
    dir: PathBuf,
    open: BTreeMap<(String, String), OpenLog>,
    phases: BTreeMap<String, Bucket>,
    counts: BTreeMap<(String, String), LogCount>,
    compress: Option<Compressor>,
}

/// Whether `events.jsonl` keeps a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Keep {
    /// Write it there too.
    Line,
    /// Leave it to the log; `Some`: say, with this event, how many were left since last said.
    Held(Option<RecordEvent>),
}

impl NodeLogs {
    /// The logs of the record in `dir` (nothing is opened until a line comes).
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            open: BTreeMap::new(),
            phases: BTreeMap::new(),
            counts: BTreeMap::new(),
            compress: None,
        }
    }

    /// The plain log of (phase, node) while its phase runs.
    pub fn plain_path(dir: &Path, phase: &str, node: &str) -> PathBuf {
        dir.join("logs").join(phase).join(format!("{node}.log"))
    }

    /// Where (phase, node)'s output ends up once its phase has ended.
    pub fn compressed_path(dir: &Path, phase: &str, node: &str) -> PathBuf {
        dir.join("logs").join(phase).join(format!("{node}.log.gz"))
    }

    /// Write one output line to its log, and say whether `events.jsonl` keeps it too.
    pub fn line(
        &mut self,
        phase: &str,
        node: &str,
        at_ms: UnixMillis,
        text: &str,
    ) -> Result<Keep, RecordError> {
        let key = (phase.to_string(), node.to_string());
        if !self.open.contains_key(&key) {
            let dir = self.dir.join("logs").join(phase);
            make_log_dir(&self.dir, &dir)?;
            let p = Self::plain_path(&self.dir, phase, node);
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| RecordError::io(&p, e))?;
            if !f.metadata().is_ok_and(|m| m.is_file()) {
                return Err(RecordError::refused(&p, "not a plain file; refused"));
            }
            self.open.insert(
                key.clone(),
                OpenLog {
                    writer: BufWriter::new(f),
                    bucket: Bucket::new(KEEP_FIRST, KEEP_PER_S, at_ms),
                    held: 0,
                    held_said_ms: at_ms,
                },
            );
        }
        let phase_bucket = self
            .phases
            .entry(phase.to_string())
            .or_insert_with(|| Bucket::new(PHASE_KEEP_FIRST, PHASE_KEEP_PER_S, at_ms));
        let Some(log) = self.open.get_mut(&key) else {
            return Ok(Keep::Line);
        };
        writeln!(log.writer, "{text}")
            .map_err(|e| RecordError::io(&Self::plain_path(&self.dir, phase, node), e))?;
        let count = self.counts.entry(key).or_default();
        count.lines += 1;
        count.bytes += text.len() as u64 + 1;
        log.bucket.refill(at_ms);
        phase_bucket.refill(at_ms);
        if log.bucket.tokens >= 1.0 && phase_bucket.tokens >= 1.0 {
            log.bucket.tokens -= 1.0;
            phase_bucket.tokens -= 1.0;
            count.in_events += 1;
            return Ok(Keep::Line);
        }
        log.held += 1;
        // Said every HELD_SAID_MS at most, so the events file grows by that, not the line.
        if at_ms.saturating_sub(log.held_said_ms) >= HELD_SAID_MS {
            return Ok(Keep::Held(Some(take_held(log, phase, node, at_ms))));
        }
        Ok(Keep::Held(None))
    }

    /// Push every open log to disk.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        for ((phase, node), log) in self.open.iter_mut() {
            log.writer
                .flush()
                .map_err(|e| RecordError::io(&Self::plain_path(&self.dir, phase, node), e))?;
        }
        Ok(())
    }

    /// `phase` ended: the `Held` events still owed (to write before its end), and its logs
    /// closed and handed to the compressing thread.
    pub fn phase_ended(
        &mut self,
        phase: &str,
        at_ms: UnixMillis,
    ) -> Result<Vec<RecordEvent>, RecordError> {
        let keys: Vec<(String, String)> = self
            .open
            .keys()
            .filter(|(p, _)| p == phase)
            .cloned()
            .collect();
        let mut owed = Vec::new();
        for key in keys {
            let Some(mut log) = self.open.remove(&key) else {
                continue;
            };
            let plain = Self::plain_path(&self.dir, &key.0, &key.1);
            log.writer.flush().map_err(|e| RecordError::io(&plain, e))?;
            if log.held > 0 {
                owed.push(take_held(&mut log, &key.0, &key.1, at_ms));
            }
            drop(log);
            self.close(&plain)?;
        }
        self.phases.remove(phase);
        Ok(owed)
    }

    /// What each (phase, node)'s log holds so far (this writer's share: a resumed run counts
    /// from where it took over).
    pub fn counts(&self) -> &BTreeMap<(String, String), LogCount> {
        &self.counts
    }

    /// Rename a finished plain log aside (a phase run again writes a new one at once) and
    /// have it compressed.
    fn close(&mut self, plain: &Path) -> Result<(), RecordError> {
        // Named to sort in the order the logs were set aside (the order to append them in),
        // and never the same twice: two runs of a phase can end in one millisecond.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000_000;
        let mut aside = plain.as_os_str().to_owned();
        aside.push(format!(".closing.{:016}{seq:08}", crate::model::now_ms()));
        let aside = PathBuf::from(aside);
        std::fs::rename(plain, &aside).map_err(|e| RecordError::io(plain, e))?;
        self.compress
            .get_or_insert_with(Compressor::start)
            .send(aside);
        Ok(())
    }

    /// Have logs left aside by a writer that stopped before compressing them compressed now
    /// (a resumed run).
    pub fn finish_left_aside(&mut self) {
        let mut aside = Vec::new();
        if let Ok(phases) = std::fs::read_dir(self.dir.join("logs")) {
            for phase in phases.flatten() {
                if let Ok(files) = std::fs::read_dir(phase.path()) {
                    aside.extend(
                        files
                            .flatten()
                            .map(|f| f.path())
                            .filter(|p| closing_target(p).is_some()),
                    );
                }
            }
        }
        aside.sort();
        for p in aside {
            self.compress.get_or_insert_with(Compressor::start).send(p);
        }
    }

    /// Wait until every log handed over is compressed; the first failure, if any, in words.
    pub fn wait(&mut self) -> Option<String> {
        self.compress.take().and_then(Compressor::finish)
    }
}

impl Drop for NodeLogs {
    fn drop(&mut self) {
        // A run's end waits for its logs: the record is whole when burnin exits.
        if let Some(why) = self.wait() {
            tracing::warn!("run record: {why}");
        }
    }
}

fn take_held(log: &mut OpenLog, phase: &str, node: &str, at_ms: UnixMillis) -> RecordEvent {
    let lines = std::mem::take(&mut log.held);
    log.held_said_ms = at_ms;
    RecordEvent::Held {
        at_ms,
        phase: phase.to_string(),
        node: node.to_string(),
        lines,
    }
}

/// Make `logs/<phase>` under the record `root`, refusing a link on the way (a `logs` or
/// `logs/<phase>` that points out of the record would have node output written there).
fn make_log_dir(root: &Path, dir: &Path) -> Result<(), RecordError> {
    let logs = root.join("logs");
    for d in [&logs, &dir.to_path_buf()] {
        match std::fs::symlink_metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(RecordError::refused(
                    d,
                    "is not a directory (a link?); a record burnin writes into holds none (refused)",
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(d).map_err(|e| RecordError::io(d, e))?;
            }
            Err(e) => return Err(RecordError::io(d, e)),
        }
    }
    Ok(())
}

/// The compressed log a left-aside plain log goes into (`None`: not one).
fn closing_target(p: &Path) -> Option<PathBuf> {
    let name = p.file_name()?.to_str()?;
    let (base, stamp) = name.rsplit_once(".closing.")?;
    if !base.ends_with(".log") || stamp.is_empty() || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(p.with_file_name(format!("{base}.gz")))
}

/// A thread that compresses finished logs in the order they were handed over.
struct Compressor {
    tx: std::sync::mpsc::Sender<PathBuf>,
    thread: std::thread::JoinHandle<Option<String>>,
}

impl Compressor {
    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<PathBuf>();
        let thread = std::thread::spawn(move || {
            let mut first_failure = None;
            for aside in rx {
                if let Err(e) = compress_aside(&aside) {
                    first_failure.get_or_insert(e.to_string());
                }
            }
            first_failure
        });
        Self { tx, thread }
    }

    fn send(&self, aside: PathBuf) {
        let _ = self.tx.send(aside);
    }

    fn finish(self) -> Option<String> {
        drop(self.tx);
        self.thread
            .join()
            .unwrap_or_else(|_| Some("the thread compressing logs panicked".into()))
    }
}

/// Append `aside` (a plain log) to its `.log.gz` as one more gzip member, then remove it.
/// The new `.log.gz` is written beside and renamed over the old: a crash leaves either the
/// old one and `aside` (compressed again on resume) or the new one.
fn compress_aside(aside: &Path) -> Result<(), RecordError> {
    let Some(target) = closing_target(aside) else {
        return Ok(());
    };
    let mut input = crate::record::files::open_regular(aside, u64::MAX)?;
    let mut part = target.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&part)
        .map_err(|e| RecordError::io(&part, e))?;
    match crate::record::files::open_regular(&target, u64::MAX) {
        Ok(mut earlier) => {
            std::io::copy(&mut earlier, &mut out).map_err(|e| RecordError::io(&target, e))?;
        }
        Err(RecordError::Io { ref source, .. })
            if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    std::io::copy(&mut input, &mut gz).map_err(|e| RecordError::io(aside, e))?;
    let out = gz.finish().map_err(|e| RecordError::io(&part, e))?;
    out.sync_all().map_err(|e| RecordError::io(&part, e))?;
    std::fs::rename(&part, &target).map_err(|e| RecordError::io(&target, e))?;
    std::fs::remove_file(aside).map_err(|e| RecordError::io(aside, e))
}

/// Lines in the plain log of (phase, node), counted on disk (`None`: no plain log): what a
/// crashed writer wrote, exactly, even where its last `Held` event was lost.
pub fn plain_lines(dir: &Path, phase: &str, node: &str) -> Option<u64> {
    use std::io::Read;
    let p = NodeLogs::plain_path(dir, phase, node);
    let mut f = crate::record::files::open_regular(&p, u64::MAX).ok()?;
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(n),
            Ok(k) => n += buf[..k].iter().filter(|b| **b == b'\n').count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Some(n),
        }
    }
}

/// The whole text of a compressed log (every member), for tests.
#[cfg(test)]
pub fn read_gz(path: &Path) -> String {
    use std::io::Read;
    let mut out = String::new();
    flate2::read::MultiGzDecoder::new(File::open(path).expect("log"))
        .read_to_string(&mut out)
        .expect("gzip");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::phase::{PhaseEvent, Verdict};
    use crate::record::{RunRecord, read_state};

    fn line(phase: &str, node: &str, at_ms: u64, text: String) -> PhaseEvent {
        PhaseEvent::Line {
            phase: phase.into(),
            at_ms,
            node: Some(node.into()),
            text,
        }
    }

    fn finished(phase: &str, at_ms: u64) -> PhaseEvent {
        PhaseEvent::Finished {
            phase: phase.into(),
            at_ms,
            verdict: Verdict::Pass,
            reason: "ok".into(),
        }
    }

    fn root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("burnin-logs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    /// Issue 41, case 4: a phase printing far more than a record can replay keeps every line
    /// in its node's log and a bounded sample in `events.jsonl`, with how many it left out.
    #[test]
    fn a_flood_goes_whole_to_the_log_and_thinned_to_the_events() {
        let root = root("flood");
        let mut r = RunRecord::create(&root, "r").expect("record");
        // 50 000 lines in 10 s from one node, 3 lines a second from another.
        for i in 0..50_000u64 {
            r.event(&line("T3", "n1", 1_000 + i / 5, format!("flood {i}")))
                .expect("line");
        }
        for s in 0..10u64 {
            for k in 0..3 {
                r.event(&line("T3", "n2", 1_000 + s * 1000, format!("step {s}.{k}")))
                    .expect("line");
            }
        }
        let counts = r.log_counts().clone();
        r.event(&finished("T3", 12_000)).expect("end");
        assert_eq!(r.wait_for_logs(), None);
        let dir = root.join("r");
        let n1 = counts[&("T3".to_string(), "n1".to_string())];
        assert_eq!(n1.lines, 50_000);
        // Its first 1000 and then 2 a second over the 9.999 s it printed.
        assert_eq!(n1.in_events, 1000 + 19, "{n1:?}");
        // The quiet node is kept whole.
        assert_eq!(counts[&("T3".to_string(), "n2".to_string())].in_events, 30);
        let (events, bad) = crate::record::read_events(&dir).expect("events");
        assert_eq!(bad, 0);
        let mut kept = 0u64;
        let mut held = 0u64;
        for e in &events {
            match e {
                crate::record::Recorded::Phase(PhaseEvent::Line { node: Some(n), .. })
                    if n == "n1" =>
                {
                    kept += 1
                }
                crate::record::Recorded::Run(RecordEvent::Held { node, lines, .. })
                    if node == "n1" =>
                {
                    held += lines
                }
                _ => {}
            }
        }
        assert_eq!((kept, held), (1019, 50_000 - 1019));
        // Held is said every 10 s and at the end, not once a line.
        assert!(events.len() <= 1019 + 30 + 3, "{} events", events.len());
        // The log has every line, in order.
        let log = read_gz(&NodeLogs::compressed_path(&dir, "T3", "n1"));
        assert_eq!(log.lines().count(), 50_000);
        assert_eq!(log.lines().last(), Some("flood 49999"));
        // What a console taking the run over counts: every line, held ones too.
        let st = read_state(&dir).expect("state");
        assert_eq!(st.lines[&("T3".to_string(), "n1".to_string())], 50_000);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A phase run again appends its output to the same compressed log, as one more member;
    /// a crash mid-phase leaves the plain log, whose lines a resumed run counts exactly.
    #[test]
    fn a_phase_run_again_appends_and_a_crash_leaves_the_plain_log_counted() {
        let root = root("again");
        let dir = root.join("r");
        {
            let mut r = RunRecord::create(&root, "r").expect("record");
            r.event(&line("T1", "n1", 1, "first run".into()))
                .expect("line");
            r.event(&finished("T1", 2)).expect("end");
            r.event(&line("T1", "n1", 3, "second run".into()))
                .expect("line");
            r.event(&finished("T1", 4)).expect("end");
            // T2's first attempt ends; its second is running when the writer dies.
            for attempt_lines in [7u64, 0] {
                r.event(&PhaseEvent::Started {
                    phase: "T2".into(),
                    at_ms: 5,
                })
                .expect("start");
                for i in 0..attempt_lines {
                    r.event(&line("T2", "n1", 5, format!("a{i}")))
                        .expect("line");
                }
                if attempt_lines > 0 {
                    r.event(&finished("T2", 5)).expect("end");
                }
            }
            for i in 0..1500u64 {
                r.event(&line("T2", "n1", 5, format!("l{i}")))
                    .expect("line");
            }
            // Dropped without its phase ending, as a crash leaves it (no Held said yet).
        }
        assert_eq!(
            read_gz(&NodeLogs::compressed_path(&dir, "T1", "n1")),
            "first run\nsecond run\n"
        );
        let st = read_state(&dir).expect("state");
        assert_eq!(st.unfinished, vec!["T2".to_string()]);
        // The running attempt's lines, not the first attempt's beside them.
        assert_eq!(st.lines[&("T2".to_string(), "n1".to_string())], 1500);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A log left aside by a writer that stopped before compressing it is compressed by the
    /// next one; a `logs/<phase>` that is a link is refused, not written through.
    #[test]
    fn left_aside_logs_are_finished_and_linked_log_folders_refused() {
        let root = root("aside");
        let dir = root.join("r");
        drop(RunRecord::create(&root, "r").expect("record"));
        std::fs::create_dir_all(dir.join("logs/T1")).expect("dir");
        std::fs::write(dir.join("logs/T1/n1.log.closing.17"), "kept\n").expect("aside");
        let mut r = RunRecord::open(&dir).expect("open");
        assert_eq!(r.wait_for_logs(), None);
        assert_eq!(read_gz(&dir.join("logs/T1/n1.log.gz")), "kept\n");
        assert!(!dir.join("logs/T1/n1.log.closing.17").exists());
        // A link made to outside the record after it was opened.
        let outside = root.join("outside");
        std::fs::create_dir_all(&outside).expect("outside");
        std::os::unix::fs::symlink(&outside, dir.join("logs/T9")).expect("link");
        let e = r
            .event(&line("T9", "n1", 1, "x".into()))
            .expect_err("through a link");
        assert!(e.to_string().contains("logs/T9"), "{e}");
        assert_eq!(std::fs::read_dir(&outside).expect("outside").count(), 0);
        drop(r);
        // And a record that holds one is not taken over.
        let e = RunRecord::open(&dir).err().expect("refused").to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
