//! The `spec` gate: a figure against the spec table's floor for the model T0 found on the
//! subject's node (`model::spec`), with the floor's source in its words. A job across nodes
//! judged per RDMA port divides its busbw by the ports each node's ranks use (docs/spec.md).

use super::*;
use crate::model::spec::{NodeHardware, figure_unit, unit_factor};

/// What the gate reads of one `spec` entry of the plan.
pub(crate) struct SpecGate<'a> {
    pub figure: &'a str,
    pub floor: &'a str,
    pub pct: f64,
    pub per_nic: bool,
    pub(super) miss: Level,
}

/// The floor one subject is judged against, or why it is not.
enum Floor {
    /// Model, value (in the floor's unit), its source, and (per RDMA port) the ports divided by.
    Known {
        model: String,
        value: f64,
        source: String,
        ports: Option<(f64, &'static str)>,
        /// Per RDMA port: the NIC model's line rate, Gbit/s (what no port can carry twice of).
        line_gbits: Option<f64>,
    },
    /// A model the table does not know, nodes of different models, or a job that used fewer
    /// RDMA ports than its nodes have: warns, says which.
    Unknown(String),
    /// Not judged, and why (no T0 result, no such figure for the model).
    NotJudged(String),
}

/// The node a subject belongs to: `gpu01/gpu3`, `gpu01 0->1 …`, `gpu01/mlx5_0 write`.
fn node_of(subject: &str) -> &str {
    subject
        .split(['/', ' '])
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or(subject)
}

/// The nodes a subject's figure came from: a job across nodes (judged per RDMA port) spans
/// every node the phase ran over (`mpirun`: the inventory); any other subject is its node's.
fn nodes_of<'a>(subject: &'a str, observed: &'a Observed, per_nic: bool) -> Vec<&'a str> {
    if per_nic {
        observed.node_gpus.keys().map(String::as_str).collect()
    } else {
        vec![node_of(subject)]
    }
}

/// The ranks of the run a busbw figure names: as nccl-tests computed its busbw (the ratio of
/// busbw to algbw is its bus factor, 2(n-1)/n for all_reduce: a pasted log's device list may
/// be cut, its rows are not), else as its device list counted them; and which it was.
fn ranks_of(figure: &str, metrics: &[PhaseMetric]) -> Option<(u32, &'static str)> {
    let collective = figure.strip_prefix("busbw_")?;
    let mut listed = 0u32;
    let mut best: Option<(f64, f64)> = None;
    for m in metrics {
        if let PhaseMetric::BusBw {
            collective: c,
            ranks,
            busbw_gb_per_s,
            algbw_gb_per_s,
            ..
        } = m
            && c == collective
        {
            listed = listed.max(*ranks);
            // The fastest row: its two figures carry the most digits.
            if best.is_none_or(|(a, _)| *algbw_gb_per_s > a) {
                best = Some((*algbw_gb_per_s, *busbw_gb_per_s));
            }
        }
    }
    // The device list where the rows agree with it (at large rank counts the rows' two
    // decimals fit several counts near the true one); the rows' own count where they do not
    // (a pasted list cut short).
    if listed > 0
        && best.is_none_or(|(algbw, busbw)| fits(collective, listed, algbw, busbw) != Some(false))
    {
        return Some((listed, "from the device list"));
    }
    best.and_then(|(algbw, busbw)| ranks_from_factor(collective, algbw, busbw))
        .map(|n| (n, "from busbw / algbw"))
        .or((listed > 0).then_some((listed, "from the device list")))
}

/// Whether `ranks` turns `algbw` into `busbw` as nccl-tests printed them (`None`: the
/// collective's factor does not name a rank count).
fn fits(collective: &str, ranks: u32, algbw: f64, busbw: f64) -> Option<bool> {
    let factor = crate::parsers::nccl_tests::bus_factor(collective, ranks)?;
    Some((algbw * factor - busbw).abs() <= 0.005 * factor + 0.005 + 1e-9)
}

/// The rank count whose bus factor turns `algbw` into `busbw` as nccl-tests printed them (two
/// decimals each), for the collectives whose factor names it.
fn ranks_from_factor(collective: &str, algbw: f64, busbw: f64) -> Option<u32> {
    if !(algbw.is_finite() && busbw.is_finite()) || algbw < 1.0 {
        return None;
    }
    let r = busbw / algbw;
    let n = match collective {
        "all_reduce" if r > 1.0 && r < 2.0 => 2.0 / (2.0 - r),
        "all_gather" | "reduce_scatter" | "alltoall" if r > 0.5 && r < 1.0 => 1.0 / (1.0 - r),
        _ => return None,
    };
    let n = n.round();
    if !(2.0..=1_000_000.0).contains(&n) {
        return None;
    }
    // Both figures were rounded to 0.01: the product may be off by the factor's share of it.
    fits(collective, n as u32, algbw, busbw)?.then_some(n as u32)
}

/// The entry (GPU or NIC) a floor figure belongs to on one node, as (model, the figure).
fn entry_floor(hw: &NodeHardware, floor: &str) -> Result<(String, Option<(f64, String)>), String> {
    let is_gpu = crate::model::spec::GPU_FIGURES
        .iter()
        .any(|(n, _, _)| *n == floor);
    if is_gpu {
        let g = hw.gpu.as_ref().map_err(Clone::clone)?;
        Ok((
            g.model.clone(),
            g.figure(floor).map(|f| (f.value, f.source.clone())),
        ))
    } else {
        let n = hw.nic.as_ref().map_err(Clone::clone)?;
        Ok((
            n.model.clone(),
            n.figure(floor).map(|f| (f.value, f.source.clone())),
        ))
    }
}

/// The floor for `subject`: every node it spans must be known and of one model.
fn floor_for(
    gate: &SpecGate<'_>,
    subject: &str,
    observed: &Observed,
    metrics: &[PhaseMetric],
) -> Floor {
    let nodes = nodes_of(subject, observed, gate.per_nic);
    let unread: Vec<&str> = nodes
        .iter()
        .copied()
        .filter(|n| !observed.hardware.contains_key(*n))
        .collect();
    if !unread.is_empty() {
        return Floor::NotJudged(format!(
            "{} not known (no T0 result in this run names it, nor its telemetry): {} not judged",
            if unread.len() == 1 {
                format!("{}'s model", unread[0])
            } else {
                format!("the model of {} nodes, first {}", unread.len(), unread[0])
            },
            gate.floor
        ));
    }
    let nic_floor = !crate::model::spec::GPU_FIGURES
        .iter()
        .any(|(f, _, _)| *f == gate.floor);
    let unasked: Vec<&str> = nodes
        .iter()
        .copied()
        .filter(|n| nic_floor && observed.hardware.get(*n).is_some_and(|h| !h.nics_read))
        .collect();
    if let Some(first) = unasked.first() {
        return Floor::NotJudged(format!(
            "{first}'s RDMA ports not read (T0 lists them; its telemetry names only its GPUs): {} not judged",
            gate.floor
        ));
    }
    let mut model: Option<(String, Option<(f64, String)>)> = None;
    for n in &nodes {
        let Some(hw) = observed.hardware.get(*n) else {
            continue;
        };
        match entry_floor(hw, gate.floor) {
            Err(why) => {
                return Floor::Unknown(format!(
                    "{n}: {why}: the spec's {} does not judge it, the plan's own floors do",
                    gate.floor
                ));
            }
            Ok(found) => match &model {
                Some((m, _)) if *m != found.0 => {
                    return Floor::Unknown(format!(
                        "{subject} spans nodes of {m} and of {} ({n}): no one spec floor judges it",
                        found.0
                    ));
                }
                Some(_) => {}
                None => model = Some(found),
            },
        }
    }
    let Some((model, figure)) = model else {
        return Floor::NotJudged(format!("{subject}: no node: {} not judged", gate.floor));
    };
    let Some((value, source)) = figure else {
        return Floor::NotJudged(format!(
            "the spec has no {} for {model} (no source gives one): not judged by the spec, the plan's own floors judge it",
            gate.floor
        ));
    };
    let ports = if gate.per_nic {
        match ports_used(subject, &nodes, observed, metrics, gate.figure) {
            Ok(p) => Some(p),
            Err(Unjudged::Quietly(why)) => return Floor::NotJudged(why),
            Err(Unjudged::Warn(why)) => return Floor::Unknown(why),
        }
    } else {
        None
    };
    // The line rate of the nodes' NIC model, for the reading no RDMA port can give.
    let line_gbits = gate
        .per_nic
        .then(|| {
            nodes
                .iter()
                .filter_map(|n| observed.hardware.get(*n))
                .filter_map(|h| h.nic.as_ref().ok())
                .filter_map(|n| n.figure("line_rate_gbits"))
                .map(|f| f.value)
                .reduce(f64::max)
        })
        .flatten();
    Floor::Known {
        model,
        value,
        source,
        ports,
        line_gbits,
    }
}

/// The RDMA ports a job's busbw crossed per node: the most compute ports a node of the job
/// has (a node missing a rail is then the one that reads slow), times the share of each
/// node's GPUs that were ranks (one rank per node of eight uses one port of eight; where a
/// GPU has several ports, it uses them all).
fn ports_used(
    subject: &str,
    nodes: &[&str],
    observed: &Observed,
    metrics: &[PhaseMetric],
    figure: &str,
) -> Result<(f64, &'static str), Unjudged> {
    if nodes.len() < 2 {
        return Err(Unjudged::Quietly(format!(
            "{subject}: per RDMA port judges a job across nodes, and this one ran on one: not judged"
        )));
    }
    // The devices NCCL itself said it uses (its `NET/IB : Using` list, at INFO) where the
    // output has them: a node's storage or front-end ports of the same model are not its
    // rails. Else the compute ports T0 read.
    let listed = metrics
        .iter()
        .filter_map(|m| match m {
            PhaseMetric::Figure { name, value, .. }
                if name == crate::parsers::NET_PORTS_FIGURE
                    && value.is_finite()
                    && *value >= 1.0 =>
            {
                Some(*value as u32)
            }
            _ => None,
        })
        .max();
    let read_by_t0 = nodes
        .iter()
        .filter_map(|n| observed.hardware.get(*n))
        .all(|h| h.from == "T0");
    let whose = match (listed, read_by_t0) {
        (Some(_), _) => "NCCL's NET/IB list",
        (None, true) => "T0's",
        // `burnin parse --nics`: what the engineer said the nodes have.
        (None, false) => "as given",
    };
    // The most any node of the job has: a node missing a rail is then the one that reads slow.
    let most = |of: fn(&NodeHardware) -> u32| {
        nodes
            .iter()
            .filter_map(|n| observed.hardware.get(*n))
            .map(of)
            .max()
            .unwrap_or(0)
    };
    let read = most(|h| h.nic_ports);
    // NCCL leaves out a port that is down, and any NCCL_IB_HCA excludes: a job on one rail of
    // eight at 45 GB/s reads 90 % of line over the one it used. Fewer ports than the nodes'
    // compute ports is no per-port reading of the fabric (a storage port of the same model
    // left out on purpose reads so too): said, and left to the plan's own floors.
    if let Some(used) = listed
        && used < read
    {
        return Err(Unjudged::Warn(format!(
            "{subject}: NCCL used {used} of the {read} RDMA ports {} a node (a port down, or left out by NCCL_IB_HCA?), so no reading per port",
            if read_by_t0 {
                "T0 found on"
            } else {
                "given for"
            }
        )));
    }
    let ports = listed.unwrap_or(read);
    let node_gpus = most(|h| h.gpus);
    let Some((ranks, _)) = ranks_of(figure, metrics).filter(|r| r.0 > 0) else {
        return Err(Unjudged::Quietly(format!(
            "{figure}: the output names no rank count: the ports it crossed are not known, not judged"
        )));
    };
    if ports == 0 || node_gpus == 0 {
        return Err(Unjudged::Quietly(format!(
            "the nodes' {} not known{}: not judged",
            if ports == 0 {
                "RDMA ports are"
            } else {
                "GPU count is"
            },
            if read_by_t0 {
                ""
            } else {
                " (burnin parse: --nics, --gpus)"
            }
        )));
    }
    let per_node = f64::from(ranks) / nodes.len() as f64;
    let share = (per_node / f64::from(node_gpus)).min(1.0);
    Ok(((f64::from(ports) * share).max(1.0), whose))
}

/// Why the ports a job crossed are not known: quietly (nothing to read them by), or with a
/// warning (what was read says the job did not use the nodes' rails).
enum Unjudged {
    Quietly(String),
    Warn(String),
}

/// The reasons subjects were not judged, each once with how many it was (many subjects of
/// one node or model share one).
fn say_unjudged(unjudged: Vec<String>, partly: bool, said: &mut Said) {
    if unjudged.is_empty() {
        return;
    }
    // Many subjects of one node or model share one reason: said once, with the count.
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for why in unjudged {
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    let (first, n) = &reasons[0];
    let more = reasons.len() - 1;
    let words = format!(
        "{first}{}{}",
        if *n > 1 {
            format!(" ({n} subjects)")
        } else {
            String::new()
        },
        if more > 0 {
            format!(" (and {more} other reason(s))")
        } else {
            String::new()
        }
    );
    // Where other subjects were judged, the gate is not met on their evidence alone: the
    // subjects without a floor (a node no T0 named, say) warn, never pass unseen.
    if partly {
        said.findings
            .push((Level::Warn, format!("{words} — not judged there")));
    } else {
        said.summary.push(words);
    }
}

/// A subject's reading in words: as read, per RDMA port (how many, from where), or converted
/// to the floor's unit.
fn reading(
    value: f64,
    unit: &str,
    ports: Option<(f64, &'static str)>,
    (factor, converted): (f64, f64),
    floor_unit: &str,
) -> String {
    match ports {
        Some((p, whose)) => format!(
            "{} {unit} over {} RDMA ports a node ({whose}) = {} {floor_unit} a port",
            fmt_value(value),
            if p.fract() == 0.0 {
                format!("{p:.0}")
            } else {
                format!("{p:.2}")
            },
            fmt_value(converted)
        ),
        None if factor != 1.0 => {
            format!(
                "{} {unit} = {} {floor_unit}",
                fmt_value(value),
                fmt_value(converted)
            )
        }
        None => format!("{} {unit}", fmt_value(value)),
    }
}

/// How one subject came out against its model's floor.
enum Assessed {
    /// Under the floor (`pct` of it), in words.
    Below(String),
    /// At or over it: its share of the floor, %, in words.
    Met(f64, String),
    /// A model the table does not know (warns).
    Unknown(String),
    /// Not judged by the spec, and why.
    NotJudged(String),
}

impl<'a> SpecGate<'a> {
    /// The first `spec` gate on `figure` among `gates`: the one a `min` gate with
    /// `unless = "spec"` yields to.
    pub(crate) fn on_figure(
        gates: impl IntoIterator<Item = &'a Gate>,
        figure: &str,
    ) -> Option<SpecGate<'a>> {
        gates
            .into_iter()
            .filter_map(SpecGate::from_gate)
            .find(|g| g.figure == figure)
    }

    /// Whether a miss fails (not only warns).
    pub(crate) fn fails(&self) -> bool {
        self.miss == Level::Fail
    }

    /// What the gate reads of a plan's `spec` gate; `None` for any other gate.
    pub(super) fn from_gate(gate: &'a Gate) -> Option<SpecGate<'a>> {
        match gate {
            Gate::Spec {
                figure,
                floor,
                pct,
                per,
                miss,
            } => Some(SpecGate {
                figure,
                floor,
                pct: *pct,
                per_nic: per.as_deref() == Some("nic"),
                miss: if miss.as_deref() == Some("warn") {
                    Level::Warn
                } else {
                    Level::Fail
                },
            }),
            _ => None,
        }
    }

    /// One subject against its model's floor.
    fn assess(&self, s: &Sample, observed: &Observed, metrics: &[PhaseMetric]) -> Assessed {
        let floor_unit = figure_unit(self.floor).unwrap_or("");
        let unit = crate::plan::unit_of(self.figure);
        let factor = unit_factor(unit, floor_unit).unwrap_or(1.0);
        let (model, value, source, ports, line_gbits) =
            match floor_for(self, &s.subject, observed, metrics) {
                Floor::Unknown(why) => return Assessed::Unknown(why),
                Floor::NotJudged(why) => return Assessed::NotJudged(why),
                Floor::Known {
                    model,
                    value,
                    source,
                    ports,
                    line_gbits,
                } => (model, value, source, ports, line_gbits),
            };
        let per = s.value / ports.map_or(1.0, |p| p.0);
        let converted = per * factor;
        // A ring carries at most line rate a port and NCCL's tree on 2 nodes under twice it:
        // past twice the line rate, most of the job did not cross the RDMA ports (an NVLink
        // domain across nodes, NVL72): no reading of them, never a pass.
        let gbits = unit_factor(unit, "Gbit/s").map(|f| per * f);
        if let (Some(line), Some(g)) = (line_gbits, gbits)
            && g > 2.0 * line
        {
            return Assessed::NotJudged(format!(
                "{} {} {unit} is {} Gbit/s a port, more than twice the {} Gbit/s line rate: not what RDMA ports carried (an NVLink domain across nodes?), not judged",
                s.subject,
                fmt_value(s.value),
                fmt_value(g),
                fmt_value(line)
            ));
        }
        let share = converted / value * 100.0;
        let how = reading(s.value, unit, ports, (factor, converted), floor_unit);
        let words = format!(
            "{} {how}, {share:.0} % of {model}'s {} {} {floor_unit} ({source})",
            s.subject,
            self.floor,
            fmt_value(value)
        );
        if converted < value * self.pct / 100.0 {
            Assessed::Below(words)
        } else {
            Assessed::Met(share, words)
        }
    }
}

/// The subjects of `figure` the phase's `spec` gate on it judges (met or missed): what a
/// `min` gate with `unless = "spec"` leaves to it.
pub(super) fn judged_subjects(
    figure: &str,
    metrics: &[PhaseMetric],
    j: &Judging<'_>,
) -> BTreeSet<String> {
    let gate = SpecGate::on_figure(&j.spec.gates, figure);
    let (Some(gate), Some(samples)) = (gate, j.figs.get(figure)) else {
        return BTreeSet::new();
    };
    samples
        .iter()
        .filter(|s| {
            matches!(
                gate.assess(s, j.observed, metrics),
                Assessed::Below(_) | Assessed::Met(..)
            )
        })
        .map(|s| s.subject.clone())
        .collect()
}

/// `spec`: every subject at least `pct` % of its model's floor.
pub(super) fn judge_spec(
    gate: &SpecGate<'_>,
    metrics: &[PhaseMetric],
    j: &Judging<'_>,
    said: &mut Said,
) {
    let Some(samples) = j.figs.get(gate.figure) else {
        said.findings.push(j.missing(gate.figure));
        return;
    };
    let (mut below, mut met, mut unknown, mut unjudged) =
        (Vec::new(), 0usize, Vec::new(), Vec::new());
    let mut worst: Option<(f64, String)> = None;
    for s in samples {
        match gate.assess(s, j.observed, metrics) {
            Assessed::Unknown(why) => unknown.push(why),
            Assessed::NotJudged(why) => unjudged.push(why),
            Assessed::Below(words) => below.push(words),
            Assessed::Met(share, words) => {
                met += 1;
                if worst.as_ref().is_none_or(|(w, _)| share < *w) {
                    worst = Some((share, words));
                }
            }
        }
    }
    let pct = if gate.pct == 100.0 {
        String::new()
    } else {
        format!("{} % of ", gate.pct)
    };
    if let Some(first) = below.first() {
        said.findings.push((
            gate.miss,
            format!(
                "{} below {pct}the spec's {} on {} subject(s): {first}",
                gate.figure,
                gate.floor,
                below.len()
            ),
        ));
    }
    if let Some(first) = unknown.first() {
        said.findings.push((
            Level::Warn,
            format!(
                "{first}{}: not judged",
                if unknown.len() > 1 {
                    format!(" (and {} more)", unknown.len() - 1)
                } else {
                    String::new()
                }
            ),
        ));
    }
    let judged = met > 0 || !below.is_empty();
    say_unjudged(unjudged, judged, said);
    if below.is_empty()
        && let Some((_, words)) = worst
    {
        said.summary.push(format!(
            "{} at {pct}the spec's {} on {met} subject(s), lowest {words}",
            gate.figure, gate.floor
        ));
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
