//! T0's answer to "which GPU model is this node?": each GPU of nvidia-smi's list found in the
//! spec table burnin ships (`model::spec`, `specs/hardware.toml`).

use crate::model::phase::{CheckStatus, PhaseMetric};

fn metric(node: &str, name: &str, status: CheckStatus, detail: String) -> PhaseMetric {
    PhaseMetric::Check {
        node: node.to_string(),
        name: name.to_string(),
        status,
        detail,
    }
}

/// Which GPU model the node has, from the spec table (`specs/hardware.toml`): by the PCI
/// device ID nvidia-smi prints (`pci.device_id`, the 5th column), or by the name where an older
/// plan's query has no ID. Two models on one node FAIL; a model the table does not know WARNs
/// with its ID and name (its floors are the plan's), never a guess.
pub fn check(node: &str, gpus: &[Vec<String>]) -> PhaseMetric {
    use crate::model::spec::{HardwareSpec, nvidia_device_id};
    let spec = HardwareSpec::shipped();
    if gpus.is_empty() {
        return metric(
            node,
            "gpu-model",
            CheckStatus::Unknown,
            "no GPU listed: the model is not known".into(),
        );
    }
    // Per model (or unknown ID/name): how many GPUs.
    let mut known: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
    let mut unknown: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
    let mut by_name = false;
    for g in gpus {
        let name = crate::model::excerpt(g.get(1).map(String::as_str).unwrap_or(""));
        let id_text = g.get(4).map(String::as_str).unwrap_or("");
        let found = match g.get(4) {
            Some(_) => nvidia_device_id(id_text).map(|id| (id, spec.gpu_by_pci(id))),
            None => None,
        };
        match found {
            Some((id, Some(model))) => {
                *known
                    .entry(format!("{} (PCI {id:#06x})", model.model))
                    .or_default() += 1
            }
            Some((id, None)) => {
                *unknown
                    .entry(format!("PCI {id:#06x} \"{name}\""))
                    .or_default() += 1
            }
            None if g.get(4).is_some() => {
                let shown = crate::model::excerpt(id_text);
                *unknown
                    .entry(format!("\"{name}\" with no PCI device ID ({shown:?})"))
                    .or_default() += 1
            }
            None => {
                by_name = true;
                match spec.gpu_by_name(&name) {
                    Some(model) => *known.entry(model.model.clone()).or_default() += 1,
                    None => *unknown.entry(format!("\"{name}\"")).or_default() += 1,
                }
            }
        }
    }
    let list = |m: &std::collections::BTreeMap<String, u32>| {
        m.iter()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let how = if by_name {
        " (by name: the query has no pci.device_id)"
    } else {
        ""
    };
    if known.len() + unknown.len() > 1 {
        let all: std::collections::BTreeMap<String, u32> = known
            .iter()
            .chain(unknown.iter())
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        return metric(
            node,
            "gpu-model",
            CheckStatus::Failed,
            format!(
                "GPUs of more than one model on one node: {}{how}",
                list(&all)
            ),
        );
    }
    if !unknown.is_empty() {
        return metric(
            node,
            "gpu-model",
            CheckStatus::Warn,
            format!(
                "{}{how} is in no spec burnin ships (specs/hardware.toml): the plan's own floors judge it",
                list(&unknown)
            ),
        );
    }
    metric(
        node,
        "gpu-model",
        CheckStatus::Ok,
        format!("{}{how}, as specs/hardware.toml knows it", list(&known)),
    )
}

/// The GPUs of nvidia-smi's list as parts: by PCI device ID (the 5th column), by name where
/// the query has none. An ID column that reads as no ID keeps the name and no ID.
pub fn parts(gpus: &[Vec<String>]) -> Vec<crate::model::spec::Part> {
    let mut out = Vec::new();
    for g in gpus {
        let name = g.get(1).map(String::as_str).unwrap_or("");
        let id = g
            .get(4)
            .and_then(|t| crate::model::spec::nvidia_device_id(t));
        crate::model::spec::NodeParts::add(&mut out, id, name);
    }
    out
}

/// The model a `gpu-model` check that held names (`H200 (PCI 0x2335)`), from its words.
fn model_in(detail: &str) -> Option<&str> {
    let (_, rest) = detail.split_once(" × ")?;
    let model = rest.split(", as specs/hardware.toml").next()?;
    let model = model.split(" (by name").next()?;
    (!model.is_empty() && !model.contains(" × ")).then_some(model)
}

/// Across a phase's nodes: the nodes whose GPU model differs from their peers', in words, from
/// each node's `gpu-model` check that held (`(node, detail)`). A model most nodes share names
/// the others; where no model is shared by more than half, every node's is said.
pub fn differing_nodes(held: &[(&str, &str)]) -> Option<String> {
    let mut by_model: std::collections::BTreeMap<&str, Vec<&str>> =
        std::collections::BTreeMap::new();
    for (node, detail) in held {
        if let Some(model) = model_in(detail) {
            by_model.entry(model).or_default().push(node);
        }
    }
    if by_model.len() < 2 {
        return None;
    }
    let total: usize = by_model.values().map(Vec::len).sum();
    let (common, peers) = by_model
        .iter()
        .max_by_key(|(_, nodes)| nodes.len())
        .map(|(m, n)| (*m, n.len()))?;
    if peers * 2 > total {
        let odd: Vec<String> = by_model
            .iter()
            .filter(|(m, _)| **m != common)
            .flat_map(|(m, nodes)| nodes.iter().map(move |n| format!("{n} has {m}")))
            .collect();
        return Some(format!(
            "{} where its {peers} peers have {common}",
            odd.join(", ")
        ));
    }
    let all: Vec<String> = by_model
        .iter()
        .map(|(m, nodes)| format!("{} on {}", m, nodes.join(", ")))
        .collect();
    Some(format!("the nodes' GPU models differ: {}", all.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
            .collect()
    }

    fn said(text: &str) -> (CheckStatus, String) {
        match check("node01", &rows(text)) {
            PhaseMetric::Check { status, detail, .. } => (status, detail),
            other => panic!("{other:?}"),
        }
    }

    /// The H200 of shared/fixtures/h200 (`0x233510DE`, `NVIDIA H200`), as T0's query prints it.
    #[test]
    fn a_known_model_is_named_with_its_id() {
        let (status, detail) = said(
            "0, NVIDIA H200, 00000000:18:00.0, Enabled, 0x233510DE\n1, NVIDIA H200, 00000000:2A:00.0, Enabled, 0x233510DE",
        );
        assert_eq!(status, CheckStatus::Ok, "{detail}");
        assert_eq!(
            detail,
            "2 × H200 (PCI 0x2335), as specs/hardware.toml knows it"
        );
        // A B300 site: its ID and name as the driver's product table gives them.
        let (status, detail) =
            said("0, NVIDIA B300 SXM6 AC, 00000000:18:00.0, Enabled, 0x318210DE");
        assert_eq!(
            (status, detail.as_str()),
            (
                CheckStatus::Ok,
                "1 × B300 (PCI 0x3182), as specs/hardware.toml knows it"
            )
        );
    }

    #[test]
    fn an_unknown_model_warns_with_its_id_never_a_guess() {
        let (status, detail) = said("0, NVIDIA Future GPU, 00000000:18:00.0, Enabled, 0x9A9910DE");
        assert_eq!(status, CheckStatus::Warn, "{detail}");
        assert!(
            detail.contains("PCI 0x9a99 \"NVIDIA Future GPU\""),
            "{detail}"
        );
        assert!(
            detail.contains("the plan's own floors judge it"),
            "{detail}"
        );
        // An ID nvidia-smi could not give.
        let (status, detail) = said("0, NVIDIA H200, 00000000:18:00.0, Enabled, [N/A]");
        assert_eq!(status, CheckStatus::Warn, "{detail}");
        assert!(detail.contains("no PCI device ID (\"[N/A]\")"), "{detail}");
    }

    #[test]
    fn two_models_on_one_node_fail() {
        let (status, detail) = said(
            "0, NVIDIA H200, 00000000:18:00.0, Enabled, 0x233510DE\n1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, Enabled, 0x233010DE",
        );
        assert_eq!(status, CheckStatus::Failed, "{detail}");
        assert!(
            detail.contains("1 × H100 SXM (PCI 0x2330), 1 × H200 (PCI 0x2335)"),
            "{detail}"
        );
    }

    /// An older plan's query (four columns): the model by its name, and said so.
    #[test]
    fn without_the_id_column_the_name_decides_and_it_is_said() {
        let (status, detail) = said("0, NVIDIA H200, 00000000:18:00.0, Enabled");
        assert_eq!(status, CheckStatus::Ok, "{detail}");
        assert!(detail.contains("1 × H200 (by name"), "{detail}");
        let (status, _) = said("");
        assert_eq!(status, CheckStatus::Unknown);
    }

    #[test]
    fn a_node_whose_model_differs_from_its_peers_is_named() {
        let h200 = "8 × H200 (PCI 0x2335), as specs/hardware.toml knows it";
        let h100 = "8 × H100 SXM (PCI 0x2330), as specs/hardware.toml knows it";
        assert_eq!(differing_nodes(&[("n1", h200), ("n2", h200)]), None);
        assert_eq!(
            differing_nodes(&[("n1", h200), ("n2", h100), ("n3", h200)]).as_deref(),
            Some("n2 has H100 SXM (PCI 0x2330) where its 2 peers have H200 (PCI 0x2335)")
        );
        // Two nodes, two models: neither is the odd one.
        assert_eq!(
            differing_nodes(&[("n1", h200), ("n2", h100)]).as_deref(),
            Some(
                "the nodes' GPU models differ: H100 SXM (PCI 0x2330) on n2; H200 (PCI 0x2335) on n1"
            )
        );
        // Told by name (an older query) and by ID: the same model only where the words agree.
        let by_name =
            "8 × H200 (by name: the query has no pci.device_id), as specs/hardware.toml knows it";
        assert_eq!(model_in(by_name), Some("H200"));
        assert_eq!(model_in("garbage"), None);
    }
}
