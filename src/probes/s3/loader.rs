//! Loader mode: a training loop's data side without the GPU. A consumer needs one batch every
//! `step_time`; `workers` fetchers keep at most `workers × prefetch` batches in flight or
//! waiting (PyTorch's DataLoader with `prefetch_factor`). What it reports is what the PoC is
//! judged on: how long the step waited for data, how many steps waited at all, and the time to
//! the first batch. The same loop reads an S3 bucket or a local directory, so local NVMe,
//! AIStor and AIStor tuned are compared by the same code.
//!
//! Batches are consumed in the order they arrive; PyTorch keeps index order, which can only
//! wait more, so this is the optimistic side of a real loader.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::{Semaphore, mpsc, watch};

use super::errors::{ErrorClass, Failure, Redactor, from_error};
use super::get::get_once;
use super::latency::{LatencyHistogram, LatencySummary};
use super::objects::{ObjectRef, gb_per_s, splitmix64};

/// A step counts as having waited when its wait exceeds this.
pub const WAITED_THRESHOLD: Duration = Duration::from_millis(1);
/// A fetcher gives up after this many failures in a row (the source is gone).
const MAX_FAILURES_IN_A_ROW: u32 = 20;

/// Where batches come from.
#[derive(Clone)]
pub enum LoaderSource {
    /// Objects of a bucket.
    S3 {
        /// Client.
        client: aws_sdk_s3::Client,
        /// Bucket.
        bucket: String,
        /// Objects.
        objects: Vec<ObjectRef>,
        /// Endpoint, for the report.
        endpoint: String,
    },
    /// Files of a local directory (page cache not dropped: a second run reads memory).
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Files and sizes.
        files: Vec<(PathBuf, u64)>,
    },
}

impl LoaderSource {
    fn describe(&self) -> String {
        match self {
            LoaderSource::S3 {
                endpoint, bucket, ..
            } => format!("s3 {endpoint}/{bucket}"),
            LoaderSource::Dir { dir, .. } => format!("dir {}", dir.display()),
        }
    }

    fn len(&self) -> usize {
        match self {
            LoaderSource::S3 { objects, .. } => objects.len(),
            LoaderSource::Dir { files, .. } => files.len(),
        }
    }
}

/// Lists a directory's regular, non-empty files (not recursive), sorted by name.
pub fn dir_files(dir: &std::path::Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in rd.flatten() {
        if let Ok(meta) = entry.metadata()
            && meta.is_file()
            && meta.len() > 0
        {
            out.push((entry.path(), meta.len()));
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!("{}: no non-empty files to read", dir.display()));
    }
    Ok(out)
}

/// What loader mode does.
#[derive(Clone)]
pub struct LoaderPlan {
    /// Source of batches.
    pub source: LoaderSource,
    /// Compute time per step (the GPU's share, simulated by sleeping).
    pub step_time: Duration,
    /// Steps.
    pub steps: u64,
    /// Fetchers.
    pub workers: usize,
    /// Batches each fetcher may hold ahead.
    pub prefetch: usize,
    /// Bytes per batch from each object/file; `None` = the whole object.
    pub batch_bytes: Option<u64>,
    /// Longest wait for the next chunk of a body.
    pub read_timeout: Duration,
}

/// Loader mode's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoaderReport {
    /// `s3 ENDPOINT/BUCKET` or `dir PATH`.
    pub source: String,
    /// Steps asked for.
    pub steps_planned: u64,
    /// Steps that got a batch.
    pub steps_done: u64,
    /// Step compute time, ms.
    pub step_time_ms: f64,
    /// Fetchers.
    pub workers: usize,
    /// Prefetch per fetcher.
    pub prefetch: usize,
    /// Start to the first batch in hand, ms.
    pub time_to_first_batch_ms: Option<f64>,
    /// Wait per step after the first.
    pub data_wait: Option<LatencySummary>,
    /// Share of the steady-state wall time spent waiting for data, %.
    pub data_wait_pct: f64,
    /// Steps after the first that waited more than 1 ms.
    pub steps_waited: u64,
    /// Those as a share of the steps after the first, %.
    pub steps_waited_pct: f64,
    /// Time to fetch one batch.
    pub fetch: Option<LatencySummary>,
    /// Bytes fetched.
    pub bytes: u64,
    /// Bytes / wall time, GB/s.
    pub throughput_gb_per_s: f64,
    /// Wall time, s.
    pub elapsed_s: f64,
    /// Failed fetches by class.
    pub errors: BTreeMap<String, u64>,
    /// First failure of each class.
    pub error_examples: Vec<Failure>,
    /// Cut short by the user.
    pub interrupted: bool,
}

/// Failed fetches by class, and the first of each.
type FailureTally = (BTreeMap<ErrorClass, u64>, Vec<Failure>);

struct Batch {
    fetch: Duration,
}

/// Runs the loop until `steps` batches were consumed, the fetchers gave up, or `cancel`.
pub async fn run_loader(
    plan: &LoaderPlan,
    redactor: &Redactor,
    mut cancel: watch::Receiver<bool>,
    progress: &super::Progress,
) -> LoaderReport {
    let in_flight = Arc::new(Semaphore::new(plan.workers.max(1) * plan.prefetch.max(1)));
    let (tx, mut rx) = mpsc::unbounded_channel::<Batch>();
    let issued = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let failures: Arc<std::sync::Mutex<FailureTally>> = Arc::default();
    let started = Instant::now();
    let mut fetchers = tokio::task::JoinSet::new();
    for _ in 0..plan.workers.max(1) {
        let plan = plan.clone();
        let (tx, in_flight, issued, bytes, failures) = (
            tx.clone(),
            in_flight.clone(),
            issued.clone(),
            bytes.clone(),
            failures.clone(),
        );
        let redactor = redactor.clone();
        fetchers.spawn(async move {
            let mut in_a_row = 0;
            loop {
                let Ok(permit) = in_flight.clone().acquire_owned().await else {
                    return;
                };
                let index = issued.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                match fetch(&plan, index, &bytes).await {
                    Ok(()) => {
                        in_a_row = 0;
                        // The consumer gives the permit back when it takes the batch.
                        permit.forget();
                        if tx.send(Batch { fetch: t.elapsed() }).is_err() {
                            return;
                        }
                    }
                    Err(f) => {
                        drop(permit);
                        {
                            let mut g = failures
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            *g.0.entry(f.class).or_default() += 1;
                            if !g.1.iter().any(|e| e.class == f.class) {
                                g.1.push(redactor.failure(f));
                            }
                        }
                        in_a_row += 1;
                        if in_a_row >= MAX_FAILURES_IN_A_ROW {
                            return;
                        }
                        tokio::time::sleep(super::get::FAILURE_BACKOFF).await;
                    }
                }
            }
        });
    }
    drop(tx);
    let mut fetch_lat = LatencyHistogram::new();
    let mut wait = LatencyHistogram::new();
    let mut wait_total = Duration::ZERO;
    let mut steps_waited = 0u64;
    let mut first_batch = None;
    let mut steady_start = None;
    let mut steps_done = 0u64;
    let mut interrupted = false;
    while steps_done < plan.steps {
        let t = Instant::now();
        let batch = tokio::select! {
            b = rx.recv() => b,
            _ = cancel.changed() => { interrupted = true; None }
        };
        let Some(batch) = batch else { break };
        let waited = t.elapsed();
        in_flight.add_permits(1);
        fetch_lat.record(batch.fetch);
        if steps_done == 0 {
            first_batch = Some(started.elapsed());
            steady_start = Some(Instant::now());
        } else {
            wait.record(waited);
            wait_total += waited;
            if waited > WAITED_THRESHOLD {
                steps_waited += 1;
            }
        }
        steps_done += 1;
        progress.steps.store(steps_done, Ordering::Relaxed);
        progress.wait_us.fetch_add(
            u64::try_from(waited.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        tokio::select! {
            _ = tokio::time::sleep(plan.step_time) => {}
            _ = cancel.changed() => { interrupted = true; break; }
        }
    }
    fetchers.abort_all();
    let elapsed_s = started.elapsed().as_secs_f64();
    let steady_s = steady_start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    let after_first = steps_done.saturating_sub(1);
    let bytes = bytes.load(Ordering::Relaxed);
    let (errs, examples) = {
        let g = failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (g.0.clone(), g.1.clone())
    };
    LoaderReport {
        source: plan.source.describe(),
        steps_planned: plan.steps,
        steps_done,
        step_time_ms: plan.step_time.as_secs_f64() * 1000.0,
        workers: plan.workers,
        prefetch: plan.prefetch,
        time_to_first_batch_ms: first_batch.map(|d| d.as_secs_f64() * 1000.0),
        data_wait: wait.summary(),
        data_wait_pct: if steady_s > 0.0 {
            100.0 * wait_total.as_secs_f64() / steady_s
        } else {
            0.0
        },
        steps_waited,
        steps_waited_pct: if after_first > 0 {
            100.0 * steps_waited as f64 / after_first as f64
        } else {
            0.0
        },
        fetch: fetch_lat.summary(),
        bytes,
        throughput_gb_per_s: gb_per_s(bytes, elapsed_s),
        elapsed_s,
        errors: ErrorClass::ALL
            .iter()
            .map(|c| (c.name().to_string(), errs.get(c).copied().unwrap_or(0)))
            .collect(),
        error_examples: examples,
        interrupted,
    }
}

async fn fetch(plan: &LoaderPlan, index: u64, bytes: &AtomicU64) -> Result<(), Failure> {
    let n = plan.source.len().max(1) as u64;
    let i = usize::try_from(index % n).unwrap_or(0);
    let range = |size: u64| {
        plan.batch_bytes.map(|len| {
            let len = len.min(size).max(1);
            let span = size - len;
            let start = if span == 0 {
                0
            } else {
                splitmix64(index) % (span + 1)
            };
            (start, start + len - 1)
        })
    };
    match &plan.source {
        LoaderSource::S3 {
            client,
            bucket,
            objects,
            ..
        } => {
            let o = &objects[i];
            get_once(
                client,
                bucket,
                &o.key,
                range(o.size_bytes),
                plan.read_timeout,
                bytes,
            )
            .await
            .map(|_| ())
        }
        LoaderSource::Dir { files, .. } => {
            let (path, size) = &files[i];
            let (first, last) = range(*size).unwrap_or((0, size - 1));
            read_file_range(path, first, last, bytes)
                .await
                .map_err(|e| {
                    let mut f = from_error(&e);
                    f.detail = format!("{}: {}", path.display(), f.detail);
                    f
                })
        }
    }
}

async fn read_file_range(
    path: &std::path::Path,
    first: u64,
    last: u64,
    bytes: &AtomicU64,
) -> std::io::Result<()> {
    let mut f = tokio::fs::File::open(path).await?;
    f.seek(std::io::SeekFrom::Start(first)).await?;
    let mut left = last - first + 1;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let got = f.read(&mut buf[..want]).await?;
        if got == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("file ended {left} B early"),
            ));
        }
        left -= got as u64;
        bytes.fetch_add(got as u64, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, usize)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "burnin-loader-{}-{}",
            std::process::id(),
            files.len()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        for (name, len) in files {
            std::fs::write(dir.join(name), vec![7u8; *len]).expect("write");
        }
        dir
    }

    fn plan(dir: &std::path::Path, step_ms: u64, steps: u64) -> LoaderPlan {
        LoaderPlan {
            source: LoaderSource::Dir {
                dir: dir.to_path_buf(),
                files: dir_files(dir).expect("files"),
            },
            step_time: Duration::from_millis(step_ms),
            steps,
            workers: 2,
            prefetch: 2,
            batch_bytes: None,
            read_timeout: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn every_step_gets_a_batch_and_bytes_add_up() {
        let dir = dir_with(&[("a", 1000), ("b", 3000), ("empty", 0)]);
        let (_tx, rx) = watch::channel(false);
        let r = run_loader(
            &plan(&dir, 1, 10),
            &Redactor::default(),
            rx,
            &super::super::Progress::default(),
        )
        .await;
        assert_eq!(r.steps_done, 10);
        assert!(r.time_to_first_batch_ms.is_some());
        assert_eq!(r.data_wait.map(|w| w.count), Some(9));
        // 10 consumed, at most workers × prefetch more fetched ahead.
        assert!(r.bytes >= 5 * 1000 + 5 * 3000, "{}", r.bytes);
        assert!(r.errors.values().all(|&n| n == 0), "{:?}", r.errors);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test]
    async fn a_source_that_vanishes_ends_the_run_with_errors_not_a_hang() {
        let dir = dir_with(&[("a", 10), ("b", 10), ("c", 10), ("d", 10)]);
        let p = plan(&dir, 1, 1000);
        std::fs::remove_dir_all(&dir).expect("remove");
        let (_tx, rx) = watch::channel(false);
        let r = run_loader(
            &p,
            &Redactor::default(),
            rx,
            &super::super::Progress::default(),
        )
        .await;
        assert_eq!(r.steps_done, 0);
        assert_eq!(r.time_to_first_batch_ms, None);
        assert!(
            r.errors["other"] >= MAX_FAILURES_IN_A_ROW as u64,
            "{:?}",
            r.errors
        );
        assert!(
            r.error_examples[0].detail.contains("burnin-loader"),
            "{:?}",
            r.error_examples
        );
    }

    #[test]
    fn empty_dirs_are_an_error() {
        let dir = dir_with(&[]);
        assert!(dir_files(&dir).unwrap_err().contains("no non-empty files"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
