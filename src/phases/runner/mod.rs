//! Running one phase of the plan on the nodes: launch (remote scripts in [`super::remote`]),
//! stream each node's log through its parser while it runs, re-attach after a dropped link at
//! the last whole line, stop the process groups on abort or timeout, then judge with
//! [`crate::plan::gates`]. Everything the phase says goes out as [`PhaseEvent`]s; the caller (the
//! headless `burnin run`, or the console) decides what to do with them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::remote::{self, PhaseDir, RemoteState, StopReason};
use crate::config::inventory::NodeSpec;
use crate::model::phase::{PhaseEvent, PhaseMetric, Verdict};
use crate::parsers::{OutputParser, ParseContext};
use crate::plan::gates::{self, Baseline, Observed};
use crate::plan::{Gate, PhaseSpec, Plan, Scope, render};
use crate::transport::{RemoteCommand, Transport};

mod drill;
mod job;
mod node;
pub mod second_pass;
#[cfg(test)]
mod tests;
mod together;

use drill::drive_drill;
use job::{JobSetup, job_for, template_values};
pub use job::{shell_inert, skip_reason};
pub use node::{MAX_LINE_BYTES, NODE_METRICS_KEPT};
use node::{NodeJob, NodeResult, run_script};
use together::drive_together;

/// How long `pairs` servers get to listen before their clients call.
const PAIR_SETTLE: Duration = Duration::from_secs(2);

/// Time allowed for the short scripts (launch, status, stop) to answer.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// One node a phase can run on, and how to reach it.
#[derive(Clone)]
pub struct RunnerNode {
    /// The node as the inventory says.
    pub spec: NodeSpec,
    /// SSH, or local for `local`/`sim` nodes.
    pub transport: Arc<dyn Transport>,
}

/// What the runner needs for every phase of a run.
#[derive(Clone)]
pub struct RunContext {
    /// This run's id (a path component on the nodes).
    pub run_id: String,
    /// The plan.
    pub plan: Arc<Plan>,
    /// The nodes, in inventory order (the first is the launcher).
    pub nodes: Vec<RunnerNode>,
    /// Figures of a good run, if one was saved.
    pub baseline: Option<Arc<Baseline>>,
    /// The telemetry beside the run, if it is watched.
    pub telemetry: Option<Arc<dyn crate::model::watch::TelemetryWatch>>,
    /// Which attempt at the phase this is (1 = first; a retry gets its own directory on the
    /// node, `T4.2`).
    pub attempt: u32,
    /// Figures of the phases that passed or warned earlier in this run: a `together` phase
    /// compares its members with them.
    pub earlier: BTreeMap<String, gates::Figures>,
    /// What each node was found to be made of earlier in this run (T0's PCI IDs, else its
    /// telemetry's GPU names): the `spec` gates' floors come from it.
    pub parts: BTreeMap<String, crate::model::spec::NodeParts>,
    /// Counts the operator's confirmations (a drill's "done": `c` in the console, Enter on
    /// `burnin run`'s terminal); `None` where nobody can confirm.
    pub confirm: Option<watch::Receiver<u64>>,
}

impl RunContext {
    /// The phase's directory name on the nodes for this attempt.
    pub fn phase_component(&self, id: &str) -> String {
        if self.attempt > 1 {
            format!("{id}.{}", self.attempt)
        } else {
            id.to_string()
        }
    }
}

/// How a phase ended.
#[derive(Debug, Clone)]
pub struct PhaseOutcome {
    /// The judgement.
    pub verdict: Verdict,
    /// Why, with numbers.
    pub reason: String,
    /// Everything parsed from every node.
    pub metrics: Vec<PhaseMetric>,
    /// Telemetry findings (warn and worse) that came up while it ran.
    pub findings: Vec<String>,
}

use crate::model::now_ms;

/// The switch that stops a phase's process groups, with why: the operator's abort (the
/// console's `a`, SIGINT/SIGTERM of `burnin run`), or a drill done with its load.
pub type StopSwitch = watch::Receiver<Option<StopReason>>;

/// The words a node job says as it stops for `why`.
fn stop_words(why: StopReason) -> &'static str {
    match why {
        StopReason::Aborted => "abort: TERM to the process group, KILL after the grace period",
        StopReason::Finished => "the drill is done: stopping its load",
        StopReason::Timeout => "past its time limit: stopping the process group",
    }
}

/// Run `spec` on its nodes until it ends, is stopped (`stop` set) or times out.
/// Sends `Started`, the lines and metrics, and `Finished`; returns the same verdict.
pub async fn run_phase(
    ctx: &RunContext,
    spec: Arc<PhaseSpec>,
    stop: StopSwitch,
    events: mpsc::Sender<PhaseEvent>,
) -> PhaseOutcome {
    drive_phase(ctx, spec, stop, events, None).await
}

/// Re-attach to `spec`, launched by an earlier console of the same run and not finished in its
/// record; `recorded[node]` is how many output lines the record already holds for the node.
pub async fn reattach_phase(
    ctx: &RunContext,
    spec: Arc<PhaseSpec>,
    stop: StopSwitch,
    events: mpsc::Sender<PhaseEvent>,
    recorded: BTreeMap<String, usize>,
) -> PhaseOutcome {
    drive_phase(ctx, spec, stop, events, Some(recorded)).await
}

/// Which run of a spec the runner is making: the phase alone, or one member of a `together`
/// phase (its own directory on the nodes, its events under the group's id).
struct Part {
    /// The directory component on the nodes (before the attempt suffix).
    component: String,
    /// The phase id the events carry.
    event_phase: String,
    /// The member's id when it runs inside a group.
    member: Option<String>,
}

impl Part {
    fn alone(id: &str) -> Part {
        Part {
            component: id.to_string(),
            event_phase: id.to_string(),
            member: None,
        }
    }
}

/// What running a spec on its nodes left, before the gates.
struct Executed {
    /// It ended before there was anything to judge: skipped, could not start, stopped.
    early: Option<(Verdict, String)>,
    metrics: Vec<PhaseMetric>,
    observed: Observed,
    /// Nodes (or `pairs` servers) that could not run it, in words.
    failures: Vec<String>,
    /// Nodes whose telemetry speaks for it (an mpirun job reaches all of them).
    watched: Vec<String>,
}

impl Executed {
    fn early(verdict: Verdict, reason: String) -> Executed {
        Executed {
            early: Some((verdict, reason)),
            metrics: Vec::new(),
            observed: Observed::default(),
            failures: Vec::new(),
            watched: Vec::new(),
        }
    }
}

async fn drive_phase(
    ctx: &RunContext,
    spec: Arc<PhaseSpec>,
    stop: StopSwitch,
    events: mpsc::Sender<PhaseEvent>,
    recorded: Option<BTreeMap<String, usize>>,
) -> PhaseOutcome {
    let started = std::time::Instant::now();
    let started_ms = now_ms();
    if recorded.is_none() {
        let _ = events
            .send(PhaseEvent::Started {
                phase: spec.id.clone(),
                at_ms: now_ms(),
            })
            .await;
    }
    let finish = |verdict: Verdict, reason: String, metrics: Vec<PhaseMetric>| {
        let events = events.clone();
        let id = spec.id.clone();
        async move {
            let _ = events
                .send(PhaseEvent::Finished {
                    phase: id,
                    at_ms: now_ms(),
                    verdict,
                    reason: reason.clone(),
                })
                .await;
            PhaseOutcome {
                verdict,
                reason,
                metrics,
                findings: Vec::new(),
            }
        }
    };
    if spec.scope == Scope::Together {
        let (verdict, reason, metrics, found) =
            drive_together(ctx, &spec, stop, &events, recorded.as_ref(), started_ms).await;
        let secs = started.elapsed().as_secs();
        let mut outcome = finish(verdict, format!("{reason} ({secs} s)"), metrics).await;
        outcome.findings = found;
        return outcome;
    }
    if spec.drill.is_some() {
        let (verdict, reason, metrics, found) =
            drive_drill(ctx, &spec, stop, &events, recorded.as_ref(), started_ms).await;
        let secs = started.elapsed().as_secs();
        let mut outcome = finish(verdict, format!("{reason} ({secs} s)"), metrics).await;
        outcome.findings = found;
        return outcome;
    }
    let part = Part::alone(&spec.id);
    let stop_again = stop.clone();
    let mut ran = execute(ctx, &spec, &part, stop, &events, recorded.as_ref()).await;
    if let Some((verdict, reason)) = ran.early.take() {
        return finish(verdict, reason, ran.metrics).await;
    }
    ran.observed.telemetry = ctx
        .telemetry
        .as_ref()
        .map(|t| t.window(&ran.watched, started_ms, now_ms()));
    let found = found_in(&ran.observed);
    let (mut verdict, mut reason, mut gate_metrics) = verdict_of(ctx, &spec, &ran);
    // A ring blames pairs: each node of a slow pair again, beside a known-good node.
    if spec.scope == Scope::Pairs
        && let Some(pass) = second_pass::second_pass(ctx, &spec, stop_again, &events, &ran).await
    {
        if pass.named {
            verdict = Verdict::Fail;
        }
        for clause in pass.clauses {
            reason = format!("{reason}; {clause}");
        }
        gate_metrics.extend(pass.gates);
    }
    let secs = started.elapsed().as_secs();
    send_gate_outcomes(&events, &spec.id, gate_metrics, &mut ran.metrics).await;
    let mut outcome = finish(verdict, format!("{reason} ({secs} s)"), ran.metrics).await;
    outcome.findings = found;
    outcome
}

/// The telemetry findings of a phase's window, in words.
/// GPUs each node of the inventory should have, by name: for the gates that depend on it.
fn node_gpus(ctx: &RunContext) -> BTreeMap<String, u32> {
    ctx.nodes
        .iter()
        .map(|n| (n.spec.name.clone(), n.spec.gpus))
        .collect()
}

/// Each node's entries of the plan's spec table, from what the run found it made of.
pub(super) fn node_hardware(
    ctx: &RunContext,
) -> BTreeMap<String, crate::model::spec::NodeHardware> {
    ctx.parts
        .iter()
        .map(|(node, parts)| (node.clone(), ctx.plan.hardware.resolve(parts)))
        .collect()
}

fn found_in(observed: &Observed) -> Vec<String> {
    observed
        .telemetry
        .as_ref()
        .map(|t| t.findings.iter().map(|f| f.text.clone()).collect())
        .unwrap_or_default()
}

/// Send each gate's outcome ahead of the verdict, and keep it with the phase's metrics, so
/// the record says how each gate came out.
pub(super) async fn send_gate_outcomes(
    events: &mpsc::Sender<PhaseEvent>,
    phase: &str,
    gate_metrics: Vec<PhaseMetric>,
    metrics: &mut Vec<PhaseMetric>,
) {
    for metric in gate_metrics {
        let _ = events
            .send(PhaseEvent::Metric {
                phase: phase.to_string(),
                at_ms: now_ms(),
                metric: metric.clone(),
            })
            .await;
        metrics.push(metric);
    }
}

/// The gates' verdict on what ran, and each gate's outcome to send; nodes that could not run
/// it fail it.
fn verdict_of(
    ctx: &RunContext,
    spec: &PhaseSpec,
    ran: &Executed,
) -> (Verdict, String, Vec<PhaseMetric>) {
    let judged = gates::judge_gates(spec, &ran.metrics, &ran.observed, ctx.baseline.as_deref());
    let gate_metrics = judged.gate_metrics();
    if ran.failures.is_empty() {
        (judged.verdict, judged.reason, gate_metrics)
    } else if judged.reason == gates::NOTHING_FOUND {
        // "exit 0 everywhere" beside a node that did not: the failures alone.
        (Verdict::Fail, ran.failures.join("; "), gate_metrics)
    } else {
        (
            Verdict::Fail,
            format!("{}; {}", ran.failures.join("; "), judged.reason),
            gate_metrics,
        )
    }
}

/// Run `spec` on its nodes as `part` says, until it ends, is stopped or times out; the gates
/// are the caller's. An abort or timeout comes back early, with its reason.
async fn execute(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    part: &Part,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    recorded: Option<&BTreeMap<String, usize>>,
) -> Executed {
    let started = std::time::Instant::now();
    if let Some(why) = skip_reason(&ctx.plan, spec) {
        return Executed::early(Verdict::Skipped, why);
    }
    let targets: Vec<RunnerNode> = match spec.scope {
        Scope::EachNode | Scope::EachGpu | Scope::Pairs => ctx.nodes.clone(),
        Scope::Launcher | Scope::Mpirun => ctx.nodes.iter().take(1).cloned().collect(),
        Scope::Together => {
            return Executed::early(
                Verdict::Fail,
                format!("{} is a group of phases, not one to run on nodes", spec.id),
            );
        }
    };
    if targets.is_empty() {
        return Executed::early(Verdict::Skipped, "no nodes in the inventory".into());
    }
    let hostfile = if spec.scope == Scope::Mpirun {
        ctx.nodes
            .iter()
            .map(|n| format!("{} slots={}", n.spec.target, n.spec.gpus))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        String::new()
    };
    if spec.scope == Scope::Pairs && targets.len() < 2 {
        return Executed::early(
            Verdict::Skipped,
            "node pairs need two nodes in the inventory".into(),
        );
    }
    // In a ring, node i's client reaches node i+1's server.
    let peer_of = |i: usize, step: usize| {
        let n = ctx.nodes.len().max(1);
        ctx.nodes
            .get((i + step) % n)
            .map(|p| p.spec.target.clone())
            .unwrap_or_default()
    };
    let setup = JobSetup {
        ctx,
        spec,
        part,
        hostfile: &hostfile,
        events,
        recorded,
    };
    // Pairs: servers first, on every node, stopped when the clients are done.
    let (servers_stop, servers_switch) = watch::channel(None);
    let mut servers = tokio::task::JoinSet::new();
    if spec.scope == Scope::Pairs {
        let n = ctx.nodes.len();
        for (i, node) in targets.iter().enumerate() {
            // The server's peer is the client that will reach it: the node before it. Its
            // lines are `<node>-server`'s; its `{node}` is the node.
            let job = match job_for(
                &setup,
                node.clone(),
                Some("server"),
                &spec.server,
                &peer_of(i, n - 1),
                crate::parsers::ParserKind::None,
                servers_switch.clone(),
            ) {
                Ok(j) => j,
                Err(why) => return Executed::early(Verdict::Fail, why),
            };
            let name = job.label.clone();
            servers.spawn(async move { (name, job.run().await) });
        }
        // Let the servers listen before the clients call.
        tokio::time::sleep(PAIR_SETTLE).await;
    }
    let mut jobs = tokio::task::JoinSet::new();
    let mut order = Vec::new();
    for (i, node) in targets.into_iter().enumerate() {
        let job = match job_for(
            &setup,
            node,
            None,
            &spec.command,
            &peer_of(i, 1),
            spec.parser,
            stop.clone(),
        ) {
            Ok(j) => j,
            Err(why) => return Executed::early(Verdict::Fail, why),
        };
        let name = job.node.spec.name.clone();
        order.push(name.clone());
        jobs.spawn(async move { (name, job.run().await) });
    }
    // A stop reaches the servers too.
    let mut main_stop = stop.clone();
    let results_fut = async {
        let mut results: BTreeMap<String, NodeResult> = BTreeMap::new();
        while let Some(done) = jobs.join_next().await {
            if let Ok((name, r)) = done {
                results.insert(name, r);
            }
        }
        results
    };
    tokio::pin!(results_fut);
    let mut watching = true;
    let mut results = loop {
        tokio::select! {
            r = &mut results_fut => break r,
            changed = main_stop.changed(), if watching => match changed {
                Ok(()) if main_stop.borrow().is_some() => {
                    let _ = servers_stop.send(Some(StopReason::Aborted));
                    watching = false;
                }
                Ok(()) => {}
                Err(_) => watching = false,
            },
        }
    };
    // The clients are done: a server still waiting is stopped; a server that failed on its
    // own says so.
    let _ = servers_stop.send(Some(StopReason::Aborted));
    let server_failures = server_failures(&mut servers).await;
    let mut metrics = Vec::new();
    let mut observed = Observed {
        nodes: order.clone(),
        // One job across the inventory: every GPU of every node should be one of its ranks.
        expected_ranks: (spec.scope == Scope::Mpirun)
            .then(|| ctx.nodes.iter().map(|n| n.spec.gpus).sum()),
        node_gpus: node_gpus(ctx),
        hardware: node_hardware(ctx),
        ..Observed::default()
    };
    let mut failures = server_failures;
    let mut stopped: BTreeMap<StopReason, Vec<String>> = BTreeMap::new();
    for name in &order {
        let Some(r) = results.remove(name) else {
            failures.push(format!("{name}: the runner task ended early"));
            continue;
        };
        if let Some(f) = &r.failed {
            failures.push(format!("{name}: {f}"));
        }
        if r.stopped == Some(StopReason::Finished) {
            // A drill's load, stopped because the drill was done: no exit status to judge.
        } else if let Some(why) = r.stopped {
            stopped.entry(why).or_default().push(name.clone());
        } else if r.failed.is_none() {
            observed.exit.insert(name.clone(), r.exit);
        }
        for text in r.seen {
            observed.seen.entry(text).or_default().insert(name.clone());
        }
        observed.unparsed.0 += r.unparsed;
        if observed.unparsed.1.is_none() {
            observed.unparsed.1 = r.first_unparsed;
        }
        metrics.extend(r.metrics);
    }
    let early = stop_verdict(&stopped, started.elapsed(), ctx, spec);
    let watched: Vec<String> = match spec.scope {
        Scope::Mpirun => ctx.nodes.iter().map(|n| n.spec.name.clone()).collect(),
        _ => order.clone(),
    };
    Executed {
        early,
        metrics,
        observed,
        failures,
        watched,
    }
}

/// An aborted or timed-out phase's verdict, naming the nodes where its process group was
/// stopped; `None` when nothing was stopped for either.
fn stop_verdict(
    stopped: &BTreeMap<StopReason, Vec<String>>,
    ran_for: Duration,
    ctx: &RunContext,
    spec: &PhaseSpec,
) -> Option<(Verdict, String)> {
    if let Some(nodes) = stopped.get(&StopReason::Aborted) {
        Some((
            Verdict::Aborted,
            format!(
                "aborted by the operator after {} s; process group stopped (TERM, KILL after {} s) on {}",
                ran_for.as_secs(),
                ctx.plan.grace.as_secs(),
                nodes.join(", ")
            ),
        ))
    } else {
        stopped.get(&StopReason::Timeout).map(|nodes| {
            (
                Verdict::Timeout,
                format!(
                    "ran past its {} s limit on {}; process group stopped",
                    spec.timeout.as_secs(),
                    nodes.join(", ")
                ),
            )
        })
    }
}

/// The pair servers' own failures, once the clients are done (a server stopped by burnin is
/// none).
async fn server_failures(servers: &mut tokio::task::JoinSet<(String, NodeResult)>) -> Vec<String> {
    let mut server_failures = Vec::new();
    while let Some(done) = servers.join_next().await {
        if let Ok((name, r)) = done {
            if let Some(f) = r.failed {
                server_failures.push(format!("{name}: {f}"));
            } else if r.stopped.is_none() && r.exit.is_some_and(|c| c != 0) {
                server_failures.push(format!("{name} exited {}", r.exit.unwrap_or(0)));
            }
        }
    }
    server_failures
}
