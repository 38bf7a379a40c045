//! NVLink traffic: per node the summed Tx/Rx with a sparkline, then per GPU of the selected node.
//! GPUs without NVLink (or with NVML saying NotSupported) show "n/a", never zero.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::format_rate;
use crate::ui::{Ctx, fit, pane_block, sparkline};

/// The NVLink pane.
pub struct NvlinkPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), format_rate)
}

impl Widget for &NvlinkPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let block = pane_block(" NVLink Tx/Rx ", area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 20 {
            return;
        }
        let width = inner.width as usize;
        let nodes = ctx.state.filtered_nodes();
        let selected = ctx.store.nodes.get(ui.node);
        let gpu_lines = selected.map_or(0, |n| n.gpus.len() + 1);
        let total = inner.height as usize;
        // The selected node's GPUs get room when the pane is tall enough for both parts.
        let show_gpus = total >= gpu_lines + 4;
        let node_room = if show_gpus { total - gpu_lines } else { total };
        let text_w = 32;
        let spark_w = width.saturating_sub(text_w + 8).clamp(4, 60);
        let mut lines = Vec::new();
        let sel_pos = nodes.iter().position(|&i| i == ui.node).unwrap_or(0);
        let first = sel_pos.saturating_sub(node_room.saturating_sub(1));
        for &ni in nodes.iter().skip(first).take(node_room) {
            let n = &ctx.store.nodes[ni];
            let crc: u64 = n
                .gpus
                .iter()
                .filter_map(|g| g.latest.as_ref().and_then(|s| s.nvlink_crc_errors))
                .sum();
            let style = if ni == ui.node {
                theme.selected
            } else {
                theme.text
            };
            let crc_style = if crc > 0 { theme.warn } else { theme.muted };
            lines.push(Line::from(vec![
                Span::styled(format!("{:<7}", fit(ctx.short_name(&n.name), 7)), style),
                Span::styled(sparkline(&n.nvlink_tx, spark_w, None), theme.bar),
                Span::styled(
                    format!(
                        " ↑{:>9} ↓{:>9}",
                        rate(n.nvlink_tx.latest()),
                        rate(n.nvlink_rx.latest())
                    ),
                    theme.text,
                ),
                Span::styled(format!(" crc {crc}"), crc_style),
            ]));
        }
        if show_gpus && let Some(n) = selected {
            lines.push(Line::styled(
                fit(
                    &format!("── {} per GPU (tx sparkline, ↑tx ↓rx, CRC errors)", n.name),
                    width,
                ),
                theme.muted,
            ));
            for g in &n.gpus {
                let crc = g.latest.as_ref().and_then(|s| s.nvlink_crc_errors);
                let crc_style = if crc.unwrap_or(0) > 0 {
                    theme.warn
                } else {
                    theme.muted
                };
                let style = if g.index == ui.gpu {
                    theme.selected
                } else {
                    theme.text
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("GPU{:<3}", g.index), style),
                    Span::raw(" "),
                    Span::styled(sparkline(&g.nvlink_tx, spark_w, None), theme.bar),
                    Span::styled(
                        format!(
                            " ↑{:>9} ↓{:>9}",
                            rate(g.nvlink_tx.latest()),
                            rate(g.nvlink_rx.latest())
                        ),
                        theme.text,
                    ),
                    Span::styled(
                        format!(" crc {}", crc.map_or("n/a".into(), |c| c.to_string())),
                        crc_style,
                    ),
                ]));
            }
        }
        for (i, line) in lines.into_iter().enumerate().take(total) {
            line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}
