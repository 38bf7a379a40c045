//! What the report says, in order: the banner, the run's facts, the nodes to return, the
//! phases, figures against gates, groups, drills, plots, gates as judged, findings, the bill
//! of materials and the sign-off. [`super::render`] only chooses how it looks.

use std::collections::BTreeMap;

use super::ReportData;
use super::render::{Block, Cell, duration, gate_class, utc};
use crate::model::phase::{GateOutcome, GateStatus, Verdict};
use crate::plan::gates::{Sample, fmt_value};
use crate::record::{RecordPhase, Summary};

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
        items: Vec::new(),
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

/// The report's blocks, in order.
pub(super) fn document(d: &ReportData) -> Vec<Block<'_>> {
    let mut doc = vec![Block::Banner(headline(d))];
    doc.push(facts(d));
    for note in d.damage.iter().chain(&d.baseline_note) {
        doc.push(Block::Note(note));
    }
    // First what goes back to the vendor: node by node, with what identifies each GPU.
    doc.push(Block::Heading("Nodes"));
    doc.push(Block::Empty(super::nodes::NODE_RULE));
    doc.push(super::nodes::node_table(d));
    doc.push(Block::Heading("Phases"));
    doc.push(phases_table(d));
    for note in &d.output {
        doc.push(Block::Note(note));
    }
    doc.extend(super::localize::section(&d.searches));
    if let Some(table) = super::dcgm::dcgm_table(d) {
        doc.push(Block::Heading("DCGM diagnostic beside burnin"));
        doc.push(Block::Empty(super::dcgm::DCGM_RULE));
        doc.push(table);
    }
    doc.extend(figures_section(d));
    doc.extend(together_section(d));
    doc.extend(drills_section(d));
    doc.push(Block::Heading("Plots"));
    for (name, chart) in &d.charts {
        doc.push(Block::Plot(name, chart));
    }
    doc.push(Block::NotPlotted(&d.missing));
    // Long (every gate of every phase): after the plots, which a reader looks at first.
    let gates = gate_rows(d);
    if !gates.is_empty() {
        doc.push(Block::Heading("Gates, as judged"));
        doc.push(Block::Table {
            header: &["phase", "gate", "outcome", "what it read"],
            rows: gates,
        });
    }
    doc.push(Block::Heading("Findings"));
    doc.push(findings_table(d));
    doc.push(Block::Heading("Bill of materials"));
    doc.push(Block::Table {
        header: &["nodes", "as they reported"],
        rows: bom(&d.summary)
            .into_iter()
            .map(|(nodes, what)| vec![Cell::plain(nodes), Cell::plain(what)])
            .collect(),
    });
    doc.push(Block::Heading("Sign-off"));
    doc.push(Block::SignOff(d.signoff.clone()));
    doc
}

/// The run's facts: when, what, and which baseline judged it, with where it came from.
fn facts(d: &ReportData) -> Block<'_> {
    let s = &d.summary;
    let gpus: u32 = s.nodes.iter().map(|n| n.gpus).fold(0, u32::saturating_add);
    let baseline = match (&s.baseline, &d.baseline) {
        (None, _) => "none: gates against a baseline were not judged".to_string(),
        (Some(path), Some(b)) => match &b.fleet {
            None => format!(
                "{path} (from {}; figures of {} phase(s))",
                b.source,
                b.phases.len()
            ),
            // A baseline from the fleet says its rule and what it left out of the reference.
            Some(o) => {
                let dropped = o.dropped.len() as u64 + o.dropped_more;
                let first = o
                    .dropped
                    .first()
                    .map(|d| format!(", first {}", d.describe()))
                    .unwrap_or_default();
                format!(
                    "{path} (built from {}: figures of {} phase(s), each the mean of its nodes, a node more than {} % worse left out: {dropped} left out{first})",
                    b.source,
                    b.phases.len(),
                    o.pct
                )
            }
        },
        (Some(path), None) => format!("{path} (could not be read now)"),
    };
    Block::Facts(vec![
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
        ("baseline", baseline),
        ("burnin", s.burnin_version.clone()),
    ])
}

/// Each phase's verdict, with its reasons as bullets.
fn phases_table(d: &ReportData) -> Block<'_> {
    let mut rows: Vec<Vec<Cell>> = d
        .summary
        .phases
        .iter()
        .map(|p| {
            vec![
                Cell::plain(&p.id),
                Cell::plain(&p.title),
                Cell::verdict(p.verdict.label()),
                Cell::plain(phase_duration(p)),
                Cell::reasons(&p.reason),
            ]
        })
        .collect();
    for u in &d.unfinished {
        rows.push(vec![
            Cell::plain(u),
            Cell::plain(""),
            Cell::badge("NO VERDICT", "fail"),
            Cell::plain(""),
            Cell::plain("started; the run stopped before it ended"),
        ]);
    }
    Block::Table {
        header: &["phase", "title", "verdict", "took", "why"],
        rows,
    }
}

fn figures_section(d: &ReportData) -> Vec<Block<'_>> {
    let mut out = vec![Block::Heading("Figures against gates")];
    let figures = figure_rows(d);
    if figures.is_empty() {
        out.push(Block::Empty("No phase recorded figures."));
        return out;
    }
    out.push(Block::Table {
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
    out.push(Block::Gates(
        d.summary
            .phases
            .iter()
            .map(|p| (p.id.as_str(), p.gate.as_str()))
            .collect(),
    ));
    out
}

/// Every gate of every phase as it was judged: met, missed, or not judged and why.
fn gate_rows(d: &ReportData) -> Vec<Vec<Cell>> {
    d.summary
        .phases
        .iter()
        .flat_map(|p| p.gates.iter().map(move |g| (p, g)))
        .map(|(p, g)| {
            vec![
                Cell::plain(&p.id),
                Cell::plain(&g.gate),
                Cell {
                    strong: g.status != GateStatus::Met,
                    ..Cell::badge(g.status.label(), gate_class(g.status))
                },
                Cell::plain(if g.words.is_empty() {
                    "—".to_string()
                } else {
                    g.words.clone()
                }),
            ]
        })
        .collect()
}

fn together_section(d: &ReportData) -> Vec<Block<'_>> {
    let rows: Vec<Vec<Cell>> = d
        .summary
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
                Some(limit) if worse > *limit => Cell::badge(format!("over {limit} %"), "fail"),
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
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Heading("Phases run together"),
        Block::Table {
            header: &[
                "phase", "member", "figure", "subject", "alone", "together", "change", "way",
                "gate",
            ],
            rows,
        },
    ]
}

fn drills_section(d: &ReportData) -> Vec<Block<'_>> {
    let rows: Vec<Vec<Cell>> = d
        .summary
        .phases
        .iter()
        .flat_map(|p| p.drill.iter().map(move |o| (p, o)))
        .map(|(p, o)| {
            let outcome = match (o.dipped, o.recovered_after_s) {
                _ if o.low.is_none() => Cell::badge("no sample", "fail"),
                (false, _) => Cell::plain("not affected"),
                (true, Some(s)) => Cell::plain(format!("recovered in {s:.1} s")),
                (true, None) => Cell::badge("did not recover", "fail"),
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
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Heading("Drills"),
        Block::Table {
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
            rows,
        },
    ]
}

fn findings_table(d: &ReportData) -> Block<'_> {
    if d.findings.is_empty() {
        return Block::Empty("No triage finding was raised during the run.");
    }
    let started = d.summary.started_ms;
    let at = |ms: u64| format!("+{}", duration(ms.saturating_sub(started)));
    Block::Table {
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
                        strong: false,
                        ..Cell::badge(&f.severity, severity_class(&f.severity))
                    },
                    Cell::plain(&f.subject),
                    Cell::plain(&f.rule),
                    Cell::plain(
                        f.spans
                            .iter()
                            .map(|(raised, cleared)| {
                                format!(
                                    "{} → {}",
                                    at(*raised),
                                    cleared.map_or_else(|| "still at the end".into(), at)
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
    }
}

/// The colour of a finding's severity.
pub(super) fn severity_class(severity: &str) -> &'static str {
    match severity {
        "crit" => "fail",
        "warn" => "warn",
        _ => "skip",
    }
}
