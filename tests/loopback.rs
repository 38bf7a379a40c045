//! The shipped per-node loopback phases (L1: NCCL with P2P and shared memory off, L2:
//! `ib_write_bw --use_cuda` between HCAs of one NUMA node), their commands as the plan renders
//! them, run by a real `sh` with stand-in tools on PATH, judged by `burnin parse` as a saved
//! output would be. The stand-in `ib_write_bw` prints perftest's own result block (its format
//! from tests/fixtures/perftest/) and is slow on one HCA; the verdict must name that HCA.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("burnin-loopback-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("bin")).expect("dir");
    d
}

fn tool(dir: &Path, name: &str, body: &str) {
    let p = dir.join("bin").join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("tool");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The phase's command as the runner renders it on `node`, with the plan's vars and `extra`.
fn rendered(id: &str, d: &Path, extra: &[(&str, &str)]) -> String {
    let plan = burnin::plan::default_plan();
    let spec = plan.find(id).expect("shipped");
    let mut values: BTreeMap<String, String> = plan.vars.clone();
    for (k, v) in [
        ("node", "node01"),
        ("gpus", "8"),
        ("dir", d.to_str().unwrap()),
    ]
    .iter()
    .chain(extra)
    {
        values.insert(k.to_string(), v.to_string());
    }
    burnin::plan::render(&spec.command, &values).expect("render")
}

/// Run `command` under sh with only the stand-ins and the system's basic tools on PATH;
/// (exit code, stdout and stderr together).
fn run(d: &Path, command: &str) -> (i32, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("PATH", format!("{}:/usr/bin:/bin", d.join("bin").display()))
        .output()
        .expect("sh");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// `burnin parse --kind KIND FILE` of `text`: its stdout.
fn parse(d: &Path, kind: &str, text: &str) -> String {
    let file = d.join("output.txt");
    std::fs::write(&file, text).expect("output");
    let out = Command::new(BIN)
        .args(["parse", kind])
        .arg(&file)
        .env("BURNIN_LOG", d.join("burnin.log"))
        .output()
        .expect("parse");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn l2_pairs_hcas_of_one_numa_node_and_names_the_slow_one() {
    let d = dir("l2");
    let calls = d.join("calls");
    // perftest's client block, as ib_write_bw -F --report_gbits -D 5 prints it; the server
    // (no host argument) prints its banner to its log and waits for the client.
    tool(
        &d,
        "ib_write_bw",
        &format!(
            r#"echo "$*" >> '{calls}'
dev=""; host=""; prev=""
for a in "$@"; do [ "$prev" = "-d" ] && dev=$a; prev=$a; host=$a; done
if [ "$host" != localhost ]; then echo " Device         : $dev"; sleep 1; exit 0; fi
bw=388.42; [ "$dev" = mlx5_3 ] && bw=191.07
printf -- '---------------------------------------------------------------------------------------\n'
printf '                    RDMA_Write BW Test\n'
printf ' Dual-port       : OFF\t\tDevice         : %s\n' "$dev"
printf ' Number of qps   : 1\t\tTransport type : IB\n'
printf -- '---------------------------------------------------------------------------------------\n'
printf ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n'
printf ' 65536      3705000          0.00               %s  \t\t   0.741000\n' "$bw"
printf -- '---------------------------------------------------------------------------------------\n'"#,
            calls = calls.display()
        ),
    );
    tool(
        &d,
        "nvidia-smi",
        "echo '0, 00000000:18:00.0'; echo '1, 00000000:2A:00.0'",
    );
    let cmd = rendered("L2", &d, &[("ib_devs", "mlx5_0 mlx5_1 mlx5_2 mlx5_3")]);
    let (code, out) = run(&d, &cmd);
    assert_eq!(code, 0, "{out}");
    // Two pairs, one at a time; each end GPUDirect from a GPU of the pair's NUMA node.
    let calls = std::fs::read_to_string(&calls).expect("calls");
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 4, "{calls}");
    assert!(
        lines[0].starts_with("-d mlx5_0 --use_cuda=0 -F --report_gbits -D 5 -p 18515"),
        "{calls}"
    );
    assert!(
        lines[1].starts_with("-d mlx5_1 --use_cuda=0") && lines[1].ends_with("localhost"),
        "{calls}"
    );
    assert!(
        lines[3].contains("-d mlx5_3") && lines[3].contains("-p 18516"),
        "{calls}"
    );
    let judged = parse(&d, "perftest", &out);
    let l2 = judged
        .lines()
        .find(|l| l.trim_start().starts_with("L2 "))
        .unwrap_or_else(|| panic!("{judged}"));
    assert!(l2.contains("FAIL"), "{l2}");
    assert!(l2.contains("mlx5_3 write 191"), "{l2}");
    assert!(!l2.contains("mlx5_1 188"), "{l2}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn l2_says_why_where_it_cannot_pair() {
    let d = dir("l2-none");
    let cmd = rendered("L2", &d, &[("ib_devs", "mlx5_0")]);
    let (code, out) = run(&d, &cmd);
    assert_eq!(code, 1);
    assert!(
        out.contains("loopback: mlx5_0 has no partner on NUMA node 0"),
        "{out}"
    );
    assert!(out.contains("no two HCAs share a NUMA node"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn l1_runs_nccl_with_p2p_and_shm_off() {
    let d = dir("l1");
    tool(
        &d,
        "all_reduce_perf",
        "echo \"P2P=$NCCL_P2P_DISABLE SHM=$NCCL_SHM_DISABLE DEBUG=$NCCL_DEBUG args=$*\"",
    );
    let cmd = rendered("L1", &d, &[("nccl_tests", "")]);
    let (code, out) = run(&d, &cmd);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("P2P=1 SHM=1 DEBUG=INFO args=-b 8 -e 8G -f 2 -g 8"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
