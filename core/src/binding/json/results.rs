//! Results to JSON: leases, reports, stats, dead letters, hosts, stored items, in the binding's style.

use super::*;

/// A lease as a plain object: id, url, host, payload, priority, attempt, token, leased_at,
/// expires_at, enqueued_at, last_error, crawl.
pub fn lease_to_json(lease: &Lease, style: Style) -> Value {
    Out::new(style)
        .value("id", lease.id.clone())
        .value("url", lease.url.clone())
        .value("host", lease.host.clone())
        .value("key", lease.key.clone())
        .value("payload", lease.payload.clone().unwrap_or(Value::Null))
        .value("priority", lease.priority)
        .value("attempt", lease.attempt)
        .value("token", lease.token)
        .timestamp("leased_at", Some(lease.leased_at_ms))
        .timestamp("expires_at", Some(lease.expires_at_ms))
        .timestamp("enqueued_at", Some(lease.enqueued_at_ms))
        .value("last_error", lease.last_error.clone())
        .value("crawl", lease.crawl.clone())
        .done()
}

/// A seed report: added, duplicates, invalid (index, input, code, reason), ids (one per item:
/// the id it was queued under, or null).
pub fn seed_report_to_json(report: &SeedReport, style: Style) -> Value {
    let invalid: Vec<Value> = report
        .invalid
        .iter()
        .map(|i| {
            Out::new(style)
                .value("index", i.index)
                .value("input", i.input.clone())
                .value("code", i.reason.code())
                .value("reason", i.reason.to_string())
                .done()
        })
        .collect();
    Out::new(style)
        .value("added", report.added)
        .value("duplicates", report.duplicates)
        .value("invalid", invalid)
        .value("ids", report.ids.clone())
        .done()
}

/// Depth and counters; with several shards also `shards`, each shard's own figures.
pub fn stats_to_json(s: &Stats, style: Style) -> Value {
    let mut out = stats_fields(s, style);
    if !s.shards.is_empty() {
        let shards = s
            .shards
            .iter()
            .map(|shard| stats_fields(shard, style))
            .collect();
        if let Value::Object(map) = &mut out {
            map.insert("shards".into(), Value::Array(shards));
        }
    }
    out
}

pub(super) fn stats_fields(s: &Stats, style: Style) -> Value {
    Out::new(style)
        .value("pending", s.pending)
        .value("ready", s.ready)
        .value("delayed", s.delayed)
        .value("leased", s.leased)
        .value("dead", s.dead)
        .value("done", s.done)
        .value("seen", s.seen)
        .value("hosts", s.hosts)
        .value("hosts_waiting", s.hosts_waiting)
        .duration(
            "oldest_pending_age",
            s.oldest_pending_age_ms.map(|ms| ms as i64),
        )
        .value("seeded_total", s.seeded_total)
        .value("duplicates_total", s.duplicates_total)
        .value("leased_total", s.leased_total)
        .value("acked_total", s.acked_total)
        .value("nacked_total", s.nacked_total)
        .value("retried_total", s.retried_total)
        .value("reclaimed_total", s.reclaimed_total)
        .value("released_total", s.released_total)
        .value("dead_total", s.dead_total)
        .value("over_budget_total", s.over_budget_total)
        .value("revisits", s.revisits)
        .value("seen_cache_hits_total", s.seen_cache_hits_total)
        .timestamp("now", Some(s.now_ms))
        .done()
}

/// One dead letter: id, url, host, payload, priority, attempts, last_error, died_at, raw (the
/// stored record when it could not be decoded, else null).
pub fn dead_letter_to_json(d: &DeadLetter, style: Style) -> Value {
    Out::new(style)
        .value("id", d.id.clone())
        .value("url", d.url.clone())
        .value("host", d.host.clone())
        .value("key", d.key.clone())
        .value("payload", d.payload.clone().unwrap_or(Value::Null))
        .value("priority", d.priority)
        .value("attempts", d.attempts)
        .value("last_error", d.last_error.clone())
        .timestamp("died_at", Some(d.died_at_ms))
        .value("raw", d.raw.clone())
        .done()
}

/// A page of dead letters: total, items.
pub fn dead_page_to_json(page: &DeadPage, style: Style) -> Value {
    Out::new(style)
        .value("total", page.total)
        .value(
            "items",
            page.items
                .iter()
                .map(|d| dead_letter_to_json(d, style))
                .collect::<Vec<_>>(),
        )
        .done()
}

/// One lease held now, as a lease shows it: id, url, host, key, payload, priority, attempt (1
/// on the first delivery), token, expires_at, enqueued_at, last_error, crawl (no leased_at:
/// the queue does not keep it).
pub fn leased_item_to_json(held: &LeasedItem, style: Style) -> Value {
    let item = &held.item;
    let lease = Lease {
        id: item.id.clone(),
        url: item.url.clone(),
        host: item.host.clone(),
        key: item.key.clone(),
        crawl: item.crawl.clone(),
        payload: item.payload.clone(),
        priority: item.priority,
        attempt: item.attempt + 1,
        token: held.token,
        leased_at_ms: 0,
        expires_at_ms: held.expires_at_ms,
        enqueued_at_ms: item.ts,
        last_error: item.last_error.clone(),
    };
    let mut v = lease_to_json(&lease, style);
    if let Value::Object(fields) = &mut v {
        fields.remove(&field_name("leased_at", false, style));
    }
    v
}

/// A page of the leases held now ([`crate::Queue::leased_items`]): total, now (the Redis
/// clock), items (soonest expiry first).
///
/// ```
/// use crawlq::{LeasedItem, LeasedPage, Style, wire::StoredItem};
/// let item = StoredItem {
///     id: "7".into(), ts: 1_000, host: "a.com".into(), priority: 0, attempt: 0, crawl: None,
///     url: Some("http://a.com/".into()), key: None, last_error: None, payload: None,
/// };
/// let page = LeasedPage { total: 1, now_ms: 5_000, items: vec![LeasedItem { token: 9, expires_at_ms: 4_000, item }] };
/// let v = crawlq::binding::json::leased_page_to_json(&page, Style::Camel);
/// assert_eq!((v["now"].as_i64(), v["items"][0]["attempt"].as_u64()), (Some(5_000), Some(1)));
/// assert_eq!(v["items"][0]["expiresAt"], 4_000);
/// ```
pub fn leased_page_to_json(page: &LeasedPage, style: Style) -> Value {
    Out::new(style)
        .value("total", page.total)
        .timestamp("now", Some(page.now_ms))
        .value(
            "items",
            page.items
                .iter()
                .map(|l| leased_item_to_json(l, style))
                .collect::<Vec<_>>(),
        )
        .done()
}

/// A named crawl's counts: pending, ready, delayed, leased, dead, done, seen, hosts,
/// oldest_pending_age (null: no ready item), seeded_total, and its limits: cap (null: none),
/// paused, deleting, held_hosts, weight, rate (null: none), host_budget (null: none); its
/// rates over the last minute: done_per_second, seeded_per_second.
pub fn crawl_stats_to_json(s: &crate::CrawlStats, style: Style) -> Value {
    Out::new(style)
        .value("pending", s.pending())
        .value("ready", s.ready)
        .value("delayed", s.delayed)
        .value("leased", s.leased)
        .value("dead", s.dead)
        .value("done", s.done)
        .value("seen", s.seen)
        .value("hosts", s.hosts)
        .duration(
            "oldest_pending_age",
            s.oldest_pending_age_ms.map(|ms| ms as i64),
        )
        .value("seeded_total", s.seeded_total)
        .value("cap", s.cap)
        .value("paused", s.paused)
        .value("deleting", s.deleting)
        .value("held_hosts", s.held_hosts)
        .value("weight", s.weight)
        .value("rate", s.rate)
        .value("host_budget", s.host_budget)
        .value("done_per_second", s.done_per_second)
        .value("seeded_per_second", s.seeded_per_second)
        .done()
}

/// Politeness state of a host: host, delay (override), adaptive_extra, ready, held_until,
/// paused, paused_until, budget, budget_used, budget_remaining, deleting, in_flight_limit,
/// in_flight, full, delay_from_robots, delay_after, delay_factor.
pub fn host_info_to_json(h: &HostInfo, style: Style) -> Value {
    Out::new(style)
        .value("host", h.host.clone())
        .duration("delay", h.delay_override_ms.map(|ms| ms as i64))
        .duration("adaptive_extra", Some(h.adaptive_extra_ms as i64))
        .value("ready", h.ready)
        .timestamp("held_until", h.held_until_ms)
        .value("paused", h.paused)
        .timestamp("paused_until", h.paused_until_ms)
        .value("budget", h.budget)
        .value("budget_used", h.budget_used)
        .value("budget_remaining", h.budget_remaining())
        .value("deleting", h.deleting)
        .value("in_flight_limit", h.in_flight_limit)
        .value("in_flight", h.in_flight)
        .value("full", h.full)
        .value("delay_from_robots", h.delay_from_robots)
        .value("delay_after", h.pacing.map(|p| p.after.as_str()))
        .value("delay_factor", h.pacing.and_then(|p| p.factor))
        .done()
}

/// One host's counts (list_hosts): host, items, ready, delayed, leased, dead, next_due,
/// paused, paused_until.
pub fn host_counts_to_json(h: &HostCounts, style: Style) -> Value {
    Out::new(style)
        .value("host", h.host.clone())
        .value("items", h.items)
        .value("ready", h.ready)
        .value("delayed", h.delayed)
        .value("leased", h.leased)
        .value("dead", h.dead)
        .timestamp("next_due", h.next_due_ms)
        .value("paused", h.paused)
        .timestamp("paused_until", h.paused_until_ms)
        .done()
}

/// A page of hosts (list_hosts): hosts, total, cursor (null after the last page).
pub fn host_page_to_json(p: &HostPage, style: Style) -> Value {
    let hosts = p
        .hosts
        .iter()
        .map(|h| host_counts_to_json(h, style))
        .collect::<Vec<_>>();
    Out::new(style)
        .value("hosts", hosts)
        .value("total", p.total)
        .value("cursor", p.cursor.clone())
        .done()
}

/// What deleting a host removed: host, ready, delayed, leased, dead, removed, left, forgotten.
pub fn host_deletion_to_json(d: &HostDeletion, style: Style) -> Value {
    Out::new(style)
        .value("host", d.host.clone())
        .value("ready", d.ready)
        .value("delayed", d.delayed)
        .value("leased", d.leased)
        .value("dead", d.dead)
        .value("removed", d.removed())
        .value("left", d.left)
        .value("forgotten", d.forgotten)
        .done()
}

/// How far a seed call is: items done of the total (seeded, found duplicate or refused), and
/// the added, duplicate and refused counts so far.
pub fn seed_progress_to_json(p: &crate::SeedProgress, style: Style) -> Value {
    Out::new(style)
        .value("done", p.done)
        .value("total", p.total)
        .value("added", p.added)
        .value("duplicates", p.duplicates)
        .value("invalid", p.invalid)
        .done()
}

/// What a crawl's deletion removed: crawl, ready, delayed, leased, dead, removed.
pub fn crawl_deletion_to_json(d: &crate::CrawlDeletion, style: Style) -> Value {
    Out::new(style)
        .value("crawl", d.crawl.clone())
        .value("ready", d.ready)
        .value("delayed", d.delayed)
        .value("leased", d.leased)
        .value("dead", d.dead)
        .value("removed", d.removed())
        .done()
}

/// What a reclaim did: requeued, dead, remaining.
pub fn reclaim_to_json(r: &ReclaimReport, style: Style) -> Value {
    Out::new(style)
        .value("requeued", r.requeued)
        .value("dead", r.dead)
        .value("remaining", r.remaining)
        .done()
}

/// A queued record (peek): id, url, host, payload, priority, attempt, enqueued_at, last_error.
pub fn stored_item_to_json(item: &StoredItem, style: Style) -> Value {
    Out::new(style)
        .value("id", item.id.clone())
        .value("url", item.url.clone())
        .value("host", item.host.clone())
        .value("key", item.key.clone())
        .value("payload", item.payload.clone().unwrap_or(Value::Null))
        .value("priority", item.priority)
        .value("attempt", item.attempt)
        .timestamp("enqueued_at", Some(item.ts))
        .value("last_error", item.last_error.clone())
        .done()
}

/// Queued records (peek, peek_host) as a JSON array of [`stored_item_to_json`] objects.
pub fn stored_items_to_json(items: &[StoredItem], style: Style) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| stored_item_to_json(i, style))
            .collect(),
    )
}

/// The canonical form of one input: kind (`url` or `host`), canonical, host, fingerprint (32
/// hex digits). Invalid inputs are an [`Error::InvalidItem`] with the reason code.
///
/// ```
/// let v = crawlq::binding::json::normalized_to_json("HTTP://Example.com:80/#x").unwrap();
/// assert_eq!(v["canonical"], "http://example.com/");
/// assert_eq!(crawlq::binding::json::normalized_to_json("ftp://x").unwrap_err().code(), "INVALID_ITEM");
/// ```
pub fn normalized_to_json(input: &str) -> Result<Value> {
    let n = crate::normalize::normalize(input).map_err(|reason| Error::InvalidItem {
        index: 0,
        input: input.to_string(),
        reason,
    })?;
    let kind = match n.kind {
        crate::normalize::ItemKind::Url => "url",
        crate::normalize::ItemKind::Host => "host",
    };
    Ok(serde_json::json!({
        "kind": kind,
        "canonical": n.canonical,
        "host": n.host,
        "fingerprint": n.fingerprint().hex(),
    }))
}

/// The shard of an input (URL or host, by its host key) in a queue of `shards` shards.
///
/// ```
/// assert_eq!(crawlq::binding::json::shard_of_input("http://Example.com/a", 1).unwrap(), 0);
/// assert!(crawlq::binding::json::shard_of_input("example.com", 8).unwrap() < 8);
/// assert_eq!(crawlq::binding::json::shard_of_input("example.com", 0).unwrap_err().code(), "INVALID_ARGUMENT");
/// ```
pub fn shard_of_input(input: &str, shards: i64) -> Result<u32> {
    let shards = u32::try_from(shards)
        .ok()
        .filter(|s| (1..=1024).contains(s))
        .ok_or_else(|| {
            Error::InvalidArgument(format!("shards must be within 1..=1024, got {shards}"))
        })?;
    let n = crate::normalize::normalize(input).map_err(|reason| Error::InvalidItem {
        index: 0,
        input: input.to_string(),
        reason,
    })?;
    let host = crate::normalize::host_key(&n.host, crate::HostKeyMode::Host);
    Ok(crate::normalize::shard_of(&host, shards))
}

/// The known-seen cache's counters ([`crate::Queue::seen_cache_stats`]): entries, hits,
/// misses, resent, resets.
///
/// ```
/// use crawlq::{Style, binding::{json::seen_cache_stats_to_json}};
/// let j = seen_cache_stats_to_json(&Default::default(), Style::Camel);
/// assert_eq!(j["hits"], 0);
/// ```
pub fn seen_cache_stats_to_json(s: &crate::seen_cache::SeenCacheStats, style: Style) -> Value {
    Out::new(style)
        .value("entries", s.entries)
        .value("hits", s.hits)
        .value("misses", s.misses)
        .value("resent", s.resent)
        .value("resets", s.resets)
        .done()
}
