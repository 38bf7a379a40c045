//! The doctor's judgement: each phase's needs against what each node's probe said. Pure: the
//! command gathers the answers, this says which phase cannot run where and why.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::needs::{Need, PhaseNeeds, PhaseSetup, Place, Requirement};
use super::probe::{NodeProbe, ProbeRequest};
pub use crate::parsers::doctor::{MIN_FREE_KIB, control_dir_problem, human_kib, unmet};
use crate::parsers::doctor::{NeedLine, NeedWhat};

/// One node's answer to the probe.
#[derive(Debug, Clone)]
pub struct NodeAnswer {
    /// The node's name.
    pub node: String,
    /// The key its burnin binary was probed under (`None`: a local or simulated node, which
    /// runs this very binary).
    pub burnin_key: Option<String>,
    /// What the probe said, or why it could not run there.
    pub probe: Result<NodeProbe, String>,
}

/// What the probe looks for on `node` (`first`: it is the inventory's first node).
pub fn request_for(
    needs: &[PhaseNeeds],
    remote_dir: &str,
    first: bool,
    burnin_key: Option<&str>,
) -> ProbeRequest {
    let mut programs = BTreeSet::new();
    let mut torch_prefix = None;
    for need in needs.iter().flat_map(phase_needs) {
        if need.place == Place::FirstNode && !first {
            continue;
        }
        match &need.requirement {
            Requirement::Program { key } => {
                programs.insert(key.clone());
            }
            Requirement::Burnin => {
                if let Some(k) = burnin_key {
                    programs.insert(k.to_string());
                }
            }
            // One `{prefix}` per plan: the first phase's is the one probed.
            Requirement::Torch { prefix } => {
                torch_prefix.get_or_insert_with(|| prefix.clone());
            }
            Requirement::KernelLog => {}
        }
    }
    ProbeRequest {
        remote_dir: remote_dir.to_string(),
        torch_prefix,
        programs: programs.into_iter().collect(),
    }
}

/// What each phase needs on one node, as T0's probe prints it (`first`: the inventory's
/// first node, where launcher phases start; `burnin_key`: where the node's burnin binary is
/// looked for, `None` on a local or simulated node). Mirrors [`judge`]: a phase started only on
/// the first node needs nothing elsewhere; a `together` phase is judged through its members.
pub fn need_lines(needs: &[PhaseNeeds], first: bool, burnin_key: Option<&str>) -> Vec<NeedLine> {
    let mut out = Vec::new();
    for phase in needs {
        let line = |what| NeedLine {
            phase: phase.id.clone(),
            what,
        };
        let (runs_on, needs) = match &phase.setup {
            PhaseSetup::Runs { runs_on, needs } => (*runs_on, needs),
            PhaseSetup::Together { .. } => continue,
            PhaseSetup::NoCommand => {
                out.push(line(NeedWhat::NotSetUp("no command in the plan".into())));
                continue;
            }
            PhaseSetup::NeedsVars { vars } => {
                out.push(line(NeedWhat::NotSetUp(format!(
                    "needs {}",
                    vars.join(", ")
                ))));
                continue;
            }
            PhaseSetup::Kubernetes { .. } => {
                out.push(line(NeedWhat::NotSetUp("runs as Kubernetes Jobs".into())));
                continue;
            }
            PhaseSetup::Broken { why } => {
                out.push(line(NeedWhat::NotSetUp(why.clone())));
                continue;
            }
        };
        let launches_here = first || runs_on == Place::EveryNode;
        let here: Vec<&Need> = needs
            .iter()
            .filter(|n| first || n.place == Place::EveryNode)
            .collect();
        if !launches_here && here.is_empty() {
            continue;
        }
        if launches_here {
            out.push(line(NeedWhat::Launch));
        }
        for need in here {
            let key = match &need.requirement {
                Requirement::Burnin => match burnin_key {
                    Some(k) => Some(k.to_string()),
                    None => continue,
                },
                _ => None,
            };
            out.push(line(NeedWhat::Requires(need.requirement.clone(), key)));
        }
    }
    out
}

fn phase_needs(p: &PhaseNeeds) -> &[Need] {
    match &p.setup {
        PhaseSetup::Runs { needs, .. } => needs,
        _ => &[],
    }
}

/// Where a phase stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PhaseState {
    /// It can run on every node it runs on.
    CanRun,
    /// It cannot run on these nodes, each with why.
    Cannot {
        /// (node, why), in inventory order.
        nodes: Vec<(String, String)>,
    },
    /// It cannot run anywhere, for a reason that is no node's: its members cannot, its
    /// command does not render.
    Blocked {
        /// Why.
        why: String,
    },
    /// The plan does not set it up: said, not a node's fault.
    NotSetUp {
        /// Why.
        why: String,
    },
}

/// One phase, judged.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseJudged {
    /// Phase id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// What it needs, in words (`mpirun (first node)`, `torch`).
    pub needs: Vec<String>,
    /// Where it stands.
    #[serde(flatten)]
    pub state: PhaseState,
}

impl PhaseJudged {
    /// True when it cannot run (on some node, or anywhere).
    pub fn cannot_run(&self) -> bool {
        matches!(
            self.state,
            PhaseState::Cannot { .. } | PhaseState::Blocked { .. }
        )
    }
}

/// A need in words.
fn need_words(need: &Need) -> String {
    let what = match &need.requirement {
        Requirement::Program { key } => key.clone(),
        Requirement::Torch { prefix } if prefix.is_empty() => "torch".into(),
        Requirement::Torch { .. } => "torch (behind the prefix)".into(),
        Requirement::KernelLog => "kernel log".into(),
        Requirement::Burnin => "burnin".into(),
    };
    match need.place {
        Place::EveryNode => what,
        Place::FirstNode => format!("{what} (first node)"),
    }
}

/// Judge every phase against the nodes' answers (in inventory order, the first is where
/// launcher phases start).
pub fn judge(needs: &[PhaseNeeds], answers: &[NodeAnswer]) -> Vec<PhaseJudged> {
    let mut judged: Vec<PhaseJudged> = Vec::with_capacity(needs.len());
    for phase in needs {
        let state = match &phase.setup {
            PhaseSetup::NoCommand => PhaseState::NotSetUp {
                why: "no command in the plan: the site supplies it".into(),
            },
            PhaseSetup::NeedsVars { vars } => PhaseState::NotSetUp {
                why: format!("needs {}", vars.join(", ")),
            },
            PhaseSetup::Kubernetes { kubectl } => PhaseState::NotSetUp {
                why: format!("runs as Kubernetes Jobs through {kubectl}: its image is not probed"),
            },
            PhaseSetup::Broken { why } => PhaseState::Blocked { why: why.clone() },
            PhaseSetup::Together { members } => together_state(members, &judged),
            PhaseSetup::Runs { runs_on, needs } => runs_state(*runs_on, needs, answers),
        };
        judged.push(PhaseJudged {
            id: phase.id.clone(),
            title: phase.title.clone(),
            needs: phase_needs(phase).iter().map(need_words).collect(),
            state,
        });
    }
    judged
}

fn together_state(members: &[String], judged: &[PhaseJudged]) -> PhaseState {
    let mut blocked = Vec::new();
    for m in members {
        match judged.iter().find(|j| &j.id == m).map(|j| &j.state) {
            Some(PhaseState::CanRun) => {}
            Some(PhaseState::NotSetUp { .. }) => {
                return PhaseState::NotSetUp {
                    why: format!("its member {m} is not set up"),
                };
            }
            Some(PhaseState::Cannot { .. } | PhaseState::Blocked { .. }) => blocked.push(m.clone()),
            None => {
                return PhaseState::NotSetUp {
                    why: format!("its member {m} is no earlier phase"),
                };
            }
        }
    }
    if blocked.is_empty() {
        PhaseState::CanRun
    } else {
        PhaseState::Blocked {
            why: format!("{} cannot run", blocked.join(", ")),
        }
    }
}

fn runs_state(runs_on: Place, needs: &[Need], answers: &[NodeAnswer]) -> PhaseState {
    let mut nodes = Vec::new();
    for (i, answer) in answers.iter().enumerate() {
        let first = i == 0;
        let launches_here = first || runs_on == Place::EveryNode;
        let here: Vec<&Need> = needs
            .iter()
            .filter(|n| first || n.place == Place::EveryNode)
            .collect();
        if !launches_here && here.is_empty() {
            continue;
        }
        let probe = match &answer.probe {
            Ok(p) => p,
            Err(why) => {
                nodes.push((answer.node.clone(), format!("unreachable: {why}")));
                continue;
            }
        };
        let mut whys: Vec<String> = Vec::new();
        if launches_here {
            whys.extend(control_dir_problem(probe));
        }
        for need in here {
            if let Some(why) = unmet(&need.requirement, probe, answer.burnin_key.as_deref())
                && !whys.contains(&why)
            {
                whys.push(why);
            }
        }
        if whys.is_empty() && !probe.complete {
            whys.push("the probe did not finish (cut off or timed out)".into());
        }
        if !whys.is_empty() {
            nodes.push((answer.node.clone(), whys.join("; ")));
        }
    }
    if nodes.is_empty() {
        PhaseState::CanRun
    } else {
        PhaseState::Cannot { nodes }
    }
}

/// Versions of one tool that differ between nodes: (tool, version → nodes), for each tool
/// whose reachable nodes do not all say the same.
pub fn version_disagreements(
    answers: &[NodeAnswer],
) -> Vec<(String, BTreeMap<String, Vec<String>>)> {
    let mut by_tool: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for a in answers {
        let Ok(probe) = &a.probe else { continue };
        for (key, t) in &probe.tools {
            if let Some(v) = &t.version {
                by_tool
                    .entry(key.clone())
                    .or_default()
                    .entry(v.clone())
                    .or_default()
                    .push(a.node.clone());
            }
        }
    }
    by_tool.into_iter().filter(|(_, v)| v.len() > 1).collect()
}
