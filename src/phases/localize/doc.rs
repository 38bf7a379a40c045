//! The search's answer as a document: what `localize --json` prints, what its record keeps
//! (`localize.json`) and what the report reads back.

use serde::{Deserialize, Serialize};

use super::search::{Judged, Screen, Search};

/// Version of the `localize --json` document.
pub const LOCALIZE_SCHEMA: u32 = 1;

/// The search's answer, as `--json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocalizeDoc {
    /// Format version.
    pub schema: u32,
    /// The phase searched.
    pub phase: String,
    /// The nodes searched, in order (tests name them by index into this).
    pub nodes: Vec<String>,
    /// The first round's partition.
    pub screen: Screen,
    /// Nodes named: slow beside two different good partners.
    pub bad_nodes: Vec<String>,
    /// Pairs named: each passes with others, slow together twice.
    pub bad_links: Vec<(String, String)>,
    /// Slow tests that named nobody, in words.
    pub not_reproduced: Vec<String>,
    /// What the search could not follow up.
    pub stuck: Vec<String>,
    /// Rounds.
    pub rounds: u32,
    /// Tests.
    pub tests: usize,
    /// Every test with its figure and how it was read.
    pub groups: Vec<Judged>,
}

impl LocalizeDoc {
    /// The document of a search as it stands.
    pub fn of(phase: &str, nodes: &[String], screen: Screen, s: &Search) -> LocalizeDoc {
        let name = |i: usize| nodes.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
        LocalizeDoc {
            schema: LOCALIZE_SCHEMA,
            phase: phase.to_string(),
            nodes: nodes.to_vec(),
            screen,
            bad_nodes: s.bad_nodes.iter().map(|b| name(b.node)).collect(),
            bad_links: s
                .bad_links
                .iter()
                .map(|l| (name(l.nodes.0), name(l.nodes.1)))
                .collect(),
            not_reproduced: s
                .not_reproduced
                .iter()
                .map(|n| {
                    let who: Vec<String> = n.nodes.iter().take(8).map(|i| name(*i)).collect();
                    format!("{}: {}", who.join("+"), n.why)
                })
                .collect(),
            stuck: s.stuck.clone(),
            rounds: s.rounds(),
            tests: s.tests().len(),
            groups: s.tests().to_vec(),
        }
    }

    /// The words printed at the end.
    pub fn words(&self) -> String {
        let mut out = String::new();
        let head = if self.bad_nodes.is_empty() && self.bad_links.is_empty() {
            "nothing named".to_string()
        } else {
            let mut parts = Vec::new();
            if !self.bad_nodes.is_empty() {
                parts.push(format!("bad node(s): {}", self.bad_nodes.join(", ")));
            }
            if !self.bad_links.is_empty() {
                let links: Vec<String> = self
                    .bad_links
                    .iter()
                    .map(|(a, b)| format!("{a}–{b}"))
                    .collect();
                parts.push(format!("bad link(s): {}", links.join(", ")));
            }
            parts.join("; ")
        };
        out.push_str(&format!(
            "localize {}: {head} ({} rounds, {} tests over {} nodes)\n",
            self.phase,
            self.rounds,
            self.tests,
            self.nodes.len()
        ));
        for node in &self.bad_nodes {
            out.push_str(&format!(
                "  {node}: slow beside {}\n",
                self.evidence_of(node)
            ));
        }
        for (a, b) in &self.bad_links {
            out.push_str(&format!(
                "  {a}–{b}: each passes with others, slow together ({})\n",
                self.pair_evidence(a, b)
            ));
        }
        for n in &self.not_reproduced {
            out.push_str(&format!("  not named: {n}\n"));
        }
        for s in &self.stuck {
            out.push_str(&format!("  not followed up: {s}\n"));
        }
        let figures: Vec<f64> = self.groups.iter().filter_map(|g| g.result.figure).collect();
        if let (Some(lo), Some(hi)) = (
            figures.iter().copied().reduce(f64::min),
            figures.iter().copied().reduce(f64::max),
        ) {
            out.push_str(&format!(
                "  the tests ran at {lo:.1} to {hi:.1}: the search compares groups with each other, so a fabric slow everywhere is caught only by the phase's own gates (its floor, its baseline)\n"
            ));
        }
        out
    }

    /// The slow tests of `node` beside one good partner: "node03 (188.0), node09 (185.2)".
    /// The slow tests of `node` beside one good partner.
    pub fn evidence_of(&self, node: &str) -> String {
        let idx = self.nodes.iter().position(|n| n == node);
        let parts: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.slow && g.test.members.len() == 1 && Some(g.test.members[0]) == idx)
            .filter_map(|g| {
                let p = self.nodes.get(*g.test.padding.first()?)?;
                Some(format!(
                    "{p} ({})",
                    g.result
                        .figure
                        .map_or_else(|| "no figure".into(), |f| format!("{f:.1}"))
                ))
            })
            .collect();
        parts.join(", ")
    }

    /// The slow tests of the pair alone.
    pub fn pair_evidence(&self, a: &str, b: &str) -> String {
        let figures: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.slow)
            .filter(|g| {
                let names: Vec<&str> = g
                    .test
                    .nodes()
                    .iter()
                    .filter_map(|i| self.nodes.get(*i).map(String::as_str))
                    .collect();
                names.len() == 2 && names.contains(&a) && names.contains(&b)
            })
            .map(|g| {
                g.result
                    .figure
                    .map_or_else(|| "no figure".into(), |f| format!("{f:.1}"))
            })
            .collect();
        format!("as a pair: {}", figures.join(", "))
    }
}

/// Most tests a snapshot carries to the console (its latest).
const SNAPSHOT_TESTS: usize = 48;

impl LocalizeDoc {
    /// What the console shows of this search (`running`: it goes on).
    pub fn snapshot(&self, running: bool) -> crate::model::search::SearchSnapshot {
        use crate::model::fit;
        use crate::model::search::{SearchRow, SearchSnapshot};
        let name = |i: usize| {
            self.nodes
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("#{i}"))
        };
        let skip = self.groups.len().saturating_sub(SNAPSHOT_TESTS);
        SearchSnapshot {
            phase: fit(&self.phase, 24),
            nodes: self.nodes.len(),
            screen: self.screen.name().to_string(),
            rounds: self.rounds,
            running,
            named: self
                .bad_nodes
                .iter()
                .map(|n| fit(&format!("{n}: slow beside {}", self.evidence_of(n)), 200))
                .collect(),
            links: self
                .bad_links
                .iter()
                .map(|(a, b)| {
                    fit(
                        &format!(
                            "{a}–{b}: each passes with others, slow together ({})",
                            self.pair_evidence(a, b)
                        ),
                        200,
                    )
                })
                .collect(),
            notes: self
                .not_reproduced
                .iter()
                .map(|n| format!("not named: {n}"))
                .chain(self.stuck.iter().cloned())
                .map(|n| fit(&n, 200))
                .take(16)
                .collect(),
            tests: self
                .groups
                .iter()
                .skip(skip)
                .map(|g| {
                    let mut nodes: Vec<String> =
                        g.test.members.iter().take(8).map(|i| name(*i)).collect();
                    if g.test.members.len() > 8 {
                        nodes.push(format!("+{}", g.test.members.len() - 8));
                    }
                    let mut words = nodes.join(",");
                    if let Some(p) = g.test.padding.first() {
                        words.push_str(&format!(" + {}", name(*p)));
                    }
                    SearchRow {
                        round: g.test.round,
                        purpose: serde_json::to_value(g.test.purpose)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        nodes: fit(&words, 80),
                        figure: g.result.figure.filter(|f| f.is_finite()),
                        slow: g.slow,
                        why: fit(&g.why, 160),
                    }
                })
                .collect(),
            tests_run: self.groups.len(),
        }
    }
}
