//! Interop worker (Rust), for tests/interop: same modes, behaviour and ledger as
//! tests/interop/workers/worker.py.
//!
//! `interop_worker work <redis-url> <queue> <ledger-path> <slow-ms>`
//! `interop_worker seed <redis-url> <queue> <urls-file>`
//! `interop_worker bytes <redis-url> <queue>`

use crawlq::{Config, NackOptions, Queue, SeedItem, SeedOptions};
use std::io::Write;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> crawlq::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let config = Config {
        lease_ttl: Duration::from_secs(3),
        host_delay: Duration::from_millis(20),
        ..Config::default()
    };
    if let [_, mode, url, name, file] = &args[..]
        && mode == "seed"
    {
        let q = Queue::connect(url, name, config).await?;
        let start_at: u64 = std::env::var("CRAWLQ_START_AT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as u64;
        tokio::time::sleep(Duration::from_millis(start_at.saturating_sub(now))).await;
        let text = std::fs::read_to_string(file).expect("urls file");
        let items: Vec<SeedItem> = text.lines().map(SeedItem::from).collect();
        let report = q.seed(&items, &SeedOptions::default()).await?;
        println!(
            r#"{{"added":{},"duplicates":{}}}"#,
            report.added, report.duplicates
        );
        return Ok(());
    }
    if let [_, mode, url, name] = &args[..]
        && mode == "bytes"
    {
        return bytes_mode(Queue::connect(url, name, config).await?).await;
    }
    let [_, _work, url, name, ledger_path, slow_ms] = &args[..] else {
        eprintln!(
            "usage: interop_worker work <redis-url> <queue> <ledger-path> <slow-ms> | seed <redis-url> <queue> <urls-file>"
        );
        std::process::exit(2);
    };
    let slow_ms: f64 = slow_ms.parse().expect("slow-ms");
    let q = Queue::connect(url, name, config).await?;
    let mut ledger = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ledger_path)
        .expect("ledger");
    let mut log = |line: String| {
        writeln!(ledger, "{line}").expect("ledger write");
    };
    let mut idle = 0;
    let mut jitter = std::process::id() as u64;
    loop {
        let leases = q.lease(5, Duration::from_secs(1)).await?;
        if leases.is_empty() {
            let stats = q.stats().await?;
            idle += 1;
            if idle >= 2 && stats.pending == 0 && stats.leased == 0 {
                break;
            }
            continue;
        }
        idle = 0;
        for l in &leases {
            let url = serde_json::to_string(&l.url).expect("url");
            log(format!(
                r#"{{"ev":"lease","id":"{}","url":{url},"token":{},"host":"{}","at":{},"exp":{}}}"#,
                l.id, l.token, l.host, l.leased_at_ms, l.expires_at_ms
            ));
        }
        for l in &leases {
            jitter = jitter
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            tokio::time::sleep(Duration::from_secs_f64(
                (slow_ms + (jitter >> 33) as f64 % 3.0) / 1000.0,
            ))
            .await;
            if l.url.as_deref().is_some_and(|u| u.ends_with("/poison")) {
                let nack = NackOptions {
                    retry: false,
                    reason: Some("forced by the scenario".into()),
                    ..Default::default()
                };
                let outcome = q.nack(&[(l.handle(), nack)]).await?[0];
                log(format!(
                    r#"{{"ev":"nack","id":"{}","token":{},"outcome":"{outcome}"}}"#,
                    l.id, l.token
                ));
            } else {
                let ok = q.ack(&[l.handle()]).await?[0];
                log(format!(
                    r#"{{"ev":"ack","id":"{}","token":{},"ok":{ok}}}"#,
                    l.id, l.token
                ));
            }
        }
    }
    println!("rust worker {} done", std::process::id());
    Ok(())
}

/// `bytes`: lease one item whose payload `body` holds the bytes 0..=255, check they arrive as
/// bytes, and dead-letter the item with those bytes reversed as its new `body`.
async fn bytes_mode(q: Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    let leases = q.lease(1, Duration::from_secs(2)).await?;
    let lease = leases.first().expect("an item to lease");
    let body = lease
        .payload
        .as_ref()
        .and_then(|p| p.get("body"))
        .and_then(crawlq::wire::value_bytes);
    let expected: Vec<u8> = (0..=255).collect();
    let ok = body.as_deref() == Some(expected.as_slice());
    let reversed: Vec<u8> = expected.iter().rev().copied().collect();
    let nack = NackOptions {
        retry: false,
        payload: Some(
            serde_json::json!({"body": crawlq::wire::bytes_value(&reversed), "by": "rust"}),
        ),
        ..NackOptions::default()
    };
    q.nack(&[(lease.handle(), nack)]).await?;
    println!(r#"{{"ok":{ok}}}"#);
    Ok(())
}
