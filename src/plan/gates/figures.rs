//! The figures a phase's metrics add up to: per GPU, node, pair and link, peaks for
//! bandwidths, medians after warm-up for training, and each subject's share of its peers.

use super::*;

/// Which of a subject's values a figure keeps when it sees several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// The highest (a bandwidth's peak over sizes).
    Max,
    /// The lowest (a latency over sizes).
    Min,
    /// The last one seen.
    Last,
}

pub(super) fn put(
    f: &mut Figures,
    figure: String,
    subject: String,
    group: &str,
    value: f64,
    keep: Keep,
) {
    if !value.is_finite() {
        return;
    }
    let samples = f.entry(figure).or_default();
    match samples.iter_mut().find(|s| s.subject == subject) {
        Some(s) => {
            s.value = match keep {
                Keep::Max => s.value.max(value),
                Keep::Min => s.value.min(value),
                Keep::Last => value,
            }
        }
        None => samples.push(Sample {
            subject,
            group: group.to_string(),
            value,
        }),
    }
}

/// nvbandwidth test cases whose cells are GPU pairs (not per-GPU totals of all-to-one,
/// one-to-all or broadcast, not host copies): single-node, multinode (GB200/GB300 NVL72
/// domains, processes numbered across the domain) and the multinode bisect pairs.
fn pair_test(test: &str) -> bool {
    let peer = test.starts_with("device_to_device")
        || test.starts_with("multinode_device_to_device")
        || test.starts_with("multinode_bisect");
    peer && !["all_to_one", "all_from_one", "broadcast"]
        .iter()
        .any(|w| test.contains(w))
}

/// The subject of a pair figure: `node 0->1 memcpy_read_ce`.
fn pair_subject(node: &str, src: u32, dst: u32, test: &str) -> String {
    let short = test
        .trim_start_matches("multinode_")
        .trim_start_matches("device_to_device_");
    format!("{node} {src}->{dst} {short}")
}

/// The subject of an RDMA link figure: `node/mlx5_0 write` (the test named when the log
/// showed its banner, so write, read and send are never compared with each other).
fn link_subject(node: &str, device: Option<&str>, test: Option<&str>) -> String {
    let base = format!("{node}/{}", device.unwrap_or("?"));
    match test {
        Some(t) => format!("{base} {t}"),
        None => base,
    }
}

pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The figures of a phase's metrics. Peaks for bandwidths (the tool's sweep reaches them at the
/// large sizes); for training, the median over steps after the first tenth (warm-up).
pub fn figures(metrics: &[PhaseMetric]) -> Figures {
    let mut f = Figures::new();
    // Per node and job size: (step, step time, data wait, tokens/s).
    // Per node and variant, then job size.
    let mut steps: BTreeMap<(String, Option<String>), BTreeMap<u32, Vec<StepRow>>> =
        BTreeMap::new();
    let most_ranks = most_ranks(metrics);
    for m in metrics {
        match m {
            PhaseMetric::Tflops {
                node,
                gpu,
                dtype,
                tflops,
            } => put(
                &mut f,
                format!("tflops_{dtype}"),
                format!("{node}/gpu{gpu}"),
                "",
                *tflops,
                Keep::Max,
            ),
            PhaseMetric::BusBw {
                node,
                collective,
                busbw_gb_per_s,
                ranks,
                ..
            } => {
                let subject = node.clone().unwrap_or_else(|| "job".into());
                let name = busbw_name("busbw", collective, *ranks, &most_ranks, &subject);
                put(&mut f, name, subject, "", *busbw_gb_per_s, Keep::Max)
            }
            PhaseMetric::AvgBusBw {
                node,
                collective,
                ranks,
                gb_per_s,
            } => {
                let subject = node.clone().unwrap_or_else(|| "job".into());
                let name = busbw_name("avg_busbw", collective, *ranks, &most_ranks, &subject);
                put(&mut f, name, subject, "", *gb_per_s, Keep::Max)
            }
            PhaseMetric::PairBw {
                node,
                test,
                src,
                dst,
                gb_per_s,
            } if pair_test(test) => put(
                &mut f,
                "pair_gb_per_s".into(),
                pair_subject(node, *src, *dst, test),
                test,
                *gb_per_s,
                Keep::Max,
            ),
            PhaseMetric::PairLat {
                node,
                test,
                src,
                dst,
                ns,
            } => put(
                &mut f,
                "pair_latency_ns".into(),
                pair_subject(node, *src, *dst, test),
                test,
                *ns,
                Keep::Min,
            ),
            PhaseMetric::LinkBw {
                node,
                device,
                test,
                bw_avg_gbit_per_s,
                ..
            } => put(
                &mut f,
                "link_gbit_per_s".into(),
                link_subject(node, device.as_deref(), test.as_deref()),
                test.as_deref().unwrap_or(""),
                *bw_avg_gbit_per_s,
                Keep::Max,
            ),
            PhaseMetric::LinkLat {
                node,
                device,
                test,
                latency_us,
                ..
            } => put(
                &mut f,
                "link_latency_us".into(),
                link_subject(node, device.as_deref(), test.as_deref()),
                test.as_deref().unwrap_or(""),
                *latency_us,
                Keep::Min,
            ),
            PhaseMetric::Step {
                node,
                step,
                step_time_ms,
                data_wait_ms,
                tokens_per_sec,
                tokens_per_sec_per_gpu,
                tflops_per_gpu,
                world,
                variant,
                ..
            } => steps
                .entry((
                    node.clone().unwrap_or_else(|| "job".into()),
                    variant.clone(),
                ))
                .or_default()
                .entry(world.unwrap_or(0))
                .or_default()
                .push(StepRow {
                    step: *step,
                    step_time_ms: *step_time_ms,
                    data_wait_ms: *data_wait_ms,
                    tokens_per_sec: *tokens_per_sec,
                    tokens_per_sec_per_gpu: *tokens_per_sec_per_gpu,
                    tflops_per_gpu: *tflops_per_gpu,
                }),
            PhaseMetric::FirstBatch { ms } => put(
                &mut f,
                "first_batch_ms".into(),
                "job".into(),
                "",
                *ms,
                Keep::Last,
            ),
            // How many RDMA devices NCCL used is no measurement of the phase: the spec gate
            // reads it beside the busbw, no figure of its own.
            PhaseMetric::Figure { name, .. } if name == crate::parsers::NET_PORTS_FIGURE => {}
            PhaseMetric::Figure {
                node,
                gpu,
                name,
                value,
            } => {
                let subject = match gpu {
                    Some(g) => format!("{node}/gpu{g}"),
                    None => node.clone(),
                };
                put(&mut f, name.clone(), subject, "", *value, Keep::Last)
            }
            _ => {}
        }
    }
    put_step_figures(&mut f, steps);
    f
}

/// The most ranks each collective ran with, per node (or `job`).
fn most_ranks(metrics: &[PhaseMetric]) -> BTreeMap<(&str, &str), u32> {
    let mut most: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for m in metrics {
        if let PhaseMetric::BusBw {
            node,
            collective,
            ranks,
            ..
        } = m
        {
            let e = most
                .entry((collective.as_str(), node.as_deref().unwrap_or("job")))
                .or_default();
            *e = (*e).max(*ranks);
        }
    }
    most
}

/// The training figures of each node and variant: those of its largest job, and the scaling
/// efficiency against a 1-GPU job beside it.
fn put_step_figures(
    f: &mut Figures,
    steps: BTreeMap<(String, Option<String>), BTreeMap<u32, Vec<StepRow>>>,
) {
    for ((node, variant), worlds) in steps {
        // The figures of a node are those of its largest job; a 1-GPU job beside it gives
        // the scaling efficiency. A variant's (e.g. the loader not NUMA-pinned) are kept
        // beside them, suffixed.
        let Some((&largest, rows)) = worlds.iter().next_back() else {
            continue;
        };
        let suffix = variant.map(|v| format!("_{v}")).unwrap_or_default();
        let big = step_figures(rows);
        let per_node = [
            ("step_time_ms", big.step_time_ms),
            ("tokens_per_sec", big.tokens_per_sec),
            ("tokens_per_sec_per_gpu", big.tokens_per_sec_per_gpu),
            ("data_wait_pct", big.data_wait_pct),
            ("tflops_per_gpu", big.tflops_per_gpu),
        ];
        for (name, value) in per_node {
            if let Some(v) = value {
                put(
                    f,
                    format!("{name}{suffix}"),
                    node.clone(),
                    "",
                    v,
                    Keep::Last,
                );
            }
        }
        if suffix.is_empty()
            && largest > 1
            && let Some(one) = worlds.get(&1).map(|r| step_figures(r))
            && let (Some(t1), Some(tn)) = (one.tokens_per_sec, big.tokens_per_sec)
            && t1 > 0.0
        {
            let pct = 100.0 * tn / (t1 * f64::from(largest));
            put(f, "scaling_pct".into(), node.clone(), "", pct, Keep::Last);
        }
    }
}

/// The name of a busbw figure: the run with the most ranks of its collective on its subject
/// is the one gates judge; smaller runs (2, 4 GPUs) are kept beside it as the scaling curve.
fn busbw_name(
    prefix: &str,
    collective: &str,
    ranks: u32,
    most_ranks: &BTreeMap<(&str, &str), u32>,
    subject: &str,
) -> String {
    let top = most_ranks.get(&(collective, subject)).copied().unwrap_or(0);
    if ranks < top {
        format!("{prefix}_{collective}_{ranks}gpu")
    } else {
        format!("{prefix}_{collective}")
    }
}

/// One step of one job as the figures read it.
#[derive(Debug, Clone, Copy)]
struct StepRow {
    step: u64,
    step_time_ms: Option<f64>,
    data_wait_ms: Option<f64>,
    tokens_per_sec: Option<f64>,
    tokens_per_sec_per_gpu: Option<f64>,
    tflops_per_gpu: Option<f64>,
}

/// Medians of one job's steps after the first tenth (warm-up), and its data-wait share.
struct StepFigures {
    step_time_ms: Option<f64>,
    tokens_per_sec: Option<f64>,
    tokens_per_sec_per_gpu: Option<f64>,
    tflops_per_gpu: Option<f64>,
    data_wait_pct: Option<f64>,
}

fn step_figures(rows: &[StepRow]) -> StepFigures {
    let mut s = rows.to_vec();
    s.sort_by_key(|x| x.step);
    let skip = if s.len() >= 10 { s.len() / 10 } else { 0 };
    let s = &s[skip..];
    let mut times: Vec<f64> = s.iter().filter_map(|x| x.step_time_ms).collect();
    let mut tokens: Vec<f64> = s.iter().filter_map(|x| x.tokens_per_sec).collect();
    let mut per_gpu: Vec<f64> = s.iter().filter_map(|x| x.tokens_per_sec_per_gpu).collect();
    let mut tflops: Vec<f64> = s.iter().filter_map(|x| x.tflops_per_gpu).collect();
    let waited: Vec<(f64, f64)> = s
        .iter()
        .filter_map(|x| x.data_wait_ms.zip(x.step_time_ms))
        .collect();
    let step_sum: f64 = waited.iter().map(|x| x.1).sum();
    let wait_sum: f64 = waited.iter().map(|x| x.0).sum();
    StepFigures {
        step_time_ms: median(&mut times),
        tokens_per_sec: median(&mut tokens),
        tokens_per_sec_per_gpu: median(&mut per_gpu),
        tflops_per_gpu: median(&mut tflops),
        data_wait_pct: (step_sum > 0.0).then(|| 100.0 * wait_sum / step_sum),
    }
}

/// One subject's figure against the median of its group (its peers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerShare<'a> {
    /// The subject's sample.
    pub sample: &'a Sample,
    /// Median of its group.
    pub median: f64,
    /// The sample as a percentage of that median.
    pub share_pct: f64,
}

/// Every sample of a figure against its group's median, in sample order. Groups of one, and
/// groups whose median is not positive, have no peers to compare with and are left out. The
/// `peers` gate and triage's straggler rule both judge by this.
pub fn peer_shares(samples: &[Sample]) -> Vec<PeerShare<'_>> {
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for s in samples {
        groups.entry(&s.group).or_default().push(s.value);
    }
    let medians: BTreeMap<&str, f64> = groups
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .filter_map(|(g, mut v)| median(&mut v).map(|m| (g, m)))
        .filter(|(_, m)| *m > 0.0)
        .collect();
    samples
        .iter()
        .filter_map(|s| {
            let m = *medians.get(s.group.as_str())?;
            Some(PeerShare {
                sample: s,
                median: m,
                share_pct: 100.0 * s.value / m,
            })
        })
        .collect()
}
