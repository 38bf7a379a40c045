//! burnin: a terminal console for GPU-cluster burn-in and acceptance.
//!
//! Data flows one way (see `docs/ARCHITECTURE.md`):
//!
//! ```text
//! sources ──► SourceEvent ──► console loop ──► app::State (store, findings, ui) ──► ui
//!   sim, fleet (agent/smi over SSH, local), prometheus, replay │
//!   phase driver ──► PhaseEvent                               ├──► triage ──► findings
//!   storage probe ──► ProbeWindow                             └──► record (run directory)
//! ```
//!
//! Module map, one folder per floor, ground first; a module imports only its own floor and the
//! floors below (`tests/architecture.rs` holds the same table and fails on an import upwards):
//! - [`model`]: the messages and units everything shares: samples, frames, hellos, topology,
//!   phase events and metrics, verdicts, findings, the probe window, `SourceEvent` and the
//!   `Source` interface, the telemetry watch, the figure table, thresholds, units.
//! - [`config`]: located errors and bounded reads of files a person writes; `inventory`
//!   (burnin.toml: nodes, modes, SSH targets). [`workloads`]: the PyTorch files shipped inside.
//! - [`transport`]: the system OpenSSH client and local child processes, one interface.
//! - [`wire`]: formats between processes: the agent's NDJSON (and its fast frame scanner), the
//!   Prometheus exposition text.
//! - [`probes`]: the storage probe, `burnin probe s3`.
//! - [`parsers`]: tool output → metrics (nccl-tests, perftest, nvbandwidth, T1 sanity, preflight,
//!   workload JSON, trainer logs, the probe's lines); launcher prefixes taken off first.
//! - [`plan`]: the plan (TOML), its gates by family and its drills: what runs and how it is judged.
//! - [`phases`]: carrying a phase out on the nodes: the runner, remote scripts, Kubernetes Jobs.
//! - [`store`]: the store every event lands in, with bounded histories; what panes and triage read.
//! - [`triage`]: rules over the store → findings with severity and a one-line why; the telemetry
//!   log beside a run.
//! - [`sim`]: the simulated cluster (faults on a timeline, phases judged by the plan's gates),
//!   behind the agent's (`agent --sim`) and the console's (`SimSource`) interfaces.
//! - [`agent`]: `burnin agent`, what runs on a node: NVML, fabric counters, the exporter.
//! - [`record`]: the run directory (events, telemetry segments, summary) and the session that
//!   writes it.
//! - [`sources`]: the console's telemetry sources: `fleet`, `prometheus`, `replay`.
//! - [`report`]: a record made into report.md and the one-file report.html.
//! - [`app`]: the console's state, actions, key table, themes and layouts; `update` is pure.
//! - [`ui`]: drawing: `render` is a pure function of the state.
//! - [`console`]: the terminal loop and the phase driver behind `s`/`r`/`a`.
//! - [`commands`]: the command line (`cli`) and one file per subcommand that has its own.

/// `eprintln!` for messages that may hold text from outside (a node's line, a reason, a
/// path): control characters are stripped before the terminal sees them
/// ([`model::terminal_safe`]).
#[macro_export]
macro_rules! eprintln_safe {
    ($($arg:tt)*) => {
        $crate::model::stdout::err(&format!(
            "{}\n",
            $crate::model::terminal_safe(&format!($($arg)*))
        ))
    };
}

/// `println!` with the same stripping as [`eprintln_safe!`].
#[macro_export]
macro_rules! println_safe {
    ($($arg:tt)*) => {
        $crate::model::stdout::out(&format!(
            "{}\n",
            $crate::model::terminal_safe(&format!($($arg)*))
        ))
    };
}

/// `print!` with the same stripping as [`eprintln_safe!`] (a table or report already ending
/// in its newline).
#[macro_export]
macro_rules! print_safe {
    ($($arg:tt)*) => {
        $crate::model::stdout::out(&$crate::model::terminal_safe(&format!($($arg)*)))
    };
}

pub mod agent;
pub mod app;
pub mod commands;
pub mod config;
pub mod console;
pub mod model;
pub mod parsers;
pub mod phases;
pub mod plan;
pub mod probes;
pub mod record;
pub mod report;
pub mod sim;
pub mod sources;
pub mod store;
pub mod transport;
pub mod triage;
pub mod ui;
pub mod wire;
pub mod workloads;
