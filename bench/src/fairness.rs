//! Named crawls sharing hosts (docs/crawls.md): how long small crawls take beside one large
//! crawl on the same hosts, against their time without it.
//!
//! ```text
//! crawlq-bench fairness <redis-url> <queue> <large> <smalls> <small-size> <hosts> <workers> <delay-ms> <fetch-ms> [fifo]
//! ```
//!
//! Three runs, each on a queue of its own: the `smalls` small crawls without the large one
//! (`small-size` URLs each, URL i on host i % hosts); the same beside a large crawl of `large`
//! URLs over the same hosts, seeded first; and with `fifo`, the same beside the large one with
//! every item in the default crawl (no names: arrival order), stopped at 10x the time without
//! it. `workers` tasks lease one item at a time, hold it `fetch-ms` (the fetch) and ack it;
//! every host waits `delay-ms` between leases. With many hosts the workers are what bounds the
//! pace, as on a real crawl, and the question is how they are shared. Prints one JSON object:
//! per run the seconds each small crawl took to be leased whole (from the first lease), and the
//! ratios. `shards` come from CRAWLQ_BENCH_SHARDS, as for the other runners.

use super::{Result, bench_config, parse};
use crawlq::{Config, LeaseOptions, Queue, SeedItem, SeedOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Items per seed call of the large crawl.
const SEED_CHUNK: usize = 10_000;

struct Shape {
    large: usize,
    smalls: usize,
    small_size: usize,
    hosts: usize,
    workers: usize,
    delay: Duration,
    fetch: Duration,
}

pub async fn run(url: &str, queue: &str, args: &[&str]) -> Result<Value> {
    let [
        large,
        smalls,
        small_size,
        hosts,
        workers,
        delay_ms,
        fetch_ms,
        rest @ ..,
    ] = args
    else {
        return Err(
            "fairness: <large> <smalls> <small-size> <hosts> <workers> <delay-ms> <fetch-ms> [fifo]"
                .into(),
        );
    };
    let shape = Shape {
        large: parse(large),
        smalls: parse(smalls),
        small_size: parse(small_size),
        hosts: parse(hosts),
        workers: parse(workers),
        delay: Duration::from_millis(parse(delay_ms)),
        fetch: Duration::from_millis(parse(fetch_ms)),
    };
    let alone = crawl_times(url, &format!("{queue}-alone"), &shape, false, true, None).await?;
    let slowest_alone = alone.iter().copied().fold(0.0, f64::max);
    let beside = crawl_times(url, &format!("{queue}-beside"), &shape, true, true, None).await?;
    let ratios: Vec<f64> = beside.iter().zip(&alone).map(|(b, a)| b / a).collect();
    let mut out = json!({
        "large": shape.large, "smalls": shape.smalls, "small_size": shape.small_size,
        "hosts": shape.hosts, "workers": shape.workers, "delay_ms": shape.delay.as_millis() as u64,
        "fetch_ms": shape.fetch.as_millis() as u64,
        "shards": bench_config().shards,
        "alone_seconds": alone, "beside_seconds": beside, "ratios": ratios,
        "worst_ratio": ratios.iter().copied().fold(0.0, f64::max),
    });
    if rest.first() == Some(&"fifo") {
        let limit = Duration::from_secs_f64(slowest_alone * 10.0);
        let fifo = crawl_times(
            url,
            &format!("{queue}-fifo"),
            &shape,
            true,
            false,
            Some(limit),
        )
        .await?;
        out["fifo_seconds"] = json!(fifo);
        out["fifo_limit_seconds"] = json!(limit.as_secs_f64());
    }
    Ok(out)
}

/// The URLs of small crawl `k` (or of the large crawl, `k` = None).
fn urls(shape: &Shape, k: Option<usize>) -> Vec<SeedItem> {
    let (n, name) = match k {
        Some(k) => (shape.small_size, format!("s{k}")),
        None => (shape.large, "large".to_string()),
    };
    (0..n)
        .map(|i| SeedItem::from(format!("http://h{}.fair.test/{name}/{i}", i % shape.hosts)))
        .collect()
}

/// Seed the small crawls (after the large one, with `with_large`), lease everything with
/// `workers` tasks until every small crawl was leased whole (or `limit` passed), and answer the
/// seconds each small crawl took from the first lease (`limit` for one not done by then).
/// `named`: each crawl under its name, else all in the default crawl.
async fn crawl_times(
    url: &str,
    queue: &str,
    shape: &Shape,
    with_large: bool,
    named: bool,
    limit: Option<Duration>,
) -> Result<Vec<f64>> {
    let config = Config {
        host_delay: shape.delay,
        ..bench_config()
    };
    let q = Arc::new(Queue::connect(url, queue, config).await?);
    let opts = |name: String| SeedOptions {
        crawl: named.then_some(name),
        ..SeedOptions::default()
    };
    if with_large {
        let large = urls(shape, None);
        for chunk in large.chunks(SEED_CHUNK) {
            q.seed(chunk, &opts("large".into())).await?;
        }
    }
    for k in 0..shape.smalls {
        q.seed(&urls(shape, Some(k)), &opts(format!("s{k}")))
            .await?;
    }
    // per small crawl: items leased, and the microseconds (from the start) of its last
    let leased: Arc<Vec<AtomicU64>> =
        Arc::new((0..shape.smalls).map(|_| AtomicU64::new(0)).collect());
    let finished: Arc<Vec<AtomicU64>> =
        Arc::new((0..shape.smalls).map(|_| AtomicU64::new(0)).collect());
    let left = Arc::new(AtomicU64::new(shape.smalls as u64));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let one = LeaseOptions {
        max: 1,
        wait: Duration::from_millis(50),
        ttl: None,
    };
    let mut tasks = Vec::new();
    for _ in 0..shape.workers {
        let (q, leased, finished, left, stop) = (
            q.clone(),
            leased.clone(),
            finished.clone(),
            left.clone(),
            stop.clone(),
        );
        let (small_size, fetch) = (shape.small_size as u64, shape.fetch);
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                for lease in q.lease_with(&one).await? {
                    // the small crawl of the URL's path (/s<k>/...), whatever the item's crawl
                    let url = lease.url.as_deref().unwrap_or("");
                    let k = url
                        .split('/')
                        .nth(3)
                        .and_then(|p| p.strip_prefix('s'))
                        .and_then(|k| k.parse::<usize>().ok());
                    if let Some(k) = k
                        && leased[k].fetch_add(1, Ordering::Relaxed) + 1 == small_size
                    {
                        finished[k].store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                        if left.fetch_sub(1, Ordering::Relaxed) == 1 {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    if !fetch.is_zero() {
                        tokio::time::sleep(fetch).await;
                    }
                    q.ack(&[lease.handle()]).await?;
                }
                if limit.is_some_and(|l| started.elapsed() >= l) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let limit_us = limit.map_or(0, |l| l.as_micros() as u64);
    Ok(finished
        .iter()
        .map(|f| match f.load(Ordering::Relaxed) {
            0 => limit_us as f64 / 1e6,
            us => us as f64 / 1e6,
        })
        .collect())
}
