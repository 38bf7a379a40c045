//! The frame line, the one message that arrives thousands of times a second: how the agent
//! writes it (the column form: the GPU fields any GPU has, named once, then one row of values per
//! GPU) and the fast path that reads it. The scanner reads the bytes once, taking each key where
//! the agent's order puts it; serde_json's generic path spent about 70 % of decode+store on key
//! scanning and number parsing.
//!
//! It answers only when it is sure. Anything off the beaten path (an escape in a string, an
//! unknown or repeated key, a negative number, an exponent, a number with more digits than an
//! `f64` holds exactly, a type serde would reject) makes it decline with `None`, and the caller
//! decodes the line with serde_json (`wire::decode_general`). So the fast path can only be
//! faster, never different: property tests hold it to serde_json's answer on every line it
//! accepts. It reads both forms: the column form, and one object per GPU (`gpus`, what agents
//! wrote before, and what the H200 fixtures hold). RDMA ports and Ethernet interfaces are read
//! by field name, each at most once, as serde's derive would.

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
    let (mut node, mut at_ms, mut gpus) = (None, None, None);
    let mut columns: Option<Vec<usize>> = None;
    let (mut nics, mut netdevs): (Option<Vec<NicSample>>, Option<Vec<NetSample>>) = (None, None);
    s.object(|s, key| {
        match key {
            "node" if node.is_none() => node = Some(s.string()?.to_string()),
            "at_ms" if at_ms.is_none() => at_ms = Some(s.unsigned()?),
            "gpus" if gpus.is_none() => gpus = Some(s.list(gpu_sample)?),
            "gpu_fields" if columns.is_none() => columns = Some(gpu_columns(s)?),
            "gpu_rows" if gpus.is_none() => gpus = Some(gpu_rows(s, columns.as_deref()?)?),
            "nics" if nics.is_none() => nics = Some(s.list(nic_sample)?),
            "netdevs" if netdevs.is_none() => netdevs = Some(s.list(net_sample)?),
            _ => return None,
        }
        Some(())
    })?;
    Some(NodeFrame {
        node: node?,
        at_ms: at_ms?,
        gpus: gpus?,
        nics: nics.unwrap_or_default(),
        netdevs: netdevs.unwrap_or_default(),
    })
}

/// An RDMA port's keys, in `NicSample`'s field order (the order serde writes them).
const NIC_KEYS: [&str; 10] = [
    "device",
    "port",
    "state",
    "phys_state",
    "rate_gbps",
    "link_layer",
    "numa_node",
    "tx_bytes_per_sec",
    "rx_bytes_per_sec",
    "counters",
];

/// An Ethernet interface's keys, in `NetSample`'s field order.
const NET_KEYS: [&str; 6] = [
    "iface",
    "operstate",
    "speed_mbps",
    "tx_bytes_per_sec",
    "rx_bytes_per_sec",
    "counters",
];

fn opt_string(s: &mut Scan<'_>) -> Option<Option<String>> {
    s.opt(|s| s.string().map(String::from))
}

/// An RDMA port as the agent writes it: serde's field names, each at most once; absent fields
/// default, as `#[serde(default)]` makes them.
fn nic_sample(s: &mut Scan<'_>) -> Option<NicSample> {
    let mut n = NicSample::default();
    s.object_known(&NIC_KEYS, |s, k| {
        match k {
            0 => n.device = s.string()?.to_string(),
            1 => n.port = s.u32()?,
            2 => n.state = opt_string(s)?,
            3 => n.phys_state = opt_string(s)?,
            4 => n.rate_gbps = s.opt(Scan::f32)?,
            5 => n.link_layer = opt_string(s)?,
            6 => n.numa_node = s.opt(Scan::i32)?,
            7 => n.tx_bytes_per_sec = s.opt(Scan::f64)?,
            8 => n.rx_bytes_per_sec = s.opt(Scan::f64)?,
            _ => n.counters = port_counters(s)?,
        }
        Some(())
    })?;
    Some(n)
}

/// An Ethernet interface as the agent writes it.
fn net_sample(s: &mut Scan<'_>) -> Option<NetSample> {
    let mut n = NetSample::default();
    s.object_known(&NET_KEYS, |s, k| {
        match k {
            0 => n.iface = s.string()?.to_string(),
            1 => n.operstate = opt_string(s)?,
            2 => n.speed_mbps = s.opt(Scan::unsigned)?,
            3 => n.tx_bytes_per_sec = s.opt(Scan::f64)?,
            4 => n.rx_bytes_per_sec = s.opt(Scan::f64)?,
            _ => n.counters = port_counters(s)?,
        }
        Some(())
    })?;
    Some(n)
}

/// A port's counters: names this version knows, each once, whole numbers or null (unknown
/// names decline: serde would skip them, and the general path does).
fn port_counters(s: &mut Scan<'_>) -> Option<crate::model::PortCounters> {
    use crate::model::PortCounters;
    let mut c = PortCounters::default();
    s.object_known(PortCounters::NAMES, |s, k| {
        // null leaves it unset, as serde reads an Option.
        if let Some(v) = s.opt(Scan::unsigned)? {
            c.set_at(k, v);
        }
        Some(())
    })?;
    Some(c)
}

/// The column list of the column form: known keys, each once.
fn gpu_columns(s: &mut Scan<'_>) -> Option<Vec<usize>> {
    let (mut seen, mut expect) = (0u64, 0usize);
    s.list(|s| {
        let key = s.known_key(&GPU_KEYS, expect)?;
        if seen & (1 << key) != 0 {
            return None;
        }
        seen |= 1 << key;
        expect = key + 1;
        Some(key)
    })
}

/// The rows of the column form: one per GPU, exactly one value per column.
fn gpu_rows(s: &mut Scan<'_>, columns: &[usize]) -> Option<Vec<GpuSample>> {
    s.eat(b'[')?;
    let mut gpus: Vec<GpuSample> = Vec::with_capacity(8);
    s.ws();
    if s.peek()? == b']' {
        s.pos += 1;
        return Some(gpus);
    }
    loop {
        s.ws();
        // Filled where it lies: a sample is a few hundred bytes, and moving it twice showed.
        gpus.push(GpuSample::default());
        let g = gpus.last_mut()?;
        s.eat(b'[')?;
        for (i, &key) in columns.iter().enumerate() {
            s.ws();
            if i > 0 {
                s.eat(b',')?;
                s.ws();
            }
            gpu_read(s, g, key)?;
        }
        s.ws();
        s.eat(b']')?;
        s.ws();
        match s.next()? {
            b',' => {}
            b']' => return Some(gpus),
            _ => return None,
        }
    }
}

/// Write a frame line in the column form the agent sends: the GPU fields that any GPU of the
/// frame has, named once, then one row of values per GPU. Against one object per GPU this halves
/// the line for eight GPUs, and the reader matches names once per frame instead of per GPU.
pub fn write_frame_line(frame: &NodeFrame, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"frame\":{\"node\":");
    write_json(&frame.node, out);
    out.extend_from_slice(b",\"at_ms\":");
    write_json(&frame.at_ms, out);
    out.extend_from_slice(b",\"gpu_fields\":[");
    let mut columns = [0usize; GPU_KEYS.len()];
    let mut count = 0;
    for (k, key) in GPU_KEYS.iter().enumerate() {
        if frame.gpus.iter().any(|g| gpu_present(g, k)) {
            if count > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.push(b'"');
            columns[count] = k;
            count += 1;
        }
    }
    out.extend_from_slice(b"],\"gpu_rows\":[");
    for (r, g) in frame.gpus.iter().enumerate() {
        if r > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (i, &k) in columns[..count].iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            gpu_write(g, k, out);
        }
        out.push(b']');
    }
    out.push(b']');
    if !frame.nics.is_empty() {
        out.extend_from_slice(b",\"nics\":");
        write_json(&frame.nics, out);
    }
    if !frame.netdevs.is_empty() {
        out.extend_from_slice(b",\"netdevs\":");
        write_json(&frame.netdevs, out);
    }
    out.extend_from_slice(b"}}\n");
}

/// Every field of a GPU sample on the wire, in `GpuSample`'s order (the order the agent writes
/// them, so the scanner finds each key where it expects it), with how its value is written and
/// read. One table for the writer, the fast reader and the column list.
macro_rules! gpu_fields {
    ($($id:literal $field:ident: $kind:ident,)*) => {
        /// The keys of a GPU sample, as the wire names them.
        pub const GPU_KEYS: [&str; 34] = [$(stringify!($field)),*];

        /// Whether a GPU's field has a value worth a column (an absent reading does not).
        fn gpu_present(g: &GpuSample, k: usize) -> bool {
            match k {
                $($id => present_field!($kind, g.$field),)*
                _ => false,
            }
        }

        /// Write a GPU's field as one JSON value.
        fn gpu_write(g: &GpuSample, k: usize, out: &mut Vec<u8>) {
            match k {
                $($id => write_field!($kind, &g.$field, out),)*
                _ => out.extend_from_slice(b"null"),
            }
        }

        /// Read one JSON value into a GPU's field.
        fn gpu_read(s: &mut Scan<'_>, g: &mut GpuSample, k: usize) -> Option<()> {
            match k {
                $($id => g.$field = read_field!($kind, s),)*
                _ => return None,
            }
            Some(())
        }
    };
}

macro_rules! present_field {
    (index, $v:expr) => {
        true
    };
    (xids, $v:expr) => {
        !$v.is_empty()
    };
    (links, $v:expr) => {
        !$v.is_empty()
    };
    ($kind:ident, $v:expr) => {
        $v.is_some()
    };
}

macro_rules! write_field {
    (rate, $v:expr, $out:expr) => {
        write_rate(*$v, $out)
    };
    ($kind:ident, $v:expr, $out:expr) => {
        write_json($v, $out)
    };
}

macro_rules! read_field {
    (index, $s:expr) => {
        $s.u32()?
    };
    (f32, $s:expr) => {
        $s.opt(Scan::f32)?
    };
    (u32, $s:expr) => {
        $s.opt(Scan::u32)?
    };
    (u64, $s:expr) => {
        $s.opt(Scan::unsigned)?
    };
    (rate, $s:expr) => {
        $s.opt(Scan::f64)?
    };
    (bool, $s:expr) => {
        $s.opt(Scan::bool)?
    };
    (bools, $s:expr) => {
        $s.opt(|s| s.list(Scan::bool))?
    };
    (u32s, $s:expr) => {
        $s.opt(|s| s.list(Scan::u32))?
    };
    (xids, $s:expr) => {
        $s.list(xid_event)?
    };
    (links, $s:expr) => {
        $s.list(link_errors)?
    };
}

gpu_fields! {
    0 index: index,
    1 power_avg_watts: f32,
    2 power_instant_watts: f32,
    3 power_limit_watts: f32,
    4 temperature_c: f32,
    5 sm_clock_mhz: u32,
    6 sm_clock_max_mhz: u32,
    7 utilization_pct: f32,
    8 sm_active_pct: f32,
    9 tensor_active_pct: f32,
    10 dram_active_pct: f32,
    11 mem_clock_mhz: u32,
    12 memory_used_bytes: u64,
    13 memory_total_bytes: u64,
    14 clock_event_reasons: u64,
    15 ecc_corrected_volatile: u64,
    16 ecc_uncorrected_volatile: u64,
    17 nvlink_tx_bytes_per_sec: rate,
    18 nvlink_rx_bytes_per_sec: rate,
    19 nvlink_crc_errors: u64,
    20 nvlink_replay_errors: u64,
    21 nvlink_recovery_errors: u64,
    22 pcie_replay_count: u64,
    23 pcie_tx_bytes_per_sec: rate,
    24 pcie_rx_bytes_per_sec: rate,
    25 nvlink_links_active: u32,
    26 nvlink_link_up: bools,
    27 remapped_rows_correctable: u32,
    28 remapped_rows_uncorrectable: u32,
    29 remapped_rows_pending: bool,
    30 remapped_rows_failure: bool,
    31 compute_pids: u32s,
    32 xid_events: xids,
    33 nvlink_link_errors: links,
}

fn write_json<T: serde::Serialize>(value: &T, out: &mut Vec<u8>) {
    // Our own plain data always serializes; if it ever did not, a null keeps the line whole.
    let mark = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}

/// Byte rates go on the wire as whole numbers, as `GpuSample`'s own serializer writes them.
fn write_rate(v: Option<f64>, out: &mut Vec<u8>) {
    match v {
        Some(x) if x.is_finite() => write_json(&(x.max(0.0).round() as u64), out),
        _ => out.extend_from_slice(b"null"),
    }
}

/// One GPU sample as an object. Keys may come in any order; each may come once (serde rejects
/// a repeat).
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
        gpu_read(s, &mut g, key)?;
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

/// The run of ASCII digits starting at `from`, read in one pass: where it ends, and its value
/// on top of `acc` with wrapping arithmetic. The value is exact only while the digits read so far
/// (`acc`'s included) number at most 19; callers check the count and use [`accumulate`] past it.
/// A byte loop: most numbers in a frame are one to four digits, where an eight-byte (SWAR) step
/// cost more instructions than it saved (callgrind, `burnin bench ingest`).
fn digits(b: &[u8], from: usize, acc: u64) -> (usize, u64) {
    let (mut i, mut v) = (from, acc);
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i, v)
}

/// Whether `rest` starts with `key`, compared eight bytes at a time (keys are 4–30 bytes; a
/// `memcmp` call per try cost more than the compare, and a byte loop showed in profiles).
fn same_bytes(key: &[u8], rest: &[u8]) -> bool {
    let (mut key, mut rest) = (key, rest);
    while let (Some(a), Some(b)) = (key.first_chunk::<8>(), rest.first_chunk::<8>()) {
        if a != b {
            return false;
        }
        (key, rest) = (&key[8..], &rest[8..]);
    }
    rest.len() >= key.len() && key.iter().zip(rest).all(|(a, b)| a == b)
}

/// `acc` followed by `digits`, or `None` past `u64`: the checked path for more than 19 digits.
fn accumulate(acc: u64, digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(acc, |v, d| {
        v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
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
        if self.peek() == word.first().copied() && self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// A quoted key that is one of `keys`, trying `keys[from..]` first: the index, or `None`
    /// for any other key (an escape in it included: it matches none).
    fn known_key(&mut self, keys: &[&str], from: usize) -> Option<usize> {
        self.eat(b'"')?;
        let rest = &self.bytes[self.pos..];
        let found = (from..keys.len())
            .chain(0..from.min(keys.len()))
            .find(|&k| {
                let key = keys[k].as_bytes();
                rest.len() > key.len() && rest[key.len()] == b'"' && same_bytes(key, rest)
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
        let b = self.bytes;
        let start = self.pos;
        // Up to 19 digits cannot overflow a u64, which covers every number the agent writes:
        // one pass reads them; longer runs are read again with checks.
        let (int_end, mut mantissa) = digits(b, start, 0);
        let int_len = int_end - start;
        // JSON forbids leading zeros; serde says so, and so must the general path.
        if int_len == 0 || (int_len > 1 && b[start] == b'0') {
            return None;
        }
        if int_len > 19 {
            mantissa = accumulate(0, &b[start..int_end])?;
        }
        match b.get(int_end) {
            Some(b'.') => {}
            Some(b'e' | b'E') => return None,
            _ => {
                self.pos = int_end;
                return Some(Number::Whole(mantissa));
            }
        }
        let (frac_end, fused) = digits(b, int_end + 1, mantissa);
        let scale = frac_end - int_end - 1;
        let mantissa = if int_len + scale <= 19 {
            fused
        } else {
            accumulate(mantissa, &b[int_end + 1..frac_end])?
        };
        // Only where one division by an exact power of ten is correctly rounded (the mantissa
        // fits 53 bits, the power is at most 10^22) is the answer certain to be serde_json's.
        if scale == 0 || scale >= POW10.len() || mantissa >= 1 << 53 {
            return None;
        }
        if matches!(b.get(frac_end), Some(b'e' | b'E')) {
            return None;
        }
        self.pos = frac_end;
        Some(Number::Decimal { mantissa, scale })
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

    /// A whole number that may be negative (a NUMA node of -1: the adapter has none).
    fn i32(&mut self) -> Option<i32> {
        if self.peek()? == b'-' {
            self.pos += 1;
            // serde_json reads "-0" as the float -0.0, which no i32 field takes: decline, and
            // the general path refuses the line as serde does. Anything past i32 declines too.
            match self.unsigned()? {
                0 => None,
                v => i32::try_from(v).ok().map(|v| -v),
            }
        } else {
            i32::try_from(self.unsigned()?).ok()
        }
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
    fn object(&mut self, field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.members(Scan::string, field)
    }

    /// An object whose keys are all among `keys`, each at most once, read in any order but
    /// fastest in the order given (the order serde writes a struct's fields): `field` gets the
    /// key's index and consumes the value. Any other key, or one twice, declines.
    fn object_known(
        &mut self,
        keys: &[&str],
        field: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let (mut expect, mut seen) = (0usize, 0u64);
        self.members(
            |s| {
                let key = s.known_key(keys, expect)?;
                if key >= 64 || seen & (1 << key) != 0 {
                    return None;
                }
                seen |= 1 << key;
                expect = key + 1;
                Some(key)
            },
            field,
        )
    }

    /// The members of an object: `key` reads each key, `field` its value.
    fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Self) -> Option<K>,
        mut field: impl FnMut(&mut Self, K) -> Option<()>,
    ) -> Option<()> {
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
            let k = key(self)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            field(self, k)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_zero_in_an_integer_field_is_refused_as_serde_does() {
        // Found by a long run of tests/fuzz.rs: serde_json reads `-0` as the float -0.0.
        let line = r#"{"frame":{"node":"n","at_ms":1,"gpus":[{"index":0}],"nics":[{"device":"mlx5_0","port":1,"numa_node":-0}]}}"#;
        assert!(frame_line(line).is_none());
        assert!(crate::wire::decode_general(line).is_err());
    }
    use crate::wire::{WireMessage, encode};
    use proptest::prelude::*;

    /// What serde_json makes of the line: the answer the fast path must equal.
    fn by_serde(line: &str) -> Option<NodeFrame> {
        match crate::wire::decode_general(line) {
            Ok(crate::wire::Decoded::Message(WireMessage::Frame(f))) => Some(f),
            _ => None,
        }
    }

    /// The form agents wrote before the column form: one object per GPU.
    fn keyed(frame: &NodeFrame) -> String {
        serde_json::to_string(&WireMessage::Frame(frame.clone())).expect("plain data")
    }

    fn sim_lines() -> Vec<String> {
        use crate::sim::{SimCluster, SimConfig, SimLoad};
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
    fn the_column_form_carries_the_same_frame_in_under_half_the_bytes() {
        use crate::sim::{SimCluster, SimConfig, SimLoad};
        let mut sim = SimCluster::new(SimConfig::demo(1));
        let mut frame = sim.node_frame(0, 30, SimLoad::Full);
        frame.nics.clear();
        frame.gpus[3].xid_events.push(XidEvent {
            code: 79,
            at_ms: frame.at_ms,
        });
        let columns = encode(&WireMessage::Frame(frame.clone()));
        let objects = keyed(&frame);
        assert_eq!(frame.gpus.len(), 8);
        assert!(
            columns.starts_with(r#"{"frame":{"node":"node01","at_ms":"#),
            "{columns}"
        );
        assert!(
            columns.len() * 2 < objects.len(),
            "{} vs {} bytes",
            columns.len(),
            objects.len()
        );
        // Only GPU 3 has an Xid: the column exists, and the others' cells are empty lists.
        assert_eq!(columns.matches("\"xid_events\"").count(), 1);
        assert_eq!(frame_line(&columns), by_serde(&objects));
        assert_eq!(frame_line(&columns), by_serde(&columns));
        assert!(frame_line(&columns).is_some());
    }

    #[test]
    fn column_form_mistakes_are_garbled_not_guessed() {
        use crate::wire::decode_general;
        let ok = r#"{"frame":{"node":"n","at_ms":5,"gpu_fields":["index","temperature_c"],"gpu_rows":[[0,31.0],[1,null]]}}"#;
        let f = frame_line(ok).expect("fast path");
        assert_eq!(f.gpus[1].index, 1);
        assert_eq!(f.gpus[1].temperature_c, None);
        assert_eq!(Some(f), by_serde(ok));
        for (what, line, says) in [
            (
                "short row",
                ok.replace("[1,null]", "[1]"),
                "GPU row 1 has 1 values for 2",
            ),
            (
                "twice",
                ok.replace("\"temperature_c\"]", "\"index\"]"),
                "names \"index\" twice",
            ),
            (
                "both forms",
                ok.replace("\"gpu_fields\"", "\"gpus\":[],\"gpu_fields\""),
                "either gpus",
            ),
            (
                "rows alone",
                ok.replace("\"gpu_fields\":[\"index\",\"temperature_c\"],", ""),
                "either gpus",
            ),
            ("wrong type", ok.replace("31.0", "\"hot\""), "GPU row 0"),
        ] {
            assert_eq!(frame_line(&line), None, "{what}");
            match decode_general(&line) {
                Err(e) => assert!(e.contains(says), "{what}: {e}"),
                Ok(d) => panic!("{what}: decoded {d:?}"),
            }
        }
        // A column this version does not know: the general path reads the rest.
        let newer = ok
            .replace("\"temperature_c\"]", "\"temperature_c\",\"future\"]")
            .replace("31.0]", "31.0,7]")
            .replace("null]", "null,8]");
        assert_eq!(frame_line(&newer), None);
        assert_eq!(by_serde(&newer), by_serde(ok));
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
                // 18446744073709551621 is 2^64 + 5: twenty digits read without checks would
                // wrap to 5 and pass as 0.5.
                "twenty digits that wrap past u64",
                ok.replace("84.082", "1844674407370955162.1"),
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

    fn arb_counters() -> impl Strategy<Value = crate::model::PortCounters> {
        proptest::collection::vec((0usize..23, any::<u64>()), 0..4).prop_map(|set| {
            let mut c = crate::model::PortCounters::default();
            for (i, v) in set {
                let name =
                    crate::model::PortCounters::NAMES[i % crate::model::PortCounters::NAMES.len()];
                c.set(name, v);
            }
            c
        })
    }

    fn arb_nic() -> impl Strategy<Value = NicSample> {
        (
            "[a-z0-9_\\\\é]{0,6}",
            any::<u32>(),
            proptest::option::of("[A-Za-z_]{0,6}"),
            arb_f32(),
            proptest::option::of(any::<i32>()),
            proptest::option::of(0u64..1 << 40),
            arb_counters(),
        )
            .prop_map(
                |(device, port, state, rate_gbps, numa_node, tx, counters)| NicSample {
                    device,
                    port,
                    state: state.clone(),
                    phys_state: state.map(|s| format!("{s}Up")),
                    rate_gbps,
                    link_layer: Some("InfiniBand".into()),
                    numa_node,
                    tx_bytes_per_sec: tx.map(|t| t as f64),
                    rx_bytes_per_sec: None,
                    counters,
                },
            )
    }

    fn arb_net() -> impl Strategy<Value = NetSample> {
        (
            "[a-z0-9]{0,6}",
            proptest::option::of(any::<u64>()),
            proptest::option::of(0u64..1 << 40),
            arb_counters(),
        )
            .prop_map(|(iface, speed_mbps, rx, counters)| NetSample {
                iface,
                operstate: Some("up".into()),
                speed_mbps,
                tx_bytes_per_sec: None,
                rx_bytes_per_sec: rx.map(|r| r as f64),
                counters,
            })
    }

    proptest! {
        /// Whatever the encoder writes, in either form, the fast path reads as serde does (or
        /// declines), and both forms carry the same frame.
        #[test]
        fn agrees_with_serde_on_encoded_frames(
            gpus in proptest::collection::vec(arb_gpu(), 0..4),
            node in "[a-z0-9\\-\"\\\\é]{0,8}",
            at_ms in any::<u64>(),
            nics in proptest::collection::vec(arb_nic(), 0..3),
            netdevs in proptest::collection::vec(arb_net(), 0..2),
        ) {
            let frame = NodeFrame {
                node,
                at_ms,
                gpus,
                nics,
                netdevs,
            };
            let columns = encode(&WireMessage::Frame(frame.clone()));
            let objects = keyed(&frame);
            for line in [&columns, &objects] {
                // It may decline only for escapes, exponents and negative numbers.
                let b = line.as_bytes();
                let exponent = b.windows(2).any(|w| w[0].is_ascii_digit() && w[1] == b'e');
                let negative =
                    b.windows(2).any(|w| matches!(w[0], b':' | b'[' | b',') && w[1] == b'-');
                let fast = frame_line(line);
                if !line.contains('\\') && !exponent && !negative {
                    prop_assert!(fast.is_some(), "declined {}", line);
                }
                if let Some(fast) = fast {
                    prop_assert_eq!(Some(fast), by_serde(line));
                }
            }
            prop_assert_eq!(by_serde(&columns), by_serde(&objects));
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

        /// Numbers of every length (past the 19 digits one pass reads exactly, past u64 and
        /// past 2^53) in the fields that take them: accepted only as serde reads them.
        #[test]
        fn numbers_of_any_length_read_as_serde_does(
            whole in "(0|[1-9][0-9]{0,24})",
            fraction in proptest::option::of("[0-9]{1,24}"),
        ) {
            let number = match &fraction {
                Some(f) => format!("{whole}.{f}"),
                None => whole.clone(),
            };
            for column in ["power_avg_watts", "memory_used_bytes", "nvlink_tx_bytes_per_sec"] {
                let line = format!(
                    "{{\"frame\":{{\"node\":\"n\",\"at_ms\":{whole},\"gpu_fields\":\
                     [\"index\",\"{column}\"],\"gpu_rows\":[[0,{number}]]}}}}"
                );
                if let Some(fast) = frame_line(&line) {
                    prop_assert_eq!(Some(fast), by_serde(&line), "{}", line);
                }
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
