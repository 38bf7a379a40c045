//! `burnin probe s3`: what an AIStor/S3 endpoint gives a GPU cluster. Modes: `get` (a
//! concurrency sweep of GETs: TTFB and total latency percentiles, GB/s, requests/s, errors by
//! class), `loader` (a dataloader's wait per step against S3 or a local directory) and
//! `checkpoint` (a parallel multipart save and ranged restore). `--prepare N` writes the test
//! objects first. Credentials never reach output, logs or records.
//!
//! Module map: [`client`] (SDK client, credentials), [`objects`] (listing, writing, the test
//! pattern), [`get`] (the sweep), [`loader`], [`checkpoint`], [`latency`] (HDR histograms),
//! [`errors`] (classes, redaction), [`report`] (JSON schema and the human table).

pub mod checkpoint;
pub mod cli;
pub mod client;
pub mod errors;
pub mod get;
pub mod latency;
pub mod loader;
pub mod objects;
pub mod quorum;
pub mod report;
pub mod server_metrics;

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use self::client::{CredentialInputs, S3Endpoint};
use self::errors::Redactor;
use self::get::{GetPlan, LevelBudget};
use self::report::{ProbeReport, SCHEMA_VERSION};
use crate::model::probe::ProbeWindow;

/// Probe mode.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// GET concurrency sweep.
    Get,
    /// Dataloader wait per step.
    Loader,
    /// Checkpoint save and restore.
    Checkpoint,
}

/// Everything `burnin probe s3` was asked, resolved (no clap types).
#[derive(Debug, Clone)]
pub struct ProbeSpec {
    /// Endpoint and timeouts.
    pub endpoint: S3Endpoint,
    /// Where credentials may come from.
    pub credentials: CredentialInputs,
    /// Bucket.
    pub bucket: String,
    /// Key prefix of the test objects.
    pub prefix: String,
    /// Mode.
    pub mode: Mode,
    /// Concurrency levels (get); the first is the parallelism of loader/checkpoint/prepare.
    pub concurrency: Vec<usize>,
    /// Per-level budget (get).
    pub budget: LevelBudget,
    /// Ranged GETs of this many bytes; `None` = whole objects.
    pub range_bytes: Option<u64>,
    /// Write this many test objects first.
    pub prepare: Option<usize>,
    /// Size of prepared objects.
    pub object_size: u64,
    /// Multipart part size.
    pub part_size: u64,
    /// Create the bucket when it is missing (only with --prepare or checkpoint mode).
    pub create_bucket: bool,
    /// Read at most this many objects of the listing.
    pub max_objects: usize,
    /// Loader: compute time per step.
    pub step_time: Duration,
    /// Loader: steps.
    pub steps: u64,
    /// Loader: prefetch per worker.
    pub prefetch: usize,
    /// Loader: read a local directory instead of the bucket.
    pub dir: Option<PathBuf>,
    /// Checkpoint: size.
    pub checkpoint_size: u64,
    /// Checkpoint: keep the object.
    pub keep: bool,
    /// Progress period.
    pub progress_period: Duration,
    /// Server metrics API to scrape.
    pub metrics: server_metrics::MetricsApi,
    /// Base URL of the metrics (default: the endpoint).
    pub metrics_url: Option<String>,
    /// Bearer token for the scrape (default: a JWT made from the S3 keys).
    pub metrics_token: Option<String>,
}

/// Exit code when every request succeeded.
pub const EXIT_OK: i32 = 0;
/// Exit code when some requests failed (results are kept and printed).
pub const EXIT_ERRORS: i32 = 1;
/// Exit code when the probe could not run (bad arguments, bucket, keys, endpoint).
pub const EXIT_CANNOT_RUN: i32 = 2;
/// Exit code when interrupted (partial results printed).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Counters the modes bump as they go, read once a second for the progress lines.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes written (prepare, checkpoint save).
    pub bytes_written: std::sync::atomic::AtomicU64,
    /// Bytes read (checkpoint restore).
    pub bytes_read: std::sync::atomic::AtomicU64,
    /// Loader steps done.
    pub steps: std::sync::atomic::AtomicU64,
    /// Loader wait so far, µs.
    pub wait_us: std::sync::atomic::AtomicU64,
}

/// Runs `work`, saying what `line` makes of the counters every second until it is done.
async fn with_progress<T>(
    work: impl Future<Output = T>,
    progress: &Progress,
    say: &(dyn Fn(&str) + Sync),
    line: impl Fn(&Progress, f64) -> String,
) -> T {
    let started = std::time::Instant::now();
    let ticker = async {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        loop {
            tick.tick().await;
            say(&line(progress, started.elapsed().as_secs_f64()));
        }
    };
    tokio::select! {
        out = work => out,
        () = ticker => unreachable!("the ticker never ends"),
    }
}

/// Why the probe could not run at all.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CannotRun(pub String);

/// Runs the probe: resolves credentials, builds the client, checks the bucket, prepares
/// objects if asked, runs the mode. Progress windows go to `progress`; `cancel` stops it with
/// partial results.
pub async fn run(
    spec: &ProbeSpec,
    env: &dyn Fn(&str) -> Option<String>,
    cancel: watch::Receiver<bool>,
    progress: Option<mpsc::UnboundedSender<ProbeWindow>>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<ProbeReport, CannotRun> {
    let creds = client::resolve_credentials(&spec.credentials, env)
        .map_err(|e| CannotRun(e.to_string()))?;
    let redactor = Redactor::new([
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        creds.session_token.clone().unwrap_or_default(),
    ]);
    let endpoint_url =
        client::check_endpoint(&spec.endpoint.url).map_err(|e| CannotRun(e.to_string()))?;
    let client =
        client::build_client(&spec.endpoint, &creds).map_err(|e| CannotRun(e.to_string()))?;
    let mut report = ProbeReport::new(spec, &endpoint_url, &creds.source.to_string());
    tracing::info!(
        endpoint = %endpoint_url,
        bucket = %spec.bucket,
        prefix = %spec.prefix,
        mode = ?spec.mode,
        keys_from = %creds.source,
        "probe s3 starts"
    );
    let session = Session {
        spec,
        client,
        endpoint_url,
        redactor,
        say,
        parallel: spec.concurrency.first().copied().unwrap_or(8).max(1),
    };
    session.ensure_bucket().await?;
    if let Some(n) = spec.prepare {
        session.prepare(n, &mut report).await?;
    }
    match spec.mode {
        Mode::Get => session.get(&creds, &mut report, cancel, progress).await?,
        Mode::Loader => session.loader(&mut report, cancel).await?,
        Mode::Checkpoint => session.checkpoint(&mut report).await?,
    }
    debug_assert_eq!(report.schema_version, SCHEMA_VERSION);
    tracing::info!(
        errors = report.error_count(),
        interrupted = report.interrupted(),
        "probe s3 done"
    );
    Ok(report)
}

/// What every stage of one probe run shares: the plan, the client, the endpoint, the
/// redactor of the keys, where progress is said, and how many requests go at once.
struct Session<'a> {
    spec: &'a ProbeSpec,
    client: aws_sdk_s3::Client,
    endpoint_url: String,
    redactor: Redactor,
    say: &'a (dyn Fn(&str) + Sync),
    parallel: usize,
}

impl Session<'_> {
    /// The bucket must answer a list; where it is missing and the run writes, it is made.
    async fn ensure_bucket(&self) -> Result<(), CannotRun> {
        if self.spec.mode == Mode::Loader && self.spec.dir.is_some() {
            // A local directory needs no bucket.
            return Ok(());
        }
        let probe_list =
            objects::list_objects(&self.client, &self.spec.bucket, &self.spec.prefix, 1).await;
        if let Err(f) = probe_list {
            let f = self.redactor.failure(f);
            let missing = f.class == errors::ErrorClass::NotFound;
            let may_create = self.spec.create_bucket
                && (self.spec.prepare.is_some() || self.spec.mode == Mode::Checkpoint);
            if missing && may_create {
                (self.say)(&format!("creating bucket {}", self.spec.bucket));
                self.client
                    .create_bucket()
                    .bucket(&self.spec.bucket)
                    .send()
                    .await
                    .map_err(|e| {
                        let f = self.redactor.failure(errors::from_sdk(&e));
                        CannotRun(format!("creating bucket {:?}: {f}", self.spec.bucket))
                    })?;
            } else {
                return Err(CannotRun(get::preflight_message(
                    &f,
                    &self.endpoint_url,
                    &self.spec.bucket,
                )));
            }
        }
        Ok(())
    }

    /// `--prepare N`: the test objects written, those already there at the right size kept.
    async fn prepare(&self, n: usize, report: &mut ProbeReport) -> Result<(), CannotRun> {
        objects::check_part_size(self.spec.object_size, self.spec.part_size).map_err(CannotRun)?;
        // Shards already there at the right size are kept: a second run (or a 72-hour
        // burn-in's hundredth) does not rewrite them.
        let existing = objects::list_objects(
            &self.client,
            &self.spec.bucket,
            &self.spec.prefix,
            n + 10_000,
        )
        .await
        .map_err(|f| CannotRun(format!("--prepare: {}", self.redactor.failure(f))))?;
        let keys: Vec<(String, u64)> = (0..n)
            .map(|i| {
                (
                    objects::test_object_key(&self.spec.prefix, i),
                    self.spec.object_size,
                )
            })
            .filter(|(k, size)| {
                !existing
                    .iter()
                    .any(|o| &o.key == k && o.size_bytes == *size)
            })
            .collect();
        report.prepare_kept = Some(n - keys.len());
        if keys.is_empty() {
            (self.say)(&format!(
                "all {n} test object(s) of {} are already under s3://{}/{}",
                report::human_bytes(self.spec.object_size),
                self.spec.bucket,
                self.spec.prefix
            ));
        } else {
            (self.say)(&format!(
                "writing {} test object(s) of {} under s3://{}/{} ({} parts in flight)",
                keys.len(),
                report::human_bytes(self.spec.object_size),
                self.spec.bucket,
                self.spec.prefix,
                self.parallel
            ));
        }
        let progress = Progress::default();
        let total: u64 = keys.iter().map(|k| k.1).fold(0, u64::saturating_add);
        let stats = with_progress(
            objects::write_objects(
                &self.client,
                &self.spec.bucket,
                &keys,
                self.spec.part_size,
                self.parallel,
                &progress.bytes_written,
            ),
            &progress,
            self.say,
            |p, s| written_line("prepare", p, total, s),
        )
        .await
        .map_err(|f| CannotRun(format!("--prepare: {}", self.redactor.failure(f))))?;
        report.prepare = Some(stats);
        Ok(())
    }

    /// GET mode: the sweep over the concurrency levels, beside the server's own metrics.
    async fn get(
        &self,
        creds: &client::S3Credentials,
        report: &mut ProbeReport,
        cancel: watch::Receiver<bool>,
        progress: Option<mpsc::UnboundedSender<ProbeWindow>>,
    ) -> Result<(), CannotRun> {
        let objects =
            objects_to_read(&self.client, self.spec, &self.endpoint_url, &self.redactor).await?;
        report.set_objects(&objects);
        let plan = GetPlan {
            bucket: self.spec.bucket.clone(),
            objects,
            concurrency: self.spec.concurrency.clone(),
            budget: self.spec.budget,
            range_bytes: self.spec.range_bytes,
            read_timeout: self.spec.endpoint.read_timeout,
            progress_period: self.spec.progress_period,
            endpoint: self.endpoint_url.clone(),
        };
        let scraper = server_scraper(self.spec, &self.endpoint_url, creds, report, self.say).await;
        let mut notes = Vec::new();
        report.levels = get::run_sweep(
            &self.client,
            &plan,
            &self.redactor,
            cancel,
            progress,
            scraper.as_ref(),
            &mut notes,
        )
        .await;
        report.server_metrics_notes.extend(notes);
        // A set under its write quorum is a broken store whatever the GETs measured.
        let lost = report
            .levels
            .iter()
            .find_map(|l| l.server.as_ref()?.write_quorum_lost.clone());
        if let Some(why) = lost
            && report.failure.is_none()
        {
            report.failure = Some(format!("the store's own metrics: {why}"));
        }
        Ok(())
    }

    /// Loader mode: a training loader's reads from the bucket or a local directory.
    async fn loader(
        &self,
        report: &mut ProbeReport,
        cancel: watch::Receiver<bool>,
    ) -> Result<(), CannotRun> {
        let source = match &self.spec.dir {
            Some(dir) => loader::LoaderSource::Dir {
                dir: dir.clone(),
                files: loader::dir_files(dir).map_err(CannotRun)?,
            },
            None => {
                let objects =
                    objects_to_read(&self.client, self.spec, &self.endpoint_url, &self.redactor)
                        .await?;
                report.set_objects(&objects);
                loader::LoaderSource::S3 {
                    client: self.client.clone(),
                    bucket: self.spec.bucket.clone(),
                    objects,
                    endpoint: self.endpoint_url.clone(),
                }
            }
        };
        let plan = loader::LoaderPlan {
            source,
            step_time: self.spec.step_time,
            steps: self.spec.steps,
            workers: self.parallel,
            prefetch: self.spec.prefetch,
            batch_bytes: self.spec.range_bytes,
            read_timeout: self.spec.endpoint.read_timeout,
        };
        let progress = Progress::default();
        let steps = plan.steps;
        report.loader = Some(
            with_progress(
                loader::run_loader(&plan, &self.redactor, cancel, &progress),
                &progress,
                self.say,
                |p, _| {
                    let done = p.steps.load(std::sync::atomic::Ordering::Relaxed);
                    let wait_s = p.wait_us.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e6;
                    format!("loader: step {done} of {steps}, {wait_s:.2} s waited for data so far")
                },
            )
            .await,
        );
        Ok(())
    }

    /// Checkpoint mode: one checkpoint saved in parts and restored.
    async fn checkpoint(&self, report: &mut ProbeReport) -> Result<(), CannotRun> {
        objects::check_part_size(self.spec.checkpoint_size, self.spec.part_size)
            .map_err(CannotRun)?;
        let plan = checkpoint::CheckpointPlan {
            bucket: self.spec.bucket.clone(),
            key: format!(
                "{}{}burnin-checkpoint-{}.bin",
                self.spec.prefix,
                if self.spec.prefix.is_empty() || self.spec.prefix.ends_with('/') {
                    ""
                } else {
                    "/"
                },
                std::process::id()
            ),
            size_bytes: self.spec.checkpoint_size,
            part_size: self.spec.part_size,
            parallel: self.parallel,
            keep: self.spec.keep,
            read_timeout: self.spec.endpoint.read_timeout,
        };
        (self.say)(&format!(
            "checkpoint: saving {} in parts of {}, {} in flight",
            report::human_bytes(plan.size_bytes),
            report::human_bytes(plan.part_size),
            self.parallel
        ));
        let progress = Progress::default();
        let size = plan.size_bytes;
        let saved = with_progress(
            checkpoint::run_checkpoint(&self.client, &plan, &progress),
            &progress,
            self.say,
            |p, s| {
                let read = p.bytes_read.load(std::sync::atomic::Ordering::Relaxed);
                if read == 0 {
                    written_line("checkpoint save", p, size, s)
                } else {
                    format!(
                        "checkpoint restore: {} of {}",
                        report::human_bytes(read),
                        report::human_bytes(size)
                    )
                }
            },
        )
        .await;
        match saved {
            Ok(c) => report.checkpoint = Some(c),
            Err(f) => report.failure = Some(self.redactor.failure(f).to_string()),
        }
        Ok(())
    }
}

/// The objects under the prefix, or why there are none to read.
async fn objects_to_read(
    client: &aws_sdk_s3::Client,
    spec: &ProbeSpec,
    endpoint_url: &str,
    redactor: &Redactor,
) -> Result<Vec<objects::ObjectRef>, CannotRun> {
    let objects = objects::list_objects(client, &spec.bucket, &spec.prefix, spec.max_objects)
        .await
        .map_err(|f| {
            CannotRun(get::preflight_message(
                &redactor.failure(f),
                endpoint_url,
                &spec.bucket,
            ))
        })?;
    if objects.is_empty() {
        return Err(CannotRun(format!(
            "no objects under s3://{}/{} — give --prepare N to write test objects",
            spec.bucket, spec.prefix
        )));
    }
    Ok(objects)
}

fn written_line(what: &str, p: &Progress, total: u64, seconds: f64) -> String {
    let done = p.bytes_written.load(std::sync::atomic::Ordering::Relaxed);
    format!(
        "{what}: {} of {} written ({:.2} GB/s so far)",
        report::human_bytes(done),
        report::human_bytes(total),
        objects::gb_per_s(done, seconds)
    )
}

/// Sets up the server-metrics scraper, or notes in the report why there is none.
async fn server_scraper(
    spec: &ProbeSpec,
    endpoint_url: &str,
    creds: &client::S3Credentials,
    report: &mut ProbeReport,
    say: &(dyn Fn(&str) + Sync),
) -> Option<server_metrics::Scraper> {
    if spec.metrics == server_metrics::MetricsApi::Off {
        return None;
    }
    let base = spec.metrics_url.as_deref().unwrap_or(endpoint_url);
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let token = spec.metrics_token.clone().unwrap_or_else(|| {
        server_metrics::minio_jwt(
            &creds.access_key_id,
            &creds.secret_access_key,
            now_s,
            Duration::from_secs(24 * 3600),
        )
    });
    let redactor = Redactor::new([
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        token.clone(),
    ]);
    let mut scraper = match server_metrics::Scraper::new(
        base,
        Some(token),
        spec.metrics,
        spec.endpoint.ca_bundle.as_deref(),
        spec.endpoint.read_timeout.min(Duration::from_secs(10)),
    ) {
        Ok(s) => s,
        Err(e) => {
            report.server_metrics_notes.push(redactor.clean(&e.0));
            return None;
        }
    };
    // MinIO's own verdict on its write quorum, before the load: a store under it is broken
    // whatever the GETs measure.
    if let Some(f) = scraper.cluster_health().await {
        say(&f.why);
        report.failure.get_or_insert(f.why);
    }
    match scraper.detect().await {
        Ok((_, _)) => {
            let source = scraper.describe();
            say(&format!("server metrics from {source}"));
            report.server_metrics = Some(source);
            Some(scraper)
        }
        Err(e) => {
            let note = redactor.clean(&e.0);
            say(&note);
            report.server_metrics_notes.push(note);
            None
        }
    }
}

/// Parses `256MiB`, `1GiB`, `64M`, `500MB`, `4096`: binary units for `K/M/G/T` and `KiB…`,
/// decimal for `KB/MB/GB/TB`, bytes without a unit.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad size {s:?}: use e.g. 256MiB, 1GiB, 64M or 500MB"))?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => {
            return Err(format!(
                "bad size unit in {s:?}: use KiB, MiB, GiB, TiB or KB, MB, GB, TB"
            ));
        }
    };
    let bytes = v * mult;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes <= 1024f64.powi(5)) {
        return Err(format!("size {s:?} must be between 1 B and 1 PiB"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("1e30GiB").is_err());
    }

    proptest! {
        #[test]
        fn garbage_sizes_never_panic(s in ".{0,24}") {
            let _ = parse_size(&s);
        }
    }
}
