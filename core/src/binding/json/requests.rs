//! Crawl requests to and from JSON, and the seed items they become.

use super::*;

/// The fields of a crawl request given to `seed_requests` that refuse that request only when
/// they cannot be read, in both styles.
pub(super) const REQUEST_FIELDS: [&str; 14] = [
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

/// A crawl request as a plain object in the style's names: `url`, `method`, `headers` (a list
/// of `[name, value]`), `body` (bytes), `user_data`/`userData`, `label`, `depth`, `retries`,
/// `found_on`/`foundOn`, `frameworks`.
///
/// ```
/// use crawlq::{CrawlRequest, Style, binding::{json::request_to_json}};
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
/// let v = crawlq::binding::json::request_of_item(Some("http://a.com/"), Some(&serde_json::json!({"k": 1})),
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
/// use crawlq::{Style, binding::{json::request_update}};
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
pub(super) fn request_fields(
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
/// let r = crawlq::binding::json::request_from_json(&v, crawlq::Style::Snake).unwrap();
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
    page_request_seed_items(value, style, ops, None)
}

/// [`request_seed_items`] for the requests found on the page at `page_url` (the answered
/// lease's URL; `None` for a host item): each request's URL is resolved against it first
/// ([`crate::normalize::resolve`]), as a page's links are, so that its key and its stored
/// request hold the absolute URL.
pub fn page_request_seed_items(
    value: &Value,
    style: Style,
    ops: &crate::ops::Ops,
    page_url: Option<&str>,
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
                Ok((mut request, options)) => {
                    if let Some(url) =
                        page_url.and_then(|page| crate::normalize::resolve(page, &request.url))
                    {
                        request.url = url;
                    }
                    SeedItem {
                        priority: options.priority,
                        delay: options.delay,
                        force: options.force,
                        ..ops.request_item(&request)
                    }
                }
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
