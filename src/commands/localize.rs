//! `burnin localize`: which nodes, or which links between two nodes, make a multi-node phase
//! slow. The search (`phases::localize::search`) picks each round's groups; every group runs
//! the phase's own command as the plan writes it, with the group's nodes in `{hosts}`,
//! `{hosts_slots}`, `{hostfile}`, `{np}`, `{nnodes}` and `{nodelist}` (its first node launches),
//! all groups of a round at once. `--demo` searches a simulated fabric (`sim::fabric`).
//! Exit 0: nothing named; 1: a node or link named; 2: it could not run.

use std::collections::BTreeMap;
use std::sync::Arc;

use color_eyre::eyre::Result;
use tokio::sync::mpsc;

use super::load_inventory;
use crate::phases::localize::run::{SearchRun, run_search};
use crate::phases::localize::search::{Judged, Screen, Search, SearchConfig};
use crate::phases::runner::{RunContext, RunnerNode};
use crate::plan::{PhaseSpec, Scope};
use crate::sim::fabric::{FabricFault, SimFabric};

pub use crate::phases::localize::doc::{LOCALIZE_SCHEMA, LocalizeDoc};

/// What `burnin localize` was asked.
pub struct LocalizeArgs {
    /// burnin.toml.
    pub config: std::path::PathBuf,
    /// `--ssh-config`.
    pub ssh_config: Option<std::path::PathBuf>,
    /// `--phase`.
    pub phase: String,
    /// `--nodes`: a subset of the inventory's nodes (empty: all).
    pub nodes: Vec<String>,
    /// `--screen`: `None` picks the one with fewer rounds.
    pub screen: Option<Screen>,
    /// `--peers-pct`.
    pub peers_pct: f64,
    /// `--json`.
    pub json: bool,
    /// `--demo`: simulated nodes, with these faults (`bad-node:N`, `bad-link:A-B`,
    /// `flaky-node:N`, nodes numbered from 1).
    pub demo: Option<DemoFabric>,
    /// `--runs-dir`: the search's record goes in `localize-<id>/` under it.
    pub runs_dir: std::path::PathBuf,
    /// `--run`: a run's record to keep the search in instead.
    pub run: Option<std::path::PathBuf>,
}

/// `--demo`'s fabric.
pub struct DemoFabric {
    /// Nodes.
    pub nodes: usize,
    /// Faults.
    pub faults: Vec<FabricFault>,
    /// Seed.
    pub seed: u64,
}

/// Read one `--fault` of `localize --demo`: `bad-node:7`, `bad-link:3-11`, `flaky-node:5`
/// (nodes numbered from 1, as `node07` is the seventh).
pub fn parse_fabric_fault(s: &str) -> Result<FabricFault, String> {
    let (kind, arg) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: write bad-node:N, bad-link:A-B or flaky-node:N"))?;
    let node = |t: &str| -> Result<usize, String> {
        t.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=4096).contains(n))
            .map(|n| n - 1)
            .ok_or_else(|| format!("{t:?} is no node number (1 to 4096)"))
    };
    match kind {
        "bad-node" => Ok(FabricFault::BadNode(node(arg)?)),
        "flaky-node" => Ok(FabricFault::FlakyNode(node(arg)?)),
        "bad-link" => {
            let (a, b) = arg
                .split_once('-')
                .ok_or_else(|| format!("{arg:?}: write bad-link:A-B"))?;
            let (a, b) = (node(a)?, node(b)?);
            if a == b {
                return Err("a link needs two different nodes".into());
            }
            Ok(FabricFault::BadLink(a, b))
        }
        _ => Err(format!(
            "{kind:?} is no fabric fault (bad-node, bad-link, flaky-node)"
        )),
    }
}

/// The screen with fewer rounds for `n` nodes (pairs, except where one group is all there is).
pub fn pick_screen(n: usize) -> Screen {
    if n <= 3 {
        Screen::Groups
    } else {
        Screen::Pairs
    }
}

/// What the search will do, before it starts.
fn plan_words(phase: &PhaseSpec, n: usize, screen: Screen) -> String {
    let groups = crate::phases::localize::search::partition(n, screen.group_size(n));
    let per_fault = match screen {
        Screen::Pairs => 2,
        Screen::Groups => 1 + (screen.group_size(n) as f64).log2().ceil() as u32,
    };
    format!(
        "localize {}: {n} nodes; round 1 screens them in {} {} at once; a clean screen takes one more \
         round (every node at once), a bad node about {} more, a bad link more; each round takes up to \
         the phase's time limit ({} s)",
        phase.id,
        groups.len(),
        match screen {
            Screen::Pairs => "pairs",
            Screen::Groups => "groups",
        },
        per_fault,
        phase.timeout.as_secs()
    )
}

/// `burnin localize`.
pub async fn localize(args: LocalizeArgs) -> Result<i32> {
    if let Some(demo) = &args.demo {
        return Ok(localize_demo(&args, demo));
    }
    let Some(inventory) = load_inventory(&args.config) else {
        return Ok(2);
    };
    let plan = match super::run::load_plan(&inventory) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            crate::eprintln_safe!("burnin localize: plan: {e}");
            return Ok(2);
        }
    };
    let Some(spec) = plan.find(&args.phase).cloned() else {
        crate::eprintln_safe!(
            "burnin localize: no phase {} in {}",
            crate::model::strip_controls(&args.phase),
            plan.file
        );
        return Ok(2);
    };
    if !matches!(spec.scope, Scope::Mpirun | Scope::Launcher) {
        crate::eprintln_safe!(
            "burnin localize: {} runs {}: the search needs a phase that runs one job across the nodes (scope mpirun or launcher)",
            spec.id,
            spec.scope.label()
        );
        return Ok(2);
    }
    if let Some(why) = crate::phases::runner::skip_reason(&plan, &spec) {
        crate::eprintln_safe!("burnin localize: {} cannot run: {why}", spec.id);
        return Ok(2);
    }
    let ssh = crate::transport::ssh::settings(args.ssh_config.clone(), &inventory);
    let all = super::run::runner_nodes(&inventory, &ssh);
    let nodes: Vec<RunnerNode> = if args.nodes.is_empty() {
        all
    } else {
        let mut picked: Vec<RunnerNode> = Vec::new();
        for name in &args.nodes {
            // One node twice would be in two tests of one round.
            if picked.iter().any(|n| &n.spec.name == name) {
                crate::eprintln_safe!(
                    "burnin localize: {} is named twice in --nodes",
                    crate::model::strip_controls(name)
                );
                return Ok(2);
            }
            match all.iter().find(|n| &n.spec.name == name) {
                Some(n) => picked.push(n.clone()),
                None => {
                    crate::eprintln_safe!(
                        "burnin localize: {} is not a node of {}",
                        crate::model::strip_controls(name),
                        inventory.file
                    );
                    return Ok(2);
                }
            }
        }
        picked
    };
    let screen = args.screen.unwrap_or_else(|| pick_screen(nodes.len()));
    let (_, baseline) = super::run::baseline_for(&args.config, None)?;
    crate::eprintln_safe!("{}", plan_words(&spec, nodes.len(), screen));
    let (abort_rx, interrupted) = super::run::abort_on_signals("burnin localize");
    let stamp = crate::record::session::new_run_id();
    let parent = match &args.run {
        Some(run) if !run.join("summary.json").is_file() => {
            crate::eprintln_safe!(
                "burnin localize: {} is no run record (no summary.json)",
                run.display()
            );
            return Ok(2);
        }
        Some(run) => run.clone(),
        None => args.runs_dir.clone(),
    };
    let record = parent.join(format!("localize-{stamp}"));
    if let Err(e) = std::fs::create_dir_all(record.join("tests")) {
        crate::eprintln_safe!("burnin localize: cannot make {}: {e}", record.display());
        return Ok(2);
    }
    crate::eprintln_safe!("record: {}", record.display());
    // The nodes' parts as the run's T0 read them: each group is judged by the spec's floors
    // for its model (T7 per RDMA port, the same floor at every group size).
    let parts = match args.run.as_ref().map(|r| crate::record::read_summary(r)) {
        Some(Ok(s)) => s.node_parts(),
        Some(Err(e)) => {
            crate::eprintln_safe!(
                "burnin localize: the run's record does not read ({e}): the groups are judged without the spec table's floors"
            );
            BTreeMap::new()
        }
        None => BTreeMap::new(),
    };
    let base = RunContext {
        run_id: String::new(),
        attempt: 1,
        earlier: BTreeMap::new(),
        parts,
        confirm: None,
        plan: Arc::clone(&plan),
        nodes: Vec::new(),
        baseline,
        telemetry: None,
    };
    let (progress, mut docs) = mpsc::channel::<LocalizeDoc>(64);
    let printer = tokio::spawn(async move {
        let mut shown = 0usize;
        while let Some(doc) = docs.recv().await {
            for j in doc.groups.iter().skip(shown) {
                crate::eprintln_safe!("{}", test_line(j, &doc.nodes));
            }
            shown = doc.groups.len();
        }
    });
    let doc = run_search(
        &base,
        Arc::clone(&spec),
        SearchRun {
            nodes,
            config: SearchConfig {
                screen,
                peers_pct: args.peers_pct,
            },
            record: Some(record.clone()),
            stamp,
        },
        abort_rx,
        progress,
    )
    .await;
    let _ = printer.await;
    print_doc(&doc, args.json);
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        crate::eprintln_safe!("burnin localize: interrupted: the search did not finish");
        return Ok(2);
    }
    Ok(exit_code(&doc))
}

/// 1 where something is named; 2 where nothing is but the search could not judge (no peers
/// level, no partner): never an all-clear it did not earn; 0 otherwise.
fn exit_code(doc: &LocalizeDoc) -> i32 {
    if !doc.bad_nodes.is_empty() || !doc.bad_links.is_empty() {
        1
    } else if !doc.stuck.is_empty() {
        2
    } else {
        0
    }
}

fn print_doc(doc: &LocalizeDoc, json: bool) {
    if json {
        match serde_json::to_string_pretty(doc) {
            Ok(s) => crate::println_safe!("{s}"),
            Err(e) => crate::eprintln_safe!("burnin localize: {e}"),
        }
    } else {
        crate::print_safe!("{}", doc.words());
    }
}

/// One test as progress: "round 2 test 9 (partner) node07+node12: 185.3 slow: 185.3 < 80 % …".
fn test_line(j: &Judged, names: &[String]) -> String {
    let who: Vec<&str> = j
        .test
        .nodes()
        .iter()
        .take(12)
        .filter_map(|i| names.get(*i).map(String::as_str))
        .collect();
    let more = j.test.nodes().len().saturating_sub(12);
    format!(
        "round {} test {} ({}) {}{}: {}: {}",
        j.test.round,
        j.test.id,
        serde_json::to_value(j.test.purpose)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        who.join("+"),
        if more > 0 {
            format!(" +{more} more")
        } else {
            String::new()
        },
        if j.slow { "SLOW" } else { "ok" },
        j.why
    )
}

/// `localize --demo`: the search over a simulated fabric.
fn localize_demo(args: &LocalizeArgs, demo: &DemoFabric) -> i32 {
    let names: Vec<String> = (1..=demo.nodes).map(|i| format!("node{i:02}")).collect();
    if let Some(f) = demo.faults.iter().find(|f| match f {
        FabricFault::BadNode(n) | FabricFault::FlakyNode(n) => *n >= demo.nodes,
        FabricFault::BadLink(a, b) => *a >= demo.nodes || *b >= demo.nodes,
    }) {
        crate::eprintln_safe!(
            "burnin localize --demo: {f:?} names a node past the {} simulated",
            demo.nodes
        );
        return 2;
    }
    let screen = args.screen.unwrap_or_else(|| pick_screen(demo.nodes));
    let mut fabric = SimFabric::new(demo.nodes, demo.faults.clone(), demo.seed);
    crate::eprintln_safe!(
        "localize (demo): {} simulated nodes, screen {}; healthy all_reduce busbw {} GB/s, a fault halves it",
        demo.nodes,
        screen.name(),
        crate::sim::fabric::HEALTHY_BUSBW
    );
    let mut search = Search::new(
        demo.nodes,
        SearchConfig {
            screen,
            peers_pct: args.peers_pct,
        },
    );
    while let Some(round) = search.next_round() {
        let results = round.iter().map(|t| (t.id, fabric.run(t))).collect();
        let first = search.tests().len();
        search.record(results);
        for j in &search.tests()[first..] {
            crate::eprintln_safe!("{}", test_line(j, &names));
        }
    }
    let doc = LocalizeDoc::of("T7 (simulated)", &names, screen, &search);
    print_doc(&doc, args.json);
    exit_code(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fabric_faults_read_as_written_and_refuse_the_rest() {
        assert_eq!(
            parse_fabric_fault("bad-node:7"),
            Ok(FabricFault::BadNode(6))
        );
        assert_eq!(
            parse_fabric_fault("bad-link:3-11"),
            Ok(FabricFault::BadLink(2, 10))
        );
        assert_eq!(
            parse_fabric_fault("flaky-node:1"),
            Ok(FabricFault::FlakyNode(0))
        );
        for bad in [
            "bad-node:0",
            "bad-node:x",
            "bad-link:3-3",
            "bad-link:3",
            "hot:1",
            "bad-node",
        ] {
            assert!(parse_fabric_fault(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn garbage_faults_never_panic(s in "\\PC{0,40}") {
            let _ = parse_fabric_fault(&s);
        }
    }
}
