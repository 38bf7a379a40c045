//! The terminal console: the loop that feeds the sources' events to the state, draws it and
//! carries out its effects (`run`), and the phase driver behind `s`/`r`/`a` (`driver`), which the
//! loop starts beside the telemetry source.

pub mod driver;
pub mod run;
