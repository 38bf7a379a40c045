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

use super::gds::{GdsCheckLine, MAX_GPUS, cut};
use crate::model::phase::CheckStatus;

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
    if !line.contains("XferType:") || !line.contains("Throughput:") {
        return None;
    }
    let spaced = line.replace(',', " ");
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
}

/// cuFile's own count of one GPU's reads, from libcufile's stats (`profile.cufile_stats` in
/// cufile.json) as `gds_stats -p PID -l 3` prints them per GPU: `GPU 2 Read: bw=6.32129
/// util(%)=797 n=78193 posix=0 unalign=0 r_sparse=0 r_inline=0 err=0 MiB=78193 Write: …`
/// (stats version 3; version 4 adds `dr=`). `posix=` counts the reads cuFile did through its
/// POSIX path, a CPU bounce buffer: this settles compat mode whatever the back end (P2PDMA and
/// dma-buf reads that nvidia_fs never counts included), and needs no root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CufileReads {
    /// The read counts.
    Counted {
        /// `n=`: reads.
        n: u64,
        /// `posix=`: reads through the POSIX path (compat mode).
        posix: u64,
        /// `MiB=`: MiB read.
        mib: u64,
    },
    /// No count, and why, as S4's command said (gds_stats missing, stats off, the run over
    /// before it was sampled).
    Unavailable(String),
}

impl CufileReads {
    /// Read what S4's command printed after `cufile stats:`: a `GPU N Read:` line, or why
    /// there is none.
    pub fn parse(text: &str) -> Self {
        let t = text.trim();
        let counts = t
            .split_once("Read:")
            .map(|(_, r)| r.split("Write:").next().unwrap_or(r))
            .and_then(|reads| {
                let field = |key: &str| {
                    reads
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix(key))
                        .and_then(|v| v.parse::<u64>().ok())
                };
                Some(CufileReads::Counted {
                    n: field("n=")?,
                    posix: field("posix=")?,
                    mib: field("MiB=").unwrap_or(0),
                })
            });
        counts.unwrap_or_else(|| {
            let why = t.strip_prefix("none").map(str::trim).unwrap_or(t);
            let why = why
                .strip_prefix('(')
                .and_then(|w| w.strip_suffix(')'))
                .unwrap_or(why);
            CufileReads::Unavailable(cut(if why.is_empty() {
                "no count printed"
            } else {
                why
            }))
        })
    }

    /// A `GPU N Read: …` line of gds_stats itself (a saved printout): the GPU and its count,
    /// when it read anything (gds_stats lists every GPU, most of them idle).
    pub fn gds_stats_line(line: &str) -> Option<(u32, CufileReads)> {
        let rest = line.trim().strip_prefix("GPU ")?;
        let (gpu, tail) = rest.split_once(' ')?;
        let gpu: u32 = gpu.parse().ok()?;
        if !tail.trim_start().starts_with("Read:") {
            return None;
        }
        match CufileReads::parse(tail) {
            c @ CufileReads::Counted { n, posix, .. } if n > 0 || posix > 0 => Some((gpu, c)),
            _ => None,
        }
    }
}

/// nvidia_fs's `Reads` line of `/proc/driver/nvidia-fs/stats` (nvidia-fs `nvfs-stat.c`):
/// `Reads : n=%lu ok=%lu err=%u readMiB=%lu io_state_err=%u` with IO stats on, `Reads : err=%u
/// io_state_err=%u` with them off (the default), nothing where the module is not loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvfsReads {
    /// Reads served and MiB read so far.
    Counted {
        /// `n=`.
        n: u64,
        /// `readMiB=`.
        mib: u64,
    },
    /// The module's IO stats are off (`rw_stats_enabled=0`).
    StatsOff,
    /// No stats file: nvidia_fs is not loaded.
    NoModule,
}

impl NvfsReads {
    /// Read what the S4 command printed after `nvfs before:` / `nvfs after:`.
    pub fn parse(text: &str) -> Self {
        let t = text.trim();
        if t.is_empty() {
            return NvfsReads::NoModule;
        }
        let field = |key: &str| {
            t.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|v| v.parse::<u64>().ok())
        };
        // `readMiB=` (nvfs-stat.c today), `readmb=` in 1.0's module.
        match (field("n="), field("readMiB=").or_else(|| field("readmb="))) {
            (Some(n), mib) => NvfsReads::Counted {
                n,
                mib: mib.unwrap_or(0),
            },
            _ => NvfsReads::StatsOff,
        }
    }
}

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
        let row = gdsio_row(t).filter(|_| self.rows.len() < MAX_ROWS)?;
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

impl GdsioParser {
    /// One GPU's NUMA pairing with its file's device.
    fn numa_check(
        &self,
        (gpu, g, files, dev): &(u32, Option<i64>, Vec<i64>, String),
    ) -> GdsCheckLine {
        let list = files
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        match g {
            Some(-1) if !files.is_empty() && files.iter().all(|f| *f == -1) => (
                "gds-numa",
                CheckStatus::Ok,
                format!("GPU{gpu} and {dev}: one NUMA domain"),
            ),
            Some(g) if *g >= 0 && files.contains(g) => (
                "gds-numa",
                CheckStatus::Ok,
                format!("GPU{gpu} and {dev} on NUMA node {g}"),
            ),
            // With a directory per NUMA node, the site said each socket has its own
            // device: a GPU across the interconnect from its file is a fault.
            Some(g)
                if self.per_numa_dirs
                    && !self.no_own_dir.contains(gpu)
                    && *g >= 0
                    && !files.is_empty()
                    && files.iter().all(|f| *f >= 0) =>
            {
                (
                    "gds-numa",
                    CheckStatus::Failed,
                    format!(
                        "GPU{gpu} on NUMA node {g} reads {dev} on NUMA node {list}, though gds_dir names node {g}'s own directory: its device sits on another node"
                    ),
                )
            }
            // A WARN, not a FAIL: one gds_dir per node puts one socket's GPUs across the
            // interconnect from it by layout, not by fault.
            Some(g) if *g >= 0 && !files.is_empty() && files.iter().all(|f| *f >= 0) => (
                "gds-numa",
                CheckStatus::Warn,
                if self.no_own_dir.contains(gpu) {
                    format!(
                        "GPU{gpu} on NUMA node {g} reads {dev} on NUMA node {list}: gds_dir names no directory for node {g}, so the first was used (add one where node {g} has a GDS device)"
                    )
                } else {
                    format!(
                        "GPU{gpu} on NUMA node {g} reads {dev} on NUMA node {list}: every transfer crosses the CPU interconnect (where each socket has a GDS device, gds_dir can name a directory per NUMA node: \"0=/mnt/a 1=/mnt/b\")"
                    )
                },
            ),
            _ => (
                "gds-numa",
                CheckStatus::Unknown,
                format!(
                    "GPU{gpu}: NUMA node of the GPU ({}) or of {dev} ({}) not known (a network file system, or no sysfs node)",
                    g.map_or("?".into(), |v| v.to_string()),
                    if list.is_empty() {
                        "?".to_string()
                    } else {
                        list.clone()
                    }
                ),
            ),
        }
    }

    /// Every GPU the command named must have a GPU-direct read.
    fn gpu_read_checks(&self) -> Vec<GdsCheckLine> {
        let mut out = Vec::new();
        let mut named: Vec<u32> = self.rows.iter().filter_map(|(g, _)| *g).collect();
        named.extend(self.numa.iter().map(|n| n.0));
        named.sort_unstable();
        named.dedup();
        named.truncate(MAX_GPUS);
        for g in named {
            let reads = || {
                self.rows
                    .iter()
                    .filter(move |(gpu, r)| *gpu == Some(g) && r.xfer == "GPUD" && r.io == "READ")
            };
            if reads().any(|(_, r)| r.gib_per_s.is_some()) {
                continue;
            }
            out.push(match reads().find_map(|(_, r)| r.not_a_rate) {
                Some(v) => (
                    "gds-gpu-read",
                    CheckStatus::Unknown,
                    format!("GPU{g}: gdsio printed {v} GiB/s for its GPU-direct read, more than any path into one GPU carries ({MAX_GIB_PER_S} GiB/s): not a reading (n/a)"),
                ),
                None => (
                    "gds-gpu-read",
                    CheckStatus::Failed,
                    format!("GPU{g}: no GPU-direct read result (gdsio failed or printed none)"),
                ),
            });
        }
        out
    }

    /// One GPU-direct run set against CPU→GPU's: `pct` is GPU-direct as % of CPU→GPU.
    fn direct_check(&self, gpu: Option<u32>, io: &str, pct: f64, words: &str) -> GdsCheckLine {
        let who = gpu.map(|g| format!("GPU{g} ")).unwrap_or_default();
        if pct >= 100.0 + SAME_PATH_PCT {
            (
                "gds-direct",
                CheckStatus::Ok,
                format!("{who}{words} ({pct:.0} %)"),
            )
        } else if pct > 100.0 - SAME_PATH_PCT && io == "READ" && self.cufile_direct(gpu) {
            // cuFile counted no read through POSIX: the path is direct, and the same
            // rate is the device's limit (a single NVMe limits both paths alike).
            (
                "gds-direct",
                CheckStatus::Ok,
                format!(
                    "{who}{words} ({pct:.0} %): the same rate either way, with every read direct by cuFile's count: the device limits both paths"
                ),
            )
        } else if pct > 100.0 - SAME_PATH_PCT {
            (
                "gds-direct",
                CheckStatus::Warn,
                format!(
                    "{who}{words} ({pct:.0} %): the same rate either way is compat mode (a CPU bounce buffer) or a device that limits both paths; T0's gds-compat-mode and nvidia_fs's stats tell which"
                ),
            )
        } else {
            (
                "gds-direct",
                CheckStatus::Warn,
                format!(
                    "{who}{words} ({pct:.0} %): GPU-direct slower than through the CPU: compat mode (cuFile bouncing through its own POSIX buffers) or a GPU-direct path across the interconnect; T0's gds-compat-mode and the gds-path check tell which"
                ),
            )
        }
    }

    /// Whether cuFile counted this GPU's GPU-direct reads, none of them through POSIX.
    fn cufile_direct(&self, gpu: Option<u32>) -> bool {
        self.cufile
            .iter()
            .rev()
            .find(|c| c.0 == gpu)
            .is_some_and(|c| matches!(c.1, CufileReads::Counted { n, posix: 0, .. } if n > 0))
    }

    /// Which path each GPU's GPU-direct read took: cuFile's own count where S4 could read it
    /// (it says compat mode outright, whatever the back end), else nvidia_fs's.
    fn path_checks(&self) -> Vec<GdsCheckLine> {
        if self.nvfs.is_empty() && self.cufile.is_empty() {
            return vec![(
                "gds-path",
                CheckStatus::Unknown,
                "no cuFile or nvidia_fs count around a GPU-direct read (S4's command prints them): which path the data took is not proven".to_string(),
            )];
        }
        let mut gpus: Vec<Option<u32>> = Vec::new();
        for g in self
            .cufile
            .iter()
            .map(|c| c.0)
            .chain(self.nvfs.iter().map(|n| n.0))
        {
            if !gpus.contains(&g) {
                gpus.push(g);
            }
        }
        gpus.into_iter()
            .map(|gpu| {
                let cufile = self.cufile.iter().rev().find(|c| c.0 == gpu).map(|c| &c.1);
                let nvfs = self.nvfs.iter().rev().find(|n| n.0 == gpu);
                match (cufile, nvfs) {
                    (Some(CufileReads::Counted { n, posix, mib }), _) if *n > 0 || *posix > 0 => {
                        judge_cufile(gpu, *n, *posix, *mib)
                    }
                    (cufile, Some((_, before, after))) => {
                        let (name, status, words) = judge_nvfs(gpu, *before, *after);
                        let why = match cufile {
                            Some(CufileReads::Unavailable(why)) => {
                                format!(" (cuFile's count: {why})")
                            }
                            Some(CufileReads::Counted { .. }) => {
                                " (cuFile counted no read)".to_string()
                            }
                            None => String::new(),
                        };
                        (name, status, format!("{words}{why}"))
                    }
                    (cufile, None) => (
                        "gds-path",
                        CheckStatus::Unknown,
                        format!(
                            "{}: which path the GPU-direct read took is not proven ({})",
                            who(gpu),
                            match cufile {
                                Some(CufileReads::Unavailable(why)) =>
                                    format!("cuFile's count: {why}"),
                                _ => "cuFile counted no read".to_string(),
                            }
                        ),
                    ),
                }
            })
            .collect()
    }
}

/// `GPU3`, or `the GPU` where the output named none.
fn who(gpu: Option<u32>) -> String {
    gpu.map(|g| format!("GPU{g}"))
        .unwrap_or_else(|| "the GPU".into())
}

/// What cuFile itself counted over one GPU's GPU-direct read: reads through its POSIX path
/// went through a CPU bounce buffer (compat mode), whatever gdsio's `XferType` says.
fn judge_cufile(gpu: Option<u32>, n: u64, posix: u64, mib: u64) -> GdsCheckLine {
    let who = who(gpu);
    if posix == 0 {
        (
            "gds-path",
            CheckStatus::Ok,
            format!(
                "cuFile counted {n} reads ({mib} MiB) for {who}, none through its POSIX path: the path is direct"
            ),
        )
    } else if posix.saturating_mul(2) > n {
        // A FAIL, not a WARN as an uncounted nvidia_fs read is: cuFile says it outright. Most
        // reads through POSIX is compat mode for the file, a few unaligned ones aside.
        (
            "gds-path",
            CheckStatus::Failed,
            format!(
                "cuFile read {who}'s GPU-direct run through its POSIX path ({posix} POSIX of {n} reads): compat mode, a CPU bounce buffer, not GPUDirect Storage (T0's gds-compat-mode and gds-backend say why)"
            ),
        )
    } else {
        (
            "gds-path",
            CheckStatus::Warn,
            format!(
                "cuFile read {posix} of {who}'s {n} reads through its POSIX path (a CPU bounce buffer): unaligned IO, or a file it could not read direct"
            ),
        )
    }
}

/// What nvidia_fs counted over one GPU's GPU-direct read: proof of the path, where the IO
/// stats are on. A GPU-direct read that nvidia_fs never saw went through a CPU bounce buffer
/// (compat mode), whatever gdsio's `XferType` says.
fn judge_nvfs(gpu: Option<u32>, before: NvfsReads, after: Option<NvfsReads>) -> GdsCheckLine {
    let who = who(gpu);
    match (before, after) {
        (NvfsReads::Counted { n: n0, mib: m0 }, Some(NvfsReads::Counted { n: n1, mib: m1 }))
            if n1 > n0 =>
        {
            (
                "gds-path",
                CheckStatus::Ok,
                format!(
                    "nvidia_fs served {} reads ({} MiB) during {who}'s GPU-direct read: the path is direct",
                    n1 - n0,
                    m1.saturating_sub(m0)
                ),
            )
        }
        // Not a FAIL: P2PDMA, dma-buf and C2C paths are direct without nvidia_fs counting them
        // (T0's gdscheck rows say whether the node has one).
        (NvfsReads::Counted { n: n0, .. }, Some(NvfsReads::Counted { n: n1, .. })) => (
            "gds-path",
            CheckStatus::Warn,
            format!(
                "{who}'s GPU-direct read moved nothing through nvidia_fs (reads {n0} before, {n1} after): a CPU bounce buffer (compat mode), unless the node reads direct through P2PDMA, dma-buf or C2C (T0's gds-backend names the modes)"
            ),
        ),
        (NvfsReads::StatsOff, _) | (_, Some(NvfsReads::StatsOff)) => (
            "gds-path",
            CheckStatus::Unknown,
            format!(
                "{who}: nvidia_fs's IO stats are off, so it did not count the read (as root: echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled; or install gds_stats, which S4 reads cuFile's own count with)"
            ),
        ),
        (NvfsReads::NoModule, _) | (_, Some(NvfsReads::NoModule)) => (
            "gds-path",
            CheckStatus::Unknown,
            format!(
                "{who}: no /proc/driver/nvidia-fs/stats (nvidia_fs not loaded): a direct path can only be P2PDMA, else it is compat mode"
            ),
        ),
        (_, None) => (
            "gds-path",
            CheckStatus::Unknown,
            format!("{who}: the output ended before nvidia_fs's count after the read"),
        ),
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

    /// nvidia_fs's own count settles what the rates cannot: a GPU-direct read it never saw
    /// went through the bounce buffer.
    #[test]
    fn nvidia_fs_counts_prove_the_path_or_say_why_not() {
        let on = "Reads\t\t\t\t: n=120 ok=120 err=0 readMiB=7680 io_state_err=0";
        assert_eq!(
            NvfsReads::parse(on),
            NvfsReads::Counted { n: 120, mib: 7680 }
        );
        assert_eq!(
            NvfsReads::parse("Reads : err=0 io_state_err=0"),
            NvfsReads::StatsOff
        );
        assert_eq!(NvfsReads::parse(""), NvfsReads::NoModule);
        let run = |before: &str, after: &str| {
            let mut p = GdsioParser::new();
            for l in [
                "== gpu 2",
                &format!("nvfs before: {before}"),
                &format!("nvfs after: {after}"),
            ] {
                p.push(l);
            }
            p.checks()
                .into_iter()
                .find(|c| c.0 == "gds-path")
                .expect("gds-path")
        };
        let direct = run(
            on,
            "Reads : n=8312 ok=8312 err=0 readMiB=531968 io_state_err=0",
        );
        assert_eq!(direct.1, CheckStatus::Ok);
        assert!(
            direct.2.contains("8192 reads (524288 MiB) during GPU2"),
            "{direct:?}"
        );
        let compat = run(on, on);
        assert_eq!(
            compat.1,
            CheckStatus::Warn,
            "P2PDMA, dma-buf and C2C are not counted"
        );
        assert!(compat.2.contains("CPU bounce buffer"), "{compat:?}");
        assert_eq!(
            run(
                "Reads : err=0 io_state_err=0",
                "Reads : err=0 io_state_err=0"
            )
            .1,
            CheckStatus::Unknown
        );
        assert_eq!(run("", "").1, CheckStatus::Unknown);
    }

    /// cuFile's own count settles compat mode where nvidia_fs cannot: the two real `gds_stats
    /// -l 3` printouts of NVIDIA's guides (stats versions 3 and 4) read GPU2's 78193 and GPU0's
    /// 3651 reads with none through POSIX; idle GPUs are not judged.
    #[test]
    fn cufile_counts_prove_the_path_from_real_gds_stats_printouts() {
        for (file, gpu, n, mib) in [
            (
                "gds-stats-l3-version-3-dgx2-gpu2-read-doc-elided-nvidia-benchmarking-guide.txt",
                2,
                78193,
                78193,
            ),
            (
                "gds-stats-l3-version-4-spectrum-scale-read-rdma-mlx5-nvidia-troubleshooting-guide.txt",
                0,
                3651,
                7302,
            ),
        ] {
            let text = std::fs::read_to_string(format!(
                "{}/tests/corpus/gdsio/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("corpus file");
            let mut p = GdsioParser::new();
            for l in text.lines() {
                p.push(l);
            }
            let paths: Vec<GdsCheckLine> = p
                .checks()
                .into_iter()
                .filter(|c| c.0 == "gds-path")
                .collect();
            assert_eq!(paths.len(), 1, "{file}: only the GPU that read: {paths:?}");
            assert_eq!(paths[0].1, CheckStatus::Ok, "{paths:?}");
            assert!(
                paths[0].2.contains(&format!(
                    "cuFile counted {n} reads ({mib} MiB) for GPU{gpu}"
                )),
                "{paths:?}"
            );
        }
        // S4's own lines: the same per-GPU line after `cufile stats:`. The POSIX counts
        // below are made by hand in that format (no public printout shows compat mode).
        let run = |lines: &[&str]| {
            let mut p = GdsioParser::new();
            for l in lines {
                p.push(l);
            }
            p.checks()
                .into_iter()
                .find(|c| c.0 == "gds-path")
                .expect("gds-path")
        };
        let compat = run(&[
            "== gpu 1",
            "nvfs before: ",
            "cufile stats: GPU 1 Read: bw=3.1 util(%)=99 n=4096 posix=4096 unalign=0 dr=0 r_sparse=0 r_inline=0 err=0 MiB=4096 Write: bw=0 util(%)=0 n=0 posix=0 unalign=0 dr=0 err=0 MiB=0 BufRegister: n=8 err=0 free=0 MiB=8",
            "nvfs after: ",
        ]);
        assert_eq!(compat.1, CheckStatus::Failed, "{compat:?}");
        assert!(compat.2.contains("compat mode"), "{compat:?}");
        let some = run(&[
            "== gpu 1",
            "cufile stats: GPU 1 Read: bw=6 n=4096 posix=12 MiB=4000",
        ]);
        assert_eq!(some.1, CheckStatus::Warn, "{some:?}");
        let most = run(&[
            "== gpu 1",
            "cufile stats: GPU 1 Read: bw=3 n=4096 posix=4000 MiB=4000",
        ]);
        assert_eq!(most.1, CheckStatus::Failed, "{most:?}");
        // gds_stats missing, and nvidia_fs stats off: not proven, both reasons said.
        let off = run(&[
            "== gpu 0",
            "nvfs before: Reads : err=0 io_state_err=0",
            "cufile stats: none (gds_stats not installed)",
            "nvfs after: Reads : err=0 io_state_err=0",
        ]);
        assert_eq!(off.1, CheckStatus::Unknown, "{off:?}");
        assert!(
            off.2.contains("IO stats are off") && off.2.contains("gds_stats not installed"),
            "{off:?}"
        );
        // A hostile reason is stripped and cut.
        let hostile = run(&[
            "== gpu 0",
            &format!("cufile stats: none (\u{1b}[2J{})", "x".repeat(10_000)),
        ]);
        assert!(
            !hostile.2.contains('\u{1b}') && hostile.2.len() < 1_000,
            "{hostile:?}"
        );
    }

    /// A GPU across the interconnect from its file is the layout with one `gds_dir`, a fault
    /// where the plan names a directory per NUMA node; the same rate either way is the
    /// device's limit, not compat mode, where cuFile counted every read direct.
    #[test]
    fn numa_pairing_and_the_same_rate_are_judged_by_what_the_site_said_and_counted() {
        let numa = |lines: &[&str]| {
            let mut p = GdsioParser::new();
            for l in lines {
                p.push(l);
            }
            p.checks()
                .into_iter()
                .find(|c| c.0 == "gds-numa")
                .expect("gds-numa")
        };
        let one_dir = numa(&["== gpu 5", "numa: gpu 5 1 file 0 nvme0n1"]);
        assert_eq!(one_dir.1, CheckStatus::Warn, "{one_dir:?}");
        let per_node = numa(&[
            "gds_dir: per-numa-node",
            "== gpu 5",
            "numa: gpu 5 1 file 0 nvme0n1",
        ]);
        assert_eq!(per_node.1, CheckStatus::Failed, "{per_node:?}");
        assert!(
            per_node.2.contains("node 1's own directory"),
            "{per_node:?}"
        );
        // Node 1 has no entry of its own (sub-NUMA clustering, a socket without a device):
        // the layout, said, not a fault.
        let no_entry = numa(&[
            "gds_dir: per-numa-node",
            "== gpu 5",
            "gds_dir: gpu 5 on NUMA node 1 has no entry (the first is used)",
            "numa: gpu 5 1 file 0 nvme0n1",
        ]);
        assert_eq!(no_entry.1, CheckStatus::Warn, "{no_entry:?}");
        assert!(
            no_entry.2.contains("no directory for node 1"),
            "{no_entry:?}"
        );
        // The real 1.15 figures of one NVMe (6.82 GPU-direct, 6.81 CPU→GPU).
        let direct = |count: Option<&str>| {
            let mut p = GdsioParser::new();
            p.push("== gpu 0");
            if let Some(c) = count {
                p.push(c);
            }
            p.push("IoType: READ XferType: GPUD Threads: 8 DataSetSize: 8363008/8388608(KiB) IOSize: 1024(KiB) Throughput: 6.816723 GiB/sec, Avg_Latency: 1138.933194 usecs ops: 8167 total_time 1.170003 secs");
            p.push("IoType: READ XferType: CPU_GPU Threads: 8 DataSetSize: 8356864/8388608(KiB) IOSize: 1024(KiB) Throughput: 6.808226 GiB/sec, Avg_Latency: 1140.353180 usecs ops: 8161 total_time 1.170630 secs");
            p.checks()
                .into_iter()
                .find(|c| c.0 == "gds-direct")
                .expect("gds-direct")
        };
        assert_eq!(direct(None).1, CheckStatus::Warn);
        let counted = direct(Some(
            "cufile stats: GPU 0 Read: bw=6.8 util(%)=99 n=8167 posix=0 unalign=0 MiB=8167",
        ));
        assert_eq!(counted.1, CheckStatus::Ok, "{counted:?}");
        assert!(counted.2.contains("device limits both"), "{counted:?}");
        let compat = direct(Some(
            "cufile stats: GPU 0 Read: bw=6.8 util(%)=99 n=8167 posix=8167 unalign=0 MiB=8167",
        ));
        assert_eq!(compat.1, CheckStatus::Warn, "{compat:?}");
        // cuFile's count is of the read only: a write at the same rate either way stays a WARN.
        let mut w = GdsioParser::new();
        for l in [
            "== gpu 0",
            "cufile stats: GPU 0 Read: bw=6.8 util(%)=99 n=8167 posix=0 unalign=0 MiB=8167",
            "IoType: WRITE XferType: GPUD Threads: 8 IOSize: 1024(KiB) Throughput: 5.1 GiB/sec, Avg_Latency: 1500 usecs",
            "IoType: WRITE XferType: CPU_GPU Threads: 8 IOSize: 1024(KiB) Throughput: 5.0 GiB/sec, Avg_Latency: 1530 usecs",
        ] {
            w.push(l);
        }
        let write = w
            .checks()
            .into_iter()
            .find(|c| c.0 == "gds-direct")
            .expect("gds-direct");
        assert_eq!(write.1, CheckStatus::Warn, "{write:?}");
    }

    /// GPU-direct well below CPU→GPU warns and names compat mode among the causes: the rates
    /// are those of cuFile in compat mode against a plain read and copy on the H100 VM
    /// (tests/fixtures/h100-gds/compat-read: 2.04 and 4.34 GiB/s), written by hand as gdsio's
    /// lines with only the fields measured (no gdsio there; its latency is optional).
    #[test]
    fn gpu_direct_slower_than_the_cpu_path_warns_and_names_compat_mode() {
        let mut p = GdsioParser::new();
        for l in [
            "== gpu 0",
            "IoType: READ XferType: GPUD Threads: 1 IOSize: 8192(KiB) Throughput: 2.04 GiB/sec",
            "IoType: READ XferType: CPU_GPU Threads: 1 IOSize: 8192(KiB) Throughput: 4.34 GiB/sec",
        ] {
            p.push(l);
        }
        let slower = p
            .checks()
            .into_iter()
            .find(|c| c.0 == "gds-direct")
            .expect("gds-direct");
        assert_eq!(slower.1, CheckStatus::Warn, "{slower:?}");
        assert!(
            slower
                .2
                .contains("(47 %): GPU-direct slower than through the CPU: compat mode (cuFile bouncing through its own POSIX buffers) or a GPU-direct path across the interconnect"),
            "{slower:?}"
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
