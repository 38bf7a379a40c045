//! The objects the probe reads and writes: listing what is under the prefix, writing test
//! objects with parallel multipart uploads (`--prepare`), and the byte pattern they hold.
//!
//! Test data is pseudo-random (xorshift), never zeros: a store that compresses or dedupes
//! would otherwise measure a fiction. Each part's bytes follow from (object seed, part number),
//! so a read-back can check samples without keeping the data.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::errors::{ErrorClass, Failure, from_sdk};
use super::latency::{LatencyHistogram, LatencySummary};

/// Smallest part S3 accepts (all parts but the last).
pub const MIN_PART_BYTES: u64 = 5 * 1024 * 1024;
/// Most parts in one multipart upload.
pub const MAX_PARTS: u64 = 10_000;

/// An object to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Key.
    pub key: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// Key of the `index`-th test object under `prefix`.
pub fn test_object_key(prefix: &str, index: usize) -> String {
    let sep = if prefix.is_empty() || prefix.ends_with('/') {
        ""
    } else {
        "/"
    };
    format!("{prefix}{sep}burnin-probe-{index:05}.bin")
}

/// SplitMix64: spreads a counter into a well-mixed seed.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` with the pattern for `seed` (xorshift64, 8 bytes a step: several GB/s).
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut s = splitmix64(seed) | 1;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        c.copy_from_slice(&s.to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let bytes = s.to_le_bytes();
        rest.copy_from_slice(&bytes[..rest.len()]);
    }
}

/// Seed of one part of one object.
pub fn part_seed(object_seed: u64, part_number: u64) -> u64 {
    splitmix64(object_seed ^ part_number.wrapping_mul(0x2545_F491_4F6C_DD1D))
}

/// Seed of an object from its key (so prepare and verify agree without state).
pub fn object_seed(key: &str) -> u64 {
    key.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
    })
}

/// Lists the objects under `prefix` (every page), skipping empty ones and "directories".
pub async fn list_objects(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
    limit: usize,
) -> Result<Vec<ObjectRef>, Failure> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    let mut empty_pages = 0;
    loop {
        let mut req = client.list_objects_v2().bucket(bucket).prefix(prefix);
        if let Some(t) = &token {
            req = req.continuation_token(t);
        }
        let page = req.send().await.map_err(|e| from_sdk(&e))?;
        for o in page.contents() {
            let size = o.size().unwrap_or(0);
            if let (Some(key), Ok(size_bytes)) = (o.key(), u64::try_from(size))
                && size_bytes > 0
                && !key.ends_with('/')
            {
                out.push(ObjectRef {
                    key: key.to_string(),
                    size_bytes,
                });
                if out.len() >= limit {
                    return Ok(out);
                }
            }
        }
        match (page.is_truncated(), page.next_continuation_token()) {
            (Some(true), Some(t)) => {
                // A server that keeps saying "truncated" with nothing new (the same token, or
                // page after page of no keys) would be listed forever (issue 41: 1 369
                // requests in a minute).
                empty_pages = if page.contents().is_empty() {
                    empty_pages + 1
                } else {
                    0
                };
                if token.as_deref() == Some(t) || empty_pages > MAX_EMPTY_PAGES {
                    return Err(endless_listing(empty_pages, token.as_deref() == Some(t)));
                }
                token = Some(t.to_string());
            }
            _ => return Ok(out),
        }
    }
}

/// Truncated pages with no key in a row before a listing is called endless.
const MAX_EMPTY_PAGES: usize = 16;

/// Why a listing was given up.
fn endless_listing(empty_pages: usize, same_token: bool) -> Failure {
    Failure {
        class: ErrorClass::Other,
        status: None,
        code: None,
        detail: if same_token {
            "the server answered a listing page with the token it was given: it would list forever"
                .into()
        } else {
            format!(
                "the server answered {empty_pages} truncated listing pages in a row with no key: it would list forever"
            )
        },
    }
}

/// What writing objects took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteStats {
    /// Objects written.
    pub objects: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Wall time.
    pub elapsed_s: f64,
    /// bytes / elapsed, in GB/s (10^9).
    pub throughput_gb_per_s: f64,
    /// Part size used.
    pub part_size_bytes: u64,
    /// Parts in flight at most.
    pub parallel_parts: usize,
    /// Latency of each part upload.
    pub part_latency: Option<LatencySummary>,
}

/// Checks a part size against S3's limits for an object of `size` bytes.
pub fn check_part_size(size: u64, part_size: u64) -> Result<(), String> {
    if part_size < MIN_PART_BYTES {
        return Err(format!(
            "part size {part_size} B is below S3's minimum of 5 MiB"
        ));
    }
    if size.div_ceil(part_size) > MAX_PARTS {
        return Err(format!(
            "{size} B in parts of {part_size} B is more than S3's {MAX_PARTS} parts"
        ));
    }
    Ok(())
}

/// Writes objects (`(key, size)`) with parts of `part_size`, at most `parallel` parts in
/// flight across all objects. Stops at the first failure (a half-written test set would skew
/// the read side) and aborts that object's upload. `written` counts bytes as parts land (for
/// progress lines).
pub async fn write_objects(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    objects: &[(String, u64)],
    part_size: u64,
    parallel: usize,
    written: &AtomicU64,
) -> Result<WriteStats, Failure> {
    let parallel = parallel.max(1);
    let permits = Arc::new(Semaphore::new(parallel));
    let started = Instant::now();
    let mut part_latency = LatencyHistogram::new();
    let mut bytes = 0;
    let mut uploads =
        futures::stream::iter(objects.iter().cloned())
            .map(|(key, size)| {
                let permits = permits.clone();
                let client = client.clone();
                let bucket = bucket.to_string();
                async move {
                    write_one(&client, &bucket, &key, size, part_size, &permits, written).await
                }
            })
            .buffer_unordered(parallel);
    while let Some(done) = uploads.next().await {
        let (size, lat) = done?;
        bytes += size;
        part_latency.merge(&lat);
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    Ok(WriteStats {
        objects: objects.len(),
        bytes,
        elapsed_s,
        throughput_gb_per_s: gb_per_s(bytes, elapsed_s),
        part_size_bytes: part_size,
        parallel_parts: parallel,
        part_latency: part_latency.summary(),
    })
}

/// Decimal GB/s.
pub fn gb_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1e9 / seconds
    } else {
        0.0
    }
}

async fn write_one(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    size: u64,
    part_size: u64,
    permits: &Semaphore,
    written: &AtomicU64,
) -> Result<(u64, LatencyHistogram), Failure> {
    let seed = object_seed(key);
    let mut lat = LatencyHistogram::new();
    if size <= part_size {
        let _permit = permits.acquire().await.map_err(closed)?;
        let body = pattern_bytes(size, part_seed(seed, 1));
        let t = Instant::now();
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| from_sdk(&e))?;
        lat.record(t.elapsed());
        written.fetch_add(size, Ordering::Relaxed);
        return Ok((size, lat));
    }
    let created = client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| from_sdk(&e))?;
    let Some(upload_id) = created.upload_id().map(str::to_string) else {
        return Err(Failure {
            class: ErrorClass::Other,
            status: None,
            code: None,
            detail: format!("CreateMultipartUpload for {key} returned no upload id"),
        });
    };
    let parts = size.div_ceil(part_size);
    let results = futures::stream::iter(1..=parts)
        .map(|n| {
            let len = part_size.min(size - (n - 1) * part_size);
            let upload_id = upload_id.clone();
            async move {
                let _permit = permits.acquire().await.map_err(closed)?;
                let body = pattern_bytes(len, part_seed(seed, n));
                let t = Instant::now();
                let out = client
                    .upload_part()
                    .bucket(bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .part_number(i32::try_from(n).unwrap_or(i32::MAX))
                    .body(ByteStream::from(body))
                    .send()
                    .await
                    .map_err(|e| from_sdk(&e))?;
                written.fetch_add(len, Ordering::Relaxed);
                Ok::<_, Failure>((n, out.e_tag().map(str::to_string), t.elapsed()))
            }
        })
        .buffer_unordered(usize::try_from(parts).unwrap_or(usize::MAX))
        .collect::<Vec<_>>()
        .await;
    let mut completed = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok((n, etag, took)) => {
                lat.record(took);
                completed.push(
                    CompletedPart::builder()
                        .part_number(i32::try_from(n).unwrap_or(i32::MAX))
                        .set_e_tag(etag)
                        .build(),
                );
            }
            Err(f) => {
                abort(client, bucket, key, &upload_id).await;
                return Err(f);
            }
        }
    }
    completed.sort_by_key(|p| p.part_number());
    let done = client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(completed))
                .build(),
        )
        .send()
        .await;
    if let Err(e) = done {
        abort(client, bucket, key, &upload_id).await;
        return Err(from_sdk(&e));
    }
    Ok((size, lat))
}

async fn abort(client: &aws_sdk_s3::Client, bucket: &str, key: &str, upload_id: &str) {
    // Best effort: the failure being reported matters more than this one.
    let _ = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .abort_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(upload_id)
            .send(),
    )
    .await;
}

fn closed(_: tokio::sync::AcquireError) -> Failure {
    Failure {
        class: ErrorClass::Other,
        status: None,
        code: None,
        detail: "upload cancelled".into(),
    }
}

/// `len` bytes of the pattern for `seed`.
pub fn pattern_bytes(len: u64, seed: u64) -> Bytes {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    fill_pattern(&mut buf, seed);
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_not_compressible_junk() {
        let a = pattern_bytes(1 << 16, 7);
        let b = pattern_bytes(1 << 16, 7);
        let c = pattern_bytes(1 << 16, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Not zeros, and every byte value shows up (no long runs a compressor would eat).
        let mut seen = [false; 256];
        for &x in a.iter() {
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        // Odd lengths fill the tail too.
        let odd = pattern_bytes(13, 7);
        assert_eq!(&odd[..8], &a[..8]);
        assert_ne!(&odd[8..], &[0u8; 5]);
    }

    #[test]
    fn keys_and_seeds() {
        assert_eq!(test_object_key("", 3), "burnin-probe-00003.bin");
        assert_eq!(
            test_object_key("shards", 3),
            "shards/burnin-probe-00003.bin"
        );
        assert_eq!(
            test_object_key("shards/", 3),
            "shards/burnin-probe-00003.bin"
        );
        assert_ne!(object_seed("a"), object_seed("b"));
        assert_ne!(part_seed(1, 1), part_seed(1, 2));
    }

    #[test]
    fn part_sizes_follow_s3_limits() {
        assert!(check_part_size(1 << 30, 4 << 20).is_err());
        assert!(check_part_size(1 << 30, 16 << 20).is_ok());
        assert!(check_part_size(100_000 * (5 << 20), 5 << 20).is_err());
        assert!((gb_per_s(2_000_000_000, 2.0) - 1.0).abs() < 1e-12);
        assert_eq!(gb_per_s(1, 0.0), 0.0);
    }
}
