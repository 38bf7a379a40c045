//! When the agent reads a GPU's GPM metrics (SM and tensor activity, DRAM, PCIe, NVLink
//! rates). A GPM sample costs 200–290 µs of CPU once the GPU was last sampled 10 ms or more
//! before (`--probe-costs` on the H200), the largest share of the agent's cost at a 1 s
//! interval. Only `busy-idle` needs GPM often: a GPU that looks loaded (utilization) while its
//! power says it does little. So the cost follows the trouble: such a suspect is read every
//! background round, as before; every other GPU at most every [`GPM_REFRESH`], its last
//! readings carried in between (the panes can live with SM activity ten seconds old on a
//! healthy GPU). A GPU that turns suspect after a long gap is read twice a moment apart, so its
//! first reading covers that moment, not the healthy seconds before: busy-idle fires as soon as
//! it did when every round read GPM.

use std::time::Duration;

/// Longest a GPU that is not a suspect goes without a GPM reading.
pub const GPM_REFRESH: Duration = Duration::from_secs(10);

/// Utilization from which a GPU counts as busy for the suspect test. Lower than triage's
/// "loaded" (whose threshold the site may set): a suspect read too often costs a little CPU,
/// one read too rarely delays a finding.
pub const SUSPECT_UTIL_PCT: f64 = 10.0;

/// Share of its power limit under which a busy GPU is a suspect. Above triage's busy-idle
/// power share (50 % by default), for the same reason.
pub const SUSPECT_POWER_SHARE: f64 = 0.75;

/// SM activity under which a busy GPU stays a suspect whatever its power says (its last GPM
/// reading already looked idle).
pub const SUSPECT_SM_PCT: f64 = 20.0;

/// What to do with one GPU's GPM this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpmRead {
    /// Carry the last readings.
    Carry,
    /// Sample and compute against the previous sample.
    Read,
    /// The previous sample is old: sample, wait a moment, sample again, and compute over
    /// that moment.
    Prime,
}

/// One GPU's GPM schedule.
#[derive(Debug, Clone, Default)]
pub struct GpmCadence {
    /// Time of the last GPM sample, on the caller's clock (`None`: never sampled).
    last_sample: Option<Duration>,
}

/// Whether what the fast readings say makes a GPU a busy-idle suspect: busy by utilization
/// while its power (of its limit) is low, or its last GPM reading already showed few SMs
/// active. Unknown readings make no suspect.
pub fn is_suspect(
    util_pct: Option<f64>,
    power_watts: Option<f64>,
    limit_watts: Option<f64>,
    last_sm_pct: Option<f64>,
) -> bool {
    let Some(util) = util_pct.filter(|u| u.is_finite()) else {
        return false;
    };
    if util < SUSPECT_UTIL_PCT {
        return false;
    }
    let low_power = match (power_watts, limit_watts) {
        (Some(p), Some(l)) if p.is_finite() && l.is_finite() && l > 0.0 => {
            p < SUSPECT_POWER_SHARE * l
        }
        _ => false,
    };
    let idle_sms = last_sm_pct.is_some_and(|s| s.is_finite() && s < SUSPECT_SM_PCT);
    low_power || idle_sms
}

impl GpmCadence {
    /// What to do at `now` (the caller's monotonic clock), the GPU a suspect or not; `round`
    /// is the background round's length, which tells an old previous sample from a fresh one.
    pub fn decide(&mut self, now: Duration, suspect: bool, round: Duration) -> GpmRead {
        let since = self.last_sample.map(|t| now.saturating_sub(t));
        let read = match since {
            None => GpmRead::Read,
            Some(gap) if suspect && gap > round + round / 2 => GpmRead::Prime,
            Some(_) if suspect => GpmRead::Read,
            Some(gap) if gap >= GPM_REFRESH => GpmRead::Read,
            Some(_) => GpmRead::Carry,
        };
        if read != GpmRead::Carry {
            self.last_sample = Some(now);
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUND: Duration = Duration::from_secs(2);

    fn at(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_healthy_gpu_is_read_every_ten_seconds_and_a_suspect_every_round() {
        let mut c = GpmCadence::default();
        let reads: Vec<GpmRead> = (0..12).map(|r| c.decide(at(2 * r), false, ROUND)).collect();
        let read_at: Vec<u64> = reads
            .iter()
            .enumerate()
            .filter(|(_, r)| **r != GpmRead::Carry)
            .map(|(i, _)| 2 * i as u64)
            .collect();
        assert_eq!(read_at, [0, 10, 20]);
        // It turns suspect at 22 s, 2 s after its last read: read, no prime needed.
        assert_eq!(c.decide(at(22), true, ROUND), GpmRead::Read);
        assert_eq!(c.decide(at(24), true, ROUND), GpmRead::Read);
        // Healthy again, then suspect 8 s after the last read: primed, so its first reading
        // is of now, not of the healthy seconds before.
        assert_eq!(c.decide(at(26), false, ROUND), GpmRead::Carry);
        assert_eq!(c.decide(at(32), true, ROUND), GpmRead::Prime);
    }

    #[test]
    fn suspects_are_busy_with_low_power_or_few_sms() {
        // The real spinning kernel on the H200: 100 %, 124 W of 700.
        assert!(is_suspect(Some(100.0), Some(124.0), Some(700.0), None));
        // A GEMM near its limit, SMs busy: not a suspect.
        assert!(!is_suspect(
            Some(100.0),
            Some(690.0),
            Some(700.0),
            Some(88.0)
        ));
        // Near its limit but GPM last said 1 % of SMs: still watched closely.
        assert!(is_suspect(Some(100.0), Some(690.0), Some(700.0), Some(1.0)));
        // Idle, or readings missing: no suspect.
        assert!(!is_suspect(Some(0.0), Some(80.0), Some(700.0), Some(0.0)));
        assert!(!is_suspect(None, Some(80.0), Some(700.0), None));
        assert!(!is_suspect(Some(f64::NAN), Some(80.0), Some(700.0), None));
        assert!(!is_suspect(Some(100.0), None, None, None));
    }
}
