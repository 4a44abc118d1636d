//! The option table: every option's name and kind, and how a value of it is read.

use super::*;

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Duration,
    Count {
        min: u64,
        max: u64,
    },
    Fraction,
    /// A finite number within 0..=max.
    Number {
        max: f64,
    },
    Choice(&'static [&'static str]),
    Text,
    /// Names: one string of them separated by whitespace, or a list of them (each a whole
    /// name: one holding whitespace is refused rather than split).
    Names,
    Timestamp,
    Flag,
}

/// One option: its snake_case name (the camelCase one is derived: `lease_ttl` ->
/// `leaseTtlMs`, as every JavaScript duration), and what its value is.
pub(super) struct Spec {
    pub(super) snake: &'static str,
    pub(super) kind: Kind,
}

pub(super) const SPECS: &[Spec] = &[
    Spec {
        snake: "lease_ttl",
        kind: Kind::Duration,
    },
    Spec {
        snake: "max_attempts",
        kind: Kind::Count {
            min: 1,
            max: 1_000_000,
        },
    },
    Spec {
        snake: "backoff",
        kind: Kind::Choice(&["fixed", "exponential"]),
    },
    Spec {
        snake: "backoff_base",
        kind: Kind::Duration,
    },
    Spec {
        snake: "backoff_max",
        kind: Kind::Duration,
    },
    Spec {
        snake: "backoff_jitter",
        kind: Kind::Fraction,
    },
    Spec {
        snake: "host_delay",
        kind: Kind::Duration,
    },
    Spec {
        snake: "host_in_flight",
        kind: Kind::Count {
            min: 0,
            max: MAX_IN_FLIGHT as u64,
        },
    },
    Spec {
        snake: "host_delay_after",
        kind: Kind::Choice(&["lease", "answer"]),
    },
    Spec {
        snake: "host_delay_factor",
        kind: Kind::Number {
            max: MAX_DELAY_FACTOR,
        },
    },
    Spec {
        snake: "host_delay_max",
        kind: Kind::Duration,
    },
    Spec {
        snake: "crawl_delay_max",
        kind: Kind::Duration,
    },
    Spec {
        snake: "host_key",
        kind: Kind::Choice(&["host", "domain"]),
    },
    Spec {
        snake: "key_prefix",
        kind: Kind::Text,
    },
    Spec {
        snake: "connect_timeout",
        kind: Kind::Duration,
    },
    Spec {
        snake: "command_timeout",
        kind: Kind::Duration,
    },
    Spec {
        snake: "max_payload_bytes",
        kind: Kind::Count {
            min: 0,
            max: 512 * 1024 * 1024,
        },
    },
    Spec {
        snake: "seed_batch",
        kind: Kind::Count {
            min: 1,
            max: 10_000,
        },
    },
    Spec {
        snake: "seen_cache",
        kind: Kind::Count {
            min: 0,
            max: 100_000_000,
        },
    },
    Spec {
        snake: "answer_linger",
        kind: Kind::Duration,
    },
    Spec {
        snake: "reclaim_batch",
        kind: Kind::Count {
            min: 1,
            max: 10_000,
        },
    },
    Spec {
        snake: "adaptive_delay_step",
        kind: Kind::Duration,
    },
    Spec {
        snake: "adaptive_delay_max",
        kind: Kind::Duration,
    },
    Spec {
        snake: "retry_after_max",
        kind: Kind::Duration,
    },
    Spec {
        snake: "tls_ca_file",
        kind: Kind::Text,
    },
    Spec {
        snake: "min_replicas",
        kind: Kind::Count { min: 0, max: 100 },
    },
    Spec {
        snake: "replica_timeout",
        kind: Kind::Duration,
    },
    Spec {
        snake: "lease_crawls",
        kind: Kind::Names,
    },
    Spec {
        snake: "shards",
        kind: Kind::Count { min: 1, max: 1024 },
    },
    Spec {
        snake: "extend_every",
        kind: Kind::Duration,
    },
    Spec {
        snake: "revisit_after",
        kind: Kind::Duration,
    },
    Spec {
        snake: "sort_query",
        kind: Kind::Flag,
    },
    Spec {
        snake: "allow_eviction",
        kind: Kind::Flag,
    },
    Spec {
        snake: "fixed_clock",
        kind: Kind::Timestamp,
    },
];

/// A parsed option value.
pub(super) enum Parsed {
    Duration(Duration),
    Count(u64),
    Fraction(f64),
    Text(String),
    Names(Vec<String>),
    Timestamp(i64),
    Flag(bool),
}

pub(super) fn name_in(spec: &Spec, style: Style) -> String {
    crate::binding::json::field_name(spec.snake, matches!(spec.kind, Kind::Duration), style)
}

pub(super) fn unknown_option(name: &str, style: Style) -> Error {
    let known = Config::option_names(style);
    let closest = known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .min()
        .filter(|(d, _)| *d <= 3);
    match closest {
        Some((_, k)) => Error::Config(format!("unknown option {name:?}; did you mean {k:?}?")),
        None => Error::Config(format!(
            "unknown option {name:?}; known options: {}",
            known.join(", ")
        )),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

pub(super) fn parse_value(spec: &Spec, value: &Value, style: Style) -> Result<Parsed> {
    let name = name_in(spec, style);
    let err = |what: &str| Error::Config(format!("option {name:?} must be {what}, got {value}"));
    match spec.kind {
        Kind::Duration => duration_from_value(value, style)
            .map(Parsed::Duration)
            .ok_or_else(|| err(duration_hint(style))),
        Kind::Count { min, max } => match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => Ok(Parsed::Count(n)),
            _ => Err(err(&format!("an integer within {min}..={max}"))),
        },
        Kind::Fraction => match value.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => Ok(Parsed::Fraction(f)),
            _ => Err(err("a number within 0..=1")),
        },
        Kind::Number { max } => match value.as_f64() {
            Some(f) if f.is_finite() && (0.0..=max).contains(&f) => Ok(Parsed::Fraction(f)),
            _ => Err(err(&format!("a number within 0..={max}"))),
        },
        Kind::Choice(choices) => match value.as_str() {
            Some(s) if choices.contains(&s) => Ok(Parsed::Text(s.to_string())),
            _ => Err(err(&format!("one of {choices:?}"))),
        },
        Kind::Text => value
            .as_str()
            .map(|s| Parsed::Text(s.to_string()))
            .ok_or_else(|| err("a string")),
        Kind::Names => match value {
            Value::String(names) => Ok(Parsed::Names(
                names.split_whitespace().map(str::to_string).collect(),
            )),
            Value::Array(list) => list
                .iter()
                .map(|name| match name.as_str() {
                    Some(n) if !n.is_empty() && !n.chars().any(char::is_whitespace) => {
                        Ok(n.to_string())
                    }
                    _ => Err(Error::Config(format!(
                        "option {name_in:?} must be a string of names separated by spaces or a list \
                         of names (each a non-empty string without spaces), got {name} in {value}",
                        name_in = name_in(spec, style)
                    ))),
                })
                .collect::<Result<Vec<_>>>()
                .map(Parsed::Names),
            _ => Err(err("a string of names separated by spaces, or a list of names")),
        },
        Kind::Timestamp => timestamp_from_value(value, style)
            .map(Parsed::Timestamp)
            .ok_or_else(|| err("a timestamp")),
        Kind::Flag => value
            .as_bool()
            .map(Parsed::Flag)
            .ok_or_else(|| err("true or false")),
    }
}
