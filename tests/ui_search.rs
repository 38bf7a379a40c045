//! The fault search in the console, on the demo cluster: `f` on T7 asks first, `y` starts it,
//! the simulator plays one round a second over its fabric (node05's port trained at 200G runs
//! every test it is in at half rate), the overlay shows the rounds as they come and names
//! node05, triage lists it critical, `a` during the search asks to abort it, and `f` on a
//! phase that runs on each node says why not.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use burnin::app::action::Effect;
use burnin::app::state::{Confirm, Event, Overlay, State};
use burnin::model::phase::PhaseCommand;
use burnin::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// The demo cluster at `at_s` with no phase playing (a search waits for a running phase to
/// end, as on real nodes), with its simulator to go on with.
fn demo(at_s: u64) -> (State, SimCluster) {
    let mut state = common::empty_state(common::DEMO_LABEL, (160, 48));
    let mut sim = SimCluster::new(SimConfig {
        autorun: false,
        ..SimConfig::demo(1)
    });
    for s in 0..=at_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            state.update(Event::Source(e));
        }
    }
    (state, sim)
}

fn step(state: &mut State, sim: &mut SimCluster, s: u64) {
    for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
        state.update(Event::Source(e));
    }
}

fn select(state: &mut State, id: &str) {
    state.ui.phase = state
        .store
        .phases
        .iter()
        .position(|p| p.spec.id == id)
        .expect("phase");
}

#[test]
fn f_on_t7_searches_the_demo_fabric_and_names_node05() {
    let (mut state, mut sim) = demo(30);
    select(&mut state, "T7");
    assert_eq!(state.update(key('f')), None);
    assert_eq!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Localize("T7".into()))
    );
    insta::assert_snapshot!(
        "search_asks_first",
        common::screen(&state).backend().to_string()
    );
    let Some(Effect::Command(cmd)) = state.update(key('y')) else {
        panic!("y starts it");
    };
    assert_eq!(cmd, PhaseCommand::Localize("T7".into()));
    for e in sim.command(cmd) {
        state.update(Event::Source(e));
    }
    // One round a second: after two, it runs, nothing named yet, and `a` would abort it.
    step(&mut state, &mut sim, 32);
    let s = state.store.search.as_deref().expect("a search");
    assert!(s.running && s.named.is_empty(), "{s:?}");
    assert_eq!(state.ui.overlay, Overlay::Search);
    insta::assert_snapshot!(
        "search_while_it_runs",
        common::screen(&state).backend().to_string()
    );
    assert_eq!(state.update(key('a')), None);
    assert_eq!(
        state.ui.overlay,
        Overlay::Confirm(Confirm::Abort("search T7".into()))
    );
    state.update(key('n'));
    state.ui.overlay = Overlay::Search;
    step(&mut state, &mut sim, 40);
    let s = state.store.search.as_deref().expect("a search");
    assert!(!s.running, "{s:?}");
    assert_eq!(s.named.len(), 1, "{s:?}");
    assert!(s.named[0].starts_with("node05: slow beside "), "{s:?}");
    let text = common::screen(&state).backend().to_string();
    assert!(text.contains("BAD NODE node05"), "{text}");
    insta::assert_snapshot!("search_done_names_node05", text);
    // Triage lists it, critical, with the search's evidence.
    let f = state
        .findings
        .iter()
        .find(|f| f.rule == "bad-node")
        .expect("a bad-node finding");
    assert_eq!(f.node.as_deref(), Some("node05"));
}

#[test]
fn f_on_a_phase_run_on_each_node_says_why_not() {
    let (mut state, _sim) = demo(5);
    select(&mut state, "T4");
    assert_eq!(state.update(key('f')), None);
    assert_eq!(state.ui.overlay, Overlay::None);
    let said = state.ui.status.clone().map(|(_, t)| t).unwrap_or_default();
    assert!(said.contains("T4's scope is each"), "{said}");
}
