//! S1's second pass over real SSH: four sshd nodes in a ring, a stand-in `ib_write_bw` whose
//! writes run at half rate whenever node03 is either end (its NIC is bad). The ring blames two
//! pairs (node02→node03, node03→node04); the second pass runs node02, node03 and node04 each
//! beside node01, a node of no slow pair, and must name node03 alone: in the phase's reason, its
//! gate outcomes, and the report's node table, where node02 and node04 are not FAIL.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::site::{Site, finish, phase};

const PLAN: &str = r#"
[vars]
ib_devs = "mlx5_0"
[[phase]]
id = "S1"
title = "RDMA write per link"
scope = "pairs"
parser = "perftest"
timeout = "2m"
gates = [
  { kind = "min", figure = "link_gbit_per_s", value = 150 },
  { kind = "peers", figure = "link_gbit_per_s", pct = 90 },
]
server = "for d in {ib_devs}; do ib_write_bw -d $d -F --report_gbits -D 10; done"
command = "for d in {ib_devs}; do sleep 1; ib_write_bw -d $d -F --report_gbits -D 10 {peer}; done"
"#;

/// The server prints its banner and waits; the client writes at 388 Gbit/s, or 191 where
/// node03 (127.0.0.4) is either end.
const IB_WRITE_BW: &str = r#"#!/bin/sh
last=""; dev=""; prev=""
for a in "$@"; do [ "$prev" = "-d" ] && dev=$a; prev=$a; last=$a; done
case "$last" in node*) ;; *) echo " Device         : $dev"; sleep 2; exit 0 ;; esac
bw=388.42
[ "$last" = node03 ] && bw=191.07
case "$SSH_CONNECTION" in *" 127.0.0.4 "*) bw=191.07 ;; esac
printf -- '---------------------------------------------------------------------------------------\n'
printf '                    RDMA_Write BW Test\n'
printf ' Dual-port       : OFF\t\tDevice         : %s\n' "$dev"
printf -- '---------------------------------------------------------------------------------------\n'
printf ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n'
printf ' 65536      3705000          0.00               %s  \t\t   0.741000\n' "$bw"
printf -- '---------------------------------------------------------------------------------------\n'
"#;

#[test]
fn the_second_pass_names_the_node_not_the_pair() {
    let Some(site) = Site::new(4, 1, PLAN) else {
        return;
    };
    site.cluster.install_tool("ib_write_bw", IB_WRITE_BW);
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    let s1 = phase(&doc, "S1");
    assert_eq!(s1["verdict"], "FAIL", "{stderr}\n{s1}");
    assert_eq!(code, Some(1));
    let reason = s1["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("second pass: slow again beside a known-good node: node03 (191 Gbit/s)"),
        "{reason}"
    );
    assert!(
        reason.contains("not at fault: node02 (388 Gbit/s), node04 (388 Gbit/s)"),
        "{reason}"
    );
    let gates = s1["gates"].to_string();
    assert!(
        gates.contains("second pass: each node of a slow pair"),
        "{gates}"
    );

    // The report blames node03 alone.
    let run = std::path::PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let md = common::site::report_md(&run, &site.cluster.dir.join("burnin.log"));
    let nodes = md
        .split("## Nodes")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("nodes section");
    let row = |node: &str| {
        nodes
            .lines()
            .find(|l| l.starts_with(&format!("| {node} |")))
            .map(str::to_string)
    };
    let node03 = row("node03").unwrap_or_else(|| panic!("{nodes}"));
    assert!(node03.contains("FAIL"), "{node03}");
    for cleared in ["node02", "node04"] {
        assert!(
            row(cleared).is_none_or(|r| !r.contains("FAIL")),
            "{cleared} was cleared by the second pass:\n{nodes}"
        );
    }
}
