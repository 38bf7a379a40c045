//! A reading in words for the terminal (control characters stripped) or as JSON.

use std::collections::BTreeMap;

use super::read::{FigureRow, Reading};
use crate::model::phase::{CheckStatus, PhaseMetric};
use crate::plan::gates::{self};

/// The reading as text for a terminal: every text that came from the file stripped of
/// control characters.
pub fn render(r: &Reading) -> String {
    // Every piece is cleaned as it is written; the whole once more, for the pieces (a figure's
    // name, a subject) that come from the file by ways the pieces do not see.
    crate::model::terminal_safe(&render_text(r))
}

fn render_text(r: &Reading) -> String {
    use std::fmt::Write;
    let clean = |s: &str| crate::model::strip_controls(s);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {}{} ({} lines)",
        clean(&r.path),
        r.kind,
        if r.detected { ", detected" } else { "" },
        r.lines
    );
    if let Some(l) = &r.launcher {
        let _ = writeln!(o, "  launcher prefixes: {l}");
    }
    if let Some(f) = &r.format {
        let _ = writeln!(o, "  format: {f}");
    }
    if r.unread_lines > 0 {
        let _ = writeln!(o, "  {} line(s) not understood:", r.unread_lines);
        for u in &r.unread {
            let _ = writeln!(o, "    {}", clean(u));
        }
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &r.metrics {
        counts.entry(metric_kind(m)).or_default().add_assign_one();
    }
    if !counts.is_empty() {
        let list: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(o, "  read: {}", list.join(", "));
    }
    if !r.figures.is_empty() {
        let _ = writeln!(o, "  figures:");
        let mut by_name: BTreeMap<&str, Vec<&FigureRow>> = BTreeMap::new();
        for f in &r.figures {
            by_name.entry(&f.name).or_default().push(f);
        }
        for (name, rows) in by_name {
            if rows.len() <= 8 {
                for f in rows {
                    let _ = writeln!(
                        o,
                        "    {name} {} {} {}",
                        clean(&f.subject),
                        gates::fmt_value(f.value),
                        f.unit
                    );
                }
            } else {
                let mut v: Vec<f64> = rows.iter().map(|f| f.value).collect();
                v.sort_by(f64::total_cmp);
                let unit = rows[0].unit;
                let _ = writeln!(
                    o,
                    "    {name}: {} subjects, min {} median {} max {} {unit}",
                    v.len(),
                    gates::fmt_value(v[0]),
                    gates::fmt_value(v[v.len() / 2]),
                    gates::fmt_value(v[v.len() - 1])
                );
            }
        }
    }
    for c in &r.checks {
        let _ = writeln!(
            o,
            "  check {} {}: {}",
            status_word(c.status),
            c.name,
            clean(&c.detail)
        );
    }
    for p in &r.problems {
        let _ = writeln!(o, "  problem: {}", clean(p));
    }
    if let Some(t) = &r.telemetry {
        let text = serde_json::to_string(t).unwrap_or_default();
        let _ = writeln!(o, "  read: {}", clean(&crate::model::fit(&text, 600)));
    }
    for f in &r.findings {
        let _ = writeln!(
            o,
            "  finding {} {} {}: {}",
            f.severity,
            f.rule,
            clean(&f.subject),
            clean(&f.why)
        );
    }
    render_verdicts(&mut o, r);
    for n in &r.not_judged {
        let _ = writeln!(o, "  not judged: {}", clean(n));
    }
    for n in &r.notes {
        let _ = writeln!(o, "  note: {}", clean(n));
    }
    o
}

/// Each phase's verdict, then how each of its gates judged the file.
fn render_verdicts(o: &mut String, r: &Reading) {
    use std::fmt::Write;
    let clean = |s: &str| crate::model::strip_controls(s);
    for v in &r.verdicts {
        let _ = writeln!(
            o,
            "  {} {} ({}): {}",
            clean(&v.phase),
            v.verdict.label(),
            clean(&v.title),
            clean(&v.reason)
        );
        for g in &v.gates {
            let words = if g.words.is_empty() {
                String::new()
            } else {
                format!(": {}", clean(&g.words))
            };
            let _ = writeln!(
                o,
                "    gate {} {} {}{words}",
                g.status.mark(),
                clean(&g.gate),
                g.status.label()
            );
        }
    }
}

trait AddOne {
    fn add_assign_one(&mut self);
}

impl AddOne for usize {
    fn add_assign_one(&mut self) {
        *self += 1;
    }
}

fn status_word(s: CheckStatus) -> &'static str {
    match s {
        CheckStatus::Ok => "ok",
        CheckStatus::Failed => "FAILED",
        CheckStatus::Unknown => "unknown",
        CheckStatus::Warn => "warn",
    }
}

fn metric_kind(m: &PhaseMetric) -> &'static str {
    match m {
        PhaseMetric::BusBw { .. } => "nccl-tests rows",
        PhaseMetric::AvgBusBw { .. } => "avg busbw trailers",
        PhaseMetric::LatencyCdf { .. } => "latency CDFs",
        PhaseMetric::Tflops { .. } => "GEMM results",
        PhaseMetric::Step { .. } => "training steps",
        PhaseMetric::FirstBatch { .. } => "first-batch times",
        PhaseMetric::PairBw { .. } => "GPU-pair bandwidths",
        PhaseMetric::PairLat { .. } => "GPU-pair latencies",
        PhaseMetric::LinkBw { .. } => "perftest bandwidth rows",
        PhaseMetric::LinkLat { .. } => "perftest latency rows",
        PhaseMetric::Check { .. } => "checks",
        PhaseMetric::DiagGpu { .. } => "DCGM results per GPU",
        PhaseMetric::Storage { .. } => "probe windows",
        PhaseMetric::Figure { .. } => "figures",
        PhaseMetric::GdsRun { .. } => "gdsio runs",
        PhaseMetric::Together { .. } => "together comparisons",
        PhaseMetric::Drill { .. } => "drill outcomes",
        PhaseMetric::Problem { .. } => "failure lines",
        PhaseMetric::Gate { .. } => "gate outcomes",
        PhaseMetric::Parts { .. } => "node parts (PCI IDs)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::parse::read_text;
    use crate::commands::parse::test_options as opts;

    #[test]
    fn text_from_the_file_reaches_the_terminal_without_control_characters() {
        let text = "# nThread 1 nGpus 1\nhost\u{1b}]0;PWNED\u{7}: Test NCCL failure common.cu:1 'x\u{1b}[2J'\n";
        let r = read_text("n.log", text, None, &opts()).expect("read");
        let shown = render(&r);
        assert!(shown.contains("Test NCCL failure"), "{shown}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
    }
}
