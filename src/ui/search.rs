//! The fault search overlay (`f`): what the search found so far, and its latest tests, each with
//! its figure and how it was read, slow ones in the critical colour. Drawn from the store's
//! snapshot, which the search sends after every round.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Ctx, fit};

/// Draw the search over `area` (a note where none ran).
pub fn draw(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let t = ctx.theme;
    let width = area.width.saturating_sub(4).clamp(60, 200);
    let text = width.saturating_sub(2) as usize;
    let Some(s) = ctx.store.search.as_deref() else {
        let lines = vec![Line::styled(
            " No search yet: select a multi-node phase (T7) and press f.",
            t.muted,
        )];
        super::overlay::boxed(ctx, " Fault search ".into(), lines, area, width, buf);
        return;
    };
    let state = if s.running { "running" } else { "done" };
    let title = format!(
        " Fault search {} · {} nodes · {} screen · round {} · {} tests · {state} (Esc closes{}) ",
        s.phase,
        s.nodes,
        s.screen,
        s.rounds,
        s.tests_run,
        if s.running { ", a aborts" } else { "" }
    );
    let mut lines: Vec<Line> = Vec::new();
    if s.named.is_empty() && s.links.is_empty() {
        let words = if s.running {
            " nothing named yet"
        } else {
            " nothing named"
        };
        lines.push(Line::styled(words, t.ok));
    }
    for n in &s.named {
        lines.push(Line::styled(fit(&format!(" BAD NODE {n}"), text), t.crit));
    }
    for l in &s.links {
        lines.push(Line::styled(fit(&format!(" BAD LINK {l}"), text), t.crit));
    }
    for n in &s.notes {
        lines.push(Line::styled(fit(&format!(" {n}"), text), t.warn));
    }
    lines.push(Line::styled(
        " round  why       nodes (+ good partner)                   figure  read",
        t.muted,
    ));
    // The latest tests that fit, newest last.
    let room = (area.height as usize)
        .saturating_sub(2)
        .saturating_sub(lines.len());
    let skip = s.tests.len().saturating_sub(room);
    for r in s.tests.iter().skip(skip) {
        let figure = r
            .figure
            .map_or_else(|| "—".to_string(), |f| format!("{f:.1}"));
        let style = if r.slow { t.crit } else { t.text };
        let head = format!(
            " {:>5}  {:<8}  {:<40} {:>7}  ",
            r.round,
            fit(&r.purpose, 8),
            fit(&r.nodes, 40),
            figure
        );
        let read = if r.slow { "SLOW " } else { "ok   " };
        let rest = text.saturating_sub(head.chars().count() + read.len());
        lines.push(Line::from(vec![
            Span::styled(head, t.text),
            Span::styled(read, style),
            Span::styled(fit(&r.why, rest), t.muted),
        ]));
    }
    super::overlay::boxed(ctx, title, lines, area, width, buf);
}
