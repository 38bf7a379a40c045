//! What one frame from a node may carry, held where the frame enters burnin (issue 41): an
//! agent that sends 45 000 GPU indices or 40 000 Xid events a frame cost `burnin run` gigabytes
//! and wrote record lines past what the record's reader takes. The console's store had these
//! caps; the run path and the record did not. What is left out is counted and said.

use std::collections::BTreeSet;

use super::{MAX_GPUS_PER_NODE, NodeFrame};

/// RDMA ports, and Ethernet interfaces, one frame may carry (as the store keeps).
pub const MAX_PORTS_PER_FRAME: usize = 64;

/// Xid events one GPU's sample may carry: the first of each code, then repeats up to this.
pub const MAX_XIDS_PER_GPU_FRAME: usize = 64;

/// Entries of a GPU's lists (links, processes) one sample may carry.
pub const MAX_LIST_PER_GPU: usize = 256;

/// What [`bound_frame`] left out of one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// GPU samples past [`MAX_GPUS_PER_NODE`], with an index past it, or repeating an index.
    pub gpus: usize,
    /// Ports and interfaces past [`MAX_PORTS_PER_FRAME`].
    pub ports: usize,
    /// Xid repeats past [`MAX_XIDS_PER_GPU_FRAME`] (every distinct code is kept).
    pub xids: usize,
    /// List entries past [`MAX_LIST_PER_GPU`].
    pub lists: usize,
}

impl LeftOut {
    /// Nothing was left out.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// In words, for the node's note.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.gpus > 0 {
            parts.push(format!(
                "{} GPU sample(s) past the {MAX_GPUS_PER_NODE} GPUs a node has, or repeating one",
                self.gpus
            ));
        }
        if self.ports > 0 {
            parts.push(format!("{} port(s) past {MAX_PORTS_PER_FRAME}", self.ports));
        }
        if self.xids > 0 {
            parts.push(format!(
                "{} Xid repeat(s) past {MAX_XIDS_PER_GPU_FRAME} a GPU (every code kept)",
                self.xids
            ));
        }
        if self.lists > 0 {
            parts.push(format!(
                "{} link or process entries past {MAX_LIST_PER_GPU} a GPU",
                self.lists
            ));
        }
        parts.join(", ")
    }
}

/// Hold `frame` to what a node can carry; what was left out, counted.
pub fn bound_frame(frame: &mut NodeFrame) -> LeftOut {
    let mut out = LeftOut::default();
    let before = frame.gpus.len();
    let mut seen = BTreeSet::new();
    // One sample past the limit goes on, so the store says what the node sent (its
    // `stream-over-limit` finding); the rest stop here.
    let mut one_past = false;
    frame.gpus.retain(|g| {
        let fits = g.index < MAX_GPUS_PER_NODE
            && seen.len() < MAX_GPUS_PER_NODE as usize
            && seen.insert(g.index);
        fits || !std::mem::replace(&mut one_past, true)
    });
    out.gpus = before - frame.gpus.len();
    for list in [frame.nics.len(), frame.netdevs.len()] {
        out.ports += list.saturating_sub(MAX_PORTS_PER_FRAME);
    }
    frame.nics.truncate(MAX_PORTS_PER_FRAME);
    frame.netdevs.truncate(MAX_PORTS_PER_FRAME);
    for g in &mut frame.gpus {
        if g.xid_events.len() > MAX_XIDS_PER_GPU_FRAME {
            let mut codes = BTreeSet::new();
            let mut repeats = 0;
            let n = g.xid_events.len();
            g.xid_events.retain(|x| {
                if codes.insert(x.code) {
                    codes.len() <= MAX_LIST_PER_GPU
                } else {
                    repeats += 1;
                    repeats < MAX_XIDS_PER_GPU_FRAME
                }
            });
            out.xids += n - g.xid_events.len();
        }
        out.lists += g.nvlink_link_errors.len().saturating_sub(MAX_LIST_PER_GPU);
        g.nvlink_link_errors.truncate(MAX_LIST_PER_GPU);
        if let Some(l) = &mut g.compute_pids {
            out.lists += l.len().saturating_sub(MAX_LIST_PER_GPU);
            l.truncate(MAX_LIST_PER_GPU);
        }
        if let Some(l) = &mut g.nvlink_link_up {
            out.lists += l.len().saturating_sub(MAX_LIST_PER_GPU);
            l.truncate(MAX_LIST_PER_GPU);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuSample, XidEvent};

    fn gpu(index: u32, xids: &[u32]) -> GpuSample {
        GpuSample {
            index,
            xid_events: xids
                .iter()
                .map(|&code| XidEvent { code, at_ms: 1 })
                .collect(),
            ..GpuSample::default()
        }
    }

    /// Issue 41, case 3: 45 000 GPU indices and 40 000 Xid events a frame are held to what a
    /// node has, every distinct Xid code kept, the rest counted.
    #[test]
    fn a_frame_carries_what_a_node_has_and_says_what_it_left_out() {
        let mut f = NodeFrame {
            node: "n".into(),
            at_ms: 1,
            gpus: (0..45_000).map(|i| gpu(i, &[])).collect(),
            nics: Vec::new(),
            netdevs: Vec::new(),
        };
        let mut storm = vec![13; 40_000];
        storm.push(79);
        f.gpus[3] = gpu(3, &storm);
        f.gpus.push(gpu(3, &[48]));
        let left = bound_frame(&mut f);
        // A node's worth, and one past it for the store to name.
        assert_eq!(f.gpus.len(), MAX_GPUS_PER_NODE as usize + 1);
        assert_eq!(left.gpus, 45_001 - MAX_GPUS_PER_NODE as usize - 1);
        let codes: BTreeSet<u32> = f.gpus[3].xid_events.iter().map(|x| x.code).collect();
        assert_eq!(codes, BTreeSet::from([13, 79]));
        // 64 of the storm's code, and the code after it.
        assert_eq!(f.gpus[3].xid_events.len(), MAX_XIDS_PER_GPU_FRAME + 1);
        assert_eq!(left.xids + f.gpus[3].xid_events.len(), 40_001);
        assert!(
            left.describe().contains("Xid repeat(s)"),
            "{}",
            left.describe()
        );
        let mut fine = NodeFrame {
            node: "n".into(),
            at_ms: 1,
            gpus: (0..8).map(|i| gpu(i, &[79])).collect(),
            nics: Vec::new(),
            netdevs: Vec::new(),
        };
        assert!(bound_frame(&mut fine).is_empty());
        assert_eq!(fine.gpus.len(), 8);
    }
}
