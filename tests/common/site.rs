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
