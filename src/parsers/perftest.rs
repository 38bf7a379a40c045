//! perftest bandwidth output (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`): the banner (test and
//! device), the units in the column header, and one row per message size. Fields are split on
//! any whitespace (perftest puts TABs inside rows). Every bandwidth comes out in Gbit/s:
//! "MB/sec" and "MiB/sec" are both 2^20 bytes a second (INDEX.md).

use super::LineError;

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The banner's test name, e.g. "RDMA_Write BW Test".
    pub test: Option<String>,
    /// The banner's device, e.g. "mlx5_0".
    pub device: Option<String>,
    /// Message size in bytes.
    pub size_bytes: u64,
    /// Iterations.
    pub iterations: u64,
    /// Peak bandwidth in Gbit/s (0 when perftest did not measure it, e.g. with `-D`).
    pub bw_peak_gbit_per_s: f64,
    /// Average bandwidth in Gbit/s.
    pub bw_avg_gbit_per_s: f64,
    /// Message rate, million packets a second.
    pub msg_rate_mpps: f64,
}

/// What one line meant.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A result row.
    Row(Row),
    /// A failure perftest printed (completion error, connection trouble).
    Failure {
        /// The line, trimmed.
        text: String,
    },
}

/// Streaming parser.
#[derive(Debug, Default)]
pub struct PerftestParser {
    test: Option<String>,
    device: Option<String>,
    /// Multiplier from the header's unit to Gbit/s; `None` until a column header is seen.
    to_gbit: Option<f64>,
    line_no: usize,
}

const MIB_PER_SEC_IN_GBIT: f64 = 8.0 * 1_048_576.0 / 1e9;

impl PerftestParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line; `Ok(None)` for lines that carry no figure.
    pub fn push(&mut self, raw: &str) -> Result<Option<Item>, LineError> {
        self.line_no += 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with("---") {
            return Ok(None);
        }
        if line.ends_with(" BW Test") {
            self.test = Some(line.to_string());
            self.to_gbit = None;
            return Ok(None);
        }
        if let Some((_, dev)) = line.split_once("Device") {
            if let Some(name) = dev
                .trim_start_matches([' ', '\t', ':'])
                .split_whitespace()
                .next()
            {
                self.device = Some(name.to_string());
            }
            return Ok(None);
        }
        let lower = line.to_ascii_lowercase();
        if lower.contains("completion with error")
            || lower.contains("couldn't")
            || lower.contains("failed to")
            || lower.starts_with("error")
        {
            return Ok(Some(Item::Failure {
                text: line.to_string(),
            }));
        }
        if line.starts_with("#bytes") {
            self.to_gbit = if line.contains("[Gb/sec]") {
                Some(1.0)
            } else if line.contains("[MB/sec]") || line.contains("[MiB/sec]") {
                Some(MIB_PER_SEC_IN_GBIT)
            } else {
                return Err(LineError {
                    line_no: self.line_no,
                    message: format!("column header with a unit we do not know: '{line}'"),
                });
            };
            return Ok(None);
        }
        let Some(to_gbit) = self.to_gbit else {
            return Ok(None);
        };
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.is_empty() || !tokens[0].bytes().all(|b| b.is_ascii_digit()) {
            // Warnings between header and rows (CPU frequency, libibverbs) are not rows.
            return Ok(None);
        }
        let line_no = self.line_no;
        let err = |message: String| LineError { line_no, message };
        if tokens.len() < 5 {
            return Err(err(format!("row of {} fields, expected 5", tokens.len())));
        }
        let int = |i: usize| {
            tokens[i]
                .parse::<u64>()
                .map_err(|_| err(format!("'{}' is not a whole number", tokens[i])))
        };
        let real = |i: usize| match tokens[i].parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(err(format!("'{}' is not a number", tokens[i]))),
        };
        Ok(Some(Item::Row(Row {
            test: self.test.clone(),
            device: self.device.clone(),
            size_bytes: int(0)?,
            iterations: int(1)?,
            bw_peak_gbit_per_s: real(2)? * to_gbit,
            bw_avg_gbit_per_s: real(3)? * to_gbit,
            msg_rate_mpps: real(4)?,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tool_output;
    use proptest::prelude::*;

    fn rows(rel: &str) -> Vec<Row> {
        let mut p = PerftestParser::new();
        tool_output(&format!("perftest/{rel}"))
            .lines()
            .filter_map(|l| match p.push(l) {
                Ok(Some(Item::Row(r))) => Some(r),
                Ok(_) => None,
                Err(e) => panic!("{rel}: {e}"),
            })
            .collect()
    }

    #[test]
    fn roce_post_list_row_with_tabs() {
        let r = rows("write-bw-postlist-roce-gbits-8B.txt");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].size_bytes, 8);
        assert_eq!(r[0].iterations, 224_958_464);
        assert_eq!(r[0].bw_peak_gbit_per_s, 0.0);
        assert_eq!(r[0].bw_avg_gbit_per_s, 0.48);
        assert_eq!(r[0].msg_rate_mpps, 7.498617);
        assert_eq!(r[0].device.as_deref(), Some("ib0"));
        assert_eq!(r[0].test.as_deref(), Some("RDMA_Write Post List BW Test"));
    }

    #[test]
    fn sweep_switches_between_six_and_two_decimals() {
        let r = rows("write-bw-sweep-ib-gbits-truncated.txt");
        let sizes: Vec<u64> = r.iter().map(|r| r.size_bytes).collect();
        assert_eq!(sizes, [2, 4, 8]);
        assert_eq!(r[0].bw_avg_gbit_per_s, 0.042185);
        assert_eq!(r[2].bw_avg_gbit_per_s, 0.17);
        assert_eq!(r[0].device.as_deref(), Some("mlx5_0"));
    }

    #[test]
    fn megabytes_become_gigabits() {
        let r = rows("read-bw-sweep-ib-MBps-truncated.txt");
        assert_eq!(r.len(), 3);
        let gbit = r[2].bw_avg_gbit_per_s;
        assert!(
            (gbit - 19.50 * 8.0 * 1_048_576.0 / 1e9).abs() < 1e-12,
            "{gbit}"
        );
        assert_eq!(r[2].test.as_deref(), Some("RDMA_Read BW Test"));
    }

    #[test]
    fn banners_without_results_parse_to_nothing() {
        for f in [
            "write-bw-server-roce-duration-header-only.txt",
            "write-bw-bidir-duration-warning-banner-only.txt",
            "write-bw-use-cuda-preamble-banner-only.txt",
        ] {
            assert!(rows(f).is_empty(), "{f}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,120}", 0..30)) {
            let mut p = PerftestParser::new();
            let _ = p.push(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]");
            for l in &lines {
                let _ = p.push(l);
            }
        }
    }
}
