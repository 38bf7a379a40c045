//! The plan → tools mapping on the shipped plan, and the judgement over made-up answers.

use super::judge::{NodeAnswer, PhaseState, judge, request_for, version_disagreements};
use super::needs::{
    Need, PhaseNeeds, PhaseSetup, Place, Requirement, fold_constant_ifs, plan_needs,
};
use super::probe::{NodeProbe, Probed, ToolFound};
use crate::plan::{Plan, default_plan};

fn setup_of<'a>(needs: &'a [PhaseNeeds], id: &str) -> &'a PhaseSetup {
    &needs.iter().find(|p| p.id == id).expect("phase").setup
}

fn needs_of<'a>(needs: &'a [PhaseNeeds], id: &str) -> (Place, &'a [Need]) {
    match setup_of(needs, id) {
        PhaseSetup::Runs { runs_on, needs } => (*runs_on, needs),
        other => panic!("{id}: {other:?}"),
    }
}

fn program(key: &str, place: Place) -> Need {
    Need {
        requirement: Requirement::Program { key: key.into() },
        place,
    }
}

#[test]
fn the_shipped_plan_names_each_phases_tools() {
    let needs = plan_needs(default_plan());
    // T0: nvidia-smi and the kernel log; its GDS block is off (gds = "false"), so no gdscheck.
    let (_, t0) = needs_of(&needs, "T0");
    assert!(
        t0.contains(&program("nvidia-smi", Place::EveryNode)),
        "{t0:?}"
    );
    assert!(t0.iter().any(|n| n.requirement == Requirement::KernelLog));
    assert!(!t0.iter().any(|n| n.requirement
        == Requirement::Program {
            key: "gdscheck".into()
        }));
    let (_, t2) = needs_of(&needs, "T2");
    assert_eq!(
        t2,
        &[
            program("python3", Place::EveryNode),
            Need {
                requirement: Requirement::Torch {
                    prefix: String::new()
                },
                place: Place::EveryNode
            }
        ]
    );
    assert_eq!(
        needs_of(&needs, "T3").1,
        &[program("nvbandwidth", Place::EveryNode)]
    );
    let (_, t4) = needs_of(&needs, "T4");
    for t in ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf"] {
        assert!(t4.contains(&program(t, Place::EveryNode)), "{t}: {t4:?}");
    }
    // T7: mpirun where the job starts, the job's program on every node.
    let (runs_on, t7) = needs_of(&needs, "T7");
    assert_eq!(runs_on, Place::FirstNode);
    assert!(t7.contains(&program("mpirun", Place::FirstNode)), "{t7:?}");
    assert!(
        t7.contains(&program("all_reduce_perf_mpi", Place::EveryNode)),
        "{t7:?}"
    );
    assert_eq!(setup_of(&needs, "T6"), &PhaseSetup::NoCommand);
    assert_eq!(
        setup_of(&needs, "T8"),
        &PhaseSetup::NeedsVars {
            vars: vec!["data".into()]
        }
    );
    assert!(
        matches!(setup_of(&needs, "C1"), PhaseSetup::Together { members } if members == &["T7", "S2"])
    );
}

#[test]
fn plan_vars_change_the_tools_a_phase_needs() {
    let mut plan: Plan = default_plan().clone();
    plan.vars
        .insert("nccl_tests".into(), "/opt/nccl-tests/build/".into());
    plan.vars.insert("gds".into(), "true".into());
    plan.vars.insert("ib_devs".into(), "mlx5_0 mlx5_1".into());
    plan.vars.insert(
        "prefix".into(),
        "podman run --rm -v {workloads}:{workloads} img".into(),
    );
    let needs = plan_needs(&plan);
    let (_, t4) = needs_of(&needs, "T4");
    assert!(t4.contains(&program(
        "/opt/nccl-tests/build/all_reduce_perf",
        Place::EveryNode
    )));
    let (_, t0) = needs_of(&needs, "T0");
    assert!(
        t0.contains(&program("gdscheck", Place::EveryNode)),
        "{t0:?}"
    );
    let (_, s1) = needs_of(&needs, "S1");
    assert_eq!(s1, &[program("ib_write_bw", Place::EveryNode)]);
    // Behind a container prefix, the node's own python3 is not what runs.
    let (_, t2) = needs_of(&needs, "T2");
    assert_eq!(
        t2,
        &[Need {
            requirement: Requirement::Torch {
                prefix: "podman run --rm -v /tmp:/tmp img".into()
            },
            place: Place::EveryNode
        }]
    );
}

#[test]
fn only_false_constant_tests_are_folded() {
    let text = "a\nif [ \"false\" = \"true\" ]; then\ngdscheck -p\nif [ -d x ]; then y; fi\nfi\nb\nif [ -n \"\" ]; then\nc\nfi\nif [ \"$x\" = \"y\" ]; then\nd\nfi\n";
    assert_eq!(
        fold_constant_ifs(text),
        "a\nb\nif [ \"$x\" = \"y\" ]; then\nd\nfi\n"
    );
    assert_eq!(
        fold_constant_ifs("if [ \"a\" = \"a\" ]; then\nx\nfi\n"),
        "if [ \"a\" = \"a\" ]; then\nx\nfi\n"
    );
}

fn probe_with(tools: &[(&str, Option<&str>)]) -> NodeProbe {
    NodeProbe {
        tools: tools
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    ToolFound {
                        path: Some(format!("/usr/bin/{k}")),
                        missing: None,
                        version: v.map(str::to_string),
                    },
                )
            })
            .collect(),
        torch: Some(Probed {
            status: "ok".into(),
            detail: "torch 2.5".into(),
        }),
        free_kib: Some(100 << 20),
        dir: Some(Probed {
            status: "ok".into(),
            detail: "/tmp".into(),
        }),
        kernel_log: Some(Probed {
            status: "ok".into(),
            detail: "dmesg readable".into(),
        }),
        complete: true,
        ..NodeProbe::default()
    }
}

#[test]
fn each_phase_is_judged_on_the_nodes_it_needs() {
    let plan = Plan::parse(
        "t.toml",
        "[[phase]]\nid = \"A\"\ntitle = \"a\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"nvbandwidth -t x\"\n\
         [[phase]]\nid = \"B\"\ntitle = \"b\"\nscope = \"mpirun\"\nparser = \"none\"\ncommand = \"mpirun -np 2 all_reduce_perf_mpi\"\n\
         [[phase]]\nid = \"C\"\ntitle = \"c\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"\"\n",
    )
    .expect("plan");
    let needs = plan_needs(&plan);
    let request = request_for(&needs, "~/r", false, None);
    assert_eq!(
        request.programs,
        vec!["all_reduce_perf_mpi", "nvbandwidth"],
        "no mpirun off the first node"
    );
    let answers = vec![
        NodeAnswer {
            node: "n1".into(),
            burnin_key: None,
            probe: Ok(probe_with(&[
                ("nvbandwidth", Some("v0.7")),
                ("mpirun", None),
                ("all_reduce_perf_mpi", None),
            ])),
        },
        NodeAnswer {
            node: "n2".into(),
            burnin_key: None,
            // No mpirun here: only the first node launches.
            probe: Ok(probe_with(&[
                ("nvbandwidth", Some("v0.6")),
                ("all_reduce_perf_mpi", None),
            ])),
        },
        NodeAnswer {
            node: "n3".into(),
            burnin_key: None,
            probe: Err("auth failed".into()),
        },
    ];
    let judged = judge(&needs, &answers);
    let unreachable = PhaseState::Cannot {
        nodes: vec![("n3".into(), "unreachable: auth failed".into())],
    };
    assert_eq!(judged[0].state, unreachable);
    assert_eq!(judged[1].state, unreachable);
    assert!(matches!(judged[2].state, PhaseState::NotSetUp { .. }));
    let differ = version_disagreements(&answers);
    assert_eq!(differ.len(), 1);
    assert_eq!(differ[0].0, "nvbandwidth");
    // A node without the tool is named with why.
    let mut missing = answers[1].clone();
    if let Ok(p) = &mut missing.probe {
        p.tools.insert(
            "nvbandwidth".into(),
            ToolFound {
                path: None,
                missing: Some("not on PATH".into()),
                version: None,
            },
        );
    }
    let judged = judge(&needs, &[answers[0].clone(), missing]);
    assert_eq!(
        judged[0].state,
        PhaseState::Cannot {
            nodes: vec![("n2".into(), "nvbandwidth not found".into())]
        }
    );
    assert_eq!(judged[1].state, PhaseState::CanRun);
}
