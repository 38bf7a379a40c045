//! T0's answer to "which NICs does this node have, and at what rate did their ports train?":
//! each RDMA device under `/sys/class/infiniband` found by its PCI device ID in the spec table
//! burnin ships (`model::spec`, `specs/hardware.toml`).
//!
//! The `nics` section is one line per device port, as the shipped T0 prints it:
//! `mlx5_0 1 0x1021 InfiniBand 400 Gb/sec (4X NDR)` — device, port, its PCI device ID
//! (`device/device`), the port's link layer, its rate as the kernel says it (`ports/N/rate`).

use crate::model::phase::{CheckStatus, PhaseMetric};
use crate::model::spec::{HardwareSpec, parse_device_id};

/// Mellanox's PCI vendor ID.
const MELLANOX: u16 = 0x15B3;

fn metric(node: &str, status: CheckStatus, detail: String) -> PhaseMetric {
    PhaseMetric::Check {
        node: node.to_string(),
        name: "nic-model".to_string(),
        status,
        detail,
    }
}

/// One port of the `nics` section.
struct Port<'a> {
    device: &'a str,
    port: &'a str,
    id: Option<u16>,
    id_text: &'a str,
    rate_gbits: Option<f64>,
}

fn port(line: &str) -> Option<Port<'_>> {
    let mut words = line.split_whitespace();
    let device = words.next()?;
    let port = words.next()?;
    let id_text = words.next().unwrap_or("");
    let _link_layer = words.next();
    let rate_gbits = words
        .next()
        .and_then(|r| r.parse::<f64>().ok())
        .filter(|r| r.is_finite() && *r >= 0.0);
    Some(Port {
        device,
        port,
        id: parse_device_id(id_text, MELLANOX),
        id_text,
        rate_gbits,
    })
}

/// The `nics` section's ports as parts (by PCI device ID; the name is the link layer).
pub fn parts(lines: &[String]) -> Vec<crate::model::spec::Part> {
    let mut out = Vec::new();
    for l in lines {
        if let Some(p) = port(l) {
            let layer = l.split_whitespace().nth(3).unwrap_or("");
            crate::model::spec::NodeParts::add(&mut out, p.id, layer);
        }
    }
    out
}

/// The node's NICs by model, and any port trained below its model's line rate (a WARN: a
/// site may run NDR200 on a ConnectX-7 by choice; the bandwidth phases judge what it carries).
/// A device the table does not know WARNs naming its ID, never a guess; no RDMA device at all
/// cannot be judged here (the `rdma-userspace` check and the network phases say more).
pub fn check(node: &str, lines: &[String]) -> PhaseMetric {
    let spec = HardwareSpec::shipped();
    let ports: Vec<Port<'_>> = lines.iter().filter_map(|l| port(l)).collect();
    if ports.is_empty() {
        return metric(
            node,
            CheckStatus::Unknown,
            "no RDMA device in /sys/class/infiniband: the NIC model is not known".into(),
        );
    }
    let mut models: std::collections::BTreeMap<String, std::collections::BTreeSet<&str>> =
        std::collections::BTreeMap::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut slow: Vec<String> = Vec::new();
    let mut unbelievable: Vec<String> = Vec::new();
    for p in &ports {
        let Some(model) = p.id.and_then(|id| spec.nic_by_pci(id)) else {
            unknown.push(format!(
                "{} ({})",
                crate::model::excerpt(p.device),
                crate::model::excerpt(p.id_text)
            ));
            continue;
        };
        let id = p.id.unwrap_or_default();
        models
            .entry(format!("{} (PCI {id:#06x})", model.model))
            .or_default()
            .insert(p.device);
        let line = model.figure("line_rate_gbits");
        // A port faster than its model can run is a reading that cannot be true (the wrong
        // ID, a garbled rate file): not believed, never counted as "at line rate".
        if let (Some(rate), Some(line)) = (p.rate_gbits, line)
            && rate > line.value
        {
            unbelievable.push(format!(
                "{} port {} reads {rate} Gb/s, above its {}'s line rate {}: not believed",
                crate::model::excerpt(p.device),
                crate::model::excerpt(p.port),
                model.model,
                line.value
            ));
        }
        if let (Some(rate), Some(line)) = (p.rate_gbits, line)
            && rate < line.value
        {
            slow.push(format!(
                "{} port {} at {rate} Gb/s, its {}'s line rate {}",
                crate::model::excerpt(p.device),
                crate::model::excerpt(p.port),
                model.model,
                line.value
            ));
        }
    }
    let known = models
        .iter()
        .map(|(m, devices)| format!("{} × {m}", devices.len()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut warn = Vec::new();
    if !unknown.is_empty() {
        warn.push(format!(
            "{} RDMA device(s) of no model burnin ships a spec for (specs/hardware.toml): {}",
            unknown.len(),
            unknown.join(", ")
        ));
    }
    if !unbelievable.is_empty() {
        warn.push(unbelievable.join("; "));
    }
    if !slow.is_empty() {
        warn.push(format!(
            "{} port(s) below line rate: {}",
            slow.len(),
            slow.join("; ")
        ));
    }
    if warn.is_empty() {
        return metric(
            node,
            CheckStatus::Ok,
            format!("{known}, every port at line rate"),
        );
    }
    let known = if known.is_empty() {
        String::new()
    } else {
        format!("{known}; ")
    };
    metric(
        node,
        CheckStatus::Warn,
        format!("{known}{}", warn.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> (CheckStatus, String) {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        match check("node01", &lines) {
            PhaseMetric::Check { status, detail, .. } => (status, detail),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nics_at_line_rate_are_named_by_model() {
        let (status, detail) = said(
            "mlx5_0 1 0x1021 InfiniBand 400 Gb/sec (4X NDR)\nmlx5_1 1 0x1021 InfiniBand 400 Gb/sec (4X NDR)",
        );
        assert_eq!(status, CheckStatus::Ok, "{detail}");
        assert_eq!(
            detail,
            "2 × ConnectX-7 (PCI 0x1021), every port at line rate"
        );
        // A ConnectX-8 at XDR.
        let (status, detail) = said("mlx5_0 1 0x1023 InfiniBand 800 Gb/sec (4X XDR)");
        assert_eq!(
            (status, detail.as_str()),
            (
                CheckStatus::Ok,
                "1 × ConnectX-8 (PCI 0x1023), every port at line rate"
            )
        );
    }

    #[test]
    fn a_port_below_line_rate_and_an_unknown_device_warn_with_what_was_read() {
        let (status, detail) = said(
            "mlx5_0 1 0x1021 InfiniBand 400 Gb/sec (4X NDR)\nmlx5_3 1 0x1021 InfiniBand 200 Gb/sec (2X NDR)\nmlx5_9 1 0x1017 Ethernet 100 Gb/sec (4X EDR)",
        );
        assert_eq!(status, CheckStatus::Warn, "{detail}");
        assert!(
            detail.starts_with("2 × ConnectX-7 (PCI 0x1021); "),
            "{detail}"
        );
        assert!(
            detail.contains("1 RDMA device(s) of no model burnin ships a spec for (specs/hardware.toml): mlx5_9 (0x1017)"),
            "{detail}"
        );
        assert!(
            detail.contains("mlx5_3 port 1 at 200 Gb/s, its ConnectX-7's line rate 400"),
            "{detail}"
        );
    }

    #[test]
    fn no_rdma_device_is_not_known_and_garbage_is_no_port() {
        assert_eq!(said("").0, CheckStatus::Unknown);
        let (status, detail) = said("mlx5_0");
        assert_eq!(status, CheckStatus::Unknown, "{detail}");
        // A rate that is no number is not judged against the line rate.
        let (status, _) = said("mlx5_0 1 0x1021 InfiniBand NaN Gb/sec");
        assert_eq!(status, CheckStatus::Ok);
        // A ConnectX-7 port reading 800: cannot be true, so never "at line rate".
        let (status, detail) = said("mlx5_0 1 0x1021 InfiniBand 800 Gb/sec (4X XDR)");
        assert_eq!(status, CheckStatus::Warn, "{detail}");
        assert!(
            detail.contains(
                "mlx5_0 port 1 reads 800 Gb/s, above its ConnectX-7's line rate 400: not believed"
            ),
            "{detail}"
        );
    }
}
