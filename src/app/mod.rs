//! The console's state: events in, pure state update, effects out (the terminal loop that
//! drives it is `console::run`); the key table, themes and layouts it holds.

pub mod action;
pub mod catalog;
pub mod keymap;
pub mod layout;
pub mod state;
pub mod theme;
