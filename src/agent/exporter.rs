//! `burnin agent --listen ADDR`: the agent's latest frame as Prometheus text at `/metrics`, so a
//! site's Prometheus (and the Grafana dashboards it already has for dcgm-exporter) can scrape the
//! nodes burnin watches. Names, units and labels follow dcgm-exporter where the two overlap
//! (`DCGM_FI_DEV_POWER_USAGE{gpu,UUID,device,modelName,Hostname}` in W, `DCGM_FI_PROF_*` as
//! ratios, memory in MiB); `burnin_*` series carry what dcgm-exporter lacks: each clock-event
//! reason as its own 0/1 series, Xid events counted, NVLink links up, and the agent's own frame
//! count and last frame time (a scrape can tell a live agent from a stuck one).
//!
//! The server is a plain HTTP/1.1 responder: one request per connection, each connection on a
//! thread of its own (at most [`MAX_CONNECTIONS`] at once; past that a client is answered 503
//! at once), the request read within [`REQUEST_DEADLINE`] so a silent or trickling client
//! holds only its own thread and never the scrapes beside it. `GET /metrics` only. A scrape
//! renders the latest frame; it never touches NVML.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::model::{GpuSample, NodeFrame, NodeHello, clock_events};

/// Xid events of one GPU since the agent started.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct XidSeen {
    /// The last code, as dcgm-exporter's `DCGM_FI_DEV_XID_ERRORS` holds it.
    last: u32,
    count: u64,
}

/// What the agent last saw, as a scrape renders it. Frames are kept behind `Arc`s so a scrape
/// takes them in a moment and formats outside the lock: the agent's tick never waits on a
/// scrape.
#[derive(Debug, Default)]
struct State {
    hello: Option<Arc<NodeHello>>,
    frame: Option<Arc<NodeFrame>>,
    /// Per GPU index.
    xids: BTreeMap<u32, XidSeen>,
    frames: u64,
}

/// Connections answered at once; past this a client gets 503 without being read.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a client has to send its request.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// The latest frame, shared between the agent's tick and the HTTP thread.
#[derive(Debug, Clone, Default)]
pub struct Exporter {
    state: Arc<Mutex<State>>,
}

impl Exporter {
    /// Bind `addr` (`127.0.0.1:9401`, `0.0.0.0:9401`, `[::1]:0`) and serve `/metrics` from a
    /// thread of its own. Returns the address bound (the port, when 0 was asked).
    pub fn listen(addr: &str) -> std::io::Result<(Self, SocketAddr)> {
        let listener = TcpListener::bind(addr)?;
        let bound = listener.local_addr()?;
        let exporter = Self::default();
        let serving = exporter.clone();
        std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || {
                let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                for stream in listener.incoming().flatten() {
                    serving.take(stream, &open);
                }
            })?;
        Ok((exporter, bound))
    }

    /// Answer one connection on a thread of its own, or 503 where [`MAX_CONNECTIONS`] are
    /// open already. A client that misbehaves costs its own connection, nothing more.
    fn take(&self, mut stream: TcpStream, open: &Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::Ordering;
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = respond(
                &mut stream,
                "503 Service Unavailable",
                "text/plain",
                "too many connections open\n",
            );
            return;
        }
        let serving = self.clone();
        let done = Arc::clone(open);
        let spawned = std::thread::Builder::new()
            .name("metrics-conn".into())
            .spawn(move || {
                let _ = serving.answer(stream);
                done.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The agent introduced itself: the labels every series carries.
    pub fn hello(&self, hello: &NodeHello) {
        self.lock().hello = Some(Arc::new(hello.clone()));
    }

    /// The agent wrote a frame: keep it for the next scrape (taken, not copied), and count
    /// its Xid events.
    pub fn frame(&self, frame: NodeFrame) {
        let mut s = self.lock();
        s.frames += 1;
        for g in &frame.gpus {
            if let Some(last) = g.xid_events.last() {
                let seen = s.xids.entry(g.index).or_default();
                seen.last = last.code;
                seen.count += g.xid_events.len() as u64;
            }
        }
        s.frame = Some(Arc::new(frame));
    }

    /// The text a scrape gets now.
    pub fn render(&self) -> String {
        let (hello, frame, xids, frames) = {
            let s = self.lock();
            (s.hello.clone(), s.frame.clone(), s.xids.clone(), s.frames)
        };
        let mut out = String::with_capacity(16 * 1024);
        if let (Some(hello), Some(frame)) = (hello, frame) {
            render(&hello, &frame, &xids, frames, &mut out);
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn answer(&self, mut stream: TcpStream) -> std::io::Result<()> {
        let deadline = std::time::Instant::now() + REQUEST_DEADLINE;
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let mut request = Vec::with_capacity(1024);
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            // The whole request within the deadline, not each read: a byte every few seconds
            // would hold the connection for hours.
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            stream.set_read_timeout(Some(left))?;
            let n = stream.read(&mut buf)?;
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
            if request.len() > 16 * 1024 {
                return respond(&mut stream, "431 Request Header Fields Too Large", "", "");
            }
        }
        let line = String::from_utf8_lossy(&request);
        let mut words = line.lines().next().unwrap_or("").split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        match (method, path) {
            ("GET" | "HEAD", "/metrics") => {
                let body = self.render();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes())?;
                // HEAD says how long the body would be, and sends none.
                if method == "GET" {
                    stream.write_all(body.as_bytes())?;
                }
                stream.flush()
            }
            ("GET", "/") => respond(
                &mut stream,
                "200 OK",
                "text/plain; charset=utf-8",
                "burnin agent: metrics at /metrics\n",
            ),
            ("GET" | "HEAD", _) => {
                respond(&mut stream, "404 Not Found", "text/plain", "not found\n")
            }
            _ => respond(
                &mut stream,
                "405 Method Not Allowed",
                "text/plain",
                "only GET\n",
            ),
        }
    }
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// How a series' value comes from a GPU sample.
type Reading = fn(&GpuSample) -> Option<f64>;

const MIB: f64 = 1024.0 * 1024.0;

/// dcgm-exporter's families that burnin's agent measures too: name, type, help, reading.
const DCGM_FAMILIES: &[(&str, &str, &str, Reading)] = &[
    (
        "DCGM_FI_DEV_SM_CLOCK",
        "gauge",
        "SM clock frequency (in MHz).",
        |g| g.sm_clock_mhz.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "gauge",
        "Memory clock frequency (in MHz).",
        |g| g.mem_clock_mhz.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP",
        "gauge",
        "GPU temperature (in C).",
        |g| g.temperature_c.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        "gauge",
        "Power draw (in W), averaged over the last second by the driver.",
        |g| g.power_avg_watts.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE_INSTANT",
        "gauge",
        "Current instantaneous power usage (in W).",
        |g| g.power_instant_watts.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "gauge",
        "Enforced power limit (in W).",
        |g| g.power_limit_watts.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_GPU_UTIL",
        "gauge",
        "GPU utilization (in %).",
        |g| g.utilization_pct.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Framebuffer memory used (in MiB).",
        |g| g.memory_used_bytes.map(|b| (b as f64 / MIB).round()),
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "gauge",
        "Framebuffer memory free (in MiB).",
        |g| match (g.memory_total_bytes, g.memory_used_bytes) {
            (Some(t), Some(u)) => Some((t.saturating_sub(u) as f64 / MIB).round()),
            _ => None,
        },
    ),
    (
        "DCGM_FI_DEV_FB_TOTAL",
        "gauge",
        "Framebuffer memory total (in MiB).",
        |g| g.memory_total_bytes.map(|b| (b as f64 / MIB).round()),
    ),
    (
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "gauge",
        "Current clock-event reasons (bit mask, NVML's nvmlClocksEventReasons).",
        |g| g.clock_event_reasons.map(|m| m as f64),
    ),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Current clock throttle reasons (bit mask; DCGM's name before clock events).",
        |g| g.clock_event_reasons.map(|m| m as f64),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        |g| g.ecc_corrected_volatile.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        |g| g.ecc_uncorrected_volatile.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
        |g| g.pcie_replay_count.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink data CRC errors.",
        |g| g.nvlink_crc_errors.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink retries.",
        |g| g.nvlink_replay_errors.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink recovery errors.",
        |g| g.nvlink_recovery_errors.map(|v| v as f64),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors.",
        |g| g.remapped_rows_correctable.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors.",
        |g| g.remapped_rows_uncorrectable.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "Whether remapping of rows has failed.",
        |g| g.remapped_rows_failure.map(|b| f64::from(u8::from(b))),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "gauge",
        "Whether a row remap waits for the next GPU reset.",
        |g| g.remapped_rows_pending.map(|b| f64::from(u8::from(b))),
    ),
    (
        "DCGM_FI_PROF_SM_ACTIVE",
        "gauge",
        "The ratio of cycles an SM has at least 1 warp assigned (GPM).",
        |g| g.sm_active_pct.map(|p| f64::from(p) / 100.0),
    ),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles any tensor pipe is active (GPM).",
        |g| g.tensor_active_pct.map(|p| f64::from(p) / 100.0),
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active (GPM).",
        |g| g.dram_active_pct.map(|p| f64::from(p) / 100.0),
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "The rate of data transmitted over the PCIe bus (in B/s).",
        |g| g.pcie_tx_bytes_per_sec,
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "The rate of data received over the PCIe bus (in B/s).",
        |g| g.pcie_rx_bytes_per_sec,
    ),
    (
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "gauge",
        "The rate of data transmitted over NVLink (in B/s).",
        |g| g.nvlink_tx_bytes_per_sec,
    ),
    (
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "gauge",
        "The rate of data received over NVLink (in B/s).",
        |g| g.nvlink_rx_bytes_per_sec,
    ),
    (
        "burnin_gpu_nvlink_links_active",
        "gauge",
        "NVLink links up (burnin agent).",
        |g| g.nvlink_links_active.map(f64::from),
    ),
];

/// Render one frame as Prometheus text (exposition format 0.0.4).
fn render(
    hello: &NodeHello,
    frame: &NodeFrame,
    xids: &BTreeMap<u32, XidSeen>,
    frames: u64,
    out: &mut String,
) {
    // dcgm-exporter's label set on its names, so dashboards and joins keep working; burnin's
    // own series leave out `modelName`, whose camelCase promtool's linter flags (the DCGM names
    // inherit dcgm-exporter's own lint findings, which a test compares with a real scrape).
    let own: Vec<String> = frame
        .gpus
        .iter()
        .map(|g| {
            let info = hello.gpus.iter().find(|i| i.index == g.index);
            format!(
                "gpu=\"{}\",UUID=\"{}\",device=\"nvidia{}\",Hostname=\"{}\"",
                g.index,
                escape(info.map_or("", |i| i.uuid.as_str())),
                g.index,
                escape(&hello.host),
            )
        })
        .collect();
    let labels: Vec<String> = frame
        .gpus
        .iter()
        .zip(&own)
        .map(|(g, own)| {
            let info = hello.gpus.iter().find(|i| i.index == g.index);
            format!(
                "{own},modelName=\"{}\"",
                escape(info.map_or("", |i| i.name.as_str()))
            )
        })
        .collect();
    for (name, kind, help, read) in DCGM_FAMILIES {
        let values: Vec<(usize, f64)> = frame
            .gpus
            .iter()
            .enumerate()
            .filter_map(|(i, g)| read(g).filter(|v| v.is_finite()).map(|v| (i, v)))
            .collect();
        if values.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (i, v) in values {
            let set = if name.starts_with("DCGM_") {
                &labels[i]
            } else {
                &own[i]
            };
            let _ = writeln!(out, "{name}{{{set}}} {v}");
        }
    }
    // dcgm-exporter's Xid gauge holds the last code seen (0: none since the agent started).
    if !frame.gpus.is_empty() {
        let seen = |index: u32| xids.get(&index).copied().unwrap_or_default();
        out.push_str(
            "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n\
             # TYPE DCGM_FI_DEV_XID_ERRORS gauge\n",
        );
        for (i, g) in frame.gpus.iter().enumerate() {
            let code = seen(g.index).last;
            let _ = writeln!(out, "DCGM_FI_DEV_XID_ERRORS{{{}}} {code}", labels[i]);
        }
        out.push_str(
            "# HELP burnin_gpu_xid_events_total Xid events since the agent started.\n\
             # TYPE burnin_gpu_xid_events_total counter\n",
        );
        for (i, g) in frame.gpus.iter().enumerate() {
            let count = seen(g.index).count;
            let _ = writeln!(out, "burnin_gpu_xid_events_total{{{}}} {count}", own[i]);
        }
    }
    // Each clock-event reason as its own series: a dashboard can stack them, and nobody has to
    // decode a bit mask at 3 a.m.
    let with_mask: Vec<(usize, u64)> = frame
        .gpus
        .iter()
        .enumerate()
        .filter_map(|(i, g)| g.clock_event_reasons.map(|m| (i, m)))
        .collect();
    if !with_mask.is_empty() {
        out.push_str(
            "# HELP burnin_gpu_clock_event_reason Whether a clock-event (throttle) reason is \
             active (1) or not (0).\n# TYPE burnin_gpu_clock_event_reason gauge\n",
        );
        for (i, mask) in with_mask {
            for (bit, reason) in clock_events::NAMES {
                let _ = writeln!(
                    out,
                    "burnin_gpu_clock_event_reason{{{},reason=\"{reason}\"}} {}",
                    own[i],
                    u8::from(mask & bit != 0)
                );
            }
        }
    }
    let host = escape(&hello.host);
    let _ = writeln!(
        out,
        "# HELP burnin_agent_frames_total Frames the agent has sampled.\n\
         # TYPE burnin_agent_frames_total counter\n\
         burnin_agent_frames_total{{Hostname=\"{host}\"}} {frames}\n\
         # HELP burnin_agent_last_frame_timestamp_seconds When the agent sampled its last frame.\n\
         # TYPE burnin_agent_last_frame_timestamp_seconds gauge\n\
         burnin_agent_last_frame_timestamp_seconds{{Hostname=\"{host}\"}} {}",
        frame.at_ms as f64 / 1000.0
    );
}

/// A label value as the exposition format wants it.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimCluster, SimConfig, SimLoad};
    use crate::wire::prometheus;
    use proptest::prelude::*;

    fn sim() -> (NodeHello, NodeFrame) {
        let mut cluster = SimCluster::new(SimConfig::demo(1));
        let hello = cluster.hello(0);
        let mut frame = cluster.node_frame(0, 30, SimLoad::Full);
        frame.gpus[5].xid_events.push(crate::model::XidEvent {
            code: 79,
            at_ms: frame.at_ms,
        });
        (hello, frame)
    }

    #[test]
    fn every_gpu_reading_is_a_dcgm_series_with_its_labels() {
        let (hello, frame) = sim();
        let exporter = Exporter::default();
        exporter.hello(&hello);
        exporter.frame(frame.clone());
        let text = exporter.render();
        let parsed = prometheus::parse(&text);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        let power: Vec<_> = parsed.metric("DCGM_FI_DEV_POWER_USAGE").collect();
        assert_eq!(power.len(), 8);
        for (s, g) in power.iter().zip(&frame.gpus) {
            assert_eq!(s.label("gpu"), Some(g.index.to_string().as_str()));
            assert_eq!(s.label("Hostname"), Some(hello.host.as_str()));
            assert_eq!(
                s.label("UUID"),
                Some(hello.gpus[g.index as usize].uuid.as_str())
            );
            assert_eq!(s.value, f64::from(g.power_avg_watts.expect("sim power")));
        }
        let tensor: Vec<_> = parsed.metric("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE").collect();
        assert!(
            tensor.iter().all(|s| (0.0..=1.0).contains(&s.value)),
            "ratios"
        );
        let xid: Vec<_> = parsed.metric("DCGM_FI_DEV_XID_ERRORS").collect();
        assert_eq!(xid[5].value, 79.0);
        assert_eq!(xid[4].value, 0.0);
        let reasons: Vec<_> = parsed
            .metric("burnin_gpu_clock_event_reason")
            .filter(|s| s.label("gpu") == Some("0"))
            .collect();
        assert_eq!(reasons.len(), clock_events::NAMES.len());
        let mask = frame.gpus[0].clock_event_reasons.expect("sim mask");
        for s in reasons {
            let bit = clock_events::NAMES
                .iter()
                .find(|(_, n)| Some(*n) == s.label("reason"))
                .map(|(b, _)| *b)
                .expect("known reason");
            assert_eq!(s.value == 1.0, mask & bit != 0);
        }
        assert_eq!(
            parsed
                .metric("burnin_agent_frames_total")
                .next()
                .map(|s| s.value),
            Some(1.0)
        );
    }

    #[test]
    fn nothing_before_the_first_frame() {
        let exporter = Exporter::default();
        assert_eq!(exporter.render(), "");
    }

    #[test]
    fn serves_metrics_over_http_and_refuses_the_rest() {
        let (hello, frame) = sim();
        let Ok((exporter, addr)) = Exporter::listen("127.0.0.1:0") else {
            panic!("cannot bind loopback");
        };
        exporter.hello(&hello);
        exporter.frame(frame.clone());
        let get = |request: &str| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(request.as_bytes()).expect("send");
            let mut answer = String::new();
            s.read_to_string(&mut answer).expect("read");
            answer
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("text/plain; version=0.0.4"));
        assert!(ok.contains("\r\n\r\n# HELP DCGM_FI_DEV_SM_CLOCK"), "{ok}");
        let head = get("HEAD /metrics HTTP/1.1\r\n\r\n");
        let (head, body) = head.split_once("\r\n\r\n").expect("a header");
        assert!(body.is_empty(), "{body}");
        assert!(
            head.contains(&format!("Content-Length: {}", exporter.render().len())),
            "{head}"
        );
        assert!(get("GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    }

    /// Issue 41, case 9: ten clients that connect and say nothing held the one-at-a-time
    /// server, so every scrape behind them failed. Each connection is its own now: the scrape
    /// is answered while they wait, and past the cap a client is told 503 at once.
    #[test]
    fn silent_clients_do_not_hold_a_scrape() {
        let (hello, frame) = sim();
        let Ok((exporter, addr)) = Exporter::listen("127.0.0.1:0") else {
            panic!("cannot bind loopback");
        };
        exporter.hello(&hello);
        exporter.frame(frame);
        let silent: Vec<TcpStream> = (0..10)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let scrape = || {
            let mut s = TcpStream::connect(addr).expect("connect");
            // Well inside the 5 s a silent client is given: the scrape did not wait on them.
            s.set_read_timeout(Some(Duration::from_secs(3)))
                .expect("timeout");
            s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").expect("send");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        };
        let ok = scrape();
        assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok:?}");
        // Up to the cap, then 503.
        let more: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let busy = scrape();
        assert!(busy.starts_with("HTTP/1.1 503"), "{busy:?}");
        drop((silent, more));
    }

    proptest! {
        /// Whatever a node calls itself or its GPUs, the text parses and keeps the names.
        #[test]
        fn odd_names_stay_parseable(host in "\\PC{0,12}", model in "[a-z\"\\\\\n ]{0,12}") {
            let (mut hello, frame) = sim();
            hello.host = host.clone();
            hello.gpus[0].name = model.clone();
            let mut out = String::new();
            render(&hello, &frame, &BTreeMap::new(), 1, &mut out);
            let parsed = prometheus::parse(&out);
            prop_assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
            let first = parsed.metric("DCGM_FI_DEV_GPU_TEMP").next().expect("temperature");
            prop_assert_eq!(first.label("Hostname"), Some(host.as_str()));
            prop_assert_eq!(first.label("modelName"), Some(model.as_str()));
        }
    }
}
