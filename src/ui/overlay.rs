//! Overlays drawn over the panes: help (from the key table), confirmations, GPU and phase
//! details, the full-screen log.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use super::panes::gpus::gpu_summary;
use super::panes::log::LogPane;
use super::{Ctx, fit, human_secs, pane_block, sparkline};
use crate::app::keymap::BINDINGS;
use crate::app::state::{Confirm, Overlay};
use crate::model::phase::GateStatus;
use crate::store::{GpuView, NodeView, PhaseState};

/// Draw `overlay` over `area`.
pub fn draw(overlay: &Overlay, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    match overlay {
        Overlay::None => {}
        Overlay::Help => help(ctx, area, buf),
        Overlay::Confirm(c) => confirm(c, ctx, area, buf),
        Overlay::GpuDetails => gpu_details(ctx, area, buf),
        Overlay::PhaseDetails => phase_details(ctx, area, buf),
        Overlay::Search => super::search::draw(ctx, area, buf),
        Overlay::Logs => {
            Clear.render(area, buf);
            buf.set_style(area, ctx.theme.screen);
            (&LogPane {
                ctx,
                focused: true,
                full: true,
            })
                .render(area, buf);
        }
    }
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Lines in a bordered box centred over `area`, as tall as they are (at most `area`).
pub(super) fn boxed(
    ctx: &Ctx,
    title: String,
    lines: Vec<Line>,
    area: Rect,
    width: u16,
    buf: &mut Buffer,
) {
    let rect = centered(area, width, lines.len() as u16 + 2);
    Clear.render(rect, buf);
    buf.set_style(rect, ctx.theme.screen);
    let block = pane_block(&title, rect, true, ctx.theme);
    let inner = block.inner(rect);
    block.render(rect, buf);
    for (i, line) in lines.into_iter().enumerate().take(inner.height as usize) {
        line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
    }
}

fn help(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let t = ctx.theme;
    let mut lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            let keys: Vec<String> = b.keys.iter().map(|k| k.label()).collect();
            Line::from(vec![
                Span::styled(format!(" {:<10}", keys.join(" ")), t.accent),
                Span::styled(b.help, t.text),
            ])
        })
        .collect();
    lines.push(Line::styled(
        " layouts: ".to_string()
            + &ctx
                .state
                .layouts
                .iter()
                .enumerate()
                .map(|(i, l)| format!("{} {}", i + 1, l.name))
                .collect::<Vec<_>>()
                .join(" · "),
        t.muted,
    ));
    lines.push(Line::styled(
        " grid flags: X Xid · ! lost · S stalled · T hw throttle · t sw thermal · N NVLink errors",
        t.muted,
    ));
    debug_assert_eq!(lines.len(), crate::app::keymap::HELP_LINES);
    // A terminal too short for every line scrolls them, and the title says where it is.
    let room = area.height.saturating_sub(2) as usize;
    let total = lines.len();
    let title = if total > room && room > 0 {
        let first = ctx.state.ui.help_scroll.min(total - room);
        lines.drain(..first);
        format!(
            " Keys {}–{} of {total} (↑↓ scroll · ? or Esc closes) ",
            first + 1,
            first + room
        )
    } else {
        " Keys (? or Esc closes) ".into()
    };
    boxed(ctx, title, lines, area, 84, buf);
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&fit(word, width));
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn confirm(c: &Confirm, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let t = ctx.theme;
    let (title, lines) = match c {
        Confirm::Abort(id) => (
            format!(" Abort {id}? "),
            vec![
                Line::styled(format!(" {id} stops on every node it runs on:"), t.text),
                Line::styled(
                    " TERM to its process group, KILL after the grace period.",
                    t.text,
                ),
                Line::styled(" It is recorded as ABORTED.", t.text),
                Line::from(vec![
                    Span::styled(" y", t.warn),
                    Span::styled(" abort   ", t.text),
                    Span::styled("n/Esc", t.accent),
                    Span::styled(" keep it running", t.text),
                ]),
            ],
        ),
        Confirm::Localize(id) => (
            format!(" Search where {id} is slow? "),
            vec![
                Line::styled(
                    format!(" Runs {id}'s own command on groups of nodes, round by round:"),
                    t.text,
                ),
                Line::styled(
                    " pairs first, then each slow pair's nodes beside good ones.",
                    t.text,
                ),
                Line::styled(
                    " A node is named only when slow beside two good partners.",
                    t.text,
                ),
                Line::from(vec![
                    Span::styled(" y", t.warn),
                    Span::styled(" search   ", t.text),
                    Span::styled("n/Esc", t.accent),
                    Span::styled(" leave it", t.text),
                ]),
            ],
        ),
        Confirm::Start { phase, retry, why } => (
            format!(" {} {phase}? ", if *retry { "Run again" } else { "Start" }),
            wrap(why, 60)
                .into_iter()
                .take(4)
                .map(|l| Line::styled(format!(" {l}"), t.warn))
                .chain([
                    Line::styled(
                        " It will probably fail for that, not for the hardware.",
                        t.text,
                    ),
                    Line::from(vec![
                        Span::styled(" y", t.warn),
                        Span::styled(" start it anyway   ", t.text),
                        Span::styled("n/Esc", t.accent),
                        Span::styled(" leave it", t.text),
                    ]),
                ])
                .collect(),
        ),
        Confirm::Quit(id) => (
            " Quit while a phase runs? ".to_string(),
            vec![
                Line::styled(format!(" {id} is running on the nodes."), t.text),
                Line::from(vec![
                    Span::styled(" d", t.accent),
                    Span::styled(
                        " detach: leave it running (it survives this console)",
                        t.text,
                    ),
                ]),
                Line::from(vec![
                    Span::styled(" a", t.warn),
                    Span::styled(format!(" abort {id}, then quit"), t.text),
                ]),
                Line::from(vec![
                    Span::styled(" Esc", t.accent),
                    Span::styled(" stay", t.text),
                ]),
            ],
        ),
    };
    boxed(ctx, title, lines, area, 64, buf);
}

fn gpu_details(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let t = ctx.theme;
    let ui = &ctx.state.ui;
    let Some(node) = ctx.store.nodes.get(ui.node) else {
        return;
    };
    let Some(gpu) = node.gpus.iter().find(|g| g.index == ui.gpu) else {
        return;
    };
    let width = area.width.saturating_sub(4).clamp(60, 200);
    let spark_w = (width as usize).saturating_sub(30).min(120);
    let mut lines = Vec::new();
    let summary = gpu_summary(node, gpu);
    for chunk in summary.split("  ").collect::<Vec<_>>().chunks(4) {
        lines.push(Line::styled(format!(" {}", chunk.join("  ")), t.text));
    }
    if let Some(info) = &gpu.info {
        lines.push(Line::styled(
            format!(" {} · {}", info.name, info.uuid),
            t.muted,
        ));
    }
    lines.extend(placement_line(ctx, node, gpu));
    lines.extend(history_lines(ctx, gpu, spark_w, width));
    if let Some(hello) = &node.hello {
        lines.extend(unavailable_lines(ctx, hello, width));
    }
    lines.extend(link_error_line(ctx, gpu, width));
    for x in &gpu.xids {
        lines.push(Line::styled(
            format!(
                " Xid {} at {}: {}",
                x.code,
                super::clock(x.at_ms),
                crate::triage::xid_meaning(x.code)
            ),
            t.crit,
        ));
    }
    lines.extend(finding_lines(ctx, node, gpu, width));
    boxed(
        ctx,
        format!(" {} GPU{} (Esc closes) ", node.name, gpu.index),
        lines,
        area,
        width,
        buf,
    );
}

/// Where the GPU sits: its nearest NIC, NUMA node and CPUs, from the node's topology.
fn placement_line(ctx: &Ctx, node: &NodeView, gpu: &GpuView) -> Option<Line<'static>> {
    let place = node
        .hello
        .as_ref()
        .and_then(|h| h.topology.as_ref())
        .and_then(|topo| topo.gpus.iter().find(|p| p.index == gpu.index))?;
    let nic = if place.nearest_nics.is_empty() {
        "none in the matrix".to_string()
    } else {
        format!(
            "{} ({})",
            place.nearest_nics.join(", "),
            place.nic_link.as_ref().map_or("?".into(), |l| l.label())
        )
    };
    Some(Line::styled(
        format!(
            " nearest NIC {nic} · NUMA {} · CPUs {}",
            place.numa_node.map_or("n/a".into(), |n| n.to_string()),
            place.cpu_affinity.as_deref().unwrap_or("n/a")
        ),
        ctx.theme.text,
    ))
}

/// The GPU's recent history, a sparkline a reading: power, utilization, temperature, SM clock,
/// SM activity (where GPM reads it, or why it is n/a), NVLink tx.
fn history_lines(ctx: &Ctx, gpu: &GpuView, spark_w: usize, width: u16) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let mut lines = Vec::new();
    let limit = gpu.power_limit_watts().map(f64::from);
    let max_clock = gpu.sm_clock_max_mhz().map(f64::from);
    let hist = |label: &str, h, max, latest: String| {
        Line::from(vec![
            Span::styled(format!(" {label:<12}"), t.muted),
            Span::styled(sparkline(h, spark_w, max), t.bar),
            Span::styled(format!(" {latest}"), t.accent),
        ])
    };
    let fmt = |v: Option<f64>, unit: &str| v.map_or("n/a".into(), |v| format!("{v:.0} {unit}"));
    // One column a sample period: at a 5 s interval the line spans five times as long.
    let spanned_s = spark_w as u64 * ctx.store.period.millis() / 1000;
    lines.push(Line::styled(
        format!(" last {} (blank = no sample)", human_secs(spanned_s)),
        t.muted,
    ));
    lines.push(hist(
        "power W",
        &gpu.power_watts,
        limit,
        fmt(gpu.power_watts.latest(), "W"),
    ));
    lines.push(hist(
        "util %",
        &gpu.util_pct,
        Some(100.0),
        fmt(gpu.util_pct.latest(), "%"),
    ));
    lines.push(hist(
        "temp °C",
        &gpu.temperature_c,
        Some(100.0),
        fmt(gpu.temperature_c.latest(), "°C"),
    ));
    lines.push(hist(
        "SM MHz",
        &gpu.sm_clock_mhz,
        max_clock,
        fmt(gpu.sm_clock_mhz.latest(), "MHz"),
    ));
    if gpu.sm_active_pct.latest().is_some() {
        lines.push(hist(
            "SM active %",
            &gpu.sm_active_pct,
            Some(100.0),
            fmt(gpu.sm_active_pct.latest(), "%"),
        ));
    }
    if let Some(why) = &gpu.gpm_implausible {
        lines.push(Line::styled(
            fit(&format!(" n/a SM/tensor active: {why}"), width as usize - 2),
            t.muted,
        ));
    }
    lines.push(hist(
        "NVLink tx",
        &gpu.nvlink_tx,
        None,
        gpu.nvlink_tx
            .latest()
            .map_or("n/a".into(), crate::model::format_rate),
    ));
    lines
}

/// Why a blank is blank, for the readings this box and the GPU table show: a source that
/// cannot give one (a Prometheus without the series) says so, rather than the screen leaving
/// the engineer to guess at a dead GPU.
fn unavailable_lines(ctx: &Ctx, hello: &crate::model::NodeHello, width: u16) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let mut lines = Vec::new();
    const SHOWN: [&str; 8] = [
        "power",
        "utilization",
        "temperature",
        "SM clock",
        "SM active",
        "tensor active",
        "NVLink tx",
        "clock-event reasons",
    ];
    let (shown, others): (Vec<_>, Vec<_>) = hello
        .unavailable
        .iter()
        .partition(|u| SHOWN.contains(&u.reading.as_str()));
    for u in &shown {
        lines.push(Line::styled(
            fit(
                &format!(" n/a {}: {}", u.reading, u.why),
                width as usize - 2,
            ),
            t.muted,
        ));
    }
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|u| u.reading.as_str()).collect();
        lines.push(Line::styled(
            fit(
                &format!(" also n/a from this source: {}", names.join(", ")),
                width as usize - 2,
            ),
            t.muted,
        ));
    }
    lines
}

/// Links with errors since the driver loaded, worst first: the cable or tray to look at.
fn link_error_line(ctx: &Ctx, gpu: &GpuView, width: u16) -> Option<Line<'static>> {
    let (_, links) = gpu.link_errors.back().filter(|(_, l)| !l.is_empty())?;
    let mut links = links.clone();
    links.sort_by_key(|l| std::cmp::Reverse(l.crc + l.replay + l.recovery));
    let text: Vec<String> = links
        .iter()
        .map(|l| {
            format!(
                "link {}: CRC {} replay {} recovery {}",
                l.link, l.crc, l.replay, l.recovery
            )
        })
        .collect();
    Some(Line::styled(
        fit(
            &format!(" NVLink errors since driver load · {}", text.join(" · ")),
            width as usize - 2,
        ),
        ctx.theme.warn,
    ))
}

/// The findings on this GPU (or its whole node), each with what to do next.
fn finding_lines(ctx: &Ctx, node: &NodeView, gpu: &GpuView, width: u16) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let mut lines = Vec::new();
    let mine: Vec<_> = ctx
        .findings
        .iter()
        .filter(|f| {
            f.node.as_deref() == Some(&node.name) && (f.gpu.is_none() || f.gpu == Some(gpu.index))
        })
        .collect();
    if mine.is_empty() {
        lines.push(Line::styled(" no findings for this GPU", t.ok));
    }
    for f in mine {
        let style = match f.severity {
            crate::triage::Severity::Crit => t.crit,
            crate::triage::Severity::Warn => t.warn,
            crate::triage::Severity::Info => t.info,
        };
        lines.push(Line::styled(
            fit(
                &format!(
                    " {} {} since {}: {}",
                    f.severity.label(),
                    f.rule,
                    super::clock(f.since_ms),
                    f.why
                ),
                width as usize - 2,
            ),
            style,
        ));
        lines.push(Line::styled(
            fit(&format!("   next: {}", f.next), width as usize - 2),
            t.muted,
        ));
    }
    lines
}

/// The phase's checks (T0, T1): what failed, warned or could not be checked, node by node
/// with the line it read, then how many held. Worst first, so a 12-node checklist fits.
fn checklist(ctx: &Ctx, p: &crate::store::PhaseView, lines: &mut Vec<Line<'static>>, w: usize) {
    use crate::model::phase::CheckStatus;
    let t = ctx.theme;
    if p.checks.is_empty() {
        return;
    }
    let rank = |s: CheckStatus| match s {
        CheckStatus::Failed => 0,
        CheckStatus::Warn => 1,
        CheckStatus::Unknown => 2,
        CheckStatus::Ok => 3,
    };
    let mut rows: Vec<&crate::store::CheckRow> = p.checks.iter().collect();
    rows.sort_by_key(|r| rank(r.status));
    let ok = rows.iter().filter(|r| r.status == CheckStatus::Ok).count();
    let nodes: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.node.as_str()).collect();
    lines.push(Line::styled(
        format!(" checks  {ok}/{} ok on {} node(s)", rows.len(), nodes.len()),
        t.accent,
    ));
    for r in rows.iter().filter(|r| r.status != CheckStatus::Ok) {
        let (mark, style) = match r.status {
            CheckStatus::Failed => ("FAIL", t.crit),
            CheckStatus::Warn => ("warn", t.warn),
            _ => ("  ? ", t.muted),
        };
        lines.push(Line::styled(
            fit(&format!(" {mark} {} {}: {}", r.node, r.name, r.detail), w),
            style,
        ));
    }
    // The checks that held, by name, with how many nodes passed each.
    let mut held: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == CheckStatus::Ok) {
        *held.entry(r.name.as_str()).or_default() += 1;
    }
    if !held.is_empty() {
        let text: Vec<String> = held.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        lines.push(Line::styled(
            fit(&format!("  ok  {}", text.join(" · ")), w),
            t.ok,
        ));
    }
}

/// Most comparison rows the phase details show; the report has them all.
const TOGETHER_ROWS: usize = 12;

/// A `together` phase's figures beside each member's run alone: worst first, those over
/// their gate marked.
fn together_table(
    ctx: &Ctx,
    p: &crate::store::PhaseView,
    lines: &mut Vec<Line<'static>>,
    w: usize,
) {
    use crate::plan::Gate;
    let t = ctx.theme;
    if p.spec.together.is_empty() {
        return;
    }
    lines.push(Line::styled(
        format!(
            " runs    {} at once, each set beside its own run alone",
            p.spec.together.join(" + ")
        ),
        t.text,
    ));
    if p.together.is_empty() {
        return;
    }
    let limit = |figure: &str| {
        p.spec.gates.iter().find_map(|g| match g {
            Gate::Together {
                figure: f,
                worse_pct,
            } if f == figure => Some(*worse_pct),
            _ => None,
        })
    };
    let mut rows: Vec<&crate::plan::gates::FigureChange> = p.together.iter().collect();
    rows.sort_by(|a, b| b.worse_pct().total_cmp(&a.worse_pct()));
    lines.push(Line::styled(
        format!(
            " {:<6} {:<22} {:<12} {:>9} {:>9}  {:<11} gate",
            "member", "figure", "subject", "alone", "together", "change"
        ),
        t.accent,
    ));
    for c in rows.iter().take(TOGETHER_ROWS) {
        let (gate, style) = match limit(&c.figure) {
            Some(l) if c.worse_pct() > l => (format!("over {l} %"), t.crit),
            Some(l) => (format!("within {l} %"), t.ok),
            None => ("shown".to_string(), t.text),
        };
        lines.push(Line::styled(
            fit(
                &format!(
                    " {:<6} {:<22} {:<12} {:>9} {:>9}  {:<11} {gate}",
                    c.member,
                    c.figure,
                    c.subject,
                    crate::plan::gates::fmt_value(c.alone),
                    crate::plan::gates::fmt_value(c.together),
                    c.change_words()
                ),
                w,
            ),
            style,
        ));
    }
    if rows.len() > TOGETHER_ROWS {
        lines.push(Line::styled(
            format!(
                " … {} more rows in the report (burnin report)",
                rows.len() - TOGETHER_ROWS
            ),
            t.muted,
        ));
    }
}

/// A drill's steps: what was asked, and how each watched series came through.
fn drill_table(ctx: &Ctx, p: &crate::store::PhaseView, lines: &mut Vec<Line<'static>>, w: usize) {
    let t = ctx.theme;
    let Some(drill) = &p.spec.drill else { return };
    lines.push(Line::styled(
        format!(
            " drill   watches {}; steady level over {} s; recovered at {} % of it",
            drill.watch.join(", "),
            drill.steady.as_secs(),
            drill.recover_pct
        ),
        t.text,
    ));
    if let Some(ask) = &p.prompt {
        lines.push(Line::styled(
            format!(" ASKS    {ask} — c when done"),
            t.crit,
        ));
    }
    for (i, step) in drill.steps.iter().enumerate() {
        lines.push(Line::styled(
            format!(
                " step {} {} (recover within {} s)",
                i + 1,
                step.ask,
                step.within.as_secs()
            ),
            t.accent,
        ));
        for o in p.drill.iter().filter(|o| o.step == i + 1) {
            let style = if o.failed() { t.crit } else { t.ok };
            lines.push(Line::styled(fit(&format!("   {}", o.describe()), w), style));
        }
        if let Some(o) = p
            .drill
            .iter()
            .find(|o| o.step == i + 1 && o.error_lines > 0)
        {
            lines.push(Line::styled(
                fit(
                    &format!(
                        "   {} error/retry line(s), first: {}",
                        o.error_lines,
                        o.first_error.as_deref().unwrap_or("")
                    ),
                    w,
                ),
                t.warn,
            ));
        }
    }
}

/// Each gate of the phase: before it ends, what will be judged; after, how each came out,
/// with its numbers or why it could not be judged.
fn gate_list(ctx: &Ctx, p: &crate::store::PhaseView, lines: &mut Vec<Line<'static>>, w: usize) {
    let t = ctx.theme;
    if p.spec.gates.is_empty() {
        return;
    }
    if p.gates.is_empty() {
        lines.push(Line::styled(
            " gates   judged when the phase ends:".to_string(),
            t.muted,
        ));
        for g in &p.spec.gates {
            lines.push(Line::styled(format!("   · {}", g.describe()), t.text));
        }
        return;
    }
    lines.push(Line::styled(" gates".to_string(), t.muted));
    for crate::model::phase::GateOutcome {
        gate,
        status,
        words,
    } in &p.gates
    {
        let style = match status {
            GateStatus::Met => t.ok,
            GateStatus::Warned | GateStatus::NotJudged => t.warn,
            GateStatus::Missed => t.crit,
        };
        let tail = if words.is_empty() {
            String::new()
        } else {
            format!(": {words}")
        };
        lines.push(Line::styled(
            fit(
                &format!("   {} {gate} — {}{tail}", status.mark(), status.label()),
                w,
            ),
            style,
        ));
    }
}

fn phase_details(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let t = ctx.theme;
    let Some(p) = ctx.store.phases.get(ctx.state.ui.phase) else {
        return;
    };
    let state = match p.state {
        PhaseState::Pending => "pending".to_string(),
        PhaseState::Running => "running".to_string(),
        PhaseState::Done(v) => v.label().to_string(),
    };
    let mut lines = vec![
        Line::styled(format!(" scope   {}", p.spec.scope.label()), t.text),
        Line::styled(format!(" proves  {}", p.spec.proves), t.text),
        Line::styled(format!(" gate    {}", p.spec.gate), t.text),
        Line::styled(
            format!(
                " state   {state}{}",
                p.elapsed_s(ctx.store.now_ms)
                    .map_or(String::new(), |s| format!(", {}", human_secs(s)))
            ),
            t.accent,
        ),
    ];
    if let Some(r) = &p.reason {
        lines.push(Line::styled(format!(" why     {r}"), t.warn));
    }
    lines.push(Line::styled(
        format!(
            " output  {} lines (L shows them)",
            p.log.len() as u64 + p.log_dropped
        ),
        t.muted,
    ));
    // As wide as the screen allows (a reason or a check's line reads whole on a wide one).
    let width = area.width.saturating_sub(4).clamp(60, 200);
    let w = usize::from(width).saturating_sub(2);
    gate_list(ctx, p, &mut lines, w);
    checklist(ctx, p, &mut lines, w);
    together_table(ctx, p, &mut lines, w);
    drill_table(ctx, p, &mut lines, w);
    boxed(
        ctx,
        format!(" {} {} (Esc closes) ", p.spec.id, p.spec.title),
        lines,
        area,
        width,
        buf,
    );
}
