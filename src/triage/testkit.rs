//! Shared helpers for the rule tests: a simulated cluster played into a store and judged.

use super::{Finding, Triage};
use crate::cluster::ClusterStore;
use crate::telemetry::SourceEvent;
use crate::telemetry::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};

/// Findings after playing `config` to simulated second `s`, judged every second as the console
/// does (so hysteresis and "since" see the whole history).
pub fn findings_at(config: SimConfig, s: u64) -> Vec<Finding> {
    let mut sim = SimCluster::new(config);
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    let mut out = Vec::new();
    for sec in 0..=s {
        for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
            store.ingest(e);
        }
        out = triage.evaluate(&store);
    }
    out
}

/// Findings over a fault-free simulated cluster of `nodes` nodes run to `secs`, after the
/// `before` events; each simulated event passes through `edit` first (how a test puts a
/// real-world condition into the stream).
pub fn findings_after(
    nodes: usize,
    secs: u64,
    before: Vec<SourceEvent>,
    mut edit: impl FnMut(&mut SourceEvent),
) -> Vec<Finding> {
    let mut config = SimConfig::demo(1);
    config.faults.clear();
    config.nodes = nodes;
    let mut sim = SimCluster::new(config);
    let mut store = ClusterStore::new();
    for e in before {
        store.ingest(e);
    }
    for mut e in sim.advance_to(SIM_EPOCH_MS + secs * 1000) {
        edit(&mut e);
        store.ingest(e);
    }
    Triage::new().evaluate(&store)
}

/// Whether a finding of `rule` about `subject` is among `findings`.
pub fn has(findings: &[Finding], rule: &str, subject: &str) -> bool {
    findings
        .iter()
        .any(|f| f.rule == rule && f.subject() == subject)
}
