//! The run record: one directory per run, written as the run goes; every event is flushed, so a
//! crash loses at most a torn last line (which `RunRecord::open` cuts off). `events.jsonl`
//! holds every phase event (started, lines, the runner's notes, metrics, verdicts) in order,
//! append-only; `logs/<phase>/<node>.log` holds each node's raw output and nothing else;
//! `summary.json`
//! (rewritten atomically after every phase) holds the verdicts and figures a report needs.
//! Reports and baselines are made from these files, never from live state.

pub use error::RecordError;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::phase::{PhaseEvent, Verdict};
use crate::plan::gates::Figures;

pub mod error;
pub mod events;
pub mod files;
pub mod logs;
pub mod read;
pub mod recording;
pub mod session;
pub mod telemetry;

pub use events::{Change, ChangeLog, RecordEvent};
pub use read::{EventReader, RecordState, Recorded, read_events, read_state};

/// Version of `summary.json`.
pub const SUMMARY_SCHEMA: u32 = 1;

/// One node of the run, as the inventory said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordNode {
    /// Name.
    pub name: String,
    /// SSH target (or `local`).
    pub target: String,
    /// How it was reached.
    pub mode: String,
    /// GPUs expected.
    pub gpus: u32,
    /// What the node's telemetry said of it: driver, CUDA, GPUs (name, UUID, PCI, …) and the
    /// GPU ↔ NIC ↔ NUMA topology (`None`: not watched, or it never answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello: Option<crate::model::NodeHello>,
    /// What T0 read the node to be made of (GPU and RDMA PCI IDs), for the floors of the
    /// phases after it (`None`: T0 has not run, or records before it kept this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<crate::model::spec::NodeParts>,
}

/// One phase's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordPhase {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// The gates in words.
    pub gate: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Why, with numbers.
    pub reason: String,
    /// Start, Unix ms (`None` when skipped).
    pub started_ms: Option<u64>,
    /// End, Unix ms.
    pub ended_ms: u64,
    /// The figures the gates judged.
    pub figures: Figures,
    /// Telemetry findings (warn and worse) that came up while it ran.
    #[serde(default)]
    pub findings: Vec<String>,
    /// A `together` phase: its members' figures alone and beside each other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub together: Vec<crate::plan::gates::FigureChange>,
    /// A drill: how each watched series came through each step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drill: Vec<crate::plan::drill::SeriesOutcome>,
    /// How each of its gates came out (records before gate outcomes were kept have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<crate::model::phase::GateOutcome>,
    /// DCGM's diagnostic, GPU by GPU (a V1 phase), for the report's table beside burnin's
    /// own verdict on each GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dcgm: Vec<RecordDiagGpu>,
}

/// What DCGM's diagnostic said of one GPU of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordDiagGpu {
    /// Node name.
    pub node: String,
    /// The GPU's index (`None`: the tests whose word ties to no GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// Each test's word on it.
    pub tests: Vec<crate::model::phase::DiagGpuTest>,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Format version.
    pub schema: u32,
    /// Run id.
    pub run_id: String,
    /// This directory.
    pub run_dir: String,
    /// Inventory file.
    pub inventory: String,
    /// Plan file (`<embedded>/default.toml` for the shipped one).
    pub plan: String,
    /// Baseline file the gates used, if any.
    pub baseline: Option<String>,
    /// burnin's version.
    pub burnin_version: String,
    /// Start, Unix ms.
    pub started_ms: u64,
    /// End, Unix ms (`None` while running).
    pub ended_ms: Option<u64>,
    /// The nodes.
    pub nodes: Vec<RecordNode>,
    /// Phases finished so far, in order.
    pub phases: Vec<RecordPhase>,
    /// The run's verdict: the worst of its phases so far (`None` before the first ends).
    pub verdict: Option<Verdict>,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
}

impl Summary {
    /// What each node is made of, for the floors of the spec table: as T0 read it (PCI IDs),
    /// else the GPUs' names its telemetry said (no IDs: found by name); a node of neither is
    /// left out (its floors are not known).
    pub fn node_parts(&self) -> BTreeMap<String, crate::model::spec::NodeParts> {
        use crate::model::spec::NodeParts;
        let mut out = BTreeMap::new();
        for n in &self.nodes {
            if let Some(p) = &n.parts {
                out.insert(n.name.clone(), p.clone());
            } else if let Some(h) = n.hello.as_ref().filter(|h| !h.gpus.is_empty()) {
                let mut parts = NodeParts {
                    from: "telemetry".into(),
                    ..NodeParts::default()
                };
                for g in &h.gpus {
                    NodeParts::add(&mut parts.gpus, None, &g.name);
                }
                out.insert(n.name.clone(), parts);
            }
        }
        out
    }
}

/// Writes one run's directory.
pub struct RunRecord {
    dir: PathBuf,
    events: BufWriter<File>,
    logs: logs::NodeLogs,
    /// The record's `lock` file, `flock`ed for as long as this writer lives (the kernel lets
    /// go when the process ends, however it ends).
    _lock: File,
}

/// The file in a run directory whose `flock` says a console is writing the run; it holds who.
/// It goes when the writer does (a run left with a `lock` would look taken).
pub const LOCK_FILE: &str = "lock";

impl Drop for RunRecord {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        // The logs first: the lock stays until they are compressed, so no one takes the
        // run over while its files are still being written.
        if let Some(why) = self.logs.wait() {
            tracing::warn!("run record: {why}");
        }
        // Only our own lock file: one that replaced it is another writer's.
        let path = self.dir.join(LOCK_FILE);
        let ours = self._lock.metadata().ok().map(|m| (m.dev(), m.ino()));
        let there = std::fs::symlink_metadata(&path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if ours.is_some() && ours == there {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Take the run directory's lock, or say who holds it: two consoles writing one run would
/// duplicate its lines and finish its phases twice.
fn take_lock(dir: &Path) -> Result<File, RecordError> {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let path = dir.join(LOCK_FILE);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(RecordError::refused(
            path.as_ref(),
            "not a plain file; refused",
        ));
    }
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            // NFS without lock support, say: no lock is to be had, and no one is known to
            // hold it. Said, not taken for another console.
            return Err(RecordError::refused(
                &path,
                format!(
                    "cannot lock the run ({err}); a run directory on a file system without locks cannot be taken over safely"
                ),
            ));
        }
        let mut holder = String::new();
        let _ = (&f).take(4096).read_to_string(&mut holder);
        let holder = crate::model::strip_controls(holder.trim());
        return Err(RecordError::Held(format!(
            "{}: another burnin is writing this run ({}); one console takes a run over at a time",
            dir.display(),
            if holder.is_empty() {
                "it did not say who".to_string()
            } else {
                holder
            }
        )));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let who = format!(
        "pid {} on {} since {}",
        std::process::id(),
        host.trim(),
        utc_stamp(crate::model::now_ms() / 1000)
    );
    let _ = f.set_len(0);
    let _ = f.rewind();
    let _ = writeln!(f, "{who}");
    Ok(f)
}

fn io_err(path: &Path, e: std::io::Error) -> RecordError {
    RecordError::io(path, e)
}

impl RunRecord {
    /// Create `runs_dir/run_id/` (it must not exist yet).
    pub fn create(runs_dir: &Path, run_id: &str) -> Result<Self, RecordError> {
        let dir = runs_dir.join(run_id);
        std::fs::create_dir_all(runs_dir).map_err(|e| io_err(runs_dir, e))?;
        std::fs::create_dir(&dir).map_err(|e| io_err(&dir, e))?;
        let lock = take_lock(&dir)?;
        let path = dir.join("events.jsonl");
        let events = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_err(&path, e))?;
        Ok(Self {
            logs: logs::NodeLogs::new(&dir),
            dir,
            events: BufWriter::new(events),
            _lock: lock,
        })
    }

    /// Open an existing run directory to go on writing it (a console restarted mid-run). A
    /// line torn by a crash at the end of a file is cut off first, so what follows starts on
    /// its own line.
    pub fn open(dir: &Path) -> Result<Self, RecordError> {
        // Before anything is cut or appended: the run may be another console's, live.
        let lock = take_lock(dir)?;
        refuse_links(dir)?;
        let events_path = dir.join("events.jsonl");
        cut_torn_tail(&events_path)?;
        let logs = dir.join("logs");
        if let Ok(phases) = std::fs::read_dir(&logs) {
            for phase in phases.flatten() {
                if let Ok(files) = std::fs::read_dir(phase.path()) {
                    // Only the plain logs a crash can tear mid-line: a compressed one is
                    // whole (renamed into place), and cutting it at a newline byte would
                    // ruin it.
                    for f in files.flatten() {
                        let path = f.path();
                        if path.extension().is_some_and(|e| e == "log") {
                            cut_torn_tail(&path)?;
                        }
                    }
                }
            }
        }
        let events = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&events_path)
            .map_err(|e| io_err(&events_path, e))?;
        let mut logs = logs::NodeLogs::new(dir);
        logs.finish_left_aside();
        Ok(Self {
            dir: dir.to_path_buf(),
            events: BufWriter::new(events),
            logs,
            _lock: lock,
        })
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append one event. A node's output line goes to its log file, and to `events.jsonl`
    /// as far as [`logs`] keeps it there; a phase's end closes its logs (then compressed).
    /// Everything is flushed at once.
    pub fn event(&mut self, ev: &PhaseEvent) -> Result<(), RecordError> {
        match ev {
            PhaseEvent::Line {
                phase,
                node: Some(node),
                text,
                at_ms,
            } => match self.logs.line(phase, node, *at_ms, text)? {
                logs::Keep::Line => self.write_line(ev)?,
                logs::Keep::Held(Some(held)) => self.write_line(&held)?,
                logs::Keep::Held(None) => {}
            },
            PhaseEvent::Finished { phase, at_ms, .. } => {
                for held in self.logs.phase_ended(phase, *at_ms)? {
                    self.write_line(&held)?;
                }
                self.write_line(ev)?;
            }
            _ => self.write_line(ev)?,
        }
        // Every event reaches the disk at once: a console killed mid-phase leaves a record that
        // a restarted one can go on from, line for line.
        self.flush()
    }

    /// One line of `events.jsonl` (a phase event or one of the run's own), not yet flushed.
    fn write_line<T: Serialize>(&mut self, ev: &T) -> Result<(), RecordError> {
        let line = serde_json::to_string(ev)?;
        let path = self.dir.join("events.jsonl");
        writeln!(self.events, "{line}").map_err(|e| io_err(&path, e))
    }

    /// What each (phase, node)'s log holds so far, as this writer wrote it.
    pub fn log_counts(&self) -> &BTreeMap<(String, String), logs::LogCount> {
        self.logs.counts()
    }

    /// Wait until every finished phase's log is compressed (a test, or a report made at
    /// once); the first failure in words.
    pub fn wait_for_logs(&mut self) -> Option<String> {
        self.logs.wait()
    }

    /// Append one of the run's own events (a finding, a node state, an operator key) to
    /// `events.jsonl`, flushed at once like the phase events.
    pub fn record_event(&mut self, ev: &RecordEvent) -> Result<(), RecordError> {
        self.write_line(ev)?;
        let path = self.dir.join("events.jsonl");
        self.events.flush().map_err(|e| io_err(&path, e))
    }

    /// Push everything written so far to disk.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        let events = self.dir.join("events.jsonl");
        self.events.flush().map_err(|e| io_err(&events, e))?;
        self.logs.flush()
    }

    /// Replace `summary.json` (write a temporary file, then rename: never half a file).
    pub fn write_summary(&self, s: &Summary) -> Result<(), RecordError> {
        let text = serde_json::to_string_pretty(s)?;
        files::write_replacing(&self.dir.join("summary.json"), (text + "\n").as_bytes())
    }
}

/// A record taken over is written into: no link may be in it (`logs → /etc` would put node
/// output there). The run directory's entries and the log folders are checked, not followed.
fn refuse_links(dir: &Path) -> Result<(), RecordError> {
    let mut check = vec![dir.to_path_buf(), dir.join("logs")];
    if let Ok(phases) = std::fs::read_dir(dir.join("logs")) {
        check.extend(phases.flatten().map(|e| e.path()));
    }
    for folder in check {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                return Err(RecordError::refused(
                    &e.path(),
                    "is a symbolic link; a record burnin writes into holds none (refused)",
                ));
            }
        }
    }
    Ok(())
}

/// Cut a file after its last newline (a crash can leave half a line). Only the tail is read,
/// a block at a time from the end: the file may be gigabytes, or not a file at all (refused).
fn cut_torn_tail(path: &Path) -> Result<(), RecordError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let meta = f.metadata().map_err(|e| io_err(path, e))?;
    if !meta.is_file() {
        return Err(RecordError::refused(path, "not a plain file; refused"));
    }
    let len = meta.len();
    let mut end = len;
    let mut block = [0u8; 8192];
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(block.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start))
            .map_err(|e| io_err(path, e))?;
        f.read_exact(&mut block[..n]).map_err(|e| io_err(path, e))?;
        if let Some(i) = block[..n].iter().rposition(|b| *b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    if keep < len {
        f.set_len(keep).map_err(|e| io_err(path, e))?;
    }
    Ok(())
}

/// Read a run directory's `summary.json`.
pub fn read_summary(run_dir: &Path) -> Result<Summary, RecordError> {
    let p = run_dir.join("summary.json");
    let text = files::read_text_bounded(&p, files::SUMMARY_MAX_BYTES)?;
    serde_json::from_str(&text)
        .map_err(|e| RecordError::refused(&p, crate::model::excerpt(&e.to_string())))
}

/// The copy of the plan a run record keeps beside its summary.
pub const PLAN_COPY: &str = "plan.toml";

/// The plan a recorded run used: the record's own copy, else the file the summary names (records
/// from before the copy), else the shipped plan. The second value says which, in words, when it
/// is not the record's copy.
pub fn recorded_plan(run_dir: &Path, summary: &Summary) -> (crate::plan::Plan, Option<String>) {
    use crate::plan::{Plan, default_plan};
    let copy = run_dir.join(PLAN_COPY);
    let copy_text = match files::read_text_bounded(&copy, files::SMALL_MAX_BYTES) {
        Ok(text) => Some(text),
        // No copy: a record from before copies were kept (below).
        Err(_) if !copy.exists() && std::fs::symlink_metadata(&copy).is_err() => None,
        Err(e) => {
            return (
                default_plan().clone(),
                Some(format!("{e}; showing the shipped plan")),
            );
        }
    };
    if let Some(text) = copy_text {
        // Errors name the copy, where the text is; the plan keeps the name it ran under.
        match Plan::parse(&copy.display().to_string(), &text) {
            Ok(mut plan) => {
                plan.file = summary.plan.clone();
                return (plan, None);
            }
            Err(e) => {
                return (
                    default_plan().clone(),
                    Some(format!("{e}; showing the shipped plan")),
                );
            }
        }
    }
    if summary.plan.starts_with("<embedded>") {
        return (default_plan().clone(), None);
    }
    match Plan::load(Path::new(&summary.plan)) {
        Ok(plan) => (
            plan,
            Some(format!(
                "the record has no {PLAN_COPY}; read the plan from {} as it is now",
                summary.plan
            )),
        ),
        Err(e) => (
            default_plan().clone(),
            Some(format!(
                "the record has no {PLAN_COPY} and {e}; showing the shipped plan"
            )),
        ),
    }
}

/// `YYYYMMDD-HHMMSS` (UTC) of a Unix time, for run ids that sort by time.
pub fn utc_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_its_own_copy_of_the_plan_first() {
        let dir = std::env::temp_dir().join(format!("burnin-plan-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let site_plan = dir.join("site-plan.toml");
        let mut summary: Summary = serde_json::from_value(serde_json::json!({
            "schema": 1, "run_id": "r", "run_dir": "r", "inventory": "i",
            "plan": site_plan.display().to_string(), "baseline": null,
            "burnin_version": "0", "started_ms": 0, "ended_ms": null, "nodes": [],
            "phases": [], "verdict": null, "interrupted": false
        }))
        .expect("summary");
        let text = "[[phase]]\nid = \"X1\"\ntitle = \"only phase\"\nscope = \"each-node\"\nparser = \"workload\"\ncommand = \"true\"\n";
        // No copy, the site's file gone: the shipped plan, and the report says so.
        let (plan, note) = recorded_plan(&dir, &summary);
        assert_eq!(plan.phases.len(), crate::plan::default_plan().phases.len());
        assert!(note.is_some_and(|n| n.contains("shipped plan")));
        // No copy, the site's file there: read, and said to be read as it is now.
        std::fs::write(&site_plan, text).expect("plan");
        let (plan, note) = recorded_plan(&dir, &summary);
        assert_eq!(plan.phases[0].id.as_str(), "X1");
        assert!(note.is_some_and(|n| n.contains("as it is now")));
        // The copy wins over a file changed since.
        std::fs::write(dir.join(PLAN_COPY), text).expect("copy");
        std::fs::write(&site_plan, "garbage [").expect("plan");
        let (plan, note) = recorded_plan(&dir, &summary);
        assert_eq!((plan.phases[0].id.as_str(), note), ("X1", None));
        // A broken copy is said, never a crash.
        std::fs::write(dir.join(PLAN_COPY), "[[phase]\n").expect("copy");
        let (_, note) = recorded_plan(&dir, &summary);
        assert!(note.is_some_and(|n| n.contains(PLAN_COPY)));
        // The shipped plan needs no file.
        std::fs::remove_file(dir.join(PLAN_COPY)).expect("rm");
        summary.plan = "<embedded>/default.toml".into();
        assert!(recorded_plan(&dir, &summary).1.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(1_796_227_200), "20261202-160000");
        assert_eq!(utc_stamp(951_825_600), "20000229-120000");
    }

    #[test]
    fn events_logs_and_summary() {
        let root = std::env::temp_dir().join(format!("burnin-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut r = RunRecord::create(&root, "r1").unwrap();
        assert!(
            RunRecord::create(&root, "r1").is_err(),
            "a run id is used once"
        );
        r.event(&PhaseEvent::Line {
            phase: "T1".into(),
            at_ms: 1,
            node: Some("n1".into()),
            text: "hello".into(),
        })
        .unwrap();
        r.event(&PhaseEvent::Finished {
            phase: "T1".into(),
            at_ms: 2,
            verdict: Verdict::Pass,
            reason: "ok".into(),
        })
        .unwrap();
        let ev = std::fs::read_to_string(root.join("r1/events.jsonl")).unwrap();
        assert_eq!(ev.lines().count(), 2);
        assert!(ev.contains(r#""event":"finished""#), "{ev}");
        // The phase ended: its log is compressed (by a thread of its own) and the plain one gone.
        assert_eq!(r.wait_for_logs(), None);
        assert!(!root.join("r1/logs/T1/n1.log").exists());
        assert_eq!(logs::read_gz(&root.join("r1/logs/T1/n1.log.gz")), "hello\n");
        let s = Summary {
            schema: SUMMARY_SCHEMA,
            run_id: "r1".into(),
            run_dir: r.dir().display().to_string(),
            inventory: "burnin.toml".into(),
            plan: "p".into(),
            baseline: None,
            burnin_version: "0".into(),
            started_ms: 1,
            ended_ms: Some(2),
            nodes: vec![],
            phases: vec![],
            verdict: Some(Verdict::Pass),
            interrupted: false,
        };
        r.write_summary(&s).unwrap();
        assert_eq!(read_summary(r.dir()).unwrap(), s);
        let _ = std::fs::remove_dir_all(&root);
    }
}
