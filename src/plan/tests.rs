//! Tests of the shipped plan (`plans/default.toml`): its phases in order, and its commands run
//! in a real `sh` against stand-in tools, judged by their parsers.

use super::template::render;
use super::*;
use crate::parsers::ParserKind;

#[test]
fn the_shipped_plan_parses_in_order() {
    let plan = default_plan();
    let ids: Vec<_> = plan.phases.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "T0", "T1", "T2", "T3", "T4", "L1", "L2", "T5", "T6", "T7", "T8", "S1", "S2", "S3",
            "S4", "V1", "C1", "D1", "D2"
        ]
    );
    assert!(
        plan.find("S2")
            .is_some_and(|p| p.parser == ParserKind::S3Probe
                && p.command.starts_with("{burnin} probe s3 ")
                && p.requires == ["aistor_endpoint", "aistor_bucket"])
    );
    assert_eq!(plan.find("S1").map(|p| p.scope), Some(Scope::Pairs));
    assert!(
        plan.find("S1")
            .is_some_and(|p| p.server.contains("ib_write_bw"))
    );
    assert_eq!(
        plan.find("T4").map(|p| p.title.as_str()),
        Some("single-node NCCL")
    );
    assert!(plan.find("T9").is_none());
    assert_eq!(plan.find("T7").map(|p| p.scope), Some(Scope::Mpirun));
    assert!(plan.find("T6").is_some_and(|p| p.command.is_empty()));
    assert_eq!(plan.grace, Duration::from_secs(10));
}

/// Every shipped command (and server), filled in as for a real node, is valid `sh`.
#[test]
fn the_shipped_commands_are_valid_shell() {
    let plan = default_plan();
    let mut values: BTreeMap<String, String> = plan.vars.clone();
    for v in values.values_mut() {
        *v = "x".into();
    }
    for (k, v) in [
        ("node", "gpu01"),
        ("gpus", "8"),
        ("run", "r1"),
        ("dir", "$HOME/.cache/burnin/runs/r1/T1/gpu01"),
        ("workloads", "$HOME/.cache/burnin/runs/r1/workloads"),
        ("hosts", "gpu01,gpu02"),
        ("hosts_slots", "gpu01:8,gpu02:8"),
        ("np", "16"),
        ("nnodes", "2"),
        ("nodelist", "gpu01,gpu02"),
        ("hostfile", "$HOME/h"),
        ("peer", "gpu02"),
        ("burnin", "\"$HOME\"/'.cache/burnin/bin/burnin'"),
        ("doctor_probe", "printf '%s\\n' probe"),
    ] {
        values.insert(k.into(), v.into());
    }
    for p in &plan.phases {
        for text in [&p.command, &p.server] {
            let line = render(text, &values).unwrap();
            let out = std::process::Command::new("sh")
                .args(["-n", "-c", &line])
                .output()
                .expect("sh");
            assert!(
                out.status.success(),
                "{}: {}\n{line}",
                p.id,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn t0_ships_the_command_that_ran_on_the_h200() {
    let t0 = default_plan()
        .phases
        .iter()
        .find(|p| p.id == "T0")
        .expect("T0 in the shipped plan");
    assert_eq!(t0.parser, ParserKind::Preflight);
    let mut values = default_plan().vars.clone();
    values.insert("doctor_probe".into(), "true".into());
    let rendered = render(&t0.command, &values).expect("render");
    // The doctor's line came later too (with doctor = "true" it probes the phases' tools).
    let doctor = "if [ \"true\" = \"true\" ]; then echo \"== doctor\"; true; fi\n";
    assert!(rendered.contains(doctor), "{rendered}");
    let rendered = rendered.replace(doctor, "");
    // T0 asks for each GPU's PCI device ID since issue 42; the captures were made before, with
    // four columns (the gpu-model check reads those by name, and says so).
    let rendered = rendered.replace(
        "persistence_mode,pci.device_id --format",
        "persistence_mode --format",
    );
    // And its NICs (device, port, PCI ID, link layer, rate), also since issue 42.
    let nics = rendered
        .lines()
        .find(|l| l.starts_with("echo \"== nics\""))
        .map(|l| format!("{l}\n"))
        .expect("T0 lists the NICs");
    let rendered = rendered.replace(&nics, "");
    assert_eq!(
        rendered.trim(),
        crate::parsers::fixtures::tool_output("preflight/t0-command.sh").trim(),
        "the fixtures in tests/fixtures/preflight/ come from this command (its GPUDirect \
             Storage block came later: with gds = \"false\", as shipped, it prints nothing)"
    );
    // And it is plain POSIX sh.
    let out = std::process::Command::new("sh")
        .args(["-n", "-c", &rendered])
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a rendered command in a real `sh` with the stand-in tools of `bin` first on the
/// PATH and `envs` set.
fn sh_with_tools(
    cmd: &str,
    bin: &std::path::Path,
    envs: &[(&str, std::ffi::OsString)],
) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("sh")
        .args(["-c", cmd])
        .env("PATH", path)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("sh")
}

/// With `gds = "true"`, T0's GPUDirect Storage block runs in a real `sh` against a
/// stand-in `gdscheck` (a real 1.14 printout from the corpus, which names nvidia_fs 2.24:
/// that beats this machine's "not loaded"), and the preflight parser judges what it
/// printed; without it, the block prints nothing.
#[test]
fn t0_checks_gds_only_where_the_plan_asks() {
    let dir = std::env::temp_dir().join(format!("burnin-t0-gds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let corpus = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/gdscheck/gds-1.14.0.30-asus-esc8000a-4x-rtx6000ada-nvme-supported-compat-false.txt"
    );
    let path = dir.join("gdscheck");
    let body = format!("#!/bin/sh\n[ \"$1\" = -p ] && cat '{corpus}'\n");
    std::fs::write(&path, body).expect("tool");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let run = |vars: &str| {
        let text = DEFAULT_PLAN_TEXT
            .replace("gds = \"false\"", vars)
            .replace("gds_backend = \"\"", "gds_backend = \"NVMe\"");
        let plan = Plan::parse("plan.toml", &text).expect("plan");
        let t0 = plan.find("T0").expect("T0");
        let mut values = plan.vars.clone();
        values.insert("doctor_probe".into(), "true".into());
        let cmd = render(&t0.command, &values).expect("render");
        let out = sh_with_tools(&cmd, &dir, &[]);
        let mut p = crate::parsers::preflight::PreflightParser::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            p.push(line);
        }
        p.finish("n1", 8)
            .into_iter()
            .filter_map(|m| match m {
                crate::model::phase::PhaseMetric::Check { name, status, .. }
                    if name.starts_with("gds-") =>
                {
                    Some((name, status))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let on = run("gds = \"true\"");
    let _ = std::fs::remove_dir_all(&dir);
    use crate::model::phase::CheckStatus;
    let names: Vec<&str> = on.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "gds-platform",
            "gds-nvidia-fs",
            "gds-backend",
            "gds-compat-mode",
            "gds-iommu",
            "gds-gpus"
        ]
    );
    assert!(on.iter().all(|(_, s)| *s == CheckStatus::Ok), "{on:?}");
    assert!(run("gds = \"false\"").is_empty(), "off: no GDS check");
}

/// S4 as shipped runs in a real `sh` against a stand-in `gdsio` (GPU-direct 6.8 GiB/s,
/// CPU→GPU 3.1, CPU only 3.2) and `nvidia-smi`: each GPU's runs come back as that GPU's
/// figures, GPU-direct is set against CPU→GPU, and the NUMA node this machine cannot tell
/// for a GPU it does not have is a WARN, not a pass.
#[test]
fn s4_runs_gdsio_per_gpu_and_judges_each() {
    use crate::model::phase::{CheckStatus, PhaseMetric, Verdict};
    let dir = std::env::temp_dir().join(format!("burnin-s4-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("dir");
    let gdsio = r#"#!/bin/sh
x=; io=; d=; while [ $# -gt 0 ]; do case "$1" in -x) x=$2; shift;; -I) io=$2; shift;; -d) d=$2; shift;; esac; shift; done
if [ -n "$FAIL_GPU" ] && [ "$d" = "$FAIL_GPU" ]; then echo "cuFileDriverOpen error"; exit 3; fi
case $x in 0) t=GPUD; r=6.816723;; 2) t=CPU_GPU; r=3.108443;; *) t=CPUONLY; r=3.244410;; esac
[ "$io" = 0 ] && k=READ || k=WRITE
echo "IoType: $k XferType: $t Threads: 8 DataSetSize: 8363008/8388608(KiB) IOSize: 1024(KiB) Throughput: $r GiB/sec, Avg_Latency: 1138.933194 usecs ops: 8167 total_time 10.170003 secs"
"#;
    for (name, body) in [
        ("gdsio", gdsio.to_string()),
        (
            "nvidia-smi",
            "#!/bin/sh\necho 00000000:C8:00.0\n".to_string(),
        ),
    ] {
        let path = bin.join(name);
        std::fs::write(&path, body).expect("tool");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let plan = default_plan();
    let s4 = plan.find("S4").expect("S4");
    assert_eq!(
        s4.requires,
        ["gds_dir"],
        "skipped unless the site names its mount"
    );
    let mut values = plan.vars.clone();
    values.insert("gds_dir".into(), dir.display().to_string());
    values.insert("gpus".into(), "2".into());
    values.insert("node".into(), "n1".into());
    // Each GPU-direct read is sampled halfway through: a second here.
    values.insert("gds_seconds".into(), "2".into());
    let cmd = render(&s4.command, &values).expect("render");
    let run_with = |fail_gpu: &str, bin: &std::path::Path, env: &[(&str, String)]| {
        let mut envs = vec![("FAIL_GPU", fail_gpu.into())];
        envs.extend(env.iter().map(|(k, v)| (*k, v.into())));
        let out = sh_with_tools(&cmd, bin, &envs);
        let mut p = crate::parsers::OutputParser::new(
            ParserKind::Gdsio,
            crate::parsers::ParseContext {
                node: "n1".into(),
                expected_gpus: 2,
            },
        );
        let mut metrics = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            metrics.extend(p.push(line).expect("line"));
        }
        metrics.extend(p.finish());
        (out.status.code(), metrics)
    };
    let run = |fail_gpu: &str| run_with(fail_gpu, &bin, &[]);
    let (code, metrics) = run("");
    assert_eq!(code, Some(0));
    assert!(!dir.join("burnin-s4/n1").exists(), "its files are removed");
    let direct: Vec<(Option<u32>, f64)> = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::Figure {
                gpu, name, value, ..
            } if name == "gdsio_gib_per_s_gpud_read" => Some((*gpu, *value)),
            _ => None,
        })
        .collect();
    assert_eq!(direct, [(Some(0), 6.816723), (Some(1), 6.816723)]);
    let checks: Vec<(&str, CheckStatus)> = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::Check { name, status, .. } => Some((name.as_str(), *status)),
            _ => None,
        })
        .collect();
    assert!(
        checks.contains(&("gds-direct", CheckStatus::Ok)),
        "{checks:?}"
    );
    // No nvidia_fs here: the path is not proven, and says so per GPU.
    assert_eq!(
        checks
            .iter()
            .filter(|c| *c == &("gds-path", CheckStatus::Unknown))
            .count(),
        2,
        "{checks:?}"
    );
    assert!(
        checks
            .iter()
            .filter(|c| c.0 == "gds-numa")
            .all(|c| c.1 != CheckStatus::Ok)
    );
    let observed = gates::Observed {
        nodes: vec!["n1".into()],
        offline: true,
        ..gates::Observed::default()
    };
    let (verdict, why) = gates::judge(s4, &metrics, &observed, None);
    assert_eq!(verdict, Verdict::Warn, "{why}");
    // One GPU whose gdsio fails: the command exits 1 and the phase FAILs naming it.
    let (code, metrics) = run("1");
    assert_eq!(code, Some(1));
    let (verdict, why) = gates::judge(s4, &metrics, &observed, None);
    assert_eq!(verdict, Verdict::Fail, "{why}");
    assert!(why.contains("gdsio exited 3 (gpu 1 -x 0 -I 1)"), "{why}");
    // With gds_stats on the node: S4 turns cuFile's stats on in a copy of cufile.json for
    // the GPU-direct read only, samples the running gdsio, and cuFile's own count decides
    // the path. The stand-in gdsio counts only when it was handed the copy with stats on.
    let with_stats = dir.join("bin-stats");
    std::fs::create_dir_all(&with_stats).expect("dir");
    let counted = dir.join("counted");
    let tools = [
        (
            "gdsio",
            format!(
                "#!/bin/sh\ncase \"$*\" in *'-x 0 -I 0'*) grep -q '\"cufile_stats\": 3' \"$CUFILE_ENV_PATH_JSON\" && touch '{}'; sleep 2;; esac\nexec '{}' \"$@\"\n",
                counted.display(),
                bin.join("gdsio").display()
            ),
        ),
        (
            "gds_stats",
            format!(
                "#!/bin/sh\n[ -e '{}' ] || exit 1\necho 'cuFile STATS VERSION : 4'\n[ -n \"$COMPAT\" ] && p=8167 || p=0\nfor g in 0 1; do echo \"GPU $g Read: bw=6.8 util(%)=99 n=8167 posix=$p unalign=0 dr=0 r_sparse=0 r_inline=0 err=0 MiB=8167 Write: bw=0 util(%)=0 n=0 posix=0 unalign=0 dr=0 err=0 MiB=0 BufRegister: n=8 err=0 free=0 MiB=8\"; done\n",
                counted.display()
            ),
        ),
    ];
    for (name, body) in tools {
        let path = with_stats.join(name);
        std::fs::write(&path, body).expect("tool");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let cufile_json = dir.join("cufile.json");
    std::fs::write(
        &cufile_json,
        "{ \"profile\": {\n  // cufile stats level(0-3)\n  \"cufile_stats\": 0\n} }\n",
    )
    .expect("cufile.json");
    let paths = |metrics: &[PhaseMetric]| -> Vec<(CheckStatus, String)> {
        metrics
            .iter()
            .filter_map(|m| match m {
                PhaseMetric::Check {
                    name,
                    status,
                    detail,
                    ..
                } if name == "gds-path" => Some((*status, detail.clone())),
                _ => None,
            })
            .collect()
    };
    let env = |compat: &str| {
        vec![
            ("CUFILE_ENV_PATH_JSON", cufile_json.display().to_string()),
            ("COMPAT", compat.to_string()),
        ]
    };
    let (code, metrics) = run_with("", &with_stats, &env(""));
    assert_eq!(code, Some(0));
    let direct = paths(&metrics);
    assert_eq!(direct.len(), 2, "{direct:?}");
    assert!(
        direct
            .iter()
            .all(|(s, d)| *s == CheckStatus::Ok && d.contains("cuFile counted 8167 reads")),
        "{direct:?}"
    );
    let (code, metrics) = run_with("", &with_stats, &env("1"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(0), "compat mode runs: only the count tells");
    assert!(
        paths(&metrics)
            .iter()
            .all(|(s, d)| *s == CheckStatus::Failed && d.contains("compat mode")),
        "{metrics:?}"
    );
    let (verdict, why) = gates::judge(s4, &metrics, &observed, None);
    assert_eq!(verdict, Verdict::Fail, "{why}");
}

/// S4 in a real `sh` refuses what it cannot run, before gdsio writes a byte: a run length
/// that is not whole seconds, a relative `gds_dir`. A NUMA node with no directory of its
/// own is said, and a `cufile.json` with no stats key is named as the reason cuFile's count
/// is missing.
#[test]
fn s4_refuses_what_it_cannot_run_and_says_what_it_could_not_count() {
    let dir = std::env::temp_dir().join(format!("burnin-s4-refuse-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("dir");
    for (name, body) in [
        (
            "gdsio",
            "#!/bin/sh\necho 'IoType: READ XferType: GPUD Threads: 8 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 6.8 GiB/sec, Avg_Latency: 1 usecs ops: 1 total_time 1 secs'\n",
        ),
        ("gds_stats", "#!/bin/sh\nexit 1\n"),
        ("nvidia-smi", "#!/bin/sh\necho 00000000:18:00.0\n"),
    ] {
        let path = bin.join(name);
        std::fs::write(&path, body).expect("tool");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let cufile_json = dir.join("cufile.json");
    std::fs::write(&cufile_json, "{ \"profile\": { \"nvtx\": false } }\n").expect("json");
    let run = |vars: &[(&str, String)]| {
        let plan = default_plan();
        let s4 = plan.find("S4").expect("S4");
        let mut values = plan.vars.clone();
        values.insert("gpus".into(), "1".into());
        values.insert("node".into(), "n1".into());
        values.insert("gds_seconds".into(), "1".into());
        for (k, v) in vars {
            values.insert((*k).into(), v.clone());
        }
        let cmd = render(&s4.command, &values).expect("render");
        let out = sh_with_tools(
            &cmd,
            &bin,
            &[("CUFILE_ENV_PATH_JSON", cufile_json.clone().into())],
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let mnt = dir.join("mnt").display().to_string();
    let (code, text) = run(&[("gds_dir", mnt.clone()), ("gds_seconds", "10s".into())]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("is not a whole number of seconds"), "{text}");
    assert!(!dir.join("mnt").exists(), "nothing written: {text}");
    let (code, text) = run(&[("gds_dir", " relative/dir".into())]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("is not an absolute path"), "{text}");
    // Only node 3 named: this GPU's node (? here: no sysfs for it) has no entry.
    let (code, text) = run(&[("gds_dir", format!("3={mnt}"))]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("gds_dir: gpu 0 on NUMA node ? has no entry (the first is used)"),
        "{text}"
    );
    assert!(
        text.contains("cufile stats: none (") && text.contains("has no profile.cufile_stats key"),
        "{text}"
    );
    assert!(!dir.join("mnt/burnin-s4/n1").exists(), "cleaned up: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// S4's walk from the GDS mount to the NUMA nodes of its devices, in a real `sh` over a
/// stand-in sysfs laid out as Linux lays it out: an md array whose members are a partition
/// (no `device` link of its own: its disk's) and a whole NVMe disk on the other socket, and
/// GPUs found by their PCI address. GPU0 (node 0) and GPU1 (node 1) are both local. With
/// a directory per NUMA node in `gds_dir`, each GPU reads the device on its own node.
#[test]
fn s4_finds_the_numa_nodes_behind_an_md_array_of_a_partition_and_a_disk() {
    let dir = std::env::temp_dir().join(format!("burnin-s4-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sys = dir.join("sys");
    let bin = dir.join("bin");
    let mk = |p: &std::path::Path| std::fs::create_dir_all(p).expect("dir");
    let put = |p: std::path::PathBuf, text: &str| {
        mk(p.parent().expect("parent"));
        std::fs::write(p, text).expect("write");
    };
    let link = |target: &str, at: std::path::PathBuf| {
        mk(at.parent().expect("parent"));
        std::os::unix::fs::symlink(target, at).expect("symlink");
    };
    // /sys/devices: nvme0n1 (node 0) with its partition p1; nvme1n1 (node 1); md0.
    let disk0 = sys.join("devices/pci0/nvme/nvme0/nvme0n1");
    put(disk0.join("device/numa_node"), "0\n");
    put(disk0.join("nvme0n1p1/partition"), "1\n");
    put(
        sys.join("devices/pci1/nvme/nvme1/nvme1n1/device/numa_node"),
        "1\n",
    );
    mk(&sys.join("devices/virtual/block/md0/slaves"));
    link(
        "../../devices/pci0/nvme/nvme0/nvme0n1/nvme0n1p1",
        sys.join("class/block/nvme0n1p1"),
    );
    link(
        "../../devices/pci1/nvme/nvme1/nvme1n1",
        sys.join("class/block/nvme1n1"),
    );
    link(
        "../../devices/virtual/block/md0",
        sys.join("class/block/md0"),
    );
    link(
        "../../../../pci0/nvme/nvme0/nvme0n1/nvme0n1p1",
        sys.join("devices/virtual/block/md0/slaves/nvme0n1p1"),
    );
    link(
        "../../../../pci1/nvme/nvme1/nvme1n1",
        sys.join("devices/virtual/block/md0/slaves/nvme1n1"),
    );
    put(sys.join("bus/pci/devices/0000:18:00.0/numa_node"), "0\n");
    put(sys.join("bus/pci/devices/0000:c8:00.0/numa_node"), "1\n");
    let tools = [
        (
            "df",
            "#!/bin/sh\necho Filesystem\ncase \"$2\" in *mnt0) echo /dev/nvme0n1p1;; *mnt1) echo /dev/nvme1n1;; *) echo /dev/md0;; esac\n",
        ),
        (
            "nvidia-smi",
            "#!/bin/sh\n[ \"$2\" = 0 ] && echo 00000000:18:00.0 || echo 00000000:C8:00.0\n",
        ),
        (
            "gdsio",
            "#!/bin/sh\necho 'IoType: READ XferType: GPUD Threads: 8 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 6.8 GiB/sec, Avg_Latency: 1 usecs ops: 1 total_time 1 secs'\n",
        ),
    ];
    for (name, body) in tools {
        let path = bin.join(name);
        put(path.clone(), body);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let plan = default_plan();
    let s4 = plan.find("S4").expect("S4");
    let run = |gds_dir: String| {
        let mut values = plan.vars.clone();
        values.insert("gds_dir".into(), gds_dir);
        values.insert("gpus".into(), "2".into());
        values.insert("node".into(), "n1".into());
        let cmd = render(&s4.command, &values).expect("render");
        let out = sh_with_tools(&cmd, &bin, &[("BURNIN_SYSFS", sys.clone().into())]);
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A directory per NUMA node: each GPU reads the device on its own node.
    let (own, err) = run(format!(
        "0={} 1={}",
        dir.join("mnt0").display(),
        dir.join("mnt1").display()
    ));
    let numa: Vec<&str> = own.lines().filter(|l| l.starts_with("numa: ")).collect();
    assert_eq!(
        numa,
        [
            "numa: gpu 0 0 file 0 nvme0n1p1",
            "numa: gpu 1 1 file 1 nvme1n1"
        ],
        "{own}{err}"
    );
    assert_eq!(
        own.lines()
            .filter(|l| *l == "gds_dir: per-numa-node")
            .count(),
        1,
        "said once, so a remote pairing is a fault: {own}"
    );
    assert!(
        !dir.join("mnt0/burnin-s4/n1").exists() && dir.join("mnt1/burnin-s4").exists(),
        "each GPU's files are removed after its runs"
    );
    let (text, err) = run(dir.join("mnt").display().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let numa: Vec<&str> = text.lines().filter(|l| l.starts_with("numa: ")).collect();
    assert_eq!(
        numa,
        ["numa: gpu 0 0 file 0,1 md0", "numa: gpu 1 1 file 0,1 md0"],
        "{text}{err}"
    );
    let mut p = crate::parsers::gdsio::GdsioParser::new();
    for l in text.lines() {
        p.push(l);
    }
    let numa_checks: Vec<_> = p
        .checks()
        .into_iter()
        .filter(|c| c.0 == "gds-numa")
        .collect();
    assert!(
        numa_checks
            .iter()
            .all(|c| c.1 == crate::model::phase::CheckStatus::Ok),
        "{numa_checks:?}"
    );
}
