//! The guarantees of docs/PROTOCOL.md (section 8), checked under concurrency, worker
//! crashes and a random mixed workload.
mod common;

use common::*;
use crawlq::redis_exec::redis;
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

/// One of the leases held, at random, taken out of `held`.
fn take_any(held: &mut Vec<Lease>, rng: &mut Rng) -> Lease {
    held.swap_remove(rng.below(held.len() as u64) as usize)
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
        crawl: None,
    };
    assert_eq!(q.ack(&[bogus]).await.unwrap(), vec![false]);
    assert_eq!(
        queue_digest(&test_url(), &q).await,
        before,
        "stale answers wrote nothing"
    );
}

/// Invariant 5: after a long random mix of every operation, each stats counter equals the
/// true size of what it counts. Several mixes, for more interleavings of the rarer paths
/// (a reclaim that holds a host whose wait has just ended, in some of them).
#[tokio::test]
async fn stats_equal_true_sizes_after_a_random_mixed_workload() {
    for seed in [0, 14, 18] {
        random_mixed_workload(seed).await;
    }
}

async fn random_mixed_workload(seed: u64) {
    let config = Config {
        lease_ttl: Duration::from_secs(30),
        max_attempts: 3,
        host_delay: Duration::from_secs(2),
        host_in_flight: 2,
        backoff: Backoff {
            kind: BackoffKind::Exponential,
            base: Duration::from_secs(1),
            max: Duration::from_secs(8),
            jitter: 0.5,
        },
        ..fixed_clock_config()
    };
    let q = open(&format!("random{seed}"), config).await;
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D ^ seed);
    let mut clock = T0;
    let mut held: Vec<Lease> = Vec::new();
    let mut canonical_seen: HashSet<String> = HashSet::new();
    let mut done = 0u64;
    // whether a checkpoint found items ready, delayed, leased (hosts paced after the answer
    // may drain a state by the end)
    let mut reached = [false; 3];
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
                let lease = take_any(&mut held, &mut rng);
                if q.ack(&[lease.handle()]).await.unwrap()[0] {
                    done += 1;
                }
            }
            65..=74 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                let opts = NackOptions {
                    retry: !rng.chance(20),
                    rate_limited: rng.chance(20),
                    delay: rng
                        .chance(20)
                        .then(|| Duration::from_millis(rng.below(3000))),
                    reason: Some(format!("step {step}")),
                    retry_after: rng
                        .chance(15)
                        .then(|| RetryAfter::Delay(Duration::from_millis(rng.below(5000)))),
                    payload: rng.chance(30).then(|| serde_json::json!({ "step": step })),
                };
                q.nack(&[(lease.handle(), opts)]).await.unwrap();
            }
            75..=79 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
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
                if rng.chance(50) {
                    let delay = rng
                        .chance(50)
                        .then(|| Duration::from_millis(rng.below(4000)));
                    q.set_host_delay(&host, delay).await.unwrap();
                } else if rng.chance(60) {
                    let limit = rng.chance(70).then(|| rng.below(4));
                    q.set_host_in_flight(&host, limit).await.unwrap();
                } else {
                    // paced after the answer (a factor or not), after the lease, or the default
                    let pacing = match rng.below(4) {
                        0 => None,
                        1 => Some(HostPacing {
                            after: DelayAfter::Lease,
                            factor: None,
                        }),
                        n => Some(HostPacing {
                            after: DelayAfter::Answer,
                            factor: (n == 3).then_some(1.5),
                        }),
                    };
                    q.set_host_delay_after(&host, pacing).await.unwrap();
                }
            }
        }
        if step % 250 == 249 {
            let stats = check_stats(&q, &canonical_seen, done).await;
            for (seen, n) in reached
                .iter_mut()
                .zip([stats.ready, stats.delayed, stats.leased])
            {
                *seen |= n > 0;
            }
            check_in_flight(&q).await;
        }
    }
    let stats = check_stats(&q, &canonical_seen, done).await;
    // the mix reached every state, so the comparison above was not vacuous
    assert!(
        reached == [true; 3] && stats.done > 0,
        "{reached:?} {stats:?}"
    );
    assert!(
        stats.dead_total > 0
            && stats.reclaimed_total > 0
            && stats.released_total > 0
            && stats.retried_total > 0,
        "{stats:?}"
    );
}

/// No host counts more items in flight than it has leased (a count an answer failed to take
/// back would hold the host forever), and a host held full has items in flight.
async fn check_in_flight(q: &Queue<RedisExecutor>) {
    let hosts = q.list_hosts(None, 1000).await.unwrap().hosts;
    for h in 0..8 {
        let host = format!("h{h}.example");
        let info = q.host_info(&host).await.unwrap();
        let leased = hosts
            .iter()
            .find(|c| c.host == host)
            .map_or(0, |c| c.leased);
        assert!(
            info.in_flight <= leased,
            "{host}: {info:?}, {leased} leased"
        );
        assert!(!info.full || info.in_flight > 0, "{host}: {info:?}");
    }
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

/// A host deletion in progress (driven one bounded step at a time) interleaved at random with
/// pauses, resumes, leases, answers, seeds and the clock moving: after every step the checker
/// finds every counter equal to its structures; no item queued before the deletion began is
/// leased while it runs or survives it, and the deletion reports as `left` only items that
/// arrived after it began.
#[tokio::test]
async fn random_interleavings_of_host_deletion_with_pauses_and_leases_keep_every_count() {
    for seed in 1..=4u64 {
        interleave_host_deletion(seed).await;
    }
}

async fn interleave_host_deletion(seed: u64) {
    let config = Config {
        lease_ttl: Duration::from_secs(20),
        max_attempts: 3,
        host_delay: Duration::ZERO,
        ..fixed_clock_config()
    };
    let q = open(&format!("delrace{seed}"), config).await;
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B ^ seed.wrapping_mul(0x9E37_79B9));
    let mut clock = T0;
    let victim = "victim.example";
    let hosts = [victim, "other.example", "third.example"];
    let mut held: Vec<Lease> = Vec::new();
    let mut page = 0u64;
    // the deletion in progress: (step, cursor, the victim's item ids when it began, totals)
    let mut deletion: Option<(String, String, HashSet<String>, HostDeletion)> = None;
    let layout = q.layout().await.unwrap();
    let victim_ops = layout.shard(layout.of_host(victim));
    let mut deletion_id = String::new();
    for step in 0..150 {
        let what = rng.below(100);
        match what {
            0..=19 => {
                let batch: Vec<SeedItem> = (0..1 + rng.below(6))
                    .map(|_| {
                        let host = hosts[rng.below(3) as usize];
                        page += 1;
                        let mut item = SeedItem::from(format!("http://{host}/p{page}"));
                        if rng.chance(20) {
                            item = item.with_delay(Duration::from_millis(rng.below(3000)));
                        }
                        if rng.chance(20) {
                            item = item.with_priority(rng.below(3) as i64);
                        }
                        item
                    })
                    .collect();
                q.seed(&batch, &SeedOptions::default()).await.unwrap();
            }
            20..=39 => {
                let leases = q
                    .lease(1 + rng.below(4) as usize, Duration::ZERO)
                    .await
                    .unwrap();
                if let Some((_, _, before, _)) = &deletion {
                    for lease in &leases {
                        assert!(
                            !before.contains(&lease.id),
                            "seed {seed} step {step}: item {} of the host being deleted was leased",
                            lease.id
                        );
                    }
                }
                held.extend(leases);
            }
            40..=49 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                q.ack(&[lease.handle()]).await.unwrap();
            }
            50..=54 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                let opts = NackOptions {
                    retry: !rng.chance(30),
                    delay: rng.chance(30).then(|| Duration::from_millis(500)),
                    ..Default::default()
                };
                q.nack(&[(lease.handle(), opts)]).await.unwrap();
            }
            55..=57 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                q.release(&[lease.handle()]).await.unwrap();
            }
            58..=64 => {
                let host = hosts[rng.below(2) as usize];
                let pause = if rng.chance(50) {
                    None
                } else {
                    Some(Duration::from_millis(1 + rng.below(2000)))
                };
                q.pause_host(host, pause).await.unwrap();
            }
            65..=72 => {
                q.resume_host(hosts[rng.below(2) as usize]).await.unwrap();
            }
            73..=75 => {
                let delay = rng
                    .chance(50)
                    .then(|| Duration::from_millis(rng.below(1500)));
                q.set_host_delay(victim, delay).await.unwrap();
            }
            76..=81 => {
                clock += rng.below(3000) as i64;
                q.set_fixed_clock(Some(clock));
            }
            82..=83 => {
                q.reclaim(10).await.unwrap();
            }
            _ => {
                // the deletion: start one, or take its next bounded step
                let (step_name, cursor, before, mut total) = match deletion.take() {
                    Some(d) => d,
                    None => {
                        deletion_id = crawlq::ops::Ops::deletion_id(step as u64);
                        let before = items_of_host(&q, victim).await;
                        (
                            "leases".to_string(),
                            "0".to_string(),
                            before,
                            HostDeletion::default(),
                        )
                    }
                };
                let reply = q
                    .executor()
                    .eval(victim_ops.host_delete(
                        victim,
                        &step_name,
                        &cursor,
                        2,
                        false,
                        &deletion_id,
                    ))
                    .await
                    .unwrap();
                let (next, removed, _) = victim_ops.decode_host_delete(reply).unwrap();
                total.add_step(&removed);
                match next {
                    Some((s, c)) => deletion = Some((s, c, before, total)),
                    None => {
                        let after = items_of_host(&q, victim).await;
                        let survivors: Vec<_> = after.intersection(&before).collect();
                        assert!(
                            survivors.is_empty(),
                            "seed {seed} step {step}: items queued before the deletion survived it: {survivors:?}"
                        );
                        assert_eq!(
                            total.left,
                            after.len() as u64,
                            "seed {seed} step {step}: `left` counts what arrived meanwhile"
                        );
                    }
                }
            }
        }
        let url = test_url();
        let checked = std::panic::AssertUnwindSafe(check_invariants(&url, &q));
        if let Err(panic) = futures_util::FutureExt::catch_unwind(checked).await {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("seed {seed} step {step} (op {what}): {message:?}");
        }
    }
}

/// The ids of every item a host holds now: in its lanes, delayed, leased or dead.
async fn items_of_host(q: &Queue<RedisExecutor>, host: &str) -> HashSet<String> {
    let layout = q.layout().await.unwrap();
    let s = layout.of_host(host);
    let base = layout.shard(s).keys().base().to_string();
    let url = test_url();
    let mut conn = crawlq::redis_exec::RedisExecutor::connect(&url, &Config::default())
        .await
        .unwrap()
        .connection();
    let mut records: Vec<Vec<u8>> = Vec::new();
    for lane in keys_of(&url, &base, &format!(":l:*:{host}")).await {
        let recs: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&lane)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        records.extend(recs);
    }
    let delayed: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(format!("{base}:delayed"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    records.extend(delayed);
    let leases: Vec<Vec<u8>> = redis::cmd("HVALS")
        .arg(format!("{base}:leases"))
        .query_async(&mut conn)
        .await
        .unwrap();
    records.extend(leases);
    let dead: Vec<Vec<u8>> = redis::cmd("HVALS")
        .arg(format!("{base}:deadrec"))
        .query_async(&mut conn)
        .await
        .unwrap();
    records.extend(dead);
    records
        .iter()
        .map(|r| crawlq::wire::salvage_record(r))
        .filter(|item| item.host == host)
        .map(|item| layout.public_id(item.id, s))
        .collect()
}

/// A random mix of named crawls (seeds into them, a worker leasing from one chosen crawl, their
/// pauses, caps, rates, weights, per-host budgets and deletion) with answers, host settings
/// and the clock moving: at every checkpoint the checker finds each counter equal to its
/// structures, every crawl lane listed and every host with items scheduled exactly once.
#[tokio::test]
async fn a_random_mix_of_crawls_and_their_limits_keeps_every_count() {
    let mut leased_from_chosen = 0;
    for seed in [1, 2] {
        leased_from_chosen += random_crawl_mix(seed).await;
    }
    // (a mix may keep the chosen crawl paused or its hosts held whenever that worker asks)
    assert!(
        leased_from_chosen > 0,
        "the chosen crawl's worker leased nothing"
    );
}

/// One mix; returns how many items the worker of a chosen crawl leased.
async fn random_crawl_mix(seed: u64) -> usize {
    let config = Config {
        lease_ttl: Duration::from_secs(30),
        max_attempts: 3,
        host_delay: Duration::from_millis(500),
        ..fixed_clock_config()
    };
    let q = open(&format!("crawlmix{seed}"), config.clone()).await;
    let chosen = Queue::connect(
        &test_url(),
        q.name(),
        Config {
            lease_crawls: vec!["c1".into()],
            ..config
        },
    )
    .await
    .unwrap();
    let mut rng = Rng(0xC0FF_EE15_F00D_5EED ^ seed);
    let mut clock = T0;
    let crawls = [None, Some("c0"), Some("c1"), Some("c2")];
    let mut held: Vec<Lease> = Vec::new();
    let mut leased_from_chosen = 0usize;
    let shards = q.layout().await.unwrap().count() as u64;
    for step in 0..1200 {
        let crawl = crawls[rng.below(4) as usize];
        let named = crawl.unwrap_or("c0");
        match rng.below(100) {
            0..=24 => {
                let batch: Vec<SeedItem> = (0..rng.below(10))
                    .map(|_| {
                        let mut item = SeedItem::from(format!(
                            "http://h{}.example/p{}",
                            rng.below(6),
                            rng.below(200)
                        ));
                        if rng.chance(30) {
                            item = item.with_priority(rng.below(3) as i64 - 1);
                        }
                        if rng.chance(15) {
                            item = item.with_delay(Duration::from_millis(rng.below(4000)));
                        }
                        item
                    })
                    .collect();
                let opts = SeedOptions {
                    crawl: crawl.map(str::to_string),
                    ..SeedOptions::default()
                };
                q.seed(&batch, &opts).await.unwrap();
            }
            25..=42 => held.extend(
                q.lease(1 + rng.below(5) as usize, Duration::ZERO)
                    .await
                    .unwrap(),
            ),
            43..=49 => {
                let got = chosen
                    .lease(1 + rng.below(3) as usize, Duration::ZERO)
                    .await
                    .unwrap();
                assert!(got.iter().all(|l| l.crawl.as_deref() == Some("c1")));
                leased_from_chosen += got.len();
                held.extend(got);
            }
            50..=61 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                q.ack(&[lease.handle()]).await.unwrap();
            }
            62..=68 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                let opts = NackOptions {
                    retry: !rng.chance(20),
                    rate_limited: rng.chance(15),
                    delay: rng
                        .chance(30)
                        .then(|| Duration::from_millis(rng.below(3000))),
                    ..NackOptions::default()
                };
                q.nack(&[(lease.handle(), opts)]).await.unwrap();
            }
            69..=72 if !held.is_empty() => {
                let lease = take_any(&mut held, &mut rng);
                q.release(&[lease.handle()]).await.unwrap();
            }
            73..=82 => {
                clock += rng.below(6000) as i64;
                q.set_fixed_clock(Some(clock));
                chosen.set_fixed_clock(Some(clock));
            }
            83 => {
                q.reclaim(1 + rng.below(5) as usize).await.unwrap();
            }
            84..=86 => {
                if rng.chance(50) {
                    q.pause_crawl(named).await.unwrap();
                } else {
                    q.resume_crawl(named).await.unwrap();
                }
            }
            87..=88 => {
                // (a cap is at least the shard count: each shard leases its share of it)
                let cap = rng.chance(70).then(|| shards + rng.below(4));
                q.set_crawl_cap(named, cap).await.unwrap();
            }
            89..=90 => {
                let rate = rng.chance(60).then(|| 0.5 + rng.below(8) as f64);
                q.set_crawl_rate(named, rate).await.unwrap();
            }
            91 => {
                let weight = rng.chance(70).then(|| 1 + rng.below(3));
                q.set_crawl_weight(named, weight).await.unwrap();
            }
            92 => {
                let budget = rng.chance(70).then(|| 3 + rng.below(20));
                q.set_crawl_host_budget(named, budget).await.unwrap();
            }
            93 if rng.chance(25) => {
                q.delete_crawl("c2").await.unwrap();
            }
            94..=96 => {
                let host = format!("h{}.example", rng.below(6));
                let limit = rng.chance(70).then(|| rng.below(3));
                q.set_host_in_flight(&host, limit).await.unwrap();
            }
            97..=99 => {
                let host = format!("h{}.example", rng.below(6));
                let pacing = rng.chance(60).then(|| HostPacing {
                    after: if rng.chance(50) {
                        DelayAfter::Answer
                    } else {
                        DelayAfter::Lease
                    },
                    factor: None,
                });
                q.set_host_delay_after(&host, pacing).await.unwrap();
            }
            _ => {}
        }
        if step % 100 == 99 {
            check_invariants(&test_url(), &q).await;
            check_in_flight(&q).await;
        }
    }
    let stats = check_invariants(&test_url(), &q).await;
    // the mix leased and answered, so the checks were not vacuous
    assert!(stats.done > 0 && stats.leased_total > 100, "{stats:?}");
    let c1 = q.crawl_stats("c1").await.unwrap();
    assert!(c1.seeded_total > 0, "{c1:?}");
    leased_from_chosen
}
