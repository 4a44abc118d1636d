//! `crawlq exporter`: Prometheus metrics of one or more queues on `/metrics`.
//!
//! Each scrape reads every queue's `stats()` (one O(1) script call per queue), so the figures
//! are as fresh as the scrape. The lifetime counters (leased, acked, ...) are kept by the
//! queue in Redis, so they count every worker in every language, not just this process.

use crate::connection::LazyConnection;
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
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:9464")]
    listen: String,
    /// Also export every queue under the key prefix whose name matches PATTERN (`*` any
    /// characters, `?` one): found with SCAN, again at most every --discover-every seconds.
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "*")]
    discover: Option<String>,
    /// Seconds between two discoveries (SCAN walks the whole key space).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    discover_every: f64,
    /// Per-host series (crawlq_host_items, _ready, _delayed, _leased, _dead) for this many
    /// hosts of each queue, those holding the most items (0: none; at most 1000): the
    /// cardinality stays bounded however many hosts a crawl has.
    #[arg(long, value_name = "K", default_value_t = 10)]
    top_hosts: usize,
    /// Per-crawl series (crawlq_crawl_pending, _ready, _delayed, _leased, _dead, _done, _seen,
    /// _hosts, _oldest_pending_age_seconds, _seeded_total, _paused, _deleting, _cap, _held_hosts) for at
    /// most this many named crawls of each
    /// queue, the first by name (0: none): one call per crawl and shard at each scrape.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_crawls: usize,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CrawlLabel {
    queue: String,
    crawl: String,
}

/// The per-crawl gauges: (metric name, help, value; None: no sample).
fn crawl_gauges(c: &crawlq::CrawlStats) -> [(&'static str, &'static str, Option<u64>); 12] {
    [
        (
            "crawlq_crawl_pending",
            "A named crawl's items waiting to be leased (crawl_stats pending)",
            Some(c.pending()),
        ),
        (
            "crawlq_crawl_ready",
            "A named crawl's ready items (crawl_stats ready)",
            Some(c.ready),
        ),
        (
            "crawlq_crawl_delayed",
            "A named crawl's delayed items (crawl_stats delayed)",
            Some(c.delayed),
        ),
        (
            "crawlq_crawl_leased",
            "A named crawl's items leased now (crawl_stats leased)",
            Some(c.leased),
        ),
        (
            "crawlq_crawl_dead",
            "A named crawl's dead letters (crawl_stats dead)",
            Some(c.dead),
        ),
        (
            "crawlq_crawl_done",
            "A named crawl's items acked (crawl_stats done)",
            Some(c.done),
        ),
        (
            "crawlq_crawl_seen",
            "URLs a named crawl added to the seen set (crawl_stats seen)",
            Some(c.seen),
        ),
        (
            "crawlq_crawl_hosts",
            "Hosts with at least one ready item of a named crawl (crawl_stats hosts)",
            Some(c.hosts),
        ),
        (
            "crawlq_crawl_paused",
            "1 while a named crawl is paused (crawl_stats paused)",
            Some(u64::from(c.paused)),
        ),
        (
            "crawlq_crawl_deleting",
            "1 while a named crawl is being deleted, or its deletion stopped part-way (crawl_stats deleting)",
            Some(u64::from(c.deleting)),
        ),
        (
            "crawlq_crawl_cap",
            "A named crawl's cap, the most of its items leased at once; absent without one (crawl_stats cap)",
            c.cap,
        ),
        (
            "crawlq_crawl_held_hosts",
            "Hosts held back because their ready items are all of crawls paused or at their cap, this one among them (crawl_stats held_hosts)",
            Some(c.held_hosts),
        ),
    ]
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HostLabel {
    queue: String,
    host: String,
}

/// The per-host gauges of the top hosts: (metric name, help, value).
fn host_gauges(h: &crawlq::HostCounts) -> [(&'static str, &'static str, u64); 5] {
    [
        (
            "crawlq_host_items",
            "Items a host holds: ready, delayed, leased and dead (the top hosts by this figure; list_hosts)",
            h.items,
        ),
        ("crawlq_host_ready", "Ready items of a top host", h.ready),
        (
            "crawlq_host_delayed",
            "Delayed items of a top host",
            h.delayed,
        ),
        ("crawlq_host_leased", "Leased items of a top host", h.leased),
        ("crawlq_host_dead", "Dead letters of a top host", h.dead),
    ]
}

/// Whether `name` matches a pattern of `*` (any characters) and `?` (one character).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // the last `*` seen and where the name stood then, to backtrack to
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
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

/// The gauges: (metric name, help, value). Each is named after its field of `stats()`. The
/// registry ends every help text with a period.
fn gauges(s: &Stats) -> [(&'static str, &'static str, u64); 9] {
    [
        (
            "crawlq_pending",
            "Items waiting to be leased: ready plus delayed (stats pending)",
            s.pending,
        ),
        (
            "crawlq_ready",
            "Pending items whose time has come; some may still wait on their host's politeness delay (stats ready)",
            s.ready,
        ),
        (
            "crawlq_delayed",
            "Pending items scheduled for later by a seed delay or a retry backoff (stats delayed)",
            s.delayed,
        ),
        (
            "crawlq_leased",
            "Items leased to a worker and not yet acked, nacked or released (stats leased)",
            s.leased,
        ),
        (
            "crawlq_dead",
            "Items in dead letters: failed past max_attempts or nacked without retry (stats dead)",
            s.dead,
        ),
        (
            "crawlq_done",
            "Items acked, kept as counted and seen (stats done)",
            s.done,
        ),
        (
            "crawlq_seen",
            "Distinct items ever queued: the size of the de-duplication set (stats seen)",
            s.seen,
        ),
        (
            "crawlq_hosts",
            "Hosts with pending work (stats hosts)",
            s.hosts,
        ),
        (
            "crawlq_hosts_waiting",
            "Hosts whose next lease waits on their politeness delay (stats hosts_waiting)",
            s.hosts_waiting,
        ),
    ]
}

/// The lifetime counters, registered without the `_total` suffix the exposition adds, so each
/// sample is its `stats()` field (`crawlq_acked_total` is `acked_total`) except two whose
/// family would collide with a gauge: `leased_total` is `crawlq_leases_total` and `dead_total`
/// is `crawlq_dead_lettered_total`.
fn counters(s: &Stats) -> [(&'static str, &'static str, u64); 11] {
    [
        (
            "crawlq_seeded",
            "Items added by seed calls, of every worker (stats seeded_total)",
            s.seeded_total,
        ),
        (
            "crawlq_duplicates",
            "Seeded items refused because the queue had seen them (stats duplicates_total)",
            s.duplicates_total,
        ),
        (
            "crawlq_leases",
            "Leases handed out, including re-leases of retried and reclaimed items (stats leased_total)",
            s.leased_total,
        ),
        (
            "crawlq_acked",
            "Leases acked as done (stats acked_total)",
            s.acked_total,
        ),
        (
            "crawlq_nacked",
            "Leases nacked as failed, retried or dead-lettered (stats nacked_total)",
            s.nacked_total,
        ),
        (
            "crawlq_retried",
            "Nacks and reclaims that queued the item again for another attempt (stats retried_total)",
            s.retried_total,
        ),
        (
            "crawlq_reclaimed",
            "Expired leases taken back from workers that did not answer in time (stats reclaimed_total)",
            s.reclaimed_total,
        ),
        (
            "crawlq_released",
            "Leases given back unanswered, without counting an attempt (stats released_total)",
            s.released_total,
        ),
        (
            "crawlq_dead_lettered",
            "Items moved to dead letters (stats dead_total)",
            s.dead_total,
        ),
        (
            "crawlq_over_budget",
            "Seeded new URLs refused by their host's budget (stats over_budget_total)",
            s.over_budget_total,
        ),
        (
            "crawlq_seen_cache_hits",
            "Seeded items that clients' known-seen caches answered as duplicates without sending them; also in crawlq_duplicates_total (stats seen_cache_hits_total)",
            s.seen_cache_hits_total,
        ),
    ]
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabel {
    version: String,
}

/// Which queues a scrape reads: those named, plus (with --discover) those found under the
/// prefix whose name matches the pattern, found again at most every `every`.
struct Discovery {
    pattern: String,
    every: Duration,
    found: Option<(Instant, Vec<String>)>,
}

struct Exporter {
    queues: Vec<String>,
    discovery: Option<Mutex<Discovery>>,
    config: Config,
    top_hosts: usize,
    max_crawls: usize,
    /// Connected on the first scrape that reaches Redis; kept for the following ones.
    connection: LazyConnection,
    /// The queues whose eviction risk was written to stderr already.
    warned: Mutex<std::collections::HashSet<String>>,
    /// The named queues said on stderr to hold nothing and have no record of an item.
    unused_noted: Mutex<std::collections::HashSet<String>>,
}

impl Exporter {
    async fn executor(&self) -> crawlq::Result<Arc<RedisExecutor>> {
        self.connection.get().await
    }

    /// The queues this scrape reads: the named ones, then the discovered ones (sorted).
    async fn queues(&self, exec: &RedisExecutor) -> crawlq::Result<Vec<String>> {
        let mut queues = self.queues.clone();
        if let Some(discovery) = &self.discovery {
            let mut d = discovery.lock().await;
            let stale = d
                .found
                .as_ref()
                .is_none_or(|(at, _)| at.elapsed() >= d.every);
            if stale {
                let names = crawlq::catalog::list_queues(exec, &self.config.key_prefix)
                    .await?
                    .into_iter()
                    .map(|entry| entry.name)
                    .filter(|name| glob_match(&d.pattern, name))
                    .collect();
                d.found = Some((Instant::now(), names));
            }
            let found = &d.found.as_ref().expect("just filled").1;
            queues.extend(found.iter().filter(|n| !self.queues.contains(n)).cloned());
        }
        Ok(queues)
    }

    /// A queue's stats, pause and top hosts.
    async fn read_queue(
        &self,
        q: &Queue<Arc<RedisExecutor>>,
    ) -> crawlq::Result<(Stats, bool, Vec<crawlq::HostCounts>)> {
        let stats = q.stats().await?;
        // (a misspelt --queue is served as an empty queue: said once, on stderr)
        if crate::inspect::no_record_of_an_item(&stats)
            && self.queues.iter().any(|named| named == q.name())
            && self.unused_noted.lock().await.insert(q.name().to_string())
        {
            eprintln!(
                "crawlq exporter: queue {} holds nothing and has no record of an item under this \
                 key prefix (not used yet, or a misspelt --queue?)",
                q.name()
            );
        }
        let paused = q.is_paused().await?;
        let top = if self.top_hosts > 0 {
            q.list_hosts(None, self.top_hosts).await?.hosts
        } else {
            Vec::new()
        };
        Ok((stats, paused, top))
    }

    /// The first `max_crawls` named crawls of a queue with their stats.
    async fn read_crawls(
        &self,
        q: &Queue<Arc<RedisExecutor>>,
    ) -> crawlq::Result<Vec<(String, crawlq::CrawlStats)>> {
        if self.max_crawls == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for crawl in q.crawls().await?.into_iter().take(self.max_crawls) {
            let stats = q.crawl_stats(&crawl).await?;
            out.push((crawl, stats));
        }
        Ok(out)
    }

    /// Whether the queue's servers may evict its keys, into `gauge` (left unset when the check
    /// fails otherwise). The exporter reads queues with `allow_eviction`, so that a queue at
    /// risk is still shown; the risk is this gauge, and a line on stderr when it is first seen.
    async fn note_eviction(&self, q: &Queue<Arc<RedisExecutor>>, gauge: &Gauge) {
        let evicts = match q.eviction_risk().await {
            Ok(None) => false,
            Ok(Some(why)) => {
                if self.warned.lock().await.insert(q.name().to_string()) {
                    eprintln!("crawlq exporter: queue {}: {why}", q.name());
                }
                true
            }
            Err(e) => {
                eprintln!(
                    "crawlq exporter: queue {}: checking for eviction: {e}",
                    q.name()
                );
                return;
            }
        };
        gauge.set(i64::from(evicts));
    }

    /// `/healthz`: whether Redis answers a PING through the exporter's connection.
    async fn health(&self) -> Result<(), crawlq::Error> {
        let exec = self.executor().await?;
        let mut conn = exec.connection();
        crawlq::redis_exec::redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map_err(|e| crawlq::redis_exec::to_error(e, "PING"))?;
        Ok(())
    }

    /// One scrape: the text exposition of every queue. A queue whose stats cannot be read
    /// shows `crawlq_up 0` and no other series, and the error goes to stderr.
    async fn scrape(&self) -> String {
        let started = Instant::now();
        let mut registry = <Registry>::default();
        let build = Family::<BuildLabel, Gauge>::default();
        build
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        registry.register(
            "crawlq_build_info",
            "Always 1; the version label is the crawlq version of this exporter",
            build,
        );
        let up = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "crawlq_up",
            "1 if the queue's stats could be read at this scrape, 0 if not (Redis unreachable or refusing)",
            up.clone(),
        );
        let paused = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "crawlq_paused",
            "1 while the queue is paused (crawlq queue pause): leases hand out nothing",
            paused.clone(),
        );
        let evicts = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "crawlq_redis_evicts",
            "1 if a Redis server holding the queue may evict its keys when its memory is full (an allkeys-* maxmemory-policy with a maxmemory set): queued URLs, leases and the seen set could be lost; 0 if not",
            evicts.clone(),
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
            "Seconds since the oldest pending item was queued; absent when nothing is pending (stats oldest_pending_age)",
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
            registry.register(
                shard_name,
                format!("{help}, per shard of a sharded queue"),
                family.clone(),
            );
            shard_families.push(family);
        }

        let mut host_families = Vec::new();
        let no_host = crawlq::HostCounts::default();
        if self.top_hosts > 0 {
            for (name, help, _) in host_gauges(&no_host) {
                let family = Family::<HostLabel, Gauge>::default();
                registry.register(name, help, family.clone());
                host_families.push(family);
            }
        }

        let mut crawl_families = Vec::new();
        let crawl_seeded = Family::<CrawlLabel, Counter>::default();
        let crawl_age = Family::<CrawlLabel, Gauge<f64, AtomicU64>>::default();
        if self.max_crawls > 0 {
            for (name, help, _) in crawl_gauges(&crawlq::CrawlStats::default()) {
                let family = Family::<CrawlLabel, Gauge>::default();
                registry.register(name, help, family.clone());
                crawl_families.push(family);
            }
            registry.register(
                "crawlq_crawl_seeded",
                "Items a named crawl's seeds queued (crawl_stats seeded_total)",
                crawl_seeded.clone(),
            );
            registry.register(
                "crawlq_crawl_oldest_pending_age_seconds",
                "Seconds since the oldest ready item of a named crawl was queued; absent when it has none (crawl_stats oldest_pending_age)",
                crawl_age.clone(),
            );
        }

        let exec = self.executor().await;
        let queues = match &exec {
            Ok(exec) => self.queues(exec).await.unwrap_or_else(|e| {
                eprintln!("crawlq exporter: discovering queues: {e}");
                self.queues.clone()
            }),
            Err(_) => self.queues.clone(),
        };
        for queue in &queues {
            let label = QueueLabel {
                queue: queue.clone(),
            };
            let stats = match &exec {
                Ok(exec) => match Queue::with_executor(exec.clone(), queue, self.config.clone()) {
                    Ok(q) => match self.read_queue(&q).await {
                        Ok(read) => {
                            self.note_eviction(&q, &evicts.get_or_create(&label)).await;
                            Ok((read, self.read_crawls(&q).await))
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                Err(e) => Err(e.clone()),
            };
            match stats {
                Ok(((s, is_paused, top), crawls)) => {
                    match crawls {
                        Ok(crawls) => {
                            for (crawl, c) in &crawls {
                                let label = CrawlLabel {
                                    queue: queue.clone(),
                                    crawl: crawl.clone(),
                                };
                                for (family, (_, _, value)) in
                                    crawl_families.iter().zip(crawl_gauges(c))
                                {
                                    if let Some(value) = value {
                                        family.get_or_create(&label).set(value as i64);
                                    }
                                }
                                crawl_seeded.get_or_create(&label).inc_by(c.seeded_total);
                                if let Some(ms) = c.oldest_pending_age_ms {
                                    crawl_age.get_or_create(&label).set(ms as f64 / 1000.0);
                                }
                            }
                        }
                        Err(e) => eprintln!("crawlq exporter: queue {queue}: its crawls: {e}"),
                    }
                    for h in &top {
                        let label = HostLabel {
                            queue: queue.clone(),
                            host: h.host.clone(),
                        };
                        for (family, (_, _, value)) in host_families.iter().zip(host_gauges(h)) {
                            family.get_or_create(&label).set(value as i64);
                        }
                    }
                    up.get_or_create(&label).set(1);
                    paused.get_or_create(&label).set(i64::from(is_paused));
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
            "Seconds this scrape took to read every queue's stats",
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
    if queues.is_empty() && args.discover.is_none() {
        return Err(CliError::Usage(
            "which queues? pass --queue NAME (repeat it, or separate names with commas), or --discover [PATTERN]".into(),
        ));
    }
    let discover_every = crate::seconds(args.discover_every, "--discover-every")?;
    if args.top_hosts > 1000 {
        return Err(CliError::Usage(format!(
            "--top-hosts must be 0..=1000, got {}",
            args.top_hosts
        )));
    }
    for queue in queues {
        crawlq::keys::check_queue_name(&config.key_prefix, queue)?;
    }
    let (server, address) = crate::serve::listen(&args.listen)?;
    let what = match (&args.discover, queues.is_empty()) {
        (Some(pattern), true) => format!("the queues matching {pattern:?}"),
        (Some(pattern), false) => {
            format!("{} and the queues matching {pattern:?}", queues.join(", "))
        }
        (None, _) => queues.join(", "),
    };
    println!("serving metrics of {what} on http://{address}/metrics");
    let _ = std::io::stdout().flush();

    let exporter = Arc::new(Exporter {
        connection: LazyConnection::new(redis_url, &config),
        queues: queues.to_vec(),
        max_crawls: args.max_crawls,
        discovery: args.discover.map(|pattern| {
            Mutex::new(Discovery {
                pattern,
                every: discover_every,
                found: None,
            })
        }),
        // (a queue on a server that may evict its keys is read all the same: crawlq_redis_evicts)
        config: Config {
            allow_eviction: true,
            ..config
        },
        top_hosts: args.top_hosts,
        warned: Mutex::new(Default::default()),
        unused_noted: Mutex::new(Default::default()),
    });
    let runtime = tokio::runtime::Handle::current();
    let serving = server.clone();
    // tiny_http is blocking: requests are served one at a time on a thread of their own, each
    // scrape running on the async runtime.
    let worker = tokio::task::spawn_blocking(move || {
        for request in serving.incoming_requests() {
            let response = match request.url().split('?').next() {
                Some("/metrics") => {
                    let body = runtime.block_on(exporter.scrape());
                    tiny_http::Response::from_string(body).with_header(crate::serve::header("Content-Type", CONTENT_TYPE))
                }
                Some("/healthz") => match runtime.block_on(exporter.health()) {
                    Ok(()) => tiny_http::Response::from_string("ok\n"),
                    Err(e) => tiny_http::Response::from_string(format!("redis: {e}\n"))
                        .with_status_code(503),
                }
                .with_header(crate::serve::header("Content-Type", "text/plain; charset=utf-8")),
                Some("/") => tiny_http::Response::from_string(
                    "<html><body><a href=\"/metrics\">/metrics</a> <a href=\"/healthz\">/healthz</a></body></html>",
                )
                .with_header(crate::serve::header("Content-Type", "text/html; charset=utf-8")),
                _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    // Ctrl-C or SIGTERM (a container stopping) ends the exporter with status 0.
    crate::serve::until_stopped(&server, worker, 1).await
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_patterns_match_whole_names() {
        assert!(glob_match("*", "anything"));
        assert!(glob_match("crawl-*", "crawl-news"));
        assert!(!glob_match("crawl-*", "recrawl-news"));
        assert!(glob_match("shop-??", "shop-eu"));
        assert!(!glob_match("shop-??", "shop-eur"));
        assert!(glob_match("*-eu*", "shop-eu-2"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(!glob_match("a*b*c", "aXbYbZ"));
    }
}
