//! `burnin man`: the manual page, rendered from the same clap definitions as `--help`, so the
//! two never disagree.

use std::path::Path;

use clap::CommandFactory;
use color_eyre::eyre::{Result, WrapErr};

use crate::commands::cli::Cli;

/// The top page on stdout; with `out_dir`, `burnin.1` and one `burnin-SUBCOMMAND.1` per
/// subcommand written there (what a package installs under `man1/`).
pub fn man(out_dir: Option<&Path>) -> Result<i32> {
    let cmd = Cli::command();
    let Some(dir) = out_dir else {
        super::emit(&String::from_utf8_lossy(&top_page(cmd)?))?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).wrap_err_with(|| format!("--out-dir {}", dir.display()))?;
    let mut pages = vec![("burnin.1".to_string(), top_page(cmd.clone())?)];
    for sub in cmd.get_subcommands() {
        // A page of its own is named as man names it: `burnin-run(1)`.
        let name = format!("burnin-{}", sub.get_name());
        let page = sub.clone().name(name.clone()).display_name(name.clone());
        pages.push((format!("{name}.1"), render(page)?));
    }
    for (file, text) in &pages {
        let path = dir.join(file);
        std::fs::write(&path, text).wrap_err_with(|| format!("{}", path.display()))?;
    }
    crate::eprintln_safe!("burnin man: {} pages in {}", pages.len(), dir.display());
    Ok(0)
}

/// The top page: clap's sections, then what clap cannot know (the console's keys, the files
/// burnin reads and writes, the exit statuses).
fn top_page(cmd: clap::Command) -> Result<Vec<u8>> {
    let mut page = render(cmd)?;
    page.extend_from_slice(extra_sections().as_bytes());
    Ok(page)
}

/// KEYS (from the console's one key table), FILES and EXIT STATUS, as roff.
fn extra_sections() -> String {
    use std::fmt::Write;
    // roff: a leading dot or quote starts a request; a backslash escapes.
    let esc = |s: &str| {
        let s = s.replace('\\', "\\e").replace('-', "\\-");
        if s.starts_with(['.', '\'']) {
            format!("\\&{s}")
        } else {
            s
        }
    };
    let mut o = String::from(".SH KEYS\nIn the console (burnin watch, demo, replay):\n");
    for b in crate::app::keymap::BINDINGS {
        let keys: Vec<String> = b.keys.iter().map(|k| k.label()).collect();
        let _ = writeln!(o, ".TP\n\\fB{}\\fR\n{}", esc(&keys.join(" ")), esc(b.help));
    }
    o.push_str(".SH FILES\n");
    for (file, what) in FILES {
        let _ = writeln!(o, ".TP\n\\fI{}\\fR\n{}", esc(file), esc(what));
    }
    o.push_str(".SH EXIT STATUS\n");
    for (cmd, what) in EXIT_STATUS {
        let _ = writeln!(o, ".TP\n\\fB{}\\fR\n{}", esc(cmd), esc(what));
    }
    o
}

/// The files burnin reads and writes.
const FILES: &[(&str, &str)] = &[
    (
        "burnin.toml",
        "the inventory: nodes, how to reach them, the sample interval, triage thresholds (-c)",
    ),
    (
        "plan.toml",
        "the plan: phases, their commands and gates (the inventory's plan = \"...\"; the shipped plan otherwise)",
    ),
    (
        "burnin-baseline.json",
        "the baseline the gates compare against, beside burnin.toml (burnin baseline save RUN)",
    ),
    (
        "burnin-runs/RUN/",
        "a run's record: events.jsonl, summary.json, logs/PHASE/NODE.log, telemetry/, plan.toml, report.md and report.html",
    ),
    (
        "~/.config/burnin/themes/, ~/.config/burnin/layouts/",
        "the site's own themes and layouts",
    ),
    (
        "~/.cache/burnin/burnin.log",
        "the console's log (--log-file, BURNIN_LOG)",
    ),
    (
        "~/.cache/burnin/bin/burnin",
        "on each node: the agent burnin deploy copies",
    ),
];

/// Each command's exit statuses.
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "run",
        "0: every phase passed or warned; 1: a phase failed, timed out or was aborted; 2: it could not run (inventory, plan, record); 130: interrupted",
    ),
    (
        "status",
        "0: every node answered with every GPU it should have; 1: a node unreachable, short of GPUs, or a GPU lost; 2: no inventory",
    ),
    (
        "triage",
        "0: nothing above info; 1: a warning; 2: a critical finding; 3: could not run",
    ),
    (
        "doctor",
        "0: every phase that is set up can run on every node; 1: something is missing; 2: could not look",
    ),
    (
        "localize",
        "0: nothing named; 1: a node or link named; 2: it could not run or could not judge (no peers level, no partner, interrupted)",
    ),
    (
        "parse",
        "0: every file read; 1: a phase would FAIL or time out on a file; 2: a file could not be read or understood",
    ),
    (
        "other commands",
        "0: done; 1: an error, said in one line on stderr; 2: a usage error",
    ),
];

fn render(cmd: clap::Command) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .wrap_err("rendering the manual page")?;
    Ok(out)
}
