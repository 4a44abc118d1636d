//! `crawlq-bench cost <redis-url> <n> <concurrency>`: what each crawlq operation costs Redis,
//! per item, read from `INFO commandstats` (EVAL + EVALSHA + FCALL µs) around each phase, with
//! `concurrency` tasks keeping the server busy as a crawl does (an idle server runs the same
//! script up to 2x slower: cold caches). Prints one JSON object; bench/cost.py runs it several
//! times and tabulates the medians. Phases are described in bench/cost.py.

use crate::Result;
use crawlq::redis_exec::redis;
use crawlq::{
    Config, Lease, LeaseHandle, LeaseOptions, NackOptions, Queue, RedisExecutor, SeedItem,
    SeedOptions,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCRIPT_COMMANDS: [&str; 4] = ["eval", "evalsha", "fcall", "fcall_ro"];

/// A ~95-character URL on host `i % hosts` (distinct for every `i`).
fn page_url(i: usize, hosts: usize) -> String {
    format!(
        "https://www.host{:05}.example.com/articles/2026/11/{i:07}/a-long-slug-for-the-title?ref=rss",
        i % hosts
    )
}

/// One figure, rounded to 0.01.
fn put(out: &mut Map<String, Value>, key: &str, value: f64) {
    out.insert(key.to_string(), json!((value * 100.0).round() / 100.0));
}

/// Server-side counters read through a plain connection.
struct Server {
    conn: redis::aio::MultiplexedConnection,
}

impl Server {
    async fn cmd<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> Result<T> {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        Ok(c.query_async(&mut self.conn).await?)
    }

    /// Start a measured step: zero the command stats (and, under callgrind, its counts).
    async fn reset(&mut self) -> Result<()> {
        if let Some((pid, _)) = callgrind() {
            std::process::Command::new("callgrind_control")
                .args(["-z", &pid])
                .output()?;
        }
        self.cmd::<()>(&["CONFIG", "RESETSTAT"]).await
    }

    /// Log every call slower than `slower_than_us` µs, keep the last `max_len`, start empty.
    async fn slowlog(&mut self, slower_than_us: u64, max_len: u64) -> Result<()> {
        let (slower_than, max_len) = (slower_than_us.to_string(), max_len.to_string());
        self.cmd::<()>(&["CONFIG", "SET", "slowlog-log-slower-than", &slower_than])
            .await?;
        self.cmd::<()>(&["CONFIG", "SET", "slowlog-max-len", &max_len])
            .await?;
        self.cmd::<()>(&["SLOWLOG", "RESET"]).await
    }

    /// Script µs since the last reset; under callgrind, thousands of instructions run inside
    /// script calls instead (deterministic, whatever else the machine does), from a dump of the
    /// counts described as `phase` (what `cost.py --profile` prints the functions of).
    async fn script_usec(&mut self, phase: &str) -> Result<f64> {
        if let Some((pid, out_file)) = callgrind() {
            return callgrind_kilo_instructions(&pid, &out_file, phase);
        }
        let info: String = self.cmd(&["INFO", "commandstats"]).await?;
        let mut total = 0.0;
        for line in info.lines() {
            let Some((name, fields)) = line
                .strip_prefix("cmdstat_")
                .and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            if !SCRIPT_COMMANDS.contains(&name) {
                continue;
            }
            for field in fields.split(',') {
                if let Some(v) = field.strip_prefix("usec=") {
                    total += v.parse::<f64>()?;
                }
            }
        }
        Ok(total)
    }

    /// `used_memory` without client buffers (a connection's query buffer grows with a large
    /// call and shrinks lazily): the dataset's own bytes.
    async fn used_memory(&mut self) -> Result<f64> {
        let info: String = self.cmd(&["INFO", "memory"]).await?;
        let field = |name: &str| -> Result<f64> {
            let value = info
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .ok_or_else(|| format!("no {name} in INFO memory"))?;
            Ok(value.trim().parse()?)
        };
        Ok(field("used_memory")? - field("mem_clients_normal")? - field("mem_clients_slaves")?)
    }

    /// Every key matching `pattern` (SCAN).
    async fn keys_matching(&mut self, pattern: &str) -> Result<Vec<String>> {
        let (mut cursor, mut all) = ("0".to_string(), Vec::new());
        loop {
            let (next, keys): (String, Vec<String>) = redis::cmd("SCAN")
                .arg(&cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(10_000)
                .query_async(&mut self.conn)
                .await?;
            all.extend(keys);
            if next == "0" {
                return Ok(all);
            }
            cursor = next;
        }
    }

    /// Delete every key matching `pattern` (SCAN, then DEL in batches).
    async fn delete_matching(&mut self, pattern: &str) -> Result<()> {
        for keys in self.keys_matching(pattern).await?.chunks(10_000) {
            redis::cmd("DEL")
                .arg(keys)
                .query_async::<()>(&mut self.conn)
                .await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        self.cmd::<()>(&["FLUSHALL"]).await
    }

    /// The longest script call (ms) in the slow log, which logs every call while measuring.
    async fn longest_script_ms(&mut self) -> Result<f64> {
        let entries: Vec<redis::Value> = self.cmd(&["SLOWLOG", "GET", "10000"]).await?;
        let mut longest = 0i64;
        for entry in entries {
            let redis::Value::Array(fields) = entry else {
                continue;
            };
            let (Some(redis::Value::Int(usec)), Some(redis::Value::Array(argv))) =
                (fields.get(2), fields.get(3))
            else {
                continue;
            };
            let name = match argv.first() {
                Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).to_lowercase(),
                _ => continue,
            };
            if SCRIPT_COMMANDS.contains(&name.as_str()) {
                longest = longest.max(*usec);
            }
        }
        Ok(longest as f64 / 1000.0)
    }
}

async fn open(url: &str, mut config: Config) -> Result<Arc<Queue<RedisExecutor>>> {
    if callgrind().is_some() {
        // a server under valgrind runs some 50x slower
        config.connect_timeout = Duration::from_secs(120);
        config.command_timeout = Duration::from_secs(120);
    }
    Ok(Arc::new(Queue::connect(url, "cost", config).await?))
}

/// Run `work(task)` on `concurrency` tasks and wait for all of them.
async fn together<F, Fut>(concurrency: usize, work: F) -> Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let tasks: Vec<_> = (0..concurrency).map(|t| tokio::spawn(work(t))).collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Answer `leases` in calls of 100, spread over `concurrency` tasks.
async fn answer_all<F, Fut>(
    q: &Arc<Queue<RedisExecutor>>,
    leases: Vec<LeaseHandle>,
    concurrency: usize,
    answer: F,
) -> Result<()>
where
    F: Fn(Arc<Queue<RedisExecutor>>, Vec<LeaseHandle>) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let leases = Arc::new(leases);
    together(concurrency, |t| {
        let (q, leases, answer) = (q.clone(), leases.clone(), answer.clone());
        async move {
            for chunk in leases.chunks(100).skip(t).step_by(concurrency) {
                answer(q.clone(), chunk.to_vec()).await?;
            }
            Ok(())
        }
    })
    .await
}

async fn seed_all(
    q: &Arc<Queue<RedisExecutor>>,
    items: Vec<SeedItem>,
    concurrency: usize,
) -> Result<()> {
    let chunks: Arc<Vec<Vec<SeedItem>>> = Arc::new(items.chunks(1000).map(<[_]>::to_vec).collect());
    together(concurrency, |t| {
        let (q, chunks) = (q.clone(), chunks.clone());
        async move {
            for chunk in chunks.iter().skip(t).step_by(concurrency) {
                q.seed(chunk, &SeedOptions::default()).await?;
            }
            Ok(())
        }
    })
    .await
}

/// Seed `items` into `crawls` named crawls (item i into crawl `c<i % crawls>`), in calls of 1,000
/// per crawl, spread over `concurrency` tasks.
async fn seed_crawls(
    q: &Arc<Queue<RedisExecutor>>,
    items: Vec<SeedItem>,
    crawls: usize,
    concurrency: usize,
) -> Result<()> {
    let mut calls: Vec<(String, Vec<SeedItem>)> = Vec::new();
    for c in 0..crawls {
        let mine: Vec<SeedItem> = items.iter().skip(c).step_by(crawls).cloned().collect();
        for chunk in mine.chunks(1000) {
            calls.push((format!("c{c}"), chunk.to_vec()));
        }
    }
    let calls = Arc::new(calls);
    together(concurrency, |t| {
        let (q, calls) = (q.clone(), calls.clone());
        async move {
            for (crawl, chunk) in calls.iter().skip(t).step_by(concurrency) {
                let opts = SeedOptions {
                    crawl: Some(crawl.clone()),
                    ..SeedOptions::default()
                };
                q.seed(chunk, &opts).await?;
            }
            Ok(())
        }
    })
    .await
}

async fn lease_all(
    q: &Arc<Queue<RedisExecutor>>,
    n: usize,
    concurrency: usize,
) -> Result<Vec<Lease>> {
    let held = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(n)));
    together(concurrency, |_| {
        let (q, held) = (q.clone(), held.clone());
        async move {
            loop {
                let got = q.lease(100, Duration::ZERO).await?;
                if got.is_empty() {
                    return Ok(());
                }
                held.lock().await.extend(got);
            }
        }
    })
    .await?;
    let held = std::mem::take(&mut *held.lock().await);
    if held.len() != n {
        return Err(format!("leased {} of {n}", held.len()).into());
    }
    Ok(held)
}

/// Links of crawl page `page`: `LINKS_PER_PAGE` of them, `seen_share` of which point into
/// `pool` (pages seeded before: navigation and footers), the rest new (unique to the page).
fn page_links(page: usize, seen_share: f64, pool: usize) -> Vec<SeedItem> {
    let seen = (LINKS_PER_PAGE as f64 * seen_share).round() as usize;
    (0..LINKS_PER_PAGE)
        .map(|k| {
            if k < seen {
                SeedItem::from(page_url((page * 7 + k * 131) % pool, 50))
            } else {
                SeedItem::from(format!("https://new{}.example/p/{page}/{k}", page % 50))
            }
        })
        .collect()
}

/// Links per crawled page in the crawl phase.
const LINKS_PER_PAGE: usize = 30;

/// How a crawl page is answered in the crawl phase.
#[derive(Clone, Copy, PartialEq)]
enum PageAnswer {
    /// lease(1), then a seed of the links, then an ack: three calls.
    SeedThenAck,
    /// lease(1), then `ack_with_links`: two calls.
    AckWithLinks,
    /// `ack_with_links_and_lease`, which leases the next page: one call.
    AckWithLinksAndLease,
}

/// `pages` crawl pages over `concurrency` tasks: each leased alone and answered with its
/// links as `answer` says.
async fn crawl_pages(
    q: &Arc<Queue<RedisExecutor>>,
    pages: usize,
    seen_share: f64,
    pool: usize,
    answer: PageAnswer,
    concurrency: usize,
) -> Result<()> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let one = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    together(concurrency, |_| {
        let (q, next) = (q.clone(), next.clone());
        async move {
            // the page the last answer leased, with AckWithLinksAndLease
            let mut held: Option<Lease> = None;
            loop {
                let page = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if page >= pages {
                    if let Some(lease) = held {
                        q.ack(&[lease.handle()]).await?;
                    }
                    return Ok(());
                }
                let lease = match held.take() {
                    Some(lease) => lease,
                    None => match q.lease(1, Duration::ZERO).await?.pop() {
                        Some(lease) => lease,
                        None => return Err("a crawl page found the queue empty".into()),
                    },
                };
                let links = page_links(page, seen_share, pool);
                let opts = SeedOptions::default();
                match answer {
                    PageAnswer::SeedThenAck => {
                        q.seed(&links, &opts).await?;
                        q.ack(&[lease.handle()]).await?;
                    }
                    PageAnswer::AckWithLinks => {
                        q.ack_with_links(&lease.handle(), &links, &opts).await?;
                    }
                    PageAnswer::AckWithLinksAndLease => {
                        let (_, _, mut more) = q
                            .ack_with_links_and_lease(&lease.handle(), &links, &opts, &one)
                            .await?;
                        held = more.pop();
                    }
                }
            }
        }
    })
    .await
}

/// The Redis cost per item of `calls` rounds of lease(1) + ack(1) over `concurrency` tasks on
/// `q` (seeded with enough items), as the figure `label`.
async fn put_lease_and_ack(
    server: &mut Server,
    out: &mut Map<String, Value>,
    label: &str,
    q: &Arc<Queue<RedisExecutor>>,
    calls: usize,
    concurrency: usize,
) -> Result<()> {
    server.reset().await?;
    together(concurrency, |_| {
        let q = q.clone();
        async move { lease_and_ack_one_by_one(&q, calls / concurrency).await }
    })
    .await?;
    put(
        out,
        label,
        server.script_usec(label).await? / (calls / concurrency * concurrency) as f64,
    );
    Ok(())
}

/// `times` rounds of lease(1) then ack of that lease; the queue must hold enough items.
async fn lease_and_ack_one_by_one(q: &Queue<RedisExecutor>, times: usize) -> Result<()> {
    for _ in 0..times {
        let got = q.lease(1, Duration::ZERO).await?;
        if got.len() != 1 {
            return Err("lease(1) found the queue empty".into());
        }
        q.ack(&[got[0].handle()]).await?;
    }
    Ok(())
}

/// `times` items taken one at a time with `ack_and_lease`: each call acks the item before and
/// leases the next (the first is a plain lease(1), the last a plain ack).
async fn ack_and_lease_one_by_one(q: &Queue<RedisExecutor>, times: usize) -> Result<()> {
    let one = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let mut held = q.lease_with(&one).await?;
    for _ in 1..times {
        let handles: Vec<LeaseHandle> = held.iter().map(Lease::handle).collect();
        held = q.ack_and_lease(&handles, &one).await?.1;
        if held.len() != 1 {
            return Err("ack_and_lease found the queue empty".into());
        }
    }
    q.ack(&[held[0].handle()]).await?;
    Ok(())
}

/// `CRAWLQ_COST_CALLGRIND=<pid>:<out file>`: the server runs under `valgrind --tool=callgrind`
/// collecting only inside script calls (`cost.py --callgrind`).
fn callgrind() -> Option<(String, String)> {
    let spec = std::env::var("CRAWLQ_COST_CALLGRIND").ok()?;
    let (pid, file) = spec.split_once(':')?;
    Some((pid.to_string(), file.to_string()))
}

/// Dump the server's callgrind counts (described as `phase`) and read the instructions of the
/// dump (since the last zeroing), in thousands.
fn callgrind_kilo_instructions(pid: &str, out_file: &str, phase: &str) -> Result<f64> {
    // (callgrind_control passes the description through a shell: letters, digits and a few
    // marks only)
    let description: String = phase
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " ,.=+-".contains(c) {
                c
            } else {
                ' '
            }
        })
        .collect();
    let dump = std::process::Command::new("callgrind_control")
        .arg(format!("--dump={}", description.trim()))
        .arg(pid)
        .output()?;
    if !dump.status.success() {
        return Err(format!("callgrind_control -d {pid} failed").into());
    }
    // the newest dump is <out file>.<n> with the highest n
    let dir = std::path::Path::new(out_file)
        .parent()
        .ok_or("callgrind: no directory")?;
    let name = std::path::Path::new(out_file)
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("callgrind: no file name")?;
    let newest = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let n: u64 = file.strip_prefix(name)?.strip_prefix('.')?.parse().ok()?;
            Some((n, e.path()))
        })
        .max()
        .ok_or("callgrind: no dump written")?;
    let text = std::fs::read_to_string(newest.1)?;
    let total = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .ok_or("callgrind: a dump without totals")?;
    Ok(total.trim().parse::<f64>()? / 1000.0)
}

/// A plain connection for the figures and the floor.
async fn connect(client: &redis::Client) -> Result<redis::aio::MultiplexedConnection> {
    // No response timeout: besides a server under valgrind, a `SLOWLOG GET` of 10,000 entries
    // (the longest-call phase) can take longer than redis-rs's default to read on a slow
    // machine with a debug build.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// Whether a phase runs: every phase, or those named in `CRAWLQ_COST_PHASES` (comma-separated:
/// core, crawl, crawls, nack, empty, single, priorities, memory, layouts, longest, floor;
/// `cost.py --phases`).
fn wanted(phase: &str) -> bool {
    match std::env::var("CRAWLQ_COST_PHASES") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|p| p.trim() == phase),
        _ => true,
    }
}

pub async fn cost(url: &str, n: usize, concurrency: usize) -> Result<Value> {
    let client = redis::Client::open(url)?;
    let mut server = Server {
        conn: connect(&client).await?,
    };
    // a slow log left long by an interrupted run would skew the memory figures
    server.slowlog(10_000, 128).await?;
    let mut out = Map::new();

    let long_ttl = Config {
        lease_ttl: Duration::from_secs(600),
        ..Config::default()
    };
    // calls of the one-item phases
    let calls = 2000;
    let urls = |count: usize, hosts: usize| -> Vec<SeedItem> {
        (0..count)
            .map(|i| SeedItem::from(page_url(i, hosts)))
            .collect()
    };

    if wanted("core") {
        // seed, lease, ack: 1,000 hosts
        server.flush().await?;
        let q = open(url, long_ttl.clone()).await?;
        let base = server.used_memory().await?;
        server.reset().await?;
        seed_all(&q, urls(n, 1000), concurrency).await?;
        put(
            &mut out,
            "seed",
            server.script_usec("seed").await? / n as f64,
        );
        put(
            &mut out,
            "bytes per pending URL, 1,000 hosts",
            (server.used_memory().await? - base) / n as f64,
        );
        server.reset().await?;
        let held = lease_all(&q, n, concurrency).await?;
        put(
            &mut out,
            "lease(100)",
            server.script_usec("lease(100)").await? / n as f64,
        );
        let held: Vec<LeaseHandle> = held.iter().map(Lease::handle).collect();
        server.reset().await?;
        answer_all(&q, held, concurrency, |q, chunk| async move {
            q.ack(&chunk).await?;
            Ok(())
        })
        .await?;
        put(
            &mut out,
            "ack(100)",
            server.script_usec("ack(100)").await? / n as f64,
        );
    }

    if wanted("crawl") {
        // the crawl-shaped workload: each page leased alone and answered with 30 links, 90 %
        // (then 50 %) of them to pages seen before; a pool of 1,000 seen pages over 50 hosts
        let pool = 1000;
        for (seen_share, label) in [(0.9, "90 %"), (0.5, "50 %")] {
            for (answer, seen_cache) in [
                (PageAnswer::SeedThenAck, 0),
                (PageAnswer::AckWithLinks, 0),
                (PageAnswer::AckWithLinks, 100_000),
                (PageAnswer::AckWithLinksAndLease, 100_000),
            ] {
                server.flush().await?;
                let q = open(
                    url,
                    Config {
                        seen_cache,
                        ..long_ttl.clone()
                    },
                )
                .await?;
                seed_all(&q, urls(pool, 50), concurrency).await?;
                server.reset().await?;
                crawl_pages(&q, calls, seen_share, pool, answer, concurrency).await?;
                let cache = if seen_cache > 0 { ", seen cache" } else { "" };
                let calls_made = match answer {
                    PageAnswer::SeedThenAck => "lease(1) + seed(30) + ack(1)",
                    PageAnswer::AckWithLinks => "lease(1) + ack_with_links(30)",
                    PageAnswer::AckWithLinksAndLease => "ack_with_links_and_lease(30)",
                };
                let name = format!("crawl page, {label} links seen: {calls_made}{cache}");
                let usec = server.script_usec(&name).await? / calls as f64;
                put(&mut out, &name, usec);
            }
        }
    }

    if wanted("nack") {
        // nack with a retry
        server.flush().await?;
        let q = open(url, long_ttl.clone()).await?;
        seed_all(&q, urls(n, 1000), concurrency).await?;
        let held = lease_all(&q, n, concurrency).await?;
        let held: Vec<LeaseHandle> = held.iter().map(Lease::handle).collect();
        server.reset().await?;
        answer_all(&q, held, concurrency, |q, chunk| async move {
            let nacks: Vec<_> = chunk
                .into_iter()
                .map(|h| {
                    let reason = Some("HTTP 503".to_string());
                    (
                        h,
                        NackOptions {
                            reason,
                            ..NackOptions::default()
                        },
                    )
                })
                .collect();
            q.nack(&nacks).await?;
            Ok(())
        })
        .await?;
        put(
            &mut out,
            "nack(100)",
            server.script_usec("nack(100)").await? / n as f64,
        );
    }

    if wanted("empty") {
        // lease(1) on an empty queue
        server.flush().await?;
        let q = open(url, Config::default()).await?;
        server.reset().await?;
        together(concurrency, |_| {
            let q = q.clone();
            async move {
                for _ in 0..calls / concurrency {
                    q.lease(1, Duration::ZERO).await?;
                }
                Ok(())
            }
        })
        .await?;
        put(
            &mut out,
            "lease(1), empty queue",
            server.script_usec("lease(1), empty queue").await?
                / (calls / concurrency * concurrency) as f64,
        );
    }

    if wanted("crawls") {
        // seeding one named crawl (docs/crawls.md): its items go into its crawl lanes
        server.flush().await?;
        let q = open(url, long_ttl.clone()).await?;
        let base = server.used_memory().await?;
        server.reset().await?;
        seed_crawls(&q, urls(n, 1000), 1, concurrency).await?;
        put(
            &mut out,
            "seed, one named crawl",
            server.script_usec("seed, one named crawl").await? / n as f64,
        );
        put(
            &mut out,
            "bytes per pending URL, 1,000 hosts, one named crawl",
            (server.used_memory().await? - base) / n as f64,
        );
        // lease(1) + ack(1) of named crawls' items: all of one crawl, then spread over 100
        // crawls on the same hosts
        for (label, crawls) in [
            ("lease(1) + ack(1), one named crawl", 1),
            ("lease(1) + ack(1), 100 named crawls", 100),
        ] {
            server.flush().await?;
            let q = open(url, Config::default()).await?;
            seed_crawls(&q, urls(calls, 1000), crawls, concurrency).await?;
            put_lease_and_ack(&mut server, &mut out, label, &q, calls, concurrency).await?;
        }
        // a worker that leases from one chosen crawl (`lease_crawls`), answering each item and
        // taking the next (one call each since the combined scripts take the filter)
        server.flush().await?;
        let q = open(url, Config::default()).await?;
        seed_crawls(&q, urls(calls, 1000), 2, concurrency).await?;
        let worker = open(
            url,
            Config {
                lease_crawls: vec!["c0".into()],
                // (no politeness delay: the worker scans its crawl's hosts for a ready one, and
                // on a queue of hosts all waiting their delay it would find none)
                host_delay: Duration::ZERO,
                ..Config::default()
            },
        )
        .await?;
        server.reset().await?;
        together(concurrency, |_| {
            let worker = worker.clone();
            // (half of the crawl's items: a filtered lease scans at most 400 of its hosts a
            // call, and with wait 0 a nearly drained crawl would answer none)
            async move { ack_and_lease_one_by_one(&worker, calls / 4 / concurrency).await }
        })
        .await?;
        put(
            &mut out,
            "ack + lease(1), a worker of one chosen crawl",
            server
                .script_usec("ack + lease(1), a worker of one chosen crawl")
                .await?
                / (calls / 4 / concurrency * concurrency) as f64,
        );
        // (and by two calls, lease then ack, for the ratio in one run)
        server.flush().await?;
        seed_crawls(&q, urls(calls, 1000), 2, concurrency).await?;
        put_lease_and_ack(
            &mut server,
            &mut out,
            "lease(1) + ack(1), a worker of one chosen crawl",
            &worker,
            calls / 4,
            concurrency,
        )
        .await?;
        // the same with every crawl capped (never reached): the leases look for a crawl that
        // is not at its cap (docs/crawls.md, "Operating crawls")
        server.flush().await?;
        let q = open(url, Config::default()).await?;
        seed_crawls(&q, urls(calls, 1000), 100, concurrency).await?;
        for c in 0..100 {
            q.set_crawl_cap(&format!("c{c}"), Some(1_000_000)).await?;
        }
        put_lease_and_ack(
            &mut server,
            &mut out,
            "lease(1) + ack(1), 100 named crawls, each capped",
            &q,
            calls,
            concurrency,
        )
        .await?;
    }

    if wanted("single") {
        // lease(1) + ack(1)
        server.flush().await?;
        let q = open(url, Config::default()).await?;
        seed_all(&q, urls(calls, 1000), concurrency).await?;
        put_lease_and_ack(
            &mut server,
            &mut out,
            "lease(1) + ack(1)",
            &q,
            calls,
            concurrency,
        )
        .await?;
        // the same on a queue whose hosts have an in-flight limit (2 of each host at once):
        // every lease counts its item, every ack frees the slot
        server.flush().await?;
        let limited = open(
            url,
            Config {
                host_in_flight: 2,
                ..Config::default()
            },
        )
        .await?;
        seed_all(&limited, urls(calls, 1000), concurrency).await?;
        server.reset().await?;
        together(concurrency, |_| {
            let q = limited.clone();
            async move { lease_and_ack_one_by_one(&q, calls / concurrency).await }
        })
        .await?;
        put(
            &mut out,
            "lease(1) + ack(1), in-flight limit 2",
            server
                .script_usec("lease(1) + ack(1), in-flight limit 2")
                .await?
                / (calls / concurrency * concurrency) as f64,
        );
        // paced after the answer (one item of a host out at a time, no delay): every lease
        // also writes the host's pacing, every answer reads it
        server.flush().await?;
        let paced = open(
            url,
            Config {
                host_delay_after: crawlq::DelayAfter::Answer,
                ..Config::default()
            },
        )
        .await?;
        seed_all(&paced, urls(calls, 1000), concurrency).await?;
        server.reset().await?;
        together(concurrency, |_| {
            let q = paced.clone();
            async move { lease_and_ack_one_by_one(&q, calls / concurrency).await }
        })
        .await?;
        put(
            &mut out,
            "lease(1) + ack(1), delay after the answer",
            server
                .script_usec("lease(1) + ack(1), delay after the answer")
                .await?
                / (calls / concurrency * concurrency) as f64,
        );
        server.flush().await?;
        seed_all(&q, urls(calls, 1000), concurrency).await?;
        server.reset().await?;
        together(concurrency, |_| {
            let q = q.clone();
            async move { ack_and_lease_one_by_one(&q, calls / concurrency).await }
        })
        .await?;
        put(
            &mut out,
            "ack + lease(1) in one call",
            server.script_usec("ack + lease(1) in one call").await?
                / (calls / concurrency * concurrency) as f64,
        );

        // the same, one at a time, in round trips of this client (PING); timing means
        // nothing under callgrind
        if callgrind().is_none() {
            server.flush().await?;
            seed_all(&q, urls(calls, 1000), 1).await?;
            let started = Instant::now();
            lease_and_ack_one_by_one(&q, calls).await?;
            let pair = started.elapsed().as_secs_f64();
            let mut conn = q.executor().connection();
            let started = Instant::now();
            for _ in 0..calls {
                let _: String = redis::cmd("PING").query_async(&mut conn).await?;
            }
            let ping = started.elapsed().as_secs_f64();
            put(&mut out, "lease(1) + ack(1), in round trips", pair / ping);
            server.flush().await?;
            seed_all(&q, urls(calls, 1000), 1).await?;
            let started = Instant::now();
            ack_and_lease_one_by_one(&q, calls).await?;
            put(
                &mut out,
                "ack + lease(1) in one call, in round trips",
                started.elapsed().as_secs_f64() / ping,
            );
        }
    }

    if wanted("priorities") {
        // one host holding 10,000 items over P distinct priorities
        for p in [10usize, 10_000] {
            server.flush().await?;
            let q = open(url, Config::default()).await?;
            let items: Vec<SeedItem> = (0..10_000)
                .map(|i| {
                    SeedItem::from(format!("https://one.example.com/{i}"))
                        .with_priority((i % p) as i64)
                })
                .collect();
            seed_all(&q, items, 1).await?;
            server.reset().await?;
            lease_and_ack_one_by_one(&q, 200).await?;
            put(
                &mut out,
                &format!("lease(1) + ack(1), one host, P = {p}"),
                server
                    .script_usec(&format!("lease(1) + ack(1), one host, P = {p}"))
                    .await?
                    / 200.0,
            );
        }
    }

    if wanted("memory") {
        // memory with small hosts
        for per_host in [1usize, 10] {
            server.flush().await?;
            let q = open(url, Config::default()).await?;
            let base = server.used_memory().await?;
            server.reset().await?;
            seed_all(&q, urls(n, n / per_host), concurrency).await?;
            // a broad crawl's seeds: nearly every URL opens a lane (and a host) of its own
            put(
                &mut out,
                &format!("seed, {per_host} per host"),
                server
                    .script_usec(&format!("seed, {per_host} per host"))
                    .await?
                    / n as f64,
            );
            put(
                &mut out,
                &format!("bytes per pending URL, {per_host} per host"),
                (server.used_memory().await? - base) / n as f64,
            );
            if per_host == 1 {
                // where a one-URL host's bytes are: what deleting each part gives back
                let queue_base = q.ops().keys().base().to_string();
                for (part, pattern) in [
                    ("lane lists (record included)", ":l:*"),
                    ("host priority sets", ":hp:*"),
                    ("ready", ":ready"),
                    ("heads", ":heads"),
                    ("hostitems", ":hostitems"),
                    ("seen set", ":s:*"),
                    ("live set", ":v:*"),
                ] {
                    let before = server.used_memory().await?;
                    server
                        .delete_matching(&format!("{queue_base}{pattern}"))
                        .await?;
                    put(
                        &mut out,
                        &format!("bytes per pending URL, 1 per host: {part}"),
                        (before - server.used_memory().await?) / n as f64,
                    );
                }
            }
        }
    }

    if wanted("layouts") {
        layouts(url, &mut server, n, concurrency, &mut out).await?;
    }

    if wanted("longest") {
        // the longest single call at the documented limits
        server.flush().await?;
        server.slowlog(0, 10_000).await?;
        let big = 10_000;
        // Every lease must outlive the lease(10,000) that hands them out (several calls; a debug
        // build on a busy machine can take over a second), or that call's own bounded reclaim takes
        // the first ones back before the reclaim measured here.
        let ttl = Duration::from_secs(3);
        let q = open(
            url,
            Config {
                seed_batch: big,
                lease_ttl: ttl,
                max_attempts: 1,
                reclaim_batch: big,
                ..Config::default()
            },
        )
        .await?;
        let longest = |label: &str, ms: f64, out: &mut Map<String, Value>| {
            out.insert(format!("longest call: {label}"), json!(ms));
        };
        let mut slow = Vec::new();
        server.cmd::<()>(&["SLOWLOG", "RESET"]).await?;
        q.seed(&urls(big, big), &SeedOptions::default()).await?;
        slow.push(("seed of 10,000", server.longest_script_ms().await?));
        server.cmd::<()>(&["SLOWLOG", "RESET"]).await?;
        let started = std::time::Instant::now();
        let got = q.lease(big, Duration::ZERO).await?;
        if started.elapsed() >= ttl {
            return Err(format!(
                "limits: lease({big}) took {} ms, longer than the {} ms lease time it needs",
                started.elapsed().as_millis(),
                ttl.as_millis()
            )
            .into());
        }
        slow.push(("lease(10,000)", server.longest_script_ms().await?));
        tokio::time::sleep(ttl + Duration::from_millis(100)).await;
        server.cmd::<()>(&["SLOWLOG", "RESET"]).await?;
        let reclaimed = q.reclaim(big).await?;
        slow.push((
            "reclaim of 10,000 expired leases",
            server.longest_script_ms().await?,
        ));
        server.cmd::<()>(&["SLOWLOG", "RESET"]).await?;
        let requeued = q.requeue_dead(None).await?;
        slow.push((
            "requeue of 10,000 dead letters",
            server.longest_script_ms().await?,
        ));
        // the same items dead again, one per host: each purged one leaves its host's counts
        let again = q.lease(big, Duration::ZERO).await?;
        let fail: Vec<_> = again
            .iter()
            .map(|l| {
                let options = NackOptions {
                    retry: false,
                    ..NackOptions::default()
                };
                (l.handle(), options)
            })
            .collect();
        q.nack(&fail).await?;
        server.cmd::<()>(&["SLOWLOG", "RESET"]).await?;
        let purged = q.purge_dead().await?;
        slow.push((
            "purge of 10,000 dead letters of 10,000 hosts",
            server.longest_script_ms().await?,
        ));
        server.slowlog(10_000, 128).await?;
        if got.len() != big
            || reclaimed.dead as usize != big
            || requeued as usize != big
            || again.len() != big
            || purged as usize != big
        {
            return Err(format!(
                "limits: leased {}, reclaimed dead {}, requeued {requeued}, leased again {}, \
                 purged {purged} of {big}",
                got.len(),
                reclaimed.dead,
                again.len()
            )
            .into());
        }
        for (label, ms) in slow {
            longest(label, ms, &mut out);
        }
    }

    if wanted("floor") {
        server.flush().await?;
        floor(
            &client,
            &mut server,
            n,
            concurrency,
            Floor::Layout,
            &mut out,
        )
        .await?;
        server.flush().await?;
        floor(
            &client,
            &mut server,
            n,
            concurrency,
            Floor::Semantic,
            &mut out,
        )
        .await?;
    }
    Ok(Value::Object(out))
}

/// One-URL hosts in layouts other than crawlq's: the bytes per host of each structure a layout
/// could keep a host's record, schedule, head age and count in, built from the records of N
/// one-URL hosts that crawlq seeded (bench/README.md, "Tenth round"). Redis keeps a small
/// sorted set (at most `zset-max-listpack-entries`, 128 by default, members of at most 64
/// bytes) as one listpack, without the skiplist node and hash entry of each member; the
/// bucketed rows use enough buckets to stay small, and fail if one did not.
async fn layouts(
    url: &str,
    server: &mut Server,
    n: usize,
    concurrency: usize,
    out: &mut Map<String, Value>,
) -> Result<()> {
    server.flush().await?;
    let q = open(url, Config::default()).await?;
    let urls: Vec<SeedItem> = (0..n).map(|i| SeedItem::from(page_url(i, n))).collect();
    seed_all(&q, urls, concurrency).await?;
    let base = q.ops().keys().base().to_string();
    let lane_prefix = format!("{base}:l:0:");
    let lanes = server.keys_matching(&format!("{lane_prefix}*")).await?;
    let mut hosts = Vec::with_capacity(n);
    let mut records: Vec<Vec<u8>> = Vec::with_capacity(n);
    for chunk in lanes.chunks(1000) {
        let mut pipe = redis::pipe();
        for lane in chunk {
            pipe.cmd("LINDEX").arg(lane).arg(0);
            hosts.push(lane[lane_prefix.len()..].to_string());
        }
        let heads: Vec<Vec<u8>> = pipe.query_async(&mut server.conn).await?;
        records.extend(heads);
    }
    if hosts.len() != n {
        return Err(format!("layouts: {} one-URL lanes for {n} hosts", hosts.len()).into());
    }
    let before = server.used_memory().await?;
    server.delete_matching(&format!("{base}:s:*")).await?;
    server.delete_matching(&format!("{base}:v:*")).await?;
    let members = (before - server.used_memory().await?) / n as f64;
    // each part on an empty server, so that none pays for growing the key space that another
    // filled
    server.flush().await?;
    let buckets = n.div_ceil(64);
    let bucket = |host: &str| {
        // FNV-1a: any even spread will do
        let hash = host.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
        format!("bench:layout:zb:{}", hash % buckets as u64)
    };
    let time = 1_795_000_000_000u64;
    let mut figures: Vec<(&str, f64)> = Vec::new();
    type Build<'a> = Box<dyn Fn(&mut redis::Pipeline, usize) + 'a>;
    let parts: Vec<(&str, Build)> = vec![
        (
            "one sorted set, host -> time (as ready, heads)",
            Box::new(|p, i| {
                p.cmd("ZADD")
                    .arg("bench:layout:z")
                    .arg(time + i as u64)
                    .arg(&hosts[i]);
            }),
        ),
        (
            "small sorted sets (listpack), host -> time",
            Box::new(|p, i| {
                p.cmd("ZADD")
                    .arg(bucket(&hosts[i]))
                    .arg(time + i as u64)
                    .arg(&hosts[i]);
            }),
        ),
        (
            "small sorted sets (listpack), host -> count",
            Box::new(|p, i| {
                p.cmd("ZADD").arg(bucket(&hosts[i])).arg(1).arg(&hosts[i]);
            }),
        ),
        (
            "a one-element list per host (as a lane), record",
            Box::new(|p, i| {
                p.cmd("RPUSH")
                    .arg(format!("{base}:x:0:{}", hosts[i]))
                    .arg(&records[i]);
            }),
        ),
        (
            "a string per host, record",
            Box::new(|p, i| {
                p.cmd("SET")
                    .arg(format!("{base}:x:0:{}", hosts[i]))
                    .arg(&records[i]);
            }),
        ),
        (
            "one hash, host -> record",
            Box::new(|p, i| {
                p.cmd("HSET")
                    .arg("bench:layout:h")
                    .arg(&hosts[i])
                    .arg(&records[i]);
            }),
        ),
    ];
    for (label, build) in &parts {
        let before = server.used_memory().await?;
        for start in (0..n).step_by(1000) {
            let mut pipe = redis::pipe();
            for i in start..(start + 1000).min(n) {
                build(&mut pipe, i);
            }
            pipe.query_async::<()>(&mut server.conn).await?;
        }
        let bytes = (server.used_memory().await? - before) / n as f64;
        if label.starts_with("small") {
            for b in 0..buckets {
                let key = format!("bench:layout:zb:{b}");
                let encoding: String = server.cmd(&["OBJECT", "ENCODING", &key]).await?;
                if encoding != "listpack" {
                    return Err(format!("layouts: {key} is a {encoding}, not a listpack").into());
                }
            }
        }
        server.flush().await?;
        figures.push((label, bytes));
    }
    let record_bytes = records.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    let figure = |label: &str| figures.iter().find(|(l, _)| *l == label).map(|f| f.1);
    let (Some(hash), Some(times), Some(counts)) = (
        figure("one hash, host -> record"),
        figure("small sorted sets (listpack), host -> time"),
        figure("small sorted sets (listpack), host -> count"),
    ) else {
        return Err("layouts: a part is missing".into());
    };
    for (label, bytes) in figures {
        put(
            out,
            &format!("layout bytes per one-URL host: {label}"),
            bytes,
        );
    }
    put(
        out,
        "layout bytes per one-URL host: the record's own bytes",
        record_bytes,
    );
    put(
        out,
        "layout bytes per one-URL host: seen + live members",
        members,
    );
    // every figure kept: the record, the schedule (ready), the head age (heads), the count
    // (hostitems), the seen and live members
    put(
        out,
        "layout bytes per one-URL host: smallest found (hash record, 3 small-set entries, members)",
        hash + 2.0 * times + counts + members,
    );
    Ok(())
}

/// Which floor (bench/src/floor.lua) to run.
#[derive(Clone, Copy, PartialEq)]
enum Floor {
    /// The per-item commands crawlq's layout needs for everything it promises.
    Layout,
    /// Only what exact de-duplication, politeness inside the lease, fencing and taking back
    /// expired leases need (no live set, per-host counts, exact FIFO across hosts, head ages).
    Semantic,
}

impl Floor {
    fn label(self, phase: &str) -> String {
        match self {
            Floor::Layout => format!("floor: {phase}"),
            Floor::Semantic => format!("semantic floor: {phase}"),
        }
    }

    fn function(self, operation: &str) -> String {
        match self {
            Floor::Layout => format!("floor_{operation}"),
            Floor::Semantic => format!("floor_{operation}_min"),
        }
    }
}

/// A floor of seed, lease(100) and ack(100) (bench/src/floor.lua), run on the same URLs by the
/// same number of tasks as crawlq's own phases, with every key, member and record computed here
/// instead of in Lua.
async fn floor(
    client: &redis::Client,
    server: &mut Server,
    n: usize,
    concurrency: usize,
    which: Floor,
    out: &mut Map<String, Value>,
) -> Result<()> {
    use std::hash::{Hash, Hasher};
    const HOSTS: usize = 1000;
    let conn = connect(client).await?;
    let mut c = conn.clone();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(include_str!("floor.lua"))
        .query_async::<()>(&mut c)
        .await?;
    // per item: seen bucket key, fingerprint, live bucket key, live member, lane key, host,
    // record (the shape and size crawlq stores)
    let items: Arc<Vec<[String; 7]>> = Arc::new(
        (0..n)
            .map(|i| {
                let url = page_url(i, HOSTS);
                let host = url[8..].split('/').next().unwrap_or_default().to_string();
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                url.hash(&mut hasher);
                let fp = hasher.finish();
                let live = fp.rotate_left(29);
                [
                    format!("f:s:{}", (fp >> 32) % 1024),
                    (fp as i64).to_string(),
                    format!("f:v:{}", (live >> 32) % 1024),
                    (live as i64).to_string(),
                    format!("f:l:{host}"),
                    host.clone(),
                    format!(
                        r#"{{"v":1,"id":"{}","ts":1795000000000,"url":"{url}"}}"#,
                        i + 1
                    ),
                ]
            })
            .collect(),
    );

    server.reset().await?;
    together(concurrency, |t| {
        let (mut c, items) = (conn.clone(), items.clone());
        async move {
            for chunk in items.chunks(1000).skip(t).step_by(concurrency) {
                let mut call = redis::cmd("FCALL");
                call.arg(which.function("seed")).arg(0).arg(chunk.len());
                for item in chunk {
                    match which {
                        Floor::Layout => call.arg(&item[..]),
                        // seen bucket, fingerprint, lane, record
                        Floor::Semantic => {
                            call.arg(&item[0]).arg(&item[1]).arg(&item[4]).arg(&item[6])
                        }
                    };
                }
                call.query_async::<()>(&mut c).await?;
            }
            Ok(())
        }
    })
    .await?;
    put(
        out,
        &which.label("seed"),
        server.script_usec(&which.label("seed")).await? / n as f64,
    );

    // every host in `ready` at the rank of its first item, as seed leaves it
    let mut schedule = redis::cmd("ZADD");
    schedule.arg("f:ready");
    for (i, item) in items.iter().take(HOSTS).enumerate() {
        schedule.arg(i + 1).arg(&item[5]);
    }
    schedule.query_async::<()>(&mut c).await?;
    let leased = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(n)));
    server.reset().await?;
    together(concurrency, |_| {
        let (mut c, leased) = (conn.clone(), leased.clone());
        async move {
            loop {
                let mut call = redis::cmd("FCALL");
                call.arg(which.function("lease"))
                    .arg(0)
                    .arg(100)
                    .arg("9999999999999");
                if which == Floor::Semantic {
                    // the score hosts go back to `ready` with
                    call.arg(1);
                }
                let got: Vec<String> = call.query_async(&mut c).await?;
                if got.is_empty() {
                    return Ok(());
                }
                let mut held = leased.lock().await;
                for pair in got.chunks(2) {
                    let id = pair[1]
                        .split('"')
                        .nth(5)
                        .and_then(|id| id.parse::<usize>().ok())
                        .ok_or("floor: a record without an id")?;
                    held.push((pair[0].clone(), id - 1));
                }
            }
        }
    })
    .await?;
    put(
        out,
        &which.label("lease(100)"),
        server.script_usec(&which.label("lease(100)")).await? / n as f64,
    );
    let leased = Arc::new(std::mem::take(&mut *leased.lock().await));
    if leased.len() != n {
        return Err(format!("floor: leased {} of {n}", leased.len()).into());
    }

    server.reset().await?;
    together(concurrency, |t| {
        let (mut c, items, leased) = (conn.clone(), items.clone(), leased.clone());
        async move {
            for chunk in leased.chunks(100).skip(t).step_by(concurrency) {
                let mut call = redis::cmd("FCALL");
                call.arg(which.function("ack")).arg(0).arg(chunk.len());
                for (key, i) in chunk {
                    let item = &items[*i];
                    call.arg(key);
                    if which == Floor::Layout {
                        call.arg(&item[2]).arg(&item[3]).arg(&item[5]);
                    }
                }
                call.query_async::<()>(&mut c).await?;
            }
            Ok(())
        }
    })
    .await?;
    put(
        out,
        &which.label("ack(100)"),
        server.script_usec(&which.label("ack(100)")).await? / n as f64,
    );
    Ok(())
}
