//! The console: events in, pure state update, effects out, and the terminal loop that drives it.

pub mod action;
pub mod driver;
pub mod keymap;
pub mod run;
pub mod state;
