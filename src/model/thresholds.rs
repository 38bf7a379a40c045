//! The numbers the triage rules judge by (`[triage]` in burnin.toml, read with the inventory), with
//! defaults sensible for H200/B300 under a burn-in load.

/// How long a GPU must have been idle, amid loaded peers, to count as stalled.
pub const STALL_WINDOW_MS: u64 = 10_000;
/// How far back error counters must not rise.
pub const COUNTER_WINDOW_MS: u64 = 10_000;
/// Below this utilization a GPU counts as idle.
pub const STALL_UTIL_PCT: f64 = 5.0;
/// Peers' median utilization above which the node counts as loaded.
pub const LOADED_UTIL_PCT: f64 = 50.0;
/// A GPU under this share of its peers' median power while they are loaded is stalled.
pub const STALL_POWER_SHARE: f64 = 0.40;
/// AIStor p99 TTFB above this is a finding.
pub const AISTOR_P99_TTFB_MS: f64 = 200.0;
/// Dataloader wait above this share of step time is a finding.
pub const LOADER_WAIT_SHARE: f64 = 0.10;
/// GPM SM activity under this while utilization reads busy: a kernel spins on a few SMs (the
/// signature of a hung collective).
pub const BUSY_IDLE_SM_PCT: f64 = 5.0;
/// Busy-idle needs the power to agree: a kernel spinning on a few SMs draws little (119 W of
/// 700 on the H200 capture), a GEMM near the limit (688 W). Mean power over the window under
/// this share of the enforced limit corroborates the GPM reading.
pub const BUSY_IDLE_POWER_PCT: f64 = 50.0;
/// The GPU-hang sign that needs no GPM, as scitix/sichek ships it
/// (`components/gpuevents/config/default_event_rules.yaml` @3ef7ea1, `GPUHang`): utilization at
/// or above 95 %, power under the model's floor, SM clock at or above the model's, PCIe rx and
/// tx each at most 300 MB/s, held 60 s, then re-checked every 10 s until 5 detections.
pub const HANG_UTIL_PCT: f64 = 95.0;
/// sichek `GPUHang` `rxpci`/`txpci`: 300 MB/s each.
pub const HANG_PCIE_BYTES_PER_SEC: f64 = 300e6;
/// sichek `GPUHang` `pwr` default (models without their own: all but H100 and H200).
pub const HANG_POWER_DEFAULT_W: f64 = 100.0;
/// sichek `GPUHang` `smclk` default.
pub const HANG_SM_CLOCK_DEFAULT_MHZ: f64 = 1400.0;
/// sichek `GPUHang` `duration_threshold` (60 s) plus four re-checks `query_interval_after_abnormal`
/// (10 s) apart for its 5 detections: the pattern must hold over this whole window.
pub const HANG_WINDOW_MS: u64 = 60_000 + 4 * 10_000;
/// Readings the window needs at least (sichek's `abnormal_detected_times`).
pub const HANG_DETECTIONS: usize = 5;
/// SM clock under this share of its maximum while loaded is a finding. An H200 at its 700 W cap
/// runs at 67–75 % of max (shared/fixtures/h200), so the default sits well below that.
pub const CLOCK_LOW_PCT: f64 = 50.0;
/// How long a finding stays listed after its rule stopped firing, so it does not flap.
pub const CLEAR_AFTER_MS: u64 = 5_000;
/// A level rule, once fired, keeps firing until its number falls below this share of the
/// threshold (level hysteresis; `CLEAR_AFTER_MS` is the time hysteresis).
pub const RELEASE_SHARE: f64 = 0.8;

/// Samples covering `window_ms` at `period_ms` (at least three, so one odd sample never decides).
pub fn samples_in(window_ms: u64, period_ms: u64) -> usize {
    (window_ms.div_ceil(period_ms.max(1)) as usize).max(3)
}

/// The numbers the rules judge by: burnin.toml's `[triage]` table, or these defaults (sensible
/// for H200/B300 under a burn-in load).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// How long a GPU must be idle amid loaded peers to count as stalled, ms.
    pub stall_window_ms: u64,
    /// Below this utilization a GPU counts as idle, %.
    pub stall_util_pct: f64,
    /// Peers' median utilization above which the node counts as loaded, %.
    pub loaded_util_pct: f64,
    /// Under this share of its peers' median power, a GPU of a loaded node is stalled, %.
    pub stall_power_pct: f64,
    /// AIStor GET p99 TTFB above this is a finding, ms.
    pub aistor_p99_ttfb_ms: f64,
    /// Dataloader wait above this share of step time is a finding, %.
    pub loader_wait_pct: f64,
    /// GPM SM activity under this while utilization reads loaded is "busy but idle", %.
    pub busy_idle_sm_pct: f64,
    /// …only while the mean power stays under this share of the enforced limit, %.
    pub busy_idle_power_pct: f64,
    /// SM clock under this share of its maximum while loaded is a finding, %.
    pub clock_low_pct: f64,
    /// How long a finding stays listed after its rule stopped firing, ms.
    pub clear_after_ms: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            stall_window_ms: STALL_WINDOW_MS,
            stall_util_pct: STALL_UTIL_PCT,
            loaded_util_pct: LOADED_UTIL_PCT,
            stall_power_pct: STALL_POWER_SHARE * 100.0,
            aistor_p99_ttfb_ms: AISTOR_P99_TTFB_MS,
            loader_wait_pct: LOADER_WAIT_SHARE * 100.0,
            busy_idle_sm_pct: BUSY_IDLE_SM_PCT,
            busy_idle_power_pct: BUSY_IDLE_POWER_PCT,
            clock_low_pct: CLOCK_LOW_PCT,
            clear_after_ms: CLEAR_AFTER_MS,
        }
    }
}
