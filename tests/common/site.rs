//! A site for phase tests over real SSH: sshd nodes on loopback, an inventory naming them, a
//! plan, and `burnin` run against them as an engineer runs it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::sshd::Cluster;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_burnin");

/// A replaying stand-in for a benchmark: prints a capture (without its `# source:` line) line
/// by line, with a small delay, as the real tool would.
pub fn replay_tool(fixture: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    format!(
        "#!/bin/sh\ntail -n +2 '{}' | while IFS= read -r l; do printf '%s\\n' \"$l\"; sleep 0.005; done\n",
        path.display()
    )
}

pub struct Site {
    pub cluster: Cluster,
    pub config: PathBuf,
    pub runtime: PathBuf,
    pub remote: PathBuf,
    pub runs: PathBuf,
}

impl Site {
    /// `nodes` sshd nodes, an inventory naming them, and `plan` (TOML after [settings]).
    pub fn new(nodes: usize, gpus: u32, plan: &str) -> Option<Site> {
        let cluster = Cluster::start(nodes)?;
        let remote = cluster.dir.join("remote");
        let runs = cluster.dir.join("runs");
        let config = cluster.dir.join("burnin.toml");
        std::fs::write(
            &config,
            format!(
                "plan = \"plan.toml\"\n[defaults]\nmode = \"agent\"\nconnect_timeout = \"5s\"\ngpus = {gpus}\n[[node]]\nhost = \"node[01-{nodes:02}]\"\n"
            ),
        )
        .expect("inventory");
        std::fs::write(
            cluster.dir.join("plan.toml"),
            format!(
                "[settings]\nremote_dir = \"{}\"\ngrace_s = 1\n{plan}",
                remote.display()
            ),
        )
        .expect("plan");
        // A short runtime dir, so ssh's multiplexing sockets fit the Unix socket path limit.
        static SITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let runtime = PathBuf::from(format!(
            "/tmp/bph{}-{}",
            std::process::id(),
            SITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&runtime).expect("runtime dir");
        Some(Site {
            cluster,
            config,
            runtime,
            remote,
            runs,
        })
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .arg("-c")
            .arg(&self.config)
            .arg("--ssh-config")
            .arg(&self.cluster.ssh_config)
            .arg("--runs-dir")
            .arg(&self.runs)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("BURNIN_LOG", self.cluster.dir.join("burnin.log"));
        c
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("burnin run")
    }

    /// The one phase directory of `phase` on `node` (there is one run per test).
    /// The (first) run directory under the site's runs.
    pub fn the_run(&self) -> PathBuf {
        std::fs::read_dir(&self.runs)
            .expect("runs")
            .flatten()
            .next()
            .expect("a run")
            .path()
    }

    pub fn phase_dir(&self, phase: &str, node: &str) -> Option<PathBuf> {
        let run = std::fs::read_dir(&self.remote)
            .ok()?
            .flatten()
            .next()?
            .path();
        Some(run.join(phase).join(node))
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runtime);
    }
}

pub fn finish(child: Child) -> (Option<i32>, serde_json::Value, String) {
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("run --json: {e}\nstderr:\n{stderr}"));
    (out.status.code(), doc, stderr)
}

pub fn phase<'a>(doc: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    doc["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["id"] == id))
        .unwrap_or_else(|| panic!("no phase {id} in {doc}"))
}

/// The stand-in: slow (half busbw) when any of `bad` is among its hosts, when both nodes of a
/// pair in `links` are, or the first time `flaky` is.
pub fn allreduce_stand_in(
    bad: &[&str],
    links: &[(&str, &str)],
    flaky: Option<&str>,
    marks: &str,
) -> String {
    let mut checks = String::new();
    for b in bad {
        checks.push_str(&format!(
            "case \",$hosts,\" in *\",{b}:\"*) slow=1 ;; esac\n"
        ));
    }
    for (a, b) in links {
        checks.push_str(&format!(
            "case \",$hosts,\" in *\",{a}:\"*) case \",$hosts,\" in *\",{b}:\"*) slow=1 ;; esac ;; esac\n"
        ));
    }
    if let Some(f) = flaky {
        checks.push_str(&format!(
            "case \",$hosts,\" in *\",{f}:\"*) if mkdir '{marks}/{f}' 2>/dev/null; then slow=1; fi ;; esac\n"
        ));
    }
    format!(
        r##"#!/bin/sh
hosts=""
while [ $# -gt 0 ]; do case "$1" in -H) hosts="$2"; shift 2 ;; *) shift ;; esac; done
slow=0
{checks}n=$(printf '%s\n' "$hosts" | tr ',' '\n' | grep -c .)
echo "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
echo "#"
echo "# Using devices"
i=0; for h in $(printf '%s\n' "$hosts" | tr ',' ' '); do echo "#  Rank  $i Group  0 Pid  100$i on ${{h%%:*}} device  0 [0000:04:00] NVIDIA B300"; i=$((i+1)); done
echo "#"
echo "#                                                              out-of-place                       in-place          "
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
echo "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "
awk -v n="$n" -v slow="$slow" 'BEGIN {{
  bus = (slow ? 185 : 370); f = 2 * (n - 1) / n; alg = bus / f; total = 0; rows = 0
  for (s = 1048576; s <= 1073741824; s *= 4) {{
    t = s / alg / 1000; printf "%12d %13d %9s %7s %7d %8.1f %7.2f %7.2f %6d %8.1f %7.2f %7.2f %6d\n", s, s / 4, "float", "sum", -1, t, alg, bus, 0, t, alg, bus, 0
    total += bus; rows++
  }}
  printf "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.2f \n#\n", total / rows
}}'
"##
    )
}

/// A plan of one multi-node phase, T7, whose command is the stand-in all_reduce_perf
/// ([`allreduce_stand_in`]) with every host of its group.
pub const STAND_IN_T7: &str = r#"
[[phase]]
id = "T7"
title = "multi-node NCCL (stand-in)"
scope = "mpirun"
parser = "nccl-tests"
timeout = "2m"
gates = [{ kind = "zero-wrong" }, { kind = "min", figure = "busbw_all_reduce", value = 10 }]
command = "all_reduce_perf -H {hosts_slots} -b 1M -e 1G"
"#;

/// `burnin report RUN`, which must succeed; the report.md it wrote.
pub fn report_md(run: &Path, log: &Path) -> String {
    let out = Command::new(BIN)
        .arg("report")
        .arg(run)
        .env("BURNIN_LOG", log)
        .output()
        .expect("report");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(run.join("report.md")).expect("report.md")
}

/// A check the record's events hold for `node`: (status, detail), as `events.jsonl` has it.
pub fn check_in(events: &str, node: &str, name: &str) -> Option<(String, String)> {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["metric"].clone())
        .find(|m| m["kind"] == "check" && m["node"] == node && m["name"] == name)
        .map(|m| {
            (
                m["status"].as_str().unwrap_or("").to_string(),
                m["detail"].as_str().unwrap_or("").to_string(),
            )
        })
}

/// A stand-in T0 phase (plan text): each node lists `gpus` B300s (PCI 0x3182) and eight
/// InfiniBand ports of PCI ID `nic_id` at `rate` Gb/s, as the shipped T0's `gpus` and `nics`
/// sections print them.
pub fn stand_in_t0(gpus: u32, nic_id: &str, rate: u32) -> String {
    stand_in_t0_ports(gpus, 8, nic_id, rate)
}

/// [`stand_in_t0`] with `ports` InfiniBand ports a node.
pub fn stand_in_t0_ports(gpus: u32, ports: u32, nic_id: &str, rate: u32) -> String {
    format!(
        r#"
[[phase]]
id = "T0"
title = "preflight (stand-in)"
scope = "each-node"
parser = "preflight"
gates = [{{ kind = "checks" }}]
command = '''
echo "== gpus"
i=0; while [ $i -lt {gpus} ]; do echo "$i, NVIDIA B300 SXM6 AC, 00000000:1$i:00.0, Enabled, 0x318210DE"; i=$((i+1)); done
echo "== nics"
i=0; while [ $i -lt {ports} ]; do echo "mlx5_$i 1 {nic_id} InfiniBand {rate} Gb/sec (4X)"; i=$((i+1)); done
'''
"#
    )
}
