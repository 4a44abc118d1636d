//! Pages that concurrent callers answer with `ack_with_links_and_lease` while a call carrying
//! pages is on its way go together in the next call: each page gets its own report, ack flag
//! and leases; a failed call fails every page it carried; a caller that goes away strands
//! nobody. (Each test polls the answers on one task, so which pages go together is fixed: the
//! first goes alone, the rest wait for it and go in one call.)
mod common;

use common::*;
use crawlq::*;
use futures_util::future::join_all;
use std::time::Duration;

const NEXT: LeaseOptions = LeaseOptions {
    max: 1,
    wait: Duration::ZERO,
    ttl: None,
};

/// `page` answered alone with `links` (and the next page leased).
async fn answer_with_next(
    q: &Queue<RedisExecutor>,
    page: &Lease,
    links: &[&str],
) -> (bool, SeedReport, Vec<Lease>) {
    q.ack_with_links_and_lease(
        &page.handle(),
        &items(links),
        &SeedOptions::default(),
        &NEXT,
    )
    .await
    .unwrap()
}

/// A queue of its own server (its call counts are the test's) with `pages` pages leased.
async fn leased_pages(
    server: &RedisServer,
    name: &str,
    pages: usize,
    config: Config,
) -> (Queue<RedisExecutor>, Vec<Lease>) {
    let q = Queue::connect(&server.url(), name, config).await.unwrap();
    let urls: Vec<String> = (0..pages)
        .map(|i| format!("http://p{i}.com/"))
        .chain(["http://x.com/seen".to_string()])
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    let mut leased = q.lease(pages, Duration::ZERO).await.unwrap();
    leased.sort_by(|a, b| a.url.cmp(&b.url));
    assert_eq!(leased.len(), pages);
    (q, leased)
}

/// Each page answered with its links and the next lease, the answers polled together on one
/// task (so the first goes alone and the others wait for it).
async fn answer_together(
    q: &Queue<RedisExecutor>,
    pages: &[Lease],
    links: &[Vec<SeedItem>],
) -> Vec<Result<(bool, SeedReport, Vec<Lease>)>> {
    join_all(pages.iter().zip(links).map(|(page, links)| async move {
        q.ack_with_links_and_lease(&page.handle(), links, &SeedOptions::default(), &NEXT)
            .await
    }))
    .await
}

/// Every added link has an id of its own (`added` of them in `ids`), and no item was leased
/// twice (`pages` of them in `leased`).
fn assert_all_distinct(mut ids: Vec<String>, added: usize, leased: &[Lease], pages: usize) {
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), added, "every added link has an id of its own");
    let mut urls: Vec<&str> = leased.iter().map(|l| l.url.as_deref().unwrap()).collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), pages, "no item leased twice");
}

/// A queue of 3 shards on one Redis, whatever CRAWLQ_TEST_SHARDS says.
fn three_shards() -> Config {
    Config {
        shards: Some(3),
        ..Config::default()
    }
}

/// Three shards, each page's answer lingering `ms` for others.
fn lingering_on_shards(ms: u64) -> Config {
    Config {
        answer_linger: Duration::from_millis(ms),
        ..three_shards()
    }
}

/// `config` with a known-seen cache.
fn cached(config: Config) -> Config {
    Config {
        seen_cache: 10_000,
        ..config
    }
}

fn one_call_only() -> Config {
    // one shard, whatever CRAWLQ_TEST_SHARDS says: the call counts below are one shard's
    Config {
        shards: None,
        ..Config::default()
    }
}

/// One shard, each page's answer lingering `ms` for others (Config::answer_linger).
fn lingering(ms: u64) -> Config {
    Config {
        answer_linger: Duration::from_millis(ms),
        ..one_call_only()
    }
}

#[tokio::test]
async fn pages_answered_meanwhile_go_in_one_call_each_with_its_own_report_and_lease() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-together", 5, one_call_only()).await;
    server.cli(&["CONFIG", "RESETSTAT"]);
    let links: Vec<Vec<SeedItem>> = (0..5)
        .map(|i| {
            let new = format!("http://n{i}.com/new");
            items(&[
                "http://x.com/seen",
                &new,
                "http://not a host/",
                "http://s.com/shared",
            ])
        })
        .collect();
    let answers = answer_together(&q, &pages, &links).await;
    assert_eq!(
        calls_of(&server, "fcall") + calls_of(&server, "evalsha"),
        2,
        "the first page alone, the four answered meanwhile in one call"
    );
    let mut leased = Vec::new();
    let mut ids = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        let (acked, report, next) = answer.unwrap();
        assert!(acked, "page {i} acked");
        // the shared link is new for the first page that carries it, a duplicate after
        let (added, duplicates) = if i == 0 { (2, 1) } else { (1, 2) };
        assert_eq!(
            (report.added, report.duplicates),
            (added, duplicates),
            "page {i}"
        );
        assert_eq!(report.invalid.len(), 1);
        assert_eq!(report.invalid[0].index, 2, "its index in its own page");
        assert!(report.ids[0].is_none() && report.ids[1].is_some());
        assert_eq!(report.ids[3].is_some(), i == 0);
        ids.extend(report.ids.into_iter().flatten());
        assert_eq!(next.len(), 1, "page {i} got its next page");
        leased.extend(next);
    }
    assert_all_distinct(ids, 6, &leased, 5);
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (
            stats.done,
            stats.leased,
            stats.ready,
            stats.duplicates_total
        ),
        (5, 5, 2, 9)
    );
}

#[tokio::test]
async fn a_page_whose_lease_expired_and_was_taken_over_answers_lost_alone_and_its_links_are_still_seeded()
 {
    let server = RedisServer::start();
    let q = Queue::connect(
        &server.url(),
        "pages-stale",
        Config {
            fixed_clock_ms: Some(T0),
            ..one_call_only()
        },
    )
    .await
    .unwrap();
    q.seed(
        &items(&["http://a.com/", "http://b.com/", "http://c.com/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let lease = |max: usize, secs: u64| LeaseOptions {
        max,
        wait: Duration::ZERO,
        ttl: Some(Duration::from_secs(secs)),
    };
    let stale = q.lease_with(&lease(1, 1)).await.unwrap().remove(0);
    let mut pages = q.lease_with(&lease(2, 60)).await.unwrap();
    q.set_fixed_clock(Some(T0 + 2_000));
    // another worker takes the expired page over
    let fresh = q.lease_with(&lease(1, 60)).await.unwrap().remove(0);
    assert_eq!(fresh.id, stale.id);
    // the stale page answered second: it goes with the third, after the first
    pages.insert(1, stale);
    let q = &q;
    let answers = join_all(pages.iter().enumerate().map(|(i, page)| {
        let link = format!("http://l{i}.com/");
        async move {
            q.ack_with_links_and_lease(
                &page.handle(),
                &items(&[&link]),
                &SeedOptions::default(),
                &NEXT,
            )
            .await
        }
    }))
    .await;
    let flags: Vec<bool> = answers.iter().map(|a| a.as_ref().unwrap().0).collect();
    assert_eq!(
        flags,
        vec![true, false, true],
        "only the stale page answers lost"
    );
    for answer in &answers {
        assert_eq!(
            answer.as_ref().unwrap().1.added,
            1,
            "every page's link seeded, the stale one's too"
        );
    }
    // the new holder's lease stands
    assert_eq!(q.ack(&[fresh.handle()]).await.unwrap(), vec![true]);
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.leased, stats.ready), (3, 3, 0));
}

#[tokio::test]
async fn a_failed_call_fails_every_page_it_carried() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-failed", 3, one_call_only()).await;
    // another program's value where the queue keeps its ready hosts
    server.cli(&["DEL", "crawlq:{pages-failed}:ready"]);
    server.cli(&["SET", "crawlq:{pages-failed}:ready", "not a zset"]);
    let q = &q;
    let answers = join_all(pages.iter().map(|page| async move {
        q.ack_with_links_and_lease(
            &page.handle(),
            &items(&["http://z.com/"]),
            &SeedOptions::default(),
            &NEXT,
        )
        .await
    }))
    .await;
    for answer in answers {
        assert!(
            matches!(answer, Err(Error::Corrupt(_))),
            "each page answers the call's error: {answer:?}"
        );
    }
}

#[tokio::test]
async fn a_caller_that_goes_away_strands_no_other() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-gone", 6, one_call_only()).await;
    let handles: Vec<LeaseHandle> = pages.iter().map(Lease::handle).collect();
    let none = SeedOptions::default();
    let answer = |i: usize| q.ack_with_links_and_lease(&handles[i], &[], &none, &NEXT);
    // a waiting caller dropped before its turn: its page is not sent, the line goes on
    let mut carrying = Box::pin(answer(0));
    let mut waiting = Box::pin(answer(1));
    assert!(futures_util::poll!(&mut carrying).is_pending());
    assert!(futures_util::poll!(&mut waiting).is_pending());
    drop(waiting);
    assert!(carrying.await.unwrap().0);
    // the carrying caller dropped mid-call: the waiting one carries its own page
    let mut carrying = Box::pin(answer(2));
    let mut waiting = Box::pin(answer(3));
    assert!(futures_util::poll!(&mut carrying).is_pending());
    assert!(futures_util::poll!(&mut waiting).is_pending());
    drop(carrying);
    let (acked, _, _) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the line is not stranded")
        .unwrap();
    assert!(acked);
    // the call ends and hands the line to the waiting caller, which goes away before it
    // looks: its turn passes on
    let mut carrying = Box::pin(answer(4));
    let mut waiting = Box::pin(answer(1));
    assert!(futures_util::poll!(&mut carrying).is_pending());
    assert!(futures_util::poll!(&mut waiting).is_pending());
    assert!(carrying.await.unwrap().0);
    drop(waiting);
    let (acked, _, _) = tokio::time::timeout(Duration::from_secs(5), answer(5))
        .await
        .expect("the line is not stranded")
        .unwrap();
    assert!(acked);
    // pages 0, 3, 4 and 5 answered, page 1 never sent; page 2's call went or not
    let stats = q.stats().await.unwrap();
    assert!(stats.done == 4 || stats.done == 5, "{stats:?}");
    assert!(
        q.ack(&handles[1..2]).await.unwrap()[0],
        "page 1's lease is still live"
    );
}

#[tokio::test]
async fn pages_answered_without_a_next_lease_go_with_those_that_lease() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-mixed", 4, one_call_only()).await;
    server.cli(&["CONFIG", "RESETSTAT"]);
    let q = &q;
    let answers = join_all(pages.iter().enumerate().map(|(i, page)| async move {
        let links = items(&[&format!("http://m{i}.com/")]);
        if i % 2 == 1 {
            let (acked, report) = q
                .ack_with_links(&page.handle(), &links, &SeedOptions::default())
                .await?;
            Ok((acked, report, Vec::new()))
        } else {
            q.ack_with_links_and_lease(&page.handle(), &links, &SeedOptions::default(), &NEXT)
                .await
        }
    }))
    .await;
    assert_eq!(calls_of(&server, "fcall") + calls_of(&server, "evalsha"), 2);
    for (i, answer) in answers.into_iter().enumerate() {
        let (acked, report, next) = answer.unwrap();
        assert!(acked);
        assert_eq!(report.added, 1);
        assert_eq!(next.len(), usize::from(i % 2 == 0), "page {i}");
    }
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.leased, stats.ready), (4, 2, 3));
}

/// From now on `SLOWLOG` records every call (read by `function_calls`).
fn log_every_call(server: &RedisServer) {
    server.cli(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    server.cli(&["CONFIG", "SET", "slowlog-max-len", "10000"]);
    server.cli(&["SLOWLOG", "RESET"]);
}

/// The calls of the operation `op` (its function `crawlq_<code hash>_<op>`) that `SLOWLOG`
/// recorded (`log_every_call`).
fn function_calls(server: &RedisServer, op: &str) -> usize {
    server
        .cli(&["SLOWLOG", "GET", "10000"])
        .lines()
        .filter_map(|line| line.trim().strip_prefix("crawlq_"))
        .filter(|name| name.split_once('_').is_some_and(|(_, rest)| rest == op))
        .count()
}

#[tokio::test]
async fn pages_of_a_queue_of_several_shards_go_together_per_shard_with_their_links_to_other_shards()
{
    let server = RedisServer::start();
    let config = three_shards();
    let (q, pages) = leased_pages(&server, "pages-shards", 12, config).await;
    log_every_call(&server);
    // each page links to its own host (its shard) and to another host (any shard)
    let links: Vec<Vec<SeedItem>> = pages
        .iter()
        .enumerate()
        .map(|(i, page)| {
            let own = page.url.as_deref().unwrap().replace(".com/", ".com/next");
            items(&[
                &own,
                &format!("http://elsewhere{i}.org/"),
                "http://not a host/",
            ])
        })
        .collect();
    let answers = answer_together(&q, &pages, &links).await;
    let page_calls = function_calls(&server, "ack_seed_lease");
    // 12 pages over 3 shards, in two waves per shard (the links of other shards go before the
    // pages that found them): in each wave the first call goes alone, the others in one
    assert!(
        (1..=12).contains(&page_calls),
        "{page_calls} ack_seed_lease calls for 12 pages"
    );
    assert_eq!(
        function_calls(&server, "ack_lease"),
        0,
        "no page acked apart"
    );
    // the links of other shards go through those shards' lines too: no seed call of their own
    assert_eq!(function_calls(&server, "seed"), 0);
    let calls = page_calls + function_calls(&server, "ack_seed");
    assert!(calls <= 12, "{calls} calls in all: at most four a shard");
    let mut ids = Vec::new();
    let mut leased = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        let (acked, report, next) = answer.unwrap();
        assert!(acked, "page {i} acked");
        assert_eq!((report.added, report.duplicates), (2, 0), "page {i}");
        assert_eq!(report.invalid.len(), 1);
        assert_eq!(report.invalid[0].index, 2);
        assert!(
            report.ids[0].is_some() && report.ids[1].is_some(),
            "page {i}"
        );
        ids.extend(report.ids.into_iter().flatten());
        assert_eq!(next.len(), 1, "page {i} got its next page");
        leased.extend(next);
    }
    assert_all_distinct(ids, 24, &leased, 12);
    let stats = check_invariants(&server.url(), &q).await;
    // the 12 pages and the one seen link seeded first, then 24 links; 12 answered, 12 leased
    assert_eq!(
        (stats.done, stats.leased, stats.ready, stats.seen),
        (12, 12, 13, 37)
    );
    // what the shards hold is what the index says: every ready item is leased by workers
    // that ask the queue, not only by those answering pages of its shard
    let rest = q.lease(100, Duration::ZERO).await.unwrap();
    assert_eq!(rest.len(), 13);
}

#[tokio::test]
async fn links_a_page_queues_on_its_own_shard_are_leasable_by_other_workers_at_once() {
    let server = RedisServer::start();
    let config = three_shards();
    let worker = Queue::connect(&server.url(), "pages-index", config.clone())
        .await
        .unwrap();
    let other = Queue::connect(&server.url(), "pages-index", config)
        .await
        .unwrap();
    for with_next in [false, true] {
        let page_url = format!("http://site-{with_next}.com/");
        worker
            .seed(&items(&[&page_url]), &SeedOptions::default())
            .await
            .unwrap();
        let page = worker.lease(1, Duration::ZERO).await.unwrap().remove(0);
        // the page's shard holds nothing ready now, and the queue's index says so
        assert!(other.lease(1, Duration::ZERO).await.unwrap().is_empty());
        let links: Vec<String> = (0..3).map(|i| format!("{page_url}{i}")).collect();
        let refs: Vec<&str> = links.iter().map(String::as_str).collect();
        let expected = if with_next {
            let (acked, report, next) = worker
                .ack_with_links_and_lease(
                    &page.handle(),
                    &items(&refs),
                    &SeedOptions::default(),
                    &NEXT,
                )
                .await
                .unwrap();
            assert!(acked && report.added == 3 && next.len() == 1);
            worker.ack(&[next[0].handle()]).await.unwrap();
            2
        } else {
            let (acked, report) = worker
                .ack_with_links(&page.handle(), &items(&refs), &SeedOptions::default())
                .await
                .unwrap();
            assert!(acked && report.added == 3);
            3
        };
        // a worker that only asks the queue (its index) finds them without waiting for a sweep
        let found = other.lease(10, Duration::ZERO).await.unwrap();
        assert_eq!(found.len(), expected, "with the next lease: {with_next}");
        other.ack(&handles(&found)).await.unwrap();
    }
}

#[tokio::test]
async fn a_page_whose_links_meet_a_foreign_value_fails_whole_and_stays_leased() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-foreign", 2, one_call_only()).await;
    // another program's value where the queue keeps a host's lane: the seed finds it after it
    // marked the link seen, and takes that back
    server.cli(&["SET", "crawlq:{pages-foreign}:l:0:lane.com", "not a list"]);
    let links = items(&["http://ok.com/", "http://lane.com/"]);
    for page in &pages {
        let answer = q
            .ack_with_links_and_lease(&page.handle(), &links, &SeedOptions::default(), &NEXT)
            .await;
        assert!(
            matches!(&answer, Err(Error::Corrupt(m)) if m.contains("l:0:lane.com")),
            "{answer:?}"
        );
        let answer = q
            .ack_with_links(&page.handle(), &links, &SeedOptions::default())
            .await;
        assert!(matches!(answer, Err(Error::Corrupt(_))), "{answer:?}");
    }
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (stats.done, stats.leased, stats.ready, stats.seen),
        (0, 2, 1, 3),
        "nothing acked, leased or seeded by the failed calls"
    );
    // once the value is gone, the same answers go through
    server.cli(&["DEL", "crawlq:{pages-foreign}:l:0:lane.com"]);
    let (acked, report) = q
        .ack_with_links(&pages[0].handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked && report.added == 2);
}

#[tokio::test]
async fn a_page_whose_links_to_another_shard_fail_is_not_answered_and_stays_leased() {
    let server = RedisServer::start();
    let config = three_shards();
    let (q, pages) = leased_pages(&server, "pages-other-shard", 1, config).await;
    let layout = q.layout().await.unwrap();
    let page = &pages[0];
    let own = layout.of_host("p0.com");
    // a host of another shard, and another program's value where that shard keeps its lane
    let host = (0..)
        .map(|i| format!("lane{i}.org"))
        .find(|h| layout.of_host(h) != own)
        .unwrap();
    let lane = format!(
        "{}:l:0:{host}",
        layout.shard(layout.of_host(&host)).keys().base()
    );
    server.cli(&["SET", &lane, "not a list"]);
    let links = items(&["http://p0.com/next", &format!("http://{host}/")]);
    for with_next in [false, true] {
        let answer = answer_page(&q, &page.handle(), &links, with_next).await;
        assert!(
            matches!(&answer, Err(Error::Corrupt(m)) if m.contains(&lane) && m.contains("not answered")),
            "{answer:?}"
        );
    }
    // the other shard's call failed first: the page was not acked, nothing was leased, and
    // its link on its own shard was not seeded
    let stats = q.stats().await.unwrap();
    assert_eq!(
        (stats.done, stats.leased, stats.ready, stats.seen),
        (0, 1, 1, 2),
        "the page stays leased, nothing seeded"
    );
    server.cli(&["DEL", &lane]);
    let (acked, report) = q
        .ack_with_links(&page.handle(), &links, &SeedOptions::default())
        .await
        .unwrap();
    assert!(acked && report.added == 2, "{report:?}");
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn links_another_shard_forgot_are_sent_before_the_page_is_answered() {
    // the page's links on another shard, held back by the known-seen cache, then forgotten
    // there (that shard's epoch moves): its call is refused, and they go again, all of them,
    // before the page's own call
    let server = RedisServer::start();
    let config = cached(three_shards());
    let (q, pages) = leased_pages(&server, "pages-other-epoch", 1, config).await;
    let layout = q.layout().await.unwrap();
    let own = layout.of_host("p0.com");
    let host = (0..)
        .map(|i| format!("far{i}.org"))
        .find(|h| layout.of_host(h) != own)
        .unwrap();
    let links: Vec<String> = (0..3).map(|i| format!("http://{host}/{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    q.seed(&items(&refs), &SeedOptions::default())
        .await
        .unwrap();
    let other = Queue::connect(&server.url(), "pages-other-epoch", three_shards())
        .await
        .unwrap();
    other.delete_host(&host, true).await.unwrap();
    let (acked, report, next) = answer_with_next(&q, &pages[0], &refs).await;
    assert!(acked, "{report:?}");
    assert_eq!((report.added, report.duplicates), (3, 0), "{report:?}");
    assert_eq!(q.seen_cache_stats().resent, 3);
    assert_eq!(
        errors_of(&server, "CRAWLQ_EPOCH"),
        1,
        "the links' call was refused once, then sent again"
    );
    assert_eq!(next.len(), 1);
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn pages_that_went_with_a_refused_one_are_sent_again_too() {
    // Pages answered together after the seen epoch moved, one with a link the cache held back
    // and one without: their call is refused, and both go again (the second with no hits of
    // its own), each acked with its links.
    let server = RedisServer::start();
    let config = cached(one_call_only());
    let (q, pages) = leased_pages(&server, "pages-refused-together", 3, config).await;
    q.seed(&items(&["http://gone.com/x"]), &SeedOptions::default())
        .await
        .unwrap();
    let other = Queue::connect(&server.url(), "pages-refused-together", one_call_only())
        .await
        .unwrap();
    other.delete_host("gone.com", true).await.unwrap();
    // the first page goes alone; the other two wait for it and go together
    let links = vec![
        Vec::new(),
        items(&["http://gone.com/x"]),
        items(&["http://fresh.com/y"]),
    ];
    let answers = answer_together(&q, &pages, &links).await;
    for (i, answer) in answers.into_iter().enumerate() {
        let (acked, report, _) = answer.unwrap_or_else(|e| panic!("page {i}: {e}"));
        assert!(acked, "page {i}");
        assert_eq!(report.added, links[i].len() as u64, "page {i}: {report:?}");
    }
    assert_eq!(
        errors_of(&server, "CRAWLQ_EPOCH"),
        1,
        "the two pages' call was refused once"
    );
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.seen), (3, 6), "{stats:?}");
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn with_a_linger_pages_answered_one_after_another_go_in_one_call() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-linger", 3, lingering(400)).await;
    let (unlingering, more) = leased_pages(&server, "pages-no-linger", 3, one_call_only()).await;
    // three pages answered 50 ms apart, each by a task of its own
    let answer_spaced = |q: std::sync::Arc<Queue<RedisExecutor>>, pages: Vec<Lease>| async move {
        let started = std::time::Instant::now();
        let tasks: Vec<_> = pages
            .into_iter()
            .enumerate()
            .map(|(i, page)| {
                let q = q.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50 * i as u64)).await;
                    let links = items(&[&format!("http://l{i}.com/")]);
                    let answer = q
                        .ack_with_links_and_lease(
                            &page.handle(),
                            &links,
                            &SeedOptions::default(),
                            &NEXT,
                        )
                        .await
                        .unwrap();
                    (answer, started.elapsed())
                })
            })
            .collect();
        join_all(tasks)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    };
    server.cli(&["CONFIG", "RESETSTAT"]);
    let answers = answer_spaced(std::sync::Arc::new(q), pages).await;
    assert_eq!(
        calls_of(&server, "fcall") + calls_of(&server, "evalsha"),
        1,
        "the first page waited for the two answered after it"
    );
    for (i, ((acked, report, next), took)) in answers.iter().enumerate() {
        assert!(acked, "page {i} acked");
        assert_eq!(
            (report.added, next.len()),
            (1, 1),
            "page {i}: its link and its next page"
        );
        assert!(
            *took >= Duration::from_millis(390),
            "page {i} answered after {took:?}"
        );
    }
    // the same without a linger: each page goes at once, alone
    server.cli(&["CONFIG", "RESETSTAT"]);
    let answers = answer_spaced(std::sync::Arc::new(unlingering), more).await;
    assert_eq!(calls_of(&server, "fcall") + calls_of(&server, "evalsha"), 3);
    assert!(
        answers
            .iter()
            .all(|((acked, _, next), _)| *acked && next.len() == 1)
    );
}

#[tokio::test]
async fn a_caller_that_goes_away_while_its_page_lingers_strands_no_other() {
    let server = RedisServer::start();
    let (q, pages) = leased_pages(&server, "pages-linger-gone", 2, lingering(300)).await;
    let none = SeedOptions::default();
    let handles: Vec<LeaseHandle> = pages.iter().map(Lease::handle).collect();
    let mut lingering = Box::pin(q.ack_with_links_and_lease(&handles[0], &[], &none, &NEXT));
    let mut waiting = Box::pin(q.ack_with_links_and_lease(&handles[1], &[], &none, &NEXT));
    assert!(futures_util::poll!(&mut lingering).is_pending());
    assert!(futures_util::poll!(&mut waiting).is_pending());
    drop(lingering);
    let (acked, _, next) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the line is not stranded")
        .unwrap();
    assert!(acked && next.len() == 1);
    // the page dropped while it lingered was never sent: still leased, not done
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.leased), (1, 2), "{stats:?}");
    assert!(
        q.ack(&handles[..1]).await.unwrap()[0],
        "its lease is still live"
    );
}

#[tokio::test]
async fn a_linger_longer_than_a_second_is_refused() {
    let too_long = Config {
        answer_linger: Duration::from_millis(1001),
        ..Config::default()
    };
    assert!(matches!(too_long.validate(), Err(Error::Config(m)) if m.contains("answer_linger")));
    let options = serde_json::json!({"answerLingerMs": 5000});
    let refused = Config::from_options(options.as_object().unwrap(), Style::Camel);
    assert!(matches!(refused, Err(Error::Config(m)) if m.contains("answer_linger")));
    let options = serde_json::json!({"answer_linger": 0.005});
    let parsed = Config::from_options(options.as_object().unwrap(), Style::Snake).unwrap();
    assert_eq!(
        parsed.answer_linger,
        Duration::from_millis(5),
        "seconds in snake_case"
    );
}

#[tokio::test]
async fn with_a_linger_pages_of_a_queue_of_several_shards_go_together_and_lose_no_link() {
    let server = RedisServer::start();
    let config = lingering_on_shards(300);
    let (q, pages) = leased_pages(&server, "pages-shards-linger", 9, config).await;
    log_every_call(&server);
    let q = std::sync::Arc::new(q);
    // each page, answered 10 ms after the one before by a task of its own, links to its own
    // host (its shard) and to another host (any shard)
    let tasks: Vec<_> = pages
        .iter()
        .enumerate()
        .map(|(i, page)| {
            let (q, handle) = (q.clone(), page.handle());
            let own = page.url.as_deref().unwrap().replace(".com/", ".com/next");
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10 * i as u64)).await;
                let links = items(&[&own, &format!("http://elsewhere{i}.org/")]);
                q.ack_with_links_and_lease(&handle, &links, &SeedOptions::default(), &NEXT)
                    .await
            })
        })
        .collect();
    let answers: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let page_calls = function_calls(&server, "ack_seed_lease");
    assert!(
        page_calls <= 6,
        "{page_calls} ack_seed_lease calls for 9 pages on 3 shards"
    );
    let mut ids = Vec::new();
    let mut leased = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        let (acked, report, next) = answer.unwrap();
        assert!(acked, "page {i} acked");
        assert_eq!(report.added, 2, "page {i}: both its links");
        ids.extend(report.ids.into_iter().flatten());
        leased.extend(next);
    }
    assert_all_distinct(ids, 18, &leased, 9);
    let stats = check_invariants(&server.url(), &q).await;
    assert_eq!((stats.done, stats.leased), (9, 9), "{stats:?}");
}

#[tokio::test]
async fn a_page_of_a_queue_of_several_shards_lingers_once_for_all_its_calls() {
    let server = RedisServer::start();
    let config = lingering_on_shards(600);
    let (q, pages) = leased_pages(&server, "pages-shards-linger-once", 1, config).await;
    log_every_call(&server);
    // links to 30 hosts: some of them on each shard
    let urls: Vec<String> = (0..30).map(|i| format!("http://far{i}.org/")).collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let (acked, report, next) = answer_with_next(&q, &pages[0], &refs).await;
    let took = started.elapsed();
    assert!(acked && next.len() == 1 && report.added == 30, "{report:?}");
    assert_eq!(
        function_calls(&server, "ack_seed"),
        2,
        "the page's links of the two other shards, each in a call of its own"
    );
    assert_eq!(function_calls(&server, "ack_seed_lease"), 1);
    // it lingered for other pages once (its other shards' calls), not again in its own line
    assert!(
        took >= Duration::from_millis(590) && took < Duration::from_millis(1100),
        "answered after {took:?}"
    );
    check_invariants(&server.url(), &q).await;
}
