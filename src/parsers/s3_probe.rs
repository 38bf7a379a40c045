//! The JSON lines `burnin probe s3 --json-lines` prints when a plan phase runs it on a node:
//! `{"burnin":"s3_window",…}` once a second (the live storage pane), `{"burnin":"s3_report",
//! "report":{…}}` at the end (the figures the gates judge), `{"burnin":"error","text":…}` when
//! it could not run. Other lines (the human table) are not ours.

use serde::Deserialize;

use super::LineError;
use crate::model::probe::ProbeWindow;
use crate::probes::s3::report::ProbeReport;

/// One record of the probe.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "burnin", rename_all = "snake_case")]
pub enum Record {
    /// A progress window.
    S3Window(ProbeWindow),
    /// The final report.
    S3Report {
        /// The report.
        report: Box<ProbeReport>,
    },
    /// The probe could not run.
    Error {
        /// Why.
        text: String,
    },
    /// A kind this console does not know.
    #[serde(other)]
    Other,
}

/// Read one line: `Ok(None)` for lines that are not ours.
pub fn parse_line(line_no: usize, line: &str) -> Result<Option<Record>, LineError> {
    super::tagged_json_line(line_no, line, "s3 probe record", |r| *r != Record::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn windows_reports_errors_and_foreign_lines() {
        let w = r#"{"burnin":"s3_window","at_ms":5,"endpoint":"http://e","ttfb_p50_ms":null,"ttfb_p99_ms":2.0,"total_p99_ms":9.0,"throughput_bytes_per_sec":1e9,"requests":3,"errors":1,"concurrency":16}"#;
        match parse_line(1, w) {
            Ok(Some(Record::S3Window(w))) => {
                assert!(w.ttfb_p50_ms.is_nan());
                assert_eq!((w.requests, w.concurrency), (3, Some(16)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_line(
                2,
                r#"{"burnin":"error","text":"probe s3: no S3 credentials"}"#
            ),
            Ok(Some(Record::Error {
                text: "probe s3: no S3 credentials".into()
            }))
        );
        assert_eq!(parse_line(3, " conc  GB/s"), Ok(None));
        assert_eq!(parse_line(4, r#"{"burnin":"s3_future_kind"}"#), Ok(None));
        assert!(parse_line(5, r#"{"burnin":"s3_window","at_ms":"x"}"#).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(s in ".{0,200}") {
            let _ = parse_line(1, &s);
            let _ = parse_line(1, &format!("{{\"burnin\":\"s3_report\",{s}"));
        }
    }
}
