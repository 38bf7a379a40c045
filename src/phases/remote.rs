//! The shell side of a phase on a node. Four small POSIX `sh` scripts, sent as `sh -c SCRIPT`
//! with everything variable passed as positional arguments (so nothing of ours is ever parsed
//! by a shell, and the remote login shell sees only single-quoted words):
//!
//! - **launch** writes the workloads and the MPI hostfile, then starts the command under
//!   `setsid` (its own session and process group, so it outlives the SSH session and can be
//!   signalled as one group) with stdin from /dev/null and stdout+stderr into `log`. The
//!   wrapper writes `pid` (= the process group id) before anything else and `rc` when the
//!   command exits.
//! - **attach** streams `log` from a byte offset with `tail --pid`, which ends after the
//!   wrapper is gone and the last bytes are read; after a dropped link the runner attaches
//!   again at the offset of the last whole line it has, so no line is lost or doubled.
//! - **status** says running / exited with rc / ended without rc, and whether it was stopped.
//! - **stop** writes `stopped` (why: aborted, timeout, or finished: a drill's load), sends TERM to the process group,
//!   waits up to the grace period, then KILL.
//!
//! Layout on the node: `<remote_dir>/<run>/<phase>/<node>/{pid,started,log,rc,stopped,command}`
//! and `<remote_dir>/<run>/workloads/`. The command runs in `<phase dir>/work`, beside the
//! control files and not among them: a tool that writes `./pid` or `./log` into its working
//! directory cannot take the runner's stop and status from it.

use crate::transport::RemoteCommand;

/// Resolve `~/` against $HOME in every script.
const PRELUDE: &str = r#"case "$1" in "~/"*) d="$HOME/${1#"~/"}" ;; *) d="$1" ;; esac
"#;

const LAUNCH: &str = r#"w="$2"; cmd="$3"; hostfile="$4"; shift 4
case "$w" in "~/"*) w="$HOME/${w#"~/"}" ;; esac
mkdir -p "$d/work" "$w" || { echo "burnin: cannot create $d" >&2; exit 90; }
cd "$d" || exit 90
if [ -e pid ]; then echo "burnin: a phase was already launched in $d" >&2; exit 91; fi
while [ $# -ge 2 ]; do printf '%s' "$2" > "$w/$1.tmp.$$" && mv "$w/$1.tmp.$$" "$w/$1" || exit 90; shift 2; done
[ -n "$hostfile" ] && printf '%s\n' "$hostfile" > hostfile
printf '%s\n' "$cmd" > command
setsid sh -c ': > log; echo $$ > pid.tmp && mv pid.tmp pid; date +%s > started; (cd work && exec sh -c "$1") > log 2>&1 < /dev/null; echo $? > rc.tmp && mv rc.tmp rc' burnin-phase "$cmd" < /dev/null > /dev/null 2>&1 &
i=0
while [ ! -e pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
[ -e pid ] || { echo "burnin: the phase did not start in $d" >&2; exit 92; }
echo "launched pgid $(cat pid) in $d"
"#;

const ATTACH: &str = r#"cd "$d" 2>/dev/null || { echo "burnin: no phase directory $d" >&2; exit 93; }
[ -e pid ] || { echo "burnin: no phase was launched in $d" >&2; exit 94; }
exec tail -c "+$(( $2 + 1 ))" -s 0.2 --pid="$(cat pid)" -f log
"#;

const STATUS: &str = r#"cd "$d" 2>/dev/null || { echo "state=missing"; exit 0; }
pid=$(cat pid 2>/dev/null); stop=$(cat stopped 2>/dev/null); started=$(cat started 2>/dev/null)
if [ -e rc ]; then echo "state=exited rc=$(cat rc) stop=$stop started=$started"
elif [ -n "$pid" ] && kill -0 "-$pid" 2>/dev/null; then echo "state=running stop=$stop started=$started"
else echo "state=ended stop=$stop started=$started"; fi
"#;

const STOP: &str = r#"cd "$d" 2>/dev/null || { echo "burnin: no phase directory $d" >&2; exit 93; }
[ -e rc ] && { echo "already exited"; exit 0; }
pid=$(cat pid 2>/dev/null)
[ -n "$pid" ] || { echo "burnin: no pid in $d" >&2; exit 94; }
case "$pid" in *[!0-9]*|0|1) echo "burnin: $d/pid holds no process group ($pid); nothing signalled" >&2; exit 94 ;; esac
[ -e stopped ] || { echo "$3" > stopped.tmp && mv stopped.tmp stopped; }
kill -TERM "-$pid" 2>/dev/null || { echo "already gone"; exit 0; }
i=0; n=$(( $2 * 5 ))
while kill -0 "-$pid" 2>/dev/null; do
  if [ $i -ge $n ]; then
    kill -KILL "-$pid" 2>/dev/null
    j=0; while kill -0 "-$pid" 2>/dev/null && [ $j -lt 50 ]; do sleep 0.1; j=$((j+1)); done
    if kill -0 "-$pid" 2>/dev/null; then echo "burnin: process group $pid survived KILL" >&2; exit 95; fi
    echo "killed after $2 s"; exit 0
  fi
  sleep 0.2; i=$((i+1))
done
echo "terminated"
"#;

fn script(body: &str, name: &str, args: Vec<String>) -> RemoteCommand {
    let mut argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("{PRELUDE}{body}"),
        name.to_string(),
    ];
    argv.extend(args);
    RemoteCommand { argv }
}

/// Whether `s` is safe as one path component we build (`run`, phase id, node name).
pub fn valid_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// Where one node's run of one phase lives on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseDir {
    /// `<remote_dir>/<run>/<phase>/<node>` (may start with `~/`).
    pub dir: String,
    /// `<remote_dir>/<run>/workloads`.
    pub workloads: String,
}

impl PhaseDir {
    /// The directories for `run`/`phase`/`node` under `remote_dir`; `None` if a component is
    /// not a plain name.
    pub fn new(remote_dir: &str, run: &str, phase: &str, node: &str) -> Option<Self> {
        if ![run, phase, node].iter().all(|c| valid_component(c)) {
            return None;
        }
        let root = remote_dir.trim_end_matches('/');
        Some(Self {
            dir: format!("{root}/{run}/{phase}/{node}"),
            workloads: format!("{root}/{run}/workloads"),
        })
    }

    /// The directory with `~/` spelled as `$HOME/` for templates (the command runs in a shell).
    pub fn shell_path(path: &str) -> String {
        match path.strip_prefix("~/") {
            Some(rest) => format!("$HOME/{rest}"),
            None => path.to_string(),
        }
    }
}

/// Start `command` in `dir`, after writing `files` (name, content) into the workloads
/// directory and `hostfile` (when not empty) into the phase directory.
pub fn launch(
    dir: &PhaseDir,
    command: &str,
    hostfile: &str,
    files: &[(&str, &str)],
) -> RemoteCommand {
    let mut args = vec![
        dir.dir.clone(),
        dir.workloads.clone(),
        command.to_string(),
        hostfile.to_string(),
    ];
    for (name, content) in files {
        args.push(name.to_string());
        args.push(content.to_string());
    }
    script(LAUNCH, "burnin-launch", args)
}

/// Stream the log from byte `offset` until the phase ends.
pub fn attach(dir: &PhaseDir, offset: u64) -> RemoteCommand {
    script(
        ATTACH,
        "burnin-attach",
        vec![dir.dir.clone(), offset.to_string()],
    )
}

/// One line saying where the phase stands.
pub fn status(dir: &PhaseDir) -> RemoteCommand {
    script(STATUS, "burnin-status", vec![dir.dir.clone()])
}

/// Why a phase is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StopReason {
    /// The operator aborted it.
    Aborted,
    /// It ran past its time limit.
    Timeout,
    /// Its work was done: a drill's load, which runs until burnin stops it.
    Finished,
}

impl StopReason {
    fn word(self) -> &'static str {
        match self {
            StopReason::Aborted => "aborted",
            StopReason::Timeout => "timeout",
            StopReason::Finished => "finished",
        }
    }
}

/// TERM the phase's process group, KILL after `grace_s`.
pub fn stop(dir: &PhaseDir, grace_s: u64, why: StopReason) -> RemoteCommand {
    script(
        STOP,
        "burnin-stop",
        vec![dir.dir.clone(), grace_s.to_string(), why.word().to_string()],
    )
}

/// Where a phase stands on its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteState {
    /// No such phase directory.
    Missing,
    /// Still running.
    Running,
    /// The command exited with this status.
    Exited(i32),
    /// Gone without an exit status (killed, or the node rebooted).
    Ended,
}

/// The status script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Where it stands.
    pub state: RemoteState,
    /// Set when burnin stopped it.
    pub stopped: Option<StopReason>,
    /// Unix seconds it started at, as the node's clock says.
    pub started_s: Option<u64>,
}

/// Read the status line; `None` when it is not one.
pub fn parse_status(line: &str) -> Option<Status> {
    let mut state = None;
    let mut rc = None;
    let mut stopped = None;
    let mut started_s = None;
    for field in line.split_whitespace() {
        let (k, v) = field.split_once('=')?;
        match k {
            "state" => state = Some(v.to_string()),
            "rc" => rc = v.trim().parse::<i32>().ok(),
            "stop" => {
                stopped = match v {
                    "aborted" => Some(StopReason::Aborted),
                    "timeout" => Some(StopReason::Timeout),
                    "finished" => Some(StopReason::Finished),
                    _ => None,
                }
            }
            "started" => started_s = v.parse().ok(),
            _ => {}
        }
    }
    let state = match state?.as_str() {
        "missing" => RemoteState::Missing,
        "running" => RemoteState::Running,
        "exited" => RemoteState::Exited(rc?),
        "ended" => RemoteState::Ended,
        _ => return None,
    };
    Some(Status {
        state,
        stopped,
        started_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// Run a script through `sh` the way the remote login shell would: one command line.
    fn sh(cmd: &RemoteCommand) -> (i32, String, String) {
        let line = crate::transport::quote::command_line(&cmd.argv);
        let out = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .output()
            .expect("sh");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn tmpdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("burnin-remote-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn wait_for(mut f: impl FnMut() -> bool) {
        let t = Instant::now();
        while !f() {
            assert!(t.elapsed() < Duration::from_secs(20), "timed out");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn launch_attach_status_round_trip_with_a_hostile_command() {
        let root = tmpdir("rt");
        let dir = PhaseDir::new(root.to_str().unwrap(), "r1", "T1", "n1").unwrap();
        // Quotes, $(…), ; and a literal file: all reach the command as written.
        let command =
            r#"printf '%s\n' "a 'b' \$(echo no); c"; cat ../../../workloads/w.py; exit 3"#;
        let (rc, out, err) = sh(&launch(
            &dir,
            command,
            "",
            &[("w.py", "print('x $HOME')\n")],
        ));
        assert_eq!(rc, 0, "{out}{err}");
        assert!(out.starts_with("launched pgid "), "{out}");
        wait_for(|| root.join("r1/T1/n1/rc").exists());
        let (_, log, _) = sh(&attach(&dir, 0));
        assert_eq!(log, "a 'b' $(echo no); c\nprint('x $HOME')\n");
        let (_, tail, _) = sh(&attach(&dir, 2));
        assert_eq!(tail, "'b' $(echo no); c\nprint('x $HOME')\n");
        let (_, st, _) = sh(&status(&dir));
        let st = parse_status(st.trim()).unwrap();
        assert_eq!(st.state, RemoteState::Exited(3));
        assert_eq!(st.stopped, None);
        assert!(st.started_s.is_some());
        // The same phase directory cannot be launched twice.
        let (rc, _, err) = sh(&launch(&dir, "true", "", &[]));
        assert_eq!(rc, 91, "{err}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn nodes_on_one_host_launch_at_once_into_the_shared_workloads() {
        // Local and sim nodes (and Kubernetes phases) share this host's workloads directory:
        // their launches write the same files at the same moment and must all succeed.
        let root = tmpdir("race");
        let scripts: Vec<RemoteCommand> = (0..8)
            .map(|i| {
                let dir =
                    PhaseDir::new(root.to_str().unwrap(), "r1", "T2", &format!("n{i}")).unwrap();
                launch(
                    &dir,
                    "true",
                    "",
                    &[("gemm.py", "x = 1\n"), ("loader.py", "y\n")],
                )
            })
            .collect();
        let handles: Vec<_> = scripts
            .into_iter()
            .map(|c| std::thread::spawn(move || sh(&c)))
            .collect();
        for h in handles {
            let (rc, out, err) = h.join().expect("thread");
            assert_eq!(rc, 0, "{out}{err}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("r1/workloads/gemm.py")).unwrap(),
            "x = 1\n"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn stop_takes_the_whole_process_group_even_when_term_is_ignored() {
        let root = tmpdir("stop");
        let dir = PhaseDir::new(root.to_str().unwrap(), "r1", "T4", "n1").unwrap();
        // A child that ignores TERM, and a grandchild: both must be gone afterwards.
        let command = "trap '' TERM; (sleep 300 &) ; sleep 300";
        let (rc, out, err) = sh(&launch(&dir, command, "", &[]));
        assert_eq!(rc, 0, "{out}{err}");
        let pgid: i32 = std::fs::read_to_string(root.join("r1/T4/n1/pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let (_, st, _) = sh(&status(&dir));
        assert_eq!(parse_status(st.trim()).unwrap().state, RemoteState::Running);
        let (rc, out, _) = sh(&stop(&dir, 1, StopReason::Aborted));
        assert_eq!(rc, 0);
        assert!(
            out.contains("killed after 1 s") || out.contains("terminated"),
            "{out}"
        );
        // SAFETY: kill(2) with signal 0 only checks whether the group exists.
        wait_for(|| unsafe { libc::kill(-pgid, 0) } != 0);
        let (_, st, _) = sh(&status(&dir));
        let st = parse_status(st.trim()).unwrap();
        assert_eq!(st.state, RemoteState::Ended);
        assert_eq!(st.stopped, Some(StopReason::Aborted));
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Issue 41, case 7: a phase that writes `./pid`, `./rc` and `./log` where it runs (its
    /// working directory) leaves the runner's files alone: status says running, and stop
    /// takes its whole process group.
    #[test]
    fn a_command_writing_pid_where_it_runs_is_still_stopped() {
        let root = tmpdir("pidfile");
        let dir = PhaseDir::new(root.to_str().unwrap(), "r1", "T5", "n1").unwrap();
        let command = "echo 1 > pid; echo 0 > rc; : > log; echo working; sleep 300";
        let (rc, out, err) = sh(&launch(&dir, command, "", &[]));
        assert_eq!(rc, 0, "{out}{err}");
        wait_for(|| root.join("r1/T5/n1/work/pid").exists());
        let pgid: i32 = std::fs::read_to_string(root.join("r1/T5/n1/pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_ne!(pgid, 1);
        let (_, st, _) = sh(&status(&dir));
        assert_eq!(parse_status(st.trim()).unwrap().state, RemoteState::Running);
        let (rc, out, _) = sh(&stop(&dir, 1, StopReason::Timeout));
        assert_eq!(rc, 0, "{out}");
        // SAFETY: kill(2) with signal 0 only checks whether the group exists.
        wait_for(|| unsafe { libc::kill(-pgid, 0) } != 0);
        let (_, log, _) = sh(&attach(&dir, 0));
        assert_eq!(log, "working\n");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn names_that_could_escape_are_refused() {
        assert!(PhaseDir::new("~/x", "r", "T1", "../etc").is_none());
        assert!(PhaseDir::new("~/x", "r", "T 1", "n").is_none());
        assert!(PhaseDir::new("~/x", "r", "T1", "gpu01").is_some());
        assert_eq!(
            parse_status("state=running stop= started=5").unwrap().state,
            RemoteState::Running
        );
        assert!(parse_status("garbage").is_none());
        assert!(parse_status("state=exited rc=x").is_none());
    }
}
