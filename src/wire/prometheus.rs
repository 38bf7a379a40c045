//! The Prometheus text exposition format (what MinIO's `/minio/v2/metrics/…` and
//! `/minio/metrics/v3/…`, dcgm-exporter and node exporters serve): `# HELP`/`# TYPE` lines and
//! samples `name{label="value",…} value [timestamp]`. Values may be `+Inf`, `-Inf`, `NaN` or
//! Go's `%g` exponent form; label values may escape `\\`, `\"` and `\n`; a bad line is an error
//! that names it and the rest still parses. Histogram helpers sort buckets by the *number* in
//! `le` (MinIO v2 prints `le` with `%.3f` and sorts the strings, so "10.000" comes before
//! "2.500") and tolerate missing `+Inf` and left-out zero buckets (MinIO v3).

use std::collections::BTreeMap;

use crate::model::{LineError, excerpt};

/// One sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels in the order written.
    pub labels: Labels,
    /// The value.
    pub value: f64,
    /// Optional timestamp, ms since the epoch.
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A metric family's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// `_bucket`/`_sum`/`_count`.
    Histogram,
    /// Quantiles.
    Summary,
    /// Declared untyped, or a type we do not know.
    Untyped,
}

/// A parsed scrape.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// `# TYPE` declarations.
    pub types: BTreeMap<String, MetricType>,
    /// Lines that could not be read.
    pub errors: Vec<LineError>,
}

impl Exposition {
    /// The samples of one metric.
    pub fn metric<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

const DCGM_BLANK: i64 = 9_223_372_036_854_775_794;

/// DCGM's int64 "blank" sentinel (9223372036854775794 and up) leaking through dcgm-exporter:
/// a field the GPU does not support, not a reading.
pub fn is_dcgm_blank(value: f64) -> bool {
    // The sentinel rounds to 2^63 as a float, as the text does when parsed.
    value >= DCGM_BLANK as f64
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Ok(f64::INFINITY),
        "-Inf" | "-inf" => Ok(f64::NEG_INFINITY),
        "NaN" | "nan" => Ok(f64::NAN),
        _ => s
            .parse::<f64>()
            .map_err(|_| format!("value {:?} is not a number", excerpt(s))),
    }
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Labels from just after `{` to its `}`; returns them and the rest of the line after `}`.
/// Label pairs in the order written.
type Labels = Vec<(String, String)>;

fn parse_labels(s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("label without '='")?;
        let key = rest[..eq].trim();
        if !valid_name(key) {
            return Err(format!("label name {:?} is not valid", excerpt(key)));
        }
        let after_eq = rest[eq + 1..].trim_start();
        let mut chars = after_eq.char_indices();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err(format!("label {} has no quoted value", excerpt(key)));
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                value.push(match c {
                    'n' => '\n',
                    other => other,
                });
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(i);
                break;
            } else {
                value.push(c);
            }
        }
        let end = end.ok_or_else(|| format!("label {}'s value is not closed", excerpt(key)))?;
        labels.push((key.to_string(), value));
        rest = &after_eq[end + 1..];
    }
}

/// Parse a whole scrape.
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE")
                && let (Some(name), Some(kind)) = (words.next(), words.next())
            {
                let kind = match kind {
                    "counter" => MetricType::Counter,
                    "gauge" => MetricType::Gauge,
                    "histogram" => MetricType::Histogram,
                    "summary" => MetricType::Summary,
                    _ => MetricType::Untyped,
                };
                out.types.insert(name.to_string(), kind);
            }
            continue;
        }
        match parse_sample(line) {
            Ok(s) => out.samples.push(s),
            Err(message) => out.errors.push(LineError { line_no, message }),
        }
    }
    out
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or_else(|| format!("{:?}: a name with no value", excerpt(line)))?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err(format!("metric name {:?} is not valid", excerpt(name)));
    }
    let (labels, rest) = match line[name_end..].strip_prefix('{') {
        Some(after) => parse_labels(after)?,
        None => (Vec::new(), &line[name_end..]),
    };
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next().ok_or("no value")?)?;
    let timestamp_ms = match fields.next() {
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("timestamp {:?} is not ms", excerpt(t)))?,
        ),
        None => None,
    };
    if let Some(extra) = fields.next() {
        return Err(format!("unexpected {:?} after the value", excerpt(extra)));
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp_ms,
    })
}

/// Cumulative buckets `(le, count)` sorted by the number in `le`; samples without a readable
/// `le` are left out.
pub fn buckets<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<(f64, f64)> {
    let mut b: Vec<(f64, f64)> = samples
        .into_iter()
        .filter_map(|s| {
            let le = parse_value(s.label("le")?).ok()?;
            (!le.is_nan()).then_some((le, s.value))
        })
        .collect();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    b
}

/// The `q` quantile of cumulative buckets, interpolated linearly inside the bucket that holds
/// it (as Prometheus' `histogram_quantile`); `None` without observations. Without `+Inf` the
/// largest bucket is taken as the total; a quantile in the `+Inf` bucket is that bucket's lower
/// bound (the largest finite `le`), since nothing better is known.
pub fn quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(lower.0);
            }
            let in_bucket = count - lower.1;
            if in_bucket <= 0.0 {
                return Some(le);
            }
            return Some(lower.0 + (le - lower.0) * (rank - lower.1) / in_bucket);
        }
        lower = (le, count);
    }
    Some(lower.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;
    use proptest::prelude::*;

    #[test]
    fn every_minio_and_dcgm_scrape_parses() {
        for f in [
            "minio/legacy-prometheus-endpoint-s3-ttfb-histogram.prom",
            "minio/v2-cluster-capacity-exponent-notation-partial.prom",
            "minio/v2-cluster-s3-ttfb-distribution-partial.prom",
            "minio/v2-cluster-scrape-head-partial.prom",
            "minio/v2-play-cluster-and-node-drive-lines.prom",
            "dcgm-exporter/metrics-a100-nvlink-prof-bytes-zero-partial.prom",
            "dcgm-exporter/metrics-datadog-fixture-t4-labelfields-excerpt.prom",
            "dcgm-exporter/metrics-h100-mig-k8s-labels-partial.prom",
            "dcgm-exporter/metrics-mixed-models-lowercase-hostname-partial.prom",
            "dcgm-exporter/metrics-t4-driver460-process-name-label-excerpt.prom",
            "dcgm-exporter/metrics-v100-4gpu-old-labels-partial.prom",
            "dcgm-exporter/metrics-xid-errors-with-err-labels.prom",
        ] {
            let e = parse(&tool_output(f));
            assert!(e.errors.is_empty(), "{f}: {:?}", e.errors);
            assert!(!e.samples.is_empty(), "{f}");
        }
    }

    #[test]
    fn exponent_values_and_types() {
        let e = parse(&tool_output(
            "minio/v2-cluster-capacity-exponent-notation-partial.prom",
        ));
        let free = e
            .metric("minio_cluster_capacity_raw_free_bytes")
            .next()
            .unwrap();
        assert_eq!(free.value, 1.437033086976e12);
        assert_eq!(free.label("server"), Some("127.0.0.1:9000"));
        assert_eq!(
            e.types.get("minio_cluster_capacity_raw_free_bytes"),
            Some(&MetricType::Gauge)
        );
    }

    #[test]
    fn v2_buckets_sort_by_number_not_string() {
        let e = parse(&tool_output(
            "minio/v2-cluster-s3-ttfb-distribution-partial.prom",
        ));
        let head = buckets(
            e.metric("minio_s3_requests_ttfb_seconds_distribution")
                .filter(|s| s.label("api") == Some("headobject")),
        );
        let les: Vec<f64> = head.iter().map(|b| b.0).collect();
        assert!(les.windows(2).all(|w| w[0] < w[1]), "{les:?}");
        assert_eq!(les[0], 0.05);
    }

    #[test]
    fn quantiles_of_the_legacy_histogram() {
        let e = parse(&tool_output(
            "minio/legacy-prometheus-endpoint-s3-ttfb-histogram.prom",
        ));
        let b = buckets(e.metric("s3_ttfb_seconds_bucket"));
        assert_eq!(b.last().map(|x| x.1), Some(86358.0));
        // 74469 of 86358 answered within 50 ms: the median is inside the first bucket.
        let p50 = quantile(&b, 0.5).unwrap();
        assert!((p50 - 0.05 * 43179.0 / 74469.0).abs() < 1e-9, "{p50}");
        // p99 (85494.4) falls in the +Inf bucket: the largest finite bound is all we know.
        assert_eq!(quantile(&b, 0.99), Some(10.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn dcgm_blank_sentinel_and_elisions() {
        let e = parse(&tool_output("dcgm-exporter/readme-metrics-excerpt.txt"));
        let temp = e.metric("DCGM_FI_DEV_MEMORY_TEMP").next().unwrap();
        assert!(is_dcgm_blank(temp.value));
        let clock = e.metric("DCGM_FI_DEV_SM_CLOCK").next().unwrap();
        assert!(!is_dcgm_blank(clock.value));
        assert_eq!(
            clock.label("UUID"),
            Some("GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52")
        );
        // The README's own "..." elisions are reported, not taken for samples.
        assert!(!e.errors.is_empty());
        assert!(
            e.errors.iter().all(|x| x.message.contains("\"...\"")),
            "{:?}",
            e.errors
        );
    }

    #[test]
    fn a_line_error_quotes_no_whole_token() {
        // A 70000-character name or value came back whole in the error; found by tests/fuzz/.
        let long = "1".repeat(70_000);
        let text = format!(
            "a {long}x\n{long}\na{{b=\"c\"}} 1 {long}x\na 1 2 {long}\n{}-{{}} 1\na{{{long}-=\"\"}} 1\n",
            "a".repeat(70_000)
        );
        let e = parse(&text);
        assert_eq!(
            e.errors.len(),
            6,
            "{:?}",
            e.errors.iter().map(|x| x.line_no).collect::<Vec<_>>()
        );
        for x in &e.errors {
            assert!(
                x.message.len() < 400,
                "line {}: {} bytes",
                x.line_no,
                x.message.len()
            );
        }
    }

    #[test]
    fn escapes_timestamps_and_bad_lines() {
        let e = parse(
            "a{b=\"x\\\"y\\\\z\\n\"} 1 1700000000000\nc +Inf\nd{e=\"f\"} NaN\nbad{x=1} 2\n9x 1\nf{g=\"h\"}\n",
        );
        assert_eq!(e.samples[0].label("b"), Some("x\"y\\z\n"));
        assert_eq!(e.samples[0].timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(e.samples[1].value, f64::INFINITY);
        assert!(e.samples[2].value.is_nan());
        let lines: Vec<usize> = e.errors.iter().map(|x| x.line_no).collect();
        assert_eq!(lines, [4, 5, 6]);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
            let e = parse(&text);
            let _ = quantile(&buckets(&e.samples), 0.5);
        }

        #[test]
        fn sample_shaped_garbage_never_panics(name in "[a-z_]{1,8}", labels in "[a-z=\",{}\\\\ ]{0,40}", value in "[0-9.e+\\-Inf]{0,10}") {
            let _ = parse(&format!("{name}{{{labels}}} {value}"));
        }
    }
}
