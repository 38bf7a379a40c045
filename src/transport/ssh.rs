//! The system OpenSSH client (DESIGN: it honours the site's ~/.ssh/config, jump hosts, keys and
//! known_hosts exactly as the engineer's shell does). BatchMode so a password prompt is an
//! error, never a hang; keep-alives so a dead link is noticed; connection multiplexing so
//! repeated commands to a node share one TCP/auth handshake. Host-key checking is left as the
//! user's config says: burnin never weakens it.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use super::quote::command_line;
use super::{RemoteCommand, Transport};
use crate::config::inventory::NodeSpec;

/// Settings shared by every node's SSH.
#[derive(Debug, Clone, Default)]
pub struct SshSettings {
    /// `-F FILE` (tests, or a site file other than ~/.ssh/config).
    pub config_file: Option<PathBuf>,
    /// Where ControlMaster sockets live; `None` turns multiplexing off.
    pub control_dir: Option<PathBuf>,
    /// `ConnectTimeout`.
    pub connect_timeout: Duration,
}

/// SSH to one node.
#[derive(Debug, Clone)]
pub struct SshTransport {
    node: NodeSpec,
    settings: SshSettings,
}

impl SshTransport {
    /// SSH to `node` with `settings`.
    pub fn new(node: NodeSpec, settings: SshSettings) -> Self {
        Self { node, settings }
    }

    /// The ssh arguments before the remote command (exposed for tests and `--dry-run`).
    pub fn args(&self, remote: &RemoteCommand) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        if let Some(f) = &self.settings.config_file {
            a.push("-F".into());
            a.push(f.display().to_string());
        }
        let secs = self.settings.connect_timeout.as_secs().max(1);
        for opt in [
            "BatchMode=yes".to_string(),
            format!("ConnectTimeout={secs}"),
            "ServerAliveInterval=5".into(),
            "ServerAliveCountMax=3".into(),
            // A remote command with no tty: our stream is NDJSON, not a terminal.
            "RequestTTY=no".into(),
        ] {
            a.push("-o".into());
            a.push(opt);
        }
        if let Some(dir) = &self.settings.control_dir {
            for opt in [
                "ControlMaster=auto".to_string(),
                // %C is a hash of the connection: short enough for the socket path limit.
                format!("ControlPath={}/%C", dir.display()),
                "ControlPersist=60".into(),
            ] {
                a.push("-o".into());
                a.push(opt);
            }
        }
        if let Some(p) = self.node.port {
            a.push("-p".into());
            a.push(p.to_string());
        }
        if let Some(u) = &self.node.user {
            a.push("-l".into());
            a.push(u.clone());
        }
        if let Some(i) = &self.node.identity {
            a.push("-i".into());
            a.push(
                crate::config::inventory::expand_home(i)
                    .display()
                    .to_string(),
            );
        }
        a.extend(self.node.ssh_options.iter().cloned());
        // Everything after the target is the remote command, built with proper quoting.
        a.push("--".into());
        a.push(self.node.target.clone());
        a.push(command_line(&remote.argv));
        a
    }
}

impl Transport for SshTransport {
    fn command(&self, remote: &RemoteCommand) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("ssh");
        c.args(self.args(remote))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    fn classify(&self, status: Option<ExitStatus>, stderr: &str) -> String {
        classify_ssh(status.and_then(|s| s.code()), stderr)
    }
}

/// A short reason from ssh's exit code and stderr: ssh's own failures (host key, auth, the
/// network) by name, then what the command on the node said (see [`super::reason`]).
pub fn classify_ssh(code: Option<i32>, stderr: &str) -> String {
    let s = stderr.to_lowercase();
    let has = |needle: &str| s.contains(needle);
    if has("remote host identification has changed") || has("host key verification failed") {
        return "host key mismatch (check known_hosts; burnin will not bypass it)".into();
    }
    // The agent's own refusal first: its words may name an option such as `--timeout`.
    if let Some(refused) = super::reason::refused_arguments(stderr) {
        return refused;
    }
    // ssh says "Permission denied (publickey,…)"; a node's shell says "…: Permission denied".
    if has("permission denied (") || has("too many authentication failures") {
        return "auth failed".into();
    }
    if has("connection refused") {
        return "refused".into();
    }
    if has("timed out") || has("timeout") {
        return "timeout".into();
    }
    if has("could not resolve hostname") || has("name or service not known") {
        return "unknown host".into();
    }
    if has("no route to host") || has("network is unreachable") {
        return "no route to host".into();
    }
    if has("control socket") || has("controlpath") || has("mux_client") {
        // The multiplexing socket, not the node: say so rather than blame the agent.
        let last = stderr.lines().rev().map(str::trim).find(|l| !l.is_empty());
        return format!(
            "ssh multiplexing socket: {}",
            crate::model::fit(last.unwrap_or("unusable"), 100)
        );
    }
    if let Some(said) = super::reason::command_reason(code, stderr) {
        return said;
    }
    if has("connection closed") || has("connection reset") || has("broken pipe") {
        return "connection lost".into();
    }
    match (code, super::reason::error_line(stderr)) {
        (Some(255), None) => "ssh failed (exit 255)".into(),
        (Some(c), None) => format!("stream ended (exit {c})"),
        (None, None) => "stream ended (killed by a signal)".into(),
        (_, Some(l)) => crate::model::fit(l, 120),
    }
}

/// SSH settings for the console: the user's `--ssh-config`, multiplexing sockets in a private
/// directory, the inventory's connect timeout.
pub fn settings(
    ssh_config: Option<PathBuf>,
    inventory: &crate::config::inventory::Inventory,
) -> SshSettings {
    SshSettings {
        config_file: ssh_config,
        control_dir: control_dir(),
        connect_timeout: inventory.connect_timeout,
    }
}

/// A private directory for ssh's ControlMaster sockets. A Unix socket path has room for about
/// 107 bytes, and ssh adds a 40-character hash plus a temporary suffix, so the directory must
/// be short. Without a suitable one, multiplexing is off (an optimisation, not a need).
fn control_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    const MAX_DIR_LEN: usize = 46;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let candidates = [
        std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|v| !v.is_empty())
            .map(|d| PathBuf::from(d).join("burnin-ssh")),
        crate::config::cache_dir().map(|d| d.join("ssh")),
        Some(std::env::temp_dir().join(format!("burnin-ssh-{uid}"))),
    ];
    candidates.into_iter().flatten().find(|d| {
        d.as_os_str().len() <= MAX_DIR_LEN
            && std::fs::DirBuilder::new().recursive(true).mode(0o700).create(d).is_ok()
            // Only a directory that is ours and private (a shared /tmp could hold a trap).
            && std::fs::symlink_metadata(d).is_ok_and(|m| {
                m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::inventory::Mode;

    fn node() -> NodeSpec {
        NodeSpec {
            name: "gpu07".into(),
            target: "gpu07".into(),
            user: Some("root".into()),
            port: Some(2222),
            identity: None,
            ssh_options: vec!["-o".into(), "ProxyJump=bastion".into()],
            gpus: 8,
            mode: Mode::Agent,
            agent_args: vec![],
            agent_path: "~/.cache/burnin/bin/burnin".into(),
            nic_rate_gbps: None,
        }
    }

    #[test]
    fn arguments_keep_host_key_checking_and_quote_the_command() {
        let t = SshTransport::new(
            node(),
            SshSettings {
                config_file: Some("/tmp/cfg".into()),
                control_dir: Some("/tmp/cm".into()),
                connect_timeout: Duration::from_secs(7),
            },
        );
        let args = t.args(&RemoteCommand {
            argv: vec![
                "~/.cache/burnin/bin/burnin".into(),
                "agent".into(),
                "a b".into(),
            ],
        });
        let joined = args.join(" ");
        assert!(
            joined.starts_with("-F /tmp/cfg -o BatchMode=yes -o ConnectTimeout=7"),
            "{joined}"
        );
        assert!(
            !joined.contains("StrictHostKeyChecking"),
            "never weakened by default"
        );
        assert!(
            joined.contains("-p 2222 -l root -o ProxyJump=bastion -- gpu07"),
            "{joined}"
        );
        assert_eq!(
            args.last().map(String::as_str),
            Some("exec \"$HOME\"/.cache/burnin/bin/burnin agent 'a b'")
        );
    }

    #[test]
    fn failures_are_named() {
        let c = |code, s| classify_ssh(Some(code), s);
        assert_eq!(
            c(255, "root@127.0.0.1: Permission denied (publickey)."),
            "auth failed"
        );
        assert_eq!(
            c(
                255,
                "ssh: connect to host 127.0.0.1 port 1: Connection refused"
            ),
            "refused"
        );
        assert!(
            c(
                255,
                "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@"
            )
            .starts_with("host key")
        );
        assert_eq!(
            c(
                255,
                "ssh: connect to host 10.0.0.1 port 22: Connection timed out"
            ),
            "timeout"
        );
        assert!(
            c(
                127,
                "bash: line 1: /root/.cache/burnin/bin/burnin: No such file or directory"
            )
            .starts_with("agent missing")
        );
        assert_eq!(c(255, ""), "ssh failed (exit 255)");
        assert!(
            c(
                255,
                "Control socket connect(/run/user/0/burnin-ssh/ab12): No such file or directory"
            )
            .starts_with("ssh multiplexing socket:")
        );
        assert_eq!(c(1, "something odd\n"), "something odd");
        // The agent's refusal is the reason, not clap's closing hint.
        assert_eq!(
            c(
                2,
                "error: unexpected argument '--timeout' found\n\nUsage: burnin agent [OPTIONS]\n\nFor more information, try '--help'.\n"
            ),
            "agent refused its arguments: unexpected argument '--timeout' found"
        );
        assert!(c(126, "sh: 1: /opt/burnin: Permission denied").starts_with("permission denied:"));
    }
}
