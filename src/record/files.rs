//! How burnin touches a record's files, which may not be its own (copied from a site, damaged,
//! or laid out by someone hostile): reads are bounded in size and refuse links and devices;
//! writes go to a new file beside the target and are renamed over it, so a link planted where
//! a report goes is replaced, never followed.

use super::error::RecordError;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest `summary.json` read: a 72-hour run's summary is under a megabyte.
pub const SUMMARY_MAX_BYTES: u64 = 64 << 20;

/// The largest `events.jsonl` read whole (`record::read_events`, for tests and small tools);
/// `report`, `replay` and a resumed run walk it an event at a time instead.
pub const EVENTS_MAX_BYTES: u64 = 512 << 20;

/// The largest `events.jsonl` walked an event at a time: `record::logs` keeps a phase's
/// output there to about 5 million lines over 72 hours (under a gigabyte); records written
/// before it kept every line (1.16 GB for a phase printing 6 million); past this it is not a
/// record burnin wrote, and reading it through would take minutes.
pub const EVENTS_WALK_MAX_BYTES: u64 = 4 << 30;

/// The largest line of `events.jsonl` or of a telemetry segment: a node's output line is cut
/// at 64 KiB before it is recorded, and escaping in JSON at most sextuples it.
pub const LINE_MAX_BYTES: usize = 1 << 20;

/// The largest plan copy, baseline or other small file of a record.
pub const SMALL_MAX_BYTES: u64 = 16 << 20;

/// Open `path` for reading if it is a plain file no larger than `max` bytes: never through a
/// symbolic link (`O_NOFOLLOW`), never a device or a FIFO (`/dev/zero` would never end).
pub fn open_regular(path: &Path, max: u64) -> Result<File, RecordError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => RecordError::refused(
                path,
                "is a symbolic link (a record's files are never links; refused)",
            ),
            _ => RecordError::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| RecordError::io(path, e))?;
    if !meta.is_file() {
        return Err(RecordError::refused(
            path,
            "not a plain file (a device, FIFO or directory is no record file; refused)",
        ));
    }
    if meta.len() > max {
        return Err(RecordError::refused(
            path,
            format!(
                "{} bytes, more than the {} a record file of this kind may have; refused",
                meta.len(),
                human_bytes(max)
            ),
        ));
    }
    Ok(file)
}

/// The whole of a plain file of at most `max` bytes (see [`open_regular`]).
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, RecordError> {
    let file = open_regular(path, max)?;
    let mut bytes = Vec::new();
    // The length was checked, but a file can grow while it is read.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| RecordError::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(RecordError::refused(
            path,
            format!("grew past {} while read; refused", human_bytes(max)),
        ));
    }
    Ok(bytes)
}

/// [`read_bounded`] as text (invalid UTF-8 is replaced, not an error: a torn multi-byte
/// character must cost a character, not the file).
pub fn read_text_bounded(path: &Path, max: u64) -> Result<String, RecordError> {
    read_bounded(path, max).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// What one bounded line read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line (its newline taken off) in the buffer.
    Whole,
    /// The last bytes of the input, without a newline (a torn line), in the buffer.
    Unterminated,
    /// A line longer than the cap: skipped to its end, the buffer empty.
    TooLong,
    /// Nothing left.
    End,
}

/// Read one line of at most `max` bytes into `buf` (cleared first); a longer line is
/// consumed to its newline and reported as [`Line::TooLong`] without being held.
pub fn read_line_bounded<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(Line::Whole);
    }
    if buf.len() <= max {
        return Ok(Line::Unterminated);
    }
    // Over the cap: drop what was read and skip the rest of the line, a buffer at a time.
    buf.clear();
    loop {
        let (done, used) = {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                (true, 0)
            } else {
                match chunk.iter().position(|b| *b == b'\n') {
                    Some(i) => (true, i + 1),
                    None => (false, chunk.len()),
                }
            }
        };
        reader.consume(used);
        if done {
            return Ok(Line::TooLong);
        }
    }
}

/// Replace `path` with `bytes` whole: written to a new file in the same directory, synced,
/// then renamed over `path`. A symbolic link at `path` is refused (it is not followed, and
/// not silently replaced either: someone put it there).
pub fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(RecordError::refused(
                path,
                "is a symbolic link; burnin does not write through links in a record (remove it first)",
            ));
        }
        if !meta.is_file() {
            return Err(RecordError::refused(path, "exists and is not a plain file"));
        }
    }
    let tmp = temp_beside(path)?;
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(RecordError::io(&tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RecordError::io(path, e)
    })
}

/// A name beside `path` that no one else uses: `.NAME.PID.N.tmp`.
fn temp_beside(path: &Path) -> Result<PathBuf, RecordError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| RecordError::refused(path, "no directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| RecordError::refused(path, "no file name"))?
        .to_string_lossy();
    Ok(dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )))
}

/// `64 MiB`, `4 GiB`: a limit in words.
fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("burnin-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    #[test]
    fn links_devices_and_oversized_files_are_refused_with_why() {
        let d = temp("read");
        let f = d.join("summary.json");
        std::fs::write(&f, "{}").expect("write");
        assert_eq!(read_bounded(&f, 10).expect("small"), b"{}");
        let e = read_bounded(&f, 1).expect_err("too large");
        assert!(matches!(e, RecordError::Refused { .. }), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("more than the 1 bytes"), "{e}");
        let link = d.join("events.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("link");
        let e = read_bounded(&link, 1 << 20)
            .expect_err("a link")
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20)
            .expect_err("a device")
            .to_string();
        assert!(e.contains("not a plain file"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_whole_and_the_next_one_read() {
        let text = format!("short\n{}\nafter\ntorn", "x".repeat(100));
        let mut r = std::io::BufReader::with_capacity(7, text.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).expect("io"),
            Line::Whole
        );
        assert_eq!(buf, b"short");
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).expect("io"),
            Line::TooLong
        );
        assert!(buf.is_empty());
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).expect("io"),
            Line::Whole
        );
        assert_eq!(buf, b"after");
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).expect("io"),
            Line::Unterminated
        );
        assert_eq!(buf, b"torn");
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 10).expect("io"),
            Line::End
        );
    }

    #[test]
    fn a_write_never_goes_through_a_link_and_replaces_a_file_whole() {
        let d = temp("write");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        let report = d.join("report.html");
        std::os::unix::fs::symlink(&victim, &report).expect("link");
        let e = write_replacing(&report, b"<html>")
            .expect_err("a link is refused")
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
        std::fs::remove_file(&report).expect("unlink");
        write_replacing(&report, b"one").expect("write");
        write_replacing(&report, b"two").expect("rewrite");
        assert_eq!(std::fs::read_to_string(&report).expect("read"), "two");
        let left: Vec<_> = std::fs::read_dir(&d)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.iter().all(|n| !n.ends_with(".tmp")), "{left:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
