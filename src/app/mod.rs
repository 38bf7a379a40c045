//! The console: events in, pure state update, effects out, and the terminal loop that drives it.

pub mod action;
pub mod catalog;
pub mod keymap;
pub mod layout;
pub mod state;
pub mod theme;
