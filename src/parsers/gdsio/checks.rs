//! S4's checks over the rows and counts: NUMA pairing, each GPU's read, GPU-direct against
//! the CPU path, and which path each GPU's reads took.

use super::counts::{judge_cufile, judge_nvfs, who};
use super::{CufileReads, GdsioParser, MAX_GIB_PER_S, SAME_PATH_PCT};
use crate::model::phase::CheckStatus;
use crate::parsers::gds::{GdsCheckLine, MAX_GPUS};

impl GdsioParser {
    /// One GPU's NUMA pairing with its file's device.
    pub(super) fn numa_check(
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
    pub(super) fn gpu_read_checks(&self) -> Vec<GdsCheckLine> {
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
    pub(super) fn direct_check(
        &self,
        gpu: Option<u32>,
        io: &str,
        pct: f64,
        words: &str,
    ) -> GdsCheckLine {
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
    pub(super) fn path_checks(&self) -> Vec<GdsCheckLine> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
