//! InfiniBand/RoCE ports from sysfs, without root: every RDMA device and port under
//! `<root>/class/infiniband/*/ports/*/` — state, physical state, rate, link layer — with the port
//! counters (`counters/`) and, where the driver has them, `hw_counters/` (RoCE retransmission
//! and congestion). Units follow the kernel's sysfs ABI (Documentation/ABI/stable/sysfs-class-
//! infiniband): `port_xmit_data`/`port_rcv_data` count 4-octet words, so bytes = value × 4.
//! Data rates come from deltas between reads; a counter that goes down is a wrap when it was near
//! the top of its width (32 or 64 bits), otherwise a reset, and then no rate is reported for that
//! read rather than a huge or negative one. Error counters are sent cumulative; the console
//! computes their rise.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::model::{NetSample, NicSample, PortCounters};

/// Counters read from `/sys/class/net/IF/statistics/`.
pub const NET_COUNTERS: &[&str] = &[
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_crc_errors",
    "rx_missed_errors",
    "tx_carrier_errors",
];

/// Error and congestion counters read from `counters/`, when present.
pub const PORT_COUNTERS: &[&str] = &[
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_wait",
];

/// Counters read from `hw_counters/` (RoCE/retransmission/congestion), when present.
pub const HW_COUNTERS: &[&str] = &[
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "rp_cnp_handled",
    "roce_adp_retrans",
    "rnr_nak_retry_err",
];

/// Parse `4: ACTIVE` → `ACTIVE` (also plain `ACTIVE`).
pub fn parse_state(text: &str) -> Option<String> {
    let t = text.trim();
    let word = t.split_once(':').map_or(t, |(_, w)| w.trim());
    (!word.is_empty()).then(|| word.to_string())
}

/// Parse `400 Gb/sec (4X NDR)` → 400.0 (Gb/s). Also `2.5 Gb/sec (1X SDR)`.
pub fn parse_rate_gbps(text: &str) -> Option<f32> {
    let mut it = text.split_whitespace();
    let v: f32 = it.next()?.parse().ok()?;
    match it.next()? {
        "Gb/sec" => Some(v),
        "Mb/sec" => Some(v / 1000.0),
        _ => None,
    }
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(path: &Path) -> Option<u64> {
    read_trim(path)?.parse().ok()
}

/// The increase of a counter from `old` to `new`: a wrap when `old` was in the top 1/16 of a
/// 32- or 64-bit range, `None` for a reset (counters cleared, driver reloaded).
pub fn counter_delta(old: u64, new: u64) -> Option<u64> {
    if new >= old {
        return Some(new - old);
    }
    const TOP32: u64 = u32::MAX as u64;
    if old <= TOP32 && old > TOP32 - TOP32 / 16 {
        return Some(TOP32 - old + new + 1);
    }
    if old > u64::MAX - u64::MAX / 16 {
        return Some(u64::MAX - old + new + 1);
    }
    None
}

#[derive(Debug, Clone)]
struct PrevNet {
    tx: Option<u64>,
    rx: Option<u64>,
    at: Instant,
}

#[derive(Debug, Clone)]
struct Prev {
    xmit_words: Option<u64>,
    rcv_words: Option<u64>,
    at: Instant,
}

/// Reads every RDMA port under a sysfs root and remembers the last read for rates.
#[derive(Debug)]
pub struct FabricReader {
    root: PathBuf,
    prev: HashMap<(String, u32), Prev>,
    prev_net: HashMap<String, PrevNet>,
}

impl FabricReader {
    /// Read from `<root>/class/infiniband` (root `/sys` on a node; another tree in tests and in
    /// containers that mount the host's /sys elsewhere).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            prev: HashMap::new(),
            prev_net: HashMap::new(),
        }
    }

    /// Ethernet interfaces worth watching: bonds and physical ports (those with a `device`
    /// link), not loopback, bridges or veths.
    fn netdevs(&self) -> Vec<(String, PathBuf)> {
        let base = self.root.join("class/net");
        let Ok(entries) = std::fs::read_dir(&base) else {
            return Vec::new();
        };
        let mut out: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                let p = e.path();
                p.join("bonding").exists() || p.join("device").exists()
            })
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        out.sort();
        out
    }

    /// One read of every watched Ethernet interface, stamped `now`.
    pub fn sample_net_at(&mut self, now: Instant) -> Vec<NetSample> {
        let mut out = Vec::new();
        for (iface, dir) in self.netdevs() {
            let stats = dir.join("statistics");
            let tx = read_u64(&stats.join("tx_bytes"));
            let rx = read_u64(&stats.join("rx_bytes"));
            let (tx_rate, rx_rate) = match self.prev_net.get(&iface) {
                Some(p) => {
                    let dt = now.saturating_duration_since(p.at).as_secs_f64();
                    let rate = |old: Option<u64>, new: Option<u64>| {
                        let d = counter_delta(old?, new?)?;
                        (dt > 0.0).then(|| d as f64 / dt)
                    };
                    (rate(p.tx, tx), rate(p.rx, rx))
                }
                None => (None, None),
            };
            self.prev_net
                .insert(iface.clone(), PrevNet { tx, rx, at: now });
            let mut counters = PortCounters::default();
            for name in NET_COUNTERS {
                if let Some(v) = read_u64(&stats.join(name)) {
                    counters.set(name, v);
                }
            }
            out.push(NetSample {
                iface,
                operstate: read_trim(&dir.join("operstate")),
                // `speed` reads -1 (or fails) when the link is down or the driver does not say.
                speed_mbps: read_trim(&dir.join("speed"))
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|v| *v > 0)
                    .map(|v| v as u64),
                tx_bytes_per_sec: tx_rate,
                rx_bytes_per_sec: rx_rate,
                counters,
            });
        }
        out
    }

    fn ports(&self) -> Vec<(String, u32, PathBuf)> {
        let base = self.root.join("class/infiniband");
        let Ok(devices) = std::fs::read_dir(&base) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for dev in devices.filter_map(Result::ok) {
            let name = dev.file_name().to_string_lossy().into_owned();
            let Ok(ports) = std::fs::read_dir(dev.path().join("ports")) else {
                continue;
            };
            for p in ports.filter_map(Result::ok) {
                if let Ok(n) = p.file_name().to_string_lossy().parse::<u32>() {
                    out.push((name.clone(), n, p.path()));
                }
            }
        }
        out.sort();
        out
    }

    /// One read of every port, stamped `now`.
    pub fn sample_at(&mut self, now: Instant) -> Vec<NicSample> {
        let mut out = Vec::new();
        for (device, port, dir) in self.ports() {
            let mut counters = PortCounters::default();
            for name in PORT_COUNTERS {
                if let Some(v) = read_u64(&dir.join("counters").join(name)) {
                    counters.set(name, v);
                }
            }
            for name in HW_COUNTERS {
                if let Some(v) = read_u64(&dir.join("hw_counters").join(name)) {
                    counters.set(name, v);
                }
            }
            let xmit = read_u64(&dir.join("counters/port_xmit_data"));
            let rcv = read_u64(&dir.join("counters/port_rcv_data"));
            let key = (device.clone(), port);
            let (tx, rx) = match self.prev.get(&key) {
                Some(p) => {
                    let dt = now.saturating_duration_since(p.at).as_secs_f64();
                    let rate = |old: Option<u64>, new: Option<u64>| {
                        let d = counter_delta(old?, new?)?;
                        (dt > 0.0).then(|| d as f64 * 4.0 / dt)
                    };
                    (rate(p.xmit_words, xmit), rate(p.rcv_words, rcv))
                }
                None => (None, None),
            };
            self.prev.insert(
                key,
                Prev {
                    xmit_words: xmit,
                    rcv_words: rcv,
                    at: now,
                },
            );
            let numa = read_trim(
                &self
                    .root
                    .join("class/infiniband")
                    .join(&device)
                    .join("device/numa_node"),
            )
            .and_then(|s| s.parse::<i32>().ok())
            .filter(|n| *n >= 0);
            out.push(NicSample {
                device,
                port,
                state: read_trim(&dir.join("state"))
                    .as_deref()
                    .and_then(parse_state),
                phys_state: read_trim(&dir.join("phys_state"))
                    .as_deref()
                    .and_then(parse_state),
                rate_gbps: read_trim(&dir.join("rate"))
                    .as_deref()
                    .and_then(parse_rate_gbps),
                link_layer: read_trim(&dir.join("link_layer")),
                numa_node: numa,
                tx_bytes_per_sec: tx,
                rx_bytes_per_sec: rx,
                counters,
            });
        }
        out
    }

    /// One read of every port, now.
    pub fn sample(&mut self) -> Vec<NicSample> {
        self.sample_at(Instant::now())
    }
}

/// The newest fabric reading, shared between its thread and the sampling loop.
type Latest = std::sync::Arc<std::sync::Mutex<(Vec<NicSample>, Vec<NetSample>)>>;

/// The fabric thread reads no faster than this, whatever the agent's interval: mlx5's
/// `hw_counters` are answered by the adapter's firmware, a sysfs read cost ~9 µs of CPU on the
/// H200 VM, and a port's rate needs no finer grain than a second.
pub const MIN_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads the fabric on a thread of its own every `period`, so sysfs reads (tens of µs each in a
/// VM) stay out of the GPU tick path; frames take the newest reading.
pub struct FabricThread {
    latest: Latest,
}

impl FabricThread {
    /// Start reading `root` every `period`. The thread ends with the process.
    pub fn start(root: PathBuf, period: std::time::Duration) -> Self {
        let mut reader = FabricReader::new(root);
        // The first read happens now, so the first frame already lists the ports.
        let first = Instant::now();
        let latest: Latest = std::sync::Arc::new(std::sync::Mutex::new((
            reader.sample_at(first),
            reader.sample_net_at(first),
        )));
        let shared = std::sync::Arc::clone(&latest);
        let spawned = std::thread::Builder::new()
            .name("fabric".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(period);
                    let now = Instant::now();
                    let nics = reader.sample_at(now);
                    let nets = reader.sample_net_at(now);
                    if let Ok(mut l) = shared.lock() {
                        *l = (nics, nets);
                    }
                    crate::telemetry::cpu::FABRIC_THREAD.publish();
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the fabric thread: {e}");
        }
        Self { latest }
    }

    /// The newest reading (empty until the first one is done).
    pub fn latest(&self) -> (Vec<NicSample>, Vec<NetSample>) {
        self.latest.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A fake sysfs tree with the kernel's file names and formats.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let root =
                std::env::temp_dir().join(format!("burnin-sysfs-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            Tree(root)
        }
        fn port(&self, dev: &str, port: u32) -> PathBuf {
            self.0.join(format!("class/infiniband/{dev}/ports/{port}"))
        }
        fn write(&self, rel: PathBuf, text: &str) {
            if let Some(dir) = rel.parent() {
                std::fs::create_dir_all(dir).expect("mkdir");
            }
            std::fs::write(rel, format!("{text}\n")).expect("write");
        }
        fn port_files(&self, dev: &str, port: u32, xmit: u64, rcv: u64, symbol: u64, hw: bool) {
            let p = self.port(dev, port);
            self.write(p.join("state"), "4: ACTIVE");
            self.write(p.join("phys_state"), "5: LinkUp");
            self.write(p.join("rate"), "400 Gb/sec (4X NDR)");
            self.write(p.join("link_layer"), "InfiniBand");
            self.write(p.join("counters/port_xmit_data"), &xmit.to_string());
            self.write(p.join("counters/port_rcv_data"), &rcv.to_string());
            self.write(p.join("counters/symbol_error"), &symbol.to_string());
            self.write(p.join("counters/link_downed"), "0");
            if hw {
                self.write(p.join("hw_counters/np_cnp_sent"), "17");
            }
            self.write(
                self.0
                    .join(format!("class/infiniband/{dev}/device/numa_node")),
                "1",
            );
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn every_counter_read_has_a_typed_field() {
        for name in PORT_COUNTERS.iter().chain(HW_COUNTERS).chain(NET_COUNTERS) {
            assert!(PortCounters::default().set(name, 1), "{name}");
        }
    }

    #[test]
    fn setting_a_counter_by_index_is_setting_it_by_name() {
        for (i, name) in PortCounters::NAMES.iter().enumerate() {
            let (mut by_index, mut by_name) = (PortCounters::default(), PortCounters::default());
            by_index.set_at(i, 7);
            assert!(by_name.set(name, 7));
            assert_eq!(by_index, by_name, "{name}");
        }
        let mut past = PortCounters::default();
        past.set_at(PortCounters::NAMES.len(), 7);
        assert!(past.is_empty());
    }

    #[test]
    fn parses_kernel_formats() {
        assert_eq!(parse_state("4: ACTIVE").as_deref(), Some("ACTIVE"));
        assert_eq!(parse_state("5: LinkUp").as_deref(), Some("LinkUp"));
        assert_eq!(parse_rate_gbps("400 Gb/sec (4X NDR)"), Some(400.0));
        assert_eq!(parse_rate_gbps("200 Gb/sec (2X NDR)"), Some(200.0));
        assert_eq!(parse_rate_gbps("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(parse_rate_gbps("fast"), None);
    }

    #[test]
    fn rates_from_deltas_in_four_byte_words() {
        let t = Tree::new("rates");
        t.port_files("mlx5_0", 1, 1_000, 2_000, 0, true);
        t.port_files("mlx5_1", 1, 0, 0, 0, false);
        let mut r = FabricReader::new(&t.0);
        let t0 = Instant::now();
        let first = r.sample_at(t0);
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].tx_bytes_per_sec, None, "no rate from one read");
        assert_eq!(first[0].state.as_deref(), Some("ACTIVE"));
        assert_eq!(first[0].rate_gbps, Some(400.0));
        assert_eq!(first[0].numa_node, Some(1));
        assert_eq!(first[0].counters.get("np_cnp_sent"), Some(17));
        assert_eq!(
            first[1].counters.get("np_cnp_sent"),
            None,
            "no hw_counters: fine"
        );
        // 12.5e9 words in 2 s = 50e9 bytes in 2 s = 25 GB/s.
        t.port_files(
            "mlx5_0",
            1,
            1_000 + 12_500_000_000,
            2_000 + 2_500_000_000,
            3,
            true,
        );
        let second = r.sample_at(t0 + Duration::from_secs(2));
        assert_eq!(second[0].tx_bytes_per_sec, Some(25e9));
        assert_eq!(second[0].rx_bytes_per_sec, Some(5e9));
        assert_eq!(second[0].counters.get("symbol_error"), Some(3));
    }

    #[test]
    fn wraps_are_rates_and_resets_are_not() {
        assert_eq!(counter_delta(10, 15), Some(5));
        assert_eq!(counter_delta(u32::MAX as u64 - 4, 5), Some(10));
        assert_eq!(counter_delta(u64::MAX - 4, 5), Some(10));
        assert_eq!(counter_delta(1_000_000, 10), None, "reset");
        let t = Tree::new("reset");
        t.port_files("mlx5_0", 1, 5_000_000, 0, 0, false);
        let mut r = FabricReader::new(&t.0);
        let t0 = Instant::now();
        r.sample_at(t0);
        t.port_files("mlx5_0", 1, 100, 0, 0, false);
        let s = r.sample_at(t0 + Duration::from_secs(1));
        assert_eq!(
            s[0].tx_bytes_per_sec, None,
            "a reset gives no rate, not a huge one"
        );
        t.port_files("mlx5_0", 1, 500, 0, 0, false);
        let s = r.sample_at(t0 + Duration::from_secs(2));
        assert_eq!(
            s[0].tx_bytes_per_sec,
            Some(1600.0),
            "rates resume after a reset"
        );
    }

    #[test]
    fn ethernet_bonds_and_ports_but_not_loopback() {
        let t = Tree::new("net");
        let net = t.0.join("class/net");
        for (iface, marker) in [
            ("bond0", "bonding/mode"),
            ("eth2", "device/vendor"),
            ("lo", ""),
        ] {
            if !marker.is_empty() {
                t.write(net.join(iface).join(marker), "x");
            }
            t.write(net.join(iface).join("operstate"), "up");
            t.write(
                net.join(iface).join("speed"),
                if iface == "bond0" { "200000" } else { "-1" },
            );
            t.write(net.join(iface).join("statistics/tx_bytes"), "1000");
            t.write(net.join(iface).join("statistics/rx_bytes"), "0");
            t.write(net.join(iface).join("statistics/rx_dropped"), "4");
        }
        let mut r = FabricReader::new(&t.0);
        let t0 = Instant::now();
        let first = r.sample_net_at(t0);
        let names: Vec<&str> = first.iter().map(|n| n.iface.as_str()).collect();
        assert_eq!(names, ["bond0", "eth2"]);
        assert_eq!(first[0].speed_mbps, Some(200_000));
        assert_eq!(first[1].speed_mbps, None, "-1 means unknown");
        assert_eq!(first[0].counters.get("rx_dropped"), Some(4));
        t.write(net.join("bond0/statistics/tx_bytes"), "5001000");
        let second = r.sample_net_at(t0 + Duration::from_millis(500));
        assert_eq!(second[0].tx_bytes_per_sec, Some(10e6));
    }

    #[test]
    fn no_rdma_devices_is_an_empty_list() {
        let mut r = FabricReader::new("/nonexistent-sysfs-root");
        assert!(r.sample().is_empty());
    }
}
