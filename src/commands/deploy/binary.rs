//! The agent binary as `deploy` sends it: this binary (or `--agent-binary PATH`) without its
//! debug sections, gzip-compressed for the wire, with what a node must be to run it (its
//! architecture, and the glibc it was linked against). The console keeps the whole binary, line
//! tables and all, for the backtraces of the copies it sent.

use std::io::Write;
use std::path::{Path, PathBuf};

use object::read::elf::{ElfFile64, FileHeader};
use object::{Object, ObjectSection, elf};

/// The C library a binary needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Libc {
    /// No dynamic C library (static, or musl linked in).
    Static,
    /// glibc, at least this version (the newest `GLIBC_x.y` symbol version it uses).
    Glibc(Option<(u32, u32)>),
    /// Dynamically linked against musl.
    Musl,
}

/// One binary ready to send.
#[derive(Debug, Clone)]
pub struct AgentBinary {
    /// Where it was read.
    pub path: PathBuf,
    /// Its size as built.
    pub built_bytes: u64,
    /// Without debug sections: what lands on the node.
    pub stripped: Vec<u8>,
    /// `stripped`, gzip-compressed: what travels.
    pub compressed: Vec<u8>,
    /// SHA-256 of `stripped`, hex: what the node's copy is checked against.
    pub hash: String,
    /// `uname -m` of the machines that can run it (`x86_64`, `aarch64`).
    pub arch: &'static str,
    /// The C library it needs.
    pub libc: Libc,
}

/// Why a binary cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// It could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// It is not a 64-bit ELF executable of a machine burnin knows.
    #[error("{}: {why}", path.display())]
    NotAnAgent {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
}

/// Largest binary `deploy` reads (a debug build with full debug info is a few hundred MB).
pub const MAX_BINARY_BYTES: u64 = 2 << 30;

impl AgentBinary {
    /// Read `path`, strip its debug sections, compress it, and say what it needs.
    pub fn prepare(path: &Path) -> Result<Self, BinaryError> {
        let read = |source| BinaryError::Read {
            path: path.to_path_buf(),
            source,
        };
        let not = |why: String| BinaryError::NotAnAgent {
            path: path.to_path_buf(),
            why,
        };
        let len = std::fs::metadata(path).map_err(read)?.len();
        if len > MAX_BINARY_BYTES {
            return Err(not(format!(
                "{len} bytes: larger than any burnin build ({} GiB)",
                MAX_BINARY_BYTES >> 30
            )));
        }
        let bytes = std::fs::read(path).map_err(read)?;
        let (arch, libc) = describe(&bytes).map_err(not)?;
        let stripped = strip_debug(&bytes).map_err(not)?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        gz.write_all(&stripped)
            .and_then(|_| gz.flush())
            .map_err(read)?;
        let compressed = gz.finish().map_err(read)?;
        Ok(Self {
            path: path.to_path_buf(),
            built_bytes: len,
            hash: super::sha256_hex(&stripped),
            stripped,
            compressed,
            arch,
            libc,
        })
    }
}

/// The machine (`uname -m`) and C library of an ELF executable.
fn describe(bytes: &[u8]) -> Result<(&'static str, Libc), String> {
    let file = ElfFile64::<object::Endianness>::parse(bytes)
        .map_err(|e| format!("not a 64-bit ELF executable ({e})"))?;
    let endian = file.endian();
    let machine = file.elf_header().e_machine(endian);
    let arch = match machine {
        elf::EM_X86_64 => "x86_64",
        elf::EM_AARCH64 => "aarch64",
        m => {
            return Err(format!(
                "built for ELF machine {m}, neither x86_64 nor aarch64"
            ));
        }
    };
    let interp = file
        .section_by_name(".interp")
        .and_then(|s| s.data().ok())
        .map(|d| String::from_utf8_lossy(d).into_owned());
    let libc = match interp {
        None => Libc::Static,
        Some(i) if i.contains("musl") => Libc::Musl,
        Some(_) => Libc::Glibc(newest_glibc(&file)),
    };
    Ok((arch, libc))
}

/// The newest `GLIBC_x.y` version the binary asks of libc: the names of its version needs
/// (`.gnu.version_r`) are NUL-terminated strings of its dynamic string table.
fn newest_glibc(file: &ElfFile64<'_, object::Endianness>) -> Option<(u32, u32)> {
    let dynstr = file.section_by_name(".dynstr")?.data().ok()?;
    dynstr
        .split(|b| *b == 0)
        .filter_map(|name| std::str::from_utf8(name).ok()?.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut parts = v.split('.');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
            Some((major, minor))
        })
        .max()
}

/// The binary without its `.debug_*` sections (its symbol table stays, so a panic on a node
/// still names its functions).
fn strip_debug(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut builder = object::build::elf::Builder::read(bytes)
        .map_err(|e| format!("cannot be read for stripping ({e})"))?;
    for section in builder.sections.iter_mut() {
        if section.name.as_slice().starts_with(b".debug_") {
            section.delete = true;
        }
    }
    let mut out = Vec::new();
    builder
        .write(&mut out)
        .map_err(|e| format!("cannot be written stripped ({e})"))?;
    Ok(out)
}

/// A node's own word on what it is (`uname -m`, the first line of `ldd --version`), and
/// whether `binary` runs there: `Err` says why not, in words an engineer can act on.
pub(super) fn fits(binary: &AgentBinary, node_arch: &str, ldd: &str) -> Result<(), String> {
    let node_arch = node_arch.trim();
    let same_arch = node_arch == binary.arch || (node_arch == "arm64" && binary.arch == "aarch64");
    if !same_arch {
        let hint = if node_arch == "aarch64" || node_arch == "arm64" {
            " (a Grace node of a GB200/GB300 rack?)"
        } else {
            ""
        };
        return Err(format!(
            "the node is {node_arch}{hint}, {} is built for {}: build burnin for {node_arch} \
             (docs/nodes.md, \"Nodes of another architecture\") and pass --agent-binary PATH",
            binary.path.display(),
            binary.arch
        ));
    }
    let ldd = ldd.trim();
    match &binary.libc {
        Libc::Static => Ok(()),
        Libc::Musl if ldd.to_ascii_lowercase().contains("musl") => Ok(()),
        Libc::Musl => Err(format!(
            "{} needs musl, the node's C library is {ldd:?}",
            binary.path.display()
        )),
        Libc::Glibc(_) if ldd.to_ascii_lowercase().contains("musl") => Err(format!(
            "the node's C library is musl, {} needs glibc: build a static (musl) burnin and \
             pass --agent-binary PATH",
            binary.path.display()
        )),
        Libc::Glibc(need) => match (need, glibc_version(ldd)) {
            (Some(need), Some(have)) if have < *need => Err(format!(
                "the node's glibc is {}.{}, {} needs {}.{} or newer: build burnin on (or for) \
                 the node's distribution, or a static (musl) one, and pass --agent-binary PATH",
                have.0,
                have.1,
                binary.path.display(),
                need.0,
                need.1
            )),
            _ => Ok(()),
        },
    }
}

/// The glibc version in the first line of `ldd --version` (`ldd (Ubuntu GLIBC 2.39-0ubuntu8)
/// 2.39`, `ldd (GNU libc) 2.28`).
pub fn glibc_version(ldd: &str) -> Option<(u32, u32)> {
    let last = ldd.split_whitespace().last()?;
    let mut parts = last.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_binary() -> AgentBinary {
        let exe = std::env::current_exe().expect("this test's binary");
        AgentBinary::prepare(&exe).expect("a test binary is an ELF of this machine")
    }

    #[test]
    fn this_binary_strips_compresses_and_says_what_it_needs() {
        let b = this_binary();
        assert_eq!(b.arch, std::env::consts::ARCH);
        assert!(
            (b.stripped.len() as u64) < b.built_bytes,
            "{} of {}",
            b.stripped.len(),
            b.built_bytes
        );
        assert!(b.compressed.len() < b.stripped.len());
        // Stripped once more, nothing is left to take.
        assert_eq!(
            strip_debug(&b.stripped).expect("again").len(),
            b.stripped.len()
        );
        if cfg!(target_env = "gnu") {
            assert!(matches!(b.libc, Libc::Glibc(Some((2, _)))), "{:?}", b.libc);
        }
    }

    #[test]
    fn a_node_of_another_architecture_or_an_older_glibc_is_told_why() {
        let mut b = this_binary();
        b.arch = "x86_64";
        b.libc = Libc::Glibc(Some((2, 34)));
        let ubuntu = "ldd (Ubuntu GLIBC 2.39-0ubuntu8.4) 2.39";
        assert_eq!(fits(&b, "x86_64\n", ubuntu), Ok(()));
        let grace = fits(&b, "aarch64", ubuntu).expect_err("aarch64");
        assert!(
            grace.contains("Grace") && grace.contains("--agent-binary"),
            "{grace}"
        );
        let rhel8 = fits(&b, "x86_64", "ldd (GNU libc) 2.28").expect_err("old glibc");
        assert!(
            rhel8.contains("glibc is 2.28") && rhel8.contains("2.34"),
            "{rhel8}"
        );
        let alpine = fits(&b, "x86_64", "musl libc (x86_64)").expect_err("musl");
        assert!(alpine.contains("musl"), "{alpine}");
        // A node that does not say: sent, as before.
        assert_eq!(fits(&b, "x86_64", ""), Ok(()));
        b.libc = Libc::Static;
        assert_eq!(fits(&b, "x86_64", "musl libc (x86_64)"), Ok(()));
    }

    #[test]
    fn garbage_is_not_an_agent() {
        assert!(describe(b"#!/bin/sh\necho hi\n").is_err());
        assert!(describe(&[0x7f, b'E', b'L', b'F', 2, 1, 1]).is_err());
        assert_eq!(glibc_version("ldd (GNU libc) 2.28"), Some((2, 28)));
        assert_eq!(glibc_version("nonsense"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_refused_or_described_never_a_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)
        ) {
            let _ = describe(&bytes);
            let _ = strip_debug(&bytes);
        }
    }
}
