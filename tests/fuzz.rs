//! Hostile and broken input (issue 26): every reader of outside text, driven by mutated real
//! inputs with a fixed budget of cases. The rule: no input makes burnin panic, nothing grows
//! without bound, an error is a few lines, never a copy of the input.
//!
//! Inputs are the files burnin reads in the field, taken from `tests/corpus/` (outputs by
//! others) and `tests/fixtures/` (agent streams, smi CSV, scrapes, records, plans), the shipped
//! plan and `burnin.example.toml`, then mutated: bits flipped, spans inserted, deleted,
//! repeated, two files spliced, the text cut, lines repeated or dropped, numbers replaced, and
//! hostile tokens put in (terminal escapes, NUL, bidi overrides, `nan`/`inf`, numbers past every
//! integer type, a 1 MB line, shell syntax, paths, huge GPU indices). docs/fuzzing.md says what
//! each target feeds.
//!
//! Budget: `BURNIN_FUZZ_CASES` cases per target (else proptest's own `PROPTEST_CASES`, else
//! [`DEFAULT_CASES`]); a case that runs longer than `BURNIN_FUZZ_TIMEOUT_MS` (0: no limit) is a
//! hang and fails. The long run, in the release profile:
//!
//! ```text
//! BURNIN_FUZZ_CASES=200000 cargo test --release --test fuzz
//! ```
//!
//! A failure prints the minimal case proptest shrank to: the seed file, the mutations, and the
//! mutated input itself. Its seed is kept in `proptest-regressions/fuzz/<target>.txt` and
//! re-run first next time; the lasting regression test is a plain `#[test]` with the minimal
//! input next to the reader.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use burnin::app::layout::Layout;
use burnin::app::state::{Event, State};
use burnin::app::theme::Theme;
use burnin::commands::parse::{self, KINDS, Kind, Options};
use burnin::config::inventory::Inventory;
use burnin::model::NodeLink;
use burnin::model::SourceEvent;
use burnin::parsers::{OutputParser, ParseContext, ParserKind, launcher};
use burnin::plan::Plan;
use burnin::sources::prometheus::PromNodes;
use burnin::sources::smi::{LEGACY_FIELDS, MODERN_FIELDS, SmiDecoder};
use burnin::store::ClusterStore;
use burnin::wire::{self, Decoded, Decoder, WireMessage};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

// ---------------------------------------------------------------------------------------------
// Budget

/// Cases per target when neither `BURNIN_FUZZ_CASES` nor `PROPTEST_CASES` says: the whole
/// target stays well under 90 s in the debug profile on a 2-core machine (docs/fuzzing.md).
const DEFAULT_CASES: u32 = 256;

/// A case slower than this (debug profile) is a hang.
const DEFAULT_TIMEOUT_MS: u32 = 60_000;

/// The longest error a reader may return, whatever the input: a few lines naming the place
/// and the cause, never the input copied back.
const MAX_ERROR_BYTES: usize = 4096;

/// An environment variable as a number, if set and valid.
fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Cases per target: `BURNIN_FUZZ_CASES`, else `PROPTEST_CASES`, else [`DEFAULT_CASES`].
fn cases() -> u32 {
    env_u32("BURNIN_FUZZ_CASES")
        .or_else(|| env_u32("PROPTEST_CASES"))
        .unwrap_or(DEFAULT_CASES)
}

/// The seed of the cases when `BURNIN_FUZZ_SEED` does not say: CI runs the same cases every
/// time (a failure there is the code's, never the draw's).
const DEFAULT_SEED: u64 = 26;

/// The proptest configuration of one target: the budget, the hang limit, the seed
/// (`BURNIN_FUZZ_SEED`: a number, or `random`; else `PROPTEST_RNG_SEED`, else [`DEFAULT_SEED`]),
/// and failures kept in `proptest-regressions/fuzz/<target>.txt` (relative to the package,
/// where cargo runs tests).
fn config(target: &str) -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(cases());
    let path: &'static str =
        Box::leak(format!("proptest-regressions/fuzz/{target}.txt").into_boxed_str());
    c.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(path)));
    c.timeout = env_u32("BURNIN_FUZZ_TIMEOUT_MS").unwrap_or(DEFAULT_TIMEOUT_MS);
    match std::env::var("BURNIN_FUZZ_SEED")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("random") => c.rng_seed = RngSeed::Random,
        Some(n) => {
            c.rng_seed = RngSeed::Fixed(n.parse().expect("BURNIN_FUZZ_SEED: a number or `random`"))
        }
        None if std::env::var_os("PROPTEST_RNG_SEED").is_some() => {}
        None => c.rng_seed = RngSeed::Fixed(DEFAULT_SEED),
    }
    c
}

/// Most memory (address space, MiB) the process that runs the cases may take
/// (`BURNIN_FUZZ_MEMORY_MB`): a reader that grows without bound fails the case (the allocation
/// fails and the process aborts) instead of taking the machine down.
const DEFAULT_MEMORY_MB: u64 = 3072;

/// Cap this process's address space at `BURNIN_FUZZ_MEMORY_MB` or [`DEFAULT_MEMORY_MB`]
/// (once). With a hang limit the cases run in a child process of their own, which is the one
/// capped.
fn cap_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        cap_memory_to(env_u32("BURNIN_FUZZ_MEMORY_MB").map_or(DEFAULT_MEMORY_MB, u64::from))
    });
}

/// Cap this process's address space at `mb` MiB (or its hard limit, if lower).
fn cap_memory_to(mb: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) };
    assert_eq!(rc, 0, "getrlimit(RLIMIT_AS)");
    limit.rlim_cur = ((mb << 20) as libc::rlim_t).min(limit.rlim_max);
    // SAFETY: setrlimit reads the struct we pass.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    assert_eq!(rc, 0, "setrlimit(RLIMIT_AS)");
}

// ---------------------------------------------------------------------------------------------
// Seeds: real inputs

/// The package root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One real input.
struct Seed {
    /// Where it came from (relative to the package).
    name: String,
    /// Its bytes.
    bytes: Vec<u8>,
    /// What reads it (`burnin parse`'s kind), when known.
    kind: Option<Kind>,
    /// For header-less nvidia-smi CSV: the `--query-gpu` fields it answers.
    fields: Option<Vec<String>>,
}

impl Seed {
    /// A seed from a file of the package.
    fn file(rel: &str) -> Seed {
        let bytes = std::fs::read(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        Seed {
            name: rel.to_string(),
            bytes,
            kind: None,
            fields: None,
        }
    }
}

/// Files under `dir` (relative to the package), recursively, whose name passes `keep`,
/// sorted.
fn files_under(dir: &str, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    let found = common::files_under(&root().join(dir));
    let mut out: Vec<String> = found
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(root()).ok()?.to_string_lossy().into_owned();
            let name = p.file_name()?.to_string_lossy().into_owned();
            (!name.starts_with('_') && name != "README.md" && keep(&name)).then_some(rel)
        })
        .collect();
    out.sort();
    out
}

/// `tests/corpus/expected.toml`: per corpus file, its kind and (smi CSV) its fields.
fn corpus_entries() -> Vec<Seed> {
    let text = std::fs::read_to_string(root().join("tests/corpus/expected.toml"))
        .expect("tests/corpus/expected.toml");
    let table: toml::Table = toml::from_str(&text).expect("expected.toml parses");
    table
        .iter()
        .map(|(file, entry)| {
            let mut s = Seed::file(&format!("tests/corpus/{file}"));
            s.kind = entry
                .get("kind")
                .and_then(|k| k.as_str())
                .and_then(Kind::from_name);
            s.fields = entry
                .get("fields")
                .and_then(|f| f.as_str())
                .map(|f| f.split(',').map(String::from).collect());
            s
        })
        .collect()
}

/// Fixture files that are outputs of a tool, with the kind `burnin parse` detects in them
/// (`None` when it detects none: they are still fed to every parser).
fn fixture_outputs() -> Vec<Seed> {
    let mut out = Vec::new();
    for dir in [
        "tests/fixtures/nccl-tests",
        "tests/fixtures/perftest",
        "tests/fixtures/nvbandwidth",
        "tests/fixtures/sanity",
        "tests/fixtures/preflight",
        "tests/fixtures/s3-probe",
        "tests/fixtures/nvidia-smi",
        "tests/fixtures/dcgm-exporter",
        "tests/fixtures/minio",
        "tests/fixtures/h200-run",
        "tests/fixtures/h200-verdicts",
    ] {
        for rel in files_under(dir, &|n| {
            n.ends_with(".log")
                || n.ends_with(".txt")
                || n.ends_with(".jsonl")
                || n.ends_with(".prom")
                || n.ends_with(".csv")
        }) {
            if rel.ends_with("events.jsonl") {
                continue;
            }
            let mut s = Seed::file(&rel);
            s.kind = parse::detect(&String::from_utf8_lossy(&s.bytes));
            out.push(s);
        }
    }
    out
}

/// The families of seeds, one per reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Agent NDJSON streams (`gpus` form as captured, and the same frames in column form).
    Ndjson,
    /// nvidia-smi CSV.
    Smi,
    /// Prometheus text expositions (dcgm-exporter, MinIO, `agent --listen`).
    PromText,
    /// Prometheus API answers (JSON), made from the expositions.
    PromAnswer,
    /// Every tool output and every other file `burnin parse` reads.
    Outputs,
    /// Inventories (`burnin.toml`).
    Inventory,
    /// Plans.
    Plan,
    /// Saved baselines.
    Baseline,
    /// Themes and layouts (`--theme`, `--layout`, `~/.config/burnin`).
    UiToml,
}

impl Family {
    /// Its seeds, loaded once.
    fn seeds(self) -> &'static [Seed] {
        macro_rules! once {
            ($load:expr) => {{
                static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
                SEEDS.get_or_init(|| {
                    let v: Vec<Seed> = $load;
                    assert!(!v.is_empty(), "no seeds for {:?}", self);
                    v
                })
            }};
        }
        match self {
            Family::Ndjson => once!(ndjson_seeds()),
            Family::Smi => once!(smi_seeds()),
            Family::PromText => once!(prom_text_seeds()),
            Family::PromAnswer => once!(prom_answer_seeds()),
            Family::Outputs => once!({
                let mut v = corpus_entries();
                v.extend(fixture_outputs());
                v
            }),
            Family::Inventory => once!(
                ["burnin.example.toml", "tests/fixtures/h200-run/burnin.toml"]
                    .into_iter()
                    .map(Seed::file)
                    .collect()
            ),
            Family::Plan => once!({
                let mut v = vec![Seed::file("plans/default.toml")];
                v.extend(
                    files_under("tests/fixtures", &|n| {
                        n.starts_with("plan") && n.ends_with(".toml")
                    })
                    .iter()
                    .map(|r| Seed::file(r)),
                );
                v
            }),
            Family::Baseline => once!(
                files_under("tests/fixtures", &|n| n.ends_with("baseline.json"))
                    .iter()
                    .map(|r| Seed::file(r))
                    .collect()
            ),
            Family::UiToml => once!({
                let mut v: Vec<Seed> = files_under("themes", &|n| n.ends_with(".toml"))
                    .iter()
                    .chain(&files_under("layouts", &|n| n.ends_with(".toml")))
                    .chain(&files_under("tests/fixtures/broken", &|n| {
                        n.ends_with(".toml")
                    }))
                    .map(|r| Seed::file(r))
                    .collect();
                v.sort_by(|a, b| a.name.cmp(&b.name));
                v
            }),
        }
    }
}

/// Agent streams as captured, each stream again with its frames in the column form the
/// agent writes now (the decoder's fast path reads only that form), and what the simulated
/// agent writes for a node of the demo cluster (RDMA ports, interfaces, NVLink, an Xid: what
/// the H200 captures lack).
fn ndjson_seeds() -> Vec<Seed> {
    use burnin::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let mut text = String::new();
    for s in [1, 2, 3, 175, 176] {
        for ev in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            match ev {
                SourceEvent::Hello(h) if h.node == "node11" => {
                    text.push_str(&wire::encode(&WireMessage::Hello(h)))
                }
                SourceEvent::Frame(f)
                    if f.node == "node11" && f.at_ms + 1000 > SIM_EPOCH_MS + s * 1000 =>
                {
                    text.push_str(&wire::encode(&WireMessage::Frame(f)))
                }
                _ => {}
            }
        }
    }
    let mut out = vec![Seed {
        name: "simulated agent, demo node11 (column form)".into(),
        bytes: text.into_bytes(),
        kind: None,
        fields: None,
    }];
    for rel in files_under("tests/fixtures", &|n| n.ends_with(".ndjson")) {
        let s = Seed::file(&rel);
        let mut column = Vec::new();
        let mut d = Decoder::new();
        for line in String::from_utf8_lossy(&s.bytes).lines() {
            match d.decode(line) {
                Ok(Decoded::Message(m)) => column.extend(wire::encode(&m).into_bytes()),
                _ => column.extend(format!("{line}\n").into_bytes()),
            }
        }
        if column != s.bytes {
            out.push(Seed {
                name: format!("{rel} (column form)"),
                bytes: column,
                kind: None,
                fields: None,
            });
        }
        out.push(s);
    }
    out
}

/// nvidia-smi CSV from the corpus and the fixtures.
fn smi_seeds() -> Vec<Seed> {
    let mut out: Vec<Seed> = corpus_entries()
        .into_iter()
        .filter(|s| s.name.starts_with("tests/corpus/nvidia-smi-csv/"))
        .collect();
    for rel in files_under("tests/fixtures", &|n| {
        n.starts_with("csv-") || n.starts_with("smi-") || n.ends_with("smi-stream.csv")
    }) {
        out.push(Seed::file(&rel));
    }
    out
}

/// Prometheus expositions: dcgm-exporter and MinIO scrapes, and the agent's own `/metrics`.
fn prom_text_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    for dir in [
        "tests/corpus/dcgm-exporter",
        "tests/corpus/minio",
        "tests/fixtures/dcgm-exporter",
        "tests/fixtures/minio",
        "tests/fixtures/h200-exporter",
    ] {
        for rel in files_under(dir, &|n| n.ends_with(".prom") || n.ends_with(".txt")) {
            out.push(Seed::file(&rel));
        }
    }
    out
}

/// The host labels the Prometheus source reads by default.
const HOST_LABELS: [&str; 2] = ["Hostname", "hostname"];

/// Prometheus API answers as the server gives them for burnin's three queries and its range
/// query, made from each dcgm-exporter exposition's samples, and an error answer in the API's
/// documented shape.
fn prom_answer_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    for seed in prom_text_seeds() {
        let text = String::from_utf8_lossy(&seed.bytes);
        let exp = wire::prometheus::parse(&text);
        if !exp.samples.iter().any(|s| s.name.starts_with("DCGM_FI_")) {
            continue;
        }
        let labels = |s: &wire::prometheus::Sample, keep: &[&str]| {
            let mut m = serde_json::Map::new();
            for (k, v) in &s.labels {
                if keep.contains(&k.as_ref()) {
                    m.insert(k.to_string(), serde_json::Value::from(v.to_string()));
                }
            }
            m
        };
        let value = |v: f64| serde_json::Value::from(format!("{v}"));
        let mut values = Vec::new();
        let mut matrix = Vec::new();
        let mut times = BTreeMap::new();
        let mut ids = BTreeMap::new();
        for s in exp
            .samples
            .iter()
            .filter(|s| s.name.starts_with("DCGM_FI_"))
        {
            let mut m = labels(s, &["gpu", "GPU_I_ID", "Hostname", "hostname"]);
            m.insert("__name__".into(), s.name.clone().into());
            values
                .push(serde_json::json!({"metric": m, "value": [1_700_000_000.5, value(s.value)]}));
            matrix.push(serde_json::json!({"metric": m, "values": [
                [1_700_000_000.0, value(s.value)], [1_700_000_001.0, value(s.value)]]}));
            let host = labels(s, &HOST_LABELS);
            times.insert(
                format!("{host:?}"),
                serde_json::json!({"metric": host,
                "value": [1_700_000_000.5, "1700000000.25"]}),
            );
            let id = labels(
                s,
                &[
                    "gpu",
                    "UUID",
                    "modelName",
                    "DCGM_FI_DRIVER_VERSION",
                    "Hostname",
                    "hostname",
                ],
            );
            ids.insert(
                format!("{id:?}"),
                serde_json::json!({"metric": id, "value": [1_700_000_000.5, "1"]}),
            );
        }
        let answer = |kind: &str, result: Vec<serde_json::Value>| {
            serde_json::json!({"status": "success", "data": {"resultType": kind, "result": result}})
                .to_string()
                .into_bytes()
        };
        for (what, bytes) in [
            ("values", answer("vector", values)),
            ("history", answer("matrix", matrix)),
            ("times", answer("vector", times.into_values().collect())),
            ("identity", answer("vector", ids.into_values().collect())),
        ] {
            out.push(Seed {
                name: format!("{} ({what} answer)", seed.name),
                bytes,
                kind: None,
                fields: None,
            });
        }
    }
    out.push(Seed {
        name: "error answer".into(),
        bytes: br#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}"#.to_vec(),
        kind: None,
        fields: None,
    });
    out
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// Hostile tokens put into inputs (the long ones are made once, see [`tokens`]).
const HOSTILE: &[&str] = &[
    "\x1b]0;T\x07",
    "\x1b[2J",
    "\x1b[31m",
    "\0",
    "\u{202e}",
    "\u{2066}",
    "\u{feff}",
    "\u{fffd}",
    "\u{85}",
    "\x07",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+Inf",
    "1e308",
    "-1e308",
    "1e999",
    "1e-400",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "4294967295",
    "4294967296",
    "-1",
    "-0",
    "0",
    "0x",
    "0xffffffffffffffffffff",
    "$(touch /tmp/x)",
    "`",
    "'",
    "\"",
    "\\",
    "../",
    "../../../../etc/passwd",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "#",
    "null",
    "[]",
    "{}",
    "N/A",
    "[N/A]",
    "gpu[0-99999]",
    "0: ",
    "[1,4294967295]<stdout>:",
    "[rank99999999]:",
];

/// Every hostile token: [`HOSTILE`], then very long digit strings and a 1 MB line.
fn tokens() -> &'static [Vec<u8>] {
    static T: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    T.get_or_init(|| {
        let mut v: Vec<Vec<u8>> = HOSTILE.iter().map(|t| t.as_bytes().to_vec()).collect();
        v.push("9".repeat(400).into_bytes());
        v.push(format!("0.{}1", "0".repeat(5000)).into_bytes());
        v.push("1".repeat(70_000).into_bytes());
        v.push(format!("\"{}\"", "x".repeat(70_000)).into_bytes());
        let mut line = vec![b'x'; 1_000_000];
        line.push(b'\n');
        v.push(line);
        v
    })
}

/// One change to an input. Positions are [`Index`]es into whatever the input is by then, so
/// every list of changes applies to every input (and shrinks).
#[derive(Debug, Clone)]
enum Op {
    /// Flip one bit.
    Flip(Index, u8),
    /// Put a hostile token in.
    Insert(Index, Index),
    /// Put random bytes in.
    Bytes(Index, Vec<u8>),
    /// Remove a span.
    Delete(Index, u16),
    /// Repeat a span.
    Repeat(Index, u16, u8),
    /// Keep the input up to a place, then another seed of the family from a place on.
    Splice(Index, Index, Index),
    /// Cut the input there.
    Truncate(Index),
    /// Replace the n-th number by a hostile token.
    Number(Index, Index),
    /// Repeat a line many times.
    RepeatLine(Index, u16),
    /// Drop a line.
    DropLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Take a leading `#` (and a space) off a line: commented-out config comes alive.
    Uncomment(Index),
}

/// Any change, weighted towards the ones that keep the input's shape.
fn op() -> impl Strategy<Value = Op> {
    let i = || any::<Index>();
    prop_oneof![
        3 => (i(), any::<u8>()).prop_map(|(a, b)| Op::Flip(a, b % 8)),
        4 => (i(), i()).prop_map(|(a, t)| Op::Insert(a, t)),
        1 => (i(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(a, b)| Op::Bytes(a, b)),
        2 => (i(), 1..512u16).prop_map(|(a, n)| Op::Delete(a, n)),
        1 => (i(), 1..256u16, 1..32u8).prop_map(|(a, n, k)| Op::Repeat(a, n, k)),
        1 => (i(), i(), i()).prop_map(|(a, s, b)| Op::Splice(a, s, b)),
        1 => i().prop_map(Op::Truncate),
        4 => (i(), i()).prop_map(|(n, t)| Op::Number(n, t)),
        1 => (i(), 1..2000u16).prop_map(|(l, k)| Op::RepeatLine(l, k)),
        1 => i().prop_map(Op::DropLine),
        1 => (i(), i()).prop_map(|(a, b)| Op::SwapLines(a, b)),
        1 => i().prop_map(Op::Uncomment),
    ]
}

/// Byte ranges of the lines of `b` (each with its newline).
fn line_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

/// Byte ranges of the numbers of `b` (digits, with a sign, point and exponent around them).
fn number_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let mut s = i;
            if s > 0 && (b[s - 1] == b'-' || b[s - 1] == b'+') {
                s -= 1;
            }
            let mut e = i;
            while e < b.len()
                && (b[e].is_ascii_digit()
                    || b[e] == b'.'
                    || ((b[e] == b'e' || b[e] == b'E')
                        && e + 1 < b.len()
                        && (b[e + 1].is_ascii_digit() || b[e + 1] == b'-' || b[e + 1] == b'+'))
                    || ((b[e] == b'-' || b[e] == b'+') && (b[e - 1] == b'e' || b[e - 1] == b'E')))
            {
                e += 1;
            }
            out.push((s, e));
            i = e;
        } else {
            i += 1;
        }
    }
    out
}

/// Largest input a mutation makes: past this, changes that grow it are skipped (the 1 MB line
/// still fits; a case stays cheap).
const MAX_INPUT: usize = 4 << 20;

/// `ops` applied to `seed`, taking splice partners from `pool`.
fn mutate(seed: &[u8], pool: &[&[u8]], ops: &[Op]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for op in ops {
        let at = |i: &Index, b: &Vec<u8>| i.index(b.len() + 1);
        match op {
            Op::Flip(i, bit) => {
                if !b.is_empty() {
                    let p = i.index(b.len());
                    b[p] ^= 1 << bit;
                }
            }
            Op::Insert(i, t) => {
                let tok = &tokens()[t.index(tokens().len())];
                if b.len() + tok.len() <= MAX_INPUT {
                    let p = at(i, &b);
                    b.splice(p..p, tok.iter().copied());
                }
            }
            Op::Bytes(i, bytes) => {
                let p = at(i, &b);
                b.splice(p..p, bytes.iter().copied());
            }
            Op::Delete(i, n) => {
                let p = at(i, &b);
                let e = (p + *n as usize).min(b.len());
                b.drain(p..e);
            }
            Op::Repeat(i, n, k) => {
                let p = at(i, &b);
                let e = (p + *n as usize).min(b.len());
                let span = b[p..e].to_vec();
                if b.len() + span.len() * *k as usize <= MAX_INPUT {
                    for _ in 0..*k {
                        b.splice(e..e, span.iter().copied());
                    }
                }
            }
            Op::Splice(i, s, j) => {
                let other = pool[s.index(pool.len())];
                let p = at(i, &b);
                let q = j.index(other.len() + 1);
                b.truncate(p);
                b.extend_from_slice(&other[q..]);
            }
            Op::Truncate(i) => {
                let p = at(i, &b);
                b.truncate(p);
            }
            Op::Number(n, t) => {
                let spans = number_spans(&b);
                if !spans.is_empty() {
                    let (s, e) = spans[n.index(spans.len())];
                    let tok = &tokens()[t.index(tokens().len())];
                    if b.len() + tok.len() <= MAX_INPUT {
                        b.splice(s..e, tok.iter().copied());
                    }
                }
            }
            Op::RepeatLine(l, k) => {
                let lines = line_spans(&b);
                if !lines.is_empty() {
                    let (s, e) = lines[l.index(lines.len())];
                    let mut line = b[s..e].to_vec();
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    let k = (*k as usize).min(MAX_INPUT.saturating_sub(b.len()) / line.len());
                    let more: Vec<u8> = line.iter().copied().cycle().take(line.len() * k).collect();
                    b.splice(s..s, more);
                }
            }
            Op::DropLine(l) => {
                let lines = line_spans(&b);
                if !lines.is_empty() {
                    let (s, e) = lines[l.index(lines.len())];
                    b.drain(s..e);
                }
            }
            Op::SwapLines(x, y) => {
                let lines = line_spans(&b);
                if lines.len() > 1 {
                    let (mut p, mut q) = (x.index(lines.len()), y.index(lines.len()));
                    if p > q {
                        std::mem::swap(&mut p, &mut q);
                    }
                    if p != q {
                        let (a, c) = (lines[p], lines[q]);
                        let mut out = b[..a.0].to_vec();
                        out.extend_from_slice(&b[c.0..c.1]);
                        if !b[c.0..c.1].ends_with(b"\n") {
                            out.push(b'\n');
                        }
                        out.extend_from_slice(&b[a.1..c.0]);
                        out.extend_from_slice(&b[a.0..a.1]);
                        out.extend_from_slice(&b[c.1..]);
                        b = out;
                    }
                }
            }
            Op::Uncomment(l) => {
                let lines = line_spans(&b);
                let commented: Vec<(usize, usize)> = lines
                    .into_iter()
                    .filter(|(s, e)| b[*s..*e].trim_ascii_start().starts_with(b"#"))
                    .collect();
                if !commented.is_empty() {
                    let (s, e) = commented[l.index(commented.len())];
                    let hash = s + b[s..e].iter().position(|&c| c == b'#').unwrap_or(0);
                    let end = if b.get(hash + 1) == Some(&b' ') {
                        hash + 2
                    } else {
                        hash + 1
                    };
                    b.drain(hash..end);
                }
            }
        }
    }
    b
}

/// One mutated input: a seed of a family and the changes made to it.
#[derive(Clone)]
struct Case {
    family: Family,
    seed: usize,
    ops: Vec<Op>,
}

impl Case {
    /// The seed it starts from.
    fn seed(&self) -> &'static Seed {
        &self.family.seeds()[self.seed]
    }

    /// The mutated bytes.
    fn bytes(&self) -> Vec<u8> {
        let pool: Vec<&[u8]> = self
            .family
            .seeds()
            .iter()
            .map(|s| s.bytes.as_slice())
            .collect();
        mutate(&self.seed().bytes, &pool, &self.ops)
    }

    /// The mutated input as text, as every reader of a stream or file takes it (invalid UTF-8
    /// replaced).
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

/// Up to `max` bytes of `b` for a failure message, escaped, a run of one character longer
/// than 16 written once with its length (`⟨'0' × 5000⟩`), with how many bytes were left out.
fn preview(b: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(b);
    let mut out = String::new();
    let mut used = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if used >= max {
            break;
        }
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        used += run * c.len_utf8();
        if run > 16 {
            out.push_str(&format!("⟨{c:?} × {run}⟩"));
        } else {
            for _ in 0..run {
                out.extend(c.escape_debug());
            }
        }
    }
    let mut s = format!("\"{out}\"");
    if used < text.len() {
        s.push_str(&format!(" … and {} bytes more", text.len() - used));
    }
    s
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Case {{ seed: {:?}, ops: {:?}, input ({} bytes): {} }}",
            self.seed().name,
            self.ops,
            self.bytes().len(),
            preview(&self.bytes(), 2000)
        )
    }
}

/// Most changes made to one input.
const MAX_OPS: usize = 8;

/// A seed of `family` and up to [`MAX_OPS`] changes to it.
fn case(family: Family) -> impl Strategy<Value = Case> {
    let n = family.seeds().len();
    (0..n, proptest::collection::vec(op(), 0..=MAX_OPS)).prop_map(move |(seed, ops)| Case {
        family,
        seed,
        ops,
    })
}

// ---------------------------------------------------------------------------------------------
// Properties

/// An error is a few lines whatever the input (see [`MAX_ERROR_BYTES`]).
fn check_error(what: &str, e: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        e.len() <= MAX_ERROR_BYTES,
        "{what}: an error of {} bytes: {}",
        e.len(),
        preview(e.as_bytes(), 300)
    );
    Ok(())
}

/// How errors are held: to [`MAX_ERROR_BYTES`] ([`check_error`]), whatever the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Errors {
    /// A few lines whatever the input.
    Short,
}

impl Errors {
    /// Check `e`, an error from reading some bytes (their count no longer matters: every
    /// reader's errors are short since issue 26; the enum keeps the call sites' one shape).
    fn check(self, what: &str, e: &str, _input_len: usize) -> Result<(), TestCaseError> {
        match self {
            Errors::Short => check_error(what, e),
        }
    }
}

/// The fields of a value's `Debug` text that hold a non-finite float (`NaN`, `inf`, `-inf`
/// outside string literals), by the name of the field they are in.
fn non_finite_fields(debug: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut word = String::new();
    let mut chars = debug.chars().peekable();
    let flush = |word: &mut String, field: &String, out: &mut Vec<String>| {
        if matches!(word.as_str(), "NaN" | "inf" | "-inf") {
            out.push(field.clone());
        }
        word.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                flush(&mut word, &field, &mut out);
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                flush(&mut word, &field, &mut out);
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '\'' => break,
                        _ => {}
                    }
                }
            }
            c if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' => word.push(c),
            ':' => {
                if !word.is_empty() {
                    field = word.clone();
                }
                word.clear();
            }
            _ => flush(&mut word, &field, &mut out),
        }
    }
    flush(&mut word, &field, &mut out);
    out
}

#[test]
fn the_non_finite_scanner_names_the_fields_and_skips_text() {
    #[derive(Debug)]
    #[allow(dead_code)]
    struct T {
        a: Option<f32>,
        b: Vec<f64>,
        name: &'static str,
        c: char,
        d: f64,
    }
    let t = T {
        a: Some(f32::INFINITY),
        b: vec![1.0, f64::NAN],
        name: "inf: NaN \" -inf",
        c: '"',
        d: -f64::INFINITY,
    };
    assert_eq!(non_finite_fields(&format!("{t:?}")), ["a", "b", "d"]);
    assert!(non_finite_fields(&format!("{:?}", (1.5f32, "nan", 1e300))).is_empty());
}

/// Fields that keep a non-finite value on purpose: a training log's loss printed as `nan` or
/// `inf` is the divergence the loss gates fail (src/parsers/trainlog.rs); a storage probe's
/// window in which no request finished has NaN latencies, its `null`s (src/probes/mod.rs).
const NON_FINITE_BY_DESIGN: &[&str] = &["loss", "ttfb_p50_ms", "ttfb_p99_ms", "total_p99_ms"];

/// A value holds no non-finite number, except where [`NON_FINITE_BY_DESIGN`] says.
fn check_finite(what: &str, value: &impl fmt::Debug) -> Result<(), TestCaseError> {
    let debug = format!("{value:?}");
    let bad: Vec<String> = non_finite_fields(&debug)
        .into_iter()
        .filter(|f| !NON_FINITE_BY_DESIGN.contains(&f.as_str()))
        .collect();
    prop_assert!(
        bad.is_empty(),
        "{what}: non-finite {bad:?} in {}",
        preview(debug.as_bytes(), 600)
    );
    Ok(())
}

/// The lines a node's stream hands the decoder, as the fleet reads them: split at `\n`, invalid
/// UTF-8 replaced, a line of [`burnin::sources::fleet::MAX_LINE_BYTES`] or more dropped.
fn stream_lines(bytes: &[u8]) -> Vec<String> {
    bytes
        .split_inclusive(|&c| c == b'\n')
        .map(|l| {
            if l.len() as u64 >= burnin::sources::fleet::MAX_LINE_BYTES {
                "<line too long>".to_string()
            } else {
                String::from_utf8_lossy(l).into_owned()
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Agent NDJSON frames

/// Decode every line with the decoder (fast path first) and with serde alone; errors stay
/// short, and where both read a line they read the same message.
fn decode_stream(lines: &[String], errors: Errors) -> Result<Vec<WireMessage>, TestCaseError> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for line in lines {
        let fast = d.decode(line);
        let general = wire::decode_general(line.trim());
        match &fast {
            Ok(Decoded::Message(m)) => out.push(m.clone()),
            Ok(_) => {}
            Err(g) => errors.check("wire::Decoder::decode", &g.to_string(), line.len())?,
        }
        if let Err(e) = &general {
            errors.check("wire::decode_general", e, line.len())?;
        }
        // The fast path reads only what serde reads, and reads it the same.
        if line.trim().starts_with('{') {
            match (&fast, &general) {
                (Ok(a), Ok(b)) => prop_assert_eq!(
                    a,
                    b,
                    "fast path and serde read {} differently",
                    preview(line.as_bytes(), 300)
                ),
                (Ok(a), Err(e)) => {
                    return Err(TestCaseError::fail(format!(
                        "the fast path read {} as {a:?}, serde refuses it: {e}",
                        preview(line.as_bytes(), 300)
                    )));
                }
                _ => {}
            }
        }
    }
    prop_assert_eq!(d.lines(), lines.len() as u64);
    prop_assert!(d.garbled() <= d.lines());
    Ok(out)
}

proptest! {
    #![proptest_config(config("wire"))]

    /// Agent streams, mutated, through `wire::Decoder::decode` and `wire::decode_general`.
    #[test]
    fn wire_decoder_takes_any_stream(c in case(Family::Ndjson)) {
        cap_memory();
        decode_stream(&stream_lines(&c.bytes()), Errors::Short)?;
    }
}

proptest! {
    #![proptest_config(config("wire-errors"))]

    /// A garbled line's reason is a few lines, however long the line (serde_json's message
    /// quotes a whole string value of the wrong type).
    #[test]
    fn wire_decoder_errors_are_short(c in case(Family::Ndjson)) {
        cap_memory();
        decode_stream(&stream_lines(&c.bytes()), Errors::Short)?;
    }
}

proptest! {
    #![proptest_config(config("wire-finite"))]

    /// Non-finite readings decoded from a frame (`"power_avg_watts":1e308` read into an `f32`
    /// is `inf`): the rule says such a number is an error where it is read.
    #[test]
    fn wire_decoder_never_yields_a_non_finite_reading(c in case(Family::Ndjson)) {
        cap_memory();
        for m in decode_stream(&stream_lines(&c.bytes()), Errors::Short)? {
            check_finite("wire message", &m)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. nvidia-smi CSV

/// Stamps for the lines of a stream: one a second from an arbitrary start.
const T0_MS: u64 = 1_796_202_000_000;

/// The `--query-gpu` fields a seed answers: its own (header-less corpus captures), else what
/// burnin asks modern or legacy drivers (a header, when the text has one, re-maps them).
fn smi_fields(seed: &Seed, legacy: bool) -> Vec<&'static str> {
    match &seed.fields {
        Some(f) => f
            .iter()
            .map(|s| &*Box::leak(s.clone().into_boxed_str()))
            .collect(),
        None if legacy => LEGACY_FIELDS.to_vec(),
        None => MODERN_FIELDS.to_vec(),
    }
}

/// Every line through `SmiDecoder::push_line`, then `finish`: the messages, with errors short
/// and no frame holding more GPUs than the node is expected to have.
fn decode_smi(
    c: &Case,
    legacy: bool,
    expected_gpus: u32,
) -> Result<Vec<WireMessage>, TestCaseError> {
    let fields = smi_fields(c.seed(), legacy);
    let mut d = SmiDecoder::new("n0", &fields, expected_gpus);
    let mut out = Vec::new();
    let lines = stream_lines(&c.bytes());
    for (i, line) in lines.iter().enumerate() {
        match d.push_line(line, T0_MS + i as u64 * 1000) {
            Ok(m) => out.extend(m),
            Err(g) => check_error("SmiDecoder::push_line", &g.to_string())?,
        }
    }
    out.extend(d.finish(T0_MS + lines.len() as u64 * 1000));
    prop_assert!(d.garbled() <= lines.len() as u64);
    for m in &out {
        match m {
            WireMessage::Frame(f) => prop_assert!(
                f.gpus.len() <= expected_gpus.max(1) as usize,
                "a frame of {} GPUs from a node of {expected_gpus}",
                f.gpus.len()
            ),
            WireMessage::Hello(h) => prop_assert!(h.gpus.len() <= expected_gpus.max(1) as usize),
            WireMessage::Error(e) => {
                prop_assert!(e.len() <= burnin::sources::fleet::MAX_LINE_BYTES as usize + 64)
            }
        }
    }
    Ok(out)
}

proptest! {
    #![proptest_config(config("smi"))]

    /// nvidia-smi CSV (corpus and fixtures), mutated, through `SmiDecoder`.
    #[test]
    fn smi_decoder_takes_any_csv(
        c in case(Family::Smi),
        legacy in any::<bool>(),
        expected_gpus in prop_oneof![Just(1u32), Just(8), 0..=16u32],
    ) {
        cap_memory();
        decode_smi(&c, legacy, expected_gpus)?;
    }
}

proptest! {
    #![proptest_config(config("smi-finite"))]

    /// A value nvidia-smi prints that overflows the reading's type (`1e308` W in an `f32`) is
    /// no reading, never `inf`.
    #[test]
    fn smi_decoder_never_yields_a_non_finite_reading(
        c in case(Family::Smi),
        legacy in any::<bool>(),
    ) {
        cap_memory();
        for m in decode_smi(&c, legacy, 8)? {
            check_finite("smi message", &m)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Prometheus: text exposition, API answers, dcgm-exporter series, the Prometheus source

proptest! {
    #![proptest_config(config("prometheus-text"))]

    /// Scrapes, mutated, through the text parser, bucket and quantile reading, and the
    /// dcgm-exporter series gatherer; what the gatherer keeps is finite.
    #[test]
    fn prometheus_text_takes_any_scrape(c in case(Family::PromText)) {
        cap_memory();
        let text = c.text();
        let exp = wire::prometheus::parse(&text);
        for e in &exp.errors {
            check_error("prometheus::parse", &e.to_string())?;
        }
        let names: std::collections::BTreeSet<&str> =
            exp.samples.iter().map(|s| s.name.as_str()).collect();
        for name in names {
            let b = wire::prometheus::buckets(exp.metric(name));
            for q in [0.0, 0.5, 0.99, 1.0] {
                let _ = wire::prometheus::quantile(&b, q);
            }
        }
        let g = burnin::sources::dcgm_series::gather_text(&text, &HOST_LABELS);
        let _ = g.absent();
        for node in g.nodes.values() {
            let _ = node.unavailable();
            for reading in node.gpus.values() {
                check_finite("dcgm reading", &reading.clone().finish())?;
            }
        }
    }
}

/// The nodes of a Prometheus-mode inventory: every host the seed scrapes name (those that are
/// valid SSH targets), so the source matches their series.
fn prom_nodes() -> PromNodes {
    static INV: OnceLock<Inventory> = OnceLock::new();
    let inv = INV.get_or_init(|| {
        let mut hosts = std::collections::BTreeSet::new();
        for s in Family::PromText.seeds() {
            let g = burnin::sources::dcgm_series::gather_text(
                &String::from_utf8_lossy(&s.bytes),
                &HOST_LABELS,
            );
            hosts.extend(
                g.nodes
                    .into_keys()
                    .filter(|h| burnin::config::inventory::validate_target(h).is_ok()),
            );
        }
        let mut text = String::from(
            "[defaults]\nmode = \"prometheus\"\ngpus = 8\n[prometheus]\nurl = \"http://127.0.0.1:9\"\n",
        );
        for h in hosts {
            text.push_str(&format!("[[node]]\nhost = \"{h}\"\n"));
        }
        Inventory::parse("fuzz.toml", &text).expect("the inventory of the scrapes' hosts")
    });
    let spec = inv.prometheus.as_ref().expect("a [prometheus] section");
    PromNodes::new(inv.nodes.clone(), spec, inv.interval)
}

proptest! {
    #![proptest_config(config("promql"))]

    /// API answers, mutated, through `promql::decode`; what decodes goes through the
    /// Prometheus source as values, times, identities and history, and its events into a store.
    #[test]
    fn promql_answers_through_the_prometheus_source(
        c in case(Family::PromAnswer),
        polls in 1..4usize,
    ) {
        cap_memory();
        let series = match burnin::sources::promql::decode("http://prom:9090", &c.bytes()) {
            Ok(s) => s,
            Err(e) => return check_error("promql::decode", &e.to_string()),
        };
        let mut nodes = prom_nodes();
        nodes.take_history(&series);
        let mut store = ClusterStore::new();
        for p in 0..polls {
            let identity = nodes.wants_identity().then_some(series.as_slice());
            let events = nodes.step(&series, &series, identity, T0_MS + p as u64 * 5000);
            for ev in events {
                if let SourceEvent::Frame(f) = &ev {
                    check_finite("frame from Prometheus", f)?;
                }
                store.ingest(ev);
            }
        }
        for ev in nodes.failed("connection refused") {
            store.ingest(ev);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Tool parsers (`ParserKind`) and launcher prefixes

/// Every parser kind.
const PARSERS: [ParserKind; 11] = [
    ParserKind::NcclTests,
    ParserKind::Perftest,
    ParserKind::Nvbandwidth,
    ParserKind::Workload,
    ParserKind::Trainlog,
    ParserKind::Sanity,
    ParserKind::Preflight,
    ParserKind::S3Probe,
    ParserKind::Gdsio,
    ParserKind::DcgmDiag,
    ParserKind::None,
];

/// Where a kind sits in [`PARSERS`]: a new `ParserKind` does not compile here until it is
/// listed, so none goes unfuzzed.
fn parser_slot(k: ParserKind) -> usize {
    match k {
        ParserKind::NcclTests => 0,
        ParserKind::Perftest => 1,
        ParserKind::Nvbandwidth => 2,
        ParserKind::Workload => 3,
        ParserKind::Trainlog => 4,
        ParserKind::Sanity => 5,
        ParserKind::Preflight => 6,
        ParserKind::S3Probe => 7,
        ParserKind::Gdsio => 8,
        ParserKind::DcgmDiag => 9,
        ParserKind::None => 10,
    }
}

#[test]
fn every_parser_kind_is_fuzzed() {
    for (i, k) in PARSERS.iter().enumerate() {
        assert_eq!(parser_slot(*k), i, "{k:?}");
    }
}

/// The parser a case goes to: its seed's own, unless `other` names another (and always one for
/// outputs no parser of a phase reads).
fn parser_for(seed: &Seed, other: Option<Index>) -> ParserKind {
    match (seed.kind, other) {
        (_, Some(i)) => PARSERS[i.index(PARSERS.len())],
        (Some(Kind::Tool(p)), None) => p,
        (_, None) => ParserKind::NcclTests,
    }
}

proptest! {
    #![proptest_config(config("parsers"))]

    /// Tool outputs, mutated, line by line through `OutputParser` (its launcher-prefix
    /// splitting included) and `launcher::strip`, then the gates' figures: errors short, every
    /// figure finite (a loss may be `nan`: it is what the loss gates fail).
    #[test]
    fn tool_parsers_take_any_output(
        c in case(Family::Outputs),
        other in proptest::option::weighted(0.3, any::<Index>()),
        gpus in prop_oneof![Just(8u32), Just(1), 0..=1024u32],
    ) {
        cap_memory();
        let kind = parser_for(c.seed(), other);
        let text = c.text();
        let mut p = OutputParser::new(kind, ParseContext { node: "n0".into(), expected_gpus: gpus });
        let mut metrics = Vec::new();
        for line in text.lines() {
            let l = launcher::strip(line);
            let (start, end) = (line.as_ptr() as usize, line.as_ptr() as usize + line.len());
            let body = l.body.as_ptr() as usize;
            prop_assert!(start <= body && body + l.body.len() <= end, "the body is part of the line");
            match p.push(line) {
                Ok(m) => metrics.extend(m),
                Err(e) => check_error("OutputParser::push", &e.to_string())?,
            }
        }
        metrics.extend(p.finish());
        prop_assert_eq!(p.lines(), text.lines().count());
        for m in &metrics {
            check_finite("phase metric", m)?;
        }
        let figures = burnin::plan::gates::figures(&metrics);
        check_finite("figures", &figures)?;
    }
}

/// What `burnin parse` prints from a file holds no control character but the newline (it all
/// goes through `model::strip_controls`).
fn check_printable(what: &str, text: &str) -> Result<(), TestCaseError> {
    let bad = text.chars().find(|c| c.is_control() && *c != '\n');
    prop_assert!(
        bad.is_none(),
        "{what}: prints {bad:?}: {}",
        preview(text.as_bytes(), 600)
    );
    Ok(())
}

/// The options `burnin parse` reads a case with: the shipped plan, 8 GPUs, the seed's smi
/// fields, and a saved baseline when `baseline` says.
fn parse_options(seed: &Seed, baseline: bool) -> Options {
    Options {
        plan: burnin::plan::default_plan().clone(),
        baseline: baseline.then(|| {
            burnin::record::session::read_baseline(
                &root().join("tests/fixtures/h200-verdicts/burnin-baseline.json"),
            )
            .expect("the H200 baseline")
        }),
        gpus: 8,
        smi_fields: seed.fields.clone(),
    }
}

/// As what kind `burnin parse` reads a case.
#[derive(Debug, Clone)]
enum KindChoice {
    /// The seed's own kind (detected when it has none).
    Own,
    /// Whatever `parse::detect` finds.
    Detect,
    /// One of every kind.
    Any(Index),
}

proptest! {
    #![proptest_config(config("parse-cmd"))]

    /// Every file `burnin parse` reads, mutated, through `parse::read_text` as its own
    /// kind, as any kind, or detected, then judged by the shipped plan and printed: errors
    /// short, the printout free of control characters.
    #[test]
    fn burnin_parse_takes_any_file(
        c in case(Family::Outputs),
        kind in prop_oneof![
            Just(KindChoice::Own),
            Just(KindChoice::Detect),
            any::<Index>().prop_map(KindChoice::Any),
        ],
        baseline in any::<bool>(),
    ) {
        cap_memory();
        let text = c.text();
        let kind = match kind {
            KindChoice::Own => c.seed().kind,
            KindChoice::Detect => None,
            KindChoice::Any(i) => Some(KINDS[i.index(KINDS.len())].1),
        };
        match parse::read_text("n0.log", &text, kind, &parse_options(c.seed(), baseline)) {
            Ok(r) => {
                check_printable("parse::render", &parse::render(&r))?;
                for m in &r.metrics {
                    check_finite("phase metric", m)?;
                }
            }
            Err(e) => check_error("parse::read_text", &e)?,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Records on disk

/// A run record of the fixtures, file by file (telemetry decompressed).
struct RecordSeed {
    /// Its directory, relative to the package.
    name: String,
    summary: Option<Vec<u8>>,
    events: Option<Vec<u8>>,
    plan: Option<Vec<u8>>,
    telemetry: Option<Vec<u8>>,
}

/// Every run record among the fixtures (a directory with a `summary.json`).
fn record_seeds() -> &'static [RecordSeed] {
    static R: OnceLock<Vec<RecordSeed>> = OnceLock::new();
    R.get_or_init(|| {
        files_under("tests/fixtures", &|n| n == "summary.json")
            .into_iter()
            .map(|rel| {
                let dir = root()
                    .join(&rel)
                    .parent()
                    .expect("a directory")
                    .to_path_buf();
                let read = |name: &str| std::fs::read(dir.join(name)).ok();
                let telemetry = read("telemetry/000.jsonl.gz").map(|gz| {
                    let mut text = Vec::new();
                    std::io::Read::read_to_end(
                        &mut flate2::read::MultiGzDecoder::new(&gz[..]),
                        &mut text,
                    )
                    .expect("a whole segment");
                    text
                });
                RecordSeed {
                    name: rel.trim_end_matches("/summary.json").to_string(),
                    summary: read("summary.json"),
                    events: read("events.jsonl"),
                    plan: read("plan.toml"),
                    telemetry,
                }
            })
            .collect()
    })
}

/// A mutated record: a fixture record and the changes to each of its files (the telemetry
/// segment's text before compression, and its compressed bytes after).
#[derive(Clone)]
struct RecordCase {
    record: usize,
    summary: Vec<Op>,
    events: Vec<Op>,
    plan: Vec<Op>,
    telemetry: Vec<Op>,
    gz: Vec<Op>,
    /// The segment written twice (`000` and `001`).
    two_segments: bool,
}

/// The files of a mutated record, by name (`None`: left out).
struct RecordFiles {
    summary: Option<Vec<u8>>,
    events: Option<Vec<u8>>,
    plan: Option<Vec<u8>>,
    segment: Option<Vec<u8>>,
}

impl RecordCase {
    /// The mutated files; splices take partners from the same file of the other records.
    fn files(&self) -> RecordFiles {
        let all = record_seeds();
        let seed = &all[self.record];
        let change =
            |own: &Option<Vec<u8>>, pick: &dyn Fn(&RecordSeed) -> &Option<Vec<u8>>, ops: &[Op]| {
                let pool: Vec<&[u8]> = all.iter().filter_map(|r| pick(r).as_deref()).collect();
                own.as_ref().map(|b| mutate(b, &pool, ops))
            };
        let telemetry = change(&seed.telemetry, &|r| &r.telemetry, &self.telemetry);
        let segment = telemetry.map(|text| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&text).expect("in memory");
            let gz = gz.finish().expect("in memory");
            mutate(&gz, &[&gz], &self.gz)
        });
        RecordFiles {
            summary: change(&seed.summary, &|r| &r.summary, &self.summary),
            events: change(&seed.events, &|r| &r.events, &self.events),
            plan: change(&seed.plan, &|r| &r.plan, &self.plan),
            segment,
        }
    }
}

impl fmt::Debug for RecordCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.files();
        let show = |ops: &[Op], b: &Option<Vec<u8>>| match b {
            Some(b) if !ops.is_empty() => format!("{ops:?} → {}", preview(b, 1500)),
            Some(_) => "as recorded".to_string(),
            None => "absent".to_string(),
        };
        f.debug_struct("RecordCase")
            .field("record", &record_seeds()[self.record].name)
            .field("summary.json", &show(&self.summary, &files.summary))
            .field("events.jsonl", &show(&self.events, &files.events))
            .field("plan.toml", &show(&self.plan, &files.plan))
            .field("telemetry text", &self.telemetry)
            .field("000.jsonl.gz", &show(&self.gz, &files.segment))
            .field("two_segments", &self.two_segments)
            .finish()
    }
}

/// A record of the fixtures with up to four changes to each file.
fn record_case() -> impl Strategy<Value = RecordCase> {
    let ops = || proptest::collection::vec(op(), 0..=4);
    (
        0..record_seeds().len(),
        ops(),
        ops(),
        ops(),
        ops(),
        ops(),
        any::<bool>(),
    )
        .prop_map(
            |(record, summary, events, plan, telemetry, gz, two_segments)| RecordCase {
                record,
                summary,
                events,
                plan,
                telemetry,
                gz,
                two_segments,
            },
        )
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty one.
    fn new(what: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "burnin-fuzz-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("a temporary directory");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Write the record's files into `dir`.
fn write_record(dir: &Path, files: &RecordFiles, two_segments: bool) {
    let put = |name: &str, b: &Option<Vec<u8>>| {
        if let Some(b) = b {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("record directory");
            std::fs::write(p, b).expect("record file");
        }
    };
    put("summary.json", &files.summary);
    put("events.jsonl", &files.events);
    put("plan.toml", &files.plan);
    put("telemetry/000.jsonl.gz", &files.segment);
    if two_segments {
        put("telemetry/001.jsonl.gz", &files.segment);
    }
}

/// Events a replay plays at most per case (a record may span a month of clock ticks).
const REPLAY_EVENTS: usize = 3000;

/// Every reader of a record over `c` written out: events, summary, recorded plan, state,
/// telemetry (whole and streamed), the replay's timeline into a store, and the report (with
/// `printable`, `report.md` holds no control character but newline and tab).
fn read_record(c: &RecordCase, errors: Errors, printable: bool) -> Result<(), TestCaseError> {
    let dir = TempDir::new("record");
    let run = dir.0.as_path();
    let files = c.files();
    write_record(run, &files, c.two_segments);
    let size = |b: &Option<Vec<u8>>| b.as_ref().map_or(0, Vec::len);
    let all = size(&files.summary) + size(&files.events) + size(&files.plan) + size(&files.segment);
    match burnin::record::read_events(run) {
        Ok((events, bad)) => prop_assert!(bad as usize + events.len() <= size(&files.events)),
        Err(e) => errors.check("read_events", &e.to_string(), all)?,
    }
    match burnin::record::read_summary(run) {
        Ok(s) => {
            let (_, note) = burnin::record::recorded_plan(run, &s);
            if let Some(n) = note {
                errors.check("recorded_plan", &n, all)?;
            }
        }
        Err(e) => errors.check("read_summary", &e.to_string(), all)?,
    }
    if let Err(e) = burnin::record::read_state(run) {
        errors.check("read_state", &e.to_string(), all)?;
    }
    match burnin::record::telemetry::read_telemetry(run) {
        Ok(t) => prop_assert!(t.torn.len() <= 2),
        Err(e) => errors.check("read_telemetry", &e.to_string(), all)?,
    }
    let mut stream = burnin::record::telemetry::TelemetryStream::open(run);
    for item in stream.by_ref() {
        if let Err(e) = item {
            errors.check("TelemetryStream", &e.to_string(), all)?;
        }
    }
    match burnin::sources::replay::Timeline::load(run) {
        Ok(t) => {
            let mut store = ClusterStore::new();
            for ev in t.play().take(REPLAY_EVENTS).map(|(_, e)| e) {
                store.ingest(ev);
            }
        }
        Err(e) => errors.check("Timeline::load", &e.to_string(), all)?,
    }
    match burnin::report::write(run) {
        Ok(files) if printable => {
            let md = std::fs::read_to_string(&files.markdown).expect("report.md");
            let bad = md
                .chars()
                .find(|c| c.is_control() && !matches!(c, '\n' | '\t'));
            prop_assert!(bad.is_none(), "report.md holds {bad:?}");
        }
        Ok(_) => {}
        Err(e) => errors.check("report::write", &e.to_string(), all)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(config("record"))]

    /// Records, mutated file by file, through every reader of a record ([`read_record`]).
    #[test]
    fn record_readers_take_any_record(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, false)?;
    }
}

proptest! {
    #![proptest_config(config("record-report"))]

    /// What a record says reaches `report.md` without control characters: someone `cat`s the
    /// report in a terminal.
    #[test]
    fn report_md_holds_no_control_character(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, true)?;
    }
}

proptest! {
    #![proptest_config(config("record-errors"))]

    /// The record's readers' errors are a few lines, however long what they read (serde_json's
    /// message quotes a whole string value of the wrong type).
    #[test]
    fn record_errors_are_short(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, false)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Config, plans, baselines, themes and layouts

/// Read a config-like case by its family: an inventory, a plan, or a theme and a layout.
fn read_config(c: &Case, errors: Errors) -> Result<(), TestCaseError> {
    let text = c.text();
    let n = text.len();
    match c.family {
        Family::Inventory => {
            if let Err(e) = Inventory::parse("burnin.toml", &text) {
                errors.check("Inventory::parse", &e.to_string(), n)?;
            }
        }
        Family::Plan => {
            if let Err(e) = Plan::parse("plan.toml", &text) {
                errors.check("Plan::parse", &e.to_string(), n)?;
            }
        }
        _ => {
            if let Err(e) = Theme::parse("theme.toml", &text) {
                errors.check("Theme::parse", &e.to_string(), n)?;
            }
            if let Err(e) = Layout::parse("layout.toml", &text) {
                errors.check("Layout::parse", &e.to_string(), n)?;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config("config"))]

    /// `burnin.example.toml` and a real inventory, mutated (commented keys brought to life),
    /// through `Inventory::parse`.
    #[test]
    fn inventory_takes_any_text(c in case(Family::Inventory)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// The shipped plan and the plans of the H200 runs, mutated, through `Plan::parse`.
    #[test]
    fn plan_takes_any_text(c in case(Family::Plan)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// Themes and layouts, shipped and broken, mutated, through `Theme::parse` and
    /// `Layout::parse`.
    #[test]
    fn themes_and_layouts_take_any_text(c in case(Family::UiToml)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// Saved baselines, mutated, through `session::read_baseline`: errors short, figures
    /// finite.
    #[test]
    fn baseline_takes_any_file(c in case(Family::Baseline)) {
        cap_memory();
        let dir = TempDir::new("baseline");
        let p = dir.0.join("burnin-baseline.json");
        std::fs::write(&p, c.bytes()).expect("baseline file");
        match burnin::record::session::read_baseline(&p) {
            Ok(b) => check_finite("baseline", &b)?,
            Err(e) => check_error("read_baseline", &e.to_string())?,
        }
    }
}

proptest! {
    #![proptest_config(config("config-errors"))]

    /// A config error is a few lines, however long the key or value it names (TOML's message
    /// quotes a whole unknown key).
    #[test]
    fn config_errors_are_short(
        c in prop_oneof![case(Family::Inventory), case(Family::Plan), case(Family::UiToml)],
    ) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 7. The console: store, triage and screen over hostile streams

/// A console with the shipped themes and layouts, as `burnin watch` starts.
fn console() -> State {
    common::empty_state("fuzz", (160, 48))
}

/// What the fleet sends the console for one node's decoded messages: the inventory's
/// expectation, then each hello and frame under the node's inventory name, frames stamped on
/// arrival (one a second) with a clock tick, an agent's error as a note.
fn fleet_events(node: &str, gpus: u32, messages: Vec<WireMessage>) -> Vec<SourceEvent> {
    let mut out = vec![SourceEvent::Expect {
        node: node.into(),
        gpus,
        nic_rate_gbps: None,
    }];
    let mut now = T0_MS;
    for m in messages {
        match m {
            WireMessage::Hello(mut h) => {
                h.node = node.into();
                out.push(SourceEvent::Hello(h));
            }
            WireMessage::Frame(mut f) => {
                now += 1000;
                f.node = node.into();
                f.at_ms = now;
                out.push(SourceEvent::Frame(f));
                out.push(SourceEvent::Clock { at_ms: now });
            }
            WireMessage::Error(text) => out.push(SourceEvent::Note {
                node: node.into(),
                at_ms: now,
                text,
            }),
        }
    }
    out.push(SourceEvent::Link {
        node: node.into(),
        at_ms: now,
        link: NodeLink::Unreachable("exit 255: Connection closed".into()),
    });
    out
}

/// Draw the console as the terminal would show it; no cell holds a control character (a
/// node's text cannot drive the operator's terminal).
fn check_screen(state: &State) -> Result<(), TestCaseError> {
    let (w, h) = state.ui.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| burnin::ui::render(state, f)).expect("draw");
    let buf = term.backend().buffer();
    for cell in buf.content() {
        let bad = cell.symbol().chars().find(|c| c.is_control());
        prop_assert!(bad.is_none(), "a cell holds {bad:?}");
    }
    Ok(())
}

/// Which stream a console case reads, and how.
#[derive(Debug, Clone)]
enum Stream {
    /// An agent's NDJSON.
    Agent(Case),
    /// nvidia-smi CSV (legacy fields or not).
    Smi(Case, bool),
}

proptest! {
    #![proptest_config(config("console"))]

    /// Hostile agent and smi streams, decoded as the fleet decodes them, into the console:
    /// store, triage each second, then the screen and the GPU details drawn.
    #[test]
    fn console_takes_any_stream(
        s in prop_oneof![
            3 => case(Family::Ndjson).prop_map(Stream::Agent),
            1 => (case(Family::Smi), any::<bool>()).prop_map(|(c, l)| Stream::Smi(c, l)),
        ],
        gpus in prop_oneof![Just(8u32), Just(1), 0..=1024u32],
    ) {
        cap_memory();
        let messages = match &s {
            Stream::Agent(c) => decode_stream(&stream_lines(&c.bytes()), Errors::Short)?,
            Stream::Smi(c, legacy) => decode_smi(c, *legacy, gpus.clamp(1, 16))?,
        };
        let mut state = console();
        for ev in fleet_events("node01", gpus, messages) {
            state.update(Event::Source(ev));
        }
        // However a stream names itself, it is the one node the fleet reads it from, and
        // its histories keep their fixed number of slots.
        prop_assert_eq!(state.store.nodes.len(), 1);
        for g in &state.store.nodes[0].gpus {
            prop_assert!(g.power_watts.len() <= burnin::store::HISTORY_SLOTS);
            prop_assert!(g.temperature_c.len() <= burnin::store::HISTORY_SLOTS);
        }
        check_screen(&state)?;
        state.ui.overlay = burnin::app::state::Overlay::GpuDetails;
        check_screen(&state)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 26's caps and checks, held on every case

/// Most GPUs the store keeps for one node.
const MAX_GPUS_PER_NODE: usize = burnin::store::MAX_GPUS_PER_NODE as usize;

/// Most RDMA ports, and most Ethernet interfaces, the store keeps for one node.
const MAX_PORTS_PER_NODE: usize = burnin::store::MAX_PORTS_PER_NODE;

/// One hostile frame: GPU indices, RDMA ports as (device number, port), interface numbers.
type HostileFrame = (Vec<u32>, Vec<(u16, u32)>, Vec<u16>);

/// A hostile agent's stream: a hello naming `gpus`, then one frame per entry, each with GPUs of
/// those indices, RDMA ports of those (device, port) names and interfaces of those names,
/// written and read back through the wire as the fleet reads it.
fn hostile_agent(hello_gpus: &[u32], frames: &[HostileFrame]) -> Vec<WireMessage> {
    use burnin::model::{GpuInfo, GpuSample, NetSample, NicSample, NodeFrame, NodeHello};
    let mut text = wire::encode(&WireMessage::Hello(NodeHello {
        node: "evil".into(),
        host: "evil".into(),
        agent_version: "burnin 0.1.0".into(),
        driver: None,
        cuda: None,
        gpus: hello_gpus
            .iter()
            .map(|&index| GpuInfo {
                index,
                name: "NVIDIA H200".into(),
                uuid: format!("GPU-{index}"),
                power_limit_watts: None,
                sm_clock_max_mhz: None,
                memory_total_bytes: None,
                nvlink_links: None,
                identity: Default::default(),
            })
            .collect(),
        topology: None,
        system: None,
        unavailable: Vec::new(),
    }));
    for (i, (gpus, ports, ifaces)) in frames.iter().enumerate() {
        text.push_str(&wire::encode(&WireMessage::Frame(NodeFrame {
            node: "evil".into(),
            at_ms: T0_MS + i as u64 * 1000,
            gpus: gpus
                .iter()
                .map(|&index| GpuSample {
                    index,
                    power_avg_watts: Some(100.0),
                    ..GpuSample::default()
                })
                .collect(),
            nics: ports
                .iter()
                .map(|&(d, port)| NicSample {
                    device: format!("mlx5_{d}"),
                    port,
                    ..NicSample::default()
                })
                .collect(),
            netdevs: ifaces
                .iter()
                .map(|&n| NetSample {
                    iface: format!("eth{n}"),
                    ..NetSample::default()
                })
                .collect(),
        })));
    }
    let lines = stream_lines(text.as_bytes());
    let mut d = Decoder::new();
    lines
        .iter()
        .filter_map(|l| match d.decode(l) {
            Ok(Decoded::Message(m)) => Some(m),
            _ => None,
        })
        .collect()
}

/// Frames with many distinct GPU indices, RDMA ports and interfaces.
fn hostile_frames() -> impl Strategy<Value = (Vec<u32>, Vec<HostileFrame>)> {
    use proptest::collection::vec;
    (
        vec(any::<u32>(), 0..200),
        vec(
            (
                vec(any::<u32>(), 0..16),
                vec((any::<u16>(), any::<u32>()), 0..16),
                vec(any::<u16>(), 0..16),
            ),
            1..60,
        ),
    )
}

/// The store of a console fed `messages` from one node.
fn store_after(messages: Vec<WireMessage>) -> ClusterStore {
    let mut store = ClusterStore::new();
    for ev in fleet_events("node01", 8, messages) {
        store.ingest(ev);
    }
    store
}

proptest! {
    #![proptest_config(config("caps"))]

    /// However many GPU indices an agent names, in its hello or its frames, a node holds at
    /// most [`MAX_GPUS_PER_NODE`].
    #[test]
    fn a_node_never_holds_more_than_64_gpus((hello, frames) in hostile_frames()) {
        cap_memory();
        let store = store_after(hostile_agent(&hello, &frames));
        let node = store.node("node01").expect("the node");
        prop_assert!(node.gpus.len() <= MAX_GPUS_PER_NODE, "{} GPUs", node.gpus.len());
    }

    /// However many RDMA ports and interfaces an agent names, a node holds at most
    /// [`MAX_PORTS_PER_NODE`] of each.
    #[test]
    fn a_node_never_holds_more_than_64_ports_or_interfaces((hello, frames) in hostile_frames()) {
        cap_memory();
        let store = store_after(hostile_agent(&hello, &frames));
        let node = store.node("node01").expect("the node");
        prop_assert!(node.nics.len() <= MAX_PORTS_PER_NODE, "{} RDMA ports", node.nics.len());
        prop_assert!(node.netdevs.len() <= MAX_PORTS_PER_NODE, "{} interfaces", node.netdevs.len());
    }
}

/// `text` (TOML) with its `n`-th number (tables in key order, as `toml::Value` keeps them) set to
/// `value`; `None` past the last.
fn with_number(text: &str, n: usize, value: f64) -> Option<String> {
    /// Set the `n`-th number under `v`; counts down `n` as it goes.
    fn walk(v: &mut toml::Value, n: &mut usize, value: f64) -> bool {
        match v {
            toml::Value::Integer(_) | toml::Value::Float(_) => {
                if *n == 0 {
                    *v = toml::Value::Float(value);
                    return true;
                }
                *n -= 1;
                false
            }
            toml::Value::Array(a) => a.iter_mut().any(|x| walk(x, n, value)),
            toml::Value::Table(t) => t.iter_mut().any(|(_, x)| walk(x, n, value)),
            _ => false,
        }
    }
    let mut doc: toml::Value = toml::from_str(text).ok()?;
    let mut n = n;
    walk(&mut doc, &mut n, value).then(|| toml::to_string(&doc).expect("TOML again"))
}

/// `burnin.example.toml` with the commented-out `key = value` lines of its active sections
/// brought to life (a section whose header is commented out, `# [prometheus]`, stays off).
fn example_inventory_uncommented() -> String {
    let text = std::fs::read_to_string(root().join("burnin.example.toml")).expect("example");
    let mut active = true;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            active = true;
        } else if t.starts_with("# [") {
            active = false;
        }
        let key_value = t.strip_prefix("# ").filter(|rest| {
            rest.split_once(" = ").is_some_and(|(k, _)| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            })
        });
        match key_value {
            Some(rest) if active => out.push(rest),
            _ => out.push(line),
        }
    }
    out.join("\n")
}

proptest! {
    #![proptest_config(config("non-finite-config"))]

    /// Any number of the inventory (every key of the example set) made `nan`, `inf` or `-inf`
    /// is an error where it is read.
    #[test]
    fn inventory_rejects_non_finite_numbers(n in 0..64usize, v in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        cap_memory();
        let base = example_inventory_uncommented();
        prop_assert!(Inventory::parse("burnin.toml", &base).is_ok(), "the example with every key set reads");
        if let Some(text) = with_number(&base, n, v) {
            prop_assert!(Inventory::parse("burnin.toml", &text).is_err(), "{v} read as a number:\n{text}");
        }
    }

    /// Any number of the shipped plan (gate values, percentages, counts) made `nan`, `inf` or
    /// `-inf` is an error where it is read.
    #[test]
    fn plan_rejects_non_finite_numbers(n in 0..256usize, v in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)]) {
        cap_memory();
        let base = std::fs::read_to_string(root().join("plans/default.toml")).expect("plan");
        if let Some(text) = with_number(&base, n, v) {
            prop_assert!(Plan::parse("plan.toml", &text).is_err(), "{v} read as a number");
        }
    }

    /// Every node name an inventory yields, whatever its mode, is safe as a file name in the
    /// record (`logs/<phase>/<node>.log`): not empty, no `/` or `\`, not `.` or `..`, no
    /// control character, at most 255 bytes.
    #[test]
    fn inventory_node_names_are_safe_file_names(
        c in case(Family::Inventory),
        mode in prop_oneof![Just("local"), Just("sim"), Just("agent"), Just("smi")],
    ) {
        cap_memory();
        let text = format!("{}\n[[node]]\nmode = \"{mode}\"\nhost = \"../../{}\"\n", c.text(), mode);
        for text in [c.text(), text] {
            if let Ok(inv) = Inventory::parse("burnin.toml", &text) {
                for n in &inv.nodes {
                    let name = n.name.as_str();
                    prop_assert!(
                        !name.is_empty()
                            && name.len() <= 255
                            && name != "."
                            && name != ".."
                            && !name.contains(['/', '\\'])
                            && !name.chars().any(char::is_control),
                        "node name {:?}", preview(name.as_bytes(), 200)
                    );
                }
            }
        }
    }
}

/// The most memory this process has held so far (MiB): with a hang limit each target runs in a
/// process of its own, so this is what the target's cases took.
fn peak_rss_mb() -> u64 {
    // SAFETY: getrusage fills the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    usage.ru_maxrss as u64 / 1024
}

/// The address space (MiB) of the process that checks one bounded read: a reader that would
/// hold its whole input fails fast (with a hang limit, each runs in a process of its own).
const BOUNDED_READS_MB: u64 = 1024;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1, ..config("bounded-reads") })]

    /// Host ranges that multiply past any cluster (`gpu[0-99999][0-99999]`: 10^10 names) are an
    /// error, not an allocation of hundreds of GB.
    #[test]
    fn inventory_host_ranges_stay_bounded(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        let text = "[[node]]\nhost = \"gpu[0-99999][0-99999]\"\nmode = \"sim\"\n";
        prop_assert!(Inventory::parse("burnin.toml", text).is_err());
    }

    /// A record without its plan copy whose summary names `/dev/zero` as the plan is not read
    /// into memory: the report and the replay fall back to the shipped plan at once.
    #[test]
    fn a_record_naming_a_device_as_its_plan_is_refused_unread(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        let dir = TempDir::new("plan-device");
        let summary = std::fs::read_to_string(root().join("tests/fixtures/h200-run/run2-vs-baseline/summary.json"))
            .expect("a summary");
        let mut summary: serde_json::Value = serde_json::from_str(&summary).expect("JSON");
        summary["plan"] = "/dev/zero".into();
        std::fs::write(dir.0.join("summary.json"), summary.to_string()).expect("summary");
        let s = burnin::record::read_summary(&dir.0).expect("the summary reads");
        let _ = burnin::record::recorded_plan(&dir.0, &s);
        let peak = peak_rss_mb();
        prop_assert!(peak < 256, "reading the record took {peak} MiB");
    }

    /// A telemetry segment that inflates without end (gzip members of 1 MiB without a newline,
    /// 4 GiB in all from a 4 MiB file) is read as far as a bound, not into one line.
    #[test]
    fn telemetry_reads_stay_bounded(_case in Just(())) {
        cap_memory_to(BOUNDED_READS_MB);
        // One fixed place: this test ends in an abort until the fix, which leaves no Drop to
        // clean up; the next run starts by removing it.
        let dir = TempDir(std::env::temp_dir().join("burnin-fuzz-gzip-bomb"));
        let _ = std::fs::remove_dir_all(&dir.0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b'x'; 1 << 20]).expect("in memory");
        let member = gz.finish().expect("in memory");
        std::fs::create_dir_all(dir.0.join("telemetry")).expect("telemetry dir");
        let mut f = std::fs::File::create(dir.0.join("telemetry/000.jsonl.gz")).expect("segment");
        for _ in 0..4096 {
            f.write_all(&member).expect("segment");
        }
        drop(f);
        for item in burnin::record::telemetry::TelemetryStream::open(&dir.0) {
            let _ = item;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reproducers: the minimal inputs of what the harness found, fixed since

/// A string of `n` x's in JSON quotes.
fn long_json_string(n: usize) -> String {
    format!("\"{}\"", "x".repeat(n))
}

#[test]
fn repro_wire_f32_overflow_is_not_a_reading() {
    let line = r#"{"frame":{"node":"n","at_ms":1,"gpus":[{"index":0,"power_avg_watts":1e308}]}}"#;
    let Ok(Decoded::Message(WireMessage::Frame(f))) = Decoder::new().decode(line) else {
        panic!("the frame decodes: its numbers are valid JSON");
    };
    let p = f.gpus[0].power_avg_watts;
    assert!(p.is_none_or(f32::is_finite), "power {p:?}");
}

#[test]
fn repro_smi_f32_overflow_is_not_a_reading() {
    let mut d = SmiDecoder::new("n", &["index", "power.draw"], 1);
    let frames: Vec<_> = d
        .push_line("0, 1e308", T0_MS)
        .expect("a row")
        .into_iter()
        .filter_map(|m| match m {
            WireMessage::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 1, "one GPU expected, one frame");
    let p = frames[0].gpus[0].power_avg_watts;
    assert!(p.is_none_or(f32::is_finite), "power {p:?}");
}

#[test]
fn repro_wire_garbled_reason_is_short() {
    let line = format!(
        r#"{{"frame":{{"node":"n","at_ms":{}}}}}"#,
        long_json_string(70_000)
    );
    let e = Decoder::new().decode(&line).expect_err("garbled");
    assert!(
        e.to_string().len() <= MAX_ERROR_BYTES,
        "{} bytes",
        e.to_string().len()
    );
}

#[test]
fn repro_config_error_is_short() {
    let text = format!("{} = 1\n", "k".repeat(70_000));
    let e = Inventory::parse("burnin.toml", &text).expect_err("unknown key");
    assert!(
        e.to_string().len() <= MAX_ERROR_BYTES,
        "{} bytes",
        e.to_string().len()
    );
}

#[test]
fn repro_report_md_holds_no_control_character() {
    let dir = TempDir::new("report-escape");
    let from = root().join("tests/fixtures/h200-run/run5-record");
    for name in ["summary.json", "events.jsonl"] {
        let text = std::fs::read_to_string(from.join(name)).expect("record file");
        let text = text.replace(
            "\"next\":\"none: at the power limit",
            "\"next\":\"\\u001b]0;pwned\\u0007none: at the power limit",
        );
        std::fs::write(dir.0.join(name), text).expect("record file");
    }
    let files = burnin::report::write(&dir.0).expect("a report");
    let md = std::fs::read_to_string(files.markdown).expect("report.md");
    let bad = md
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'));
    assert!(bad.is_none(), "report.md holds {bad:?}");
}

#[test]
fn repro_record_summary_error_is_short() {
    let dir = TempDir::new("summary");
    std::fs::write(
        dir.0.join("summary.json"),
        format!(r#"{{"schema":{}}}"#, long_json_string(70_000)),
    )
    .expect("summary");
    let e = burnin::record::read_summary(&dir.0)
        .expect_err("not a summary")
        .to_string();
    assert!(e.len() <= MAX_ERROR_BYTES, "{} bytes", e.len());
}
