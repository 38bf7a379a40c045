//! Fabric rules: RDMA ports down, trained slow, erroring, retransmitting or congested; Ethernet
//! interfaces down or erroring; a GPU whose nearest NIC is down.

use std::collections::HashMap;

use super::{Raw, Severity, raw};
use crate::model::NodeLink;
use crate::store::ClusterStore;

/// Port counters whose rise means a bad link (cable, transceiver, port).
const LINK_ERROR_COUNTERS: &[&str] = &[
    "symbol_error",
    "link_error_recovery",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "port_rcv_remote_physical_errors",
    "excessive_buffer_overrun_errors",
];

/// `port_xmit_wait` ticks per second above which a port counts as waiting to send. A tick is a
/// device-specific interval (tens of ns on ConnectX), so this is a heuristic: it matters only
/// together with low throughput, which is what congestion (not load) looks like.
pub const XMIT_WAIT_TICKS_PER_SEC: f64 = 1.0e6;
/// Line-rate share below which a waiting port is congested rather than busy.
pub const CONGESTED_LINE_SHARE: f64 = 0.25;

/// Counters whose rise means RDMA retransmissions (RoCE and IB reliable connections).
const RETRANS_COUNTERS: &[&str] = &[
    "roce_adp_retrans",
    "local_ack_timeout_err",
    "out_of_sequence",
    "packet_seq_err",
];

/// RDMA ports: down, trained below their peers, erroring, retransmitting.
pub(super) fn fabric_rules(store: &ClusterStore, window_ms: u64, out: &mut Vec<Raw>) {
    // The expected rate is what most ports of the same link layer trained at.
    let mut rates: HashMap<(&str, u32), usize> = HashMap::new();
    for n in &store.nodes {
        for p in &n.nics {
            if let Some(r) = p.latest.rate_gbps {
                let layer = p.latest.link_layer.as_deref().unwrap_or("");
                *rates.entry((layer, r.to_bits())).or_default() += 1;
            }
        }
    }
    let usual = |layer: &str| {
        rates
            .iter()
            .filter(|((l, _), _)| *l == layer)
            .max_by_key(|(k, count)| (**count, k.1))
            .map(|((_, r), _)| f32::from_bits(*r))
    };
    let secs = window_ms / 1000;
    for n in &store.nodes {
        if matches!(n.link, NodeLink::Unreachable(_)) {
            continue;
        }
        // A GPU whose nearest NICs are all down sends its traffic the long way, or not at all.
        if let Some(topo) = n.hello.as_ref().and_then(|h| h.topology.as_ref()) {
            for place in &topo.gpus {
                let ports: Vec<&crate::store::NicView> = n
                    .nics
                    .iter()
                    .filter(|p| place.nearest_nics.contains(&p.latest.device))
                    .collect();
                if !ports.is_empty() && ports.iter().all(|p| !p.latest.is_up()) {
                    let names: Vec<String> = ports.iter().map(|p| p.latest.label()).collect();
                    out.push(raw(
                        Severity::Crit,
                        "gpu-nic-down",
                        Some(n.name.clone()),
                        Some(place.index),
                        format!("nearest NIC {} is down; GPUDirect RDMA for this GPU crosses to a farther NIC", names.join(", ")),
                        "bring the port up (cable, switch port) before multi-node phases",
                    ));
                }
            }
        }
        for view in &n.netdevs {
            let d = &view.latest;
            if d.operstate.as_deref().is_some_and(|s| s != "up") {
                out.push(
                    raw(
                        Severity::Warn,
                        "netdev-down",
                        Some(n.name.clone()),
                        None,
                        format!("{} is {}", d.iface, d.operstate.as_deref().unwrap_or("?")),
                        "check the cable and the switch port; for a bond, its members",
                    )
                    .about(&d.iface),
                );
                continue;
            }
            let errors = view.counters.rises(
                &[
                    "rx_errors",
                    "tx_errors",
                    "rx_crc_errors",
                    "tx_carrier_errors",
                ],
                window_ms,
            );
            if !errors.is_empty() {
                out.push(raw(
                    Severity::Warn,
                    "netdev-errors",
                    Some(n.name.clone()),
                    None,
                    format!("{}: {} in the last {secs} s", d.iface, errors.join(", ")),
                    "ethtool -S on the interface; replace the cable/transceiver if CRC errors keep rising",
                ).about(&d.iface));
            }
            let drops = view
                .counters
                .rises(&["rx_dropped", "tx_dropped", "rx_missed_errors"], window_ms);
            if !drops.is_empty() {
                out.push(
                    raw(
                        Severity::Info,
                        "netdev-drops",
                        Some(n.name.clone()),
                        None,
                        format!("{}: {} in the last {secs} s", d.iface, drops.join(", ")),
                        "ring buffer size and IRQ affinity (ethtool -g/-G); drops slow the S3 path",
                    )
                    .about(&d.iface),
                );
            }
        }
        for p in &n.nics {
            let l = &p.latest;
            let subject = Some(n.name.clone());
            let port = l.label();
            if !l.is_up() {
                out.push(
                    raw(
                        Severity::Crit,
                        "nic-down",
                        subject,
                        None,
                        format!(
                            "{port} is {} ({})",
                            l.state.as_deref().unwrap_or("in an unknown state"),
                            l.phys_state.as_deref().unwrap_or("physical state n/a")
                        ),
                        "check the cable, transceiver and switch port; ibstat on the node",
                    )
                    .about(&port),
                );
                continue;
            }
            let layer = l.link_layer.as_deref().unwrap_or("");
            let (want, whose) = match n.expected_nic_rate_gbps {
                Some(r) => (Some(r), "the inventory expects"),
                None => (usual(layer), "its peers run at"),
            };
            if let (Some(rate), Some(want)) = (l.rate_gbps, want)
                && rate < want
            {
                out.push(
                    raw(
                        Severity::Warn,
                        "nic-slow",
                        subject.clone(),
                        None,
                        format!("{port} trained at {rate:.0} Gb/s; {whose} {want:.0} Gb/s"),
                        "reseat or replace the cable/transceiver; check the switch port speed",
                    )
                    .about(&port),
                );
            }
            let link_errors = p.rises(LINK_ERROR_COUNTERS, window_ms);
            let downed = p.rise("link_downed", window_ms);
            if downed > 0 || !link_errors.is_empty() {
                let mut why = link_errors;
                if downed > 0 {
                    why.insert(0, format!("link_downed +{downed}"));
                }
                out.push(
                    raw(
                        if downed > 0 {
                            Severity::Crit
                        } else {
                            Severity::Warn
                        },
                        "nic-errors",
                        subject.clone(),
                        None,
                        format!("{port}: {} in the last {secs} s", why.join(", ")),
                        "ibdiagnet/perfquery on the link; replace the cable if errors keep rising",
                    )
                    .about(&port),
                );
            }
            let wait_per_s =
                p.rise("port_xmit_wait", window_ms) as f64 / (window_ms as f64 / 1000.0);
            if wait_per_s > XMIT_WAIT_TICKS_PER_SEC
                && p.line_share().is_some_and(|s| s < CONGESTED_LINE_SHARE)
            {
                out.push(raw(
                    Severity::Warn,
                    "nic-congested",
                    subject.clone(),
                    None,
                    format!(
                        "{port} waits to send ({wait_per_s:.0} xmit_wait ticks/s) while moving {:.0} % of line rate",
                        p.line_share().unwrap_or(0.0) * 100.0
                    ),
                    "check PFC/ECN settings and the switch's egress queues on this path",
                ).about(&port));
            }
            let retrans = p.rises(RETRANS_COUNTERS, window_ms);
            if !retrans.is_empty() {
                out.push(
                    raw(
                        Severity::Warn,
                        "nic-retrans",
                        subject,
                        None,
                        format!("{port}: {} in the last {secs} s", retrans.join(", ")),
                        "look for congestion (PFC/ECN/CNP counters) and lossy links on the path",
                    )
                    .about(&port),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Severity;
    use crate::model::SourceEvent;
    use crate::triage::tests::kit::findings_after;

    #[test]
    fn a_gpu_whose_nearest_nic_is_down_is_named() {
        let f = findings_after(1, 3, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                f.nics[1].state = Some("DOWN".into());
                f.nics[1].phys_state = Some("Disabled".into());
            }
        });
        let gpus: Vec<u32> = f
            .iter()
            .filter(|x| x.rule == "gpu-nic-down")
            .filter_map(|x| x.gpu)
            .collect();
        // One NIC per GPU on the simulated board: mlx5_1 is GPU1's rail.
        assert_eq!(gpus, [1], "{f:?}");
        assert!(
            f.iter()
                .any(|x| x.rule == "nic-down" && x.why == "mlx5_1/1 is DOWN (Disabled)")
        );
    }

    #[test]
    fn waiting_while_idle_is_congestion_waiting_while_busy_is_not() {
        let mut wait = 0u64;
        let f = findings_after(1, 12, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                wait += 50_000_000;
                f.nics[0].counters.port_xmit_wait = Some(wait);
                f.nics[0].tx_bytes_per_sec = Some(2e9);
            }
        });
        assert!(
            f.iter()
                .any(|x| x.rule == "nic-congested" && x.why.starts_with("mlx5_0/1 waits")),
            "{f:?}"
        );
        assert!(
            !f.iter()
                .any(|x| x.rule == "nic-congested" && x.why.starts_with("mlx5_1/1"))
        );
    }

    #[test]
    fn ethernet_errors_warn_and_drops_inform() {
        use crate::model::NetSample;
        let mut k = 0u64;
        let f = findings_after(1, 5, vec![], |e| {
            if let SourceEvent::Frame(f) = e {
                k += 1;
                let counters = crate::model::PortCounters {
                    rx_crc_errors: Some(k * 3),
                    rx_dropped: Some(k),
                    tx_errors: Some(0),
                    ..Default::default()
                };
                f.netdevs = vec![
                    NetSample {
                        iface: "bond0".into(),
                        operstate: Some("up".into()),
                        counters,
                        ..NetSample::default()
                    },
                    NetSample {
                        iface: "eth3".into(),
                        operstate: Some("down".into()),
                        ..NetSample::default()
                    },
                ];
            }
        });
        let get = |rule: &str| {
            f.iter()
                .find(|x| x.rule == rule)
                .map(|x| (x.severity, x.why.clone()))
        };
        assert_eq!(
            get("netdev-errors"),
            Some((
                Severity::Warn,
                "bond0: rx_crc_errors +15 in the last 10 s".into()
            ))
        );
        assert_eq!(get("netdev-drops").map(|x| x.0), Some(Severity::Info));
        assert_eq!(
            get("netdev-down"),
            Some((Severity::Warn, "eth3 is down".into()))
        );
    }
}
