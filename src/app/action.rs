//! What a key means, independent of which key it was, and what the loop must do outside the
//! state after an update.

use crate::model::phase::PhaseCommand;

/// A user intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Toggle the help overlay.
    Help,
    /// Leave (asks first while a phase runs).
    Quit,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Move the selection up.
    Up,
    /// Move the selection down.
    Down,
    /// Move the selection left.
    Left,
    /// Move the selection right.
    Right,
    /// Scroll a page up.
    PageUp,
    /// Scroll a page down.
    PageDown,
    /// Open details of the selection.
    Details,
    /// Start the selected phase.
    StartPhase,
    /// Abort the running phase (after a confirm).
    AbortPhase,
    /// Run a finished phase again.
    RetryPhase,
    /// Tell a drill the operator did what it asked.
    ConfirmDrill,
    /// Full-screen log.
    Logs,
    /// Search for the node or link that makes the selected multi-node phase slow (or show the
    /// search that runs).
    Localize,
    /// Edit the node filter.
    Filter,
    /// Switch to layout N (1-based).
    Layout(u8),
    /// Next theme.
    NextTheme,
    /// Freeze or unfreeze the display (in a replay: pause or resume the replay).
    PauseDisplay,
    /// Replay: double the speed (`true`) or half it.
    ReplaySpeed(bool),
    /// Replay: jump by this many seconds (negative: back).
    ReplaySeek(i32),
    /// Close the overlay or clear the filter.
    Back,
}

/// Work the loop does after an update; state itself never performs I/O.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a command to the phase runner.
    Command(PhaseCommand),
    /// Leave the console; phases keep running on the nodes (detach).
    Quit,
    /// Abort this phase, then leave.
    AbortAndQuit(PhaseCommand),
    /// Steer the replay.
    Playback(crate::sources::replay::PlaybackCommand),
}
