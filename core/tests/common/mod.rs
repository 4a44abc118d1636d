//! Test harness: a private redis-server per test binary (or per test when a test needs to stop
//! or reconfigure it), on a free port, with no persistence.
#![allow(dead_code)]

use crawlq::{Config, Queue, RedisExecutor};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct RedisServer {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    pub password: Option<String>,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Start with extra `redis-server` arguments (e.g. `["--requirepass", "x"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "crawlq-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for _ in 0..20 {
            let port = free_port();
            if let Some(child) = spawn(port, &dir, extra) {
                let password = extra
                    .windows(2)
                    .find(|w| w[0] == "--requirepass")
                    .map(|w| w[1].to_string());
                return RedisServer {
                    child,
                    port,
                    dir,
                    password,
                };
            }
        }
        panic!("could not start redis-server (is it installed? apt-get install redis-server)");
    }

    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// Run a redis-cli command against this server and return its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("redis-cli");
        cmd.arg("-p").arg(self.port.to_string());
        if let Some(p) = &self.password {
            cmd.arg("-a").arg(p).arg("--no-auth-warning");
        }
        let out = cmd.args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start again on the same port (after [`RedisServer::stop`]).
    pub fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = spawn(self.port, &self.dir, &[]) {
                self.child = child;
                return;
            }
            assert!(Instant::now() < deadline, "redis-server did not restart");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(port: u16, dir: &std::path::Path, extra: &[&str]) -> Option<Child> {
    let mut child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--unixsocket")
        .arg(dir.join("redis.sock"))
        .args([
            "--unixsocketperm",
            "700",
            "--enable-debug-command",
            "yes",
            "--dir",
        ])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (apt-get install redis-server)");
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return None; // exited: the port was taken, most likely
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && dir.join("redis.sock").exists()
        {
            return Some(child);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

static SHARED: OnceLock<RedisServer> = OnceLock::new();

/// The server shared by the tests of one binary. A static is never dropped, so the server is
/// stopped (and its directory removed) by an exit handler: it must not outlive the test run.
pub fn shared() -> &'static RedisServer {
    SHARED.get_or_init(|| {
        let server = RedisServer::start();
        // SAFETY: registers a plain `extern "C" fn` that takes no arguments.
        unsafe { libc::atexit(stop_shared) };
        server
    })
}

extern "C" fn stop_shared() {
    if let Some(server) = SHARED.get() {
        // SAFETY: signals the pid of the child this process started and still owns.
        unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGKILL) };
        let _ = std::fs::remove_dir_all(&server.dir);
    }
}

/// A fresh queue name.
pub fn unique(name: &str) -> String {
    format!("{name}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub async fn open(name: &str, config: Config) -> Queue<RedisExecutor> {
    Queue::connect(&shared().url(), &unique(name), config)
        .await
        .unwrap()
}

pub fn config() -> Config {
    Config::default()
}

pub fn items(urls: &[&str]) -> Vec<crawlq::SeedItem> {
    urls.iter().map(|u| (*u).into()).collect()
}

/// Keys of a queue matching a pattern suffix (e.g. `:l:*`), by SCAN.
pub fn scan_keys(server: &RedisServer, base: &str, suffix: &str) -> Vec<String> {
    let out = server.cli(&[
        "--scan",
        "--pattern",
        &format!("{}{suffix}", glob_escape(base)),
    ]);
    out.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn glob_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '*' | '?' | '[' | ']' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

/// Clock of the fixed-clock tests: an arbitrary, realistic epoch-ms value.
pub const T0: i64 = 1_800_000_000_000;

pub fn fixed_clock_config() -> Config {
    Config {
        fixed_clock_ms: Some(T0),
        ..Config::default()
    }
}

pub fn handles(leases: &[crawlq::Lease]) -> Vec<crawlq::LeaseHandle> {
    leases.iter().map(|l| l.handle()).collect()
}
