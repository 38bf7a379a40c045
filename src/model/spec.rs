//! What each GPU and NIC model is and should do, with where every number comes from: the table
//! burnin ships (`specs/hardware.toml`), keyed by PCI device ID and by the name `nvidia-smi`
//! prints. A figure without a source is refused where the table is read, as is a figure name
//! burnin does not know (a typo would otherwise be a floor nobody applies). An unknown model is
//! never guessed at: [`HardwareSpec::gpu_by_pci`] and [`HardwareSpec::gpu_by_name`] say `None`,
//! and the caller says so with the ID.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// The table burnin ships.
pub const SHIPPED: &str = include_str!("../../specs/hardware.toml");

/// The figures a GPU entry may carry: name, unit, what it is.
pub const GPU_FIGURES: &[(&str, &str, &str)] = &[
    ("memory_gb", "GB", "HBM capacity"),
    ("hbm_bandwidth_gbs", "GB/s", "HBM bandwidth as published"),
    ("tgp_w", "W", "board power (TGP) as the vendor states it"),
    (
        "dcgm_target_power_w",
        "W",
        "the power DCGM's targeted-power test aims for (at or under the board limit)",
    ),
    (
        "dcgm_memory_bandwidth_mbs",
        "MB/s",
        "DCGM diagnostic's memory bandwidth floor",
    ),
    ("nvlink_links", "links", "NVLink links active per GPU"),
    (
        "nvlink_bandwidth_gbs",
        "GB/s",
        "NVLink bandwidth per GPU, one direction",
    ),
    (
        "gemm_bf16_tflops",
        "TFLOPS",
        "dense BF16 matmul, highest measured (a maximum; a floor is a share of it)",
    ),
    (
        "gemm_fp8_tflops",
        "TFLOPS",
        "dense FP8 matmul, highest measured (a maximum; a floor is a share of it)",
    ),
    (
        "nccl_all_reduce_in_node_gbs",
        "GB/s",
        "floor: NCCL all_reduce busbw over one node's GPUs",
    ),
    (
        "nccl_two_node_all_gather_gbs",
        "GB/s",
        "floor: NCCL all_gather busbw between two nodes",
    ),
    (
        "nvbandwidth_h2d_gbs",
        "GB/s",
        "floor: nvbandwidth host to device",
    ),
    (
        "nvbandwidth_d2h_gbs",
        "GB/s",
        "floor: nvbandwidth device to host",
    ),
    (
        "nvbandwidth_p2p_gbs",
        "GB/s",
        "floor: nvbandwidth GPU to GPU",
    ),
    (
        "ib_gdr_loopback_gbits",
        "Gbit/s",
        "floor: ib_write_bw GPUDirect loopback between two HCAs of one node",
    ),
    (
        "gpu_temp_max_c",
        "°C",
        "GPU temperature above which a node is unhealthy",
    ),
    (
        "hbm_temp_max_c",
        "°C",
        "HBM temperature above which a node is unhealthy",
    ),
    (
        "hang_power_below_w",
        "W",
        "GPU-hang sign: loaded yet drawing under this (a kernel spinning on a few SMs)",
    ),
    (
        "hang_sm_clock_above_mhz",
        "MHz",
        "GPU-hang sign: the SM clock stays at or above this (not a power-saving idle)",
    ),
];

/// The figures a NIC entry may carry: name, unit, what it is.
pub const NIC_FIGURES: &[(&str, &str, &str)] = &[
    ("line_rate_gbits", "Gbit/s", "port line rate"),
    ("pcie_lanes", "lanes", "PCIe link width"),
    ("pcie_gts", "GT/s", "PCIe link speed per lane"),
    (
        "one_way_gbits",
        "Gbit/s",
        "floor: ib_write_bw one way between two nodes",
    ),
];

/// One number of the table and where it comes from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The number, in the unit its name says.
    pub value: f64,
    /// A vendor document, DCGM's own tables, a peer's shipped spec, or a measurement with
    /// its machine.
    pub source: String,
}

/// One GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// Short name: `H200`, `B300`.
    pub model: String,
    /// PCI device IDs (vendor 0x10DE) of its boards.
    pub pci_device_ids: Vec<u16>,
    /// What `nvidia-smi --query-gpu=name` prints for it.
    pub names: Vec<String>,
    /// Its figures by name (see [`GPU_FIGURES`]).
    pub figures: BTreeMap<String, Figure>,
}

/// One NIC model.
#[derive(Debug, Clone, PartialEq)]
pub struct NicSpec {
    /// Short name: `ConnectX-7`.
    pub model: String,
    /// PCI device IDs (vendor 0x15B3).
    pub pci_device_ids: Vec<u16>,
    /// Its figures by name (see [`NIC_FIGURES`]).
    pub figures: BTreeMap<String, Figure>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HardwareSpec {
    /// GPU models.
    pub gpus: Vec<GpuSpec>,
    /// NIC models.
    pub nics: Vec<NicSpec>,
}

/// Why a spec table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {why}")]
pub struct SpecError {
    /// The table's file.
    pub file: String,
    /// What is wrong, naming the entry and figure.
    pub why: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    gpu: Vec<RawEntry>,
    #[serde(default)]
    nic: Vec<RawEntry>,
}

#[derive(Deserialize)]
struct RawEntry {
    model: String,
    #[serde(default)]
    pci_device_ids: Vec<String>,
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    ids_source: Option<String>,
    #[serde(flatten)]
    figures: BTreeMap<String, Figure>,
}

impl HardwareSpec {
    /// The table burnin ships, read once.
    pub fn shipped() -> &'static HardwareSpec {
        static SPEC: OnceLock<HardwareSpec> = OnceLock::new();
        SPEC.get_or_init(|| {
            // Checked by the tests: the shipped table always reads. Were it ever not to, no
            // model is known, which every caller says as "unknown", never as a guess.
            HardwareSpec::parse("specs/hardware.toml", SHIPPED).unwrap_or_default()
        })
    }

    /// Read a table; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, SpecError> {
        let err = |why: String| SpecError {
            file: file.to_string(),
            why,
        };
        let raw: RawTable =
            toml::from_str(text).map_err(|e| err(crate::model::excerpt(&e.to_string())))?;
        let mut out = HardwareSpec::default();
        for e in raw.gpu {
            let (model, ids, figures) = check_entry(&e, GPU_FIGURES, 0x10DE).map_err(err)?;
            out.gpus.push(GpuSpec {
                model,
                pci_device_ids: ids,
                names: e.names.clone(),
                figures,
            });
        }
        for e in raw.nic {
            let (model, ids, figures) = check_entry(&e, NIC_FIGURES, 0x15B3).map_err(err)?;
            out.nics.push(NicSpec {
                model,
                pci_device_ids: ids,
                figures,
            });
        }
        out.unique_ids().map_err(err)?;
        Ok(out)
    }

    /// This table with a site's entries (a plan's `[[spec.gpu]]` and `[[spec.nic]]`, as TOML
    /// text) laid over it: an entry of a model the table has replaces the figures it names and
    /// keeps the others (its IDs too, unless it gives its own with their source); an entry of
    /// a new model needs its IDs and their source like any other. Every figure still needs its
    /// source. `file` names the plan in errors.
    pub fn with_site(&self, file: &str, text: &str) -> Result<Self, SpecError> {
        let err = |why: String| SpecError {
            file: file.to_string(),
            why: format!("[spec]: {why}"),
        };
        let raw: RawTable =
            toml::from_str(text).map_err(|e| err(crate::model::excerpt(&e.to_string())))?;
        let mut out = self.clone();
        // Triage reads the hang sign's figures from the shipped table (it runs without a plan):
        // a site's value would be accepted and never used.
        for e in &raw.gpu {
            if let Some(name) = e.figures.keys().find(|n| n.starts_with("hang_")) {
                return Err(err(format!(
                    "{}: {name} is read by triage from the table burnin ships, not from a plan",
                    crate::model::excerpt(e.model.trim())
                )));
            }
        }
        for e in &raw.gpu {
            let have = out
                .gpus
                .iter()
                .position(|g| g.model.eq_ignore_ascii_case(e.model.trim()));
            match have {
                Some(i) => {
                    let (ids, figures) = check_override(e, GPU_FIGURES, 0x10DE).map_err(err)?;
                    let g = &mut out.gpus[i];
                    if let Some(ids) = ids {
                        g.pci_device_ids = ids;
                    }
                    g.names.extend(e.names.iter().cloned());
                    g.figures.extend(figures);
                }
                None => {
                    let (model, ids, figures) = check_entry(e, GPU_FIGURES, 0x10DE).map_err(err)?;
                    out.gpus.push(GpuSpec {
                        model,
                        pci_device_ids: ids,
                        names: e.names.clone(),
                        figures,
                    });
                }
            }
        }
        for e in &raw.nic {
            let have = out
                .nics
                .iter()
                .position(|n| n.model.eq_ignore_ascii_case(e.model.trim()));
            match have {
                Some(i) => {
                    let (ids, figures) = check_override(e, NIC_FIGURES, 0x15B3).map_err(err)?;
                    let n = &mut out.nics[i];
                    if let Some(ids) = ids {
                        n.pci_device_ids = ids;
                    }
                    n.figures.extend(figures);
                }
                None => {
                    let (model, ids, figures) = check_entry(e, NIC_FIGURES, 0x15B3).map_err(err)?;
                    out.nics.push(NicSpec {
                        model,
                        pci_device_ids: ids,
                        figures,
                    });
                }
            }
        }
        out.unique_ids().map_err(err)?;
        Ok(out)
    }

    /// No PCI ID in two entries of one kind.
    fn unique_ids(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for id in self.gpus.iter().flat_map(|g| g.pci_device_ids.iter()) {
            if !seen.insert(*id) {
                return Err(format!("GPU PCI device ID {id:#06x} is in two entries"));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in self.nics.iter().flat_map(|n| n.pci_device_ids.iter()) {
            if !seen.insert(*id) {
                return Err(format!("NIC PCI device ID {id:#06x} is in two entries"));
            }
        }
        Ok(())
    }

    /// The GPU model with this PCI device ID.
    pub fn gpu_by_pci(&self, device_id: u16) -> Option<&GpuSpec> {
        self.gpus
            .iter()
            .find(|g| g.pci_device_ids.contains(&device_id))
    }

    /// The GPU model `nvidia-smi` names so (exactly, spaces trimmed).
    pub fn gpu_by_name(&self, name: &str) -> Option<&GpuSpec> {
        let name = name.trim();
        self.gpus
            .iter()
            .find(|g| g.names.iter().any(|n| n.eq_ignore_ascii_case(name)))
    }

    /// The NIC model with this PCI device ID.
    pub fn nic_by_pci(&self, device_id: u16) -> Option<&NicSpec> {
        self.nics
            .iter()
            .find(|n| n.pci_device_ids.contains(&device_id))
    }
}

impl GpuSpec {
    /// A figure of this model (`None`: no sourced number for it).
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.get(name)
    }
}

impl NicSpec {
    /// A figure of this model (`None`: no sourced number for it).
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.get(name)
    }
}

type Checked = (String, Vec<u16>, BTreeMap<String, Figure>);

/// A site's entry over a model: its IDs (`None`: the table's) and its figures.
type Override = (Option<Vec<u16>>, BTreeMap<String, Figure>);

/// A site's entry over a model the table has: its IDs (`None`: keep the table's) and figures,
/// each checked as [`check_entry`] checks them.
fn check_override(
    e: &RawEntry,
    known: &[(&str, &str, &str)],
    vendor: u16,
) -> Result<Override, String> {
    if e.pci_device_ids.is_empty() {
        let model = e.model.trim();
        check_figures(model, &e.figures, known)?;
        return Ok((None, e.figures.clone()));
    }
    let (_, ids, figures) = check_entry(e, known, vendor)?;
    Ok((Some(ids), figures))
}

fn check_figures(
    model: &str,
    figures: &BTreeMap<String, Figure>,
    known: &[(&str, &str, &str)],
) -> Result<(), String> {
    for (name, f) in figures {
        if !known.iter().any(|(k, _, _)| k == name) {
            return Err(format!("{model}: {name} is no figure burnin knows"));
        }
        if !f.value.is_finite() || f.value <= 0.0 {
            return Err(format!(
                "{model}: {name} = {} is not a positive number",
                f.value
            ));
        }
        if f.source.trim().is_empty() {
            return Err(format!(
                "{model}: {name} has no source (a number without one is left out)"
            ));
        }
    }
    Ok(())
}

/// An entry's name, IDs and figures, each checked: a known figure name, a finite positive
/// value, a source.
fn check_entry(e: &RawEntry, known: &[(&str, &str, &str)], vendor: u16) -> Result<Checked, String> {
    let model = e.model.trim();
    if model.is_empty() {
        return Err("an entry without a model".into());
    }
    if e.pci_device_ids.is_empty() {
        return Err(format!("{model}: no PCI device ID"));
    }
    if e.ids_source.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return Err(format!(
            "{model}: ids_source says where its PCI IDs come from"
        ));
    }
    let mut ids = Vec::new();
    for id in &e.pci_device_ids {
        ids.push(parse_device_id(id, vendor).ok_or_else(|| {
            format!("{model}: {id:?} is no PCI device ID (0xNNNN, or 0xNNNN{vendor:04X} as nvidia-smi prints it)")
        })?);
    }
    check_figures(model, &e.figures, known)?;
    Ok((model.to_string(), ids, e.figures.clone()))
}

/// A PCI device ID from `0x2335` or nvidia-smi's `0x233510DE` (device, then `vendor`).
pub fn parse_device_id(text: &str, vendor: u16) -> Option<u16> {
    let hex = text
        .trim()
        .strip_prefix("0x")
        .or_else(|| text.trim().strip_prefix("0X"))?;
    match hex.len() {
        4 => u16::from_str_radix(hex, 16).ok(),
        8 => {
            let both = u32::from_str_radix(hex, 16).ok()?;
            ((both & 0xFFFF) as u16 == vendor).then_some((both >> 16) as u16)
        }
        _ => None,
    }
}

/// What nvidia-smi's `pci.device_id` (`0x233510DE`) says of an NVIDIA GPU's device ID.
pub fn nvidia_device_id(text: &str) -> Option<u16> {
    parse_device_id(text, 0x10DE)
}

mod node;
pub use node::{MAX_PARTS, NodeHardware, NodeParts, Part};

/// Where a figure's unit is a rate that converts to another (GB/s and Gbit/s): the factor
/// from `from` to `to`, `Some(1.0)` for the same unit, `None` where they do not convert.
pub fn unit_factor(from: &str, to: &str) -> Option<f64> {
    match (from, to) {
        (a, b) if a == b => Some(1.0),
        ("GB/s", "Gbit/s") => Some(8.0),
        ("Gbit/s", "GB/s") => Some(1.0 / 8.0),
        ("TFLOP/s", "TFLOPS") | ("TFLOPS", "TFLOP/s") => Some(1.0),
        _ => None,
    }
}

/// A figure name's unit, from [`GPU_FIGURES`] or [`NIC_FIGURES`] (`None`: no such figure).
pub fn figure_unit(name: &str) -> Option<&'static str> {
    GPU_FIGURES
        .iter()
        .chain(NIC_FIGURES.iter())
        .find(|(n, _, _)| *n == name)
        .map(|(_, unit, _)| *unit)
}

#[cfg(test)]
mod tests;
