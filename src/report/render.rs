//! The report's two faces: Markdown (plots as SVG files beside it) and one self-contained HTML
//! file (plots inline, styles inline, no scripts, no external assets). Both say the same things
//! in the same order.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::ReportData;
use super::plots::{self, esc};
use crate::phases::Verdict;
use crate::phases::gates::{Sample, fmt_value};
use crate::record::{RecordPhase, Summary, utc_stamp};

/// `2026-12-02 16:00:00 UTC`.
fn utc(ms: u64) -> String {
    let s = utc_stamp(ms / 1000);
    format!(
        "{}-{}-{} {}:{}:{} UTC",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[9..11],
        &s[11..13],
        &s[13..15]
    )
}

fn duration(ms: u64) -> String {
    crate::model::human_secs(ms / 1000)
}

/// The run's verdict in one line.
fn headline(d: &ReportData) -> String {
    let s = &d.summary;
    if s.ended_ms.is_none() || !d.unfinished.is_empty() {
        return format!(
            "INCOMPLETE: the run stopped before it ended{} — verdicts below are those recorded",
            if d.unfinished.is_empty() {
                String::new()
            } else {
                format!(" ({} had no verdict)", d.unfinished.join(", "))
            }
        );
    }
    let v = s.verdict.map_or("no verdict", Verdict::label);
    if s.interrupted {
        format!("{v} (interrupted by the operator)")
    } else {
        v.to_string()
    }
}

struct FigureRow {
    phase: String,
    name: String,
    median: f64,
    min: f64,
    max: f64,
    n: usize,
    baseline: Option<f64>,
}

fn figure_rows(d: &ReportData) -> Vec<FigureRow> {
    let mut out = Vec::new();
    for p in &d.summary.phases {
        for (name, samples) in &p.figures {
            let v: Vec<f64> = samples.iter().map(|s| s.value).collect();
            let Some(median) = crate::cluster::median(v.iter().copied()) else {
                continue;
            };
            let baseline = d
                .baseline
                .as_ref()
                .and_then(|b| b.phases.get(&p.id))
                .and_then(|f| f.get(name))
                .and_then(|b: &Vec<Sample>| crate::cluster::median(b.iter().map(|s| s.value)));
            out.push(FigureRow {
                phase: p.id.clone(),
                name: name.clone(),
                median,
                min: v.iter().copied().fold(f64::INFINITY, f64::min),
                max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                n: v.len(),
                baseline,
            });
        }
    }
    out
}

/// Bill of materials: nodes grouped by what they reported.
fn bom(s: &Summary) -> Vec<(String, String)> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in &s.nodes {
        let what = match &n.hello {
            None => "did not report (not watched, or never answered)".to_string(),
            Some(h) => {
                let mut models: BTreeMap<&str, usize> = BTreeMap::new();
                for g in &h.gpus {
                    *models.entry(g.name.as_str()).or_default() += 1;
                }
                let gpus: Vec<String> = models.iter().map(|(m, c)| format!("{c} × {m}")).collect();
                let system = match &h.system {
                    None => "kernel, OS, fabric manager, NCCL: not reported by this agent".into(),
                    Some(sys) => format!(
                        "kernel {}, {}, fabric manager {}, NCCL {}",
                        sys.kernel.as_deref().unwrap_or("n/a"),
                        sys.os.as_deref().unwrap_or("OS n/a"),
                        sys.fabric_manager.as_deref().unwrap_or("not installed"),
                        if sys.nccl.is_empty() {
                            "not found".to_string()
                        } else {
                            sys.nccl.join(" + ")
                        }
                    ),
                };
                format!(
                    "driver {}, CUDA {}, {}, {system}, agent {}",
                    h.driver.as_deref().unwrap_or("n/a"),
                    h.cuda.as_deref().unwrap_or("n/a"),
                    if gpus.is_empty() {
                        "no GPUs".to_string()
                    } else {
                        gpus.join(", ")
                    },
                    h.agent_version
                )
            }
        };
        groups.entry(what).or_default().push(n.name.clone());
    }
    groups
        .into_iter()
        .map(|(what, nodes)| (nodes_label(&nodes), what))
        .collect()
}

fn nodes_label(nodes: &[String]) -> String {
    match nodes {
        [one] => one.clone(),
        [first, .., last] => format!("{} nodes ({first} … {last})", nodes.len()),
        [] => String::new(),
    }
}

fn phase_duration(p: &RecordPhase) -> String {
    p.started_ms
        .map_or_else(|| "—".into(), |s| duration(p.ended_ms.saturating_sub(s)))
}

/// Markdown table cells cannot hold `|` or newlines.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown report.
pub fn markdown(d: &ReportData) -> String {
    let s = &d.summary;
    let mut o = String::new();
    let _ = writeln!(o, "# burnin acceptance report — run {}\n", s.run_id);
    let _ = writeln!(o, "**Verdict: {}**\n", headline(d));
    let _ = writeln!(o, "| | |\n|---|---|");
    let _ = writeln!(o, "| started | {} |", utc(s.started_ms));
    let _ = writeln!(
        o,
        "| ended | {} |",
        s.ended_ms.map_or_else(
            || "— (no end recorded)".into(),
            |e| format!("{} ({})", utc(e), duration(e.saturating_sub(s.started_ms)))
        )
    );
    let gpus: u32 = s.nodes.iter().map(|n| n.gpus).sum();
    let _ = writeln!(o, "| nodes | {} ({gpus} GPUs expected) |", s.nodes.len());
    let _ = writeln!(o, "| inventory | {} |", cell(&s.inventory));
    let _ = writeln!(o, "| plan | {} |", cell(&s.plan));
    let _ = writeln!(
        o,
        "| baseline | {} |",
        cell(s.baseline.as_deref().unwrap_or("none"))
    );
    let _ = writeln!(o, "| burnin | {} |\n", s.burnin_version);
    for note in d.damage.iter().chain(&d.baseline_note) {
        let _ = writeln!(o, "> {note}\n");
    }

    let _ = writeln!(o, "## Phases\n");
    let _ = writeln!(
        o,
        "| phase | title | verdict | took | why |\n|---|---|---|---|---|"
    );
    for p in &s.phases {
        let _ = writeln!(
            o,
            "| {} | {} | **{}** | {} | {} |",
            p.id,
            cell(&p.title),
            p.verdict.label(),
            phase_duration(p),
            cell(&p.reason)
        );
    }
    for u in &d.unfinished {
        let _ = writeln!(
            o,
            "| {u} | | **NO VERDICT** | | started; the run stopped before it ended |"
        );
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## Figures against gates\n");
    let rows = figure_rows(d);
    if rows.is_empty() {
        let _ = writeln!(o, "No phase recorded figures.\n");
    } else {
        let _ = writeln!(
            o,
            "| phase | figure | median | min | max | n | baseline median |\n|---|---|---|---|---|---|---|"
        );
        for r in &rows {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.phase,
                r.name,
                fmt_value(r.median),
                fmt_value(r.min),
                fmt_value(r.max),
                r.n,
                r.baseline.map_or_else(|| "—".into(), fmt_value)
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "Gates, as the plan states them:\n");
        for p in &s.phases {
            let _ = writeln!(o, "- **{}**: {}", p.id, p.gate);
        }
        let _ = writeln!(o);
    }

    let _ = writeln!(o, "## Plots\n");
    for (name, chart) in &d.charts {
        let _ = writeln!(o, "![{}](report-{name}.svg)\n", chart.title);
    }
    for m in &d.missing {
        let _ = writeln!(o, "- not plotted: {m}");
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## Findings\n");
    if d.findings.is_empty() {
        let _ = writeln!(o, "No triage finding was raised during the run.\n");
    } else {
        let _ = writeln!(
            o,
            "| severity | subject | rule | raised | cleared | why | next step |\n|---|---|---|---|---|---|---|"
        );
        for f in &d.findings {
            let _ = writeln!(
                o,
                "| {} | {} | {} | +{} | {} | {} | {} |",
                f.severity,
                cell(&f.subject),
                f.rule,
                duration(f.raised_ms.saturating_sub(s.started_ms)),
                f.cleared_ms.map_or_else(
                    || "still at the end".into(),
                    |c| format!("+{}", duration(c.saturating_sub(s.started_ms)))
                ),
                cell(&f.why),
                cell(&f.next)
            );
        }
        let _ = writeln!(o);
    }

    let _ = writeln!(o, "## Bill of materials\n");
    let _ = writeln!(o, "| nodes | as they reported |\n|---|---|");
    for (nodes, what) in bom(s) {
        let _ = writeln!(o, "| {} | {} |", cell(&nodes), cell(&what));
    }
    let _ = writeln!(o, "\nReport made by burnin {}.", env!("CARGO_PKG_VERSION"));
    o
}

fn verdict_class(v: &str) -> &'static str {
    match v {
        "PASS" => "pass",
        "WARN" => "warn",
        "SKIPPED" => "skip",
        _ => "fail",
    }
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}\
th{background:#f3f3f3}.v{font-weight:bold;padding:2px 6px;border-radius:3px}.pass{background:#d9f2d9}.warn{background:#fff1c2}\
.fail{background:#f8d0d0}.skip{background:#eee}.banner{padding:8px 12px;border-radius:4px;font-size:18px}\
.note{color:#555;font-style:italic}figure{margin:1em 0}";

/// The HTML report: one file.
pub fn html(d: &ReportData) -> String {
    let s = &d.summary;
    let mut o = String::new();
    let head = headline(d);
    let class = if head.starts_with("INCOMPLETE") {
        "fail"
    } else {
        verdict_class(head.split(' ').next().unwrap_or(""))
    };
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>burnin report {id}</title><style>{STYLE}</style></head><body><h1>burnin acceptance report — run {id}</h1><p class=\"banner {class}\">Verdict: {}</p>",
        esc(&head),
        id = esc(&s.run_id)
    );
    let gpus: u32 = s.nodes.iter().map(|n| n.gpus).sum();
    let _ = write!(
        o,
        "<table><tr><th>started</th><td>{}</td></tr><tr><th>ended</th><td>{}</td></tr><tr><th>nodes</th><td>{} ({gpus} GPUs expected)</td></tr><tr><th>inventory</th><td>{}</td></tr><tr><th>plan</th><td>{}</td></tr><tr><th>baseline</th><td>{}</td></tr><tr><th>burnin</th><td>{}</td></tr></table>",
        utc(s.started_ms),
        s.ended_ms.map_or_else(
            || "— (no end recorded)".into(),
            |e| format!("{} ({})", utc(e), duration(e.saturating_sub(s.started_ms)))
        ),
        s.nodes.len(),
        esc(&s.inventory),
        esc(&s.plan),
        esc(s.baseline.as_deref().unwrap_or("none")),
        esc(&s.burnin_version)
    );
    for note in d.damage.iter().chain(&d.baseline_note) {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(note));
    }
    let _ = write!(
        o,
        "<h2>Phases</h2><table><tr><th>phase</th><th>title</th><th>verdict</th><th>took</th><th>why</th></tr>"
    );
    for p in &s.phases {
        let v = p.verdict.label();
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td><span class=\"v {}\">{v}</span></td><td>{}</td><td>{}</td></tr>",
            esc(&p.id),
            esc(&p.title),
            verdict_class(v),
            phase_duration(p),
            esc(&p.reason)
        );
    }
    for u in &d.unfinished {
        let _ = write!(
            o,
            "<tr><td>{}</td><td></td><td><span class=\"v fail\">NO VERDICT</span></td><td></td><td>started; the run stopped before it ended</td></tr>",
            esc(u)
        );
    }
    o.push_str("</table><h2>Figures against gates</h2>");
    let rows = figure_rows(d);
    if rows.is_empty() {
        o.push_str("<p>No phase recorded figures.</p>");
    } else {
        o.push_str("<table><tr><th>phase</th><th>figure</th><th>median</th><th>min</th><th>max</th><th>n</th><th>baseline median</th></tr>");
        for r in &rows {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.phase),
                esc(&r.name),
                fmt_value(r.median),
                fmt_value(r.min),
                fmt_value(r.max),
                r.n,
                r.baseline.map_or_else(|| "—".into(), fmt_value)
            );
        }
        o.push_str("</table><ul>");
        for p in &s.phases {
            let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(&p.id), esc(&p.gate));
        }
        o.push_str("</ul>");
    }
    o.push_str("<h2>Plots</h2>");
    for (_, chart) in &d.charts {
        let _ = write!(o, "<figure>{}</figure>", plots::svg(chart));
    }
    if !d.missing.is_empty() {
        o.push_str("<ul>");
        for m in &d.missing {
            let _ = write!(o, "<li class=\"note\">not plotted: {}</li>", esc(m));
        }
        o.push_str("</ul>");
    }
    o.push_str("<h2>Findings</h2>");
    if d.findings.is_empty() {
        o.push_str("<p>No triage finding was raised during the run.</p>");
    } else {
        o.push_str("<table><tr><th>severity</th><th>subject</th><th>rule</th><th>raised</th><th>cleared</th><th>why</th><th>next step</th></tr>");
        for f in &d.findings {
            let class = match f.severity.as_str() {
                "crit" => "fail",
                "warn" => "warn",
                _ => "skip",
            };
            let _ = write!(
                o,
                "<tr><td><span class=\"v {class}\">{}</span></td><td>{}</td><td>{}</td><td>+{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.severity),
                esc(&f.subject),
                esc(&f.rule),
                duration(f.raised_ms.saturating_sub(s.started_ms)),
                f.cleared_ms.map_or_else(
                    || "still at the end".into(),
                    |c| format!("+{}", duration(c.saturating_sub(s.started_ms)))
                ),
                esc(&f.why),
                esc(&f.next)
            );
        }
        o.push_str("</table>");
    }
    o.push_str("<h2>Bill of materials</h2><table><tr><th>nodes</th><th>as they reported</th></tr>");
    for (nodes, what) in bom(s) {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&nodes),
            esc(&what)
        );
    }
    let _ = writeln!(
        o,
        "</table><p class=\"note\">Report made by burnin {}.</p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    o
}
