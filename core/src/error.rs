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
    /// A per-item priority that is not an integer within `-32768..=32767` (the value given).
    InvalidPriority(String),
    /// A per-item delay that is negative, longer than 100 years or not a number.
    InvalidDelay(String),
    /// A caller-supplied de-duplication key that is empty, too long or has control characters.
    InvalidKey(String),
    /// A new URL of a host that has added as many as its budget allows (the host key).
    BudgetExhausted(String),
    /// A crawl request whose fields cannot be read (a method that is not a name, headers that
    /// are not name/value pairs of text, a body that is not bytes or text, ...).
    InvalidRequest(String),
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
            InvalidReason::InvalidKey(_) => "invalid_key",
            InvalidReason::BudgetExhausted(_) => "budget_exhausted",
            InvalidReason::InvalidRequest(_) => "invalid_request",
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
                // (`p` is the value given, or why a binding could not read it: after the colon
                // both read as a sentence)
                write!(f, "priority is not an integer within -32768..=32767: {p}")
            }
            InvalidReason::InvalidDelay(m) => write!(f, "invalid delay: {m}"),
            InvalidReason::InvalidKey(m) => write!(f, "invalid key: {m}"),
            InvalidReason::InvalidRequest(m) => write!(f, "not a crawl request: {m}"),
            InvalidReason::BudgetExhausted(host) => write!(
                f,
                "host {host} has added as many new URLs as its budget allows"
            ),
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
    /// `set_host_delay`; `index` is then 0). Batches report invalid items in their report
    /// instead.
    #[error("invalid item {input:?}: {reason}")]
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
    /// A key of the queue holds a value of the wrong type (written by something other than
    /// crawlq). Detected before the call changed anything.
    #[error("queue data is corrupt: {0}")]
    Corrupt(String),
}

impl Error {
    /// Stable language-neutral code of the error kind: `INVALID_ITEM`, `CONFIG`,
    /// `INVALID_ARGUMENT`, `UNAVAILABLE`, `TIMEOUT`, `PROTOCOL`, `LEASE_LOST`, `SERVER` or
    /// `CORRUPT`.
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
            Error::Corrupt(_) => "CORRUPT",
        }
    }

    /// The error a server error reply stands for: crawlq's own script errors
    /// (`CRAWLQ_PROTOCOL ...`, `CRAWLQ_CORRUPT ...`) and `WRONGTYPE` are decided here, once,
    /// for every transport; anything else is [`Error::Server`].
    ///
    /// ```
    /// use crawlq::Error;
    /// assert_eq!(Error::from_server_reply("CRAWLQ_CORRUPT key x holds a string").code(), "CORRUPT");
    /// assert_eq!(
    ///     Error::from_server_reply(r#""CRAWLQ_PROTOCOL": queue was written with format 9"#).to_string(),
    ///     "protocol mismatch: queue was written with format 9"
    /// );
    /// assert_eq!(Error::from_server_reply("WRONGTYPE Operation against a key").code(), "CORRUPT");
    /// assert_eq!(Error::from_server_reply("OOM command not allowed").code(), "SERVER");
    /// // Redis 6 failing to compile a script's `#!lua` first line
    /// let old = "Error compiling script (new function): user_script:1: unexpected symbol near '#'";
    /// assert_eq!(Error::from_server_reply(old).code(), "CONFIG");
    /// ```
    pub fn from_server_reply(message: &str) -> Error {
        let tail = |code: &str| {
            let at = message.find(code).map_or(0, |i| i + code.len());
            // The redis crate quotes the code and adds ': ' after it, and Redis appends where a
            // script raised the error: keep the message only.
            let text = message[at..].trim_start_matches(['"', ':', ' ']);
            text.split(" script: ")
                .next()
                .unwrap_or(text)
                .trim()
                .to_string()
        };
        if message.contains("CRAWLQ_PROTOCOL") {
            Error::Protocol(tail("CRAWLQ_PROTOCOL"))
        } else if message.contains("CRAWLQ_CORRUPT") {
            Error::Corrupt(tail("CRAWLQ_CORRUPT"))
        } else if message.contains("CRAWLQ_CONFIG") {
            Error::Config(tail("CRAWLQ_CONFIG"))
        } else if message.contains("CRAWLQ_REFUSED") {
            Error::InvalidArgument(tail("CRAWLQ_REFUSED"))
        } else if message.contains("WRONGTYPE") {
            Error::Corrupt(format!(
                "a key of the queue holds a value of the wrong type ({})",
                message.trim()
            ))
        } else if predates_redis_7(message) {
            Error::Config(format!(
                "this Redis server cannot run crawlq's scripts: it does not know the `#!lua` \
                 header of Redis 7's scripts, so it is older than Redis 7.0, which crawlq needs \
                 ({})",
                message.trim()
            ))
        } else {
            Error::Server(message.trim().to_string())
        }
    }

    /// The queue's seen epoch, when this is a page's answer refused because the known-seen
    /// cache's hits were judged by an epoch that has moved since (`CRAWLQ_EPOCH`, see
    /// `ack_seed` in docs/PROTOCOL.md): the call changed nothing, and goes again with those
    /// links.
    pub(crate) fn moved_seen_epoch(&self) -> Option<&str> {
        let Error::Server(message) = self else {
            return None;
        };
        let at = message.find("CRAWLQ_EPOCH")? + "CRAWLQ_EPOCH".len();
        message[at..]
            .trim_start_matches(['"', ':', ' '])
            .split_whitespace()
            .next()
    }

    /// The kind of this error in [`ERROR_KINDS`].
    pub fn kind(&self) -> &'static ErrorKind {
        ERROR_KINDS
            .iter()
            .find(|k| k.code == self.code())
            .expect("every code is in ERROR_KINDS")
    }

    /// The extra fields of this error (the kind's [`ErrorKind::fields`]), named in `style`:
    /// `index`, `input`, `reason` (the refusal code) of an invalid item; `lease_id` /
    /// `leaseId` and `token` of a lost lease.
    ///
    /// ```
    /// use crawlq::{Error, Style};
    /// let e = Error::LeaseLost { id: "3".into(), token: 9 };
    /// assert_eq!(e.fields(Style::Camel)[0], ("leaseId".to_string(), serde_json::json!("3")));
    /// ```
    pub fn fields(&self, style: crate::Style) -> Vec<(String, serde_json::Value)> {
        let values: Vec<serde_json::Value> = match self {
            Error::InvalidItem {
                index,
                input,
                reason,
            } => vec![(*index).into(), input.clone().into(), reason.code().into()],
            Error::LeaseLost { id, token } => vec![id.clone().into(), (*token).into()],
            _ => Vec::new(),
        };
        self.kind()
            .fields
            .iter()
            .zip(values)
            .map(|(name, v)| (crate::binding::json::field_name(name, false, style), v))
            .collect()
    }
}

/// One kind of [`Error`] as every binding presents it: Python builds the class `<name>Error`,
/// PHP `Crawlq\<name>Exception`, JavaScript rejects with an `Error` whose `code` is
/// `ERR_CRAWLQ_<code>`; each sets the extra `fields` (snake_case in Python, camelCase in
/// JavaScript and PHP). Published in docs/PROTOCOL.md, section "Errors".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorKind {
    /// [`Error::code`]: `INVALID_ITEM`, `CONFIG`, ...
    pub code: &'static str,
    /// The class name stem: `InvalidItem`, `Config`, ...
    pub name: &'static str,
    /// The code of the parent kind (`TIMEOUT` is an `UNAVAILABLE`); `None`: the base class.
    pub parent: Option<&'static str>,
    /// The builtin Python exception the class also derives from, so `except ValueError`
    /// works as a Python user expects.
    pub python_builtin: Option<&'static str>,
    /// One line on what it means.
    pub doc: &'static str,
    /// Extra fields, snake_case.
    pub fields: &'static [&'static str],
}

/// Every error kind, parents before children. docs/PROTOCOL.md (section 6) publishes this table;
/// a test keeps the two equal.
pub const ERROR_KINDS: [ErrorKind; 9] = [
    ErrorKind {
        code: "INVALID_ITEM",
        name: "InvalidItem",
        parent: None,
        python_builtin: Some("ValueError"),
        doc: "An item was refused where a single item is expected (index, input, reason code).",
        fields: &["index", "input", "reason"],
    },
    ErrorKind {
        code: "CONFIG",
        name: "Config",
        parent: None,
        python_builtin: Some("ValueError"),
        doc: "An unknown option, an option with a wrong type or value, a bad URL (a database \
              number the server does not have, an address that does not answer in Redis's \
              protocol), failed authentication or an untrusted TLS certificate.",
        fields: &[],
    },
    ErrorKind {
        code: "INVALID_ARGUMENT",
        name: "InvalidArgument",
        parent: None,
        python_builtin: Some("ValueError"),
        doc: "A method argument out of range or of the wrong shape (NaN, infinite, negative).",
        fields: &[],
    },
    ErrorKind {
        code: "UNAVAILABLE",
        name: "Unavailable",
        parent: None,
        python_builtin: Some("ConnectionError"),
        doc: "Redis could not be reached, or the connection dropped during a call (which may \
              or may not have been applied).",
        fields: &[],
    },
    ErrorKind {
        code: "TIMEOUT",
        name: "Timeout",
        parent: Some("UNAVAILABLE"),
        python_builtin: Some("TimeoutError"),
        doc: "Redis did not answer within command_timeout, or replicas did not acknowledge a \
              change within replica_timeout.",
        fields: &[],
    },
    ErrorKind {
        code: "PROTOCOL",
        name: "Protocol",
        parent: None,
        python_builtin: None,
        doc: "The queue holds data of another format, or a reply had an unexpected shape.",
        fields: &[],
    },
    ErrorKind {
        code: "LEASE_LOST",
        name: "LeaseLost",
        parent: None,
        python_builtin: None,
        doc: "The lease is not held any more (expired and reclaimed, or already answered).",
        fields: &["lease_id", "token"],
    },
    ErrorKind {
        code: "SERVER",
        name: "Server",
        parent: None,
        python_builtin: None,
        doc: "Redis answered with an error (out of memory, read-only replica, missing \
              permission, ...).",
        fields: &[],
    },
    ErrorKind {
        code: "CORRUPT",
        name: "Corrupt",
        parent: None,
        python_builtin: None,
        doc: "A key of the queue holds a value of the wrong type (written by another program); \
              the call changed nothing.",
        fields: &[],
    },
];

/// Result alias used throughout crawlq.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A server before Redis 7.0 compiling a script: every script starts with `#!lua` (the flags
/// header Redis 7 reads and strips), which older Lua parsers refuse on its first line.
pub(crate) fn predates_redis_7(message: &str) -> bool {
    message.contains("Error compiling script") && message.contains(":1: unexpected symbol near '#'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_refused_item_is_named_without_an_index() {
        let err = Error::InvalidItem {
            index: 0,
            input: "bad host".into(),
            reason: crate::normalize::normalize("bad host").unwrap_err(),
        };
        assert_eq!(
            err.to_string(),
            "invalid item \"bad host\": not a valid host: character ' ' is not allowed in a host name"
        );
    }

    /// docs/PROTOCOL.md publishes the table: one row per kind, with its parent, builtin, fields
    /// and doc line exactly as here.
    #[test]
    fn the_published_error_table_is_this_one() {
        let protocol = include_str!("../../docs/PROTOCOL.md");
        for kind in ERROR_KINDS {
            let fields = kind
                .fields
                .iter()
                .map(|f| match *f {
                    "reason" => "`reason` (the refusal code)".to_string(),
                    f => format!("`{f}`"),
                })
                .collect::<Vec<_>>()
                .join(", ");
            let row = format!(
                "| `{}` | {} | {} | {} | {} | {} |",
                kind.code,
                kind.name,
                kind.parent.map(|p| format!("`{p}`")).unwrap_or_default(),
                kind.python_builtin.unwrap_or_default(),
                fields,
                kind.doc
            );
            let mut row = row;
            while row.contains("|  |") {
                row = row.replace("|  |", "| |");
            }
            assert!(
                protocol.contains(&row),
                "docs/PROTOCOL.md lacks the row\n{row}"
            );
        }
    }

    #[test]
    fn a_refused_answer_names_the_seen_epoch_it_met() {
        // as the redis crate and a plain transport give the script's error
        for message in [
            "CRAWLQ_EPOCH 17:0:9.5 is the seen epoch now, not 17:0:8.1: send the links",
            "\"CRAWLQ_EPOCH\": 17:0:9.5 is the seen epoch now, not 17:0:8.1 script: x",
        ] {
            let e = Error::from_server_reply(message);
            assert_eq!(e.code(), "SERVER");
            assert_eq!(e.moved_seen_epoch(), Some("17:0:9.5"));
        }
        assert_eq!(Error::Server("OOM".into()).moved_seen_epoch(), None);
        assert_eq!(
            Error::Corrupt("CRAWLQ_EPOCH x".into()).moved_seen_epoch(),
            None
        );
    }
}
