//! NVIDIA DCGM's diagnostic, `dcgmi diag -r LEVEL -j` (and the table it prints without `-j`),
//! read into one result per test: its status overall and per GPU, and its warnings. The JSON
//! follows DCGM's own writer (`dcgmi/Diag.cpp`, key names in `nvvs/include/NvvsJsonStrings.h`),
//! whose shape changed between versions (`tests/corpus/dcgm-diag/_FORMAT.md`):
//!
//! - 3.x: root `"DCGM GPU Diagnostic"`; per-GPU results keyed `gpu_ids` (to 3.2) or `gpu_id`
//!   (3.3, a string); `warnings` one string (to 3.2) or an array of objects whose message is
//!   `warning` (or `warnings` in Deployment results, 3.3.3 on); `info` one string.
//! - 4.x: root `"DCGM Diagnostic"`; results per entity (`entity_group`, `entity_id`); `info` an
//!   array; each test has a `test_summary` with the errors tied to no GPU; `metadata` holds
//!   the version and driver.
//! - Both: a run that could not complete prints `{root: {"version", "runtime_error"}}`;
//!   `--iterations N` wraps documents in `{"iterations": [...], "Overall Result": ...}`.
//!
//! DCGM writes a warning as "Fail" in JSON, so a JSON "Fail" is a failure as DCGM judged it;
//! "Warn" exists only in 4.x tables.

use serde_json::Value;

use crate::model::fit;
use crate::model::phase::{CheckStatus, DiagGpuTest};

/// Most bytes of a diagnostic's output read: a level-4 document of 8 GPUs is ~100 kB; what is
/// past this is counted, and a document cut by it is not judged.
pub const MAX_BYTES: usize = 4 << 20;
/// Most tests read from one document (DCGM has about twenty).
const MAX_TESTS: usize = 64;
/// Most characters of DCGM's own words quoted in a check.
const QUOTED: usize = 240;

/// How DCGM judged a test, or one GPU in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiagStatus {
    /// "Pass".
    Pass,
    /// "Skip": not run on this system (EUD not installed, say).
    Skip,
    /// "Warn" (4.x tables only).
    Warn,
    /// "Fail" (in JSON, a warning too).
    Fail,
    /// A word DCGM does not write: said as is, never taken for a pass.
    Other(String),
}

impl DiagStatus {
    fn parse(word: &str) -> DiagStatus {
        match word.trim().to_ascii_lowercase().as_str() {
            "pass" => DiagStatus::Pass,
            "skip" => DiagStatus::Skip,
            "warn" | "warning" => DiagStatus::Warn,
            "fail" => DiagStatus::Fail,
            _ => DiagStatus::Other(fit(word.trim(), 40)),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            DiagStatus::Pass => 0,
            DiagStatus::Skip => 1,
            DiagStatus::Other(_) => 2,
            DiagStatus::Warn => 3,
            DiagStatus::Fail => 4,
        }
    }

    fn word(&self) -> &str {
        match self {
            DiagStatus::Pass => "Pass",
            DiagStatus::Skip => "Skip",
            DiagStatus::Warn => "Warn",
            DiagStatus::Fail => "Fail",
            DiagStatus::Other(w) => w,
        }
    }
}

/// One DCGM test as read.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagTest {
    /// The test as DCGM names it ("Memory Bandwidth" in 3.x, "memory_bandwidth" in 4.x).
    pub name: String,
    /// Its status overall: the worst of its results and its summary.
    pub status: DiagStatus,
    /// Per GPU, where DCGM said.
    pub gpus: Vec<(u32, DiagStatus)>,
    /// Its warnings and errors, with the GPU where one is named.
    pub warnings: Vec<(Option<u32>, String)>,
}

/// What one run of the diagnostic said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiagRun {
    /// DCGM's version, where the output says it.
    pub version: Option<String>,
    /// The driver DCGM saw.
    pub driver: Option<String>,
    /// The tests, in the order DCGM printed them.
    pub tests: Vec<DiagTest>,
    /// Why the diagnostic could not complete, in DCGM's words.
    pub runtime_error: Option<String>,
}

/// Reads a node's output of `dcgmi diag` to its end.
#[derive(Debug, Default)]
pub struct DcgmDiagParser {
    text: String,
    dropped_bytes: usize,
}

impl DcgmDiagParser {
    /// A parser that has read nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep one line (the document is read whole at the end).
    pub fn push(&mut self, line: &str) {
        if self.text.len() + line.len() + 1 > MAX_BYTES {
            self.dropped_bytes = self.dropped_bytes.saturating_add(line.len() + 1);
            return;
        }
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The checks the output makes: one per test (`dcgm-<test>`), and `dcgm-diag` saying
    /// which DCGM ran, or why nothing could be judged.
    pub fn checks(&self) -> Vec<(String, CheckStatus, String)> {
        self.results().0
    }

    /// The checks, and what DCGM said of each GPU ([`per_gpu`]), from one reading.
    pub fn results(&self) -> (Vec<(String, CheckStatus, String)>, Vec<GpuResults>) {
        if self.dropped_bytes > 0 {
            let why = vec![(
                "dcgm-diag".into(),
                CheckStatus::Unknown,
                format!(
                    "not judged: the output is past {} MiB ({} bytes more not read)",
                    MAX_BYTES >> 20,
                    self.dropped_bytes
                ),
            )];
            return (why, Vec::new());
        }
        match read(&self.text) {
            Ok(run) => (run_checks(&run), per_gpu(&run)),
            Err(why) => (
                vec![("dcgm-diag".into(), CheckStatus::Unknown, why)],
                Vec::new(),
            ),
        }
    }
}

/// One GPU (`None`: what DCGM said of the node as a whole) and each test's word on it.
pub type GpuResults = (Option<u32>, Vec<DiagGpuTest>);

/// Most GPUs of one node given a row in the per-GPU results (a node has 8 or 16; what is past
/// this is hostile, and the checks still judge every GPU).
const MAX_GPUS: usize = 64;

/// What DCGM said of each GPU, test by test, GPUs in order; then, as GPU `None`, each test
/// whose word ties to no GPU: a test with no per-GPU results (the 3.x software tests), or one
/// DCGM judged worse than every GPU in it (an internal error in its summary). A run that could
/// not complete has none.
pub fn per_gpu(run: &DiagRun) -> Vec<GpuResults> {
    let mut out: Vec<GpuResults> = Vec::new();
    if run.runtime_error.is_some() {
        return out;
    }
    let mut node_wide = Vec::new();
    for t in &run.tests {
        let worst_gpu = t.gpus.iter().map(|(_, s)| s.rank()).max();
        if worst_gpu.is_none_or(|w| t.status.rank() > w) {
            node_wide.push(DiagGpuTest {
                test: fit(&t.name, 48),
                word: t.status.word().to_string(),
                status: test_status(&t.status),
                says: t
                    .warnings
                    .iter()
                    .find(|(g, _)| g.is_none())
                    .map(|(_, w)| fit(w, QUOTED)),
            });
        }
        for (gpu, status) in &t.gpus {
            let at = match out.iter().position(|(g, _)| *g == Some(*gpu)) {
                Some(i) => i,
                None if out.len() < MAX_GPUS => {
                    out.push((Some(*gpu), Vec::new()));
                    out.len() - 1
                }
                None => continue,
            };
            // The table (and 3.x JSON's one string) ties no warning to a GPU, but DCGM's
            // words name it: "GPU 0 Thermal violations …".
            let says = t
                .warnings
                .iter()
                .find(|(g, _)| *g == Some(*gpu))
                .or_else(|| {
                    t.warnings
                        .iter()
                        .find(|(g, w)| g.is_none() && names_gpu(w, *gpu))
                })
                .map(|(_, w)| fit(w, QUOTED));
            out[at].1.push(DiagGpuTest {
                test: fit(&t.name, 48),
                word: status.word().to_string(),
                status: test_status(status),
                says,
            });
        }
    }
    out.sort_by_key(|(g, _)| *g);
    if !node_wide.is_empty() {
        out.push((None, node_wide));
    }
    out
}

/// The checks of one run.
pub fn run_checks(run: &DiagRun) -> Vec<(String, CheckStatus, String)> {
    let mut out = Vec::new();
    let who = match (&run.version, &run.driver) {
        (Some(v), Some(d)) => format!("DCGM {v}, driver {d}"),
        (Some(v), None) => format!("DCGM {v}"),
        (None, Some(d)) => format!("DCGM (version not said), driver {d}"),
        (None, None) => "DCGM (version not said)".to_string(),
    };
    if let Some(e) = &run.runtime_error {
        out.push((
            "dcgm-diag".into(),
            CheckStatus::Unknown,
            format!(
                "not judged: {who} could not complete the diagnostic: {}",
                fit(e, QUOTED)
            ),
        ));
        return out;
    }
    if run.tests.is_empty() {
        out.push((
            "dcgm-diag".into(),
            CheckStatus::Unknown,
            format!("not judged: {who} reported no test"),
        ));
        return out;
    }
    let failed: Vec<&str> = run
        .tests
        .iter()
        .filter(|t| matches!(t.status, DiagStatus::Fail))
        .map(|t| t.name.as_str())
        .collect();
    out.push((
        "dcgm-diag".into(),
        CheckStatus::Ok,
        format!(
            "{who}: {} test(s) read, {}",
            run.tests.len(),
            if failed.is_empty() {
                "none failed".to_string()
            } else {
                format!("failed: {}", failed.join(", "))
            }
        ),
    ));
    for t in &run.tests {
        out.push((check_name(&t.name), test_status(&t.status), test_detail(t)));
    }
    out
}

/// `dcgm-memory-bandwidth` for "Memory Bandwidth" and "memory_bandwidth" alike.
fn check_name(test: &str) -> String {
    let mut s = String::from("dcgm-");
    let mut dash = false;
    for c in test.chars().take(48) {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
            dash = false;
        } else if !dash && !s.ends_with('-') {
            s.push('-');
            dash = true;
        }
    }
    s.trim_end_matches('-').to_string()
}

fn test_status(s: &DiagStatus) -> CheckStatus {
    match s {
        DiagStatus::Pass | DiagStatus::Skip => CheckStatus::Ok,
        DiagStatus::Warn => CheckStatus::Warn,
        DiagStatus::Fail => CheckStatus::Failed,
        DiagStatus::Other(_) => CheckStatus::Unknown,
    }
}

/// "Fail on GPU0 (GPU1-7 Pass): <DCGM's words>", "Pass on 8 GPUs", "Skip".
fn test_detail(t: &DiagTest) -> String {
    let mut by_status: Vec<(&DiagStatus, Vec<u32>)> = Vec::new();
    for (gpu, s) in &t.gpus {
        match by_status.iter_mut().find(|(k, _)| *k == s) {
            Some((_, v)) => v.push(*gpu),
            None => by_status.push((s, vec![*gpu])),
        }
    }
    by_status.sort_by_key(|(s, _)| std::cmp::Reverse(s.rank()));
    let gpus = by_status
        .iter()
        .map(|(s, g)| {
            if g.len() > 2 && t.gpus.len() == g.len() {
                format!("{} on {} GPUs", s.word(), g.len())
            } else {
                let list: Vec<String> = g.iter().take(16).map(|i| format!("GPU{i}")).collect();
                format!("{} on {}", s.word(), list.join(","))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let mut detail = if gpus.is_empty() {
        t.status.word().to_string()
    } else {
        format!("{} ({gpus})", t.status.word())
    };
    let words: Vec<String> = t
        .warnings
        .iter()
        .take(4)
        .map(|(gpu, w)| match gpu {
            Some(g) => format!("GPU{g}: {w}"),
            None => w.clone(),
        })
        .collect();
    if !words.is_empty() {
        detail.push_str(": ");
        detail.push_str(&words.join(" | "));
        if t.warnings.len() > words.len() {
            detail.push_str(&format!(" (+{} more)", t.warnings.len() - words.len()));
        }
    }
    fit(&detail, QUOTED * 2)
}

/// Whether DCGM's words name `gpu`: "GPU 0 …", "for GPU 0.", not "GPU 10".
fn names_gpu(words: &str, gpu: u32) -> bool {
    let name = format!("GPU {gpu}");
    words.match_indices(&name).any(|(at, _)| {
        !words[at + name.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// A line only `dcgmi diag` prints: its JSON root key, or its table's header row.
pub fn is_diag_line(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("\"DCGM Diagnostic\"")
        || l.starts_with("\"DCGM GPU Diagnostic\"")
        || l.starts_with("{\"DCGM Diagnostic\"")
        || l.starts_with("{\"DCGM GPU Diagnostic\"")
        || (l.starts_with("| Diagnostic ") && l.contains("| Result"))
        || l.starts_with("|-----  Deployment  ---")
        || table_row_result(l).is_some()
}

/// A table row whose result reads as only `dcgmi diag`'s do: "Pass - All", "Fail - GPU: 0",
/// "Pass - GPUs: 1, 2, 3" (3.x and earlier).
fn table_row_result(line: &str) -> Option<&str> {
    let cells: Vec<&str> = line.split('|').collect();
    let [_, _, result, _] = cells.as_slice() else {
        return None;
    };
    let result = result.trim();
    let (word, rest) = result.split_once(" - ")?;
    let known = ["Pass", "Fail", "Skip", "Warn"].contains(&word);
    let gpus = rest
        .strip_prefix("GPUs:")
        .or_else(|| rest.strip_prefix("GPU:"))
        .is_some_and(|l| l.split(',').all(|n| n.trim().parse::<u32>().is_ok()));
    (known && (rest == "All" || gpus)).then_some(result)
}

/// Read the output: a JSON document where one starts a line, else the table.
fn read(text: &str) -> Result<DiagRun, String> {
    // Offsets from the lines as they are (split_inclusive keeps every byte), so a `\r` or a
    // missing last newline can never put a slice inside a character.
    let start = text
        .split_inclusive('\n')
        .scan(0usize, |at, l| {
            let here = *at;
            *at += l.len();
            Some((here, l))
        })
        .find(|(_, l)| l.trim_start().starts_with('{'))
        .map(|(at, l)| at + (l.len() - l.trim_start().len()));
    if let Some(at) = start {
        let mut docs = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        return match docs.next() {
            Some(Ok(v)) => read_json(&v),
            Some(Err(e)) => Err(format!(
                "not judged: the dcgmi JSON does not parse ({})",
                fit(&e.to_string(), 120)
            )),
            None => Err("not judged: no dcgmi document in the output".into()),
        };
    }
    if let Some(run) = read_table(text) {
        return Ok(run);
    }
    let said = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(" (it printed: {})", fit(l, 160)))
        .unwrap_or_else(|| " (it printed nothing)".to_string());
    Err(format!(
        "not judged: no dcgmi diag result in the output{said}"
    ))
}

fn read_json(v: &Value) -> Result<DiagRun, String> {
    // `--iterations`: every run is judged; a test's worst across them stands.
    if let Some(iterations) = v.get("iterations").and_then(Value::as_array) {
        let mut merged = DiagRun::default();
        for it in iterations.iter().take(64) {
            let run = read_json(it)?;
            merged.version = merged.version.or(run.version);
            merged.driver = merged.driver.or(run.driver);
            merged.runtime_error = merged.runtime_error.or(run.runtime_error);
            for t in run.tests {
                merge_test(&mut merged.tests, t);
            }
        }
        return Ok(merged);
    }
    let root = ["DCGM Diagnostic", "DCGM GPU Diagnostic"]
        .iter()
        .find_map(|k| v.get(*k))
        .ok_or_else(|| "not judged: a JSON document that is not dcgmi diag's".to_string())?;
    let text_of = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| fit(s, 80));
    let mut run = DiagRun {
        version: text_of(v.pointer("/metadata/version"))
            .or_else(|| text_of(v.get("version")))
            .or_else(|| text_of(root.get("version"))),
        driver: text_of(v.pointer("/metadata/Driver Version Detected"))
            .or_else(|| text_of(v.get("Driver Version Detected"))),
        tests: Vec::new(),
        runtime_error: root
            .get("runtime_error")
            .and_then(Value::as_str)
            .map(|s| fit(s, QUOTED)),
    };
    for category in array(root.get("test_categories")) {
        for test in array(category.get("tests")) {
            if run.tests.len() >= MAX_TESTS {
                break;
            }
            if let Some(t) = json_test(test) {
                merge_test(&mut run.tests, t);
            }
        }
    }
    Ok(run)
}

fn array(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

/// One test object; `None` when DCGM left it without results (not run at this level).
fn json_test(test: &Value) -> Option<DiagTest> {
    let name = fit(test.get("name")?.as_str()?, 60);
    let mut t = DiagTest {
        name,
        status: DiagStatus::Pass,
        gpus: Vec::new(),
        warnings: Vec::new(),
    };
    let mut any = false;
    for r in array(test.get("results")).take(1024) {
        let Some(status) = r.get("status").and_then(Value::as_str) else {
            continue;
        };
        any = true;
        let status = DiagStatus::parse(status);
        let gpu = result_gpu(r);
        if let Some(g) = gpu {
            t.gpus.push((g, status.clone()));
        }
        t.warnings.extend(warnings(r).into_iter().map(|w| (gpu, w)));
        worsen(&mut t.status, status);
    }
    if let Some(summary) = test.get("test_summary") {
        if let Some(s) = summary.get("status").and_then(Value::as_str) {
            any = true;
            worsen(&mut t.status, DiagStatus::parse(s));
        }
        for w in warnings(summary) {
            // 4.5 on repeats every GPU's error here: said once.
            if !t.warnings.iter().any(|(_, x)| *x == w) {
                t.warnings.push((None, w));
            }
        }
    }
    any.then_some(t)
}

/// The GPU a result is about: 4.x `entity_id` of group GPU, 3.x `gpu_id`/`gpu_ids` (a string).
fn result_gpu(r: &Value) -> Option<u32> {
    let group_is_gpu = r
        .get("entity_group")
        .and_then(Value::as_str)
        .is_none_or(|g| g.eq_ignore_ascii_case("gpu"));
    let as_index = |v: &Value| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n < 4096)
    };
    if let Some(e) = r.get("entity_id") {
        return group_is_gpu.then(|| as_index(e)).flatten();
    }
    r.get("gpu_id")
        .or_else(|| r.get("gpu_ids"))
        .and_then(as_index)
}

/// A result's warnings: a string (3.0–3.2), or objects whose message is `warning` (or
/// `warnings` in 3.3.3's Deployment results).
fn warnings(r: &Value) -> Vec<String> {
    match r.get("warnings") {
        Some(Value::String(s)) if !s.trim().is_empty() => vec![fit(s.trim(), QUOTED)],
        Some(Value::Array(items)) => items
            .iter()
            .take(64)
            .filter_map(|w| match w {
                Value::String(s) => Some(s.as_str()),
                _ => w
                    .get("warning")
                    .or_else(|| w.get("warnings"))
                    .and_then(Value::as_str),
            })
            .filter(|s| !s.trim().is_empty())
            .map(|s| fit(s.trim(), QUOTED))
            .collect(),
        _ => Vec::new(),
    }
}

fn worsen(status: &mut DiagStatus, other: DiagStatus) {
    if other.rank() > status.rank() {
        *status = other;
    }
}

/// Add `t`, or fold it into a test of the same name (iterations, a repeated name).
fn merge_test(tests: &mut Vec<DiagTest>, t: DiagTest) {
    let room = tests.len() < MAX_TESTS;
    match tests.iter_mut().find(|x| x.name == t.name) {
        Some(x) => {
            worsen(&mut x.status, t.status);
            for (g, s) in t.gpus {
                match x.gpus.iter_mut().find(|(i, _)| *i == g) {
                    Some((_, have)) => worsen(have, s),
                    None => x.gpus.push((g, s)),
                }
            }
            for w in t.warnings {
                if !x.warnings.contains(&w) && x.warnings.len() < 64 {
                    x.warnings.push(w);
                }
            }
        }
        None if room => tests.push(t),
        None => {}
    }
}

/// The table `dcgmi diag` prints without `-j`: `| name | result |` rows under section
/// headers; results "Pass", "Pass - All", "Fail - GPU: 0", "Pass - GPUs: 1, 2" (3.x) or a
/// status with `GPUn: status` rows under it (4.x); `Warning`/`Error`/`Info` rows whose text
/// the table wraps mid-word. `None` when no such row is there.
fn read_table(text: &str) -> Option<DiagRun> {
    let mut run = DiagRun::default();
    let mut section = String::new();
    // What the newest continuation row extends: a test's warning, or an info to skip.
    let mut extending: Option<bool> = None;
    let mut test_in_section = false;
    // Whether the newest piece of wrapped text ended at a word boundary.
    let mut boundary = false;
    let mut saw_table = false;
    for line in text.lines() {
        let l = line.trim_end();
        let trimmed = l.trim_start();
        if let Some(err) = trimmed.strip_prefix("Error:") {
            run.runtime_error = Some(fit(err.trim(), QUOTED));
            continue;
        }
        if (trimmed.starts_with('+') || trimmed.starts_with("|-")) && trimmed.contains("-----") {
            let name: String = trimmed
                .split(['+', '|'])
                .find(|c| c.chars().any(char::is_alphabetic))
                .map(|c| {
                    c.trim_matches(|ch: char| ch == '-' || ch == ' ')
                        .to_string()
                })
                .unwrap_or_default();
            if !name.is_empty() {
                section = name;
                test_in_section = false;
            }
            extending = None;
            continue;
        }
        if !trimmed.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = trimmed.split('|').collect();
        if cells.len() < 4 {
            continue;
        }
        saw_table = true;
        let name = cells[1].trim();
        // A cell is padded by one space each side, and dcgmi wraps long text into pieces of
        // 45 characters in its 46-wide column (so on every wrapped cell of the corpus), cutting
        // words: a word boundary at a wrap is a space that ended one piece (three spaces before
        // the border) or began the next.
        let raw = cells[2].strip_prefix(' ').unwrap_or(cells[2]);
        let value = raw.trim_end();
        let ends_in_space = raw.ends_with("   ");
        if name == "Diagnostic" && value.trim() == "Result" {
            continue;
        }
        if section.eq_ignore_ascii_case("metadata") {
            match name {
                "DCGM Version" => run.version = Some(fit(value.trim(), 80)),
                "Driver Version Detected" => run.driver = Some(fit(value.trim(), 80)),
                _ => {}
            }
            continue;
        }
        match name {
            "" => {
                table_continuation(&mut run, value, extending, boundary);
                boundary = ends_in_space;
            }
            "Warning" | "Error" => {
                let severity = if name == "Error" {
                    DiagStatus::Fail
                } else {
                    DiagStatus::Warn
                };
                // A section that reports an error before (or without) a test of its own.
                if !test_in_section {
                    let named = if section.is_empty() {
                        "diagnostic"
                    } else {
                        &section
                    };
                    push_test(&mut run, named, severity.clone());
                    test_in_section = true;
                }
                if let Some(t) = run.tests.last_mut() {
                    if name == "Error" {
                        worsen(&mut t.status, severity);
                    }
                    if t.warnings.len() < 64 {
                        t.warnings.push((None, value.trim().to_string()));
                    }
                }
                extending = Some(true);
                boundary = ends_in_space;
            }
            "Info" => extending = Some(false),
            _ => {
                let (status, gpus) = table_result(value);
                push_test(&mut run, name, status);
                if let Some(t) = run.tests.last_mut() {
                    t.gpus.extend(gpus);
                }
                test_in_section = true;
                extending = None;
            }
        }
    }
    for t in &mut run.tests {
        for w in &mut t.warnings {
            w.1 = fit(&w.1, QUOTED);
        }
    }
    (saw_table && (!run.tests.is_empty() || run.runtime_error.is_some())).then_some(run)
}

fn push_test(run: &mut DiagRun, name: &str, status: DiagStatus) {
    if run.tests.len() < MAX_TESTS {
        run.tests.push(DiagTest {
            name: fit(name, 60),
            status,
            gpus: Vec::new(),
            warnings: Vec::new(),
        });
    }
}

/// A row with an empty name: a GPU's result (`GPU3: Pass`, `Fail - GPU: 0`) or the next piece
/// of a wrapped warning.
fn table_continuation(run: &mut DiagRun, value: &str, extending: Option<bool>, boundary: bool) {
    let Some(t) = run.tests.last_mut() else {
        return;
    };
    let v = value.trim();
    if let Some((gpu, status)) = v
        .strip_prefix("GPU")
        .and_then(|r| r.split_once(':'))
        .and_then(|(n, s)| Some((n.trim().parse::<u32>().ok()?, s)))
        .filter(|(g, _)| *g < 4096)
    {
        let status = DiagStatus::parse(status);
        worsen(&mut t.status, status.clone());
        t.gpus.push((gpu, status));
        return;
    }
    if v.contains(" - GPU") {
        let (status, gpus) = table_result(v);
        worsen(&mut t.status, status);
        t.gpus.extend(gpus);
        return;
    }
    if extending == Some(true)
        && let Some(w) = t.warnings.last_mut()
        && w.1.len() < 4 * QUOTED
    {
        if boundary || value.starts_with(' ') {
            w.1.push(' ');
        }
        w.1.push_str(value.trim());
    }
}

/// "Fail - GPU: 0" → (Fail, [(0, Fail)]); "Pass - All" → (Pass, []); "Pass" → (Pass, []).
fn table_result(value: &str) -> (DiagStatus, Vec<(u32, DiagStatus)>) {
    let v = value.trim();
    let (word, rest) = v.split_once(" - ").unwrap_or((v, ""));
    let status = DiagStatus::parse(word);
    let gpus = rest
        .split_once(':')
        .map(|(_, list)| {
            list.split(',')
                .filter_map(|n| n.trim().parse::<u32>().ok())
                .filter(|n| *n < 4096)
                .take(256)
                .map(|g| (g, status.clone()))
                .collect()
        })
        .unwrap_or_default();
    (status, gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks_of(text: &str) -> Vec<(String, CheckStatus, String)> {
        let mut p = DcgmDiagParser::new();
        for l in text.lines() {
            p.push(l);
        }
        p.checks()
    }

    fn status_of(checks: &[(String, CheckStatus, String)], name: &str) -> Option<CheckStatus> {
        checks.iter().find(|c| c.0 == name).map(|c| c.1)
    }

    fn per_gpu_of(file: &str) -> Vec<GpuResults> {
        let path = format!(
            "{}/tests/corpus/dcgm-diag/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut p = DcgmDiagParser::new();
        for l in text.lines() {
            p.push(l);
        }
        p.results().1
    }

    /// Per GPU, as a person reads the real outputs: the 3.x table's GPU 0 failed GPU Memory with
    /// DCGM's words (which name it, though the table ties them to no GPU); 4.x's pcie failed
    /// in its summary with every GPU passing, so it is node-wide; a 3.x table without per-GPU
    /// results is all node-wide.
    #[test]
    fn each_gpu_carries_dcgms_word_and_what_ties_to_no_gpu_is_node_wide() {
        let r = per_gpu_of("dcgm-pre4-r2-8gpu-gpu-memory-fail-thermal-ml-engineering-partial.txt");
        assert_eq!(r.len(), 8);
        let (gpu, tests) = &r[0];
        assert_eq!(*gpu, Some(0));
        assert_eq!(tests[0].test, "GPU Memory");
        assert_eq!(tests[0].status, CheckStatus::Failed);
        assert!(
            tests[0]
                .says
                .as_deref()
                .is_some_and(|s| s.starts_with("GPU 0 Thermal violations totaling 13.3 seconds")),
            "{tests:?}"
        );
        assert!(
            r[1..]
                .iter()
                .all(|(_, t)| t[0].status == CheckStatus::Ok && t[0].says.is_none())
        );

        let r = per_gpu_of("dcgm4-4gpu-26b9-pcie-fail-internal-error-dcgm-issue-253-partial.txt");
        let gpus: Vec<Option<u32>> = r.iter().map(|(g, _)| *g).collect();
        assert_eq!(gpus, [Some(0), Some(1), Some(2), Some(3), None]);
        assert!(
            r[..4]
                .iter()
                .all(|(_, t)| t.iter().all(|t| t.status == CheckStatus::Ok))
        );
        let node = &r[4].1;
        assert_eq!(node.len(), 1, "{node:?}");
        assert_eq!(node[0].test, "pcie");
        assert_eq!(node[0].status, CheckStatus::Failed);
        assert!(
            node[0]
                .says
                .as_deref()
                .is_some_and(|s| s.contains("internal error")),
            "{node:?}"
        );

        let r = per_gpu_of("dcgm3-r3-v100-pcie-16gb-verbose-all-pass-eud-skip-unknown-repo.txt");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, None);
        assert_eq!(r[0].1.len(), 16);
        assert!(r[0].1.iter().all(|t| t.status == CheckStatus::Ok));
        assert!(!names_gpu("GPU 10 failed", 1));
        assert!(names_gpu("for GPU 1.", 1));
    }

    // The shapes below are written from DCGM's writer (`_FORMAT.md` cites the lines): no real
    // output of these versions was found. The corpus holds the real ones.

    #[test]
    fn dcgm_3_3_results_carry_a_gpu_id_string_and_warning_objects() {
        let doc = r#"{"DCGM GPU Diagnostic": {"test_categories": [
            {"category": "Deployment", "tests": [{"name": "Page Retirement/Row Remap", "results": [
              {"gpu_id": 3, "status": "Fail", "warnings": [{"warnings": "GPU 3 has pending row remappings", "error_id": 61}]}]}]},
            {"category": "Stress", "tests": [{"name": "Memory Bandwidth", "results": [
              {"gpu_id": "0", "status": "Pass"},
              {"gpu_id": "1", "status": "Fail", "warnings": [{"warning": "GPU 1 memory bandwidth 1200 MB/s below 2000", "error_id": 42}]}]}]}]},
            "version": "3.3.9", "Driver Version Detected": "560.35.03"}"#;
        let c = checks_of(doc);
        assert_eq!(
            status_of(&c, "dcgm-page-retirement-row-remap"),
            Some(CheckStatus::Failed)
        );
        let bw = c.iter().find(|c| c.0 == "dcgm-memory-bandwidth").unwrap();
        assert_eq!(bw.1, CheckStatus::Failed);
        assert!(bw.2.contains("Fail on GPU1"), "{}", bw.2);
        assert!(
            bw.2.contains("GPU1: GPU 1 memory bandwidth 1200 MB/s"),
            "{}",
            bw.2
        );
        assert!(
            c[0].2.starts_with("DCGM 3.3.9, driver 560.35.03"),
            "{}",
            c[0].2
        );
    }

    #[test]
    fn a_diagnostic_that_could_not_complete_is_not_judged_never_passed() {
        let doc = r#"{"DCGM Diagnostic": {"version": "4.2.3", "runtime_error": "Error: Diagnostic can only be performed on a homogeneous group of GPUs."}}"#;
        let c = checks_of(doc);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].1, CheckStatus::Unknown);
        assert!(c[0].2.contains("homogeneous group"), "{}", c[0].2);
        // Not DCGM at all: said with what was printed.
        let c =
            checks_of("Error: unable to establish a connection to the specified host: localhost\n");
        assert_eq!(c[0].1, CheckStatus::Unknown);
        assert!(
            c[0].2.contains("unable to establish a connection"),
            "{}",
            c[0].2
        );
        let c = checks_of("");
        assert!(c[0].2.contains("printed nothing"), "{}", c[0].2);
        // A document cut by the bound is not judged either.
        let mut p = DcgmDiagParser::new();
        let line = "x".repeat(1 << 20);
        for _ in 0..5 {
            p.push(&line);
        }
        assert_eq!(p.checks()[0].1, CheckStatus::Unknown);
    }

    #[test]
    fn iterations_keep_each_tests_worst_and_a_summary_error_once() {
        let run = |status: &str| {
            format!(
                r#"{{"DCGM Diagnostic": {{"test_categories": [{{"category": "Hardware", "tests": [{{"name": "memory",
                "results": [{{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 2, "status": "{status}"}}],
                "test_summary": {{"status": "{status}", "warnings": [{{"warning": "GPU 2 DBE", "error_id": 10}}]}}}}]}}]}},
                "metadata": {{"version": "4.5.0"}}}}"#
            )
        };
        let doc = format!(
            r#"{{"iterations": [{}, {}], "Overall Result": "Fail"}}"#,
            run("Pass"),
            run("Fail")
        );
        let c = checks_of(&doc);
        let mem = c.iter().find(|c| c.0 == "dcgm-memory").unwrap();
        assert_eq!(mem.1, CheckStatus::Failed, "{}", mem.2);
        assert_eq!(mem.2.matches("GPU 2 DBE").count(), 1, "{}", mem.2);
        // A test DCGM did not run (only its name) is no check at all.
        let doc = r#"{"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name": "eud"}]}]}}"#;
        assert_eq!(checks_of(doc)[0].1, CheckStatus::Unknown);
    }

    #[test]
    fn carriage_returns_and_multibyte_text_before_the_document_never_split_a_character() {
        let text = "é\r\r\n  ü\r{\"x\":1}\n\u{00e9}\r\n  {\"DCGM Diagnostic\": {\"version\": \"4.2.3\", \"runtime_error\": \"é\"}}";
        // Either reading is fine; a panic is not.
        let _ = read(text);
        let run = read("ü\r\n{\"DCGM Diagnostic\": {\"runtime_error\": \"nope\"}}").expect("read");
        assert_eq!(run.runtime_error.as_deref(), Some("nope"));
    }

    #[test]
    fn a_status_dcgm_never_writes_is_unknown_not_a_pass() {
        let doc = r#"{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory",
            "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Maybe"}]}]}]}}"#;
        assert_eq!(
            status_of(&checks_of(doc), "dcgm-memory"),
            Some(CheckStatus::Unknown)
        );
    }
}
