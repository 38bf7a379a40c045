//! Reading a plan file: its serde shape (`deny_unknown_fields`), then `resolve` into the
//! runtime types with errors that name file, line and column, field by field in file order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::gate_checks::{check_gate_figure, check_yields};
use super::template::{BUILTIN_PLACEHOLDERS, placeholders};
use super::together::together_phase;
use super::{Gate, KubeSettings, Launcher, PhaseSpec, Plan, Scope, drill};
use crate::config::ConfigError;
use crate::parsers::ParserKind;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    #[serde(default)]
    settings: SettingsFile,
    #[serde(default)]
    vars: BTreeMap<String, toml::Spanned<String>>,
    #[serde(default)]
    phase: Vec<toml::Spanned<PhaseFile>>,
    kubernetes: Option<toml::Spanned<KubernetesFile>>,
    /// `[[spec.gpu]]`, `[[spec.nic]]`: the site's entries over the shipped spec table.
    spec: Option<toml::Spanned<toml::Value>>,
}

/// `[kubernetes]`: where Jobs go and what they run in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KubernetesFile {
    image: toml::Spanned<String>,
    namespace: Option<String>,
    context: Option<String>,
    kubectl: Option<String>,
    gpu_resource: Option<String>,
    node_label: Option<String>,
    service_account: Option<String>,
    keep_finished: Option<toml::Spanned<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    remote_dir: Option<String>,
    grace_s: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PhaseFile {
    pub(super) id: toml::Spanned<String>,
    pub(super) title: String,
    pub(super) scope: Option<toml::Spanned<Scope>>,
    #[serde(default)]
    pub(super) proves: String,
    /// The gates in words for the console and reports (default: made from `gates`).
    pub(super) gate: Option<String>,
    pub(super) parser: Option<ParserKind>,
    pub(super) timeout: Option<toml::Spanned<String>>,
    #[serde(default)]
    pub(super) needs: Vec<toml::Spanned<String>>,
    #[serde(default)]
    pub(super) requires: Vec<toml::Spanned<String>>,
    #[serde(default)]
    pub(super) gates: Vec<toml::Spanned<Gate>>,
    pub(super) command: Option<toml::Spanned<String>>,
    pub(super) server: Option<toml::Spanned<String>>,
    /// Earlier phases to run at the same time (this phase then has no command of its own).
    #[serde(default)]
    pub(super) together: Vec<toml::Spanned<String>>,
    /// With `together`: more figures to show alone / together / change.
    #[serde(default)]
    pub(super) compare: Vec<toml::Spanned<String>>,
    /// An operator drill around this phase's load.
    pub(super) drill: Option<toml::Spanned<DrillFile>>,
    /// `ssh` (default) or `kubernetes`.
    pub(super) launcher: Option<toml::Spanned<Launcher>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DrillFile {
    watch: Vec<toml::Spanned<String>>,
    steady: Option<toml::Spanned<String>>,
    settle: Option<toml::Spanned<String>>,
    recover_pct: Option<f64>,
    steps: Vec<DrillStepFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DrillStepFile {
    ask: String,
    run: Option<toml::Spanned<String>>,
    within: Option<toml::Spanned<String>>,
}

/// The plan's vars as read: the placeholders of commands name them.
type Vars = BTreeMap<String, toml::Spanned<String>>;

/// An error located at `span` of the plan file.
fn located(file: &str, text: &str, span: std::ops::Range<usize>, m: String) -> ConfigError {
    ConfigError::at(file, text, Some(span), m)
}

impl Plan {
    /// Parse and check a plan file.
    pub fn parse(file: &str, text: &str) -> Result<Plan, ConfigError> {
        let shape: PlanFile =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(file, text, &e))?;
        check_vars(file, text, &shape.vars)?;
        let kubernetes = match &shape.kubernetes {
            None => None,
            Some(k) => Some(kube_settings(file, text, k)?),
        };
        let hardware = match &shape.spec {
            None => crate::model::spec::HardwareSpec::shipped().clone(),
            Some(site) => {
                let table = toml::to_string(site.get_ref()).map_err(|e| {
                    ConfigError::at(file, text, Some(site.span()), format!("[spec]: {e}"))
                })?;
                crate::model::spec::HardwareSpec::shipped()
                    .with_site(file, &table)
                    .map_err(|e| ConfigError::at(file, text, Some(site.span()), e.why))?
            }
        };
        let mut phases: Vec<Arc<PhaseSpec>> = Vec::new();
        let mut ids = BTreeSet::new();
        for entry in &shape.phase {
            let p = entry.get_ref();
            let id = check_entry(file, text, p, &phases, &mut ids, &shape.vars)?;
            let spec = if p.together.is_empty() {
                plain_phase(file, text, id, p, &shape.vars, kubernetes.is_some())?
            } else {
                if let Some(l) = &p.launcher {
                    return Err(located(
                        file,
                        text,
                        l.span(),
                        format!("{id}: a `together` phase runs its members as they launch"),
                    ));
                }
                together_phase(file, text, id, p, &phases)?
            };
            phases.push(Arc::new(spec));
        }
        if phases.is_empty() {
            return Err(ConfigError::at(file, text, None, "no [[phase]] entries"));
        }
        Ok(Plan {
            file: file.to_string(),
            text: text.to_string(),
            phases,
            vars: shape
                .vars
                .into_iter()
                .map(|(k, v)| (k, v.into_inner()))
                .collect(),
            remote_dir: shape
                .settings
                .remote_dir
                .unwrap_or_else(|| "~/.cache/burnin/runs".into()),
            grace: Duration::from_secs(shape.settings.grace_s.unwrap_or(10).clamp(1, 600)),
            kubernetes,
            hardware: Arc::new(hardware),
        })
    }

    /// Read and check a plan file.
    pub fn load(path: &std::path::Path) -> Result<Plan, ConfigError> {
        let name = path.display().to_string();
        let text = crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
            .map_err(|e| ConfigError {
                file: name.clone(),
                line: None,
                column: None,
                message: e.to_string(),
            })?;
        Plan::parse(&name, &text)
    }
}

/// A var may use the built-in placeholders (a container mount of {workloads}), not other vars:
/// the runner fills vars in once, with the built-ins only.
fn check_vars(file: &str, text: &str, vars: &Vars) -> Result<(), ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| located(file, text, span, m);
    for (key, value) in vars {
        let names = placeholders(value.get_ref()).map_err(|m| at(value.span(), m.to_string()))?;
        if let Some(name) = names
            .iter()
            .find(|n| !BUILTIN_PLACEHOLDERS.contains(&n.as_str()))
        {
            return Err(at(
                value.span(),
                format!("[vars] {key}: {{{name}}} is not a built-in placeholder"),
            ));
        }
    }
    Ok(())
}

/// `[kubernetes]`, resolved over its defaults.
fn kube_settings(
    file: &str,
    text: &str,
    k: &toml::Spanned<KubernetesFile>,
) -> Result<KubeSettings, ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| located(file, text, span, m);
    let kf = k.get_ref();
    let d = KubeSettings::default();
    let image = kf.image.get_ref().trim().to_string();
    if image.is_empty() {
        return Err(at(kf.image.span(), "[kubernetes] image is empty".into()));
    }
    let keep = crate::config::inventory::duration(
        file,
        text,
        &kf.keep_finished,
        Duration::from_secs(d.keep_finished_s),
    )?;
    Ok(KubeSettings {
        kubectl: kf.kubectl.clone().unwrap_or(d.kubectl),
        context: kf.context.clone(),
        namespace: kf.namespace.clone().unwrap_or(d.namespace),
        image,
        gpu_resource: kf.gpu_resource.clone().unwrap_or(d.gpu_resource),
        node_label: kf.node_label.clone().unwrap_or(d.node_label),
        service_account: kf.service_account.clone(),
        keep_finished_s: keep.as_secs(),
    })
}

/// A phase's id (letters, digits, - and _, not listed twice), and the earlier phases it needs
/// and the vars it requires, each there.
fn check_entry(
    file: &str,
    text: &str,
    p: &PhaseFile,
    earlier: &[Arc<PhaseSpec>],
    ids: &mut BTreeSet<String>,
    vars: &Vars,
) -> Result<String, ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| located(file, text, span, m);
    let id = p.id.get_ref().trim().to_string();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(at(
            p.id.span(),
            format!("phase id {id:?}: letters, digits, - and _ only"),
        ));
    }
    if !ids.insert(id.clone()) {
        return Err(at(p.id.span(), format!("phase {id} is listed twice")));
    }
    for need in &p.needs {
        if !earlier.iter().any(|q| q.id == *need.get_ref()) {
            return Err(at(
                need.span(),
                format!(
                    "{id} needs {:?}, which is not an earlier phase",
                    need.get_ref()
                ),
            ));
        }
    }
    for r in &p.requires {
        if !vars.contains_key(r.get_ref()) {
            return Err(at(
                r.span(),
                format!("{id} requires {:?}, which is not in [vars]", r.get_ref()),
            ));
        }
    }
    Ok(id)
}

/// A phase with a command of its own: scope, parser, server, placeholders, gates, timeout,
/// drill and launcher, each checked where the file gives it.
fn plain_phase(
    file: &str,
    text: &str,
    id: String,
    p: &PhaseFile,
    vars: &Vars,
    has_kubernetes: bool,
) -> Result<PhaseSpec, ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| located(file, text, span, m);
    let Some(scope) = p.scope.as_ref().map(|s| *s.get_ref()) else {
        return Err(at(p.id.span(), format!("{id}: no `scope`")));
    };
    if scope == Scope::Together {
        return Err(at(
            p.scope.as_ref().map_or(p.id.span(), |s| s.span()),
            format!("{id}: scope \"together\" is written as `together = [\"T4\", \"S2\"]`"),
        ));
    }
    let Some(parser) = p.parser else {
        return Err(at(p.id.span(), format!("{id}: no `parser`")));
    };
    let Some(command) = &p.command else {
        return Err(at(p.id.span(), format!("{id}: no `command`")));
    };
    if let Some(c) = p.compare.first() {
        return Err(at(
            c.span(),
            format!("{id}: `compare` is for `together` phases"),
        ));
    }
    let mut templates = vec![command];
    match (&p.server, scope) {
        (Some(server), Scope::Pairs) => templates.push(server),
        (None, Scope::Pairs) => {
            return Err(at(
                p.id.span(),
                format!("{id}: scope \"pairs\" needs a `server` command"),
            ));
        }
        (Some(server), _) => {
            return Err(at(
                server.span(),
                format!("{id}: `server` is for scope \"pairs\" only"),
            ));
        }
        (None, _) => {}
    }
    for template in templates {
        let names =
            placeholders(template.get_ref()).map_err(|m| at(template.span(), m.to_string()))?;
        for name in names {
            if !BUILTIN_PLACEHOLDERS.contains(&name.as_str()) && !vars.contains_key(&name) {
                return Err(at(
                    template.span(),
                    format!(
                        "{id}: {{{name}}} is neither a built-in placeholder nor a key of [vars]"
                    ),
                ));
            }
        }
    }
    for gate in &p.gates {
        check_gate_figure(file, text, gate)?;
        check_yields(&id, &p.gates, gate).map_err(|m| at(gate.span(), m))?;
        if matches!(gate.get_ref(), Gate::Together { .. }) {
            return Err(at(
                gate.span(),
                format!("{id}: a `together` gate belongs to a phase with `together = [...]`"),
            ));
        }
    }
    let timeout =
        crate::config::inventory::duration(file, text, &p.timeout, Duration::from_secs(3600))?;
    let gates: Vec<Gate> = p.gates.iter().map(|g| g.get_ref().clone()).collect();
    let gate = if let Some(words) = &p.gate {
        words.clone()
    } else if gates.is_empty() {
        "exit status 0, no failure lines".to_string()
    } else {
        gates
            .iter()
            .map(Gate::describe)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let drill = drill_of(file, text, &id, p.drill.as_ref())?;
    let launcher = p.launcher.as_ref().map_or(Launcher::Ssh, |l| *l.get_ref());
    if let Some(l) = p
        .launcher
        .as_ref()
        .filter(|_| launcher == Launcher::Kubernetes)
    {
        if !has_kubernetes {
            return Err(at(
                l.span(),
                format!(
                    "{id}: launcher \"kubernetes\" needs a [kubernetes] section with the image"
                ),
            ));
        }
        if !matches!(scope, Scope::EachNode | Scope::EachGpu | Scope::Launcher) {
            return Err(at(
                l.span(),
                format!(
                    "{id}: a Kubernetes Job runs on one node; scope \"{}\" needs the nodes to reach each other (mpirun: use the launcher ssh, or the site's MPI operator)",
                    scope.label()
                ),
            ));
        }
        if drill.is_some() {
            return Err(at(
                l.span(),
                format!("{id}: drills run over SSH, not as Kubernetes Jobs"),
            ));
        }
    }
    Ok(PhaseSpec {
        id,
        title: p.title.clone(),
        scope,
        proves: p.proves.clone(),
        gate,
        command: command.get_ref().trim().to_string(),
        server: p
            .server
            .as_ref()
            .map(|s| s.get_ref().trim().to_string())
            .unwrap_or_default(),
        parser,
        timeout,
        needs: p.needs.iter().map(|n| n.get_ref().clone()).collect(),
        requires: p.requires.iter().map(|n| n.get_ref().clone()).collect(),
        gates,
        together: Vec::new(),
        compare: Vec::new(),
        drill,
        launcher,
    })
}

/// A phase's drill, checked: series it can watch, at least one step, sane percentages.
fn drill_of(
    file: &str,
    text: &str,
    id: &str,
    d: Option<&toml::Spanned<DrillFile>>,
) -> Result<Option<drill::Drill>, ConfigError> {
    use drill::{Drill, DrillStep, WATCHABLE, watchable};
    let Some(spanned) = d else { return Ok(None) };
    let at = |span: std::ops::Range<usize>, m: String| ConfigError::at(file, text, Some(span), m);
    let d = spanned.get_ref();
    if d.watch.is_empty() {
        return Err(at(
            spanned.span(),
            format!("{id}: a drill watches at least one series"),
        ));
    }
    for w in &d.watch {
        if !watchable(w.get_ref()) {
            return Err(at(
                w.span(),
                format!(
                    "{id}: a drill cannot time {:?}; it watches series that arrive while the load runs: {} (busbw_ + collective)",
                    w.get_ref(),
                    WATCHABLE.join(", ")
                ),
            ));
        }
    }
    if d.steps.is_empty() {
        return Err(at(
            spanned.span(),
            format!("{id}: a drill has at least one step"),
        ));
    }
    let pct = d.recover_pct.unwrap_or(90.0);
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(at(
            spanned.span(),
            format!("{id}: recover_pct {pct} is not in (0, 100]"),
        ));
    }
    let mut steps = Vec::new();
    for s in &d.steps {
        if s.ask.trim().is_empty() {
            return Err(at(
                spanned.span(),
                format!("{id}: a drill step asks something"),
            ));
        }
        if let Some(run) = &s.run {
            let names = placeholders(run.get_ref()).map_err(|m| at(run.span(), m.to_string()))?;
            if let Some(n) = names
                .iter()
                .find(|n| !BUILTIN_PLACEHOLDERS.contains(&n.as_str()))
            {
                return Err(at(
                    run.span(),
                    format!(
                        "{id}: a drill step's `run` may use the built-in placeholders only, not {{{n}}}"
                    ),
                ));
            }
        }
        steps.push(DrillStep {
            run: s
                .run
                .as_ref()
                .map(|r| r.get_ref().trim().to_string())
                .filter(|r| !r.is_empty()),
            ask: s.ask.trim().to_string(),
            within: crate::config::inventory::duration(
                file,
                text,
                &s.within,
                Duration::from_secs(300),
            )?,
        });
    }
    Ok(Some(Drill {
        watch: d.watch.iter().map(|w| w.get_ref().clone()).collect(),
        steady: crate::config::inventory::duration(file, text, &d.steady, Duration::from_secs(60))?,
        settle: crate::config::inventory::duration(file, text, &d.settle, Duration::from_secs(30))?,
        recover_pct: pct,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::figures::known_figure;
    use crate::plan::default_plan;

    #[test]
    fn mistakes_are_located() {
        let base = "[vars]\nprefix = \"\"\n[[phase]]\nid = \"T1\"\ntitle = \"t\"\nscope = \"each-node\"\nparser = \"none\"\n";
        let e = Plan::parse("p.toml", &format!("{base}command = \"run {{nope}}\"\n")).unwrap_err();
        assert_eq!(e.line, Some(8), "{e}");
        assert!(e.message.contains("{nope}"), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\nneeds = [\"T0\"]\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("not an earlier phase"), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\ngates = [{{ kind = \"min\", figure = \"tflops\", value = 1 }}]\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("unknown figure"), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\ngates = [{{ kind = \"no-finding\", rule = \"nvlink-error\" }}]\n"),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(9), "{e}");
        assert!(
            e.message.contains("unknown triage rule \"nvlink-error\""),
            "{e}"
        );
        assert!(known_figure("s3_ttfb_p99_ms_c32") && known_figure("busbw_all_gather"));
        assert!(!known_figure("s3_ttfb_p99_ms_c") && !known_figure("s3_ttfb_p99_ms_cx"));
        assert!(!known_figure("s3_gb_per_sec"));
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\ntimeout = \"5y\"\n"),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(9), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\n")
                .replace("prefix = \"\"", "prefix = \"run {prefix}\""),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("[vars] prefix: {prefix}"), "{e}");
        let e = Plan::parse("p.toml", &base.replace("each-node", "everywhere")).unwrap_err();
        assert_eq!(e.line, Some(6), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\n").replace("each-node", "pairs"),
        )
        .unwrap_err();
        assert!(e.message.contains("needs a `server` command"), "{e}");
        let e = Plan::parse(
            "p.toml",
            &format!("{base}command = \"x\"\nserver = \"y\"\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("for scope \"pairs\" only"), "{e}");
    }

    #[test]
    fn drills_watch_live_series_and_ask_at_least_once() {
        let d1 = default_plan().find("D1").expect("D1 in the shipped plan");
        let drill = d1.drill.as_ref().expect("a drill");
        assert_eq!(drill.watch, ["busbw_all_reduce"]);
        assert_eq!(drill.steps.len(), 2);
        assert_eq!(drill.steps[0].ask, "Pull one leaf-spine cable now");
        assert_eq!(drill.steps[1].within, Duration::from_secs(300));
        assert_eq!(
            (drill.steady, drill.recover_pct),
            (Duration::from_secs(60), 90.0)
        );
        assert!(
            drill.steps.iter().all(|s| s.run.is_none()),
            "D1 asks the operator"
        );
        let d2 = default_plan()
            .find("D2")
            .and_then(|p| p.drill.clone())
            .expect("D2");
        assert_eq!(d2.watch, ["tokens_per_sec"]);
        assert_eq!(
            d2.steps[0].run.as_deref(),
            Some("pkill -KILL -f '^[^ ]*python[^ ]* .*train_synthetic[.]py'")
        );
        // The pattern takes the job's python processes, never the shells around them.
        let re = |cmdline: &str| {
            std::process::Command::new("sh")
                .args([
                    "-c",
                    "printf '%s\\n' \"$1\" | grep -Eq '^[^ ]*python[^ ]* .*train_synthetic[.]py'",
                    "t",
                    cmdline,
                ])
                .status()
                .is_ok_and(|s| s.success())
        };
        assert!(re(
            "/usr/bin/python3 -u /root/w/train_synthetic.py --steps 9"
        ));
        assert!(re(
            "python3 -m torch.distributed.run --standalone train_synthetic.py"
        ));
        assert!(!re(
            "sh -c while :; do python3 -m torch.distributed.run train_synthetic.py; done"
        ));
        assert!(!re(
            "sh -c pkill -KILL -f '^[^ ]*python[^ ]* .*train_synthetic[.]py'"
        ));
        let base = "[[phase]]\nid = \"D\"\ntitle = \"d\"\nscope = \"each-node\"\nparser = \"nccl-tests\"\ncommand = \"x\"\n[phase.drill]\n";
        let step = "[[phase.drill.steps]]\nask = \"pull it\"\n";
        let ok = Plan::parse(
            "p.toml",
            &format!("{base}watch = [\"busbw_all_gather\"]\n{step}"),
        )
        .expect("parses");
        let d = ok.find("D").and_then(|p| p.drill.clone()).expect("drill");
        assert_eq!(
            (d.settle, d.steps[0].within),
            (Duration::from_secs(30), Duration::from_secs(300))
        );
        for (text, says) in [
            (
                format!("{base}watch = [\"tflops_bf16\"]\n{step}"),
                "cannot time \"tflops_bf16\"",
            ),
            (format!("{base}watch = []\n{step}"), "at least one series"),
            (
                format!("{base}watch = [\"s3_gb_per_s\"]\nsteps = []\n"),
                "at least one step",
            ),
            (
                format!("{base}watch = [\"s3_gb_per_s\"]\nrecover_pct = 150\n{step}"),
                "not in (0, 100]",
            ),
            (
                format!("{base}watch = [\"s3_gb_per_s\"]\nsteady = \"soon\"\n{step}"),
                "",
            ),
        ] {
            let e = Plan::parse("p.toml", &text).unwrap_err();
            assert!(e.message.contains(says), "{text}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
    }

    #[test]
    fn kubernetes_phases_need_the_section_and_a_one_node_scope() {
        let phase = |scope: &str, extra: &str| {
            format!(
                "[[phase]]\nid = \"K1\"\ntitle = \"k\"\nscope = \"{scope}\"\nparser = \"none\"\n\
                 launcher = \"kubernetes\"\ncommand = \"true\"\n{extra}"
            )
        };
        let section =
            "[kubernetes]\nimage = \"nvcr.io/nvidia/pytorch:25.01-py3\"\nkeep_finished = \"2h\"\n";
        let plan = Plan::parse("p.toml", &format!("{section}{}", phase("each-node", "")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.phases[0].launcher, Launcher::Kubernetes);
        let k = plan.kubernetes.expect("settings");
        assert_eq!((k.namespace.as_str(), k.keep_finished_s), ("default", 7200));
        for (text, says) in [
            (phase("each-node", ""), "needs a [kubernetes] section"),
            (
                format!("{section}{}", phase("mpirun", "")),
                "runs on one node",
            ),
            (
                format!("{section}{}", phase("pairs", "server = \"true\"\n")),
                "runs on one node",
            ),
            (
                "[kubernetes]\nimage = \" \"\n".to_string() + &phase("each-node", ""),
                "image is empty",
            ),
        ] {
            let e = Plan::parse("p.toml", &text).expect_err(&text);
            assert!(e.message.contains(says), "{text}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
    }
}
