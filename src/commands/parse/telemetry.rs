//! Telemetry texts through the console's readers: nvidia-smi CSV, `nvidia-smi topo -m`,
//! dcgm-exporter and MinIO scrapes.

use std::collections::BTreeMap;

use super::read::{FindingRow, Reading, UNREAD_KEPT, node_of, triage_findings};
use super::*;

pub(super) fn read_smi(r: &mut Reading, text: &str, opts: &Options) {
    use crate::model::SourceEvent;
    use crate::wire::WireMessage;
    let node = node_of(&r.path);
    let fields: Vec<String> = opts.smi_fields.clone().unwrap_or_default();
    let field_refs: Vec<&str> = fields.iter().map(String::as_str).collect();
    // However many GPUs the capture holds: a loop ends where the index wraps, or at the end.
    let mut d = crate::sources::smi::SmiDecoder::new(&node, &field_refs, 1024);
    // nvidia-smi rows carry no time of their own: a second apart, as `-l 1` prints them.
    let period = crate::model::units::Period::SECOND;
    let period_ms = period.millis();
    let mut store = crate::store::ClusterStore::with_period(period);
    let mut triage = crate::triage::Triage::new();
    let mut hello = None;
    let mut frames = 0u64;
    let mut last = None;
    let mut errors = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let end_ms = 1_000 + period_ms * lines.len() as u64;
    for (i, line) in lines
        .iter()
        .map(Some)
        .chain(std::iter::once(None))
        .enumerate()
    {
        let at_ms = 1_000 + period_ms * i as u64;
        let got = match line {
            Some(line) => d.push_line(line, at_ms),
            None => Ok(d.finish(end_ms)),
        };
        match got {
            Ok(msgs) => {
                for m in msgs {
                    match m {
                        WireMessage::Hello(h) => {
                            hello = Some(h.clone());
                            store.ingest(SourceEvent::Hello(h));
                        }
                        WireMessage::Frame(f) => {
                            frames += 1;
                            last = Some(f.clone());
                            store.ingest(SourceEvent::Frame(f));
                            store.ingest(SourceEvent::Clock { at_ms });
                        }
                        WireMessage::Error(e) => errors.push(e),
                    }
                }
            }
            Err(g) => {
                r.unread_lines += 1;
                if r.unread.len() < UNREAD_KEPT {
                    r.unread.push(format!("line {}: {}", g.line_no, g.reason));
                }
            }
        }
    }
    if fields.is_empty() && hello.is_none() && r.unread_lines > 0 {
        r.notes
            .push("no header line names the columns: give the query's fields with --fields".into());
    }
    r.notes.push(
        "nvidia-smi rows carry no time: each line is taken a second after the one before".into(),
    );
    // Triage judges readings: a query of names and versions only has none to judge.
    let readings = last.as_ref().is_some_and(|f: &crate::model::NodeFrame| {
        f.gpus.iter().any(|g| {
            g.power_avg_watts.is_some() || g.utilization_pct.is_some() || g.temperature_c.is_some()
        })
    });
    if readings {
        r.findings = triage_findings(&store, &mut triage);
    } else {
        r.notes.push(
            "no power, utilization or temperature column: nothing for triage to judge".into(),
        );
    }
    r.problems = errors;
    r.telemetry = Some(serde_json::json!({
        "driver": hello.as_ref().and_then(|h| h.driver.clone()),
        "gpus": hello.as_ref().map(|h| h.gpus.clone()).unwrap_or_default(),
        "frames": frames,
        "last_frame": last,
    }));
}

pub(super) fn read_topo(r: &mut Reading, text: &str) {
    match crate::agent::topology::parse_topo_matrix(text) {
        Some(t) => {
            r.telemetry = serde_json::to_value(&t).ok();
            r.notes.push(format!(
                "{} GPUs, {} NICs: the agent sends this in its hello; triage names the GPU whose nearest NIC is down",
                t.gpus.len(),
                t.nics.len()
            ));
        }
        None => r.problems.push("no GPU matrix in the text".into()),
    }
}

pub(super) fn read_dcgm(r: &mut Reading, text: &str) {
    let g = crate::sources::dcgm_series::gather_text(text, &["Hostname", "hostname"]);
    let nodes: BTreeMap<String, serde_json::Value> = g
        .nodes
        .iter()
        .map(|(host, series)| {
            let gpus: Vec<serde_json::Value> = series
                .gpus
                .values()
                .map(|reading| serde_json::to_value(&reading.sample).unwrap_or_default())
                .collect();
            (
                if host.is_empty() {
                    "(no host label)".to_string()
                } else {
                    host.clone()
                },
                serde_json::json!({ "gpus": gpus }),
            )
        })
        .collect();
    let absent: BTreeMap<String, Vec<&str>> = g
        .absent()
        .into_iter()
        .map(|(why, names)| (why.reason().to_string(), names))
        .collect();
    r.telemetry = Some(serde_json::json!({
        "nodes": nodes,
        "mig_series_left_out": g.mig_series,
        "unusable_series": g.unusable,
        "absent": absent,
    }));
}

/// MinIO's write quorum from the text, whatever MinIO printed it as: its metrics, its health
/// check's answer, `mc admin info`, its log.
fn read_quorum(r: &mut Reading, text: &str, exp: &crate::wire::prometheus::Exposition) {
    use crate::probes::s3::quorum;
    // A scrape that shows sets but not their quorum judges nothing: said, not a finding.
    let (mut found, unjudged): (Vec<_>, Vec<_>) = quorum::from_metrics(exp)
        .into_iter()
        .partition(|f| f.critical);
    r.notes.extend(unjudged.into_iter().map(|f| f.why));
    match quorum::from_health_response(text) {
        Some(f) if f.why.is_empty() => r.notes.push(
            "MinIO's cluster health check answered 200: every erasure set holds its write quorum"
                .into(),
        ),
        Some(f) => found.push(f),
        None => {}
    }
    found.extend(quorum::from_text(text));
    for f in found {
        r.findings.push(FindingRow {
            severity: if f.critical { "crit" } else { "warn" },
            rule: "write-quorum",
            subject: "AIStor".into(),
            why: f.why,
        });
    }
}

pub(super) fn read_minio(r: &mut Reading, text: &str) {
    let exp = crate::wire::prometheus::parse(text);
    read_quorum(r, text, &exp);
    let snap = crate::probes::s3::server_metrics::snapshot(&exp);
    let q =
        |p: f64| crate::wire::prometheus::quantile(&snap.get_ttfb_buckets, p).map(|s| s * 1000.0);
    r.telemetry = Some(serde_json::json!({
        "samples": snap.samples,
        "get_requests": snap.get_requests,
        "errors_4xx": snap.errors_4xx,
        "errors_5xx": snap.errors_5xx,
        "get_ttfb_p50_ms": q(0.5),
        "get_ttfb_p99_ms": q(0.99),
        "drives_online": snap.drives_online,
        "drives_offline": snap.drives_offline,
    }));
    if let Some(off) = snap.drives_offline.filter(|d| *d > 0.0) {
        r.findings.push(FindingRow {
            severity: "warn",
            rule: "drives-offline",
            subject: "AIStor".into(),
            why: format!("{off} drive(s) offline in the scrape"),
        });
    }
    if !snap.is_minio() && r.findings.is_empty() && r.notes.is_empty() {
        r.notes
            .push("no MinIO figure the storage probe reads (GetObject rate, TTFB, drives)".into());
    }
}
