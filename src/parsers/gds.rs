//! GPUDirect Storage, read from `gdscheck -p` (T0's `gdscheck` section when the plan sets
//! `gds = "true"`). NVIDIA publishes no source for gdscheck (its report comes from libcufile),
//! so this follows the printouts of releases 0.9 to 1.18 in `tests/corpus/gdscheck/`:
//!
//! - `GDS release version: 1.14.0.30` (`(beta)` and ` : ` spellings before 1.0).
//! - Up to 1.15: `nvidia_fs version:  2.24 libcufile version: 2.12`, or only the libcufile part
//!   when the module is not loaded. From 1.16: `nvidia_fs version:  2.27 nvidia_fs minimum
//!   version: 2.12`, or only the minimum when it is not loaded.
//! - One row per back end, `NVMe               : Supported`. Up to 1.15 the value is
//!   `Supported`/`Unsupported`; from 1.16 it is the modes cuFile can use on it: `nvfs, compat`,
//!   `dmabuf, compat`, `p2pdma, compat`, `c2c, nvfs, compat`, or `compat` alone (a CPU bounce
//!   buffer: the path is not direct). Beta releases print upper-case names (`LUSTRE`).
//! - `--rdma_device_status  : Up: 1 Down: 0` (`--rdma_dev_addr_list_status` from 1.18).
//! - `properties.use_compat_mode : true` (0/1 before 1.0), `properties.force_compat_mode`.
//! - `GPU index 0 … supports GDS, IOMMU State: Disabled`; `IOMMU: disabled` or `IOMMU:
//!   Pass-through or enabled`; `Platform verification succeeded` / `failed`.
//!
//! `gdsio` result lines (`parser = "gdsio"`), one per run, in every release the same shape but
//! for the oldest beta's:
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
//! The trap T0 has to name: with compat mode allowed, cuFile falls back to a bounce buffer
//! without failing, so a path that is not direct looks like it works and only runs slower.

use crate::model::phase::CheckStatus;

/// Back-end rows kept at most (gdscheck prints about 15).
const MAX_BACKENDS: usize = 64;
/// Properties kept at most (gdscheck prints about 40).
const MAX_PROPERTIES: usize = 256;
/// GPUs kept at most.
const MAX_GPUS: usize = 64;
/// Failure lines kept as evidence.
const MAX_ERRORS: usize = 8;
/// Characters of one kept value.
const VALUE_CHARS: usize = 120;

/// Modes of a 1.16+ back-end row that move data without a CPU bounce buffer.
const DIRECT_MODES: &[&str] = &["nvfs", "p2pdma", "dmabuf", "c2c"];

/// One back-end row: what gdscheck says cuFile can do on that file system or device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// The name as printed (`NVMe`, `WekaFS`, `LUSTRE`).
    pub name: String,
    /// The value as printed (`Supported`, `Unsupported`, `nvfs, compat`).
    pub value: String,
}

impl Backend {
    /// Whether data can reach GPU memory on it without a CPU bounce buffer.
    pub fn direct(&self) -> bool {
        let v = self.value.to_ascii_lowercase();
        v == "supported" || v.split(',').any(|m| DIRECT_MODES.contains(&m.trim()))
    }
}

/// What `gdscheck -p` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GdsCheck {
    /// `GDS release version`.
    pub release: Option<String>,
    /// The loaded nvidia_fs module's version (absent: not loaded, or not said).
    pub nvidia_fs: Option<String>,
    /// libcufile's version (up to 1.15).
    pub libcufile: Option<String>,
    /// The nvidia_fs version cuFile needs at least (1.16 and later).
    pub nvidia_fs_minimum: Option<String>,
    /// Back-end rows, in order (Userspace RDMA is in `rdma`, not here).
    pub backends: Vec<Backend>,
    /// `Userspace RDMA`'s value.
    pub userspace_rdma: Option<String>,
    /// `--rdma devices`' value (`Configured`, `Not configured`).
    pub rdma_devices: Option<String>,
    /// RDMA devices up and down.
    pub rdma_up_down: Option<(u32, u32)>,
    /// `properties.*`, `fs.*`, `execution.*` … lines, as printed.
    pub properties: Vec<(String, String)>,
    /// The platform's IOMMU line (`disabled`, `Pass-through or enabled`).
    pub iommu: Option<String>,
    /// Per GPU: index, whether it supports GDS (`None`: the line does not say), the line.
    pub gpus: Vec<(u32, Option<bool>, String)>,
    /// A GPU line's `IOMMU State:` when it is not `Disabled` (1.10 and later).
    pub gpu_iommu: Option<String>,
    /// gdscheck's own warning about the IOMMU (`WARN: GDS is not guaranteed …`).
    pub iommu_warning: Option<String>,
    /// `Platform verification succeeded` (true) or `failed` (false).
    pub verification: Option<bool>,
    /// Lines that say something failed or is not supported, for the evidence.
    pub errors: Vec<String>,
    /// The command was not there (`gdscheck: not installed`, `command not found`).
    pub not_installed: bool,
}

fn cut(s: &str) -> String {
    crate::model::fit(&crate::model::strip_controls(s.trim()), VALUE_CHARS)
}

/// `NAME : VALUE` split at the first colon, both trimmed.
fn name_value(line: &str) -> Option<(&str, &str)> {
    let (n, v) = line.split_once(':')?;
    Some((n.trim(), v.trim()))
}

/// The version right after `key` in `line` (`nvidia_fs version:  2.24 …` → `2.24`).
fn version_after(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    super::sanity::version_in(rest.split_whitespace().next().unwrap_or("")).or_else(|| {
        rest.split_whitespace()
            .next()
            .filter(|w| w.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string)
    })
}

/// Whether a back-end row's value is one of gdscheck's words for it.
/// Case matters: `GDS RDMA read: supported` under `FILESYSTEM VERSION CHECK` (`gdscheck -V`) is
/// a file system's feature, not a back-end row.
fn backend_value(v: &str) -> bool {
    v == "Supported"
        || v == "Unsupported"
        || (!v.is_empty()
            && v.split(',').all(|m| {
                let m = m.trim();
                m == "compat" || DIRECT_MODES.contains(&m)
            }))
}

impl GdsCheck {
    /// Read gdscheck's lines (each trimmed or not; blank lines are skipped).
    pub fn read<S: AsRef<str>>(lines: &[S]) -> Self {
        let mut c = Self::default();
        for raw in lines {
            let line = raw.as_ref().trim();
            if line.is_empty() {
                continue;
            }
            c.read_line(line);
        }
        c
    }

    fn read_line(&mut self, line: &str) {
        let lower = line.to_ascii_lowercase();
        if lower.contains("not installed") && lower.starts_with("gdscheck")
            || lower.contains("gdscheck: command not found")
            || lower.contains("gdscheck: not found")
        {
            self.not_installed = true;
            return;
        }
        if lower.starts_with("gds release version") {
            self.release = line
                .split_once(':')
                .and_then(|(_, v)| super::sanity::version_in(v));
            return;
        }
        if let Some(i) = lower.find("nvidia_fs minimum version:") {
            self.nvidia_fs_minimum = version_after(&line[i..], "nvidia_fs minimum version:");
            if !lower.contains("nvidia_fs version:") {
                return;
            }
        }
        if lower.contains("nvidia_fs version:") || lower.contains("libcufile version:") {
            // `nvidia_fs minimum version:` is what cuFile needs, not what is loaded.
            if let Some(i) = lower.find("nvidia_fs version:") {
                self.nvidia_fs = version_after(&line[i..], "nvidia_fs version:");
            }
            if let Some(i) = lower.find("libcufile version:") {
                self.libcufile = version_after(&line[i..], "libcufile version:");
            }
            return;
        }
        if lower.starts_with("platform verification") {
            if lower.contains("succeeded") {
                self.verification = Some(true);
            } else if lower.contains("failed") {
                self.verification = Some(false);
                self.keep_error(line);
            } else {
                self.keep_error(line);
            }
            return;
        }
        if let Some(rest) = line.strip_prefix("GPU ") {
            self.read_gpu(rest, line);
            return;
        }
        if lower.starts_with("iommu") {
            if let Some((_, v)) = name_value(line) {
                self.iommu = Some(cut(v));
            }
            return;
        }
        if lower.starts_with("warn") && lower.contains("iommu") {
            self.iommu_warning = Some(cut(line));
            return;
        }
        if let Some(opt) = line.strip_prefix("--") {
            self.read_rdma(opt);
            return;
        }
        if let Some((name, value)) = name_value(line) {
            if name.contains('.') && !name.contains(' ') {
                if self.properties.len() < MAX_PROPERTIES {
                    self.properties.push((cut(name), cut(value)));
                }
                return;
            }
            if backend_value(value) {
                if name.eq_ignore_ascii_case("userspace rdma") {
                    self.userspace_rdma = Some(cut(value));
                } else if self.backends.len() < MAX_BACKENDS {
                    self.backends.push(Backend {
                        name: cut(name),
                        value: cut(value),
                    });
                }
                return;
            }
        }
        if lower.contains("failed")
            || lower.contains("not supported")
            || lower.contains("error")
            || lower.contains("no gpu found")
        {
            self.keep_error(line);
        }
    }

    fn keep_error(&mut self, line: &str) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(cut(line));
        }
    }

    /// `index 0 NVIDIA … supports GDS, …` (1.x) or `0 Quadro K1200 does not have …` (beta).
    fn read_gpu(&mut self, rest: &str, line: &str) {
        let rest = rest.strip_prefix("index ").unwrap_or(rest);
        let Some(index) = rest
            .split_whitespace()
            .next()
            .and_then(|w| w.parse::<u32>().ok())
        else {
            return;
        };
        let lower = line.to_ascii_lowercase();
        let supports = if line.contains("supports GDS") {
            Some(true)
        } else if lower.contains("does not") || lower.contains("not supported") {
            Some(false)
        } else {
            None
        };
        if let Some((_, state)) = line.split_once("IOMMU State:") {
            let state = state.trim();
            if !state.eq_ignore_ascii_case("disabled") && self.gpu_iommu.is_none() {
                self.gpu_iommu = Some(cut(state));
            }
        }
        if self.gpus.len() < MAX_GPUS {
            self.gpus.push((index, supports, cut(line)));
        }
        if supports == Some(false) {
            self.keep_error(line);
        }
    }

    fn read_rdma(&mut self, opt: &str) {
        let Some((name, value)) = name_value(opt) else {
            return;
        };
        let name = name.to_ascii_lowercase();
        if name == "rdma devices" {
            self.rdma_devices = Some(cut(value));
        } else if name.starts_with("rdma_dev") {
            // `Up: 1 Down: 0`
            let words: Vec<&str> = value.split_whitespace().collect();
            let after = |key: &str| {
                words
                    .iter()
                    .position(|w| w.eq_ignore_ascii_case(key))
                    .and_then(|i| words.get(i + 1))
                    .and_then(|n| n.parse::<u32>().ok())
            };
            if let (Some(up), Some(down)) = (after("Up:"), after("Down:")) {
                self.rdma_up_down = Some((up, down));
            }
        }
    }

    /// A property's value (`properties.use_compat_mode`), as printed.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A property read as a boolean (`true`/`false`, or `1`/`0` before 1.0).
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.property(name)? {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        }
    }

    /// Back ends on which data can go straight to GPU memory.
    pub fn direct_backends(&self) -> Vec<&Backend> {
        self.backends.iter().filter(|b| b.direct()).collect()
    }
}

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

    /// Read one line.
    pub fn push(&mut self, line: &str) {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("== gpu ") {
            self.gpu = rest.trim().parse().ok();
            return;
        }
        if let Some(rest) = t.strip_prefix("numa: gpu ") {
            self.read_numa(rest);
            return;
        }
        if let Some(rest) = t.strip_prefix("nvfs before:") {
            if self.nvfs.len() < MAX_GPUS {
                self.nvfs.push((self.gpu, NvfsReads::parse(rest), None));
            }
            return;
        }
        if let Some(rest) = t.strip_prefix("nvfs after:") {
            if let Some(last) = self
                .nvfs
                .last_mut()
                .filter(|l| l.0 == self.gpu && l.2.is_none())
            {
                last.2 = Some(NvfsReads::parse(rest));
            }
            return;
        }
        if let Some(row) = gdsio_row(t)
            && self.rows.len() < MAX_ROWS
        {
            self.rows.push((self.gpu, row));
        }
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
        for (gpu, g, files, dev) in &self.numa {
            let list = files
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            out.push(match g {
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
                // A WARN, not a FAIL: one gds_dir per node puts one socket's GPUs across the
                // interconnect from it by layout, not by fault.
                Some(g) if *g >= 0 && !files.is_empty() && files.iter().all(|f| *f >= 0) => (
                    "gds-numa",
                    CheckStatus::Warn,
                    format!("GPU{gpu} on NUMA node {g} reads {dev} on NUMA node {list}: every transfer crosses the CPU interconnect (a device on each GPU's node, with its own gds_dir, measures the local path)"),
                ),
                _ => (
                    "gds-numa",
                    CheckStatus::Unknown,
                    format!(
                        "GPU{gpu}: NUMA node of the GPU ({}) or of {dev} ({}) not known (a network file system, or no sysfs node)",
                        g.map_or("?".into(), |v| v.to_string()),
                        if list.is_empty() { "?".to_string() } else { list.clone() }
                    ),
                ),
            });
        }
        // Every GPU the command named must have a GPU-direct read.
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
        if self.nvfs.is_empty() {
            out.push((
                "gds-path",
                CheckStatus::Unknown,
                "no nvidia_fs count around a GPU-direct read (S4's command prints it): which path the data took is not proven".to_string(),
            ));
        }
        for (gpu, before, after) in &self.nvfs {
            out.push(judge_nvfs(*gpu, *before, *after));
        }
        for (gpu, _, pct, words) in pairs {
            let who = gpu.map(|g| format!("GPU{g} ")).unwrap_or_default();
            out.push(if pct >= 100.0 + SAME_PATH_PCT {
                ("gds-direct", CheckStatus::Ok, format!("{who}{words} ({pct:.0} %)"))
            } else if pct > 100.0 - SAME_PATH_PCT {
                (
                    "gds-direct",
                    CheckStatus::Warn,
                    format!("{who}{words} ({pct:.0} %): the same rate either way is compat mode (a CPU bounce buffer) or a device that limits both paths; T0's gds-compat-mode and nvidia_fs's stats tell which"),
                )
            } else {
                (
                    "gds-direct",
                    CheckStatus::Warn,
                    format!("{who}{words} ({pct:.0} %): GPU-direct slower than through the CPU"),
                )
            });
        }
        out
    }
}

/// What nvidia_fs counted over one GPU's GPU-direct read: proof of the path, where the IO
/// stats are on. A GPU-direct read that nvidia_fs never saw went through a CPU bounce buffer
/// (compat mode), whatever gdsio's `XferType` says.
fn judge_nvfs(gpu: Option<u32>, before: NvfsReads, after: Option<NvfsReads>) -> GdsCheckLine {
    let who = gpu
        .map(|g| format!("GPU{g}"))
        .unwrap_or_else(|| "the GPU".into());
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
                "{who}: nvidia_fs's IO stats are off, so which path the read took is not proven (as root: echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled)"
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

/// One judged GDS check: name, status, evidence.
pub type GdsCheckLine = (&'static str, CheckStatus, String);

/// The names of the site's back ends in `gds_backend` (`NVMe`, `NVMe, NFS`), as gdscheck prints
/// them (case and spacing aside).
/// The line comes back from the node (T0 echoes the plan's value): stripped, cut, and at most
/// [`MAX_WANTED`] names.
fn wanted_backends(wanted: &str) -> Vec<String> {
    wanted
        .split(',')
        .map(|w| cut(&w.split_whitespace().collect::<Vec<_>>().join(" ")))
        .filter(|w| !w.is_empty())
        .take(MAX_WANTED)
        .collect()
}

/// Back ends a site may name in `gds_backend`.
const MAX_WANTED: usize = 16;

fn same_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase()
    };
    norm(a) == norm(b)
}

/// Judge GDS on one node: `module` is what the node said of the nvidia_fs module (T0's
/// `gds-module` section: `/proc/driver/nvidia-fs/version` and lsmod's line, or `nvidia_fs: not
/// loaded`), `check` what `gdscheck -p` printed, `wanted` the plan's `gds_backend` (empty: any
/// back end). FAIL where the path cannot be direct; compat mode allowed is a WARN that S4's
/// comparison settles.
pub fn judge(module: Option<&[String]>, check: &GdsCheck, wanted: &str) -> Vec<GdsCheckLine> {
    let mut out = Vec::new();
    if check.not_installed {
        out.push((
            "gds-platform",
            CheckStatus::Unknown,
            "gdscheck is not installed on the node (nvidia-gds package): GDS cannot be checked"
                .to_string(),
        ));
    } else {
        match check.verification {
            Some(true) => out.push((
                "gds-platform",
                CheckStatus::Ok,
                format!(
                    "gdscheck -p: platform verification succeeded (GDS {}{})",
                    check.release.as_deref().unwrap_or("release not said"),
                    check
                        .libcufile
                        .as_deref()
                        .map(|v| format!(", libcufile {v}"))
                        .unwrap_or_default()
                ),
            )),
            Some(false) => out.push((
                "gds-platform",
                CheckStatus::Failed,
                format!("gdscheck -p: {}", check.errors.join("; ")),
            )),
            None => out.push((
                "gds-platform",
                CheckStatus::Unknown,
                if check.errors.is_empty() {
                    "gdscheck -p printed no verification line".to_string()
                } else {
                    format!("gdscheck -p: {}", check.errors.join("; "))
                },
            )),
        }
    }
    out.push(judge_module(module, check));
    if !check.not_installed {
        out.push(judge_backends(check, wanted));
        if let Some(c) = judge_compat(check) {
            out.push(c);
        }
        if let Some(c) = judge_rdma(check) {
            out.push(c);
        }
        if let Some(c) = judge_iommu(check) {
            out.push(c);
        }
        let unsupported: Vec<&str> = check
            .gpus
            .iter()
            .filter(|(_, ok, _)| *ok == Some(false))
            .map(|(_, _, l)| l.as_str())
            .collect();
        let supporting = check.gpus.iter().filter(|g| g.1 == Some(true)).count();
        if !unsupported.is_empty() || supporting > 0 {
            out.push(if unsupported.is_empty() {
                (
                    "gds-gpus",
                    CheckStatus::Ok,
                    format!("{supporting} GPUs support GDS"),
                )
            } else {
                ("gds-gpus", CheckStatus::Failed, unsupported.join("; "))
            });
        }
    }
    out
}

fn judge_module(module: Option<&[String]>, check: &GdsCheck) -> GdsCheckLine {
    let said = |what: &str| {
        module.is_some_and(|ls| ls.iter().any(|l| l.trim().eq_ignore_ascii_case(what)))
    };
    let said_not_loaded = said("nvidia_fs: not loaded");
    let said_loaded = said("nvidia_fs: loaded")
        || module.is_some_and(|ls| ls.iter().any(|l| l.starts_with("nvidia_fs ")));
    let module_version = module.and_then(|ls| {
        ls.iter()
            .find(|l| l.to_ascii_lowercase().starts_with("version"))
            .and_then(|l| l.split_once(':'))
            .and_then(|(_, v)| super::sanity::version_in(v))
    });
    // A version read from the module or from gdscheck beats a "not loaded" from a node
    // whose lsmod is missing (a container).
    let version = check.nvidia_fs.clone().or(module_version);
    // Direct modes that do not go through nvidia_fs: the kernel's PCI P2PDMA (NVMe), dma-buf,
    // Grace's C2C.
    let other_direct: Vec<String> = check
        .backends
        .iter()
        .filter(|b| b.direct())
        .filter_map(|b| {
            let v = b.value.to_ascii_lowercase();
            let modes: Vec<&str> = ["p2pdma", "dmabuf", "c2c"]
                .into_iter()
                .filter(|m| v.contains(m) || b.name.to_ascii_lowercase().contains(m))
                .collect();
            (!modes.is_empty()).then(|| format!("{} ({})", b.name, modes.join(", ")))
        })
        .collect();
    match (version, said_loaded, said_not_loaded) {
        (Some(v), _, _) => (
            "gds-nvidia-fs",
            CheckStatus::Ok,
            format!("nvidia_fs {v} loaded"),
        ),
        (None, true, _) => (
            "gds-nvidia-fs",
            CheckStatus::Ok,
            "nvidia_fs loaded (its version not said)".to_string(),
        ),
        (None, false, _) if !other_direct.is_empty() => (
            "gds-nvidia-fs",
            CheckStatus::Warn,
            format!(
                "nvidia_fs is not loaded: direct only where cuFile does without it: {}",
                other_direct.join(", ")
            ),
        ),
        (None, false, true) => (
            "gds-nvidia-fs",
            CheckStatus::Failed,
            "nvidia_fs is not loaded and no P2PDMA, dma-buf or C2C path: every cuFile read goes through a CPU bounce buffer (modprobe nvidia_fs)".to_string(),
        ),
        (None, false, false) if module.is_none() && check.not_installed => (
            "gds-nvidia-fs",
            CheckStatus::Unknown,
            "neither the module nor gdscheck answered".to_string(),
        ),
        // gdscheck names the loaded module on its version line: no such line, no answer.
        (None, false, false)
            if module.is_none()
                && check.libcufile.is_none()
                && check.nvidia_fs_minimum.is_none() =>
        {
            (
                "gds-nvidia-fs",
                CheckStatus::Unknown,
                "gdscheck -p printed no version line (an excerpt?): nvidia_fs not known"
                    .to_string(),
            )
        }
        (None, false, false) => (
            "gds-nvidia-fs",
            CheckStatus::Failed,
            "no nvidia_fs version: the module is not loaded (gdscheck names none) and no P2PDMA, dma-buf or C2C path, so the path cannot be direct".to_string(),
        ),
    }
}

fn judge_backends(check: &GdsCheck, wanted: &str) -> GdsCheckLine {
    let wanted = wanted_backends(wanted);
    let show = |b: &Backend| format!("{}: {}", b.name, b.value);
    if check.backends.is_empty() {
        return (
            "gds-backend",
            CheckStatus::Unknown,
            "gdscheck -p listed no back end".to_string(),
        );
    }
    if wanted.is_empty() {
        let direct = check.direct_backends();
        return if direct.is_empty() {
            (
                "gds-backend",
                CheckStatus::Failed,
                "no back end can be direct (each is Unsupported or compat only)".to_string(),
            )
        } else {
            (
                "gds-backend",
                CheckStatus::Ok,
                format!(
                    "direct: {}",
                    direct
                        .iter()
                        .map(|b| show(b))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
    }
    let mut missing = Vec::new();
    let mut not_direct = Vec::new();
    let mut direct = Vec::new();
    for w in &wanted {
        // Up to 1.15 an NVMe read direct through the kernel's P2PDMA has its own row.
        let p2pdma = check
            .backends
            .iter()
            .find(|b| same_name(&b.name, &format!("{w} P2PDMA")))
            .filter(|b| b.direct());
        match (
            check.backends.iter().find(|b| same_name(&b.name, w)),
            p2pdma,
        ) {
            (Some(b), _) if b.direct() => direct.push(show(b)),
            (_, Some(p)) => direct.push(show(p)),
            (Some(b), None) => not_direct.push(show(b)),
            (None, None) => missing.push(w.clone()),
        }
    }
    if !not_direct.is_empty() {
        (
            "gds-backend",
            CheckStatus::Failed,
            format!(
                "the site's back end cannot be direct: {}",
                not_direct.join(", ")
            ),
        )
    } else if !missing.is_empty() {
        (
            "gds-backend",
            CheckStatus::Unknown,
            format!(
                "gdscheck -p has no row {} (gds_backend names a row as gdscheck prints it)",
                missing.join(", ")
            ),
        )
    } else {
        (
            "gds-backend",
            CheckStatus::Ok,
            format!("direct: {}", direct.join(", ")),
        )
    }
}

fn judge_compat(check: &GdsCheck) -> Option<GdsCheckLine> {
    if check.flag("properties.force_compat_mode") == Some(true) {
        return Some((
            "gds-compat-mode",
            CheckStatus::Failed,
            "properties.force_compat_mode is true: every read goes through a CPU bounce buffer"
                .to_string(),
        ));
    }
    match check.flag("properties.use_compat_mode")? {
        true => Some((
            "gds-compat-mode",
            CheckStatus::Warn,
            "properties.use_compat_mode is true: where the path cannot be direct, cuFile falls back to a CPU bounce buffer without an error (S4 compares GPU-direct with CPU→GPU)".to_string(),
        )),
        false => Some((
            "gds-compat-mode",
            CheckStatus::Ok,
            "properties.use_compat_mode is false: a path that cannot be direct fails instead of slowing down".to_string(),
        )),
    }
}

fn judge_iommu(check: &GdsCheck) -> Option<GdsCheckLine> {
    let state = check.iommu.as_ref().or(check.gpu_iommu.as_ref());
    let off = state.is_some_and(|s| s.eq_ignore_ascii_case("disabled"));
    if off && check.iommu_warning.is_none() {
        return Some(("gds-iommu", CheckStatus::Ok, "IOMMU disabled".to_string()));
    }
    let said = state
        .map(|s| format!("IOMMU: {s}"))
        .into_iter()
        .chain(check.iommu_warning.clone())
        .collect::<Vec<_>>();
    (!said.is_empty()).then(|| {
        (
            "gds-iommu",
            CheckStatus::Warn,
            format!(
                "{}: peer-to-peer DMA may be routed through the root complex or refused; NVIDIA does not guarantee GDS with the IOMMU on",
                said.join("; ")
            ),
        )
    })
}

fn judge_rdma(check: &GdsCheck) -> Option<GdsCheckLine> {
    let (up, down) = check.rdma_up_down?;
    let configured = check
        .rdma_devices
        .as_deref()
        .is_some_and(|d| d.eq_ignore_ascii_case("configured"));
    if down > 0 {
        Some((
            "gds-rdma",
            CheckStatus::Failed,
            format!("{down} of {} RDMA devices for GDS are down", up + down),
        ))
    } else if configured && up == 0 {
        Some((
            "gds-rdma",
            CheckStatus::Failed,
            "RDMA devices are configured for GDS but none is up".to_string(),
        ))
    } else if up > 0 {
        Some((
            "gds-rdma",
            CheckStatus::Ok,
            format!("{up} RDMA devices for GDS up, none down"),
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEALTHY_114: &str = " GDS release version: 1.14.0.30
 nvidia_fs version:  2.24 libcufile version: 2.12
 NVMe P2PDMA        : Unsupported
 NVMe               : Supported
 NVMeOF             : Unsupported
 Userspace RDMA     : Unsupported
 --Mellanox PeerDirect : Enabled
 --rdma devices        : Not configured
 --rdma_device_status  : Up: 0 Down: 0
 properties.use_compat_mode : false
 properties.force_compat_mode : false
 GPU index 0 NVIDIA RTX 6000 Ada Generation bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled
 IOMMU: disabled
 Platform verification succeeded";

    fn lines(t: &str) -> Vec<&str> {
        t.lines().collect()
    }

    fn status(checks: &[GdsCheckLine], name: &str) -> Option<CheckStatus> {
        checks.iter().find(|c| c.0 == name).map(|c| c.1)
    }

    #[test]
    fn a_healthy_nvme_node_passes_every_check() {
        let c = GdsCheck::read(&lines(HEALTHY_114));
        assert_eq!(c.release.as_deref(), Some("1.14.0.30"));
        assert_eq!(c.nvidia_fs.as_deref(), Some("2.24"));
        assert_eq!(c.libcufile.as_deref(), Some("2.12"));
        assert_eq!(c.rdma_up_down, Some((0, 0)));
        let checks = judge(None, &c, "NVMe");
        for (name, s, why) in &checks {
            assert_eq!(*s, CheckStatus::Ok, "{name}: {why}");
        }
        assert_eq!(status(&checks, "gds-backend"), Some(CheckStatus::Ok));
        assert_eq!(
            status(&judge(None, &c, "NVMeOF"), "gds-backend"),
            Some(CheckStatus::Failed)
        );
    }

    #[test]
    fn modes_of_1_16_are_direct_only_with_a_direct_mode() {
        let row = |v: &str| Backend {
            name: "NVMe".into(),
            value: v.into(),
        };
        assert!(row("nvfs, compat").direct());
        assert!(row("p2pdma, compat").direct());
        assert!(row("c2c, nvfs, compat").direct());
        assert!(!row("compat").direct());
        assert!(!row("Unsupported").direct());
    }

    #[test]
    fn no_module_and_compat_only_fails_where_the_path_cannot_be_direct() {
        let text = " GDS release version: 1.16.0.49
 nvidia_fs minimum version: 2.12
 NVMe               : compat
 NFS                : compat
 properties.use_compat_mode : true
 Platform verification succeeded";
        let c = GdsCheck::read(&lines(text));
        assert_eq!(c.nvidia_fs, None, "the minimum is not the loaded version");
        let checks = judge(Some(&["nvidia_fs: not loaded".to_string()]), &c, "");
        assert_eq!(status(&checks, "gds-nvidia-fs"), Some(CheckStatus::Failed));
        assert_eq!(status(&checks, "gds-backend"), Some(CheckStatus::Failed));
        assert_eq!(status(&checks, "gds-compat-mode"), Some(CheckStatus::Warn));
    }

    /// Two healthy nodes a first version failed: a container without lsmod (the module's own
    /// version file says it is loaded), and a 1.15 VM whose NVMe is direct through P2PDMA
    /// (`NVMe : Unsupported` beside `NVMe P2PDMA : Supported`) with the site naming "NVMe".
    #[test]
    fn a_container_without_lsmod_and_an_nvme_read_through_p2pdma_pass() {
        let l4 = crate::parsers::fixtures::corpus_text(
            "gdscheck/nvidia-troubleshooting-guide-gds-1.16.0.49-l4-nvfs-compat-dmabuf-sample-spaces-collapsed.txt",
        );
        let c = GdsCheck::read(&l4.lines().collect::<Vec<_>>());
        let module = [
            "version: 2.27".to_string(),
            "nvidia_fs: not loaded".to_string(),
        ];
        assert_eq!(
            status(&judge(Some(&module), &c, "NVMe"), "gds-nvidia-fs"),
            Some(CheckStatus::Ok)
        );
        let vm = crate::parsers::fixtures::corpus_text(
            "gdscheck/gds-1.15.0.42-l40s-vm-p2pdma-no-nvidia-fs-nvme-p2pdma-supported.txt",
        );
        let c = GdsCheck::read(&vm.lines().collect::<Vec<_>>());
        let checks = judge(None, &c, "NVMe");
        assert_eq!(
            status(&checks, "gds-backend"),
            Some(CheckStatus::Ok),
            "{checks:?}"
        );
        assert_eq!(
            status(&checks, "gds-nvidia-fs"),
            Some(CheckStatus::Warn),
            "{checks:?}"
        );
    }

    #[test]
    fn gdscheck_missing_is_unknown_never_a_pass() {
        let c = GdsCheck::read(&["gdscheck: not installed"]);
        let checks = judge(Some(&["nvidia_fs: not loaded".to_string()]), &c, "");
        assert_eq!(status(&checks, "gds-platform"), Some(CheckStatus::Unknown));
        assert_eq!(status(&checks, "gds-nvidia-fs"), Some(CheckStatus::Failed));
        assert!(checks.iter().all(|c| c.1 != CheckStatus::Ok));
    }

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

    #[test]
    fn a_hostile_backend_line_is_stripped_and_bounded() {
        let c = GdsCheck::read(&lines(HEALTHY_114));
        let wanted = format!("NVMe\u{1b}[2J{}", ",x".repeat(100_000));
        let checks = judge(None, &c, &wanted);
        let backend = checks
            .iter()
            .find(|c| c.0 == "gds-backend")
            .expect("gds-backend");
        assert!(!backend.2.contains('\u{1b}'), "{backend:?}");
        assert!(backend.2.len() < 2_000, "{}", backend.2.len());
    }

    proptest::proptest! {
        #[test]
        fn gdsio_garbage_never_panics(lines in proptest::collection::vec(".{0,300}", 0..20)) {
            let mut p = GdsioParser::new();
            for l in &lines {
                p.push(l);
            }
            let _ = p.figures();
            let _ = p.checks();
        }


        #[test]
        fn garbage_never_panics(lines in proptest::collection::vec(".{0,200}", 0..60), wanted in ".{0,40}") {
            let c = GdsCheck::read(&lines);
            let module: Vec<String> = lines.iter().take(3).cloned().collect();
            let _ = judge(Some(&module), &c, &wanted);
            proptest::prop_assert!(c.backends.len() <= MAX_BACKENDS);
            proptest::prop_assert!(c.errors.len() <= MAX_ERRORS);
        }
    }
}
