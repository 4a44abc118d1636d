//! The queues `import-list` can move into crawlq, and how their items become seed items:
//! classic Redis lists, scrapy-redis request queues, Laravel's Redis queue and BullMQ.
//!
//! Only the parsing lives here (pure functions, unit-tested); `import.rs` moves the items.

use crate::import::classic_item;
use base64::Engine;
use crawlq::SeedItem;
use serde_json::{Map, Value};

/// Which kind of queue KEY is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A list of JSON items (`{"url"|"host", "priority", ...}`) or bare URLs and hosts, LPUSHed
    /// by producers; KEY:processing holds the items workers took.
    Classic,
    /// A scrapy-redis request queue (`<spider>:requests`): a zset (PriorityQueue) or a list
    /// (FifoQueue, LifoQueue) of request dicts, pickled (the default serializer) or JSON.
    ScrapyRedis,
    /// Laravel's Redis queue (`queues:<name>`): job payloads in KEY, KEY:delayed and
    /// KEY:reserved; the URL is the job's --url-field property.
    Laravel,
    /// A BullMQ queue (KEY is its prefix and name, e.g. `bull:crawl`): the job ids waiting in
    /// KEY:wait, KEY:paused and KEY:prioritized, each job's data in the hash KEY:<id>.
    Bullmq,
}

/// How items leave a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A list whose oldest item is at this end (`RIGHT` or `LEFT`).
    List(&'static str),
    /// A sorted set, taken lowest score first.
    Zset,
    /// A list or a sorted set, whichever the key holds.
    ListOrZset,
}

/// One key to import from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub key: String,
    pub shape: Shape,
}

/// The keys a format imports from, in order.
pub fn sources(format: Format, key: &str, processing: Option<&str>) -> Vec<Source> {
    let source = |key: String, shape| Source { key, shape };
    match format {
        Format::Classic => vec![
            source(key.to_string(), Shape::List("RIGHT")),
            source(
                processing.map_or_else(|| format!("{key}:processing"), str::to_string),
                Shape::List("RIGHT"),
            ),
        ],
        Format::ScrapyRedis => vec![source(key.to_string(), Shape::ListOrZset)],
        // Laravel RPUSHes and pops from the left
        Format::Laravel => vec![
            source(key.to_string(), Shape::List("LEFT")),
            source(format!("{key}:delayed"), Shape::Zset),
            source(format!("{key}:reserved"), Shape::Zset),
        ],
        // BullMQ LPUSHes job ids and takes them from the right
        Format::Bullmq => vec![
            source(format!("{key}:wait"), Shape::List("RIGHT")),
            source(format!("{key}:paused"), Shape::List("RIGHT")),
            source(format!("{key}:prioritized"), Shape::Zset),
        ],
    }
}

/// A stored item of the format as a seed item (for BullMQ: the job's `data` field).
pub fn item(format: Format, raw: &[u8], url_field: &str) -> Result<SeedItem, String> {
    match format {
        Format::Classic => classic_item(raw),
        Format::ScrapyRedis => scrapy_request(raw),
        Format::Laravel => laravel_job(raw, url_field),
        Format::Bullmq => bullmq_data(raw, url_field),
    }
}

/// A scrapy-redis request: `url` and `priority` become the item's, the rest of the request
/// dict (method, headers, body, meta, callback, ...) the payload under `"scrapy"`, bytes as
/// `{"$bytes": "<base64>"}` so no byte is lost.
fn scrapy_request(raw: &[u8]) -> Result<SeedItem, String> {
    let request = if raw.first() == Some(&0x80) {
        let value = serde_pickle::value_from_slice(raw, serde_pickle::DeOptions::new())
            .map_err(|e| format!("not a pickled request dict: {e}"))?;
        pickle_to_json(value)
    } else {
        serde_json::from_slice(raw).map_err(|e| format!("not a JSON request dict: {e}"))?
    };
    let Value::Object(mut request) = request else {
        return Err("a scrapy-redis request is a dict".into());
    };
    let Some(Value::String(url)) = request.remove("url") else {
        return Err("the request dict has no \"url\" string".into());
    };
    let mut item = SeedItem::from(url);
    match request.remove("priority") {
        None | Some(Value::Null) => {}
        Some(p) => item.priority = Some(p.as_i64().ok_or("\"priority\" is not an integer")?),
    }
    item.payload = Some(Value::Object(Map::from_iter([(
        "scrapy".to_string(),
        Value::Object(request),
    )])));
    Ok(item)
}

/// A pickled value as JSON: dict keys as strings (bytes keys decoded as UTF-8, lossy), bytes
/// values as `{"$bytes": base64}`, tuples and sets as arrays.
fn pickle_to_json(value: serde_pickle::Value) -> Value {
    use serde_pickle::{HashableValue as H, Value as P};
    fn key(k: H) -> String {
        match k {
            H::String(s) => s,
            H::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
            H::I64(i) => i.to_string(),
            H::Int(i) => i.to_string(),
            H::F64(f) => f.to_string(),
            H::Bool(b) => b.to_string(),
            H::None => "None".into(),
            H::Tuple(t) => format!("{t:?}"),
            H::FrozenSet(t) => format!("{t:?}"),
        }
    }
    match value {
        P::None => Value::Null,
        P::Bool(b) => Value::Bool(b),
        P::I64(i) => Value::from(i),
        P::Int(i) => Value::String(i.to_string()),
        P::F64(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        P::Bytes(b) => Value::Object(Map::from_iter([(
            "$bytes".to_string(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        )])),
        P::String(s) => Value::String(s),
        P::List(items) | P::Tuple(items) => {
            Value::Array(items.into_iter().map(pickle_to_json).collect())
        }
        P::Set(items) | P::FrozenSet(items) => Value::Array(
            items
                .into_iter()
                .map(|h| pickle_to_json(h.into_value()))
                .collect(),
        ),
        P::Dict(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (key(k), pickle_to_json(v)))
                .collect(),
        ),
    }
}

/// A Laravel job payload: the URL is `data.<field>` (jobs pushed raw) or the `<field>`
/// property of the serialized job object (`data.command`, public, protected or private); the
/// payload keeps the job under `"laravel"` (display name, job handler, data) so a Laravel
/// worker can rebuild it.
fn laravel_job(raw: &[u8], url_field: &str) -> Result<SeedItem, String> {
    let job: Map<String, Value> =
        serde_json::from_slice(raw).map_err(|e| format!("not a Laravel job payload: {e}"))?;
    let data = job.get("data").ok_or("the job payload has no \"data\"")?;
    let url = match data.get(url_field) {
        Some(Value::String(url)) => url.clone(),
        _ => data
            .get("command")
            .and_then(Value::as_str)
            .and_then(|command| php_string_property(command, url_field))
            .ok_or_else(|| {
                format!(
                    "no \"{url_field}\" in the job's data or its serialized command (--url-field)"
                )
            })?,
    };
    let mut kept = Map::new();
    for field in [
        "uuid",
        "displayName",
        "job",
        "data",
        "maxTries",
        "timeout",
        "tags",
    ] {
        if let Some(v) = job.get(field) {
            kept.insert(field.to_string(), v.clone());
        }
    }
    let mut item = SeedItem::from(url);
    item.payload = Some(Value::Object(Map::from_iter([(
        "laravel".to_string(),
        Value::Object(kept),
    )])));
    Ok(item)
}

/// The value of the string property `name` in a PHP-serialized object: `s:<n>:"<name>";` (or
/// the `\0*\0<name>` / `\0Class\0<name>` of protected and private ones) followed by
/// `s:<m>:"<value>";`, lengths in bytes.
fn php_string_property(serialized: &str, name: &str) -> Option<String> {
    let bytes = serialized.as_bytes();
    let mut at = 0;
    while let Some(found) = serialized[at..].find("s:") {
        let start = at + found;
        at = start + 2;
        let (key, after_key) = php_string(bytes, start)?;
        let bare = key.rsplit('\0').next().unwrap_or(&key);
        if bare == name
            && bytes.get(after_key) == Some(&b';')
            && let Some((value, _)) = php_string(bytes, after_key + 1)
        {
            return Some(value);
        }
    }
    None
}

/// A PHP-serialized string `s:<len>:"<bytes>"` at `at`: its text and the index after it.
fn php_string(bytes: &[u8], at: usize) -> Option<(String, usize)> {
    let rest = bytes.get(at..)?.strip_prefix(b"s:")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let open = at + 2 + digits;
    if bytes.get(open..open + 2)? != b":\"" {
        return None;
    }
    let body = bytes.get(open + 2..open + 2 + len)?;
    if bytes.get(open + 2 + len) != Some(&b'"') {
        return None;
    }
    Some((String::from_utf8_lossy(body).into_owned(), open + 3 + len))
}

/// A BullMQ job's `data` (JSON): the URL is its `<field>`, the rest the payload under
/// `"bullmq"` with the job's name.
fn bullmq_data(raw: &[u8], url_field: &str) -> Result<SeedItem, String> {
    let (name, data) = split_job(raw)?;
    let Value::Object(mut data) =
        serde_json::from_slice(data).map_err(|e| format!("the job's data is not JSON: {e}"))?
    else {
        return Err("the job's data is not a JSON object".into());
    };
    let Some(Value::String(url)) = data.remove(url_field) else {
        return Err(format!(
            "the job's data has no \"{url_field}\" string (--url-field)"
        ));
    };
    let mut item = SeedItem::from(url);
    item.payload = Some(Value::Object(Map::from_iter([(
        "bullmq".to_string(),
        serde_json::json!({"name": name, "data": data}),
    )])));
    Ok(item)
}

/// A BullMQ job as `import.rs` hands it over: `<name>\n<data>` (HMGET of the job hash).
fn split_job(raw: &[u8]) -> Result<(String, &[u8]), String> {
    let newline = raw
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("the job hash is gone")?;
    Ok((
        String::from_utf8_lossy(&raw[..newline]).into_owned(),
        &raw[newline + 1..],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `pickle.dumps({"url": "https://example.com/a", "priority": 3, "method": "POST",
    /// "body": b"q=1", "headers": {b"Accept": [b"text/html"]}, "meta": {"depth": 2},
    /// "callback": "parse_item", "dont_filter": False}, protocol=4).hex()` from Python 3.11, as
    /// scrapy-redis' default serializer stores a request (request_to_dict's shape).
    const PICKLED_REQUEST: &str = concat!(
        "800495ad000000000000007d94288c0375726c948c1568747470733a2f2f6578616d706c652e636f6d2f61948c087072",
        "696f72697479944b038c066d6574686f64948c04504f5354948c04626f6479944303713d31948c076865616465727394",
        "7d944306416363657074945d944309746578742f68746d6c9461738c046d657461947d948c056465707468944b02738c",
        "0863616c6c6261636b948c0a70617273655f6974656d948c0b646f6e745f66696c7465729489752e",
    );

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn a_pickled_scrapy_request_keeps_every_field_and_its_bytes() {
        let item = item(Format::ScrapyRedis, &hex(PICKLED_REQUEST), "url").unwrap();
        assert_eq!(item.input, "https://example.com/a");
        assert_eq!(item.priority, Some(3));
        let scrapy = &item.payload.as_ref().unwrap()["scrapy"];
        assert_eq!(scrapy["method"], "POST");
        assert_eq!(scrapy["body"], json!({"$bytes": "cT0x"}));
        assert_eq!(
            scrapy["headers"]["Accept"],
            json!([{"$bytes": "dGV4dC9odG1s"}])
        );
        assert_eq!(scrapy["meta"], json!({"depth": 2}));
        assert_eq!(scrapy["callback"], "parse_item");
        assert!(scrapy.get("url").is_none() && scrapy.get("priority").is_none());
    }

    #[test]
    fn a_json_scrapy_request_is_read_too_and_junk_is_refused() {
        let item = item(
            Format::ScrapyRedis,
            br#"{"url":"https://e.org/","priority":-1,"meta":{}}"#,
            "url",
        )
        .unwrap();
        assert_eq!(
            (item.input.as_str(), item.priority),
            ("https://e.org/", Some(-1))
        );
        assert!(
            super::item(Format::ScrapyRedis, b"\x80\x04junk", "url")
                .unwrap_err()
                .contains("pickled")
        );
        assert!(
            super::item(Format::ScrapyRedis, br#"{"method":"GET"}"#, "url")
                .unwrap_err()
                .contains("url")
        );
    }

    #[test]
    fn a_laravel_job_gives_its_url_from_the_serialized_command_or_raw_data() {
        let command = "O:18:\"App\\Jobs\\CrawlPage\":2:{s:6:\"\0*\0url\";s:21:\"https://example.com/l\";s:5:\"depth\";i:1;}";
        let payload = json!({
            "uuid": "u-1",
            "displayName": "App\\Jobs\\CrawlPage",
            "job": "Illuminate\\Queue\\CallQueuedHandler@call",
            "data": {"commandName": "App\\Jobs\\CrawlPage", "command": command},
            "attempts": 0
        })
        .to_string();
        let item = item(Format::Laravel, payload.as_bytes(), "url").unwrap();
        assert_eq!(item.input, "https://example.com/l");
        let laravel = &item.payload.as_ref().unwrap()["laravel"];
        assert_eq!(laravel["displayName"], "App\\Jobs\\CrawlPage");
        assert!(
            laravel["data"]["command"]
                .as_str()
                .unwrap()
                .contains("CrawlPage")
        );

        let raw = br#"{"job":"crawl","data":{"url":"https://example.com/raw"}}"#;
        assert_eq!(
            super::item(Format::Laravel, raw, "url").unwrap().input,
            "https://example.com/raw"
        );
        let err = super::item(Format::Laravel, raw, "link").unwrap_err();
        assert!(
            err.contains("\"link\"") && err.contains("--url-field"),
            "{err}"
        );
    }

    #[test]
    fn php_string_properties_are_found_by_byte_length() {
        let s = "O:1:\"A\":2:{s:4:\"\0*\0u\";s:3:\"x\"y\";s:3:\"url\";s:6:\"h\u{e9}llo\";}";
        assert_eq!(php_string_property(s, "url").as_deref(), Some("h\u{e9}llo"));
        assert_eq!(php_string_property(s, "u").as_deref(), Some("x\"y"));
        assert_eq!(php_string_property(s, "none"), None);
        assert_eq!(php_string_property("s:99:\"short\"", "short"), None);
    }

    #[test]
    fn a_bullmq_job_gives_its_url_and_keeps_name_and_data() {
        let item = item(
            Format::Bullmq,
            b"crawl\n{\"url\":\"https://b.example/\",\"depth\":1}",
            "url",
        )
        .unwrap();
        assert_eq!(item.input, "https://b.example/");
        assert_eq!(
            item.payload.unwrap(),
            json!({"bullmq": {"name": "crawl", "data": {"depth": 1}}})
        );
        assert!(
            super::item(Format::Bullmq, b"no newline", "url")
                .unwrap_err()
                .contains("gone")
        );
    }

    #[test]
    fn each_format_names_its_sources_in_order() {
        let keys = |f| {
            sources(f, "K", None)
                .into_iter()
                .map(|s| s.key)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(Format::Classic), ["K", "K:processing"]);
        assert_eq!(keys(Format::ScrapyRedis), ["K"]);
        assert_eq!(keys(Format::Laravel), ["K", "K:delayed", "K:reserved"]);
        assert_eq!(
            keys(Format::Bullmq),
            ["K:wait", "K:paused", "K:prioritized"]
        );
    }
}
