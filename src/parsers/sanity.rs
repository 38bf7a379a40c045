//! T1 sanity: the default plan's T1 command prints a few tools' output, each under a
//! `== NAME` line; this reads them and judges each check. A check that cannot be made here
//! (no permission to read the kernel log, a tool missing) is `Unknown` and says why — never a
//! silent pass.
//!
//! Sections: `gpus` (`nvidia-smi --query-gpu=index,pci.bus_id,name,driver_version
//! --format=csv,noheader`), `nvswitches` (how many NVSwitch devices the driver sees),
//! `fabricmanager-version` (`nv-fabricmanager --version`), `fabricmanager-active`
//! (`systemctl is-active nvidia-fabricmanager`), `fabric` (`nvidia-smi
//! --query-gpu=index,fabric.state,fabric.status`: each GPU's NVLink fabric registration, which
//! on NVSwitch systems must be Completed/Success before CUDA works), `xid` (kernel log lines
//! with `NVRM: Xid`, or the error that stopped us reading it).

use std::collections::BTreeMap;

use crate::model::phase::{CheckStatus, PhaseMetric};

/// A tool's output split at `== NAME` lines (T0 and T1 print their tools' answers that way).
#[derive(Debug, Default)]
pub(crate) struct Sections {
    current: Option<String>,
    sections: BTreeMap<String, Vec<String>>,
    /// Lines past the bounds, counted.
    dropped: u64,
}

/// Most sections kept (T0 prints about twenty).
const SECTIONS_KEPT: usize = 64;
/// Most lines kept in one section (the longest, `acs` on a big host, is a few hundred).
const SECTION_LINES_KEPT: usize = 4096;

impl Sections {
    /// Read one line.
    pub(crate) fn push(&mut self, line: &str) {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("== ") {
            let name = crate::model::fit(name.trim(), 64);
            if !self.sections.contains_key(&name) && self.sections.len() >= SECTIONS_KEPT {
                self.current = None;
                self.dropped += 1;
                return;
            }
            self.sections.entry(name.clone()).or_default();
            self.current = Some(name);
            return;
        }
        if let Some(cur) = self.current.as_ref().filter(|_| !t.is_empty()) {
            let lines = self.sections.entry(cur.clone()).or_default();
            if lines.len() < SECTION_LINES_KEPT {
                lines.push(crate::model::fit(t, 4096));
            } else {
                self.dropped += 1;
            }
        }
    }

    /// A check saying how many lines the bounds left unread, where they left any: what they
    /// dropped may have decided a check, so it is said, never passed over.
    pub(crate) fn bounds_check(&self, node: &str) -> Option<PhaseMetric> {
        (self.dropped > 0).then(|| PhaseMetric::Check {
            node: node.to_string(),
            name: "output-read".into(),
            status: CheckStatus::Unknown,
            detail: format!(
                "{} line(s) past the reader's bounds ({SECTIONS_KEPT} sections, {SECTION_LINES_KEPT} lines each) not read",
                self.dropped
            ),
        })
    }

    /// The non-empty lines of section `name` (`None`: the output has no such section).
    pub(crate) fn get(&self, name: &str) -> Option<&[String]> {
        self.sections.get(name).map(Vec::as_slice)
    }
}

/// Collects the sections of one node's T1 output.
#[derive(Debug, Default)]
pub struct SanityParser {
    sections: Sections,
}

/// The first thing in `text` shaped like a driver version (`580.95.05`).
pub(crate) fn version_in(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|t| {
            let parts: Vec<&str> = t.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_string)
}

impl SanityParser {
    /// A parser at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line.
    pub fn push(&mut self, line: &str) {
        self.sections.push(line);
    }

    fn section(&self, name: &str) -> Option<&[String]> {
        self.sections.get(name)
    }

    /// Every GPU registered with the NVLink fabric (`n` NVSwitches seen).
    fn fabric_registration(&self, node: &str, n: u32) -> PhaseMetric {
        let check = |status, detail: String| PhaseMetric::Check {
            node: node.to_string(),
            name: "fabric-registration".into(),
            status,
            detail,
        };
        let Some(lines) = self.section("fabric") else {
            return check(CheckStatus::Unknown, "fabric state not queried".into());
        };
        let rows: Vec<Vec<&str>> = lines
            .iter()
            .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>())
            .filter(|f| f.len() >= 3 && f[0].parse::<u32>().is_ok())
            .collect();
        if rows.is_empty() {
            let said = lines.first().map_or("nothing", String::as_str);
            return check(
                CheckStatus::Unknown,
                format!("{n} NVSwitches; fabric state not readable here: {said}"),
            );
        }
        let bad: Vec<String> = rows
            .iter()
            .filter(|r| {
                !(r[1].eq_ignore_ascii_case("completed") && r[2].eq_ignore_ascii_case("success"))
            })
            .map(|r| format!("GPU{} {} / {}", r[0], r[1], r[2]))
            .collect();
        match bad.first() {
            None => check(
                CheckStatus::Ok,
                format!("{} GPUs registered with the fabric", rows.len()),
            ),
            Some(first) => check(
                CheckStatus::Failed,
                format!(
                    "{} GPU(s) not registered with the fabric, first {first} (fabric manager down, or NVLSM missing on Blackwell)",
                    bad.len()
                ),
            ),
        }
    }

    /// Judge every check for `node`, which should have `expected_gpus`.
    pub fn finish(&self, node: &str, expected_gpus: u32) -> Vec<PhaseMetric> {
        let check = |name: &str, status, detail: String| PhaseMetric::Check {
            node: node.to_string(),
            name: name.to_string(),
            status,
            detail,
        };
        let mut out: Vec<PhaseMetric> = self.sections.bounds_check(node).into_iter().collect();
        // GPU count and one driver version across them.
        let mut driver = None;
        match self.section("gpus") {
            None => out.push(check(
                "gpu-count",
                CheckStatus::Unknown,
                "no nvidia-smi output".into(),
            )),
            Some(lines) => {
                let rows: Vec<Vec<&str>> = lines
                    .iter()
                    .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>())
                    .filter(|f| f.len() >= 4 && f[0].parse::<u32>().is_ok())
                    .collect();
                if rows.is_empty() {
                    let said = lines.first().map_or("nothing", String::as_str);
                    out.push(check(
                        "gpu-count",
                        CheckStatus::Failed,
                        format!("nvidia-smi listed no GPU: {said}"),
                    ));
                } else {
                    let n = rows.len() as u32;
                    let status = if n == expected_gpus {
                        CheckStatus::Ok
                    } else {
                        CheckStatus::Failed
                    };
                    out.push(check(
                        "gpu-count",
                        status,
                        format!("{n} GPUs, {expected_gpus} expected"),
                    ));
                    let mut versions: Vec<&str> = rows.iter().map(|r| r[3]).collect();
                    versions.sort_unstable();
                    versions.dedup();
                    if let [one] = versions.as_slice() {
                        driver = Some(one.to_string());
                    } else {
                        out.push(check(
                            "driver-version",
                            CheckStatus::Failed,
                            format!("GPUs report different drivers: {}", versions.join(", ")),
                        ));
                    }
                }
            }
        }
        // Fabric manager matters only where the driver sees NVSwitches.
        let nvswitches = self
            .section("nvswitches")
            .and_then(|l| l.first())
            .and_then(|l| l.parse::<u32>().ok());
        let fm_version = self
            .section("fabricmanager-version")
            .and_then(|l| l.iter().find_map(|x| version_in(x)));
        let active = self
            .section("fabricmanager-active")
            .and_then(|l| l.first())
            .map(String::as_str);
        out.extend(fabric_manager_checks(
            node,
            nvswitches,
            driver.as_deref(),
            fm_version.as_deref(),
            active,
        ));
        if let Some(n @ 1..) = nvswitches {
            out.push(self.fabric_registration(node, n));
        }
        // Xid in the kernel log.
        out.push(xid_check(node, self.section("xid")));
        out
    }
}

/// The fabric manager, which matters only where the driver sees NVSwitches: its version must be
/// the driver's, and `systemctl is-active nvidia-fabricmanager` must say `active` (anything else,
/// no answer included, fails). T0 and T1 both judge it this way.
pub(crate) fn fabric_manager_checks(
    node: &str,
    nvswitches: Option<u32>,
    driver: Option<&str>,
    fm_version: Option<&str>,
    active: Option<&str>,
) -> Vec<PhaseMetric> {
    let check = |name: &str, status, detail: String| PhaseMetric::Check {
        node: node.to_string(),
        name: name.to_string(),
        status,
        detail,
    };
    let n = match nvswitches {
        Some(0) => {
            return vec![check(
                "fabric-manager",
                CheckStatus::Ok,
                "no NVSwitch on this node: fabric manager not needed".into(),
            )];
        }
        None => {
            return vec![check(
                "fabric-manager",
                CheckStatus::Unknown,
                "could not count NVSwitch devices".into(),
            )];
        }
        Some(n) => n,
    };
    let version = match (driver, fm_version) {
        (Some(d), Some(f)) if d == f => check(
            "fabric-manager-version",
            CheckStatus::Ok,
            format!("driver {d} == fabric manager {f}"),
        ),
        (Some(d), Some(f)) => check(
            "fabric-manager-version",
            CheckStatus::Failed,
            format!("driver {d} != fabric manager {f}"),
        ),
        (_, None) => check(
            "fabric-manager-version",
            CheckStatus::Failed,
            format!("{n} NVSwitches but no fabric manager version (not installed?)"),
        ),
        (None, Some(f)) => check(
            "fabric-manager-version",
            CheckStatus::Unknown,
            format!("fabric manager {f}; driver version unknown"),
        ),
    };
    let state = active.unwrap_or("no answer");
    let active = check(
        "fabric-manager-active",
        if state == "active" {
            CheckStatus::Ok
        } else {
            CheckStatus::Failed
        },
        format!("nvidia-fabricmanager is {state}"),
    );
    vec![version, active]
}

/// A GPU's Xid in a kernel log line: `NVRM: Xid (PCI:0000:1b:00): 79, pid=…` → (PCI id, code).
fn xid_of(line: &str) -> Option<(&str, u32)> {
    let rest = &line[line.find("NVRM: Xid")? + "NVRM: Xid".len()..];
    let rest = rest.trim_start().strip_prefix("(PCI:")?;
    let (pci, rest) = rest.split_once(')')?;
    let code = rest.trim_start_matches([':', ' ']);
    let digits: &str = &code[..code.bytes().take_while(u8::is_ascii_digit).count()];
    Some((pci, digits.parse().ok()?))
}

/// An NVSwitch error: `nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20034, Fatal, …` → (code,
/// fatal).
fn sxid_of(line: &str) -> Option<(u32, bool)> {
    let rest = &line[line.find("SXid (PCI:")? + "SXid (PCI:".len()..];
    let (_, rest) = rest.split_once(')')?;
    let rest = rest.trim_start_matches([':', ' ']);
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    let fatal = rest.contains("Fatal") && !rest.contains("Non-fatal");
    Some((digits.parse().ok()?, fatal))
}

/// The `xid` section judged: the kernel log's GPU Xid lines (`NVRM: Xid (PCI:…): CODE`), a GPU
/// that fell off the bus, a driver whose user space and kernel module disagree (`API
/// mismatch`), NVSwitch SXid errors (fatal fails, non-fatal warns), or why the log was
/// unreadable. A line that only mentions "Xid" is not one.
pub(crate) fn xid_check(node: &str, lines: Option<&[String]>) -> PhaseMetric {
    let check = |status, detail: String| PhaseMetric::Check {
        node: node.to_string(),
        name: "xid".into(),
        status,
        detail,
    };
    let Some(lines) = lines else {
        return check(CheckStatus::Unknown, "kernel log not read".into());
    };
    let denied = lines.iter().find(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("not permitted") || l.contains("permission denied")
    });
    let mut codes: Vec<String> = Vec::new();
    let mut first_xid = None;
    let mut xids = 0usize;
    for l in lines {
        if let Some((pci, code)) = xid_of(l) {
            xids += 1;
            first_xid.get_or_insert(l);
            let c = format!("Xid {code} on {pci}");
            if !codes.contains(&c) && codes.len() < 8 {
                codes.push(c);
            }
        }
    }
    let off_bus = lines.iter().find(|l| l.contains("fallen off the bus"));
    let mismatch = lines.iter().find(|l| l.contains("API mismatch"));
    let sxids: Vec<(u32, bool, &String)> = lines
        .iter()
        .filter_map(|l| sxid_of(l).map(|(c, f)| (c, f, l)))
        .collect();
    if let Some(first) = first_xid {
        return check(
            CheckStatus::Failed,
            format!(
                "{xids} Xid line(s) in the kernel log ({}), first: {first}",
                codes.join(", ")
            ),
        );
    }
    if let Some(l) = off_bus {
        return check(
            CheckStatus::Failed,
            format!("a GPU fell off the bus (no Xid line with it): {l}"),
        );
    }
    if let Some(l) = mismatch {
        return check(
            CheckStatus::Failed,
            format!("the driver's user space and kernel module are different versions: {l}"),
        );
    }
    if let Some((code, _, l)) = sxids.iter().find(|s| s.1) {
        return check(
            CheckStatus::Failed,
            format!("fatal NVSwitch error SXid {code}: {l}"),
        );
    }
    if let Some((code, _, l)) = sxids.first() {
        return check(
            CheckStatus::Warn,
            format!(
                "{} non-fatal NVSwitch SXid line(s), first SXid {code} (no GPU Xid): {l}",
                sxids.len()
            ),
        );
    }
    match denied {
        Some(why) => check(
            CheckStatus::Unknown,
            format!("kernel log not readable here: {why}"),
        ),
        None => check(CheckStatus::Ok, "no Xid in the kernel log".into()),
    }
}

/// Test helper: each check as (name, outcome, detail); T0's parts of the node are left out;
/// anything else is a test failure.
#[cfg(test)]
pub(crate) fn check_rows(metrics: Vec<PhaseMetric>) -> Vec<(String, CheckStatus, String)> {
    metrics
        .into_iter()
        .filter(|m| !matches!(m, PhaseMetric::Parts { .. }))
        .map(|m| match m {
            PhaseMetric::Check {
                name,
                status,
                detail,
                ..
            } => (name, status, detail),
            other => panic!("not a check: {other:?}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(text: &str, expected: u32) -> Vec<(String, CheckStatus, String)> {
        let mut p = SanityParser::new();
        for l in text.lines() {
            p.push(l);
        }
        check_rows(p.finish("n1", expected))
    }

    #[test]
    fn a_healthy_hgx_node() {
        let text = "== gpus\n0, 00000000:18:00.0, NVIDIA B300, 580.95.05\n1, 00000000:2A:00.0, NVIDIA B300, 580.95.05\n== nvswitches\n4\n== fabricmanager-version\nFabric Manager version is : 580.95.05\n== fabricmanager-active\nactive\n== fabric\n0, Completed, Success\n1, Completed, Success\n== xid\n";
        let c = run(text, 2);
        assert!(c.iter().all(|(_, s, _)| *s == CheckStatus::Ok), "{c:?}");
        assert_eq!(c.len(), 5);
        // A GPU still registering: the fabric manager is down or NVLSM is missing.
        let c = run(
            &text.replace("1, Completed, Success", "1, In Progress, N/A"),
            2,
        );
        let reg = c.iter().find(|x| x.0 == "fabric-registration").unwrap();
        assert_eq!(reg.1, CheckStatus::Failed);
        assert!(reg.2.contains("GPU1 In Progress / N/A"), "{reg:?}");
    }

    #[test]
    fn missing_gpu_version_skew_and_xid_fail() {
        let text = "== gpus\n0, 00000000:18:00.0, NVIDIA B300, 580.95.05\n== nvswitches\n4\n== fabricmanager-version\nFabric Manager version is : 580.82.07\n== fabricmanager-active\nfailed\n== xid\n[ 812.1] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n";
        let c = run(text, 8);
        let failed: Vec<&str> = c
            .iter()
            .filter(|(_, s, _)| *s == CheckStatus::Failed)
            .map(|(n, _, _)| n.as_str())
            .collect();
        assert_eq!(
            failed,
            [
                "gpu-count",
                "fabric-manager-version",
                "fabric-manager-active",
                "xid"
            ]
        );
        assert_eq!(c[0].2, "1 GPUs, 8 expected");
    }

    #[test]
    fn unreadable_kernel_log_is_unknown_not_ok() {
        let text = "== gpus\n0, 00000000:18:00.0, NVIDIA H200, 580.159\n== nvswitches\n0\n== xid\ndmesg: read kernel buffer failed: Operation not permitted\n";
        let c = run(text, 1);
        assert_eq!(c[1].1, CheckStatus::Ok, "{c:?}");
        assert_eq!(c[2].0, "xid");
        assert_eq!(c[2].1, CheckStatus::Unknown);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec("(== )?.{0,80}", 0..30)) {
            let mut p = SanityParser::new();
            for l in &lines {
                p.push(l);
            }
            let _ = p.finish("n", 8);
        }
    }
}
