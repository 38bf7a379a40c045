//! The look at the nodes that `burnin status` and `burnin triage` share: connect to every
//! node, take what each answers, close the look (a node never heard from is unreachable, with
//! what it did send), and print findings one a line.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use super::fleet;
use color_eyre::eyre::Result;

use crate::config::inventory::Inventory;
use crate::model::NodeLink;
use crate::model::{Source, SourceEvent};
use crate::store::ClusterStore;
use crate::triage::Finding;

/// Tells when every node of an inventory has failed before sending one frame: waiting longer
/// judges nothing (an agent that refuses its arguments fails again on every retry), so a look
/// ends there and prints each node's own reason instead of a timeout.
pub struct EveryNodeFailed {
    expected: HashSet<String>,
    failed: HashSet<String>,
    streamed: bool,
}

impl EveryNodeFailed {
    /// A watch over the inventory's nodes, nothing seen yet.
    pub fn new(inventory: &Inventory) -> Self {
        Self {
            expected: inventory.nodes.iter().map(|n| n.name.clone()).collect(),
            failed: HashSet::new(),
            streamed: false,
        }
    }

    /// Take in one event; true once every node has failed and none has sent a frame.
    pub fn saw(&mut self, ev: &SourceEvent) -> bool {
        match ev {
            SourceEvent::Frame(_) => self.streamed = true,
            SourceEvent::Link {
                node,
                link: NodeLink::Unreachable(_),
                ..
            } if self.expected.contains(node) => {
                self.failed.insert(node.clone());
            }
            _ => {}
        }
        !self.streamed && !self.expected.is_empty() && self.failed.len() == self.expected.len()
    }
}

/// Connect to every node, wait until each has answered (a frame, or a failure),
/// and return the store as it stands.
pub async fn snapshot_nodes(
    inventory: &Inventory,
    ssh_config: Option<PathBuf>,
    wait: Option<Duration>,
) -> Result<ClusterStore> {
    let wait = wait.unwrap_or(inventory.connect_timeout + inventory.interval.duration() * 3);
    let expected: HashSet<&str> = inventory.nodes.iter().map(|n| n.name.as_str()).collect();
    // A snapshot takes each node's first frame as its answer: history would answer first.
    let source = Box::new(fleet(inventory.clone(), ssh_config)?.without_history());
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let (_cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));
    let mut store = ClusterStore::with_period(inventory.interval);
    // A node has answered when its first frame came, or its first attempt failed.
    let mut answered: HashSet<String> = HashSet::new();
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
pub fn close_snapshot(store: &mut ClusterStore, inventory: &Inventory, waited: Duration) {
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
