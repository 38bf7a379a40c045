//! The fault search: which nodes, or which pairs of nodes, make a multi-node test slow. Pure:
//! it proposes the tests of each round (groups of nodes, no node in two tests of one round) and
//! takes their results; whoever runs them (real nodes, the simulator) is not its concern.
//!
//! The method is the one NVIDIA's readiness engine and Google's cluster health scanner use
//! (`shared/research/peers.md`), in one engine:
//! - **screen**: every node in one test of a partition: disjoint pairs, or groups of ⌈√N⌉;
//!   a √N screen where no group is slow is checked once in pairs (a bad node in every group
//!   makes every group equally slow); when nothing else is left to follow, one test of every
//!   node not named (a fault between two groups shows only there);
//! - **bisect**: a slow set is split in halves, a half of one node padded with a known-good
//!   partner; a slow half is split again;
//! - **cross**: where both halves pass but the set was slow, the fault needs nodes of both
//!   sides: one side is halved beside the whole other side until one node of each is left;
//! - **confirm**: a node is named only when it is slow beside two different good partners; a
//!   pair only when both nodes pass with others and the pair is slow twice. A slow test that is
//!   not slow again names nobody, and the search says so.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// How the first round tests every node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Screen {
    /// Disjoint pairs (Google's scanner): the fewest rounds.
    Pairs,
    /// Groups of ⌈√N⌉ (NVIDIA's readiness engine): the fewest tests.
    Groups,
}

impl Screen {
    /// The screen's group size for `n` nodes.
    pub fn group_size(self, n: usize) -> usize {
        match self {
            Screen::Pairs => 2,
            Screen::Groups => (n as f64).sqrt().ceil().max(2.0) as usize,
        }
    }

    /// Its name, as `--screen` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Screen::Pairs => "pairs",
            Screen::Groups => "groups",
        }
    }
}

/// What the search is told before it starts.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// The first round's partition.
    pub screen: Screen,
    /// A test is slow under this share (%) of the upper quartile of the tests of its size on
    /// nodes under no suspicion (of all such tests, where fewer than three of its size ran).
    pub peers_pct: f64,
}

/// Why a test is in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// The first round's partition.
    Screen,
    /// Every node not named, at once, when nothing else is left to follow.
    Whole,
    /// One half of a slow set.
    Half,
    /// Part of one side beside the whole other side.
    Cross,
    /// A suspect beside a known-good partner.
    Partner,
    /// A slow pair once more.
    Again,
}

/// One test: the nodes under test and the known-good nodes padding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Test {
    /// Its number in the search (from 0).
    pub id: usize,
    /// The round it ran in (from 1).
    pub round: u32,
    /// Why it runs.
    pub purpose: Purpose,
    /// The nodes under test (indices into the search's nodes).
    pub members: Vec<usize>,
    /// Known-good nodes beside them.
    pub padding: Vec<usize>,
}

impl Test {
    /// Every node of the test, members first.
    pub fn nodes(&self) -> Vec<usize> {
        self.members.iter().chain(&self.padding).copied().collect()
    }
}

/// What running a test gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// The phase's figure (busbw), where the output gave one.
    pub figure: Option<f64>,
    /// The phase's own gates failed it (floor, baseline, a node that exited non-zero).
    pub failed: bool,
    /// The phase's reason, in words.
    pub words: String,
}

/// A test with its result and how the search read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The test.
    #[serde(flatten)]
    pub test: Test,
    /// Its result.
    pub result: TestResult,
    /// Slow: the phase failed it, it gave no figure, or its figure is under the peers share.
    pub slow: bool,
    /// Why, with the numbers.
    pub why: String,
    /// Its figure was no physical reading (negative, not finite): neither slow nor passed, and
    /// its nodes are no good partners on its account.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unjudged: bool,
}

/// A figure a test can have: a rate is finite and not negative.
fn physical(f: f64) -> bool {
    f.is_finite() && f >= 0.0
}

/// A node the search names, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadNode {
    /// Node index.
    pub node: usize,
    /// The tests it was slow in beside good partners.
    pub tests: Vec<usize>,
}

/// A pair the search names: each passes with others, slow together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadLink {
    /// The two nodes.
    pub nodes: (usize, usize),
    /// The tests the pair was slow in.
    pub tests: Vec<usize>,
}

/// A slow test the search could not pin on anyone (not slow again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotReproduced {
    /// The nodes it was slow on.
    pub nodes: Vec<usize>,
    /// The test that was slow, and the ones that were not.
    pub tests: Vec<usize>,
    /// In words.
    pub why: String,
}

/// What is left to find out.
#[derive(Debug, Clone)]
enum Task {
    Screen,
    /// A clean √N screen checked in pairs: with a bad node in every group, every group is as
    /// slow as the others and no peers level shows it; pairs leave most tests healthy.
    PairCheck,
    /// Every node not named, at once (the screen's groups, less what was named).
    Whole {
        groups: Vec<Vec<usize>>,
    },
    /// `set` was slow (in `evidence`): halve it.
    Find {
        set: Vec<usize>,
        evidence: Vec<usize>,
    },
    /// Each group passes, their union was slow.
    CrossGroups {
        groups: Vec<Vec<usize>>,
        evidence: Vec<usize>,
    },
    /// `a` and `b` each pass, `a ∪ b` was slow; `tried` is the half of the split side already
    /// found fine beside the other side.
    Cross {
        a: Vec<usize>,
        b: Vec<usize>,
        evidence: Vec<usize>,
        tried: bool,
    },
    /// `node` was slow beside each of `beside` (good partners).
    Confirm {
        node: usize,
        beside: Vec<usize>,
        evidence: Vec<usize>,
    },
    /// The pair was slow together; run it again.
    Again {
        a: usize,
        b: usize,
        evidence: Vec<usize>,
    },
}

impl Task {
    /// The nodes the task is about (kept out of padding while it is open).
    fn suspects(&self) -> Vec<usize> {
        match self {
            Task::Screen | Task::PairCheck => Vec::new(),
            Task::Whole { .. } => Vec::new(),
            Task::Find { set, .. } => set.clone(),
            Task::CrossGroups { groups, .. } => groups.concat(),
            Task::Cross { a, b, .. } => a.iter().chain(b).copied().collect(),
            Task::Confirm { node, .. } => vec![*node],
            Task::Again { a, b, .. } => vec![*a, *b],
        }
    }
}

/// The search's state.
pub struct Search {
    n: usize,
    config: SearchConfig,
    pending: Vec<Task>,
    /// Tasks whose tests run this round, with their tests' ids.
    running: Vec<(Task, Vec<usize>)>,
    tests: Vec<Judged>,
    proposed: Vec<Test>,
    /// Nodes seen in a passing test.
    passed: BTreeSet<usize>,
    round: u32,
    /// The screen's groups, for the closing tests of every node not named.
    screen_groups: Vec<Vec<usize>>,
    /// Closing tests run, and how many faults were named before the last one.
    closings: u32,
    named_at_closing: usize,
    last_closing_slow: bool,
    /// Nodes named, pairs named, slow tests not reproduced, tasks left without a partner.
    pub bad_nodes: Vec<BadNode>,
    /// Pairs named.
    pub bad_links: Vec<BadLink>,
    /// Slow tests that named nobody.
    pub not_reproduced: Vec<NotReproduced>,
    /// What could not be followed up, and why.
    pub stuck: Vec<String>,
}

impl Search {
    /// A search over `n` nodes.
    pub fn new(n: usize, config: SearchConfig) -> Search {
        Search {
            n,
            config,
            pending: if n >= 2 {
                vec![Task::Screen]
            } else {
                Vec::new()
            },
            running: Vec::new(),
            tests: Vec::new(),
            proposed: Vec::new(),
            passed: BTreeSet::new(),
            round: 0,
            screen_groups: Vec::new(),
            closings: 0,
            named_at_closing: 0,
            last_closing_slow: false,
            bad_nodes: Vec::new(),
            bad_links: Vec::new(),
            not_reproduced: Vec::new(),
            stuck: vec![],
        }
        .with_too_few(n)
    }

    fn with_too_few(mut self, n: usize) -> Search {
        if n < 2 {
            self.stuck
                .push(format!("{n} node(s): a multi-node test needs two"));
        }
        self
    }

    /// The tests so far, judged.
    pub fn tests(&self) -> &[Judged] {
        &self.tests
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u32 {
        self.round
    }

    /// The next round's tests (no node in two of them); `None` when the search is over.
    pub fn next_round(&mut self) -> Option<Vec<Test>> {
        if !self.proposed.is_empty() {
            return Some(self.proposed.clone());
        }
        if self.pending.is_empty() && !self.close() {
            self.say_unjudged();
            return None;
        }
        self.round += 1;
        let mut busy: BTreeSet<usize> = BTreeSet::new();
        // Suspects of every open task stay out of padding.
        let suspects: BTreeSet<usize> = self.pending.iter().flat_map(Task::suspects).collect();
        let mut later = Vec::new();
        let tasks = std::mem::take(&mut self.pending);
        for task in tasks {
            match self.tests_for(&task, &busy, &suspects) {
                Some(tests) if !tests.is_empty() => {
                    let mut ids = Vec::new();
                    for (purpose, members, padding) in tests {
                        let test = Test {
                            id: self.tests.len() + self.proposed.len(),
                            round: self.round,
                            purpose,
                            members,
                            padding,
                        };
                        busy.extend(test.nodes());
                        ids.push(test.id);
                        self.proposed.push(test);
                    }
                    self.running.push((task, ids));
                }
                Some(_) => self
                    .stuck
                    .push(format!("nothing to test for {:?}", task.suspects())),
                None => later.push(task),
            }
        }
        if self.proposed.is_empty() {
            // Nothing could be scheduled: no free good partner for what is left.
            for task in later {
                self.stuck.push(format!(
                    "no known-good partner was free to test {:?} beside",
                    task.suspects()
                ));
            }
            self.round -= 1;
            return None;
        }
        self.pending = later;
        Some(self.proposed.clone())
    }

    /// At the end, where tests were left unjudged by peers and nothing was named: say that the
    /// search could not tell, never let it read as an all-clear.
    fn say_unjudged(&mut self) {
        let unjudged = self
            .tests
            .iter()
            .any(|j| j.why.contains("not judged against peers"));
        let named = !self.bad_nodes.is_empty() || !self.bad_links.is_empty();
        if unjudged && !named && !self.stuck.iter().any(|s| s.starts_with("no peers level")) {
            self.stuck.push(
                "no peers level: most tests were slow, so slow and healthy could not be told apart by peers; only the phase's own gates (floor, baseline) judged — the fabric may be slow as a whole".into(),
            );
        }
    }

    /// When nothing is left to follow: every node not named, in one test (a fault between two
    /// screen groups shows only there), again after each closing that named something new.
    /// False when the search is over.
    fn close(&mut self) -> bool {
        const MOST_CLOSINGS: u32 = 8;
        let named = self.bad_nodes.len() + self.bad_links.len();
        let again = self.closings == 0 || (self.last_closing_slow && named > self.named_at_closing);
        if !again || self.closings >= MOST_CLOSINGS || self.screen_groups.is_empty() {
            return false;
        }
        let out: BTreeSet<usize> = self
            .bad_nodes
            .iter()
            .map(|b| b.node)
            .chain(self.bad_links.iter().map(|l| l.nodes.1))
            .collect();
        let groups: Vec<Vec<usize>> = self
            .screen_groups
            .iter()
            .map(|g| {
                g.iter()
                    .copied()
                    .filter(|n| !out.contains(n))
                    .collect::<Vec<_>>()
            })
            .filter(|g: &Vec<usize>| !g.is_empty())
            .collect();
        if groups.len() < 2 || groups.iter().map(Vec::len).sum::<usize>() < 2 {
            return false;
        }
        self.closings += 1;
        self.named_at_closing = named;
        self.pending.push(Task::Whole { groups });
        true
    }

    /// Take the results of the round's tests (by test id; a missing one is slow: it did not run).
    pub fn record(&mut self, results: Vec<(usize, TestResult)>) {
        let proposed = std::mem::take(&mut self.proposed);
        let mut round: Vec<(Test, TestResult)> = proposed
            .into_iter()
            .map(|t| {
                let r = results
                    .iter()
                    .find(|(id, _)| *id == t.id)
                    .map(|(_, r)| r.clone())
                    .unwrap_or(TestResult {
                        figure: None,
                        failed: true,
                        words: "no result came back".into(),
                    });
                (t, r)
            })
            .collect();
        // Judged against the tests so far (this round's included) on none of the nodes that
        // have been in a slow test: a median of suspects' tests would call a slow pair normal.
        // Where every test touched a suspect, the screen's tests are the reference.
        let tainted: BTreeSet<usize> = self
            .tests
            .iter()
            .filter(|j| j.slow)
            .flat_map(|j| j.test.nodes())
            .collect();
        let clean = |t: &Test| t.nodes().iter().all(|n| !tainted.contains(n));
        let mut pool: Vec<(usize, f64)> = self
            .tests
            .iter()
            .filter(|j| clean(&j.test))
            .filter_map(|j| {
                Some((
                    j.test.nodes().len(),
                    j.result.figure.filter(|f| physical(*f))?,
                ))
            })
            .collect();
        pool.extend(
            round
                .iter()
                .filter(|(t, _)| clean(t))
                .filter_map(|(t, r)| Some((t.nodes().len(), r.figure.filter(|f| physical(*f))?))),
        );
        if pool.is_empty() {
            pool = self
                .tests
                .iter()
                .filter(|j| j.test.purpose == Purpose::Screen)
                .filter_map(|j| {
                    Some((
                        j.test.nodes().len(),
                        j.result.figure.filter(|f| physical(*f))?,
                    ))
                })
                .collect();
        }
        for (test, result) in round.drain(..) {
            let (read, why) = self.judge(&test, &result, &pool);
            if read == Some(false) {
                self.passed.extend(test.nodes());
            }
            if read.is_none() && !self.stuck.iter().any(|s| s.starts_with("no physical")) {
                self.stuck.push(format!(
                    "no physical reading in test {}: {why}; not judged, and its nodes not taken as good on it",
                    test.id
                ));
            }
            self.tests.push(Judged {
                test,
                result,
                slow: read == Some(true),
                why,
                unjudged: read.is_none(),
            });
        }
        let running = std::mem::take(&mut self.running);
        for (task, ids) in running {
            self.follow(task, &ids);
        }
    }

    /// Slow or not, and why.
    /// Slow (`Some(true)`), not slow (`Some(false)`), or not judged (`None`: a figure that is
    /// no physical reading), and why.
    fn judge(&self, test: &Test, r: &TestResult, pool: &[(usize, f64)]) -> (Option<bool>, String) {
        let Some(figure) = r.figure else {
            return (Some(true), format!("no figure: {}", r.words));
        };
        if r.failed {
            return (Some(true), format!("the phase failed it: {}", r.words));
        }
        if !physical(figure) {
            return (None, format!("figure {figure} is no physical rate"));
        }
        let size = test.nodes().len();
        let same: Vec<f64> = pool
            .iter()
            .filter(|(s, _)| *s == size)
            .map(|(_, v)| *v)
            .collect();
        let (values, basis) = if same.len() >= 3 {
            (same, format!("the {size}-node tests on unsuspected nodes"))
        } else {
            (
                pool.iter().map(|(_, v)| *v).collect(),
                "the tests on unsuspected nodes".to_string(),
            )
        };
        let Some(median) = upper_quartile(&values) else {
            return (Some(false), format!("{figure:.1}"));
        };
        // Fewer than a quarter of the tests near the best: no level to call healthy (a slow
        // fabric, or bad nodes in most groups). Only the phase's own gates judge then.
        let best = values.iter().copied().fold(f64::MIN, f64::max);
        if median < best * self.config.peers_pct / 100.0 {
            return (
                Some(false),
                format!(
                    "{figure:.1}: not judged against peers: the upper quartile of {basis} ({median:.1}) is under {:.0} % of the best ({best:.1}), so they set no healthy level",
                    self.config.peers_pct
                ),
            );
        }
        let floor = median * self.config.peers_pct / 100.0;
        if figure < floor {
            (
                Some(true),
                format!(
                    "{figure:.1} < {:.0} % of {median:.1}, the upper quartile of {basis}",
                    self.config.peers_pct
                ),
            )
        } else {
            (
                Some(false),
                format!(
                    "{figure:.1} ≥ {:.0} % of {median:.1} ({basis})",
                    self.config.peers_pct
                ),
            )
        }
    }

    fn slow(&self, id: usize) -> bool {
        self.tests.get(id).is_none_or(|j| j.slow)
    }

    /// Known-good nodes free for padding: passed a test, under no suspicion, not busy.
    fn partners(
        &self,
        busy: &BTreeSet<usize>,
        suspects: &BTreeSet<usize>,
        avoid: &[usize],
    ) -> Vec<usize> {
        self.passed
            .iter()
            .copied()
            .filter(|n| !busy.contains(n) && !suspects.contains(n) && !avoid.contains(n))
            .filter(|n| !self.bad_nodes.iter().any(|b| b.node == *n))
            .collect()
    }

    /// The tests `task` needs this round: `None` where it must wait (a node busy, no partner).
    #[allow(clippy::type_complexity)]
    fn tests_for(
        &self,
        task: &Task,
        busy: &BTreeSet<usize>,
        suspects: &BTreeSet<usize>,
    ) -> Option<Vec<(Purpose, Vec<usize>, Vec<usize>)>> {
        let free = |set: &[usize]| set.iter().all(|n| !busy.contains(n));
        let mut taken: BTreeSet<usize> = busy.clone();
        // One node padded to a pair with a free good partner.
        let mut padded = |members: Vec<usize>,
                          avoid: &[usize],
                          purpose: Purpose|
         -> Option<(Purpose, Vec<usize>, Vec<usize>)> {
            if members.len() >= 2 {
                taken.extend(&members);
                return Some((purpose, members, Vec::new()));
            }
            let p = *self.partners(&taken, suspects, avoid).first()?;
            taken.extend(&members);
            taken.insert(p);
            Some((purpose, members, vec![p]))
        };
        match task {
            Task::PairCheck => Some(
                partition(self.n, 2)
                    .into_iter()
                    .map(|g| (Purpose::Screen, g, Vec::new()))
                    .collect(),
            ),
            Task::Screen => Some(
                partition(self.n, self.config.screen.group_size(self.n))
                    .into_iter()
                    .map(|g| (Purpose::Screen, g, Vec::new()))
                    .collect(),
            ),
            Task::Whole { groups } => Some(vec![(Purpose::Whole, groups.concat(), Vec::new())]),
            Task::Find { set, .. } => {
                if !free(set) {
                    return None;
                }
                let (a, b) = set.split_at(set.len() / 2);
                let ta = padded(a.to_vec(), &[], Purpose::Half)?;
                let tb = padded(b.to_vec(), &[], Purpose::Half)?;
                Some(vec![ta, tb])
            }
            Task::CrossGroups { groups, .. } => {
                if !free(&groups.concat()) {
                    return None;
                }
                let (ga, gb) = groups.split_at(groups.len() / 2);
                // A half of one group is known to pass: only unions are tested.
                Some(
                    [ga, gb]
                        .iter()
                        .filter(|g| g.len() >= 2)
                        .map(|g| (Purpose::Cross, g.concat(), Vec::new()))
                        .collect(),
                )
            }
            Task::Cross { a, b, tried, .. } => {
                if !free(a) || !free(b) {
                    return None;
                }
                let (side, other) = if a.len() > 1 { (a, b) } else { (b, a) };
                let (h1, h2) = side.split_at(side.len() / 2);
                let half = if *tried { h2 } else { h1 };
                let members: Vec<usize> = half.iter().chain(other.iter()).copied().collect();
                Some(vec![(Purpose::Cross, members, Vec::new())])
            }
            Task::Confirm { node, beside, .. } => {
                if busy.contains(node) {
                    return None;
                }
                Some(vec![padded(vec![*node], beside, Purpose::Partner)?])
            }
            Task::Again { a, b, .. } => {
                if busy.contains(a) || busy.contains(b) {
                    return None;
                }
                Some(vec![(Purpose::Again, vec![*a, *b], Vec::new())])
            }
        }
    }

    /// `a` and `b` each pass, `a ∪ b` was slow: one node each is a pair to run again, more is
    /// a cross search.
    fn push_cross(&mut self, a: Vec<usize>, b: Vec<usize>, evidence: Vec<usize>) {
        if a.is_empty() || b.is_empty() {
            return;
        }
        if a.len() == 1 && b.len() == 1 {
            self.pending.push(Task::Again {
                a: a[0],
                b: b[0],
                evidence,
            });
        } else {
            self.pending.push(Task::Cross {
                a,
                b,
                evidence,
                tried: false,
            });
        }
    }

    /// Groups that each pass, whose union was slow: two are a cross search, more are halved.
    fn push_cross_groups(&mut self, mut groups: Vec<Vec<usize>>, evidence: Vec<usize>) {
        match groups.len() {
            0 | 1 => {}
            2 => {
                let b = groups.pop().unwrap_or_default();
                let a = groups.pop().unwrap_or_default();
                self.push_cross(a, b, evidence);
            }
            _ => self.pending.push(Task::CrossGroups { groups, evidence }),
        }
    }

    /// The members of the first slow test of `evidence` (where the trail began), with `more`.
    fn origin(&self, evidence: &[usize], more: &[usize]) -> Vec<usize> {
        let mut nodes: BTreeSet<usize> = more.iter().copied().collect();
        if let Some(first) = evidence.first().and_then(|i| self.tests.get(*i)) {
            nodes.extend(&first.test.members);
        }
        nodes.into_iter().collect()
    }

    /// What a task's results lead to.
    fn follow(&mut self, task: Task, ids: &[usize]) {
        let ev = |mut e: Vec<usize>, more: &[usize]| {
            e.extend(more);
            e
        };
        match task {
            Task::Screen => {
                self.screen_groups = ids
                    .iter()
                    .map(|i| self.tests[*i].test.members.clone())
                    .collect();
                let slow: Vec<usize> = ids.iter().copied().filter(|i| self.slow(*i)).collect();
                if slow.is_empty() && self.config.screen == Screen::Groups && self.n >= 4 {
                    self.pending.push(Task::PairCheck);
                }
                for id in slow {
                    let set = self.tests[id].test.members.clone();
                    self.pending.push(Task::Find {
                        set,
                        evidence: vec![id],
                    });
                }
            }
            Task::PairCheck => {
                let slow: Vec<usize> = ids.iter().copied().filter(|i| self.slow(*i)).collect();
                for id in slow {
                    let set = self.tests[id].test.members.clone();
                    self.pending.push(Task::Find {
                        set,
                        evidence: vec![id],
                    });
                }
            }
            Task::Whole { groups } => {
                self.last_closing_slow = self.slow(ids[0]);
                if self.slow(ids[0]) {
                    self.push_cross_groups(groups, vec![ids[0]]);
                }
            }
            Task::Find { set, evidence } => {
                let (a, b) = set.split_at(set.len() / 2);
                let mut any = false;
                for (half, id) in [(a, ids[0]), (b, ids[1])] {
                    if !self.slow(id) {
                        continue;
                    }
                    any = true;
                    let e = ev(evidence.clone(), &[id]);
                    if half.len() == 1 {
                        self.pending.push(Task::Confirm {
                            node: half[0],
                            beside: self.tests[id].test.padding.clone(),
                            evidence: e,
                        });
                    } else {
                        self.pending.push(Task::Find {
                            set: half.to_vec(),
                            evidence: e,
                        });
                    }
                }
                if !any {
                    self.push_cross(a.to_vec(), b.to_vec(), ev(evidence, ids));
                }
            }
            Task::CrossGroups { groups, evidence } => {
                let (ga, gb) = groups.split_at(groups.len() / 2);
                let mut tested = ids.iter();
                let mut any = false;
                for g in [ga, gb] {
                    if g.len() < 2 {
                        continue;
                    }
                    let Some(id) = tested.next() else { continue };
                    if self.slow(*id) {
                        any = true;
                        self.push_cross_groups(g.to_vec(), ev(evidence.clone(), &[*id]));
                    }
                }
                if !any {
                    self.push_cross(ga.concat(), gb.concat(), ev(evidence, ids));
                }
            }
            Task::Cross {
                a,
                b,
                evidence,
                tried,
            } => {
                let id = ids[0];
                let flipped = a.len() <= 1;
                let (side, other) = if flipped { (&b, &a) } else { (&a, &b) };
                let (h1, h2) = side.split_at(side.len() / 2);
                let e = ev(evidence, &[id]);
                // Slow: the fault is in this half with the other side. Not slow: by elimination
                // in the other half (a fault that does not come back is caught where the last
                // pair runs again, and names nobody).
                let rest = if self.slow(id) { h1 } else { h2 };
                let _ = tried;
                let (na, nb) = if flipped {
                    (other.clone(), rest.to_vec())
                } else {
                    (rest.to_vec(), other.clone())
                };
                self.push_cross(na, nb, e);
            }
            Task::Confirm {
                node,
                mut beside,
                evidence,
            } => {
                let id = ids[0];
                let partner = self.tests[id].test.padding.first().copied();
                let e = ev(evidence, &[id]);
                if self.slow(id) {
                    beside.extend(partner);
                    if beside.len() >= 2 {
                        self.bad_nodes.push(BadNode { node, tests: e });
                    } else {
                        self.pending.push(Task::Confirm {
                            node,
                            beside,
                            evidence: e,
                        });
                    }
                } else if let Some(first) = beside.first().copied() {
                    // Fine beside another good node: the first partner together with it, or
                    // nothing that comes back.
                    self.pending.push(Task::Again {
                        a: node,
                        b: first,
                        evidence: e,
                    });
                } else {
                    self.not_reproduced.push(NotReproduced {
                        nodes: self.origin(&e, &[node]),
                        tests: e,
                        why: "slow once, fine beside a good partner".into(),
                    });
                }
            }
            Task::Again { a, b, evidence } => {
                let id = ids[0];
                let e = ev(evidence, &[id]);
                if !self.slow(id) {
                    self.not_reproduced.push(NotReproduced {
                        nodes: self.origin(&e, &[a, b]),
                        tests: e,
                        why: "slow once; not slow again down to the last pair".into(),
                    });
                    return;
                }
                // Named once the pair alone was slow twice.
                let pair: BTreeSet<usize> = [a, b].into();
                let alone = e
                    .iter()
                    .filter(|t| self.slow(**t))
                    .filter(|t| {
                        self.tests[**t]
                            .test
                            .nodes()
                            .into_iter()
                            .collect::<BTreeSet<_>>()
                            == pair
                    })
                    .count();
                if alone >= 2 {
                    self.bad_links.push(BadLink {
                        nodes: (a.min(b), a.max(b)),
                        tests: e,
                    });
                } else {
                    self.pending.push(Task::Again { a, b, evidence: e });
                }
            }
        }
    }
}

/// `0..n` in groups of `size`; a last group of one joins the one before it.
pub fn partition(n: usize, size: usize) -> Vec<Vec<usize>> {
    let size = size.max(2);
    let mut groups: Vec<Vec<usize>> = (0..n)
        .collect::<Vec<_>>()
        .chunks(size)
        .map(<[usize]>::to_vec)
        .collect();
    if groups.len() > 1 && groups.last().is_some_and(|g| g.len() < 2) {
        let last = groups.pop().unwrap_or_default();
        if let Some(prev) = groups.last_mut() {
            prev.extend(last);
        }
    }
    groups
}

/// The level three quarters of the tests stay under: what the healthy tests reach while fewer
/// than three quarters are slow. A median would not do: a √N screen with a bad node in half
/// its groups has a slow median, and would call every slow group normal.
fn upper_quartile(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = (v.len() - 1) as f64 * 0.75;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (at - at.floor()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A figure that is no physical rate (negative) names nobody and makes no good partner:
    /// the test is not judged, and the search says so.
    #[test]
    fn an_impossible_figure_is_no_evidence() {
        let mut s = Search::new(
            8,
            SearchConfig {
                screen: Screen::Pairs,
                peers_pct: 80.0,
            },
        );
        while let Some(round) = s.next_round() {
            let got = round
                .iter()
                .map(|t| {
                    let figure = if t.nodes().contains(&3) { -5.0 } else { 370.0 };
                    (
                        t.id,
                        TestResult {
                            figure: Some(figure),
                            failed: false,
                            words: String::new(),
                        },
                    )
                })
                .collect();
            s.record(got);
        }
        assert!(s.bad_nodes.is_empty() && s.bad_links.is_empty());
        assert!(s.tests().iter().any(|j| j.unjudged && !j.slow));
        assert!(
            s.stuck.iter().any(|w| w.starts_with("no physical reading")),
            "{:?}",
            s.stuck
        );
        assert!(
            !s.passed.contains(&3),
            "node 3 is no good partner on a negative figure"
        );
    }

    proptest! {
        /// Whatever comes back (no figure, NaN, infinities, negative, failed at random), the
        /// search never panics, never puts a node in two tests of a round, and ends.
        #[test]
        fn any_results_end_the_search(
            n in 0usize..48,
            pairs in any::<bool>(),
            results in proptest::collection::vec(
                (proptest::option::of(prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), 0.0..500.0]), any::<bool>()),
                1..64,
            ),
        ) {
            let screen = if pairs { Screen::Pairs } else { Screen::Groups };
            let mut s = Search::new(n, SearchConfig { screen, peers_pct: 80.0 });
            let mut k = 0usize;
            let mut rounds = 0;
            while let Some(round) = s.next_round() {
                rounds += 1;
                prop_assert!(rounds < 400, "the search did not end");
                let mut seen = BTreeSet::new();
                for t in &round {
                    prop_assert!(t.nodes().len() >= 2 || n < 2, "{t:?}");
                    for node in t.nodes() {
                        prop_assert!(node < n);
                        prop_assert!(seen.insert(node), "node {node} twice in round {}", t.round);
                    }
                }
                let got = round
                    .iter()
                    .map(|t| {
                        let (figure, failed) = results[k % results.len()];
                        k += 1;
                        (t.id, TestResult { figure, failed, words: String::new() })
                    })
                    .collect();
                s.record(got);
            }
        }
    }
}
