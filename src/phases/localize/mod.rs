//! `burnin localize`: which nodes or links make a multi-node phase slow. [`search`] decides
//! which groups to test, round by round; the runner here runs the phase's own command on each
//! group of a round at once.

pub mod doc;
pub mod run;
pub mod search;
