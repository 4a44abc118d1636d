//! End-to-end tour: seed a small frontier, let four workers drain it with per-host politeness,
//! and look at the result.
//!
//! `REDIS_URL=redis://127.0.0.1:6379/0 cargo run -p crawlq --example quickstart`
//! (`tools/demo.sh` starts a private redis-server and runs this).

use crawlq::{Config, NackOptions, Queue, SeedItem, SeedOptions};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> crawlq::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
    let name = format!("quickstart-{}", std::process::id());
    let config = Config {
        host_delay: Duration::from_millis(200), // at most 5 requests per second per host
        max_attempts: 2,
        ..Config::default()
    };
    let q = Arc::new(Queue::connect(&url, &name, config).await?);

    let mut batch: Vec<SeedItem> = ["blog.example", "shop.example", "docs.example"]
        .iter()
        .flat_map(|host| (1..=4).map(move |i| SeedItem::from(format!("https://{host}/page/{i}"))))
        .collect();
    batch.push(SeedItem::from("https://SHOP.example:443/page/1#reviews")); // same page again
    batch.push(SeedItem::from("https://docs.example/missing").with_priority(10));
    batch.push(SeedItem::from("mailto:someone@example.com")); // not crawlable
    let report = q.seed(&batch, &SeedOptions::default()).await?;
    println!(
        "seeded: {} added, {} duplicates, {} invalid",
        report.added,
        report.duplicates,
        report.invalid.len()
    );
    for bad in &report.invalid {
        println!("  item {} {:?}: {}", bad.index, bad.input, bad.reason);
    }

    let started = q.stats().await?.now_ms;
    let mut workers = Vec::new();
    for worker in 0..4 {
        let q = q.clone();
        workers.push(tokio::spawn(async move {
            let mut log = Vec::new();
            loop {
                let leases = q.lease(2, Duration::from_millis(600)).await?;
                if leases.is_empty() {
                    return Ok::<_, crawlq::Error>(log);
                }
                for lease in leases {
                    let url = lease.url.clone().unwrap_or_default();
                    log.push(format!(
                        "{:>5} ms  worker {worker}  {url}  (attempt {})",
                        lease.leased_at_ms - started,
                        lease.attempt
                    ));
                    if url.ends_with("/missing") {
                        // a fetch that failed for good: straight to dead letters
                        let nack = NackOptions {
                            retry: false,
                            reason: Some("HTTP 404".into()),
                            ..Default::default()
                        };
                        q.nack(&[(lease.handle(), nack)]).await?;
                    } else {
                        q.ack(&[lease.handle()]).await?;
                    }
                }
            }
        }));
    }
    let mut timeline = Vec::new();
    for w in workers {
        timeline.extend(w.await.expect("worker task")?);
    }
    timeline.sort_by_key(|line| {
        line.trim_start()
            .split(' ')
            .next()
            .and_then(|ms| ms.parse::<i64>().ok())
    });
    println!("\nleases (server time since start; each host at most every 200 ms):");
    for line in timeline {
        println!("  {line}");
    }

    let stats = q.stats().await?;
    println!(
        "\nstats: pending {} leased {} done {} dead {} seen {}",
        stats.pending, stats.leased, stats.done, stats.dead, stats.seen
    );
    for dead in q.dead(10, 0).await?.items {
        println!(
            "dead letter {}: {} ({})",
            dead.id,
            dead.url.unwrap_or_default(),
            dead.last_error.unwrap_or_default()
        );
    }
    q.purge_dead().await?;
    Ok(())
}
