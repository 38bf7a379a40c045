//! The storage probe's one-second window: what `burnin probe s3 --json-lines` streams and the
//! storage pane draws.

use serde::{Deserialize, Serialize};

use crate::model::UnixMillis;

/// GET statistics over one reporting window of the AIStor/S3 probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeWindow {
    /// End of the window.
    pub at_ms: UnixMillis,
    /// Endpoint as configured (never with credentials).
    pub endpoint: String,
    /// Median time to first byte (NaN: no GET completed in the window; `null` in JSON).
    #[serde(with = "nan_as_null")]
    pub ttfb_p50_ms: f64,
    /// 99th percentile time to first byte.
    #[serde(with = "nan_as_null")]
    pub ttfb_p99_ms: f64,
    /// 99th percentile total GET time.
    #[serde(with = "nan_as_null")]
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

/// JSON has no NaN: a window without a completed GET writes its latencies as `null` and reads
/// them back as NaN.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}
