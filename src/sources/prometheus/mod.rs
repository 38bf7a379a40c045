//! Nodes in `prometheus` mode: one task asks the site's Prometheus every period for the
//! dcgm-exporter series burnin knows (`sources::dcgm_series`) and turns its answer into the
//! same hellos, frames and link states an SSH stream gives, so every pane and triage rule works
//! unchanged. One poll is three queries whatever the cluster's size:
//!
//! - values: `max by (__name__, gpu, GPU_I_ID, <host labels>) ({__name__=~"…", <selector>})`:
//!   one number per family and GPU, with none of the exporter's other labels (pod, pci_bus_id,
//!   …) to carry: at 1024 nodes × 8 GPUs the answer stays a few MB;
//! - times: `max by (<host labels>) (timestamp(…))`: each node's newest sample time, so a frame
//!   carries when it was scraped, and a node whose samples stop advancing sends no frame (the
//!   store then marks it stale, as for a silent SSH stream);
//! - identity (first poll, then every [`IDENTITY_EVERY`] polls): `count by (gpu, UUID,
//!   modelName, pci_bus_id, DCGM_FI_DRIVER_VERSION, <host labels>)`, for the hello's GPU list
//!   (the PCI bus id goes to the report's node table; the exporter has no serial or VBIOS).
//!
//! A node with no series is unreachable with the reason; a query that fails makes every node
//! unreachable with the server's words; families no node exports are said once, with why
//! (opt-in, profiling). The decision part ([`PromNodes::step`]) is pure, for tests.

mod hosts;
mod nodes;

use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::inventory::{NodeSpec, PrometheusSpec};
use crate::model::SourceEvent;
use crate::model::units::Period;
use crate::sources::dcgm_series::{self};
use crate::sources::promql::{PromClient, PromError};

pub use nodes::PromNodes;

/// The families the first poll back-fills from a range query: the histories the panes draw.
pub const HISTORY_FAMILIES: &[&str] = &[
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_GPU_UTIL_RATIO",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_UTIL_RATIO",
    "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES",
];
/// Most points the back-fill asks for (series × steps): a few tens of MB of answer at most.
const HISTORY_POINTS: usize = 2_000_000;

/// Polls between two identity queries (UUIDs and models rarely change; a new GPU asks at once).
pub const IDENTITY_EVERY: u64 = 12;
/// Longest wait between polls while the server fails.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The three queries of a poll, built once.
#[derive(Debug, Clone, PartialEq)]
pub struct Queries {
    /// One number per family and GPU.
    pub values: String,
    /// Each node's newest sample time.
    pub times: String,
    /// UUIDs, models and driver per GPU.
    pub identity: String,
    /// The back-fill's range query (the history families only).
    pub history: String,
}

impl Queries {
    /// The queries for `spec`'s selector and host labels.
    pub fn new(spec: &PrometheusSpec) -> Self {
        let names: Vec<&str> = dcgm_series::all_names().collect();
        let mut matchers = format!("__name__=~\"{}\"", names.join("|"));
        if !spec.selector.is_empty() {
            matchers.push_str(", ");
            matchers.push_str(&spec.selector);
        }
        let selector = format!("{{{matchers}}}");
        let hosts = spec.host_labels.join(", ");
        // `timestamp()` drops the name, so across families it would make series alike (which
        // Prometheus refuses); one call per family joined by `or` keeps each its own. Only a
        // selector straight inside `timestamp()` gives the samples' own times.
        let plain = if spec.selector.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", spec.selector)
        };
        let per_family: Vec<String> = names
            .iter()
            .map(|n| format!("timestamp({n}{plain})"))
            .collect();
        let mut history_matchers = format!("__name__=~\"{}\"", HISTORY_FAMILIES.join("|"));
        if !spec.selector.is_empty() {
            history_matchers.push_str(", ");
            history_matchers.push_str(&spec.selector);
        }
        Self {
            history: format!("max by (__name__, gpu, GPU_I_ID, {hosts}) ({{{history_matchers}}})"),
            values: format!("max by (__name__, gpu, GPU_I_ID, {hosts}) ({selector})"),
            times: format!("max by ({hosts}) ({})", per_family.join(" or ")),
            identity: format!(
                "count by (gpu, GPU_I_ID, UUID, modelName, pci_bus_id, DCGM_FI_DRIVER_VERSION, {hosts}) ({selector})"
            ),
        }
    }
}

/// Watch `nodes` through `spec`'s server every `period` until the console stops listening;
/// with `history`, the first poll also back-fills what the server has from before.
pub async fn watch(
    nodes: Vec<NodeSpec>,
    spec: PrometheusSpec,
    period: Period,
    history: bool,
    events: mpsc::Sender<SourceEvent>,
) {
    let queries = Queries::new(&spec);
    let mut watched = PromNodes::new(nodes, &spec, period);
    let step_ms = period.millis();
    let period = period.duration();
    let mut failures: u32 = 0;
    let mut backfilled = !history;
    let mut client: Option<PromClient> = None;
    loop {
        let started = tokio::time::Instant::now();
        if client.is_none() {
            match PromClient::new(&spec) {
                Ok(c) => client = Some(c),
                Err(e) => {
                    failures += 1;
                    for ev in watched.failed(&e.to_string()) {
                        if events.send(ev).await.is_err() {
                            return;
                        }
                    }
                    tokio::time::sleep_until(started + MAX_RETRY.max(period)).await;
                    continue;
                }
            }
        }
        let Some(c) = &client else { continue };
        let mut history_error = None;
        if !backfilled {
            // Once, before the first frames: what the server already has, so sparklines and
            // triage windows are full from the start. A failure costs only the history.
            let now = crate::model::now_ms();
            let steps = watched.history_steps() as u64;
            match c
                .range(
                    &queries.history,
                    now.saturating_sub(steps * step_ms),
                    now.saturating_sub(step_ms),
                    period,
                )
                .await
            {
                Ok(series) => {
                    backfilled = true;
                    watched.take_history(&series);
                }
                Err(e) => history_error = Some(e),
            }
        }
        let outcome = poll(c, &queries, &mut watched).await;
        // A server that answers the poll but not the range query: say so once and go on
        // without history (one that answers neither is asked again next time).
        if let (Ok(_), Some(e)) = (&outcome, history_error) {
            backfilled = true;
            let text = format!("no history from before the console started: {e}");
            if events.send(SourceEvent::Notice { text }).await.is_err() {
                return;
            }
        }
        let batch = match outcome {
            Ok(batch) => {
                failures = 0;
                batch
            }
            Err(reason) => {
                failures += 1;
                tracing::info!(%reason, "prometheus poll failed");
                watched.failed(&reason.to_string())
            }
        };
        for ev in batch {
            if events.send(ev).await.is_err() {
                return;
            }
        }
        let wait = if failures == 0 {
            period
        } else {
            period
                .saturating_mul(1 << failures.min(6))
                .min(MAX_RETRY.max(period))
        };
        tokio::time::sleep_until(started + wait).await;
    }
}

async fn poll(
    client: &PromClient,
    queries: &Queries,
    watched: &mut PromNodes,
) -> Result<Vec<SourceEvent>, PromError> {
    let want_identity = watched.wants_identity();
    // Asked together, the three answers share one bound (each under it alone could hold
    // three times it).
    let budget = crate::sources::promql::ReadBudget::new(crate::sources::promql::MAX_ANSWER_BYTES);
    // The first failure ends the poll and drops the other reads (a refused answer frees the
    // budget's memory at once, and is said at once).
    let (values, times, identity) = tokio::try_join!(
        client.instant_within(&queries.values, &budget),
        client.instant_within(&queries.times, &budget),
        async {
            if want_identity {
                client
                    .instant_within(&queries.identity, &budget)
                    .await
                    .map(Some)
            } else {
                Ok(None)
            }
        }
    )?;
    Ok(watched.step(&values, &times, identity.as_deref(), crate::model::now_ms()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nodes::tests::spec;

    #[test]
    fn queries_group_by_family_gpu_and_host_with_the_selector() {
        let q = Queries::new(&spec());
        assert!(q.values.starts_with(
            "max by (__name__, gpu, GPU_I_ID, Hostname, hostname) ({__name__=~\"DCGM_FI_DEV_POWER_USAGE|"
        ));
        assert!(q.values.ends_with(", job=\"dcgm\"})"), "{}", q.values);
        assert!(
            q.times
                .starts_with("max by (Hostname, hostname) (timestamp(DCGM_FI_DEV_POWER_USAGE{job=\"dcgm\"}) or timestamp("),
            "{}",
            q.times
        );
        assert!(q.identity.contains("UUID, modelName"));
    }
}
