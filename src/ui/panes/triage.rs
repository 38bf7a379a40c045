//! Findings, worst first: severity, which GPU or node, since when, and why with the numbers.
//! Enter on a finding selects its GPU and opens its details. A finding whose rule stopped firing
//! is dimmed as "clearing" until triage drops it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::triage::Severity;
use crate::ui::{Ctx, fit, human_secs, more_rows, pane_block};

/// The triage pane.
pub struct TriagePane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

impl Widget for &TriagePane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let count = |s: Severity| ctx.findings.iter().filter(|f| f.severity == s).count();
        let title = format!(
            " Triage {} crit · {} warn · {} info ",
            count(Severity::Crit),
            count(Severity::Warn),
            count(Severity::Info)
        );
        let shown = ctx.state.filtered_findings();
        let mut title = title;
        if !ui.filter.is_empty() {
            title.push_str(&format!(
                "· filter \"{}\" ({} of {}) ",
                ui.filter,
                shown.len(),
                ctx.findings.len()
            ));
        }
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 20 {
            return;
        }
        if ctx.findings.is_empty() {
            Line::styled(
                "no findings: every GPU, link and service looks healthy",
                theme.ok,
            )
            .render(inner, buf);
            return;
        }
        if shown.is_empty() {
            Line::styled(
                fit(
                    &format!(
                        "no finding matches \"{}\" ({} hidden; Esc clears the filter)",
                        ui.filter,
                        ctx.findings.len()
                    ),
                    inner.width as usize,
                ),
                theme.muted,
            )
            .render(inner, buf);
            return;
        }
        let width = inner.width as usize;
        let rows = inner.height as usize;
        // A list longer than the pane says how much is out of sight, on its last row.
        let overflow = shown.len() > rows && rows >= 2;
        let list_rows = if overflow { rows - 1 } else { rows };
        let selected_at = shown.iter().position(|&i| i == ui.finding).unwrap_or(0);
        let first = selected_at.saturating_sub(list_rows.saturating_sub(1));
        let subject_w = shown
            .iter()
            .map(|&i| ctx.subject(&ctx.findings[i]).chars().count())
            .max()
            .unwrap_or(0)
            .clamp(12, 20);
        for (row, &i) in shown.iter().skip(first).take(list_rows).enumerate() {
            let f = &ctx.findings[i];
            let sev_style = match f.severity {
                Severity::Crit => theme.crit,
                Severity::Warn => theme.warn,
                Severity::Info => theme.info,
            };
            let since = human_secs(ctx.store.now_ms.saturating_sub(f.since_ms) / 1000);
            let selected = i == ui.finding && self.focused;
            // A finding whose rule stopped firing stays a few seconds (no flapping), dimmed.
            let clearing = !f.is_firing();
            let text_style = match (selected, clearing) {
                (true, _) => theme.selected,
                (false, true) => theme.muted,
                (false, false) => theme.text,
            };
            // Narrow panes flow subject, rule and why on one line; wide ones align columns.
            let head = if width >= 80 {
                format!(
                    " {:<subject_w$} {:<14} {:>6} ",
                    fit(&ctx.subject(f), subject_w),
                    f.rule,
                    since
                )
            } else {
                format!(" {} {}: ", ctx.subject(f), f.rule)
            };
            let used = 4 + head.chars().count();
            let line = Line::from(vec![
                Span::styled(format!("{:<4}", f.severity.label()), sev_style),
                Span::styled(head, text_style),
                Span::styled(
                    fit(
                        &if clearing {
                            format!("clearing: {}", f.why)
                        } else {
                            f.why.clone()
                        },
                        width.saturating_sub(used),
                    ),
                    text_style,
                ),
            ]);
            line.render(
                Rect::new(inner.x, inner.y + row as u16, inner.width, 1),
                buf,
            );
        }
        if overflow {
            let below = shown.len().saturating_sub(first + list_rows);
            Line::styled(more_rows(first, below, width, true), theme.muted).render(
                Rect::new(inner.x, inner.y + list_rows as u16, inner.width, 1),
                buf,
            );
        }
    }
}
