//! `burnin report RUN_DIR`: the acceptance report from a run record, never from live state.
//! It writes `report.md` (with its plots beside it as SVG files) and `report.html` (one file,
//! plots inline, no external assets): the phase table with verdicts and reasons, each phase's
//! figures against its gates and the baseline, the plots (power per GPU over time, busbw vs
//! message size with the gate line, data wait per step, AIStor GET latency CDF), the findings,
//! and the bill of materials. A run that did not finish (its console killed) is reported as INCOMPLETE.

mod busbw;
mod dcgm;
mod document;
mod events;
pub mod localize;
mod nodes;
pub mod plots;
mod render;

use crate::record::RecordError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::phase::{PhaseEvent, PhaseMetric};
use crate::plan::Plan;
use crate::plan::gates::Baseline;
use crate::record::telemetry::visit_telemetry;
use crate::record::{Change, RecordEvent, Recorded, Summary, read_summary};
use plots::{Axis, Chart, PALETTE, Series};

/// Everything a report says, gathered from the record.
pub struct ReportData {
    /// `summary.json`.
    pub summary: Summary,
    /// Phases that started but have no verdict (the run stopped mid-phase).
    pub unfinished: Vec<String>,
    /// The baseline the gates used, if it can still be read.
    pub baseline: Option<Baseline>,
    /// Why the baseline could not be read.
    pub baseline_note: Option<String>,
    /// Findings raised during the run, with when they cleared.
    pub findings: Vec<FindingRow>,
    /// The charts.
    pub charts: Vec<(String, Chart)>,
    /// Lines of the record that did not decode, and telemetry segments torn by a crash.
    pub damage: Vec<String>,
    /// What could not be shown, and why.
    pub missing: Vec<String>,
    /// The plan's `together` gates: (phase, figure) → how many percent worse it may get.
    pub together_limits: BTreeMap<(String, String), f64>,
    /// The sign-off's fields, from the plan's `[vars]` (`site`, `customer`, `contract`).
    pub signoff: Vec<(String, String)>,
    /// The fault searches run into this record.
    pub searches: Vec<localize::SearchShown>,
    /// Nodes whose output was more than the record's events keep, and where all of it is.
    pub output: Vec<String>,
}

/// One finding of the run: one row however often it came and went.
pub struct FindingRow {
    /// When it was up: raised, and cleared (`None`: still there at the end of the record),
    /// in order.
    pub spans: Vec<(u64, Option<u64>)>,
    /// `info`, `warn`, `crit`.
    pub severity: String,
    /// Rule.
    pub rule: String,
    /// Subject.
    pub subject: String,
    /// The node it is about, where its subject names one of the run's nodes.
    pub node: Option<String>,
    /// The GPU it is about, where its subject names one (`node07 GPU3`).
    pub gpu: Option<u32>,
    /// Evidence when raised.
    pub why: String,
    /// Next step.
    pub next: String,
}

/// The files a report wrote.
pub struct ReportFiles {
    /// `report.md`.
    pub markdown: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
    /// Whether the run was complete.
    pub complete: bool,
}

/// Most points a line of a chart keeps (a 72-hour run stays a small file).
const MAX_POINTS: usize = 400;

/// Colours of the GPUs a critical finding named, on the power plot (dark, to stand out of
/// the thin lines of the rest).
const FLAGGED: &[&str] = &["#000000", "#8c1c13", "#3a0ca3", "#006d2c", "#7a4b00"];

/// Gather the report's content from `run_dir`.
pub fn gather(run_dir: &Path) -> Result<ReportData, RecordError> {
    let summary = read_summary(run_dir)?;
    let events::ReportEvents {
        kept: events,
        bad,
        output,
    } = events::report_events(run_dir)?;
    let output = events::output_notes(run_dir, &output);
    // Only each GPU's power over time is needed from the telemetry: folded while the segments
    // stream past and thinned as it comes (`plots::Thinning`), so a 72-hour record of 96
    // nodes is held as at most 800 runs a GPU, not 259 200 points (3.2 GB for 768 GPUs).
    let mut power: BTreeMap<(String, u32), plots::Thinning> = BTreeMap::new();
    let telemetry = visit_telemetry(run_dir, |s| {
        let at_s = s.t.saturating_sub(summary.started_ms) as f64 / 1000.0;
        for g in s.stats() {
            if let Some(p) = g.power {
                power
                    .entry((s.node.clone(), g.i))
                    .or_insert_with(|| plots::Thinning::new(MAX_POINTS))
                    .push(at_s, p.mean());
            }
        }
    })?;
    let mut damage = Vec::new();
    if bad > 0 {
        damage.push(format!(
            "{bad} line(s) of events.jsonl did not decode (a line torn by a crash is one)"
        ));
    }
    for t in &telemetry.torn {
        damage.push(format!(
            "telemetry segment {t} ends torn (the run stopped while writing it); what precedes the tear is used"
        ));
    }
    for t in &telemetry.inflated_past {
        damage.push(format!(
            "telemetry segment {t} inflates far past what burnin writes (a gzip bomb?); the rest of it is left out"
        ));
    }
    for t in &telemetry.not_gzip {
        damage.push(format!(
            "telemetry segment {t} is not gzip data (not torn by a crash: something else wrote it); left out"
        ));
    }
    if telemetry.bad_lines > 0 {
        damage.push(format!(
            "{} telemetry line(s) did not decode",
            telemetry.bad_lines
        ));
    }
    let (baseline, baseline_note) = match &summary.baseline {
        None => (None, None),
        Some(p) => match crate::record::session::read_baseline(Path::new(p)) {
            Ok(b) => (Some(b), None),
            // Not why: the record names the path, and the error of a file that is no
            // baseline can quote what it holds into a report that leaves the site.
            Err(_) => (
                None,
                Some(format!(
                    "baseline {p} could not be read as a baseline (`burnin baseline save` writes one)"
                )),
            ),
        },
    };
    let mut started: Vec<String> = Vec::new();
    let mut finished: Vec<String> = Vec::new();
    for e in &events {
        match e {
            Recorded::Phase(PhaseEvent::Started { phase, .. }) => {
                started.retain(|p| p != phase);
                started.push(phase.clone());
                finished.retain(|p| p != phase);
            }
            Recorded::Phase(PhaseEvent::Finished { phase, .. }) => {
                started.retain(|p| p != phase);
                finished.push(phase.clone());
            }
            _ => {}
        }
    }
    let mut missing = Vec::new();
    let mut charts = Vec::new();
    let node_names: Vec<String> = summary.nodes.iter().map(|n| n.name.clone()).collect();
    let findings = finding_rows(&events, &node_names);
    charts.push((
        "power".to_string(),
        power_chart(&summary, power, &findings, &mut missing),
    ));
    let (plan, plan_note) = crate::record::recorded_plan(run_dir, &summary);
    missing.extend(plan_note);
    // Phases in the plan's order (T0 first), not in the order they ended.
    let mut summary = summary;
    summary.phases.sort_by_key(|p| {
        plan.phases
            .iter()
            .position(|x| x.id == p.id)
            .unwrap_or(usize::MAX)
    });
    let runs = last_run_metrics(&events);
    for (id, chart) in busbw::busbw_charts(&plan, &runs, baseline.as_ref()) {
        charts.push((format!("busbw-{id}"), chart));
    }
    for (id, chart) in data_wait_charts(&plan, &runs) {
        charts.push((format!("data-wait-{id}"), chart));
    }
    for (id, chart) in gds_charts(&runs) {
        charts.push((format!("gds-{id}"), chart));
    }
    let cdfs = latency_charts(&runs);
    if cdfs.is_empty() {
        missing.push(
            "GET latency CDF: no phase of this run measured AIStor GETs (the S2 probe records it)"
                .into(),
        );
    }
    for (id, chart) in cdfs {
        charts.push((format!("latency-{id}"), chart));
    }
    let together_limits = plan
        .phases
        .iter()
        .flat_map(|p| {
            p.gates.iter().filter_map(|g| match g {
                crate::plan::Gate::Together { figure, worse_pct } => {
                    Some(((p.id.clone(), figure.clone()), *worse_pct))
                }
                _ => None,
            })
        })
        .collect();
    let signoff = ["site", "customer", "contract"]
        .iter()
        .map(|k| {
            let v = plan.vars.get(*k).map(|v| v.trim()).unwrap_or("");
            let v = if v.is_empty() {
                "— (set it in the plan's [vars])".to_string()
            } else {
                v.to_string()
            };
            (k.to_string(), v)
        })
        .collect();
    let searches = localize::read_searches(run_dir, &mut damage);
    Ok(ReportData {
        output,
        searches,
        together_limits,
        signoff,
        findings,
        unfinished: started,
        baseline,
        baseline_note,
        charts,
        damage,
        missing,
        summary,
    })
}

/// Write `report.md`, its SVG files and `report.html` into `run_dir`.
pub fn write(run_dir: &Path) -> Result<ReportFiles, RecordError> {
    let data = gather(run_dir)?;
    let write = |name: &str, text: &str| {
        let p = run_dir.join(name);
        // Never through a link planted in the record: a new file renamed over the old one.
        crate::record::files::write_replacing(&p, text.as_bytes())?;
        Ok::<PathBuf, RecordError>(p)
    };
    for (name, chart) in &data.charts {
        write(&format!("report-{name}.svg"), &plots::svg(chart))?;
    }
    for s in &data.searches {
        write(&format!("report-{}.svg", s.dir), &plots::svg(&s.chart))?;
    }
    let markdown = write("report.md", &render::markdown(&data))?;
    let html = write("report.html", &render::html(&data))?;
    Ok(ReportFiles {
        markdown,
        html,
        complete: data.summary.ended_ms.is_some() && data.unfinished.is_empty(),
    })
}

fn finding_rows(events: &[Recorded], nodes: &[String]) -> Vec<FindingRow> {
    let mut rows: Vec<FindingRow> = Vec::new();
    let mut open: BTreeMap<(String, String, Option<String>), usize> = BTreeMap::new();
    let mut seen: BTreeMap<(String, String, Option<String>), usize> = BTreeMap::new();
    for e in events {
        let Recorded::Run(RecordEvent::Finding {
            at_ms,
            change,
            severity,
            rule,
            subject,
            phase,
            why,
            next,
        }) = e
        else {
            continue;
        };
        let key = (rule.clone(), subject.clone(), phase.clone());
        match change {
            // The same finding again (it cleared, the condition came back): a span of its row.
            Change::Raised if let Some(&i) = seen.get(&key) => {
                rows[i].spans.push((*at_ms, None));
                open.insert(key, i);
            }
            Change::Raised => {
                open.insert(key.clone(), rows.len());
                seen.insert(key, rows.len());
                let (node, gpu) = subject_of(subject, nodes);
                rows.push(FindingRow {
                    spans: vec![(*at_ms, None)],
                    severity: severity.clone(),
                    rule: rule.clone(),
                    node,
                    gpu,
                    subject: match phase {
                        Some(p) => format!("{subject} ({p})"),
                        None => subject.clone(),
                    },
                    why: why.clone(),
                    next: next.clone(),
                });
            }
            Change::Cleared => {
                if let Some(i) = open.remove(&key)
                    && let Some(span) = rows[i].spans.last_mut()
                {
                    span.1 = Some(*at_ms);
                }
            }
        }
    }
    let rank = |s: &str| match s {
        "crit" => 0,
        "warn" => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        rank(&a.severity)
            .cmp(&rank(&b.severity))
            .then(a.spans.first().cmp(&b.spans.first()))
    });
    rows
}

/// The node and GPU a finding's subject names: `node07 GPU3`, `node07`, or neither (`T4`,
/// `AIStor`).
fn subject_of(subject: &str, nodes: &[String]) -> (Option<String>, Option<u32>) {
    for n in nodes {
        if subject == n {
            return (Some(n.clone()), None);
        }
        if let Some(g) = subject
            .strip_prefix(n.as_str())
            .and_then(|r| r.strip_prefix(" GPU"))
            .and_then(|g| g.parse::<u32>().ok())
        {
            return (Some(n.clone()), Some(g));
        }
    }
    (None, None)
}

/// Power per GPU over time: `per_gpu` is (node, GPU) → (seconds since the start, mean W).
fn power_chart(
    summary: &Summary,
    per_gpu: BTreeMap<(String, u32), plots::Thinning>,
    findings: &[FindingRow],
    missing: &mut Vec<String>,
) -> Chart {
    // The GPUs a critical finding named are drawn bold and named in the legend (with what
    // was found); the rest are thin lines.
    let mut flagged: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for f in findings.iter().filter(|f| f.severity == "crit") {
        let rules = flagged.entry(f.subject.clone()).or_default();
        if !rules.contains(&f.rule.as_str()) {
            rules.push(&f.rule);
        }
    }
    if per_gpu.is_empty() {
        missing.push("power per GPU: the record has no telemetry (run with telemetry on)".into());
    }
    let limits: Vec<f64> = summary
        .nodes
        .iter()
        .filter_map(|n| n.hello.as_ref())
        .flat_map(|h| h.gpus.iter().filter_map(|g| g.power_limit_watts))
        .map(f64::from)
        .collect();
    let gpus = per_gpu.len();
    let end = per_gpu
        .values()
        .filter_map(plots::Thinning::last_x)
        .fold(0.0, f64::max);
    let mut bold = 0;
    let mut series: Vec<Series> = per_gpu
        .into_iter()
        .enumerate()
        .map(|(i, ((node, gpu), pts))| {
            let name = format!("{node} GPU{gpu}");
            match flagged.get(&name) {
                Some(rules) => {
                    bold += 1;
                    Series {
                        label: format!("{name}: {}", rules.join(", ")),
                        points: pts.points(),
                        color: FLAGGED[(bold - 1) % FLAGGED.len()],
                        dashed: false,
                        thin: false,
                    }
                }
                None => Series {
                    label: name,
                    points: pts.points(),
                    color: PALETTE[i % PALETTE.len()],
                    dashed: false,
                    thin: true,
                },
            }
        })
        .collect();
    if let Some(limit) = crate::store::median(limits.into_iter()) {
        series.push(Series {
            label: format!("power limit {limit:.0} W"),
            points: vec![(0.0, limit), (end, limit)],
            color: "#d62728",
            dashed: true,
            thin: false,
        });
    }
    Chart {
        title: "Power per GPU (1 s mean)".into(),
        x: Axis::Elapsed,
        x_label: "time since the run started".into(),
        y_label: "W".into(),
        series,
        legend_note: Some(if bold > 0 {
            format!("{gpus} GPUs, one thin line each; bold: the {bold} a critical finding named")
        } else {
            format!("{gpus} GPUs, one line each")
        }),
        categories: Vec::new(),
    }
}

/// The metrics of each phase's last run, by phase.
fn last_run_metrics(events: &[Recorded]) -> BTreeMap<String, Vec<PhaseMetric>> {
    let mut out: BTreeMap<String, Vec<PhaseMetric>> = BTreeMap::new();
    for e in events {
        match e {
            Recorded::Phase(PhaseEvent::Started { phase, .. }) => {
                out.insert(phase.clone(), Vec::new());
            }
            Recorded::Phase(PhaseEvent::Metric { phase, metric, .. }) => {
                out.entry(phase.clone()).or_default().push(metric.clone());
            }
            _ => {}
        }
    }
    out
}

fn data_wait_charts(
    plan: &Plan,
    runs: &BTreeMap<String, Vec<PhaseMetric>>,
) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for (phase, metrics) in runs {
        let phase = phase.clone();
        // Per step: the median over the nodes of the wait's share of the step.
        let mut steps: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for m in metrics {
            if let PhaseMetric::Step {
                step,
                step_time_ms: Some(step_time_ms),
                data_wait_ms: Some(w),
                variant: None,
                ..
            } = m
                && *step_time_ms > 0.0
            {
                steps
                    .entry(*step)
                    .or_default()
                    .push(100.0 * w / step_time_ms);
            }
        }
        if steps.is_empty() {
            continue;
        }
        let pts: Vec<(f64, f64)> = steps
            .into_iter()
            .filter_map(|(s, v)| crate::store::median(v.into_iter()).map(|m| (s as f64, m)))
            .collect();
        let (lo, hi) = (
            pts.first().map_or(0.0, |p| p.0),
            pts.last().map_or(0.0, |p| p.0),
        );
        // The phase's own gate where it has one; else the line triage judges by.
        let (gate, whose) = plan
            .find(&phase)
            .and_then(|spec| {
                spec.gates.iter().find_map(|g| match g {
                    crate::plan::Gate::Max { figure, value } if figure == "data_wait_pct" => {
                        Some((*value, "gate"))
                    }
                    _ => None,
                })
            })
            .unwrap_or((crate::triage::LOADER_WAIT_SHARE * 100.0, "triage default"));
        out.push((
            phase.clone(),
            Chart {
                title: format!(
                    "{phase}: data wait per step (share of step time, median over nodes)"
                ),
                x: Axis::Plain,
                x_label: "step".into(),
                y_label: "% of step".into(),
                series: vec![
                    Series {
                        label: "data wait".into(),
                        points: plots::thin_out(&pts, MAX_POINTS),
                        color: PALETTE[0],
                        dashed: false,
                        thin: false,
                    },
                    Series {
                        label: format!("{whose} {gate:.0} %"),
                        points: vec![(lo, gate), (hi, gate)],
                        color: "#d62728",
                        dashed: true,
                        thin: false,
                    },
                ],
                legend_note: None,
                categories: Vec::new(),
            },
        ));
    }
    out
}

/// Per phase with probe latencies: the GET TTFB CDF of every node and concurrency level.
/// The transfer types S4 compares, in the order the bars stand: GPU-direct, then through the
/// CPU into the GPU, then the CPU alone.
const GDS_PATHS: [(&str, &str, &str); 3] = [
    ("gpud", "GPU-direct (-x 0)", "#2ca02c"),
    ("cpu_gpu", "CPU→GPU (-x 2)", "#ff7f0e"),
    ("cpuonly", "CPU only (-x 1)", "#7f7f7f"),
];

/// Most GPUs one GDS chart has bars for (a chart per phase; 12 nodes × 8 GPUs is 96).
const GDS_CHART_GPUS: usize = 128;

/// Per phase that ran gdsio: read GiB/s per GPU and path, grouped by GPU (`node/gpuN`).
fn gds_charts(runs: &BTreeMap<String, Vec<PhaseMetric>>) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for (phase, metrics) in runs {
        let mut subjects: Vec<String> = Vec::new();
        let mut values: Vec<(usize, usize, f64)> = Vec::new();
        for m in metrics {
            let PhaseMetric::Figure {
                node,
                gpu,
                name,
                value,
            } = m
            else {
                continue;
            };
            let Some(path) = GDS_PATHS
                .iter()
                .position(|(x, _, _)| name == &format!("gdsio_gib_per_s_{x}_read"))
            else {
                continue;
            };
            let subject = match gpu {
                Some(g) => format!("{node}/gpu{g}"),
                None => node.clone(),
            };
            let at = match subjects.iter().position(|s| *s == subject) {
                Some(i) => i,
                None if subjects.len() < GDS_CHART_GPUS => {
                    subjects.push(subject);
                    subjects.len() - 1
                }
                None => continue,
            };
            values.push((path, at, *value));
        }
        if values.is_empty() {
            continue;
        }
        let series = GDS_PATHS
            .iter()
            .enumerate()
            .map(|(k, (_, label, color))| Series {
                label: (*label).into(),
                points: values
                    .iter()
                    .filter(|(p, _, _)| *p == k)
                    .map(|(_, at, v)| (*at as f64, *v))
                    .collect(),
                color,
                dashed: false,
                thin: false,
            })
            .collect();
        out.push((
            phase.clone(),
            Chart {
                title: format!("{phase}: read GiB/s per GPU, GPU-direct against the CPU paths"),
                x: Axis::Plain,
                x_label: "GPU".into(),
                y_label: "GiB/s".into(),
                series,
                legend_note: None,
                categories: subjects,
            },
        ));
    }
    out
}

fn latency_charts(runs: &BTreeMap<String, Vec<PhaseMetric>>) -> Vec<(String, Chart)> {
    let mut out = Vec::new();
    for (phase, metrics) in runs {
        let phase = phase.clone();
        let mut series = Vec::new();
        let mut what_seen = None;
        for m in metrics {
            if let PhaseMetric::LatencyCdf {
                node,
                what,
                concurrency,
                points,
            } = m
            {
                what_seen.get_or_insert_with(|| what.clone());
                let i = series.len();
                series.push(Series {
                    label: match concurrency {
                        Some(c) => format!("{node} c{c}"),
                        None => node.clone(),
                    },
                    points: points.iter().map(|(ms, q)| (*ms, q * 100.0)).collect(),
                    color: PALETTE[i % PALETTE.len()],
                    dashed: false,
                    thin: false,
                });
            }
        }
        let Some(what) = what_seen else { continue };
        out.push((
            phase.clone(),
            Chart {
                title: format!("{phase}: {what} CDF per node and concurrency"),
                x: Axis::Plain,
                x_label: "latency, ms".into(),
                y_label: "% of requests".into(),
                series,
                legend_note: None,
                categories: Vec::new(),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(gpu: u32, name: &str, value: f64) -> PhaseMetric {
        PhaseMetric::Figure {
            node: "n1".into(),
            gpu: Some(gpu),
            name: name.into(),
            value,
        }
    }

    /// S4's read figures become one bar per GPU and path, each bar as tall as its figure; the
    /// write figures and other phases' figures draw nothing here.
    #[test]
    fn s4_draws_a_bar_per_gpu_and_path() {
        let mut runs = BTreeMap::new();
        runs.insert(
            "S4".to_string(),
            vec![
                figure(0, "gdsio_gib_per_s_gpud_read", 12.5),
                figure(0, "gdsio_gib_per_s_cpu_gpu_read", 6.25),
                figure(0, "gdsio_gib_per_s_cpuonly_read", 7.0),
                figure(1, "gdsio_gib_per_s_gpud_read", 3.0),
                figure(1, "gdsio_gib_per_s_gpud_write", 99.0),
            ],
        );
        runs.insert("S2".to_string(), vec![figure(0, "s3_gb_per_s", 5.0)]);
        let charts = gds_charts(&runs);
        assert_eq!(charts.len(), 1);
        let (id, chart) = &charts[0];
        assert_eq!(id, "S4");
        assert_eq!(chart.categories, ["n1/gpu0", "n1/gpu1"]);
        let points: Vec<Vec<(f64, f64)>> = chart.series.iter().map(|s| s.points.clone()).collect();
        assert_eq!(
            points,
            [
                vec![(0.0, 12.5), (1.0, 3.0)],
                vec![(0.0, 6.25)],
                vec![(0.0, 7.0)]
            ]
        );
        let svg = plots::svg(chart);
        assert_eq!(
            svg.matches("<rect x=").count(),
            4 + 3 + 1,
            "bars, legend keys, frame"
        );
        assert!(
            svg.contains("<title>GPU-direct (-x 0): 12.5</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>CPU→GPU (-x 2): 6.25</title>"), "{svg}");
        assert!(!svg.contains(": 99"), "write figures are not drawn");
    }
}
