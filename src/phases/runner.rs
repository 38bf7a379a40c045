//! Running one phase of the plan on the nodes: launch (remote scripts in [`super::remote`]),
//! stream each node's log through its parser while it runs, re-attach after a dropped link at
//! the last whole line, stop the process groups on abort or timeout, then judge with
//! [`super::gates`]. Everything the phase says goes out as [`PhaseEvent`]s; the caller (the
//! headless `burnin run`, or the console) decides what to do with them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::remote::{self, PhaseDir, RemoteState, StopReason};
use super::{PhaseEvent, PhaseMetric, Verdict};
use crate::config::inventory::NodeSpec;
use crate::parsers::{OutputParser, ParseContext};
use crate::plan::gates::{self, Baseline, Observed};
use crate::plan::{Gate, PhaseSpec, Plan, Scope, render};
use crate::transport::{RemoteCommand, Transport};

/// Longest line kept from a log; the rest of a longer line is dropped (and counted).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

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

/// Run a short script to completion: (exit code, stdout, stderr), or the transport's reason.
async fn run_script(
    t: &dyn Transport,
    cmd: &RemoteCommand,
) -> Result<(Option<i32>, String, String), String> {
    let child = t
        .command(cmd)
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    match tokio::time::timeout(SCRIPT_TIMEOUT, crate::transport::wait_bounded(child)).await {
        Err(_) => Err(format!("no answer in {} s", SCRIPT_TIMEOUT.as_secs())),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(out)) => {
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                Ok((out.status.code(), stdout, stderr))
            } else {
                Err(t.classify(Some(out.status), &stderr))
            }
        }
    }
}

/// Read one line of at most [`MAX_LINE_BYTES`] (the rest of a longer line is consumed and
/// dropped). Returns bytes consumed (0 at end of stream) and whether a newline ended it.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    out: &mut Vec<u8>,
) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok((consumed, false));
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(out.len());
        out.extend_from_slice(&buf[..take.min(room)]);
        r.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, true));
        }
    }
}

/// Metrics one node's run of a phase keeps for the gates: a 72-hour training log steps about
/// 260 000 times; a node printing figures at line rate must not take the console's memory.
pub const NODE_METRICS_KEPT: usize = 100_000;

/// Keep `m`; at [`NODE_METRICS_KEPT`], the older half of the training steps goes (the gates
/// read steps by their recent median), else the new metric is not kept: the first figures of
/// a phase are the ones a flood cannot forge afterwards.
fn keep_metric(kept: &mut Vec<PhaseMetric>, m: PhaseMetric) {
    if kept.len() >= NODE_METRICS_KEPT {
        let steps = kept
            .iter()
            .filter(|x| matches!(x, PhaseMetric::Step { .. }))
            .count();
        if steps < 2 {
            return;
        }
        let mut drop = steps / 2;
        kept.retain(|x| {
            if drop > 0 && matches!(x, PhaseMetric::Step { .. }) {
                drop -= 1;
                false
            } else {
                true
            }
        });
    }
    kept.push(m);
}

/// Whatever one node's run of a phase left behind.
#[derive(Debug, Default)]
struct NodeResult {
    exit: Option<i32>,
    stopped: Option<StopReason>,
    metrics: Vec<PhaseMetric>,
    seen: BTreeSet<String>,
    unparsed: u64,
    first_unparsed: Option<String>,
    /// Why it could not run at all.
    failed: Option<String>,
}

struct NodeJob {
    phase: Arc<PhaseSpec>,
    /// The phase id its events carry (a `together` phase's members speak as the group).
    event_phase: String,
    /// The node as its lines and notes name it (`T7@node01` for a member of a group).
    label: String,
    node: RunnerNode,
    dir: PhaseDir,
    command: String,
    hostfile: String,
    grace_s: u64,
    events: mpsc::Sender<PhaseEvent>,
    /// Set when the job must stop: the operator aborted, or a drill is done with its load.
    stop: StopSwitch,
    /// Re-attaching to a phase launched by an earlier console: how many of its output lines
    /// the record already holds (they are parsed again, not sent again).
    reattach: Option<usize>,
    /// Output lines seen so far.
    lines_seen: usize,
    /// Which parser reads this job's output (a `pairs` server's is not read for figures).
    parser: crate::parsers::ParserKind,
}

impl NodeJob {
    async fn say(&self, text: String) {
        let _ = self
            .events
            .send(PhaseEvent::Note {
                phase: self.event_phase.clone(),
                at_ms: now_ms(),
                node: Some(self.label.clone()),
                text,
            })
            .await;
    }

    async fn run(mut self) -> NodeResult {
        let mut result = NodeResult::default();
        let t = Arc::clone(&self.node.transport);
        let mut deadline = Instant::now() + self.phase.timeout;
        if self.reattach.is_some() {
            // It was launched before: it must still be there, and its time limit counts from
            // when it started on the node.
            match run_script(t.as_ref(), &remote::status(&self.dir)).await {
                Ok((_, out, _)) => match remote::parse_status(out.trim()) {
                    Some(remote::Status {
                        state: RemoteState::Missing,
                        ..
                    })
                    | None => {
                        result.failed = Some(format!(
                            "nothing to re-attach to on {}: {}",
                            self.node.spec.name,
                            out.trim()
                        ));
                        return result;
                    }
                    Some(st) => {
                        let ran_s = st
                            .started_s
                            .map_or(0, |s0| (now_ms() / 1000).saturating_sub(s0));
                        deadline = Instant::now()
                            + self
                                .phase
                                .timeout
                                .saturating_sub(Duration::from_secs(ran_s));
                        self.say(format!(
                            "re-attached after a console restart; it has run {ran_s} s"
                        ))
                        .await;
                    }
                },
                Err(why) => {
                    result.failed = Some(format!(
                        "cannot re-attach on {}: {why}",
                        self.node.spec.name
                    ));
                    return result;
                }
            }
        } else {
            let files = crate::workloads::referenced_by(&self.command);
            let launch = remote::launch(&self.dir, &self.command, &self.hostfile, &files);
            match run_script(t.as_ref(), &launch).await {
                Ok((_, out, _)) => self.say(out.trim().to_string()).await,
                Err(why) => {
                    self.say(format!("could not launch: {why}")).await;
                    result.failed = Some(format!(
                        "could not launch on {}: {why}",
                        self.node.spec.name
                    ));
                    return result;
                }
            }
        }
        let contains: Vec<String> = self
            .phase
            .gates
            .iter()
            .flat_map(Gate::output_texts)
            .collect();
        let mut parser = OutputParser::new(
            self.parser,
            ParseContext {
                node: self.node.spec.name.clone(),
                expected_gpus: self.node.spec.gpus,
            },
        );
        let mut offset: u64 = 0;
        let mut stop_task: Option<tokio::task::JoinHandle<()>> = None;
        let mut stop_live = true;
        let mut backoff = Duration::from_millis(500);
        let mut line = Vec::new();
        'attach: loop {
            let mut child = match t.command(&remote::attach(&self.dir, offset)).spawn() {
                Ok(c) => c,
                Err(e) => {
                    result.failed = Some(format!("cannot start the transport: {e}"));
                    break;
                }
            };
            let Some(stdout) = child.stdout.take() else {
                break;
            };
            let stderr = child.stderr.take();
            // Its last bytes only: the node may say anything on stderr for the whole phase.
            let stderr_task = tokio::spawn(async move {
                match stderr {
                    Some(e) => {
                        crate::transport::read_bounded(e, crate::transport::OUTPUT_KEPT_BYTES, true)
                            .await
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default()
                    }
                    None => String::new(),
                }
            });
            let mut reader = BufReader::new(stdout);
            loop {
                line.clear();
                tokio::select! {
                    read = read_line_capped(&mut reader, &mut line) => {
                        let Ok((n, complete)) = read else { break };
                        if n == 0 {
                            break;
                        }
                        if !complete {
                            // A last line without a newline: kept only if the phase has ended
                            // (decided below); a dropped link re-reads it.
                            let status = child.wait().await.ok();
                            if status.is_some_and(|s| s.success()) {
                                offset += n as u64;
                                self.line(&line, &mut parser, &mut result, &contains).await;
                            }
                            break;
                        }
                        offset += n as u64;
                        self.line(&line, &mut parser, &mut result, &contains).await;
                    }
                    _ = tokio::time::sleep_until(deadline), if stop_task.is_none() => {
                        self.say(format!("ran past its {} s limit: stopping the process group", self.phase.timeout.as_secs())).await;
                        stop_task = Some(self.spawn_stop(StopReason::Timeout));
                    }
                    changed = self.stop.changed(), if stop_task.is_none() && stop_live => {
                        match changed {
                            Ok(()) => {
                                let why = *self.stop.borrow();
                                if let Some(why) = why {
                                    self.say(stop_words(why).into()).await;
                                    stop_task = Some(self.spawn_stop(why));
                                }
                            }
                            // Nobody can stop it any more: stop asking.
                            Err(_) => stop_live = false,
                        }
                    }
                }
            }
            let status = child.wait().await.ok();
            let stderr = stderr_task.await.unwrap_or_default();
            match status.and_then(|s| s.code()) {
                Some(0) => break 'attach,
                Some(c @ 90..=94) => {
                    let why = stderr.lines().last().unwrap_or("").trim().to_string();
                    result.failed = Some(format!(
                        "attach failed ({c}): {}",
                        crate::model::excerpt(&why)
                    ));
                    break 'attach;
                }
                _ => {
                    let why = t.classify(status, &stderr);
                    self.say(format!(
                        "lost the log stream ({why}); re-attaching at byte {offset} in {:.1} s",
                        backoff.as_secs_f64()
                    ))
                    .await;
                    // The phase keeps running on the node; abort and timeout still count.
                    let wait = tokio::time::sleep(backoff);
                    tokio::pin!(wait);
                    loop {
                        tokio::select! {
                            _ = &mut wait => break,
                            _ = tokio::time::sleep_until(deadline), if stop_task.is_none() => {
                                stop_task = Some(self.spawn_stop(StopReason::Timeout));
                            }
                            changed = self.stop.changed(), if stop_task.is_none() && stop_live => {
                                match changed {
                                    Ok(()) => {
                                        let why = *self.stop.borrow();
                                        if let Some(why) = why {
                                            stop_task = Some(self.spawn_stop(why));
                                        }
                                    }
                                    Err(_) => stop_live = false,
                                }
                            }
                        }
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
        if let Some(task) = stop_task {
            let _ = task.await;
        }
        // What the parser can only say at the end (T0/T1's checks, a table's last figures)
        // goes out like the rest: the console's checklist and the record need it.
        let at_ms = now_ms();
        for m in parser.finish() {
            self.metric(at_ms, m, &mut result).await;
        }
        // What the node says now decides the exit status.
        for attempt in 0..5u32 {
            match run_script(t.as_ref(), &remote::status(&self.dir)).await {
                Ok((_, out, _)) => match remote::parse_status(out.trim()) {
                    Some(s) => {
                        result.stopped = s.stopped;
                        match s.state {
                            RemoteState::Exited(rc) => result.exit = Some(rc),
                            RemoteState::Ended => result.exit = None,
                            RemoteState::Running => {
                                result.failed.get_or_insert_with(|| {
                                    "the log ended but the phase still runs".into()
                                });
                            }
                            RemoteState::Missing => {
                                result.failed.get_or_insert_with(|| {
                                    "the phase directory is gone from the node".into()
                                });
                            }
                        }
                        break;
                    }
                    None => {
                        result.failed = Some(format!("status script said {:?}", out.trim()));
                        break;
                    }
                },
                Err(why) if attempt == 4 => {
                    result.failed = Some(format!("no status from the node: {why}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1 << attempt)).await,
            }
        }
        result
    }

    /// A parsed figure: sent to the console and the record, and kept for the gates.
    async fn metric(&self, at_ms: u64, m: PhaseMetric, result: &mut NodeResult) {
        let _ = self
            .events
            .send(PhaseEvent::Metric {
                phase: self.event_phase.clone(),
                at_ms,
                metric: m.clone(),
            })
            .await;
        keep_metric(&mut result.metrics, m);
    }

    fn spawn_stop(&self, why: StopReason) -> tokio::task::JoinHandle<()> {
        let t = Arc::clone(&self.node.transport);
        let cmd = remote::stop(&self.dir, self.grace_s, why);
        let events = self.events.clone();
        let phase = self.event_phase.clone();
        let node = self.label.clone();
        tokio::spawn(async move {
            // A stop must get through: retry while the link is down.
            for attempt in 0..10u32 {
                match run_script(t.as_ref(), &cmd).await {
                    Ok((_, out, _)) => {
                        let _ = events
                            .send(PhaseEvent::Note {
                                phase: phase.clone(),
                                at_ms: now_ms(),
                                node: Some(node.clone()),
                                text: format!("stop: {}", out.trim()),
                            })
                            .await;
                        return;
                    }
                    Err(_) => {
                        tokio::time::sleep(Duration::from_secs((1u64 << attempt).min(10))).await
                    }
                }
            }
        })
    }

    /// One whole line of the node's log: shown, searched for the gates' texts, parsed.
    async fn line(
        &mut self,
        raw: &[u8],
        parser: &mut OutputParser,
        result: &mut NodeResult,
        contains: &[String],
    ) {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches(['\n', '\r']);
        for c in contains {
            if text.contains(c.as_str()) {
                result.seen.insert(c.clone());
            }
        }
        let at_ms = now_ms();
        self.lines_seen += 1;
        // On re-attach the record already has the first lines: parse them, do not send them.
        if self.reattach.is_none_or(|known| self.lines_seen > known) {
            let _ = self
                .events
                .send(PhaseEvent::Line {
                    phase: self.event_phase.clone(),
                    at_ms,
                    node: Some(self.label.clone()),
                    text: text.to_string(),
                })
                .await;
        }
        match parser.push(text) {
            Ok(metrics) => {
                for m in metrics {
                    self.metric(at_ms, m, result).await;
                }
            }
            Err(e) => {
                result.unparsed += 1;
                result
                    .first_unparsed
                    .get_or_insert_with(|| format!("{}: {e}", self.node.spec.name));
            }
        }
    }
}

/// What every node job of one phase shares.
struct JobSetup<'a> {
    ctx: &'a RunContext,
    spec: &'a Arc<PhaseSpec>,
    /// Which run of the spec this is: alone, or a member of a group.
    part: &'a Part,
    hostfile: &'a str,
    events: &'a mpsc::Sender<PhaseEvent>,
    recorded: Option<&'a BTreeMap<String, usize>>,
}

/// The job that runs `template` on `node` (its name is also its directory on the node).
fn job_for(
    setup: &JobSetup<'_>,
    node: RunnerNode,
    template: &str,
    peer: &str,
    parser: crate::parsers::ParserKind,
    stop: StopSwitch,
) -> Result<NodeJob, String> {
    let ctx = setup.ctx;
    let name = node.spec.name.clone();
    let dir = PhaseDir::new(
        &ctx.plan.remote_dir,
        &ctx.run_id,
        &ctx.phase_component(&setup.part.component),
        &name,
    )
    .ok_or_else(|| {
        format!(
            "node name {name:?} or run id {:?} cannot be a directory name on the node",
            ctx.run_id
        )
    })?;
    let values = template_values(ctx, &node, &dir, peer)?;
    let mut command = render(template, &values).map_err(|e| format!("command template: {e}"))?;
    let mut node = node;
    if setup.spec.launcher == crate::plan::Launcher::Kubernetes {
        // The Job runs the command in a pod; this host runs the script that applies the Job,
        // follows its log and deletes it when the phase is stopped.
        let Some(kube) = &ctx.plan.kubernetes else {
            return Err("launcher \"kubernetes\" without [kubernetes] in the plan".into());
        };
        let mut pod_values = values;
        pod_values.insert("workloads".into(), super::kubernetes::POD_WORKLOADS.into());
        pod_values.insert("dir".into(), super::kubernetes::POD_DIR.into());
        let pod_command =
            render(template, &pod_values).map_err(|e| format!("command template: {e}"))?;
        let files = crate::workloads::referenced_by(&pod_command);
        let host = node
            .spec
            .target
            .rsplit_once('@')
            .map_or(node.spec.target.as_str(), |(_, h)| h);
        let component = ctx.phase_component(&setup.part.component);
        command = super::kubernetes::script(
            kube,
            &super::kubernetes::JobRequest {
                run: &ctx.run_id,
                phase: &component,
                node: host,
                gpus: node.spec.gpus,
                command: &pod_command,
                timeout_s: setup.spec.timeout.as_secs(),
                files: &files,
            },
        );
        node.transport = Arc::new(crate::transport::local::LocalTransport);
    }
    let label = match &setup.part.member {
        Some(m) => format!("{m}@{name}"),
        None => name.clone(),
    };
    Ok(NodeJob {
        phase: Arc::clone(setup.spec),
        event_phase: setup.part.event_phase.clone(),
        node,
        dir,
        command,
        hostfile: setup.hostfile.to_string(),
        grace_s: ctx.plan.grace.as_secs(),
        events: setup.events.clone(),
        stop,
        reattach: setup.recorded.map(|r| r.get(&label).copied().unwrap_or(0)),
        label,
        lines_seen: 0,
        parser,
    })
}

/// The burnin binary a command on this node runs: the deployed agent over SSH, this very
/// binary for `local` and `sim` nodes.
fn burnin_on(spec: &NodeSpec) -> String {
    use crate::config::inventory::Mode;
    match spec.mode {
        Mode::Agent | Mode::Smi | Mode::Prometheus => {
            crate::transport::quote::quote_program(&spec.agent_path)
        }
        Mode::Local | Mode::Sim => std::env::current_exe().map_or_else(
            |_| "burnin".into(),
            |p| crate::transport::quote::quote_program(&p.to_string_lossy()),
        ),
    }
}

/// Whether `value` means the same to a shell unquoted, in double quotes and in single quotes:
/// letters, digits and `._-@:%,+=/` only. Names and ids reach commands through placeholders
/// (`{node}`, `{hosts}`, `{run}`, …) wherever the plan's author put them, so they are held to
/// this rather than quoted for one of those places.
pub fn shell_inert(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@:%,+=/".contains(c))
}

/// The values every template may use, for `node` in this run; an error when a name or id
/// would carry shell syntax into the command (the inventory refuses such names; a run id
/// comes from a record that may not be ours).
fn template_values(
    ctx: &RunContext,
    node: &RunnerNode,
    dir: &PhaseDir,
    peer: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut v: BTreeMap<String, String> = ctx.plan.vars.clone();
    // Vars may use placeholders themselves (e.g. a container mount of {workloads}).
    let hosts: Vec<&str> = ctx.nodes.iter().map(|n| n.spec.target.as_str()).collect();
    let slots: Vec<String> = ctx
        .nodes
        .iter()
        .map(|n| format!("{}:{}", n.spec.target, n.spec.gpus))
        .collect();
    let np: u32 = ctx.nodes.iter().map(|n| n.spec.gpus).sum();
    // Slurm names nodes without a login user: `root@gpu07` is gpu07 to `srun --nodelist`.
    let nodelist: Vec<&str> = hosts
        .iter()
        .map(|h| h.rsplit_once('@').map_or(*h, |(_, host)| host))
        .collect();
    let shell_dir = PhaseDir::shell_path(&dir.dir);
    let builtins = [
        ("node", node.spec.name.clone()),
        ("gpus", node.spec.gpus.to_string()),
        ("run", ctx.run_id.clone()),
        ("dir", shell_dir.clone()),
        ("workloads", PhaseDir::shell_path(&dir.workloads)),
        ("hosts", hosts.join(",")),
        ("hosts_slots", slots.join(",")),
        ("np", np.to_string()),
        ("nnodes", ctx.nodes.len().to_string()),
        ("nodelist", nodelist.join(",")),
        ("hostfile", format!("{shell_dir}/hostfile")),
        ("peer", peer.to_string()),
        ("burnin", burnin_on(&node.spec)),
    ];
    for (key, val) in &builtins {
        let checked = matches!(
            *key,
            "node"
                | "gpus"
                | "run"
                | "hosts"
                | "hosts_slots"
                | "np"
                | "nnodes"
                | "nodelist"
                | "peer"
        );
        if checked && !shell_inert(val) {
            return Err(format!(
                "{{{key}}} would be {:?}: a name that is not letters, digits and ._-@:%,+=/ never reaches a shell",
                crate::model::strip_controls(val)
            ));
        }
    }
    let builtin_map: BTreeMap<String, String> = builtins
        .iter()
        .map(|(k, val)| (k.to_string(), val.clone()))
        .collect();
    for val in v.values_mut() {
        if let Ok(r) = render(val, &builtin_map) {
            *val = r;
        }
    }
    v.extend(builtin_map);
    Ok(v)
}

/// Why a phase cannot start at all (`SKIPPED`), if it cannot.
pub fn skip_reason(plan: &Plan, spec: &PhaseSpec) -> Option<String> {
    if spec.command.is_empty() {
        return Some(format!(
            "no command in the plan ({}): put the site's job for {} there",
            plan.file, spec.id
        ));
    }
    let empty: Vec<&str> = spec
        .requires
        .iter()
        .filter(|r| plan.vars.get(*r).is_none_or(|v| v.trim().is_empty()))
        .map(String::as_str)
        .collect();
    if !empty.is_empty() {
        return Some(format!(
            "needs [vars] {} set in {}",
            empty.join(", "),
            plan.file
        ));
    }
    None
}

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
    let mut ran = execute(ctx, &spec, &part, stop, &events, recorded.as_ref()).await;
    let secs = started.elapsed().as_secs();
    if let Some((verdict, reason)) = ran.early.take() {
        return finish(verdict, reason, ran.metrics).await;
    }
    ran.observed.telemetry = ctx
        .telemetry
        .as_ref()
        .map(|t| t.window(&ran.watched, started_ms, now_ms()));
    let found = found_in(&ran.observed);
    let (verdict, reason) = verdict_of(ctx, &spec, &ran);
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

fn found_in(observed: &Observed) -> Vec<String> {
    observed
        .telemetry
        .as_ref()
        .map(|t| t.findings.iter().map(|f| f.text.clone()).collect())
        .unwrap_or_default()
}

/// The gates' verdict on what ran; nodes that could not run it fail it.
fn verdict_of(ctx: &RunContext, spec: &PhaseSpec, ran: &Executed) -> (Verdict, String) {
    let (verdict, reason) =
        gates::judge(spec, &ran.metrics, &ran.observed, ctx.baseline.as_deref());
    if ran.failures.is_empty() {
        (verdict, reason)
    } else {
        (
            Verdict::Fail,
            format!("{}; {reason}", ran.failures.join("; ")),
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
            let mut server_node = node.clone();
            server_node.spec.name = format!("{}-server", node.spec.name);
            // The server's peer is the client that will reach it: the node before it.
            let job = match job_for(
                &setup,
                server_node,
                &spec.server,
                &peer_of(i, n - 1),
                crate::parsers::ParserKind::None,
                servers_switch.clone(),
            ) {
                Ok(j) => j,
                Err(why) => return Executed::early(Verdict::Fail, why),
            };
            let name = job.node.spec.name.clone();
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
    let mut metrics = Vec::new();
    let mut observed = Observed {
        nodes: order.clone(),
        // One job across the inventory: every GPU of every node should be one of its ranks.
        expected_ranks: (spec.scope == Scope::Mpirun)
            .then(|| ctx.nodes.iter().map(|n| n.spec.gpus).sum()),
        node_gpus: node_gpus(ctx),
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
    let early = if let Some(nodes) = stopped.get(&StopReason::Aborted) {
        Some((
            Verdict::Aborted,
            format!(
                "aborted by the operator after {} s; process group stopped (TERM, KILL after {} s) on {}",
                started.elapsed().as_secs(),
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
    };
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

/// A `together` phase: its members launched at once, each on its nodes as it would run
/// alone (its own directory, parser and time limit), their events under the group's id;
/// then each member's figures beside its run alone earlier in this run. Members keep their
/// gates that read no figure (exit status, #wrong, NET/IB, loss, Xid); their figures are
/// judged by the group's `together` gates instead.
async fn drive_together(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    recorded: Option<&BTreeMap<String, usize>>,
    started_ms: u64,
) -> (Verdict, String, Vec<PhaseMetric>, Vec<String>) {
    let mut members: Vec<Arc<PhaseSpec>> = Vec::new();
    for id in &spec.together {
        let Some(m) = ctx.plan.find(id) else {
            return (
                Verdict::Fail,
                format!("{id} is not in the plan"),
                Vec::new(),
                Vec::new(),
            );
        };
        if let Some(why) = skip_reason(&ctx.plan, m) {
            return (
                Verdict::Skipped,
                format!("{id}: {why}"),
                Vec::new(),
                Vec::new(),
            );
        }
        if !ctx.earlier.contains_key(id) {
            return (
                Verdict::Skipped,
                format!(
                    "{id} has not passed alone in this run, and its figures alone are what this compares with: run {id} first"
                ),
                Vec::new(),
                Vec::new(),
            );
        }
        let mut own = (**m).clone();
        own.gates.retain(|g| !g.reads_figures());
        members.push(Arc::new(own));
    }
    let mut set = tokio::task::JoinSet::new();
    for (i, m) in members.iter().enumerate() {
        let ctx = ctx.clone();
        let m = Arc::clone(m);
        let part = Part {
            component: format!("{}-{}", spec.id, m.id),
            event_phase: spec.id.clone(),
            member: Some(m.id.clone()),
        };
        let stop = stop.clone();
        let events = events.clone();
        let recorded = recorded.cloned();
        set.spawn(async move {
            let ran = execute(&ctx, &m, &part, stop, &events, recorded.as_ref()).await;
            (i, ran)
        });
    }
    let mut runs: Vec<Option<Executed>> = members.iter().map(|_| None).collect();
    while let Some(done) = set.join_next().await {
        if let Ok((i, ran)) = done
            && let Some(slot) = runs.get_mut(i)
        {
            *slot = Some(ran);
        }
    }
    let ended_ms = now_ms();
    let mut watched: BTreeSet<String> = BTreeSet::new();
    let mut stopped: Vec<(Verdict, String)> = Vec::new();
    for (m, ran) in members.iter().zip(&mut runs) {
        match ran {
            None => stopped.push((Verdict::Fail, format!("{}: its runner task died", m.id))),
            Some(r) => {
                if let Some((v, why)) = r.early.take() {
                    stopped.push((v, format!("{}: {why}", m.id)));
                }
                watched.extend(r.watched.iter().cloned());
            }
        }
    }
    let mut metrics: Vec<PhaseMetric> = Vec::new();
    if let Some(v) = [
        Verdict::Aborted,
        Verdict::Timeout,
        Verdict::Fail,
        Verdict::Skipped,
    ]
    .into_iter()
    .find(|v| stopped.iter().any(|s| s.0 == *v))
    {
        for r in runs.iter_mut().flatten() {
            metrics.append(&mut r.metrics);
        }
        let reason = stopped
            .iter()
            .map(|s| s.1.clone())
            .collect::<Vec<_>>()
            .join("; ");
        return (v, reason, metrics, Vec::new());
    }
    let watched: Vec<String> = watched.into_iter().collect();
    let window = ctx
        .telemetry
        .as_ref()
        .map(|t| t.window(&watched, started_ms, ended_ms));
    let mut observed = Observed {
        nodes: watched.clone(),
        telemetry: window.clone(),
        node_gpus: node_gpus(ctx),
        ..Observed::default()
    };
    // Figures compared: those the gates read and those the plan asks to see; every figure
    // both runs have when the plan names none.
    let mut wanted: Vec<String> = spec
        .gates
        .iter()
        .filter_map(|g| match g {
            Gate::Together { figure, .. } => Some(figure.clone()),
            _ => None,
        })
        .collect();
    wanted.extend(spec.compare.iter().cloned());
    for (m, ran) in members.iter().zip(runs.iter_mut()) {
        let Some(ran) = ran else { continue };
        ran.observed.telemetry = window.clone();
        let (verdict, reason) = verdict_of(ctx, m, ran);
        observed.members.push((m.id.clone(), verdict, reason));
        if let Some(alone) = ctx.earlier.get(&m.id) {
            let together = gates::figures(&ran.metrics);
            observed
                .changes
                .extend(gates::compare(&m.id, alone, &together, &wanted));
        }
        metrics.append(&mut ran.metrics);
    }
    let at_ms = now_ms();
    for change in &observed.changes {
        let metric = PhaseMetric::Together {
            change: change.clone(),
        };
        let _ = events
            .send(PhaseEvent::Metric {
                phase: spec.id.clone(),
                at_ms,
                metric: metric.clone(),
            })
            .await;
        metrics.push(metric);
    }
    let found = found_in(&observed);
    let (verdict, reason) = gates::judge(spec, &metrics, &observed, ctx.baseline.as_deref());
    (verdict, reason, metrics, found)
}

/// Why a drill that asks the operator cannot go on where nobody can answer.
const NOBODY_CONFIRMS: &str = "nobody can confirm it here (burnin run reads Enter from its stdin, and that is closed): run the drill from a terminal or the console";

/// The operator's next confirmation; `false` when nobody can confirm any more.
async fn next_confirm(c: &mut Option<watch::Receiver<u64>>) -> bool {
    match c {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// An operator drill: the phase's load runs (until stopped) while [`DrillTracker`] learns each
/// watched series' steady level, asks the operator each step (a `Prompt` event), and times
/// the recovery after each confirmation; when the last step is done the load is stopped
/// (`finished`, not aborted). A step whose series did not recover within its limit, a load
/// that ended by itself before the drill did, or a load that never showed a watched series
/// fails the drill; the load's gates judge the rest.
async fn drive_drill(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    recorded: Option<&BTreeMap<String, usize>>,
    started_ms: u64,
) -> (Verdict, String, Vec<PhaseMetric>, Vec<String>) {
    use crate::plan::drill::{DrillAction, DrillTracker, sample_of};
    let Some(drill) = spec.drill.clone() else {
        return (
            Verdict::Fail,
            "no drill in the plan".into(),
            Vec::new(),
            Vec::new(),
        );
    };
    let steps = drill.steps.len();
    let mut tracker = DrillTracker::new(drill, now_ms());
    let (tap_tx, mut tap_rx) = mpsc::channel::<PhaseEvent>(1024);
    // The load's own switch: the operator's abort passes through it, and the drill sets it
    // (finished) when it is done.
    let (load_tx, load_rx) = watch::channel(None);
    let mut operator = stop;
    let mut operator_live = true;
    let mut confirm = ctx.confirm.clone();
    // Confirmations from before this drill started are not for it.
    if let Some(c) = confirm.as_mut() {
        c.borrow_and_update();
    }
    let mut outcomes: Vec<crate::plan::drill::SeriesOutcome> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut done = false;
    let mut excused: Vec<(String, String, bool)> = Vec::new();
    let part = Part::alone(&spec.id);
    let say = |text: String| PhaseEvent::Note {
        phase: spec.id.clone(),
        at_ms: now_ms(),
        node: None,
        text,
    };
    let mut ran = {
        let exec = execute(ctx, spec, &part, load_rx, &tap_tx, recorded);
        tokio::pin!(exec);
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        loop {
            let mut actions = Vec::new();
            tokio::select! {
                r = &mut exec => break r,
                Some(ev) = tap_rx.recv() => {
                    match &ev {
                        // What a step provokes (a killed job's traceback) is the step's
                        // outcome, and what the load says as burnin stops it is not judged.
                        PhaseEvent::Metric { metric: PhaseMetric::Problem { node, text }, .. }
                            if done || tracker.watching() =>
                        {
                            tracker.problem(text);
                            excused.push((node.clone(), text.clone(), done));
                        }
                        PhaseEvent::Metric { metric, at_ms, .. } => {
                            if let Some((f, who, v)) = sample_of(metric) {
                                tracker.sample(*at_ms, &f, &who, v);
                            }
                        }
                        PhaseEvent::Line { text, .. } => tracker.line(text),
                        _ => {}
                    }
                    let _ = events.send(ev).await;
                }
                _ = ticker.tick() => actions = tracker.tick(now_ms()),
                changed = operator.changed(), if operator_live => match changed {
                    Ok(()) => {
                        let why = *operator.borrow();
                        if why.is_some() {
                            let _ = load_tx.send(why);
                        }
                    }
                    Err(_) => operator_live = false,
                },
                ok = next_confirm(&mut confirm) => {
                    if !ok {
                        confirm = None;
                        if let Some(step) = tracker.asking() {
                            problems.push(format!("step {}/{steps}: {NOBODY_CONFIRMS}", step + 1));
                            done = true;
                            let _ = load_tx.send(Some(StopReason::Finished));
                        }
                    } else if let Some(step) = tracker.asking() {
                        tracker.confirm(now_ms());
                        let _ = events.send(PhaseEvent::Prompt { phase: spec.id.clone(), at_ms: now_ms(), text: None }).await;
                        let _ = events.send(say(format!("the operator confirmed step {}/{steps}: timing the recovery", step + 1))).await;
                    } else {
                        let _ = events.send(say("a confirmation while nothing was asked: ignored".into())).await;
                    }
                }
            }
            for a in actions {
                match a {
                    DrillAction::Ask(step, text) => {
                        let text = format!("step {}/{steps}: {text}", step + 1);
                        let run = spec
                            .drill
                            .as_ref()
                            .and_then(|d| d.steps.get(step))
                            .and_then(|s| s.run.clone());
                        if let Some(command) = run {
                            // burnin does this step itself, timed from when it is sent.
                            let sent = now_ms();
                            let _ = events.send(say(format!("{text}: burnin does it"))).await;
                            for line in run_step(ctx, spec, &command).await {
                                let _ = events.send(say(line)).await;
                            }
                            tracker.confirm(sent);
                            continue;
                        }
                        if confirm.is_none() {
                            // Waiting would only end at the phase's time limit.
                            problems.push(format!("{text}: {NOBODY_CONFIRMS}"));
                            done = true;
                            let _ = load_tx.send(Some(StopReason::Finished));
                            continue;
                        }
                        let _ = events.send(say(format!("asks the operator: {text}"))).await;
                        let _ = events
                            .send(PhaseEvent::Prompt {
                                phase: spec.id.clone(),
                                at_ms: now_ms(),
                                text: Some(text),
                            })
                            .await;
                    }
                    DrillAction::StepDone(rows) => {
                        for row in rows {
                            let _ = events
                                .send(PhaseEvent::Metric {
                                    phase: spec.id.clone(),
                                    at_ms: now_ms(),
                                    metric: PhaseMetric::Drill {
                                        outcome: row.clone(),
                                    },
                                })
                                .await;
                            outcomes.push(row);
                        }
                    }
                    DrillAction::NoSteady(why) => problems.push(why),
                    DrillAction::Done => {
                        done = true;
                        let _ = load_tx.send(Some(StopReason::Finished));
                    }
                }
            }
        }
    };
    while let Ok(ev) = tap_rx.try_recv() {
        if let PhaseEvent::Metric {
            metric: PhaseMetric::Problem { node, text },
            ..
        } = &ev
            && done
        {
            excused.push((node.clone(), text.clone(), true));
        }
        let _ = events.send(ev).await;
    }
    if tracker.asking().is_some() {
        let _ = events
            .send(PhaseEvent::Prompt {
                phase: spec.id.clone(),
                at_ms: now_ms(),
                text: None,
            })
            .await;
    }
    let mut metrics = std::mem::take(&mut ran.metrics);
    let mut last_words = 0;
    for (node, text, after_done) in &excused {
        let at = metrics.iter().position(
            |m| matches!(m, PhaseMetric::Problem { node: n, text: t } if n == node && t == text),
        );
        if let Some(i) = at {
            metrics.remove(i);
            last_words += usize::from(*after_done);
        }
    }
    metrics.extend(
        outcomes
            .iter()
            .map(|o| PhaseMetric::Drill { outcome: o.clone() }),
    );
    if let Some((verdict, reason)) = ran.early.take() {
        return (verdict, reason, metrics, Vec::new());
    }
    if !done {
        problems.push(match tracker.step_timed() {
            // The step's action ended the load and nothing started it again: the drill's
            // whole point (a killed job comes back) failed, whatever the exit status says.
            Some(step) => format!(
                "the load ended during step {}/{steps} ({}) and nothing started it again: it did \
                 not recover (the plan's command must bring it back: a restart loop or the \
                 site's supervisor)",
                step + 1,
                spec.drill
                    .as_ref()
                    .and_then(|d| d.steps.get(step))
                    .map_or("", |s| s.ask.as_str())
            ),
            None => format!(
                "the load ended by itself before the drill did ({} of {steps} step(s) done)",
                outcomes.iter().map(|o| o.step).max().unwrap_or(0)
            ),
        });
    }
    for o in outcomes.iter().filter(|o| o.failed()) {
        problems.push(format!("step {} ({}): {}", o.step, o.ask, o.describe()));
    }
    ran.observed.telemetry = ctx
        .telemetry
        .as_ref()
        .map(|t| t.window(&ran.watched, started_ms, now_ms()));
    let found = found_in(&ran.observed);
    ran.metrics = metrics;
    let (verdict, reason) = verdict_of(ctx, spec, &ran);
    // Every step in numbers, and what the load printed about errors and retries meanwhile.
    let mut told: Vec<String> = Vec::new();
    for o in outcomes.iter().filter(|o| !o.failed()) {
        told.push(format!("step {}: {}", o.step, o.describe()));
    }
    let mut by_step: BTreeMap<usize, (u64, Option<String>)> = BTreeMap::new();
    for o in &outcomes {
        by_step.insert(o.step, (o.error_lines, o.first_error.clone()));
    }
    for (step, (n, first)) in by_step {
        if n > 0 {
            told.push(format!(
                "step {step}: {n} error/retry line(s), first {:?}",
                first.unwrap_or_default()
            ));
        }
    }
    if last_words > 0 {
        told.push(format!(
            "{last_words} failure line(s) the load printed as burnin stopped it: not judged"
        ));
    }
    let verdict = if problems.is_empty() {
        verdict
    } else {
        Verdict::Fail
    };
    let reason = problems
        .into_iter()
        .chain(told)
        .chain(std::iter::once(reason))
        .collect::<Vec<_>>()
        .join("; ");
    (verdict, reason, ran.metrics, found)
}

/// A drill step burnin does itself: `command` (templated like the phase's own) on each node
/// the phase runs on, with what each answered.
async fn run_step(ctx: &RunContext, spec: &PhaseSpec, command: &str) -> Vec<String> {
    let targets: Vec<&RunnerNode> = match spec.scope {
        Scope::Launcher | Scope::Mpirun => ctx.nodes.iter().take(1).collect(),
        _ => ctx.nodes.iter().collect(),
    };
    let mut said = Vec::new();
    for node in targets {
        let name = &node.spec.name;
        let Some(dir) = PhaseDir::new(
            &ctx.plan.remote_dir,
            &ctx.run_id,
            &ctx.phase_component(&spec.id),
            name,
        ) else {
            said.push(format!("{name}: not a directory name on the node"));
            continue;
        };
        let text = match template_values(ctx, node, &dir, "").and_then(|v| render(command, &v)) {
            Ok(t) => t,
            Err(e) => {
                said.push(format!("{name}: the step's command: {e}"));
                continue;
            }
        };
        let cmd = RemoteCommand {
            argv: vec!["sh".into(), "-c".into(), text.clone()],
        };
        match run_script(node.transport.as_ref(), &cmd).await {
            Ok((_, out, _)) => said.push(format!(
                "{name}: ran `{text}`{}",
                out.lines().next().map_or(String::new(), |l| format!(
                    ": {}",
                    crate::model::excerpt(l.trim())
                ))
            )),
            Err(why) => said.push(format!(
                "{name}: `{text}` failed: {}",
                crate::model::excerpt(&why)
            )),
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(i: u64) -> PhaseMetric {
        PhaseMetric::Figure {
            node: "n".into(),
            name: "tflops_bf16".into(),
            value: i as f64,
        }
    }

    fn step(i: u64) -> PhaseMetric {
        PhaseMetric::Step {
            node: None,
            step: i,
            step_time_ms: Some(100.0),
            data_wait_ms: None,
            tokens_per_sec: Some(1.0),
            tokens_per_sec_per_gpu: None,
            loss: None,
            world: None,
            variant: None,
        }
    }

    #[test]
    fn a_node_flooding_figures_is_held_to_the_cap_and_its_first_figures_stay() {
        let mut kept = Vec::new();
        for i in 0..(NODE_METRICS_KEPT as u64 + 50_000) {
            keep_metric(&mut kept, figure(i));
        }
        assert_eq!(kept.len(), NODE_METRICS_KEPT);
        assert_eq!(kept[0], figure(0));
    }

    #[test]
    fn a_long_training_log_keeps_its_newest_steps_within_the_cap() {
        let mut kept = vec![figure(0)];
        for i in 0..300_000u64 {
            keep_metric(&mut kept, step(i));
        }
        assert!(kept.len() <= NODE_METRICS_KEPT, "{}", kept.len());
        assert_eq!(kept[0], figure(0), "the non-step figure stays");
        assert_eq!(kept.last(), Some(&step(299_999)), "the newest step is kept");
    }
}
