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
//! The trap T0 has to name: with compat mode allowed, cuFile falls back to a bounce buffer
//! without failing, so a path that is not direct looks like it works and only runs slower.

use crate::model::phase::CheckStatus;

/// Back-end rows kept at most (gdscheck prints about 15).
const MAX_BACKENDS: usize = 64;
/// Properties kept at most (gdscheck prints about 40).
const MAX_PROPERTIES: usize = 256;
/// GPUs kept at most.
pub(super) const MAX_GPUS: usize = 64;
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

pub(super) fn cut(s: &str) -> String {
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

/// A line without the note an author wrote after it in a document (`DDN EXAScaler :
/// Supported      ← Lustre GDS 路径受支持`, `… succeeded   <- good`, `… : Supported   # note`):
/// cut at a run of two or more spaces followed by `←`, `<-` or `#`, which gdscheck itself never
/// prints after a value. Anything else stays, and a value it leaves that is none of gdscheck's
/// words is not read.
fn without_note(line: &str) -> &str {
    let mut from = 0;
    while let Some(at) = line[from..].find("  ").map(|i| i + from) {
        let rest = line[at..].trim_start();
        if rest.starts_with('←') || rest.starts_with("<-") || rest.starts_with('#') {
            return line[..at].trim_end();
        }
        // Past the whole run of spaces: each is looked at once.
        from = line.len() - rest.len();
    }
    line
}

/// Two back-end rows a copy glued into one line (`NVMe : Supported   NVMeOF : Unsupported`, a
/// translated document's paste): split after the first row's value, which must be one of
/// gdscheck's two words, followed by space and the next `NAME : VALUE`. Any other shape is
/// not split (a value gdscheck 1.16 prints as `nvfs, compat` cannot be told from a note).
fn glued_rows(line: &str) -> Option<(&str, &str)> {
    let (_, value) = line.split_once(':')?;
    let value = value.trim_start();
    let word = ["Supported", "Unsupported"]
        .into_iter()
        .find(|w| value.starts_with(w))?;
    let rest = &value[word.len()..];
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let second = rest.trim_start();
    let (name, v) = second.split_once(':')?;
    if name.trim().is_empty() || v.trim().is_empty() {
        return None;
    }
    let cut_at = line.len() - rest.len();
    Some((line[..cut_at].trim_end(), second))
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
        // A loop, not recursion: a hostile line of thousands of glued pairs must not grow the
        // stack.
        let mut rest = line;
        while let Some((first, second)) = glued_rows(rest) {
            self.read_one(first);
            rest = second;
        }
        self.read_one(rest);
    }

    fn read_one(&mut self, line: &str) {
        let line = without_note(line);
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
#[path = "gds_tests.rs"]
mod tests;
