//! The console's subcommands: `burnin watch` (the nodes of the inventory), `burnin demo` (the
//! simulated cluster) and `burnin replay` (a run record), all over `console::run`.

use std::path::PathBuf;
use std::time::Duration;

use super::{fleet, load_inventory};
use color_eyre::eyre::{Result, eyre};

use crate::app::catalog::{self, Sources};
use crate::app::state::{State, Tone};
use crate::commands::cli::{LookArgs, PlayArgs, SimArgs};
use crate::config::inventory::Inventory;
use crate::console::run::{RunOptions, run_console};
use crate::sim::{Fault, FaultKind, SimCluster, SimConfig, SimSource};

/// `burnin watch` (and `burnin` alone): the console over the inventory's nodes, optionally
/// recording the run or resuming a killed one.
pub(super) async fn watch(
    config: &std::path::Path,
    ssh_config: Option<PathBuf>,
    look: &LookArgs,
    resume: Option<&std::path::Path>,
    record: bool,
) -> Result<i32> {
    let Some(inventory) = load_inventory(config) else {
        return Ok(2);
    };
    let label = format!(
        "watch: {} ({} nodes)",
        inventory.file,
        inventory.nodes.len()
    );
    let mut state = watch_state(look, label, &inventory);
    let plan = match crate::commands::run::load_plan(&inventory) {
        Ok(p) => std::sync::Arc::new(p),
        Err(e) => {
            crate::eprintln_safe!("burnin: {e}");
            return Ok(2);
        }
    };
    state.store.set_plan(&plan);
    let (baseline_path, baseline) = crate::commands::run::baseline_for(config, None)?;
    state.store.set_baseline(baseline.clone());
    let ssh = crate::transport::ssh::settings(ssh_config.clone(), &inventory);
    let mut driver = crate::console::driver::PhaseDriver::new(
        crate::phases::runner::RunContext {
            run_id: String::new(),
            attempt: 1,
            earlier: Default::default(),
            parts: Default::default(),
            confirm: None,
            plan,
            nodes: crate::commands::run::runner_nodes(&inventory, &ssh),
            baseline,
            telemetry: Some(std::sync::Arc::new(
                crate::triage::telemetry_log::TelemetryLog::with_thresholds(
                    inventory.interval,
                    inventory.triage,
                ),
            )),
        },
        inventory.clone(),
        PathBuf::from("burnin-runs"),
        baseline_path,
    );
    if let Some(dir) = resume
        && let Err(e) = driver.resume(dir)
    {
        crate::eprintln_safe!("burnin: --resume {}: {e}", dir.display());
        return Ok(2);
    }
    driver.set_record_from_start(record);
    let source = Box::new(crate::console::beside::PhasesBeside::new(
        Box::new(fleet(inventory, ssh_config)?),
        driver,
    ));
    let end = run_console(
        source,
        state,
        RunOptions {
            fps: look.fps,
            duration: None,
            headless: None,
            playback: None,
        },
    )
    .await?;
    for line in end.words() {
        crate::eprintln_safe!("{line}");
    }
    Ok(0)
}

/// The console's state over the inventory's nodes: their sample period (stale after three of
/// them) and the site's triage thresholds.
fn watch_state(look: &LookArgs, label: String, inventory: &Inventory) -> State {
    let mut state = console_state(look, label);
    state.set_period(inventory.interval);
    state.set_thresholds(inventory.triage);
    state.example_hosts = crate::config::starter::example_hosts_note(inventory);
    state
}

/// `burnin replay RUN`: the console over a run record, from `--at` seconds in.
pub(super) async fn replay(run_dir: &std::path::Path, at: u64, args: &PlayArgs) -> Result<i32> {
    let timeline = match crate::sources::replay::Timeline::load(run_dir) {
        Ok(t) => t,
        Err(e) => {
            crate::eprintln_safe!("burnin replay: {e}");
            return Ok(2);
        }
    };
    // The console shows the phases of the plan the run used (the record keeps a copy), and
    // the gate lines of the baseline it names, where that still reads as one.
    let summary = crate::record::read_summary(run_dir);
    let baseline = summary
        .as_ref()
        .ok()
        .and_then(|s| s.baseline.as_deref())
        .and_then(|p| crate::record::session::read_baseline(std::path::Path::new(p)).ok())
        .map(std::sync::Arc::new);
    let plan = summary.map(|summary| crate::record::recorded_plan(run_dir, &summary));
    let playback = crate::app::state::Playback {
        start_ms: timeline.start_ms,
        end_ms: timeline.end_ms,
        speed: args.speed,
        paused: false,
    };
    let (source, keys) =
        crate::sources::replay::ReplaySource::new(timeline, args.speed, at).controlled();
    play(
        Box::new(source),
        args,
        format!("replay: {}", run_dir.display()),
        Some(Replay {
            playback,
            keys,
            plan: plan.ok(),
        }),
        baseline,
    )
    .await
}

/// What the console needs to play a record: its place and pace, the key channel, and the plan
/// the run used (with a note when it is not the record's own copy).
struct Replay {
    playback: crate::app::state::Playback,
    keys: tokio::sync::mpsc::UnboundedSender<crate::sources::replay::PlaybackCommand>,
    plan: Option<(crate::plan::Plan, Option<String>)>,
}

/// The console over `source` until the user quits (or `--duration` wall seconds pass); the
/// status line says `label`, and the speed when it is not 1× (a replay shows its own).
async fn play(
    source: Box<dyn crate::model::Source>,
    args: &PlayArgs,
    label: String,
    replay: Option<Replay>,
    baseline: Option<std::sync::Arc<crate::plan::gates::Baseline>>,
) -> Result<i32> {
    let headless = args.headless;
    let label = if args.speed != 1.0 && replay.is_none() {
        format!("{label}, {}× speed", args.speed)
    } else {
        label
    };
    let mut state = console_state(&args.look, label);
    // A simulated cluster or a record: nothing runs on any node, so nothing to leave running.
    state.phases_on_nodes = false;
    state.store.set_baseline(baseline);
    let playback = replay.map(|r| {
        state.playback = Some(r.playback);
        if let Some((plan, note)) = r.plan {
            state.store.set_plan(&plan);
            if let Some(note) = note {
                state.say(Tone::Warn, note);
            }
        }
        r.keys
    });
    let end = run_console(
        source,
        state,
        RunOptions {
            fps: args.look.fps,
            duration: args.duration.map(Duration::from_secs),
            headless,
            playback,
        },
    )
    .await?;
    for line in end.words() {
        crate::eprintln_safe!("{line}");
    }
    Ok(0)
}

/// Build the simulator's configuration from the command line.
pub fn sim_config(args: &SimArgs) -> Result<SimConfig> {
    let mut config = SimConfig::demo(args.seed);
    if args.no_faults {
        config.faults.clear();
    } else if !args.faults.is_empty() {
        let mut kinds = Vec::new();
        for name in &args.faults {
            kinds.push(FaultKind::parse(name).map_err(|e| eyre!("--fault: {e}"))?);
        }
        config.faults = kinds.into_iter().map(Fault::scheduled).collect();
    }
    Ok(config)
}

fn console_state(look: &LookArgs, label: String) -> State {
    let cat = catalog::load(&Sources {
        config_dir: Sources::user_config_dir(),
        theme: look.theme.clone(),
        layout: look.layout.clone(),
        no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
    });
    for p in &cat.problems {
        tracing::warn!("{p}");
    }
    let mut state = State::new(cat.themes, cat.layouts, label, (80, 24));
    state.ui.theme = cat.start_theme;
    state.ui.layout = cat.start_layout;
    if let Some(first) = cat.problems.first() {
        let more = match cat.problems.len() {
            1 => String::new(),
            n => format!(" (+{} more in the log)", n - 1),
        };
        state.say(Tone::Warn, format!("{first}{more}"));
    }
    state
}

/// `burnin demo`: the console over the simulated cluster.
pub(super) async fn demo(sim: &SimArgs, args: &PlayArgs) -> Result<i32> {
    let config = sim_config(sim)?;
    let label = format!(
        "demo: simulated {}×{} B300, seed {}",
        config.nodes, config.gpus_per_node, config.seed
    );
    let baseline = std::sync::Arc::new(crate::sim::nominal_baseline(&config));
    let source = Box::new(SimSource::new(SimCluster::new(config), args.speed));
    play(source, args, label, None, Some(baseline)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_names_are_checked() {
        let args = SimArgs {
            seed: 1,
            faults: vec!["stall".into(), "nope".into()],
            no_faults: false,
        };
        let err = sim_config(&args).unwrap_err().to_string();
        assert!(err.contains("nope") && err.contains("loader-wait"), "{err}");
    }

    #[test]
    fn the_console_over_nodes_keeps_their_interval() {
        let inv = Inventory::parse(
            "burnin.toml",
            "[defaults]\nmode = \"sim\"\ninterval = \"5s\"\n[[node]]\nhost = \"n1\"\n",
        )
        .expect("inventory");
        let state = watch_state(&LookArgs::default(), "t".into(), &inv);
        assert_eq!(state.store.period.millis(), 5_000);
    }
}
