//! docs/verdicts.md's audit, row by row: each row's real output is judged now and must give the
//! row's verdict with the reason it quotes; every shipped phase has a PASS row and a FAIL row or
//! says under **Gaps** why not; the baselines the rows use are what `burnin parse
//! --save-baseline` makes from their sources today.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One row of the audit table.
#[derive(Debug)]
struct Row {
    phase: String,
    verdict: String,
    how: String,
    reason: String,
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/verdicts.md")).expect("docs/verdicts.md")
}

fn unquote(cell: &str) -> String {
    cell.trim().trim_matches('`').to_string()
}

fn rows(doc: &str) -> Vec<Row> {
    let table = doc
        .split("<!-- audit:begin -->")
        .nth(1)
        .and_then(|t| t.split("<!-- audit:end -->").next())
        .expect("the audit table between its markers");
    table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| phase ") && !l.starts_with("|---"))
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 5, "five cells: {l}");
            Row {
                phase: cells[0].trim().to_string(),
                verdict: cells[1].trim().to_string(),
                how: unquote(cells[3]),
                reason: unquote(cells[4]),
            }
        })
        .collect()
}

fn burnin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_burnin"));
    c.current_dir(root()).env_remove("BURNIN_LOG");
    c
}

/// The phase's verdict and reason as `burnin parse --json ARGS` gives them.
fn parsed(args: &str, phase: &str) -> (String, String) {
    let out = burnin()
        .arg("parse")
        .arg("--json")
        .args(args.split_whitespace())
        .output()
        .expect("run burnin parse");
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "parse {args}: {e}\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 1, "parse {args}: one file per row: {doc}");
    let v = files[0]["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["phase"] == phase))
        .unwrap_or_else(|| panic!("parse {args}: {phase} did not judge it: {}", files[0]));
    (
        v["verdict"].as_str().unwrap_or_default().to_string(),
        v["reason"].as_str().unwrap_or_default().to_string(),
    )
}

/// The phase's verdict and reason as the run record on disk has them.
fn recorded(dir: &str, phase: &str) -> (String, String) {
    let path = root().join(dir).join("summary.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s: serde_json::Value = serde_json::from_str(&text).expect("summary.json");
    let p = s["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["id"] == phase))
        .unwrap_or_else(|| panic!("{dir}: no {phase}"));
    (
        p["verdict"].as_str().unwrap_or_default().to_string(),
        p["reason"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn every_row_of_the_audit_gives_its_verdict_and_names_its_cause() {
    let doc = doc();
    let rows = rows(&doc);
    assert!(rows.len() >= 30, "{} rows", rows.len());
    let mut wrong = Vec::new();
    for row in &rows {
        let (how, arg) = row.how.split_once(' ').expect("`how what`");
        let (verdict, reason) = match how {
            "parse" => parsed(arg, &row.phase),
            "record" => recorded(arg, &row.phase),
            "test" => {
                let (file, name) = arg.split_once("::").expect("FILE::NAME");
                let src = std::fs::read_to_string(root().join(file)).expect("test file");
                let at = src
                    .find(&format!("fn {name}("))
                    .unwrap_or_else(|| panic!("{file} has no test {name}"));
                // The named test asserts the verdict and the reason itself (its body only: up
                // to the first line that closes an item at the file's top level).
                let body = &src[at..];
                let body = &body[..body.find("\n}\n").map_or(body.len(), |e| e + 2)];
                assert!(
                    body.contains(&format!("\"{}\"", row.verdict)),
                    "{name} asserts no {}",
                    row.verdict
                );
                assert!(
                    body.contains(&row.reason),
                    "{name} does not check {:?}",
                    row.reason
                );
                continue;
            }
            other => panic!("unknown way to judge: {other}"),
        };
        if verdict != row.verdict || !reason.contains(&row.reason) {
            wrong.push(format!(
                "{} {} ({}): got {verdict}: {reason}\n  wanted {} with {:?}",
                row.phase, row.how, how, row.verdict, row.reason
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_shipped_phase_has_a_pass_and_a_fail_or_says_why_not() {
    let doc = doc();
    let rows = rows(&doc);
    let gaps = doc.split("## Gaps").nth(1).expect("a Gaps section");
    let plan = burnin::plan::default_plan();
    let mut missing = Vec::new();
    for spec in &plan.phases {
        for verdict in ["PASS", "FAIL"] {
            let shown = rows
                .iter()
                .any(|r| r.phase == spec.id && r.verdict == verdict);
            let said = gaps.contains(&format!("**{} {verdict}", spec.id))
                || gaps.contains(&format!("**{} {verdict}**", spec.id))
                || gaps.contains(&format!("**{} PASS** and **{} FAIL**", spec.id, spec.id));
            if !shown && !said {
                missing.push(format!("{} {verdict}", spec.id));
            }
        }
    }
    assert!(missing.is_empty(), "neither a row nor a gap: {missing:?}");
    // And no row names a phase the plan does not ship.
    for r in &rows {
        assert!(plan.find(&r.phase).is_some(), "{} is not shipped", r.phase);
    }
}

#[test]
fn the_baselines_are_what_save_baseline_makes_from_their_sources() {
    let made_from: &[(&str, &[&str])] = &[
        (
            "t3-h100-8gpu-baseline.json",
            &[
                "nvbandwidth",
                "tests/corpus/nvbandwidth/v0.10-h100-8gpu-d2d-read-ce-cov.txt",
            ],
        ),
        (
            "t4-h100-8gpu-baseline.json",
            &[
                "nccl-tests",
                "tests/corpus/nccl-tests/allreduce-1x8h100-dgx-8rank-side-work-header-fields-480gbps.txt",
            ],
        ),
        (
            "s1-roce-200g-baseline.json",
            &[
                "perftest",
                "tests/corpus/perftest/write-bw-server-roce-200g-MBps-header-gbits-values.txt",
            ],
        ),
        (
            "s2-s3-seaweed-baseline.json",
            &[
                "s3-probe",
                "tests/fixtures/s3-probe/seaweed-get-healthy.jsonl",
                "tests/fixtures/s3-probe/seaweed-checkpoint-healthy.jsonl",
            ],
        ),
    ];
    let dir = std::env::temp_dir().join(format!("burnin-verdicts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, args) in made_from {
        let to: PathBuf = dir.join(name);
        let out = burnin()
            .arg("parse")
            .args(*args)
            .arg("--save-baseline")
            .arg(&to)
            .output()
            .expect("run burnin parse");
        assert!(
            to.exists(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |p: &Path| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(p).expect("baseline")).expect("json")
        };
        let committed = read(&root().join("tests/fixtures/verdicts").join(name));
        assert_eq!(
            read(&to),
            committed,
            "tests/fixtures/verdicts/{name} is no longer what its sources make"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
