//! `crawlq exporter`: Prometheus metrics of one or more queues on `/metrics`.
//!
//! Each scrape reads every queue's `stats()` (one O(1) script call per queue), so the figures
//! are as fresh as the scrape. The lifetime counters (leased, acked, ...) are kept by the
//! queue in Redis, so they count every worker in every language, not just this process.

use crate::error::CliError;
use clap::Args;
use crawlq::{Config, Queue, RedisExecutor, Stats};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tokio::sync::Mutex;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:9464")]
    listen: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShardLabel {
    queue: String,
    shard: String,
}

/// The gauges: (metric name, help, value).
fn gauges(s: &Stats) -> [(&'static str, &'static str, u64); 9] {
    [
        (
            "crawlq_pending",
            "Items waiting to be leased (ready + delayed).",
            s.pending,
        ),
        (
            "crawlq_ready",
            "Pending items whose time has come (some may wait on politeness).",
            s.ready,
        ),
        (
            "crawlq_delayed",
            "Pending items scheduled for later (delay, retry backoff).",
            s.delayed,
        ),
        (
            "crawlq_leased",
            "Items leased to a worker and not yet answered.",
            s.leased,
        ),
        ("crawlq_dead", "Items in dead letters.", s.dead),
        ("crawlq_done", "Items acked.", s.done),
        (
            "crawlq_seen",
            "Distinct items ever queued (the de-duplication set).",
            s.seen,
        ),
        ("crawlq_hosts", "Hosts with pending work.", s.hosts),
        (
            "crawlq_hosts_waiting",
            "Hosts whose next lease waits on their politeness delay.",
            s.hosts_waiting,
        ),
    ]
}

/// The counters, registered without the `_total` suffix that the exposition adds.
fn counters(s: &Stats) -> [(&'static str, &'static str, u64); 9] {
    [
        (
            "crawlq_seeded",
            "Items added by seed calls.",
            s.seeded_total,
        ),
        (
            "crawlq_duplicates",
            "Seeded items refused as already seen.",
            s.duplicates_total,
        ),
        ("crawlq_leases", "Leases handed out.", s.leased_total),
        ("crawlq_acks", "Successful acks.", s.acked_total),
        (
            "crawlq_nacks",
            "Successful nacks (retried or dead-lettered).",
            s.nacked_total,
        ),
        (
            "crawlq_retries",
            "Nacks that queued the item again.",
            s.retried_total,
        ),
        (
            "crawlq_reclaimed",
            "Expired leases taken back (by lease calls or reclaim).",
            s.reclaimed_total,
        ),
        (
            "crawlq_released",
            "Leases given back unanswered.",
            s.released_total,
        ),
        (
            "crawlq_dead_lettered",
            "Items moved to dead letters.",
            s.dead_total,
        ),
    ]
}

struct Exporter {
    redis_url: String,
    queues: Vec<String>,
    config: Config,
    /// Connected on the first scrape that reaches Redis; kept for the following ones.
    exec: Mutex<Option<Arc<RedisExecutor>>>,
}

impl Exporter {
    async fn executor(&self) -> crawlq::Result<Arc<RedisExecutor>> {
        let mut exec = self.exec.lock().await;
        if let Some(exec) = exec.as_ref() {
            return Ok(exec.clone());
        }
        let connected = Arc::new(RedisExecutor::connect(&self.redis_url, &self.config).await?);
        *exec = Some(connected.clone());
        Ok(connected)
    }

    /// One scrape: the text exposition of every queue. A queue whose stats cannot be read
    /// shows `crawlq_up 0` and no other series, and the error goes to stderr.
    async fn scrape(&self) -> String {
        let started = Instant::now();
        let mut registry = <Registry>::default();
        let up = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "crawlq_up",
            "1 if the queue's stats could be read, else 0.",
            up.clone(),
        );
        let mut gauge_families = Vec::new();
        let mut counter_families = Vec::new();
        let age = Family::<QueueLabel, Gauge<f64, AtomicU64>>::default();
        let empty = Stats::default();
        for (name, help, _) in gauges(&empty) {
            let family = Family::<QueueLabel, Gauge>::default();
            registry.register(name, help, family.clone());
            gauge_families.push(family);
        }
        registry.register(
            "crawlq_oldest_pending_age_seconds",
            "Age of the oldest pending item (absent when nothing is pending).",
            age.clone(),
        );
        for (name, help, _) in counters(&empty) {
            let family = Family::<QueueLabel, Counter>::default();
            registry.register(name, help, family.clone());
            counter_families.push(family);
        }
        // a queue of several shards: each gauge per shard too (crawlq_shard_pending{queue, shard})
        let mut shard_families = Vec::new();
        for (name, help, _) in gauges(&empty) {
            let family = Family::<ShardLabel, Gauge>::default();
            let shard_name = name.replacen("crawlq_", "crawlq_shard_", 1);
            registry.register(shard_name, format!("{help} Per shard."), family.clone());
            shard_families.push(family);
        }

        let exec = self.executor().await;
        for queue in &self.queues {
            let label = QueueLabel {
                queue: queue.clone(),
            };
            let stats = match &exec {
                Ok(exec) => match Queue::with_executor(exec.clone(), queue, self.config.clone()) {
                    Ok(q) => q.stats().await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e.clone()),
            };
            match stats {
                Ok(s) => {
                    up.get_or_create(&label).set(1);
                    for (family, (_, _, value)) in gauge_families.iter().zip(gauges(&s)) {
                        family.get_or_create(&label).set(value as i64);
                    }
                    for (family, (_, _, value)) in counter_families.iter().zip(counters(&s)) {
                        family.get_or_create(&label).inc_by(value);
                    }
                    if let Some(ms) = s.oldest_pending_age_ms {
                        age.get_or_create(&label).set(ms as f64 / 1000.0);
                    }
                    for (i, shard) in s.shards.iter().enumerate() {
                        let label = ShardLabel {
                            queue: queue.clone(),
                            shard: i.to_string(),
                        };
                        for (family, (_, _, value)) in shard_families.iter().zip(gauges(shard)) {
                            family.get_or_create(&label).set(value as i64);
                        }
                    }
                }
                Err(e) => {
                    up.get_or_create(&label).set(0);
                    eprintln!("crawlq exporter: queue {queue}: {e}");
                }
            }
        }
        let duration = Gauge::<f64, AtomicU64>::default();
        duration.set(started.elapsed().as_secs_f64());
        registry.register(
            "crawlq_scrape_duration_seconds",
            "Time this scrape took to read every queue's stats.",
            duration,
        );
        let mut text = String::new();
        encode(&mut text, &registry).expect("writing to a String cannot fail");
        text
    }
}

pub async fn run(
    redis_url: &str,
    queues: &[String],
    config: Config,
    args: ExporterArgs,
) -> Result<u8, CliError> {
    if queues.is_empty() {
        return Err(CliError::Usage(
            "which queues? pass --queue NAME (repeat it, or separate names with commas)".into(),
        ));
    }
    for queue in queues {
        crawlq::keys::check_queue_name(&config.key_prefix, queue)?;
    }
    let server = tiny_http::Server::http(&args.listen)
        .map_err(|e| CliError::Usage(format!("cannot listen on {}: {e}", args.listen)))?;
    let server = Arc::new(server);
    let address = server
        .server_addr()
        .to_ip()
        .map_or(args.listen.clone(), |a| a.to_string());
    println!(
        "serving metrics of {} on http://{address}/metrics",
        queues.join(", ")
    );
    let _ = std::io::stdout().flush();

    let exporter = Arc::new(Exporter {
        redis_url: redis_url.to_string(),
        queues: queues.to_vec(),
        config,
        exec: Mutex::new(None),
    });
    let runtime = tokio::runtime::Handle::current();
    let serving = server.clone();
    // tiny_http is blocking: requests are served one at a time on a thread of their own, each
    // scrape running on the async runtime.
    let mut worker = tokio::task::spawn_blocking(move || {
        for request in serving.incoming_requests() {
            let response = match request.url().split('?').next() {
                Some("/metrics") => {
                    let body = runtime.block_on(exporter.scrape());
                    tiny_http::Response::from_string(body).with_header(header(CONTENT_TYPE))
                }
                Some("/") => tiny_http::Response::from_string(
                    "<html><body><a href=\"/metrics\">/metrics</a></body></html>",
                )
                .with_header(header("text/html; charset=utf-8")),
                _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::io("installing the SIGTERM handler", e))?;
    // Ctrl-C or SIGTERM (a container stopping) ends the exporter with status 0.
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
        joined = &mut worker => {
            return match joined {
                Ok(()) => Ok(0),
                Err(e) => Err(CliError::io("the HTTP server stopped", std::io::Error::other(e))),
            };
        }
    }
    server.unblock();
    Ok(0)
}

fn header(content_type: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes("Content-Type", content_type).expect("a valid header")
}
