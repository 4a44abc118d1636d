//! Seed items and seed options from JSON: a bad item is refused alone, with its index and why.

use super::*;

/// Batch options: priority, delay, payload, force.
///
/// ```
/// use crawlq::{Style, binding::{json::seed_options_from_json}};
/// let o = seed_options_from_json(&serde_json::json!({"priority": 3, "delayMs": 1500}), Style::Camel).unwrap();
/// assert_eq!((o.priority, o.delay.as_millis()), (3, 1500));
/// assert!(seed_options_from_json(&serde_json::json!({"delay": 1}), Style::Camel).is_err());
/// ```
pub fn seed_options_from_json(value: &Value, style: Style) -> Result<SeedOptions> {
    found_options_from_json(value, style, Found::Links)
}

/// The batch options of crawl requests (`seed_requests`, `ack_with_requests`): priority,
/// delay, force, crawl. Not `payload`: a request's payload is the request itself (its own
/// data goes in its `user_data`), so the option would be ignored; it is refused as unknown.
///
/// ```
/// use crawlq::{Style, binding::{json::request_options_from_json}};
/// let o = request_options_from_json(&serde_json::json!({"priority": 3}), Style::Snake).unwrap();
/// assert_eq!(o.priority, 3);
/// let payload = request_options_from_json(&serde_json::json!({"payload": 1}), Style::Snake);
/// assert!(payload.unwrap_err().to_string().contains(r#"unknown seed option "payload"; known: priority, delay, force, crawl"#));
/// ```
pub fn request_options_from_json(value: &Value, style: Style) -> Result<SeedOptions> {
    found_options_from_json(value, style, Found::Requests)
}

fn found_options_from_json(value: &Value, style: Style, found: Found) -> Result<SeedOptions> {
    let map = as_object(value, "seed options")?;
    let mut f = Fields::new("seed", &map, style);
    let opts = seed_fields(&mut f, found)?;
    f.finish()?;
    Ok(opts)
}

/// What a seed carries, which decides its options: links (URLs or hosts, to which the
/// options may give a payload) or crawl requests (each its own payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// URLs or hosts (`seed`, `ack_with_links`).
    Links,
    /// Crawl requests (`seed_requests`, `ack_with_requests`).
    Requests,
}

/// The seed options among an options object's fields (the caller refuses the unknown ones).
pub(super) fn seed_fields(f: &mut Fields<'_>, found: Found) -> Result<SeedOptions> {
    Ok(SeedOptions {
        priority: f.int("priority")?.unwrap_or(0),
        delay: f.duration("delay")?.unwrap_or_default(),
        payload: match found {
            Found::Links => f.raw("payload"),
            Found::Requests => None,
        },
        force: f.bool("force")?.unwrap_or(false),
        crawl: f.string("crawl")?,
    })
}

/// What kind of JSON value `v` is, for type errors ("got a number").
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How a language names JSON's shapes in a type error: a JavaScript object is a Python dict
/// and a PHP associative array, a JSON array a JavaScript array and a Python or PHP list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeWords {
    /// A record (a JSON object): what a seed item may be besides a string.
    pub record: &'static str,
    /// A JSON array.
    pub list: &'static str,
    /// JSON's null.
    pub null: &'static str,
}

impl TypeWords {
    /// JavaScript's words (JSON's own).
    pub const JS: TypeWords = TypeWords {
        record: "an object",
        list: "an array",
        null: "null",
    };
    /// Python's.
    pub const PYTHON: TypeWords = TypeWords {
        record: "a dict",
        list: "a list",
        null: "None",
    };
    /// PHP's (an object is not taken: arrays and scalars only).
    pub const PHP: TypeWords = TypeWords {
        record: "an associative array",
        list: "a list",
        null: "null",
    };

    /// What kind of value `v` is, in these words ("got a number", "got a list").
    pub fn kind(&self, v: &Value) -> &'static str {
        match v {
            Value::Null => self.null,
            Value::Array(_) => self.list,
            Value::Object(_) => self.record,
            other => json_kind(other),
        }
    }
}

/// The type problem of a seed batch, if any: every item must be a string or a record (a JSON
/// object), named in the caller's language's `words`. A binding reports it as its language's
/// type error (Python `TypeError`, JavaScript `TypeError` with code `ERR_INVALID_ARG_TYPE`,
/// PHP `TypeError`); [`seed_items_from_json`] would report it as an argument error. `name` is
/// the argument's (`items`, or `links` for a page's links).
///
/// ```
/// use crawlq::binding::json::{seed_items_type_error, TypeWords};
/// let bad = serde_json::json!(["http://a.com/", 42, ["http://b.com/"]]);
/// assert_eq!(seed_items_type_error(&bad, "links", TypeWords::JS).unwrap(), "links[1] must be a string or an object, got a number");
/// assert_eq!(seed_items_type_error(&bad, "links", TypeWords::PHP).unwrap(), "links[1] must be a string or an associative array, got a number");
/// let bad = serde_json::json!([{"url": "http://a.com/"}, ["http://b.com/"]]);
/// assert_eq!(seed_items_type_error(&bad, "items", TypeWords::PYTHON).unwrap(), "items[1] must be a string or a dict, got a list");
/// ```
pub fn seed_items_type_error(items: &Value, name: &str, words: TypeWords) -> Option<String> {
    match items {
        Value::String(_) => None,
        Value::Array(list) => list
            .iter()
            .position(|v| !(v.is_string() || v.is_object()))
            .map(|i| {
                format!(
                    "{name}[{i}] must be a string or {}, got {}",
                    words.record,
                    words.kind(&list[i])
                )
            }),
        other => Some(format!(
            "{name} must be a string or {} of strings and {}s, got {}",
            words.list,
            words
                .record
                .trim_start_matches("an ")
                .trim_start_matches("a "),
            words.kind(other)
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
/// let v = crawlq::binding::json::unreadable("NaN is not a number");
/// assert_eq!(v, serde_json::json!({"$crawlq:unreadable": "NaN is not a number"}));
/// ```
pub fn unreadable(why: &str) -> Value {
    let mut map = Map::new();
    map.insert(UNREADABLE.to_string(), Value::String(why.to_string()));
    Value::Object(map)
}

/// Whether a binding's converter, failing on the value at `field` of the object at `parent`,
/// should put [`unreadable`] there instead of failing the call: the object is a seed item
/// (`items[3]`, or `items['3']` as PHP paths spell it; `links[3]`, a page's link, is seeded as
/// one) and the field one of [`ITEM_FIELDS`].
///
/// ```
/// use crawlq::binding::json::is_item_field;
/// assert!(is_item_field("items[3]", "payload"));
/// assert!(is_item_field("items['12']", "delay"));
/// assert!(is_item_field("links[0]", "priority"));
/// assert!(!is_item_field("links[0]", "url"));
/// assert!(!is_item_field("items[3]", "url"));
/// assert!(!is_item_field("items[3].payload", "delay"));
/// assert!(is_item_field("requests[0]", "user_data"));
/// ```
pub fn is_item_field(parent: &str, field: &str) -> bool {
    let (list, fields): (&str, &[&str]) = if parent.starts_with("requests[") {
        // every field of a crawl request but its URL (`seed_requests`)
        ("requests[", &REQUEST_FIELDS)
    } else if parent.starts_with("links[") {
        // a page's links (`ack_with_links`): seed items
        ("links[", &ITEM_FIELDS)
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

/// The reason of a field a binding could not read, if `value` is its [`unreadable`] marker.
pub(super) fn unreadable_reason(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(UNREADABLE)?.as_str(),
        _ => None,
    }
}

/// A seed item's priority: an integer (any size: out of range is refused per item by the
/// seed), else the item's refusal.
pub(super) fn item_priority(value: &Value) -> std::result::Result<i64, InvalidReason> {
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
pub(super) fn item_delay(
    value: &Value,
    style: Style,
) -> std::result::Result<Duration, InvalidReason> {
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
/// use crawlq::{Style, binding::{json::seed_items_from_json}};
/// let items = seed_items_from_json(&serde_json::json!([
///     {"url": "http://a.com/", "delay": -1}, "http://b.com/"]), Style::Snake).unwrap();
/// assert_eq!(items[0].refused.as_ref().unwrap().code(), "invalid_delay");
/// assert!(items[1].refused.is_none());
///
/// // a priority the binding could not read: the reason says why
/// let why = crawlq::binding::json::unreadable("items[0].priority is NaN, which is not JSON");
/// let items = seed_items_from_json(
///     &serde_json::json!([{"url": "http://a.com/", "priority": why}]), Style::Snake).unwrap();
/// assert_eq!(items[0].refused.as_ref().unwrap().to_string(),
///     "priority is not an integer within -32768..=32767: items[0].priority is NaN, which is not JSON");
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
                // the argument errors of a field, said of this item
                let at_item = |e: Error| match e {
                    Error::InvalidArgument(m) => {
                        Error::InvalidArgument(format!("item {index}: {m}"))
                    }
                    other => other,
                };
                let mut f = Fields::new("item", map, style);
                let input = match (
                    f.string("url").map_err(at_item)?,
                    f.string("host").map_err(at_item)?,
                ) {
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
                    force: f.bool("force").map_err(at_item)?,
                    key,
                    refused,
                };
                f.finish().map_err(at_item)?;
                Ok(item)
            }
            other => Err(Error::InvalidArgument(format!(
                "item {index} must be a string or an object, got {other}"
            ))),
        })
        .collect()
}
