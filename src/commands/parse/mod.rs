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

mod detect;
pub mod hardware;
mod read;
mod render;
mod telemetry;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::phase::Verdict;
use crate::plan::Plan;
use crate::plan::gates::{self, Baseline};

pub use detect::{KINDS, Kind, detect};
pub use read::{CheckRow, FigureRow, FindingRow, PhaseVerdict, Reading, read_path, read_text};
pub use render::render;

/// The largest file read (a log of a 72-hour run is tens of MB; past this it is not a log).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

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
    /// What the nodes behind the files were (`--nodes`, `--gpu-model`, `--nics`), for the
    /// `spec` gates; `None`: those gates are not judged offline.
    pub hardware: Option<hardware::NodesAs>,
}

/// What `burnin parse` was given besides its files.
pub(super) struct Given {
    pub plan: Option<PathBuf>,
    pub baseline: Option<PathBuf>,
    pub gpus: Option<u32>,
    pub fields: Vec<String>,
    pub save_baseline: Option<PathBuf>,
    pub hardware: crate::commands::cli::ParseHardware,
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
        fleet: None,
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
    // A `to` that is a link is refused, never written through.
    crate::record::files::write_replacing(to, (text + "\n").as_bytes())
        .map_err(|e| e.to_string())?;
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
    given: Given,
) -> color_eyre::eyre::Result<i32> {
    use crate::commands::parse::{Kind, Options};
    let Given {
        plan,
        baseline,
        gpus,
        fields,
        save_baseline,
        hardware,
    } = given;
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
    let hardware = match hardware::nodes_as(&hardware, &plan, gpus) {
        Ok(h) => h,
        Err(why) => {
            crate::eprintln_safe!("burnin parse: {why}");
            return Ok(2);
        }
    };
    let opts = Options {
        plan,
        baseline,
        gpus: gpus.unwrap_or(8),
        smi_fields: (!fields.is_empty()).then_some(fields),
        hardware,
    };
    Ok(run(&files, kind, &opts, json, save_baseline.as_deref()))
}

/// The options of a plain `burnin parse` on the shipped plan, for the tests of each part.
#[cfg(test)]
fn test_options() -> Options {
    Options {
        plan: crate::plan::default_plan().clone(),
        baseline: None,
        gpus: 8,
        smi_fields: None,
        hardware: None,
    }
}
