//! Colours come from the resolved theme's roles: a stalled GPU's cell is drawn in the theme's
//! `crit` style, a healthy one in `ok`, and switching themes changes them.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use burnin::app::state::Event;
use common::{demo_state, screen};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::style::Style;

/// Style of the first cell of the line that starts with `row_label`, at the column where
/// `needle` first appears on that line.
fn style_at(buf: &Buffer, row_label: &str, col_of: usize) -> Style {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        let line: String = (area.left()..area.right())
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if line.trim_start_matches(['┃', '│']).starts_with(row_label) {
            let cell = &buf[(area.left() + col_of as u16, y)];
            return cell.style();
        }
    }
    panic!("no row {row_label}");
}

fn grid_col(gpu: usize) -> usize {
    // Border, 8-column node label, then 18-column cells at 160 wide; land inside the cell.
    1 + 8 + gpu * 18 + 2
}

#[test]
fn stalled_gpu_is_crit_and_peers_ok_in_every_theme() {
    let mut state = demo_state(125, (160, 48));
    for _ in 0..state.themes.len() {
        let theme = state.theme().clone();
        let term = screen(&state);
        let buf = term.backend().buffer();
        let stalled = style_at(buf, "node07", grid_col(3));
        let healthy = style_at(buf, "node07", grid_col(2));
        let reset = Some(ratatui::style::Color::Reset);
        assert_eq!(stalled.fg, theme.crit.fg.or(reset), "theme {}", theme.name);
        assert_eq!(
            stalled.add_modifier, theme.crit.add_modifier,
            "theme {}",
            theme.name
        );
        assert_eq!(healthy.fg, theme.ok.fg.or(reset), "theme {}", theme.name);
        assert_eq!(
            healthy.add_modifier, theme.ok.add_modifier,
            "theme {}",
            theme.name
        );
        state.update(Event::Key(KeyEvent::new(
            KeyCode::Char('t'),
            KeyModifiers::NONE,
        )));
    }
}

#[test]
fn mono_theme_uses_no_colour() {
    let mut state = demo_state(125, (160, 48));
    state.ui.theme = state
        .themes
        .iter()
        .position(|t| t.name == "mono")
        .expect("mono theme");
    let term = screen(&state);
    for cell in term.backend().buffer().content() {
        assert!(
            matches!(cell.fg, ratatui::style::Color::Reset),
            "mono drew a colour: {cell:?}"
        );
        assert!(matches!(cell.bg, ratatui::style::Color::Reset), "{cell:?}");
    }
}
