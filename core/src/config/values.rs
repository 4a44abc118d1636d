//! Durations, timestamps and numbers read from JSON values in a language style's units.

use super::{MAX_DURATION, Style};
use serde_json::Value;
use std::time::Duration;

/// A non-negative duration in the style's unit (seconds or milliseconds), at most
/// [`MAX_DURATION`]. NaN, infinities, negative numbers and non-numbers give `None`.
///
/// ```
/// use crawlq::config::{duration_from_value, Style};
/// assert_eq!(duration_from_value(&serde_json::json!(1.5), Style::Snake).unwrap().as_millis(), 1500);
/// assert_eq!(duration_from_value(&serde_json::json!(250), Style::Camel).unwrap().as_millis(), 250);
/// assert!(duration_from_value(&serde_json::json!(-1), Style::Snake).is_none());
/// assert!(duration_from_value(&serde_json::json!(1e20), Style::Snake).is_none());
/// ```
pub fn duration_from_value(value: &Value, style: Style) -> Option<Duration> {
    duration_from_number(value.as_f64()?, style)
}

/// [`duration_from_value`] for a number the caller already has (NaN and infinities give
/// `None`).
///
/// ```
/// use crawlq::config::{duration_from_number, Style};
/// assert!(duration_from_number(f64::NAN, Style::Snake).is_none());
/// assert!(duration_from_number(f64::INFINITY, Style::Camel).is_none());
/// assert_eq!(duration_from_number(0.25, Style::Snake).unwrap().as_millis(), 250);
/// ```
pub fn duration_from_number(n: f64, style: Style) -> Option<Duration> {
    let ms = match style {
        Style::Snake => n * 1000.0,
        Style::Camel => n,
    };
    (ms >= 0.0 && ms <= MAX_DURATION.as_millis() as f64)
        .then(|| Duration::from_millis(ms.round() as u64))
}

/// What a duration must look like in `style`, for error messages.
pub fn duration_hint(style: Style) -> &'static str {
    match style {
        Style::Snake => "a non-negative number of seconds (at most 100 years)",
        Style::Camel => "a non-negative number of milliseconds (at most 100 years)",
    }
}

/// The latest time a caller may give (ms since the epoch): what [`timestamp_from_value`]
/// accepts, about the year 33658.
pub const MAX_TIMESTAMP_MS: i64 = 999_999_999_999_999;

/// A timestamp (since the Unix epoch) in the style's unit, as milliseconds.
pub fn timestamp_from_value(value: &Value, style: Style) -> Option<i64> {
    let n = value.as_f64()?;
    let ms = match style {
        Style::Snake => n * 1000.0,
        Style::Camel => n,
    };
    (0.0..=MAX_TIMESTAMP_MS as f64)
        .contains(&ms)
        .then(|| ms.round() as i64)
}

/// A number as a JSON value for the option parsers: finite numbers as they are, NaN and
/// infinities as a string, so they are refused by name ("got \"NaN\"") instead of turning into
/// `null` (which would silently mean "the default").
///
/// ```
/// assert_eq!(crawlq::config::number_value(f64::NAN), serde_json::json!("NaN"));
/// assert_eq!(crawlq::config::number_value(1.5), serde_json::json!(1.5));
/// ```
pub fn number_value(n: f64) -> Value {
    serde_json::Number::from_f64(n).map_or_else(|| Value::String(format!("{n}")), Value::Number)
}
