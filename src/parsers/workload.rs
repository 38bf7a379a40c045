//! The JSON lines our own workloads print (`gemm.py`, `train_synthetic.py`): one object per
//! line with a `burnin` key naming what it is. Kinds we do not know are skipped (a newer
//! workload with an older console), a line that claims to be ours but does not fit is an error.

use serde::Deserialize;

use super::LineError;

/// One record of a workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "burnin", rename_all = "snake_case")]
pub enum Record {
    /// Sustained GEMM throughput of one GPU.
    Gemm {
        /// CUDA device index on the node.
        gpu: u32,
        /// `bf16` or `fp8`.
        dtype: String,
        /// TFLOP/s.
        tflops: f64,
    },
    /// One training step (rank 0's view; tokens/s over all ranks).
    Step {
        /// Step number.
        step: u64,
        /// Wall time of the step.
        step_time_ms: f64,
        /// Time spent waiting for the batch.
        data_wait_ms: f64,
        /// Tokens per second over all ranks.
        tokens_per_sec: f64,
        /// Loss.
        loss: f64,
        /// GPUs the job ran on (older workloads do not say).
        #[serde(default)]
        world: Option<u32>,
        /// NUMA pinning of the job: `off` or `gpu` (older workloads do not say).
        #[serde(default)]
        numa: Option<String>,
        /// How the loader read: `gds` (through cuFile into GPU memory); absent: the usual way.
        #[serde(default)]
        reader: Option<String>,
    },
    /// Whether `--reader gds` can read through cuFile here, before its run: the reader
    /// (`torch.cuda.gds`, `kvikio`), or none and why; and whether nvidia_fs is loaded.
    GdsReader {
        /// The reader, `None` where none could read.
        #[serde(default)]
        reader: Option<String>,
        /// Whether nvidia_fs is loaded on the node.
        #[serde(default)]
        nvidia_fs: bool,
        /// Why no reader could read.
        #[serde(default)]
        why: Option<String>,
        /// The run's loader failed after it started: at which step, and why.
        #[serde(default)]
        failed: Option<String>,
        /// kvikio's compat mode as it printed it (`True`, `CompatMode.ON`, `CompatMode.AUTO`).
        #[serde(default)]
        compat: Option<String>,
    },
    /// Time from start to the first batch on the GPU.
    FirstBatch {
        /// Milliseconds.
        ms: f64,
    },
    /// The workload failed and says why.
    Error {
        /// Its message.
        text: String,
    },
    /// A training step whose loss is not a number (Python's `json.dumps` writes `NaN`,
    /// `Infinity` or `-Infinity`, which is not JSON): the training diverged.
    #[serde(skip)]
    Diverged {
        /// The step, where the line gave one.
        step: Option<u64>,
        /// The loss as written (`NaN`, `Infinity`).
        loss: String,
    },
    /// A kind this console does not know.
    #[serde(other)]
    Other,
}

/// What one `gds_reader` line said (the fields of [`Record::GdsReader`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GdsReaderSaid {
    /// The reader, `None` where none could read.
    pub reader: Option<String>,
    /// Whether nvidia_fs is loaded.
    pub nvidia_fs: bool,
    /// Why no reader could read.
    pub why: Option<String>,
    /// The loader failed mid-run: when and why.
    pub failed: Option<String>,
    /// kvikio's compat mode as printed.
    pub compat: Option<String>,
}

/// T8's `gds-loader` check from the workload's `gds_reader` line: which cuFile reader the GDS
/// column used, and what nvidia_fs (or kvikio's compat mode) says of its path; failed where its
/// loader failed mid-run. T8's gates read no checks: the column never changes its verdict, and
/// S4 is where the path is proven.
pub fn gds_reader_check(node: &str, said: &GdsReaderSaid) -> crate::model::phase::PhaseMetric {
    use crate::model::phase::CheckStatus;
    let clean = |s: &str| crate::model::excerpt(&crate::model::strip_controls(s));
    let GdsReaderSaid {
        reader,
        nvidia_fs,
        why,
        failed,
        compat,
    } = said;
    let (reader, nvidia_fs, why) = (reader.as_deref(), *nvidia_fs, why.as_deref());
    // kvikio's own compat mode is plain POSIX reads: not cuFile at all.
    let kvikio_posix = compat
        .as_deref()
        .is_some_and(|c| c == "True" || c.ends_with(".ON") || c == "ON");
    let (status, detail) = match reader {
        _ if failed.is_some() => (
            CheckStatus::Failed,
            format!(
                "the GDS column's loader ({}) failed {}; the column stops there",
                reader.map_or_else(|| "cuFile".into(), clean),
                clean(failed.as_deref().unwrap_or_default())
            ),
        ),
        Some(r) if kvikio_posix => (
            CheckStatus::Warn,
            format!(
                "the GDS column's loader ({}) runs in kvikio's compat mode: plain POSIX reads, not cuFile, so the column is not GDS",
                clean(r)
            ),
        ),
        Some(r) if nvidia_fs => (
            CheckStatus::Ok,
            format!(
                "the GDS column's loader read through cuFile ({}), nvidia_fs loaded (S4 proves which path the reads take)",
                clean(r)
            ),
        ),
        Some(r) => (
            CheckStatus::Warn,
            format!(
                "the GDS column's loader read through cuFile ({}) without nvidia_fs: a CPU bounce buffer (compat mode) unless the node reads through P2PDMA, so the column is not GPU-direct",
                clean(r)
            ),
        ),
        None => (
            CheckStatus::Unknown,
            format!(
                "no GDS column: {}",
                why.map_or_else(|| "the workload said no reader and no reason".into(), clean)
            ),
        ),
    };
    crate::model::phase::PhaseMetric::Check {
        node: node.to_string(),
        name: "gds-loader".into(),
        status,
        detail,
    }
}

/// Read one line: `Ok(None)` for lines that are not ours.
pub fn parse_line(line_no: usize, line: &str) -> Result<Option<Record>, LineError> {
    match super::tagged_json_line(line_no, line, "workload record", |r| *r != Record::Other) {
        Err(e) => match bare_non_finite(line) {
            Some(found) => non_finite_record(line_no, &found),
            None => Err(e),
        },
        ok => ok,
    }
}

/// What Python's `json.dumps` wrote where a float was not finite: the line with `null` in
/// place of each bare `NaN`, `Infinity` or `-Infinity` (outside strings), and the key and token
/// of each. `None` when there is none.
fn bare_non_finite(line: &str) -> Option<(String, Vec<(String, String)>)> {
    const TOKENS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let mut out = String::with_capacity(line.len());
    let mut found = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut string = String::new();
    let mut last_string = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                last_string = std::mem::take(&mut string);
            } else if string.len() < 64 {
                string.push(c);
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(t) = TOKENS.iter().find(|t| rest.starts_with(**t)) {
            out.push_str("null");
            found.push((last_string.clone(), (*t).to_string()));
            rest = &rest[t.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (!found.is_empty()).then_some((out, found))
}

/// A record with bare non-finite numbers: a step whose loss is one is a diverged training;
/// any other field that is not a finite number is no reading, and the line an error.
fn non_finite_record(
    line_no: usize,
    (text, found): &(String, Vec<(String, String)>),
) -> Result<Option<Record>, LineError> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| LineError {
        line_no,
        message: format!("workload record: {}", crate::model::excerpt(&e.to_string())),
    })?;
    let kind = value.get("burnin").and_then(|k| k.as_str()).unwrap_or("");
    let loss = found.iter().find(|(key, _)| key == "loss");
    match loss {
        Some((_, token)) if kind == "step" => Ok(Some(Record::Diverged {
            step: value.get("step").and_then(serde_json::Value::as_u64),
            loss: token.clone(),
        })),
        _ => Err(LineError {
            line_no,
            // The first three fields said; a line of thousands says how many more.
            message: format!(
                "workload record {}: {}{} not a finite number",
                crate::model::excerpt(kind),
                found
                    .iter()
                    .take(3)
                    .map(|(k, t)| format!("{} = {t}", crate::model::excerpt_chars(k, 40)))
                    .collect::<Vec<_>>()
                    .join(", "),
                match found.len() {
                    0..=3 => String::new(),
                    n => format!(" and {} more", n - 3),
                }
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Issue 41: `train_synthetic.py` prints a diverged loss as Python's `json.dumps` does
    /// (`NaN`, `Infinity`: not JSON). The step is a divergence, never a line to drop; a
    /// non-finite figure elsewhere is an error that names it.
    #[test]
    fn a_loss_that_is_not_a_number_is_a_diverged_training() {
        let line = r#"{"burnin": "step", "step": 212, "step_time_ms": 801.2, "data_wait_ms": 1.5, "tokens_per_sec": 650000.0, "loss": NaN, "world": 8, "numa": "gpu"}"#;
        assert_eq!(
            parse_line(1, line).expect("read"),
            Some(Record::Diverged {
                step: Some(212),
                loss: "NaN".into()
            })
        );
        let inf = line.replace("NaN", "-Infinity");
        assert!(matches!(
            parse_line(1, &inf),
            Ok(Some(Record::Diverged { loss, .. })) if loss == "-Infinity"
        ));
        let e = parse_line(
            1,
            r#"{"burnin": "gemm", "gpu": 0, "dtype": "bf16", "tflops": NaN}"#,
        )
        .expect_err("no reading");
        assert!(
            e.message.contains("tflops = NaN not a finite number"),
            "{}",
            e.message
        );
        // A line of thousands of them is still a short error.
        let many = format!(
            "{{\"burnin\": \"gemm\", \"gpu\": 0, \"x\": [{}NaN]}}",
            "NaN, ".repeat(20_000)
        );
        let e = parse_line(1, &many).expect_err("no reading");
        assert!(e.message.len() < 300, "{} bytes", e.message.len());
        assert!(
            e.message.ends_with("and 19998 more not a finite number"),
            "{}",
            e.message
        );
        // A NaN inside a string is text, not a number.
        assert_eq!(
            parse_line(1, r#"{"burnin": "error", "text": "loss NaN at step 3"}"#).expect("read"),
            Some(Record::Error {
                text: "loss NaN at step 3".into()
            })
        );
    }

    /// T8's GDS run as `train_synthetic.py --reader gds` prints it (`json.dumps` of its
    /// `emit` calls; written from the script, not captured: no node with a cuFile reader was at
    /// hand): the reader line makes the `gds-loader` check, its steps the `gds` variant.
    #[test]
    fn the_gds_column_is_a_variant_and_says_its_reader() {
        use crate::model::phase::{CheckStatus, PhaseMetric};
        use crate::parsers::{OutputParser, ParseContext, ParserKind};
        let run = |lines: &[&str]| {
            let mut p = OutputParser::new(
                ParserKind::Workload,
                ParseContext {
                    node: "n1".into(),
                    expected_gpus: 8,
                },
            );
            let mut out = Vec::new();
            for l in lines {
                out.extend(p.push(l).expect("line"));
            }
            out
        };
        let check = |out: &[PhaseMetric]| {
            out.iter()
                .find_map(|m| match m {
                    PhaseMetric::Check {
                        name,
                        status,
                        detail,
                        ..
                    } if name == "gds-loader" => Some((*status, detail.clone())),
                    _ => None,
                })
                .expect("gds-loader")
        };
        let out = run(&[
            r#"{"burnin": "gds_reader", "reader": "torch.cuda.gds", "nvidia_fs": true, "why": null}"#,
            r#"{"burnin": "first_batch", "ms": 5123.4}"#,
            r#"{"burnin": "step", "step": 0, "step_time_ms": 812.5, "data_wait_ms": 3.2, "tokens_per_sec": 645000.1, "loss": 10.41, "world": 8, "numa": "gpu", "reader": "gds"}"#,
        ]);
        assert_eq!(check(&out).0, CheckStatus::Ok);
        assert!(out.iter().any(|m| matches!(
            m,
            PhaseMetric::Step { variant: Some(v), .. } if v == "gds"
        )));
        let compat = run(&[
            r#"{"burnin": "gds_reader", "reader": "kvikio", "nvidia_fs": false, "why": null}"#,
        ]);
        let (status, detail) = check(&compat);
        assert_eq!(status, CheckStatus::Warn);
        assert!(detail.contains("compat mode"), "{detail}");
        let none = run(&[
            "{\"burnin\": \"gds_reader\", \"reader\": null, \"nvidia_fs\": false, \"why\": \"PyTorch was built without cuFile and kvikio is not installed\\u001b[2J\"}",
        ]);
        let (status, detail) = check(&none);
        assert_eq!(status, CheckStatus::Unknown);
        assert!(
            detail.contains("kvikio is not installed") && !detail.contains('\u{1b}'),
            "{detail}"
        );
        let kvikio_posix = run(&[
            r#"{"burnin": "gds_reader", "reader": "kvikio", "nvidia_fs": true, "why": null, "compat": "CompatMode.ON"}"#,
        ]);
        let (status, detail) = check(&kvikio_posix);
        assert_eq!(status, CheckStatus::Warn);
        assert!(detail.contains("not cuFile"), "{detail}");
        let failed = run(&[
            r#"{"burnin": "gds_reader", "reader": "torch.cuda.gds", "nvidia_fs": false, "failed": "at step 212: RuntimeError: cuFileRead failed"}"#,
        ]);
        let (status, detail) = check(&failed);
        assert_eq!(status, CheckStatus::Failed);
        assert!(detail.contains("at step 212"), "{detail}");
        // The plan's own line where no data_gds is set.
        let unset = run(&[
            r#"{"burnin":"gds_reader","why":"the plan names no data_gds (the shards on the GDS mount)"}"#,
        ]);
        assert_eq!(check(&unset).0, CheckStatus::Unknown);
    }

    #[test]
    fn records_and_foreign_lines() {
        assert_eq!(
            parse_line(
                1,
                r#"{"burnin":"gemm","gpu":3,"dtype":"bf16","tflops":712.5,"m":8192}"#
            )
            .unwrap(),
            Some(Record::Gemm {
                gpu: 3,
                dtype: "bf16".into(),
                tflops: 712.5
            })
        );
        assert_eq!(parse_line(2, "NCCL INFO hello").unwrap(), None);
        assert_eq!(parse_line(3, r#"{"burnin":"hello","v":2}"#).unwrap(), None);
        assert_eq!(parse_line(4, r#"{"loss": 1.0}"#).unwrap(), None);
        let e = parse_line(5, r#"{"burnin":"step","step":"x"}"#).unwrap_err();
        assert_eq!(e.line_no, 5);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in ".{0,200}") {
            let _ = parse_line(1, &s);
            let _ = parse_line(1, &format!("{{\"burnin\":{s}"));
        }
    }
}
