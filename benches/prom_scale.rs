//! The console's cost of watching a big cluster through Prometheus (issue 9): N simulated
//! nodes × 8 GPUs (`burnin agent --sim --listen --no-frames`, one process each, default 1024),
//! scraped every 5 s by a real Prometheus server (Debian's package) on loopback, watched by
//! `burnin triage --for 60s` (the console's source, store and triage each period, without
//! drawing). Prints the watcher's CPU and peak memory from `wait4`, and how many nodes it saw
//! stream. Runs only under `cargo bench`; asserts nothing.
//!
//! `BURNIN_BENCH_PROM_NODES=N` picks another size; `BURNIN_BENCH_PROM_WATCH=SECONDS` another
//! watch length.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]
// criterion_group!/criterion_main! generate undocumented public functions.
#![allow(missing_docs)]

#[path = "../tests/common/prom.rs"]
mod prom;

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prom::{Running, get, tool};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The address an agent said it serves, from its stderr file.
fn served(err: &Path) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(err).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("burnin agent: serving metrics at http://"))
        .and_then(|a| a.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
}

fn scalar(addr: SocketAddr, query: &str) -> Option<f64> {
    let q: String = query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = get(addr, &format!("/api/v1/query?query={q}"))?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// CPU (user, system) and peak RSS of a child, from `wait4`.
fn wait_rusage(child: &mut Child) -> (i32, Duration, Duration, u64) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: wait4 on our own child with valid out-pointers for status and usage.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (
        status,
        tv(usage.ru_utime),
        tv(usage.ru_stime),
        usage.ru_maxrss as u64,
    )
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`; only measured by `cargo bench`.
    }
    let Some(prometheus) = tool("prometheus") else {
        eprintln!("prom_scale: prometheus not installed (apt-get install prometheus); skipped");
        return;
    };
    let nodes = env_or("BURNIN_BENCH_PROM_NODES", 1024) as usize;
    let watch_s = env_or("BURNIN_BENCH_PROM_WATCH", 60);
    let bin = env!("CARGO_BIN_EXE_burnin");
    let dir = std::env::temp_dir().join(format!("burnin-promscale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let started = Instant::now();
    let mut agents = Vec::with_capacity(nodes);
    for i in 1..=nodes {
        let err = dir.join(format!("agent-{i}.err"));
        let child = Command::new(bin)
            .args([
                "agent",
                "--sim",
                "--gpus",
                "8",
                "--load",
                "full",
                "--interval",
                "5s",
                "--listen",
                "127.0.0.1:0",
                "--no-frames",
                "--seed",
            ])
            .arg(i.to_string())
            .args(["--node-name", &format!("sim{i:04}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("start agent");
        agents.push((Running(child), err));
    }
    let mut targets = Vec::with_capacity(nodes);
    for (_, err) in &agents {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(a) = served(err) {
                targets.push(a);
                break;
            }
            assert!(Instant::now() < until, "an agent never said its address");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    eprintln!(
        "prom_scale: {nodes} agents serving after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (_server, prom) =
        prom::prometheus(&prometheus, &dir, &targets, Duration::from_secs(5), &[]);
    let until = Instant::now() + Duration::from_secs(180);
    loop {
        let up = scalar(prom, "count(burnin_agent_frames_total)").unwrap_or(0.0) as usize;
        if up >= nodes {
            break;
        }
        assert!(
            Instant::now() < until,
            "prometheus has {up} of {nodes} agents after 180 s"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let series = get(prom, "/api/v1/status/tsdb")
        .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
        .and_then(|v| v["data"]["headStats"]["numSeries"].as_u64())
        .unwrap_or(0);
    eprintln!(
        "prom_scale: prometheus scrapes all {nodes} ({series} series in its head) after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let inventory = dir.join("burnin.toml");
    std::fs::write(
        &inventory,
        format!(
            "[defaults]\nmode = \"prometheus\"\ngpus = 8\ninterval = \"5s\"\n\
             [prometheus]\nurl = \"http://{prom}\"\nselector = 'job=\"burnin\"'\ntimeout = \"20s\"\n\
             [[node]]\nhost = \"sim[0001-{nodes:04}]\"\n"
        ),
    )
    .expect("inventory");
    let mut watcher = Command::new(bin)
        .args(["triage", "--json", "--for", &format!("{watch_s}s"), "-c"])
        .arg(&inventory)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("burnin triage");
    let mut out = String::new();
    if let Some(mut s) = watcher.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let watch_started = Instant::now();
    let (status, user, sys, max_rss_kb) = wait_rusage(&mut watcher);
    let wall = watch_started.elapsed().max(Duration::from_secs(watch_s));
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let streaming = doc["nodes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter(|n| n["link"]["state"] == "streaming")
                .count()
        })
        .unwrap_or(0);
    let gpus: usize = doc["nodes"]
        .as_array()
        .map(|n| {
            n.iter()
                .map(|n| n["gpus"].as_array().map_or(0, |g| g.len()))
                .sum()
        })
        .unwrap_or(0);
    let cpu = user + sys;
    println!(
        "prom_scale: watching {nodes} nodes x 8 GPUs through Prometheus at 5 s for {watch_s} s \
         (burnin triage, exit {}): {streaming} nodes streaming, {gpus} GPUs; CPU {:.2} s \
         (user {:.2}, sys {:.2}) = {:.1} % of one core; peak RSS {:.0} MiB",
        status >> 8,
        cpu.as_secs_f64(),
        user.as_secs_f64(),
        sys.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        max_rss_kb as f64 / 1024.0
    );
    drop(agents);
    let _ = std::fs::remove_dir_all(&dir);
}
