//! Why a run record could not be read or written. An error about a file names it, so an
//! engineer can look at it; the words are the same whichever caller says them.

use std::path::{Path, PathBuf};

/// A run record's file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The operating system refused (open, read, write, rename, lock) on `path`.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// `path` is not what a run record holds there (a link, not a plain file, larger than its
    /// kind may be, not its format, torn), or the record is not in a state to take it.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The file or directory.
        path: PathBuf,
        /// Why, in words that quote at most an excerpt of what was read.
        why: String,
    },
    /// Another console or `burnin run` holds the record (the words name who and since when).
    #[error("{0}")]
    Held(String),
    /// A writer of the record panicked while holding it; nothing more is written (the words
    /// say which part of the record).
    #[error("{0}")]
    Poisoned(&'static str),
    /// One of burnin's own records could not be put into JSON.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
}

impl RecordError {
    /// The system refused `op` on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        RecordError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// `path` is refused, for `why`.
    pub fn refused(path: &Path, why: impl Into<String>) -> Self {
        RecordError::Refused {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// Callers that still speak in words take the error's words.
impl From<RecordError> for String {
    fn from(e: RecordError) -> String {
        e.to_string()
    }
}
