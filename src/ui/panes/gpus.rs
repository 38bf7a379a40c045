//! The node × GPU grid: one row per node, one cell per GPU. A cell shows as much as its width
//! allows — utilization, power (1 s average and instant) as % of the limit, temperature, SM clock
//! as % of max — and flags: `X` Xid, `!` lost, `S` stalled, `T` hardware throttle, `t` software
//! thermal, `N` NVLink errors rising. The line under the grid spells out the selected GPU.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::{NodeLink, clock_events, format_rate};
use crate::store::{GpuView, NodeView};
use crate::ui::{Ctx, fit, pane_block};

/// The GPU grid pane.
pub struct GpuGrid<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

const NODE_COL: usize = 8;

/// The widest the name column grows to hold short names.
const MAX_NODE_COL: usize = 16;

/// The narrowest a GPU cell may become for the name column to grow.
const MIN_CELL: usize = 7;

/// What a cell must say about one GPU beyond its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Health {
    Idle,
    Ok,
    Warn,
    Crit,
}

fn flags(ctx: &Ctx, node: &NodeView, gpu: &GpuView) -> (String, Health) {
    let mut f = String::new();
    let mut health = Health::Ok;
    let finding = |rule: &str| {
        ctx.findings.iter().any(|x| {
            x.rule == rule && x.gpu == Some(gpu.index) && x.node.as_deref() == Some(&node.name)
        })
    };
    if !gpu.xids.is_empty() {
        f.push('X');
        health = Health::Crit;
    }
    if gpu.is_lost() {
        f.push('!');
        health = Health::Crit;
    }
    if finding("stalled") {
        f.push('S');
        health = Health::Crit;
    }
    if let Some(mask) = gpu.latest.as_ref().and_then(|s| s.clock_event_reasons) {
        if mask
            & (clock_events::HW_SLOWDOWN | clock_events::HW_THERMAL | clock_events::HW_POWER_BRAKE)
            != 0
        {
            f.push('T');
            health = Health::Crit;
        } else if mask & clock_events::SW_THERMAL != 0 {
            f.push('t');
            health = health.max(Health::Warn);
        }
    }
    if finding("nvlink-errors") {
        f.push('N');
        health = health.max(Health::Warn);
    }
    if health == Health::Ok
        && gpu
            .latest
            .as_ref()
            .and_then(|s| s.utilization_pct)
            .is_some_and(|u| u < 5.0)
    {
        health = Health::Idle;
    }
    (f, health)
}

fn pct(v: Option<f64>, of: Option<f64>) -> Option<f64> {
    match (v, of) {
        (Some(v), Some(of)) if of > 0.0 => Some(100.0 * v / of),
        _ => None,
    }
}

fn num(v: Option<f64>, width: usize) -> String {
    match v {
        Some(v) => format!("{:>width$.0}", v.min(999.0)),
        None => format!("{:>width$}", "-"),
    }
}

/// Cell text for a GPU at a cell width.
fn cell_text(gpu: &GpuView, flags: &str, width: usize) -> String {
    let s = gpu.latest.as_ref();
    let limit = gpu.power_limit_watts().map(f64::from);
    let util = s.and_then(|s| s.utilization_pct).map(f64::from);
    let pavg = pct(s.and_then(|s| s.power_avg_watts).map(f64::from), limit);
    let pinst = pct(s.and_then(|s| s.power_instant_watts).map(f64::from), limit);
    let temp = s.and_then(|s| s.temperature_c).map(f64::from);
    let clk = pct(
        s.and_then(|s| s.sm_clock_mhz).map(f64::from),
        gpu.sm_clock_max_mhz().map(f64::from),
    );
    // Formats by width; each leaves at least one column for the flags.
    let text = if width >= 23 {
        format!(
            "{}% {}/{}% {}° {}%{flags}",
            num(util, 3),
            num(pavg, 3),
            num(pinst, 3),
            num(temp, 2),
            num(clk, 3)
        )
    } else if width >= 13 {
        format!(
            "{} {}% {}°{flags}",
            num(util, 3),
            num(pavg, 3),
            num(temp, 2)
        )
    } else if width >= 12 {
        // Eight GPUs across 120 columns: util and temperature stay, the degree sign goes.
        format!("{} {}% {}{flags}", num(util, 3), num(pavg, 3), num(temp, 2))
    } else if width >= 5 {
        format!("{}%{flags}", num(pavg, 3))
    } else {
        format!("{}{flags}", num(pavg, 3))
    };
    format!("{:<width$}", fit(&text, width))
}

fn legend(width: usize) -> &'static str {
    if width >= 23 {
        "cell: util% power avg/inst % of limit, temp, SM clock % of max · X Xid ! lost S stalled T hw-throttle t sw-thermal N nvlink-err"
    } else if width >= 12 {
        "cell: util, power % of limit, temp °C · X Xid ! lost S stalled T throttle N nvlink"
    } else {
        "cell: power % of limit · X Xid ! lost S stalled T throttle N nvlink"
    }
}

/// One line spelling out a GPU.
pub fn gpu_summary(node: &NodeView, gpu: &GpuView) -> String {
    let Some(s) = &gpu.latest else {
        return format!("{} GPU{}: no sample yet", node.name, gpu.index);
    };
    if gpu.is_lost() {
        return format!("{} GPU{}: no readings (GPU lost)", node.name, gpu.index);
    }
    let w = |v: Option<f32>| v.map_or("n/a".into(), |v| format!("{v:.0} W"));
    let reasons = s
        .clock_event_reasons
        .map(|m| {
            let d = clock_events::describe(m);
            if d.is_empty() {
                "none".into()
            } else {
                d.join(",")
            }
        })
        .unwrap_or_else(|| "n/a".into());
    let nvl = match (s.nvlink_tx_bytes_per_sec, s.nvlink_rx_bytes_per_sec) {
        (Some(tx), Some(rx)) => format!("NVLink tx {} rx {}", format_rate(tx), format_rate(rx)),
        _ => "NVLink n/a".into(),
    };
    format!(
        "{} GPU{}  util {}  power {} avg / {} inst of {}  {}  SM {}/{} MHz  mem {}  reasons {}  {}",
        node.name,
        gpu.index,
        s.utilization_pct
            .map_or("n/a".into(), |u| format!("{u:.0} %")),
        w(s.power_avg_watts),
        w(s.power_instant_watts),
        w(gpu.power_limit_watts()),
        s.temperature_c
            .map_or("temp n/a".into(), |t| format!("{t:.0} °C")),
        s.sm_clock_mhz.map_or("-".into(), |c| c.to_string()),
        gpu.sm_clock_max_mhz().map_or("-".into(), |c| c.to_string()),
        match (s.memory_used_bytes, s.memory_total_bytes) {
            (Some(u), Some(t)) => format!("{}/{} GiB", u >> 30, t >> 30),
            _ => "n/a".into(),
        },
        reasons,
        nvl
    )
}

impl Widget for &GpuGrid<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let nodes = ctx.state.filtered_nodes();
        let mut title = format!(
            " GPUs {} on {} nodes ",
            ctx.store.gpu_count(),
            ctx.store.nodes.len()
        );
        if !ctx.shared_name.is_empty() {
            title.push_str(&format!("· {} ", ctx.shared_name));
        }
        if !ui.filter.is_empty() {
            title.push_str(&format!("· filter \"{}\" ({}) ", ui.filter, nodes.len()));
        }
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 10 {
            return;
        }
        if ctx.store.nodes.is_empty() {
            Line::styled("waiting for the first node to answer…", theme.muted).render(inner, buf);
            return;
        }
        let width = inner.width as usize;
        let gpus_per_row = ctx
            .store
            .nodes
            .iter()
            .map(|n| n.gpus.len())
            .max()
            .unwrap_or(0)
            .max(1);
        // The name column holds the longest short name where the cells keep their room.
        let longest = ctx
            .store
            .nodes
            .iter()
            .map(|n| ctx.short_name(&n.name).chars().count())
            .max()
            .unwrap_or(0);
        let wide = (longest + 2).clamp(NODE_COL, MAX_NODE_COL);
        let node_col = if width.saturating_sub(wide) / gpus_per_row >= MIN_CELL {
            wide
        } else {
            NODE_COL
        };
        let cell_w = (width.saturating_sub(node_col) / gpus_per_row).max(2);
        let cell_text_w = cell_w - 1;

        // Header, footer lines and the rows between them.
        let footer_lines = match inner.height {
            0..=4 => 0,
            5..=8 => 1,
            _ => 2,
        };
        let rows_room = (inner.height as usize).saturating_sub(1 + footer_lines);
        let mut header = vec![Span::styled(format!("{:<node_col$}", "node"), theme.muted)];
        for g in 0..gpus_per_row {
            header.push(Span::styled(
                format!("{:<cell_w$}", fit(&format!("GPU{g}"), cell_text_w)),
                theme.muted,
            ));
        }
        Line::from(header).render(Rect::new(inner.x, inner.y, inner.width, 1), buf);

        let sel_pos = nodes.iter().position(|&i| i == ui.node).unwrap_or(0);
        let first = if rows_room == 0 {
            0
        } else {
            sel_pos.saturating_sub(rows_room - 1)
        };
        for (row, &ni) in nodes.iter().skip(first).take(rows_room).enumerate() {
            let node = &ctx.store.nodes[ni];
            let y = inner.y + 1 + row as u16;
            let (marker, name_style) = match &node.link {
                NodeLink::Streaming => (' ', theme.text),
                NodeLink::Connecting => (' ', theme.muted),
                NodeLink::Stale => ('~', theme.warn),
                NodeLink::Unreachable(_) => ('✗', theme.crit),
            };
            let mut spans = vec![Span::styled(
                format!(
                    "{:<w$}{marker}",
                    fit(ctx.short_name(&node.name), node_col - 1),
                    w = node_col - 1
                ),
                name_style,
            )];
            if let NodeLink::Unreachable(reason) = &node.link {
                spans.push(Span::styled(
                    fit(
                        &format!("unreachable: {reason}"),
                        width.saturating_sub(node_col),
                    ),
                    theme.crit,
                ));
            } else if node.gpus.is_empty() {
                let (text, style) = match (&node.link, &node.note) {
                    (NodeLink::Streaming, Some(note)) => (format!("no GPUs: {note}"), theme.crit),
                    (NodeLink::Streaming, None) => ("no GPUs reported".to_string(), theme.crit),
                    (link, _) => (format!("{}…", link.label()), theme.muted),
                };
                spans.push(Span::styled(
                    fit(&text, width.saturating_sub(node_col)),
                    style,
                ));
            } else {
                for gpu in &node.gpus {
                    let (f, health) = flags(ctx, node, gpu);
                    let mut style: Style = match health {
                        Health::Idle => theme.muted,
                        Health::Ok => theme.ok,
                        Health::Warn => theme.warn,
                        Health::Crit => theme.crit,
                    };
                    if node.link == NodeLink::Stale {
                        style = theme.muted;
                    }
                    if ni == ui.node && gpu.index == ui.gpu {
                        style = theme.selected;
                    }
                    spans.push(Span::styled(cell_text(gpu, &f, cell_text_w), style));
                    spans.push(Span::raw(" "));
                }
            }
            Line::from(spans).render(Rect::new(inner.x, y, inner.width, 1), buf);
        }

        if footer_lines > 0 {
            let y = inner.y + inner.height - footer_lines as u16;
            let summary = ctx
                .store
                .nodes
                .get(ui.node)
                .and_then(|n| n.gpus.iter().find(|g| g.index == ui.gpu).map(|g| (n, g)))
                .map(|(n, g)| gpu_summary(n, g))
                .unwrap_or_default();
            Line::styled(fit(&summary, width), theme.accent)
                .render(Rect::new(inner.x, y, inner.width, 1), buf);
            if footer_lines > 1 {
                Line::styled(fit(legend(cell_text_w), width), theme.muted)
                    .render(Rect::new(inner.x, y + 1, inner.width, 1), buf);
            }
        }
    }
}
