//! A real OpenSSH server per test node, on a loopback address and a free port, with generated
//! host and user keys, a private `known_hosts` and an ssh client config (`-F`) naming each node.
//! `SetEnv PATH=…` in the server config puts stand-in tools (a fake `nvidia-smi`) first on the
//! node's PATH. Everything lives in a temp dir and stops when the harness is dropped.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when tests must fail rather than skip for a missing service.
pub fn require_real() -> bool {
    std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1")
}

/// The sshd binary, or `None` (skip) — a panic under BURNIN_REQUIRE_REAL=1.
pub fn sshd_binary() -> Option<PathBuf> {
    for p in ["/usr/sbin/sshd", "/usr/local/sbin/sshd"] {
        if Path::new(p).exists() {
            return Some(PathBuf::from(p));
        }
    }
    if require_real() {
        panic!("sshd not found (Debian: apt-get install openssh-server) and BURNIN_REQUIRE_REAL=1");
    }
    eprintln!("skipping: sshd not installed");
    None
}

fn free_port(addr: &str) -> u16 {
    TcpListener::bind((addr, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "burnin-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen")
        .success();
    assert!(ok, "ssh-keygen {}", path.display());
}

/// One node: an sshd on its own address and port.
pub struct Node {
    /// Name in the ssh config and the inventory.
    pub name: String,
    /// Loopback address it listens on.
    pub addr: String,
    /// Port.
    pub port: u16,
    config: PathBuf,
    child: Option<Child>,
    log: PathBuf,
}

impl Node {
    /// Stop its sshd and end its sessions, as when a node goes down (connections die with it).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("pkill")
                .args(["-KILL", "-P", &c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start (again) on the same address and port.
    pub fn start(&mut self, sshd: &Path) {
        self.stop();
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(&self.log)
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect((self.addr.as_str(), self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd {} did not listen",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Several nodes and the client side to reach them.
pub struct Cluster {
    /// Temp dir with keys, configs and stand-in tools.
    pub dir: PathBuf,
    /// The nodes.
    pub nodes: Vec<Node>,
    /// `ssh -F` file.
    pub ssh_config: PathBuf,
    /// Directory first on every node's PATH (stand-in tools go here).
    pub bin: PathBuf,
    /// The user key the nodes accept.
    pub user_key: PathBuf,
    /// A key the nodes do not accept.
    pub wrong_key: PathBuf,
    sshd: PathBuf,
}

impl Cluster {
    /// `count` nodes named node01…, on 127.0.0.2… (each its own address, as on a real site).
    pub fn start(count: usize) -> Option<Cluster> {
        let sshd = sshd_binary()?;
        // sshd running as root wants its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = fresh_dir();
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("bin dir");
        let host_key = dir.join("host_ed25519");
        let user_key = dir.join("id_ed25519");
        let wrong_key = dir.join("id_wrong");
        keygen(&host_key);
        keygen(&user_key);
        keygen(&wrong_key);
        std::fs::copy(dir.join("id_ed25519.pub"), dir.join("authorized_keys"))
            .expect("authorized_keys");
        let host_pub = std::fs::read_to_string(dir.join("host_ed25519.pub")).expect("host pub");
        let host_pub: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(whoami);
        let mut known = String::new();
        let mut client = String::new();
        let mut nodes = Vec::new();
        for i in 0..count {
            let name = format!("node{:02}", i + 1);
            let addr = format!("127.0.0.{}", i + 2);
            let port = free_port(&addr);
            let config = dir.join(format!("sshd_{name}.conf"));
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress {addr}\nHostKey {hk}\nPidFile {dir}/sshd_{name}.pid\n\
                     AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                     PermitRootLogin prohibit-password\nSetEnv PATH={bin}:/usr/local/bin:/usr/bin:/bin\n\
                     LogLevel ERROR\n",
                    hk = host_key.display(),
                    dir = dir.display(),
                    bin = bin.display(),
                ),
            )
            .expect("sshd config");
            known.push_str(&format!(
                "[{addr}]:{port} {} {}\n",
                host_pub[0], host_pub[1]
            ));
            client.push_str(&format!(
                "Host {name}\n  HostName {addr}\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {dir}/known_hosts\n  StrictHostKeyChecking yes\n  \
                 GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n\n",
                key = user_key.display(),
                dir = dir.display(),
            ));
            let mut node = Node {
                name,
                addr,
                port,
                config,
                child: None,
                log: dir.join(format!("sshd_{i}.log")),
            };
            node.start(&sshd);
            nodes.push(node);
        }
        std::fs::write(dir.join("known_hosts"), known).expect("known_hosts");
        let ssh_config = dir.join("ssh_config");
        std::fs::write(&ssh_config, client).expect("ssh config");
        Some(Cluster {
            dir,
            nodes,
            ssh_config,
            bin,
            user_key,
            wrong_key,
            sshd,
        })
    }

    /// Path of the sshd binary.
    pub fn sshd(&self) -> &Path {
        &self.sshd
    }

    /// Put an executable script on every node's PATH.
    pub fn install_tool(&self, name: &str, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin.join(name);
        std::fs::write(&path, script).expect("write tool");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// Replace the known_hosts entry of every node with a different key (a "changed host").
    pub fn corrupt_known_hosts(&self) {
        let wrong = std::fs::read_to_string(self.dir.join("id_wrong.pub")).expect("pub");
        let wrong: Vec<&str> = wrong.split_whitespace().take(2).collect();
        let mut known = String::new();
        for n in &self.nodes {
            known.push_str(&format!(
                "[{}]:{} {} {}\n",
                n.addr, n.port, wrong[0], wrong[1]
            ));
        }
        std::fs::write(self.dir.join("known_hosts"), known).expect("known_hosts");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A temp directory no other cluster of any test has: made, never reused (tests start
/// clusters on several threads at once, and a clock can read the same nanosecond twice).
fn fresh_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "burnin-sshd-{}-{n}-{}",
            std::process::id(),
            rand_suffix()
        ));
        if std::fs::create_dir(&dir).is_ok() {
            return dir;
        }
    }
    panic!("no fresh temp directory for an sshd cluster");
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
