//! The terminal is restored however the console ends: `q` then `d` (detach), SIGTERM, and
//! SIGHUP (the SSH session dropping). The binary runs on a real pseudo-terminal made by
//! util-linux `script`; the test reads what it wrote to the terminal and checks that it left
//! the alternate screen, showed the cursor again, and exited 0.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ENTER_ALT: &[u8] = b"\x1b[?1049h";
const LEAVE_ALT: &[u8] = b"\x1b[?1049l";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";
const CLEAR_ALL: &[u8] = b"\x1b[2J";

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn have_script() -> bool {
    let ok = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1") {
        panic!("util-linux `script` is required (BURNIN_REQUIRE_REAL=1)");
    }
    ok
}

enum Ending {
    Keys(&'static [u8]),
    Signal(&'static str),
    /// SIGTSTP, wait until the process is stopped, SIGCONT, let it redraw, then SIGTERM.
    StopThenContinue,
    /// SIGSTOP (which burnin cannot see), SIGCONT, let it redraw, then SIGTERM.
    HardStopThenContinue,
}

/// The state letter of `pid` in /proc (`T`: stopped).
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

fn kill(sig: &str, pid: i32) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {pid}");
}

/// Run the demo on a pty, end it, return (terminal output, exit ok).
fn run_and_end(ending: Ending) -> (Vec<u8>, bool) {
    let bin = env!("CARGO_BIN_EXE_burnin");
    let dir = std::env::temp_dir().join(format!(
        "burnin-pty-{}-{:?}",
        std::process::id(),
        Instant::now()
    ));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let pidfile: PathBuf = dir.join("pid");
    let inner = format!(
        "stty cols 100 rows 30; echo $$ > '{}'; exec '{}' demo --speed 20 --duration 60 --log-file '{}'",
        pidfile.display(),
        bin,
        dir.join("log").display()
    );
    let mut child = Command::new("script")
        .args(["-qefc", &inner, "/dev/null"])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn script");
    let mut stdout = child.stdout.take().expect("stdout");
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = shared.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.lock().expect("output").extend_from_slice(&buf[..n]);
        }
    });
    // How much the terminal had received when the process was continued.
    let mut continued_at = None;
    // Let it draw a few frames (and let the plan start).
    let started = Instant::now();
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pidfile)
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "burnin did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500));
    let mut stdin = child.stdin.take().expect("stdin");
    match ending {
        Ending::Keys(keys) => {
            for k in keys {
                stdin.write_all(&[*k]).expect("type");
                stdin.flush().expect("flush");
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        Ending::Signal(sig) => kill(sig, pid),
        Ending::StopThenContinue => {
            stop_and_continue("TSTP", pid, child.id() as i32, &shared);
        }
        Ending::HardStopThenContinue => {
            continued_at = Some(stop_and_continue("STOP", pid, child.id() as i32, &shared));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("burnin did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    reader.join().expect("reader");
    let out = std::mem::take(&mut *shared.lock().expect("output"));
    std::fs::remove_dir_all(&dir).ok();
    if let Some(at) = continued_at {
        // Everything drawn anew after the continue: the screen was cleared first.
        assert!(
            find(&out[at.min(out.len())..], CLEAR_ALL).is_some(),
            "no full redraw after SIGCONT: {:?}",
            String::from_utf8_lossy(&out[at.min(out.len())..])
                .chars()
                .take(300)
                .collect::<String>()
        );
    }
    (out, status.success())
}

/// Stop burnin with `sig`, wait until it is stopped, continue it (and `script`, which mirrors
/// its child's stop, as a shell's `fg` would), let it redraw, then SIGTERM. Returns how much
/// the terminal had received when it was continued.
fn stop_and_continue(
    sig: &str,
    pid: i32,
    script_pid: i32,
    shared: &std::sync::Mutex<Vec<u8>>,
) -> usize {
    kill(sig, pid);
    let t0 = Instant::now();
    while proc_state(pid) != Some('T') {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "burnin did not stop on SIG{sig} (state {:?})",
            proc_state(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let at = shared.lock().expect("output").len();
    kill("CONT", pid);
    kill("CONT", script_pid);
    std::thread::sleep(Duration::from_millis(1500));
    assert_ne!(proc_state(pid), Some('T'), "running again after SIGCONT");
    kill("TERM", pid);
    at
}

fn assert_restored(out: &[u8], ok: bool, how: &str) {
    let entered =
        find(out, ENTER_ALT).unwrap_or_else(|| panic!("{how}: never entered the alternate screen"));
    let left = rfind(out, LEAVE_ALT).unwrap_or_else(|| panic!("{how}: alternate screen not left"));
    assert!(left > entered, "{how}: left before entering");
    let cursor = rfind(out, SHOW_CURSOR).unwrap_or_else(|| panic!("{how}: cursor not shown again"));
    assert!(
        cursor > entered,
        "{how}: cursor shown only before the console"
    );
    assert!(ok, "{how}: exit status not 0");
}

#[test]
fn quit_restores_the_terminal() {
    if !have_script() {
        return;
    }
    // The demo runs nothing on any node: q quits at once, with a phase running or not.
    let (out, ok) = run_and_end(Ending::Keys(b"q"));
    assert_restored(&out, ok, "q");
}

#[test]
fn sigterm_restores_the_terminal() {
    if !have_script() {
        return;
    }
    let (out, ok) = run_and_end(Ending::Signal("TERM"));
    assert_restored(&out, ok, "SIGTERM");
}

#[test]
fn sighup_restores_the_terminal() {
    if !have_script() {
        return;
    }
    let (out, ok) = run_and_end(Ending::Signal("HUP"));
    assert_restored(&out, ok, "SIGHUP");
}

#[test]
fn sigquit_restores_the_terminal() {
    if !have_script() {
        return;
    }
    let (out, ok) = run_and_end(Ending::Signal("QUIT"));
    assert_restored(&out, ok, "SIGQUIT");
}

/// SIGTSTP hands the terminal back (main screen, cursor shown) before the process stops;
/// SIGCONT takes the alternate screen again and the console goes on until SIGTERM.
#[test]
fn sigtstp_hands_the_terminal_back_and_sigcont_takes_it_again() {
    if !have_script() {
        return;
    }
    let (out, ok) = run_and_end(Ending::StopThenContinue);
    let first = find(&out, ENTER_ALT).expect("entered the alternate screen");
    let again = rfind(&out, ENTER_ALT).expect("entered again");
    assert!(
        again > first,
        "the alternate screen is entered again after SIGCONT"
    );
    let between = &out[first..again];
    assert!(
        find(between, LEAVE_ALT).is_some(),
        "left the alternate screen before stopping"
    );
    assert!(
        find(between, SHOW_CURSOR).is_some(),
        "showed the cursor before stopping"
    );
    assert_restored(&out[again..], ok, "SIGTSTP, SIGCONT, SIGTERM");
}

/// Issue 41, case 6: SIGUSR1 and SIGALRM ended the console by their default action, the
/// terminal left raw, on the alternate screen, the cursor hidden.
#[test]
fn sigusr1_and_sigalrm_restore_the_terminal() {
    if !have_script() {
        return;
    }
    for sig in ["USR1", "ALRM"] {
        let (out, ok) = run_and_end(Ending::Signal(sig));
        assert_restored(&out, ok, sig);
    }
}

/// Issue 41, case 6: after a stop burnin could not see (SIGSTOP) and a SIGCONT, only the cells
/// that changed were redrawn (18 of 40 lines): the screen is now cleared and drawn whole.
#[test]
fn a_continue_after_any_stop_redraws_the_whole_screen() {
    if !have_script() {
        return;
    }
    let (out, ok) = run_and_end(Ending::HardStopThenContinue);
    assert_restored(&out, ok, "SIGSTOP, SIGCONT, SIGTERM");
}
