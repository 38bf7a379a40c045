//! The report's busbw plots: per collective phase, each node's busbw against message size
//! (the largest job per node), the gate lines, and the nodes that stopped before the largest
//! size named and drawn over the others.

use std::collections::BTreeMap;

use super::plots::{self, Axis, Chart, PALETTE, Series};
use crate::model::format_size;
use crate::model::phase::PhaseMetric;
use crate::plan::Plan;
use crate::plan::gates::{Baseline, Sample};

/// One chart per phase that reported busbw, keyed by the phase's id.
pub(super) fn busbw_charts(
    plan: &Plan,
    runs: &BTreeMap<String, Vec<PhaseMetric>>,
    baseline: Option<&Baseline>,
) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for (phase, metrics) in runs {
        let phase = phase.clone();
        // Per node: the largest job's rows, size → busbw.
        let mut top: BTreeMap<String, u32> = BTreeMap::new();
        let mut collective = None;
        for m in metrics {
            if let PhaseMetric::BusBw {
                node,
                ranks,
                collective: c,
                ..
            } = m
            {
                let e = top
                    .entry(node.clone().unwrap_or_else(|| "job".into()))
                    .or_default();
                *e = (*e).max(*ranks);
                collective.get_or_insert_with(|| c.clone());
            }
        }
        let Some(collective) = collective else {
            continue;
        };
        let mut rows: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
        for m in metrics {
            if let PhaseMetric::BusBw {
                node,
                collective: c,
                size_bytes,
                busbw_gb_per_s,
                ranks,
                ..
            } = m
            {
                let who = node.clone().unwrap_or_else(|| "job".into());
                if *c == collective && top.get(&who) == Some(ranks) && *size_bytes > 0 {
                    rows.entry(who)
                        .or_default()
                        .insert(*size_bytes, *busbw_gb_per_s);
                }
            }
        }
        let mut series: Vec<Series> = rows
            .iter()
            .enumerate()
            .map(|(i, (node, r))| Series {
                label: node.clone(),
                points: r.iter().map(|(s, b)| ((*s as f64).log2(), *b)).collect(),
                color: PALETTE[i % PALETTE.len()],
                dashed: false,
                thin: rows.len() > PALETTE.len(),
            })
            .collect();
        // A node whose rows end before the largest size stopped (exited, hung, was killed):
        // drawn red, on top, and named, never left under the others' lines.
        let missing = stopped_early(&rows);
        for (i, node) in rows.keys().enumerate() {
            if let Some(last) = missing.get(node.as_str()) {
                series[i].label = format!("missing: {node} (stopped after {})", format_size(*last));
                series[i].color = "#d62728";
                series[i].thin = false;
            }
        }
        let figure = format!("busbw_{collective}");
        let spec = plan.find(&phase);
        let gates = spec.map(|s| s.gates.clone()).unwrap_or_default();
        // The peers gate is relative: pct % of the nodes' median at each size.
        for g in &gates {
            match g {
                crate::plan::Gate::Peers { figure: f, pct } if *f == figure => {
                    let mut sizes: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
                    for r in rows.values() {
                        for (s, b) in r {
                            sizes.entry(*s).or_default().push(*b);
                        }
                    }
                    let pts: Vec<(f64, f64)> = sizes
                        .into_iter()
                        .filter(|(_, v)| v.len() >= 2)
                        .filter_map(|(s, v)| {
                            crate::store::median(v.into_iter())
                                .map(|m| ((s as f64).log2(), m * pct / 100.0))
                        })
                        .collect();
                    if !pts.is_empty() {
                        series.push(Series {
                            label: format!("peers gate: {pct:.0} % of the node median"),
                            points: pts,
                            color: "#d62728",
                            dashed: true,
                            thin: false,
                        });
                    }
                }
                crate::plan::Gate::Baseline { figure: f, pct } if *f == figure => {
                    let base = baseline
                        .and_then(|b| b.phases.get(&phase))
                        .and_then(|p| p.get(&figure))
                        .and_then(|v: &Vec<Sample>| {
                            crate::store::median(v.iter().map(|s| s.value))
                        });
                    if let (Some(b), Some((lo, hi))) = (base, x_range(&series)) {
                        series.push(Series {
                            label: format!("baseline gate: {pct:.0} % of {b:.0} GB/s"),
                            points: vec![(lo, b * pct / 100.0), (hi, b * pct / 100.0)],
                            color: "#9467bd",
                            dashed: true,
                            thin: false,
                        });
                    }
                }
                _ => {}
            }
        }
        // The legend holds twelve entries, gate lines first: with more nodes than that beside
        // the gates, every node is a thin line and the slowest and the fastest are named.
        let gate_lines = series.len() - rows.len();
        let many = rows.len() + gate_lines > plots::LEGEND_ENTRIES;
        if many {
            let peak = |r: &BTreeMap<u64, f64>| r.values().copied().fold(0.0_f64, f64::max);
            let by_peak: Vec<(usize, f64)> = rows
                .values()
                .enumerate()
                .map(|(i, r)| (i, peak(r)))
                .collect();
            let complete = || {
                by_peak
                    .iter()
                    .filter(|(i, _)| !missing.contains_key(node_at(&rows, *i)))
            };
            let slowest = complete().min_by(|a, b| a.1.total_cmp(&b.1)).copied();
            let fastest = complete().max_by(|a, b| a.1.total_cmp(&b.1)).copied();
            for (i, s) in series.iter_mut().enumerate().take(rows.len()) {
                if missing.contains_key(node_at(&rows, i)) {
                    continue;
                }
                s.thin = true;
                s.color = "#9e9e9e";
                let (mark, color) = if slowest.is_some_and(|(j, _)| j == i) {
                    ("slowest", "#d62728")
                } else if fastest.is_some_and(|(j, _)| j == i) {
                    ("fastest", "#2ca02c")
                } else {
                    continue;
                };
                let top = by_peak[i].1;
                s.label = format!("{mark}: {} (peak {top:.0} GB/s)", s.label);
                s.thin = false;
                s.color = color;
            }
        }
        let mut notes: Vec<String> = Vec::new();
        if many {
            notes.push(format!("{} nodes, one grey line each", rows.len()));
        }
        if !missing.is_empty() {
            let named: Vec<String> = missing
                .iter()
                .map(|(n, last)| format!("{n} (stopped after {})", format_size(*last)))
                .collect();
            notes.push(format!("missing at the largest size: {}", named.join(", ")));
        }
        // The stopped nodes' lines last, so they are drawn over the others.
        let (stopped, mut series): (Vec<_>, Vec<_>) = series
            .into_iter()
            .partition(|s| s.label.starts_with("missing: "));
        series.extend(stopped);
        out.push((
            phase.clone(),
            Chart {
                title: format!(
                    "{phase}: {collective} busbw vs message size (largest job per node)"
                ),
                x: Axis::Bytes,
                x_label: "message size".into(),
                y_label: "GB/s".into(),
                series,
                legend_note: (!notes.is_empty()).then(|| notes.join("; ")),
                categories: Vec::new(),
            },
        ));
    }
    out
}

/// The nodes whose busbw rows end before the largest size any node reached, with the last
/// size each reached (none when one job speaks for all, or only one node reported).
fn stopped_early(rows: &BTreeMap<String, BTreeMap<u64, f64>>) -> BTreeMap<&str, u64> {
    let largest = rows.values().filter_map(|r| r.keys().last()).max().copied();
    rows.iter()
        .filter_map(|(node, r)| {
            let last = *r.keys().last()?;
            (rows.len() > 1 && Some(last) < largest).then_some((node.as_str(), last))
        })
        .collect()
}

/// The node of the `i`-th row (rows and their series share the order).
fn node_at(rows: &BTreeMap<String, BTreeMap<u64, f64>>, i: usize) -> &str {
    rows.keys().nth(i).map_or("", String::as_str)
}

fn x_range(series: &[Series]) -> Option<(f64, f64)> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(node: &str, size_bytes: u64, busbw: f64) -> PhaseMetric {
        PhaseMetric::BusBw {
            node: Some(node.into()),
            collective: "all_reduce".into(),
            size_bytes,
            busbw_gb_per_s: busbw,
            algbw_gb_per_s: busbw / 1.75,
            in_place_busbw_gb_per_s: None,
            wrong: Some(0),
            deviation: false,
            ranks: 8,
        }
    }

    #[test]
    fn a_node_that_stopped_early_is_named_red_and_drawn_over_the_others() {
        let mut metrics = Vec::new();
        for n in 1..=12 {
            let node = format!("node{n:02}");
            // node07 exits after 32M; the others reach 8G.
            let last = if n == 7 { 25 } else { 33 };
            for p in 20..=last {
                metrics.push(row(&node, 1u64 << p, 400.0));
            }
        }
        let runs = BTreeMap::from([("T4".to_string(), metrics)]);
        let plan = crate::plan::default_plan();
        let charts = busbw_charts(plan, &runs, None);
        let (_, chart) = charts.first().expect("a chart");
        let last = chart.series.last().expect("series");
        assert_eq!(last.label, "missing: node07 (stopped after 32M)");
        assert_eq!(last.color, "#d62728");
        assert!(!last.thin);
        let note = chart.legend_note.as_deref().unwrap_or_default();
        assert!(
            note.contains("missing at the largest size: node07 (stopped after 32M)"),
            "{note}"
        );
        // No one stopped: nothing named.
        let whole: Vec<PhaseMetric> = (1..=2)
            .flat_map(|n| (20..=33).map(move |p| row(&format!("node{n:02}"), 1u64 << p, 400.0)))
            .collect();
        let runs = BTreeMap::from([("T4".to_string(), whole)]);
        let charts = busbw_charts(plan, &runs, None);
        assert!(
            charts[0]
                .1
                .series
                .iter()
                .all(|s| !s.label.starts_with("missing"))
        );
        assert_eq!(charts[0].1.legend_note, None);
    }
}
