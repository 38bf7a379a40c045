//! The plan: which phases run, where, with which command, read by which parser and judged by
//! which gates. The site's T1–T8 ladder is `plans/default.toml`, embedded; a site edits a copy
//! (`burnin init` writes it) and points burnin.toml at it. Two stages as every config file
//! here: a serde shape with `deny_unknown_fields`, then `resolve` into runtime types with errors
//! that name file, line and column.

pub mod drill;
pub mod gates;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::parsers::ParserKind;

/// Where a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Once on every node, at the same time.
    EachNode,
    /// Once on every node, judged per GPU (the workload measures each GPU).
    EachGpu,
    /// Once, on the first node.
    Launcher,
    /// Once, on the first node, reaching all nodes through mpirun.
    Mpirun,
    /// Node pairs in a ring: a `server` on every node, then on every node a client of the next
    /// one (`{peer}`), e.g. perftest per link.
    Pairs,
    /// Earlier phases of the plan run at the same time (`together = [...]`), compared with each
    /// of them alone. Given by `together`, never written as a scope.
    Together,
}

impl Scope {
    /// Words for the phases pane.
    pub fn label(self) -> &'static str {
        match self {
            Scope::EachNode => "each node",
            Scope::EachGpu => "each GPU",
            Scope::Launcher => "launcher",
            Scope::Mpirun => "all nodes",
            Scope::Pairs => "node pairs",
            Scope::Together => "together",
        }
    }
}

/// One condition a phase must meet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Gate {
    /// Every sanity check held; an unknown one warns.
    Checks,
    /// nccl-tests found no wrong element; unvalidated rows warn.
    ZeroWrong,
    /// Every subject's figure is at least `value`.
    Min {
        /// Figure name.
        figure: String,
        /// Lower bound.
        value: f64,
    },
    /// Every subject's figure is at most `value`.
    Max {
        /// Figure name.
        figure: String,
        /// Upper bound.
        value: f64,
    },
    /// At least `pct` % of the saved baseline.
    Baseline {
        /// Figure name.
        figure: String,
        /// Percent.
        pct: f64,
    },
    /// No subject below `pct` % of its peers' median.
    Peers {
        /// Figure name.
        figure: String,
        /// Percent.
        pct: f64,
    },
    /// The output contains `text` on every node that ran the phase.
    OutputContains {
        /// Text to find.
        text: String,
        /// Where the output has no line with this text at all, the tool did not print what
        /// `text` would be found in (e.g. `Using network`: NCCL ran below INFO level, or the log is a tail), so a node
        /// without `text` is not judged (WARN) rather than failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evidence: Option<String>,
    },
    /// Loss finite throughout and lower at the end than at the start.
    LossFalling,
    /// Loss finite throughout (data that cannot be learned, e.g. random shards in T8).
    LossFinite,
    /// No Xid reached the telemetry from the phase's nodes while it ran (unwatched nodes warn).
    NoXid,
    /// The telemetry's triage raised no `rule` finding on the phase's nodes while it ran
    /// (e.g. `nvlink-errors` during the NVLink phase; unwatched nodes warn).
    NoFinding {
        /// A triage rule's name ([`crate::model::finding::RULES`]).
        rule: String,
    },
    /// Tokens/s of the full job ≥ `pct` % of (1-GPU tokens/s × GPUs), per node.
    Scaling {
        /// Percent.
        pct: f64,
    },
    /// In a `together` phase: run beside the others, the figure is at most `worse_pct` % worse
    /// than the same member's run alone, for every subject (a bandwidth lower, a latency
    /// higher: [`lower_is_better`] says which way is worse).
    Together {
        /// Figure name.
        figure: String,
        /// Percent it may worsen.
        worse_pct: f64,
    },
}

use crate::model::figures::figure_names;
pub use crate::model::figures::{Better, FIGURES, known_figure, lower_is_better, unit_of};

impl Gate {
    /// The texts an `output-contains` gate looks for in the output (its text and its
    /// evidence), for the readers that note which nodes showed them.
    pub fn output_texts(&self) -> Vec<String> {
        match self {
            Gate::OutputContains { text, evidence } => std::iter::once(text.clone())
                .chain(evidence.clone())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The figure the gate reads, if it reads one.
    pub fn figure(&self) -> Option<&str> {
        match self {
            Gate::Min { figure, .. }
            | Gate::Max { figure, .. }
            | Gate::Baseline { figure, .. }
            | Gate::Peers { figure, .. }
            | Gate::Together { figure, .. } => Some(figure),
            Gate::Scaling { .. } => Some("scaling_pct"),
            _ => None,
        }
    }

    /// The gate in words, for the phases pane and reports.
    pub fn describe(&self) -> String {
        match self {
            Gate::Checks => "all checks ok".into(),
            Gate::ZeroWrong => "#wrong = 0".into(),
            Gate::Min { figure, value } => format!("{figure} >= {value}"),
            Gate::Max { figure, value } => format!("{figure} <= {value}"),
            Gate::Baseline { figure, pct } => format!("{figure} >= {pct} % of baseline"),
            Gate::Peers { figure, pct } => format!("{figure} >= {pct} % of peer median"),
            Gate::OutputContains { text, .. } => format!("output shows {text:?}"),
            Gate::LossFalling => "loss finite and falling".into(),
            Gate::LossFinite => "loss finite".into(),
            Gate::NoXid => "no Xid during the phase".into(),
            Gate::NoFinding { rule } => format!("no {rule} finding during the phase"),
            Gate::Scaling { pct } => format!("1 -> N GPU scaling >= {pct} %"),
            Gate::Together { figure, worse_pct } => {
                format!("{figure} at most {worse_pct} % worse together than alone")
            }
        }
    }

    /// Whether the gate reads figures (the members of a `together` phase keep only the gates
    /// that do not: their figures are judged against their own run alone instead).
    pub fn reads_figures(&self) -> bool {
        self.figure().is_some()
    }
}

/// How a phase's command reaches a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Over the node's transport (SSH, or this host for local and sim nodes).
    #[default]
    Ssh,
    /// As a Kubernetes Job per node, through the site's kubectl (`[kubernetes]` of the plan).
    Kubernetes,
}

/// One phase of the plan, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSpec {
    /// Short id, e.g. "T4".
    pub id: String,
    /// Title.
    pub title: String,
    /// Where it runs.
    pub scope: Scope,
    /// What passing proves.
    pub proves: String,
    /// The gates in words.
    pub gate: String,
    /// Shell text run on the node; empty: the site has not said what to run (SKIPPED).
    pub command: String,
    /// For `pairs`: the server side, started on every node before the clients.
    pub server: String,
    /// Which parser reads the output.
    pub parser: ParserKind,
    /// Longest it may run before it is stopped and recorded TIMEOUT.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Phases that must have passed (or warned) first.
    pub needs: Vec<String>,
    /// `[vars]` that must be non-empty, else the phase is SKIPPED and says which.
    pub requires: Vec<String>,
    /// The gates.
    pub gates: Vec<Gate>,
    /// For scope `together`: the earlier phases run at the same time.
    pub together: Vec<String>,
    /// For scope `together`: figures shown alone / together / change beside the gated ones.
    pub compare: Vec<String>,
    /// An operator drill around the load this phase runs (the load runs until burnin stops it).
    pub drill: Option<drill::Drill>,
    /// How the command reaches the nodes.
    pub launcher: Launcher,
}

/// Durations as seconds in JSON (the plan's specs, drills).
pub(crate) mod secs {
    /// Seconds, fractional.
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// A resolved plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where it came from (`<embedded>/default.toml` for the shipped one).
    pub file: String,
    /// Phases in order.
    pub phases: Vec<Arc<PhaseSpec>>,
    /// Site text for templates.
    pub vars: BTreeMap<String, String>,
    /// Run directories on the nodes (`~/` allowed).
    pub remote_dir: String,
    /// TERM → KILL grace when stopping a phase.
    pub grace: Duration,
    /// The file's text as parsed: the run record keeps a copy, so a report or a replay
    /// elsewhere reads the plan the run used.
    pub text: String,
    /// `[kubernetes]`: the cluster and image for phases with `launcher = "kubernetes"`.
    pub kubernetes: Option<KubeSettings>,
}

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
struct PhaseFile {
    id: toml::Spanned<String>,
    title: String,
    scope: Option<toml::Spanned<Scope>>,
    #[serde(default)]
    proves: String,
    /// The gates in words for the console and reports (default: made from `gates`).
    gate: Option<String>,
    parser: Option<ParserKind>,
    timeout: Option<toml::Spanned<String>>,
    #[serde(default)]
    needs: Vec<toml::Spanned<String>>,
    #[serde(default)]
    requires: Vec<toml::Spanned<String>>,
    #[serde(default)]
    gates: Vec<toml::Spanned<Gate>>,
    command: Option<toml::Spanned<String>>,
    server: Option<toml::Spanned<String>>,
    /// Earlier phases to run at the same time (this phase then has no command of its own).
    #[serde(default)]
    together: Vec<toml::Spanned<String>>,
    /// With `together`: more figures to show alone / together / change.
    #[serde(default)]
    compare: Vec<toml::Spanned<String>>,
    /// An operator drill around this phase's load.
    drill: Option<toml::Spanned<DrillFile>>,
    /// `ssh` (default) or `kubernetes`.
    launcher: Option<toml::Spanned<Launcher>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DrillFile {
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

/// Placeholders the runner fills in for every command.
pub const BUILTIN_PLACEHOLDERS: &[&str] = &[
    "node",
    "gpus",
    "run",
    "dir",
    "workloads",
    "hosts",
    "hosts_slots",
    "np",
    "nnodes",
    "nodelist",
    "hostfile",
    "peer",
    "burnin",
    "doctor_probe",
];

/// What is wrong with a command template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` that no `}` closes.
    #[error("a '{{' without its '}}' (write {{{{ for a literal brace)")]
    Unclosed,
    /// `{…}` around something that is no placeholder name (shell's `awk '{print $1}'`).
    #[error("'{{{0}}}' is not a placeholder (write {{{{ for a literal brace)")]
    NotAPlaceholder(String),
    /// A placeholder with no value (the plan's loader checks them first).
    #[error("no value for {{{0}}}")]
    NoValue(String),
}

/// The `{name}`s in a template, in order. `{{` and `}}` are literal braces.
pub fn placeholders(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|x| x.1) == Some('{') => {
                chars.next();
            }
            '}' if chars.peek().map(|x| x.1) == Some('}') => {
                chars.next();
            }
            '{' => {
                let rest = &template[i + 1..];
                let Some(end) = rest.find('}') else {
                    return Err(TemplateError::Unclosed);
                };
                let name = &rest[..end];
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(TemplateError::NotAPlaceholder(name.to_string()));
                }
                out.push(name.to_string());
                for _ in 0..=name.len() {
                    chars.next();
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Fill a template. Every placeholder must be in `values` (the plan's loader checked that).
pub fn render(template: &str, values: &BTreeMap<String, String>) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
        } else {
            let end = tail.find('}').ok_or(TemplateError::Unclosed)?;
            let name = &tail[1..end];
            let v = values
                .get(name)
                .ok_or_else(|| TemplateError::NoValue(name.to_string()))?;
            out.push_str(v);
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The shipped plan's text (what `burnin init` writes as plan.toml).
pub const DEFAULT_PLAN_TEXT: &str = include_str!("../../plans/default.toml");

static DEFAULT: LazyLock<Plan> = LazyLock::new(|| {
    Plan::parse("<embedded>/default.toml", DEFAULT_PLAN_TEXT)
        .unwrap_or_else(|e| panic!("the embedded plan must parse (a test checks it): {e}"))
});

/// The shipped T1–T8 plan.
pub fn default_plan() -> &'static Plan {
    &DEFAULT
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

/// The gate's figure must be one burnin knows, and its numbers finite and ones a gate can mean.
fn check_gate_figure(
    file: &str,
    text: &str,
    gate: &toml::Spanned<Gate>,
) -> Result<(), ConfigError> {
    let bad = |m: String| Err(ConfigError::at(file, text, Some(gate.span()), m));
    // A NaN bound compares false both ways: it would pass any figure. Every number is finite,
    // and a percentage is one a gate can mean.
    match gate.get_ref() {
        Gate::Min { value, .. } | Gate::Max { value, .. } if !value.is_finite() => {
            return bad(format!("gate value {value} is not a finite number"));
        }
        Gate::Baseline { pct, .. } | Gate::Peers { pct, .. } | Gate::Scaling { pct }
            if !(pct.is_finite() && *pct > 0.0 && *pct <= 1000.0) =>
        {
            return bad(format!("gate pct {pct} must be above 0 and at most 1000"));
        }
        Gate::Together { worse_pct, .. }
            if !(worse_pct.is_finite() && (0.0..=1000.0).contains(worse_pct)) =>
        {
            return bad(format!("gate worse_pct {worse_pct} must be 0 to 1000"));
        }
        // A misspelt rule would never fire: a gate that cannot fail.
        Gate::NoFinding { rule } if !crate::model::finding::RULES.contains(&rule.as_str()) => {
            return bad(format!(
                "unknown triage rule {:?}; known: {}",
                crate::model::excerpt(rule),
                crate::model::finding::RULES.join(", ")
            ));
        }
        _ => {}
    }
    match gate.get_ref().figure() {
        Some(figure) if !known_figure(figure) => bad(format!(
            "unknown figure {figure:?}; known: {}",
            figure_names()
        )),
        _ => Ok(()),
    }
}

/// A phase of earlier phases run at the same time: no command, scope or parser of its own;
/// it needs its members (they give the "alone" figures) and is judged by `together` gates
/// (and `no-xid`).
fn together_phase(
    file: &str,
    text: &str,
    id: String,
    p: &PhaseFile,
    earlier: &[Arc<PhaseSpec>],
) -> Result<PhaseSpec, ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| ConfigError::at(file, text, Some(span), m);
    for (given, what) in [
        (p.command.as_ref().map(|c| c.span()), "command"),
        (p.server.as_ref().map(|c| c.span()), "server"),
        (p.scope.as_ref().map(|c| c.span()), "scope"),
    ] {
        if let Some(span) = given {
            return Err(at(
                span,
                format!("{id}: a `together` phase runs its members' commands; it has no `{what}`"),
            ));
        }
    }
    if p.parser.is_some() {
        return Err(at(
            p.id.span(),
            format!("{id}: a `together` phase reads with its members' parsers; it has no `parser`"),
        ));
    }
    if let Some(d) = &p.drill {
        return Err(at(
            d.span(),
            format!("{id}: a drill runs around one phase's load, not a `together` phase"),
        ));
    }
    if let Some(r) = p.requires.first() {
        return Err(at(
            r.span(),
            format!("{id}: `requires` belongs to the members of a `together` phase"),
        ));
    }
    let mut members: Vec<String> = Vec::new();
    for m in &p.together {
        let name = m.get_ref().trim().to_string();
        match earlier.iter().find(|q| q.id == name) {
            None => {
                return Err(at(
                    m.span(),
                    format!("{id}: together with {name:?}, which is not an earlier phase"),
                ));
            }
            Some(q) if q.scope == Scope::Together => {
                return Err(at(
                    m.span(),
                    format!("{id}: {name} is itself a `together` phase"),
                ));
            }
            Some(_) if members.contains(&name) => {
                return Err(at(m.span(), format!("{id}: {name} is listed twice")));
            }
            Some(_) => members.push(name),
        }
    }
    if members.len() < 2 {
        return Err(at(
            p.id.span(),
            format!("{id}: `together` names at least two phases"),
        ));
    }
    for gate in &p.gates {
        check_gate_figure(file, text, gate)?;
        if !matches!(gate.get_ref(), Gate::Together { .. } | Gate::NoXid) {
            return Err(at(
                gate.span(),
                format!(
                    "{id}: a `together` phase is judged by `together` and `no-xid` gates (its members' own gates that read no figure apply to them as well)"
                ),
            ));
        }
    }
    for c in &p.compare {
        if !known_figure(c.get_ref()) {
            return Err(at(
                c.span(),
                format!(
                    "unknown figure {:?}; known: {}",
                    c.get_ref(),
                    figure_names()
                ),
            ));
        }
    }
    let gates: Vec<Gate> = p.gates.iter().map(|g| g.get_ref().clone()).collect();
    let gate = p.gate.clone().unwrap_or_else(|| {
        if gates.is_empty() {
            format!(
                "{} each pass beside the others (figures compared, not gated)",
                members.join(", ")
            )
        } else {
            gates
                .iter()
                .map(Gate::describe)
                .collect::<Vec<_>>()
                .join("; ")
        }
    });
    if let Some(t) = &p.timeout {
        return Err(at(
            t.span(),
            format!("{id}: each member of a `together` phase keeps its own `timeout`"),
        ));
    }
    // What the console shows: the slowest member's limit.
    let timeout = earlier
        .iter()
        .filter(|q| members.contains(&q.id))
        .map(|q| q.timeout)
        .max()
        .unwrap_or(Duration::from_secs(3600));
    let mut needs: Vec<String> = p.needs.iter().map(|n| n.get_ref().clone()).collect();
    for m in &members {
        if !needs.contains(m) {
            needs.push(m.clone());
        }
    }
    Ok(PhaseSpec {
        id,
        title: p.title.clone(),
        scope: Scope::Together,
        proves: p.proves.clone(),
        gate,
        command: String::new(),
        server: String::new(),
        parser: ParserKind::None,
        timeout,
        needs,
        requires: Vec::new(),
        gates,
        together: members,
        compare: p.compare.iter().map(|c| c.get_ref().clone()).collect(),
        drill: None,
        launcher: Launcher::Ssh,
    })
}

impl Plan {
    /// Parse and check a plan file.
    pub fn parse(file: &str, text: &str) -> Result<Plan, ConfigError> {
        let shape: PlanFile =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(file, text, &e))?;
        let at =
            |span: std::ops::Range<usize>, m: String| ConfigError::at(file, text, Some(span), m);
        // A var may use the built-in placeholders (a container mount of {workloads}), not
        // other vars: the runner fills vars in once, with the built-ins only.
        for (key, value) in &shape.vars {
            let names =
                placeholders(value.get_ref()).map_err(|m| at(value.span(), m.to_string()))?;
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
        let kubernetes = match &shape.kubernetes {
            None => None,
            Some(k) => {
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
                Some(KubeSettings {
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
        };
        let mut phases: Vec<Arc<PhaseSpec>> = Vec::new();
        let mut ids = BTreeSet::new();
        for entry in &shape.phase {
            let p = entry.get_ref();
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
                if !phases.iter().any(|q| q.id == *need.get_ref()) {
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
                if !shape.vars.contains_key(r.get_ref()) {
                    return Err(at(
                        r.span(),
                        format!("{id} requires {:?}, which is not in [vars]", r.get_ref()),
                    ));
                }
            }
            if !p.together.is_empty() {
                if let Some(l) = &p.launcher {
                    return Err(at(
                        l.span(),
                        format!("{id}: a `together` phase runs its members as they launch"),
                    ));
                }
                phases.push(Arc::new(together_phase(file, text, id, p, &phases)?));
                continue;
            }
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
                let names = placeholders(template.get_ref())
                    .map_err(|m| at(template.span(), m.to_string()))?;
                for name in names {
                    if !BUILTIN_PLACEHOLDERS.contains(&name.as_str())
                        && !shape.vars.contains_key(&name)
                    {
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
                if matches!(gate.get_ref(), Gate::Together { .. }) {
                    return Err(at(
                        gate.span(),
                        format!(
                            "{id}: a `together` gate belongs to a phase with `together = [...]`"
                        ),
                    ));
                }
            }
            let timeout = crate::config::inventory::duration(
                file,
                text,
                &p.timeout,
                Duration::from_secs(3600),
            )?;
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
                if kubernetes.is_none() {
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
            phases.push(Arc::new(PhaseSpec {
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
            }));
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

    /// A phase by id.
    pub fn find(&self, id: &str) -> Option<&Arc<PhaseSpec>> {
        self.phases.iter().find(|p| p.id == id)
    }
}

/// `[kubernetes]` of the plan, resolved: how to reach the cluster and what the Jobs run in.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KubeSettings {
    /// The kubectl to run (`kubectl`, or a path).
    pub kubectl: String,
    /// `--context`, when not the current one.
    pub context: Option<String>,
    /// Namespace of the Jobs.
    pub namespace: String,
    /// Container image the phase's command runs in.
    pub image: String,
    /// Extended resource name of a GPU.
    pub gpu_resource: String,
    /// Node label whose value is the node's name (`nodeSelector`).
    pub node_label: String,
    /// Service account of the pods, when not the namespace's default.
    pub service_account: Option<String>,
    /// Seconds a finished Job is kept for `kubectl logs` (`ttlSecondsAfterFinished`).
    pub keep_finished_s: u64,
}

impl Default for KubeSettings {
    fn default() -> Self {
        Self {
            kubectl: "kubectl".into(),
            context: None,
            namespace: "default".into(),
            image: String::new(),
            gpu_resource: "nvidia.com/gpu".into(),
            node_label: "kubernetes.io/hostname".into(),
            service_account: None,
            keep_finished_s: 3600,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            text.contains("cufile stats: none (")
                && text.contains("has no profile.cufile_stats key"),
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

    #[test]
    fn placeholders_and_literal_braces() {
        assert_eq!(
            placeholders("a {node} ${{HOME}} {gpus}").unwrap(),
            ["node", "gpus"]
        );
        assert_eq!(
            placeholders("awk '{print $1}'"),
            Err(TemplateError::NotAPlaceholder("print $1".into()))
        );
        assert_eq!(
            TemplateError::NotAPlaceholder("print $1".into()).to_string(),
            "'{print $1}' is not a placeholder (write {{ for a literal brace)"
        );
        assert_eq!(placeholders("x {node"), Err(TemplateError::Unclosed));
        assert_eq!(
            render("{gpus}", &BTreeMap::new()),
            Err(TemplateError::NoValue("gpus".into()))
        );
        assert_eq!(
            TemplateError::NoValue("gpus".into()).to_string(),
            "no value for {gpus}"
        );
        let v: BTreeMap<String, String> = [("node".to_string(), "g1".to_string())]
            .into_iter()
            .collect();
        assert_eq!(render("x {node} ${{A}}", &v).unwrap(), "x g1 ${A}");
        assert!(render("{nope}", &v).is_err());
    }

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
    fn together_phases_name_earlier_phases_and_are_judged_by_together_gates() {
        let c1 = default_plan().find("C1").expect("C1 in the shipped plan");
        assert_eq!(c1.scope, Scope::Together);
        assert_eq!(c1.together, ["T7", "S2"]);
        assert!(c1.command.is_empty());
        assert!(c1.needs.contains(&"T7".to_string()) && c1.needs.contains(&"S2".to_string()));
        // The slowest member's limit is what the console shows.
        assert_eq!(c1.timeout, Duration::from_secs(30 * 60));
        assert!(
            c1.gate
                .contains("busbw_all_reduce at most 10 % worse together than alone")
        );

        let base = "[[phase]]\nid = \"A\"\ntitle = \"a\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"x\"\n[[phase]]\nid = \"B\"\ntitle = \"b\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"y\"\n[[phase]]\nid = \"G\"\ntitle = \"g\"\n";
        let ok = Plan::parse("p.toml", &format!("{base}together = [\"A\", \"B\"]\ngates = [{{ kind = \"together\", figure = \"step_time_ms\", worse_pct = 5 }}]\n")).expect("parses");
        let g = ok.find("G").expect("G");
        assert_eq!(
            (g.scope, g.together.len(), g.needs.len()),
            (Scope::Together, 2, 2)
        );
        for (extra, says, line) in [
            ("together = [\"A\"]\n", "at least two", 14),
            ("together = [\"A\", \"Z\"]\n", "not an earlier phase", 16),
            ("together = [\"A\", \"A\"]\n", "listed twice", 16),
            (
                "together = [\"A\", \"B\"]\ncommand = \"z\"\n",
                "no `command`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\nscope = \"each-node\"\n",
                "no `scope`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ntimeout = \"5m\"\n",
                "own `timeout`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ngates = [{ kind = \"min\", figure = \"step_time_ms\", value = 1 }]\n",
                "judged by `together` and `no-xid`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ncompare = [\"nope\"]\n",
                "unknown figure",
                17,
            ),
            (
                "scope = \"together\"\nparser = \"none\"\ncommand = \"x\"\n",
                "written as `together",
                16,
            ),
        ] {
            let e = Plan::parse("p.toml", &format!("{base}{extra}")).unwrap_err();
            assert!(e.message.contains(says), "{extra}: {e}");
            assert_eq!(e.line, Some(line), "{extra}: {e}");
        }
        // A together gate on an ordinary phase is a mistake, and so is `compare`.
        let e = Plan::parse(
            "p.toml",
            &base.replace("command = \"y\"", "command = \"y\"\ngates = [{ kind = \"together\", figure = \"step_time_ms\", worse_pct = 5 }]"),
        )
        .unwrap_err();
        assert!(
            e.message.contains("belongs to a phase with `together"),
            "{e}"
        );
        assert!(lower_is_better("s3_ttfb_p99_ms_c32") && lower_is_better("data_wait_pct"));
        assert!(!lower_is_better("busbw_all_reduce") && !lower_is_better("s3_gb_per_s"));
        assert!(!lower_is_better("s3_ttfb_p99_ms_c"));
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
