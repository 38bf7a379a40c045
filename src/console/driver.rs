//! Phases from the console: `s` / `r` start a phase on the nodes, `a` aborts it. One phase at a
//! time (phases measure the same GPUs; two at once would measure neither). The first start opens
//! a run record; every later phase of the console session goes into the same run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::config::inventory::Inventory;
use crate::model::SourceEvent;
use crate::model::UnixMillis;
use crate::model::phase::{PhaseCommand, PhaseEvent};
use crate::model::search::SEARCH_PREFIX;
use crate::phases::remote::StopReason;
use crate::phases::runner::{RunContext, reattach_phase, run_phase};
use crate::record::RecordEvent;
use crate::record::recording::TelemetryRecording;
use crate::record::session::{RunSession, new_run_id};
use crate::triage::Finding;

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
    /// After a resume: the phase to re-attach to, its recorded line counts per node, and when
    /// it started.
    pending: Option<(String, BTreeMap<String, usize>, Option<UnixMillis>)>,
    /// Attempts so far per phase (a retry runs in its own directory on the nodes).
    attempts: BTreeMap<String, u32>,
    /// What the telemetry writes into the record, once the record is open.
    recording: Option<TelemetryRecording>,
    recording_failed: bool,
    /// Open the record when the console starts ([`PhaseDriver::set_record_from_start`]).
    record_from_start: bool,
    /// Whether the console was told the record is open.
    record_announced: bool,
    /// Since when the recording kept in memory (before the record opens) holds what the
    /// console saw.
    kept_since: Option<UnixMillis>,
    /// Counts the operator's confirmations for a drill (`c`).
    confirm: watch::Sender<u64>,
}

/// The running phase's id (a `together` phase also runs its members alone first: their ids
/// follow), its abort switch, and which start it was (so a finished phase can only ever clear
/// its own entry, never the next phase's).
type Running = (Vec<String>, watch::Sender<Option<StopReason>>, u64);

/// Do `f` with the session's record, if one is open (the lock is not held across an await).
fn record(
    session: &Mutex<Option<RunSession>>,
    f: impl FnOnce(&mut RunSession) -> Result<(), crate::record::RecordError>,
) -> Result<(), crate::record::RecordError> {
    let mut guard = match session.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    guard.as_mut().map_or(Ok(()), f)
}

/// Read from the session's record, if one is open.
fn record_read<T>(
    session: &Mutex<Option<RunSession>>,
    f: impl FnOnce(&RunSession) -> T,
) -> Option<T> {
    let guard = match session.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    guard.as_ref().map(f)
}

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
        let (confirm, confirm_rx) = watch::channel(0u64);
        ctx.confirm = Some(confirm_rx);
        Self {
            confirm,
            ctx,
            inventory,
            runs_dir,
            baseline_path,
            session: Arc::new(Mutex::new(None)),
            running: Arc::new(Mutex::new(None)),
            starts: 0,
            pending: None,
            attempts: BTreeMap::new(),
            recording: None,
            recording_failed: false,
            record_from_start: false,
            record_announced: false,
            kept_since: None,
        }
    }

    /// Write what a telemetry event changes into the record (or, before it opens, into the
    /// recording kept in memory): the per-second telemetry, findings raised and cleared, node
    /// states, AIStor windows.
    pub fn observe(&mut self, ev: &SourceEvent, at_ms: UnixMillis, findings: Option<&[Finding]>) {
        if let Some(r) = self.recording.as_mut()
            && let Err(e) = r.observe(ev, at_ms, findings)
            && !std::mem::replace(&mut self.recording_failed, true)
        {
            tracing::warn!("run record: telemetry: {e}");
        }
        if self
            .recording
            .as_ref()
            .is_some_and(TelemetryRecording::full)
        {
            // Hours of watching without a phase: keep the newest stretch, not all of it.
            tracing::info!(
                "kept {} of telemetry in memory before the first phase; keeping afresh from now",
                crate::model::human_secs(
                    at_ms.saturating_sub(self.kept_since.unwrap_or(at_ms)) / 1000
                )
            );
            self.keep_in_memory();
        }
    }

    /// A recording told what the inventory expects, as the fleet told the console before the
    /// record opened, so a replay shows the same.
    fn expecting(&self, mut r: TelemetryRecording) -> TelemetryRecording {
        let at_ms = crate::model::now_ms();
        for n in &self.inventory.nodes {
            let ev = SourceEvent::Expect {
                node: n.name.clone(),
                gpus: n.gpus,
                nic_rate_gbps: n.nic_rate_gbps,
            };
            if let Err(e) = r.observe(&ev, at_ms, None) {
                tracing::warn!("run record: {e}");
            }
        }
        r
    }

    /// Keep what the console sees in memory from now, for the record the first phase opens.
    fn keep_in_memory(&mut self) {
        self.kept_since = Some(crate::model::now_ms());
        self.recording = Some(self.expecting(TelemetryRecording::in_memory()));
    }

    /// Start the record's telemetry segment: the recording kept in memory since the console
    /// started goes into the record (the run then starts when the console did), else a new one.
    fn open_recording(&mut self) {
        if self
            .recording
            .as_ref()
            .is_some_and(TelemetryRecording::attached)
        {
            return;
        }
        let session = Arc::clone(&self.session);
        let mut guard = match session.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let Some(s) = guard.as_mut() else { return };
        if let Some(mut kept) = self.recording.take() {
            if let Some(since) = self.kept_since.take()
                && let Err(e) = s.backdate(since)
            {
                tracing::warn!("run record: {e}");
            }
            match kept.attach(s) {
                Ok(()) => {
                    self.recording = Some(kept);
                    return;
                }
                Err(e) => tracing::warn!("run record: what the console kept before it: {e}"),
            }
        }
        match TelemetryRecording::new(s) {
            Ok(r) => self.recording = Some(self.expecting(r)),
            Err(e) => tracing::warn!("run record: telemetry: {e}"),
        }
    }

    /// Create the run's record unless it exists; what to tell the engineer when it was
    /// created (its directory) or could not be (why, then `otherwise`).
    fn create_session(&mut self, otherwise: &str) -> Option<String> {
        let mut s = match self.session.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if s.is_some() {
            return None;
        }
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
            Err(e) => Some(format!("no run record ({e}); {otherwise}")),
        }
    }

    /// Open the run record when the console starts rather than at the first phase start
    /// (`burnin watch --record`), so it is on disk from the first second, phase or not.
    /// Without it, what the console sees is kept in memory until the first phase writes it
    /// into the record, and a look with no phase leaves no run behind.
    pub fn set_record_from_start(&mut self, on: bool) {
        self.record_from_start = on;
    }

    /// At the console's start: open the record now when [`Self::set_record_from_start`] asked
    /// for it (a resumed run has its record already), and tell the console when it is open.
    pub async fn open_at_start(&mut self, events: &mpsc::Sender<SourceEvent>) {
        if !self.record_from_start {
            // A taken-over run's record is open already; otherwise keep what the console sees
            // until the first phase opens one.
            if self.recording.is_none() {
                self.keep_in_memory();
            }
            self.announce_record(events).await;
            return;
        }
        if let Some(text) = self.create_session("the console records nothing until it can") {
            let _ = events.send(SourceEvent::Notice { text }).await;
        }
        self.open_recording();
        self.announce_record(events).await;
    }

    /// Tell the console, once, that its record is open (a resumed run's opened before the
    /// console started; the others with the first phase or `--record`).
    async fn announce_record(&mut self, events: &mpsc::Sender<SourceEvent>) {
        if self.record_announced
            || !self
                .recording
                .as_ref()
                .is_some_and(TelemetryRecording::attached)
        {
            return;
        }
        let dir = match self.session.lock() {
            Ok(g) => g.as_ref().map(|s| s.dir().display().to_string()),
            Err(p) => p
                .into_inner()
                .as_ref()
                .map(|s| s.dir().display().to_string()),
        };
        if let Some(dir) = dir {
            self.record_announced = true;
            let _ = events.send(SourceEvent::Recording { dir }).await;
        }
    }

    fn operator(&self, action: &str, phase: &str) {
        let ev = RecordEvent::Operator {
            at_ms: crate::model::now_ms(),
            action: action.to_string(),
            phase: Some(phase.to_string()),
        };
        if let Err(e) = record(&self.session, |s| s.record_event(&ev)) {
            tracing::warn!("run record: {e}");
        }
    }

    /// Obey one key's command; anything the engineer should read comes back as a notice.
    pub async fn command(&mut self, cmd: PhaseCommand, events: &mpsc::Sender<SourceEvent>) {
        let notice = |text: String| SourceEvent::Notice { text };
        match cmd {
            PhaseCommand::Confirm(id) => {
                let running = self.running.lock().ok().and_then(|r| r.clone());
                match running {
                    Some((ids, _, _)) if ids.contains(&id) => {
                        self.operator("confirm", &id);
                        self.confirm.send_modify(|n| *n += 1);
                    }
                    _ => {
                        let _ = events.send(notice(format!("{id} is not running"))).await;
                    }
                }
            }
            PhaseCommand::Abort(id) => {
                let running = self.running.lock().ok().and_then(|r| r.clone());
                match running {
                    Some((ids, stop, _)) if ids.contains(&id) => {
                        self.operator("abort", &id);
                        let _ = stop.send(Some(StopReason::Aborted));
                    }
                    _ => {
                        let _ = events.send(notice(format!("{id} is not running"))).await;
                    }
                }
            }
            PhaseCommand::Localize(id) => self.localize(&id, events).await,
            PhaseCommand::Start(id) => {
                let Some(spec) = self.ctx.plan.find(&id).cloned() else {
                    let _ = events
                        .send(notice(format!("{id} is not in {}", self.ctx.plan.file)))
                        .await;
                    return;
                };
                if self
                    .begin("start", &id, "the phase runs anyway", events)
                    .await
                {
                    self.spawn(spec, events, None);
                }
            }
        }
    }

    /// Before a phase or a search starts: nothing else may run (said, false); the record opens
    /// with the first (unless it opened with the console) and notes who started what.
    async fn begin(
        &mut self,
        action: &str,
        id: &str,
        otherwise: &str,
        events: &mpsc::Sender<SourceEvent>,
    ) -> bool {
        let notice = |text: String| SourceEvent::Notice { text };
        if let Some((ids, _, _)) = self.running.lock().ok().and_then(|r| r.clone()) {
            let rid = ids.join(" with ");
            let _ = events
                .send(notice(format!("{rid} is running; abort it first (a)")))
                .await;
            return false;
        }
        if let Some(text) = self.create_session(otherwise) {
            let _ = events.send(notice(text)).await;
        }
        self.open_recording();
        self.announce_record(events).await;
        self.operator(action, id);
        true
    }

    /// `f`: search for the node or link that makes multi-node phase `id` slow, in the
    /// background, on the inventory's nodes; the console gets the search after every round,
    /// the run's record keeps it (`localize-<id>/`, which its report reads), `a` aborts it.
    async fn localize(&mut self, id: &str, events: &mpsc::Sender<SourceEvent>) {
        use crate::phases::localize::run::{SearchRun, run_search};
        use crate::phases::localize::search::{Screen, SearchConfig};
        let notice = |text: String| SourceEvent::Notice { text };
        let Some(spec) = self.ctx.plan.find(id).cloned() else {
            let _ = events
                .send(notice(format!("{id} is not in {}", self.ctx.plan.file)))
                .await;
            return;
        };
        if !matches!(
            spec.scope,
            crate::plan::Scope::Mpirun | crate::plan::Scope::Launcher
        ) {
            let _ = events
                .send(notice(format!(
                    "{id} runs {}: a search needs a phase that runs one job across the nodes",
                    spec.scope.label()
                )))
                .await;
            return;
        }
        if !self
            .begin("localize", id, "the search runs anyway", events)
            .await
        {
            return;
        }
        let stamp = new_run_id();
        let record_dir = record_read(&self.session, |s| s.dir().join(format!("localize-{stamp}")));
        let nodes = self.ctx.nodes.clone();
        let screen = if nodes.len() <= 3 {
            Screen::Groups
        } else {
            Screen::Pairs
        };
        let (stop_tx, stop_rx) = watch::channel(None);
        self.starts += 1;
        let generation = self.starts;
        if let Ok(mut r) = self.running.lock() {
            *r = Some((vec![format!("{SEARCH_PREFIX}{id}")], stop_tx, generation));
        }
        let ctx = self.ctx.clone();
        let running = Arc::clone(&self.running);
        let session = Arc::clone(&self.session);
        let events = events.clone();
        // Each snapshot into the record (a replay shows the search) and to the console.
        let tell = move |snap: crate::model::search::SearchSnapshot,
                         events: mpsc::Sender<SourceEvent>,
                         session: Arc<Mutex<Option<RunSession>>>| async move {
            let search = Box::new(snap);
            let ev = RecordEvent::Search {
                at_ms: crate::model::now_ms(),
                search: search.clone(),
            };
            if let Err(e) = record(&session, |s: &mut RunSession| s.record_event(&ev)) {
                tracing::warn!("run record: {e}");
            }
            events.send(SourceEvent::Search(search)).await.is_ok()
        };
        tokio::spawn(async move {
            let (progress, mut docs) = mpsc::channel(16);
            let forward = {
                let (events, session) = (events.clone(), Arc::clone(&session));
                tokio::spawn(async move {
                    while let Some(doc) = docs.recv().await {
                        let doc: crate::phases::localize::doc::LocalizeDoc = doc;
                        if !tell(doc.snapshot(true), events.clone(), Arc::clone(&session)).await {
                            break;
                        }
                    }
                })
            };
            let run = SearchRun {
                nodes,
                config: SearchConfig {
                    screen,
                    peers_pct: 80.0,
                },
                record: record_dir,
                stamp,
            };
            let doc = run_search(&ctx, spec, run, stop_rx, progress).await;
            let _ = forward.await;
            release(&running, generation);
            tell(doc.snapshot(false), events.clone(), Arc::clone(&session)).await;
            let head = doc.words().lines().next().unwrap_or_default().to_string();
            let _ = events.send(SourceEvent::Notice { text: head }).await;
        });
    }

    /// Run (or re-attach to) `spec` in the background, recording and forwarding its events.
    /// A `together` phase first runs, alone, those of its members with no result in this
    /// run: its figures are compared with theirs.
    fn spawn(
        &mut self,
        spec: Arc<crate::plan::PhaseSpec>,
        events: &mpsc::Sender<SourceEvent>,
        reattach: Option<BTreeMap<String, usize>>,
    ) {
        let mut chain: Vec<Arc<crate::plan::PhaseSpec>> = Vec::new();
        if reattach.is_none() {
            let done: Vec<String> = record_read(&self.session, |s| {
                s.summary.phases.iter().map(|p| p.id.clone()).collect()
            })
            .unwrap_or_default();
            for m in &spec.together {
                if !done.contains(m)
                    && let Some(member) = self.ctx.plan.find(m)
                {
                    chain.push(Arc::clone(member));
                }
            }
        }
        chain.push(Arc::clone(&spec));
        // A new start is the next attempt; a re-attach continues the last one.
        let mut attempts = Vec::new();
        for s in &chain {
            let attempt = self.attempts.entry(s.id.clone()).or_insert(0);
            if reattach.is_none() || *attempt == 0 {
                *attempt += 1;
            }
            attempts.push(*attempt);
        }
        let (stop_tx, stop_rx) = watch::channel(None);
        self.starts += 1;
        let generation = self.starts;
        let ids: Vec<String> = std::iter::once(spec.id.clone())
            .chain(spec.together.iter().cloned())
            .collect();
        if let Ok(mut r) = self.running.lock() {
            *r = Some((ids, stop_tx, generation));
        }
        let ctx = self.ctx.clone();
        let telemetry = ctx.telemetry.clone();
        let session = Arc::clone(&self.session);
        let running = Arc::clone(&self.running);
        let events = events.clone();
        tokio::spawn(async move {
            let mut reattach = reattach;
            let last = chain.len().saturating_sub(1);
            for (i, (spec, attempt)) in chain.into_iter().zip(attempts).enumerate() {
                if i > 0 && stop_rx.borrow().is_some() {
                    break;
                }
                let mut ctx = ctx.clone();
                ctx.attempt = attempt;
                ctx.earlier = record_read(&session, |s| s.earlier_figures()).unwrap_or_default();
                ctx.parts = record_read(&session, |s| s.node_parts()).unwrap_or_default();
                let (tx, mut rx) = mpsc::channel::<PhaseEvent>(1024);
                let task = {
                    let spec = Arc::clone(&spec);
                    let stop_rx = stop_rx.clone();
                    let reattach = reattach.take();
                    tokio::spawn(async move {
                        match reattach {
                            Some(recorded) => {
                                reattach_phase(&ctx, spec, stop_rx, tx, recorded).await
                            }
                            None => run_phase(&ctx, spec, stop_rx, tx).await,
                        }
                    })
                };
                // A record that cannot be written is said once on the console; the phase
                // goes on.
                let mut record_failed = false;
                let mut started = None;
                while let Some(ev) = rx.recv().await {
                    match &ev {
                        PhaseEvent::Started { at_ms, .. } => started = Some(*at_ms),
                        // Free before the console hears of the end, so its next `s` works.
                        PhaseEvent::Finished { .. } if i == last => release(&running, generation),
                        _ => {}
                    }
                    let written = record(&session, |s| s.event(&ev));
                    if let Err(e) = written
                        && !std::mem::replace(&mut record_failed, true)
                    {
                        tracing::warn!("run record: {e}");
                        let text =
                            format!("run record: {e} (the phase goes on; the record is not whole)");
                        let _ = events.send(SourceEvent::Notice { text }).await;
                    }
                    if events.send(SourceEvent::Phase(ev)).await.is_err() {
                        break;
                    }
                }
                if let Ok(outcome) = task.await {
                    let done = record(&session, |s| {
                        s.phase_done(&spec, started, &outcome, telemetry.as_deref())?;
                        s.finish(false).map(|_| ())
                    });
                    if let Err(e) = done {
                        tracing::warn!("run record: {e}");
                        let text = format!("run record: {e}");
                        let _ = events.send(SourceEvent::Notice { text }).await;
                    }
                }
            }
            release(&running, generation);
        });
    }

    /// Take over the run in `run_dir` (an earlier console died): its record goes on, and
    /// [`PhaseDriver::resume_pending`] shows its verdicts and re-attaches to what still runs.
    pub fn resume(&mut self, run_dir: &std::path::Path) -> Result<(), crate::record::RecordError> {
        let (session, state) = RunSession::resume(run_dir)?;
        self.ctx.run_id = session.summary.run_id.clone();
        let pending = state.unfinished.last().cloned().map(|id| {
            let lines = state
                .lines
                .iter()
                .filter(|((phase, _), _)| *phase == id)
                .map(|((_, node), n)| (node.clone(), *n))
                .collect();
            let started_ms = state.started_ms.get(&id).copied();
            (id, lines, started_ms)
        });
        if let Ok(mut s) = self.session.lock() {
            *s = Some(session);
        }
        self.open_recording();
        self.pending = pending;
        self.attempts = state.attempts.clone();
        Ok(())
    }

    /// After [`PhaseDriver::resume`]: tell the console what the run already decided, and
    /// re-attach to the phase that was running.
    pub async fn resume_pending(&mut self, events: &mpsc::Sender<SourceEvent>) {
        let done: Vec<crate::record::RecordPhase> = self
            .session
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.summary.phases.clone()))
            .unwrap_or_default();
        for p in done {
            // Shown, not recorded again: the record has them.
            let ev = PhaseEvent::Finished {
                phase: p.id,
                at_ms: p.ended_ms,
                verdict: p.verdict,
                reason: p.reason,
            };
            let _ = events.send(SourceEvent::Phase(ev)).await;
        }
        if let Some((id, lines, started_ms)) = self.pending.take() {
            match self.ctx.plan.find(&id).cloned() {
                Some(spec) => {
                    let _ = events
                        .send(SourceEvent::Notice {
                            text: format!("re-attaching to {id}"),
                        })
                        .await;
                    // Shown running since its recorded start (▶ and its elapsed time, and `a`
                    // aborts it); not recorded again: the record has its start.
                    let started = PhaseEvent::Started {
                        phase: id.clone(),
                        at_ms: started_ms.unwrap_or_else(crate::model::now_ms),
                    };
                    let _ = events.send(SourceEvent::Phase(started)).await;
                    self.spawn(spec, events, Some(lines));
                }
                None => {
                    let _ = events
                        .send(SourceEvent::Notice {
                            text: format!("{id} was running but is not in this plan"),
                        })
                        .await;
                }
            }
        }
    }

    /// The telemetry log the phases ask at their end; the source feeds it.
    pub fn telemetry(&self) -> Option<Arc<dyn crate::model::watch::TelemetryWatch>> {
        self.ctx.telemetry.clone()
    }

    /// Abort whatever runs (the console quits with "abort").
    pub fn abort_all(&self) {
        if let Some((_, stop, _)) = self.running.lock().ok().and_then(|r| r.clone()) {
            let _ = stop.send(Some(StopReason::Aborted));
        }
    }
}

impl PhaseDriver {
    /// One node event (or clock tick) as the source sent it at `at_ms`, through the telemetry
    /// watch beside the phases.
    pub fn observe_telemetry(&mut self, ev: &SourceEvent, at_ms: UnixMillis) {
        let found = self.telemetry().and_then(|log| log.observe_at(ev, at_ms));
        self.observe(ev, at_ms, found.as_deref());
    }
}
