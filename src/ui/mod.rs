//! Drawing. `render` is a pure function of the state: it lays the active layout's panes out,
//! draws each from the store, then the status bar and any overlay. Panes read; they never change
//! state or do I/O.

pub mod overlay;
pub mod panes;
pub mod search;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Widget};

use crate::app::keymap::BINDINGS;
use crate::app::layout::PaneKind;
use crate::app::state::{Overlay, State, Tone};
use crate::app::theme::Theme;
use crate::model::UnixMillis;
use crate::store::ClusterStore;
use crate::store::history::History;
use crate::triage::Finding;

/// What every pane gets to draw from.
pub struct Ctx<'a> {
    /// The store shown (frozen while paused).
    pub store: &'a ClusterStore,
    /// Findings shown.
    pub findings: &'a [Finding],
    /// Whole state, for UI selections.
    pub state: &'a State,
    /// Colours.
    pub theme: &'a Theme,
    /// Each node's name as panes show it: the part that tells it from the others.
    short_names: std::collections::HashMap<String, String>,
    /// What every node's name shares (`dgx-b300-rack12-…`), said once in the grid's title.
    pub shared_name: String,
}

impl<'a> Ctx<'a> {
    /// The context to draw `state` (its shown store and findings) with.
    pub fn new(state: &'a State) -> Self {
        let (store, findings) = state.shown();
        let names: Vec<&str> = store.nodes.iter().map(|n| n.name.as_str()).collect();
        let short = crate::model::names::distinguishing(&names);
        Ctx {
            store,
            findings,
            state,
            theme: state.theme(),
            short_names: names
                .iter()
                .map(|n| n.to_string())
                .zip(short.shown)
                .collect(),
            shared_name: short.shared,
        }
    }

    /// `name` as panes show it: without what every node's name shares.
    pub fn short_name<'n>(&'n self, name: &'n str) -> &'n str {
        self.short_names.get(name).map_or(name, String::as_str)
    }

    /// A finding's subject with its node's short name (`n03 GPU5`).
    pub fn subject(&self, f: &Finding) -> String {
        match (&f.node, f.gpu) {
            (Some(n), Some(g)) => format!("{} GPU{g}", self.short_name(n)),
            (Some(n), None) => self.short_name(n).to_string(),
            _ => f.subject(),
        }
    }
}

/// Draw the whole screen.
pub fn render(state: &State, frame: &mut Frame) {
    let area = frame.area();
    draw(state, area, frame.buffer_mut());
}

/// Draw the whole screen into a buffer (what `render` and the benches use).
pub fn draw(state: &State, area: Rect, buf: &mut Buffer) {
    let ctx = Ctx::new(state);
    buf.set_style(area, ctx.theme.screen);
    if area.height < 3 || area.width < 20 {
        Line::from(Span::styled("burnin: terminal too small", ctx.theme.warn)).render(area, buf);
        return;
    }
    let pane_area = Rect::new(area.x, area.y, area.width, area.height - 1);
    let status_area = Rect::new(area.x, area.y + area.height - 1, area.width, 1);
    for (pane, rect) in state.layout().arrange(pane_area) {
        let focused = state.ui.focus == pane;
        panes::draw_pane(pane, &ctx, focused, rect, buf);
    }
    status_bar(&ctx, status_area, buf);
    match &state.ui.overlay {
        Overlay::None => {}
        other => overlay::draw(other, &ctx, pane_area, buf),
    }
    scrub(area, buf);
}

/// The last guard between outside text and the terminal: no cell the screen sends holds a
/// control or bidi character (a NIC name a node reported, say), whatever a pane forgot to
/// strip. A bidi override would reorder the cells after it on the terminal.
fn scrub(area: Rect, buf: &mut Buffer) {
    use crate::model::is_terminal_unsafe;
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let Some(cell) = buf.cell_mut((x, y)) else {
                continue;
            };
            if cell.symbol().chars().any(is_terminal_unsafe) {
                let clean: String = cell
                    .symbol()
                    .chars()
                    .filter(|c| !is_terminal_unsafe(*c))
                    .collect();
                cell.set_symbol(if clean.is_empty() { " " } else { &clean });
            }
        }
    }
}

/// A bordered block over `area` with the pane's title (whole parts of it that fit, never cut
/// mid-word), highlighted when focused.
pub fn pane_block<'a>(title: &str, area: Rect, focused: bool, theme: &Theme) -> Block<'a> {
    let title = Line::from(crate::model::fit_title(title, area.width as usize));
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused { theme.focus } else { theme.border })
        .title(title.style(theme.title))
}

/// Sparkline text of the newest `width` slots; gaps stay blank.
pub fn sparkline(history: &History, width: usize, max: Option<f64>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let values: Vec<Option<f64>> = history.tail(width).collect();
    let top = max
        .or_else(|| values.iter().flatten().copied().reduce(f64::max))
        .unwrap_or(0.0);
    let mut s: String = " ".repeat(width.saturating_sub(values.len()));
    for v in values {
        s.push(match v {
            None => ' ',
            Some(v) if top <= 0.0 || v <= 0.0 => BARS[0],
            Some(v) => BARS[((v / top * 8.0).ceil() as usize).clamp(1, 8) - 1],
        });
    }
    s
}

/// The last row of a list longer than its pane: how many rows are out of sight below and
/// above, so nothing is cut off without a word; `scrolls` when the keys bring them into sight.
pub fn more_rows(above: usize, below: usize, width: usize, scrolls: bool) -> String {
    let mut parts = Vec::new();
    if below > 0 {
        parts.push(format!("+{below} more below"));
    }
    if above > 0 {
        parts.push(format!("{above} above"));
    }
    let text = format!(" … {}", parts.join(" · "));
    let hint = format!("{text} (↑↓ scroll)");
    if scrolls && hint.chars().count() <= width {
        hint
    } else {
        fit(&text, width)
    }
}

/// The bar a gate is drawn at: three quarters of the height, so what stays under the gate
/// reads as under it and what crosses it has room to show by how much.
pub const GATE_BAR: char = '▆';

/// A sparkline judged against a gate where higher is worse (a latency, a wait): scaled so the
/// gate sits at [`GATE_BAR`] (or the highest value at the top, when one is above that scale),
/// bars over the gate in `over`, the rest in `under`. Returns the spans and the scale's top,
/// for the legend. A sparkline scaled to its own maximum would draw 36 ms full height against
/// a 200 ms gate.
pub fn gated_sparkline(
    history: &History,
    width: usize,
    gate: f64,
    under: Style,
    over: Style,
) -> (Vec<Span<'static>>, f64) {
    let highest = history
        .tail(width)
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let gate = if gate.is_finite() && gate > 0.0 {
        gate
    } else {
        0.0
    };
    let top = (gate / 0.75).max(highest);
    let text = sparkline(history, width, Some(top));
    let mut spans: Vec<Span<'static>> = Vec::new();
    let values: Vec<Option<f64>> = history.tail(width).collect();
    let pad = text.chars().count().saturating_sub(values.len());
    let mut run = String::new();
    let mut run_over = false;
    for (i, c) in text.chars().enumerate() {
        let is_over = i >= pad
            && gate > 0.0
            && values
                .get(i - pad)
                .copied()
                .flatten()
                .is_some_and(|v| v > gate);
        if is_over != run_over && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                if run_over { over } else { under },
            ));
        }
        run_over = is_over;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, if run_over { over } else { under }));
    }
    (spans, top)
}

/// `HH:MM:SS` UTC of an instant.
pub fn clock(ms: UnixMillis) -> String {
    let s = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

pub use crate::model::{fit, fit_words, human_secs};

/// Columns the status bar keeps for the first hint, "? help", and its margins.
const HELP_HINT_ROOM: usize = 10;

fn status_bar(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let theme = ctx.theme;
    buf.set_style(area, theme.status);
    let state = ctx.state;
    let mut left = vec![Span::styled(" burnin ", theme.status.patch(theme.accent))];
    left.push(Span::styled(
        format!("{} {} ", clock(ctx.store.now_ms), state.source_label),
        theme.status,
    ));
    if state.recording.is_some() {
        // Whether what is on screen is being kept: the record opens with the first phase, or
        // with the console under `watch --record`.
        left.push(Span::styled("● REC ", theme.status.patch(theme.ok)));
    }
    if let Some(p) = &state.playback {
        // The replay's time cursor: where in the record, how fast, and whether it plays.
        let (pos, len) = (p.position_s(ctx.store.now_ms), p.length_s());
        const CELLS: u64 = 12;
        let filled = (pos * CELLS).checked_div(len).unwrap_or(CELLS).min(CELLS);
        left.push(Span::styled(
            format!(
                "{} +{}/{} {} ",
                if p.paused { "⏸" } else { "▶" },
                human_secs(pos),
                human_secs(len),
                crate::app::state::speed_label(p.speed)
            ),
            theme.status.patch(theme.accent),
        ));
        left.push(Span::styled(
            "━".repeat(filled as usize),
            theme.status.patch(theme.accent),
        ));
        left.push(Span::styled(
            "─".repeat((CELLS - filled) as usize),
            theme.status.patch(theme.muted),
        ));
        left.push(Span::raw(" "));
    }
    if state.frozen.is_some() || state.playback.as_ref().is_some_and(|p| p.paused) {
        left.push(Span::styled(" PAUSED ", theme.warn));
        left.push(Span::raw(" "));
    }
    if let Some((id, ask)) = ctx.store.drill_prompt() {
        // The drill waits for the operator: this outranks every other message.
        left.push(Span::styled(
            format!(" {id} ASKS: {ask} — c when done "),
            theme.status.patch(theme.crit),
        ));
        left.push(Span::raw(" "));
    } else if state.ui.editing_filter {
        left.push(Span::styled(
            format!("filter: {}█ ", state.ui.filter),
            theme.status.patch(theme.accent),
        ));
    } else if let Some((tone, msg)) = &state.ui.status {
        let style = match tone {
            Tone::Info => theme.status,
            Tone::Warn => theme.status.patch(theme.warn),
        };
        // A message never hides the way to the help: it is cut to leave "? help".
        let used: usize = left.iter().map(|s| s.content.chars().count()).sum();
        let room = (area.width as usize).saturating_sub(used + HELP_HINT_ROOM);
        left.push(Span::styled(fit(msg, room), style));
    }
    let used: usize = left.iter().map(|s| s.content.chars().count()).sum();
    let hints: String = BINDINGS
        .iter()
        .filter_map(|b| b.hint.map(|h| format!("{} {h}", b.keys[0].label())))
        .collect::<Vec<_>>()
        .join("  ");
    let width = area.width as usize;
    let room = width.saturating_sub(used + 2);
    let mut spans = left;
    if room >= HELP_HINT_ROOM - 2 {
        let hints = fit(&hints, room);
        let pad = width.saturating_sub(used + hints.chars().count() + 1);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(hints, theme.status.patch(theme.muted)));
    }
    let line = Line::from(spans);
    let mut text = String::new();
    for s in &line.spans {
        text.push_str(&s.content);
    }
    if text.chars().count() > width {
        Line::from(Span::styled(fit(&text, width), theme.status)).render(area, buf);
    } else {
        line.render(area, buf);
    }
}

/// A style for a share of a gate: ok at or above `good`, warn above `bad`, crit below.
pub fn share_style(theme: &Theme, value: f64, good: f64, bad: f64) -> Style {
    if value >= good {
        theme.ok
    } else if value >= bad {
        theme.warn
    } else {
        theme.crit
    }
}

/// Pane title with the pane's name.
pub fn title_of(pane: PaneKind) -> &'static str {
    match pane {
        PaneKind::Gpus => "GPUs",
        PaneKind::Nvlink => "NVLink",
        PaneKind::Fabric => "Fabric",
        PaneKind::Nccl => "NCCL",
        PaneKind::Storage => "AIStor",
        PaneKind::Loader => "Dataloader",
        PaneKind::Phases => "Plan",
        PaneKind::Triage => "Triage",
        PaneKind::Log => "Log",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_keeps_gaps_blank() {
        let mut h = History::new(crate::model::units::Period::SECOND, 10);
        h.push(0, Some(1.0));
        h.push(2000, Some(8.0));
        assert_eq!(sparkline(&h, 5, None), "  ▁ █");
    }

    #[test]
    fn a_sparkline_under_its_gate_draws_low_and_one_over_it_says_so() {
        let (ok, crit) = (Style::new().green(), Style::new().red());
        let mut h = History::new(crate::model::units::Period::SECOND, 10);
        for (i, v) in [34.0, 36.0, 35.0].into_iter().enumerate() {
            h.push(i as u64 * 1000, Some(v));
        }
        // 36 ms against a 200 ms gate: a quarter of the gate's bar, never full height.
        let (spans, top) = gated_sparkline(&h, 3, 200.0, ok, crit);
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "▂▂▂");
        assert!((top - 266.7).abs() < 0.1, "{top}");
        assert!(spans.iter().all(|s| s.style == ok));
        // Over the gate: drawn in the over style, and the scale grows to hold it.
        h.push(3000, Some(400.0));
        let (spans, top) = gated_sparkline(&h, 4, 200.0, ok, crit);
        assert_eq!(top, 400.0);
        let last = spans.last().expect("spans");
        assert_eq!((last.content.as_ref(), last.style), ("█", crit));
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text.chars().count(), 4);
        // The gate value itself draws at the gate's bar.
        let mut g = History::new(crate::model::units::Period::SECOND, 10);
        g.push(0, Some(200.0));
        let (spans, _) = gated_sparkline(&g, 1, 200.0, ok, crit);
        assert_eq!(spans[0].content.as_ref(), GATE_BAR.to_string());
    }

    #[test]
    fn helpers_format() {
        assert_eq!(clock(1_796_202_000_000 + 3_725_000), "10:02:05");
        assert_eq!(human_secs(185), "3m05s");
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
