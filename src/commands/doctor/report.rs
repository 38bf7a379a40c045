//! What `burnin doctor` says: the document (`--json`) and its text, a summary line first.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::{DOCTOR_SCHEMA, DoctorArgs, writable_dir};
use crate::phases::doctor::judge::{
    MIN_FREE_KIB, NodeAnswer, PhaseJudged, PhaseState, human_kib, version_disagreements,
};
use crate::phases::doctor::probe::NodeProbe;
use crate::plan::{Gate, Plan};

/// One check on this host.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LocalCheck {
    /// What was checked.
    pub what: String,
    /// Whether it holds.
    pub ok: bool,
    /// In words.
    pub detail: String,
}

/// The checks on this host: the baseline and the runs directory.
pub(super) fn local_checks(args: &DoctorArgs, plan: &Plan) -> Vec<LocalCheck> {
    let gated: Vec<&str> = plan
        .phases
        .iter()
        .filter(|p| p.gates.iter().any(|g| matches!(g, Gate::Baseline { .. })))
        .map(|p| p.id.as_str())
        .collect();
    let baseline = match super::super::run::baseline_for(&args.config, args.baseline.clone()) {
        Ok((Some(path), Some(_))) => LocalCheck {
            what: "baseline".into(),
            ok: true,
            detail: format!("{} (readable)", path.display()),
        },
        Ok(_) => LocalCheck {
            what: "baseline".into(),
            // A run without one is a plan's choice: its baseline gates judge without it.
            ok: true,
            detail: format!(
                "none ({} absent){}",
                super::super::run::default_baseline_path(&args.config).display(),
                if gated.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": the baseline gates of {} cannot compare (burnin baseline save RUN)",
                        gated.join(", ")
                    )
                }
            ),
        },
        // `burnin run` stops at an unreadable baseline: nothing would run.
        Err(e) => LocalCheck {
            what: "baseline".into(),
            ok: false,
            detail: format!("{e}: burnin run would stop here"),
        },
    };
    let (dir, free) = writable_dir(&args.runs_dir);
    let free_words = free.map_or_else(
        || "free space unknown".to_string(),
        |k| format!("{} free", human_kib(k)),
    );
    let runs = match dir {
        Ok(_) if free.is_some_and(|k| k < MIN_FREE_KIB) => LocalCheck {
            what: "runs directory".into(),
            ok: false,
            detail: format!("{}: only {free_words}", args.runs_dir.display()),
        },
        Ok(_) => LocalCheck {
            what: "runs directory".into(),
            ok: true,
            detail: format!("{}: writable, {free_words}", args.runs_dir.display()),
        },
        Err(why) => LocalCheck {
            what: "runs directory".into(),
            ok: false,
            detail: format!("{}: {why}", args.runs_dir.display()),
        },
    };
    vec![baseline, runs]
}

/// One node in the document.
#[derive(Debug, Serialize)]
pub(super) struct NodeDoc {
    /// Name.
    pub node: String,
    /// Why the probe could not run there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    /// What it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<NodeProbe>,
}

/// A tool whose version differs between nodes.
#[derive(Debug, Serialize)]
pub(super) struct VersionsDiffer {
    /// The tool.
    pub tool: String,
    /// Each version and the nodes that have it.
    pub versions: BTreeMap<String, Vec<String>>,
}

/// The `doctor --json` document.
#[derive(Debug, Serialize)]
pub(super) struct DoctorDoc {
    /// Document version.
    pub schema: u32,
    /// The summary line.
    pub summary: String,
    /// The exit code.
    pub exit: i32,
    /// The plan file.
    pub plan: String,
    /// The inventory file.
    pub inventory: String,
    /// Every phase.
    pub phases: Vec<PhaseJudged>,
    /// Every node.
    pub nodes: Vec<NodeDoc>,
    /// Tools whose versions differ between nodes.
    pub versions_differ: Vec<VersionsDiffer>,
    /// This host's checks.
    pub local: Vec<LocalCheck>,
}

/// The document from the judgement and the answers.
pub(super) fn document(
    plan: &Plan,
    inventory: &str,
    judged: &[PhaseJudged],
    answers: &[NodeAnswer],
    local: Vec<LocalCheck>,
) -> DoctorDoc {
    let every_unreachable = answers.iter().all(|a| a.probe.is_err());
    let summary = if every_unreachable {
        format!(
            "doctor: could not look: every node unreachable ({})",
            answers
                .iter()
                .map(|a| format!(
                    "{}: {}",
                    a.node,
                    a.probe.as_ref().err().map_or("", String::as_str)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        )
    } else {
        summary_line(judged, answers.len())
    };
    let exit = if every_unreachable {
        2
    } else if judged.iter().any(PhaseJudged::cannot_run) || local.iter().any(|c| !c.ok) {
        1
    } else {
        0
    };
    DoctorDoc {
        schema: DOCTOR_SCHEMA,
        summary,
        exit,
        plan: plan.file.clone(),
        inventory: inventory.to_string(),
        phases: judged.to_vec(),
        nodes: answers
            .iter()
            .map(|a| NodeDoc {
                node: a.node.clone(),
                unreachable: a.probe.as_ref().err().cloned(),
                probe: a.probe.as_ref().ok().cloned(),
            })
            .collect(),
        versions_differ: version_disagreements(answers)
            .into_iter()
            .map(|(tool, versions)| VersionsDiffer { tool, versions })
            .collect(),
        local,
    }
}

/// Longest reason one phase's item of the summary line quotes.
const REASON_CHARS: usize = 100;

/// `doctor: all 14 phases can run on all 12 nodes`, or which cannot run where and why.
pub(super) fn summary_line(judged: &[PhaseJudged], node_count: usize) -> String {
    let not_set_up: Vec<String> = judged
        .iter()
        .filter_map(|j| match &j.state {
            PhaseState::NotSetUp { why } => Some(format!("{} ({why})", j.id)),
            _ => None,
        })
        .collect();
    let cannot: Vec<String> = judged
        .iter()
        .filter_map(|j| match &j.state {
            PhaseState::Cannot { nodes } => {
                Some(format!("{} {}", j.id, where_and_why(nodes, node_count)))
            }
            PhaseState::Blocked { why } => Some(format!(
                "{} ({})",
                j.id,
                crate::model::fit(why, REASON_CHARS)
            )),
            _ => None,
        })
        .collect();
    let set_up = judged.len() - not_set_up.len();
    let mut line = if cannot.is_empty() {
        let which = if not_set_up.is_empty() {
            ""
        } else {
            " that are set up"
        };
        format!("doctor: all {set_up} phases{which} can run on all {node_count} nodes")
    } else {
        format!(
            "doctor: {} of {} phases cannot run: {}",
            cannot.len(),
            judged.len(),
            cannot.join(", ")
        )
    };
    if !not_set_up.is_empty() {
        let _ = write!(line, "; not set up: {}", not_set_up.join(", "));
    }
    line
}

/// `on all nodes (why)`, or `on node02 (why) and on node03, node04 (why)`.
fn where_and_why(nodes: &[(String, String)], node_count: usize) -> String {
    let mut by_why: Vec<(&str, Vec<&str>)> = Vec::new();
    for (node, why) in nodes {
        match by_why.iter_mut().find(|(w, _)| *w == why.as_str()) {
            Some((_, names)) => names.push(node),
            None => by_why.push((why, vec![node])),
        }
    }
    if let [(why, names)] = by_why.as_slice()
        && names.len() == node_count
        && node_count > 1
    {
        return format!("on all nodes ({})", crate::model::fit(why, REASON_CHARS));
    }
    by_why
        .iter()
        .map(|(why, names)| {
            format!(
                "on {} ({})",
                names.join(", "),
                crate::model::fit(why, REASON_CHARS)
            )
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The document as text: the summary line, each phase, each node's tools, versions that
/// differ, this host.
pub(super) fn text(doc: &DoctorDoc) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", doc.summary);
    let _ = writeln!(out, "phases ({}):", doc.plan);
    for p in &doc.phases {
        let state = match &p.state {
            PhaseState::CanRun => "can run".to_string(),
            PhaseState::Cannot { nodes } => {
                format!("cannot run {}", where_and_why(nodes, doc.nodes.len()))
            }
            PhaseState::Blocked { why } => format!("cannot run: {why}"),
            PhaseState::NotSetUp { why } => format!("not set up: {why}"),
        };
        let needs = if p.needs.is_empty() {
            String::new()
        } else {
            format!("  [{}]", p.needs.join(", "))
        };
        let _ = writeln!(out, "  {:<4} {state}{needs}", p.id);
    }
    for n in &doc.nodes {
        node_text(&mut out, n);
    }
    for d in &doc.versions_differ {
        let each: Vec<String> = d
            .versions
            .iter()
            .map(|(v, nodes)| format!("{v:?} on {}", nodes.join(", ")))
            .collect();
        let _ = writeln!(out, "versions differ: {}: {}", d.tool, each.join("; "));
    }
    let _ = writeln!(out, "this host:");
    for c in &doc.local {
        let mark = if c.ok { "ok " } else { "BAD" };
        let _ = writeln!(out, "  {mark} {:<15} {}", c.what, c.detail);
    }
    out
}

fn node_text(out: &mut String, n: &NodeDoc) {
    let Some(p) = &n.probe else {
        let _ = writeln!(
            out,
            "{}: unreachable: {}",
            n.node,
            n.unreachable.as_deref().unwrap_or("?")
        );
        return;
    };
    let kernel = p
        .kernel
        .as_deref()
        .map_or(String::new(), |k| format!(" (kernel {k})"));
    let _ = writeln!(out, "{}{kernel}:", n.node);
    for (key, t) in &p.tools {
        let found = match (&t.path, &t.missing) {
            (Some(path), _) => path.clone(),
            (None, why) => format!("NOT FOUND ({})", why.as_deref().unwrap_or("?")),
        };
        let version = t
            .version
            .as_deref()
            .map_or(String::new(), |v| format!("  {v}"));
        let _ = writeln!(out, "  {key:<22} {found}{version}");
    }
    if let Some(t) = &p.torch {
        let _ = writeln!(out, "  {:<22} {}: {}", "torch", t.status, t.detail);
    }
    let free = p.free_kib.map_or_else(
        || {
            format!(
                "free space unknown ({})",
                p.disk_error.as_deref().unwrap_or("no answer")
            )
        },
        |k| format!("{} free", human_kib(k)),
    );
    let writable = match &p.dir {
        Some(d) if d.ok() => format!("writable (in {})", d.detail),
        Some(d) => format!("NOT WRITABLE: {}", d.detail),
        None => "writable: no answer".into(),
    };
    let _ = writeln!(out, "  {:<22} {free}, {writable}", "run directory");
    if let Some(k) = &p.kernel_log {
        let _ = writeln!(out, "  {:<22} {}", "kernel log", k.detail);
    }
    if p.garbled_lines > 0 {
        let _ = writeln!(
            out,
            "  {} line(s) that are no probe line, the first: {}",
            p.garbled_lines,
            p.first_garbled.as_deref().unwrap_or("")
        );
    }
    if !p.complete {
        let _ = writeln!(out, "  the probe did not finish");
    }
}
