//! Time until all 12 loopback nodes stream: 12 real sshd (tests/common/sshd.rs), the system ssh
//! client, `burnin agent --sim` on each. Goal (issue 3): ≤ 2 s. Runs only under `cargo bench`
//! (it needs sshd and takes a while); prints figures, asserts nothing.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]
// criterion_group!/criterion_main! generate undocumented public functions.
#![allow(missing_docs)]

#[path = "../tests/common/sshd.rs"]
mod sshd;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use burnin::config::inventory::Inventory;
use burnin::model::NodeLink;
use burnin::model::Source;
use burnin::sources::fleet::FleetSource;
use burnin::store::ClusterStore;
use burnin::transport::ssh::SshSettings;

fn nodes() -> usize {
    std::env::var("BURNIN_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`; only measured by `cargo bench`.
    }
    let n_nodes = nodes();
    let Some(cluster) = sshd::Cluster::start(n_nodes) else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_burnin");
    let mut text = format!(
        "[defaults]\nmode = \"agent\"\ninterval = \"1s\"\nconnect_timeout = \"5s\"\nagent_path = \"{bin}\"\n\
         agent_args = [\"--sim\", \"--gpus\", \"8\", \"--load\", \"full\"]\n"
    );
    text.push_str(&format!("[[node]]\nhost = \"node[01-{n_nodes:02}]\"\n"));
    let inventory = Inventory::parse("bench.toml", &text).expect("inventory");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut times = Vec::new();
    for round in 0..5 {
        let ssh = SshSettings {
            config_file: Some(cluster.ssh_config.clone()),
            control_dir: None,
            connect_timeout: Duration::from_secs(5),
        };
        let source = Box::new(FleetSource::new(inventory.clone(), ssh, PathBuf::from(bin)));
        let elapsed = rt.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel(8192);
            let (_cmd, cmd_rx) = tokio::sync::mpsc::unbounded_channel();
            let started = Instant::now();
            let task = tokio::spawn(source.run(tx, cmd_rx));
            let mut store = ClusterStore::new();
            let all = |s: &ClusterStore| {
                s.nodes.len() == n_nodes
                    && s.nodes
                        .iter()
                        .all(|n| n.link == NodeLink::Streaming && n.gpus.len() == 8)
            };
            while !all(&store) {
                match tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
                    Ok(Some(ev)) => store.ingest(ev),
                    _ => panic!("nodes did not all stream within 30 s"),
                }
            }
            let t = started.elapsed();
            task.abort();
            t
        });
        println!(
            "round {round}: all {n_nodes} nodes streaming after {:.0} ms",
            elapsed.as_secs_f64() * 1e3
        );
        times.push(elapsed);
        std::thread::sleep(Duration::from_millis(500));
    }
    times.sort();
    println!(
        "time until {n_nodes} loopback nodes stream over ssh (5 cold starts, no multiplexing): median {:.0} ms, min {:.0} ms, max {:.0} ms",
        times[2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[4].as_secs_f64() * 1e3
    );
}
