//! The fast reader of a frame line: each key where the agent's order puts it, `None` on
//! anything it is not sure of.

use super::scanner::Scan;
use super::{GPU_KEYS, gpu_read};
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
pub(super) fn xid_event(s: &mut Scan<'_>) -> Option<XidEvent> {
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
pub(super) fn link_errors(s: &mut Scan<'_>) -> Option<NvlinkLinkErrors> {
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
