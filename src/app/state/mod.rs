//! The console's whole state and its pure update: `update(event) -> Option<Effect>`. No I/O and
//! no clock here (time comes from source events), so every key and every frame is testable
//! without a terminal.

use crossterm::event::{KeyEvent, KeyEventKind};
use ratatui::layout::Rect;

use super::action::Effect;
use crate::app::layout::{Layout, PaneKind};
use crate::app::theme::Theme;
use crate::model::SourceEvent;
use crate::model::phase::PhaseEvent;
use crate::model::units::Period;
use crate::store::ClusterStore;
use crate::triage::{Finding, Triage};

/// How long an informative status message stays (the log keeps it).
pub const STATUS_INFO_MS: u64 = 20_000;
/// How long a warning stays in the status bar.
pub const STATUS_WARN_MS: u64 = 60_000;

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
    /// Search for the node or link that makes this multi-node phase slow?
    Localize(String),
    /// Start (or, with `retry`, run again) this phase although `why` says it cannot go well:
    /// no node answers, or a phase it needs has not passed.
    Start {
        /// The phase.
        phase: String,
        /// A run again (`r`) rather than a first start.
        retry: bool,
        /// What stands against it, in words.
        why: String,
    },
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
    /// The fault search, as it stands.
    Search,
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
    /// When the message was said, by the store's clock: it goes after [`STATUS_INFO_MS`] (an
    /// information) or [`STATUS_WARN_MS`] (a warning), so a stale word never reads as news.
    pub status_at_ms: crate::model::UnixMillis,
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
    /// Said once every node has failed, where the inventory still lists `burnin init`'s
    /// example hosts (taken, so it is said once).
    pub example_hosts: Option<String>,
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
                status_at_ms: 0,
                size,
            },
            themes,
            layouts,
            source_label: source_label.into(),
            quitting: false,
            phases_on_nodes: true,
            playback: None,
            recording: None,
            example_hosts: None,
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
        self.ui.status_at_ms = self.store.now_ms;
    }

    /// Forget a status message past its time.
    fn expire_status(&mut self) {
        let ttl = match self.ui.status {
            Some((Tone::Info, _)) => STATUS_INFO_MS,
            Some((Tone::Warn, _)) => STATUS_WARN_MS,
            None => return,
        };
        if self.store.now_ms.saturating_sub(self.ui.status_at_ms) >= ttl {
            self.ui.status = None;
        }
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
            // The phase ended while the operator was asked whether to abort it: nothing is
            // left to abort, and the question must not stand over a finished phase.
            let asked =
                matches!(&self.ui.overlay, Overlay::Confirm(Confirm::Abort(p)) if p == phase);
            if asked {
                self.ui.overlay = Overlay::None;
            }
            let before = if asked {
                " (finished before the abort)"
            } else {
                ""
            };
            // A multi-node phase that did not pass: say how to find where.
            let searchable = !matches!(verdict, crate::model::phase::Verdict::Pass)
                && self.store.phase(phase).is_some_and(|p| {
                    matches!(
                        p.spec.scope,
                        crate::plan::Scope::Mpirun | crate::plan::Scope::Launcher
                    )
                });
            let offer = if searchable {
                " · f finds the node or link"
            } else {
                ""
            };
            self.say(
                tone,
                format!("{phase} {}{before}: {reason}{offer}", verdict.label()),
            );
        }
        if let SourceEvent::Notice { text } = &ev {
            self.say(Tone::Warn, text.clone());
        }
        if let SourceEvent::Search(snap) = &ev
            && snap.running
            && !self.store.search.as_ref().is_some_and(|s| s.running)
            && self.ui.overlay == Overlay::None
        {
            // A search that starts is shown as it goes.
            self.ui.overlay = Overlay::Search;
        }
        if let SourceEvent::Recording { dir } = &ev {
            self.recording = Some(dir.clone());
        }
        self.store.ingest(ev);
        if self.example_hosts.is_some()
            && !self.store.nodes.is_empty()
            && self
                .store
                .nodes
                .iter()
                .all(|n| matches!(n.link, crate::model::NodeLink::Unreachable(_)))
            && let Some(note) = self.example_hosts.take()
        {
            // Twelve unreachable hosts that were never the site's: say whose they are.
            self.say(Tone::Warn, note);
        }
        if clock {
            self.expire_status();
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
        self.store
            .running_phase()
            .map(|p| p.spec.id.to_string())
            .or_else(|| {
                // A fault search runs as a phase would: `a` aborts it, quitting asks.
                self.store
                    .search
                    .as_ref()
                    .filter(|s| s.running && self.phases_on_nodes)
                    .map(|s| format!("{}{}", crate::model::search::SEARCH_PREFIX, s.phase))
            })
    }
}

mod keys;
#[cfg(test)]
mod tests;
