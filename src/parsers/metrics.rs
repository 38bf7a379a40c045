//! Items each tool's reader gives, made into the phase metrics a run records.

use super::{gdsio, nvbandwidth, perftest, s3_probe, trainlog, workload};
use crate::model::phase::PhaseMetric;

/// A failure line of `node`'s output, as a metric (its words fitted to 200 characters).
pub(super) fn problem(node: &str, text: &str) -> PhaseMetric {
    PhaseMetric::Problem {
        node: node.to_string(),
        text: crate::model::fit(text.trim(), 200),
    }
}

pub(super) fn step_metric(node: &str, s: trainlog::Step) -> PhaseMetric {
    PhaseMetric::Step {
        node: Some(node.to_string()),
        step: s.step,
        step_time_ms: s.step_time_ms,
        data_wait_ms: s.data_wait_ms,
        tokens_per_sec: s.tokens_per_sec,
        tokens_per_sec_per_gpu: s.tokens_per_sec_per_gpu,
        tflops_per_gpu: s.tflops_per_gpu,
        loss: s.loss,
        world: s.world,
        variant: None,
    }
}

/// A check a parser made on `node`'s output.
pub(super) fn check_metric(
    node: &str,
    name: String,
    status: crate::model::phase::CheckStatus,
    detail: String,
) -> PhaseMetric {
    PhaseMetric::Check {
        node: node.to_string(),
        name,
        status,
        detail,
    }
}

/// One gdsio run as the live pane takes it ([`PhaseMetric::GdsRun`]).
pub fn gds_run(node: &str, gpu: Option<u32>, r: &gdsio::GdsioRow) -> PhaseMetric {
    PhaseMetric::GdsRun {
        node: node.to_string(),
        gpu,
        run: crate::model::phase::GdsRun {
            xfer: r.xfer.clone(),
            io: r.io.clone(),
            io_size_kib: r.io_size_kib,
            threads: r.threads,
            gib_per_s: r.gib_per_s,
            avg_latency_us: r.avg_latency_us,
        },
    }
}

pub(super) fn nvbandwidth_metrics(node: &str, item: nvbandwidth::Item) -> Vec<PhaseMetric> {
    use crate::model::phase::CheckStatus;
    match item {
        nvbandwidth::Item::Matrix {
            test,
            unit,
            cells,
            sum,
        } => {
            let detail = format!(
                "{test}: {} cell(s) measured{}",
                cells.len(),
                sum.map(|s| format!(", SUM {s:.2} {}", unit.label()))
                    .unwrap_or_else(|| ", no SUM line (the log ended inside it)".into())
            );
            let mut out: Vec<PhaseMetric> = cells
                .into_iter()
                .map(|c| match unit {
                    nvbandwidth::Unit::GbPerS => PhaseMetric::PairBw {
                        node: node.to_string(),
                        test: test.clone(),
                        src: c.row,
                        dst: c.col,
                        gb_per_s: c.value,
                    },
                    nvbandwidth::Unit::Ns => PhaseMetric::PairLat {
                        node: node.to_string(),
                        test: test.clone(),
                        src: c.row,
                        dst: c.col,
                        ns: c.value,
                    },
                })
                .collect();
            out.push(PhaseMetric::Check {
                node: node.to_string(),
                name: "nvbandwidth-testcase".into(),
                status: if out.is_empty() {
                    CheckStatus::Failed
                } else {
                    CheckStatus::Ok
                },
                detail,
            });
            out
        }
        nvbandwidth::Item::Waived { text } => vec![PhaseMetric::Check {
            node: node.to_string(),
            name: "nvbandwidth-waived".into(),
            status: CheckStatus::Failed,
            detail: format!(
                "nvbandwidth waived {text}: not measured (peer test cases are waived where \
                 GPUs cannot reach each other peer-to-peer, or there are too few)"
            ),
        }],
        nvbandwidth::Item::Failure { text } => vec![PhaseMetric::Problem {
            node: node.to_string(),
            text,
        }],
    }
}

/// One perftest item into metrics: a bandwidth row, a latency row (typical, else average), a
/// failure.
pub(super) fn perftest_metrics(node: &str, item: perftest::Item, out: &mut Vec<PhaseMetric>) {
    match item {
        perftest::Item::Row(r) => out.push(PhaseMetric::LinkBw {
            node: node.to_string(),
            device: r.device,
            test: r.test.map(|t| t.verb),
            size_bytes: r.size_bytes,
            bw_avg_gbit_per_s: r.bw_avg_gbit_per_s,
            bw_peak_gbit_per_s: r.bw_peak_gbit_per_s,
            msg_rate_mpps: r.msg_rate_mpps,
        }),
        perftest::Item::Lat(r) => {
            if let Some(latency_us) = r.t_typical_us.or(r.t_avg_us) {
                out.push(PhaseMetric::LinkLat {
                    node: node.to_string(),
                    device: r.device,
                    test: r.test.map(|t| t.verb),
                    size_bytes: r.size_bytes,
                    latency_us,
                    p99_us: r.t_p99_us,
                })
            }
        }
        perftest::Item::Failure { text } => out.push(problem(node, &text)),
    }
}

/// One record of our workloads' output into metrics: a GEMM rate, a training step (the
/// pinned, unpinned or cuFile loader's), the GDS reader's check, the first batch, an error.
pub(super) fn workload_metrics(node: &str, record: workload::Record, out: &mut Vec<PhaseMetric>) {
    match record {
        workload::Record::Gemm { gpu, dtype, tflops } => out.push(PhaseMetric::Tflops {
            node: node.to_string(),
            gpu,
            dtype,
            tflops,
        }),
        workload::Record::Step {
            step,
            step_time_ms,
            data_wait_ms,
            tokens_per_sec,
            loss,
            world,
            numa,
            reader,
        } => out.push(PhaseMetric::Step {
            node: Some(node.to_string()),
            step,
            step_time_ms: Some(step_time_ms),
            data_wait_ms: Some(data_wait_ms),
            tokens_per_sec: Some(tokens_per_sec),
            tokens_per_sec_per_gpu: None,
            tflops_per_gpu: None,
            loss: Some(loss),
            world,
            // Pinned (or unsaid) is the main job; unpinned and the loader through
            // cuFile are the comparisons.
            variant: if reader.as_deref() == Some("gds") {
                Some("gds".to_string())
            } else {
                (numa.as_deref() == Some("off")).then(|| "numa_off".to_string())
            },
        }),
        workload::Record::GdsReader {
            reader,
            nvidia_fs,
            why,
            failed,
            compat,
        } => out.push(workload::gds_reader_check(
            node,
            &workload::GdsReaderSaid {
                reader,
                nvidia_fs,
                why,
                failed,
                compat,
            },
        )),
        workload::Record::FirstBatch { ms } => out.push(PhaseMetric::FirstBatch { ms }),
        workload::Record::Error { text } => out.push(problem(node, &text)),
        workload::Record::Diverged { step, loss } => out.push(problem(
            node,
            &format!(
                "training diverged: loss {} at step {} (the workload's own step line)",
                crate::model::excerpt(&loss),
                step.map_or_else(|| "?".to_string(), |s| s.to_string())
            ),
        )),
        workload::Record::Other => {}
    }
}

/// One record of `burnin probe s3` into metrics: a window, the report's TTFB curves and
/// figures (and its failure), an error.
pub(super) fn s3_metrics(node: &str, record: s3_probe::Record, out: &mut Vec<PhaseMetric>) {
    match record {
        s3_probe::Record::S3Window(window) => out.push(PhaseMetric::Storage {
            node: node.to_string(),
            window,
        }),
        s3_probe::Record::S3Report { report } => {
            for level in &report.levels {
                if let Some(cdf) = level.ttfb.map(|t| t.cdf()).filter(|c| !c.is_empty()) {
                    out.push(PhaseMetric::LatencyCdf {
                        node: node.to_string(),
                        what: "GET TTFB".into(),
                        concurrency: Some(level.concurrency),
                        points: cdf,
                    });
                }
            }
            for (name, value) in report.figures() {
                out.push(PhaseMetric::Figure {
                    node: node.to_string(),
                    gpu: None,
                    name,
                    value,
                });
            }
            if let Some(f) = &report.failure {
                out.push(problem(node, &format!("probe s3: {f}")));
            }
        }
        s3_probe::Record::Error { text } => out.push(problem(node, &text)),
        s3_probe::Record::Other => {}
    }
}
