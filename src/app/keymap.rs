//! The one key table: dispatch reads it, and the help overlay is drawn from it, so a binding
//! cannot exist without its help text. Conventions follow k9s and htop (DESIGN.md).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

/// A key as the table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Any digit 1–9 (layouts).
    Digit,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Enter.
    Enter,
    /// Escape.
    Esc,
}

impl Key {
    /// How the help overlay writes it.
    pub fn label(self) -> String {
        match self {
            Key::Char(c) => c.to_string(),
            Key::Digit => "1-9".into(),
            Key::Tab => "Tab".into(),
            Key::BackTab => "S-Tab".into(),
            Key::Up => "↑".into(),
            Key::Down => "↓".into(),
            Key::Left => "←".into(),
            Key::Right => "→".into(),
            Key::PageUp => "PgUp".into(),
            Key::PageDown => "PgDn".into(),
            Key::Enter => "Enter".into(),
            Key::Esc => "Esc".into(),
        }
    }
}

/// One row of the table: keys, what they do, and the help text.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    /// Keys that trigger it.
    pub keys: &'static [Key],
    /// The action (for `Key::Digit`, the digit picks the layout).
    pub action: Action,
    /// Help text.
    pub help: &'static str,
    /// Shown in the status bar's short hint list.
    pub hint: Option<&'static str>,
}

/// Lines of the key help: one per binding, then the layouts and the grid's flags.
pub const HELP_LINES: usize = BINDINGS.len() + 2;

/// Every binding of the console.
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[Key::Char('?')],
        action: Action::Help,
        help: "show or hide this help",
        hint: Some("help"),
    },
    Binding {
        keys: &[Key::Char('q')],
        action: Action::Quit,
        help: "quit (asks first while a phase runs: detach or abort)",
        hint: Some("quit"),
    },
    Binding {
        keys: &[Key::Tab],
        action: Action::FocusNext,
        help: "focus the next pane",
        hint: Some("focus"),
    },
    Binding {
        keys: &[Key::BackTab],
        action: Action::FocusPrev,
        help: "focus the previous pane",
        hint: None,
    },
    Binding {
        keys: &[Key::Up, Key::Char('k')],
        action: Action::Up,
        help: "move up (node, phase, finding, log line)",
        hint: None,
    },
    Binding {
        keys: &[Key::Down, Key::Char('j')],
        action: Action::Down,
        help: "move down",
        hint: None,
    },
    Binding {
        keys: &[Key::Left, Key::Char('h')],
        action: Action::Left,
        help: "previous GPU",
        hint: None,
    },
    Binding {
        keys: &[Key::Right, Key::Char('l')],
        action: Action::Right,
        help: "next GPU",
        hint: None,
    },
    Binding {
        keys: &[Key::PageUp],
        action: Action::PageUp,
        help: "scroll a page up",
        hint: None,
    },
    Binding {
        keys: &[Key::PageDown],
        action: Action::PageDown,
        help: "scroll a page down",
        hint: None,
    },
    Binding {
        keys: &[Key::Enter],
        action: Action::Details,
        help: "details of the selected GPU, phase or finding",
        hint: Some("details"),
    },
    Binding {
        keys: &[Key::Char('s')],
        action: Action::StartPhase,
        help: "start the selected phase",
        hint: Some("start"),
    },
    Binding {
        keys: &[Key::Char('a')],
        action: Action::AbortPhase,
        help: "abort the running phase (asks to confirm)",
        hint: Some("abort"),
    },
    Binding {
        keys: &[Key::Char('c')],
        action: Action::ConfirmDrill,
        help: "a drill asks (status bar): say it is done",
        hint: None,
    },
    Binding {
        keys: &[Key::Char('r')],
        action: Action::RetryPhase,
        help: "run the selected finished phase again",
        hint: None,
    },
    Binding {
        keys: &[Key::Char('L')],
        action: Action::Logs,
        help: "full-screen log of the selected phase",
        hint: Some("log"),
    },
    Binding {
        keys: &[Key::Char('f')],
        action: Action::Localize,
        help: "find the node or link slowing the selected multi-node phase",
        hint: None,
    },
    Binding {
        keys: &[Key::Char('/')],
        action: Action::Filter,
        help: "filter nodes and findings by name (Enter keeps, Esc clears)",
        hint: Some("filter"),
    },
    Binding {
        keys: &[Key::Digit],
        action: Action::Layout(0),
        help: "switch layout",
        hint: Some("layout"),
    },
    Binding {
        keys: &[Key::Char('t')],
        action: Action::NextTheme,
        help: "next colour theme",
        hint: Some("theme"),
    },
    Binding {
        keys: &[Key::Char('p')],
        action: Action::PauseDisplay,
        help: "freeze the display (data keeps being collected); in a replay, pause it",
        hint: Some("pause"),
    },
    Binding {
        keys: &[Key::Char('<'), Key::Char('>')],
        action: Action::ReplaySpeed(false),
        help: "replay: half or double the speed",
        hint: None,
    },
    Binding {
        keys: &[
            Key::Char('['),
            Key::Char(']'),
            Key::Char('{'),
            Key::Char('}'),
        ],
        action: Action::ReplaySeek(0),
        help: "replay: back or forward a minute ([ ]) or ten minutes ({ })",
        hint: None,
    },
    Binding {
        keys: &[Key::Esc],
        action: Action::Back,
        help: "close the overlay, clear the filter",
        hint: None,
    },
];

/// Translate a terminal key into the table's key.
pub fn key_of(event: &KeyEvent) -> Option<Key> {
    let plain = !event
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
    Some(match event.code {
        KeyCode::Char('1'..='9') if plain => Key::Digit,
        KeyCode::Char(c) if plain => Key::Char(c),
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        _ => return None,
    })
}

/// The action a key event triggers, if any.
pub fn action_for(event: &KeyEvent) -> Option<Action> {
    if event.modifiers.contains(KeyModifiers::CONTROL) && event.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    let key = key_of(event)?;
    let binding = BINDINGS.iter().find(|b| b.keys.contains(&key))?;
    Some(match (binding.action, event.code) {
        (Action::Layout(_), KeyCode::Char(c)) => Action::Layout(c as u8 - b'0'),
        (Action::ReplaySpeed(_), KeyCode::Char(c)) => Action::ReplaySpeed(c == '>'),
        (Action::ReplaySeek(_), KeyCode::Char(c)) => Action::ReplaySeek(match c {
            '[' => -60,
            ']' => 60,
            '{' => -600,
            _ => 600,
        }),
        (action, _) => action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn every_binding_has_help_and_keys() {
        for b in BINDINGS {
            assert!(!b.help.trim().is_empty(), "{:?}", b.action);
            assert!(!b.keys.is_empty(), "{:?}", b.action);
        }
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for b in BINDINGS {
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
            }
        }
    }

    #[test]
    fn keys_dispatch_through_the_table() {
        assert_eq!(
            action_for(&press(KeyCode::Char('s'))),
            Some(Action::StartPhase)
        );
        assert_eq!(
            action_for(&press(KeyCode::Char('3'))),
            Some(Action::Layout(3))
        );
        assert_eq!(action_for(&press(KeyCode::Char('j'))), Some(Action::Down));
        assert_eq!(
            action_for(&press(KeyCode::BackTab)),
            Some(Action::FocusPrev)
        );
        assert_eq!(
            action_for(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(action_for(&press(KeyCode::Char('Z'))), None);
    }
}
