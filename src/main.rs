//! burnin's entry point: parse the command line, set up error reports and the log file, dispatch.

use clap::Parser;
use color_eyre::eyre::Result;

use burnin::cli::Cli;
use burnin::commands;

#[tokio::main]
async fn main() -> Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let _log_guard = init_tracing(cli.log_file.clone().or_else(commands::default_log_file));
    let code = commands::dispatch(cli).await?;
    std::process::exit(code);
}

/// Diagnostics go to a file: the screen is the UI.
fn init_tracing(
    path: Option<std::path::PathBuf>,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let path = path?;
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(quiet_http_crates(
            tracing_subscriber::EnvFilter::try_from_env("BURNIN_LOG_LEVEL")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        ))
        .init();
    Some(guard)
}

/// The S3 SDK and the HTTP clients log requests, signatures and headers at debug/trace, with
/// the access key id in them: they stay at warn whatever BURNIN_LOG_LEVEL says, and SigV4's
/// own logging is off, so no credential reaches the log.
fn quiet_http_crates(filter: tracing_subscriber::EnvFilter) -> tracing_subscriber::EnvFilter {
    [
        "aws_sigv4=off",
        "aws_smithy_runtime=warn",
        "aws_smithy_runtime_api=warn",
        "aws_smithy_http_client=warn",
        "aws_smithy_http=warn",
        "aws_runtime=warn",
        "aws_sdk_s3=warn",
        "hyper=warn",
        "hyper_util=warn",
        "reqwest=warn",
        "rustls=warn",
    ]
    .into_iter()
    .filter_map(|d| d.parse().ok())
    .fold(filter, tracing_subscriber::EnvFilter::add_directive)
}
