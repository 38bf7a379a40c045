//! Which inventory node a series is: its host label's value matched to a node's SSH target or
//! name, or to a short host name only one node has.

use std::collections::HashMap;

use crate::config::inventory::NodeSpec;
use crate::sources::promql::Series;

/// Which inventory node a host label's value is: the same host (the node's SSH target, or its
/// name), else the same short host (before the first dot: `gpu07` for `gpu07.site.local`), when
/// only one node has it.
#[derive(Debug, Clone)]
pub(super) struct HostIndex {
    exact: HashMap<String, usize>,
    short: HashMap<String, Option<usize>>,
}

pub(super) fn short_name(name: &str) -> &str {
    // An SSH target may carry its user: `root@gpu07` is host gpu07.
    let host = name.rsplit_once('@').map_or(name, |(_, h)| h);
    host.split('.').next().unwrap_or(host)
}

impl HostIndex {
    pub(super) fn new(nodes: &[NodeSpec]) -> Self {
        let mut exact = HashMap::new();
        let mut short: HashMap<String, Option<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            // A display name (`name = …` in burnin.toml) is not what the exporter calls the
            // host: the target is.
            exact.insert(n.target.clone(), i);
            let host = n
                .target
                .rsplit_once('@')
                .map_or(n.target.as_str(), |(_, h)| h);
            exact.entry(host.to_string()).or_insert(i);
            exact.entry(n.name.clone()).or_insert(i);
            short
                .entry(short_name(&n.target).to_string())
                .and_modify(|v| *v = None)
                .or_insert(Some(i));
        }
        Self { exact, short }
    }

    pub(super) fn find(&self, host: &str) -> Option<usize> {
        self.exact
            .get(host)
            .copied()
            .or_else(|| self.short.get(short_name(host)).copied().flatten())
    }
}

pub(super) fn host_of<'a>(s: &'a Series, labels: &[String]) -> &'a str {
    labels
        .iter()
        .map(|l| s.label(l))
        .find(|v| !v.is_empty())
        .unwrap_or("")
}
