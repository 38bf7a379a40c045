//! What `burnin probe s3` prints: one JSON document (`--json`, versioned) or a table a person
//! reads. Both come from [`ProbeReport`]; neither ever holds a credential.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::checkpoint::CheckpointReport;
use super::client::transfer_path;
use super::get::LevelReport;
use super::latency::LatencySummary;
use super::loader::LoaderReport;
use super::objects::{ObjectRef, WriteStats};
use super::{EXIT_ERRORS, EXIT_INTERRUPTED, EXIT_OK, Mode, ProbeSpec};

/// Version of the JSON shape; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// The objects a run read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectSet {
    /// How many.
    pub count: usize,
    /// Smallest, bytes.
    pub min_size_bytes: u64,
    /// Largest, bytes.
    pub max_size_bytes: u64,
}

/// A probe run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Endpoint URL.
    pub endpoint: String,
    /// How the bytes travelled (always HTTP: see [`transfer_path`]).
    pub transfer_path: String,
    /// Bucket.
    pub bucket: String,
    /// Prefix.
    pub prefix: String,
    /// Mode.
    pub mode: Mode,
    /// Where the keys came from (never the keys).
    pub credentials_from: String,
    /// Ranged GET size, when ranged.
    pub range_bytes: Option<u64>,
    /// Objects read.
    pub objects: Option<ObjectSet>,
    /// `--prepare`'s writes.
    pub prepare: Option<WriteStats>,
    /// Test objects `--prepare` found already written (right key and size) and kept.
    pub prepare_kept: Option<usize>,
    /// GET sweep levels.
    pub levels: Vec<LevelReport>,
    /// Loader mode.
    pub loader: Option<LoaderReport>,
    /// Checkpoint mode.
    pub checkpoint: Option<CheckpointReport>,
    /// Why the mode failed, when it did after starting.
    pub failure: Option<String>,
    /// Where the server's own metrics came from (`v3 http://…/minio/metrics/v3`), if scraped.
    pub server_metrics: Option<String>,
    /// Why they were not (or not every time).
    pub server_metrics_notes: Vec<String>,
}

impl ProbeReport {
    /// An empty report for this spec.
    pub fn new(spec: &ProbeSpec, endpoint: &str, credentials_from: &str) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            endpoint: endpoint.to_string(),
            transfer_path: transfer_path(endpoint).to_string(),
            bucket: spec.bucket.clone(),
            prefix: spec.prefix.clone(),
            mode: spec.mode,
            credentials_from: credentials_from.to_string(),
            range_bytes: spec.range_bytes,
            objects: None,
            prepare: None,
            prepare_kept: None,
            levels: Vec::new(),
            loader: None,
            checkpoint: None,
            failure: None,
            server_metrics: None,
            server_metrics_notes: Vec::new(),
        }
    }

    /// Notes the objects read.
    pub fn set_objects(&mut self, objects: &[ObjectRef]) {
        let sizes = objects.iter().map(|o| o.size_bytes);
        self.objects = Some(ObjectSet {
            count: objects.len(),
            min_size_bytes: sizes.clone().min().unwrap_or(0),
            max_size_bytes: sizes.max().unwrap_or(0),
        });
    }

    /// Requests that failed, over every part of the run.
    pub fn error_count(&self) -> u64 {
        let levels: u64 = self
            .levels
            .iter()
            .map(LevelReport::error_count)
            .fold(0, u64::saturating_add);
        let loader: u64 = self.loader.as_ref().map_or(0, |l| {
            l.errors.values().fold(0, |a, b| a.saturating_add(*b))
        });
        levels + loader + u64::from(self.failure.is_some())
    }

    /// Whether the user cut it short.
    pub fn interrupted(&self) -> bool {
        self.levels.iter().any(|l| l.interrupted)
            || self.loader.as_ref().is_some_and(|l| l.interrupted)
    }

    /// The process exit code this report stands for.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted() {
            EXIT_INTERRUPTED
        } else if self.error_count() > 0
            || self
                .loader
                .as_ref()
                .is_some_and(|l| l.steps_done < l.steps_planned)
        {
            EXIT_ERRORS
        } else {
            EXIT_OK
        }
    }

    /// The figures a plan's gates judge, as `(name, value)`: per level `s3_gb_per_s_c<N>`,
    /// `s3_get_per_s_c<N>`, `s3_ttfb_p50_ms_c<N>`, `s3_ttfb_p99_ms_c<N>`,
    /// `s3_total_p99_ms_c<N>`; over the sweep `s3_gb_per_s` (best level) and `s3_errors`;
    /// loader `loader_data_wait_pct`, `loader_steps_waited_pct`, `loader_first_batch_ms`,
    /// `loader_wait_p99_ms`; checkpoint `checkpoint_save_gb_per_s`, `checkpoint_restore_gb_per_s`,
    /// `checkpoint_save_s`, `checkpoint_restore_s`. Latencies only where requests completed.
    pub fn figures(&self) -> Vec<(String, f64)> {
        let mut f = Vec::new();
        for l in &self.levels {
            let c = l.concurrency;
            f.push((format!("s3_gb_per_s_c{c}"), l.throughput_gb_per_s));
            f.push((format!("s3_get_per_s_c{c}"), l.requests_per_s));
            if let Some(t) = l.ttfb {
                f.push((format!("s3_ttfb_p50_ms_c{c}"), t.p50_ms));
                f.push((format!("s3_ttfb_p99_ms_c{c}"), t.p99_ms));
            }
            if let Some(t) = l.total {
                f.push((format!("s3_total_p99_ms_c{c}"), t.p99_ms));
            }
        }
        if let Some(best) = self
            .levels
            .iter()
            .map(|l| l.throughput_gb_per_s)
            .max_by(f64::total_cmp)
        {
            f.push(("s3_gb_per_s".into(), best));
        }
        if !self.levels.is_empty() || self.loader.is_some() {
            f.push(("s3_errors".into(), self.error_count() as f64));
        }
        if let Some(l) = &self.loader {
            f.push(("loader_data_wait_pct".into(), l.data_wait_pct));
            f.push(("loader_steps_waited_pct".into(), l.steps_waited_pct));
            if let Some(ms) = l.time_to_first_batch_ms {
                f.push(("loader_first_batch_ms".into(), ms));
            }
            if let Some(w) = l.data_wait {
                f.push(("loader_wait_p99_ms".into(), w.p99_ms));
            }
        }
        if let Some(c) = &self.checkpoint {
            f.push((
                "checkpoint_save_gb_per_s".into(),
                c.save.throughput_gb_per_s,
            ));
            f.push(("checkpoint_save_s".into(), c.save.elapsed_s));
            if let Some(r) = &c.restore {
                f.push(("checkpoint_restore_gb_per_s".into(), r.throughput_gb_per_s));
                f.push(("checkpoint_restore_s".into(), r.elapsed_s));
            }
        }
        f
    }

    /// The human table.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        self.write_head(&mut out);
        self.write_levels(&mut out);
        self.write_loader(&mut out);
        self.write_checkpoint(&mut out);
        if let Some(f) = &self.failure {
            let _ = writeln!(out, "\nFAILED: {f}");
        }
        out
    }

    /// Where it ran, what it read, what `--prepare` wrote.
    fn write_head(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "{} · bucket {} · prefix {:?} · {} · keys from {}",
            self.endpoint, self.bucket, self.prefix, self.transfer_path, self.credentials_from
        );
        if let Some(o) = &self.objects {
            let sizes = if o.min_size_bytes == o.max_size_bytes {
                human_bytes(o.min_size_bytes)
            } else {
                format!(
                    "{}–{}",
                    human_bytes(o.min_size_bytes),
                    human_bytes(o.max_size_bytes)
                )
            };
            let how = match self.range_bytes {
                Some(r) => format!("ranged GETs of {}", human_bytes(r)),
                None => "whole-object GETs".into(),
            };
            let _ = writeln!(out, "{} object(s) of {sizes}, {how}", o.count);
        }
        let kept = self.prepare_kept.unwrap_or(0);
        if self.prepare.as_ref().is_some_and(|p| p.objects == 0) {
            let _ = writeln!(
                out,
                "prepare: all {kept} test object(s) were already there (none written)"
            );
        } else if let Some(p) = &self.prepare {
            let _ = writeln!(
                out,
                "prepare: wrote {} object(s){}, {} in {:.1} s = {:.2} GB/s (parts of {}, {} in flight{})",
                p.objects,
                if kept > 0 {
                    format!(" ({kept} already there)")
                } else {
                    String::new()
                },
                human_bytes(p.bytes),
                p.elapsed_s,
                p.throughput_gb_per_s,
                human_bytes(p.part_size_bytes),
                p.parallel_parts,
                p.part_latency
                    .map_or(String::new(), |l| format!(", part p99 {}", ms(l.p99_ms)))
            );
        }
    }

    /// The GET sweep: a row per level, the server's side, the first errors.
    fn write_levels(&self, out: &mut String) {
        if !self.levels.is_empty() {
            let _ = writeln!(
                out,
                "\n{:>5} {:>8} {:>8} {:>8}  {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9}  errors",
                "conc", "GB/s", "GET/s", "ok", "TTFB p50", "p90", "p99", "max", "total p50", "p99"
            );
            for l in &self.levels {
                let t = l.ttfb;
                let tot = l.total;
                let f = |s: Option<LatencySummary>, pick: fn(&LatencySummary) -> f64| {
                    s.map_or_else(|| "—".to_string(), |s| ms(pick(&s)))
                };
                let errors: Vec<String> = l
                    .errors
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| format!("{k}:{n}"))
                    .collect();
                let _ = writeln!(
                    out,
                    "{:>5} {:>8.2} {:>8.1} {:>8}  {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9}  {}{}",
                    l.concurrency,
                    l.throughput_gb_per_s,
                    l.requests_per_s,
                    l.requests_ok,
                    f(t, |s| s.p50_ms),
                    f(t, |s| s.p90_ms),
                    f(t, |s| s.p99_ms),
                    f(t, |s| s.max_ms),
                    f(tot, |s| s.p50_ms),
                    f(tot, |s| s.p99_ms),
                    if errors.is_empty() {
                        "0".into()
                    } else {
                        errors.join(" ")
                    },
                    if l.interrupted { "  (interrupted)" } else { "" }
                );
            }
            if let Some(src) = &self.server_metrics {
                let _ = writeln!(
                    out,
                    "\nserver side ({src}; TTFB from 50 ms buckets, interpolated):"
                );
                for l in &self.levels {
                    let Some(d) = &l.server else { continue };
                    let n =
                        |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.0}"));
                    let _ = writeln!(
                        out,
                        "{:>5} GetObject {} ({}/s) · TTFB p50 {} p99 {} · 4xx {} 5xx {} · drives online {} offline {}{}",
                        l.concurrency,
                        n(d.get_requests),
                        d.get_per_s
                            .map_or_else(|| "—".to_string(), |v| format!("{v:.1}")),
                        d.ttfb_p50_ms.map_or_else(|| "—".into(), ms),
                        d.ttfb_p99_ms.map_or_else(|| "—".into(), ms),
                        n(d.errors_4xx),
                        n(d.errors_5xx),
                        n(d.drives_online),
                        n(d.drives_offline),
                        if d.counters_reset {
                            "  (counters went back: a server restarted?)"
                        } else {
                            ""
                        }
                    );
                }
            }
            for note in &self.server_metrics_notes {
                let _ = writeln!(out, "server metrics: {note}");
            }
            for l in &self.levels {
                for e in &l.error_examples {
                    let _ = writeln!(
                        out,
                        "  c={}: first {} error: {e}",
                        l.concurrency,
                        e.class.name()
                    );
                }
            }
        }
    }

    /// The loader: steps, data wait, fetch times, errors.
    fn write_loader(&self, out: &mut String) {
        if let Some(l) = &self.loader {
            let _ = writeln!(
                out,
                "\nloader over {}: {} of {} steps of {} compute, {} workers × prefetch {}",
                l.source,
                l.steps_done,
                l.steps_planned,
                ms(l.step_time_ms),
                l.workers,
                l.prefetch
            );
            let _ = writeln!(
                out,
                "  time to first batch {} · data wait {:.2} % of step time · {} of {} steps waited > 1 ms ({:.1} %)",
                l.time_to_first_batch_ms.map_or_else(|| "—".into(), ms),
                l.data_wait_pct,
                l.steps_waited,
                l.steps_done.saturating_sub(1),
                l.steps_waited_pct
            );
            if let Some(w) = l.data_wait {
                let _ = writeln!(
                    out,
                    "  wait per step p50 {} p90 {} p99 {} max {}",
                    ms(w.p50_ms),
                    ms(w.p90_ms),
                    ms(w.p99_ms),
                    ms(w.max_ms)
                );
            }
            if let Some(fe) = l.fetch {
                let _ = writeln!(
                    out,
                    "  batch fetch p50 {} p99 {} · {:.2} GB/s",
                    ms(fe.p50_ms),
                    ms(fe.p99_ms),
                    l.throughput_gb_per_s
                );
            }
            for e in &l.error_examples {
                let n = l.errors.get(e.class.name()).copied().unwrap_or(0);
                let _ = writeln!(out, "  {n} {} error(s), first: {e}", e.class.name());
            }
            if l.steps_done < l.steps_planned && !l.interrupted {
                let _ = writeln!(
                    out,
                    "  STARVED: the fetchers gave up after repeated failures"
                );
            }
        }
    }

    /// The checkpoint: save, restore, verified, deleted.
    fn write_checkpoint(&self, out: &mut String) {
        if let Some(c) = &self.checkpoint {
            let _ = writeln!(
                out,
                "\ncheckpoint {}: save {:.2} s = {:.2} GB/s (parts of {}, {} in flight)",
                human_bytes(c.size_bytes),
                c.save.elapsed_s,
                c.save.throughput_gb_per_s,
                human_bytes(c.save.part_size_bytes),
                c.save.parallel_parts
            );
            if let Some(r) = &c.restore {
                let _ = writeln!(
                    out,
                    "  restore {:.2} s = {:.2} GB/s{}",
                    r.elapsed_s,
                    r.throughput_gb_per_s,
                    r.part_latency
                        .map_or(String::new(), |l| format!(", part p99 {}", ms(l.p99_ms)))
                );
            }
            let _ = writeln!(
                out,
                "  verified: {}; object {}",
                c.verified,
                if c.deleted { "deleted" } else { "kept" }
            );
        }
    }
}

/// `3.2 ms`, `41 ms`, `1.20 s`.
pub fn ms(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// `256 MiB`, `1 GiB`, `1.5 GiB`, `4096 B`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if b >= size {
            let v = b as f64 / size as f64;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{v:.0} {name}")
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{b} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(ms(3.24), "3.2 ms");
        assert_eq!(ms(41.2), "41 ms");
        assert_eq!(ms(1200.0), "1.20 s");
        assert_eq!(ms(f64::NAN), "—");
    }
}
