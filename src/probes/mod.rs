//! Storage probes: [`s3`] measures an AIStor/S3 endpoint (GET latency and throughput, a
//! dataloader's wait, checkpoint save and restore, the server's own metrics); this module owns
//! the window it (and the simulator) sends to the loop.

pub mod s3;

use serde::{Deserialize, Serialize};

use crate::model::UnixMillis;

/// GET statistics over one reporting window of the AIStor/S3 probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeWindow {
    /// End of the window.
    pub at_ms: UnixMillis,
    /// Endpoint as configured (never with credentials).
    pub endpoint: String,
    /// Median time to first byte.
    pub ttfb_p50_ms: f64,
    /// 99th percentile time to first byte.
    pub ttfb_p99_ms: f64,
    /// 99th percentile total GET time.
    pub total_p99_ms: f64,
    /// Bytes received per second over the window.
    pub throughput_bytes_per_sec: f64,
    /// GETs completed in the window.
    pub requests: u64,
    /// GETs that failed in the window (any class).
    pub errors: u64,
    /// Workers issuing GETs (the sweep's current level), when the probe says.
    #[serde(default)]
    pub concurrency: Option<usize>,
}
