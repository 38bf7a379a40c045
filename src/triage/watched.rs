//! What the telemetry log keeps per node, bounded so that no node's flood costs another node's
//! evidence (issue 41): when its frames came (as gaps, not one entry a frame, so a 72-hour run
//! is covered whole) and its Xids (a ring per node that gives up repeats before distinct codes,
//! and counts what it gives up).

use std::collections::{HashMap, VecDeque};

use crate::model::UnixMillis;
use crate::model::watch::XidSeen;

/// Gaps kept per node; older ones are counted, and a window that reaches them says so.
pub const GAPS_KEPT: usize = 1024;

/// Xids kept per node.
pub const XIDS_KEPT: usize = 256;

/// Seconds of dropped Xids remembered per node (one entry a second with drops).
const DROP_SECONDS_KEPT: usize = 4096;

/// Inter-frame intervals a node's own cadence is the median of.
const CADENCE_KEPT: usize = 16;

/// The first interval of a node only teaches its pace: it is a gap past this (a node that
/// connected and then hung for longer is caught by the window's end all the same).
const FIRST_INTERVAL_MS: u64 = 300_000;

/// When one node's frames came: the first and the last, and every stretch without a frame
/// longer than the node may go without losing evidence ([`Coverage::allowance`]).
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    first: Option<UnixMillis>,
    last: UnixMillis,
    /// (last frame before, next frame) of each stretch longer than the allowance.
    gaps: VecDeque<(UnixMillis, UnixMillis)>,
    /// Gaps no longer kept, and the newest end among them.
    gaps_dropped_until: Option<UnixMillis>,
    /// The latest intervals between frames (their median is the node's pace).
    intervals: VecDeque<u64>,
}

impl Coverage {
    /// How long this node may go without a frame: `floor_ms`, or three of its own intervals
    /// where it reports more slowly (a Prometheus node sends a frame a scrape: 15 or 30 s at
    /// many sites, and dcgm-exporter's last-Xid gauge keeps what came between).
    pub fn allowance(&self, floor_ms: u64) -> u64 {
        let mut v: Vec<u64> = self.intervals.iter().copied().collect();
        v.sort_unstable();
        v.get(v.len() / 2)
            .map_or(floor_ms, |median| floor_ms.max(median.saturating_mul(3)))
    }

    /// A frame arrived at `at_ms`; `floor_ms` as for [`Coverage::allowance`]. The first interval
    /// teaches the node's pace (a gap only past [`FIRST_INTERVAL_MS`]); every later one is
    /// judged against the pace before it, then joins it (a median: one hang does not move it).
    pub fn frame(&mut self, at_ms: UnixMillis, floor_ms: u64) {
        if self.first.is_none() {
            self.first = Some(at_ms);
            self.last = at_ms;
            return;
        }
        let interval = at_ms.saturating_sub(self.last);
        let limit = if self.intervals.is_empty() {
            floor_ms.max(FIRST_INTERVAL_MS)
        } else {
            self.allowance(floor_ms)
        };
        if interval > limit {
            if self.gaps.len() == GAPS_KEPT
                && let Some((_, end)) = self.gaps.pop_front()
            {
                self.gaps_dropped_until = Some(end);
            }
            self.gaps.push_back((self.last, at_ms));
        }
        if interval > 0 {
            if self.intervals.len() == CADENCE_KEPT {
                self.intervals.pop_front();
            }
            self.intervals.push_back(interval);
        }
        self.last = self.last.max(at_ms);
    }

    /// How much of `from..to` the node was without telemetry: every stretch without a frame
    /// longer than its allowance counts whole (the last frame before it to the next, or to the
    /// window's end); `None` when it sent no frame in it at all (silent). Where the window
    /// reaches gaps no longer kept, all of it up to them counts: not judged, never clean.
    pub fn uncovered(&self, from: UnixMillis, to: UnixMillis, floor_ms: u64) -> Option<u64> {
        let first = self.first?;
        let overlap = |a: UnixMillis, b: UnixMillis| b.min(to).saturating_sub(a.max(from));
        if first > to || self.last < from {
            return None;
        }
        if self.gaps.iter().any(|&(a, b)| a < from && b > to) {
            return None;
        }
        let allowance = self.allowance(floor_ms);
        let long = |a: UnixMillis, b: UnixMillis| b.saturating_sub(a) > allowance;
        let mut missing = 0;
        // Before the first frame, and after the last one.
        if long(from, first) {
            missing += overlap(from, first);
        }
        if long(self.last, to) {
            missing += overlap(self.last, to);
        }
        for &(a, b) in &self.gaps {
            missing += overlap(a, b);
        }
        if let Some(end) = self.gaps_dropped_until {
            missing += overlap(first, end);
        }
        Some(missing)
    }
}

/// One node's Xids: the newest [`XIDS_KEPT`], where a full ring gives up the oldest repeat of
/// a (GPU, code) it holds a newer one of before anything else, so a storm of one code keeps
/// the others; what it gives up is counted by the second it arrived.
#[derive(Debug, Clone, Default)]
pub struct NodeXids {
    kept: VecDeque<XidSeen>,
    /// How many of `kept` each (GPU, code) has: a repeat is found without a scan of pairs.
    counts: HashMap<(u32, u32), usize>,
    /// (second, Xids given up that arrived in it), oldest first.
    dropped: VecDeque<(UnixMillis, u64)>,
    /// Given up before the oldest second still listed.
    dropped_older: u64,
}

impl NodeXids {
    /// Take one Xid.
    pub fn push(&mut self, x: XidSeen) {
        if self.kept.len() >= XIDS_KEPT {
            // The oldest entry whose (GPU, code) the ring holds again later; else the oldest.
            let repeat = self.kept.iter().position(|old| {
                self.counts
                    .get(&(old.gpu, old.code))
                    .is_some_and(|n| *n > 1)
            });
            if let Some(gone) = self.kept.remove(repeat.unwrap_or(0)) {
                if let Some(n) = self.counts.get_mut(&(gone.gpu, gone.code)) {
                    *n -= 1;
                    if *n == 0 {
                        self.counts.remove(&(gone.gpu, gone.code));
                    }
                }
                self.count_dropped(gone.at_ms);
            }
        }
        *self.counts.entry((x.gpu, x.code)).or_default() += 1;
        self.kept.push_back(x);
    }

    fn count_dropped(&mut self, at_ms: UnixMillis) {
        let second = at_ms / 1000;
        match self.dropped.iter_mut().find(|(s, _)| *s == second) {
            Some((_, n)) => *n += 1,
            None => {
                if self.dropped.len() == DROP_SECONDS_KEPT
                    && let Some((_, n)) = self.dropped.pop_front()
                {
                    self.dropped_older += n;
                }
                self.dropped.push_back((second, 1));
            }
        }
    }

    /// The kept Xids that arrived in `from..=to`.
    pub fn within(&self, from: UnixMillis, to: UnixMillis) -> impl Iterator<Item = &XidSeen> {
        self.kept
            .iter()
            .filter(move |x| x.at_ms >= from && x.at_ms <= to)
    }

    /// How many Xids that arrived in `from..=to` were given up (to the second; those given up
    /// before the oldest second listed count when the window reaches back to them).
    pub fn dropped_within(&self, from: UnixMillis, to: UnixMillis) -> u64 {
        let listed: u64 = self
            .dropped
            .iter()
            .filter(|(s, _)| *s >= from / 1000 && *s <= to / 1000)
            .map(|(_, n)| n)
            .sum();
        let older = match self.dropped.front() {
            Some((s, _)) if from / 1000 < *s => self.dropped_older,
            None => self.dropped_older,
            _ => 0,
        };
        listed + older
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xid(node: &str, code: u32, at_ms: UnixMillis) -> XidSeen {
        XidSeen {
            node: node.into(),
            gpu: 0,
            code,
            at_ms,
        }
    }

    /// Issue 41: a storm of one code does not push out the one Xid of another.
    #[test]
    fn a_storm_of_one_code_keeps_the_other_codes_and_counts_what_it_gave_up() {
        let mut x = NodeXids::default();
        x.push(xid("n", 79, 1_000));
        for i in 0..10_000 {
            x.push(xid("n", 13, 2_000 + i));
        }
        let codes: Vec<u32> = x.within(0, u64::MAX).map(|x| x.code).collect();
        assert!(codes.contains(&79), "{codes:?}");
        assert_eq!(codes.len(), XIDS_KEPT);
        assert_eq!(x.dropped_within(0, u64::MAX), 10_001 - XIDS_KEPT as u64);
        // Nothing was given up from before the storm's second.
        assert_eq!(x.dropped_within(0, 1_999), 0);
    }

    #[test]
    fn a_node_quiet_for_most_of_the_window_is_uncovered_for_that_long() {
        let floor = 10_000;
        let mut c = Coverage::default();
        for t in (0..=3_000).step_by(1_000) {
            c.frame(t, floor);
        }
        // Hung after 3 s; the window is 31 s: 28 s without a frame.
        assert_eq!(c.uncovered(0, 31_000, 10_000), Some(28_000));
        // A stretch within the allowance is no loss (queued Xids arrive with the next frame).
        assert_eq!(c.uncovered(0, 11_000, 10_000), Some(0));
        // Frames again from 40 s: the gap stays on record for later windows.
        for t in (40_000..=60_000).step_by(1_000) {
            c.frame(t, floor);
        }
        assert_eq!(c.uncovered(0, 31_000, 10_000), Some(28_000));
        assert_eq!(c.uncovered(0, 50_000, 10_000), Some(37_000));
        assert_eq!(c.uncovered(45_000, 60_000, 10_000), Some(0));
        assert_eq!(c.uncovered(10_000, 30_000, 10_000), None);
        assert_eq!(c.uncovered(70_000, 80_000, 10_000), None);
    }

    #[test]
    fn a_node_that_reports_every_period_is_covered() {
        let mut c = Coverage::default();
        for t in (0..100_000).step_by(1_000) {
            c.frame(t, 10_000);
        }
        assert_eq!(c.uncovered(10_000, 90_000, 10_000), Some(0));
    }

    /// A node that reports a frame a scrape (Prometheus every 30 s) is covered at its own
    /// pace; the same node silent for three scrapes and more is not.
    #[test]
    fn a_node_is_judged_at_its_own_pace() {
        let mut c = Coverage::default();
        for t in (0..600_000).step_by(30_000) {
            c.frame(t, 10_000);
        }
        assert_eq!(c.allowance(10_000), 90_000);
        assert_eq!(c.uncovered(60_000, 570_000, 10_000), Some(0));
        // Silent from 570 s: 100 s later the window has 100 s without telemetry.
        assert_eq!(c.uncovered(300_000, 670_000, 10_000), Some(100_000));
        // A node hung for a minute does not make a minute its own pace.
        let mut d = Coverage::default();
        for t in (0..20_000).step_by(1_000) {
            d.frame(t, 10_000);
        }
        d.frame(80_000, 10_000);
        assert_eq!(d.allowance(10_000), 10_000);
        assert_eq!(d.uncovered(0, 80_000, 10_000), Some(61_000));
    }
}
