//! Helpers shared by the integration tests: a console state driven by the seeded simulator to an
//! exact simulated second, with the shipped themes and layouts.

#![allow(dead_code)]

use burnin::app::layout::{EMBEDDED as LAYOUTS, Layout};
use burnin::app::state::{Event, State};
use burnin::app::theme::{EMBEDDED as THEMES, Theme};
use burnin::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
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
    // As `burnin demo` does: the gate lines drawn from the simulator's nominal figures.
    state
        .store
        .set_baseline(Some(std::sync::Arc::new(burnin::sim::nominal_baseline(
            &config,
        ))));
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

/// A key pressed on the console, without modifiers.
pub fn press(state: &mut State, code: crossterm::event::KeyCode) {
    state.update(Event::Key(crossterm::event::KeyEvent::new(
        code,
        crossterm::event::KeyModifiers::NONE,
    )));
}

/// One pane, focused, filling a terminal of `size`.
pub fn pane_alone(
    state: &State,
    pane: burnin::app::layout::PaneKind,
    size: (u16, u16),
) -> Terminal<TestBackend> {
    let ctx = burnin::ui::Ctx::new(state);
    let mut term = Terminal::new(TestBackend::new(size.0, size.1)).expect("terminal");
    term.draw(|f| {
        let area = f.area();
        burnin::ui::panes::draw_pane(pane, &ctx, true, area, f.buffer_mut());
    })
    .expect("draw");
    term
}

pub mod prom;
pub mod seaweed;
pub mod site;
pub mod sshd;
pub mod tls;

/// Every file under `dir`, recursively, sorted (a missing directory is empty).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The library's Rust sources under `src/`, each with its text cut at its first
/// `#[cfg(test)]` (test modules sit at the end of a file and may reach anywhere).
pub fn library_code() -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    files_under(&root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        // A split module's unit tests (`#[cfg(test)] mod tests;` in its mod.rs) are test code.
        .filter(|p| p.file_name().is_none_or(|n| n != "tests.rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read a source file");
            let code = without_tests(&text);
            (
                p.strip_prefix(&root).expect("under src").to_path_buf(),
                code,
            )
        })
        .collect()
}

/// A source file's code without its test code: a `#[cfg(test)] mod name;` declaration (a
/// split module's tests, or test fixtures) is dropped where it stands, and the file is cut at
/// any other `#[cfg(test)]`, which by the house style opens what is test code to the end (the
/// inline `mod tests { … }`, or a test-only helper just ahead of it).
pub fn without_tests(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let declaration = lines.peek().is_some_and(|next| {
                let next = next.trim();
                let next = next.strip_prefix("pub(crate) ").unwrap_or(next);
                next.starts_with("mod ") && next.ends_with(';')
            });
            if !declaration {
                break;
            }
            lines.next();
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// `program` to run under GNU time, which writes that process's own peak resident memory (kB)
/// into `out`. wait4 on a child of the test process over-counts: std spawns with vfork, and
/// the exec takes the test process's own high-water mark (hundreds of MB when another test in
/// it ran big) into the child's account. GNU time forks its child from its own small memory.
pub fn under_gnu_time(program: &str, out: &std::path::Path) -> std::process::Command {
    assert!(
        std::path::Path::new("/usr/bin/time").exists(),
        "GNU time is needed to measure a process's peak memory (Debian: apt-get install time; \
         scripts/test.sh installs it)"
    );
    let mut cmd = std::process::Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "-o"]).arg(out).arg(program);
    cmd
}

/// The peak resident memory GNU time wrote into `out`, kB.
pub fn gnu_time_peak_kb(out: &std::path::Path) -> i64 {
    let text = std::fs::read_to_string(out).expect("GNU time's output");
    text.lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in GNU time's output: {text}"))
}

/// What a node printed in a phase, as the record keeps it: `logs/<phase>/<node>.log.gz` once
/// the phase ended (every gzip member), the plain `.log` while it runs.
pub fn node_log(run_dir: &std::path::Path, phase: &str, node: &str) -> String {
    use std::io::Read;
    let dir = run_dir.join("logs").join(phase);
    match std::fs::File::open(dir.join(format!("{node}.log.gz"))) {
        Ok(f) => {
            let mut out = String::new();
            flate2::read::MultiGzDecoder::new(f)
                .read_to_string(&mut out)
                .expect("a gzip log");
            out
        }
        Err(_) => std::fs::read_to_string(dir.join(format!("{node}.log")))
            .unwrap_or_else(|e| panic!("no log of {node} in {phase}: {e}")),
    }
}

/// In `dir`: a `burnin.toml` of one `local` node n1 (1 GPU) whose plan (`plan.toml`) is one
/// phase T1 running `command` with no parser, as `burnin run` reads them there.
pub fn local_node_with_phase(dir: &std::path::Path, command: &str) {
    std::fs::write(
        dir.join("burnin.toml"),
        "plan = \"plan.toml\"\n[[node]]\nhost = \"n1\"\nmode = \"local\"\ngpus = 1\n",
    )
    .expect("inventory");
    std::fs::write(
        dir.join("plan.toml"),
        format!(
            "[[phase]]\nid = \"T1\"\ntitle = \"one command\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = {}\n",
            toml::Value::String(command.to_string())
        ),
    )
    .expect("plan");
}

/// A fixture of `burnin agent`'s NDJSON (`tests/fixtures/REL`): its hellos and frames, in order.
pub fn agent_capture(rel: &str) -> (Vec<burnin::model::NodeHello>, Vec<burnin::model::NodeFrame>) {
    use burnin::wire::{Decoded, Decoder, WireMessage};
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{rel}: {e}"));
    let mut d = Decoder::new();
    let (mut hellos, mut frames) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match d.decode(line) {
            Ok(Decoded::Message(WireMessage::Hello(h))) => hellos.push(h),
            Ok(Decoded::Message(WireMessage::Frame(f))) => frames.push(f),
            other => panic!("{rel}: {other:?}"),
        }
    }
    (hellos, frames)
}
