//! What each simulated node samples: its GPUs under the phase's load and the faults, its NICs,
//! and the storage probe's window.

use super::*;

impl SimCluster {
    pub(super) fn frame(&mut self, n: usize, s: u64, load: Load) -> NodeFrame {
        let seed = self.config.seed;
        let gpus_per_node = self.config.gpus_per_node;
        let mut gpus = Vec::with_capacity(gpus_per_node as usize);
        for g in 0..gpus_per_node {
            let key = (n as u64) << 8 | g as u64;
            let r = |salt: u64| noise(seed, key, s, salt);
            if self
                .fault(FaultKind::Xid79)
                .is_some_and(|f| f.node == n && f.gpu == g && s >= f.from_s)
            {
                let from = self.fault(FaultKind::Xid79).map_or(0, |f| f.from_s);
                // The first frame after the fault carries the event; afterwards NVML cannot read
                // the GPU at all, which is exactly what "fell off the bus" looks like.
                gpus.push(GpuSample {
                    index: g,
                    xid_events: if s == from {
                        vec![XidEvent {
                            code: 79,
                            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
                        }]
                    } else {
                        Vec::new()
                    },
                    ..GpuSample::default()
                });
                continue;
            }
            let stalled = self.fault_hits(FaultKind::Stall, n, g, s);
            let thermal = self.fault_hits(FaultKind::Thermal, n, g, s);
            let hung = self.fault_hits(FaultKind::Hang, n, g, s) && load.util > 0.1;
            let slow_clock = self.fault_hits(FaultKind::SlowClock, n, g, s);
            // Since when this GPU's ECC fault holds (the Xid comes with its first second).
            let ecc: Option<u64> = self
                .fault(FaultKind::Ecc)
                .filter(|f| f.node == n && f.gpu == g && f.active_at(s))
                .map(|f| f.from_s);
            let mut l = load;
            if stalled {
                l = Load {
                    util: 0.0,
                    power: 0.0,
                    nvlink: 0.0,
                    tensor: 0.0,
                    memory: load.memory,
                    net: load.net,
                };
            }
            if hung {
                // One kernel resident, spinning on a few SMs: busy to NVML, idle to GPM.
                l = Load {
                    util: 1.0,
                    power: 0.12,
                    nvlink: 0.0,
                    tensor: 0.0,
                    memory: load.memory,
                    net: 0.0,
                };
            }
            let util = (l.util * 100.0 + r(1) * 2.0 * l.util).clamp(0.0, 100.0);
            let mut power =
                IDLE_POWER_WATTS as f64 + (POWER_LIMIT_WATTS - IDLE_POWER_WATTS) as f64 * l.power;
            power += r(2) * 12.0;
            let mut reasons = 0u64;
            let mut clock = if l.util < 0.1 {
                reasons |= clock_events::GPU_IDLE;
                SM_CLOCK_IDLE_MHZ as f64
            } else {
                SM_CLOCK_MAX_MHZ as f64
            };
            if l.power > 0.85 {
                // At the power cap the clock settles below max and SW_POWER_CAP is set: normal.
                reasons |= clock_events::SW_POWER_CAP;
                clock = 1720.0 + r(3) * 60.0;
                power = POWER_LIMIT_WATTS as f64 - 15.0 + r(2) * 10.0;
            }
            let mut temp = 34.0 + 40.0 * l.power + r(4) * 1.5;
            if thermal {
                let ramp = ((s - self.fault(FaultKind::Thermal).map_or(s, |f| f.from_s)) as f64
                    / 8.0)
                    .min(1.0);
                temp = temp + (93.0 - temp) * ramp + r(4);
                if ramp > 0.5 && l.util > 0.1 {
                    reasons = (reasons & !clock_events::SW_POWER_CAP)
                        | clock_events::HW_THERMAL
                        | clock_events::HW_SLOWDOWN;
                    clock = 1190.0 + r(3) * 40.0;
                    power *= 0.68;
                }
            }
            if slow_clock && l.util > 0.1 {
                reasons = (reasons & !clock_events::SW_POWER_CAP)
                    | clock_events::APPLICATIONS_CLOCKS_SETTING;
                clock = 900.0 + r(3) * 10.0;
                power *= 0.6;
            }
            let instant = power * (1.0 + r(5) * 0.18 * l.power.max(0.05));
            let crc_idx = n * gpus_per_node as usize + g as usize;
            if let Some(f) = self.fault(FaultKind::NvlinkCrc)
                && f.node == n
                && (g == f.gpu || g == f.gpu + 1)
                && f.active_at(s)
            {
                self.crc_counters[crc_idx] += 3 + (r(6).abs() * 17.0) as u64;
            }
            if self.fault_hits(FaultKind::PcieReplay, n, g, s) {
                self.pcie_replays[crc_idx] += 1 + (r(10).abs() * 4.0) as u64;
            }
            let tx = NVLINK_PEAK_BYTES_PER_SEC * l.nvlink * (1.0 + r(7) * 0.03);
            let rx = NVLINK_PEAK_BYTES_PER_SEC * l.nvlink * (1.0 + r(8) * 0.03);
            gpus.push(GpuSample {
                index: g,
                power_avg_watts: Some(power as f32),
                power_instant_watts: Some(instant as f32),
                power_limit_watts: Some(POWER_LIMIT_WATTS),
                temperature_c: Some(temp.round() as f32),
                sm_clock_mhz: Some(clock.round() as u32),
                sm_clock_max_mhz: Some(SM_CLOCK_MAX_MHZ),
                utilization_pct: Some(util.round() as f32),
                sm_active_pct: Some(if hung {
                    1.5 + r(9).abs() as f32
                } else {
                    (util * 0.96) as f32
                }),
                tensor_active_pct: Some((util * l.tensor) as f32),
                memory_used_bytes: Some((MEMORY_TOTAL_BYTES as f64 * l.memory) as u64),
                memory_total_bytes: Some(MEMORY_TOTAL_BYTES),
                clock_event_reasons: Some(reasons),
                ecc_corrected_volatile: Some(0),
                ecc_uncorrected_volatile: Some(u64::from(ecc.is_some())),
                remapped_rows_uncorrectable: Some(u32::from(ecc.is_some())),
                remapped_rows_correctable: Some(0),
                remapped_rows_pending: Some(ecc.is_some()),
                remapped_rows_failure: Some(false),
                nvlink_tx_bytes_per_sec: Some(tx.max(0.0)),
                nvlink_rx_bytes_per_sec: Some(rx.max(0.0)),
                nvlink_crc_errors: Some(self.crc_counters[crc_idx]),
                nvlink_replay_errors: Some(0),
                nvlink_recovery_errors: Some(0),
                // A bad cable or tray sits on one link: all of a GPU's CRC errors are there.
                nvlink_link_errors: match self.crc_counters[crc_idx] {
                    0 => Vec::new(),
                    crc => vec![crate::model::NvlinkLinkErrors {
                        link: sim_faulty_link(g),
                        crc,
                        ..Default::default()
                    }],
                },
                pcie_replay_count: Some(self.pcie_replays[crc_idx]),
                xid_events: match ecc {
                    Some(from) if from == s => vec![XidEvent {
                        code: 94,
                        at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
                    }],
                    _ => Vec::new(),
                },
                ..GpuSample::default()
            });
        }
        let nics = self.nics(n, s, load);
        NodeFrame {
            node: self.config.node_name(n),
            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
            gpus,
            nics,
            netdevs: Vec::new(),
        }
    }

    fn nics(&mut self, n: usize, s: u64, load: Load) -> Vec<NicSample> {
        let seed = self.config.seed;
        (0..NICS_PER_NODE)
            .map(|p| {
                let r = |salt: u64| noise(seed, 0xF1B0 + ((n as u64) << 4 | p as u64), s, salt);
                let slow = self.fault_hits(FaultKind::Port200g, n, p as u32, s);
                let rate = if slow { 200.0 } else { NIC_RATE_GBPS };
                let line = f64::from(rate) * 1e9 / 8.0;
                // A slow port carries what it can; the collective then runs at its pace.
                let want = NIC_RATE_GBPS as f64 * 1e9 / 8.0 * load.net;
                let tx = (want * (1.0 + r(1) * 0.02)).min(line * 0.97);
                let rx = (want * (1.0 + r(2) * 0.02)).min(line * 0.97);
                let c = &mut self.nic_counters[n * NICS_PER_NODE + p];
                if self.config.faults.iter().any(|f| {
                    f.kind == FaultKind::SymbolErrors
                        && f.node == n
                        && f.gpu == p as u32
                        && f.active_at(s)
                }) {
                    c[0] += 2 + (r(3).abs() * 6.0) as u64;
                }
                c[1] += (load.net * load.net * 4.0e5 * (1.0 + r(4) * 0.1)) as u64;
                c[2] += (load.net * 120.0 * (1.0 + r(5) * 0.2)) as u64;
                let mut counters = crate::model::PortCounters::default();
                for (name, v) in [
                    ("symbol_error", c[0]),
                    ("link_downed", 0),
                    ("link_error_recovery", 0),
                    ("port_rcv_errors", 0),
                    ("port_xmit_discards", 0),
                    ("port_xmit_wait", c[1]),
                    ("np_cnp_sent", c[2]),
                ] {
                    counters.set(name, v);
                }
                NicSample {
                    device: format!("mlx5_{p}"),
                    port: 1,
                    state: Some("ACTIVE".into()),
                    phys_state: Some("LinkUp".into()),
                    rate_gbps: Some(rate),
                    link_layer: Some("InfiniBand".into()),
                    numa_node: Some((p / (NICS_PER_NODE / 2).max(1)) as i32),
                    tx_bytes_per_sec: Some(tx.max(0.0)),
                    rx_bytes_per_sec: Some(rx.max(0.0)),
                    counters,
                }
            })
            .collect()
    }

    pub(super) fn probe_window(&self, s: u64) -> ProbeWindow {
        let seed = self.config.seed;
        let r = |salt| noise(seed, 0xA157, s, salt);
        let in_t8 = self.running.as_ref().is_some_and(|r| r.id == "T8");
        let spike = self
            .fault(FaultKind::AistorP99)
            .is_some_and(|f| f.active_at(s));
        let p50 = 11.0 + r(1) * 1.5 + if in_t8 { 6.0 } else { 0.0 };
        let mut p99 = 38.0 + r(2) * 6.0 + if in_t8 { 22.0 } else { 0.0 };
        if spike {
            p99 = 640.0 + r(3) * 80.0;
        }
        let throughput = if in_t8 {
            41e9 * (1.0 + r(4) * 0.04) * if spike { 0.6 } else { 1.0 }
        } else {
            0.35e9 * (1.0 + r(4) * 0.1)
        };
        let requests = if in_t8 { 160 } else { 4 };
        ProbeWindow {
            at_ms: SIM_EPOCH_MS + s * SIM_PERIOD_MS,
            endpoint: "aistor.sim:9000 (simulated)".into(),
            ttfb_p50_ms: p50,
            ttfb_p99_ms: p99,
            total_p99_ms: p99 + 180.0 + r(5) * 20.0,
            throughput_bytes_per_sec: throughput,
            requests,
            errors: if spike && r(6) > 0.3 { 2 } else { 0 },
            concurrency: None,
        }
    }
}
