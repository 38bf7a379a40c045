//! NVIDIA `gdsio` result lines (S4, `parser = "gdsio"`), one per run, the same shape in every
//! release but the oldest beta's:
//!
//! - `IoType: READ XferType: GPUD Threads: 8 DataSetSize: 8363008/8388608(KiB) IOSize:
//!   1024(KiB) Throughput: 6.816723 GiB/sec, Avg_Latency: 1138.933194 usecs ops: 8167
//!   total_time 1.170003 secs`; `GPU_BATCH` adds `IoDepth: N` after `Threads:`.
//! - 0.9 beta: `DataSetSize:` in bytes, `IOSize: 4(KiB),Throughput:` (no space) and
//!   `total_latency`; an older one prints `GB/sec` (10^9 or 2^30 not said: read, not turned
//!   into GiB/s) and `total_time … usecs`.
//! - `XferType` echoes `-x`: GPUD (0), CPUONLY (1), CPU_GPU (2), CPU_ASYNC_GPU (3),
//!   CPU_CACHED_GPU (4), GPUD_ASYNC (5), GPU_BATCH (6), GPU_BATCH_STREAM (7). It says what was
//!   asked, not which path the data took: with compat mode allowed GPUD is printed for a
//!   bounce-buffer read.
//! - Failures: `Error: IO failed stopping traffic, fd :27 ret:-5 errno :1`, `file register
//!   error: GPUDirect Storage not supported on current file filename:…`.
//!
//! NVIDIA publishes no gdsio source: this follows the printouts of releases 0.9 to 1.16 in
//! `tests/corpus/gdsio/`.

mod checks;
mod counts;

use crate::model::phase::CheckStatus;
use crate::parsers::gds::{GdsCheckLine, MAX_GPUS, cut};
pub use counts::{CufileReads, NvfsReads};

/// One `gdsio` result line.
#[derive(Debug, Clone, PartialEq)]
pub struct GdsioRow {
    /// READ, WRITE, RANDREAD, RANDWRITE (as printed).
    pub io: String,
    /// The transfer type as printed (GPUD, CPUONLY, CPU_GPU, GPUD_ASYNC, GPU_BATCH…).
    pub xfer: String,
    /// Threads (`-w`).
    pub threads: Option<u32>,
    /// Batch depth (GPU_BATCH only).
    pub io_depth: Option<u32>,
    /// IO size in KiB (`None` for a variable size `4-32-1(KiB)` or the old `(KB)`).
    pub io_size_kib: Option<u64>,
    /// Throughput in GiB/s (`None` when printed in the oldest release's `GB/sec`, or when it
    /// cannot be physically true: see `not_a_rate`).
    pub gib_per_s: Option<f64>,
    /// A GiB/s figure printed above [`MAX_GIB_PER_S`]: not a reading (n/a), kept for the why.
    pub not_a_rate: Option<f64>,
    /// Average latency, µs.
    pub avg_latency_us: Option<f64>,
    /// Operations done.
    pub ops: Option<u64>,
}

/// More than any path into one GPU carries (NVLink-C2C moves 450 GB/s a direction, PCIe 6
/// x16 about 128 GB/s): a gdsio rate above it was not measured right, and judges nothing.
pub const MAX_GIB_PER_S: f64 = 1024.0;

/// Characters of an `IoType`/`XferType` name kept (the longest gdsio prints is 16).
const XFER_CHARS: usize = 24;

fn finite(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// A word gdsio uses for an IO or transfer type: upper-case letters and `_` only.
fn type_word(w: &str) -> Option<String> {
    (!w.is_empty()
        && w.len() <= XFER_CHARS
        && w.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
    .then(|| w.to_string())
}

/// Read one `gdsio` result line (`None`: not one).
pub fn gdsio_row(line: &str) -> Option<GdsioRow> {
    // A document's full-width colon (`XferType：`) is gdsio's own `:`.
    let line = &line.replace('：', ":");
    if !line.contains("XferType:") || !line.contains("Throughput:") {
        return None;
    }
    // A document's full-width comma (`GiB/sec，Avg_Latency:`, a Chinese blog's paste) is the
    // same separator as gdsio's own `,`, and a full-width colon the same as `:`.
    let spaced = line.replace([',', '，', '、'], " ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1).copied())
    };
    let xfer_at = words.iter().position(|w| *w == "XferType:")?;
    let xfer = type_word(words.get(xfer_at + 1)?)?;
    // `IoType: READ`, or a bare `WRITE` before `XferType:` where a script cut the key.
    let io = after("IoType:")
        .or_else(|| xfer_at.checked_sub(1).and_then(|i| words.get(i).copied()))
        .and_then(type_word)?;
    let throughput_at = words.iter().position(|w| *w == "Throughput:")?;
    let value = words.get(throughput_at + 1).and_then(|v| finite(v));
    let gib = match words.get(throughput_at + 2).copied() {
        Some("GiB/sec") => value,
        _ => None,
    };
    let (gib_per_s, not_a_rate) = match gib {
        Some(v) if v > MAX_GIB_PER_S => (None, Some(v)),
        v => (v, None),
    };
    let avg_latency_us = match words
        .iter()
        .position(|w| *w == "Avg_Latency:")
        .map(|i| (words.get(i + 1), words.get(i + 2)))
    {
        Some((Some(v), Some(&"usecs"))) => finite(v),
        _ => None,
    };
    let io_size_kib = words
        .iter()
        .find_map(|w| w.strip_prefix("IOSize:").filter(|r| !r.is_empty()))
        .or_else(|| after("IOSize:"))
        .and_then(|v| v.strip_suffix("(KiB)"))
        .and_then(|n| n.parse::<u64>().ok());
    Some(GdsioRow {
        io,
        xfer,
        threads: after("Threads:").and_then(|v| v.parse().ok()),
        io_depth: after("IoDepth:").and_then(|v| v.parse().ok()),
        io_size_kib,
        gib_per_s,
        not_a_rate,
        avg_latency_us,
        ops: after("ops:").and_then(|v| v.parse().ok()),
    })
}

/// gdsio's failure lines (the run stopped, or a file could not be registered).
pub fn gdsio_failure(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("Error: IO failed")
        || l.starts_with("gdsio exited")
        || l.starts_with("io failed")
        || l.starts_with("file register error")
        || l.starts_with("Error: file register")
}

/// Reads one node's S4 output: gdsio runs under `== gpu N` markers (one GPU's runs after
/// each) and `numa: gpu IDX GPU_NODE file FILE_NODE DEV` lines. At the end: per GPU, each transfer and IO
/// type's peak GiB/s and best average latency; GPU-direct as a percentage of CPU→GPU at the
/// same IO type, size and threads; and the checks S4 judges (NUMA pairing, GPU-direct against
/// CPU→GPU).
#[derive(Debug, Default)]
pub struct GdsioParser {
    gpu: Option<u32>,
    rows: Vec<(Option<u32>, GdsioRow)>,
    /// (GPU, its NUMA node, the NUMA nodes of the file's devices, the device).
    numa: Vec<(u32, Option<i64>, Vec<i64>, String)>,
    /// nvidia_fs's `Reads` line before and after each GPU's GPU-direct read.
    nvfs: Vec<(Option<u32>, NvfsReads, Option<NvfsReads>)>,
    /// cuFile's own count of each GPU's GPU-direct read.
    cufile: Vec<(Option<u32>, CufileReads)>,
    /// The plan named a directory per NUMA node (`gds_dir: per-numa-node`): a GPU reading a
    /// remote device is then a fault, not the layout.
    per_numa_dirs: bool,
    /// GPUs whose NUMA node has no directory of its own in `gds_dir` (the first was used).
    no_own_dir: Vec<u32>,
    /// A result line a document wrapped (`IoType: … DataSetSize: …` / `IOSize: … Throughput:
    /// …` / `ops: … total_time … secs`), held until its last piece: at most
    /// [`MAX_WRAPPED_LINES`] lines.
    wrapped: Option<(String, usize)>,
}

/// Lines one wrapped gdsio result is read from.
const MAX_WRAPPED_LINES: usize = 4;

/// The keys a wrapped result line's later pieces start with.
const CONTINUATION_KEYS: [&str; 8] = [
    "XferType:",
    "Threads:",
    "DataSetSize:",
    "IOSize:",
    "Throughput:",
    "Avg_Latency:",
    "ops:",
    "IoDepth:",
];

/// Rows kept (a sweep of every size and thread count on 8 GPUs is a few hundred).
const MAX_ROWS: usize = 4096;

/// GPU-direct within this share of CPU→GPU (either way) cannot tell a direct path from a
/// bounce buffer.
const SAME_PATH_PCT: f64 = 5.0;

/// One figure of S4: the GPU (`None`: the output named none), the name, the value.
pub type GdsFigure = (Option<u32>, String, f64);

impl GdsioParser {
    /// A parser at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line: the gdsio run it finished, with its GPU, if it was one (kept: at most
    /// [`MAX_ROWS`]).
    pub fn push(&mut self, line: &str) -> Option<(Option<u32>, &GdsioRow)> {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("== gpu ") {
            // A wrapped result held is the last GPU's.
            self.flush_wrapped();
            self.gpu = rest.trim().parse().ok();
            return None;
        }
        if t == "gds_dir: per-numa-node" {
            self.per_numa_dirs = true;
            return None;
        }
        if let Some(rest) = t.strip_prefix("gds_dir: gpu ") {
            if let Some(g) = rest.split_whitespace().next().and_then(|g| g.parse().ok())
                && self.no_own_dir.len() < MAX_GPUS
            {
                self.no_own_dir.push(g);
            }
            return None;
        }
        if let Some(rest) = t.strip_prefix("numa: gpu ") {
            self.read_numa(rest);
            return None;
        }
        if let Some(rest) = t.strip_prefix("nvfs before:") {
            if self.nvfs.len() < MAX_GPUS {
                self.nvfs.push((self.gpu, NvfsReads::parse(rest), None));
            }
            return None;
        }
        if let Some(rest) = t.strip_prefix("cufile stats:") {
            if self.cufile.len() < MAX_GPUS {
                self.cufile.push((self.gpu, CufileReads::parse(rest)));
            }
            return None;
        }
        if let Some((gpu, reads)) = CufileReads::gds_stats_line(t) {
            if self.cufile.len() < MAX_GPUS {
                self.cufile.push((Some(gpu), reads));
            }
            return None;
        }
        if let Some(rest) = t.strip_prefix("nvfs after:") {
            if let Some(last) = self
                .nvfs
                .last_mut()
                .filter(|l| l.0 == self.gpu && l.2.is_none())
            {
                last.2 = Some(NvfsReads::parse(rest));
            }
            return None;
        }
        let line = self.unwrap(t)?;
        let row = gdsio_row(&line).filter(|_| self.rows.len() < MAX_ROWS)?;
        self.rows.push((self.gpu, row));
        self.rows.last().map(|(g, r)| (*g, r))
    }

    /// The result line `t` completes: itself, or a wrapped one joined once its last piece
    /// (`total_time …`) came. A piece that starts with none of gdsio's keys ends the wait:
    /// the held start is read as it is (a row without its throughput is none).
    fn unwrap(&mut self, t: &str) -> Option<String> {
        if let Some((held, n)) = self.wrapped.take() {
            // A piece goes on where the last left off: with one of gdsio's keys, or with the
            // value of a key the last piece ended on (`Avg_Latency:` / `996.09 usecs …`).
            let continues = CONTINUATION_KEYS.iter().any(|k| t.starts_with(k))
                || (held.ends_with(':')
                    && t.split_whitespace()
                        .next()
                        .is_some_and(|w| finite(w).is_some()));
            if n < MAX_WRAPPED_LINES && continues {
                let joined = format!("{held} {t}");
                if t.contains("total_time") || t.contains("total_latency") {
                    return Some(joined);
                }
                self.wrapped = Some((joined, n + 1));
                return None;
            }
            self.wrapped = Some((held, n));
            self.flush_wrapped();
        }
        // A result's start without its throughput: a document wrapped it.
        if t.starts_with("IoType:") && t.contains("XferType:") && !t.contains("Throughput:") {
            self.wrapped = Some((t.to_string(), 1));
            return None;
        }
        Some(t.to_string())
    }

    /// A wrapped result whose pieces stopped coming: read as it stands (kept for the figures;
    /// a result without its throughput is none).
    fn flush_wrapped(&mut self) {
        if let Some((held, _)) = self.wrapped.take()
            && self.rows.len() < MAX_ROWS
            && let Some(row) = gdsio_row(&held)
        {
            self.rows.push((self.gpu, row));
        }
    }

    /// The end of the output: a wrapped result still held is read as it stands.
    pub fn finish(&mut self) -> Option<(Option<u32>, &GdsioRow)> {
        let (held, _) = self.wrapped.take()?;
        let row = gdsio_row(&held).filter(|_| self.rows.len() < MAX_ROWS)?;
        self.rows.push((self.gpu, row));
        self.rows.last().map(|(g, r)| (*g, r))
    }

    /// `IDX GPU_NODE file FILE_NODES DEV` (`3 0 file 0,1 md0`): the file's device may be an
    /// array whose members sit on several nodes; a node the machine could not tell is `?`, and
    /// `-1` is a machine of one NUMA domain.
    fn read_numa(&mut self, rest: &str) {
        let w: Vec<&str> = rest.split_whitespace().collect();
        let (Some(gpu), Some(&"file")) = (w.first().and_then(|g| g.parse::<u32>().ok()), w.get(2))
        else {
            return;
        };
        let gpu_node = w.get(1).and_then(|n| n.parse::<i64>().ok());
        let file_nodes: Vec<i64> = w
            .get(3)
            .map(|l| {
                l.split(',')
                    .filter_map(|n| n.trim().parse::<i64>().ok())
                    .take(MAX_GPUS)
                    .collect()
            })
            .unwrap_or_default();
        let dev = w.get(4..).map(|d| d.join(" ")).unwrap_or_default();
        if self.numa.len() < MAX_GPUS {
            self.numa.push((gpu, gpu_node, file_nodes, cut(&dev)));
        }
    }

    /// The figures: per GPU and transfer/IO type, peak GiB/s and best latency; GPU-direct as a
    /// percentage of CPU→GPU.
    pub fn figures(&self) -> Vec<GdsFigure> {
        let mut out: Vec<GdsFigure> = Vec::new();
        let mut put = |gpu: Option<u32>, name: String, v: f64, higher: bool| match out
            .iter_mut()
            .find(|(g, n, _)| *g == gpu && *n == name)
        {
            Some(e) if higher => e.2 = e.2.max(v),
            Some(e) => e.2 = e.2.min(v),
            None => out.push((gpu, name, v)),
        };
        for (gpu, r) in &self.rows {
            let (x, io) = (r.xfer.to_ascii_lowercase(), r.io.to_ascii_lowercase());
            if let Some(v) = r.gib_per_s {
                put(*gpu, format!("gdsio_gib_per_s_{x}_{io}"), v, true);
            }
            if let Some(v) = r.avg_latency_us {
                put(*gpu, format!("gdsio_avg_latency_us_{x}_{io}"), v, false);
            }
        }
        for (gpu, io, pct, _) in self.direct_vs_cpu() {
            put(
                gpu,
                format!("gdsio_direct_pct_of_cpu_gpu_{}", io.to_ascii_lowercase()),
                pct,
                false,
            );
        }
        out
    }

    /// Each GPU-direct run beside the CPU→GPU run of the same GPU, IO type, size and threads:
    /// (GPU, IO type, GPU-direct as % of CPU→GPU, the two rates in words).
    fn direct_vs_cpu(&self) -> Vec<(Option<u32>, String, f64, String)> {
        let mut out = Vec::new();
        for (gpu, d) in self.rows.iter().filter(|(_, r)| r.xfer == "GPUD") {
            let Some(direct) = d.gib_per_s else { continue };
            let cpu = self.rows.iter().find(|(g, c)| {
                // A variable size (`4-32-1(KiB)`) has no size to match: not compared.
                g == gpu
                    && c.xfer == "CPU_GPU"
                    && c.io == d.io
                    && d.io_size_kib.is_some()
                    && c.io_size_kib == d.io_size_kib
                    && c.threads == d.threads
            });
            if let Some(cpu) = cpu.and_then(|(_, c)| c.gib_per_s).filter(|c| *c > 0.0) {
                let size = d
                    .io_size_kib
                    .map(|k| format!("{k} KiB"))
                    .unwrap_or_else(|| "variable size".into());
                out.push((
                    *gpu,
                    d.io.clone(),
                    100.0 * direct / cpu,
                    format!(
                        "{} {size} x{}: GPU-direct {direct:.2} GiB/s, CPU→GPU {cpu:.2} GiB/s",
                        d.io,
                        d.threads.unwrap_or(0)
                    ),
                ));
            }
        }
        out
    }

    /// The checks S4 judges: each GPU's NUMA pairing with its file's device, and GPU-direct
    /// against CPU→GPU (within 5 % either way is a WARN: compat mode, or a device that limits
    /// both paths alike; slower is a WARN too).
    pub fn checks(&self) -> Vec<GdsCheckLine> {
        let mut out = Vec::new();
        if self.numa.is_empty() {
            out.push((
                "gds-numa",
                CheckStatus::Unknown,
                "the output names no GPU's NUMA node nor its file's (S4's command prints them)"
                    .to_string(),
            ));
        }
        let pairs = self.direct_vs_cpu();
        if pairs.is_empty() {
            out.push((
                "gds-direct",
                CheckStatus::Unknown,
                "no CPU→GPU run beside a GPU-direct one of the same IO type, size and threads: GPU-direct is not set against the CPU path".to_string(),
            ));
        }
        out.extend(self.numa.iter().map(|n| self.numa_check(n)));
        out.extend(self.gpu_read_checks());
        out.extend(self.path_checks());
        out.extend(
            pairs
                .into_iter()
                .map(|(gpu, io, pct, words)| self.direct_check(gpu, &io, pct, &words)),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdsio_lines_of_every_release_shape() {
        let r = gdsio_row("IoType: READ XferType: GPUD Threads: 8 DataSetSize: 8363008/8388608(KiB) IOSize: 1024(KiB) Throughput: 6.816723 GiB/sec, Avg_Latency: 1138.933194 usecs ops: 8167 total_time 1.170003 secs").expect("row");
        assert_eq!(
            (r.io.as_str(), r.xfer.as_str(), r.threads, r.io_size_kib),
            ("READ", "GPUD", Some(8), Some(1024))
        );
        assert_eq!(
            (r.gib_per_s, r.avg_latency_us, r.ops),
            (Some(6.816723), Some(1138.933194), Some(8167))
        );
        let old = gdsio_row("IoType: WRITE XferType: GPUD Threads: 2  DataSetSize: 1073442816/1073741824 IOSize: 4(KiB),Throughput: 0.167347 GiB/sec, Avg_Latency: 45.588810 usecs ops: 071 total_latency 5973939.000000").expect("beta");
        assert_eq!(
            (old.io_size_kib, old.gib_per_s, old.ops),
            (Some(4), Some(0.167347), Some(71))
        );
        let gb = gdsio_row("IoType: WRITE XferType: GPUD Threads: 1 DataSetSize: 1073741824/1073741824 IOSize: 4(KB),Throughput: 0.004727 GB/sec, Avg_Latency: 807.026154 usecs ops: 262144 total_time 211562847.000000 usecs").expect("GB");
        assert_eq!(
            (gb.gib_per_s, gb.io_size_kib),
            (None, None),
            "GB/sec is not read as GiB/s"
        );
        let batch = gdsio_row("WRITE XferType: GPU_BATCH Threads: 1 IoDepth: 8 DataSetSize: 524206080/8388608(KiB) IOSize: 16384(KiB) Throughput: 1.664916 GiB/sec, Avg_Latency: 9383.000000 usecs ops: 31995 total_time 300.268538 secs").expect("batch");
        assert_eq!((batch.io.as_str(), batch.io_depth), ("WRITE", Some(8)));
        assert!(gdsio_row("IoType: READ XferType: $(rm) Throughput: 1 GiB/sec").is_none());
        let absurd = gdsio_row("IoType: READ XferType: GPUD Threads: 8 IOSize: 1024(KiB) Throughput: 90000.5 GiB/sec, Avg_Latency: 1 usecs").expect("row");
        assert_eq!(
            (absurd.gib_per_s, absurd.not_a_rate),
            (None, Some(90000.5)),
            "no GPU reads 90 TB/s"
        );
        let mut p = GdsioParser::new();
        p.push("== gpu 0");
        p.push("IoType: READ XferType: GPUD Threads: 8 IOSize: 1024(KiB) Throughput: 90000.5 GiB/sec, Avg_Latency: 1 usecs");
        let read = p
            .checks()
            .into_iter()
            .find(|c| c.0 == "gds-gpu-read")
            .expect("gds-gpu-read");
        assert_eq!(read.1, CheckStatus::Unknown, "n/a, not evidence: {read:?}");
        assert!(
            p.figures()
                .iter()
                .all(|f| f.1 != "gdsio_gib_per_s_gpud_read")
        );
        let mut v = GdsioParser::new();
        for l in [
            "IoType: WRITE XferType: GPUD Threads: 4 IOSize: 4-32-1(KiB) Throughput: 0.04 GiB/sec, Avg_Latency: 996 usecs",
            "IoType: WRITE XferType: CPU_GPU Threads: 4 IOSize: 16384-32768-4096(KiB) Throughput: 6.1 GiB/sec, Avg_Latency: 60200 usecs",
        ] {
            v.push(l);
        }
        assert!(
            v.figures()
                .iter()
                .all(|f| !f.1.starts_with("gdsio_direct_pct")),
            "variable sizes are not compared"
        );
        assert!(
            gdsio_row("IoType: READ XferType: GPUD Throughput: NaN GiB/sec")
                .is_some_and(|r| r.gib_per_s.is_none())
        );
    }

    #[test]
    fn gpu_direct_is_set_against_cpu_to_gpu_of_the_same_size_and_threads() {
        let mut p = GdsioParser::new();
        p.push("== gpu 3");
        p.push("numa: gpu 3 3 file 1 nvme2n1");
        p.push("numa: gpu 4 0 file 0,1 md0");
        for l in [
            "IoType: READ XferType: GPUD Threads: 8 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 6.816723 GiB/sec, Avg_Latency: 1 usecs ops: 1 total_time 1 secs",
            "IoType: READ XferType: CPUONLY Threads: 8 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 6.844410 GiB/sec, Avg_Latency: 1 usecs ops: 1 total_time 1 secs",
            "IoType: READ XferType: CPU_GPU Threads: 8 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 6.808443 GiB/sec, Avg_Latency: 1 usecs ops: 1 total_time 1 secs",
        ] {
            p.push(l);
        }
        let figs = p.figures();
        assert_eq!(figs.len(), 7, "{figs:?}");
        let pct = figs
            .iter()
            .find(|f| f.1 == "gdsio_direct_pct_of_cpu_gpu_read")
            .expect("pct");
        assert_eq!(pct.0, Some(3));
        assert!((pct.2 - 100.12).abs() < 0.01, "{pct:?}");
        let checks = p.checks();
        assert_eq!(checks[0].1, CheckStatus::Warn, "{checks:?}");
        assert_eq!(
            checks[1].1,
            CheckStatus::Ok,
            "a member of md0 on node 0: {checks:?}"
        );
        assert!(
            checks.contains(&(
                "gds-gpu-read",
                CheckStatus::Failed,
                "GPU4: no GPU-direct read result (gdsio failed or printed none)".to_string()
            )),
            "{checks:?}"
        );
        assert!(
            checks[0]
                .2
                .contains("GPU3 on NUMA node 3 reads nvme2n1 on NUMA node 1"),
            "{checks:?}"
        );
        let direct = checks
            .iter()
            .find(|c| c.0 == "gds-direct")
            .expect("gds-direct");
        assert_eq!(
            direct.1,
            CheckStatus::Warn,
            "6.82 against 6.81 GiB/s cannot tell"
        );
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(lines in proptest::collection::vec(".{0,300}", 0..20)) {
            let mut p = GdsioParser::new();
            for l in &lines {
                p.push(l);
            }
            let _ = p.figures();
            let _ = p.checks();
        }
    }
}
