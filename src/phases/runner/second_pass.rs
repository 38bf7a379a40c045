//! The second pass of a `pairs` phase (S1): a ring blames a pair, not a node — node i's client
//! writing to node i+1's server is slow when either end is bad. So each node of a slow pair
//! runs again beside a known-good node (a node of no slow pair), as a ring of two: it writes to
//! the good node and the good node writes to it. A node slow again is named; a node fine beside
//! a good node is cleared, and the ring's figure on its link was its partner's (or a fault that
//! did not come back). Google's cluster health scanner and Imbue do the same
//! (`shared/research/peers.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Executed, Part, RunContext, RunnerNode, StopSwitch, execute};
use crate::model::phase::{GateStatus, PhaseEvent, PhaseMetric};
use crate::plan::{Gate, PhaseSpec};

/// The gate line a second pass that named a node is recorded under.
pub const NAMED_GATE: &str = "second pass: each node of a slow pair beside a known-good node";
/// The gate line the nodes a second pass cleared are recorded under (met: no evidence against
/// them; the report leaves their first-pass clauses out).
pub const CLEARED_GATE: &str = "second pass: cleared beside a known-good node";

/// The figure the second pass reads.
const FIGURE: &str = "link_gbit_per_s";

/// What the second pass found.
pub(super) struct SecondPass {
    /// Clauses for the phase's reason.
    pub clauses: Vec<String>,
    /// Gate outcomes to keep with the phase.
    pub gates: Vec<PhaseMetric>,
    /// Something was named: the phase fails on it.
    pub named: bool,
}

/// A link is slow under the phase's `min` gate or its `peers` share of the ring's median.
struct Bar {
    min: Option<f64>,
    share: Option<f64>,
}

impl Bar {
    fn of(spec: &PhaseSpec) -> Option<Bar> {
        let mut bar = Bar {
            min: None,
            share: None,
        };
        for g in &spec.gates {
            match g {
                // A floor that yields to the spec table is not the bar where the spec judges.
                Gate::Min {
                    figure,
                    value,
                    unless: None,
                } if figure == FIGURE => bar.min = Some(*value),
                Gate::Peers { figure, pct } if figure == FIGURE => bar.share = Some(pct / 100.0),
                _ => {}
            }
        }
        (bar.min.is_some() || bar.share.is_some()).then_some(bar)
    }

    fn slow(&self, v: f64, median: f64) -> bool {
        !v.is_finite()
            || self.min.is_some_and(|m| v < m)
            || self.share.is_some_and(|s| v < s * median)
    }
}

/// Each client's slowest link: node → Gbit/s.
fn worst_by_node(metrics: &[PhaseMetric]) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::LinkBw {
            node,
            bw_avg_gbit_per_s,
            ..
        } = m
        {
            let e = out.entry(node.clone()).or_insert(f64::INFINITY);
            *e = e.min(*bw_avg_gbit_per_s);
        }
    }
    out
}

/// The ring's median, as the `peers` gate takes it.
fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    crate::plan::gates::median(&mut v)
}

/// Run the second pass after the ring `first`, where a pair was slow; `None` where nothing
/// was slow, the phase has no bar on its links, or it is no ring.
pub(super) async fn second_pass(
    ctx: &RunContext,
    spec: &Arc<PhaseSpec>,
    stop: StopSwitch,
    events: &mpsc::Sender<PhaseEvent>,
    first: &Executed,
) -> Option<SecondPass> {
    let bar = Bar::of(spec)?;
    let ring: Vec<String> = ctx.nodes.iter().map(|n| n.spec.name.clone()).collect();
    if ring.len() < 3 {
        // Two nodes: each is the other's only partner; nobody is known to be good.
        return None;
    }
    let worst = worst_by_node(&first.metrics);
    let level = median(worst.values().copied())?;
    let mut suspects: Vec<String> = Vec::new();
    for (i, node) in ring.iter().enumerate() {
        if worst.get(node).is_some_and(|v| bar.slow(*v, level)) {
            for s in [node, &ring[(i + 1) % ring.len()]] {
                if !suspects.contains(s) {
                    suspects.push(s.clone());
                }
            }
        }
    }
    if suspects.is_empty() {
        return None;
    }
    let good: Vec<&RunnerNode> = ctx
        .nodes
        .iter()
        .filter(|n| !suspects.contains(&n.spec.name))
        .filter(|n| {
            worst
                .get(&n.spec.name)
                .is_some_and(|v| !bar.slow(*v, level))
        })
        .collect();
    if good.is_empty() {
        return Some(SecondPass {
            clauses: vec![format!(
                "second pass not run: no node is outside a slow pair ({} suspects)",
                suspects.len()
            )],
            gates: Vec::new(),
            named: false,
        });
    }
    let by_name: BTreeMap<&str, &RunnerNode> = ctx
        .nodes
        .iter()
        .map(|n| (n.spec.name.as_str(), n))
        .collect();
    let (mut slow_again, mut cleared) = (Vec::new(), Vec::new());
    // As many suspects at once as there are good partners; rings of two, side by side.
    for (round, chunk) in suspects.chunks(good.len()).enumerate() {
        let mut rings = tokio::task::JoinSet::new();
        for (s, g) in chunk.iter().zip(&good) {
            let Some(node) = by_name.get(s.as_str()) else {
                continue;
            };
            let mut pair = ctx.clone();
            pair.nodes = vec![(*node).clone(), (*g).clone()];
            pair.run_id = format!("{}-pass2-{}", ctx.run_id, round + 1);
            let (spec, stop, events) = (Arc::clone(spec), stop.clone(), events.clone());
            let (suspect, partner) = (s.clone(), g.spec.name.clone());
            let _ = events
                .send(PhaseEvent::Note {
                    phase: spec.id.clone(),
                    at_ms: crate::model::now_ms(),
                    node: Some(suspect.clone()),
                    text: format!(
                        "second pass: {suspect} beside {partner}, a node of no slow pair"
                    ),
                })
                .await;
            rings.spawn(async move {
                let ran = execute(&pair, &spec, &Part::alone(&spec.id), stop, &events, None).await;
                (suspect, partner, ran)
            });
        }
        while let Some(done) = rings.join_next().await {
            let Ok((suspect, partner, ran)) = done else {
                continue;
            };
            if let Some((_, why)) = ran.early {
                return Some(SecondPass {
                    clauses: vec![format!("second pass stopped: {why}")],
                    gates: Vec::new(),
                    named: false,
                });
            }
            let seen = worst_by_node(&ran.metrics);
            // Both directions: the suspect writing to the good node, and the good node to it.
            let figures: Vec<f64> = [&suspect, &partner]
                .iter()
                .filter_map(|n| seen.get(*n).copied())
                .collect();
            let low = figures.iter().copied().fold(f64::INFINITY, f64::min);
            if figures.len() < 2 || !ran.failures.is_empty() || bar.slow(low, level) {
                let what = if figures.len() < 2 || !ran.failures.is_empty() {
                    "did not complete".to_string()
                } else {
                    format!("{low:.0} Gbit/s")
                };
                slow_again.push(format!("{suspect} ({what})"));
            } else {
                cleared.push(format!("{suspect} ({low:.0} Gbit/s)"));
            }
        }
    }
    slow_again.sort();
    cleared.sort();
    let mut out = SecondPass {
        clauses: Vec::new(),
        gates: Vec::new(),
        named: !slow_again.is_empty(),
    };
    let mut gate = |gate: &str, status: GateStatus, words: String| {
        out.clauses.push(words.clone());
        out.gates.push(PhaseMetric::Gate {
            gate: gate.into(),
            status,
            words,
        });
    };
    if !slow_again.is_empty() {
        gate(
            NAMED_GATE,
            GateStatus::Missed,
            format!(
                "second pass: slow again beside a known-good node: {}",
                slow_again.join(", ")
            ),
        );
    }
    if !cleared.is_empty() {
        gate(
            CLEARED_GATE,
            GateStatus::Met,
            format!(
                "second pass: fine beside a known-good node, so not at fault: {}",
                cleared.join(", ")
            ),
        );
    }
    // A slow pair whose two nodes were both cleared: the link between them, or a fault that
    // did not come back.
    let cleared_names: BTreeSet<&str> =
        cleared.iter().filter_map(|c| c.split(' ').next()).collect();
    for (i, node) in ring.iter().enumerate() {
        let next = &ring[(i + 1) % ring.len()];
        if worst.get(node).is_some_and(|v| bar.slow(*v, level))
            && cleared_names.contains(node.as_str())
            && cleared_names.contains(next.as_str())
        {
            out.clauses.push(format!(
                "the link {node}→{next} was slow in the ring and each end is fine beside a good node: the cable or switch port between them, or a fault that did not come back"
            ));
        }
    }
    Some(out)
}
