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

    proptest! {
        #[test]
        fn stripping_never_panics_and_keeps_a_suffix(line in ".{0,80}") {
            let l = strip(&line);
            prop_assert!(line.ends_with(l.body));
        }
    }
}
