//! Helpers shared by the integration tests: a console state driven by the seeded simulator to an
//! exact simulated second, with the shipped themes and layouts.

#![allow(dead_code)]

use burnin::app::state::{Event, State};
use burnin::telemetry::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
use burnin::ui::layout::{EMBEDDED as LAYOUTS, Layout};
use burnin::ui::theme::{EMBEDDED as THEMES, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The label of the demo's status line.
pub const DEMO_LABEL: &str = "demo: simulated 12×8 B300, seed 1";

/// A console state with the shipped themes and layouts and nothing fed yet.
pub fn empty_state(label: &str, size: (u16, u16)) -> State {
    let themes = THEMES
        .iter()
        .map(|(n, t)| Theme::parse(n, t).expect("shipped theme"))
        .collect();
    let layouts = LAYOUTS
        .iter()
        .map(|(n, t)| Layout::parse(n, t).expect("shipped layout"))
        .collect();
    State::new(themes, layouts, label, size)
}

/// A console over the demo cluster (seed 1, the demo's faults), stepped to `at_s` simulated
/// seconds.
pub fn demo_state(at_s: u64, size: (u16, u16)) -> State {
    demo_state_with(SimConfig::demo(1), at_s, size)
}

/// Same with a chosen simulator configuration.
pub fn demo_state_with(config: SimConfig, at_s: u64, size: (u16, u16)) -> State {
    let mut state = empty_state(DEMO_LABEL, size);
    let mut sim = SimCluster::new(config);
    // Second by second, as the live loop would see it, so triage history matches.
    for s in 0..=at_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            state.update(Event::Source(e));
        }
    }
    state
}

/// Render the whole screen into a test terminal.
pub fn screen(state: &State) -> Terminal<TestBackend> {
    let (w, h) = state.ui.size;
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    terminal
        .draw(|f| burnin::ui::render(state, f))
        .expect("draw");
    terminal
}
pub mod prom;
pub mod seaweed;
pub mod sshd;
pub mod tls;
