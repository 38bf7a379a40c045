//! `burnin parse [KIND] FILE…`: what burnin reads from a tool's output, offline. For the site
//! engineer who asks "what does burnin make of this log?", and for bug reports: the kind of
//! output (detected when not given), the rows and figures with their units, the checks, the
//! failure lines, and the verdict each phase of the plan that reads this kind would give.
//!
//! Phase outputs (nccl-tests, perftest, nvbandwidth, trainer logs, our workloads, T0/T1
//! sections, `probe s3`) go through the same [`OutputParser`] and [`gates::judge`] a run uses,
//! judged offline: a file carries no exit status and no telemetry, so those gates say they were
//! not judged. One command of T0's (`/proc/driver/nvidia/version`, a kernel log, `lspci -vvv`,
//! `nv-fabricmanager --version`) is read as that section of T0 and judged by its own checks.
//! Telemetry texts (nvidia-smi CSV, `nvidia-smi topo -m`, dcgm-exporter and MinIO scrapes)
//! go through the console's readers: their GPUs, topology, findings of the triage rules, or the
//! store's TTFB and drives.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::phase::{CheckStatus, PhaseMetric, Verdict};
use crate::parsers::{OutputParser, ParseContext, ParserKind};
use crate::plan::gates::{self, Baseline, Observed};
use crate::plan::{Gate, Plan, unit_of};

/// The largest file read (a log of a 72-hour run is tens of MB; past this it is not a log).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// What an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A phase output read by one of the plan's parsers.
    Tool(ParserKind),
    /// One command of T0's, read as that section (`driver`, `xid`, `acs`,
    /// `fabricmanager-version`).
    T0Section(&'static str),
    /// `nvidia-smi --query-gpu=… --format=csv`.
    SmiCsv,
    /// `nvidia-smi topo -m`.
    Topo,
    /// A dcgm-exporter (or `burnin agent --listen`) scrape.
    DcgmExporter,
    /// A MinIO metrics scrape.
    Minio,
}

/// Every kind by its name on the command line.
pub const KINDS: &[(&str, Kind)] = &[
    ("nccl-tests", Kind::Tool(ParserKind::NcclTests)),
    ("perftest", Kind::Tool(ParserKind::Perftest)),
    ("nvbandwidth", Kind::Tool(ParserKind::Nvbandwidth)),
    ("trainlog", Kind::Tool(ParserKind::Trainlog)),
    ("workload", Kind::Tool(ParserKind::Workload)),
    ("sanity", Kind::Tool(ParserKind::Sanity)),
    ("preflight", Kind::Tool(ParserKind::Preflight)),
    ("s3-probe", Kind::Tool(ParserKind::S3Probe)),
    ("gdsio", Kind::Tool(ParserKind::Gdsio)),
    ("dcgm-diag", Kind::Tool(ParserKind::DcgmDiag)),
    ("driver-version", Kind::T0Section("driver")),
    ("kernel-log", Kind::T0Section("xid")),
    ("lspci", Kind::T0Section("acs")),
    ("gdscheck", Kind::T0Section("gdscheck")),
    (
        "fabricmanager-version",
        Kind::T0Section("fabricmanager-version"),
    ),
    ("smi-csv", Kind::SmiCsv),
    ("topo", Kind::Topo),
    ("dcgm-exporter", Kind::DcgmExporter),
    ("minio", Kind::Minio),
];

impl Kind {
    /// The kind named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Kind> {
        KINDS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// Every name, for messages.
    pub fn names() -> String {
        KINDS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// The T0 checks a section answers (the rest of T0's checks need other sections).
fn t0_checks_of(section: &str) -> &'static [&'static str] {
    match section {
        "driver" => &["driver-branch", "open-kernel-module"],
        "xid" => &["xid"],
        "acs" => &["pcie-acs"],
        "fabricmanager-version" => &[
            "fabric-manager",
            "fabric-manager-version",
            "fabric-manager-active",
        ],
        "gdscheck" => &[
            "gds-platform",
            "gds-nvidia-fs",
            "gds-backend",
            "gds-compat-mode",
            "gds-rdma",
            "gds-iommu",
            "gds-gpus",
        ],
        _ => &[],
    }
}

/// Guess the kind of `text` from lines only its tool prints; `None` when nothing fits.
pub fn detect(text: &str) -> Option<Kind> {
    let lines: Vec<&str> = text
        .lines()
        .take(20_000)
        .map(|l| crate::parsers::launcher::strip(l).body.trim())
        .collect();
    let any = |f: &dyn Fn(&str) -> bool| lines.iter().any(|l| f(l));
    let tagged = |tags: &[&str]| {
        any(&|l: &str| {
            l.starts_with('{')
                && tags.iter().any(|t| {
                    l.contains(&format!("\"burnin\":\"{t}\""))
                        || l.contains(&format!("\"burnin\": \"{t}\""))
                })
        })
    };
    if tagged(&["s3_window", "s3_report"]) {
        return Some(Kind::Tool(ParserKind::S3Probe));
    }
    if tagged(&["gemm", "step", "first_batch"]) {
        return Some(Kind::Tool(ParserKind::Workload));
    }
    let section = |name: &str| any(&|l: &str| l == format!("== {name}"));
    if any(&crate::parsers::dcgm_diag::is_diag_line) {
        return Some(Kind::Tool(ParserKind::DcgmDiag));
    }
    if any(&|l: &str| {
        crate::parsers::gdsio::gdsio_row(l).is_some()
            || crate::parsers::gdsio::gdsio_failure(l)
            // gds_stats' per-GPU count: the path a GPU-direct read took.
            || crate::parsers::gdsio::CufileReads::gds_stats_line(l).is_some()
    }) {
        return Some(Kind::Tool(ParserKind::Gdsio));
    }
    // `gdscheck -p` alone (T0 prints it under `== gdscheck`, read with the rest of T0).
    if !section("gdscheck")
        && any(&|l: &str| {
            l.starts_with("GDS release version")
                || l.starts_with("Platform verification")
                || l.eq_ignore_ascii_case("cufile configuration:")
        })
    {
        return Some(Kind::T0Section("gdscheck"));
    }
    if ["os", "numa", "acs", "packages", "kernel"]
        .iter()
        .any(|s| section(s))
    {
        return Some(Kind::Tool(ParserKind::Preflight));
    }
    if section("fabricmanager-active") || section("fabric") {
        return Some(Kind::Tool(ParserKind::Sanity));
    }
    let nccl_row = |l: &str| {
        let t: Vec<&str> = l.split_whitespace().collect();
        t.len() >= 8
            && t[0].bytes().all(|b| b.is_ascii_digit())
            && t[1].bytes().all(|b| b.is_ascii_digit())
            && matches!(
                t[2],
                "float"
                    | "half"
                    | "bfloat16"
                    | "double"
                    | "int8"
                    | "uint8"
                    | "int32"
                    | "uint32"
                    | "int64"
                    | "uint64"
                    | "f8e4m3"
                    | "f8e5m2"
                    | "char"
                    | "int"
            )
    };
    if any(&|l: &str| {
        nccl_row(l)
            || l.contains("Test NCCL failure")
            || l.contains("Test CUDA failure")
            || l.starts_with("# nThread")
            || l.starts_with("nThread ")
            || l.starts_with("# Collective test starting")
            || l.starts_with("# Avg bus bandwidth")
            || (l.starts_with('#') && l.contains("busbw") && l.contains("algbw"))
    }) {
        return Some(Kind::Tool(ParserKind::NcclTests));
    }
    if any(&|l: &str| {
        (l.starts_with("#bytes") && l.contains("#iterations"))
            || (l.ends_with(" Test") && (l.contains(" BW ") || l.contains(" Latency ")))
            || l.starts_with("Couldn't connect to ")
            || l.contains("Unable to init the socket connection")
            || l.starts_with("Completion with error")
    }) {
        return Some(Kind::Tool(ParserKind::Perftest));
    }
    if any(&|l: &str| {
        l.starts_with("nvbandwidth Version")
            || l.starts_with("\"nvbandwidth\"")
            || (l.starts_with("Running ")
                && ["device_to", "host_to", "multinode_", "all_to", "one_to"]
                    .iter()
                    .any(|t| l[8..].starts_with(t)))
            || (l.contains("(row)") && l.contains("(column)"))
    }) {
        return Some(Kind::Tool(ParserKind::Nvbandwidth));
    }
    {
        let mut p = crate::parsers::trainlog::TrainLogParser::new();
        let steps: usize = lines.iter().take(5000).map(|l| p.push(l).len()).sum();
        if steps > 0
            || p.framework().is_some()
            || any(&|l: &str| {
                l.contains("Watchdog caught collective operation timeout")
                    || l.contains("ProcessGroupNCCL")
            })
        {
            return Some(Kind::Tool(ParserKind::Trainlog));
        }
    }
    if any(&|l: &str| l.starts_with("NVRM version:")) {
        return Some(Kind::T0Section("driver"));
    }
    if any(&|l: &str| l.contains("Fabric Manager version is")) {
        return Some(Kind::T0Section("fabricmanager-version"));
    }
    if any(&|l: &str| l.contains("ACSCtl:")) {
        return Some(Kind::T0Section("acs"));
    }
    if any(&|l: &str| l.contains("NVRM: Xid") || l.contains("NVRM:")) {
        return Some(Kind::T0Section("xid"));
    }
    if any(&|l: &str| l.split_whitespace().next() == Some("GPU0"))
        && any(&|l: &str| l.starts_with("Legend") || l.contains("Affinity"))
    {
        return Some(Kind::Topo);
    }
    if any(&|l: &str| l.starts_with("DCGM_FI_") || l.contains(" DCGM_FI_")) {
        return Some(Kind::DcgmExporter);
    }
    if any(&|l: &str| {
        l.starts_with("minio_") || l.contains(" minio_") || l.starts_with("s3_ttfb_seconds")
    }) {
        return Some(Kind::Minio);
    }
    // A `--format=csv` header: every cell a field name (`power.draw [W]`), one at least with
    // a dot or one of the plain names.
    let field = crate::sources::smi::is_field_name;
    if lines.iter().take(3).any(|l| {
        let cells: Vec<&str> = l.split(", ").collect();
        cells.iter().all(|c| field(c))
            && cells.iter().any(|c| {
                c.contains('.')
                    || matches!(
                        c.split(" [").next().unwrap_or(c).trim(),
                        "index" | "name" | "uuid" | "driver_version" | "timestamp"
                    )
            })
    }) {
        return Some(Kind::SmiCsv);
    }
    None
}

/// How a file is read and judged.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plan whose phases judge the output.
    pub plan: Plan,
    /// A saved baseline for the `baseline` gates.
    pub baseline: Option<Baseline>,
    /// GPUs the node should have (GPU-count checks, the 1-rank nccl-tests check).
    pub gpus: u32,
    /// For nvidia-smi CSV without a header: the `--query-gpu` fields, in order.
    pub smi_fields: Option<Vec<String>>,
}

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
fn node_of(path: &str) -> String {
    let stem = Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = crate::model::fit(stem.trim(), 40);
    if stem.is_empty() { "node".into() } else { stem }
}

const UNREAD_KEPT: usize = 5;

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
    let observed = Observed {
        nodes: vec![node.clone()],
        node_gpus: BTreeMap::from([(node.clone(), opts.gpus)]),
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

/// Figures, checks and problems from the metrics.
fn fill_from_metrics(r: &mut Reading) {
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

fn triage_findings(
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

fn read_smi(r: &mut Reading, text: &str, opts: &Options) {
    use crate::model::SourceEvent;
    use crate::wire::WireMessage;
    let node = node_of(&r.path);
    let fields: Vec<String> = opts.smi_fields.clone().unwrap_or_default();
    let field_refs: Vec<&str> = fields.iter().map(String::as_str).collect();
    // However many GPUs the capture holds: a loop ends where the index wraps, or at the end.
    let mut d = crate::sources::smi::SmiDecoder::new(&node, &field_refs, 1024);
    // nvidia-smi rows carry no time of their own: a second apart, as `-l 1` prints them.
    let period = crate::model::units::Period::SECOND;
    let period_ms = period.millis();
    let mut store = crate::store::ClusterStore::with_period(period);
    let mut triage = crate::triage::Triage::new();
    let mut hello = None;
    let mut frames = 0u64;
    let mut last = None;
    let mut errors = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let end_ms = 1_000 + period_ms * lines.len() as u64;
    for (i, line) in lines
        .iter()
        .map(Some)
        .chain(std::iter::once(None))
        .enumerate()
    {
        let at_ms = 1_000 + period_ms * i as u64;
        let got = match line {
            Some(line) => d.push_line(line, at_ms),
            None => Ok(d.finish(end_ms)),
        };
        match got {
            Ok(msgs) => {
                for m in msgs {
                    match m {
                        WireMessage::Hello(h) => {
                            hello = Some(h.clone());
                            store.ingest(SourceEvent::Hello(h));
                        }
                        WireMessage::Frame(f) => {
                            frames += 1;
                            last = Some(f.clone());
                            store.ingest(SourceEvent::Frame(f));
                            store.ingest(SourceEvent::Clock { at_ms });
                        }
                        WireMessage::Error(e) => errors.push(e),
                    }
                }
            }
            Err(g) => {
                r.unread_lines += 1;
                if r.unread.len() < UNREAD_KEPT {
                    r.unread.push(format!("line {}: {}", g.line_no, g.reason));
                }
            }
        }
    }
    if fields.is_empty() && hello.is_none() && r.unread_lines > 0 {
        r.notes
            .push("no header line names the columns: give the query's fields with --fields".into());
    }
    r.notes.push(
        "nvidia-smi rows carry no time: each line is taken a second after the one before".into(),
    );
    // Triage judges readings: a query of names and versions only has none to judge.
    let readings = last.as_ref().is_some_and(|f: &crate::model::NodeFrame| {
        f.gpus.iter().any(|g| {
            g.power_avg_watts.is_some() || g.utilization_pct.is_some() || g.temperature_c.is_some()
        })
    });
    if readings {
        r.findings = triage_findings(&store, &mut triage);
    } else {
        r.notes.push(
            "no power, utilization or temperature column: nothing for triage to judge".into(),
        );
    }
    r.problems = errors;
    r.telemetry = Some(serde_json::json!({
        "driver": hello.as_ref().and_then(|h| h.driver.clone()),
        "gpus": hello.as_ref().map(|h| h.gpus.clone()).unwrap_or_default(),
        "frames": frames,
        "last_frame": last,
    }));
}

fn read_topo(r: &mut Reading, text: &str) {
    match crate::agent::topology::parse_topo_matrix(text) {
        Some(t) => {
            r.telemetry = serde_json::to_value(&t).ok();
            r.notes.push(format!(
                "{} GPUs, {} NICs: the agent sends this in its hello; triage names the GPU whose nearest NIC is down",
                t.gpus.len(),
                t.nics.len()
            ));
        }
        None => r.problems.push("no GPU matrix in the text".into()),
    }
}

fn read_dcgm(r: &mut Reading, text: &str) {
    let g = crate::sources::dcgm_series::gather_text(text, &["Hostname", "hostname"]);
    let nodes: BTreeMap<String, serde_json::Value> = g
        .nodes
        .iter()
        .map(|(host, series)| {
            let gpus: Vec<serde_json::Value> = series
                .gpus
                .values()
                .map(|reading| serde_json::to_value(&reading.sample).unwrap_or_default())
                .collect();
            (
                if host.is_empty() {
                    "(no host label)".to_string()
                } else {
                    host.clone()
                },
                serde_json::json!({ "gpus": gpus }),
            )
        })
        .collect();
    let absent: BTreeMap<String, Vec<&str>> = g
        .absent()
        .into_iter()
        .map(|(why, names)| (why.reason().to_string(), names))
        .collect();
    r.telemetry = Some(serde_json::json!({
        "nodes": nodes,
        "mig_series_left_out": g.mig_series,
        "unusable_series": g.unusable,
        "absent": absent,
    }));
}

fn read_minio(r: &mut Reading, text: &str) {
    let exp = crate::wire::prometheus::parse(text);
    let snap = crate::probes::s3::server_metrics::snapshot(&exp);
    let q =
        |p: f64| crate::wire::prometheus::quantile(&snap.get_ttfb_buckets, p).map(|s| s * 1000.0);
    r.telemetry = Some(serde_json::json!({
        "samples": snap.samples,
        "get_requests": snap.get_requests,
        "errors_4xx": snap.errors_4xx,
        "errors_5xx": snap.errors_5xx,
        "get_ttfb_p50_ms": q(0.5),
        "get_ttfb_p99_ms": q(0.99),
        "drives_online": snap.drives_online,
        "drives_offline": snap.drives_offline,
    }));
    if let Some(off) = snap.drives_offline.filter(|d| *d > 0.0) {
        r.findings.push(FindingRow {
            severity: "warn",
            rule: "drives-offline",
            subject: "AIStor".into(),
            why: format!("{off} drive(s) offline in the scrape"),
        });
    }
    if !snap.is_minio() {
        r.notes
            .push("no MinIO figure the storage probe reads (GetObject rate, TTFB, drives)".into());
    }
}

/// The reading as text for a terminal: every text that came from the file stripped of
/// control characters.
pub fn render(r: &Reading) -> String {
    // Every piece is cleaned as it is written; the whole once more, for the pieces (a figure's
    // name, a subject) that come from the file by ways the pieces do not see.
    crate::model::terminal_safe(&render_text(r))
}

fn render_text(r: &Reading) -> String {
    use std::fmt::Write;
    let clean = |s: &str| crate::model::strip_controls(s);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {}{} ({} lines)",
        clean(&r.path),
        r.kind,
        if r.detected { ", detected" } else { "" },
        r.lines
    );
    if let Some(l) = &r.launcher {
        let _ = writeln!(o, "  launcher prefixes: {l}");
    }
    if let Some(f) = &r.format {
        let _ = writeln!(o, "  format: {f}");
    }
    if r.unread_lines > 0 {
        let _ = writeln!(o, "  {} line(s) not understood:", r.unread_lines);
        for u in &r.unread {
            let _ = writeln!(o, "    {}", clean(u));
        }
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &r.metrics {
        counts.entry(metric_kind(m)).or_default().add_assign_one();
    }
    if !counts.is_empty() {
        let list: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(o, "  read: {}", list.join(", "));
    }
    if !r.figures.is_empty() {
        let _ = writeln!(o, "  figures:");
        let mut by_name: BTreeMap<&str, Vec<&FigureRow>> = BTreeMap::new();
        for f in &r.figures {
            by_name.entry(&f.name).or_default().push(f);
        }
        for (name, rows) in by_name {
            if rows.len() <= 8 {
                for f in rows {
                    let _ = writeln!(
                        o,
                        "    {name} {} {} {}",
                        clean(&f.subject),
                        gates::fmt_value(f.value),
                        f.unit
                    );
                }
            } else {
                let mut v: Vec<f64> = rows.iter().map(|f| f.value).collect();
                v.sort_by(f64::total_cmp);
                let unit = rows[0].unit;
                let _ = writeln!(
                    o,
                    "    {name}: {} subjects, min {} median {} max {} {unit}",
                    v.len(),
                    gates::fmt_value(v[0]),
                    gates::fmt_value(v[v.len() / 2]),
                    gates::fmt_value(v[v.len() - 1])
                );
            }
        }
    }
    for c in &r.checks {
        let _ = writeln!(
            o,
            "  check {} {}: {}",
            status_word(c.status),
            c.name,
            clean(&c.detail)
        );
    }
    for p in &r.problems {
        let _ = writeln!(o, "  problem: {}", clean(p));
    }
    if let Some(t) = &r.telemetry {
        let text = serde_json::to_string(t).unwrap_or_default();
        let _ = writeln!(o, "  read: {}", clean(&crate::model::fit(&text, 600)));
    }
    for f in &r.findings {
        let _ = writeln!(
            o,
            "  finding {} {} {}: {}",
            f.severity,
            f.rule,
            clean(&f.subject),
            clean(&f.why)
        );
    }
    render_verdicts(&mut o, r);
    for n in &r.not_judged {
        let _ = writeln!(o, "  not judged: {}", clean(n));
    }
    for n in &r.notes {
        let _ = writeln!(o, "  note: {}", clean(n));
    }
    o
}

/// Each phase's verdict, then how each of its gates judged the file.
fn render_verdicts(o: &mut String, r: &Reading) {
    use std::fmt::Write;
    let clean = |s: &str| crate::model::strip_controls(s);
    for v in &r.verdicts {
        let _ = writeln!(
            o,
            "  {} {} ({}): {}",
            clean(&v.phase),
            v.verdict.label(),
            clean(&v.title),
            clean(&v.reason)
        );
        for g in &v.gates {
            let words = if g.words.is_empty() {
                String::new()
            } else {
                format!(": {}", clean(&g.words))
            };
            let _ = writeln!(
                o,
                "    gate {} {} {}{words}",
                g.status.mark(),
                clean(&g.gate),
                g.status.label()
            );
        }
    }
}

trait AddOne {
    fn add_assign_one(&mut self);
}

impl AddOne for usize {
    fn add_assign_one(&mut self) {
        *self += 1;
    }
}

fn status_word(s: CheckStatus) -> &'static str {
    match s {
        CheckStatus::Ok => "ok",
        CheckStatus::Failed => "FAILED",
        CheckStatus::Unknown => "unknown",
        CheckStatus::Warn => "warn",
    }
}

fn metric_kind(m: &PhaseMetric) -> &'static str {
    match m {
        PhaseMetric::BusBw { .. } => "nccl-tests rows",
        PhaseMetric::AvgBusBw { .. } => "avg busbw trailers",
        PhaseMetric::LatencyCdf { .. } => "latency CDFs",
        PhaseMetric::Tflops { .. } => "GEMM results",
        PhaseMetric::Step { .. } => "training steps",
        PhaseMetric::FirstBatch { .. } => "first-batch times",
        PhaseMetric::PairBw { .. } => "GPU-pair bandwidths",
        PhaseMetric::PairLat { .. } => "GPU-pair latencies",
        PhaseMetric::LinkBw { .. } => "perftest bandwidth rows",
        PhaseMetric::LinkLat { .. } => "perftest latency rows",
        PhaseMetric::Check { .. } => "checks",
        PhaseMetric::DiagGpu { .. } => "DCGM results per GPU",
        PhaseMetric::Storage { .. } => "probe windows",
        PhaseMetric::Figure { .. } => "figures",
        PhaseMetric::GdsRun { .. } => "gdsio runs",
        PhaseMetric::Together { .. } => "together comparisons",
        PhaseMetric::Drill { .. } => "drill outcomes",
        PhaseMetric::Problem { .. } => "failure lines",
        PhaseMetric::Gate { .. } => "gate outcomes",
    }
}

/// The whole answer of `burnin parse --json`.
#[derive(Debug, Serialize)]
pub struct Document {
    /// Format version of this document.
    pub schema: u32,
    /// The plan that judged.
    pub plan: String,
    /// One entry per file read.
    pub files: Vec<Reading>,
    /// Files that could not be read, with why.
    pub errors: Vec<String>,
}

/// `burnin parse`: read every file, print, and say how it went (0: every file read and no
/// phase failed it; 1: a phase FAILED a file; 2: a file could not be read or its kind not
/// told).
pub fn run(
    files: &[PathBuf],
    kind: Option<Kind>,
    opts: &Options,
    json: bool,
    save_baseline: Option<&Path>,
) -> i32 {
    let mut doc = Document {
        schema: 1,
        plan: opts.plan.file.clone(),
        files: Vec::new(),
        errors: Vec::new(),
    };
    for f in files {
        match read_path(f, kind, opts) {
            Ok(r) => doc.files.push(r),
            Err(e) => doc.errors.push(e),
        }
    }
    if json {
        match serde_json::to_string_pretty(&doc) {
            Ok(s) => crate::println_safe!("{s}"),
            Err(e) => crate::eprintln_safe!("burnin parse: {e}"),
        }
    } else {
        for r in &doc.files {
            crate::print_safe!("{}", render(r));
        }
        for e in &doc.errors {
            crate::eprintln_safe!("burnin parse: {}", crate::model::strip_controls(e));
        }
    }
    if let Some(to) = save_baseline
        && let Err(e) = write_baseline(&doc.files, to)
    {
        crate::eprintln_safe!("burnin parse: {}", crate::model::strip_controls(&e));
        return 2;
    }
    if !doc.errors.is_empty() {
        2
    } else if doc
        .files
        .iter()
        .any(|r| matches!(r.worst(), Some(Verdict::Fail | Verdict::Timeout)))
    {
        1
    } else {
        0
    }
}

/// The baseline these readings make: for every phase that judged a file and did not fail it,
/// the figures it judged (several files of one kind add their subjects). `None`: no phase
/// passed any file, so there is nothing good to compare with.
pub fn baseline_of(files: &[Reading]) -> Option<Baseline> {
    let mut b = Baseline {
        schema: 1,
        source: format!(
            "burnin parse: {}",
            files
                .iter()
                .map(|r| r.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        phases: BTreeMap::new(),
    };
    for r in files {
        let figures = gates::figures(&r.metrics);
        if figures.is_empty() {
            continue;
        }
        for v in &r.verdicts {
            if !matches!(v.verdict, Verdict::Pass | Verdict::Warn) {
                continue;
            }
            let phase = b.phases.entry(v.phase.clone()).or_default();
            for (name, samples) in &figures {
                phase
                    .entry(name.clone())
                    .or_default()
                    .extend(samples.iter().cloned());
            }
        }
    }
    (!b.phases.is_empty()).then_some(b)
}

fn write_baseline(files: &[Reading], to: &Path) -> Result<(), String> {
    let b = baseline_of(files).ok_or_else(|| {
        format!(
            "--save-baseline {}: no phase passed these files with figures; nothing saved",
            to.display()
        )
    })?;
    let text = serde_json::to_string_pretty(&b).map_err(|e| e.to_string())?;
    std::fs::write(to, text + "\n").map_err(|e| format!("{}: {e}", to.display()))?;
    crate::eprintln_safe!(
        "baseline {}: {} from {} file(s)",
        to.display(),
        b.phases.keys().cloned().collect::<Vec<_>>().join(", "),
        files.len()
    );
    Ok(())
}

/// Whether a word reads as a path (it has a separator or an extension), not as a kind's name.
fn first_looks_like_a_path(p: &Path) -> bool {
    let s = p.to_string_lossy();
    s.contains('/') || s.contains('.')
}

/// `burnin parse`: the kind (when the first argument names one that is not a file), the plan
/// and baseline, then every file.
pub(super) fn parse_files(
    args: Vec<String>,
    json: bool,
    plan: Option<PathBuf>,
    baseline: Option<PathBuf>,
    gpus: u32,
    fields: Vec<String>,
    save_baseline: Option<PathBuf>,
) -> color_eyre::eyre::Result<i32> {
    use crate::commands::parse::{Kind, Options};
    let mut args = args.into_iter();
    let first = args.next().unwrap_or_default();
    let (kind, files): (Option<Kind>, Vec<PathBuf>) =
        match Kind::from_name(&first).filter(|_| !Path::new(&first).exists()) {
            Some(k) => (Some(k), args.map(PathBuf::from).collect()),
            None => (
                None,
                std::iter::once(first)
                    .chain(args)
                    .map(PathBuf::from)
                    .collect(),
            ),
        };
    // A first word that is neither a file nor a kind, before files that exist, was meant as a
    // kind: say so rather than "no such file".
    if kind.is_none()
        && files.len() > 1
        && !files[0].exists()
        && !first_looks_like_a_path(&files[0])
        && files[1..].iter().all(|f| f.exists())
    {
        crate::eprintln_safe!(
            "burnin parse: unknown kind {:?} (the kinds: {})",
            crate::model::strip_controls(&files[0].display().to_string()),
            Kind::names()
        );
        return Ok(2);
    }
    if files.is_empty() {
        crate::eprintln_safe!("burnin parse: no file after the kind");
        return Ok(2);
    }
    let plan = match plan {
        Some(p) => match Plan::load(&p) {
            Ok(plan) => plan,
            Err(e) => {
                crate::eprintln_safe!("burnin parse: {e}");
                return Ok(2);
            }
        },
        None => crate::plan::default_plan().clone(),
    };
    let baseline = match baseline {
        Some(p) => match crate::record::session::read_baseline(&p) {
            Ok(b) => Some(b),
            Err(e) => {
                crate::eprintln_safe!("burnin parse: {e}");
                return Ok(2);
            }
        },
        None => None,
    };
    let opts = Options {
        plan,
        baseline,
        gpus,
        smi_fields: (!fields.is_empty()).then_some(fields),
    };
    Ok(run(&files, kind, &opts, json, save_baseline.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::phase::GateStatus;
    use proptest::prelude::*;

    fn opts() -> Options {
        Options {
            plan: crate::plan::default_plan().clone(),
            baseline: None,
            gpus: 8,
            smi_fields: None,
        }
    }

    #[test]
    fn the_help_names_every_kind() {
        use clap::CommandFactory;
        let mut cli = crate::commands::cli::Cli::command();
        let help = cli
            .find_subcommand_mut("parse")
            .expect("parse")
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for (name, _) in KINDS {
            assert!(
                help.contains(&format!(" {name},")) || help.contains(&format!(" {name};")),
                "{name}"
            );
        }
    }

    #[test]
    fn every_kind_has_a_name_it_reads_back() {
        for (name, kind) in KINDS {
            assert_eq!(Kind::from_name(name), Some(*kind));
            assert_eq!(kind.name(), *name);
        }
    }

    #[test]
    fn text_from_the_file_reaches_the_terminal_without_control_characters() {
        let text = "# nThread 1 nGpus 1\nhost\u{1b}]0;PWNED\u{7}: Test NCCL failure common.cu:1 'x\u{1b}[2J'\n";
        let r = read_text("n.log", text, None, &opts()).expect("read");
        let shown = render(&r);
        assert!(shown.contains("Test NCCL failure"), "{shown}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
    }

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
