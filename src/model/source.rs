//! The events every telemetry source sends the console loop, and the interface a source
//! implements. Phase commands travel the other way: the simulator plays them; a source that
//! only watches (the fleet, a replay) has the phase driver beside it (`console::beside`) and
//! answers a stray command with a notice.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::model::phase::{PhaseCommand, PhaseEvent};
use crate::model::probe::ProbeWindow;
use crate::model::{NodeFrame, NodeHello, NodeLink, UnixMillis};

/// Everything a source can tell the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SourceEvent {
    /// The source's clock reached this instant. The console's notion of "now" comes only from
    /// here, so a recorded or simulated run looks the same as a live one at the same instant.
    Clock {
        /// The instant.
        at_ms: UnixMillis,
    },
    /// A node introduced itself (agent hello).
    Hello(NodeHello),
    /// One frame of samples.
    Frame(NodeFrame),
    /// How many GPUs a node must report (from the inventory).
    Expect {
        /// Node name.
        node: String,
        /// GPUs expected.
        gpus: u32,
        /// Rate every RDMA port should train at, when the inventory says.
        nic_rate_gbps: Option<f32>,
    },
    /// A node's connection changed.
    Link {
        /// Node name.
        node: String,
        /// When.
        at_ms: UnixMillis,
        /// The new state.
        link: NodeLink,
    },
    /// Lines from a node's stream that could not be decoded (running total).
    Garbled {
        /// Node name.
        node: String,
        /// Garbled lines since the console started.
        total: u64,
    },
    /// Something a node's agent said about itself (e.g. "Xid events unavailable: …").
    Note {
        /// Node name.
        node: String,
        /// When.
        at_ms: UnixMillis,
        /// The agent's words.
        text: String,
    },
    /// A message for the operator from the source itself.
    Notice {
        /// The text.
        text: String,
    },
    /// The console's run record is open: what it sees goes into the run at `dir` (the status
    /// bar says so, so the engineer knows whether the hours on screen are kept).
    Recording {
        /// The run's directory.
        dir: String,
    },
    /// Forget what was said so far: a replay seeking backwards starts over (the events up to
    /// the new instant follow at once).
    Rewind,
    /// A phase runner's report.
    Phase(PhaseEvent),
    /// A storage probe's report.
    Probe(ProbeWindow),
    /// A fault search as it stands (after every round, and at its end).
    Search(Box<crate::model::search::SearchSnapshot>),
}

/// A future that runs a source until the loop stops listening.
pub type SourceTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The interface every source implements: run, send events, take the phase commands it can
/// (the simulator plays them; the others say they only watch). The task must
/// end when `events` is closed (the console quit) and must never end the loop on a node's error:
/// a node that drops becomes a [`SourceEvent::Link`] event.
pub trait Source: Send + 'static {
    /// Start the source.
    fn run(
        self: Box<Self>,
        events: mpsc::Sender<SourceEvent>,
        commands: mpsc::UnboundedReceiver<PhaseCommand>,
    ) -> SourceTask;
}
