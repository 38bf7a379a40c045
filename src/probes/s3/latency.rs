//! Request latencies into HDR histograms, read back as the percentiles the engineer compares:
//! p50/p90/p99/max. Values are recorded in microseconds with three significant digits, so a
//! percentile is within 0.1 % of the value measured, from 1 µs to an hour.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram holds; longer requests are clamped to it (and counted).
const MAX_RECORDABLE_US: u64 = 3_600_000_000;

/// A latency distribution being collected.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    histogram: Histogram<u64>,
    /// Requests longer than [`MAX_RECORDABLE_US`], recorded at that value.
    clamped: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    #[allow(clippy::expect_used, reason = "constant bounds hdrhistogram accepts")]
    pub fn new() -> Self {
        Self {
            // Bounds are constants that hdrhistogram accepts; this cannot fail.
            histogram: Histogram::new_with_bounds(1, MAX_RECORDABLE_US, 3)
                .expect("constant histogram bounds are valid"),
            clamped: 0,
        }
    }

    /// Records one request's latency.
    pub fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        if us > MAX_RECORDABLE_US {
            self.clamped += 1;
        }
        self.histogram.saturating_record(us.min(MAX_RECORDABLE_US));
    }

    /// Adds another histogram's values (one per worker, merged at the end of a window).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so `add` cannot fail; saturate rather than panic anyway.
        if self.histogram.add(&other.histogram).is_err() {
            for v in other.histogram.iter_recorded() {
                self.histogram
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        self.clamped += other.clamped;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Empties it for the next window.
    pub fn reset(&mut self) {
        self.histogram.reset();
        self.clamped = 0;
    }

    /// The percentiles, or `None` when nothing was recorded (a window without a finished
    /// request has no latency, not a latency of zero).
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.histogram.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(LatencySummary {
            count: self.histogram.len(),
            p50_ms: ms(self.histogram.value_at_quantile(0.50)),
            p90_ms: ms(self.histogram.value_at_quantile(0.90)),
            p99_ms: ms(self.histogram.value_at_quantile(0.99)),
            max_ms: ms(self.histogram.max()),
            mean_ms: self.histogram.mean() / 1000.0,
            clamped: self.clamped,
            quantiles_ms: CDF_QUANTILES.map(|q| ms(self.histogram.value_at_quantile(q))),
        })
    }
}

/// The quantiles a summary keeps for the report's latency CDF: dense at the tail, where
/// storage trouble shows.
pub const CDF_QUANTILES: [f64; 16] = [
    0.01, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.95, 0.99, 0.995, 0.999, 1.0,
];

impl LatencySummary {
    /// (latency ms, share of requests at or under it) at [`CDF_QUANTILES`]; empty for a
    /// summary written before they were kept.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        if self.quantiles_ms.iter().all(|v| *v == 0.0) {
            return Vec::new();
        }
        self.quantiles_ms
            .iter()
            .zip(CDF_QUANTILES)
            .map(|(ms, q)| (*ms, q))
            .collect()
    }
}

/// Percentiles of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values it is made of.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Values longer than an hour, recorded as an hour.
    pub clamped: u64,
    /// Latency at each of [`CDF_QUANTILES`] (zeros in reports made before they were kept).
    #[serde(default)]
    pub quantiles_ms: [f64; 16],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn percentiles_of_one_to_a_thousand_ms() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000 {
            h.record(ms(v));
        }
        let s = h.summary().expect("values recorded");
        assert_eq!(s.count, 1000);
        // Three significant digits: each percentile is within 0.1 % of the exact rank value.
        for (got, want) in [(s.p50_ms, 500.0), (s.p90_ms, 900.0), (s.p99_ms, 990.0)] {
            assert!((got - want).abs() <= want * 0.001, "{got} vs {want}");
        }
        assert!((s.max_ms - 1000.0).abs() <= 1.0, "{}", s.max_ms);
        assert!((s.mean_ms - 500.5).abs() <= 0.5, "{}", s.mean_ms);
        // The CDF's points: each quantile's latency is that share of 1..1000 ms.
        let cdf = s.cdf();
        assert_eq!(cdf.len(), CDF_QUANTILES.len());
        for (ms, q) in cdf {
            assert!(
                (ms - 1000.0 * q).abs() <= (1000.0 * q * 0.001).max(1.0),
                "{ms} at {q}"
            );
        }
        // A summary from a report made before the quantiles were kept has no CDF.
        let old: LatencySummary = serde_json::from_str(
            r#"{"count":1,"p50_ms":1.0,"p90_ms":1.0,"p99_ms":1.0,"max_ms":1.0,"mean_ms":1.0,"clamped":0}"#,
        )
        .expect("old summary");
        assert!(old.cdf().is_empty());
    }

    #[test]
    fn a_tail_shows_in_p99_not_p50() {
        let mut h = LatencyHistogram::new();
        for _ in 0..980 {
            h.record(ms(10));
        }
        for _ in 0..20 {
            h.record(ms(2000));
        }
        let s = h.summary().expect("values recorded");
        assert!((s.p50_ms - 10.0).abs() < 0.01, "{}", s.p50_ms);
        assert!((s.p90_ms - 10.0).abs() < 0.01, "{}", s.p90_ms);
        assert!((s.p99_ms - 2000.0).abs() <= 2.0, "{}", s.p99_ms);
    }

    #[test]
    fn merged_workers_equal_one_histogram() {
        let mut one = LatencyHistogram::new();
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for v in 1..=500 {
            a.record(ms(v));
            one.record(ms(v));
        }
        for v in 501..=1000 {
            b.record(ms(v));
            one.record(ms(v));
        }
        a.merge(&b);
        assert_eq!(a.summary(), one.summary());
    }

    #[test]
    fn empty_has_no_summary_and_sub_microsecond_counts() {
        let mut h = LatencyHistogram::new();
        assert_eq!(h.summary(), None);
        h.record(Duration::from_nanos(10));
        assert_eq!(h.count(), 1);
        h.reset();
        assert_eq!(h.summary(), None);
    }

    #[test]
    fn over_an_hour_is_clamped_and_counted() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_secs(7200));
        let s = h.summary().expect("one value");
        assert_eq!(s.clamped, 1);
        assert!(s.max_ms <= 3_600_000.0 * 1.001);
    }
}
