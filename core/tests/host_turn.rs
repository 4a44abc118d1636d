//! Turns of a host for requests the frontier does not lease (a redirect an HTTP client
//! follows): spaced from the host's leases and other turns by its delay, held back by its
//! in-flight limit (except for the lease's own host) and by a pause. Fixed clock throughout:
//! a zero timeout asks "is it the host's turn now?" without sleeping.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

async fn seeded(name: &str, delay_ms: u64, urls: &[&str]) -> Queue<RedisExecutor> {
    let q = open(
        name,
        Config {
            host_delay: Duration::from_millis(delay_ms),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&items(urls), &SeedOptions::default()).await.unwrap();
    q
}

async fn turn_now(q: &Queue<RedisExecutor>, url: &str, lease: Option<&LeaseHandle>) -> bool {
    q.wait_host_turn(url, lease, Duration::ZERO).await.unwrap()
}

#[tokio::test]
async fn a_turn_waits_for_the_hosts_delay_and_moves_its_next_lease() {
    let q = seeded("turn-spacing", 1000, &["http://b.com/1", "http://b.com/2"]).await;
    let first = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);

    // leased at 0: the host's next request may start at 1000, a turn included
    q.set_fixed_clock(Some(T0 + 999));
    assert!(!turn_now(&q, "http://b.com/moved", None).await);
    q.set_fixed_clock(Some(T0 + 1000));
    assert!(turn_now(&q, "http://b.com/moved", None).await);
    // the turn took 1000: the next turn and the next lease wait until 2000
    assert!(!turn_now(&q, "http://b.com/other", None).await);
    q.set_fixed_clock(Some(T0 + 1999));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(
        q.host_info("b.com").await.unwrap().held_until_ms,
        Some(T0 + 2000)
    );
    q.set_fixed_clock(Some(T0 + 2000));
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_turn_of_a_host_without_items_holds_items_seeded_during_its_delay() {
    let q = seeded("turn-empty", 500, &[]).await;
    assert!(turn_now(&q, "https://new.com/a", None).await);
    assert!(!turn_now(&q, "https://new.com/b", None).await);
    q.set_fixed_clock(Some(T0 + 10));
    q.seed(&items(&["https://new.com/c"]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 500));
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_full_host_gives_turns_only_to_its_own_lease() {
    let q = seeded(
        "turn-full",
        300,
        &["http://full.com/1", "http://full.com/2"],
    )
    .await;
    q.set_host_in_flight("full.com", Some(1)).await.unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert!(q.host_info("full.com").await.unwrap().full);

    // another fetch redirected here waits for a slot, however long ago the lease was
    q.set_fixed_clock(Some(T0 + 5000));
    assert!(!turn_now(&q, "http://full.com/x", None).await);
    // a redirect of the lease's own fetch runs in its slot, spaced by the delay
    assert!(turn_now(&q, "http://full.com/x", Some(&lease.handle())).await);
    assert!(!turn_now(&q, "http://full.com/y", Some(&lease.handle())).await);
    q.set_fixed_clock(Some(T0 + 5300));
    assert!(turn_now(&q, "http://full.com/y", Some(&lease.handle())).await);

    // the ack frees the slot at the turn's time + delay
    q.ack(&[lease.handle()]).await.unwrap();
    q.set_fixed_clock(Some(T0 + 5599));
    assert!(!turn_now(&q, "http://full.com/z", None).await);
    q.set_fixed_clock(Some(T0 + 5600));
    assert!(turn_now(&q, "http://full.com/z", None).await);
}

#[tokio::test]
async fn a_paused_host_gives_no_turn_until_resumed() {
    let q = seeded("turn-paused", 0, &["http://p.com/1"]).await;
    q.pause_host("p.com", None).await.unwrap();
    assert!(!turn_now(&q, "http://p.com/x", None).await);
    q.resume_host("p.com").await.unwrap();
    assert!(turn_now(&q, "http://p.com/x", None).await);
    // delay 0: turns never wait
    assert!(turn_now(&q, "http://p.com/x", None).await);
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_redirect_of_a_host_paced_after_the_answer_waits_its_delay_from_now() {
    let q = seeded("turn-answer", 400, &["http://slow.com/1"]).await;
    q.set_host_delay_after(
        "slow.com",
        Some(HostPacing {
            after: DelayAfter::Answer,
            factor: None,
        }),
    )
    .await
    .unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    // the 3xx answered at 2000: the hop waits 400 ms from then, not from the lease
    q.set_fixed_clock(Some(T0 + 2000));
    assert!(!turn_now(&q, "http://slow.com/2", Some(&lease.handle())).await);
    let started = std::time::Instant::now();
    assert!(
        q.wait_host_turn(
            "http://slow.com/2",
            Some(&lease.handle()),
            Duration::from_secs(5)
        )
        .await
        .unwrap()
    );
    assert!(started.elapsed() >= Duration::from_millis(390));
}

#[tokio::test]
async fn a_full_host_is_polled_until_a_slot_frees_or_the_timeout() {
    let q = std::sync::Arc::new(seeded("turn-poll", 0, &["http://f.com/1"]).await);
    q.set_host_in_flight("f.com", Some(1)).await.unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let started = std::time::Instant::now();
    assert!(
        !q.wait_host_turn("http://f.com/x", None, Duration::from_millis(450))
            .await
            .unwrap()
    );
    assert!(started.elapsed() >= Duration::from_millis(440));

    let waiter = {
        let q = std::sync::Arc::clone(&q);
        tokio::spawn(async move {
            q.wait_host_turn("http://f.com/x", None, Duration::from_secs(10))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    q.ack(&[lease.handle()]).await.unwrap();
    assert!(waiter.await.unwrap().unwrap());
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let q = seeded("turn-args", 0, &[]).await;
    assert!(matches!(
        q.wait_host_turn("not a url at all", None, Duration::ZERO)
            .await,
        Err(Error::InvalidItem { .. })
    ));
    assert!(matches!(
        q.wait_host_turn("http://a.com/", None, Duration::from_secs(2 * 86_400))
            .await,
        Err(Error::InvalidArgument(_))
    ));
}
