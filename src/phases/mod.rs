//! Carrying a phase of the plan out on the nodes: the runner (launch, stream each node's log
//! through its parser, re-attach after a dropped link, stop, judge by the plan's gates), the
//! remote scripts it leaves on a node, and the Kubernetes Job launcher. The events it sends
//! are `model::phase`'s, the same the simulator sends.

pub mod doctor;
pub mod kubernetes;
pub mod localize;
pub mod remote;
pub mod runner;
