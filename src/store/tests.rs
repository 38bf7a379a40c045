use super::*;
use crate::sources::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};

fn store_at(s: u64) -> ClusterStore {
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let mut store = ClusterStore::new();
    for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
        store.ingest(e);
    }
    store
}

#[test]
fn link_error_rises_count_only_what_came_within_the_window() {
    use crate::model::NvlinkLinkErrors;
    let mut gpu = GpuView::new(0, Period::SECOND);
    let at = |s: u64| 1_800_000_000_000 + s * 1000;
    let sample = |links: Vec<NvlinkLinkErrors>| GpuSample {
        nvlink_link_errors: links,
        ..GpuSample::default()
    };
    let link = |link, crc, replay| NvlinkLinkErrors {
        link,
        crc,
        replay,
        recovery: 0,
    };
    // Link 3 had 40 CRC errors before the console watched: history, not news.
    gpu.ingest(at(0), sample(vec![link(3, 40, 0)]));
    for s in 1..30 {
        gpu.ingest(at(s), sample(vec![link(3, 40, 0)]));
    }
    assert_eq!(
        gpu.link_errors.len(),
        1,
        "a snapshot only when something changed"
    );
    assert!(gpu.link_error_rises(at(29), 10_000).is_empty());
    // Link 3 gets 5 more and link 11 starts replaying.
    gpu.ingest(at(30), sample(vec![link(3, 45, 0), link(11, 0, 2)]));
    gpu.ingest(at(31), sample(vec![link(3, 45, 0), link(11, 0, 7)]));
    assert_eq!(
        gpu.link_error_rises(at(31), 10_000),
        vec![
            LinkRise {
                link: 3,
                crc: 5,
                replay: 0,
                recovery: 0
            },
            LinkRise {
                link: 11,
                crc: 0,
                replay: 7,
                recovery: 0
            },
        ]
    );
    // Quiet for longer than the window: nothing rose lately.
    for s in 32..50 {
        gpu.ingest(at(s), sample(vec![link(3, 45, 0), link(11, 0, 7)]));
    }
    assert!(gpu.link_error_rises(at(49), 10_000).is_empty());
}

#[test]
fn builds_nodes_gpus_and_phases_from_the_simulation() {
    let store = store_at(130);
    assert_eq!(store.nodes.len(), 12);
    assert_eq!(store.gpu_count(), 96);
    assert_eq!(
        store.running_phase().map(|p| p.spec.id.as_str()),
        Some("T4")
    );
    let t4 = store.busbw_phase().expect("T4 has busbw rows");
    let first = t4.busbw.values().next().expect("a row");
    // node07 hung after the stall, so later sizes have 11 nodes.
    assert_eq!(first.per_node.len(), 12);
    assert_eq!(t4.busbw.values().last().map(|r| r.per_node.len()), Some(11));
}

#[test]
fn a_silent_node_goes_stale_and_comes_back() {
    let mut store = store_at(5);
    store.ingest(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 10_000,
    });
    assert!(store.nodes.iter().all(|n| n.link == NodeLink::Stale));
    let mut sim = SimCluster::new(SimConfig::demo(1));
    for e in sim.advance_to(SIM_EPOCH_MS + 11_000) {
        store.ingest(e);
    }
    assert!(store.nodes.iter().all(|n| n.link == NodeLink::Streaming));
}

#[test]
fn loader_keeps_first_batch_of_the_new_job() {
    let store = store_at(340);
    assert_eq!(store.loader.phase.as_deref(), Some("T8"));
    assert_eq!(store.loader.first_batch_ms, Some(2140.0));
    assert!(store.loader.wait_share().is_some_and(|s| s > 0.10));
}

#[test]
fn stale_follows_the_sample_period() {
    let mut store = ClusterStore::with_period(Period::from_millis(5000).expect("period"));
    let mut sim = SimCluster::new(SimConfig::demo(1));
    for e in sim.advance_to(SIM_EPOCH_MS) {
        store.ingest(e);
    }
    store.ingest(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 10_000,
    });
    assert!(
        store.nodes.iter().all(|n| n.link == NodeLink::Streaming),
        "2 periods late"
    );
    store.ingest(SourceEvent::Clock {
        at_ms: SIM_EPOCH_MS + 16_000,
    });
    assert!(store.nodes.iter().all(|n| n.link == NodeLink::Stale));
}

#[test]
fn nic_counters_rise_over_a_window() {
    let store = store_at(60);
    let n09 = store.node("node09").expect("node09");
    assert_eq!(n09.nics.len(), crate::sources::sim::NICS_PER_NODE);
    assert!(n09.nics[0].rise("symbol_error", 10_000) > 0);
    assert_eq!(n09.nics[1].rise("symbol_error", 10_000), 0);
    let n05 = store.node("node05").expect("node05");
    assert_eq!(n05.nics[1].latest.rate_gbps, Some(200.0));
}

#[test]
fn lost_gpu_is_recognised() {
    let store = store_at(175);
    let gpu = &store.node("node11").expect("node11").gpus[0];
    assert!(gpu.is_lost());
    assert_eq!(gpu.xids.back().map(|x| x.code), Some(79));
}
