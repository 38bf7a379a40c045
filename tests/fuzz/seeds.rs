//! Seeds: the real inputs the cases start from.

use super::*;

/// The package root.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One real input.
pub(crate) struct Seed {
    /// Where it came from (relative to the package).
    pub(crate) name: String,
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
    /// What reads it (`burnin parse`'s kind), when known.
    pub(crate) kind: Option<Kind>,
    /// For header-less nvidia-smi CSV: the `--query-gpu` fields it answers.
    pub(crate) fields: Option<Vec<String>>,
}

impl Seed {
    /// A seed from a file of the package.
    pub(crate) fn file(rel: &str) -> Seed {
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
pub(crate) fn files_under(dir: &str, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
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
pub(crate) fn corpus_entries() -> Vec<Seed> {
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
pub(crate) fn fixture_outputs() -> Vec<Seed> {
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
pub(crate) enum Family {
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
    pub(crate) fn seeds(self) -> &'static [Seed] {
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
pub(crate) fn ndjson_seeds() -> Vec<Seed> {
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
pub(crate) fn smi_seeds() -> Vec<Seed> {
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
pub(crate) fn prom_text_seeds() -> Vec<Seed> {
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
pub(crate) const HOST_LABELS: [&str; 2] = ["Hostname", "hostname"];

/// Prometheus API answers as the server gives them for burnin's three queries and its range
/// query, made from each dcgm-exporter exposition's samples, and an error answer in the API's
/// documented shape.
pub(crate) fn prom_answer_seeds() -> Vec<Seed> {
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
