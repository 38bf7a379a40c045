//! What each subcommand does. `main.rs` parses and dispatches here.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod deploy;
pub mod doctor;
pub mod init;
pub mod localize;
pub mod localize_bench;
pub mod look;
pub mod man;
pub mod parse;
pub mod run;
pub mod status;
pub mod triage;
pub mod watch;

use std::path::PathBuf;

use clap::CommandFactory;
use color_eyre::eyre::{Result, WrapErr, eyre};

use crate::commands::cli::{BaselineAction, Cli, Command, LookArgs, ProbeKind};
use crate::config::inventory::Inventory;
use crate::sources::fleet::FleetSource;

/// Run the parsed command line; returns the process exit code.
pub async fn dispatch(cli: Cli) -> Result<i32> {
    let Cli {
        config,
        ssh_config,
        command,
        ..
    } = cli;
    match command {
        Some(Command::Demo { sim, play }) => watch::demo(&sim, &play).await,
        Some(Command::Status {
            json,
            demo: true,
            at,
            sim,
            ..
        }) => status::status_demo(&sim, at, json),
        Some(Command::Status {
            demo: false,
            json,
            wait,
            ..
        }) => status::status_nodes(&config, ssh_config, json, wait).await,
        None => {
            watch::watch(
                &config,
                ssh_config,
                &LookArgs {
                    fps: 20,
                    ..LookArgs::default()
                },
                None,
                false,
            )
            .await
        }
        Some(Command::Watch {
            look,
            resume,
            record,
        }) => watch::watch(&config, ssh_config, &look, resume.as_deref(), record).await,
        Some(Command::Localize {
            phase,
            nodes,
            screen,
            peers_pct,
            json,
            demo,
            sim_nodes,
            faults,
            seed,
            runs_dir,
            run,
        }) => {
            localize::localize(localize::LocalizeArgs {
                runs_dir,
                run,
                config,
                ssh_config,
                phase,
                nodes,
                screen,
                peers_pct,
                json,
                demo: demo.then_some(localize::DemoFabric {
                    nodes: sim_nodes,
                    faults,
                    seed,
                }),
            })
            .await
        }
        Some(Command::Doctor {
            json,
            runs_dir,
            baseline,
        }) => {
            doctor::doctor(doctor::DoctorArgs {
                config,
                ssh_config,
                json,
                runs_dir,
                baseline,
            })
            .await
        }
        Some(Command::Triage {
            json,
            demo: true,
            at,
            sim,
            ..
        }) => triage::triage_demo(&sim, at, json),
        Some(Command::Triage {
            json,
            watch_for,
            demo: false,
            ..
        }) => triage::triage_nodes(&config, ssh_config, json, watch_for).await,
        Some(Command::Agent(args)) => {
            // The agent is a plain blocking loop; keep it off the async runtime's threads.
            Ok(tokio::task::spawn_blocking(move || crate::agent::main(&args)).await?)
        }
        Some(Command::Deploy {
            dry_run,
            agent_binaries,
        }) => deploy::deploy(&config, ssh_config, dry_run, &agent_binaries).await,
        Some(Command::Run {
            demo: true,
            json,
            runs_dir,
            speed,
            sim,
            ..
        }) => {
            demo::run(demo::DemoRunArgs {
                config: watch::sim_config(&sim)?,
                runs_dir,
                speed,
                json,
            })
            .await
        }
        Some(Command::Run {
            only,
            json,
            runs_dir,
            baseline,
            verbose,
            no_telemetry,
            resume,
            ..
        }) => {
            run::run(run::RunArgs {
                config,
                ssh_config,
                only,
                json,
                runs_dir,
                baseline,
                verbose,
                telemetry: !no_telemetry,
                resume,
            })
            .await
        }
        Some(Command::Probe {
            kind: ProbeKind::S3(args),
        }) => crate::probes::s3::cli::run(&args).await,
        Some(Command::Parse {
            args,
            json,
            plan,
            baseline,
            gpus,
            fields,
            save_baseline,
            hardware,
        }) => parse::parse_files(
            args,
            json,
            parse::Given {
                plan,
                baseline,
                gpus,
                fields,
                save_baseline,
                hardware,
            },
        ),
        Some(Command::Bench { what }) => bench_command(what),
        Some(Command::Report { run_dir }) => Ok(report(&run_dir)),
        Some(Command::Replay { run_dir, at, play }) => watch::replay(&run_dir, at, &play).await,
        Some(Command::Baseline {
            action:
                BaselineAction::Save {
                    run_dir,
                    to,
                    fleet,
                    drop_pct,
                },
        }) => {
            let to = to.unwrap_or_else(|| run::default_baseline_path(&config));
            if fleet {
                run::baseline_save_fleet(&run_dir, &to, drop_pct)
            } else {
                run::baseline_save(&run_dir, &to)
            }
        }
        Some(Command::Workload { action }) => init::workload(action),
        Some(Command::Init { force }) => init::init(&config, force),
        Some(Command::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "burnin", &mut out);
            emit(&String::from_utf8_lossy(&out))?;
            Ok(0)
        }
        Some(Command::Man { out_dir }) => man::man(out_dir.as_deref()),
    }
}

/// `burnin bench …`: each bench prints its figures.
fn bench_command(what: cli::BenchKind) -> Result<i32> {
    match what {
        cli::BenchKind::Localize { nodes, bad, seeds } => {
            let nodes = if nodes.is_empty() {
                vec![16, 96, 232, 1024]
            } else {
                nodes
            };
            let bad = if bad.is_empty() {
                vec![0, 1, 2, 5]
            } else {
                bad
            };
            crate::print_safe!("{}", localize_bench::table(&nodes, &bad, seeds as u64));
            Ok(0)
        }
        cli::BenchKind::Record {
            hours,
            nodes,
            gpus,
            per_second,
            keep,
        } => bench::record(hours, nodes, gpus, per_second, keep.as_deref())
            .map(|_| 0)
            .map_err(|e| eyre!("burnin bench record: {e}")),
        cli::BenchKind::Console { hours, nodes, gpus } => {
            bench::console(hours, nodes, gpus, |line| crate::println_safe!("{line}"));
            Ok(0)
        }
        cli::BenchKind::Ingest {
            nodes,
            gpus,
            seconds,
            rounds,
        } => {
            let figures = bench::measure(nodes, gpus, seconds, rounds);
            crate::print_safe!("{}", figures.report(nodes, gpus, seconds));
            Ok(0)
        }
        cli::BenchKind::Agent {
            slots,
            interval,
            frames,
            split,
        } => {
            let measure = if split {
                crate::agent::Measure::Split
            } else {
                crate::agent::Measure::Totals
            };
            crate::agent::bench(slots, interval, frames, measure)
                .map(|report| {
                    crate::print_safe!("{report}");
                    0
                })
                .map_err(|e| eyre!("burnin bench agent: {e}"))
        }
    }
}

/// `burnin report RUN_DIR`: the report's two files, or why not (exit 2).
fn report(run_dir: &std::path::Path) -> i32 {
    match crate::report::write(run_dir) {
        Ok(files) => {
            crate::println_safe!("{}", files.markdown.display());
            crate::println_safe!("{}", files.html.display());
            if !files.complete {
                crate::eprintln_safe!(
                    "burnin report: {} did not finish: reported as INCOMPLETE",
                    run_dir.display()
                );
            }
            0
        }
        Err(e) => {
            crate::eprintln_safe!("burnin report: {e}");
            2
        }
    }
}

fn load_inventory(path: &std::path::Path) -> Option<Inventory> {
    match Inventory::load(path) {
        Ok(inv) => Some(inv),
        Err(e) => {
            crate::eprintln_safe!("burnin: {e}");
            None
        }
    }
}

fn fleet(inventory: Inventory, ssh_config: Option<PathBuf>) -> Result<FleetSource> {
    let ssh = crate::transport::ssh::settings(ssh_config, &inventory);
    let exe = std::env::current_exe()
        .wrap_err("cannot find this binary's path (local/sim nodes run it)")?;
    Ok(FleetSource::new(inventory, ssh, exe))
}

/// Print to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn emit(text: &str) -> Result<()> {
    // The status table and JSON quote what nodes said: nothing in it may reach the terminal
    // as a control sequence (JSON escapes C0 only, not DEL or C1).
    Ok(crate::model::stdout::try_out(
        &crate::model::terminal_safe(text),
    )?)
}

/// Where diagnostics go when `--log-file` is not given.
pub fn default_log_file() -> Option<PathBuf> {
    crate::config::cache_dir().map(|d| d.join("burnin.log"))
}
