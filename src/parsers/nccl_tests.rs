//! nccl-tests output (`all_reduce_perf`, `*_perf_mpi`, every version from v1 to 2.19): the
//! preamble, one row per message size, the trailer, and failures. The grammar is in
//! `shared/fixtures/INDEX.md`; rows are split on whitespace, never on fixed offsets, and the
//! columns are found by name in the table header (or, for a log that starts mid-table, by how
//! many fields a row has).

use super::LineError;

/// One placement (out-of-place or in-place) of a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Time per iteration in microseconds (`None` for `N/A`).
    pub time_us: Option<f64>,
    /// Algorithm bandwidth, GB/s (10^9 B/s).
    pub algbw_gb_per_s: Option<f64>,
    /// Bus bandwidth, GB/s.
    pub busbw_gb_per_s: Option<f64>,
    /// Wrong elements (`#wrong`); `None` for `N/A` (validation off) and for the pre-2.13
    /// `error` column, which is a float deviation rather than a count.
    pub wrong: Option<u64>,
    /// The pre-2.13 `error` column held a deviation: the data was checked, and the log's
    /// `Out of bounds values` line says whether it was within bounds.
    pub deviation: bool,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Message size in bytes.
    pub size_bytes: u64,
    /// Element count, as printed.
    pub elements: Option<u64>,
    /// Element type (`float`, `bfloat16`, …).
    pub dtype: String,
    /// Reduction op (`sum`, `none`…), where the table has the column.
    pub redop: Option<String>,
    /// Root rank (`-1`: none), where the table has the column.
    pub root: Option<i64>,
    /// Out-of-place figures.
    pub out_of_place: Placement,
    /// In-place figures, when the row has them.
    pub in_place: Option<Placement>,
}

/// What one line of output meant.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A test (re)started: its program name when the tool printed it.
    Started {
        /// e.g. `all_reduce_perf_mpi`.
        program: Option<String>,
        /// GPUs each process drives (`nThread × nGpus` of the `# nThread` line), when this is
        /// that line.
        gpus_per_process: Option<u32>,
    },
    /// A rank line in the device list (`#  Rank  3 Group 0 Pid … on host device 3 …`).
    Rank {
        /// Host name as printed.
        host: String,
        /// The rank number, where the line gives one.
        rank: Option<u32>,
    },
    /// A data row.
    Row(Row),
    /// `# Out of bounds values : N OK|FAILED`.
    OutOfBounds {
        /// Checks that found at least one wrong element.
        count: u64,
    },
    /// `# Avg bus bandwidth : X [OK|FAILED]`: the mean of every busbw of the table, both
    /// placements (nccl-tests' own figure, which contracts quote).
    AvgBusBw {
        /// GB/s.
        gb_per_s: f64,
        /// nccl-tests' own check against `NCCL_TESTS_MIN_BW`, when that was set.
        min_bw_ok: Option<bool>,
    },
    /// NCCL's own list of the RDMA devices it uses (`NCCL INFO NET/IB : Using [0]mlx5_0:1/IB
    /// [1]mlx5_1:1/IB … ; OOB …`, at INFO with the NET subsystem): how many.
    NetDevices {
        /// Devices listed (`[N]` entries before the `;`).
        count: u32,
    },
    /// A failure line (`Test NCCL failure …`, `Test CUDA failure …`, `NCCL failure …`).
    Failure {
        /// The line, trimmed.
        text: String,
    },
}

/// Where the figures sit in a row.
#[derive(Debug, Clone, PartialEq)]
struct Columns {
    /// Fields a row has.
    fields: usize,
    size: usize,
    /// The element count (`count`, v1's `N`).
    elements: Option<usize>,
    dtype: usize,
    /// The reduction op (`redop`, v1's `op`).
    redop: Option<usize>,
    root: Option<usize>,
    /// Index of `time` for each placement.
    placements: Vec<usize>,
    /// The validation column is a count (`#wrong`) rather than a deviation (`error`, `res`).
    wrong_is_count: bool,
}

impl Columns {
    /// The same layout with its (empty) `redop` cell gone.
    fn without_redop(&self) -> Columns {
        let Some(at) = self.redop else {
            return self.clone();
        };
        let shift = |i: usize| if i > at { i - 1 } else { i };
        Columns {
            fields: self.fields - 1,
            size: shift(self.size),
            elements: self.elements.map(shift),
            dtype: shift(self.dtype),
            redop: None,
            root: self.root.map(shift),
            placements: self.placements.iter().map(|&p| shift(p)).collect(),
            wrong_is_count: self.wrong_is_count,
        }
    }
}

/// Streaming parser: feed it lines in order.
#[derive(Debug, Default)]
pub struct NcclTestsParser {
    columns: Option<Columns>,
    line_no: usize,
}

/// Lines nccl-tests prints when a rank fails or times out (`common.h`'s CUDACHECK/NCCLCHECK,
/// `common.cu`'s timeout; v1's bare `NCCL failure`). The ` .. host pid N: Test failure` line
/// that follows each is the same failure's location, not another one.
fn is_failure(line: &str) -> bool {
    line.contains("Test NCCL failure")
        || line.contains("Test CUDA failure")
        || line.contains(": Test timeout (")
        || line.starts_with("NCCL failure")
}

/// A failure line from its host on: nccl-tests can print it in the middle of a row it had
/// begun (`2097152  32768  float  none  -1 node0: Test CUDA failure …`).
fn failure_text(line: &str) -> &str {
    let Some(at) = line.find(": Test ") else {
        return line;
    };
    let host_start = line[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1);
    &line[host_start..]
}

fn number(token: &str) -> Result<Option<f64>, String> {
    if token == "N/A" {
        return Ok(None);
    }
    match token.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        Ok(_) => Err(format!(
            "'{}' is not a finite number",
            super::excerpt(token)
        )),
        Err(_) => Err(format!("'{}' is not a number", super::excerpt(token))),
    }
}

impl NcclTestsParser {
    /// A parser at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line (its launcher prefix, if any, already taken off: see
    /// [`super::launcher`]); `Ok(None)` for lines that carry nothing (noise, headers, blank).
    pub fn push(&mut self, raw: &str) -> Result<Option<Item>, LineError> {
        self.line_no += 1;
        let line_no = self.line_no;
        let err = |message: String| LineError { line_no, message };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        if is_failure(trimmed) {
            return Ok(Some(Item::Failure {
                text: failure_text(trimmed).to_string(),
            }));
        }
        if let Some(body) = trimmed.strip_prefix('#') {
            return self.comment(body.trim()).map_err(err);
        }
        // v1 printed the nThread line and the trailer without '#'.
        if trimmed.starts_with("nThread ")
            || trimmed.starts_with("Out of bounds values")
            || trimmed.starts_with("Avg bus bandwidth")
        {
            return self.comment(trimmed).map_err(err);
        }
        // A launcher that labels each write can leave a label inside a row (NVIDIA/nccl#1453).
        let tokens: Vec<&str> = trimmed
            .split_whitespace()
            .filter(|t| !super::launcher::is_label_token(t))
            .collect();
        let looks_like_row = tokens.len() >= 8
            && tokens[0].bytes().all(|b| b.is_ascii_digit())
            && tokens[1].bytes().all(|b| b.is_ascii_digit());
        if !looks_like_row {
            if let Some(count) = net_devices(trimmed) {
                return Ok(Some(Item::NetDevices { count }));
            }
            // NCCL INFO/WARN, MPI chatter, perftest noise: not ours, and not the end of the table.
            return Ok(None);
        }
        self.row(&tokens).map(|r| Some(Item::Row(r))).map_err(err)
    }

    fn comment(&mut self, body: &str) -> Result<Option<Item>, String> {
        if let Some(program) = body.strip_prefix("Collective test starting:") {
            self.columns = None;
            return Ok(Some(Item::Started {
                program: Some(program.trim().to_string()),
                gpus_per_process: None,
            }));
        }
        if body.starts_with("nThread ") {
            self.columns = None;
            let mut it = body.split_whitespace();
            let mut value_of = |key: &str| -> Option<u32> {
                it.by_ref()
                    .skip_while(|t| *t != key)
                    .nth(1)
                    .and_then(|v| v.parse().ok())
            };
            let threads = value_of("nThread");
            let gpus = value_of("nGpus");
            return Ok(Some(Item::Started {
                program: None,
                gpus_per_process: threads.zip(gpus).map(|(t, g)| t.saturating_mul(g)),
            }));
        }
        if let Some(rest) = body.strip_prefix("Rank") {
            // "Rank  3 Group  0 Pid  123 on host device 3 [...]" (and older shapes): the host
            // follows "on".
            let rank = rest.split_whitespace().next().and_then(|r| r.parse().ok());
            let mut it = rest.split_whitespace();
            let host = it.by_ref().skip_while(|t| *t != "on").nth(1);
            return Ok(host.map(|h| Item::Rank {
                host: h.to_string(),
                rank,
            }));
        }
        if let Some(rest) = body.strip_prefix("Out of bounds values") {
            let value = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next();
            return match value.map(str::parse::<u64>) {
                Some(Ok(count)) => Ok(Some(Item::OutOfBounds { count })),
                _ => Err(format!(
                    "out-of-bounds trailer without a count: '{}'",
                    super::excerpt(body)
                )),
            };
        }
        if let Some(rest) = body.strip_prefix("Avg bus bandwidth") {
            let mut words = rest.trim_start_matches([' ', ':']).split_whitespace();
            let value = words.next().map(str::parse::<f64>);
            let min_bw_ok = match words.next() {
                Some("OK") => Some(true),
                Some("FAILED") => Some(false),
                _ => None,
            };
            return match value {
                Some(Ok(gb_per_s)) if gb_per_s.is_finite() => Ok(Some(Item::AvgBusBw {
                    gb_per_s,
                    min_bw_ok,
                })),
                _ => Err(format!(
                    "average trailer without a number: '{}'",
                    super::excerpt(body)
                )),
            };
        }
        let names: Vec<&str> = body.split_whitespace().collect();
        if names.contains(&"busbw") && names.contains(&"algbw") {
            self.columns = Some(columns_from_header(&names)?);
        }
        Ok(None)
    }

    fn row(&mut self, tokens: &[&str]) -> Result<Row, String> {
        let columns = match &self.columns {
            Some(c) if c.fields == tokens.len() => c.clone(),
            // `-S 1` adds a timestamp with a space in it after the in-place block.
            Some(c) if tokens.len() == c.fields + 2 => c.clone(),
            // Pre-2.13 tests without a reduction printed an empty `redop` cell (`%6s` of "").
            Some(c) if tokens.len() + 1 == c.fields && c.redop.is_some() => c.without_redop(),
            Some(c) => {
                return Err(format!(
                    "row has {} fields, the header has {}",
                    tokens.len(),
                    c.fields
                ));
            }
            None => columns_by_count(tokens.len()).ok_or_else(|| {
                format!(
                    "row of {} fields and no table header to say what they are",
                    tokens.len()
                )
            })?,
        };
        let size_bytes = tokens[columns.size].parse::<u64>().map_err(|_| {
            format!(
                "size '{}' is not a byte count",
                super::excerpt(tokens[columns.size])
            )
        })?;
        let mut placements = Vec::new();
        for &at in &columns.placements {
            let get = |i: usize| tokens.get(at + i).copied().ok_or("row ends early");
            let (wrong, deviation) = if columns.wrong_is_count {
                (number(get(3)?)?.map(|w| w.max(0.0).round() as u64), false)
            } else {
                // A deviation must still be a number (or N/A); it is not a count.
                (None, number(get(3)?)?.is_some())
            };
            placements.push(Placement {
                time_us: number(get(0)?)?,
                algbw_gb_per_s: number(get(1)?)?,
                busbw_gb_per_s: number(get(2)?)?,
                wrong,
                deviation,
            });
        }
        let mut it = placements.into_iter();
        let out_of_place = it.next().ok_or("row without figures")?;
        let at = |i: Option<usize>| i.and_then(|i| tokens.get(i)).copied();
        Ok(Row {
            size_bytes,
            elements: at(columns.elements).and_then(|t| t.parse().ok()),
            dtype: tokens[columns.dtype].to_string(),
            redop: at(columns.redop).map(str::to_string),
            root: at(columns.root).and_then(|t| t.parse().ok()),
            out_of_place,
            in_place: it.next(),
        })
    }
}

/// The devices of NCCL's `NET/IB : Using [0]mlx5_0:1/IB [1]… ; OOB …` line (NCCL's
/// `ncclIbInit`, also the RDMA plugins' `NET/IB`), counted by their `[N]` indices; `[RO]`
/// (relaxed ordering) is no device. `None`: not that line, or no device in it.
fn net_devices(line: &str) -> Option<u32> {
    let at = line
        .find("NET/IB : Using")
        .or_else(|| line.find("NET/IB: Using"))?;
    let list = line[at..].split(';').next()?;
    let count = list
        .split('[')
        .skip(1)
        .filter(|p| {
            p.split_once(']')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    // NCCL's IB transport keeps at most 32 devices (`MAX_IB_DEVS`, net_ib.cc): a longer list
    // is no list NCCL printed (a garbled or hostile line), and no count.
    u32::try_from(count)
        .ok()
        .filter(|c| (1..=MAX_IB_DEVS).contains(c))
}

/// NCCL's `MAX_IB_DEVS` (src/transport/net_ib.cc: 32 in current NCCL, 16 in older ones).
const MAX_IB_DEVS: u32 = 32;

fn columns_from_header(names: &[&str]) -> Result<Columns, String> {
    let find = |n: &str| names.iter().position(|x| *x == n);
    let size = find("size")
        .or_else(|| find("bytes"))
        .ok_or("table header without size")?;
    let dtype = find("type").ok_or("table header without type")?;
    let placements: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| matches!(**n, "time" | "cputime"))
        .map(|(i, _)| i)
        .collect();
    if placements.is_empty() {
        return Err("table header without time".into());
    }
    // Per-iteration columns (`-I 1`) or a timestamp only add fields after each block.
    let wrong_is_count = names.contains(&"#wrong");
    Ok(Columns {
        fields: names.len(),
        size,
        elements: find("count").or_else(|| find("N")),
        dtype,
        redop: find("redop").or_else(|| find("op")),
        root: find("root"),
        placements,
        wrong_is_count,
    })
}

/// The layouts a log that starts mid-table can have, told apart by their field count.
fn columns_by_count(n: usize) -> Option<Columns> {
    let (lead, wrong_is_count, redop, root) = match n {
        13 => (5, true, Some(3), Some(4)), // >= 2.13: size count type redop root
        12 => (4, false, Some(3), None),   // pre-2.13 all_reduce: size count type redop
        11 => (3, false, None, None),      // pre-2.13 all_gather: size count type
        _ => return None,
    };
    Some(Columns {
        fields: n,
        size: 0,
        elements: Some(1),
        dtype: 2,
        redop,
        root,
        placements: vec![lead, lead + 4],
        wrong_is_count,
    })
}

/// Bytes of one element of a type nccl-tests names.
fn type_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "int8" | "uint8" | "char" | "f8e4m3" | "f8e5m2" => 1,
        "half" | "bfloat16" | "float16" => 2,
        "float" | "int32" | "uint32" | "int" | "float32" => 4,
        "double" | "int64" | "uint64" | "float64" => 8,
        _ => return None,
    })
}

/// busbw/algbw as every nccl-tests version computes it (`AllReduceGetBw`): 2(n-1)/n for
/// all_reduce. The other collectives' factors changed between versions (a pre-2.13 DGX-2 log
/// in the corpus prints reduce_scatter with busbw = algbw, today's prints (n-1)/n), so they are
/// not checked. `None` when not all_reduce or no rank count.
pub fn bus_factor(collective: &str, ranks: u32) -> Option<f64> {
    if ranks == 0 || collective != "all_reduce" {
        return None;
    }
    let n = f64::from(ranks);
    Some(2.0 * (n - 1.0) / n)
}

/// Why a row's out-of-place busbw cannot be what nccl-tests printed for this collective and
/// rank count (it computes busbw from algbw by a fixed factor, [`bus_factor`]), or `None` when
/// it can be or cannot be told. Both are printed with two decimals, so each is off by up to 0.005.
pub fn inconsistent_busbw(row: &Row, collective: &str, ranks: u32) -> Option<String> {
    let factor = bus_factor(collective, ranks)?;
    let p = row.out_of_place;
    let (algbw, busbw) = (p.algbw_gb_per_s?, p.busbw_gb_per_s?);
    let expected = algbw * factor;
    let slack = 0.005 * factor + 0.005 + 1e-9;
    ((busbw - expected).abs() > slack).then(|| {
        format!(
            "busbw {busbw} is not algbw {algbw} x {factor:.4} ({collective}, {ranks} ranks) = \
             {expected:.2}: not a row nccl-tests computed; left out"
        )
    })
}

/// The collective a row comes from, told by its shape, for logs that do not name their test
/// (nccl-tests before 2.16 print no "Collective test starting" line). What tells them apart,
/// from how each test prints its row: a reduction op or `none`; a root or `-1`; whether the size
/// is the element count's bytes or that times the ranks (all_gather, reduce_scatter, alltoall,
/// gather and scatter print the count per rank); the bus factor busbw/algbw (2(n-1)/n for
/// all_reduce, 1 for sendrecv, which prints an op too, 0 on one rank); and which placements were
/// checked (alltoall never checks in place). Where those cannot tell — sendrecv against a 2-rank
/// all_reduce when the ranks are unknown, gather against scatter, all_gather against alltoall
/// with validation off, any 1-rank run without an op — `None`: the caller says `unknown`
/// rather than guess.
pub fn infer_collective(row: &Row, ranks: u32) -> Option<&'static str> {
    let ts = type_size(&row.dtype)?;
    let elements = row.elements?;
    let one = elements.checked_mul(ts)?;
    if one == 0 || row.size_bytes == 0 {
        return None;
    }
    let per_rank = row.size_bytes > one;
    let reduces = row
        .redop
        .as_deref()
        .is_some_and(|op| matches!(op, "sum" | "prod" | "max" | "min" | "avg" | "mulsum"));
    let rooted = row.root.is_some_and(|r| r >= 0);
    let p = row.out_of_place;
    // Two decimals tell the factor only once the bandwidth is large enough (0.01/0.01 says
    // nothing of 2(n-1)/n).
    let factor = match (p.algbw_gb_per_s, p.busbw_gb_per_s) {
        (Some(a), Some(b)) if a >= 1.0 => Some(b / a),
        _ => None,
    };
    Some(match (rooted, reduces, per_rank) {
        (true, true, false) => "reduce",
        (true, false, false) => "broadcast",
        (true, _, true) => return None,
        (false, true, true) => "reduce_scatter",
        (false, true, false) => match (ranks, factor) {
            (2, _) => "all_reduce",
            // One rank: no bus traffic at all; sendrecv's factor is always 1.
            (_, Some(f)) if !(0.02..=1.02).contains(&f) => "all_reduce",
            (r, Some(_)) if r > 2 => "sendrecv",
            _ => return None,
        },
        (false, false, _) => {
            let checked_in_place = row.in_place.map(|p| p.wrong.is_some());
            match (p.wrong.is_some(), checked_in_place, per_rank) {
                (true, Some(false), _) => "alltoall",
                (true, Some(true), true) => "all_gather",
                _ => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::fixtures::tool_output;
    use proptest::prelude::*;

    fn parse(rel: &str) -> (Vec<Item>, Vec<LineError>) {
        let mut p = NcclTestsParser::new();
        let mut items = Vec::new();
        let mut errors = Vec::new();
        for line in tool_output(&format!("nccl-tests/{rel}")).lines() {
            match p.push(super::super::launcher::strip(line).body) {
                Ok(Some(i)) => items.push(i),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        (items, errors)
    }

    /// NCCL's own list of the RDMA devices it uses, as 16 ranks of a real 2 × 8 H100 job on
    /// HPC-X's plugin printed it (eight `[N]mlx5_*:1/IB/SHARP` and `[RO]`); a list of none
    /// (`[RO]` only, a pod without RDMA: tests/corpus) is no count.
    #[test]
    fn nccl_names_the_rdma_devices_it_uses() {
        let text = std::fs::read_to_string(format!(
            "{}/tests/corpus/nccl-tests/allreduce-2x8h100-hpcx-rdma-plugin-v8-nccl-debug-info-ring-44gbps-underperform.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("corpus file");
        let mut p = NcclTestsParser::new();
        let counts: Vec<u32> = text
            .lines()
            .filter_map(|l| match p.push(l) {
                Ok(Some(Item::NetDevices { count })) => Some(count),
                _ => None,
            })
            .collect();
        assert_eq!(counts.len(), 16, "one line per rank");
        assert!(counts.iter().all(|c| *c == 8), "{counts:?}");
        assert_eq!(
            net_devices(
                "6e094e9a088e:147147:147211 [6] NCCL INFO NET/IB : Using [RO]; OOB podnet1:10.0.123.96<0>"
            ),
            None
        );
        assert_eq!(
            net_devices("NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0"),
            Some(2)
        );
        assert_eq!(net_devices("NET/IB : Using [x]y [1"), None);
        let flood: String = (0..40).map(|i| format!("[{i}]mlx5_{i}:1/IB ")).collect();
        assert_eq!(
            net_devices(&format!("NET/IB : Using {flood}; OOB")),
            None,
            "past MAX_IB_DEVS"
        );
    }

    fn rows(items: &[Item]) -> Vec<&Row> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Row(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn two_node_h100_run_reads_every_row_and_the_trailer() {
        let (items, errors) = parse("h100-2node-16rank-allreduce.txt");
        assert!(errors.is_empty(), "{errors:?}");
        let ranks = items
            .iter()
            .filter(|i| matches!(i, Item::Rank { .. }))
            .count();
        assert_eq!(ranks, 16);
        let r = rows(&items);
        assert_eq!(r.len(), 31);
        let last = r[30];
        assert_eq!(last.size_bytes, 8_589_934_592);
        assert_eq!(last.out_of_place.busbw_gb_per_s, Some(338.82));
        assert_eq!(last.out_of_place.time_us, Some(47535.0));
        assert_eq!(last.in_place.and_then(|p| p.busbw_gb_per_s), Some(337.35));
        assert_eq!(last.out_of_place.wrong, Some(0));
        assert!(items.contains(&Item::AvgBusBw {
            gb_per_s: 70.742,
            min_bw_ok: None
        }));
        assert!(items.contains(&Item::OutOfBounds { count: 0 }));
    }

    #[test]
    fn tagged_mpi_output_drops_the_tags_and_stderr() {
        let (items, errors) = parse("v2.18.0-tag-output-allreduce-2rank.txt");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            items[0],
            Item::Started {
                program: Some("all_reduce_perf_mpi".into()),
                gpus_per_process: None,
            }
        );
        let r = rows(&items);
        assert_eq!(r.len(), 8);
        assert_eq!(r[7].out_of_place.busbw_gb_per_s, Some(2.30));
        assert!(items.contains(&Item::AvgBusBw {
            gb_per_s: 1.57614,
            min_bw_ok: None
        }));
    }

    #[test]
    fn validation_off_means_no_wrong_count_not_zero() {
        let (items, errors) = parse("k80-2node-validation0-NA.txt");
        assert!(errors.is_empty(), "{errors:?}");
        let r = rows(&items);
        assert_eq!(r.len(), 11);
        assert!(r.iter().all(|r| r.out_of_place.wrong.is_none()));
        assert_eq!(r[10].out_of_place.time_us, Some(1_752_724.0));
    }

    #[test]
    fn alltoall_in_place_na_and_overflowing_columns() {
        let (items, errors) = parse("v2.13plus-alltoall-1gpu-inplace-NA-wide-algbw.txt");
        assert!(errors.is_empty(), "{errors:?}");
        let r = rows(&items);
        assert!(!r.is_empty());
        assert!(r.iter().all(|r| r.out_of_place.wrong == Some(0)));
        assert!(
            r.iter()
                .all(|r| r.in_place.is_some_and(|p| p.wrong.is_none()))
        );
        assert!(
            r.iter()
                .any(|r| r.in_place.and_then(|p| p.algbw_gb_per_s) == Some(43046.10))
        );
    }

    #[test]
    fn an_aborted_run_without_header_still_reads_rows_and_failures() {
        let (items, errors) = parse("multinode-abort-test-nccl-failure-partial.txt");
        assert!(errors.is_empty(), "{errors:?}");
        let r = rows(&items);
        assert_eq!(r.len(), 5);
        assert_eq!(r[4].size_bytes, 17_179_869_184);
        assert_eq!(r[4].out_of_place.busbw_gb_per_s, Some(367.29));
        let failures = items
            .iter()
            .filter(|i| matches!(i, Item::Failure { .. }))
            .count();
        assert_eq!(failures, 4);
        assert!(!items.iter().any(|i| matches!(i, Item::AvgBusBw { .. })));
    }

    #[test]
    fn pre_2_13_error_column_is_not_a_wrong_count() {
        let (items, errors) = parse("pre2.13-allreduce-128gpu-error-column-1e-06-partial.txt");
        assert!(errors.is_empty(), "{errors:?}");
        let r = rows(&items);
        assert_eq!(r.len(), 6);
        assert!(r.iter().all(|r| r.out_of_place.wrong.is_none()));
        assert_eq!(r[5].out_of_place.busbw_gb_per_s, Some(2.15));
        let (items, errors) = parse("pre2.13-allgather-2gpu-error-column-0e+00-partial.txt");
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!rows(&items).is_empty());
    }

    #[test]
    fn v1_failure_and_every_other_fixture_parse_cleanly() {
        let (items, errors) = parse("v1-era-header-nccl-failure.txt");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            items
                .iter()
                .filter(|i| matches!(i, Item::Rank { .. }))
                .count(),
            8
        );
        assert!(matches!(items.last(), Some(Item::Failure { .. })));
        for f in [
            "gb200-nvl72-72rank-allreduce-tail.txt",
            "v2.13plus-reducescatter-2node-zero-size-rows-partial.txt",
            "v2.18.0-tag-output-allgather-2rank.txt",
        ] {
            let (items, errors) = parse(f);
            assert!(errors.is_empty(), "{f}: {errors:?}");
            assert!(!rows(&items).is_empty(), "{f}: no rows");
        }
    }

    #[test]
    fn a_row_that_disagrees_with_its_header_is_a_line_error() {
        let mut p = NcclTestsParser::new();
        p.push("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong").unwrap();
        let e = p
            .push("        8             2     float     sum      -1    135.8    0.00    0.00")
            .unwrap_err();
        assert_eq!(e.line_no, 2);
        assert!(e.message.contains("8 fields"), "{e}");
    }

    #[test]
    fn a_line_error_quotes_no_whole_cell() {
        // A 5000-digit time cell came back whole in the error; found by tests/fuzz/.
        let mut p = NcclTestsParser::new();
        p.push("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong").unwrap();
        let long = format!("0.{}", "0".repeat(5000));
        for row in [
            format!("1024 256 float sum -1 {long}x 0.01 0.01 0 5.0 0.01 0.01 0"),
            format!(
                "{} 256 float sum -1 5.0 0.01 0.01 0 5.0 0.01 0.01 0",
                "9".repeat(5000)
            ),
            format!("# Avg bus bandwidth    : {long}x"),
            format!("# Out of bounds values : {long}x"),
        ] {
            let e = p.push(&row).unwrap_err();
            assert!(e.message.len() < 300, "{} bytes: {e}", e.message.len());
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(lines in proptest::collection::vec(".{0,200}", 0..40)) {
            let mut p = NcclTestsParser::new();
            for l in &lines {
                let _ = p.push(l);
            }
        }

        #[test]
        fn row_shaped_garbage_never_panics(fields in proptest::collection::vec("[0-9N/A.e+-]{1,8}", 8..16)) {
            let mut p = NcclTestsParser::new();
            let _ = p.push(&fields.join(" "));
        }
    }
}
