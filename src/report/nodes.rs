//! The report's first table, for returns and sign-off: node by node, its verdict, the GPUs that
//! evidence names with what identifies each one to the vendor (serial, PCI bus id, UUID,
//! VBIOS, as the node's agent reported them), what was found and what to do next. Nodes that
//! nothing names share one PASS row.

use super::ReportData;
use super::render::{Block, Cell};
use crate::model::GpuInfo;
use crate::model::phase::{GateStatus, Verdict};
use crate::record::RecordNode;

/// How the table decides, said above it.
pub(super) const NODE_RULE: &str = "A node is FAIL where a critical finding or a failed phase names it, WARN where a warning does, PASS where nothing does; a phase that failed without naming a node is in the phases table, not here.";

/// One line of the table before it is drawn.
pub(super) struct NodeRow {
    pub(super) verdict: &'static str,
    pub(super) gpu: Option<u32>,
    pub(super) finding: String,
    pub(super) next: String,
}

/// The table of nodes.
pub(super) fn node_table(d: &ReportData) -> Block<'_> {
    let mut rows = Vec::new();
    let mut clean = Vec::new();
    let mut named: Vec<(u8, &RecordNode, Vec<NodeRow>)> = Vec::new();
    for node in &d.summary.nodes {
        let found = evidence_on(d, &node.name, &[]);
        if found.is_empty() {
            clean.push(node.name.clone());
            continue;
        }
        let worst = found.iter().map(|r| rank(r.verdict)).max().unwrap_or(0);
        named.push((worst, node, found));
    }
    named.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.name.cmp(&b.1.name)));
    // Each row carries its own verdict (a FAIL node can have warnings too); rows are worst
    // first, so a node's first row is its verdict.
    for (_, node, found) in named {
        for (i, r) in found.into_iter().enumerate() {
            // The record holds what the node said: cut and stripped again here.
            let info = r.gpu.and_then(|g| gpu_info(node, g)).map(|g| GpuInfo {
                identity: g.identity.clone().bounded(),
                uuid: crate::model::fit(&crate::model::strip_controls(&g.uuid), 80),
                ..g.clone()
            });
            let id = |f: &dyn Fn(&GpuInfo) -> Option<String>| {
                info.as_ref().and_then(f).unwrap_or_else(|| "—".to_string())
            };
            rows.push(vec![
                Cell::plain(if i == 0 { node.name.as_str() } else { "" }),
                Cell::verdict(r.verdict),
                Cell::plain(r.gpu.map_or_else(|| "—".to_string(), |g| format!("GPU{g}"))),
                Cell::plain(id(&|g| g.identity.serial.clone())),
                Cell::plain(id(&|g| g.identity.pci_bus_id.clone())),
                Cell::plain(id(&|g| Some(g.uuid.clone()).filter(|u| !u.is_empty()))),
                Cell::plain(id(&|g| g.identity.vbios.clone())),
                Cell::plain(r.finding),
                Cell::plain(r.next),
            ]);
        }
    }
    if !clean.is_empty() {
        rows.push(vec![
            Cell::plain(names(&clean)),
            Cell::verdict("PASS"),
            Cell::plain("—"),
            Cell::plain(""),
            Cell::plain(""),
            Cell::plain(""),
            Cell::plain(""),
            Cell::plain("nothing names it"),
            Cell::plain("—"),
        ]);
    }
    Block::Table {
        header: &[
            "node",
            "verdict",
            "GPU",
            "serial",
            "PCI bus id",
            "UUID",
            "VBIOS",
            "finding",
            "next step",
        ],
        rows,
    }
}

/// What names `node`: its critical and warning findings, then the clauses of failed or warned
/// phases that name it, leaving out the phases in `except`.
pub(super) fn evidence_on(d: &ReportData, node: &str, except: &[&str]) -> Vec<NodeRow> {
    let mut out: Vec<NodeRow> = d
        .findings
        .iter()
        .filter(|f| f.node.as_deref() == Some(node))
        .filter(|f| f.severity == "crit" || f.severity == "warn")
        .map(|f| NodeRow {
            verdict: if f.severity == "crit" { "FAIL" } else { "WARN" },
            gpu: f.gpu,
            finding: format!("{}: {}", f.rule, f.why),
            next: f.next.clone(),
        })
        .collect();
    for p in d
        .summary
        .phases
        .iter()
        .filter(|p| !except.contains(&p.id.as_str()))
    {
        let verdict = match p.verdict {
            Verdict::Pass | Verdict::Skipped | Verdict::Aborted => continue,
            Verdict::Warn => "WARN",
            Verdict::Fail | Verdict::Timeout => "FAIL",
        };
        // What a gate met or could not judge says is no evidence against a node: the peers
        // gate names the slowest node even when it passes, and "not judged on node07" is not
        // a fault of node07's. What is left is what failed or warned: missed gates' words and
        // the phase's own failures (a node that exited non-zero).
        let harmless: Vec<&str> = p
            .gates
            .iter()
            .filter(|g| matches!(g.status, GateStatus::Met | GateStatus::NotJudged))
            .map(|g| g.words.as_str())
            .filter(|w| !w.is_empty())
            .collect();
        // A node a second pass cleared beside a known-good node: what the first pass's gates
        // said of its pair is not evidence against it.
        let cleared = p.gates.iter().any(|g| {
            g.gate == crate::phases::runner::second_pass::CLEARED_GATE && names_node(&g.words, node)
        });
        let first_pass: Vec<&str> = p
            .gates
            .iter()
            .filter(|g| !g.gate.starts_with("second pass"))
            .map(|g| g.words.as_str())
            .filter(|w| !w.is_empty())
            .collect();
        let clauses: Vec<&str> = p
            .reason
            .split("; ")
            .filter(|c| names_node(c, node))
            .filter(|c| !harmless.iter().any(|w| w.contains(bare(c))))
            .filter(|c| !(cleared && first_pass.iter().any(|w| w.contains(bare(c)))))
            .take(4)
            .collect();
        if clauses.is_empty() {
            continue;
        }
        out.push(NodeRow {
            verdict,
            gpu: clauses.iter().find_map(|c| gpu_after(c, node)),
            finding: format!("{} {}: {}", p.id, p.verdict.label(), clauses.join("; ")),
            next: format!(
                "read logs/{}/{node}.log.gz (zcat), then re-run {} on it",
                p.id, p.id
            ),
        });
    }
    out.sort_by_key(|r| std::cmp::Reverse(rank(r.verdict)));
    out
}

/// A clause of a reason without the phase's duration the runner puts after the last one
/// ("… (20 s)"), as the gate that said it wrote it.
fn bare(clause: &str) -> &str {
    let c = clause.trim();
    if let Some((head, tail)) = c.rsplit_once(" (")
        && tail.ends_with(" s)")
        && tail[..tail.len() - 3].chars().all(|ch| ch.is_ascii_digit())
        && !tail[..tail.len() - 3].is_empty()
    {
        return head;
    }
    c
}

pub(super) fn rank(verdict: &str) -> u8 {
    match verdict {
        "FAIL" => 2,
        "WARN" => 1,
        _ => 0,
    }
}

/// Whether `text` names `node` as a whole word (`node1` is not in `node10`).
pub(super) fn names_node(text: &str, node: &str) -> bool {
    if node.is_empty() {
        return false;
    }
    let part = |c: char| c.is_alphanumeric() || c == '-' || c == '_' || c == '.';
    text.match_indices(node).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + node.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(|c| part(c) && c != '.')
    })
}

/// The GPU a clause names right after the node: `node07 GPU3`, `node07/gpu3`.
fn gpu_after(text: &str, node: &str) -> Option<u32> {
    text.match_indices(node).find_map(|(at, _)| {
        let rest = &text[at + node.len()..];
        let rest = rest
            .strip_prefix(" GPU")
            .or_else(|| rest.strip_prefix("/gpu"))?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|g| *g < 4096)
    })
}

pub(super) fn gpu_info(node: &RecordNode, gpu: u32) -> Option<&GpuInfo> {
    node.hello.as_ref()?.gpus.iter().find(|g| g.index == gpu)
}

/// Many clean nodes in one cell: all names up to 12, then the first ones and a count.
pub(super) fn names(nodes: &[String]) -> String {
    if nodes.len() <= 12 {
        return nodes.join(", ");
    }
    format!(
        "{} … and {} more ({} nodes)",
        nodes[..8].join(", "),
        nodes.len() - 8,
        nodes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_named_only_as_a_whole_word() {
        assert!(names_node("node07 exited 1", "node07"));
        assert!(names_node("first node07 322 = 40 % of 810", "node07"));
        assert!(!names_node("node070 exited 1", "node07"));
        assert!(!names_node("xnode07 exited", "node07"));
        assert!(names_node("on node07.", "node07"));
        assert_eq!(
            gpu_after("stalled node07 GPU3: util 0 %", "node07"),
            Some(3)
        );
        assert_eq!(gpu_after("tflops node03/gpu5 2328", "node03"), Some(5));
        assert_eq!(gpu_after("node07 exited 1", "node07"), None);
    }
}
