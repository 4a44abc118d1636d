//! In-flight limits per host: the most items of one host leased at once, across workers; the
//! slot an answer (ack, nack, release, expiry) or the host's deletion frees; blocked leases woken
//! by it.
mod common;

use common::*;
use crawlq::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn hosts_of(leases: &[Lease]) -> Vec<&str> {
    leases.iter().map(|l| l.host.as_str()).collect()
}

/// Items of `host` leased now, counted from the queue's structures (every shard).
async fn leased_in_redis(q: &Queue<RedisExecutor>, host: &str) -> u64 {
    let mut page = q.list_hosts(None, 1000).await.unwrap();
    page.hosts
        .drain(..)
        .find(|h| h.host == host)
        .map_or(0, |h| h.leased)
}

#[tokio::test]
async fn a_limit_of_one_holds_the_host_until_each_answer_frees_its_slot() {
    let q = open("flight-answers", fixed_clock_config()).await;
    let urls: Vec<String> = (0..8).map(|i| format!("http://one.com/{i}")).collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    q.seed(
        &items(&["http://other.com/a", "http://other.com/b"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let info = q.set_host_in_flight("one.com", Some(1)).await.unwrap();
    assert_eq!(
        (info.in_flight_limit, info.in_flight, info.full),
        (Some(1), 0, false)
    );

    // one lease call of 10 takes one item of one.com and every item of other.com (no limit)
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&first), ["one.com", "other.com", "other.com"]);
    q.ack(&handles(&first[1..])).await.unwrap();
    let info = q.host_info("one.com").await.unwrap();
    assert_eq!((info.in_flight, info.full), (1, true));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(leased_in_redis(&q, "one.com").await, 1);

    // ack frees the slot
    q.ack(&[first[0].handle()]).await.unwrap();
    assert!(!q.host_info("one.com").await.unwrap().full);
    let second = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&second), ["one.com"]);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());

    // nack (retried later) frees it
    let outcome = q
        .nack(&[(
            second[0].handle(),
            NackOptions {
                delay: Some(Duration::from_secs(3600)),
                ..Default::default()
            },
        )])
        .await
        .unwrap();
    assert_eq!(outcome, [NackOutcome::Retried]);
    let third = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&third), ["one.com"]);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());

    // release frees it, and the same item comes back first
    assert_eq!(q.release(&[third[0].handle()]).await.unwrap(), [true]);
    let again = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, third[0].id);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());

    // expiry frees it: the lease that takes the expired one back leases the host again
    q.set_fixed_clock(Some(T0 + q.config().lease_ttl.as_millis() as i64 + 1));
    let after_expiry = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&after_expiry), ["one.com"]);
    // (the expired item went back to the end of its lane)
    assert_ne!(after_expiry[0].id, again[0].id);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(q.host_info("one.com").await.unwrap().in_flight, 1);
    // the expired lease's ack is lost and frees nothing twice
    assert_eq!(q.ack(&[again[0].handle()]).await.unwrap(), [false]);
    assert!(q.host_info("one.com").await.unwrap().full);

    // deleting the host frees everything it had in flight; new items are leasable at once
    let deleted = q.delete_host("one.com", true).await.unwrap();
    assert_eq!(deleted.leased, 1);
    let info = q.host_info("one.com").await.unwrap();
    assert_eq!(
        (info.in_flight_limit, info.in_flight, info.full),
        (None, 0, false)
    );
    q.seed(
        &items(&["http://one.com/new-1", "http://one.com/new-2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 2);
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn the_workers_default_applies_to_hosts_without_their_own_and_a_dead_letter_frees_a_slot() {
    let q = open(
        "flight-default",
        Config {
            host_in_flight: 2,
            max_attempts: 1,
            ..fixed_clock_config()
        },
    )
    .await;
    let urls: Vec<String> = (0..5)
        .flat_map(|i| [format!("http://a.com/{i}"), format!("http://b.com/{i}")])
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    // b.com: no limit, whatever the default
    q.set_host_in_flight("b.com", Some(0)).await.unwrap();

    let leases = q.lease(100, Duration::ZERO).await.unwrap();
    let count = |host: &str| leases.iter().filter(|l| l.host == host).count();
    assert_eq!((count("a.com"), count("b.com")), (2, 5));
    assert_eq!(q.host_info("a.com").await.unwrap().in_flight, 2);
    assert_eq!(q.host_info("b.com").await.unwrap().in_flight, 0);

    // a nack that dead-letters (max_attempts 1) frees the slot too
    let a_lease = leases.iter().find(|l| l.host == "a.com").unwrap();
    let outcome = q
        .nack(&[(a_lease.handle(), NackOptions::default())])
        .await
        .unwrap();
    assert_eq!(outcome, [NackOutcome::Dead]);
    assert_eq!(
        hosts_of(&q.lease(100, Duration::ZERO).await.unwrap()),
        ["a.com"]
    );

    // raising the host's own limit frees a full host at once; removing it brings the default
    let info = q.set_host_in_flight("a.com", Some(3)).await.unwrap();
    assert!(!info.full);
    assert_eq!(
        hosts_of(&q.lease(100, Duration::ZERO).await.unwrap()),
        ["a.com"]
    );
    assert!(q.host_info("a.com").await.unwrap().full);
    let info = q.set_host_in_flight("a.com", None).await.unwrap();
    assert_eq!(
        (info.in_flight_limit, info.in_flight, info.full),
        (None, 3, true)
    );
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_full_host_keeps_its_politeness_delay_and_its_pause() {
    let q = open(
        "flight-delay",
        Config {
            host_delay: Duration::from_secs(10),
            host_in_flight: 1,
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&["http://d.com/1", "http://d.com/2", "http://d.com/3"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    // answered at once: the slot is free, the delay still holds the host until T0 + 10 s
    q.ack(&[first[0].handle()]).await.unwrap();
    let info = q.host_info("d.com").await.unwrap();
    assert_eq!((info.full, info.held_until_ms), (false, Some(T0 + 10_000)));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 10_000));
    let second = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(second.len(), 1);

    // paused while full: the answer frees the slot, the pause still holds it
    q.pause_host("d.com", None).await.unwrap();
    q.ack(&[second[0].handle()]).await.unwrap();
    q.set_fixed_clock(Some(T0 + 60_000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let info = q.resume_host("d.com").await.unwrap();
    assert!(!info.paused && !info.full);
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_blocked_lease_wakes_when_an_answer_frees_a_slot() {
    let q = open("flight-wake", config()).await;
    q.set_host_in_flight("w.com", Some(1)).await.unwrap();
    q.seed(
        &items(&["http://w.com/1", "http://w.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    let waiter = Queue::connect(&test_url(), q.name(), config())
        .await
        .unwrap();
    let started = Instant::now();
    let blocked = tokio::spawn(async move {
        let got = waiter.lease(1, Duration::from_secs(20)).await.unwrap();
        (got, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!blocked.is_finished(), "the host is full: the lease waits");
    q.ack(&[first[0].handle()]).await.unwrap();
    let (got, waited) = blocked.await.unwrap();
    assert_eq!(got.len(), 1);
    assert!(
        waited < Duration::from_secs(5),
        "woken by the answer, not by its 20 s wait ({waited:?})"
    );

    // a nack that dead-letters its item frees the slot and wakes a blocked lease too
    q.seed(&items(&["http://w.com/3"]), &SeedOptions::default())
        .await
        .unwrap();
    let waiter = Queue::connect(&test_url(), q.name(), config())
        .await
        .unwrap();
    let started = Instant::now();
    let blocked = tokio::spawn(async move {
        let got = waiter.lease(1, Duration::from_secs(20)).await.unwrap();
        (got, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!blocked.is_finished(), "the host is full again");
    let dead = NackOptions {
        retry: false,
        ..Default::default()
    };
    assert_eq!(
        q.nack(&[(got[0].handle(), dead)]).await.unwrap(),
        [NackOutcome::Dead]
    );
    let (again, waited) = blocked.await.unwrap();
    assert_eq!(again.len(), 1);
    assert!(
        waited < Duration::from_secs(5),
        "woken by the nack ({waited:?})"
    );
}

/// 16 workers, each with its own connection, lease and answer as fast as they can: a host of
/// limit 1 and one of limit 2 never have more items leased at once (measured by the workers
/// between their lease and their answer, and by Redis after each lease), and the limit is
/// reached (the workers did contend).
#[tokio::test]
async fn limits_of_one_and_two_hold_under_sixteen_concurrent_workers() {
    let name = unique("flight-16");
    let q = Queue::connect(&test_url(), &name, config()).await.unwrap();
    q.set_host_in_flight("one.com", Some(1)).await.unwrap();
    q.set_host_in_flight("two.com", Some(2)).await.unwrap();
    let urls: Vec<String> = (0..40)
        .flat_map(|i| {
            [
                format!("http://one.com/{i}"),
                format!("http://two.com/{i}"),
                format!("http://free.com/{i}"),
            ]
        })
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();

    // host -> (in flight now, most at once)
    let seen: Arc<Mutex<HashMap<String, (i64, i64)>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..16 {
        let seen = seen.clone();
        let name = name.clone();
        workers.push(tokio::spawn(async move {
            let q = Queue::connect(&test_url(), &name, config()).await.unwrap();
            let (mut done, mut round) = (0, 0);
            let mut idle = 0;
            loop {
                let leases = q
                    .lease(1 + w % 3, Duration::from_millis(200))
                    .await
                    .unwrap();
                if leases.is_empty() {
                    if q.is_finished().await.unwrap() {
                        return done;
                    }
                    idle += 1;
                    if idle > 50 {
                        panic!(
                            "stuck: {:?} {:?} {:?}",
                            q.stats().await.unwrap(),
                            q.host_info("one.com").await.unwrap(),
                            q.host_info("two.com").await.unwrap()
                        );
                    }
                    continue;
                }
                idle = 0;
                for l in &leases {
                    let mut s = seen.lock().unwrap();
                    let e = s.entry(l.host.clone()).or_default();
                    e.0 += 1;
                    e.1 = e.1.max(e.0);
                }
                for host in ["one.com", "two.com"] {
                    let limit = if host == "one.com" { 1 } else { 2 };
                    assert!(q.host_info(host).await.unwrap().in_flight <= limit);
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
                for l in &leases {
                    seen.lock().unwrap().get_mut(&l.host).unwrap().0 -= 1;
                }
                // answered every way that frees a slot
                let handles = handles(&leases);
                round += 1;
                if round % 3 == 0 {
                    q.release(&handles[..1]).await.unwrap();
                    q.ack(&handles[1..]).await.unwrap();
                    done += leases.len() - 1;
                } else {
                    q.ack(&handles).await.unwrap();
                    done += leases.len();
                }
            }
        }));
    }
    let mut total = 0;
    for w in workers {
        total += w.await.unwrap();
    }
    assert_eq!(total, 120, "every item acked once");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen["one.com"].1, 1, "one.com: never 2 at once");
    assert_eq!(seen["two.com"].1, 2, "two.com: 2 at once, never 3");
    assert!(
        seen["free.com"].1 > 2,
        "free.com has no limit: {:?}",
        seen["free.com"]
    );
    for host in ["one.com", "two.com"] {
        let info = q.host_info(host).await.unwrap();
        assert_eq!((info.in_flight, info.full), (0, false), "{host}");
    }
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn out_of_range_limits_are_refused() {
    let q = open("flight-range", config()).await;
    let err = q
        .set_host_in_flight("a.com", Some(1_000_001))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let options = serde_json::json!({"host_in_flight": -1});
    let err = Config::from_options(options.as_object().unwrap(), Style::Snake).unwrap_err();
    assert!(err.to_string().contains("host_in_flight"), "{err}");
    let options = serde_json::json!({"hostInFlight": 2});
    let parsed = Config::from_options(options.as_object().unwrap(), Style::Camel).unwrap();
    assert_eq!(parsed.host_in_flight, 2);
}
