//! `burnin localize` over real SSH (an sshd per node on loopback, tests/common/sshd.rs), through
//! the binary as an engineer runs it. The phase's command is a stand-in `all_reduce_perf` that
//! prints nccl-tests' own table (busbw = algbw × 2(n−1)/n, n ranks) for the hosts it was given,
//! at 370 GB/s, or at half that when a chosen node, or both nodes of a chosen pair, are among
//! them; a "flaky" node is slow in the first test it is in only. The search must name the bad
//! node alone, two among 32, a bad pair as a link, and nobody on a clean fabric or for a node
//! slow once.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::site::{BIN, Site, allreduce_stand_in as stand_in};

const PLAN: &str = common::site::STAND_IN_T7;

/// (exit code, the JSON document, stderr) of `burnin localize --json` on `n` nodes.
fn localize(n: usize, script: impl Fn(&str) -> String) -> Option<(i32, serde_json::Value, String)> {
    let site = Site::new(n, 1, PLAN)?;
    let marks = site.cluster.dir.join("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    site.cluster
        .install_tool("all_reduce_perf", &script(&marks.display().to_string()));
    let out = Command::new(BIN)
        .args(["localize", "--json", "-c"])
        .arg(&site.config)
        .arg("--ssh-config")
        .arg(&site.cluster.ssh_config)
        .arg("--runs-dir")
        .arg(&site.runs)
        .env("XDG_RUNTIME_DIR", &site.runtime)
        .env("BURNIN_LOG", site.cluster.dir.join("burnin.log"))
        .output()
        .expect("burnin localize");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("localize --json: {e}\nstderr:\n{stderr}"));
    eprintln!(
        "localize over {n} sshd nodes: {} rounds, {} tests; bad {} links {}",
        doc["rounds"], doc["tests"], doc["bad_nodes"], doc["bad_links"]
    );
    // The record holds the same answer and every group's own output.
    let record = site.the_run();
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(record.join("localize.json")).expect("localize.json"),
    )
    .expect("json");
    assert_eq!(kept["bad_nodes"], doc["bad_nodes"]);
    let logs = std::fs::read_dir(record.join("tests"))
        .expect("tests")
        .count();
    assert_eq!(
        logs as u64,
        doc["tests"].as_u64().unwrap(),
        "a log per group"
    );
    let first = std::fs::read_to_string(record.join("tests/r1-t0.log")).expect("r1-t0.log");
    assert!(first.contains("# Avg bus bandwidth"), "{first}");
    Some((out.status.code().unwrap_or(-1), doc, stderr))
}

/// `burnin ARGS` against the site's config and sshd nodes.
fn burnin_at(site: &Site, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .arg("-c")
        .arg(&site.config)
        .arg("--ssh-config")
        .arg(&site.cluster.ssh_config)
        .env("XDG_RUNTIME_DIR", &site.runtime)
        .env("BURNIN_LOG", site.cluster.dir.join("burnin.log"));
    c
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.to_string().replace('"', "")).collect())
        .unwrap_or_default()
}

#[test]
fn one_bad_node_among_16_is_named_alone() {
    let Some((code, doc, stderr)) = localize(16, |m| stand_in(&["node05"], &[], None, m)) else {
        return;
    };
    assert_eq!(names(&doc["bad_nodes"]), ["node05"], "{stderr}");
    assert!(names(&doc["bad_links"]).is_empty(), "{doc}");
    assert_eq!(code, 1);
    // Named beside two different good partners, each a test of its own.
    let partner_tests = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["slow"] == true && g["members"].as_array().is_some_and(|m| m.len() == 1))
        .count();
    assert!(partner_tests >= 2, "{doc}");
    assert!(doc["rounds"].as_u64().unwrap() <= 8, "{doc}");
}

#[test]
fn two_bad_nodes_among_32_are_named_alone() {
    let Some((code, doc, stderr)) = localize(32, |m| stand_in(&["node07", "node22"], &[], None, m))
    else {
        return;
    };
    assert_eq!(names(&doc["bad_nodes"]), ["node07", "node22"], "{stderr}");
    assert_eq!(code, 1);
    assert!(doc["rounds"].as_u64().unwrap() <= 12, "{doc}");
}

#[test]
fn a_clean_fabric_names_nobody() {
    let Some((code, doc, stderr)) = localize(8, |m| stand_in(&[], &[], None, m)) else {
        return;
    };
    assert!(names(&doc["bad_nodes"]).is_empty(), "{stderr}");
    assert!(names(&doc["bad_links"]).is_empty(), "{doc}");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["rounds"], 2, "the screen, then every node at once");
}

#[test]
fn a_node_slow_once_is_not_named() {
    let Some((code, doc, stderr)) = localize(8, |m| stand_in(&[], &[], Some("node03"), m)) else {
        return;
    };
    assert!(names(&doc["bad_nodes"]).is_empty(), "{stderr}\n{doc}");
    assert_eq!(code, 0, "{doc}");
    let said = doc["not_reproduced"].to_string();
    assert!(said.contains("node03"), "{said}");
}

#[test]
fn a_bad_link_is_named_as_a_link() {
    let Some((code, doc, stderr)) =
        localize(8, |m| stand_in(&[], &[("node02", "node07")], None, m))
    else {
        return;
    };
    assert!(names(&doc["bad_nodes"]).is_empty(), "{stderr}\n{doc}");
    assert_eq!(doc["bad_links"].to_string(), r#"[["node02","node07"]]"#);
    assert_eq!(code, 1);
}

/// A search kept in a run's record (`--run`) is in that run's report: "Where the fault is",
/// naming the node, with every test as a row and its picture beside the report.
#[test]
fn a_search_kept_in_a_run_is_in_its_report() {
    let Some(site) = Site::new(6, 1, PLAN) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &stand_in(&["node04"], &[], None, "/nonexistent"),
    );
    let base = |args: &[&str]| burnin_at(&site, args);
    // The whole-cluster T7 first: a run record to keep the search in.
    let runs = site.runs.display().to_string();
    let out = base(&["run", "--no-telemetry", "--only", "T7", "--runs-dir", &runs])
        .output()
        .expect("run");
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = site.the_run();
    let run_arg = run.display().to_string();
    let out = base(&["localize", "--run", &run_arg])
        .output()
        .expect("localize");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("bad node(s): node04"), "{said}");
    let md = common::site::report_md(&run, &site.cluster.dir.join("burnin.log"));
    let section = md
        .split("## Where the fault is")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no section:\n{md}"));
    assert!(section.contains("bad node(s): node04"), "{section}");
    assert!(
        section.contains("| 1 | 0 | screen | node01, node02 |"),
        "{section}"
    );
    assert!(section.contains("**slow**"), "{section}");
    let svg = section
        .lines()
        .find_map(|l| l.strip_prefix("![").and_then(|l| l.split("](").nth(1)))
        .map(|l| l.trim_end_matches(')').to_string())
        .unwrap_or_else(|| panic!("no picture: {section}"));
    let svg = std::fs::read_to_string(run.join(&svg)).expect("svg beside the report");
    assert!(svg.contains("#d62728"), "slow tests drawn red");
}

/// A node named twice in `--nodes` would sit in two tests of one round: refused, naming it.
#[test]
fn a_node_named_twice_is_refused() {
    let Some(site) = Site::new(2, 1, PLAN) else {
        return;
    };
    let out = Command::new(BIN)
        .args(["localize", "--nodes", "node01,node02,node01", "-c"])
        .arg(&site.config)
        .arg("--ssh-config")
        .arg(&site.cluster.ssh_config)
        .arg("--runs-dir")
        .arg(&site.runs)
        .env("XDG_RUNTIME_DIR", &site.runtime)
        .env("BURNIN_LOG", site.cluster.dir.join("burnin.log"))
        .output()
        .expect("localize");
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("node01 is named twice in --nodes"), "{said}");
}

/// Issue 42: the fault search judges each group with the spec table's floor for the nodes'
/// NIC model, per RDMA port, at whatever size the group is. T0 (stand-in tools) reads every
/// node as one B300 with eight ConnectX-8 ports (800G); the stand-in all_reduce runs at
/// 370 GB/s everywhere, 46 % of line rate a port: a fabric slow as a whole, which comparing
/// groups with each other cannot see. Every group of every round misses the floor, in its words.
#[test]
fn the_search_judges_every_group_by_the_nic_models_floor() {
    let plan = format!(
        "{}{}",
        common::site::stand_in_t0(1, "0x1023", 800),
        PLAN.replace(
            r#"{ kind = "min", figure = "busbw_all_reduce", value = 10 }"#,
            r#"{ kind = "spec", figure = "busbw_all_reduce", per = "nic", floor = "line_rate_gbits", pct = 60 }"#
        )
    );
    let Some(site) = Site::new(4, 1, &plan) else {
        return;
    };
    site.cluster
        .install_tool("all_reduce_perf", &stand_in(&[], &[], None, "/nonexistent"));
    let base = |args: &[&str]| burnin_at(&site, args);
    let runs = site.runs.display().to_string();
    let out = base(&[
        "run",
        "--no-telemetry",
        "--only",
        "T0,T7",
        "--runs-dir",
        &runs,
    ])
    .output()
    .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = site.the_run();
    let run_arg = run.display().to_string();
    let out = base(&["localize", "--json", "--run", &run_arg])
        .output()
        .expect("localize");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let groups = doc["groups"].as_array().expect("groups");
    assert!(!groups.is_empty(), "{doc}");
    for g in groups {
        let words = g["result"]["words"].as_str().unwrap_or("");
        assert_eq!(g["result"]["failed"], true, "{g}");
        assert!(
            words.contains("over 8 RDMA ports a node (T0's) = 370 Gbit/s a port, 46 % of ConnectX-8's line_rate_gbits 800"),
            "{words}"
        );
    }
}
