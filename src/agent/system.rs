//! What the node runs, for the run's bill of materials: kernel, OS, fabric manager and NCCL
//! versions. Read once, when the agent says hello; every part is optional (a PCIe node has no
//! fabric manager, a container may have no NCCL) and absent means "not found", never an error.

use std::path::{Path, PathBuf};

pub use crate::model::system::SystemInfo;

/// Library folders where a system NCCL lives.
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/local/lib",
    "/usr/local/nccl/lib",
    "/opt/nccl/lib",
];

/// Read this host's system facts (cheap: a few files, one short command where it exists).
pub fn read_system() -> SystemInfo {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut dirs: Vec<PathBuf> = LIB_DIRS.iter().map(PathBuf::from).collect();
    if let Some(home) = std::env::var_os("NCCL_HOME") {
        dirs.push(Path::new(&home).join("lib"));
    }
    let mut nccl: Vec<String> = dirs.iter().filter_map(|d| system_nccl(d)).collect();
    nccl.extend(pip_nccl(&python_site_dirs()));
    nccl.dedup();
    SystemInfo {
        kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        os: read("/etc/os-release").and_then(|t| pretty_name(&t)),
        fabric_manager: fabric_manager_version(),
        nccl,
    }
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → `Debian GNU/Linux 12 (bookworm)`.
pub fn pretty_name(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|l| {
        let v = l.trim().strip_prefix("PRETTY_NAME=")?;
        let v = v.trim().trim_matches('"').trim_matches('\'');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The highest `libnccl.so.X.Y.Z` in `dir` (the versioned file the `.so.2` link points at).
pub fn system_nccl(dir: &Path) -> Option<String> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    newest_nccl(&names).map(|v| format!("{v} ({})", dir.display()))
}

/// The newest version among `libnccl.so.X.Y.Z` file names.
pub fn newest_nccl(names: &[String]) -> Option<String> {
    names
        .iter()
        .filter_map(|n| n.strip_prefix("libnccl.so."))
        .filter(|v| v.split('.').count() >= 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()))
        .max_by_key(|v| {
            v.split('.')
                .map(|p| p.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .map(str::to_string)
}

fn python_site_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in ["/usr/lib", "/usr/local/lib", "/opt/conda/lib"] {
        if let Ok(rd) = std::fs::read_dir(root) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("python3") {
                    for sub in ["site-packages", "dist-packages"] {
                        let p = e.path().join(sub);
                        if p.is_dir() {
                            out.push(p);
                        }
                    }
                }
            }
        }
    }
    out
}

/// NCCL wheels (`nvidia_nccl_cu12-2.21.5.dist-info`) in Python package folders.
pub fn pip_nccl(site_dirs: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for d in site_dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            if let Some(rest) = n
                .strip_prefix("nvidia_nccl_")
                .and_then(|r| r.strip_suffix(".dist-info"))
                && let Some((wheel, version)) = rest.split_once('-')
            {
                out.push(format!(
                    "{version} (pip nvidia-nccl-{wheel}, {})",
                    d.display()
                ));
            }
        }
    }
    out
}

/// `nv-fabricmanager --version`, run only where the binary is installed, for at most 3 s.
fn fabric_manager_version() -> Option<String> {
    let bin = ["/usr/bin/nv-fabricmanager", "/usr/sbin/nv-fabricmanager"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let out = std::process::Command::new("timeout")
        .args(["3", bin, "--version"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(crate::parsers::sanity::version_in)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_pretty_name() {
        // Debian 12's /etc/os-release, as shipped.
        let text = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n";
        assert_eq!(
            pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(pretty_name("NAME=x\n"), None);
        assert_eq!(pretty_name("PRETTY_NAME=\n"), None);
    }

    #[test]
    fn the_newest_versioned_nccl_library_wins() {
        let names: Vec<String> = [
            "libnccl.so",
            "libnccl.so.2",
            "libnccl.so.2.19.3",
            "libnccl.so.2.21.5",
            "libnccl.so.2.21.5.bak",
            "libnccl_static.a",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(newest_nccl(&names).as_deref(), Some("2.21.5"));
        assert_eq!(newest_nccl(&["libnccl.so.2".to_string()]), None);
    }

    #[test]
    fn pip_wheels_are_found_by_their_dist_info() {
        let d = std::env::temp_dir().join(format!("burnin-sys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("nvidia_nccl_cu12-2.27.3.dist-info")).expect("dir");
        std::fs::create_dir_all(d.join("torch-2.9.0.dist-info")).expect("dir");
        let found = pip_nccl(std::slice::from_ref(&d));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("2.27.3 (pip nvidia-nccl-cu12, "),
            "{found:?}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn reading_this_host_never_fails() {
        let s = read_system();
        assert!(
            s.kernel.is_some(),
            "every Linux has /proc/sys/kernel/osrelease"
        );
    }
}
