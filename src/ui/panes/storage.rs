//! AIStor GET latency and throughput, and the dataloader's wait per step: the two halves of
//! "do the GPUs wait for data?".

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::format_rate;
use crate::store::MAX_GDS_GPUS;
use crate::ui::{Ctx, GATE_BAR, fit, gated_sparkline, more_rows, pane_block, sparkline};

/// The AIStor pane.
pub struct StoragePane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

/// The dataloader pane.
pub struct LoaderPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

/// `12 ms`, or `—` for a window in which no GET completed.
fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.0} ms")
    } else {
        "—".into()
    }
}

/// `+N more below` where a list shows only `shown` of its `total` rows.
fn rows_left(total: usize, shown: usize, width: usize, ctx: &Ctx<'_>) -> Option<Line<'static>> {
    (shown < total)
        .then(|| Line::styled(more_rows(0, total - shown, width, false), ctx.theme.muted))
}

fn put(lines: Vec<Line>, inner: Rect, buf: &mut Buffer) {
    for (i, line) in lines.into_iter().enumerate().take(inner.height as usize) {
        line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
    }
}

impl Widget for &StoragePane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let s = &ctx.store.storage;
        if ctx.store.storage_shows_gds() {
            gds(self, area, buf);
            return;
        }
        let title = match (&s.latest, &s.node) {
            (Some(w), Some(node)) => format!(
                " AIStor {} · S3 over HTTP · from {}{} ",
                w.endpoint,
                ctx.short_name(node),
                w.concurrency
                    .map_or(String::new(), |c| format!(" · {c} GETs in flight"))
            ),
            (Some(w), None) => format!(" AIStor {} · S3 over HTTP ", w.endpoint),
            (None, _) => " AIStor GET ".into(),
        };
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let width = inner.width as usize;
        let Some(w) = &s.latest else {
            put(
                vec![Line::styled("no storage probe running", theme.muted)],
                inner,
                buf,
            );
            return;
        };
        let gate_ms = ctx.state.thresholds().aistor_p99_ttfb_ms;
        let p99_style = if w.ttfb_p99_ms > gate_ms {
            theme.crit
        } else {
            theme.ok
        };
        let err_style = if w.errors > 0 {
            theme.warn
        } else {
            theme.muted
        };
        let spark_w = width.saturating_sub(16).clamp(4, 90);
        let (ttfb_spark, ttfb_top) =
            gated_sparkline(&s.ttfb_p99_ms, spark_w, gate_ms, theme.ok, theme.crit);
        let throughput_top = s.throughput.tail(spark_w).flatten().fold(0.0_f64, f64::max);
        let lines = vec![
            Line::from(vec![
                Span::styled("TTFB p50 ", theme.muted),
                Span::styled(ms(w.ttfb_p50_ms), theme.accent),
                Span::styled("  p99 ", theme.muted),
                Span::styled(ms(w.ttfb_p99_ms), p99_style),
                Span::styled("  total p99 ", theme.muted),
                Span::styled(ms(w.total_p99_ms), theme.text),
            ]),
            Line::from(vec![
                Span::styled("throughput ", theme.muted),
                Span::styled(format_rate(w.throughput_bytes_per_sec), theme.accent),
                Span::styled(format!("  {} GET/s", w.requests), theme.text),
                Span::styled(
                    format!(
                        "  failed {} this window · {} of {} GETs failed so far",
                        w.errors,
                        s.errors_total,
                        s.requests_total + s.errors_total
                    ),
                    err_style,
                ),
            ]),
            Line::from(
                [Span::styled(format!("{:<14}", "p99 TTFB"), theme.muted)]
                    .into_iter()
                    .chain(ttfb_spark)
                    .collect::<Vec<_>>(),
            ),
            Line::from(vec![
                Span::styled(format!("{:<14}", "throughput"), theme.muted),
                Span::styled(sparkline(&s.throughput, spark_w, None), theme.bar),
            ]),
            Line::styled(
                fit(
                    &format!(
                        "p99 TTFB gate {gate_ms:.0} ms at {GATE_BAR}, top {} · throughput top {} · client-side timing",
                        ms(ttfb_top),
                        format_rate(throughput_top)
                    ),
                    width,
                ),
                theme.muted,
            ),
        ];
        let mut lines = lines;
        per_node_rows(ctx, gate_ms, inner, &mut lines);
        put(lines, inner, buf);
    }
}

/// Under the followed probe: every node's probe of the phase, worst first, so the slow node
/// is named (a phase runs the probe on each node at once).
fn per_node_rows<'a>(ctx: &Ctx, gate_ms: f64, inner: Rect, lines: &mut Vec<Line<'a>>) {
    let theme = ctx.theme;
    let s = &ctx.store.storage;
    let room = (inner.height as usize).saturating_sub(lines.len() + 1);
    if s.nodes.len() < 2 || room < 2 {
        return;
    }
    let width = inner.width as usize;
    let name_w = s
        .nodes
        .keys()
        .map(|n| ctx.short_name(n).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 16);
    lines.push(Line::styled(
        fit(
            &format!(
                "{:<name_w$} {:>10} {:>9} {:>9}  failed GETs (window · since start)",
                "node", "throughput", "p50 TTFB", "p99 TTFB"
            ),
            width,
        ),
        theme.muted,
    ));
    let rows = s.nodes_worst_first(gate_ms);
    let shown = if rows.len() > room {
        room - 1
    } else {
        rows.len()
    };
    for (node, n) in rows.iter().take(shown) {
        let w = &n.latest;
        let style = if w.ttfb_p99_ms.is_nan() || w.ttfb_p99_ms > gate_ms {
            theme.crit
        } else if w.errors > 0 || n.failed_total > 0 {
            theme.warn
        } else {
            theme.text
        };
        lines.push(Line::styled(
            fit(
                &format!(
                    "{:<name_w$} {:>10} {:>9} {:>9}  {} · {} of {}",
                    fit(ctx.short_name(node), name_w),
                    format_rate(w.throughput_bytes_per_sec),
                    ms(w.ttfb_p50_ms),
                    ms(w.ttfb_p99_ms),
                    w.errors,
                    n.failed_total,
                    n.requests_total.saturating_add(n.failed_total)
                ),
                width,
            ),
            style,
        ));
    }
    lines.extend(rows_left(rows.len(), shown, width, ctx));
}

/// GPU-direct within this share of CPU→GPU cannot tell a direct path from a bounce buffer
/// (S4's `gds-direct` check).
const SAME_PATH_PCT: f64 = 5.0;

/// `6.82`, or `—` where the run is not in yet (or was no reading).
fn gib(run: Option<&crate::store::GdsRun>) -> String {
    run.and_then(|r| r.gib_per_s)
        .map_or("—".into(), |v| format!("{v:.2}"))
}

/// The gdsio run just done, in one line.
fn last_run(ctx: &Ctx<'_>, who: &str, r: &crate::store::GdsRun) -> Line<'static> {
    let theme = ctx.theme;
    let size = r.io_size_kib.map_or("variable size".into(), |k| {
        if k >= 1024 && k % 1024 == 0 {
            format!("{} MiB", k / 1024)
        } else {
            format!("{k} KiB")
        }
    });
    Line::from(vec![
        Span::styled("last run ", theme.muted),
        Span::styled(fit(who, 24), theme.text),
        Span::styled(
            format!(
                "  {} {} {size} x{}  ",
                r.io,
                r.xfer,
                r.threads.map_or("?".into(), |t| t.to_string())
            ),
            theme.muted,
        ),
        Span::styled(
            r.gib_per_s
                .map_or("n/a".into(), |v| format!("{v:.2} GiB/s")),
            theme.accent,
        ),
        Span::styled(
            r.avg_latency_us
                .map_or(String::new(), |v| format!("  avg {v:.0} µs")),
            theme.text,
        ),
    ])
}

/// S4 while it runs: the run just done, then each GPU's read rate per path, worst first
/// (GPU-direct nearest to CPU→GPU leads: compat mode in disguise, or a device that limits both).
fn gds(pane: &StoragePane<'_>, area: Rect, buf: &mut Buffer) {
    let ctx = pane.ctx;
    let theme = ctx.theme;
    let g = &ctx.store.storage.gds;
    let title = format!(
        " GPUDirect Storage · {} · gdsio per GPU ",
        g.phase.as_deref().unwrap_or("S4")
    );
    let block = pane_block(&title, area, pane.focused, theme);
    let inner = block.inner(area);
    block.render(area, buf);
    let width = inner.width as usize;
    let who = |node: &str, gpu: Option<u32>| match gpu {
        Some(i) => format!("{}/gpu{i}", ctx.short_name(node)),
        None => ctx.short_name(node).to_string(),
    };
    let mut lines = Vec::new();
    if let Some((node, gpu, r)) = &g.latest {
        lines.push(last_run(ctx, &who(node, *gpu), r));
    }
    let rows = g.worst_first();
    let name_w = rows
        .iter()
        .map(|((n, gpu), _)| who(n, *gpu).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 24);
    lines.push(Line::styled(
        fit(
            &format!(
                "{:<name_w$} {:>8} {:>8} {:>8} {:>10} {:>8}   GiB/s, read unless said",
                "GPU", "direct", "CPU→GPU", "CPU only", "direct/CPU", "dir. wr"
            ),
            width,
        ),
        theme.muted,
    ));
    let room = (inner.height as usize).saturating_sub(lines.len() + 1);
    let shown = if rows.len() > room {
        room.saturating_sub(1)
    } else {
        rows.len()
    };
    for ((node, gpu), runs) in rows.iter().take(shown) {
        let pct = runs.direct_pct();
        let style = match pct {
            Some(p) if p < 100.0 + SAME_PATH_PCT => theme.warn,
            _ => theme.text,
        };
        lines.push(Line::styled(
            fit(
                &format!(
                    "{:<name_w$} {:>8} {:>8} {:>8} {:>10} {:>8}",
                    fit(&who(node, *gpu), name_w),
                    gib(runs.run("GPUD", "READ")),
                    gib(runs.run("CPU_GPU", "READ")),
                    gib(runs.run("CPUONLY", "READ")),
                    pct.map_or("—".into(), |p| format!("{p:.0} %")),
                    gib(runs.run("GPUD", "WRITE")),
                ),
                width,
            ),
            style,
        ));
    }
    lines.extend(rows_left(rows.len(), shown, width, ctx));
    if g.dropped_runs > 0 {
        lines.push(Line::styled(
            fit(
                &format!(
                    "{} runs of GPUs past the first {MAX_GDS_GPUS} not kept",
                    g.dropped_runs
                ),
                width,
            ),
            theme.muted,
        ));
    }
    lines.push(Line::styled(
        fit(
            &format!(
                "direct/CPU under {:.0} %: compat mode (a CPU bounce buffer) or a device that limits both paths; which path it took comes at the end (cuFile's and nvidia_fs's counts)",
                100.0 + SAME_PATH_PCT
            ),
            width,
        ),
        theme.muted,
    ));
    put(lines, inner, buf);
}

impl Widget for &LoaderPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let l = &ctx.store.loader;
        let title = match &l.phase {
            Some(p) => format!(" Dataloader · {p} "),
            None => " Dataloader ".into(),
        };
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let width = inner.width as usize;
        let Some(step) = l.last_step else {
            put(
                vec![Line::styled(
                    "no training steps yet (T5, T6, T8)",
                    theme.muted,
                )],
                inner,
                buf,
            );
            return;
        };
        let share = l.wait_share().unwrap_or(0.0);
        let (gate_pct, whose) = ctx
            .store
            .loader_gate_pct(ctx.state.thresholds().loader_wait_pct);
        let share_style = if share * 100.0 > gate_pct {
            theme.crit
        } else {
            theme.ok
        };
        let spark_w = width.saturating_sub(16).clamp(4, 90);
        // The gate is a share of the step's time; in the wait's own unit, of the latest step.
        let gate_wait_ms = gate_pct / 100.0 * l.step_ms.latest().unwrap_or(0.0);
        let (wait_spark, _) =
            gated_sparkline(&l.wait_ms, spark_w, gate_wait_ms, theme.ok, theme.crit);
        let lines = vec![
            Line::from(vec![
                Span::styled(format!("step {step}  "), theme.text),
                Span::styled("wait ", theme.muted),
                Span::styled(
                    format!("{:.1} ms", l.wait_ms.latest().unwrap_or(0.0)),
                    theme.accent,
                ),
                Span::styled(" / step ", theme.muted),
                Span::styled(
                    format!("{:.0} ms", l.step_ms.latest().unwrap_or(0.0)),
                    theme.text,
                ),
            ]),
            Line::from(vec![
                Span::styled("waiting ", theme.muted),
                Span::styled(format!("{:.1} %", share * 100.0), share_style),
                Span::styled(
                    format!(
                        " of step time (last 20 steps, {whose} {gate_pct:.0} % = {gate_wait_ms:.0} ms at {GATE_BAR})"
                    ),
                    theme.muted,
                ),
            ]),
            Line::from(
                [Span::styled(format!("{:<14}", "wait/step"), theme.muted)]
                    .into_iter()
                    .chain(wait_spark)
                    .collect::<Vec<_>>(),
            ),
            Line::from(vec![
                Span::styled("first batch ", theme.muted),
                Span::styled(
                    l.first_batch_ms
                        .map_or("n/a".into(), |ms| format!("{:.2} s", ms / 1000.0)),
                    theme.text,
                ),
                Span::styled("  tokens/s ", theme.muted),
                Span::styled(
                    l.tokens_per_sec
                        .map_or("n/a".into(), |t| format!("{:.2} M", t / 1e6)),
                    theme.text,
                ),
                Span::styled("  loss ", theme.muted),
                Span::styled(
                    l.loss.map_or("n/a".into(), |x| format!("{x:.3}")),
                    theme.text,
                ),
            ]),
        ];
        put(lines, inner, buf);
    }
}
