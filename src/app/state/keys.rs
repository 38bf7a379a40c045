//! What the console does with a key: the filter being typed, a confirmation, or an action
//! of the key table (moving, starting and aborting phases, overlays, layouts, themes).

use crossterm::event::{KeyCode, KeyEvent};

use super::{Confirm, Overlay, State, Tone, speed_label};
use crate::app::action::{Action, Effect};
use crate::app::keymap;
use crate::app::layout::PaneKind;
use crate::model::phase::PhaseCommand;
use crate::sources::replay::PlaybackCommand;
use crate::store::PhaseState;

impl State {
    pub(super) fn on_key(&mut self, key: KeyEvent) -> Option<Effect> {
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
            (Confirm::Start { phase, .. }, KeyCode::Char('y') | KeyCode::Enter) => {
                close(self);
                self.start(phase)
            }
            (Confirm::Localize(phase), KeyCode::Char('y') | KeyCode::Enter) => {
                self.ui.overlay = Overlay::Search;
                self.say(Tone::Info, format!("searching where {phase} is slow"));
                Some(Effect::Command(PhaseCommand::Localize(phase)))
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
            Action::Localize => return self.localize_selected(),
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

    /// `f`: show the search that runs, or ask whether to search the selected phase.
    fn localize_selected(&mut self) -> Option<Effect> {
        if self.playback.is_some() {
            self.say(
                Tone::Warn,
                "a replay shows what the run did: searches run in the live console",
            );
            return None;
        }
        if self.store.search.as_ref().is_some_and(|s| s.running) {
            self.ui.overlay = Overlay::Search;
            return None;
        }
        let phase = self.store.phases.get(self.ui.phase)?;
        let id = phase.spec.id.to_string();
        if !matches!(
            phase.spec.scope,
            crate::plan::Scope::Mpirun | crate::plan::Scope::Launcher
        ) {
            self.say(
                Tone::Warn,
                format!(
                    "f searches a phase that runs one job across the nodes (scope mpirun or launcher, as T7); {id}'s scope is {}",
                    phase.spec.scope.label()
                ),
            );
            return None;
        }
        if let Some(running) = self.running_phase_id() {
            self.say(
                Tone::Warn,
                format!("{running} is running; abort it first (a)"),
            );
            return None;
        }
        self.ui.overlay = Overlay::Confirm(Confirm::Localize(id));
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
            _ => match self.start_doubt(&id) {
                Some(why) => {
                    self.ui.overlay = Overlay::Confirm(Confirm::Start {
                        phase: id,
                        retry,
                        why,
                    });
                    None
                }
                None => self.start(id),
            },
        }
    }

    fn start(&mut self, id: String) -> Option<Effect> {
        self.ui.follow_phase = true;
        self.say(Tone::Info, format!("starting {id}"));
        Some(Effect::Command(PhaseCommand::Start(id)))
    }

    /// What speaks against starting `id` now: no node answers (on real nodes), or a phase it
    /// needs has not passed. `None`: nothing, start it.
    fn start_doubt(&self, id: &str) -> Option<String> {
        let spec = self.store.phase(id)?.spec.clone();
        let unmet: Vec<String> = spec
            .needs
            .iter()
            .filter(|need| {
                !self.store.phase(need).is_some_and(|p| {
                    matches!(
                        p.state,
                        PhaseState::Done(
                            crate::model::phase::Verdict::Pass | crate::model::phase::Verdict::Warn
                        )
                    )
                })
            })
            .cloned()
            .collect();
        let answering = self
            .store
            .nodes
            .iter()
            .any(|n| n.link == crate::model::NodeLink::Streaming);
        let mut why = Vec::new();
        if self.phases_on_nodes && !self.store.nodes.is_empty() && !answering {
            why.push(
                "no node is answering (every node unreachable or not yet connected)".to_string(),
            );
        }
        if !unmet.is_empty() {
            why.push(format!(
                "it needs {} to pass first, and {} not",
                unmet.join(", "),
                if unmet.len() == 1 {
                    "it has"
                } else {
                    "they have"
                }
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
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
