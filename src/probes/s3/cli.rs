//! `burnin probe s3` on the command line: arguments to a [`ProbeSpec`], progress lines on
//! stderr, Ctrl-C/SIGTERM as a clean stop with partial results, the table or JSON on stdout,
//! and the exit code.

use std::path::PathBuf;

use clap::Args;
use color_eyre::eyre::Result;
use tokio::sync::{mpsc, watch};

use super::client::{CredentialInputs, S3Endpoint};
use super::get::LevelBudget;
use super::report::ms;
use super::{EXIT_CANNOT_RUN, ProbeSpec};
use crate::model::format_rate;
use crate::model::probe::ProbeWindow;

/// `burnin probe s3` options. Keys: --access-key/--secret-key, else AWS_ACCESS_KEY_ID and
/// AWS_SECRET_ACCESS_KEY, else a profile of ~/.aws/credentials; they are never printed.
#[derive(Debug, Clone, Args)]
pub struct S3ProbeArgs {
    /// S3 endpoint, e.g. http://aistor.lan:9000 (path-style addressing is used).
    #[arg(long)]
    pub endpoint: String,
    /// Bucket.
    #[arg(long)]
    pub bucket: String,
    /// Key prefix of the objects read (and of those --prepare writes).
    #[arg(long, default_value = "burnin-probe/")]
    pub prefix: String,
    /// get: GET concurrency sweep; loader: dataloader wait per step; checkpoint: save/restore.
    #[arg(long, value_enum, default_value = "get")]
    pub mode: crate::probes::s3::Mode,
    /// Concurrency levels of the sweep (the first one is the parallelism of the other modes;
    /// each 1 to 4096).
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64", value_parser = crate::model::units::count::<1, 4096>)]
    pub concurrency: Vec<usize>,
    /// Time per concurrency level (requests in flight at the end finish).
    #[arg(long, default_value = "30s", value_parser = crate::model::units::parse_duration, conflicts_with = "requests")]
    pub duration: std::time::Duration,
    /// Requests per concurrency level instead of a time (1 to 10^9).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub requests: Option<u64>,
    /// Ranged GETs of this size (e.g. 16MiB) instead of whole objects.
    #[arg(long, value_parser = crate::probes::s3::parse_size)]
    pub range_size: Option<u64>,
    /// Write N test objects under the prefix first (parallel multipart uploads; 1 to 100000).
    #[arg(long, value_name = "N", value_parser = crate::model::units::count::<1, 100_000>)]
    pub prepare: Option<usize>,
    /// Size of the objects --prepare writes (the site's shard size).
    #[arg(long, default_value = "256MiB", value_parser = crate::probes::s3::parse_size)]
    pub object_size: u64,
    /// Multipart part size (at most 5 GiB, S3's largest part; each upload in flight holds one).
    #[arg(long, default_value = "16MiB", value_parser = part_size)]
    pub part_size: u64,
    /// Create the bucket if it is missing (with --prepare or --mode checkpoint).
    #[arg(long)]
    pub create_bucket: bool,
    /// Read at most this many objects of the listing (1 to 10^7).
    #[arg(long, default_value_t = 1000, value_parser = crate::model::units::count::<1, 10_000_000>)]
    pub max_objects: usize,
    /// Loader: compute time per step (what the GPU spends on a batch).
    #[arg(long, default_value = "100ms", value_parser = crate::model::units::parse_duration)]
    pub step_time: std::time::Duration,
    /// Loader: steps (1 to 10^9).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub steps: u64,
    /// Loader: batches each worker may hold ahead (PyTorch's prefetch_factor; 1 to 64).
    #[arg(long, default_value_t = 2, value_parser = crate::model::units::count::<1, 64>)]
    pub prefetch: usize,
    /// Loader: read the files of this local directory instead (the local-NVMe baseline).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Checkpoint: size to save and restore.
    #[arg(long, default_value = "4GiB", value_parser = crate::probes::s3::parse_size)]
    pub checkpoint_size: u64,
    /// Checkpoint: keep the object (default: delete it).
    #[arg(long)]
    pub keep: bool,
    /// Access key id.
    #[arg(long)]
    pub access_key: Option<String>,
    /// Secret key (visible in `ps`: prefer AWS_SECRET_ACCESS_KEY or a profile).
    #[arg(long)]
    pub secret_key: Option<String>,
    /// Profile of ~/.aws/credentials (or AWS_SHARED_CREDENTIALS_FILE).
    #[arg(long)]
    pub profile: Option<String>,
    /// Region named in the signature.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// PEM file of CAs to trust (internal TLS) instead of the system's.
    #[arg(long)]
    pub ca_bundle: Option<PathBuf>,
    /// Connect timeout.
    #[arg(long, default_value = "5s", value_parser = crate::model::units::parse_duration)]
    pub connect_timeout: std::time::Duration,
    /// Longest wait for response headers, or between two chunks of a body.
    #[arg(long, default_value = "30s", value_parser = crate::model::units::parse_duration)]
    pub timeout: std::time::Duration,
    /// Server-side metrics to scrape around each level: MinIO's v3 API, else v2 (auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub metrics: crate::probes::s3::server_metrics::MetricsApi,
    /// Base URL of the metrics when not the endpoint (e.g. one MinIO node).
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// Bearer token for the scrape (default: a JWT signed with the S3 keys, as
    /// `mc admin prometheus generate` makes; a public endpoint ignores it).
    #[arg(long, env = "BURNIN_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Print the result as one JSON document (schema_version 1) on stdout.
    #[arg(long)]
    pub json: bool,
    /// For plan phases: progress windows and the final report as JSON lines on stdout (with
    /// the table between them), read by the `s3-probe` parser.
    #[arg(long, conflicts_with = "json")]
    pub json_lines: bool,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// A multipart part size: [`super::parse_size`], at most 5 GiB (S3's largest
/// part; a part is held in memory while it is sent).
pub fn part_size(s: &str) -> Result<u64, String> {
    match super::parse_size(s)? {
        n if n <= 5 << 30 => Ok(n),
        _ => Err(format!("{s:?}: a part is at most 5 GiB")),
    }
}

/// The spec these arguments ask for, or why they make no sense.
pub fn spec_from_args(a: &S3ProbeArgs) -> Result<ProbeSpec, String> {
    if a.concurrency.is_empty() || a.concurrency.iter().any(|&c| c == 0 || c > 4096) {
        return Err("--concurrency takes levels between 1 and 4096, e.g. 8,16,32,64".into());
    }
    if a.steps == 0 || a.prefetch == 0 {
        return Err("--steps and --prefetch must be at least 1".into());
    }
    if a.requests == Some(0) {
        return Err("--requests must be at least 1".into());
    }
    if a.prepare == Some(0) {
        return Err("--prepare takes the number of objects to write (at least 1)".into());
    }
    if a.dir.is_some() && a.mode != super::Mode::Loader {
        return Err("--dir is for --mode loader".into());
    }
    Ok(ProbeSpec {
        endpoint: S3Endpoint {
            url: a.endpoint.clone(),
            region: a.region.clone(),
            ca_bundle: a.ca_bundle.clone(),
            connect_timeout: a.connect_timeout,
            read_timeout: a.timeout,
        },
        credentials: CredentialInputs {
            access_key_flag: a.access_key.clone(),
            secret_key_flag: a.secret_key.clone(),
            profile_flag: a.profile.clone(),
        },
        bucket: a.bucket.clone(),
        prefix: a.prefix.clone(),
        mode: a.mode,
        concurrency: a.concurrency.clone(),
        budget: match a.requests {
            Some(n) => LevelBudget::Requests(n),
            None => LevelBudget::Duration(a.duration),
        },
        range_bytes: a.range_size,
        prepare: a.prepare,
        object_size: a.object_size,
        part_size: a.part_size,
        create_bucket: a.create_bucket,
        max_objects: a.max_objects.max(1),
        step_time: a.step_time,
        steps: a.steps,
        prefetch: a.prefetch,
        dir: a.dir.clone(),
        checkpoint_size: a.checkpoint_size,
        keep: a.keep,
        progress_period: std::time::Duration::from_secs(1),
        metrics: a.metrics,
        metrics_url: a.metrics_url.clone(),
        metrics_token: a.metrics_token.clone(),
    })
}

/// One progress line.
pub fn progress_line(w: &ProbeWindow) -> String {
    format!(
        "c={:<3} {:>10}  {:>4} GET/s  TTFB p50 {:>7} p99 {:>7}  total p99 {:>7}  errors {}",
        w.concurrency.map_or_else(|| "?".into(), |c| c.to_string()),
        format_rate(w.throughput_bytes_per_sec),
        w.requests,
        ms(w.ttfb_p50_ms),
        ms(w.ttfb_p99_ms),
        ms(w.total_p99_ms),
        w.errors
    )
}

/// One JSON line `{"burnin": KIND, …fields of value}` (what a plan phase's `s3-probe` parser
/// reads).
pub fn json_line(kind: &str, value: &impl serde::Serialize) -> String {
    let mut v = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert("burnin".into(), serde_json::Value::String(kind.into()));
    }
    v.to_string()
}

/// Runs the probe for the command line; returns the exit code.
pub async fn run(args: &S3ProbeArgs) -> Result<i32> {
    let spec = match spec_from_args(args) {
        Ok(s) => s,
        Err(e) => {
            crate::eprintln_safe!("burnin probe s3: {e}");
            return Ok(EXIT_CANNOT_RUN);
        }
    };
    let (cancel_tx, cancel_rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async {
                match term.as_mut() {
                    Some(t) => { t.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
        crate::eprintln_safe!("burnin probe s3: stopping; partial results follow");
        let _ = cancel_tx.send(true);
    });
    let quiet = args.quiet;
    let lines = args.json_lines;
    let (tx, mut rx) = mpsc::unbounded_channel::<ProbeWindow>();
    let printer = tokio::spawn(async move {
        while let Some(w) = rx.recv().await {
            if lines {
                crate::println_safe!("{}", json_line("s3_window", &w));
            } else if !quiet {
                crate::eprintln_safe!("{}", progress_line(&w));
            }
        }
    });
    let say = move |s: &str| {
        if !quiet {
            crate::eprintln_safe!("burnin probe s3: {s}");
        }
    };
    let env = |k: &str| std::env::var(k).ok();
    let result = super::run(&spec, &env, cancel_rx, Some(tx), &say).await;
    let _ = printer.await;
    match result {
        Err(e) => {
            crate::eprintln_safe!("burnin probe s3: {e}");
            if lines {
                crate::println_safe!(
                    "{}",
                    serde_json::json!({"burnin": "error", "text": format!("probe s3: {e}")})
                );
            }
            Ok(EXIT_CANNOT_RUN)
        }
        Ok(report) => {
            if lines {
                crate::print_safe!("{}", report.render_table());
                crate::println_safe!(
                    "{}",
                    serde_json::json!({"burnin": "s3_report", "report": report})
                );
            } else if args.json {
                crate::println_safe!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                crate::print_safe!("{}", report.render_table());
            }
            Ok(report.exit_code())
        }
    }
}
