use super::*;
use crate::model::spec::{HardwareSpec, NodeParts, Part};
use crate::plan::Plan;

fn parts(gpu: u16, gpus: u32, nic: Option<(u16, u32)>) -> NodeParts {
    NodeParts {
        gpus: vec![Part {
            pci_id: Some(gpu),
            name: "a GPU".into(),
            count: gpus,
        }],
        nics: nic
            .map(|(id, n)| {
                vec![Part {
                    pci_id: Some(id),
                    name: "InfiniBand".into(),
                    count: n,
                }]
            })
            .unwrap_or_default(),
        from: "T0".into(),
    }
}

fn busbw(node: &str, ranks: u32, bus: f64) -> PhaseMetric {
    let f = 2.0 * f64::from(ranks - 1) / f64::from(ranks);
    PhaseMetric::BusBw {
        node: Some(node.into()),
        collective: "all_reduce".into(),
        size_bytes: 1 << 30,
        busbw_gb_per_s: bus,
        algbw_gb_per_s: (bus / f * 100.0).round() / 100.0,
        in_place_busbw_gb_per_s: None,
        wrong: Some(0),
        deviation: false,
        ranks,
    }
}

/// Observed of a phase over `nodes`, each made of `p`, resolved with `spec`.
fn observed(nodes: &[&str], gpus: u32, p: &NodeParts, spec: &HardwareSpec) -> Observed {
    Observed {
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        exit: nodes.iter().map(|n| (n.to_string(), Some(0))).collect(),
        node_gpus: nodes.iter().map(|n| (n.to_string(), gpus)).collect(),
        hardware: nodes
            .iter()
            .map(|n| (n.to_string(), spec.resolve(p)))
            .collect(),
        telemetry: Some(crate::model::watch::Window::default()),
        ..Observed::default()
    }
}

fn phase(gates: &str) -> Plan {
    Plan::parse(
        "p.toml",
        &format!("[[phase]]\nid = \"X\"\ntitle = \"x\"\nscope = \"mpirun\"\nparser = \"nccl-tests\"\ncommand = \"x\"\ngates = [{gates}]\n"),
    )
    .expect("plan")
}

const PER_NIC: &str = r#"{ kind = "spec", figure = "busbw_all_reduce", per = "nic", floor = "line_rate_gbits", pct = 60 }"#;

fn spec_gate(j: &Judgement) -> &GateOutcome {
    j.gates
        .iter()
        .find(|g| g.gate.contains("the spec's"))
        .expect("a spec gate")
}

/// A job of one rank on each of two 8-GPU nodes uses one port of each (the real 2-node H200
/// job over one NIC a node read 31.9 GB/s: 255 Gbit/s, 64 % of NDR400); the same busbw over all
/// 16 GPUs is eight ports' worth, an eighth each.
#[test]
fn a_job_of_one_gpu_a_node_is_judged_by_the_one_port_it_used() {
    let plan = phase(PER_NIC);
    let x = &plan.phases[0];
    let p = parts(0x2335, 8, Some((0x1021, 8)));
    let o = observed(&["a", "b"], 8, &p, &plan.hardware);
    let j = judge_gates(x, &[busbw("a", 2, 31.9)], &o, None);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::Met, "{g:?}");
    assert!(
        g.words.contains(
            "31.9 GB/s over 1 RDMA ports a node (T0's) = 255 Gbit/s a port, 64 % of ConnectX-7's"
        ),
        "{}",
        g.words
    );
    let j = judge_gates(x, &[busbw("a", 16, 31.9)], &o, None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    assert!(
        j.reason.contains(
            "over 8 RDMA ports a node (T0's) = 31.9 Gbit/s a port, 8 % of ConnectX-7's line_rate_gbits 400"
        ),
        "{}",
        j.reason
    );
}

/// A GPU the table does not know warns with its PCI ID and says the plan's floors judge it;
/// a known model the table has no such figure for is not judged, and leaves the verdict be;
/// a node nothing named is not judged, never met.
#[test]
fn unknown_models_warn_with_their_id_and_missing_figures_are_not_judged() {
    let plan = phase(
        r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "nccl_all_reduce_in_node_gbs" }"#,
    );
    let x = &plan.phases[0];
    let m = [busbw("a", 8, 300.0)];
    let unknown = parts(0x9999, 8, None);
    let j = judge_gates(x, &m, &observed(&["a"], 8, &unknown, &plan.hardware), None);
    assert_eq!(j.verdict, Verdict::Warn, "{}", j.reason);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(
        g.words
            .contains("a: PCI 0x9999 \"a GPU\" is no model of the spec table"),
        "{}",
        g.words
    );
    assert!(g.words.contains("the plan's own floors do"), "{}", g.words);

    let b300 = parts(0x3182, 8, None);
    let j = judge_gates(x, &m, &observed(&["a"], 8, &b300, &plan.hardware), None);
    assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(
        g.words
            .contains("the spec has no nccl_all_reduce_in_node_gbs for B300"),
        "{}",
        g.words
    );

    let mut none = observed(&["a"], 8, &b300, &plan.hardware);
    none.hardware.clear();
    let g = spec_gate(&judge_gates(x, &m, &none, None)).clone();
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(g.words.contains("a's model not known"), "{}", g.words);

    let h200 = parts(0x2335, 8, None);
    let j = judge_gates(x, &m, &observed(&["a"], 8, &h200, &plan.hardware), None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    assert!(
        j.reason
            .contains("a 300 GB/s, 70 % of H200's nccl_all_reduce_in_node_gbs 431 GB/s (aznhc"),
        "{}",
        j.reason
    );
}

/// A site's plan lays its own entries over the table: a figure of a model it has, or a model
/// it lacks (found by the IDs the entry gives); each figure still needs its source.
#[test]
fn a_site_overrides_an_entry_in_its_plan_and_every_figure_keeps_a_source() {
    let site = |entry: &str| {
        Plan::parse(
            "p.toml",
            &format!(
                "{entry}\n[[phase]]\nid = \"X\"\ntitle = \"x\"\nscope = \"mpirun\"\nparser = \"nccl-tests\"\ncommand = \"x\"\ngates = [{PER_NIC}]\n"
            ),
        )
    };
    let plan = site("[[spec.nic]]\nmodel = \"ConnectX-7\"\nline_rate_gbits = { value = 200, source = \"site contract: NDR200\" }\n").expect("plan");
    let cx7 = plan.hardware.nic_by_pci(0x1021).expect("kept its IDs");
    assert_eq!(cx7.figure("line_rate_gbits").map(|f| f.value), Some(200.0));
    assert!(
        cx7.figure("one_way_gbits").is_some(),
        "the other figures stay"
    );
    let x = &plan.phases[0];
    let p = parts(0x2335, 8, Some((0x1021, 8)));
    let j = judge_gates(
        x,
        &[busbw("a", 16, 185.0)],
        &observed(&["a", "b"], 8, &p, &plan.hardware),
        None,
    );
    assert!(
        spec_gate(&j)
            .words
            .contains("92 % of ConnectX-7's line_rate_gbits 200 Gbit/s (site contract: NDR200)"),
        "{:?}",
        spec_gate(&j)
    );

    let efa = site("[[spec.nic]]\nmodel = \"EFA\"\npci_device_ids = [\"0xEFA1\"]\nids_source = \"the site\"\nline_rate_gbits = { value = 100, source = \"site\" }\n").expect("plan");
    assert_eq!(
        efa.hardware.nic_by_pci(0xEFA1).map(|n| n.model.as_str()),
        Some("EFA")
    );

    for (entry, says) in [
        (
            "[[spec.nic]]\nmodel = \"ConnectX-7\"\nline_rate_gbits = { value = 200, source = \"\" }\n",
            "has no source",
        ),
        (
            "[[spec.gpu]]\nmodel = \"B300\"\nnccl_floor = { value = 1, source = \"x\" }\n",
            "no figure burnin knows",
        ),
        (
            "[[spec.gpu]]\nmodel = \"A100\"\nmemory_gb = { value = 80, source = \"x\" }\n",
            "no PCI device ID",
        ),
        (
            "[[spec.gpu]]\nmodel = \"B300\"\nmemory_gb = { value = nan, source = \"x\" }\n",
            "not a positive number",
        ),
        (
            "[[spec.gpu]]\nmodel = \"Mine\"\npci_device_ids = [\"0x2335\"]\nids_source = \"x\"\n",
            "in two entries",
        ),
        (
            "[[spec.gpu]]\nmodel = \"H200\"\nhang_power_below_w = { value = 200, source = \"x\" }\n",
            "read by triage",
        ),
    ] {
        let e = site(entry).expect_err(entry);
        assert!(e.message.contains(says), "{entry}: {e}");
    }
    for (gate, says) in [
        (
            r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "line_rate" }"#,
            "no figure of the spec table",
        ),
        (
            r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "memory_gb" }"#,
            "do not compare",
        ),
        (
            r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "line_rate_gbits", per = "gpu" }"#,
            "only \"nic\"",
        ),
        (
            r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "line_rate_gbits", pct = 0 }"#,
            "above 0",
        ),
    ] {
        let e = Plan::parse("p.toml", &format!("[[phase]]\nid = \"X\"\ntitle = \"x\"\nscope = \"mpirun\"\nparser = \"nccl-tests\"\ncommand = \"x\"\ngates = [{gate}]\n")).expect_err(gate);
        assert!(e.message.contains(says), "{gate}: {e}");
    }
}

/// The rank count is read back from the bus factor nccl-tests applied (a pasted log's device
/// list may be cut); where the figures cannot say it, none is claimed.
#[test]
fn ranks_come_from_the_bus_factor_where_it_names_them() {
    assert_eq!(ranks_from_factor("all_reduce", 259.78, 487.09), Some(16));
    assert_eq!(ranks_from_factor("all_reduce", 186.39, 369.86), Some(128));
    assert_eq!(ranks_from_factor("all_reduce", 100.0, 100.0), None);
    assert_eq!(ranks_from_factor("broadcast", 100.0, 100.0), None);
    assert_eq!(ranks_from_factor("all_reduce", f64::NAN, 1.5), None);
    assert_eq!(
        ranks_from_factor("all_reduce", 100.0, 175.3),
        None,
        "no n gives 1.753 to 0.01"
    );
}

/// A node known only from its telemetry's GPU names was never asked about its RDMA ports: a
/// NIC floor is not judged there (not warned of as a model the table lacks).
#[test]
fn unread_ports_are_not_judged_not_warned() {
    let plan = phase(PER_NIC);
    let x = &plan.phases[0];
    let named = NodeParts {
        gpus: vec![Part {
            pci_id: None,
            name: "NVIDIA H200".into(),
            count: 8,
        }],
        nics: Vec::new(),
        from: "telemetry".into(),
    };
    let j = judge_gates(
        x,
        &[busbw("a", 16, 370.0)],
        &observed(&["a", "b"], 8, &named, &plan.hardware),
        None,
    );
    assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(g.words.contains("a's RDMA ports not read"), "{}", g.words);
}

/// Seven nodes met and one no T0 named: the gate is not met on the others' evidence; the
/// node without a floor warns.
#[test]
fn a_node_without_parts_among_judged_ones_warns() {
    let plan = phase(
        r#"{ kind = "spec", figure = "busbw_all_reduce", floor = "nccl_all_reduce_in_node_gbs" }"#,
    );
    let x = &plan.phases[0];
    let h200 = parts(0x2335, 8, None);
    let mut o = observed(&["a", "b"], 8, &h200, &plan.hardware);
    o.hardware.remove("b");
    let j = judge_gates(x, &[busbw("a", 8, 480.0), busbw("b", 8, 480.0)], &o, None);
    assert_eq!(j.verdict, Verdict::Warn, "{}", j.reason);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::Warned, "{g:?}");
    assert!(g.words.contains("b's model not known"), "{}", g.words);
}

/// More than twice the line rate a port is no reading of RDMA ports (a ring carries at most
/// line rate, NCCL's tree under twice it): not judged, never met.
#[test]
fn a_per_port_reading_no_port_can_give_is_not_judged() {
    let plan = phase(PER_NIC);
    let x = &plan.phases[0];
    let p = parts(0x2335, 8, Some((0x1021, 8)));
    let j = judge_gates(
        x,
        &[busbw("a", 16, 900.0)],
        &observed(&["a", "b"], 8, &p, &plan.hardware),
        None,
    );
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(
        g.words
            .contains("900 Gbit/s a port, more than twice the 400 Gbit/s line rate"),
        "{}",
        g.words
    );
    // 117 % of line (a 2-node tree run) is still a reading.
    let j = judge_gates(
        x,
        &[busbw("a", 16, 469.21)],
        &observed(&["a", "b"], 8, &p, &plan.hardware),
        None,
    );
    assert_eq!(spec_gate(&j).status, GateStatus::Met);
}

/// T7's flat floor yields to the per-port floor where the spec knows the NIC model: the
/// issue's real 2-node H200 job over one 400G NIC a node (31.9 GB/s) is healthy, not under
/// 100; a fabric at half speed over 8 × NDR400 (190 GB/s) is broken, not over it. Where the
/// NIC model is unknown or its ports were never read, the flat floor judges alone.
#[test]
fn the_flat_floor_judges_only_what_the_spec_cannot() {
    let (plan, t7) = shipped_t7();
    let flat = |j: &Judgement| -> GateOutcome {
        j.gates
            .iter()
            .find(|g| g.gate.starts_with("busbw_all_reduce >= 100"))
            .expect("the flat floor")
            .clone()
    };
    let known = parts(0x2335, 8, Some((0x1021, 8)));
    let o = observed(&["a", "b"], 8, &known, &plan.hardware);
    let mut one_nic = [busbw("a", 2, 31.9)];
    let j = judge_gates(&t7, &one_nic, &o, None);
    // Warned only for what a bare judgement lacks: NCCL's INFO lines, a baseline.
    assert_eq!(j.verdict, Verdict::Warn, "{}", j.reason);
    let g = flat(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(
        g.words
            .contains("not judged: the spec's floor for the model judges every subject"),
        "{}",
        g.words
    );
    assert_eq!(spec_gate(&j).status, GateStatus::Met);

    let half = [busbw("a", 16, 190.0)];
    let j = judge_gates(&t7, &half, &o, None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    assert_eq!(spec_gate(&j).status, GateStatus::Missed);
    assert_eq!(flat(&j).status, GateStatus::NotJudged);

    // A NIC the table does not know: the spec warns with its ID, the flat floor judges.
    let unknown_nic = parts(0x2335, 8, Some((0x7777, 8)));
    let o = observed(&["a", "b"], 8, &unknown_nic, &plan.hardware);
    let j = judge_gates(&t7, &one_nic, &o, None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    let g = flat(&j);
    assert_eq!(g.status, GateStatus::Missed, "{g:?}");
    assert!(g.words.contains("(limit 100)"), "{}", g.words);
    assert!(
        spec_gate(&j).words.contains("PCI 0x7777"),
        "{}",
        spec_gate(&j).words
    );

    // Ports never read (a node known only by its telemetry): the flat floor judges.
    let mut unread = parts(0x2335, 8, None);
    unread.from = "telemetry".into();
    let o = observed(&["a", "b"], 8, &unread, &plan.hardware);
    one_nic[0] = busbw("a", 16, 31.9);
    let j = judge_gates(&t7, &one_nic, &o, None);
    assert_eq!(flat(&j).status, GateStatus::Missed, "{}", j.reason);
    assert_eq!(spec_gate(&j).status, GateStatus::NotJudged);

    // More than twice the line rate a port is no reading of the ports: the flat floor judges
    // (an NVLink domain across nodes passes it).
    let o = observed(&["a", "b"], 8, &known, &plan.hardware);
    let j = judge_gates(&t7, &[busbw("a", 2, 400.0)], &o, None);
    assert_eq!(flat(&j).status, GateStatus::Met, "{}", j.reason);
    assert_eq!(spec_gate(&j).status, GateStatus::NotJudged);
}

/// Per node, a subject the spec judges is its alone and the rest are the flat floor's: two
/// nodes of a known model and one of a model the table lacks.
#[test]
fn the_flat_floor_judges_the_subjects_the_spec_left() {
    let plan = phase(
        r#"{ kind = "min", figure = "busbw_all_reduce", value = 100, unless = "spec" }, { kind = "spec", figure = "busbw_all_reduce", floor = "nccl_all_reduce_in_node_gbs" }"#,
    );
    let x = &plan.phases[0];
    let h200 = parts(0x2335, 8, None);
    let mut o = observed(&["a", "b", "c"], 8, &h200, &plan.hardware);
    o.hardware
        .insert("c".into(), plan.hardware.resolve(&parts(0x9999, 8, None)));
    let m = [
        busbw("a", 8, 90.0),
        busbw("b", 8, 450.0),
        busbw("c", 8, 95.0),
    ];
    let j = judge_gates(x, &m, &o, None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    let flat = &j.gates[0];
    assert_eq!(flat.status, GateStatus::Missed, "{flat:?}");
    assert!(
        flat.words.contains(
            "busbw_all_reduce c 95.0 on 1 subject (limit 100; 2 subject(s) judged by the spec's floor instead)"
        ),
        "{}",
        flat.words
    );
    assert!(
        j.gates[0].gate.contains("where the spec does not judge it"),
        "{}",
        j.gates[0].gate
    );
}

/// `unless` takes only "spec", and only beside a spec gate on the same figure.
#[test]
fn a_floor_that_yields_needs_the_gate_it_yields_to() {
    let parse = |gates: &str| {
        Plan::parse(
            "p.toml",
            &format!(
                "[[phase]]\nid = \"X\"\ntitle = \"x\"\nscope = \"mpirun\"\nparser = \"nccl-tests\"\ncommand = \"x\"\ngates = [{gates}]\n"
            ),
        )
    };
    let e = parse(r#"{ kind = "min", figure = "busbw_all_reduce", value = 100, unless = "spec" }"#)
        .expect_err("no spec gate");
    assert!(
        e.message
            .contains("on busbw_all_reduce: needs a `spec` gate on it in the same phase"),
        "{e}"
    );
    let e = parse(&format!(
        r#"{{ kind = "min", figure = "busbw_all_reduce", value = 100, unless = "baseline" }}, {PER_NIC}"#
    ))
    .expect_err("only spec");
    assert!(e.message.contains("unknown variant `baseline`"), "{e}");
    let e = parse(
        r#"{ kind = "min", figure = "busbw_all_reduce", value = 100, unless = "spec" }, { kind = "spec", figure = "busbw_all_reduce", floor = "nccl_all_reduce_in_node_gbs", miss = "warn" }"#,
    )
    .expect_err("a floor that fails yields only to one that fails");
    assert!(e.message.contains("only warns on a miss"), "{e}");
    parse(&format!(
        r#"{{ kind = "min", figure = "busbw_all_reduce", value = 100, unless = "spec" }}, {PER_NIC}"#
    ))
    .expect("beside its spec gate");
}

/// NCCL's `NET/IB : Using` list shorter than the ports T0 found: a job on one rail of eight
/// at 45 GB/s reads 90 % of line over the one port NCCL used. That is no per-port reading
/// of the fabric: the spec warns with both counts and the flat floor judges (and fails it).
#[test]
fn fewer_ports_in_use_than_t0_found_are_not_read_per_port() {
    let (plan, t7) = shipped_t7();
    let known = parts(0x2335, 8, Some((0x1021, 8)));
    let o = observed(&["a", "b"], 8, &known, &plan.hardware);
    let listed = |n: f64| PhaseMetric::Figure {
        node: "a".into(),
        gpu: None,
        name: crate::parsers::NET_PORTS_FIGURE.into(),
        value: n,
    };
    let j = judge_gates(&t7, &[busbw("a", 16, 45.0), listed(1.0)], &o, None);
    assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
    let g = spec_gate(&j);
    assert_eq!(g.status, GateStatus::NotJudged, "{g:?}");
    assert!(
        j.reason
            .contains("NCCL used 1 of the 8 RDMA ports T0 found on a node (a port down, or left out by NCCL_IB_HCA?), so no reading per port: not judged"),
        "{}",
        g.words
    );
    assert!(
        j.reason.contains("45.0 on 1 subject (limit 100)"),
        "{}",
        j.reason
    );
    // All eight listed: read per port as before.
    let j = judge_gates(&t7, &[busbw("a", 16, 370.0), listed(8.0)], &o, None);
    assert_eq!(spec_gate(&j).status, GateStatus::Met, "{}", j.reason);
}

/// The shipped plan and its T7.
fn shipped_t7() -> (&'static Plan, PhaseSpec) {
    let plan = crate::plan::default_plan();
    let t7 = plan.phases.iter().find(|p| p.id == "T7").expect("T7");
    (plan, PhaseSpec::clone(t7))
}
