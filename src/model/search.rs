//! What the console shows of a fault search (`burnin localize`, or `f` in the console) while it
//! runs: its rounds so far, each test with its figure and how it was read, and what it named.
//! Made by `phases::localize` from the search's own document; words only, bounded there.

use serde::{Deserialize, Serialize};

/// What a running fault search is called where a phase id goes (`search T7`): `a` aborts it
/// as a phase, and quitting asks about it.
pub const SEARCH_PREFIX: &str = "search ";

/// A fault search as it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSnapshot {
    /// The phase whose command each group runs.
    pub phase: String,
    /// Nodes searched.
    pub nodes: usize,
    /// The first round's partition (`pairs`, `groups`).
    pub screen: String,
    /// Rounds so far.
    pub rounds: u32,
    /// Still running.
    pub running: bool,
    /// Nodes named, each with its evidence ("node05: slow beside node03 (181.9), node01 (183.5)").
    pub named: Vec<String>,
    /// Links named, with their evidence.
    pub links: Vec<String>,
    /// What named nobody, or could not be followed up.
    pub notes: Vec<String>,
    /// The latest tests, newest last.
    pub tests: Vec<SearchRow>,
    /// Tests run in all (the rows are the latest of them).
    pub tests_run: usize,
}

/// One test of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRow {
    /// Its round.
    pub round: u32,
    /// Why it ran (`screen`, `half`, `partner`, …).
    pub purpose: String,
    /// Its nodes, under test first, then `+ partner`.
    pub nodes: String,
    /// Its figure.
    pub figure: Option<f64>,
    /// Read as slow.
    pub slow: bool,
    /// How it was read.
    pub why: String,
}
