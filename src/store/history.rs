//! Bounded history of one metric, one slot per sample period. A missing sample (a node that
//! stalled, a reading that was `None`) leaves a gap that stays a gap: sparklines draw it blank
//! and statistics skip it, so a dropped link never looks like a zero reading. Values are kept as
//! `f32` with NaN for a gap (4 bytes a slot: a GPU's 7 series × 600 slots are 16.8 KB, 17 MB at
//! 1024 GPUs; 600 slots are 10 minutes at a 1 s period).

use std::collections::VecDeque;

use crate::model::UnixMillis;
use crate::model::units::Period;

/// Ring buffer of `Option<f64>` indexed by time slot.
#[derive(Debug, Clone)]
pub struct History {
    period_ms: u64,
    capacity: usize,
    /// Slot number (time / period) of the newest entry.
    last_slot: Option<u64>,
    values: VecDeque<f32>,
}

impl History {
    /// A history that keeps `capacity` slots of `period` each.
    pub fn new(period: Period, capacity: usize) -> Self {
        Self {
            period_ms: period.millis(),
            capacity: capacity.max(1),
            last_slot: None,
            values: VecDeque::with_capacity(capacity.max(1)),
        }
    }

    /// Record `value` at time `at_ms`. Slots skipped since the last push become gaps; a value for
    /// the newest slot replaces it; a value older than the newest slot is dropped (late frames
    /// must not rewrite what was already shown).
    pub fn push(&mut self, at_ms: UnixMillis, value: Option<f64>) {
        let slot = at_ms / self.period_ms;
        match self.last_slot {
            Some(last) if slot < last => {}
            Some(last) if slot == last => {
                if let (Some(newest), Some(v)) = (self.values.back_mut(), value) {
                    *newest = v as f32;
                }
            }
            Some(last) => {
                let gap = (slot - last - 1).min(self.capacity as u64) as usize;
                for _ in 0..gap {
                    self.push_slot(None);
                }
                self.push_slot(value);
                self.last_slot = Some(slot);
            }
            None => {
                self.push_slot(value);
                self.last_slot = Some(slot);
            }
        }
    }

    fn push_slot(&mut self, value: Option<f64>) {
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(value.map_or(f32::NAN, |v| v as f32));
    }

    /// The newest recorded value, if the newest slot has one.
    pub fn latest(&self) -> Option<f64> {
        self.values.back().copied().and_then(from_slot)
    }

    /// The newest `n` slots, oldest first, gaps as `None`.
    pub fn tail(&self, n: usize) -> impl Iterator<Item = Option<f64>> + '_ {
        let skip = self.values.len().saturating_sub(n);
        self.values.iter().skip(skip).copied().map(from_slot)
    }

    /// Number of slots held (gaps included).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Largest value over the newest `n` slots, gaps skipped.
    pub fn max_of_tail(&self, n: usize) -> Option<f64> {
        self.tail(n).flatten().fold(None, |acc, v| match acc {
            Some(a) if a >= v => Some(a),
            _ => Some(v),
        })
    }

    /// Mean over the newest `n` slots, gaps skipped.
    pub fn mean_of_tail(&self, n: usize) -> Option<f64> {
        let (sum, count) = self
            .tail(n)
            .flatten()
            .fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
        (count > 0).then(|| sum / count as f64)
    }
}

fn from_slot(v: f32) -> Option<f64> {
    (!v.is_nan()).then_some(v as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_periods_become_gaps() {
        let mut h = History::new(Period::SECOND, 10);
        h.push(1_000, Some(1.0));
        h.push(4_000, Some(4.0));
        assert_eq!(
            h.tail(10).collect::<Vec<_>>(),
            vec![Some(1.0), None, None, Some(4.0)]
        );
        assert_eq!(h.mean_of_tail(10), Some(2.5));
    }

    #[test]
    fn stays_bounded_and_ignores_late_samples() {
        let mut h = History::new(Period::SECOND, 3);
        for t in 0..10 {
            h.push(t * 1000, Some(t as f64));
        }
        h.push(2_000, Some(99.0));
        assert_eq!(h.len(), 3);
        assert_eq!(
            h.tail(3).collect::<Vec<_>>(),
            vec![Some(7.0), Some(8.0), Some(9.0)]
        );
        assert_eq!(h.max_of_tail(3), Some(9.0));
    }

    #[test]
    fn a_long_gap_does_not_grow_past_capacity() {
        let mut h = History::new(Period::SECOND, 4);
        h.push(0, Some(1.0));
        h.push(1_000_000_000, Some(2.0));
        assert_eq!(h.len(), 4);
        assert_eq!(h.latest(), Some(2.0));
    }
}
