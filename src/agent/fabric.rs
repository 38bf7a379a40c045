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

/// Attribute files kept open between reads. Opening a sysfs file walks its path through the
/// class symlinks, which is most of a read's cost (about 9 µs of CPU on the H200 VM, against
/// one `pread` at offset 0, which makes sysfs call the attribute's `show` again). A file that
/// is missing is remembered as missing until the next listing, so an absent `hw_counters` is
/// not looked up every second either.
#[derive(Debug)]
struct HeldFiles {
    files: HashMap<PathBuf, Option<std::fs::File>>,
    buf: Vec<u8>,
    cap: usize,
}

impl Default for HeldFiles {
    fn default() -> Self {
        Self {
            files: HashMap::new(),
            buf: Vec::new(),
            cap: held_files_cap(),
        }
    }
}

/// Open files the reader keeps at most: a node with 8 RDMA ports and 6 interfaces holds about
/// 250; past this (or half the process's open-file limit, if lower), files are opened for each
/// read instead, so NVML and the pipes never meet an fd shortage.
const MAX_HELD_FILES: usize = 512;

/// [`MAX_HELD_FILES`], or half the soft limit on open files when that is lower.
fn held_files_cap() -> usize {
    // SAFETY: getrlimit writes into the struct we own.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `limit` is a valid, writable rlimit for the call's duration.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return MAX_HELD_FILES / 4;
    }
    usize::try_from(limit.rlim_cur / 2)
        .unwrap_or(MAX_HELD_FILES)
        .min(MAX_HELD_FILES)
}

impl HeldFiles {
    fn read_trim(&mut self, path: &Path) -> Option<String> {
        use std::os::unix::fs::FileExt;
        if !self.files.contains_key(path) {
            let file = std::fs::File::open(path).ok();
            if self.files.len() >= self.cap {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut file?, &mut text).ok()?;
                return Some(text.trim().to_string());
            }
            self.files.insert(path.to_path_buf(), file);
        }
        let file = self.files.get(path)?.as_ref()?;
        // sysfs attributes are at most a page.
        self.buf.resize(4096, 0);
        match file.read_at(&mut self.buf, 0) {
            Ok(n) => std::str::from_utf8(&self.buf[..n])
                .ok()
                .map(|t| t.trim().to_string()),
            Err(_) => {
                // Gone (device removed) or failing: open afresh next time.
                self.files.remove(path);
                None
            }
        }
    }

    fn read_u64(&mut self, path: &Path) -> Option<u64> {
        self.read_trim(path)?.parse().ok()
    }

    /// Forget missing files (they may exist now) and files of devices no longer listed.
    fn refresh(&mut self, keep: impl Fn(&Path) -> bool) {
        self.files.retain(|p, f| f.is_some() && keep(p));
    }
}

/// Every how many reads the device and interface lists are read again (hot-plug, a bond
/// created during the run); between them, the held files are read.
const RELIST_EVERY: u32 = 10;

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
    held: HeldFiles,
    /// Ports and interfaces as last listed, and reads since.
    listed_ports: Vec<(String, u32, PathBuf)>,
    listed_netdevs: Vec<(String, PathBuf)>,
    reads_since_listing: [Option<u32>; 2],
}

impl FabricReader {
    /// Read from `<root>/class/infiniband` (root `/sys` on a node; another tree in tests and in
    /// containers that mount the host's /sys elsewhere).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            prev: HashMap::new(),
            prev_net: HashMap::new(),
            held: HeldFiles::default(),
            listed_ports: Vec::new(),
            listed_netdevs: Vec::new(),
            reads_since_listing: [None; 2],
        }
    }

    /// Whether list `which` (0 ports, 1 interfaces) is due to be read again; counts the read.
    fn relist_due(&mut self, which: usize) -> bool {
        let n = &mut self.reads_since_listing[which];
        let due = n.is_none_or(|k| k + 1 >= RELIST_EVERY);
        *n = Some(if due { 0 } else { n.unwrap_or(0) + 1 });
        due
    }

    /// After a listing: drop held files that belong to nothing listed, and forget misses.
    fn refresh_held(&mut self) {
        let dirs: Vec<PathBuf> = self
            .listed_ports
            .iter()
            .map(|(d, _, _)| self.root.join("class/infiniband").join(d))
            .chain(self.listed_netdevs.iter().map(|(_, p)| p.clone()))
            .collect();
        self.held.refresh(|p| dirs.iter().any(|d| p.starts_with(d)));
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
        if self.relist_due(1) {
            self.listed_netdevs = self.netdevs();
            self.refresh_held();
        }
        let mut out = Vec::new();
        for (iface, dir) in self.listed_netdevs.clone() {
            let stats = dir.join("statistics");
            let tx = self.held.read_u64(&stats.join("tx_bytes"));
            let rx = self.held.read_u64(&stats.join("rx_bytes"));
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
                if let Some(v) = self.held.read_u64(&stats.join(name)) {
                    counters.set(name, v);
                }
            }
            out.push(NetSample {
                iface,
                operstate: self.held.read_trim(&dir.join("operstate")),
                // `speed` reads -1 (or fails) when the link is down or the driver does not say.
                speed_mbps: self
                    .held
                    .read_trim(&dir.join("speed"))
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
        if self.relist_due(0) {
            self.listed_ports = self.ports();
            self.refresh_held();
        }
        let mut out = Vec::new();
        for (device, port, dir) in self.listed_ports.clone() {
            let mut counters = PortCounters::default();
            for name in PORT_COUNTERS {
                if let Some(v) = self.held.read_u64(&dir.join("counters").join(name)) {
                    counters.set(name, v);
                }
            }
            for name in HW_COUNTERS {
                if let Some(v) = self.held.read_u64(&dir.join("hw_counters").join(name)) {
                    counters.set(name, v);
                }
            }
            let xmit = self.held.read_u64(&dir.join("counters/port_xmit_data"));
            let rcv = self.held.read_u64(&dir.join("counters/port_rcv_data"));
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
            let numa = self
                .held
                .read_trim(
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
                state: self
                    .held
                    .read_trim(&dir.join("state"))
                    .as_deref()
                    .and_then(parse_state),
                phys_state: self
                    .held
                    .read_trim(&dir.join("phys_state"))
                    .as_deref()
                    .and_then(parse_state),
                rate_gbps: self
                    .held
                    .read_trim(&dir.join("rate"))
                    .as_deref()
                    .and_then(parse_rate_gbps),
                link_layer: self.held.read_trim(&dir.join("link_layer")),
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
                crate::agent::cpu::FABRIC_THREAD.register();
                loop {
                    std::thread::sleep(period);
                    let now = Instant::now();
                    let nics = reader.sample_at(now);
                    let nets = reader.sample_net_at(now);
                    if let Ok(mut l) = shared.lock() {
                        *l = (nics, nets);
                    }
                    crate::agent::cpu::FABRIC_THREAD.publish();
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
    fn held_files_follow_ports_that_come_go_and_grow_counters() {
        let t = Tree::new("held");
        t.port_files("mlx5_0", 1, 0, 0, 0, false);
        let mut r = FabricReader::new(&t.0);
        let t0 = Instant::now();
        let at = |k: u64| t0 + Duration::from_secs(k);
        let first = r.sample_at(at(0));
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].counters.get("np_cnp_sent"), None);
        // Between listings: a new port, a counter file that appears, a changed value.
        t.port_files("mlx5_1", 1, 0, 0, 0, false);
        t.write(t.port("mlx5_0", 1).join("hw_counters/np_cnp_sent"), "3");
        t.write(t.port("mlx5_0", 1).join("counters/symbol_error"), "9");
        let second = r.sample_at(at(1));
        assert_eq!(second.len(), 1, "the list is kept between listings");
        assert_eq!(
            second[0].counters.get("symbol_error"),
            Some(9),
            "a held file reads the new value"
        );
        let mut k = 2;
        let relisted = loop {
            let s = r.sample_at(at(k));
            if s.len() == 2 || k > u64::from(RELIST_EVERY) + 1 {
                break s;
            }
            k += 1;
        };
        assert_eq!(relisted.len(), 2, "a new port is found at the next listing");
        assert_eq!(relisted[0].counters.get("np_cnp_sent"), Some(3));
        // A device that goes away leaves the list, and its files are let go.
        std::fs::remove_dir_all(t.0.join("class/infiniband/mlx5_1")).expect("rm");
        let mut gone = relisted;
        for j in 0..=RELIST_EVERY {
            gone = r.sample_at(at(k + 1 + u64::from(j)));
        }
        assert_eq!(gone.len(), 1);
        assert!(
            r.held
                .files
                .keys()
                .all(|p| !p.to_string_lossy().contains("mlx5_1"))
        );
    }

    #[test]
    fn past_the_cap_files_are_read_and_closed() {
        let t = Tree::new("cap");
        let mut held = HeldFiles {
            cap: 2,
            ..HeldFiles::default()
        };
        for k in 0..4 {
            t.write(t.0.join(format!("f{k}")), &k.to_string());
        }
        let values: Vec<Option<u64>> = (0..4)
            .map(|k| held.read_u64(&t.0.join(format!("f{k}"))))
            .collect();
        assert_eq!(values, [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(held.files.len(), 2, "only two held");
        assert!(held_files_cap() >= 1 && held_files_cap() <= MAX_HELD_FILES);
    }

    #[test]
    fn a_held_sysfs_file_reads_the_kernels_new_value() {
        // The real kernel's sysfs, not a tree of regular files: a `pread` at offset 0 of an
        // open attribute must call its `show` again. Loopback exists in every network
        // namespace, and a datagram to it raises its packet count.
        let path = Path::new("/sys/class/net/lo/statistics/tx_packets");
        let mut held = HeldFiles::default();
        let Some(before) = held.read_u64(path) else {
            assert!(
                std::env::var("BURNIN_REQUIRE_REAL").is_err(),
                "no {} to read",
                path.display()
            );
            return;
        };
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let to = sock.local_addr().expect("addr");
        for _ in 0..3 {
            sock.send_to(b"x", to).expect("send");
        }
        let after = held.read_u64(path).expect("second read");
        assert!(after >= before + 3, "{before} then {after}");
        assert_eq!(held.files.len(), 1, "one file, held");
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
