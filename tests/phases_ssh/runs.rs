//! `burnin run --json` over real SSH: replayed benchmarks, abort, a cut link, an Xid, pairs, the S3 probe and together phases.

use super::*;

#[test]
fn replayed_benchmarks_give_the_numbers_in_the_captures() {
    let plan = r#"
[vars]
extra = ""
[[phase]]
id = "T4"
title = "single-node NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{ kind = "zero-wrong" }, { kind = "peers", figure = "busbw_all_reduce", pct = 90 }]
command = "all_reduce_perf -b 8 -e 8G -f 2 -g {gpus}"
[[phase]]
id = "T3"
title = "NVLink"
scope = "each-node"
parser = "nvbandwidth"
gates = [{ kind = "peers", figure = "pair_gb_per_s", pct = 90 }]
command = "nvbandwidth -t device_to_device_memcpy_read_ce"
[[phase]]
id = "S1"
title = "RDMA write"
scope = "launcher"
parser = "perftest"
gates = [{ kind = "min", figure = "link_gbit_per_s", value = 0.1 }]
command = "ib_write_bw -a -d mlx5_0 --report_gbits {hosts}"
[[phase]]
id = "Q"
title = "quoting"
scope = "each-node"
parser = "none"
command = "printf '%s|' 'a b' \"it's\" '$(touch PWNED)' ';' 'x;y' && echo"
"#;
    let Some(site) = Site::new(2, 8, plan) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &replay_tool("nccl-tests/h100-2node-16rank-allreduce.txt"),
    );
    site.cluster.install_tool(
        "nvbandwidth",
        &replay_tool("nvbandwidth/v0.2-h800-8gpu-d2d-read-ce.txt"),
    );
    site.cluster.install_tool(
        "ib_write_bw",
        &replay_tool("perftest/write-bw-sweep-ib-gbits-truncated.txt"),
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}");
    for node in ["node01", "node02"] {
        // The last row of the capture: 8589934592 B, busbw 338.82 GB/s.
        assert_eq!(
            figure(&doc, "T4", "busbw_all_reduce", node),
            Some(338.82),
            "{doc}"
        );
        // Cell 0 -> 1 of the read matrix.
        assert_eq!(
            figure(
                &doc,
                "T3",
                "pair_gb_per_s",
                &format!("{node} 0->1 memcpy_read_ce")
            ),
            Some(172.32)
        );
    }
    assert_eq!(phase(&doc, "T4")["verdict"], "PASS", "{doc}");
    assert_eq!(phase(&doc, "T3")["verdict"], "PASS", "{doc}");
    // The launcher phase ran once, on the first node, and read the 8-byte row (0.17 Gb/s).
    assert_eq!(
        figure(&doc, "S1", "link_gbit_per_s", "node01/mlx5_0 write"),
        Some(0.17)
    );
    assert_eq!(phase(&doc, "S1")["verdict"], "PASS", "{doc}");
    assert_eq!(doc["verdict"], "PASS");
    // Every line reached the record, once, in order.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let log = common::node_log(&run_dir, "T4", "node02");
    let capture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt"),
    )
    .expect("fixture");
    let tool_lines: Vec<&str> = log.lines().collect();
    let want: Vec<&str> = capture.lines().skip(1).collect();
    assert_eq!(tool_lines, want);
    // Quotes, $(…) and ; in the command reached the program as written; nothing ran.
    let q = common::node_log(&run_dir, "Q", "node01");
    assert!(q.contains("a b|it's|$(touch PWNED)|;|x;y|"), "{q}");
    let pwned = site.phase_dir("Q", "node01").map(|d| d.join("PWNED"));
    assert!(pwned.is_some_and(|p| !p.exists()));
    // The record is whole.
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert_eq!(events.matches(r#""event":"finished""#).count(), 4);
}

#[test]
fn abort_stops_the_whole_process_group_and_records_aborted() {
    let plan = r#"
[[phase]]
id = "T4"
title = "long"
scope = "each-node"
parser = "none"
command = "trap '' TERM; echo started; sleep 300 & sleep 300"
[[phase]]
id = "T5"
title = "after"
scope = "each-node"
parser = "none"
command = "echo never"
"#;
    let Some(site) = Site::new(2, 1, plan) else {
        return;
    };
    let child = site.spawn(&["run", "--json", "--no-telemetry"]);
    let mut pgids = Vec::new();
    for node in ["node01", "node02"] {
        wait_for("the phase to start", Duration::from_secs(30), || {
            site.phase_dir("T4", node)
                .and_then(|d| std::fs::read_to_string(d.join("log")).ok())
                .is_some_and(|l| l.contains("started"))
        });
        let pid = site.phase_dir("T4", node).expect("dir").join("pid");
        let pgid: i32 = std::fs::read_to_string(pid)
            .expect("pid")
            .trim()
            .parse()
            .expect("pgid");
        pgids.push(pgid);
    }
    // Ctrl-C, as the engineer would.
    // SAFETY: sending SIGINT to the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, doc, stderr) = finish(child);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(phase(&doc, "T4")["verdict"], "ABORTED", "{doc}");
    assert!(
        phase(&doc, "T4")["reason"]
            .as_str()
            .is_some_and(|r| r.contains("node01") && r.contains("node02")),
        "{doc}"
    );
    assert_eq!(phase(&doc, "T5")["verdict"], "SKIPPED");
    assert_eq!(doc["interrupted"], true);
    for pgid in pgids {
        // SAFETY: signal 0 only asks whether any process of the group is left.
        let alive = unsafe { libc::kill(-pgid, 0) } == 0;
        assert!(!alive, "process group {pgid} still has processes");
    }
    let stopped = site.phase_dir("T4", "node01").expect("dir").join("stopped");
    assert_eq!(
        std::fs::read_to_string(stopped).expect("stopped").trim(),
        "aborted"
    );
}

#[test]
fn a_cut_link_is_reattached_without_losing_or_doubling_a_line() {
    let plan = r#"
[[phase]]
id = "T5"
title = "steady output"
scope = "each-node"
parser = "none"
command = "i=0; while [ $i -lt 80 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done"
"#;
    let Some(mut site) = Site::new(1, 1, plan) else {
        return;
    };
    let child = site.spawn(&["run", "--json", "--no-telemetry"]);
    wait_for("line 10", Duration::from_secs(30), || {
        site.phase_dir("T5", "node01")
            .and_then(|d| std::fs::read_to_string(d.join("log")).ok())
            .is_some_and(|l| l.contains("line 10\n"))
    });
    // The node's sshd goes down with its sessions; the phase keeps running on the node.
    site.cluster.nodes[0].stop();
    std::thread::sleep(Duration::from_millis(1500));
    let sshd = site.cluster.sshd().to_path_buf();
    site.cluster.nodes[0].start(&sshd);
    let (code, doc, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(phase(&doc, "T5")["verdict"], "PASS", "{doc}");
    assert!(stderr.contains("re-attaching at byte"), "{stderr}");
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let log = common::node_log(&run_dir, "T5", "node01");
    let lines: Vec<&str> = log.lines().collect();
    let want: Vec<String> = (0..80).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, want);
}

/// The telemetry beside `burnin run`: an Xid on a node while a phase runs fails the phase's
/// `no-xid` gate and the record says which GPU, even though the phase itself exited 0.
#[test]
fn an_xid_during_a_phase_fails_it() {
    let plan = r#"
[[phase]]
id = "T2"
title = "quiet work"
scope = "each-node"
parser = "none"
gates = [{ kind = "no-xid" }]
command = "sleep 8; echo done"
"#;
    let Some(site) = Site::new(1, 2, plan) else {
        return;
    };
    // The node's agent is this binary, simulating 2 GPUs; GPU1 reports Xid 79 after 3 s.
    agent_node(
        &site,
        BIN,
        r#"["--sim", "--gpus", "2", "--fault", "xid79:1@3"]"#,
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json"]));
    assert_eq!(code, Some(1), "{stderr}");
    let t2 = phase(&doc, "T2");
    assert_eq!(t2["verdict"], "FAIL", "{doc}");
    let reason = t2["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Xid during the phase, first Xid 79 on node01 GPU1"),
        "{reason}"
    );
    let findings: Vec<&str> = t2["findings"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    assert!(
        findings.iter().any(|f| f.contains("node01 GPU1")),
        "{findings:?}"
    );
    // What the node said of itself is in the record: its GPUs and its topology.
    let hello = &doc["nodes"][0]["hello"];
    assert_eq!(hello["gpus"].as_array().map(Vec::len), Some(2), "{doc}");
    assert!(!hello["topology"].is_null(), "{doc}");
    // The run's telemetry is in the record, folded per second (200 ms samples: several a
    // second), with the Xid in its second; the finding is an event of the run.
    let dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let tele = burnin::record::telemetry::read_telemetry(&dir).expect("telemetry");
    let mine: Vec<_> = tele.seconds.iter().filter(|s| s.node == "node01").collect();
    assert!(mine.len() >= 5, "{} seconds", mine.len());
    assert!(
        mine.iter().any(|s| s.n >= 3),
        "several samples folded into a second"
    );
    assert!(
        mine.iter()
            .any(|s| s.gpus.iter().any(|g| g.i == 1 && g.xid.contains(&79))),
        "the Xid's second"
    );
    assert!(tele.torn.is_empty(), "{:?}", tele.torn);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    assert!(
        events.lines().any(|l| l.contains(r#""event":"finding""#)
            && l.contains(r#""rule":"xid","subject":"node01 GPU1""#)),
        "{events}"
    );
    // What the inventory expected is recorded, and a replay is told it as the console was.
    assert!(
        events.contains(r#""event":"expect""#) && events.contains(r#""node":"node01","gpus":2"#),
        "{events}"
    );
    let timeline = burnin::sources::replay::Timeline::load(&dir).expect("timeline");
    assert!(timeline.play().any(|(_, e)| matches!(
        e,
        burnin::model::SourceEvent::Expect { node, gpus: 2, .. } if node == "node01"
    )));
}

/// Issue 41, case 1: an agent that stops sending after 3 s (stopped, its connection still up)
/// leaves its node without telemetry for most of the phase; `no-xid` is not met on that: the
/// phase WARNs and says for how long, where it used to PASS "no Xid".
#[test]
fn a_node_without_telemetry_for_most_of_the_phase_is_not_judged_there() {
    let plan = r#"
[[phase]]
id = "T2"
title = "quiet work"
scope = "each-node"
parser = "none"
gates = [{ kind = "no-xid" }]
command = "sleep 20; echo done"
"#;
    let Some(site) = Site::new(1, 2, plan) else {
        return;
    };
    let agent = site.cluster.install_tool(
        "stopping-agent",
        &format!(
            "#!/bin/sh\n\"{BIN}\" \"$@\" &\npid=$!\ntrap 'kill -KILL $pid' EXIT HUP TERM\n\
             sleep 3\nkill -STOP $pid\nsleep 600\n"
        ),
    );
    agent_node(
        &site,
        &agent.display().to_string(),
        r#"["--sim", "--gpus", "2"]"#,
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json"]));
    assert_eq!(code, Some(0), "a WARN is no failure: {stderr}");
    let t2 = phase(&doc, "T2");
    assert_eq!(t2["verdict"], "WARN", "{doc}");
    let reason = t2["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("node01 without telemetry for ") && reason.contains("Xid not judged there"),
        "{reason}"
    );
}

/// A `pairs` phase: a server on every node first, then every node a client of the next one;
/// the client's figures are the link's, the servers' lines are recorded beside them.
#[test]
fn pairs_run_a_server_on_every_node_and_a_client_of_the_next() {
    let plan = r#"
[vars]
ib_devs = "mlx5_0"
[[phase]]
id = "S1"
title = "RDMA write per link"
scope = "pairs"
parser = "perftest"
requires = ["ib_devs"]
gates = [{ kind = "peers", figure = "link_gbit_per_s", pct = 90 }]
server = "echo server on {node}; for d in {ib_devs}; do ib_write_bw -d $d -F --report_gbits; done"
command = "for d in {ib_devs}; do ib_write_bw -d $d -F --report_gbits {peer}; done"
"#;
    let Some(site) = Site::new(2, 1, plan) else {
        return;
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perftest");
    // The stand-in: with a peer (node01/node02) it is the client and replays a client capture;
    // without, the server, which says who called it.
    site.cluster.install_tool(
        "ib_write_bw",
        &format!(
            "#!/bin/sh\ncase \"$*\" in\n  *node0*) tail -n +2 '{c}'; echo \"peer: $(echo \"$*\" | grep -o 'node0.')\" ;;\n  *) tail -n +2 '{s}' ;;\nesac\n",
            c = fixtures.join("write-bw-sweep-ib-gbits-truncated.txt").display(),
            s = fixtures.join("write-bw-server-roce-duration-header-only.txt").display(),
        ),
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}");
    let s1 = phase(&doc, "S1");
    assert_eq!(s1["verdict"], "PASS", "{doc}");
    for node in ["node01", "node02"] {
        assert_eq!(
            figure(
                &doc,
                "S1",
                "link_gbit_per_s",
                &format!("{node}/mlx5_0 write")
            ),
            Some(0.17)
        );
    }
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    // The ring: node01 called node02, node02 called node01.
    let client = common::node_log(&run_dir, "S1", "node01");
    assert!(client.contains("peer: node02"), "{client}");
    let client = common::node_log(&run_dir, "S1", "node02");
    assert!(client.contains("peer: node01"), "{client}");
    let server = common::node_log(&run_dir, "S1", "node01-server");
    assert!(server.contains("Waiting for client to connect"), "{server}");
    // The server's `{node}` is the node, as the plan documents (its lines are
    // `node01-server`'s; issue 41 found `{node}` rendered as `node01-server`).
    assert!(server.contains("server on node01\n"), "{server}");
}

#[test]
fn an_s3_probe_phase_runs_on_every_node_and_its_figures_are_gated() {
    use common::seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};
    let Some(s3) = Seaweed::start() else {
        return;
    };
    let Some(site) = Site::new(2, 1, "") else {
        return;
    };
    // Keys in a credentials file on the node, named by the plan; never in the plan itself.
    let creds = site.cluster.dir.join("aws-credentials");
    std::fs::write(
        &creds,
        format!(
            "[aistor]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .expect("credentials");
    let plan = format!(
        r#"[settings]
remote_dir = "{remote}"
grace_s = 1
[vars]
aistor_endpoint = "{ep}"
aistor_bucket = "burnin-phase"
aistor_prefix = "p/"
aistor_auth = "--profile aistor"
creds = "{creds}"
[[phase]]
id = "S2"
title = "AIStor GET"
scope = "each-node"
parser = "s3-probe"
requires = ["aistor_endpoint", "aistor_bucket"]
gates = [{{ kind = "max", figure = "s3_errors", value = 0 }}, {{ kind = "min", figure = "s3_gb_per_s", value = 0.000001 }}]
command = "AWS_SHARED_CREDENTIALS_FILE={{creds}} {{burnin}} probe s3 --endpoint {{aistor_endpoint}} --bucket {{aistor_bucket}} --prefix {{aistor_prefix}}{{node}}/ {{aistor_auth}} --create-bucket --prepare 2 --object-size 4MiB --concurrency 1,2 --duration 2s --metrics off --json-lines"
"#,
        remote = site.remote.display(),
        ep = s3.endpoint,
        creds = creds.display(),
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), plan).expect("plan");
    // The nodes run this very binary as their deployed burnin.
    let inventory = std::fs::read_to_string(&site.config).expect("inventory");
    std::fs::write(
        &site.config,
        inventory.replace("gpus = 1\n", &format!("gpus = 1\nagent_path = \"{BIN}\"\n")),
    )
    .expect("inventory");

    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    assert_eq!(code, Some(0), "{stderr}\n{doc}");
    assert_eq!(phase(&doc, "S2")["verdict"], "PASS", "{doc}");
    for node in ["node01", "node02"] {
        assert!(
            figure(&doc, "S2", "s3_gb_per_s", node).is_some_and(|v| v > 0.0),
            "{doc}"
        );
        assert_eq!(figure(&doc, "S2", "s3_errors", node), Some(0.0), "{doc}");
        assert!(
            figure(&doc, "S2", "s3_ttfb_p99_ms_c2", node).is_some_and(|v| v > 0.0),
            "{doc}"
        );
    }
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    // The record keeps the plan it ran: the site's file may change (here: break) afterwards.
    assert_eq!(
        std::fs::read_to_string(run_dir.join("plan.toml")).expect("plan copy"),
        std::fs::read_to_string(site.cluster.dir.join("plan.toml")).expect("plan")
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), "[[phase]\nbroken").expect("plan");
    let log = common::node_log(&run_dir, "S2", "node01");
    assert!(log.contains("S3 over HTTP (TCP; not RDMA)"), "{log}");
    // The live pane's windows are in the record, and no key is anywhere in it.
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    assert!(
        events.contains("\"storage\""),
        "no storage windows recorded"
    );
    // The report plots each node's GET TTFB CDF per concurrency level, from the real probe.
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cdf = std::fs::read_to_string(run_dir.join("report-latency-S2.svg")).expect("cdf svg");
    for label in ["node01 c1", "node01 c2", "node02 c1", "node02 c2"] {
        assert!(cdf.contains(label), "{label} in the CDF legend");
    }
    assert!(!cdf.contains("no data recorded"));
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(md.contains("![S2: GET TTFB CDF per node and concurrency](report-latency-S2.svg)"));
    assert!(
        !md.contains("shipped plan"),
        "the report read the record's plan:\n{md}"
    );
    for entry in walk(&run_dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).expect("read")).into_owned();
        assert!(
            !text.contains(SECRET_KEY) && !text.contains(ACCESS_KEY),
            "a key leaked into {}",
            entry.display()
        );
    }
}

/// "NCCL and AIStor at once" with real parts where they exist: the real S3 probe against a
/// real SeaweedFS, and a stand-in all_reduce_perf that replays a real capture, a quarter
/// slower while the probe runs on its node (it looks for the probe's marker): the together
/// run must see it, which it can only if the two truly ran at the same time.
#[test]
fn a_together_phase_runs_its_members_at_once_and_compares_each_with_its_run_alone() {
    use common::seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};
    let Some(s3) = Seaweed::start() else {
        return;
    };
    let Some(site) = Site::new(2, 8, "") else {
        return;
    };
    let creds = site.cluster.dir.join("aws-credentials");
    std::fs::write(
        &creds,
        format!(
            "[aistor]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .expect("credentials");
    let marks = site.cluster.dir.join("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    // The capture, and the same capture with every bandwidth a quarter lower.
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-tests/h100-2node-16rank-allreduce.txt");
    let text = std::fs::read_to_string(&capture).expect("capture");
    let shared: Vec<String> = text
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            if cols.len() == 13 && cols[0].bytes().all(|b| b.is_ascii_digit()) {
                let mut cols: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
                for i in [6, 7, 10, 11] {
                    let v: f64 = cols[i].parse().expect("bandwidth");
                    cols[i] = format!("{:.2}", v * 0.75);
                }
                cols.join("  ")
            } else {
                l.to_string()
            }
        })
        .collect();
    let shared_path = site.cluster.dir.join("allreduce-shared.txt");
    std::fs::write(&shared_path, shared.join("\n") + "\n").expect("shared capture");
    site.cluster.install_tool(
        "all_reduce_perf",
        &format!(
            "#!/bin/sh\nsleep 2\nif [ -e \"$1\" ]; then f='{shared}'; else f='{alone}'; fi\ntail -n +2 \"$f\"\n",
            shared = shared_path.display(),
            alone = capture.display(),
        ),
    );
    let plan = format!(
        r#"[settings]
remote_dir = "{remote}"
grace_s = 1
[vars]
aistor_endpoint = "{ep}"
aistor_bucket = "burnin-together"
creds = "{creds}"
marks = "{marks}"
[[phase]]
id = "N"
title = "NCCL"
scope = "each-node"
parser = "nccl-tests"
gates = [{{ kind = "zero-wrong" }}, {{ kind = "min", figure = "busbw_all_reduce", value = 300 }}]
command = "all_reduce_perf {{marks}}/s3-{{node}}"
[[phase]]
id = "S2"
title = "AIStor GET"
scope = "each-node"
parser = "s3-probe"
requires = ["aistor_endpoint"]
gates = [{{ kind = "max", figure = "s3_errors", value = 0 }}]
command = "touch {{marks}}/s3-{{node}}; AWS_SHARED_CREDENTIALS_FILE={{creds}} {{burnin}} probe s3 --endpoint {{aistor_endpoint}} --bucket {{aistor_bucket}} --prefix p/{{node}}/ --profile aistor --create-bucket --prepare 2 --object-size 4MiB --concurrency 1,2 --duration 2s --metrics off --json-lines; rc=$?; rm -f {{marks}}/s3-{{node}}; exit $rc"
[[phase]]
id = "C1"
title = "NCCL and AIStor at once"
together = ["N", "S2"]
gates = [{{ kind = "together", figure = "busbw_all_reduce", worse_pct = 20 }}, {{ kind = "together", figure = "s3_errors", worse_pct = 0 }}]
compare = ["s3_gb_per_s"]
"#,
        remote = site.remote.display(),
        ep = s3.endpoint,
        creds = creds.display(),
        marks = marks.display(),
    );
    std::fs::write(site.cluster.dir.join("plan.toml"), plan).expect("plan");
    let inventory = std::fs::read_to_string(&site.config).expect("inventory");
    std::fs::write(
        &site.config,
        inventory.replace("gpus = 8\n", &format!("gpus = 8\nagent_path = \"{BIN}\"\n")),
    )
    .expect("inventory");

    // Only the group is asked for: its members run alone first.
    let (code, doc, stderr) =
        finish(site.spawn(&["run", "--json", "--no-telemetry", "--only", "C1"]));
    let ids: Vec<&str> = doc["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, ["N", "S2", "C1"], "{stderr}");
    assert_eq!(phase(&doc, "N")["verdict"], "PASS", "{stderr}\n{doc}");
    assert_eq!(phase(&doc, "S2")["verdict"], "PASS", "{stderr}\n{doc}");
    for node in ["node01", "node02"] {
        assert_eq!(figure(&doc, "N", "busbw_all_reduce", node), Some(338.82));
    }
    let c1 = phase(&doc, "C1");
    assert_eq!(c1["verdict"], "FAIL", "{doc}");
    assert_eq!(code, Some(1));
    let reason = c1["reason"].as_str().expect("reason");
    assert!(
        reason.contains("busbw_all_reduce more than 20 % worse together on 2 subject(s), worst N node01 339 -> 254 (-25.0 %)"),
        "{reason}"
    );
    // The members' own gates that read no figure held beside each other; the min gate on
    // busbw (254 < 300) is not theirs to judge together.
    assert!(
        !reason.contains("N FAIL") && !reason.contains("S2 FAIL"),
        "{reason}"
    );
    assert!(reason.contains("s3_errors together: worst S2"), "{reason}");
    let rows = c1["together"].as_array().expect("together rows");
    let row = |member: &str, figure: &str, subject: &str| {
        rows.iter()
            .find(|r| r["member"] == member && r["figure"] == figure && r["subject"] == subject)
            .unwrap_or_else(|| panic!("no {member} {figure} {subject} in {rows:?}"))
    };
    for node in ["node01", "node02"] {
        let b = row("N", "busbw_all_reduce", node);
        // 338.82 × 0.75, as the stand-in printed it.
        assert_eq!(
            (b["alone"].as_f64(), b["together"].as_f64()),
            (Some(338.82), Some(254.12))
        );
        let g = row("S2", "s3_gb_per_s", node);
        // Both are the real probe's measurements: alone from S2, together from C1.
        assert_eq!(g["alone"].as_f64(), figure(&doc, "S2", "s3_gb_per_s", node));
        assert!(g["together"].as_f64().is_some_and(|v| v > 0.0), "{g}");
        assert_eq!(row("S2", "s3_errors", node)["together"].as_f64(), Some(0.0));
    }
    // They truly overlapped: each member's log in the group says so in its own directory.
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    for (member, node) in [("N", "node01"), ("S2", "node02")] {
        let log = run_dir.join(format!("logs/C1/{member}@{node}.log.gz"));
        assert!(log.exists(), "{}", log.display());
    }
    let run = std::fs::read_dir(&site.remote)
        .expect("remote")
        .flatten()
        .next()
        .expect("run dir")
        .path();
    assert!(run.join("C1-N/node01").is_dir() && run.join("C1-S2/node02").is_dir());
    // The report sets alone, together and the change side by side.
    let o = Command::new(BIN)
        .args(["report", run_dir.to_str().expect("utf-8")])
        .env("BURNIN_LOG", run_dir.join("report.log"))
        .output()
        .expect("burnin report");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(
        md.contains(
            "| C1 | N | busbw_all_reduce | node01 | 339 | 254 | -25.0 % | worse | **over 20 %** |"
        ),
        "{md}"
    );
}

/// The site's inventory: node01 in agent mode at 200 ms with 2 GPUs, its agent `agent_path`
/// run with `agent_args` (a TOML array), the telemetry watched beside the plan's phases.
fn agent_node(site: &Site, agent_path: &str, agent_args: &str) {
    std::fs::write(
        &site.config,
        format!(
            "plan = \"plan.toml\"\n[defaults]\nmode = \"agent\"\ninterval = \"200ms\"\nconnect_timeout = \"5s\"\ngpus = 2\n\
             agent_path = \"{agent_path}\"\nagent_args = {agent_args}\n[[node]]\nhost = \"node01\"\n"
        ),
    )
    .expect("inventory");
}
