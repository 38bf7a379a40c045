//! cuFile's and nvidia_fs's own counts of a GPU's reads, and what they prove of the path.

use crate::model::phase::CheckStatus;
use crate::parsers::gds::{GdsCheckLine, cut};

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

/// `GPU3`, or `the GPU` where the output named none.
pub(super) fn who(gpu: Option<u32>) -> String {
    gpu.map(|g| format!("GPU{g}"))
        .unwrap_or_else(|| "the GPU".into())
}

/// What cuFile itself counted over one GPU's GPU-direct read: reads through its POSIX path
/// went through a CPU bounce buffer (compat mode), whatever gdsio's `XferType` says.
pub(super) fn judge_cufile(gpu: Option<u32>, n: u64, posix: u64, mib: u64) -> GdsCheckLine {
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
pub(super) fn judge_nvfs(
    gpu: Option<u32>,
    before: NvfsReads,
    after: Option<NvfsReads>,
) -> GdsCheckLine {
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
    use crate::parsers::gdsio::GdsioParser;

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
}
