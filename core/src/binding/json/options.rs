//! Call options and arguments from JSON: lease, nack, ack, release, host settings, work loops.

use super::*;

/// The lease a caller hands back (any object with `token`, `id`, `host` and `url`, as lease
/// returned it; `url` is null for a host item).
///
/// ```
/// let h = crawlq::binding::json::lease_handle_from_json(&serde_json::json!({"token": 7, "host": "a.com", "id": "3", "url": null})).unwrap();
/// assert_eq!(h.lease_key(), "7:3");
/// assert!(crawlq::binding::json::lease_handle_from_json(&serde_json::json!({"token": "x"})).is_err());
/// assert!(crawlq::binding::json::lease_handle_from_json(&serde_json::json!({"token": 7, "host": "a.com"})).is_err());
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
        crawl: optional_text("crawl")?,
    })
}

/// A JSON number that is a whole, non-negative float (how JavaScript numbers arrive).
pub(super) fn integral_f64(v: &Value) -> Option<u64> {
    v.as_f64()
        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9_007_199_254_740_992.0)
        .map(|f| f as u64)
}

/// The arguments of list_hosts from an options object: `cursor` (a string or null) and
/// `limit` (default 100).
///
/// ```
/// use crawlq::binding::json::host_page_args;
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
    let [limit] = counts_from_json(
        &Value::Object(rest),
        &[("limit", crate::binding::defaults::HOSTS_PAGE)],
    )?;
    Ok((cursor, limit))
}

/// The options of delete_host: `forget_seen` (`forgetSeen` in camelCase), default false.
///
/// ```
/// use crawlq::{Style, binding::{json::delete_host_options}};
/// assert!(delete_host_options(&serde_json::json!({"forgetSeen": true}), Style::Camel).unwrap());
/// assert!(!delete_host_options(&serde_json::Value::Null, Style::Camel).unwrap());
/// assert!(delete_host_options(&serde_json::json!({"forget": true}), Style::Camel).is_err());
/// ```
pub fn delete_host_options(options: &Value, style: Style) -> Result<bool> {
    only_flag_option(options, "forget_seen", style)
}

/// The options of remove_queue: `even_if_leased` (`evenIfLeased` in camelCase), default false.
///
/// ```
/// use crawlq::{Style, binding::{json::remove_queue_options}};
/// assert!(remove_queue_options(&serde_json::json!({"evenIfLeased": true}), Style::Camel).unwrap());
/// assert!(!remove_queue_options(&serde_json::Value::Null, Style::Camel).unwrap());
/// assert!(remove_queue_options(&serde_json::json!({"force": true}), Style::Camel).is_err());
/// ```
pub fn remove_queue_options(options: &Value, style: Style) -> Result<bool> {
    only_flag_option(options, "even_if_leased", style)
}

/// Options (an object, or null) that hold none but `known` (names a package's own code takes
/// out before the call: nothing here reads them).
///
/// ```
/// use crawlq::binding::json::only_known_options;
/// use serde_json::json;
/// assert!(only_known_options(&json!(null), &["onProgress"]).is_ok());
/// assert!(only_known_options(&json!({}), &["onProgress"]).is_ok());
/// let err = only_known_options(&json!({"onprogress": 1}), &["onProgress"]).unwrap_err();
/// assert!(err.to_string().contains("known: onProgress"));
/// ```
pub fn only_known_options(options: &Value, known: &[&str]) -> Result<()> {
    let map = as_object(options, "options")?;
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(Error::InvalidArgument(format!(
            "unknown option {unknown:?}; known: {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

/// Options that hold one flag (`snake`, spelled in `style`), false when absent; any other name
/// is refused.
fn only_flag_option(options: &Value, snake: &str, style: Style) -> Result<bool> {
    let name = field_name(snake, false, style);
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

/// Lease options: max, wait, ttl.
///
/// ```
/// use crawlq::{Style, binding::{json::lease_options_from_json}};
/// let o = lease_options_from_json(&serde_json::json!({"max": 10, "wait": 0.5}), Style::Snake).unwrap();
/// assert_eq!((o.max, o.wait.as_millis(), o.ttl), (10, 500, None));
/// ```
pub fn lease_options_from_json(value: &Value, style: Style) -> Result<LeaseOptions> {
    let map = as_object(value, "lease options")?;
    let mut f = Fields::new("lease", &map, style);
    let opts = lease_fields(&mut f)?;
    f.finish()?;
    Ok(opts)
}

/// The lease options among an options object's fields (the caller refuses the unknown ones).
fn lease_fields(f: &mut Fields<'_>) -> Result<LeaseOptions> {
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
    Ok(LeaseOptions {
        max,
        wait: f.duration("wait")?.unwrap_or(defaults.wait),
        ttl: f.duration("ttl")?,
    })
}

/// The options of an answer with links that leases the next items
/// ([`crate::Queue::ack_with_links_and_lease`]) in one object: `max`, `wait` and `ttl` (in
/// either style's spelling) are the lease's, as [`lease_options_from_json`] takes them; the
/// others the links', as [`seed_options_from_json`] takes them (`found`: crawl requests take
/// theirs as [`request_options_from_json`] does).
///
/// ```
/// use crawlq::{Style, binding::{json::{Found, seed_and_lease_options_from_json}}};
/// let value = serde_json::json!({"priority": 2, "max": 5, "waitMs": 0});
/// let (seed, lease) = seed_and_lease_options_from_json(&value, Style::Camel, Found::Links).unwrap();
/// assert_eq!((seed.priority, lease.max, lease.wait.as_millis()), (2, 5, 0));
/// let unknown = seed_and_lease_options_from_json(&serde_json::json!({"bogus": 1}), Style::Camel, Found::Links);
/// assert!(unknown.unwrap_err().to_string().ends_with("known: priority, delayMs, payload, force, crawl, max, waitMs, ttlMs"));
/// let payload = seed_and_lease_options_from_json(&serde_json::json!({"payload": 1}), Style::Camel, Found::Requests);
/// assert!(payload.unwrap_err().to_string().ends_with("known: priority, delayMs, force, crawl, max, waitMs, ttlMs"));
/// ```
pub fn seed_and_lease_options_from_json(
    value: &Value,
    style: Style,
    found: Found,
) -> Result<(SeedOptions, LeaseOptions)> {
    let map = as_object(value, "options")?;
    seed_and_lease_fields(&map, style, found, &[])
}

/// Seed and lease options read by one reader, so an unknown name is refused with every name it
/// knows (but `unlisted`).
fn seed_and_lease_fields(
    map: &Map<String, Value>,
    style: Style,
    found: Found,
    unlisted: &[String],
) -> Result<(SeedOptions, LeaseOptions)> {
    let mut f = Fields::new("seed", map, style);
    let seed = seed_fields(&mut f, found)?;
    f.what = "lease";
    let lease = lease_fields(&mut f)?;
    f.what = "seed or lease";
    f.finish_listing_without(unlisted)?;
    Ok((seed, lease))
}

/// [`seed_and_lease_options_from_json`] for a binding whose call takes `max` and `wait` as
/// arguments of their own (PHP's `ackWithLinksAndLease($lease, $links, $max, $wait,
/// $options)`): `options` holds the rest, and either name there is refused as an argument of
/// `call`; an unknown name is refused with the names `options` may hold.
///
/// ```
/// use crawlq::{Style, binding::{json::{Found, seed_and_lease_arguments_from_json}}};
/// use serde_json::json;
/// let (seed, lease) = seed_and_lease_arguments_from_json(&json!({"priority": 2}), 5, json!(0), "f", Style::Snake, Found::Links).unwrap();
/// assert_eq!((seed.priority, lease.max, lease.wait.as_millis()), (2, 5, 0));
/// let given = seed_and_lease_arguments_from_json(&json!({"max": 3}), 5, json!(0), "f", Style::Snake, Found::Links);
/// assert!(given.unwrap_err().to_string().contains("max is an argument of f, not an option"));
/// let unknown = seed_and_lease_arguments_from_json(&json!({"bogus": 1}), 5, json!(0), "f", Style::Snake, Found::Links);
/// assert!(unknown.unwrap_err().to_string().ends_with("known: priority, delay, payload, force, crawl, ttl"));
/// let payload = seed_and_lease_arguments_from_json(&json!({"payload": 1}), 5, json!(0), "f", Style::Snake, Found::Requests);
/// assert!(payload.unwrap_err().to_string().ends_with("known: priority, delay, force, crawl, ttl"));
/// ```
pub fn seed_and_lease_arguments_from_json(
    options: &Value,
    max: i64,
    wait: Value,
    call: &str,
    style: Style,
    found: Found,
) -> Result<(SeedOptions, LeaseOptions)> {
    let mut map = match options {
        Value::Null => Map::new(),
        Value::Object(map) => map.clone(),
        other => {
            return Err(Error::InvalidArgument(format!(
                "options must be a map of option names to values, got {other}"
            )));
        }
    };
    let names = [
        field_name("max", false, style),
        field_name("wait", true, style),
    ];
    for (name, value) in names.iter().zip([Value::from(max), wait]) {
        if map.contains_key(name) {
            return Err(Error::InvalidArgument(format!(
                "options: {name} is an argument of {call}, not an option"
            )));
        }
        map.insert(name.clone(), value);
    }
    seed_and_lease_fields(&map, style, found, &names)
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
/// use crawlq::{Style, binding::{json::nack_options_from_json}};
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
pub(super) fn retry_after_field(
    f: &mut Fields<'_>,
    style: Style,
) -> Result<Option<crate::RetryAfter>> {
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
/// use crawlq::{Answer, Style, binding::{json::ack_answer_from_json}};
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
/// use crawlq::{Style, binding::{json::release_options_from_json}};
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
/// use crawlq::binding::json::counts_from_json;
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
/// use crawlq::binding::json::ids_from_json;
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
/// use crawlq::{Style, binding::{json::duration_arg}};
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
/// use crawlq::binding::json::optional_count_arg;
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

/// An optional number (null or absent: none): a crawl's rate. Its range is checked by the
/// operation.
pub fn optional_number_arg(value: &Value, name: &str) -> Result<Option<f64>> {
    match value {
        Value::Null => Ok(None),
        v => v.as_f64().map(Some).ok_or_else(|| {
            Error::InvalidArgument(format!("{name} must be a number or null, got {v}"))
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
/// use crawlq::{DelayAfter, binding::{json::pacing_arg}};
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

/// How long `wait_host_turn` waits when the caller gives no timeout.
pub const HOST_TURN_TIMEOUT: Duration = Duration::from_secs(30);

/// `wait_host_turn` options: `lease` (the lease being fetched, or null) and `timeout` /
/// `timeoutMs` (default [`HOST_TURN_TIMEOUT`]).
///
/// ```
/// use crawlq::{Style, binding::{json::host_turn_options_from_json}};
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
/// use crawlq::{Style, binding::{json::work_options_from_json}};
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
