//! `burnin run`: the plan without the console. Runs the phases in order on the inventory's
//! nodes, prints progress to stderr, writes the run record, and exits with the verdict:
//! 0 when nothing failed, 1 when a phase FAILED or TIMED OUT, 130 when interrupted. SIGINT and
//! SIGTERM abort the running phase on every node the way `a` does (TERM, then KILL after the
//! grace period), record ABORTED, and skip the rest — nothing is left running remotely.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use color_eyre::eyre::{Result, eyre};
use tokio::sync::{mpsc, watch};

use crate::config::inventory::{Inventory, Mode};
use crate::model::NodeLink;
use crate::model::phase::{PhaseEvent, Verdict};
use crate::model::{Source, SourceEvent};
use crate::phases::runner::{PhaseOutcome, RunContext, RunnerNode, reattach_phase, run_phase};
use crate::plan::gates;
use crate::plan::gates::Baseline;
use crate::plan::{PhaseSpec, Plan, default_plan};
use crate::record::SUMMARY_SCHEMA;
use crate::record::recording::TelemetryRecording;
use crate::record::session::{RunSession, new_run_id, severity};
use crate::sources::fleet::FleetSource;
use crate::transport::Transport;
use crate::transport::local::LocalTransport;
use crate::transport::ssh::{SshSettings, SshTransport};
use crate::triage::telemetry_log::TelemetryLog;

/// Version of the `run --json` document (the summary's schema).
pub const RUN_SCHEMA: u32 = SUMMARY_SCHEMA;

/// What `burnin run` was asked to do.
pub struct RunArgs {
    /// burnin.toml.
    pub config: PathBuf,
    /// `--ssh-config`.
    pub ssh_config: Option<PathBuf>,
    /// `--only`.
    pub only: Vec<String>,
    /// `--json`.
    pub json: bool,
    /// `--runs-dir`.
    pub runs_dir: PathBuf,
    /// `--baseline`.
    pub baseline: Option<PathBuf>,
    /// `--verbose`.
    pub verbose: bool,
    /// Stream the nodes' telemetry beside the phases.
    pub telemetry: bool,
    /// `--resume RUN_DIR`.
    pub resume: Option<PathBuf>,
}

/// The plan the inventory names, or the shipped one.
pub fn load_plan(inventory: &Inventory) -> Result<Plan> {
    match &inventory.plan {
        Some(p) => Plan::load(p).map_err(|e| eyre!("{e}")),
        None => Ok(default_plan().clone()),
    }
}

/// Where the baseline lives by default: beside burnin.toml.
pub fn default_baseline_path(config: &Path) -> PathBuf {
    config
        .parent()
        .map_or_else(PathBuf::new, Path::to_path_buf)
        .join("burnin-baseline.json")
}

/// The baseline a run uses: `--baseline FILE`, else the default file when it exists.
pub fn baseline_for(
    config: &Path,
    given: Option<PathBuf>,
) -> Result<(Option<PathBuf>, Option<Arc<Baseline>>)> {
    let path = given.or_else(|| Some(default_baseline_path(config)).filter(|p| p.exists()));
    let baseline = match &path {
        Some(p) => Some(Arc::new(
            crate::record::session::read_baseline(p).map_err(|e| eyre!("baseline: {e}"))?,
        )),
        None => None,
    };
    Ok((path, baseline))
}

/// How each node is reached for phases: SSH for agent/smi nodes, this host for local/sim.
pub fn runner_nodes(inventory: &Inventory, ssh: &SshSettings) -> Vec<RunnerNode> {
    inventory
        .nodes
        .iter()
        .map(|n| {
            let transport: Arc<dyn Transport> = match n.mode {
                Mode::Agent | Mode::Smi | Mode::Prometheus => {
                    Arc::new(SshTransport::new(n.clone(), ssh.clone()))
                }
                Mode::Local | Mode::Sim => Arc::new(LocalTransport),
            };
            RunnerNode {
                spec: n.clone(),
                transport,
            }
        })
        .collect()
}

/// Stream every node's telemetry (as `watch` does) into a log the phases ask at their end, and
/// into the run's record; a node that cannot be watched is said once on stderr.
fn watch_telemetry(
    inventory: &Inventory,
    ssh: &SshSettings,
    mut recording: TelemetryRecording,
) -> Result<Arc<TelemetryLog>> {
    let exe = std::env::current_exe()
        .map_err(|e| eyre!("cannot find this binary's path (local/sim nodes run it): {e}"))?;
    let log = Arc::new(TelemetryLog::with_thresholds(
        inventory.interval,
        inventory.triage,
    ));
    let source = Box::new(FleetSource::new(inventory.clone(), ssh.clone(), exe));
    let (tx, mut rx) = mpsc::channel(8192);
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    tokio::spawn(source.run(tx, cmd_rx));
    let sink = Arc::clone(&log);
    tokio::spawn(async move {
        // Keep the command side open: a closed one tells the source its console is gone.
        let _keep = cmd_tx;
        let mut said: BTreeMap<String, String> = BTreeMap::new();
        let mut record_failed = false;
        while let Some(ev) = rx.recv().await {
            if let SourceEvent::Link {
                node,
                link: NodeLink::Unreachable(why),
                ..
            } = &ev
                && said.get(node) != Some(why)
            {
                crate::eprintln_safe!("burnin run: telemetry from {node}: unreachable: {why}");
                said.insert(node.clone(), why.clone());
            }
            let at_ms = crate::model::now_ms();
            let found = sink.observe_at(&ev, at_ms);
            if let Err(e) = recording.observe(&ev, at_ms, found.as_deref())
                && !record_failed
            {
                // Said once: the phases go on, and their verdicts are still recorded.
                crate::eprintln_safe!("burnin run: record: telemetry: {e}");
                record_failed = true;
            }
        }
    });
    Ok(log)
}

/// Messages on stderr that may repeat for every event (a full disk fails every write): each
/// one is said once; at the end of the phase, how often each repeated.
#[derive(Default)]
struct SaidOnce {
    /// Messages said in this phase, with how often they came again (at most
    /// [`SAID_ONCE_KEPT`] distinct ones; past that a message is said each time).
    said: Vec<(String, u64)>,
}

/// Distinct messages [`SaidOnce`] remembers per phase.
const SAID_ONCE_KEPT: usize = 64;

impl SaidOnce {
    fn say(&mut self, message: &str) {
        for line in self.lines_for(message) {
            crate::eprintln_safe!("{line}");
        }
    }

    fn flush(&mut self) {
        for line in self.end_repeats() {
            crate::eprintln_safe!("{line}");
        }
    }

    /// What to print for `message`: nothing when it was said already.
    fn lines_for(&mut self, message: &str) -> Vec<String> {
        if let Some((_, n)) = self.said.iter_mut().find(|(m, _)| m == message) {
            *n += 1;
            return Vec::new();
        }
        if self.said.len() < SAID_ONCE_KEPT {
            self.said.push((message.to_string(), 0));
        }
        vec![message.to_string()]
    }

    /// How often each message repeated, if any did; then forget them (the next phase says
    /// each anew).
    fn end_repeats(&mut self) -> Vec<String> {
        std::mem::take(&mut self.said)
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(m, n)| format!("  (said {n} more time(s): {})", crate::model::fit(&m, 80)))
            .collect()
    }
}

/// `burnin run`.
pub async fn run(args: RunArgs) -> Result<i32> {
    let inventory = Inventory::load(&args.config).map_err(|e| eyre!("{e}"))?;
    let plan = Arc::new(load_plan(&inventory)?);
    check_only(&args.only, &plan)?;
    let (baseline_path, baseline) = baseline_for(&args.config, args.baseline.clone())?;
    let ssh = crate::transport::ssh::settings(args.ssh_config.clone(), &inventory);
    let (mut session, resumed) = open_session(&args, &inventory, &plan, baseline_path.as_deref())?;
    let run_id = session.summary.run_id.clone();
    let recording = TelemetryRecording::new(&session).map_err(|e| eyre!("record: {e}"))?;
    let segment = Arc::clone(&recording.telemetry);
    let telemetry = if args.telemetry {
        Some(watch_telemetry(&inventory, &ssh, recording)?
            as Arc<dyn crate::model::watch::TelemetryWatch>)
    } else {
        crate::eprintln_safe!(
            "burnin run: --no-telemetry: Xid and stalled GPUs during phases are not judged"
        );
        None
    };
    // A drill in the run: the operator confirms each step with Enter on this terminal.
    let drills = plan
        .phases
        .iter()
        .any(|p| p.drill.is_some() && (args.only.is_empty() || args.only.contains(&p.id)));
    let confirm = drills.then(enter_presses);
    let ctx = RunContext {
        run_id: run_id.clone(),
        attempt: 1,
        earlier: Default::default(),
        parts: Default::default(),
        confirm,
        plan: Arc::clone(&plan),
        nodes: runner_nodes(&inventory, &ssh),
        baseline,
        telemetry,
    };
    crate::eprintln_safe!(
        "burnin run {run_id}: {} node(s), plan {}, record in {}",
        inventory.nodes.len(),
        plan.file,
        session.dir().display()
    );

    let (abort_rx, interrupted) = abort_on_signals("burnin run");

    // `--only` a together phase runs its members alone first: its figures compare with theirs.
    let mut only = args.only.clone();
    for spec in &plan.phases {
        if only.contains(&spec.id) {
            only.extend(spec.together.iter().cloned());
        }
    }
    let mut record_errors = SaidOnce::default();
    for spec in &plan.phases {
        if !only.is_empty() && !only.contains(&spec.id) {
            continue;
        }
        // Taking over a run: what it finished stays; what was running is re-attached.
        if let Some(st) = &resumed
            && st.finished.contains(&spec.id)
        {
            if let Some(p) = session.summary.phases.iter().find(|p| p.id == spec.id) {
                crate::eprintln_safe!(
                    "{:<4} {:<8} (recorded) {}",
                    spec.id,
                    p.verdict.label(),
                    p.reason
                );
            }
            continue;
        }
        let reattach: Option<BTreeMap<String, usize>> = resumed
            .as_ref()
            .filter(|st| st.unfinished.contains(&spec.id))
            .map(|st| {
                st.lines
                    .iter()
                    .filter(|((phase, _), _)| *phase == spec.id)
                    .map(|((_, node), n)| (node.clone(), *n))
                    .collect()
            });
        let skip = if interrupted.load(Ordering::SeqCst) {
            Some("the run was interrupted".to_string())
        } else {
            session.blocked_by(spec)
        };
        let (outcome, started) = if let Some(reason) = skip {
            (skip_phase(&mut session, spec, reason)?, None)
        } else {
            let phase = PhaseRun {
                ctx: &ctx,
                spec,
                resumed: resumed.as_ref(),
                reattach,
                abort: abort_rx.clone(),
                verbose: args.verbose,
            };
            phase.drive(&mut session, &mut record_errors).await?
        };
        session
            .phase_done(spec, started, &outcome, ctx.telemetry.as_deref())
            .map_err(|e| eyre!("{e}"))?;
    }
    let was_interrupted = interrupted.load(Ordering::SeqCst);
    if let Ok(mut t) = segment.lock()
        && let Err(e) = t.finish()
    {
        crate::eprintln_safe!("burnin run: record: telemetry: {e}");
    }
    let worst = session.worst();
    session.finish(was_interrupted).map_err(|e| eyre!("{e}"))?;
    let summary = &session.summary;
    say_run_verdict(&run_id, summary);
    if args.json {
        crate::println_safe!("{}", serde_json::to_string_pretty(summary)?);
    }
    Ok(if was_interrupted {
        130
    } else if severity(worst) >= 2 {
        1
    } else {
        0
    })
}

/// `--only` names phases of the plan.
fn check_only(only: &[String], plan: &Plan) -> Result<()> {
    for id in only {
        if plan.find(id).is_none() {
            let ids: Vec<&str> = plan.phases.iter().map(|p| p.id.as_str()).collect();
            return Err(eyre!(
                "--only {id}: no such phase in {} ({})",
                plan.file,
                ids.join(", ")
            ));
        }
    }
    Ok(())
}

/// The run's record: a new one, or the one `--resume` takes over (with what it holds).
fn open_session(
    args: &RunArgs,
    inventory: &Inventory,
    plan: &Plan,
    baseline_path: Option<&Path>,
) -> Result<(RunSession, Option<crate::record::RecordState>)> {
    Ok(match &args.resume {
        Some(dir) => {
            let (s, st) = RunSession::resume(dir).map_err(|e| eyre!("--resume: {e}"))?;
            if s.summary.plan != plan.file {
                crate::eprintln_safe!(
                    "burnin run: the run was started with plan {}, going on with {}",
                    s.summary.plan,
                    plan.file
                );
            }
            (s, Some(st))
        }
        None => {
            let s = RunSession::create(
                &args.runs_dir,
                &new_run_id(),
                inventory,
                plan,
                baseline_path,
            )
            .map_err(|e| eyre!("run record: {e}"))?;
            (s, None)
        }
    })
}

/// A phase that does not run (blocked by one before it, or the run was interrupted): said and
/// recorded SKIPPED with why.
fn skip_phase(session: &mut RunSession, spec: &PhaseSpec, reason: String) -> Result<PhaseOutcome> {
    let ev = PhaseEvent::Finished {
        phase: spec.id.clone(),
        at_ms: crate::model::now_ms(),
        verdict: Verdict::Skipped,
        reason: reason.clone(),
    };
    session.event(&ev).map_err(|e| eyre!("{e}"))?;
    crate::eprintln_safe!("{:<4} SKIPPED  {reason}", spec.id);
    let outcome = PhaseOutcome {
        verdict: Verdict::Skipped,
        reason,
        metrics: Vec::new(),
        findings: Vec::new(),
    };
    Ok(outcome)
}

/// One phase to run (or re-attach to, in a run taken over), its events said and recorded as
/// they come.
struct PhaseRun<'a> {
    ctx: &'a RunContext,
    spec: &'a Arc<PhaseSpec>,
    resumed: Option<&'a crate::record::RecordState>,
    reattach: Option<BTreeMap<String, usize>>,
    abort: watch::Receiver<Option<crate::phases::remote::StopReason>>,
    verbose: bool,
}

impl PhaseRun<'_> {
    /// Run it to its outcome, and when it started.
    async fn drive(
        self,
        session: &mut RunSession,
        record_errors: &mut SaidOnce,
    ) -> Result<(PhaseOutcome, Option<u64>)> {
        let Self {
            ctx,
            spec,
            resumed,
            reattach,
            abort,
            verbose,
        } = self;
        let how = if reattach.is_some() {
            "re-attaching"
        } else {
            "..."
        };
        crate::eprintln_safe!(
            "{:<4} {} ({}) {how}",
            spec.id,
            spec.title,
            spec.scope.label()
        );
        let (tx, mut rx) = mpsc::channel::<PhaseEvent>(1024);
        let task = {
            let mut ctx = ctx.clone();
            // A run taken over continues the attempt its record started; otherwise the
            // next one.
            let before = resumed
                .as_ref()
                .and_then(|st| st.attempts.get(&spec.id).copied())
                .unwrap_or(0);
            ctx.attempt = if reattach.is_some() {
                before.max(1)
            } else {
                before + 1
            };
            ctx.earlier = session.earlier_figures();
            ctx.parts = session.node_parts();
            let spec = Arc::clone(spec);
            let reattach = reattach.clone();
            tokio::spawn(async move {
                match reattach {
                    Some(recorded) => reattach_phase(&ctx, spec, abort, tx, recorded).await,
                    None => run_phase(&ctx, spec, abort, tx).await,
                }
            })
        };
        let mut started = resumed
            .filter(|_| reattach.is_some())
            .and_then(|st| st.started_ms.get(&spec.id).copied());
        while let Some(ev) = rx.recv().await {
            if let PhaseEvent::Started { at_ms, .. } = &ev {
                started = Some(*at_ms);
            }
            say_progress(&spec.id, &ev, verbose);
            if let Err(e) = session.event(&ev) {
                record_errors.say(&format!("burnin run: record: {e}"));
            }
        }
        record_errors.flush();
        let outcome = task.await.map_err(|e| eyre!("phase task: {e}"))?;
        Ok((outcome, started))
    }
}

/// Enter presses on this terminal, counted: how the operator confirms a drill's steps.
fn enter_presses() -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            if line.is_err() || tx.is_closed() {
                break;
            }
            tx.send_modify(|n| *n += 1);
        }
    });
    rx
}

/// SIGINT/SIGTERM abort what runs (every node's process group) and skip what is left: the
/// switch the phases watch, and whether it was thrown.
pub(super) fn abort_on_signals(
    who: &'static str,
) -> (
    watch::Receiver<Option<crate::phases::remote::StopReason>>,
    Arc<AtomicBool>,
) {
    let (abort_tx, abort_rx) = watch::channel(None);
    let interrupted = Arc::new(AtomicBool::new(false));
    let thrown = Arc::clone(&interrupted);
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        crate::eprintln_safe!("{who}: interrupted: aborting the running phase on every node");
        thrown.store(true, Ordering::SeqCst);
        let _ = abort_tx.send(Some(crate::phases::remote::StopReason::Aborted));
    });
    (abort_rx, interrupted)
}

/// A phase's progress on stderr: notes, verdicts and prompts always, output lines with
/// `--verbose`.
fn say_progress(phase: &str, ev: &PhaseEvent, verbose: bool) {
    match ev {
        PhaseEvent::Line { node, text, .. } if verbose => {
            crate::eprintln_safe!("{phase:<4} {}| {text}", node.as_deref().unwrap_or("-"));
        }
        PhaseEvent::Note { node, text, .. } => {
            crate::eprintln_safe!(
                "{phase:<4} {}| burnin: {text}",
                node.as_deref().unwrap_or("-")
            );
        }
        PhaseEvent::Finished {
            verdict, reason, ..
        } => {
            crate::eprintln_safe!("{phase:<4} {:<8} {reason}", verdict.label());
        }
        PhaseEvent::Prompt {
            text: Some(text), ..
        } => {
            crate::eprintln_safe!("{phase:<4} ASKS     {text} — press Enter when done");
        }
        _ => {}
    }
}

/// The run's last line on stderr: its verdict and how many phases ended how.
fn say_run_verdict(run_id: &str, summary: &crate::record::Summary) {
    let counts = |v: Verdict| summary.phases.iter().filter(|p| p.verdict == v).count();
    crate::eprintln_safe!(
        "burnin run {run_id}: {} — {} pass, {} warn, {} fail, {} timeout, {} aborted, {} skipped; record {}",
        summary.verdict.map_or("?", Verdict::label),
        counts(Verdict::Pass),
        counts(Verdict::Warn),
        counts(Verdict::Fail),
        counts(Verdict::Timeout),
        counts(Verdict::Aborted),
        counts(Verdict::Skipped),
        summary.run_dir
    );
}

/// `burnin baseline save RUN_DIR`: the figures of the run's PASS/WARN phases.
/// `burnin baseline save --fleet RUN`: the baseline of the run's fleet (every phase that
/// finished with figures, a failed one too), each subject worse than its group's mean by more
/// than `pct` % left out and named ([`gates::fleet_baseline`]).
pub fn baseline_save_fleet(run_dir: &Path, to: &Path, pct: f64) -> Result<i32> {
    let s = crate::record::read_summary(run_dir).map_err(|e| eyre!("{e}"))?;
    let phases: Vec<(&str, &gates::Figures, bool)> = s
        .phases
        .iter()
        .filter(|p| matches!(p.verdict, Verdict::Pass | Verdict::Warn | Verdict::Fail))
        .filter(|p| !p.figures.is_empty())
        .map(|p| {
            let passed = matches!(p.verdict, Verdict::Pass | Verdict::Warn);
            (p.id.as_str(), &p.figures, passed)
        })
        .collect();
    if phases.is_empty() {
        crate::eprintln_safe!(
            "burnin baseline: {} has no finished phase with figures; nothing saved",
            run_dir.display()
        );
        return Ok(1);
    }
    let b = gates::fleet_baseline(&phases, pct, &format!("the fleet of {}", run_dir.display()));
    if !write_baseline(&b, run_dir, to)? {
        return Ok(1);
    }
    let ids: Vec<&str> = phases.iter().map(|(id, _, _)| *id).collect();
    crate::println_safe!(
        "baseline {}: {} from the fleet of {} (a subject more than {pct} % worse than its group's mean left out)",
        to.display(),
        ids.join(", "),
        run_dir.display()
    );
    if let Some(o) = &b.fleet {
        let total = o.dropped.len() as u64 + o.dropped_more;
        crate::println_safe!("dropped: {total}");
        for d in &o.dropped {
            crate::println_safe!("  {}", d.describe());
        }
        if o.dropped_more > 0 {
            crate::println_safe!(
                "  … and {} more (the file lists the first {})",
                o.dropped_more,
                gates::DROPPED_NAMED
            );
        }
        if o.unusable > 0 {
            crate::println_safe!("left out as no number: {}", o.unusable);
        }
        for why in &o.left_out {
            crate::println_safe!("left out: {why}");
        }
    }
    Ok(0)
}

/// Write `b` to `to`, unless it holds a figure that can be no reference (said, naming the run):
/// whether it was written.
fn write_baseline(b: &Baseline, run_dir: &Path, to: &Path) -> Result<bool> {
    if let Some(why) = b.unusable() {
        crate::eprintln_safe!(
            "burnin baseline: {} holds no reference: {why}; nothing saved",
            run_dir.display()
        );
        return Ok(false);
    }
    let text = serde_json::to_string_pretty(b)?;
    // Written beside and renamed over; a `to` that is a link is refused, never written through.
    crate::record::files::write_replacing(to, (text + "\n").as_bytes())
        .map_err(|e| eyre!("{e}"))?;
    Ok(true)
}

/// `burnin baseline save RUN`: the figures of the run's passed (or warned) phases.
pub fn baseline_save(run_dir: &Path, to: &Path) -> Result<i32> {
    let s = crate::record::read_summary(run_dir).map_err(|e| eyre!("{e}"))?;
    let mut b = Baseline {
        schema: 1,
        fleet: None,
        source: run_dir.display().to_string(),
        phases: BTreeMap::new(),
    };
    let mut kept = Vec::new();
    for p in &s.phases {
        if matches!(p.verdict, Verdict::Pass | Verdict::Warn) && !p.figures.is_empty() {
            b.phases.insert(p.id.clone(), p.figures.clone());
            kept.push(p.id.as_str());
        }
    }
    if kept.is_empty() {
        crate::eprintln_safe!(
            "burnin baseline: {} has no passed phase with figures; nothing saved",
            run_dir.display()
        );
        return Ok(1);
    }
    if !write_baseline(&b, run_dir, to)? {
        return Ok(1);
    }
    crate::println_safe!(
        "baseline {}: {} from {}",
        to.display(),
        kept.join(", "),
        run_dir.display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_repeated_for_every_event_is_said_once_with_its_count() {
        let mut said = SaidOnce::default();
        let disk_full = "burnin run: record: events.jsonl: No space left on device (os error 28)";
        let other = "burnin run: record: logs/T1/n1.log: No space left on device (os error 28)";
        let mut lines = Vec::new();
        for _ in 0..85 {
            lines.extend(said.lines_for(disk_full));
            lines.extend(said.lines_for(other));
        }
        lines.extend(said.end_repeats());
        assert_eq!(
            lines,
            [
                disk_full.to_string(),
                other.to_string(),
                format!(
                    "  (said 84 more time(s): {})",
                    crate::model::fit(disk_full, 80)
                ),
                format!("  (said 84 more time(s): {})", crate::model::fit(other, 80)),
            ]
        );
        assert!(
            said.lines_for(disk_full).len() == 1,
            "the next phase says it anew"
        );
    }
}
