//! Benchmark runners driven by bench/run.py: crawlq through the Rust API, and the classic
//! Redis-list queue pattern (LPUSH / BRPOPLPUSH / LREM) on the `redis` crate. Every command
//! prints one JSON line `{"items": N, "seconds": S}`; reading the input file is not timed.
//!
//! ```text
//! crawlq-bench crawlq seed  <redis-url> <queue> <file>
//! crawlq-bench crawlq drain <redis-url> <queue> <concurrency> <batch> <host-delay-ms> <expected>
//! crawlq-bench crawlq drain-next ...   the same, each ack sent with the next lease (ack_and_lease)
//! crawlq-bench crawlq crawl <redis-url> <queue> <concurrency> <pages-file>   (crawl.rs)
//! crawlq-bench crawlq crawl-loop ...   the same pages, each leased, its links seeded, then acked
//! crawlq-bench scrapy-redis seed  <redis-url> <key> <file>
//! crawlq-bench scrapy-redis crawl <redis-url> <key> <concurrency> <pages-file>
//! crawlq-bench list   seed  <redis-url> <key> <file>            one LPUSH round trip per URL
//! crawlq-bench list   seed-pipelined <redis-url> <key> <file>   1000 LPUSH per round trip
//! crawlq-bench list   drain <redis-url> <key> <concurrency> <expected>
//! crawlq-bench ping <redis-url> <count>      sequential PINGs through the client crawlq uses
//! crawlq-bench cost <redis-url> <n> <concurrency>   Redis CPU per item per script (cost.rs)
//! crawlq-bench fairness <redis-url> <queue> <large> <smalls> <small-size> <hosts> <workers> <delay-ms> [fifo]
//!                                           small crawls beside a large one (fairness.rs)
//! ```

mod cost;
mod crawl;
mod fairness;

use crawlq::redis_exec::{RedisExecutor, redis, to_error};
use crawlq::{Config, LeaseOptions, Queue, SeedItem, SeedOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// How long an idle worker waits for more work before it concludes the queue is drained. The
/// time reported ends at the last item, so this wait is not counted.
const IDLE_WAIT: Duration = Duration::from_millis(300);
/// LPUSH commands per round trip of the pipelined list seed.
const SEED_PIPELINE: usize = 1000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["crawlq", "seed", url, queue, file] => crawlq_seed(url, queue, file).await,
        [
            "crawlq",
            mode @ ("drain" | "drain-next"),
            url,
            queue,
            concurrency,
            batch,
            delay_ms,
            expected,
        ] => {
            crawlq_drain(
                url,
                queue,
                parse(concurrency),
                parse(batch),
                parse(delay_ms),
                parse(expected),
                *mode == "drain-next",
            )
            .await
        }
        [
            "crawlq",
            mode @ ("crawl" | "crawl-loop"),
            url,
            queue,
            concurrency,
            file,
        ] => {
            let answer = if *mode == "crawl" {
                crawl::Answer::OneCall
            } else {
                crawl::Answer::ThreeCalls
            };
            crawl::crawlq_crawl(url, queue, parse(concurrency), file, answer).await
        }
        ["scrapy-redis", "seed", url, key, file] => crawl::scrapy_redis_seed(url, key, file).await,
        ["scrapy-redis", "crawl", url, key, concurrency, file] => {
            crawl::scrapy_redis_crawl(url, key, parse(concurrency), file).await
        }
        ["list", "seed", url, key, file] => list_seed(url, key, file, 1).await,
        ["list", "seed-pipelined", url, key, file] => {
            list_seed(url, key, file, SEED_PIPELINE).await
        }
        ["list", "drain", url, key, concurrency, expected] => {
            list_drain(url, key, parse(concurrency), parse(expected)).await
        }
        ["ping", url, count] => ping(url, parse(count)).await,
        ["fairness", url, queue, rest @ ..] => match fairness::run(url, queue, rest).await {
            Ok(figures) => {
                println!("{figures}");
                return;
            }
            Err(e) => Err(e),
        },
        ["cost", url, n, concurrency] => {
            match cost::cost(url, parse(n), parse(concurrency)).await {
                Ok(figures) => {
                    println!("{figures}");
                    return;
                }
                Err(e) => Err(e),
            }
        }
        _ => {
            eprintln!("usage: see the header of bench/src/main.rs");
            std::process::exit(2);
        }
    };
    match outcome {
        Ok((items, seconds)) => println!("{{\"items\": {items}, \"seconds\": {seconds:.6}}}"),
        Err(e) => {
            eprintln!("crawlq-bench: {e}");
            std::process::exit(1);
        }
    }
}

fn parse<T: std::str::FromStr>(text: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"))
}

fn read_lines(file: &str) -> Result<Vec<String>> {
    Ok(std::fs::read_to_string(file)?
        .lines()
        .map(str::to_string)
        .collect())
}

/// The queue options of every crawlq runner: the defaults, with `min_replicas` from
/// CRAWLQ_BENCH_MIN_REPLICAS (bench/replicas.py measures what waiting for replicas costs) and
/// `shards` from CRAWLQ_BENCH_SHARDS (bench/cluster.py).
fn bench_config() -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let linger_ms = std::env::var("CRAWLQ_BENCH_ANSWER_LINGER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Config {
        min_replicas: env("CRAWLQ_BENCH_MIN_REPLICAS").unwrap_or(0),
        shards: env("CRAWLQ_BENCH_SHARDS"),
        answer_linger: Duration::from_millis(linger_ms),
        ..Config::default()
    }
}

async fn crawlq_seed(url: &str, queue: &str, file: &str) -> Result<(u64, f64)> {
    let items: Vec<SeedItem> = read_lines(file)?.into_iter().map(SeedItem::from).collect();
    let q = Queue::connect(url, queue, bench_config()).await?;
    let started = Instant::now();
    let report = q.seed(&items, &SeedOptions::default()).await?;
    Ok((report.added, started.elapsed().as_secs_f64()))
}

/// `concurrency` workers on one connection, each leasing `batch` and acking them in one call.
async fn crawlq_drain(
    url: &str,
    queue: &str,
    concurrency: usize,
    batch: usize,
    host_delay_ms: u64,
    expected: u64,
    ack_with_next: bool,
) -> Result<(u64, f64)> {
    let config = Config {
        host_delay: Duration::from_millis(host_delay_ms),
        ..bench_config()
    };
    let q = Arc::new(Queue::connect(url, queue, config).await?);
    let drained = Arc::new(Drained::start());
    let mut tasks = Vec::new();
    let opts = LeaseOptions {
        max: batch,
        wait: IDLE_WAIT,
        ttl: None,
    };
    for _ in 0..concurrency {
        let (q, drained) = (q.clone(), drained.clone());
        tasks.push(tokio::spawn(async move {
            let mut leases = q.lease_with(&opts).await?;
            while !leases.is_empty() {
                let handles: Vec<_> = leases.iter().map(|l| l.handle()).collect();
                // the last items: a plain ack (no wait for more after them)
                let last = drained.count() + leases.len() as u64 >= expected;
                if ack_with_next && !last {
                    // the ack and the next lease in one call
                    let (acked, next) = q.ack_and_lease(&handles, &opts).await?;
                    drained.add(count(&acked));
                    leases = next;
                } else {
                    drained.add(count(&q.ack(&handles).await?));
                    leases = if last {
                        Vec::new()
                    } else {
                        q.lease_with(&opts).await?
                    };
                }
            }
            Ok::<_, crawlq::Error>(())
        }));
    }
    drained.join(tasks).await
}

/// How many flags are true.
fn count(acked: &[bool]) -> u64 {
    acked.iter().filter(|ok| **ok).count() as u64
}

/// Items handled by a pool of drain workers and the time of the last one: a run ends at its
/// last item, not when the idle workers give up waiting.
struct Drained {
    started: Instant,
    items: AtomicU64,
    last_nanos: AtomicU64,
}

impl Drained {
    fn start() -> Self {
        Drained {
            started: Instant::now(),
            items: AtomicU64::new(0),
            last_nanos: AtomicU64::new(0),
        }
    }

    fn count(&self) -> u64 {
        self.items.load(Ordering::Relaxed)
    }

    fn add(&self, items: u64) {
        self.items.fetch_add(items, Ordering::Relaxed);
        let now = self.started.elapsed().as_nanos() as u64;
        self.last_nanos.fetch_max(now, Ordering::Relaxed);
    }

    /// Wait for every worker; the items drained and the seconds up to the last one.
    async fn join<E>(
        &self,
        tasks: Vec<tokio::task::JoinHandle<std::result::Result<(), E>>>,
    ) -> Result<(u64, f64)>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        for task in tasks {
            task.await??;
        }
        Ok((
            self.count(),
            self.last_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        ))
    }
}

/// Sequential round trips through the connection the executor uses: the floor under every
/// single-item operation.
async fn ping(url: &str, count: u64) -> Result<(u64, f64)> {
    let exec = RedisExecutor::connect(url, &Config::default()).await?;
    let mut conn = exec.connection();
    let started = Instant::now();
    for _ in 0..count {
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
    }
    Ok((count, started.elapsed().as_secs_f64()))
}

/// The classic item: `{"url":..,"host":..,"ts":..,"attempt":0}`.
fn classic_item(url: &str, ts: u64) -> String {
    let host = url.split('/').nth(2).unwrap_or("");
    format!(
        "{{\"url\":{},\"host\":{},\"ts\":{ts},\"attempt\":0}}",
        serde_json::Value::from(url),
        serde_json::Value::from(host)
    )
}

async fn list_connection(url: &str) -> Result<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    Ok(client.get_multiplexed_async_connection().await?)
}

async fn list_seed(url: &str, key: &str, file: &str, per_round_trip: usize) -> Result<(u64, f64)> {
    let urls = read_lines(file)?;
    let mut conn = list_connection(url).await?;
    let started = Instant::now();
    let ts = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    for chunk in urls.chunks(per_round_trip) {
        let mut pipe = redis::pipe();
        for url in chunk {
            pipe.cmd("LPUSH")
                .arg(key)
                .arg(classic_item(url, ts))
                .ignore();
        }
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| to_error(e, "LPUSH"))?;
    }
    Ok((urls.len() as u64, started.elapsed().as_secs_f64()))
}

/// `concurrency` workers, each on its own connection (BRPOPLPUSH blocks it): move an item to
/// the processing list, "process" it, remove it with LREM. Two round trips per item.
async fn list_drain(url: &str, key: &str, concurrency: usize, expected: u64) -> Result<(u64, f64)> {
    let processing = format!("{key}:processing");
    let mut connections = Vec::new();
    for _ in 0..concurrency {
        connections.push(list_connection(url).await?);
    }
    let drained = Arc::new(Drained::start());
    let mut tasks = Vec::new();
    for mut conn in connections {
        let (drained, key, processing) = (drained.clone(), key.to_string(), processing.clone());
        tasks.push(tokio::spawn(async move {
            while drained.count() < expected {
                let item: Option<Vec<u8>> = redis::cmd("BRPOPLPUSH")
                    .arg(&key)
                    .arg(&processing)
                    .arg(IDLE_WAIT.as_secs_f64())
                    .query_async(&mut conn)
                    .await?;
                let Some(item) = item else { break };
                let _: i64 = redis::cmd("LREM")
                    .arg(&processing)
                    .arg(1)
                    .arg(item)
                    .query_async(&mut conn)
                    .await?;
                drained.add(1);
            }
            Ok::<_, redis::RedisError>(())
        }));
    }
    drained.join(tasks).await
}
