//! The console's whole state and its pure update: `update(event) -> Option<Effect>`. No I/O and
//! no clock here (time comes from source events), so every key and every frame is testable
//! without a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::layout::Rect;

use super::action::{Action, Effect};
use super::keymap;
use crate::app::layout::{Layout, PaneKind};
use crate::app::theme::Theme;
use crate::model::SourceEvent;
use crate::model::phase::{PhaseCommand, PhaseEvent};
use crate::model::units::Period;
use crate::sources::replay::PlaybackCommand;
use crate::store::{ClusterStore, PhaseState};
use crate::triage::{Finding, Triage};

/// Everything that reaches the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A key press.
    Key(KeyEvent),
    /// The terminal changed size.
    Resize(u16, u16),
    /// A source reported something.
    Source(SourceEvent),
    /// The process got SIGTERM/SIGHUP: leave cleanly.
    Signal(String),
}

/// What needs confirming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    /// Abort this running phase?
    Abort(String),
    /// Quit while this phase runs: detach or abort?
    Quit(String),
}

/// What covers the panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Nothing.
    None,
    /// The key table.
    Help,
    /// Details of the selected GPU.
    GpuDetails,
    /// Details of the selected phase.
    PhaseDetails,
    /// Full-screen log of the selected phase.
    Logs,
    /// A question.
    Confirm(Confirm),
}

/// A replay's place and pace as the console steers it (the position itself is the store's
/// clock: the record's instant the replay has reached).
#[derive(Debug, Clone, PartialEq)]
pub struct Playback {
    /// When the record starts.
    pub start_ms: crate::model::UnixMillis,
    /// The last instant the record knows.
    pub end_ms: crate::model::UnixMillis,
    /// Record seconds a second.
    pub speed: f64,
    /// The replay's clock stands still.
    pub paused: bool,
}

impl Playback {
    /// Seconds from the record's start to `now_ms`, within the record.
    pub fn position_s(&self, now_ms: crate::model::UnixMillis) -> u64 {
        now_ms.clamp(self.start_ms, self.end_ms.max(self.start_ms)) / 1000 - self.start_ms / 1000
    }

    /// The record's length in seconds.
    pub fn length_s(&self) -> u64 {
        self.end_ms.saturating_sub(self.start_ms) / 1000
    }
}

/// `4×`, `0.5×`: a speed as the status bar writes it.
pub fn speed_label(speed: f64) -> String {
    if speed >= 1.0 {
        format!("{}×", speed.round())
    } else {
        format!("{speed}×")
    }
}

/// How a status-bar message should look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Neutral.
    Info,
    /// Something the user should know went wrong.
    Warn,
}

/// UI-only state: focus, selections, overlay, filter.
#[derive(Debug, Clone)]
pub struct UiState {
    /// Focused pane.
    pub focus: PaneKind,
    /// Index into the loaded layouts.
    pub layout: usize,
    /// Index into the loaded themes.
    pub theme: usize,
    /// Selected node (index into the store's nodes).
    pub node: usize,
    /// Selected GPU index on that node.
    pub gpu: u32,
    /// Selected phase (index into the plan).
    pub phase: usize,
    /// Selection follows the running phase until the user moves it.
    pub follow_phase: bool,
    /// Selected finding.
    pub finding: usize,
    /// Log lines scrolled back from the newest (0 follows the output).
    pub log_scroll: usize,
    /// Lines of the key help scrolled past (a small terminal does not hold them all).
    pub help_scroll: usize,
    /// What covers the panes.
    pub overlay: Overlay,
    /// Node-name filter.
    pub filter: String,
    /// Typing goes into the filter.
    pub editing_filter: bool,
    /// Status-bar message.
    pub status: Option<(Tone, String)>,
    /// Terminal size.
    pub size: (u16, u16),
}

/// The console's state.
#[derive(Debug, Clone)]
pub struct State {
    /// What the sources said, live.
    pub store: ClusterStore,
    /// Findings over the live store.
    pub findings: Vec<Finding>,
    /// What the screen shows while paused.
    pub frozen: Option<Box<(ClusterStore, Vec<Finding>)>>,
    triage: Triage,
    /// UI state.
    pub ui: UiState,
    /// Loaded themes (at least one).
    pub themes: Vec<Theme>,
    /// Loaded layouts (at least one).
    pub layouts: Vec<Layout>,
    /// Where the data comes from, for the status bar.
    pub source_label: String,
    /// Set when the loop should end.
    pub quitting: bool,
    /// Whether a running phase runs on real nodes, so quitting asks whether to leave it
    /// running or abort it. The demo's simulated cluster and a replay run nothing anywhere:
    /// `q` quits there at once.
    pub phases_on_nodes: bool,
    /// Set when the console plays a run record: the replay keys steer it.
    pub playback: Option<Playback>,
    /// The run directory the console records into, once its record is open.
    pub recording: Option<String>,
}

impl State {
    /// Judge by these thresholds (burnin.toml's `[triage]`) from now on.
    pub fn set_thresholds(&mut self, thresholds: crate::triage::Thresholds) {
        self.triage = Triage::with_thresholds(thresholds);
    }

    /// The sources' sample period (the inventory's `interval`): one history slot a period,
    /// a node stale after three periods without a frame. Called before anything arrives; the
    /// store starts afresh with it.
    pub fn set_period(&mut self, period: Period) {
        self.store = ClusterStore::with_period(period);
    }

    /// The thresholds triage judges by (panes draw their gate lines from them).
    pub fn thresholds(&self) -> &crate::triage::Thresholds {
        self.triage.thresholds()
    }

    /// A fresh state. Empty `themes`/`layouts` fall back to the embedded defaults.
    pub fn new(
        mut themes: Vec<Theme>,
        mut layouts: Vec<Layout>,
        source_label: impl Into<String>,
        size: (u16, u16),
    ) -> Self {
        if themes.is_empty() {
            themes.push(Theme::fallback());
        }
        if layouts.is_empty() {
            layouts.push(Layout::fallback());
        }
        Self {
            store: ClusterStore::new(),
            findings: Vec::new(),
            frozen: None,
            triage: Triage::new(),
            ui: UiState {
                focus: PaneKind::Gpus,
                layout: 0,
                theme: 0,
                node: 0,
                gpu: 0,
                phase: 0,
                follow_phase: true,
                finding: 0,
                log_scroll: 0,
                help_scroll: 0,
                overlay: Overlay::None,
                filter: String::new(),
                editing_filter: false,
                status: None,
                size,
            },
            themes,
            layouts,
            source_label: source_label.into(),
            quitting: false,
            phases_on_nodes: true,
            playback: None,
            recording: None,
        }
    }

    /// The store and findings the screen shows (frozen while paused).
    pub fn shown(&self) -> (&ClusterStore, &[Finding]) {
        match &self.frozen {
            Some(f) => (&f.0, &f.1),
            None => (&self.store, &self.findings),
        }
    }

    /// The active theme.
    pub fn theme(&self) -> &Theme {
        &self.themes[self.ui.theme.min(self.themes.len() - 1)]
    }

    /// The active layout.
    pub fn layout(&self) -> &Layout {
        &self.layouts[self.ui.layout.min(self.layouts.len() - 1)]
    }

    /// The area panes get (the screen less the status bar).
    pub fn pane_area(&self) -> Rect {
        let (w, h) = self.ui.size;
        Rect::new(0, 0, w, h.saturating_sub(1))
    }

    /// Panes visible now, in focus order.
    pub fn visible_panes(&self) -> Vec<PaneKind> {
        self.layout().visible(self.pane_area())
    }

    /// Indices of the shown findings that pass the filter: those whose node, subject or rule
    /// holds the filter's text (all of them with no filter).
    pub fn filtered_findings(&self) -> Vec<usize> {
        let (_, findings) = self.shown();
        let f = self.ui.filter.to_lowercase();
        findings
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                f.is_empty()
                    || x.node
                        .as_ref()
                        .is_some_and(|n| n.to_lowercase().contains(&f))
                    || x.subject().to_lowercase().contains(&f)
                    || x.rule.contains(f.as_str())
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Node indices that pass the filter.
    pub fn filtered_nodes(&self) -> Vec<usize> {
        let (store, _) = self.shown();
        let f = self.ui.filter.to_lowercase();
        store
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| f.is_empty() || n.name.to_lowercase().contains(&f))
            .map(|(i, _)| i)
            .collect()
    }

    /// Put a message in the status bar.
    pub fn say(&mut self, tone: Tone, text: impl Into<String>) {
        self.ui.status = Some((tone, text.into()));
    }

    /// Take in one event; returns what the loop must do outside the state.
    pub fn update(&mut self, event: Event) -> Option<Effect> {
        match event {
            Event::Source(ev) => {
                self.ingest(ev);
                None
            }
            Event::Resize(w, h) => {
                self.ui.size = (w, h);
                self.keep_focus_visible();
                None
            }
            Event::Signal(name) => {
                self.say(
                    Tone::Warn,
                    format!("{name}: leaving; phases keep running on the nodes"),
                );
                self.quitting = true;
                Some(Effect::Quit)
            }
            Event::Key(key) => {
                if key.kind == KeyEventKind::Release {
                    return None;
                }
                self.on_key(key)
            }
        }
    }

    fn ingest(&mut self, ev: SourceEvent) {
        if ev == SourceEvent::Rewind {
            // A replay going back: what was judged so far belongs to a later instant.
            self.findings.clear();
            self.frozen = None;
            self.triage = Triage::with_thresholds(*self.triage.thresholds());
        }
        let clock = matches!(ev, SourceEvent::Clock { .. });
        if let SourceEvent::Phase(PhaseEvent::Started { phase, .. }) = &ev
            && self.ui.follow_phase
            && let Some(i) = self.store.phases.iter().position(|p| p.spec.id == *phase)
        {
            self.ui.phase = i;
            self.ui.log_scroll = 0;
        }
        if let SourceEvent::Phase(PhaseEvent::Finished {
            phase,
            verdict,
            reason,
            ..
        }) = &ev
        {
            let tone = match verdict {
                crate::model::phase::Verdict::Pass => Tone::Info,
                _ => Tone::Warn,
            };
            self.say(tone, format!("{phase} {}: {reason}", verdict.label()));
        }
        if let SourceEvent::Notice { text } = &ev {
            self.say(Tone::Warn, text.clone());
        }
        if let SourceEvent::Recording { dir } = &ev {
            self.recording = Some(dir.clone());
        }
        self.store.ingest(ev);
        if clock {
            self.findings = self.triage.evaluate(&self.store);
            self.ui.finding = self.ui.finding.min(self.findings.len().saturating_sub(1));
        }
    }

    fn keep_focus_visible(&mut self) {
        let visible = self.visible_panes();
        if !visible.contains(&self.ui.focus)
            && let Some(first) = visible.first()
        {
            self.ui.focus = *first;
        }
    }

    fn running_phase_id(&self) -> Option<String> {
        self.store.running_phase().map(|p| p.spec.id.to_string())
    }

    fn on_key(&mut self, key: KeyEvent) -> Option<Effect> {
        if self.ui.editing_filter {
            match key.code {
                KeyCode::Enter => self.ui.editing_filter = false,
                KeyCode::Esc => {
                    self.ui.editing_filter = false;
                    self.ui.filter.clear();
                }
                KeyCode::Backspace => {
                    self.ui.filter.pop();
                }
                KeyCode::Char(c) if !c.is_control() => self.ui.filter.push(c),
                _ => {}
            }
            self.snap_node_to_filter();
            return None;
        }
        if let Overlay::Confirm(confirm) = self.ui.overlay.clone() {
            return self.on_confirm_key(confirm, key);
        }
        let action = keymap::action_for(&key)?;
        self.on_action(action)
    }

    fn on_confirm_key(&mut self, confirm: Confirm, key: KeyEvent) -> Option<Effect> {
        let close = |s: &mut Self| s.ui.overlay = Overlay::None;
        match (confirm, key.code) {
            (Confirm::Abort(id), KeyCode::Char('y') | KeyCode::Enter) => {
                close(self);
                self.say(
                    Tone::Warn,
                    format!("aborting {id}: TERM to its process group"),
                );
                Some(Effect::Command(PhaseCommand::Abort(id)))
            }
            (Confirm::Quit(_), KeyCode::Char('d')) => {
                close(self);
                self.quitting = true;
                Some(Effect::Quit)
            }
            (Confirm::Quit(id), KeyCode::Char('a')) => {
                close(self);
                self.quitting = true;
                Some(Effect::AbortAndQuit(PhaseCommand::Abort(id)))
            }
            (_, KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('q')) => {
                close(self);
                None
            }
            _ => None,
        }
    }

    fn on_action(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Help => {
                self.ui.overlay = if self.ui.overlay == Overlay::Help {
                    Overlay::None
                } else {
                    self.ui.help_scroll = 0;
                    Overlay::Help
                };
            }
            // The key help scrolls where the terminal is too short for it.
            Action::Up | Action::Down | Action::PageUp | Action::PageDown
                if self.ui.overlay == Overlay::Help =>
            {
                let step: isize = match action {
                    Action::Up => -1,
                    Action::Down => 1,
                    Action::PageUp => -10,
                    _ => 10,
                };
                self.ui.help_scroll = (self.ui.help_scroll as isize + step)
                    .clamp(0, keymap::HELP_LINES as isize)
                    as usize;
            }
            Action::Back => {
                if self.ui.overlay != Overlay::None {
                    self.ui.overlay = Overlay::None;
                } else if !self.ui.filter.is_empty() {
                    self.ui.filter.clear();
                } else {
                    self.ui.status = None;
                }
            }
            Action::Quit => {
                if self.ui.overlay != Overlay::None {
                    self.ui.overlay = Overlay::None;
                    return None;
                }
                match self.running_phase_id().filter(|_| self.phases_on_nodes) {
                    Some(id) => self.ui.overlay = Overlay::Confirm(Confirm::Quit(id)),
                    None => {
                        self.quitting = true;
                        return Some(Effect::Quit);
                    }
                }
            }
            Action::FocusNext | Action::FocusPrev => {
                let visible = self.visible_panes();
                if let Some(pos) = visible.iter().position(|p| *p == self.ui.focus) {
                    let n = visible.len();
                    let next = if action == Action::FocusNext {
                        (pos + 1) % n
                    } else {
                        (pos + n - 1) % n
                    };
                    self.ui.focus = visible[next];
                } else if let Some(first) = visible.first() {
                    self.ui.focus = *first;
                }
            }
            Action::Up | Action::Down | Action::PageUp | Action::PageDown => {
                self.move_vertical(action)
            }
            Action::Left | Action::Right => self.move_gpu(action == Action::Right),
            Action::Details => self.details(),
            // A replay shows what the run did; it has no nodes to start, stop or answer.
            Action::StartPhase | Action::RetryPhase | Action::AbortPhase | Action::ConfirmDrill
                if self.playback.is_some() =>
            {
                self.say(
                    Tone::Warn,
                    "a replay shows what the run did: phases are started, aborted and answered in the live console",
                );
            }
            Action::StartPhase => return self.start_selected(false),
            Action::RetryPhase => return self.start_selected(true),
            Action::ConfirmDrill => {
                let asked = self
                    .store
                    .drill_prompt()
                    .map(|(id, text)| (id.to_string(), text.to_string()));
                return match asked {
                    Some((id, text)) => {
                        self.say(
                            Tone::Info,
                            format!("{id}: done — {text}; timing the recovery"),
                        );
                        Some(Effect::Command(PhaseCommand::Confirm(id)))
                    }
                    None => {
                        self.say(Tone::Warn, "no drill is asking anything");
                        None
                    }
                };
            }
            Action::AbortPhase => match self.running_phase_id() {
                Some(id) => self.ui.overlay = Overlay::Confirm(Confirm::Abort(id)),
                None => self.say(Tone::Warn, "no phase is running"),
            },
            Action::Logs => {
                self.ui.overlay = if self.ui.overlay == Overlay::Logs {
                    Overlay::None
                } else {
                    Overlay::Logs
                };
            }
            Action::Filter => {
                self.ui.editing_filter = true;
            }
            Action::Layout(n) => {
                let idx = usize::from(n).saturating_sub(1);
                if idx < self.layouts.len() {
                    self.ui.layout = idx;
                    self.keep_focus_visible();
                    let name = self.layout().name.clone();
                    self.say(Tone::Info, format!("layout {n}: {name}"));
                } else {
                    self.say(
                        Tone::Warn,
                        format!("no layout {n} ({} loaded)", self.layouts.len()),
                    );
                }
            }
            Action::NextTheme => {
                self.ui.theme = (self.ui.theme + 1) % self.themes.len();
                let name = self.theme().name.clone();
                self.say(Tone::Info, format!("theme: {name}"));
            }
            Action::PauseDisplay if self.playback.is_some() => {
                let now = self.store.now_ms;
                let p = self.playback.as_mut()?;
                p.paused = !p.paused;
                let at = crate::model::human_secs(p.position_s(now));
                if p.paused {
                    self.say(Tone::Info, format!("replay paused at +{at} (p plays on)"));
                    return Some(Effect::Playback(PlaybackCommand::Pause));
                }
                self.say(Tone::Info, format!("replay playing from +{at}"));
                return Some(Effect::Playback(PlaybackCommand::Resume));
            }
            Action::ReplaySpeed(faster) => {
                let Some(p) = self.playback.as_mut() else {
                    self.say(
                        Tone::Warn,
                        "only a replay has a speed (burnin replay RUN_DIR)",
                    );
                    return None;
                };
                let factor = if faster { 2.0 } else { 0.5 };
                p.speed = (p.speed * factor).clamp(1.0 / 16.0, crate::sources::replay::MAX_SPEED);
                let speed = p.speed;
                self.say(Tone::Info, format!("replay speed {}", speed_label(speed)));
                return Some(Effect::Playback(PlaybackCommand::Speed(speed)));
            }
            Action::ReplaySeek(delta) => {
                let now = self.store.now_ms;
                let Some(p) = self.playback.as_ref() else {
                    self.say(Tone::Warn, "only a replay can seek (burnin replay RUN_DIR)");
                    return None;
                };
                let target = p
                    .position_s(now)
                    .saturating_add_signed(i64::from(delta))
                    .min(p.length_s());
                self.say(
                    Tone::Info,
                    format!(
                        "replay: to +{} of {}",
                        crate::model::human_secs(target),
                        crate::model::human_secs(p.length_s())
                    ),
                );
                return Some(Effect::Playback(PlaybackCommand::Seek(target)));
            }
            Action::PauseDisplay => {
                if self.frozen.take().is_some() {
                    self.say(Tone::Info, "display live");
                } else {
                    self.frozen = Some(Box::new((self.store.clone(), self.findings.clone())));
                    self.say(
                        Tone::Info,
                        "display paused (p resumes); data is still collected",
                    );
                }
            }
        }
        None
    }

    fn start_selected(&mut self, retry: bool) -> Option<Effect> {
        let phase = self.store.phases.get(self.ui.phase)?;
        let id = phase.spec.id.to_string();
        if let Some(running) = self.running_phase_id() {
            self.say(
                Tone::Warn,
                format!("{running} is running; abort it first (a)"),
            );
            return None;
        }
        match (phase.state, retry) {
            (PhaseState::Pending, true) => {
                self.say(Tone::Warn, format!("{id} has not run yet; s starts it"));
                None
            }
            (PhaseState::Done(v), false) => {
                self.say(
                    Tone::Warn,
                    format!("{id} already ended {}; r runs it again", v.label()),
                );
                None
            }
            _ => {
                self.ui.follow_phase = true;
                self.say(Tone::Info, format!("starting {id}"));
                Some(Effect::Command(PhaseCommand::Start(id)))
            }
        }
    }

    fn move_vertical(&mut self, action: Action) {
        let step: isize = match action {
            Action::Up => -1,
            Action::Down => 1,
            Action::PageUp => -10,
            _ => 10,
        };
        match self.ui.focus {
            PaneKind::Gpus | PaneKind::Nvlink | PaneKind::Fabric => {
                let nodes = self.filtered_nodes();
                if nodes.is_empty() {
                    return;
                }
                let pos = nodes.iter().position(|&i| i == self.ui.node).unwrap_or(0) as isize;
                let new = (pos + step).clamp(0, nodes.len() as isize - 1) as usize;
                self.ui.node = nodes[new];
            }
            PaneKind::Phases => {
                let n = self.store.phases.len() as isize;
                self.ui.phase = (self.ui.phase as isize + step).clamp(0, n - 1) as usize;
                self.ui.follow_phase = false;
                self.ui.log_scroll = 0;
            }
            PaneKind::Triage => {
                let shown = self.filtered_findings();
                if shown.is_empty() {
                    return;
                }
                let pos = shown
                    .iter()
                    .position(|&i| i == self.ui.finding)
                    .unwrap_or(0) as isize;
                let new = (pos + step).clamp(0, shown.len() as isize - 1) as usize;
                self.ui.finding = shown[new];
            }
            PaneKind::Log => {
                let len = self
                    .store
                    .phases
                    .get(self.ui.phase)
                    .map_or(0, |p| p.log.len()) as isize;
                // Up scrolls back (away from the newest line).
                let scroll = (self.ui.log_scroll as isize - step).clamp(0, len.max(1) - 1);
                self.ui.log_scroll = scroll as usize;
            }
            PaneKind::Nccl | PaneKind::Storage | PaneKind::Loader => {}
        }
    }

    fn move_gpu(&mut self, right: bool) {
        let (store, _) = self.shown();
        let count = store
            .nodes
            .get(self.ui.node)
            .map_or(0, |n| n.gpus.len() as u32);
        if count == 0 {
            return;
        }
        self.ui.gpu = if right {
            (self.ui.gpu + 1).min(count - 1)
        } else {
            self.ui.gpu.saturating_sub(1)
        };
    }

    fn snap_node_to_filter(&mut self) {
        let nodes = self.filtered_nodes();
        if !nodes.contains(&self.ui.node)
            && let Some(first) = nodes.first()
        {
            self.ui.node = *first;
        }
        let findings = self.filtered_findings();
        if !findings.contains(&self.ui.finding)
            && let Some(first) = findings.first()
        {
            self.ui.finding = *first;
        }
    }

    fn details(&mut self) {
        match self.ui.focus {
            PaneKind::Triage => {
                let target = self
                    .shown()
                    .1
                    .get(self.ui.finding)
                    .map(|f| (f.node.clone(), f.gpu));
                let Some((Some(node), gpu)) = target else {
                    return;
                };
                if let Some(i) = self.shown().0.nodes.iter().position(|n| n.name == node) {
                    self.ui.node = i;
                    self.ui.gpu = gpu.unwrap_or(0);
                    self.ui.filter.clear();
                    self.ui.overlay = Overlay::GpuDetails;
                }
            }
            PaneKind::Phases | PaneKind::Log => self.ui.overlay = Overlay::PhaseDetails,
            _ => self.ui.overlay = Overlay::GpuDetails,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
    use crossterm::event::KeyModifiers;

    fn key(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn code(c: KeyCode) -> Event {
        Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
    }

    fn state_at(s: u64) -> State {
        let mut state = State::new(vec![], vec![], "test", (160, 48));
        let mut sim = SimCluster::new(SimConfig::demo(1));
        for sec in 0..=s {
            for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
                state.update(Event::Source(e));
            }
        }
        state
    }

    /// A node that sends a frame every 5 s is not stale between its frames once the console
    /// knows the period (it was, at the default 1 s, in every Prometheus-mode site).
    #[test]
    fn a_five_second_period_is_not_stale_between_frames() {
        use crate::model::{NodeFrame, NodeHello};
        let hello = NodeHello {
            node: "n1".into(),
            host: "n1".into(),
            agent_version: "test".into(),
            driver: None,
            cuda: None,
            gpus: Vec::new(),
            topology: None,
            system: None,
            unavailable: Vec::new(),
        };
        let stale_at = |state: &mut State| {
            state.update(Event::Source(SourceEvent::Hello(hello.clone())));
            for at_ms in (0..=4).map(|i| 1_000 + i * 5_000) {
                state.update(Event::Source(SourceEvent::Frame(NodeFrame {
                    node: "n1".into(),
                    at_ms,
                    gpus: Vec::new(),
                    nics: Vec::new(),
                    netdevs: Vec::new(),
                })));
                for t in [at_ms, at_ms + 4_000] {
                    state.update(Event::Source(SourceEvent::Clock { at_ms: t }));
                    if state.findings.iter().any(|f| f.rule == "stale") {
                        return Some(t);
                    }
                }
            }
            None
        };
        let mut five = State::new(vec![], vec![], "test", (80, 24));
        five.set_period(Period::from_millis(5_000).expect("period"));
        assert_eq!(stale_at(&mut five), None);
        let mut default = State::new(vec![], vec![], "test", (80, 24));
        assert_eq!(
            stale_at(&mut default),
            Some(5_000),
            "the failure this guards against"
        );
    }

    /// The demo's node07 GPU3 stalls in T4 and never recovers: its finding lives from the first
    /// raise to the end of the plan, across every phase boundary, with one `since` (it used to
    /// flap at each boundary: "stalled 48s", then "18s", then "0s").
    #[test]
    fn a_stalled_gpu_stays_stalled_across_phase_boundaries() {
        let mut state = State::new(vec![], vec![], "test", (160, 48));
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let mut first: Option<(u64, u64)> = None;
        for sec in 0..=380 {
            for e in sim.advance_to(SIM_EPOCH_MS + sec * 1000) {
                state.update(Event::Source(e));
            }
            let stall = state.findings.iter().find(|f| {
                f.rule == "stalled" && f.node.as_deref() == Some("node07") && f.gpu == Some(3)
            });
            match (first, stall) {
                (None, Some(f)) => first = Some((sec, f.since_ms)),
                (Some((from, since)), Some(f)) => {
                    assert_eq!(
                        f.since_ms, since,
                        "since moved at {sec} s (raised at {from} s)"
                    );
                    assert!(
                        f.last_seen_ms >= SIM_EPOCH_MS + sec * 1000,
                        "clearing at {sec} s (raised at {from} s): {}",
                        f.why
                    );
                }
                (Some((from, _)), None) => panic!("gone at {sec} s (raised at {from} s)"),
                (None, None) => {}
            }
        }
        assert!(
            first.is_some_and(|(s, _)| (110..130).contains(&s)),
            "{first:?}"
        );
    }

    #[test]
    fn abort_asks_first_then_commands() {
        let mut state = state_at(30);
        assert_eq!(state.update(key('a')), None);
        assert_eq!(
            state.ui.overlay,
            Overlay::Confirm(Confirm::Abort("T2".into()))
        );
        assert_eq!(
            state.update(key('y')),
            Some(Effect::Command(PhaseCommand::Abort("T2".into())))
        );
        assert_eq!(state.ui.overlay, Overlay::None);
    }

    #[test]
    fn abort_can_be_cancelled() {
        let mut state = state_at(30);
        state.update(key('a'));
        assert_eq!(state.update(code(KeyCode::Esc)), None);
        assert_eq!(state.ui.overlay, Overlay::None);
    }

    #[test]
    fn quit_asks_while_a_phase_runs() {
        let mut state = state_at(30);
        assert_eq!(state.update(key('q')), None);
        assert!(matches!(
            state.ui.overlay,
            Overlay::Confirm(Confirm::Quit(_))
        ));
        assert_eq!(
            state.update(key('a')),
            Some(Effect::AbortAndQuit(PhaseCommand::Abort("T2".into())))
        );
        let mut idle = State::new(vec![], vec![], "test", (80, 24));
        assert_eq!(idle.update(key('q')), Some(Effect::Quit));
        // The demo and a replay run nothing on any node: nothing to leave running.
        let mut demo = state_at(30);
        demo.phases_on_nodes = false;
        assert_eq!(demo.update(key('q')), Some(Effect::Quit));
        assert_eq!(demo.ui.overlay, Overlay::None);
    }

    #[test]
    fn focus_moves_as_the_screen_reads() {
        // The overview at 160×48: GPUs on top, then Plan left of Triage, then the charts.
        let mut state = state_at(30);
        state.ui.size = (160, 48);
        let order = state.visible_panes();
        let at = |p: PaneKind| order.iter().position(|x| *x == p).expect("visible");
        assert_eq!(order[0], PaneKind::Gpus);
        assert!(at(PaneKind::Phases) < at(PaneKind::Triage), "{order:?}");
        assert!(at(PaneKind::Triage) < at(PaneKind::Nccl), "{order:?}");
    }

    #[test]
    fn the_key_help_scrolls_and_stops_at_its_end() {
        let mut state = state_at(30);
        state.update(key('?'));
        assert_eq!(state.ui.overlay, Overlay::Help);
        state.update(code(KeyCode::Down));
        state.update(code(KeyCode::Down));
        assert_eq!(state.ui.help_scroll, 2);
        assert_eq!(state.ui.node, 0, "the grid's selection stays");
        for _ in 0..10 {
            state.update(code(KeyCode::PageDown));
        }
        assert_eq!(state.ui.help_scroll, keymap::HELP_LINES);
        state.update(key('?'));
        state.update(key('?'));
        assert_eq!(state.ui.help_scroll, 0, "opened again from the top");
    }

    #[test]
    fn start_refuses_while_another_runs_and_starts_when_idle() {
        let mut state = state_at(30);
        state.ui.focus = PaneKind::Phases;
        state.update(code(KeyCode::Down));
        assert_eq!(state.update(key('s')), None);
        assert!(
            state
                .ui
                .status
                .as_ref()
                .is_some_and(|(_, m)| m.contains("abort it first"))
        );
        let mut idle = State::new(vec![], vec![], "test", (80, 24));
        assert_eq!(
            idle.update(key('s')),
            Some(Effect::Command(PhaseCommand::Start("T0".into())))
        );
        assert_eq!(
            idle.update(key('r')),
            None,
            "retry of a pending phase is refused"
        );
    }

    #[test]
    fn selection_follows_the_running_phase_until_moved() {
        let state = state_at(90);
        assert_eq!(state.store.phases[state.ui.phase].spec.id, "T4");
    }

    #[test]
    fn enter_on_a_finding_selects_its_gpu() {
        let mut state = state_at(130);
        state.ui.focus = PaneKind::Triage;
        let idx = state
            .findings
            .iter()
            .position(|f| f.rule == "stalled")
            .expect("stall finding");
        state.ui.finding = idx;
        state.update(code(KeyCode::Enter));
        assert_eq!(state.store.nodes[state.ui.node].name, "node07");
        assert_eq!(state.ui.gpu, 3);
        assert_eq!(state.ui.overlay, Overlay::GpuDetails);
    }

    #[test]
    fn filter_narrows_node_navigation() {
        let mut state = state_at(3);
        state.update(key('/'));
        for c in "node1".chars() {
            state.update(key(c));
        }
        state.update(code(KeyCode::Enter));
        assert_eq!(state.filtered_nodes().len(), 3, "node10, node11, node12");
        assert_eq!(state.store.nodes[state.ui.node].name, "node10");
        state.update(code(KeyCode::Esc));
        assert_eq!(state.filtered_nodes().len(), 12);
    }

    #[test]
    fn pause_freezes_what_is_shown_but_keeps_collecting() {
        let mut state = state_at(10);
        state.update(key('p'));
        let shown_before = state.shown().0.now_ms;
        let mut sim = SimCluster::new(SimConfig::demo(1));
        for e in sim.advance_to(SIM_EPOCH_MS + 20_000) {
            state.update(Event::Source(e));
        }
        assert_eq!(state.shown().0.now_ms, shown_before);
        assert!(state.store.now_ms > shown_before);
        state.update(key('p'));
        assert_eq!(state.shown().0.now_ms, state.store.now_ms);
    }

    #[test]
    fn layouts_and_themes_switch_and_focus_stays_visible() {
        let mut state = State::new(
            crate::app::theme::EMBEDDED
                .iter()
                .map(|(n, t)| Theme::parse(n, t).expect("theme"))
                .collect(),
            crate::app::layout::EMBEDDED
                .iter()
                .map(|(n, t)| Layout::parse(n, t).expect("layout"))
                .collect(),
            "test",
            (80, 24),
        );
        state.update(key('5'));
        assert_eq!(state.layout().name, "triage");
        assert!(state.visible_panes().contains(&state.ui.focus));
        state.update(key('9'));
        assert!(
            state
                .ui
                .status
                .as_ref()
                .is_some_and(|(_, m)| m.contains("no layout 9"))
        );
        state.update(key('t'));
        assert_eq!(state.theme().name, "light");
        for _ in 0..10 {
            state.update(code(KeyCode::Tab));
            assert!(state.visible_panes().contains(&state.ui.focus));
        }
    }
}
