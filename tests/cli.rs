//! The command line as a site engineer meets it, through the built binary: an error is one
//! clean line (no source location, no backtrace notice, no colour codes into a file), shell
//! completions work in a real bash, and the manual page renders in a real groff.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("burnin-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Run burnin with `args` in `dir` (stderr a pipe, as in a script or a CI log).
fn burnin(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run burnin")
}

fn tool(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found && std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1") {
        panic!("{name} is required (BURNIN_REQUIRE_REAL=1): scripts/test.sh installs it");
    }
    found
}

#[test]
fn an_error_is_one_clean_line_a_site_engineer_can_act_on() {
    let dir = scratch("errors");
    std::fs::write(dir.join("bad.toml"), "[[node]]\nhost = \"gpu01;reboot\"\n").unwrap();
    std::fs::write(dir.join("empty.toml"), "").unwrap();
    for args in [
        &["run", "-c", "bad.toml"][..],
        &["run", "-c", "missing.toml"],
        &["watch", "-c", "empty.toml"],
        &["status", "-c", "bad.toml"],
        &["deploy", "-c", "bad.toml"],
        &["replay", "no-such-run"],
        &["report", "no-such-run"],
        &["parse", "no-such-file.log"],
        &["baseline", "save", "no-such-run", "--to", "b.json"],
    ] {
        let out = burnin(&dir, args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(1..=3)),
            "{args:?}: exit {code:?} (not a panic's 101): {stderr}"
        );
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line:\n{stderr}");
        assert!(lines[0].starts_with("burnin"), "{args:?}: {stderr}");
        for noise in ["Location:", "Backtrace", "RUST_BACKTRACE", "src/", "\x1b"] {
            assert!(!stderr.contains(noise), "{args:?} says {noise:?}: {stderr}");
        }
    }
    // A shell that sets RUST_BACKTRACE still gets one line, with no numbered causes.
    let out = burnin(&dir, &["run", "-c", "bad.toml"], &[("RUST_BACKTRACE", "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains("0:") && !stderr.contains("Location:"),
        "{stderr}"
    );
    // Who debugs burnin asks for the whole report, after the same line.
    let out = burnin(&dir, &["run", "-c", "bad.toml"], &[("BURNIN_DEBUG", "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("burnin: ")),
        "{stderr}"
    );
    assert!(stderr.contains("Location:"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "no colour into a pipe: {stderr}");
}

#[test]
fn bash_completes_subcommands_and_options() {
    if !tool("bash") {
        return;
    }
    let dir = scratch("bash");
    let out = burnin(&dir, &["completions", "bash"], &[]);
    assert!(out.status.success());
    let script = dir.join("burnin.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // The completion function, called as bash calls it on <Tab>.
    let complete = |words: &str| -> Vec<String> {
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _burnin burnin \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &probe])
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let subcommands = complete("burnin ''");
    for want in [
        "demo",
        "watch",
        "run",
        "report",
        "replay",
        "completions",
        "man",
    ] {
        assert!(
            subcommands.iter().any(|w| w == want),
            "{want}: {subcommands:?}"
        );
    }
    let run = complete("burnin run --o");
    assert!(run.iter().any(|w| w == "--only"), "{run:?}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = burnin(&dir, &["completions", shell], &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("burnin") && text.contains("only"),
            "{shell}"
        );
    }
}

#[test]
fn the_manual_renders_in_groff_with_every_subcommand() {
    if !tool("groff") {
        return;
    }
    let dir = scratch("man");
    let render = |page: &[u8]| -> (bool, String, String) {
        let mut child = Command::new("groff")
            // -k: preconv, as man-db reads a page; -ww: every warning.
            .args(["-k", "-man", "-Tutf8", "-ww"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("groff");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(page).unwrap();
        let out = child.wait_with_output().expect("groff output");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let out = burnin(&dir, &["man"], &[]);
    assert!(out.status.success());
    let (ok, text, warnings) = render(&out.stdout);
    assert!(ok && warnings.is_empty(), "groff: {warnings}");
    // groff's terminal output overstrikes bold text: read it plain.
    let plain: String = {
        let mut s = String::new();
        for c in text.chars() {
            if c == '\u{8}' {
                s.pop();
            } else {
                s.push(c);
            }
        }
        s
    };
    for sub in [
        "demo", "watch", "run", "report", "replay", "parse", "deploy", "init",
    ] {
        assert!(plain.contains(sub), "{sub} in the manual");
    }
    assert!(plain.contains("Examples:"), "{plain}");
    let pages = dir.join("man1");
    let out = burnin(&dir, &["man", "--out-dir", pages.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let files: Vec<_> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(files.len() > 15, "{files:?}");
    for f in files {
        let (ok, _, warnings) = render(&std::fs::read(&f).unwrap());
        assert!(ok && warnings.is_empty(), "{}: {warnings}", f.display());
    }
    assert!(pages.join("burnin-run.1").exists());
}

#[test]
fn the_console_without_a_terminal_says_what_to_use_instead_in_one_line() {
    let dir = std::env::temp_dir().join(format!("burnin-cli-noterm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("burnin.toml");
    std::fs::write(
        &config,
        "[defaults]\nmode = \"sim\"\n[[node]]\nhost = \"n1\"\n",
    )
    .expect("toml");
    let config = config.to_string_lossy().into_owned();
    for args in [&["demo"][..], &["watch", "-c", &config][..]] {
        // As `ssh host burnin watch` without -t: no terminal on any stream.
        let out = Command::new(BIN)
            .args(args)
            .env("BURNIN_LOG", dir.join("burnin.log"))
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .output()
            .expect("run burnin");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("ssh -t") && err.contains("burnin run"),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_fault_help_lists_every_fault() {
    let out = Command::new(BIN)
        .args(["demo", "--help"])
        .output()
        .expect("burnin demo --help");
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for fault in burnin::sim::FaultKind::ALL {
        assert!(
            help.contains(&format!(" {},", fault.name()))
                || help.contains(&format!(" {}.", fault.name())),
            "{} missing from: {help}",
            fault.name()
        );
    }
}

#[test]
fn the_man_page_says_keys_files_and_exit_status() {
    let out = Command::new(BIN).arg("man").output().expect("burnin man");
    // roff escapes every hyphen.
    let page = String::from_utf8_lossy(&out.stdout).replace("\\-", "-");
    for section in [".SH KEYS", ".SH FILES", ".SH EXIT STATUS"] {
        assert!(page.contains(section), "{section}");
    }
    // Every binding of the console is there, from the one key table.
    for b in burnin::app::keymap::BINDINGS {
        assert!(page.contains(b.help), "{}", b.help);
    }
    assert!(page.contains("130: interrupted"));
}

#[test]
fn triage_on_the_demo_names_the_stall_and_exits_as_on_real_nodes() {
    let out = Command::new(BIN)
        .args(["triage", "--demo", "--at", "125"])
        .output()
        .expect("burnin triage --demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("CRIT node07 GPU3") && l.contains("stalled")),
        "{text}"
    );
    let calm = Command::new(BIN)
        .args(["triage", "--demo", "--no-faults", "--at", "60"])
        .output()
        .expect("burnin triage --demo --no-faults");
    assert_ne!(
        calm.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&calm.stdout)
    );
}

/// Issue 41, case 5: a reader that stops reading (`| head -c 10`) made `println!` panic
/// ("failed printing to stdout: Broken pipe", exit 101) after the record was written. The
/// rest of the output is dropped and the command ends with its verdict's code.
#[test]
fn a_closed_pipe_ends_quietly_with_the_verdicts_code() {
    let dir = scratch("pipe");
    let runs = dir.join("runs");
    let mut child = Command::new(BIN)
        .args(["run", "--demo", "--json", "--runs-dir"])
        .arg(&runs)
        .current_dir(&dir)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("burnin run --demo");
    // The reader is gone before burnin writes (as `| head -c 10` is once it has its ten
    // bytes): whatever it prints has nowhere to go.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the demo run FAILs: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

/// Issue 41, case 7: a `--log-file` (or `BURNIN_LOG`) that is a FIFO held burnin at its start
/// forever (opening a FIFO for writing waits for a reader). It is refused in one line and the
/// command goes on without a log.
#[test]
fn a_log_that_is_a_fifo_does_not_hold_burnin_up() {
    let dir = scratch("fifo");
    let fifo = dir.join("log.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    for via_env in [false, true] {
        let mut cmd = Command::new(BIN);
        if via_env {
            cmd.env("BURNIN_LOG", &fifo);
        } else {
            cmd.arg("--log-file").arg(&fifo);
        }
        let mut child = cmd
            .args(["status", "--demo", "--at", "30"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("burnin status --demo");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                panic!("burnin hung on a FIFO log (env: {via_env})");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
            .expect("stderr");
        assert!(status.success(), "{err}");
        if !via_env {
            assert!(err.contains("a FIFO nobody reads"), "{err}");
        }
    }
}

/// The other side of the closed pipe: output that cannot be written for any other reason (a
/// full disk under `> out.json`) is not dropped without a word. It is said on stderr, once.
#[test]
fn output_lost_to_a_full_disk_is_said() {
    let dir = scratch("full");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(BIN)
        .args(["run", "--demo", "--json", "--runs-dir"])
        .arg(dir.join("runs"))
        .current_dir(&dir)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("burnin run --demo");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.matches("burnin: standard output: No space left on device")
            .count()
            == 1,
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
