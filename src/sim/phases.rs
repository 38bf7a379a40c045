//! What each simulated phase prints and measures, and its verdict from the plan's own gates
//! against the simulated cluster's nominal figures.

use super::*;

/// Where a phase is when it speaks: its id, the simulated second, the seconds since it
/// started, and that instant.
#[derive(Clone, Copy)]
struct Tick<'a> {
    id: &'a str,
    s: u64,
    t: u64,
    at_ms: UnixMillis,
}

impl SimCluster {
    /// The cluster's seed, nodes and GPUs per node, which every phase's figures follow.
    fn shape(&self) -> (u64, usize, u32) {
        (
            self.config.seed,
            self.config.nodes,
            self.config.gpus_per_node,
        )
    }
    fn line(id: &str, at_ms: UnixMillis, text: String) -> SourceEvent {
        SourceEvent::Phase(PhaseEvent::Line {
            phase: id.to_string(),
            at_ms,
            node: None,
            text,
        })
    }

    fn metric(id: &str, at_ms: UnixMillis, metric: PhaseMetric) -> SourceEvent {
        SourceEvent::Phase(PhaseEvent::Metric {
            phase: id.to_string(),
            at_ms,
            metric,
        })
    }

    pub(super) fn phase_output(&mut self, id: &str, s: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let Some(started_s) = self.running.as_ref().map(|r| r.started_s) else {
            return;
        };
        let t = s - started_s;
        let nodes = self.config.nodes;
        match id {
            "T1" if (t as usize) < nodes => self.sanity_output(id, t, at_ms, out),
            "T2" => self.gemm_output(Tick { id, s, t, at_ms }, out),
            "T3" if t.is_multiple_of(5) && (t / 5) < 6 => {
                self.nvbandwidth_output(Tick { id, s, t, at_ms }, out)
            }
            "T4" | "T7" => self.nccl_output(id, s, t, out),
            "T5" | "T6" | "T8" => self.training_output(Tick { id, s, t, at_ms }, started_s, out),
            "S2" => self.s3_probe_output(Tick { id, s, t, at_ms }, out),
            "S4" => self.gds_output(Tick { id, s, t, at_ms }, out),
            _ => {}
        }
    }

    /// T1's output: one node a second, its sanity line and the checks the sanity parser makes.
    fn sanity_output(&mut self, id: &str, t: u64, at_ms: UnixMillis, out: &mut Vec<SourceEvent>) {
        let gpus = self.config.gpus_per_node;
        let n = t as usize;
        let node = self.config.node_name(n);
        out.push(Self::line(
                id,
                at_ms,
                format!(
                    "{node}: {gpus} GPUs (expected {gpus}), driver 580.95.05, nvidia-fabricmanager 580.95.05 active, Xid since boot: 0"
                ),
            ));
        // The checks the sanity parser makes of the same output.
        for (name, detail) in [
            ("gpu-count", format!("{gpus} GPUs (expected {gpus})")),
            ("driver-version", "580.95.05 on every GPU".to_string()),
            (
                "fabric-manager-version",
                "nvidia-fabricmanager 580.95.05 = driver 580.95.05".to_string(),
            ),
            ("fabric-manager-active", "active".to_string()),
            (
                "fabric-registration",
                format!("{gpus} of {gpus} GPUs completed"),
            ),
            ("xid", "no Xid in the kernel log".to_string()),
        ] {
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::Check {
                    node: node.clone(),
                    name: name.into(),
                    status: CheckStatus::Ok,
                    detail,
                },
            ));
        }
    }

    /// T2's output: warm-up lines, then each GPU's bf16 and fp8 TFLOPS at the end.
    fn gemm_output(&mut self, tick: Tick<'_>, out: &mut Vec<SourceEvent>) {
        let Tick { id, s, t, at_ms } = tick;
        let (seed, nodes, gpus) = self.shape();
        let duration = phase_duration_s(id);
        if t + 1 == duration {
            // Each GPU's throughput follows its measured clock during the phase.
            for n in 0..nodes {
                for g in 0..gpus {
                    let thermal = self.fault_hits(FaultKind::Thermal, n, g, s);
                    let dead = self
                        .fault(FaultKind::Xid79)
                        .is_some_and(|f| f.node == n && f.gpu == g && s >= f.from_s);
                    if dead {
                        continue;
                    }
                    let key = (n as u64) << 8 | g as u64;
                    let slow = self.fault_hits(FaultKind::SlowClock, n, g, s);
                    let factor = if thermal {
                        0.71
                    } else if slow {
                        0.52
                    } else {
                        1.0
                    };
                    let tflops =
                        BF16_TFLOPS_NOMINAL * factor * (1.0 + noise(seed, key, 2, 9) * 0.015);
                    let fp8 = FP8_TFLOPS_NOMINAL * factor * (1.0 + noise(seed, key, 2, 10) * 0.015);
                    for (dtype, tflops) in [("bf16", tflops), ("fp8", fp8)] {
                        out.push(Self::metric(
                            id,
                            at_ms,
                            PhaseMetric::Tflops {
                                node: self.config.node_name(n),
                                gpu: g,
                                dtype: dtype.into(),
                                tflops,
                            },
                        ));
                    }
                    out.push(Self::line(
                        id,
                        at_ms,
                        format!(
                            "{}: {{\"gpu\": {g}, \"dtype\": \"bf16\", \"m\": 8192, \"n\": 8192, \"k\": 8192, \"tflops\": {tflops:.1}}}",
                            self.config.node_name(n)
                        ),
                    ));
                }
            }
        } else if t.is_multiple_of(10) {
            out.push(Self::line(
                id,
                at_ms,
                format!(
                    "all nodes: gemm bf16 8192x8192x8192 warm, iteration {}",
                    t * 40
                ),
            ));
        }
    }

    /// T3's output: two nodes every five seconds, every GPU pair of both test cases.
    fn nvbandwidth_output(&mut self, tick: Tick<'_>, out: &mut Vec<SourceEvent>) {
        let Tick { id, s, t, at_ms } = tick;
        let (seed, nodes, gpus) = self.shape();
        let n0 = (t / 5) as usize * 2;
        for n in n0..(n0 + 2).min(nodes) {
            let crc = self.node_faulty(FaultKind::NvlinkCrc, n, s).is_some();
            let bw = NVLINK_PAIR_GB_PER_S
                * (1.0 + noise(seed, n as u64, 3, 1) * 0.01)
                * if crc { 0.93 } else { 1.0 };
            let node = self.config.node_name(n);
            for (t, test) in NVBANDWIDTH_TESTS.iter().enumerate() {
                for src in 0..gpus {
                    for dst in (0..gpus).filter(|d| *d != src) {
                        let pair = u64::from(src) << 8 | u64::from(dst);
                        out.push(Self::metric(
                            id,
                            at_ms,
                            PhaseMetric::PairBw {
                                node: node.clone(),
                                test: (*test).into(),
                                src,
                                dst,
                                gb_per_s: bw
                                    * (1.0 + noise(seed, n as u64, pair, 20 + t as u64) * 0.005),
                            },
                        ));
                    }
                }
                out.push(Self::metric(
                    id,
                    at_ms,
                    PhaseMetric::Check {
                        node: node.clone(),
                        name: "nvbandwidth-testcase".into(),
                        status: CheckStatus::Ok,
                        detail: format!(
                            "{test}: {} cell(s) measured",
                            gpus * gpus.saturating_sub(1)
                        ),
                    },
                ));
            }
            out.push(Self::line(
                    id,
                    at_ms,
                    format!(
                        "{}: nvbandwidth device_to_device_bidirectional_memcpy_read_ce  min {:.1} GB/s  avg {bw:.1} GB/s",
                        self.config.node_name(n),
                        bw * 0.985
                    ),
                ));
        }
    }

    /// T5, T6 and T8: one training step a second (T5 on one GPU first), data wait and loss.
    fn training_output(&mut self, tick: Tick<'_>, started_s: u64, out: &mut Vec<SourceEvent>) {
        let Tick { id, s, t, at_ms } = tick;
        let (seed, nodes, gpus) = self.shape();
        let Some(r) = self.running.as_mut() else {
            return;
        };
        r.step += 1;
        // T5 runs the workload on one GPU first, then on all: the step count starts
        // over, as the real workload's second run does.
        let one_gpu = id == "T5" && r.step <= T5_ONE_GPU_STEPS;
        let step = if id == "T5" && !one_gpu {
            r.step - T5_ONE_GPU_STEPS
        } else {
            r.step
        };
        let base_step_ms = if id == "T6" { T6_STEP_MS } else { T5_STEP_MS };
        let step_ms = base_step_ms * (1.0 + noise(seed, 5, s, 1) * 0.02);
        let mut wait_ms = step_ms * (0.015 + noise(seed, 5, s, 2).abs() * 0.01);
        if id == "T8"
            && let Some(f) = self
                .config
                .faults
                .iter()
                .find(|f| f.kind == FaultKind::LoaderWait)
            && t >= 8
            && s >= f.from_s.min(started_s + 8)
        {
            let ramp = ((t - 8) as f64 / 20.0).min(1.0);
            wait_ms = step_ms * (0.02 + 0.24 * ramp) * (1.0 + noise(seed, 5, s, 3) * 0.1);
        }
        let step_total = step_ms + if id == "T8" { wait_ms } else { 0.0 };
        let loss = 2.9 * (-(step as f64) / 90.0).exp() + 1.6 + noise(seed, 5, s, 4) * 0.02;
        let world = f64::from(gpus) * nodes as f64;
        let mut tokens = STEP_TOKENS * world / (step_total / 1000.0);
        if one_gpu {
            tokens /= world * T5_SCALING;
        }
        if step == 1 && id == "T8" {
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::FirstBatch { ms: 2140.0 },
            ));
            out.push(Self::line(
                id,
                at_ms,
                "rank 0: first batch after 2.14 s (aistor.sim:9000, 16 workers, prefetch 4)".into(),
            ));
        }
        out.push(Self::metric(
            id,
            at_ms,
            PhaseMetric::Step {
                node: None,
                step,
                step_time_ms: Some(step_total),
                data_wait_ms: Some(wait_ms),
                tokens_per_sec: Some(tokens),
                tokens_per_sec_per_gpu: None,
                tflops_per_gpu: None,
                loss: Some(loss),
                world: (id == "T5").then_some(if one_gpu { 1 } else { world as u32 }),
                variant: None,
            },
        ));
        out.push(Self::line(
            id,
            at_ms,
            format!(
                "{{\"step\": {step}, \"step_time_ms\": {step_total:.1}, \"data_wait_ms\": {wait_ms:.1}, \"tokens_per_s\": {tokens:.0}, \"loss\": {loss:.4}}}"
            ),
        ));
        if id == "T6" && t + 2 == phase_duration_s(id) {
            out.push(Self::line(
                id,
                at_ms,
                "checkpoint saved: /scratch/lora/ckpt-step40 (41.2 GB in 18.3 s)".into(),
            ));
        }
    }

    /// S2's output: the S3 probe on every node at once, a window a second per node over a
    /// concurrency sweep (8, 16, 32, 64), then each node's best GB/s and failed GETs, as
    /// `burnin probe s3 --json-lines` reports them.
    fn s3_probe_output(&mut self, tick: Tick<'_>, out: &mut Vec<SourceEvent>) {
        let Tick { id, s, t, at_ms } = tick;
        let seed = self.config.seed;
        let duration = phase_duration_s(id);
        let levels = [8usize, 16, 32, 64];
        let level = levels[((t * levels.len() as u64) / duration).min(3) as usize];
        let spike = self
            .fault(FaultKind::AistorP99)
            .is_some_and(|f| f.active_at(s));
        for n in 0..self.config.nodes {
            let node = self.config.node_name(n);
            let r = |salt| noise(seed, 0x53_0000 + n as u64, s, salt);
            let slow = self.node_faulty(FaultKind::SlowStorage, n, s).is_some();
            // A node's GETs share a 100G storage NIC: about 11 GB/s at the sweep's top.
            let mut gb_per_s =
                S3_NODE_GB_PER_S * (level as f64 / 64.0).powf(0.35) * (1.0 + r(1) * 0.03);
            let mut p99 = 46.0 + r(2) * 8.0 + level as f64 * 0.4;
            let mut errors = 0;
            if slow {
                gb_per_s *= 0.3;
                p99 *= 5.5;
                errors = u64::from(r(3) > 0.6);
            }
            if spike {
                p99 = 640.0 + r(4) * 80.0;
            }
            let requests = (gb_per_s * 1e9 / (64.0 * 1048576.0)).round() as u64;
            let window = ProbeWindow {
                at_ms,
                endpoint: "aistor.sim:9000 (simulated)".into(),
                ttfb_p50_ms: 11.0 + r(5) * 1.5 + if slow { 30.0 } else { 0.0 },
                ttfb_p99_ms: p99,
                total_p99_ms: p99 + 60.0 + r(6) * 10.0,
                throughput_bytes_per_sec: gb_per_s * 1e9,
                requests,
                errors,
                concurrency: Some(level),
            };
            let best = self.s3_best.entry(node.clone()).or_insert((0.0, 0));
            best.0 = f64::max(best.0, gb_per_s);
            best.1 += errors;
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::Storage { node, window },
            ));
        }
        if t + 2 == duration {
            for n in 0..self.config.nodes {
                let node = self.config.node_name(n);
                let (best, failed) = self.s3_best.get(&node).copied().unwrap_or((0.0, 0));
                for (name, value) in [("s3_gb_per_s", best), ("s3_errors", failed as f64)] {
                    out.push(Self::metric(
                        id,
                        at_ms,
                        PhaseMetric::Figure {
                            node: node.clone(),
                            gpu: None,
                            name: name.into(),
                            value,
                        },
                    ));
                }
                out.push(Self::line(
                    id,
                    at_ms,
                    format!("{node}: best {best:.2} GB/s, {failed} failed GET(s)"),
                ));
            }
            self.s3_best.clear();
        }
    }

    /// S4's output: on every node at once, S4's command as the plan ships it would print it,
    /// one gdsio run a second (each GPU's write and read at `-x 0`, `2`, `1`), the NUMA line and
    /// cuFile's and nvidia_fs's counts around the GPU-direct read. Each run goes to the pane as
    /// it finishes; at the end the real gdsio parser reads each node's lines into the figures
    /// and checks the gates judge.
    fn gds_output(&mut self, tick: Tick<'_>, out: &mut Vec<SourceEvent>) {
        let Tick { id, s, t, at_ms } = tick;
        let (seed, nodes, gpus) = self.shape();
        let runs = u64::from(gpus) * 6;
        // One run a second, more where the GPUs would not fit the phase's time.
        let per_s = runs.div_ceil(phase_duration_s(id).saturating_sub(4).max(1));
        let first = t.saturating_sub(1) * per_s;
        for k in (first..first + per_s).filter(|k| t >= 1 && *k < runs) {
            let (gpu, j) = ((k / 6) as u32, (k % 6) as usize);
            let (xfer, x, read, write) = GDS_GIB_PER_S[j / 2];
            let io = if j % 2 == 0 { "WRITE" } else { "READ" };
            for n in 0..nodes {
                let node = self.config.node_name(n);
                let compat = self.node_faulty(FaultKind::GdsCompat, n, s).is_some();
                let r = |salt| noise(seed, 0x54_0000 + n as u64, u64::from(gpu), salt);
                // In compat mode GPU-direct goes through a bounce buffer: CPU→GPU's rate.
                let (_, _, cpu_read, cpu_write) = GDS_GIB_PER_S[1];
                let nominal = match (compat && x == 0, io) {
                    (true, "READ") => cpu_read,
                    (true, _) => cpu_write,
                    (false, "READ") => read,
                    (false, _) => write,
                };
                let gib = nominal * (1.0 + r(j as u64) * 0.015);
                let numa = u32::from(gpu >= gpus / 2);
                let mut lines = Vec::new();
                // The simulated nodes have a GDS array per socket, one gds_dir each.
                if k == 0 {
                    lines.push("gds_dir: per-numa-node".into());
                }
                if j == 0 {
                    lines.push(format!("== gpu {gpu}"));
                    lines.push(format!("numa: gpu {gpu} {numa} file {numa} nvme{numa}n1"));
                }
                // -x 0 -I 0: the GPU-direct read, with the counts around it.
                let direct_read = x == 0 && io == "READ";
                let ops = (gib * 10.0 * 1024.0) as u64;
                if direct_read {
                    lines.push("nvfs before: Reads : err=0 io_state_err=0".into());
                    let posix = if compat { ops } else { 0 };
                    lines.push(format!(
                        "cufile stats: GPU {gpu} Read: bw={:.4} util(%)=99 n={ops} posix={posix} unalign=0 dr=0 r_sparse=0 r_inline=0 err=0 MiB={ops} Write: bw=0 util(%)=0 n=0 posix=0 unalign=0 dr=0 err=0 MiB=0 BufRegister: n=8 err=0 free=0 MiB=8",
                        gib / 2.0
                    ));
                }
                let result = format!(
                    "IoType: {io} XferType: {xfer} Threads: 8 DataSetSize: {}/8388608(KiB) IOSize: 1024(KiB) Throughput: {gib:.6} GiB/sec, Avg_Latency: {:.6} usecs ops: {ops} total_time 10.000000 secs",
                    ops * 1024,
                    8.0 * 1e6 / (gib * 1024.0)
                );
                if direct_read {
                    lines.push(result.clone());
                    lines.push("nvfs after: Reads : err=0 io_state_err=0".into());
                } else {
                    lines.push(result.clone());
                }
                if let Some(row) = crate::parsers::gdsio::gdsio_row(&result) {
                    out.push(Self::metric(
                        id,
                        at_ms,
                        crate::parsers::gds_run(&node, Some(gpu), &row),
                    ));
                }
                out.push(Self::line(id, at_ms, format!("{node}: {result}")));
                self.gds_lines.entry(node).or_default().extend(lines);
            }
        }
        if t == runs.div_ceil(per_s) + 1 {
            for (node, lines) in std::mem::take(&mut self.gds_lines) {
                let mut parser = crate::parsers::OutputParser::new(
                    crate::parsers::ParserKind::Gdsio,
                    crate::parsers::ParseContext {
                        node: node.clone(),
                        expected_gpus: gpus,
                    },
                );
                for l in &lines {
                    // The runs went to the pane as they finished.
                    let _ = parser.push(l);
                }
                for m in parser.finish() {
                    out.push(Self::metric(id, at_ms, m));
                }
            }
        }
    }

    fn nccl_output(&mut self, id: &str, s: u64, t: u64, out: &mut Vec<SourceEvent>) {
        let at_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        let seed = self.config.seed;
        let nodes = self.config.nodes;
        let gpus = self.config.gpus_per_node;
        const FIRST_SIZE: u64 = 1 << 20;
        const SIZES: u32 = 14; // 1 MiB .. 8 GiB
        let per_size_s = phase_duration_s(id) / SIZES as u64;
        if t == 0 {
            out.push(Self::line(
                id,
                at_ms,
                "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0".into(),
            ));
            out.push(Self::line(
                id,
                at_ms,
                "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong".into(),
            ));
        }
        if t == 0 && id == "T7" {
            // NCCL's own words on the transport it chose, as NCCL_DEBUG=INFO prints them on
            // each rank's host (the T7 gate looks for NET/IB there).
            let unhealthy = self.unhealthy_nodes(s);
            for n in (0..nodes).filter(|n| !unhealthy.contains(n)) {
                let node = self.config.node_name(n);
                let pid = 41_000 + n;
                out.push(Self::line(
                    id,
                    at_ms,
                    format!(
                        "{node}:{pid}:{pid} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB bond0:10.0.0.{}<0>",
                        n + 1
                    ),
                ));
                out.push(Self::line(
                    id,
                    at_ms,
                    format!("{node}:{pid}:{pid} [0] NCCL INFO Using network IB"),
                ));
            }
        }
        if t % per_size_s != per_size_s - 1 {
            return;
        }
        let k = (t / per_size_s) as u32;
        if k >= SIZES {
            return;
        }
        let size = FIRST_SIZE << k;
        let unhealthy = self.unhealthy_nodes(s);
        let (groups, peak, ranks): (Vec<Option<usize>>, f64, u32) = if id == "T4" {
            ((0..nodes).map(Some).collect(), NCCL_NODE_PEAK_BUSBW, gpus)
        } else {
            let healthy = nodes - unhealthy.len();
            (vec![None], NCCL_NET_PEAK_BUSBW, healthy as u32 * gpus)
        };
        for node in groups {
            if let Some(n) = node
                && unhealthy.contains(&n)
            {
                // A stalled or lost GPU hangs the node's collective: no more rows from it.
                continue;
            }
            let half = 48.0 * (1 << 20) as f64;
            let x = size as f64;
            let busbw = peak * x / (x + half)
                * (1.0 + noise(seed, node.map_or(99, |n| n as u64), k as u64, 11) * 0.01);
            let n_ranks = ranks as f64;
            let algbw = busbw * n_ranks / (2.0 * (n_ranks - 1.0));
            let time_us = x / (algbw * 1e3);
            let prefix = node.map_or_else(|| "all".to_string(), |n| self.config.node_name(n));
            out.push(Self::line(
                id,
                at_ms,
                format!(
                    "{prefix}: {size:>12} {count:>13} {ty:>9} {op:>7} {root:>7} {time_us:>8.1} {algbw:>7.2} {busbw:>7.2} {wrong:>6} {time_us:>8.1} {algbw:>7.2} {busbw:>7.2} {wrong:>6}",
                    count = size / 2,
                    ty = "bfloat16",
                    op = "sum",
                    root = -1,
                    wrong = 0,
                ),
            ));
            out.push(Self::metric(
                id,
                at_ms,
                PhaseMetric::BusBw {
                    node: node.map(|n| self.config.node_name(n)),
                    collective: "all_reduce".into(),
                    size_bytes: size,
                    busbw_gb_per_s: busbw,
                    algbw_gb_per_s: algbw,
                    in_place_busbw_gb_per_s: None,
                    wrong: Some(0),
                    ranks,
                    deviation: false,
                },
            ));
        }
    }

    /// The phase's verdict: the plan's own gates over what the simulation produced, as the
    /// runner would observe it (exit status per node, the lines, the telemetry beside it).
    pub(super) fn judge(&self, r: &Running, s: u64) -> gates::Judgement {
        let plan = default_plan();
        let Some(spec) = plan.find(&r.id) else {
            return gates::Judgement {
                verdict: Verdict::Skipped,
                reason: format!("{} is not in the plan", r.id),
                gates: Vec::new(),
            };
        };
        let nodes: Vec<String> = (0..self.config.nodes)
            .map(|n| self.config.node_name(n))
            .collect();
        let unhealthy = self.unhealthy_nodes(s);
        let mut observed = Observed {
            nodes: nodes.clone(),
            ..Observed::default()
        };
        for (n, name) in nodes.iter().enumerate() {
            let code = if !unhealthy.contains(&n) {
                Some(0)
            } else if self.node_faulty(FaultKind::Hang, n, s).is_some() {
                // A collective that hangs never ends by itself: the time limit kills it.
                None
            } else {
                Some(1)
            };
            observed.exit.insert(name.clone(), code);
            observed
                .node_gpus
                .insert(name.clone(), self.config.gpus_per_node);
            observed.hardware.insert(
                name.clone(),
                plan.hardware.resolve(&sim_parts(self.config.gpus_per_node)),
            );
        }
        for gate in &spec.gates {
            if let crate::plan::Gate::OutputContains { text, evidence } = gate {
                for t in std::iter::once(text).chain(evidence) {
                    let showed: BTreeSet<String> = r
                        .lines
                        .iter()
                        .filter(|l| l.contains(t.as_str()))
                        .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_string()))
                        .filter(|n| nodes.contains(n))
                        .collect();
                    observed.seen.insert(t.clone(), showed);
                }
            }
        }
        if spec.scope == crate::plan::Scope::Mpirun {
            observed.expected_ranks = Some(self.config.nodes as u32 * self.config.gpus_per_node);
        }
        let from_ms = SIM_EPOCH_MS + r.started_s * SIM_PERIOD_MS;
        let to_ms = SIM_EPOCH_MS + s * SIM_PERIOD_MS;
        observed.telemetry = self
            .watch
            .as_ref()
            .map(|w| w.window(&nodes, from_ms, to_ms));
        gates::judge_gates(
            spec,
            &r.metrics,
            &observed,
            Some(&nominal_baseline(&self.config)),
        )
    }
}

/// The simulated cluster's figures in health, per phase: the baseline its phases are judged
/// against (a site saves its own with `burnin baseline save RUN`). One subject per figure, so
/// every GPU, pair or node is held to the nominal figure.
/// What T0 would read a simulated node to be made of: B300s (PCI 0x3182) and eight
/// ConnectX-7 InfiniBand ports (0x1021), the 400G rails the simulated fabric runs at.
pub fn sim_parts(gpus: u32) -> crate::model::spec::NodeParts {
    use crate::model::spec::{NodeParts, Part};
    NodeParts {
        gpus: vec![Part {
            pci_id: Some(0x3182),
            name: "NVIDIA B300 SXM6 AC".into(),
            count: gpus,
        }],
        nics: vec![Part {
            pci_id: Some(0x1021),
            name: "InfiniBand".into(),
            count: 8,
        }],
        from: "T0".into(),
    }
}

/// The baseline the simulated cluster judges with.
pub fn nominal_baseline(config: &SimConfig) -> Baseline {
    let gpus = f64::from(config.gpus_per_node) * config.nodes as f64;
    let training = |step_ms: f64| STEP_TOKENS * gpus / (step_ms / 1000.0);
    let figures: [(&str, &str, f64); 9] = [
        ("T2", "tflops_bf16", BF16_TFLOPS_NOMINAL),
        ("T2", "tflops_fp8", FP8_TFLOPS_NOMINAL),
        ("T3", "pair_gb_per_s", NVLINK_PAIR_GB_PER_S),
        ("T4", "busbw_all_reduce", NCCL_NODE_PEAK_BUSBW),
        ("T5", "tokens_per_sec", training(T5_STEP_MS)),
        ("T6", "tokens_per_sec", training(T6_STEP_MS)),
        ("T7", "busbw_all_reduce", NCCL_NET_PEAK_BUSBW),
        ("T8", "tokens_per_sec", training(T5_STEP_MS)),
        ("S2", "s3_gb_per_s", S3_NODE_GB_PER_S),
    ];
    let mut baseline = Baseline {
        schema: 1,
        source: "the simulated cluster's nominal figures".into(),
        ..Baseline::default()
    };
    for (phase, figure, value) in figures {
        baseline
            .phases
            .entry(phase.to_string())
            .or_default()
            .insert(
                figure.to_string(),
                vec![gates::Sample {
                    subject: "nominal".into(),
                    group: String::new(),
                    value,
                }],
            );
    }
    baseline
}
