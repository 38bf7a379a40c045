//! `burnin init` (a starter burnin.toml) and `burnin workload` (the shipped workload files).

use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr};

use crate::commands::cli::WorkloadAction;

/// `burnin init`: write the starter burnin.toml (refusing to overwrite without `--force`).
pub(super) fn init(path: &std::path::Path, force: bool) -> Result<i32> {
    let plan = path
        .parent()
        .map_or_else(PathBuf::new, std::path::Path::to_path_buf)
        .join("plan.toml");
    for p in [path, plan.as_path()] {
        if p.exists() && !force {
            crate::eprintln_safe!("burnin init: {} exists; --force overwrites it", p.display());
            return Ok(1);
        }
    }
    std::fs::write(path, crate::config::inventory::STARTER)
        .wrap_err_with(|| format!("writing {}", path.display()))?;
    std::fs::write(&plan, crate::plan::DEFAULT_PLAN_TEXT)
        .wrap_err_with(|| format!("writing {}", plan.display()))?;
    crate::println_safe!(
        "wrote {} and {}: list your nodes under [[node]], then `burnin status`; the plan's commands and gates are yours to edit",
        path.display(),
        plan.display()
    );
    Ok(0)
}

/// `burnin workload list|show|export`: the workload files shipped inside the binary.
pub(super) fn workload(action: WorkloadAction) -> Result<i32> {
    match action {
        WorkloadAction::List => {
            for w in crate::workloads::ALL {
                crate::println_safe!("{:<16} {:<20} {}", w.name, w.file, w.about);
            }
            Ok(0)
        }
        WorkloadAction::Print { name } => match crate::workloads::find(&name) {
            Some(w) => {
                crate::print_safe!("{}", w.text);
                Ok(0)
            }
            None => {
                let names: Vec<&str> = crate::workloads::ALL.iter().map(|w| w.name).collect();
                crate::eprintln_safe!(
                    "burnin workload: no workload {name:?}; shipped: {}",
                    names.join(", ")
                );
                Ok(2)
            }
        },
    }
}
