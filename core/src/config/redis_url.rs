//! Redis URLs: the schemes read, and the form a URL takes in messages (without its password).

use crate::error::{Error, Result};

/// A Redis URL without its user info, for messages and logs: a password must not reach them
/// through an error or a log line. Every binding's connect errors name the URL this way.
///
/// ```
/// use crawlq::config::redacted_url;
/// assert_eq!(redacted_url("redis://user:secret@10.0.0.5:6379/0"), "redis://***@10.0.0.5:6379/0");
/// assert_eq!(redacted_url("rediss://:secret@cache.internal"), "rediss://***@cache.internal");
/// assert_eq!(redacted_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
/// assert_eq!(redacted_url(":secret@10.0.0.5:6379"), "***@10.0.0.5:6379"); // no scheme
/// ```
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(end) => url.split_at(end + 3),
        None => ("", url),
    };
    match rest.rfind('@') {
        Some(at) => format!("{scheme}***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// The schemes a Redis URL may have (those the redis client reads).
const REDIS_SCHEMES: [&str; 7] = [
    "redis",
    "rediss",
    "valkey",
    "valkeys",
    "unix",
    "redis+unix",
    "valkey+unix",
];

/// Refuse a URL of another scheme (`http://...`, a common slip) with the schemes that are
/// read, instead of the client's "did not parse", and a URL without one (`host:port`), which
/// the redis client refuses and some JavaScript clients read, saying how to write it.
///
/// ```
/// use crawlq::config::check_redis_url_scheme;
/// assert!(check_redis_url_scheme("redis://127.0.0.1:6379/0").is_ok());
/// assert_eq!(check_redis_url_scheme("127.0.0.1:6379").unwrap_err().to_string(),
///     "invalid configuration: redis URL 127.0.0.1:6379: no scheme: write redis://127.0.0.1:6379");
/// assert_eq!(check_redis_url_scheme("http://u:pw@h/").unwrap_err().to_string(),
///     "invalid configuration: redis URL http://***@h/: unsupported scheme \"http\": use \
///      redis://host:port/db, rediss:// (TLS) or unix:///path/to/socket");
/// ```
pub fn check_redis_url_scheme(url: &str) -> Result<()> {
    match url.split_once("://") {
        Some((scheme, _)) if !REDIS_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) => {
            Err(Error::Config(format!(
                "redis URL {}: unsupported scheme {scheme:?}: use redis://host:port/db, \
                 rediss:// (TLS) or unix:///path/to/socket",
                redacted_url(url)
            )))
        }
        Some(_) => Ok(()),
        // some clients read `host:port` as a URL (ioredis), others refuse it: refused in all
        None => Err(Error::Config(format!(
            "redis URL {}: {}",
            redacted_url(url),
            why_url_unread(url, "")
        ))),
    }
}

/// Why the redis client could not read `url` (`client_says`: its own words), in words that
/// point at the fix: a missing scheme, or what a URL parser finds wrong (a port out of range).
///
/// ```
/// use crawlq::config::why_url_unread;
/// assert_eq!(why_url_unread("127.0.0.1:6379", "Redis URL did not parse - InvalidClientConfig"),
///     "no scheme: write redis://127.0.0.1:6379");
/// assert_eq!(why_url_unread("redis://h:99999", "Redis URL did not parse - InvalidClientConfig"),
///     "invalid port number");
/// assert_eq!(why_url_unread("redis://h/x", "Invalid database number - InvalidClientConfig"),
///     "Invalid database number");
/// ```
pub fn why_url_unread(url: &str, client_says: &str) -> String {
    if !url.contains("://") {
        return match url.starts_with('/') {
            true => format!("no scheme: a socket's path is written unix://{url}"),
            false => format!("no scheme: write redis://{}", redacted_url(url)),
        };
    }
    match url::Url::parse(url) {
        Err(e) => e.to_string(),
        // the client's words, without the kind of error it appends
        Ok(_) => client_says
            .split(" - ")
            .next()
            .unwrap_or(client_says)
            .to_string(),
    }
}

/// An address whose server answered a connection in another protocol than Redis's (an HTTP
/// port, say): a setting to fix, not worth trying again. `said`: the client's parse error.
///
/// ```
/// use crawlq::config::not_redis_protocol;
/// let err = not_redis_protocol("connecting to redis://h:80/0", "Protocol error, got \"H\" as reply type byte\nmore");
/// assert_eq!(err.code(), "CONFIG");
/// assert!(err.to_string().ends_with("(Protocol error, got \"H\" as reply type byte): is that the address of a Redis server?"));
/// ```
pub fn not_redis_protocol(context: &str, said: &str) -> Error {
    Error::Config(format!(
        "{context}: the server did not answer in Redis's protocol ({}): is that the address of \
         a Redis server?",
        said.lines().next().unwrap_or_default()
    ))
}

/// A server's refusal of a connection's handshake (`AUTH`, `HELLO`, `SELECT`) as every client
/// reports it: a setting the caller can fix in the URL, so an [`Error::Config`]; `None` for
/// another reply. `context` says what was being done (`connecting to redis://***@host`).
///
/// ```
/// use crawlq::config::handshake_refusal;
/// let err = handshake_refusal("connecting to redis://h:6379/99", "ERR DB index is out of range").unwrap();
/// assert_eq!(err.code(), "CONFIG");
/// assert!(handshake_refusal("connecting", "WRONGPASS invalid username-password pair").is_some());
/// assert!(handshake_refusal("connecting", "ERR SELECT is not allowed in cluster mode").is_some());
/// assert!(handshake_refusal("connecting", "LOADING Redis is loading").is_none());
/// ```
pub fn handshake_refusal(context: &str, reply: &str) -> Option<Error> {
    let reply = reply.trim();
    if reply.starts_with("WRONGPASS") || reply.starts_with("NOAUTH") {
        return Some(auth_refused(context, reply));
    }
    if reply.contains("SELECT is not allowed in cluster mode") {
        return Some(Error::Config(format!(
            "{context}: a Redis Cluster has database 0 only ({reply}); drop the URL's database \
             number or make it /0"
        )));
    }
    if reply.contains("DB index is out of range") {
        return Some(Error::Config(format!(
            "{context}: the server has no database of the URL's number ({reply}); it has as many \
             as its `databases` setting (16 unless set), numbered from 0"
        )));
    }
    None
}

/// A password or user the server refused (`reply`: its words), as every client reports it.
pub fn auth_refused(context: &str, reply: &str) -> Error {
    Error::Config(format!(
        "{context}: authentication failed ({reply}); give the password (and user) in the URL: \
         redis://user:password@host:port"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemes_the_client_reads_pass() {
        for url in [
            "redis://127.0.0.1:6379/0",
            "REDIS://127.0.0.1",
            "rediss://h:6380",
            "unix:///tmp/redis.sock",
            "redis+unix:///tmp/redis.sock",
            "valkey://h",
        ] {
            assert!(check_redis_url_scheme(url).is_ok(), "{url}");
        }
        for url in ["https://h/", "127.0.0.1:6379", "/tmp/redis.sock", ""] {
            let err = check_redis_url_scheme(url).unwrap_err();
            assert_eq!(err.code(), "CONFIG", "{url}");
        }
    }

    #[test]
    fn user_info_is_hidden_up_to_the_last_at() {
        assert_eq!(redacted_url("redis://u:p@ss@h:1/0"), "redis://***@h:1/0");
        assert_eq!(
            redacted_url("unix:///run/redis.sock"),
            "unix:///run/redis.sock"
        );
        // without a scheme too: what comes before the @ may be a password
        assert_eq!(redacted_url("user:pw@host:6379"), "***@host:6379");
        assert_eq!(redacted_url("127.0.0.1:6379"), "127.0.0.1:6379");
    }
}
