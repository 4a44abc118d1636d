//! Test harness: a private redis-server per test binary (or per test when a test needs to stop
//! or reconfigure it), on a free port, with no persistence.
#![allow(dead_code)]

use crawlq::redis_exec::redis;
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
    /// The extra arguments it was started with (kept for restarts).
    extra: Vec<String>,
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
                    extra: extra.iter().map(|a| a.to_string()).collect(),
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

    /// The server's process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Start again on the same port and directory, with the same arguments (after
    /// [`RedisServer::stop`], or killing it): it loads what it had persisted there.
    pub fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        loop {
            if let Some(child) = spawn(self.port, &self.dir, &extra) {
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

async fn conn_to(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every key of a queue whose name starts with `<base><suffix>`, by SCAN (no redis-cli: works
/// against any server the test started, whatever its port or password).
pub async fn keys_of(url: &str, base: &str, suffix: &str) -> Vec<String> {
    let mut conn = conn_to(url).await;
    let pattern = format!("{}{suffix}", glob_escape(base));
    let mut cursor = 0u64;
    let mut out = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.extend(batch);
        if next == 0 {
            return out;
        }
        cursor = next;
    }
}

/// The invariant checker: every counter of `stats()` against the structures it counts, every
/// lease with its record and deadline, every record in exactly one place, the live set equal to
/// the queued and leased items, every host with ready items scheduled exactly once. Panics with
/// what differs; returns the stats it checked.
pub async fn check_invariants(url: &str, q: &Queue<RedisExecutor>) -> crawlq::Stats {
    let stats = q.stats().await.unwrap();
    let base = q.ops().keys().base().to_string();
    let mut conn = conn_to(url).await;
    let key = |k: &str| format!("{base}:{k}");
    let mut places: std::collections::HashMap<String, &'static str> = Default::default();
    let mut place = |id: String, what: &'static str| {
        if let Some(other) = places.insert(id.clone(), what) {
            panic!("record {id} is both in {other} and in {what}");
        }
    };

    // host lanes: ready items, one priority set per host, lane heads
    let mut ready = 0u64;
    let mut oldest: Option<i64> = None;
    let mut hosts: std::collections::BTreeSet<String> = Default::default();
    for lane in keys_of(url, &base, ":l:*").await {
        let records: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&lane)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(!records.is_empty(), "empty lane {lane} left behind");
        let (prio, host) = lane[base.len() + 3..].split_once(':').unwrap();
        for r in &records {
            let item = crawlq::wire::salvage_record(r);
            assert_eq!(
                item.host, host,
                "record in the lane of another host: {lane}"
            );
            assert_eq!(
                item.priority.to_string(),
                prio,
                "record in a lane of another priority"
            );
            place(item.id, "a lane");
        }
        let head = crawlq::wire::salvage_record(&records[0]);
        oldest = Some(oldest.map_or(head.ts, |o| o.min(head.ts)));
        ready += records.len() as u64;
        let listed: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("{base}:hp:{host}"))
            .arg(prio)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            listed.is_some(),
            "lane {lane} not in its host's priority set"
        );
        hosts.insert(host.to_string());
    }
    assert_eq!(
        keys_of(url, &base, ":hp:*").await.len(),
        hosts.len(),
        "one priority set per host with lanes"
    );
    for host in &hosts {
        let in_ready: Option<f64> = redis::cmd("ZSCORE")
            .arg(key("ready"))
            .arg(host)
            .query_async(&mut conn)
            .await
            .unwrap();
        let in_wait: Option<f64> = redis::cmd("ZSCORE")
            .arg(key("wait"))
            .arg(host)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            in_ready.is_some() != in_wait.is_some(),
            "host {host} scheduled exactly once (ready {in_ready:?}, wait {in_wait:?})"
        );
    }
    let ready_hosts: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("ready"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    for host in ready_hosts {
        assert!(hosts.contains(&host), "host {host} is ready without items");
    }
    let zcard = |k: String| {
        let url = url.to_string();
        async move {
            redis::cmd("ZCARD")
                .arg(k)
                .query_async::<u64>(&mut conn_to(&url).await)
                .await
                .unwrap()
        }
    };
    assert_eq!(zcard(key("heads")).await, hosts.len() as u64, "heads");

    // delayed items, leases, dead letters
    let delayed: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(key("delayed"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    for r in &delayed {
        place(crawlq::wire::salvage_record(r).id, "delayed");
    }
    let leases: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(key("leases"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let leased: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("leased"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        leases.len(),
        leased.len(),
        "every lease has a deadline and a record"
    );
    for (lease_key, r) in &leases {
        assert!(
            leased.contains(lease_key),
            "lease {lease_key} has no deadline"
        );
        let (_, id) = lease_key.split_once(':').unwrap();
        assert_eq!(
            crawlq::wire::salvage_record(r).id,
            id,
            "lease key names its item"
        );
        place(id.to_string(), "a lease");
    }
    let dead_ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("dead"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let dead_records: u64 = redis::cmd("HLEN")
        .arg(key("deadrec"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(dead_ids.len() as u64, dead_records, "dead ids and records");
    for id in dead_ids {
        place(id, "dead letters");
    }

    // the seen and live sets
    let mut seen = 0u64;
    for bucket in keys_of(url, &base, ":s:*").await {
        seen += redis::cmd("SCARD")
            .arg(&bucket)
            .query_async::<u64>(&mut conn)
            .await
            .unwrap();
    }
    let mut live = 0u64;
    for bucket in keys_of(url, &base, ":v:*").await {
        live += redis::cmd("SCARD")
            .arg(&bucket)
            .query_async::<u64>(&mut conn)
            .await
            .unwrap();
    }

    assert_eq!(stats.ready, ready, "ready");
    assert_eq!(stats.hosts, hosts.len() as u64, "hosts");
    assert_eq!(stats.delayed, delayed.len() as u64, "delayed");
    assert_eq!(stats.leased, leases.len() as u64, "leased");
    assert_eq!(stats.dead, dead_records, "dead");
    assert_eq!(stats.seen, seen, "seen");
    assert_eq!(stats.pending, ready + delayed.len() as u64, "pending");
    assert_eq!(
        live,
        ready + delayed.len() as u64 + leases.len() as u64,
        "one live member per queued or leased item"
    );
    assert_eq!(
        stats.oldest_pending_age_ms,
        oldest.map(|ts| (stats.now_ms - ts).max(0) as u64),
        "oldest pending age"
    );
    stats
}
