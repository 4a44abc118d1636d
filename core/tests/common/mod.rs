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

/// A page's answer with `links`, and with the next lease (one item at most) when `with_next`:
/// its ack flag and links' report.
pub async fn answer_page(
    q: &crawlq::Queue<crawlq::RedisExecutor>,
    page: &crawlq::LeaseHandle,
    links: &[crawlq::SeedItem],
    with_next: bool,
) -> crawlq::Result<(bool, crawlq::SeedReport)> {
    let opts = crawlq::SeedOptions::default();
    if with_next {
        let next = crawlq::LeaseOptions {
            max: 1,
            wait: std::time::Duration::ZERO,
            ttl: None,
        };
        q.ack_with_links_and_lease(page, links, &opts, &next)
            .await
            .map(|(acked, report, _)| (acked, report))
    } else {
        q.ack_with_links(page, links, &opts).await
    }
}

/// Calls of `command` in INFO commandstats of `server` (0 when it never ran).
pub fn calls_of(server: &RedisServer, command: &str) -> u64 {
    info_count(server, "commandstats", &format!("cmdstat_{command}:calls="))
}

/// Errors of `code` (the first word of the error reply, as `CRAWLQ_EPOCH`) that `server` answered
/// since it started, from INFO errorstats.
pub fn errors_of(server: &RedisServer, code: &str) -> u64 {
    info_count(server, "errorstats", &format!("errorstat_{code}:count="))
}

/// The count after `prefix` (up to a comma) in INFO `section` of `server`; 0 when absent.
fn info_count(server: &RedisServer, section: &str, prefix: &str) -> u64 {
    server
        .cli(&["INFO", section])
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|rest| rest.split(',').next().unwrap().trim().parse().unwrap())
        .unwrap_or(0)
}

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

/// A fresh queue name, unique across the test binaries that share one Redis Cluster at once.
pub fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The Redis the shared tests run on: `CRAWLQ_TEST_URL` (a Redis Cluster, in the sharded
/// runs of tools/test.sh), else this binary's own server.
pub fn test_url() -> String {
    std::env::var("CRAWLQ_TEST_URL").unwrap_or_else(|_| shared().url())
}

/// Shards of the queues the shared tests open (`CRAWLQ_TEST_SHARDS`, default one).
pub fn test_shards() -> Option<u32> {
    std::env::var("CRAWLQ_TEST_SHARDS")
        .ok()
        .map(|s| s.parse().expect("CRAWLQ_TEST_SHARDS is a number"))
}

pub async fn open(name: &str, config: Config) -> Queue<RedisExecutor> {
    Queue::connect(&test_url(), &unique(name), config)
        .await
        .unwrap()
}

pub fn config() -> Config {
    Config {
        shards: test_shards(),
        ..Config::default()
    }
}

/// Seed options that put the items into the named crawl `crawl`.
pub fn into(crawl: &str) -> crawlq::SeedOptions {
    crawlq::SeedOptions {
        crawl: Some(crawl.into()),
        ..crawlq::SeedOptions::default()
    }
}

/// A seed report's refused items as (index, refusal code), in the report's order.
pub fn invalid_codes(report: &crawlq::SeedReport) -> Vec<(usize, &'static str)> {
    report
        .invalid
        .iter()
        .map(|i| (i.index, i.reason.code()))
        .collect()
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

/// Make user `crawler` (password `pw`) on `server` with the least-privilege ACL line of
/// docs/PROTOCOL.md, less the rules in `leave_out`; returns the URL to connect as it.
pub fn documented_acl_user(server: &RedisServer, leave_out: &[&str]) -> String {
    let protocol = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md"),
    )
    .unwrap();
    let line = protocol
        .lines()
        .find(|l| l.starts_with("ACL SETUSER crawler "))
        .expect("docs/PROTOCOL.md has the ACL line");
    let args: Vec<&str> = line
        .split_whitespace()
        .filter(|a| !leave_out.contains(a))
        .map(|a| if a == ">CHANGE-ME" { ">pw" } else { a })
        .collect();
    assert_eq!(
        args.len() + leave_out.len(),
        line.split_whitespace().count(),
        "every rule left out is in the line: {leave_out:?}"
    );
    assert_eq!(server.cli(&args), "OK", "{line}");
    format!("redis://crawler:pw@127.0.0.1:{}/0", server.port)
}

/// Clock of the fixed-clock tests: an arbitrary, realistic epoch-ms value.
pub const T0: i64 = 1_800_000_000_000;

pub fn fixed_clock_config() -> Config {
    Config {
        fixed_clock_ms: Some(T0),
        ..config()
    }
}

/// The URLs of the primaries behind `url`: every master of a Redis Cluster, or the server.
pub async fn primaries(url: &str) -> Vec<String> {
    let mut conn = conn_to(url).await;
    let nodes: Result<String, _> = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await;
    match nodes {
        Ok(nodes) => nodes
            .lines()
            .filter(|l| l.contains("master") && !l.contains("fail"))
            .map(|l| {
                let addr = l
                    .split_whitespace()
                    .nth(1)
                    .unwrap()
                    .split('@')
                    .next()
                    .unwrap();
                format!("redis://{addr}/0")
            })
            .collect(),
        Err(_) => vec![url.to_string()],
    }
}

/// The digest of every key of one queue (all its shards), by key: equal before and after a
/// call that must change nothing, whatever other tests do to other queues meanwhile.
pub async fn queue_digest(url: &str, q: &Queue<RedisExecutor>) -> Vec<(String, String)> {
    let layout = q.layout().await.unwrap();
    let mut out = Vec::new();
    for node in primaries(url).await {
        let mut conn = conn_to(&node).await;
        for ops in layout.all() {
            let pattern = format!("{}*", glob_escape(ops.keys().base()));
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query_async(&mut conn)
                .await
                .unwrap();
            for key in keys {
                let digest: Vec<String> = redis::cmd("DEBUG")
                    .arg("DIGEST-VALUE")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                out.push((key, digest.concat()));
            }
        }
    }
    out.sort();
    out
}

/// `DEBUG DIGEST` of every primary: equal before and after a call that must change nothing.
pub async fn digest_all(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for node in primaries(url).await {
        out.push(
            redis::cmd("DEBUG")
                .arg("DIGEST")
                .query_async::<String>(&mut conn_to(&node).await)
                .await
                .unwrap(),
        );
    }
    out
}

/// Nack every lease without retry (straight to dead letters), each with its reason.
pub async fn dead_letter(
    q: &Queue<RedisExecutor>,
    leases: &[crawlq::Lease],
    reason: impl Fn(&crawlq::Lease) -> String,
) {
    let fail: Vec<_> = leases
        .iter()
        .map(|l| {
            let options = crawlq::NackOptions {
                retry: false,
                reason: Some(reason(l)),
                ..Default::default()
            };
            (l.handle(), options)
        })
        .collect();
    q.nack(&fail).await.unwrap();
}

pub fn handles(leases: &[crawlq::Lease]) -> Vec<crawlq::LeaseHandle> {
    leases.iter().map(|l| l.handle()).collect()
}

/// A connection of its own to the server at `url`, for reading or writing keys beside a queue.
pub async fn conn_to(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every key of a queue whose name starts with `<base><suffix>` (see [`Nodes::keys`]).
pub async fn keys_of(url: &str, base: &str, suffix: &str) -> Vec<String> {
    Nodes::connect(url).await.keys(base, suffix).await
}

/// A connection to each primary behind a URL (every master of a Redis Cluster, or the server),
/// opened once for all the reads of one check rather than once per read.
pub struct Nodes {
    conns: Vec<redis::aio::MultiplexedConnection>,
}

impl Nodes {
    pub async fn connect(url: &str) -> Nodes {
        let mut conns = Vec::new();
        for node in primaries(url).await {
            conns.push(conn_to(&node).await);
        }
        Nodes { conns }
    }

    /// Every key whose name starts with `<base><suffix>` (a `*` in the suffix matches any run of
    /// characters). On a Redis Cluster, from the one slot a shard's keys share (its hash tag):
    /// reading that slot stays cheap however many keys other tests leave on the cluster, where a
    /// SCAN of every node grows with all of them. Else by SCAN (no redis-cli: works against any
    /// server the test started, whatever its port or password).
    pub async fn keys(&mut self, base: &str, suffix: &str) -> Vec<String> {
        let pattern = format!("{}{suffix}", glob_escape(base));
        let mut out = Vec::new();
        for conn in &mut self.conns {
            let slot: Result<u64, _> = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(base)
                .query_async(conn)
                .await;
            if let Ok(slot) = slot {
                // only the node that serves the slot holds its keys; the others answer none
                let count: u64 = redis::cmd("CLUSTER")
                    .arg("COUNTKEYSINSLOT")
                    .arg(slot)
                    .query_async(conn)
                    .await
                    .unwrap();
                let keys: Vec<String> = redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(count.max(1))
                    .query_async(conn)
                    .await
                    .unwrap();
                out.extend(keys.into_iter().filter(|k| {
                    k.strip_prefix(base)
                        .is_some_and(|rest| glob_matches(suffix, rest))
                }));
                continue;
            }
            let mut cursor = 0u64;
            loop {
                let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(conn)
                    .await
                    .unwrap();
                out.extend(batch);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        out
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters and every other
/// character itself (the suffixes `keys_of` takes).
fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A connection that follows a Redis Cluster (or a plain one), for the checks' own commands.
async fn any_conn(url: &str) -> crawlq::redis_exec::Connection {
    crawlq::redis_exec::RedisExecutor::connect(url, &Config::default())
        .await
        .unwrap()
        .connection()
}

/// The invariant checker: every counter of `stats()` against the structures it counts, every
/// lease with its record and deadline, every record in exactly one place, the live set equal to
/// the queued and leased items, every host with ready items scheduled exactly once. Panics with
/// what differs; returns the stats it checked.
pub async fn check_invariants(url: &str, q: &Queue<RedisExecutor>) -> crawlq::Stats {
    let stats = q.stats().await.unwrap();
    let layout = q.layout().await.unwrap();
    let mut total = Truth::default();
    let mut conn = any_conn(url).await;
    let mut nodes = Nodes::connect(url).await;
    for (s, ops) in layout.all().iter().enumerate() {
        let truth = shard_truth(&mut conn, &mut nodes, ops.keys().base()).await;
        let shard_stats = if layout.count() == 1 {
            &stats
        } else {
            &stats.shards[s]
        };
        truth.compare(shard_stats, &format!("shard {s}"));
        total.add(&truth, shard_stats.now_ms);
    }
    total.compare(&stats, "queue");
    stats
}

/// What the structures of one shard hold, independent of its counters.
#[derive(Debug, Default)]
struct Truth {
    ready: u64,
    hosts: u64,
    delayed: u64,
    leased: u64,
    dead: u64,
    seen: u64,
    live: u64,
    oldest_head_ts: Option<i64>,
    /// For a whole sharded queue: the oldest age each shard reported against its own clock
    /// reading (the shards are read one after another, so their `now` differ).
    oldest_age_ms: Option<u64>,
}

impl Truth {
    fn add(&mut self, t: &Truth, shard_now_ms: i64) {
        self.ready += t.ready;
        self.hosts += t.hosts;
        self.delayed += t.delayed;
        self.leased += t.leased;
        self.dead += t.dead;
        self.seen += t.seen;
        self.live += t.live;
        self.oldest_head_ts = match (self.oldest_head_ts, t.oldest_head_ts) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let shard_age = t.oldest_head_ts.map(|ts| (shard_now_ms - ts).max(0) as u64);
        self.oldest_age_ms = self.oldest_age_ms.max(shard_age);
    }

    fn compare(&self, stats: &crawlq::Stats, what: &str) {
        assert_eq!(stats.ready, self.ready, "{what}: ready");
        assert_eq!(stats.hosts, self.hosts, "{what}: hosts");
        assert_eq!(stats.delayed, self.delayed, "{what}: delayed");
        assert_eq!(stats.leased, self.leased, "{what}: leased");
        assert_eq!(stats.dead, self.dead, "{what}: dead");
        assert_eq!(stats.seen, self.seen, "{what}: seen");
        assert_eq!(stats.pending, self.ready + self.delayed, "{what}: pending");
        assert_eq!(
            self.live,
            self.ready + self.delayed + self.leased,
            "{what}: one live member per queued or leased item"
        );
        let expected_age = self.oldest_age_ms.or_else(|| {
            self.oldest_head_ts
                .map(|ts| (stats.now_ms - ts).max(0) as u64)
        });
        assert_eq!(
            stats.oldest_pending_age_ms, expected_age,
            "{what}: oldest pending age"
        );
    }
}

/// A member's score in a sorted set.
async fn zscore(conn: &mut crawlq::redis_exec::Connection, key: &str, member: &str) -> Option<f64> {
    redis::cmd("ZSCORE")
        .arg(key)
        .arg(member)
        .query_async(conn)
        .await
        .unwrap()
}

/// Every member of a sorted set with its score, in order.
async fn zrange_scored(conn: &mut crawlq::redis_exec::Connection, key: &str) -> Vec<(String, f64)> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .unwrap()
}

/// Every element of a list.
async fn lrange_all(conn: &mut crawlq::redis_exec::Connection, key: &str) -> Vec<Vec<u8>> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap()
}

/// The invariant checker for one shard (base): every lease with its record and deadline, every
/// record in exactly one place, every host with ready items scheduled exactly once, every
/// non-empty lane's head age in `heads`.
/// A host held in `wait` until further notice is paused, at its in-flight limit, being deleted,
/// or held for blocked crawls (docs/PROTOCOL.md section 3, "Crawl caps, pauses and weights"): then it is
/// marked so, listed for a crawl, and every ready item it has is of a crawl that is paused or
/// at its cap, so nothing leasable waits behind the hold.
async fn held_forever(
    conn: &mut crawlq::redis_exec::Connection,
    base: &str,
    host: &str,
    has_default_lanes: bool,
    host_crawls: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) {
    for other in ["hostpause", "hostfull", "hostdeleting"] {
        let there: bool = redis::cmd("HEXISTS")
            .arg(format!("{base}:{other}"))
            .arg(host)
            .query_async(&mut *conn)
            .await
            .unwrap();
        if there {
            return;
        }
    }
    let marked: bool = redis::cmd("HEXISTS")
        .arg(format!("{base}:crawlheld"))
        .arg(host)
        .query_async(&mut *conn)
        .await
        .unwrap();
    assert!(marked, "host {host} held in wait for no reason");
    assert!(
        !has_default_lanes,
        "host {host} held for crawls with default-crawl items ready"
    );
    let mut listed_for_one = false;
    for crawl in host_crawls.get(host).into_iter().flatten() {
        let cfg: Option<String> = redis::cmd("HGET")
            .arg(format!("{base}:crawlcfg"))
            .arg(crawl)
            .query_async(&mut *conn)
            .await
            .unwrap();
        let leased: Option<u64> = redis::cmd("HGET")
            .arg(format!("{base}:c:{crawl}"))
            .arg("leased")
            .query_async(&mut *conn)
            .await
            .unwrap();
        let cfg = cfg.unwrap_or_default();
        let mut parts = cfg.split(':');
        let (cap, paused) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let blocked = paused == "1"
            || paused == "d"
            || cap.parse::<u64>().is_ok_and(|c| leased.unwrap_or(0) >= c);
        assert!(
            blocked,
            "host {host} held although crawl {crawl} may lease ({cfg:?}, {leased:?} leased)"
        );
        let listed: bool = redis::cmd("SISMEMBER")
            .arg(format!("{base}:ch:{crawl}"))
            .arg(host)
            .query_async(&mut *conn)
            .await
            .unwrap();
        listed_for_one |= listed;
    }
    assert!(
        listed_for_one,
        "host {host} held but listed for none of its crawls"
    );
}

async fn shard_truth(
    conn: &mut crawlq::redis_exec::Connection,
    nodes: &mut Nodes,
    base: &str,
) -> Truth {
    let key = |k: &str| format!("{base}:{k}");
    let mut places: std::collections::HashMap<String, &'static str> = Default::default();
    let mut place = |id: String, what: &'static str| {
        if let Some(other) = places.insert(id.clone(), what) {
            panic!("record {id} is both in {other} and in {what}");
        }
    };
    let mut t = Truth::default();
    // per host: items held (queued, leased or dead), delayed ones, dead ones
    let mut per_host: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    let mut count_host = |host: &str, delayed: u64, dead: u64| {
        if host.is_empty() {
            return; // a record no script can read counts for no host
        }
        let e = per_host.entry(host.to_string()).or_default();
        e.0 += 1;
        e.1 += delayed;
        e.2 += dead;
    };
    let mut hosts: std::collections::BTreeSet<String> = Default::default();
    let mut lane_prios: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    let mut lanes = 0u64;
    for lane in nodes.keys(base, ":l:*").await {
        let records = lrange_all(conn, &lane).await;
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
            count_host(host, 0, 0);
        }
        let head = crawlq::wire::salvage_record(&records[0]);
        t.oldest_head_ts = Some(t.oldest_head_ts.map_or(head.ts, |o| o.min(head.ts)));
        let member = if prio == "0" {
            host.to_string()
        } else {
            format!("{prio}:{host}")
        };
        assert_eq!(
            zscore(conn, &key("heads"), &member).await,
            Some(head.ts as f64),
            "lane {lane}: its head's age in heads (member {member:?})"
        );
        lanes += 1;
        t.ready += records.len() as u64;
        lane_prios
            .entry(host.to_string())
            .or_default()
            .insert(prio.to_string());
        hosts.insert(host.to_string());
    }
    // A crawl lane (docs/PROTOCOL.md section 1): records of its crawl, priority and host, in the
    // order of their tags; its head's rank listed in the host's crawl lanes `hl:<host>` and its
    // age in `heads` under `*<priority>:<crawl>:<host>`.
    let mut crawl_lanes = 0u64;
    // per host: the crawls it has lanes of
    let mut host_crawls: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    // per named crawl: its items ready, delayed, leased and dead, by the records
    let mut per_crawl: std::collections::BTreeMap<String, [u64; 4]> = Default::default();
    // per named crawl: its lanes per host, and each lane's head `ts` by `<priority>:<host>`
    type ByName<V> = std::collections::BTreeMap<String, V>;
    let mut crawl_hosts: ByName<ByName<u64>> = Default::default();
    let mut crawl_heads: ByName<ByName<i64>> = Default::default();
    for lane in nodes.keys(base, ":lz:*").await {
        let records = lrange_all(conn, &lane).await;
        assert!(!records.is_empty(), "empty crawl lane {lane} left behind");
        let member_and_host = &lane[base.len() + 4..];
        let (prio, rest) = member_and_host.split_once(':').unwrap();
        let (crawl, host) = rest.split_once(':').unwrap();
        let mut tags = Vec::new();
        for r in &records {
            let item = crawlq::wire::salvage_record(r);
            assert_eq!(item.host, host, "record in the crawl lane of another host");
            assert_eq!(item.crawl.as_deref(), Some(crawl), "record in {lane}");
            assert_eq!(item.priority.to_string(), prio, "record in {lane}");
            let text = String::from_utf8_lossy(r);
            let tag: u64 = text
                .split(",\"tag\":")
                .nth(1)
                .and_then(|t| t.split([',', '}']).next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("a crawl record without its tag: {text}"));
            tags.push(tag);
            place(item.id, "a crawl lane");
            count_host(host, 0, 0);
        }
        let head = crawlq::wire::salvage_record(&records[0]);
        t.oldest_head_ts = Some(t.oldest_head_ts.map_or(head.ts, |o| o.min(head.ts)));
        let member = format!("{prio}:{crawl}");
        assert_eq!(
            zscore(conn, &key("heads"), &format!("*{member}:{host}")).await,
            Some(head.ts as f64),
            "crawl lane {lane}: its head's age in heads"
        );
        let listed = zscore(conn, &key(&format!("hl:{host}")), &member).await;
        let rank =
            (32767 - prio.parse::<i64>().unwrap()) as f64 * 137_438_953_472.0 + tags[0] as f64;
        assert_eq!(
            listed,
            Some(rank),
            "crawl lane {lane}: its head's rank in its host's crawl lanes"
        );
        crawl_lanes += 1;
        lanes += 1;
        t.ready += records.len() as u64;
        per_crawl.entry(crawl.to_string()).or_default()[0] += records.len() as u64;
        *crawl_hosts
            .entry(crawl.to_string())
            .or_default()
            .entry(host.to_string())
            .or_default() += 1;
        crawl_heads
            .entry(crawl.to_string())
            .or_default()
            .insert(format!("{prio}:{host}"), head.ts);
        host_crawls
            .entry(host.to_string())
            .or_default()
            .insert(crawl.to_string());
        hosts.insert(host.to_string());
    }
    // A host's priority set lists every priority of its non-empty lanes; a host whose only lane
    // is priority 0 may have none (docs/PROTOCOL.md, section 1).
    for (host, prios) in &lane_prios {
        let listed: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{base}:hp:{host}"))
            .arg(0)
            .arg(-1)
            .query_async(&mut *conn)
            .await
            .unwrap();
        if listed.is_empty() {
            assert_eq!(
                prios.iter().map(String::as_str).collect::<Vec<_>>(),
                ["0"],
                "host {host} has lanes other than priority 0 but no priority set"
            );
        } else {
            let listed: std::collections::BTreeSet<String> = listed.into_iter().collect();
            assert_eq!(
                &listed, prios,
                "host {host}: its priority set against its lanes"
            );
        }
    }
    // each crawl's hosts with lanes (`ci:<crawl>`) and its lanes' head ages (`cz:<crawl>`)
    for counted in nodes.keys(base, ":ci:*").await {
        crawl_hosts
            .entry(counted[base.len() + 4..].to_string())
            .or_default();
    }
    for counted in nodes.keys(base, ":cz:*").await {
        crawl_heads
            .entry(counted[base.len() + 4..].to_string())
            .or_default();
    }
    for (crawl, truth) in &crawl_hosts {
        let listed: ByName<u64> = redis::cmd("HGETALL")
            .arg(key(&format!("ci:{crawl}")))
            .query_async(&mut *conn)
            .await
            .unwrap();
        assert_eq!(
            &listed, truth,
            "crawl {crawl}: its hosts (ci) against its lanes"
        );
    }
    for (crawl, truth) in &crawl_heads {
        let listed: ByName<i64> = zrange_scored(conn, &key(&format!("cz:{crawl}")))
            .await
            .into_iter()
            .map(|(member, ts)| (member, ts as i64))
            .collect();
        assert_eq!(
            &listed, truth,
            "crawl {crawl}: its lane heads (cz) against its lanes"
        );
    }
    let mut listed_lanes = 0u64;
    for hl in nodes.keys(base, ":hl:*").await {
        let n: u64 = redis::cmd("ZCARD")
            .arg(&hl)
            .query_async(&mut *conn)
            .await
            .unwrap();
        listed_lanes += n;
    }
    assert_eq!(
        listed_lanes, crawl_lanes,
        "every crawl lane listed in its host's crawl lanes, no other"
    );
    for hp in nodes.keys(base, ":hp:*").await {
        let host = &hp[base.len() + 4..];
        assert!(
            hosts.contains(host),
            "priority set {hp} of a host without lanes"
        );
    }
    for host in &hosts {
        let in_ready: Option<f64> = redis::cmd("ZSCORE")
            .arg(key("ready"))
            .arg(host)
            .query_async(&mut *conn)
            .await
            .unwrap();
        let in_wait: Option<f64> = redis::cmd("ZSCORE")
            .arg(key("wait"))
            .arg(host)
            .query_async(&mut *conn)
            .await
            .unwrap();
        assert!(
            in_ready.is_some() != in_wait.is_some(),
            "host {host} scheduled exactly once (ready {in_ready:?}, wait {in_wait:?})"
        );
        if in_wait == Some(9_007_199_254_740_991.0) {
            held_forever(
                conn,
                base,
                host,
                lane_prios.contains_key(host),
                &host_crawls,
            )
            .await;
        }
    }
    let ready_hosts: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("ready"))
        .arg(0)
        .arg(-1)
        .query_async(&mut *conn)
        .await
        .unwrap();
    for host in ready_hosts {
        assert!(hosts.contains(&host), "host {host} is ready without items");
    }
    let heads: u64 = redis::cmd("ZCARD")
        .arg(key("heads"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    assert_eq!(heads, lanes, "one heads entry per non-empty lane");
    t.hosts = hosts.len() as u64;
    let delayed: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(key("delayed"))
        .arg(0)
        .arg(-1)
        .query_async(&mut *conn)
        .await
        .unwrap();
    for r in &delayed {
        let item = crawlq::wire::salvage_record(r);
        count_host(&item.host, 1, 0);
        if let Some(crawl) = item.crawl {
            per_crawl.entry(crawl).or_default()[1] += 1;
        }
        place(item.id, "delayed");
    }
    t.delayed = delayed.len() as u64;
    let leases: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(key("leases"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    let leased: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("leased"))
        .arg(0)
        .arg(-1)
        .query_async(&mut *conn)
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
        let item = crawlq::wire::salvage_record(r);
        count_host(&item.host, 0, 0);
        if let Some(crawl) = item.crawl {
            per_crawl.entry(crawl).or_default()[2] += 1;
        }
    }
    t.leased = leases.len() as u64;
    let dead_ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(key("dead"))
        .arg(0)
        .arg(-1)
        .query_async(&mut *conn)
        .await
        .unwrap();
    let dead_records: u64 = redis::cmd("HLEN")
        .arg(key("deadrec"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    assert_eq!(dead_ids.len() as u64, dead_records, "dead ids and records");
    for id in dead_ids {
        place(id, "dead letters");
    }
    let dead_recs: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(key("deadrec"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    for (_, r) in &dead_recs {
        let item = crawlq::wire::salvage_record(r);
        count_host(&item.host, 0, 1);
        if let Some(crawl) = item.crawl {
            per_crawl.entry(crawl).or_default()[3] += 1;
        }
    }
    t.dead = dead_records;
    // each named crawl's counts (`c:<crawl>`) are what its records say
    for counted in nodes.keys(base, ":c:*").await {
        per_crawl
            .entry(counted[base.len() + 3..].to_string())
            .or_default();
    }
    for (crawl, truth) in &per_crawl {
        let counts: Vec<Option<i64>> = redis::cmd("HMGET")
            .arg(key(&format!("c:{crawl}")))
            .arg(&["ready", "delayed", "leased", "dead"][..])
            .query_async(&mut *conn)
            .await
            .unwrap();
        let counts: Vec<u64> = counts.iter().map(|c| c.unwrap_or(0) as u64).collect();
        assert_eq!(
            counts, truth,
            "crawl {crawl}: ready, delayed, leased and dead counts against its records"
        );
    }
    // the per-host counts list_hosts reads
    let items = zrange_scored(conn, &key("hostitems")).await;
    let delayed_by_host: std::collections::HashMap<String, u64> = redis::cmd("HGETALL")
        .arg(key("hostdelayed"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    let dead_by_host: std::collections::HashMap<String, u64> = redis::cmd("HGETALL")
        .arg(key("hostdead"))
        .query_async(&mut *conn)
        .await
        .unwrap();
    let counted: std::collections::BTreeMap<String, (u64, u64, u64)> = items
        .into_iter()
        .map(|(host, n)| {
            let d = delayed_by_host.get(&host).copied().unwrap_or(0);
            let x = dead_by_host.get(&host).copied().unwrap_or(0);
            (host, ((-n) as u64, d, x))
        })
        .collect();
    assert_eq!(
        counted, per_host,
        "per-host counts (items, delayed, dead) against what each host holds"
    );
    assert!(
        delayed_by_host
            .keys()
            .chain(dead_by_host.keys())
            .all(|h| per_host.contains_key(h)),
        "a per-host count left for a host that holds nothing"
    );
    for bucket in nodes.keys(base, ":s:*").await {
        t.seen += redis::cmd("SCARD")
            .arg(&bucket)
            .query_async::<u64>(&mut *conn)
            .await
            .unwrap();
    }
    // (members of deleted crawls' earlier generations stay in the set, counted in meta.hidden)
    let hidden: Option<u64> = redis::cmd("HGET")
        .arg(format!("{base}:meta"))
        .arg("hidden")
        .query_async(&mut *conn)
        .await
        .unwrap();
    t.seen -= hidden.unwrap_or(0);
    for bucket in nodes.keys(base, ":v:*").await {
        t.live += redis::cmd("SCARD")
            .arg(&bucket)
            .query_async::<u64>(&mut *conn)
            .await
            .unwrap();
    }
    t
}

/// A private Redis Cluster: `masters` primaries with `replicas` replicas each, on free ports
/// (a node also listens on its port + 10000), stopped when dropped.
/// Port blocks handed to the clusters of this test process (see `Cluster::start`).
static CLUSTER_PORT_BLOCKS: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);

pub struct Cluster {
    pub nodes: Vec<RedisServer>,
}

impl Cluster {
    pub fn start(masters: usize, replicas: usize) -> Cluster {
        // Test binaries run side by side, and another process's node can take a port between
        // this one's check that it is free and its node's start, so that the cluster cannot be
        // made: its nodes are stopped and a new set is started on other ports.
        let mut failures = Vec::new();
        for _ in 0..3 {
            match Cluster::try_start(masters, replicas) {
                Ok(cluster) => return cluster,
                Err(why) => failures.push(why),
            }
        }
        panic!("no cluster in 3 tries:\n{}", failures.join("\n"));
    }

    /// One try at [`Cluster::start`]: the nodes, or why `redis-cli --cluster create` failed
    /// (its nodes are stopped then).
    fn try_start(masters: usize, replicas: usize) -> Result<Cluster, String> {
        let mut nodes = Vec::new();
        // Clusters started by tests of one process at once get port ranges and folders of their
        // own: two that tried the same free port would both see the other's node as their own.
        let block = CLUSTER_PORT_BLOCKS.fetch_add(200, Ordering::Relaxed);
        let mut port = 20_000 + (std::process::id() % 15_000) as u16 + block;
        while nodes.len() < masters * (1 + replicas) {
            port += 1;
            let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
            if !free(port) || !free(port + 10_000) {
                continue;
            }
            let dir = std::env::temp_dir().join(format!(
                "crawlq-cluster-{}-{port}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "1000",
                "--cluster-config-file",
                "nodes.conf",
                "--repl-diskless-sync-delay",
                "0",
            ];
            if let Some(child) = spawn(port, &dir, &extra) {
                nodes.push(RedisServer {
                    child,
                    port,
                    dir,
                    password: None,
                    extra: extra.iter().map(|a| a.to_string()).collect(),
                });
            }
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli");
        if !out.status.success() {
            // (the nodes are stopped as they are dropped here)
            return Err(format!(
                "redis-cli --cluster create {}: {}{}",
                addrs.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let cluster = Cluster { nodes };
        cluster.wait_ok();
        Ok(cluster)
    }

    /// Until every running node says `cluster_state:ok` and knows every slot.
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for node in &self.nodes {
            loop {
                let info = node.cli(&["CLUSTER", "INFO"]);
                if info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384") {
                    break;
                }
                assert!(Instant::now() < deadline, "cluster did not settle: {info}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The port of a node named in a `CLUSTER NODES` line.
    fn port_of(line: &str) -> u16 {
        let addr = line.split_whitespace().nth(1).unwrap();
        addr.split('@')
            .next()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// A replica of `master`.
    pub fn replica_of(&self, master: &RedisServer) -> &RedisServer {
        let id = master.cli(&["CLUSTER", "MYID"]);
        // On a loaded machine the cluster's gossip may not have told node 0 about the replica
        // yet: ask again for a while before giving up.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let nodes = self.nodes[0].cli(&["CLUSTER", "NODES"]);
            if let Some(line) = nodes
                .lines()
                .find(|l| l.contains("slave") && l.contains(&id))
            {
                let port = Cluster::port_of(line);
                return self.nodes.iter().find(|n| n.port == port).unwrap();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no replica of the master in CLUSTER NODES:\n{nodes}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The node that serves `key`'s slot as master.
    pub fn owner(&self, key: &str) -> &RedisServer {
        let slot = self.nodes[0].cli(&["CLUSTER", "KEYSLOT", key]);
        let nodes = self.nodes[0].cli(&["CLUSTER", "NODES"]);
        for line in nodes
            .lines()
            .filter(|l| l.contains("master") && !l.contains("fail"))
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port = Cluster::port_of(line);
            let slot: u16 = slot.parse().unwrap();
            let owns = fields[8..].iter().any(|range| match range.split_once('-') {
                Some((a, b)) => (a.parse::<u16>().unwrap()..=b.parse().unwrap()).contains(&slot),
                None => range.parse::<u16>().ok() == Some(slot),
            });
            if owns {
                return self.nodes.iter().find(|n| n.port == port).unwrap();
            }
        }
        panic!("no master owns the slot of {key}");
    }
}
