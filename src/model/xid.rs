//! The Xid playbook: what each code a site meets means, how bad it is, and the next step.

use super::finding::Severity;

/// What an Xid means, how bad it is, and what an engineer does next (NVIDIA's Xid catalogue,
/// shortened for one line each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    /// What happened.
    pub meaning: &'static str,
    /// Crit for the hardware's own faults; warn where the application is the usual cause (a GPU
    /// fault only if it recurs across jobs) or the GPU only asks for a reset later.
    pub severity: Severity,
    /// The next step.
    pub next: &'static str,
}

/// What to do about an Xid the catalogue does not know.
pub const XID_UNKNOWN_NEXT: &str =
    "drain the node; collect nvidia-bug-report.sh; look the code up in NVIDIA's Xid catalogue";

/// The playbook entry for an Xid code.
pub fn xid_info(code: u32) -> XidInfo {
    use Severity::{Crit, Warn};
    let (meaning, severity, next) = match code {
        13 => (
            "graphics engine exception (often the application: illegal instruction or address)",
            Warn,
            "read the job's error; if burnin's own workload or several jobs hit it, run dcgmi diag -r 3 on the GPU",
        ),
        31 => (
            "GPU memory page fault (usually an illegal address in the application)",
            Warn,
            "check the job for an illegal memory access; if it recurs across jobs, run dcgmi diag -r 3",
        ),
        43 => (
            "GPU stopped processing (a channel was reset; usually the application faulted)",
            Warn,
            "look at the job that was stopped; the GPU itself keeps working",
        ),
        45 => (
            "preemptive cleanup after earlier errors",
            Warn,
            "look at the Xid before it on this GPU: that one is the cause",
        ),
        48 => (
            "double-bit ECC error (uncorrectable memory error)",
            Crit,
            "drain the GPU, reset it so the row is remapped, check remapped rows; RMA if it recurs",
        ),
        61 => (
            "internal micro-controller breakpoint/warning",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU; check driver and firmware versions if it recurs",
        ),
        62 => (
            "internal micro-controller halt",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU; RMA if it recurs",
        ),
        63 => (
            "ECC row remap recorded (takes effect at the next GPU reset)",
            Warn,
            "reset the GPU at the next drain so the remap applies; watch the remapped-row counts",
        ),
        64 => (
            "ECC row remap failed to record",
            Crit,
            "drain the GPU: it cannot remap the failing row; RMA",
        ),
        74 => (
            "NVLink error",
            Crit,
            "read nvidia-smi nvlink -e and the fabric manager log; reset the GPU; RMA the board if it recurs",
        ),
        79 => (
            "GPU has fallen off the bus",
            Crit,
            "check power, PCIe seating and temperatures; reboot the node; RMA if it recurs",
        ),
        92 => (
            "high single-bit ECC error rate",
            Warn,
            "watch the corrected ECC counts; run dcgmi diag -r 3; plan an RMA if the rate stays high",
        ),
        94 => (
            "contained ECC error (the job on that memory was stopped)",
            Crit,
            "reset the GPU once drained so the row is remapped; check remapped rows",
        ),
        95 => (
            "uncontained ECC error (every job on the GPU is affected)",
            Crit,
            "drain and reset the GPU now; check row remapping; RMA if it recurs",
        ),
        119 => (
            "GSP RPC timeout (the GPU's firmware did not answer)",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU or reboot the node; check the driver version",
        ),
        120 => (
            "GSP error (the GPU's firmware faulted)",
            Crit,
            "collect nvidia-bug-report.sh; reset the GPU or reboot the node; check the driver version",
        ),
        140 => (
            "unrecovered ECC error",
            Crit,
            "drain and reset the GPU; check row remapping; RMA if it recurs",
        ),
        _ => ("see NVIDIA's Xid catalogue", Crit, XID_UNKNOWN_NEXT),
    };
    XidInfo {
        meaning,
        severity,
        next,
    }
}

/// What an Xid code means (see [`xid_info`]).
pub fn xid_meaning(code: u32) -> &'static str {
    xid_info(code).meaning
}
