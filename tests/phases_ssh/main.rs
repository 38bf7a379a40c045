//! Phases on real nodes over real SSH (an sshd per node on loopback, tests/common/sshd.rs),
//! through the binary as an engineer runs it: `burnin run --json`. Stand-in benchmark programs
//! on the nodes replay real captured output line by line; the figures in the run record must be
//! the numbers in the captures. Abort must leave nothing running; a cut SSH link must neither
//! lose nor double a line; an Xid the telemetry sees during a phase fails it. The tests about
//! the phases themselves run with `--no-telemetry` (their nodes have no agent to watch).

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod console;
mod drills;
mod preflight;
mod runs;
mod separate_jobs;
mod spec_floors;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::site::{BIN, Site, finish, phase, replay_tool};

fn figure(doc: &serde_json::Value, id: &str, name: &str, subject: &str) -> Option<f64> {
    phase(doc, id)["figures"][name]
        .as_array()?
        .iter()
        .find(|s| s["subject"] == subject)?["value"]
        .as_f64()
}

/// Wait (40 s at most) until the telemetry recorded in `run` satisfies `enough`.
fn wait_for_seconds(
    run: &Path,
    what: &str,
    enough: impl Fn(&[burnin::record::telemetry::NodeSecond]) -> bool,
) {
    wait_for(what, Duration::from_secs(40), || {
        burnin::record::telemetry::read_telemetry(run).is_ok_and(|t| enough(&t.seconds))
    });
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    common::files_under(dir)
}
