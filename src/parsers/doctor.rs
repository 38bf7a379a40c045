//! The doctor's probe answer (`kind<TAB>key<TAB>status<TAB>detail` lines, written by
//! `phases::doctor::probe`'s script) and what it says of one requirement. Read here, below the
//! phases, so T0 can carry the probe in its own output (a `== doctor` section, where the plan
//! sets `doctor = "true"`) and judge it like any other tool's answer: the probe then also prints
//! `need<TAB>PHASE<TAB>what<TAB>key` lines, what each phase needs on this node.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::phase::CheckStatus;

/// One thing a phase needs on a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Requirement {
    /// A program, by the key the probe looks it up under: a bare name is looked up on the
    /// node's PATH, a key with a `/` is that file (`{nccl_tests}` gave a directory).
    Program {
        /// Name or path.
        key: String,
    },
    /// python3 that imports torch and sees CUDA, run behind the plan's `{prefix}` (a container
    /// wrapper; empty: on the node itself).
    Torch {
        /// The rendered prefix.
        prefix: String,
    },
    /// The kernel log readable (dmesg, else journalctl -k).
    KernelLog,
    /// The burnin binary on the node (`{burnin}`: the inventory's `agent_path`).
    Burnin,
}

impl Requirement {
    /// A program's name without its directory.
    pub fn program_name(key: &str) -> &str {
        key.rsplit('/').next().unwrap_or(key)
    }
}

/// Least free space where the run's control directory lives: logs, hostfiles and the
/// workloads are small, but D2's checkpoint alone is about 2 GB.
pub const MIN_FREE_KIB: u64 = 4 << 20;

/// Longest field kept from a probe line (the node cuts at 300 bytes already).
pub const FIELD_CHARS: usize = 300;

/// Most tools one node's answer may name (the plan's known programs are far fewer).
pub const TOOLS_KEPT: usize = 256;

/// A program as the node has it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolFound {
    /// Where it is; `None` when it is not there.
    pub path: Option<String>,
    /// Why not, when it is not there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// The first line its version option printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One probe's outcome: ok or not, and its words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probed {
    /// The node's status word (`ok`, `missing`, `nocuda`, `fail`).
    pub status: String,
    /// What it said.
    pub detail: String,
}

impl Probed {
    /// True when the status is `ok`.
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// Everything one node's probe said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeProbe {
    /// What each phase needs on this node, where T0 carried the probe (`need` lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<NeedLine>,
    /// Programs by their key.
    pub tools: BTreeMap<String, ToolFound>,
    /// python3 and torch, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch: Option<Probed>,
    /// KiB free where the run's control directory is (or would be made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_kib: Option<u64>,
    /// Why the free space is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_error: Option<String>,
    /// The control directory, or the directory it would be made in, writable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<Probed>,
    /// The kernel log readable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<Probed>,
    /// The node's kernel, from the closing line (its absence: the probe was cut off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The closing line came: every probe answered.
    pub complete: bool,
    /// Lines that are no probe line.
    pub garbled_lines: u64,
    /// The first of them, stripped and cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_garbled: Option<String>,
}

/// One field of a node's line, safe to print and bounded.
fn field(s: &str) -> String {
    crate::model::fit(crate::model::strip_controls(s).trim(), FIELD_CHARS)
}

/// Read the probe's output; never fails: what does not parse is counted.
pub fn parse_probe(output: &str) -> NodeProbe {
    let mut probe = NodeProbe::default();
    for line in output.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !take_line(&mut probe, line) {
            probe.garbled_lines += 1;
            if probe.first_garbled.is_none() {
                probe.first_garbled = Some(crate::model::fit(&field(line), 80));
            }
        }
    }
    probe
}

/// Take one line into `probe`; false when it is no probe line.
fn take_line(probe: &mut NodeProbe, line: &str) -> bool {
    let mut parts = line.splitn(4, '\t');
    // A line read through T0's sections lost its trailing tab: an empty detail.
    let (Some(kind), Some(key), Some(status), detail) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next().unwrap_or(""),
    ) else {
        return false;
    };
    let key = field(key);
    let status = field(status);
    let detail = field(detail);
    let ok = status == "ok";
    match kind {
        "tool" | "version" if key.is_empty() => false,
        "tool" => {
            if !probe.tools.contains_key(&key) && probe.tools.len() >= TOOLS_KEPT {
                return false;
            }
            let entry = probe.tools.entry(key).or_default();
            if ok {
                entry.path = Some(detail);
                entry.missing = None;
            } else {
                entry.path = None;
                entry.missing = Some(detail);
            }
            true
        }
        "version" => match probe.tools.get_mut(&key) {
            Some(entry) if entry.path.is_some() => {
                entry.version = Some(detail);
                true
            }
            _ => false,
        },
        "torch" => {
            probe.torch = Some(Probed { status, detail });
            true
        }
        "disk" => {
            match detail.parse::<u64>() {
                Ok(kib) if ok => probe.free_kib = Some(kib),
                _ => probe.disk_error = Some(detail),
            }
            true
        }
        "dir" => {
            probe.dir = Some(Probed { status, detail });
            true
        }
        "kernel-log" => {
            probe.kernel_log = Some(Probed { status, detail });
            true
        }
        "done" => {
            probe.complete = true;
            probe.kernel = Some(detail).filter(|d| !d.is_empty());
            true
        }
        "need" => match NeedWhat::read(&status, detail) {
            Some(what) if !key.is_empty() && probe.needs.len() < NEEDS_KEPT => {
                probe.needs.push(NeedLine { phase: key, what });
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Most `need` lines one node's answer may carry (a plan's phases need a few each).
pub const NEEDS_KEPT: usize = 1024;

/// One `need` line: a phase and one thing it needs on this node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NeedLine {
    /// Phase id.
    pub phase: String,
    /// What it needs.
    pub what: NeedWhat,
}

/// What a `need` line says a phase needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeedWhat {
    /// Its command starts here: the control directory must be writable with room.
    Launch,
    /// A requirement (for `Burnin`, the key it was probed under).
    Requires(Requirement, Option<String>),
    /// The plan does not set it up here, and why.
    NotSetUp(String),
}

impl NeedWhat {
    /// The need in a line's status and detail fields (the words `need_lines` writes).
    fn read(what: &str, key: String) -> Option<NeedWhat> {
        Some(match what {
            "launch" => NeedWhat::Launch,
            "program" if !key.is_empty() => NeedWhat::Requires(Requirement::Program { key }, None),
            "burnin" if !key.is_empty() => NeedWhat::Requires(Requirement::Burnin, Some(key)),
            "torch" => NeedWhat::Requires(Requirement::Torch { prefix: key }, None),
            "kernel-log" => NeedWhat::Requires(Requirement::KernelLog, None),
            "not-set-up" => NeedWhat::NotSetUp(key),
            _ => return None,
        })
    }

    /// The words of a `need` line for this need: (what, key).
    pub fn words(&self) -> (&'static str, String) {
        match self {
            NeedWhat::Launch => ("launch", String::new()),
            NeedWhat::Requires(Requirement::Program { key }, _) => ("program", key.clone()),
            NeedWhat::Requires(Requirement::Burnin, key) => {
                ("burnin", key.clone().unwrap_or_default())
            }
            NeedWhat::Requires(Requirement::Torch { prefix }, _) => ("torch", prefix.clone()),
            NeedWhat::Requires(Requirement::KernelLog, _) => ("kernel-log", String::new()),
            NeedWhat::NotSetUp(why) => ("not-set-up", why.clone()),
        }
    }
}

/// Most phases judged from one node's `need` lines.
const PHASES_JUDGED: usize = 128;

/// T0's checks from the probe it carried: `can-run-<PHASE>` for each phase that runs here (a
/// warning where it cannot, naming what is missing: T0 passes an install, the phase itself
/// would fail later), and `doctor` saying how many can and which the plan does not set up.
pub fn node_checks(probe: &NodeProbe) -> Vec<(String, CheckStatus, String)> {
    let mut phases: Vec<&str> = Vec::new();
    for n in &probe.needs {
        if !phases.contains(&n.phase.as_str()) && phases.len() < PHASES_JUDGED {
            phases.push(&n.phase);
        }
    }
    if phases.is_empty() {
        let why = if probe.complete {
            "not judged: the doctor section names no phase's needs"
        } else {
            "not judged: the doctor's probe printed nothing it reads (cut off, or no sh)"
        };
        return vec![("doctor".into(), CheckStatus::Unknown, why.into())];
    }
    let (mut out, mut can, mut not_set_up) = (Vec::new(), 0usize, Vec::new());
    for phase in &phases {
        let lines: Vec<&NeedWhat> = probe
            .needs
            .iter()
            .filter(|n| n.phase == *phase)
            .map(|n| &n.what)
            .collect();
        if let Some(NeedWhat::NotSetUp(why)) =
            lines.iter().find(|w| matches!(w, NeedWhat::NotSetUp(_)))
        {
            not_set_up.push(format!("{phase} ({why})"));
            continue;
        }
        let mut whys: Vec<String> = Vec::new();
        let mut wanted: Vec<String> = Vec::new();
        for what in &lines {
            let why = match what {
                NeedWhat::Launch => control_dir_problem(probe),
                NeedWhat::Requires(r, key) => {
                    wanted.push(match r {
                        Requirement::Program { key } => Requirement::program_name(key).into(),
                        Requirement::Burnin => "burnin".into(),
                        Requirement::Torch { .. } => "torch".into(),
                        Requirement::KernelLog => "kernel log".into(),
                    });
                    unmet(r, probe, key.as_deref())
                }
                NeedWhat::NotSetUp(_) => None,
            };
            if let Some(why) = why.filter(|w| !whys.contains(w)) {
                whys.push(why);
            }
        }
        if whys.is_empty() && !probe.complete {
            whys.push("the probe did not finish (cut off or timed out)".into());
        }
        let name = format!("can-run-{}", crate::model::fit(phase, 24));
        if whys.is_empty() {
            can += 1;
            let detail = if wanted.is_empty() {
                "can run here".to_string()
            } else {
                format!("can run here: {} found", wanted.join(", "))
            };
            out.push((name, CheckStatus::Ok, detail));
        } else {
            out.push((
                name,
                CheckStatus::Warn,
                format!("cannot run here: {}", whys.join("; ")),
            ));
        }
    }
    let judged = phases.len() - not_set_up.len();
    let mut summary = format!("{can} of {judged} phase(s) set up can run here");
    if !not_set_up.is_empty() {
        summary.push_str(&format!("; not set up: {}", not_set_up.join(", ")));
    }
    let status = if probe.complete {
        CheckStatus::Ok
    } else {
        CheckStatus::Unknown
    };
    out.insert(
        0,
        ("doctor".into(), status, crate::model::fit(&summary, 600)),
    );
    out
}

/// Why the phase's control directory cannot be made on the node, if it cannot.
pub fn control_dir_problem(probe: &NodeProbe) -> Option<String> {
    if let Some(dir) = probe.dir.as_ref().filter(|d| !d.ok()) {
        return Some(format!("run directory: {}", dir.detail));
    }
    match probe.free_kib {
        Some(kib) if kib < MIN_FREE_KIB => Some(format!(
            "run directory: {} free (needs {})",
            human_kib(kib),
            human_kib(MIN_FREE_KIB)
        )),
        _ => None,
    }
}

/// KiB in words: `812 MiB`, `4.0 GiB`.
pub fn human_kib(kib: u64) -> String {
    if kib >= 1 << 20 {
        format!("{:.1} GiB", kib as f64 / f64::from(1u32 << 20))
    } else {
        format!("{} MiB", kib >> 10)
    }
}

/// Why `requirement` does not hold on a node, if it does not.
pub fn unmet(
    requirement: &Requirement,
    probe: &NodeProbe,
    burnin_key: Option<&str>,
) -> Option<String> {
    let program = |key: &str, label: &str| match probe.tools.get(key) {
        Some(t) if t.path.is_some() => None,
        Some(t) => Some(match &t.missing {
            Some(why) if why != "not on PATH" => format!("{label} not found: {why}"),
            _ => format!("{label} not found"),
        }),
        None if probe.complete => Some(format!("{label} not probed")),
        None => Some(format!("{label}: the probe did not finish")),
    };
    match requirement {
        Requirement::Program { key } => program(key, key),
        Requirement::Burnin => {
            burnin_key.and_then(|k| program(k, "burnin (burnin deploy puts it there)"))
        }
        Requirement::KernelLog => match &probe.kernel_log {
            Some(k) if k.ok() => None,
            Some(k) => Some(format!("kernel log unreadable: {}", k.detail)),
            None => Some("kernel log: not probed".into()),
        },
        Requirement::Torch { .. } => match &probe.torch {
            Some(t) if t.ok() => None,
            Some(t) if t.status == "nocuda" => Some(format!("torch without CUDA: {}", t.detail)),
            Some(t) => Some(format!("torch not importable: {}", t.detail)),
            None => Some("torch: not probed".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a node's T0 doctor section says, judged: a phase whose program is missing warns
    /// with the probe's words, one whose needs are all there is ok, a phase not set up is only
    /// named in the summary, and a probe cut before its closing line is not judged as passed.
    #[test]
    fn need_lines_become_one_check_per_phase() {
        let text = "need\tT4\tlaunch\t\nneed\tT4\tprogram\tall_reduce_perf\nneed\tT2\tlaunch\t\n\
                    need\tT2\ttorch\t\nneed\tT6\tnot-set-up\tno command in the plan\n\
                    tool\tall_reduce_perf\tmissing\tnot on PATH\n\
                    torch\t-\tok\ttorch 2.5.1, CUDA 12.4\ndisk\t-\tok\t99999999\ndir\t-\tok\t/tmp\n\
                    done\t-\tok\t6.8.0";
        let probe = parse_probe(text);
        let checks = node_checks(&probe);
        let by = |n: &str| checks.iter().find(|c| c.0 == n).cloned().unwrap();
        assert_eq!(by("can-run-T4").1, CheckStatus::Warn);
        assert_eq!(
            by("can-run-T4").2,
            "cannot run here: all_reduce_perf not found"
        );
        assert_eq!(
            by("can-run-T2"),
            (
                "can-run-T2".into(),
                CheckStatus::Ok,
                "can run here: torch found".into()
            )
        );
        assert_eq!(
            by("doctor").2,
            "1 of 2 phase(s) set up can run here; not set up: T6 (no command in the plan)"
        );
        assert!(checks.iter().all(|c| c.0 != "can-run-T6"));
        // Cut before `done`: T2's needs cannot be said to hold.
        let cut = parse_probe(text.rsplit_once('\n').unwrap().0);
        let checks = node_checks(&cut);
        assert_eq!(checks[0].1, CheckStatus::Unknown);
        let t2 = checks.iter().find(|c| c.0 == "can-run-T2").unwrap();
        assert_eq!(t2.1, CheckStatus::Warn, "{t2:?}");
        assert!(t2.2.contains("did not finish"), "{t2:?}");
        // No need line at all: not judged.
        assert_eq!(
            node_checks(&parse_probe("done\t-\tok\tx"))[0].1,
            CheckStatus::Unknown
        );
    }

    proptest! {
        /// Garbage and hostile need lines never panic, stay bounded and reach no check name
        /// longer than its cut.
        #[test]
        fn need_lines_never_panic(lines in proptest::collection::vec(
            ("need|tool|torch|done|x", "[A-Za-z0-9\t\u{1b}\u{7f}é -]{0,40}", "launch|program|torch|burnin|kernel-log|not-set-up|zz", "[^\n]{0,40}"),
            0..200,
        )) {
            let text: String = lines
                .iter()
                .map(|(k, p, w, d)| format!("{k}\t{p}\t{w}\t{d}\n"))
                .collect();
            let probe = parse_probe(&text);
            prop_assert!(probe.needs.len() <= NEEDS_KEPT);
            for (name, _, detail) in node_checks(&probe) {
                prop_assert!(name.chars().count() <= "can-run-".len() + 24);
                prop_assert!(!name.chars().chain(detail.chars()).any(|c| c.is_control()));
            }
        }
    }
}
