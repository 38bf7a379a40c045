//! Commands on this host, without SSH: `local` mode runs this same binary's agent as a child,
//! `sim` mode its simulator. Same stream path as SSH above it.

use std::process::{ExitStatus, Stdio};

use super::{RemoteCommand, Transport};

/// Run commands as local child processes.
#[derive(Debug, Clone, Default)]
pub struct LocalTransport;

impl Transport for LocalTransport {
    fn command(&self, remote: &RemoteCommand) -> tokio::process::Command {
        let program = remote
            .argv
            .first()
            .map(|p| crate::config::inventory::expand_home(p))
            .unwrap_or_default();
        let mut c = tokio::process::Command::new(program);
        c.args(remote.argv.iter().skip(1))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    fn classify(&self, status: Option<ExitStatus>, stderr: &str) -> String {
        let code = status.and_then(|s| s.code());
        if let Some(said) = super::reason::command_reason(code, stderr) {
            return said;
        }
        match (code, super::reason::error_line(stderr)) {
            (_, Some(l)) => crate::model::fit(l, 120),
            (Some(c), None) => format!("stream ended (exit {c})"),
            (None, None) => "stream ended (killed by a signal)".into(),
        }
    }
}
