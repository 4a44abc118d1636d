//! Leasing: order, politeness, blocking waits, lease expiry, ack/nack/extend/release, dead
//! letters, host settings.
mod common;

use common::*;
use crawlq::binding::{LeaseCursor, process};
use crawlq::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn urls_of(leases: &[Lease]) -> Vec<&str> {
    leases
        .iter()
        .map(|l| l.url.as_deref().unwrap_or(&l.host))
        .collect()
}

#[tokio::test]
async fn without_politeness_it_is_a_priority_fifo_across_hosts() {
    let q = open("order", config()).await;
    q.seed(
        &items(&["http://a.com/1", "http://b.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let urgent = vec![
        SeedItem::from("http://c.com/1").with_priority(5),
        SeedItem::from("http://a.com/low").with_priority(-1),
    ];
    q.seed(&urgent, &SeedOptions::default()).await.unwrap();
    q.seed(&items(&["http://b.com/2"]), &SeedOptions::default())
        .await
        .unwrap();
    let mut order = Vec::new();
    for _ in 0..6 {
        let leases = q.lease(1, Duration::ZERO).await.unwrap();
        order.push(leases[0].url.clone().unwrap());
    }
    assert_eq!(
        order,
        [
            "http://c.com/1",
            "http://a.com/1",
            "http://b.com/1",
            "http://a.com/2",
            "http://b.com/2",
            "http://a.com/low"
        ]
    );

    // the same order in one call
    let q = open("order-batch", config()).await;
    q.seed(
        &items(&["http://a.com/1", "http://b.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    q.seed(&urgent, &SeedOptions::default()).await.unwrap();
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of(&leases),
        [
            "http://c.com/1",
            "http://a.com/1",
            "http://b.com/1",
            "http://a.com/2",
            "http://a.com/low"
        ]
    );
    assert!(
        leases.windows(2).all(|w| w[0].token < w[1].token),
        "tokens increase"
    );
}

/// A lease call pops hosts in batches and takes a host again within the call when its next
/// item comes before the rest of the batch: the leases of one call of N are exactly those of N
/// calls of one, for any mix of hosts, priorities and batch sizes.
#[tokio::test]
async fn one_call_of_n_leases_what_n_calls_of_one_would() {
    // a fixed pseudo-random workload: 600 items over 7 hosts (some long runs of one host),
    // priorities -1..=2, seeded in 6 calls
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut batches = Vec::new();
    for b in 0..6 {
        let mut batch = Vec::new();
        let mut host = next(7);
        for i in 0..100 {
            if next(4) == 0 {
                host = next(7);
            }
            let prio = next(4) as i64 - 1;
            batch.push(
                SeedItem::from(format!("http://h{host}.com/{b}-{i}"))
                    .with_priority(if next(3) == 0 { prio } else { 0 }),
            );
        }
        batches.push(batch);
    }
    let mut orders = Vec::new();
    for per_call in [1usize, 3, 50, 600] {
        let q = open(&format!("n-of-one-{per_call}"), config()).await;
        for batch in &batches {
            q.seed(batch, &SeedOptions::default()).await.unwrap();
        }
        let mut order = Vec::new();
        loop {
            let leases = q.lease(per_call, Duration::ZERO).await.unwrap();
            if leases.is_empty() {
                break;
            }
            order.extend(urls_of(&leases).into_iter().map(str::to_string));
        }
        assert_eq!(order.len(), 600, "{per_call} per call");
        orders.push(order);
    }
    for order in &orders[1..] {
        assert_eq!(order, &orders[0]);
    }
}

/// A lease takes the lane its host's score names; when that lane is gone (a foreign writer,
/// an interrupted one), it reads the host's priorities and takes the best lane left.
#[tokio::test]
async fn a_lease_finds_the_best_lane_left_when_the_scored_one_is_gone() {
    let q = Queue::connect(&shared().url(), &unique("lane-gone"), Config::default())
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    let seeded = vec![
        SeedItem::from("http://a.com/urgent").with_priority(5),
        SeedItem::from("http://a.com/normal"),
        SeedItem::from("http://a.com/later"),
    ];
    q.seed(&seeded, &SeedOptions::default()).await.unwrap();
    let urgent_lane = format!("{base}:l:5:a.com");
    assert_eq!(shared().cli(&["DEL", &urgent_lane]), "1");
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(urls_of(&leases), ["http://a.com/normal"]);
    assert_eq!(
        shared().cli(&["EXISTS", &format!("{base}:hp:a.com")]),
        "0",
        "the empty lane's priority is dropped, and the set with it: priority 0 alone needs none"
    );
    let leases = q.lease(5, Duration::ZERO).await.unwrap();
    assert_eq!(urls_of(&leases), ["http://a.com/later"]);
}

#[tokio::test]
async fn politeness_leases_one_item_per_host_per_delay() {
    let q = open(
        "polite",
        Config {
            host_delay: Duration::from_secs(10),
            ..fixed_clock_config()
        },
    )
    .await;
    let batch: Vec<SeedItem> = ["a", "b", "c"]
        .iter()
        .flat_map(|h| (0..3).map(move |i| format!("http://{h}.com/{i}").into()))
        .collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();

    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of(&first),
        ["http://a.com/0", "http://b.com/0", "http://c.com/0"]
    );
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(q.stats().await.unwrap().hosts_waiting, 3);

    q.set_fixed_clock(Some(T0 + 9_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 10_000));
    let second = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of(&second),
        ["http://a.com/1", "http://b.com/1", "http://c.com/1"]
    );

    // a host that ran empty still waits out its delay for an item seeded right after
    let q = open(
        "polite-empty",
        Config {
            host_delay: Duration::from_secs(10),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&items(&["http://d.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);
    q.seed(&items(&["http://d.com/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 10_000));
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);
}

#[tokio::test]
async fn per_host_delays_override_the_default_for_every_worker() {
    let q = open("host-delay", fixed_clock_config()).await;
    let info = q
        .set_host_delay("HTTP://Slow.com/x", Some(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(
        (info.host.as_str(), info.delay_override_ms),
        ("slow.com", Some(30_000))
    );
    q.seed(
        &items(&[
            "http://slow.com/1",
            "http://slow.com/2",
            "http://fast.com/1",
            "http://fast.com/2",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of(&leases),
        [
            "http://slow.com/1",
            "http://fast.com/1",
            "http://fast.com/2"
        ]
    );
    let info = q.host_info("slow.com").await.unwrap();
    assert_eq!((info.ready, info.held_until_ms), (1, Some(T0 + 30_000)));

    let cleared = q.set_host_delay("slow.com", None).await.unwrap();
    assert_eq!(cleared.delay_override_ms, None);
    assert_eq!(
        q.host_info("slow.com").await.unwrap().delay_override_ms,
        None
    );
    let err = q
        .set_host_delay("bad host name", Some(Duration::ZERO))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ITEM");
}

#[tokio::test]
async fn registrable_domain_mode_shares_politeness_between_subdomains() {
    let q = open(
        "domain",
        Config {
            host_key: HostKeyMode::Domain,
            host_delay: Duration::from_secs(5),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&[
            "http://www.shop.co.uk/",
            "http://api.shop.co.uk/",
            "http://other.org/",
        ]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        urls_of(&leases),
        ["http://www.shop.co.uk/", "http://other.org/"]
    );
    assert_eq!(leases[0].host, "shop.co.uk");
    assert_eq!(leases[1].host, "other.org");
    // A record keeps its host key where the URL's host is another name (here the subdomain),
    // and leaves it out where it is the same: the scripts read it back either way.
    let lane = q.ops().keys().lane("shop.co.uk", 0);
    let record = shared().cli(&["LINDEX", &lane, "0"]);
    assert!(record.contains(r#""host":"shop.co.uk""#), "{record}");
    let retry = NackOptions {
        delay: Some(Duration::ZERO),
        ..NackOptions::default()
    };
    let retried = q
        .nack(&[
            (leases[0].handle(), retry.clone()),
            (leases[1].handle(), retry),
        ])
        .await
        .unwrap();
    assert_eq!(retried, [NackOutcome::Retried, NackOutcome::Retried]);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.ready, stats.hosts), (3, 2));
    let other = shared().cli(&["LINDEX", &q.ops().keys().lane("other.org", 0), "0"]);
    assert!(!other.contains("\"host\""), "{other}");
    assert!(other.contains("\"attempt\":1"), "{other}");
}

#[tokio::test]
async fn a_waiting_lease_wakes_up_when_work_is_seeded() {
    let q = std::sync::Arc::new(open("wake", config()).await);
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let leases = q.lease(1, Duration::from_secs(20)).await.unwrap();
            (leases, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    q.seed(&items(&["http://w.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    let (leases, waited) = waiter.await.unwrap();
    assert_eq!(leases.len(), 1);
    assert!(
        waited < Duration::from_secs(10),
        "woken by the seed, not by the 20 s timeout ({waited:?})"
    );
}

#[tokio::test]
async fn a_waiting_lease_returns_when_a_delayed_item_is_due() {
    let q = open("wait-delay", config()).await;
    let batch = vec![SeedItem::from("http://d.com/").with_delay(Duration::from_millis(300))];
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let leases = q.lease(1, Duration::from_secs(20)).await.unwrap();
    assert_eq!(leases.len(), 1);
    assert!(leases[0].leased_at_ms - leases[0].enqueued_at_ms >= 300);
}

#[tokio::test]
async fn a_waiting_lease_times_out_empty() {
    let q = open("wait-empty", config()).await;
    let started = Instant::now();
    assert!(
        q.lease(5, Duration::from_millis(300))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn expired_leases_are_reclaimed_by_the_next_lease_and_fenced() {
    let q = open(
        "expire",
        Config {
            lease_ttl: Duration::from_secs(60),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&items(&["http://e.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let first = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!((first.attempt, first.expires_at_ms), (1, T0 + 60_000));

    q.set_fixed_clock(Some(T0 + 59_999));
    assert!(
        q.lease(1, Duration::ZERO).await.unwrap().is_empty(),
        "live lease is not handed out"
    );
    q.set_fixed_clock(Some(T0 + 60_000));
    let second = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!((second.id.as_str(), second.attempt), (first.id.as_str(), 2));
    assert!(second.token > first.token);
    assert_eq!(second.last_error.as_deref(), Some("lease expired"));

    // the first holder is fenced out
    assert_eq!(q.ack(&[first.handle()]).await.unwrap(), vec![false]);
    assert_eq!(
        q.nack(&[(first.handle(), NackOptions::default())])
            .await
            .unwrap(),
        vec![NackOutcome::Lost]
    );
    assert_eq!(
        q.extend(&[first.handle()], Duration::from_secs(5))
            .await
            .unwrap(),
        vec![None]
    );
    assert!(matches!(
        q.answer(
            &Answer::Extend(Duration::from_secs(5)),
            &[first.handle()],
            true
        )
        .await,
        Err(Error::LeaseLost { .. })
    ));
    // a list answers per lease, a single lease with its one value
    let answers = q
        .answer(
            &Answer::Release(ReleaseOptions::default()),
            &[first.handle()],
            false,
        )
        .await
        .unwrap();
    assert_eq!(answers.to_json(Style::Camel), serde_json::json!([false]));
    assert_eq!(answers.finished(), [false]);
    assert_eq!(q.release(&[first.handle()]).await.unwrap(), vec![false]);
    assert_eq!(q.ack(&[second.handle()]).await.unwrap(), vec![true]);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.leased, stats.reclaimed_total), (1, 0, 1));
}

#[tokio::test]
async fn reclaim_moves_items_past_max_attempts_to_dead_letters() {
    let q = open(
        "reclaim",
        Config {
            lease_ttl: Duration::from_secs(1),
            max_attempts: 2,
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&["http://r.com/1", "http://r.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(q.lease(2, Duration::ZERO).await.unwrap().len(), 2);
    q.set_fixed_clock(Some(T0 + 1_000));
    let report = q.reclaim(1).await.unwrap();
    assert_eq!((report.requeued, report.dead, report.remaining), (1, 0, 1));
    let report = q.reclaim(100).await.unwrap();
    assert_eq!((report.requeued, report.dead, report.remaining), (1, 0, 0));

    assert_eq!(
        q.lease(2, Duration::ZERO)
            .await
            .unwrap()
            .iter()
            .map(|l| l.attempt)
            .collect::<Vec<_>>(),
        vec![2, 2]
    );
    q.set_fixed_clock(Some(T0 + 2_000));
    let report = q.reclaim(100).await.unwrap();
    assert_eq!((report.requeued, report.dead), (0, 2));
    let page = q.dead(10, 0).await.unwrap();
    assert_eq!(page.total, 2);
    assert!(page.items.iter().all(|d| d.attempts == 2
        && d.last_error.as_deref() == Some("lease expired")
        && d.died_at_ms == T0 + 2_000));
}

#[tokio::test]
async fn nack_retries_with_backoff_then_dead_letters() {
    let config = Config {
        max_attempts: 3,
        backoff: Backoff {
            kind: BackoffKind::Exponential,
            base: Duration::from_secs(10),
            max: Duration::from_secs(15),
            jitter: 0.0,
        },
        ..fixed_clock_config()
    };
    let q = open("nack", config).await;
    q.seed(&items(&["http://n.com/1"]), &SeedOptions::default())
        .await
        .unwrap();

    let mut clock = T0;
    for (attempt, backoff_ms) in [(1, 10_000), (2, 15_000)] {
        let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
        assert_eq!(lease.attempt, attempt);
        let reason = format!("HTTP 503 \"try later\" #{attempt}");
        let outcome = q
            .nack(&[(
                lease.handle(),
                NackOptions {
                    reason: Some(reason),
                    ..Default::default()
                },
            )])
            .await
            .unwrap();
        assert_eq!(outcome, vec![NackOutcome::Retried]);
        assert_eq!(q.stats().await.unwrap().delayed, 1);
        q.set_fixed_clock(Some(clock + backoff_ms - 1));
        assert!(
            q.lease(1, Duration::ZERO).await.unwrap().is_empty(),
            "backoff {backoff_ms} ms holds"
        );
        clock += backoff_ms;
        q.set_fixed_clock(Some(clock));
    }
    let last = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(
        (last.attempt, last.last_error.as_deref()),
        (3, Some("HTTP 503 \"try later\" #2"))
    );
    let outcome = q
        .nack(&[(
            last.handle(),
            NackOptions {
                reason: Some("still 503".into()),
                ..Default::default()
            },
        )])
        .await
        .unwrap();
    assert_eq!(outcome, vec![NackOutcome::Dead]);
    let dead = q.dead(10, 0).await.unwrap();
    assert_eq!(
        (dead.items[0].attempts, dead.items[0].last_error.as_deref()),
        (3, Some("still 503"))
    );
}

#[tokio::test]
async fn nack_with_explicit_delay_or_without_retry() {
    let q = open("nack-opts", fixed_clock_config()).await;
    q.seed(
        &items(&["http://x.com/1", "http://y.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    let outcomes = q
        .nack(&[
            (
                leases[0].handle(),
                NackOptions {
                    delay: Some(Duration::ZERO),
                    ..Default::default()
                },
            ),
            (
                leases[1].handle(),
                NackOptions {
                    retry: false,
                    reason: Some("404".into()),
                    ..Default::default()
                },
            ),
        ])
        .await
        .unwrap();
    assert_eq!(outcomes, vec![NackOutcome::Retried, NackOutcome::Dead]);
    let again = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(
        (urls_of(&again), again[0].attempt),
        (vec!["http://x.com/1"], 2)
    );
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (stats.dead, stats.nacked_total, stats.retried_total),
        (1, 2, 1)
    );
}

#[tokio::test]
async fn rate_limited_nacks_slow_the_host_down_and_successes_speed_it_up() {
    let config = Config {
        host_delay: Duration::from_secs(1),
        adaptive_delay_step: Duration::from_secs(2),
        adaptive_delay_max: Duration::from_secs(5),
        ..fixed_clock_config()
    };
    let q = open("adaptive", config).await;
    q.seed(
        &items(&["http://busy.com/1", "http://busy.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let mut clock = T0;
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let limited = NackOptions {
        rate_limited: true,
        ..Default::default()
    };
    assert_eq!(
        q.nack(&[(lease.handle(), limited.clone())]).await.unwrap(),
        vec![NackOutcome::Retried]
    );
    let info = q.host_info("busy.com").await.unwrap();
    assert_eq!(
        (info.adaptive_extra_ms, info.held_until_ms),
        (2_000, Some(clock + 3_000))
    );

    // the retried item does not lose an attempt, and waits for the host
    q.set_fixed_clock(Some(clock + 2_999));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    clock += 3_000;
    q.set_fixed_clock(Some(clock));
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(lease.attempt, 1);
    q.nack(&[(lease.handle(), limited.clone())]).await.unwrap();
    assert_eq!(
        q.host_info("busy.com").await.unwrap().adaptive_extra_ms,
        4_000
    );
    clock += 5_000;
    q.set_fixed_clock(Some(clock));
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    q.nack(&[(lease.handle(), limited)]).await.unwrap();
    assert_eq!(
        q.host_info("busy.com").await.unwrap().adaptive_extra_ms,
        5_000,
        "capped"
    );

    // acks halve it until it is gone
    for expected in [2_500, 1_250, 625, 312, 156, 78, 0] {
        clock += 10_000;
        q.set_fixed_clock(Some(clock));
        let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
        assert!(q.ack(&[lease.handle()]).await.unwrap()[0]);
        q.seed(
            &[SeedItem::from(format!("http://busy.com/more/{expected}"))],
            &SeedOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(
            q.host_info("busy.com").await.unwrap().adaptive_extra_ms,
            expected
        );
    }
}

#[tokio::test]
async fn extend_pushes_the_deadline() {
    let q = open(
        "extend",
        Config {
            lease_ttl: Duration::from_secs(10),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&items(&["http://x.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    q.set_fixed_clock(Some(T0 + 9_000));
    assert_eq!(
        q.answer(
            &Answer::Extend(Duration::from_secs(30)),
            &[lease.handle()],
            true
        )
        .await
        .unwrap()
        .to_json(Style::Camel),
        serde_json::json!(T0 + 39_000)
    );
    q.set_fixed_clock(Some(T0 + 38_999));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    assert!(q.ack(&[lease.handle()]).await.unwrap()[0]);
    let err = q
        .extend(&[lease.handle()], Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
}

#[tokio::test]
async fn release_puts_the_item_back_in_front_without_counting_an_attempt() {
    let q = open("release", config()).await;
    q.seed(
        &items(&["http://x.com/1", "http://x.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(q.release(&[lease.handle()]).await.unwrap(), vec![true]);
    let again = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(urls_of(&again), ["http://x.com/1", "http://x.com/2"]);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(q.stats().await.unwrap().released_total, 1);
}

#[tokio::test]
async fn many_leases_are_released_in_one_call_each_answered_once() {
    // More leases than the scripts put into one Redis command (4,000), with a stale and a
    // repeated token among them.
    let q = open("batch-release", config()).await;
    let batch: Vec<SeedItem> = (0..4100)
        .map(|i| format!("http://h{}.com/{i}", i % 40).into())
        .collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let mut leases = Vec::new();
    while leases.len() < 4100 {
        leases.extend(q.lease(1000, Duration::ZERO).await.unwrap());
    }
    assert_eq!(q.ack(&handles(&leases[..1])).await.unwrap(), vec![true]);
    let mut all = handles(&leases);
    all.push(leases[4099].handle());
    let flags = q.release(&all).await.unwrap();
    assert_eq!(flags.len(), 4101);
    assert!(!flags[0], "already acked: stale");
    assert!(flags[1..4100].iter().all(|f| *f));
    assert!(
        !flags[4100],
        "the same token twice in one call: the second is stale"
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!(
        (
            stats.pending,
            stats.leased,
            stats.done,
            stats.released_total
        ),
        (4099, 0, 1, 4099)
    );
    // released items keep their attempt count: the next lease is still their first attempt
    let again = q.lease(1000, Duration::ZERO).await.unwrap();
    assert!(again.iter().all(|l| l.attempt == 1));
}

#[tokio::test]
async fn nack_and_release_can_store_a_new_payload_for_the_next_attempt() {
    let q = open("payload-update", config()).await;
    // a URL with an escaped character and a seed payload, a host item without one
    q.seed(
        &[
            SeedItem {
                input: "http://p.com/a\\b?q=\"x\"".into(),
                payload: Some(json!({"retry_count": 0, "keep": "me"})),
                ..Default::default()
            },
            "q.com".into(),
            "http://r.com/1".into(),
        ],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    let by_host = |host: &str| leases.iter().find(|l| l.host == host).unwrap().clone();
    let (p, h, r) = (by_host("p.com"), by_host("q.com"), by_host("r.com"));

    let outcomes = q
        .nack(&[
            (
                p.handle(),
                NackOptions {
                    delay: Some(Duration::ZERO),
                    reason: Some("HTTP 503".into()),
                    payload: Some(json!({"retry_count": 1, "é": [1.5, null]})),
                    ..Default::default()
                },
            ),
            (
                r.handle(),
                NackOptions {
                    retry: false,
                    payload: Some(json!("why it died")),
                    ..Default::default()
                },
            ),
        ])
        .await
        .unwrap();
    assert_eq!(outcomes, vec![NackOutcome::Retried, NackOutcome::Dead]);
    let released = q
        .release_with(&[(
            h.handle(),
            ReleaseOptions {
                payload: Some(json!({"page": 2})),
            },
        )])
        .await
        .unwrap();
    assert_eq!(released, vec![true]);
    check_invariants(&test_url(), &q).await;

    let again = q.lease(3, Duration::ZERO).await.unwrap();
    let p2 = again.iter().find(|l| l.host == "p.com").unwrap();
    assert_eq!(
        p2.payload,
        Some(json!({"retry_count": 1, "é": [1.5, null]}))
    );
    assert_eq!(
        (p2.attempt, p2.last_error.as_deref()),
        (2, Some("HTTP 503"))
    );
    assert_eq!(p2.url, p.url, "the rest of the record is kept");
    let h2 = again.iter().find(|l| l.host == "q.com").unwrap();
    assert_eq!(h2.payload, Some(json!({"page": 2})));
    assert_eq!(
        (h2.attempt, h2.enqueued_at_ms),
        (1, h.enqueued_at_ms),
        "a release counts no attempt"
    );
    let dead = q.dead(10, 0).await.unwrap();
    assert_eq!(dead.items[0].payload, Some(json!("why it died")));

    // no payload, or null, keeps the stored one; a payload over the limit is refused for the
    // whole call before anything changes
    let kept = q
        .nack(&[(
            p2.handle(),
            NackOptions {
                delay: Some(Duration::ZERO),
                payload: Some(serde_json::Value::Null),
                ..Default::default()
            },
        )])
        .await
        .unwrap();
    assert_eq!(kept, vec![NackOutcome::Retried]);
    let p3 = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(p3.payload, p2.payload);
    let too_big = json!("x".repeat(Config::default().max_payload_bytes));
    let err = q
        .release_with(&[(
            p3.handle(),
            ReleaseOptions {
                payload: Some(too_big.clone()),
            },
        )])
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(err.to_string().contains("payload too large"), "{err}");
    let err = q
        .nack(&[(
            p3.handle(),
            NackOptions {
                payload: Some(too_big),
                ..Default::default()
            },
        )])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("payload too large"), "{err}");
    assert_eq!(
        q.ack(&[p3.handle(), h2.handle()]).await.unwrap(),
        vec![true, true],
        "the lease was left as it was"
    );
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn many_leases_are_acked_in_one_call() {
    // More leases than the scripts put into one Redis command (4,000), with stale and repeated
    // tokens among them: each is answered on its own.
    let q = open("batch-ack", config()).await;
    let batch: Vec<SeedItem> = (0..4500)
        .map(|i| format!("http://h{}.com/{i}", i % 50).into())
        .collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let mut leases = Vec::new();
    while leases.len() < 4500 {
        leases.extend(q.lease(1000, Duration::ZERO).await.unwrap());
    }
    let early = q.ack(&handles(&leases[..10])).await.unwrap();
    assert_eq!(early, vec![true; 10]);
    let mut all = handles(&leases);
    all.push(leases[4499].handle());
    let flags = q.ack(&all).await.unwrap();
    assert_eq!(flags.len(), 4501);
    assert!(flags[..10].iter().all(|f| !*f), "already acked: stale");
    assert!(flags[10..4500].iter().all(|f| *f));
    assert!(
        !flags[4500],
        "the same token twice in one call: the second is stale"
    );
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (
            stats.done,
            stats.leased,
            stats.pending,
            stats.hosts,
            stats.acked_total
        ),
        (4500, 0, 0, 0, 4500)
    );
}

#[tokio::test]
async fn dead_letters_are_found_and_requeued_by_id_with_unknown_ids_flagged() {
    let q = open("dead-ids", config()).await;
    let batch: Vec<SeedItem> = (0..3).map(|i| format!("http://e.com/{i}").into()).collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    dead_letter(&q, &leases, |l| format!("HTTP 404 for {}", l.id)).await;
    let (first, third) = (leases[0].id.clone(), leases[2].id.clone());

    let asked = [third.clone(), "9999".to_string(), first.clone()];
    let found = q.dead_letters(&asked).await.unwrap();
    assert_eq!(found.len(), 3);
    let letter = found[0].as_ref().expect("a dead letter");
    assert_eq!(
        (
            letter.id.as_str(),
            letter.url.as_deref(),
            letter.last_error.as_deref()
        ),
        (
            third.as_str(),
            leases[2].url.as_deref(),
            Some(format!("HTTP 404 for {third}").as_str())
        )
    );
    assert!(found[1].is_none(), "an unknown id is None");
    assert_eq!(
        found[2].as_ref().map(|d| d.id.as_str()),
        Some(first.as_str())
    );

    let flags = q
        .requeue_dead_ids(&[first.clone(), "9999".into(), first.clone()])
        .await
        .unwrap();
    assert_eq!(
        flags,
        [true, false, false],
        "requeued once; unknown and repeated ids are flagged"
    );
    assert!(q.dead_letters(std::slice::from_ref(&first)).await.unwrap()[0].is_none());
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.dead, stats.ready), (2, 1));
    assert!(q.dead_letters(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn dead_letters_can_be_listed_requeued_and_purged() {
    let q = open("dead", config()).await;
    let batch: Vec<SeedItem> = (0..5).map(|i| format!("http://d.com/{i}").into()).collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let leases = q.lease(5, Duration::ZERO).await.unwrap();
    let fail: Vec<_> = leases
        .iter()
        .map(|l| {
            (
                l.handle(),
                NackOptions {
                    retry: false,
                    reason: Some(format!("gone {}", l.id)),
                    ..Default::default()
                },
            )
        })
        .collect();
    q.nack(&fail).await.unwrap();

    let page = q.dead(2, 1).await.unwrap();
    assert_eq!(page.total, 5);
    assert_eq!(
        page.items.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        ["2", "3"]
    );
    assert_eq!(page.items[0].last_error.as_deref(), Some("gone 2"));
    assert_eq!(q.dead(10, 10).await.unwrap().items.len(), 0);

    assert_eq!(
        q.requeue_dead(Some(&["1".to_string(), "404".to_string()]))
            .await
            .unwrap(),
        1
    );
    let back = q.lease(5, Duration::ZERO).await.unwrap();
    assert_eq!(
        (back.len(), back[0].attempt, back[0].last_error.as_deref()),
        (1, 1, Some("gone 1"))
    );
    q.ack(&handles(&back)).await.unwrap();

    assert_eq!(q.requeue_dead(None).await.unwrap(), 4);
    let all = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(all.len(), 4);
    q.nack(
        &all.iter()
            .map(|l| {
                (
                    l.handle(),
                    NackOptions {
                        retry: false,
                        ..Default::default()
                    },
                )
            })
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert_eq!(q.purge_dead().await.unwrap(), 4);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.dead, stats.done, stats.seen), (0, 1, 5));
    let again = q
        .seed(&items(&["http://d.com/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(again.duplicates, 1, "purged items stay seen");
}

#[tokio::test]
async fn purging_many_dead_letters_takes_bounded_calls_and_keeps_every_count_exact() {
    let q = open(
        "purge-bounded",
        Config {
            max_attempts: 1,
            ..config()
        },
    )
    .await;
    // 1,100 dead letters over 700 hosts (400 of them with two), then one queued item on 50 of
    // those hosts: their counts must come down to exactly that one
    let dead: Vec<String> = (0..1100)
        .map(|i| format!("http://h{}.example/{i}", i % 700))
        .collect();
    let dead: Vec<&str> = dead.iter().map(String::as_str).collect();
    q.seed(&items(&dead), &SeedOptions::default())
        .await
        .unwrap();
    let leased = q.lease(1100, Duration::ZERO).await.unwrap();
    assert_eq!(leased.len(), 1100);
    dead_letter(&q, &leased, |_| "gone".into()).await;
    let queued: Vec<String> = (0..50)
        .map(|i| format!("http://h{i}.example/stays"))
        .collect();
    let queued: Vec<&str> = queued.iter().map(String::as_str).collect();
    q.seed(&items(&queued), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(check_invariants(&test_url(), &q).await.dead, 1100);
    // a listing longer than one call's 500 reads its pages in order, each dead letter once
    let listed = q.dead(1100, 0).await.unwrap();
    assert_eq!(listed.total, 1100);
    let ids: std::collections::HashSet<&str> = listed.items.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids.len(), 1100);
    assert!(
        listed
            .items
            .windows(2)
            .all(|w| w[0].died_at_ms <= w[1].died_at_ms)
    );
    let tail = q.dead(10, 1095).await.unwrap();
    assert_eq!(tail.items, listed.items[1095..]);
    assert_eq!(q.dead(600, 700).await.unwrap().items, listed.items[700..]);

    // one call removes at most its limit, oldest first, and leaves every count exact
    let reply = q.executor().eval(q.ops().dead_purge(500)).await.unwrap();
    assert_eq!(q.ops().decode_dead_purge(reply).unwrap(), (500, 600));
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready), (600, 50));
    assert_eq!(q.dead(1, 0).await.unwrap().total, 600);

    // purge_dead calls until none are left
    assert_eq!(q.purge_dead().await.unwrap(), 600);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready, stats.hosts), (0, 50, 50));
    let hosts = q.list_hosts(None, 1000).await.unwrap();
    assert_eq!((hosts.total, hosts.hosts.len()), (50, 50));
    assert!(hosts.hosts.iter().all(|h| h.items == 1 && h.dead == 0));
    let base = q.ops().keys().base().to_string();
    let meta = format!("{base}:meta");
    assert_eq!(shared().cli(&["HGET", &meta, "purged_total"]), "1100");

    // a dead letter whose record no script can read: its host's counts are settled once the
    // set is empty
    let more = q
        .seed(
            &items(&["http://z.example/1", "http://z.example/2"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(more.added, 2);
    let leased = q.lease(100, Duration::ZERO).await.unwrap();
    assert_eq!(leased.len(), 52);
    let (z, rest): (Vec<_>, Vec<_>) = leased.into_iter().partition(|l| l.host == "z.example");
    dead_letter(&q, &z, |_| "gone".into()).await;
    q.release(&handles(&rest)).await.unwrap();
    shared().cli(&["HSET", &format!("{base}:deadrec"), &z[0].id, "not a record"]);
    assert_eq!(q.purge_dead().await.unwrap(), 2);
    assert_eq!(
        shared().cli(&[
            "EXISTS",
            &format!("{base}:deadrec"),
            &format!("{base}:hostdead")
        ]),
        "0"
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready, stats.hosts), (0, 50, 50));
}

#[tokio::test]
async fn requeueing_all_dead_letters_passes_over_those_a_forced_seed_queued_again() {
    let q = open(
        "requeue-past",
        Config {
            max_attempts: 1,
            ..config()
        },
    )
    .await;
    let urls: Vec<String> = (0..300).map(|i| format!("http://r{i}.example/")).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let leased = q.lease(300, Duration::ZERO).await.unwrap();
    dead_letter(&q, &leased, |_| "gone".into()).await;
    // the 130 oldest dead letters (more than one call's 125) queued again by a forced seed:
    // they stay dead letters, and requeueing all must reach the 170 behind them
    let oldest: Vec<String> = q
        .dead(130, 0)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|d| d.url.unwrap())
        .collect();
    let oldest: Vec<&str> = oldest.iter().map(String::as_str).collect();
    let forced = q
        .seed(
            &items(&oldest),
            &SeedOptions {
                force: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(forced.added, 130);
    assert_eq!(q.requeue_dead(None).await.unwrap(), 170);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready), (130, 300));
    assert_eq!(q.requeue_dead(None).await.unwrap(), 0, "the rest stay");
}

#[tokio::test]
async fn peek_shows_what_lease_would_take() {
    let q = open("peek", config()).await;
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2", "http://b.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let peeked: Vec<String> = q
        .peek(10)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.url.unwrap())
        .collect();
    assert_eq!(peeked, ["http://a.com/1", "http://b.com/1"]);
    assert_eq!(q.stats().await.unwrap().leased, 0);
}

#[tokio::test]
async fn a_long_peek_is_read_in_pages_and_lists_what_lease_would_take() {
    let q = open("peek-pages", config()).await;
    // 600 one-URL hosts: three pages of at most 250 hosts, each call reading only its own
    let urls: Vec<String> = (0..600).map(|i| format!("http://p{i}.example/")).collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let one_page = q.executor().eval(q.ops().peek(250, 500)).await.unwrap();
    assert_eq!(q.ops().decode_peek(one_page).unwrap().len(), 100);

    let peeked: Vec<String> = q
        .peek(600)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(peeked.len(), 600);
    assert_eq!(
        q.peek(5000).await.unwrap().len(),
        600,
        "a limit past the end"
    );
    assert!(q.peek(0).await.unwrap().is_empty());
    let leased: Vec<String> = q
        .lease(600, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(peeked, leased, "peek lists what lease takes, in its order");
}

#[tokio::test]
async fn lease_arguments_are_checked() {
    let q = open("lease-args", config()).await;
    for opts in [
        LeaseOptions {
            max: 0,
            ..Default::default()
        },
        LeaseOptions {
            max: 10_001,
            ..Default::default()
        },
        LeaseOptions {
            ttl: Some(Duration::ZERO),
            ..Default::default()
        },
        LeaseOptions {
            wait: Duration::from_secs(90_000),
            ..Default::default()
        },
    ] {
        assert_eq!(
            q.lease_with(&opts).await.unwrap_err().code(),
            "INVALID_ARGUMENT",
            "{opts:?}"
        );
    }
    assert_eq!(q.reclaim(0).await.unwrap_err().code(), "INVALID_ARGUMENT");
}

#[tokio::test]
async fn a_cursor_hands_out_leases_one_by_one_and_releases_what_it_holds() {
    let q = open("cursor", config()).await;
    q.seed(
        &(0..7)
            .map(|i| SeedItem::from(format!("http://c.com/{i}")))
            .collect::<Vec<_>>(),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let mut cursor = LeaseCursor::new(
        LeaseOptions {
            max: 3,
            wait: Duration::from_millis(100),
            ttl: None,
        },
        true,
    );
    let first = cursor.next(&q, || false).await.unwrap().unwrap();
    assert_eq!(q.stats().await.unwrap().leased, 3, "leased a batch of max");
    q.ack(&[first.handle()]).await.unwrap();
    let second = cursor.next(&q, || false).await.unwrap().unwrap();
    assert_eq!(second.url.as_deref(), Some("http://c.com/1"));
    let held = cursor.close();
    assert_eq!(held.len(), 2, "the current lease and the one prefetched");
    assert_eq!(q.release(&held).await.unwrap(), vec![true, true]);
    assert!(cursor.next(&q, || false).await.unwrap().is_none(), "closed");

    let mut rest = LeaseCursor::new(
        LeaseOptions {
            max: 4,
            wait: Duration::from_millis(100),
            ttl: None,
        },
        true,
    );
    let mut urls = Vec::new();
    while let Some(lease) = rest.next(&q, || false).await.unwrap() {
        urls.push(lease.url.clone().unwrap());
        q.ack(&[lease.handle()]).await.unwrap();
    }
    assert_eq!(urls.len(), 6, "the two released ones came back");
    assert!(rest.is_finished());
    assert_eq!(q.stats().await.unwrap().done, 7);
}

#[tokio::test]
async fn an_interruptible_wait_stops_between_slices() {
    let q = open("interruptible", config()).await;
    let started = Instant::now();
    let mut asked = 0;
    let leases = q
        .lease_interruptible(
            &LeaseOptions {
                max: 1,
                wait: Duration::from_secs(30),
                ttl: None,
            },
            || {
                asked += 1;
                asked == 2
            },
        )
        .await
        .unwrap();
    assert!(leases.is_empty());
    assert_eq!(asked, 2);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped after two slices, not 30 s"
    );

    let mut cursor = LeaseCursor::new(
        LeaseOptions {
            max: 1,
            wait: Duration::from_secs(30),
            ttl: None,
        },
        false,
    );
    let mut polls = 0;
    assert!(
        cursor
            .next(&q, || {
                polls += 1;
                polls > 1
            })
            .await
            .unwrap()
            .is_none()
    );
    assert!(cursor.is_finished(), "a stopped fetch finishes the cursor");
}

#[tokio::test]
async fn a_stop_signal_ends_a_wait_and_a_given_one_leases_nothing() {
    let q = open("stop-signal", config()).await;
    let long = LeaseOptions {
        max: 1,
        wait: Duration::from_secs(30),
        ttl: None,
    };
    let stop = StopSignal::new();
    let giver = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stop.stop();
        })
    };
    let started = Instant::now();
    // two calls share the signal: both hear it
    let (first, second) = tokio::join!(
        q.lease_interruptible(&long, stop.clone()),
        q.lease_interruptible(&long, stop.clone())
    );
    assert!(first.unwrap().is_empty() && second.unwrap().is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped by the signal, not the 30 s wait"
    );
    giver.await.unwrap();
    assert!(stop.is_stopped());

    // given before the call: no script call is made, so the ready item stays ready
    q.seed(&items(&["http://stop.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(
        q.lease_interruptible(&long, stop.clone())
            .await
            .unwrap()
            .is_empty()
    );
    let work = crawlq::binding::Work::new(long, false);
    assert!(work.next(&q, stop.clone()).await.unwrap().is_none());
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased), (1, 0));
    // the answering calls answer, and lease nothing
    q.seed(
        &items(&["http://stop2.example/", "http://stop3.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let pages = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(pages.len(), 2);
    let (acked, next) = q
        .ack_and_lease_answers(&[pages[0].handle()], true, &long, stop.clone())
        .await
        .unwrap();
    assert_eq!(acked.to_json(Style::Camel), json!(true));
    assert!(next.is_empty());
    let link = SeedItem::from("http://stop4.example/");
    let (acked, report, next) = q
        .ack_with_links_and_lease_interruptible(
            &pages[1].handle(),
            &[link],
            &SeedOptions::default(),
            &long,
            stop.clone(),
        )
        .await
        .unwrap();
    assert!(acked && next.is_empty());
    assert_eq!(report.added, 1);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased, stats.done), (2, 0, 2));
    // a signal not given leases as lease_with does
    let leases = q
        .lease_interruptible(&long, StopSignal::new())
        .await
        .unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!(q.stats().await.unwrap().leased, 1);
}

/// A `work()` loop whose fetch waits 30 s for work: only a stop or a close ends it sooner.
fn waiting_work_loop() -> std::sync::Arc<crawlq::binding::Work> {
    let opts = LeaseOptions {
        max: 5,
        wait: Duration::from_secs(30),
        ttl: None,
    };
    std::sync::Arc::new(crawlq::binding::Work::new(opts, false))
}

/// Close `work` while its fetch `fetching` waits and seed `url` right after: the fetch's wait
/// has ended, so the item is not leased (a fetch that only checked the close between slices of
/// its wait would lease it and give it back).
async fn a_close_ends_the_wait<E: crawlq::Executor>(
    q: &Queue<E>,
    work: &crawlq::binding::Work,
    fetching: tokio::task::JoinHandle<crawlq::Result<Option<crawlq::Lease>>>,
    url: &str,
) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(work.close().leases().is_empty());
    q.seed(&items(&[url]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(fetching.await.unwrap().unwrap().is_none());
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased, stats.released_total), (1, 0, 0));
}

#[tokio::test]
async fn closing_a_work_loop_ends_the_wait_of_its_fetch_under_way() {
    let q = std::sync::Arc::new(open("work-close", config()).await);
    let work = waiting_work_loop();
    let fetching = {
        let (q, work) = (q.clone(), work.clone());
        tokio::spawn(async move { work.next(&*q, || false).await })
    };
    a_close_ends_the_wait(&q, &work, fetching, "http://closed.example/").await;
}

type Fetching = tokio::task::JoinHandle<crawlq::Result<Option<crawlq::Lease>>>;

/// A waiting loop that handed out the one ready item, closed while its next fetch waits: the
/// loop, that fetch, and what the close took (that item's lease).
async fn closed_holding_one(
    q: &std::sync::Arc<Queue<RedisExecutor>>,
) -> (
    std::sync::Arc<crawlq::binding::Work>,
    Fetching,
    crawlq::binding::HeldByLoop,
) {
    let work = waiting_work_loop();
    let current = work.next(&**q, || false).await.unwrap().expect("the item");
    let fetching = {
        let (q, work) = (q.clone(), work.clone());
        tokio::spawn(async move { work.next(&*q, || false).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let held = work.close();
    assert_eq!(held.leases(), [current.handle()]);
    (work, fetching, held)
}

#[tokio::test]
async fn a_fetch_ended_by_a_close_returns_once_what_the_close_took_went_back() {
    let q = std::sync::Arc::new(open("work-close-release", config()).await);
    q.seed(&items(&["http://held.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let (work, fetching, held) = closed_holding_one(&q).await;
    // a later close takes nothing, and its end does not count as the first one's release
    assert!(work.close().leases().is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !fetching.is_finished(),
        "the loop is left only once what it held went back"
    );
    crawlq::binding::Work::release(&*q, held).await.unwrap();
    assert!(fetching.await.unwrap().unwrap().is_none());
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased, stats.released_total), (1, 0, 1));
    // after the close, next() ends at once
    assert!(work.next(&*q, || false).await.unwrap().is_none());

    // what a close took and dropped unreleased ends the wait too (its leases expire)
    let (_, fetching, held) = closed_holding_one(&q).await;
    drop(held);
    assert!(fetching.await.unwrap().unwrap().is_none());
    assert_eq!(q.stats().await.unwrap().leased, 1);
}

#[tokio::test]
async fn a_call_signal_of_a_work_loop_hears_the_call_cancelled_and_the_loop_closed() {
    let q = std::sync::Arc::new(open("work-call-signal", config()).await);
    // the call cancelled: that fetch ends, and so does the loop (as a stopped fetch ends it);
    // the loop itself was not closed
    let work = waiting_work_loop();
    let cancel = work.call_signal();
    let fetching = {
        let (q, work, cancel) = (q.clone(), work.clone(), cancel.clone());
        tokio::spawn(async move { work.next(&*q, cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.stop();
    assert!(fetching.await.unwrap().unwrap().is_none());
    assert!(matches!(work.pop(), crawlq::binding::Popped::Finished));
    assert!(!work.call_signal().is_stopped());
    // a loop closed while a call with its own signal waits hears the close at once
    let work = waiting_work_loop();
    let fetching = {
        let (q, work) = (q.clone(), work.clone());
        tokio::spawn(async move { work.next(&*q, work.call_signal()).await })
    };
    a_close_ends_the_wait(&q, &work, fetching, "http://call-closed.example/").await;
    assert!(
        work.call_signal().is_stopped(),
        "made after the close: given"
    );
}

#[tokio::test]
async fn closing_the_queue_ends_every_wait_under_way_and_later_calls_do_not_wait() {
    let q = std::sync::Arc::new(open("queue-close", config()).await);
    let long = LeaseOptions {
        max: 1,
        wait: Duration::from_secs(30),
        ttl: None,
    };
    q.seed(
        &items(&["http://one.example/", "http://two.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let pages = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(pages.len(), 2);
    let (first, second) = (pages[0].handle(), pages[1].handle());
    // four calls wait for work: a lease, an ack with the next lease, a page answered with
    // its links and the next lease (its link waits 60 s), and a worker loop's fetch
    let leasing = {
        let q = q.clone();
        tokio::spawn(async move { q.lease_with(&long).await })
    };
    let acking = {
        let q = q.clone();
        tokio::spawn(async move { q.ack_and_lease(&[first], &long).await })
    };
    let answering = {
        let q = q.clone();
        tokio::spawn(async move {
            let opts = SeedOptions {
                delay: Duration::from_secs(60),
                ..SeedOptions::default()
            };
            let link = SeedItem::from("http://later.example/");
            q.ack_with_links_and_lease(&second, &[link], &opts, &long)
                .await
        })
    };
    let work = waiting_work_loop();
    let fetching = {
        let (q, work) = (q.clone(), work.clone());
        tokio::spawn(async move { work.next(&*q, || false).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    q.close();
    assert!(q.is_closed() && q.held().is_closed());
    assert!(leasing.await.unwrap().unwrap().is_empty());
    let (acked, next) = acking.await.unwrap().unwrap();
    assert_eq!((acked, next.len()), (vec![true], 0), "the ack stands");
    let (acked, report, next) = answering.await.unwrap().unwrap();
    assert_eq!((acked, report.added, next.len()), (true, 1, 0));
    assert!(fetching.await.unwrap().unwrap().is_none());
    assert!(
        matches!(work.pop(), crawlq::binding::Popped::Finished),
        "the worker loop ended"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "ended by the close, not their 30 s waits"
    );
    // nothing was leased by the calls the close ended
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (stats.ready, stats.delayed, stats.leased, stats.done),
        (0, 1, 0, 2)
    );
    // later calls: a lease call leases nothing, at once; answers and the rest work
    q.seed(&items(&["http://late.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let started = Instant::now();
    assert!(q.lease_with(&long).await.unwrap().is_empty());
    let mut cursor = LeaseCursor::new(long, false);
    assert!(cursor.next(&*q, || false).await.unwrap().is_none());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a closed queue's lease calls do not wait"
    );
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased), (1, 0), "nothing was leased");
    let other = Queue::connect(&test_url(), q.name(), config())
        .await
        .unwrap();
    let late = other.lease(1, Duration::ZERO).await.unwrap();
    let (acked, next) = q.ack_and_lease(&[late[0].handle()], &long).await.unwrap();
    assert_eq!((acked, next.len()), (vec![true], 0), "the ack stands");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased, stats.done), (0, 0, 3));
}

#[tokio::test]
async fn held_leases_are_extended_in_the_background_and_released_on_demand() {
    let config = Config {
        lease_ttl: Duration::from_millis(600),
        extend_every: Duration::from_millis(150),
        ..config()
    };
    let name = unique("held");
    let q = std::sync::Arc::new(
        Queue::connect(&test_url(), &name, config.clone())
            .await
            .unwrap(),
    );
    q.seed(
        &items(&["http://a.com/1", "http://b.com/2", "http://c.com/3"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(3, Duration::ZERO).await.unwrap();
    assert_eq!((leases.len(), q.held().len()), (3, 3));
    q.ack(&[leases[2].handle()]).await.unwrap();
    assert_eq!(q.held().len(), 2, "an answered lease is not held any more");
    process::spawn_extender(&test_url(), &name, config, q.held().clone());
    // Three lease times later the two held leases are still live: nothing to reclaim.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert_eq!(q.reclaim(100).await.unwrap().requeued, 0);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.leased, stats.reclaimed_total), (2, 0));
    assert_eq!(q.release_held().await.unwrap(), 2);
    assert_eq!((q.held().len(), q.release_held().await.unwrap()), (0, 0));
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.leased, stats.ready, stats.released_total), (0, 2, 2));
    q.held().close();
}

#[tokio::test]
async fn leases_held_by_a_closed_process_queue_go_to_the_queue_connected_next() {
    let name = unique("held-close");
    let slot: process::ProcessQueue<RedisExecutor> = Default::default();
    let first = slot.install(
        Queue::connect(&test_url(), &name, config()).await.unwrap(),
        &test_url(),
    );
    first
        .seed(
            &items(&["http://a.com/1", "http://b.com/2", "http://c.com/3"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    let leases = first.lease(3, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 3);
    slot.close();
    slot.close(); // closing again changes nothing
    assert!(slot.current().is_none());
    let next = slot.install(
        Queue::connect(&test_url(), &name, config()).await.unwrap(),
        &test_url(),
    );
    assert_eq!(
        next.held().len(),
        3,
        "the closed queue's leases are held here"
    );
    next.ack(&[leases[0].handle()]).await.unwrap();
    assert_eq!(next.release_held().await.unwrap(), 2);
    let stats = next.stats().await.unwrap();
    assert_eq!(
        (stats.leased, stats.ready, stats.done, stats.released_total),
        (0, 2, 1, 2)
    );
    assert!(first.held().is_empty(), "taken over, not copied");
    slot.close();
}

#[tokio::test]
async fn without_an_extender_held_leases_expire_and_are_forgotten() {
    let config = Config {
        lease_ttl: Duration::from_millis(200),
        ..config()
    };
    let q = open("held-expire", config).await;
    q.seed(&items(&["http://a.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let [lease] = &q.lease(1, Duration::ZERO).await.unwrap()[..] else {
        panic!("one lease")
    };
    assert_eq!(
        q.extend_held().await.unwrap(),
        1,
        "extend_held extends what is held"
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        q.extend_held().await.unwrap(),
        0,
        "an expired lease is dropped, not extended"
    );
    assert_eq!(q.release_held().await.unwrap(), 0);
    assert_eq!(q.reclaim(10).await.unwrap().requeued, 1);
    assert_eq!(q.ack(&[lease.handle()]).await.unwrap(), vec![false]);
}

#[tokio::test]
async fn extend_every_must_be_shorter_than_every_lease_time() {
    let too_slow = Config {
        lease_ttl: Duration::from_secs(1),
        extend_every: Duration::from_secs(1),
        ..config()
    };
    assert!(matches!(too_slow.validate(), Err(Error::Config(m)) if m.contains("extend_every")));
    let q = open(
        "held-ttl",
        Config {
            extend_every: Duration::from_secs(1),
            ..config()
        },
    )
    .await;
    let short = LeaseOptions {
        ttl: Some(Duration::from_millis(500)),
        wait: Duration::ZERO,
        ..Default::default()
    };
    assert!(
        matches!(q.lease_with(&short).await, Err(Error::InvalidArgument(m)) if m.contains("extend_every"))
    );
}

/// ack_and_lease answers leases and takes the next ones in one script call: the flags are
/// ack's, a stale lease changes nothing, an empty queue is waited on, a paused one still acks.
#[tokio::test]
async fn ack_and_lease_answers_and_takes_the_next_in_one_call() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "ack-lease", Config::default())
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/1", "http://b.com/1", "http://c.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let one = |wait_ms: u64| LeaseOptions {
        max: 1,
        wait: Duration::from_millis(wait_ms),
        ttl: None,
    };
    let first = q.lease_with(&one(0)).await.unwrap();
    assert_eq!(urls_of(&first), ["http://a.com/1"]);

    server.cli(&["CONFIG", "RESETSTAT"]);
    let (acked, next) = q.ack_and_lease(&handles(&first), &one(0)).await.unwrap();
    assert_eq!(acked, [true]);
    assert_eq!(urls_of(&next), ["http://b.com/1"]);
    assert_eq!(
        (calls_of(&server, "fcall"), calls_of(&server, "evalsha")),
        (1, 0),
        "one script call"
    );

    // a stale lease (acked above) is flagged and changes nothing; max 5 takes what is left
    let both = [handles(&first), handles(&next)].concat();
    let opts = LeaseOptions { max: 5, ..one(0) };
    let (acked, last) = q.ack_and_lease(&both, &opts).await.unwrap();
    assert_eq!(acked, [false, true]);
    assert_eq!(urls_of(&last), ["http://c.com/1"]);
    let stats = check_invariants(&server.url(), &q).await;
    assert_eq!((stats.done, stats.leased, stats.pending), (2, 1, 0));
    assert_eq!(stats.acked_total, 2);
    assert_eq!(stats.leased_total, 3);

    // nothing ready: the ack is applied and the lease waits as lease_with does
    let started = Instant::now();
    let (acked, none) = q.ack_and_lease(&handles(&last), &one(300)).await.unwrap();
    assert_eq!(acked, [true]);
    assert!(none.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(250));

    // work seeded meanwhile wakes the wait
    let seeder = {
        let url = server.url();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let q = Queue::connect(&url, "ack-lease", Config::default())
                .await
                .unwrap();
            q.seed(&items(&["http://d.com/1"]), &SeedOptions::default())
                .await
                .unwrap();
        })
    };
    let (acked, woken) = q.ack_and_lease(&[], &one(5_000)).await.unwrap();
    seeder.await.unwrap();
    assert!(acked.is_empty());
    assert_eq!(urls_of(&woken), ["http://d.com/1"]);

    // a paused queue still takes the acks, and leases nothing
    q.seed(&items(&["http://e.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    q.pause().await.unwrap();
    let (acked, paused) = q.ack_and_lease(&handles(&woken), &one(0)).await.unwrap();
    assert_eq!(acked, [true]);
    assert!(paused.is_empty());
    q.resume().await.unwrap();
    let stats = check_invariants(&server.url(), &q).await;
    assert_eq!((stats.done, stats.leased, stats.pending), (4, 0, 1));
}

/// Bad lease options fail before anything is sent; a foreign value at a key only the lease
/// writes fails the call before the acks change anything.
#[tokio::test]
async fn ack_and_lease_fails_before_any_change() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "ack-lease-bad", Config::default())
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let held = q.lease(1, Duration::ZERO).await.unwrap();
    for bad in [
        LeaseOptions {
            max: 0,
            wait: Duration::ZERO,
            ttl: None,
        },
        LeaseOptions {
            max: 10_001,
            wait: Duration::ZERO,
            ttl: None,
        },
        LeaseOptions {
            max: 1,
            wait: Duration::from_secs(100_000),
            ttl: None,
        },
        LeaseOptions {
            max: 1,
            wait: Duration::ZERO,
            ttl: Some(Duration::ZERO),
        },
    ] {
        let err = q.ack_and_lease(&handles(&held), &bad).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad:?}: {err}");
    }
    assert_eq!(q.stats().await.unwrap().done, 0, "nothing was acked");

    let heads = format!("{}:heads", q.ops().keys().base());
    server.cli(&["DEL", &heads]);
    server.cli(&["SET", &heads, "foreign"]);
    let opts = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let err = q.ack_and_lease(&handles(&held), &opts).await.unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    server.cli(&["DEL", &heads]);
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (stats.done, stats.leased),
        (0, 1),
        "the ack was not applied"
    );
    assert_eq!(q.ack(&handles(&held)).await.unwrap(), [true]);
}

/// A lease that finds nothing leasable answers when that may change: the earliest of a delayed
/// item coming due, a held-back host's delay ending and a lease expiring; none for a queue with
/// nothing in any of them or whose only held host is paused until resumed. With hosts ready,
/// expired leases and due items are taken in the same call.
#[tokio::test]
async fn a_lease_that_finds_nothing_says_when_that_may_change() {
    let q = open(
        "next-due",
        Config {
            host_delay: Duration::from_secs(10),
            ..fixed_clock_config()
        },
    )
    .await;
    let ttl = Duration::from_secs(60);
    let nothing = |batch: &crawlq::ops::LeaseBatch| batch.leases.is_empty() && batch.reclaimed == 0;

    // never seeded: nothing can change by itself
    let batch = q.lease_once(1, ttl).await.unwrap();
    assert!(nothing(&batch) && batch.next_due_ms.is_none(), "{batch:?}");

    // a lease out (expires at +60 s) and its host held back for 10 s
    q.seed(&items(&["http://a.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.lease_once(1, ttl).await.unwrap().leases.len(), 1);
    let batch = q.lease_once(1, ttl).await.unwrap();
    assert!(nothing(&batch), "{batch:?}");
    assert_eq!(batch.next_due_ms, Some(T0 + 10_000));

    // the host paused until resumed never comes due: the lease's expiry is next
    q.pause_host("a.com", None).await.unwrap();
    let batch = q.lease_once(1, ttl).await.unwrap();
    assert!(nothing(&batch), "{batch:?}");
    assert_eq!(batch.next_due_ms, Some(T0 + 60_000));

    // an item seeded with a delay of 30 s comes first
    q.seed(
        &[SeedItem::from("http://b.com/1").with_delay(Duration::from_secs(30))],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let batch = q.lease_once(1, ttl).await.unwrap();
    assert!(nothing(&batch), "{batch:?}");
    assert_eq!(batch.next_due_ms, Some(T0 + 30_000));
    q.set_fixed_clock(Some(T0 + 29_999));
    assert_eq!(
        q.lease_once(1, ttl).await.unwrap().next_due_ms,
        Some(T0 + 30_000)
    );
    q.set_fixed_clock(Some(T0 + 30_000));
    let batch = q.lease_once(1, ttl).await.unwrap();
    assert_eq!(urls_of(&batch.leases), ["http://b.com/1"]);

    // with a host ready, the expired lease and a due item come back in the same call
    q.resume_host("a.com").await.unwrap();
    q.seed(
        &[
            SeedItem::from("http://c.com/1"),
            SeedItem::from("http://d.com/1").with_delay(Duration::from_secs(40)),
        ],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    q.set_fixed_clock(Some(T0 + 70_000));
    let batch = q.lease_once(10, ttl).await.unwrap();
    assert_eq!(batch.reclaimed, 1, "{batch:?}");
    let mut leased = urls_of(&batch.leases);
    leased.sort();
    assert_eq!(
        leased,
        ["http://a.com/1", "http://c.com/1", "http://d.com/1"]
    );
    // its second delivery
    assert_eq!(
        batch
            .leases
            .iter()
            .find(|l| l.host == "a.com")
            .unwrap()
            .attempt,
        2
    );
}

/// The members and scores of a sorted set, and how Redis stores it.
fn zset_of(server: &RedisServer, key: &str) -> (String, Vec<String>) {
    let members = server.cli(&["ZRANGE", key, "0", "-1", "WITHSCORES"]);
    let encoding = server.cli(&["OBJECT", "ENCODING", key]);
    (encoding, members.lines().map(str::to_string).collect())
}

#[tokio::test]
async fn a_lease_stores_the_host_sets_of_many_hosts_as_skip_lists_and_changes_none_of_their_members()
 {
    // a server of its own: the library's count of calls decides when the sets are looked at,
    // and its first lease looks
    let server = RedisServer::start();
    let config = Config {
        host_delay: Duration::ZERO,
        ..Config::default()
    };
    let big = Queue::connect(&server.url(), "hosts-40", config.clone())
        .await
        .unwrap();
    let urls: Vec<String> = (0..40)
        .flat_map(|h| (0..2).map(move |i| format!("http://h{h:02}.example/{i}")))
        .collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    big.seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let keys = ["ready", "heads", "hostitems"].map(|k| format!("crawlq:{{hosts-40}}:{k}"));
    let before: Vec<_> = keys.iter().map(|k| zset_of(&server, k)).collect();
    for (encoding, members) in &before {
        assert_eq!(encoding, "listpack");
        assert_eq!(members.len(), 80, "{members:?}");
    }

    // the first lease of the library looks at them: each holds 32 members or more
    let leases = big.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 1);
    for (key, (_, members)) in keys.iter().zip(&before) {
        let (encoding, now) = zset_of(&server, key);
        assert_eq!(encoding, "skiplist", "{key}");
        if key.ends_with("hostitems") {
            // (a lease leaves the hosts' item counts as they were)
            assert_eq!(&now, members, "{key}: the same members and scores");
        } else {
            // (the leased host is back at its next item's rank: delay 0)
            assert_eq!(now.len(), 80, "{key}: {now:?}");
            assert!(now.iter().all(|m| m.len() < 40), "{key}: {now:?}");
        }
    }

    // a queue of 10 hosts keeps its packed sets: a few dozen calls later the library has
    // looked again, at this queue
    let small = Queue::connect(&server.url(), "hosts-10", config)
        .await
        .unwrap();
    let urls: Vec<String> = (0..10)
        .flat_map(|h| (0..10).map(move |i| format!("http://s{h}.example/{i}")))
        .collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    small
        .seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let mut leased = 0;
    for _ in 0..70 {
        let leases = small.lease(1, Duration::ZERO).await.unwrap();
        leased += leases.len();
        small.ack(&handles(&leases)).await.unwrap();
    }
    assert_eq!(leased, 70);
    for key in ["ready", "heads", "hostitems"] {
        let key = format!("crawlq:{{hosts-10}}:{key}");
        assert_eq!(zset_of(&server, &key).0, "listpack", "{key}");
    }
    let stats = small.stats().await.unwrap();
    assert_eq!((stats.pending, stats.done), (30, 70), "{stats:?}");
    let counted = server.cli(&["ZCARD", "crawlq:{hosts-10}:hostitems"]);
    assert_eq!(counted, stats.hosts.to_string());

    // the large queue's sets stay skip lists while they hold members, fewer than 32 too (an
    // emptied key is gone, and one made again starts packed), and none of their members is
    // longer than a host
    let leases = big.lease(40, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 40);
    big.ack(&handles(&leases)).await.unwrap();
    let (encoding, members) = zset_of(&server, &keys[2]);
    assert_eq!(encoding, "skiplist");
    assert!(members.len() < 64, "{members:?}");
    let items: i64 = members
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| -s.parse::<i64>().unwrap())
        .sum();
    assert_eq!(items, 40, "80 seeded, 40 acked: {members:?}");
    for key in &keys {
        let (_, members) = zset_of(&server, key);
        assert!(members.iter().all(|m| m.len() < 40), "{key}: {members:?}");
    }
    let stats = big.stats().await.unwrap();
    assert_eq!((stats.pending, stats.leased), (39, 1), "{stats:?}");
}

#[tokio::test]
async fn a_user_whose_acl_has_no_object_encoding_still_leases_and_keeps_packed_host_sets() {
    // the least-privilege line of docs/PROTOCOL.md before +object|encoding was in it
    let server = RedisServer::start();
    let url = documented_acl_user(&server, &["+object|encoding"]);
    let config = Config {
        host_delay: Duration::ZERO,
        ..Config::default()
    };
    let q = Queue::connect(&url, "no-object", config).await.unwrap();
    let urls: Vec<String> = (0..40)
        .map(|h| format!("http://h{h:02}.example/"))
        .collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), [true]);
    for key in ["ready", "heads", "hostitems"] {
        let key = format!("crawlq:{{no-object}}:{key}");
        let (encoding, members) = zset_of(&server, &key);
        assert_eq!(
            (encoding.as_str(), members.len()),
            ("listpack", 78),
            "{key}"
        );
    }
}
