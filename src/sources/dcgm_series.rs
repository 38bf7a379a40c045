//! dcgm-exporter's series read back into burnin's GPU samples: the families burnin knows (with
//! DCGM 4.6's new names beside the old ones), their units (W, MHz, MiB, ratios 0–1), and the
//! grouping of a node's series by GPU. Both the Prometheus source (API answers) and tests on
//! captured `/metrics` texts feed it the same `(name, gpu, value)` triples, so the mapping is
//! one table whoever asks.

use std::collections::BTreeMap;

use crate::model::GpuSample;

/// Why a family may be missing from a site's Prometheus, said beside its "n/a".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Absent {
    /// In dcgm-exporter's default counters: missing means the exporter is not scraped or an
    /// old release.
    Default,
    /// Off by default: the site must list it in the exporter's counters CSV.
    OptIn,
    /// A profiling (DCP) field: opt-in, and needs a datacenter GPU with profiling allowed
    /// (nothing else holding the profiler).
    Profiling,
    /// Only burnin's own agent (`burnin agent --listen`) serves it.
    BurninOnly,
}

impl Absent {
    /// The reason in words.
    pub fn reason(self) -> &'static str {
        match self {
            Absent::Default => "in dcgm-exporter's defaults: is the exporter scraped?",
            Absent::OptIn => "opt-in in dcgm-exporter (its counters CSV)",
            Absent::Profiling => "opt-in profiling field (counters CSV, profiling rights)",
            Absent::BurninOnly => "only burnin's agent serves it (--listen)",
        }
    }
}

/// How one value lands in a GPU's reading.
type Apply = fn(&mut GpuReading, f64);

/// A family burnin reads: every name it goes by (older first), how its value lands, and why it
/// may be absent.
pub struct Family {
    /// Names, the pre-4.6 one first; a series under any of them is this family.
    pub names: &'static [&'static str],
    /// Puts a value into the reading.
    apply: Apply,
    /// Why a site may not have it.
    pub absent: Absent,
    /// The reading in the console's words; families that give the same reading share it.
    pub reading: &'static str,
}

const MIB: f64 = 1024.0 * 1024.0;

fn whole(v: f64) -> Option<u64> {
    (0.0..1.8e19).contains(&v).then(|| v.round() as u64)
}

fn whole32(v: f64) -> Option<u32> {
    whole(v).and_then(|x| u32::try_from(x).ok())
}

fn ratio_pct(v: f64) -> Option<f32> {
    (v.is_finite() && v >= 0.0).then(|| (v * 100.0).min(100.0) as f32)
}

fn nonneg(v: f64) -> Option<f64> {
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// The families, in the order a frame lists them.
pub const FAMILIES: &[Family] = &[
    Family {
        names: &["DCGM_FI_DEV_POWER_USAGE"],
        apply: |r, v| r.sample.power_avg_watts = nonneg(v).map(|v| v as f32),
        absent: Absent::Default,
        reading: "power",
    },
    Family {
        names: &["DCGM_FI_DEV_POWER_USAGE_INSTANT"],
        apply: |r, v| r.sample.power_instant_watts = nonneg(v).map(|v| v as f32),
        absent: Absent::OptIn,
        reading: "instant power",
    },
    Family {
        names: &["DCGM_FI_DEV_POWER_MGMT_LIMIT"],
        apply: |r, v| r.sample.power_limit_watts = nonneg(v).map(|v| v as f32),
        absent: Absent::OptIn,
        reading: "power limit",
    },
    Family {
        names: &["DCGM_FI_DEV_GPU_TEMP"],
        apply: |r, v| r.sample.temperature_c = v.is_finite().then_some(v as f32),
        absent: Absent::Default,
        reading: "temperature",
    },
    Family {
        names: &["DCGM_FI_DEV_SM_CLOCK"],
        apply: |r, v| r.sample.sm_clock_mhz = whole32(v),
        absent: Absent::Default,
        reading: "SM clock",
    },
    Family {
        names: &["DCGM_FI_DEV_MEM_CLOCK"],
        apply: |r, v| r.sample.mem_clock_mhz = whole32(v),
        absent: Absent::Default,
        reading: "memory clock",
    },
    // DCGM 4.6 renamed field 203 GPU_UTIL_RATIO but kept its ID, and dcgm-exporter sends a
    // field's value as DCGM gives it, under the name the site's CSV writes: a percentage
    // under either name. Were it a ratio after all, a loaded GPU would read under 1 % and be
    // called stalled: a loud false alarm, never a stall hidden.
    Family {
        names: &["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"],
        apply: |r, v| r.sample.utilization_pct = nonneg(v).map(|v| v.min(100.0) as f32),
        absent: Absent::Default,
        reading: "utilization",
    },
    Family {
        names: &["DCGM_FI_DEV_FB_USED"],
        apply: |r, v| r.sample.memory_used_bytes = nonneg(v).map(|v| (v * MIB) as u64),
        absent: Absent::Default,
        reading: "memory used",
    },
    Family {
        names: &["DCGM_FI_DEV_FB_FREE"],
        apply: |r, v| r.fb_free_mib = nonneg(v),
        absent: Absent::Default,
        reading: "memory total",
    },
    Family {
        names: &["DCGM_FI_DEV_FB_TOTAL"],
        apply: |r, v| r.sample.memory_total_bytes = nonneg(v).map(|v| (v * MIB) as u64),
        absent: Absent::OptIn,
        reading: "memory total",
    },
    Family {
        names: &[
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        ],
        apply: |r, v| r.sample.clock_event_reasons = whole(v),
        absent: Absent::OptIn,
        reading: "clock-event reasons",
    },
    Family {
        names: &["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"],
        apply: |r, v| r.sample.ecc_corrected_volatile = whole(v),
        absent: Absent::OptIn,
        reading: "ECC corrected",
    },
    Family {
        names: &["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"],
        apply: |r, v| r.sample.ecc_uncorrected_volatile = whole(v),
        absent: Absent::OptIn,
        reading: "ECC uncorrected",
    },
    Family {
        names: &["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"],
        apply: |r, v| r.sample.pcie_replay_count = whole(v),
        absent: Absent::Default,
        reading: "PCIe replays",
    },
    Family {
        names: &["DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"],
        apply: |r, v| r.sample.nvlink_crc_errors = whole(v),
        absent: Absent::OptIn,
        reading: "NVLink CRC errors",
    },
    Family {
        names: &["DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"],
        apply: |r, v| r.sample.nvlink_replay_errors = whole(v),
        absent: Absent::OptIn,
        reading: "NVLink replays",
    },
    Family {
        names: &["DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"],
        apply: |r, v| r.sample.nvlink_recovery_errors = whole(v),
        absent: Absent::OptIn,
        reading: "NVLink recoveries",
    },
    Family {
        names: &["DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"],
        apply: |r, v| r.sample.remapped_rows_correctable = whole32(v),
        absent: Absent::Default,
        reading: "remapped rows",
    },
    Family {
        names: &["DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"],
        apply: |r, v| r.sample.remapped_rows_uncorrectable = whole32(v),
        absent: Absent::Default,
        reading: "remapped rows",
    },
    Family {
        names: &["DCGM_FI_DEV_ROW_REMAP_FAILURE"],
        apply: |r, v| r.sample.remapped_rows_failure = whole(v).map(|x| x != 0),
        absent: Absent::Default,
        reading: "row remap failure",
    },
    Family {
        names: &["DCGM_FI_DEV_ROW_REMAP_PENDING"],
        apply: |r, v| r.sample.remapped_rows_pending = whole(v).map(|x| x != 0),
        absent: Absent::OptIn,
        reading: "row remap pending",
    },
    Family {
        names: &["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"],
        apply: |r, v| r.sample.sm_active_pct = ratio_pct(v),
        absent: Absent::Profiling,
        reading: "SM active",
    },
    Family {
        names: &[
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
        ],
        apply: |r, v| r.sample.tensor_active_pct = ratio_pct(v),
        absent: Absent::Profiling,
        reading: "tensor active",
    },
    Family {
        names: &["DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO"],
        apply: |r, v| r.sample.dram_active_pct = ratio_pct(v),
        absent: Absent::Profiling,
        reading: "DRAM active",
    },
    Family {
        names: &["DCGM_FI_PROF_PCIE_TX_BYTES"],
        apply: |r, v| r.sample.pcie_tx_bytes_per_sec = nonneg(v),
        absent: Absent::Profiling,
        reading: "PCIe tx",
    },
    Family {
        names: &["DCGM_FI_PROF_PCIE_RX_BYTES"],
        apply: |r, v| r.sample.pcie_rx_bytes_per_sec = nonneg(v),
        absent: Absent::Profiling,
        reading: "PCIe rx",
    },
    Family {
        names: &["DCGM_FI_PROF_NVLINK_TX_BYTES"],
        apply: |r, v| r.sample.nvlink_tx_bytes_per_sec = nonneg(v),
        absent: Absent::Profiling,
        reading: "NVLink tx",
    },
    Family {
        names: &["DCGM_FI_PROF_NVLINK_RX_BYTES"],
        apply: |r, v| r.sample.nvlink_rx_bytes_per_sec = nonneg(v),
        absent: Absent::Profiling,
        reading: "NVLink rx",
    },
    Family {
        names: &["DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"],
        apply: |r, v| r.xid_last = whole32(v),
        absent: Absent::Default,
        reading: "Xid",
    },
    Family {
        names: &["burnin_gpu_nvlink_links_active"],
        apply: |r, v| r.sample.nvlink_links_active = whole32(v),
        absent: Absent::BurninOnly,
        reading: "NVLink links up",
    },
];

// Each node keeps the families it saw as bits of a u64.
const _: () = assert!(FAMILIES.len() <= 64);

/// Every name the families go by, for a query's `__name__=~"…"`.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().flat_map(|f| f.names.iter().copied())
}

/// The family a series name belongs to, by its index in [`FAMILIES`].
pub fn family_of(name: &str) -> Option<usize> {
    FAMILIES.iter().position(|f| f.names.contains(&name))
}

/// One GPU's values as they arrive, before they become a sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    /// The sample being filled.
    pub sample: GpuSample,
    /// `DCGM_FI_DEV_FB_FREE` in MiB: the total, when `FB_TOTAL` is not exported, is used + free.
    fb_free_mib: Option<f64>,
    /// `DCGM_FI_DEV_XID_ERRORS`: the last Xid code (0: none since the exporter started).
    pub xid_last: Option<u32>,
}

impl GpuReading {
    /// The finished sample (memory total from used + free when only those came).
    pub fn finish(mut self) -> (GpuSample, Option<u32>) {
        if self.sample.memory_total_bytes.is_none()
            && let (Some(used), Some(free)) = (self.sample.memory_used_bytes, self.fb_free_mib)
        {
            self.sample.memory_total_bytes = Some(used + (free * MIB) as u64);
        }
        (self.sample, self.xid_last)
    }
}

/// One node's GPUs as the series described them, and which families came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSeries {
    /// Readings by GPU index.
    pub gpus: BTreeMap<u32, GpuReading>,
    /// Families seen for this node, one bit per index into [`FAMILIES`].
    seen: u64,
}

impl NodeSeries {
    /// Readings no series of this node gave, with why (burnin-only ones left out: a site
    /// watching dcgm-exporter does not miss them).
    pub fn unavailable(&self) -> Vec<crate::model::Unavailable> {
        let mut out: Vec<crate::model::Unavailable> = Vec::new();
        for (i, f) in FAMILIES.iter().enumerate() {
            if f.absent == Absent::BurninOnly || out.iter().any(|u| u.reading == f.reading) {
                continue;
            }
            let given = FAMILIES
                .iter()
                .enumerate()
                .any(|(j, g)| g.reading == f.reading && self.seen & (1 << j) != 0);
            if !given {
                let names: Vec<&str> = FAMILIES[i..]
                    .iter()
                    .filter(|g| g.reading == f.reading)
                    .flat_map(|g| g.names.iter().copied())
                    .collect();
                out.push(crate::model::Unavailable {
                    reading: f.reading.to_string(),
                    why: format!(
                        "{}; not in Prometheus as {}",
                        f.absent.reason(),
                        names.join(" or ")
                    ),
                });
            }
        }
        out
    }
}

/// What a set of series held, grouped by node name and GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gathered {
    /// By node (the host label's value).
    pub nodes: BTreeMap<String, NodeSeries>,
    /// Families seen at least once (indices into [`FAMILIES`]).
    pub families_seen: Vec<bool>,
    /// Series of MIG instances, left out: burnin reads whole GPUs.
    pub mig_series: u64,
    /// Series without a usable `gpu` label (not a number, or past what a node can have), or
    /// with a DCGM blank or non-finite value.
    pub unusable: u64,
}

impl Gathered {
    /// Empty, ready for [`Gathered::add`].
    pub fn new() -> Self {
        Self {
            families_seen: vec![false; FAMILIES.len()],
            ..Self::default()
        }
    }

    /// Take one series: `host` and `gpu` are its label values, `mig` whether it belongs to a
    /// MIG instance (`GPU_I_ID` set). Names outside [`FAMILIES`] are ignored.
    pub fn add(&mut self, name: &str, host: &str, gpu: &str, mig: bool, value: f64) {
        let Some(family) = family_of(name) else {
            return;
        };
        if mig {
            self.mig_series += 1;
            return;
        }
        // A `gpu` label past what a node can have is no GPU: a broken or hostile answer must
        // not grow what burnin holds per node.
        let Ok(index) = gpu.parse::<u32>().map_err(|_| ()).and_then(|i| {
            if i < crate::model::MAX_GPUS_PER_NODE {
                Ok(i)
            } else {
                Err(())
            }
        }) else {
            self.unusable += 1;
            return;
        };
        if !value.is_finite() || crate::wire::prometheus::is_dcgm_blank(value) {
            self.unusable += 1;
            return;
        }
        if self.families_seen.len() != FAMILIES.len() {
            self.families_seen = vec![false; FAMILIES.len()];
        }
        self.families_seen[family] = true;
        let node = match self.nodes.get_mut(host) {
            Some(n) => n,
            None => self.nodes.entry(host.to_string()).or_default(),
        };
        node.seen |= 1 << family;
        let reading = node.gpus.entry(index).or_insert_with(|| GpuReading {
            sample: GpuSample {
                index,
                ..GpuSample::default()
            },
            ..GpuReading::default()
        });
        (FAMILIES[family].apply)(reading, value);
    }

    /// Families no series came for, grouped by why they may be absent.
    pub fn absent(&self) -> BTreeMap<Absent, Vec<&'static str>> {
        let mut out: BTreeMap<Absent, Vec<&'static str>> = BTreeMap::new();
        for (i, f) in FAMILIES.iter().enumerate() {
            if !self.families_seen.get(i).copied().unwrap_or(false) {
                out.entry(f.absent)
                    .or_default()
                    .push(f.names.last().copied().unwrap_or_default());
            }
        }
        out
    }
}

/// Read a `/metrics` text (a dcgm-exporter or burnin agent scrape) into [`Gathered`], taking
/// the node from the first of `host_labels` a series has.
pub fn gather_text(text: &str, host_labels: &[&str]) -> Gathered {
    let parsed = crate::wire::prometheus::parse(text);
    let mut g = Gathered::new();
    for s in &parsed.samples {
        let host = host_labels
            .iter()
            .find_map(|l| s.label(l).filter(|v| !v.is_empty()))
            .unwrap_or("");
        g.add(
            &s.name,
            host,
            s.label("gpu").unwrap_or(""),
            s.label("GPU_I_ID").is_some_and(|v| !v.is_empty()),
            s.value,
        );
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTS: &[&str] = &["Hostname", "hostname"];

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/dcgm-exporter/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_node_says_which_readings_it_lacks_and_why() {
        let mut g = Gathered::new();
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "0", false, 40.0);
        g.add("DCGM_FI_DEV_GPU_UTIL_RATIO", "n", "0", false, 50.0);
        g.add("DCGM_FI_DEV_FB_FREE", "n", "0", false, 10.0);
        let u = g.nodes["n"].unavailable();
        let find = |r: &str| u.iter().find(|x| x.reading == r);
        assert!(find("temperature").is_none());
        assert!(find("utilization").is_none(), "the 4.6 name gives it");
        assert!(
            find("memory total").is_none(),
            "FB_FREE gives it with FB_USED"
        );
        let tensor = find("tensor active").expect("tensor");
        assert_eq!(
            tensor.why,
            "opt-in profiling field (counters CSV, profiling rights); not in Prometheus as \
             DCGM_FI_PROF_PIPE_TENSOR_ACTIVE or DCGM_FI_PROF_TENSOR_UTIL_RATIO"
        );
        assert!(
            find("NVLink links up").is_none(),
            "burnin-only readings are not missed"
        );
        assert_eq!(u.iter().filter(|x| x.reading == "remapped rows").count(), 1);
    }

    #[test]
    fn every_name_is_one_family() {
        let names: Vec<_> = all_names().collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a name in two families");
    }

    #[test]
    fn the_exporters_own_series_come_back_as_they_were_served() {
        // burnin's exporter writes a frame under these names; reading its text must give the
        // frame back (memory to the MiB the exporter rounds to, ratios to f32).
        let text = fixture("../h200-exporter/metrics.prom");
        let g = gather_text(&text, HOSTS);
        assert_eq!(g.nodes.len(), 1, "{:?}", g.nodes.keys());
        let (host, node) = g.nodes.iter().next().expect("node");
        assert!(!host.is_empty());
        let (s, xid) = node.gpus[&0].clone().finish();
        assert!(s.power_avg_watts.is_some_and(|w| w > 50.0 && w < 800.0));
        assert!(s.power_limit_watts.is_some());
        assert!(s.sm_clock_mhz.is_some());
        assert!(s.memory_total_bytes.is_some_and(|b| b > 100 << 30));
        assert_eq!(xid, Some(0), "no Xid since the agent started");
    }

    #[test]
    fn old_label_set_v100() {
        let g = gather_text(&fixture("metrics-v100-4gpu-old-labels-partial.prom"), HOSTS);
        let node = &g.nodes["r6i3n0"];
        let (s, _) = node.gpus[&2].clone().finish();
        assert_eq!(s.power_limit_watts, Some(300.0));
        assert_eq!(s.index, 2);
    }

    #[test]
    fn lowercase_hostname_and_mig_instances_left_out() {
        let g = gather_text(
            &fixture("metrics-mixed-models-lowercase-hostname-partial.prom"),
            HOSTS,
        );
        assert!(g.nodes.contains_key("dcgm-exporter-wwwjh"), "{:?}", g.nodes);
        assert!(g.mig_series > 0, "the A30 instance series");
        // GR_ENGINE_ACTIVE is no family burnin reads: ignored before its MIG labels matter.
        let mig = gather_text(&fixture("metrics-h100-mig-k8s-labels-partial.prom"), HOSTS);
        assert_eq!((mig.mig_series, mig.unusable), (0, 0));
        assert!(mig.nodes.is_empty());
    }

    #[test]
    fn xid_with_error_labels_and_memory_from_used_plus_free() {
        let g = gather_text(&fixture("metrics-xid-errors-with-err-labels.prom"), HOSTS);
        let (s, xid) = g.nodes["debian"].gpus[&0].clone().finish();
        assert_eq!(xid, Some(0));
        assert_eq!(s.memory_used_bytes, None, "FB_FREE alone makes no total");
        let mut g = Gathered::new();
        g.add("DCGM_FI_DEV_FB_USED", "n", "0", false, 1024.0);
        g.add("DCGM_FI_DEV_FB_FREE", "n", "0", false, 3072.0);
        let (s, _) = g.nodes["n"].gpus[&0].clone().finish();
        assert_eq!(s.memory_total_bytes, Some(4 << 30));
    }

    #[test]
    fn dcgm_4_6_names_read_like_the_old() {
        let mut g = Gathered::new();
        g.add("DCGM_FI_PROF_TENSOR_UTIL_RATIO", "n", "0", false, 0.7);
        g.add("DCGM_FI_DEV_GPU_UTIL_RATIO", "n", "0", false, 90.0);
        g.add("DCGM_FI_DEV_XID_ERROR", "n", "0", false, 79.0);
        g.add("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "n", "0", false, 4.0);
        let (s, _) = g.nodes["n"].gpus[&0].clone().finish();
        assert_eq!(s.tensor_active_pct, Some(70.0));
        assert_eq!(
            s.utilization_pct,
            Some(90.0),
            "field 203 stays a percentage"
        );
        assert_eq!(g.nodes["n"].gpus[&0].xid_last, Some(79));
        assert_eq!(s.clock_event_reasons, Some(4));
        let absent = g.absent();
        assert!(absent[&Absent::Default].contains(&"DCGM_FI_DEV_POWER_USAGE"));
        assert!(!absent.values().flatten().any(|n| n.contains("TENSOR")));
    }

    #[test]
    fn blanks_and_bad_gpu_labels_are_counted_not_read() {
        let mut g = Gathered::new();
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "x", false, 40.0);
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "0", false, f64::NAN);
        g.add(
            "DCGM_FI_DEV_GPU_TEMP",
            "n",
            "0",
            false,
            9_223_372_036_854_775_794.0,
        );
        g.add("SOMETHING_ELSE", "n", "0", false, 1.0);
        // A GPU index no node has: an answer naming endless GPUs does not grow the store.
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "64", false, 40.0);
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "4294967295", false, 40.0);
        assert_eq!(g.unusable, 5);
        assert!(g.nodes.is_empty());
        g.add("DCGM_FI_DEV_GPU_TEMP", "n", "63", false, 40.0);
        assert_eq!(g.nodes["n"].gpus.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn garbage_text_never_panics(text in "\\PC{0,400}") {
            let _ = gather_text(&text, HOSTS);
        }

        #[test]
        fn any_value_never_panics(v in proptest::num::f64::ANY, gpu in "\\PC{0,4}") {
            let mut g = Gathered::new();
            for name in all_names() {
                g.add(name, "h", &gpu, false, v);
            }
            for n in g.nodes.into_values() {
                for r in n.gpus.into_values() {
                    let _ = r.finish();
                }
            }
        }
    }
}
