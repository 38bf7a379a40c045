//! Where the console's telemetry comes from. Every source is a task that owns its connections
//! and sends owned [`crate::model::SourceEvent`]s to the loop: the fleet of nodes (`fleet`: the agent or nvidia-smi over SSH, the agent locally), Prometheus
//! (`prometheus`, with `promql` and the DCGM series it reads), and a recorded run played back
//! (`replay`). The simulator's source, `crate::sim::SimSource`, sits a floor below (the agent
//! drives the same simulated cluster).

pub mod dcgm_series;
pub mod fleet;
pub mod prometheus;
pub mod promql;
pub mod replay;
pub mod smi;
