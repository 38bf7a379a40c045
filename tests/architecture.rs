//! Imports go one way, down the floors (issue 27). Every `crate::…` path in the library's
//! non-test code is read; a module may name only modules on its own floor or below. The floors
//! are the table in docs/ARCHITECTURE.md ("Floors").
//!
//! `KNOWN` was the ratchet while the restructure landed in slices; it is empty now, so any
//! import against the order fails the test.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

/// The floors, ground first. A module may import its own floor and the floors below it.
const FLOORS: &[&[&str]] = &[
    // Messages and units everything shares: samples, frames, phase events, verdicts, findings,
    // the source events and interface, the telemetry watch beside a run.
    &["model"],
    // Files a person writes (located errors, bounded reads, burnin.toml); the shipped workloads.
    &["config", "workloads"],
    // SSH and local child processes.
    &["transport"],
    // Formats between processes: the agent's NDJSON, Prometheus exposition text.
    &["wire"],
    // The storage probe (`burnin probe s3`).
    &["probes"],
    // Tool output → metrics.
    &["parsers"],
    // The plan and its gates and drills: what runs, and how it is judged.
    &["plan"],
    // Carrying a phase out on the nodes.
    &["phases"],
    // The store the console and triage read.
    &["store"],
    // Rules over the store.
    &["triage"],
    // The simulated cluster: figures judged by the plan's gates, behind the agent's and the
    // console's interfaces.
    &["sim"],
    // What runs on a node: `burnin agent` and its samplers.
    &["agent"],
    // The run directory and the session that writes it.
    &["record"],
    // The console's telemetry sources: fleet, Prometheus, replay.
    &["sources"],
    // A record made into a report.
    &["report"],
    // The console's state, keys and looks.
    &["app"],
    // Drawing the state.
    &["ui"],
    // The terminal loop and the phase driver.
    &["console"],
    // The command line and each subcommand.
    &["commands"],
];

/// Imports against the order still in the code (module → module it names). Issue 27's moves
/// have all landed: the list is empty and must stay so.
const KNOWN: &[(&str, &str)] = &[];

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

#[test]
fn only_main_and_lib_sit_loose_in_src() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let loose: Vec<String> = std::fs::read_dir(&root)
        .expect("read src/")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "main.rs" && n != "lib.rs")
        .collect();
    assert!(
        loose.is_empty(),
        "every module lives in its floor's folder; loose in src/: {loose:?}"
    );
}

/// Public functions that answer an error in words (`Result<_, String>`), each with why words
/// are the point there. Everything else public answers a typed error (`RecordError`,
/// `PromError`, `TemplateError`, `SegmentDamage`, `Garbled`, …), so a caller can tell
/// failures apart; this list only shrinks.
const WORDS_ALLOWED: &[(&str, &str)] = &[
    // Value parsers: clap, and the config reader that prefixes the key, show their words whole.
    ("model/units.rs", "parse_duration"),
    ("model/units.rs", "parse_period"),
    ("model/units.rs", "count"),
    ("config/inventory.rs", "expand_hosts"),
    ("config/inventory.rs", "validate_target"),
    ("config/inventory.rs", "gpu_count"),
    ("app/theme.rs", "parse_style"),
    ("probes/s3/mod.rs", "parse_size"),
    ("probes/s3/cli.rs", "part_size"),
    ("sim/mod.rs", "parse"),
    ("commands/cli.rs", "play_speed"),
    ("commands/cli.rs", "run_speed"),
    ("commands/cli.rs", "screen_size"),
    ("commands/cli.rs", "bench_hours"),
    ("commands/cli.rs", "parse_pct"),
    ("commands/cli.rs", "parse_screen"),
    ("commands/localize.rs", "parse_fabric_fault"),
    // Checks of a command line's arguments: their words are the command's error line.
    ("agent/mod.rs", "new"),
    ("probes/s3/cli.rs", "spec_from_args"),
    ("probes/s3/objects.rs", "check_part_size"),
    ("probes/s3/loader.rs", "dir_files"),
    ("commands/parse/read.rs", "read_path"),
    ("commands/parse/read.rs", "read_text"),
    ("commands/bench.rs", "record"),
    // The reason becomes a `Garbled` line's reason, which is the typed error there.
    ("wire/mod.rs", "decode_general"),
];

#[test]
fn public_errors_are_typed_except_where_words_are_the_point() {
    let mut found: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, code) in common::library_code() {
        let file = path.to_string_lossy().replace('\\', "/");
        for (at, _) in code.match_indices("pub ") {
            let rest = &code[at + 4..];
            let rest = rest.strip_prefix("async ").unwrap_or(rest);
            let Some(rest) = rest.strip_prefix("fn ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let signature = rest.split('{').next().unwrap_or("");
            let returns = signature.split("->").nth(1).unwrap_or("");
            if returns.contains("Result<") && returns.contains(", String>") {
                found.insert((file.clone(), name));
            }
        }
    }
    let allowed: BTreeSet<(String, String)> = WORDS_ALLOWED
        .iter()
        .map(|(f, n)| (f.to_string(), n.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "public functions that answer an error in words: give them a typed error \
         (thiserror), or say in WORDS_ALLOWED why words are the point: {new:?}"
    );
    let gone: Vec<_> = allowed.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "these answer a typed error now: take them out of WORDS_ALLOWED: {gone:?}"
    );
}

/// A function as a reader meets it: from its `fn` line to the closing brace at its indent.
/// (The same count as `scripts/sizes.py`.)
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let mut rest = body;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "async ",
            "const ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let name: String = sig
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, end + 2));
        }
    }
    out
}

/// Every Rust file of the crate a reader opens: src/, tests/ and benches/.
fn every_rust_file() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    ["src", "tests", "benches"]
        .iter()
        .flat_map(|d| common::files_under(&root.join(d)))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read a source file");
            let rel = p.strip_prefix(root).expect("in the crate");
            (rel.to_string_lossy().replace('\\', "/"), text)
        })
        .collect()
}

/// Issue 40's guides, held: no file past 1000 lines and no function past 200, tests included;
/// a file past 800 or a function past 120 is an exception docs/sizes.md names with its reason.
#[test]
fn no_file_or_function_outgrows_the_guides_unnamed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let named = std::fs::read_to_string(root.join("docs/sizes.md")).expect("docs/sizes.md");
    let mut over = Vec::new();
    let mut unnamed = Vec::new();
    for (path, text) in every_rust_file() {
        let lines = text.lines().count();
        if lines > 1000 {
            over.push(format!("{path}: {lines} lines"));
        } else if lines > 800 && !named.contains(&format!("`{path}`")) {
            unnamed.push(format!("{path}: {lines} lines"));
        }
        for (name, len) in functions(&text) {
            if len > 200 {
                over.push(format!("{path}::{name}: {len} lines"));
            } else if len > 120 && !named.contains(&format!("`{path}::{name}`")) {
                unnamed.push(format!("{path}::{name}: {len} lines"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "past the limits (1000 lines a file, 200 a function): split them by what their parts \
         are for: {over:#?}"
    );
    assert!(
        unnamed.is_empty(),
        "past the guides (800 lines a file, 120 a function): split them, or name each in \
         docs/sizes.md (as `path` or `path::function`) with why it reads best whole: \
         {unnamed:#?}"
    );
}

/// The counter counts what a reader would.
#[test]
fn the_function_counter_counts_from_fn_to_its_closing_brace() {
    let text = "fn a() {\n    x();\n}\n\nimpl T {\n    pub(crate) async fn b(&self) {\n        if y {\n        }\n    }\n    fn c();\n}\n";
    assert_eq!(
        functions(text),
        [("a".to_string(), 3), ("b".to_string(), 4)]
    );
}
