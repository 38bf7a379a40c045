//! Operator drills over real SSH: asked, confirmed, timed, and failed when nobody can answer.

use super::*;

/// An operator drill under `burnin run`: the load (a stand-in all_reduce_perf printing the
/// real capture's header, then one 1 GiB row every 0.1 s at the busbw a file says, or nothing
/// while "stalled") runs; burnin asks, the test "pulls the cable" (stalls the load, then lets
/// it limp, then restores it) and confirms with Enter on stdin, as an engineer would.
#[test]
fn a_drill_asks_the_operator_and_times_the_recovery_after_each_confirmation() {
    use std::io::{BufRead, Write};
    let plan = r#"
[[phase]]
id = "D"
title = "Drill: pull a cable"
scope = "each-node"
parser = "nccl-tests"
timeout = "2m"
command = "all_reduce_perf"
[phase.drill]
watch = ["busbw_all_reduce"]
steady = "1s"
settle = "1s"
recover_pct = 90
[[phase.drill.steps]]
ask = "Pull the cable"
within = "20s"
[[phase.drill.steps]]
ask = "Put it back"
within = "20s"
"#;
    let Some(site) = Site::new(1, 8, plan) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    let level = site.cluster.dir.join("level");
    let warned = site.cluster.dir.join("warned");
    // The load reads the level every 0.1 s: a new level is renamed into place, so the load
    // never reads a file half-written (an empty level printed a row of 11 fields, which the
    // parser rightly reported, turning the verdict to WARN).
    let set_level = |text: &str| {
        let tmp = level.with_extension("new");
        std::fs::write(&tmp, text).expect("level");
        std::fs::rename(&tmp, &level).expect("level");
    };
    set_level("380.00");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsed -n 2,24p '{capture}'\nwhile :; do\n  l=$(cat '{level}')\n  case \"$l\" in\n    stall) [ -e '{warned}' ] || {{ echo 'node01:77:77 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with status=12 error, retrying'; touch '{warned}'; }} ;;\n    *) awk -v b=\"$l\" 'BEGIN {{ printf \"  1073741824   268435456  float  sum  -1  2800.0  %.2f  %.2f  0  2800.0  %.2f  %.2f  0\\n\", b / 1.875, b, b / 1.875, b }}' ;;\n  esac\n  sleep 0.1\ndone\n",
            capture = capture.display(),
            level = level.display(),
            warned = warned.display(),
        ),
    );
    let mut child = site
        .command(&["run", "--json", "--no-telemetry", "--only", "D"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("burnin run");
    let mut stdin = child.stdin.take().expect("stdin");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    let mut wait_line = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(what);
                    said.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no {what:?} on stderr:\n{}", said.join("\n")),
            }
        }
    };
    wait_line("ASKS     step 1/2: Pull the cable — press Enter when done");
    // The cable is out: the collective hangs and NCCL complains; then it limps; then it is back.
    set_level("stall");
    stdin.write_all(b"\n").expect("confirm");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(1500));
    set_level("150.00");
    std::thread::sleep(Duration::from_millis(1000));
    set_level("380.00");
    wait_line("ASKS     step 2/2: Put it back");
    stdin.write_all(b"\n").expect("confirm");
    stdin.flush().expect("flush");
    let out = child.wait_with_output().expect("wait");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("run --json");
    let d = phase(&doc, "D");
    assert_eq!(d["verdict"], "PASS", "{d}");
    assert_eq!(out.status.code(), Some(0));
    let rows = d["drill"].as_array().expect("drill rows");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (pull, back) = (&rows[0], &rows[1]);
    assert_eq!(
        (pull["step"].as_u64(), pull["dipped"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(pull["steady"].as_f64(), Some(380.0));
    // The stall counts as zero.
    assert_eq!(pull["low"].as_f64(), Some(0.0));
    // It was down for at least the 2.5 s the test held it down after confirming.
    assert!(
        pull["recovered_after_s"].as_f64().is_some_and(|s| s >= 2.0),
        "{pull}"
    );
    assert_eq!(pull["error_lines"].as_u64(), Some(1));
    assert!(
        pull["first_error"]
            .as_str()
            .is_some_and(|e| e.contains("NCCL WARN NET/IB"))
    );
    assert_eq!(
        (back["step"].as_u64(), back["dipped"].as_bool()),
        (Some(2), Some(false))
    );
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains("step 1: busbw_all_reduce node01 recovered in"),
        "{reason}"
    );
    assert!(
        reason.contains("step 2: busbw_all_reduce node01 not affected"),
        "{reason}"
    );
    assert!(reason.contains("step 1: 1 error/retry line(s)"), "{reason}");
    // The load was stopped as finished, not aborted, and nothing of it is left running.
    let dir = site.phase_dir("D", "node01").expect("phase dir");
    assert_eq!(
        std::fs::read_to_string(dir.join("stopped"))
            .map(|s| s.trim().to_string())
            .ok(),
        Some("finished".into())
    );
    // The report lists both steps.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(o.status.code(), Some(0));
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Drills"), "{md}");
    assert!(
        md.contains("| D | 2. Put it back | busbw_all_reduce | node01 | 380 |"),
        "{md}"
    );
}

/// A D2-like drill over real sshd on one node: a stand-in training job prints workload step
/// records; burnin's own step (`run`) "kills" it by a marker in its directory, and the job
/// does `on_kill` when it sees the marker (at `../killed`: the job runs in `{dir}/work`).
/// The run's exit code, summary and stderr.
fn kill_drill(on_kill: &str) -> Option<(Option<i32>, serde_json::Value, String)> {
    let plan = r#"
[[phase]]
id = "D2"
title = "Drill: kill training"
scope = "each-node"
parser = "workload"
timeout = "2m"
gates = [{ kind = "loss-finite" }]
command = "train"
[phase.drill]
watch = ["tokens_per_sec"]
steady = "2s"
settle = "1s"
[[phase.drill.steps]]
ask = "burnin kills the job"
run = "touch {dir}/killed && echo killed {node}"
within = "20s"
"#;
    let site = Site::new(1, 1, plan)?;
    site.cluster.install_tool(
        "train",
        &format!(
            "#!/bin/sh\ni=0\nwhile :; do\n  if [ -e ../killed ]; then {on_kill}; fi\n  printf '{{\"burnin\":\"step\",\"step\":%d,\"step_time_ms\":100.0,\"data_wait_ms\":0.5,\"tokens_per_sec\":8192.0,\"loss\":2.5,\"world\":1}}\\n' $i\n  i=$((i+1))\n  sleep 0.1\ndone\n"
        ),
    );
    Some(finish(site.spawn(&["run", "--json", "--no-telemetry"])))
}

/// A drill step burnin does itself (`run`): the job stalls when "killed", as a job restarting
/// from its checkpoint does; the drill times the first step after and the return.
#[test]
fn a_drill_step_burnin_runs_itself_times_the_first_step_after_it() {
    let Some((code, doc, stderr)) = kill_drill("rm -f ../killed; sleep 4") else {
        return;
    };
    let d = phase(&doc, "D2");
    assert_eq!(d["verdict"], "PASS", "{stderr}\n{d}");
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains("burnin kills the job: burnin does it")
            && stderr.contains("node01: ran `touch "),
        "{stderr}"
    );
    assert!(stderr.contains(": killed node01"), "{stderr}");
    let row = &d["drill"][0];
    assert_eq!(row["dipped"].as_bool(), Some(true), "{row}\n{stderr}");
    assert_eq!(row["low"].as_f64(), Some(0.0));
    assert!(
        row["first_after_s"].as_f64().is_some_and(|s| s >= 3.0),
        "{row}"
    );
    assert!(row["recovered_after_s"].as_f64().is_some(), "{row}");
    let reason = d["reason"].as_str().expect("reason");
    assert!(reason.contains("first sample again after"), "{reason}");
}

/// The same drill on a site whose job is not restarted (no loop, no supervisor): the step's
/// kill ends the load for good. The drill fails on that and says so, not "the load ended by
/// itself" (on the H200, tests/fixtures/h200-verdicts/d2-noloop, it was burnin's own kill).
#[test]
fn a_drill_whose_killed_job_never_comes_back_fails_naming_the_missing_restart() {
    let Some((code, doc, stderr)) = kill_drill("exit 137") else {
        return;
    };
    let d = phase(&doc, "D2");
    assert_eq!(d["verdict"], "FAIL", "{stderr}\n{d}");
    assert_eq!(code, Some(1));
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains(
            "the load ended during step 1/1 (burnin kills the job) and nothing started it again"
        ),
        "{reason}"
    );
    assert!(!reason.contains("ended by itself"), "{reason}");
}

/// A drill that asks the operator under `burnin run` with stdin closed (a cron job, `< /dev/null`)
/// fails at once, saying why, instead of waiting out its time limit.
#[test]
fn a_drill_nobody_can_answer_fails_at_once_and_says_why() {
    let plan = r#"
[[phase]]
id = "D"
title = "Drill: pull a cable"
scope = "each-node"
parser = "nccl-tests"
timeout = "10m"
command = "all_reduce_perf"
[phase.drill]
watch = ["busbw_all_reduce"]
# 3 s, not 1: on a 2-core machine busy compiling, a 1 s window once caught a single sample.
steady = "3s"
[[phase.drill.steps]]
ask = "Pull the cable"
"#;
    let Some(site) = Site::new(1, 8, plan) else {
        return;
    };
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsed -n 2,24p '{}'\nwhile :; do printf '  1073741824   268435456  float  sum  -1  2800.0  202.67  380.00  0  2800.0  202.67  380.00  0\\n'; sleep 0.1; done\n",
            capture.display()
        ),
    );
    let started = Instant::now();
    let child = site
        .command(&["run", "--json", "--no-telemetry"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("burnin run");
    let (code, doc, stderr) = finish(child);
    let d = phase(&doc, "D");
    assert_eq!(d["verdict"], "FAIL", "{stderr}\n{d}");
    assert_eq!(code, Some(1));
    let reason = d["reason"].as_str().expect("reason");
    assert!(
        reason.contains("step 1/1: Pull the cable: nobody can confirm it here"),
        "{reason}"
    );
    // Not the 10-minute limit: the load was stopped as soon as the ask could not be answered.
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(!reason.contains("limit"), "{reason}");
}
