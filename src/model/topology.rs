//! Which NIC and which NUMA node sit nearest each GPU: the types a node's hello carries
//! (`agent::topology` reads them from `nvidia-smi topo -m`).

use serde::{Deserialize, Serialize};

/// How two devices connect, nearest first (the order NCCL cares about).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The device itself.
    Itself,
    /// A bonded set of N NVLinks.
    NvLink(u32),
    /// At most one PCIe bridge.
    Pix,
    /// Several PCIe bridges, no host bridge.
    Pxb,
    /// Through a PCIe host bridge (the CPU).
    Phb,
    /// Between host bridges within a NUMA node.
    Node,
    /// Across the SMP interconnect between NUMA nodes (`SOC` on old drivers).
    Sys,
    /// A cell this parser does not know, kept as printed.
    Other(String),
}

impl Link {
    /// Parse one matrix cell.
    pub fn parse(cell: &str) -> Option<Link> {
        Some(match cell {
            "X" => Link::Itself,
            "PIX" => Link::Pix,
            "PXB" => Link::Pxb,
            "PHB" => Link::Phb,
            "NODE" => Link::Node,
            "SYS" | "SOC" => Link::Sys,
            c if c.starts_with("NV") => Link::NvLink(c[2..].parse().ok()?),
            _ => return None,
        })
    }

    /// As `nvidia-smi` prints it.
    pub fn label(&self) -> String {
        match self {
            Link::Itself => "X".into(),
            Link::NvLink(n) => format!("NV{n}"),
            Link::Pix => "PIX".into(),
            Link::Pxb => "PXB".into(),
            Link::Phb => "PHB".into(),
            Link::Node => "NODE".into(),
            Link::Sys => "SYS".into(),
            Link::Other(s) => s.clone(),
        }
    }
}

/// One GPU's place in the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPlace {
    /// GPU index (`GPU3` → 3).
    pub index: u32,
    /// CPUs nearest the GPU, as printed (`0-47,96-143`).
    pub cpu_affinity: Option<String>,
    /// NUMA node nearest the GPU.
    pub numa_node: Option<i32>,
    /// The nearest NICs (all at the closest link kind), by RDMA device name when the legend
    /// gives one (`mlx5_0`), else as `NIC0`.
    pub nearest_nics: Vec<String>,
    /// How the nearest NICs connect.
    pub nic_link: Option<Link>,
}

/// What `nvidia-smi topo -m` says about a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// One entry per GPU row.
    pub gpus: Vec<GpuPlace>,
    /// NIC names in column order (`mlx5_0`, or `NIC0` without a legend).
    pub nics: Vec<String>,
}
