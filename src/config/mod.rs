//! Files a person writes: errors for the console's TOML files (themes, layouts, burnin.toml,
//! the plan) that name the file, the line and the column, so a typo on burn-in day is fixed in
//! seconds; bounded reads of them; and `inventory` (burnin.toml).

pub mod inventory;
pub mod starter;

use std::fmt;
use std::ops::Range;

/// Most characters of a config error's message (its own words, the list of known names, and a
/// cut quote of what was wrong).
pub const MESSAGE_CHARS: usize = 800;

/// A problem in a config file, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File path, or `<embedded>/NAME` for shipped files.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file, self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// An error at a byte span of `text`.
    pub fn at(
        file: &str,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = match span {
            Some(span) => {
                let (l, c) = line_col(text, span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        Self {
            file: file.to_string(),
            line,
            column,
            // A message quotes what it could not take (a value, a key): whole words of ours,
            // but never a 70 000-character value back.
            message: crate::model::excerpt_chars(&message.into(), MESSAGE_CHARS),
        }
    }

    /// From a TOML parse or shape error; keeps only its first line (the rest repeats the source).
    pub fn from_toml(file: &str, text: &str, err: &toml::de::Error) -> Self {
        let message = err
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .trim();
        // toml quotes what it could not take (a key, a value) whole: a 70 000-character key
        // would be a 70 000-character error.
        let message = crate::model::excerpt(message);
        Self::at(file, text, err.span(), message)
    }
}

/// The largest configuration file burnin reads (burnin.toml, a plan, a theme or layout, a
/// baseline, a token file): real ones are kilobytes.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Read a file a person points burnin at: links are followed (dotfiles often are links), but
/// it must end at a plain file of at most `max` bytes (`/dev/zero` or a FIFO would never end).
/// The error says why, without the path (callers name the file their own way).
pub fn read_file_bounded(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let refuse = |why: String| Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    if !meta.is_file() {
        return refuse("not a plain file (a device, FIFO or directory)".into());
    }
    if meta.len() > max {
        return refuse(format!(
            "{} bytes, more than the {} MiB a file of this kind may have",
            meta.len(),
            max >> 20
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return refuse(format!("grew past {} MiB while read", max >> 20));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// burnin's cache directory: `$XDG_CACHE_HOME/burnin`, else `~/.cache/burnin` (the log, the SSH
/// control sockets, the deployed agent's neighbours).
pub fn cache_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(base.join("burnin"))
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
        assert_eq!(line_col(text, 999), (3, 1));
    }
}
