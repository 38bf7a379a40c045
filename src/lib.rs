//! burnin: a terminal console for GPU-cluster burn-in and acceptance.
//!
//! Data flows one way (see `docs/ARCHITECTURE.md`):
//!
//! ```text
//! sources ──► SourceEvent ──► app loop ──► State (store, findings, ui) ──► panes
//!   telemetry::sim, fleet (agent/smi over SSH, local)    │
//!   phase runner ──► PhaseEvent                          ├──► triage ──► findings
//!   storage probe ──► ProbeWindow (issue 5)              └──► record (run directory)
//! ```
//!
//! Module map:
//! - [`model`]: the ground floor: samples, frames, hellos, topology, phase events and metrics,
//!   verdicts, the probe window, the figure table, triage thresholds, units (see
//!   `tests/architecture.rs` for the floors above it).
//! - [`telemetry`]: the `Source` interface and its events; `sim` (seeded cluster, faults),
//!   `history` (bounded ring buffers with gaps).
//! - [`phases`]: the plan (TOML), the runner on the nodes (remote scripts, re-attach, stop),
//!   gates, drills, and what the runner asks of the telemetry beside a run (`watch`).
//! - [`parsers`]: nccl-tests, perftest, nvbandwidth, T1 sanity, workload JSON, trainer logs,
//!   Prometheus text; launcher prefixes (`srun -l`, `--tag-output`) taken off first.
//! - [`parse_cmd`]: `burnin parse`, what burnin reads from a file and each phase's verdict.
//! - [`record`]: the run directory (events, logs, summary) and the run session that writes it.
//! - [`headless`]: `burnin run` and `burnin baseline save`.
//! - [`workloads`]: the PyTorch workloads shipped inside the binary.
//! - [`probes`]: the storage probe.
//! - [`cluster`]: the store every event lands in; what panes and triage read.
//! - [`triage`]: rules over the store → findings with severity and a one-line why; the
//!   telemetry log beside a run.
//! - [`config`]: located errors for the console's TOML files.
//! - [`deploy`]: `burnin deploy`, copying this binary to the nodes over SSH.
//! - [`inventory`]: burnin.toml: nodes, modes, SSH targets (ranges expanded, validated).
//! - [`app`]: events, actions, the key table, the pure state update, the terminal loop, and
//!   the phase driver behind `s`/`r`/`a`.
//! - [`transport`]: the system OpenSSH client and local child processes, one interface.
//! - [`ui`]: themes, layouts, panes, overlays; `render` is a pure function of the state.
//! - [`agent`]: `burnin agent`, the NDJSON sampler that runs on a node.
//! - [`cli`]: the command line; [`commands`]: what each subcommand does.
//! - [`bench`]: `burnin bench ingest`, the console's decode and store per CPU second.

/// `eprintln!` for messages that may hold text from outside (a node's line, a reason, a
/// path): control characters are stripped before the terminal sees them
/// ([`model::terminal_safe`]).
#[macro_export]
macro_rules! eprintln_safe {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::model::terminal_safe(&format!($($arg)*)))
    };
}

/// `println!` with the same stripping as [`eprintln_safe!`].
#[macro_export]
macro_rules! println_safe {
    ($($arg:tt)*) => {
        println!("{}", $crate::model::terminal_safe(&format!($($arg)*)))
    };
}

/// `print!` with the same stripping as [`eprintln_safe!`] (a table or report already ending
/// in its newline).
#[macro_export]
macro_rules! print_safe {
    ($($arg:tt)*) => {
        print!("{}", $crate::model::terminal_safe(&format!($($arg)*)))
    };
}

pub mod agent;
pub mod app;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod demo_run;
pub mod deploy;
#[cfg(test)]
mod fixtures;
pub mod headless;
pub mod inventory;
pub mod model;
pub mod parse_cmd;
pub mod parsers;
pub mod phases;
pub mod probes;
pub mod record;
pub mod replay;
pub mod report;
pub mod telemetry;
pub mod transport;
pub mod triage;
pub mod ui;
pub mod workloads;
