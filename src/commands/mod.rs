//! What each subcommand does. `main.rs` parses and dispatches here.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod deploy;
pub mod parse;
pub mod run;

use std::path::{Path, PathBuf};
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr, eyre};
use serde::Serialize;

use crate::app::catalog::{self, Sources};
use crate::app::state::{State, Tone};
use crate::commands::cli::{
    BaselineAction, Cli, Command, LookArgs, PlayArgs, ProbeKind, SimArgs, WorkloadAction,
};
use crate::config::inventory::Inventory;
use crate::console::run::{RunOptions, run_console};
use crate::model::{GpuSample, NodeLink, UnixMillis};
use crate::model::{Source, SourceEvent};
use crate::sources::fleet::FleetSource;
use crate::sources::sim::{Fault, FaultKind, SIM_EPOCH_MS, SimCluster, SimConfig, SimSource};
use crate::store::ClusterStore;
use crate::triage::{Finding, Severity, Triage};

/// Version of the `status --json` document.
pub const STATUS_SCHEMA: u32 = 1;

/// Run the parsed command line; returns the process exit code.
/// `burnin parse`: the kind (when the first argument names one that is not a file), the plan
/// and baseline, then every file.
fn parse_files(
    args: Vec<String>,
    json: bool,
    plan: Option<PathBuf>,
    baseline: Option<PathBuf>,
    gpus: u32,
    fields: Vec<String>,
    save_baseline: Option<PathBuf>,
) -> Result<i32> {
    use crate::commands::parse::{Kind, Options};
    let mut args = args.into_iter();
    let first = args.next().unwrap_or_default();
    let (kind, files): (Option<Kind>, Vec<PathBuf>) =
        match Kind::from_name(&first).filter(|_| !Path::new(&first).exists()) {
            Some(k) => (Some(k), args.map(PathBuf::from).collect()),
            None => (
                None,
                std::iter::once(first)
                    .chain(args)
                    .map(PathBuf::from)
                    .collect(),
            ),
        };
    if files.is_empty() {
        crate::eprintln_safe!("burnin parse: no file after the kind");
        return Ok(2);
    }
    let plan = match plan {
        Some(p) => match crate::plan::Plan::load(&p) {
            Ok(plan) => plan,
            Err(e) => {
                crate::eprintln_safe!("burnin parse: {e}");
                return Ok(2);
            }
        },
        None => crate::plan::default_plan().clone(),
    };
    let baseline = match baseline {
        Some(p) => match crate::record::session::read_baseline(&p) {
            Ok(b) => Some(b),
            Err(e) => {
                crate::eprintln_safe!("burnin parse: {e}");
                return Ok(2);
            }
        },
        None => None,
    };
    let opts = Options {
        plan,
        baseline,
        gpus,
        smi_fields: (!fields.is_empty()).then_some(fields),
    };
    Ok(crate::commands::parse::run(
        &files,
        kind,
        &opts,
        json,
        save_baseline.as_deref(),
    ))
}

pub async fn dispatch(cli: Cli) -> Result<i32> {
    let Cli {
        config,
        ssh_config,
        command,
        ..
    } = cli;
    match command {
        Some(Command::Demo { sim, play }) => demo(&sim, &play).await,
        Some(Command::Status {
            json,
            demo: true,
            at,
            sim,
            ..
        }) => status_demo(&sim, at, json),
        Some(Command::Status {
            demo: false,
            json,
            wait,
            ..
        }) => status_nodes(&config, ssh_config, json, wait).await,
        None => {
            watch(
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
        }) => watch(&config, ssh_config, &look, resume.as_deref(), record).await,
        Some(Command::Triage { json, watch_for }) => {
            triage_nodes(&config, ssh_config, json, watch_for).await
        }
        Some(Command::Agent(args)) => {
            // The agent is a plain blocking loop; keep it off the async runtime's threads.
            Ok(tokio::task::spawn_blocking(move || crate::agent::main(&args)).await?)
        }
        Some(Command::Deploy { dry_run }) => {
            crate::commands::deploy::deploy(&config, ssh_config, dry_run).await
        }
        Some(Command::Run {
            demo: true,
            json,
            runs_dir,
            speed,
            sim,
            ..
        }) => {
            crate::commands::demo::run(crate::commands::demo::DemoRunArgs {
                config: sim_config(&sim)?,
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
            crate::commands::run::run(crate::commands::run::RunArgs {
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
        }) => parse_files(args, json, plan, baseline, gpus, fields, save_baseline),
        Some(Command::Bench {
            what:
                crate::commands::cli::BenchKind::Record {
                    hours,
                    nodes,
                    gpus,
                    per_second,
                    keep,
                },
        }) => crate::commands::bench::record(hours, nodes, gpus, per_second, keep.as_deref())
            .map(|_| 0)
            .map_err(|e| eyre!("burnin bench record: {e}")),
        Some(Command::Bench {
            what:
                crate::commands::cli::BenchKind::Ingest {
                    nodes,
                    gpus,
                    seconds,
                    rounds,
                },
        }) => {
            let figures = crate::commands::bench::measure(nodes, gpus, seconds, rounds);
            crate::print_safe!("{}", figures.report(nodes, gpus, seconds));
            Ok(0)
        }
        Some(Command::Bench {
            what:
                crate::commands::cli::BenchKind::Agent {
                    slots,
                    interval,
                    frames,
                    split,
                },
        }) => {
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
        Some(Command::Report { run_dir }) => match crate::report::write(&run_dir) {
            Ok(files) => {
                crate::println_safe!("{}", files.markdown.display());
                crate::println_safe!("{}", files.html.display());
                if !files.complete {
                    crate::eprintln_safe!(
                        "burnin report: {} did not finish: reported as INCOMPLETE",
                        run_dir.display()
                    );
                }
                Ok(0)
            }
            Err(e) => {
                crate::eprintln_safe!("burnin report: {e}");
                Ok(2)
            }
        },
        Some(Command::Replay { run_dir, at, play }) => replay(&run_dir, at, &play).await,
        Some(Command::Baseline {
            action: BaselineAction::Save { run_dir, to },
        }) => {
            let to = to.unwrap_or_else(|| crate::commands::run::default_baseline_path(&config));
            crate::commands::run::baseline_save(&run_dir, &to)
        }
        Some(Command::Workload { action }) => workload(action),
        Some(Command::Init { force }) => init(&config, force),
    }
}

fn init(path: &std::path::Path, force: bool) -> Result<i32> {
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

fn workload(action: WorkloadAction) -> Result<i32> {
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

async fn watch(
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
    let ssh = crate::transport::ssh::settings(ssh_config.clone(), &inventory);
    let mut driver = crate::console::driver::PhaseDriver::new(
        crate::phases::runner::RunContext {
            run_id: String::new(),
            attempt: 1,
            earlier: Default::default(),
            confirm: None,
            plan,
            nodes: crate::commands::run::runner_nodes(&inventory, &ssh),
            baseline,
            telemetry: Some(std::sync::Arc::new(
                crate::triage::telemetry_log::TelemetryLog::with_thresholds(
                    inventory.interval.as_millis() as u64,
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
    let source = Box::new(fleet(inventory, ssh_config)?.with_phases(driver));
    run_console(
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
    Ok(0)
}

/// The console's state over the inventory's nodes: their sample period (stale after three of
/// them) and the site's triage thresholds.
fn watch_state(look: &LookArgs, label: String, inventory: &Inventory) -> State {
    let mut state = console_state(look, label);
    state.set_period(inventory.interval.as_millis() as u64);
    state.set_thresholds(inventory.triage);
    state
}

/// Connect to every node, wait until each has answered (a frame, or a failure),
/// and return the store as it stands.
pub async fn snapshot_nodes(
    inventory: &Inventory,
    ssh_config: Option<PathBuf>,
    wait: Option<Duration>,
) -> Result<ClusterStore> {
    let wait = wait.unwrap_or(inventory.connect_timeout + inventory.interval * 3);
    let expected: std::collections::HashSet<&str> =
        inventory.nodes.iter().map(|n| n.name.as_str()).collect();
    // A snapshot takes each node's first frame as its answer: history would answer first.
    let source = Box::new(fleet(inventory.clone(), ssh_config)?.without_history());
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let (_cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));
    let mut store = ClusterStore::with_period(inventory.interval.as_millis() as u64);
    // A node has answered when its first frame came, or its first attempt failed.
    let mut answered: std::collections::HashSet<String> = std::collections::HashSet::new();
    let deadline = tokio::time::Instant::now() + wait;
    while answered.len() < expected.len() && tokio::time::Instant::now() < deadline {
        let ev = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(ev)) => ev,
            _ => break,
        };
        match &ev {
            // A frame is the node's answer, whatever GPU count it carries (fewer is a finding).
            SourceEvent::Frame(f) => {
                answered.insert(f.node.clone());
            }
            SourceEvent::Link {
                node,
                link: NodeLink::Unreachable(_),
                ..
            } => {
                answered.insert(node.clone());
            }
            _ => {}
        }
        store.ingest(ev);
    }
    task.abort();
    close_snapshot(&mut store, inventory, wait);
    Ok(store)
}

/// Ends a timed look: nodes never heard from are listed as unreachable (so the report says so
/// instead of leaving them out), and the store's clock is now.
fn close_snapshot(store: &mut ClusterStore, inventory: &Inventory, waited: Duration) {
    for n in &inventory.nodes {
        // A node that sent no telemetry frame in the window is no healthy node, whatever it
        // said instead (a hello, garbage, one endless line): it cannot be judged, so it is
        // unreachable with what it did send.
        let why = match store.node(&n.name) {
            None => Some(format!("no answer within {} s", waited.as_secs())),
            Some(v) if v.last_frame_ms.is_none() && !matches!(v.link, NodeLink::Unreachable(_)) => {
                let mut said = Vec::new();
                if v.hello.is_some() {
                    said.push("a hello".to_string());
                }
                if v.garbled_lines > 0 {
                    said.push(format!("{} line(s) that are no frame", v.garbled_lines));
                }
                if let Some(note) = &v.note {
                    said.push(format!("\"{}\"", crate::model::fit(note, 120)));
                }
                Some(format!(
                    "no telemetry frame within {} s{}",
                    waited.as_secs(),
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(" (it sent {})", said.join(", "))
                    }
                ))
            }
            Some(_) => None,
        };
        if let Some(why) = why {
            store.ingest(SourceEvent::Link {
                node: n.name.clone(),
                at_ms: store.now_ms,
                link: NodeLink::Unreachable(why),
            });
        }
    }
    store.now_ms = store.now_ms.max(crate::sources::fleet::now_ms());
}

/// Exit code of `burnin triage` when it could not look (no inventory, no source).
pub const TRIAGE_CANNOT_RUN: i32 = 3;

/// `burnin triage`: every node's stream for `watch_for`, triage judged each period as the
/// console does (its rules need windows of samples, and their `since` needs the history), the
/// findings at the end printed, the exit code from the worst of them.
async fn triage_nodes(
    config: &std::path::Path,
    ssh_config: Option<PathBuf>,
    json: bool,
    watch_for: Option<Duration>,
) -> Result<i32> {
    let Some(inventory) = load_inventory(config) else {
        return Ok(TRIAGE_CANNOT_RUN);
    };
    let watch_for = watch_for.unwrap_or(
        Duration::from_millis(inventory.triage.stall_window_ms)
            + inventory.connect_timeout
            + inventory.interval * 3,
    );
    let source = match fleet(inventory.clone(), ssh_config) {
        Ok(s) => Box::new(s),
        Err(e) => {
            crate::eprintln_safe!("burnin triage: {e}");
            return Ok(TRIAGE_CANNOT_RUN);
        }
    };
    if !json {
        crate::eprintln_safe!(
            "burnin triage: watching {} node(s) for {} s",
            inventory.nodes.len(),
            watch_for.as_secs()
        );
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let (_cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(source.run(tx, cmd_rx));
    let mut store = ClusterStore::with_period(inventory.interval.as_millis() as u64);
    let mut triage = Triage::with_thresholds(inventory.triage);
    let deadline = tokio::time::Instant::now() + watch_for;
    // The deadline is checked on every event too: a node flooding its stream keeps `recv`
    // ready, and a timeout only fires while it waits.
    while tokio::time::Instant::now() < deadline
        && let Ok(Some(ev)) = tokio::time::timeout_at(deadline, rx.recv()).await
    {
        let clock = matches!(ev, SourceEvent::Clock { .. });
        store.ingest(ev);
        if clock {
            // Judged every period, as the console does: the rules keep their `since`.
            let _ = triage.evaluate(&store);
        }
    }
    task.abort();
    close_snapshot(&mut store, &inventory, watch_for);
    let findings = triage.evaluate(&store);
    let code = triage_exit_code(&findings);
    let doc = status_doc(
        &store,
        findings,
        format!("{} ({} nodes)", inventory.file, inventory.nodes.len()),
    );
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&findings_table(&doc.findings))?;
    }
    Ok(code)
}

/// 0: nothing above info; 1: the worst is a warning; 2: something critical.
pub fn triage_exit_code(findings: &[Finding]) -> i32 {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Crit) => 2,
        Some(Severity::Warn) => 1,
        _ => 0,
    }
}

/// The findings, one a line, worst first.
fn findings_table(findings: &[Finding]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if findings.is_empty() {
        out.push_str("findings: none\n");
        return out;
    }
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in sorted {
        let _ = writeln!(
            out,
            "{:<4} {:<13} {:<15} {}",
            f.severity.label(),
            f.subject(),
            f.rule,
            f.why
        );
    }
    out
}

async fn status_nodes(
    config: &std::path::Path,
    ssh_config: Option<PathBuf>,
    json: bool,
    wait: Option<Duration>,
) -> Result<i32> {
    let Some(inventory) = load_inventory(config) else {
        return Ok(2);
    };
    let store = snapshot_nodes(&inventory, ssh_config, wait).await?;
    let findings = Triage::with_thresholds(inventory.triage).evaluate(&store);
    let mut doc = status_doc(
        &store,
        findings,
        format!("{} ({} nodes)", inventory.file, inventory.nodes.len()),
    );
    let mut complete = true;
    for node in &mut doc.nodes {
        let Some(spec) = inventory.nodes.iter().find(|s| s.name == node.node) else {
            continue;
        };
        node.expected_gpus = Some(spec.gpus);
        let ok = node.link == NodeLink::Streaming
            && node.gpus.len() as u32 == spec.gpus
            && node.gpus.iter().all(|g| !g.lost);
        complete &= ok;
    }
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&status_table(&doc))?;
    }
    Ok(if complete { 0 } else { 1 })
}

/// Print to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // The status table and JSON quote what nodes said: nothing in it may reach the terminal
    // as a control sequence (JSON escapes C0 only, not DEL or C1).
    let text = crate::model::terminal_safe(text);
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

async fn replay(run_dir: &std::path::Path, at: u64, args: &PlayArgs) -> Result<i32> {
    let timeline = match crate::sources::replay::Timeline::load(run_dir) {
        Ok(t) => t,
        Err(e) => {
            crate::eprintln_safe!("burnin replay: {e}");
            return Ok(2);
        }
    };
    // The console shows the phases of the plan the run used (the record keeps a copy).
    let plan = crate::record::read_summary(run_dir)
        .map(|summary| crate::record::recorded_plan(run_dir, &summary));
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
) -> Result<i32> {
    let headless = args.headless;
    let label = if args.speed != 1.0 && replay.is_none() {
        format!("{label}, {}× speed", args.speed)
    } else {
        label
    };
    let mut state = console_state(&args.look, label);
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
    run_console(
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

async fn demo(sim: &SimArgs, args: &PlayArgs) -> Result<i32> {
    let config = sim_config(sim)?;
    let label = format!(
        "demo: simulated {}×{} B300, seed {}",
        config.nodes, config.gpus_per_node, config.seed
    );
    let source = Box::new(SimSource::new(SimCluster::new(config), args.speed));
    play(source, args, label, None).await
}

/// One GPU in the status document.
#[derive(Debug, Serialize)]
pub struct StatusGpu {
    /// Product name.
    pub name: Option<String>,
    /// UUID.
    pub uuid: Option<String>,
    /// True when the GPU gives no readings.
    pub lost: bool,
    /// Why the GPM activity readings (SM, tensor, DRAM) are n/a and left out of the sample,
    /// when they could not be true (see `store::implausible_gpm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpm_na: Option<String>,
    /// The newest sample.
    #[serde(flatten)]
    pub sample: GpuSample,
}

/// One node in the status document.
#[derive(Debug, Serialize)]
pub struct StatusNode {
    /// Node name.
    pub node: String,
    /// Connection state.
    pub link: NodeLink,
    /// What produced the frames.
    pub agent: Option<String>,
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA version.
    pub cuda: Option<String>,
    /// When its newest frame was taken.
    pub frame_at_ms: Option<UnixMillis>,
    /// GPUs the inventory expects (absent for the demo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_gpus: Option<u32>,
    /// Stream lines that could not be decoded.
    pub garbled_lines: u64,
    /// The newest thing the node's agent said about itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What its stream said beyond what a node can have (more GPUs or ports), not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_limit: Option<String>,
    /// Readings its source cannot give, with why (n/a in the document, not a fault).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<crate::model::Unavailable>,
    /// GPUs in index order.
    pub gpus: Vec<StatusGpu>,
}

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusDoc {
    /// Document version.
    pub schema: u32,
    /// Where the data came from.
    pub source: String,
    /// Instant of the snapshot.
    pub at_ms: UnixMillis,
    /// Same, as RFC 3339 UTC.
    pub at: String,
    /// Every node.
    pub nodes: Vec<StatusNode>,
    /// What triage sees in the snapshot.
    pub findings: Vec<Finding>,
}

/// Snapshot a store into the status document.
pub fn status_doc(store: &ClusterStore, findings: Vec<Finding>, source: String) -> StatusDoc {
    StatusDoc {
        schema: STATUS_SCHEMA,
        source,
        at_ms: store.now_ms,
        at: rfc3339(store.now_ms),
        nodes: store
            .nodes
            .iter()
            .map(|n| StatusNode {
                node: n.name.clone(),
                link: n.link.clone(),
                agent: n.hello.as_ref().map(|h| h.agent_version.clone()),
                driver: n.hello.as_ref().and_then(|h| h.driver.clone()),
                cuda: n.hello.as_ref().and_then(|h| h.cuda.clone()),
                frame_at_ms: n.last_frame_ms,
                expected_gpus: None,
                garbled_lines: n.garbled_lines,
                note: n.note.clone(),
                over_limit: n.over_limit_words(),
                unavailable: n
                    .hello
                    .as_ref()
                    .map(|h| h.unavailable.clone())
                    .unwrap_or_default(),
                gpus: n
                    .gpus
                    .iter()
                    .map(|g| StatusGpu {
                        name: g.info.as_ref().map(|i| i.name.clone()),
                        uuid: g.info.as_ref().map(|i| i.uuid.clone()),
                        lost: g.is_lost(),
                        gpm_na: g.gpm_implausible.clone(),
                        sample: g.latest.clone().unwrap_or(GpuSample {
                            index: g.index,
                            ..GpuSample::default()
                        }),
                    })
                    .collect(),
            })
            .collect(),
        findings,
    }
}

/// Run the demo cluster to `at_s` simulated seconds and return its store and findings.
pub fn demo_snapshot(config: SimConfig, at_s: u64) -> (ClusterStore, Vec<Finding>) {
    let mut sim = SimCluster::new(config);
    let mut store = ClusterStore::new();
    let mut triage = Triage::new();
    let mut findings = Vec::new();
    // Step second by second so that triage sees the history it would have seen live.
    for s in 0..=at_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            store.ingest(e);
        }
        findings = triage.evaluate(&store);
    }
    (store, findings)
}

fn status_demo(sim: &SimArgs, at: u64, json: bool) -> Result<i32> {
    let config = sim_config(sim)?;
    let source = format!("demo (simulated, seed {})", config.seed);
    let (store, findings) = demo_snapshot(config, at);
    let complete = store
        .nodes
        .iter()
        .all(|n| n.link == NodeLink::Streaming && n.gpus.iter().all(|g| !g.is_lost()));
    let doc = status_doc(&store, findings, source);
    if json {
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        emit(&status_table(&doc))?;
    }
    Ok(if complete { 0 } else { 1 })
}

/// The human form of `status`: one line per GPU, then the findings.
pub fn status_table(doc: &StatusDoc) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "burnin status · {} · {}", doc.source, doc.at);
    let _ = writeln!(
        out,
        "{:<8} {:>3} {:>5} {:>7} {:>7} {:>6} {:>5} {:>11} {:>13}  reasons",
        "node", "gpu", "util", "avg W", "inst W", "lim W", "temp", "SM MHz", "mem GiB"
    );
    let opt = |v: Option<f32>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    for n in &doc.nodes {
        if let NodeLink::Unreachable(reason) = &n.link {
            let _ = writeln!(out, "{:<8} unreachable: {reason}", n.node);
            continue;
        }
        if let Some(want) = n.expected_gpus
            && n.gpus.len() as u32 != want
        {
            let _ = writeln!(
                out,
                "{:<8} {} of {want} expected GPUs answered",
                n.node,
                n.gpus.len()
            );
        }
        if let Some(note) = &n.note {
            let _ = writeln!(out, "{:<8} agent says: {note}", n.node);
        }
        if n.garbled_lines > 0 {
            let _ = writeln!(
                out,
                "{:<8} {} garbled stream lines skipped",
                n.node, n.garbled_lines
            );
        }
        if let Some(why) = &n.over_limit {
            let _ = writeln!(out, "{:<8} stream beyond a node's limits: {why}", n.node);
        }
        for g in &n.gpus {
            let s = &g.sample;
            if g.lost {
                let _ = writeln!(out, "{:<8} {:>3}  no readings (GPU lost)", n.node, s.index);
                continue;
            }
            let reasons = s
                .clock_event_reasons
                .map(|m| crate::model::clock_events::describe(m).join(","))
                .unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                out,
                "{:<8} {:>3} {:>4}% {:>7} {:>7} {:>6} {:>4}C {:>5}/{:<5} {:>6}/{:<6}  {}",
                n.node,
                s.index,
                opt(s.utilization_pct),
                opt(s.power_avg_watts),
                opt(s.power_instant_watts),
                opt(s.power_limit_watts),
                opt(s.temperature_c),
                s.sm_clock_mhz.map_or("-".into(), |v| v.to_string()),
                s.sm_clock_max_mhz.map_or("-".into(), |v| v.to_string()),
                s.memory_used_bytes
                    .map_or("-".into(), |v| (v >> 30).to_string()),
                s.memory_total_bytes
                    .map_or("-".into(), |v| (v >> 30).to_string()),
                if reasons.is_empty() {
                    "none".into()
                } else {
                    reasons
                },
            );
        }
    }
    if doc.findings.is_empty() {
        let _ = writeln!(out, "findings: none");
    } else {
        let _ = writeln!(out, "findings:");
        for line in findings_table(&doc.findings).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let worst = doc.findings.iter().map(|f| f.severity).max();
    if worst == Some(Severity::Crit) {
        let _ = writeln!(out, "worst: CRIT");
    }
    out
}

/// RFC 3339 UTC for an instant (no time-zone database needed).
pub fn rfc3339(ms: UnixMillis) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Where diagnostics go when `--log-file` is not given.
pub fn default_log_file() -> Option<PathBuf> {
    crate::config::cache_dir().map(|d| d.join("burnin.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(SIM_EPOCH_MS), "2026-12-02T09:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }

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
        assert_eq!(state.store.period_ms, 5_000);
    }
}
