//! perftest output (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, their `_lat` siblings, atomics),
//! as `perftest_parameters.c` prints it: a banner naming the test (`RDMA_Write BW Test`,
//! `Send Latency Test`, `RDMA_Write Bidirectional BW Test`), the device, then a column header
//! and one row per message size between two dashed lines. A log may hold several tests one
//! after another (a script's session): each banner starts a new test, and each column header
//! says what its rows are, so a latency table is never read as bandwidth.
//!
//! Columns are found by name in the header (`RESULT_FMT*`: bandwidth, QoS with `#sl`,
//! per-port, latency by iterations or by duration, an optional `CPU_Util[%]`), and rows are
//! split on any whitespace (perftest puts TABs inside rows). Every bandwidth comes out in
//! Gbit/s: "MB/sec" and "MiB/sec" are both 2^20 bytes a second (INDEX.md). A row carries its
//! own check: perftest derives the average and the message rate from the same count and time,
//! so where the header's unit disagrees with the rate and Gbit/s agrees (a server printing
//! the default header for a client's `--report_gbits`), the values are Gbit/s.

use super::LineError;

/// What a test measures, from its banner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestKind {
    /// The banner as printed, e.g. `RDMA_Write Bidirectional BW Test`.
    pub title: String,
    /// The verb in burnin's words: `write`, `read`, `send`, `atomic` (with `-bidir` when both
    /// directions run at once: its bandwidth is the two directions' sum).
    pub verb: String,
}

impl TestKind {
    fn from_banner(title: &str) -> Self {
        let first = title.split_whitespace().next().unwrap_or("");
        let verb = match first {
            "RDMA_Write" | "RDMA_Write_imm" => "write",
            "RDMA_Read" => "read",
            "Send" | "Send_imm" => "send",
            "Atomic" => "atomic",
            other => other,
        }
        .to_ascii_lowercase();
        let verb = if title.contains("Bidirectional") {
            format!("{verb}-bidir")
        } else {
            verb
        };
        Self {
            title: title.to_string(),
            verb,
        }
    }
}

/// One bandwidth row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The banner's test, when the log showed it.
    pub test: Option<TestKind>,
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
    /// The header's unit disagreed with the row's own message rate, which the values matched
    /// as Gbit/s (a server side printing the default `MB/sec` header for a client that asked
    /// `--report_gbits`): the values were taken as Gbit/s.
    pub unit_from_rate: bool,
}

/// One latency row (microseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct LatRow {
    /// The banner's test, when the log showed it.
    pub test: Option<TestKind>,
    /// The banner's device.
    pub device: Option<String>,
    /// Message size in bytes.
    pub size_bytes: u64,
    /// Iterations.
    pub iterations: u64,
    /// Typical (median) latency; `None` in duration mode, which prints only the average.
    pub t_typical_us: Option<f64>,
    /// Average latency.
    pub t_avg_us: Option<f64>,
    /// 99th percentile, where printed.
    pub t_p99_us: Option<f64>,
}

/// What one line meant.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A bandwidth row.
    Row(Row),
    /// A latency row.
    Lat(LatRow),
    /// A failure perftest printed (completion error, connection trouble).
    Failure {
        /// The line, trimmed.
        text: String,
    },
}

/// Where a table's figures sit, from its column header.
#[derive(Debug, Clone, PartialEq)]
enum Table {
    Bandwidth {
        columns: usize,
        iterations: usize,
        peak: usize,
        average: usize,
        rate: usize,
        to_gbit: f64,
    },
    Latency {
        columns: usize,
        iterations: usize,
        typical: Option<usize>,
        average: Option<usize>,
        p99: Option<usize>,
    },
}

/// Streaming parser.
#[derive(Debug, Default)]
pub struct PerftestParser {
    test: Option<TestKind>,
    device: Option<String>,
    table: Option<Table>,
    line_no: usize,
}

const MIB_PER_SEC_IN_GBIT: f64 = 8.0 * 1_048_576.0 / 1e9;

/// The header's column names: "BW peak[Gb/sec]", "99% percentile[usec]", "tps average" are
/// one column each though printed as two words.
fn header_columns(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let joins = !w.contains('[')
            && !w.starts_with('#')
            && words
                .get(i + 1)
                .is_some_and(|n| n.contains('[') || *n == "average");
        if joins {
            out.push(format!("{w} {}", words[i + 1]));
            i += 2;
        } else {
            out.push(w.to_string());
            i += 1;
        }
    }
    out
}

fn table_from_header(line: &str) -> Result<Table, String> {
    let cols = header_columns(line);
    let find = |prefix: &str| cols.iter().position(|c| c.starts_with(prefix));
    let iterations = find("#iterations").ok_or("column header without #iterations")?;
    if let Some(average) = find("BW average") {
        let unit = &cols[average];
        let to_gbit = if unit.contains("[Gb/sec]") {
            1.0
        } else if unit.contains("[MB/sec]") || unit.contains("[MiB/sec]") {
            MIB_PER_SEC_IN_GBIT
        } else {
            return Err(format!("bandwidth in a unit we do not know: '{unit}'"));
        };
        return Ok(Table::Bandwidth {
            columns: cols.len(),
            iterations,
            peak: find("BW peak").ok_or("bandwidth header without BW peak")?,
            average,
            rate: find("MsgRate").ok_or("bandwidth header without MsgRate")?,
            to_gbit,
        });
    }
    let typical = find("t_typical");
    let average = find("t_avg");
    if typical.is_some() || average.is_some() {
        return Ok(Table::Latency {
            columns: cols.len(),
            iterations,
            typical,
            average,
            p99: find("99% percentile"),
        });
    }
    Err(format!("column header we do not know: '{}'", line.trim()))
}

/// perftest's failure words (connection set-up, completions, QP transitions).
pub fn is_failure(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.contains("completion with error")
        || lower.contains("couldn't")
        || lower.contains("failed to")
        || lower.contains("failed status")
        || lower.contains("unable to")
        || lower.starts_with("error")
}

impl PerftestParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line; `Ok(None)` for lines that carry no figure.
    pub fn push(&mut self, raw: &str) -> Result<Option<Item>, LineError> {
        self.line_no += 1;
        let line_no = self.line_no;
        let err = |message: String| LineError { line_no, message };
        let line = raw.trim();
        if line.is_empty() {
            return Ok(None);
        }
        if line.starts_with("---") {
            // A dashed line opens and closes every block: rows only follow their own header.
            self.table = None;
            return Ok(None);
        }
        if line.ends_with(" Test") && (line.contains(" BW ") || line.contains(" Latency ")) {
            self.test = Some(TestKind::from_banner(line));
            self.device = None;
            self.table = None;
            return Ok(None);
        }
        if is_failure(line) {
            return Ok(Some(Item::Failure {
                text: line.to_string(),
            }));
        }
        if let Some((_, after)) = line.split_once("Device ") {
            let after = after.trim_start();
            if let Some(name) = after.strip_prefix(':') {
                if let Some(name) = name.split_whitespace().next() {
                    self.device = Some(name.to_string());
                }
                return Ok(None);
            }
        }
        if line.starts_with("#bytes") {
            self.table = None;
            self.table = Some(table_from_header(line).map_err(err)?);
            return Ok(None);
        }
        let Some(table) = &self.table else {
            return Ok(None);
        };
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if !tokens[0].bytes().all(|b| b.is_ascii_digit()) {
            // Warnings between header and rows (CPU frequency, libibverbs) are not rows.
            return Ok(None);
        }
        let int = |i: usize| {
            let t = tokens.get(i).ok_or_else(|| err("row ends early".into()))?;
            t.parse::<u64>()
                .map_err(|_| err(format!("'{}' is not a whole number", super::excerpt(t))))
        };
        let real = |i: usize| {
            let t = tokens.get(i).ok_or_else(|| err("row ends early".into()))?;
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(err(format!("'{}' is not a number", super::excerpt(t)))),
            }
        };
        match table {
            Table::Bandwidth {
                columns,
                iterations,
                peak,
                average,
                rate,
                to_gbit,
            } => {
                if tokens.len() < *columns {
                    return Err(err(format!(
                        "row of {} fields, the header has {columns}",
                        tokens.len()
                    )));
                }
                let size_bytes = int(0)?;
                let (peak, average, rate) = (real(*peak)?, real(*average)?, real(*rate)?);
                // perftest computes both from the same count and time: average bytes a
                // second = messages a second × size. The rate tells the unit when the header
                // says another.
                let implied_gbit = rate * 1e6 * size_bytes as f64 * 8.0 / 1e9;
                let near =
                    |v: f64| implied_gbit > 0.0 && (v - implied_gbit).abs() <= 0.05 * implied_gbit;
                let unit_from_rate = *to_gbit != 1.0 && !near(average * to_gbit) && near(average);
                let to_gbit = if unit_from_rate { 1.0 } else { *to_gbit };
                Ok(Some(Item::Row(Row {
                    test: self.test.clone(),
                    device: self.device.clone(),
                    size_bytes,
                    iterations: int(*iterations)?,
                    bw_peak_gbit_per_s: peak * to_gbit,
                    bw_avg_gbit_per_s: average * to_gbit,
                    msg_rate_mpps: rate,
                    unit_from_rate,
                })))
            }
            Table::Latency {
                columns,
                iterations,
                typical,
                average,
                p99,
            } => {
                if tokens.len() < *columns {
                    return Err(err(format!(
                        "row of {} fields, the header has {columns}",
                        tokens.len()
                    )));
                }
                let opt = |i: &Option<usize>| i.map(real).transpose();
                Ok(Some(Item::Lat(LatRow {
                    test: self.test.clone(),
                    device: self.device.clone(),
                    size_bytes: int(0)?,
                    iterations: int(*iterations)?,
                    t_typical_us: opt(typical)?,
                    t_avg_us: opt(average)?,
                    t_p99_us: opt(p99)?,
                })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;
    use proptest::prelude::*;

    fn items(rel: &str) -> Vec<Item> {
        let mut p = PerftestParser::new();
        tool_output(&format!("perftest/{rel}"))
            .lines()
            .filter_map(|l| p.push(l).unwrap_or_else(|e| panic!("{rel}: {e}")))
            .collect()
    }

    fn rows(rel: &str) -> Vec<Row> {
        items(rel)
            .into_iter()
            .filter_map(|i| match i {
                Item::Row(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_line_error_quotes_no_whole_number() {
        // A 70000-digit cell came back whole in the error; found by tests/fuzz/.
        let text = tool_output("perftest/write-bw-postlist-roce-gbits-8B.txt");
        let long = "1".repeat(70_000);
        for bad in [
            format!(" 8          {long}x        0.00               0.48   \t\t   7.498617"),
            format!(" 8          224958464        {long}x               0.48   \t\t   7.498617"),
        ] {
            let mut p = PerftestParser::new();
            let mut errors = Vec::new();
            for line in text.lines() {
                let line = if line.trim_start().starts_with("8 ") {
                    bad.as_str()
                } else {
                    line
                };
                if let Err(e) = p.push(line) {
                    errors.push(e);
                }
            }
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(
                errors[0].message.len() < 300,
                "{} bytes",
                errors[0].message.len()
            );
        }
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
        let test = r[0].test.as_ref().expect("banner");
        assert_eq!(test.title, "RDMA_Write Post List BW Test");
        assert_eq!(test.verb, "write");
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
        assert_eq!(r[2].test.as_ref().map(|t| t.verb.as_str()), Some("read"));
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

    /// Two tests in one session, as a script runs them: the latency table that follows the
    /// bandwidth one is latency, with its own test and device (the lines are perftest's
    /// `RESULT_FMT_G`/`REPORT_FMT` and `RESULT_FMT_LAT`/`REPORT_FMT_LAT` layouts).
    #[test]
    fn a_latency_table_after_a_bandwidth_table_is_latency() {
        let session = "\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             97.80              97.76\t\t     0.186464
---------------------------------------------------------------------------------------
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_1
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          1.23           4.56         1.27     \t       1.28        \t0.05   \t\t1.40    \t\t4.56   
---------------------------------------------------------------------------------------
";
        let mut p = PerftestParser::new();
        let items: Vec<Item> = session.lines().filter_map(|l| p.push(l).unwrap()).collect();
        assert_eq!(items.len(), 2, "{items:?}");
        let Item::Row(bw) = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(bw.bw_avg_gbit_per_s, 97.76);
        let Item::Lat(lat) = &items[1] else {
            panic!("{items:?}")
        };
        assert_eq!(lat.t_typical_us, Some(1.27));
        assert_eq!(lat.t_avg_us, Some(1.28));
        assert_eq!(lat.t_p99_us, Some(1.40));
        assert_eq!(lat.device.as_deref(), Some("mlx5_1"));
        assert_eq!(lat.test.as_ref().map(|t| t.verb.as_str()), Some("write"));
    }

    #[test]
    fn header_words_join_into_columns() {
        assert_eq!(
            header_columns(" #bytes #iterations    t_avg[usec]    tps average"),
            ["#bytes", "#iterations", "t_avg[usec]", "tps average"]
        );
        assert_eq!(
            header_columns(
                " #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
            ),
            [
                "#bytes",
                "#sl",
                "#iterations",
                "BW peak[Gb/sec]",
                "BW average[Gb/sec]",
                "MsgRate[Mpps]"
            ]
        );
        assert!(
            table_from_header(
                " #bytes #iterations  BW peak[GB/s]  BW average[GB/s]  MsgRate[Mpps]"
            )
            .is_err()
        );
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,120}", 0..30)) {
            let mut p = PerftestParser::new();
            let _ = p.push(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]");
            for l in &lines {
                let _ = p.push(l);
            }
            let _ = p.push(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]");
            for l in &lines {
                let _ = p.push(l);
            }
        }
    }
}
