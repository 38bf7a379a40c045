//! The GET sweep: for each concurrency level, that many workers GET the test objects (whole,
//! or ranges of them) for a while; every request's time to first byte and total time go into
//! HDR histograms, every failure into its class. Progress comes out once a period.
//!
//! TTFB is measured to the first body chunk, not to `send()` returning (which is the headers):
//! for a GET the first data byte is what a dataloader waits for.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use super::errors::{ErrorClass, Failure, Redactor, from_error, from_sdk};
use super::latency::{LatencyHistogram, LatencySummary};
use super::objects::{ObjectRef, gb_per_s, splitmix64};
use super::server_metrics::{ScrapeError, Scraper, ServerDelta, delta};
use crate::model::UnixMillis;
use crate::model::probe::ProbeWindow;

/// Pause after a failed request before the worker tries again, so a dead server is counted
/// as failures of requests, not as a CPU-bound loop of refused connects.
pub const FAILURE_BACKOFF: Duration = Duration::from_millis(50);

/// When a concurrency level ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelBudget {
    /// Workers start no new request after this long (requests in flight finish).
    Duration(Duration),
    /// This many requests are issued.
    Requests(u64),
}

/// What one sweep reads.
#[derive(Debug, Clone)]
pub struct GetPlan {
    /// Bucket.
    pub bucket: String,
    /// Objects to cycle through.
    pub objects: Vec<ObjectRef>,
    /// Concurrency levels, in order.
    pub concurrency: Vec<usize>,
    /// Per-level budget.
    pub budget: LevelBudget,
    /// Bytes per ranged GET; `None` reads whole objects.
    pub range_bytes: Option<u64>,
    /// Longest wait for the next body chunk.
    pub read_timeout: Duration,
    /// How often progress windows come out.
    pub progress_period: Duration,
    /// Endpoint, for the progress windows.
    pub endpoint: String,
}

/// One concurrency level's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Workers.
    pub concurrency: usize,
    /// Requests that completed with every byte.
    pub requests_ok: u64,
    /// Failed requests by class name (`timeout`, `403`, …); every class is listed.
    pub errors: BTreeMap<String, u64>,
    /// First failure of each class seen, for the message.
    pub error_examples: Vec<Failure>,
    /// Bytes received (failed requests' partial bodies included: the wire carried them).
    pub bytes: u64,
    /// Wall time of the level.
    pub elapsed_s: f64,
    /// bytes / elapsed, GB/s (10^9).
    pub throughput_gb_per_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Time to first byte of completed requests.
    pub ttfb: Option<LatencySummary>,
    /// Total time of completed requests.
    pub total: Option<LatencySummary>,
    /// Cut short by the user.
    pub interrupted: bool,
    /// What the server's own metrics saw during the level, when scraped.
    pub server: Option<ServerDelta>,
}

impl LevelReport {
    /// Failed requests in all classes.
    pub fn error_count(&self) -> u64 {
        // A report read back from a file may hold any counts: saturate, never wrap.
        self.errors.values().fold(0, |a, b| a.saturating_add(*b))
    }
}

#[derive(Default)]
struct Tally {
    ttfb: LatencyHistogram,
    total: LatencyHistogram,
    ok: u64,
    errors: BTreeMap<ErrorClass, u64>,
    examples: Vec<Failure>,
    window_ttfb: LatencyHistogram,
    window_total: LatencyHistogram,
    window_ok: u64,
    window_errors: u64,
}

impl Tally {
    fn success(&mut self, ttfb: Duration, total: Duration) {
        self.ttfb.record(ttfb);
        self.total.record(total);
        self.window_ttfb.record(ttfb);
        self.window_total.record(total);
        self.ok += 1;
        self.window_ok += 1;
    }

    fn failure(&mut self, f: Failure) {
        *self.errors.entry(f.class).or_default() += 1;
        self.window_errors += 1;
        if !self.examples.iter().any(|e| e.class == f.class) {
            self.examples.push(f);
        }
    }
}

/// Runs every level in order; stops early (marking the level interrupted) when `cancel` turns
/// true. Progress windows go to `progress` when given. With a `scraper`, the server's metrics
/// are read before and after each level; a failed scrape is said in `scrape_notes`, and the
/// level keeps its client-side figures.
pub async fn run_sweep(
    client: &aws_sdk_s3::Client,
    plan: &GetPlan,
    redactor: &Redactor,
    cancel: watch::Receiver<bool>,
    progress: Option<mpsc::UnboundedSender<ProbeWindow>>,
    scraper: Option<&Scraper>,
    scrape_notes: &mut Vec<String>,
) -> Vec<LevelReport> {
    let mut out = Vec::new();
    for &c in &plan.concurrency {
        if *cancel.borrow() {
            break;
        }
        let before = match scraper {
            Some(s) => Some(s.scrape().await),
            None => None,
        };
        let mut report =
            run_level(client, plan, c, redactor, cancel.clone(), progress.clone()).await;
        if let (Some(s), Some(before)) = (scraper, before) {
            match (before, s.scrape().await) {
                (Ok(b), Ok(a)) => report.server = Some(delta(&b, &a, report.elapsed_s)),
                (Err(ScrapeError(e)), _) | (_, Err(ScrapeError(e))) => {
                    scrape_notes.push(format!("c={c}: {}", redactor.clean(&e)));
                }
            }
        }
        let interrupted = report.interrupted;
        out.push(report);
        if interrupted {
            break;
        }
    }
    out
}

async fn run_level(
    client: &aws_sdk_s3::Client,
    plan: &GetPlan,
    concurrency: usize,
    redactor: &Redactor,
    cancel: watch::Receiver<bool>,
    progress: Option<mpsc::UnboundedSender<ProbeWindow>>,
) -> LevelReport {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let bytes = Arc::new(AtomicU64::new(0));
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = match plan.budget {
        LevelBudget::Duration(d) => Some(started + d),
        LevelBudget::Requests(_) => None,
    };
    let limit = match plan.budget {
        LevelBudget::Requests(n) => n,
        LevelBudget::Duration(_) => u64::MAX,
    };
    let plan = Arc::new(plan.clone());
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let client = client.clone();
        let plan = plan.clone();
        let tally = tally.clone();
        let bytes = bytes.clone();
        let issued = issued.clone();
        let redactor = redactor.clone();
        let mut cancel = cancel.clone();
        workers.spawn(async move {
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) || *cancel.borrow() {
                    return;
                }
                let index = issued.fetch_add(1, Ordering::Relaxed);
                if index >= limit {
                    return;
                }
                let (key, range) = pick(&plan, index);
                let outcome = tokio::select! {
                    o = get_once(&client, &plan.bucket, key, range, plan.read_timeout, &bytes) => o,
                    _ = cancel.changed() => return,
                };
                let failed = outcome.is_err();
                {
                    let mut t = tally
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    match outcome {
                        Ok((ttfb, total)) => t.success(ttfb, total),
                        Err(f) => t.failure(redactor.failure(f)),
                    }
                }
                if failed {
                    tokio::select! {
                        _ = tokio::time::sleep(FAILURE_BACKOFF) => {}
                        _ = cancel.changed() => return,
                    }
                }
            }
        });
    }
    let mut ticker = tokio::time::interval(plan.progress_period);
    ticker.tick().await;
    let mut last_bytes = 0u64;
    let mut last_tick = Instant::now();
    loop {
        tokio::select! {
            joined = workers.join_next() => {
                if joined.is_none() {
                    break;
                }
            }
            _ = ticker.tick() => {
                let now_bytes = bytes.load(Ordering::Relaxed);
                let dt = last_tick.elapsed().as_secs_f64();
                last_tick = Instant::now();
                let window = {
                    let mut t = tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let w = window_of(&t, &plan.endpoint, concurrency, now_bytes - last_bytes, dt);
                    t.window_ttfb.reset();
                    t.window_total.reset();
                    t.window_ok = 0;
                    t.window_errors = 0;
                    w
                };
                last_bytes = now_bytes;
                if let Some(tx) = &progress {
                    let _ = tx.send(window);
                }
            }
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let t = tally
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let total_bytes = bytes.load(Ordering::Relaxed);
    LevelReport {
        concurrency,
        requests_ok: t.ok,
        errors: ErrorClass::ALL
            .iter()
            .map(|c| (c.name().to_string(), t.errors.get(c).copied().unwrap_or(0)))
            .collect(),
        error_examples: t.examples.clone(),
        bytes: total_bytes,
        elapsed_s,
        throughput_gb_per_s: gb_per_s(total_bytes, elapsed_s),
        requests_per_s: if elapsed_s > 0.0 {
            t.ok as f64 / elapsed_s
        } else {
            0.0
        },
        ttfb: t.ttfb.summary(),
        total: t.total.summary(),
        interrupted: *cancel.borrow(),
        server: None,
    }
}

fn window_of(t: &Tally, endpoint: &str, concurrency: usize, bytes: u64, dt: f64) -> ProbeWindow {
    let ttfb = t.window_ttfb.summary();
    let total = t.window_total.summary();
    ProbeWindow {
        at_ms: now_ms(),
        endpoint: endpoint.to_string(),
        ttfb_p50_ms: ttfb.map_or(f64::NAN, |s| s.p50_ms),
        ttfb_p99_ms: ttfb.map_or(f64::NAN, |s| s.p99_ms),
        total_p99_ms: total.map_or(f64::NAN, |s| s.p99_ms),
        throughput_bytes_per_sec: if dt > 0.0 { bytes as f64 / dt } else { 0.0 },
        requests: t.window_ok,
        errors: t.window_errors,
        concurrency: Some(concurrency),
    }
}

fn now_ms() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The object (and byte range) the `index`-th request reads: objects in turn, ranges at
/// offsets spread by a hash of the index so workers do not read the same bytes in step.
pub fn pick(plan: &GetPlan, index: u64) -> (&str, Option<(u64, u64)>) {
    let n = plan.objects.len().max(1) as u64;
    let obj = &plan.objects[usize::try_from(index % n).unwrap_or(0)];
    let range = plan.range_bytes.map(|len| {
        let len = len.min(obj.size_bytes).max(1);
        let span = obj.size_bytes - len;
        let start = if span == 0 {
            0
        } else {
            splitmix64(index) % (span + 1)
        };
        (start, start + len - 1)
    });
    (obj.key.as_str(), range)
}

/// One GET: `(ttfb, total)` when every byte came, else why not.
pub async fn get_once(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    range: Option<(u64, u64)>,
    read_timeout: Duration,
    bytes: &AtomicU64,
) -> Result<(Duration, Duration), Failure> {
    let started = Instant::now();
    let mut req = client.get_object().bucket(bucket).key(key);
    if let Some((first, last)) = range {
        req = req.range(format!("bytes={first}-{last}"));
    }
    let resp = req.send().await.map_err(|e| from_sdk(&e))?;
    let expected = resp.content_length().and_then(|l| u64::try_from(l).ok());
    let mut body = resp.body;
    let mut ttfb = None;
    let mut got = 0u64;
    loop {
        match tokio::time::timeout(read_timeout, body.next()).await {
            Err(_) => {
                return Err(Failure {
                    class: ErrorClass::Timeout,
                    status: None,
                    code: None,
                    detail: format!(
                        "no body bytes for {} s after {got} B of {key}",
                        read_timeout.as_secs_f64()
                    ),
                });
            }
            Ok(None) => break,
            Ok(Some(Ok(chunk))) => {
                if ttfb.is_none() {
                    ttfb = Some(started.elapsed());
                }
                got += chunk.len() as u64;
                bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
            Ok(Some(Err(e))) => return Err(from_error(&e)),
        }
    }
    let total = started.elapsed();
    if let Some(want) = expected
        && got != want
    {
        return Err(Failure {
            class: ErrorClass::Reset,
            status: None,
            code: None,
            detail: format!("short body: {got} of {want} B of {key}"),
        });
    }
    Ok((ttfb.unwrap_or(total), total))
}

/// HEAD-free preflight: a failure listing the bucket says what is wrong before any sweep.
pub fn preflight_message(f: &Failure, endpoint: &str, bucket: &str) -> String {
    match (f.class, f.code.as_deref()) {
        (ErrorClass::NotFound, Some("NoSuchBucket") | None) => format!(
            "bucket {bucket:?} does not exist at {endpoint} ({f}); create it, or give \
             --create-bucket with --prepare N"
        ),
        (ErrorClass::Forbidden, _) => format!(
            "{endpoint} refused the credentials for bucket {bucket:?} ({f}); check the access \
             key and secret, and the bucket policy"
        ),
        (ErrorClass::Refused, _) => {
            format!("nothing answers at {endpoint} ({f}); is the S3 service up on that port?")
        }
        (ErrorClass::Timeout, _) => format!("{endpoint} did not answer in time ({f})"),
        _ if f.detail.contains("certificate") => format!(
            "{endpoint}'s TLS certificate is not trusted ({f}); give --ca-bundle with the site's CA"
        ),
        _ => format!("listing bucket {bucket:?} at {endpoint} failed: {f}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(range: Option<u64>) -> GetPlan {
        GetPlan {
            bucket: "b".into(),
            objects: vec![
                ObjectRef {
                    key: "a".into(),
                    size_bytes: 1000,
                },
                ObjectRef {
                    key: "b".into(),
                    size_bytes: 10,
                },
            ],
            concurrency: vec![1],
            budget: LevelBudget::Requests(1),
            range_bytes: range,
            read_timeout: Duration::from_secs(1),
            progress_period: Duration::from_secs(1),
            endpoint: "http://x".into(),
        }
    }

    #[test]
    fn objects_in_turn_and_ranges_inside_them() {
        let p = plan(None);
        assert_eq!(pick(&p, 0), ("a", None));
        assert_eq!(pick(&p, 1), ("b", None));
        assert_eq!(pick(&p, 2), ("a", None));
        let p = plan(Some(100));
        for i in 0..200 {
            let (key, range) = pick(&p, i);
            let (first, last) = range.expect("ranged");
            let size = if key == "a" { 1000 } else { 10 };
            assert!(last < size, "{key} {first}-{last}");
            assert_eq!(last - first + 1, 100u64.min(size));
        }
    }

    #[test]
    fn preflight_messages_say_what_to_do() {
        let f = |class, status, code: Option<&str>| Failure {
            class,
            status,
            code: code.map(str::to_string),
            detail: "x".into(),
        };
        let m = preflight_message(
            &f(ErrorClass::NotFound, Some(404), Some("NoSuchBucket")),
            "http://e",
            "bk",
        );
        assert!(
            m.contains("bucket \"bk\" does not exist at http://e"),
            "{m}"
        );
        let m = preflight_message(
            &f(ErrorClass::Forbidden, Some(403), Some("InvalidAccessKeyId")),
            "http://e",
            "bk",
        );
        assert!(m.contains("refused the credentials"), "{m}");
        let mut tls = f(ErrorClass::Other, None, None);
        tls.detail = "invalid peer certificate: UnknownIssuer".into();
        let m = preflight_message(&tls, "https://e", "bk");
        assert!(m.contains("give --ca-bundle"), "{m}");
        let m = preflight_message(&f(ErrorClass::Refused, None, None), "http://e", "bk");
        assert!(m.contains("nothing answers at http://e"), "{m}");
    }
}
