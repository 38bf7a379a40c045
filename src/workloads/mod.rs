//! The PyTorch workloads shipped inside the binary (`workloads/*.py`): burnin copies the ones a
//! phase's command names onto the node before it starts, and `burnin workload print NAME`
//! exports one for use elsewhere.

/// One shipped workload.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Name as used on the command line (`gemm`).
    pub name: &'static str,
    /// File name on the node (`gemm.py`).
    pub file: &'static str,
    /// What it measures.
    pub about: &'static str,
    /// The script.
    pub text: &'static str,
}

/// Every shipped workload.
pub const ALL: &[Workload] = &[
    Workload {
        name: "gemm",
        file: "gemm.py",
        about: "T2: sustained BF16/FP8 GEMM TFLOPS of every GPU at once",
        text: include_str!("../../workloads/gemm.py"),
    },
    Workload {
        name: "allreduce",
        file: "allreduce.py",
        about: "all_reduce busbw over torch.distributed, printed like nccl-tests",
        text: include_str!("../../workloads/allreduce.py"),
    },
    Workload {
        name: "train_synthetic",
        file: "train_synthetic.py",
        about: "T5/T8: DDP training with per-step time, data wait, tokens/s and loss",
        text: include_str!("../../workloads/train_synthetic.py"),
    },
];

/// A workload by name (`gemm`) or file name (`gemm.py`).
pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().find(|w| w.name == name || w.file == name)
}

/// The workloads a command names, as (file, text) pairs to copy to the node.
pub fn referenced_by(command: &str) -> Vec<(&'static str, &'static str)> {
    ALL.iter()
        .filter(|w| command.contains(w.file))
        .map(|w| (w.file, w.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_names_only_shipped_workloads() {
        let plan = crate::plan::default_plan();
        let t2 = plan.find("T2").unwrap();
        assert_eq!(
            referenced_by(&t2.command)
                .iter()
                .map(|w| w.0)
                .collect::<Vec<_>>(),
            ["gemm.py"]
        );
        for p in &plan.phases {
            for word in p.command.split_whitespace() {
                if let Some(file) = word.strip_prefix("{workloads}/") {
                    assert!(find(file).is_some(), "{}: {file} is not shipped", p.id);
                }
            }
        }
        assert!(
            find("gemm")
                .is_some_and(|w| w.text.contains("\"burnin\"") || w.text.contains("burnin="))
        );
    }

    /// Every shipped workload is Python that compiles (they run only on a node with a GPU:
    /// a mistake would otherwise wait for one).
    #[test]
    fn every_workload_compiles() {
        for w in ALL {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sys; compile(sys.stdin.read(), sys.argv[1], 'exec')",
                    w.name,
                ])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write;
                    child
                        .stdin
                        .take()
                        .map(|mut stdin| stdin.write_all(w.text.as_bytes()))
                        .transpose()?;
                    child.wait_with_output()
                })
                .expect("python3 (the tests need it)");
            assert!(
                out.status.success(),
                "{}: {}",
                w.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Where the GDS column's probe read fails, the workload adds cuFile's own reason from its
    /// log: run on the real cuFile logs of the H100 VM (tests/fixtures/h100-gds), it names the
    /// volume cuFile could not name, or nvidia_fs not loaded, from what the log gained since
    /// the probe began; lines already there before it, or no log, add nothing.
    #[test]
    fn the_gds_probe_names_cufiles_own_reason() {
        let dir = std::env::temp_dir().join(format!("burnin-cufile-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/h100-gds");
        // cufile.log holds `already` (a fixture, or nothing) when the probe begins, and cuFile
        // appends `during` (a fixture, or nothing) while it runs: what is said of the probe.
        let reason = |already: &str, during: &str| {
            for f in std::fs::read_dir(&dir).unwrap() {
                std::fs::remove_file(f.unwrap().path()).unwrap();
            }
            if !already.is_empty() {
                std::fs::copy(format!("{fixtures}/{already}"), dir.join("cufile.log")).unwrap();
            }
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sys; sys.path.insert(0, sys.argv[1]); import train_synthetic as t\n\
                     before = t.cufile_logs()\n\
                     if sys.argv[2]:\n    \
                         open('cufile.log', 'ab').write(open(sys.argv[2], 'rb').read())\n\
                     print(t.cufile_log_errors(before))",
                    &format!("{}/workloads", env!("CARGO_MANIFEST_DIR")),
                    &if during.is_empty() {
                        String::new()
                    } else {
                        format!("{fixtures}/{during}")
                    },
                ])
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .current_dir(&dir)
                .env_remove("CUFILE_LOGFILE_PATH")
                .output()
                .expect("python3 (the tests need it)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(
            reason("", "cufile-compat-allowed.log"),
            "udev property not found: ID_FS_USAGE vda; \
             error getting volume attributes error for device: dev_no: 254:0"
        );
        assert_eq!(
            reason("", "cufile-compat-forbidden.log"),
            "nvidia-fs.ko driver not loaded"
        );
        // An earlier run's errors in the same file are not this probe's.
        assert_eq!(
            reason("cufile-compat-allowed.log", "cufile-compat-forbidden.log"),
            "nvidia-fs.ko driver not loaded"
        );
        assert_eq!(reason("cufile-compat-forbidden.log", ""), "");
        assert_eq!(reason("", ""), "");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
