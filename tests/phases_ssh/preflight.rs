//! T0 as shipped over real SSH: each node's install judged, each node's GPU model named from
//! the spec table, and a node of another model named across the nodes.

use super::*;

/// T0 as shipped, over real SSH, against two stand-in nodes whose tools answer as an installed
/// node would (node01: R580 open module, 8 GPUs, services active) and as a node installed
/// wrong (node02: R550 proprietary, 7 of 8 GPUs, H200s among B300 nodes, an Xid since boot).
/// The stand-ins tell the nodes apart by the address the SSH session reached
/// ($SSH_CONNECTION).
#[test]
fn t0_preflight_runs_as_shipped_over_ssh_and_names_what_is_wrong_per_node() {
    let t0 = burnin::plan::default_plan().find("T0").expect("T0 shipped");
    // The command as shipped, written back as plan text with its braces doubled (the vars
    // read literally: `gds` is not "true"), but for the doctor, which the shipped plan turns on:
    // its probe is the runner's to fill in.
    let plan = format!(
        "[[phase]]\nid = \"T0\"\ntitle = \"preflight\"\nscope = \"each-node\"\nparser = \"preflight\"\ngates = [{{ kind = \"checks\" }}]\ncommand = '''\n{}\n'''\n",
        t0.command
            .replace('{', "{{")
            .replace('}', "}}")
            .replace("{{doctor}}", "true")
            .replace("{{doctor_probe}}", "{doctor_probe}")
    );
    let Some(site) = Site::new(2, 8, &plan) else {
        return;
    };
    // node02 is 127.0.0.3.
    let bad = r#"case "$SSH_CONNECTION" in *" 127.0.0.3 "*) bad=1 ;; *) bad= ;; esac"#;
    let tools: [(&str, String); 8] = [
        (
            "cat",
            format!(
                "#!/bin/sh\n{bad}\nif [ \"$1\" = /proc/driver/nvidia/version ]; then\n  if [ -n \"$bad\" ]; then echo 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024'; else echo 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:55:41 UTC 2025'; fi\n  echo 'GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)'\nelse exec /bin/cat \"$@\"; fi\n"
            ),
        ),
        (
            "nvidia-smi",
            format!(
                "#!/bin/sh\n{bad}\nn=8; [ -n \"$bad\" ] && n=7\nname='NVIDIA B300 SXM6 AC'; id=0x318210DE\n[ -n \"$bad\" ] && {{ name='NVIDIA H200'; id=0x233510DE; }}\ni=0; while [ $i -lt $n ]; do echo \"$i, $name, 00000000:1$i:00.0, Enabled, $id\"; i=$((i+1)); done\n"
            ),
        ),
        ("uname", "#!/bin/sh\necho 6.8.0-60-generic\n".to_string()),
        (
            "nv-fabricmanager",
            "#!/bin/sh\necho 'Fabric Manager version is : 580.95.05'\n".to_string(),
        ),
        (
            "systemctl",
            "#!/bin/sh\n[ \"$1\" = is-active ] && echo active\n".to_string(),
        ),
        (
            "dpkg-query",
            "#!/bin/sh\nprintf 'ii  rdma-core 50.0-2ubuntu0.2\\nii  infiniband-diags 50.0-2ubuntu0.2\\n'\n"
                .to_string(),
        ),
        ("ibstat", "#!/bin/sh\nexit 0\n".to_string()),
        (
            "dmesg",
            format!(
                "#!/bin/sh\n{bad}\necho '[    0.000000] Linux version 6.8.0-60-generic'\n[ -n \"$bad\" ] && echo '[ 8812.402391] NVRM: Xid (PCI:0000:16:00): 79, pid=0, GPU has fallen off the bus.'\nexit 0\n"
            ),
        ),
    ];
    for (name, script) in &tools {
        site.cluster.install_tool(name, script);
    }
    let (code, doc, stderr) = finish(site.spawn(&["run", "--json", "--no-telemetry"]));
    let t0 = phase(&doc, "T0");
    assert_eq!(t0["verdict"], "FAIL", "{stderr}\n{t0}");
    assert_eq!(code, Some(1));
    let run_dir = PathBuf::from(doc["run_dir"].as_str().expect("run_dir"));
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).expect("events");
    let check = |node: &str, name: &str| -> (String, String) {
        common::site::check_in(&events, node, name)
            .unwrap_or_else(|| panic!("no {name} check for {node}:\n{events}"))
    };
    for name in [
        "driver-branch",
        "gpu-count",
        "persistenced",
        "rdma-userspace",
        "xid",
    ] {
        assert_eq!(
            check("node01", name).0,
            "ok",
            "node01 {name}: {:?}",
            check("node01", name)
        );
    }
    assert!(check("node01", "driver-branch").1.contains("580.95.05"));
    // Issue 42: the node's model found in the spec table by the PCI ID its nvidia-smi printed.
    assert_eq!(
        check("node01", "gpu-model"),
        (
            "ok".to_string(),
            "8 × B300 (PCI 0x3182), as specs/hardware.toml knows it".to_string()
        )
    );
    let (status, detail) = check("node02", "driver-branch");
    assert_eq!(status, "failed", "{detail}");
    assert!(detail.contains("550"), "{detail}");
    assert_eq!(check("node02", "gpu-count").0, "failed");
    assert_eq!(check("node02", "xid").0, "failed");
    let reason = t0["reason"].as_str().expect("reason");
    assert!(reason.contains("node02"), "{reason}");
    // node02's GPUs are H200s among B300 nodes: said across the nodes.
    assert_eq!(check("node02", "gpu-model").0, "ok");
    assert!(
        reason.contains(
            "gpu-model: the nodes' GPU models differ: B300 (PCI 0x3182) on node01; H200 (PCI 0x2335) on node02"
        ),
        "{reason}"
    );
    assert!(!reason.contains("node01 driver-branch"), "{reason}");
    // The shipped plan sets doctor = "true": the doctor's probe rode along in T0, and T0's own
    // tools are there on both nodes.
    for node in ["node01", "node02"] {
        let (status, detail) = check(node, "can-run-T0");
        assert_eq!(status, "ok", "{node}: {detail}");
        assert!(detail.contains("nvidia-smi"), "{node}: {detail}");
        let (status, detail) = check(node, "doctor");
        assert_eq!(status, "ok", "{node}: {detail}");
        assert!(
            detail.starts_with("1 of 1 phase(s) set up can run here"),
            "{detail}"
        );
    }
}
