//! Every script at every documented limit (lease max 10,000, reclaim_batch 10,000, promotions
//! of 10,000 delayed items or waiting hosts at once, seed_batch 10,000 in one lane, 10,000
//! leases answered in one call, 10,000 dead letters requeued by id), each followed by the
//! invariant checker. Lua's `unpack` stops at about 8,000 values; Redis does not roll a script
//! back, so a script that failed there after writing would leave duplicates and phantom leases.
mod common;

use common::*;
use crawlq::*;
use std::time::Duration;

const LIMIT: usize = 10_000;

fn urls(prefix: &str, hosts: usize, n: usize) -> Vec<SeedItem> {
    (0..n)
        .map(|i| format!("http://h{}.{prefix}.example/{i}", i % hosts).into())
        .collect()
}

async fn limit_queue(name: &str, config: Config) -> Queue<RedisExecutor> {
    open(
        name,
        Config {
            seed_batch: LIMIT,
            reclaim_batch: LIMIT,
            ..config
        },
    )
    .await
}

#[tokio::test]
async fn ten_thousand_delayed_items_come_due_and_are_leased_in_one_call() {
    let q = limit_queue("due", fixed_clock_config()).await;
    let opts = SeedOptions {
        delay: Duration::from_secs(1),
        ..Default::default()
    };
    assert_eq!(
        q.seed(&urls("due", 10, LIMIT), &opts).await.unwrap().added,
        10_000
    );
    check_invariants(&test_url(), &q).await;
    q.set_fixed_clock(Some(T0 + 2_000));
    let leases = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(
        leases.len(),
        LIMIT,
        "every due item promoted and leased at once"
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.leased, stats.delayed, stats.ready), (10_000, 0, 0));
    // and answered in one call each (the client splits them into round trips)
    assert!(q.ack(&handles(&leases)).await.unwrap().iter().all(|ok| *ok));
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.done, stats.leased), (10_000, 0));
}

#[tokio::test]
async fn ten_thousand_hosts_come_off_politeness_at_once() {
    let config = Config {
        host_delay: Duration::from_secs(1),
        ..fixed_clock_config()
    };
    let q = limit_queue("polite", config).await;
    q.seed(&urls("polite", LIMIT, 2 * LIMIT), &SeedOptions::default())
        .await
        .unwrap();
    let first = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), LIMIT, "one item per host");
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.hosts_waiting, stats.ready), (10_000, 10_000));
    assert!(
        q.lease(1, Duration::ZERO).await.unwrap().is_empty(),
        "all held back"
    );
    q.set_fixed_clock(Some(T0 + 1_000));
    let second = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(
        second.len(),
        LIMIT,
        "every host promoted and leased once more"
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.leased, stats.ready, stats.hosts), (20_000, 0, 0));
}

#[tokio::test]
async fn ten_thousand_expired_leases_are_reclaimed_in_one_lease_call() {
    let config = Config {
        lease_ttl: Duration::from_secs(10),
        max_attempts: 2,
        ..fixed_clock_config()
    };
    let q = limit_queue("reclaim", config).await;
    q.seed(&urls("reclaim", 50, LIMIT), &SeedOptions::default())
        .await
        .unwrap();
    let stale = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(stale.len(), LIMIT);
    q.set_fixed_clock(Some(T0 + 10_000));
    // one lease call reclaims every expired lease of each shard it asks (one shard: all)
    let shards = q.shard_count().await.unwrap() as u64;
    let mut reclaimed = 0;
    for _ in 0..shards {
        let batch = q.lease_once(1, Duration::from_secs(10)).await.unwrap();
        assert_eq!(batch.leases.len(), 1);
        reclaimed += batch.reclaimed;
    }
    assert_eq!(reclaimed, 10_000, "all expired leases, one call per shard");
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.leased, stats.ready), (shards, 10_000 - shards));
    // the stale tokens answer nothing
    assert!(q.ack(&handles(&stale)).await.unwrap().iter().all(|ok| !*ok));
    // a second expiry sends them to dead letters (max_attempts 2), again in one call
    let all = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(all.len() as u64, 10_000 - shards);
    q.set_fixed_clock(Some(T0 + 20_000));
    let report = q.reclaim(LIMIT).await.unwrap();
    assert_eq!(
        (report.requeued, report.dead, report.remaining),
        (0, 10_000, 0)
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.leased, stats.pending), (10_000, 0, 0));

    // 10,000 dead letters: listed, requeued by id in one call, then purged
    let page = q.dead(LIMIT, 0).await.unwrap();
    assert_eq!((page.total, page.items.len()), (10_000, 10_000));
    let ids: Vec<String> = page.items.iter().map(|d| d.id.clone()).collect();
    assert_eq!(q.requeue_dead(Some(&ids)).await.unwrap(), 10_000);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready), (0, 10_000));
}

#[tokio::test]
async fn a_seed_chunk_of_ten_thousand_fills_one_lane() {
    let q = limit_queue("lane", fixed_clock_config()).await;
    let report = q
        .seed(&urls("lane", 1, LIMIT), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(report.added, 10_000);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.ready, stats.hosts), (10_000, 1));
    // the whole chunk again, forced: every item is still queued, so none is queued twice
    let forced = SeedOptions {
        force: true,
        ..Default::default()
    };
    let again = q.seed(&urls("lane", 1, LIMIT), &forced).await.unwrap();
    assert_eq!((again.added, again.duplicates), (0, 10_000));
    // lease them all from the one host (no politeness delay), release them all, lease again
    let leases = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), LIMIT);
    assert!(
        q.release(&handles(&leases))
            .await
            .unwrap()
            .iter()
            .all(|ok| *ok)
    );
    check_invariants(&test_url(), &q).await;
    let leases = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    let lengthened = q
        .extend(&handles(&leases), Duration::from_secs(600))
        .await
        .unwrap();
    assert!(lengthened.iter().all(Option::is_some));
    let nacks: Vec<_> = leases
        .iter()
        .map(|l| {
            (
                l.handle(),
                NackOptions {
                    retry: false,
                    ..Default::default()
                },
            )
        })
        .collect();
    assert!(
        q.nack(&nacks)
            .await
            .unwrap()
            .iter()
            .all(|o| *o == NackOutcome::Dead)
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.leased, stats.ready), (10_000, 0, 0));
    assert_eq!(q.requeue_dead(None).await.unwrap(), 10_000);
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.dead, stats.ready), (0, 10_000));
}
