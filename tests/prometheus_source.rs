//! Nodes in `prometheus` mode against a real Prometheus server (Debian's package, started here
//! on loopback) that scrapes simulated agents' `/metrics` (`burnin agent --sim --listen`):
//! `burnin status --json` must show what the agents themselves sampled within one scrape
//! interval, the Xid one of them injected as a finding, and a node Prometheus does not have as
//! unreachable with the reason.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use burnin::model::NodeFrame;
use common::prom::{Frames, Running, TempDir, get, prometheus, tool, wait_for};

/// A simulated agent named `name` (its `Hostname` label), two GPUs at full load, with `faults`.
fn agent(name: &str, faults: &[&str]) -> (Running, SocketAddr, Frames) {
    let mut args = vec![
        "--sim",
        "--gpus",
        "2",
        "--load",
        "full",
        "--interval",
        "250ms",
        "--node-name",
        name,
    ];
    for f in faults {
        args.extend(["--fault", f]);
    }
    common::prom::agent(&args)
}

fn status(dir: &Path) -> (Option<i32>, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(["status", "--json", "--wait", "10s", "-c"])
        .arg(dir.join("burnin.toml"))
        .output()
        .expect("burnin status");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status --json: {e}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), doc)
}

#[test]
fn status_through_a_real_prometheus_matches_the_agents_frames() {
    let Some(bin) = tool("prometheus") else {
        return;
    };
    let dir = TempDir::new("promsrc");
    // GPU 1 of sim01 falls off the bus (Xid 79) 20 s after its agent starts: after the first
    // look of the triage below, so the gauge's change is seen as it happens.
    let (_a1, addr1, frames1) = agent("sim01", &["xid79:1@20"]);
    let (_a2, addr2, frames2) = agent("sim02", &[]);
    let (_server, prom) = prometheus(&bin, &dir.0, &[addr1, addr2], Duration::from_secs(1), &[]);
    std::fs::write(
        dir.0.join("burnin.toml"),
        format!(
            "[defaults]\nmode = \"prometheus\"\ngpus = 2\ninterval = \"1s\"\n\
             [prometheus]\nurl = \"http://{prom}\"\nselector = 'job=\"burnin\"'\n\
             [[node]]\nhost = \"sim[01-02]\"\n[[node]]\nhost = \"sim09\"\n"
        ),
    )
    .expect("inventory");
    // Both agents scraped at least twice, so every family has arrived.
    wait_for("both agents in prometheus", Duration::from_secs(30), || {
        let body = get(
            prom,
            "/api/v1/query?query=count(count_over_time(burnin_agent_frames_total%5B10s%5D)%3E%3D2)",
        )?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        (v["data"]["result"][0]["value"][1].as_str()? == "2").then_some(())
    });
    let (code, doc) = status(&dir.0);
    assert_eq!(
        code,
        Some(1),
        "sim09 is missing, so not every node answered"
    );
    let nodes = doc["nodes"].as_array().expect("nodes");
    let node = |name: &str| {
        nodes
            .iter()
            .find(|n| n["node"] == name)
            .unwrap_or_else(|| panic!("{name} in {doc}"))
    };
    let missing = &node("sim09")["link"];
    assert_eq!(missing["state"], "unreachable");
    assert!(
        missing["reason"].as_str().is_some_and(
            |r| r.contains("no series in Prometheus with Hostname or hostname = sim09")
        ),
        "{missing}"
    );
    for (name, frames) in [("sim01", &frames1), ("sim02", &frames2)] {
        let n = node(name);
        assert_eq!(n["link"]["state"], "streaming", "{n}");
        assert!(
            n["agent"]
                .as_str()
                .is_some_and(|a| a.contains("Prometheus http://")),
            "{n}"
        );
        // The simulator reads no memory clock, DRAM activity or PCIe rates: exactly those are
        // n/a (the document says why), not the families its agent serves under other names.
        let unavailable: Vec<&str> = n["unavailable"]
            .as_array()
            .map(|u| u.iter().filter_map(|x| x["reading"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            unavailable,
            ["memory clock", "DRAM active", "PCIe tx", "PCIe rx"],
            "{n}"
        );
        let at_ms = n["frame_at_ms"].as_u64().expect("frame time");
        let frames = frames.lock().expect("frames").clone();
        for gpu in n["gpus"].as_array().expect("gpus") {
            let index = gpu["index"].as_u64().expect("index") as u32;
            assert!(
                gpu["uuid"].as_str().is_some_and(|u| u.starts_with("GPU-")),
                "{gpu}"
            );
            // The scrape took the agent's newest frame: one sampled within a scrape interval
            // (1 s) and an agent period (250 ms) before Prometheus's sample time.
            let window: Vec<&NodeFrame> = frames
                .iter()
                .filter(|f| f.at_ms + 1_250 >= at_ms && f.at_ms <= at_ms + 250)
                .collect();
            let matches = |f: &&NodeFrame| {
                f.gpus.iter().find(|g| g.index == index).is_some_and(|g| {
                    let same = |want: Option<f64>, got: &serde_json::Value| match want {
                        None => got.is_null(),
                        Some(w) => got
                            .as_f64()
                            .is_some_and(|v| (v - w).abs() <= 1e-3 * w.abs().max(1.0)),
                    };
                    same(g.power_avg_watts.map(f64::from), &gpu["power_avg_watts"])
                        && same(g.temperature_c.map(f64::from), &gpu["temperature_c"])
                        && same(g.sm_clock_mhz.map(f64::from), &gpu["sm_clock_mhz"])
                        && same(g.utilization_pct.map(f64::from), &gpu["utilization_pct"])
                })
            };
            assert!(
                window.iter().any(matches),
                "{name} GPU {index}: status has {gpu} at {at_ms}; the agent's frames then: {:?}",
                window
                    .iter()
                    .map(|f| (
                        f.at_ms,
                        f.gpus
                            .iter()
                            .find(|g| g.index == index)
                            .map(|g| g.power_avg_watts)
                    ))
                    .collect::<Vec<_>>()
            );
        }
    }
    // Watched from before the Xid to after it: the gauge's change is an Xid event, so a
    // finding, and the GPU off the bus is lost.
    let out = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .args(["triage", "--json", "--for", "25s", "-c"])
        .arg(dir.0.join("burnin.toml"))
        .output()
        .expect("burnin triage");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "triage --json: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let findings = doc["findings"].as_array().expect("findings");
    for rule in ["xid", "gpu-lost"] {
        assert!(
            findings
                .iter()
                .any(|f| f["rule"] == rule && f["node"] == "sim01" && f["gpu"] == 1),
            "{rule}: {findings:?}"
        );
    }
    // The back-fill's range query, on the real server: history for every node, in time order,
    // after the node's hello and before its live frame.
    let inventory =
        burnin::config::inventory::Inventory::load(&dir.0.join("burnin.toml")).expect("inventory");
    let spec = inventory.prometheus.clone().expect("[prometheus]");
    let queries = burnin::sources::prometheus::Queries::new(&spec);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = burnin::sources::promql::PromClient::new(&spec).expect("client");
    // Prometheus has scraped for a few seconds only: ask until it has several steps.
    let (history, values, times) =
        wait_for("history of several steps", Duration::from_secs(30), || {
            let now = burnin::model::now_ms();
            let (history, values, times) = rt.block_on(async {
                (
                    client
                        .range(
                            &queries.history,
                            now - 8_000,
                            now - 1_000,
                            Duration::from_secs(1),
                        )
                        .await,
                    client.instant(&queries.values).await,
                    client.instant(&queries.times).await,
                )
            });
            let history = history.expect("range query");
            (!history.is_empty() && history.iter().all(|s| s.points.len() >= 4))
                .then_some((history, values, times))
        });
    let mut watched = burnin::sources::prometheus::PromNodes::new(
        inventory.nodes.clone(),
        &spec,
        inventory.interval,
    );
    watched.take_history(&history);
    let events = watched.step(
        &values.expect("values"),
        &times.expect("times"),
        None,
        burnin::model::now_ms(),
    );
    for name in ["sim01", "sim02"] {
        let frames: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                burnin::model::SourceEvent::Frame(f) if f.node == name => Some(f.at_ms),
                _ => None,
            })
            .collect();
        assert!(
            frames.len() >= 5,
            "{name}: history then the live frame: {frames:?}"
        );
        assert!(frames.windows(2).all(|w| w[0] < w[1]), "{name}: {frames:?}");
    }
}

/// bcrypt of `burnin-test-password` (made once with Python's `crypt`, libxcrypt): Prometheus's
/// web config wants the hash, never the password.
const TEST_PASSWORD_BCRYPT: &str = "$2b$10$eTH8rx7Cexi8jrgwo5EUqu1iv4/NODrg4ZiCdL8tSeRS2drO1i9By";

#[test]
fn tls_and_basic_auth_as_the_site_configures_them() {
    let Some(bin) = tool("prometheus") else {
        return;
    };
    let dir = TempDir::new("promtls");
    let Some((_ca, cert, key)) = common::tls::test_ca(&dir.0) else {
        return;
    };
    std::fs::write(
        dir.0.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n\
             basic_auth_users:\n  burnin: '{TEST_PASSWORD_BCRYPT}'\n",
            cert.display(),
            key.display()
        ),
    )
    .expect("web config");
    std::fs::write(dir.0.join("right"), "burnin-test-password\n").expect("password");
    std::fs::write(dir.0.join("wrong"), "not-the-password\n").expect("password");
    let (_agent, agent_addr, _frames) = agent("sim05", &[]);
    // Behind TLS and basic auth, /-/ready cannot be asked plainly: burnin's own status waits.
    let web = format!("--web.config.file={}", dir.0.join("web.yml").display());
    let (_server, prom) = prometheus(&bin, &dir.0, &[agent_addr], Duration::from_secs(1), &[web]);
    let port = prom.port();
    let inventory = |password: &str, ca: bool| {
        std::fs::write(
            dir.0.join("burnin.toml"),
            format!(
                "[defaults]\nmode = \"prometheus\"\ngpus = 2\ninterval = \"1s\"\n\
                 [prometheus]\nurl = \"https://127.0.0.1:{port}\"\n\
                 basic_auth_user = \"burnin\"\nbasic_auth_password_file = \"{password}\"\n{}\
                 [[node]]\nhost = \"sim05\"\n",
                if ca { "ca_file = \"ca.pem\"\n" } else { "" }
            ),
        )
        .expect("inventory");
    };
    let reason = |doc: &serde_json::Value| {
        doc["nodes"][0]["link"]["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    // The right password and the site's CA: the node streams (once Prometheus has scraped).
    inventory("right", true);
    let doc = wait_for(
        "sim05 streaming through TLS and basic auth",
        Duration::from_secs(60),
        || {
            let (code, doc) = status(&dir.0);
            (code == Some(0)).then_some(doc)
        },
    );
    assert_eq!(
        doc["nodes"][0]["gpus"].as_array().map(Vec::len),
        Some(2),
        "{doc}"
    );
    // A wrong password: refused, and said so.
    inventory("wrong", true);
    let (code, doc) = status(&dir.0);
    assert_eq!(code, Some(1));
    assert!(
        reason(&doc).contains("refused the query (HTTP 401)"),
        "{doc}"
    );
    // Without the site's CA the server is not trusted, and the reason says so in a line (the
    // query, which is long, is not in it).
    inventory("right", false);
    let (_, doc) = status(&dir.0);
    let why = reason(&doc);
    assert!(
        why.contains("invalid peer certificate: UnknownIssuer"),
        "{why}"
    );
    assert!(!why.contains("query="), "{why}");
    // A password file that is not there is named.
    inventory("missing", true);
    let (_, doc) = status(&dir.0);
    let why = reason(&doc);
    assert!(
        why.contains("basic_auth_password_file") && why.contains("missing"),
        "{why}"
    );
}

/// A server posing as Prometheus that answers every query with `body`.
fn answering_with(body: std::sync::Arc<Vec<u8>>) -> SocketAddr {
    answering_values_with(body.clone(), body)
}

/// A server that answers the poll's values query (the one grouping by `__name__`) with
/// `values` and every other query with `others`.
fn answering_values_with(
    values: std::sync::Arc<Vec<u8>>,
    others: std::sync::Arc<Vec<u8>>,
) -> SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (values, others) = (values.clone(), others.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                let mut request = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                    if request.is_empty() {
                        request = line.clone();
                    }
                    line.clear();
                }
                // The query is form-encoded: "max by (__name__, …" is "max+by+%28__name__".
                let body = if request.contains("%28__name__") {
                    values
                } else {
                    others
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body);
            });
        }
    });
    addr
}

/// An answer of `len` bytes of series with many tiny labels, the costliest shape to decode.
fn tiny_labels_answer(len: usize) -> Vec<u8> {
    let mut out = br#"{"status":"success","data":{"resultType":"vector","result":["#.to_vec();
    let labels: String = (0..200)
        .map(|i| format!(r#""l{i}":"v""#))
        .collect::<Vec<_>>()
        .join(",");
    let series = format!(r#"{{"metric":{{{labels}}},"value":[1800000000,"1"]}}"#);
    while out.len() + series.len() + 8 < len {
        out.extend_from_slice(series.as_bytes());
        out.push(b',');
    }
    out.pop();
    out.extend_from_slice(b"]}}");
    out
}

/// `burnin status` against `server`, under GNU time: (stdout, peak RSS kB).
fn status_measured(dir: &Path, server: SocketAddr) -> (String, i64) {
    std::fs::write(
        dir.join("burnin.toml"),
        format!(
            "[defaults]\nmode = \"prometheus\"\ngpus = 2\ninterval = \"1s\"\n\
             [prometheus]\nurl = \"http://{server}\"\n[[node]]\nhost = \"sim01\"\n"
        ),
    )
    .expect("inventory");
    let rss = dir.join("peak-rss");
    let out = common::under_gnu_time(env!("CARGO_BIN_EXE_burnin"), &rss)
        .args(["status", "--json", "--wait", "3s", "-c"])
        .arg(dir.join("burnin.toml"))
        .output()
        .expect("burnin status");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        common::gnu_time_peak_kb(&rss),
    )
}

/// Issue 41, case 9: a 400 MB answer (under the 512 MiB limit then) cost `status` about 7 GB.
/// The limit is 128 MiB now, refused before a byte is read where the server says the length;
/// an answer under it of the costliest shape (many tiny labels) is decoded in about three
/// times its size. A poll asks up to three queries at once: a server answering each with
/// 100 MB cost 650 MB until the three shared one 128 MiB budget; now the poll is refused at
/// the first answer past it, the others dropped.
#[test]
fn a_huge_prometheus_answer_costs_memory_in_proportion_not_gigabytes() {
    let dir = TempDir::new("prom-huge");
    let huge = answering_with(std::sync::Arc::new(tiny_labels_answer(400 << 20)));
    let (out, huge_kb) = status_measured(&dir.0, huge);
    assert!(out.contains("over 128 MiB"), "{out}");
    let big = std::sync::Arc::new(tiny_labels_answer(100 << 20));
    let every = answering_with(big.clone());
    let (out, every_kb) = status_measured(&dir.0, every);
    assert!(
        out.contains("one poll's answers together) over 128 MiB"),
        "{out}"
    );
    let empty = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
    let one = answering_values_with(big, std::sync::Arc::new(empty.to_vec()));
    let (out, one_kb) = status_measured(&dir.0, one);
    assert!(!out.contains("over 128 MiB"), "{out}");
    eprintln!(
        "peak RSS: 400 MB answer {huge_kb} kB; 100 MB to every query {every_kb} kB; 100 MB to the values query {one_kb} kB"
    );
    assert!(huge_kb < 100_000, "400 MB answer: peak RSS {huge_kb} kB");
    // Refused by the second answer's announced length, the other reads dropped.
    assert!(
        every_kb < 150_000,
        "100 MB to every query: peak RSS {every_kb} kB"
    );
    assert!(one_kb < 450_000, "100 MB answer: peak RSS {one_kb} kB");
}
