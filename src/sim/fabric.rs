//! A simulated multi-node fabric for the fault search: an all_reduce over any group of nodes
//! gives a busbw, healthy or slowed by the faults this fabric has: a `bad-node` (its rail at
//! half speed: every test it is in runs at half), a `bad-link` (two nodes slow only together)
//! and a `flaky-node` (slow in the first test it is in, fine after). Seeded: the same seed gives
//! the same figures.

use std::collections::BTreeSet;

use crate::phases::localize::search::{Search, SearchConfig, Test, TestResult};

/// busbw of a healthy all_reduce across nodes, GB/s: 8 × NDR400 rails (NVIDIA's B300 and H200
/// reference systems measure 350–390; `plans/default.toml`, T7).
pub const HEALTHY_BUSBW: f64 = 370.0;

/// One fabric fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FabricFault {
    /// The node's rail at half speed.
    BadNode(usize),
    /// The two nodes slow only together.
    BadLink(usize, usize),
    /// Slow in its first test only.
    FlakyNode(usize),
}

/// A simulated fabric of `nodes` nodes.
#[derive(Debug, Clone)]
pub struct SimFabric {
    /// Node count.
    pub nodes: usize,
    /// Its faults.
    pub faults: Vec<FabricFault>,
    seed: u64,
    flaky_seen: BTreeSet<usize>,
    tests_run: u64,
}

impl SimFabric {
    /// A fabric with these faults.
    pub fn new(nodes: usize, faults: Vec<FabricFault>, seed: u64) -> SimFabric {
        SimFabric {
            nodes,
            faults,
            seed,
            flaky_seen: BTreeSet::new(),
            tests_run: 0,
        }
    }

    /// `bad` bad nodes picked by the seed among `nodes`.
    pub fn with_bad_nodes(nodes: usize, bad: usize, seed: u64) -> SimFabric {
        let mut picked = BTreeSet::new();
        let mut i = 0u64;
        while picked.len() < bad.min(nodes) {
            let r = (super::noise(seed, 7, i, 0) + 1.0) / 2.0;
            picked.insert(((r * nodes as f64) as usize).min(nodes.saturating_sub(1)));
            i += 1;
        }
        SimFabric::new(
            nodes,
            picked.into_iter().map(FabricFault::BadNode).collect(),
            seed,
        )
    }

    /// The nodes a person would name: bad nodes, and bad links' pairs.
    pub fn truth(&self) -> (Vec<usize>, Vec<(usize, usize)>) {
        let mut nodes = Vec::new();
        let mut links = Vec::new();
        for f in &self.faults {
            match f {
                FabricFault::BadNode(n) => nodes.push(*n),
                FabricFault::BadLink(a, b) => links.push((*a.min(b), *a.max(b))),
                FabricFault::FlakyNode(_) => {}
            }
        }
        nodes.sort_unstable();
        links.sort_unstable();
        (nodes, links)
    }

    /// Run one test: its busbw, ±2 % noise.
    pub fn run(&mut self, test: &Test) -> TestResult {
        self.tests_run += 1;
        let nodes: BTreeSet<usize> = test.nodes().into_iter().collect();
        let mut factor = 1.0;
        for f in &self.faults {
            let hit = match f {
                FabricFault::BadNode(n) => nodes.contains(n),
                FabricFault::BadLink(a, b) => nodes.contains(a) && nodes.contains(b),
                FabricFault::FlakyNode(n) => nodes.contains(n) && self.flaky_seen.insert(*n),
            };
            if hit {
                factor = f64::min(factor, 0.5);
            }
        }
        let jitter = 1.0 + 0.02 * super::noise(self.seed, 11, self.tests_run, nodes.len() as u64);
        let busbw = HEALTHY_BUSBW * factor * jitter;
        TestResult {
            figure: Some(busbw),
            failed: false,
            words: format!("busbw {busbw:.1} GB/s"),
        }
    }

    /// Run a whole search on this fabric.
    pub fn search(&mut self, config: SearchConfig) -> Search {
        let mut search = Search::new(self.nodes, config);
        while let Some(round) = search.next_round() {
            let results = round.iter().map(|t| (t.id, self.run(t))).collect();
            search.record(results);
        }
        search
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phases::localize::search::Screen;
    use proptest::prelude::*;

    fn config(screen: Screen) -> SearchConfig {
        SearchConfig {
            screen,
            peers_pct: 80.0,
        }
    }

    fn named(s: &Search) -> (Vec<usize>, Vec<(usize, usize)>) {
        let mut nodes: Vec<usize> = s.bad_nodes.iter().map(|b| b.node).collect();
        nodes.sort_unstable();
        let mut links: Vec<(usize, usize)> = s.bad_links.iter().map(|l| l.nodes).collect();
        links.sort_unstable();
        (nodes, links)
    }

    #[test]
    fn one_bad_node_among_96_is_named_alone_in_few_rounds() {
        for screen in [Screen::Pairs, Screen::Groups] {
            let mut f = SimFabric::new(96, vec![FabricFault::BadNode(41)], 1);
            let s = f.search(config(screen));
            assert_eq!(named(&s), (vec![41], vec![]), "{screen:?}");
            assert!(s.rounds() <= 8, "{screen:?}: {} rounds", s.rounds());
            let evidence = &s.bad_nodes[0].tests;
            let partners: BTreeSet<usize> = evidence
                .iter()
                .filter_map(|i| s.tests()[*i].test.padding.first().copied())
                .collect();
            assert!(
                partners.len() >= 2,
                "two different good partners: {evidence:?}"
            );
        }
    }

    #[test]
    fn a_clean_fabric_names_nobody_in_two_rounds() {
        let s = SimFabric::new(96, vec![], 3).search(config(Screen::Pairs));
        assert_eq!(named(&s), (vec![], vec![]));
        assert_eq!(s.rounds(), 2, "screen, then the whole set");
        assert!(s.not_reproduced.is_empty());
    }

    #[test]
    fn a_bad_link_is_named_as_a_link_wherever_its_nodes_sit() {
        for (a, b) in [(4, 5), (4, 70), (0, 95)] {
            for screen in [Screen::Pairs, Screen::Groups] {
                let mut f = SimFabric::new(96, vec![FabricFault::BadLink(a, b)], 5);
                let s = f.search(config(screen));
                assert_eq!(named(&s), (vec![], vec![(a, b)]), "{screen:?} {a}-{b}");
            }
        }
    }

    #[test]
    fn a_node_slow_once_is_not_named_and_the_search_says_so() {
        for screen in [Screen::Pairs, Screen::Groups] {
            let mut f = SimFabric::new(32, vec![FabricFault::FlakyNode(9)], 2);
            let s = f.search(config(screen));
            assert_eq!(named(&s), (vec![], vec![]), "{screen:?}");
            assert!(
                s.not_reproduced.iter().any(|n| n.nodes.contains(&9)),
                "{:?}",
                s.not_reproduced
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Over random fault sets: a healthy node is never named, a bad node (slow in every
        /// test it is in) always is, and so is a bad link whose nodes are otherwise healthy.
        #[test]
        fn never_names_a_healthy_node(
            n in 4usize..80,
            bad in proptest::collection::btree_set(0usize..80, 0..4),
            flaky in proptest::collection::btree_set(0usize..80, 0..2),
            seed in 0u64..1000,
            pairs in any::<bool>(),
        ) {
            let bad: Vec<usize> = bad.into_iter().filter(|b| *b < n).collect();
            let flaky: Vec<usize> =
                flaky.into_iter().filter(|f| *f < n && !bad.contains(f)).collect();
            // A search needs good partners (at most a quarter of the nodes bad) and a peers
            // level: fewer than half of the screen's tests slow (with most slow it says it cannot
            // tell slow from healthy, and names no one: n = 9, nodes 0 and 3 bad, groups of 3).
            prop_assume!(bad.len() * 4 <= n);
            let screen = if pairs { Screen::Pairs } else { Screen::Groups };
            let groups = crate::phases::localize::search::partition(n, screen.group_size(n));
            let hit = groups.iter().filter(|g| g.iter().any(|x| bad.contains(x) || flaky.contains(x))).count();
            prop_assume!(hit * 2 < groups.len());
            let mut faults: Vec<FabricFault> = bad.iter().map(|b| FabricFault::BadNode(*b)).collect();
            faults.extend(flaky.iter().map(|f| FabricFault::FlakyNode(*f)));
            let mut f = SimFabric::new(n, faults, seed);
            let s = f.search(config(screen));
            let (nodes, links) = named(&s);
            prop_assert_eq!(&nodes, &bad, "stuck: {:?}", s.stuck);
            prop_assert!(links.is_empty(), "{:?}", links);
        }
    }
}
