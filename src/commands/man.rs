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
        super::emit(&String::from_utf8_lossy(&render(cmd)?))?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).wrap_err_with(|| format!("--out-dir {}", dir.display()))?;
    let mut pages = vec![("burnin.1".to_string(), render(cmd.clone())?)];
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

fn render(cmd: clap::Command) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .wrap_err("rendering the manual page")?;
    Ok(out)
}
