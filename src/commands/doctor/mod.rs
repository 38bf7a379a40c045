//! `burnin doctor`: the day before, whether every phase of the plan can run on every node.
//! One probe script per node over the phases' own transport (`phases::doctor::probe`) looks
//! for the tools each phase names, torch for the workloads, the control directory's space and
//! the kernel log; this host's baseline and runs directory are looked at here. Exit 0: every
//! phase that is set up can run on every node; 1: something is missing; 2: it could not look.

mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use color_eyre::eyre::Result;

use super::{emit, load_inventory};
use crate::config::inventory::Mode;
use crate::phases::doctor::judge::{NodeAnswer, judge, request_for};
use crate::phases::doctor::needs::plan_needs;
use crate::phases::doctor::probe::{parse_probe, probe_command};
use crate::transport::Transport;

/// Version of the `doctor --json` document.
pub const DOCTOR_SCHEMA: u32 = 1;

/// Time a node's probe may take beyond connecting: each tool's version is held to 20 s on the
/// node, and importing torch and starting CUDA can take most of a minute.
const PROBE_TIME: Duration = Duration::from_secs(150);

/// What `burnin doctor` was asked.
pub struct DoctorArgs {
    /// burnin.toml.
    pub config: PathBuf,
    /// `--ssh-config`.
    pub ssh_config: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// `--runs-dir`: where `burnin run` would write its records.
    pub runs_dir: PathBuf,
    /// `--baseline`.
    pub baseline: Option<PathBuf>,
}

/// `burnin doctor`.
pub async fn doctor(args: DoctorArgs) -> Result<i32> {
    let Some(inventory) = load_inventory(&args.config) else {
        return Ok(2);
    };
    let plan = match super::run::load_plan(&inventory) {
        Ok(p) => p,
        Err(e) => {
            crate::eprintln_safe!("burnin doctor: plan: {e}");
            return Ok(2);
        }
    };
    if inventory.nodes.is_empty() {
        crate::eprintln_safe!("burnin doctor: no nodes in {}", inventory.file);
        return Ok(2);
    }
    let needs = plan_needs(&plan);
    let ssh = crate::transport::ssh::settings(args.ssh_config.clone(), &inventory);
    let nodes = super::run::runner_nodes(&inventory, &ssh);
    let mut probes = tokio::task::JoinSet::new();
    for (i, node) in nodes.into_iter().enumerate() {
        let burnin_key = matches!(node.spec.mode, Mode::Agent | Mode::Smi | Mode::Prometheus)
            .then(|| node.spec.agent_path.clone());
        let request = request_for(&needs, &plan.remote_dir, i == 0, burnin_key.as_deref());
        let limit = inventory.connect_timeout + PROBE_TIME;
        probes.spawn(async move {
            let probe = probe_node(node.transport.as_ref(), &request, limit).await;
            (
                i,
                NodeAnswer {
                    node: node.spec.name,
                    burnin_key,
                    probe,
                },
            )
        });
    }
    let mut answers: Vec<(usize, NodeAnswer)> = Vec::new();
    while let Some(done) = probes.join_next().await {
        if let Ok(answer) = done {
            answers.push(answer);
        }
    }
    answers.sort_by_key(|(i, _)| *i);
    let answers: Vec<NodeAnswer> = answers.into_iter().map(|(_, a)| a).collect();
    let local = report::local_checks(&args, &plan);
    let judged = judge(&needs, &answers);
    let doc = report::document(&plan, &inventory.file, &judged, &answers, local);
    if json_or_text(&doc, args.json).is_err() {
        return Ok(2);
    }
    Ok(doc.exit)
}

fn json_or_text(doc: &report::DoctorDoc, json: bool) -> Result<()> {
    if json {
        emit(&(serde_json::to_string_pretty(doc)? + "\n"))
    } else {
        emit(&report::text(doc))
    }
}

/// Run the probe on one node: its answer, or why it could not run there.
async fn probe_node(
    transport: &dyn Transport,
    request: &crate::phases::doctor::probe::ProbeRequest,
    limit: Duration,
) -> Result<crate::phases::doctor::probe::NodeProbe, String> {
    let child = transport
        .command(&probe_command(request))
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let out = match tokio::time::timeout(limit, crate::transport::wait_bounded(child)).await {
        Err(_) => return Err(format!("no answer in {} s", limit.as_secs())),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok(out)) => out,
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let probe = parse_probe(&stdout);
    // The script ends with 0 after its last line: a failed exit with nothing said is the
    // link's (ssh 255, a login shell that refused), and named as the transport names it.
    if !out.status.success() && !probe.complete {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(transport.classify(Some(out.status), &stderr));
    }
    Ok(probe)
}

/// Whether `dir` (or the directory it would be made in) is a directory this user can write,
/// and the KiB free there.
pub(super) fn writable_dir(dir: &Path) -> (std::result::Result<PathBuf, String>, Option<u64>) {
    let mut at = dir.to_path_buf();
    while !at.exists() {
        match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => at = p.to_path_buf(),
            _ => {
                at = PathBuf::from(".");
                break;
            }
        }
    }
    let free = free_kib(&at);
    if !at.is_dir() {
        return (Err(format!("{} is not a directory", at.display())), free);
    }
    // Made and removed at once: asking the filesystem is the only sure way (ACLs, read-only
    // mounts, root squash).
    let probe = at.join(format!(".burnin-doctor-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map(|_| ());
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => (Ok(at), free),
        Err(e) => (Err(format!("{} is not writable: {e}", at.display())), free),
    }
}

/// KiB free to this user on the filesystem of `path`.
fn free_kib(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path that lives across the call; `st` is a valid
    // out-pointer to a statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    // The fields' integer types differ between platforms.
    #[allow(clippy::unnecessary_cast)]
    (rc == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64) / 1024)
}
