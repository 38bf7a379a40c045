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
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BURNIN_LOG_LEVEL")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    Some(guard)
}
