//! Printing that survives a reader that went away: `burnin run --json | head -c 10` closes
//! the pipe after ten bytes. `println!` then panics (exit 101) after the record is written;
//! here the rest of the output is dropped and the command ends with its own exit code, as
//! Unix tools do. Any other failure (a full disk under `> out.json`) is said once on stderr:
//! output lost without a word would be worse than the panic.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output cannot be written: later writes are dropped unwritten.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Write `text` to standard output and flush it. A reader that went away is `Ok` (nothing to
/// say, nowhere to say it); any other failure is the error, once: after it, writes are dropped.
pub fn try_out(text: &str) -> std::io::Result<()> {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Ok(()) => Ok(()),
        Err(e) => {
            STDOUT_GONE.store(true, Ordering::Relaxed);
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        }
    }
}

/// [`try_out`] for the print macros: a failure other than a closed pipe is said on stderr.
pub fn out(text: &str) {
    if let Err(e) = try_out(text) {
        err(&format!(
            "burnin: standard output: {e}; the rest of it is lost\n"
        ));
    }
}

/// Write `text` to standard error; an error there has nowhere to be said, so it is dropped.
pub fn err(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
}
