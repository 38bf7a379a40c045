//! RDMA ports per node: state, trained rate, Tx/Rx against line rate with a sparkline, and error
//! counters that rose lately — so "NCCL is slow because a port trained at 200G" is visible at a
//! glance beside the GPUs.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::format_rate;
use crate::store::{NicView, NodeView};
use crate::triage::COUNTER_WINDOW_MS;
use crate::ui::{Ctx, fit, pane_block, sparkline};

/// The fabric pane.
pub struct FabricPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

const ERROR_COUNTERS: &[&str] = &[
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "roce_adp_retrans",
    "local_ack_timeout_err",
    "out_of_sequence",
    "packet_seq_err",
];

impl Widget for &FabricPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let ports: usize = ctx
            .store
            .nodes
            .iter()
            .map(|n| n.nics.len() + n.netdevs.len())
            .sum();
        let block = pane_block(
            &format!(" Fabric {ports} ports "),
            area,
            self.focused,
            theme,
        );
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 30 {
            return;
        }
        if ports == 0 {
            Line::styled(
                "no RDMA or Ethernet ports reported (none on the nodes, or smi mode)",
                theme.muted,
            )
            .render(inner, buf);
            return;
        }
        let width = inner.width as usize;
        let fixed = 7 + 10 + 8 + 6 + 11 + 11 + 6;
        let spark_w = width.saturating_sub(fixed + 14).clamp(0, 40);
        // The rate the ports should train at: the inventory's where it says, else the fastest
        // any port of the cluster trained at. A port under it is slow, and coloured so.
        let fastest = ctx
            .store
            .nodes
            .iter()
            .flat_map(|n| n.nics.iter().filter_map(|p| p.latest.rate_gbps))
            .fold(None, |m: Option<f32>, r| Some(m.map_or(r, |m| m.max(r))));
        let badness = |n: &NodeView, p: &NicView| badness(n, p, fastest);
        // Worst first: nodes by their worst port, ports within a node likewise.
        let mut order: Vec<usize> = ctx.state.filtered_nodes();
        order.sort_by_key(|&ni| {
            let n = &ctx.store.nodes[ni];
            std::cmp::Reverse(n.nics.iter().map(|p| badness(n, p)).max().unwrap_or(0))
        });
        let mut rows: Vec<(usize, Line)> = Vec::new();
        for &ni in &order {
            let n = &ctx.store.nodes[ni];
            if !n.nics.is_empty() {
                rows.push((ni, node_line(ctx, n, ni == ui.node, width)));
            }
            let mut nics: Vec<&NicView> = n.nics.iter().collect();
            nics.sort_by_key(|p| std::cmp::Reverse(badness(n, p)));
            for p in nics {
                rows.push((ni, port_line(ctx, p, badness(n, p), spark_w)));
            }
            for d in n.netdevs.iter().map(|v| &v.latest) {
                rows.push((ni, netdev_line(ctx, d)));
            }
        }
        let height = inner.height as usize;
        let sel = rows.iter().position(|(ni, _)| *ni == ui.node).unwrap_or(0);
        let first = sel.saturating_sub(height.saturating_sub(2));
        for (i, (_, line)) in rows.into_iter().skip(first).take(height).enumerate() {
            line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}

/// How bad a port looks, for the order: 3 down, 2 slower than it should train (the
/// inventory's rate, else the fastest of the cluster), 1 errors rose lately, 0 fine.
fn badness(n: &NodeView, p: &NicView, fastest: Option<f32>) -> u8 {
    let want = n.expected_nic_rate_gbps.or(fastest);
    let errs: u64 = ERROR_COUNTERS
        .iter()
        .map(|c| p.rise(c, COUNTER_WINDOW_MS))
        .sum();
    if !p.latest.is_up() {
        3
    } else if matches!((p.latest.rate_gbps, want), (Some(r), Some(w)) if r < w) {
        2
    } else if errs > 0 {
        1
    } else {
        0
    }
}

/// A node's line: its ports' total Tx/Rx beside its GPUs' power and utilization, so a slow port
/// next to busy GPUs reads at once.
fn node_line(ctx: &Ctx, n: &NodeView, selected: bool, width: usize) -> Line<'static> {
    let theme = ctx.theme;
    let sum = |f: fn(&crate::model::NicSample) -> Option<f64>| -> Option<f64> {
        n.nics
            .iter()
            .filter_map(|p| f(&p.latest))
            .reduce(|a, b| a + b)
    };
    let power_kw: Option<f64> = n
        .gpus
        .iter()
        .filter_map(|g| g.power_watts.latest())
        .reduce(|a, b| a + b)
        .map(|w| w / 1000.0);
    let util = crate::store::median(n.gpus.iter().filter_map(|g| g.util_pct.latest()));
    let r = |v: Option<f64>| v.map_or("n/a".into(), format_rate);
    Line::from(vec![
        Span::styled(
            format!("{:<7}", fit(ctx.short_name(&n.name), 7)),
            if selected { theme.selected } else { theme.text },
        ),
        Span::styled(
            fit(
                &format!(
                    "Σ ↑{} ↓{} · GPUs {} · util {}",
                    r(sum(|p| p.tx_bytes_per_sec)),
                    r(sum(|p| p.rx_bytes_per_sec)),
                    power_kw.map_or("n/a".into(), |k| format!("{k:.1} kW")),
                    util.map_or("n/a".into(), |u| format!("{u:.0} %")),
                ),
                width.saturating_sub(7),
            ),
            theme.accent,
        ),
    ])
}

/// A port's line: name, state, trained rate (red when slow), Tx against its line rate, share,
/// and the error counters that rose lately.
fn port_line(ctx: &Ctx, p: &NicView, badness: u8, spark_w: usize) -> Line<'static> {
    let theme = ctx.theme;
    let l = &p.latest;
    let up = l.is_up();
    let state_style = if up { theme.ok } else { theme.crit };
    let rate_style = if badness == 2 { theme.crit } else { theme.text };
    let share = p.line_share();
    let rate = l.rate_gbps.map_or("  n/a".into(), |r| format!("{r:>4.0}G"));
    let errs: u64 = ERROR_COUNTERS
        .iter()
        .map(|c| p.rise(c, COUNTER_WINDOW_MS))
        .sum();
    let mut spans = vec![
        Span::raw(" ".repeat(7)),
        Span::styled(format!("{:<10}", fit(&l.label(), 10)), theme.text),
        Span::styled(
            format!("{:<8}", fit(l.state.as_deref().unwrap_or("?"), 7)),
            state_style,
        ),
        Span::styled(format!("{rate:<6}"), rate_style),
    ];
    if spark_w >= 4 {
        // Against the port's trained rate, not its own busiest second: an idle
        // port must not draw full bars.
        let line_rate = l.rate_gbps.map(|r| f64::from(r) * 1e9 / 8.0);
        spans.push(Span::styled(
            sparkline(&p.tx, spark_w, line_rate),
            theme.bar,
        ));
        spans.push(Span::raw(" "));
    }
    let r = |v: Option<f64>| v.map_or("n/a".into(), format_rate);
    spans.push(Span::styled(
        format!("↑{:>9} ", r(l.tx_bytes_per_sec)),
        theme.text,
    ));
    spans.push(Span::styled(
        format!("↓{:>9} ", r(l.rx_bytes_per_sec)),
        theme.text,
    ));
    spans.push(Span::styled(
        share.map_or("   - ".into(), |s| format!("{:>3.0}% ", s * 100.0)),
        theme.muted,
    ));
    spans.push(Span::styled(
        format!("errs +{errs}"),
        if errs > 0 { theme.warn } else { theme.muted },
    ));
    Line::from(spans)
}

/// An Ethernet interface's line: state, speed and Tx/Rx.
fn netdev_line(ctx: &Ctx, d: &crate::model::NetSample) -> Line<'static> {
    let theme = ctx.theme;
    let up = d.operstate.as_deref() == Some("up");
    let r = |v: Option<f64>| v.map_or("n/a".into(), format_rate);
    Line::from(vec![
        Span::raw(" ".repeat(7)),
        Span::styled(format!("{:<10}", fit(&d.iface, 10)), theme.text),
        Span::styled(
            format!("{:<8}", fit(d.operstate.as_deref().unwrap_or("?"), 7)),
            if up { theme.ok } else { theme.warn },
        ),
        Span::styled(
            format!(
                "{:<6}",
                d.speed_mbps
                    .map_or("  n/a".into(), |m| format!("{:>4}G", m / 1000))
            ),
            theme.text,
        ),
        Span::styled(
            format!(
                "↑{:>9} ↓{:>9} (Ethernet)",
                r(d.tx_bytes_per_sec),
                r(d.rx_bytes_per_sec)
            ),
            theme.muted,
        ),
    ])
}
