//! Issue 26's caps and checks, held on every case.

use super::*;

/// Most GPUs the store keeps for one node.
pub(crate) const MAX_GPUS_PER_NODE: usize = burnin::store::MAX_GPUS_PER_NODE as usize;

/// Most RDMA ports, and most Ethernet interfaces, the store keeps for one node.
pub(crate) const MAX_PORTS_PER_NODE: usize = burnin::store::MAX_PORTS_PER_NODE;

/// One hostile frame: GPU indices, RDMA ports as (device number, port), interface numbers.
pub(crate) type HostileFrame = (Vec<u32>, Vec<(u16, u32)>, Vec<u16>);

/// A hostile agent's stream: a hello naming `gpus`, then one frame per entry, each with GPUs of
/// those indices, RDMA ports of those (device, port) names and interfaces of those names,
/// written and read back through the wire as the fleet reads it.
pub(crate) fn hostile_agent(hello_gpus: &[u32], frames: &[HostileFrame]) -> Vec<WireMessage> {
    use burnin::model::{GpuInfo, GpuSample, NetSample, NicSample, NodeFrame, NodeHello};
    let mut text = wire::encode(&WireMessage::Hello(NodeHello {
        node: "evil".into(),
        host: "evil".into(),
        agent_version: "burnin 0.1.0".into(),
        driver: None,
        cuda: None,
        gpus: hello_gpus
            .iter()
            .map(|&index| GpuInfo {
                index,
                name: "NVIDIA H200".into(),
                uuid: format!("GPU-{index}"),
                power_limit_watts: None,
                sm_clock_max_mhz: None,
                memory_total_bytes: None,
                nvlink_links: None,
                identity: Default::default(),
            })
            .collect(),
        topology: None,
        system: None,
        unavailable: Vec::new(),
    }));
    for (i, (gpus, ports, ifaces)) in frames.iter().enumerate() {
        text.push_str(&wire::encode(&WireMessage::Frame(NodeFrame {
            node: "evil".into(),
            at_ms: T0_MS + i as u64 * 1000,
            gpus: gpus
                .iter()
                .map(|&index| GpuSample {
                    index,
                    power_avg_watts: Some(100.0),
                    ..GpuSample::default()
                })
                .collect(),
            nics: ports
                .iter()
                .map(|&(d, port)| NicSample {
                    device: format!("mlx5_{d}"),
                    port,
                    ..NicSample::default()
                })
                .collect(),
            netdevs: ifaces
                .iter()
                .map(|&n| NetSample {
                    iface: format!("eth{n}"),
                    ..NetSample::default()
                })
                .collect(),
        })));
    }
    let lines = stream_lines(text.as_bytes());
    let mut d = Decoder::new();
    lines
        .iter()
        .filter_map(|l| match d.decode(l) {
            Ok(Decoded::Message(m)) => Some(m),
            _ => None,
        })
        .collect()
}

/// Frames with many distinct GPU indices, RDMA ports and interfaces.
pub(crate) fn hostile_frames() -> impl Strategy<Value = (Vec<u32>, Vec<HostileFrame>)> {
    use proptest::collection::vec;
    (
        vec(any::<u32>(), 0..200),
        vec(
            (
                vec(any::<u32>(), 0..16),
                vec((any::<u16>(), any::<u32>()), 0..16),
                vec(any::<u16>(), 0..16),
            ),
            1..60,
        ),
    )
}

/// The store of a console fed `messages` from one node.
pub(crate) fn store_after(messages: Vec<WireMessage>) -> ClusterStore {
    let mut store = ClusterStore::new();
    for ev in fleet_events("node01", 8, messages) {
        store.ingest(ev);
    }
    store
}

proptest! {
    #![proptest_config(config("caps"))]

    /// However many GPU indices an agent names, in its hello or its frames, a node holds at
    /// most [`MAX_GPUS_PER_NODE`].
    #[test]
    fn a_node_never_holds_more_than_64_gpus((hello, frames) in hostile_frames()) {
        cap_memory();
        let store = store_after(hostile_agent(&hello, &frames));
        let node = store.node("node01").expect("the node");
        prop_assert!(node.gpus.len() <= MAX_GPUS_PER_NODE, "{} GPUs", node.gpus.len());
    }

    /// However many RDMA ports and interfaces an agent names, a node holds at most
    /// [`MAX_PORTS_PER_NODE`] of each.
    #[test]
    fn a_node_never_holds_more_than_64_ports_or_interfaces((hello, frames) in hostile_frames()) {
        cap_memory();
        let store = store_after(hostile_agent(&hello, &frames));
        let node = store.node("node01").expect("the node");
        prop_assert!(node.nics.len() <= MAX_PORTS_PER_NODE, "{} RDMA ports", node.nics.len());
        prop_assert!(node.netdevs.len() <= MAX_PORTS_PER_NODE, "{} interfaces", node.netdevs.len());
    }
}

/// `text` (TOML) with its `n`-th number (tables in key order, as `toml::Value` keeps them) set to
/// `value`; `None` past the last.
pub(crate) fn with_number(text: &str, n: usize, value: f64) -> Option<String> {
    /// Set the `n`-th number under `v`; counts down `n` as it goes.
    fn walk(v: &mut toml::Value, n: &mut usize, value: f64) -> bool {
        match v {
            toml::Value::Integer(_) | toml::Value::Float(_) => {
                if *n == 0 {
                    *v = toml::Value::Float(value);
                    return true;
                }
                *n -= 1;
                false
            }
            toml::Value::Array(a) => a.iter_mut().any(|x| walk(x, n, value)),
            toml::Value::Table(t) => t.iter_mut().any(|(_, x)| walk(x, n, value)),
            _ => false,
        }
    }
    let mut doc: toml::Value = toml::from_str(text).ok()?;
    let mut n = n;
    walk(&mut doc, &mut n, value).then(|| toml::to_string(&doc).expect("TOML again"))
}

/// `burnin.example.toml` with the commented-out `key = value` lines of its active sections
/// brought to life (a section whose header is commented out, `# [prometheus]`, stays off).
pub(crate) fn example_inventory_uncommented() -> String {
    let text = std::fs::read_to_string(root().join("burnin.example.toml")).expect("example");
    let mut active = true;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            active = true;
        } else if t.starts_with("# [") {
            active = false;
        }
        let key_value = t.strip_prefix("# ").filter(|rest| {
            rest.split_once(" = ").is_some_and(|(k, _)| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            })
        });
        match key_value {
            Some(rest) if active => out.push(rest),
            _ => out.push(line),
        }
    }
    out.join("\n")
}

proptest! {
    #![proptest_config(config("non-finite-config"))]

    /// Any number of the inventory (every key of the example set) made `nan`, `inf` or `-inf`
    /// is an error where it is read.
    #[test]
    fn inventory_rejects_non_finite_numbers(n in 0..64usize, v in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        cap_memory();
        let base = example_inventory_uncommented();
        prop_assert!(Inventory::parse("burnin.toml", &base).is_ok(), "the example with every key set reads");
        if let Some(text) = with_number(&base, n, v) {
            prop_assert!(Inventory::parse("burnin.toml", &text).is_err(), "{v} read as a number:\n{text}");
        }
    }

    /// Any number of the shipped plan (gate values, percentages, counts) made `nan`, `inf` or
    /// `-inf` is an error where it is read.
    #[test]
    fn plan_rejects_non_finite_numbers(n in 0..256usize, v in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        cap_memory();
        let base = std::fs::read_to_string(root().join("plans/default.toml")).expect("plan");
        if let Some(text) = with_number(&base, n, v) {
            prop_assert!(Plan::parse("plan.toml", &text).is_err(), "{v} read as a number");
        }
    }

    /// Every node name an inventory yields, whatever its mode, is safe as a file name in the
    /// record (`logs/<phase>/<node>.log`): not empty, no `/` or `\`, not `.` or `..`, no
    /// control character, at most 255 bytes.
    #[test]
    fn inventory_node_names_are_safe_file_names(
        c in case(Family::Inventory),
        mode in prop_oneof![Just("local"), Just("sim"), Just("agent"), Just("smi")],
    ) {
        cap_memory();
        let text = format!("{}\n[[node]]\nmode = \"{mode}\"\nhost = \"../../{}\"\n", c.text(), mode);
        for text in [c.text(), text] {
            if let Ok(inv) = Inventory::parse("burnin.toml", &text) {
                for n in &inv.nodes {
                    let name = n.name.as_str();
                    prop_assert!(
                        !name.is_empty()
                            && name.len() <= 255
                            && name != "."
                            && name != ".."
                            && !name.contains(['/', '\\'])
                            && !name.chars().any(char::is_control),
                        "node name {:?}", preview(name.as_bytes(), 200)
                    );
                }
            }
        }
    }
}

/// The most memory this process has held so far (MiB): with a hang limit each target runs in a
/// process of its own, so this is what the target's cases took.
pub(crate) fn peak_rss_mb() -> u64 {
    // SAFETY: getrusage fills the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    usage.ru_maxrss as u64 / 1024
}

/// The address space (MiB) of the process that checks one bounded read: a reader that would
/// hold its whole input fails fast (with a hang limit, each runs in a process of its own).
pub(crate) const BOUNDED_READS_MB: u64 = 1024;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1, ..config("bounded-reads") })]

    /// Host ranges that multiply past any cluster (`gpu[0-99999][0-99999]`: 10^10 names) are an
    /// error, not an allocation of hundreds of GB.
    #[test]
    fn inventory_host_ranges_stay_bounded(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        let text = "[[node]]\nhost = \"gpu[0-99999][0-99999]\"\nmode = \"sim\"\n";
        prop_assert!(Inventory::parse("burnin.toml", text).is_err());
    }

    /// A record without its plan copy whose summary names `/dev/zero` as the plan is not read
    /// into memory: the report and the replay fall back to the shipped plan at once.
    #[test]
    fn a_record_naming_a_device_as_its_plan_is_refused_unread(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        let dir = TempDir::new("plan-device");
        let summary = std::fs::read_to_string(root().join("tests/fixtures/h200-run/run2-vs-baseline/summary.json"))
            .expect("a summary");
        let mut summary: serde_json::Value = serde_json::from_str(&summary).expect("JSON");
        summary["plan"] = "/dev/zero".into();
        std::fs::write(dir.0.join("summary.json"), summary.to_string()).expect("summary");
        let s = burnin::record::read_summary(&dir.0).expect("the summary reads");
        let _ = burnin::record::recorded_plan(&dir.0, &s);
        let peak = peak_rss_mb();
        prop_assert!(peak < 256, "reading the record took {peak} MiB");
    }

    /// A telemetry segment that inflates without end (gzip members of 1 MiB without a newline,
    /// 4 GiB in all from a 4 MiB file) is read as far as a bound, not into one line.
    #[test]
    fn telemetry_reads_stay_bounded(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        // One fixed place: this test ends in an abort until the fix, which leaves no Drop to
        // clean up; the next run starts by removing it.
        let dir = TempDir(std::env::temp_dir().join("burnin-fuzz-gzip-bomb"));
        let _ = std::fs::remove_dir_all(&dir.0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b'x'; 1 << 20]).expect("in memory");
        let member = gz.finish().expect("in memory");
        std::fs::create_dir_all(dir.0.join("telemetry")).expect("telemetry dir");
        let mut f = std::fs::File::create(dir.0.join("telemetry/000.jsonl.gz")).expect("segment");
        for _ in 0..4096 {
            f.write_all(&member).expect("segment");
        }
        drop(f);
        for item in burnin::record::telemetry::TelemetryStream::open(&dir.0) {
            let _ = item;
        }
    }
}
