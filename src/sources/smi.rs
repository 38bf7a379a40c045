//! Telemetry without an agent: `nvidia-smi --query-gpu=… --format=csv,noheader,nounits -lms N`
//! over SSH (nvidia-smi ships with every driver). Columns are mapped by the position of the
//! fields we asked for; a header line, when one comes (a replay, or `--format=csv`), re-maps them
//! by name, so older aliases (`clocks_throttle_reasons.*`, `power.draw`) and units (`614.26 W`)
//! parse too. Any `[...]` cell and a bare `N/A` is "no value" (shared/fixtures/INDEX.md).

use crate::model::{GpuInfo, GpuSample, NodeFrame, NodeHello, UnixMillis};
use crate::wire::{Garbled, WireMessage};

/// Fields asked of drivers that know the current names (R535+).
pub const MODERN_FIELDS: &[&str] = &[
    "index",
    "uuid",
    "name",
    "power.draw.average",
    "power.draw.instant",
    "enforced.power.limit",
    "temperature.gpu",
    "utilization.gpu",
    "clocks.current.sm",
    "clocks.max.sm",
    "clocks.current.memory",
    "memory.used",
    "memory.total",
    "clocks_event_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "driver_version",
    // What identifies the GPU to its vendor (the report's node table): constant, but one
    // query keeps the stream one process.
    "serial",
    "pci.bus_id",
    "vbios_version",
];

/// Fields for older drivers (when the modern query says a field is not valid).
pub const LEGACY_FIELDS: &[&str] = &[
    "index",
    "uuid",
    "name",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "utilization.gpu",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "memory.used",
    "memory.total",
    "clocks_throttle_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "driver_version",
    // What identifies the GPU to its vendor (the report's node table): constant, but one
    // query keeps the stream one process.
    "serial",
    "pci.bus_id",
    "vbios_version",
];

/// What nvidia-smi prints when a field of the query is unknown to the driver.
pub const INVALID_FIELD_MARK: &str = "is not a valid field to query";

/// The nvidia-smi command line for `fields` every `interval_ms`.
pub fn query_argv(fields: &[&str], period: crate::model::units::Period) -> Vec<String> {
    vec![
        "nvidia-smi".into(),
        format!("--query-gpu={}", fields.join(",")),
        "--format=csv,noheader,nounits".into(),
        "-lms".into(),
        period.millis().to_string(),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Index,
    Uuid,
    Name,
    PowerAvg,
    PowerInstant,
    PowerLimit,
    Temperature,
    Utilization,
    SmClock,
    SmClockMax,
    MemClock,
    MemUsedMib,
    MemTotalMib,
    Reasons,
    EccCorrected,
    EccUncorrected,
    DriverVersion,
    Serial,
    PciBusId,
    Vbios,
    Ignored,
}

fn column(name: &str) -> Col {
    // "power.draw [W]" → "power.draw"
    let name = name.split(" [").next().unwrap_or(name).trim();
    match name {
        "index" => Col::Index,
        "uuid" | "gpu_uuid" => Col::Uuid,
        "name" | "gpu_name" => Col::Name,
        "power.draw" | "power.draw.average" | "gpu.power.draw.average" => Col::PowerAvg,
        "power.draw.instant" | "gpu.power.draw.instant" => Col::PowerInstant,
        "enforced.power.limit" | "gpu.power.current_limit" | "power.limit" => Col::PowerLimit,
        "temperature.gpu" => Col::Temperature,
        "utilization.gpu" => Col::Utilization,
        "clocks.current.sm" | "clocks.sm" => Col::SmClock,
        "clocks.max.sm" => Col::SmClockMax,
        "clocks.current.memory" | "clocks.mem" => Col::MemClock,
        "memory.used" => Col::MemUsedMib,
        "memory.total" => Col::MemTotalMib,
        "clocks_event_reasons.active" | "clocks_throttle_reasons.active" => Col::Reasons,
        "ecc.errors.corrected.volatile.total" => Col::EccCorrected,
        "ecc.errors.uncorrected.volatile.total" => Col::EccUncorrected,
        "driver_version" => Col::DriverVersion,
        "serial" | "gpu_serial" => Col::Serial,
        "pci.bus_id" | "gpu_bus_id" => Col::PciBusId,
        "vbios_version" => Col::Vbios,
        _ => Col::Ignored,
    }
}

/// Whether a header cell is shaped like a `--query-gpu` field (`power.draw [W]`,
/// `clocks_throttle_reasons.supported`): a letter first, then letters, digits, `.` and `_`.
pub fn is_field_name(cell: &str) -> bool {
    let name = cell.split(" [").next().unwrap_or(cell).trim();
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
}

/// A cell's value: `None` for `[...]` and `N/A`; units after the number are dropped.
fn cell(raw: &str) -> Option<&str> {
    let v = raw.trim();
    if v.is_empty() || v.starts_with('[') || v.eq_ignore_ascii_case("n/a") {
        return None;
    }
    Some(v)
}

fn number(raw: &str) -> Option<f64> {
    let v = cell(raw)?;
    let first = v.split_whitespace().next()?;
    first.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn hex_or_int(raw: &str) -> Option<u64> {
    let v = cell(raw)?;
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.split_whitespace().next()?.parse().ok(),
    }
}

/// Turns nvidia-smi CSV lines into hello and frame messages.
#[derive(Debug, Clone)]
pub struct SmiDecoder {
    node: String,
    columns: Vec<Col>,
    expected_gpus: u32,
    rows: Vec<(GpuSample, GpuInfo)>,
    /// The driver version the rows carry (`driver_version`), for the hello.
    driver: Option<String>,
    hello_sent: bool,
    lines: u64,
    garbled: u64,
}

impl SmiDecoder {
    /// A decoder for a stream that answers `fields`, from a node that should have
    /// `expected_gpus` GPUs (a frame is complete when that many rows came, or the index wraps).
    pub fn new(node: &str, fields: &[&str], expected_gpus: u32) -> Self {
        Self {
            node: node.to_string(),
            columns: fields.iter().map(|f| column(f)).collect(),
            expected_gpus: expected_gpus.max(1),
            rows: Vec::new(),
            driver: None,
            hello_sent: false,
            lines: 0,
            garbled: 0,
        }
    }

    /// Garbled lines so far.
    pub fn garbled(&self) -> u64 {
        self.garbled
    }

    /// Take one line; returns the messages it completes.
    pub fn push_line(
        &mut self,
        line: &str,
        now_ms: UnixMillis,
    ) -> Result<Vec<WireMessage>, Garbled> {
        self.lines += 1;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            return Ok(Vec::new());
        }
        if line.contains(INVALID_FIELD_MARK) {
            return Ok(vec![WireMessage::Error(format!(
                "nvidia-smi: {}",
                line.trim()
            ))]);
        }
        let cells: Vec<&str> = line.split(',').collect();
        let first = cells.first().map_or("", |c| c.trim());
        // A header names fields; a data row starts with the GPU index (a number), or has a
        // value that is no field name (a GPU name, a number, `[N/A]`).
        if first.parse::<u32>().is_err()
            && (cells.iter().any(|c| column(c) != Col::Ignored)
                || cells.iter().all(|c| is_field_name(c)))
        {
            self.columns = cells.iter().map(|c| column(c)).collect();
            return Ok(Vec::new());
        }
        let mut garbled = |reason: String| {
            self.garbled += 1;
            Garbled {
                line_no: self.lines,
                reason,
            }
        };
        if cells.len() != self.columns.len() {
            return Err(garbled(format!(
                "{} cells where {} were asked for",
                cells.len(),
                self.columns.len()
            )));
        }
        let mut s = GpuSample::default();
        let mut info = GpuInfo {
            index: 0,
            name: "unknown".into(),
            uuid: String::new(),
            power_limit_watts: None,
            sm_clock_max_mhz: None,
            memory_total_bytes: None,
            nvlink_links: None,
            identity: Default::default(),
        };
        let mut index = None;
        const MIB: f64 = 1024.0 * 1024.0;
        for (col, raw) in self.columns.iter().zip(&cells) {
            let n = || number(raw);
            match col {
                Col::Index => index = n().map(|v| v as u32),
                Col::Uuid => info.uuid = cell(raw).unwrap_or_default().to_string(),
                Col::Name => info.name = cell(raw).unwrap_or("unknown").to_string(),
                // A query may hold several aliases of one reading (power.draw and
                // power.draw.average): the first with a value counts, an `[N/A]` alias after
                // it does not blank it.
                Col::PowerAvg => s.power_avg_watts = s.power_avg_watts.or(n().map(|v| v as f32)),
                Col::PowerInstant => {
                    s.power_instant_watts = s.power_instant_watts.or(n().map(|v| v as f32))
                }
                Col::PowerLimit => {
                    s.power_limit_watts = s.power_limit_watts.or(n().map(|v| v as f32))
                }
                Col::Temperature => s.temperature_c = n().map(|v| v as f32),
                Col::Utilization => s.utilization_pct = n().map(|v| v as f32),
                Col::SmClock => s.sm_clock_mhz = n().map(|v| v as u32),
                Col::SmClockMax => s.sm_clock_max_mhz = n().map(|v| v as u32),
                Col::MemClock => s.mem_clock_mhz = n().map(|v| v as u32),
                Col::MemUsedMib => s.memory_used_bytes = n().map(|v| (v * MIB) as u64),
                Col::MemTotalMib => s.memory_total_bytes = n().map(|v| (v * MIB) as u64),
                Col::Reasons => s.clock_event_reasons = hex_or_int(raw),
                Col::EccCorrected => s.ecc_corrected_volatile = hex_or_int(raw),
                Col::EccUncorrected => s.ecc_uncorrected_volatile = hex_or_int(raw),
                Col::DriverVersion => {
                    if self.driver.is_none() {
                        self.driver = cell(raw).map(|v| crate::model::fit(v, 40));
                    }
                }
                Col::Serial => info.identity.serial = cell(raw).map(|v| crate::model::fit(v, 40)),
                Col::PciBusId => {
                    info.identity.pci_bus_id = cell(raw).map(|v| crate::model::fit(v, 40))
                }
                Col::Vbios => info.identity.vbios = cell(raw).map(|v| crate::model::fit(v, 40)),
                Col::Ignored => {}
            }
        }
        // Without the index, rows of one GPU's samples and of several GPUs look alike: no GPU
        // is made up from a row's position.
        let Some(index) = index else {
            return Err(garbled("no GPU index in the row".into()));
        };
        s.index = index;
        // A cell past f32's range (1e308) is finite as f64 and infinite once narrowed.
        s.drop_non_finite();
        info.index = index;
        info.power_limit_watts = s.power_limit_watts;
        info.sm_clock_max_mhz = s.sm_clock_max_mhz;
        info.memory_total_bytes = s.memory_total_bytes;

        let mut out = Vec::new();
        // The index wrapping means the previous loop's rows are complete.
        if self.rows.last().is_some_and(|(r, _)| index <= r.index) {
            out.extend(self.flush(now_ms));
        }
        self.rows.push((s, info));
        if self.rows.len() as u32 >= self.expected_gpus {
            out.extend(self.flush(now_ms));
        }
        Ok(out)
    }

    /// The end of the stream: the rows of a last, short loop (fewer GPUs than expected, a
    /// capture that ends) as a frame.
    pub fn finish(&mut self, now_ms: UnixMillis) -> Vec<WireMessage> {
        self.flush(now_ms)
    }

    fn flush(&mut self, now_ms: UnixMillis) -> Vec<WireMessage> {
        if self.rows.is_empty() {
            return Vec::new();
        }
        let rows = std::mem::take(&mut self.rows);
        let mut out = Vec::new();
        if !self.hello_sent {
            self.hello_sent = true;
            out.push(WireMessage::Hello(NodeHello {
                node: self.node.clone(),
                host: self.node.clone(),
                agent_version: "nvidia-smi (no agent)".into(),
                driver: self.driver.clone(),
                cuda: None,
                gpus: rows.iter().map(|(_, i)| i.clone()).collect(),
                topology: None,
                system: None,
                unavailable: Vec::new(),
            }));
        }
        out.push(WireMessage::Frame(NodeFrame {
            node: self.node.clone(),
            at_ms: now_ms,
            gpus: rows.into_iter().map(|(s, _)| s).collect(),
            nics: Vec::new(),
            netdevs: Vec::new(),
        }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixture(name: &str) -> String {
        crate::parsers::fixtures::tool_output(&format!("nvidia-smi/{name}"))
    }

    fn frames(dec: &mut SmiDecoder, text: &str) -> Vec<NodeFrame> {
        let mut out = Vec::new();
        for line in text.lines() {
            for m in dec.push_line(line, 1).unwrap_or_default() {
                if let WireMessage::Frame(f) = m {
                    out.push(f);
                }
            }
        }
        out
    }

    #[test]
    fn the_driver_version_the_rows_carry_is_the_hellos() {
        let mut d = SmiDecoder::new("gpu01", MODERN_FIELDS, 1);
        let row = "0, GPU-1, NVIDIA H200, 88.46, 76.62, 700.00, 32, 0, 345, 1980, 3201, 0, 143771, 0x0000000000000001, 0, 0, 580.159.04, 1654123045678, 00000000:18:00.0, 96.00.AF.00.01";
        let out = d.push_line(row, 1).expect("row");
        let Some(WireMessage::Hello(h)) = out.first() else {
            panic!("{out:?}")
        };
        assert_eq!(h.driver.as_deref(), Some("580.159.04"));
        // What the report's node table names the GPU by, for a return.
        let id = &h.gpus[0].identity;
        assert_eq!(id.serial.as_deref(), Some("1654123045678"));
        assert_eq!(id.pci_bus_id.as_deref(), Some("00000000:18:00.0"));
        assert_eq!(id.vbios.as_deref(), Some("96.00.AF.00.01"));
    }

    #[test]
    fn h200_stream_with_header_and_units() {
        let mut d = SmiDecoder::new("gpu01", MODERN_FIELDS, 1);
        let f = frames(&mut d, &fixture("h200-smi-stream.csv"));
        assert!(f.len() > 10, "{}", f.len());
        let g = &f[0].gpus[0];
        assert_eq!(g.power_avg_watts, Some(614.26));
        assert_eq!(g.power_instant_watts, Some(667.64));
        assert_eq!(g.temperature_c, Some(64.0));
        assert_eq!(g.utilization_pct, Some(100.0));
        assert_eq!(g.sm_clock_mhz, Some(1515));
        assert_eq!(g.clock_event_reasons, Some(0x4));
        assert_eq!(g.memory_used_bytes, Some(1011 * 1024 * 1024));
        assert_eq!(d.garbled(), 0);
    }

    #[test]
    fn positional_rows_with_na_and_not_supported() {
        let fields = [
            "memory.total",
            "memory.free",
            "memory.used",
            "temperature.gpu",
            "fan.speed",
            "utilization.gpu",
            "utilization.memory",
        ];
        // No index column: rows are garbled, never a panic, never a made-up GPU.
        let mut d = SmiDecoder::new("n", &fields, 1);
        assert!(
            frames(
                &mut d,
                &fixture("csv-noheader-nounits-NA-vs-NotSupported.txt")
            )
            .is_empty()
        );
        assert_eq!(d.garbled(), 2);
        let mut with_index = vec!["index"];
        with_index.extend(fields);
        let mut d = SmiDecoder::new("n", &with_index, 1);
        let text = fixture("csv-noheader-nounits-NA-vs-NotSupported.txt")
            .lines()
            .map(|l| format!("0, {l}"))
            .collect::<Vec<_>>()
            .join("\n");
        let f = frames(&mut d, &text);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].gpus[0].temperature_c, Some(44.0));
        assert_eq!(f[0].gpus[0].memory_used_bytes, Some(0));
        assert_eq!(f[0].gpus[0].memory_total_bytes, Some(2004 * 1024 * 1024));
    }

    #[test]
    fn invalid_field_becomes_an_error_message() {
        let mut d = SmiDecoder::new("n", MODERN_FIELDS, 1);
        let text = fixture("csv-noheader-rtx3080-NA-and-invalid-field-error.txt");
        let first = text.lines().next().unwrap_or_default();
        let msgs = d.push_line(first, 1).expect("not garbled");
        assert!(
            matches!(&msgs[..], [WireMessage::Error(e)] if e.contains("clocks_throttle_reasons.unknown"))
        );
    }

    #[test]
    fn old_header_names_map_to_the_same_fields() {
        let mut d = SmiDecoder::new("n", MODERN_FIELDS, 2);
        let text = "index, power.draw [W], clocks_throttle_reasons.active, clocks.sm [MHz]\n\
                    0, 250.5 W, 0x0000000000000040, 1200 MHz\n\
                    1, [N/A], [Not Supported], N/A\n";
        let f = frames(&mut d, text);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].gpus.len(), 2);
        assert_eq!(f[0].gpus[0].power_avg_watts, Some(250.5));
        assert_eq!(f[0].gpus[0].clock_event_reasons, Some(0x40));
        assert_eq!(f[0].gpus[1].power_avg_watts, None);
        assert_eq!(f[0].gpus[1].sm_clock_mhz, None);
    }

    #[test]
    fn frames_split_on_index_wrap_and_hello_comes_first() {
        let mut d = SmiDecoder::new("n", &["index", "name", "utilization.gpu"], 8);
        let mut all = Vec::new();
        for l in [
            "0, NVIDIA H200, 10",
            "1, NVIDIA H200, 20",
            "0, NVIDIA H200, 30",
        ] {
            all.extend(d.push_line(l, 5).expect("ok"));
        }
        assert!(
            matches!(&all[0], WireMessage::Hello(h) if h.gpus.len() == 2 && h.gpus[1].name == "NVIDIA H200")
        );
        assert!(matches!(&all[1], WireMessage::Frame(f) if f.gpus.len() == 2));
    }

    proptest! {
        #[test]
        fn garbage_never_panics(lines in proptest::collection::vec(".{0,80}", 0..20)) {
            let mut d = SmiDecoder::new("n", MODERN_FIELDS, 8);
            for l in &lines {
                let _ = d.push_line(l, 0);
            }
        }
    }
}
