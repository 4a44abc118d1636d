//! No duplicated, misdirected or sunk work: poison records, forced seeds, fencing after Redis
//! lost writes, foreign values at queue keys, dropped and killed connections, a loading server,
//! replicas, out-of-range numbers, and the least-privilege ACL of docs/PROTOCOL.md.
mod common;

use common::*;
use crawlq::*;
use std::time::{Duration, Instant};

async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn digest(url: &str) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query_async(&mut raw(url).await)
        .await
        .unwrap()
}

fn nested(depth: usize) -> serde_json::Value {
    let mut v = serde_json::json!("leaf");
    for _ in 0..depth {
        v = serde_json::json!([v]);
    }
    v
}

/// A record another program wrote into a lane: its head is what the scripts read, its payload
/// is nested deeper than any reader accepts.
#[tokio::test]
async fn a_poison_record_goes_to_dead_letters_and_never_sinks_its_batch() {
    let q = open("poison", fixed_clock_config()).await;
    q.seed(
        &items(&[
            "http://p.example/1",
            "http://p.example/2",
            "http://p.example/3",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lane = q.ops().keys().lane("p.example", 0);
    let poison = format!(
        r#"{{"v":1,"id":"2","ts":{T0},"url":"http://p.example/2","payload":{}}}"#,
        nested(200)
    );
    assert!(crawlq::wire::decode_record(poison.as_bytes()).is_err());
    redis::cmd("LSET")
        .arg(&lane)
        .arg(1)
        .arg(&poison)
        .query_async::<()>(&mut raw(&shared().url()).await)
        .await
        .unwrap();

    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    let urls: Vec<_> = leases.iter().map(|l| l.url.clone().unwrap()).collect();
    assert_eq!(
        urls,
        ["http://p.example/1", "http://p.example/3"],
        "batch-mates leased"
    );
    let page = q.dead(10, 0).await.unwrap();
    assert_eq!(page.total, 1);
    let dead = &page.items[0];
    assert_eq!(dead.id, "2");
    assert_eq!(dead.url.as_deref(), Some("http://p.example/2"));
    assert!(
        dead.last_error
            .as_deref()
            .unwrap()
            .starts_with("undecodable: "),
        "{dead:?}"
    );
    assert!(dead.raw.as_deref().unwrap().contains(r#""payload":[[[["#));
    assert!(q.ack(&handles(&leases)).await.unwrap().iter().all(|ok| *ok));
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.done, stats.dead, stats.pending), (2, 1, 0));

    // a batch of nothing but poison: the lease call still answers (with what else is there)
    q.seed(&items(&["http://p.example/4"]), &SeedOptions::default())
        .await
        .unwrap();
    redis::cmd("LSET")
        .arg(&lane)
        .arg(0)
        .arg(
            poison
                .replace(r#""id":"2""#, r#""id":"4""#)
                .replace("/2", "/4"),
        )
        .query_async::<()>(&mut raw(&shared().url()).await)
        .await
        .unwrap();
    q.seed(&items(&["http://q.example/5"]), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(leases[0].url.as_deref(), Some("http://q.example/5"));
    assert_eq!(q.dead(10, 0).await.unwrap().total, 2);
    q.ack(&handles(&leases)).await.unwrap();
    check_invariants(&test_url(), &q).await;

    // a record cut short (no script can read it): its dead letter keeps it raw, and says why
    q.seed(&items(&["http://p.example/6"]), &SeedOptions::default())
        .await
        .unwrap();
    let truncated = r#"{"v":1,"id":"6","ts":17000"#;
    redis::cmd("LSET")
        .arg(&lane)
        .arg(0)
        .arg(truncated)
        .query_async::<()>(&mut raw(&shared().url()).await)
        .await
        .unwrap();
    assert!(q.lease(5, Duration::ZERO).await.unwrap().is_empty());
    let letters = q.dead_letters(&["6".to_string()]).await.unwrap();
    let letter = letters[0].as_ref().expect("a dead letter");
    assert_eq!(letter.raw.as_deref(), Some(truncated));
    assert!(
        letter
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("undecodable: ")),
        "{letter:?}"
    );
}

#[tokio::test]
async fn every_writer_refuses_what_no_reader_could_decode() {
    let q = open("depth", config()).await;
    let ok = SeedItem::from("http://d.example/ok").with_payload(nested(wire::MAX_PAYLOAD_DEPTH));
    let deep =
        SeedItem::from("http://d.example/deep").with_payload(nested(wire::MAX_PAYLOAD_DEPTH + 1));
    let far = SeedItem::from("http://d.example/far").with_delay(Duration::from_secs(u64::MAX / 4));
    let report = q
        .seed(
            &[ok, deep, far, "http://d.example/3".into()],
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.added, 2);
    assert_eq!(
        invalid_codes(&report),
        [(1, "invalid_payload"), (2, "invalid_delay")]
    );
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 2, "the deepest storable payload decodes");

    let forever = Duration::from_secs(200 * 365 * 24 * 3600);
    let lease = &leases[0];
    for err in [
        q.lease_with(&LeaseOptions {
            ttl: Some(forever),
            ..Default::default()
        })
        .await
        .unwrap_err(),
        q.extend(&[lease.handle()], forever).await.unwrap_err(),
        q.set_host_delay("d.example", Some(forever))
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    }
    for bad in [f64::NAN, f64::INFINITY, -1.0, 1e20] {
        assert!(
            config::duration_from_number(bad, Style::Snake).is_none(),
            "{bad}"
        );
        let options = serde_json::json!({ "lease_ttl": config::number_value(bad) });
        let err = Config::from_options(options.as_object().unwrap(), Style::Snake).unwrap_err();
        assert_eq!(err.code(), "CONFIG", "{err}");
    }
}

/// `force` queues an item again only when it is neither queued nor leased now.
#[tokio::test]
async fn force_requeues_finished_items_only() {
    let q = open("force", fixed_clock_config()).await;
    let url = "http://f.example/page";
    let forced = SeedOptions {
        force: true,
        ..Default::default()
    };
    let seed = |opts: SeedOptions| {
        let q = &q;
        async move { q.seed(&items(&[url]), &opts).await.unwrap() }
    };
    assert_eq!(seed(SeedOptions::default()).await.added, 1);
    assert_eq!(
        seed(forced.clone()).await.duplicates,
        1,
        "queued: not twice"
    );
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(
        seed(forced.clone()).await.duplicates,
        1,
        "leased: not twice"
    );
    assert!(q.ack(&handles(&leases)).await.unwrap()[0]);
    assert_eq!(
        seed(SeedOptions::default()).await.duplicates,
        1,
        "done: seen"
    );
    assert_eq!(seed(forced.clone()).await.added, 1, "done, forced: again");
    // twice in one batch: once
    let report = q.seed(&items(&[url, url]), &forced).await.unwrap();
    assert_eq!((report.added, report.duplicates), (0, 2));
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    let nack = NackOptions {
        retry: false,
        ..Default::default()
    };
    q.nack(&[(leases[0].handle(), nack)]).await.unwrap();
    assert_eq!(seed(forced.clone()).await.added, 1, "dead, forced: again");
    // the dead letter is not queued a second time while its item is queued
    assert_eq!(q.requeue_dead(None).await.unwrap(), 0);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.ready, stats.dead, stats.done), (1, 1, 1));
}

/// Redis loses the last writes (a restart from an older snapshot, like an AOF `everysec` crash
/// or a replica promoted before it got them). A worker still holding a lease from before must
/// not be able to answer for any lease made after.
#[tokio::test]
async fn tokens_never_repeat_after_redis_lost_writes() {
    let mut server = RedisServer::start();
    let url = server.url();
    let q = Queue::connect(&url, "lost", config()).await.unwrap();
    q.seed(
        &items(&["http://l.example/a", "http://l.example/b"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    server.cli(&["SAVE"]);
    let before = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(before[0].url.as_deref(), Some("http://l.example/a"));
    server.restart(); // the lease of /a is lost with the restart
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        match q.lease(2, Duration::ZERO).await {
            Ok(leases) => break leases,
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(after.len(), 2, "/a is queued again, with /b");
    for lease in &after {
        assert!(
            lease.token > before[0].token,
            "{} after {}",
            lease.token,
            before[0].token
        );
    }
    // the stale worker answers nothing; the live leases are untouched
    assert_eq!(q.ack(&handles(&before)).await.unwrap(), [false]);
    let stale = NackOptions::default();
    assert_eq!(
        q.nack(&[(before[0].handle(), stale)]).await.unwrap(),
        [NackOutcome::Lost]
    );
    // a token of one item never answers for another, even when the tokens match
    let mut crossed = after[1].handle();
    crossed.id = after[0].id.clone();
    crossed.url = after[0].url.clone();
    assert_eq!(q.ack(&[crossed.clone()]).await.unwrap(), [false]);
    assert_eq!(
        q.extend(&[crossed.clone()], Duration::from_secs(5))
            .await
            .unwrap(),
        [None]
    );
    assert_eq!(q.release(&[crossed]).await.unwrap(), [false]);
    assert_eq!(q.ack(&handles(&after)).await.unwrap(), [true, true]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.leased, stats.pending), (2, 0, 0));
}

/// A foreign value at any of a queue's fixed keys: every operation that would write near it
/// answers CORRUPT and changes nothing; the rest go on; with the key restored, the queue is
/// whole.
#[tokio::test]
async fn a_foreign_value_at_a_queue_key_is_reported_before_anything_changes() {
    let server = RedisServer::start();
    let url = server.url();
    for name in crawlq::keys::FIXED_KEYS {
        let q = Queue::connect(&url, &format!("wrong-{name}"), fixed_clock_config())
            .await
            .unwrap();
        q.set_host_delay("w1.example", Some(Duration::from_millis(10)))
            .await
            .unwrap();
        q.seed(
            &items(&[
                "http://w1.example/1",
                "http://w2.example/1",
                "http://w3.example/1",
                "http://w4.example/1",
            ]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
        let leases = q.lease(3, Duration::ZERO).await.unwrap();
        let nack = NackOptions {
            retry: false,
            ..Default::default()
        };
        q.nack(&[(leases[2].handle(), nack)]).await.unwrap();
        let key = format!("{}:{name}", q.ops().keys().base());
        let mut conn = raw(&url).await;
        let saved: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        redis::cmd("SET")
            .arg(&key)
            .arg("foreign")
            .query_async::<()>(&mut conn)
            .await
            .unwrap();

        let mut corrupt = 0;
        let h = [leases[0].handle()];
        macro_rules! attempt {
            ($what:expr, $call:expr) => {{
                let before = digest(&url).await;
                match $call.await {
                    Ok(_) => {}
                    Err(e) => {
                        assert_eq!(e.code(), "CORRUPT", "{} with {name} foreign: {e}", $what);
                        assert!(
                            e.to_string().contains(&key)
                                || e.to_string().contains("WRONGTYPE")
                                || e.to_string().contains("wrong type"),
                            "{e}"
                        );
                        assert_eq!(digest(&url).await, before, "{} changed data", $what);
                        corrupt += 1;
                    }
                }
            }};
        }
        attempt!(
            "seed",
            q.seed(&items(&["http://w5.example/1"]), &SeedOptions::default())
        );
        attempt!("lease", q.lease(1, Duration::ZERO));
        attempt!("extend", q.extend(&h, Duration::from_secs(9)));
        attempt!("release", q.release(&h));
        attempt!("nack", q.nack(&[(h[0].clone(), NackOptions::default())]));
        attempt!("ack", q.ack(&h));
        let one = LeaseOptions {
            max: 1,
            wait: Duration::ZERO,
            ttl: None,
        };
        attempt!("ack_and_lease", q.ack_and_lease(&h, &one));
        attempt!("reclaim", q.reclaim(10));
        attempt!("stats", q.stats());
        attempt!("dead", q.dead(10, 0));
        attempt!("peek", q.peek(10));
        attempt!("host_info", q.host_info("w1.example"));
        attempt!(
            "set_host_delay",
            q.set_host_delay("w2.example", Some(Duration::from_millis(5)))
        );
        attempt!("requeue_dead", q.requeue_dead(None));
        attempt!("purge_dead", q.purge_dead());
        assert!(corrupt > 0, "some operation reads or writes {name}");

        redis::cmd("DEL")
            .arg(&key)
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
        if let Some(value) = saved {
            redis::cmd("RESTORE")
                .arg(&key)
                .arg(0)
                .arg(value)
                .query_async::<()>(&mut conn)
                .await
                .unwrap();
        }
        check_invariants(&url, &q).await;
    }
}

/// The server closes idle connections (CLIENT KILL, a proxy's idle timeout, a restart): the
/// next calls, blocking waits included, go out on fresh connections instead of failing.
#[tokio::test]
async fn killed_connections_are_replaced_before_the_next_call() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "killed", config())
        .await
        .unwrap();
    q.seed(&items(&["http://k.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    // a blocking wait leaves its connection in the pool
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert!(
        q.lease(1, Duration::from_millis(150))
            .await
            .unwrap()
            .is_empty()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = server.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert!(
        killed.parse::<u32>().unwrap() >= 2,
        "killed {killed} connections"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true]);
    assert!(
        q.lease(1, Duration::from_millis(150))
            .await
            .unwrap()
            .is_empty()
    );
    q.seed(&items(&["http://k.example/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.lease(1, Duration::from_secs(1)).await.unwrap().len(), 1);
}

/// Right after a restart Redis answers LOADING until its data set is in memory: calls wait for
/// it (up to the timeouts) instead of failing.
#[tokio::test]
async fn calls_wait_while_redis_loads_its_data() {
    let mut server = RedisServer::start_with(&[
        "--key-load-delay",
        "20",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    let url = server.url();
    let q = Queue::connect(&url, "loading", config()).await.unwrap();
    q.seed(&items(&["http://ld.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let mut conn = raw(&url).await;
    // 60,000 keys to load, written in calls short enough for the client's response timeout on
    // a busy machine
    for from in (1..=60_000).step_by(10_000) {
        redis::cmd("EVAL")
            .arg("local from = tonumber(ARGV[1]); for i = from, from + 9999 do redis.call('SET', 'filler:' .. i, string.rep('x', 40)) end")
            .arg(0)
            .arg(from)
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
    }
    server.cli(&["SAVE"]);
    server.restart();
    let loading = server.cli(&["INFO", "persistence"]);
    assert!(
        loading.contains("loading:1"),
        "the server is loading: {loading}"
    );
    let stats = q.stats().await.unwrap();
    assert_eq!(stats.ready, 1);
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true]);
    // and a client connecting while it loads
    server.cli(&["SAVE"]);
    server.restart();
    let late = Queue::connect(&url, "loading", config()).await.unwrap();
    assert_eq!(late.stats().await.unwrap().done, 1);
}

#[tokio::test]
async fn min_replicas_waits_for_replicas_and_says_when_they_lag() {
    let primary = RedisServer::start();
    let port = primary.port.to_string();
    let _replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !primary
        .cli(&["INFO", "replication"])
        .contains("state=online")
    {
        assert!(Instant::now() < deadline, "the replica connects");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // (a generous wait: under load a replica's acknowledgement can take longer than the default
    // second, and this part is about waiting, not lagging)
    let durable = Config {
        min_replicas: 1,
        replica_timeout: Duration::from_secs(10),
        ..config()
    };
    let q = Queue::connect(&primary.url(), "durable", durable)
        .await
        .unwrap();
    q.seed(&items(&["http://r.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true]);

    let too_many = Config {
        min_replicas: 2,
        replica_timeout: Duration::from_millis(100),
        ..config()
    };
    let q = Queue::connect(&primary.url(), "durable", too_many)
        .await
        .unwrap();
    let err = q
        .seed(&items(&["http://r.example/2"]), &SeedOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    assert!(err.to_string().contains("only 1 of 2 replicas"), "{err}");
    assert_eq!(q.stats().await.unwrap().ready, 1, "applied on the primary");
}

/// A server that may evict any key when full would lose queued URLs without a trace: a
/// queue's first call refuses it (nothing written), unless the client allows eviction. The
/// policies that never touch the queue's keys, and a server without a memory limit, are fine.
#[tokio::test]
async fn a_server_that_evicts_any_key_is_refused_unless_eviction_is_allowed() {
    let server = RedisServer::start();
    assert_eq!(server.cli(&["CONFIG", "SET", "maxmemory", "1gb"]), "OK");
    for policy in ["allkeys-lru", "allkeys-lfu", "allkeys-random"] {
        assert_eq!(
            server.cli(&["CONFIG", "SET", "maxmemory-policy", policy]),
            "OK"
        );
        let err = Queue::connect(&server.url(), "evicts", config())
            .await
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(err.code(), "CONFIG", "{err}");
        let text = err.to_string();
        assert!(
            text.contains(policy) && text.contains("allow_eviction"),
            "{text}"
        );
        assert_eq!(server.cli(&["DBSIZE"]), "0", "nothing written");
    }
    // allowed: the queue works as on any server
    let allowed = Config {
        allow_eviction: true,
        ..config()
    };
    let q = Queue::connect(&server.url(), "evicts", allowed)
        .await
        .unwrap();
    let report = q
        .seed(&items(&["http://e.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(report.added, 1);
    // the check itself, for a monitor that shows the risk: the same refusal, nothing written
    let dbsize = server.cli(&["DBSIZE"]);
    let err = q.check_eviction().await.expect_err("the server evicts");
    assert_eq!(err.code(), "CONFIG", "{err}");
    assert!(err.to_string().contains("allkeys-random"), "{err}");
    // as a value: the same reason, not an error
    let risk = q.eviction_risk().await.unwrap().expect("a risk");
    assert!(
        risk.contains("allkeys-random") && risk.contains("maxmemory 1073741824 bytes"),
        "{risk}"
    );
    assert_eq!(err.to_string(), Error::Config(risk).to_string());
    assert_eq!(server.cli(&["DBSIZE"]), dbsize);
    // no memory limit, or a policy that evicts only keys with an expiry: nothing to refuse
    assert_eq!(server.cli(&["CONFIG", "SET", "maxmemory", "0"]), "OK");
    q.check_eviction().await.unwrap();
    assert_eq!(q.eviction_risk().await.unwrap(), None);
    let q = Queue::connect(&server.url(), "evicts", config())
        .await
        .unwrap();
    assert_eq!(q.stats().await.unwrap().ready, 1);
    assert_eq!(server.cli(&["CONFIG", "SET", "maxmemory", "1gb"]), "OK");
    for policy in ["noeviction", "volatile-lru", "volatile-ttl"] {
        assert_eq!(
            server.cli(&["CONFIG", "SET", "maxmemory-policy", policy]),
            "OK"
        );
        let q = Queue::connect(&server.url(), "evicts", config())
            .await
            .unwrap();
        assert_eq!(q.stats().await.unwrap().ready, 1, "{policy}");
    }
}

/// A user whose ACL refuses INFO (the documented line without `+info`) opens the queue: the
/// eviction check is skipped, not failed.
#[tokio::test]
async fn a_user_without_info_opens_a_queue_unchecked() {
    let server = RedisServer::start();
    assert_eq!(server.cli(&["CONFIG", "SET", "maxmemory", "1gb"]), "OK");
    assert_eq!(
        server.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        "OK"
    );
    let url = documented_acl_user(&server, &["+info"]);
    let q = Queue::connect(&url, "no-info", config()).await.unwrap();
    q.seed(&items(&["http://i.example/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.stats().await.unwrap().ready, 1);
    // with INFO allowed, the same user is refused
    let url = documented_acl_user(&server, &[]);
    let err = Queue::connect(&url, "no-info", config())
        .await
        .map(|_| ())
        .expect_err("refused");
    assert_eq!(err.code(), "CONFIG", "{err}");
}

/// The ACL line of docs/PROTOCOL.md is enough to run every operation, and no more than the
/// queue's keys.
#[tokio::test]
async fn the_documented_least_privilege_user_runs_every_operation() {
    let server = RedisServer::start();
    let url = documented_acl_user(&server, &[]);
    let q = Queue::connect(&url, "acl", config()).await.unwrap();
    q.seed(
        &items(&[
            "http://a.example/1",
            "http://a.example/2",
            "http://a.example/3",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    q.extend(&handles(&leases[..1]), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(q.ack(&handles(&leases[..1])).await.unwrap(), [true]);
    let dead = NackOptions {
        retry: false,
        ..Default::default()
    };
    q.nack(&[(leases[1].handle(), dead)]).await.unwrap();
    q.release(&handles(&leases[2..])).await.unwrap();
    q.reclaim(10).await.unwrap();
    q.set_host_delay("a.example", Some(Duration::from_millis(5)))
        .await
        .unwrap();
    q.host_info("a.example").await.unwrap();
    q.peek(5).await.unwrap();
    assert_eq!(q.dead(5, 0).await.unwrap().total, 1);
    assert_eq!(q.requeue_dead(None).await.unwrap(), 1);
    // the host's 5 ms delay hands out one item per call; waits between them block (BLPOP)
    while q.stats().await.unwrap().pending > 0 {
        let leases = q.lease(2, Duration::from_millis(300)).await.unwrap();
        q.ack(&handles(&leases)).await.unwrap();
    }
    // an ack with the next lease in one call
    q.seed(&items(&["http://a.example/4"]), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::from_millis(300)).await.unwrap();
    let opts = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let (acked, more) = q.ack_and_lease(&handles(&leases), &opts).await.unwrap();
    assert_eq!((acked, more.len()), (vec![true], 0));
    // a blocking wait on an empty queue, then a purge
    assert!(
        q.lease(1, Duration::from_millis(200))
            .await
            .unwrap()
            .is_empty()
    );
    q.purge_dead().await.unwrap();
    assert_eq!(q.stats().await.unwrap().done, 4);
    // removing the queue: every key of its prefix, none of another's
    server.cli(&["SET", "other:{acl}:meta", "x"]);
    assert!(q.remove_queue(false).await.unwrap() > 0);
    assert_eq!(server.cli(&["--scan", "--pattern", "crawlq:*"]), "");
    assert_eq!(server.cli(&["EXISTS", "other:{acl}:meta"]), "1");
    // ... all of them as functions, none as a script
    let stats = server.cli(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_fcall:"), "{stats}");
    assert!(!stats.contains("cmdstat_evalsha:"), "{stats}");
    // keys outside the pattern are refused
    let other = Config {
        key_prefix: "other".into(),
        ..config()
    };
    // (the queue's shard count is read at connect: refused there)
    let err = Queue::connect(&url, "acl", other).await.unwrap_err();
    assert_eq!(err.code(), "SERVER", "{err}");
    assert!(err.to_string().to_uppercase().contains("NOPERM"), "{err}");
}
