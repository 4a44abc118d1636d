//! The shared benchmark workload through the Rust API: seed N URLs (batch of 1000 per round
//! trip), then drain them with W concurrent workers leasing B at a time and acking in batches.
//! Prints one JSON line. Used by the binding benchmarks to compare against the same run.
//!
//! `cargo run --release -p crawlq --example workload -- <redis-url> <queue> <n> <workers> <batch>`

use crawlq::{Config, Queue, SeedItem, SeedOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The benchmark URL: about 92 characters, on one of 1000 hosts (same in every language).
fn url(i: usize) -> String {
    format!(
        "https://www.host{:04}.example.com/articles/2026/11/{i:07}/a-long-slug-for-the-title?ref=seed",
        i % 1000
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> crawlq::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, redis, queue, n, workers, batch] = &args[..] else {
        eprintln!("usage: workload <redis-url> <queue> <n> <workers> <batch>");
        std::process::exit(2);
    };
    let (n, workers, batch): (usize, usize, usize) = (
        n.parse().unwrap(),
        workers.parse().unwrap(),
        batch.parse().unwrap(),
    );
    let q = Arc::new(Queue::connect(redis, queue, Config::default()).await?);
    let items: Vec<SeedItem> = (0..n).map(|i| SeedItem::from(url(i))).collect();
    let started = Instant::now();
    let report = q.seed(&items, &SeedOptions::default()).await?;
    let seed_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let q = q.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0usize;
            loop {
                let leases = q.lease(batch, Duration::ZERO).await?;
                if leases.is_empty() {
                    return Ok::<_, crawlq::Error>(done);
                }
                let handles: Vec<_> = leases.iter().map(|l| l.handle()).collect();
                done += q.ack(&handles).await?.len();
            }
        }));
    }
    let mut drained = 0;
    for t in tasks {
        drained += t.await.expect("worker")?;
    }
    let drain_s = started.elapsed().as_secs_f64();
    println!(
        "{{\"added\": {}, \"drained\": {drained}, \"seed_per_s\": {:.0}, \"drain_per_s\": {:.0}}}",
        report.added,
        n as f64 / seed_s,
        drained as f64 / drain_s
    );
    Ok(())
}
