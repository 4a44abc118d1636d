//! The known-seen cache (`seen_cache`): links Redis confirmed seen are answered "duplicate"
//! without reaching Redis, and it never suppresses a link a cold client would add: whatever
//! shrinks the seen set (a host deleted with its seen URLs, the queue removed and made again)
//! changes the seen epoch every seed answers, and the hits judged by an older epoch are sent.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

fn cached() -> Config {
    Config {
        seen_cache: 10_000,
        ..config()
    }
}

/// Two clients of one queue: `warm` with a cache, `other` without.
async fn pair(name: &str) -> (Queue<RedisExecutor>, Queue<RedisExecutor>) {
    let name = unique(name);
    let warm = Queue::connect(&test_url(), &name, cached()).await.unwrap();
    let other = Queue::connect(&test_url(), &name, config()).await.unwrap();
    (warm, other)
}

fn urls(host: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("http://{host}/{i}")).collect()
}

async fn seed(q: &Queue<RedisExecutor>, urls: &[String]) -> SeedReport {
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn repeated_links_are_answered_without_redis_work() {
    let (warm, _other) = pair("seen-cache-hits").await;
    let links = urls("a.com", 50);
    assert_eq!(seed(&warm, &links).await.added, 50);
    let again = seed(&warm, &links).await;
    assert_eq!((again.added, again.duplicates), (0, 50));
    assert!(again.ids.iter().all(Option::is_none));
    let s = warm.seen_cache_stats();
    assert_eq!((s.entries, s.hits), (50, 50));
    // none of them was sent, and the queue counts them as a client without a cache makes it
    // count them: duplicates, and cache hits
    let stats = warm.stats().await.unwrap();
    assert_eq!(
        (stats.duplicates_total, stats.seen_cache_hits_total),
        (50, 50)
    );
}

#[tokio::test]
async fn the_queue_counts_the_hits_its_epoch_confirms_and_the_rest_as_redis_judges_them() {
    let (warm, other) = pair("seen-cache-counts").await;
    // the same calls by a client without a cache, on a queue of its own
    let cold = Queue::connect(&test_url(), &unique("seen-cache-counts-cold"), config())
        .await
        .unwrap();
    let links = urls("counted.com", 10);
    for q in [&warm, &cold] {
        seed(q, &links).await;
        seed(q, &links).await;
    }
    other.delete_host("counted.com", true).await.unwrap();
    cold.delete_host("counted.com", true).await.unwrap();
    for q in [&other, &cold] {
        seed(q, &links[..5]).await;
    }
    // the warm client's 10 hits were judged by the epoch before the deletion: not counted as
    // hits, sent again and judged by Redis (5 added, 5 duplicates)
    let again = seed(&warm, &links).await;
    assert_eq!((again.added, again.duplicates), (5, 5));
    seed(&cold, &links).await;
    let (w, c) = (warm.stats().await.unwrap(), cold.stats().await.unwrap());
    assert_eq!((w.seen_cache_hits_total, c.seen_cache_hits_total), (10, 0));
    assert_eq!(w.duplicates_total, c.duplicates_total);
    assert_eq!((w.seeded_total, w.seen), (c.seeded_total, c.seen));
    // a page answered with links the cache holds: the hits go with the answer
    let page = warm.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let links = ["http://counted.com/0", "http://counted.com/1"];
    let (_, report) = warm
        .ack_with_links(&page.handle(), &items(&links), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(report.duplicates, 2);
    assert_eq!(warm.stats().await.unwrap().seen_cache_hits_total, 12);
}

#[tokio::test]
async fn a_host_deleted_with_its_seen_urls_is_seeded_again() {
    let (warm, other) = pair("seen-cache-forget").await;
    let links = urls("gone.com", 10);
    seed(&warm, &links).await;
    seed(&warm, &links).await;
    other.delete_host("gone.com", true).await.unwrap();
    // a cold client would add them: so does the warm one
    let cold = seed(&other, &links[..5]).await;
    assert_eq!(cold.added, 5);
    let again = seed(&warm, &links).await;
    assert_eq!((again.added, again.duplicates), (5, 5));
    assert_eq!(warm.seen_cache_stats().resent, 10);
}

#[tokio::test]
async fn a_queue_removed_and_made_again_is_seeded_again() {
    let (warm, other) = pair("seen-cache-recreated").await;
    let links = urls("b.com", 10);
    seed(&warm, &links).await;
    crawlq::catalog::remove_queue(&other, true).await.unwrap();
    seed(&other, &links[..1]).await;
    let again = seed(&warm, &links).await;
    assert_eq!((again.added, again.duplicates), (9, 1));
}

#[tokio::test]
async fn forced_items_and_caller_keys_reach_redis_as_they_should() {
    let (warm, _other) = pair("seen-cache-force").await;
    let links = urls("c.com", 3);
    seed(&warm, &links).await;
    // the items are done: a forced seed queues them again, cache or not
    let done = warm.lease(10, Duration::ZERO).await.unwrap();
    warm.ack(&handles(&done)).await.unwrap();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    let forced = warm
        .seed(
            &items(&refs),
            &SeedOptions {
                force: true,
                ..SeedOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(forced.added, 3);
    // a caller key is the identity: another URL under a known key is a duplicate, the same
    // URL under a new key is new
    let keyed = |url: &str, key: &str| SeedItem::from(url).with_key(key);
    warm.seed(
        &[keyed("http://c.com/k", "page-1")],
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let report = warm
        .seed(
            &[
                keyed("http://c.com/other", "page-1"),
                keyed("http://c.com/k", "page-2"),
            ],
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (1, 1));
    assert!(report.ids[0].is_none() && report.ids[1].is_some());
}

#[tokio::test]
async fn over_budget_links_are_not_cached() {
    let (warm, other) = pair("seen-cache-budget").await;
    warm.set_host_budget("d.com", Some(1)).await.unwrap();
    let links = urls("d.com", 2);
    let first = seed(&warm, &links).await;
    assert_eq!((first.added, first.invalid.len()), (1, 1));
    other.set_host_budget("d.com", None).await.unwrap();
    let again = seed(&warm, &links).await;
    assert_eq!((again.added, again.duplicates), (1, 1));
}

#[tokio::test]
async fn pages_answered_with_links_use_the_cache_and_stay_exact() {
    let (warm, other) = pair("seen-cache-pages").await;
    let nav = urls("e.com", 20);
    seed(&warm, &nav).await;
    let refs: Vec<&str> = nav.iter().map(String::as_str).collect();
    let page = warm.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let (acked, report) = warm
        .ack_with_links(&page.handle(), &items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked);
    assert_eq!(report.duplicates, 20);
    assert!(warm.seen_cache_stats().hits >= 20);
    other.delete_host("e.com", true).await.unwrap();
    seed(&other, &["http://f.com/".to_string()]).await;
    let page = warm.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let (acked, report) = warm
        .ack_with_links(&page.handle(), &items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked);
    // the host's queued links are new again; the page acked above is done, which a host
    // deletion does not forget (it removes the items it holds)
    assert_eq!((report.added, report.duplicates), (19, 1));
    assert_eq!(report.ids.iter().filter(|i| i.is_some()).count(), 19);
    assert_eq!(warm.seen_cache_stats().resent, 20);
}

#[tokio::test]
async fn a_restart_that_lost_writes_makes_the_cache_send_its_links_again() {
    // a server of its own: it is restarted from an older snapshot
    let mut server = RedisServer::start();
    let config = Config {
        seen_cache: 10_000,
        shards: None,
        ..Config::default()
    };
    let q = Queue::connect(&server.url(), "seen-cache-lost", config)
        .await
        .unwrap();
    let page = items(&["http://site.com/"]);
    q.seed(&page, &SeedOptions::default()).await.unwrap();
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    server.cli(&["SAVE"]);
    // the page's links, confirmed seen and cached: then Redis loses them (killed, and restarted
    // from the snapshot taken before, as after an AOF's lost last second or a replica's lag)
    let links = items(&["http://site.com/a", "http://other.com/b"]);
    let (acked, report) = q
        .ack_with_links(&lease.handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked && report.added == 2);
    assert_eq!(q.seen_cache_stats().entries, 3, "the page and its links");
    server.restart();
    // the page comes back leased (the snapshot's state); answered again, its links are not
    // answered from the cache: the seen epoch changed with the server's restart
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (acked, report) = loop {
        match q
            .ack_with_links(&lease.handle(), &links, &SeedOptions::default())
            .await
        {
            Ok(answer) => break answer,
            Err(e) => assert!(std::time::Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(acked, "the snapshot's lease is live again");
    assert_eq!((report.added, report.duplicates), (2, 0), "{report:?}");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.seen, stats.ready, stats.done), (3, 2, 1));
    // and the cache works again under the new epoch
    let hits = q.seen_cache_stats().hits;
    let again = q.seed(&links, &SeedOptions::default()).await.unwrap();
    assert_eq!(again.duplicates, 2);
    assert_eq!(q.seen_cache_stats().hits, hits + 2);
}

#[tokio::test]
async fn links_held_back_by_a_moved_epoch_go_in_the_call_that_answers_their_page() {
    // A page answered after the seen epoch moved: the links the cache held back may have left
    // the seen set, and they go in the page's own call. When they cannot go in, the page is not
    // acked: it stays leased and is answered again, and no link is lost.
    let server = RedisServer::start();
    let config = Config {
        seen_cache: 10_000,
        shards: None,
        ..Config::default()
    };
    let name = "seen-cache-answer-moved";
    let warm = Queue::connect(&server.url(), name, config.clone())
        .await
        .unwrap();
    let other = Queue::connect(&server.url(), name, Config::default())
        .await
        .unwrap();
    seed(&warm, &["http://page.com/".to_string()]).await;
    let page = warm.lease(1, Duration::ZERO).await.unwrap().remove(0);
    let link = "http://gone.com/x".to_string();
    seed(&warm, std::slice::from_ref(&link)).await;
    // another client deletes the link's host with its seen URLs: the epoch moves, and the
    // warm client's cache still holds the link; then another program's value takes the lane
    // the link would go to
    other.delete_host("gone.com", true).await.unwrap();
    let base = warm
        .layout()
        .await
        .unwrap()
        .shard(0)
        .keys()
        .base()
        .to_string();
    let lane = format!("{base}:l:0:gone.com");
    server.cli(&["SET", &lane, "not a list"]);
    let links = items(&[link.as_str()]);
    for with_next in [false, true] {
        let answer = answer_page(&warm, &page.handle(), &links, with_next).await;
        assert!(
            matches!(&answer, Err(Error::Corrupt(m)) if m.contains(&lane)),
            "{answer:?}"
        );
    }
    let stats = warm.stats().await.unwrap();
    assert_eq!(
        (stats.leased, stats.done, stats.seen),
        (1, 0, 1),
        "the page stays leased and the link is not seen"
    );
    assert_eq!(
        warm.seen_cache_stats().resent,
        1,
        "sent once the cache was refused"
    );
    assert_eq!(
        errors_of(&server, "CRAWLQ_EPOCH"),
        1,
        "the first answer was refused before it changed anything"
    );
    // once the lane is free, answering the page again adds the link, in one call
    server.cli(&["DEL", &lane]);
    let calls = calls_of(&server, "fcall");
    let (acked, report) = warm
        .ack_with_links(&page.handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    assert!(
        acked && (report.added, report.duplicates) == (1, 0),
        "{report:?}"
    );
    assert_eq!(calls_of(&server, "fcall"), calls + 1);
    let stats = warm.stats().await.unwrap();
    assert_eq!((stats.done, stats.ready, stats.seen), (1, 1, 2));
}

#[tokio::test]
async fn scripts_run_by_eval_keep_nothing_in_the_cache() {
    // a user refused functions: the scripts run by EVALSHA, whose epoch cannot tell a restart
    let server = RedisServer::start();
    server.cli(&[
        "ACL", "SETUSER", "evalonly", "on", ">pw", "~*", "&*", "+@all", "-fcall",
    ]);
    let url = format!("redis://evalonly:pw@127.0.0.1:{}/0", server.port);
    let config = Config {
        seen_cache: 10_000,
        shards: None,
        ..Config::default()
    };
    let q = Queue::connect(&url, "seen-cache-eval", config)
        .await
        .unwrap();
    let links = urls("a.com", 5);
    assert_eq!(seed(&q, &links).await.added, 5);
    let again = seed(&q, &links).await;
    assert_eq!((again.added, again.duplicates), (0, 5));
    let s = q.seen_cache_stats();
    assert_eq!((s.entries, s.hits), (0, 0), "every link went to Redis");
    assert_eq!(q.stats().await.unwrap().seen_cache_hits_total, 0);
}

/// The cache's size is the whole client's, however many shards the queue has: a full cache
/// drops its fullest shard's part, and what it keeps still answers.
#[tokio::test]
async fn the_size_limit_holds_across_shards() {
    let name = unique("seen-cache-bound");
    let config = Config {
        seen_cache: 100,
        shards: Some(4),
        ..config()
    };
    let q = Queue::connect(&test_url(), &name, config).await.unwrap();
    // 400 URLs over 40 hosts, so every shard gets some, in calls of 20
    let links: Vec<String> = (0..400)
        .map(|i| format!("http://h{}.com/{i}", i % 40))
        .collect();
    for chunk in links.chunks(20) {
        assert_eq!(seed(&q, chunk).await.added, 20);
        let s = q.seen_cache_stats();
        assert!(s.entries <= 100, "{s:?}");
    }
    let s = q.seen_cache_stats();
    assert!(s.resets > 0 && s.entries > 0, "{s:?}");
    // the last links were kept (their shards' parts were not the fullest when it filled):
    // seeded again, some are answered from the cache, and Redis agrees on every one
    let last = &links[380..];
    let again = seed(&q, last).await;
    assert_eq!((again.added, again.duplicates), (0, 20));
    assert!(
        q.seen_cache_stats().hits > s.hits,
        "{:?}",
        q.seen_cache_stats()
    );
}

/// A full cache drops the links met once before those met again: a link every page repeats (a
/// site's navigation) keeps being answered from the cache while new links fill it many times.
#[tokio::test]
async fn links_met_again_outlast_a_full_cache() {
    let name = unique("seen-cache-generations");
    let config = Config {
        seen_cache: 100,
        ..config()
    };
    let q = Queue::connect(&test_url(), &name, config).await.unwrap();
    let navigation = urls("site.com", 5);
    assert_eq!(seed(&q, &navigation).await.added, 5);
    for page in 0..20 {
        // each page: the navigation again, and 30 links never seen before
        let mut links = navigation.clone();
        links.extend((0..30).map(|i| format!("http://site.com/p{page}/{i}")));
        let before = q.seen_cache_stats();
        let report = seed(&q, &links).await;
        assert_eq!((report.added, report.duplicates), (30, 5), "page {page}");
        let after = q.seen_cache_stats();
        assert_eq!(after.hits - before.hits, 5, "page {page}: {after:?}");
        assert!(after.entries <= 100, "{after:?}");
    }
    // 605 links went through a cache of 100: it made room many times
    assert!(
        q.seen_cache_stats().resets >= 5,
        "{:?}",
        q.seen_cache_stats()
    );
}

/// Links a warm client has met before (canonical forms it keeps, fingerprints it knows) are
/// answered link for link as a client without a cache answers them: the same added,
/// duplicate and invalid links, in every form a page's links take, on page after page.
#[tokio::test]
async fn a_warm_client_answers_every_link_as_a_cold_one_does() {
    let mut opened = Vec::new();
    for (name, c) in [
        ("seen-cache-forms-warm", cached()),
        ("seen-cache-forms-cold", config()),
    ] {
        let c = Config {
            sort_query: true,
            ..c
        };
        opened.push(Queue::connect(&test_url(), &unique(name), c).await.unwrap());
    }
    let (warm, cold) = (&opened[0], &opened[1]);
    let links = [
        "https://Site.example:443/a/../nav?b=2&a=1#top",
        "https://site.example/nav?a=1&b=2",
        "http://bücher.example/ü",
        "http://xn--bcher-kva.example/%C3%BC",
        "http://[::1]:8080/x",
        "https://site.example/p/{page}",
        "next.html",
        "/about",
        "//cdn.example/lib.js",
        "#top",
        "https:relative",
        "mailto:team@site.example",
        "https://exa mple.com/",
        "https://",
        "HTTPS://SITE.EXAMPLE/nav?b=2&a=1",
    ];
    // (the links wait an hour: each round leases the page it seeds, whose URL they resolve against)
    let later = SeedOptions {
        delay: Duration::from_secs(3600),
        ..SeedOptions::default()
    };
    for page in 0..4 {
        let mut answers = Vec::new();
        for q in [warm, cold] {
            let url = format!("https://site.example/dir/page{page}.html");
            q.seed(&items(&[url.as_str()]), &SeedOptions::default())
                .await
                .unwrap();
            let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
            let found: Vec<String> = links
                .iter()
                .map(|l| l.replace("{page}", &page.to_string()))
                .collect();
            let refs: Vec<&str> = found.iter().map(String::as_str).collect();
            let (acked, report) = q
                .ack_with_links(&lease.handle(), &items(&refs), &later)
                .await
                .unwrap();
            assert!(acked);
            let invalid: Vec<(usize, String)> = report
                .invalid
                .iter()
                .map(|i| (i.index, i.reason.code().to_string()))
                .collect();
            let queued: Vec<bool> = report.ids.iter().map(Option::is_some).collect();
            assert_eq!(lease.url.as_deref(), Some(url.as_str()));
            answers.push((report.added, report.duplicates, invalid, queued));
        }
        assert_eq!(answers[0], answers[1], "page {page}");
        assert!(answers[0].2.len() >= 3, "the vector has links refused");
    }
    // the warm client answered the links it met again from its cache
    assert!(
        warm.seen_cache_stats().hits >= 10,
        "{:?}",
        warm.seen_cache_stats()
    );
    let (w, c) = (warm.stats().await.unwrap(), cold.stats().await.unwrap());
    assert_eq!(
        (w.seen, w.delayed, w.duplicates_total),
        (c.seen, c.delayed, c.duplicates_total)
    );
}
