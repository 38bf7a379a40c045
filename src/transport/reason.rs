//! Why a command on a node ended, read from its stderr as a person would: the first line that
//! says "error" (a tool's own complaint comes first; what follows is usage and hints), named by
//! its kind — the agent refused its arguments, a file or command is missing, permission was
//! denied — so a node's real error is never swallowed under a closing hint such as clap's
//! "For more information, try '--help'.".

use crate::model::fit;

/// Most characters of a node's own line quoted in a reason.
const QUOTED_CHARS: usize = 120;

/// Lines that close an error without saying what it was (clap's usage and hints).
fn is_hint(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.starts_with("for more information")
        || l.starts_with("usage:")
        || l.starts_with("tip:")
        || l.starts_with("  tip:")
}

/// The line that says what went wrong: the first that starts with "error" or "fatal" (or names
/// one after a program's prefix, as `sh: 1: x: not found` or `burnin: error: …` do), else the
/// last line that is not a usage hint. Trimmed; `None` when stderr says nothing.
pub fn error_line(stderr: &str) -> Option<&str> {
    let lines = || stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    let says_error = |l: &&str| {
        let low = l.to_ascii_lowercase();
        low.starts_with("error") || low.starts_with("fatal") || low.contains(": error")
    };
    lines()
        .find(says_error)
        .or_else(|| lines().rev().find(|l| !is_hint(l)))
}

/// "agent refused its arguments: …" when stderr is a command-line parser's refusal (clap's
/// `error: …` followed by a usage line or its help hint): the node's agent is older or newer
/// than this console, or the inventory's `agent_args` are wrong.
pub fn refused_arguments(stderr: &str) -> Option<String> {
    let hinted = stderr.lines().map(str::trim).any(is_hint);
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.to_ascii_lowercase().starts_with("error:"))?;
    hinted.then(|| {
        let said = first.get("error:".len()..).unwrap_or("").trim();
        format!("agent refused its arguments: {}", fit(said, QUOTED_CHARS))
    })
}

/// The kinds of failure any transport meets once the command started on the node: the agent
/// refused its arguments, a program or file is missing, permission was denied. `None` for
/// anything else, which the transport names itself.
pub fn command_reason(code: Option<i32>, stderr: &str) -> Option<String> {
    if let Some(r) = refused_arguments(stderr) {
        return Some(r);
    }
    let low = stderr.to_lowercase();
    let line = error_line(stderr).unwrap_or("");
    if code == Some(127) || low.contains("no such file or directory") || low.contains("not found") {
        // Our own program missing is the common case and has a remedy; anything else is the
        // node's words. An smi node reads nvidia-smi, not the agent: its remedy is the driver's
        // tools (a line can name both, as a path under burnin's cache does).
        if line.contains("nvidia-smi") {
            return Some(format!(
                "nvidia-smi missing on the node (smi mode reads it: install the driver's tools, \
                 or use agent mode): {}",
                fit(line, QUOTED_CHARS)
            ));
        }
        if line.contains("burnin") {
            return Some(format!(
                "agent missing on the node (burnin deploy copies it): {}",
                fit(line, QUOTED_CHARS)
            ));
        }
        return Some(format!(
            "not found on the node: {}",
            fit(line, QUOTED_CHARS)
        ));
    }
    if low.contains("permission denied") {
        return Some(format!("permission denied: {}", fit(line, QUOTED_CHARS)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41, case 10: an smi node without nvidia-smi was told "agent missing (burnin
    /// deploy copies it)".
    #[test]
    fn a_missing_nvidia_smi_is_not_a_missing_agent() {
        for stderr in [
            "sh: 1: nvidia-smi: not found\n",
            "bash: line 1: /home/u/.cache/burnin/nvidia-smi: No such file or directory\n",
        ] {
            let r = command_reason(Some(127), stderr).expect("a reason");
            assert!(r.starts_with("nvidia-smi missing on the node"), "{r}");
        }
        let r =
            command_reason(Some(127), "sh: 1: /opt/burnin/burnin: not found\n").expect("reason");
        assert!(r.starts_with("agent missing on the node"), "{r}");
    }

    /// What clap prints for an argument the agent does not know (burnin 0.x's own wording).
    const CLAP_REFUSAL: &str = "error: unexpected argument '--gpm-cadence' found\n\n  tip: to pass '--gpm-cadence' as a value, use '-- --gpm-cadence'\n\nUsage: burnin agent [OPTIONS]\n\nFor more information, try '--help'.\n";

    #[test]
    fn a_refused_argument_is_named_with_the_parsers_own_words() {
        assert_eq!(
            refused_arguments(CLAP_REFUSAL).as_deref(),
            Some("agent refused its arguments: unexpected argument '--gpm-cadence' found")
        );
        assert_eq!(
            command_reason(Some(2), CLAP_REFUSAL),
            refused_arguments(CLAP_REFUSAL)
        );
        // An error line without a usage hint is not a refusal of arguments.
        assert_eq!(refused_arguments("error: no NVIDIA driver\n"), None);
    }

    #[test]
    fn the_first_error_line_wins_over_the_closing_hint() {
        assert_eq!(
            error_line(CLAP_REFUSAL),
            Some("error: unexpected argument '--gpm-cadence' found")
        );
        assert_eq!(
            error_line("starting\nsomething odd\n"),
            Some("something odd")
        );
        assert_eq!(error_line("  \n\n"), None);
        assert_eq!(
            error_line("Usage: x\nFor more information, try '--help'.\nreal words\n"),
            Some("real words")
        );
    }

    #[test]
    fn missing_programs_and_denied_permissions_are_told_apart() {
        let r = command_reason(
            Some(127),
            "bash: line 1: /root/.cache/burnin/bin/burnin: No such file or directory",
        )
        .unwrap_or_default();
        assert!(r.starts_with("agent missing on the node"), "{r}");
        let r = command_reason(Some(127), "sh: 1: dcgmi: not found").unwrap_or_default();
        assert_eq!(r, "not found on the node: sh: 1: dcgmi: not found");
        let r =
            command_reason(Some(126), "sh: 1: /opt/burnin: Permission denied").unwrap_or_default();
        assert_eq!(
            r,
            "permission denied: sh: 1: /opt/burnin: Permission denied"
        );
        assert_eq!(command_reason(Some(1), "something odd"), None);
    }
}
