//! Output of the selected phase, newest at the bottom; scrolls back with ↑/PgUp when focused.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

use crate::ui::{Ctx, fit, pane_block};

/// The log pane (also the full-screen log overlay).
pub struct LogPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
    /// Drawn as the full-screen overlay.
    pub full: bool,
}

impl Widget for &LogPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let ui = &ctx.state.ui;
        let Some(phase) = ctx.store.phases.get(ui.phase) else {
            return;
        };
        let scroll = ui.log_scroll.min(phase.log.len().saturating_sub(1));
        let mut title = format!(" Log {} {} ", phase.spec.id, phase.spec.title);
        if scroll > 0 {
            title.push_str(&format!("· {scroll} lines back "));
        }
        if phase.log_dropped > 0 {
            title.push_str(&format!("· {} older lines off screen ", phase.log_dropped));
        }
        if self.full {
            title.push_str("· L/Esc closes ");
        }
        let block = pane_block(&title, area, self.focused || self.full, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 {
            return;
        }
        if phase.log.is_empty() {
            Line::styled("no output yet", theme.muted).render(inner, buf);
            return;
        }
        let rows = inner.height as usize;
        let end = phase.log.len() - scroll;
        let start = end.saturating_sub(rows);
        for (i, text) in phase.log.range(start..end).enumerate() {
            Line::styled(fit(text, inner.width as usize), theme.text)
                .render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}
