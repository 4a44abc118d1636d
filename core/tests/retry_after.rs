//! A nack with the host's Retry-After holds the retry and the host at least that long (seconds
//! or an HTTP-date, by the Redis clock), with or without the adaptive slow-down.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

fn nack_after(lease: &Lease, retry_after: &str, rate_limited: bool) -> (LeaseHandle, NackOptions) {
    (
        lease.handle(),
        NackOptions {
            retry_after: Some(RetryAfter::parse(retry_after).unwrap()),
            rate_limited,
            ..Default::default()
        },
    )
}

fn hosts_of(leases: &[Lease]) -> Vec<&str> {
    leases.iter().map(|l| l.host.as_str()).collect()
}

#[tokio::test]
async fn retry_after_seconds_holds_the_item_and_its_host() {
    let q = open(
        "retry-after",
        Config {
            host_delay: Duration::from_secs(1),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2", "http://b.com/1"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&first), ["a.com", "b.com"]);
    q.ack(&[first[1].handle()]).await.unwrap();
    let outcome = q
        .nack(&[nack_after(&first[0], "120", false)])
        .await
        .unwrap();
    assert_eq!(outcome, [NackOutcome::Retried]);
    let info = q.host_info("a.com").await.unwrap();
    assert_eq!(
        (info.held_until_ms, info.adaptive_extra_ms),
        (Some(T0 + 120_000), 0)
    );
    // the host's delay (1 s) has long passed; its Retry-After has not
    q.set_fixed_clock(Some(T0 + 119_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 120_000));
    let again = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&again), ["a.com"]);
    // and the retried item itself waited as long
    assert_eq!(q.stats().await.unwrap().delayed, 0);
}

#[tokio::test]
async fn an_http_date_holds_until_then_and_the_adaptive_slow_down_still_grows() {
    let q = open("retry-after-date", fixed_clock_config()).await;
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(1, Duration::ZERO).await.unwrap();
    // T0 is 2027-01-15T08:00:00Z; the host asks for 08:05:00
    let date = "Fri, 15 Jan 2027 08:05:00 GMT";
    assert_eq!(
        RetryAfter::parse(date).unwrap(),
        RetryAfter::At(T0 + 300_000)
    );
    q.nack(&[nack_after(&first[0], date, true)]).await.unwrap();
    let info = q.host_info("a.com").await.unwrap();
    assert_eq!(info.held_until_ms, Some(T0 + 300_000));
    assert_eq!(
        info.adaptive_extra_ms, 1000,
        "rate limited: the adaptive delay grows as before"
    );
    q.set_fixed_clock(Some(T0 + 299_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 300_000));
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);

    // a date already past holds nothing more than the nack would
    let q = open("retry-after-past", fixed_clock_config()).await;
    q.seed(
        &items(&["http://p.com/1", "http://p.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(1, Duration::ZERO).await.unwrap();
    q.nack(&[nack_after(
        &first[0],
        "Thu, 01 Jan 1970 00:00:00 GMT",
        false,
    )])
    .await
    .unwrap();
    assert_eq!(q.host_info("p.com").await.unwrap().held_until_ms, None);
    assert_eq!(
        hosts_of(&q.lease(10, Duration::ZERO).await.unwrap()),
        ["p.com"]
    );
}

#[tokio::test]
async fn a_full_host_whose_slot_frees_still_waits_out_a_retry_after() {
    let q = open(
        "retry-after-full",
        Config {
            host_in_flight: 1,
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&["http://f.com/1", "http://f.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert!(q.host_info("f.com").await.unwrap().full);
    q.nack(&[nack_after(&first[0], "60", false)]).await.unwrap();
    let info = q.host_info("f.com").await.unwrap();
    assert_eq!((info.full, info.held_until_ms), (false, Some(T0 + 60_000)));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 60_000));
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 1);
}

#[tokio::test]
async fn retry_after_in_each_style_and_bad_values_are_refused() {
    let snake = crawlq::binding::json::nack_options_from_json(
        &serde_json::json!({"retry_after": 2.5}),
        Style::Snake,
    )
    .unwrap();
    assert_eq!(
        snake.retry_after,
        Some(RetryAfter::Delay(Duration::from_millis(2500)))
    );
    let header = crawlq::binding::json::nack_options_from_json(
        &serde_json::json!({"retryAfter": "30"}),
        Style::Camel,
    )
    .unwrap();
    assert_eq!(
        header.retry_after,
        Some(RetryAfter::Delay(Duration::from_secs(30)))
    );
    let ms = crawlq::binding::json::nack_options_from_json(
        &serde_json::json!({"retryAfterMs": 1500}),
        Style::Camel,
    )
    .unwrap();
    assert_eq!(
        ms.retry_after,
        Some(RetryAfter::Delay(Duration::from_millis(1500)))
    );
    for (bad, style) in [
        (serde_json::json!({"retry_after": "soon"}), Style::Snake),
        (serde_json::json!({"retry_after": -1}), Style::Snake),
        (serde_json::json!({"retryAfter": 30}), Style::Camel),
        (
            serde_json::json!({"retryAfter": "30", "retryAfterMs": 30}),
            Style::Camel,
        ),
    ] {
        let err = crawlq::binding::json::nack_options_from_json(&bad, style).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad}: {err}");
    }
}

/// A Retry-After longer than `retry_after_max` (seconds or a date) holds the host and the retry
/// that long; 0 takes it whole; the default is a day.
#[tokio::test]
async fn a_retry_after_longer_than_retry_after_max_is_taken_as_the_max() {
    assert_eq!(
        Config::default().retry_after_max,
        Duration::from_secs(86_400)
    );
    let capped = open(
        "retry-after-max",
        Config {
            retry_after_max: Duration::from_secs(600),
            ..fixed_clock_config()
        },
    )
    .await;
    capped
        .seed(
            &items(&["http://a.com/1", "http://b.com/1", "http://c.com/1"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    let leases = capped.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(hosts_of(&leases), ["a.com", "b.com", "c.com"]);
    // ten years in seconds; a date two hours on; a date within the cap
    let outcome = capped
        .nack(&[
            nack_after(&leases[0], "315360000", false),
            nack_after(&leases[1], "Fri, 15 Jan 2027 10:00:00 GMT", true),
            nack_after(&leases[2], "Fri, 15 Jan 2027 08:05:00 GMT", false),
        ])
        .await
        .unwrap();
    assert_eq!(outcome, [NackOutcome::Retried; 3]);
    for (host, held) in [("a.com", 600_000), ("b.com", 600_000), ("c.com", 300_000)] {
        let info = capped.host_info(host).await.unwrap();
        assert_eq!(info.held_until_ms, Some(T0 + held), "{host}");
    }
    capped.set_fixed_clock(Some(T0 + 599_999));
    assert_eq!(
        hosts_of(&capped.lease(10, Duration::ZERO).await.unwrap()),
        ["c.com"]
    );
    capped.set_fixed_clock(Some(T0 + 600_000));
    let due = capped.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        hosts_of(&due),
        ["a.com", "b.com"],
        "the retries waited the cap"
    );

    let uncapped = open(
        "retry-after-max-0",
        Config {
            retry_after_max: Duration::ZERO,
            ..fixed_clock_config()
        },
    )
    .await;
    uncapped
        .seed(&items(&["http://a.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    let lease = uncapped.lease(1, Duration::ZERO).await.unwrap();
    uncapped
        .nack(&[nack_after(&lease[0], "315360000", false)])
        .await
        .unwrap();
    let info = uncapped.host_info("a.com").await.unwrap();
    assert_eq!(info.held_until_ms, Some(T0 + 315_360_000_000));
}
