//! Step figures from the logs of common trainers, for sites that run their own job (T6):
//!
//! - **Megatron-LM / Megatron-Core / Megatron-Bridge / Megatron-DeepSpeed**: `iteration N/ M |
//!   … | elapsed time per iteration (ms): X | … | lm loss: Y | … | number of nan iterations: K`,
//!   Megatron-DeepSpeed's `tokens per gpu per second (tgs): T`, and the data loader's time from
//!   the timers (`batch-generator: X` in one line, or `batch-generator ….: (min, max)` on its
//!   own). `using world size: N` gives the job's GPUs.
//! - **NeMo 1** (a Lightning progress bar with `reduced_train_loss=`, `global_step=`,
//!   `train_step_timing in s=`) and **NeMo 2 / NeMo-Run** (`Training epoch 0, iteration i/n |
//!   … | global_step: g | reduced_train_loss: l | train_step_timing in s: t |
//!   tokens_per_sec_per_gpu: x`).
//! - **PyTorch Lightning** progress bars (`Epoch e: …| n/total [elapsed<left, r it/s, k=v, …]`),
//!   the loss from `train_loss_step=`, `train_loss=`, `loss=` or `train_loss_epoch=`, in that
//!   order.
//! - **Hugging Face Trainer**: `{'loss': l, …, 'epoch': e}` dicts, numbered by the tqdm bar's
//!   position when one came before (its `s/it` gives the step time), else counted.
//! - **torchtitan**: `step: N  loss: L  … tps: 5,856 …` (`tps` is per GPU; a negative loss is
//!   the placeholder non-last pipeline stages print, not a loss).
//! - TFLOP/s per GPU where the trainer computes it (NeMo `TFLOPS_per_GPU`, Megatron
//!   `throughput per GPU (TFLOP/s/GPU)`, Megatron-DeepSpeed `TFLOPs`, torchtitan `tflops`), and
//!   Hugging Face Trainer's end-of-run summary (its final dict or `log_metrics`' block:
//!   `train_runtime`, `train_samples_per_second`, `train_steps_per_second`, `train_loss`).
//!
//! Progress bars rewrite their line with carriage returns (SageMaker's log escapes them as
//! `#015`); every segment is read, and a step repeated (a bar redrawn, every rank printing the
//! same line) is reported once. A loss printed as `nan`/`inf` is kept as such: it is the
//! broken run the gates must see.

use std::sync::LazyLock;

use regex::Regex;

/// One step as a trainer log shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Step (iteration) number.
    pub step: u64,
    /// Wall time per step, ms, where the log says (from its own timing, or a bar's rate).
    pub step_time_ms: Option<f64>,
    /// Data wait, ms, where the log prints it.
    pub data_wait_ms: Option<f64>,
    /// Tokens/s over all GPUs, where the log prints it so (or per GPU × the job's GPUs).
    pub tokens_per_sec: Option<f64>,
    /// Loss, where the log prints it (NaN and infinities kept).
    pub loss: Option<f64>,
    /// Tokens/s of one GPU, where the log prints it per GPU.
    pub tokens_per_sec_per_gpu: Option<f64>,
    /// GPUs of the job, where the log says.
    pub world: Option<u32>,
    /// TFLOP/s of one GPU as the trainer computed it (NeMo's `TFLOPS_per_GPU`, Megatron's
    /// `throughput per GPU (TFLOP/s/GPU)`, Megatron-DeepSpeed's `TFLOPs`, torchtitan's
    /// `tflops`: each is per GPU in its own source).
    pub tflops_per_gpu: Option<f64>,
}

/// Which trainer's format a line was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// Megatron-LM and its descendants.
    Megatron,
    /// NeMo 1 bars and NeMo 2 log lines.
    Nemo,
    /// PyTorch Lightning progress bars.
    Lightning,
    /// Hugging Face Trainer dicts.
    HfTrainer,
    /// torchtitan.
    Torchtitan,
}

impl Framework {
    /// Its name in messages and `burnin parse`.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Megatron => "megatron",
            Framework::Nemo => "nemo",
            Framework::Lightning => "lightning",
            Framework::HfTrainer => "hf-trainer",
            Framework::Torchtitan => "torchtitan",
        }
    }
}

/// A decimal with optional exponent (`1.073e+04`, `9e+3`, `794.0`).
const NUM: &str = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?";
/// A loss: a number, or `nan`/`inf` as Python and NeMo print them (`nan`, `nan.0`, `-inf`).
const LOSS: &str =
    r"[-+]?(?:[nN][aA][nN]|[iI][nN][fF])(?:\.0+)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?";

#[allow(
    clippy::expect_used,
    reason = "the patterns are constants of this file, tested"
)]
fn re(pattern: &str) -> Regex {
    Regex::new(&pattern.replace("NUM", NUM).replace("LOSS", LOSS)).expect("static regex")
}

static MEGATRON: LazyLock<Regex> = LazyLock::new(|| re(r"\biteration\s+(\d+)/\s*\d+\s*\|"));
static MEGATRON_ELAPSED: LazyLock<Regex> =
    LazyLock::new(|| re(r"elapsed time per iteration \(ms\):\s*(NUM)"));
static MEGATRON_LOSS: LazyLock<Regex> = LazyLock::new(|| re(r"\blm loss:\s*(LOSS)"));
static MEGATRON_NAN: LazyLock<Regex> = LazyLock::new(|| re(r"number of nan iterations:\s*(\d+)"));
static MEGATRON_TGS: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:tokens per gpu per second \(tgs\)|tokens per second per GPU):\s*(NUM)")
});
static MEGATRON_WORLD: LazyLock<Regex> = LazyLock::new(|| re(r"using world size:\s*(\d+)"));
static BATCH_TIMER_INLINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"\|\s*batch[- ]generator:\s*(NUM)"));
static BATCH_TIMER_RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"batch-generator\s*\.*:\s*\(\s*NUM,\s*(NUM)\)"));
static NEMO_TIMING: LazyLock<Regex> =
    LazyLock::new(|| re(r"train_step_timing in s\s*[=:]\s*(NUM)"));
static NEMO_STEP: LazyLock<Regex> = LazyLock::new(|| re(r"\bglobal_step\s*[=:]\s*(NUM)"));
static NEMO_LOSS: LazyLock<Regex> = LazyLock::new(|| re(r"\breduced_train_loss\s*[=:]\s*(LOSS)"));
static NEMO_TOKENS_PER_GPU: LazyLock<Regex> =
    LazyLock::new(|| re(r"\btokens_per_sec_per_gpu\s*[=:]\s*(NUM)"));
static NEMO2_ITERATION: LazyLock<Regex> =
    LazyLock::new(|| re(r"Training epoch \d+, iteration (\d+)/\d+"));
static BAR: LazyLock<Regex> =
    LazyLock::new(|| re(r"Epoch (\d+):.*?[|%]\s*(\d+)/(\d+) \[([^\]]*)\]?"));
static BAR_RATE: LazyLock<Regex> = LazyLock::new(|| re(r"(?:^|,)\s*(NUM)\s*(it/s|s/it)\b"));
static TQDM: LazyLock<Regex> =
    LazyLock::new(|| re(r"\|\s*(\d+)/\d+ \[[^\],]*,\s*(NUM)\s*(it/s|s/it)"));
static LIGHTNING_LOSSES: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    [
        re(r"\btrain_loss_step=(LOSS)"),
        re(r"\btrain_loss=(LOSS)"),
        re(r"(?:^|[\s,])loss=(LOSS)"),
        re(r"\btrain_loss_epoch=(LOSS)"),
    ]
});
static HF_LOSS: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*\{'loss':\s*(LOSS)\s*,"));
static TITAN: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|[^a-z_])step:\s*(\d+)\s+loss:\s*(LOSS)"));
static TITAN_TPS: LazyLock<Regex> = LazyLock::new(|| re(r"\btps:\s*([\d,]+(?:\.\d+)?)"));

static MEGATRON_TFLOPS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:throughput per GPU \(TFLOP/s/GPU\)|\|\s*TFLOPs):\s*(NUM)"));
static NEMO_TFLOPS: LazyLock<Regex> = LazyLock::new(|| re(r"\bTFLOPS_per_GPU\s*[=:]\s*(NUM)"));
static TITAN_TFLOPS: LazyLock<Regex> = LazyLock::new(|| re(r"\btflops:\s*(NUM)"));
/// Hugging Face Trainer's end-of-run figures: its final log dict (`{'train_runtime': 1234.5,
/// 'train_samples_per_second': …}`, values possibly quoted; only a dict that holds
/// `train_runtime` is the summary, a custom per-step dict with a `train_loss` is not) …
static HF_DICT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"['"](train_runtime|train_samples_per_second|train_steps_per_second|train_loss)['"]\s*:\s*['"]?(NUM)(?:$|[\s,'"}])"#,
    )
});
/// A pretty-printed results file's line: one pair alone (`  "train_loss": 1.23,`).
static HF_JSON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s*"(?:train_runtime|train_samples_per_second|train_steps_per_second|train_loss)"\s*:\s*NUM\s*,?\s*$"#,
    )
});
/// … and `log_metrics`' block, one figure a line (`  train_runtime = 1 day, 2:03:04.56`).
static HF_BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(train_runtime|train_samples_per_second|train_steps_per_second|train_loss)\s*=\s*((?:\d+ days?, )?(?:\d+:)?(?:\d+:)?NUM)\s*$",
    )
});

static MEGATRON_GRAD_NAN: LazyLock<Regex> = LazyLock::new(|| re(r"\bgrad norm:\s*[nN][aA][nN]\b"));
static MEGATRON_SKIPPED: LazyLock<Regex> =
    LazyLock::new(|| re(r"number of skipped iterations:\s*(\d+)"));

/// A Megatron iteration whose gradient norm is NaN while no iteration was skipped: with fp16
/// loss scaling an overflow is skipped (and counted), so a NaN norm that was not skipped
/// means the gradients themselves are NaN (bf16 or fp32 training diverged).
pub fn problem_of(line: &str) -> Option<String> {
    let skipped = cap(&MEGATRON_SKIPPED, line)?.as_str().parse::<u64>().ok()?;
    (MEGATRON_GRAD_NAN.is_match(line) && skipped == 0).then(|| {
        let it = cap(&MEGATRON, line).map_or("?", |m| m.as_str());
        format!("grad norm NaN at iteration {it} with no iteration skipped: the gradients are NaN")
    })
}

/// A finite number from a capture (rates, times, steps).
fn num(m: Option<regex::Match<'_>>) -> Option<f64> {
    m.and_then(|m| m.as_str().parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

/// A rate from a capture that only a working GPU gives: a negative or zero TFLOP/s is no
/// reading of one.
fn positive(m: Option<regex::Match<'_>>) -> Option<f64> {
    num(m).filter(|v| *v > 0.0)
}

/// A loss from a capture: `nan`/`inf` kept.
fn loss(m: Option<regex::Match<'_>>) -> Option<f64> {
    let s = m?.as_str().to_ascii_lowercase();
    let neg = s.starts_with('-');
    let word = s.trim_start_matches(['-', '+']);
    if word.starts_with("nan") {
        Some(f64::NAN)
    } else if word.starts_with("inf") {
        Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    } else {
        s.parse().ok()
    }
}

fn cap<'a>(re: &Regex, seg: &'a str) -> Option<regex::Match<'a>> {
    re.captures(seg).and_then(|c| c.get(1))
}

/// A whole step number from a decimal that may be printed `9e+3` or `794.0`.
fn step_number(m: Option<regex::Match<'_>>) -> Option<u64> {
    num(m)
        .filter(|v| *v >= 0.0 && *v < 1e15)
        .map(|v| v.round() as u64)
}

/// A bar's rate in ms per step.
fn rate_ms(value: f64, unit: &str) -> Option<f64> {
    if value <= 0.0 {
        return None;
    }
    Some(if unit == "it/s" {
        1000.0 / value
    } else {
        value * 1000.0
    })
}

/// Streaming parser over a trainer's log.
#[derive(Debug, Default)]
pub struct TrainLogParser {
    /// A Megatron step waits for the timer lines printed after it.
    pending: Option<Step>,
    /// A progress bar's step waits for the bar to move on: the bar redraws a batch as its loss
    /// updates, and the last drawing of it is the one to keep.
    bar_pending: Option<Step>,
    last_step: Option<u64>,
    /// The job's GPUs, once the log said.
    world: Option<u32>,
    /// The last tqdm bar (position, ms per step), for Hugging Face's dicts.
    bar: Option<(u64, Option<f64>)>,
    /// Hugging Face dicts seen (their step when no bar numbers them).
    hf_count: u64,
    framework: Option<Framework>,
    /// Hugging Face Trainer's end-of-run figures, the last printed of each.
    summary: Vec<(&'static str, f64)>,
}

/// The figure names of Hugging Face Trainer's end-of-run summary, as `burnin` names them.
const HF_SUMMARY_FIGURES: [(&str, &str); 4] = [
    ("train_runtime", "train_runtime_s"),
    ("train_samples_per_second", "train_samples_per_second"),
    ("train_steps_per_second", "train_steps_per_second"),
    ("train_loss", "train_loss"),
];

/// A summary value: a number, or `log_metrics`' runtime `[N day(s), ]H:MM:SS.ss` in seconds.
fn summary_value(text: &str) -> Option<f64> {
    let (days, text) = match text.split_once(", ") {
        Some((d, rest)) => (
            d.split_whitespace().next()?.parse::<f64>().ok()? * 86_400.0,
            rest,
        ),
        None => (0.0, text),
    };
    let mut seconds = days;
    let mut parts = text.rsplit(':');
    let last: f64 = parts.next()?.parse().ok()?;
    for (i, p) in parts.enumerate() {
        let unit = if i == 0 { 60.0 } else { 3600.0 };
        seconds += p.parse::<f64>().ok()? * unit;
    }
    Some(seconds + last).filter(|v| v.is_finite())
}

impl TrainLogParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The trainer the log was read as, once a step was seen.
    pub fn framework(&self) -> Option<Framework> {
        self.framework
    }

    /// Read one line; returns the steps it completed.
    pub fn push(&mut self, line: &str) -> Vec<Step> {
        let mut out = Vec::new();
        for seg in line.split('\r').flat_map(|s| s.split("#015")) {
            self.segment(seg, &mut out);
        }
        out
    }

    /// The end-of-run figures the log printed (Hugging Face Trainer's `train_runtime`,
    /// `train_samples_per_second`, `train_steps_per_second`, `train_loss`): name and value.
    pub fn summary(&self) -> &[(&'static str, f64)] {
        &self.summary
    }

    fn read_summary(&mut self, seg: &str) -> bool {
        let mut found = false;
        // The final dict holds train_runtime; a pretty-printed `all_results.json` gives one
        // `"key": value,` pair a line.
        let dict = seg.contains("'train_runtime'")
            || seg.contains("\"train_runtime\"")
            || HF_JSON_PAIR.is_match(seg);
        let captures: Vec<regex::Captures<'_>> = if dict {
            HF_DICT.captures_iter(seg).collect()
        } else {
            HF_BLOCK.captures(seg).into_iter().collect()
        };
        for c in captures {
            let (Some(key), Some(value)) = (c.get(1), c.get(2)) else {
                continue;
            };
            let Some((_, name)) = HF_SUMMARY_FIGURES.iter().find(|(k, _)| *k == key.as_str())
            else {
                continue;
            };
            // Only the runtime is printed as a clock; a colon elsewhere is no number.
            let value = match value.as_str() {
                v if (v.contains(':') || v.contains(',')) && *name != "train_runtime_s" => None,
                v => summary_value(v),
            };
            // A run takes time and moves forward: a negative runtime or rate is no reading
            // (a loss may be negative for some objectives, and is kept).
            let Some(value) = value.filter(|v| *name == "train_loss" || *v >= 0.0) else {
                continue;
            };
            found = true;
            self.framework.get_or_insert(Framework::HfTrainer);
            match self.summary.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => self.summary.push((name, value)),
            }
        }
        found
    }

    /// The end of the log: a step still waiting for its timers, or for its bar to move on.
    pub fn finish(&mut self) -> Vec<Step> {
        let held = [self.pending.take(), self.bar_pending.take()];
        held.into_iter()
            .flatten()
            .filter_map(|s| self.admit(s))
            .collect()
    }

    /// A bar's step: held while the bar redraws the same batch (its loss updating), sent when
    /// the bar moves to another.
    fn bar(&mut self, out: &mut Vec<Step>, step: Step) {
        match self.bar_pending.take() {
            Some(p) if p.step == step.step => {}
            Some(p) => out.extend(self.admit(p)),
            None => {}
        }
        self.bar_pending = Some(step);
    }

    fn segment(&mut self, seg: &str, out: &mut Vec<Step>) {
        if let Some(w) = cap(&MEGATRON_WORLD, seg).and_then(|m| m.as_str().parse().ok()) {
            self.world = Some(w);
        }
        // NeMo 2 prints `iteration i/n |` too; Megatron's line always has its elapsed time.
        if let Some(step) = cap(&MEGATRON, seg)
            .filter(|_| seg.contains("elapsed time per iteration"))
            .and_then(|m| m.as_str().parse::<u64>().ok())
        {
            self.framework = Some(Framework::Megatron);
            if let Some(prev) = self.pending.take() {
                out.extend(self.admit(prev));
            }
            let nan_iterations = cap(&MEGATRON_NAN, seg)
                .and_then(|m| m.as_str().parse::<u64>().ok())
                .unwrap_or(0);
            let loss = loss(cap(&MEGATRON_LOSS, seg)).or((nan_iterations > 0).then_some(f64::NAN));
            self.pending = Some(Step {
                step,
                step_time_ms: num(cap(&MEGATRON_ELAPSED, seg)),
                data_wait_ms: num(cap(&BATCH_TIMER_INLINE, seg)),
                tokens_per_sec_per_gpu: num(cap(&MEGATRON_TGS, seg)),
                tflops_per_gpu: positive(cap(&MEGATRON_TFLOPS, seg)),
                loss,
                ..Step::default()
            });
            return;
        }
        if let Some(wait) = num(cap(&BATCH_TIMER_INLINE, seg)).or(num(cap(&BATCH_TIMER_RANGE, seg)))
        {
            if let Some(p) = &mut self.pending {
                p.data_wait_ms = Some(wait);
            }
            return;
        }
        if let Some(c) = TITAN.captures(seg) {
            let before = &seg[..c.get(0).map_or(0, |m| m.start())];
            // torchtitan's validation and summary lines are not training steps.
            if before.ends_with("validate ") || before.ends_with("final ") {
                return;
            }
            let Some(step) = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok()) else {
                return;
            };
            // Pipeline stages other than the last print a negative placeholder loss: their line
            // is not the step's; the last stage's, with the loss, is.
            let loss = loss(c.get(2));
            if loss.is_some_and(|l| l < 0.0) {
                return;
            }
            self.framework = Some(Framework::Torchtitan);
            let tps = cap(&TITAN_TPS, seg).and_then(|m| m.as_str().replace(',', "").parse().ok());
            self.emit(
                out,
                Step {
                    step,
                    loss,
                    tokens_per_sec_per_gpu: tps.filter(|t: &f64| t.is_finite()),
                    tflops_per_gpu: positive(cap(&TITAN_TFLOPS, seg)),
                    ..Step::default()
                },
            );
            return;
        }
        let nemo_time = num(cap(&NEMO_TIMING, seg));
        let nemo_loss = loss(cap(&NEMO_LOSS, seg));
        let nemo_tokens = num(cap(&NEMO_TOKENS_PER_GPU, seg));
        let bar = BAR.captures(seg);
        if nemo_time.is_some() || nemo_loss.is_some() || nemo_tokens.is_some() {
            // A bar's position is exact; its `global_step=3.2e+4` is rounded for display.
            let step = bar
                .as_ref()
                .and_then(|b| bar_step(b))
                .or_else(|| step_number(cap(&NEMO_STEP, seg)))
                .or_else(|| step_number(cap(&NEMO2_ITERATION, seg)));
            let Some(step) = step else { return };
            self.framework = Some(Framework::Nemo);
            let bar_time = bar.as_ref().and_then(|b| bar_rate(b));
            let step = Step {
                step,
                step_time_ms: nemo_time.map(|s| s * 1000.0).or(bar_time),
                loss: nemo_loss,
                tokens_per_sec_per_gpu: nemo_tokens,
                tflops_per_gpu: positive(cap(&NEMO_TFLOPS, seg)),
                ..Step::default()
            };
            if bar.is_some() {
                self.bar(out, step);
            } else {
                self.emit(out, step);
            }
            return;
        }
        if let Some(b) = &bar {
            let Some(step) = bar_step(b) else { return };
            let inside = b.get(4).map_or("", |m| m.as_str());
            let loss = LIGHTNING_LOSSES.iter().find_map(|r| loss(cap(r, inside)));
            let step_time_ms = bar_rate(b);
            if step_time_ms.is_none() && loss.is_none() {
                return;
            }
            self.framework = Some(Framework::Lightning);
            self.bar(
                out,
                Step {
                    step,
                    step_time_ms,
                    loss,
                    ..Step::default()
                },
            );
            return;
        }
        if let Some(c) = TQDM.captures(seg) {
            let n = c.get(1).and_then(|m| m.as_str().parse::<u64>().ok());
            let ms = num(c.get(2)).and_then(|v| rate_ms(v, c.get(3).map_or("", |m| m.as_str())));
            if let Some(n) = n {
                self.bar = Some((n, ms));
            }
        }
        if self.read_summary(seg) {
            return;
        }
        if let Some(l) = HF_LOSS.captures(seg) {
            self.framework = Some(Framework::HfTrainer);
            self.hf_count += 1;
            let (step, step_time_ms) = match self.bar {
                Some((n, ms)) if self.last_step.is_none_or(|last| n > last) => (n, ms),
                _ => (self.last_step.map_or(self.hf_count, |l| l + 1), None),
            };
            self.emit(
                out,
                Step {
                    step,
                    step_time_ms,
                    loss: loss(l.get(1)),
                    ..Step::default()
                },
            );
        }
    }

    /// A step goes out once: a bar redrawn, or every rank printing the same line, repeats it
    /// (a rank lagging a step or two behind too); a step far behind the last is a new job.
    fn admit(&mut self, mut step: Step) -> Option<Step> {
        if let Some(last) = self.last_step
            && step.step <= last
            && last - step.step <= 2
        {
            return None;
        }
        self.last_step = Some(step.step);
        step.world = step.world.or(self.world);
        if step.tokens_per_sec.is_none()
            && let (Some(per_gpu), Some(w)) = (step.tokens_per_sec_per_gpu, step.world)
        {
            step.tokens_per_sec = Some(per_gpu * f64::from(w));
        }
        Some(step)
    }

    fn emit(&mut self, out: &mut Vec<Step>, step: Step) {
        if let Some(p) = self.bar_pending.take() {
            out.extend(self.admit(p));
        }
        out.extend(self.admit(step));
    }
}

/// A Lightning bar's global step: epoch × batches per epoch + position.
fn bar_step(c: &regex::Captures<'_>) -> Option<u64> {
    let parse = |i| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    let (epoch, n, total) = (parse(1)?, parse(2)?, parse(3)?);
    epoch.checked_mul(total)?.checked_add(n)
}

/// A Lightning bar's rate as ms per step.
fn bar_rate(c: &regex::Captures<'_>) -> Option<f64> {
    let inside = c.get(4)?.as_str();
    let r = BAR_RATE.captures(inside)?;
    rate_ms(num(r.get(1))?, r.get(2)?.as_str())
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
                step_time_ms: Some(1520.3),
                data_wait_ms: Some(12.40),
                loss: Some(8.912345),
                tflops_per_gpu: Some(412.5),
                ..Default::default()
            }]
        );
        assert_eq!(p.finish().first().map(|s| s.step), Some(30));
    }

    #[test]
    fn nemo_progress_bar_and_log_line() {
        let mut p = TrainLogParser::new();
        let bar = "Epoch 0: :   5%|▌         | 10/200 [00:14<04:26, reduced_train_loss=7.230, global_step=9.000, consumed_samples=80.00, train_step_timing in s=1.21]\rEpoch 0: :   6%|▌         | 11/200 [00:15<04:26, reduced_train_loss=7.110, global_step=10.00, consumed_samples=88.00, train_step_timing in s=1.19]";
        // The bar's position numbers the steps (its global_step is rounded for display); the
        // batch the bar still draws waits for the bar to move on.
        let s = p.push(bar);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].step, 10);
        assert_eq!(s[0].loss, Some(7.23));
        assert_eq!(s[0].step_time_ms, Some(1210.0));
        let s = p.push("Training epoch 0, iteration 12/199 | lr: 1e-05 | global_step: 12 | reduced_train_loss: 7.05 | train_step_timing in s: 1.18 | consumed_samples: 96");
        let steps: Vec<(u64, Option<f64>)> = s.iter().map(|s| (s.step, s.loss)).collect();
        assert_eq!(steps, [(11, Some(7.11)), (12, Some(7.05))]);
    }

    #[test]
    fn lightning_bar_rates_and_repeats() {
        let mut p = TrainLogParser::new();
        // A batch drawn twice, its loss updated the second time: the last drawing counts.
        let s = p.push("Epoch 1:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, v_num=0, train_loss=2.410]\rEpoch 1:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, v_num=0, train_loss=2.310]");
        assert!(s.is_empty());
        let s =
            p.push("Epoch 1:  11%|█         | 11/100 [00:07<00:45,  1.50s/it, v_num=0, loss=2.2]");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].step, 110);
        assert_eq!(s[0].step_time_ms, Some(500.0));
        assert_eq!(s[0].loss, Some(2.31));
        let last = p.finish().pop().expect("the last batch at the end");
        assert_eq!(last.step_time_ms, Some(1500.0));
    }

    #[test]
    fn losses_printed_as_nan_stay_nan() {
        let mut p = TrainLogParser::new();
        let s = p.push("Epoch 0: :   3%|▎         | 9000/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss=nan.0, global_step=9e+3, consumed_samples=6.3e+5, train_step_timing in s=0.615, val_loss=7.040]");
        assert!(s.is_empty(), "held until the bar moves on");
        let s = p.finish().pop().expect("a step");
        assert_eq!(s.step, 9000);
        assert!(s.loss.is_some_and(f64::is_nan));
        // Without a bar, global_step=9e+3 is 9000, not 9.
        let mut p = TrainLogParser::new();
        let s = p.push("global_step=9e+3, reduced_train_loss=2.5, train_step_timing in s=0.615");
        assert_eq!(s.first().map(|s| s.step), Some(9000));
    }

    /// Hugging Face Trainer's two end-of-run shapes, as a real run printed them
    /// (tests/corpus/trainlog/hf-trainer-chatglm6b-…): the dict, then `log_metrics`' block,
    /// whose runtime is a clock; the last printed wins. A clock anywhere else is no number.
    #[test]
    fn hugging_face_summary_dict_and_block() {
        let mut p = TrainLogParser::new();
        assert!(p.push("{'train_runtime': 80.3532, 'train_samples_per_second': 4.978, 'train_steps_per_second': 1.245, 'train_loss': 0.3520446900092065, 'epoch': 100.0}").is_empty());
        assert_eq!(
            p.summary(),
            [
                ("train_runtime_s", 80.3532),
                ("train_samples_per_second", 4.978),
                ("train_steps_per_second", 1.245),
                ("train_loss", 0.3520446900092065)
            ]
        );
        // A run of a day or more: log_metrics prints the days first.
        p.push("  train_runtime            = 1 day, 2:03:04.56");
        assert_eq!(p.summary()[0], ("train_runtime_s", 93_784.56));
        // No run takes negative time.
        p.push("  train_steps_per_second   =     -1.245");
        assert_eq!(p.summary()[2], ("train_steps_per_second", 1.245));
        // A pretty-printed all_results.json: one pair a line.
        p.push("    \"train_samples_per_second\": 5.5,");
        assert_eq!(p.summary()[1], ("train_samples_per_second", 5.5));
        // A custom per-step dict with its own `train_loss` is no summary.
        p.push("{'train_loss': 9.9, 'step': 3}");
        assert_eq!(p.summary()[3], ("train_loss", 0.3520446900092065));
        p.push("  train_runtime            = 1:01:20.35");
        p.push("  train_loss               = 0:0:1");
        assert_eq!(p.summary()[0], ("train_runtime_s", 3680.35));
        assert_eq!(p.summary()[3], ("train_loss", 0.3520446900092065));
        assert_eq!(p.framework(), Some(Framework::HfTrainer));
        // A Lightning bar's `train_loss=` is a step's loss, not the summary.
        let mut p = TrainLogParser::new();
        p.push("Epoch 1:  10%|█         | 10/100 [00:05<00:45,  2.00it/s, train_loss=2.410]");
        assert!(p.summary().is_empty());
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
