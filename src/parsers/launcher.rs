//! Launcher prefixes: MPI and batch launchers that label every line of a job's output with the
//! rank or task that printed it. They are one family, stripped once at a line's start before any
//! tool parser sees the line, and the label lets a caller keep each task's stream apart (a
//! non-MPI nccl-tests binary under `srun -l` prints one whole table per task, interleaved).
//!
//! The forms, as each launcher prints them:
//! - Open MPI `--tag-output` (and Open MPI 5's `--output tag`): `[JOB,RANK]<stdout>:` or
//!   `<stderr>:`/`<stddiag>:` right before the text; SageMaker's build writes
//!   `[1,mpirank:0,algo-1]<stdout>:`.
//! - Slurm `srun -l`/`--label`: `TASK: `, the task number right-aligned to the width of the
//!   largest task number (` 0: ` … `15: ` for 16 tasks).
//! - MPICH/Hydra and Intel MPI `-l`/`-prepend-rank`: `[RANK] `.
//! - torchrun's per-rank prefixes (`--tee`, and the `[rankN]:` PyTorch puts on errors):
//!   `[defaultN]:`, `[rankN]:`.
//!
//! A prefix is only taken when its number is a plain decimal; anything else stays part of the
//! line (a dmesg `[ 12.345]` stamp, a Megatron `[2024-05-01 10:00:00]` time are not labels).

/// Which launcher labelled a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI `--tag-output`.
    OpenMpi,
    /// Slurm `srun -l`.
    Slurm,
    /// MPICH/Hydra or Intel MPI `-l` / `-prepend-rank`.
    Hydra,
    /// torchrun's `[defaultN]:` / `[rankN]:`.
    Torchrun,
}

impl Launcher {
    /// How the prefix looks, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Launcher::OpenMpi => "Open MPI --tag-output '[1,0]<stdout>:'",
            Launcher::Slurm => "Slurm srun -l '0: '",
            Launcher::Hydra => "MPICH/Intel MPI -l '[0] '",
            Launcher::Torchrun => "torchrun '[rank0]:'",
        }
    }
}

/// A line with its launcher label taken off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labelled<'a> {
    /// The launcher and the rank or task it named, when the line had a prefix.
    pub label: Option<(Launcher, u32)>,
    /// The text after the prefix (the whole line when it had none).
    pub body: &'a str,
}

/// Digits of a rank or task number: at most 7 (a launcher with ten million tasks is not one).
fn rank_number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 7 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Take one launcher prefix off `line`, if it has one.
pub fn strip(line: &str) -> Labelled<'_> {
    let none = Labelled {
        label: None,
        body: line,
    };
    if let Some(rest) = line.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return none;
        };
        // Open MPI: [JOB,RANK]<stream>: (SageMaker's build: [1,mpirank:0,algo-1]<stream>:)
        if let Some((job, rest)) = inside.split_once(',')
            && rank_number(job).is_some()
            && let Some(rank) = rank_number(
                rest.split(',')
                    .next()
                    .unwrap_or(rest)
                    .trim_start_matches("mpirank:"),
            )
            && let Some(after) = after.strip_prefix('<')
            && let Some((stream, body)) = after.split_once(">:")
            && matches!(stream, "stdout" | "stderr" | "stddiag")
        {
            return Labelled {
                label: Some((Launcher::OpenMpi, rank)),
                body,
            };
        }
        // torchrun: [defaultN]: or [rankN]:
        for word in ["default", "rank"] {
            if let Some(n) = inside.strip_prefix(word)
                && let Some(rank) = rank_number(n)
                && let Some(body) = after.strip_prefix(':')
            {
                return Labelled {
                    label: Some((Launcher::Torchrun, rank)),
                    body,
                };
            }
        }
        // Hydra: [RANK] text (or a bare [RANK] on an empty line).
        if let Some(rank) = rank_number(inside)
            && (after.is_empty() || after.starts_with(' '))
        {
            return Labelled {
                label: Some((Launcher::Hydra, rank)),
                body: after.strip_prefix(' ').unwrap_or(after),
            };
        }
        return none;
    }
    // Slurm: optional padding, TASK, ':', then a space or the end of the line.
    let trimmed = line.trim_start_matches(' ');
    let Some((task, after)) = trimmed.split_once(':') else {
        return none;
    };
    match rank_number(task) {
        Some(rank) if after.is_empty() || after.starts_with(' ') => Labelled {
            label: Some((Launcher::Slurm, rank)),
            body: after.strip_prefix(' ').unwrap_or(after),
        },
        _ => none,
    }
}

/// The longest Open MPI tag taken out of a line's middle (`[1,mpirank:1023,algo-12]<stddiag>:`
/// is 35 bytes): a bracket further from its `]<std…>:` is no tag.
const MAX_INLINE_TAG: usize = 64;

/// A line with the Open MPI `--tag-output` tags inside it taken out. Open MPI tags every chunk
/// a rank writes, not only every line, and nccl-tests writes a row in several pieces, so a row
/// can read `   8   2   float   sum   -1[1,0]<stdout>:    85.14 …` (the tag glued to the cell
/// before it). A tag is removed with nothing in its place: it was inserted into the byte
/// stream, so what stood either side of it was adjacent (a chunk boundary can even fall inside
/// a number). Only tags of `rank` are taken out when the line's own label named one: a piece of
/// another rank's output inside the line is no part of it, and the line stays as it is.
///
/// Hydra's `-l` does the same with `[RANK]` (NVIDIA/nccl#1453: `… sum      -1[0]    1626.5 …`):
/// on a line Hydra labelled, its own `[RANK]` glued to the text before it is taken out too (one
/// after a space is a token of its own, [`is_label_token`]; NCCL's `host:pid:tid [0] NCCL INFO`
/// device marker follows a space and stays).
pub fn strip_inline(line: &str, own: Option<(Launcher, u32)>) -> std::borrow::Cow<'_, str> {
    let hydra = match own {
        Some((Launcher::Hydra, rank)) => strip_glued_hydra(line, rank),
        _ => std::borrow::Cow::Borrowed(line),
    };
    let rank = match own {
        Some((Launcher::OpenMpi, rank)) => Some(rank),
        _ => None,
    };
    match hydra {
        std::borrow::Cow::Borrowed(l) => strip_open_mpi_tags(l, rank),
        std::borrow::Cow::Owned(l) => {
            std::borrow::Cow::Owned(strip_open_mpi_tags(&l, rank).into_owned())
        }
    }
}

/// Open MPI's `[JOB,RANK]<stream>:` tags anywhere in `line` (of `rank` only, when given).
fn strip_open_mpi_tags(line: &str, rank: Option<u32>) -> std::borrow::Cow<'_, str> {
    if !line.contains("]<std") {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('[') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let mut end = from.len().min(MAX_INLINE_TAG);
        while !from.is_char_boundary(end) {
            end -= 1;
        }
        let window = &from[..end];
        match strip(window) {
            Labelled {
                label: Some((Launcher::OpenMpi, r)),
                body,
            } if rank.is_none_or(|want| want == r) => {
                rest = &from[window.len() - body.len()..];
            }
            _ => {
                out.push('[');
                rest = &from[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// `text[0]   more` → `text   more`, for Hydra's own rank only.
fn strip_glued_hydra(line: &str, rank: u32) -> std::borrow::Cow<'_, str> {
    let tag = format!("[{rank}]");
    if !line.contains(&tag) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(&tag) {
        let glued = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace());
        let after = &rest[at + tag.len()..];
        let ends = after.is_empty() || after.starts_with(char::is_whitespace);
        out.push_str(&rest[..at]);
        if !(glued && ends) {
            out.push_str(&tag);
        }
        rest = after;
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Programs a launcher starts that start the test in turn: where one begins, the launcher's
/// flags have ended.
const WRAPPERS: &[&str] = &[
    "bash",
    "sh",
    "env",
    "taskset",
    "numactl",
    "python",
    "python3",
    "nsys",
    "ncu",
    "singularity",
    "apptainer",
    "docker",
    "podman",
    "enroot",
    "timeout",
    "stdbuf",
];

/// The ranks a launcher's own command line asks for, where the output shows it (a paste often
/// starts with it): `mpirun … -np 16` (or Open MPI's synonym `-c 16`), `mpiexec -n 16`,
/// `srun --ntasks=16` / `-n 16`. Given twice, the last one counts, as the launchers' option
/// parsers keep it (nccl-tests#322: `-c 0 -np 1024` ran 1024 ranks). `None` for any other
/// line, and where the count that counts is 0 or past a million (no such job).
pub fn ranks_from_command(line: &str) -> Option<u32> {
    // A prompt (`$`, `#`) or bash's xtrace (`+ `, `++ ` nested) before the command.
    let mut words = line
        .split_whitespace()
        .skip_while(|w| *w == "$" || *w == "#" || w.chars().all(|c| c == '+'));
    let program = words.next()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    if !matches!(program, "mpirun" | "mpiexec" | "orterun" | "srun") {
        return None;
    }
    // srun's `-c` is CPUs per task; Open MPI's mpirun (mpiexec, orterun) reads `-c` as `-np`.
    let flags: &[&str] = if program == "srun" {
        &["-n", "--ntasks"]
    } else {
        &["-np", "--np", "-n", "--n", "-c"]
    };
    let count = |v: &str| {
        v.parse::<u32>()
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
    };
    // The launcher's own flags end where the program starts: after it, `-n` is nccl-tests'
    // iteration count, and a wrapper's flags are its own (`taskset -c 0-63`, `bash -c '…'`).
    let mut words = words
        .take_while(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            !(base.ends_with("_perf") || base.ends_with("_perf_mpi") || WRAPPERS.contains(&base))
        })
        .peekable();
    let mut last: Option<&str> = None;
    while let Some(w) = words.next() {
        if let Some((flag, value)) = w.split_once('=')
            && flags.contains(&flag)
        {
            last = Some(value);
        } else if flags.contains(&w) {
            last = Some(words.peek().copied().unwrap_or(""));
        }
    }
    last.and_then(count)
}

/// Tokens a launcher put in the middle of a line, where a tool wrote one row with several
/// writes and the launcher labelled each write (seen with Hydra's `[0]` in NVIDIA/nccl#1453).
pub fn is_label_token(token: &str) -> bool {
    let labelled = strip(token);
    labelled.label.is_some() && labelled.body.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_launcher_form_is_taken_off_once() {
        let cases = [
            (
                "[1,0]<stdout>:#       size",
                Some((Launcher::OpenMpi, 0)),
                "#       size",
            ),
            (
                "[1,12]<stderr>: warn",
                Some((Launcher::OpenMpi, 12)),
                " warn",
            ),
            (
                "[1,mpirank:3,algo-1]<stdout>:#015Epoch 0",
                Some((Launcher::OpenMpi, 3)),
                "#015Epoch 0",
            ),
            (" 0: # nThread 1", Some((Launcher::Slurm, 0)), "# nThread 1"),
            ("15:     8    2", Some((Launcher::Slurm, 15)), "    8    2"),
            ("3:", Some((Launcher::Slurm, 3)), ""),
            (
                "[0] # Using devices",
                Some((Launcher::Hydra, 0)),
                "# Using devices",
            ),
            (
                "[rank3]:Traceback",
                Some((Launcher::Torchrun, 3)),
                "Traceback",
            ),
            ("[default0]:step 1", Some((Launcher::Torchrun, 0)), "step 1"),
        ];
        for (line, label, body) in cases {
            let l = strip(line);
            assert_eq!(l.label, label, "{line:?}");
            assert_eq!(l.body, body, "{line:?}");
        }
    }

    #[test]
    fn lines_that_only_look_alike_keep_their_text() {
        for line in [
            "[ 1234.567890] NVRM: Xid (PCI:0000:1b:00): 79",
            " [2024-05-01 10:00:00] iteration 10/100",
            "0000:1b:00.0 0",
            "        8             2     float     sum      -1",
            "gpu01:1234:1234 [0] NCCL INFO Bootstrap",
            "[1,0]<stdin>: x",
            "12345678: too many digits",
            "NCCL version 2.21.5+cuda12.4",
            "2: x",
        ] {
            let l = strip(line);
            if line == "2: x" {
                assert_eq!(l.label, Some((Launcher::Slurm, 2)));
            } else {
                assert_eq!(l.label, None, "{line:?}");
                assert_eq!(l.body, line);
            }
        }
    }

    #[test]
    fn label_tokens_in_mid_row() {
        assert!(is_label_token("[0]"));
        assert!(is_label_token("0:"));
        assert!(is_label_token("[1,0]<stdout>:"));
        assert!(!is_label_token("0.00"));
        assert!(!is_label_token("N/A"));
        assert!(!is_label_token("[0]x"));
    }

    /// The row Open MPI tagged in pieces (issue 43's class 1): the tags glued to the cells
    /// before them go, and nothing else does.
    #[test]
    fn tags_inside_a_row_are_taken_out() {
        let row = "       8             2     float     sum      -1[1,0]<stdout>:    85.14    0.00    0.00      0[1,0]<stdout>:    62.82    0.00    0.00      0";
        assert_eq!(
            strip_inline(row, Some((Launcher::OpenMpi, 0))),
            "       8             2     float     sum      -1    85.14    0.00    0.00      0    62.82    0.00    0.00      0"
        );
        assert_eq!(strip_inline("85.1[1,0]<stdout>:4", None), "85.14");
        // Another rank's piece inside rank 0's line: not rank 0's row.
        let mixed = "   8   2   float   sum   -1[1,3]<stdout>:    85.14";
        assert_eq!(strip_inline(mixed, Some((Launcher::OpenMpi, 0))), mixed);
        // Hydra's `[0]` glued to the cell before it (NVIDIA/nccl#1453), and NCCL's own `[0]`
        // device marker after a space, kept.
        let hydra = "     1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0[0]    2302.3";
        assert_eq!(
            strip_inline(hydra, Some((Launcher::Hydra, 0))),
            "     1048576        262144     float     sum      -1    1626.5    0.64    1.24      0    2302.3"
        );
        let info = "h100clust-worker-1:497888:497888 [0] NCCL INFO 4096 Bytes";
        assert_eq!(strip_inline(info, Some((Launcher::Hydra, 0))), info);
        for keep in [
            "[ 12.3] x",
            "a [1,0]<stdin>: b",
            "[[[",
            "x ]<stdout>: y",
            "é[1,0]<std",
        ] {
            assert_eq!(strip_inline(keep, None), keep);
        }
    }

    #[test]
    fn a_launchers_command_line_says_how_many_ranks() {
        // nccl-tests#165's paste begins with its mpirun line.
        assert_eq!(
            ranks_from_command(
                "mpirun  -mca coll_hcoll_enable 0   -H 10.34.0.37:2,10.34.0.38:2 -np 2  -x UCX_NET_DEVICES=eth0    /opt/nccl-tests/build/all_reduce_perf  -b 8 -e 128M -f 2 -g 1"
            ),
            Some(2)
        );
        assert_eq!(ranks_from_command("$ /usr/bin/mpiexec -n 16 ./x"), Some(16));
        assert_eq!(ranks_from_command("srun -N 2 --ntasks=16 ./x"), Some(16));
        assert_eq!(ranks_from_command("srun -N 2 ./x"), None, "-N is nodes");
        assert_eq!(ranks_from_command("echo mpirun -np 2"), None);
        assert_eq!(ranks_from_command("mpirun -np 99999999 x"), None);
        // nccl-tests#322's own command line: Open MPI keeps the last of `-c 0 -np 1024`.
        assert_eq!(
            ranks_from_command(
                "mpirun --allow-run-as-root --mca plm_rsh_args \"-p 22\"  -c 0 -np 1024 -x NCCL_DEBUG=INFO --prefix /home/openmpi /home/nccl-tests/build/all_reduce_perf -b 1g -e 32g -f 2 -g 1"
            ),
            Some(1024)
        );
        assert_eq!(ranks_from_command("mpirun -c 8 ./x"), Some(8), "-c is -np");
        assert_eq!(ranks_from_command("mpirun -np 8 -c 0 ./x"), None);
        assert_eq!(
            ranks_from_command("srun -c 8 -n 2 ./x"),
            Some(2),
            "srun's -c is CPUs"
        );
        assert_eq!(ranks_from_command("mpirun -np"), None);
        assert_eq!(
            ranks_from_command("+ mpirun -np 16 ./x"),
            Some(16),
            "set -x"
        );
        assert_eq!(ranks_from_command("++ srun -n 8 ./x"), Some(8));
        // A wrapper's own -c is not the launcher's.
        assert_eq!(
            ranks_from_command("mpirun -np 16 taskset -c 0-63 ./all_reduce_perf -b 8"),
            Some(16)
        );
        assert_eq!(
            ranks_from_command("mpirun -np 16 taskset -c 8 ./all_reduce_perf"),
            Some(16)
        );
        assert_eq!(
            ranks_from_command("mpirun -np 16 bash -c './all_reduce_perf -b 8'"),
            Some(16)
        );
        assert_eq!(
            ranks_from_command("mpirun -np 4 /usr/bin/numactl -C 0-7 all_reduce_perf"),
            Some(4)
        );
        assert_eq!(
            ranks_from_command("mpirun --hostfile h ./all_reduce_perf -n 50"),
            None,
            "after the program, -n is nccl-tests' iterations"
        );
    }

    proptest! {
        #[test]
        fn inline_stripping_never_panics_and_only_shortens(line in ".{0,120}") {
            let out = strip_inline(&line, None);
            prop_assert!(out.len() <= line.len());
        }

        #[test]
        fn stripping_never_panics_and_keeps_a_suffix(line in ".{0,80}") {
            let l = strip(&line);
            prop_assert!(line.ends_with(l.body));
        }
    }
}
