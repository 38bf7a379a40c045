//! `burnin run --demo`: the simulated cluster's plan, headless, on the compressed clock, writing
//! a real run record (events, per-second telemetry, findings, summary) that `burnin report`
//! and `burnin replay` read like any other. Times in the record are simulated time, so the
//! record reads like the run it simulates. With `--speed N` it paces itself (N simulated
//! seconds per second), which is how a test kills it mid-phase.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use color_eyre::eyre::{Result, eyre};

use crate::config::inventory::Inventory;
use crate::model::SourceEvent;
use crate::model::phase::{PhaseEvent, PhaseMetric, Verdict};
use crate::phases::runner::PhaseOutcome;
use crate::plan::default_plan;
use crate::record::recording::TelemetryRecording;
use crate::record::session::{RunSession, severity};
use crate::sim::{
    SIM_EPOCH_MS, SIM_PERIOD_MS, SIMULATED_PHASES, SimCluster, SimConfig, nominal_baseline,
};
use crate::triage::telemetry_log::TelemetryLog;

/// A simulated run never goes on past this, whatever happens.
const MAX_SIMULATED_S: u64 = 4 * 3600;

/// Simulated seconds the run goes on after the last phase, so the record shows it settle.
const TAIL_S: u64 = 5;

/// What `burnin run --demo` was asked to do.
pub struct DemoRunArgs {
    /// The simulated cluster.
    pub config: SimConfig,
    /// Where run records go.
    pub runs_dir: std::path::PathBuf,
    /// Simulated seconds per wall second; 0 runs as fast as it can.
    pub speed: f64,
    /// Print the summary as JSON on stdout.
    pub json: bool,
}

/// The inventory of the simulated cluster, as the record names its nodes.
fn demo_inventory(config: &SimConfig) -> Result<Inventory> {
    let last = config.nodes.max(1);
    let text = format!(
        "[defaults]\nmode = \"sim\"\ngpus = {}\n[[node]]\nhost = \"node[01-{last:02}]\"\n",
        config.gpus_per_node
    );
    Inventory::parse("<demo cluster>", &text).map_err(|e| eyre!("{e}"))
}

/// `burnin run --demo`.
pub async fn run(args: DemoRunArgs) -> Result<i32> {
    let inventory = demo_inventory(&args.config)?;
    let plan = default_plan();
    // Its id from the simulated clock the record's dates come from, not the wall clock.
    let run_id = crate::record::session::run_id_at(SIM_EPOCH_MS);
    let mut session = RunSession::create(&args.runs_dir, &run_id, &inventory, plan, None)
        .map_err(|e| eyre!("run record: {e}"))?;
    // The simulator's phases are judged against its nominal figures: the record keeps that
    // baseline beside itself and names it, so the report says what "of baseline" meant.
    let baseline = session.dir().join("baseline.json");
    let nominal = serde_json::to_string_pretty(&nominal_baseline(&args.config))?;
    crate::record::files::write_replacing(&baseline, format!("{nominal}\n").as_bytes())
        .map_err(|e| eyre!("{}: {e}", baseline.display()))?;
    session.summary.baseline = Some(baseline.display().to_string());
    let clock = Arc::new(AtomicU64::new(SIM_EPOCH_MS));
    session
        .use_clock(Arc::clone(&clock))
        .map_err(|e| eyre!("{e}"))?;
    let mut recording = TelemetryRecording::new(&session).map_err(|e| eyre!("record: {e}"))?;
    let log = TelemetryLog::new(crate::sim::SIM_PERIOD);
    let nodes: Vec<String> = inventory.nodes.iter().map(|n| n.name.clone()).collect();
    crate::eprintln_safe!(
        "burnin run --demo: {} simulated nodes × {} GPUs, plan T1-T8 on the compressed clock, record in {}",
        args.config.nodes,
        args.config.gpus_per_node,
        session.dir().display()
    );

    let mut sim = SimCluster::new(args.config.clone());
    let started = std::time::Instant::now();
    let mut running: Option<(String, u64, Vec<PhaseMetric>)> = None;
    let mut finished = 0usize;
    let mut ended_at: Option<u64> = None;
    for s in 0..MAX_SIMULATED_S {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        if args.speed > 0.0 {
            let due = std::time::Duration::from_secs_f64(s as f64 / args.speed);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
        clock.store(at_ms, Ordering::SeqCst);
        for ev in sim.advance_to(at_ms) {
            match &ev {
                SourceEvent::Phase(pe) => {
                    session.event(pe).map_err(|e| eyre!("{e}"))?;
                    match pe {
                        PhaseEvent::Started { phase, at_ms } => {
                            running = Some((phase.clone(), *at_ms, Vec::new()));
                            if let Some(spec) = plan.find(phase) {
                                crate::eprintln_safe!("{phase:<4} {} ...", spec.title);
                            }
                        }
                        PhaseEvent::Prompt { .. } => {}
                        PhaseEvent::Metric { metric, .. } => {
                            if let Some((_, _, m)) = running.as_mut() {
                                m.push(metric.clone());
                            }
                        }
                        PhaseEvent::Finished {
                            phase,
                            at_ms,
                            verdict,
                            reason,
                        } => {
                            let (metrics, from) = match running.take() {
                                Some((id, from, m)) if id == *phase => (m, Some(from)),
                                _ => (Vec::new(), None),
                            };
                            crate::eprintln_safe!("{phase:<4} {:<8} {reason}", verdict.label());
                            let window = log.window(&nodes, from.unwrap_or(*at_ms), *at_ms);
                            let outcome = PhaseOutcome {
                                verdict: *verdict,
                                reason: reason.clone(),
                                metrics,
                                findings: window.findings.iter().map(|f| f.text.clone()).collect(),
                            };
                            if let Some(spec) = plan.find(phase) {
                                session
                                    .phase_done(spec, from, &outcome, Some(&log))
                                    .map_err(|e| eyre!("{e}"))?;
                            }
                            finished += 1;
                        }
                        PhaseEvent::Line { .. } | PhaseEvent::Note { .. } => {}
                    }
                }
                other => {
                    let found = log.observe_at(other, at_ms);
                    recording
                        .observe(other, at_ms, found.as_deref())
                        .map_err(|e| eyre!("record: {e}"))?;
                }
            }
        }
        if finished >= SIMULATED_PHASES.len() && ended_at.is_none() {
            ended_at = Some(s);
        }
        if ended_at.is_some_and(|e| s >= e + TAIL_S) {
            break;
        }
    }
    recording.finish().map_err(|e| eyre!("record: {e}"))?;
    // Plan phases the simulator does not play are recorded as such, not left out.
    for spec in &plan.phases {
        if !session.summary.phases.iter().any(|p| p.id == spec.id) {
            let outcome = PhaseOutcome {
                verdict: Verdict::Skipped,
                reason: "not simulated: the demo plays T1-T8".into(),
                metrics: Vec::new(),
                findings: Vec::new(),
            };
            session
                .phase_done(spec, None, &outcome, Some(&log))
                .map_err(|e| eyre!("{e}"))?;
        }
    }
    let worst = session.worst();
    session.finish(false).map_err(|e| eyre!("{e}"))?;
    crate::eprintln_safe!(
        "burnin run --demo: {} ; record {}",
        session.summary.verdict.map_or("?", Verdict::label),
        session.dir().display()
    );
    if args.json {
        crate::println_safe!("{}", serde_json::to_string_pretty(&session.summary)?);
    }
    Ok(if severity(worst) >= 2 { 1 } else { 0 })
}
