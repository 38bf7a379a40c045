//! Checkpoint mode: save N GiB as one parallel multipart upload, restore it with parallel
//! ranged GETs of the same parts, and say how long each took. The restore checks every byte
//! arrived and that each part starts with the bytes that were written.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::errors::{ErrorClass, Failure, from_error, from_sdk};
use super::latency::{LatencyHistogram, LatencySummary};
use super::objects::{WriteStats, fill_pattern, gb_per_s, object_seed, part_seed, write_objects};

/// Bytes at the start of each part compared on restore.
const VERIFY_PREFIX_BYTES: usize = 64;

/// What checkpoint mode does.
#[derive(Debug, Clone)]
pub struct CheckpointPlan {
    /// Bucket.
    pub bucket: String,
    /// Object key.
    pub key: String,
    /// Checkpoint size.
    pub size_bytes: u64,
    /// Part size (save) and range size (restore).
    pub part_size: u64,
    /// Parts in flight.
    pub parallel: usize,
    /// Keep the object afterwards (default: delete it).
    pub keep: bool,
    /// Longest wait for the next body chunk.
    pub read_timeout: Duration,
}

/// The restore's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestoreStats {
    /// Bytes read.
    pub bytes: u64,
    /// Wall time.
    pub elapsed_s: f64,
    /// GB/s (10^9).
    pub throughput_gb_per_s: f64,
    /// Total time of each part's GET.
    pub part_latency: Option<LatencySummary>,
}

/// Checkpoint mode's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointReport {
    /// Object written.
    pub key: String,
    /// Size.
    pub size_bytes: u64,
    /// Save (multipart upload).
    pub save: WriteStats,
    /// Restore (ranged GETs), absent when the save failed.
    pub restore: Option<RestoreStats>,
    /// What the restore checked.
    pub verified: String,
    /// Whether the object was deleted afterwards.
    pub deleted: bool,
}

/// Saves, restores, verifies and (unless `keep`) deletes the checkpoint object.
pub async fn run_checkpoint(
    client: &aws_sdk_s3::Client,
    plan: &CheckpointPlan,
    progress: &super::Progress,
) -> Result<CheckpointReport, Failure> {
    let save = write_objects(
        client,
        &plan.bucket,
        &[(plan.key.clone(), plan.size_bytes)],
        plan.part_size,
        plan.parallel,
        &progress.bytes_written,
    )
    .await?;
    let restore = restore(client, plan, &progress.bytes_read).await;
    let deleted = if plan.keep {
        false
    } else {
        client
            .delete_object()
            .bucket(&plan.bucket)
            .key(&plan.key)
            .send()
            .await
            .is_ok()
    };
    let restore = restore?;
    let parts = plan.size_bytes.div_ceil(plan.part_size);
    Ok(CheckpointReport {
        key: plan.key.clone(),
        size_bytes: plan.size_bytes,
        save,
        restore: Some(restore),
        verified: format!(
            "every byte arrived; the first {VERIFY_PREFIX_BYTES} B of each of the {parts} part(s) match what was written"
        ),
        deleted,
    })
}

async fn restore(
    client: &aws_sdk_s3::Client,
    plan: &CheckpointPlan,
    read: &AtomicU64,
) -> Result<RestoreStats, Failure> {
    let seed = object_seed(&plan.key);
    // A single-part object was written with part 1's pattern, as multipart parts are.
    let parts = plan.size_bytes.div_ceil(plan.part_size).max(1);
    let started = Instant::now();
    let bytes = AtomicU64::new(0);
    let results = futures::stream::iter(1..=parts)
        .map(|n| {
            let first = (n - 1) * plan.part_size;
            let last = (first + plan.part_size).min(plan.size_bytes) - 1;
            let bytes = &bytes;
            async move {
                let t = Instant::now();
                let prefix = read_range(client, plan, first, last, bytes, read).await?;
                let mut want = vec![0u8; prefix.len()];
                fill_pattern(&mut want, part_seed(seed, n));
                if prefix != want {
                    return Err(Failure {
                        class: ErrorClass::Other,
                        status: None,
                        code: None,
                        detail: format!(
                            "part {n} of {} came back with other bytes than were written",
                            plan.key
                        ),
                    });
                }
                Ok::<_, Failure>(t.elapsed())
            }
        })
        .buffer_unordered(plan.parallel.max(1))
        .collect::<Vec<_>>()
        .await;
    let elapsed_s = started.elapsed().as_secs_f64();
    let mut lat = LatencyHistogram::new();
    for r in results {
        lat.record(r?);
    }
    let bytes = bytes.into_inner();
    if bytes != plan.size_bytes {
        return Err(Failure {
            class: ErrorClass::Reset,
            status: None,
            code: None,
            detail: format!("restore read {bytes} of {} B", plan.size_bytes),
        });
    }
    Ok(RestoreStats {
        bytes,
        elapsed_s,
        throughput_gb_per_s: gb_per_s(bytes, elapsed_s),
        part_latency: lat.summary(),
    })
}

/// Reads `first..=last` fully; returns the range's first bytes for verification.
async fn read_range(
    client: &aws_sdk_s3::Client,
    plan: &CheckpointPlan,
    first: u64,
    last: u64,
    bytes: &AtomicU64,
    read: &AtomicU64,
) -> Result<Vec<u8>, Failure> {
    let resp = client
        .get_object()
        .bucket(&plan.bucket)
        .key(&plan.key)
        .range(format!("bytes={first}-{last}"))
        .send()
        .await
        .map_err(|e| from_sdk(&e))?;
    let mut body = resp.body;
    let mut prefix = Vec::with_capacity(VERIFY_PREFIX_BYTES);
    let mut got = 0u64;
    loop {
        match tokio::time::timeout(plan.read_timeout, body.next()).await {
            Err(_) => {
                return Err(Failure {
                    class: ErrorClass::Timeout,
                    status: None,
                    code: None,
                    detail: format!("restore stalled at byte {} of {}", first + got, plan.key),
                });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(from_error(&e)),
            Ok(Some(Ok(chunk))) => {
                let room = VERIFY_PREFIX_BYTES.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..room.min(chunk.len())]);
                got += chunk.len() as u64;
                bytes.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
                read.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    if got != last - first + 1 {
        return Err(Failure {
            class: ErrorClass::Reset,
            status: None,
            code: None,
            detail: format!("range {first}-{last} of {} returned {got} B", plan.key),
        });
    }
    Ok(prefix)
}
