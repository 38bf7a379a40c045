//! The figures gates judge: their names, which way each is better, and their units. Shared by
//! the parsers that make figures, the gates that judge them and the reports that print them.

/// Which way a figure is better: throughput higher, latency, waits and errors lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// More is better (GB/s, TFLOP/s, tokens/s).
    Higher,
    /// Less is better (a latency, a wait, a count of errors, seconds to save).
    Lower,
}

/// Figure names gates may use, which way each is better, and its unit (`busbw_` takes a
/// collective after it; `…_c` the number of GETs in flight).
pub const FIGURES: &[(&str, Better, &str)] = &[
    ("tflops_bf16", Better::Higher, "TFLOP/s"),
    ("tflops_fp8", Better::Higher, "TFLOP/s"),
    ("busbw_", Better::Higher, "GB/s"),
    ("avg_busbw_", Better::Higher, "GB/s"),
    ("pair_gb_per_s", Better::Higher, "GB/s"),
    ("pair_latency_ns", Better::Lower, "ns"),
    ("link_gbit_per_s", Better::Higher, "Gbit/s"),
    ("link_latency_us", Better::Lower, "µs"),
    ("step_time_ms", Better::Lower, "ms"),
    ("tflops_per_gpu", Better::Higher, "TFLOP/s"),
    ("train_runtime_s", Better::Lower, "s"),
    ("train_samples_per_second", Better::Higher, "samples/s"),
    ("train_steps_per_second", Better::Higher, "steps/s"),
    ("train_loss", Better::Lower, "loss"),
    ("tokens_per_sec", Better::Higher, "tokens/s"),
    ("tokens_per_sec_per_gpu", Better::Higher, "tokens/s"),
    ("data_wait_pct", Better::Lower, "%"),
    ("first_batch_ms", Better::Lower, "ms"),
    ("scaling_pct", Better::Higher, "%"),
    ("s3_gb_per_s", Better::Higher, "GB/s"),
    ("s3_errors", Better::Lower, "errors"),
    ("s3_gb_per_s_c", Better::Higher, "GB/s"),
    ("s3_get_per_s_c", Better::Higher, "GET/s"),
    ("s3_ttfb_p50_ms_c", Better::Lower, "ms"),
    ("s3_ttfb_p99_ms_c", Better::Lower, "ms"),
    ("s3_total_p99_ms_c", Better::Lower, "ms"),
    ("loader_data_wait_pct", Better::Lower, "%"),
    ("loader_steps_waited_pct", Better::Lower, "%"),
    ("loader_first_batch_ms", Better::Lower, "ms"),
    ("loader_wait_p99_ms", Better::Lower, "ms"),
    ("checkpoint_save_gb_per_s", Better::Higher, "GB/s"),
    ("checkpoint_restore_gb_per_s", Better::Higher, "GB/s"),
    ("checkpoint_save_s", Better::Lower, "s"),
    ("checkpoint_restore_s", Better::Lower, "s"),
    // gdsio: + transfer type and IO type, e.g. `gdsio_gib_per_s_gpud_read`.
    ("gdsio_gib_per_s_", Better::Higher, "GiB/s"),
    ("gdsio_avg_latency_us_", Better::Lower, "µs"),
    // + IO type: GPU-direct's GiB/s as a share of CPU→GPU's at the same size and threads.
    ("gdsio_direct_pct_of_cpu_gpu_", Better::Higher, "%"),
];

/// The unit of a figure as reports print it (`GB/s`, `ms`, …); a suffixed variant
/// (`busbw_all_reduce_2gpu`, `data_wait_pct_numa_off`) has its family's.
pub fn unit_of(figure: &str) -> &'static str {
    let base = strip_variant(figure);
    FIGURES
        .iter()
        .filter(|(f, _, _)| names_figure(f, base))
        .max_by_key(|(f, _, _)| f.len())
        .map_or("", |(_, _, unit)| unit)
}

/// A figure without the suffix a variant of it carries (`_numa_off`, `_gds`, `_2gpu`).
fn strip_variant(figure: &str) -> &str {
    if let Some(base) = figure
        .strip_suffix("_numa_off")
        .or_else(|| figure.strip_suffix("_gds"))
    {
        return base;
    }
    if let Some(rest) = figure.strip_suffix("gpu")
        && let Some((base, n)) = rest.rsplit_once('_')
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return base;
    }
    figure
}

/// Every figure name, for messages.
/// Every figure name a gate may use, for an error that lists them.
pub fn figure_names() -> String {
    FIGURES
        .iter()
        .map(|(f, _, _)| *f)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a smaller value of `figure` is the better one (times, waits, latencies, errors);
/// every other figure is a rate where more is better.
pub fn lower_is_better(figure: &str) -> bool {
    let base = strip_variant(figure);
    FIGURES
        .iter()
        .filter(|(f, _, _)| names_figure(f, base))
        .max_by_key(|(f, _, _)| f.len())
        .is_some_and(|(_, better, _)| *better == Better::Lower)
        || figure.starts_with("data_wait_pct_")
        || figure.starts_with("step_time_ms_")
}

/// Whether a gate may name this figure: one of [`FIGURES`], or a family of them (`busbw_` +
/// collective, `…_c` + the number of GETs in flight).
pub fn known_figure(figure: &str) -> bool {
    FIGURES.iter().any(|(f, _, _)| names_figure(f, figure))
}

/// Whether `pattern` (an entry of [`FIGURES`]) names `figure`: itself, or one of its family
/// (`busbw_` + collective, `…_c` + the number of GETs in flight).
fn names_figure(pattern: &str, figure: &str) -> bool {
    if let Some(family) = pattern.strip_suffix("_c") {
        figure
            .strip_prefix(family)
            .and_then(|rest| rest.strip_prefix("_c"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    } else if pattern.ends_with('_') {
        figure.starts_with(pattern) && figure.len() > pattern.len()
    } else {
        figure == pattern
    }
}

/// A figure with as many decimals as its size deserves (reasons and findings quote them).
pub fn fmt_value(v: f64) -> String {
    // Past a billion no one reads the digits (a damaged 1e308 would print 309 of them).
    if v.abs() >= 1e9 {
        format!("{v:.3e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
