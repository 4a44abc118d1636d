//! Operating named crawls (docs/crawls.md, "Operating crawls"): a capped crawl never has more
//! items leased than its cap, whatever the number of workers; a paused crawl has none leased; a
//! rated crawl's leases are spaced; weights share each host; a crawl deleted mid-drain leaves the
//! others whole; other crawls on the same hosts go on; held hosts come back when the crawl may
//! lease again.
mod common;

use common::*;
use crawlq::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn no_delay() -> Config {
    Config {
        host_delay: Duration::ZERO,
        ..config()
    }
}

/// `per_host` URLs on each of `hosts` hosts, in host order.
fn spread(prefix: &str, hosts: usize, per_host: usize) -> Vec<SeedItem> {
    (0..per_host)
        .flat_map(|i| {
            (0..hosts).map(move |h| SeedItem::from(format!("http://h{h}.com/{prefix}{i}")))
        })
        .collect()
}

/// Lease one at a time until nothing is leasable, acking each; the crawls leased in order.
async fn drain(q: &Queue<RedisExecutor>) -> Vec<Option<String>> {
    let mut out = Vec::new();
    loop {
        let got = q.lease(1, Duration::ZERO).await.unwrap();
        if got.is_empty() {
            return out;
        }
        q.ack(&handles(&got)).await.unwrap();
        out.extend(got.into_iter().map(|l| l.crawl));
    }
}

#[tokio::test]
async fn a_crawls_cap_holds_under_sixteen_workers() {
    let url = test_url();
    let q = Arc::new(open("crawl-cap-16", no_delay()).await);
    let shards = q.shard_count().await.unwrap() as u64;
    let cap = 4.max(shards);
    q.seed(&spread("big", 40, 10), &into("big")).await.unwrap();
    q.seed(&spread("small", 40, 3), &into("small"))
        .await
        .unwrap();
    let stats = q.set_crawl_cap("big", Some(cap)).await.unwrap();
    assert_eq!((stats.cap, stats.paused), (Some(cap), false));

    // each worker counts its leases of the capped crawl from the lease's return to just
    // before its ack: a lower bound of what Redis counts, so it may never pass the cap
    let in_hand = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (q, in_hand, most, done) = (q.clone(), in_hand.clone(), most.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut idle = 0;
            while idle < 20 {
                let got = q.lease(1, Duration::from_millis(50)).await.unwrap();
                let Some(lease) = got.first() else {
                    idle += 1;
                    continue;
                };
                idle = 0;
                let big = lease.crawl.as_deref() == Some("big");
                if big {
                    let now = in_hand.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
                if big {
                    in_hand.fetch_sub(1, Ordering::SeqCst);
                }
                q.ack(&handles(&got)).await.unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    // Redis's own count, read while the workers run
    let mut seen_leased = 0;
    while done.load(Ordering::SeqCst) < 520 {
        let s = q.crawl_stats("big").await.unwrap();
        assert!(
            s.leased <= cap,
            "{} of the crawl leased at once, cap {cap}",
            s.leased
        );
        seen_leased = seen_leased.max(s.leased);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for w in workers {
        w.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst) as u64;
    assert!(
        most <= cap,
        "{most} leases of the crawl in hand at once, cap {cap}"
    );
    assert!(most >= 2.min(cap), "the cap was used: {most} at once");
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.done, stats.pending, stats.leased), (520, 0, 0));
    let big = q.crawl_stats("big").await.unwrap();
    assert_eq!((big.done, big.held_hosts, big.leased), (400, 0, 0));
    assert!(seen_leased <= cap);
}

#[tokio::test]
async fn a_capped_crawls_hosts_wait_and_come_back_on_its_answers() {
    let url = test_url();
    // (one shard: which hosts wait depends only on the lease order)
    let q = open(
        "crawl-cap-hold",
        Config {
            shards: None,
            ..no_delay()
        },
    )
    .await;
    q.seed(&spread("a", 3, 2), &into("capped")).await.unwrap();
    q.set_crawl_cap("capped", Some(1)).await.unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1, "one at a time under a cap of 1");
    let s = q.crawl_stats("capped").await.unwrap();
    assert_eq!((s.leased, s.ready, s.held_hosts), (1, 5, 3));
    check_invariants(&url, &q).await;
    // an item of another crawl on a held host takes it back to be leased
    q.seed(&items(&["http://h1.com/other"]), &into("other"))
        .await
        .unwrap();
    let other = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].crawl.as_deref(), Some("other"));
    // the answer frees the slot: a held host comes back and the next item is leased
    q.ack(&handles(&first)).await.unwrap();
    q.ack(&handles(&other)).await.unwrap();
    let next = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].crawl.as_deref(), Some("capped"));
    check_invariants(&url, &q).await;
    // a higher cap releases the held hosts at once
    q.set_crawl_cap("capped", Some(10)).await.unwrap();
    let rest = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(rest.len(), 4);
    q.ack(&handles(&next)).await.unwrap();
    q.ack(&handles(&rest)).await.unwrap();
    let s = q.crawl_stats("capped").await.unwrap();
    assert_eq!((s.done, s.held_hosts, s.cap), (6, 0, Some(10)));
    q.set_crawl_cap("capped", None).await.unwrap();
    assert_eq!(q.crawl_stats("capped").await.unwrap().cap, None);
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn a_paused_crawl_leases_nothing_while_the_others_go_on() {
    let url = test_url();
    let q = open("crawl-pause", no_delay()).await;
    q.seed(&spread("p", 20, 3), &into("paused")).await.unwrap();
    q.seed(&spread("o", 10, 2), &into("other")).await.unwrap();
    q.seed(&spread("d", 5, 1), &SeedOptions::default())
        .await
        .unwrap();
    q.pause_crawl("paused").await.unwrap();
    let leased = drain(&q).await;
    assert_eq!(
        leased.len(),
        25,
        "the other crawls' items and the default crawl's"
    );
    assert!(leased.iter().all(|c| c.as_deref() != Some("paused")));
    let s = q.crawl_stats("paused").await.unwrap();
    assert!(s.paused);
    assert_eq!((s.ready, s.leased, s.held_hosts), (60, 0, 20));
    check_invariants(&url, &q).await;
    // seeds go on while paused; the hosts they touch are looked at again and held again
    q.seed(&spread("p2-", 20, 1), &into("paused"))
        .await
        .unwrap();
    assert!(drain(&q).await.is_empty());
    q.resume_crawl("paused").await.unwrap();
    let s = q.crawl_stats("paused").await.unwrap();
    assert_eq!((s.paused, s.held_hosts), (false, 0));
    let leased = drain(&q).await;
    assert_eq!(leased.len(), 80);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.pending, stats.leased, stats.done), (0, 0, 105));
}

#[tokio::test]
async fn a_paused_crawls_leases_in_hand_may_be_answered_and_its_retries_wait() {
    let url = test_url();
    let q = open("crawl-pause-leased", no_delay()).await;
    q.seed(&spread("x", 2, 2), &into("c")).await.unwrap();
    let got = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(got.len(), 2);
    q.pause_crawl("c").await.unwrap();
    assert!(q.ack(&handles(&got[..1])).await.unwrap()[0]);
    q.release(&handles(&got[1..])).await.unwrap();
    assert!(q.lease(4, Duration::ZERO).await.unwrap().is_empty());
    let s = q.crawl_stats("c").await.unwrap();
    assert_eq!((s.done, s.ready, s.leased), (1, 3, 0));
    check_invariants(&url, &q).await;
    q.resume_crawl("c").await.unwrap();
    assert_eq!(drain(&q).await.len(), 3);
}

#[tokio::test]
async fn crawls_are_listed_and_limits_checked() {
    let q = open("crawl-list", no_delay()).await;
    assert!(q.crawls().await.unwrap().is_empty());
    q.seed(&items(&["http://a.com/1"]), &into("zeta"))
        .await
        .unwrap();
    q.seed(&items(&["http://b.com/1"]), &into("alpha"))
        .await
        .unwrap();
    q.pause_crawl("paused-before-seeding").await.unwrap();
    assert_eq!(
        q.crawls().await.unwrap(),
        ["alpha", "paused-before-seeding", "zeta"]
    );
    let shards = q.shard_count().await.unwrap() as u64;
    for bad in [0, shards - 1] {
        if bad == 0 || bad < shards {
            let err = q.set_crawl_cap("alpha", Some(bad)).await.unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
    }
    let err = q.pause_crawl("bad name").await.unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(q.crawl_stats("alpha").await.unwrap().cap, None);
}

#[tokio::test]
async fn deleting_a_crawl_mid_drain_leaves_the_other_crawls_whole() {
    let url = test_url();
    let q = Arc::new(open("crawl-delete", no_delay()).await);
    q.seed(&spread("doomed", 20, 20), &into("doomed"))
        .await
        .unwrap();
    q.seed(&spread("kept", 20, 10), &into("kept"))
        .await
        .unwrap();
    q.seed(&spread("plain", 20, 2), &SeedOptions::default())
        .await
        .unwrap();
    // each crawl's delayed items and dead letters too
    let later = SeedOptions {
        delay: Duration::from_secs(3600),
        ..into("doomed")
    };
    q.seed(&spread("doomed-later", 5, 1), &later).await.unwrap();
    let later_kept = SeedOptions {
        delay: Duration::from_secs(3600),
        ..into("kept")
    };
    q.seed(&spread("kept-later", 5, 1), &later_kept)
        .await
        .unwrap();
    let mut doomed_dead = 0;
    let mut kept_dead = 0;
    while doomed_dead < 3 || kept_dead < 3 {
        let got = q.lease(1, Duration::ZERO).await.unwrap();
        let crawl = got[0].crawl.clone().unwrap_or_default();
        let count = if crawl == "doomed" {
            &mut doomed_dead
        } else {
            &mut kept_dead
        };
        if *count < 3 && !crawl.is_empty() {
            dead_letter(&q, &got, |_| "gone".into()).await;
            *count += 1;
        } else {
            q.release(&handles(&got)).await.unwrap();
        }
    }
    let kept_before = q.crawl_stats("kept").await.unwrap();
    assert_eq!((kept_before.dead, kept_before.delayed), (3, 5));

    // workers run before, during and after the deletion
    let done = Arc::new(AtomicUsize::new(0));
    let lost = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (q, done, lost) = (q.clone(), done.clone(), lost.clone());
        workers.push(tokio::spawn(async move {
            let mut acked: Vec<Option<String>> = Vec::new();
            let mut idle = 0;
            while idle < 20 {
                let got = q.lease(2, Duration::from_millis(50)).await.unwrap();
                if got.is_empty() {
                    idle += 1;
                    continue;
                }
                idle = 0;
                tokio::time::sleep(Duration::from_millis(2)).await;
                for (lease, ok) in got.iter().zip(q.ack(&handles(&got)).await.unwrap()) {
                    if ok {
                        done.fetch_add(1, Ordering::SeqCst);
                        acked.push(lease.crawl.clone());
                    } else {
                        lost.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(
                            lease.crawl.as_deref(),
                            Some("doomed"),
                            "only the deleted crawl's leases are lost"
                        );
                    }
                }
            }
            acked
        }));
    }
    while done.load(Ordering::SeqCst) < 60 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let gone = q.delete_crawl("doomed").await.unwrap();
    assert_eq!(gone.crawl, "doomed");
    assert_eq!((gone.delayed, gone.dead), (5, 3));
    assert!(gone.ready > 0, "{gone:?}");
    let mut acked = Vec::new();
    for w in workers {
        acked.extend(w.await.unwrap());
    }
    let acked_doomed = acked
        .iter()
        .filter(|c| c.as_deref() == Some("doomed"))
        .count() as u64;
    assert_eq!(
        acked_doomed + gone.removed() - gone.dead + doomed_dead as u64,
        400 + 5,
        "each of the deleted crawl's items acked, removed or dead before"
    );
    assert_eq!(gone.leased, lost.load(Ordering::SeqCst) as u64);
    let kept = q.crawl_stats("kept").await.unwrap();
    assert_eq!(
        (kept.done, kept.dead, kept.delayed, kept.ready, kept.leased),
        (197, 3, 5, 0, 0)
    );
    assert_eq!(kept.seeded_total, kept_before.seeded_total);
    assert_eq!(
        acked.iter().filter(|c| c.is_none()).count(),
        40,
        "the default crawl's items all acked"
    );
    let doomed = q.crawl_stats("doomed").await.unwrap();
    assert_eq!(
        doomed,
        CrawlStats::default(),
        "nothing of the deleted crawl is left"
    );
    assert_eq!(q.crawls().await.unwrap(), ["kept"]);
    let stats = check_invariants(&url, &q).await;
    assert_eq!(
        (stats.ready, stats.leased, stats.delayed, stats.dead),
        (0, 0, 5, 3)
    );
    // the name may be seeded again, as a fresh crawl: its URLs are new to it
    let urls = items(&["http://h0.com/doomed0", "http://h0.com/new"]);
    let again = q.seed(&urls, &into("doomed")).await.unwrap();
    assert_eq!((again.added, again.duplicates), (2, 0));
    let again = q.seed(&urls, &into("doomed")).await.unwrap();
    assert_eq!((again.added, again.duplicates), (0, 2));
    assert_eq!(q.crawl_stats("doomed").await.unwrap().seen, 2);
    let after = check_invariants(&url, &q).await;
    assert_eq!(after.seen, stats.seen + 2);
}

#[tokio::test]
async fn deleting_a_small_crawl_reads_its_own_hosts_not_the_queues() {
    // (a server of its own: its command counts are the test's)
    let server = RedisServer::start();
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&server.url(), "delete-small", one_shard)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    // 3,000 hosts of a large crawl; a small one on 3 of them, beside the large one's lanes
    let big: Vec<SeedItem> = (0..3000)
        .map(|h| SeedItem::from(format!("http://h{h}.com/big")))
        .collect();
    q.seed(&big, &into("big")).await.unwrap();
    q.seed(&spread("small", 3, 4), &into("small"))
        .await
        .unwrap();
    server.cli(&["CONFIG", "RESETSTAT"]);
    assert_eq!(q.delete_crawl("small").await.unwrap().ready, 12);
    // each host looked at reads its lanes (ZRANGE hl:<host>): a walk of every host holding
    // items would read 3,000
    let lane_reads = calls_of(&server, "zrange");
    assert!(lane_reads < 30, "{lane_reads} lane reads");
    assert_eq!(calls_of(&server, "zscan"), 0, "hostitems not walked");
    assert_eq!(q.crawl_stats("small").await.unwrap(), CrawlStats::default());
    assert_eq!(q.crawl_stats("big").await.unwrap().ready, 3000);
    check_invariants(&server.url(), &q).await;

    // a crawl on 700 hosts (an index Redis keeps as a hash table, scanned a page at a time),
    // 2 items each: calls of at most 500 records stop mid-page and take it up again
    q.seed(&spread("medium", 700, 2), &into("medium"))
        .await
        .unwrap();
    server.cli(&["CONFIG", "RESETSTAT"]);
    // what was removed so far, after each call
    let seen = std::sync::Mutex::new(Vec::new());
    let gone = q
        .delete_crawl_with_progress("medium", |so_far| {
            seen.lock().unwrap().push(so_far.clone());
        })
        .await
        .unwrap();
    assert_eq!((gone.crawl.as_str(), gone.ready), ("medium", 1400));
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= 3, "{} calls reported", seen.len());
    assert!(
        seen.windows(2).all(|w| w[0].removed() <= w[1].removed()),
        "the figures only grow"
    );
    assert!(seen.iter().all(|s| s.crawl == "medium"));
    assert_eq!(seen.last(), Some(&gone), "the last figures are the total");
    assert_eq!(calls_of(&server, "zscan"), 0, "hostitems not walked");
    assert!(
        calls_of(&server, "hscan") >= 3,
        "the index read page by page"
    );
    assert_eq!(
        q.crawl_stats("medium").await.unwrap(),
        CrawlStats::default()
    );
    assert_eq!(q.crawl_stats("big").await.unwrap().ready, 3000);
    check_invariants(&server.url(), &q).await;

    // lanes the crawl's index of hosts does not list, as a queue seeded by a build that did not
    // keep it has: the deletion still finds them, walking the hosts holding items
    let report = q
        .seed(&spread("again", 3, 4), &into("small"))
        .await
        .unwrap();
    assert_eq!(report.added, 12);
    assert_eq!(q.crawl_stats("small").await.unwrap().hosts, 3);
    server.cli(&["DEL", &format!("{base}:ci:small")]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    assert_eq!(q.delete_crawl("small").await.unwrap().ready, 12);
    // (the walk of hostitems stops once the crawl counts no ready item)
    assert!(calls_of(&server, "zscan") > 0, "hostitems walked");
    assert_eq!(q.crawl_stats("small").await.unwrap(), CrawlStats::default());
    assert_eq!(q.crawl_stats("big").await.unwrap().ready, 3000);
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn deleting_a_crawl_finds_its_delayed_items_among_other_records_that_look_alike() {
    let server = RedisServer::start();
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&server.url(), "delete-delayed", one_shard)
        .await
        .unwrap();
    let later = |crawl: &str| SeedOptions {
        delay: Duration::from_secs(3600),
        ..into(crawl)
    };
    // a name with the characters a Redis glob reads as patterns; a crawl those would match,
    // were they not escaped; a record of another crawl whose payload holds the deleted crawl's
    // record field (the walk of `delayed` lets Redis pass over what cannot be the crawl's, then
    // reads each record it kept)
    let name = "re*[1]?";
    q.seed(&spread("big", 500, 2), &later("big")).await.unwrap();
    q.seed(&spread("mine", 3, 1), &later(name)).await.unwrap();
    q.seed(&spread("now", 2, 1), &into(name)).await.unwrap();
    q.seed(&spread("alike", 2, 1), &later("reXX1Y"))
        .await
        .unwrap();
    let decoy = SeedOptions {
        payload: Some(serde_json::json!({"a": 1, "crawl": name, "tag": 0})),
        ..later("other")
    };
    q.seed(&spread("decoy", 1, 1), &decoy).await.unwrap();
    let gone = q.delete_crawl(name).await.unwrap();
    assert_eq!((gone.delayed, gone.ready), (3, 2));
    assert_eq!(q.crawl_stats(name).await.unwrap(), CrawlStats::default());
    for (crawl, delayed) in [("big", 1000), ("reXX1Y", 2), ("other", 1)] {
        assert_eq!(
            q.crawl_stats(crawl).await.unwrap().delayed,
            delayed,
            "{crawl}"
        );
    }
    assert_eq!(q.stats().await.unwrap().delayed, 1003);
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn deleting_a_crawl_finds_its_dead_letters_among_other_records_that_look_alike() {
    // a name with a Redis glob's pattern characters; dead letters of other crawls whose
    // reasons spell the crawl's record field, and of the crawl whose reasons spell another's
    let server = RedisServer::start();
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&server.url(), "delete-dead", one_shard)
        .await
        .unwrap();
    let name = "re*[1]?";
    q.seed(&spread("big", 300, 1), &into("big")).await.unwrap();
    q.seed(&spread("mine", 3, 1), &into(name)).await.unwrap();
    q.seed(&spread("alike", 2, 1), &into("reXX1Y"))
        .await
        .unwrap();
    let decoy = SeedOptions {
        payload: Some(serde_json::json!({"a": 1, "crawl": name, "tag": 0})),
        ..into("other")
    };
    q.seed(&spread("decoy", 1, 1), &decoy).await.unwrap();
    let leased = q.lease(1000, Duration::ZERO).await.unwrap();
    assert_eq!(leased.len(), 306);
    // the crawl's reasons spell another crawl's record field, and the others' spell its own
    dead_letter(&q, &leased, |l| {
        if l.crawl.as_deref() == Some(name) {
            r#","crawl":"reXX1Y","tag":"#.into()
        } else {
            format!(r#"gone ,"crawl":"{name}","tag":"#)
        }
    })
    .await;
    q.seed(&spread("now", 2, 1), &into(name)).await.unwrap();
    let gone = q.delete_crawl(name).await.unwrap();
    assert_eq!((gone.dead, gone.ready), (3, 2));
    assert_eq!(q.crawl_stats(name).await.unwrap(), CrawlStats::default());
    for (crawl, dead) in [("big", 300), ("reXX1Y", 2), ("other", 1)] {
        assert_eq!(q.crawl_stats(crawl).await.unwrap().dead, dead, "{crawl}");
    }
    assert_eq!(q.stats().await.unwrap().dead, 303);
    let listed = q.dead(1000, 0).await.unwrap();
    assert_eq!((listed.total, listed.items.len()), (303, 303));
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn a_deleted_crawls_name_starts_a_fresh_crawl_each_time() {
    let url = test_url();
    let config = Config {
        seen_cache: 1000,
        ..no_delay()
    };
    let q = open("crawl-name-again", config).await;
    let urls = spread("p", 4, 5);
    q.seed(&urls, &into("job")).await.unwrap();
    q.seed(&urls, &into("other")).await.unwrap();
    q.seed(&urls, &SeedOptions::default()).await.unwrap();
    let seen_before = q.stats().await.unwrap().seen;
    // the cache knows every URL of the first run: it must not answer for the second
    assert_eq!(q.seed(&urls, &into("job")).await.unwrap().duplicates, 20);
    for run in 1..=3u64 {
        let gone = q.delete_crawl("job").await.unwrap();
        assert_eq!(gone.removed(), 20);
        assert_eq!(q.crawl_stats("job").await.unwrap(), CrawlStats::default());
        assert_eq!(
            q.stats().await.unwrap().seen,
            seen_before - 20,
            "run {run}: its URLs are not seen"
        );
        let report = q.seed(&urls, &into("job")).await.unwrap();
        assert_eq!((report.added, report.duplicates), (20, 0), "run {run}");
        let report = q.seed(&urls, &into("job")).await.unwrap();
        assert_eq!((report.added, report.duplicates), (0, 20), "run {run}");
        assert_eq!(q.stats().await.unwrap().seen, seen_before, "run {run}");
        check_invariants(&url, &q).await;
    }
    // the other crawls' URLs stayed seen all along
    for other in [into("other"), SeedOptions::default()] {
        assert_eq!(q.seed(&urls, &other).await.unwrap().duplicates, 20);
    }

    // a host deleted with its seen URLs forgotten: the fresh crawl's URLs of it are new again
    let gone = q.delete_host("h1.com", true).await.unwrap();
    assert_eq!(gone.forgotten, 15, "5 URLs of each of three crawls");
    assert_eq!(q.crawl_stats("job").await.unwrap().seen, 15);
    let report = q.seed(&urls, &into("job")).await.unwrap();
    assert_eq!((report.added, report.duplicates), (5, 15));
    assert_eq!(q.crawl_stats("job").await.unwrap().seen, 20);
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn seeds_into_a_crawl_being_deleted_are_refused_whole() {
    // (one shard on the shared server: the test writes the mark itself)
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&shared().url(), &unique("crawl-delete-refuse"), one_shard)
        .await
        .unwrap();
    q.seed(&spread("a", 2, 2), &into("c")).await.unwrap();
    let stats = q.crawl_stats("c").await.unwrap();
    assert_eq!((stats.paused, stats.deleting), (false, false));
    // the first step's mark, as a deletion that is still running leaves it
    let base = q.ops().keys().base().to_string();
    shared().cli(&["HSET", &format!("{base}:crawlcfg"), "c", ":d"]);
    let stats = q.crawl_stats("c").await.unwrap();
    assert_eq!(
        (stats.paused, stats.deleting, stats.ready),
        (true, true, 4),
        "shown as being deleted (and paused: nothing of it is leased)"
    );
    let err = q
        .seed(&items(&["http://x.com/1"]), &into("c"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("being deleted"), "{err}");
    assert!(err.to_string().contains("deleted again"), "{err}"); // the way out of a stopped one
    assert!(
        q.lease(10, Duration::ZERO).await.unwrap().is_empty(),
        "nothing of it leased"
    );
    let err = q.pause_crawl("c").await.unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(q.delete_crawl("c").await.unwrap().ready, 4);
    let stats = q.crawl_stats("c").await.unwrap();
    assert_eq!((stats.paused, stats.deleting), (false, false));
    assert_eq!(
        q.seed(&items(&["http://x.com/1"]), &into("c"))
            .await
            .unwrap()
            .added,
        1
    );
    check_invariants(&shared().url(), &q).await;
}

#[tokio::test]
async fn a_crawl_of_weight_three_gets_three_leases_to_one_on_each_host() {
    let url = test_url();
    // one host, delay 0: the lease order is the host's fair order
    let q = open(
        "crawl-weight",
        Config {
            host_delay: Duration::ZERO,
            ..fixed_clock_config()
        },
    )
    .await;
    let stats = q.set_crawl_weight("heavy", Some(3)).await.unwrap();
    assert_eq!(stats.weight, 3);
    q.seed(&spread("h", 1, 12), &into("heavy")).await.unwrap();
    q.seed(&spread("l", 1, 12), &into("light")).await.unwrap();
    let order: Vec<String> = drain(&q)
        .await
        .into_iter()
        .take(16)
        .map(|c| c.unwrap())
        .collect();
    let heavy = order.iter().filter(|c| *c == "heavy").count();
    assert_eq!(heavy, 12, "{order:?}");
    // in every window of 4 leases while both have items: 3 of the heavy crawl
    for window in order[..12].chunks(4) {
        let h = window.iter().filter(|c| *c == "heavy").count();
        assert_eq!(h, 3, "{order:?}");
    }
    check_invariants(&url, &q).await;
    for bad in [0, 1001] {
        let err = q.set_crawl_weight("heavy", Some(bad)).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    assert_eq!(q.set_crawl_weight("heavy", None).await.unwrap().weight, 1);
    assert_eq!(q.crawl_stats("never").await.unwrap(), CrawlStats::default());
}

#[tokio::test]
async fn a_capped_crawls_expired_leases_free_its_slots_and_release_its_hosts() {
    let url = test_url();
    let q = open(
        "crawl-cap-expiry",
        Config {
            shards: None,
            host_delay: Duration::ZERO,
            lease_ttl: Duration::from_secs(30),
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&spread("x", 4, 2), &into("c")).await.unwrap();
    q.set_crawl_cap("c", Some(2)).await.unwrap();
    let held = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(held.len(), 2);
    assert!(q.crawl_stats("c").await.unwrap().held_hosts > 0);
    // the workers vanish: their leases expire and are taken back by the next lease call
    q.set_fixed_clock(Some(T0 + 31_000));
    let next = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(next.len(), 2, "the reclaimed slots are used again");
    let s = q.crawl_stats("c").await.unwrap();
    assert_eq!((s.leased, s.ready), (2, 6));
    check_invariants(&url, &q).await;
    q.ack(&handles(&next)).await.unwrap();
    q.set_crawl_cap("c", None).await.unwrap();
    assert_eq!(drain(&q).await.len(), 6);
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn a_cap_a_host_pause_and_an_in_flight_limit_hold_together() {
    let url = test_url();
    let q = open(
        "crawl-cap-host-limits",
        Config {
            shards: None,
            host_delay: Duration::ZERO,
            host_in_flight: 1,
            ..config()
        },
    )
    .await;
    q.seed(&spread("a", 3, 3), &into("capped")).await.unwrap();
    q.seed(&spread("b", 3, 3), &into("free")).await.unwrap();
    q.set_crawl_cap("capped", Some(1)).await.unwrap();
    q.pause_host("h0.com", None).await.unwrap();
    let first = q.lease(10, Duration::ZERO).await.unwrap();
    // one item per host (in-flight limit 1), h0 paused, at most one of the capped crawl
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(
        first
            .iter()
            .all(|l| !l.url.as_deref().unwrap().contains("h0.com"))
    );
    assert!(
        first
            .iter()
            .filter(|l| l.crawl.as_deref() == Some("capped"))
            .count()
            <= 1
    );
    check_invariants(&url, &q).await;
    // answers free the in-flight slots and the cap's slot; the pause still holds h0
    q.ack(&handles(&first)).await.unwrap();
    let second = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(second.len(), 2);
    assert!(
        second
            .iter()
            .all(|l| !l.url.as_deref().unwrap().contains("h0.com"))
    );
    check_invariants(&url, &q).await;
    q.ack(&handles(&second)).await.unwrap();
    q.resume_host("h0.com").await.unwrap();
    q.set_crawl_cap("capped", None).await.unwrap();
    let mut done = first.len() + second.len();
    loop {
        let got = q.lease(10, Duration::ZERO).await.unwrap();
        if got.is_empty() {
            break;
        }
        done += got.len();
        q.ack(&handles(&got)).await.unwrap();
    }
    assert_eq!(done, 18);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.pending, stats.leased, stats.done), (0, 0, 18));
}

#[tokio::test]
async fn deleting_a_crawl_releases_the_hosts_held_for_it() {
    let url = test_url();
    let q = open(
        "crawl-delete-held",
        Config {
            shards: None,
            ..no_delay()
        },
    )
    .await;
    q.seed(&spread("p", 5, 2), &into("paused")).await.unwrap();
    q.pause_crawl("paused").await.unwrap();
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(q.crawl_stats("paused").await.unwrap().held_hosts, 5);
    // another crawl's items arrive on two of the held hosts: those come back at once
    q.seed(
        &items(&["http://h1.com/o", "http://h2.com/o"]),
        &into("other"),
    )
    .await
    .unwrap();
    check_invariants(&url, &q).await;
    let gone = q.delete_crawl("paused").await.unwrap();
    assert_eq!(gone.ready, 10);
    let stats = check_invariants(&url, &q).await;
    assert_eq!((stats.ready, stats.hosts, stats.hosts_waiting), (2, 2, 0));
    assert_eq!(drain(&q).await.len(), 2);
}

#[tokio::test]
async fn a_crawls_rate_spaces_its_leases_and_the_other_crawls_go_on() {
    let url = test_url();
    // (one shard: the whole rate is this shard's)
    let q = open(
        "crawl-rate",
        Config {
            shards: None,
            host_delay: Duration::ZERO,
            ..fixed_clock_config()
        },
    )
    .await;
    q.seed(&spread("r", 3, 3), &into("slow")).await.unwrap();
    q.seed(&spread("o", 3, 1), &into("other")).await.unwrap();
    let stats = q.set_crawl_rate("slow", Some(10.0)).await.unwrap();
    assert_eq!(stats.rate, Some(10.0));
    // at T0: one lease of the slow crawl, the other crawl's three, then the hosts wait
    let first = q.lease(20, Duration::ZERO).await.unwrap();
    let slow = |ls: &[Lease]| {
        ls.iter()
            .filter(|l| l.crawl.as_deref() == Some("slow"))
            .count()
    };
    assert_eq!((slow(&first), first.len()), (1, 4), "{first:?}");
    assert!(q.lease(20, Duration::ZERO).await.unwrap().is_empty());
    check_invariants(&url, &q).await;
    // each 100 ms (10 a second) one more
    for step in 1..=3 {
        q.set_fixed_clock(Some(T0 + step * 100 - 1));
        assert!(
            q.lease(20, Duration::ZERO).await.unwrap().is_empty(),
            "step {step}"
        );
        q.set_fixed_clock(Some(T0 + step * 100));
        let got = q.lease(20, Duration::ZERO).await.unwrap();
        assert_eq!(slow(&got), 1, "step {step}: {got:?}");
    }
    check_invariants(&url, &q).await;
    // without the rate the rest goes at once
    assert_eq!(q.set_crawl_rate("slow", None).await.unwrap().rate, None);
    q.set_fixed_clock(Some(T0 + 1000));
    assert_eq!(q.lease(20, Duration::ZERO).await.unwrap().len(), 5);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = q.set_crawl_rate("slow", Some(bad)).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn a_crawls_rate_is_shared_by_the_shards() {
    let q = open("crawl-rate-shards", no_delay()).await;
    let shards = q.shard_count().await.unwrap() as f64;
    q.seed(&spread("r", 30, 2), &into("slow")).await.unwrap();
    assert_eq!(
        q.set_crawl_rate("slow", Some(3.0 * shards))
            .await
            .unwrap()
            .rate,
        Some(3.0 * shards)
    );
    // one lease call: at most one lease of the crawl per shard before the next time comes
    let got = q.lease(60, Duration::ZERO).await.unwrap();
    assert!(
        !got.is_empty() && got.len() as f64 <= shards,
        "{} leased at once with {shards} shards",
        got.len()
    );
}

#[tokio::test]
async fn a_foreign_value_at_a_limits_key_is_reported_and_nothing_is_lost() {
    // (one shard on the shared server: the test writes the keys itself)
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&shared().url(), &unique("crawl-limits-foreign"), one_shard)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    q.seed(&spread("a", 2, 2), &into("c")).await.unwrap();
    shared().cli(&["SET", &format!("{base}:crawlcfg"), "x"]);
    // leasing goes on as without limits; a change of limits says what is wrong
    let err = q.set_crawl_cap("c", Some(1)).await.unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    assert!(err.to_string().contains(":crawlcfg"), "{err}");
    let got = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(got.len(), 4);
    q.ack(&handles(&got)).await.unwrap();
    shared().cli(&["DEL", &format!("{base}:crawlcfg")]);
    // a host that should be held for a paused crawl while its mark holds a foreign value is
    // held as a host whose key holds one (paused until resumed): nothing of it is lost
    q.seed(&spread("b", 1, 2), &into("c")).await.unwrap();
    q.pause_crawl("c").await.unwrap();
    shared().cli(&["SET", &format!("{base}:crawlheld"), "x"]);
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    let info = q.host_info("h0.com").await.unwrap();
    assert!(info.paused, "{info:?}");
    shared().cli(&["DEL", &format!("{base}:crawlheld")]);
    q.resume_crawl("c").await.unwrap();
    q.resume_host("h0.com").await.unwrap();
    let rest = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(rest.len(), 2);
    check_invariants(&shared().url(), &q).await;
}

#[tokio::test]
async fn a_worker_leases_from_its_chosen_crawls_only() {
    let url = test_url();
    let q = open("crawl-chosen", no_delay()).await;
    q.seed(&spread("big", 300, 2), &into("big")).await.unwrap();
    // the small crawl's hosts come last in every order the big crawl's are leased in
    let small: Vec<SeedItem> = (0..10)
        .map(|i| SeedItem::from(format!("http://h{}.com/small{i}", 295 + i % 5)))
        .collect();
    q.seed(&small, &into("small")).await.unwrap();
    q.seed(&items(&["http://h0.com/plain"]), &SeedOptions::default())
        .await
        .unwrap();
    let worker = Queue::connect(
        &url,
        q.name(),
        Config {
            lease_crawls: vec!["small".into()],
            ..no_delay()
        },
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..50 {
        let batch = worker.lease(4, Duration::from_millis(20)).await.unwrap();
        if batch.is_empty() && got.len() == 10 {
            break;
        }
        worker.ack(&handles(&batch)).await.unwrap();
        got.extend(batch);
    }
    assert_eq!(got.len(), 10);
    assert!(got.iter().all(|l| l.crawl.as_deref() == Some("small")));
    let big = q.crawl_stats("big").await.unwrap();
    assert_eq!((big.ready, big.leased), (600, 0));
    check_invariants(&url, &q).await;
    // ack_and_lease keeps to the chosen crawls too; a worker of several takes from each
    q.seed(&spread("more", 3, 1), &into("small")).await.unwrap();
    let both = Queue::connect(
        &url,
        q.name(),
        Config {
            lease_crawls: vec!["small".into(), "big".into()],
            ..no_delay()
        },
    )
    .await
    .unwrap();
    let first = worker.lease(1, Duration::from_millis(50)).await.unwrap();
    assert_eq!(first[0].crawl.as_deref(), Some("small"));
    let opts = LeaseOptions {
        max: 10,
        wait: Duration::from_millis(50),
        ttl: None,
    };
    let (acked, next) = worker.ack_and_lease(&handles(&first), &opts).await.unwrap();
    assert_eq!(acked, [true]);
    assert!(!next.is_empty() && next.iter().all(|l| l.crawl.as_deref() == Some("small")));
    worker.ack(&handles(&next)).await.unwrap();
    let mixed = both.lease(50, Duration::from_millis(50)).await.unwrap();
    assert!(
        mixed.iter().all(|l| l.crawl.as_deref() == Some("big")),
        "small is drained"
    );
    assert!(!mixed.is_empty());
    both.ack(&handles(&mixed)).await.unwrap();
    // the default crawl's item is left to workers of every crawl
    assert_eq!(q.stats().await.unwrap().ready, 600 - mixed.len() as u64 + 1);
    check_invariants(&url, &q).await;
    // a name out of its rules is refused when the worker connects
    let err = Queue::connect(
        &url,
        q.name(),
        Config {
            lease_crawls: vec!["a:b".into()],
            ..no_delay()
        },
    )
    .await
    .expect_err("refused");
    assert_eq!(err.code(), "CONFIG", "{err}");
}

/// The indexes a seed refused over a budget.
fn over_budget(report: &SeedReport) -> Vec<usize> {
    assert!(
        report
            .invalid
            .iter()
            .all(|i| i.reason.code() == "budget_exhausted"),
        "{report:?}"
    );
    report.invalid.iter().map(|i| i.index).collect()
}

#[tokio::test]
async fn a_crawls_host_budget_holds_per_host_and_leaves_other_crawls_alone() {
    let url = test_url();
    let q = open("crawl-host-budget", no_delay()).await;
    let stats = q.set_crawl_host_budget("trial", Some(2)).await.unwrap();
    assert_eq!(stats.host_budget, Some(2));
    // a crawl with only a budget is listed
    assert_eq!(q.crawls().await.unwrap(), ["trial"]);

    // 4 URLs on each of 3 hosts (index = i * 3 + host): the first two of each host come in
    let batch = spread("p", 3, 4);
    let report = q.seed(&batch, &into("trial")).await.unwrap();
    assert_eq!(report.added, 6);
    assert_eq!(over_budget(&report), (6..12).collect::<Vec<_>>());
    // another crawl on the same hosts has no budget: all of it comes in
    let report = q.seed(&batch, &into("full")).await.unwrap();
    assert_eq!((report.added, report.invalid.len()), (6 + 6, 0));
    assert_eq!(q.stats().await.unwrap().over_budget_total, 6);

    // refused URLs were not marked seen: a larger budget lets the next of each host in
    q.set_crawl_host_budget("trial", Some(3)).await.unwrap();
    let report = q.seed(&batch, &into("trial")).await.unwrap();
    assert_eq!((report.added, report.duplicates), (3, 6));
    assert_eq!(over_budget(&report), (9..12).collect::<Vec<_>>());

    // the host's own budget (all crawls together) holds beside the crawl's
    q.set_host_budget("h1.com", Some(1)).await.unwrap();
    q.set_crawl_host_budget("both", Some(5)).await.unwrap();
    let on_h1: Vec<SeedItem> = (0..3)
        .map(|i| SeedItem::from(format!("http://h1.com/both{i}")))
        .collect();
    let report = q.seed(&on_h1, &into("both")).await.unwrap();
    assert_eq!((report.added, over_budget(&report)), (1, vec![1, 2]));
    q.set_host_budget("h1.com", None).await.unwrap();

    // no budget: the rest comes in; the counts stay (a budget set again goes on from them)
    let stats = q.set_crawl_host_budget("trial", None).await.unwrap();
    assert_eq!(stats.host_budget, None);
    let report = q.seed(&batch, &into("trial")).await.unwrap();
    assert_eq!((report.added, report.invalid.len()), (3, 0));
    assert_eq!(q.crawl_stats("trial").await.unwrap().seeded_total, 12);
    check_invariants(&url, &q).await;

    // deleting the crawl removes its budget and counts: the name starts again without either
    q.set_crawl_host_budget("trial", Some(1)).await.unwrap();
    q.delete_crawl("trial").await.unwrap();
    assert_eq!(q.crawl_stats("trial").await.unwrap().host_budget, None);
    assert!(!q.crawls().await.unwrap().contains(&"trial".to_string()));
    // (were its counts kept, each host would be past a budget of 1 already)
    q.set_crawl_host_budget("trial", Some(1)).await.unwrap();
    let report = q.seed(&spread("q", 3, 2), &into("trial")).await.unwrap();
    assert_eq!((report.added, over_budget(&report)), (3, vec![3, 4, 5]));
    let err = q
        .set_crawl_host_budget("bad name", Some(1))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    check_invariants(&url, &q).await;
}

#[tokio::test]
async fn a_foreign_value_at_a_crawl_budget_key_fails_the_seed_whole() {
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&shared().url(), &unique("crawl-budget-foreign"), one_shard)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    shared().cli(&["SET", &format!("{base}:crawlseed"), "x"]);
    let err = q.seed(&spread("a", 2, 2), &into("c")).await.unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    assert!(err.to_string().contains(":crawlseed"), "{err}");
    assert_eq!(q.stats().await.unwrap().pending, 0);
    // the default crawl does not read it
    assert_eq!(
        q.seed(&spread("a", 2, 2), &SeedOptions::default())
            .await
            .unwrap()
            .added,
        4
    );
    shared().cli(&["DEL", &format!("{base}:crawlseed")]);
    q.set_crawl_host_budget("c", Some(1)).await.unwrap();
    shared().cli(&["SET", &format!("{base}:cu:c"), "x"]);
    let err = q.seed(&spread("b", 2, 2), &into("c")).await.unwrap_err();
    assert_eq!(err.code(), "CORRUPT", "{err}");
    assert!(err.to_string().contains(":cu:c"), "{err}");
    shared().cli(&["DEL", &format!("{base}:cu:c")]);
    let report = q.seed(&spread("b", 2, 2), &into("c")).await.unwrap();
    assert_eq!((report.added, report.invalid.len()), (2, 2));
    check_invariants(&shared().url(), &q).await;
}

#[tokio::test]
async fn a_worker_of_chosen_crawls_answers_and_leases_in_one_call() {
    // (a server of its own: its call counts are the test's)
    let server = RedisServer::start();
    let one_shard = Config {
        shards: None,
        ..no_delay()
    };
    let q = Queue::connect(&server.url(), "chosen-combined", one_shard.clone())
        .await
        .unwrap();
    q.seed(&spread("big", 50, 2), &into("big")).await.unwrap();
    q.seed(&spread("small", 5, 2), &into("small"))
        .await
        .unwrap();
    let worker = Queue::connect(
        &server.url(),
        "chosen-combined",
        Config {
            lease_crawls: vec!["small".into()],
            ..one_shard
        },
    )
    .await
    .unwrap();
    let next = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let mut page = worker.lease(1, Duration::ZERO).await.unwrap();
    let mut taken = page.clone();
    server.cli(&["CONFIG", "RESETSTAT"]);
    let mut calls = 0;
    // a page answered with its links and the next leased, then an answer and a lease
    for round in 0..6 {
        let handle = page[0].handle();
        let (acked, got) = if round % 2 == 0 {
            let link = format!("http://h{round}.com/found");
            let (acked, report, got) = worker
                .ack_with_links_and_lease(&handle, &items(&[&link]), &SeedOptions::default(), &next)
                .await
                .unwrap();
            assert_eq!(report.added, 1);
            (acked, got)
        } else {
            let (acked, got) = worker.ack_and_lease(&[handle], &next).await.unwrap();
            (acked[0], got)
        };
        calls += 1;
        assert!(acked, "round {round}");
        assert_eq!(got.len(), 1, "round {round}");
        taken.extend(got.iter().cloned());
        page = got;
    }
    assert_eq!(
        calls_of(&server, "fcall") + calls_of(&server, "evalsha"),
        calls,
        "one call per answer"
    );
    assert!(
        taken.iter().all(|l| l.crawl.as_deref() == Some("small")),
        "only the chosen crawl's items (the links went into it too, as a page's links do)"
    );
    assert_eq!(q.crawl_stats("big").await.unwrap().leased, 0);
    check_invariants(&server.url(), &q).await;
}

#[tokio::test]
async fn a_worker_of_one_chosen_crawl_among_many_hosts_gets_an_item_on_every_call() {
    // 500 hosts of the chosen crawl (a set Redis keeps as a hash table, scanned a few hosts at
    // a time across calls, its scan going round mid-call), 500 of another crawl; half of the
    // chosen crawl's items answered and leased one by one, with no wait: every call finds one
    let server = RedisServer::start();
    let one_shard = Config {
        shards: None,
        ..Config::default()
    };
    let q = Queue::connect(&server.url(), "chosen-many", one_shard.clone())
        .await
        .unwrap();
    for c in 0..2 {
        let mine: Vec<SeedItem> = (0..2000)
            .skip(c)
            .step_by(2)
            .map(|i| SeedItem::from(format!("https://h{}.example/{i}", i % 1000)))
            .collect();
        q.seed(&mine, &into(&format!("c{c}"))).await.unwrap();
    }
    let worker = Queue::connect(
        &server.url(),
        "chosen-many",
        Config {
            lease_crawls: vec!["c0".into()],
            host_delay: Duration::ZERO,
            ..one_shard
        },
    )
    .await
    .unwrap();
    let one = LeaseOptions {
        max: 1,
        wait: Duration::ZERO,
        ttl: None,
    };
    let mut held = worker.lease_with(&one).await.unwrap();
    for i in 1..500 {
        let answered: Vec<LeaseHandle> = held.iter().map(Lease::handle).collect();
        held = worker.ack_and_lease(&answered, &one).await.unwrap().1;
        assert_eq!(held.len(), 1, "call {i}");
        assert_eq!(held[0].crawl.as_deref(), Some("c0"));
    }
    assert_eq!(q.crawl_stats("c1").await.unwrap().ready, 1000);
    check_invariants(&server.url(), &q).await;
}
