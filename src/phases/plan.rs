//! The site's T1–T8 acceptance ladder as data: id, title, scope and the gate in words. Plan files
//! (TOML, templates, timeouts, dependencies) come with the phase runner; until then this table is
//! the plan the console shows and the simulator runs.

use serde::Serialize;

/// Where a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Once on every node.
    EachNode,
    /// Once on every GPU.
    EachGpu,
    /// One job over the GPUs of one node.
    Node8Gpu,
    /// One job across nodes.
    MultiNode,
}

impl Scope {
    /// Words for the phases pane.
    pub fn label(self) -> &'static str {
        match self {
            Scope::EachNode => "each node",
            Scope::EachGpu => "each GPU",
            Scope::Node8Gpu => "8 GPU",
            Scope::MultiNode => "16+ GPU",
        }
    }
}

/// One phase of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSpec {
    /// Short id, e.g. "T4".
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// Where it runs.
    pub scope: Scope,
    /// What passing proves.
    pub proves: &'static str,
    /// The engineering gate in words.
    pub gate: &'static str,
}

/// The site's default ladder (DESIGN.md), each layer isolating one failure domain.
pub const DEFAULT_PLAN: &[PhaseSpec] = &[
    PhaseSpec {
        id: "T1",
        title: "GPU/CUDA sanity",
        scope: Scope::EachNode,
        proves: "driver, fabric manager and GPUs healthy",
        gate: "GPU count as expected, Xid = 0, driver == fabric-manager version",
    },
    PhaseSpec {
        id: "T2",
        title: "compute (GEMM)",
        scope: Scope::EachGpu,
        proves: "BF16 / FP8 tensor throughput",
        gate: ">= 90 % of baseline; no GPU < 90 % of peer median",
    },
    PhaseSpec {
        id: "T3",
        title: "NVLink/NVSwitch",
        scope: Scope::EachNode,
        proves: "every GPU pair reaches its bandwidth",
        gate: ">= 90 % of baseline, no slow pair, no NVLink errors",
    },
    PhaseSpec {
        id: "T4",
        title: "single-node NCCL",
        scope: Scope::EachNode,
        proves: "all_reduce busbw and correctness",
        gate: "#wrong = 0, busbw >= 90 % of baseline",
    },
    PhaseSpec {
        id: "T5",
        title: "LLM training",
        scope: Scope::Node8Gpu,
        proves: "tokens/s, step time, MFU, scaling 1->8",
        gate: "8-GPU scaling >= 81 %",
    },
    PhaseSpec {
        id: "T6",
        title: "large-model LoRA",
        scope: Scope::Node8Gpu,
        proves: "stable loss, no OOM, checkpoint written",
        gate: "loss finite and falling, checkpoint ok",
    },
    PhaseSpec {
        id: "T7",
        title: "multi-node NCCL (RDMA)",
        scope: Scope::MultiNode,
        proves: "NET/IB chosen, busbw, scaling",
        gate: "correctness, scaling >= 75 %",
    },
    PhaseSpec {
        id: "T8",
        title: "AIStor -> GPU end to end",
        scope: Scope::MultiNode,
        proves: "storage does not starve the GPUs",
        gate: "throughput >= 90 % of NVMe baseline; data wait small",
    },
];

/// Find a phase of the default plan by id.
pub fn find(id: &str) -> Option<&'static PhaseSpec> {
    DEFAULT_PLAN.iter().find(|p| p.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_ordered() {
        let ids: Vec<_> = DEFAULT_PLAN.iter().map(|p| p.id).collect();
        assert_eq!(ids, ["T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8"]);
        assert_eq!(find("T4").map(|p| p.title), Some("single-node NCCL"));
        assert!(find("T9").is_none());
    }
}
