//! Telemetry in the run record: each node's GPU readings folded into one line per second (min,
//! mean and max of each metric over that second; one number when they are equal), written
//! gzip-compressed to `telemetry/NNN.jsonl.gz`. Each recorder (a run, or a console that takes
//! the run over) starts the next segment, so a segment torn by a crash never hides the ones
//! after it. The stream is sync-flushed every [`FLUSH_EVERY_MS`] of data time and at phase
//! boundaries: a crash loses at most that much, and the reader keeps every whole line before
//! the tear.

use super::RecordError;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

use crate::model::{GpuSample, NodeFrame, UnixMillis};

/// Folder of the telemetry segments inside a run directory.
pub const TELEMETRY_DIR: &str = "telemetry";

/// Data time between two sync flushes of the compressed stream.
pub const FLUSH_EVERY_MS: u64 = 5_000;

/// One metric over one second: a single value, or `[min, mean, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stat {
    /// Every sample of the second read the same (or there was one).
    One(f64),
    /// Minimum, mean and maximum.
    Range([f64; 3]),
}

impl Stat {
    /// The lowest value of the second.
    pub fn min(self) -> f64 {
        match self {
            Stat::One(v) => v,
            Stat::Range(r) => r[0],
        }
    }

    /// The mean of the second.
    pub fn mean(self) -> f64 {
        match self {
            Stat::One(v) => v,
            Stat::Range(r) => r[1],
        }
    }

    /// The highest value of the second.
    pub fn max(self) -> f64 {
        match self {
            Stat::One(v) => v,
            Stat::Range(r) => r[2],
        }
    }
}

/// One GPU's second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSecond {
    /// NVML index.
    pub i: u32,
    /// Power (1 s average), W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<Stat>,
    /// Utilization, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util: Option<Stat>,
    /// Temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<Stat>,
    /// SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<Stat>,
    /// GPM SM activity, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_active: Option<Stat>,
    /// GPM tensor activity, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<Stat>,
    /// NVLink transmit, bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_tx: Option<Stat>,
    /// NVLink receive, bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_rx: Option<Stat>,
    /// Clock-event reasons seen during the second (OR of the masks).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasons: u64,
    /// Xid codes that arrived during the second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xid: Vec<u32>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One node's second: a line of the segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSecond {
    /// Start of the second, Unix ms.
    pub t: UnixMillis,
    /// Node name.
    pub node: String,
    /// Samples folded into it.
    pub n: u32,
    /// The second's last frame as the node sent it: every field, NICs and interfaces included,
    /// so a replay rebuilds the console exactly at a 1 s period.
    pub last: NodeFrame,
    /// Per GPU min/mean/max, when more than one sample fell into the second (at a 1 s period
    /// the frame is the second, and this stays empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuSecond>,
}

impl NodeSecond {
    /// The second's statistics per GPU: recorded ones, or the single frame's values.
    pub fn stats(&self) -> Vec<GpuSecond> {
        if !self.gpus.is_empty() {
            return self.gpus.clone();
        }
        self.last
            .gpus
            .iter()
            .map(|s| {
                let mut g = GpuAcc::default();
                g.add(s);
                g.second(s.index)
            })
            .collect()
    }

    /// The frame a replay plays for this second: the last frame, carrying every Xid of the
    /// second (earlier samples' Xids would otherwise be lost with them).
    pub fn replay_frame(&self) -> NodeFrame {
        let mut f = self.last.clone();
        for st in &self.gpus {
            if let Some(g) = f.gpus.iter_mut().find(|g| g.index == st.i) {
                for code in &st.xid {
                    if !g.xid_events.iter().any(|x| x.code == *code) {
                        g.xid_events.push(crate::model::XidEvent {
                            code: *code,
                            at_ms: f.at_ms,
                        });
                    }
                }
            }
        }
        f
    }
}

/// Running min/sum/max of one metric.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    min: f64,
    max: f64,
    sum: f64,
    n: u32,
}

impl Acc {
    fn add(&mut self, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            return;
        };
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.sum += v;
        self.n += 1;
    }

    fn stat(&self) -> Option<Stat> {
        if self.n == 0 {
            return None;
        }
        // One decimal is finer than any of these readings deserves, and large rates (bytes/s)
        // keep four significant digits: the digits past those are noise that gzip cannot shrink.
        let r = |v: f64| {
            if v.abs() >= 1e4 {
                let scale = 10f64.powi(v.abs().log10().floor() as i32 - 3);
                (v / scale).round() * scale
            } else {
                (v * 10.0).round() / 10.0
            }
        };
        let (lo, mean, hi) = (r(self.min), r(self.sum / f64::from(self.n)), r(self.max));
        Some(if lo == hi {
            Stat::One(lo)
        } else {
            Stat::Range([lo, mean, hi])
        })
    }
}

/// Metrics kept per GPU, in `GpuSecond` field order.
const METRICS: usize = 8;

#[derive(Debug, Clone, Default)]
struct GpuAcc {
    m: [Acc; METRICS],
    reasons: u64,
    xid: Vec<u32>,
}

impl GpuAcc {
    fn add(&mut self, s: &GpuSample) {
        let f = |v: Option<f32>| v.map(f64::from);
        let values = [
            f(s.power_avg_watts),
            f(s.utilization_pct),
            f(s.temperature_c),
            s.sm_clock_mhz.map(f64::from),
            f(s.sm_active_pct),
            f(s.tensor_active_pct),
            s.nvlink_tx_bytes_per_sec,
            s.nvlink_rx_bytes_per_sec,
        ];
        for (acc, v) in self.m.iter_mut().zip(values) {
            acc.add(v);
        }
        self.reasons |= s.clock_event_reasons.unwrap_or(0);
        self.xid.extend(s.xid_events.iter().map(|x| x.code));
    }

    fn second(&self, i: u32) -> GpuSecond {
        GpuSecond {
            i,
            power: self.m[0].stat(),
            util: self.m[1].stat(),
            temp: self.m[2].stat(),
            sm_mhz: self.m[3].stat(),
            sm_active: self.m[4].stat(),
            tensor: self.m[5].stat(),
            nvlink_tx: self.m[6].stat(),
            nvlink_rx: self.m[7].stat(),
            reasons: self.reasons,
            xid: self.xid.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct Pending {
    second: u64,
    frames: u32,
    gpus: BTreeMap<u32, GpuAcc>,
    last: Option<NodeFrame>,
}

/// Where a segment's compressed bytes go: its file, or memory until the run's record exists
/// ([`TelemetryRecorder::in_memory`]).
enum Sink {
    Memory(Vec<u8>),
    File(BufWriter<File>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Memory(v) => v.write(buf),
            Sink::File(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Memory(_) => Ok(()),
            Sink::File(f) => f.flush(),
        }
    }
}

/// Writes one segment of a run's telemetry.
pub struct TelemetryRecorder {
    path: PathBuf,
    out: Option<GzEncoder<Sink>>,
    pending: HashMap<String, Pending>,
    flushed_at: Option<UnixMillis>,
    lines: u64,
}

/// gzip level of the telemetry: 3 costs 32 µs of CPU per node-second frame against 53 µs at
/// the default 6, for 18 % more bytes (`burnin bench record`: 488 against 414 MB a day of 96
/// GPUs); the recorder was the console's largest CPU share at 1024 GPUs (perf, issue 29).
const GZIP_LEVEL: u32 = 3;

impl TelemetryRecorder {
    /// Start the next segment in `run_dir/telemetry/`.
    pub fn create(run_dir: &Path) -> Result<Self, RecordError> {
        let (path, file) = next_segment_file(run_dir)?;
        Ok(Self {
            path,
            out: Some(GzEncoder::new(
                Sink::File(BufWriter::new(file)),
                Compression::new(GZIP_LEVEL),
            )),
            pending: HashMap::new(),
            flushed_at: None,
            lines: 0,
        })
    }

    /// A segment kept in memory until [`TelemetryRecorder::persist`] gives it a run: what the
    /// console sees before its record opens.
    pub fn in_memory() -> Self {
        Self {
            path: PathBuf::from("(memory)"),
            out: Some(GzEncoder::new(
                Sink::Memory(Vec::new()),
                Compression::new(GZIP_LEVEL),
            )),
            pending: HashMap::new(),
            flushed_at: None,
            lines: 0,
        }
    }

    /// Compressed bytes held in memory (0 once persisted).
    pub fn memory_bytes(&self) -> usize {
        match self.out.as_ref().map(GzEncoder::get_ref) {
            Some(Sink::Memory(v)) => v.len(),
            _ => 0,
        }
    }

    /// Make an in-memory segment the next segment of `run_dir`: what it holds goes into the
    /// file, and the same gzip stream carries on there. A segment already in a file is left
    /// as it is.
    pub fn persist(&mut self, run_dir: &Path) -> Result<(), RecordError> {
        if !matches!(
            self.out.as_ref().map(GzEncoder::get_ref),
            Some(Sink::Memory(_))
        ) {
            return Ok(());
        }
        self.flush()?;
        let (path, file) = next_segment_file(run_dir)?;
        let Some(out) = self.out.as_mut() else {
            return Err(RecordError::refused(&self.path, "already finished"));
        };
        let mut writer = BufWriter::new(file);
        if let Sink::Memory(held) = out.get_mut() {
            writer
                .write_all(held)
                .and_then(|_| writer.flush())
                .map_err(|e| RecordError::io(&path, e))?;
        }
        // The encoder's state (header written, CRC and length so far) goes on over the file.
        *out.get_mut() = Sink::File(writer);
        self.path = path;
        Ok(())
    }

    /// The segment being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines (node-seconds) written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Fold one frame in; a frame of a later second closes the node's previous one.
    pub fn frame(&mut self, f: &NodeFrame) -> Result<(), RecordError> {
        let second = f.at_ms / 1000;
        let closed = match self.pending.get_mut(&f.node) {
            Some(p) if p.second == second => {
                p.add(f);
                None
            }
            // A frame from an earlier second (a node's clock stepped back) starts afresh too:
            // the record keeps what the node said, in the order it said it.
            Some(p) => {
                let old = std::mem::take(p);
                p.second = second;
                p.add(f);
                Some(old)
            }
            None => {
                let mut p = Pending {
                    second,
                    ..Pending::default()
                };
                p.add(f);
                self.pending.insert(f.node.clone(), p);
                None
            }
        };
        if let Some(old) = closed {
            self.write(&f.node, &old)?;
        }
        if self
            .flushed_at
            .is_none_or(|t| f.at_ms.saturating_sub(t) >= FLUSH_EVERY_MS)
        {
            self.flushed_at = Some(f.at_ms);
            self.flush()?;
        }
        Ok(())
    }

    fn write(&mut self, node: &str, p: &Pending) -> Result<(), RecordError> {
        let Some(last) = p.last.clone() else {
            return Ok(());
        };
        let line = NodeSecond {
            t: p.second * 1000,
            node: node.to_string(),
            n: p.frames,
            last,
            gpus: if p.frames > 1 {
                p.gpus.iter().map(|(i, g)| g.second(*i)).collect()
            } else {
                Vec::new()
            },
        };
        let text = serde_json::to_string(&line)?;
        let Some(out) = self.out.as_mut() else {
            return Err(RecordError::refused(&self.path, "already finished"));
        };
        writeln!(out, "{text}").map_err(|e| RecordError::io(&self.path, e))?;
        self.lines += 1;
        Ok(())
    }

    /// Push what is compressed so far to disk (a sync flush: readable up to here after a crash).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if let Some(out) = self.out.as_mut() {
            out.flush().map_err(|e| RecordError::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Write every open second and close the segment.
    pub fn finish(&mut self) -> Result<(), RecordError> {
        let mut open: Vec<(String, Pending)> = self.pending.drain().collect();
        open.sort_by(|a, b| (a.1.second, &a.0).cmp(&(b.1.second, &b.0)));
        for (node, p) in &open {
            self.write(node, p)?;
        }
        if let Some(out) = self.out.take() {
            let mut inner = out.finish().map_err(|e| RecordError::io(&self.path, e))?;
            inner.flush().map_err(|e| RecordError::io(&self.path, e))?;
        }
        Ok(())
    }
}

impl Pending {
    fn add(&mut self, f: &NodeFrame) {
        self.frames += 1;
        for g in &f.gpus {
            self.gpus.entry(g.index).or_default().add(g);
        }
        self.last = Some(f.clone());
    }
}

impl Drop for TelemetryRecorder {
    fn drop(&mut self) {
        // A recorder dropped without `finish` (an error path) still leaves a readable segment.
        let _ = self.finish();
    }
}

/// A new, empty file for the next segment of `run_dir`.
fn next_segment_file(run_dir: &Path) -> Result<(PathBuf, File), RecordError> {
    let dir = run_dir.join(TELEMETRY_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| RecordError::io(&dir, e))?;
    let next = segments(run_dir).len();
    let path = dir.join(format!("{next:03}.jsonl.gz"));
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| RecordError::io(&path, e))?;
    Ok((path, file))
}

/// The segments of a run, in order.
pub fn segments(run_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(run_dir.join(TELEMETRY_DIR))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// What reading a run's telemetry found.
#[derive(Debug, Default)]
pub struct TelemetryRead {
    /// Every whole line, segment by segment.
    pub seconds: Vec<NodeSecond>,
    /// Segments that ended torn (a crash), by file name.
    pub torn: Vec<String>,
    /// Segments that are not gzip at all, by file name.
    pub not_gzip: Vec<String>,
    /// Segments that inflated past what burnin writes, by file name (the rest unread).
    pub inflated_past: Vec<String>,
    /// Lines that did not decode.
    pub bad_lines: u64,
}

/// Read every segment of a run's telemetry; a torn segment gives what it holds up to the tear.
pub fn read_telemetry(run_dir: &Path) -> Result<TelemetryRead, RecordError> {
    let mut seconds = Vec::new();
    let mut out = visit_telemetry(run_dir, |s| seconds.push(s))?;
    out.seconds = seconds;
    Ok(out)
}

/// Hand every whole line of every segment to `f`, in order, without holding them; the result
/// says which segments were torn and how many lines did not decode (its `seconds` is empty).
pub fn visit_telemetry(
    run_dir: &Path,
    mut f: impl FnMut(NodeSecond),
) -> Result<TelemetryRead, RecordError> {
    let mut stream = TelemetryStream::open(run_dir);
    // A torn segment is kept in `stream.torn`; its whole lines came before the tear.
    for second in stream.by_ref().flatten() {
        f(second);
    }
    if let Some(e) = stream.failed {
        return Err(e);
    }
    Ok(TelemetryRead {
        seconds: Vec::new(),
        torn: stream.torn,
        not_gzip: stream.not_gzip,
        inflated_past: stream.inflated_past,
        bad_lines: stream.bad_lines,
    })
}

/// How far a segment may inflate: burnin's segments inflate about 20×; a gzip bomb a
/// thousandfold. Past this much (and a fixed allowance for small segments) the rest is not read.
const SEGMENT_INFLATION_MAX: u64 = 256;

/// Allowance every segment may inflate to whatever its size.
const SEGMENT_INFLATED_SLACK_BYTES: u64 = 64 << 20;

/// A segment's inflated text, bounded by [`SEGMENT_INFLATION_MAX`].
type SegmentReader = BufReader<std::io::Take<MultiGzDecoder<File>>>;

/// A segment, opened as every record file is read: a plain file, never through a link. Its
/// size is not capped (a 72-hour segment is hundreds of megabytes); its lines and how far it
/// inflates are.
/// `Ok(None)`: the file does not start as gzip does (`1f 8b`): something else wrote it.
fn open_segment(path: &Path) -> Result<Option<SegmentReader>, RecordError> {
    use std::io::{Read, Seek};
    let mut file = super::files::open_regular(path, u64::MAX)?;
    let mut magic = [0u8; 2];
    let got = file
        .read(&mut magic)
        .and_then(|n| file.rewind().map(|_| n))
        .map_err(|e| RecordError::io(path, e))?;
    // A file torn before its second byte is a tear, not a foreign file.
    if got == 2 && magic != [0x1f, 0x8b] {
        return Ok(None);
    }
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let limit = size
        .saturating_mul(SEGMENT_INFLATION_MAX)
        .saturating_add(SEGMENT_INFLATED_SLACK_BYTES);
    Ok(Some(BufReader::new(MultiGzDecoder::new(file).take(limit))))
}

/// The run's telemetry line by line, segment after segment, pulled as needed: a replay of a
/// 72-hour record holds a few seconds of it, not gigabytes. A line that does not decode is
/// counted and skipped; a torn segment yields what it holds up to the tear and an `Err` naming
/// it, then the next segment goes on.
pub struct TelemetryStream {
    pending: std::collections::VecDeque<PathBuf>,
    reader: Option<(String, SegmentReader)>,
    buf: Vec<u8>,
    /// Segments that ended torn, by file name.
    pub torn: Vec<String>,
    /// Segments that are not gzip at all (not torn by a crash: something else wrote them).
    pub not_gzip: Vec<String>,
    /// Segments that inflated past [`SEGMENT_INFLATION_MAX`]× their size (the rest unread).
    pub inflated_past: Vec<String>,
    /// Lines that did not decode.
    pub bad_lines: u64,
    /// A segment that could not be opened (the stream stops there).
    pub failed: Option<RecordError>,
}

impl TelemetryStream {
    /// From the first segment of `run_dir` (none: an empty stream).
    pub fn open(run_dir: &Path) -> Self {
        Self {
            pending: segments(run_dir).into(),
            reader: None,
            buf: Vec::new(),
            torn: Vec::new(),
            not_gzip: Vec::new(),
            inflated_past: Vec::new(),
            bad_lines: 0,
            failed: None,
        }
    }
}

/// What was wrong with one telemetry segment; the stream goes on with the next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentDamage {
    /// The file does not start as gzip does: something else wrote it.
    #[error(
        "telemetry segment {0} is not gzip data (not torn by a crash: something else wrote it); skipped"
    )]
    NotGzip(String),
    /// It inflated past [`SEGMENT_INFLATION_MAX`]× its size; the rest was not read.
    #[error(
        "telemetry segment {0} inflates past {SEGMENT_INFLATION_MAX}× its size (burnin's inflate about 20×); the rest is left out"
    )]
    InflatedPast(String),
    /// It ends without a whole last line or mid-block (a crash while writing).
    #[error("telemetry segment {0} ends torn")]
    Torn(String),
}

impl Iterator for TelemetryStream {
    /// A second, or what was wrong with a segment (torn, or not gzip at all).
    type Item = Result<NodeSecond, SegmentDamage>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.reader.is_none() {
                if self.failed.is_some() {
                    return None;
                }
                let path = self.pending.pop_front()?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match open_segment(&path) {
                    Ok(Some(reader)) => {
                        self.reader = Some((name, reader));
                    }
                    Ok(None) => {
                        self.not_gzip.push(name.clone());
                        return Some(Err(SegmentDamage::NotGzip(name)));
                    }
                    Err(e) => {
                        self.failed = Some(e);
                        return None;
                    }
                }
            }
            let (name, reader) = self.reader.as_mut()?;
            // A line is held up to the cap only: a small segment can inflate to gigabytes.
            match super::files::read_line_bounded(
                reader,
                &mut self.buf,
                super::files::LINE_MAX_BYTES,
            ) {
                Ok(super::files::Line::End) if reader.get_ref().limit() == 0 => {
                    let name = name.clone();
                    self.reader = None;
                    self.inflated_past.push(name.clone());
                    return Some(Err(SegmentDamage::InflatedPast(name)));
                }
                Ok(super::files::Line::End) => self.reader = None,
                Ok(super::files::Line::Whole) => {
                    match serde_json::from_slice::<NodeSecond>(&self.buf) {
                        Ok(s) => return Some(Ok(s)),
                        Err(_) => self.bad_lines += 1,
                    }
                }
                Ok(super::files::Line::TooLong) => self.bad_lines += 1,
                // A last line without its newline, or the stream cut mid-block: the tear.
                Ok(super::files::Line::Unterminated) | Err(_) => {
                    let name = name.clone();
                    self.reader = None;
                    self.torn.push(name.clone());
                    return Some(Err(SegmentDamage::Torn(name)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(node: &str, at_ms: u64, power: f32) -> NodeFrame {
        NodeFrame {
            node: node.into(),
            at_ms,
            gpus: vec![GpuSample {
                index: 0,
                power_avg_watts: Some(power),
                utilization_pct: Some(100.0),
                nvlink_tx_bytes_per_sec: Some(123_456_789.0),
                clock_event_reasons: Some(if power > 600.0 { 4 } else { 0 }),
                ..GpuSample::default()
            }],
            nics: Vec::new(),
            netdevs: Vec::new(),
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("burnin-tele-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("tmp");
        d
    }

    /// Seconds kept in memory before the run existed land in its first segment, ahead of
    /// those written after, in one gzip stream; the file reads back whole (also mid-run,
    /// after a flush).
    #[test]
    fn a_segment_kept_in_memory_carries_on_in_its_file() {
        let dir = tmp("memory");
        let mut r = TelemetryRecorder::in_memory();
        for s in 0..30u64 {
            r.frame(&frame("n1", s * 1000, 500.0 + s as f32))
                .expect("frame");
        }
        r.flush().expect("flush");
        assert!(r.memory_bytes() > 0);
        assert!(segments(&dir).is_empty(), "nothing on disk yet");
        r.persist(&dir).expect("persist");
        assert_eq!(r.memory_bytes(), 0);
        assert_eq!(segments(&dir), vec![r.path().to_path_buf()]);
        r.persist(&dir).expect("a second persist changes nothing");
        for s in 30..60u64 {
            r.frame(&frame("n1", s * 1000, 500.0 + s as f32))
                .expect("frame");
        }
        r.flush().expect("flush");
        let mid = read_telemetry(&dir).expect("read mid-run");
        assert!(mid.seconds.len() >= 58, "{}", mid.seconds.len());
        r.finish().expect("finish");
        let read = read_telemetry(&dir).expect("read");
        assert!(read.torn.is_empty() && read.bad_lines == 0);
        let seconds: Vec<u64> = read.seconds.iter().map(|s| s.t / 1000).collect();
        assert_eq!(seconds, (0..60).collect::<Vec<_>>());
        assert_eq!(segments(&dir).len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_second_of_samples_becomes_min_mean_max() {
        let dir = tmp("fold");
        let mut r = TelemetryRecorder::create(&dir).expect("create");
        for (i, p) in [500.0, 700.0, 600.0].into_iter().enumerate() {
            r.frame(&frame("n1", 10_000 + 100 * i as u64, p))
                .expect("frame");
        }
        r.frame(&frame("n1", 11_000, 650.0)).expect("frame");
        r.frame(&frame("n2", 10_500, 300.0)).expect("frame");
        r.finish().expect("finish");
        let read = read_telemetry(&dir).expect("read");
        assert!(read.torn.is_empty() && read.bad_lines == 0);
        let first = &read.seconds[0];
        assert_eq!((first.t, first.node.as_str(), first.n), (10_000, "n1", 3));
        let g = &first.stats()[0];
        assert_eq!(g.power, Some(Stat::Range([500.0, 600.0, 700.0])));
        assert_eq!(g.util, Some(Stat::One(100.0)));
        assert_eq!(g.nvlink_tx, Some(Stat::One(123_500_000.0)), "four digits");
        assert_eq!(g.reasons, 4, "any second the cap was on");
        assert_eq!(
            read.seconds.len(),
            3,
            "n1 10 s, then the open seconds at finish"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_segment_keeps_what_precedes_the_tear_and_later_segments_still_read() {
        let dir = tmp("torn");
        let mut r = TelemetryRecorder::create(&dir).expect("create");
        for s in 0..100u64 {
            r.frame(&frame("n1", s * 1000, 500.0 + s as f32))
                .expect("frame");
        }
        r.flush().expect("flush");
        let path = r.path().to_path_buf();
        // The process dies: no trailer, and the last bytes written half-way.
        std::mem::forget(r);
        let bytes = std::fs::read(&path).expect("segment");
        std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("tear");
        // A console taking the run over starts the next segment.
        let mut next = TelemetryRecorder::create(&dir).expect("next");
        next.frame(&frame("n1", 200_000, 650.0)).expect("frame");
        next.finish().expect("finish");
        let read = read_telemetry(&dir).expect("read");
        assert_eq!(read.torn, ["000.jsonl.gz"]);
        assert!(read.seconds.len() >= 60, "{}", read.seconds.len());
        assert_eq!(read.seconds.last().map(|s| s.t), Some(200_000));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
