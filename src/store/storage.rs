//! The storage probe's windows and the dataloader's steps, as the panes read them.

use super::*;

/// The AIStor/S3 probe's windows.
#[derive(Debug, Clone)]
pub struct StorageView {
    /// The newest window.
    pub latest: Option<ProbeWindow>,
    /// TTFB p50, ms.
    pub ttfb_p50_ms: History,
    /// TTFB p99, ms.
    pub ttfb_p99_ms: History,
    /// Throughput, bytes/s.
    pub throughput: History,
    /// Requests since the console started.
    pub requests_total: u64,
    /// Errors since the console started.
    pub errors_total: u64,
    /// Phase whose probe the view follows (`None`: a probe outside the plan, or the simulator).
    pub phase: Option<String>,
    /// Node whose probe the view follows.
    pub node: Option<String>,
}

impl StorageView {
    /// Takes one window.
    pub fn ingest(&mut self, window: ProbeWindow) {
        self.ttfb_p50_ms
            .push(window.at_ms, Some(window.ttfb_p50_ms));
        self.ttfb_p99_ms
            .push(window.at_ms, Some(window.ttfb_p99_ms));
        self.throughput
            .push(window.at_ms, Some(window.throughput_bytes_per_sec));
        self.requests_total += window.requests;
        self.errors_total += window.errors;
        self.latest = Some(window);
    }
}

/// Dataloader figures from training steps.
#[derive(Debug, Clone)]
pub struct LoaderView {
    /// Phase the steps came from.
    pub phase: Option<String>,
    /// Node whose job the view follows (`None`: a single job, as in the simulator).
    pub node: Option<String>,
    /// Data wait per step, ms (one slot per step).
    pub wait_ms: History,
    /// Step time per step, ms.
    pub step_ms: History,
    /// Newest step number.
    pub last_step: Option<u64>,
    /// Time to first batch of the newest job.
    pub first_batch_ms: Option<f64>,
    /// Newest tokens/s.
    pub tokens_per_sec: Option<f64>,
    /// Newest loss.
    pub loss: Option<f64>,
}

/// Steps the dataloader share is computed over.
pub const LOADER_WINDOW_STEPS: usize = 20;

impl LoaderView {
    pub(super) fn reset(&mut self, phase: String) {
        self.wait_ms = History::new(Period::MILLISECOND, HISTORY_SLOTS);
        self.step_ms = History::new(Period::MILLISECOND, HISTORY_SLOTS);
        self.last_step = None;
        self.first_batch_ms = None;
        self.tokens_per_sec = None;
        self.loss = None;
        self.node = None;
        self.phase = Some(phase);
    }

    /// Share of step time spent waiting for data over the last [`LOADER_WINDOW_STEPS`] steps.
    pub fn wait_share(&self) -> Option<f64> {
        let wait: f64 = self.wait_ms.tail(LOADER_WINDOW_STEPS).flatten().sum();
        let step: f64 = self.step_ms.tail(LOADER_WINDOW_STEPS).flatten().sum();
        (step > 0.0).then(|| wait / step)
    }
}
