//! The delay after the answer: a host's next lease waits its delay after the previous item's
//! answer (ack, nack, release, expiry) rather than after its lease, or the delay factor times
//! how long that item was leased (within the delay and `host_delay_max`), as Heritrix paces a
//! host by its fetch times. Fixed clock throughout.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

fn answer(factor: Option<f64>) -> Option<HostPacing> {
    Some(HostPacing {
        after: DelayAfter::Answer,
        factor,
    })
}

async fn seeded(name: &str, config: Config, host: &str, n: usize) -> Queue<RedisExecutor> {
    let q = open(name, config).await;
    let urls: Vec<String> = (0..n).map(|i| format!("http://{host}/{i}")).collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    q
}

/// Leases one item at `at` (ms after T0) and answers `None` before, so the caller sees the
/// host is held until then.
async fn lease_at(q: &Queue<RedisExecutor>, at: i64) -> Lease {
    q.set_fixed_clock(Some(T0 + at - 1));
    assert!(
        q.lease(10, Duration::ZERO).await.unwrap().is_empty(),
        "leased before {at} ms"
    );
    q.set_fixed_clock(Some(T0 + at));
    let mut got = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(got.len(), 1, "nothing leased at {at} ms");
    got.remove(0)
}

#[tokio::test]
async fn a_host_whose_items_take_a_second_is_leased_again_its_delay_after_each_answer() {
    let q = seeded(
        "after-answer",
        Config {
            host_delay: Duration::from_millis(500),
            ..fixed_clock_config()
        },
        "slow.com",
        6,
    )
    .await;
    let info = q
        .set_host_delay_after("slow.com", answer(None))
        .await
        .unwrap();
    assert_eq!(info.pacing, answer(None));

    // leased at 0; while it is out nothing else of the host is leased, long past its delay
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    q.set_fixed_clock(Some(T0 + 900));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let info = q.host_info("slow.com").await.unwrap();
    assert_eq!((info.in_flight, info.full), (1, true));

    // answered after 1 s: leasable 500 ms after the answer, not after the lease
    q.set_fixed_clock(Some(T0 + 1000));
    q.ack(&[first[0].handle()]).await.unwrap();
    let info = q.host_info("slow.com").await.unwrap();
    assert_eq!((info.full, info.held_until_ms), (false, Some(T0 + 1500)));

    // factor 2 (in force for the items leased from now): the wait is twice the fetch time
    // when that is longer than the delay
    q.set_host_delay_after("slow.com", answer(Some(2.0)))
        .await
        .unwrap();
    let second = lease_at(&q, 1500).await;
    q.set_fixed_clock(Some(T0 + 2500));
    q.ack(&[second.handle()]).await.unwrap();
    let third = lease_at(&q, 2500 + 2000).await;

    // a fetch shorter than delay / factor waits the delay
    q.set_fixed_clock(Some(T0 + 4600));
    q.ack(&[third.handle()]).await.unwrap();
    let fourth = lease_at(&q, 4600 + 500).await;

    // each answer counts: a release after 1 s ...
    q.set_fixed_clock(Some(T0 + 6100));
    assert_eq!(q.release(&[fourth.handle()]).await.unwrap(), [true]);
    let fifth = lease_at(&q, 6100 + 2000).await;
    // ... and a nack after 3 s (the retry's own backoff is the item's, not the host's)
    q.set_fixed_clock(Some(T0 + 11_100));
    let nacked = q
        .nack(&[(
            fifth.handle(),
            NackOptions {
                delay: Some(Duration::from_secs(3600)),
                ..Default::default()
            },
        )])
        .await
        .unwrap();
    assert_eq!(nacked, [NackOutcome::Retried]);
    lease_at(&q, 11_100 + 6000).await;
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn an_expired_lease_holds_its_host_from_its_reclaim() {
    let q = seeded(
        "after-expiry",
        Config {
            host_delay: Duration::from_millis(500),
            host_delay_after: DelayAfter::Answer,
            lease_ttl: Duration::from_secs(1),
            ..fixed_clock_config()
        },
        "e.com",
        3,
    )
    .await;
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    // the lease expires at 1 s; the call at 5 s reclaims it and holds the host 500 ms from then
    q.set_fixed_clock(Some(T0 + 5000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let info = q.host_info("e.com").await.unwrap();
    assert_eq!(
        (info.in_flight, info.full, info.held_until_ms),
        (0, false, Some(T0 + 5500))
    );
    assert!(!q.ack(&[first[0].handle()]).await.unwrap()[0]);
    lease_at(&q, 5500).await;
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn the_factor_is_capped_by_the_max_and_never_shortens_the_delay() {
    let q = seeded(
        "after-max",
        Config {
            host_delay: Duration::from_secs(1),
            host_delay_after: DelayAfter::Answer,
            host_delay_factor: 100.0,
            host_delay_max: Duration::from_secs(5),
            ..fixed_clock_config()
        },
        "m.com",
        3,
    )
    .await;
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    // 100 x 2 s is capped at 5 s
    q.set_fixed_clock(Some(T0 + 2000));
    q.ack(&[first[0].handle()]).await.unwrap();
    let second = lease_at(&q, 2000 + 5000).await;
    // a max below the host's delay leaves the delay: 100 x 0 ms gives the 1 s delay
    q.ack(&[second.handle()]).await.unwrap();
    lease_at(&q, 7000 + 1000).await;

    // no max (0): 100 x 60 ms = 6 s
    let q = seeded(
        "after-nomax",
        Config {
            host_delay_after: DelayAfter::Answer,
            host_delay_factor: 100.0,
            host_delay_max: Duration::ZERO,
            ..fixed_clock_config()
        },
        "n.com",
        3,
    )
    .await;
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    q.set_fixed_clock(Some(T0 + 60));
    q.ack(&[first[0].handle()]).await.unwrap();
    lease_at(&q, 60 + 6000).await;
}

#[tokio::test]
async fn with_a_limit_of_two_each_answer_holds_the_host_its_delay() {
    let q = seeded(
        "after-two",
        Config {
            host_delay: Duration::from_millis(100),
            host_delay_after: DelayAfter::Answer,
            host_in_flight: 2,
            ..fixed_clock_config()
        },
        "two.com",
        6,
    )
    .await;
    // the delay still spaces the leases; the second fills the host
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    let second = lease_at(&q, 100).await;
    q.set_fixed_clock(Some(T0 + 10_000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    // the first answer frees a slot, held 100 ms after it
    q.ack(&[first[0].handle()]).await.unwrap();
    let third = lease_at(&q, 10_100).await;
    // an answer while the host has a free slot holds it too: nothing until 100 ms after it
    q.set_fixed_clock(Some(T0 + 10_150));
    q.ack(&[second.handle()]).await.unwrap();
    lease_at(&q, 10_250).await;
    q.ack(&[third.handle()]).await.unwrap();
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_paused_host_stays_paused_and_a_mode_back_to_the_lease_frees_a_held_host() {
    let q = seeded(
        "after-pause",
        Config {
            host_delay: Duration::from_secs(1),
            ..fixed_clock_config()
        },
        "p.com",
        4,
    )
    .await;
    q.set_host_delay_after("p.com", answer(None)).await.unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    q.pause_host("p.com", None).await.unwrap();
    q.set_fixed_clock(Some(T0 + 3000));
    q.ack(&[first[0].handle()]).await.unwrap();
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    // the resume keeps the hold of the answer: 1 s after it
    let info = q.resume_host("p.com").await.unwrap();
    assert_eq!(info.held_until_ms, Some(T0 + 4000));
    let second = lease_at(&q, 4000).await;

    // held for the answer; back to the workers' mode (after the lease): free at once, the
    // delay after the lease still in force
    q.set_fixed_clock(Some(T0 + 9000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let info = q.set_host_delay_after("p.com", None).await.unwrap();
    assert_eq!((info.pacing, info.full), (None, false));
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);
    q.ack(&[second.handle()]).await.unwrap();
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_host_deletion_forgets_its_pacing() {
    let q = seeded("after-delete", fixed_clock_config(), "del.com", 3).await;
    q.set_host_delay_after("del.com", answer(Some(3.0)))
        .await
        .unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    q.delete_host("del.com", false).await.unwrap();
    let info = q.host_info("del.com").await.unwrap();
    assert_eq!((info.pacing, info.in_flight, info.full), (None, 0, false));
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn bad_modes_and_factors_are_refused() {
    let q = open("after-bad", fixed_clock_config()).await;
    for bad in [
        HostPacing {
            after: DelayAfter::Lease,
            factor: Some(2.0),
        },
        HostPacing {
            after: DelayAfter::Answer,
            factor: Some(-1.0),
        },
        HostPacing {
            after: DelayAfter::Answer,
            factor: Some(1001.0),
        },
        HostPacing {
            after: DelayAfter::Answer,
            factor: Some(f64::NAN),
        },
    ] {
        let err = q
            .set_host_delay_after("x.com", Some(bad))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err}");
    }
    assert_eq!(q.host_info("x.com").await.unwrap().pacing, None);
    for (name, value) in [
        ("host_delay_after", serde_json::json!("response")),
        ("host_delay_factor", serde_json::json!(-0.5)),
        ("host_delay_factor", serde_json::json!(1e9)),
        ("host_delay_max", serde_json::json!(-1)),
    ] {
        let options = serde_json::json!({ name: value });
        let err = Config::from_options(options.as_object().unwrap(), Style::Snake).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
    let camel = serde_json::json!({"hostDelayAfter": "answer", "hostDelayFactor": 2, "hostDelayMaxMs": 5000});
    let config = Config::from_options(camel.as_object().unwrap(), Style::Camel).unwrap();
    assert_eq!(
        (
            config.host_delay_after,
            config.host_delay_factor,
            config.host_delay_max
        ),
        (DelayAfter::Answer, 2.0, Duration::from_secs(5))
    );
}

#[tokio::test]
async fn a_delay_set_while_the_item_is_out_counts_at_its_answer() {
    let q = seeded(
        "after-robots",
        Config {
            host_delay: Duration::from_millis(300),
            host_delay_after: DelayAfter::Answer,
            ..fixed_clock_config()
        },
        "r.com",
        3,
    )
    .await;
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    // robots.txt read while the first page is out: Crawl-delay 1 s
    q.set_host_crawl_delay("r.com", Some(Duration::from_secs(1)))
        .await
        .unwrap();
    q.set_fixed_clock(Some(T0 + 200));
    q.ack(&[first[0].handle()]).await.unwrap();
    let second = lease_at(&q, 200 + 1000).await;
    // a shorter one set while the next is out never shortens the wait of the lease's (1 s)
    q.set_host_delay("r.com", Some(Duration::from_millis(100)))
        .await
        .unwrap();
    q.set_fixed_clock(Some(T0 + 1300));
    q.ack(&[second.handle()]).await.unwrap();
    let third = lease_at(&q, 1300 + 1000).await;
    // and from the next lease on the shorter one is the delay
    q.set_fixed_clock(Some(T0 + 2400));
    q.ack(&[third.handle()]).await.unwrap();
    assert_eq!(
        q.host_info("r.com").await.unwrap().held_until_ms,
        Some(T0 + 2500)
    );
    check_invariants(&test_url(), &q).await;
}

/// A lease call that takes back the expired lease of a host whose wait has just ended holds
/// that host from the reclaim, behind another waiting host of its shard: that other host keeps
/// its wait, and the held one is not leased before its delay after the reclaim.
#[tokio::test]
async fn a_reclaim_that_holds_a_due_host_keeps_the_other_waiting_hosts_waiting() {
    let q = open(
        "after-due-reclaim",
        Config {
            host_delay: Duration::ZERO,
            host_delay_after: DelayAfter::Answer,
            host_in_flight: 2,
            lease_ttl: Duration::from_secs(30),
            ..fixed_clock_config()
        },
    )
    .await;
    // two hosts of one shard (a queue of several shards spreads hosts over them)
    let layout = q.layout().await.unwrap();
    let early = "a.com";
    let late = (0..100)
        .map(|i| format!("b{i}.com"))
        .find(|h| layout.of_host(h) == layout.of_host(early))
        .unwrap();
    q.set_host_delay(early, Some(Duration::from_secs(5)))
        .await
        .unwrap();
    q.set_host_delay(&late, Some(Duration::from_secs(33)))
        .await
        .unwrap();
    let urls: Vec<String> = [early, &late]
        .iter()
        .flat_map(|h| (0..2).map(move |i| format!("http://{h}/{i}")))
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    // one item of each: `early` waits until 5 s (its delay after the lease, a limit of 2 leaves
    // it a slot), `late` until 33 s
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 2);
    let late_lease = first.iter().find(|l| l.host == late).unwrap();
    assert!(q.ack(&[late_lease.handle()]).await.unwrap()[0]);
    // at 31 s `early` is due and its lease expired at 30 s: the reclaim holds it until 36 s,
    // behind `late`, which still waits until 33 s
    q.set_fixed_clock(Some(T0 + 31_000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    check_invariants(&test_url(), &q).await;
    assert_eq!(
        q.host_info(early).await.unwrap().held_until_ms,
        Some(T0 + 36_000)
    );
    assert_eq!(
        q.host_info(&late).await.unwrap().held_until_ms,
        Some(T0 + 33_000)
    );
    assert_eq!(lease_at(&q, 33_000).await.host, late);
    assert_eq!(lease_at(&q, 36_000).await.host, early);
    check_invariants(&test_url(), &q).await;
}
