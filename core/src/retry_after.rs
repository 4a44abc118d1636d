//! HTTP `Retry-After` values (RFC 9110, section 10.2.3): a number of seconds or an HTTP-date,
//! parsed once here for every binding and adapter.

use crate::error::{Error, Result};
use std::time::Duration;

/// When a host asked to be tried again: the value of an HTTP `Retry-After` header, given to
/// [`crate::NackOptions::retry_after`]. The item and its host are held at least that long.
///
/// ```
/// use crawlq::RetryAfter;
/// use std::time::Duration;
/// assert_eq!(RetryAfter::parse("120").unwrap(), RetryAfter::Delay(Duration::from_secs(120)));
/// assert_eq!(
///     RetryAfter::parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap(),
///     RetryAfter::At(784_111_777_000)
/// );
/// assert!(RetryAfter::parse("soon").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `delay-seconds`: this long after the answer (by the Redis clock).
    Delay(Duration),
    /// An HTTP-date: not before this time (ms since the epoch; the Redis clock decides when
    /// it has come, a time already past holds nothing).
    At(i64),
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl RetryAfter {
    /// Parse a `Retry-After` value: whole seconds (`120`), or an HTTP-date in any of the
    /// three forms a recipient must accept (`Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete
    /// `Sunday, 06-Nov-94 08:49:37 GMT` and `Sun Nov  6 08:49:37 1994`). Surrounding spaces
    /// are ignored; anything else is [`Error::InvalidArgument`].
    pub fn parse(value: &str) -> Result<RetryAfter> {
        let text = value.trim();
        let bad = || {
            Error::InvalidArgument(format!(
                "retry_after must be seconds or an HTTP-date, got {value:?}"
            ))
        };
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            let seconds: u64 = text.parse().map_err(|_| bad())?;
            let delay = Duration::from_secs(seconds);
            if delay > crate::config::MAX_DURATION {
                return Err(Error::InvalidArgument(format!(
                    "retry_after must be at most 100 years, got {seconds} s"
                )));
            }
            return Ok(RetryAfter::Delay(delay));
        }
        http_date_ms(text).map(RetryAfter::At).ok_or_else(bad)
    }

    /// The value as the `nack` script takes it: ms from now, or `@` and a time in ms.
    pub(crate) fn script_arg(&self) -> String {
        match self {
            RetryAfter::Delay(d) => d.as_millis().to_string(),
            RetryAfter::At(ms) => format!("@{}", (*ms).max(0)),
        }
    }
}

/// An HTTP-date as ms since the epoch, or `None`.
fn http_date_ms(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split_ascii_whitespace().collect();
    let (day, month, year, time) = match parts.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [weekday, day, month, year, time, "GMT"]
            if weekday.ends_with(',') && weekday.len() == 4 =>
        {
            (day.parse().ok()?, *month, year.parse().ok()?, *time)
        }
        // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT (a two-digit year within 50 years)
        [weekday, date, time, "GMT"] if weekday.ends_with(',') => {
            let mut fields = date.split('-');
            let (day, month, year) = (fields.next()?, fields.next()?, fields.next()?);
            if fields.next().is_some() || year.len() != 2 {
                return None;
            }
            let yy: i64 = year.parse().ok()?;
            (
                day.parse().ok()?,
                month,
                if yy < 70 { 2000 + yy } else { 1900 + yy },
                *time,
            )
        }
        // asctime-date: Sun Nov  6 08:49:37 1994
        [_weekday, month, day, time, year] => {
            (day.parse().ok()?, *month, year.parse().ok()?, *time)
        }
        _ => return None,
    };
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let mut clock = time.split(':');
    let (h, m, s): (i64, i64, i64) = (
        clock.next()?.parse().ok()?,
        clock.next()?.parse().ok()?,
        clock.next()?.parse().ok()?,
    );
    if clock.next().is_some()
        || !(1..=31).contains(&day)
        || !(1..=9999).contains(&year)
        || h > 23
        || m > 59
        || s > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + h) * 60 + m) * 60_000 + s * 1000)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_date_forms_and_seconds() {
        let at = RetryAfter::At(784_111_777_000);
        assert_eq!(
            RetryAfter::parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap(),
            at
        );
        assert_eq!(
            RetryAfter::parse("Sunday, 06-Nov-94 08:49:37 GMT").unwrap(),
            at
        );
        assert_eq!(RetryAfter::parse("Sun Nov  6 08:49:37 1994").unwrap(), at);
        assert_eq!(
            RetryAfter::parse(" 0 ").unwrap(),
            RetryAfter::Delay(Duration::ZERO)
        );
        assert_eq!(
            RetryAfter::parse("Thu, 01 Jan 1970 00:00:00 GMT").unwrap(),
            RetryAfter::At(0)
        );
        assert_eq!(
            RetryAfter::parse("Sat, 29 Feb 2048 23:59:59 GMT").unwrap(),
            RetryAfter::At(2_466_633_599_000)
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "-1",
            "1.5",
            "soon",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "99999999999999999999",
            "4000000000",
        ] {
            let err = RetryAfter::parse(bad).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad:?}: {err}");
        }
    }
}
