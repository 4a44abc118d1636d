//! A page answered with its links in one call: the links seeded as `seed` seeds them, the lease
//! acked as `ack` acks it; fencing holds for the combined call, and the links of a page
//! answered after its lease was reclaimed are still seeded; links resolve against the page's URL.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

#[tokio::test]
async fn a_page_is_acked_and_its_links_seeded_in_one_call() {
    // a server of its own: its call counts are this test's
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "links-one-call", config())
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/", "http://a.com/seen"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let page = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    server.cli(&["CONFIG", "RESETSTAT"]);
    let links = items(&[
        "http://a.com/seen",
        "http://b.com/new",
        "http://not a host/",
        "http://a.com/new",
        "http://b.com/new",
    ]);
    let (acked, report) = q
        .ack_with_links(&page.handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    let calls = calls_of(&server, "evalsha") + calls_of(&server, "fcall");
    assert!(acked);
    assert_eq!((report.added, report.duplicates), (2, 2));
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(report.invalid[0].index, 2);
    assert!(
        report.ids[0].is_none()
            && report.ids[1].is_some()
            && report.ids[3].is_some()
            && report.ids[4].is_none()
    );
    if test_shards().unwrap_or(1) == 1 {
        assert_eq!(calls, 1, "one script call");
    } else {
        // the call on the page's shard with its links there, one on b.com's shard if another,
        // and the report of what they queued to the queue's index
        assert!(
            (2..=3).contains(&calls),
            "{calls} calls with several shards"
        );
    }
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.ready, stats.leased), (1, 3, 0));
}

#[tokio::test]
async fn a_page_answered_after_its_lease_was_reclaimed_answers_lost_and_still_seeds_its_links() {
    let q = open("links-lost", fixed_clock_config()).await;
    q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    let opts = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: Some(Duration::from_secs(1)),
    };
    let stale = q.lease_with(&opts).await.unwrap().remove(0);
    q.set_fixed_clock(Some(T0 + 2000));
    // another worker takes the expired page over
    let fresh = q.lease_with(&opts).await.unwrap().remove(0);
    assert_eq!(fresh.id, stale.id);
    let (acked, report) = q
        .ack_with_links(
            &stale.handle(),
            &items(&["http://a.com/x"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert!(!acked, "the stale lease answers lost");
    assert_eq!(
        report.added, 1,
        "what the page linked is seeded all the same"
    );
    // the new holder's answer stands, and its own links are duplicates
    let (acked, report) = q
        .ack_with_links(
            &fresh.handle(),
            &items(&["http://a.com/x"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!((report.added, report.duplicates), (0, 1));
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.ready, stats.leased), (1, 1, 0));
}

#[tokio::test]
async fn many_links_and_seed_options_take_the_long_way_with_the_same_result() {
    let q = open("links-many", config()).await;
    let page = leased_page(&q, "http://a.com/").await;
    let urls: Vec<String> = (0..600)
        .map(|i| format!("http://h{}.com/{i}", i % 7))
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let opts = SeedOptions {
        priority: 3,
        ..SeedOptions::default()
    };
    let (acked, report) = q
        .ack_with_links(&page.handle(), &items(&refs), &opts)
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 600);
    let next = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(next.priority, 3);
}

#[tokio::test]
async fn links_over_a_hosts_budget_are_reported_with_their_index() {
    let q = open("links-budget", config()).await;
    q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    q.set_host_budget("b.com", Some(1)).await.unwrap();
    let page = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let (acked, report) = q
        .ack_with_links(
            &page.handle(),
            &items(&["http://b.com/1", "http://b.com/2"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 1);
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(report.invalid[0].index, 1);
    assert_eq!(report.invalid[0].reason.code(), "budget_exhausted");
}

/// Seed the page `url` and lease it: the page a test answers.
async fn leased_page(q: &Queue<RedisExecutor>, url: &str) -> Lease {
    q.seed(&items(&[url]), &SeedOptions::default())
        .await
        .unwrap();
    q.lease(1, Duration::ZERO).await.unwrap().remove(0)
}

fn next(max: usize, wait: Duration) -> LeaseOptions {
    LeaseOptions {
        max,
        wait,
        ttl: None,
    }
}

#[tokio::test]
async fn a_page_is_acked_its_links_seeded_and_the_next_pages_leased_in_one_call() {
    // a server of its own: its call counts are this test's
    let server = RedisServer::start();
    let config = Config {
        host_delay: Duration::from_secs(1),
        fixed_clock_ms: Some(T0),
        ..config()
    };
    let q = Queue::connect(&server.url(), "links-and-lease", config)
        .await
        .unwrap();
    let page = leased_page(&q, "http://a.com/").await;
    server.cli(&["CONFIG", "RESETSTAT"]);
    let links = items(&["http://a.com/x", "http://b.com/y", "http://bad host/"]);
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &links,
            &SeedOptions::default(),
            &next(5, Duration::ZERO),
        )
        .await
        .unwrap();
    let calls = calls_of(&server, "evalsha") + calls_of(&server, "fcall");
    assert!(acked);
    assert_eq!((report.added, report.duplicates), (2, 0));
    assert_eq!(report.invalid[0].index, 2);
    // a.com was leased a moment ago: its delay holds in the combined call too
    let urls: Vec<&str> = leases.iter().filter_map(|l| l.url.as_deref()).collect();
    assert_eq!(urls, ["http://b.com/y"]);
    assert_eq!(leases[0].id, report.ids[1].clone().unwrap());
    if test_shards().unwrap_or(1) == 1 {
        assert_eq!(calls, 1, "one script call");
    }
    let stats = q.stats().await.unwrap();
    // (a.com/x is ready, waiting for its host's turn)
    assert_eq!((stats.done, stats.ready, stats.leased), (1, 1, 1));
    // the next turn of a.com
    q.set_fixed_clock(Some(T0 + 1000));
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &leases[0].handle(),
            &items(&["http://a.com/x"]),
            &SeedOptions::default(),
            &next(5, Duration::ZERO),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!((report.added, report.duplicates), (0, 1));
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].url.as_deref(), Some("http://a.com/x"));
}

#[tokio::test]
async fn a_stale_page_answers_lost_and_the_next_lease_still_runs() {
    let q = open("links-lease-lost", fixed_clock_config()).await;
    q.seed(&items(&["http://a.com/"]), &SeedOptions::default())
        .await
        .unwrap();
    let opts = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: Some(Duration::from_secs(1)),
    };
    let stale = q.lease_with(&opts).await.unwrap().remove(0);
    q.set_fixed_clock(Some(T0 + 2000));
    let fresh = q.lease_with(&opts).await.unwrap().remove(0);
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &stale.handle(),
            &items(&["http://b.com/x"]),
            &SeedOptions::default(),
            &next(1, Duration::ZERO),
        )
        .await
        .unwrap();
    assert!(!acked, "the stale lease answers lost");
    assert_eq!(report.added, 1, "its links are seeded all the same");
    assert_eq!(leases.len(), 1, "and the next page is leased");
    assert_eq!(leases[0].url.as_deref(), Some("http://b.com/x"));
    assert!(q.ack(&[fresh.handle()]).await.unwrap()[0]);
}

#[tokio::test]
async fn the_next_lease_waits_for_work_as_lease_waits() {
    let q = open("links-lease-wait", config()).await;
    let page = leased_page(&q, "http://a.com/").await;
    let delayed = SeedOptions {
        delay: Duration::from_millis(300),
        ..SeedOptions::default()
    };
    let started = std::time::Instant::now();
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&["http://b.com/later"]),
            &delayed,
            &next(1, Duration::from_secs(5)),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 1);
    assert_eq!(leases.len(), 1, "leased once due, within the wait");
    assert_eq!(leases[0].url.as_deref(), Some("http://b.com/later"));
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn many_links_with_the_next_lease_take_the_long_way_with_the_same_result() {
    let q = open("links-lease-many", config()).await;
    let page = leased_page(&q, "http://a.com/").await;
    let urls: Vec<String> = (0..300).map(|i| format!("http://h{i}.com/")).collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&refs),
            &SeedOptions::default(),
            &next(400, Duration::ZERO),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 300);
    assert_eq!(leases.len(), 300, "every new host's page");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.ready, stats.leased), (1, 0, 300));
}

#[tokio::test]
async fn a_bad_lease_option_fails_the_call_before_anything_changes() {
    let q = open("links-lease-bad", config()).await;
    let page = leased_page(&q, "http://a.com/").await;
    let err = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&["http://b.com/"]),
            &SeedOptions::default(),
            &next(0, Duration::ZERO),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.leased, stats.seen), (0, 1, 1));
}

/// A page's call with more links than a client sends in one (a third party may send any
/// number: here 1,000, whose 9,000 fields are past Lua's limit of 8,000 values for one
/// `unpack`, with which the scripts copy the fields of fewer links) seeds
/// them all, acks the lease and, with `ack_seed_lease`, leases the next item.
#[tokio::test]
async fn a_call_of_more_links_than_one_unpack_takes() {
    use crawlq::queue::Executor;
    // one shard on this binary's server: the calls are built for the queue's own base
    let q = Queue::connect(&shared().url(), &unique("links-1000"), Config::default())
        .await
        .unwrap();
    q.seed(
        &items(&["http://a.com/1", "http://a.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let links: Vec<SeedItem> = (0..2000)
        .map(|i| SeedItem::from(format!("http://b{}.com/{i}", i % 10)))
        .collect();
    let (prepared, invalid) = q.ops().prepare(&links, &SeedOptions::default()).unwrap();
    assert!(invalid.is_empty());
    let (first, second) = prepared.split_at(1000);

    let page = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let call = q
        .ops()
        .ack_seed(&[page.handle()], Revisit::After(Duration::ZERO), first);
    let reply = q.executor().eval(call).await.unwrap();
    let (outcome, flags) = q.ops().decode_ack_seed(reply, 1, 1000).unwrap();
    assert_eq!(flags, [true]);
    assert_eq!((outcome.added, outcome.duplicates), (1000, 0));

    let page = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let ttl = Duration::from_secs(60);
    let call = q.ops().ack_seed_lease(
        &[page.handle()],
        Revisit::After(Duration::ZERO),
        second,
        1,
        ttl,
    );
    let reply = q.executor().eval(call).await.unwrap();
    let (outcome, flags, batch) = q.ops().decode_ack_seed_lease(reply, 1, 1000, ttl).unwrap();
    assert_eq!(flags, [true]);
    assert_eq!((outcome.added, outcome.duplicates), (1000, 0));
    assert_eq!(batch.leases.len(), 1);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.ready, stats.seen), (2, 1999, 2002));
}

fn no_delay() -> Config {
    Config {
        host_delay: Duration::ZERO,
        ..config()
    }
}

/// Every lease of `q` at once, by URL (or host, for a host item).
async fn leased_by_name(q: &Queue<RedisExecutor>) -> Vec<String> {
    let mut names: Vec<String> = q
        .lease(1000, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.url.unwrap_or(l.host))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_pages_links_resolve_against_its_url_as_a_browser_resolves_them() {
    let q = open("links-relative", no_delay()).await;
    q.seed(
        &items(&["https://a.com/docs/intro.html?x=1", "b.com"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let mut pages = q.lease(2, Duration::ZERO).await.unwrap();
    pages.sort_by_key(|l| l.url.is_none());
    let (page, host_item) = (pages.remove(0), pages.remove(0));
    let links = items(&[
        "next.html",            // 0: beside the page
        "/about#team",          // 1: from the root, the fragment dropped
        "../up/",               // 2: dot segments
        "?page=2",              // 3: the page's path, another query
        "//CDN.c.com/lib.js",   // 4: the page's scheme
        "#top",                 // 5: the page itself: a duplicate
        "HTTP://D.com/x",       // 6: absolute, as it is
        "mailto:team@a.com",    // 7: not http(s)
        "javascript:void(0)",   // 8: not http(s)
        "http://not a host/",   // 9: not a URL
        "example.com",          // 10: a relative path here, not a host
        "  spaced name.html  ", // 11: trimmed, the space encoded
    ]);
    let (acked, report) = q
        .ack_with_links(&page.handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(
        invalid_codes(&report),
        [
            (7, "unsupported_scheme"),
            (8, "unsupported_scheme"),
            (9, "invalid_url")
        ]
    );
    assert_eq!((report.added, report.duplicates), (8, 1));
    assert!(report.ids[5].is_none(), "the page itself is seen");
    // a host item's page has no URL: its links are inputs as seed takes them (a bare host)
    let (acked, report) = q
        .ack_with_links(
            &host_item.handle(),
            &items(&["e.com", "/about"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 1);
    assert_eq!(report.invalid[0].index, 1);
    assert_eq!(
        leased_by_name(&q).await,
        [
            "e.com",
            "http://d.com/x",
            "https://a.com/about",
            "https://a.com/docs/example.com",
            "https://a.com/docs/intro.html?page=2",
            "https://a.com/docs/next.html",
            "https://a.com/docs/spaced%20name.html",
            "https://a.com/up/",
            "https://cdn.c.com/lib.js",
        ]
    );
}

#[tokio::test]
async fn relative_links_resolve_on_the_long_way_and_with_the_next_lease_too() {
    let q = open("links-relative-long", no_delay()).await;
    let page = leased_page(&q, "http://a.com/dir/").await;
    // past 250 links: seeded first, as seed seeds them, then the ack and lease
    let links: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&refs),
            &SeedOptions::default(),
            &next(1, Duration::ZERO),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!((report.added, report.invalid.len()), (300, 0));
    let urls: Vec<&str> = leases.iter().filter_map(|l| l.url.as_deref()).collect();
    assert_eq!(urls, ["http://a.com/dir/p0"]);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.leased, stats.done), (299, 1, 1));
    // one call, a few links
    let q = open("links-relative-short", no_delay()).await;
    let page = leased_page(&q, "http://a.com/dir/").await;
    let (acked, report, leases) = q
        .ack_with_links_and_lease(
            &page.handle(),
            &items(&["x", "../y"]),
            &SeedOptions::default(),
            &next(1, Duration::ZERO),
        )
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.added, 2);
    let urls: Vec<&str> = leases.iter().filter_map(|l| l.url.as_deref()).collect();
    assert_eq!(urls, ["http://a.com/dir/x"]);
    assert_eq!(leased_by_name(&q).await, ["http://a.com/y"]);
}
