//! What one node was found to be (its GPUs' and RDMA NICs' PCI IDs, as T0 read them, or its
//! GPUs' names as its telemetry said them) and which entries of the spec table that makes it:
//! the floors the gates read for that node.

use serde::{Deserialize, Serialize};

use super::{GpuSpec, HardwareSpec, NicSpec};

/// Most parts kept of one node: a node has a few GPU and NIC models at most; a hostile T0
/// output listing thousands of IDs is cut here, and the cut is said.
pub const MAX_PARTS: usize = 16;

/// One kind of part of a node: its PCI device ID (where known), its name, how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// PCI device ID (`None`: only the name is known, e.g. an older T0 query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<u16>,
    /// Its name as the tool printed it (GPU), or the RDMA device's link layer (NIC).
    pub name: String,
    /// How many GPUs, or RDMA ports.
    pub count: u32,
}

/// What a node is made of, as read: its GPUs and its RDMA ports, each grouped by ID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeParts {
    /// GPUs by PCI device ID (or name).
    #[serde(default)]
    pub gpus: Vec<Part>,
    /// RDMA ports by PCI device ID.
    #[serde(default)]
    pub nics: Vec<Part>,
    /// Where it was read: `T0`, or `telemetry` (the GPUs' names the agent said, no IDs).
    pub from: String,
}

impl NodeParts {
    /// Count one part of `list` (cut at [`MAX_PARTS`] kinds).
    pub fn add(list: &mut Vec<Part>, pci_id: Option<u16>, name: &str) {
        let name = crate::model::excerpt(name.trim());
        if let Some(p) = list
            .iter_mut()
            .find(|p| p.pci_id == pci_id && p.name == name)
        {
            p.count = p.count.saturating_add(1);
        } else if list.len() < MAX_PARTS {
            list.push(Part {
                pci_id,
                name,
                count: 1,
            });
        }
    }
}

/// A node's entries in the spec table, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeHardware {
    /// Its GPU model's entry, or why none judges it (no GPU listed, an ID the table does not
    /// know, two models).
    pub gpu: Result<GpuSpec, String>,
    /// Its NIC model's entry, or why none judges it.
    pub nic: Result<NicSpec, String>,
    /// RDMA ports of that NIC model on the node (0 where the model is not known).
    pub nic_ports: u32,
    /// Whether the node's RDMA ports were read at all (T0 lists them; a node known only from
    /// its telemetry's GPU names was not asked): unread, a NIC floor is not judged rather than
    /// warned of as an unknown model.
    pub nics_read: bool,
    /// GPUs on the node.
    pub gpus: u32,
    /// Where the parts were read (`T0`, `telemetry`).
    pub from: String,
}

/// A part in words; its name as read may come from a record on disk: cut and made inert.
fn describe(p: &Part) -> String {
    let name = crate::model::excerpt(&crate::model::strip_controls(&p.name));
    match p.pci_id {
        Some(id) => format!("PCI {id:#06x} \"{name}\""),
        None => format!("\"{name}\""),
    }
}

impl HardwareSpec {
    /// Which entries judge a node of these parts. One model each, found by PCI ID (by name
    /// where no ID was read); anything else is an `Err` saying why, with the ID, never a guess.
    pub fn resolve(&self, parts: &NodeParts) -> NodeHardware {
        // A record on disk may hold more kinds than T0 ever keeps: cut as `add` would have.
        let gpus = &parts.gpus[..parts.gpus.len().min(MAX_PARTS)];
        let nics = &parts.nics[..parts.nics.len().min(MAX_PARTS)];
        let gpu = match gpus {
            [] => Err("no GPU listed".to_string()),
            [one] => {
                let found = match one.pci_id {
                    Some(id) => self.gpu_by_pci(id),
                    None => self.gpu_by_name(&one.name),
                };
                found.cloned().ok_or_else(|| {
                    format!(
                        "{} is no model of the spec table (specs/hardware.toml, or the plan's [[spec.gpu]])",
                        describe(one)
                    )
                })
            }
            many => Err(format!(
                "GPUs of {} models ({})",
                many.len(),
                many.iter().map(describe).collect::<Vec<_>>().join(", ")
            )),
        };
        let (nic, nic_ports) = self.compute_nics(nics);
        NodeHardware {
            gpu,
            nic,
            nic_ports,
            nics_read: !nics.is_empty() || parts.from == "T0",
            gpus: gpus.iter().fold(0u32, |n, p| n.saturating_add(p.count)),
            from: parts.from.clone(),
        }
    }
}

impl HardwareSpec {
    /// The NIC model of the node's compute fabric and its port count: InfiniBand ports where
    /// the node has any of a known model (a DGX's Ethernet front-end and storage ports are
    /// not NCCL's rails), else Ethernet ones (RoCE); of that link layer, the model with the
    /// most ports.
    fn compute_nics(&self, nics: &[Part]) -> (Result<NicSpec, String>, u32) {
        if nics.is_empty() {
            return (Err("no RDMA port listed".to_string()), 0);
        }
        let known: Vec<(&Part, &NicSpec)> = nics
            .iter()
            .filter_map(|p| Some((p, self.nic_by_pci(p.pci_id?)?)))
            .collect();
        if known.is_empty() {
            return (
                Err(format!(
                    "RDMA devices of no model of the spec table ({})",
                    nics.iter().map(describe).collect::<Vec<_>>().join(", ")
                )),
                0,
            );
        }
        let ib = known
            .iter()
            .any(|(p, _)| p.name.eq_ignore_ascii_case("InfiniBand"));
        let mut by_model: std::collections::BTreeMap<&str, (u32, &NicSpec)> =
            std::collections::BTreeMap::new();
        for (p, n) in &known {
            if ib && !p.name.eq_ignore_ascii_case("InfiniBand") {
                continue;
            }
            let e = by_model.entry(n.model.as_str()).or_insert((0, n));
            e.0 = e.0.saturating_add(p.count);
        }
        match by_model.values().max_by_key(|(ports, _)| *ports) {
            Some((ports, n)) => (Ok((*n).clone()), *ports),
            None => (Err("no RDMA port of a known model".to_string()), 0),
        }
    }
}
