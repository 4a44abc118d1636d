//! Seed and lease+ack throughput through the Rust API against a private redis-server, and
//! Redis memory per pending and per done URL.
//!
//! `cargo bench -p crawlq --bench throughput` (N from `CRAWLQ_BENCH_N`, default 100000).
//! Prints one table; nothing is asserted (the test suite never times anything).

#[path = "../tests/common/mod.rs"]
mod common;

use crawlq::{Config, Queue, RedisExecutor, SeedItem, SeedOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A realistic URL of about 95 characters on one of 1000 hosts.
fn url(i: usize) -> String {
    format!(
        "https://www.host{:04}.example.com/articles/2026/11/{i:07}/a-long-slug-for-the-title?ref=seed",
        i % 1000
    )
}

fn used_memory(server: &common::RedisServer) -> i64 {
    let info = server.cli(&["INFO", "memory"]);
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

async fn drain(q: &Arc<Queue<RedisExecutor>>, workers: usize, batch: usize) -> usize {
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let q = q.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            loop {
                let leases = q.lease(batch, Duration::ZERO).await.unwrap();
                if leases.is_empty() {
                    return n;
                }
                let handles: Vec<_> = leases.iter().map(|l| l.handle()).collect();
                n += q.ack(&handles).await.unwrap().len();
            }
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

/// Microseconds Redis spent in scripts since the last call (from INFO commandstats).
fn redis_script_usec(server: &common::RedisServer) -> f64 {
    let stats = server.cli(&["INFO", "commandstats"]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    stats
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split(',')
                .find_map(|f| f.strip_prefix("usec="))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .sum()
}

fn row(server: &common::RedisServer, name: &str, items: usize, elapsed: Duration) {
    let redis_us = redis_script_usec(server) / items as f64;
    println!(
        "| {name:<50} | {items:>8} | {:>8.2} | {:>10.0} | {redis_us:>13.2} |",
        elapsed.as_secs_f64(),
        items as f64 / elapsed.as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let n: usize = std::env::var("CRAWLQ_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let server = common::RedisServer::start();
    let urls: Vec<SeedItem> = (0..n).map(|i| SeedItem::from(url(i))).collect();
    let mean_len = urls.iter().map(|u| u.input.len()).sum::<usize>() as f64 / n as f64;
    println!(
        "crawlq core throughput: N = {n} URLs (mean {mean_len:.0} chars) over 1000 hosts, redis-server {}",
        server
            .cli(&["INFO", "server"])
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
    );
    println!();
    println!(
        "| {:<50} | {:>8} | {:>8} | {:>10} | {:>13} |",
        "operation", "items", "seconds", "items/s", "Redis µs/item"
    );
    println!(
        "|{:-<52}|{:-<10}|{:-<10}|{:-<12}|{:-<15}|",
        "", "", "", "", ""
    );

    let q = Arc::new(
        Queue::connect(&server.url(), "bench", Config::default())
            .await
            .unwrap(),
    );
    let m0 = used_memory(&server);
    redis_script_usec(&server);
    let started = Instant::now();
    let report = q.seed(&urls, &SeedOptions::default()).await.unwrap();
    row(
        &server,
        "seed (1000 per round trip)",
        report.added as usize,
        started.elapsed(),
    );
    let m1 = used_memory(&server);

    redis_script_usec(&server);
    let started = Instant::now();
    let drained = drain(&q, 1, 100).await;
    row(
        &server,
        "lease 100 + ack 100, 1 worker",
        drained,
        started.elapsed(),
    );
    let m2 = used_memory(&server);

    redis_script_usec(&server);
    let dup = Instant::now();
    let again = q.seed(&urls, &SeedOptions::default()).await.unwrap();
    assert_eq!(again.duplicates as usize, n);
    row(&server, "seed again (all duplicates)", n, dup.elapsed());

    let q16 = Arc::new(
        Queue::connect(&server.url(), "bench16", Config::default())
            .await
            .unwrap(),
    );
    q16.seed(&urls, &SeedOptions::default()).await.unwrap();
    redis_script_usec(&server);
    let started = Instant::now();
    let drained = drain(&q16, 16, 100).await;
    row(
        &server,
        "lease 100 + ack 100, 16 workers",
        drained,
        started.elapsed(),
    );

    let single = n.min(20_000);
    let q1 = Arc::new(
        Queue::connect(&server.url(), "bench1", Config::default())
            .await
            .unwrap(),
    );
    q1.seed(&urls[..single], &SeedOptions::default())
        .await
        .unwrap();
    redis_script_usec(&server);
    let started = Instant::now();
    let drained = drain(&q1, 1, 1).await;
    row(
        &server,
        "lease 1 + ack 1 (2 round trips), 1 worker",
        drained,
        started.elapsed(),
    );
    q1.seed(
        &(0..single)
            .map(|i| SeedItem::from(url(n + i)))
            .collect::<Vec<_>>(),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    redis_script_usec(&server);
    let started = Instant::now();
    let drained = drain(&q1, 16, 1).await;
    row(
        &server,
        "lease 1 + ack 1, 16 workers",
        drained,
        started.elapsed(),
    );

    let polite = Arc::new(
        Queue::connect(
            &server.url(),
            "polite",
            Config {
                host_delay: Duration::from_millis(1),
                ..Config::default()
            },
        )
        .await
        .unwrap(),
    );
    polite.seed(&urls, &SeedOptions::default()).await.unwrap();
    redis_script_usec(&server);
    let started = Instant::now();
    let drained = drain(&polite, 16, 100).await;
    row(
        &server,
        "politeness 1 ms/host: lease 100 + ack, 16 workers",
        drained,
        started.elapsed(),
    );

    println!();
    println!("Redis memory (used_memory growth / N):");
    println!(
        "  pending: {:.0} bytes per URL (record, host lane, seen set, scheduling)",
        (m1 - m0) as f64 / n as f64
    );
    println!(
        "  done:    {:.1} bytes per URL (only the seen set is left)",
        (m2 - m0) as f64 / n as f64
    );
}
