//! The stored item record: a JSON object with a fixed field order, the classic
//! `{"host","ts","attempt"}` crawl-queue item with an id, `attempt` left out while it is 0 and
//! `host` while it is the URL's host.
//!
//! ```text
//! {"v":1,"id":"<id>","ts":<ms>[,"host":"<host>"][,"priority":<p>][,"attempt":<n>]
//!   [,"crawl":"<crawl>","tag":<tag>][,"url":"<url>"][,"key":"<key>"][,"last_error":"<text>"][,"payload":<json>]}
//! ```
//! `host` is omitted when it is [`url_host`] of the URL, `priority` and `attempt` when 0
//! (records of protocol 2 always have `attempt`, those of protocols 2 and 3 always `host`;
//! every shape is read), `url` for host items, `last_error` until an attempt failed,
//! `payload` when null. The fixed order lets the Lua scripts read and rewrite the mutable
//! fields without a JSON library, and makes the stored bytes identical from every language.

use crate::error::{Error, InvalidReason, Result};
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write;

/// Version written in `"v"`. Records with a higher version are refused with
/// [`Error::Protocol`].
pub const FORMAT_VERSION: u64 = 1;

/// Deepest nesting of arrays and objects in a payload (`{"a":[1]}` is 2 deep). Deeper payloads
/// are refused per item (`invalid_payload`) by every writer, so every reader can decode what is
/// stored.
pub const MAX_PAYLOAD_DEPTH: usize = 32;

/// One decoded record.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredItem {
    /// Queue-assigned id (the decimal arrival sequence number).
    pub id: String,
    /// When the item was last queued (seeded, retried, reclaimed or requeued), ms since epoch.
    pub ts: i64,
    /// Host key the item is scheduled under.
    pub host: String,
    pub priority: i16,
    /// Failed deliveries so far.
    pub attempt: u32,
    /// The named crawl the item belongs to (`None`: the default crawl). Written only for a
    /// named crawl, so the default crawl's records are those of protocol 6. Such a record also
    /// has the `tag` the scripts order its crawl lane by (docs/PROTOCOL.md section 3), which a
    /// reader passes over and [`StoredItem::encode`] does not write.
    pub crawl: Option<String>,
    /// `None` for host items.
    pub url: Option<String>,
    /// The caller's de-duplication key, if the item was seeded with one.
    pub key: Option<String>,
    pub last_error: Option<String>,
    pub payload: Option<Value>,
}

impl StoredItem {
    /// The canonical stored bytes of this record.
    ///
    /// ```
    /// let item = crawlq::wire::StoredItem {
    ///     id: "7".into(), ts: 1700000000000, host: "example.com".into(), priority: 0,
    ///     attempt: 0, crawl: None, url: Some("http://example.com/".into()), key: None,
    ///     last_error: None, payload: None,
    /// };
    /// assert_eq!(item.encode(),
    ///     r#"{"v":1,"id":"7","ts":1700000000000,"url":"http://example.com/"}"#);
    /// ```
    pub fn encode(&self) -> String {
        let payload = self.payload.as_ref().and_then(|p| canonical_json(p).ok());
        let mut s = format!(
            r#"{{"v":{FORMAT_VERSION},"id":"{}","ts":{}"#,
            self.id, self.ts
        );
        s.push_str(&record_after_ts(
            &self.host,
            self.priority,
            self.attempt,
            self.crawl.as_deref(),
            self.url.as_deref(),
            self.key.as_deref(),
            self.last_error.as_deref(),
            payload.as_deref(),
        ));
        s
    }
}

/// The host a record without `host` is scheduled under: the text of its URL between `://` and
/// the next `/` or `:` (`None` when there is none). A writer leaves `host` out exactly when it
/// equals this, so a URL with user info or an IPv6 host keeps it.
///
/// ```
/// use crawlq::wire::url_host;
/// assert_eq!(url_host("https://example.com:8080/a"), Some("example.com"));
/// assert_eq!(url_host("http://[::1]/"), Some("["));
/// assert_eq!(url_host("example.com"), None);
/// ```
pub fn url_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let host = &rest[..rest.find(['/', ':']).unwrap_or(rest.len())];
    (!host.is_empty()).then_some(host)
}

/// A record's host: its `host` field, else the host its URL spells.
fn host_or_url_host(host: Option<String>, url: Option<&str>) -> Option<String> {
    host.or_else(|| url.and_then(url_host).map(String::from))
}

/// The record after its `ts`, up to the closing brace: `host` unless the URL spells it
/// ([`url_host`]), `priority` and `attempt` when not 0, the crawl when named, then the optional
/// url, key, last_error and (already canonical) payload. The seed script writes the `v`, `id` and `ts` before it.
///
/// ```
/// let tail = crawlq::wire::record_after_ts("a.com", 2, 0, None, Some("http://a.com/x"), None, None, None);
/// assert_eq!(tail, r#","priority":2,"url":"http://a.com/x"}"#);
/// let tail = crawlq::wire::record_after_ts("a.com", 0, 1, None, Some("http://www.a.com/"), None, None, None);
/// assert_eq!(tail, r#","host":"a.com","attempt":1,"url":"http://www.a.com/"}"#);
/// let tail = crawlq::wire::record_after_ts("a.com", 0, 0, Some("jobs"), Some("http://a.com/"), None, None, None);
/// assert_eq!(tail, r#","crawl":"jobs","url":"http://a.com/"}"#);
/// ```
#[allow(clippy::too_many_arguments)] // one argument per field, in the record's order
pub fn record_after_ts(
    host: &str,
    priority: i16,
    attempt: u32,
    crawl: Option<&str>,
    url: Option<&str>,
    key: Option<&str>,
    last_error: Option<&str>,
    payload_json: Option<&str>,
) -> String {
    let mut s = String::with_capacity(
        url.map_or(0, str::len) + key.map_or(0, str::len) + payload_json.map_or(0, str::len) + 80,
    );
    if url.and_then(url_host) != Some(host) {
        let _ = write!(s, r#","host":"{host}""#);
    }
    if priority != 0 {
        let _ = write!(s, r#","priority":{priority}"#);
    }
    if attempt != 0 {
        let _ = write!(s, r#","attempt":{attempt}"#);
    }
    if let Some(crawl) = crawl {
        // (a crawl name needs no escaping: normalize::check_crawl)
        let _ = write!(s, r#","crawl":"{crawl}""#);
    }
    if let Some(url) = url {
        s.push_str(r#","url":"#);
        s.push_str(&json_string(url));
    }
    if let Some(key) = key {
        s.push_str(r#","key":"#);
        s.push_str(&json_string(key));
    }
    if let Some(e) = last_error {
        s.push_str(r#","last_error":"#);
        s.push_str(&json_string(e));
    }
    if let Some(p) = payload_json {
        s.push_str(r#","payload":"#);
        s.push_str(p);
    }
    s.push('}');
    s
}

/// A JSON string literal, escaped as serde_json does (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`,
/// other control characters as `\u00xx`, everything else as raw UTF-8).
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serializes")
}

#[derive(Deserialize)]
struct RawRecord {
    v: u64,
    id: String,
    ts: i64,
    host: Option<String>,
    #[serde(default)]
    priority: i16,
    #[serde(default)]
    attempt: u32,
    crawl: Option<String>,
    url: Option<String>,
    key: Option<String>,
    last_error: Option<String>,
    payload: Option<Value>,
}

/// Decode stored record bytes.
///
/// ```
/// let item = crawlq::wire::decode_record(br#"{"v":1,"id":"1","ts":5,"host":"a.com","attempt":2}"#).unwrap();
/// assert_eq!((item.attempt, item.url), (2, None));
/// assert_eq!(crawlq::wire::decode_record(br#"{"v":2}"#).unwrap_err().code(), "PROTOCOL");
/// ```
pub fn decode_record(bytes: &[u8]) -> Result<StoredItem> {
    #[derive(Deserialize)]
    struct Version {
        v: Option<u64>,
    }
    let version: Version = serde_json::from_slice(bytes)
        .map_err(|e| Error::Protocol(format!("unreadable record: {e}")))?;
    match version.v {
        Some(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(Error::Protocol(format!(
                "record format {v} is newer than this client's {FORMAT_VERSION}; upgrade crawlq"
            )));
        }
        None => return Err(Error::Protocol("record without a format version".into())),
    }
    let raw: RawRecord = serde_json::from_slice(bytes)
        .map_err(|e| Error::Protocol(format!("unreadable record: {e}")))?;
    debug_assert_eq!(raw.v, FORMAT_VERSION);
    let host = host_or_url_host(raw.host, raw.url.as_deref())
        .ok_or_else(|| Error::Protocol("unreadable record: no host and no URL host".into()))?;
    Ok(StoredItem {
        id: raw.id,
        ts: raw.ts,
        host,
        priority: raw.priority,
        attempt: raw.attempt,
        crawl: raw.crawl,
        url: raw.url,
        key: raw.key,
        last_error: raw.last_error,
        payload: raw.payload.filter(|p| !p.is_null()),
    })
}

/// Whether stored bytes are a record of a format newer than this client's (to be refused with
/// [`Error::Protocol`], never treated as a broken record).
///
/// ```
/// assert!(crawlq::wire::is_newer_format(br#"{"v":2,"id":"1"}"#));
/// assert!(!crawlq::wire::is_newer_format(br#"{"v":1,"id":"1","payload":[[["#));
/// ```
pub fn is_newer_format(bytes: &[u8]) -> bool {
    let Some(rest) = bytes.strip_prefix(br#"{"v":"#) else {
        return false;
    };
    let digits: Vec<u8> = rest
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .is_some_and(|v| v > FORMAT_VERSION)
}

/// What can be read of a record that does not decode (a payload nested too deep for a reader,
/// bytes another program wrote): the fields the scripts read by position, where present, with
/// everything else empty. Used to show such records in dead letters instead of failing.
///
/// ```
/// let item = crawlq::wire::salvage_record(br#"{"v":1,"id":"9","ts":5,"host":"a.com","attempt":2,"url":"http://a.com/","payload":[[["#);
/// assert_eq!((item.id.as_str(), item.attempt, item.url.as_deref()), ("9", 2, Some("http://a.com/")));
/// ```
pub fn salvage_record(bytes: &[u8]) -> StoredItem {
    let text = String::from_utf8_lossy(bytes);
    let string_field = |name: &str| -> Option<String> {
        let start = text.find(&format!("\"{name}\":\""))? + name.len() + 4;
        let mut end = start;
        let raw = text.as_bytes();
        while end < raw.len() && raw[end] != b'"' {
            end += if raw[end] == b'\\' { 2 } else { 1 };
        }
        let literal = text.get(start - 1..(end + 1).min(text.len()))?;
        serde_json::from_str(literal).ok()
    };
    let number_field = |name: &str| -> Option<i64> {
        let start = text.find(&format!("\"{name}\":"))? + name.len() + 3;
        let digits: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    };
    StoredItem {
        id: string_field("id").unwrap_or_default(),
        ts: number_field("ts").unwrap_or(0),
        host: host_or_url_host(string_field("host"), string_field("url").as_deref())
            .unwrap_or_default(),
        priority: number_field("priority")
            .and_then(|p| i16::try_from(p).ok())
            .unwrap_or(0),
        attempt: number_field("attempt")
            .and_then(|a| u32::try_from(a).ok())
            .unwrap_or(0),
        crawl: string_field("crawl"),
        url: string_field("url"),
        key: string_field("key"),
        last_error: string_field("last_error"),
        payload: None,
    }
}

/// The one key of a payload object that stands for a byte string: `{"$bytes": "<base64>"}`
/// (standard alphabet, padded). JSON has no bytes, so every binding writes its language's byte
/// strings (Python `bytes`, a JavaScript `Buffer` or `Uint8Array`, a PHP string that is not
/// UTF-8) this way and reads such an object back as bytes. An object with other keys, or whose
/// value is not canonical base64, is an ordinary object.
pub const BYTES_KEY: &str = "$bytes";

/// The payload value of a byte string.
///
/// ```
/// let v = crawlq::wire::bytes_value(&[0, 255, 10]);
/// assert_eq!(v, serde_json::json!({"$bytes": "AP8K"}));
/// assert_eq!(crawlq::wire::value_bytes(&v), Some(vec![0, 255, 10]));
/// ```
pub fn bytes_value(bytes: &[u8]) -> Value {
    use base64::Engine as _;
    let mut map = serde_json::Map::with_capacity(1);
    map.insert(
        BYTES_KEY.to_owned(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
    );
    Value::Object(map)
}

/// The byte string a payload value stands for: `Some` for `{"$bytes": <canonical base64>}`
/// and nothing else (see [`BYTES_KEY`]).
///
/// ```
/// use serde_json::json;
/// assert_eq!(crawlq::wire::value_bytes(&json!({"$bytes": ""})), Some(vec![]));
/// assert_eq!(crawlq::wire::value_bytes(&json!({"$bytes": "AP8K", "x": 1})), None);
/// assert_eq!(crawlq::wire::value_bytes(&json!({"$bytes": "not base64!"})), None);
/// assert_eq!(crawlq::wire::value_bytes(&json!("AP8K")), None);
/// ```
pub fn value_bytes(value: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let Value::Object(map) = value else {
        return None;
    };
    if map.len() != 1 {
        return None;
    }
    let Value::String(encoded) = map.get(BYTES_KEY)? else {
        return None;
    };
    // STANDARD rejects non-canonical trailing bits and missing padding: one spelling per value.
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
}

/// Whether a value holds a byte string anywhere (see [`value_bytes`]): a binding whose fast
/// path converts plain JSON wholesale takes the slow, value-by-value path only then.
///
/// ```
/// use serde_json::json;
/// assert!(crawlq::wire::has_bytes(&json!({"a": [1, {"$bytes": "AA=="}]})));
/// assert!(!crawlq::wire::has_bytes(&json!({"a": [1, {"$bytes": "?"}]})));
/// ```
pub fn has_bytes(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_bytes),
        Value::Object(map) => value_bytes(value).is_some() || map.values().any(has_bytes),
        _ => false,
    }
}

/// Serialize a payload canonically: object keys sorted by their UTF-8 bytes, no whitespace,
/// floats with an integral value below 2^53 written as integers (so a Python `1.0` and a
/// JavaScript `1` store the same bytes), other floats in shortest round-trip form.
///
/// ```
/// let v = serde_json::json!({"b": 1.0, "a": [true, null, "x"]});
/// assert_eq!(crawlq::wire::canonical_json(&v).unwrap(), r#"{"a":[true,null,"x"],"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> Result<String, InvalidReason> {
    let mut out = String::new();
    write_canonical(value, &mut out, 0)?;
    Ok(out)
}

fn write_canonical(value: &Value, out: &mut String, depth: usize) -> Result<(), InvalidReason> {
    if matches!(value, Value::Array(_) | Value::Object(_)) && depth >= MAX_PAYLOAD_DEPTH {
        return Err(InvalidReason::InvalidPayload(format!(
            "nested deeper than {MAX_PAYLOAD_DEPTH} levels"
        )));
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                let _ = write!(out, "{n}");
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if !f.is_finite() {
                    return Err(InvalidReason::InvalidPayload("non-finite number".into()));
                }
                if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                    let _ = write!(out, "{}", f as i64);
                } else {
                    let _ = write!(out, "{n}");
                }
            }
        }
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                write_canonical(v, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encode_decode_round_trip() {
        let item = StoredItem {
            id: "42".into(),
            ts: 1_700_000_000_123,
            host: "example.com".into(),
            priority: -3,
            attempt: 2,
            crawl: None,
            url: Some("http://example.com/\"q\"".into()),
            key: Some("POST a\\b \"c\"".into()),
            last_error: Some("timeout \"x\"\n".into()),
            payload: Some(json!({"depth": 2, "from": "ü"})),
        };
        let bytes = item.encode();
        assert!(bytes.starts_with(
            r#"{"v":1,"id":"42","ts":1700000000123,"priority":-3,"attempt":2,"url":"#
        ));
        assert_eq!(decode_record(bytes.as_bytes()).unwrap(), item);
    }

    /// A first attempt's record leaves `attempt` out, and a record whose host is its URL's host
    /// leaves `host` out; records of protocol 2 (always `attempt`) and 3 (always `host`) read
    /// the same.
    #[test]
    fn attempt_zero_and_the_urls_host_are_left_out_and_every_shape_is_read() {
        let item = StoredItem {
            id: "7".into(),
            ts: 5,
            host: "a.com".into(),
            priority: 4,
            attempt: 0,
            crawl: None,
            url: Some("http://a.com/".into()),
            key: None,
            last_error: None,
            payload: None,
        };
        let bytes = item.encode();
        assert_eq!(
            bytes,
            r#"{"v":1,"id":"7","ts":5,"priority":4,"url":"http://a.com/"}"#
        );
        assert_eq!(decode_record(bytes.as_bytes()).unwrap(), item);
        assert_eq!(salvage_record(bytes.as_bytes()), item);
        for older in [
            r#"{"v":1,"id":"7","ts":5,"host":"a.com","priority":4,"attempt":0,"url":"http://a.com/"}"#,
            r#"{"v":1,"id":"7","ts":5,"host":"a.com","priority":4,"url":"http://a.com/"}"#,
        ] {
            assert_eq!(decode_record(older.as_bytes()).unwrap(), item);
            assert_eq!(salvage_record(older.as_bytes()), item);
        }
    }

    /// The host stays in a record whenever the URL's text would give another one: a host key
    /// that is the registrable domain, a URL with user info, an IPv6 host, a host item.
    #[test]
    fn a_host_the_url_does_not_spell_is_written() {
        let cases = [
            ("a.com", Some("http://www.a.com/")),
            ("a.com", Some("https://a.com:8443/x")),
            ("a.com", Some("http://u:p@a.com/")),
            ("[::1]", Some("http://[::1]/")),
            ("a.com", None),
        ];
        for (host, url) in cases {
            let item = StoredItem {
                id: "1".into(),
                ts: 5,
                host: host.into(),
                priority: 0,
                attempt: 1,
                crawl: None,
                url: url.map(String::from),
                key: None,
                last_error: None,
                payload: None,
            };
            let bytes = item.encode();
            let written = bytes.contains(&format!(r#""host":"{host}""#));
            // only the port case spells the host the way url_host reads it
            assert_eq!(written, url != Some("https://a.com:8443/x"), "{bytes}");
            assert_eq!(decode_record(bytes.as_bytes()).unwrap(), item, "{bytes}");
        }
        assert_eq!(
            decode_record(br#"{"v":1,"id":"1","ts":5,"url":"ftp:x"}"#)
                .unwrap_err()
                .code(),
            "PROTOCOL"
        );
    }

    #[test]
    fn floats_with_integral_values_are_integers() {
        assert_eq!(canonical_json(&json!(1.0)).unwrap(), "1");
        assert_eq!(canonical_json(&json!(-0.0)).unwrap(), "0");
        assert_eq!(canonical_json(&json!(0.5)).unwrap(), "0.5");
        assert_eq!(canonical_json(&json!(1e300)).unwrap(), "1e+300");
    }

    #[test]
    fn payload_depth_is_bounded() {
        let mut deep = json!(1);
        for _ in 0..MAX_PAYLOAD_DEPTH {
            deep = json!([deep]);
        }
        assert!(canonical_json(&deep).is_ok());
        let too_deep = json!({ "a": deep });
        assert_eq!(
            canonical_json(&too_deep).unwrap_err().code(),
            "invalid_payload"
        );
        // the deepest storable payload still decodes inside a record
        let item = StoredItem {
            id: "1".into(),
            ts: 1,
            host: "a.com".into(),
            priority: 0,
            attempt: 0,
            crawl: None,
            url: None,
            key: None,
            last_error: None,
            payload: Some(deep.clone()),
        };
        assert_eq!(
            decode_record(item.encode().as_bytes()).unwrap().payload,
            Some(deep)
        );
    }

    #[test]
    fn unknown_versions_are_refused() {
        assert!(matches!(
            decode_record(br#"{"v":9,"id":"1"}"#),
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            decode_record(b"not json"),
            Err(Error::Protocol(_))
        ));
    }
}
