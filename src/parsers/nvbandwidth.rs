//! nvbandwidth output (v0.2 to v0.10, single-node and the multinode build): one matrix per test
//! case, closed by its `SUM` (or `&&&& PERF`) line, plus waived tests and errors. As
//! `output.cpp` and `inline_common.h` print it:
//!
//! - `Running <testcase>.`, then a description ending in its unit: `… bandwidth (GB/s)` or, for
//!   the latency test cases (`host_device_latency_sm`, `device_to_device_latency_sm`), `… (ns)`.
//!   The bisect test case's description names no unit (`… simultaneous write CE BW`): GB/s.
//! - The matrix: column ids, then rows of a row label and values (`%10.2f` or `N/A`). Labels
//!   are ids, or `a->b` for the multinode bisect test (one column); multinode test cases
//!   (`multinode_device_to_device_*`) number their processes across the whole NVLink domain.
//! - `SUM <key> <value>` (or `&&&& PERF <key> <value> +GB/s|-ns` with `--perfFormatter`); a
//!   bidirectional SM test case prints three matrices, keyed `<testcase>_read1`, `_read2`,
//!   `_total`. Verbose mode adds `MIN/MAX/AVG`, v0.10 `COEFFICIENT_OF_VARIATION`.
//! - `Waiving <testcase>.` (v0.2) or `Waived: <msg>` (v0.7+, often with an empty message and no
//!   `Running` line before it); `Error: <msg>`, `ERROR: <msg>`, `ASSERT …`.
//!
//! A matrix is reported when its `SUM` arrives, because its key is only certain then (a log may
//! start mid-test). Failures are the error macros' lines (`ASSERT in expression …`,
//! `NVML_ERROR: […] in expression …`, `[cudaError…] … in expression …`).
//!
//! `-j` prints one JSON document at the end instead (`json_output.cpp`): `{"nvbandwidth":
//! {"testcases": [{"name", "status": Passed|Waived|Error, "bandwidth_description",
//! "bandwidth_matrix": [["N/A", "276.07", …]], "sum"}…]}}`, cells as strings; v0.8 appends a
//! waived or failed case as a second entry of the same name. It is read whole at the end (up to
//! [`MAX_JSON_BYTES`]).

use super::LineError;

/// What a matrix's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// GB/s (10^9 B/s).
    GbPerS,
    /// Nanoseconds (latency test cases).
    Ns,
}

impl Unit {
    /// As printed after a figure.
    pub fn label(self) -> &'static str {
        match self {
            Unit::GbPerS => "GB/s",
            Unit::Ns => "ns",
        }
    }
}

/// One measured cell: from `row` to `col` (GPU or process ids, or 0 for the host row of host
/// tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Row id.
    pub row: u32,
    /// Column id.
    pub col: u32,
    /// The value, in the matrix's unit.
    pub value: f64,
}

/// What a line completed.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A finished matrix.
    Matrix {
        /// The matrix's key, e.g. `device_to_device_memcpy_write_ce` or
        /// `device_to_device_bidirectional_memcpy_read_sm_total`.
        test: String,
        /// What the values are.
        unit: Unit,
        /// Measured cells (the `N/A` diagonal left out).
        cells: Vec<Cell>,
        /// The tool's own sum (`None` when the log ended before it).
        sum: Option<f64>,
    },
    /// A test the tool skipped (no P2P, not enough GPUs).
    Waived {
        /// The test case when the log names it, else the tool's message.
        text: String,
    },
    /// A failure (`ASSERT`, `Error:`, a pattern check that failed).
    Failure {
        /// The line, trimmed.
        text: String,
    },
}

/// The largest `-j` document read (a 72-process multinode run's matrices are well under it).
pub const MAX_JSON_BYTES: usize = 16 << 20;

/// Streaming parser.
#[derive(Debug, Default)]
pub struct NvbandwidthParser {
    /// `-j` output, kept until the end (`None`: not JSON).
    json: Option<String>,
    /// The test case named by the last `Running …` line.
    running: Option<String>,
    /// A matrix of that test case was closed: a `Waived:` now is about another one.
    closed_one: bool,
    /// The matrix is GPU to GPU, so its diagonal is not a measurement (`N/A` or `0.00`).
    peer_matrix: bool,
    unit: Option<Unit>,
    columns: Vec<u32>,
    cells: Vec<Cell>,
    line_no: usize,
}

/// A row label: an id, or `a->b` (the bisect test's pairs).
fn row_label(token: &str) -> Option<(u32, Option<u32>)> {
    if let Some((a, b)) = token.split_once("->") {
        return Some((a.trim().parse().ok()?, Some(b.trim().parse().ok()?)));
    }
    token.parse().ok().map(|r| (r, None))
}

impl NvbandwidthParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    fn close(&mut self, key: Option<&str>, sum: Option<f64>) -> Option<Item> {
        let unit = self.unit.take().unwrap_or(Unit::GbPerS);
        let running = self.running.take();
        self.columns.clear();
        self.peer_matrix = false;
        let test = key.map(str::to_string).or(running)?;
        let cells = std::mem::take(&mut self.cells);
        if cells.is_empty() && sum.is_none() {
            return None;
        }
        Some(Item::Matrix {
            test,
            unit,
            cells,
            sum,
        })
    }

    /// Read one line.
    pub fn push(&mut self, raw: &str) -> Result<Option<Item>, LineError> {
        self.line_no += 1;
        let line = raw.trim();
        let line_no = self.line_no;
        let err = |message: String| LineError { line_no, message };
        if let Some(doc) = &mut self.json {
            if doc.len() + raw.len() < MAX_JSON_BYTES {
                doc.push_str(raw);
                doc.push('\n');
            }
            return Ok(None);
        }
        if line == "{" && self.running.is_none() && self.columns.is_empty() {
            self.json = Some("{\n".into());
            return Ok(None);
        }
        if line.is_empty() {
            return Ok(None);
        }
        if let Some(rest) = line.strip_prefix("Running ") {
            let unfinished = if self.running.is_some() {
                self.close(None, None)
            } else {
                None
            };
            self.running = Some(rest.trim_end_matches('.').to_string());
            self.closed_one = false;
            return Ok(unfinished);
        }
        if line.contains("(row)") && line.contains("(column)") || line.starts_with("Bisect ") {
            self.peer_matrix = line.contains("GPU(row)") && line.contains("GPU(column)");
            self.unit = Some(if line.ends_with("(ns)") {
                Unit::Ns
            } else {
                Unit::GbPerS
            });
            // A test case with several matrices (read1, read2, total) keeps its name.
            self.columns.clear();
            self.cells.clear();
            return Ok(None);
        }
        if let Some(rest) = line.strip_prefix("Waiving ") {
            return Ok(Some(Item::Waived {
                text: rest.trim_end_matches('.').to_string(),
            }));
        }
        if let Some(rest) = line.strip_prefix("Waived:") {
            let msg = rest.trim();
            let running = self.running.take().filter(|_| !self.closed_one);
            let text = match (running, msg.is_empty()) {
                (Some(t), true) => t,
                (Some(t), false) => format!("{t}: {msg}"),
                (None, true) => "a test case (nvbandwidth does not say which)".into(),
                (None, false) => msg.to_string(),
            };
            return Ok(Some(Item::Waived { text }));
        }
        if line.starts_with("ASSERT")
            || line.starts_with("Error:")
            || line.starts_with("ERROR:")
            || line.starts_with("Invalid value")
            || line.contains(" in expression ")
        {
            return Ok(Some(Item::Failure {
                text: line.to_string(),
            }));
        }
        let closing = line
            .strip_prefix("SUM ")
            .or_else(|| line.strip_prefix("&&&& PERF "));
        if let Some(rest) = closing {
            let mut it = rest.split_whitespace();
            let (Some(test), Some(value)) = (it.next(), it.next()) else {
                return Err(err(format!("SUM line without test and value: '{line}'")));
            };
            let sum = match value.parse::<f64>() {
                Ok(v) if v.is_finite() => v,
                _ => {
                    return Err(err(format!(
                        "SUM value '{}' is not a number",
                        super::excerpt(value)
                    )));
                }
            };
            if let Some(unit) = it.next() {
                self.unit = Some(if unit.ends_with("ns") {
                    Unit::Ns
                } else {
                    Unit::GbPerS
                });
            }
            let running = self.running.clone();
            let item = self.close(Some(test), Some(sum));
            // The next matrix of the same test case (read2 after read1) keeps the name.
            self.running = running;
            self.closed_one = true;
            return Ok(item);
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let all_ids = tokens.iter().all(|t| t.parse::<u32>().is_ok());
        if all_ids && self.columns.is_empty() {
            // The matrix header: column ids.
            self.columns = tokens.iter().filter_map(|t| t.parse().ok()).collect();
            return Ok(None);
        }
        if self.columns.is_empty() {
            return Ok(None);
        }
        let Some((row, paired)) = row_label(tokens[0]) else {
            // MIN/MAX/AVG, COEFFICIENT_OF_VARIATION, descriptions: not cells.
            return Ok(None);
        };
        let values = &tokens[1..];
        if values.len() != self.columns.len() {
            return Err(err(format!(
                "row {} has {} values for {} columns",
                tokens[0],
                values.len(),
                self.columns.len()
            )));
        }
        for (col, v) in self.columns.iter().zip(values) {
            let col = paired.unwrap_or(*col);
            if *v == "N/A" || (self.peer_matrix && col == row) {
                continue;
            }
            let value = match v.parse::<f64>() {
                Ok(x) if x.is_finite() => x,
                _ => return Err(err(format!("'{}' is not a number", super::excerpt(v)))),
            };
            self.cells.push(Cell { row, col, value });
        }
        Ok(None)
    }

    /// The end of the log: a matrix whose `SUM` never came (a fragment, a crash) is still
    /// reported, without a sum; a `-j` document is read now.
    pub fn finish(&mut self) -> Vec<Item> {
        if let Some(doc) = self.json.take() {
            return json_items(&doc);
        }
        if self.running.is_none() {
            return Vec::new();
        }
        self.close(None, None).into_iter().collect()
    }
}

/// The items of a `-j` document.
fn json_items(doc: &str) -> Vec<Item> {
    let v: serde_json::Value = match serde_json::from_str(doc) {
        Ok(v) => v,
        Err(e) => {
            return vec![Item::Failure {
                text: format!("nvbandwidth -j output that is not whole JSON: {e}"),
            }];
        }
    };
    let root = &v["nvbandwidth"];
    let mut out = Vec::new();
    if let Some(e) = root["error"].as_str() {
        out.push(Item::Failure {
            text: crate::model::fit(e, 200),
        });
    }
    for case in root["testcases"].as_array().into_iter().flatten() {
        let name = case["name"].as_str().unwrap_or("?").to_string();
        match case["status"].as_str() {
            Some("Waived") => out.push(Item::Waived { text: name }),
            Some("Error") | Some("Not Found") => out.push(Item::Failure {
                text: format!(
                    "nvbandwidth {name}: {}",
                    case["error"].as_str().unwrap_or("error")
                ),
            }),
            _ => {
                let desc = case["bandwidth_description"].as_str().unwrap_or("").trim();
                let unit = if desc.ends_with("(ns)") {
                    Unit::Ns
                } else {
                    Unit::GbPerS
                };
                let peer = desc.contains("GPU(row)") && desc.contains("GPU(column)");
                let mut cells = Vec::new();
                let rows = case["bandwidth_matrix"].as_array().into_iter().flatten();
                for (r, row) in rows.enumerate() {
                    for (c, cell) in row.as_array().into_iter().flatten().enumerate() {
                        let (r, c) = (r as u32, c as u32);
                        let value = cell
                            .as_str()
                            .and_then(|s| s.trim().parse::<f64>().ok())
                            .or_else(|| cell.as_f64())
                            .filter(|v| v.is_finite());
                        if let Some(value) = value.filter(|_| !(peer && r == c)) {
                            cells.push(Cell {
                                row: r,
                                col: c,
                                value,
                            });
                        }
                    }
                }
                out.push(Item::Matrix {
                    test: name,
                    unit,
                    cells,
                    sum: case["sum"].as_f64().filter(|v| v.is_finite()),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;
    use proptest::prelude::*;

    fn items(rel: &str) -> Vec<Item> {
        let mut p = NvbandwidthParser::new();
        let mut out: Vec<Item> = tool_output(&format!("nvbandwidth/{rel}"))
            .lines()
            .filter_map(|l| p.push(l).unwrap_or_else(|e| panic!("{rel}: {e}")))
            .collect();
        out.extend(p.finish());
        out
    }

    #[test]
    fn a_line_error_quotes_no_whole_value() {
        // A 70000-digit SUM came back whole in the error; found by tests/fuzz/.
        let long = "1".repeat(70_000);
        for bad in [
            format!("0     {long}x     25.94"),
            format!("SUM host_to_device_memcpy_ce {long}x"),
        ] {
            let mut p = NvbandwidthParser::new();
            p.push("Running host_to_device_memcpy_ce.").unwrap();
            p.push("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)")
                .unwrap();
            p.push("          0         1").unwrap();
            if bad.starts_with("SUM") {
                p.push("0     26.03     25.94").unwrap();
            }
            let e = p.push(&bad).unwrap_err();
            assert!(e.message.len() < 300, "{} bytes: {e}", e.message.len());
        }
    }

    #[test]
    fn eight_gpu_read_matrix() {
        let i = items("v0.2-h800-8gpu-d2d-read-ce.txt");
        let [
            Item::Matrix {
                test,
                unit,
                cells,
                sum,
            },
        ] = i.as_slice()
        else {
            panic!("{i:?}")
        };
        assert_eq!(test, "device_to_device_memcpy_read_ce");
        assert_eq!(*unit, Unit::GbPerS);
        assert_eq!(cells.len(), 56, "8x8 without the diagonal");
        assert_eq!(*sum, Some(9642.08));
        assert_eq!(
            cells[0],
            Cell {
                row: 0,
                col: 1,
                value: 172.32
            }
        );
        let total: f64 = cells.iter().map(|c| c.value).sum();
        assert!((total - 9642.08).abs() < 0.05, "{total}");
    }

    #[test]
    fn right_aligned_row_ids_and_elided_device_list() {
        let i = items("v0.8-a6000-6gpu-d2d-read-ce-pcie.txt");
        let [Item::Matrix { cells, .. }] = i.as_slice() else {
            panic!("{i:?}")
        };
        assert_eq!(cells.len(), 30);
        assert!(
            cells
                .iter()
                .any(|c| c.row == 5 && c.col == 4 && c.value == 26.35)
        );
    }

    #[test]
    fn every_test_case_of_a_full_run() {
        let i = items("v0.2-h800-8gpu-all-testcases.txt");
        let tests: Vec<&str> = i
            .iter()
            .filter_map(|x| match x {
                Item::Matrix { test, .. } => Some(test.as_str()),
                _ => None,
            })
            .collect();
        assert!(tests.len() >= 8, "{tests:?}");
        assert_eq!(tests[0], "host_to_device_memcpy_ce");
        assert!(tests.contains(&"device_to_device_memcpy_write_ce"));
    }

    #[test]
    fn waived_and_failed_runs_say_so() {
        assert_eq!(
            items("v0.2-rtx2080ti-2gpu-waived.txt"),
            [Item::Waived {
                text: "device_to_device_memcpy_write_ce".into()
            }]
        );
        let i = items("v0.7-a100-8gpu-assert-error.txt");
        assert!(i.iter().all(|x| matches!(x, Item::Failure { .. })));
        assert_eq!(i.len(), 2);
        // A fragment without SUM, whose diagonal reads 0.00: 56 cells, no zeros.
        let i = items("readme-example-d2d-write-ce-fragment.txt");
        let [
            Item::Matrix {
                test,
                cells,
                sum: None,
                ..
            },
        ] = i.as_slice()
        else {
            panic!("{i:?}")
        };
        assert_eq!(test, "device_to_device_memcpy_write_ce");
        assert_eq!(cells.len(), 56);
        assert!(cells.iter().all(|c| c.value > 270.0));
        let i = items("v0.10-fixture-2gpu-with-cov.txt");
        assert_eq!(i.len(), 3, "{i:?}");
    }

    /// The latency and bisect shapes, as `testcases_sm.cpp` and `multinode_testcases.cpp` print
    /// them through `inline_common.h`'s matrix writer.
    #[test]
    fn latency_is_nanoseconds_and_bisect_rows_name_their_pair() {
        let text = "\
Running device_to_device_latency_sm.
Device to Device Latency SM GPU(row) <-> GPU(column) (ns)
           0         1
 0       N/A    812.31
 1    809.77       N/A

SUM device_to_device_latency_sm 1622.08
Running multinode_bisect_write_ce.
Bisect benchmarking, simultaneous write CE BW
             0
 0->2    701.10
 1->3    700.95
 2->0    699.80
 3->1    702.00

SUM multinode_bisect_write_ce 2803.85
";
        let mut p = NvbandwidthParser::new();
        let got: Vec<Item> = text.lines().filter_map(|l| p.push(l).unwrap()).collect();
        let [
            Item::Matrix {
                unit: Unit::Ns,
                cells: lat,
                ..
            },
            Item::Matrix {
                test,
                unit: Unit::GbPerS,
                cells: bisect,
                ..
            },
        ] = got.as_slice()
        else {
            panic!("{got:?}")
        };
        assert_eq!(lat.len(), 2);
        assert_eq!(lat[0].value, 812.31);
        assert_eq!(test, "multinode_bisect_write_ce");
        assert_eq!(
            (bisect[1].row, bisect[1].col, bisect[1].value),
            (1, 3, 700.95)
        );
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,120}", 0..30)) {
            let mut p = NvbandwidthParser::new();
            let _ = p.push("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)");
            let _ = p.push("          0         1");
            for l in &lines {
                let _ = p.push(l);
            }
            let _ = p.finish();
        }
    }
}
