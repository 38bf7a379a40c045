//! `burnin status`: one look at every GPU and finding, as a table or the `--json` document.

use std::path::PathBuf;
use std::time::Duration;

use super::look::{findings_table, snapshot_nodes};
use super::watch::sim_config;
use super::{emit, load_inventory};
use color_eyre::eyre::Result;
use serde::Serialize;

use crate::commands::cli::SimArgs;
use crate::model::{GpuSample, NodeLink, UnixMillis};
use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
use crate::store::ClusterStore;
use crate::triage::{Finding, Severity, Triage};

/// Version of the `status --json` document.
pub const STATUS_SCHEMA: u32 = 1;

/// `burnin status`: one look at the inventory's nodes, printed as a table or JSON.
pub(super) async fn status_nodes(
    config: &std::path::Path,
    ssh_config: Option<PathBuf>,
    json: bool,
    wait: Option<Duration>,
) -> Result<i32> {
    let Some(inventory) = load_inventory(config) else {
        return Ok(2);
    };
    let store = snapshot_nodes(&inventory, ssh_config, wait).await?;
    let findings = Triage::with_thresholds(inventory.triage).evaluate(&store);
    let mut doc = status_doc(
        &store,
        findings,
        format!("{} ({} nodes)", inventory.file, inventory.nodes.len()),
    );
    let nothing_answered = doc
        .nodes
        .iter()
        .all(|n| matches!(n.link, NodeLink::Unreachable(_)));
    if nothing_answered
        && !json
        && let Some(note) = crate::config::starter::example_hosts_note(&inventory)
    {
        crate::eprintln_safe!("burnin status: {note}");
    }
    let mut complete = true;
    for node in &mut doc.nodes {
        let Some(spec) = inventory.nodes.iter().find(|s| s.name == node.node) else {
            continue;
        };
        node.expected_gpus = Some(spec.gpus);
        let ok = node.link == NodeLink::Streaming
            && node.gpus.len() as u32 == spec.gpus
            && node.gpus.iter().all(|g| !g.lost);
        complete &= ok;
    }
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&status_table(&doc))?;
    }
    Ok(if complete { 0 } else { 1 })
}

/// One GPU in the status document.
#[derive(Debug, Serialize)]
pub struct StatusGpu {
    /// Product name.
    pub name: Option<String>,
    /// UUID.
    pub uuid: Option<String>,
    /// True when the GPU gives no readings.
    pub lost: bool,
    /// Why the GPM activity readings (SM, tensor, DRAM) are n/a and left out of the sample,
    /// when they could not be true (see `store::nodes::implausible_gpm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpm_na: Option<String>,
    /// The newest sample.
    #[serde(flatten)]
    pub sample: GpuSample,
}

/// One node in the status document.
#[derive(Debug, Serialize)]
pub struct StatusNode {
    /// Node name.
    pub node: String,
    /// Connection state.
    pub link: NodeLink,
    /// What produced the frames.
    pub agent: Option<String>,
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA version.
    pub cuda: Option<String>,
    /// When its newest frame was taken.
    pub frame_at_ms: Option<UnixMillis>,
    /// GPUs the inventory expects (absent for the demo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_gpus: Option<u32>,
    /// Stream lines that could not be decoded.
    pub garbled_lines: u64,
    /// The newest thing the node's agent said about itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What its stream said beyond what a node can have (more GPUs or ports), not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_limit: Option<String>,
    /// Readings its source cannot give, with why (n/a in the document, not a fault).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<crate::model::Unavailable>,
    /// GPUs in index order.
    pub gpus: Vec<StatusGpu>,
}

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusDoc {
    /// Document version.
    pub schema: u32,
    /// Where the data came from.
    pub source: String,
    /// Instant of the snapshot.
    pub at_ms: UnixMillis,
    /// Same, as RFC 3339 UTC.
    pub at: String,
    /// Every node.
    pub nodes: Vec<StatusNode>,
    /// What triage sees in the snapshot.
    pub findings: Vec<Finding>,
}

/// Snapshot a store into the status document.
pub fn status_doc(store: &ClusterStore, findings: Vec<Finding>, source: String) -> StatusDoc {
    StatusDoc {
        schema: STATUS_SCHEMA,
        source,
        at_ms: store.now_ms,
        at: rfc3339(store.now_ms),
        nodes: store
            .nodes
            .iter()
            .map(|n| StatusNode {
                node: n.name.clone(),
                link: n.link.clone(),
                agent: n.hello.as_ref().map(|h| h.agent_version.clone()),
                driver: n.hello.as_ref().and_then(|h| h.driver.clone()),
                cuda: n.hello.as_ref().and_then(|h| h.cuda.clone()),
                frame_at_ms: n.last_frame_ms,
                expected_gpus: None,
                garbled_lines: n.garbled_lines,
                note: n.note.clone(),
                over_limit: n.over_limit_words(),
                unavailable: n
                    .hello
                    .as_ref()
                    .map(|h| h.unavailable.clone())
                    .unwrap_or_default(),
                gpus: n
                    .gpus
                    .iter()
                    .map(|g| StatusGpu {
                        name: g.info.as_ref().map(|i| i.name.clone()),
                        uuid: g.info.as_ref().map(|i| i.uuid.clone()),
                        lost: g.is_lost(),
                        gpm_na: g.gpm_implausible.clone(),
                        sample: g.latest.clone().unwrap_or(GpuSample {
                            index: g.index,
                            ..GpuSample::default()
                        }),
                    })
                    .collect(),
            })
            .collect(),
        findings,
    }
}

/// Run the demo cluster to `at_s` simulated seconds and return its store and findings.
pub fn demo_snapshot(config: SimConfig, at_s: u64) -> (ClusterStore, Vec<Finding>) {
    let mut sim = SimCluster::new(config);
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    let mut findings = Vec::new();
    // Step second by second so that triage sees the history it would have seen live.
    for s in 0..=at_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            store.ingest(e);
        }
        findings = triage.evaluate(&store);
    }
    (store, findings)
}

/// `burnin status --demo`: the simulated cluster at `--at` seconds, as `status` prints it.
pub(super) fn status_demo(sim: &SimArgs, at: u64, json: bool) -> Result<i32> {
    let config = sim_config(sim)?;
    let source = format!("demo (simulated, seed {})", config.seed);
    let (store, findings) = demo_snapshot(config, at);
    let complete = store
        .nodes
        .iter()
        .all(|n| n.link == NodeLink::Streaming && n.gpus.iter().all(|g| !g.is_lost()));
    let doc = status_doc(&store, findings, source);
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&status_table(&doc))?;
    }
    Ok(if complete { 0 } else { 1 })
}

/// The human form of `status`: one line per GPU, then the findings.
pub fn status_table(doc: &StatusDoc) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "burnin status · {} · {}", doc.source, doc.at);
    let _ = writeln!(
        out,
        "{:<8} {:>3} {:>5} {:>7} {:>7} {:>6} {:>5} {:>11} {:>13}  reasons",
        "node", "gpu", "util", "avg W", "inst W", "lim W", "temp", "SM MHz", "mem GiB"
    );
    let opt = |v: Option<f32>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    for n in &doc.nodes {
        if let NodeLink::Unreachable(reason) = &n.link {
            let _ = writeln!(out, "{:<8} unreachable: {reason}", n.node);
            continue;
        }
        if let Some(want) = n.expected_gpus
            && n.gpus.len() as u32 != want
        {
            let _ = writeln!(
                out,
                "{:<8} {} of {want} expected GPUs answered",
                n.node,
                n.gpus.len()
            );
        }
        if let Some(note) = &n.note {
            let _ = writeln!(out, "{:<8} agent says: {note}", n.node);
        }
        if n.garbled_lines > 0 {
            let _ = writeln!(
                out,
                "{:<8} {} garbled stream lines skipped",
                n.node, n.garbled_lines
            );
        }
        if let Some(why) = &n.over_limit {
            let _ = writeln!(out, "{:<8} stream beyond a node's limits: {why}", n.node);
        }
        for g in &n.gpus {
            let s = &g.sample;
            if g.lost {
                let _ = writeln!(out, "{:<8} {:>3}  no readings (GPU lost)", n.node, s.index);
                continue;
            }
            let reasons = s
                .clock_event_reasons
                .map(|m| crate::model::clock_events::describe(m).join(","))
                .unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                out,
                "{:<8} {:>3} {:>4}% {:>7} {:>7} {:>6} {:>4}C {:>5}/{:<5} {:>6}/{:<6}  {}",
                n.node,
                s.index,
                opt(s.utilization_pct),
                opt(s.power_avg_watts),
                opt(s.power_instant_watts),
                opt(s.power_limit_watts),
                opt(s.temperature_c),
                s.sm_clock_mhz.map_or("-".into(), |v| v.to_string()),
                s.sm_clock_max_mhz.map_or("-".into(), |v| v.to_string()),
                s.memory_used_bytes
                    .map_or("-".into(), |v| (v >> 30).to_string()),
                s.memory_total_bytes
                    .map_or("-".into(), |v| (v >> 30).to_string()),
                if reasons.is_empty() {
                    "none".into()
                } else {
                    reasons
                },
            );
        }
    }
    if doc.findings.is_empty() {
        let _ = writeln!(out, "findings: none");
    } else {
        let _ = writeln!(out, "findings:");
        for line in findings_table(&doc.findings).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let worst = doc.findings.iter().map(|f| f.severity).max();
    if worst == Some(Severity::Crit) {
        let _ = writeln!(out, "worst: CRIT");
    }
    out
}

/// RFC 3339 UTC for an instant (no time-zone database needed).
pub fn rfc3339(ms: UnixMillis) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(SIM_EPOCH_MS), "2026-12-02T09:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
