//! `burnin triage`: every node's stream for a while, judged as the console judges it.

use std::path::PathBuf;
use std::time::Duration;

use super::look::{EveryNodeFailed, close_snapshot, findings_table};
use super::status::status_doc;
use super::{emit, fleet, load_inventory};
use color_eyre::eyre::Result;

use crate::model::{Source, SourceEvent};
use crate::store::ClusterStore;
use crate::triage::{Finding, Severity, Triage};

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
    let mut failed = EveryNodeFailed::new(&inventory);
    // The deadline is checked on every event too: a node flooding its stream keeps `recv`
    // ready, and a timeout only fires while it waits.
    while tokio::time::Instant::now() < deadline
        && let Ok(Some(ev)) = tokio::time::timeout_at(deadline, rx.recv()).await
    {
        let clock = matches!(ev, SourceEvent::Clock { .. });
        if failed.saw(&ev) {
            // Nothing will be judged by waiting: say what each node said, now.
            store.ingest(ev);
            if !json {
                crate::eprintln_safe!("burnin triage: every node failed before its first frame");
                if let Some(note) = crate::config::starter::example_hosts_note(&inventory) {
                    crate::eprintln_safe!("burnin triage: {note}");
                }
            }
            break;
        }
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

/// `burnin triage --demo`: the simulated cluster judged second by second to `--at`, its
/// findings printed as on real nodes, with the same exit code.
pub(super) fn triage_demo(sim: &crate::commands::cli::SimArgs, at: u64, json: bool) -> Result<i32> {
    let config = super::watch::sim_config(sim)?;
    let source = format!("demo (simulated, seed {})", config.seed);
    let (store, findings) = super::status::demo_snapshot(config, at);
    let code = triage_exit_code(&findings);
    let doc = status_doc(&store, findings, source);
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
