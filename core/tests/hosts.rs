//! Per-host controls: pause until resumed, pause for a time, resume (and how they combine with
//! politeness and blocking lease calls).
mod common;

use common::*;
use crawlq::*;
use std::time::{Duration, Instant};

fn urls(leases: &[Lease]) -> Vec<&str> {
    let mut out: Vec<&str> = leases.iter().filter_map(|l| l.url.as_deref()).collect();
    out.sort();
    out
}

fn polite(ms: u64) -> Config {
    Config {
        host_delay: Duration::from_millis(ms),
        ..fixed_clock_config()
    }
}

#[tokio::test]
async fn a_paused_host_is_skipped_until_resumed_and_keeps_its_politeness_hold() {
    let q = open("host-pause", polite(1000)).await;
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2", "http://b.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&first), ["http://a.com/1", "http://b.com/1"]);

    let info = q.pause_host("a.com", None).await.unwrap();
    assert!(info.paused);
    assert_eq!(
        (info.paused_until_ms, info.held_until_ms, info.ready),
        (None, None, 1),
        "paused until resumed: no end, no hold time"
    );
    assert_eq!(q.host_info("http://a.com/x").await.unwrap(), info);
    // answering its leases and seeding it go on; leasing it does not
    assert_eq!(q.ack(&handles(&first)).await.unwrap(), vec![true, true]);
    q.seed(
        &items(&["http://a.com/3", "http://b.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    q.set_fixed_clock(Some(T0 + 5_000));
    let second = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&second), ["http://b.com/2"]);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    check_invariants(&test_url(), &q).await;

    // resumed after its hold ran out: leasable at once
    let info = q.resume_host("a.com").await.unwrap();
    assert!(!info.paused);
    assert_eq!((info.held_until_ms, info.ready), (None, 2));
    let third = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&third), ["http://a.com/2"]);

    // paused and resumed within its hold: the hold is kept
    q.pause_host("a.com", None).await.unwrap();
    q.set_fixed_clock(Some(T0 + 5_100));
    let info = q.resume_host("a.com").await.unwrap();
    assert_eq!(info.held_until_ms, Some(T0 + 6_000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 6_000));
    let fourth = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&fourth), ["http://a.com/3"]);
    // resuming a host that is not paused changes nothing
    let info = q.resume_host("a.com").await.unwrap();
    assert_eq!((info.paused, info.held_until_ms), (false, Some(T0 + 7_000)));
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_timed_pause_ends_on_time_by_the_server_clock() {
    let q = open("host-pause-timed", polite(0)).await;
    q.seed(&items(&["http://t.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let info = q
        .pause_host("t.com", Some(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(info.paused);
    assert_eq!(
        (info.paused_until_ms, info.held_until_ms),
        (Some(T0 + 2_000), Some(T0 + 2_000))
    );
    q.set_fixed_clock(Some(T0 + 1_999));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 2_000));
    assert!(
        !q.host_info("t.com").await.unwrap().paused,
        "over at its end"
    );
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&leases), ["http://t.com/1"]);
    // pausing again sets a new end, shorter or longer
    q.pause_host("t.com", None).await.unwrap();
    let info = q
        .pause_host("t.com", Some(Duration::from_millis(300)))
        .await
        .unwrap();
    assert_eq!(info.paused_until_ms, Some(T0 + 2_300));
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_short_pause_does_not_cut_the_politeness_hold() {
    let q = open("host-pause-short", polite(1000)).await;
    q.seed(
        &items(&["http://s.com/1", "http://s.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
    let info = q
        .pause_host("s.com", Some(Duration::from_millis(200)))
        .await
        .unwrap();
    assert_eq!(
        (info.paused_until_ms, info.held_until_ms),
        (Some(T0 + 200), Some(T0 + 1_000))
    );
    q.set_fixed_clock(Some(T0 + 500));
    let info = q.host_info("s.com").await.unwrap();
    assert_eq!((info.paused, info.held_until_ms), (false, Some(T0 + 1_000)));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 1_000));
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn a_blocking_lease_waits_through_a_pause_and_wakes_on_resume() {
    // The real clock: a lease call blocked on a paused host has no due time to wake at, so
    // only the resume's wake can end its wait early.
    let q = std::sync::Arc::new(open("host-pause-wake", config()).await);
    q.seed(&items(&["http://w.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    q.pause_host("w.com", None).await.unwrap();
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move {
            let leases = q.lease(1, Duration::from_secs(20)).await.unwrap();
            (leases, Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "leased a paused host");
    let resumed = Instant::now();
    q.resume_host("w.com").await.unwrap();
    let (leases, at) = waiter.await.unwrap();
    assert_eq!(urls(&leases), ["http://w.com/1"]);
    let woke = at.duration_since(resumed);
    eprintln!("a blocked lease woke {woke:?} after resume_host");
    assert!(
        woke < Duration::from_secs(5),
        "woke by the resume, not by its timeout"
    );
}

#[tokio::test]
async fn host_pauses_reject_bad_input_and_change_nothing() {
    let q = open("host-pause-errors", config()).await;
    let too_long = Duration::from_secs(101 * 365 * 24 * 3600);
    let err = q.pause_host("x.com", Some(too_long)).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    assert!(err.to_string().contains("100 years"), "{err}");
    for bad in ["", "http://"] {
        let err = q.pause_host(bad, None).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ITEM", "{bad:?}: {err}");
        let err = q.resume_host(bad).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_ITEM", "{bad:?}: {err}");
    }
    assert!(!q.host_info("x.com").await.unwrap().paused);
}
