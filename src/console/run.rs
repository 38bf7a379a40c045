//! The terminal loop: one select over source events, keys, signals and the redraw tick. It owns
//! the terminal and restores it on every way out (return, error, panic via ratatui's hook,
//! SIGTERM/SIGHUP/SIGINT). Redraws happen only when something changed, at most `fps` a second.

use std::time::Duration;

use color_eyre::eyre::Result;
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::app::action::Effect;
use crate::app::state::{Event, State};
use crate::model::phase::{PhaseCommand, PhaseEvent};
use crate::model::{Source, SourceEvent};

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Redraw cap.
    pub fps: u32,
    /// Leave after this long.
    pub duration: Option<Duration>,
    /// Draw off-screen at this size instead of the terminal (measurements, soak runs).
    pub headless: Option<(u16, u16)>,
    /// Where the replay keys go, when the console plays a run record.
    pub playback: Option<mpsc::UnboundedSender<crate::sources::replay::PlaybackCommand>>,
}

/// Where frames go.
enum Screen {
    Terminal(ratatui::DefaultTerminal),
    Offscreen(Buffer),
}

impl Screen {
    fn draw(&mut self, state: &State) -> Result<()> {
        match self {
            Screen::Terminal(t) => {
                t.draw(|f| crate::ui::render(state, f))?;
            }
            Screen::Offscreen(buf) => {
                buf.reset();
                let area = buf.area;
                crate::ui::draw(state, area, buf);
            }
        }
        Ok(())
    }

    /// Clear the terminal and forget what it showed: the next draw sends every cell. Not
    /// ratatui's `clear`, which first asks the terminal where its cursor is and, with no
    /// answer (a pty relay, a slow link), gives up without clearing.
    fn clear(&mut self) {
        if let Screen::Terminal(t) = self {
            full_redraw(t);
        }
    }

    /// SIGTSTP (`kill -TSTP`, a job-control stop): give the shell its terminal back (main
    /// screen, cooked mode, cursor shown), stop, and on SIGCONT take the terminal again and
    /// draw everything anew (the shell drew over it meanwhile). Returns the size to lay out.
    fn suspend(&mut self) -> Option<(u16, u16)> {
        let Screen::Terminal(t) = self else {
            // Off-screen there is no terminal to hand back: only the stop itself.
            // SAFETY: as below.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
            return None;
        };
        let _ = t.show_cursor();
        ratatui::restore();
        // SAFETY: raise sends a signal to this process; SIGSTOP cannot be caught, so every
        // thread stops here until SIGCONT.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
        let _ = crossterm::terminal::enable_raw_mode();
        let _ = crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen);
        // Through the terminal, so it knows the cursor is hidden and shows it again at the end.
        let _ = t.hide_cursor();
        full_redraw(t);
        t.size().ok().map(|s| (s.width, s.height))
    }
}

/// The screen cleared, and ratatui's record of it emptied (both its buffers), so the next draw
/// sends every cell: the screen is a full frame whatever was drawn over it.
fn full_redraw<B: ratatui::backend::Backend + std::io::Write>(t: &mut ratatui::Terminal<B>) {
    let _ = crossterm::execute!(
        t.backend_mut(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    );
    t.swap_buffers();
}

/// The other signals whose default action ends the process (and would leave the terminal raw,
/// on the alternate screen, the cursor hidden): each ends the console as SIGTERM does.
fn ending_signals() -> std::io::Result<mpsc::UnboundedReceiver<&'static str>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for (raw, name) in [
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGIO, "SIGIO"),
        #[cfg(target_os = "linux")]
        (libc::SIGPWR, "SIGPWR"),
    ] {
        let mut sig = signal(SignalKind::from_raw(raw))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while sig.recv().await.is_some() {
                if tx.send(name).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}

/// Run the console over `source` until the user (or a signal, or `duration`) ends it.
pub async fn run_console(
    source: Box<dyn Source>,
    mut state: State,
    opts: RunOptions,
) -> Result<ConsoleEnd> {
    if opts.headless.is_none() && !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(no_terminal());
    }
    let (event_tx, mut events) = mpsc::channel::<SourceEvent>(8192);
    let (command_tx, command_rx) = mpsc::unbounded_channel::<PhaseCommand>();
    let source_task = tokio::spawn(source.run(event_tx, command_rx));

    let mut screen = match opts.headless {
        Some((w, h)) => {
            state.update(Event::Resize(w, h));
            Screen::Offscreen(Buffer::empty(Rect::new(0, 0, w, h)))
        }
        None => {
            let terminal = match ratatui::try_init() {
                Ok(t) => t,
                Err(_) => {
                    // Raw mode half set up is still a terminal to give back.
                    ratatui::restore();
                    source_task.abort();
                    return Err(no_terminal());
                }
            };
            let size = terminal.size().unwrap_or_default();
            state.update(Event::Resize(size.width, size.height));
            Screen::Terminal(terminal)
        }
    };
    let result = event_loop(&mut state, &mut screen, &mut events, &command_tx, &opts).await;
    if let Screen::Terminal(t) = &mut screen {
        // Whatever the last frame did with the cursor, the shell gets it back visible.
        let _ = t.show_cursor();
        ratatui::restore();
    }
    drop(events);
    source_task.abort();
    result.map(|()| ConsoleEnd {
        recording: state.recording.clone(),
        running: state.store.running_phase().map(|p| p.spec.id.clone()),
    })
}

/// What the console left behind when it ended, for the lines printed after the terminal is
/// given back: a run is never lost from sight.
#[derive(Debug, Clone, Default)]
pub struct ConsoleEnd {
    /// The run directory it recorded into, if any.
    pub recording: Option<String>,
    /// The phase still running on the nodes (the console detached from it), if any.
    pub running: Option<String>,
}

impl ConsoleEnd {
    /// The lines to print: the run directory, the phase left running, and the commands to
    /// resume and to report. Empty when nothing was recorded.
    pub fn words(&self) -> Vec<String> {
        let Some(dir) = &self.recording else {
            return Vec::new();
        };
        let dir = crate::transport::quote::shell_quote(dir);
        let mut out = vec![format!("burnin: the run is recorded in {dir}")];
        if let Some(phase) = &self.running {
            out.push(format!(
                "  {phase} still runs on the nodes (detached): burnin watch --resume {dir}"
            ));
        } else {
            out.push(format!("  resume:  burnin watch --resume {dir}"));
        }
        out.push(format!("  report:  burnin report {dir}"));
        out
    }
}

/// What to use instead of the console where there is no terminal (`ssh host burnin watch`
/// without `-t`, a pipe, a cron job): one line, not a panic.
fn no_terminal() -> color_eyre::eyre::Report {
    color_eyre::eyre::eyre!(
        "the console needs a terminal and this has none (over SSH use `ssh -t`); without one: \
         `burnin run` (the plan, headless), `burnin status`, `burnin triage`, or --headless WxH"
    )
}

/// How long "abort and quit" waits for the phase to report its end.
const ABORT_WAIT: Duration = Duration::from_secs(30);

async fn event_loop(
    state: &mut State,
    screen: &mut Screen,
    events: &mut mpsc::Receiver<SourceEvent>,
    commands: &mpsc::UnboundedSender<PhaseCommand>,
    opts: &RunOptions,
) -> Result<()> {
    let headless = matches!(screen, Screen::Offscreen(_));
    let mut keys = (!headless).then(EventStream::new);
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    // SIGQUIT's default would dump core with the terminal raw and on the alternate screen.
    let mut sigquit = signal(SignalKind::quit())?;
    let mut sigtstp = signal(SignalKind::from_raw(libc::SIGTSTP))?;
    // Continued after a stop burnin did not see (SIGSTOP cannot be caught): the shell may have
    // drawn over the screen meanwhile, so everything is drawn anew, not only what changed.
    let mut sigcont = signal(SignalKind::from_raw(libc::SIGCONT))?;
    let mut ending = ending_signals()?;
    let frame_period = Duration::from_millis(1000 / u64::from(opts.fps.clamp(1, 60)));
    let mut redraw = tokio::time::interval(frame_period);
    redraw.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let deadline = opts.duration.map(|d| tokio::time::Instant::now() + d);
    let mut dirty = true;
    // After "abort and quit": leave once the phase reports its end, or after a grace period.
    let mut leaving: Option<(String, tokio::time::Instant)> = None;

    loop {
        let effect = tokio::select! {
            Some(ev) = events.recv() => {
                if let Some((phase, _)) = &leaving
                    && let SourceEvent::Phase(PhaseEvent::Finished { phase: p, .. }) = &ev
                    && p == phase
                {
                    state.update(Event::Source(ev));
                    return Ok(());
                }
                state.update(Event::Source(ev));
                // Take whatever else is queued before drawing: one frame per batch.
                let mut taken = 0;
                while taken < 4096 {
                    match events.try_recv() {
                        Ok(ev) => { state.update(Event::Source(ev)); taken += 1; }
                        Err(_) => break,
                    }
                }
                dirty = true;
                None
            }
            Some(term) = async {
                match keys.as_mut() {
                    Some(k) => k.next().await,
                    None => std::future::pending().await,
                }
            } => {
                dirty = true;
                match term {
                    Ok(TermEvent::Key(key)) => state.update(Event::Key(key)),
                    Ok(TermEvent::Resize(w, h)) => state.update(Event::Resize(w, h)),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::warn!("terminal input: {e}");
                        None
                    }
                }
            }
            _ = sigterm.recv() => state.update(Event::Signal("SIGTERM".into())),
            _ = sighup.recv() => state.update(Event::Signal("SIGHUP".into())),
            _ = sigint.recv() => state.update(Event::Signal("SIGINT".into())),
            _ = sigquit.recv() => state.update(Event::Signal("SIGQUIT".into())),
            Some(name) = ending.recv() => state.update(Event::Signal(name.into())),
            _ = sigcont.recv() => {
                screen.clear();
                dirty = true;
                None
            }
            _ = sigtstp.recv() => {
                if let Some((w, h)) = screen.suspend() {
                    state.update(Event::Resize(w, h));
                }
                dirty = true;
                None
            }
            _ = redraw.tick() => {
                if dirty {
                    screen.draw(state)?;
                    dirty = false;
                }
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    return Ok(());
                }
                if leaving.as_ref().is_some_and(|(_, d)| tokio::time::Instant::now() >= *d) {
                    return Ok(());
                }
                None
            }
        };
        match effect {
            None => {}
            Some(Effect::Command(c)) => {
                tracing::info!(?c, "phase command");
                if commands.send(c).is_err() {
                    state.say(
                        crate::app::state::Tone::Warn,
                        "the phase runner has stopped",
                    );
                }
            }
            Some(Effect::Quit) => return Ok(()),
            Some(Effect::Playback(c)) => {
                if let Some(p) = &opts.playback {
                    let _ = p.send(c);
                }
            }
            Some(Effect::AbortAndQuit(c)) => {
                let phase = match &c {
                    PhaseCommand::Abort(p)
                    | PhaseCommand::Start(p)
                    | PhaseCommand::Confirm(p)
                    | PhaseCommand::Localize(p) => p.clone(),
                };
                tracing::info!(phase, "abort and quit");
                if commands.send(c).is_err() {
                    return Ok(());
                }
                // Long enough for the nodes to TERM, wait the grace period, KILL and confirm.
                leaving = Some((phase, tokio::time::Instant::now() + ABORT_WAIT));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConsoleEnd;

    #[test]
    fn every_end_of_a_recorded_console_names_the_run_and_what_to_do_next() {
        assert!(ConsoleEnd::default().words().is_empty(), "nothing recorded");
        let quit = ConsoleEnd {
            recording: Some("burnin-runs/20261206-0900-ab12".into()),
            running: None,
        };
        assert_eq!(
            quit.words(),
            [
                "burnin: the run is recorded in burnin-runs/20261206-0900-ab12",
                "  resume:  burnin watch --resume burnin-runs/20261206-0900-ab12",
                "  report:  burnin report burnin-runs/20261206-0900-ab12",
            ]
        );
        let detached = ConsoleEnd {
            recording: Some("runs/it's here".into()),
            running: Some("T7".into()),
        };
        let words = detached.words().join("\n");
        assert!(
            words.contains(
                "T7 still runs on the nodes (detached): burnin watch --resume 'runs/it'\\''s here'"
            ),
            "{words}"
        );
    }
}
