//! What a queue of S shards costs where not every shard has work, counted in script calls
//! (INFO commandstats of every node): an empty lease, a lease from a queue whose work is all in
//! one shard and a second of a blocked lease cost what they cost with one shard, whatever S
//! (the queue's index of shards with work, docs/PROTOCOL.md section 9); a seed into any shard
//! wakes a blocked lease as soon as with one shard. On one Redis with S = 1, 8 and 64, and on a
//! Redis Cluster with S = 8.
mod common;

use common::*;
use crawlq::*;
use std::time::{Duration, Instant};

/// Script calls (FCALL, EVALSHA, EVAL and their read-only forms) on all `servers` so far.
fn script_calls(servers: &[&RedisServer]) -> u64 {
    servers
        .iter()
        .map(|s| {
            [
                "fcall",
                "fcall_ro",
                "evalsha",
                "evalsha_ro",
                "eval",
                "eval_ro",
            ]
            .iter()
            .map(|c| calls_of(s, c))
            .sum::<u64>()
        })
        .sum()
}

struct Costs {
    empty_lease: f64,
    one_shard_lease: f64,
    blocked_second: f64,
    /// stats of the empty queue, then is_finished of the empty queue (idle: a second reading
    /// where one is needed) and of the busy one
    stats: u64,
    finished_idle: u64,
    finished_busy: u64,
    /// a page of hosts of the busy queue
    hosts_page: u64,
}

/// The calls of each operation on a fresh queue of `shards` shards (all within one sweep
/// period of the first call, which reads every shard once).
async fn costs(url: &str, servers: &[&RedisServer], shards: u32) -> Costs {
    let q = Queue::connect(
        url,
        &unique("calls"),
        Config {
            shards: Some(shards),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    // the first lease of a queue sweeps its shards into the index
    q.lease(1, Duration::ZERO).await.unwrap();
    let calls = || script_calls(servers);

    let before = calls();
    for _ in 0..10 {
        assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    }
    let empty_lease = (calls() - before) as f64 / 10.0;

    let before = calls();
    assert!(q.lease(1, Duration::from_secs(1)).await.unwrap().is_empty());
    let blocked_second = (calls() - before) as f64;

    let before = calls();
    let per_shard = if shards > 1 { shards as usize } else { 0 };
    assert_eq!(q.stats().await.unwrap().shards.len(), per_shard);
    let stats = calls() - before;
    let before = calls();
    assert!(q.is_finished().await.unwrap());
    let finished_idle = calls() - before;

    // all the work in one shard: one host
    let urls: Vec<SeedItem> = (0..40)
        .map(|i| format!("http://one.example/{i}").into())
        .collect();
    q.seed(&urls, &SeedOptions::default()).await.unwrap();
    let mut leased = Vec::new();
    let before = calls();
    for _ in 0..20 {
        leased.extend(q.lease(1, Duration::ZERO).await.unwrap());
    }
    let one_shard_lease = (calls() - before) as f64 / 20.0;
    assert_eq!(leased.len(), 20);
    let before = calls();
    assert!(!q.is_finished().await.unwrap());
    let finished_busy = calls() - before;
    let before = calls();
    let page = q.list_hosts(None, 100).await.unwrap();
    let hosts_page = calls() - before;
    assert_eq!(page.hosts.len(), 1);
    assert_eq!((page.hosts[0].ready, page.hosts[0].items), (20, 40));
    eprintln!(
        "S = {shards}: empty lease {empty_lease} calls, lease of a one-shard queue {one_shard_lease}, blocked second {blocked_second}, stats {stats}, is_finished {finished_idle} (idle) {finished_busy} (busy), a page of hosts {hosts_page}"
    );
    Costs {
        empty_lease,
        one_shard_lease,
        blocked_second,
        stats,
        finished_idle,
        finished_busy,
        hosts_page,
    }
}

/// Median ms from a seed (of a host in a random shard) to the return of a blocked lease.
async fn wake_ms(url: &str, shards: u32) -> f64 {
    let name = unique("wake");
    let config = Config {
        shards: Some(shards),
        ..Config::default()
    };
    let waiter = std::sync::Arc::new(Queue::connect(url, &name, config.clone()).await.unwrap());
    let seeder = Queue::connect(url, &name, config).await.unwrap();
    waiter.lease(1, Duration::ZERO).await.unwrap();
    let mut times = Vec::new();
    for i in 0..9 {
        let w = waiter.clone();
        let blocked = tokio::spawn(async move {
            let leases = w.lease(1, Duration::from_secs(5)).await.unwrap();
            (Instant::now(), leases.len())
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sent = Instant::now();
        seeder
            .seed(
                &items(&[&format!("http://wake{i}.example/")]),
                &SeedOptions::default(),
            )
            .await
            .unwrap();
        let (woke, got) = blocked.await.unwrap();
        assert_eq!(
            got, 1,
            "S = {shards}: the seed woke the lease (no wake lost)"
        );
        times.push(woke.duration_since(sent).as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[tokio::test]
async fn shards_without_work_cost_nothing_on_one_redis() {
    let server = RedisServer::start();
    let url = server.url();
    let one = costs(&url, &[&server], 1).await;
    for shards in [8, 64] {
        let c = costs(&url, &[&server], shards).await;
        assert_eq!(
            c.empty_lease, 1.0,
            "S = {shards}: an empty lease is one call"
        );
        assert!(
            c.one_shard_lease <= 1.25 * one.one_shard_lease,
            "S = {shards}: a lease of a one-shard queue takes {} calls (S = 1: {})",
            c.one_shard_lease,
            one.one_shard_lease
        );
        assert!(
            c.blocked_second <= one.blocked_second,
            "S = {shards}: a blocked second takes {} calls (S = 1: {})",
            c.blocked_second,
            one.blocked_second
        );
        // one server: every shard read in one atomic call
        assert_eq!(
            (c.stats, c.finished_idle, c.finished_busy, c.hosts_page),
            (1, 1, 1, 1),
            "S = {shards}: stats, is_finished (idle, busy), a page of hosts in one call each"
        );
    }
    assert_eq!(
        (
            one.stats,
            one.finished_idle,
            one.finished_busy,
            one.hosts_page
        ),
        (1, 1, 1, 1)
    );
    let at_one = wake_ms(&url, 1).await;
    let at_64 = wake_ms(&url, 64).await;
    // (it guards against a wake that grows with the shards or is lost, waiting out the 5 s;
    // 20 ms of slack is for the other test binaries on two cores: one run's median at S = 64
    // was 10.9 ms against 2.6)
    assert!(
        at_64 <= 2.0 * at_one + 20.0,
        "a seed wakes a blocked lease in {at_64:.1} ms at S = 64, {at_one:.1} ms at S = 1"
    );
}

#[tokio::test]
async fn shards_without_work_cost_nothing_on_a_cluster() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    let servers: Vec<&RedisServer> = cluster.nodes.iter().collect();
    let c = costs(&url, &servers, 8).await;
    assert_eq!(
        c.empty_lease, 1.0,
        "an empty lease is one call over the cluster"
    );
    assert!(c.one_shard_lease <= 1.25, "{}", c.one_shard_lease);
    assert!(c.blocked_second <= 2.0, "{}", c.blocked_second);
    // one call per master holding shards (3), twice where idle over several nodes
    assert_eq!(
        (c.stats, c.finished_idle, c.finished_busy, c.hosts_page),
        (3, 6, 3, 3),
        "stats, is_finished (idle, busy), a page of hosts over 3 masters"
    );
    let at_8 = wake_ms(&url, 8).await;
    assert!(at_8 < 100.0, "a seed wakes a blocked lease in {at_8:.1} ms");
    stale_node_map_falls_back_to_one_call_per_shard(&url, &servers).await;
}

/// An executor whose node map is wrong (every shard on one node, as a map read just before
/// slots moved would say): the call for all shards fails on the node that lacks some of them,
/// and the shards are read one by one instead, with the same figures.
struct OneNodeMap(RedisExecutor);

impl queue::Executor for OneNodeMap {
    fn eval(&self, call: ops::ScriptCall) -> impl Future<Output = Result<ops::Reply>> + Send {
        self.0.eval(call)
    }

    fn wait(&self, key: &str, timeout: Duration) -> impl Future<Output = Result<bool>> + Send {
        self.0.wait(key, timeout)
    }

    fn monotonic_ms(&self) -> u64 {
        self.0.monotonic_ms()
    }

    fn in_cluster(&self) -> bool {
        self.0.in_cluster()
    }

    async fn node_groups(&self, keys: &[String]) -> Vec<usize> {
        vec![0; keys.len()]
    }
}

async fn stale_node_map_falls_back_to_one_call_per_shard(url: &str, servers: &[&RedisServer]) {
    let name = unique("stale-map");
    let config = Config {
        shards: Some(8),
        ..Config::default()
    };
    let right = Queue::connect(url, &name, config.clone()).await.unwrap();
    let urls: Vec<SeedItem> = (0..200)
        .map(|i| format!("http://h{}.stale.example/{i}", i % 50).into())
        .collect();
    right.seed(&urls, &SeedOptions::default()).await.unwrap();
    let exec = RedisExecutor::connect(url, &config).await.unwrap();
    let wrong = Queue::with_executor(OneNodeMap(exec), &name, config).unwrap();
    wrong.layout().await.unwrap();
    let before = script_calls(servers);
    let read = wrong.stats().await.unwrap();
    let calls = script_calls(servers) - before;
    let figures = |s: &Stats| (s.ready, s.pending, s.hosts, s.seen, s.seeded_total);
    let truth = right.stats().await.unwrap();
    assert_eq!(figures(&read), figures(&truth));
    assert_eq!(
        read.shards.iter().map(figures).collect::<Vec<_>>(),
        truth.shards.iter().map(figures).collect::<Vec<_>>()
    );
    assert_eq!(read.ready, 200);
    assert_eq!(
        calls,
        1 + 8,
        "the failed call for all shards, then one per shard"
    );
    assert!(!wrong.is_finished().await.unwrap());
    let before = script_calls(servers);
    let page = wrong.list_hosts(None, 1_000).await.unwrap();
    let calls = script_calls(servers) - before;
    assert_eq!(page.hosts.len(), 50);
    let counts = |hosts: &[HostCounts]| {
        hosts
            .iter()
            .map(|h| (h.host.clone(), h.items, h.ready))
            .collect::<Vec<_>>()
    };
    let truth = right.list_hosts(None, 1_000).await.unwrap();
    assert_eq!(counts(&page.hosts), counts(&truth.hosts));
    assert_eq!(
        calls,
        1 + 8,
        "the failed call for all shards, then one per shard"
    );
}

/// Writes the index never heard of are found by the next sweep (docs/PROTOCOL.md section 9,
/// "Index"): a seed whose report was lost (its client died between the call and the report)
/// and a seed by a client that does not report (protocol 4). A lease blocked meanwhile looks
/// again at least once per sweep period, so it finds them within about two periods.
#[tokio::test]
async fn writes_the_index_never_heard_of_are_found_by_the_sweep() {
    let server = RedisServer::start();
    let url = server.url();
    let name = unique("sweep");
    let config = Config {
        shards: Some(8),
        ..Config::default()
    };
    let q = Queue::connect(&url, &name, config.clone()).await.unwrap();
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    let layout = q.layout().await.unwrap();
    let exec = RedisExecutor::connect(&url, &config).await.unwrap();
    let (lost, silent) = ("http://lost-report.example/", "http://silent.example/");
    let shard = |u: &str| crawlq::binding::json::shard_of_input(u, 8).unwrap() as usize;
    assert_ne!(shard(lost), shard(silent), "two shards");

    // the report comes back in the reply and goes nowhere
    let ops = layout.shard(shard(lost));
    let (prepared, _) = ops
        .prepare(&items(&[lost]), &SeedOptions::default())
        .unwrap();
    exec.eval(ops.seed(&prepared)).await.unwrap();
    // a client that does not report: the same keys without the flag
    let plain = ops::Ops::with_keys(
        layout.shard(shard(silent)).keys().clone(),
        config.clone(),
        ops::CallState::new(None),
    )
    .split(8);
    let (prepared, _) = plain
        .prepare(&items(&[silent]), &SeedOptions::default())
        .unwrap();
    exec.eval(plain.seed(&prepared)).await.unwrap();

    // the index says nothing is there until the sweep reads every shard
    let started = Instant::now();
    let mut got = Vec::new();
    while got.len() < 2 && started.elapsed() < Duration::from_secs(12) {
        got.extend(q.lease(2, Duration::from_secs(30)).await.unwrap());
    }
    let mut urls: Vec<String> = got.iter().map(|l| l.url.clone().unwrap()).collect();
    urls.sort();
    assert_eq!(urls, [lost, silent]);
    let took = started.elapsed();
    assert!(
        took <= queue::SWEEP_EVERY * 2 + Duration::from_secs(1),
        "found after {took:?}"
    );
}
