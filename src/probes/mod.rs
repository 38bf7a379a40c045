//! Storage probes: [`s3`] measures an AIStor/S3 endpoint (GET latency and throughput, a
//! dataloader's wait, checkpoint save and restore, the server's own metrics). The window it
//! (and the simulator) sends to the loop is `model::probe::ProbeWindow`.

pub mod s3;

#[cfg(test)]
mod tests {
    use crate::model::probe::ProbeWindow;

    #[test]
    fn an_empty_window_round_trips_through_json() {
        let w = ProbeWindow {
            at_ms: 1,
            endpoint: "http://e".into(),
            ttfb_p50_ms: f64::NAN,
            ttfb_p99_ms: 3.5,
            total_p99_ms: f64::NAN,
            throughput_bytes_per_sec: 0.0,
            requests: 0,
            errors: 4,
            concurrency: Some(8),
        };
        let text = serde_json::to_string(&w).expect("json");
        assert!(text.contains("\"ttfb_p50_ms\":null"), "{text}");
        let back: ProbeWindow = serde_json::from_str(&text).expect("back");
        assert!(back.ttfb_p50_ms.is_nan() && back.total_p99_ms.is_nan());
        assert_eq!((back.ttfb_p99_ms, back.errors), (3.5, 4));
    }
}
