//! `burnin deploy`: copy this binary (or the `--agent-binary` builds) to every agent-mode node's
//! agent path over the same SSH the console uses, only where it is missing or different
//! (SHA-256 compared on the node with `sha256sum`). Air-gapped sites have no other way to get
//! it there. What travels is stripped of debug info and gzip-compressed (`binary`); each node
//! first says its machine and C library, so a Grace node or an old glibc gets a clear message,
//! not an `exec format error` at the first `watch`. The copy lands in a temporary name and is
//! renamed into place, so a running agent is never half-overwritten.

pub mod binary;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr, eyre};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use crate::config::inventory::{Inventory, Mode, NodeSpec};
use crate::transport::quote::{quote_program, shell_quote};
use crate::transport::ssh::{SshSettings, SshTransport};
use crate::transport::{RemoteCommand, Transport};
use binary::AgentBinary;

/// SHA-256 of a file, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a node says of itself before a copy: its machine, its C library, whether it has gzip,
/// and the SHA-256 of what is at the agent path (`none`). One line each, `key=value`.
pub fn probe_script(path: &str) -> String {
    let p = quote_program(path);
    format!(
        "p={p}; echo \"arch=$(uname -m)\"; echo \"libc=$(ldd --version 2>&1 | head -n1)\"; \
         if command -v gzip >/dev/null 2>&1; then echo gzip=yes; else echo gzip=no; fi; \
         if [ -f \"$p\" ]; then echo \"sha=$(sha256sum \"$p\" | cut -d' ' -f1)\"; else echo sha=none; fi"
    )
}

/// A node's answer to [`probe_script`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// `uname -m`.
    pub arch: String,
    /// The first line of `ldd --version` (empty: it said nothing).
    pub libc: String,
    /// Whether it has gzip to unpack a compressed copy.
    pub gzip: bool,
    /// SHA-256 of the agent there now (`None`: nothing there).
    pub sha: Option<String>,
}

impl NodeFacts {
    /// Read a probe's answer; what a node says is quoted only as an excerpt, stripped.
    pub fn parse(answer: &str) -> Self {
        let mut facts = NodeFacts::default();
        for line in answer.lines().take(16) {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let value = crate::model::excerpt(&crate::model::strip_controls(value.trim()));
            match key.trim() {
                "arch" => facts.arch = value,
                "libc" => facts.libc = value,
                "gzip" => facts.gzip = value == "yes",
                "sha" if value != "none" => facts.sha = Some(value),
                _ => {}
            }
        }
        facts
    }
}

/// The remote script that stores stdin at `path` atomically (unpacking it with gzip when
/// `compressed`) and checks the hash of what landed.
pub fn copy_script(path: &str, hash: &str, compressed: bool) -> String {
    let p = quote_program(path);
    let take = if compressed {
        "gzip -dc > \"$t\""
    } else {
        "cat > \"$t\""
    };
    format!(
        "set -e; p={p}; mkdir -p \"$(dirname \"$p\")\"; t=\"$p.tmp.$$\"; {take}; \
         if [ \"$(sha256sum \"$t\" | cut -d' ' -f1)\" != {h} ]; then rm -f \"$t\"; echo 'checksum mismatch after copy' >&2; exit 3; fi; \
         chmod 755 \"$t\"; mv -f \"$t\" \"$p\"; echo copied",
        h = shell_quote(hash)
    )
}

async fn run_sh(
    t: &SshTransport,
    script: String,
    input: Option<Arc<Vec<u8>>>,
) -> Result<String, String> {
    let cmd = RemoteCommand {
        argv: vec!["sh".into(), "-c".into(), script],
    };
    let mut c = t.command(&cmd);
    c.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = c.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(&bytes)
            .await
            .map_err(|e| format!("sending the binary: {e}"))?;
        drop(stdin);
    }
    let out = crate::transport::wait_bounded(child)
        .await
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(t.classify(Some(out.status), &String::from_utf8_lossy(&out.stderr)))
    }
}

/// What `deploy` sends, each once in memory: the stripped copy and its compressed form.
struct Payload {
    binary: AgentBinary,
    stripped: Arc<Vec<u8>>,
    compressed: Arc<Vec<u8>>,
}

async fn deploy_one(
    node: NodeSpec,
    ssh: SshSettings,
    payloads: Arc<Vec<Payload>>,
    dry_run: bool,
) -> (String, Result<String, String>) {
    let t = SshTransport::new(node.clone(), ssh);
    let started = std::time::Instant::now();
    let result = async {
        let facts = NodeFacts::parse(&run_sh(&t, probe_script(&node.agent_path), None).await?);
        // The build for this node's machine; none: say why, before any byte is sent.
        let fitting: Vec<&Payload> = payloads
            .iter()
            .filter(|p| binary::fits(&p.binary, &facts.arch, &facts.libc).is_ok())
            .collect();
        let Some(payload) = fitting.first() else {
            let why = payloads
                .iter()
                .filter_map(|p| binary::fits(&p.binary, &facts.arch, &facts.libc).err())
                .next()
                .unwrap_or_else(|| "no binary to send".into());
            return Err(why);
        };
        if facts.sha.as_deref() == Some(payload.binary.hash.as_str()) {
            return Ok("up to date".to_string());
        }
        if dry_run {
            return Ok(format!(
                "would copy to {} ({} build)",
                node.agent_path, payload.binary.arch
            ));
        }
        let (bytes, compressed) = if facts.gzip {
            (Arc::clone(&payload.compressed), true)
        } else {
            (Arc::clone(&payload.stripped), false)
        };
        let sent = bytes.len();
        let out = run_sh(
            &t,
            copy_script(&node.agent_path, &payload.binary.hash, compressed),
            Some(bytes),
        )
        .await?;
        if out == "copied" {
            Ok(format!(
                "copied to {} ({} sent{} in {:.1} s)",
                node.agent_path,
                crate::model::format_bytes(sent as u64),
                if compressed { ", gzip" } else { "" },
                started.elapsed().as_secs_f64()
            ))
        } else {
            Err(format!(
                "unexpected answer {:?}",
                crate::model::excerpt(&crate::model::strip_controls(&out))
            ))
        }
    }
    .await;
    (node.name, result)
}

/// Deploy to every agent-mode node of the inventory; exit code 0 only if all are up to date.
/// `agent_binaries` (default: this binary) are the builds to choose from, by each node's
/// machine.
pub async fn deploy(
    config: &Path,
    ssh_config: Option<PathBuf>,
    dry_run: bool,
    agent_binaries: &[PathBuf],
) -> Result<i32> {
    let inventory = match Inventory::load(config) {
        Ok(i) => i,
        Err(e) => {
            crate::eprintln_safe!("burnin deploy: {e}");
            return Ok(2);
        }
    };
    let paths = if agent_binaries.is_empty() {
        vec![std::env::current_exe().wrap_err("cannot find this binary")?]
    } else {
        agent_binaries.to_vec()
    };
    let mut payloads = Vec::new();
    for path in &paths {
        // Stripping a debug build's few hundred MB takes seconds: off the runtime's workers.
        let p = path.clone();
        let binary = match tokio::task::spawn_blocking(move || AgentBinary::prepare(&p)).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                crate::eprintln_safe!("burnin deploy: {e}");
                return Ok(2);
            }
            Err(e) => return Err(eyre!("preparing {}: {e}", path.display())),
        };
        crate::println_safe!(
            "burnin deploy: {} ({}): {} as built, {} stripped of debug info, {} compressed, sha256 {}",
            binary.path.display(),
            binary.arch,
            crate::model::format_bytes(binary.built_bytes),
            crate::model::format_bytes(binary.stripped.len() as u64),
            crate::model::format_bytes(binary.compressed.len() as u64),
            &binary.hash[..16]
        );
        payloads.push(Payload {
            stripped: Arc::new(binary.stripped.clone()),
            compressed: Arc::new(binary.compressed.clone()),
            binary,
        });
    }
    if payloads.len() > 1 {
        let mut archs: Vec<&str> = payloads.iter().map(|p| p.binary.arch).collect();
        archs.sort_unstable();
        if archs.windows(2).any(|w| w[0] == w[1]) {
            crate::eprintln_safe!(
                "burnin deploy: two --agent-binary builds for one architecture: the first that fits a node is sent"
            );
        }
    }
    let payloads = Arc::new(payloads);
    let ssh = crate::transport::ssh::settings(ssh_config, &inventory);
    let gate = Arc::new(Semaphore::new(inventory.max_connecting));
    let mut tasks = tokio::task::JoinSet::new();
    let mut skipped = Vec::new();
    for node in inventory.nodes.iter().cloned() {
        if node.mode != Mode::Agent {
            skipped.push((node.name.clone(), node.mode));
            continue;
        }
        let (ssh, payloads, gate) = (ssh.clone(), Arc::clone(&payloads), Arc::clone(&gate));
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            deploy_one(node, ssh, payloads, dry_run).await
        });
    }
    let total = tasks.len();
    if total > 0 {
        crate::println_safe!(
            "burnin deploy: {} {total} node(s), {} at a time",
            if dry_run { "checking" } else { "copying to" },
            inventory.max_connecting.min(total)
        );
    }
    // Each node as it finishes: on 96 nodes the engineer sees it go, not a silent minute.
    let (mut done, mut failed) = (0usize, 0usize);
    let width = total.to_string().len();
    while let Some(r) = tasks.join_next().await {
        done += 1;
        let (node, r) = match r {
            Ok(r) => r,
            Err(e) => ("?".into(), Err(format!("task failed: {e}"))),
        };
        match r {
            Ok(msg) => crate::println_safe!("[{done:>width$}/{total}] {node:<12} {msg}"),
            Err(e) => {
                failed += 1;
                crate::println_safe!("[{done:>width$}/{total}] {node:<12} FAILED: {e}");
            }
        }
    }
    for (node, mode) in skipped {
        crate::println_safe!("{node:<12} skipped ({} mode needs no agent)", mode.name());
    }
    if total > 0 {
        crate::println_safe!(
            "burnin deploy: {} of {total} node(s) ready{}; the whole binary (line tables for \
             backtraces) stays here: {}",
            total - failed,
            if failed > 0 {
                format!(", {failed} FAILED")
            } else {
                String::new()
            },
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(if failed == 0 { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_run_in_a_real_shell() {
        let dir = std::env::temp_dir().join(format!("burnin-deploy-{}", std::process::id()));
        let path = dir.join("bin").join("burnin");
        let payload = b"#!/bin/sh\necho hi\n".to_vec();
        let hash = sha256_hex(&payload);
        let p = path.display().to_string();
        let sh = |script: String, input: &[u8]| {
            use std::io::Write;
            let mut c = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("sh");
            c.stdin
                .take()
                .expect("stdin")
                .write_all(input)
                .expect("write");
            let out = c.wait_with_output().expect("wait");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let facts = NodeFacts::parse(&sh(probe_script(&p), b""));
        assert_eq!(facts.arch, std::env::consts::ARCH);
        assert_eq!(facts.sha, None, "nothing there yet");
        assert_eq!(sh(copy_script(&p, &hash, false), &payload), "copied");
        let facts = NodeFacts::parse(&sh(probe_script(&p), b""));
        assert_eq!(facts.sha.as_deref(), Some(hash.as_str()));
        assert_eq!(
            sh(copy_script(&p, "0000", false), &payload),
            "",
            "mismatch refuses"
        );
        assert_eq!(std::fs::read(&path).expect("read"), payload);
        // Compressed on the wire, unpacked by the node's gzip, checked as stored.
        if facts.gzip {
            let other = b"#!/bin/sh\necho other\n".to_vec();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
            std::io::Write::write_all(&mut gz, &other).expect("gzip");
            let packed = gz.finish().expect("gzip");
            assert_eq!(
                sh(copy_script(&p, &sha256_hex(&other), true), &packed),
                "copied"
            );
            assert_eq!(std::fs::read(&path).expect("read"), other);
        }
        // What a hostile node answers is bounded and stripped.
        let odd = NodeFacts::parse("arch=\x1b[31mx86_64\nlibc=\nsha=none\ngzip=maybe\njunk");
        assert_eq!(odd.arch, "[31mx86_64");
        assert!(!odd.gzip && odd.sha.is_none());
        std::fs::remove_dir_all(dir).ok();
    }

    proptest::proptest! {
        #[test]
        fn any_probe_answer_reads_bounded_and_clean(answer in "(?s).{0,600}") {
            let f = NodeFacts::parse(&answer);
            for v in [&f.arch, &f.libc] {
                proptest::prop_assert!(v.chars().count() <= 2 * crate::model::QUOTED_CHARS);
                proptest::prop_assert!(!v.chars().any(char::is_control));
            }
        }
    }
}
