//! The phase driver beside a telemetry source: the console starts both, and this task joins
//! them. The source only watches (it is handed no phase commands); the console's commands go to
//! the driver; every event the source sends passes the driver's telemetry watch (a phase's Xid
//! and finding gates, the run record) on its way to the console.

use tokio::sync::mpsc;

use crate::console::driver::PhaseDriver;
use crate::model::phase::PhaseCommand;
use crate::model::{Source, SourceEvent, SourceTask, now_ms};

/// Events a source may have sent ahead of the console before it waits.
const QUEUED: usize = 8192;

/// A telemetry source with the phase driver beside it, itself a [`Source`] for the console.
pub struct PhasesBeside {
    source: Box<dyn Source>,
    driver: PhaseDriver,
}

impl PhasesBeside {
    /// Watch with `source`; run phases with `driver` when the console asks (`s`, `r`, `a`).
    pub fn new(source: Box<dyn Source>, driver: PhaseDriver) -> Self {
        Self { source, driver }
    }
}

impl Source for PhasesBeside {
    fn run(
        self: Box<Self>,
        events: mpsc::Sender<SourceEvent>,
        mut commands: mpsc::UnboundedReceiver<PhaseCommand>,
    ) -> SourceTask {
        Box::pin(async move {
            let PhasesBeside { source, mut driver } = *self;
            // A console that took a run over shows its verdicts and re-attaches; one asked to
            // record from the start opens its record before the first node speaks.
            driver.resume_pending(&events).await;
            driver.open_at_start(&events).await;
            let watches = driver.telemetry().is_some();
            let (to_console, mut from_source) = mpsc::channel::<SourceEvent>(QUEUED);
            // The source hears no phase commands; the sender stays alive while this task
            // runs, as a closed channel tells a source that the console is gone.
            let (_no_commands, none) = mpsc::unbounded_channel::<PhaseCommand>();
            let mut watching = source.run(to_console, none);
            // The console leaving by "detach" drops its receiver and cancels this task: what
            // runs on the nodes goes on. Only a console whose commands stopped without that
            // (it is gone) has its phases stopped rather than left unwatched.
            loop {
                tokio::select! {
                    ev = from_source.recv() => {
                        let Some(ev) = ev else { return };
                        if watches {
                            let at_ms = match ev {
                                SourceEvent::Clock { at_ms } => at_ms,
                                _ => now_ms(),
                            };
                            driver.observe_telemetry(&ev, at_ms);
                        }
                        if events.send(ev).await.is_err() {
                            return;
                        }
                    }
                    cmd = commands.recv() => match cmd {
                        Some(cmd) => driver.command(cmd, &events).await,
                        None => {
                            driver.abort_all();
                            return;
                        }
                    },
                    () = &mut watching => return,
                }
            }
        })
    }
}
