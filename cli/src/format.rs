//! Human-readable numbers and durations for tables.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// 1234567 → "1,234,567".
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and its noun: "1 line", "1,200 lines".
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", count(n))
    }
}

/// A duration in the largest units that keep it short: "850ms", "12.5s", "3m 12s", "2h 5m",
/// "3d 4h".
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis() as u64;
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..60 => format!("{:.1}s", ms as f64 / 1000.0),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86400, s % 86400 / 3600),
    }
}

/// How long ago `at_ms` was, seen from `now_ms` (both Redis time): "12.5s ago", or "in 2.0s".
pub fn ago(at_ms: i64, now_ms: i64) -> String {
    if at_ms > now_ms {
        format!(
            "in {}",
            duration(Duration::from_millis((at_ms - now_ms) as u64))
        )
    } else {
        format!(
            "{} ago",
            duration(Duration::from_millis((now_ms - at_ms) as u64))
        )
    }
}

/// Cut `text` to at most `width` characters, marking the cut with "…".
pub fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// A rate per second over `elapsed`, as a rounded count.
pub fn rate(delta: u64, elapsed: Duration) -> String {
    if elapsed.is_zero() {
        return "-".into();
    }
    count((delta as f64 / elapsed.as_secs_f64()).round() as u64)
}

/// A progress bar of `size` steps, or a spinner without a size, with a message; hidden with
/// `quiet`.
pub fn progress_bar(size: Option<u64>, quiet: bool) -> ProgressBar {
    // Drawn on stderr only when it is a terminal: redirected output stays clean.
    let target = if quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr_with_hz(4)
    };
    let bar = ProgressBar::with_draw_target(size, target);
    let template = if size.is_some() {
        "{elapsed_precise} {bar:16} {percent:>3}% eta {eta} {wide_msg}"
    } else {
        "{elapsed_precise} {spinner} {wide_msg}"
    };
    bar.set_style(ProgressStyle::with_template(template).expect("valid progress template"));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_the_count() {
        assert_eq!(plural(1, "line"), "1 line");
        assert_eq!(plural(0, "line"), "0 lines");
        assert_eq!(plural(1200, "line"), "1,200 lines");
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn durations_use_the_largest_fitting_units() {
        assert_eq!(duration(Duration::from_millis(850)), "850ms");
        assert_eq!(duration(Duration::from_millis(12_500)), "12.5s");
        assert_eq!(duration(Duration::from_secs(192)), "3m 12s");
        assert_eq!(duration(Duration::from_secs(7500)), "2h 5m");
        assert_eq!(duration(Duration::from_secs(273_600)), "3d 4h");
    }

    #[test]
    fn ages_are_relative_to_redis_time() {
        assert_eq!(ago(1_000, 13_500), "12.5s ago");
        assert_eq!(ago(3_000, 1_000), "in 2.0s");
    }

    #[test]
    fn clipping_marks_the_cut() {
        assert_eq!(clip("abcdef", 10), "abcdef");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("äöüß", 3), "äö…");
    }

    #[test]
    fn rates_are_per_second() {
        assert_eq!(rate(5000, Duration::from_secs(2)), "2,500");
        assert_eq!(rate(1, Duration::ZERO), "-");
    }
}
