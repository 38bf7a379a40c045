//! `burnin replay`: the console over a run record shows the same screen as the live run did at
//! the same instant. The record is a real one, written by `burnin run --demo`; the live screen
//! is the console fed by the simulator second by second.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use burnin::app::state::Event;
use burnin::sources::replay::Timeline;
use common::{DEMO_LABEL, demo_state, empty_state, screen};

fn demo_record(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("burnin-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let runs = root.join("runs");
    let o = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(["run", "--demo", "--runs-dir", runs.to_str().expect("utf-8")])
        .env("BURNIN_LOG", root.join("burnin.log"))
        .output()
        .expect("burnin run --demo");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = std::fs::read_dir(&runs)
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("run dir");
    (root, dir)
}

/// The baseline a record names, as `burnin replay` reads it.
fn recorded_baseline(
    dir: &std::path::Path,
) -> Option<std::sync::Arc<burnin::plan::gates::Baseline>> {
    let summary = burnin::record::read_summary(dir).expect("summary");
    let path = summary.baseline.expect("run --demo names its baseline");
    Some(std::sync::Arc::new(
        burnin::record::session::read_baseline(std::path::Path::new(&path)).expect("baseline"),
    ))
}

#[test]
fn replay_shows_what_the_live_console_showed_at_the_same_instant() {
    let (root, dir) = demo_record("same");
    let timeline = Timeline::load(&dir).expect("timeline");
    assert!(timeline.damage.is_empty(), "{:?}", timeline.damage);
    for at in [30, 125, 175, 340] {
        let mut replayed = empty_state(DEMO_LABEL, (160, 48));
        // As `burnin replay` does: the gate lines of the baseline the record names.
        replayed.store.set_baseline(recorded_baseline(&dir));
        for ev in timeline.until(at) {
            replayed.update(Event::Source(ev.clone()));
        }
        let live = demo_state(at, (160, 48));
        let (r, l) = (
            screen(&replayed).backend().to_string(),
            screen(&live).backend().to_string(),
        );
        if r != l {
            let first = r
                .lines()
                .zip(l.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "at {at} s the replay differs from the live screen at row {first}:\n  live:   {}\n  replay: {}",
                l.lines().nth(first).unwrap_or(""),
                r.lines().nth(first).unwrap_or("")
            );
        }
        if at == 125 {
            insta::assert_snapshot!("replay_160x48_at_125s", screen(&replayed).backend());
        }
    }
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn replay_runs_headless_to_its_end() {
    let (root, dir) = demo_record("headless");
    // At 600× the ~6 minute record plays in under a second; the console then shows its end.
    let o = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args([
            "replay",
            dir.to_str().expect("utf-8"),
            "--speed",
            "600",
            "--headless",
            "120x40",
            "--duration",
            "2",
        ])
        .env("BURNIN_LOG", root.join("burnin.log"))
        .output()
        .expect("burnin replay");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let missing = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(["replay", root.join("nope").to_str().expect("utf-8")])
        .env("BURNIN_LOG", root.join("burnin.log"))
        .output()
        .expect("burnin replay");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("summary.json"));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_record_with_unbelievable_times_is_refused_with_its_reason() {
    let (root, dir) = demo_record("span");
    // One event stamped years after the run started (a hand-edited record, a clock far off).
    let mut events = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    events.push_str(
        r#"{"event":"node_state","at_ms":4102444800000,"node":"node01","state":"stale"}"#,
    );
    events.push('\n');
    std::fs::write(dir.join("events.jsonl"), events).expect("write");
    let err = Timeline::load(&dir).expect_err("refused").to_string();
    assert!(
        err.contains("the record spans") && err.contains("days") && err.contains("not believable"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(root);
}

fn key(c: char) -> Event {
    Event::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char(c),
        crossterm::event::KeyModifiers::NONE,
    ))
}

#[test]
fn seeking_back_shows_what_the_live_console_showed_then() {
    let (root, dir) = demo_record("seek");
    let timeline = Timeline::load(&dir).expect("timeline");
    // Play to 340 s, then go back to 125 s as the source does: a rewind, then the record
    // from its start up to the new instant.
    let mut replayed = empty_state(DEMO_LABEL, (160, 48));
    replayed.store.set_baseline(recorded_baseline(&dir));
    for ev in timeline.until(340) {
        replayed.update(Event::Source(ev.clone()));
    }
    replayed.update(Event::Source(burnin::model::SourceEvent::Rewind));
    for ev in timeline.until(125) {
        replayed.update(Event::Source(ev.clone()));
    }
    let live = demo_state(125, (160, 48));
    assert_eq!(
        screen(&replayed).backend().to_string(),
        screen(&live).backend().to_string(),
        "after seeking back, the screen is the live one at 125 s"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn replay_keys_steer_the_replay_and_the_status_bar_shows_where_it_is() {
    use burnin::app::action::Effect;
    use burnin::app::state::Playback;
    use burnin::sources::replay::PlaybackCommand;
    let (root, dir) = demo_record("keys");
    let timeline = Timeline::load(&dir).expect("timeline");
    let mut state = empty_state(DEMO_LABEL, (160, 48));
    // Live, the replay keys only say what they are for.
    assert_eq!(state.update(key('>')), None);
    assert!(format!("{:?}", state.ui.status).contains("only a replay"));
    assert_eq!(state.update(key(']')), None);

    state.playback = Some(Playback {
        start_ms: timeline.start_ms,
        end_ms: timeline.end_ms,
        speed: 1.0,
        paused: false,
    });
    for ev in timeline.until(125) {
        state.update(Event::Source(ev.clone()));
    }
    // A replay has no nodes: start, abort and a drill's confirmation go nowhere, and say so
    // (T4 runs at 125 s, so each would otherwise send a command).
    for k in ['s', 'r', 'a', 'c'] {
        assert_eq!(state.update(key(k)), None, "{k}");
        assert!(
            format!("{:?}", state.ui.status).contains("a replay shows what the run did"),
            "{k}: {:?}",
            state.ui.status
        );
    }
    assert_eq!(
        state.update(key('>')),
        Some(Effect::Playback(PlaybackCommand::Speed(2.0)))
    );
    assert_eq!(
        state.update(key('>')),
        Some(Effect::Playback(PlaybackCommand::Speed(4.0)))
    );
    assert_eq!(
        state.update(key('<')),
        Some(Effect::Playback(PlaybackCommand::Speed(2.0)))
    );
    assert_eq!(
        state.update(key(']')),
        Some(Effect::Playback(PlaybackCommand::Seek(185)))
    );
    assert_eq!(
        state.update(key('{')),
        Some(Effect::Playback(PlaybackCommand::Seek(0))),
        "never before the start"
    );
    let len = (timeline.end_ms - timeline.start_ms) / 1000;
    assert_eq!(
        state.update(key('}')),
        Some(Effect::Playback(PlaybackCommand::Seek(len))),
        "never past the end"
    );
    assert_eq!(
        state.update(key('p')),
        Some(Effect::Playback(PlaybackCommand::Pause))
    );
    assert!(
        state.frozen.is_none(),
        "a replay pauses itself, not the display"
    );
    let status = screen(&state)
        .backend()
        .to_string()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    insta::assert_snapshot!("replay_status_bar_paused_at_125s", status);
    assert_eq!(
        state.update(key('p')),
        Some(Effect::Playback(PlaybackCommand::Resume))
    );
    let _ = std::fs::remove_dir_all(root);
}
