//! The plan: which phases run, where, with which command, read by which parser and judged by
//! which gates. The site's T1–T8 ladder is `plans/default.toml`, embedded; a site edits a copy
//! (`burnin init` writes it) and points burnin.toml at it. Two stages as every config file
//! here: a serde shape with `deny_unknown_fields`, then `resolve` into runtime types with errors
//! that name file, line and column.

pub mod drill;
mod gate_checks;
pub mod gates;
mod load;
pub mod template;
#[cfg(test)]
mod tests;
mod together;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::parsers::ParserKind;
pub use template::{BUILTIN_PLACEHOLDERS, TemplateError, placeholders, render};

/// Where a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Once on every node, at the same time.
    EachNode,
    /// Once on every node, judged per GPU (the workload measures each GPU).
    EachGpu,
    /// Once, on the first node.
    Launcher,
    /// Once, on the first node, reaching all nodes through mpirun.
    Mpirun,
    /// Node pairs in a ring: a `server` on every node, then on every node a client of the next
    /// one (`{peer}`), e.g. perftest per link.
    Pairs,
    /// Earlier phases of the plan run at the same time (`together = [...]`), compared with each
    /// of them alone. Given by `together`, never written as a scope.
    Together,
}

impl Scope {
    /// Words for the phases pane.
    pub fn label(self) -> &'static str {
        match self {
            Scope::EachNode => "each node",
            Scope::EachGpu => "each GPU",
            Scope::Launcher => "launcher",
            Scope::Mpirun => "all nodes",
            Scope::Pairs => "node pairs",
            Scope::Together => "together",
        }
    }
}

/// One condition a phase must meet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Gate {
    /// Every sanity check held; an unknown one warns.
    Checks,
    /// nccl-tests found no wrong element; unvalidated rows warn.
    ZeroWrong,
    /// Every subject's figure is at least `value`.
    Min {
        /// Figure name.
        figure: String,
        /// Lower bound.
        value: f64,
        /// `spec`: the plan's own floor for what the spec table cannot judge. A subject the
        /// phase's `spec` gate on the same figure judges (its node's model known, with that
        /// floor) is judged by that gate alone; this floor judges the rest (an unknown model,
        /// a model without the figure, a reading no RDMA port can give).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unless: Option<Unless>,
    },
    /// Every subject's figure is at most `value`.
    Max {
        /// Figure name.
        figure: String,
        /// Upper bound.
        value: f64,
    },
    /// At least `pct` % of the saved baseline.
    Baseline {
        /// Figure name.
        figure: String,
        /// Percent.
        pct: f64,
    },
    /// No subject below `pct` % of its peers' median.
    Peers {
        /// Figure name.
        figure: String,
        /// Percent.
        pct: f64,
    },
    /// The output contains `text` on every node that ran the phase.
    OutputContains {
        /// Text to find.
        text: String,
        /// Where the output has no line with this text at all, the tool did not print what
        /// `text` would be found in (e.g. `Using network`: NCCL ran below INFO level, or the log is a tail), so a node
        /// without `text` is not judged (WARN) rather than failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evidence: Option<String>,
    },
    /// Loss finite throughout and lower at the end than at the start.
    LossFalling,
    /// Loss finite throughout (data that cannot be learned, e.g. random shards in T8).
    LossFinite,
    /// No Xid reached the telemetry from the phase's nodes while it ran (unwatched nodes warn).
    NoXid,
    /// The telemetry's triage raised no `rule` finding on the phase's nodes while it ran
    /// (e.g. `nvlink-errors` during the NVLink phase; unwatched nodes warn).
    NoFinding {
        /// A triage rule's name ([`crate::model::finding::RULES`]).
        rule: String,
    },
    /// Tokens/s of the full job ≥ `pct` % of (1-GPU tokens/s × GPUs), per node.
    Scaling {
        /// Percent.
        pct: f64,
    },
    /// Every subject at least `pct` % of the spec table's `floor` for its node's model (GPU
    /// or NIC entry, found by T0's PCI IDs): a model the table does not know warns with its
    /// ID and leaves the plan's own floors to judge; a model without that figure is not
    /// judged by this gate.
    Spec {
        /// Figure name.
        figure: String,
        /// A figure of the spec table ([`crate::model::spec::GPU_FIGURES`], `NIC_FIGURES`).
        floor: String,
        /// Percent of the floor a subject must reach.
        #[serde(default = "hundred")]
        pct: f64,
        /// `nic`: a job across nodes is judged per RDMA port (its busbw divided by the ports
        /// each node's ranks use; docs/spec.md derives it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per: Option<String>,
        /// `warn`: below the floor warns rather than fails (a floor measured under a condition
        /// the run does not prove, e.g. NCCL's NVLS).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        miss: Option<String>,
    },
    /// In a `together` phase: run beside the others, the figure is at most `worse_pct` % worse
    /// than the same member's run alone, for every subject (a bandwidth lower, a latency
    /// higher: [`lower_is_better`] says which way is worse).
    Together {
        /// Figure name.
        figure: String,
        /// Percent it may worsen.
        worse_pct: f64,
    },
}

/// What a `min` gate yields to (`unless = "spec"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unless {
    /// The phase's `spec` gate on the same figure, where it judges.
    Spec,
}

fn hundred() -> f64 {
    100.0
}

pub use crate::model::figures::{Better, FIGURES, known_figure, lower_is_better, unit_of};

impl Gate {
    /// The texts an `output-contains` gate looks for in the output (its text and its
    /// evidence), for the readers that note which nodes showed them.
    pub fn output_texts(&self) -> Vec<String> {
        match self {
            Gate::OutputContains { text, evidence } => std::iter::once(text.clone())
                .chain(evidence.clone())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The figure the gate reads, if it reads one.
    pub fn figure(&self) -> Option<&str> {
        match self {
            Gate::Spec { figure, .. }
            | Gate::Min { figure, .. }
            | Gate::Max { figure, .. }
            | Gate::Baseline { figure, .. }
            | Gate::Peers { figure, .. }
            | Gate::Together { figure, .. } => Some(figure),
            Gate::Scaling { .. } => Some("scaling_pct"),
            _ => None,
        }
    }

    /// The gate in words, for the phases pane and reports.
    pub fn describe(&self) -> String {
        match self {
            Gate::Checks => "all checks ok".into(),
            Gate::ZeroWrong => "#wrong = 0".into(),
            Gate::Min {
                figure,
                value,
                unless: None,
            } => format!("{figure} >= {value}"),
            Gate::Min { figure, value, .. } => {
                format!("{figure} >= {value} where the spec does not judge it")
            }
            Gate::Max { figure, value } => format!("{figure} <= {value}"),
            Gate::Baseline { figure, pct } => format!("{figure} >= {pct} % of baseline"),
            Gate::Peers { figure, pct } => format!("{figure} >= {pct} % of peer median"),
            Gate::OutputContains { text, .. } => format!("output shows {text:?}"),
            Gate::LossFalling => "loss finite and falling".into(),
            Gate::LossFinite => "loss finite".into(),
            Gate::NoXid => "no Xid during the phase".into(),
            Gate::NoFinding { rule } => format!("no {rule} finding during the phase"),
            Gate::Scaling { pct } => format!("1 -> N GPU scaling >= {pct} %"),
            Gate::Spec {
                figure,
                floor,
                pct,
                per,
                ..
            } => {
                let per = if per.is_some() { " per RDMA port" } else { "" };
                if *pct == 100.0 {
                    format!("{figure}{per} >= the spec's {floor} for the model")
                } else {
                    format!("{figure}{per} >= {pct} % of the spec's {floor} for the model")
                }
            }
            Gate::Together { figure, worse_pct } => {
                format!("{figure} at most {worse_pct} % worse together than alone")
            }
        }
    }

    /// Whether the gate reads figures (the members of a `together` phase keep only the gates
    /// that do not: their figures are judged against their own run alone instead).
    pub fn reads_figures(&self) -> bool {
        self.figure().is_some()
    }
}

/// How a phase's command reaches a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Over the node's transport (SSH, or this host for local and sim nodes).
    #[default]
    Ssh,
    /// As a Kubernetes Job per node, through the site's kubectl (`[kubernetes]` of the plan).
    Kubernetes,
}

/// One phase of the plan, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSpec {
    /// Short id, e.g. "T4".
    pub id: String,
    /// Title.
    pub title: String,
    /// Where it runs.
    pub scope: Scope,
    /// What passing proves.
    pub proves: String,
    /// The gates in words.
    pub gate: String,
    /// Shell text run on the node; empty: the site has not said what to run (SKIPPED).
    pub command: String,
    /// For `pairs`: the server side, started on every node before the clients.
    pub server: String,
    /// Which parser reads the output.
    pub parser: ParserKind,
    /// Longest it may run before it is stopped and recorded TIMEOUT.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Phases that must have passed (or warned) first.
    pub needs: Vec<String>,
    /// `[vars]` that must be non-empty, else the phase is SKIPPED and says which.
    pub requires: Vec<String>,
    /// The gates.
    pub gates: Vec<Gate>,
    /// For scope `together`: the earlier phases run at the same time.
    pub together: Vec<String>,
    /// For scope `together`: figures shown alone / together / change beside the gated ones.
    pub compare: Vec<String>,
    /// An operator drill around the load this phase runs (the load runs until burnin stops it).
    pub drill: Option<drill::Drill>,
    /// How the command reaches the nodes.
    pub launcher: Launcher,
}

/// Durations as seconds in JSON (the plan's specs, drills).
pub(crate) mod secs {
    /// Seconds, fractional.
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// A resolved plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where it came from (`<embedded>/default.toml` for the shipped one).
    pub file: String,
    /// Phases in order.
    pub phases: Vec<Arc<PhaseSpec>>,
    /// Site text for templates.
    pub vars: BTreeMap<String, String>,
    /// Run directories on the nodes (`~/` allowed).
    pub remote_dir: String,
    /// TERM → KILL grace when stopping a phase.
    pub grace: Duration,
    /// The file's text as parsed: the run record keeps a copy, so a report or a replay
    /// elsewhere reads the plan the run used.
    pub text: String,
    /// `[kubernetes]`: the cluster and image for phases with `launcher = "kubernetes"`.
    pub kubernetes: Option<KubeSettings>,
    /// The spec table the `spec` gates read: the one burnin ships with the plan's `[spec]`
    /// entries laid over it.
    pub hardware: Arc<crate::model::spec::HardwareSpec>,
}

/// The shipped plan's text (what `burnin init` writes as plan.toml).
pub const DEFAULT_PLAN_TEXT: &str = include_str!("../../plans/default.toml");

static DEFAULT: LazyLock<Plan> = LazyLock::new(|| {
    Plan::parse("<embedded>/default.toml", DEFAULT_PLAN_TEXT)
        .unwrap_or_else(|e| panic!("the embedded plan must parse (a test checks it): {e}"))
});

/// The shipped T1–T8 plan.
pub fn default_plan() -> &'static Plan {
    &DEFAULT
}

impl Plan {
    /// A phase by id.
    pub fn find(&self, id: &str) -> Option<&Arc<PhaseSpec>> {
        self.phases.iter().find(|p| p.id == id)
    }
}

/// `[kubernetes]` of the plan, resolved: how to reach the cluster and what the Jobs run in.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KubeSettings {
    /// The kubectl to run (`kubectl`, or a path).
    pub kubectl: String,
    /// `--context`, when not the current one.
    pub context: Option<String>,
    /// Namespace of the Jobs.
    pub namespace: String,
    /// Container image the phase's command runs in.
    pub image: String,
    /// Extended resource name of a GPU.
    pub gpu_resource: String,
    /// Node label whose value is the node's name (`nodeSelector`).
    pub node_label: String,
    /// Service account of the pods, when not the namespace's default.
    pub service_account: Option<String>,
    /// Seconds a finished Job is kept for `kubectl logs` (`ttlSecondsAfterFinished`).
    pub keep_finished_s: u64,
}

impl Default for KubeSettings {
    fn default() -> Self {
        Self {
            kubectl: "kubectl".into(),
            context: None,
            namespace: "default".into(),
            image: String::new(),
            gpu_resource: "nvidia.com/gpu".into(),
            node_label: "kubernetes.io/hostname".into(),
            service_account: None,
            keep_finished_s: 3600,
        }
    }
}
