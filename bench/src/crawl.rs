//! The crawl-shaped workload of bench/run.py: each fetched page is answered with the links
//! found on it (one line of the pages file: its links, tab-separated), most of which the
//! frontier has seen. Worker `w` of `c` answers lines w, w + c, w + 2c, ...; a run reports the
//! pages answered and the seconds up to the last one.

use crate::{Drained, IDLE_WAIT, Result, bench_config, list_connection, read_lines};
use crawlq::redis_exec::{redis, to_error};
use crawlq::{Config, LeaseOptions, Queue, SeedItem, SeedOptions};
use std::sync::Arc;

/// Entries of the known-seen cache of the crawlq runners (every runner the same).
pub const SEEN_CACHE: usize = 100_000;

/// The pages file: per line, one page's links.
pub fn read_pages(file: &str) -> Result<Vec<Vec<String>>> {
    Ok(read_lines(file)?
        .into_iter()
        .map(|line| {
            line.split('\t')
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect())
}

/// How long a page's fetch takes (`CRAWLQ_BENCH_FETCH_MS`, default 0: none).
fn fetch_ms() -> Option<u64> {
    std::env::var("CRAWLQ_BENCH_FETCH_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|ms| *ms > 0)
}

/// Page `page` of worker `worker` is held for between 0.5 and 1.5 times the fetch time `ms`
/// before it is answered, spread evenly over the pages (real fetch times differ, so pages
/// come back one by one). bench/linger.py.
fn fetch_time(ms: u64, worker: usize, page: usize) -> std::time::Duration {
    let spread = ((worker * 7919 + page * 104_729) % 1000) as u64;
    std::time::Duration::from_micros(ms * 500 + ms * spread)
}

/// How a crawlq worker answers its pages.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    /// One call per page: `ack_with_links_and_lease` (its links seeded, its lease acked, the
    /// next page leased), the last page with `ack_with_links`; the known-seen cache on.
    OneCall,
    /// The loop a page's one call replaces: lease the page, seed its links, ack it (three
    /// round trips, no known-seen cache). bench/run.py measures it in the same round as
    /// `OneCall`, as the yardstick of the crawl target (bench/README.md, "Targets").
    ThreeCalls,
}

/// crawlq: each worker leases a page, then answers each of its pages as `answer` says.
pub async fn crawlq_crawl(
    url: &str,
    queue: &str,
    concurrency: usize,
    file: &str,
    answer: Answer,
) -> Result<(u64, f64)> {
    let pages = Arc::new(read_pages(file)?);
    let config = Config {
        seen_cache: if answer == Answer::OneCall {
            SEEN_CACHE
        } else {
            0
        },
        ..bench_config()
    };
    let q = Arc::new(Queue::connect(url, queue, config).await?);
    let done = Arc::new(Drained::start());
    let next = LeaseOptions {
        max: 1,
        wait: IDLE_WAIT,
        ttl: None,
    };
    let fetch = fetch_ms();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (q, done, pages) = (q.clone(), done.clone(), pages.clone());
        tasks.push(tokio::spawn(async move {
            let mine: Vec<&Vec<String>> = pages.iter().skip(worker).step_by(concurrency).collect();
            let mut held = q.lease_with(&next).await?.pop();
            for (i, links) in mine.iter().enumerate() {
                let Some(lease) = held.take() else {
                    return Err(crawlq::Error::InvalidArgument(
                        "the frontier ran dry".into(),
                    ));
                };
                let links: Vec<SeedItem> =
                    links.iter().map(|l| SeedItem::from(l.as_str())).collect();
                if let Some(ms) = fetch {
                    tokio::time::sleep(fetch_time(ms, worker, i)).await;
                }
                let opts = SeedOptions::default();
                let acked = if answer == Answer::ThreeCalls {
                    q.seed(&links, &opts).await?;
                    let acked = q.ack(&[lease.handle()]).await?.first() == Some(&true);
                    if i + 1 < mine.len() {
                        held = q.lease_with(&next).await?.pop();
                    }
                    acked
                } else if i + 1 == mine.len() {
                    q.ack_with_links(&lease.handle(), &links, &opts).await?.0
                } else {
                    let (acked, _, mut more) = q
                        .ack_with_links_and_lease(&lease.handle(), &links, &opts, &next)
                        .await?;
                    held = more.pop();
                    acked
                };
                done.add(u64::from(acked));
            }
            Ok::<_, crawlq::Error>(())
        }));
    }
    done.join(tasks).await
}

/// The scrapy-redis pattern: a set of request fingerprints (SHA-1) and a list of requests.
fn fingerprint(url: &str) -> String {
    sha1_smol::Sha1::from(url).digest().to_string()
}

/// scrapy-redis-style seed: SADD each URL's fingerprint, LPUSH the URLs that were new; 1,000
/// URLs per round trip of each.
pub async fn scrapy_redis_seed(url: &str, key: &str, file: &str) -> Result<(u64, f64)> {
    let urls = read_lines(file)?;
    let mut conn = list_connection(url).await?;
    let started = std::time::Instant::now();
    let mut added = 0;
    for chunk in urls.chunks(1000) {
        added += push_new(&mut conn, key, chunk).await?;
    }
    Ok((added, started.elapsed().as_secs_f64()))
}

/// SADD the fingerprints of `urls` (one pipelined round trip), then LPUSH those not seen
/// before (one more). How many were new.
async fn push_new(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    urls: &[String],
) -> crawlq::Result<u64> {
    let seen = format!("{key}:dupefilter");
    let mut pipe = redis::pipe();
    for u in urls {
        pipe.cmd("SADD").arg(&seen).arg(fingerprint(u));
    }
    let flags: Vec<i64> = pipe
        .query_async(conn)
        .await
        .map_err(|e| to_error(e, "SADD"))?;
    let new: Vec<&String> = urls
        .iter()
        .zip(flags)
        .filter(|(_, f)| *f == 1)
        .map(|(u, _)| u)
        .collect();
    if !new.is_empty() {
        let _: i64 = redis::cmd("LPUSH")
            .arg(format!("{key}:requests"))
            .arg(&new)
            .query_async(conn)
            .await
            .map_err(|e| to_error(e, "LPUSH"))?;
    }
    Ok(new.len() as u64)
}

/// scrapy-redis-style crawl: each worker pops a request (RPOP; scrapy-redis has no lease or
/// ack), then answers the page with its links as the seed does (SADD pipelined, LPUSH of the
/// new ones). scrapy-redis itself sends one SADD and one push per request: this is the
/// pattern at its fastest.
pub async fn scrapy_redis_crawl(
    url: &str,
    key: &str,
    concurrency: usize,
    file: &str,
) -> Result<(u64, f64)> {
    let pages = Arc::new(read_pages(file)?);
    let conn = list_connection(url).await?;
    let done = Arc::new(Drained::start());
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (mut conn, done, pages, key) =
            (conn.clone(), done.clone(), pages.clone(), key.to_string());
        tasks.push(tokio::spawn(async move {
            for links in pages.iter().skip(worker).step_by(concurrency) {
                let popped: Option<String> = redis::cmd("RPOP")
                    .arg(format!("{key}:requests"))
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| to_error(e, "RPOP"))?;
                if popped.is_none() {
                    return Err::<(), crawlq::Error>(crawlq::Error::InvalidArgument(
                        "the frontier ran dry".into(),
                    ));
                }
                push_new(&mut conn, &key, links).await?;
                done.add(1);
            }
            Ok(())
        }));
    }
    done.join(tasks).await
}
