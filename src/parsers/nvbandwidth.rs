//! nvbandwidth output (v0.2 to v0.10): one matrix per test case, closed by its `SUM` line, plus
//! waived tests and verification failures. A matrix is reported when its `SUM` arrives, because
//! the test's name is only certain then (a log may start mid-test).

use super::LineError;

/// One measured cell: from `row` to `col` (GPU ids, or 0 for the host row of host tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Row id.
    pub row: u32,
    /// Column id.
    pub col: u32,
    /// GB/s (10^9 B/s).
    pub gb_per_s: f64,
}

/// What a line completed.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A finished test case.
    Matrix {
        /// e.g. `device_to_device_memcpy_write_ce`.
        test: String,
        /// Measured cells (the `N/A` diagonal left out).
        cells: Vec<Cell>,
        /// The tool's own sum (`None` when the log ended before it).
        sum_gb_per_s: Option<f64>,
    },
    /// A test the tool skipped (no P2P, not enough GPUs).
    Waived {
        /// Test name or the tool's message.
        text: String,
    },
    /// A failure (`ASSERT`, `Error:`, a pattern check that failed).
    Failure {
        /// The line, trimmed.
        text: String,
    },
}

/// Streaming parser.
#[derive(Debug, Default)]
pub struct NvbandwidthParser {
    /// The test named by the last `Running …` line.
    running: Option<String>,
    /// The matrix is GPU to GPU, so its diagonal is not a measurement (`N/A` or `0.00`).
    peer_matrix: bool,
    columns: Vec<u32>,
    cells: Vec<Cell>,
    line_no: usize,
}

impl NvbandwidthParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line.
    pub fn push(&mut self, raw: &str) -> Result<Option<Item>, LineError> {
        self.line_no += 1;
        let line = raw.trim();
        let line_no = self.line_no;
        let err = |message: String| LineError { line_no, message };
        if line.is_empty() {
            return Ok(None);
        }
        if let Some(rest) = line.strip_prefix("Running ") {
            let unfinished = self.finish();
            self.running = Some(rest.trim_end_matches('.').to_string());
            return Ok(unfinished);
        }
        if line.contains("(row)") && line.contains("(column)") {
            self.peer_matrix = line.contains("GPU(row)") && line.contains("GPU(column)");
            return Ok(None);
        }
        if let Some(rest) = line.strip_prefix("Waiving ") {
            return Ok(Some(Item::Waived {
                text: rest.trim_end_matches('.').to_string(),
            }));
        }
        if let Some(rest) = line.strip_prefix("Waived:") {
            return Ok(Some(Item::Waived {
                text: rest.trim().to_string(),
            }));
        }
        if line.starts_with("ASSERT")
            || line.starts_with("Error:")
            || line.starts_with("Invalid value")
        {
            return Ok(Some(Item::Failure {
                text: line.to_string(),
            }));
        }
        if let Some(rest) = line.strip_prefix("SUM ") {
            let mut it = rest.split_whitespace();
            let (Some(test), Some(value)) = (it.next(), it.next()) else {
                return Err(err(format!("SUM line without test and value: '{line}'")));
            };
            let sum_gb_per_s = value
                .parse::<f64>()
                .map_err(|_| err(format!("SUM value '{value}' is not a number")))?;
            self.columns.clear();
            self.running = None;
            return Ok(Some(Item::Matrix {
                test: test.to_string(),
                cells: std::mem::take(&mut self.cells),
                sum_gb_per_s: Some(sum_gb_per_s),
            }));
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
        let Ok(row) = tokens[0].parse::<u32>() else {
            // MIN/MAX/AVG, COEFFICIENT_OF_VARIATION, descriptions: not cells.
            return Ok(None);
        };
        let values = &tokens[1..];
        if values.len() != self.columns.len() {
            return Err(err(format!(
                "row {row} has {} values for {} columns",
                values.len(),
                self.columns.len()
            )));
        }
        for (col, v) in self.columns.iter().zip(values) {
            if *v == "N/A" || (self.peer_matrix && *col == row) {
                continue;
            }
            let gb_per_s = v
                .parse::<f64>()
                .map_err(|_| err(format!("'{v}' is not a bandwidth")))?;
            self.cells.push(Cell {
                row,
                col: *col,
                gb_per_s,
            });
        }
        Ok(None)
    }

    /// The end of the log: a matrix whose `SUM` never came (a fragment, a crash) is still
    /// reported, without a sum.
    pub fn finish(&mut self) -> Option<Item> {
        let test = self.running.take()?;
        self.columns.clear();
        if self.cells.is_empty() {
            return None;
        }
        Some(Item::Matrix {
            test,
            cells: std::mem::take(&mut self.cells),
            sum_gb_per_s: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tool_output;
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
    fn eight_gpu_read_matrix() {
        let i = items("v0.2-h800-8gpu-d2d-read-ce.txt");
        let [
            Item::Matrix {
                test,
                cells,
                sum_gb_per_s,
            },
        ] = i.as_slice()
        else {
            panic!("{i:?}")
        };
        assert_eq!(test, "device_to_device_memcpy_read_ce");
        assert_eq!(cells.len(), 56, "8x8 without the diagonal");
        assert_eq!(*sum_gb_per_s, Some(9642.08));
        assert_eq!(
            cells[0],
            Cell {
                row: 0,
                col: 1,
                gb_per_s: 172.32
            }
        );
        let sum: f64 = cells.iter().map(|c| c.gb_per_s).sum();
        assert!((sum - 9642.08).abs() < 0.05, "{sum}");
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
                .any(|c| c.row == 5 && c.col == 4 && c.gb_per_s == 26.35)
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
                sum_gb_per_s: None,
            },
        ] = i.as_slice()
        else {
            panic!("{i:?}")
        };
        assert_eq!(test, "device_to_device_memcpy_write_ce");
        assert_eq!(cells.len(), 56);
        assert!(cells.iter().all(|c| c.gb_per_s > 270.0));
        let i = items("v0.10-fixture-2gpu-with-cov.txt");
        assert_eq!(i.len(), 3, "{i:?}");
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,120}", 0..30)) {
            let mut p = NvbandwidthParser::new();
            let _ = p.push("          0         1");
            for l in &lines {
                let _ = p.push(l);
            }
        }
    }
}
