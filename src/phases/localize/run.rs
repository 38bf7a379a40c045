//! Running a fault search on real nodes: each round's tests are the phase as the plan writes it,
//! run by the phase runner with the test's nodes as the run's nodes (its first launches), all
//! tests of a round at once; each test's output goes to the search's record. Used by
//! `burnin localize` and by the console's `f`.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::doc::LocalizeDoc;
use super::search::{Search, SearchConfig, TestResult};
use crate::model::phase::{PhaseEvent, Verdict};
use crate::phases::runner::{RunContext, RunnerNode, StopSwitch, run_phase};
use crate::plan::{Gate, PhaseSpec};

/// What one search runs on.
pub struct SearchRun {
    /// The nodes searched, in order (tests name them by index).
    pub nodes: Vec<RunnerNode>,
    /// How it searches.
    pub config: SearchConfig,
    /// Where its record goes (`localize.json`, `tests/`); `None`: nowhere.
    pub record: Option<PathBuf>,
    /// Its id: each test's run id on the nodes is `localize-<stamp>-r<round>-t<test>`.
    pub stamp: String,
}

/// Run the search to its end, or until `stop` is thrown; `progress` gets the document after
/// every round. Returns the last document.
pub async fn run_search(
    base: &RunContext,
    spec: Arc<PhaseSpec>,
    run: SearchRun,
    stop: StopSwitch,
    progress: mpsc::Sender<LocalizeDoc>,
) -> LocalizeDoc {
    let names: Vec<String> = run.nodes.iter().map(|n| n.spec.name.clone()).collect();
    let figure = judged_figure(&spec);
    let screen = run.config.screen;
    let mut search = Search::new(run.nodes.len(), run.config);
    if let Some(dir) = &run.record {
        let _ = std::fs::create_dir_all(dir.join("tests"));
    }
    while let Some(round) = search.next_round() {
        if stop.borrow().is_some() {
            break;
        }
        let mut jobs = tokio::task::JoinSet::new();
        for test in &round {
            let mut ctx = base.clone();
            ctx.run_id = format!("localize-{}-r{}-t{}", run.stamp, test.round, test.id);
            ctx.nodes = test.nodes().iter().map(|i| run.nodes[*i].clone()).collect();
            let (spec, abort, id) = (Arc::clone(&spec), stop.clone(), test.id);
            let log = run.record.as_ref().map(|r| {
                r.join("tests")
                    .join(format!("r{}-t{}.log", test.round, test.id))
            });
            jobs.spawn(async move {
                let (tx, rx) = mpsc::channel::<PhaseEvent>(1024);
                let drain = tokio::spawn(keep_lines(rx, log));
                let outcome = run_phase(&ctx, spec, abort, tx).await;
                let _ = drain.await;
                (id, outcome)
            });
        }
        let mut results = Vec::new();
        while let Some(done) = jobs.join_next().await {
            if let Ok((id, outcome)) = done {
                results.push((id, result_of(&outcome, &figure)));
            }
        }
        if stop.borrow().is_some() {
            // Aborted mid-round: what came back is no measurement.
            break;
        }
        search.record(results);
        let doc = LocalizeDoc::of(&spec.id, &names, screen, &search);
        // After every round: a search cut short keeps what it learnt.
        if let Some(dir) = &run.record {
            write_record(dir, &doc);
        }
        let _ = progress.send(doc).await;
    }
    let mut doc = LocalizeDoc::of(&spec.id, &names, screen, &search);
    if stop.borrow().is_some() {
        doc.stuck
            .push("interrupted: the search was stopped before its end".into());
    }
    if let Some(dir) = &run.record {
        write_record(dir, &doc);
    }
    doc
}

/// Most bytes of one group's output kept in its log (a verbose NCCL_DEBUG=INFO job on many
/// ranks prints far more); what is past it is counted in the log's last line.
const TEST_LOG_BYTES: u64 = 16 << 20;

/// Write a group's output lines to `path` until the bound; the count of lines left out last.
async fn keep_lines(mut rx: mpsc::Receiver<PhaseEvent>, path: Option<PathBuf>) {
    use std::io::Write;
    let mut file = path
        .and_then(|p| std::fs::File::create(p).ok())
        .map(std::io::BufWriter::new);
    let (mut written, mut dropped) = (0u64, 0u64);
    while let Some(ev) = rx.recv().await {
        let (node, text) = match &ev {
            PhaseEvent::Line { node, text, .. } => (node.as_deref().unwrap_or("-"), text),
            PhaseEvent::Note { node, text, .. } => (node.as_deref().unwrap_or("burnin"), text),
            _ => continue,
        };
        let line = format!("{node}| {}\n", crate::model::strip_controls(text));
        if written + line.len() as u64 > TEST_LOG_BYTES {
            dropped += 1;
            continue;
        }
        written += line.len() as u64;
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
    }
    if let Some(f) = file.as_mut() {
        if dropped > 0 {
            let _ = writeln!(
                f,
                "burnin| {dropped} more line(s) past {TEST_LOG_BYTES} bytes not kept"
            );
        }
        let _ = f.flush();
    }
}

/// The figure the phase's gates judge (its first `min`, `baseline` or `peers` gate's), which
/// the search compares between groups.
pub fn judged_figure(spec: &PhaseSpec) -> String {
    spec.gates
        .iter()
        .find_map(|g| match g {
            Gate::Min { figure, .. }
            | Gate::Baseline { figure, .. }
            | Gate::Peers { figure, .. } => Some(figure.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "busbw_all_reduce".into())
}

/// One group's result from the phase's outcome: its worst subject's figure, and whether the
/// phase failed it.
fn result_of(outcome: &crate::phases::runner::PhaseOutcome, figure: &str) -> TestResult {
    let figures = crate::plan::gates::figures(&outcome.metrics);
    let value = figures.get(figure).and_then(|samples| {
        samples
            .iter()
            .map(|s| s.value)
            .filter(|v| v.is_finite())
            .min_by(f64::total_cmp)
    });
    TestResult {
        figure: value,
        failed: matches!(
            outcome.verdict,
            Verdict::Fail | Verdict::Timeout | Verdict::Aborted
        ),
        words: crate::model::fit(&outcome.reason, 300),
    }
}

/// `localize.json` in the search's record, written whole then renamed.
fn write_record(dir: &std::path::Path, doc: &LocalizeDoc) {
    let Ok(text) = serde_json::to_string_pretty(doc) else {
        return;
    };
    let tmp = dir.join("localize.json.tmp");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join("localize.json"));
    }
}
