//! The console: store, triage and screen over hostile streams.

use super::*;

/// A console with the shipped themes and layouts, as `burnin watch` starts.
pub(crate) fn console() -> State {
    common::empty_state("fuzz", (160, 48))
}

/// What the fleet sends the console for one node's decoded messages: the inventory's
/// expectation, then each hello and frame under the node's inventory name, frames stamped on
/// arrival (one a second) with a clock tick, an agent's error as a note.
pub(crate) fn fleet_events(node: &str, gpus: u32, messages: Vec<WireMessage>) -> Vec<SourceEvent> {
    let mut out = vec![SourceEvent::Expect {
        node: node.into(),
        gpus,
        nic_rate_gbps: None,
    }];
    let mut now = T0_MS;
    for m in messages {
        match m {
            WireMessage::Hello(mut h) => {
                h.node = node.into();
                out.push(SourceEvent::Hello(h));
            }
            WireMessage::Frame(mut f) => {
                now += 1000;
                f.node = node.into();
                f.at_ms = now;
                out.push(SourceEvent::Frame(f));
                out.push(SourceEvent::Clock { at_ms: now });
            }
            WireMessage::Error(text) => out.push(SourceEvent::Note {
                node: node.into(),
                at_ms: now,
                text,
            }),
        }
    }
    out.push(SourceEvent::Link {
        node: node.into(),
        at_ms: now,
        link: NodeLink::Unreachable("exit 255: Connection closed".into()),
    });
    out
}

/// Draw the console as the terminal would show it; no cell holds a control character (a
/// node's text cannot drive the operator's terminal).
pub(crate) fn check_screen(state: &State) -> Result<(), TestCaseError> {
    let (w, h) = state.ui.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| burnin::ui::render(state, f)).expect("draw");
    let buf = term.backend().buffer();
    for cell in buf.content() {
        let bad = cell.symbol().chars().find(|c| c.is_control());
        prop_assert!(bad.is_none(), "a cell holds {bad:?}");
    }
    Ok(())
}

/// Which stream a console case reads, and how.
#[derive(Debug, Clone)]
pub(crate) enum Stream {
    /// An agent's NDJSON.
    Agent(Case),
    /// nvidia-smi CSV (legacy fields or not).
    Smi(Case, bool),
}

proptest! {
    #![proptest_config(config("console"))]

    /// Hostile agent and smi streams, decoded as the fleet decodes them, into the console:
    /// store, triage each second, then the screen and the GPU details drawn.
    #[test]
    fn console_takes_any_stream(
        s in prop_oneof![
            3 => case(Family::Ndjson).prop_map(Stream::Agent),
            1 => (case(Family::Smi), any::<bool>()).prop_map(|(c, l)| Stream::Smi(c, l)),
        ],
        gpus in prop_oneof![Just(8u32), Just(1), 0..=1024u32],
    ) {
        cap_memory();
        let messages = match &s {
            Stream::Agent(c) => decode_stream(&stream_lines(&c.bytes()), Errors::Short)?,
            Stream::Smi(c, legacy) => decode_smi(c, *legacy, gpus.clamp(1, 16))?,
        };
        let mut state = console();
        for ev in fleet_events("node01", gpus, messages) {
            state.update(Event::Source(ev));
        }
        // However a stream names itself, it is the one node the fleet reads it from, and
        // its histories keep their fixed number of slots.
        prop_assert_eq!(state.store.nodes.len(), 1);
        for g in &state.store.nodes[0].gpus {
            prop_assert!(g.power_watts.len() <= burnin::store::HISTORY_SLOTS);
            prop_assert!(g.temperature_c.len() <= burnin::store::HISTORY_SLOTS);
        }
        check_screen(&state)?;
        state.ui.overlay = burnin::app::state::Overlay::GpuDetails;
        check_screen(&state)?;
    }
}
