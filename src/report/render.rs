//! The report's two faces: Markdown (plots as SVG files beside it) and one self-contained HTML
//! file (plots inline, styles inline, no scripts, no external assets). Both say the same things
//! in the same order.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::ReportData;
use super::plots::{self, esc};
use crate::model::phase::{GateOutcome, GateStatus, Verdict};
use crate::plan::gates::{Sample, fmt_value};
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
    let v = if s.interrupted {
        format!("{v} (interrupted by the operator)")
    } else {
        v.to_string()
    };
    format!("{v}{}", simulated(s))
}

/// What the banner says of simulated nodes: a run on the simulator must not pass for one on
/// hardware, wherever the report is read from. Nodes say what agent they ran.
fn simulated(s: &Summary) -> String {
    let sim = s
        .nodes
        .iter()
        .filter(|n| {
            n.hello
                .as_ref()
                .is_some_and(|h| h.agent_version.starts_with("burnin-sim"))
        })
        .count();
    match sim {
        0 => String::new(),
        n if n == s.nodes.len() => {
            " — SIMULATED: every node was burnin's simulator; no hardware was tested".into()
        }
        n => format!(
            " — PARTLY SIMULATED: {n} of {} nodes were burnin's simulator",
            s.nodes.len()
        ),
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
            let Some(median) = crate::store::median(v.iter().copied()) else {
                continue;
            };
            let baseline = d
                .baseline
                .as_ref()
                .and_then(|b| b.phases.get(&p.id))
                .and_then(|f| f.get(name))
                .and_then(|b: &Vec<Sample>| crate::store::median(b.iter().map(|s| s.value)));
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
    md(s).replace('|', "\\|")
}

/// Text from the record (node names, phase titles, output lines, reasons) as inert Markdown:
/// one line, no control characters, HTML as entities (`<script>` renders in most Markdown
/// viewers), brackets escaped (no link, and no image that a viewer would fetch). Emphasis
/// and the rest are left alone: `tflops_bf16` and `>= 90 %` stay readable in the raw file.
fn md(s: &str) -> String {
    let one_line = crate::model::strip_controls(&s.replace(['\n', '\r'], " "));
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        match c {
            // `<` opens every tag; `&` an entity. `>` alone opens nothing mid-line: `>=` stays.
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// One table cell as both formats write it: bold in Markdown, a coloured badge in HTML.
struct Cell {
    text: String,
    strong: bool,
    badge: Option<&'static str>,
}

impl Cell {
    fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            strong: false,
            badge: None,
        }
    }

    /// A verdict: bold, and a badge of its colour.
    fn verdict(text: &str) -> Self {
        Self {
            text: text.to_string(),
            strong: true,
            badge: Some(verdict_class(text)),
        }
    }
}

/// The report's content in order; [`markdown`] and [`html`] only choose how it looks, so the
/// two cannot say different things.
enum Block<'a> {
    /// The verdict line.
    Banner(String),
    /// The run's facts (started, ended, nodes, …).
    Facts(Vec<(&'static str, String)>),
    /// A remark about the record (damage, the baseline).
    Note(&'a str),
    /// A section title.
    Heading(&'static str),
    /// A sentence standing for an empty section.
    Empty(&'static str),
    Table {
        header: &'static [&'static str],
        rows: Vec<Vec<Cell>>,
    },
    /// Each phase's gate, as the plan words it.
    Gates(Vec<(&'a str, &'a str)>),
    /// A plot (a file beside the Markdown, inline in the HTML).
    Plot(&'a str, &'a plots::Chart),
    /// What could not be plotted, and why.
    NotPlotted(&'a [String]),
}

fn document(d: &ReportData) -> Vec<Block<'_>> {
    let s = &d.summary;
    let mut doc = vec![Block::Banner(headline(d))];
    let gpus: u32 = s.nodes.iter().map(|n| n.gpus).fold(0, u32::saturating_add);
    doc.push(Block::Facts(vec![
        ("started", utc(s.started_ms)),
        (
            "ended",
            s.ended_ms.map_or_else(
                || "— (no end recorded)".into(),
                |e| format!("{} ({})", utc(e), duration(e.saturating_sub(s.started_ms))),
            ),
        ),
        ("nodes", format!("{} ({gpus} GPUs expected)", s.nodes.len())),
        ("inventory", s.inventory.clone()),
        ("plan", s.plan.clone()),
        (
            "baseline",
            s.baseline.clone().unwrap_or_else(|| "none".into()),
        ),
        ("burnin", s.burnin_version.clone()),
    ]));
    for note in d.damage.iter().chain(&d.baseline_note) {
        doc.push(Block::Note(note));
    }

    doc.push(Block::Heading("Phases"));
    let mut rows: Vec<Vec<Cell>> = s
        .phases
        .iter()
        .map(|p| {
            vec![
                Cell::plain(&p.id),
                Cell::plain(&p.title),
                Cell::verdict(p.verdict.label()),
                Cell::plain(phase_duration(p)),
                Cell::plain(&p.reason),
            ]
        })
        .collect();
    for u in &d.unfinished {
        rows.push(vec![
            Cell::plain(u),
            Cell::plain(""),
            Cell {
                text: "NO VERDICT".into(),
                strong: true,
                badge: Some("fail"),
            },
            Cell::plain(""),
            Cell::plain("started; the run stopped before it ended"),
        ]);
    }
    doc.push(Block::Table {
        header: &["phase", "title", "verdict", "took", "why"],
        rows,
    });

    doc.push(Block::Heading("Figures against gates"));
    let figures = figure_rows(d);
    if figures.is_empty() {
        doc.push(Block::Empty("No phase recorded figures."));
    } else {
        doc.push(Block::Table {
            header: &[
                "phase",
                "figure",
                "unit",
                "median",
                "min",
                "max",
                "n",
                "baseline median",
                "gates on it",
            ],
            rows: figures
                .iter()
                .map(|r| {
                    vec![
                        Cell::plain(&r.phase),
                        Cell::plain(&r.name),
                        Cell::plain(crate::model::figures::unit_of(&r.name)),
                        Cell::plain(fmt_value(r.median)),
                        Cell::plain(fmt_value(r.min)),
                        Cell::plain(fmt_value(r.max)),
                        Cell::plain(r.n.to_string()),
                        Cell::plain(r.baseline.map_or_else(|| "—".into(), fmt_value)),
                        gates_on(d, &r.phase, &r.name),
                    ]
                })
                .collect(),
        });
        doc.push(Block::Gates(
            s.phases
                .iter()
                .map(|p| (p.id.as_str(), p.gate.as_str()))
                .collect(),
        ));
    }

    // Every gate of every phase as it was judged: met, missed, or not judged and why.
    let gate_rows: Vec<Vec<Cell>> = s
        .phases
        .iter()
        .flat_map(|p| p.gates.iter().map(move |g| (p, g)))
        .map(|(p, g)| {
            vec![
                Cell::plain(&p.id),
                Cell::plain(&g.gate),
                Cell {
                    text: g.status.label().to_string(),
                    strong: g.status != GateStatus::Met,
                    badge: Some(gate_class(g.status)),
                },
                Cell::plain(if g.words.is_empty() {
                    "—".to_string()
                } else {
                    g.words.clone()
                }),
            ]
        })
        .collect();

    let together: Vec<Vec<Cell>> = s
        .phases
        .iter()
        .flat_map(|p| p.together.iter().map(move |c| (p, c)))
        .map(|(p, c)| {
            let worse = c.worse_pct();
            let way = if worse > 0.0 {
                "worse"
            } else if worse < 0.0 {
                "better"
            } else {
                "same"
            };
            let gate = match d.together_limits.get(&(p.id.clone(), c.figure.clone())) {
                Some(limit) if worse > *limit => Cell {
                    text: format!("over {limit} %"),
                    strong: true,
                    badge: Some("fail"),
                },
                Some(limit) => Cell::plain(format!("within {limit} %")),
                None => Cell::plain("shown only"),
            };
            vec![
                Cell::plain(&p.id),
                Cell::plain(&c.member),
                Cell::plain(&c.figure),
                Cell::plain(&c.subject),
                Cell::plain(fmt_value(c.alone)),
                Cell::plain(fmt_value(c.together)),
                Cell::plain(c.change_words()),
                Cell::plain(way),
                gate,
            ]
        })
        .collect();
    if !together.is_empty() {
        doc.push(Block::Heading("Phases run together"));
        doc.push(Block::Table {
            header: &[
                "phase", "member", "figure", "subject", "alone", "together", "change", "way",
                "gate",
            ],
            rows: together,
        });
    }

    let drills: Vec<Vec<Cell>> = s
        .phases
        .iter()
        .flat_map(|p| p.drill.iter().map(move |o| (p, o)))
        .map(|(p, o)| {
            let outcome = match (o.dipped, o.recovered_after_s) {
                _ if o.low.is_none() => Cell {
                    text: "no sample".into(),
                    strong: true,
                    badge: Some("fail"),
                },
                (false, _) => Cell::plain("not affected"),
                (true, Some(s)) => Cell::plain(format!("recovered in {s:.1} s")),
                (true, None) => Cell {
                    text: "did not recover".into(),
                    strong: true,
                    badge: Some("fail"),
                },
            };
            vec![
                Cell::plain(&p.id),
                Cell::plain(format!("{}. {}", o.step, o.ask)),
                Cell::plain(&o.figure),
                Cell::plain(&o.subject),
                Cell::plain(fmt_value(o.steady)),
                Cell::plain(o.low.map_or_else(|| "—".into(), fmt_value)),
                outcome,
                Cell::plain(match (o.error_lines, &o.first_error) {
                    (0, _) => "none".to_string(),
                    (n, Some(first)) => format!("{n}, first: {first}"),
                    (n, None) => n.to_string(),
                }),
            ]
        })
        .collect();
    if !drills.is_empty() {
        doc.push(Block::Heading("Drills"));
        doc.push(Block::Table {
            header: &[
                "phase",
                "step",
                "series",
                "subject",
                "steady",
                "low",
                "outcome",
                "error/retry lines",
            ],
            rows: drills,
        });
    }

    doc.push(Block::Heading("Plots"));
    for (name, chart) in &d.charts {
        doc.push(Block::Plot(name, chart));
    }
    doc.push(Block::NotPlotted(&d.missing));

    // Long (every gate of every phase): after the plots, which a reader looks at first.
    if !gate_rows.is_empty() {
        doc.push(Block::Heading("Gates, as judged"));
        doc.push(Block::Table {
            header: &["phase", "gate", "outcome", "what it read"],
            rows: gate_rows,
        });
    }
    doc.push(Block::Heading("Findings"));
    if d.findings.is_empty() {
        doc.push(Block::Empty("No triage finding was raised during the run."));
    } else {
        doc.push(Block::Table {
            header: &[
                "severity",
                "subject",
                "rule",
                "when (raised → cleared)",
                "why (when first raised)",
                "next step",
            ],
            rows: d
                .findings
                .iter()
                .map(|f| {
                    vec![
                        Cell {
                            text: f.severity.clone(),
                            strong: false,
                            badge: Some(match f.severity.as_str() {
                                "crit" => "fail",
                                "warn" => "warn",
                                _ => "skip",
                            }),
                        },
                        Cell::plain(&f.subject),
                        Cell::plain(&f.rule),
                        Cell::plain(
                            f.spans
                                .iter()
                                .map(|(raised, cleared)| {
                                    format!(
                                        "+{} → {}",
                                        duration(raised.saturating_sub(s.started_ms)),
                                        cleared.map_or_else(
                                            || "still at the end".into(),
                                            |c| format!(
                                                "+{}",
                                                duration(c.saturating_sub(s.started_ms))
                                            ),
                                        )
                                    )
                                })
                                .collect::<Vec<_>>()
                                .join("; "),
                        ),
                        Cell::plain(&f.why),
                        Cell::plain(&f.next),
                    ]
                })
                .collect(),
        });
    }

    doc.push(Block::Heading("Bill of materials"));
    doc.push(Block::Table {
        header: &["nodes", "as they reported"],
        rows: bom(s)
            .into_iter()
            .map(|(nodes, what)| vec![Cell::plain(nodes), Cell::plain(what)])
            .collect(),
    });
    doc
}

/// The Markdown report.
pub fn markdown(d: &ReportData) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# burnin acceptance report — run {}\n",
        md(&d.summary.run_id)
    );
    for block in document(d) {
        match block {
            Block::Banner(v) => {
                let _ = writeln!(o, "**Verdict: {}**\n", md(&v));
            }
            Block::Facts(facts) => {
                let _ = writeln!(o, "| | |\n|---|---|");
                for (k, v) in facts {
                    let _ = writeln!(o, "| {} | {} |", cell(k), cell(&v));
                }
                o.push('\n');
            }
            Block::Note(n) => {
                let _ = writeln!(o, "> {}\n", md(n));
            }
            Block::Heading(h) => {
                let _ = writeln!(o, "## {}\n", md(h));
            }
            Block::Empty(text) => {
                let _ = writeln!(o, "{}\n", md(text));
            }
            Block::Table { header, rows } => {
                let _ = writeln!(
                    o,
                    "| {} |\n|{}",
                    header
                        .iter()
                        .map(|h| cell(h))
                        .collect::<Vec<_>>()
                        .join(" | "),
                    "---|".repeat(header.len())
                );
                for row in rows {
                    o.push('|');
                    for c in row {
                        match (c.text.is_empty(), c.strong) {
                            (true, _) => o.push_str(" |"),
                            (false, true) => {
                                let _ = write!(o, " **{}** |", cell(&c.text));
                            }
                            (false, false) => {
                                let _ = write!(o, " {} |", cell(&c.text));
                            }
                        }
                    }
                    o.push('\n');
                }
                o.push('\n');
            }
            Block::Gates(gates) => {
                let _ = writeln!(o, "Gates, as the plan states them:\n");
                for (id, gate) in gates {
                    let _ = writeln!(o, "- **{}**: {}", md(id), md(gate));
                }
                o.push('\n');
            }
            Block::Plot(name, chart) => {
                let _ = writeln!(o, "![{}](report-{}.svg)\n", md(&chart.title), md(name));
            }
            Block::NotPlotted(missing) => {
                for m in missing {
                    let _ = writeln!(o, "- not plotted: {}", md(m));
                }
                o.push('\n');
            }
        }
    }
    let _ = writeln!(o, "Report made by burnin {}.", env!("CARGO_PKG_VERSION"));
    o
}

/// The colour of a gate's outcome.
fn gate_class(s: GateStatus) -> &'static str {
    match s {
        GateStatus::Met => "pass",
        GateStatus::Warned | GateStatus::NotJudged => "warn",
        GateStatus::Missed => "fail",
    }
}

/// The gates of `phase` that read `figure`, each with its outcome's mark (`✓ >= 100 · ✗ >= 90
/// % of baseline`); "—" when the record kept none.
fn gates_on(d: &ReportData, phase: &str, figure: &str) -> Cell {
    let prefix = format!("{figure} ");
    let gates: Vec<&GateOutcome> = d
        .summary
        .phases
        .iter()
        .filter(|p| p.id == phase)
        .flat_map(|p| &p.gates)
        .filter(|g| g.gate.starts_with(&prefix))
        .collect();
    if gates.is_empty() {
        return Cell::plain("—");
    }
    let worst = gates
        .iter()
        .map(|g| g.status)
        .max_by_key(|s| match s {
            GateStatus::Met => 0,
            GateStatus::NotJudged => 1,
            GateStatus::Warned => 2,
            GateStatus::Missed => 3,
        })
        .unwrap_or(GateStatus::Met);
    Cell {
        text: gates
            .iter()
            .map(|g| {
                format!(
                    "{} {} ({})",
                    g.status.mark(),
                    &g.gate[prefix.len()..],
                    g.status.label()
                )
            })
            .collect::<Vec<_>>()
            .join(" · "),
        strong: worst == GateStatus::Missed,
        badge: Some(gate_class(worst)),
    }
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
    let id = esc(&d.summary.run_id);
    let mut o = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>burnin report {id}</title><style>{STYLE}</style></head><body><h1>burnin acceptance report — run {id}</h1>"
    );
    for block in document(d) {
        match block {
            Block::Banner(v) => {
                let class = if v.starts_with("INCOMPLETE") {
                    "fail"
                } else {
                    verdict_class(v.split(' ').next().unwrap_or(""))
                };
                let _ = write!(o, "<p class=\"banner {class}\">Verdict: {}</p>", esc(&v));
            }
            Block::Facts(facts) => {
                o.push_str("<table>");
                for (k, v) in facts {
                    let _ = write!(o, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
                }
                o.push_str("</table>");
            }
            Block::Note(n) => {
                let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
            }
            Block::Heading(h) => {
                let _ = write!(o, "<h2>{h}</h2>");
            }
            Block::Empty(text) => {
                let _ = write!(o, "<p>{text}</p>");
            }
            Block::Table { header, rows } => {
                o.push_str("<table><tr>");
                for h in header {
                    let _ = write!(o, "<th>{h}</th>");
                }
                o.push_str("</tr>");
                for row in rows {
                    o.push_str("<tr>");
                    for c in row {
                        match c.badge {
                            Some(class) => {
                                let _ = write!(
                                    o,
                                    "<td><span class=\"v {class}\">{}</span></td>",
                                    esc(&c.text)
                                );
                            }
                            None => {
                                let _ = write!(o, "<td>{}</td>", esc(&c.text));
                            }
                        }
                    }
                    o.push_str("</tr>");
                }
                o.push_str("</table>");
            }
            Block::Gates(gates) => {
                o.push_str("<ul>");
                for (id, gate) in gates {
                    let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(id), esc(gate));
                }
                o.push_str("</ul>");
            }
            Block::Plot(_, chart) => {
                let _ = write!(o, "<figure>{}</figure>", plots::svg(chart));
            }
            Block::NotPlotted(missing) => {
                if !missing.is_empty() {
                    o.push_str("<ul>");
                    for m in missing {
                        let _ = write!(o, "<li class=\"note\">not plotted: {}</li>", esc(m));
                    }
                    o.push_str("</ul>");
                }
            }
        }
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">Report made by burnin {}.</p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    o
}
