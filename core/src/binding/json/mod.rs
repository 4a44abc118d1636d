//! Conversions between the operations' values and each binding's conventions, so every
//! language parses the same options and returns the same fields, spelled its own way.
//!
//! [`Style::Snake`]: snake_case names, durations and timestamps in seconds (Python, PHP).
//! [`Style::Camel`]: camelCase names, durations (suffix `Ms`) and timestamps in milliseconds
//! (JavaScript). Bindings turn their native values into JSON values, call these, and turn the
//! JSON results back.

use crate::config::{Style, duration_from_value, duration_hint};
use crate::error::{Error, InvalidReason, Result};
use crate::model::*;
use crate::queue::LeaseOptions;
use crate::request::CrawlRequest;
use crate::wire::StoredItem;
use serde_json::{Map, Number, Value};
use std::time::Duration;

/// Deepest nesting a binding converts from its language's values (lists, dicts, arrays,
/// objects) before refusing the argument with a type error: deep enough for any payload crawlq
/// stores ([`crate::wire::MAX_PAYLOAD_DEPTH`], refused per item past that) with its wrappers,
/// and shallow enough that conversion never exhausts the stack.
pub const MAX_VALUE_DEPTH: usize = 2 * crate::wire::MAX_PAYLOAD_DEPTH;

/// The answers to a call that took one lease or an array of them: the single answer for one
/// lease, an array for an array (the JavaScript bindings' `ack`, `nack`, `extend`, `release`).
///
/// ```
/// use crawlq::style::one_or_many;
/// use serde_json::json;
/// assert_eq!(one_or_many(vec![true], true), json!(true));
/// assert_eq!(one_or_many(vec![true, false], false), json!([true, false]));
/// ```
pub fn one_or_many<T: Into<Value>>(results: Vec<T>, single: bool) -> Value {
    let mut values: Vec<Value> = results.into_iter().map(Into::into).collect();
    if single {
        values.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

/// The name of a field in `style`: `snake_case` as given, or camelCase with `Ms` appended for
/// durations.
///
/// ```
/// use crawlq::{Style, style::field_name};
/// assert_eq!(field_name("oldest_pending_age", true, Style::Camel), "oldestPendingAgeMs");
/// assert_eq!(field_name("expires_at", false, Style::Camel), "expiresAt");
/// assert_eq!(field_name("expires_at", false, Style::Snake), "expires_at");
/// ```
pub fn field_name(snake: &str, is_duration: bool, style: Style) -> String {
    match style {
        Style::Snake => snake.to_string(),
        Style::Camel => {
            let mut out = String::with_capacity(snake.len() + 2);
            let mut upper = false;
            for c in snake.chars() {
                if c == '_' {
                    upper = true;
                } else if upper {
                    out.extend(c.to_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            if is_duration {
                out.push_str("Ms");
            }
            out
        }
    }
}

/// Milliseconds as the style's number: seconds (float) or milliseconds (integer).
pub fn time_value(ms: i64, style: Style) -> Value {
    match style {
        Style::Snake => Number::from_f64(ms as f64 / 1000.0).map_or(Value::Null, Value::Number),
        Style::Camel => Value::from(ms),
    }
}

/// Builds a result object in one style.
struct Out {
    style: Style,
    map: Map<String, Value>,
}

impl Out {
    fn new(style: Style) -> Out {
        Out {
            style,
            map: Map::new(),
        }
    }
    fn value(mut self, name: &str, v: impl Into<Value>) -> Out {
        self.map
            .insert(field_name(name, false, self.style), v.into());
        self
    }
    fn duration(mut self, name: &str, ms: Option<i64>) -> Out {
        let v = ms.map_or(Value::Null, |ms| time_value(ms, self.style));
        self.map.insert(field_name(name, true, self.style), v);
        self
    }
    fn timestamp(mut self, name: &str, ms: Option<i64>) -> Out {
        let v = ms.map_or(Value::Null, |ms| time_value(ms, self.style));
        self.map.insert(field_name(name, false, self.style), v);
        self
    }
    fn done(self) -> Value {
        Value::Object(self.map)
    }
}

/// A lease as a plain object: id, url, host, payload, priority, attempt, token, leased_at,
/// expires_at, enqueued_at, last_error.
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
        .done()
}

/// The lease a caller hands back (any object with `token`, `id`, `host` and `url`, as lease
/// returned it; `url` is null for a host item).
///
/// ```
/// let h = crawlq::style::lease_handle_from_json(&serde_json::json!({"token": 7, "host": "a.com", "id": "3", "url": null})).unwrap();
/// assert_eq!(h.lease_key(), "7:3");
/// assert!(crawlq::style::lease_handle_from_json(&serde_json::json!({"token": "x"})).is_err());
/// assert!(crawlq::style::lease_handle_from_json(&serde_json::json!({"token": 7, "host": "a.com"})).is_err());
/// ```
pub fn lease_handle_from_json(value: &Value) -> Result<LeaseHandle> {
    let bad = || {
        Error::InvalidArgument(
            "expected a lease (an object with token, id, host and url, as lease returned it)"
                .into(),
        )
    };
    let obj = value.as_object().ok_or_else(bad)?;
    let token = obj
        .get("token")
        .and_then(|t| t.as_u64().or_else(|| integral_f64(t)))
        .ok_or_else(bad)?;
    let host = obj.get("host").and_then(Value::as_str).ok_or_else(bad)?;
    let id = obj.get("id").and_then(Value::as_str).ok_or_else(bad)?;
    let optional_text = |name: &str| match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(u)) => Ok(Some(u.clone())),
        Some(_) => Err(bad()),
    };
    Ok(LeaseHandle {
        token,
        host: host.to_string(),
        id: id.to_string(),
        url: optional_text("url")?,
        key: optional_text("key")?,
    })
}

/// A JSON number that is a whole, non-negative float (how JavaScript numbers arrive).
fn integral_f64(v: &Value) -> Option<u64> {
    v.as_f64()
        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9_007_199_254_740_992.0)
        .map(|f| f as u64)
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

fn stats_fields(s: &Stats, style: Style) -> Value {
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

/// The arguments of list_hosts from an options object: `cursor` (a string or null) and
/// `limit` (default 100).
///
/// ```
/// use crawlq::style::host_page_args;
/// let (cursor, limit) = host_page_args(&serde_json::json!({"cursor": "3", "limit": 5})).unwrap();
/// assert_eq!((cursor.as_deref(), limit), (Some("3"), 5));
/// assert!(host_page_args(&serde_json::json!({"cursor": 3})).is_err());
/// ```
pub fn host_page_args(options: &Value) -> Result<(Option<String>, usize)> {
    let mut rest = as_object(options, "options")?.into_owned();
    let cursor = match rest.remove("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c),
        Some(other) => {
            return Err(Error::InvalidArgument(format!(
                "cursor must be a string from a previous page, got {other}"
            )));
        }
    };
    let [limit] = counts_from_json(&Value::Object(rest), &[("limit", 100)])?;
    Ok((cursor, limit))
}

/// The options of delete_host: `forget_seen` (`forgetSeen` in camelCase), default false.
///
/// ```
/// use crawlq::{Style, style::delete_host_options};
/// assert!(delete_host_options(&serde_json::json!({"forgetSeen": true}), Style::Camel).unwrap());
/// assert!(!delete_host_options(&serde_json::Value::Null, Style::Camel).unwrap());
/// assert!(delete_host_options(&serde_json::json!({"forget": true}), Style::Camel).is_err());
/// ```
pub fn delete_host_options(options: &Value, style: Style) -> Result<bool> {
    let name = field_name("forget_seen", false, style);
    let map = as_object(options, "options")?;
    if let Some(unknown) = map.keys().find(|k| **k != name) {
        return Err(Error::InvalidArgument(format!(
            "unknown option {unknown:?}; known: {name}"
        )));
    }
    match map.get(&name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Error::InvalidArgument(format!(
            "{name} must be a boolean, got {other}"
        ))),
    }
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

/// The canonical form of one input: kind (`url` or `host`), canonical, host, fingerprint (32
/// hex digits). Invalid inputs are an [`Error::InvalidItem`] with the reason code.
///
/// ```
/// let v = crawlq::style::normalized_to_json("HTTP://Example.com:80/#x").unwrap();
/// assert_eq!(v["canonical"], "http://example.com/");
/// assert_eq!(crawlq::style::normalized_to_json("ftp://x").unwrap_err().code(), "INVALID_ITEM");
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
/// assert_eq!(crawlq::style::shard_of_input("http://Example.com/a", 1).unwrap(), 0);
/// assert!(crawlq::style::shard_of_input("example.com", 8).unwrap() < 8);
/// assert_eq!(crawlq::style::shard_of_input("example.com", 0).unwrap_err().code(), "INVALID_ARGUMENT");
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

/// Reads the fields of an options object, refusing unknown names.
struct Fields<'a> {
    what: &'static str,
    map: &'a Map<String, Value>,
    style: Style,
    known: Vec<String>,
}

impl<'a> Fields<'a> {
    fn new(what: &'static str, map: &'a Map<String, Value>, style: Style) -> Fields<'a> {
        Fields {
            what,
            map,
            style,
            known: Vec::new(),
        }
    }

    fn get(&mut self, snake: &str, is_duration: bool) -> Option<&'a Value> {
        let name = field_name(snake, is_duration, self.style);
        let v = self.map.get(&name).filter(|v| !v.is_null());
        self.known.push(name);
        v
    }

    fn err(&self, name: &str, expected: &str, got: &Value) -> Error {
        Error::InvalidArgument(format!(
            "{} option {name:?} must be {expected}, got {got}",
            self.what
        ))
    }

    fn duration(&mut self, snake: &str) -> Result<Option<Duration>> {
        let style = self.style;
        match self.get(snake, true) {
            None => Ok(None),
            Some(v) => duration_from_value(v, style)
                .map(Some)
                .ok_or_else(|| self.err(&field_name(snake, true, style), duration_hint(style), v)),
        }
    }

    fn bool(&mut self, snake: &str) -> Result<Option<bool>> {
        match self.get(snake, false) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(&field_name(snake, false, self.style), "true or false", v)),
        }
    }

    fn int(&mut self, snake: &str) -> Result<Option<i64>> {
        match self.get(snake, false) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .map(Some)
                .ok_or_else(|| self.err(&field_name(snake, false, self.style), "an integer", v)),
        }
    }

    fn string(&mut self, snake: &str) -> Result<Option<String>> {
        match self.get(snake, false) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(&field_name(snake, false, self.style), "a string", v)),
        }
    }

    fn raw(&mut self, snake: &str) -> Option<Value> {
        self.get(snake, false).cloned()
    }

    /// Refuse any field that was not asked for.
    fn finish(self) -> Result<()> {
        match self.map.keys().find(|k| !self.known.contains(k)) {
            None => Ok(()),
            Some(k) => Err(Error::InvalidArgument(format!(
                "unknown {} option {k:?}; known: {}",
                self.what,
                self.known.join(", ")
            ))),
        }
    }
}

fn as_object<'a>(value: &'a Value, what: &str) -> Result<std::borrow::Cow<'a, Map<String, Value>>> {
    match value {
        Value::Null => Ok(std::borrow::Cow::Owned(Map::new())),
        Value::Object(m) => Ok(std::borrow::Cow::Borrowed(m)),
        other => Err(Error::InvalidArgument(format!(
            "{what} must be an object, got {other}"
        ))),
    }
}

/// Batch options: priority, delay, payload, force.
///
/// ```
/// use crawlq::{Style, style::seed_options_from_json};
/// let o = seed_options_from_json(&serde_json::json!({"priority": 3, "delayMs": 1500}), Style::Camel).unwrap();
/// assert_eq!((o.priority, o.delay.as_millis()), (3, 1500));
/// assert!(seed_options_from_json(&serde_json::json!({"delay": 1}), Style::Camel).is_err());
/// ```
pub fn seed_options_from_json(value: &Value, style: Style) -> Result<SeedOptions> {
    let map = as_object(value, "seed options")?;
    let mut f = Fields::new("seed", &map, style);
    let opts = SeedOptions {
        priority: f.int("priority")?.unwrap_or(0),
        delay: f.duration("delay")?.unwrap_or_default(),
        payload: f.raw("payload"),
        force: f.bool("force")?.unwrap_or(false),
    };
    f.finish()?;
    Ok(opts)
}

/// The type problem of a seed batch, if any: every item must be a string or an object. A
/// binding reports it as its language's type error (Python `TypeError`, JavaScript
/// `TypeError` with code `ERR_INVALID_ARG_TYPE`); [`seed_items_from_json`] would report it
/// as an argument error.
///
/// ```
/// let bad = serde_json::json!(["http://a.com/", 42]);
/// assert_eq!(crawlq::style::seed_items_type_error(&bad).unwrap(), "items[1] must be a string or an object, got a number");
/// ```
pub fn seed_items_type_error(items: &Value) -> Option<String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match items {
        Value::String(_) => None,
        Value::Array(list) => list
            .iter()
            .position(|v| !(v.is_string() || v.is_object()))
            .map(|i| {
                format!(
                    "items[{i}] must be a string or an object, got {}",
                    kind(&list[i])
                )
            }),
        other => Some(format!(
            "items must be a string or an array of strings and objects, got {}",
            kind(other)
        )),
    }
}

/// The key of the object a binding puts in place of a seed item's field it could not convert
/// to JSON (a NaN or infinite delay, a payload holding an infinite number, an integer past 64
/// bits): [`seed_items_from_json`] refuses that item with the field's reason code, and the rest
/// of the batch is seeded. Only ever built by the bindings, never stored.
pub const UNREADABLE: &str = "$crawlq:unreadable";

/// The fields of a seed item that are refused per item when they cannot be read (see
/// [`UNREADABLE`]), in both styles.
pub const ITEM_FIELDS: [&str; 5] = ["priority", "delay", "delayMs", "payload", "key"];

/// What a binding puts in place of an item's field it could not convert ([`UNREADABLE`]).
///
/// ```
/// let v = crawlq::style::unreadable("NaN is not a number");
/// assert_eq!(v, serde_json::json!({"$crawlq:unreadable": "NaN is not a number"}));
/// ```
pub fn unreadable(why: &str) -> Value {
    let mut map = Map::new();
    map.insert(UNREADABLE.to_string(), Value::String(why.to_string()));
    Value::Object(map)
}

/// Whether a binding's converter, failing on the value at `field` of the object at `parent`,
/// should put [`unreadable`] there instead of failing the call: the object is a seed item
/// (`items[3]`, or `items['3']` as PHP paths spell it) and the field one of [`ITEM_FIELDS`].
///
/// ```
/// use crawlq::style::is_item_field;
/// assert!(is_item_field("items[3]", "payload"));
/// assert!(is_item_field("items['12']", "delay"));
/// assert!(!is_item_field("items[3]", "url"));
/// assert!(!is_item_field("items[3].payload", "delay"));
/// assert!(is_item_field("requests[0]", "user_data"));
/// ```
pub fn is_item_field(parent: &str, field: &str) -> bool {
    let (list, fields): (&str, &[&str]) = if parent.starts_with("requests[") {
        // every field of a crawl request but its URL (`seed_requests`)
        ("requests[", &REQUEST_FIELDS)
    } else {
        ("items[", &ITEM_FIELDS)
    };
    let Some(index) = parent
        .strip_prefix(list)
        .and_then(|rest| rest.strip_suffix(']'))
    else {
        return false;
    };
    let index = index.trim_matches('\'');
    !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) && fields.contains(&field)
}

/// The fields of a crawl request given to `seed_requests` that refuse that request only when
/// they cannot be read, in both styles.
const REQUEST_FIELDS: [&str; 14] = [
    "method",
    "headers",
    "body",
    "user_data",
    "userData",
    "label",
    "depth",
    "retries",
    "found_on",
    "foundOn",
    "frameworks",
    "priority",
    "delay",
    "delayMs",
];

/// The reason of a field a binding could not read, if `value` is its [`unreadable`] marker.
fn unreadable_reason(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(UNREADABLE)?.as_str(),
        _ => None,
    }
}

/// A seed item's priority: an integer (any size: out of range is refused per item by the
/// seed), else the item's refusal.
fn item_priority(value: &Value) -> std::result::Result<i64, InvalidReason> {
    if let Some(why) = unreadable_reason(value) {
        return Err(InvalidReason::InvalidPriority(why.to_string()));
    }
    value
        .as_i64()
        .or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9e18)
                .map(|f| f as i64)
        })
        .ok_or_else(|| InvalidReason::InvalidPriority(value.to_string()))
}

/// A seed item's delay in the style's unit, else the item's refusal.
fn item_delay(value: &Value, style: Style) -> std::result::Result<Duration, InvalidReason> {
    if let Some(why) = unreadable_reason(value) {
        return Err(InvalidReason::InvalidDelay(why.to_string()));
    }
    duration_from_value(value, style).ok_or_else(|| {
        InvalidReason::InvalidDelay(format!("{value} is not {}", duration_hint(style)))
    })
}

/// Items to seed: an array of strings, or of objects with `url` (or `host`) and optional
/// priority, delay, payload, force and key. A priority, delay, payload or key that cannot be
/// read (not a number in range, not JSON, a key that is not a string, or a field the binding
/// marked [`UNREADABLE`]) refuses that item only, with its reason code
/// (`invalid_priority`, `invalid_delay`, `invalid_payload`, `invalid_key`): it is reported in
/// the seed report with its index and the rest are seeded. An item without exactly one of
/// `url` and `host`, an unknown field or a `force` that is not a boolean is an argument error
/// for the call (the caller's code is wrong, not the data).
///
/// ```
/// use crawlq::{Style, style::seed_items_from_json};
/// let items = seed_items_from_json(&serde_json::json!([
///     {"url": "http://a.com/", "delay": -1}, "http://b.com/"]), Style::Snake).unwrap();
/// assert_eq!(items[0].refused.as_ref().unwrap().code(), "invalid_delay");
/// assert!(items[1].refused.is_none());
/// ```
pub fn seed_items_from_json(value: &Value, style: Style) -> Result<Vec<SeedItem>> {
    let items = match value {
        Value::Array(items) => items,
        Value::String(s) => return Ok(vec![SeedItem::from(s.as_str())]),
        other => {
            return Err(Error::InvalidArgument(format!(
                "items must be a list of URLs or hosts, got {other}"
            )));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(s) => Ok(SeedItem::from(s.as_str())),
            Value::Object(map) => {
                let mut f = Fields::new("item", map, style);
                let input = match (f.string("url")?, f.string("host")?) {
                    (Some(u), None) => u,
                    (None, Some(h)) => h,
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "item {index} must have exactly one of \"url\" and \"host\""
                        )));
                    }
                };
                let mut refused = None;
                let mut refuse = |reason: InvalidReason| {
                    refused.get_or_insert(reason);
                };
                let priority = f
                    .raw("priority")
                    .and_then(|v| item_priority(&v).map_err(&mut refuse).ok());
                let delay = f
                    .get("delay", true)
                    .and_then(|v| item_delay(v, style).map_err(&mut refuse).ok());
                let payload = f.raw("payload").and_then(|v| match unreadable_reason(&v) {
                    Some(why) => {
                        refuse(InvalidReason::InvalidPayload(why.to_string()));
                        None
                    }
                    None => Some(v),
                });
                let key = f.raw("key").and_then(|v| match v {
                    Value::String(k) => Some(k),
                    other => {
                        let why = unreadable_reason(&other)
                            .map_or_else(|| format!("{other} is not a string"), str::to_string);
                        refuse(InvalidReason::InvalidKey(why));
                        None
                    }
                });
                let item = SeedItem {
                    input,
                    priority,
                    delay,
                    payload,
                    force: f.bool("force")?,
                    key,
                    refused,
                };
                f.finish()
                    .map_err(|e| Error::InvalidArgument(format!("item {index}: {e}")))?;
                Ok(item)
            }
            other => Err(Error::InvalidArgument(format!(
                "item {index} must be a string or an object, got {other}"
            ))),
        })
        .collect()
}

/// A crawl request as a plain object in the style's names: `url`, `method`, `headers` (a list
/// of `[name, value]`), `body` (bytes), `user_data`/`userData`, `label`, `depth`, `retries`,
/// `found_on`/`foundOn`, `frameworks`.
///
/// ```
/// use crawlq::{CrawlRequest, Style, style::request_to_json};
/// let mut r = CrawlRequest::get("http://a.com/");
/// r.label = Some("home".into());
/// let v = request_to_json(&r, Style::Camel);
/// assert_eq!((v["method"].as_str(), v["label"].as_str(), v["foundOn"].is_null()), (Some("GET"), Some("home"), true));
/// ```
pub fn request_to_json(r: &CrawlRequest, style: Style) -> Value {
    let headers: Vec<Value> = r
        .headers
        .iter()
        .map(|(n, v)| Value::Array(vec![n.clone().into(), v.clone().into()]))
        .collect();
    Out::new(style)
        .value("url", r.url.clone())
        .value("method", r.method.clone())
        .value("headers", Value::Array(headers))
        .value(
            "body",
            r.body
                .as_deref()
                .map_or(Value::Null, crate::wire::bytes_value),
        )
        .value("user_data", Value::Object(r.user_data.clone()))
        .value("label", r.label.clone())
        .value("depth", r.depth)
        .value("retries", r.retries)
        .value("found_on", r.found_on.clone())
        .value("frameworks", Value::Object(r.frameworks.clone()))
        .done()
}

/// The request of an item (a lease's or a dead letter's URL and payload) as a plain object
/// ([`request_to_json`]); a host item, a request of a newer format or a malformed one is an
/// [`Error::Protocol`] naming why (adapters dead-letter the item as `undecodable: ...`).
///
/// ```
/// let v = crawlq::style::request_of_item(Some("http://a.com/"), Some(&serde_json::json!({"k": 1})),
///     crawlq::Style::Snake).unwrap();
/// assert_eq!((v["method"].as_str(), v["user_data"]["k"].as_i64()), (Some("GET"), Some(1)));
/// ```
pub fn request_of_item(url: Option<&str>, payload: Option<&Value>, style: Style) -> Result<Value> {
    CrawlRequest::from_item(url, payload)
        .map(|r| request_to_json(&r, style))
        .map_err(|e| Error::Protocol(e.0))
}

/// The payload that stores a leased crawl request again, changed: the request as the item holds
/// it (its URL and payload, read as [`request_of_item`] does), with `changes` (fields of
/// [`request_to_json`] in the style's names; null: none) applied field by field, and under
/// `frameworks` namespace by namespace (a framework's namespace given replaces that one; the
/// others stay as stored). What adapters store with a retry's nack or a release: the stored
/// JSON is never converted to the language and back, so nothing is lost where a language cannot
/// tell an empty object from an empty list (PHP). The URL is the item's and cannot change.
///
/// ```
/// use crawlq::{style::request_update, Style};
/// use serde_json::json;
/// let stored = json!({"$request": 1, "method": "POST", "frameworks": {"scrapy": {"meta": {}}}});
/// let changes = json!({"retries": 1, "frameworks": {"laravel": {"job": "X"}}});
/// let payload = request_update(Some("http://a.com/"), Some(&stored), &changes, Style::Snake).unwrap();
/// assert_eq!(payload["retries"], 1);
/// assert_eq!(payload["frameworks"]["scrapy"], json!({"meta": {}}));
/// assert_eq!(payload["frameworks"]["laravel"], json!({"job": "X"}));
/// ```
pub fn request_update(
    url: Option<&str>,
    payload: Option<&Value>,
    changes: &Value,
    style: Style,
) -> Result<Value> {
    let Value::Object(mut request) = request_of_item(url, payload, style)? else {
        unreachable!("a request is an object");
    };
    let changes = match changes {
        Value::Null => Map::new(),
        other => crate::request::object_of(other).ok_or_else(|| {
            Error::InvalidArgument(format!("changes must be an object, got {other}"))
        })?,
    };
    for (name, value) in changes {
        match name.as_str() {
            "url" => {
                if value != request["url"] {
                    return Err(Error::InvalidArgument(format!(
                        "a stored request's url is its item's and cannot change (from {} to \
                         {value}): seed a new request",
                        request["url"]
                    )));
                }
            }
            "frameworks" => {
                let given = crate::request::object_of(&value).ok_or_else(|| {
                    Error::InvalidArgument(format!("frameworks must be an object, got {value}"))
                })?;
                if let Some(Value::Object(stored)) = request.get_mut("frameworks") {
                    stored.extend(given);
                }
            }
            _ => {
                request.insert(name, value);
            }
        }
    }
    request_from_json(&Value::Object(request), style).map(|r| r.payload())
}

/// A crawl request from a plain object in the style's names ([`request_to_json`]); unknown
/// fields and fields of the wrong type are [`InvalidReason::InvalidRequest`]. `seeding`: the
/// object may also carry the item's seed options (`priority`, `delay`/`delayMs`, `force`).
fn request_fields(
    map: &Map<String, Value>,
    style: Style,
    seeding: bool,
) -> std::result::Result<(CrawlRequest, SeedItem), InvalidReason> {
    let bad = |m: String| InvalidReason::InvalidRequest(m);
    // a field the binding could not convert (see UNREADABLE)
    if let Some((name, why)) = map
        .iter()
        .find_map(|(name, v)| unreadable_reason(v).map(|why| (name, why)))
    {
        return Err(bad(format!("{name}: {why}")));
    }
    let mut f = Fields::new("request", map, style);
    let url = match f.get("url", false) {
        Some(Value::String(u)) => u.clone(),
        _ => return Err(bad("a request needs its url (a string)".into())),
    };
    let mut r = CrawlRequest::get(url);
    if let Some(v) = f.get("method", false) {
        r.method = v
            .as_str()
            .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
            .ok_or_else(|| bad(format!("method must be a method name, got {v}")))?
            .to_ascii_uppercase();
    }
    if let Some(v) = f.get("headers", false) {
        r.headers = CrawlRequest::headers_from_value(v).ok_or_else(|| {
            bad("headers must be [name, value] pairs (or name: value) of text".into())
        })?;
    }
    if let Some(v) = f.get("body", false) {
        r.body = Some(match v {
            Value::String(text) => text.clone().into_bytes(),
            other => crate::wire::value_bytes(other)
                .ok_or_else(|| bad(format!("body must be bytes or text, got {other}")))?,
        });
    }
    if let Some(v) = f.get("user_data", false) {
        r.user_data = crate::request::object_of(v)
            .ok_or_else(|| bad(format!("user_data must be an object, got {v}")))?;
    }
    if let Some(v) = f.get("label", false) {
        r.label = Some(
            v.as_str()
                .ok_or_else(|| bad(format!("label must be text, got {v}")))?
                .to_string(),
        );
    }
    for (name, slot) in [("depth", &mut r.depth), ("retries", &mut r.retries)] {
        if let Some(v) = f.get(name, false) {
            *slot = v
                .as_u64()
                .ok_or_else(|| bad(format!("{name} must be a count, got {v}")))?;
        }
    }
    if let Some(v) = f.get("found_on", false) {
        r.found_on = Some(
            v.as_str()
                .ok_or_else(|| bad(format!("found_on must be a URL, got {v}")))?
                .to_string(),
        );
    }
    if let Some(v) = f.get("frameworks", false) {
        r.frameworks = crate::request::object_of(v)
            .ok_or_else(|| bad(format!("frameworks must be an object, got {v}")))?;
    }
    let mut item = SeedItem::default();
    if seeding {
        if let Some(v) = f.get("priority", false) {
            item.priority = Some(item_priority(v)?);
        }
        if let Some(v) = f.get("delay", true) {
            item.delay = Some(item_delay(v, style)?);
        }
        if let Some(v) = f.get("force", false) {
            item.force = Some(
                v.as_bool()
                    .ok_or_else(|| bad(format!("force must be true or false, got {v}")))?,
            );
        }
    }
    f.finish().map_err(|e| bad(e.to_string()))?;
    Ok((r, item))
}

/// A crawl request from a plain object ([`request_to_json`]'s fields): what a binding's
/// `request_payload` stores with a nack or release ([`CrawlRequest::payload`]).
///
/// ```
/// let v = serde_json::json!({"url": "http://a.com/", "retries": 2});
/// let r = crawlq::style::request_from_json(&v, crawlq::Style::Snake).unwrap();
/// assert_eq!(r.payload()["retries"], 2);
/// ```
pub fn request_from_json(value: &Value, style: Style) -> Result<CrawlRequest> {
    let map = value.as_object().ok_or_else(|| {
        Error::InvalidArgument(format!("a request must be an object, got {value}"))
    })?;
    request_fields(map, style, false)
        .map(|(r, _)| r)
        .map_err(|reason| Error::InvalidArgument(reason.to_string()))
}

/// The seed items of crawl requests given as plain objects ([`request_to_json`]'s fields,
/// plus each one's own `priority`, `delay`/`delayMs` and `force`), keyed and stored as
/// [`crate::ops::Ops::request_item`] says. A request whose fields cannot be read is refused
/// alone (`invalid_request`, or the code of its priority or delay), with its index.
pub fn request_seed_items(
    value: &Value,
    style: Style,
    ops: &crate::ops::Ops,
) -> Result<Vec<SeedItem>> {
    let list = value.as_array().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "requests must be a list of request objects, got {value}"
        ))
    })?;
    Ok(list
        .iter()
        .map(|entry| {
            let read = match entry {
                Value::Object(map) => request_fields(map, style, true),
                other => Err(InvalidReason::InvalidRequest(format!(
                    "a request must be an object, got {other}"
                ))),
            };
            match read {
                Ok((request, options)) => SeedItem {
                    priority: options.priority,
                    delay: options.delay,
                    force: options.force,
                    ..ops.request_item(&request)
                },
                Err(reason) => SeedItem {
                    input: entry
                        .get("url")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    refused: Some(reason),
                    ..SeedItem::default()
                },
            }
        })
        .collect())
}

/// Lease options: max, wait, ttl.
///
/// ```
/// use crawlq::{Style, style::lease_options_from_json};
/// let o = lease_options_from_json(&serde_json::json!({"max": 10, "wait": 0.5}), Style::Snake).unwrap();
/// assert_eq!((o.max, o.wait.as_millis(), o.ttl), (10, 500, None));
/// ```
pub fn lease_options_from_json(value: &Value, style: Style) -> Result<LeaseOptions> {
    let map = as_object(value, "lease options")?;
    let mut f = Fields::new("lease", &map, style);
    let defaults = LeaseOptions::default();
    let max = match f.int("max")? {
        None => defaults.max,
        Some(m) if m >= 1 => m as usize,
        Some(m) => {
            return Err(Error::InvalidArgument(format!(
                "max must be within 1..=10000, got {m}"
            )));
        }
    };
    let opts = LeaseOptions {
        max,
        wait: f.duration("wait")?.unwrap_or(defaults.wait),
        ttl: f.duration("ttl")?,
    };
    f.finish()?;
    Ok(opts)
}

/// The options of an answer with links that leases the next items
/// ([`crate::Queue::ack_with_links_and_lease`]) in one object: `max`, `wait` and `ttl` (in
/// either style's spelling) are the lease's, as [`lease_options_from_json`] takes them; the
/// others the links', as [`seed_options_from_json`] takes them.
///
/// ```
/// use crawlq::{Style, style::seed_and_lease_options_from_json};
/// let value = serde_json::json!({"priority": 2, "max": 5, "waitMs": 0});
/// let (seed, lease) = seed_and_lease_options_from_json(&value, Style::Camel).unwrap();
/// assert_eq!((seed.priority, lease.max, lease.wait.as_millis()), (2, 5, 0));
/// ```
pub fn seed_and_lease_options_from_json(
    value: &Value,
    style: Style,
) -> Result<(SeedOptions, LeaseOptions)> {
    let map = as_object(value, "options")?;
    let (mut lease, mut seed) = (Map::new(), Map::new());
    for (key, v) in map.iter() {
        let of_lease = key == "max" || key.starts_with("wait") || key.starts_with("ttl");
        if of_lease { &mut lease } else { &mut seed }.insert(key.clone(), v.clone());
    }
    Ok((
        seed_options_from_json(&Value::Object(seed), style)?,
        lease_options_from_json(&Value::Object(lease), style)?,
    ))
}

/// Nack options: retry, delay, reason, rate_limited, retry_after, retry_after_header,
/// payload. `retry_after` is the text of an HTTP `Retry-After` header (seconds or an
/// HTTP-date, [`crate::RetryAfter`]; anything else is refused); in Snake style a number of
/// seconds too, in Camel style `retryAfterMs` a number of ms. `retry_after_header`
/// (`retryAfterHeader`) is the header as a server sent it, for framework adapters: the same
/// text, and one that is neither seconds nor an HTTP-date is ignored (no hold), as a client
/// ignores a malformed header.
///
/// ```
/// use crawlq::{Style, style::nack_options_from_json};
/// use serde_json::json;
/// let o = nack_options_from_json(&json!({"retry": false, "reason": "404"}), Style::Snake).unwrap();
/// assert!(!o.retry);
/// let lenient = nack_options_from_json(&json!({"retryAfterHeader": "soon"}), Style::Camel).unwrap();
/// assert!(lenient.retry_after.is_none());
/// assert!(nack_options_from_json(&json!({"retryAfter": "soon"}), Style::Camel).is_err());
/// ```
pub fn nack_options_from_json(value: &Value, style: Style) -> Result<NackOptions> {
    let map = as_object(value, "nack options")?;
    let mut f = Fields::new("nack", &map, style);
    let defaults = NackOptions::default();
    let mut opts = NackOptions {
        retry: f.bool("retry")?.unwrap_or(defaults.retry),
        delay: f.duration("delay")?,
        reason: f.string("reason")?,
        rate_limited: f.bool("rate_limited")?.unwrap_or(false),
        retry_after: retry_after_field(&mut f, style)?,
        payload: f.raw("payload").filter(|p| !p.is_null()),
    };
    let header = match f.raw("retry_after_header") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(v) => {
            let name = field_name("retry_after_header", false, style);
            return Err(f.err(&name, "the Retry-After header's text or null", &v));
        }
    };
    f.finish()?;
    if let Some(text) = header {
        if opts.retry_after.is_some() {
            return Err(Error::InvalidArgument(format!(
                "give {} or {}, not both",
                field_name("retry_after", false, style),
                field_name("retry_after_header", false, style)
            )));
        }
        opts.retry_after = crate::RetryAfter::parse(&text).ok();
    }
    Ok(opts)
}

/// The `retry_after` of nack options: a header's text in any style, a number of seconds in
/// Snake style, `retryAfterMs` in Camel style.
fn retry_after_field(f: &mut Fields<'_>, style: Style) -> Result<Option<crate::RetryAfter>> {
    let name = field_name("retry_after", false, style);
    let text = match f.raw("retry_after") {
        None => None,
        Some(Value::String(s)) => Some(crate::RetryAfter::parse(&s)?),
        Some(v) if style == Style::Snake => match duration_from_value(&v, style) {
            Some(d) => Some(crate::RetryAfter::Delay(d)),
            None => return Err(f.err(&name, "seconds or an HTTP-date", &v)),
        },
        Some(v) => {
            return Err(f.err(
                &name,
                "the Retry-After text (seconds or an HTTP-date; retryAfterMs for a number)",
                &v,
            ));
        }
    };
    let ms = match style {
        Style::Camel => f.duration("retry_after")?.map(crate::RetryAfter::Delay),
        Style::Snake => None,
    };
    match (text, ms) {
        (Some(_), Some(_)) => Err(Error::InvalidArgument(
            "give retryAfter or retryAfterMs, not both".into(),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// Ack options as the answer they ask for: `revisit_after` (seconds, or `revisitAfterMs`)
/// queues each acked item again that much later ([`Answer::Revisit`]), `revisit_at` (epoch
/// seconds, or `revisitAt` in ms) at that time ([`Answer::RevisitAt`]); without either (or
/// null), a plain [`Answer::Ack`]. Unknown names are refused.
///
/// ```
/// use crawlq::{Answer, Style, style::ack_answer_from_json};
/// let a = ack_answer_from_json(&serde_json::json!({"revisitAfterMs": 5000}), Style::Camel).unwrap();
/// assert_eq!(a, Answer::Revisit(std::time::Duration::from_secs(5)));
/// assert_eq!(ack_answer_from_json(&serde_json::Value::Null, Style::Snake).unwrap(), Answer::Ack);
/// assert!(ack_answer_from_json(&serde_json::json!({"revisit": 1}), Style::Snake).is_err());
/// ```
pub fn ack_answer_from_json(value: &Value, style: Style) -> Result<Answer> {
    let map = as_object(value, "ack options")?;
    let mut f = Fields::new("ack", &map, style);
    let after = f.duration("revisit_after")?;
    let at_name = field_name("revisit_at", false, style);
    let at = match f.get("revisit_at", false) {
        None => None,
        Some(v) => Some(
            crate::config::timestamp_from_value(v, style).ok_or_else(|| {
                f.err(
                    &at_name,
                    "a time since the epoch (seconds in Python and PHP, ms in JavaScript)",
                    v,
                )
            })?,
        ),
    };
    f.finish()?;
    match (after, at) {
        (Some(_), Some(_)) => Err(Error::InvalidArgument(
            "ack options: give a revisit delay or a revisit time, not both".into(),
        )),
        (Some(after), None) => Ok(Answer::Revisit(after)),
        (None, Some(at)) => Ok(Answer::RevisitAt(at)),
        (None, None) => Ok(Answer::Ack),
    }
}

/// Release options (`payload`; null or absent keeps the stored one); unknown names are refused.
///
/// ```
/// use crawlq::{Style, style::release_options_from_json};
/// let o = release_options_from_json(&serde_json::json!({"payload": {"page": 2}}), Style::Camel).unwrap();
/// assert_eq!(o.payload, Some(serde_json::json!({"page": 2})));
/// assert!(release_options_from_json(&serde_json::json!({"retry": true}), Style::Camel).is_err());
/// ```
pub fn release_options_from_json(value: &Value, style: Style) -> Result<ReleaseOptions> {
    let map = as_object(value, "release options")?;
    let mut f = Fields::new("release", &map, style);
    let opts = ReleaseOptions {
        payload: f.raw("payload").filter(|p| !p.is_null()),
    };
    f.finish()?;
    Ok(opts)
}

/// Non-negative integer options with defaults, for calls that take only counts (`dead`'s
/// limit and offset, `reclaim`'s and `peek`'s limit); unknown names are refused.
///
/// ```
/// use crawlq::style::counts_from_json;
/// let [limit, offset] = counts_from_json(&serde_json::json!({"limit": 5}), &[("limit", 100), ("offset", 0)]).unwrap();
/// assert_eq!((limit, offset), (5, 0));
/// assert!(counts_from_json(&serde_json::json!({"limit": -1}), &[("limit", 100)]).is_err());
/// ```
pub fn counts_from_json<const N: usize>(
    value: &Value,
    names: &[(&str, usize); N],
) -> Result<[usize; N]> {
    let map = as_object(value, "options")?;
    if let Some(unknown) = map.keys().find(|k| !names.iter().any(|(n, _)| n == k)) {
        return Err(Error::InvalidArgument(format!(
            "unknown option {unknown:?}; known: {}",
            names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut out = [0usize; N];
    for (slot, (name, default)) in out.iter_mut().zip(names) {
        *slot = match map.get(*name) {
            None | Some(Value::Null) => *default,
            Some(v) => v.as_u64().map(|n| n as usize).ok_or_else(|| {
                Error::InvalidArgument(format!("{name} must be a non-negative integer, got {v}"))
            })?,
        };
    }
    Ok(out)
}

/// The ids of a dead-letter requeue: null (all of them) or an array of strings. `Err` is a type
/// problem, for the binding's type error.
///
/// ```
/// use crawlq::style::ids_from_json;
/// assert_eq!(ids_from_json(&serde_json::json!(["3"])).unwrap(), Some(vec!["3".to_string()]));
/// assert!(ids_from_json(&serde_json::json!([3])).is_err());
/// ```
pub fn ids_from_json(value: &Value) -> std::result::Result<Option<Vec<String>>, String> {
    let bad = || "ids must be an array of strings".to_string();
    match value {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(bad()),
    }
}

/// A duration given as an argument of its own (an extend's ttl, a host delay), in the style's
/// unit; `name` is how the argument is called in that language.
///
/// ```
/// use crawlq::{Style, style::duration_arg};
/// assert_eq!(duration_arg(&serde_json::json!(250), "ttlMs", Style::Camel).unwrap().as_millis(), 250);
/// assert!(duration_arg(&serde_json::json!("NaN"), "ttl", Style::Snake).is_err());
/// ```
pub fn duration_arg(value: &Value, name: &str, style: Style) -> Result<Duration> {
    duration_from_value(value, style).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{name} must be {}, got {value}",
            duration_hint(style)
        ))
    })
}

/// A whole number of items or `null` (a host budget: `null` removes it); anything else is an
/// INVALID_ARGUMENT naming `name`.
///
/// ```
/// use crawlq::style::optional_count_arg;
/// assert_eq!(optional_count_arg(&serde_json::json!(10), "urls").unwrap(), Some(10));
/// assert_eq!(optional_count_arg(&serde_json::Value::Null, "urls").unwrap(), None);
/// assert!(optional_count_arg(&serde_json::json!(-1), "urls").is_err());
/// ```
pub fn optional_count_arg(value: &Value, name: &str) -> Result<Option<u64>> {
    match value {
        Value::Null => Ok(None),
        v => v.as_u64().map(Some).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{name} must be a whole number from 0 or null, got {v}"
            ))
        }),
    }
}

/// [`duration_arg`] where null means "none" (a host delay back to the default).
pub fn optional_duration_arg(value: &Value, name: &str, style: Style) -> Result<Option<Duration>> {
    match value {
        Value::Null => Ok(None),
        v => duration_arg(v, name, style).map(Some),
    }
}

/// A host's pacing from JSON arguments (`setHostDelayAfter(host, after, factor)`): `after`
/// `"lease"`, `"answer"` or null (back to the workers' default), `factor` a number or null.
///
/// ```
/// use crawlq::{DelayAfter, style::pacing_arg};
/// use serde_json::json;
/// let p = pacing_arg(&json!("answer"), &json!(2)).unwrap().unwrap();
/// assert_eq!((p.after, p.factor), (DelayAfter::Answer, Some(2.0)));
/// assert!(pacing_arg(&json!(null), &json!(null)).unwrap().is_none());
/// assert!(pacing_arg(&json!(1), &json!(null)).is_err());
/// assert!(pacing_arg(&json!("answer"), &json!("2")).is_err());
/// ```
pub fn pacing_arg(after: &Value, factor: &Value) -> Result<Option<crate::HostPacing>> {
    let after = match after {
        Value::Null => None,
        Value::String(s) => Some(s.as_str()),
        v => {
            return Err(Error::InvalidArgument(format!(
                "after must be \"lease\", \"answer\" or null, got {v}"
            )));
        }
    };
    let factor = match factor {
        Value::Null => None,
        v => Some(v.as_f64().ok_or_else(|| {
            Error::InvalidArgument(format!("factor must be a number or null, got {v}"))
        })?),
    };
    crate::HostPacing::from_parts(after, factor)
}

/// The known-seen cache's counters ([`crate::Queue::seen_cache_stats`]): entries, hits,
/// misses, resent, resets.
///
/// ```
/// use crawlq::{Style, style::seen_cache_stats_to_json};
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

/// How long `wait_host_turn` waits when the caller gives no timeout.
pub const HOST_TURN_TIMEOUT: Duration = Duration::from_secs(30);

/// `wait_host_turn` options: `lease` (the lease being fetched, or null) and `timeout` /
/// `timeoutMs` (default [`HOST_TURN_TIMEOUT`]).
///
/// ```
/// use crawlq::{Style, style::host_turn_options_from_json};
/// use serde_json::json;
/// let lease = json!({"token": 7, "host": "a.com", "id": "3", "url": "http://a.com/"});
/// let (l, t) = host_turn_options_from_json(&json!({"lease": lease, "timeoutMs": 500}), Style::Camel).unwrap();
/// assert_eq!((l.unwrap().host.as_str(), t.as_millis()), ("a.com", 500));
/// assert!(host_turn_options_from_json(&json!({"lease": 1}), Style::Camel).is_err());
/// assert!(host_turn_options_from_json(&json!({"wait": 1}), Style::Camel).is_err());
/// ```
pub fn host_turn_options_from_json(
    value: &Value,
    style: Style,
) -> Result<(Option<LeaseHandle>, Duration)> {
    let map = as_object(value, "wait_host_turn options")?;
    let timeout_name = field_name("timeout", true, style);
    let mut lease = None;
    let mut timeout = HOST_TURN_TIMEOUT;
    for (name, v) in map.iter() {
        match name.as_str() {
            "lease" => {
                if !v.is_null() {
                    lease = Some(lease_handle_from_json(v)?);
                }
            }
            n if n == timeout_name => {
                if !v.is_null() {
                    timeout = duration_arg(v, &timeout_name, style)?;
                }
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown wait_host_turn option {other:?} (expected lease, {timeout_name})"
                )));
            }
        }
    }
    Ok((lease, timeout))
}

/// `work()` options: the lease options (max, wait, ttl) and `stop_when_empty`.
///
/// ```
/// use crawlq::{Style, style::work_options_from_json};
/// let (opts, stop) = work_options_from_json(&serde_json::json!({"max": 5, "stopWhenEmpty": true}), Style::Camel).unwrap();
/// assert_eq!((opts.max, stop), (5, true));
/// ```
pub fn work_options_from_json(value: &Value, style: Style) -> Result<(LeaseOptions, bool)> {
    let mut map = as_object(value, "work options")?.into_owned();
    let stop_name = field_name("stop_when_empty", false, style);
    let stop_when_empty = match map.remove(&stop_name) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(Error::InvalidArgument(format!(
                "{stop_name} must be true or false, got {other}"
            )));
        }
    };
    let opts = lease_options_from_json(&Value::Object(map), style)?;
    Ok((opts, stop_when_empty))
}

/// Queue options (see [`crate::Config::from_options`]).
pub fn config_from_json(value: &Value, style: Style) -> Result<crate::Config> {
    match value {
        Value::Null => Ok(crate::Config::default()),
        Value::Object(map) => crate::Config::from_options(map, style),
        other => Err(Error::Config(format!(
            "options must be an object, got {other}"
        ))),
    }
}

/// [`crate::Config::framework_options`] of an options value (null: no options), for bindings.
///
/// ```
/// use crawlq::{style::framework_options_json, Style};
/// let options = framework_options_json(&serde_json::Value::Null, Style::Snake).unwrap();
/// assert_eq!(options["extend_every"], 40.0);
/// ```
pub fn framework_options_json(value: &Value, style: Style) -> Result<Value> {
    let empty = serde_json::Map::new();
    let options = match value {
        // PHP's empty array is an empty list once converted: no options
        Value::Null => &empty,
        Value::Array(list) if list.is_empty() => &empty,
        Value::Object(map) => map,
        other => {
            return Err(Error::Config(format!(
                "options must be an object, got {other}"
            )));
        }
    };
    crate::Config::framework_options(options, style).map(Value::Object)
}

/// Why a value a binding was given is not JSON, and where (`payload.tags[2]`), as every binding
/// says it: `bad_value` for a value of a type JSON has that it cannot hold (NaN, an infinity) or
/// nested deeper than [`MAX_VALUE_DEPTH`] (the binding's argument or config error); otherwise a
/// value of a type JSON does not have (a function, an object, a resource: the language's
/// TypeError).
///
/// ```
/// let e = crawlq::style::NotJson::value("payload.n is NaN, which is not JSON".into());
/// assert!(e.bad_value);
/// assert!(!crawlq::style::NotJson::of_type("payload.f is a function".into()).bad_value);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotJson {
    pub message: String,
    pub bad_value: bool,
}

impl NotJson {
    /// A value of a type JSON does not have.
    pub fn of_type(message: String) -> NotJson {
        NotJson {
            message,
            bad_value: false,
        }
    }

    /// A value JSON cannot hold (NaN, an infinity, too deep).
    pub fn value(message: String) -> NotJson {
        NotJson {
            message,
            bad_value: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_accept_strings_and_objects() {
        let items = seed_items_from_json(
            &json!(["http://a.com/", {"host": "b.com", "priority": 2, "delay": 1.5, "payload": {"x": 1}}]),
            Style::Snake,
        )
        .unwrap();
        assert_eq!(items[1].input, "b.com");
        assert_eq!(items[1].delay, Some(Duration::from_millis(1500)));
        for bad in [
            json!([{"url": "a", "host": "b"}]),
            json!([{"url": "a", "prio": 1}]),
            json!([1]),
            json!({"url": "x"}),
        ] {
            assert!(seed_items_from_json(&bad, Style::Snake).is_err(), "{bad}");
        }
    }

    #[test]
    fn results_follow_the_style() {
        let s = Stats {
            now_ms: 5_000,
            oldest_pending_age_ms: Some(1_500),
            ..Stats::default()
        };
        let camel = stats_to_json(&s, Style::Camel);
        assert_eq!(camel["oldestPendingAgeMs"], json!(1500));
        assert_eq!(camel["now"], json!(5000));
        let snake = stats_to_json(&s, Style::Snake);
        assert_eq!(snake["oldest_pending_age"], json!(1.5));
        assert_eq!(snake["hosts_waiting"], json!(0));
    }

    #[test]
    fn unknown_and_mistyped_options_are_refused() {
        assert!(nack_options_from_json(&json!({"rateLimited": true}), Style::Snake).is_err());
        assert!(nack_options_from_json(&json!({"retry": "yes"}), Style::Snake).is_err());
        assert!(lease_options_from_json(&json!({"max": 0}), Style::Camel).is_err());
        assert!(lease_options_from_json(&json!({"waitMs": -1}), Style::Camel).is_err());
        assert!(
            nack_options_from_json(&json!({"rateLimited": true, "delayMs": 10}), Style::Camel)
                .unwrap()
                .rate_limited
        );
    }
}
