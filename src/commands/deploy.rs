//! `burnin deploy`: copy this binary to every agent-mode node's agent path over the same SSH the
//! console uses, only where it is missing or different (SHA-256 compared on the node with
//! `sha256sum`). Air-gapped sites have no other way to get it there. The copy lands in a
//! temporary name and is renamed into place, so a running agent is never half-overwritten.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use crate::config::inventory::{Inventory, Mode, NodeSpec};
use crate::transport::quote::{quote_program, shell_quote};
use crate::transport::ssh::{SshSettings, SshTransport};
use crate::transport::{RemoteCommand, Transport};

/// SHA-256 of a file, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The remote script that prints `same` when the agent at `path` has `hash`, else `differs`.
pub fn check_script(path: &str, hash: &str) -> String {
    let p = quote_program(path);
    format!(
        "p={p}; if [ -f \"$p\" ] && [ \"$(sha256sum \"$p\" | cut -d' ' -f1)\" = {h} ]; then echo same; else echo differs; fi",
        h = shell_quote(hash)
    )
}

/// The remote script that stores stdin at `path` atomically and checks the hash.
pub fn copy_script(path: &str, hash: &str) -> String {
    let p = quote_program(path);
    format!(
        "set -e; p={p}; mkdir -p \"$(dirname \"$p\")\"; t=\"$p.tmp.$$\"; cat > \"$t\"; \
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

async fn deploy_one(
    node: NodeSpec,
    ssh: SshSettings,
    bin: Arc<Vec<u8>>,
    hash: String,
    dry_run: bool,
) -> (String, Result<String, String>) {
    let t = SshTransport::new(node.clone(), ssh);
    let result = async {
        let state = run_sh(&t, check_script(&node.agent_path, &hash), None).await?;
        if state == "same" {
            return Ok("up to date".to_string());
        }
        if dry_run {
            return Ok(format!("would copy to {}", node.agent_path));
        }
        let out = run_sh(&t, copy_script(&node.agent_path, &hash), Some(bin)).await?;
        if out == "copied" {
            Ok(format!("copied to {}", node.agent_path))
        } else {
            Err(format!("unexpected answer {out:?}"))
        }
    }
    .await;
    (node.name, result)
}

/// Deploy to every agent-mode node of the inventory; exit code 0 only if all are up to date.
pub async fn deploy(config: &Path, ssh_config: Option<PathBuf>, dry_run: bool) -> Result<i32> {
    let inventory = match Inventory::load(config) {
        Ok(i) => i,
        Err(e) => {
            crate::eprintln_safe!("burnin deploy: {e}");
            return Ok(2);
        }
    };
    let exe = std::env::current_exe().wrap_err("cannot find this binary")?;
    let bin = std::fs::read(&exe).wrap_err_with(|| format!("reading {}", exe.display()))?;
    let hash = sha256_hex(&bin);
    let bin = Arc::new(bin);
    let ssh = crate::transport::ssh::settings(ssh_config, &inventory);
    let gate = Arc::new(Semaphore::new(inventory.max_connecting));
    let mut tasks = tokio::task::JoinSet::new();
    let mut skipped = Vec::new();
    for node in inventory.nodes.iter().cloned() {
        if node.mode != Mode::Agent {
            skipped.push((node.name.clone(), node.mode));
            continue;
        }
        let (ssh, bin, hash, gate) = (
            ssh.clone(),
            Arc::clone(&bin),
            hash.clone(),
            Arc::clone(&gate),
        );
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            deploy_one(node, ssh, bin, hash, dry_run).await
        });
    }
    let mut results = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok(r) => results.push(r),
            Err(e) => results.push(("?".into(), Err(format!("task failed: {e}")))),
        }
    }
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ok = true;
    crate::println_safe!(
        "burnin deploy: {} ({} bytes, sha256 {})",
        exe.display(),
        bin.len(),
        &hash[..16]
    );
    for (node, r) in &results {
        match r {
            Ok(msg) => crate::println_safe!("{node:<12} {msg}"),
            Err(e) => {
                ok = false;
                crate::println_safe!("{node:<12} FAILED: {e}");
            }
        }
    }
    for (node, mode) in skipped {
        crate::println_safe!("{node:<12} skipped ({} mode needs no agent)", mode.name());
    }
    Ok(if ok { 0 } else { 1 })
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
        assert_eq!(sh(check_script(&p, &hash), b""), "differs");
        assert_eq!(sh(copy_script(&p, &hash), &payload), "copied");
        assert_eq!(sh(check_script(&p, &hash), b""), "same");
        assert_eq!(
            sh(copy_script(&p, "0000"), &payload),
            "",
            "mismatch refuses"
        );
        assert_eq!(std::fs::read(&path).expect("read"), payload);
        std::fs::remove_dir_all(dir).ok();
    }
}
