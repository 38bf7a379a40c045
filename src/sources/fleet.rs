//! The inventory's nodes as one source: a task per node that starts its stream (agent or
//! nvidia-smi over SSH, or a local child), decodes it line by line, and on any ending reports the
//! node unreachable with a reason and tries again with exponential backoff and jitter. A bounded
//! number of connection attempts run at once. A clock event every period lets the store mark
//! silent nodes stale. One node's trouble never touches another's stream.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::config::inventory::{Inventory, Mode, NodeSpec};
use crate::model::NodeLink;
use crate::model::phase::PhaseCommand;
use crate::model::{Source, SourceEvent, SourceTask};
use crate::sources::smi::{self, SmiDecoder};
use crate::transport::local::LocalTransport;
use crate::transport::ssh::{SshSettings, SshTransport};
use crate::transport::{RemoteCommand, Transport};
use crate::wire::{Decoded, Decoder, WireMessage};

/// Longest wait between reconnect attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// First wait after a failure.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Garbled-line totals are reported at most this often per node.
const GARBLED_REPORT_EVERY: Duration = Duration::from_secs(1);
/// A node clock this far off the console's is worth a note (logs will not line up).
const CLOCK_SKEW_NOTE_S: i64 = 5;
/// Longest stream line accepted (a frame of 8 GPUs and a few NICs is about 6 kB).
pub const MAX_LINE_BYTES: u64 = 1 << 20;
/// Bytes of a stream's stderr kept to explain its end.
const STDERR_KEPT: usize = 8192;

pub use crate::model::now_ms;

/// Backoff before attempt `n` (1-based after a failure), with ±50 % jitter from `seed` so that
/// nodes that dropped together do not reconnect together.
pub fn backoff(attempt: u32, seed: u64) -> Duration {
    let base = FIRST_BACKOFF
        .saturating_mul(1u32 << attempt.min(10))
        .min(MAX_BACKOFF);
    let mut z = seed
        .wrapping_add(u64::from(attempt))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    let jitter = 0.5 + (z % 1000) as f64 / 1000.0;
    base.mul_f64(jitter)
}

/// Every node of an inventory.
pub struct FleetSource {
    inventory: Inventory,
    ssh: SshSettings,
    self_exe: PathBuf,
    /// Whether Prometheus nodes start with the history the server already has.
    history: bool,
}

impl FleetSource {
    /// Watch `inventory`; `self_exe` is this binary (local and sim modes run it as the agent).
    pub fn new(inventory: Inventory, ssh: SshSettings, self_exe: PathBuf) -> Self {
        Self {
            inventory,
            ssh,
            self_exe,
            history: true,
        }
    }

    /// Start Prometheus nodes at their newest samples, without back-filled history (a one-time
    /// snapshot, which takes a node's first frame as its answer).
    pub fn without_history(mut self) -> Self {
        self.history = false;
        self
    }
}

/// What a node's stream is and how to read it.
struct Plan {
    transport: Arc<dyn Transport>,
    command: RemoteCommand,
    smi_fields: Option<&'static [&'static str]>,
}

fn plan_for(
    node: &NodeSpec,
    inv: &Inventory,
    ssh: &SshSettings,
    exe: &std::path::Path,
    legacy_smi: bool,
    seed: u64,
) -> Plan {
    let agent_args = |program: String, sim: bool| {
        let mut argv = vec![
            program,
            "agent".into(),
            "--interval".into(),
            inv.interval.arg(),
        ];
        if sim {
            // Each simulated node gets its own seed, so they do not read alike.
            argv.extend([
                "--sim".into(),
                "--gpus".into(),
                node.gpus.to_string(),
                "--seed".into(),
                (seed + 1).to_string(),
            ]);
        }
        argv.extend(node.agent_args.iter().cloned());
        RemoteCommand { argv }
    };
    let ssh_t = || -> Arc<dyn Transport> { Arc::new(SshTransport::new(node.clone(), ssh.clone())) };
    match node.mode {
        // Prometheus nodes have no stream of their own (the poller reads them); were one asked
        // for, the agent over SSH is what such a node can run.
        Mode::Agent | Mode::Prometheus => Plan {
            transport: ssh_t(),
            command: agent_args(node.agent_path.clone(), false),
            smi_fields: None,
        },
        Mode::Smi => {
            let fields = if legacy_smi {
                smi::LEGACY_FIELDS
            } else {
                smi::MODERN_FIELDS
            };
            Plan {
                transport: ssh_t(),
                command: RemoteCommand {
                    argv: smi::query_argv(fields, inv.interval),
                },
                smi_fields: Some(fields),
            }
        }
        Mode::Local => Plan {
            transport: Arc::new(LocalTransport),
            command: agent_args(exe.display().to_string(), false),
            smi_fields: None,
        },
        Mode::Sim => Plan {
            transport: Arc::new(LocalTransport),
            command: agent_args(exe.display().to_string(), true),
            smi_fields: None,
        },
    }
}

impl Source for FleetSource {
    fn run(
        self: Box<Self>,
        events: mpsc::Sender<SourceEvent>,
        mut commands: mpsc::UnboundedReceiver<PhaseCommand>,
    ) -> SourceTask {
        Box::pin(async move {
            let FleetSource {
                inventory,
                ssh,
                self_exe,
                history,
            } = *self;
            let inventory = Arc::new(inventory);
            let gate = Arc::new(Semaphore::new(inventory.max_connecting));
            // Dropping the set (the console quit) aborts every node task; their children are
            // killed on drop.
            let mut nodes = JoinSet::new();
            // Announce every node in inventory order first, so tables follow the file.
            for node in &inventory.nodes {
                let expect = SourceEvent::Expect {
                    node: node.name.clone(),
                    gpus: node.gpus,
                    nic_rate_gbps: node.nic_rate_gbps,
                };
                if events.send(expect).await.is_err() {
                    return;
                }
                let link = SourceEvent::Link {
                    node: node.name.clone(),
                    at_ms: now_ms(),
                    link: NodeLink::Connecting,
                };
                if events.send(link).await.is_err() {
                    return;
                }
            }
            let node_events = events.clone();
            // Nodes read from the site's Prometheus share one poller; the rest get a stream each.
            let from_prometheus: Vec<NodeSpec> = inventory
                .nodes
                .iter()
                .filter(|n| n.mode == Mode::Prometheus)
                .cloned()
                .collect();
            if let (false, Some(spec)) = (from_prometheus.is_empty(), &inventory.prometheus) {
                nodes.spawn(crate::sources::prometheus::watch(
                    from_prometheus,
                    spec.clone(),
                    inventory.interval,
                    history,
                    node_events.clone(),
                ));
            }
            for (i, node) in inventory.nodes.iter().cloned().enumerate() {
                if node.mode == Mode::Prometheus {
                    continue;
                }
                let ctx = NodeCtx {
                    node,
                    inventory: Arc::clone(&inventory),
                    ssh: ssh.clone(),
                    exe: self_exe.clone(),
                    events: node_events.clone(),
                    gate: Arc::clone(&gate),
                    seed: i as u64,
                };
                nodes.spawn(node_loop(ctx));
            }
            let mut tick = tokio::time::interval(inventory.interval.duration());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        let clock = SourceEvent::Clock { at_ms: now_ms() };
                        if events.send(clock).await.is_err() {
                            return;
                        }
                    }
                    // The fleet only watches: phases run beside it (`console::beside`).
                    cmd = commands.recv() => {
                        let Some(cmd) = cmd else { return };
                        let text = format!("{cmd:?}: this console watches only (no plan loaded)");
                        if events.send(SourceEvent::Notice { text }).await.is_err() {
                            return;
                        }
                    }
                }
            }
        })
    }
}

struct NodeCtx {
    node: NodeSpec,
    inventory: Arc<Inventory>,
    ssh: SshSettings,
    exe: PathBuf,
    events: mpsc::Sender<SourceEvent>,
    gate: Arc<Semaphore>,
    seed: u64,
}

enum StreamDecoder {
    Wire(Decoder),
    Smi(SmiDecoder),
}

impl StreamDecoder {
    fn garbled(&self) -> u64 {
        match self {
            StreamDecoder::Wire(d) => d.garbled(),
            StreamDecoder::Smi(d) => d.garbled(),
        }
    }

    /// Decode one line of `node`'s stream; a garbled line is logged with the node's name.
    fn push(&mut self, node: &str, line: &str) -> Vec<WireMessage> {
        match self {
            StreamDecoder::Wire(d) => match d.decode(line) {
                Ok(Decoded::Message(m)) => vec![m],
                Ok(_) => Vec::new(),
                Err(e) => {
                    tracing::debug!(node, "agent stream: {e}");
                    Vec::new()
                }
            },
            StreamDecoder::Smi(d) => d.push_line(line, now_ms()).unwrap_or_else(|e| {
                tracing::debug!(node, "nvidia-smi stream: {e}");
                Vec::new()
            }),
        }
    }
}

/// How one attempt ended.
struct Ended {
    reason: String,
    streamed: bool,
    legacy_smi: bool,
}

async fn node_loop(ctx: NodeCtx) {
    let mut failures: u32 = 0;
    let mut legacy_smi = false;
    let mut garbled_total = 0u64;
    loop {
        let link = |link| SourceEvent::Link {
            node: ctx.node.name.clone(),
            at_ms: now_ms(),
            link,
        };
        if ctx.events.send(link(NodeLink::Connecting)).await.is_err() {
            return;
        }
        let ended = attempt(&ctx, legacy_smi, &mut garbled_total).await;
        let Some(ended) = ended else { return };
        legacy_smi |= ended.legacy_smi;
        tracing::info!(node = %ctx.node.name, reason = %ended.reason, "stream ended");
        if ctx
            .events
            .send(link(NodeLink::Unreachable(ended.reason)))
            .await
            .is_err()
        {
            return;
        }
        failures = if ended.streamed { 1 } else { failures + 1 };
        tokio::time::sleep(backoff(failures, ctx.seed)).await;
    }
}

/// One connection: returns how it ended, or `None` when the console stopped listening.
/// Most characters of an agent's own error kept as its node's reason.
const AGENT_ERROR_CHARS: usize = 400;

async fn attempt(ctx: &NodeCtx, legacy_smi: bool, garbled_total: &mut u64) -> Option<Ended> {
    let plan = plan_for(
        &ctx.node,
        &ctx.inventory,
        &ctx.ssh,
        &ctx.exe,
        legacy_smi,
        ctx.seed,
    );
    let permit = Arc::clone(&ctx.gate).acquire_owned().await.ok();
    let mut child = match plan.transport.command(&plan.command).spawn() {
        Ok(c) => c,
        Err(e) => {
            return Some(Ended {
                reason: format!(
                    "cannot start {}: {e}",
                    plan.command.argv.first().map_or("", |s| s)
                ),
                streamed: false,
                legacy_smi: false,
            });
        }
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Some(Ended {
            reason: "no pipes to the child process".into(),
            streamed: false,
            legacy_smi: false,
        });
    };
    let stderr_task = tokio::spawn(stderr_tail(stderr));
    let mut decoder = match plan.smi_fields {
        Some(fields) => StreamDecoder::Smi(SmiDecoder::new(&ctx.node.name, fields, ctx.node.gpus)),
        None => StreamDecoder::Wire(Decoder::new()),
    };
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut permit = permit;
    let mut streamed = false;
    let mut agent_error: Option<String> = None;
    let mut invalid_field = false;
    let mut noted = FrameNotes::default();
    let mut reported_garbled = 0u64;
    // The first garbled line is reported at once; later ones at most once a period.
    let mut last_garbled_report = tokio::time::Instant::now()
        .checked_sub(GARBLED_REPORT_EVERY)
        .unwrap_or_else(tokio::time::Instant::now);
    let first_deadline = ctx.inventory.connect_timeout + ctx.inventory.interval.duration() * 3;
    // Until its first frame, a node has this long in all: a hello and then silence, garbage
    // that never decodes, or one endless line is a node that does not report, not one still
    // connecting.
    let first_frame_by = tokio::time::Instant::now() + first_deadline;
    let mut framed = false;
    // Inside a line longer than MAX_LINE_BYTES: skip to its end.
    let mut oversized = false;
    loop {
        line.clear();
        let mut limited = (&mut reader).take(MAX_LINE_BYTES);
        let read = limited.read_until(b'\n', &mut line);
        let timed_out = |what: String| Ended {
            reason: format!("timeout: {what} within {} s", first_deadline.as_secs()),
            streamed: false,
            legacy_smi: false,
        };
        let n = if framed {
            read.await
        } else {
            match tokio::time::timeout_at(first_frame_by, read).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = child.kill().await;
                    let what = match (streamed, decoder.garbled()) {
                        (false, 0) => "no data".to_string(),
                        (true, 0) => "a hello but no telemetry frame".to_string(),
                        (_, g) => format!("no telemetry frame, {g} line(s) that are no frame"),
                    };
                    return Some(timed_out(what));
                }
            }
        };
        match n {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // A line with no end in sight (a wrong binary, a runaway writer) must not grow without
        // bound: it is dropped and counted as one garbled line.
        let complete = line.ends_with(b"\n");
        if oversized || !complete && line.len() as u64 >= MAX_LINE_BYTES {
            if !oversized {
                tracing::debug!(node = %ctx.node.name, "line over {MAX_LINE_BYTES} bytes dropped");
                decoder.push(&ctx.node.name, "<line too long>");
            }
            oversized = !complete;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        for msg in decoder.push(&ctx.node.name, &text) {
            let event = match msg {
                WireMessage::Hello(mut h) => {
                    h.node = ctx.node.name.clone();
                    if !streamed {
                        streamed = true;
                        // Connected: let the next node's attempt go ahead.
                        permit.take();
                    }
                    SourceEvent::Hello(h)
                }
                WireMessage::Frame(f) => {
                    framed = true;
                    let (frame, notes) = arrived_frame(&ctx.node.name, f, &mut noted);
                    for note in notes {
                        if ctx.events.send(note).await.is_err() {
                            return None;
                        }
                    }
                    frame
                }
                WireMessage::Error(e) => {
                    invalid_field |= e.contains(smi::INVALID_FIELD_MARK);
                    // A node's words become its unreachable reason, said in status, triage
                    // and the record: a line, never a megabyte.
                    let e = crate::model::excerpt_chars(&e, AGENT_ERROR_CHARS);
                    agent_error = Some(e.clone());
                    SourceEvent::Note {
                        node: ctx.node.name.clone(),
                        at_ms: now_ms(),
                        text: e,
                    }
                }
            };
            if ctx.events.send(event).await.is_err() {
                return None;
            }
        }
        if decoder.garbled() > reported_garbled
            && last_garbled_report.elapsed() >= GARBLED_REPORT_EVERY
        {
            reported_garbled = decoder.garbled();
            last_garbled_report = tokio::time::Instant::now();
            let total = *garbled_total + reported_garbled;
            let node = ctx.node.name.clone();
            if ctx
                .events
                .send(SourceEvent::Garbled { node, total })
                .await
                .is_err()
            {
                return None;
            }
        }
    }
    *garbled_total += decoder.garbled();
    if decoder.garbled() > 0 {
        let _ = ctx
            .events
            .send(SourceEvent::Garbled {
                node: ctx.node.name.clone(),
                total: *garbled_total,
            })
            .await;
    }
    let (status, stderr_text) = wait_ended(&mut child, stderr_task).await;
    let stderr_invalid = stderr_text.contains(smi::INVALID_FIELD_MARK);
    let reason = match (&agent_error, streamed) {
        // An agent that said why it stopped (no driver, say) is the best reason.
        (Some(e), false) => e.clone(),
        _ => plan.transport.classify(status, &stderr_text),
    };
    Some(Ended {
        reason,
        streamed,
        legacy_smi: plan.smi_fields.is_some() && (invalid_field || stderr_invalid),
    })
}

/// What was said once a connection about its frames.
#[derive(Debug, Default)]
struct FrameNotes {
    skew: bool,
    bound: bool,
}

/// A frame as it enters burnin: named for its node, held to what a node can carry, stamped on
/// arrival; with the notes it calls for (each said once a connection).
fn arrived_frame(
    node: &str,
    mut f: crate::model::NodeFrame,
    noted: &mut FrameNotes,
) -> (SourceEvent, Vec<SourceEvent>) {
    let mut notes = Vec::new();
    f.node = node.to_string();
    // What a node cannot have goes no further: not to the store, the run's telemetry, nor
    // the record.
    let left = crate::model::bounds::bound_frame(&mut f);
    if !left.is_empty() && !noted.bound {
        noted.bound = true;
        notes.push(SourceEvent::Note {
            node: node.to_string(),
            at_ms: now_ms(),
            text: format!(
                "a frame carried more than a node has: {} left out",
                left.describe()
            ),
        });
    }
    // Frames are stamped on arrival: staleness and histories run on the console's clock, so a
    // node with a wrong clock neither flaps stale nor drags the others.
    let arrived = now_ms();
    let skew_s = (f.at_ms as i64 - arrived as i64) / 1000;
    f.at_ms = arrived;
    if skew_s.abs() >= CLOCK_SKEW_NOTE_S && !noted.skew {
        noted.skew = true;
        notes.push(SourceEvent::Note {
            node: node.to_string(),
            at_ms: arrived,
            text: format!(
                "node clock differs from the console's by {skew_s:+} s (frames are stamped on arrival)"
            ),
        });
    }
    (SourceEvent::Frame(f), notes)
}

/// The last [`STDERR_KEPT`] bytes a node's stream wrote on stderr.
async fn stderr_tail(mut stderr: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_KEPT {
            kept.drain(..kept.len() - STDERR_KEPT);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The stream's process once its output ended: its exit status (killed when it does not exit
/// within 2 s) and the tail of its stderr.
async fn wait_ended(
    child: &mut tokio::process::Child,
    stderr_task: tokio::task::JoinHandle<String>,
) -> (Option<std::process::ExitStatus>, String) {
    let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
        Ok(Ok(s)) => Some(s),
        _ => {
            let _ = child.kill().await;
            None
        }
    };
    let stderr_text = tokio::time::timeout(Duration::from_secs(1), stderr_task)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    (status, stderr_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters() {
        let a = backoff(1, 1);
        assert!(
            a >= Duration::from_millis(500) && a <= Duration::from_millis(1500),
            "{a:?}"
        );
        assert!(backoff(20, 1) <= MAX_BACKOFF.mul_f64(1.5));
        assert_ne!(
            backoff(3, 1),
            backoff(3, 2),
            "nodes do not reconnect in lockstep"
        );
    }
}
