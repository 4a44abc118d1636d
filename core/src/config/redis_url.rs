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
/// ```
pub fn redacted_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_string(),
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
/// read, instead of the client's "did not parse". A URL without `://` is left to the client.
///
/// ```
/// use crawlq::config::check_redis_url_scheme;
/// assert!(check_redis_url_scheme("redis://127.0.0.1:6379/0").is_ok());
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
        _ => Ok(()),
    }
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
            "127.0.0.1:6379",
        ] {
            assert!(check_redis_url_scheme(url).is_ok(), "{url}");
        }
        assert!(check_redis_url_scheme("https://h/").is_err());
    }

    #[test]
    fn user_info_is_hidden_up_to_the_last_at() {
        assert_eq!(redacted_url("redis://u:p@ss@h:1/0"), "redis://***@h:1/0");
        assert_eq!(
            redacted_url("unix:///run/redis.sock"),
            "unix:///run/redis.sock"
        );
        assert_eq!(redacted_url("user@host"), "user@host");
    }
}
