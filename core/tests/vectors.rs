//! The shared vectors of tests/vectors/ (normalization, fingerprints, stored bytes, key names,
//! operation scenarios), checked through the Rust API. Every other runtime checks the same files.
mod common;

use common::*;
use crawlq::binding::json::{self, field_name};
use crawlq::*;
use serde_json::{Value, json};
use std::time::Duration;

fn vectors(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Vector names (snake_case, `_ms` for milliseconds) in the JavaScript style the Rust runner
/// feeds to the core's parsers. Payloads are data, not names: left alone.
fn to_camel(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let name = match k.strip_suffix("_ms") {
                        Some(stem) => field_name(stem, true, Style::Camel),
                        None => field_name(k, false, Style::Camel),
                    };
                    (
                        name,
                        if k == "payload" {
                            v.clone()
                        } else {
                            to_camel(v)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(to_camel).collect()),
        other => other.clone(),
    }
}

/// Results (JavaScript style) back in vector names: `expiresAt` -> `expires_at`,
/// `oldestPendingAgeMs` -> `oldest_pending_age`.
fn to_snake(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let stem = k.strip_suffix("Ms").unwrap_or(k);
                    let mut name = String::new();
                    for c in stem.chars() {
                        if c.is_ascii_uppercase() {
                            name.push('_');
                            name.push(c.to_ascii_lowercase());
                        } else {
                            name.push(c);
                        }
                    }
                    (
                        name,
                        if k == "payload" {
                            v.clone()
                        } else {
                            to_snake(v)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(to_snake).collect()),
        other => other.clone(),
    }
}

/// Expected objects list the fields to compare; lists must match element by element.
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|x| matches(v, x))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| matches(x, y))
        }
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        (e, a) => e == a,
    }
}

#[test]
fn normalization_and_fingerprint_vectors() {
    let file = vectors("normalize.json");
    let cases = file["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 300);
    // inputs that are not valid Unicode elsewhere arrive here with U+FFFD already in place
    let invalid_text = file["invalid_text"].as_array().unwrap().clone();
    assert!(!invalid_text.is_empty());
    for case in cases.into_iter().chain(invalid_text) {
        let input = case["input"].as_str().unwrap();
        match (json::normalized_to_json(input), case.get("error")) {
            (Ok(got), None) => {
                for field in ["kind", "canonical", "host", "fingerprint"] {
                    assert_eq!(got[field], case[field], "{field} of {input:?}");
                }
            }
            (Err(Error::InvalidItem { reason, .. }), Some(code)) => {
                assert_eq!(reason.code(), code, "{input:?}")
            }
            (got, _) => panic!("{input:?}: expected {case}, got {got:?}"),
        }
    }
}

async fn seed_items(
    q: &Queue<RedisExecutor>,
    items: &Value,
    options: &Value,
) -> Result<SeedReport> {
    let items = json::seed_items_from_json(&to_camel(items), Style::Camel)?;
    let options = json::seed_options_from_json(&to_camel(options), Style::Camel)?;
    q.seed(&items, &options).await
}

/// Every stored record of a queue (ready lanes, then delayed), by id.
fn stored_records(base: &str) -> Vec<String> {
    let mut records: Vec<String> = scan_keys(shared(), base, ":l:*")
        .iter()
        .flat_map(|lane| {
            shared()
                .cli(&["LRANGE", lane, "0", "-1"])
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    records.extend(
        shared()
            .cli(&["ZRANGE", &format!("{base}:delayed"), "0", "-1"])
            .lines()
            .map(str::to_string),
    );
    records.sort_by_key(|r| {
        wire::decode_record(r.as_bytes())
            .unwrap()
            .id
            .parse::<u64>()
            .unwrap()
    });
    records
}

#[tokio::test]
async fn stored_record_vectors() {
    let file = vectors("records.json");
    for case in file["cases"].as_array().unwrap() {
        let config = Config {
            fixed_clock_ms: file["clock"].as_i64(),
            ..config()
        };
        let q = open("records", config).await;
        seed_items(&q, &case["items"], &case["options"])
            .await
            .unwrap();
        let expected: Vec<String> = case["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            stored_records(q.ops().keys().base()),
            expected,
            "{}",
            case["name"]
        );
    }
}

#[tokio::test]
async fn key_name_vectors() {
    for case in vectors("keys.json")["cases"].as_array().unwrap() {
        let prefix = unique("vec");
        let queue = case["queue"].as_str().unwrap();
        let q = Queue::connect(
            &shared().url(),
            queue,
            Config {
                key_prefix: prefix.clone(),
                ..config()
            },
        )
        .await
        .unwrap();
        seed_items(&q, &case["items"], &Value::Null).await.unwrap();
        let mut keys = scan_keys(shared(), &format!("{prefix}:"), "*");
        keys.sort();
        let expected: Vec<String> = case["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().replace("{prefix}", &prefix))
            .collect();
        assert_eq!(keys, expected);
        let bucket = keys.iter().find(|k| k.contains(":s:0:")).unwrap();
        let members = shared().cli(&["SMEMBERS", bucket]);
        let all_buckets: String = keys
            .iter()
            .filter(|k| k.contains(":s:"))
            .map(|k| shared().cli(&["SMEMBERS", k]))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            all_buckets
                .lines()
                .any(|m| m == case["seen_member"].as_str().unwrap()),
            "{members}"
        );
        let live_key = case["live_key"]
            .as_str()
            .unwrap()
            .replace("{prefix}", &prefix);
        let live = shared().cli(&["SMEMBERS", &live_key]);
        assert!(
            live.lines()
                .any(|m| m == case["live_member"].as_str().unwrap()),
            "live member of the first URL in {live_key}: {live}"
        );
    }
}

#[tokio::test]
async fn scenario_vectors() {
    let file = vectors("scenarios.json");
    let clock = file["clock"].as_i64().unwrap();
    for scenario in file["scenarios"].as_array().unwrap() {
        let name = scenario["name"].as_str().unwrap();
        let mut options = to_camel(&scenario["options"]);
        options
            .as_object_mut()
            .unwrap()
            .insert("fixedClock".into(), json!(clock));
        let config = json::config_from_json(&options, Style::Camel).unwrap();
        let q = open("scenario", config).await;
        let mut leases: Vec<Lease> = Vec::new();
        for (n, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
            let handles = |step: &Value| -> (Vec<LeaseHandle>, bool) {
                match (step.get("lease"), step.get("leases")) {
                    (Some(i), _) => (vec![leases[i.as_u64().unwrap() as usize].handle()], true),
                    (_, Some(list)) => (
                        list.as_array()
                            .unwrap()
                            .iter()
                            .map(|i| leases[i.as_u64().unwrap() as usize].handle())
                            .collect(),
                        false,
                    ),
                    _ => (vec![], false),
                }
            };
            let (h, single) = handles(step);
            let result: Result<Value> = async {
                Ok(match step["op"].as_str().unwrap() {
                    "clock" => {
                        q.set_fixed_clock(step["ms"].as_i64());
                        Value::Null
                    }
                    "seed" => {
                        let report = seed_items(
                            &q,
                            &step["items"],
                            step.get("options").unwrap_or(&Value::Null),
                        )
                        .await?;
                        to_snake(&json::seed_report_to_json(&report, Style::Camel))
                    }
                    "lease" => {
                        let opts = LeaseOptions {
                            max: step["max"].as_u64().unwrap() as usize,
                            wait: Duration::from_millis(step["wait_ms"].as_u64().unwrap()),
                            ttl: None,
                        };
                        let got = q.lease_with(&opts).await?;
                        let out = Value::Array(
                            got.iter()
                                .map(|l| to_snake(&json::lease_to_json(l, Style::Camel)))
                                .collect(),
                        );
                        leases.extend(got);
                        out
                    }
                    "ack_and_lease" => {
                        let opts = LeaseOptions {
                            max: step["max"].as_u64().unwrap() as usize,
                            wait: Duration::from_millis(step["wait_ms"].as_u64().unwrap()),
                            ttl: None,
                        };
                        let (acked, got) =
                            q.ack_and_lease_answers(&h, single, &opts, || false).await?;
                        let out = serde_json::json!({
                            "acked": acked.to_json(Style::Camel),
                            "leases": got
                                .iter()
                                .map(|l| to_snake(&json::lease_to_json(l, Style::Camel)))
                                .collect::<Vec<_>>(),
                        });
                        leases.extend(got);
                        out
                    }
                    "ack" | "nack" | "extend" | "release" => {
                        let answer = match step["op"].as_str().unwrap() {
                            "ack" => json::ack_answer_from_json(
                                &to_camel(step.get("options").unwrap_or(&Value::Null)),
                                Style::Camel,
                            )?,
                            "release" => Answer::Release(json::release_options_from_json(
                                &to_camel(step.get("options").unwrap_or(&Value::Null)),
                                Style::Camel,
                            )?),
                            "extend" => Answer::Extend(Duration::from_millis(
                                step["ttl_ms"].as_u64().unwrap(),
                            )),
                            _ => Answer::Nack(json::nack_options_from_json(
                                &to_camel(step.get("options").unwrap_or(&Value::Null)),
                                Style::Camel,
                            )?),
                        };
                        q.answer(&answer, &h, single).await?.to_json(Style::Camel)
                    }
                    "reclaim" => to_snake(&json::reclaim_to_json(
                        &q.reclaim(step["limit"].as_u64().unwrap() as usize).await?,
                        Style::Camel,
                    )),
                    "stats" => to_snake(&json::stats_to_json(&q.stats().await?, Style::Camel)),
                    "dead" => {
                        let page = q
                            .dead(
                                step["limit"].as_u64().unwrap() as usize,
                                step["offset"].as_u64().unwrap() as usize,
                            )
                            .await?;
                        Value::Array(
                            page.items
                                .iter()
                                .map(|d| to_snake(&json::dead_letter_to_json(d, Style::Camel)))
                                .collect(),
                        )
                    }
                    "requeue_dead" => {
                        let ids: Option<Vec<String>> =
                            serde_json::from_value(step["ids"].clone()).unwrap();
                        json!(q.requeue_dead(ids.as_deref()).await?)
                    }
                    "is_finished" => json!(q.is_finished().await?),
                    "purge_dead" => {
                        match serde_json::from_value::<Option<Vec<String>>>(step["ids"].clone())
                            .unwrap()
                        {
                            Some(ids) => {
                                json!(q.purge_dead_ids(&ids).await?.iter().filter(|&&f| f).count())
                            }
                            None => json!(q.purge_dead().await?),
                        }
                    }
                    "set_host_delay" => {
                        let delay = step["delay_ms"].as_u64().map(Duration::from_millis);
                        to_snake(&json::host_info_to_json(
                            &q.set_host_delay(step["host"].as_str().unwrap(), delay)
                                .await?,
                            Style::Camel,
                        ))
                    }
                    "pause" => match step["duration_ms"].as_u64() {
                        Some(ms) => json!(q.pause_for(Duration::from_millis(ms)).await?),
                        None => json!(q.pause().await?),
                    },
                    "resume" => json!(q.resume().await?),
                    "is_paused" => json!(q.is_paused().await?),
                    "set_host_crawl_delay" => to_snake(&json::host_info_to_json(
                        &q.set_host_crawl_delay(
                            step["host"].as_str().unwrap(),
                            step["delay_ms"].as_u64().map(Duration::from_millis),
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "set_host_delay_after" => to_snake(&json::host_info_to_json(
                        &q.set_host_delay_after(
                            step["host"].as_str().unwrap(),
                            HostPacing::from_parts(
                                step["after"].as_str(),
                                step["factor"].as_f64(),
                            )?,
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "set_host_in_flight" => to_snake(&json::host_info_to_json(
                        &q.set_host_in_flight(
                            step["host"].as_str().unwrap(),
                            step["limit"].as_u64(),
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "set_host_budget" => to_snake(&json::host_info_to_json(
                        &q.set_host_budget(step["host"].as_str().unwrap(), step["urls"].as_u64())
                            .await?,
                        Style::Camel,
                    )),
                    "set_default_host_budget" => {
                        q.set_default_host_budget(step["urls"].as_u64()).await?;
                        Value::Null
                    }
                    "default_host_budget" => json!(q.default_host_budget().await?),
                    "pause_host" => {
                        let duration = step["duration_ms"].as_u64().map(Duration::from_millis);
                        to_snake(&json::host_info_to_json(
                            &q.pause_host(step["host"].as_str().unwrap(), duration)
                                .await?,
                            Style::Camel,
                        ))
                    }
                    "resume_host" => to_snake(&json::host_info_to_json(
                        &q.resume_host(step["host"].as_str().unwrap()).await?,
                        Style::Camel,
                    )),
                    "list_hosts" => to_snake(&json::host_page_to_json(
                        &q.list_hosts(
                            step["cursor"].as_str(),
                            step["limit"].as_u64().unwrap() as usize,
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "remove_queue" => json!(
                        q.remove_queue(step["even_if_leased"].as_bool().unwrap_or(false))
                            .await?
                    ),
                    "delete_host" => to_snake(&json::host_deletion_to_json(
                        &q.delete_host(
                            step["host"].as_str().unwrap(),
                            step["forget_seen"].as_bool().unwrap_or(false),
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "ack_with_links" => {
                        let lease = leases[step["lease"].as_u64().unwrap() as usize].handle();
                        let links =
                            json::seed_items_from_json(&to_camel(&step["links"]), Style::Camel)?;
                        let options = json::seed_options_from_json(
                            &to_camel(step.get("options").unwrap_or(&Value::Null)),
                            Style::Camel,
                        )?;
                        let (acked, report) = q.ack_with_links(&lease, &links, &options).await?;
                        serde_json::json!({
                            "acked": acked,
                            "links": to_snake(&json::seed_report_to_json(&report, Style::Camel)),
                        })
                    }
                    "ack_with_links_and_lease" => {
                        let lease = leases[step["lease"].as_u64().unwrap() as usize].handle();
                        let links =
                            json::seed_items_from_json(&to_camel(&step["links"]), Style::Camel)?;
                        let options = json::seed_options_from_json(
                            &to_camel(step.get("options").unwrap_or(&Value::Null)),
                            Style::Camel,
                        )?;
                        let next = LeaseOptions {
                            max: step["max"].as_u64().unwrap() as usize,
                            wait: Duration::from_millis(step["wait_ms"].as_u64().unwrap()),
                            ttl: None,
                        };
                        let (acked, report, got) = q
                            .ack_with_links_and_lease(&lease, &links, &options, &next)
                            .await?;
                        let out = serde_json::json!({
                            "acked": acked,
                            "links": to_snake(&json::seed_report_to_json(&report, Style::Camel)),
                            "leases": got
                                .iter()
                                .map(|l| to_snake(&json::lease_to_json(l, Style::Camel)))
                                .collect::<Vec<_>>(),
                        });
                        leases.extend(got);
                        out
                    }
                    "wait_host_turn" => {
                        let lease = step
                            .get("lease")
                            .map(|i| leases[i.as_u64().unwrap() as usize].handle());
                        Value::Bool(
                            q.wait_host_turn(
                                step["url"].as_str().unwrap(),
                                lease.as_ref(),
                                Duration::from_millis(step["timeout_ms"].as_u64().unwrap()),
                            )
                            .await?,
                        )
                    }
                    "host_info" => to_snake(&json::host_info_to_json(
                        &q.host_info(step["host"].as_str().unwrap()).await?,
                        Style::Camel,
                    )),
                    "peek" => Value::Array(
                        q.peek(step["limit"].as_u64().unwrap() as usize)
                            .await?
                            .iter()
                            .map(|i| to_snake(&json::stored_item_to_json(i, Style::Camel)))
                            .collect(),
                    ),
                    "peek_host" => Value::Array(
                        q.peek_host(
                            step["host"].as_str().unwrap(),
                            step["limit"].as_u64().unwrap() as usize,
                            step["offset"].as_u64().unwrap() as usize,
                        )
                        .await?
                        .iter()
                        .map(|i| to_snake(&json::stored_item_to_json(i, Style::Camel)))
                        .collect(),
                    ),
                    "crawl_stats" => to_snake(&json::crawl_stats_to_json(
                        &q.crawl_stats(step["crawl"].as_str().unwrap()).await?,
                        Style::Camel,
                    )),
                    "set_crawl_cap" => to_snake(&json::crawl_stats_to_json(
                        &q.set_crawl_cap(step["crawl"].as_str().unwrap(), step["cap"].as_u64())
                            .await?,
                        Style::Camel,
                    )),
                    "set_crawl_weight" => to_snake(&json::crawl_stats_to_json(
                        &q.set_crawl_weight(
                            step["crawl"].as_str().unwrap(),
                            step["weight"].as_u64(),
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "set_crawl_host_budget" => to_snake(&json::crawl_stats_to_json(
                        &q.set_crawl_host_budget(
                            step["crawl"].as_str().unwrap(),
                            step["urls"].as_u64(),
                        )
                        .await?,
                        Style::Camel,
                    )),
                    "pause_crawl" => {
                        q.pause_crawl(step["crawl"].as_str().unwrap()).await?;
                        Value::Null
                    }
                    "resume_crawl" => {
                        q.resume_crawl(step["crawl"].as_str().unwrap()).await?;
                        Value::Null
                    }
                    "crawls" => serde_json::json!(q.crawls().await?),
                    "delete_crawl" => to_snake(&json::crawl_deletion_to_json(
                        &q.delete_crawl(step["crawl"].as_str().unwrap()).await?,
                        Style::Camel,
                    )),
                    other => panic!("unknown op {other}"),
                })
            }
            .await;
            let at = format!("{name}, step {n} ({})", step["op"]);
            match (result, step.get("expect_error")) {
                (Err(e), Some(code)) => assert_eq!(e.code(), code.as_str().unwrap(), "{at}"),
                (Ok(got), None) => {
                    if let Some(expected) = step.get("expect") {
                        assert!(
                            matches(expected, &got),
                            "{at}: expected {expected}, got {got}"
                        );
                    }
                }
                (got, _) => panic!("{at}: expected {step}, got {got:?}"),
            }
        }
    }
}

#[test]
fn shard_vectors() {
    let cases = vectors("shards.json")["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 100);
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let shards = case["shards"].as_i64().unwrap();
        let got = json::shard_of_input(input, shards).unwrap();
        assert_eq!(
            u64::from(got),
            case["shard"].as_u64().unwrap(),
            "{input} in {shards}"
        );
        let host = case["host"].as_str().unwrap();
        assert_eq!(got, crawlq::normalize::shard_of(host, shards as u32));
    }
    // the spread layout's hash tags
    let tags = vectors("shards.json")["tags"].as_array().unwrap().clone();
    for case in tags {
        let queue = case["queue"].as_str().unwrap();
        let count = case["shards"].as_u64().unwrap() as u32;
        let want = case
            .get("tags")
            .or(case.get("first"))
            .unwrap()
            .as_array()
            .unwrap();
        for (s, tag) in want.iter().enumerate() {
            assert_eq!(
                crawlq::keys::spread_tag(queue, s as u32, count),
                tag.as_str().unwrap(),
                "{queue}, shard {s} of {count}"
            );
        }
    }
}

/// tests/vectors/requests.json: the crawl-request shape (docs/PROTOCOL.md section 10) every
/// framework adapter stores and reads: its stored bytes, its identity key (with and without
/// `sort_query`), what a lease of it reads as, how plain items read, the sorted queries; then
/// the same end to end through a queue: seeded, leased, read back, its record in Redis.
#[tokio::test]
async fn crawl_requests_store_read_and_key_as_the_vectors_say() {
    let file = vectors("requests.json");
    let plain = crawlq::ops::Ops::new("v", Config::default()).unwrap();
    let sorting = crawlq::ops::Ops::new(
        "v",
        Config {
            sort_query: true,
            ..Config::default()
        },
    )
    .unwrap();
    let q = open("requests", fixed_clock_config()).await;
    for case in file["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let request = json::request_from_json(&case["request"], Style::Snake).unwrap();
        let payload = request.payload();
        assert_eq!(payload, case["payload"], "{name}: payload");
        assert_eq!(
            crawlq::wire::canonical_json(&payload).unwrap(),
            case["stored"].as_str().unwrap(),
            "{name}: stored bytes"
        );
        let key = |ops: &crawlq::ops::Ops| ops.request_item(&request).key.map(Value::from);
        assert_eq!(
            key(&plain).unwrap_or(Value::Null),
            case["key"],
            "{name}: key"
        );
        assert_eq!(
            key(&sorting).unwrap_or(Value::Null),
            case["key_sorted_query"],
            "{name}: key with sort_query"
        );
        let url = case["read"]["url"].as_str();
        let read = json::request_of_item(url, Some(&payload), Style::Snake).unwrap();
        assert_eq!(read, case["read"], "{name}: read");

        // end to end: seeded, leased, read back; the record holds the stored bytes and key
        let items = q.request_items(std::slice::from_ref(&request));
        let report = q.seed(&items, &SeedOptions::default()).await.unwrap();
        assert_eq!(report.added, 1, "{name}: seeded");
        let leases = q.lease(1, Duration::ZERO).await.unwrap();
        let lease = &leases[0];
        let read =
            json::request_of_item(lease.url.as_deref(), lease.payload.as_ref(), Style::Snake)
                .unwrap();
        assert_eq!(read, case["read"], "{name}: read from a lease");
        assert_eq!(
            lease.key.as_deref(),
            case["key"].as_str(),
            "{name}: the lease's key"
        );
        q.ack(&[lease.handle()]).await.unwrap();
    }
    for case in file["reads"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let payload = (!case["payload"].is_null()).then(|| &case["payload"]);
        let read = json::request_of_item(case["url"].as_str(), payload, Style::Snake);
        match case.get("error") {
            Some(code) => assert_eq!(read.unwrap_err().code(), code.as_str().unwrap(), "{name}"),
            None => assert_eq!(read.unwrap(), case["read"], "{name}"),
        }
    }
    for case in file["updates"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let updated = json::request_update(
            case["url"].as_str(),
            Some(&case["payload"]),
            &case["changes"],
            Style::Snake,
        );
        match case.get("error") {
            Some(code) => assert_eq!(
                updated.unwrap_err().code(),
                code.as_str().unwrap(),
                "{name}"
            ),
            None => {
                let updated = updated.unwrap();
                assert_eq!(updated, case["result"], "{name}");
                assert_eq!(
                    crawlq::wire::canonical_json(&updated).unwrap(),
                    case["stored"].as_str().unwrap(),
                    "{name}: stored bytes"
                );
            }
        }
    }
    for case in file["sort_query"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let sorted = crawlq::normalize::normalize(input)
            .unwrap()
            .with_sorted_query();
        assert_eq!(
            sorted.canonical,
            case["canonical"].as_str().unwrap(),
            "{input}"
        );
    }
}
