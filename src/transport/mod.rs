//! How a command reaches a node: the system OpenSSH client, or a local child process. Both hand
//! back a `tokio::process::Command` with piped stdout/stderr, so the stream reader above them is
//! the same code, and both turn a failed attempt into a short reason a person understands.

pub mod local;
pub mod quote;
pub mod ssh;

use std::process::ExitStatus;

/// A program and its arguments to run on a node. `argv[0]` may start with `~/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCommand {
    /// Program and arguments, unquoted.
    pub argv: Vec<String>,
}

/// A way to run commands on one node.
pub trait Transport: Send + Sync {
    /// The command to spawn (stdin null, stdout and stderr piped, killed on drop).
    fn command(&self, remote: &RemoteCommand) -> tokio::process::Command;
    /// Why an attempt ended, from its exit status and the tail of its stderr.
    fn classify(&self, status: Option<ExitStatus>, stderr: &str) -> String;
}
