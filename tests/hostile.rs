//! Hostile and broken input (issue 26): what a reviewer attacked the release binary with, each
//! case here as a test that fails without its fix. Names that carry shell syntax, absurd
//! values on the command line and in files, non-finite gate bounds, streams that name endless
//! GPUs, records that are not what burnin wrote, report.md, the log file. The terminal's own
//! cases are in `terminal_restore.rs` and `ssh_nodes.rs` (a real pty), the fuzzing in `fuzz/`.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!(
            "burnin-hostile-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary with `args` in `dir`, with a time limit; (exit code, stdout, stderr).
fn burnin(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("BURNIN_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("burnin starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("burnin {args:?} did not return within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// ── 1. shell injection through node names ────────────────────────────────────────────────

/// A `local` node named `$(touch …)` is refused where the inventory is read, whatever the
/// mode: `burnin run` stops with the located error and nothing ran.
#[test]
fn a_node_name_with_shell_syntax_is_refused_in_every_mode() {
    let dir = TempDir::new("names");
    let pwned = dir.path().join("PWNED");
    for mode in ["local", "sim", "agent", "smi"] {
        let text = format!(
            "[[node]]\nhost = \"$(touch {})\"\nmode = \"{mode}\"\n",
            pwned.display()
        );
        let err = burnin::config::inventory::Inventory::parse("burnin.toml", &text)
            .expect_err("a name with shell syntax is an error");
        assert!(err.to_string().contains("contains '$'"), "{mode}: {err}");
        assert_eq!(err.line, Some(2), "{mode}: located at the host line");
    }
    // Through the binary, with an SSH node beside it.
    std::fs::write(
        dir.path().join("burnin.toml"),
        format!(
            "[[node]]\nhost = \"$(touch {p})\"\nmode = \"local\"\n[[node]]\nhost = \"n2\"\nmode = \"sim\"\n",
            p = pwned.display()
        ),
    )
    .expect("write");
    let (code, _, err) = burnin(dir.path(), &["run", "--no-telemetry", "--only", "T1"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("contains '$'"), "{err}");
    assert!(!pwned.exists(), "the name ran as a command");
}

/// Past the inventory (a record's run id, a name made in code), the runner itself refuses a
/// placeholder value with shell syntax: the phase FAILs naming it, and a real `sh` never sees
/// the value.
#[tokio::test]
async fn the_runner_refuses_a_placeholder_value_with_shell_syntax() {
    use burnin::phases::runner::{RunContext, run_phase};
    let dir = TempDir::new("runner");
    let pwned = dir.path().join("PWNED");
    let inventory = burnin::config::inventory::Inventory::parse(
        "burnin.toml",
        "[[node]]\nhost = \"n1\"\nmode = \"local\"\ngpus = 1\n",
    )
    .expect("inventory");
    let plan = burnin::plan::Plan::parse(
        "plan.toml",
        &format!(
            "[settings]\nremote_dir = \"{}/runs\"\ngrace_s = 1\n[[phase]]\nid = \"T1\"\ntitle = \"echo\"\n\
             scope = \"each-node\"\nparser = \"none\"\ncommand = \"echo {{hosts}} {{node}}\"\n",
            dir.path().display()
        ),
    )
    .expect("plan");
    let ssh = burnin::transport::ssh::SshSettings {
        config_file: None,
        control_dir: None,
        connect_timeout: Duration::from_secs(5),
    };
    let mut nodes = burnin::commands::run::runner_nodes(&inventory, &ssh);
    let evil = format!("n1$(touch {})", pwned.display());
    nodes[0].spec.target = evil.clone();
    let ctx = RunContext {
        run_id: "r1".into(),
        attempt: 1,
        earlier: Default::default(),
        parts: Default::default(),
        confirm: None,
        plan: Arc::new(plan.clone()),
        nodes,
        baseline: None,
        telemetry: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let (_stop_tx, stop) = tokio::sync::watch::channel(None);
    let spec = Arc::clone(&plan.phases[0]);
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let out = run_phase(&ctx, spec, stop, tx).await;
    drain.await.expect("drain");
    assert_eq!(
        out.verdict,
        burnin::model::phase::Verdict::Fail,
        "{}",
        out.reason
    );
    assert!(out.reason.contains("{hosts}"), "{}", out.reason);
    assert!(!pwned.exists(), "the value reached a shell");
    // The same phase with the name as written runs.
    let mut ok = ctx.clone();
    ok.nodes[0].spec.target = "n1".into();
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let (_stop_tx, stop) = tokio::sync::watch::channel(None);
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let out = run_phase(&ok, Arc::clone(&plan.phases[0]), stop, tx).await;
    drain.await.expect("drain");
    assert_eq!(
        out.verdict,
        burnin::model::phase::Verdict::Pass,
        "{}",
        out.reason
    );
}

// ── 7, 8. absurd values: located errors with the allowed range, no panic, no hang ────────

/// Every absurd value the reviewer gave the command line: an error naming the range (clap's
/// exit 2), never a panic (101), an abort or a hang.
#[test]
fn absurd_command_line_values_are_errors_with_the_range() {
    let dir = TempDir::new("cli");
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "demo",
                "--headless",
                "80x24",
                "--duration",
                "18446744073709551615",
            ],
            "0..=",
        ),
        (
            &["demo", "--headless", "65535x65535", "--duration", "1"],
            "1000",
        ),
        (
            &["demo", "--speed", "1e-300", "--duration", "1"],
            "0.0625 to 1024",
        ),
        (
            &["demo", "--speed", "nan", "--duration", "1"],
            "0.0625 to 1024",
        ),
        (&["run", "--demo", "--speed", "1e-300"], "0.0625 to 1024"),
        (
            &["replay", "x", "--duration", "18446744073709551615"],
            "0..=",
        ),
        (&["agent", "--sim", "--gpus", "4294967295"], "1 to 64"),
        (&["agent", "--sim", "--gpus", "0"], "1 to 64"),
        (
            &[
                "probe",
                "s3",
                "--endpoint",
                "http://127.0.0.1:1",
                "--bucket",
                "b",
                "--prepare",
                "18446744073709551615",
            ],
            "1 to 100000",
        ),
        (
            &["status", "--demo", "--at", "18446744073709551615"],
            "0..=3600",
        ),
        (&["demo", "--fps", "0", "--duration", "1"], "1..=240"),
    ];
    for (args, range) in cases {
        let (code, _, err) = burnin(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(range),
            "{args:?} should name the range {range:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Absurd inventory values: a located error each (ranges do not multiply into gigabytes; the
/// duplicate check is a hash set, so the largest inventory allowed is read at once).
#[test]
fn absurd_inventory_values_are_located_errors() {
    let cases = [
        (
            "[[node]]\nhost = \"gpu[0-99999][0-99999]\"\n",
            "more than 4096 hosts",
        ),
        (
            "[[node]]\nhost = \"gpu[01-99999]\"\n",
            "more than 4096 hosts",
        ),
        (
            "[[node]]\nhost = \"gpu01\"\ngpus = 0\n",
            "gpus must be 1 to 64",
        ),
        (
            "[[node]]\nhost = \"gpu01\"\ngpus = -1\n",
            "gpus must be 1 to 64",
        ),
        (
            "[defaults]\ngpus = 65\n[[node]]\nhost = \"gpu01\"\n",
            "gpus must be 1 to 64",
        ),
        (
            "[[node]]\nhost = \"gpu01\"\nnic_rate_gbps = nan\n",
            "nic_rate_gbps",
        ),
        (
            "[[node]]\nhost = \"gpu01\"\nnic_rate_gbps = -inf\n",
            "nic_rate_gbps",
        ),
        (
            "[defaults]\nnic_rate_gbps = inf\n[[node]]\nhost = \"gpu01\"\n",
            "nic_rate_gbps",
        ),
        (
            "[defaults]\nmax_connecting = 0\n[[node]]\nhost = \"gpu01\"\n",
            "max_connecting",
        ),
        (
            "[[node]]\nhost = \"gpu01\"\n[triage]\nstall_util_pct = nan\n",
            "stall_util_pct",
        ),
    ];
    for (text, want) in cases {
        let err = burnin::config::inventory::Inventory::parse("burnin.toml", text)
            .expect_err(&format!("{text:?} must be refused"));
        assert!(err.to_string().contains(want), "{text:?}: {err}");
        assert!(err.line.is_some(), "{text:?}: located: {err}");
    }
    // The largest inventory allowed is read.
    let inv = burnin::config::inventory::Inventory::parse(
        "burnin.toml",
        "[[node]]\nhost = \"gpu[0001-4096]\"\n",
    )
    .expect("4096 nodes");
    assert_eq!(inv.nodes.len(), 4096);
}

// ── 9. NaN disables gates ────────────────────────────────────────────────────────────────

/// A gate bound that is not a finite number, or a percentage no gate can mean, is a located
/// error in the plan: a NaN would pass any figure.
#[test]
fn non_finite_gate_bounds_are_located_errors() {
    let phase = |gate: &str| {
        format!(
            "[[phase]]\nid = \"T2\"\ntitle = \"GEMM\"\nscope = \"each-gpu\"\nparser = \"workload\"\n\
             command = \"true\"\ngates = [{gate}]\n"
        )
    };
    for gate in [
        "{ kind = \"min\", figure = \"tflops_bf16\", value = nan }",
        "{ kind = \"max\", figure = \"tflops_bf16\", value = inf }",
        "{ kind = \"min\", figure = \"tflops_bf16\", value = -inf }",
        "{ kind = \"peers\", figure = \"tflops_bf16\", pct = nan }",
        "{ kind = \"baseline\", figure = \"tflops_bf16\", pct = -5 }",
        "{ kind = \"scaling\", pct = inf }",
    ] {
        let err = burnin::plan::Plan::parse("plan.toml", &phase(gate))
            .expect_err(&format!("{gate} must be refused"));
        assert!(
            err.line == Some(7),
            "{gate}: located at the gates line: {err}"
        );
    }
    burnin::plan::Plan::parse(
        "plan.toml",
        &phase("{ kind = \"min\", figure = \"tflops_bf16\", value = 500 }"),
    )
    .expect("a finite bound is fine");
}

// ── 2. memory without bound from one node's stream ───────────────────────────────────────

/// Frames whose GPU indices and port names are new every time: the store keeps at most what a
/// node can have and says what it did not keep.
#[test]
fn a_stream_of_endless_gpus_and_ports_is_capped_with_a_note() {
    use burnin::model::SourceEvent;
    use burnin::model::{GpuSample, NicSample, NodeFrame};
    let mut store = burnin::store::ClusterStore::new();
    for f in 0..200u32 {
        let frame = NodeFrame {
            node: "n1".into(),
            at_ms: 1_000 * u64::from(f + 1),
            gpus: (0..300)
                .map(|i| GpuSample {
                    index: f * 300 + i,
                    ..GpuSample::default()
                })
                .collect(),
            nics: (0..50)
                .map(|i| NicSample {
                    device: format!("mlx5_{f}_{i}"),
                    port: 1,
                    ..NicSample::default()
                })
                .collect(),
            netdevs: Vec::new(),
        };
        store.ingest(SourceEvent::Frame(frame));
    }
    let n = store.node("n1").expect("node");
    assert_eq!(n.gpus.len(), 64, "GPUs 0 to 63 kept");
    assert_eq!(n.nics.len(), burnin::store::MAX_PORTS_PER_NODE);
    let words = n.over_limit_words().expect("the cap says so");
    assert!(words.contains("at most 64 GPUs"), "{words}");
    assert!(n.over_limit_samples > 50_000, "{words}");
}

// ── 4, 5, 6, 13. records that are not what burnin wrote ──────────────────────────────────

/// A real record: `burnin run --demo` into a fresh directory; the run directory.
fn demo_record(dir: &TempDir) -> PathBuf {
    let runs = dir.path().join("runs");
    let (code, _, err) = burnin(
        dir.path(),
        &["run", "--demo", "--runs-dir", runs.to_str().expect("utf-8")],
    );
    assert!(matches!(code, Some(0..=2)), "run --demo: {err}");
    std::fs::read_dir(&runs)
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .next()
        .expect("a run directory")
}

/// The binary with `args`, and the peak resident memory of that process alone, kB.
fn burnin_peak_rss(dir: &Path, args: &[&str]) -> (i32, String, i64) {
    let rss_file = dir.join(format!("peak-rss-{}", std::process::id()));
    let mut child = common::under_gnu_time(BIN, &rss_file)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("burnin starts");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let status = child.wait().expect("wait");
    let code = status.code().unwrap_or(-1);
    let peak_kb = common::gnu_time_peak_kb(&rss_file);
    let _ = std::fs::remove_file(&rss_file);
    (code, reader.join().expect("stderr"), peak_kb)
}

/// `RUN/report.html → victim`: `report` refuses to write through the link and the victim keeps
/// its bytes; without the link it writes the report (a new file renamed into place).
#[test]
fn report_never_writes_through_a_link_in_the_record() {
    let dir = TempDir::new("report-link");
    let run = demo_record(&dir);
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").expect("victim");
    std::os::unix::fs::symlink(&victim, run.join("report.html")).expect("link");
    let (code, _, err) = burnin(dir.path(), &["report", run.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
    std::fs::remove_file(run.join("report.html")).expect("unlink");
    let (code, out, err) = burnin(dir.path(), &["report", run.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("report.html"), "{out}");
}

/// `events.jsonl` or `summary.json` linked to `/dev/zero`, or grown past any real record: the
/// reader refuses with the reason, at once, in little memory.
#[test]
fn record_files_that_never_end_are_refused_with_why() {
    let dir = TempDir::new("dev-zero");
    let run = demo_record(&dir);
    let run_arg = run.to_str().expect("utf-8").to_string();
    for name in ["events.jsonl", "summary.json"] {
        let keep = run.join(format!("{name}.keep"));
        std::fs::rename(run.join(name), &keep).expect("move aside");
        std::os::unix::fs::symlink("/dev/zero", run.join(name)).expect("link");
        for cmd in ["report", "replay"] {
            let mut args = vec![cmd, run_arg.as_str()];
            if cmd == "replay" {
                args.extend(["--headless", "80x24", "--duration", "1"]);
            }
            let (code, err, rss_kb) = burnin_peak_rss(dir.path(), &args);
            assert_ne!(code, 0, "{cmd} over {name} → /dev/zero: {err}");
            assert!(err.contains("symbolic link"), "{cmd} {name}: {err}");
            assert!(rss_kb < 200_000, "{cmd} {name}: peak RSS {rss_kb} kB");
        }
        // A plain file far larger than any record's (sparse: no disk is used).
        std::fs::remove_file(run.join(name)).expect("unlink");
        let big = std::fs::File::create(run.join(name)).expect("create");
        big.set_len(8 << 30).expect("sparse");
        let (code, err, rss_kb) = burnin_peak_rss(dir.path(), &["report", &run_arg]);
        assert_ne!(code, 0, "{name} of 8 GiB: {err}");
        assert!(err.contains("may have; refused"), "{name}: {err}");
        assert!(rss_kb < 200_000, "{name}: peak RSS {rss_kb} kB");
        std::fs::remove_file(run.join(name)).expect("unlink");
        std::fs::rename(&keep, run.join(name)).expect("move back");
    }
}

/// A small gzip segment that inflates to one 256 MiB line: the line is skipped (counted as a
/// line that did not decode), never held; the report is written in little memory.
#[test]
fn a_telemetry_line_inflating_to_hundreds_of_megabytes_is_skipped() {
    let dir = TempDir::new("gz-bomb");
    let run = demo_record(&dir);
    let seg = run.join("telemetry/001.jsonl.gz");
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 268435456 /dev/zero | tr '\\0' x | gzip -1 > '{}'",
            seg.display()
        ))
        .status()
        .expect("sh");
    assert!(made.success());
    assert!(
        std::fs::metadata(&seg).expect("seg").len() < 2 << 20,
        "a small file"
    );
    let (code, err, rss_kb) =
        burnin_peak_rss(dir.path(), &["report", run.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert!(rss_kb < 200_000, "peak RSS {rss_kb} kB");
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(md.contains("telemetry line(s) did not decode"), "{md}");
}

/// A segment that is not gzip at all is said to be that, not "torn by a crash"; a damaged
/// plan copy is named as the record's file, not as the shipped plan.
#[test]
fn a_foreign_segment_and_a_bad_plan_copy_are_named_for_what_they_are() {
    let dir = TempDir::new("foreign");
    let run = demo_record(&dir);
    std::fs::write(run.join("telemetry/001.jsonl.gz"), "this is not gzip\n").expect("seg");
    std::fs::write(run.join("plan.toml"), "[[phase]\n").expect("plan");
    let (code, _, err) = burnin(dir.path(), &["report", run.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(md.contains("001.jsonl.gz is not gzip data"), "{md}");
    assert!(!md.contains("001.jsonl.gz ends torn"), "{md}");
    let copy = run.join("plan.toml").display().to_string();
    assert!(
        md.contains(&format!("{copy}:1:")),
        "the copy is named: {md}"
    );
    assert!(!md.contains("<embedded>/default.toml:1"), "{md}");
}

/// Two consoles taking over one run: the second is refused and told who holds it; once the
/// first is gone the run can be taken over again.
#[test]
fn one_console_takes_a_run_over_at_a_time() {
    let dir = TempDir::new("lock");
    let run = demo_record(&dir);
    assert!(!run.join("lock").exists(), "a finished run keeps no lock");
    let (first, _) = burnin::record::session::RunSession::resume(&run).expect("first takes it");
    std::fs::write(
        dir.path().join("burnin.toml"),
        "[defaults]\nmode = \"sim\"\n[[node]]\nhost = \"n1\"\n",
    )
    .expect("inventory");
    let events_before = std::fs::read(run.join("events.jsonl")).expect("events");
    let (code, _, err) = burnin(
        dir.path(),
        &[
            "run",
            "--no-telemetry",
            "--resume",
            run.to_str().expect("utf-8"),
        ],
    );
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("another burnin is writing this run"), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "says who: {err}"
    );
    assert_eq!(
        std::fs::read(run.join("events.jsonl")).expect("events"),
        events_before,
        "the refused console wrote nothing"
    );
    drop(first);
    assert!(
        !run.join("lock").exists(),
        "the lock goes with the writer: a run left with one would look taken"
    );
    burnin::record::session::RunSession::resume(&run).expect("free again");
}

/// Issue 41, case 7: a record copied elsewhere and resumed there says where it is written
/// now, not where it was made (the copied summary's `run_dir`).
#[test]
fn a_resumed_copy_says_the_directory_it_writes() {
    let dir = TempDir::new("moved");
    common::local_node_with_phase(dir.path(), "echo ok");
    let (code, _, err) = burnin(dir.path(), &["run", "--no-telemetry", "--runs-dir", "runs"]);
    assert_eq!(code, Some(0), "{err}");
    let run = std::fs::read_dir(dir.path().join("runs"))
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .next()
        .expect("a run directory");
    let moved = dir.path().join("moved");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&run)
        .arg(&moved)
        .status()
        .expect("cp");
    assert!(copied.success());
    let (code, out, err) = burnin(
        dir.path(),
        &[
            "run",
            "--no-telemetry",
            "--json",
            "--resume",
            moved.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let printed: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(printed["run_dir"], moved.display().to_string(), "{out}");
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(moved.join("summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(kept["run_dir"], moved.display().to_string());
    assert!(!err.contains(&run.display().to_string()), "{err}");
}

/// Issue 41, case 10: a node that exits 3 with nothing for the gates to read FAILs for that,
/// and the reason does not also say "exit 0 everywhere".
#[test]
fn a_failed_exit_is_not_also_called_exit_0_everywhere() {
    let dir = TempDir::new("exit3");
    common::local_node_with_phase(dir.path(), "exit 3");
    let (code, out, err) = burnin(
        dir.path(),
        &["run", "--no-telemetry", "--json", "--runs-dir", "runs"],
    );
    assert_eq!(code, Some(1), "{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).expect("json");
    let reason = summary["phases"][0]["reason"].as_str().expect("reason");
    assert_eq!(summary["phases"][0]["verdict"], "FAIL", "{out}");
    assert!(reason.contains("n1") && reason.contains('3'), "{reason}");
    assert!(!reason.contains("exit 0 everywhere"), "{reason}");
}

/// Names, titles and reasons holding HTML, a link, an image and escape sequences: report.md
/// carries them as text, never as markup (most Markdown viewers render raw HTML).
#[test]
fn report_markdown_carries_hostile_text_as_text() {
    let dir = TempDir::new("md");
    let run = demo_record(&dir);
    let path = run.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("summary")).expect("json");
    summary["phases"][0]["title"] = "<script>alert(1)</script>".into();
    summary["phases"][0]["reason"] =
        "see ![x](http://tracker.example/p.png) and [here](javascript:alert(1)) \u{1b}]0;T\u{7} \
         www.evil.example, ops@evil.example (https://evil.example/x) | `tick"
            .into();
    summary["nodes"][0]["name"] = "<img src=x onerror=alert(1)>".into();
    std::fs::write(&path, summary.to_string()).expect("write");
    let (code, _, err) = burnin(dir.path(), &["report", run.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(!md.contains("<script"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;script>alert(1)&lt;/script>"), "{md}");
    // An image with a scheme in it is a code span (inert); without, its brackets escaped.
    assert!(
        md.contains("`![x](http://tracker.example/p.png)`"),
        "no image: {md}"
    );
    assert!(!md.contains("[here]("), "no link: {md}");
    assert!(
        !md.contains('\u{1b}') && !md.contains('\u{7}'),
        "no escapes"
    );
    // Issue 41, case 8: what GitHub's Markdown links without brackets (www., an address, a
    // scheme) goes in code spans. Rendered by cmark-gfm, GitHub's own renderer, with its
    // autolink extension: no link to anything the node wrote.
    assert!(md.contains("`www.evil.example,`"), "{md}");
    assert!(md.contains("`ops@evil.example`"), "{md}");
    match Command::new("cmark-gfm")
        .args(["-e", "autolink", "-e", "table"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), md.as_bytes())
                .expect("md in");
            let out = child.wait_with_output().expect("cmark-gfm");
            let html = String::from_utf8_lossy(&out.stdout);
            assert!(html.contains("<code>www.evil.example,</code>"), "{html}");
            // The report's own plots are images; nothing the node wrote is a link or one.
            for attr in ["href=\"", "src=\""] {
                for target in html.split(attr).skip(1) {
                    let target = target.split('"').next().unwrap_or("");
                    assert!(
                        !target.contains("example") && !target.starts_with("javascript"),
                        "a link to the node's text: {target}"
                    );
                }
            }
        }
        Err(_) if std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1") => {
            panic!(
                "cmark-gfm not found (Debian: apt-get install cmark-gfm) and BURNIN_REQUIRE_REAL=1"
            )
        }
        Err(_) => eprintln!("cmark-gfm not found: report.md not rendered as GitHub renders it"),
    }
}

/// A record with a link inside (`logs → elsewhere`) is not taken over: node output would be
/// written where the link points.
#[test]
fn a_record_holding_a_link_is_not_taken_over() {
    let dir = TempDir::new("link-inside");
    let run = demo_record(&dir);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    let _ = std::fs::remove_dir_all(run.join("logs"));
    std::os::unix::fs::symlink(&elsewhere, run.join("logs")).expect("link");
    let err = burnin::record::session::RunSession::resume(&run)
        .err()
        .expect("refused");
    assert!(
        matches!(err, burnin::record::RecordError::Refused { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

/// A damaged figure of 1e308 prints as a number a person reads, not 309 digits.
#[test]
fn a_huge_figure_prints_short() {
    let s = burnin::plan::gates::fmt_value(1e308);
    assert_eq!(s, "1.000e308");
    assert_eq!(burnin::plan::gates::fmt_value(31_092_424.0), "31092424");
}

/// A frame whose readings overflow to infinity (JSON's 1e39 as an f32): no reading, not an
/// infinite power for triage to judge.
#[test]
fn readings_that_are_not_finite_are_no_readings() {
    use burnin::wire::{Decoded, Decoder, WireMessage};
    let line = r#"{"frame":{"node":"n1","at_ms":1000,"gpus":[{"index":0,"power_avg_watts":1e39,"utilization_pct":50,"nvlink_tx_bytes_per_sec":1e39}],"nics":[{"device":"mlx5_0","port":1,"rate_gbps":1e39}]}}"#;
    let Ok(Decoded::Message(WireMessage::Frame(frame))) = Decoder::new().decode(line) else {
        panic!("the frame decodes (its numbers are valid JSON)");
    };
    let mut store = burnin::store::ClusterStore::new();
    store.ingest(burnin::model::SourceEvent::Frame(frame));
    let n = store.node("n1").expect("node");
    let s = n.gpus[0].latest.as_ref().expect("sample");
    assert_eq!(s.power_avg_watts, None);
    assert_eq!(s.utilization_pct, Some(50.0));
    assert_eq!(n.nics[0].latest.rate_gbps, None);
}

// ── 11. a log that cannot be written ─────────────────────────────────────────────────────

/// `--log-file` (or `BURNIN_LOG`) naming a directory or a full disk: said once on stderr, and
/// the command does what it does without a log (same exit code, same output).
#[test]
fn a_log_file_that_cannot_be_written_is_said_once() {
    let dir = TempDir::new("log");
    let good = dir.path().join("burnin.log");
    let (want_code, want_out, _) = burnin(
        dir.path(),
        &[
            "--log-file",
            good.to_str().expect("utf-8"),
            "status",
            "--demo",
            "--at",
            "5",
        ],
    );
    for bad in ["/dev/full", dir.path().to_str().expect("utf-8")] {
        let (code, out, err) = burnin(
            dir.path(),
            &["--log-file", bad, "status", "--demo", "--at", "5"],
        );
        assert_eq!(code, want_code, "{bad}: {err}");
        assert_eq!(out, want_out, "{bad}: the same output");
        assert_eq!(
            err.matches("going on without a log").count(),
            1,
            "{bad}: said once: {err}"
        );
        assert!(err.contains(&format!("log file {bad}")), "{err}");
    }
}

/// Every print in the crate goes through the stripping macros (`eprintln_safe!`, …): a raw
/// `println!` is how node text reached the terminal before. `lib.rs` defines the macros;
/// `main.rs` strips its two messages itself. Test modules are left out.
#[test]
fn nothing_in_src_prints_without_stripping() {
    let raw = regex::Regex::new(r"(^|[^_a-z!:])(eprint|eprintln|print|println)!\(").expect("re");
    let mut found = Vec::new();
    for (name, code) in common::library_code() {
        let name = name.display().to_string();
        if name == "lib.rs" || name == "main.rs" {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            if raw.is_match(line) && !line.trim_start().starts_with("//") {
                found.push(format!("src/{name}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "raw prints:\n{}", found.join("\n"));
}

/// Words from a node or a record on disk (a gate's words, a phase's reason, a check's
/// evidence, a log line, a gdsio run's names) never put a control character on the terminal:
/// every pane that shows them, drawn, holds none.
#[test]
fn hostile_words_never_reach_the_terminal_as_control_characters() {
    use burnin::app::layout::PaneKind;
    use burnin::app::state::Event;
    use burnin::model::SourceEvent;
    use burnin::model::phase::{CheckStatus, GateStatus, PhaseEvent, PhaseMetric, Verdict};
    use common::{pane_alone, screen};
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\r\u{8}evil";
    let mut state =
        burnin::app::state::State::new(vec![], vec![], "watch: burnin.toml (1 node)", (160, 48));
    let t0 = 1_780_000_000_000u64;
    let send = |state: &mut burnin::app::state::State, e: PhaseEvent| {
        state.update(Event::Source(SourceEvent::Phase(e)));
    };
    for phase in ["T2", "S4"] {
        send(
            &mut state,
            PhaseEvent::Started {
                phase: phase.into(),
                at_ms: t0,
            },
        );
        send(
            &mut state,
            PhaseEvent::Line {
                phase: phase.into(),
                at_ms: t0 + 500,
                node: Some(format!("n1{hostile}")),
                text: format!("line {hostile}"),
            },
        );
        for metric in [
            PhaseMetric::Check {
                node: "n1".into(),
                name: format!("check{hostile}"),
                status: CheckStatus::Failed,
                detail: hostile.into(),
            },
            PhaseMetric::Gate {
                gate: format!("gate {hostile}"),
                status: GateStatus::Missed,
                words: hostile.into(),
            },
            PhaseMetric::GdsRun {
                node: format!("n1{hostile}"),
                gpu: Some(0),
                run: burnin::model::phase::GdsRun {
                    xfer: hostile.into(),
                    io: hostile.into(),
                    io_size_kib: Some(1024),
                    threads: Some(8),
                    gib_per_s: Some(6.8),
                    avg_latency_us: Some(1100.0),
                },
            },
        ] {
            send(
                &mut state,
                PhaseEvent::Metric {
                    phase: phase.into(),
                    at_ms: t0 + 600,
                    metric,
                },
            );
        }
    }
    send(
        &mut state,
        PhaseEvent::Finished {
            phase: "T2".into(),
            at_ms: t0 + 1000,
            verdict: Verdict::Fail,
            reason: format!("reason {hostile}"),
        },
    );
    let mut drawn = vec![screen(&state)];
    for pane in [PaneKind::Phases, PaneKind::Storage, PaneKind::Log] {
        drawn.push(pane_alone(&state, pane, (160, 30)));
    }
    // The phase's details, where its gates and checks are listed.
    common::press(&mut state, crossterm::event::KeyCode::Enter);
    drawn.push(screen(&state));
    for term in &drawn {
        let bad: Vec<String> = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol().to_string())
            .filter(|s| s.chars().any(char::is_control))
            .collect();
        assert!(bad.is_empty(), "{bad:?}\n{}", term.backend());
    }
    let shown = drawn
        .iter()
        .map(|t| t.backend().to_string())
        .collect::<String>();
    assert!(
        shown.contains("evil"),
        "the words are shown, stripped: {shown}"
    );
}

/// Issue 41, case 8: bidi controls (U+202E, U+2066) in a NIC's or an interface's name, as a
/// node reports them, reached the console's triage pane. No cell of any drawn screen holds one.
#[test]
fn bidi_controls_in_port_names_never_reach_the_screen() {
    use burnin::app::state::Event;
    use burnin::model::{NetSample, NicSample, NodeFrame, SourceEvent};
    let mut state = common::empty_state("bidi", (160, 48));
    for s in 0..30u64 {
        let frame = NodeFrame {
            node: "node01".into(),
            at_ms: burnin::sim::SIM_EPOCH_MS + s * 1000,
            gpus: Vec::new(),
            nics: vec![NicSample {
                device: "mlx5_\u{202E}0\u{2066}".into(),
                port: 1,
                state: Some(if s > 5 { "DOWN" } else { "ACTIVE" }.into()),
                rate_gbps: Some(400.0),
                ..NicSample::default()
            }],
            netdevs: vec![NetSample {
                iface: "eth\u{202E}0".into(),
                operstate: Some("down".into()),
                ..NetSample::default()
            }],
        };
        state.update(Event::Source(SourceEvent::Frame(frame)));
        state.update(Event::Source(SourceEvent::Clock {
            at_ms: burnin::sim::SIM_EPOCH_MS + s * 1000,
        }));
    }
    for layout in 0..state.layouts.len() {
        state.ui.layout = layout;
        let drawn = common::screen(&state).backend().to_string();
        assert!(
            !drawn
                .chars()
                .any(|c| c != '\n' && burnin::model::is_terminal_unsafe(c)),
            "layout {layout}: {drawn}"
        );
    }
}
