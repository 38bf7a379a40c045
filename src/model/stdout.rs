//! Printing that survives a reader that went away: `burnin run --json | head -c 10` closes
//! the pipe after ten bytes. `println!` then panics (exit 101) after the record is written;
//! here the rest of the output is dropped and the command ends with its own exit code, as
//! Unix tools do.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output's reader is gone: later writes are dropped unwritten.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Write `text` to standard output and flush it; a closed pipe is remembered, not a panic.
pub fn out(text: &str) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut o = std::io::stdout().lock();
    if o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .is_err()
    {
        STDOUT_GONE.store(true, Ordering::Relaxed);
    }
}

/// Write `text` to standard error; an error there has nowhere to be said, so it is dropped.
pub fn err(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
}
