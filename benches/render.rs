//! Render one overview frame at 200×60 from a seeded simulated cluster of 12×8 and 128×8 GPUs,
//! into an off-screen buffer (the same `ui::draw` the terminal path calls). Goals (issue 2):
//! ≤ 1 ms and ≤ 4 ms in release.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]
// criterion_group!/criterion_main! generate undocumented public functions.
#![allow(missing_docs)]

use burnin::app::state::{Event, State};
use burnin::sim::{SIM_EPOCH_MS, SimCluster, SimConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn state_with(nodes: usize, at_s: u64) -> State {
    let mut config = SimConfig::demo(1);
    config.nodes = nodes;
    let mut state = State::new(vec![], vec![], "bench", (200, 60));
    let mut sim = SimCluster::new(config);
    for s in 0..=at_s {
        for e in sim.advance_to(SIM_EPOCH_MS + s * 1000) {
            state.update(Event::Source(e));
        }
    }
    state
}

fn render(c: &mut Criterion) {
    let area = Rect::new(0, 0, 200, 60);
    for nodes in [12usize, 128] {
        let state = state_with(nodes, 125);
        let mut buf = Buffer::empty(area);
        c.bench_function(&format!("render overview 200x60, {nodes}x8 GPUs"), |b| {
            b.iter(|| {
                buf.reset();
                burnin::ui::draw(&state, area, &mut buf);
            })
        });
    }
}

fn ingest(c: &mut Criterion) {
    // One simulated second of the 12-node cluster: 12 frames of 8 GPUs plus phase and probe events,
    // through the pure update (store + triage on the clock tick).
    let mut sim = SimCluster::new(SimConfig::demo(1));
    let events = sim.advance_to(SIM_EPOCH_MS + 125_000);
    let base = state_with(12, 0);
    c.bench_function("update: 126 simulated seconds of 12x8 GPUs", |b| {
        b.iter_batched(
            || base.clone(),
            |mut state| {
                for e in events.iter().cloned() {
                    state.update(Event::Source(e));
                }
                state
            },
            criterion::BatchSize::LargeInput,
        )
    });
}

fn decode_and_store(c: &mut Criterion) {
    // What the watcher does per agent line: decode NDJSON, then store the frame.
    use burnin::model::SourceEvent;
    use burnin::sim::SimLoad;
    use burnin::store::ClusterStore;
    use burnin::wire::{Decoded, Decoder, WireMessage, encode};
    let mut config = SimConfig::demo(1);
    config.nodes = 12;
    let mut sim = SimCluster::new(config);
    let mut lines = Vec::new();
    for s in 0..100u64 {
        for n in 0..12 {
            let mut f = sim.node_frame(n, s, SimLoad::Full);
            f.at_ms = SIM_EPOCH_MS + s * 1000;
            lines.push(encode(&WireMessage::Frame(f)));
        }
    }
    let samples = (lines.len() * 8) as u64;
    let mut group = c.benchmark_group("decode+store");
    group.throughput(criterion::Throughput::Elements(samples));
    group.bench_function("1200 frames x 8 GPUs (agent lines)", |b| {
        b.iter_batched(
            ClusterStore::new,
            |mut store| {
                let mut d = Decoder::new();
                for l in &lines {
                    if let Ok(Decoded::Message(WireMessage::Frame(f))) = d.decode(l) {
                        store.ingest(SourceEvent::Frame(f));
                    }
                }
                store
            },
            criterion::BatchSize::LargeInput,
        )
    });
    // The two halves apart, to say where the time goes.
    let frames: Vec<_> = lines
        .iter()
        .filter_map(|l| match Decoder::new().decode(l) {
            Ok(Decoded::Message(WireMessage::Frame(f))) => Some(f),
            _ => None,
        })
        .collect();
    group.bench_function("decode only", |b| {
        b.iter(|| {
            let mut d = Decoder::new();
            let mut n = 0usize;
            for l in &lines {
                if let Ok(Decoded::Message(WireMessage::Frame(f))) = d.decode(l) {
                    n += f.gpus.len();
                }
            }
            n
        })
    });
    // The form agents wrote before the column form (one object per GPU), through the fast path
    // and through serde_json alone: what every line cost before either.
    let objects: Vec<String> = frames
        .iter()
        .map(|f| serde_json::to_string(&WireMessage::Frame(f.clone())).unwrap_or_default())
        .collect();
    group.bench_function("decode only, object per GPU", |b| {
        b.iter(|| {
            let mut d = Decoder::new();
            let mut n = 0usize;
            for l in &objects {
                if let Ok(Decoded::Message(WireMessage::Frame(f))) = d.decode(l) {
                    n += f.gpus.len();
                }
            }
            n
        })
    });
    group.bench_function("decode only, object per GPU, serde_json alone", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &objects {
                if let Ok(Decoded::Message(WireMessage::Frame(f))) = burnin::wire::decode_general(l)
                {
                    n += f.gpus.len();
                }
            }
            n
        })
    });
    group.bench_function("store only", |b| {
        b.iter_batched(
            || (ClusterStore::new(), frames.clone()),
            |(mut store, frames)| {
                for f in frames {
                    store.ingest(SourceEvent::Frame(f));
                }
                store
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, render, ingest, decode_and_store);
criterion_main!(benches);
