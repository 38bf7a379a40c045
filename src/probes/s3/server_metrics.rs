//! The server's side of the probe: MinIO's own Prometheus metrics, scraped before and after
//! each concurrency level, so the table shows what the store saw while it was measured —
//! GetObject requests and their rate, 4xx/5xx errors, the server's TTFB distribution and the
//! drives online and offline.
//!
//! Two generations: v2 (`/minio/v2/metrics/cluster`, `minio_s3_requests_*{api="getobject"}`)
//! and v3 (`/minio/metrics/v3/api/requests` and `/cluster/health`,
//! `minio_api_requests_*{name="GetObject"}`). Scrape auth is a bearer JWT (HS512, `sub` = the
//! access key, `iss` = "prometheus", signed with the secret key) as `mc admin prometheus
//! generate` makes it, a token given as is, or none for a public endpoint. The server's TTFB
//! buckets start at 50 ms and are coarse: its percentiles are interpolated inside them and
//! are no substitute for the client's own TTFB.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha512;

use crate::wire::prometheus::{self, Exposition, Sample};

/// Which metrics API to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricsApi {
    /// v3, else v2.
    Auto,
    /// `/minio/v2/metrics/cluster`.
    V2,
    /// `/minio/metrics/v3/…`.
    V3,
    /// Do not scrape.
    Off,
}

/// The v2 cluster path.
pub const V2_PATH: &str = "/minio/v2/metrics/cluster";
/// The v3 paths read: API requests (rates, errors, TTFB), cluster health (drives) and the
/// erasure sets (online drives against write quorum).
pub const V3_PATHS: [&str; 3] = [
    "/minio/metrics/v3/api/requests",
    "/minio/metrics/v3/cluster/health",
    "/minio/metrics/v3/cluster/erasure-set",
];

/// The figures of one scrape that the probe compares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSnapshot {
    /// GetObject requests served so far (all servers).
    pub get_requests: Option<f64>,
    /// Requests answered 4xx so far.
    pub errors_4xx: Option<f64>,
    /// Requests answered 5xx so far.
    pub errors_5xx: Option<f64>,
    /// GetObject TTFB buckets `(le seconds, cumulative count)`, summed over servers.
    pub get_ttfb_buckets: Vec<(f64, f64)>,
    /// Drives online.
    pub drives_online: Option<f64>,
    /// Drives offline.
    pub drives_offline: Option<f64>,
    /// An erasure set under its write quorum, in words ([`super::quorum::from_metrics`]).
    pub write_quorum_lost: Option<String>,
    /// Samples in the scrape.
    pub samples: usize,
}

impl ServerSnapshot {
    /// Whether any MinIO figure was found.
    pub fn is_minio(&self) -> bool {
        self.get_requests.is_some()
            || self.drives_online.is_some()
            || !self.get_ttfb_buckets.is_empty()
    }
}

fn sum<'a>(samples: impl Iterator<Item = &'a Sample>) -> Option<f64> {
    let mut total = None;
    for s in samples {
        if s.value.is_finite() {
            *total.get_or_insert(0.0) += s.value;
        }
    }
    total
}

fn is_get(s: &Sample) -> bool {
    s.label("api")
        .is_some_and(|a| a.eq_ignore_ascii_case("getobject"))
        || s.label("name")
            .is_some_and(|a| a.eq_ignore_ascii_case("getobject"))
}

/// Buckets of many series summed per `le` (one series per server).
fn summed_buckets<'a>(samples: impl Iterator<Item = &'a Sample>) -> Vec<(f64, f64)> {
    let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for (le, count) in prometheus::buckets(samples) {
        let e = by_le.entry(le.to_bits()).or_insert((le, 0.0));
        e.1 += count;
    }
    let mut v: Vec<(f64, f64)> = by_le.into_values().collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Reads a scrape (v2, v3 or both concatenated) into the figures compared.
pub fn snapshot(exp: &Exposition) -> ServerSnapshot {
    let pick =
        |v2: &str, v3: &str| -> Option<f64> { sum(exp.metric(v2)).or_else(|| sum(exp.metric(v3))) };
    let get_requests = sum(exp.metric("minio_s3_requests_total").filter(|s| is_get(s)))
        .or_else(|| sum(exp.metric("minio_api_requests_total").filter(|s| is_get(s))));
    let mut ttfb = summed_buckets(
        exp.metric("minio_s3_requests_ttfb_seconds_distribution")
            .filter(|s| is_get(s)),
    );
    if ttfb.is_empty() {
        ttfb = summed_buckets(
            exp.metric("minio_api_requests_ttfb_seconds_distribution")
                .filter(|s| is_get(s)),
        );
    }
    ServerSnapshot {
        get_requests,
        errors_4xx: pick(
            "minio_s3_requests_4xx_errors_total",
            "minio_api_requests_4xx_errors_total",
        ),
        errors_5xx: pick(
            "minio_s3_requests_5xx_errors_total",
            "minio_api_requests_5xx_errors_total",
        ),
        get_ttfb_buckets: ttfb,
        // Before 2023 the v2 names said "disk" (minio_cluster_disk_online_total).
        drives_online: pick(
            "minio_cluster_drive_online_total",
            "minio_cluster_health_drives_online_count",
        )
        .or_else(|| sum(exp.metric("minio_cluster_disk_online_total"))),
        drives_offline: pick(
            "minio_cluster_drive_offline_total",
            "minio_cluster_health_drives_offline_count",
        )
        .or_else(|| sum(exp.metric("minio_cluster_disk_offline_total"))),
        write_quorum_lost: super::quorum::from_metrics(exp)
            .into_iter()
            .find(|f| f.critical)
            .map(|f| f.why),
        samples: exp.samples.len(),
    }
}

/// What the server saw between two scrapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerDelta {
    /// GetObject requests served.
    pub get_requests: Option<f64>,
    /// Of those per second.
    pub get_per_s: Option<f64>,
    /// 4xx answers (all APIs).
    pub errors_4xx: Option<f64>,
    /// 5xx answers (all APIs).
    pub errors_5xx: Option<f64>,
    /// Server-side GetObject TTFB median, ms (interpolated in coarse buckets).
    pub ttfb_p50_ms: Option<f64>,
    /// Server-side GetObject TTFB p99, ms (same caveat).
    pub ttfb_p99_ms: Option<f64>,
    /// Drives online at the end.
    pub drives_online: Option<f64>,
    /// Drives offline at the end.
    pub drives_offline: Option<f64>,
    /// An erasure set under its write quorum at the end, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_quorum_lost: Option<String>,
    /// Counters went down between the scrapes (a server restarted): deltas not trusted.
    pub counters_reset: bool,
}

/// The difference of two snapshots `seconds` apart.
pub fn delta(before: &ServerSnapshot, after: &ServerSnapshot, seconds: f64) -> ServerDelta {
    let mut reset = false;
    let mut d = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b < a => {
            reset = true;
            None
        }
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let get_requests = d(before.get_requests, after.get_requests);
    let errors_4xx = d(before.errors_4xx, after.errors_4xx);
    let errors_5xx = d(before.errors_5xx, after.errors_5xx);
    let mut buckets: Vec<(f64, f64)> = after
        .get_ttfb_buckets
        .iter()
        .map(|&(le, count)| {
            let was = before
                .get_ttfb_buckets
                .iter()
                .find(|(l, _)| *l == le)
                .map_or(0.0, |b| b.1);
            (le, count - was)
        })
        .collect();
    if buckets.iter().any(|(_, c)| *c < 0.0) {
        reset = true;
        buckets.clear();
    }
    let q = |q| prometheus::quantile(&buckets, q).map(|s| s * 1000.0);
    ServerDelta {
        get_requests,
        get_per_s: get_requests.filter(|_| seconds > 0.0).map(|n| n / seconds),
        errors_4xx,
        errors_5xx,
        ttfb_p50_ms: q(0.5),
        ttfb_p99_ms: q(0.99),
        drives_online: after.drives_online,
        drives_offline: after.drives_offline,
        write_quorum_lost: after.write_quorum_lost.clone(),
        counters_reset: reset,
    }
}

/// A scrape JWT as `mc admin prometheus generate` makes it, valid for `valid_for`.
pub fn minio_jwt(
    access_key: &str,
    secret_key: &str,
    now_unix_s: u64,
    valid_for: Duration,
) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS512","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "exp": now_unix_s + valid_for.as_secs(),
        "sub": access_key,
        "iss": "prometheus",
    });
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string().as_bytes());
    let signing_input = format!("{header}.{claims}");
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    #[allow(clippy::expect_used, reason = "HMAC takes a key of any length")]
    let mut mac = Hmac::<Sha512>::new_from_slice(secret_key.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(signing_input.as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{sig}")
}

/// Where and how to scrape.
#[derive(Clone)]
pub struct Scraper {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    api: MetricsApi,
}

/// A scrape that could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScrapeError(pub String);

impl Scraper {
    /// A scraper of `base` (the MinIO endpoint URL); `token` goes out as a bearer token.
    pub fn new(
        base: &str,
        token: Option<String>,
        api: MetricsApi,
        ca_bundle: Option<&std::path::Path>,
        timeout: Duration,
    ) -> Result<Self, ScrapeError> {
        // Direct, like the S3 client: the figures are the store's, never a proxy's.
        let mut builder = reqwest::Client::builder().no_proxy().timeout(timeout);
        if let Some(path) = ca_bundle {
            let pem = crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
                .map(String::into_bytes)
                .map_err(|e| ScrapeError(format!("CA bundle {}: {e}", path.display())))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| ScrapeError(format!("CA bundle {}: {e}", path.display())))?;
            builder = builder.tls_certs_only(certs);
        }
        let http = builder
            .build()
            .map_err(|e| ScrapeError(format!("metrics HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token,
            api,
        })
    }

    async fn get_text(&self, path: &str) -> Result<Result<String, u16>, ScrapeError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ScrapeError(format!("scraping {url}: {}", short_error(&e))))?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Ok(Err(status));
        }
        resp.text()
            .await
            .map(Ok)
            .map_err(|e| ScrapeError(format!("reading {url}: {}", short_error(&e))))
    }

    /// MinIO's own cluster health check (`/minio/health/cluster`, which needs no credentials):
    /// a finding when it answers 503 with `X-Minio-Write-Quorum` (an erasure set under its
    /// write quorum). `None` when it holds, or when the endpoint is no MinIO (any other answer).
    pub async fn cluster_health(&self) -> Option<super::quorum::QuorumFinding> {
        let url = format!("{}/minio/health/cluster", self.base);
        let resp = self.http.get(&url).send().await.ok()?;
        let quorum = resp
            .headers()
            .get("x-minio-write-quorum")?
            .to_str()
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()?;
        let text = format!(
            "HTTP/1.1 {}\nX-Minio-Write-Quorum: {quorum}\n",
            resp.status().as_u16()
        );
        super::quorum::from_health_response(&text).filter(|f| f.critical)
    }

    /// Finds the API that answers (v3 first under `auto`); returns it and a first scrape.
    pub async fn detect(&mut self) -> Result<(MetricsApi, ServerSnapshot), ScrapeError> {
        let order: &[MetricsApi] = match self.api {
            MetricsApi::Auto => &[MetricsApi::V3, MetricsApi::V2],
            MetricsApi::V2 => &[MetricsApi::V2],
            MetricsApi::V3 => &[MetricsApi::V3],
            MetricsApi::Off => return Err(ScrapeError("metrics scraping is off".into())),
        };
        let mut answers = Vec::new();
        for &api in order {
            self.api = api;
            match self.scrape_raw().await? {
                Ok(snap) if snap.is_minio() => return Ok((api, snap)),
                Ok(snap) => answers.push(format!(
                    "{} answered {} samples but no MinIO request or drive metrics",
                    self.describe(),
                    snap.samples
                )),
                Err(401 | 403) => answers.push(format!(
                    "{} refused the scrape (401/403): give --metrics-token, or the S3 keys \
                     need admin:Prometheus rights, or set MINIO_PROMETHEUS_AUTH_TYPE=public",
                    self.describe()
                )),
                Err(status) => answers.push(format!("{} answered HTTP {status}", self.describe())),
            }
        }
        Err(ScrapeError(format!(
            "no MinIO metrics (is this MinIO?): {}",
            answers.join("; ")
        )))
    }

    /// One scrape of the detected API.
    pub async fn scrape(&self) -> Result<ServerSnapshot, ScrapeError> {
        match self.scrape_raw().await? {
            Ok(s) => Ok(s),
            Err(status) => Err(ScrapeError(format!(
                "{} answered HTTP {status}",
                self.describe()
            ))),
        }
    }

    async fn scrape_raw(&self) -> Result<Result<ServerSnapshot, u16>, ScrapeError> {
        let paths: &[&str] = match self.api {
            MetricsApi::V2 => &[V2_PATH],
            _ => &V3_PATHS,
        };
        let mut text = String::new();
        for (i, p) in paths.iter().enumerate() {
            match self.get_text(p).await? {
                Ok(t) => {
                    text.push_str(&t);
                    text.push('\n');
                }
                // The first path decides whether this API is there; a later one may be
                // switched off on its own.
                Err(status) if i == 0 => return Ok(Err(status)),
                Err(_) => {}
            }
        }
        Ok(Ok(snapshot(&prometheus::parse(&text))))
    }

    /// `v3 http://host:9000/minio/metrics/v3` and the like.
    pub fn describe(&self) -> String {
        match self.api {
            MetricsApi::V2 => format!("v2 {}{V2_PATH}", self.base),
            _ => format!("v3 {}/minio/metrics/v3", self.base),
        }
    }
}

/// A reqwest error with its causes, each said once (reqwest's own text hides the OS reason).
pub(crate) fn short_error(e: &reqwest::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;

    #[test]
    fn v2_drive_lines_from_play_min_io() {
        let text = tool_output("minio/v2-play-cluster-and-node-drive-lines.prom");
        let s = snapshot(&prometheus::parse(&text));
        assert_eq!(s.drives_online, Some(4.0));
        assert_eq!(s.drives_offline, Some(0.0));
        assert!(s.is_minio());
    }

    #[test]
    fn v2_ttfb_distribution_sorted_by_number_not_string() {
        let text = tool_output("minio/v2-cluster-s3-ttfb-distribution-partial.prom");
        let s = snapshot(&prometheus::parse(&text));
        let les: Vec<f64> = s.get_ttfb_buckets.iter().map(|b| b.0).collect();
        let mut sorted = les.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(les, sorted);
        assert!(!les.is_empty());
    }

    #[test]
    fn a_scrape_of_something_else_is_not_minio() {
        let text = tool_output("dcgm-exporter/metrics-h100-mig-k8s-labels-partial.prom");
        assert!(!snapshot(&prometheus::parse(&text)).is_minio());
    }

    fn v3(get: f64, e4: f64, e5: f64, buckets: &[(f64, f64)], servers: usize) -> Exposition {
        let mut t = String::new();
        for s in 0..servers {
            t.push_str(&format!(
                "minio_api_requests_total{{name=\"GetObject\",type=\"s3\",server=\"n{s}:9000\"}} {get}\n\
                 minio_api_requests_total{{name=\"PutObject\",type=\"s3\",server=\"n{s}:9000\"}} 999\n\
                 minio_api_requests_4xx_errors_total{{name=\"GetObject\",type=\"s3\",server=\"n{s}:9000\"}} {e4}\n\
                 minio_api_requests_5xx_errors_total{{name=\"GetObject\",type=\"s3\",server=\"n{s}:9000\"}} {e5}\n"
            ));
            for (le, c) in buckets {
                t.push_str(&format!(
                    "minio_api_requests_ttfb_seconds_distribution{{name=\"GetObject\",type=\"s3\",le=\"{le}\",server=\"n{s}:9000\"}} {c}\n"
                ));
            }
        }
        t.push_str("minio_cluster_health_drives_online_count 16\nminio_cluster_health_drives_offline_count 1\n");
        prometheus::parse(&t)
    }

    #[test]
    fn deltas_over_two_servers() {
        let before = snapshot(&v3(
            100.0,
            1.0,
            0.0,
            &[(0.05, 50.0), (0.1, 90.0), (0.25, 100.0)],
            2,
        ));
        let after = snapshot(&v3(
            200.0,
            1.0,
            2.0,
            &[(0.05, 100.0), (0.1, 180.0), (0.25, 200.0)],
            2,
        ));
        let d = delta(&before, &after, 10.0);
        // 100 more GETs on each of two servers.
        assert_eq!(d.get_requests, Some(200.0));
        assert_eq!(d.get_per_s, Some(20.0));
        assert_eq!(d.errors_4xx, Some(0.0));
        assert_eq!(d.errors_5xx, Some(4.0));
        // Of 200 new GETs: 100 ≤ 50 ms, 80 in (50, 100], 20 in (100, 250]. The median is the
        // 100th: the top of the first bucket; p99 (198th) interpolates in the last one.
        assert!((d.ttfb_p50_ms.expect("p50") - 50.0).abs() < 1e-9);
        let p99 = d.ttfb_p99_ms.expect("p99");
        assert!((p99 - (100.0 + 150.0 * 18.0 / 20.0)).abs() < 1e-9, "{p99}");
        assert_eq!((d.drives_online, d.drives_offline), (Some(16.0), Some(1.0)));
        assert!(!d.counters_reset);
    }

    #[test]
    fn a_restarted_server_is_not_a_negative_rate() {
        let before = snapshot(&v3(500.0, 0.0, 0.0, &[(0.05, 500.0)], 1));
        let after = snapshot(&v3(10.0, 0.0, 0.0, &[(0.05, 10.0)], 1));
        let d = delta(&before, &after, 1.0);
        assert!(d.counters_reset);
        assert_eq!(d.get_requests, None);
        assert_eq!(d.ttfb_p50_ms, None);
    }

    #[test]
    fn jwt_is_what_minio_checks() {
        let t = minio_jwt("AKIA", "secret", 1_700_000_000, Duration::from_secs(3600));
        let parts: Vec<&str> = t.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["sub"], "AKIA");
        assert_eq!(claims["iss"], "prometheus");
        assert_eq!(claims["exp"], 1_700_003_600u64);
        let mut mac = Hmac::<Sha512>::new_from_slice(b"secret").expect("key");
        mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        mac.verify_slice(&URL_SAFE_NO_PAD.decode(parts[2]).expect("b64"))
            .expect("signature verifies with the secret key");
        assert!(!t.contains("secret"));
    }
}
