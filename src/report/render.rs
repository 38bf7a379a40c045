//! The report's two faces: Markdown (plots as SVG files beside it) and one self-contained HTML
//! file (plots inline, styles inline, no scripts, no external assets). Both say the same things
//! in the same order.

use std::fmt::Write;

use super::ReportData;
use super::plots::{self, esc};
use crate::model::phase::GateStatus;
use crate::record::utc_stamp;

/// `2026-12-02 16:00:00 UTC`.
pub(super) fn utc(ms: u64) -> String {
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

/// `1h02m`, as the console says it.
pub(super) fn duration(ms: u64) -> String {
    crate::model::human_secs(ms / 1000)
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
    for (i, word) in one_line.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if would_autolink(word) {
            code_span(word, &mut out);
            continue;
        }
        for c in word.chars() {
            match c {
                // `<` opens every tag; `&` an entity. `>` alone opens nothing mid-line: `>=`
                // stays.
                '<' => out.push_str("&lt;"),
                '&' => out.push_str("&amp;"),
                '\\' | '[' | ']' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out
}

/// A word GitHub's Markdown would make a link of without brackets (its autolink extension:
/// `www.`, a scheme's `://`, `mailto:`, an e-mail address): a node's text must not become a
/// link in a report that leaves the site.
fn would_autolink(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    lower.contains("www.")
        || lower.contains("://")
        || lower.contains("mailto:")
        || lower.contains("xmpp:")
        || lower
            .split_once('@')
            .is_some_and(|(_, domain)| domain.contains('.'))
}

/// `word` as a code span, which Markdown never links nor reads markup in: fenced by one more
/// backtick than the longest run inside it.
fn code_span(word: &str, out: &mut String) {
    let longest = word.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if word.starts_with('`') || word.ends_with('`') {
        " "
    } else {
        ""
    };
    out.push_str(&fence);
    out.push_str(pad);
    out.push_str(word);
    out.push_str(pad);
    out.push_str(&fence);
}

/// One table cell as both formats write it: bold in Markdown, a coloured badge in HTML; a
/// cell of several items is a list (bullets joined by `<br>` in Markdown, a `<ul>` in HTML).
pub(super) struct Cell {
    pub(super) text: String,
    pub(super) strong: bool,
    pub(super) badge: Option<&'static str>,
    /// Items shown as a list instead of `text`, where there are two or more.
    pub(super) items: Vec<String>,
}

impl Cell {
    /// Text as it is.
    pub(super) fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            strong: false,
            badge: None,
            items: Vec::new(),
        }
    }

    /// A verdict: bold, and a badge of its colour.
    pub(super) fn verdict(text: &str) -> Self {
        Self {
            text: text.to_string(),
            strong: true,
            badge: Some(verdict_class(text)),
            items: Vec::new(),
        }
    }

    /// A reason of clauses joined by "; ", as one bullet a clause (one clause: plain text).
    pub(super) fn reasons(text: &str) -> Self {
        let items: Vec<String> = text
            .split("; ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        Self {
            text: text.to_string(),
            items: if items.len() > 1 { items } else { Vec::new() },
            ..Self::plain("")
        }
    }

    /// A badge with text, bold where it is bad.
    pub(super) fn badge(text: impl Into<String>, class: &'static str) -> Self {
        Self {
            text: text.into(),
            strong: class == "fail",
            badge: Some(class),
            items: Vec::new(),
        }
    }
}

/// The report's content in order; [`markdown`] and [`html`] only choose how it looks, so the
/// two cannot say different things.
pub(super) enum Block<'a> {
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
    /// The sign-off: the site's and customer's fields from the plan, and a line to sign for
    /// each party.
    SignOff(Vec<(String, String)>),
}

/// The Markdown report.
pub fn markdown(d: &ReportData) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# burnin acceptance report — run {}\n",
        md(&d.summary.run_id)
    );
    for block in super::document::document(d) {
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
                        if !c.items.is_empty() {
                            let items: Vec<String> =
                                c.items.iter().map(|i| format!("• {}", cell(i))).collect();
                            let _ = write!(o, " {} |", items.join("<br>"));
                            continue;
                        }
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
            Block::SignOff(fields) => {
                let _ = writeln!(o, "| | |\n|---|---|");
                for (k, v) in &fields {
                    let _ = writeln!(o, "| {} | {} |", cell(k), cell(v));
                }
                let _ = writeln!(
                    o,
                    "\n| signed for | name | signature | date |\n|---|---|---|---|\n| the site | | | |\n| the customer | | | |\n"
                );
            }
        }
    }
    let _ = writeln!(o, "Report made by burnin {}.", env!("CARGO_PKG_VERSION"));
    o
}

/// The colour of a gate's outcome.
pub(super) fn gate_class(s: GateStatus) -> &'static str {
    match s {
        GateStatus::Met => "pass",
        GateStatus::Warned | GateStatus::NotJudged => "warn",
        GateStatus::Missed => "fail",
    }
}

/// The colour of a verdict.
pub(super) fn verdict_class(v: &str) -> &'static str {
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
.note{color:#555;font-style:italic}figure{margin:1em 0}ul.why{margin:0;padding-left:1.1em}\
table.sign td{height:2.4em;min-width:10em}";

/// The HTML report: one file.
pub fn html(d: &ReportData) -> String {
    let id = esc(&d.summary.run_id);
    let mut o = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>burnin report {id}</title><style>{STYLE}</style></head><body><h1>burnin acceptance report — run {id}</h1>"
    );
    for block in super::document::document(d) {
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
                        if !c.items.is_empty() {
                            o.push_str("<td><ul class=\"why\">");
                            for i in &c.items {
                                let _ = write!(o, "<li>{}</li>", esc(i));
                            }
                            o.push_str("</ul></td>");
                            continue;
                        }
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
            Block::SignOff(fields) => {
                o.push_str("<table>");
                for (k, v) in &fields {
                    let _ = write!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
                }
                o.push_str("</table><table class=\"sign\"><tr><th>signed for</th><th>name</th><th>signature</th><th>date</th></tr><tr><td>the site</td><td></td><td></td><td></td></tr><tr><td>the customer</td><td></td><td></td><td></td></tr></table>");
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
