//! How a command reaches a node: the system OpenSSH client, or a local child process. Both hand
//! back a `tokio::process::Command` with piped stdout/stderr, so the stream reader above them is
//! the same code, and both turn a failed attempt into a short reason a person understands.

pub mod local;
pub mod quote;
pub mod reason;
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

/// Most bytes of a node command's stdout, and of its stderr, that burnin holds: a status or
/// launch script says a few lines; a hostile or broken node could say gigabytes.
pub const OUTPUT_KEPT_BYTES: usize = 1 << 20;

/// Read `pipe` to its end (so the child never blocks on a full pipe), holding at most `cap`
/// bytes: the first ones, or with `tail` the last ones (where a failing command says why).
pub async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(
    mut pipe: R,
    cap: usize,
    tail: bool,
) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            return Ok(kept);
        }
        if tail {
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > cap {
                kept.drain(..kept.len() - cap);
            }
        } else if kept.len() < cap {
            let room = cap - kept.len();
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
    }
}

/// `wait_with_output` with each stream held to [`OUTPUT_KEPT_BYTES`] (stdout's first bytes,
/// stderr's last).
pub async fn wait_bounded(
    mut child: tokio::process::Child,
) -> std::io::Result<std::process::Output> {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out = async {
        match stdout {
            Some(p) => read_bounded(p, OUTPUT_KEPT_BYTES, false).await,
            None => Ok(Vec::new()),
        }
    };
    let err = async {
        match stderr {
            Some(p) => read_bounded(p, OUTPUT_KEPT_BYTES, true).await,
            None => Ok(Vec::new()),
        }
    };
    let (status, stdout, stderr) = tokio::join!(child.wait(), out, err);
    Ok(std::process::Output {
        status: status?,
        stdout: stdout?,
        stderr: stderr?,
    })
}

#[cfg(test)]
mod bounded_tests {
    use super::*;

    #[tokio::test]
    async fn a_child_saying_megabytes_is_held_to_the_cap_and_drained() {
        let child = tokio::process::Command::new("sh")
            .args([
                "-c",
                "head -c 5000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo why >&2; exit 3",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let out = wait_bounded(child).await.expect("output");
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout.len(), OUTPUT_KEPT_BYTES);
        assert_eq!(out.stderr.len(), OUTPUT_KEPT_BYTES);
        assert!(out.stderr.ends_with(b"why\n"), "the tail is kept");
    }
}
