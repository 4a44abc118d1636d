//! Named crawls (docs/crawls.md): items seeded into a crawl are de-duplicated within it, share
//! their hosts' politeness with every other crawl, and are leased in turn with the other
//! crawls' items (fair queuing by tags given at seed time). Fixed clock where time matters.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

fn no_delay() -> Config {
    Config {
        host_delay: Duration::ZERO,
        ..fixed_clock_config()
    }
}

fn urls(host: &str, from: usize, n: usize) -> Vec<SeedItem> {
    (from..from + n)
        .map(|i| SeedItem::from(format!("http://{host}/{i}")))
        .collect()
}

/// Lease one at a time until nothing is leasable; each lease is acked.
async fn drain(q: &Queue<RedisExecutor>) -> Vec<Lease> {
    let mut out = Vec::new();
    loop {
        let got = q.lease(1, Duration::ZERO).await.unwrap();
        if got.is_empty() {
            return out;
        }
        q.ack(&handles(&got)).await.unwrap();
        out.extend(got);
    }
}

#[tokio::test]
async fn a_url_is_one_item_in_each_crawl() {
    let url = test_url();
    let q = open("crawl-dedupe", no_delay()).await;
    let one = items(&["http://a.com/x"]);
    for opts in [SeedOptions::default(), into("red"), into("blue")] {
        let report = q.seed(&one, &opts).await.unwrap();
        assert_eq!((report.added, report.duplicates), (1, 0), "{opts:?}");
    }
    for opts in [SeedOptions::default(), into("red"), into("blue")] {
        let report = q.seed(&one, &opts).await.unwrap();
        assert_eq!((report.added, report.duplicates), (0, 1), "{opts:?}");
    }
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.seen, stats.hosts), (3, 3, 1));
    let mut crawls: Vec<Option<String>> = drain(&q).await.into_iter().map(|l| l.crawl).collect();
    crawls.sort();
    assert_eq!(
        crawls,
        [None, Some("blue".to_string()), Some("red".to_string())]
    );
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.done, stats.seen), (0, 3, 3));
}

#[tokio::test]
async fn a_small_crawl_is_leased_in_turn_beside_a_large_one() {
    let url = test_url();
    // (one shard: a queue of several shares fairly within each shard, docs/crawls.md)
    let q = open(
        "crawl-fair",
        Config {
            shards: None,
            ..no_delay()
        },
    )
    .await;
    let hosts = ["a.com", "b.com", "c.com", "d.com"];
    for host in hosts {
        q.seed(&urls(host, 0, 100), &into("large")).await.unwrap();
    }
    // the large crawl runs alone for a while
    let first = q.lease(40, Duration::ZERO).await.unwrap();
    assert!(first.iter().all(|l| l.crawl.as_deref() == Some("large")));
    q.ack(&handles(&first)).await.unwrap();
    // a small crawl on the same hosts, seeded now, is not queued behind the 360 items left
    for host in hosts {
        q.seed(&urls(host, 0, 5), &into("small")).await.unwrap();
    }
    let next = q.lease(40, Duration::ZERO).await.unwrap();
    let small = next
        .iter()
        .filter(|l| l.crawl.as_deref() == Some("small"))
        .count();
    assert_eq!(
        small, 20,
        "the small crawl's 20 items within the next 40 leases"
    );
    // and on each host they alternate, the small crawl first (it had nothing queued there: it
    // goes next): it is never behind, and never more than one item ahead
    let mut ahead: std::collections::HashMap<&str, i64> = Default::default();
    for l in &next {
        let a = ahead.entry(l.host.as_str()).or_default();
        if *a == 0 {
            assert_eq!(
                l.crawl.as_deref(),
                Some("small"),
                "{}: the new crawl goes next",
                l.host
            );
        }
        *a += if l.crawl.as_deref() == Some("small") {
            1
        } else {
            -1
        };
        assert!(a.abs() <= 1, "{}: crawls not taken in turn", l.host);
    }
    q.ack(&handles(&next)).await.unwrap();
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn two_crawls_on_one_host_are_leased_at_its_delay_together() {
    let url = test_url();
    let q = open(
        "crawl-polite",
        Config {
            host_delay: Duration::from_millis(1000),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&urls("a.com", 0, 3), &into("one")).await.unwrap();
    q.seed(&urls("a.com", 0, 3), &into("two")).await.unwrap();
    let mut order = Vec::new();
    for step in 0..6 {
        let at = T0 + step * 1000;
        if step > 0 {
            q.set_fixed_clock(Some(at - 1));
            assert!(
                q.lease(10, Duration::ZERO).await.unwrap().is_empty(),
                "leased before the host's delay ({step})"
            );
        }
        q.set_fixed_clock(Some(at));
        let got = q.lease(10, Duration::ZERO).await.unwrap();
        assert_eq!(got.len(), 1, "one item of the host per delay ({step})");
        order.push(got[0].crawl.clone().unwrap());
        q.ack(&handles(&got)).await.unwrap();
    }
    assert_eq!(order, ["one", "two", "one", "two", "one", "two"]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!(stats.done, 6);
}

#[tokio::test]
async fn a_crawls_item_keeps_its_crawl_through_retry_release_expiry_and_dead_letters() {
    let url = test_url();
    let q = open(
        "crawl-retry",
        Config {
            max_attempts: 2,
            ..no_delay()
        },
    )
    .await;
    q.seed(&items(&["http://a.com/1"]), &into("jobs"))
        .await
        .unwrap();
    // released: back in the crawl lane
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert!(q.release(&[lease.handle()]).await.unwrap()[0]);
    check_invariants(&url, &q).await;
    // nacked with a delay: delayed, then back in the crawl lane when due
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(lease.crawl.as_deref(), Some("jobs"));
    let retry = NackOptions {
        delay: Some(Duration::from_secs(10)),
        reason: Some("timeout".into()),
        ..NackOptions::default()
    };
    q.nack(&[(lease.handle(), retry)]).await.unwrap();
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.delayed), (0, 1));
    q.set_fixed_clock(Some(T0 + 10_000));
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(
        (
            lease.crawl.as_deref(),
            lease.attempt,
            lease.last_error.as_deref()
        ),
        (Some("jobs"), 2, Some("timeout"))
    );
    // expired past max attempts: a dead letter that keeps its crawl, requeued into it
    q.set_fixed_clock(Some(T0 + 10_000 + 3_600_000));
    let report = q.reclaim(10).await.unwrap();
    assert_eq!(report.dead, 1);
    let stats = check_invariants(&url, &q).await;
    assert_eq!(stats.dead, 1);
    assert_eq!(q.requeue_dead(None).await.unwrap(), 1);
    check_invariants(&url, &q).await;
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(lease.crawl.as_deref(), Some("jobs"));
    assert!(q.ack(&[lease.handle()]).await.unwrap()[0]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.seen), (1, 1));
}

#[tokio::test]
async fn a_pages_links_go_into_its_crawl() {
    let url = test_url();
    let q = open("crawl-links", no_delay()).await;
    q.seed(&items(&["http://a.com/"]), &into("site"))
        .await
        .unwrap();
    // the same URL in the default crawl is another item
    q.seed(&items(&["http://a.com/next"]), &SeedOptions::default())
        .await
        .unwrap();
    let page = q
        .lease(10, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.crawl.is_some())
        .unwrap();
    let (acked, report) = q
        .ack_with_links(
            &page.handle(),
            &items(&["http://a.com/next", "http://b.com/", "http://not a host/"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!((report.added, report.duplicates), (2, 0));
    assert_eq!(report.invalid[0].index, 2);
    let leased = drain(&q).await;
    assert!(leased.iter().all(|l| l.crawl.as_deref() == Some("site")));
    assert_eq!(leased.len(), 2);
    // named in the options, the links go into that crawl instead
    q.seed(&items(&["http://c.com/"]), &into("site"))
        .await
        .unwrap();
    let page = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let (_, report, more) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&["http://c.com/more"]),
            &into("other"),
            &LeaseOptions {
                max: 1,
                wait: Duration::ZERO,
                ttl: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(report.added, 1);
    q.ack(&handles(&more)).await.unwrap();
    let mut leased = drain(&q).await;
    leased.extend(more);
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].crawl.as_deref(), Some("other"));
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn a_forced_seed_sees_only_its_own_crawls_live_items() {
    let url = test_url();
    let q = open("crawl-force", no_delay()).await;
    let one = items(&["http://a.com/x"]);
    q.seed(&one, &into("red")).await.unwrap();
    let forced = |crawl: Option<&str>| SeedOptions {
        force: true,
        crawl: crawl.map(String::from),
        ..SeedOptions::default()
    };
    // queued in red: a forced seed into red is a duplicate; into blue, a new item
    assert_eq!(
        q.seed(&one, &forced(Some("red"))).await.unwrap().duplicates,
        1
    );
    assert_eq!(q.seed(&one, &forced(Some("blue"))).await.unwrap().added, 1);
    // once red's item is done, a forced seed queues it again
    let leased = drain(&q).await;
    assert_eq!(leased.len(), 2);
    assert_eq!(q.seed(&one, &forced(Some("red"))).await.unwrap().added, 1);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.seen), (1, 2));
}

#[tokio::test]
async fn the_known_seen_cache_keeps_crawls_apart() {
    let q = open(
        "crawl-cache",
        Config {
            seen_cache: 1000,
            ..no_delay()
        },
    )
    .await;
    let page = items(&["http://a.com/1", "http://a.com/2"]);
    assert_eq!(q.seed(&page, &into("red")).await.unwrap().added, 2);
    assert_eq!(q.seed(&page, &into("red")).await.unwrap().duplicates, 2);
    // the cache holds red's fingerprints: blue's are others
    assert_eq!(q.seed(&page, &into("blue")).await.unwrap().added, 2);
    assert_eq!(
        q.seed(&page, &SeedOptions::default()).await.unwrap().added,
        2
    );
}

#[tokio::test]
async fn deleting_a_host_removes_its_crawls_items_and_can_forget_them() {
    let url = test_url();
    let q = open("crawl-delete", no_delay()).await;
    q.seed(&urls("a.com", 0, 30), &into("red")).await.unwrap();
    q.seed(&urls("a.com", 0, 10), &SeedOptions::default())
        .await
        .unwrap();
    q.seed(&urls("b.com", 0, 5), &into("red")).await.unwrap();
    let leased = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(leased.len(), 1);
    let deletion = q.delete_host("a.com", true).await.unwrap();
    let stats = check_invariants(&url, &q).await;
    assert_eq!(stats.ready + stats.leased, 5);
    assert!(deletion.ready + deletion.leased >= 39, "{deletion:?}");
    // forgotten: seeding them again adds them
    let report = q.seed(&urls("a.com", 0, 30), &into("red")).await.unwrap();
    assert_eq!(report.added, 30);
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn peek_shows_the_crawls_items_in_lease_order() {
    let q = open("crawl-peek", no_delay()).await;
    q.seed(&urls("a.com", 0, 3), &into("one")).await.unwrap();
    q.seed(&urls("a.com", 10, 3), &into("two")).await.unwrap();
    let peeked: Vec<String> = q
        .peek_host("a.com", 10, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.url.unwrap())
        .collect();
    let next = q.peek(10).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].url.as_deref(), Some(peeked[0].as_str()));
    let leased: Vec<String> = drain(&q)
        .await
        .into_iter()
        .map(|l| l.url.unwrap())
        .collect();
    assert_eq!(peeked, leased);
    assert_eq!(peeked.len(), 6);
}

#[tokio::test]
async fn a_crawl_name_out_of_its_rules_is_refused_whole() {
    let q = open("crawl-name", no_delay()).await;
    for name in ["", "a:b", "{tag}", "two words", "quote\"", &"x".repeat(65)] {
        let err = q
            .seed(&items(&["http://a.com/"]), &into(name))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{name:?}: {err}");
        assert!(err.to_string().contains("crawl name"), "{err}");
    }
    assert_eq!(q.stats().await.unwrap().seen, 0);
    assert_eq!(
        q.seed(&items(&["http://a.com/"]), &into(&"x".repeat(64)))
            .await
            .unwrap()
            .added,
        1
    );
}

/// Only a named crawl's items mark a queue 7 (docs/PROTOCOL.md): a queue that names none keeps
/// the format protocol 6 clients read, and none of the crawl keys.
#[tokio::test]
async fn a_queue_without_crawls_stays_readable_by_protocol_6_clients() {
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&shared().url(), &unique("crawl-format"), one_shard)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    let format = || shared().cli(&["HGET", &format!("{base}:meta"), "format"]);
    q.seed(&urls("a.com", 0, 3), &SeedOptions::default())
        .await
        .unwrap();
    drain(&q).await;
    assert_eq!(format(), "4");
    assert!(scan_keys(shared(), &base, ":lz:*").is_empty());
    assert_eq!(shared().cli(&["EXISTS", &format!("{base}:crawlvt")]), "0");
    q.seed(&urls("a.com", 10, 1), &into("jobs")).await.unwrap();
    assert_eq!(format(), "7");
    assert_eq!(scan_keys(shared(), &base, ":lz:*").len(), 1);
}

#[tokio::test]
async fn priorities_hold_within_a_crawl_and_beside_the_default_crawl() {
    let url = test_url();
    let q = open("crawl-priority", no_delay()).await;
    q.seed(&urls("a.com", 0, 3), &into("jobs")).await.unwrap();
    let urgent = SeedOptions {
        priority: 5,
        ..into("jobs")
    };
    q.seed(&urls("a.com", 10, 2), &urgent).await.unwrap();
    let default_urgent = SeedOptions {
        priority: 3,
        ..SeedOptions::default()
    };
    q.seed(&urls("a.com", 20, 1), &default_urgent)
        .await
        .unwrap();
    q.seed(&urls("a.com", 30, 1), &SeedOptions::default())
        .await
        .unwrap();
    check_invariants(&url, &q).await;
    let order: Vec<(i16, bool)> = drain(&q)
        .await
        .iter()
        .map(|l| (l.priority, l.crawl.is_some()))
        .collect();
    assert_eq!(
        order,
        [
            (5, true),
            (5, true),
            (3, false),
            (0, true),
            (0, true),
            (0, true),
            (0, false)
        ]
    );
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.hosts), (7, 0));
}

/// A crawl lane or a host's list of them holding a foreign value: a seed that would write it
/// fails whole with nothing changed, and a lease holds that host and goes on with the others.
#[tokio::test]
async fn a_foreign_value_at_a_crawl_key_is_reported_and_nothing_is_lost() {
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&shared().url(), &unique("crawl-foreign"), one_shard)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    q.seed(&urls("a.com", 0, 2), &into("jobs")).await.unwrap();
    q.seed(&urls("b.com", 0, 2), &into("jobs")).await.unwrap();
    shared().cli(&["SET", &format!("{base}:lz:0:jobs:c.com"), "x"]);
    let before = q.stats().await.unwrap();
    let err = q
        .seed(
            &urls("d.com", 0, 2)
                .into_iter()
                .chain(urls("c.com", 0, 1))
                .collect::<Vec<_>>(),
            &into("jobs"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    assert!(err.to_string().contains(":lz:0:jobs:c.com"), "{err}");
    let after = q.stats().await.unwrap();
    assert_eq!(
        (after.ready, after.seen, after.hosts),
        (before.ready, before.seen, before.hosts)
    );
    // a host whose list of crawl lanes another program overwrote is held; the rest is leased
    shared().cli(&["DEL", &format!("{base}:hl:a.com")]);
    shared().cli(&["SET", &format!("{base}:hl:a.com"), "x"]);
    let leased = drain(&q).await;
    assert_eq!(leased.len(), 2);
    assert!(leased.iter().all(|l| l.host == "b.com"));
    // held as paused until resumed (its value repaired first), as a host whose lane is foreign
    assert_eq!(
        shared().cli(&["ZSCORE", &format!("{base}:wait"), "a.com"]),
        "9007199254740991"
    );
    // reading the host reports the foreign value, typed
    let err = q.host_info("a.com").await.unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    // a host's tags overwritten: a seed there is refused whole; its leases go on (the host's
    // virtual time is lost, nothing else)
    q.seed(&urls("e.com", 0, 2), &into("jobs")).await.unwrap();
    shared().cli(&["SET", &format!("{base}:hv:e.com"), "x"]);
    let err = q
        .seed(&urls("e.com", 10, 1), &into("jobs"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    assert!(err.to_string().contains("expected a hash"), "{err}");
    assert_eq!(drain(&q).await.len(), 2);
}

/// A crawl's item seeded with a delay waits in `delayed` (tag 0) and gets its tag when it
/// comes due, after the crawl's items queued meanwhile on its host.
#[tokio::test]
async fn a_crawls_delayed_item_gets_its_tag_when_it_comes_due() {
    let url = test_url();
    let q = open("crawl-delayed", no_delay()).await;
    let later = SeedOptions {
        delay: Duration::from_secs(5),
        ..into("jobs")
    };
    q.seed(&items(&["http://a.com/later"]), &later)
        .await
        .unwrap();
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.delayed), (0, 1));
    q.seed(&items(&["http://a.com/now"]), &into("jobs"))
        .await
        .unwrap();
    q.set_fixed_clock(Some(T0 + 5_000));
    let order: Vec<String> = drain(&q)
        .await
        .into_iter()
        .map(|l| {
            assert_eq!(l.crawl.as_deref(), Some("jobs"));
            l.url.unwrap()
        })
        .collect();
    assert_eq!(order, ["http://a.com/now", "http://a.com/later"]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.delayed), (2, 0));
}

/// Each named crawl's counts, exact through seeds, leases, acks, retries, dead letters and
/// host deletion; summed over shards; zeros for a crawl never seeded.
#[tokio::test]
async fn each_crawls_stats_follow_its_items() {
    let url = test_url();
    let q = open(
        "crawl-stats",
        Config {
            max_attempts: 1,
            ..no_delay()
        },
    )
    .await;
    q.seed(&urls("a.com", 0, 3), &into("red")).await.unwrap();
    q.seed(&urls("b.com", 0, 2), &into("red")).await.unwrap();
    let later = SeedOptions {
        delay: Duration::from_secs(60),
        ..into("blue")
    };
    q.seed(&urls("a.com", 0, 2), &later).await.unwrap();
    q.seed(&urls("a.com", 0, 2), &into("red")).await.unwrap(); // duplicates
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!(
        (red.ready, red.delayed, red.seen, red.seeded_total),
        (5, 0, 5, 5)
    );
    let blue = q.crawl_stats("blue").await.unwrap();
    assert_eq!((blue.ready, blue.delayed, blue.pending()), (0, 2, 2));
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 5);
    q.ack(&handles(&leases[..2])).await.unwrap();
    let fail = NackOptions {
        retry: false,
        ..NackOptions::default()
    };
    q.nack(&[(leases[2].handle(), fail)]).await.unwrap();
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!((red.ready, red.leased, red.done, red.dead), (0, 2, 2, 1));
    check_invariants(&url, &q).await;
    // a.com deleted: its items of both crawls leave their counts
    q.delete_host("a.com", false).await.unwrap();
    let (red, blue) = (
        q.crawl_stats("red").await.unwrap(),
        q.crawl_stats("blue").await.unwrap(),
    );
    check_invariants(&url, &q).await;
    assert_eq!(blue.pending() + blue.leased + blue.dead, 0);
    assert_eq!(red.done, 2, "done is a count of what happened: it stays");
    assert_eq!(q.crawl_stats("never").await.unwrap(), CrawlStats::default());
    let err = q.crawl_stats("a:b").await.unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
}

/// A crawl's hosts (those with a ready item of it) and its oldest pending age (its lanes'
/// oldest head), as the queue's own `hosts` and `oldest_pending_age_ms` count them: through
/// priorities, leases, a delayed item coming due, a release, host deletion and crawl deletion.
#[tokio::test]
async fn each_crawls_hosts_and_oldest_pending_age_follow_its_lanes() {
    let url = test_url();
    let q = open("crawl-hosts-age", no_delay()).await;
    let none = q.crawl_stats("red").await.unwrap();
    assert_eq!((none.hosts, none.oldest_pending_age_ms), (0, None));
    q.seed(&urls("a.com", 0, 2), &into("red")).await.unwrap();
    q.set_fixed_clock(Some(T0 + 1_000));
    // b.com: two lanes of red (priorities 0 and 5), one host
    q.seed(&urls("b.com", 0, 1), &into("red")).await.unwrap();
    let urgent = SeedOptions {
        priority: 5,
        ..into("red")
    };
    q.seed(&urls("b.com", 10, 1), &urgent).await.unwrap();
    q.seed(&urls("c.com", 0, 1), &into("blue")).await.unwrap();
    q.seed(&urls("d.com", 0, 1), &SeedOptions::default())
        .await
        .unwrap();
    let later = SeedOptions {
        delay: Duration::from_secs(5),
        ..into("red")
    };
    q.seed(&urls("e.com", 0, 1), &later).await.unwrap();
    q.set_fixed_clock(Some(T0 + 3_000));
    let (red, blue) = (
        q.crawl_stats("red").await.unwrap(),
        q.crawl_stats("blue").await.unwrap(),
    );
    assert_eq!((red.hosts, red.oldest_pending_age_ms), (2, Some(3_000)));
    assert_eq!((blue.hosts, blue.oldest_pending_age_ms), (1, Some(2_000)));
    let stats = check_invariants(&url, &q).await;
    assert_eq!(stats.hosts, 4, "a.com, b.com, c.com, d.com");
    // one call: two lanes of green on a new host, one on a host with another crawl's lane
    let green = vec![
        SeedItem::from("http://f.com/1"),
        SeedItem::from("http://f.com/2").with_priority(3),
        SeedItem::from("http://c.com/9"),
    ];
    assert_eq!(q.seed(&green, &into("green")).await.unwrap().added, 3);
    let green = q.crawl_stats("green").await.unwrap();
    assert_eq!((green.hosts, green.oldest_pending_age_ms), (2, Some(0)));
    check_invariants(&url, &q).await;
    q.delete_crawl("green").await.unwrap();

    // every ready item leased: no host, no age; released, a.com's item is back at its front
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 6);
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!(
        (red.hosts, red.oldest_pending_age_ms, red.leased),
        (0, None, 4)
    );
    check_invariants(&url, &q).await;
    let a_item = leases.iter().find(|l| l.host == "a.com").unwrap();
    q.release(&[a_item.handle()]).await.unwrap();
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!((red.hosts, red.oldest_pending_age_ms), (1, Some(3_000)));
    check_invariants(&url, &q).await;

    // e.com's delayed item comes due and is leased with a.com's; both released: two hosts
    q.set_fixed_clock(Some(T0 + 7_000));
    let again = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(again.len(), 2);
    assert_eq!(q.crawl_stats("red").await.unwrap().hosts, 0);
    q.release(&handles(&again)).await.unwrap();
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!(
        (red.hosts, red.ready, red.oldest_pending_age_ms),
        (2, 2, Some(7_000))
    );
    check_invariants(&url, &q).await;

    // a host deleted: it leaves the crawl's hosts; the crawl deleted: nothing is left of it
    q.delete_host("a.com", false).await.unwrap();
    assert_eq!(q.crawl_stats("red").await.unwrap().hosts, 1);
    check_invariants(&url, &q).await;
    q.delete_crawl("red").await.unwrap();
    let red = q.crawl_stats("red").await.unwrap();
    assert_eq!((red.hosts, red.oldest_pending_age_ms), (0, None));
    let blue = q.crawl_stats("blue").await.unwrap();
    assert_eq!(blue.hosts, 0, "blue's item is leased");
    check_invariants(&url, &q).await;
}

/// The fields of a crawl's recent counts (`cr:<crawl>`) in every shard of `q`.
async fn recent_fields(q: &Queue<RedisExecutor>, crawl: &str) -> Vec<String> {
    let url = test_url();
    let mut out = Vec::new();
    for node in primaries(&url).await {
        let mut conn = conn_to(&node).await;
        for ops in q.layout().await.unwrap().all() {
            // (a node that does not serve the shard's slot answers MOVED: none there)
            let fields: Result<Vec<String>, _> = redis::cmd("HKEYS")
                .arg(format!("{}:cr:{crawl}", ops.keys().base()))
                .query_async(&mut conn)
                .await;
            out.extend(fields.unwrap_or_default());
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_crawls_rates_are_its_acks_and_seeds_over_the_last_minute() {
    let url = test_url();
    let q = open("crawl-rates", no_delay()).await;
    let rates = |s: CrawlStats| (s.done_per_second, s.seeded_per_second);
    // T0 starts a minute of the clock (T0 / 60,000 is whole): 10 s into it, 30 of red's URLs
    // over 10 hosts, 6 of blue's and 5 of the default crawl's
    assert_eq!(T0 % 60_000, 0);
    q.set_fixed_clock(Some(T0 + 10_000));
    let red: Vec<SeedItem> = (0..30)
        .map(|i| SeedItem::from(format!("http://h{}.example/{i}", i % 10)))
        .collect();
    assert_eq!(q.seed(&red, &into("red")).await.unwrap().added, 30);
    assert_eq!(
        q.seed(&urls("b.example", 0, 6), &into("blue"))
            .await
            .unwrap()
            .added,
        6
    );
    q.seed(&urls("d.example", 0, 5), &SeedOptions::default())
        .await
        .unwrap();
    // (duplicates are not seeded: they count for nothing)
    assert_eq!(q.seed(&red[..3], &into("red")).await.unwrap().added, 0);
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.0, 0.5));
    assert_eq!(rates(q.crawl_stats("blue").await.unwrap()), (0.0, 0.1));
    // every item leased and acked 20 s into the minute
    q.set_fixed_clock(Some(T0 + 20_000));
    assert_eq!(drain(&q).await.len(), 41);
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.5, 0.5));
    assert_eq!(rates(q.crawl_stats("blue").await.unwrap()), (0.1, 0.1));
    // 15 s into the next minute the last 60 s hold 45 s of the one before: 3/4 of its counts
    q.set_fixed_clock(Some(T0 + 75_000));
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.375, 0.375));
    q.seed(&urls("h0.example", 100, 6), &into("red"))
        .await
        .unwrap();
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.375, 0.475));
    // a revisit counts when it is acked again, not when it is scheduled
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 6, "no delay: the host's six at once");
    q.ack_revisit(&handles(&leases), Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.375, 0.475));
    // (as the crawl's `done` counts them; the queue's counts every ack)
    assert_eq!(q.crawl_stats("red").await.unwrap().done, 30);
    assert_eq!(check_invariants(&url, &q).await.done, 47);
    // two minutes on, nothing of those minutes is counted; the crawl's next count drops them
    q.set_fixed_clock(Some(T0 + 180_000));
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.0, 0.0));
    assert!(!recent_fields(&q, "red").await.is_empty());
    let minute = T0 / 60_000;
    let one = urls("h0.example", 200, 1);
    assert_eq!(q.seed(&one, &into("red")).await.unwrap().added, 1);
    // (in the shard of that host: h0.example's, where the minute after's seeds went too; a
    // shard drops its old fields at its own next count)
    let now = format!("s:{}", minute + 3);
    let fields = recent_fields(&q, "red").await;
    assert!(fields.contains(&now), "{fields:?}");
    assert!(
        fields
            .iter()
            .all(|f| *f == now || f.ends_with(&format!(":{minute}"))),
        "the older minutes' fields dropped: {fields:?}"
    );
    if q.shard_count().await.unwrap() == 1 {
        assert_eq!(fields, [now]);
    }
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.0, 0.016667));
    // a deleted crawl's counts go with it
    q.delete_crawl("red").await.unwrap();
    assert!(recent_fields(&q, "red").await.is_empty());
    assert_eq!(rates(q.crawl_stats("red").await.unwrap()), (0.0, 0.0));
    assert_eq!(rates(q.crawl_stats("blue").await.unwrap()), (0.0, 0.0));
    check_invariants(&url, &q).await;
}
