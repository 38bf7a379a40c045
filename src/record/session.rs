//! One run as both `burnin run` and the console keep it: the record directory (created on the
//! first phase), the summary with each phase's verdict and figures, and the run's verdict.

use crate::record::RecordError;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::inventory::Inventory;
use crate::model::phase::{PhaseEvent, Verdict};
use crate::phases::runner::PhaseOutcome;
use crate::plan::gates::{self, Baseline};
use crate::plan::{PhaseSpec, Plan};
use crate::record::{RecordNode, RecordPhase, RunRecord, SUMMARY_SCHEMA, Summary, utc_stamp};

/// How bad a verdict is for the run as a whole.
pub fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Pass | Verdict::Skipped => 0,
        Verdict::Warn => 1,
        Verdict::Aborted => 2,
        Verdict::Fail | Verdict::Timeout => 3,
    }
}

use crate::model::now_ms;

/// A run: its id, its record, its summary so far.
pub struct RunSession {
    record: SharedRecord,
    /// What `summary.json` says.
    pub summary: Summary,
    verdicts: BTreeMap<String, Verdict>,
    /// The run's clock: the wall clock, or a simulated one (`run --demo`).
    clock: Option<Arc<AtomicU64>>,
    dir: std::path::PathBuf,
}

/// The record, shared with the tasks that write beside the phases (telemetry, findings).
pub type SharedRecord = Arc<Mutex<RunRecord>>;

fn locked(record: &SharedRecord) -> Result<std::sync::MutexGuard<'_, RunRecord>, RecordError> {
    record
        .lock()
        .map_err(|_| RecordError::Poisoned("run record: a writer panicked while holding it"))
}

/// A new run id: UTC time, then 4 hex digits of the process id (two consoles, two ids).
pub fn new_run_id() -> String {
    run_id_at(now_ms())
}

/// A run id for a run that starts at `at_ms` on its own clock (the simulator's runs start at
/// its epoch, so the id agrees with the dates in their record and report).
pub fn run_id_at(at_ms: u64) -> String {
    format!(
        "{}-{:04x}",
        utc_stamp(at_ms / 1000),
        std::process::id() & 0xffff
    )
}

impl RunSession {
    /// Create `runs_dir/<run id>/` and write the first summary.
    pub fn create(
        runs_dir: &Path,
        run_id: &str,
        inventory: &Inventory,
        plan: &Plan,
        baseline: Option<&Path>,
    ) -> Result<Self, RecordError> {
        let record = RunRecord::create(runs_dir, run_id)?;
        let summary = Summary {
            schema: SUMMARY_SCHEMA,
            run_id: run_id.to_string(),
            run_dir: record.dir().display().to_string(),
            inventory: inventory.file.clone(),
            plan: plan.file.clone(),
            baseline: baseline.map(|p| p.display().to_string()),
            burnin_version: env!("CARGO_PKG_VERSION").to_string(),
            started_ms: now_ms(),
            ended_ms: None,
            nodes: inventory
                .nodes
                .iter()
                .map(|n| RecordNode {
                    name: n.name.clone(),
                    target: n.target.clone(),
                    mode: n.mode.name().to_string(),
                    gpus: n.gpus,
                    hello: None,
                    parts: None,
                })
                .collect(),
            phases: Vec::new(),
            verdict: None,
            interrupted: false,
        };
        record.write_summary(&summary)?;
        // The plan travels with the record: a report or replay made elsewhere, or after the
        // file changed, reads what this run ran.
        let copy = record.dir().join(crate::record::PLAN_COPY);
        std::fs::write(&copy, &plan.text).map_err(|e| RecordError::io(&copy, e))?;
        Ok(Self {
            dir: record.dir().to_path_buf(),
            record: Arc::new(Mutex::new(record)),
            summary,
            verdicts: BTreeMap::new(),
            clock: None,
        })
    }

    /// The run began before its record: the console kept what it saw since `started_ms` in
    /// memory and writes it into the record now, so the run starts then (a replay plays from
    /// there, a report counts from there).
    pub fn backdate(&mut self, started_ms: crate::model::UnixMillis) -> Result<(), RecordError> {
        if started_ms >= self.summary.started_ms {
            return Ok(());
        }
        self.summary.started_ms = started_ms;
        locked(&self.record)?.write_summary(&self.summary)
    }

    /// Keep the run's times by `clock` (Unix ms) instead of the wall clock: the simulated run
    /// records simulated time, so its record reads like the run it simulates.
    pub fn use_clock(&mut self, clock: Arc<AtomicU64>) -> Result<(), RecordError> {
        self.summary.started_ms = clock.load(Ordering::SeqCst);
        self.clock = Some(clock);
        locked(&self.record)?.write_summary(&self.summary)
    }

    /// Now, by the run's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock
            .as_ref()
            .map_or_else(now_ms, |c| c.load(Ordering::SeqCst))
    }

    /// The record, for writers beside the phases.
    pub fn record(&self) -> SharedRecord {
        Arc::clone(&self.record)
    }

    /// Append one of the run's own events (finding, node state, operator key).
    pub fn record_event(&self, ev: &crate::record::RecordEvent) -> Result<(), RecordError> {
        locked(&self.record)?.record_event(ev)
    }

    /// Take over the run in `run_dir` (its console died mid-run): the record is opened for
    /// appending and the summary read back.
    pub fn resume(run_dir: &Path) -> Result<(Self, crate::record::RecordState), RecordError> {
        let record = RunRecord::open(run_dir)?;
        let mut summary = crate::record::read_summary(run_dir)?;
        let state = crate::record::read_state(run_dir)?;
        summary.ended_ms = None;
        summary.interrupted = false;
        // Where it is written now: a record copied or moved says where it was made.
        summary.run_dir = record.dir().display().to_string();
        let verdicts = summary
            .phases
            .iter()
            .map(|p| (p.id.clone(), p.verdict))
            .collect();
        Ok((
            Self {
                dir: record.dir().to_path_buf(),
                record: Arc::new(Mutex::new(record)),
                summary,
                verdicts,
                clock: None,
            },
            state,
        ))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Record one event (errors are returned, the run goes on).
    pub fn event(&mut self, ev: &PhaseEvent) -> Result<(), RecordError> {
        locked(&self.record)?.event(ev)
    }

    /// Figures of the phases that passed or warned in this run so far (a `together` phase
    /// compares with them).
    pub fn earlier_figures(&self) -> BTreeMap<String, gates::Figures> {
        self.summary
            .phases
            .iter()
            .filter(|p| matches!(p.verdict, Verdict::Pass | Verdict::Warn))
            .map(|p| (p.id.clone(), p.figures.clone()))
            .collect()
    }

    /// What each node is made of, for the floors of the spec table ([`Summary::node_parts`]).
    pub fn node_parts(&self) -> BTreeMap<String, crate::model::spec::NodeParts> {
        self.summary.node_parts()
    }

    /// The phases `spec` needs that ended badly in this run, in words (`None`: free to run).
    pub fn blocked_by(&self, spec: &PhaseSpec) -> Option<String> {
        let blocked: Vec<String> = spec
            .needs
            .iter()
            .filter_map(|n| {
                self.verdicts
                    .get(n)
                    .filter(|v| !matches!(v, Verdict::Pass | Verdict::Warn))
                    .map(|v| format!("{n} {}", v.label()))
            })
            .collect();
        (!blocked.is_empty()).then(|| format!("needs {}", blocked.join(", ")))
    }

    /// A phase ended (or was skipped): add it to the summary, with what the telemetry (if
    /// watched) says of each node's hardware, and rewrite `summary.json`. A phase run again
    /// replaces its earlier result.
    pub fn phase_done(
        &mut self,
        spec: &PhaseSpec,
        started_ms: Option<u64>,
        outcome: &PhaseOutcome,
        telemetry: Option<&dyn crate::model::watch::TelemetryWatch>,
    ) -> Result<(), RecordError> {
        if let Some(t) = telemetry {
            self.set_hellos(&t.hellos());
        }
        self.verdicts.insert(spec.id.clone(), outcome.verdict);
        // A group's comparisons and a drill's steps are kept whole beside the figures.
        let (mut together, mut drill, mut gate_outcomes) = (Vec::new(), Vec::new(), Vec::new());
        let mut dcgm = Vec::new();
        for m in &outcome.metrics {
            match m {
                crate::model::phase::PhaseMetric::Gate {
                    gate,
                    status,
                    words,
                } => gate_outcomes.push(crate::model::phase::GateOutcome {
                    gate: gate.clone(),
                    status: *status,
                    words: words.clone(),
                }),
                crate::model::phase::PhaseMetric::Together { change } => {
                    together.push(change.clone())
                }
                crate::model::phase::PhaseMetric::Drill { outcome } => drill.push(outcome.clone()),
                crate::model::phase::PhaseMetric::Parts { node, parts } => {
                    if let Some(n) = self.summary.nodes.iter_mut().find(|n| n.name == *node) {
                        n.parts = Some(parts.clone());
                    }
                }
                crate::model::phase::PhaseMetric::DiagGpu { node, gpu, tests } => {
                    dcgm.push(super::RecordDiagGpu {
                        node: node.clone(),
                        gpu: *gpu,
                        tests: tests.clone(),
                    })
                }
                _ => {}
            }
        }
        self.summary.phases.retain(|p| p.id != spec.id);
        self.summary.phases.push(RecordPhase {
            id: spec.id.clone(),
            title: spec.title.clone(),
            gate: spec.gate.clone(),
            verdict: outcome.verdict,
            reason: outcome.reason.clone(),
            started_ms,
            ended_ms: self.now_ms(),
            figures: gates::figures(&outcome.metrics),
            findings: outcome.findings.clone(),
            together,
            drill,
            gates: gate_outcomes,
            dcgm,
        });
        self.summary.verdict = Some(self.worst());
        let mut record = locked(&self.record)?;
        record.flush()?;
        record.write_summary(&self.summary)
    }

    /// Keep what each node said of itself (hardware and topology) in the summary.
    fn set_hellos(&mut self, hellos: &BTreeMap<String, crate::model::NodeHello>) {
        for n in &mut self.summary.nodes {
            if let Some(h) = hellos.get(&n.name) {
                n.hello = Some(h.clone());
            }
        }
    }

    /// The run's verdict so far: the worst of its phases.
    pub fn worst(&self) -> Verdict {
        self.summary
            .phases
            .iter()
            .map(|p| p.verdict)
            .max_by_key(|v| severity(*v))
            .unwrap_or(Verdict::Skipped)
    }

    /// Close the run: its verdict, end time, final summary.
    pub fn finish(&mut self, interrupted: bool) -> Result<Verdict, RecordError> {
        let verdict = if interrupted {
            Verdict::Aborted
        } else {
            self.worst()
        };
        self.summary.verdict = Some(verdict);
        self.summary.interrupted = interrupted;
        self.summary.ended_ms = Some(self.now_ms());
        let mut record = locked(&self.record)?;
        record.flush()?;
        // The run ends with its logs compressed, whether or not the process lingers.
        if let Some(why) = record.wait_for_logs() {
            tracing::warn!("run record: {why}");
        }
        record.write_summary(&self.summary)?;
        Ok(verdict)
    }
}

/// Largest baseline read: one saved from a 1024-node run is a few MB; past this the path names
/// something else (a record names its baseline, and a record may come from anyone).
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// Read a baseline file (a regular file of at most [`MAX_BASELINE_BYTES`]: `/dev/zero` or a
/// FIFO is refused unread).
pub fn read_baseline(path: &Path) -> Result<Baseline, RecordError> {
    let text = crate::config::read_file_bounded(path, MAX_BASELINE_BYTES)
        .map_err(|e| RecordError::io(path, e))?;
    let baseline: Baseline = serde_json::from_str(&text)
        .map_err(|e| RecordError::refused(path, crate::model::excerpt(&e.to_string())))?;
    // A reference of 0 (or less) would let every `baseline` gate pass: refused here, where it
    // is read, rather than judged against.
    match baseline.unusable() {
        Some(why) => Err(RecordError::refused(path, format!("no reference: {why}"))),
        None => Ok(baseline),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_that_is_no_regular_file_is_refused_unread() {
        // A record names its baseline: `/dev/zero` there made `burnin report` read forever.
        let e = read_baseline(Path::new("/dev/zero"))
            .expect_err("a device")
            .to_string();
        assert!(e.contains("not a plain file"), "{e}");
    }

    /// Issue 41: a baseline of zeros made every "% of baseline" gate pass.
    #[test]
    fn a_baseline_of_zero_or_less_is_refused_where_it_is_read() {
        let dir = std::env::temp_dir().join(format!("burnin-baseline0-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b.json");
        let with = |name: &str, value: f64| {
            format!(
                r#"{{"schema":1,"source":"r","phases":{{"T4":{{"{name}":[{{"subject":"gpu01","group":"","value":{value}}}]}}}}}}"#
            )
        };
        std::fs::write(&p, with("busbw_all_reduce", 0.0)).unwrap();
        let e = read_baseline(&p).expect_err("0 busbw").to_string();
        assert!(
            e.contains("no reference: T4 busbw_all_reduce gpu01: 0 is 0, which every value passes"),
            "{e}"
        );
        std::fs::write(&p, with("busbw_all_reduce", -3.5)).unwrap();
        let e = read_baseline(&p).expect_err("negative").to_string();
        assert!(e.contains("-3.5 is negative"), "{e}");
        // No data wait at all is a reference: lower is better.
        std::fs::write(&p, with("data_wait_pct", 0.0)).unwrap();
        assert!(read_baseline(&p).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_baseline_error_quotes_no_whole_value() {
        // serde_json quotes a string of the wrong type whole; found by tests/fuzz/.
        let dir = std::env::temp_dir().join(format!("burnin-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b.json");
        std::fs::write(&p, format!("{{\"schema\":\"{}\"}}", "x".repeat(70_000))).unwrap();
        let e = read_baseline(&p).expect_err("not a baseline");
        assert!(matches!(e, RecordError::Refused { .. }), "{e:?}");
        let e = e.to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.len() < 500, "{} bytes: {e}", e.len());
        assert!(e.ends_with("at line 1 column 70012"), "{e}");
    }
}
