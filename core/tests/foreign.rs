//! A foreign value (a string another program wrote) at any key a queue's scripts read or write:
//! every operation, in a state where it has work to do, either goes on (it does not need that
//! key) or answers CORRUPT with the data unchanged. No call writes part of its work and then
//! fails. Run against every fixed key, every key built from the base, and the per-host and
//! per-bucket keys of the items involved.
mod common;

use common::*;
use crawlq::redis_exec::redis;
use crawlq::*;
use std::time::Duration;

const HOSTS: [&str; 6] = [
    "w1.example",
    "w2.example",
    "w3.example",
    "w4.example",
    "w5.example",
    "w6.example",
];

/// Every URL the state and the operations use.
fn urls() -> Vec<String> {
    let mut urls = Vec::new();
    for host in HOSTS {
        for page in 1..=3 {
            urls.push(format!("http://{host}/{page}"));
        }
    }
    urls
}

/// What a state leaves for the operations: leases held, a dead letter's id.
struct State {
    held: Vec<Lease>,
    dead_id: String,
}

/// The queue the operations run on: politeness per host, budgets on, in-flight limits and
/// pacing after the answer, items ready (two priorities on one host), delayed, leased (some
/// counted in flight), dead, a scheduled revisit and a paused host.
async fn build_state(q: &Queue<RedisExecutor>) -> State {
    q.set_host_delay("w1.example", Some(Duration::from_millis(10)))
        .await
        .unwrap();
    q.set_host_budget("w2.example", Some(100)).await.unwrap();
    // leases counted in flight: a host with a limit, a host paced after the answer
    q.set_host_in_flight("w1.example", Some(2)).await.unwrap();
    let after_answer = HostPacing {
        after: DelayAfter::Answer,
        factor: None,
    };
    q.set_host_delay_after("w3.example", Some(after_answer))
        .await
        .unwrap();
    let seed = vec![
        SeedItem::from("http://w1.example/1").with_priority(3),
        SeedItem::from("http://w1.example/2"),
        SeedItem::from("http://w2.example/1"),
        SeedItem::from("http://w3.example/1"),
        SeedItem::from("http://w4.example/1"),
        SeedItem::from("http://w4.example/2").with_delay(Duration::from_secs(60)),
        SeedItem::from("http://w5.example/1"),
        SeedItem::from("http://w5.example/2"),
    ];
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    let mut held = q.lease(5, Duration::ZERO).await.unwrap();
    assert_eq!(held.len(), 5, "one per host");
    // one to dead letters, one acked with a revisit
    let dead = held.pop().unwrap();
    let dead_id = dead.id.clone();
    let nack = NackOptions {
        retry: false,
        reason: Some("gone".into()),
        ..Default::default()
    };
    q.nack(&[(dead.handle(), nack)]).await.unwrap();
    let revisited = held.pop().unwrap();
    q.ack_revisit(&[revisited.handle()], Duration::from_secs(3600))
        .await
        .unwrap();
    q.pause_host("w4.example", Some(Duration::from_secs(30)))
        .await
        .unwrap();
    // a named crawl's item: the queue holds crawl lanes (protocol 7), which every operation
    // reads as it goes
    let crawl = SeedOptions {
        crawl: Some("c1".into()),
        ..Default::default()
    };
    q.seed(&items(&["http://w2.example/c1"]), &crawl)
        .await
        .unwrap();
    State { held, dead_id }
}

const OPERATIONS: &[&str] = &[
    "seed a new host",
    "seed a known host",
    "seed delayed",
    "seed forced",
    "seed into a crawl",
    "lease",
    "lease after expiry and delays",
    "ack",
    "ack with a revisit",
    "ack and lease",
    "ack with links",
    "ack with links and lease",
    "ack with links and lease, a host paced after the answer",
    "nack with backoff",
    "nack to dead letters",
    "nack rate-limited",
    "nack with payload and delay",
    "extend",
    "release with payload",
    "reclaim",
    "stats",
    "crawl stats",
    "dead letters",
    "peek",
    "list hosts",
    "host info",
    "set host delay",
    "pause host",
    "resume host",
    "set host budget",
    "set default budget",
    "requeue all dead",
    "requeue dead ids",
    "purge dead",
    "delete host",
    "pause queue",
    "resume queue",
];

/// What an operation needs done before the foreign value is written (a paused queue to resume).
async fn prepare(q: &Queue<RedisExecutor>, op: &str) {
    if op == "resume queue" {
        q.pause().await.unwrap();
    }
}

async fn run(q: &Queue<RedisExecutor>, op: &str, state: &State) -> Result<()> {
    let lease = state.held[0].handle();
    let later = T0 + 10 * 60_000;
    let none = SeedOptions::default();
    match op {
        "seed a new host" => q
            .seed(&items(&["http://w6.example/1"]), &none)
            .await
            .map(drop),
        "seed a known host" => q
            .seed(&items(&["http://w2.example/2"]), &none)
            .await
            .map(drop),
        "seed delayed" => {
            let item = SeedItem::from("http://w6.example/2").with_delay(Duration::from_secs(5));
            q.seed(&[item], &none).await.map(drop)
        }
        "seed into a crawl" => {
            let crawl = SeedOptions {
                crawl: Some("c1".into()),
                ..Default::default()
            };
            q.seed(&items(&["http://w6.example/c1"]), &crawl)
                .await
                .map(drop)
        }
        "seed forced" => {
            let item = SeedItem::from(state.held_dead_url()).with_force(true);
            q.seed(&[item], &none).await.map(drop)
        }
        "lease" => q.lease(5, Duration::ZERO).await.map(drop),
        "lease after expiry and delays" => {
            q.set_fixed_clock(Some(later));
            let r = q.lease(10, Duration::ZERO).await.map(drop);
            q.set_fixed_clock(Some(T0));
            r
        }
        "ack" => q.ack(&[lease]).await.map(drop),
        "ack with a revisit" => q
            .ack_revisit(&[lease], Duration::from_secs(60))
            .await
            .map(drop),
        "ack and lease" => {
            let opts = LeaseOptions {
                max: 3,
                wait: Duration::ZERO,
                ttl: None,
            };
            q.ack_and_lease(&[lease], &opts).await.map(drop)
        }
        "ack with links" => {
            let links = items(&["http://w6.example/3", "http://w2.example/4"]);
            q.ack_with_links(&lease, &links, &none).await.map(drop)
        }
        "ack with links and lease" => {
            let links = items(&["http://w6.example/3", "http://w2.example/4"]);
            let opts = LeaseOptions {
                max: 3,
                wait: Duration::ZERO,
                ttl: None,
            };
            q.ack_with_links_and_lease(&lease, &links, &none, &opts)
                .await
                .map(drop)
        }
        "ack with links and lease, a host paced after the answer" => {
            let paced = state
                .held
                .iter()
                .find(|l| l.host == "w3.example")
                .expect("w3.example's lease is held")
                .handle();
            let links = items(&["http://w3.example/3"]);
            let opts = LeaseOptions {
                max: 3,
                wait: Duration::ZERO,
                ttl: None,
            };
            q.ack_with_links_and_lease(&paced, &links, &none, &opts)
                .await
                .map(drop)
        }
        "nack with backoff" => q.nack(&[(lease, NackOptions::default())]).await.map(drop),
        "nack to dead letters" => {
            let opts = NackOptions {
                retry: false,
                ..Default::default()
            };
            q.nack(&[(lease, opts)]).await.map(drop)
        }
        "nack rate-limited" => {
            let opts = NackOptions {
                rate_limited: true,
                ..Default::default()
            };
            q.nack(&[(lease, opts)]).await.map(drop)
        }
        "nack with payload and delay" => {
            let opts = NackOptions {
                delay: Some(Duration::ZERO),
                payload: Some(serde_json::json!({"tries": 2})),
                reason: Some("later".into()),
                ..Default::default()
            };
            q.nack(&[(lease, opts)]).await.map(drop)
        }
        "extend" => q.extend(&[lease], Duration::from_secs(60)).await.map(drop),
        "release with payload" => {
            let opts = ReleaseOptions {
                payload: Some(serde_json::json!([1, 2])),
            };
            q.release_with(&[(lease, opts)]).await.map(drop)
        }
        "reclaim" => {
            q.set_fixed_clock(Some(later));
            let r = q.reclaim(100).await.map(drop);
            q.set_fixed_clock(Some(T0));
            r
        }
        "stats" => q.stats().await.map(drop),
        "crawl stats" => q.crawl_stats("c1").await.map(drop),
        "dead letters" => q.dead(10, 0).await.map(drop),
        "peek" => q.peek(10).await.map(drop),
        "list hosts" => q.list_hosts(None, 10).await.map(drop),
        "host info" => q.host_info("w1.example").await.map(drop),
        "set host delay" => q
            .set_host_delay("w2.example", Some(Duration::from_millis(5)))
            .await
            .map(drop),
        "pause host" => q.pause_host("w2.example", None).await.map(drop),
        "resume host" => q.resume_host("w4.example").await.map(drop),
        "set host budget" => q.set_host_budget("w3.example", Some(7)).await.map(drop),
        "set default budget" => q.set_default_host_budget(Some(50)).await,
        "requeue all dead" => q.requeue_dead(None).await.map(drop),
        "requeue dead ids" => q
            .requeue_dead_ids(std::slice::from_ref(&state.dead_id))
            .await
            .map(drop),
        "purge dead" => q.purge_dead().await.map(drop),
        "delete host" => q.delete_host("w1.example", true).await.map(drop),
        "pause queue" => q.pause().await.map(drop),
        "resume queue" => q.resume().await.map(drop),
        other => panic!("no operation {other}"),
    }
}

impl State {
    /// The URL of the dead letter (a forced seed queues it again).
    fn held_dead_url(&self) -> String {
        "http://w5.example/1".to_string()
    }
}

/// The keys a foreign value is tried at: by name, what to SET.
fn targets(base: &str) -> Vec<(String, Vec<String>)> {
    let mut targets: Vec<(String, Vec<String>)> = crawlq::keys::FIXED_KEYS
        .iter()
        .map(|k| (k.to_string(), vec![format!("{base}:{k}")]))
        .collect();
    for k in [
        "hostpause",
        "hostbudget",
        "hostused",
        "revisits",
        "hostitems",
        "hostdelayed",
        "hostdead",
        "hostdeleting",
        "hostlimit",
        "hostflight",
        "hostfull",
        "hostpacing",
        "hostanswer",
    ] {
        targets.push((k.to_string(), vec![format!("{base}:{k}")]));
    }
    let per_host = |kind: &str| -> Vec<String> {
        HOSTS
            .iter()
            .flat_map(|h| match kind {
                "lane" => vec![format!("{base}:l:0:{h}"), format!("{base}:l:3:{h}")],
                _ => vec![format!("{base}:hp:{h}")],
            })
            .collect()
    };
    // the named crawl's keys (PROTOCOL.md section 1, "Named crawls")
    for k in [
        "c:c1",
        "crawls",
        "crawlcfg",
        "cq:c1",
        "ci:c1",
        "cz:c1",
        "crawlweight",
        "crawlseed",
        "crawlheld",
        "lz:0:c1:w2.example",
        "hl:w2.example",
        "hv:w2.example",
    ] {
        targets.push((k.to_string(), vec![format!("{base}:{k}")]));
    }
    targets.push(("lanes".into(), per_host("lane")));
    targets.push(("priority sets".into(), per_host("hp")));
    let mut seen = Vec::new();
    let mut live = Vec::new();
    for url in urls() {
        let fp = crawlq::normalize::Fingerprint::of(&url);
        seen.push(format!("{base}:s:0:{}", fp.bucket_hash() % 1024));
        let member = crawlq::normalize::LiveMember::of(&url);
        live.push(format!("{base}:v:0:{}", member.bucket_hash % 1024));
    }
    targets.push(("seen buckets".into(), seen));
    targets.push(("live buckets".into(), live));
    targets
}

async fn dump_all(conn: &mut redis::aio::MultiplexedConnection) -> Vec<(String, Vec<u8>)> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(conn).await.unwrap();
    let mut out = Vec::new();
    for key in keys {
        let dumped: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        out.push((key, dumped));
    }
    out
}

async fn restore_all(conn: &mut redis::aio::MultiplexedConnection, snapshot: &[(String, Vec<u8>)]) {
    redis::cmd("FLUSHDB").query_async::<()>(conn).await.unwrap();
    for (key, dumped) in snapshot {
        redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(dumped)
            .query_async::<()>(conn)
            .await
            .unwrap();
    }
}

async fn digest(conn: &mut redis::aio::MultiplexedConnection) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query_async(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_foreign_value_at_any_key_fails_a_call_whole_or_not_at_all() {
    let server = RedisServer::start();
    let url = server.url();
    // one shard: the keys tried are those of the queue's one base
    let config = Config {
        shards: None,
        ..fixed_clock_config()
    };
    let q = Queue::connect(&url, "foreign", config).await.unwrap();
    let state = build_state(&q).await;
    let mut conn = conn_to(&url).await;
    let snapshot = dump_all(&mut conn).await;
    let base = q.ops().keys().base().to_string();
    let mut failures = Vec::new();
    let (mut refused, mut cases) = (0, 0);
    let mut refused_cases = Vec::new();
    for (name, keys) in targets(&base) {
        for op in OPERATIONS {
            restore_all(&mut conn, &snapshot).await;
            prepare(&q, op).await;
            for key in &keys {
                redis::cmd("SET")
                    .arg(key)
                    .arg("foreign")
                    .query_async::<()>(&mut conn)
                    .await
                    .unwrap();
            }
            let before = digest(&mut conn).await;
            cases += 1;
            match run(&q, op, &state).await {
                Ok(()) => {}
                Err(e) if e.code() == "CORRUPT" => {
                    refused += 1;
                    refused_cases.push((op.to_string(), name.clone()));
                    if digest(&mut conn).await != before {
                        failures.push(format!(
                            "{op} with foreign {name}: CORRUPT after writing ({e})"
                        ));
                    }
                }
                Err(e) => failures.push(format!("{op} with foreign {name}: {} {e}", e.code())),
            }
        }
    }
    restore_all(&mut conn, &snapshot).await;
    check_invariants(&url, &q).await;
    assert!(
        refused_cases.contains(&("crawl stats".to_string(), "c:c1".to_string()))
            && refused_cases.contains(&("seed into a crawl".to_string(), "c:c1".to_string())),
        "a crawl's counts holding a foreign value are reported by crawl_stats and refuse a seed"
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} calls failed ({refused} refused):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        refused > 100,
        "most keys are needed by some operation: {refused}"
    );
}

/// A seed whose later lanes (or a later host's priority set) hold a foreign value takes back
/// everything it wrote for the earlier ones: seen and live members, delayed records, lane
/// pushes to new and to existing lanes, priority-set entries, the format marker of a new queue.
#[tokio::test]
async fn a_seed_refused_part_way_takes_back_what_it_wrote() {
    let server = RedisServer::start();
    let url = server.url();
    let config = Config {
        shards: None,
        ..fixed_clock_config()
    };
    let mut conn = conn_to(&url).await;
    for (name, foreign) in [("lane", "l:0:z.example"), ("hp", "hp:z.example")] {
        for fresh_queue in [true, false] {
            let queue = format!("partway-{name}-{fresh_queue}");
            let q = Queue::connect(&url, &queue, config.clone()).await.unwrap();
            if !fresh_queue {
                q.seed(&items(&["http://a.example/0"]), &SeedOptions::default())
                    .await
                    .unwrap();
            }
            let base = q.ops().keys().base().to_string();
            redis::cmd("SET")
                .arg(format!("{base}:{foreign}"))
                .arg("foreign")
                .query_async::<()>(&mut conn)
                .await
                .unwrap();
            let before = digest(&mut conn).await;
            let batch = vec![
                SeedItem::from("http://a.example/1"),
                SeedItem::from("http://a.example/2").with_priority(4),
                SeedItem::from("http://b.example/1").with_delay(Duration::from_secs(9)),
                SeedItem::from("http://c.example/1").with_priority(2),
                SeedItem::from("http://z.example/1").with_priority(if name == "hp" {
                    3
                } else {
                    0
                }),
            ];
            let error = q.seed(&batch, &SeedOptions::default()).await.unwrap_err();
            assert_eq!(error.code(), "CORRUPT", "{name}: {error}");
            assert_eq!(
                digest(&mut conn).await,
                before,
                "{name} (new queue {fresh_queue}): nothing changed"
            );
            redis::cmd("DEL")
                .arg(format!("{base}:{foreign}"))
                .query_async::<()>(&mut conn)
                .await
                .unwrap();
            assert_eq!(
                q.seed(&batch, &SeedOptions::default()).await.unwrap().added,
                5
            );
            check_invariants(&url, &q).await;
        }
    }
}

/// What a combined call reads once for its parts (ACK.reads, FLIGHT.settings in the scripts)
/// is read again by the next call: a foreign value written between two page answers on the
/// same server fails the second one before it changes anything.
#[tokio::test]
async fn a_key_read_by_one_page_answer_is_checked_again_by_the_next() {
    let server = RedisServer::start();
    let url = server.url();
    let config = Config {
        shards: None,
        ..fixed_clock_config()
    };
    let q = Queue::connect(&url, "checked-again", config).await.unwrap();
    q.seed(
        &items(&["http://a.example/0", "http://b.example/0"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let mut conn = conn_to(&url).await;
    let base = q.ops().keys().base().to_string();
    let next = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let mut leases = q.lease_with(&next).await.unwrap();
    for (round, key) in ["hostitems", "leased", "leases", "adaptive", "hostlimit"]
        .iter()
        .enumerate()
    {
        // a call that finds every key right (and reads them)
        let links = items(&[&format!("http://a.example/{round}-ok")]);
        let (acked, report, more) = q
            .ack_with_links_and_lease(&leases[0].handle(), &links, &SeedOptions::default(), &next)
            .await
            .unwrap();
        assert!(acked && report.added == 1, "{key}: {report:?}");
        leases = more;
        let lease = leases.first().expect("a page leased").handle();
        let snapshot = dump_all(&mut conn).await;
        redis::cmd("SET")
            .arg(format!("{base}:{key}"))
            .arg("foreign")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        let before = digest(&mut conn).await;
        let links = items(&[&format!("http://b.example/{round}-refused")]);
        let err = q
            .ack_with_links_and_lease(&lease, &links, &SeedOptions::default(), &next)
            .await
            .expect_err(key);
        assert_eq!(err.code(), "CORRUPT", "{key}: {err}");
        assert_eq!(
            digest(&mut conn).await,
            before,
            "{key}: written before the refusal"
        );
        // the key as it was, and the lease answered again
        restore_all(&mut conn, &snapshot).await;
    }
    check_invariants(&url, &q).await;
}
