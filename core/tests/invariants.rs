//! The guarantees of docs/PROTOCOL.md (section 8), checked under concurrency, worker
//! crashes and a random mixed workload.
mod common;

use common::*;
use crawlq::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Small deterministic generator, so a failing run can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone)]
struct Held {
    id: String,
    leased_at: i64,
    expires_at: i64,
    acked: bool,
}

/// Invariants 1 and 2: many workers, some crashing mid-lease and some acking too late; every
/// item ends done exactly once (or dead), and an item is re-leased only after the previous
/// lease expired (server time).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_workers_never_share_a_live_item_and_lose_nothing() {
    let config = Config {
        lease_ttl: Duration::from_millis(250),
        max_attempts: 20,
        ..config()
    };
    let q = Arc::new(open("concurrent", config).await);
    let total = 2_000;
    let batch: Vec<SeedItem> = (0..total)
        .map(|i| format!("https://h{}.example/{i}", i % 40).into())
        .collect();
    assert_eq!(
        q.seed(&batch, &SeedOptions::default()).await.unwrap().added,
        total as u64
    );

    let ledger: Arc<Mutex<Vec<Held>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..16u64 {
        let (q, ledger) = (q.clone(), ledger.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (w + 1));
            let mut idle = 0;
            while idle < 3 {
                let leases = q.lease(4, Duration::from_millis(300)).await.unwrap();
                if leases.is_empty() {
                    idle += 1;
                    continue;
                }
                idle = 0;
                for lease in leases {
                    let mut held = Held {
                        id: lease.id.clone(),
                        leased_at: lease.leased_at_ms,
                        expires_at: lease.expires_at_ms,
                        acked: false,
                    };
                    if rng.chance(5) {
                        // crash: never answer, the lease has to expire
                    } else {
                        if rng.chance(3) {
                            tokio::time::sleep(Duration::from_millis(300)).await; // too slow: may be fenced out
                        }
                        held.acked = q.ack(&[lease.handle()]).await.unwrap()[0];
                    }
                    ledger.lock().unwrap().push(held);
                }
            }
        }));
    }
    // one worker dies for good while holding leases
    let doomed = {
        let q = q.clone();
        tokio::spawn(async move {
            let _held = q.lease(20, Duration::ZERO).await.unwrap();
            std::future::pending::<()>().await;
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    doomed.abort();
    for w in workers {
        w.await.unwrap();
    }
    // let the remaining expired leases come back and finish them
    loop {
        let leases = q.lease(100, Duration::from_millis(400)).await.unwrap();
        if leases.is_empty() && q.stats().await.unwrap().leased == 0 {
            break;
        }
        let flags = q.ack(&handles(&leases)).await.unwrap();
        let mut ledger = ledger.lock().unwrap();
        for (lease, acked) in leases.iter().zip(flags) {
            ledger.push(Held {
                id: lease.id.clone(),
                leased_at: lease.leased_at_ms,
                expires_at: lease.expires_at_ms,
                acked,
            });
        }
    }

    let ledger = ledger.lock().unwrap().clone();
    let mut by_id: HashMap<&str, Vec<&Held>> = HashMap::new();
    for h in ledger.iter() {
        by_id.entry(&h.id).or_default().push(h);
    }
    let stats = q.stats().await.unwrap();
    assert_eq!(by_id.len(), total, "every item was leased");
    assert_eq!(
        stats.done + stats.dead,
        total as u64,
        "nothing lost: {stats:?}"
    );
    assert_eq!((stats.pending, stats.leased), (0, 0));
    let mut redelivered = 0;
    for (id, mut leases) in by_id {
        leases.sort_by_key(|h| h.leased_at);
        let acks = leases.iter().filter(|h| h.acked).count();
        assert!(acks <= 1, "item {id} acked {acks} times");
        for pair in leases.windows(2) {
            redelivered += 1;
            assert!(
                pair[1].leased_at >= pair[0].expires_at,
                "item {id} re-leased at {} while live until {}",
                pair[1].leased_at,
                pair[0].expires_at
            );
            assert!(!pair[0].acked, "item {id} re-leased after a successful ack");
        }
    }
    assert_eq!(ledger.iter().filter(|h| h.acked).count() as u64, stats.done);
    assert!(redelivered > 0, "the scenario exercised redelivery");
}

/// Invariant 4: two leases of one host are at least the host's delay apart, by server time,
/// with many workers competing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn politeness_spacing_holds_across_workers_by_server_time() {
    let delay = 80;
    let q = Arc::new(
        open(
            "spacing",
            Config {
                host_delay: Duration::from_millis(delay),
                ..config()
            },
        )
        .await,
    );
    q.set_host_delay("slow.example", Some(Duration::from_millis(200)))
        .await
        .unwrap();
    let mut batch: Vec<SeedItem> = (0..48)
        .map(|i| format!("http://h{}.example/{i}", i % 4).into())
        .collect();
    batch.extend((0..5).map(|i| SeedItem::from(format!("http://slow.example/{i}"))));
    q.seed(&batch, &SeedOptions::default()).await.unwrap();

    let seen: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (q, seen) = (q.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let leases = q.lease(3, Duration::from_millis(500)).await.unwrap();
                if leases.is_empty() {
                    return;
                }
                seen.lock()
                    .unwrap()
                    .extend(leases.iter().map(|l| (l.host.clone(), l.leased_at_ms)));
                q.ack(&handles(&leases)).await.unwrap();
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let mut per_host: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (host, at) in seen.lock().unwrap().iter() {
        per_host.entry(host.clone()).or_default().push(*at);
    }
    assert_eq!(per_host.values().map(Vec::len).sum::<usize>(), 53);
    for (host, mut times) in per_host {
        times.sort();
        let min_gap = if host == "slow.example" {
            200
        } else {
            delay as i64
        };
        for pair in times.windows(2) {
            assert!(
                pair[1] - pair[0] >= min_gap,
                "{host} leased {} ms apart",
                pair[1] - pair[0]
            );
        }
    }
}

/// Invariant 3: ack, nack, extend and release with stale tokens leave the data untouched.
#[tokio::test]
async fn stale_tokens_change_nothing() {
    let q = open("stale", fixed_clock_config()).await;
    q.seed(
        &items(&["http://s.com/1", "http://s.com/2"]),
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    let old = q.lease(2, Duration::ZERO).await.unwrap();
    q.set_fixed_clock(Some(T0 + 200_000));
    let fresh = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(fresh.len(), 2);
    let before = queue_digest(&test_url(), &q).await;
    let stale = handles(&old);
    assert_eq!(q.ack(&stale).await.unwrap(), vec![false, false]);
    assert_eq!(
        q.nack(
            &stale
                .iter()
                .map(|h| (
                    h.clone(),
                    NackOptions {
                        rate_limited: true,
                        ..Default::default()
                    }
                ))
                .collect::<Vec<_>>()
        )
        .await
        .unwrap(),
        vec![NackOutcome::Lost; 2]
    );
    assert_eq!(
        q.extend(&stale, Duration::from_secs(1)).await.unwrap(),
        vec![None, None]
    );
    assert_eq!(q.release(&stale).await.unwrap(), vec![false, false]);
    let bogus = LeaseHandle {
        token: 999_999,
        host: "s.com".into(),
        id: "1".into(),
        url: None,
        key: None,
    };
    assert_eq!(q.ack(&[bogus]).await.unwrap(), vec![false]);
    assert_eq!(
        queue_digest(&test_url(), &q).await,
        before,
        "stale answers wrote nothing"
    );
}

/// Invariant 5: after a long random mix of every operation, each stats counter equals the
/// true size of what it counts.
#[tokio::test]
async fn stats_equal_true_sizes_after_a_random_mixed_workload() {
    let config = Config {
        lease_ttl: Duration::from_secs(30),
        max_attempts: 3,
        host_delay: Duration::from_secs(2),
        backoff: Backoff {
            kind: BackoffKind::Exponential,
            base: Duration::from_secs(1),
            max: Duration::from_secs(8),
            jitter: 0.5,
        },
        ..fixed_clock_config()
    };
    let q = open("random", config).await;
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut clock = T0;
    let mut held: Vec<Lease> = Vec::new();
    let mut canonical_seen: HashSet<String> = HashSet::new();
    let mut done = 0u64;
    for step in 0..1500 {
        match rng.below(100) {
            0..=24 => {
                let batch: Vec<SeedItem> = (0..rng.below(12))
                    .map(|_| {
                        let input = match rng.below(20) {
                            0 => "not a url/x".to_string(),
                            1 => format!("H{}.example.", rng.below(8)),
                            // records that keep their host (the URL spells the user) and
                            // records without it whose URL has a port
                            2 => format!("http://u@h{}.example/p{}", rng.below(8), rng.below(300)),
                            3 => format!("http://h{}.example:81/p{}", rng.below(8), rng.below(9)),
                            _ => format!("http://h{}.example/p{}", rng.below(8), rng.below(300)),
                        };
                        let mut item = SeedItem::from(input);
                        if rng.chance(30) {
                            item = item.with_priority(rng.below(5) as i64 - 2);
                        }
                        if rng.chance(15) {
                            item = item.with_delay(Duration::from_millis(rng.below(5000)));
                        }
                        if rng.chance(10) {
                            item = item.with_force(true);
                        }
                        if rng.chance(20) {
                            item = item.with_payload(serde_json::json!({"step": step}));
                        }
                        item
                    })
                    .collect();
                for item in &batch {
                    if let Ok(n) = crawlq::normalize::normalize(&item.input) {
                        canonical_seen.insert(n.canonical);
                    }
                }
                q.seed(&batch, &SeedOptions::default()).await.unwrap();
            }
            25..=49 => held.extend(
                q.lease(1 + rng.below(6) as usize, Duration::ZERO)
                    .await
                    .unwrap(),
            ),
            50..=64 if !held.is_empty() => {
                let lease = held.swap_remove(rng.below(held.len() as u64) as usize);
                if q.ack(&[lease.handle()]).await.unwrap()[0] {
                    done += 1;
                }
            }
            65..=74 if !held.is_empty() => {
                let lease = held.swap_remove(rng.below(held.len() as u64) as usize);
                let opts = NackOptions {
                    retry: !rng.chance(20),
                    rate_limited: rng.chance(20),
                    delay: rng
                        .chance(20)
                        .then(|| Duration::from_millis(rng.below(3000))),
                    reason: Some(format!("step {step}")),
                    payload: rng.chance(30).then(|| serde_json::json!({ "step": step })),
                };
                q.nack(&[(lease.handle(), opts)]).await.unwrap();
            }
            75..=79 if !held.is_empty() => {
                let lease = held.swap_remove(rng.below(held.len() as u64) as usize);
                let opts = ReleaseOptions {
                    payload: rng
                        .chance(30)
                        .then(|| serde_json::json!(["released", step])),
                };
                q.release_with(&[(lease.handle(), opts)]).await.unwrap();
            }
            80..=84 if !held.is_empty() => {
                let i = rng.below(held.len() as u64) as usize;
                q.extend(&[held[i].handle()], Duration::from_secs(20))
                    .await
                    .unwrap();
            }
            85..=94 => {
                clock += rng.below(8000) as i64;
                q.set_fixed_clock(Some(clock));
            }
            95 => {
                q.reclaim(1 + rng.below(5) as usize).await.unwrap();
            }
            96 => {
                q.requeue_dead(None).await.unwrap();
            }
            97 => {
                q.purge_dead().await.unwrap();
            }
            98 => {
                let page = q.dead(3, 0).await.unwrap();
                let ids: Vec<String> = page.items.into_iter().map(|d| d.id).collect();
                q.requeue_dead(Some(&ids)).await.unwrap();
            }
            _ => {
                let host = format!("h{}.example", rng.below(8));
                let delay = rng
                    .chance(50)
                    .then(|| Duration::from_millis(rng.below(4000)));
                q.set_host_delay(&host, delay).await.unwrap();
            }
        }
        if step % 250 == 249 {
            check_stats(&q, &canonical_seen, done).await;
        }
    }
    let stats = check_stats(&q, &canonical_seen, done).await;
    // the mix reached every state, so the comparison above was not vacuous
    assert!(
        stats.ready > 0 && stats.delayed > 0 && stats.leased > 0 && stats.done > 0,
        "{stats:?}"
    );
    assert!(
        stats.dead_total > 0
            && stats.reclaimed_total > 0
            && stats.released_total > 0
            && stats.retried_total > 0,
        "{stats:?}"
    );
}

async fn check_stats(
    q: &Queue<RedisExecutor>,
    canonical_seen: &HashSet<String>,
    done: u64,
) -> Stats {
    let stats = check_invariants(&test_url(), q).await;
    assert_eq!(
        stats.seen,
        canonical_seen.len() as u64,
        "seen = distinct valid inputs"
    );
    assert_eq!(stats.done, done, "done = successful acks");
    stats
}
