//! Phases from the console: `s` / `r` start a phase on the nodes, `a` aborts it. One phase at a
//! time (phases measure the same GPUs; two at once would measure neither). The first start opens
//! a run record; every later phase of the console session goes into the same run.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use super::runner::{RunContext, run_phase};
use super::session::{RunSession, new_run_id};
use super::{PhaseCommand, PhaseEvent};
use crate::inventory::Inventory;
use crate::telemetry::SourceEvent;

/// What the console needs to run phases.
pub struct PhaseDriver {
    ctx: RunContext,
    inventory: Inventory,
    runs_dir: PathBuf,
    baseline_path: Option<PathBuf>,
    session: Arc<Mutex<Option<RunSession>>>,
    /// The running phase and its abort switch.
    running: Arc<Mutex<Option<Running>>>,
    starts: u64,
}

/// The running phase's id, its abort switch, and which start it was (so a finished phase can
/// only ever clear its own entry, never the next phase's).
type Running = (String, watch::Sender<bool>, u64);

/// Clear `running` if it still belongs to start number `generation`.
fn release(running: &Mutex<Option<Running>>, generation: u64) {
    if let Ok(mut r) = running.lock()
        && r.as_ref().is_some_and(|x| x.2 == generation)
    {
        *r = None;
    }
}

impl PhaseDriver {
    /// Phases of `ctx.plan` on `ctx.nodes`; the record goes under `runs_dir`.
    pub fn new(
        mut ctx: RunContext,
        inventory: Inventory,
        runs_dir: PathBuf,
        baseline_path: Option<PathBuf>,
    ) -> Self {
        ctx.run_id = new_run_id();
        Self {
            ctx,
            inventory,
            runs_dir,
            baseline_path,
            session: Arc::new(Mutex::new(None)),
            running: Arc::new(Mutex::new(None)),
            starts: 0,
        }
    }

    /// Obey one key's command; anything the engineer should read comes back as a notice.
    pub async fn command(&mut self, cmd: PhaseCommand, events: &mpsc::Sender<SourceEvent>) {
        let notice = |text: String| SourceEvent::Notice { text };
        match cmd {
            PhaseCommand::Abort(id) => {
                let running = self.running.lock().ok().and_then(|r| r.clone());
                match running {
                    Some((rid, stop, _)) if rid == id => {
                        let _ = stop.send(true);
                    }
                    _ => {
                        let _ = events.send(notice(format!("{id} is not running"))).await;
                    }
                }
            }
            PhaseCommand::Start(id) => {
                let Some(spec) = self.ctx.plan.find(&id).cloned() else {
                    let _ = events
                        .send(notice(format!("{id} is not in {}", self.ctx.plan.file)))
                        .await;
                    return;
                };
                if let Some((rid, _, _)) = self.running.lock().ok().and_then(|r| r.clone()) {
                    let _ = events
                        .send(notice(format!("{rid} is running; abort it first (a)")))
                        .await;
                    return;
                }
                // The record opens with the first phase.
                let opened = {
                    let mut s = match self.session.lock() {
                        Ok(s) => s,
                        Err(p) => p.into_inner(),
                    };
                    if s.is_none() {
                        match RunSession::create(
                            &self.runs_dir,
                            &self.ctx.run_id,
                            &self.inventory,
                            &self.ctx.plan,
                            self.baseline_path.as_deref(),
                        ) {
                            Ok(new) => {
                                let dir = new.dir().display().to_string();
                                *s = Some(new);
                                Some(format!("run record: {dir}"))
                            }
                            Err(e) => Some(format!("no run record ({e}); the phase runs anyway")),
                        }
                    } else {
                        None
                    }
                };
                if let Some(text) = opened {
                    let _ = events.send(notice(text)).await;
                }
                let (stop_tx, stop_rx) = watch::channel(false);
                self.starts += 1;
                let generation = self.starts;
                if let Ok(mut r) = self.running.lock() {
                    *r = Some((id.clone(), stop_tx, generation));
                }
                let ctx = self.ctx.clone();
                let session = Arc::clone(&self.session);
                let running = Arc::clone(&self.running);
                let events = events.clone();
                tokio::spawn(async move {
                    let (tx, mut rx) = mpsc::channel::<PhaseEvent>(1024);
                    let task = {
                        let spec = Arc::clone(&spec);
                        tokio::spawn(async move { run_phase(&ctx, spec, stop_rx, tx).await })
                    };
                    let mut started = None;
                    while let Some(ev) = rx.recv().await {
                        match &ev {
                            PhaseEvent::Started { at_ms, .. } => started = Some(*at_ms),
                            // Free before the console hears of the end, so its next `s` works.
                            PhaseEvent::Finished { .. } => release(&running, generation),
                            _ => {}
                        }
                        if let Ok(mut s) = session.lock()
                            && let Some(s) = s.as_mut()
                            && let Err(e) = s.event(&ev)
                        {
                            tracing::warn!("run record: {e}");
                        }
                        if events.send(SourceEvent::Phase(ev)).await.is_err() {
                            break;
                        }
                    }
                    if let Ok(outcome) = task.await
                        && let Ok(mut s) = session.lock()
                        && let Some(s) = s.as_mut()
                    {
                        let _ = s.phase_done(&spec, started, &outcome);
                        let _ = s.finish(false);
                    }
                    release(&running, generation);
                });
            }
        }
    }

    /// The telemetry log the phases ask at their end; the source feeds it.
    pub fn telemetry(&self) -> Option<Arc<super::telemetry_log::TelemetryLog>> {
        self.ctx.telemetry.clone()
    }

    /// Abort whatever runs (the console quits with "abort").
    pub fn abort_all(&self) {
        if let Some((_, stop, _)) = self.running.lock().ok().and_then(|r| r.clone()) {
            let _ = stop.send(true);
        }
    }
}
