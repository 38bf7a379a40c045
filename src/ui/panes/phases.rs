//! The plan: T1–T8 with state, elapsed time and verdict; the selected phase's reason (or its
//! gate, before it ran) underneath.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::phase::Verdict;
use crate::store::PhaseState;
use crate::ui::{Ctx, fit, fit_words, human_secs, more_rows, pane_block};

/// The phases pane.
pub struct PhasesPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

impl Widget for &PhasesPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let done = ctx
            .store
            .phases
            .iter()
            .filter(|p| matches!(p.state, PhaseState::Done(_)))
            .count();
        let title = format!(" Plan {done}/{} done ", ctx.store.phases.len());
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 20 {
            return;
        }
        let width = inner.width as usize;
        let height = inner.height as usize;
        let count = ctx.store.phases.len();
        // The reason line is worth its room only when all phases still fit.
        let show_reason = height > count + 1;
        let mut rows_room = if show_reason { height - 2 } else { height };
        // A plan longer than the pane says how much is out of sight, on its last row.
        let overflow = count > rows_room && rows_room >= 2;
        if overflow {
            rows_room -= 1;
        }
        let first = ui.phase.saturating_sub(rows_room.saturating_sub(1));
        let title_w = width.saturating_sub(4 + 8 + 6).max(6);
        let rows = ctx
            .store
            .phases
            .iter()
            .enumerate()
            .skip(first)
            .take(rows_room);
        for (y, (i, p)) in (inner.y..).zip(rows) {
            let (label, style) = match p.state {
                PhaseState::Pending => ("·".to_string(), theme.muted),
                PhaseState::Running => ("▶ RUN".to_string(), theme.accent),
                PhaseState::Done(v) => (
                    v.label().to_string(),
                    match v {
                        Verdict::Pass => theme.ok,
                        Verdict::Warn | Verdict::Skipped => theme.warn,
                        _ => theme.crit,
                    },
                ),
            };
            let elapsed = p
                .elapsed_s(ctx.store.now_ms)
                .map_or(String::new(), human_secs);
            let row_style = if i == ui.phase {
                theme.selected
            } else {
                theme.text
            };
            // A phase that failed or warned keeps its reason beside its title, where the
            // room allows, not only in the status bar's passing message.
            let reason = match (p.state, &p.reason) {
                (PhaseState::Done(v), Some(r)) if v != Verdict::Pass && title_w >= 30 => {
                    Some(r.as_str())
                }
                _ => None,
            };
            let mut cells = vec![Span::styled(format!("{:<4}", p.spec.id), row_style)];
            match reason {
                Some(r) => {
                    let title = fit_words(
                        &p.spec.title,
                        (title_w / 2).min(p.spec.title.chars().count()),
                    );
                    let rest = title_w.saturating_sub(title.chars().count() + 3);
                    cells.push(Span::styled(title.clone(), row_style));
                    cells.push(Span::styled(
                        format!(" · {:<rest$}", fit(r, rest)),
                        if i == ui.phase { row_style } else { style },
                    ));
                }
                None => cells.push(Span::styled(
                    format!("{:<title_w$}", fit_words(&p.spec.title, title_w)),
                    row_style,
                )),
            }
            cells.extend([
                Span::styled(
                    format!("{label:>8}"),
                    if i == ui.phase { row_style } else { style },
                ),
                Span::styled(format!("{elapsed:>6}"), theme.muted),
            ]);
            Line::from(cells).render(Rect::new(inner.x, y, inner.width, 1), buf);
        }
        if overflow {
            let below = count.saturating_sub(first + rows_room);
            Line::styled(more_rows(first, below, width, true), theme.muted).render(
                Rect::new(inner.x, inner.y + rows_room as u16, inner.width, 1),
                buf,
            );
        }
        if show_reason && let Some(p) = ctx.store.phases.get(ui.phase) {
            let text = match &p.reason {
                Some(r) => format!("{}: {r}", p.spec.id),
                None => format!("{} gate: {}", p.spec.id, p.spec.gate),
            };
            let style = match p.state {
                PhaseState::Done(Verdict::Pass) => theme.ok,
                PhaseState::Done(_) => theme.warn,
                _ => theme.muted,
            };
            let y = inner.y + inner.height - 1;
            Line::styled(fit(&text, width), style)
                .render(Rect::new(inner.x, y, inner.width, 1), buf);
        }
    }
}
