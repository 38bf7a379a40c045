//! Issue 43, class 2: nccl-tests built without MPI=1 and started by mpirun on two nodes runs
//! one whole test per node. A run on real SSH whose stand-in all_reduce_perf prints what such
//! a job printed (NVIDIA/nccl-tests#306, 2 × 8 H20, copied into tests/corpus) must FAIL T7 in
//! those words, and no figure of either job may stand for the cluster's.

use super::*;

/// The stand-in prints the captured output, a line at a time, as the real job did.
fn stand_in(capture: &str) -> String {
    format!(
        "#!/bin/sh\nwhile IFS= read -r line; do printf '%s\\n' \"$line\"; done < '{}/tests/corpus/nccl-tests/{capture}'\n",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn two_separate_jobs_fail_t7_and_leave_no_figure() {
    let Some(site) = Site::new(2, 8, common::site::STAND_IN_T7) else {
        return;
    };
    site.cluster.install_tool(
        "all_reduce_perf",
        &stand_in(
            "allreduce-2x8h20-mpirun-nonmpi-binary-split-mod8-two-jobs-devicelist-inside-table.txt",
        ),
    );
    let (_, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    let t7 = phase(&doc, "T7");
    assert_eq!(t7["verdict"], "FAIL", "{t7}\n{stderr}");
    let reason = t7["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains(
            "all_reduce ran as 2 separate jobs of 8 rank(s) each (rank 0 printed 2 times on node3, node2)"
        ) && reason.contains("no measurement across nodes"),
        "{reason}"
    );
    assert!(
        t7["figures"].get("busbw_all_reduce").is_none(),
        "one job's rows stood for the cluster: {t7}"
    );
}
