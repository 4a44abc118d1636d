//! Seeding: normalization, de-duplication, reports, payloads, delays, chunking, stored bytes.
mod common;

use common::*;
use crawlq::wire::StoredItem;
use crawlq::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn report_counts_added_duplicates_and_invalid_items_with_their_index() {
    let q = open("seed-report", config()).await;
    let batch = items(&[
        "http://a.com/1",
        "",
        "http://a.com/1",
        "ftp://a.com/",
        "b.com",
        "not a host",
        "HTTP://A.com/1#x",
    ]);
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 2);
    assert_eq!(report.duplicates, 2);
    let invalid: Vec<(usize, &str, &str)> = report
        .invalid
        .iter()
        .map(|i| (i.index, i.input.as_str(), i.reason.code()))
        .collect();
    assert_eq!(
        invalid,
        vec![
            (1, "", "empty"),
            (3, "ftp://a.com/", "unsupported_scheme"),
            (5, "not a host", "invalid_host")
        ]
    );
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.seen, stats.hosts), (2, 2, 2));
    // one id per item: the added ones, in order; none for duplicates and invalid items
    assert_eq!(report.ids.len(), batch.len());
    let given: Vec<usize> = (0..batch.len())
        .filter(|i| report.ids[*i].is_some())
        .collect();
    assert_eq!(given, vec![0, 4]);
    let mut leased: Vec<(String, String)> = q
        .lease(10, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.id, l.host))
        .collect();
    leased.sort();
    let mut seeded = vec![
        (report.ids[0].clone().unwrap(), "a.com".to_string()),
        (report.ids[4].clone().unwrap(), "b.com".to_string()),
    ];
    seeded.sort();
    assert_eq!(leased, seeded, "a lease carries the id its seed reported");
}

#[tokio::test]
async fn ids_follow_the_batch_order_across_calls_and_forced_seeds() {
    // chunks of 300 (one round trip each) split into script calls of SEED_PER_CALL
    let q = open(
        "seed-ids",
        Config {
            seed_batch: 300,
            ..config()
        },
    )
    .await;
    // more items than one script call takes, with duplicates spread through the batch
    let mut batch: Vec<SeedItem> = (0..(SEED_PER_CALL * 3))
        .map(|i| format!("https://h{}.ids.example/{i}", i % 7).into())
        .collect();
    batch[10] = batch[3].clone();
    batch[SEED_PER_CALL + 1] = batch[0].clone();
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added as usize, batch.len() - 2);
    assert_eq!(report.ids.len(), batch.len());
    assert!(report.ids[10].is_none() && report.ids[SEED_PER_CALL + 1].is_none());
    let numbers: Vec<u64> = report
        .ids
        .iter()
        .flatten()
        .map(|id| id.parse().unwrap())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "ids rise in the batch's order"
    );
    let unique: std::collections::HashSet<&u64> = numbers.iter().collect();
    assert_eq!(unique.len(), numbers.len());

    // every lease's id is one a seed reported for that item's URL
    let by_id: std::collections::HashMap<String, String> = report
        .ids
        .iter()
        .zip(&batch)
        .filter_map(|(id, item)| id.clone().map(|id| (id, item.input.clone())))
        .collect();
    let leases = q.lease(batch.len(), Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), by_id.len());
    for lease in &leases {
        assert_eq!(
            lease.url.as_deref(),
            by_id.get(&lease.id).map(|s| s.as_str())
        );
    }
    let handles: Vec<LeaseHandle> = leases.iter().map(Lease::handle).collect();
    q.ack(&handles).await.unwrap();

    // a forced seed of a done URL gets a new id
    let again = q
        .seed(
            &batch[..1],
            &SeedOptions {
                force: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let new_id = again.ids[0].clone().expect("forced seed is added");
    assert!(new_id.parse::<u64>().unwrap() > *numbers.last().unwrap());
}

#[tokio::test]
async fn one_invalid_url_in_ten_thousand_does_not_block_the_rest() {
    let q = open("seed-10k", config()).await;
    let mut batch: Vec<SeedItem> = (0..10_000)
        .map(|i| format!("https://h{}.example.com/p/{i}", i % 100).into())
        .collect();
    batch[5000] = "http://exa mple.com/".into();
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 9_999);
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(report.invalid[0].index, 5000);
    assert_eq!(report.invalid[0].reason.code(), "invalid_url");
    assert_eq!(q.stats().await.unwrap().ready, 9_999);
}

#[tokio::test]
async fn done_items_are_not_queued_again_unless_forced() {
    let q = open("seed-life", config()).await;
    q.seed(&items(&["http://a.com/x"]), &SeedOptions::default())
        .await
        .unwrap();
    let leases = q.lease(1, Duration::ZERO).await.unwrap();
    assert_eq!(q.ack(&handles(&leases)).await.unwrap(), vec![true]);

    let again = q
        .seed(&items(&["http://A.COM:80/x#frag"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!((again.added, again.duplicates), (0, 1));
    let forced = q
        .seed(
            &items(&["http://a.com/x"]),
            &SeedOptions {
                force: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((forced.added, forced.duplicates), (1, 0));
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.seen, stats.done), (1, 1, 1));
}

#[tokio::test]
async fn hosts_and_urls_are_separate_items_with_one_host_key() {
    let q = open("seed-hosts", config()).await;
    let report = q
        .seed(
            &items(&["Example.COM.", "http://example.com/", "example.com"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (2, 1));
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    let got: Vec<(Option<&str>, &str)> = leases
        .iter()
        .map(|l| (l.url.as_deref(), l.host.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (None, "example.com"),
            (Some("http://example.com/"), "example.com")
        ]
    );
}

#[tokio::test]
async fn payloads_round_trip_and_are_size_limited() {
    let q = open(
        "seed-payload",
        Config {
            max_payload_bytes: 64,
            ..config()
        },
    )
    .await;
    let batch = vec![
        SeedItem::from("http://a.com/1")
            .with_payload(json!({"depth": 2, "tags": ["x", null, true], "score": 1.5})),
        SeedItem::from("http://a.com/2").with_payload(json!({"big": "x".repeat(100)})),
        SeedItem::from("http://a.com/3"),
    ];
    let opts = SeedOptions {
        payload: Some(json!({"batch": true})),
        ..Default::default()
    };
    let report = q.seed(&batch, &opts).await.unwrap();
    assert_eq!(report.added, 2);
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(
        (report.invalid[0].index, report.invalid[0].reason.code()),
        (1, "payload_too_large")
    );

    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(
        leases[0].payload,
        Some(json!({"depth": 2, "tags": ["x", null, true], "score": 1.5}))
    );
    assert_eq!(leases[1].payload, Some(json!({"batch": true})));

    let too_big = SeedOptions {
        payload: Some(json!({"big": "x".repeat(100)})),
        ..Default::default()
    };
    let err = q
        .seed(&items(&["http://a.com/4"]), &too_big)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
}

#[tokio::test]
async fn priorities_out_of_range_are_refused() {
    let q = open("seed-prio", config()).await;
    let batch = vec![
        SeedItem::from("http://a.com/1").with_priority(40_000),
        SeedItem::from("http://a.com/2").with_priority(-32768),
    ];
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.invalid[0].reason.code(), "invalid_priority");
    assert_eq!(
        report.invalid[0].reason.to_string(),
        "priority is not an integer within -32768..=32767: 40000"
    );
    let err = q
        .seed(
            &items(&["http://a.com/3"]),
            &SeedOptions {
                priority: 1 << 20,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[tokio::test]
async fn delayed_items_wait_for_their_time() {
    let q = open("seed-delay", fixed_clock_config()).await;
    let batch = vec![
        SeedItem::from("http://a.com/later").with_delay(Duration::from_secs(60)),
        "http://b.com/now".into(),
    ];
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.delayed, stats.pending), (1, 1, 2));

    let first = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].host, "b.com");
    q.set_fixed_clock(Some(T0 + 59_999));
    assert!(q.lease(10, Duration::ZERO).await.unwrap().is_empty());
    q.set_fixed_clock(Some(T0 + 60_000));
    let later = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].url.as_deref(), Some("http://a.com/later"));
}

#[tokio::test]
async fn large_batches_are_chunked_with_progress() {
    let q = open(
        "seed-chunks",
        Config {
            seed_batch: 7,
            ..config()
        },
    )
    .await;
    let mut batch: Vec<SeedItem> = (0..100)
        .map(|i| format!("http://c.com/{i}").into())
        .collect();
    batch.push("http://c.com/0".into());
    batch.push("bad url".into());
    let mut calls = Vec::new();
    let report = q
        .seed_with_progress(&batch, &SeedOptions::default(), |p| calls.push(p))
        .await
        .unwrap();
    assert_eq!(
        (report.added, report.duplicates, report.invalid.len()),
        (100, 1, 1)
    );
    assert_eq!(calls.len(), 101_usize.div_ceil(7));
    let last = calls.last().unwrap();
    assert_eq!(
        (
            last.done,
            last.total,
            last.added,
            last.duplicates,
            last.invalid
        ),
        (102, 102, 100, 1, 1)
    );
    assert!(calls.windows(2).all(|w| w[0].done < w[1].done));
}

#[tokio::test]
async fn stored_bytes_are_the_canonical_record() {
    let q = open("seed-bytes", fixed_clock_config()).await;
    let batch = vec![
        SeedItem::from("https://Example.com/a?b=1#c")
            .with_priority(3)
            .with_payload(json!({"z": 1.0, "a": "é"})),
        SeedItem::from("example.org"),
    ];
    q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let keys = q.ops().keys();
    let first = shared().cli(&["LINDEX", &keys.lane("example.com", 3), "0"]);
    let expected = StoredItem {
        id: "1".into(),
        ts: T0,
        host: "example.com".into(),
        priority: 3,
        attempt: 0,
        crawl: None,
        url: Some("https://example.com/a?b=1".into()),
        key: None,
        last_error: None,
        payload: Some(json!({"a": "é", "z": 1})),
    };
    assert_eq!(first, expected.encode());
    assert_eq!(
        first,
        r#"{"v":1,"id":"1","ts":1800000000000,"priority":3,"url":"https://example.com/a?b=1","payload":{"a":"é","z":1}}"#
    );
    let second = shared().cli(&["LINDEX", &keys.lane("example.org", 0), "0"]);
    assert_eq!(
        second,
        r#"{"v":1,"id":"2","ts":1800000000000,"host":"example.org"}"#
    );
}

#[tokio::test]
async fn a_caller_key_is_the_identity_for_de_duplication() {
    let q = open("seed-keys", fixed_clock_config()).await;
    // a key with the two characters JSON escapes in it, as a POST fingerprint might have
    let post = r#"POST http://k.com/form {"q":"a\b"}"#;
    let batch = vec![
        SeedItem::from("http://k.com/form").with_key(post),
        SeedItem::from("http://k.com/form"), // the URL's own identity: another item
        SeedItem::from("http://k.com/other").with_key(post), // same key: a duplicate
        SeedItem::from("k.com").with_key("host-item-key"),
        SeedItem::from("http://k.com/x").with_key(""),
        SeedItem::from("http://k.com/y").with_key("a\tb"),
        SeedItem::from("http://k.com/z").with_key("k".repeat(normalize::MAX_KEY_BYTES + 1)),
        // a key equal to a canonical URL is that URL
        SeedItem::from("http://k.com/alias").with_key("http://k.com/form"),
    ];
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    assert_eq!((report.added, report.duplicates), (3, 2));
    assert_eq!(
        invalid_codes(&report),
        vec![(4, "invalid_key"), (5, "invalid_key"), (6, "invalid_key")]
    );
    let lane = q.ops().keys().lane("k.com", 0);
    let stored = shared().cli(&["LINDEX", &lane, "0"]);
    assert_eq!(
        stored,
        r#"{"v":1,"id":"1","ts":1800000000000,"url":"http://k.com/form","key":"POST http://k.com/form {\"q\":\"a\\b\"}"}"#
    );
    let item = crawlq::wire::decode_record(stored.as_bytes()).unwrap();
    assert_eq!(item.key.as_deref(), Some(post));
    assert_eq!(item.encode(), stored);

    // the key comes back on the lease; nack and reclaim keep it; ack makes it done
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    let first = leases.iter().find(|l| l.id == "1").unwrap();
    assert_eq!(first.key.as_deref(), Some(post));
    q.nack(&[(
        first.handle(),
        NackOptions {
            delay: Some(Duration::ZERO),
            reason: Some("HTTP 500".into()),
            ..Default::default()
        },
    )])
    .await
    .unwrap();
    check_invariants(&test_url(), &q).await;
    let mut all: Vec<Lease> = leases.iter().filter(|l| l.id != "1").cloned().collect();
    loop {
        let got = q.lease(10, Duration::ZERO).await.unwrap();
        if got.is_empty() {
            break;
        }
        all.extend(got);
    }
    assert_eq!(all.len(), 3);
    let retried = all.iter().find(|l| l.id == "1").unwrap();
    assert_eq!(
        (
            retried.key.as_deref(),
            retried.attempt,
            retried.last_error.as_deref()
        ),
        (Some(post), 2, Some("HTTP 500"))
    );
    assert_eq!(
        all.iter().find(|l| l.url.is_none()).unwrap().key.as_deref(),
        Some("host-item-key")
    );
    let handles: Vec<LeaseHandle> = all.iter().map(Lease::handle).collect();
    assert_eq!(q.ack(&handles).await.unwrap(), vec![true; 3]);
    check_invariants(&test_url(), &q).await;

    // done: the key stays seen; force queues it again once, not while it is queued
    let again = vec![SeedItem::from("http://k.com/new").with_key(post)];
    assert_eq!(
        q.seed(&again, &SeedOptions::default())
            .await
            .unwrap()
            .duplicates,
        1
    );
    let forced = SeedOptions {
        force: true,
        ..Default::default()
    };
    assert_eq!(q.seed(&again, &forced).await.unwrap().added, 1);
    assert_eq!(
        q.seed(&again, &forced).await.unwrap().duplicates,
        1,
        "queued now"
    );
    let lease = q.lease(1, Duration::ZERO).await.unwrap().remove(0);
    assert_eq!(
        (lease.url.as_deref(), lease.key.as_deref()),
        (Some("http://k.com/new"), Some(post))
    );
    // dead letters keep the key, and a requeued one is live again under it
    q.nack(&[(
        lease.handle(),
        NackOptions {
            retry: false,
            ..Default::default()
        },
    )])
    .await
    .unwrap();
    let dead = q.dead(10, 0).await.unwrap();
    assert_eq!(dead.items[0].key.as_deref(), Some(post));
    assert_eq!(q.requeue_dead(None).await.unwrap(), 1);
    assert_eq!(
        q.seed(&again, &forced).await.unwrap().duplicates,
        1,
        "live again"
    );
    check_invariants(&test_url(), &q).await;
}

#[tokio::test]
async fn seen_set_stays_compact_and_is_checked_across_levels() {
    let q = open("seed-levels", config()).await;
    let base = q.ops().keys().base().to_string();
    q.seed(&items(&["http://l.com/old"]), &SeedOptions::default())
        .await
        .unwrap();
    let buckets = scan_keys(shared(), &base, ":s:0:*");
    assert_eq!(buckets.len(), 1);
    assert_eq!(shared().cli(&["OBJECT", "ENCODING", &buckets[0]]), "intset");

    // Pretend level 0 is full: new fingerprints go to level 1, old ones are still found.
    shared().cli(&["HSET", &format!("{base}:meta"), "seen", "393216"]);
    let report = q
        .seed(
            &items(&["http://l.com/old", "http://l.com/new", "http://l.com/new"]),
            &SeedOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (1, 2));
    assert_eq!(scan_keys(shared(), &base, ":s:1:*").len(), 1);
    assert_eq!(
        shared().cli(&["HGET", &format!("{base}:meta"), "seen"]),
        "393217"
    );
}

/// Record ids and lease tokens are consecutive numbers whose digits the scripts build from a
/// prefix and a three-digit suffix: every id and token is its number's exact digits, across
/// 999 -> 1000 and every later thousand, in one call and across calls.
#[tokio::test]
async fn ids_and_tokens_are_exact_across_thousands() {
    let q = open("seed-digits", fixed_clock_config()).await;
    let batch: Vec<SeedItem> = (0..2345)
        .map(|i| format!("http://d{}.example/{i}", i % 7).into())
        .collect();
    let report = q.seed(&batch, &SeedOptions::default()).await.unwrap();
    let ids: Vec<String> = report.ids.iter().map(|id| id.clone().unwrap()).collect();
    let expected: Vec<String> = (1..=2345).map(|i: u64| i.to_string()).collect();
    assert_eq!(ids, expected);
    let mut leases = Vec::new();
    while leases.len() < 2345 {
        let got = q.lease(500, Duration::ZERO).await.unwrap();
        assert!(!got.is_empty());
        leases.extend(got);
    }
    let mut leased_ids: Vec<u64> = leases.iter().map(|l| l.id.parse().unwrap()).collect();
    leased_ids.sort_unstable();
    assert_eq!(leased_ids, (1..=2345).collect::<Vec<u64>>());
    let first = leases[0].token;
    let tokens: Vec<u64> = leases.iter().map(|l| l.token).collect();
    assert_eq!(tokens, (first..first + 2345).collect::<Vec<u64>>());
    // an ack finds a lease by `<token>:<id>` (the id from the record): the scripts wrote the
    // lease keys with the same digits
    assert!(q.ack(&handles(&leases)).await.unwrap().iter().all(|f| *f));
    assert_eq!(q.stats().await.unwrap().done, 2345);
}

/// A seed call whose new items fill the current seen level part-way through goes on at the
/// next level: duplicates within the call are found on either side of the boundary, and the
/// live members of both levels are found again by ack and by a forced seed.
#[tokio::test]
async fn a_seed_call_that_fills_a_seen_level_goes_on_at_the_next() {
    let q = open("seed-level-cross", config()).await;
    let base = q.ops().keys().base().to_string();
    q.seed(&items(&["http://x.com/first"]), &SeedOptions::default())
        .await
        .unwrap();
    // two more new members fill level 0 (1,024 buckets x 384)
    shared().cli(&["HSET", &format!("{base}:meta"), "seen", "393214"]);
    let urls = [
        "http://x.com/1",
        "http://x.com/2",
        "http://x.com/3",
        "http://x.com/1",
        "http://x.com/4",
        "http://x.com/2",
        "http://x.com/first",
    ];
    let report = q
        .seed(&items(&urls), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (4, 3));
    let added: Vec<bool> = report.ids.iter().map(Option::is_some).collect();
    assert_eq!(added, [true, true, true, false, true, false, false]);
    assert_eq!(
        shared().cli(&["HGET", &format!("{base}:meta"), "seen"]),
        "393218"
    );
    // (meta.seen was set by hand, so the invariant checker's seen count does not apply here)
    let members = |pattern: &str| -> usize {
        scan_keys(shared(), &base, pattern)
            .iter()
            .map(|k| shared().cli(&["SCARD", k]).parse::<usize>().unwrap())
            .sum()
    };
    assert_eq!(members(":s:1:*"), 2, "the two new items after the boundary");
    assert_eq!(members(":s:0:*"), 3);
    assert_eq!(members(":v:*"), 5, "one live member per queued item");
    assert_eq!(q.stats().await.unwrap().ready, 5);

    // a forced seed while they are queued is a duplicate on both levels
    let forced = SeedOptions {
        force: true,
        ..SeedOptions::default()
    };
    let again = q
        .seed(&items(&["http://x.com/1", "http://x.com/4"]), &forced)
        .await
        .unwrap();
    assert_eq!((again.added, again.duplicates), (0, 2));
    // acked, every live member is found and removed; forced again, both come back
    let leases = q.lease(10, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 5);
    assert!(q.ack(&handles(&leases)).await.unwrap().iter().all(|f| *f));
    assert!(scan_keys(shared(), &base, ":v:*").is_empty());
    let back = q
        .seed(&items(&["http://x.com/1", "http://x.com/4"]), &forced)
        .await
        .unwrap();
    assert_eq!((back.added, back.duplicates), (2, 0));
    assert_eq!(members(":v:*"), 2);
    assert_eq!(q.stats().await.unwrap().ready, 2);
}

/// An ack looks for an item's live member at the level its id says first: an item added
/// before the seen set moved to its next level is removed with one `SREM`, not one per level.
#[tokio::test]
async fn an_ack_finds_an_older_items_live_member_at_its_own_level() {
    let server = RedisServer::start();
    let q = Queue::connect(&server.url(), "ack-levels", Config::default())
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    let meta = format!("{base}:meta");
    q.seed(&items(&["http://o.com/old"]), &SeedOptions::default())
        .await
        .unwrap();
    // as if 393,215 more URLs had been added since: level 0 is full, new members go to level 1
    // (ids counted with them, as every added item counts one)
    server.cli(&["HSET", &meta, "seen", "393216", "ids", "393216"]);
    q.seed(&items(&["http://o.com/new"]), &SeedOptions::default())
        .await
        .unwrap();
    let count = |pattern: &str| scan_keys(&server, &base, pattern).len();
    assert_eq!((count(":v:0:*"), count(":v:1:*")), (1, 1));
    let leases = q.lease(2, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 2);
    server.cli(&["CONFIG", "RESETSTAT"]);
    assert!(q.ack(&handles(&leases)).await.unwrap().iter().all(|f| *f));
    assert_eq!(count(":v:*"), 0, "both live members removed");
    assert_eq!(calls_of(&server, "srem"), 2, "one SREM per item");
}

#[tokio::test]
async fn dead_letters_and_deletions_find_an_older_items_live_member_at_its_own_level() {
    let server = RedisServer::start();
    let config = Config {
        host_delay: Duration::ZERO,
        ..Config::default()
    };
    let q = Queue::connect(&server.url(), "dead-levels", config)
        .await
        .unwrap();
    let base = q.ops().keys().base().to_string();
    let meta = format!("{base}:meta");
    let both = |path: &str| {
        items(&[
            &format!("http://o.com/{path}"),
            &format!("http://p.com/{path}"),
        ])
    };
    q.seed(&both("old"), &SeedOptions::default()).await.unwrap();
    // level 0 full, as in the ack's test above: the next members go to level 1
    server.cli(&["HSET", &meta, "seen", "393216", "ids", "393216"]);
    q.seed(&both("new"), &SeedOptions::default()).await.unwrap();
    let count = |pattern: &str| scan_keys(&server, &base, pattern).len();
    assert_eq!((count(":v:0:*"), count(":v:1:*")), (2, 2));
    // p.com's old and new items deleted with their host while queued
    server.cli(&["CONFIG", "RESETSTAT"]);
    let deleted = q.delete_host("p.com", false).await.unwrap();
    assert_eq!(deleted.ready, 2);
    // (and one of the host's mark in `hostrobots`)
    assert_eq!(calls_of(&server, "srem"), 3, "one SREM per deleted item");
    assert_eq!((count(":v:0:*"), count(":v:1:*")), (1, 1));
    // o.com's two dead-lettered by a nack
    let leases = q.lease(4, Duration::ZERO).await.unwrap();
    assert_eq!(leases.len(), 2);
    let dead: Vec<_> = leases
        .iter()
        .map(|l| {
            let opts = NackOptions {
                retry: false,
                ..NackOptions::default()
            };
            (l.handle(), opts)
        })
        .collect();
    server.cli(&["CONFIG", "RESETSTAT"]);
    q.nack(&dead).await.unwrap();
    assert_eq!(calls_of(&server, "srem"), 2, "one SREM per dead letter");
    assert_eq!(count(":v:*"), 0, "every live member removed");
    assert_eq!(q.stats().await.unwrap().dead, 2);
}

/// The real executor, noting each seed call it is handed and, at each yield, how many seed
/// calls its server has run by then.
struct Watched {
    inner: RedisExecutor,
    server: std::sync::Arc<RedisServer>,
    log: std::sync::Arc<std::sync::Mutex<Vec<(u64, u64)>>>,
    handed: std::sync::atomic::AtomicU64,
    /// The server's script calls before the seed.
    before: std::sync::atomic::AtomicU64,
}

impl queue::Executor for Watched {
    fn eval(&self, call: ops::ScriptCall) -> impl Future<Output = Result<ops::Reply>> + Send {
        if call.script.name == "seed" {
            self.handed
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.eval(call)
    }

    fn wait(&self, key: &str, timeout: Duration) -> impl Future<Output = Result<bool>> + Send {
        self.inner.wait(key, timeout)
    }

    fn monotonic_ms(&self) -> u64 {
        self.inner.monotonic_ms()
    }

    async fn yield_now(&self) {
        self.inner.yield_now().await;
        // a blocking look from outside the runtime: only what was written before it counts.
        // (A call written just before the look can reach the server's event loop in the same
        // turn as the look and be run after it: the look is repeated for a moment. On a
        // current-thread runtime nothing is written meanwhile, as the runtime is blocked here.)
        let handed = self.handed.load(std::sync::atomic::Ordering::SeqCst);
        let before = self.before.load(std::sync::atomic::Ordering::SeqCst);
        let mut ran = calls_of(&self.server, "fcall");
        for _ in 0..40 {
            if ran - before >= handed {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            ran = calls_of(&self.server, "fcall");
        }
        self.log.lock().unwrap().push((handed, ran));
    }
}

/// Seeds 3 chunks of 50 through `Watched` on the runtime the caller gives, on a server of its
/// own, and returns the log: one (calls handed, calls the server ran) per yield.
async fn seed_in_chunks_watched() -> Vec<(u64, u64)> {
    let server = std::sync::Arc::new(RedisServer::start());
    let config = Config {
        seed_batch: 50,
        ..Config::default()
    };
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let exec = Watched {
        inner: RedisExecutor::connect(&server.url(), &config)
            .await
            .unwrap(),
        server: server.clone(),
        log: log.clone(),
        handed: Default::default(),
        before: Default::default(),
    };
    let q = Queue::with_executor(exec, "chunks", config).unwrap();
    let urls: Vec<SeedItem> = (0..150)
        .map(|i| SeedItem::from(format!("http://h{}.example/{i}", i % 7)))
        .collect();
    q.stats().await.unwrap(); // loads the functions library: every later call is one FCALL
    let before = calls_of(&server, "fcall");
    q.executor()
        .before
        .store(before, std::sync::atomic::Ordering::SeqCst);
    let report = q.seed(&urls, &SeedOptions::default()).await.unwrap();
    assert_eq!(report.added, 150);
    let log = log.lock().unwrap().clone();
    log.into_iter()
        .map(|(handed, ran)| (handed, ran - before))
        .collect()
}

// A seed hands a chunk to the connection, then normalizes the next one while Redis runs it.
// That overlap needs the connection's writer to run before the normalizing starts: on a
// current-thread runtime (PHP's) and on a tokio worker (Python's asyncio, Node.js) it does only
// when the seed yields to it.
#[tokio::test]
async fn each_seed_chunk_reaches_redis_before_the_next_is_prepared_on_a_current_thread_runtime() {
    let log = seed_in_chunks_watched().await;
    assert_eq!(log, vec![(1, 1), (2, 2), (3, 3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_seed_chunk_reaches_redis_before_the_next_is_prepared_on_a_tokio_worker() {
    // spawned: the seed runs on a worker, as a binding's call does
    let log = tokio::spawn(seed_in_chunks_watched()).await.unwrap();
    assert_eq!(log, vec![(1, 1), (2, 2), (3, 3)]);
}

/// `meta` is kept a hash table (docs/PROTOCOL.md, `meta.layout`): the first seed that adds an
/// item writes the field, and so does the first such seed on a queue whose meta was written
/// without it (a listpack until then); a seed that adds nothing leaves meta as it is.
#[tokio::test]
async fn a_seed_that_adds_an_item_keeps_meta_a_hash_table() {
    // one shard on this binary's server, whose meta the test reads and rewrites
    let q = Queue::connect(&shared().url(), &unique("meta-layout"), Config::default())
        .await
        .unwrap();
    let meta = format!("{}:meta", q.ops().keys().base());
    let encoding = || shared().cli(&["OBJECT", "ENCODING", &meta]);
    q.seed(&items(&["http://a.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(encoding(), "hashtable");

    // meta as a queue of an earlier version left it: the same fields but `layout`, a listpack
    let stored = shared().cli(&["HGETALL", &meta]);
    let fields: Vec<&str> = stored.lines().collect();
    let mut hset = vec!["HSET", meta.as_str()];
    for pair in fields.chunks(2) {
        if pair[0] != "layout" {
            hset.extend(pair);
        }
    }
    assert_eq!(shared().cli(&["DEL", &meta]), "1");
    shared().cli(&hset);
    assert_eq!(encoding(), "listpack");

    let report = q
        .seed(&items(&["http://a.com/1"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!((report.added, report.duplicates), (0, 1));
    assert_eq!(encoding(), "listpack");
    q.seed(&items(&["http://a.com/2"]), &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(encoding(), "hashtable");
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.ready, stats.seen, stats.seeded_total), (2, 2, 2));
}
