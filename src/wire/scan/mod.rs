//! The frame line, the one message that arrives thousands of times a second: how the agent
//! writes it (the column form: the GPU fields any GPU has, named once, then one row of values per
//! GPU) and the fast path that reads it. The scanner reads the bytes once, taking each key where
//! the agent's order puts it; serde_json's generic path spent about 70 % of decode+store on key
//! scanning and number parsing.
//!
//! It answers only when it is sure. Anything off the beaten path (an escape in a string, an
//! unknown or repeated key, a negative number, an exponent, a number with more digits than an
//! `f64` holds exactly, a type serde would reject) makes it decline with `None`, and the caller
//! decodes the line with serde_json (`wire::decode_general`). So the fast path can only be
//! faster, never different: property tests hold it to serde_json's answer on every line it
//! accepts. It reads both forms: the column form, and one object per GPU (`gpus`, what agents
//! wrote before, and what the H200 fixtures hold). RDMA ports and Ethernet interfaces are read
//! by field name, each at most once, as serde's derive would.

mod read;
mod scanner;
#[cfg(test)]
mod tests;
mod write;

use crate::model::GpuSample;

pub use read::frame_line;
use read::{link_errors, xid_event};
use scanner::Scan;
pub use write::write_frame_line;
use write::{write_json, write_rate};

/// Every field of a GPU sample on the wire, in `GpuSample`'s order (the order the agent writes
/// them, so the scanner finds each key where it expects it), with how its value is written and
/// read. One table for the writer, the fast reader and the column list.
macro_rules! gpu_fields {
    ($($id:literal $field:ident: $kind:ident,)*) => {
        /// The keys of a GPU sample, as the wire names them.
        pub const GPU_KEYS: [&str; 34] = [$(stringify!($field)),*];

        /// Whether a GPU's field has a value worth a column (an absent reading does not).
        fn gpu_present(g: &GpuSample, k: usize) -> bool {
            match k {
                $($id => present_field!($kind, g.$field),)*
                _ => false,
            }
        }

        /// Write a GPU's field as one JSON value.
        fn gpu_write(g: &GpuSample, k: usize, out: &mut Vec<u8>) {
            match k {
                $($id => write_field!($kind, &g.$field, out),)*
                _ => out.extend_from_slice(b"null"),
            }
        }

        /// Read one JSON value into a GPU's field.
        fn gpu_read(s: &mut Scan<'_>, g: &mut GpuSample, k: usize) -> Option<()> {
            match k {
                $($id => g.$field = read_field!($kind, s),)*
                _ => return None,
            }
            Some(())
        }
    };
}

macro_rules! present_field {
    (index, $v:expr) => {
        true
    };
    (xids, $v:expr) => {
        !$v.is_empty()
    };
    (links, $v:expr) => {
        !$v.is_empty()
    };
    ($kind:ident, $v:expr) => {
        $v.is_some()
    };
}

macro_rules! write_field {
    (rate, $v:expr, $out:expr) => {
        write_rate(*$v, $out)
    };
    ($kind:ident, $v:expr, $out:expr) => {
        write_json($v, $out)
    };
}

macro_rules! read_field {
    (index, $s:expr) => {
        $s.u32()?
    };
    (f32, $s:expr) => {
        $s.opt(Scan::f32)?
    };
    (u32, $s:expr) => {
        $s.opt(Scan::u32)?
    };
    (u64, $s:expr) => {
        $s.opt(Scan::unsigned)?
    };
    (rate, $s:expr) => {
        $s.opt(Scan::f64)?
    };
    (bool, $s:expr) => {
        $s.opt(Scan::bool)?
    };
    (bools, $s:expr) => {
        $s.opt(|s| s.list(Scan::bool))?
    };
    (u32s, $s:expr) => {
        $s.opt(|s| s.list(Scan::u32))?
    };
    (xids, $s:expr) => {
        $s.list(xid_event)?
    };
    (links, $s:expr) => {
        $s.list(link_errors)?
    };
}

gpu_fields! {
    0 index: index,
    1 power_avg_watts: f32,
    2 power_instant_watts: f32,
    3 power_limit_watts: f32,
    4 temperature_c: f32,
    5 sm_clock_mhz: u32,
    6 sm_clock_max_mhz: u32,
    7 utilization_pct: f32,
    8 sm_active_pct: f32,
    9 tensor_active_pct: f32,
    10 dram_active_pct: f32,
    11 mem_clock_mhz: u32,
    12 memory_used_bytes: u64,
    13 memory_total_bytes: u64,
    14 clock_event_reasons: u64,
    15 ecc_corrected_volatile: u64,
    16 ecc_uncorrected_volatile: u64,
    17 nvlink_tx_bytes_per_sec: rate,
    18 nvlink_rx_bytes_per_sec: rate,
    19 nvlink_crc_errors: u64,
    20 nvlink_replay_errors: u64,
    21 nvlink_recovery_errors: u64,
    22 pcie_replay_count: u64,
    23 pcie_tx_bytes_per_sec: rate,
    24 pcie_rx_bytes_per_sec: rate,
    25 nvlink_links_active: u32,
    26 nvlink_link_up: bools,
    27 remapped_rows_correctable: u32,
    28 remapped_rows_uncorrectable: u32,
    29 remapped_rows_pending: bool,
    30 remapped_rows_failure: bool,
    31 compute_pids: u32s,
    32 xid_events: xids,
    33 nvlink_link_errors: links,
}
