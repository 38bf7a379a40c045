//! `burnin probe s3` on the command line: arguments to a [`ProbeSpec`], progress lines on
//! stderr, Ctrl-C/SIGTERM as a clean stop with partial results, the table or JSON on stdout,
//! and the exit code.

use color_eyre::eyre::Result;
use tokio::sync::{mpsc, watch};

use super::client::{CredentialInputs, S3Endpoint};
use super::get::LevelBudget;
use super::report::ms;
use super::{EXIT_CANNOT_RUN, ProbeSpec};
use crate::cli::S3ProbeArgs;
use crate::model::format_rate;
use crate::probes::ProbeWindow;

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
