//! `burnin replay`: the console over a run record shows the same screen as the live run did at
//! the same instant. The record is a real one, written by `burnin run --demo`; the live screen
//! is the console fed by the simulator second by second.

mod common;

use std::path::PathBuf;
use std::process::Command;

use burnin::app::state::Event;
use burnin::replay::Timeline;
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

#[test]
fn replay_shows_what_the_live_console_showed_at_the_same_instant() {
    let (root, dir) = demo_record("same");
    let timeline = Timeline::load(&dir).expect("timeline");
    assert!(timeline.damage.is_empty(), "{:?}", timeline.damage);
    for at in [30, 125, 175, 340] {
        let mut replayed = empty_state(DEMO_LABEL, (160, 48));
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
    let err = Timeline::load(&dir).expect_err("refused");
    assert!(
        err.contains("the record spans") && err.contains("days") && err.contains("not believable"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(root);
}
