//! NCCL bus bandwidth against message size for the running (or newest) collective phase: one
//! bar per size with the median over nodes, the slowest node, and #wrong. The trailer is
//! nccl-tests' own "Avg bus bandwidth" (mean over sizes).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::format_size;
use crate::store::PhaseState;
use crate::ui::{Ctx, fit, pane_block};

/// The NCCL pane.
pub struct NcclPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

impl Widget for &NcclPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let Some(phase) = ctx.store.busbw_phase() else {
            let block = pane_block(" NCCL busbw ", area, self.focused, theme);
            let inner = block.inner(area);
            block.render(area, buf);
            Line::styled(
                "no collective has run yet (T4 and T7 report busbw)",
                theme.muted,
            )
            .render(inner, buf);
            return;
        };
        let first_row = phase.busbw.values().next();
        let ranks = first_row.map_or(0, |r| r.ranks);
        let state = match phase.state {
            PhaseState::Running => "running".to_string(),
            PhaseState::Done(v) => v.label().to_string(),
            PhaseState::Pending => "pending".to_string(),
        };
        let title = format!(
            " NCCL {} {} · {ranks} ranks · {state} ",
            phase.spec.id,
            phase.collective.as_deref().unwrap_or("collective"),
        );
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 24 {
            return;
        }
        let width = inner.width as usize;
        let max = phase
            .busbw
            .values()
            .filter_map(|r| r.median())
            .fold(0.0_f64, f64::max)
            .max(1.0);
        let rows_room = (inner.height as usize).saturating_sub(2);
        let right = 34;
        let bar_w = width.saturating_sub(6 + right).max(4);
        let mut lines = vec![Line::styled(
            fit(
                &format!(
                    "{:>5} {:<bar_w$} {:>9} {:>16} {:>6}",
                    "size", "busbw (median over nodes)", "GB/s", "slowest", "#wrong"
                ),
                width,
            ),
            theme.muted,
        )];
        let skip = phase.busbw.len().saturating_sub(rows_room);
        for (size, row) in phase.busbw.iter().skip(skip) {
            let med = row.median().unwrap_or(0.0);
            let filled = ((med / max) * bar_w as f64).round() as usize;
            let slowest = row
                .slowest()
                .filter(|_| row.per_node.len() > 1)
                .map_or(String::new(), |(n, v)| {
                    format!("{} {v:.0}", ctx.short_name(n))
                });
            let (wrong_text, wrong_style) = if row.unvalidated {
                ("N/A".to_string(), theme.warn)
            } else if row.wrong > 0 {
                (row.wrong.to_string(), theme.crit)
            } else {
                ("0".to_string(), theme.ok)
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{:>5} ", format_size(*size)), theme.text),
                Span::styled("█".repeat(filled.min(bar_w)), theme.bar),
                Span::raw(" ".repeat(bar_w - filled.min(bar_w))),
                Span::styled(format!(" {med:>9.1}"), theme.accent),
                Span::styled(format!(" {:>16}", fit(&slowest, 16)), theme.muted),
                Span::styled(format!(" {wrong_text:>6}"), wrong_style),
            ]));
        }
        let medians: Vec<f64> = phase.busbw.values().filter_map(|r| r.median()).collect();
        let avg = if medians.is_empty() {
            0.0
        } else {
            medians.iter().sum::<f64>() / medians.len() as f64
        };
        let wrong: u64 = phase
            .busbw
            .values()
            .map(|r| r.wrong)
            .fold(0, u64::saturating_add);
        lines.push(Line::styled(
            fit(
                &format!(
                    "Avg bus bandwidth {avg:.1} GB/s over {} sizes · #wrong {wrong} · nodes reporting {}",
                    medians.len(),
                    phase.busbw.values().last().map_or(0, |r| r.per_node.len())
                ),
                width,
            ),
            if wrong > 0 { theme.crit } else { theme.text },
        ));
        for (i, line) in lines.into_iter().enumerate().take(inner.height as usize) {
            line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}
