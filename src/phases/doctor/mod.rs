//! `burnin doctor`'s node side: what each phase of the plan needs ([`needs`]), the probe
//! script that looks for it on a node and the reader of its answer ([`probe`]), and the
//! judgement of which phase cannot run where ([`judge`]). The command itself is
//! `commands::doctor`.

pub mod judge;
pub mod needs;
pub mod probe;

#[cfg(test)]
mod tests;
