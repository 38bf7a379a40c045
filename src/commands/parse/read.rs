//! Reading an output and judging it as the plan's phases would: the rows, figures, checks,
//! failure lines and each phase's verdict with how every gate judged.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use super::detect::{Kind, detect, t0_checks_of};
use super::telemetry::{read_dcgm, read_minio, read_smi, read_topo};
use super::*;
use crate::model::phase::{CheckStatus, PhaseMetric, Verdict};
use crate::parsers::{OutputParser, ParseContext, ParserKind};
use crate::plan::gates::{self, Observed};
use crate::plan::{Gate, unit_of};

/// One figure as the gates see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureRow {
    /// e.g. `busbw_all_reduce`.
    pub name: String,
    /// e.g. `GB/s`.
    pub unit: &'static str,
    /// Whose: `gpu01`, `gpu01 0->1 memcpy_read_ce`, …
    pub subject: String,
    /// The value.
    pub value: f64,
}

/// One check as a T0/T1 parser judged it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckRow {
    /// e.g. `driver-branch`.
    pub name: String,
    /// ok, failed, unknown, warn.
    pub status: CheckStatus,
    /// What was read.
    pub detail: String,
}

/// A phase's verdict on the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseVerdict {
    /// Phase id, e.g. `T4`.
    pub phase: String,
    /// Its title.
    pub title: String,
    /// The verdict the gates give.
    pub verdict: Verdict,
    /// Why, with the numbers.
    pub reason: String,
    /// How each of the phase's gates judged the file, in the plan's order.
    pub gates: Vec<crate::model::phase::GateOutcome>,
}

/// A triage finding over a telemetry file's samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRow {
    /// info, warn, crit.
    pub severity: &'static str,
    /// The rule that fired.
    pub rule: &'static str,
    /// Node and GPU.
    pub subject: String,
    /// The evidence.
    pub why: String,
}

/// What burnin read from one file.
#[derive(Debug, Clone, Serialize)]
pub struct Reading {
    /// The file as given.
    pub path: String,
    /// The kind's name (`nccl-tests`, `kernel-log`, …).
    pub kind: String,
    /// Whether the kind was detected rather than given.
    pub detected: bool,
    /// Lines in the file.
    pub lines: usize,
    /// The launcher whose prefixes the lines carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// The format within the kind (a trainer's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Lines the parser could not read, and the first few reasons.
    pub unread_lines: u64,
    /// The first reasons (line number and why).
    pub unread: Vec<String>,
    /// Every parsed item (rows, cells, steps, checks…), as the run record keeps them.
    pub metrics: Vec<PhaseMetric>,
    /// The figures gates judge.
    pub figures: Vec<FigureRow>,
    /// The checks of a T0/T1 output (or of one T0 command).
    pub checks: Vec<CheckRow>,
    /// Failure lines the tool printed, and runs that measured nothing.
    pub problems: Vec<String>,
    /// What each phase of the plan that reads this kind would say.
    pub verdicts: Vec<PhaseVerdict>,
    /// Phases that read this kind but were not judged offline, and why.
    pub not_judged: Vec<String>,
    /// Telemetry kinds: what the console's readers made of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<serde_json::Value>,
    /// Telemetry kinds: the triage rules' findings over the file's samples.
    pub findings: Vec<FindingRow>,
    /// Anything else worth saying.
    pub notes: Vec<String>,
}

impl Reading {
    fn new(path: &str, kind: Kind, detected: bool, lines: usize) -> Self {
        Self {
            path: path.to_string(),
            kind: kind.name().to_string(),
            detected,
            lines,
            launcher: None,
            format: None,
            unread_lines: 0,
            unread: Vec::new(),
            metrics: Vec::new(),
            figures: Vec::new(),
            checks: Vec::new(),
            problems: Vec::new(),
            verdicts: Vec::new(),
            not_judged: Vec::new(),
            telemetry: None,
            findings: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The worst verdict any phase gave (`None`: no phase judged it).
    pub fn worst(&self) -> Option<Verdict> {
        let rank = |v: Verdict| match v {
            Verdict::Pass | Verdict::Skipped => 0,
            Verdict::Warn => 1,
            Verdict::Aborted => 2,
            Verdict::Fail | Verdict::Timeout => 3,
        };
        self.verdicts
            .iter()
            .map(|v| v.verdict)
            .max_by_key(|v| rank(*v))
    }
}

/// Read a file (at most [`MAX_FILE_BYTES`]; bytes that are not UTF-8 are replaced).
pub fn read_path(path: &Path, kind: Option<Kind>, opts: &Options) -> Result<Reading, String> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{name}: larger than {} MiB: not a tool's output burnin reads",
            MAX_FILE_BYTES >> 20
        ));
    }
    read_text(&name, &String::from_utf8_lossy(&bytes), kind, opts)
}

/// Read `text` (from `path`) as `kind`, or as the kind [`detect`] finds.
pub fn read_text(
    path: &str,
    text: &str,
    kind: Option<Kind>,
    opts: &Options,
) -> Result<Reading, String> {
    let detected = kind.is_none();
    let kind = match kind.or_else(|| detect(text)) {
        Some(k) => k,
        None => {
            return Err(format!(
                "{path}: not an output burnin reads (the kinds: {}); name the kind if it is one",
                Kind::names()
            ));
        }
    };
    let lines = text.lines().count();
    let mut r = Reading::new(path, kind, detected, lines);
    match kind {
        Kind::Tool(parser) => read_tool(&mut r, text, parser, opts),
        Kind::T0Section(section) => read_t0_section(&mut r, text, section, opts),
        Kind::SmiCsv => read_smi(&mut r, text, opts),
        Kind::Topo => read_topo(&mut r, text),
        Kind::DcgmExporter => read_dcgm(&mut r, text),
        Kind::Minio => read_minio(&mut r, text),
    }
    Ok(r)
}

/// The node name the figures carry: the file's stem (`gpu01.log` → `gpu01`), as a run's
/// `logs/<phase>/<node>.log` would give it.
pub(super) fn node_of(path: &str) -> String {
    let stem = Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = crate::model::fit(stem.trim(), 40);
    if stem.is_empty() { "node".into() } else { stem }
}

pub(super) const UNREAD_KEPT: usize = 5;

fn read_tool(r: &mut Reading, text: &str, kind: ParserKind, opts: &Options) {
    let node = node_of(&r.path);
    let mut parser = OutputParser::new(
        kind,
        ParseContext {
            node: node.clone(),
            expected_gpus: opts.gpus,
        },
    );
    let mut trainlog = crate::parsers::trainlog::TrainLogParser::new();
    // The texts the plan's output-contains gates look for, and whether the file shows them.
    let wanted: BTreeSet<String> = opts
        .plan
        .phases
        .iter()
        .filter(|p| p.parser == kind)
        .flat_map(|p| p.gates.iter())
        .flat_map(Gate::output_texts)
        .collect();
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        for w in &wanted {
            if line.contains(w.as_str()) {
                seen.entry(w.clone()).or_default().insert(node.clone());
            }
        }
        if kind == ParserKind::Trainlog {
            trainlog.push(line);
        }
        match parser.push(line) {
            Ok(m) => r.metrics.extend(m),
            Err(e) => {
                r.unread_lines += 1;
                if r.unread.len() < UNREAD_KEPT {
                    r.unread.push(crate::model::fit(&e.to_string(), 200));
                }
            }
        }
    }
    r.metrics.extend(parser.finish());
    r.launcher = parser.launcher().map(|l| l.describe().to_string());
    r.format = trainlog.framework().map(|f| f.name().to_string());
    fill_from_metrics(r);
    let (node_gpus, hardware) = nodes_behind(opts, &node);
    let observed = Observed {
        nodes: vec![node.clone()],
        node_gpus,
        hardware,
        seen,
        unparsed: (r.unread_lines, r.unread.first().cloned()),
        offline: true,
        ..Observed::default()
    };
    // The S3 probe says which mode it ran; a phase that runs it in another mode would never
    // see this output (S2's GET sweep is not S3's checkpoint).
    let output_mode = (kind == ParserKind::S3Probe)
        .then(|| probe_mode_of_output(text))
        .flatten();
    // Phases reading one parser can read different outputs of it (T2 gemm.py, T5 training):
    // where some phase finds the figures its gates read, a phase that finds none of its own
    // is not the one this output came from. Where none does, every phase judges (an output
    // that measured nothing fails them all).
    let figures = gates::figures(&r.metrics);
    let finds_its_figures = |spec: &crate::plan::PhaseSpec| {
        spec.gates
            .iter()
            .filter_map(Gate::figure)
            .any(|f| figures.contains_key(f))
    };
    let any_finds = opts
        .plan
        .phases
        .iter()
        .filter(|p| p.parser == kind && p.together.is_empty() && p.drill.is_none())
        .any(|p| finds_its_figures(p));
    for spec in &opts.plan.phases {
        if spec.parser != kind || !spec.together.is_empty() {
            continue;
        }
        if let Some(mode) = &output_mode {
            let runs = probe_mode_of_command(&spec.command);
            if runs != mode {
                r.not_judged.push(format!(
                    "{} ({}): runs the probe in {runs} mode, this output is {mode} mode",
                    spec.id, spec.title
                ));
                continue;
            }
        }
        if any_finds && spec.drill.is_none() && !finds_its_figures(spec) {
            let wanted: BTreeSet<&str> = spec.gates.iter().filter_map(Gate::figure).collect();
            r.not_judged.push(format!(
                "{} ({}): reads {}, none of which this output has (it is another phase's)",
                spec.id,
                spec.title,
                wanted.into_iter().collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        if spec.drill.is_some() {
            r.not_judged.push(format!(
                "{} ({}): a drill, judged by how its load recovers while it runs",
                spec.id, spec.title
            ));
            continue;
        }
        let j = gates::judge_gates(spec, &r.metrics, &observed, opts.baseline.as_ref());
        r.verdicts.push(PhaseVerdict {
            phase: spec.id.clone(),
            title: spec.title.clone(),
            verdict: j.verdict,
            reason: j.reason,
            gates: j.gates,
        });
    }
    r.notes.push(
        "judged offline: a file has no exit status (taken as 0) and no telemetry (Xid not judged)"
            .into(),
    );
}

/// The mode an S3 probe output ran in, from its report line (`None`: no report in it).
fn probe_mode_of_output(text: &str) -> Option<String> {
    text.lines()
        .filter(|l| l.starts_with("{\"burnin\":\"s3_report\""))
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            v["report"]["mode"].as_str().map(str::to_string)
        })
}

/// The mode a phase's command runs the S3 probe in: its `--mode` (`get` when not given).
fn probe_mode_of_command(command: &str) -> &str {
    let mut words = command.split_whitespace();
    while let Some(w) = words.next() {
        if w == "--mode" {
            return words.next().unwrap_or("get");
        }
        if let Some(m) = w.strip_prefix("--mode=") {
            return m;
        }
    }
    "get"
}

/// Where a table's in-place busbw peaks above its out-of-place one (it does in several real
/// runs across nodes): the phases judge the out-of-place column, as documented, and the
/// note says the other, since vendors' pages quote the higher of the two.
fn in_place_notes(metrics: &[PhaseMetric]) -> Vec<String> {
    /// A peak busbw and the size it was read at.
    type Peak = (f64, u64);
    // Per collective: the out-of-place peak, the in-place peak.
    let mut peaks: BTreeMap<(Option<&str>, &str, u32), (Peak, Peak)> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::BusBw {
            node,
            ranks,
            collective,
            size_bytes,
            busbw_gb_per_s,
            in_place_busbw_gb_per_s,
            ..
        } = m
        {
            // One table against itself: the same node, collective and job size.
            let e = peaks
                .entry((node.as_deref(), collective, *ranks))
                .or_insert(((f64::MIN, 0), (f64::MIN, 0)));
            if *busbw_gb_per_s > e.0.0 {
                e.0 = (*busbw_gb_per_s, *size_bytes);
            }
            if let Some(b) = in_place_busbw_gb_per_s.filter(|b| *b > e.1.0) {
                e.1 = (b, *size_bytes);
            }
        }
    }
    peaks
        .into_iter()
        .filter(|(_, (out, inp))| inp.0 > out.0)
        .map(|((_, c, _), (out, inp))| {
            format!(
                "{c}: the in-place busbw peaks higher, {} GB/s at {} B (out-of-place, which the \
                 phases judge: {} GB/s at {} B); vendors' pages often quote the higher",
                inp.0, inp.1, out.0, out.1
            )
        })
        .collect()
}

/// Figures, checks and problems from the metrics.
fn fill_from_metrics(r: &mut Reading) {
    r.notes.extend(in_place_notes(&r.metrics));
    for (name, samples) in gates::figures(&r.metrics) {
        let unit = unit_of(&name);
        for s in samples {
            r.figures.push(FigureRow {
                name: name.clone(),
                unit,
                subject: s.subject,
                value: s.value,
            });
        }
    }
    for m in &r.metrics {
        match m {
            PhaseMetric::Check {
                name,
                status,
                detail,
                ..
            } => r.checks.push(CheckRow {
                name: name.clone(),
                status: *status,
                detail: detail.clone(),
            }),
            PhaseMetric::Problem { text, .. } => r.problems.push(text.clone()),
            _ => {}
        }
    }
}

fn read_t0_section(r: &mut Reading, text: &str, section: &'static str, opts: &Options) {
    let node = node_of(&r.path);
    let mut p = crate::parsers::preflight::PreflightParser::new();
    p.push(&format!("== {section}"));
    for line in text.lines() {
        // A section header inside the text would end the section early: not ours to read.
        if !line.trim_start().starts_with("== ") {
            p.push(line);
        }
    }
    let wanted = t0_checks_of(section);
    r.metrics = p
        .finish(&node, opts.gpus)
        .into_iter()
        .filter(|m| matches!(m, PhaseMetric::Check { name, .. } if wanted.contains(&name.as_str())))
        .collect();
    fill_from_metrics(r);
    let Some(t0) = opts
        .plan
        .phases
        .iter()
        .find(|p| p.parser == ParserKind::Preflight)
    else {
        r.notes
            .push("the plan has no preflight phase to judge the checks".into());
        return;
    };
    let observed = Observed {
        nodes: vec![node],
        offline: true,
        ..Observed::default()
    };
    let j = gates::judge_gates(t0, &r.metrics, &observed, None);
    r.verdicts.push(PhaseVerdict {
        phase: t0.id.clone(),
        title: format!("{} — only its {section} checks", t0.title),
        verdict: j.verdict,
        reason: j.reason,
        gates: j.gates,
    });
    r.notes.push(format!(
        "read as the `{section}` section of T0's output; T0's other checks need its other sections"
    ));
}

pub(super) fn triage_findings(
    store: &crate::store::ClusterStore,
    rounds: &mut crate::triage::Triage,
) -> Vec<FindingRow> {
    rounds
        .evaluate(store)
        .into_iter()
        .map(|f| FindingRow {
            severity: f.severity.label(),
            rule: f.rule,
            subject: f.subject(),
            why: f.why.clone(),
        })
        .collect()
}

/// The nodes behind a file and their spec entries: as `--nodes`, `--gpu-model` and `--nics`
/// say (the job spans that many nodes of those parts), else one node of parts not known.
type NodesBehind = (
    BTreeMap<String, u32>,
    BTreeMap<String, crate::model::spec::NodeHardware>,
);

fn nodes_behind(opts: &Options, node: &str) -> NodesBehind {
    match &opts.hardware {
        Some(h) if h.nodes > 1 => {
            let names: Vec<String> = (1..=h.nodes).map(|i| format!("node{i}")).collect();
            let hw = opts.plan.hardware.resolve(&h.parts);
            (
                names.iter().map(|n| (n.clone(), opts.gpus)).collect(),
                names
                    .iter()
                    .map(String::as_str)
                    .chain(std::iter::once(node))
                    .map(|n| (n.to_string(), hw.clone()))
                    .collect(),
            )
        }
        Some(h) => (
            BTreeMap::from([(node.to_string(), opts.gpus)]),
            BTreeMap::from([(node.to_string(), opts.plan.hardware.resolve(&h.parts))]),
        ),
        None => (
            BTreeMap::from([(node.to_string(), opts.gpus)]),
            BTreeMap::new(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::parse::detect::KINDS;
    use crate::commands::parse::test_options as opts;
    use crate::model::phase::GateStatus;
    use proptest::prelude::*;

    #[test]
    fn an_s3_probe_output_is_judged_only_by_the_phase_that_runs_its_mode() {
        assert_eq!(
            probe_mode_of_command("{burnin} probe s3 --endpoint e --bucket b"),
            "get"
        );
        assert_eq!(
            probe_mode_of_command("{burnin} probe s3 --mode checkpoint --json-lines"),
            "checkpoint"
        );
        assert_eq!(probe_mode_of_command("probe s3 --mode=loader"), "loader");
        let get = crate::parsers::fixtures::tool_output("s3-probe/seaweed-get-healthy.jsonl");
        let r = read_text(
            "node01.jsonl",
            &get,
            Some(Kind::Tool(ParserKind::S3Probe)),
            &opts(),
        )
        .expect("reads");
        let phases: Vec<&str> = r.verdicts.iter().map(|v| v.phase.as_str()).collect();
        assert_eq!(phases, ["S2"], "{:?}", r.not_judged);
        assert!(
            r.not_judged
                .iter()
                .any(|n| n.contains("S3") && n.contains("checkpoint mode, this output is get mode")),
            "{:?}",
            r.not_judged
        );
        // A hostile mode reaches the screen stripped.
        let evil = get.replace("\"mode\":\"get\"", "\"mode\":\"\\u001b[2Jx\"");
        let r = read_text(
            "node01.jsonl",
            &evil,
            Some(Kind::Tool(ParserKind::S3Probe)),
            &opts(),
        )
        .expect("reads");
        assert!(!render(&r).contains('\u{1b}'));
    }

    #[test]
    fn a_training_log_is_not_failed_by_the_gemm_phase_nor_a_gemm_log_by_training() {
        let train =
            crate::parsers::fixtures::tool_output("h200-verdicts/healthy2/logs/T5/h200.log");
        let r = read_text(
            "h200.log",
            &train,
            Some(Kind::Tool(ParserKind::Workload)),
            &opts(),
        )
        .expect("reads");
        let phases: Vec<&str> = r.verdicts.iter().map(|v| v.phase.as_str()).collect();
        assert_eq!(phases, ["T5", "T8"], "{:?}", r.not_judged);
        assert!(
            r.not_judged
                .iter()
                .any(|n| n.starts_with("T2 ") && n.contains("reads tflops_bf16, tflops_fp8")),
            "{:?}",
            r.not_judged
        );
        let gemm = crate::parsers::fixtures::tool_output("h200-verdicts/broken/logs/T2/h200.log");
        let r = read_text(
            "h200.log",
            &gemm,
            Some(Kind::Tool(ParserKind::Workload)),
            &opts(),
        )
        .expect("reads");
        let phases: Vec<&str> = r.verdicts.iter().map(|v| v.phase.as_str()).collect();
        assert_eq!(phases, ["T2"], "{:?}", r.not_judged);
        // An output that measured nothing is judged by every phase that reads its kind.
        let r = read_text(
            "h200.log",
            "Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n",
            Some(Kind::Tool(ParserKind::Workload)),
            &opts(),
        )
        .expect("reads");
        assert!(r.verdicts.len() >= 3, "{:?}", r.verdicts);
        assert!(r.verdicts.iter().all(|v| v.verdict == Verdict::Fail));
    }

    /// Each phase's verdict comes with how every one of its gates judged the file, as a run
    /// records them. A gdsio run that stopped with an IO error FAILs on the failure line itself
    /// (said in the reason); its gates say what each could and could not judge.
    #[test]
    fn every_gate_says_how_it_judged() {
        let text = crate::parsers::fixtures::corpus_text(
            "gdsio/gds-1.0-quadro-p1000-vm-samsung-sm961-gpud-write-1k-2k-ok-4k-io-failed.txt",
        );
        let r = read_text("gdsio.txt", &text, None, &opts()).expect("reads");
        let s4 = r.verdicts.iter().find(|v| v.phase == "S4").expect("S4");
        assert_eq!(s4.verdict, Verdict::Fail);
        assert!(s4.reason.contains("IO failed"), "{}", s4.reason);
        let gates: Vec<(&str, GateStatus)> = s4
            .gates
            .iter()
            .map(|g| (g.gate.as_str(), g.status))
            .collect();
        assert_eq!(
            gates,
            [
                ("no Xid during the phase", GateStatus::NotJudged),
                ("all checks ok", GateStatus::Warned),
                ("gdsio_gib_per_s_gpud_read >= 1", GateStatus::NotJudged)
            ]
        );
        let shown = render(&r);
        assert!(
            shown.contains("    gate ! all checks ok warned: "),
            "{shown}"
        );
        assert!(
            shown.contains("    gate – no Xid during the phase not judged"),
            "{shown}"
        );
    }

    #[test]
    fn nothing_it_does_not_know_is_called_a_kind() {
        let e = read_text("x", "hello world\nnothing here\n", None, &opts()).unwrap_err();
        assert!(e.contains("not an output burnin reads"), "{e}");
    }

    proptest! {
        #[test]
        fn any_text_as_any_kind_never_panics(
            lines in proptest::collection::vec(".{0,120}", 0..40),
            k in 0..KINDS.len(),
        ) {
            let text = lines.join("\n");
            let _ = detect(&text);
            let _ = read_text("p", &text, None, &opts());
            let _ = read_text("p", &text, Some(KINDS[k].1), &opts());
        }

        #[test]
        fn tool_shaped_garbage_never_panics(
            rows in proptest::collection::vec(
                proptest::collection::vec("[0-9a-zN/A.e+:#\\[\\]-]{1,9}", 1..16), 0..30),
            k in 0..KINDS.len(),
        ) {
            let text: Vec<String> = rows.iter().map(|r| r.join("  ")).collect();
            let _ = read_text("p", &text.join("\n"), Some(KINDS[k].1), &opts());
        }
    }
}
