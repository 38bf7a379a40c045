//! The frame line, the one message that arrives thousands of times a second: how the agent
//! writes it (the column form: the GPU fields any GPU has, named once, then one row of values per
//! GPU) and the fast path that reads it. The scanner reads the bytes once, taking each key where
//! the agent's order puts it; serde_json's generic path spent about 70 % of decode+store on key
//! scanning and number parsing.
//!
//! It answers only when it is sure. Anything off the beaten path (an escape in a string, an
//! unknown or repeated key, a negative number, an exponent, a number with more digits than an
//! `f64` holds exactly, a type serde would reject) makes it decline with `None`, and the caller
//! decodes the line with serde_json (`wire::decode_general`). So the fast path can only be
//! faster, never different: property tests hold it to serde_json's answer on every line it
//! accepts. It reads both forms: the column form, and one object per GPU (`gpus`, what agents
//! wrote before, and what the H200 fixtures hold). RDMA ports and Ethernet interfaces are read
//! by field name, each at most once, as serde's derive would.

mod read;
mod scanner;
mod write;

use crate::model::GpuSample;

pub use read::frame_line;
use read::{link_errors, xid_event};
use scanner::Scan;
pub use write::write_frame_line;
use write::{write_json, write_rate};

/// Every field of a GPU sample on the wire, in `GpuSample`'s order (the order the agent writes
/// them, so the scanner finds each key where it expects it), with how its value is written and
/// read. One table for the writer, the fast reader and the column list.
macro_rules! gpu_fields {
    ($($id:literal $field:ident: $kind:ident,)*) => {
        /// The keys of a GPU sample, as the wire names them.
        pub const GPU_KEYS: [&str; 34] = [$(stringify!($field)),*];

        /// Whether a GPU's field has a value worth a column (an absent reading does not).
        fn gpu_present(g: &GpuSample, k: usize) -> bool {
            match k {
                $($id => present_field!($kind, g.$field),)*
                _ => false,
            }
        }

        /// Write a GPU's field as one JSON value.
        fn gpu_write(g: &GpuSample, k: usize, out: &mut Vec<u8>) {
            match k {
                $($id => write_field!($kind, &g.$field, out),)*
                _ => out.extend_from_slice(b"null"),
            }
        }

        /// Read one JSON value into a GPU's field.
        fn gpu_read(s: &mut Scan<'_>, g: &mut GpuSample, k: usize) -> Option<()> {
            match k {
                $($id => g.$field = read_field!($kind, s),)*
                _ => return None,
            }
            Some(())
        }
    };
}

macro_rules! present_field {
    (index, $v:expr) => {
        true
    };
    (xids, $v:expr) => {
        !$v.is_empty()
    };
    (links, $v:expr) => {
        !$v.is_empty()
    };
    ($kind:ident, $v:expr) => {
        $v.is_some()
    };
}

macro_rules! write_field {
    (rate, $v:expr, $out:expr) => {
        write_rate(*$v, $out)
    };
    ($kind:ident, $v:expr, $out:expr) => {
        write_json($v, $out)
    };
}

macro_rules! read_field {
    (index, $s:expr) => {
        $s.u32()?
    };
    (f32, $s:expr) => {
        $s.opt(Scan::f32)?
    };
    (u32, $s:expr) => {
        $s.opt(Scan::u32)?
    };
    (u64, $s:expr) => {
        $s.opt(Scan::unsigned)?
    };
    (rate, $s:expr) => {
        $s.opt(Scan::f64)?
    };
    (bool, $s:expr) => {
        $s.opt(Scan::bool)?
    };
    (bools, $s:expr) => {
        $s.opt(|s| s.list(Scan::bool))?
    };
    (u32s, $s:expr) => {
        $s.opt(|s| s.list(Scan::u32))?
    };
    (xids, $s:expr) => {
        $s.list(xid_event)?
    };
    (links, $s:expr) => {
        $s.list(link_errors)?
    };
}

gpu_fields! {
    0 index: index,
    1 power_avg_watts: f32,
    2 power_instant_watts: f32,
    3 power_limit_watts: f32,
    4 temperature_c: f32,
    5 sm_clock_mhz: u32,
    6 sm_clock_max_mhz: u32,
    7 utilization_pct: f32,
    8 sm_active_pct: f32,
    9 tensor_active_pct: f32,
    10 dram_active_pct: f32,
    11 mem_clock_mhz: u32,
    12 memory_used_bytes: u64,
    13 memory_total_bytes: u64,
    14 clock_event_reasons: u64,
    15 ecc_corrected_volatile: u64,
    16 ecc_uncorrected_volatile: u64,
    17 nvlink_tx_bytes_per_sec: rate,
    18 nvlink_rx_bytes_per_sec: rate,
    19 nvlink_crc_errors: u64,
    20 nvlink_replay_errors: u64,
    21 nvlink_recovery_errors: u64,
    22 pcie_replay_count: u64,
    23 pcie_tx_bytes_per_sec: rate,
    24 pcie_rx_bytes_per_sec: rate,
    25 nvlink_links_active: u32,
    26 nvlink_link_up: bools,
    27 remapped_rows_correctable: u32,
    28 remapped_rows_uncorrectable: u32,
    29 remapped_rows_pending: bool,
    30 remapped_rows_failure: bool,
    31 compute_pids: u32s,
    32 xid_events: xids,
    33 nvlink_link_errors: links,
}

/// The fast path held to serde_json's answer: on every frame the agent and the simulator
/// write, on arbitrary frames (property tests), and on the mistakes it must decline.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSample, NetSample, NicSample, NodeFrame, NvlinkLinkErrors, XidEvent};

    #[test]
    fn minus_zero_in_an_integer_field_is_refused_as_serde_does() {
        // Found by a long run of tests/fuzz/: serde_json reads `-0` as the float -0.0.
        let line = r#"{"frame":{"node":"n","at_ms":1,"gpus":[{"index":0}],"nics":[{"device":"mlx5_0","port":1,"numa_node":-0}]}}"#;
        assert!(frame_line(line).is_none());
        assert!(crate::wire::decode_general(line).is_err());
    }
    use crate::wire::{WireMessage, encode};
    use proptest::prelude::*;

    /// What serde_json makes of the line: the answer the fast path must equal.
    fn by_serde(line: &str) -> Option<NodeFrame> {
        match crate::wire::decode_general(line) {
            Ok(crate::wire::Decoded::Message(WireMessage::Frame(f))) => Some(f),
            _ => None,
        }
    }

    /// The form agents wrote before the column form: one object per GPU.
    fn keyed(frame: &NodeFrame) -> String {
        serde_json::to_string(&WireMessage::Frame(frame.clone())).expect("plain data")
    }

    fn sim_lines() -> Vec<String> {
        use crate::sim::{SimCluster, SimConfig, SimLoad};
        let mut config = SimConfig::demo(1);
        config.nodes = 3;
        let mut sim = SimCluster::new(config);
        let mut lines = Vec::new();
        for s in 0..40u64 {
            for n in 0..3 {
                let load = if s % 2 == 0 {
                    SimLoad::Full
                } else {
                    SimLoad::Idle
                };
                lines.push(encode(&WireMessage::Frame(sim.node_frame(n, s, load))));
            }
        }
        lines
    }

    #[test]
    fn takes_every_frame_the_agent_and_the_simulator_write() {
        let mut lines = sim_lines();
        for fixture in [
            "agent-idle.ndjson",
            "agent-load.ndjson",
            "agent-busy-idle.ndjson",
        ] {
            let path = format!(
                "{}/tests/fixtures/h200-burnin/{fixture}",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).expect(&path);
            lines.extend(
                text.lines()
                    .filter(|l| l.starts_with("{\"frame\""))
                    .map(String::from),
            );
        }
        assert!(lines.len() > 150, "{}", lines.len());
        for line in &lines {
            let fast = frame_line(line);
            assert!(fast.is_some(), "declined a line it should take: {line}");
            assert_eq!(fast, by_serde(line), "{line}");
        }
    }

    #[test]
    fn the_column_form_carries_the_same_frame_in_under_half_the_bytes() {
        use crate::sim::{SimCluster, SimConfig, SimLoad};
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let mut frame = sim.node_frame(0, 30, SimLoad::Full);
        frame.nics.clear();
        frame.gpus[3].xid_events.push(XidEvent {
            code: 79,
            at_ms: frame.at_ms,
        });
        let columns = encode(&WireMessage::Frame(frame.clone()));
        let objects = keyed(&frame);
        assert_eq!(frame.gpus.len(), 8);
        assert!(
            columns.starts_with(r#"{"frame":{"node":"node01","at_ms":"#),
            "{columns}"
        );
        assert!(
            columns.len() * 2 < objects.len(),
            "{} vs {} bytes",
            columns.len(),
            objects.len()
        );
        // Only GPU 3 has an Xid: the column exists, and the others' cells are empty lists.
        assert_eq!(columns.matches("\"xid_events\"").count(), 1);
        assert_eq!(frame_line(&columns), by_serde(&objects));
        assert_eq!(frame_line(&columns), by_serde(&columns));
        assert!(frame_line(&columns).is_some());
    }

    #[test]
    fn column_form_mistakes_are_garbled_not_guessed() {
        use crate::wire::decode_general;
        let ok = r#"{"frame":{"node":"n","at_ms":5,"gpu_fields":["index","temperature_c"],"gpu_rows":[[0,31.0],[1,null]]}}"#;
        let f = frame_line(ok).expect("fast path");
        assert_eq!(f.gpus[1].index, 1);
        assert_eq!(f.gpus[1].temperature_c, None);
        assert_eq!(Some(f), by_serde(ok));
        for (what, line, says) in [
            (
                "short row",
                ok.replace("[1,null]", "[1]"),
                "GPU row 1 has 1 values for 2",
            ),
            (
                "twice",
                ok.replace("\"temperature_c\"]", "\"index\"]"),
                "names \"index\" twice",
            ),
            (
                "both forms",
                ok.replace("\"gpu_fields\"", "\"gpus\":[],\"gpu_fields\""),
                "either gpus",
            ),
            (
                "rows alone",
                ok.replace("\"gpu_fields\":[\"index\",\"temperature_c\"],", ""),
                "either gpus",
            ),
            ("wrong type", ok.replace("31.0", "\"hot\""), "GPU row 0"),
        ] {
            assert_eq!(frame_line(&line), None, "{what}");
            match decode_general(&line) {
                Err(e) => assert!(e.contains(says), "{what}: {e}"),
                Ok(d) => panic!("{what}: decoded {d:?}"),
            }
        }
        // A column this version does not know: the general path reads the rest.
        let newer = ok
            .replace("\"temperature_c\"]", "\"temperature_c\",\"future\"]")
            .replace("31.0]", "31.0,7]")
            .replace("null]", "null,8]");
        assert_eq!(frame_line(&newer), None);
        assert_eq!(by_serde(&newer), by_serde(ok));
    }

    #[test]
    fn declines_what_it_is_not_sure_of() {
        let ok =
            r#"{"frame":{"node":"n","at_ms":5,"gpus":[{"index":0,"power_avg_watts":84.082}]}}"#;
        assert!(frame_line(ok).is_some());
        for (what, line) in [
            ("escape", ok.replace("\"n\"", r#""n\u0041""#)),
            (
                "unknown key",
                ok.replace("\"index\"", "\"future_field\":1,\"index\""),
            ),
            (
                "repeated key",
                ok.replace("\"index\":0", "\"index\":0,\"index\":1"),
            ),
            ("exponent", ok.replace("84.082", "8.4082e1")),
            ("negative", ok.replace("84.082", "-84.082")),
            ("leading zero", ok.replace("\"at_ms\":5", "\"at_ms\":05")),
            (
                "too many digits",
                ok.replace("84.082", "84.0820000000000000000001"),
            ),
            (
                // 18446744073709551621 is 2^64 + 5: twenty digits read without checks would
                // wrap to 5 and pass as 0.5.
                "twenty digits that wrap past u64",
                ok.replace("84.082", "1844674407370955162.1"),
            ),
            (
                "float for an integer",
                ok.replace("\"index\":0", "\"index\":0.5"),
            ),
            ("trailing text", format!("{ok} x")),
            ("missing node", ok.replace("\"node\":\"n\",", "")),
            ("hello", r#"{"hello":{}}"#.to_string()),
        ] {
            assert_eq!(frame_line(&line), None, "{what}: {line}");
        }
        // Whitespace is JSON too.
        let spaced = ok.replace(',', " ,\n ").replace(':', " : ");
        assert_eq!(frame_line(&spaced), by_serde(&spaced));
    }

    #[test]
    fn ports_and_interfaces_go_through_serde() {
        let line = r#"{"frame":{"node":"n","at_ms":5,"gpus":[],"nics":[{"device":"mlx5_0","port":1,"state":"ACTIVE","rate_gbps":400.0}],"netdevs":[{"iface":"eth0","operstate":"up","counters":{"rx_errors":0}}]}}"#;
        let fast = frame_line(line);
        assert!(
            fast.as_ref()
                .is_some_and(|f| f.nics.len() == 1 && f.netdevs.len() == 1)
        );
        assert_eq!(fast, by_serde(line));
    }

    fn arb_f32() -> impl Strategy<Value = Option<f32>> {
        prop_oneof![
            Just(None),
            (0u32..100_000, 0u32..4).prop_map(|(m, s)| Some(m as f32 / 10f32.powi(s as i32))),
            any::<f32>().prop_map(Some),
        ]
    }

    fn arb_gpu() -> impl Strategy<Value = GpuSample> {
        (
            (
                0u32..16,
                arb_f32(),
                arb_f32(),
                arb_f32(),
                any::<Option<u32>>(),
            ),
            (
                any::<Option<u64>>(),
                proptest::option::of(0.0f64..1e12),
                any::<Option<bool>>(),
                proptest::option::of(proptest::collection::vec(any::<bool>(), 0..18)),
                proptest::option::of(proptest::collection::vec(any::<u32>(), 0..4)),
            ),
            proptest::collection::vec((any::<u32>(), any::<u64>()), 0..3),
            proptest::collection::vec((0u32..18, any::<u64>(), any::<u64>()), 0..3),
        )
            .prop_map(
                |((index, pa, pi, t, clk), (ecc, nvl, pend, up, pids), xids, links)| GpuSample {
                    index,
                    power_avg_watts: pa,
                    power_instant_watts: pi,
                    temperature_c: t,
                    sm_clock_mhz: clk,
                    ecc_corrected_volatile: ecc,
                    nvlink_tx_bytes_per_sec: nvl,
                    remapped_rows_pending: pend,
                    nvlink_link_up: up,
                    compute_pids: pids,
                    xid_events: xids
                        .into_iter()
                        .map(|(code, at_ms)| XidEvent { code, at_ms })
                        .collect(),
                    nvlink_link_errors: links
                        .into_iter()
                        .map(|(link, crc, replay)| NvlinkLinkErrors {
                            link,
                            crc,
                            replay,
                            recovery: 0,
                        })
                        .collect(),
                    ..GpuSample::default()
                },
            )
    }

    fn arb_counters() -> impl Strategy<Value = crate::model::PortCounters> {
        proptest::collection::vec((0usize..23, any::<u64>()), 0..4).prop_map(|set| {
            let mut c = crate::model::PortCounters::default();
            for (i, v) in set {
                let name =
                    crate::model::PortCounters::NAMES[i % crate::model::PortCounters::NAMES.len()];
                c.set(name, v);
            }
            c
        })
    }

    fn arb_nic() -> impl Strategy<Value = NicSample> {
        (
            "[a-z0-9_\\\\é]{0,6}",
            any::<u32>(),
            proptest::option::of("[A-Za-z_]{0,6}"),
            arb_f32(),
            proptest::option::of(any::<i32>()),
            proptest::option::of(0u64..1 << 40),
            arb_counters(),
        )
            .prop_map(
                |(device, port, state, rate_gbps, numa_node, tx, counters)| NicSample {
                    device,
                    port,
                    state: state.clone(),
                    phys_state: state.map(|s| format!("{s}Up")),
                    rate_gbps,
                    link_layer: Some("InfiniBand".into()),
                    numa_node,
                    tx_bytes_per_sec: tx.map(|t| t as f64),
                    rx_bytes_per_sec: None,
                    counters,
                },
            )
    }

    fn arb_net() -> impl Strategy<Value = NetSample> {
        (
            "[a-z0-9]{0,6}",
            proptest::option::of(any::<u64>()),
            proptest::option::of(0u64..1 << 40),
            arb_counters(),
        )
            .prop_map(|(iface, speed_mbps, rx, counters)| NetSample {
                iface,
                operstate: Some("up".into()),
                speed_mbps,
                tx_bytes_per_sec: None,
                rx_bytes_per_sec: rx.map(|r| r as f64),
                counters,
            })
    }

    proptest! {
        /// Whatever the encoder writes, in either form, the fast path reads as serde does (or
        /// declines), and both forms carry the same frame.
        #[test]
        fn agrees_with_serde_on_encoded_frames(
            gpus in proptest::collection::vec(arb_gpu(), 0..4),
            node in "[a-z0-9\\-\"\\\\é]{0,8}",
            at_ms in any::<u64>(),
            nics in proptest::collection::vec(arb_nic(), 0..3),
            netdevs in proptest::collection::vec(arb_net(), 0..2),
        ) {
            let frame = NodeFrame {
                node,
                at_ms,
                gpus,
                nics,
                netdevs,
            };
            let columns = encode(&WireMessage::Frame(frame.clone()));
            let objects = keyed(&frame);
            for line in [&columns, &objects] {
                // It may decline only for escapes, exponents and negative numbers.
                let b = line.as_bytes();
                let exponent = b.windows(2).any(|w| w[0].is_ascii_digit() && w[1] == b'e');
                let negative =
                    b.windows(2).any(|w| matches!(w[0], b':' | b'[' | b',') && w[1] == b'-');
                let fast = frame_line(line);
                if !line.contains('\\') && !exponent && !negative {
                    prop_assert!(fast.is_some(), "declined {}", line);
                }
                if let Some(fast) = fast {
                    prop_assert_eq!(Some(fast), by_serde(line));
                }
            }
            prop_assert_eq!(by_serde(&columns), by_serde(&objects));
        }

        /// Damaged lines: anything the fast path accepts, serde reads the same way.
        #[test]
        fn agrees_with_serde_on_damaged_lines(
            cut in 0usize..400,
            splice in "[0-9a-z\\[\\]{}\":,.\\- ]{0,6}",
            pick in 0usize..120,
        ) {
            let lines = sim_lines();
            let line = &lines[pick % lines.len()];
            let at = line.char_indices().map(|(i, _)| i).nth(cut % line.len()).unwrap_or(0);
            let damaged = format!("{}{}{}", &line[..at], splice, &line[at..]);
            if let Some(fast) = frame_line(&damaged) {
                prop_assert_eq!(Some(fast), by_serde(&damaged), "{}", damaged);
            }
            let truncated = &line[..at];
            if let Some(fast) = frame_line(truncated) {
                prop_assert_eq!(Some(fast), by_serde(truncated));
            }
        }

        /// Numbers of every length (past the 19 digits one pass reads exactly, past u64 and
        /// past 2^53) in the fields that take them: accepted only as serde reads them.
        #[test]
        fn numbers_of_any_length_read_as_serde_does(
            whole in "(0|[1-9][0-9]{0,24})",
            fraction in proptest::option::of("[0-9]{1,24}"),
        ) {
            let number = match &fraction {
                Some(f) => format!("{whole}.{f}"),
                None => whole.clone(),
            };
            for column in ["power_avg_watts", "memory_used_bytes", "nvlink_tx_bytes_per_sec"] {
                let line = format!(
                    "{{\"frame\":{{\"node\":\"n\",\"at_ms\":{whole},\"gpu_fields\":\
                         [\"index\",\"{column}\"],\"gpu_rows\":[[0,{number}]]}}}}"
                );
                if let Some(fast) = frame_line(&line) {
                    prop_assert_eq!(Some(fast), by_serde(&line), "{}", line);
                }
            }
        }

        /// Garbage never panics it.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = frame_line(&text);
            let _ = frame_line(&format!("{{\"frame\":{text}"));
        }
    }
}
