//! The report's DCGM table: what NVIDIA's own diagnostic (`dcgmi diag`, a V1 phase) said of each
//! GPU, beside what burnin's other phases and findings say of the same GPU. The vendor reads DCGM
//! first; where the two disagree is where a return is argued, so that column is said in words.

use super::ReportData;
use super::nodes::{evidence_on, gpu_info, names, rank};
use super::render::{Block, Cell};
use crate::model::phase::CheckStatus;
use crate::model::{fit, strip_controls};
use crate::record::RecordDiagGpu;

/// How the table reads, said above it.
pub(super) const DCGM_RULE: &str = "DCGM's word on a GPU is the worst of its tests (a JSON \"Fail\" is a DCGM warning too). burnin's word comes from every other phase and finding that names the GPU; a GPU nothing names is PASS. A node-wide row holds the tests DCGM tied to no GPU. The GPUs (and node-wide tests) where both say Pass share the last row.";

/// The table, or `None` where no phase of the run read a DCGM diagnostic.
pub(super) fn dcgm_table(d: &ReportData) -> Option<Block<'_>> {
    let diag_phases: Vec<&str> = d
        .summary
        .phases
        .iter()
        .filter(|p| !p.dcgm.is_empty())
        .map(|p| p.id.as_str())
        .collect();
    if diag_phases.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    let mut clean: Vec<String> = Vec::new();
    let (mut clean_gpus, mut clean_node_wide) = (0usize, 0usize);
    for p in d.summary.phases.iter().filter(|p| !p.dcgm.is_empty()) {
        for node in &d.summary.nodes {
            let results: Vec<&RecordDiagGpu> =
                p.dcgm.iter().filter(|r| r.node == node.name).collect();
            if results.is_empty() {
                continue;
            }
            let evidence = evidence_on(d, &node.name, &diag_phases);
            let mut any_clean = false;
            for r in results {
                let dcgm = DcgmWord::of(r);
                // A node-wide row is set beside what burnin found on the node without a GPU.
                let ours: Vec<_> = evidence.iter().filter(|e| e.gpu == r.gpu).collect();
                let burnin = ours.iter().map(|e| e.verdict).max_by_key(|v| rank(v));
                if dcgm.status == CheckStatus::Ok && burnin.is_none() {
                    match r.gpu {
                        Some(_) => clean_gpus += 1,
                        None => clean_node_wide += 1,
                    }
                    any_clean = true;
                    continue;
                }
                let serial = r
                    .gpu
                    .and_then(|g| gpu_info(node, g))
                    .and_then(|g| g.identity.serial.clone())
                    .map(|s| fit(&strip_controls(&s), 40))
                    .unwrap_or_else(|| "—".to_string());
                let burnin_words = match (ours.first(), r.gpu) {
                    (Some(e), _) => fit(&e.finding, 240),
                    (None, Some(_)) => "nothing names this GPU".to_string(),
                    (None, None) => "nothing names the node without a GPU".to_string(),
                };
                rows.push(vec![
                    Cell::plain(node.name.as_str()),
                    Cell::plain(
                        r.gpu
                            .map_or_else(|| "node-wide".to_string(), |g| format!("GPU{g}")),
                    ),
                    Cell::plain(serial),
                    Cell::badge(dcgm.word.clone(), check_class(dcgm.status)),
                    Cell {
                        items: dcgm.not_passed.clone(),
                        ..Cell::plain(dcgm.not_passed.join("; "))
                    },
                    Cell::verdict(burnin.unwrap_or("PASS")),
                    Cell::plain(burnin_words),
                    Cell::plain(agreement(dcgm.status, burnin)),
                ]);
            }
            if any_clean && !clean.contains(&node.name) {
                clean.push(node.name.clone());
            }
        }
    }
    if !clean.is_empty() {
        let what = match (clean_gpus, clean_node_wide) {
            (g, 0) => format!("{g} GPU(s)"),
            (0, n) => format!("node-wide on {n}"),
            (g, n) => format!("{g} GPU(s); node-wide on {n}"),
        };
        rows.push(vec![
            Cell::plain(names(&clean)),
            Cell::plain(what),
            Cell::plain(""),
            Cell::badge("Pass", "pass"),
            Cell::plain(""),
            Cell::verdict("PASS"),
            Cell::plain("nothing names them"),
            Cell::plain("agree"),
        ]);
    }
    Some(Block::Table {
        header: &[
            "node",
            "GPU",
            "serial",
            "DCGM",
            "DCGM's tests not passed",
            "burnin",
            "what burnin found",
            "agree?",
        ],
        rows,
    })
}

/// DCGM's word on one GPU: the worst of its tests, and each test that did not pass with
/// DCGM's own words.
struct DcgmWord {
    status: CheckStatus,
    word: String,
    not_passed: Vec<String>,
}

impl DcgmWord {
    fn of(r: &RecordDiagGpu) -> Self {
        let mut status = CheckStatus::Ok;
        let mut word = "Pass".to_string();
        let mut not_passed = Vec::new();
        for t in &r.tests {
            if severity(t.status) > severity(status) {
                status = t.status;
                word = fit(&strip_controls(&t.word), 20);
            }
            if t.status != CheckStatus::Ok {
                let says = t
                    .says
                    .as_deref()
                    .map(|s| format!(": {}", fit(&strip_controls(s), 200)))
                    .unwrap_or_default();
                not_passed.push(format!(
                    "{} {}{says}",
                    fit(&strip_controls(&t.test), 48),
                    fit(&strip_controls(&t.word), 20)
                ));
            }
        }
        if r.tests.is_empty() {
            status = CheckStatus::Unknown;
            word = "no test".to_string();
        }
        Self {
            status,
            word,
            not_passed,
        }
    }
}

fn severity(s: CheckStatus) -> u8 {
    match s {
        CheckStatus::Ok => 0,
        CheckStatus::Unknown => 1,
        CheckStatus::Warn => 2,
        CheckStatus::Failed => 3,
    }
}

fn check_class(s: CheckStatus) -> &'static str {
    match s {
        CheckStatus::Ok => "pass",
        CheckStatus::Warn => "warn",
        CheckStatus::Failed => "fail",
        CheckStatus::Unknown => "skip",
    }
}

/// Where DCGM and burnin stand on one GPU, in words a vendor call can use.
fn agreement(dcgm: CheckStatus, burnin: Option<&str>) -> &'static str {
    match (dcgm, burnin) {
        (CheckStatus::Unknown, _) => "DCGM could not say",
        (CheckStatus::Ok, None) => "agree",
        (CheckStatus::Ok, Some(_)) => "burnin alone: DCGM passed it",
        (_, None) => "DCGM alone: burnin's phases passed it",
        (_, Some(_)) => "both name it",
    }
}
