//! `burnin parse --nodes N --gpu-model MODEL --nics COUNTxMODEL`: the nodes an output came
//! from, as the spec table's entries, so its `spec` gates judge offline as in a run.

use crate::commands::cli::ParseHardware;
use crate::model::spec::{NodeParts, Part};
use crate::plan::Plan;

/// The nodes behind an output: how many, and what each is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct NodesAs {
    /// Nodes the job spanned.
    pub nodes: u32,
    /// Every node's parts.
    pub parts: NodeParts,
}

/// Read the flags against the plan's spec table: a model it does not have is refused with
/// the models it has (a typo would judge nothing). `gpus`: `--gpus` where given; not given,
/// the nodes' GPU count is not known (0), never assumed: a job across nodes is then not
/// judged per RDMA port (the share of a node's ports its ranks used needs it).
pub(super) fn nodes_as(
    h: &ParseHardware,
    plan: &Plan,
    gpus: Option<u32>,
) -> Result<Option<NodesAs>, String> {
    let gpus = gpus.unwrap_or(0);
    if h.nodes.is_none() && h.gpu_model.is_none() && h.nics.is_none() {
        return Ok(None);
    }
    let spec = &plan.hardware;
    let mut parts = NodeParts {
        from: "burnin parse's flags".into(),
        ..NodeParts::default()
    };
    if let Some(name) = &h.gpu_model {
        let g = spec
            .gpus
            .iter()
            .find(|g| same_model(&g.model, name))
            .ok_or_else(|| {
                format!(
                    "--gpu-model {:?} is no model of the spec table (its models: {})",
                    crate::model::excerpt(name),
                    spec.gpus
                        .iter()
                        .map(|g| g.model.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        parts.gpus.push(Part {
            pci_id: g.pci_device_ids.first().copied(),
            name: g.names.first().cloned().unwrap_or_else(|| g.model.clone()),
            count: gpus,
        });
    } else {
        // A job judged per RDMA port needs each node's GPU count (the share of its ports the
        // ranks used), not its model: `--gpus` says it, the model stays unknown.
        parts.gpus.push(Part {
            pci_id: None,
            name: "model not given (--gpu-model)".into(),
            count: gpus,
        });
    }
    if let Some(text) = &h.nics {
        let bad = || {
            format!(
                "--nics {:?}: COUNTxMODEL, e.g. 8xConnectX-7 (the spec's NIC models: {})",
                crate::model::excerpt(text),
                spec.nics
                    .iter()
                    .map(|n| n.model.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let (count, model) = text.trim().split_once(['x', '×']).ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        if !(1..=64).contains(&count) {
            return Err(bad());
        }
        let n = spec
            .nics
            .iter()
            .find(|n| same_model(&n.model, model))
            .ok_or_else(bad)?;
        parts.nics.push(Part {
            pci_id: n.pci_device_ids.first().copied(),
            name: "InfiniBand".into(),
            count,
        });
    }
    Ok(Some(NodesAs {
        nodes: h.nodes.unwrap_or(1),
        parts,
    }))
}

/// A model as typed on a command line: case, spaces, dashes and underscores aside (`H100-SXM`
/// is the table's `H100 SXM`).
fn same_model(table: &str, typed: &str) -> bool {
    let key = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    !key(typed).is_empty() && key(table) == key(typed)
}
