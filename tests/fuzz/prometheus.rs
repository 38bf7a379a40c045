//! Prometheus: text exposition, API answers, dcgm-exporter series, the Prometheus source.

use super::*;

proptest! {
    #![proptest_config(config("prometheus-text"))]

    /// Scrapes, mutated, through the text parser, bucket and quantile reading, and the
    /// dcgm-exporter series gatherer; what the gatherer keeps is finite.
    #[test]
    fn prometheus_text_takes_any_scrape(c in case(Family::PromText)) {
        cap_memory();
        let text = c.text();
        let exp = wire::prometheus::parse(&text);
        for e in &exp.errors {
            check_error("prometheus::parse", &e.to_string())?;
        }
        let names: std::collections::BTreeSet<&str> =
            exp.samples.iter().map(|s| s.name.as_str()).collect();
        for name in names {
            let b = wire::prometheus::buckets(exp.metric(name));
            for q in [0.0, 0.5, 0.99, 1.0] {
                let _ = wire::prometheus::quantile(&b, q);
            }
        }
        let g = burnin::sources::dcgm_series::gather_text(&text, &HOST_LABELS);
        let _ = g.absent();
        for node in g.nodes.values() {
            let _ = node.unavailable();
            for reading in node.gpus.values() {
                check_finite("dcgm reading", &reading.clone().finish())?;
            }
        }
    }
}

/// The nodes of a Prometheus-mode inventory: every host the seed scrapes name (those that are
/// valid SSH targets), so the source matches their series.
pub(crate) fn prom_nodes() -> PromNodes {
    static INV: OnceLock<Inventory> = OnceLock::new();
    let inv = INV.get_or_init(|| {
        let mut hosts = std::collections::BTreeSet::new();
        for s in Family::PromText.seeds() {
            let g = burnin::sources::dcgm_series::gather_text(
                &String::from_utf8_lossy(&s.bytes),
                &HOST_LABELS,
            );
            hosts.extend(
                g.nodes
                    .into_keys()
                    .filter(|h| burnin::config::inventory::validate_target(h).is_ok()),
            );
        }
        let mut text = String::from(
            "[defaults]\nmode = \"prometheus\"\ngpus = 8\n[prometheus]\nurl = \"http://127.0.0.1:9\"\n",
        );
        for h in hosts {
            text.push_str(&format!("[[node]]\nhost = \"{h}\"\n"));
        }
        Inventory::parse("fuzz.toml", &text).expect("the inventory of the scrapes' hosts")
    });
    let spec = inv.prometheus.as_ref().expect("a [prometheus] section");
    PromNodes::new(inv.nodes.clone(), spec, inv.interval)
}

proptest! {
    #![proptest_config(config("promql"))]

    /// API answers, mutated, through `promql::decode`; what decodes goes through the
    /// Prometheus source as values, times, identities and history, and its events into a store.
    #[test]
    fn promql_answers_through_the_prometheus_source(
        c in case(Family::PromAnswer),
        polls in 1..4usize,
    ) {
        cap_memory();
        let series = match burnin::sources::promql::decode("http://prom:9090", &c.bytes()) {
            Ok(s) => s,
            Err(e) => return check_error("promql::decode", &e.to_string()),
        };
        let mut nodes = prom_nodes();
        nodes.take_history(&series);
        let mut store = ClusterStore::new();
        for p in 0..polls {
            let identity = nodes.wants_identity().then_some(series.as_slice());
            let events = nodes.step(&series, &series, identity, T0_MS + p as u64 * 5000);
            for ev in events {
                if let SourceEvent::Frame(f) = &ev {
                    check_finite("frame from Prometheus", f)?;
                }
                store.ingest(ev);
            }
        }
        for ev in nodes.failed("connection refused") {
            store.ingest(ev);
        }
    }
}
