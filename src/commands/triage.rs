//! `burnin triage`: every node's stream for a while, judged as the console judges it, and
//! the look at the nodes it shares with `burnin status`.

use std::path::PathBuf;
use std::time::Duration;

use super::status::status_doc;
use super::{emit, fleet, load_inventory};
use color_eyre::eyre::Result;

use crate::config::inventory::Inventory;
use crate::model::NodeLink;
use crate::model::{Source, SourceEvent};
use crate::store::ClusterStore;
use crate::triage::{Finding, Severity, Triage};

/// Connect to every node, wait until each has answered (a frame, or a failure),
/// and return the store as it stands.
pub async fn snapshot_nodes(
    inventory: &Inventory,
    ssh_config: Option<PathBuf>,
    wait: Option<Duration>,
) -> Result<ClusterStore> {
    let wait = wait.unwrap_or(inventory.connect_timeout + inventory.interval.duration() * 3);
    let expected: std::collections::HashSet<&str> =
        inventory.nodes.iter().map(|n| n.name.as_str()).collect();
    // A snapshot takes each node's first frame as its answer: history would answer first.
    let source = Box::new(fleet(inventory.clone(), ssh_config)?.without_history());
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let (_cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));
    let mut store = ClusterStore::with_period(inventory.interval);
    // A node has answered when its first frame came, or its first attempt failed.
    let mut answered: std::collections::HashSet<String> = std::collections::HashSet::new();
    let deadline = tokio::time::Instant::now() + wait;
    while answered.len() < expected.len() && tokio::time::Instant::now() < deadline {
        let ev = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(ev)) => ev,
            _ => break,
        };
        match &ev {
            // A frame is the node's answer, whatever GPU count it carries (fewer is a finding).
            SourceEvent::Frame(f) => {
                answered.insert(f.node.clone());
            }
            SourceEvent::Link {
                node,
                link: NodeLink::Unreachable(_),
                ..
            } => {
                answered.insert(node.clone());
            }
            _ => {}
        }
        store.ingest(ev);
    }
    task.abort();
    close_snapshot(&mut store, inventory, wait);
    Ok(store)
}

/// Ends a timed look: nodes never heard from are listed as unreachable (so the report says so
/// instead of leaving them out), and the store's clock is now.
fn close_snapshot(store: &mut ClusterStore, inventory: &Inventory, waited: Duration) {
    for n in &inventory.nodes {
        // A node that sent no telemetry frame in the window is no healthy node, whatever it
        // said instead (a hello, garbage, one endless line): it cannot be judged, so it is
        // unreachable with what it did send.
        let why = match store.node(&n.name) {
            None => Some(format!("no answer within {} s", waited.as_secs())),
            Some(v) if v.last_frame_ms.is_none() && !matches!(v.link, NodeLink::Unreachable(_)) => {
                let mut said = Vec::new();
                if v.hello.is_some() {
                    said.push("a hello".to_string());
                }
                if v.garbled_lines > 0 {
                    said.push(format!("{} line(s) that are no frame", v.garbled_lines));
                }
                if let Some(note) = &v.note {
                    said.push(format!("\"{}\"", crate::model::fit(note, 120)));
                }
                Some(format!(
                    "no telemetry frame within {} s{}",
                    waited.as_secs(),
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(" (it sent {})", said.join(", "))
                    }
                ))
            }
            Some(_) => None,
        };
        if let Some(why) = why {
            store.ingest(SourceEvent::Link {
                node: n.name.clone(),
                at_ms: store.now_ms,
                link: NodeLink::Unreachable(why),
            });
        }
    }
    store.now_ms = store.now_ms.max(crate::sources::fleet::now_ms());
}

/// Exit code of `burnin triage` when it could not look (no inventory, no source).
pub const TRIAGE_CANNOT_RUN: i32 = 3;

/// `burnin triage`: every node's stream for `watch_for`, triage judged each period as the
/// console does (its rules need windows of samples, and their `since` needs the history), the
/// findings at the end printed, the exit code from the worst of them.
pub(super) async fn triage_nodes(
    config: &std::path::Path,
    ssh_config: Option<PathBuf>,
    json: bool,
    watch_for: Option<Duration>,
) -> Result<i32> {
    let Some(inventory) = load_inventory(config) else {
        return Ok(TRIAGE_CANNOT_RUN);
    };
    let watch_for = watch_for.unwrap_or(
        Duration::from_millis(inventory.triage.stall_window_ms)
            + inventory.connect_timeout
            + inventory.interval.duration() * 3,
    );
    let source = match fleet(inventory.clone(), ssh_config) {
        Ok(s) => Box::new(s),
        Err(e) => {
            crate::eprintln_safe!("burnin triage: {e}");
            return Ok(TRIAGE_CANNOT_RUN);
        }
    };
    if !json {
        crate::eprintln_safe!(
            "burnin triage: watching {} node(s) for {} s",
            inventory.nodes.len(),
            watch_for.as_secs()
        );
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let (_cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));
    let mut store = ClusterStore::with_period(inventory.interval);
    let mut triage = Triage::with_thresholds(inventory.triage);
    let deadline = tokio::time::Instant::now() + watch_for;
    // The deadline is checked on every event too: a node flooding its stream keeps `recv`
    // ready, and a timeout only fires while it waits.
    while tokio::time::Instant::now() < deadline
        && let Ok(Some(ev)) = tokio::time::timeout_at(deadline, rx.recv()).await
    {
        let clock = matches!(ev, SourceEvent::Clock { .. });
        store.ingest(ev);
        if clock {
            // Judged every period, as the console does: the rules keep their `since`.
            let _ = triage.evaluate(&store);
        }
    }
    task.abort();
    close_snapshot(&mut store, &inventory, watch_for);
    let findings = triage.evaluate(&store);
    let code = triage_exit_code(&findings);
    let doc = status_doc(
        &store,
        findings,
        format!("{} ({} nodes)", inventory.file, inventory.nodes.len()),
    );
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&findings_table(&doc.findings))?;
    }
    Ok(code)
}

/// 0: nothing above info; 1: the worst is a warning; 2: something critical.
pub fn triage_exit_code(findings: &[Finding]) -> i32 {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Crit) => 2,
        Some(Severity::Warn) => 1,
        _ => 0,
    }
}

/// The findings, one a line, worst first.
pub(super) fn findings_table(findings: &[Finding]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if findings.is_empty() {
        out.push_str("findings: none\n");
        return out;
    }
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in sorted {
        let _ = writeln!(
            out,
            "{:<4} {:<13} {:<15} {}",
            f.severity.label(),
            f.subject(),
            f.rule,
            f.why
        );
    }
    out
}
