//! A real Prometheus server (Debian's package) and simulated agents serving `/metrics`, started
//! by a test on loopback and stopped when dropped; the tools found on PATH or the test skipped
//! (a failure under `BURNIN_REQUIRE_REAL=1`). Shared by the Prometheus tests and the
//! `prom_scale` bench.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use burnin::model::NodeFrame;
use burnin::wire::{Decoded, Decoder, WireMessage};

/// Whether CI asked that a missing tool fail rather than skip.
pub fn require_real() -> bool {
    std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1")
}

/// A tool on PATH, or `None` (skip) — a panic under BURNIN_REQUIRE_REAL=1.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            !require_real(),
            "{name} not found (apt-get install prometheus openssl) and BURNIN_REQUIRE_REAL=1"
        );
        eprintln!("skipped: {name} not installed");
    }
    found
}

/// A child killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory for `tag` and this test process.
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("burnin-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The frames an agent wrote on stdout, as they came.
pub type Frames = Arc<Mutex<Vec<NodeFrame>>>;

/// `burnin agent ARGS… --listen 127.0.0.1:0`: the address it serves, and its frames.
pub fn agent(args: &[&str]) -> (Running, SocketAddr, Frames) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burnin"))
        .arg("agent")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start burnin agent");
    let stderr = child.stderr.take().expect("stderr");
    let stdout = child.stdout.take().expect("stdout");
    let running = Running(child);
    let mut line = String::new();
    let mut stderr = BufReader::new(stderr);
    stderr.read_line(&mut line).expect("agent stderr");
    // Keep reading: a closed stderr would fail the agent's next message.
    std::thread::spawn(move || for _ in stderr.lines() {});
    let addr = line
        .trim()
        .strip_prefix("burnin agent: serving metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("agent said {line:?}"));
    let frames: Frames = Arc::default();
    let sink = Arc::clone(&frames);
    std::thread::spawn(move || {
        let mut decoder = Decoder::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(Decoded::Message(WireMessage::Frame(f))) = decoder.decode(&line) {
                sink.lock().expect("frames").push(f);
            }
        }
    });
    (running, addr, frames)
}

/// One HTTP/1.0 GET (no chunking, the server closes): the body, or `None` if not 200.
/// Prometheus answers in the request's version; the agent always in 1.1.
pub fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    (head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200")).then(|| body.to_string())
}

/// Ask `f` until it answers, at most `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Prometheus (`bin`) in `dir`, scraping `targets` as `job="burnin"` every `scrape`, with
/// `extra` arguments (a web config); its address. Ready when `/-/ready` answers, unless `extra`
/// puts TLS or auth in front of it (then the caller waits its own way).
pub fn prometheus(
    bin: &Path,
    dir: &Path,
    targets: &[SocketAddr],
    scrape: Duration,
    extra: &[String],
) -> (Running, SocketAddr) {
    let list: Vec<String> = targets.iter().map(|a| format!("'{a}'")).collect();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: {interval}ms\n  scrape_timeout: {timeout}ms\n  \
             evaluation_interval: {interval}ms\n\
             scrape_configs:\n  - job_name: burnin\n    static_configs:\n      \
             - targets: [{}]\n",
            list.join(", "),
            interval = scrape.as_millis(),
            // Under the interval, as Prometheus requires; at most its default 10 s.
            timeout = (scrape.as_millis() * 4 / 5).min(10_000)
        ),
    )
    .expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
    let server = Running(
        Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    if extra.is_empty() {
        wait_for("prometheus ready", Duration::from_secs(30), || {
            get(addr, "/-/ready")
        });
    }
    (server, addr)
}
