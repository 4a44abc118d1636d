//! Crawl requests: the one shape every framework adapter (Scrapy, Crawlee for JavaScript and
//! Python, Laravel) stores in an item's payload and reads back, so a request seeded by one
//! framework is fetched by any other (docs/PROTOCOL.md, section 10). The URL is the item's own
//! (its canonical form); the payload holds the rest:
//!
//! ```text
//! {"$request":1,"body":{"$bytes":"..."},"depth":1,"found_on":"https://a.com/",
//!  "frameworks":{"scrapy":{"callback":"parse_item"}},"headers":[["Accept","text/html"]],
//!  "label":"detail","method":"POST","retries":2,"user_data":{"page":3}}
//! ```
//!
//! Every field but the mark is left out at its default (GET, no headers, no body, no user
//! data, no label, depth 0, no retries, no page it was found on, no framework fields). A
//! payload without the mark (an item seeded through the plain API, by a worker or the CLI) reads
//! as a GET of the item's URL whose user data is that payload.
//!
//! ```
//! use crawlq::request::CrawlRequest;
//! let mut request = CrawlRequest::get("https://example.com/search");
//! request.method = "POST".into();
//! request.body = Some(b"q=crawl".to_vec());
//! let payload = request.payload();
//! assert_eq!(payload["method"], "POST");
//! let back = CrawlRequest::from_item(Some("https://example.com/search"), Some(&payload)).unwrap();
//! assert_eq!(back, request);
//! ```

use crate::wire::{bytes_value, value_bytes};
use serde_json::{Map, Value};

/// The payload key that marks a crawl request; its value is the format (1).
pub const REQUEST_MARK: &str = "$request";
/// The request format this build writes and reads.
pub const REQUEST_FORMAT: u64 = 1;

/// A crawl request, as every adapter reads and writes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CrawlRequest {
    /// The URL to fetch (the item's URL).
    pub url: String,
    /// The HTTP method, upper case (`GET` by default).
    pub method: String,
    /// Request headers in order, a name repeated for each of its values.
    pub headers: Vec<(String, String)>,
    /// The request body, as bytes.
    pub body: Option<Vec<u8>>,
    /// Free JSON the crawler carries from the page that found the request to its handler
    /// (Crawlee's `userData`, Scrapy's `meta["user_data"]`).
    pub user_data: Map<String, Value>,
    /// The handler the request is routed to (Crawlee's label, Scrapy's `meta["label"]`).
    pub label: Option<String>,
    /// Links followed from a start URL to reach this request (0 for a start URL).
    pub depth: u64,
    /// Times the crawler retried the request (Crawlee's `retryCount`, Scrapy's
    /// `retry_times`); crawlq's own `attempt` counts deliveries, this what a framework counts.
    pub retries: u64,
    /// The URL of the page the request was found on (its referrer), if known.
    pub found_on: Option<String>,
    /// What only one framework understands, under its name (`scrapy`, `crawlee`, `laravel`):
    /// kept as it is when another framework leases, retries or answers the item.
    pub frameworks: Map<String, Value>,
}

/// Why a payload is not a crawl request this build reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotARequest(pub String);

impl CrawlRequest {
    /// A GET of `url` with nothing else.
    pub fn get(url: impl Into<String>) -> CrawlRequest {
        CrawlRequest {
            url: url.into(),
            method: "GET".to_string(),
            ..CrawlRequest::default()
        }
    }

    /// Whether the request is a plain GET (no body): then its URL is its identity.
    pub fn is_plain_get(&self) -> bool {
        self.method == "GET" && self.body.is_none()
    }

    /// The payload this request is stored as (see the module's documentation).
    pub fn payload(&self) -> Value {
        let mut out = Map::new();
        out.insert(REQUEST_MARK.to_string(), Value::from(REQUEST_FORMAT));
        if self.method != "GET" {
            out.insert("method".into(), Value::String(self.method.clone()));
        }
        if !self.headers.is_empty() {
            let pairs = self
                .headers
                .iter()
                .map(|(name, value)| Value::Array(vec![name.clone().into(), value.clone().into()]))
                .collect();
            out.insert("headers".into(), Value::Array(pairs));
        }
        if let Some(body) = &self.body {
            out.insert("body".into(), bytes_value(body));
        }
        if !self.user_data.is_empty() {
            out.insert("user_data".into(), Value::Object(self.user_data.clone()));
        }
        if let Some(label) = &self.label {
            out.insert("label".into(), Value::String(label.clone()));
        }
        if self.depth > 0 {
            out.insert("depth".into(), Value::from(self.depth));
        }
        if self.retries > 0 {
            out.insert("retries".into(), Value::from(self.retries));
        }
        if let Some(found_on) = &self.found_on {
            out.insert("found_on".into(), Value::String(found_on.clone()));
        }
        if !self.frameworks.is_empty() {
            out.insert("frameworks".into(), Value::Object(self.frameworks.clone()));
        }
        Value::Object(out)
    }

    /// The request of an item: its URL and payload (a lease's or a dead letter's). A payload
    /// without the mark is a GET of the URL whose user data is the payload (an object as it
    /// is, another value under `"payload"`). A host item (no URL), a request of a newer format
    /// or a marked payload whose fields have the wrong types is [`NotARequest`]: adapters
    /// dead-letter such an item (`undecodable: ...`) rather than hand it to their framework.
    pub fn from_item(
        url: Option<&str>,
        payload: Option<&Value>,
    ) -> Result<CrawlRequest, NotARequest> {
        let url = url.ok_or_else(|| {
            NotARequest("a host item has no URL to fetch: it is not a crawl request".into())
        })?;
        let mut request = CrawlRequest::get(url);
        let Some(Value::Object(map)) = payload else {
            if let Some(value) = payload.filter(|v| !v.is_null()) {
                request
                    .user_data
                    .insert("payload".to_string(), value.clone());
            }
            return Ok(request);
        };
        let Some(format) = map.get(REQUEST_MARK) else {
            request.user_data = map.clone();
            return Ok(request);
        };
        match format.as_u64() {
            Some(REQUEST_FORMAT) => {}
            Some(newer) if newer > REQUEST_FORMAT => {
                return Err(NotARequest(format!(
                    "a crawl request of format {newer}, newer than this client's \
                     ({REQUEST_FORMAT}): upgrade it"
                )));
            }
            _ => {
                return Err(NotARequest(format!(
                    "{REQUEST_MARK} is {format}, not a request format"
                )));
            }
        }
        let bad =
            |field: &str, want: &str| NotARequest(format!("the request's {field} is not {want}"));
        for (field, value) in map {
            match field.as_str() {
                REQUEST_MARK => {}
                "method" => {
                    request.method = value
                        .as_str()
                        .filter(|m| !m.is_empty())
                        .ok_or_else(|| bad("method", "a method name"))?
                        .to_ascii_uppercase();
                }
                "headers" => {
                    request.headers = headers_from(value)
                        .ok_or_else(|| bad("headers", "a list of [name, value] pairs of strings"))?
                }
                "body" => {
                    request.body = Some(match value {
                        Value::String(text) => text.clone().into_bytes(),
                        other => value_bytes(other).ok_or_else(|| bad("body", "bytes"))?,
                    })
                }
                "user_data" => {
                    request.user_data =
                        object_of(value).ok_or_else(|| bad("user_data", "an object"))?
                }
                "label" => {
                    request.label = Some(
                        value
                            .as_str()
                            .ok_or_else(|| bad("label", "a string"))?
                            .to_string(),
                    )
                }
                "depth" => request.depth = value.as_u64().ok_or_else(|| bad("depth", "a count"))?,
                "retries" => {
                    request.retries = value.as_u64().ok_or_else(|| bad("retries", "a count"))?
                }
                "found_on" => {
                    request.found_on = Some(
                        value
                            .as_str()
                            .ok_or_else(|| bad("found_on", "a URL"))?
                            .to_string(),
                    )
                }
                "frameworks" => {
                    request.frameworks =
                        object_of(value).ok_or_else(|| bad("frameworks", "an object"))?
                }
                // a field of a later minor revision: kept out of the way, never an error
                _ => {}
            }
        }
        Ok(request)
    }

    /// This request's identity when it is not its URL: a GET without a body is known by its
    /// canonical URL (`None`); any other request by a key of its method, canonical URL and
    /// body, `request:` and 32 hex digits of the XXH3-128 of `<METHOD>\n<canonical URL>\n`
    /// followed by the body's bytes. Every adapter keys requests this way, whatever its
    /// framework's own key says, so two frameworks agree on what one request is.
    ///
    /// ```
    /// use crawlq::request::CrawlRequest;
    /// assert_eq!(CrawlRequest::get("http://a.com/").identity_key("http://a.com/"), None);
    /// let mut post = CrawlRequest::get("http://a.com/");
    /// post.method = "POST".into();
    /// assert!(post.identity_key("http://a.com/").unwrap().starts_with("request:"));
    /// ```
    pub fn identity_key(&self, canonical_url: &str) -> Option<String> {
        if self.is_plain_get() {
            return None;
        }
        let mut bytes = Vec::with_capacity(self.method.len() + canonical_url.len() + 2);
        bytes.extend_from_slice(self.method.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(canonical_url.as_bytes());
        bytes.push(b'\n');
        if let Some(body) = &self.body {
            bytes.extend_from_slice(body);
        }
        let hash = xxhash_rust::xxh3::xxh3_128(&bytes);
        Some(format!("request:{hash:032x}"))
    }
}

/// The object a field that holds one (`user_data`, `frameworks`) is: an object as it is, and an
/// empty list as an empty object, since PHP has one value for both (`[]`).
///
/// ```
/// use serde_json::json;
/// assert_eq!(crawlq::request::object_of(&json!([])), Some(Default::default()));
/// assert_eq!(crawlq::request::object_of(&json!([1])), None);
/// ```
pub fn object_of(value: &Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map.clone()),
        Value::Array(list) if list.is_empty() => Some(Map::new()),
        _ => None,
    }
}

/// Headers as a list of `[name, value]` pairs of strings, or an object of name -> value (or
/// list of values), in order.
fn headers_from(value: &Value) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    match value {
        Value::Array(pairs) => {
            for pair in pairs {
                let [name, value] = pair.as_array()?.as_slice() else {
                    return None;
                };
                out.push((name.as_str()?.to_string(), value.as_str()?.to_string()));
            }
        }
        Value::Object(map) => {
            for (name, value) in map {
                match value {
                    Value::String(v) => out.push((name.clone(), v.clone())),
                    Value::Array(values) => {
                        for v in values {
                            out.push((name.clone(), v.as_str()?.to_string()));
                        }
                    }
                    _ => return None,
                }
            }
        }
        _ => return None,
    }
    Some(out)
}

impl CrawlRequest {
    /// Headers from a value as [`CrawlRequest::payload`] writes them, or an object of name ->
    /// value (or list of values); `None` when it is neither.
    pub fn headers_from_value(value: &Value) -> Option<Vec<(String, String)>> {
        headers_from(value)
    }
}
