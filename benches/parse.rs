//! Parsing phase output as the runner does (line by line through `OutputParser`): nccl-tests
//! (the 2-node H100 capture), nvbandwidth (the 8-GPU H800 capture, every test case) and our
//! workload's JSON lines (the H200 T5 log, 5 000 steps). Throughput in lines a second; a node
//! prints a few lines a second, so this is about headroom for replays and 1000-node runs.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]
// criterion_group!/criterion_main! generate undocumented public functions.
#![allow(missing_docs)]

use burnin::parsers::{OutputParser, ParseContext, ParserKind};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn fixture(rel: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with("# source:") && !l.starts_with("burnin: "))
        .map(str::to_string)
        .collect()
}

fn parse(c: &mut Criterion) {
    for (name, kind, rel) in [
        (
            "nccl-tests",
            ParserKind::NcclTests,
            "nccl-tests/h100-2node-16rank-allreduce.txt",
        ),
        (
            "nvbandwidth",
            ParserKind::Nvbandwidth,
            "nvbandwidth/v0.2-h800-8gpu-all-testcases.txt",
        ),
        (
            "workload JSON",
            ParserKind::Workload,
            "h200-run/run1/logs/T5/h200.log",
        ),
    ] {
        let lines = fixture(rel);
        let mut group = c.benchmark_group("parse");
        group.throughput(Throughput::Elements(lines.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut p = OutputParser::new(
                    kind,
                    ParseContext {
                        node: "n1".into(),
                        expected_gpus: 8,
                    },
                );
                let mut n = 0usize;
                for l in &lines {
                    n += p.push(l).map_or(0, |m| m.len());
                }
                n + p.finish().len()
            })
        });
        group.finish();
    }
}

criterion_group!(benches, parse);
criterion_main!(benches);
