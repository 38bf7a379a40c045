//! A hostile node over a real sshd (tests/common/sshd.rs): what it says reaches the terminal
//! without escape sequences, a flood of new GPUs and ports is capped, an error of a megabyte
//! is a line. Moved out of `ssh_nodes.rs` (the nodes' ordinary streams) as it grew.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::sshd::Cluster;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// An inventory (`name` in the cluster's directory) of node01 in agent mode at 200 ms, with
/// `gpus` GPUs and `agent` as its agent.
fn one_agent_node(cluster: &Cluster, name: &str, agent: &std::path::Path, gpus: u32) -> PathBuf {
    let inv = cluster.dir.join(name);
    std::fs::write(
        &inv,
        format!(
            "[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = {gpus}\n\
             agent_path = \"{}\"\n[[node]]\nhost = \"node01\"\n",
            agent.display()
        ),
    )
    .expect("inventory");
    inv
}

/// Run the binary on a real pseudo-terminal (util-linux `script`) and return every byte it
/// wrote there, and its exit code as `script` passes it on.
fn on_a_pty(args: &[String], env: &[(&str, &std::path::Path)]) -> (Vec<u8>, Option<i32>) {
    let quoted: Vec<String> = std::iter::once(BIN.to_string())
        .chain(args.iter().cloned())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qefc", &quoted.join(" "), "/dev/null"])
        .env("TERM", "xterm-256color")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("script runs (util-linux)");
    (out.stdout, out.status.code())
}

/// Escape sequences a node sends (in its agent's error, in a phase's output, in a reason)
/// never reach the terminal: `status`, `triage` and `run` print them stripped, the words kept.
/// Checked on the bytes a real pty received.
#[test]
fn what_a_node_says_reaches_the_terminal_without_escape_sequences() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    // OSC 0 retitles the window, OSC 52 writes the clipboard, CSI 2J clears the screen.
    let evil = r"\033]0;PWNED-TITLE\007 \033]52;c;aGVsbG8=\007 \033[2J\233[31m";
    // The same in a JSON string, as an agent would encode it.
    let json_evil = r"\u001b]0;PWNED-TITLE\u0007 \u001b]52;c;aGVsbG8=\u0007 \u001b[2J\u009b[31m";
    let agent = cluster.install_tool(
        "evil-agent",
        &format!(
            "#!/bin/sh\necho '{{\"error\":\"boom {json_evil} end\"}}'\n\
             echo '{{\"hello\":{{\"node\":\"x\",\"host\":\"x\",\"agent_version\":\"t {json_evil}\",\"gpus\":[]}}}}'\n\
             exec sleep 600\n"
        ),
    );
    let plan = cluster.dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[settings]\nremote_dir = \"{}/runs\"\ngrace_s = 1\n[[phase]]\nid = \"T1\"\ntitle = \"echo\"\n\
             scope = \"each-node\"\nparser = \"none\"\ncommand = '''printf 'zebra {evil} line\\n'; exit 3'''\n",
            cluster.dir.display()
        ),
    )
    .expect("plan");
    let inv = cluster.dir.join("burnin.toml");
    std::fs::write(
        &inv,
        format!(
            "plan = \"{}\"\n[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 1\n\
             agent_path = \"{}\"\n[[node]]\nhost = \"node01\"\n",
            plan.display(),
            agent.display()
        ),
    )
    .expect("inventory");
    let runtime = PathBuf::from(format!("/tmp/bre{}", std::process::id()));
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    let log = cluster.dir.join("burnin.log");
    let env = [
        ("XDG_RUNTIME_DIR", runtime.as_path()),
        ("BURNIN_LOG", log.as_path()),
    ];
    let common = |cmd: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        a.extend([
            "-c".into(),
            inv.display().to_string(),
            "--ssh-config".into(),
            cluster.ssh_config.display().to_string(),
        ]);
        a
    };
    let runs = cluster.dir.join("runs-local");
    for (args, words) in [
        (common(&["status", "--wait", "4s"]), "boom"),
        (common(&["status", "--json", "--wait", "4s"]), "boom"),
        (common(&["triage", "--for", "4s"]), "boom"),
        (
            common(&[
                "run",
                "--no-telemetry",
                "--verbose",
                "--runs-dir",
                runs.to_str().expect("utf-8"),
            ]),
            "zebra",
        ),
    ] {
        let (bytes, code) = on_a_pty(&args, &env);
        let text = String::from_utf8_lossy(&bytes);
        assert!(code.is_some(), "{args:?} ended");
        assert!(text.contains(words), "{args:?}: the words stay: {text}");
        for seq in [
            &b"\x1b]0;"[..],
            b"\x1b]52",
            b"\x1b[2J",
            b"\x07",
            "\u{9b}".as_bytes(),
        ] {
            assert!(
                !bytes.windows(seq.len()).any(|w| w == seq),
                "{args:?} wrote {seq:?} to the terminal: {text}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&runtime);
}

/// A stand-in agent whose every frame names 20 000 new GPUs and 500 new ports, over the real
/// sshd: `triage` holds at most a node's worth, says so in a finding, ends at its `--for`, and
/// stays small (its own peak RSS, from GNU time).
#[test]
fn a_flood_of_new_gpus_and_ports_is_capped_over_real_ssh() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    let agent = cluster.install_tool(
        "flood-agent",
        "#!/usr/bin/env python3\nimport json, sys, time\n\
         print(json.dumps({'hello': {'node': 'x', 'host': 'x', 'agent_version': 'flood', 'gpus': []}}), flush=True)\n\
         base = 0\n\
         while True:\n\
         \x20   rows = [[base + i, 100.0, 50.0] for i in range(20000)]\n\
         \x20   nics = [{'device': 'mlx5_%d_%d' % (base, i), 'port': 1} for i in range(500)]\n\
         \x20   f = {'frame': {'node': 'x', 'at_ms': int(time.time() * 1000), 'gpu_fields': ['index', 'power_avg_watts', 'utilization_pct'], 'gpu_rows': rows, 'nics': nics}}\n\
         \x20   sys.stdout.write(json.dumps(f) + '\\n'); sys.stdout.flush()\n\
         \x20   base += 20000\n\
         \x20   time.sleep(0.05)\n",
    );
    let inv = one_agent_node(&cluster, "burnin.toml", &agent, 8);
    let runtime = PathBuf::from(format!("/tmp/brf{}", std::process::id()));
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    // Under GNU time, which reports this process's own peak memory (wait4 on a child of the
    // test process would count the test process's high-water mark too); in its own process
    // group, so the hang guard stops time and burnin together.
    let rss_file = cluster.dir.join("triage-peak-rss");
    let mut child = common::under_gnu_time(BIN, &rss_file)
        .args(["triage", "--json", "--for", "8s", "-c"])
        .arg(&inv)
        .arg("--ssh-config")
        .arg(&cluster.ssh_config)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("BURNIN_LOG", cluster.dir.join("burnin.log"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("burnin triage");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    // A hang guard, not a timing claim: before the fix a flooded triage never ended. Killed
    // after 60 s (7.5× its --for), it would end by SIGKILL, which the exit status tells.
    let pgid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reaped = std::sync::Arc::clone(&done);
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if reaped.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Still not reaped, so the group is still the child's.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
    });
    let status = child.wait().expect("wait");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let peak_kb = common::gnu_time_peak_kb(&rss_file);
    let _ = std::fs::remove_dir_all(&runtime);
    let text = reader.join().expect("stdout");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("triage --json");
    let node = &doc["nodes"][0];
    assert_eq!(
        node["gpus"].as_array().map(Vec::len),
        Some(64),
        "{}",
        node["over_limit"]
    );
    let why = node["over_limit"].as_str().expect("over_limit said");
    assert!(why.contains("at most 64 GPUs"), "{why}");
    assert!(
        doc["findings"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["rule"] == "stream-over-limit")),
        "{}",
        doc["findings"]
    );
    assert!(peak_kb < 300_000, "peak RSS {peak_kb} kB");
    let time_said = std::fs::read_to_string(&rss_file).unwrap_or_default();
    assert!(
        status.code().is_some() && !time_said.contains("terminated by signal"),
        "triage ended by itself, at its --for: {status:?} {time_said}"
    );
}

/// Issue 41, case 8: a 1 MB `{"error": …}` line from an agent became the node's unreachable
/// reason whole, printed twice (2 MB of `status`). The reason is a line: its start, its end.
#[test]
fn an_agent_error_of_a_megabyte_is_a_line_in_status() {
    let Some(cluster) = Cluster::start(1) else {
        return;
    };
    let agent = cluster.install_tool(
        "loud-agent",
        "#!/bin/sh\nprintf '{\"error\":\"boom '; head -c 1000000 /dev/zero | tr '\\0' x; printf ' end\"}\\n'\n",
    );
    let inv = one_agent_node(&cluster, "burnin-loud.toml", &agent, 1);
    for json in [false, true] {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["status", "--wait", "4s", "-c"])
            .arg(&inv)
            .arg("--ssh-config")
            .arg(&cluster.ssh_config)
            .env("BURNIN_LOG", cluster.dir.join("burnin.log"));
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("burnin status");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("boom") && text.contains("end"), "{text}");
        assert!(
            out.stdout.len() < 8_000,
            "json: {json}: {} bytes of status",
            out.stdout.len()
        );
    }
}

/// Issue 41, case 3: `burnin run` while the node's agent names 40 000 new GPUs in one frame
/// and sends 25 000 Xid events on one GPU in the next, each line under the 1 MiB a node's line
/// may be: the run path holds what the console's store holds (3.99 GB and 1.65 GB before),
/// and the record's telemetry lines stay under the reader's 1 MiB line cap, so the report
/// reads every second of them.
#[test]
fn burnin_run_under_a_flooding_agent_stays_small_and_its_record_reportable() {
    use common::site::Site;
    let plan = "[[phase]]\nid = \"T1\"\ntitle = \"quiet work\"\nscope = \"each-node\"\n\
                parser = \"none\"\ncommand = \"sleep 8; echo done\"\n";
    let Some(site) = Site::new(1, 8, plan) else {
        return;
    };
    let agent = site.cluster.install_tool(
        "flood-agent",
        "#!/usr/bin/env python3\nimport json, sys, time\n\
         print(json.dumps({'hello': {'node': 'x', 'host': 'x', 'agent_version': 'flood', 'gpus': []}}), flush=True)\n\
         base = 0\n\
         n = 0\n\
         while True:\n\
         \x20   now = int(time.time() * 1000)\n\
         \x20   if n % 2:\n\
         \x20       xids = [{'code': 13 + i % 50, 'at_ms': now} for i in range(25000)]\n\
         \x20       rows = [[i, 100.0, 50.0, xids if i == 0 else []] for i in range(8)]\n\
         \x20   else:\n\
         \x20       rows = [[base + i, 100.0, 50.0, []] for i in range(40000)]\n\
         \x20       base += 40000\n\
         \x20   f = {'frame': {'node': 'x', 'at_ms': now, 'gpu_fields': ['index', 'power_avg_watts', 'utilization_pct', 'xid_events'], 'gpu_rows': rows}}\n\
         \x20   sys.stdout.write(json.dumps(f, separators=(',', ':')) + '\\n'); sys.stdout.flush()\n\
         \x20   n += 1\n\
         \x20   time.sleep(0.2)\n",
    );
    std::fs::write(
        &site.config,
        format!(
            "plan = \"plan.toml\"\n[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 8\n\
             agent_path = \"{}\"\n[[node]]\nhost = \"node01\"\n",
            agent.display()
        ),
    )
    .expect("inventory");
    let rss_file = site.cluster.dir.join("run-peak-rss");
    let out = common::under_gnu_time(BIN, &rss_file)
        .args(["run", "--json", "-c"])
        .arg(&site.config)
        .arg("--ssh-config")
        .arg(&site.cluster.ssh_config)
        .arg("--runs-dir")
        .arg(&site.runs)
        .env("XDG_RUNTIME_DIR", &site.runtime)
        .env("BURNIN_LOG", site.cluster.dir.join("burnin.log"))
        .output()
        .expect("burnin run");
    let peak_kb = common::gnu_time_peak_kb(&rss_file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("run --json: {e}\n{stderr}"));
    // The Xid storm is evidence: the phase is not a PASS on it.
    assert_ne!(doc["phases"][0]["verdict"], "PASS", "{doc}");
    eprintln!("burnin run under the flood: peak RSS {peak_kb} kB\n{doc}");
    assert!(peak_kb < 400_000, "peak RSS {peak_kb} kB");
    // Every telemetry line of the record is one the reader takes.
    let run = site.the_run();
    let mut longest = 0usize;
    let mut lines = 0usize;
    for seg in std::fs::read_dir(run.join("telemetry"))
        .expect("telemetry")
        .flatten()
    {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(seg.path()).expect("seg")),
            &mut text,
        )
        .expect("gzip");
        for l in text.lines() {
            longest = longest.max(l.len());
            lines += 1;
        }
    }
    assert!(lines > 3, "{lines} telemetry lines");
    assert!(longest < 1 << 20, "a telemetry line of {longest} bytes");
    let md = common::site::report_md(&run, &site.cluster.dir.join("burnin.log"));
    assert!(!md.contains("did not decode"), "{md}");
}
