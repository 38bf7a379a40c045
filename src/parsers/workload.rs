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
    /// A kind this console does not know.
    #[serde(other)]
    Other,
}

/// Read one line: `Ok(None)` for lines that are not ours.
pub fn parse_line(line_no: usize, line: &str) -> Result<Option<Record>, LineError> {
    super::tagged_json_line(line_no, line, "workload record", |r| *r != Record::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
