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
    let both = crawlq::binding::json::ack_answer_from_json(
        &serde_json::json!({"revisit_after": 1, "revisit_at": 2}),
        Style::Snake,
    )
    .unwrap_err();
    assert!(both.to_string().contains("not both"), "{both}");
    check_invariants(&test_url(), &q).await;
}

/// Every page of list_hosts until the cursor runs out.
async fn all_hosts(q: &Queue<RedisExecutor>, limit: usize) -> Vec<HostCounts> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = q.list_hosts(cursor.as_deref(), limit).await.unwrap();
        assert!(page.hosts.len() <= limit);
        out.extend(page.hosts);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

#[tokio::test]
async fn listed_hosts_have_exact_counts_in_backlog_order_over_pages() {
    let q = open("hosts-ls", polite(1000)).await;
    let mut seed = urls_of_host("big.example", 6);
    seed.extend(urls_of_host("mid.example", 3));
    seed.push(SeedItem::from("https://mid.example/later").with_delay(Duration::from_secs(60)));
    seed.extend(urls_of_host("one.example", 1));
    seed.extend(urls_of_host("also-one.example", 1));
    let report = q.seed(&seed, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 12);
    // one lease per host (politeness 1 s): big 1 leased, mid 1 to dead, one.example acked
    let leased = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leased.len(), 4);
    for l in &leased {
        match l.host.as_str() {
            "mid.example" => {
                let dead = NackOptions {
                    retry: false,
                    ..Default::default()
                };
                q.nack(&[(l.handle(), dead)]).await.unwrap();
            }
            "one.example" | "also-one.example" => {
                q.ack(&[l.handle()]).await.unwrap();
            }
            _ => {}
        }
    }
    q.pause_host("mid.example", None).await.unwrap();

    let hosts = all_hosts(&q, 1).await;
    let rows: Vec<(&str, u64, u64, u64, u64, u64)> = hosts
        .iter()
        .map(|h| {
            (
                h.host.as_str(),
                h.items,
                h.ready,
                h.delayed,
                h.leased,
                h.dead,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("big.example", 6, 5, 0, 1, 0),
            ("mid.example", 4, 2, 1, 0, 1),
        ],
        "hosts that hold nothing are not listed; most items first"
    );
    let big = &hosts[0];
    assert!(big.next_due_ms.is_some() && !big.paused);
    let mid = &hosts[1];
    assert!(mid.paused && mid.paused_until_ms.is_none() && mid.next_due_ms.is_none());
    assert_eq!(q.list_hosts(None, 10).await.unwrap().total, 2);
    check_invariants(&test_url(), &q).await;

    // the dead letter purged: mid.example keeps its ready and delayed items
    q.purge_dead().await.unwrap();
    let page = q.list_hosts(None, 10).await.unwrap();
    assert_eq!((page.hosts[1].items, page.hosts[1].dead), (3, 0));
    assert!(page.cursor.is_none());
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn list_hosts_rejects_a_bad_limit_or_cursor() {
    let q = open("hosts-ls-bad", config()).await;
    for limit in [0, 1001] {
        assert!(matches!(
            q.list_hosts(None, limit).await,
            Err(Error::InvalidArgument(_))
        ));
    }
    for cursor in ["x", "1.2.3.4.5.6.7.8.9", "-1"] {
        let err = q.list_hosts(Some(cursor), 10).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{cursor}: {err}");
    }
    assert_eq!(q.list_hosts(None, 10).await.unwrap().hosts, vec![]);
}

#[tokio::test]
async fn listing_100k_hosts_pages_through_them_all_with_every_call_under_25_ms() {
    // its own server: the slow log must only hold this test's calls
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), &unique("hosts-100k"), config())
        .await
        .unwrap();
    let batch: Vec<SeedItem> = (0..100_000)
        .map(|i| format!("https://h{i}.example/").into())
        .collect();
    for chunk in batch.chunks(10_000) {
        q.seed(chunk, &SeedOptions::default()).await.unwrap();
    }
    // a few busier hosts, several priorities each
    let mut busy = Vec::new();
    for i in 0..50 {
        for p in 0..20 {
            busy.push(SeedItem::from(format!("https://h{i}.example/p{p}")).with_priority(p));
        }
    }
    q.seed(&busy, &SeedOptions::default()).await.unwrap();
    server.cli(&["CONFIG", "SET", "slowlog-log-slower-than", "25000"]);

    // A call doing unbounded work is slow in every pass; on 2 shared cores the other tests of
    // this binary can hold the server off the CPU in the middle of one call, so a pass with a
    // slow call is looked at once more before it fails.
    let mut slow = String::new();
    for _ in 0..2 {
        server.cli(&["SLOWLOG", "RESET"]);
        let hosts = all_hosts(&q, 1000).await;
        assert_eq!(hosts.len(), 100_000);
        let mut names: Vec<&str> = hosts.iter().map(|h| h.host.as_str()).collect();
        assert!(hosts[..50].iter().all(|h| h.items == 21 && h.ready == 21));
        assert!(hosts.windows(2).all(|w| w[0].items >= w[1].items));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 100_000, "every host exactly once");
        slow = server.cli(&["SLOWLOG", "GET", "100"]);
        if !slow.contains("hosts_list") {
            break;
        }
    }
    assert!(
        !slow.contains("hosts_list"),
        "a hosts_list call took over 25 ms of Redis time in two passes:\n{slow}"
    );
    let calls = server.cli(&["INFO", "commandstats"]);
    assert!(
        calls.contains("fcall") || calls.contains("evalsha"),
        "{calls}"
    );
}

#[tokio::test]
async fn deleting_a_host_removes_its_items_everywhere_and_its_leases_answer_lost() {
    let q = open("host-rm", polite(0)).await;
    let mut seed = urls_of_host("gone.example", 8);
    seed.push(SeedItem::from("https://gone.example/later").with_delay(Duration::from_secs(60)));
    seed.push(SeedItem::from("https://gone.example/urgent").with_priority(5));
    seed.extend(urls_of_host("kept.example", 3));
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    q.set_host_budget("gone.example", Some(100)).await.unwrap();
    let leased = q.lease(4, Duration::ZERO).await.unwrap();
    let gone_leases: Vec<LeaseHandle> = leased
        .iter()
        .filter(|l| l.host == "gone.example")
        .map(|l| l.handle())
        .collect();
    assert!(!gone_leases.is_empty());
    // one of the host's items to dead letters
    let one = q.lease(10, Duration::ZERO).await.unwrap();
    let dead_one = one.iter().find(|l| l.host == "gone.example").unwrap();
    q.nack(&[(
        dead_one.handle(),
        NackOptions {
            retry: false,
            ..Default::default()
        },
    )])
    .await
    .unwrap();
    let kept_leases: Vec<LeaseHandle> = leased
        .iter()
        .chain(&one)
        .filter(|l| l.host == "kept.example")
        .map(|l| l.handle())
        .collect();
    q.set_host_delay("gone.example", Some(Duration::from_millis(5)))
        .await
        .unwrap();
    let before = q.stats().await.unwrap();

    let gone = q
        .delete_host("https://gone.example/anything", false)
        .await
        .unwrap();
    assert_eq!(gone.host, "gone.example");
    assert_eq!(gone.removed(), 10);
    assert_eq!((gone.delayed, gone.dead, gone.left), (1, 1, 0));
    assert_eq!(
        gone.leased as usize,
        gone_leases.len() + one.iter().filter(|l| l.host == "gone.example").count() - 1
    );
    let after = check_invariants(&test_url(), &q).await;
    assert_eq!(after.seen, before.seen, "seen entries are kept");
    assert_eq!(after.done, before.done);
    // the removed leases answer lost: nothing deleted is acked as done
    assert!(q.ack(&gone_leases).await.unwrap().iter().all(|ok| !ok));
    assert_eq!(q.stats().await.unwrap().done, before.done);
    assert_eq!(
        q.ack(&kept_leases).await.unwrap(),
        vec![true; kept_leases.len()]
    );
    let info = q.host_info("gone.example").await.unwrap();
    assert_eq!(
        (info.ready, info.paused, info.budget, info.delay_override_ms),
        (0, false, None, None),
        "its settings are gone too"
    );
    let listed = q.list_hosts(None, 10).await.unwrap();
    assert!(listed.hosts.iter().all(|h| h.host != "gone.example"));
    // seen: seeding it again is a duplicate unless forced
    let again = q
        .seed(&urls_of_host("gone.example", 1), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(again.duplicates, 1);
    check_invariants(&test_url(), &q).await;
    // asked to, the removed items' URLs leave the seen set too (exact seen count)
    q.seed(&urls_of_host("forget.example", 3), &SeedOptions::default())
        .await
        .unwrap();
    let gone = q.delete_host("forget.example", true).await.unwrap();
    assert_eq!((gone.removed(), gone.forgotten), (3, 3));
    let seen = check_invariants(&test_url(), &q).await.seen;
    let again = q
        .seed(&urls_of_host("forget.example", 3), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(again.added, 3, "forgotten URLs are new again");
    assert_eq!(check_invariants(&test_url(), &q).await.seen, seen + 3);
    // a host of 1,200 items goes in calls of at most 500, each reported as it ends
    q.seed(
        &urls_of_host("large.example", 1200),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let reports = std::sync::Mutex::new(Vec::new());
    let gone = q
        .delete_host_with_progress("https://large.example/", true, |so_far| {
            reports.lock().unwrap().push(so_far.clone());
        })
        .await
        .unwrap();
    assert_eq!((gone.removed(), gone.forgotten), (1200, 1200));
    let reports = reports.into_inner().unwrap();
    assert!(reports.len() >= 3, "{} calls reported", reports.len());
    assert!(
        reports
            .windows(2)
            .all(|w| w[0].removed() <= w[1].removed() && w[0].forgotten <= w[1].forgotten),
        "the figures only grow"
    );
    assert!(reports.iter().all(|r| r.host == "large.example"));
    assert_eq!(
        reports.last(),
        Some(&gone),
        "the last figures are the total"
    );
    assert_eq!(check_invariants(&test_url(), &q).await.seen, seen + 3);
    // a host that holds nothing: nothing to remove
    assert_eq!(
        q.delete_host("never.example", false)
            .await
            .unwrap()
            .removed(),
        0
    );
    assert!(matches!(
        q.delete_host("not a host/", false).await,
        Err(Error::InvalidItem { .. })
    ));
}

#[tokio::test]
async fn deleting_a_host_finds_its_delayed_items_however_their_records_spell_it() {
    // the walk of `delayed` lets Redis pass over records that do not spell the host, then reads
    // each it kept: a host with a Redis glob's pattern characters (an IPv6 address), one kept in
    // the record's `host` field (a URL with user info spells another), and others that hold
    // the host's name where it is not their host
    let q = open("host-rm-delayed", polite(0)).await;
    let later = |url: &str| SeedItem::from(url).with_delay(Duration::from_secs(60));
    let seed = vec![
        later("http://[::1]:8080/a"),
        later("http://[::1]/b"),
        later("http://[::2]/c"),
        later("http://user:pw@spelled.example/d"),
        later("https://other.example/spelled.example"),
        later("https://www.spelled.example/e"),
        "http://[::1]/now".into(),
    ];
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    let v6 = q.delete_host("http://[::1]/", false).await.unwrap();
    assert_eq!((v6.host.as_str(), v6.delayed, v6.ready), ("[::1]", 2, 1));
    let user_info = q.delete_host("spelled.example", false).await.unwrap();
    assert_eq!((user_info.delayed, user_info.ready), (1, 0));
    assert_eq!(q.stats().await.unwrap().delayed, 3);
    check_invariants(&test_url(), &q).await;
    for host in ["[::2]", "other.example", "www.spelled.example"] {
        assert_eq!(
            q.delete_host(host, false).await.unwrap().delayed,
            1,
            "{host}"
        );
    }
    assert_eq!(q.stats().await.unwrap().delayed, 0);
}

#[tokio::test]
async fn deleting_a_host_finds_its_dead_letters_however_their_records_spell_it() {
    // as for delayed items: a host with a Redis glob's pattern characters, one kept in the
    // record's `host` field, others that hold the host's name where it is not their host, and
    // reasons that spell the hosts (a reason spelling a host does not make it the host's)
    let q = open("host-rm-dead", polite(0)).await;
    let seed: Vec<SeedItem> = [
        "http://[::1]:8080/a",
        "http://[::1]/b",
        "http://[::2]/c",
        "http://user:pw@spelled.example/d",
        "https://other.example/spelled.example",
        "https://www.spelled.example/e",
    ]
    .into_iter()
    .map(SeedItem::from)
    .collect();
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    let mut leased = Vec::new();
    while leased.len() < seed.len() {
        let got = q.lease(10, Duration::from_secs(1)).await.unwrap();
        assert!(!got.is_empty(), "{} of {} leased", leased.len(), seed.len());
        leased.extend(got);
    }
    dead_letter(&q, &leased, |_| {
        "gone from [::1] and spelled.example".into()
    })
    .await;
    q.seed(&["http://[::1]/now".into()], &SeedOptions::default())
        .await
        .unwrap();
    let v6 = q.delete_host("http://[::1]/", false).await.unwrap();
    assert_eq!((v6.host.as_str(), v6.dead, v6.ready), ("[::1]", 2, 1));
    let user_info = q.delete_host("spelled.example", false).await.unwrap();
    assert_eq!((user_info.dead, user_info.ready), (1, 0));
    assert_eq!(q.stats().await.unwrap().dead, 3);
    check_invariants(&test_url(), &q).await;
    for host in ["[::2]", "other.example", "www.spelled.example"] {
        assert_eq!(q.delete_host(host, false).await.unwrap().dead, 1, "{host}");
    }
    assert_eq!(q.stats().await.unwrap().dead, 0);
    assert_eq!(q.dead(10, 0).await.unwrap().total, 0);
}

#[tokio::test]
async fn deleting_a_host_mid_crawl_keeps_every_counter_exact() {
    let q = std::sync::Arc::new(open("host-rm-live", polite(0)).await);
    let mut seed = Vec::new();
    for h in 0..20 {
        seed.extend(urls_of_host(&format!("h{h}.example"), 60));
    }
    let report = q.seed(&seed, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 1200);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (q, stop) = (q.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            // (acked, acks of a deleted host's item that came back as done)
            let (mut acked, mut acked_deleted) = (0u64, 0u64);
            let mut n = w;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let leases = q.lease(8, Duration::ZERO).await.unwrap();
                if leases.is_empty() {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                for l in leases {
                    n += 1;
                    if n % 7 == 0 {
                        let retry = NackOptions {
                            delay: Some(Duration::from_millis(5)),
                            ..Default::default()
                        };
                        q.nack(&[(l.handle(), retry)]).await.unwrap();
                    } else if q.ack(&[l.handle()]).await.unwrap()[0] {
                        acked += 1;
                        if l.host == "h3.example" {
                            acked_deleted += 1;
                        }
                    }
                }
            }
            (acked, acked_deleted)
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = q.list_hosts(None, 100).await.unwrap();
    let h3_before = before
        .hosts
        .iter()
        .find(|h| h.host == "h3.example")
        .map_or(0, |h| h.items);
    let gone = q.delete_host("h3.example", false).await.unwrap();
    let stats_at_delete = q.stats().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut acked_deleted_after = 0;
    let mut acked = 0;
    for w in workers {
        let (a, d) = w.await.unwrap();
        acked += a;
        acked_deleted_after += d;
    }
    let stats = check_invariants(&test_url(), &q).await;
    assert!(gone.removed() > 0 && gone.removed() <= h3_before);
    assert_eq!(gone.left, 0);
    assert_eq!(
        stats.done, acked,
        "done counts exactly the acks that succeeded"
    );
    // every item is done, queued, leased or dead, or was removed with its host
    assert_eq!(
        stats.done + stats.pending + stats.leased + stats.dead + gone.removed(),
        1200
    );
    let h3_done_at_delete = acked_deleted_after;
    assert!(
        h3_done_at_delete <= 60 - gone.removed(),
        "acks of h3 items after the delete succeeded"
    );
    assert!(stats_at_delete.done <= stats.done);
    assert!(
        q.list_hosts(None, 100)
            .await
            .unwrap()
            .hosts
            .iter()
            .all(|h| h.host != "h3.example")
    );
}

/// While a host is being deleted, resuming or pausing it changes nothing (the deletion holds
/// it, and its info says so); a deletion whose client died before it finished holds the host
/// until `delete_host` runs again, which finishes it.
#[tokio::test]
async fn a_deletion_holds_its_host_against_resumes_and_an_interrupted_one_is_finished_by_the_next()
{
    let q = open("host-rm-hold", polite(0)).await;
    q.seed(&urls_of_host("held.example", 5), &SeedOptions::default())
        .await
        .unwrap();
    let layout = q.layout().await.unwrap();
    let ops = layout.shard(layout.of_host("held.example"));
    // the first step of a deletion whose client then dies
    let reply = q
        .executor()
        .eval(ops.host_delete("held.example", "leases", "0", 2, false, "died"))
        .await
        .unwrap();
    let (next, _, _) = ops.decode_host_delete(reply).unwrap();
    assert!(next.is_some(), "the deletion has steps left");
    let info = q.resume_host("held.example").await.unwrap();
    assert!(info.deleting && info.paused, "{info:?}");
    assert_eq!(info.paused_until_ms, None, "held until the deletion ends");
    let info = q
        .pause_host("held.example", Some(Duration::from_millis(5)))
        .await
        .unwrap();
    assert_eq!((info.deleting, info.paused_until_ms), (true, None));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(q.lease(5, Duration::ZERO).await.unwrap().is_empty());
    check_invariants(&test_url(), &q).await;
    // the next deletion finishes the host, settings and hold included
    let gone = q.delete_host("held.example", false).await.unwrap();
    assert_eq!((gone.removed(), gone.left), (5, 0));
    let info = q.host_info("held.example").await.unwrap();
    assert_eq!((info.deleting, info.paused, info.ready), (false, false, 0));
    // seeded again (forced), it is leased as any host
    let again: Vec<SeedItem> = urls_of_host("held.example", 1)
        .into_iter()
        .map(|i| i.with_force(true))
        .collect();
    assert_eq!(
        q.seed(&again, &SeedOptions::default()).await.unwrap().added,
        1
    );
    assert_eq!(q.lease(5, Duration::ZERO).await.unwrap().len(), 1);
    check_invariants(&test_url(), &q).await;
}

/// `peek_host` lists a host's ready items in the order its leases take them (priority, then
/// age), from an offset, paused or not, without the delayed ones; leasing them one by one
/// takes exactly that order.
#[tokio::test]
async fn a_hosts_ready_items_are_peeked_in_the_order_its_leases_take_them() {
    let q = open("host-peek", polite(0)).await;
    let mut seed = Vec::new();
    for (url, priority) in [
        ("http://a.com/1", 0),
        ("http://a.com/2", 5),
        ("http://a.com/3", 0),
        ("http://a.com/4", 5),
        ("http://a.com/5", -1),
        ("http://b.com/1", 9),
    ] {
        seed.push(SeedItem::from(url).with_priority(priority));
    }
    q.seed(&seed, &SeedOptions::default()).await.unwrap();
    let later = SeedOptions {
        delay: Duration::from_secs(60),
        ..SeedOptions::default()
    };
    q.seed(&items(&["http://a.com/later"]), &later)
        .await
        .unwrap();
    let peeked = |items: Vec<wire::StoredItem>| -> Vec<String> {
        items.into_iter().map(|i| i.url.unwrap()).collect()
    };
    let order = [
        "http://a.com/2",
        "http://a.com/4",
        "http://a.com/1",
        "http://a.com/3",
        "http://a.com/5",
    ];
    assert_eq!(peeked(q.peek_host("a.com", 10, 0).await.unwrap()), order);
    assert_eq!(
        peeked(q.peek_host("http://a.com/any", 3, 1).await.unwrap()),
        order[1..4],
        "a URL names its host; the offset skips, the limit cuts"
    );
    assert_eq!(
        peeked(q.peek_host("a.com", 10, 4).await.unwrap()),
        order[4..]
    );
    assert!(q.peek_host("a.com", 10, 5).await.unwrap().is_empty());
    assert!(q.peek_host("nowhere.com", 10, 0).await.unwrap().is_empty());
    assert!(q.peek_host("a.com", 0, 0).await.unwrap().is_empty());
    assert!(matches!(
        q.peek_host("a.com", 251, 0).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        q.peek_host("not a host", 1, 0).await,
        Err(Error::InvalidItem { .. } | Error::InvalidArgument(_))
    ));
    q.pause_host("a.com", None).await.unwrap();
    assert_eq!(
        peeked(q.peek_host("a.com", 10, 0).await.unwrap()),
        order,
        "a paused host's items are listed"
    );
    q.resume_host("a.com").await.unwrap();
    let before = queue_digest(&test_url(), &q).await;
    let ids: Vec<String> = q
        .peek_host("a.com", 10, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(
        queue_digest(&test_url(), &q).await,
        before,
        "peeking writes nothing"
    );

    // b.com (priority 9) goes first; then a.com's, one lease at a time, in the peeked order
    let mut leased = Vec::new();
    while let Some(lease) = q.lease(1, Duration::ZERO).await.unwrap().pop() {
        if lease.host == "a.com" {
            leased.push(lease.id.clone());
        }
        q.ack(&[lease.handle()]).await.unwrap();
    }
    assert_eq!(leased, ids);
    check_invariants(&test_url(), &q).await;
}

/// `purge_dead_ids` deletes the named dead letters only (a flag per id; one named twice, or
/// requeued meanwhile, is not deleted), lowers their hosts' counts exactly, and they stay seen.
#[tokio::test]
async fn named_dead_letters_are_purged_and_the_others_kept() {
    let q = open("purge-ids", polite(0)).await;
    let urls = [
        "http://x.com/1",
        "http://x.com/2",
        "http://x.com/3",
        "http://y.com/1",
        "http://y.com/2",
    ];
    q.seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    let mut leases = Vec::new();
    while leases.len() < urls.len() {
        leases.extend(q.lease(10, Duration::ZERO).await.unwrap());
    }
    let failed: Vec<_> = leases
        .iter()
        .map(|l| {
            let options = NackOptions {
                retry: false,
                ..NackOptions::default()
            };
            (l.handle(), options)
        })
        .collect();
    q.nack(&failed).await.unwrap();
    let dead = q.dead(10, 0).await.unwrap().items;
    let id_of = |url: &str| {
        dead.iter()
            .find(|d| d.url.as_deref() == Some(url))
            .unwrap()
            .id
            .clone()
    };
    let requeued = id_of("http://y.com/2");
    assert_eq!(
        q.requeue_dead_ids(std::slice::from_ref(&requeued))
            .await
            .unwrap(),
        [true]
    );
    let flags = q
        .purge_dead_ids(&[
            id_of("http://x.com/1"),
            requeued,
            id_of("http://y.com/1"),
            id_of("http://x.com/1"),
        ])
        .await
        .unwrap();
    assert_eq!(flags, [true, false, true, false]);
    let left: Vec<String> = q
        .dead(10, 0)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|d| d.url.unwrap())
        .collect();
    assert_eq!(left, ["http://x.com/2", "http://x.com/3"]);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.dead, stats.pending, stats.seen), (2, 1, 5));
    let hosts = all_hosts(&q, 10).await;
    let counts: Vec<(&str, u64, u64)> = hosts
        .iter()
        .map(|h| (h.host.as_str(), h.items, h.dead))
        .collect();
    assert_eq!(counts, [("x.com", 2, 2), ("y.com", 1, 0)]);
    assert!(q.purge_dead_ids(&[]).await.unwrap().is_empty());
    check_invariants(&test_url(), &q).await;
}
