//! POSIX shell quoting for the remote command line. OpenSSH joins its arguments into one string
//! that the remote login shell parses, so every argument we send is single-quoted here.

/// Quote one argument for a POSIX shell: `it's` → `'it'\''s'`. Plain words stay bare.
pub fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c))
    {
        return arg.to_string();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A program path for the remote shell: `~/x` becomes `"$HOME"/x` so the home directory
/// expands while the rest stays quoted.
pub fn quote_program(path: &str) -> String {
    match path.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", shell_quote(rest)),
        None => shell_quote(path),
    }
}

/// The whole command line: `exec PROGRAM ARGS…` (exec: the agent replaces the shell, so a
/// signal to the session reaches it directly).
pub fn command_line(argv: &[String]) -> String {
    let mut parts = Vec::with_capacity(argv.len() + 1);
    parts.push("exec".to_string());
    if let Some((program, args)) = argv.split_first() {
        parts.push(quote_program(program));
        parts.extend(args.iter().map(|a| shell_quote(a)));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn quotes_what_needs_it() {
        assert_eq!(shell_quote("--interval"), "--interval");
        assert_eq!(shell_quote("stall:3"), "stall:3");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(
            quote_program("~/.cache/burnin/bin/burnin"),
            "\"$HOME\"/.cache/burnin/bin/burnin"
        );
        assert_eq!(
            command_line(&["nvidia-smi".into(), "--format=csv,noheader".into()]),
            "exec nvidia-smi --format=csv,noheader"
        );
    }

    fn through_sh(args: &[String]) -> Vec<String> {
        let mut line = String::from("printf '%s\\0'");
        for a in args {
            line.push(' ');
            line.push_str(&shell_quote(a));
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .output()
            .expect("sh");
        let text = String::from_utf8(out.stdout).expect("utf8");
        text.split('\0')
            .take(args.len())
            .map(String::from)
            .collect()
    }

    proptest! {
        // A real shell must give back exactly the arguments we quoted.
        #[test]
        fn survives_a_real_shell(args in proptest::collection::vec("[^\\x00]{0,12}", 1..4)) {
            prop_assert_eq!(through_sh(&args), args);
        }
    }
}
