//! The prometheus-mode nodes and what has been said about them: one poll's answers in, the
//! hellos, frames, links and notices that changed out (pure, for tests).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::hosts::{HostIndex, host_of, short_name};
use super::{HISTORY_POINTS, IDENTITY_EVERY};
use crate::config::inventory::{NodeSpec, PrometheusSpec};
use crate::model::SourceEvent;
use crate::model::units::Period;
use crate::model::{GpuInfo, NodeFrame, NodeHello, NodeLink, Unavailable, UnixMillis, XidEvent};
use crate::sources::dcgm_series::{self, Gathered};
use crate::sources::promql::Series;

/// What a hello said: the GPUs (index, UUID, model, PCI bus id) and the readings missing.
type HelloSaid = (Vec<(u32, String, String, Option<String>)>, Vec<Unavailable>);

/// What was last said about a node, so only changes are sent.
#[derive(Debug, Clone, Default)]
struct NodeState {
    /// What the last hello said.
    hello: Option<HelloSaid>,
    /// Sample time of the last frame sent.
    last_at: UnixMillis,
    /// The unreachable reason last sent; `None` while frames flow.
    down: Option<String>,
    /// Last Xid code per GPU, so one code is one event.
    xid: HashMap<u32, u32>,
}

/// One GPU's identity from the identity query.
#[derive(Debug, Clone, Default, PartialEq)]
struct Identity {
    uuid: String,
    model: String,
    pci_bus_id: Option<String>,
    driver: Option<String>,
}

/// The prometheus-mode nodes and what has been said about them.
pub struct PromNodes {
    nodes: Vec<NodeSpec>,
    index: HostIndex,
    host_labels: Vec<String>,
    server: String,
    period: Period,
    state: Vec<NodeState>,
    /// Identity by node index, then GPU.
    identity: Vec<BTreeMap<u32, Identity>>,
    absent_said: Option<BTreeMap<dcgm_series::Absent, Vec<&'static str>>>,
    strangers_said: BTreeSet<String>,
    mig_said: bool,
    late_said: bool,
    polls: u64,
    /// A GPU appeared that the identities do not know: ask at the next poll.
    identity_due: bool,
    /// Back-filled frames per node, sent after its first hello.
    history: HashMap<usize, Vec<NodeFrame>>,
}

impl PromNodes {
    /// Watch `nodes` through the server at `server` (its URL, for messages).
    pub fn new(nodes: Vec<NodeSpec>, spec: &PrometheusSpec, period: Period) -> Self {
        Self {
            index: HostIndex::new(&nodes),
            state: vec![NodeState::default(); nodes.len()],
            identity: vec![BTreeMap::new(); nodes.len()],
            nodes,
            host_labels: spec.host_labels.clone(),
            server: spec.url.clone(),
            period,
            absent_said: None,
            strangers_said: BTreeSet::new(),
            mig_said: false,
            late_said: false,
            polls: 0,
            identity_due: true,
            history: HashMap::new(),
        }
    }

    /// Whether the next poll should ask for identities (the first, every
    /// [`IDENTITY_EVERY`], or when a GPU without one appeared).
    pub fn wants_identity(&self) -> bool {
        self.identity_due || self.polls.is_multiple_of(IDENTITY_EVERY)
    }

    /// How far back the first poll back-fills, in periods: as many as the store keeps, fewer
    /// when the cluster is so big that the answer would pass [`HISTORY_POINTS`].
    pub fn history_steps(&self) -> usize {
        let series = self
            .nodes
            .iter()
            .map(|n| n.gpus.max(1) as usize)
            .sum::<usize>()
            * 6;
        (HISTORY_POINTS / series.max(1)).clamp(2, crate::model::HISTORY_SLOTS)
    }

    /// Take a back-fill answer (a range query of [`HISTORY_FAMILIES`]): frames per node in time
    /// order, sent by the next [`PromNodes::step`] after the node's hello and before its first
    /// live frame, so the panes show the minutes before the console started.
    pub fn take_history(&mut self, series: &[Series]) {
        let mut by_node: BTreeMap<usize, BTreeMap<UnixMillis, Gathered>> = BTreeMap::new();
        for s in series {
            let host = host_of(s, &self.host_labels);
            let Some(node) = self.index.find(host) else {
                continue;
            };
            for &(at, value) in &s.points {
                by_node.entry(node).or_default().entry(at).or_default().add(
                    s.label("__name__"),
                    host,
                    s.label("gpu"),
                    !s.label("GPU_I_ID").is_empty(),
                    value,
                );
            }
        }
        for (node, steps) in by_node {
            let frames = steps
                .into_iter()
                .map(|(at, g)| NodeFrame {
                    node: self.nodes[node].name.clone(),
                    at_ms: at,
                    gpus: g
                        .nodes
                        .into_values()
                        .flat_map(|n| n.gpus.into_values())
                        .map(|r| r.finish().0)
                        .collect(),
                    nics: Vec::new(),
                    netdevs: Vec::new(),
                })
                .collect();
            self.history.insert(node, frames);
        }
    }

    /// Every node unreachable for `reason` (the server failed); only changes are returned.
    pub fn failed(&mut self, reason: &str) -> Vec<SourceEvent> {
        let mut out = Vec::new();
        for (i, st) in self.state.iter_mut().enumerate() {
            if st.down.as_deref() != Some(reason) {
                st.down = Some(reason.to_string());
                out.push(SourceEvent::Link {
                    node: self.nodes[i].name.clone(),
                    at_ms: crate::model::now_ms(),
                    link: NodeLink::Unreachable(reason.to_string()),
                });
            }
        }
        out
    }

    /// One poll's answers into events: hellos where the GPU list changed, a frame per node whose
    /// samples advanced, links for nodes that vanished, notices for what no node exports.
    pub fn step(
        &mut self,
        values: &[Series],
        times: &[Series],
        identity: Option<&[Series]>,
        now_ms: UnixMillis,
    ) -> Vec<SourceEvent> {
        self.polls += 1;
        let mut out = Vec::new();
        if let Some(ids) = identity {
            self.take_identity(ids);
        }
        let mut gathered = Gathered::new();
        for s in values {
            let Some(&(_, value)) = s.points.last() else {
                continue;
            };
            gathered.add(
                s.label("__name__"),
                host_of(s, &self.host_labels),
                s.label("gpu"),
                !s.label("GPU_I_ID").is_empty(),
                value,
            );
        }
        let newest = self.newest_times(times);
        let (mut by_node, strangers) = self.by_node(&mut gathered);
        let mut ages = Vec::new();
        for i in 0..self.nodes.len() {
            let Some((host, series)) = by_node.remove(&i) else {
                self.no_series(i, now_ms, &mut out);
                continue;
            };
            let at = newest.get(&i).copied();
            if let Some(at) = at {
                ages.push(now_ms.saturating_sub(at));
            }
            self.node_events(i, host, series, at, identity.is_some(), &mut out);
        }
        self.notices(&gathered, strangers, &ages, &mut out);
        out
    }

    /// The identity answer: each node's GPUs by index (MIG instances left out).
    fn take_identity(&mut self, ids: &[Series]) {
        self.identity_due = false;
        for id in &mut self.identity {
            id.clear();
        }
        for s in ids {
            if !s.label("GPU_I_ID").is_empty() {
                continue;
            }
            let host = host_of(s, &self.host_labels);
            let (Some(node), Ok(gpu)) = (self.index.find(host), s.label("gpu").parse::<u32>())
            else {
                continue;
            };
            if gpu >= crate::model::MAX_GPUS_PER_NODE {
                continue;
            }
            let driver = Some(s.label("DCGM_FI_DRIVER_VERSION"))
                .filter(|d| !d.is_empty())
                .map(String::from);
            self.identity[node].insert(
                gpu,
                Identity {
                    uuid: s.label("UUID").to_string(),
                    model: s.label("modelName").to_string(),
                    pci_bus_id: Some(s.label("pci_bus_id"))
                        .filter(|b| !b.is_empty())
                        .map(String::from),
                    driver,
                },
            );
        }
    }

    /// Each node's newest sample time, from the times answer.
    fn newest_times(&self, times: &[Series]) -> HashMap<usize, UnixMillis> {
        let mut newest: HashMap<usize, UnixMillis> = HashMap::new();
        for s in times {
            let host = host_of(s, &self.host_labels);
            let Some(node) = self.index.find(host) else {
                continue;
            };
            if let Some(&(_, secs)) = s.points.last()
                && secs.is_finite()
                && secs > 0.0
            {
                let at = (secs * 1000.0).round() as UnixMillis;
                let e = newest.entry(node).or_insert(at);
                *e = (*e).max(at);
            }
        }
        newest
    }

    /// The gathered series by inventory node, and the hosts no node is.
    fn by_node(
        &self,
        gathered: &mut Gathered,
    ) -> (
        BTreeMap<usize, (String, dcgm_series::NodeSeries)>,
        BTreeSet<String>,
    ) {
        let mut by_node = BTreeMap::new();
        let mut strangers = BTreeSet::new();
        for (host, series) in std::mem::take(&mut gathered.nodes) {
            match self.index.find(&host) {
                Some(i) => {
                    by_node.insert(i, (host, series));
                }
                None => {
                    strangers.insert(if host.is_empty() {
                        format!("(no {} label)", self.host_labels.join("/"))
                    } else {
                        host
                    });
                }
            }
        }
        (by_node, strangers)
    }

    /// A node with no series is unreachable, with why (said once per reason).
    fn no_series(&mut self, i: usize, now_ms: UnixMillis, out: &mut Vec<SourceEvent>) {
        let reason = format!(
            "no series in Prometheus with {} = {} (exporter down or not scraped, or the \
             node goes by another name there)",
            self.host_labels.join(" or "),
            short_name(&self.nodes[i].target)
        );
        if self.state[i].down.as_deref() != Some(reason.as_str()) {
            self.state[i].down = Some(reason.clone());
            out.push(SourceEvent::Link {
                node: self.nodes[i].name.clone(),
                at_ms: now_ms,
                link: NodeLink::Unreachable(reason),
            });
        }
    }

    /// A node's events of this poll: a hello when its GPU list changed, its back-filled frames,
    /// then its frame when its samples advanced to `at`.
    fn node_events(
        &mut self,
        i: usize,
        host: String,
        series: dcgm_series::NodeSeries,
        at: Option<UnixMillis>,
        asked_identity: bool,
        out: &mut Vec<SourceEvent>,
    ) {
        let name = self.nodes[i].name.clone();
        let unavailable = series.unavailable();
        let mut samples = Vec::with_capacity(series.gpus.len());
        let mut xids = Vec::new();
        for reading in series.gpus.into_values() {
            let (sample, xid) = reading.finish();
            xids.push((sample.index, xid));
            samples.push(sample);
        }
        self.hello_if_changed(i, host, &samples, unavailable, asked_identity, out);
        let st = &mut self.state[i];
        for past in self.history.remove(&i).unwrap_or_default() {
            if past.at_ms > st.last_at {
                st.last_at = past.at_ms;
                out.push(SourceEvent::Frame(past));
            }
        }
        // Nothing scraped since the last frame (or no time for it in this answer): no
        // frame, so the store can tell a node whose samples stopped.
        let Some(at) = at.filter(|&at| at > st.last_at) else {
            return;
        };
        st.last_at = at;
        st.down = None;
        // The gauge holds the last Xid since the exporter started, stamped with the scrape
        // time, not the Xid's: the code a GPU shows at first sight may be days old. Counted
        // as new it would fail the no-xid gate of whatever phase runs now, so it is said as
        // a note (the agent, too, reports only Xids that happen while it runs); a code that
        // changes later is an event.
        let mut earlier = Vec::new();
        for (sample, (gpu, xid)) in samples.iter_mut().zip(xids) {
            let Some(code) = xid else { continue };
            match st.xid.insert(gpu, code) {
                None if code != 0 => earlier.push(format!(
                    "GPU {gpu}: Xid {code} ({}) before burnin looked",
                    crate::model::xid::xid_meaning(code)
                )),
                Some(before) if code != 0 && before != code => {
                    sample.xid_events.push(XidEvent { code, at_ms: at });
                }
                _ => {}
            }
        }
        if !earlier.is_empty() {
            out.push(SourceEvent::Note {
                node: name.clone(),
                at_ms: at,
                text: format!(
                    "{}, as dcgm-exporter's last-Xid gauge holds it (not counted as new; the \
                     T0 preflight reads the kernel log for when)",
                    earlier.join("; ")
                ),
            });
        }
        out.push(SourceEvent::Frame(NodeFrame {
            node: name,
            at_ms: at,
            gpus: samples,
            nics: Vec::new(),
            netdevs: Vec::new(),
        }));
    }

    /// A hello for node `i` when its GPUs (with their identities) or missing readings changed.
    fn hello_if_changed(
        &mut self,
        i: usize,
        host: String,
        samples: &[crate::model::GpuSample],
        unavailable: Vec<Unavailable>,
        asked_identity: bool,
        out: &mut Vec<SourceEvent>,
    ) {
        let listed: Vec<(u32, String, String, Option<String>)> = samples
            .iter()
            .map(|g| {
                let id = self.identity[i].get(&g.index).cloned().unwrap_or_default();
                (g.index, id.uuid, id.model, id.pci_bus_id)
            })
            .collect();
        let said = (listed, unavailable);
        if self.state[i].hello.as_ref() == Some(&said) {
            return;
        }
        if !asked_identity
            && samples
                .iter()
                .any(|g| !self.identity[i].contains_key(&g.index))
        {
            self.identity_due = true;
        }
        let driver = self.identity[i].values().find_map(|d| d.driver.clone());
        out.push(SourceEvent::Hello(NodeHello {
            node: self.nodes[i].name.clone(),
            host,
            agent_version: format!("Prometheus {} (dcgm-exporter series)", self.server),
            driver,
            cuda: None,
            gpus: samples
                .iter()
                .zip(&said.0)
                .map(|(g, (index, uuid, model, bus))| GpuInfo {
                    index: *index,
                    name: model.clone(),
                    uuid: uuid.clone(),
                    power_limit_watts: g.power_limit_watts,
                    sm_clock_max_mhz: None,
                    memory_total_bytes: g.memory_total_bytes,
                    nvlink_links: None,
                    identity: crate::model::GpuIdentity {
                        pci_bus_id: bus.clone(),
                        ..Default::default()
                    },
                })
                .collect(),
            topology: None,
            system: None,
            unavailable: said.1.clone(),
        }));
        self.state[i].hello = Some(said);
    }

    /// What no node exports, hosts not in the inventory, MIG series left out, and samples too
    /// old everywhere: each said once.
    fn notices(
        &mut self,
        gathered: &Gathered,
        strangers: BTreeSet<String>,
        ages: &[UnixMillis],
        out: &mut Vec<SourceEvent>,
    ) {
        let absent = gathered.absent();
        if self.absent_said.as_ref() != Some(&absent) && !ages.is_empty() {
            // burnin's own series are no loss to a site that runs dcgm-exporter.
            for (why, names) in absent
                .iter()
                .filter(|(w, _)| **w != dcgm_series::Absent::BurninOnly)
            {
                out.push(SourceEvent::Notice {
                    text: format!(
                        "Prometheus {}: no node has {} (shown n/a): {}",
                        self.server,
                        names.join(", "),
                        why.reason()
                    ),
                });
            }
            self.absent_said = Some(absent);
        }
        if !strangers.is_empty() && strangers != self.strangers_said {
            let shown: Vec<&str> = strangers.iter().take(5).map(String::as_str).collect();
            let more = strangers.len().saturating_sub(shown.len());
            out.push(SourceEvent::Notice {
                text: format!(
                    "Prometheus {}: series for hosts not in the inventory, left out: {}{}",
                    self.server,
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ),
            });
            self.strangers_said = strangers;
        }
        if gathered.mig_series > 0 && !self.mig_said {
            self.mig_said = true;
            out.push(SourceEvent::Notice {
                text: format!(
                    "Prometheus {}: {} MIG-instance series left out: burnin reads whole GPUs",
                    self.server, gathered.mig_series
                ),
            });
        }
        // Samples older than the store's stale limit on every node mean the scrape interval is
        // longer than burnin's: say which setting to change rather than show a stale cluster.
        let period_ms = self.period.millis();
        if !self.late_said
            && self.polls >= 3
            && !ages.is_empty()
            && ages.iter().all(|&a| a > 2 * period_ms)
        {
            self.late_said = true;
            let youngest = ages.iter().min().copied().unwrap_or(0);
            out.push(SourceEvent::Notice {
                text: format!(
                    "Prometheus {}: the newest samples are {:.0} s old, over twice burnin's \
                     interval: set [defaults] interval to the scrape interval",
                    self.server,
                    youngest as f64 / 1000.0
                ),
            });
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::inventory::{DEFAULT_HOST_LABELS, Mode};

    pub(crate) fn spec() -> PrometheusSpec {
        PrometheusSpec {
            url: "http://prom:9090".into(),
            selector: "job=\"dcgm\"".into(),
            host_labels: DEFAULT_HOST_LABELS.map(String::from).to_vec(),
            bearer_token_file: None,
            basic_auth: None,
            ca_file: None,
            timeout: std::time::Duration::from_secs(5),
        }
    }

    fn node(name: &str) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            target: name.into(),
            user: None,
            port: None,
            identity: None,
            ssh_options: Vec::new(),
            gpus: 2,
            mode: Mode::Prometheus,
            agent_args: Vec::new(),
            agent_path: String::new(),
            nic_rate_gbps: None,
        }
    }

    fn series(labels: &[(&str, &str)], at_ms: UnixMillis, v: f64) -> Series {
        Series {
            labels: crate::sources::promql::Labels::from_pairs(labels.iter().copied()),
            points: vec![(at_ms, v)],
        }
    }

    fn value(name: &str, host: &str, gpu: &str, v: f64) -> Series {
        series(
            &[("__name__", name), ("Hostname", host), ("gpu", gpu)],
            0,
            v,
        )
    }

    fn time(host: &str, secs: f64) -> Series {
        series(&[("hostname", host)], 0, secs)
    }

    #[test]
    fn a_node_with_a_display_name_is_found_by_its_host() {
        let mut named = node("root@dgx-b300-rack12-n01.cluster.local");
        named.name = "r12n01".into();
        let mut w = PromNodes::new(
            vec![named],
            &spec(),
            Period::from_millis(5_000).expect("period"),
        );
        let values = vec![value(
            "DCGM_FI_DEV_POWER_USAGE",
            "dgx-b300-rack12-n01",
            "0",
            700.0,
        )];
        let times = vec![time("dgx-b300-rack12-n01", 1000.0)];
        let ev = w.step(&values, &times, None, 1_002_000);
        assert!(
            ev.iter()
                .any(|e| matches!(e, SourceEvent::Frame(f) if f.node == "r12n01")),
            "{ev:?}"
        );
        // And a node that has no series says which host it looked for, not its display name.
        let mut named = node("gpu07");
        named.name = "r1n7".into();
        let mut w = PromNodes::new(
            vec![named],
            &spec(),
            Period::from_millis(5_000).expect("period"),
        );
        let ev = w.step(&[], &[], None, 1_002_000);
        assert!(
            ev.iter().any(|e| matches!(e,
            SourceEvent::Link { node, link: NodeLink::Unreachable(r), .. }
                if node == "r1n7" && r.contains("= gpu07"))),
            "{ev:?}"
        );
    }

    #[test]
    fn frames_hellos_and_links_from_one_poll() {
        let nodes = vec![node("gpu01"), node("root@gpu02"), node("gpu03")];
        let mut w = PromNodes::new(nodes, &spec(), Period::from_millis(5_000).expect("period"));
        assert!(w.wants_identity());
        let values = vec![
            value("DCGM_FI_DEV_POWER_USAGE", "gpu01", "0", 700.5),
            value("DCGM_FI_DEV_POWER_USAGE", "gpu01", "1", 120.0),
            value("DCGM_FI_DEV_XID_ERRORS", "gpu01", "1", 79.0),
            value("DCGM_FI_DEV_GPU_TEMP", "gpu02.site.local", "0", 61.0),
            value("DCGM_FI_DEV_GPU_TEMP", "gpu99", "0", 61.0),
        ];
        let ids = vec![series(
            &[
                ("Hostname", "gpu01"),
                ("gpu", "0"),
                ("UUID", "GPU-a"),
                ("modelName", "NVIDIA B300"),
                ("pci_bus_id", "00000000:18:00.0"),
                ("DCGM_FI_DRIVER_VERSION", "580.82"),
            ],
            0,
            1.0,
        )];
        let times = vec![time("gpu01", 1000.0), time("gpu02.site.local", 999.5)];
        let ev = w.step(&values, &times, Some(&ids), 1_002_000);
        let hello = ev
            .iter()
            .find_map(|e| match e {
                SourceEvent::Hello(h) if h.node == "gpu01" => Some(h),
                _ => None,
            })
            .expect("hello gpu01");
        assert_eq!(hello.gpus.len(), 2);
        assert_eq!(hello.gpus[0].uuid, "GPU-a");
        assert_eq!(hello.gpus[0].name, "NVIDIA B300");
        assert_eq!(
            hello.gpus[0].identity.pci_bus_id.as_deref(),
            Some("00000000:18:00.0"),
            "the report's node table names the GPU by its bus id"
        );
        assert_eq!(hello.driver.as_deref(), Some("580.82"));
        assert!(
            hello
                .unavailable
                .iter()
                .any(|u| u.reading == "temperature" && u.why.contains("DCGM_FI_DEV_GPU_TEMP")),
            "gpu01 has power and Xid only: {:?}",
            hello.unavailable
        );
        let frame = |ev: &[SourceEvent], n: &str| {
            ev.iter().find_map(|e| match e {
                SourceEvent::Frame(f) if f.node == n => Some(f.clone()),
                _ => None,
            })
        };
        let f1 = frame(&ev, "gpu01").expect("gpu01 frame");
        assert_eq!(f1.at_ms, 1_000_000);
        assert_eq!(f1.gpus[0].power_avg_watts, Some(700.5));
        assert!(
            f1.gpus[1].xid_events.is_empty(),
            "a code seen first is no new event"
        );
        assert!(ev.iter().any(|e| matches!(e,
            SourceEvent::Note { node, text, .. }
                if node == "gpu01" && text.starts_with("GPU 1: Xid 79 (") && text.contains("before burnin looked"))));
        let f2 = frame(&ev, "root@gpu02").expect("short name and user@ match");
        assert_eq!(f2.at_ms, 999_500);
        assert!(ev.iter().any(|e| matches!(e,
            SourceEvent::Link { node, link: NodeLink::Unreachable(r), .. }
                if node == "gpu03" && r.contains("Hostname or hostname = gpu03"))));
        assert!(ev.iter().any(|e| matches!(e,
            SourceEvent::Notice { text } if text.contains("not in the inventory, left out: gpu99"))));
        assert!(ev.iter().any(|e| matches!(e,
            SourceEvent::Notice { text } if text.contains("DCGM_FI_PROF_TENSOR_UTIL_RATIO")
                && text.contains("profiling"))));

        // The same samples again: no frame, no repeated hello, link or notice. The Xid gauge
        // still says 79: not a new event when the samples advance.
        let again = w.step(&values, &times, None, 1_007_000);
        assert!(again.is_empty(), "{again:?}");
        let later = vec![time("gpu01", 1005.0)];
        let ev = w.step(&values, &later, None, 1_007_000);
        let f1 = frame(&ev, "gpu01").expect("advanced");
        assert!(f1.gpus[1].xid_events.is_empty());
        assert_eq!(ev.len(), 1, "gpu02 has no newer time: {ev:?}");
        // A new code after the first look is an event, at the sample's time.
        let mut changed = values.clone();
        changed[2] = value("DCGM_FI_DEV_XID_ERRORS", "gpu01", "1", 48.0);
        let ev = w.step(&changed, &[time("gpu01", 1010.0)], None, 1_012_000);
        let f1 = frame(&ev, "gpu01").expect("advanced");
        assert_eq!(
            f1.gpus[1].xid_events,
            vec![XidEvent {
                code: 48,
                at_ms: 1_010_000
            }]
        );
    }

    #[test]
    fn history_comes_after_the_hello_in_time_order_and_before_the_live_frame() {
        let mut w = PromNodes::new(
            vec![node("a"), node("b")],
            &spec(),
            Period::from_millis(5_000).expect("period"),
        );
        assert_eq!(w.history_steps(), crate::store::HISTORY_SLOTS);
        let power = |host: &str, points: Vec<(UnixMillis, f64)>| Series {
            labels: crate::sources::promql::Labels::from_pairs([
                ("__name__", "DCGM_FI_DEV_POWER_USAGE"),
                ("Hostname", host),
                ("gpu", "0"),
            ]),
            points,
        };
        w.take_history(&[
            power("a", vec![(990_000, 100.0), (995_000, 200.0)]),
            // b's back-fill reaches past its live sample: that older live frame is not sent.
            power("b", vec![(1_001_000, 300.0)]),
        ]);
        let values = vec![
            value("DCGM_FI_DEV_POWER_USAGE", "a", "0", 400.0),
            value("DCGM_FI_DEV_POWER_USAGE", "b", "0", 500.0),
        ];
        let times = vec![time("a", 1000.0), time("b", 1000.0)];
        let ev = w.step(&values, &times, None, 1_002_000);
        let order: Vec<(String, UnixMillis, Option<f32>)> = ev
            .iter()
            .filter_map(|e| match e {
                SourceEvent::Hello(h) => Some((format!("hello {}", h.node), 0, None)),
                SourceEvent::Frame(f) => Some((f.node.clone(), f.at_ms, f.gpus[0].power_avg_watts)),
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            [
                ("hello a".to_string(), 0, None),
                ("a".to_string(), 990_000, Some(100.0)),
                ("a".to_string(), 995_000, Some(200.0)),
                ("a".to_string(), 1_000_000, Some(400.0)),
                ("hello b".to_string(), 0, None),
                ("b".to_string(), 1_001_000, Some(300.0)),
            ]
        );
        // Sent once.
        let later = vec![time("a", 1005.0), time("b", 1005.0)];
        let ev = w.step(&values, &later, None, 1_007_000);
        assert_eq!(
            ev.iter()
                .filter(|e| matches!(e, SourceEvent::Frame(_)))
                .count(),
            2
        );
        let big: Vec<NodeSpec> = (0..1024).map(|i| node(&format!("n{i}"))).collect();
        let w = PromNodes::new(big, &spec(), Period::from_millis(5_000).expect("period"));
        assert_eq!(w.history_steps(), 2_000_000 / (1024 * 2 * 6));
    }

    #[test]
    fn a_failed_server_is_said_once_per_reason() {
        let mut w = PromNodes::new(
            vec![node("a"), node("b")],
            &spec(),
            Period::from_millis(1_000).expect("period"),
        );
        assert_eq!(
            w.failed("Prometheus http://prom:9090: connection refused")
                .len(),
            2
        );
        assert!(
            w.failed("Prometheus http://prom:9090: connection refused")
                .is_empty()
        );
        assert_eq!(w.failed("other").len(), 2);
    }

    #[test]
    fn old_samples_everywhere_say_which_interval_to_set() {
        let mut w = PromNodes::new(
            vec![node("a")],
            &spec(),
            Period::from_millis(1_000).expect("period"),
        );
        let values = vec![value("DCGM_FI_DEV_GPU_TEMP", "a", "0", 40.0)];
        let mut said = Vec::new();
        for k in 0..4u64 {
            let t = vec![time("a", 100.0 + 15.0 * k as f64)];
            said.extend(w.step(&values, &t, None, 115_000 + 15_000 * k));
        }
        let notes: Vec<_> = said
            .iter()
            .filter(|e| matches!(e, SourceEvent::Notice { text } if text.contains("interval")))
            .collect();
        assert_eq!(notes.len(), 1, "{said:?}");
    }
}
