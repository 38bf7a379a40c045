//! burnin's entry point: parse the command line, set up error reports and the log file, dispatch.

use clap::Parser;
use color_eyre::eyre::Result;

use burnin::commands;
use burnin::commands::cli::Cli;

#[tokio::main]
async fn main() -> Result<()> {
    // A panic's report keeps its colours on a terminal only: in a file or a CI log the
    // escape codes are noise.
    let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    color_eyre::config::HookBuilder::default()
        .theme(if on_terminal {
            color_eyre::config::Theme::dark()
        } else {
            color_eyre::config::Theme::new()
        })
        .install()?;
    let cli = Cli::parse();
    let explicit = cli.log_file.is_some();
    let log = cli.log_file.clone().or_else(commands::default_log_file);
    let _log_guard = match log.map(|path| (init_tracing(&path), path)) {
        Some((Ok(guard), _)) => Some(guard),
        // The default log on a node whose home is read-only: not worth a line on an agent's
        // stderr (the console would read it as the node's complaint); on a terminal, said.
        Some((Err(_), _)) if !explicit && !std::io::IsTerminal::is_terminal(&std::io::stderr()) => {
            None
        }
        Some((Err(why), path)) => {
            // Once, and the command goes on: a log that cannot be written is no reason to stop
            // a burn-in, and no reason to keep quiet about it either.
            let whose = if explicit { "" } else { " (the default log)" };
            eprintln!(
                "burnin: log file {}{whose}: {why}; going on without a log",
                burnin::model::strip_controls(&path.display().to_string())
            );
            None
        }
        None => None,
    };
    match commands::dispatch(cli).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // The error may quote a record, a node or a file: stripped like everything burnin
            // prints, and one line of causes (`a: b: c`), not a numbered report with a source
            // location, whatever RUST_BACKTRACE a site's shell sets. BURNIN_DEBUG=1 adds the
            // whole report after that line, for whoever debugs burnin itself.
            eprintln!(
                "{}",
                burnin::model::terminal_safe(&format!("burnin: {e:#}"))
            );
            if std::env::var_os("BURNIN_DEBUG").is_some_and(|v| v == "1") {
                eprintln!("{}", burnin::model::terminal_safe(&format!("{e:?}")));
            }
            std::process::exit(1);
        }
    }
}

/// Diagnostics go to a file: the screen is the UI. The file is opened and a first line
/// written and flushed here, so a directory, a read-only mount or a full disk (`/dev/full`)
/// is an error now, not lines lost later without a word.
fn init_tracing(
    path: &std::path::Path,
) -> Result<tracing_appender::non_blocking::WorkerGuard, String> {
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // Opened without waiting: a FIFO with no reader would hold `open` (and burnin) forever.
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => "a FIFO nobody reads".to_string(),
            _ => e.to_string(),
        })?;
    let kind = file.metadata().map_err(|e| e.to_string())?.file_type();
    if kind.is_fifo() || kind.is_socket() {
        return Err("not a file (a FIFO or a socket): a log must not hold burnin up".into());
    }
    // Writes block again as a log's should (a terminal given as the log would drop lines with
    // O_NONBLOCK left on).
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, with integer arguments only.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    writeln!(
        file,
        "burnin {} (pid {}) logging here",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    )
    .and_then(|_| file.flush())
    .map_err(|e| e.to_string())?;
    // The default queue preallocates 128 000 lines (4 MB of the console's heap, measured);
    // a burst past 8192 waiting lines drops lines rather than stalling the console.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(8192)
        .finish(file);
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(quiet_http_crates(
            tracing_subscriber::EnvFilter::try_from_env("BURNIN_LOG_LEVEL")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        ))
        .init();
    Ok(guard)
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
