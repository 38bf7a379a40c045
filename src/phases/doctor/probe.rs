//! The doctor's probe on a node: one POSIX `sh` script, sent like the phases' scripts
//! (`sh -c SCRIPT` with everything variable as positional arguments, so nothing of the plan's
//! or the node's is parsed by a shell of ours), that prints one line per probe:
//! `kind<TAB>key<TAB>status<TAB>detail`. Every tool's words are cut to one line of at most
//! 300 bytes on the node, and read back here through [`parse_probe`], which strips control
//! characters, bounds every field and counts what does not parse instead of failing on it.

use crate::parsers::doctor::NeedLine;
use crate::transport::RemoteCommand;

const SCRIPT: &str = r#"rd=$1; torch=$2; prefix=$3; py=$4; shift 4
tab=$(printf '\t')
# One field on one line: no control characters (our separator is a tab), at most 300 bytes.
clean() { head -c 4096 | sed -n '/[^[:space:]]/{p;q;}' | tr -d '\000-\010\013-\037\177' | tr '\t' ' ' | cut -c1-300; }
say() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(printf '%s\n' "$4" | clean)"; }
# A tool that hangs must not hold the doctor: 20 s each where timeout(1) exists.
to() { if command -v timeout >/dev/null 2>&1; then timeout 20 "$@"; else "$@"; fi; }
version() {
  case "$1" in
    nvidia-smi) to "$2" --query-gpu=driver_version --format=csv,noheader ;;
    nvbandwidth) to "$2" --help ;;
    kubectl) to "$2" version --client ;;
    gdscheck) to "$2" -v ;;
    mpirun|srun|dcgmi|python3|burnin|ib_*) to "$2" --version ;;
  esac
}
for k in "$@"; do
  case "$k" in */*) n=${k##*/}; p=$k ;; *) n=$k; p= ;; esac
  case "$p" in "~/"*) p="$HOME/${p#"~/"}" ;; '$HOME/'*) p="$HOME/${p#'$HOME/'}" ;; esac
  if [ -n "$p" ]; then
    if [ -f "$p" ] && [ -x "$p" ]; then f=$p; else f=; fi
  else
    f=$(command -v "$n" 2>/dev/null)
  fi
  case "$n" in gdsio|gdscheck)
    [ -n "$f" ] || f=$(ls /usr/local/cuda/gds/tools/"$n" /usr/local/cuda-*/gds/tools/"$n" 2>/dev/null | head -n 1) ;;
  esac
  if [ -z "$f" ]; then
    if [ -n "$p" ]; then say tool "$k" missing "$p is not an executable file"; else say tool "$k" missing "not on PATH"; fi
    continue
  fi
  say tool "$k" ok "$f"
  v=$(version "$n" "$f" 2>&1 < /dev/null | clean)
  [ -n "$v" ] && say version "$k" ok "$v"
done
if [ "$torch" = yes ]; then
  # As the phase runs it: behind the plan's prefix (shell text the plan's author wrote, which
  # the phases run under sh -c too), the probe's Python as one argument.
  o=$(to sh -c "$prefix python3 -c \"\$1\"" burnin-torch "$py" 2>&1 < /dev/null | head -c 65536 | tr -d '\000' | tail -n 20)
  l=$(printf '%s\n' "$o" | grep "^burnin-torch$tab" | tail -n 1)
  if [ -n "$l" ]; then
    say torch python3 "$(printf '%s' "$l" | cut -f2)" "$(printf '%s' "$l" | cut -f3-)"
  else
    last=$(printf '%s\n' "$o" | sed '/^[[:space:]]*$/d' | tail -n 1)
    say torch python3 fail "${last:-python3 said nothing}"
  fi
fi
p=$rd
case "$p" in "~/"*) p="$HOME/${p#"~/"}" ;; esac
while [ ! -e "$p" ]; do q=$(dirname "$p"); [ "$q" = "$p" ] && break; p=$q; done
a=$(df -Pk "$p" 2>/dev/null | awk 'NR == 2 { print $4 }')
case "$a" in ''|*[!0-9]*) say disk "$rd" fail "df -Pk $p said nothing usable" ;; *) say disk "$rd" ok "$a" ;; esac
if [ -d "$p" ] && [ -w "$p" ]; then say dir "$rd" ok "$p"; else say dir "$rd" fail "$p is not a writable directory"; fi
r=$(cat /proc/sys/kernel/dmesg_restrict 2>/dev/null)
if dmesg > /dev/null 2>&1; then say kernel-log dmesg ok "dmesg readable"
elif journalctl -k -q --no-pager -n 1 > /dev/null 2>&1; then say kernel-log journalctl ok "dmesg refused (kernel.dmesg_restrict=${r:-?}); journalctl -k readable"
else say kernel-log dmesg fail "dmesg and journalctl -k refused (kernel.dmesg_restrict=${r:-?})"; fi
say done - ok "$(uname -r 2>/dev/null)"
"#;

/// The Python the torch probe runs: its one answer line starts with `burnin-torch<TAB>`.
const TORCH_PROBE: &str = r#"import sys
try:
    import torch
except BaseException as e:
    print(("burnin-torch\tmissing\t%s: %s" % (type(e).__name__, e)).replace("\n", " "))
    sys.exit(0)
try:
    a = bool(torch.cuda.is_available())
    n = torch.cuda.device_count() if a else 0
except BaseException as e:
    a, n = False, 0
print("burnin-torch\t%s\ttorch %s, CUDA %s, cuda available %s, %d devices" % ("ok" if a else "nocuda", torch.__version__, torch.version.cuda, a, n))
"#;

/// What the probe looks at on one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeRequest {
    /// The plan's `remote_dir`: its free space and whether it can be written.
    pub remote_dir: String,
    /// Probe python3 and torch, behind this prefix (`Some("")`: on the node itself).
    pub torch_prefix: Option<String>,
    /// Program keys: names (looked up on PATH) or paths.
    pub programs: Vec<String>,
}

/// The probe as one command inside T0's script (`{doctor_probe}`): first the `need` lines
/// of this node, then the probe (not `exec`'d: T0 goes on after it). Every word is quoted; a
/// need whose words hold a control character is left out (it could not be one line).
pub fn inline_probe(request: &ProbeRequest, needs: &[NeedLine]) -> String {
    use crate::transport::quote::shell_quote;
    let mut printf = vec!["printf".to_string(), shell_quote("%s\t%s\t%s\t%s\n")];
    for n in needs {
        let (what, key) = n.what.words();
        if [n.phase.as_str(), key.as_str()]
            .iter()
            .any(|w| w.chars().any(char::is_control))
        {
            continue;
        }
        printf.extend(["need".to_string(), shell_quote(&n.phase), what.to_string()]);
        printf.push(shell_quote(&key));
    }
    let probe: Vec<String> = probe_command(request)
        .argv
        .iter()
        .map(|a| shell_quote(a))
        .collect();
    if printf.len() > 2 {
        format!("{}; {}", printf.join(" "), probe.join(" "))
    } else {
        probe.join(" ")
    }
}

/// The probe script for `request`.
pub fn probe_command(request: &ProbeRequest) -> RemoteCommand {
    let mut argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        SCRIPT.to_string(),
        "burnin-doctor".to_string(),
        request.remote_dir.clone(),
        if request.torch_prefix.is_some() {
            "yes"
        } else {
            "no"
        }
        .to_string(),
        request.torch_prefix.clone().unwrap_or_default(),
        TORCH_PROBE.to_string(),
    ];
    argv.extend(request.programs.iter().cloned());
    RemoteCommand { argv }
}

pub use crate::parsers::doctor::{
    FIELD_CHARS, NodeProbe, Probed, TOOLS_KEPT, ToolFound, parse_probe,
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Run the probe the way a login shell would get it: one quoted command line.
    fn run_here(request: &ProbeRequest, path: &str) -> String {
        let line = crate::transport::quote::command_line(&probe_command(request).argv);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env("PATH", path)
            .output()
            .expect("sh");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn the_script_finds_what_is_there_and_says_what_is_not() {
        let dir = std::env::temp_dir().join(format!("burnin-doctor-probe-{}", std::process::id()));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("bin");
        let tool = |name: &str, body: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = bin.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("tool");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        };
        tool(
            "nvbandwidth",
            "printf 'nvbandwidth Version: v0.7\\033]0;owned\\007\\n'; echo more",
        );
        tool("mpirun", "printf '\\n\\nmpirun (Open MPI) 4.1.5\\n'");
        tool(
            "python3",
            "echo 'Traceback (most recent call last):'; echo \"ModuleNotFoundError: No module named 'torch'\"; exit 1",
        );
        let path = format!("{}:/usr/bin:/bin", bin.display());
        let out = run_here(
            &ProbeRequest {
                remote_dir: dir.join("runs/x").display().to_string(),
                torch_prefix: Some(String::new()),
                programs: vec![
                    "nvbandwidth".into(),
                    "mpirun".into(),
                    "/nowhere/all_reduce_perf".into(),
                    "gdsio".into(),
                ],
            },
            &path,
        );
        let probe = parse_probe(&out);
        assert_eq!(probe.garbled_lines, 0, "{out}");
        assert!(probe.complete, "{out}");
        let nvb = &probe.tools["nvbandwidth"];
        assert_eq!(
            nvb.version.as_deref(),
            Some("nvbandwidth Version: v0.7]0;owned")
        );
        assert_eq!(
            probe.tools["mpirun"].version.as_deref(),
            Some("mpirun (Open MPI) 4.1.5")
        );
        assert!(probe.tools["/nowhere/all_reduce_perf"].path.is_none());
        assert!(probe.tools["gdsio"].missing.is_some());
        let torch = probe.torch.expect("torch");
        assert_eq!(torch.status, "fail");
        assert_eq!(torch.detail, "ModuleNotFoundError: No module named 'torch'");
        assert!(probe.free_kib.is_some_and(|k| k > 0), "{out}");
        assert!(probe.dir.is_some_and(|d| d.ok()), "{out}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lines_that_are_no_probe_line_are_counted() {
        let probe = parse_probe(
            "tool\tmpirun\tok\t/usr/bin/mpirun\nversion\tmpirun\tok\tv4\nhello\n\x1b[2Jjunk\twith\ttabs\tand more\nversion\tnvbandwidth\tok\tv1\ndisk\t~/r\tok\tlots\n",
        );
        assert_eq!(probe.tools["mpirun"].version.as_deref(), Some("v4"));
        assert_eq!(probe.garbled_lines, 3);
        assert_eq!(probe.first_garbled.as_deref(), Some("hello"));
        assert_eq!(probe.disk_error.as_deref(), Some("lots"));
        assert!(!probe.complete);
    }

    proptest! {
        // Whatever a node sends, the reader neither panics nor keeps more than its bounds.
        #[test]
        fn garbage_never_panics(text in "(\\PC|\t|\n|\u{1b}|\u{7f}){0,400}") {
            let probe = parse_probe(&text);
            prop_assert!(probe.tools.len() <= TOOLS_KEPT);
            for t in probe.tools.values() {
                for s in [&t.path, &t.missing, &t.version].into_iter().flatten() {
                    prop_assert!(s.chars().count() <= FIELD_CHARS);
                    prop_assert!(!s.chars().any(char::is_control));
                }
            }
        }

        #[test]
        fn probe_shaped_garbage_never_panics(
            lines in proptest::collection::vec(
                ("(tool|version|torch|disk|dir|kernel-log|done|x)", "\\PC{0,20}", "(ok|missing|fail|\\PC{0,4})", "(\\PC|\t){0,40}"),
                0..40,
            )
        ) {
            let text: String = lines
                .iter()
                .map(|(k, key, st, d)| format!("{k}\t{key}\t{st}\t{d}\n"))
                .collect();
            let probe = parse_probe(&text);
            prop_assert!(probe.garbled_lines <= lines.len() as u64);
        }
    }
}
