//! Conversions between the operations' values and each binding's conventions, so every
//! language parses the same options and returns the same fields, spelled its own way.
//!
//! [`Style::Snake`]: snake_case names, durations and timestamps in seconds (Python, PHP).
//! [`Style::Camel`]: camelCase names, durations (suffix `Ms`) and timestamps in milliseconds
//! (JavaScript). Bindings turn their native values into JSON values, call these, and turn the
//! JSON results back. Results to JSON are in `results`, seed items in `items`, crawl requests
//! in `requests`, call options in `options`; all are re-exported here.

use crate::config::{Style, duration_from_value, duration_hint};
use crate::error::{Error, InvalidReason, Result};
use crate::model::*;
use crate::queue::LeaseOptions;
use crate::request::CrawlRequest;
use crate::wire::StoredItem;
use serde_json::{Map, Number, Value};
use std::time::Duration;

mod items;
mod options;
mod requests;
mod results;
pub use items::*;
pub use options::*;
pub use requests::*;
pub use results::*;

/// Deepest nesting a binding converts from its language's values (lists, dicts, arrays,
/// objects) before refusing the argument with a type error: deep enough for any payload crawlq
/// stores ([`crate::wire::MAX_PAYLOAD_DEPTH`], refused per item past that) with its wrappers,
/// and shallow enough that conversion never exhausts the stack.
pub const MAX_VALUE_DEPTH: usize = 2 * crate::wire::MAX_PAYLOAD_DEPTH;

/// The answers to a call that took one lease or an array of them: the single answer for one
/// lease, an array for an array (the JavaScript bindings' `ack`, `nack`, `extend`, `release`).
///
/// ```
/// use crawlq::binding::json::one_or_many;
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
/// use crawlq::{Style, binding::{json::field_name}};
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
        self.finish_listing_without(&[])
    }

    /// [`Fields::finish`], the refusal listing the known names but `unlisted` (fields a
    /// binding's call takes as arguments of their own).
    fn finish_listing_without(self, unlisted: &[String]) -> Result<()> {
        match self.map.keys().find(|k| !self.known.contains(k)) {
            None => Ok(()),
            Some(k) => {
                let listed: Vec<&str> = self
                    .known
                    .iter()
                    .filter(|name| !unlisted.contains(name))
                    .map(String::as_str)
                    .collect();
                Err(Error::InvalidArgument(format!(
                    "unknown {} option {k:?}; known: {}",
                    self.what,
                    listed.join(", ")
                )))
            }
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
/// use crawlq::{Style, binding::{json::framework_options_json}};
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

/// NaN, an infinity and a negative one as JavaScript writes them ([`NotJson::non_finite`]).
pub const JS_NON_FINITE: [&str; 3] = ["NaN", "Infinity", "-Infinity"];
/// NaN, an infinity and a negative one as PHP writes them ([`NotJson::non_finite`]).
pub const PHP_NON_FINITE: [&str; 3] = ["NAN", "INF", "-INF"];

/// Why a value a binding was given is not JSON, and where (`payload.tags[2]`), as every binding
/// says it: `bad_value` for a value of a type JSON has that it cannot hold (NaN, an infinity) or
/// nested deeper than [`MAX_VALUE_DEPTH`] (the binding's argument or config error); otherwise a
/// value of a type JSON does not have (a function, an object, a resource: the language's
/// TypeError).
///
/// ```
/// let e = crawlq::binding::json::NotJson::value("payload.n is NaN, which is not JSON".into());
/// assert!(e.bad_value);
/// assert!(!crawlq::binding::json::NotJson::of_type("payload.f is a function".into()).bad_value);
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

    /// A number JSON cannot hold, at `path`, named as the caller's language writes it
    /// ([`JS_NON_FINITE`], [`PHP_NON_FINITE`]; Rust would write `inf`), so that every binding of
    /// one language says it alike.
    ///
    /// ```
    /// use crawlq::binding::json::{JS_NON_FINITE, NotJson};
    /// let e = NotJson::non_finite("options.payload", f64::NEG_INFINITY, JS_NON_FINITE);
    /// assert_eq!(e.message, "options.payload is -Infinity, which is not JSON");
    /// assert!(e.bad_value);
    /// ```
    pub fn non_finite(path: impl std::fmt::Display, number: f64, spelling: [&str; 3]) -> NotJson {
        let [nan, infinity, negative] = spelling;
        let spelt = if number.is_nan() {
            nan
        } else if number > 0.0 {
            infinity
        } else {
            negative
        };
        NotJson::value(format!("{path} is {spelt}, which is not JSON"))
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
    fn an_items_argument_error_names_the_item_once() {
        let said = |items: Value| {
            seed_items_from_json(&items, Style::Camel)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            said(json!(["http://a.com/", {"url": 5}])),
            "invalid argument: item 1: item option \"url\" must be a string, got 5"
        );
        assert_eq!(
            said(json!([{"url": "http://a.com/", "force": 1}])),
            "invalid argument: item 0: item option \"force\" must be true or false, got 1"
        );
        assert!(
            said(json!(["x", "y", {"url": "http://a.com/", "bogus": 1}])).starts_with(
                "invalid argument: item 2: unknown item option \"bogus\"; known: url,"
            )
        );
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
