//! Imports go one way, down the floors (issue 27). Every `crate::…` path in the library's
//! non-test code is read; a module may name only modules on its own floor or below. The floors
//! are the table in docs/ARCHITECTURE.md ("Floors").
//!
//! The restructure lands in slices: `KNOWN` lists the imports against the order that are still
//! in the code, each waiting for its move. The test fails on an import against the order that
//! is not listed (nothing new goes up), and on a listed one that is gone (the list shrinks as
//! the moves land, and is empty when issue 27 is done).

mod common;

use std::collections::BTreeSet;

/// The floors, ground first. A module may import its own floor and the floors below it.
const FLOORS: &[&[&str]] = &[
    // Messages and units everything shares.
    &["model"],
    // Located errors and bounded reads of files a person points at; the shipped workloads.
    &["config", "workloads"],
    // burnin.toml: the nodes and how to reach them.
    &["inventory"],
    // SSH and local child processes.
    &["transport"],
    // Tool output → metrics.
    &["parsers"],
    // The storage probe.
    &["probes"],
    // Telemetry sources and what runs on the node.
    &["telemetry"],
    // The plan, the gates, the runner, the session.
    &["phases"],
    // The store the console and triage read.
    &["cluster"],
    // Rules over the store.
    &["triage"],
    // The run directory.
    &["record"],
    // A record played back, and made into a report.
    &["replay", "report"],
    // The console: its state, its loop, and the drawing of the state.
    &["app", "ui"],
    // The command line's shapes (the subcommands below take their arguments from it).
    &["cli"],
    // Subcommands.
    &[
        "agent",
        "bench",
        "deploy",
        "demo_run",
        "headless",
        "parse_cmd",
    ],
    // Dispatch.
    &["commands"],
];

/// Imports against the order still in the code (module → module it names), each waiting for
/// its move in issue 27. Remove a line when its move lands; never add one.
const KNOWN: &[(&str, &str)] = &[
    // The S3 probe parser reads the probe's report into its type: the report's shape goes
    // down to `model` with the probe's split.
    ("parsers", "probes"),
    // The simulator plays the shipped plan and judges its own verdicts: it should emit the
    // figures and let the real gates judge them (the fleet reaches the phase driver only
    // through `fleet::PhaseSide`).
    ("telemetry", "phases"),
];

/// The floor of a top-level module.
fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

/// Every (module, named module) pair of the library's non-test code.
fn imports() -> BTreeSet<(String, String)> {
    let path = regex::Regex::new(r"crate::([a-z_]+)").expect("re");
    let mut out = BTreeSet::new();
    for (rel, code) in common::library_code() {
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        for line in code.lines() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for c in path.captures_iter(line) {
                let to = c[1].to_string();
                if to != top {
                    out.insert((top.clone(), to));
                }
            }
        }
    }
    out
}

#[test]
fn every_module_is_on_a_floor() {
    let unplaced: BTreeSet<String> = imports()
        .into_iter()
        .flat_map(|(a, b)| [a, b])
        // The stripping print macros are exported at the crate root.
        .filter(|m| !m.ends_with("_safe"))
        .filter(|m| floor(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules without a floor in FLOORS: {unplaced:?}"
    );
}

#[test]
fn imports_go_down_the_floors() {
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let against: BTreeSet<(String, String)> = imports()
        .into_iter()
        .filter(|(a, b)| match (floor(a), floor(b)) {
            (Some(fa), Some(fb)) => fb > fa,
            _ => false,
        })
        .collect();
    let new: Vec<String> = against
        .difference(&known)
        .map(|(a, b)| format!("{a} → {b}"))
        .collect();
    let gone: Vec<String> = known
        .difference(&against)
        .map(|(a, b)| format!("(\"{a}\", \"{b}\")"))
        .collect();
    assert!(
        new.is_empty(),
        "imports up the floors (move the code down, or the type to `model`):\n  {}",
        new.join("\n  ")
    );
    assert!(
        gone.is_empty(),
        "these moves landed: take them out of KNOWN:\n  {}",
        gone.join("\n  ")
    );
}
