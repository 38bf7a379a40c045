//! T0 preflight: read-only checks of a node's install before any load, from the site's
//! Blackwell procedure. The plan's T0 command prints each tool's answer under a `== NAME` line
//! (see `plans/default.toml`); this judges them. Every check says the line it read. A check that
//! cannot be made here (no systemd, no package manager, lspci without root) is `Unknown` with
//! the reason, never a pass; an answer the parser does not know is `Unknown` too, never a crash.
//!
//! Sections: `driver` (`/proc/driver/nvidia/version`), `gpus` (`nvidia-smi
//! --query-gpu=index,name,pci.bus_id,persistence_mode`), `nvswitches` (NVSwitch devices the
//! driver sees), `kernel` (`uname -r`), `os` (`/etc/os-release`), `fabricmanager-version`,
//! `services` (`systemctl is-active` of the fabric manager, persistenced and NVLSM), `nics`
//! (each RDMA device port: name, port, PCI device ID, link layer, rate; `parsers::nic_model`),
//! `packages` (`manager dpkg|rpm|none`, then installed `ii NAME VERSION` lines), `rdma-tools`,
//! `numa` (`nodes N`, then `BDF numa_node` per GPU), `acs` (`lspci -vvv` bridge lines and their
//! `ACSCtl`), `xid` (as T1); with `gds = "true"` in the plan, `gds-module` (nvidia_fs's version
//! file and lsmod line), `gds-backend` (the plan's `gds_backend`) and `gdscheck` (`gdscheck -p`,
//! judged by `parsers::gds`); with `doctor = "true"`, `doctor` (the doctor's probe with the
//! plan's needs on this node, judged by `parsers::doctor`: a phase that cannot run warns).

use super::sanity::{Sections, fabric_manager_checks, version_in, xid_check};
use crate::model::phase::{CheckStatus, PhaseMetric};

/// The oldest driver branch the site's Blackwell procedure accepts.
pub const MIN_DRIVER_BRANCH: u32 = 570;
/// The oldest upstream kernel the procedure accepts without a vendor backport.
pub const MIN_KERNEL: (u32, u32) = (5, 17);

/// Collects one node's T0 output.
#[derive(Debug, Default)]
pub struct PreflightParser {
    sections: Sections,
}

/// What `systemctl is-active` said of a service, or why it could not say.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ServiceState {
    Active,
    /// inactive, failed, activating…: the word it printed.
    Not(String),
    /// No systemd, no such unit known, or nothing printed.
    Unknown(String),
}

/// A check of T0 on `node`.
fn check(node: &str, name: &str, status: CheckStatus, detail: String) -> PhaseMetric {
    PhaseMetric::Check {
        node: node.to_string(),
        name: name.to_string(),
        status,
        detail,
    }
}

impl PreflightParser {
    /// A parser at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line.
    pub fn push(&mut self, line: &str) {
        self.sections.push(line);
    }

    fn first(&self, name: &str) -> Option<&str> {
        self.sections
            .get(name)
            .and_then(|l| l.first())
            .map(String::as_str)
    }

    /// What `systemctl is-active UNIT` printed (`None`: not asked).
    fn service_answer(&self, unit: &str) -> Option<&str> {
        let line = self
            .sections
            .get("services")?
            .iter()
            .find(|l| l.split_whitespace().next() == Some(unit))?;
        Some(line[unit.len()..].trim())
    }

    fn service(&self, unit: &str) -> ServiceState {
        let Some(answer) = self.service_answer(unit) else {
            return ServiceState::Unknown("not asked".into());
        };
        match answer {
            "active" => ServiceState::Active,
            "inactive" | "failed" | "activating" | "deactivating" | "reloading" => {
                ServiceState::Not(answer.to_string())
            }
            "" => ServiceState::Unknown("systemctl said nothing".into()),
            other => ServiceState::Unknown(other.to_string()),
        }
    }

    /// Installed packages as `(name, version)`, or why they could not be listed.
    fn packages(&self) -> Result<Vec<(String, String)>, String> {
        let Some(lines) = self.sections.get("packages") else {
            return Err("packages not listed".into());
        };
        let manager = lines
            .iter()
            .find_map(|l| l.strip_prefix("manager "))
            .unwrap_or("unknown");
        if !matches!(manager, "dpkg" | "rpm") {
            return Err(format!("no package manager this check knows ({manager})"));
        }
        Ok(lines
            .iter()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (Some(status), Some(name)) = (w.next(), w.next()) else {
                    return None;
                };
                status
                    .starts_with("ii")
                    .then(|| (name.to_string(), w.next().unwrap_or("").to_string()))
            })
            .collect())
    }

    fn gpus(&self) -> Vec<Vec<String>> {
        self.sections
            .get("gpus")
            .unwrap_or_default()
            .iter()
            .map(|l| {
                l.split(',')
                    .map(|f| f.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|f| f.len() >= 2 && f[0].parse::<u32>().is_ok())
            .collect()
    }

    /// Judge every check for `node`, which should have `expected_gpus`.
    pub fn finish(&self, node: &str, expected_gpus: u32) -> Vec<PhaseMetric> {
        let check = |name: &str, status, detail: String| check(node, name, status, detail);
        let mut out: Vec<PhaseMetric> = self.sections.bounds_check(node).into_iter().collect();
        let driver = self.driver_checks(node, &mut out);
        let gpus = self.gpus();
        out.push(self.gpu_count_check(node, &gpus, expected_gpus));
        out.push(super::gpu_model::check(node, &gpus));
        let blackwell = gpus.iter().any(|g| {
            let name = g[1].to_ascii_uppercase();
            ["B200", "B300", "GB200", "GB300", "BLACKWELL"]
                .iter()
                .any(|k| name.contains(k))
        });
        let nvswitches: Option<u32> = self.first("nvswitches").and_then(|l| l.trim().parse().ok());

        // Kernel: 5.17 or later, or a vendor kernel whose backports the operator confirms.
        out.push(self.kernel_check(node));

        // Fabric manager: judged as T1 judges it (version = driver, active).
        let fm_version = self
            .first("fabricmanager-version")
            .filter(|l| !l.contains("not installed"))
            .and_then(version_in);
        out.extend(fabric_manager_checks(
            node,
            nvswitches,
            driver.as_deref(),
            fm_version.as_deref(),
            self.service_answer("nvidia-fabricmanager"),
        ));
        let nvswitches = nvswitches.unwrap_or(0);

        let packages = self.packages();
        self.nvlink_fabric_checks(node, blackwell, nvswitches, &packages, &mut out);
        out.push(self.persistence_check(node, &gpus));
        out.push(self.rdma_check(node, &packages));
        // Plans written before T0 listed the NICs have no `nics` section: no check then.
        if let Some(lines) = self.sections.get("nics") {
            out.push(super::nic_model::check(node, lines));
        }
        // What the node is made of, for the later phases' floors (`model::spec`).
        if !gpus.is_empty() {
            out.push(PhaseMetric::Parts {
                node: node.to_string(),
                parts: crate::model::spec::NodeParts {
                    gpus: super::gpu_model::parts(&gpus),
                    nics: self
                        .sections
                        .get("nics")
                        .map(super::nic_model::parts)
                        .unwrap_or_default(),
                    from: "T0".into(),
                },
            });
        }
        out.push(self.numa_check(node));
        out.push(self.acs_check(node));
        out.push(xid_check(node, self.sections.get("xid")));
        // GPUDirect Storage, only where the plan asked for it (`gds = "true"`).
        if let Some(lines) = self.sections.get("gdscheck") {
            let wanted = self.first("gds-backend").unwrap_or("");
            let report = super::gds::GdsCheck::read(lines);
            for (name, status, detail) in
                super::gds::judge(self.sections.get("gds-module"), &report, wanted)
            {
                out.push(check(name, status, detail));
            }
        }
        // Whether each phase of the plan can run here, where the plan asked (`doctor = "true"`).
        if let Some(lines) = self.sections.get("doctor") {
            let probe = super::doctor::parse_probe(&lines.join("\n"));
            for (name, status, detail) in super::doctor::node_checks(&probe) {
                out.push(check(&name, status, detail));
            }
        }
        out
    }

    /// Driver branch and kernel module flavour, from the line the driver itself writes; the
    /// driver's version for the fabric manager's check.
    fn driver_checks(&self, node: &str, out: &mut Vec<PhaseMetric>) -> Option<String> {
        let driver_line = self
            .sections
            .get("driver")
            .and_then(|ls| ls.iter().find(|l| l.starts_with("NVRM version")));
        let driver = driver_line.and_then(|l| {
            l.split_whitespace()
                .find(|w| {
                    w.split('.').count() >= 2 && w.split('.').all(|p| p.parse::<u32>().is_ok())
                })
                .map(str::to_string)
        });
        let branch = driver
            .as_deref()
            .and_then(|v| v.split('.').next())
            .and_then(|b| b.parse::<u32>().ok());
        match (driver_line, branch) {
            (Some(line), Some(b)) if b >= MIN_DRIVER_BRANCH => out.push(check(
                node,
                "driver-branch",
                CheckStatus::Ok,
                format!("R{b} ≥ R{MIN_DRIVER_BRANCH}: {line}"),
            )),
            (Some(line), Some(b)) => out.push(check(
                node,
                "driver-branch",
                CheckStatus::Failed,
                format!("R{b} is older than R{MIN_DRIVER_BRANCH}: {line}"),
            )),
            (Some(line), None) => out.push(check(
                node,
                "driver-branch",
                CheckStatus::Unknown,
                format!("no version in: {line}"),
            )),
            (None, _) => out.push(check(
                node,
                "driver-branch",
                CheckStatus::Failed,
                format!(
                    "no NVIDIA driver loaded: {}",
                    self.first("driver")
                        .unwrap_or("/proc/driver/nvidia/version not read")
                ),
            )),
        }
        if let Some(line) = driver_line {
            let open = line.contains("Open Kernel Module");
            out.push(check(node,
                "open-kernel-module",
                if open {
                    CheckStatus::Ok
                } else {
                    CheckStatus::Failed
                },
                if open {
                    format!("open kernel module in use: {line}")
                } else {
                    format!("the proprietary kernel module is loaded; Blackwell needs the open one: {line}")
                },
            ));
        }
        driver
    }

    /// The GPU count against the inventory's.
    fn gpu_count_check(&self, node: &str, gpus: &[Vec<String>], expected_gpus: u32) -> PhaseMetric {
        if gpus.len() as u32 == expected_gpus {
            check(
                node,
                "gpu-count",
                CheckStatus::Ok,
                format!("{} GPUs as expected", gpus.len()),
            )
        } else {
            check(
                node,
                "gpu-count",
                CheckStatus::Failed,
                format!(
                    "{} GPUs, expected {expected_gpus}{}",
                    gpus.len(),
                    self.first("gpus")
                        .filter(|_| gpus.is_empty())
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                ),
            )
        }
    }

    /// NVLSM and the NVLink5 package: Blackwell with NVSwitches only.
    fn nvlink_fabric_checks(
        &self,
        node: &str,
        blackwell: bool,
        nvswitches: u32,
        packages: &Result<Vec<(String, String)>, String>,
        out: &mut Vec<PhaseMetric>,
    ) {
        if blackwell && nvswitches > 0 {
            out.push(match self.service("nvidia-nvlsm") {
                ServiceState::Active => {
                    check(node, "nvlsm", CheckStatus::Ok, "nvidia-nvlsm active".into())
                }
                ServiceState::Not(w) => check(
                    node,
                    "nvlsm",
                    CheckStatus::Failed,
                    format!("nvidia-nvlsm is {w}; GPUs will not register with the NVLink fabric"),
                ),
                ServiceState::Unknown(why) => check(
                    node,
                    "nvlsm",
                    CheckStatus::Unknown,
                    format!("nvidia-nvlsm: {why}"),
                ),
            });
            out.push(match packages {
                Ok(p) => match p.iter().find(|(n, _)| n.starts_with("nvlink5")) {
                    Some((n, v)) => {
                        check(node, "nvlink5-package", CheckStatus::Ok, format!("{n} {v}"))
                    }
                    None => check(
                        node,
                        "nvlink5-package",
                        CheckStatus::Failed,
                        "no nvlink5 package installed".into(),
                    ),
                },
                Err(why) => check(node, "nvlink5-package", CheckStatus::Unknown, why.clone()),
            });
        } else {
            let why = if nvswitches == 0 {
                "no NVSwitch seen"
            } else {
                "not Blackwell"
            };
            out.push(check(
                node,
                "nvlsm",
                CheckStatus::Ok,
                format!("not needed: {why}"),
            ));
        }
    }

    /// Persistence: the daemon, or at least persistence mode on every GPU.
    fn persistence_check(&self, node: &str, gpus: &[Vec<String>]) -> PhaseMetric {
        let persistent = !gpus.is_empty()
            && gpus
                .iter()
                .all(|g| g.get(3).is_some_and(|m| m.eq_ignore_ascii_case("enabled")));
        match self.service("nvidia-persistenced") {
            ServiceState::Active => check(
                node,
                "persistenced",
                CheckStatus::Ok,
                "nvidia-persistenced active".into(),
            ),
            state if persistent => check(
                node,
                "persistenced",
                CheckStatus::Warn,
                format!(
                    "persistence mode is on for every GPU, but nvidia-persistenced is {}",
                    describe(&state)
                ),
            ),
            ServiceState::Not(w) => check(
                node,
                "persistenced",
                CheckStatus::Failed,
                format!("nvidia-persistenced is {w} and persistence mode is off"),
            ),
            ServiceState::Unknown(why) => check(
                node,
                "persistenced",
                CheckStatus::Unknown,
                format!("nvidia-persistenced: {why}"),
            ),
        }
    }

    /// RDMA user space: rdma-core or infiniband-diags installed, or their tools on PATH.
    fn rdma_check(
        &self,
        node: &str,
        packages: &Result<Vec<(String, String)>, String>,
    ) -> PhaseMetric {
        let tools: Vec<String> = self
            .sections
            .get("rdma-tools")
            .unwrap_or_default()
            .iter()
            .filter(|l| !l.ends_with("missing"))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        let rdma_pkgs: Vec<String> = packages
            .as_ref()
            .map(|p| {
                p.iter()
                    .filter(|(n, _)| n == "rdma-core" || n == "infiniband-diags")
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect()
            })
            .unwrap_or_default();
        if !rdma_pkgs.is_empty() || tools.iter().any(|t| t == "ibstat") {
            check(
                node,
                "rdma-userspace",
                CheckStatus::Ok,
                rdma_pkgs
                    .iter()
                    .cloned()
                    .chain(tools.iter().map(|t| format!("{t} on PATH")))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        } else {
            check(
                node,
                "rdma-userspace",
                CheckStatus::Failed,
                format!(
                    "neither rdma-core nor infiniband-diags installed, no ibstat on PATH{}",
                    packages
                        .as_ref()
                        .err()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ),
            )
        }
    }

    fn kernel_check(&self, node: &str) -> PhaseMetric {
        let check = |status, detail: String| PhaseMetric::Check {
            node: node.to_string(),
            name: "kernel".into(),
            status,
            detail,
        };
        let Some(release) = self.first("kernel") else {
            return check(CheckStatus::Unknown, "uname -r not read".into());
        };
        let mut parts = release
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<u32>().ok());
        let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
            return check(
                CheckStatus::Unknown,
                format!("kernel release not understood: {release}"),
            );
        };
        if (major, minor) >= MIN_KERNEL {
            return check(
                CheckStatus::Ok,
                format!("{release} ≥ {}.{}", MIN_KERNEL.0, MIN_KERNEL.1),
            );
        }
        // RHEL-family kernels carry backports under an old version number.
        let vendor = release.contains(".el") || self.os_like("rhel");
        if vendor {
            check(
                CheckStatus::Warn,
                format!(
                    "{release} is older than {}.{} but a vendor kernel: confirm the backports the procedure needs",
                    MIN_KERNEL.0, MIN_KERNEL.1
                ),
            )
        } else {
            check(
                CheckStatus::Failed,
                format!("{release} is older than {}.{}", MIN_KERNEL.0, MIN_KERNEL.1),
            )
        }
    }

    fn os_like(&self, family: &str) -> bool {
        self.sections.get("os").unwrap_or_default().iter().any(|l| {
            (l.starts_with("ID=") || l.starts_with("ID_LIKE="))
                && l.to_ascii_lowercase().contains(family)
        })
    }

    fn numa_check(&self, node: &str) -> PhaseMetric {
        let check = |status, detail: String| PhaseMetric::Check {
            node: node.to_string(),
            name: "gpu-numa".into(),
            status,
            detail,
        };
        let Some(lines) = self.sections.get("numa") else {
            return check(CheckStatus::Unknown, "NUMA placement not read".into());
        };
        let nodes: u32 = lines
            .iter()
            .find_map(|l| l.strip_prefix("nodes "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let gpus: Vec<(&str, i64)> = lines
            .iter()
            .filter(|l| !l.starts_with("nodes "))
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?, w.next()?.parse().ok()?))
            })
            .collect();
        if gpus.is_empty() {
            return check(
                CheckStatus::Unknown,
                "no GPU bound to the nvidia driver in sysfs".into(),
            );
        }
        let unplaced: Vec<&str> = gpus.iter().filter(|g| g.1 < 0).map(|g| g.0).collect();
        if nodes > 1 && !unplaced.is_empty() {
            return check(
                CheckStatus::Warn,
                format!(
                    "{nodes} NUMA nodes but {} GPU(s) report none ({}): loaders cannot be pinned near them",
                    unplaced.len(),
                    unplaced.join(", ")
                ),
            );
        }
        let placed: Vec<String> = gpus.iter().map(|(b, n)| format!("{b}→{n}")).collect();
        check(
            CheckStatus::Ok,
            format!("{nodes} NUMA node(s); GPUs {}", placed.join(", ")),
        )
    }

    fn acs_check(&self, node: &str) -> PhaseMetric {
        // `lspci -vvv` starts each device with its address (`0000:16:00.0 PCI bridge: …`, or
        // `16:00.0 …`); the ACS lines that follow are that device's.
        fn is_device_line(l: &str) -> bool {
            let Some(first) = l.split_whitespace().next() else {
                return false;
            };
            let parts: Vec<&str> = first.split([':', '.']).collect();
            matches!(parts.len(), 3 | 4)
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit()))
        }
        let check = |status, detail: String| PhaseMetric::Check {
            node: node.to_string(),
            name: "pcie-acs".into(),
            status,
            detail,
        };
        let lines = self.sections.get("acs").unwrap_or_default();
        if let Some(why) = lines
            .iter()
            .find(|l| l.contains("not installed") || l.contains("access denied"))
        {
            return check(
                CheckStatus::Unknown,
                format!("ACS settings not readable here: {why}"),
            );
        }
        // A bridge whose ACS redirects requests upstream stops GPU↔NIC peer-to-peer.
        let mut bridge = "";
        let mut redirecting = Vec::new();
        let mut seen = 0;
        for l in lines {
            if let Some(ctl) = l.split("ACSCtl:").nth(1) {
                seen += 1;
                if ctl.contains("ReqRedir+") || ctl.contains("CmpltRedir+") {
                    redirecting.push(bridge.split_whitespace().next().unwrap_or("?").to_string());
                }
            } else if is_device_line(l) {
                bridge = l;
            }
        }
        if seen == 0 {
            return check(
                CheckStatus::Unknown,
                "lspci showed no ACS control (run as root to read it)".into(),
            );
        }
        if redirecting.is_empty() {
            check(
                CheckStatus::Ok,
                format!("{seen} bridge(s) with ACS, none redirecting peer-to-peer"),
            )
        } else {
            check(
                CheckStatus::Warn,
                format!(
                    "ACS redirect on {} bridge(s) ({}): GPU↔NIC peer-to-peer goes through the root complex (GPUDirect RDMA slows or fails)",
                    redirecting.len(),
                    redirecting.join(", ")
                ),
            )
        }
    }
}

fn describe(state: &ServiceState) -> String {
    match state {
        ServiceState::Active => "active".into(),
        ServiceState::Not(w) => w.clone(),
        ServiceState::Unknown(why) => format!("unknown ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(text: &str, expected: u32) -> Vec<(String, CheckStatus, String)> {
        let mut p = PreflightParser::new();
        for l in text.lines() {
            p.push(l);
        }
        crate::parsers::sanity::check_rows(p.finish("n1", expected))
    }

    fn status_of(checks: &[(String, CheckStatus, String)], name: &str) -> (CheckStatus, String) {
        checks
            .iter()
            .find(|c| c.0 == name)
            .map(|c| (c.1, c.2.clone()))
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
    }

    /// T0 says what the node is made of, for the later phases' spec floors: the real H200
    /// VM's older query by name (no ID), a B300 node by PCI ID with its RDMA ports.
    #[test]
    fn t0_keeps_the_parts_the_spec_floors_need() {
        use crate::model::spec::HardwareSpec;
        let parts = |text: &str| {
            let mut p = PreflightParser::new();
            for l in text.lines() {
                p.push(l);
            }
            p.finish("n1", 1)
                .into_iter()
                .find_map(|m| match m {
                    PhaseMetric::Parts { parts, .. } => Some(parts),
                    _ => None,
                })
                .expect("a parts metric")
        };
        let h200 = parts(&crate::parsers::fixtures::tool_output(
            "preflight/h200-vm-ubuntu24.txt",
        ));
        assert_eq!(h200.gpus.len(), 1, "{h200:?}");
        assert_eq!((h200.gpus[0].pci_id, h200.gpus[0].count), (None, 1));
        let hw = HardwareSpec::shipped().resolve(&h200);
        assert_eq!(hw.gpu.map(|g| g.model), Ok("H200".to_string()));
        let b300 = parts(&HGX_B300.replace(
            "== numa",
            "mlx5_2 1 0xa2dc Ethernet 200 Gb/sec (2X HDR)\n== numa",
        ));
        let hw = HardwareSpec::shipped().resolve(&b300);
        assert_eq!(hw.gpu.map(|g| g.model), Ok("B300".to_string()));
        // The compute fabric's ports: the InfiniBand ConnectX-8s, not the Ethernet BlueField.
        assert_eq!(hw.nic.map(|n| n.model), Ok("ConnectX-8".to_string()));
        assert_eq!((hw.nic_ports, hw.gpus), (2, 2));
    }

    #[test]
    fn the_real_h200_vm() {
        let text = crate::parsers::fixtures::tool_output("preflight/h200-vm-ubuntu24.txt");
        let c = run(&text, 1);
        let ok = |name: &str| {
            let (s, d) = status_of(&c, name);
            assert_eq!(s, CheckStatus::Ok, "{name}: {d}");
        };
        ok("driver-branch");
        ok("open-kernel-module");
        ok("gpu-count");
        ok("kernel");
        ok("fabric-manager");
        ok("nvlsm");
        ok("gpu-numa");
        ok("xid");
        assert!(status_of(&c, "driver-branch").1.contains(
            "R580 ≥ R570: NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04"
        ));
        // The VM has no systemd, no RDMA user space and no lspci: said, not passed.
        assert_eq!(
            status_of(&c, "persistenced").0,
            CheckStatus::Warn,
            "persistence mode is on"
        );
        assert!(
            status_of(&c, "persistenced")
                .1
                .contains("systemctl: not found")
        );
        assert_eq!(status_of(&c, "rdma-userspace").0, CheckStatus::Failed);
        assert_eq!(status_of(&c, "pcie-acs").0, CheckStatus::Unknown);
    }

    #[test]
    fn a_container_without_a_driver_fails_on_the_driver_and_never_panics() {
        let text =
            crate::parsers::fixtures::tool_output("preflight/no-driver-container-debian12.txt");
        let c = run(&text, 8);
        assert_eq!(status_of(&c, "driver-branch").0, CheckStatus::Failed);
        assert!(
            status_of(&c, "driver-branch")
                .1
                .contains("No such file or directory")
        );
        assert_eq!(status_of(&c, "gpu-count").0, CheckStatus::Failed);
        assert!(c.iter().all(|x| x.0 != "open-kernel-module"));
    }

    /// A B300 HGX node as the site's procedure wants it, built from the tools' documented
    /// formats (no such node was at hand); the variants below break one thing each.
    const HGX_B300: &str = "== driver
NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Fri Sep 26 21:16:01 UTC 2025
== gpus
0, NVIDIA B300 SXM6 AC, 00000000:18:00.0, Enabled, 0x318210DE
1, NVIDIA B300 SXM6 AC, 00000000:2A:00.0, Enabled, 0x318210DE
== nvswitches
2
== kernel
6.8.0-85-generic
== os
PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"
ID=ubuntu
== fabricmanager-version
Fabric Manager version is : 580.95.05
== services
nvidia-fabricmanager active
nvidia-persistenced active
nvidia-nvlsm active
== packages
manager dpkg
ii nvlink5-580 580.95.05-1
ii rdma-core 50.0-2ubuntu0.2
ii infiniband-diags 50.0-2ubuntu0.2
== rdma-tools
ibstat /usr/sbin/ibstat
== nics
mlx5_0 1 0x1023 InfiniBand 800 Gb/sec (4X XDR)
mlx5_1 1 0x1023 InfiniBand 800 Gb/sec (4X XDR)
== numa
nodes 2
0000:18:00.0 0
0000:2a:00.0 1
== acs
17:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)
ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
== xid
";

    #[test]
    fn a_b300_node_as_the_procedure_wants_passes_every_check() {
        let c = run(HGX_B300, 2);
        for (name, status, detail) in &c {
            assert_eq!(*status, CheckStatus::Ok, "{name}: {detail}");
        }
        assert_eq!(c.len(), 15, "{c:?}");
    }

    #[test]
    fn each_departure_from_the_procedure_is_named() {
        let broken = |from: &str, to: &str| run(&HGX_B300.replace(from, to), 2);
        let c = broken(
            "Open Kernel Module for x86_64  580",
            "x86_64 Kernel Module  580",
        );
        assert_eq!(status_of(&c, "open-kernel-module").0, CheckStatus::Failed);
        let c = broken("580.95.05  Release", "565.57.01  Release");
        assert_eq!(status_of(&c, "driver-branch").0, CheckStatus::Failed);
        assert_eq!(
            status_of(&c, "fabric-manager-version").0,
            CheckStatus::Failed,
            "FM ≠ driver"
        );
        let c = broken("nvidia-fabricmanager active", "nvidia-fabricmanager failed");
        assert_eq!(
            status_of(&c, "fabric-manager-active"),
            (CheckStatus::Failed, "nvidia-fabricmanager is failed".into())
        );
        let c = broken("Fabric Manager version is : 580.95.05\n", "");
        assert_eq!(
            status_of(&c, "fabric-manager-version").0,
            CheckStatus::Failed
        );
        let c = broken("nvidia-nvlsm active", "nvidia-nvlsm inactive");
        assert_eq!(status_of(&c, "nvlsm").0, CheckStatus::Failed);
        let c = broken("ii nvlink5-580 580.95.05-1\n", "");
        assert_eq!(status_of(&c, "nvlink5-package").0, CheckStatus::Failed);
        let c = broken("6.8.0-85-generic", "5.15.0-126-generic");
        assert_eq!(status_of(&c, "kernel").0, CheckStatus::Failed);
        let c = broken("6.8.0-85-generic", "5.14.0-503.15.1.el9_5.x86_64");
        assert_eq!(
            status_of(&c, "kernel").0,
            CheckStatus::Warn,
            "vendor backport"
        );
        let c = broken("nvidia-persistenced active", "nvidia-persistenced inactive");
        assert_eq!(
            status_of(&c, "persistenced").0,
            CheckStatus::Warn,
            "mode on"
        );
        let c = broken("0000:2a:00.0 1", "0000:2a:00.0 -1");
        assert_eq!(status_of(&c, "gpu-numa").0, CheckStatus::Warn);
        let c = broken("ReqRedir- CmpltRedir-", "ReqRedir+ CmpltRedir+");
        let (s, d) = status_of(&c, "pcie-acs");
        assert_eq!(s, CheckStatus::Warn);
        assert!(d.contains("17:00.0"), "{d}");
        let c = broken(
            "== xid\n",
            "== xid\n[ 12.3] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n",
        );
        assert_eq!(status_of(&c, "xid").0, CheckStatus::Failed);
        let c = broken("manager dpkg", "manager none");
        assert_eq!(status_of(&c, "nvlink5-package").0, CheckStatus::Unknown);
        let c = broken(
            "1, NVIDIA B300 SXM6 AC, 00000000:2A:00.0, Enabled, 0x318210DE\n",
            "",
        );
        assert_eq!(status_of(&c, "gpu-count").0, CheckStatus::Failed);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec("(== )?.{0,80}", 0..40)) {
            let mut p = PreflightParser::new();
            for l in &lines {
                p.push(l);
            }
            let _ = p.finish("n", 8);
        }

        #[test]
        fn every_section_with_garbage_never_panics(junk in proptest::collection::vec(".{0,60}", 13)) {
            let names = ["driver", "gpus", "nvswitches", "kernel", "os", "fabricmanager-version",
                "services", "packages", "rdma-tools", "numa", "acs", "xid", "other"];
            let mut p = PreflightParser::new();
            for (n, j) in names.iter().zip(&junk) {
                p.push(&format!("== {n}"));
                p.push(j);
            }
            let _ = p.finish("n", 8);
        }
    }
}
