//! `burnin agent` on a node reads its RDMA ports and Ethernet interfaces from sysfs
//! (`--sysfs-root`, here a tree the test builds with the kernel's file names and formats), and a
//! node without a usable GPU driver (this machine) still streams them, saying why it has no GPUs.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use burnin::model::NodeFrame;
use burnin::wire::{Decoded, Decoder, WireMessage};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, format!("{text}\n")).expect("write");
}

#[test]
fn agent_streams_ports_from_sysfs() {
    let root = std::env::temp_dir().join(format!("burnin-agent-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let port = root.join("class/infiniband/mlx5_0/ports/1");
    write(&port.join("state"), "4: ACTIVE");
    write(&port.join("phys_state"), "5: LinkUp");
    write(&port.join("rate"), "200 Gb/sec (2X NDR)");
    write(&port.join("link_layer"), "InfiniBand");
    write(&port.join("counters/port_xmit_data"), "123456");
    write(&port.join("counters/port_rcv_data"), "654321");
    write(&port.join("counters/symbol_error"), "7");
    write(&root.join("class/infiniband/mlx5_0/device/numa_node"), "0");
    write(&root.join("class/net/bond0/bonding/mode"), "802.3ad 4");
    write(&root.join("class/net/bond0/operstate"), "up");
    write(&root.join("class/net/bond0/statistics/tx_bytes"), "1");
    write(&root.join("class/net/bond0/statistics/rx_bytes"), "2");

    let out = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args([
            "agent",
            "--frames",
            "8",
            "--interval",
            "250ms",
            "--sysfs-root",
        ])
        .arg(&root)
        .env("BURNIN_LOG", root.join("log"))
        .output()
        .expect("run agent");
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf8");
    let mut d = Decoder::new();
    let msgs: Vec<WireMessage> = text
        .lines()
        .filter_map(|l| match d.decode(l) {
            Ok(Decoded::Message(m)) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(d.garbled(), 0);
    let frames: Vec<&NodeFrame> = msgs
        .iter()
        .filter_map(|m| match m {
            WireMessage::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 8, "{text}");
    // Ports are read on their own thread, no faster than once a second (fabric::MIN_PERIOD);
    // the last frame, 1.75 s in, has a later reading than the first.
    let nic = &frames[7].nics[0];
    assert_eq!(nic.label(), "mlx5_0/1");
    assert_eq!(nic.rate_gbps, Some(200.0));
    assert!(nic.is_up());
    assert_eq!(nic.counters.get("symbol_error"), Some(7));
    assert_eq!(
        nic.tx_bytes_per_sec,
        Some(0.0),
        "static counters: zero rate after the first read"
    );
    assert_eq!(
        frames[0].nics[0].tx_bytes_per_sec, None,
        "no rate from one read"
    );
    assert_eq!(frames[7].netdevs[0].iface, "bond0");
    // Without an NVIDIA driver the agent says so once and streams with no GPUs.
    if !Path::new("/proc/driver/nvidia/version").exists() {
        assert!(
            msgs.iter()
                .any(|m| matches!(m, WireMessage::Error(e) if e.starts_with("NVML: "))),
            "{text}"
        );
        assert!(frames.iter().all(|f| f.gpus.is_empty()));
    }
}

/// `burnin bench agent` measures the real NVML path only: without a driver it says why and
/// fails, rather than printing a figure of something else; with one, it reports the slots and
/// the `--stats` figures.
#[test]
fn bench_agent_measures_nvml_or_fails_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args([
            "bench",
            "agent",
            "--slots",
            "8",
            "--interval",
            "100ms",
            "--frames",
            "12",
        ])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run bench agent");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if Path::new("/proc/driver/nvidia/version").exists() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stdout.contains("burnin bench agent: 8 GPU slots over "),
            "{stdout}"
        );
        assert!(stdout.contains("12 frames"), "{stdout}");
        assert!(
            stdout.contains("96 GPU-samples; process CPU per GPU-sample after frame 10: "),
            "{stdout}"
        );
        return;
    }
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("burnin bench agent: NVML:"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
