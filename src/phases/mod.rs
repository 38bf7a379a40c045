//! Acceptance phases: the plan (what runs, in which order, judged how), the runner that carries
//! a phase out on the nodes, and the events it sends while it runs (the simulator speaks the
//! same events).

pub mod kubernetes;
pub mod remote;
pub mod runner;

pub use crate::model::phase::{
    CheckStatus, PhaseCommand, PhaseEvent, PhaseId, PhaseMetric, Verdict,
};
