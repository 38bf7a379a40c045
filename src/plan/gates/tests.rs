use super::figures::{Keep, put};
use super::*;
use crate::plan::default_plan;

#[test]
fn wrong_counts_past_u64_saturate_and_fail() {
    // Found by a long run of tests/fuzz/: two damaged rows' #wrong summed past u64.
    let row = |w: u64| PhaseMetric::BusBw {
        node: Some("n".into()),
        collective: "all_reduce".into(),
        size_bytes: 8,
        busbw_gb_per_s: 1.0,
        algbw_gb_per_s: 1.0,
        in_place_busbw_gb_per_s: None,
        wrong: Some(w),
        deviation: false,
        ranks: 2,
    };
    let mut said = Said {
        findings: Vec::new(),
        summary: Vec::new(),
    };
    judge_zero_wrong(&[row(u64::MAX), row(u64::MAX)], &mut said);
    assert_eq!(said.findings[0].0, Level::Fail);
    assert!(
        said.findings[0].1.contains(&u64::MAX.to_string()),
        "{:?}",
        said.findings
    );
}

fn tflops(node: &str, gpu: u32, v: f64) -> PhaseMetric {
    PhaseMetric::Tflops {
        node: node.into(),
        gpu,
        dtype: "bf16".into(),
        tflops: v,
    }
}

fn observed(nodes: &[&str]) -> Observed {
    Observed {
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        exit: nodes.iter().map(|s| (s.to_string(), Some(0))).collect(),
        // Watched throughout, and quiet.
        telemetry: Some(crate::model::watch::Window::default()),
        ..Observed::default()
    }
}

fn fp8_too(m: &mut Vec<PhaseMetric>) {
    let extra: Vec<PhaseMetric> = m
        .iter()
        .filter_map(|x| match x {
            PhaseMetric::Tflops {
                node, gpu, tflops, ..
            } => Some(PhaseMetric::Tflops {
                node: node.clone(),
                gpu: *gpu,
                dtype: "fp8".into(),
                tflops: tflops * 2.0,
            }),
            _ => None,
        })
        .collect();
    m.extend(extra);
}

#[test]
fn a_straggler_gpu_fails_t2_with_numbers() {
    let t2 = default_plan().find("T2").unwrap();
    let mut m: Vec<PhaseMetric> = (0..8).map(|g| tflops("n1", g, 700.0 + g as f64)).collect();
    m.push(tflops("n2", 0, 560.0));
    fp8_too(&mut m);
    let (v, why) = judge(t2, &m, &observed(&["n1", "n2"]), None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(
        why.contains("n2/gpu0 560 = 80 % of peer median 703"),
        "{why}"
    );
}

#[test]
fn without_a_baseline_t2_warns_and_says_so() {
    let t2 = default_plan().find("T2").unwrap();
    let mut m: Vec<PhaseMetric> = (0..8).map(|g| tflops("n1", g, 700.0)).collect();
    fp8_too(&mut m);
    let (v, why) = judge(t2, &m, &observed(&["n1"]), None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(why.contains("no baseline for tflops_bf16"), "{why}");
    let base = Baseline {
        schema: 1,
        fleet: None,
        source: "r".into(),
        phases: [("T2".to_string(), figures(&m))].into_iter().collect(),
    };
    let (v, why) = judge(t2, &m, &observed(&["n1"]), Some(&base));
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("tflops_bf16 median 700"), "{why}");
    let slower: Vec<PhaseMetric> = m
        .iter()
        .map(|x| match x {
            PhaseMetric::Tflops {
                node,
                gpu,
                dtype,
                tflops,
            } => PhaseMetric::Tflops {
                node: node.clone(),
                gpu: *gpu,
                dtype: dtype.clone(),
                tflops: tflops * 0.85,
            },
            o => o.clone(),
        })
        .collect();
    let (v, why) = judge(t2, &slower, &observed(&["n1"]), Some(&base));
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(
        why.contains("8 below 90 % of baseline on tflops_bf16"),
        "{why}"
    );
}

#[test]
fn smaller_nccl_runs_are_kept_as_the_scaling_curve() {
    let row = |ranks: u32, busbw: f64| PhaseMetric::BusBw {
        node: Some("n1".into()),
        collective: "all_reduce".into(),
        size_bytes: 1 << 30,
        busbw_gb_per_s: busbw,
        algbw_gb_per_s: busbw / 1.75,
        in_place_busbw_gb_per_s: None,
        wrong: Some(0),
        ranks,
        deviation: false,
    };
    let f = figures(&[row(2, 300.0), row(4, 600.0), row(8, 800.0)]);
    assert_eq!(f["busbw_all_reduce"][0].value, 800.0);
    assert_eq!(f["busbw_all_reduce_2gpu"][0].value, 300.0);
    assert_eq!(f["busbw_all_reduce_4gpu"][0].value, 600.0);
}

#[test]
fn the_unpinned_loader_run_is_kept_beside_the_pinned_one() {
    let step = |i: u64, wait: f64, variant: Option<&str>| PhaseMetric::Step {
        node: Some("n1".into()),
        step: i,
        step_time_ms: Some(100.0),
        data_wait_ms: Some(wait),
        tokens_per_sec: Some(1000.0),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: Some(10.0),
        world: Some(8),
        variant: variant.map(str::to_string),
    };
    let mut m: Vec<PhaseMetric> = (0..10).map(|i| step(i, 12.0, Some("numa_off"))).collect();
    m.extend((0..10).map(|i| step(i, 3.0, None)));
    let f = figures(&m);
    assert_eq!(f["data_wait_pct"][0].value, 3.0);
    assert_eq!(f["data_wait_pct_numa_off"][0].value, 12.0);
    let t8 = default_plan().find("T8").unwrap();
    let (_, why) = judge(t8, &m, &observed(&["n1"]), None);
    assert!(why.contains("data_wait_pct_numa_off median 12.0"), "{why}");
    // The GDS column: kept beside, never judged by T8's gates (its wait over 5 % fails
    // nothing).
    m.extend((0..10).map(|i| step(i, 40.0, Some("gds"))));
    let f = figures(&m);
    assert_eq!(f["data_wait_pct_gds"][0].value, 40.0);
    assert_eq!(f["data_wait_pct"][0].value, 3.0);
    assert_eq!(crate::model::figures::unit_of("data_wait_pct_gds"), "%");
    let (verdict, why) = judge(t8, &m, &observed(&["n1"]), None);
    assert_ne!(verdict, Verdict::Fail, "{why}");
    assert!(why.contains("data_wait_pct_gds median 40.0"), "{why}");
}

#[test]
fn output_contains_with_evidence_warns_where_the_tool_was_silent() {
    let t7 = default_plan().find("T7").unwrap();
    let row = |node: &str| PhaseMetric::BusBw {
        node: Some(node.into()),
        collective: "all_reduce".into(),
        size_bytes: 1 << 30,
        ranks: 16,
        busbw_gb_per_s: 400.0,
        algbw_gb_per_s: 213.0,
        in_place_busbw_gb_per_s: None,
        wrong: Some(0),
        deviation: false,
    };
    let m = vec![row("n1"), row("n2"), row("n3")];
    let mut o = observed(&["n1", "n2", "n3"]);
    // n1 named NET/IB; n2 named another network; n3 never said which (no INFO lines).
    for (text, nodes) in [
        ("NET/IB", &["n1"][..]),
        ("Using network", &["n1", "n2"][..]),
    ] {
        o.seen
            .insert(text.into(), nodes.iter().map(|n| n.to_string()).collect());
    }
    let (v, why) = judge(t7, &m, &o, None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(why.contains("\"NET/IB\" not in the output of n2"), "{why}");
    assert!(
        why.contains("\"NET/IB\" not judged on n3: no \"Using network\" line in the output"),
        "{why}"
    );
    // Only silent nodes: WARN, never a FAIL for want of a line the tool never prints.
    o.seen
        .insert("Using network".into(), ["n1".to_string()].into());
    o.nodes = vec!["n1".into(), "n3".into()];
    let (v, why) = judge(t7, &m, &o, None);
    assert_eq!(v, Verdict::Warn, "{why}");
}

#[test]
fn a_missing_figure_fails_a_run_but_not_a_file_that_measured_something_else() {
    let t4 = default_plan().find("T4").unwrap();
    let m = vec![PhaseMetric::BusBw {
        node: Some("n1".into()),
        collective: "all_gather".into(),
        size_bytes: 1 << 30,
        ranks: 8,
        busbw_gb_per_s: 350.0,
        algbw_gb_per_s: 400.0,
        in_place_busbw_gb_per_s: None,
        wrong: Some(0),
        deviation: false,
    }];
    let mut o = observed(&["n1"]);
    let (v, why) = judge(t4, &m, &o, None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(why.contains("no busbw_all_reduce in the output"), "{why}");
    o.offline = true;
    let (v, why) = judge(t4, &m, &o, None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(
        why.contains(
            "no busbw_all_reduce in this output (it measured busbw_all_gather): not judged"
        ),
        "{why}"
    );
    // A file that measured nothing still fails.
    let (v, _) = judge(t4, &[], &o, None);
    assert_eq!(v, Verdict::Fail);
}

#[test]
fn scaling_compares_the_full_job_with_one_gpu() {
    let t5 = default_plan().find("T5").unwrap();
    let step = |node: &str, world: u32, i: u64, tokens: f64| PhaseMetric::Step {
        node: Some(node.into()),
        step: i,
        step_time_ms: Some(100.0),
        data_wait_ms: Some(1.0),
        tokens_per_sec: Some(tokens),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: Some(5.0 - i as f64 * 0.01),
        world: Some(world),
        variant: None,
    };
    let mut m = Vec::new();
    for i in 0..20 {
        m.push(step("n1", 1, i, 1000.0));
        m.push(step("n1", 8, i, 7000.0)); // 87.5 %
        m.push(step("n2", 1, i, 1000.0));
        m.push(step("n2", 8, i, 6000.0)); // 75 %: below 81
    }
    let f = figures(&m);
    assert_eq!(f["scaling_pct"][0].value, 87.5);
    assert_eq!(
        f["tokens_per_sec"][0].value, 7000.0,
        "the full job's figure"
    );
    let (v, why) = judge(t5, &m, &observed(&["n1", "n2"]), None);
    assert_eq!(v, Verdict::Fail);
    assert!(
        why.contains("scaling below 81 % on 1 node(s), first n2 75 %"),
        "{why}"
    );
    assert!(why.contains("n1 (8 GPU) loss"), "{why}");
    // One GPU only: not judged, and said.
    let one: Vec<PhaseMetric> = (0..20).map(|i| step("n1", 1, i, 1000.0)).collect();
    let (_, why) = judge(t5, &one, &observed(&["n1"]), None);
    assert!(why.contains("scaling not judged"), "{why}");
    // ... unless the node has one GPU: nothing to scale to, the gate holds and says so.
    let mut single = observed(&["n1"]);
    single.node_gpus.insert("n1".into(), 1);
    let (v, why) = judge(t5, &one, &single, None);
    assert!(why.contains("scaling n/a: 1 GPU per node"), "{why}");
    assert!(!why.contains("scaling not judged"), "{why}");
    assert_ne!(v, Verdict::Fail, "{why}");
    // A node of 8 GPUs whose jobs all ran on 1 is still not judged.
    single.node_gpus.insert("n1".into(), 8);
    let (_, why) = judge(t5, &one, &single, None);
    assert!(why.contains("scaling not judged"), "{why}");
}

#[test]
fn a_job_run_twice_is_judged_per_run() {
    let t5 = default_plan().find("T5").unwrap();
    let step = |i: u64, loss: f64| PhaseMetric::Step {
        node: Some("n1".into()),
        step: i,
        step_time_ms: Some(100.0),
        data_wait_ms: Some(1.0),
        tokens_per_sec: Some(1000.0),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: Some(loss),
        world: Some(1),
        variant: None,
    };
    // Both runs fall on their own; merged by step number they would not.
    let mut m: Vec<PhaseMetric> = (0..20).map(|i| step(i, 9.0 - i as f64 * 0.2)).collect();
    m.extend((0..20).map(|i| step(i, 9.5 - i as f64 * 0.1)));
    let (_, why) = judge(t5, &m, &observed(&["n1"]), None);
    assert!(why.contains("n1 (1 GPU) job 1 loss 8.70 -> 5.50"), "{why}");
    assert!(why.contains("n1 (1 GPU) job 2 loss 9.35 -> 7.75"), "{why}");
    assert!(!why.contains("not falling"), "{why}");
}

#[test]
fn xid_and_unwatched_nodes() {
    use crate::model::watch::{Window, XidSeen};
    let t2 = default_plan().find("T2").unwrap();
    let mut m: Vec<PhaseMetric> = (0..2).map(|g| tflops("n1", g, 700.0)).collect();
    fp8_too(&mut m);
    let mut o = observed(&["n1"]);
    o.telemetry = None;
    let (v, why) = judge(t2, &m, &o, None);
    assert_eq!(v, Verdict::Warn);
    assert!(
        why.contains("no telemetry watched: Xid not judged"),
        "{why}"
    );
    o.telemetry = Some(Window {
        silent: vec!["n1".into()],
        ..Window::default()
    });
    let (_, why) = judge(t2, &m, &o, None);
    assert!(why.contains("no telemetry from n1"), "{why}");
    // Frames that stopped for most of the phase: not judged there either, with how long.
    o.telemetry = Some(Window {
        stale: vec![("node03".into(), 28_000, 31_000)],
        ..Window::default()
    });
    let (v, why) = judge(t2, &m, &o, None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(
        why.contains("node03 without telemetry for 28 of 31 s: Xid not judged there"),
        "{why}"
    );
    o.telemetry = Some(Window {
        xids: vec![XidSeen {
            node: "n1".into(),
            gpu: 1,
            code: 48,
            at_ms: 5,
        }],
        ..Window::default()
    });
    let (v, why) = judge(t2, &m, &o, None);
    assert_eq!(v, Verdict::Fail);
    assert!(
        why.starts_with("1 Xid during the phase, first Xid 48 on n1 GPU1"),
        "{why}"
    );
}

#[test]
fn nvlink_errors_beside_t3_fail_it_and_unwatched_nodes_warn() {
    use crate::model::watch::{FindingSeen, Window};
    let t3 = default_plan().find("T3").unwrap();
    let mut m: Vec<PhaseMetric> = (0..4)
        .map(|d| PhaseMetric::PairBw {
            node: "n1".into(),
            test: "device_to_device_memcpy_read_ce".into(),
            src: 0,
            dst: d + 1,
            gb_per_s: 742.0,
        })
        .collect();
    m.push(PhaseMetric::Check {
        node: "n1".into(),
        name: "nvbandwidth-testcase".into(),
        status: CheckStatus::Ok,
        detail: "4 cell(s) measured".into(),
    });
    let mut o = observed(&["n1"]);
    let (v, why) = judge(t3, &m, &o, None);
    assert_ne!(v, Verdict::Fail, "{why}");
    assert!(why.contains("no nvlink-errors"), "{why}");
    // A warn finding of the rule fails the gate: its severity is triage's, the gate's
    // promise is that the counters did not rise.
    o.telemetry = Some(Window {
        findings: vec![FindingSeen {
            at_ms: 5,
            node: Some("n1".into()),
            rule: "nvlink-errors".into(),
            text: "warn nvlink-errors n1 GPU1: NVLink CRC +128 in the last 10 s".into(),
            crit: false,
        }],
        ..Window::default()
    });
    let (v, why) = judge(t3, &m, &o, None);
    assert_eq!(v, Verdict::Fail);
    assert!(
        why.starts_with(
            "1 nvlink-errors finding(s) during the phase, first warn nvlink-errors n1 GPU1"
        ),
        "{why}"
    );
    o.telemetry = Some(Window {
        silent: vec!["n1".into()],
        ..Window::default()
    });
    let (v, why) = judge(t3, &m, &o, None);
    assert_eq!(v, Verdict::Warn);
    assert!(
        why.contains("no telemetry from n1: nvlink-errors not judged there"),
        "{why}"
    );
    // A file judged offline has no telemetry to read: not judged, not a warning.
    o.telemetry = None;
    o.offline = true;
    let (_, why) = judge(t3, &m, &o, None);
    assert!(
        why.contains("nvlink-errors not judged (no telemetry in a file)"),
        "{why}"
    );
}

#[test]
fn exit_status_and_failure_lines_fail_any_phase() {
    let t4 = default_plan().find("T4").unwrap();
    let mut o = observed(&["n1", "n2"]);
    o.exit.insert("n2".into(), Some(1));
    let m = vec![PhaseMetric::Problem {
        node: "n1".into(),
        text: "n1: Test NCCL failure common.cu:1204".into(),
    }];
    let (v, why) = judge(t4, &m, &o, None);
    assert_eq!(v, Verdict::Fail);
    assert!(why.starts_with("n2 exited 1; 1 failure(s)"), "{why}");
    assert!(why.contains("no nccl-tests rows"), "{why}");
}

#[test]
fn training_figures_skip_warmup_and_judge_loss() {
    let t5 = default_plan().find("T5").unwrap();
    let step = |node: &str, i: u64, loss: f64| PhaseMetric::Step {
        node: Some(node.into()),
        step: i,
        step_time_ms: Some(if i < 2 { 5000.0 } else { 100.0 }),
        data_wait_ms: Some(if i < 2 { 4000.0 } else { 2.0 }),
        tokens_per_sec: Some(if i < 2 { 10.0 } else { 1000.0 }),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: Some(loss),
        world: None,
        variant: None,
    };
    let m: Vec<PhaseMetric> = (0..20)
        .map(|i| step("n1", i, 5.0 - i as f64 * 0.1))
        .collect();
    let f = figures(&m);
    assert_eq!(f["tokens_per_sec"][0].value, 1000.0);
    assert_eq!(f["data_wait_pct"][0].value, 2.0);
    let (v, why) = judge(t5, &m, &observed(&["n1"]), None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(why.contains("n1 loss 4.85 -> 3.25"), "{why}");
    // A few logged steps say nothing of a trend: too few, said so, not a FAIL.
    let (v, why) = judge(t5, &m[..6], &observed(&["n1"]), None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(why.contains("6 logged step(s) are too few"), "{why}");
    // A loss that collapsed to exactly 0 is no training.
    let zero: Vec<PhaseMetric> = (0..20)
        .map(|i| step("n1", i, if i < 3 { 5.0 } else { 0.0 }))
        .collect();
    let (v, why) = judge(t5, &zero, &observed(&["n1"]), None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(
        why.contains("loss 0 on the last 17 of 20 logged steps"),
        "{why}"
    );
    let flat: Vec<PhaseMetric> = (0..20).map(|i| step("n1", i, f64::NAN)).collect();
    let (v, why) = judge(t5, &flat, &observed(&["n1"]), None);
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("loss NaN at step 0"), "{why}");
}

/// Every metric a 1-GPU node's saved log gives, read line by line as the runner reads it.
/// `skip`: lines that are not the tool's.
fn parse_log(
    kind: crate::parsers::ParserKind,
    rel: &str,
    skip: fn(&str) -> bool,
) -> Vec<PhaseMetric> {
    use crate::parsers::{OutputParser, ParseContext};
    let mut p = OutputParser::new(
        kind,
        ParseContext {
            node: "h200".into(),
            expected_gpus: 1,
        },
    );
    let mut m = Vec::new();
    for line in crate::parsers::fixtures::tool_output(rel).lines() {
        if !skip(line) {
            m.extend(p.push(line).unwrap());
        }
    }
    m.extend(p.finish());
    m
}

/// The H200 run's logs, parsed again, give the figures its summary recorded.
#[test]
fn the_h200_run_record_reparses_to_its_own_figures() {
    use crate::parsers::ParserKind;
    let summary: serde_json::Value = serde_json::from_str(&crate::parsers::fixtures::tool_output(
        "h200-run/run1/summary.json",
    ))
    .unwrap();
    for (id, kind) in [
        ("T1", ParserKind::Sanity),
        ("T2", ParserKind::Workload),
        ("T5", ParserKind::Workload),
        ("T8", ParserKind::Workload),
    ] {
        // These logs were recorded before the runner's notes left the node logs; its launch
        // line is the only one that is not the tool's.
        let m = parse_log(kind, &format!("h200-run/run1/logs/{id}/h200.log"), |line| {
            line.starts_with("burnin: launched")
        });
        let phase = summary["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .unwrap();
        let recorded: Figures = serde_json::from_value(phase["figures"].clone()).unwrap();
        assert_eq!(figures(&m), recorded, "{id}");
        if id == "T1" {
            let ok = m
                .iter()
                .filter(|x| {
                    matches!(
                        x,
                        PhaseMetric::Check {
                            status: CheckStatus::Ok,
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(ok, 3);
        }
    }
    let t2 = &summary["phases"][1]["figures"];
    assert_eq!(t2["tflops_bf16"][0]["value"], 664.9);
    assert_eq!(t2["tflops_fp8"][0]["value"], 1221.0);
}

#[test]
fn a_together_phase_is_judged_by_how_much_worse_each_figure_got() {
    let c1 = default_plan().find("C1").expect("C1");
    let fig = |name: &str, rows: &[(&str, f64)]| -> Figures {
        let mut f = Figures::new();
        for (subject, value) in rows {
            put(
                &mut f,
                name.into(),
                (*subject).into(),
                "",
                *value,
                Keep::Last,
            );
        }
        f
    };
    // T7's busbw alone and together; S2's p99 TTFB alone and together.
    let mut changes = compare(
        "T7",
        &fig("busbw_all_reduce", &[("job", 400.0)]),
        &fig("busbw_all_reduce", &[("job", 376.0)]),
        &["busbw_all_reduce".into()],
    );
    changes.extend(compare(
        "S2",
        &fig("s3_ttfb_p99_ms_c32", &[("gpu01", 10.0), ("gpu02", 12.0)]),
        &fig(
            "s3_ttfb_p99_ms_c32",
            &[("gpu01", 14.0), ("gpu02", 19.0), ("gpu03", 1.0)],
        ),
        &[],
    ));
    // gpu03 has nothing alone: not compared.
    assert_eq!(changes.len(), 3);
    assert!(
        (changes[0].worse_pct() - 6.0).abs() < 1e-9,
        "busbw 6 % lower"
    );
    assert!(
        (changes[2].worse_pct() - 100.0 * 7.0 / 12.0).abs() < 1e-9,
        "p99 58 % higher"
    );
    assert_eq!(changes[0].describe(), "400 -> 376 (-6.0 %)");
    let observed = |changes: Vec<FigureChange>| Observed {
        members: vec![
            ("T7".into(), Verdict::Pass, "ok".into()),
            ("S2".into(), Verdict::Pass, "ok".into()),
        ],
        changes,
        telemetry: Some(Default::default()),
        ..Observed::default()
    };
    let (v, why) = judge(c1, &[], &observed(changes.clone()), None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(
        why.contains("s3_ttfb_p99_ms_c32 more than 50 % worse together on 1 subject(s), worst S2 gpu02 12.0 -> 19.0 (+58.3 %)"),
        "{why}"
    );
    assert!(
        why.contains("busbw_all_reduce together: worst T7 job 400 -> 376 (-6.0 %)"),
        "{why}"
    );
    // Within the contract: PASS, and the reason says the changes, not the raw figures.
    changes[2].together = 17.0;
    let (v, why) = judge(c1, &[], &observed(changes.clone()), None);
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(!why.contains("median"), "{why}");
    // A figure nobody gave both ways is not judged: WARN, saying which.
    let (v, why) = judge(c1, &[], &observed(changes[..1].to_vec()), None);
    assert_eq!(v, Verdict::Warn, "{why}");
    assert!(why.contains("s3_ttfb_p99_ms_c32 not compared"), "{why}");
    // A member that failed beside the other fails the group, whatever the figures.
    let mut o = observed(changes.clone());
    o.members[0] = ("T7".into(), Verdict::Fail, "node01 exited 1".into());
    let (v, why) = judge(c1, &[], &o, None);
    assert_eq!(v, Verdict::Fail, "{why}");
    assert!(why.starts_with("T7 FAIL: node01 exited 1"), "{why}");
    // From zero: errors appearing only together are infinitely worse.
    let errors = FigureChange {
        member: "S2".into(),
        figure: "s3_errors".into(),
        subject: "gpu01".into(),
        alone: 0.0,
        together: 3.0,
    };
    assert!(errors.worse_pct().is_infinite() && errors.change_pct().is_none());
    assert_eq!(errors.describe(), "0.00 -> 3.00 (from 0)");
}

#[test]
fn each_gate_says_whether_it_was_met_missed_or_not_judged() {
    use crate::model::phase::GateStatus;
    let t2 = default_plan().find("T2").unwrap();
    let outcome = |m: &[PhaseMetric], nodes: &[&str], base: Option<&Baseline>| {
        judge_gates(t2, m, &observed(nodes), base)
            .gates
            .into_iter()
            .map(|g| (g.gate, g.status))
            .collect::<BTreeMap<String, GateStatus>>()
    };
    // One node of eight even GPUs, no baseline: the floor holds, the peers hold (eight GPUs
    // are peers), the baseline is not judged, and says so.
    let mut m: Vec<PhaseMetric> = (0..8).map(|g| tflops("n1", g, 700.0)).collect();
    fp8_too(&mut m);
    let gates = outcome(&m, &["n1"], None);
    assert_eq!(
        gates.get("tflops_bf16 >= 90 % of baseline"),
        Some(&GateStatus::NotJudged),
        "{gates:?}"
    );
    assert_eq!(gates.get("no Xid during the phase"), Some(&GateStatus::Met));
    assert_eq!(
        gates.get("tflops_bf16 >= 90 % of peer median"),
        Some(&GateStatus::Met)
    );
    // A straggler misses the peers gate, and only that one.
    m.push(tflops("n2", 0, 560.0));
    let gates = outcome(&m, &["n1", "n2"], None);
    assert_eq!(
        gates.get("tflops_bf16 >= 90 % of peer median"),
        Some(&GateStatus::Missed),
        "{gates:?}"
    );
    assert_eq!(gates.get("no Xid during the phase"), Some(&GateStatus::Met));
    // The verdict and reason stay what `judge` says.
    let j = judge_gates(t2, &m, &observed(&["n1", "n2"]), None);
    assert_eq!(
        (j.verdict, j.reason),
        judge(t2, &m, &observed(&["n1", "n2"]), None)
    );
    // Every gate of the entry has its outcome, in the plan's order.
    let j = judge_gates(t2, &m, &observed(&["n1", "n2"]), None);
    let described: Vec<String> = t2.gates.iter().map(Gate::describe).collect();
    let judged: Vec<String> = j.gates.iter().map(|g| g.gate.clone()).collect();
    assert_eq!(described, judged);
}

/// T8's gates read no checks, but its verdict says what its `gds-loader` check said: why there
/// is no GDS column (as the H100 run in tests/fixtures/h100-gds printed it), and a warning
/// where the column's loader failed or was not GPU-direct. Never a failure: S4 gates the path.
#[test]
fn checks_beside_the_gates_are_said_and_only_warn() {
    use crate::parsers::workload::{GdsReaderSaid, gds_reader_check};
    let step = |node: &str, i: u64| PhaseMetric::Step {
        node: Some(node.into()),
        step: i,
        step_time_ms: Some(100.0),
        data_wait_ms: Some(1.0),
        tokens_per_sec: Some(1000.0),
        tokens_per_sec_per_gpu: None,
        tflops_per_gpu: None,
        loss: Some(10.0),
        world: Some(8),
        variant: None,
    };
    let t8 = default_plan().find("T8").unwrap();
    let mut m: Vec<PhaseMetric> = (0..10)
        .flat_map(|i| [step("n1", i), step("n2", i)])
        .collect();
    let none = GdsReaderSaid {
        why: Some("torch.cuda.gds could not read /data: cuFileHandleRegister failed: file descriptor is not registered".into()),
        ..Default::default()
    };
    m.push(gds_reader_check("n1", &none));
    m.push(gds_reader_check("n2", &none));
    let (clean, _) = judge(t8, &m[..20], &observed(&["n1", "n2"]), None);
    let (verdict, why) = judge(t8, &m, &observed(&["n1", "n2"]), None);
    assert_eq!(verdict, clean, "{why}");
    assert!(
        why.contains(
            "2 nodes (first n1) gds-loader: no GDS column: torch.cuda.gds could not read /data"
        ),
        "{why}"
    );
    // A loader that failed mid-run on one node: a warning naming it, the other node's line kept.
    m.pop();
    m.push(gds_reader_check(
        "n2",
        &GdsReaderSaid {
            reader: Some("kvikio".into()),
            failed: Some("at step 12: kvikio read 0 of 16384 bytes".into()),
            ..Default::default()
        },
    ));
    let (verdict, why) = judge(t8, &m, &observed(&["n1", "n2"]), None);
    assert_eq!(verdict, Verdict::Warn, "{why}");
    assert!(
        why.contains("n2 gds-loader: the GDS column's loader (kvikio) failed at step 12"),
        "{why}"
    );
    assert!(why.contains("n1 gds-loader: no GDS column"), "{why}");
    // A phase with a checks gate judges its checks there, not twice.
    let t0 = default_plan().find("T0").unwrap();
    let (_, why) = judge(t0, &m[20..], &observed(&["n1", "n2"]), None);
    assert_eq!(why.matches("gds-loader").count(), 1, "{why}");
}

/// A real T8 run on one GPU (`DIR`: its `summary.json` and `T8-h200.log.gz`): the log parsed
/// again, checked to give the figures the run recorded (to 1e-9 relative: the compat-read run's
/// data_wait_pct_gds came back one bit off), with the recorded figures, its verdict and reason
/// as judged now and as recorded.
fn rejudge_t8(dir: &str) -> (Figures, Verdict, String, String) {
    let summary: serde_json::Value = serde_json::from_str(&crate::parsers::fixtures::tool_output(
        &format!("{dir}/summary.json"),
    ))
    .unwrap();
    let m = parse_log(
        crate::parsers::ParserKind::Workload,
        &format!("{dir}/T8-h200.log.gz"),
        |_| false,
    );
    let phase = &summary["phases"][0];
    let recorded: Figures = serde_json::from_value(phase["figures"].clone()).unwrap();
    let again = figures(&m);
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        recorded.keys().collect::<Vec<_>>()
    );
    for (name, samples) in &recorded {
        assert_eq!(again[name].len(), samples.len(), "{name}");
        for (a, b) in again[name].iter().zip(samples) {
            assert_eq!(a.subject, b.subject, "{name}");
            assert!((a.value - b.value).abs() <= 1e-9 * b.value.abs(), "{name}");
        }
    }
    let (verdict, why) = judge(
        default_plan().find("T8").unwrap(),
        &m,
        &observed(&["h200"]),
        None,
    );
    let reason = phase["reason"].as_str().unwrap_or_default().to_string();
    (recorded, verdict, why, reason)
}

/// T8 on a real H100 with the GDS column asked for (tests/fixtures/h100-gds: PyTorch with
/// cuFile, no nvidia_fs, no kvikio, and a VM where cuFile cannot open a file): the whole log
/// parsed again gives the recorded figures, and the verdict says why there was no GDS column
/// in the words cuFile gave, without changing what the gates said.
#[test]
fn the_h100_t8_run_says_why_it_had_no_gds_column() {
    let (recorded, verdict, why, reason) = rejudge_t8("h100-gds");
    assert_eq!(recorded["tokens_per_sec"][0].value.round(), 250412.0);
    assert!((recorded["data_wait_pct"][0].value - 0.49).abs() < 0.005);
    // Two loader runs (unpinned, pinned); the GDS run read nothing, so no `_gds` figures.
    assert!(
        !recorded.keys().any(|k| k.ends_with("_gds")),
        "{recorded:?}"
    );
    assert_eq!(verdict, Verdict::Warn, "{why}");
    assert!(
        why.starts_with("no baseline for tokens_per_sec: not judged"),
        "{why}"
    );
    let said = "h200 gds-loader: no GDS column: torch.cuda.gds could not read \
                /tmp/burnin-t8-gds/shards: cuFileHandleRegister failed: file descriptor is not registered";
    assert!(why.ends_with(said), "{why}");
    assert!(reason.contains(said), "{reason}");
}

/// T8's GDS column reading on a real H100 in cuFile's compat mode (tests/fixtures/h100-gds/
/// compat-read: no nvidia_fs, compat allowed, the udev entry cuFile needs written by hand):
/// the whole log parsed again gives the recorded figures, the column is kept beside the
/// pinned run (never gated), and the verdict warns that the column is a CPU bounce buffer.
#[test]
fn the_h100_t8_gds_column_in_compat_mode_is_said_not_gpu_direct() {
    let (recorded, verdict, why, reason) = rejudge_t8("h100-gds/compat-read");
    assert_eq!(recorded["tokens_per_sec_gds"][0].value.round(), 251386.0);
    assert_eq!(recorded["tokens_per_sec"][0].value.round(), 251051.0);
    assert!((recorded["data_wait_pct_gds"][0].value - 0.20).abs() < 0.005);
    assert_eq!(verdict, Verdict::Warn, "{why}");
    let said = "h200 gds-loader: the GDS column's loader read through cuFile (torch.cuda.gds) \
                without nvidia_fs: a CPU bounce buffer (compat mode)";
    assert!(why.contains(said), "{why}");
    assert!(
        why.contains("h200 (1 GPU) gds loss finite over 889 steps"),
        "{why}"
    );
    assert!(reason.contains(said), "{reason}");
}
