//! The fast path of the wire decoder, for the one line that arrives thousands of times a second:
//! a `{"frame":…}` exactly as `burnin agent` writes it. It scans the bytes once, matching each
//! GPU sample's keys directly, where serde_json's generic path spends most of its time (measured:
//! about 70 % of decode+store went to key scanning and number parsing).
//!
//! It answers only when it is sure. Anything off the beaten path (an escape in a string, an
//! unknown or repeated key, a negative number, an exponent, a number with more digits than an
//! `f64` holds exactly, a type serde would reject) makes it decline with `None`, and the caller
//! decodes the line with serde_json as before. So the fast path can only be faster, never
//! different: a property test holds it to serde_json's answer on every line it accepts.
//! RDMA ports and Ethernet interfaces (a handful per node, and not every frame has them) are
//! cut out and handed to serde_json.

use crate::model::{GpuSample, NetSample, NicSample, NodeFrame, NvlinkLinkErrors, XidEvent};

/// Decode a `{"frame":{…}}` line, or `None` to say "use the general decoder".
pub fn frame_line(line: &str) -> Option<NodeFrame> {
    let mut s = Scan::new(line);
    s.ws();
    s.eat(b'{')?;
    s.ws();
    if s.string()? != "frame" {
        return None;
    }
    s.ws();
    s.eat(b':')?;
    s.ws();
    let frame = node_frame(&mut s)?;
    s.ws();
    s.eat(b'}')?;
    s.ws();
    s.at_end().then_some(frame)
}

fn node_frame(s: &mut Scan<'_>) -> Option<NodeFrame> {
    s.eat(b'{')?;
    let (mut node, mut at_ms, mut gpus) = (None, None, None);
    let (mut nics, mut netdevs): (Option<Vec<NicSample>>, Option<Vec<NetSample>>) = (None, None);
    let mut first = true;
    loop {
        s.ws();
        if s.peek()? == b'}' {
            s.pos += 1;
            break;
        }
        if !first {
            s.eat(b',')?;
            s.ws();
        }
        first = false;
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            "node" if node.is_none() => node = Some(s.string()?.to_string()),
            "at_ms" if at_ms.is_none() => at_ms = Some(s.unsigned()?),
            "gpus" if gpus.is_none() => gpus = Some(gpu_list(s)?),
            "nics" if nics.is_none() => nics = Some(s.by_serde()?),
            "netdevs" if netdevs.is_none() => netdevs = Some(s.by_serde()?),
            _ => return None,
        }
    }
    Some(NodeFrame {
        node: node?,
        at_ms: at_ms?,
        gpus: gpus?,
        nics: nics.unwrap_or_default(),
        netdevs: netdevs.unwrap_or_default(),
    })
}

fn gpu_list(s: &mut Scan<'_>) -> Option<Vec<GpuSample>> {
    s.eat(b'[')?;
    let mut gpus = Vec::with_capacity(8);
    s.ws();
    if s.peek()? == b']' {
        s.pos += 1;
        return Some(gpus);
    }
    loop {
        s.ws();
        gpus.push(gpu_sample(s)?);
        s.ws();
        match s.next()? {
            b',' => {}
            b']' => return Some(gpus),
            _ => return None,
        }
    }
}

/// GPU sample keys in the order the agent writes them (the order of `GpuSample`'s fields): the
/// scanner expects each key to be the next one here, so a key costs one comparison.
const GPU_KEYS: [&[u8]; 34] = [
    b"index",
    b"power_avg_watts",
    b"power_instant_watts",
    b"power_limit_watts",
    b"temperature_c",
    b"sm_clock_mhz",
    b"sm_clock_max_mhz",
    b"utilization_pct",
    b"sm_active_pct",
    b"tensor_active_pct",
    b"dram_active_pct",
    b"mem_clock_mhz",
    b"memory_used_bytes",
    b"memory_total_bytes",
    b"clock_event_reasons",
    b"ecc_corrected_volatile",
    b"ecc_uncorrected_volatile",
    b"nvlink_tx_bytes_per_sec",
    b"nvlink_rx_bytes_per_sec",
    b"nvlink_crc_errors",
    b"nvlink_replay_errors",
    b"nvlink_recovery_errors",
    b"pcie_replay_count",
    b"pcie_tx_bytes_per_sec",
    b"pcie_rx_bytes_per_sec",
    b"nvlink_links_active",
    b"nvlink_link_up",
    b"remapped_rows_correctable",
    b"remapped_rows_uncorrectable",
    b"remapped_rows_pending",
    b"remapped_rows_failure",
    b"compute_pids",
    b"xid_events",
    b"nvlink_link_errors",
];

/// One GPU sample. Keys may come in any order; each may come once (serde rejects a repeat).
fn gpu_sample(s: &mut Scan<'_>) -> Option<GpuSample> {
    s.eat(b'{')?;
    let mut g = GpuSample::default();
    let mut seen = 0u64;
    let mut expect = 0usize;
    let mut first = true;
    loop {
        s.ws();
        if s.peek()? == b'}' {
            s.pos += 1;
            return Some(g);
        }
        if !first {
            s.eat(b',')?;
            s.ws();
        }
        first = false;
        let key = s.known_key(&GPU_KEYS, expect)?;
        if seen & (1 << key) != 0 {
            return None;
        }
        seen |= 1 << key;
        expect = key + 1;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            0 => g.index = s.u32()?,
            1 => g.power_avg_watts = s.opt(Scan::f32)?,
            2 => g.power_instant_watts = s.opt(Scan::f32)?,
            3 => g.power_limit_watts = s.opt(Scan::f32)?,
            4 => g.temperature_c = s.opt(Scan::f32)?,
            5 => g.sm_clock_mhz = s.opt(Scan::u32)?,
            6 => g.sm_clock_max_mhz = s.opt(Scan::u32)?,
            7 => g.utilization_pct = s.opt(Scan::f32)?,
            8 => g.sm_active_pct = s.opt(Scan::f32)?,
            9 => g.tensor_active_pct = s.opt(Scan::f32)?,
            10 => g.dram_active_pct = s.opt(Scan::f32)?,
            11 => g.mem_clock_mhz = s.opt(Scan::u32)?,
            12 => g.memory_used_bytes = s.opt(Scan::unsigned)?,
            13 => g.memory_total_bytes = s.opt(Scan::unsigned)?,
            14 => g.clock_event_reasons = s.opt(Scan::unsigned)?,
            15 => g.ecc_corrected_volatile = s.opt(Scan::unsigned)?,
            16 => g.ecc_uncorrected_volatile = s.opt(Scan::unsigned)?,
            17 => g.nvlink_tx_bytes_per_sec = s.opt(Scan::f64)?,
            18 => g.nvlink_rx_bytes_per_sec = s.opt(Scan::f64)?,
            19 => g.nvlink_crc_errors = s.opt(Scan::unsigned)?,
            20 => g.nvlink_replay_errors = s.opt(Scan::unsigned)?,
            21 => g.nvlink_recovery_errors = s.opt(Scan::unsigned)?,
            22 => g.pcie_replay_count = s.opt(Scan::unsigned)?,
            23 => g.pcie_tx_bytes_per_sec = s.opt(Scan::f64)?,
            24 => g.pcie_rx_bytes_per_sec = s.opt(Scan::f64)?,
            25 => g.nvlink_links_active = s.opt(Scan::u32)?,
            26 => g.nvlink_link_up = s.opt(|s| s.list(Scan::bool))?,
            27 => g.remapped_rows_correctable = s.opt(Scan::u32)?,
            28 => g.remapped_rows_uncorrectable = s.opt(Scan::u32)?,
            29 => g.remapped_rows_pending = s.opt(Scan::bool)?,
            30 => g.remapped_rows_failure = s.opt(Scan::bool)?,
            31 => g.compute_pids = s.opt(|s| s.list(Scan::u32))?,
            32 => g.xid_events = s.list(xid_event)?,
            33 => g.nvlink_link_errors = s.list(link_errors)?,
            _ => return None,
        }
    }
}

/// `{"code":79,"at_ms":…}`: both keys required, as serde requires them.
fn xid_event(s: &mut Scan<'_>) -> Option<XidEvent> {
    let (mut code, mut at_ms) = (None, None);
    s.object(|s, key| {
        match key {
            "code" if code.is_none() => code = Some(s.u32()?),
            "at_ms" if at_ms.is_none() => at_ms = Some(s.unsigned()?),
            _ => return None,
        }
        Some(())
    })?;
    Some(XidEvent {
        code: code?,
        at_ms: at_ms?,
    })
}

/// `{"link":13,"crc":1200}`: zero counters are left off the wire, so every key is optional.
fn link_errors(s: &mut Scan<'_>) -> Option<NvlinkLinkErrors> {
    let mut e = NvlinkLinkErrors::default();
    let mut seen = 0u8;
    s.object(|s, key| {
        let (slot, bit) = match key {
            "link" => {
                e.link = s.u32()?;
                return (seen & 1 == 0).then(|| seen |= 1);
            }
            "crc" => (&mut e.crc, 2),
            "replay" => (&mut e.replay, 4),
            "recovery" => (&mut e.recovery, 8),
            _ => return None,
        };
        *slot = s.unsigned()?;
        (seen & bit == 0).then(|| seen |= bit)
    })?;
    Some(e)
}

/// `10^k` for the exponents where both the power and the division are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A JSON number as the scanner read it: whole, or a decimal `mantissa / 10^scale`.
enum Number {
    Whole(u64),
    Decimal { mantissa: u64, scale: usize },
}

struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// A quoted key that is one of `keys`, trying `keys[from..]` first: the index, or `None`
    /// for any other key (an escape in it included: it matches none).
    fn known_key(&mut self, keys: &[&[u8]], from: usize) -> Option<usize> {
        self.eat(b'"')?;
        let rest = &self.bytes[self.pos..];
        let found = (from..keys.len())
            .chain(0..from.min(keys.len()))
            .find(|&k| {
                let key = keys[k];
                // A byte loop: keys are short, and a `memcmp` call per try cost more than the compare.
            rest.len() > key.len()
                && rest[key.len()] == b'"'
                && key.iter().zip(rest).all(|(a, b)| a == b)
            })?;
        self.pos += keys[found].len() + 1;
        Some(found)
    }

    /// A string without escapes or control characters (both are rare; serde handles them).
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        loop {
            match self.next()? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => {}
            }
        }
        // The quotes are ASCII, so the slice between them is whole UTF-8 of the input.
        self.text.get(start..self.pos - 1)
    }

    fn number(&mut self) -> Option<Number> {
        let start = self.pos;
        let mut mantissa: u64 = 0;
        let mut digits = 0usize;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            digits += 1;
            self.pos += 1;
        }
        // JSON forbids leading zeros; serde says so, and so must the general path.
        if digits == 0 || (digits > 1 && self.bytes[start] == b'0') {
            return None;
        }
        if self.peek() != Some(b'.') {
            return match self.peek() {
                Some(b'e' | b'E') => None,
                _ => Some(Number::Whole(mantissa)),
            };
        }
        self.pos += 1;
        let mut scale = 0usize;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            scale += 1;
            self.pos += 1;
        }
        // Only where one division by an exact power of ten is correctly rounded (the mantissa
        // fits 53 bits, the power is at most 10^22) is the answer certain to be serde_json's.
        if scale == 0 || scale >= POW10.len() || mantissa >= 1 << 53 {
            return None;
        }
        match self.peek() {
            Some(b'e' | b'E') => None,
            _ => Some(Number::Decimal { mantissa, scale }),
        }
    }

    fn unsigned(&mut self) -> Option<u64> {
        match self.number()? {
            Number::Whole(v) => Some(v),
            Number::Decimal { .. } => None,
        }
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.unsigned()?).ok()
    }

    fn f64(&mut self) -> Option<f64> {
        Some(match self.number()? {
            Number::Whole(v) => v as f64,
            Number::Decimal { mantissa, scale } => mantissa as f64 / POW10[scale],
        })
    }

    /// As serde reads an `f32`: a whole number converts directly, a decimal through `f64`.
    fn f32(&mut self) -> Option<f32> {
        Some(match self.number()? {
            Number::Whole(v) => v as f32,
            Number::Decimal { mantissa, scale } => (mantissa as f64 / POW10[scale]) as f32,
        })
    }

    fn bool(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// `null` or a value. The outer `Option` is "the scanner understood it".
    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.literal(b"null") {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    fn list<T>(&mut self, mut read: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(out);
        }
        loop {
            self.ws();
            out.push(read(self)?);
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(out),
                _ => return None,
            }
        }
    }

    /// An object whose keys `field` reads (and whose values it consumes).
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        let mut first = true;
        loop {
            self.ws();
            if self.peek()? == b'}' {
                self.pos += 1;
                return Some(());
            }
            if !first {
                self.eat(b',')?;
                self.ws();
            }
            first = false;
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            field(self, key)?;
        }
    }

    /// Cut out one JSON value (strings and nesting respected) and let serde_json read it.
    fn by_serde<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        let start = self.pos;
        let mut depth = 0usize;
        loop {
            match self.next()? {
                b'"' => loop {
                    match self.next()? {
                        b'"' => break,
                        b'\\' => {
                            self.next()?;
                        }
                        _ => {}
                    }
                },
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        break;
                    }
                }
                _ if depth == 0 => {
                    // A scalar: runs to the next delimiter.
                    while !matches!(self.peek(), None | Some(b',' | b'}' | b']')) {
                        self.pos += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
        serde_json::from_str(self.text.get(start..self.pos)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::wire::{WireMessage, encode};
    use proptest::prelude::*;

    /// What serde_json makes of the line: the answer the fast path must equal.
    fn by_serde(line: &str) -> Option<NodeFrame> {
        #[derive(serde::Deserialize)]
        struct Line {
            frame: Option<NodeFrame>,
        }
        serde_json::from_str::<Line>(line).ok()?.frame
    }

    fn sim_lines() -> Vec<String> {
        use crate::telemetry::sim::{SimCluster, SimConfig, SimLoad};
        let mut config = SimConfig::demo(1);
        config.nodes = 3;
        let mut sim = SimCluster::new(config);
        let mut lines = Vec::new();
        for s in 0..40u64 {
            for n in 0..3 {
                let load = if s % 2 == 0 {
                    SimLoad::Full
                } else {
                    SimLoad::Idle
                };
                lines.push(encode(&WireMessage::Frame(sim.node_frame(n, s, load))));
            }
        }
        lines
    }

    #[test]
    fn takes_every_frame_the_agent_and_the_simulator_write() {
        let mut lines = sim_lines();
        for fixture in [
            "agent-idle.ndjson",
            "agent-load.ndjson",
            "agent-busy-idle.ndjson",
        ] {
            let path = format!(
                "{}/tests/fixtures/h200-burnin/{fixture}",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).expect(&path);
            lines.extend(
                text.lines()
                    .filter(|l| l.starts_with("{\"frame\""))
                    .map(String::from),
            );
        }
        assert!(lines.len() > 150, "{}", lines.len());
        for line in &lines {
            let fast = frame_line(line);
            assert!(fast.is_some(), "declined a line it should take: {line}");
            assert_eq!(fast, by_serde(line), "{line}");
        }
    }

    #[test]
    fn declines_what_it_is_not_sure_of() {
        let ok =
            r#"{"frame":{"node":"n","at_ms":5,"gpus":[{"index":0,"power_avg_watts":84.082}]}}"#;
        assert!(frame_line(ok).is_some());
        for (what, line) in [
            ("escape", ok.replace("\"n\"", r#""n\u0041""#)),
            (
                "unknown key",
                ok.replace("\"index\"", "\"future_field\":1,\"index\""),
            ),
            (
                "repeated key",
                ok.replace("\"index\":0", "\"index\":0,\"index\":1"),
            ),
            ("exponent", ok.replace("84.082", "8.4082e1")),
            ("negative", ok.replace("84.082", "-84.082")),
            ("leading zero", ok.replace("\"at_ms\":5", "\"at_ms\":05")),
            (
                "too many digits",
                ok.replace("84.082", "84.0820000000000000000001"),
            ),
            (
                "float for an integer",
                ok.replace("\"index\":0", "\"index\":0.5"),
            ),
            ("trailing text", format!("{ok} x")),
            ("missing node", ok.replace("\"node\":\"n\",", "")),
            ("hello", r#"{"hello":{}}"#.to_string()),
        ] {
            assert_eq!(frame_line(&line), None, "{what}: {line}");
        }
        // Whitespace is JSON too.
        let spaced = ok.replace(',', " ,\n ").replace(':', " : ");
        assert_eq!(frame_line(&spaced), by_serde(&spaced));
    }

    #[test]
    fn ports_and_interfaces_go_through_serde() {
        let line = r#"{"frame":{"node":"n","at_ms":5,"gpus":[],"nics":[{"device":"mlx5_0","port":1,"state":"ACTIVE","rate_gbps":400.0}],"netdevs":[{"iface":"eth0","operstate":"up","counters":{"rx_errors":0}}]}}"#;
        let fast = frame_line(line);
        assert!(
            fast.as_ref()
                .is_some_and(|f| f.nics.len() == 1 && f.netdevs.len() == 1)
        );
        assert_eq!(fast, by_serde(line));
    }

    fn arb_f32() -> impl Strategy<Value = Option<f32>> {
        prop_oneof![
            Just(None),
            (0u32..100_000, 0u32..4).prop_map(|(m, s)| Some(m as f32 / 10f32.powi(s as i32))),
            any::<f32>().prop_map(Some),
        ]
    }

    fn arb_gpu() -> impl Strategy<Value = GpuSample> {
        (
            (
                0u32..16,
                arb_f32(),
                arb_f32(),
                arb_f32(),
                any::<Option<u32>>(),
            ),
            (
                any::<Option<u64>>(),
                proptest::option::of(0.0f64..1e12),
                any::<Option<bool>>(),
                proptest::option::of(proptest::collection::vec(any::<bool>(), 0..18)),
                proptest::option::of(proptest::collection::vec(any::<u32>(), 0..4)),
            ),
            proptest::collection::vec((any::<u32>(), any::<u64>()), 0..3),
            proptest::collection::vec((0u32..18, any::<u64>(), any::<u64>()), 0..3),
        )
            .prop_map(
                |((index, pa, pi, t, clk), (ecc, nvl, pend, up, pids), xids, links)| GpuSample {
                    index,
                    power_avg_watts: pa,
                    power_instant_watts: pi,
                    temperature_c: t,
                    sm_clock_mhz: clk,
                    ecc_corrected_volatile: ecc,
                    nvlink_tx_bytes_per_sec: nvl,
                    remapped_rows_pending: pend,
                    nvlink_link_up: up,
                    compute_pids: pids,
                    xid_events: xids
                        .into_iter()
                        .map(|(code, at_ms)| XidEvent { code, at_ms })
                        .collect(),
                    nvlink_link_errors: links
                        .into_iter()
                        .map(|(link, crc, replay)| NvlinkLinkErrors {
                            link,
                            crc,
                            replay,
                            recovery: 0,
                        })
                        .collect(),
                    ..GpuSample::default()
                },
            )
    }

    proptest! {
        /// Whatever the encoder writes, the fast path reads as serde does (or declines).
        #[test]
        fn agrees_with_serde_on_encoded_frames(
            gpus in proptest::collection::vec(arb_gpu(), 0..4),
            node in "[a-z0-9\\-\"\\\\é]{0,8}",
            at_ms in any::<u64>(),
        ) {
            let line = encode(&WireMessage::Frame(NodeFrame {
                node,
                at_ms,
                gpus,
                nics: Vec::new(),
                netdevs: Vec::new(),
            }));
            // It may decline only for escapes, exponents and negative numbers.
            let b = line.as_bytes();
            let exponent = b.windows(2).any(|w| w[0].is_ascii_digit() && w[1] == b'e');
            let negative = b.windows(2).any(|w| matches!(w[0], b':' | b'[' | b',') && w[1] == b'-');
            let fast = frame_line(&line);
            if !line.contains('\\') && !exponent && !negative {
                prop_assert!(fast.is_some(), "declined {}", line);
            }
            if let Some(fast) = fast {
                prop_assert_eq!(Some(fast), by_serde(&line));
            }
        }

        /// Damaged lines: anything the fast path accepts, serde reads the same way.
        #[test]
        fn agrees_with_serde_on_damaged_lines(
            cut in 0usize..400,
            splice in "[0-9a-z\\[\\]{}\":,.\\- ]{0,6}",
            pick in 0usize..120,
        ) {
            let lines = sim_lines();
            let line = &lines[pick % lines.len()];
            let at = line.char_indices().map(|(i, _)| i).nth(cut % line.len()).unwrap_or(0);
            let damaged = format!("{}{}{}", &line[..at], splice, &line[at..]);
            if let Some(fast) = frame_line(&damaged) {
                prop_assert_eq!(Some(fast), by_serde(&damaged), "{}", damaged);
            }
            let truncated = &line[..at];
            if let Some(fast) = frame_line(truncated) {
                prop_assert_eq!(Some(fast), by_serde(truncated));
            }
        }

        /// Garbage never panics it.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = frame_line(&text);
            let _ = frame_line(&format!("{{\"frame\":{text}"));
        }
    }
}
