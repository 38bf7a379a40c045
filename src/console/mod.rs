//! The terminal console: the loop that feeds the sources' events to the state, draws it and
//! carries out its effects (`run`), the phase driver behind `s`/`r`/`a` (`driver`), and the task
//! that runs the driver beside the telemetry source (`beside`): the source only watches.

pub mod beside;
pub mod driver;
pub mod run;
