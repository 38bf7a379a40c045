//! Writing a frame line in the column form.

use super::{GPU_KEYS, gpu_present, gpu_write};
use crate::model::NodeFrame;

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

pub(super) fn write_json<T: serde::Serialize>(value: &T, out: &mut Vec<u8>) {
    // Our own plain data always serializes; if it ever did not, a null keeps the line whole.
    let mark = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}

/// Byte rates go on the wire as whole numbers, as `GpuSample`'s own serializer writes them.
pub(super) fn write_rate(v: Option<f64>, out: &mut Vec<u8>) {
    match v {
        Some(x) if x.is_finite() => write_json(&(x.max(0.0).round() as u64), out),
        _ => out.extend_from_slice(b"null"),
    }
}
