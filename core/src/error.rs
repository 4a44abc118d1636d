//! The one error type of crawlq. Every binding maps it once to its language's idiom, using
//! [`Error::code`] as the stable, language-neutral name of each kind.

use std::fmt;

/// Why one seeded item was refused. Reported per item in a [`crate::SeedReport`]; the rest of
/// the batch is seeded regardless.
///
/// ```
/// use crawlq::normalize::normalize;
/// let reason = normalize("ftp://example.com/file").unwrap_err();
/// assert_eq!(reason.code(), "unsupported_scheme");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidReason {
    /// Nothing left after trimming whitespace.
    Empty,
    /// The canonical URL (or the raw input) is longer than the limit.
    TooLong { len: usize, max: usize },
    /// A URL whose scheme is not `http` or `https`.
    UnsupportedScheme(String),
    /// Not parseable as a URL (the WHATWG parser's message), or a URL without a scheme.
    InvalidUrl(String),
    /// A host (bare, or a URL's) that is not a valid hostname or IP address.
    InvalidHost(String),
    /// The item's JSON payload is larger than `max_payload_bytes` once serialized.
    PayloadTooLarge { len: usize, max: usize },
    /// The payload cannot be stored as JSON (for example a NaN or infinite number).
    InvalidPayload(String),
    /// A per-item priority outside `-32768..=32767`.
    InvalidPriority(i64),
    /// A per-item delay that is negative or not a number.
    InvalidDelay(String),
}

impl InvalidReason {
    /// Stable machine-readable code, the same in every language.
    pub fn code(&self) -> &'static str {
        match self {
            InvalidReason::Empty => "empty",
            InvalidReason::TooLong { .. } => "too_long",
            InvalidReason::UnsupportedScheme(_) => "unsupported_scheme",
            InvalidReason::InvalidUrl(_) => "invalid_url",
            InvalidReason::InvalidHost(_) => "invalid_host",
            InvalidReason::PayloadTooLarge { .. } => "payload_too_large",
            InvalidReason::InvalidPayload(_) => "invalid_payload",
            InvalidReason::InvalidPriority(_) => "invalid_priority",
            InvalidReason::InvalidDelay(_) => "invalid_delay",
        }
    }
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidReason::Empty => write!(f, "empty input"),
            InvalidReason::TooLong { len, max } => {
                write!(f, "too long: {len} bytes, at most {max} allowed")
            }
            InvalidReason::UnsupportedScheme(s) => {
                write!(
                    f,
                    "unsupported scheme {s:?}: only http and https are queued"
                )
            }
            InvalidReason::InvalidUrl(m) => write!(f, "not a valid URL: {m}"),
            InvalidReason::InvalidHost(m) => write!(f, "not a valid host: {m}"),
            InvalidReason::PayloadTooLarge { len, max } => {
                write!(
                    f,
                    "payload too large: {len} bytes of JSON, at most {max} allowed"
                )
            }
            InvalidReason::InvalidPayload(m) => write!(f, "payload is not storable as JSON: {m}"),
            InvalidReason::InvalidPriority(p) => {
                write!(f, "priority {p} is outside -32768..=32767")
            }
            InvalidReason::InvalidDelay(m) => write!(f, "invalid delay: {m}"),
        }
    }
}

/// Every failure crawlq reports.
///
/// ```
/// let err = crawlq::Error::Config("unknown option \"lease_tll\"".into());
/// assert_eq!(err.code(), "CONFIG");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// One item was refused where a single item is expected (for example a host given to
    /// `set_host_delay`). Batches report invalid items in their report instead.
    #[error("invalid item at index {index} ({input:?}): {reason}")]
    InvalidItem {
        index: usize,
        input: String,
        reason: InvalidReason,
    },
    /// An unknown option, or an option with a wrong type or out-of-range value.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A method argument out of range or of the wrong shape.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Redis could not be reached, or the connection dropped during a call (the call may or may
    /// not have been applied; it is not retried when that is unknown).
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// Redis did not answer within the configured timeout.
    #[error("redis timed out: {0}")]
    Timeout(String),
    /// The stored data was written by a newer (or unknown) format, or a reply had an
    /// unexpected shape.
    #[error("protocol mismatch: {0}")]
    Protocol(String),
    /// The lease is no longer held: it expired and was reclaimed, or was already acked,
    /// nacked or released.
    #[error("lease lost: item {id} token {token} is not leased by this holder any more")]
    LeaseLost { id: String, token: u64 },
    /// Redis answered with an error (out of memory, read-only replica, missing permission...).
    #[error("redis error: {0}")]
    Server(String),
}

impl Error {
    /// Stable language-neutral code of the error kind: `INVALID_ITEM`, `CONFIG`,
    /// `INVALID_ARGUMENT`, `UNAVAILABLE`, `TIMEOUT`, `PROTOCOL`, `LEASE_LOST` or `SERVER`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidItem { .. } => "INVALID_ITEM",
            Error::Config(_) => "CONFIG",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::Unavailable(_) => "UNAVAILABLE",
            Error::Timeout(_) => "TIMEOUT",
            Error::Protocol(_) => "PROTOCOL",
            Error::LeaseLost { .. } => "LEASE_LOST",
            Error::Server(_) => "SERVER",
        }
    }

    /// Every code [`Error::code`] can return, for bindings that declare one class per kind.
    pub const CODES: [&'static str; 8] = [
        "INVALID_ITEM",
        "CONFIG",
        "INVALID_ARGUMENT",
        "UNAVAILABLE",
        "TIMEOUT",
        "PROTOCOL",
        "LEASE_LOST",
        "SERVER",
    ];
}

/// Result alias used throughout crawlq.
pub type Result<T, E = Error> = std::result::Result<T, E>;
