//! What a phase runs on a node: the command rendered from the plan's template and the run's
//! placeholders (each value shell-inert), and why a phase is skipped.

use super::*;

/// What every node job of one phase shares.
pub(super) struct JobSetup<'a> {
    pub(super) ctx: &'a RunContext,
    pub(super) spec: &'a Arc<PhaseSpec>,
    /// Which run of the spec this is: alone, or a member of a group.
    pub(super) part: &'a Part,
    pub(super) hostfile: &'a str,
    pub(super) events: &'a mpsc::Sender<PhaseEvent>,
    pub(super) recorded: Option<&'a BTreeMap<String, usize>>,
}

/// The job that runs `template` on `node` (its name, with its `role` where it has one, is its
/// directory on the node and how its lines are labelled; `{node}` is the node's own name).
pub(super) fn job_for(
    setup: &JobSetup<'_>,
    node: RunnerNode,
    role: Option<&str>,
    template: &str,
    peer: &str,
    parser: crate::parsers::ParserKind,
    stop: StopSwitch,
) -> Result<NodeJob, String> {
    let ctx = setup.ctx;
    let name = match role {
        Some(role) => format!("{}-{role}", node.spec.name),
        None => node.spec.name.clone(),
    };
    let dir = PhaseDir::new(
        &ctx.plan.remote_dir,
        &ctx.run_id,
        &ctx.phase_component(&setup.part.component),
        &name,
    )
    .ok_or_else(|| {
        format!(
            "node name {name:?} or run id {:?} cannot be a directory name on the node",
            ctx.run_id
        )
    })?;
    let values = template_values(ctx, &node, &dir, peer)?;
    let mut command = render(template, &values).map_err(|e| format!("command template: {e}"))?;
    let mut node = node;
    if setup.spec.launcher == crate::plan::Launcher::Kubernetes {
        // The Job runs the command in a pod; this host runs the script that applies the Job,
        // follows its log and deletes it when the phase is stopped.
        let Some(kube) = &ctx.plan.kubernetes else {
            return Err("launcher \"kubernetes\" without [kubernetes] in the plan".into());
        };
        let mut pod_values = values;
        pod_values.insert(
            "workloads".into(),
            crate::phases::kubernetes::POD_WORKLOADS.into(),
        );
        pod_values.insert("dir".into(), crate::phases::kubernetes::POD_DIR.into());
        let pod_command =
            render(template, &pod_values).map_err(|e| format!("command template: {e}"))?;
        let files = crate::workloads::referenced_by(&pod_command);
        let host = node
            .spec
            .target
            .rsplit_once('@')
            .map_or(node.spec.target.as_str(), |(_, h)| h);
        let component = ctx.phase_component(&setup.part.component);
        command = crate::phases::kubernetes::script(
            kube,
            &crate::phases::kubernetes::JobRequest {
                run: &ctx.run_id,
                phase: &component,
                node: host,
                gpus: node.spec.gpus,
                command: &pod_command,
                timeout_s: setup.spec.timeout.as_secs(),
                files: &files,
            },
        );
        node.transport = Arc::new(crate::transport::local::LocalTransport);
    }
    let label = match &setup.part.member {
        Some(m) => format!("{m}@{name}"),
        None => name.clone(),
    };
    Ok(NodeJob {
        phase: Arc::clone(setup.spec),
        event_phase: setup.part.event_phase.clone(),
        node,
        dir,
        command,
        hostfile: setup.hostfile.to_string(),
        grace_s: ctx.plan.grace.as_secs(),
        events: setup.events.clone(),
        stop,
        reattach: setup.recorded.map(|r| r.get(&label).copied().unwrap_or(0)),
        label,
        lines_seen: 0,
        parser,
    })
}

/// The burnin binary a command on this node runs: the deployed agent over SSH, this very
/// binary for `local` and `sim` nodes.
fn burnin_on(spec: &NodeSpec) -> String {
    use crate::config::inventory::Mode;
    match spec.mode {
        Mode::Agent | Mode::Smi | Mode::Prometheus => {
            crate::transport::quote::quote_program(&spec.agent_path)
        }
        Mode::Local | Mode::Sim => std::env::current_exe().map_or_else(
            |_| "burnin".into(),
            |p| crate::transport::quote::quote_program(&p.to_string_lossy()),
        ),
    }
}

/// Whether `value` means the same to a shell unquoted, in double quotes and in single quotes:
/// letters, digits and `._-@:%,+=/` only. Names and ids reach commands through placeholders
/// (`{node}`, `{hosts}`, `{run}`, …) wherever the plan's author put them, so they are held to
/// this rather than quoted for one of those places.
pub fn shell_inert(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@:%,+=/".contains(c))
}

/// The values every template may use, for `node` in this run; an error when a name or id
/// would carry shell syntax into the command (the inventory refuses such names; a run id
/// comes from a record that may not be ours).
pub(super) fn template_values(
    ctx: &RunContext,
    node: &RunnerNode,
    dir: &PhaseDir,
    peer: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut v: BTreeMap<String, String> = ctx.plan.vars.clone();
    // Vars may use placeholders themselves (e.g. a container mount of {workloads}).
    let hosts: Vec<&str> = ctx.nodes.iter().map(|n| n.spec.target.as_str()).collect();
    let slots: Vec<String> = ctx
        .nodes
        .iter()
        .map(|n| format!("{}:{}", n.spec.target, n.spec.gpus))
        .collect();
    let np: u32 = ctx.nodes.iter().map(|n| n.spec.gpus).sum();
    // Slurm names nodes without a login user: `root@gpu07` is gpu07 to `srun --nodelist`.
    let nodelist: Vec<&str> = hosts
        .iter()
        .map(|h| h.rsplit_once('@').map_or(*h, |(_, host)| host))
        .collect();
    let shell_dir = PhaseDir::shell_path(&dir.dir);
    let builtins = [
        ("node", node.spec.name.clone()),
        ("gpus", node.spec.gpus.to_string()),
        ("run", ctx.run_id.clone()),
        ("dir", shell_dir.clone()),
        ("workloads", PhaseDir::shell_path(&dir.workloads)),
        ("hosts", hosts.join(",")),
        ("hosts_slots", slots.join(",")),
        ("np", np.to_string()),
        ("nnodes", ctx.nodes.len().to_string()),
        ("nodelist", nodelist.join(",")),
        ("hostfile", format!("{shell_dir}/hostfile")),
        ("peer", peer.to_string()),
        ("burnin", burnin_on(&node.spec)),
        ("doctor_probe", doctor_probe(ctx, node)),
    ];
    for (key, val) in &builtins {
        let checked = matches!(
            *key,
            "node"
                | "gpus"
                | "run"
                | "hosts"
                | "hosts_slots"
                | "np"
                | "nnodes"
                | "nodelist"
                | "peer"
        );
        if checked && !shell_inert(val) {
            return Err(format!(
                "{{{key}}} would be {:?}: a name that is not letters, digits and ._-@:%,+=/ never reaches a shell",
                crate::model::strip_controls(val)
            ));
        }
    }
    let builtin_map: BTreeMap<String, String> = builtins
        .iter()
        .map(|(k, val)| (k.to_string(), val.clone()))
        .collect();
    for val in v.values_mut() {
        if let Ok(r) = render(val, &builtin_map) {
            *val = r;
        }
    }
    v.extend(builtin_map);
    Ok(v)
}

/// `{doctor_probe}`: the doctor's probe of what every phase of the plan needs on `node`, as
/// one command T0's script runs (empty where no phase's command names it).
fn doctor_probe(ctx: &RunContext, node: &RunnerNode) -> String {
    use crate::config::inventory::Mode;
    use crate::phases::doctor::{judge, needs, probe};
    if !ctx
        .plan
        .phases
        .iter()
        .any(|p| p.command.contains("{doctor_probe}"))
    {
        return String::new();
    }
    let needs = needs::plan_needs(&ctx.plan);
    let first = ctx.nodes.first().map(|n| n.spec.name.as_str()) == Some(node.spec.name.as_str());
    let burnin_key = matches!(node.spec.mode, Mode::Agent | Mode::Smi | Mode::Prometheus)
        .then(|| node.spec.agent_path.clone());
    let request = judge::request_for(&needs, &ctx.plan.remote_dir, first, burnin_key.as_deref());
    probe::inline_probe(
        &request,
        &judge::need_lines(&needs, first, burnin_key.as_deref()),
    )
}

/// Why a phase cannot start at all (`SKIPPED`), if it cannot.
pub fn skip_reason(plan: &Plan, spec: &PhaseSpec) -> Option<String> {
    if spec.command.is_empty() {
        return Some(format!(
            "no command in the plan ({}): put the site's job for {} there",
            plan.file, spec.id
        ));
    }
    let empty: Vec<&str> = spec
        .requires
        .iter()
        .filter(|r| plan.vars.get(*r).is_none_or(|v| v.trim().is_empty()))
        .map(String::as_str)
        .collect();
    if !empty.is_empty() {
        return Some(format!(
            "needs [vars] {} set in {}",
            empty.join(", "),
            plan.file
        ));
    }
    None
}
