//! Step figures from the logs of common trainers, for sites that run their own job in T5/T8:
//! Megatron-LM (`elapsed time per iteration (ms)`, `lm loss`, and the `batch-generator` timer
//! that `--timing-log-level 2` prints after it), NeMo (`train_step_timing in s`,
//! `reduced_train_loss`), and Lightning's progress bar (`it/s` or `s/it`, `loss=`). Progress
//! bars rewrite their line with carriage returns; every segment is read.

use std::sync::LazyLock;

use regex::Regex;

/// One step as a trainer log shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Step (iteration) number.
    pub step: u64,
    /// Wall time per step, ms.
    pub step_time_ms: f64,
    /// Data wait, ms, where the log prints it.
    pub data_wait_ms: Option<f64>,
    /// Tokens/s, where the log prints it.
    pub tokens_per_sec: Option<f64>,
    /// Loss, where the log prints it.
    pub loss: Option<f64>,
}

static MEGATRON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"iteration\s+(\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+)")
        .expect("static regex")
});
static MEGATRON_LOSS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"lm loss:\s*([0-9.Ee+-]+)").expect("static regex"));
static MEGATRON_TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"tokens per second(?: per GPU)?:\s*([0-9.Ee+-]+)").expect("static regex")
});
static MEGATRON_BATCH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"batch-generator\s*\.*:\s*\(\s*[0-9.]+,\s*([0-9.]+)\)").expect("static regex")
});
static NEMO_TIMING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"train_step_timing in s\s*[=:]\s*([0-9.]+)").expect("static regex")
});
static NEMO_STEP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"global_step\s*[=:]\s*([0-9.]+)").expect("static regex"));
static NEMO_LOSS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"reduced_train_loss\s*[=:]\s*([0-9.Ee+-]+)").expect("static regex")
});
static LIGHTNING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"Epoch (\d+):.*?\|\s*(\d+)/(\d+) \[[^\],]*,\s*([0-9.]+)(it/s|s/it)([^\]]*)\]")
        .expect("static regex")
});
static LIGHTNING_LOSS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:train_)?loss=([0-9.Ee+-]+)").expect("static regex"));

fn num(s: Option<regex::Match<'_>>) -> Option<f64> {
    s.and_then(|m| m.as_str().parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

/// Streaming parser over a trainer's log.
#[derive(Debug, Default)]
pub struct TrainLogParser {
    /// A Megatron step waits for the timer lines printed after it.
    pending: Option<Step>,
    last_step: Option<u64>,
}

impl TrainLogParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line; returns the steps it completed.
    pub fn push(&mut self, line: &str) -> Vec<Step> {
        let mut out = Vec::new();
        for seg in line.split('\r') {
            self.segment(seg, &mut out);
        }
        out
    }

    /// The end of the log: a step still waiting for its timers.
    pub fn finish(&mut self) -> Option<Step> {
        self.pending.take()
    }

    fn segment(&mut self, seg: &str, out: &mut Vec<Step>) {
        if let Some(c) = MEGATRON.captures(seg) {
            out.extend(self.pending.take());
            let (Some(step), Some(ms)) = (
                c.get(1).and_then(|m| m.as_str().parse::<u64>().ok()),
                num(c.get(2)),
            ) else {
                return;
            };
            self.pending = Some(Step {
                step,
                step_time_ms: ms,
                data_wait_ms: None,
                tokens_per_sec: num(MEGATRON_TOKENS.captures(seg).and_then(|c| c.get(1))),
                loss: num(MEGATRON_LOSS.captures(seg).and_then(|c| c.get(1))),
            });
            return;
        }
        if let Some(c) = MEGATRON_BATCH.captures(seg) {
            if let Some(p) = &mut self.pending {
                p.data_wait_ms = num(c.get(1));
            }
            return;
        }
        if let Some(c) = NEMO_TIMING.captures(seg) {
            let Some(secs) = num(c.get(1)) else { return };
            let step = num(NEMO_STEP.captures(seg).and_then(|c| c.get(1)))
                .map(|s| s as u64)
                .unwrap_or_else(|| self.last_step.map_or(0, |s| s + 1));
            self.emit(
                out,
                Step {
                    step,
                    step_time_ms: secs * 1000.0,
                    data_wait_ms: None,
                    tokens_per_sec: None,
                    loss: num(NEMO_LOSS.captures(seg).and_then(|c| c.get(1))),
                },
            );
            return;
        }
        if let Some(c) = LIGHTNING.captures(seg) {
            let parse = |i| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            let (Some(epoch), Some(n), Some(total), Some(rate)) =
                (parse(1), parse(2), parse(3), num(c.get(4)))
            else {
                return;
            };
            if n == 0 || rate <= 0.0 {
                return;
            }
            let step_time_ms = if c.get(5).is_some_and(|u| u.as_str() == "it/s") {
                1000.0 / rate
            } else {
                rate * 1000.0
            };
            let rest = c.get(6).map_or("", |m| m.as_str());
            self.emit(
                out,
                Step {
                    step: epoch * total + n,
                    step_time_ms,
                    data_wait_ms: None,
                    tokens_per_sec: None,
                    loss: num(LIGHTNING_LOSS.captures(rest).and_then(|c| c.get(1))),
                },
            );
        }
    }

    /// Progress bars repeat a step while it runs; each step is reported once.
    fn emit(&mut self, out: &mut Vec<Step>, step: Step) {
        if self.last_step.is_some_and(|s| s >= step.step) {
            return;
        }
        self.last_step = Some(step.step);
        out.push(step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn megatron_step_then_its_timers() {
        let mut p = TrainLogParser::new();
        let line = " [2026-11-30 10:02:11] iteration       20/    1000 | consumed samples:        10240 | elapsed time per iteration (ms): 1520.3 | throughput per GPU (TFLOP/s/GPU): 412.5 | learning rate: 1.500000E-05 | global batch size:   512 | lm loss: 8.912345E+00 | loss scale: 1.0 | grad norm: 3.210 |";
        assert!(p.push(line).is_empty());
        assert!(p.push("(min, max) time across ranks (ms):").is_empty());
        assert!(
            p.push("    batch-generator ................................: (0.61, 12.40)")
                .is_empty()
        );
        let s = p.push(&line.replace("iteration       20/", "iteration       30/"));
        assert_eq!(
            s,
            [Step {
                step: 20,
                step_time_ms: 1520.3,
                data_wait_ms: Some(12.40),
                tokens_per_sec: None,
                loss: Some(8.912345),
            }]
        );
        assert_eq!(p.finish().map(|s| s.step), Some(30));
    }

    #[test]
    fn nemo_progress_bar_and_log_line() {
        let mut p = TrainLogParser::new();
        let bar = "Epoch 0: :   5%|▌         | 10/200 [00:14<04:26, reduced_train_loss=7.230, global_step=9.000, consumed_samples=80.00, train_step_timing in s=1.21]\rEpoch 0: :   6%|▌         | 11/200 [00:15<04:26, reduced_train_loss=7.110, global_step=10.00, consumed_samples=88.00, train_step_timing in s=1.19]";
        let s = p.push(bar);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].step, 10);
        assert_eq!(s[1].loss, Some(7.11));
        assert!((s[1].step_time_ms - 1190.0).abs() < 1e-9);
        let s = p.push("Training epoch 0, iteration 11/199 | lr: 1e-05 | global_step: 11 | reduced_train_loss: 7.05 | train_step_timing in s: 1.18 | consumed_samples: 96");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].step, 11);
    }

    #[test]
    fn lightning_bar_rates_and_repeats() {
        let mut p = TrainLogParser::new();
        let s = p.push("Epoch 1:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, v_num=0, train_loss=2.310]\rEpoch 1:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, v_num=0, train_loss=2.310]");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].step, 110);
        assert_eq!(s[0].step_time_ms, 500.0);
        assert_eq!(s[0].loss, Some(2.31));
        let s =
            p.push("Epoch 1:  11%|█         | 11/100 [00:07<00:45,  1.50s/it, v_num=0, loss=2.2]");
        assert_eq!(s[0].step_time_ms, 1500.0);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,200}", 0..20)) {
            let mut p = TrainLogParser::new();
            for l in &lines {
                let _ = p.push(l);
            }
            let _ = p.finish();
        }
    }
}
