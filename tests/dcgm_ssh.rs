//! V1 (DCGM's diagnostic) over real SSH, to the report: two sshd nodes whose `dcgmi` replays
//! real outputs of others (tests/corpus/dcgm-diag): node01 a DCGM 3.x run where every test
//! passed, node02 a run whose GPU Memory test failed GPU0 on thermal violations. The report must
//! set DCGM's word on each GPU beside burnin's own: node02 GPU0 failed by DCGM alone, node01's
//! software tests node-wide, the GPUs both pass on one row.

// A test fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::site::{Site, finish, phase};
use std::path::{Path, PathBuf};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/dcgm-diag")
        .join(name)
}

#[test]
fn v1_reads_dcgm_per_gpu_and_the_report_sets_it_beside_burnin() {
    let plan = "[vars]\ndcgm_level = \"3\"\n[[phase]]\nid = \"V1\"\ntitle = \"DCGM diagnostic\"\nscope = \"each-node\"\nparser = \"dcgm-diag\"\ngates = [{ kind = \"checks\" }]\ncommand = \"dcgmi diag -r {dcgm_level} -j\"\n";
    let Some(site) = Site::new(2, 8, plan) else {
        return;
    };
    let good = corpus("dcgm3-r3-v100-pcie-16gb-verbose-all-pass-eud-skip-unknown-repo.txt");
    let bad = corpus("dcgm-pre4-r2-8gpu-gpu-memory-fail-thermal-ml-engineering-partial.txt");
    // node02 is 127.0.0.3; the level must reach the tool as the plan says.
    site.cluster.install_tool(
        "dcgmi",
        &format!(
            "#!/bin/sh\n[ \"$*\" = 'diag -r 3 -j' ] || {{ echo \"unexpected: $*\" >&2; exit 2; }}\ncase \"$SSH_CONNECTION\" in *' 127.0.0.3 '*) cat '{}'; exit 226 ;; *) cat '{}' ;; esac\n",
            bad.display(),
            good.display()
        ),
    );
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    let v1 = phase(&doc, "V1");
    assert_eq!(v1["verdict"], "FAIL", "{stderr}\n{v1}");
    assert_eq!(code, Some(1));
    let reason = v1["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("node02") && reason.contains("dcgm-gpu-memory"),
        "{reason}"
    );

    let run = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let md = common::site::report_md(&run, &site.cluster.dir.join("burnin.log"));
    let section = md
        .split("## DCGM diagnostic beside burnin")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no DCGM section:\n{md}"));
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| node"))
        .collect();
    // node02 GPU0: DCGM's Fail with its own words, burnin's phases passed it.
    let gpu0 = rows
        .iter()
        .find(|r| r.starts_with("| node02 | GPU0 "))
        .unwrap_or_else(|| panic!("no node02 GPU0 row:\n{section}"));
    assert!(gpu0.contains("Fail"), "{gpu0}");
    assert!(
        gpu0.contains("GPU Memory Fail: GPU 0 Thermal violations"),
        "{gpu0}"
    );
    assert!(gpu0.contains("DCGM alone"), "{gpu0}");
    // node02's seven passing GPUs share the clean row; no row of their own.
    for g in 1..8 {
        assert!(
            !rows
                .iter()
                .any(|r| r.starts_with(&format!("| node02 | GPU{g} "))),
            "GPU{g} passed both: {section}"
        );
    }
    let clean = rows
        .iter()
        .find(|r| r.contains("7 GPU(s); node-wide on 1"))
        .unwrap_or_else(|| panic!("no clean row:\n{section}"));
    assert!(clean.contains("agree"), "{clean}");
    // node01's 3.x table has no per-GPU results: its tests are node-wide, all passed (EUD
    // skipped), so node01 is clean and has no row.
    assert!(
        !rows.iter().any(|r| r.starts_with("| node01 ")),
        "{section}"
    );
    assert!(
        clean.starts_with("| node01, node02 "),
        "node01 is clean node-wide, node02 on 7 GPUs: {clean}"
    );
}
