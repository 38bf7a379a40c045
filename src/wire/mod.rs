//! The agent → watcher wire format: NDJSON, one message per line. The first line is
//! `{"hello":{…}}`, then one `{"frame":{…}}` per period with all GPUs of the node; the agent may
//! send `{"error":"…"}` when it cannot sample (no driver, no permission). Unknown fields and
//! unknown message kinds are ignored (a newer agent talks to an older console); a line that is
//! not JSON, or not a JSON object, is garbled: counted and skipped, never fatal.

pub mod prometheus;
pub mod scan;

use serde::{Deserialize, Serialize};

use crate::model::{GpuSample, NetSample, NicSample, NodeFrame, NodeHello, UnixMillis};

/// One message from an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireMessage {
    /// First line: who the agent is and which GPUs it sees.
    Hello(NodeHello),
    /// One period's samples.
    Frame(NodeFrame),
    /// The agent cannot sample; the text says why (shown as the node's state).
    Error(String),
}

/// Encode one message as a line (with its newline). Frames go in the column form.
pub fn encode(message: &WireMessage) -> String {
    if let WireMessage::Frame(frame) = message {
        let mut out = Vec::with_capacity(512 + 400 * frame.gpus.len());
        scan::write_frame_line(frame, &mut out);
        return String::from_utf8(out).unwrap_or_else(|e| {
            format!("{{\"error\":\"agent could not encode a frame: {e}\"}}\n")
        });
    }
    // Serialising our own plain data cannot fail; fall back to an error line rather than panic.
    let mut line = serde_json::to_string(message)
        .unwrap_or_else(|e| format!("{{\"error\":\"agent could not encode a message: {e}\"}}"));
    line.push('\n');
    line
}

/// What one line decoded to.
// Nearly every line is a message, and each is matched at once and dropped: boxing it would add
// an allocation per frame on the decode path and save no memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A message we know.
    Message(WireMessage),
    /// A JSON object of a kind this version does not know: ignored.
    Unknown,
    /// An empty line.
    Empty,
}

/// Why a line was garbled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("garbled line {line_no}: {reason}")]
pub struct Garbled {
    /// 1-based line number in the stream.
    pub line_no: u64,
    /// What was wrong, from the JSON parser.
    pub reason: String,
}

#[derive(Deserialize)]
struct AnyLine {
    hello: Option<NodeHello>,
    frame: Option<WireFrame>,
    error: Option<String>,
}

/// A frame as it travels: GPUs as one object each (`gpus`, what agents before the column form
/// wrote, and the H200 fixtures hold), or as named columns and one row per GPU.
#[derive(Deserialize)]
struct WireFrame {
    node: String,
    at_ms: UnixMillis,
    gpus: Option<Vec<GpuSample>>,
    gpu_fields: Option<Vec<String>>,
    gpu_rows: Option<Vec<Vec<serde_json::Value>>>,
    #[serde(default)]
    nics: Vec<NicSample>,
    #[serde(default)]
    netdevs: Vec<NetSample>,
}

impl WireFrame {
    fn into_frame(self) -> Result<NodeFrame, String> {
        let gpus = match (self.gpus, self.gpu_fields, self.gpu_rows) {
            (Some(gpus), None, None) => gpus,
            (None, Some(fields), Some(rows)) => {
                for (i, f) in fields.iter().enumerate() {
                    if fields[..i].contains(f) {
                        return Err(format!("gpu_fields names {f:?} twice"));
                    }
                }
                rows.into_iter()
                    .enumerate()
                    .map(|(r, row)| {
                        if row.len() != fields.len() {
                            return Err(format!(
                                "GPU row {r} has {} values for {} gpu_fields",
                                row.len(),
                                fields.len()
                            ));
                        }
                        // A null cell is an absent reading, as a left-out key is.
                        let object: serde_json::Map<String, serde_json::Value> = fields
                            .iter()
                            .cloned()
                            .zip(row)
                            .filter(|(_, v)| !v.is_null())
                            .collect();
                        serde_json::from_value(serde_json::Value::Object(object))
                            .map_err(|e| format!("GPU row {r}: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            (None, None, None) => return Err("frame without gpus".into()),
            _ => {
                return Err("frame needs either gpus, or gpu_fields with gpu_rows".into());
            }
        };
        Ok(NodeFrame {
            node: self.node,
            at_ms: self.at_ms,
            gpus,
            nics: self.nics,
            netdevs: self.netdevs,
        })
    }
}

/// Decode a line with serde_json alone: what the fast path must agree with, and what reads
/// every line it declines.
pub fn decode_general(line: &str) -> Result<Decoded, String> {
    match serde_json::from_str::<AnyLine>(line) {
        Ok(AnyLine {
            hello: Some(mut h), ..
        }) => {
            h.drop_non_finite();
            Ok(Decoded::Message(WireMessage::Hello(h)))
        }
        Ok(AnyLine { frame: Some(f), .. }) => {
            let mut frame = f.into_frame().map_err(|e| crate::model::excerpt(&e))?;
            frame.drop_non_finite();
            Ok(Decoded::Message(WireMessage::Frame(frame)))
        }
        Ok(AnyLine { error: Some(e), .. }) => Ok(Decoded::Message(WireMessage::Error(e))),
        Ok(_) => Ok(Decoded::Unknown),
        // serde's message can quote a whole string value of the wrong type: cut.
        Err(e) => Err(crate::model::excerpt(&e.to_string())),
    }
}

/// Decodes a stream line by line and counts garbled lines.
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    lines: u64,
    garbled: u64,
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lines seen so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Garbled lines seen so far.
    pub fn garbled(&self) -> u64 {
        self.garbled
    }

    /// Decode one line (without or with its newline).
    pub fn decode(&mut self, line: &str) -> Result<Decoded, Garbled> {
        self.lines += 1;
        let line = line.trim();
        if line.is_empty() {
            return Ok(Decoded::Empty);
        }
        let garbled = |reason: String, this: &mut Self| {
            this.garbled += 1;
            Garbled {
                line_no: this.lines,
                reason,
            }
        };
        if !line.starts_with('{') {
            return Err(garbled("not a JSON object".into(), self));
        }
        if let Some(frame) = scan::frame_line(line) {
            return Ok(Decoded::Message(WireMessage::Frame(frame)));
        }
        decode_general(line).map_err(|reason| garbled(reason, self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuInfo, GpuSample, XidEvent};
    use proptest::prelude::*;

    #[test]
    fn per_link_nvlink_errors_travel_and_zeros_stay_off_the_wire() {
        let sample = GpuSample {
            index: 2,
            nvlink_crc_errors: Some(1200),
            nvlink_link_errors: vec![crate::model::NvlinkLinkErrors {
                link: 13,
                crc: 1200,
                replay: 0,
                recovery: 0,
            }],
            ..GpuSample::default()
        };
        let line = encode(&WireMessage::Frame(NodeFrame {
            node: "n".into(),
            at_ms: 1,
            gpus: vec![sample.clone(), GpuSample::default()],
            nics: Vec::new(),
            netdevs: Vec::new(),
        }));
        // Zero counters stay off the wire; the healthy GPU's cell is an empty list.
        assert!(
            line.contains(r#"[[2,1200,[{"link":13,"crc":1200}]],[0,null,[]]]"#),
            "{line}"
        );
        let Ok(Decoded::Message(WireMessage::Frame(f))) = Decoder::new().decode(&line) else {
            panic!("{line}");
        };
        assert_eq!(f.gpus[0], sample);
        // A frame of healthy GPUs has no such column at all.
        let healthy = encode(&WireMessage::Frame(NodeFrame {
            node: "n".into(),
            at_ms: 1,
            gpus: vec![GpuSample::default(); 8],
            nics: Vec::new(),
            netdevs: Vec::new(),
        }));
        assert!(!healthy.contains("nvlink"), "{healthy}");
    }

    fn frame() -> NodeFrame {
        NodeFrame {
            node: "gpu07".into(),
            at_ms: 1_796_202_000_123,
            gpus: vec![
                GpuSample {
                    index: 0,
                    power_avg_watts: Some(359.0),
                    power_instant_watts: Some(728.0),
                    clock_event_reasons: Some(4),
                    xid_events: vec![XidEvent {
                        code: 79,
                        at_ms: 1_796_202_000_100,
                    }],
                    ..GpuSample::default()
                },
                GpuSample {
                    index: 1,
                    ..GpuSample::default()
                },
            ],
            nics: vec![NicSample {
                device: "mlx5_0".into(),
                port: 1,
                state: Some("ACTIVE".into()),
                rate_gbps: Some(400.0),
                tx_bytes_per_sec: Some(41e9),
                ..NicSample::default()
            }],
            netdevs: Vec::new(),
        }
    }

    #[test]
    fn round_trips_every_message() {
        let hello = NodeHello {
            node: "gpu07".into(),
            host: "gpu07.site".into(),
            agent_version: "burnin 0.1.0".into(),
            driver: Some("580.159.04".into()),
            cuda: Some("13.0".into()),
            gpus: vec![GpuInfo {
                index: 0,
                name: "NVIDIA H200".into(),
                uuid: "GPU-a25e9467".into(),
                power_limit_watts: Some(700.0),
                sm_clock_max_mhz: Some(1980),
                memory_total_bytes: Some(150_754_820_096),
                nvlink_links: None,
                identity: crate::model::GpuIdentity {
                    serial: Some("1654123456789".into()),
                    pci_bus_id: Some("00000000:18:00.0".into()),
                    vbios: Some("96.00.A5.00.01".into()),
                },
            }],
            topology: None,
            system: Some(Box::new(crate::agent::system::SystemInfo {
                kernel: Some("6.8.0-60-generic".into()),
                os: Some("Ubuntu 24.04.2 LTS".into()),
                fabric_manager: None,
                nccl: vec!["2.27.3 (pip nvidia-nccl-cu12, /usr/lib/python3/dist-packages)".into()],
            })),
            unavailable: Vec::new(),
        };
        let mut d = Decoder::new();
        for m in [
            WireMessage::Hello(hello),
            WireMessage::Frame(frame()),
            WireMessage::Error("NVML: driver not loaded".into()),
        ] {
            let line = encode(&m);
            assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
            assert_eq!(d.decode(&line), Ok(Decoded::Message(m)));
        }
        assert_eq!(d.garbled(), 0);
    }

    #[test]
    fn unknown_fields_and_kinds_are_ignored_garbage_is_counted() {
        let mut d = Decoder::new();
        let line = r#"{"frame":{"node":"n","at_ms":1,"gpus":[{"index":0,"future_metric":3}],"extra":true}}"#;
        assert!(matches!(
            d.decode(line),
            Ok(Decoded::Message(WireMessage::Frame(_)))
        ));
        assert_eq!(d.decode(r#"{"nics":[{"port":1}]}"#), Ok(Decoded::Unknown));
        assert_eq!(d.decode(""), Ok(Decoded::Empty));
        let err = d
            .decode(r#"{"frame":{"node":"n","at_ms":"#)
            .expect_err("truncated");
        assert_eq!(err.line_no, 4);
        assert!(
            d.decode("Warning: Permanently added 'x' to known hosts")
                .is_err()
        );
        assert!(
            d.decode(r#"{"frame":{"node":"n","at_ms":-1,"gpus":[]}}"#)
                .is_err()
        );
        assert_eq!(d.garbled(), 3);
        assert_eq!(d.lines(), 6);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut d = Decoder::new();
            let text = String::from_utf8_lossy(&bytes);
            for line in text.split('\n') {
                let _ = d.decode(line);
            }
        }

        #[test]
        fn truncated_frames_are_garbled_not_fatal(cut in 1usize..200) {
            let line = encode(&WireMessage::Frame(frame()));
            let cut = cut.min(line.len() - 2);
            let mut d = Decoder::new();
            prop_assert!(d.decode(&line[..cut]).is_err());
            prop_assert_eq!(d.decode(&line), Ok(Decoded::Message(WireMessage::Frame(frame()))));
        }
    }
}
