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

fn urls_of_host(host: &str, n: usize) -> Vec<SeedItem> {
    (0..n)
        .map(|i| format!("https://{host}/page/{i}").into())
        .collect()
}

#[tokio::test]
async fn a_host_budget_queues_up_to_its_size_and_reports_the_rest_per_item() {
    let q = open("budget", config()).await;
    let info = q
        .set_host_budget("https://B.example/x", Some(10))
        .await
        .unwrap();
    assert_eq!(
        (
            info.host.as_str(),
            info.budget,
            info.budget_used,
            info.budget_remaining()
        ),
        ("b.example", Some(10), 0, Some(10))
    );
    // 25 URLs of the host, one of them twice, and 3 of another host without a budget
    let mut batch = urls_of_host("b.example", 25);
    batch.insert(3, "https://b.example/page/0".into());
    batch.extend(urls_of_host("free.example", 3));
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!((report.added, report.duplicates), (13, 1));
    assert_eq!(report.invalid.len(), 15);
    let refused: Vec<usize> = report.invalid.iter().map(|i| i.index).collect();
    assert_eq!(
        refused,
        (11..26).collect::<Vec<_>>(),
        "the URLs past the 10th, by index"
    );
    let first = &report.invalid[0];
    assert_eq!(first.reason.code(), "budget_exhausted");
    assert_eq!(first.input, "https://b.example/page/10");
    assert!(
        first.reason.to_string().contains("b.example"),
        "{}",
        first.reason
    );
    assert!(report.ids[11].is_none() && report.ids[10].is_some());
    let info = q.host_info("b.example").await.unwrap();
    assert_eq!(
        (info.ready, info.budget_used, info.budget_remaining()),
        (10, 10, Some(0))
    );

    // refused URLs were not marked seen: a bigger budget lets them in, the rest stay out
    q.set_host_budget("b.example", Some(20)).await.unwrap();
    let again = q
        .seed(&urls_of_host("b.example", 25), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (again.added, again.duplicates, again.invalid.len()),
        (10, 10, 5)
    );
    // a forced re-add of a finished URL neither counts nor is refused
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    q.ack(&handles(&leases)).await.unwrap();
    let forced = SeedOptions {
        force: true,
        ..Default::default()
    };
    let url = leases[0].url.clone().unwrap();
    assert_eq!(q.seed(&items(&[&url]), &forced).await.unwrap().added, 1);
    assert_eq!(q.host_info("b.example").await.unwrap().budget_used, 20);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!(stats.pending, 20 + 3);
}

#[tokio::test]
async fn the_default_budget_applies_to_hosts_without_their_own() {
    let q = open("budget-default", config()).await;
    assert_eq!(q.default_host_budget().await.unwrap(), None);
    q.set_default_host_budget(Some(2)).await.unwrap();
    assert_eq!(q.default_host_budget().await.unwrap(), Some(2));
    q.set_host_budget("big.example", Some(5)).await.unwrap();
    let mut batch = urls_of_host("small.example", 4);
    batch.extend(urls_of_host("big.example", 6));
    batch.extend(urls_of_host("other.example", 3));
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!((report.added, report.invalid.len()), (2 + 5 + 2, 2 + 1 + 1));
    assert!(
        report
            .invalid
            .iter()
            .all(|i| i.reason.code() == "budget_exhausted")
    );
    // back to the default: big.example has used 5 of 2
    let info = q.set_host_budget("big.example", None).await.unwrap();
    assert_eq!((info.budget, info.budget_remaining()), (Some(2), Some(0)));
    // no budget at all: everything comes in
    q.set_default_host_budget(None).await.unwrap();
    let info = q.host_info("small.example").await.unwrap();
    assert_eq!((info.budget, info.budget_used), (None, 2));
    let rest = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!((rest.added, rest.duplicates, rest.invalid.len()), (4, 9, 0));
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn host_budgets_reject_bad_hosts() {
    let q = open("budget-errors", config()).await;
    let err = q.set_host_budget("ex ample", Some(1)).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ITEM");
    assert_eq!(q.default_host_budget().await.unwrap(), None);
}

#[tokio::test]
async fn an_acked_url_with_a_revisit_comes_back_once_on_time_and_is_known_meanwhile() {
    let q = open("revisit", fixed_clock_config()).await;
    let seeded = SeedItem {
        input: "https://r.example/page".into(),
        priority: Some(3),
        payload: Some(serde_json::json!({"depth": 2})),
        ..Default::default()
    };
    q.seed(std::slice::from_ref(&seeded), &SeedOptions::default())
        .await
        .unwrap();
    let first = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(
        q.ack_revisit(&handles(&first), Duration::from_secs(5))
            .await
            .unwrap(),
        vec![true]
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!(
        (stats.revisits, stats.delayed, stats.done, stats.leased),
        (1, 1, 1, 0)
    );
    // known meanwhile: a seed is a duplicate, forced or not
    let forced = SeedOptions {
        force: true,
        ..Default::default()
    };
    for opts in [SeedOptions::default(), forced] {
        let report = q.seed(std::slice::from_ref(&seeded), &opts).await.unwrap();
        assert_eq!((report.added, report.duplicates), (0, 1));
    }
    q.set_fixed_clock(Some(T0 + 4_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 5_000));
    let again = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(again.len(), 1, "once");
    let lease = &again[0];
    assert_eq!(
        (lease.id.as_str(), lease.attempt, lease.priority),
        (first[0].id.as_str(), 1, 3)
    );
    assert_eq!(lease.payload, Some(serde_json::json!({"depth": 2})));
    assert_eq!(lease.enqueued_at_ms, T0, "queued again at the ack");
    assert_eq!(q.stats().await.unwrap().revisits, 0);
    // a plain ack finishes it: the URL is seen, not queued
    assert_eq!(q.ack(&handles(&again)).await.unwrap(), vec![true]);
    q.set_fixed_clock(Some(T0 + 60_000));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.done, stats.pending, stats.revisits), (2, 0, 0));
}

#[tokio::test]
async fn the_revisit_default_applies_to_every_ack_unless_a_call_says_otherwise() {
    let q = open(
        "revisit-default",
        Config {
            revisit_after: Duration::from_secs(60),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(
        &items(&["https://d.example/1", "https://d.example/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    q.answer(&Answer::Ack, &handles(&leases[..1]), true)
        .await
        .unwrap();
    q.answer(
        &Answer::Revisit(Duration::ZERO),
        &handles(&leases[1..]),
        true,
    )
    .await
    .unwrap();
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.revisits, stats.pending, stats.done), (1, 1, 2));
    // a stale lease is not revisited
    assert_eq!(
        q.ack_revisit(&handles(&leases), Duration::from_secs(1))
            .await
            .unwrap(),
        vec![false, false]
    );
    let err = q
        .ack_revisit(
            &handles(&leases),
            Duration::from_secs(101 * 365 * 24 * 3600),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    q.set_fixed_clock(Some(T0 + 60_000));
    let back = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].url.as_deref(), Some("https://d.example/1"));
}

#[tokio::test]
async fn a_revisit_at_a_time_comes_back_then_and_a_past_time_at_once() {
    let q = open("revisit-at", fixed_clock_config()).await;
    q.seed(
        &items(&["https://t.example/1", "https://t.example/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(
        q.ack_revisit_at(&handles(&leases[..1]), T0 + 3_000)
            .await
            .unwrap(),
        vec![true]
    );
    q.answer(
        &Answer::RevisitAt(T0 - 60_000),
        &handles(&leases[1..]),
        true,
    )
    .await
    .unwrap();
    let now = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&now), ["https://t.example/2"], "a past time: at once");
    q.set_fixed_clock(Some(T0 + 2_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 3_000));
    let later = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(urls(&later), ["https://t.example/1"]);
    let err = q.ack_revisit_at(&handles(&later), -1).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let both = style::ack_answer_from_json(
        &serde_json::json!({"revisit_after": 1, "revisit_at": 2}),
        Style::Snake,
    )
    .unwrap_err();
    assert!(both.to_string().contains("not both"), "{both}");
    check_invariants(&test_url(), &q).await;
}
