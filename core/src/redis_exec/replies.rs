//! The redis crate's replies and errors as crawlq's: values to [`Reply`], errors to [`Error`] kinds, which errors a call may retry.

use super::*;

pub(super) fn to_reply(value: redis::Value) -> Reply {
    use redis::Value as V;
    match value {
        V::Nil => Reply::Nil,
        V::Int(i) => Reply::Int(i),
        V::BulkString(b) => Reply::Data(b),
        V::SimpleString(s) => Reply::Data(s.into_bytes()),
        V::Okay => Reply::Data(b"OK".to_vec()),
        V::Array(items) | V::Set(items) => Reply::Array(items.into_iter().map(to_reply).collect()),
        V::Boolean(b) => Reply::Int(b as i64),
        V::Double(d) => Reply::Data(d.to_string().into_bytes()),
        V::Map(pairs) => Reply::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [to_reply(k), to_reply(v)])
                .collect(),
        ),
        other => Reply::Data(format!("{other:?}").into_bytes()),
    }
}

/// Map an error of the `redis` crate to crawlq's [`Error`], the way the executor does:
/// refused or dropped connections are [`Error::Unavailable`], timeouts [`Error::Timeout`],
/// authentication and certificate problems [`Error::Config`], crawlq's script errors,
/// `WRONGTYPE` and a server too old for the scripts as [`Error::from_server_reply`] decides.
pub fn to_error(e: RedisError, context: &str) -> Error {
    let text = e.to_string();
    if text.contains("CRAWLQ_")
        || e.code() == Some("WRONGTYPE")
        || crate::error::predates_redis_7(&text)
    {
        return with_context(Error::from_server_reply(&text), context);
    }
    if e.kind() == ErrorKind::AuthenticationFailed
        || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
    {
        return crate::config::auth_refused(context, &text);
    }
    // the URL's database refused by SELECT (the server's words are the error's detail)
    if let Some(refusal) = e
        .detail()
        .and_then(|reply| crate::config::handshake_refusal(context, reply))
    {
        return refusal;
    }
    if is_tls_verification(&text) {
        return Error::Config(format!(
            "{context}: the server's TLS certificate is not trusted ({text}); set tls_ca_file to \
             the CA that signed it"
        ));
    }
    if e.is_timeout() {
        return Error::Timeout(format!("{context}: {text}"));
    }
    if is_slot_moving(&e)
        || matches!(
            e.code(),
            Some("TRYAGAIN" | "MOVED" | "ASK" | "CLUSTERDOWN" | "CROSSSLOT")
        )
    {
        return Error::Unavailable(format!(
            "{context}: the Redis Cluster is moving or lost the queue's slot and did not settle \
             within the timeouts ({text}); nothing was changed, try again"
        ));
    }
    if e.code() == Some("LOADING") {
        return Error::Unavailable(format!(
            "{context}: Redis is still loading its data set ({text})"
        ));
    }
    if e.is_connection_refusal() {
        return Error::Unavailable(format!("{context}: connection refused ({text})"));
    }
    if e.is_connection_dropped() || e.is_io_error() {
        return Error::Unavailable(format!(
            "{context}: connection lost ({text}); the call may or may not have been applied"
        ));
    }
    match e.kind() {
        ErrorKind::InvalidClientConfig => Error::Config(format!("{context}: {text}")),
        ErrorKind::Server(_) | ErrorKind::Extension => Error::Server(format!("{context}: {text}")),
        _ => Error::Unavailable(format!("{context}: {text}")),
    }
}

pub(super) fn with_context(error: Error, context: &str) -> Error {
    match error {
        Error::Server(m) => Error::Server(format!("{context}: {m}")),
        other => other,
    }
}

/// rustls reports an untrusted certificate (unknown issuer, wrong name, expired) as an I/O
/// error whose text names it.
pub(super) fn is_tls_verification(text: &str) -> bool {
    [
        "invalid peer certificate",
        "UnknownIssuer",
        "NotValidForName",
        "certificate verify",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// FCALL of a function the server does not have.
pub(super) fn is_function_not_found(e: &RedisError) -> bool {
    e.code() == Some("ERR")
        && e.detail()
            .is_some_and(|d| d.starts_with("Function not found"))
}

/// The server or the user's ACL will never run functions: Redis before 7 (unknown command),
/// an ACL without `+fcall` or `+function|load`.
pub(super) fn refuses_functions(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
        || (e.code() == Some("ERR")
            && e.detail().is_some_and(|d| {
                d.starts_with("unknown command") || d.starts_with("unknown subcommand")
            }))
}

/// Whether a failed call may be sent again: the server certainly did not run it (the connection
/// was refused; Redis was loading its data set, busy with another script, or asked to try
/// again), or the call changes nothing (a read-only script), so running it twice is harmless.
pub(super) fn may_retry(e: &RedisError, read_only: bool) -> bool {
    e.is_connection_refusal()
        || e.kind() == ErrorKind::ClusterConnectionNotFound
        || matches!(
            e.code(),
            Some("LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN" | "CLUSTERDOWN" | "MOVED" | "ASK")
        )
        || is_slot_moving(e)
        || (read_only && (e.is_connection_dropped() || e.is_io_error()) && !e.is_timeout())
}

/// A script that found its slot being migrated: its probe failed before any write (see
/// the prelude), so it can be sent again once the slot has moved.
pub(super) fn is_slot_moving(e: &RedisError) -> bool {
    e.to_string().contains("non local key")
}
