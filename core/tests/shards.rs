//! One queue split in shards by host, on one Redis and over a Redis Cluster: the queue behaves
//! as one (ids, dead letters, hosts, stats per shard), a blocked lease wakes for work in any
//! shard, the shard count is fixed at creation, and the cluster may move a shard's slot or fail
//! a master over mid-drain without losing an item or leasing one twice while live.
mod common;

use common::*;
use crawlq::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn sharded(shards: u32) -> Config {
    Config {
        shards: Some(shards),
        ..fixed_clock_config()
    }
}

/// Each shard's keys hold exactly the hosts `shard_of` gives it, and the queue answers as one.
async fn behaves_as_one_queue(url: &str, shards: u32) {
    let q = Queue::connect(url, &unique("one"), sharded(shards))
        .await
        .unwrap();
    let urls: Vec<SeedItem> = (0..400)
        .map(|i| format!("http://h{}.one.example/{i}", i % 40).into())
        .collect();
    let report = q.seed(&urls, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 400);
    let seeded_ids: std::collections::HashSet<String> =
        report.ids.iter().map(|id| id.clone().unwrap()).collect();
    assert_eq!(seeded_ids.len(), 400, "ids are unique across shards");
    let again = q.seed(&urls[..50], &SeedOptions::default()).await.unwrap();
    assert_eq!(
        again.duplicates, 50,
        "de-duplication stays exact: a host never leaves its shard"
    );
    let stats = check_invariants(url, &q).await;
    assert_eq!(stats.shards.len(), shards as usize);
    assert_eq!(stats.shards.iter().map(|s| s.ready).sum::<u64>(), 400);
    assert!(
        stats.shards.iter().filter(|s| s.ready > 0).count() > 1,
        "hosts spread over shards"
    );
    let layout = q.layout().await.unwrap();
    for (s, shard) in stats.shards.iter().enumerate() {
        let hosts = (0..40)
            .filter(|h| normalize::shard_of(&format!("h{h}.one.example"), shards) as usize == s)
            .count() as u64;
        assert_eq!(
            shard.hosts, hosts,
            "shard {s} holds the hosts shard_of gives it"
        );
        assert_eq!(
            layout.shard(s).keys().base(),
            format!(
                "crawlq:{{{}}}",
                crawlq::keys::spread_tag(q.name(), s as u32, layout.count() as u32)
            )
        );
    }

    // leases name their shard; answers find it
    let leases = q.lease(100, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 100);
    assert!(leases.iter().all(|l| l.id.contains('@')));
    assert!(
        leases.iter().all(|l| seeded_ids.contains(&l.id)),
        "a lease carries the id its seed reported"
    );
    let (dead, done) = leases.split_at(10);
    assert!(q.ack(&handles(done)).await.unwrap().iter().all(|ok| *ok));
    let to_dead: Vec<_> = dead
        .iter()
        .map(|l| {
            let opts = NackOptions {
                retry: false,
                reason: Some("gone".into()),
                ..Default::default()
            };
            (l.handle(), opts)
        })
        .collect();
    assert!(
        q.nack(&to_dead)
            .await
            .unwrap()
            .iter()
            .all(|o| *o == NackOutcome::Dead)
    );
    let page = q.dead(4, 3).await.unwrap();
    assert_eq!((page.total, page.items.len()), (10, 4));
    let all = q.dead(100, 0).await.unwrap();
    assert_eq!(
        all.items[3..7],
        page.items[..],
        "pages of the merged, time-ordered list"
    );
    let ids: Vec<String> = all.items.iter().take(4).map(|d| d.id.clone()).collect();
    assert_eq!(q.requeue_dead(Some(&ids)).await.unwrap(), 4);
    assert_eq!(q.purge_dead().await.unwrap(), 6);
    let err = q
        .requeue_dead(Some(&["7@99".to_string()]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");

    // a host's settings go to its shard
    let info = q
        .set_host_delay("h3.one.example", Some(Duration::from_millis(700)))
        .await
        .unwrap();
    assert_eq!(info.delay_override_ms, Some(700));
    let info = q.host_info("http://h3.one.example/x").await.unwrap();
    assert_eq!(
        (info.host.as_str(), info.delay_override_ms),
        ("h3.one.example", Some(700))
    );
    assert!(info.ready <= 10);
    assert_eq!(q.peek(5).await.unwrap().len(), 5);

    // drain the rest (the clock is fixed: without its override the host has no delay)
    q.set_host_delay("h3.one.example", None).await.unwrap();
    loop {
        let leases = q.lease(500, Duration::ZERO).await.unwrap();
        if leases.is_empty() {
            break;
        }
        q.ack(&handles(&leases)).await.unwrap();
    }
    let stats = check_invariants(url, &q).await;
    assert_eq!((stats.done, stats.dead, stats.pending), (394, 0, 0));
}

/// A queue of several shards made by a protocol 4 client (home meta `shards` without `tags`)
/// keeps its `<queue>:<shard>` tags; a new one gets the spread tags and a home marked format 5,
/// which protocol 4 clients refuse instead of looking for its shards under other tags.
#[tokio::test]
async fn queues_of_numbered_tags_are_used_as_they_are_and_new_ones_are_spread() {
    let url = test_url();
    let old = unique("numbered");
    shared().cli(&["HSET", &format!("crawlq:{{{old}}}:meta"), "shards", "3"]);
    let q = Queue::connect(&url, &old, Config::default()).await.unwrap();
    q.seed(
        &items(&[
            "http://a.example/",
            "http://b.example/",
            "http://c.example/",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let layout = q.layout().await.unwrap();
    for s in 0..3 {
        assert_eq!(
            layout.shard(s).keys().base(),
            format!("crawlq:{{{old}:{s}}}")
        );
    }
    assert_eq!(q.stats().await.unwrap().ready, 3);
    assert_eq!(q.lease(3, Duration::ZERO).await.unwrap().len(), 3);

    let new = unique("spread");
    let q = Queue::connect(&url, &new, sharded(3)).await.unwrap();
    q.stats().await.unwrap();
    let home = shared().cli(&["HGETALL", &format!("crawlq:{{{new}}}:meta")]);
    let fields: Vec<&str> = home.lines().collect();
    let field = |name: &str| {
        fields
            .iter()
            .position(|f| *f == name)
            .map(|i| fields[i + 1])
    };
    assert_eq!(
        (field("shards"), field("tags"), field("format")),
        (Some("3"), Some("spread"), Some("5"))
    );
    // a client that asks for another count is refused, as before
    let err = Queue::connect(&url, &new, sharded(4)).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
}

/// The seen-set bucket numbers of a level of `base` (what `--scan` finds).
fn seen_buckets(server: &RedisServer, base: &str, level: u32) -> Vec<u32> {
    server
        .cli(&["--scan", "--pattern", &format!("{base}:s:{level}:*")])
        .lines()
        .filter(|l| !l.is_empty())
        .map(|k| k.rsplit(':').next().unwrap().parse().unwrap())
        .collect()
}

/// Seeding `urls` adds them all; seeding them again finds them all seen.
async fn seed_twice(q: &Queue<RedisExecutor>, urls: &[SeedItem]) {
    let n = urls.len() as u64;
    let options = SeedOptions::default();
    assert_eq!(q.seed(urls, &options).await.unwrap().added, n);
    assert_eq!(q.seed(urls, &options).await.unwrap().duplicates, n);
}

/// A shard of a queue of S spread shards splits its seen set S ways (1024 / S level-0 buckets,
/// `meta.split`), so its buckets hold as many members as a one-shard queue's and memory per
/// URL does not grow with S; de-duplication stays exact, level 1 starts at its share of the
/// seen count, and shards of protocol 4 queues keep the full 1,024 buckets.
#[tokio::test]
async fn each_spread_shard_has_its_share_of_the_seen_buckets() {
    let server = RedisServer::start();
    let url = server.url();
    let name = unique("split");
    let q = Queue::connect(&url, &name, sharded(64)).await.unwrap();
    // 40 URLs per host: a host's URLs all go to its shard's 16 level-0 buckets
    let urls: Vec<SeedItem> = (0..8_000)
        .map(|i| format!("http://h{}.split.example/{i}", i % 200).into())
        .collect();
    seed_twice(&q, &urls).await;
    let layout = q.layout().await.unwrap();
    let mut buckets = 0;
    for s in 0..64 {
        let base = layout.shard(s).keys().base().to_string();
        let split = server.cli(&["HGET", &format!("{base}:meta"), "split"]);
        let level0 = seen_buckets(&server, &base, 0);
        let count = level0.len();
        if split.trim().is_empty() {
            // no host of the 200 fell in this shard: nothing written there
            assert_eq!(count, 0, "shard {s}");
            continue;
        }
        assert_eq!(split.trim(), "64", "shard {s}");
        assert!(
            (1..=16).contains(&count),
            "shard {s}: {count} level-0 buckets"
        );
        assert!(level0.iter().all(|b| *b < 16), "shard {s}: {level0:?}");
        buckets += count;
    }
    assert!(buckets <= 1024, "{buckets} buckets in all");
    assert_eq!(q.stats().await.unwrap().seen, 8_000);

    // a shard whose seen count passes 16 * 384 starts level 1, of 128 buckets
    let one: Vec<SeedItem> = (0..6_200)
        .map(|i| format!("http://big.split.example/{i}").into())
        .collect();
    seed_twice(&q, &one).await;
    let s =
        crawlq::binding::json::shard_of_input("http://big.split.example/", 64).unwrap() as usize;
    let base = layout.shard(s).keys().base().to_string();
    let level1 = seen_buckets(&server, &base, 1);
    assert!(!level1.is_empty(), "level 1 started");
    assert!(level1.iter().all(|b| *b < 128), "{level1:?}");

    // a protocol 4 queue's shards keep 1,024 buckets and no split
    let old = unique("numbered-split");
    server.cli(&["HSET", &format!("crawlq:{{{old}}}:meta"), "shards", "4"]);
    let q = Queue::connect(&url, &old, Config::default()).await.unwrap();
    let urls: Vec<SeedItem> = (0..4_000)
        .map(|i| format!("http://h{}.numbered.example/{i}", i % 8).into())
        .collect();
    seed_twice(&q, &urls).await;
    let base = format!("crawlq:{{{old}:0}}");
    assert_eq!(
        server
            .cli(&["HGET", &format!("{base}:meta"), "split"])
            .trim(),
        ""
    );
    assert!(seen_buckets(&server, &base, 0).len() > 16);
}

#[tokio::test]
async fn a_sharded_queue_on_one_redis_behaves_as_one_queue() {
    behaves_as_one_queue(&test_url(), 4).await;
}

#[tokio::test]
async fn a_blocked_lease_wakes_when_any_shard_gets_work() {
    let url = test_url();
    let name = unique("wake");
    let config = Config {
        shards: Some(8),
        ..Config::default()
    };
    let q = Arc::new(Queue::connect(&url, &name, config.clone()).await.unwrap());
    let producer = Queue::connect(&url, &name, config).await.unwrap();
    let mut latencies = Vec::new();
    for i in 0..8 {
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move {
                let leases = q.lease(1, Duration::from_secs(5)).await.unwrap();
                (Instant::now(), leases)
            })
        };
        tokio::time::sleep(Duration::from_millis(150)).await;
        let seeded_at = Instant::now();
        producer
            .seed(
                &items(&[&format!("http://w{i}.example/")]),
                &SeedOptions::default(),
            )
            .await
            .unwrap();
        let (woke_at, leases) = waiter.await.unwrap();
        assert_eq!(leases.len(), 1);
        latencies.push(woke_at.duration_since(seeded_at));
        q.ack(&handles(&leases)).await.unwrap();
    }
    latencies.sort();
    eprintln!(
        "wake latency over 8 shards: median {:?}, max {:?}",
        latencies[4], latencies[7]
    );
    // woken by the seed's marker, not by the end of its wait (5 s, as is the sweep period):
    // the bound is far from both, since wall-clock time on a loaded machine is not a measure
    // (bench/shards.py measures wake latency)
    assert!(latencies[7] < Duration::from_secs(1), "{latencies:?}");
}

#[tokio::test]
async fn the_shard_count_is_fixed_when_the_queue_is_created() {
    let url = test_url();
    let name = unique("count");
    let open = |shards: Option<u32>| {
        let (url, name) = (url.clone(), name.clone());
        async move {
            let config = Config {
                shards,
                ..Config::default()
            };
            Queue::connect(&url, &name, config).await
        }
    };
    let q = open(Some(4)).await.unwrap();
    q.seed(&items(&["http://c.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let err = open(Some(2)).await.unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(err.to_string().contains("has 4 shards"), "{err}");
    assert_eq!(open(None).await.unwrap().shard_count().await.unwrap(), 4);
    for bad in [0, 1025] {
        let config = Config {
            shards: Some(bad),
            ..Config::default()
        };
        assert_eq!(
            Queue::connect(&url, "x", config).await.unwrap_err().code(),
            "CONFIG"
        );
    }
    // a queue that holds data without shards has one
    let plain = unique("plain");
    let q = Queue::connect(&url, &plain, Config::default())
        .await
        .unwrap();
    q.seed(&items(&["http://p.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let config = Config {
        shards: Some(4),
        ..Config::default()
    };
    let err = Queue::connect(&url, &plain, config).await.unwrap_err();
    assert!(err.to_string().contains("has 1 shards"), "{err}");
}

#[tokio::test]
async fn one_queue_over_a_cluster() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    behaves_as_one_queue(&url, 8).await;
    // the shards of one queue are spread over the masters
    let name = unique("spread");
    let q = Queue::connect(&url, &name, sharded(8)).await.unwrap();
    q.seed(&items(&["http://a.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let layout = q.layout().await.unwrap();
    let mut per_master: std::collections::HashMap<u16, u32> = Default::default();
    for s in 0..8 {
        let meta = format!("{}:meta", layout.shard(s).keys().base());
        *per_master.entry(cluster.owner(&meta).port).or_default() += 1;
    }
    // spread tags: every master holds at least its share (8 / 3 rounded down)
    assert!(
        per_master.len() == 3 && per_master.values().all(|&n| n >= 2),
        "8 shards over 3 masters: {per_master:?}"
    );
    // a database other than 0, which a cluster does not have, is a setting to fix
    let err = Queue::connect(&url.replace("/0", "/3"), "q", Config::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(
        err.to_string()
            .contains("a Redis Cluster has database 0 only"),
        "{err}"
    );
    // an unreachable node is named (the first contact is retried until connect_timeout)
    let quick = Config {
        connect_timeout: Duration::from_millis(300),
        command_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let err = Queue::connect("redis://127.0.0.1:1/0", "q", quick)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
}

#[tokio::test]
async fn every_node_of_a_cluster_is_checked_for_eviction() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    let name = unique("evicts");
    // every master but the queue's home's evicts any key when full
    let home = cluster.owner(&format!("crawlq:{{{name}}}:meta")).port;
    let others: Vec<&RedisServer> = cluster.nodes.iter().filter(|n| n.port != home).collect();
    let set_policy = |policy: &str| {
        for node in &others {
            assert_eq!(node.cli(&["CONFIG", "SET", "maxmemory", "1gb"]), "OK");
            assert_eq!(
                node.cli(&["CONFIG", "SET", "maxmemory-policy", policy]),
                "OK"
            );
        }
    };
    set_policy("allkeys-lru");
    let refused = |err: Error| {
        assert_eq!(err.code(), "CONFIG", "{err}");
        assert!(err.to_string().contains("allkeys-lru"), "{err}");
    };
    // a new queue: refused before its shard count is written anywhere
    refused(
        Queue::connect(&url, &name, sharded(8))
            .await
            .map(|_| ())
            .unwrap_err(),
    );
    for node in &cluster.nodes {
        assert_eq!(
            node.cli(&["DBSIZE"]),
            "0",
            "nothing written on {}",
            node.port
        );
    }
    // allowed: made and seeded over all three masters
    let allowed = Config {
        allow_eviction: true,
        ..sharded(8)
    };
    let q = Queue::connect(&url, &name, allowed).await.unwrap();
    let urls: Vec<String> = (0..24).map(|i| format!("http://h{i}.example/")).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    assert_eq!(
        q.seed(&items(&urls), &SeedOptions::default())
            .await
            .unwrap()
            .added,
        24
    );
    // the queue as it is now (its count read from its home), without allow_eviction: refused
    // for the other nodes, though the home's server does not evict
    let existing = Config {
        shards: None,
        ..fixed_clock_config()
    };
    refused(
        Queue::connect(&url, &name, existing.clone())
            .await
            .map(|_| ())
            .unwrap_err(),
    );
    refused(
        Queue::connect(&url, &name, sharded(8))
            .await
            .map(|_| ())
            .unwrap_err(),
    );
    // the check itself, from the client that allowed eviction: the other nodes named
    refused(q.check_eviction().await.unwrap_err());
    let risk = q
        .eviction_risk()
        .await
        .unwrap()
        .expect("the other nodes evict");
    refused(Error::Config(risk));
    // those nodes made safe: opens, nothing lost
    set_policy("noeviction");
    q.check_eviction().await.unwrap();
    assert_eq!(q.eviction_risk().await.unwrap(), None);
    let q = Queue::connect(&url, &name, existing).await.unwrap();
    assert_eq!(q.stats().await.unwrap().ready, 24);
}

/// What every worker of a drain saw: leases (item, leased at, expires at) and successful acks.
#[derive(Default)]
struct Ledger {
    leases: Vec<(String, String, i64, i64)>,
    acked: Vec<String>,
    errors: HashMap<String, usize>,
}

/// Workers drain the queue while `disturb` runs; returns the ledger once the queue is empty.
async fn drain_while<F, Fut>(q: Arc<Queue<RedisExecutor>>, seeded: usize, disturb: F) -> Ledger
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..6 {
        let (q, ledger, stop) = (q.clone(), ledger.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let leases = match q.lease(20, Duration::from_millis(200)).await {
                    Ok(l) => l,
                    Err(e) => {
                        *ledger
                            .lock()
                            .unwrap()
                            .errors
                            .entry(e.code().to_string())
                            .or_default() += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                {
                    let mut l = ledger.lock().unwrap();
                    for lease in &leases {
                        l.leases.push((
                            lease.url.clone().unwrap(),
                            lease.id.clone(),
                            lease.leased_at_ms,
                            lease.expires_at_ms,
                        ));
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                match q.ack(&handles(&leases)).await {
                    Ok(flags) => {
                        let mut l = ledger.lock().unwrap();
                        for (lease, ok) in leases.iter().zip(flags) {
                            if ok {
                                l.acked.push(lease.url.clone().unwrap());
                            }
                        }
                    }
                    Err(e) => {
                        *ledger
                            .lock()
                            .unwrap()
                            .errors
                            .entry(e.code().to_string())
                            .or_default() += 1;
                    }
                }
            }
        }));
    }
    disturb().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(s) = q.stats().await
            && s.pending == 0
            && s.leased == 0
            && s.done as usize >= seeded
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the drain did not finish: {:?}",
            q.stats().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    Arc::try_unwrap(ledger).ok().unwrap().into_inner().unwrap()
}

fn check_ledger(ledger: &Ledger, urls: &[String]) {
    let acked: std::collections::HashSet<&String> = ledger.acked.iter().collect();
    let missing = urls.iter().filter(|u| !acked.contains(u)).count();
    assert_eq!(missing, 0, "0 items lost");
    let mut by_url: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    for (url, _, at, exp) in &ledger.leases {
        by_url.entry(url).or_default().push((*at, *exp));
    }
    for (url, mut leases) in by_url {
        leases.sort();
        for pair in leases.windows(2) {
            assert!(pair[1].0 >= pair[0].1, "{url} leased twice while live");
        }
    }
}

/// A queue of `shards` shards seeded with 3,000 URLs over 60 hosts (`http://<tag><n>.example/`).
async fn seeded(
    url: &str,
    name: &str,
    shards: u32,
    lease_ttl: Duration,
    tag: &str,
) -> (Arc<Queue<RedisExecutor>>, Vec<String>) {
    let config = Config {
        shards: Some(shards),
        lease_ttl,
        ..Config::default()
    };
    let q = Arc::new(Queue::connect(url, name, config).await.unwrap());
    let urls: Vec<String> = (0..3000)
        .map(|i| format!("http://{tag}{}.example/{i}", i % 60))
        .collect();
    let seed: Vec<SeedItem> = urls.iter().map(|u| u.as_str().into()).collect();
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    (q, urls)
}

/// Move the slot of one shard to another master mid-drain (CLUSTER SETSLOT ... MIGRATE): no
/// item lost, none leased twice while live; calls during the move wait for it or fail typed.
#[tokio::test]
async fn a_shard_moves_to_another_master_mid_drain() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    let name = unique("move");
    let (q, urls) = seeded(&url, &name, 3, Duration::from_secs(5), "m").await;
    let key = format!("{}:meta", q.layout().await.unwrap().shard(0).keys().base());
    let from = cluster.owner(&key);
    let to = cluster.nodes.iter().find(|n| n.port != from.port).unwrap();
    let slot = from.cli(&["CLUSTER", "KEYSLOT", &key]);
    let (from_id, to_id) = (from.cli(&["CLUSTER", "MYID"]), to.cli(&["CLUSTER", "MYID"]));
    let ledger = drain_while(q.clone(), urls.len(), || async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        to.cli(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        from.cli(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        let mut moved = 0;
        loop {
            let keys = from.cli(&["CLUSTER", "GETKEYSINSLOT", &slot, "50"]);
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let mut args = vec!["MIGRATE", "127.0.0.1"];
            let port = to.port.to_string();
            args.extend([port.as_str(), "", "0", "5000", "KEYS"]);
            args.extend(keys.iter().copied());
            from.cli(&args);
            moved += keys.len();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for node in &cluster.nodes {
            node.cli(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
        eprintln!(
            "moved slot {slot} ({moved} keys) from {} to {}",
            from.port, to.port
        );
    })
    .await;
    assert_eq!(cluster.owner(&key).port, to.port);
    check_ledger(&ledger, &urls);
    eprintln!(
        "errors seen by workers during the move: {:?}",
        ledger.errors
    );
    assert!(
        ledger
            .errors
            .keys()
            .all(|c| c == "UNAVAILABLE" || c == "TIMEOUT"),
        "{:?}",
        ledger.errors
    );
    check_invariants(&url, &q).await;
}

/// Mid-move, the queue's `meta` (the key a call names) is already on the new master while the
/// rest of its keys are still on the old one: a call is then redirected (ASK) to the new master,
/// which must not run it on the few keys it holds. Acks, a seed of known URLs and a lease sent
/// then wait for the move and answer as if it had not happened.
#[tokio::test]
async fn calls_wait_while_meta_has_moved_ahead_of_the_other_keys() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    let name = unique("ahead");
    let config = Config {
        shards: Some(1),
        command_timeout: Duration::from_secs(20),
        ..Config::default()
    };
    let q = Arc::new(Queue::connect(&url, &name, config).await.unwrap());
    let urls: Vec<SeedItem> = (0..200)
        .map(|i| format!("http://a{}.example/{i}", i % 20).into())
        .collect();
    assert_eq!(
        q.seed(&urls, &SeedOptions::default()).await.unwrap().added,
        200
    );
    let held = q.lease(50, Duration::ZERO).await.unwrap();
    assert_eq!(held.len(), 50);

    let key = format!("crawlq:{{{name}}}:meta");
    let from = cluster.owner(&key);
    let to = cluster.nodes.iter().find(|n| n.port != from.port).unwrap();
    let slot = from.cli(&["CLUSTER", "KEYSLOT", &key]);
    let (from_id, to_id) = (from.cli(&["CLUSTER", "MYID"]), to.cli(&["CLUSTER", "MYID"]));
    to.cli(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
    from.cli(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
    let port = to.port.to_string();
    let migrate = |keys: &[&str]| {
        let mut args = vec![
            "MIGRATE",
            "127.0.0.1",
            port.as_str(),
            "",
            "0",
            "5000",
            "KEYS",
        ];
        args.extend_from_slice(keys);
        assert_eq!(from.cli(&args), "OK");
    };
    migrate(&[key.as_str()]);

    // sent now: each finds meta on the new master and the rest of the queue on the old one
    let acks = {
        let (q, handles) = (q.clone(), handles(&held));
        tokio::spawn(async move { q.ack(&handles).await })
    };
    let again = {
        let (q, urls) = (q.clone(), urls.clone());
        tokio::spawn(async move { q.seed(&urls[..20], &SeedOptions::default()).await })
    };
    let lease = {
        let q = q.clone();
        tokio::spawn(async move { q.lease(10, Duration::ZERO).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let on_new: Vec<String> = to
        .cli(&["CLUSTER", "GETKEYSINSLOT", &slot, "1000"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        on_new,
        std::slice::from_ref(&key),
        "no call ran on the new master's part of the queue"
    );

    loop {
        let keys = from.cli(&["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            break;
        }
        migrate(&keys);
    }
    for node in &cluster.nodes {
        node.cli(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
    }
    assert_eq!(acks.await.unwrap().unwrap(), vec![true; 50]);
    let again = again.await.unwrap().unwrap();
    assert_eq!((again.added, again.duplicates), (0, 20));
    assert_eq!(lease.await.unwrap().unwrap().len(), 10);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.leased, stats.ready), (50, 10, 140));
}

/// A replica takes over (CLUSTER FAILOVER), then a master is killed: the workers follow the new
/// topology without a restart and nothing is lost.
#[tokio::test]
async fn workers_follow_a_failover_inside_the_cluster() {
    let mut cluster = Cluster::start(3, 1);
    let url = cluster.url();
    let name = unique("failover");
    let (q, urls) = seeded(&url, &name, 6, Duration::from_secs(3), "f").await;
    let key = format!("crawlq:{{{name}:1}}:meta");
    let replica_port = cluster.replica_of(cluster.owner(&key)).port;
    let q2 = q.clone();
    let urls2 = urls.clone();
    let ledger = drain_while(q.clone(), urls.len(), || async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let replica = cluster
            .nodes
            .iter()
            .find(|n| n.port == replica_port)
            .unwrap();
        assert_eq!(replica.cli(&["CLUSTER", "FAILOVER"]), "OK");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // then the new master dies (its replica, the old master, takes over)
        let victim = cluster
            .nodes
            .iter_mut()
            .find(|n| n.port == replica_port)
            .unwrap();
        victim.stop();
        tokio::time::sleep(Duration::from_millis(4000)).await;
        // writes the dead master had not replicated may be lost: seed again, as a crawler would
        let seed: Vec<SeedItem> = urls2.iter().map(|u| u.as_str().into()).collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Err(e) = q2.seed(&seed, &SeedOptions::default()).await {
            assert!(Instant::now() < deadline, "seeding after the failover: {e}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert_ne!(cluster.owner(&key).port, replica_port);
    let acked: std::collections::HashSet<&String> = ledger.acked.iter().collect();
    assert!(urls.iter().all(|u| acked.contains(u)), "0 items lost");
    eprintln!(
        "errors seen by workers during the failovers: {:?}",
        ledger.errors
    );
    check_invariants(&url, &q).await;
}

/// A tree crawl: page n links to pages 2n+1 and 2n+2 below `pages`, on hosts spread over the
/// shards. A worker seeds a page's links before it acks the page.
async fn crawl_tree_while_watching(shards: u32) {
    const PAGES: usize = 300;
    let url = test_url();
    let name = unique("finished");
    let config = Config {
        shards: Some(shards),
        host_delay: Duration::ZERO,
        ..Config::default()
    };
    let page = |n: usize| format!("http://h{}.tree.example/{n}", n % 7);
    let q = Arc::new(Queue::connect(&url, &name, config.clone()).await.unwrap());
    assert!(
        q.is_finished().await.unwrap(),
        "a queue never seeded is finished"
    );
    q.seed(&items(&[&page(0)]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(
        !q.is_finished().await.unwrap(),
        "queued work is not finished"
    );
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut idle_rounds = 0;
                while idle_rounds < 20 {
                    let leases = q.lease(3, Duration::from_millis(20)).await.unwrap();
                    if leases.is_empty() {
                        idle_rounds += 1;
                        continue;
                    }
                    idle_rounds = 0;
                    for lease in leases {
                        let n: usize = lease
                            .url
                            .as_deref()
                            .unwrap()
                            .rsplit('/')
                            .next()
                            .unwrap()
                            .parse()
                            .unwrap();
                        let links: Vec<SeedItem> = [2 * n + 1, 2 * n + 2]
                            .into_iter()
                            .filter(|&c| c < PAGES)
                            .map(|c| page(c).into())
                            .collect();
                        q.seed(&links, &SeedOptions::default()).await.unwrap();
                        q.ack(&[lease.handle()]).await.unwrap();
                    }
                }
            })
        })
        .collect();
    // A watcher on its own connection: the first `true` it sees must be the end of the crawl.
    let watcher = Queue::connect(&url, &name, config).await.unwrap();
    let mut readings = 0;
    while !watcher.is_finished().await.unwrap() {
        readings += 1;
    }
    let stats = watcher.stats().await.unwrap();
    assert_eq!(
        (stats.done, stats.pending, stats.leased),
        (PAGES as u64, 0, 0),
        "finished only when every page is done ({readings} readings said not yet)"
    );
    assert!(readings > 0);
    for worker in workers {
        worker.await.unwrap();
    }
    let lease = {
        q.seed(&items(&["http://late.example/"]), &SeedOptions::default())
            .await
            .unwrap();
        assert!(
            !q.is_finished().await.unwrap(),
            "a new seed reopens the crawl"
        );
        q.lease(1, Duration::ZERO).await.unwrap().remove(0)
    };
    assert!(
        !q.is_finished().await.unwrap(),
        "a leased item is unfinished work"
    );
    q.nack(&[(
        lease.handle(),
        NackOptions {
            retry: false,
            ..Default::default()
        },
    )])
    .await
    .unwrap();
    assert!(q.is_finished().await.unwrap(), "dead letters are not work");
    q.requeue_dead(None).await.unwrap();
    assert!(
        !q.is_finished().await.unwrap(),
        "a requeued dead letter is work again"
    );
}

#[tokio::test]
async fn every_worker_can_tell_the_crawl_is_finished() {
    crawl_tree_while_watching(1).await;
    crawl_tree_while_watching(5).await;
}

#[test]
fn two_idle_readings_with_movement_between_are_not_finished() {
    let shard = |seeded_total| Stats {
        seeded_total,
        ..Stats::default()
    };
    let reading = |a, b| Stats::total(vec![shard(a), shard(b)]);
    assert!(reading(3, 4).idle_across(&reading(3, 4)));
    assert!(
        !reading(3, 4).idle_across(&reading(3, 5)),
        "something was seeded and finished between the readings of one shard"
    );
    let busy = Stats {
        leased: 1,
        ..reading(3, 4)
    };
    assert!(!reading(3, 4).idle_across(&busy));
    assert!(shard(1).idle_across(&shard(1)) && !shard(1).idle_across(&shard(2)));
}

/// ack_and_lease over shards: acks of one shard go with the lease in one call, acks of several
/// shards are answered by their own calls; the whole queue drains either way, each item once.
#[tokio::test]
async fn ack_and_lease_drains_a_sharded_queue() {
    let url = test_url();
    let q = Queue::connect(&url, &unique("ack-lease"), sharded(4))
        .await
        .unwrap();
    let urls: Vec<SeedItem> = (0..120)
        .map(|i| format!("http://h{}.al.example/{i}", i % 12).into())
        .collect();
    q.seed(&urls, &SeedOptions::default()).await.unwrap();
    let opts = |max| LeaseOptions {
        max,
        wait: Duration::ZERO,
        ttl: None,
    };
    let mut seen = std::collections::HashSet::new();
    let mut held = q.lease_with(&opts(1)).await.unwrap();
    // one item at a time: its ack and the next lease in one call
    for _ in 0..40 {
        let (acked, next) = q.ack_and_lease(&handles(&held), &opts(1)).await.unwrap();
        assert_eq!(acked, vec![true; held.len()]);
        for lease in &held {
            assert!(seen.insert(lease.url.clone().unwrap()), "leased twice");
        }
        held = next;
    }
    // then in tens: the acks span shards
    loop {
        let (acked, next) = q.ack_and_lease(&handles(&held), &opts(10)).await.unwrap();
        assert_eq!(acked, vec![true; held.len()]);
        for lease in &held {
            assert!(seen.insert(lease.url.clone().unwrap()), "leased twice");
        }
        if next.is_empty() {
            break;
        }
        held = next;
    }
    assert_eq!(seen.len(), 120);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.pending, stats.leased), (120, 0, 0));
}

/// Until `node` is a master that says `cluster_state:ok` (a replica taking over after its
/// master died).
fn wait_until_master(node: &RedisServer) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let role = node.cli(&["ROLE"]);
        let info = node.cli(&["CLUSTER", "INFO"]);
        if role.starts_with("master") && info.contains("cluster_state:ok") {
            return;
        }
        assert!(Instant::now() < deadline, "no failover: {role} / {info}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The master that holds a sharded queue's own base (its wake list) dies while a lease waits on
/// it: the waiting lease and every later one wait on the replica that took over and are woken
/// by work in any shard; no lease call fails because the node it waited on died (clients
/// connected before the failover, the URL's node among the dead ones when it was the home).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_leases_follow_a_failover_of_the_home_master() {
    let mut cluster = Cluster::start(3, 1);
    let url = cluster.url();
    let name = unique("home-failover");
    let config = Config {
        shards: Some(8),
        ..config()
    };
    let q = Arc::new(Queue::connect(&url, &name, config.clone()).await.unwrap());
    let other = Arc::new(Queue::connect(&url, &name, config).await.unwrap());
    // both clients have waited on the home node before it dies
    assert!(
        q.lease(1, Duration::from_millis(200))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        other
            .lease(1, Duration::from_millis(200))
            .await
            .unwrap()
            .is_empty()
    );
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.lease(1, Duration::from_secs(40)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let home = format!("crawlq:{{{name}}}:wake");
    let home_port = cluster.owner(&home).port;
    let replica_port = cluster.replica_of(cluster.owner(&home)).port;
    cluster
        .nodes
        .iter_mut()
        .find(|n| n.port == home_port)
        .unwrap()
        .stop();
    let replica = cluster
        .nodes
        .iter()
        .find(|n| n.port == replica_port)
        .unwrap();
    tokio::task::block_in_place(|| wait_until_master(replica));
    // idle leases on the old client: they wait, they do not fail
    for _ in 0..3 {
        assert!(
            other
                .lease(1, Duration::from_millis(300))
                .await
                .expect("an idle lease after the failover")
                .is_empty()
        );
    }
    // work in a shard wakes the lease that was waiting when the home master died
    let started = Instant::now();
    q.seed(&items(&["http://after.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let got = waiting.await.unwrap().expect("the waiting lease");
    assert_eq!(got.len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the seed, not by its timeout: {:?}",
        started.elapsed()
    );
    // and a lease that starts waiting now is woken by the next seed
    let waiting = {
        let other = other.clone();
        tokio::spawn(async move { other.lease(1, Duration::from_secs(20)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    q.seed(&items(&["http://after.example/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(waiting.await.unwrap().unwrap().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
    q.ack(&handles(&got)).await.unwrap();
}

/// Redis runs a call and the connection is cut before its reply is read: on a Redis Cluster
/// the call is reported as UNAVAILABLE (it may or may not have been applied), as on one
/// server, and never sent again: an ack sent twice would answer false although applied, a
/// lease sent twice would hand out twice the items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_reply_is_cut_is_not_sent_again_on_a_cluster() {
    let cluster = Cluster::start(3, 0);
    let url = cluster.url();
    let name = unique("cut-reply");
    let q = Arc::new(Queue::connect(&url, &name, config()).await.unwrap());
    q.seed(
        &items(&[
            "http://cut.example/1",
            "http://cut.example/2",
            "http://cut.example/3",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let node = cluster.owner(&format!("crawlq:{{{name}}}:meta"));

    // Redis sleeps; meanwhile the call arrives, then a CLIENT KILL of every other client:
    // once awake, Redis runs the call (its socket was readable first) and kills its connection
    // before the reply is written.
    async fn cut<T: Send + 'static>(
        node: &RedisServer,
        call: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let url = node.url();
        let mut sleeper = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let mut killer = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let sleep = tokio::spawn(async move {
            redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("0.6")
                .query_async::<()>(&mut sleeper)
                .await
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        let call = tokio::spawn(call);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let kill = tokio::spawn(async move {
            redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("normal")
                .arg("SKIPME")
                .arg("yes")
                .query_async::<i64>(&mut killer)
                .await
        });
        let answered = call.await.unwrap();
        let _ = sleep.await;
        let _ = kill.await;
        answered
    }
    use crawlq::redis_exec::redis;

    let leased = {
        let q = q.clone();
        cut(node, async move { q.lease(2, Duration::ZERO).await }).await
    };
    assert_eq!(
        leased.as_ref().map_err(Error::code).err(),
        Some("UNAVAILABLE"),
        "{leased:?}"
    );
    let stats = q.stats().await.unwrap();
    assert_eq!(stats.leased, 2, "the lease ran once: {stats:?}");
    assert_eq!(stats.leased_total, 2);

    let lease = q.lease(1, Duration::ZERO).await.unwrap();
    let acked = {
        let (q, handle) = (q.clone(), lease[0].handle());
        cut(node, async move { q.ack(&[handle]).await }).await
    };
    assert_eq!(acked.map_err(|e| e.code()).err(), Some("UNAVAILABLE"));
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.acked_total), (1, 1), "applied once");
    // the ack was applied: sent again now, it answers false
    assert_eq!(q.ack(&handles(&lease)).await.unwrap(), [false]);
}

/// A seed of a sharded queue whose one shard refuses its part (a foreign value at one of its
/// keys): the other shards' items are queued, and the error names the shard and says how many
/// items were seeded, which the queue confirms.
#[tokio::test]
async fn a_seed_that_fails_in_one_shard_says_which_and_what_the_others_applied() {
    let server = RedisServer::start();
    let url = server.url();
    let q = Queue::connect(&url, "partly", sharded(4)).await.unwrap();
    let urls: Vec<SeedItem> = (0..2000)
        .map(|i| format!("http://h{}.partly.example/{i}", i % 40).into())
        .collect();
    let layout = q.layout().await.unwrap();
    let broken = 2;
    let heads = format!("{}:heads", layout.shard(broken).keys().base());
    server.cli(&["SET", &heads, "foreign"]);
    let error = q.seed(&urls, &SeedOptions::default()).await.unwrap_err();
    assert_eq!(error.code(), "CORRUPT");
    let message = error.to_string();
    assert!(message.contains("in shard 2 of 4"), "{message}");
    server.cli(&["DEL", &heads]);
    let stats = q.stats().await.unwrap();
    let in_broken = |n: usize| {
        (0..n)
            .filter(|i| layout.of_host(&format!("h{}.partly.example", i % 40)) == broken)
            .count() as u64
    };
    // the first chunk (seed_batch items) was sent; the batch stopped at its error
    let chunk = Config::default().seed_batch;
    assert_eq!(
        stats.seeded_total,
        chunk as u64 - in_broken(chunk),
        "the other shards' items of the first chunk"
    );
    assert!(
        message.contains(&format!("{} of 2000 items were seeded", stats.seeded_total)),
        "{message}"
    );
    // seeding again is safe: the rest comes in, the others are duplicates
    let again = q.seed(&urls, &SeedOptions::default()).await.unwrap();
    assert_eq!(
        (again.added, again.duplicates),
        (2000 - stats.seeded_total, stats.seeded_total)
    );
    check_invariants(&url, &q).await;
}

/// A restart (or a failover) that lost the home's writes lost the shard count kept there: a
/// client that adds items writes its count back once a seed reply's seen epoch says the server
/// changed, so a client opened afterwards (asking no count) finds the shards and their items.
/// If another client made the queue again with another count meanwhile, the addition fails
/// with CONFIG rather than go on into shards nobody else looks at.
#[tokio::test]
async fn a_home_that_lost_its_shard_count_gets_it_back_from_a_client_that_adds() {
    let mut server = RedisServer::start();
    // the snapshot each restart goes back to: the server before the queue existed
    server.cli(&["SAVE"]);
    let url = server.url();
    let asking = |shards| Config {
        shards,
        ..Config::default()
    };
    let urls = |from: usize, n: usize| -> Vec<SeedItem> {
        (from..from + n)
            .map(|i| format!("http://h{i}.lost-home.example/").into())
            .collect()
    };
    let worker = Queue::connect(&url, "lost-home", asking(Some(3)))
        .await
        .unwrap();
    let report = worker
        .seed(&urls(0, 6), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(report.added, 6);

    server.restart();
    // this call's items go to their shards; its replies' epochs show the server changed
    let report = seed_after_restart(&worker, urls(10, 6)).await;
    assert_eq!(report.added, 6);
    // the next addition writes the count back first
    let report = worker
        .seed(&urls(20, 1), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(report.added, 1);
    let later = Queue::connect(&url, "lost-home", asking(None))
        .await
        .unwrap();
    assert_eq!(later.shard_count().await.unwrap(), 3);
    assert_eq!(
        later.stats().await.unwrap().pending,
        7,
        "both additions found"
    );

    server.restart();
    // a client asking no count makes the queue again first: a queue of one shard
    let intruder = Queue::connect(&url, "lost-home", asking(None))
        .await
        .unwrap();
    assert_eq!(seed_after_restart(&intruder, urls(30, 1)).await.added, 1);
    assert_eq!(intruder.shard_count().await.unwrap(), 1);
    let report = seed_after_restart(&worker, urls(40, 2)).await;
    assert_eq!(report.added, 2);
    let refused = worker
        .seed(&urls(50, 1), &SeedOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Config(m) if m.contains("has 1 shards now")),
        "{refused}"
    );
    // and it stays refused: this client's layout is not the queue's any more
    assert!(matches!(
        worker.stats().await.unwrap_err(),
        Error::Config(_)
    ));
}

/// A seed sent until the restarted server answers it.
async fn seed_after_restart(q: &Queue<RedisExecutor>, items: Vec<SeedItem>) -> SeedReport {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match q.seed(&items, &SeedOptions::default()).await {
            Ok(report) => return report,
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
