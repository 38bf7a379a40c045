//! burnin.toml: the nodes to watch and how to reach them. Two stages, as for every config file:
//! a serde shape with `deny_unknown_fields`, then `resolve()` into runtime types (host ranges
//! expanded, targets validated, defaults applied), with errors naming file, line and column.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::ConfigError;
use crate::model::thresholds::Thresholds;
use crate::model::units::Period;

/// How burnin reaches a node's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `burnin agent` over SSH (NVML on the node; needs the binary there: `burnin deploy`).
    Agent,
    /// `nvidia-smi --query-gpu … -lms N` over SSH: nothing to install.
    Smi,
    /// This host, no SSH (the agent as a local child process).
    Local,
    /// The simulator as a local child process (`burnin agent --sim`).
    Sim,
    /// Telemetry from the site's Prometheus (`[prometheus]`: dcgm-exporter series, or burnin
    /// agents serving `--listen`); phases still reach the node over SSH.
    Prometheus,
}

impl Mode {
    /// Word used in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Agent => "agent",
            Mode::Smi => "smi",
            Mode::Local => "local",
            Mode::Sim => "sim",
            Mode::Prometheus => "prometheus",
        }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DefaultsFile {
    mode: Option<Mode>,
    gpus: Option<toml::Spanned<i64>>,
    interval: Option<toml::Spanned<String>>,
    connect_timeout: Option<toml::Spanned<String>>,
    agent_path: Option<String>,
    #[serde(default)]
    ssh_options: Vec<String>,
    #[serde(default)]
    agent_args: Vec<String>,
    max_connecting: Option<toml::Spanned<i64>>,
    nic_rate_gbps: Option<toml::Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    host: toml::Spanned<String>,
    /// A display name for a one-host entry (the host otherwise).
    name: Option<toml::Spanned<String>>,
    user: Option<String>,
    port: Option<u16>,
    identity: Option<String>,
    ssh_options: Option<Vec<String>>,
    gpus: Option<toml::Spanned<i64>>,
    mode: Option<Mode>,
    agent_args: Option<Vec<String>>,
    agent_path: Option<String>,
    nic_rate_gbps: Option<toml::Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryFile {
    /// The plan file, relative to this file.
    plan: Option<String>,
    #[serde(default)]
    defaults: DefaultsFile,
    #[serde(default)]
    node: Vec<toml::Spanned<NodeFile>>,
    #[serde(default)]
    triage: TriageFile,
    prometheus: Option<PrometheusFile>,
}

/// `[prometheus]`: the site's Prometheus server, for nodes in `prometheus` mode.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrometheusFile {
    url: toml::Spanned<String>,
    selector: Option<toml::Spanned<String>>,
    host_labels: Option<toml::Spanned<Vec<String>>>,
    bearer_token_file: Option<String>,
    basic_auth_user: Option<String>,
    basic_auth_password_file: Option<String>,
    ca_file: Option<String>,
    timeout: Option<toml::Spanned<String>>,
}

/// `[prometheus]`, resolved: where the site's Prometheus answers and how to ask it.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusSpec {
    /// Base URL of the server (`http://prom:9090`, or with a path prefix).
    pub url: String,
    /// Label matchers added to every query (`job="dcgm-exporter"`), without braces.
    pub selector: String,
    /// Labels that name a series' node, tried in order (dcgm-exporter: `Hostname`, newer
    /// releases `hostname`; Kubernetes relabelling often `node`).
    pub host_labels: Vec<String>,
    /// A file whose content is sent as the bearer token.
    pub bearer_token_file: Option<PathBuf>,
    /// Basic auth: user and the file holding the password.
    pub basic_auth: Option<(String, PathBuf)>,
    /// PEM bundle of the CAs to trust instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// Give up one query after this long.
    pub timeout: Duration,
}

/// dcgm-exporter's host label before and after it became lower case.
pub const DEFAULT_HOST_LABELS: [&str; 2] = ["Hostname", "hostname"];

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl PrometheusFile {
    fn resolve(&self, file: &str, text: &str) -> Result<PrometheusSpec, ConfigError> {
        let url = self.url.get_ref().trim().trim_end_matches('/').to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError::at(
                file,
                text,
                Some(self.url.span()),
                "[prometheus] url must start with http:// or https://",
            ));
        }
        // user:password@host: the url is quoted in every message about the server (status,
        // run, the record's events), so a password in it would be printed everywhere.
        let authority = url.split_once("://").map_or("", |(_, rest)| {
            rest.split(['/', '?', '#']).next().unwrap_or("")
        });
        if authority.contains('@') {
            return Err(ConfigError::at(
                file,
                text,
                Some(self.url.span()),
                "[prometheus] url carries a user or password (user:pass@host): give them as \
                 basic_auth_user and basic_auth_password_file, so no message quotes the password",
            ));
        }
        let selector = match &self.selector {
            None => String::new(),
            Some(s) if s.get_ref().contains(['{', '}']) => {
                return Err(ConfigError::at(
                    file,
                    text,
                    Some(s.span()),
                    "[prometheus] selector is label matchers without braces, e.g. job=\"dcgm\"",
                ));
            }
            Some(s) => s.get_ref().trim().trim_end_matches(',').to_string(),
        };
        let host_labels = match &self.host_labels {
            None => DEFAULT_HOST_LABELS.map(String::from).to_vec(),
            Some(l) if l.get_ref().is_empty() || !l.get_ref().iter().all(|x| is_label_name(x)) => {
                return Err(ConfigError::at(
                    file,
                    text,
                    Some(l.span()),
                    "[prometheus] host_labels must be label names, e.g. [\"Hostname\", \"hostname\"]",
                ));
            }
            Some(l) => l.get_ref().clone(),
        };
        let near = |p: &str| {
            let p = expand_home(p);
            match std::path::Path::new(file).parent() {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            }
        };
        let basic_auth = match (&self.basic_auth_user, &self.basic_auth_password_file) {
            (Some(u), Some(p)) => Some((u.clone(), near(p))),
            (None, None) => None,
            _ => {
                return Err(ConfigError::at(
                    file,
                    text,
                    Some(self.url.span()),
                    "[prometheus] basic auth needs both basic_auth_user and basic_auth_password_file",
                ));
            }
        };
        if basic_auth.is_some() && self.bearer_token_file.is_some() {
            return Err(ConfigError::at(
                file,
                text,
                Some(self.url.span()),
                "[prometheus] give a bearer token or basic auth, not both",
            ));
        }
        Ok(PrometheusSpec {
            url,
            selector,
            host_labels,
            bearer_token_file: self.bearer_token_file.as_deref().map(near),
            basic_auth,
            ca_file: self.ca_file.as_deref().map(near),
            timeout: duration(file, text, &self.timeout, Duration::from_secs(10))?,
        })
    }
}

/// `[triage]`: the thresholds the rules judge by (defaults: [`Thresholds::default`]).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TriageFile {
    stall_window: Option<toml::Spanned<String>>,
    stall_util_pct: Option<toml::Spanned<f64>>,
    loaded_util_pct: Option<toml::Spanned<f64>>,
    stall_power_pct: Option<toml::Spanned<f64>>,
    aistor_p99_ttfb_ms: Option<toml::Spanned<f64>>,
    loader_wait_pct: Option<toml::Spanned<f64>>,
    busy_idle_sm_pct: Option<toml::Spanned<f64>>,
    busy_idle_power_pct: Option<toml::Spanned<f64>>,
    clock_low_pct: Option<toml::Spanned<f64>>,
    clear_after: Option<toml::Spanned<String>>,
}

impl TriageFile {
    fn resolve(&self, file: &str, text: &str) -> Result<Thresholds, ConfigError> {
        let d = Thresholds::default();
        let stall_window = duration(
            file,
            text,
            &self.stall_window,
            Duration::from_millis(d.stall_window_ms),
        )?;
        let clear_after = duration(
            file,
            text,
            &self.clear_after,
            Duration::from_millis(d.clear_after_ms),
        )?;
        let num = |v: &Option<toml::Spanned<f64>>, default: f64, max: f64, what: &str| match v {
            None => Ok(default),
            Some(x) if x.get_ref().is_finite() && (0.0..=max).contains(x.get_ref()) => {
                Ok(*x.get_ref())
            }
            Some(x) => Err(ConfigError::at(
                file,
                text,
                Some(x.span()),
                format!("[triage] {what} must be between 0 and {max}"),
            )),
        };
        Ok(Thresholds {
            stall_window_ms: u64::try_from(stall_window.as_millis()).unwrap_or(u64::MAX),
            stall_util_pct: num(
                &self.stall_util_pct,
                d.stall_util_pct,
                100.0,
                "stall_util_pct",
            )?,
            loaded_util_pct: num(
                &self.loaded_util_pct,
                d.loaded_util_pct,
                100.0,
                "loaded_util_pct",
            )?,
            stall_power_pct: num(
                &self.stall_power_pct,
                d.stall_power_pct,
                100.0,
                "stall_power_pct",
            )?,
            aistor_p99_ttfb_ms: num(
                &self.aistor_p99_ttfb_ms,
                d.aistor_p99_ttfb_ms,
                3_600_000.0,
                "aistor_p99_ttfb_ms",
            )?,
            loader_wait_pct: num(
                &self.loader_wait_pct,
                d.loader_wait_pct,
                100.0,
                "loader_wait_pct",
            )?,
            busy_idle_sm_pct: num(
                &self.busy_idle_sm_pct,
                d.busy_idle_sm_pct,
                100.0,
                "busy_idle_sm_pct",
            )?,
            busy_idle_power_pct: num(
                &self.busy_idle_power_pct,
                d.busy_idle_power_pct,
                100.0,
                "busy_idle_power_pct",
            )?,
            clock_low_pct: num(&self.clock_low_pct, d.clock_low_pct, 100.0, "clock_low_pct")?,
            clear_after_ms: u64::try_from(clear_after.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// One node, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    /// The node's name in panes, records and `{node}`: its `name` in burnin.toml, else the
    /// expanded host as written.
    pub name: String,
    /// SSH target as the engineer types it: an alias, host, or user@host.
    pub target: String,
    /// `-l USER`.
    pub user: Option<String>,
    /// `-p PORT`.
    pub port: Option<u16>,
    /// `-i FILE`.
    pub identity: Option<String>,
    /// Extra ssh arguments.
    pub ssh_options: Vec<String>,
    /// GPUs the node must report.
    pub gpus: u32,
    /// How to reach it.
    pub mode: Mode,
    /// Extra arguments for the remote (or local) agent.
    pub agent_args: Vec<String>,
    /// Path of the agent binary on the node (`~/` allowed).
    pub agent_path: String,
    /// Rate (Gb/s) every RDMA port of the node should train at; `None`: compare with peers.
    pub nic_rate_gbps: Option<f32>,
}

/// The inventory, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// Where it was read from.
    pub file: String,
    /// Nodes in file order, ranges expanded.
    pub nodes: Vec<NodeSpec>,
    /// Sample period.
    pub interval: Period,
    /// Give up a connection attempt after this long.
    pub connect_timeout: Duration,
    /// Connection attempts in flight at once.
    pub max_connecting: usize,
    /// The plan file named by `plan = "…"`, resolved against this file's directory; `None`:
    /// the embedded T1–T8 plan.
    pub plan: Option<PathBuf>,
    /// Triage thresholds (`[triage]`).
    pub triage: Thresholds,
    /// The site's Prometheus (`[prometheus]`), for nodes in `prometheus` mode.
    pub prometheus: Option<PrometheusSpec>,
}

/// The most nodes one inventory may list (ranges expanded): far above any cluster one console
/// watches, low enough that a typo like `gpu[0-99999][0-99999]` is an error, not 240 GB.
pub const MAX_NODES: usize = 4096;

/// The most GPUs a node may have (defined in `model`, which the store and the readers share).
pub use crate::model::MAX_GPUS_PER_NODE;

/// The fastest NIC rate a node may be told to train at, in Gb/s (today's ports: 400 and 800).
pub const MAX_NIC_RATE_GBPS: f64 = 100_000.0;

/// `gpus = N` within 1..=[`MAX_GPUS_PER_NODE`], else the located error.
fn gpus_value(file: &str, text: &str, v: &toml::Spanned<i64>) -> Result<u32, ConfigError> {
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (1..=MAX_GPUS_PER_NODE).contains(&n) => Ok(n),
        _ => Err(ConfigError::at(
            file,
            text,
            Some(v.span()),
            format!("gpus must be 1 to {MAX_GPUS_PER_NODE} (the GPUs each node must report)"),
        )),
    }
}

/// `nic_rate_gbps = X`: a finite rate above 0 and at most [`MAX_NIC_RATE_GBPS`].
fn nic_rate_value(file: &str, text: &str, v: &toml::Spanned<f64>) -> Result<f32, ConfigError> {
    let x = *v.get_ref();
    if x.is_finite() && x > 0.0 && x <= MAX_NIC_RATE_GBPS {
        Ok(x as f32)
    } else {
        Err(ConfigError::at(
            file,
            text,
            Some(v.span()),
            format!(
                "nic_rate_gbps must be a number above 0 and at most {MAX_NIC_RATE_GBPS} (Gb/s, e.g. 400)"
            ),
        ))
    }
}

/// Default remote path of the agent; `burnin deploy` puts it there.
pub const DEFAULT_AGENT_PATH: &str = "~/.cache/burnin/bin/burnin";

/// The longest host pattern read (a DNS name is at most 253 characters).
pub const MAX_HOST_PATTERN: usize = 512;

/// The most `[..]` groups in one host pattern.
pub const MAX_HOST_GROUPS: usize = 8;

/// Expand pdsh-style ranges: `gpu[01-03,07]` → gpu01 gpu02 gpu03 gpu07. Zero padding follows
/// the width of the range's first number. Several bracket groups multiply.
pub fn expand_hosts(pattern: &str) -> Result<Vec<String>, String> {
    // A host name is at most 253 characters; a pattern past that, or with more bracket groups
    // than a rack numbering needs, is a typo (and each group is a level of recursion).
    if pattern.len() > MAX_HOST_PATTERN {
        return Err(format!(
            "{:?}: longer than {MAX_HOST_PATTERN} characters",
            crate::model::excerpt(pattern)
        ));
    }
    if pattern.matches('[').count() > MAX_HOST_GROUPS {
        return Err(format!(
            "{pattern:?}: more than {MAX_HOST_GROUPS} [..] groups"
        ));
    }
    let Some(open) = pattern.find('[') else {
        if pattern.contains(']') {
            return Err(format!("{pattern:?}: ']' without '['"));
        }
        return Ok(vec![pattern.to_string()]);
    };
    let close = pattern[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or_else(|| format!("{pattern:?}: '[' without ']'"))?;
    let (head, body, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    let mut items = Vec::new();
    for part in body.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let width = a.len();
                if width > 20 || b.len() > 20 {
                    return Err(format!(
                        "{pattern:?}: range {part:?} has numbers past 20 digits"
                    ));
                }
                let lo: u64 = a
                    .parse()
                    .map_err(|_| format!("{pattern:?}: bad range {part:?}"))?;
                let hi: u64 = b
                    .parse()
                    .map_err(|_| format!("{pattern:?}: bad range {part:?}"))?;
                if hi < lo {
                    return Err(format!("{pattern:?}: range {part:?} is empty"));
                }
                if hi - lo >= (MAX_NODES - items.len().min(MAX_NODES)) as u64 {
                    return Err(format!(
                        "{pattern:?}: more than {MAX_NODES} hosts (an inventory lists 1 to {MAX_NODES})"
                    ));
                }
                items.extend((lo..=hi).map(|n| format!("{n:0width$}")));
            }
            None if !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()) => {
                if items.len() >= MAX_NODES {
                    return Err(format!(
                        "{pattern:?}: more than {MAX_NODES} hosts (an inventory lists 1 to {MAX_NODES})"
                    ));
                }
                items.push(part.to_string())
            }
            None => return Err(format!("{pattern:?}: bad range item {part:?}")),
        }
    }
    let tails = expand_hosts(tail)?;
    if items.len().saturating_mul(tails.len()) > MAX_NODES {
        return Err(format!(
            "{pattern:?}: {} × {} = more than {MAX_NODES} hosts (an inventory lists 1 to {MAX_NODES})",
            items.len(),
            tails.len()
        ));
    }
    let mut out = Vec::with_capacity(items.len() * tails.len());
    for item in &items {
        for t in &tails {
            out.push(format!("{head}{item}{t}"));
        }
    }
    Ok(out)
}

/// An SSH target must not be mistaken for an option or smuggle shell syntax: letters, digits and
/// `._-@:%` only (IPv6 literals, user@host, aliases), and never a leading `-`.
pub fn validate_target(target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("empty host".into());
    }
    if target.len() > 253 {
        return Err(format!(
            "host {:?} is longer than 253 characters",
            crate::model::excerpt(target)
        ));
    }
    if target == "." || target == ".." {
        return Err(format!("host {target:?} is no host name"));
    }
    if target.starts_with('-') {
        return Err(format!(
            "host {target:?} starts with '-' (it would be read as an ssh option)"
        ));
    }
    if let Some(bad) = target
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-@:%".contains(*c)))
    {
        return Err(format!("host {target:?} contains {bad:?}"));
    }
    Ok(())
}

pub(crate) fn duration(
    file: &str,
    text: &str,
    v: &Option<toml::Spanned<String>>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match v {
        None => Ok(default),
        Some(s) => crate::model::units::parse_duration(s.get_ref())
            .map_err(|m| ConfigError::at(file, text, Some(s.span()), m)),
    }
}

impl Inventory {
    /// Parse and resolve an inventory file.
    pub fn parse(file: &str, text: &str) -> Result<Inventory, ConfigError> {
        let shape: InventoryFile =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(file, text, &e))?;
        let d = &shape.defaults;
        let interval = match &d.interval {
            None => Period::SECOND,
            Some(s) => crate::model::units::parse_period(s.get_ref())
                .map_err(|m| ConfigError::at(file, text, Some(s.span()), m))?,
        };
        let connect_timeout = duration(file, text, &d.connect_timeout, Duration::from_secs(10))?;
        let triage = shape.triage.resolve(file, text)?;
        let prometheus = match &shape.prometheus {
            Some(p) => Some(p.resolve(file, text)?),
            None => None,
        };
        if shape.node.is_empty() {
            return Err(ConfigError::at(
                file,
                text,
                None,
                "no [[node]] entries: add one per node (ranges like gpu[01-12] work)",
            ));
        }
        let max_connecting = match &d.max_connecting {
            None => 32,
            Some(v) => match usize::try_from(*v.get_ref()) {
                Ok(n) if (1..=1024).contains(&n) => n,
                _ => {
                    return Err(ConfigError::at(
                        file,
                        text,
                        Some(v.span()),
                        "max_connecting must be 1 to 1024 (connection attempts in flight)",
                    ));
                }
            },
        };
        let mut nodes: Vec<NodeSpec> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut seen_hosts = std::collections::HashSet::new();
        for entry in &shape.node {
            let n = entry.get_ref();
            let at = |m: String| ConfigError::at(file, text, Some(n.host.span()), m);
            let hosts = expand_hosts(n.host.get_ref().trim()).map_err(at)?;
            // A name is the node's in every pane, record and {node}: one per host.
            let name = match &n.name {
                None => None,
                Some(v) => {
                    let at_name = |m: String| ConfigError::at(file, text, Some(v.span()), m);
                    if hosts.len() != 1 {
                        return Err(at_name(format!(
                            "name {:?} names one node, but host {:?} is {} hosts: give each its own [[node]] to name it",
                            v.get_ref(),
                            n.host.get_ref(),
                            hosts.len()
                        )));
                    }
                    let name = v.get_ref().trim().to_string();
                    validate_target(&name).map_err(|e| at_name(format!("name: {e}")))?;
                    Some(name)
                }
            };
            let mode = n.mode.or(d.mode).unwrap_or(Mode::Agent);
            if mode == Mode::Prometheus && prometheus.is_none() {
                return Err(at(
                    "mode \"prometheus\" needs a [prometheus] section with the server's url".into(),
                ));
            }
            let gpus = match n.gpus.as_ref().or(d.gpus.as_ref()) {
                Some(v) => gpus_value(file, text, v)?,
                None => 8,
            };
            let nic_rate_gbps = match n.nic_rate_gbps.as_ref().or(d.nic_rate_gbps.as_ref()) {
                Some(v) => Some(nic_rate_value(file, text, v)?),
                None => None,
            };
            for host in hosts {
                // Every mode: a name reaches phase commands through {node}, {hosts}, …, and
                // a local node's name sits in the same command line as an SSH node's.
                validate_target(&host).map_err(at)?;
                let shown = name.clone().unwrap_or_else(|| host.clone());
                if !seen.insert(shown.clone()) {
                    return Err(at(format!("node {shown:?} is listed twice")));
                }
                if !seen_hosts.insert(host.clone()) {
                    return Err(at(format!("host {host:?} is listed twice")));
                }
                if nodes.len() >= MAX_NODES {
                    return Err(at(format!(
                        "more than {MAX_NODES} nodes: burnin watches 1 to {MAX_NODES} nodes"
                    )));
                }
                nodes.push(NodeSpec {
                    name: shown,
                    target: host,
                    user: n.user.clone(),
                    port: n.port,
                    identity: n.identity.clone(),
                    ssh_options: n
                        .ssh_options
                        .clone()
                        .unwrap_or_else(|| d.ssh_options.clone()),
                    gpus,
                    mode,
                    agent_args: n.agent_args.clone().unwrap_or_else(|| d.agent_args.clone()),
                    agent_path: n
                        .agent_path
                        .clone()
                        .or_else(|| d.agent_path.clone())
                        .unwrap_or_else(|| DEFAULT_AGENT_PATH.into()),
                    nic_rate_gbps,
                });
            }
        }
        Ok(Inventory {
            file: file.to_string(),
            nodes,
            interval,
            connect_timeout,
            max_connecting,
            triage,
            prometheus,
            plan: shape.plan.map(|p| {
                let p = expand_home(&p);
                match std::path::Path::new(file).parent() {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p,
                }
            }),
        })
    }

    /// Read and resolve a file.
    pub fn load(path: &std::path::Path) -> Result<Inventory, ConfigError> {
        let name = path.display().to_string();
        let text = crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
            .map_err(|e| ConfigError {
                file: name.clone(),
                line: None,
                column: None,
                message: match e.kind() {
                    std::io::ErrorKind::NotFound => {
                        "not found (burnin init writes a starter file; -c FILE picks another)"
                            .into()
                    }
                    _ => e.to_string(),
                },
            })?;
        Inventory::parse(&name, &text)
    }
}

/// The commented starter file `burnin init` writes.
pub const STARTER: &str = include_str!("../../burnin.example.toml");

/// `~/`-relative path expanded against $HOME (for local use of identity files and the like).
pub fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// GPUs on one node: 1 to [`MAX_GPUS_PER_NODE`].
pub fn gpu_count(s: &str) -> Result<u32, String> {
    let max = MAX_GPUS_PER_NODE;
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: give a GPU count from 1 to {max}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_with_padding() {
        assert_eq!(
            expand_hosts("gpu[01-03,07]").expect("ok"),
            ["gpu01", "gpu02", "gpu03", "gpu07"]
        );
        assert_eq!(
            expand_hosts("r[1-2]n[8-9]").expect("ok"),
            ["r1n8", "r1n9", "r2n8", "r2n9"]
        );
        assert_eq!(
            expand_hosts("root@10.1.2.7").expect("ok"),
            ["root@10.1.2.7"]
        );
        assert!(expand_hosts("gpu[3-1]").is_err());
        assert!(expand_hosts("gpu[01-").is_err());
        assert!(expand_hosts("gpu[a-b]").is_err());
    }

    #[test]
    fn targets_cannot_be_options_or_shell() {
        assert!(validate_target("gpu07").is_ok());
        assert!(validate_target("root@10.1.2.7").is_ok());
        assert!(validate_target("fe80::1%eth0").is_ok());
        assert!(validate_target("-oProxyCommand=evil").is_err());
        assert!(validate_target("gpu07;reboot").is_err());
        assert!(validate_target("gpu 07").is_err());
    }

    #[test]
    fn the_starter_file_resolves() {
        let inv =
            Inventory::parse("burnin.example.toml", STARTER).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inv.nodes.len(), 12);
        assert_eq!(inv.nodes[0].name, "gpu01");
        assert_eq!(inv.interval, Period::SECOND);
    }

    #[test]
    fn a_node_may_carry_a_display_name() {
        let text = "[[node]]\nhost = \"root@dgx-b300-rack12-n01.cluster.local\"\nname = \"r12n01\"\n\n[[node]]\nhost = \"gpu[02-03]\"\n";
        let inv = Inventory::parse("b.toml", text).expect("names");
        assert_eq!(inv.nodes[0].name, "r12n01");
        assert_eq!(
            inv.nodes[0].target,
            "root@dgx-b300-rack12-n01.cluster.local"
        );
        assert_eq!(inv.nodes[1].name, "gpu02");
        // A name for a range would name many nodes alike; one with shell syntax would reach
        // {node}; two alike, or a name that is another node's host, are one node twice.
        for (text, says) in [
            (
                "[[node]]\nhost = \"gpu[01-02]\"\nname = \"x\"\n",
                "b.toml:3:8: name \"x\" names one node",
            ),
            (
                "[[node]]\nhost = \"gpu01\"\nname = \"a;b\"\n",
                "b.toml:3:8: name: ",
            ),
            (
                "[[node]]\nhost = \"gpu01\"\nname = \"n\"\n[[node]]\nhost = \"gpu02\"\nname = \"n\"\n",
                "node \"n\" is listed twice",
            ),
            (
                "[[node]]\nhost = \"gpu01\"\nname = \"gpu02\"\n[[node]]\nhost = \"gpu02\"\n",
                "node \"gpu02\" is listed twice",
            ),
            (
                "[[node]]\nhost = \"gpu01\"\nname = \"a\"\n[[node]]\nhost = \"gpu01\"\nname = \"b\"\n",
                "host \"gpu01\" is listed twice",
            ),
            (
                "[[node]]\nhost = \"gpu01\"\n[[node]]\nhost = \"gpu01\"\nname = \"b\"\n",
                "host \"gpu01\" is listed twice",
            ),
        ] {
            let e = Inventory::parse("b.toml", text)
                .expect_err(text)
                .to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn errors_are_located() {
        let text = "[[node]]\nhost = \"gpu[01-02]\"\n\n[[node]]\nhost = \"gpu02\"\n";
        let e = Inventory::parse("b.toml", text)
            .expect_err("dup")
            .to_string();
        assert!(
            e.starts_with("b.toml:5:8: node \"gpu02\" is listed twice"),
            "{e}"
        );
        let e = Inventory::parse("b.toml", "[[node]]\nhost = \"-oProxyCommand=x\"\n")
            .expect_err("bad")
            .to_string();
        assert!(e.contains("b.toml:2:8") && e.contains("ssh option"), "{e}");
        let e = Inventory::parse(
            "b.toml",
            "[defaults]\ninterval = \"fast\"\n[[node]]\nhost=\"a\"\n",
        )
        .expect_err("bad")
        .to_string();
        assert!(e.starts_with("b.toml:2:12: bad duration"), "{e}");
        let e = Inventory::parse("b.toml", "[[node]]\nhots = \"a\"\n")
            .expect_err("bad")
            .to_string();
        assert!(e.contains("b.toml:2:1") && e.contains("hots"), "{e}");
    }

    #[test]
    fn triage_thresholds_from_the_file_with_located_mistakes() {
        let inv = Inventory::parse(
            "t.toml",
            "[triage]\nstall_window = \"20s\"\naistor_p99_ttfb_ms = 120\nloader_wait_pct = 5\n\
             [[node]]\nhost = \"a\"\n",
        )
        .expect("parses");
        let t = inv.triage;
        assert_eq!(t.stall_window_ms, 20_000);
        assert_eq!((t.aistor_p99_ttfb_ms, t.loader_wait_pct), (120.0, 5.0));
        assert_eq!(t.stall_util_pct, Thresholds::default().stall_util_pct);
        let e = Inventory::parse(
            "t.toml",
            "[triage]\nstall_util_pct = 150.0\n[[node]]\nhost = \"a\"\n",
        )
        .expect_err("out of range")
        .to_string();
        assert!(
            e.starts_with("t.toml:2:18: [triage] stall_util_pct must be between 0 and 100"),
            "{e}"
        );
        let e = Inventory::parse(
            "t.toml",
            "[triage]\nstall_utl_pct = 5.0\n[[node]]\nhost = \"a\"\n",
        )
        .expect_err("typo")
        .to_string();
        assert!(
            e.contains("t.toml:2:1") && e.contains("stall_utl_pct"),
            "{e}"
        );
    }

    #[test]
    fn prometheus_section_resolved_with_located_mistakes() {
        let inv = Inventory::parse(
            "/site/burnin.toml",
            "[prometheus]\nurl = \"https://prom.site:9090/\"\nselector = 'job=\"dcgm\",'\n\
             bearer_token_file = \"token\"\nca_file = \"/etc/ca.pem\"\ntimeout = \"3s\"\n\
             [[node]]\nhost = \"gpu[1-2]\"\nmode = \"prometheus\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = inv.prometheus.expect("section");
        assert_eq!(p.url, "https://prom.site:9090");
        assert_eq!(p.selector, "job=\"dcgm\"");
        assert_eq!(p.host_labels, ["Hostname", "hostname"]);
        assert_eq!(
            p.bearer_token_file.as_deref(),
            Some(std::path::Path::new("/site/token"))
        );
        assert_eq!(p.timeout, Duration::from_secs(3));
        assert_eq!(inv.nodes[1].mode, Mode::Prometheus);
        let bad = |text: &str| {
            Inventory::parse("p.toml", text)
                .expect_err("mistake")
                .to_string()
        };
        let e = bad("[[node]]\nhost = \"a\"\nmode = \"prometheus\"\n");
        assert!(
            e.starts_with("p.toml:2:8:") && e.contains("[prometheus]"),
            "{e}"
        );
        let e = bad("[prometheus]\nurl = \"prom:9090\"\n[[node]]\nhost = \"a\"\n");
        assert!(e.starts_with("p.toml:2:7:") && e.contains("http://"), "{e}");
        // Issue 41: a password in the url would be quoted in every message about the server.
        let e =
            bad("[prometheus]\nurl = \"http://admin:s3cret@prom:9090\"\n[[node]]\nhost = \"a\"\n");
        assert!(
            e.contains("basic_auth_password_file") && !e.contains("s3cret"),
            "{e}"
        );
        assert!(
            Inventory::parse(
                "p.toml",
                "[prometheus]\nurl = \"http://prom:9090/api?x=a@b\"\n[[node]]\nhost = \"a\"\n"
            )
            .is_ok()
        );
        let e = bad(
            "[prometheus]\nurl = \"http://p\"\nselector = '{job=\"x\"}'\n[[node]]\nhost = \"a\"\n",
        );
        assert!(
            e.starts_with("p.toml:3:12:") && e.contains("without braces"),
            "{e}"
        );
        let e = bad(
            "[prometheus]\nurl = \"http://p\"\nhost_labels = [\"host-name\"]\n[[node]]\nhost = \"a\"\n",
        );
        assert!(e.starts_with("p.toml:3:15:"), "{e}");
        let e = bad(
            "[prometheus]\nurl = \"http://p\"\nbasic_auth_user = \"u\"\n[[node]]\nhost = \"a\"\n",
        );
        assert!(e.contains("basic_auth_password_file"), "{e}");
    }
}
