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
async fn ten_thousand_expired_leases_are_reclaimed_in_bounded_lease_calls() {
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
    // every lease call takes expired leases back first, at most RECLAIM_PER_CALL of them (so
    // no call holds Redis long): 10,000 come back over a few calls
    let shards = q.shard_count().await.unwrap() as u64;
    let (mut reclaimed, mut calls) = (0, 0u64);
    while reclaimed < 10_000 {
        let batch = q.lease_once(1, Duration::from_secs(10)).await.unwrap();
        assert_eq!(batch.leases.len(), 1);
        assert!(
            batch.reclaimed as usize <= RECLAIM_PER_CALL,
            "{}",
            batch.reclaimed
        );
        reclaimed += batch.reclaimed;
        calls += 1;
        assert!(
            calls <= 2 * (10_000 / RECLAIM_PER_CALL as u64) + shards,
            "{calls} calls"
        );
    }
    assert_eq!(reclaimed, 10_000, "all expired leases");
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.leased, stats.ready), (calls, 10_000 - calls));
    // the stale tokens answer nothing
    assert!(q.ack(&handles(&stale)).await.unwrap().iter().all(|ok| !*ok));
    // a second expiry sends them to dead letters (max_attempts 2), in bounded calls
    let all = q.lease(LIMIT, Duration::ZERO).await.unwrap();
    assert_eq!(all.len() as u64, 10_000 - calls);
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

/// One host with 5,000 priorities (two items each): leases come in priority order, each lease
/// reads only the host's best lane (O(log P)), and every lane keeps its own head age through
/// releases to the front of a lane, retries and a full drain.
#[tokio::test]
async fn one_host_with_five_thousand_priorities() {
    let q = limit_queue("prios", fixed_clock_config()).await;
    let item = |i: usize| {
        SeedItem::from(format!("http://p.prios.example/{i}"))
            .with_priority((i % 5000) as i64 - 2500)
    };
    let first: Vec<SeedItem> = (0..LIMIT / 2).map(item).collect();
    let second: Vec<SeedItem> = (LIMIT / 2..LIMIT).map(item).collect();
    q.seed(&first, &SeedOptions::default()).await.unwrap();
    q.set_fixed_clock(Some(T0 + 1_000));
    q.seed(&second, &SeedOptions::default()).await.unwrap();
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!((stats.ready, stats.hosts), (LIMIT as u64, 1));

    // the best lane first, its older item first
    let top = q.lease(100, Duration::ZERO).await.unwrap();
    let prios: Vec<i16> = top.iter().map(|l| l.priority).collect();
    let expected: Vec<i16> = (0..50).flat_map(|k| [2499 - k, 2499 - k]).collect();
    assert_eq!(prios, expected);
    assert!(top[0].enqueued_at_ms < top[1].enqueued_at_ms);
    check_invariants(&test_url(), &q).await;

    // released items go back to the front of their lanes; retried ones come back when due
    assert!(
        q.release(&handles(&top[..40]))
            .await
            .unwrap()
            .iter()
            .all(|ok| *ok)
    );
    let nacks: Vec<_> = handles(&top[40..60])
        .into_iter()
        .map(|h| {
            let delay = Some(Duration::from_secs(5));
            (
                h,
                NackOptions {
                    delay,
                    ..NackOptions::default()
                },
            )
        })
        .collect();
    q.nack(&nacks).await.unwrap();
    assert!(
        q.ack(&handles(&top[60..]))
            .await
            .unwrap()
            .iter()
            .all(|ok| *ok)
    );
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!(
        (stats.ready, stats.delayed, stats.done),
        (LIMIT as u64 - 60, 20, 40)
    );
    q.set_fixed_clock(Some(T0 + 10_000));

    // the rest, in calls the client splits: never a lower priority before a higher one
    let mut rest = Vec::new();
    loop {
        let got = q.lease(LIMIT, Duration::ZERO).await.unwrap();
        if got.is_empty() {
            break;
        }
        rest.extend(got);
    }
    assert_eq!(rest.len(), LIMIT - 40);
    assert!(rest.windows(2).all(|w| w[0].priority >= w[1].priority));
    let stats = check_invariants(&test_url(), &q).await;
    assert_eq!(
        (stats.ready, stats.hosts, stats.leased),
        (0, 0, LIMIT as u64 - 40)
    );
}
