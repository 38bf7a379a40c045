//! What triage found, as every reader of findings sees it (the console, `status`, the record,
//! the report): a severity, the rule, the subject, the evidence and the next step.

use serde::Serialize;

use super::UnixMillis;

/// How bad a finding is. Ordered so that sorting puts the worst first when reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a fault.
    Info,
    /// Needs a look; may fail a gate.
    Warn,
    /// Broken: a GPU, link or node is out of the run.
    Crit,
}

impl Severity {
    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Crit => "CRIT",
        }
    }
}

/// Every rule triage has, by name: what a plan's `no-finding` gate may name (triage's own test
/// holds this list equal to the rules its code raises).
pub const RULES: &[&str] = &[
    "aistor-errors",
    "aistor-latency",
    "bad-link",
    "bad-node",
    "busy-idle",
    "clock-low",
    "dataloader-wait",
    "ecc-uncorrected",
    "gpu-lost",
    "gpu-nic-down",
    "gpus-missing",
    "nccl-wrong",
    "netdev-down",
    "netdev-drops",
    "netdev-errors",
    "nic-congested",
    "nic-down",
    "nic-errors",
    "nic-retrans",
    "nic-slow",
    "nvlink-counter-implausible",
    "nvlink-down",
    "nvlink-errors",
    "pcie-replay",
    "power-capped",
    "power-limit-low",
    "remap-failed",
    "remap-pending",
    "stale",
    "stalled",
    "straggler",
    "stream-over-limit",
    "throttling",
    "unreachable",
    "xid",
];

/// One thing triage found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// Rule that fired, e.g. "stalled".
    pub rule: &'static str,
    /// Node, if the finding is about one.
    pub node: Option<String>,
    /// GPU index, if the finding is about one.
    pub gpu: Option<u32>,
    /// Phase whose figures it judges (stragglers, NCCL correctness), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// When the rule first fired for this subject (kept while it keeps firing), or when the
    /// event it reports happened (an Xid).
    pub since_ms: UnixMillis,
    /// When the rule last fired; older than the newest evaluation while the finding clears.
    pub last_seen_ms: UnixMillis,
    /// True when the evaluation that listed it found the rule no longer firing: it stays listed
    /// a few seconds (no flapping) until it clears. Set by that evaluation, never worked out
    /// later from a clock: frames arrive between evaluations on each node's own clock, and a
    /// finding still firing must not look as if it were going away.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clearing: bool,
    /// One line with the evidence numbers.
    pub why: String,
    /// What an engineer would do next.
    pub next: &'static str,
}

impl Finding {
    /// "node07 GPU3", "node02", "T4", or "AIStor".
    pub fn subject(&self) -> String {
        match (&self.node, self.gpu, &self.phase) {
            (Some(n), Some(g), _) => format!("{n} GPU{g}"),
            (Some(n), None, _) => n.clone(),
            (None, _, Some(p)) => p.clone(),
            _ => self.rule_subject().to_string(),
        }
    }

    /// True while the rule still fired at the evaluation that listed it (false while it clears).
    pub fn is_firing(&self) -> bool {
        !self.clearing
    }

    fn rule_subject(&self) -> &'static str {
        match self.rule {
            "aistor-latency" | "aistor-errors" => "AIStor",
            "nic-down" | "nic-slow" | "nic-errors" | "nic-retrans" | "nic-congested"
            | "netdev-down" | "netdev-errors" | "netdev-drops" => "fabric",
            "dataloader-wait" => "dataloader",
            _ => "cluster",
        }
    }
}
