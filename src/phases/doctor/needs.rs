//! What each phase of a plan needs on the nodes, read from its command the way the runner
//! renders it: the known tool programs named in it, python3 with torch for the shipped
//! workloads, a readable kernel log where it reads one. A block the plan's own vars switch off
//! (`if [ "{gds}" = "true" ]` with `gds = "false"`) needs nothing.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{Launcher, PhaseSpec, Plan, Scope, render};

/// Tools a phase may need that the doctor knows, besides nccl-tests (`*_perf`, `*_perf_mpi`)
/// and perftest (`ib_*_bw`, `ib_*_lat`).
const KNOWN_PROGRAMS: &[&str] = &[
    "nvbandwidth",
    "mpirun",
    "srun",
    "gdsio",
    "gdscheck",
    "nvidia-smi",
    "dcgmi",
    "kubectl",
    "python3",
];

/// Programs that start a job across the nodes: needed only where the job is launched.
const LAUNCHERS: &[&str] = &["mpirun", "srun", "kubectl"];

pub use crate::parsers::doctor::Requirement;

/// Where a requirement must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// On every node of the inventory.
    EveryNode,
    /// On the first node only (where a launcher phase starts its job).
    FirstNode,
}

/// A requirement and where it must hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Need {
    /// What.
    pub requirement: Requirement,
    /// Where.
    pub place: Place,
}

/// Whether a phase can be judged on the nodes at all, and what it needs there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PhaseSetup {
    /// It runs over SSH on `runs_on` and needs these.
    Runs {
        /// Where its command (and its control directory) runs.
        runs_on: Place,
        /// What it needs there.
        needs: Vec<Need>,
    },
    /// Its command is empty: the site supplies it (the shipped T6).
    NoCommand,
    /// It needs these `[vars]`, empty in the plan: `burnin run` skips it.
    NeedsVars {
        /// The empty vars.
        vars: Vec<String>,
    },
    /// It runs these earlier phases at the same time: it can run when they can.
    Together {
        /// The member phases.
        members: Vec<String>,
    },
    /// It runs as Kubernetes Jobs through this host's kubectl; the image's tools are not
    /// probed.
    Kubernetes {
        /// The kubectl program of the plan's `[kubernetes]`.
        kubectl: String,
    },
    /// Its command could not be rendered (the plan's loader normally refuses that).
    Broken {
        /// Why.
        why: String,
    },
}

/// One phase and what it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseNeeds {
    /// Phase id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// What it needs.
    #[serde(flatten)]
    pub setup: PhaseSetup,
}

/// What every phase of `plan` needs, in plan order.
pub fn plan_needs(plan: &Plan) -> Vec<PhaseNeeds> {
    let values = stand_in_values(plan);
    plan.phases
        .iter()
        .map(|spec| PhaseNeeds {
            id: spec.id.clone(),
            title: spec.title.clone(),
            setup: phase_setup(plan, spec, &values),
        })
        .collect()
}

fn phase_setup(plan: &Plan, spec: &PhaseSpec, values: &BTreeMap<String, String>) -> PhaseSetup {
    if spec.scope == Scope::Together {
        return PhaseSetup::Together {
            members: spec.together.clone(),
        };
    }
    if spec.command.trim().is_empty() {
        return PhaseSetup::NoCommand;
    }
    let empty: Vec<String> = spec
        .requires
        .iter()
        .filter(|r| plan.vars.get(*r).is_none_or(|v| v.trim().is_empty()))
        .cloned()
        .collect();
    if !empty.is_empty() {
        return PhaseSetup::NeedsVars { vars: empty };
    }
    if spec.launcher == Launcher::Kubernetes {
        return PhaseSetup::Kubernetes {
            kubectl: plan
                .kubernetes
                .as_ref()
                .map_or_else(|| "kubectl".to_string(), |k| k.kubectl.clone()),
        };
    }
    let launched_once = matches!(spec.scope, Scope::Launcher | Scope::Mpirun);
    let mut needs = Vec::new();
    for template in [&spec.command, &spec.server] {
        if template.trim().is_empty() {
            continue;
        }
        match command_needs(template, values, launched_once) {
            Ok(found) => needs.extend(found),
            Err(why) => return PhaseSetup::Broken { why },
        }
    }
    needs.sort();
    needs.dedup();
    PhaseSetup::Runs {
        runs_on: if launched_once {
            Place::FirstNode
        } else {
            Place::EveryNode
        },
        needs,
    }
}

/// The values a command is rendered with to read its tools: the plan's vars (themselves
/// rendered) and stand-ins for the per-node builtins, which name no tool.
fn stand_in_values(plan: &Plan) -> BTreeMap<String, String> {
    let builtins: BTreeMap<String, String> = [
        ("node", "node"),
        ("gpus", "8"),
        ("run", "doctor"),
        // A directory every node has: a container prefix may mount it.
        ("dir", "/tmp"),
        ("workloads", "/tmp"),
        ("hosts", "node"),
        ("hosts_slots", "node:8"),
        ("np", "8"),
        ("nnodes", "1"),
        ("nodelist", "node"),
        ("hostfile", "/tmp/hostfile"),
        ("peer", "node"),
        ("burnin", "burnin"),
        // T0's probe of these very needs names no tool a phase needs.
        ("doctor_probe", "true"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut values: BTreeMap<String, String> = plan
        .vars
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                render(v, &builtins).unwrap_or_else(|_| v.clone()),
            )
        })
        .collect();
    values.extend(builtins);
    values
}

/// What one command template needs; `launched_once`: its launcher programs are needed on the
/// first node only.
fn command_needs(
    template: &str,
    values: &BTreeMap<String, String>,
    launched_once: bool,
) -> Result<Vec<Need>, String> {
    let rendered = render(template, values).map_err(|e| format!("command template: {e}"))?;
    let text = fold_constant_ifs(&rendered);
    let every = |requirement| Need {
        requirement,
        place: Place::EveryNode,
    };
    let mut needs = Vec::new();
    let mut python = false;
    for word in words(&text) {
        if word == "dmesg" || word == "journalctl" {
            needs.push(every(Requirement::KernelLog));
            continue;
        }
        let Some(key) = program_key(word) else {
            continue;
        };
        let name = Requirement::program_name(&key);
        if name == "python3" {
            python = true;
        }
        let place = if launched_once && LAUNCHERS.contains(&name) {
            Place::FirstNode
        } else {
            Place::EveryNode
        };
        needs.push(Need {
            requirement: Requirement::Program { key },
            place,
        });
    }
    let placeholders = crate::plan::placeholders(template).unwrap_or_default();
    if placeholders.iter().any(|p| p == "burnin") {
        needs.push(every(Requirement::Burnin));
    }
    // A shipped workload, or torch's own launcher: python3 must import torch and see CUDA.
    let workload = placeholders.iter().any(|p| p == "workloads") || text.contains("torch");
    if python && workload {
        let prefix = if placeholders.iter().any(|p| p == "prefix") {
            values.get("prefix").cloned().unwrap_or_default()
        } else {
            String::new()
        };
        if !prefix.trim().is_empty() {
            // python3 runs in the prefix's container: the node's own python3 is not the one.
            needs.retain(|n| n.requirement != program("python3"));
        }
        needs.push(every(Requirement::Torch {
            prefix: prefix.trim().to_string(),
        }));
    }
    Ok(needs)
}

fn program(key: &str) -> Requirement {
    Requirement::Program {
        key: key.to_string(),
    }
}

/// The words of a shell command, split at blanks, quotes and operators (good enough to find
/// program names; it is no shell parser).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "\"'`;|&()<>=".contains(c))
        .filter(|w| !w.is_empty())
}

/// The probe key of `word` when it names a known program: its name, or its path where the
/// plan gives one (nccl-tests under `{nccl_tests}`).
fn program_key(word: &str) -> Option<String> {
    let name = Requirement::program_name(word);
    let known = KNOWN_PROGRAMS.contains(&name) || is_nccl_test(name) || is_perftest(name);
    if !known {
        return None;
    }
    let path = &word[..word.len() - name.len()];
    // gdsio and gdscheck are looked for where the plan's own commands look (PATH, then the
    // CUDA GDS tools directories), so their fallback paths are no separate program.
    let by_name = path.is_empty() || matches!(name, "gdsio" | "gdscheck");
    let path_ok = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+~$".contains(c));
    if by_name || !path_ok {
        Some(name.to_string())
    } else {
        Some(word.to_string())
    }
}

/// nccl-tests' programs: `all_reduce_perf`, `alltoall_perf_mpi`, ….
fn is_nccl_test(name: &str) -> bool {
    let stem = name
        .strip_suffix("_perf_mpi")
        .or_else(|| name.strip_suffix("_perf"));
    stem.is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
}

/// perftest's programs: `ib_write_bw`, `ib_read_lat`, ….
fn is_perftest(name: &str) -> bool {
    name.strip_prefix("ib_").is_some_and(|rest| {
        (rest.ends_with("_bw") || rest.ends_with("_lat"))
            && rest.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    })
}

/// `text` without the `if [ "A" = "B" ]; then … fi` blocks whose test compares constants and
/// is false: the plan switches parts of a command on and off through its vars
/// (`{gds}`, `{data_gds}`), and a part that is off needs nothing.
pub fn fold_constant_ifs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping = 0usize;
    for line in text.lines() {
        if skipping > 0 {
            for word in line.split(|c: char| c.is_whitespace() || c == ';') {
                match word {
                    "if" => skipping += 1,
                    "fi" => skipping -= 1,
                    _ => {}
                }
                if skipping == 0 {
                    break;
                }
            }
            continue;
        }
        if constant_test(line) == Some(false) {
            skipping = 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The value of a line that is only `if [ TEST ]; then` where TEST compares constants:
/// `"A" = "B"`, `"A" != "B"`, `-n "A"`, `-z "A"`; `None` for anything else.
fn constant_test(line: &str) -> Option<bool> {
    let test = line
        .trim()
        .strip_prefix("if [ ")?
        .strip_suffix(" ]; then")?
        .trim();
    let constant = |s: &str| -> Option<String> {
        let inner = s.strip_prefix('"')?.strip_suffix('"')?;
        (!inner.contains(['"', '$', '`', '\\'])).then(|| inner.to_string())
    };
    if let Some(rest) = test.strip_prefix("-n ") {
        return constant(rest.trim()).map(|v| !v.is_empty());
    }
    if let Some(rest) = test.strip_prefix("-z ") {
        return constant(rest.trim()).map(|v| v.is_empty());
    }
    for (op, equal) in [(" != ", false), (" = ", true)] {
        if let Some((a, b)) = test.split_once(op) {
            let (a, b) = (constant(a.trim())?, constant(b.trim())?);
            return Some((a == b) == equal);
        }
    }
    None
}
