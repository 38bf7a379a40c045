//! `burnin triage` through the binary over simulated nodes (this binary's agent with `--sim`
//! as a local child per node, the same stream path as real nodes): a healthy loaded cluster
//! says nothing and exits 0; a stalled GPU is named with its evidence and exits 2; a warning
//! alone exits 1, hardware thermal throttling 2; no inventory exits 3.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

fn triage(name: &str, node_args: &[&str], extra: &[&str]) -> Output {
    triage_with(name, "", node_args, extra)
}

/// Same with more TOML (a `[triage]` table) at the top of the inventory.
fn triage_with(name: &str, head: &str, node_args: &[&str], extra: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("burnin-triage-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut toml = format!("{head}[defaults]\nmode = \"sim\"\ninterval = \"500ms\"\ngpus = 8\n");
    for (i, args) in node_args.iter().enumerate() {
        toml.push_str(&format!(
            "[[node]]\nhost = \"n{}\"\nagent_args = [\"--load\", \"full\"{args}]\n",
            i + 1
        ));
    }
    let config = dir.join("burnin.toml");
    std::fs::write(&config, toml).expect("inventory");
    let out = Command::new(BIN)
        .args(["triage", "-c"])
        .arg(&config)
        .args(extra)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .output()
        .expect("burnin triage");
    std::fs::remove_dir_all(&dir).ok();
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_healthy_loaded_cluster_has_no_findings() {
    let o = triage("healthy", &["", ""], &["--for", "12s"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    // Two loaded nodes at their power cap: one info line says that is normal; nothing else.
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("info cluster") && lines[0].contains("power-capped"),
        "{text}"
    );
}

#[test]
fn a_stalled_gpu_is_named_with_its_evidence() {
    let o = triage(
        "stall",
        &[", \"--fault\", \"stall:3@1\"", ""],
        // Room for a loaded CI machine: the stall rule needs its window of frames after the
        // nodes connect (at 14 s it once saw too few while the whole suite ran on 2 cores).
        &["--for", "20s", "--json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(doc["schema"], 1);
    let findings = doc["findings"].as_array().expect("findings");
    let stall = findings
        .iter()
        .find(|f| f["rule"] == "stalled")
        .unwrap_or_else(|| panic!("no stall in {findings:?}"));
    assert_eq!(
        (stall["node"].as_str(), stall["gpu"].as_u64()),
        (Some("n1"), Some(3))
    );
    assert_eq!(stall["severity"], "crit");
    let why = stall["why"].as_str().expect("why");
    assert!(why.contains("util 0 %") && why.contains("peers"), "{why}");
    // Only the stalled GPU: no other GPU or node is accused (the power-cap line is info).
    assert!(
        findings
            .iter()
            .filter(|f| f["severity"] != "info")
            .all(|f| f["rule"] == "stalled" && f["node"] == "n1"),
        "{findings:?}"
    );
}

#[test]
fn a_warning_alone_exits_1_and_throttling_exits_2() {
    let o = triage(
        "warn",
        &[", \"--fault\", \"symbol-errors:0@1\"", ""],
        &["--for", "14s"],
    );
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with("warn n1") && text.contains("nic-errors") && text.contains("symbol_error"),
        "{text}"
    );
    let o = triage(
        "thermal",
        &[", \"--fault\", \"thermal:5@1\"", ""],
        &["--for", "14s"],
    );
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("n1 GPU5") && text.contains("hw-thermal"),
        "{text}"
    );
}

#[test]
fn the_stall_window_comes_from_burnin_toml() {
    // The same stall, watched 12 s: a 60 s window cannot be filled, a 2 s one can.
    let stalled = [", \"--fault\", \"stall:3@1\"", ""];
    let o = triage_with(
        "window-60s",
        "[triage]\nstall_window = \"60s\"\n",
        &stalled,
        &["--for", "12s"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = triage_with(
        "window-2s",
        "[triage]\nstall_window = \"2s\"\n",
        &stalled,
        &["--for", "12s"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).contains("util 0 % for 2 s"), "{}", stdout(&o));
}

#[test]
fn no_inventory_cannot_run() {
    let o = Command::new(BIN)
        .args(["triage", "-c", "/nonexistent/burnin.toml"])
        .env(
            "BURNIN_LOG",
            std::env::temp_dir().join("burnin-triage-none.log"),
        )
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn every_node_failing_ends_the_look_with_each_nodes_own_reason() {
    let o = triage(
        "refused",
        &[", \"--no-such-flag\"", ", \"--no-such-flag\""],
        &["--for", "60s"],
    );
    let text = stdout(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("every node failed before its first frame"),
        "the look ends when nothing can be judged by waiting: {err}"
    );
    assert_eq!(
        text.matches("agent refused its arguments: unexpected argument '--no-such-flag' found")
            .count(),
        2,
        "{text}"
    );
    assert!(!text.contains("For more information"), "{text}");
    assert_eq!(o.status.code(), Some(2), "{text}");
}
