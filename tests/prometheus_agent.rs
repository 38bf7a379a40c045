//! `burnin agent --listen`: its `/metrics` through promtool, scraped by a real Prometheus server
//! (both from Debian's `prometheus` package) on loopback, whose answers must match the agent's
//! own frames within one scrape interval, and a scrape taken on the H200 beside its frames.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use burnin::model::NodeFrame;
use common::prom::{Frames, Running, TempDir, get, prometheus, tool, wait_for};

/// The simulated agent these tests scrape: two GPUs at full load, GPU 1 off the bus (Xid 79),
/// GPU 0 hot.
fn agent(interval: &str) -> (Running, SocketAddr, Frames) {
    common::prom::agent(&[
        "--sim",
        "--gpus",
        "2",
        "--load",
        "full",
        "--fault",
        "xid79:1",
        "--fault",
        "thermal:0",
        "--interval",
        interval,
    ])
}

/// promtool's findings on a text, and its exit status.
fn promtool_check(promtool: &PathBuf, text: &str) -> (Option<i32>, Vec<String>) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = child.wait_with_output().expect("promtool");
    let findings =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (
        out.status.code(),
        findings.lines().map(str::to_string).collect(),
    )
}

/// What promtool's linter says of dcgm-exporter's own names and labels: inherited, by design.
const DCGM_STYLE: &[&str] = &[
    "label names should be written in 'snake_case' not 'camelCase'",
    "counter metrics should have \"_total\" suffix",
    "metric name should not include type 'counter'",
];

#[test]
fn metrics_parse_in_promtool_and_burnin_series_lint_clean() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    let (_agent, addr, _frames) = agent("200ms");
    let text = wait_for("a frame at /metrics", Duration::from_secs(20), || {
        get(addr, "/metrics").filter(|t| t.contains("DCGM_FI_DEV_POWER_USAGE"))
    });
    let (code, findings) = promtool_check(&promtool, &text);
    // 0: clean; 3: lint findings only. Anything else is text promtool could not read.
    assert!(matches!(code, Some(0 | 3)), "{code:?}: {findings:?}");
    for f in &findings {
        let (metric, message) = f.split_once(' ').unwrap_or((f, ""));
        assert!(
            metric.starts_with("DCGM_FI_") && DCGM_STYLE.contains(&message),
            "a finding that is not dcgm-exporter's own style: {f}"
        );
    }
    // And a real dcgm-exporter scrape draws the same findings.
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/dcgm-exporter/metrics-v100-4gpu-old-labels-partial.prom"
    ))
    .expect("fixture");
    let real: String = fixture
        .lines()
        .filter(|l| !l.starts_with("# source"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (_, real_findings) = promtool_check(&promtool, &real);
    for style in DCGM_STYLE {
        assert!(
            real_findings.iter().any(|f| f.ends_with(style)),
            "dcgm-exporter itself draws {style:?}: {real_findings:?}"
        );
    }
    assert!(text.contains("burnin_gpu_clock_event_reason{"));
}

#[test]
fn a_real_prometheus_scrapes_what_the_agent_sampled() {
    let Some(prometheus_bin) = tool("prometheus") else {
        return;
    };
    let (_agent, agent_addr, frames) = agent("250ms");
    let dir = TempDir::new("prom");
    let (_server, prom_addr) = prometheus(
        &prometheus_bin,
        &dir.0,
        &[agent_addr],
        Duration::from_secs(1),
        &[],
    );
    // GPU 1 has fallen off the bus (Xid 79): the agent has no power reading for it, so
    // Prometheus must have GPU 0's power and none for GPU 1.
    let answer: serde_json::Value = wait_for(
        "GPU 0's power in prometheus",
        Duration::from_secs(30),
        || {
            let body = get(prom_addr, "/api/v1/query?query=DCGM_FI_DEV_POWER_USAGE")?;
            let v: serde_json::Value = serde_json::from_str(&body).ok()?;
            (!v["data"]["result"].as_array()?.is_empty()).then_some(v)
        },
    );
    let frames = frames.lock().expect("frames").clone();
    let with_power: Vec<u32> = frames
        .last()
        .map(|f| {
            f.gpus
                .iter()
                .filter(|g| g.power_avg_watts.is_some())
                .map(|g| g.index)
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(with_power, [0], "the simulator's GPU 1 is off the bus");
    let result = answer["data"]["result"].as_array().expect("result");
    assert_eq!(result.len(), 1, "{result:?}");
    for series in result {
        let gpu: u32 = series["metric"]["gpu"]
            .as_str()
            .and_then(|g| g.parse().ok())
            .expect("gpu label");
        assert_eq!(series["metric"]["job"], "burnin");
        assert!(
            series["metric"]["UUID"]
                .as_str()
                .is_some_and(|u| u.starts_with("GPU-"))
        );
        let at_s = series["value"][0].as_f64().expect("sample time");
        let value: f64 = series["value"][1]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("value");
        // The scrape took the agent's latest frame: one of those sampled in the scrape
        // interval (plus one agent period) before Prometheus's sample time.
        let at_ms = (at_s * 1000.0) as u64;
        let window: Vec<f64> = frames
            .iter()
            .filter(|f| f.at_ms + 1_250 + 250 >= at_ms && f.at_ms <= at_ms + 250)
            .filter_map(|f| f.gpus.iter().find(|g| g.index == gpu))
            .filter_map(|g| g.power_avg_watts.map(f64::from))
            .collect();
        assert!(
            window.contains(&value),
            "GPU {gpu}: prometheus has {value} W at {at_ms}; the agent's frames then: {window:?}"
        );
    }
    // The Xid the simulator injected reaches Prometheus under dcgm-exporter's name.
    let xid = wait_for("the Xid gauge", Duration::from_secs(30), || {
        let body = get(
            prom_addr,
            "/api/v1/query?query=DCGM_FI_DEV_XID_ERRORS%7Bgpu%3D%221%22%7D",
        )?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let value = v["data"]["result"][0]["value"][1].as_str()?.to_string();
        (value == "79").then_some(value)
    });
    assert_eq!(xid, "79");
}

/// On the H200: the agent's frames (column form, real NVML) decode through the fast path, and
/// the scrape taken beside them carries the same readings under dcgm-exporter's names.
#[test]
fn the_h200_scrape_matches_the_h200_frames() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/h200-exporter");
    let frames_text = std::fs::read_to_string(format!("{dir}/frames.ndjson")).expect("frames");
    let frames: Vec<NodeFrame> = frames_text
        .lines()
        .filter(|l| l.starts_with("{\"frame\""))
        .map(|l| {
            burnin::wire::scan::frame_line(l)
                .unwrap_or_else(|| panic!("fast path declined a real agent line: {l}"))
        })
        .collect();
    assert_eq!(frames.len(), 6);
    let text = std::fs::read_to_string(format!("{dir}/metrics.prom")).expect("metrics");
    let parsed = burnin::wire::prometheus::parse(&text);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let value = |name: &str| {
        parsed
            .metric(name)
            .find(|s| s.label("gpu") == Some("0"))
            .map(|s| s.value)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let powers: Vec<f64> = frames
        .iter()
        .filter_map(|f| f.gpus[0].power_avg_watts.map(f64::from))
        .collect();
    assert!(
        powers.contains(&value("DCGM_FI_DEV_POWER_USAGE")),
        "{powers:?}"
    );
    let g = &frames[frames.len() - 1].gpus[0];
    assert_eq!(value("DCGM_FI_DEV_POWER_MGMT_LIMIT"), 700.0);
    assert_eq!(Some(value("DCGM_FI_DEV_SM_CLOCK") as u32), g.sm_clock_mhz);
    assert_eq!(
        value("DCGM_FI_DEV_FB_TOTAL"),
        (g.memory_total_bytes.expect("memory total") as f64 / 1048576.0).round()
    );
    assert_eq!(value("DCGM_FI_DEV_XID_ERRORS"), 0.0);
}
