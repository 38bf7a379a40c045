//! Whether a MinIO deployment still serves: each erasure set needs its write quorum of drives
//! online. MinIO's rule (minio/minio cmd/erasure.go `defaultWQuorum`): write quorum = data
//! drives (set size − parity), plus one when data equals parity; `/minio/health/cluster`
//! answers 503 with `X-Minio-Write-Quorum` when a set is below it (cmd/healthcheck-handler.go).
//! Below it the store is broken either way: where data equals parity (4 drives, EC:2) writes
//! fail ("Storage resources are insufficient for the write operation"); otherwise MinIO writes
//! new objects at a higher parity (cmd/erasure-object.go) but the objects stored at the set's
//! parity need all its data drives to be read, and fewer are online. Drives offline within a
//! set's parity are a degraded store: a warning.
//!
//! Read from what MinIO prints: its cluster metrics (v2 `minio_cluster_health_erasure_set_*`,
//! v3 `minio_cluster_erasure_set_*`, per pool and set), the health check's HTTP answer,
//! `mc admin info`'s summary, and the server's own log lines. Only a set's own figures, the
//! health check or MinIO's own words make it critical: a total of drives offline over several
//! sets does not say which set lost them, and is a warning that says so.

use std::collections::BTreeMap;

use crate::wire::prometheus::Exposition;

/// What one reading says of the store's write quorum.
#[derive(Debug, Clone, PartialEq)]
pub struct QuorumFinding {
    /// Writes fail (a set below its write quorum), rather than a degraded store.
    pub critical: bool,
    /// The evidence in words, with the numbers.
    pub why: String,
}

/// Erasure sets a scrape is read for (a deployment of 4096 sets is not one), and the sets
/// under quorum named one by one.
const MAX_SETS: usize = 4096;
const MAX_SETS_SAID: usize = 16;

/// What a set under its write quorum means, in the words every finding ends with.
const BELOW_QUORUM: &str = "MinIO counts the set unhealthy, and a set this short either \
     refuses writes or cannot read the objects stored at its parity";

fn crit(why: String) -> QuorumFinding {
    QuorumFinding {
        critical: true,
        why,
    }
}

fn warn(why: String) -> QuorumFinding {
    QuorumFinding {
        critical: false,
        why,
    }
}

/// MinIO's write quorum of a set of `drives` with `parity` parity drives.
pub fn write_quorum(drives: u32, parity: u32) -> Option<u32> {
    let data = drives.checked_sub(parity).filter(|d| *d > 0)?;
    Some(if data == parity { data + 1 } else { data })
}

/// Per erasure set, its drives online against its write quorum, from MinIO's cluster metrics.
pub fn from_metrics(exp: &Exposition) -> Vec<QuorumFinding> {
    // (pool, set) -> (online, write quorum)
    let mut sets: BTreeMap<(String, String), (Option<f64>, Option<f64>)> = BTreeMap::new();
    let mut unlabelled = 0usize;
    let names = [
        (
            "minio_cluster_health_erasure_set_online_drives",
            "minio_cluster_health_erasure_set_write_quorum",
            ("pool", "set"),
        ),
        (
            "minio_cluster_erasure_set_online_drives_count",
            "minio_cluster_erasure_set_write_quorum",
            ("pool_id", "set_id"),
        ),
    ];
    for (online, quorum, (pool, set)) in names {
        for (name, is_online) in [(online, true), (quorum, false)] {
            // A drive count or quorum is a whole number of drives: a negative or fractional
            // reading is none, and never evidence of a set under quorum.
            let whole = |v: f64| v.is_finite() && v >= 0.0 && v.fract() == 0.0;
            for s in exp.metric(name).filter(|s| whole(s.value)) {
                // A sample that names no pool and set cannot be matched with its quorum.
                let (Some(p), Some(st)) = (s.label(pool), s.label(set)) else {
                    unlabelled += 1;
                    continue;
                };
                if sets.len() >= MAX_SETS && !sets.contains_key(&(p.to_string(), st.to_string())) {
                    continue;
                }
                let clean = |v: &str| crate::model::fit(&crate::model::strip_controls(v), 32);
                let key = (clean(p), clean(st));
                // Every server reports every set: the same figures, kept once (the lowest
                // online count is the one that decides).
                let e = sets.entry(key).or_default();
                if is_online {
                    e.0 = Some(e.0.map_or(s.value, |v: f64| v.min(s.value)));
                } else {
                    e.1 = Some(e.1.map_or(s.value, |v: f64| v.max(s.value)));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut unjudged = unlabelled;
    for ((pool, set), figures) in &sets {
        match figures {
            // A quorum of no drive is no reading of one.
            (Some(_), Some(quorum)) if *quorum < 1.0 => unjudged += 1,
            (Some(online), Some(quorum)) if online < quorum && out.len() < MAX_SETS_SAID => out
                .push(crit(format!(
                    "erasure set {set} of pool {pool}: {online} drive(s) online, under its write \
                 quorum of {quorum}: {BELOW_QUORUM}"
                ))),
            (Some(_), Some(_)) => {}
            _ => unjudged += 1,
        }
    }
    let under = sets
        .values()
        .filter(|(o, q)| matches!((o, q), (Some(o), Some(q)) if o < q && *q >= 1.0))
        .count();
    if under > out.len() {
        out.push(crit(format!(
            "and {} more erasure set(s) under their write quorum",
            under - out.len()
        )));
    }
    if unjudged > 0 && out.is_empty() {
        out.push(warn(format!(
            "{unjudged} erasure set(s) (or samples without their pool and set) report their \
             online drives but not their write quorum (a filtered scrape): whether writes hold \
             is not judged"
        )));
    }
    out
}

/// MinIO's `/minio/health/cluster` answer, as `curl -i` prints it: 200 holds quorum, 503 does
/// not. `None` when the text is no such answer.
pub fn from_health_response(text: &str) -> Option<QuorumFinding> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let status_line = lines.find(|l| l.starts_with("HTTP/"))?;
    let code: u16 = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let quorum = text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("x-minio-write-quorum")
            .then(|| v.trim().parse::<u32>().ok())
            .flatten()
    })?;
    match code {
        200 => Some(QuorumFinding {
            critical: false,
            why: String::new(),
        }),
        503 => Some(crit(format!(
            "MinIO's cluster health check answered 503: an erasure set is under its write \
             quorum of {quorum} drives: {BELOW_QUORUM}"
        ))),
        _ => None,
    }
}

/// What `mc admin info` and MinIO's server log say, line by line.
pub fn from_text(text: &str) -> Vec<QuorumFinding> {
    let mut out = Vec::new();
    let mut stripe: Option<u32> = None;
    let mut sets: Option<u32> = None;
    // Each server's `Drives: 4/4 OK` (online/total), for a summary cut off the paste.
    let mut servers: (u32, u32, u32) = (0, 0, 0);
    let mut summarised = false;
    for line in text.lines().take(100_000) {
        let l = line.trim();
        if let Some((ok, all)) = server_drives(l) {
            servers = (
                servers.0 + 1,
                servers.1.saturating_add(ok),
                servers.2.saturating_add(all),
            );
            continue;
        }
        if let Some(f) = server_log(l) {
            if out.len() < 64 {
                out.push(f);
            }
            continue;
        }
        if let Some((s, n)) = pool_row(l) {
            stripe = Some(s);
            sets = Some(sets.unwrap_or(0).saturating_add(n));
            continue;
        }
        if let Some(f) = summary(l, stripe, sets) {
            out.push(f);
            summarised = true;
        } else if l.contains(" drives online, ") {
            summarised = true;
        }
    }
    let (count, online, total) = servers;
    if !summarised && online < total {
        out.push(warn(format!(
            "{} of {total} drives online over the {count} server(s) listed: which erasure \
             sets lost the others is not shown, so write quorum is not judged",
            online
        )));
    }
    out
}

/// `mc admin info`'s per-server `Drives: 3/4 OK`.
fn server_drives(l: &str) -> Option<(u32, u32)> {
    let rest = l.strip_prefix("Drives:")?.trim();
    let (ok, rest) = rest.split_once('/')?;
    let all = rest.split_whitespace().next()?;
    let (ok, all) = (ok.trim().parse().ok()?, all.parse().ok()?);
    (ok <= all).then_some((ok, all))
}

/// MinIO's own words that a write failed for want of drives.
fn server_log(l: &str) -> Option<QuorumFinding> {
    if let Some(at) = l.find("Write quorum could not be established") {
        return Some(crit(format!(
            "MinIO: {}",
            crate::model::excerpt(&crate::model::strip_controls(&l[at..]))
        )));
    }
    for words in [
        "Storage resources are insufficient for the write operation",
        "Insufficient number of drives online",
    ] {
        if l.contains(words) {
            return Some(crit(format!("MinIO refused a write: {words}")));
        }
    }
    if let Some(at) = l.find("Waiting for a minimum of ") {
        return Some(crit(format!(
            "MinIO is not serving: {}",
            crate::model::excerpt(&crate::model::strip_controls(&l[at..]))
        )));
    }
    None
}

/// A row of `mc admin info`'s pool table: `│ 1st  │ 2.3% (total: 48 TiB) │ 4 │ 1 │` →
/// (erasure stripe size, erasure sets).
fn pool_row(l: &str) -> Option<(u32, u32)> {
    let cells: Vec<&str> = l
        .split(['│', '|'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if cells.len() != 4 || !cells[0].ends_with(['t', 'd', 'h']) || !cells[1].contains('%') {
        return None;
    }
    Some((cells[2].parse().ok()?, cells[3].parse().ok()?))
}

/// `mc admin info`'s last line: `2 drives online, 2 drives offline, EC:2`.
fn summary(l: &str, stripe: Option<u32>, sets: Option<u32>) -> Option<QuorumFinding> {
    let count = |words: &[&str]| -> Option<u32> {
        let at = words.iter().find_map(|w| l.find(w))?;
        l[..at]
            .split([',', ' '])
            .rfind(|t| !t.is_empty())?
            .parse()
            .ok()
    };
    let online = count(&[" drives online", " drive online"])?;
    let offline = count(&[" drives offline", " drive offline"])?;
    let parity: Option<u32> = l
        .split("EC:")
        .nth(1)
        .and_then(|p| p.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok());
    if offline == 0 {
        return None;
    }
    let quorum = stripe.zip(parity).and_then(|(s, p)| write_quorum(s, p));
    Some(match (quorum, sets) {
        (Some(q), Some(1)) if online < q => crit(format!(
            "{online} of {} drives online in its one erasure set, under its write quorum of {q} \
             (EC:{}): {BELOW_QUORUM}",
            online + offline,
            parity.unwrap_or(0)
        )),
        (Some(q), Some(1)) => warn(format!(
            "{offline} drive(s) offline, {online} online: at or above the set's write quorum of \
             {q}, writes still hold, with no drive to spare past it"
        )),
        (Some(q), _) if offline > stripe.unwrap_or(0).saturating_sub(q) => warn(format!(
            "{offline} drive(s) offline over {} erasure sets: enough to put one set below its \
             write quorum of {q}, but this summary does not say which set lost them (read the \
             cluster metrics or /minio/health/cluster)",
            sets.map_or_else(|| "several".to_string(), |s| s.to_string())
        )),
        _ => warn(format!(
            "{offline} drive(s) offline, {online} online (the summary shows no set size and \
             parity to judge write quorum by)"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn minio_write_quorum_rule() {
        assert_eq!(write_quorum(4, 2), Some(3), "data = parity: one more");
        assert_eq!(write_quorum(16, 4), Some(12));
        assert_eq!(write_quorum(8, 4), Some(5));
        assert_eq!(write_quorum(4, 4), None);
    }

    #[test]
    fn a_set_below_its_write_quorum_is_critical() {
        let exp = crate::wire::prometheus::parse(
            "minio_cluster_health_erasure_set_online_drives{pool=\"0\",set=\"1\",server=\"a\"} 2\n\
             minio_cluster_health_erasure_set_write_quorum{pool=\"0\",set=\"1\",server=\"a\"} 3\n\
             minio_cluster_health_erasure_set_online_drives{pool=\"0\",set=\"0\",server=\"a\"} 4\n\
             minio_cluster_health_erasure_set_write_quorum{pool=\"0\",set=\"0\",server=\"a\"} 3\n",
        );
        let f = from_metrics(&exp);
        assert_eq!(f.len(), 1);
        assert!(f[0].critical);
        // Readings no set can have (negative, fractional drives; a quorum of none) are not
        // evidence of a set under quorum.
        for (online, quorum) in [("-1", "3"), ("2.5", "3"), ("0", "0")] {
            let exp = crate::wire::prometheus::parse(&format!(
                "minio_cluster_health_erasure_set_online_drives{{pool=\"0\",set=\"1\"}} {online}\n\
                 minio_cluster_health_erasure_set_write_quorum{{pool=\"0\",set=\"1\"}} {quorum}\n"
            ));
            assert!(
                from_metrics(&exp).iter().all(|f| !f.critical),
                "{online}/{quorum}"
            );
        }
        assert!(
            f[0].why
                .contains("erasure set 1 of pool 0: 2 drive(s) online"),
            "{f:?}"
        );
    }

    proptest! {
        #[test]
        fn garbage_never_panics(text in "(?s).{0,300}") {
            let _ = from_text(&text);
            let _ = from_health_response(&text);
            let _ = from_metrics(&crate::wire::prometheus::parse(&text));
        }
    }
}
