//! Listing the queues under a prefix and removing one (`crawlq::catalog`): on this binary's own
//! Redis, and on a Redis Cluster when tools/test.sh sets CRAWLQ_TEST_URL.

mod common;

use common::*;
use crawlq::catalog::{QueueEntry, list_queues, remove_queue};
use crawlq::*;
use std::time::Duration;

async fn queue(prefix: &str, name: &str, shards: Option<u32>) -> Queue<RedisExecutor> {
    let config = Config {
        key_prefix: prefix.to_string(),
        shards,
        ..Config::default()
    };
    Queue::connect(&test_url(), name, config).await.unwrap()
}

#[tokio::test]
async fn queues_are_listed_once_each_with_their_shards_and_removed_without_a_trace() {
    let prefix = unique("catalog");
    let sharded = test_shards().unwrap_or(4).max(2);
    // names with glob and separator characters are matched literally
    let plain = queue(&prefix, "news*[1]", Some(1)).await;
    let wide = queue(&prefix, "shop:eu", Some(sharded)).await;
    let other = queue(&format!("{prefix}-other"), "elsewhere", None).await;
    let batch: Vec<SeedItem> = (0..40)
        .map(|i| format!("https://h{i}.example/p").into())
        .collect();
    for q in [&plain, &wide, &other] {
        q.seed(&batch, &SeedOptions::default()).await.unwrap();
    }

    let listed = list_queues(plain.executor(), &prefix).await.unwrap();
    assert_eq!(
        listed,
        [
            QueueEntry {
                name: "news*[1]".into(),
                shards: 1
            },
            QueueEntry {
                name: "shop:eu".into(),
                shards: sharded as usize
            },
        ],
        "each queue once, its shards not listed as queues, other prefixes left out"
    );

    let leased = wide.lease(1, Duration::ZERO).await.unwrap();
    let refused = remove_queue(&wide, false).await.unwrap_err();
    assert!(matches!(refused, Error::InvalidArgument(_)), "{refused}");
    assert!(refused.to_string().contains("1 leased"), "{refused}");
    assert_eq!(
        wide.stats().await.unwrap().pending,
        39,
        "a refused removal changes nothing"
    );
    drop(leased);

    let deleted = remove_queue(&wide, true).await.unwrap();
    assert!(deleted > sharded as u64, "every shard's keys: {deleted}");
    let left = plain
        .executor()
        .scan_keys(&format!("{prefix}:{{shop:eu*"))
        .await
        .unwrap();
    assert!(left.is_empty(), "keys left behind: {left:?}");
    assert_eq!(
        list_queues(plain.executor(), &prefix).await.unwrap(),
        [QueueEntry {
            name: "news*[1]".into(),
            shards: 1
        }]
    );
    assert_eq!(
        plain.stats().await.unwrap().pending,
        40,
        "the other queues are untouched"
    );
    assert_eq!(other.stats().await.unwrap().pending, 40);

    // a queue removed is a new queue for the next seed: nothing is seen any more
    let again = queue(&prefix, "shop:eu", Some(sharded)).await;
    let report = again.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!((report.added, report.duplicates), (40, 0));
}

#[tokio::test]
async fn a_queue_of_many_keys_is_removed_in_bounded_steps_and_its_handle_makes_it_again() {
    let prefix = unique("catalog-many");
    let shards = test_shards().unwrap_or(2).max(2);
    let big = queue(&prefix, "big", Some(shards)).await;
    let neighbour = queue(&prefix, "bigger", None).await;
    // a lane key per host: thousands of the queue's keys, over several SCAN steps of 1,000,
    // with another queue's keys (a name the first one is a prefix of) among them
    let hosts: Vec<SeedItem> = (0..3000)
        .map(|i| format!("https://h{i}.example/p").into())
        .collect();
    big.seed(&hosts, &SeedOptions::default()).await.unwrap();
    neighbour
        .seed(&hosts[..1500], &SeedOptions::default())
        .await
        .unwrap();
    let keys_of_big = || async {
        neighbour
            .executor()
            .scan_keys(&format!("{prefix}:{{big[}}:]*"))
            .await
            .unwrap()
    };

    // removed by a handle that did not ask for a shard count (it read the queue's): reading
    // through it afterwards does not make the queue again
    let reader = queue(&prefix, "big", None).await;
    assert_eq!(reader.stats().await.unwrap().pending, 3000);
    let deleted = reader.remove_queue(false).await.unwrap();
    assert!(deleted > 3000, "one lane key per host at least: {deleted}");
    assert_eq!(reader.stats().await.unwrap().pending, 0);
    let left = keys_of_big().await;
    assert!(left.is_empty(), "{} keys left behind", left.len());
    assert_eq!(neighbour.stats().await.unwrap().pending, 1500);
    let fresh = queue(&prefix, "big", None).await;
    assert_eq!(
        fresh.shard_count().await.unwrap(),
        1,
        "reads made nothing again"
    );
    // seeding through that handle makes the queue again with the shards it knew, which a
    // client opened afterwards finds, with the items
    let report = reader
        .seed(&hosts[..5], &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (5, 0));
    let later = queue(&prefix, "big", None).await;
    assert_eq!(later.shard_count().await.unwrap(), shards as usize);
    assert_eq!(later.stats().await.unwrap().pending, 5);

    // removed by a handle that asked for its shards: seeding through it again makes the queue
    // again with them, which a client that does not say how many finds
    let owner = queue(&prefix, "big", Some(shards)).await;
    owner.seed(&hosts, &SeedOptions::default()).await.unwrap();
    // (the keys deleted so far reported after each bounded call; the last is the total)
    let reports = std::sync::Mutex::new(Vec::new());
    let deleted = owner
        .remove_queue_with_progress(false, |keys| reports.lock().unwrap().push(keys))
        .await
        .unwrap();
    assert!(deleted > 3000);
    let reports = reports.into_inner().unwrap();
    assert!(reports.len() >= 2, "{reports:?}");
    assert!(reports.windows(2).all(|w| w[0] <= w[1]), "{reports:?}");
    assert_eq!(reports.last(), Some(&deleted));
    assert!(keys_of_big().await.is_empty());
    let report = owner
        .seed(&hosts[..10], &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (10, 0));
    let other_client = queue(&prefix, "big", None).await;
    assert_eq!(other_client.shard_count().await.unwrap(), shards as usize);
    assert_eq!(other_client.stats().await.unwrap().pending, 10);
}

#[tokio::test]
async fn a_paused_queue_leases_nothing_until_resumed_and_resume_wakes_a_blocked_lease() {
    let q = std::sync::Arc::new(open("paused", config()).await);
    q.seed(
        &items(&["https://p1.example/", "https://p2.example/"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert!(!q.pause().await.unwrap(), "was not paused");
    assert!(q.pause().await.unwrap(), "pausing twice is harmless");
    assert!(q.is_paused().await.unwrap());
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    // seeding and stats go on while paused
    q.seed(&items(&["https://p3.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(q.stats().await.unwrap().pending, 3);

    let waiting = {
        let q = q.clone();
        tokio::spawn(async move {
            let leases = q.lease(1, Duration::from_secs(10)).await.unwrap();
            (leases, std::time::Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a blocking lease waits through the pause"
    );
    let resumed_at = std::time::Instant::now();
    assert!(q.resume().await.unwrap(), "it was paused");
    let (leases, woke_at) = waiting.await.unwrap();
    assert_eq!(leases.len(), 1);
    let latency = woke_at.duration_since(resumed_at);
    // woken by the resume, not by the end of its 10 s wait (a loose bound: wall-clock time
    // on a loaded machine is not a measure)
    assert!(
        latency < Duration::from_secs(2),
        "resume woke the lease after {latency:?}"
    );
    assert!(!q.is_paused().await.unwrap());
    assert!(
        !q.resume().await.unwrap(),
        "resuming a running queue is harmless"
    );
    assert_eq!(q.lease(10, Duration::ZERO).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_timed_pause_ends_by_itself_and_a_blocked_lease_takes_work_then() {
    // the fixed clock: not before its end, at its end
    let q = open("paused-for", fixed_clock_config()).await;
    q.seed(&items(&["https://t1.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    assert!(!q.pause_for(Duration::from_secs(5)).await.unwrap());
    assert!(q.is_paused().await.unwrap());
    q.set_fixed_clock(Some(T0 + 4_999));
    assert!(q.lease(1, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 5_000));
    assert!(!q.is_paused().await.unwrap(), "over at its end");
    assert_eq!(q.lease(1, Duration::ZERO).await.unwrap().len(), 1);
    // a pause until resumed cut short to a timed one, then resumed early
    q.pause().await.unwrap();
    assert!(q.pause_for(Duration::from_secs(60)).await.unwrap());
    assert!(q.resume().await.unwrap());
    assert!(!q.is_paused().await.unwrap());
    let err = q
        .pause_for(Duration::from_secs(101 * 365 * 24 * 3600))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");

    // the real clock: a blocked lease call wakes at the end without a resume
    let q = open("paused-for-real", config()).await;
    q.seed(&items(&["https://t2.example/"]), &SeedOptions::default())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    q.pause_for(Duration::from_millis(700)).await.unwrap();
    let leases = q.lease(1, Duration::from_secs(20)).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(leases.len(), 1);
    assert!(
        waited >= Duration::from_millis(650) && waited < Duration::from_secs(10),
        "leased after {waited:?}"
    );
}

#[tokio::test]
async fn the_leases_held_are_listed_soonest_expiry_first_with_expired_ones_until_reclaimed() {
    let config = Config {
        host_delay: Duration::ZERO,
        lease_ttl: Duration::from_secs(60),
        ..common::config()
    };
    let q = open("held", config).await;
    let batch: Vec<SeedItem> = (0..30)
        .map(|i| format!("https://h{}.example/p{i}", i % 10).into())
        .collect();
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let empty = q.leased_items(10, 0).await.unwrap();
    assert_eq!((empty.total, empty.items.len()), (0, 0));
    assert!(empty.now_ms > 0, "the Redis clock comes with the page");

    let long = q.lease(5, Duration::ZERO).await.unwrap();
    let short = q
        .lease_with(&LeaseOptions {
            max: 3,
            wait: Duration::ZERO,
            ttl: Some(Duration::from_secs(1)),
        })
        .await
        .unwrap();
    assert_eq!((long.len(), short.len()), (5, 3));

    let page = q.leased_items(100, 0).await.unwrap();
    assert_eq!((page.total, page.items.len()), (8, 8));
    let deadlines: Vec<i64> = page.items.iter().map(|l| l.expires_at_ms).collect();
    assert!(deadlines.is_sorted(), "soonest expiry first: {deadlines:?}");
    let listed = |leases: &[Lease]| {
        let mut held: Vec<(String, u64, i64, Option<String>)> = leases
            .iter()
            .map(|l| (l.id.clone(), l.token, l.expires_at_ms, l.url.clone()))
            .collect();
        held.sort();
        held
    };
    let of_page = |items: &[LeasedItem]| {
        let mut held: Vec<(String, u64, i64, Option<String>)> = items
            .iter()
            .map(|l| {
                (
                    l.item.id.clone(),
                    l.token,
                    l.expires_at_ms,
                    l.item.url.clone(),
                )
            })
            .collect();
        held.sort();
        held
    };
    assert_eq!(
        of_page(&page.items[..3]),
        listed(&short),
        "the 1 s leases first"
    );
    assert_eq!(of_page(&page.items[3..]), listed(&long));
    assert_eq!(
        page.items[0].item.host,
        short
            .iter()
            .find(|l| l.id == page.items[0].item.id)
            .unwrap()
            .host
    );

    let part = q.leased_items(3, 2).await.unwrap();
    assert_eq!(part.total, 8);
    assert_eq!(
        of_page(&part.items),
        of_page(&page.items[2..5]),
        "a page from an offset"
    );
    assert_eq!(q.leased_items(0, 0).await.unwrap().total, 8);

    // an answered lease leaves the listing; an expired one stays until a lease call reclaims it
    assert_eq!(q.ack(&[long[0].handle()]).await.unwrap(), vec![true]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let page = q.leased_items(100, 0).await.unwrap();
    assert_eq!(page.total, 7);
    assert!(!page.items.iter().any(|l| l.item.id == long[0].id));
    let expired = page
        .items
        .iter()
        .filter(|l| l.expires_at_ms < page.now_ms)
        .count();
    assert_eq!(
        expired, 3,
        "the 1 s leases are past their deadline, still listed"
    );
    q.reclaim(100).await.unwrap();
    let page = q.leased_items(100, 0).await.unwrap();
    assert_eq!((page.total, of_page(&page.items)), (4, listed(&long[1..])));
}
