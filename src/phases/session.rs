//! One run as both `burnin run` and the console keep it: the record directory (created on the
//! first phase), the summary with each phase's verdict and figures, and the run's verdict.

use std::collections::BTreeMap;
use std::path::Path;

use super::gates::{self, Baseline};
use super::plan::{PhaseSpec, Plan};
use super::runner::PhaseOutcome;
use super::{PhaseEvent, Verdict};
use crate::inventory::Inventory;
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
    record: RunRecord,
    /// What `summary.json` says.
    pub summary: Summary,
    verdicts: BTreeMap<String, Verdict>,
}

/// A new run id: UTC time, then 4 hex digits of the process id (two consoles, two ids).
pub fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        utc_stamp(now_ms() / 1000),
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
    ) -> Result<Self, String> {
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
                })
                .collect(),
            phases: Vec::new(),
            verdict: None,
            interrupted: false,
        };
        record.write_summary(&summary)?;
        Ok(Self {
            record,
            summary,
            verdicts: BTreeMap::new(),
        })
    }

    /// Take over the run in `run_dir` (its console died mid-run): the record is opened for
    /// appending and the summary read back.
    pub fn resume(run_dir: &Path) -> Result<(Self, crate::record::RecordState), String> {
        let record = RunRecord::open(run_dir)?;
        let mut summary = crate::record::read_summary(run_dir)?;
        let state = crate::record::read_state(run_dir)?;
        summary.ended_ms = None;
        summary.interrupted = false;
        let verdicts = summary
            .phases
            .iter()
            .map(|p| (p.id.clone(), p.verdict))
            .collect();
        Ok((
            Self {
                record,
                summary,
                verdicts,
            },
            state,
        ))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        self.record.dir()
    }

    /// Record one event (errors are returned, the run goes on).
    pub fn event(&mut self, ev: &PhaseEvent) -> Result<(), String> {
        self.record.event(ev)
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
        telemetry: Option<&super::telemetry_log::TelemetryLog>,
    ) -> Result<(), String> {
        if let Some(t) = telemetry {
            self.set_hellos(&t.hellos());
        }
        self.verdicts.insert(spec.id.clone(), outcome.verdict);
        self.summary.phases.retain(|p| p.id != spec.id);
        self.summary.phases.push(RecordPhase {
            id: spec.id.clone(),
            title: spec.title.clone(),
            gate: spec.gate.clone(),
            verdict: outcome.verdict,
            reason: outcome.reason.clone(),
            started_ms,
            ended_ms: now_ms(),
            figures: gates::figures(&outcome.metrics),
            findings: outcome.findings.clone(),
        });
        self.summary.verdict = Some(self.worst());
        self.record.flush()?;
        self.record.write_summary(&self.summary)
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
    pub fn finish(&mut self, interrupted: bool) -> Result<Verdict, String> {
        let verdict = if interrupted {
            Verdict::Aborted
        } else {
            self.worst()
        };
        self.summary.verdict = Some(verdict);
        self.summary.interrupted = interrupted;
        self.summary.ended_ms = Some(now_ms());
        self.record.flush()?;
        self.record.write_summary(&self.summary)?;
        Ok(verdict)
    }
}

/// Read a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}
