//! Canonical form of queued items, their fingerprint, and the host key used for politeness.
//!
//! An item is either a URL (`http`/`https`, canonicalized by the WHATWG URL parser of the
//! `url` crate: lowercase scheme and host, IDNA to punycode, default port dropped, dot
//! segments resolved) with its fragment removed, or a bare host (`Example.COM.` ->
//! `example.com`). Both forms have their trailing root dot stripped, so a URL and a bare host
//! agree on the host key.

use crate::error::InvalidReason;
use url::{Host, Url};

/// Longest canonical URL (or raw input) accepted, in bytes.
pub const MAX_ITEM_BYTES: usize = 8192;

/// Whether an item is a URL or a bare host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Url,
    Host,
}

/// A canonical item.
///
/// ```
/// let item = crawlq::normalize::normalize("HTTP://Example.COM:80/a/../b#frag").unwrap();
/// assert_eq!(item.canonical, "http://example.com/b");
/// assert_eq!(item.host, "example.com");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub kind: ItemKind,
    /// The canonical URL, or the canonical host for host items.
    pub canonical: String,
    /// The host of the item (punycode, no port, no trailing dot; IPv6 in brackets).
    pub host: String,
}

impl Normalized {
    /// The fingerprint used for de-duplication.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.canonical)
    }
}

/// How items are grouped for politeness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostKeyMode {
    /// One politeness key per host name (`www.example.com` and `example.com` are separate).
    #[default]
    Host,
    /// One key per registrable domain from the Public Suffix List (`www.example.co.uk` and
    /// `shop.example.co.uk` share `example.co.uk`). IP addresses and names without a
    /// registrable domain keep their host.
    Domain,
}

/// The 128-bit XXH3 hash of an item's canonical form (seed 0, big-endian bytes).
///
/// ```
/// let fp = crawlq::normalize::Fingerprint::of("http://example.com/");
/// assert_eq!(fp.hex().len(), 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 16]);

impl Fingerprint {
    pub fn of(canonical: &str) -> Fingerprint {
        Fingerprint(xxhash_rust::xxh3::xxh3_128(canonical.as_bytes()).to_be_bytes())
    }

    /// Lowercase hex of the 16 bytes.
    pub fn hex(&self) -> String {
        use std::fmt::Write;
        self.0.iter().fold(String::with_capacity(32), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// The member stored in the seen set: bytes 0..8 as a signed 64-bit integer, so Redis keeps
    /// the set as a compact intset.
    pub fn seen_member(&self) -> i64 {
        i64::from_be_bytes(self.0[0..8].try_into().expect("8 bytes"))
    }

    /// Chooses the seen bucket: bytes 8..12 as an unsigned 32-bit integer.
    pub fn bucket_hash(&self) -> u32 {
        u32::from_be_bytes(self.0[8..12].try_into().expect("4 bytes"))
    }
}

/// An item's member in the live set (the items queued or leased now), which lets a forced seed
/// tell a finished item from one still in the queue. SHA-1 of the item's identity (its canonical
/// URL, or its host key for a host item): the first 13 hex digits are the member (52 bits, so
/// the scripts compute the same value exactly), the next 8 choose the bucket. See
/// docs/PROTOCOL.md, "Live set".
///
/// ```
/// let live = crawlq::normalize::LiveMember::of("http://example.com/");
/// assert!(live.member < 1 << 52);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LiveMember {
    pub member: u64,
    pub bucket_hash: u32,
}

impl LiveMember {
    pub fn of(identity: &str) -> LiveMember {
        let digest = sha1_smol::Sha1::from(identity).digest().bytes();
        let head = u64::from_be_bytes(digest[0..8].try_into().expect("8 bytes"));
        let next = u64::from_be_bytes(digest[4..12].try_into().expect("8 bytes"));
        LiveMember {
            member: head >> 12,
            // hex digits 14..=21: bits 52..84 of the digest
            bucket_hash: ((next >> 12) & 0xffff_ffff) as u32,
        }
    }
}

/// The shard of a host key in a queue of `shards` shards: XXH3-64 (seed 0) of the host key's
/// UTF-8 bytes, modulo `shards`. A URL's host fixes its shard, so every item of one host (its
/// lanes, politeness, de-duplication) lives in one shard. See docs/PROTOCOL.md, "Shards".
///
/// ```
/// assert_eq!(crawlq::normalize::shard_of("example.com", 1), 0);
/// assert!(crawlq::normalize::shard_of("example.com", 8) < 8);
/// ```
pub fn shard_of(host_key: &str, shards: u32) -> u32 {
    (xxhash_rust::xxh3::xxh3_64(host_key.as_bytes()) % u64::from(shards.max(1))) as u32
}

/// The longest de-duplication key a caller may give, in bytes.
pub const MAX_KEY_BYTES: usize = 2048;

/// Check a caller's de-duplication key ([`crate::SeedItem::key`]): 1 to 2,048 bytes of text
/// without control characters (U+0000..U+001F, U+007F), used exactly as given (no trimming, no
/// case folding). Its fingerprint is computed like a canonical form's, so a key equal to an
/// item's canonical URL is that item.
///
/// ```
/// use crawlq::normalize::check_key;
/// assert!(check_key("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b").is_ok());
/// assert_eq!(check_key("").unwrap_err().code(), "invalid_key");
/// assert_eq!(check_key("a\nb").unwrap_err().code(), "invalid_key");
/// ```
pub fn check_key(key: &str) -> Result<(), InvalidReason> {
    if key.is_empty() {
        return Err(InvalidReason::InvalidKey("empty".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(InvalidReason::InvalidKey(format!(
            "{} bytes, at most {MAX_KEY_BYTES} allowed",
            key.len()
        )));
    }
    if let Some(c) = key.chars().find(|c| c.is_ascii_control()) {
        return Err(InvalidReason::InvalidKey(format!(
            "control character U+{:04X}",
            c as u32
        )));
    }
    Ok(())
}

/// The longest crawl name, in bytes.
pub const MAX_CRAWL_BYTES: usize = 64;

/// Check a crawl name ([`crate::SeedOptions::crawl`]): 1 to 64 bytes of printable ASCII
/// (`!` to `~`) other than `"`, `\`, `{`, `}` and `:`. The name goes into records and keys
/// as it is: no escaping, no hash tag, no separator of its own.
///
/// ```
/// use crawlq::normalize::check_crawl;
/// assert!(check_crawl("customer-42/recrawl.2026").is_ok());
/// assert!(check_crawl("").is_err());
/// assert!(check_crawl("a:b").is_err());
/// assert!(check_crawl("caf\u{e9}").is_err());
/// ```
pub fn check_crawl(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("crawl name is empty".into());
    }
    if name.len() > MAX_CRAWL_BYTES {
        return Err(format!(
            "crawl name of {} bytes, at most {MAX_CRAWL_BYTES} allowed",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '"' | '\\' | '{' | '}' | ':'))
    {
        return Err(format!(
            "crawl name {name:?} holds {c:?}: only printable ASCII other than \" \\ {{ }} : is allowed"
        ));
    }
    Ok(())
}

/// An item's identity within its crawl: the crawl's name, a NUL byte, then the identity (its
/// caller key, canonical URL or host key). The fingerprint and the live member of an item of a
/// named crawl are those of this, so de-duplication is per crawl; the default crawl's identity
/// is the item's own (today's fingerprints). Identities hold no control character, so no two
/// crawls' scoped identities meet.
///
/// ```
/// use crawlq::normalize::scoped_identity;
/// assert_eq!(scoped_identity(None, "http://a.com/"), "http://a.com/");
/// assert_eq!(scoped_identity(Some("jobs"), "http://a.com/"), "jobs\0http://a.com/");
/// ```
pub fn scoped_identity<'a>(crawl: Option<&str>, identity: &'a str) -> std::borrow::Cow<'a, str> {
    match crawl {
        None => std::borrow::Cow::Borrowed(identity),
        Some(crawl) => std::borrow::Cow::Owned(format!("{crawl}\0{identity}")),
    }
}

/// Canonicalize one input (URL or bare host).
///
/// ```
/// use crawlq::normalize::{normalize, ItemKind};
/// let host = normalize("  Example.COM.  ").unwrap();
/// assert_eq!((host.kind, host.canonical.as_str()), (ItemKind::Host, "example.com"));
/// assert_eq!(normalize("example.com/path").unwrap_err().code(), "invalid_url");
/// assert_eq!(normalize("mailto:team@example.com").unwrap_err().code(), "unsupported_scheme");
/// ```
pub fn normalize(input: &str) -> Result<Normalized, InvalidReason> {
    let trimmed = checked_input(input)?;
    if trimmed.contains("://") {
        normalize_url(trimmed, None)
    } else if let Some(scheme) = opaque_scheme(trimmed) {
        // (`mailto:`, `javascript:`, `tel:`: refused for their scheme, as on a page)
        Err(InvalidReason::UnsupportedScheme(scheme))
    } else if !trimmed.starts_with('[') && trimmed.contains(['/', ':', '?', '#', '@']) {
        let lower = trimmed.get(..6).unwrap_or(trimmed).to_ascii_lowercase();
        Err(InvalidReason::InvalidUrl(
            if lower.starts_with("http:") || lower.starts_with("https:") {
                "no // after the scheme: start URLs with http:// or https://"
            } else {
                "no scheme: start URLs with http:// or https://, or give a bare host"
            }
            .into(),
        ))
    } else {
        let host = normalize_host(trimmed)?;
        Ok(Normalized {
            kind: ItemKind::Host,
            canonical: host.clone(),
            host,
        })
    }
}

/// The scheme (lowercase) of an input without `://` that starts with one other than `http` and
/// `https` (`mailto:x@a.com`, `javascript:void(0)`, `tel:+1555`, `data:,x`); `None` when what
/// comes before the colon reads as a host (`example.com:8080`, `localhost:3000/x`,
/// `example.com:x`: a host, and a port or not, without a scheme) or the scheme is HTTP's
/// (`http:example.com`: a URL without its `//`). (A scheme may hold dots; one that does is
/// read as a host here, which the links a crawler meets never need.)
fn opaque_scheme(input: &str) -> Option<String> {
    let (scheme, rest) = input.split_once(':')?;
    let mut chars = scheme.chars();
    let scheme_syntax = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-'));
    let port_digits = rest.split(['/', '?', '#']).next().unwrap_or("");
    let is_port = !port_digits.is_empty() && port_digits.bytes().all(|b| b.is_ascii_digit());
    let scheme = scheme.to_ascii_lowercase();
    (scheme_syntax && !is_port && scheme != "http" && scheme != "https").then_some(scheme)
}

/// Canonicalize a link found on the page at `page` (a canonical URL): a URL reference,
/// resolved against the page's URL as a browser resolves an `href` (`/about`, `next.html`,
/// `?page=2`, `//cdn.example/x`; an absolute URL is itself), then canonicalized as
/// [`normalize`] canonicalizes URLs. With no page (a page that is a host item), the link is an
/// input as [`normalize`] takes it (a URL or a bare host).
///
/// ```
/// use crawlq::normalize::normalize_link;
/// let page = url::Url::parse("https://example.com/docs/intro.html").unwrap();
/// let canonical = |link| normalize_link(link, Some(&page)).map(|n| n.canonical);
/// assert_eq!(canonical("next.html").unwrap(), "https://example.com/docs/next.html");
/// assert_eq!(canonical("/about#team").unwrap(), "https://example.com/about");
/// assert_eq!(canonical("//CDN.example.org/x").unwrap(), "https://cdn.example.org/x");
/// assert_eq!(canonical("HTTP://b.com/").unwrap(), "http://b.com/");
/// assert_eq!(canonical("mailto:team@example.com").unwrap_err().code(), "unsupported_scheme");
/// assert_eq!(normalize_link("next.html", None).unwrap().canonical, "next.html"); // a host
/// ```
pub fn normalize_link(input: &str, page: Option<&Url>) -> Result<Normalized, InvalidReason> {
    match page {
        None => normalize(input),
        Some(page) => normalize_url(checked_input(input)?, Some(page)),
    }
}

/// `input` trimmed of whitespace, refused when empty or too long.
fn checked_input(input: &str) -> Result<&str, InvalidReason> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(InvalidReason::Empty);
    }
    if trimmed.len() > MAX_ITEM_BYTES {
        return Err(InvalidReason::TooLong {
            len: trimmed.len(),
            max: MAX_ITEM_BYTES,
        });
    }
    Ok(trimmed)
}

fn normalize_url(input: &str, base: Option<&Url>) -> Result<Normalized, InvalidReason> {
    let mut url = Url::options().base_url(base).parse(input).map_err(|e| {
        InvalidReason::InvalidUrl(match e {
            url::ParseError::IdnaError | url::ParseError::InvalidDomainCharacter => {
                host_character_reason(url_host_text(input)).unwrap_or_else(|| e.to_string())
            }
            _ => e.to_string(),
        })
    })?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(InvalidReason::UnsupportedScheme(url.scheme().to_string()));
    }
    url.set_fragment(None);
    let host = match url.host() {
        Some(Host::Domain(d)) => {
            let stripped = d.strip_suffix('.').unwrap_or(d).to_string();
            check_hostname(&stripped)?;
            if stripped.len() != d.len() {
                url.set_host(Some(&stripped))
                    .map_err(|e| InvalidReason::InvalidHost(e.to_string()))?;
            }
            stripped
        }
        Some(Host::Ipv4(ip)) => ip.to_string(),
        Some(Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return Err(InvalidReason::InvalidHost("URL has no host".into())),
    };
    let canonical = String::from(url);
    if canonical.len() > MAX_ITEM_BYTES {
        return Err(InvalidReason::TooLong {
            len: canonical.len(),
            max: MAX_ITEM_BYTES,
        });
    }
    Ok(Normalized {
        kind: ItemKind::Url,
        canonical,
        host,
    })
}

impl Normalized {
    /// This item with its query's parameters sorted (the `sort_query` option): `?b=2&a=1` and
    /// `?a=1&b=2` are then one item. Parameters are the `&`-separated parts of the canonical
    /// query, compared by name then value (the text before and after the first `=`) as bytes;
    /// a stable sort, so repeated equal parameters keep their order. Host items and URLs
    /// without a query are unchanged.
    ///
    /// ```
    /// let item = crawlq::normalize::normalize("http://a.com/p?b=2&a=1&a=0").unwrap();
    /// assert_eq!(item.with_sorted_query().canonical, "http://a.com/p?a=0&a=1&b=2");
    /// ```
    pub fn with_sorted_query(mut self) -> Normalized {
        if self.kind == ItemKind::Url {
            self.canonical = sort_query(&self.canonical);
        }
        self
    }
}

/// A canonical URL with its query's parameters sorted ([`Normalized::with_sorted_query`]).
pub fn sort_query(canonical: &str) -> String {
    let Some((before, query)) = canonical.split_once('?') else {
        return canonical.to_string();
    };
    let mut params: Vec<&str> = query.split('&').collect();
    params.sort_by(|a, b| {
        let split = |p: &str| -> (Vec<u8>, Vec<u8>) {
            match p.split_once('=') {
                Some((name, value)) => (name.as_bytes().to_vec(), value.as_bytes().to_vec()),
                None => (p.as_bytes().to_vec(), Vec::new()),
            }
        };
        split(a).cmp(&split(b))
    });
    format!("{before}?{}", params.join("&"))
}

/// Canonicalize a bare host: trimmed, lowercased, IDNA to punycode, trailing dot stripped,
/// validated as a hostname or IP address (IPv6 in brackets).
///
/// ```
/// assert_eq!(crawlq::normalize::normalize_host("BÜCHER.example.").unwrap(), "xn--bcher-kva.example");
/// assert!(crawlq::normalize::normalize_host("bad host").is_err());
/// ```
pub fn normalize_host(input: &str) -> Result<String, InvalidReason> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(InvalidReason::Empty);
    }
    let without_dot = trimmed.strip_suffix('.').unwrap_or(trimmed);
    let parsed = Host::parse(without_dot).map_err(|e| {
        let named = (!without_dot.starts_with('[')).then(|| host_character_reason(without_dot));
        InvalidReason::InvalidHost(named.flatten().unwrap_or_else(|| e.to_string()))
    })?;
    match parsed {
        Host::Domain(d) => {
            check_hostname(&d)?;
            Ok(d)
        }
        Host::Ipv4(ip) => Ok(ip.to_string()),
        Host::Ipv6(ip) => Ok(format!("[{ip}]")),
    }
}

/// The reason a host's text cannot be a host name when it holds a character no host name may
/// hold (a space, a control character, or one of WHATWG's forbidden domain code points), named
/// instead of the URL parser's "invalid international domain name"; `None` when it holds none.
fn host_character_reason(host: &str) -> Option<String> {
    host.chars()
        .find(|c| {
            c.is_control()
                || c.is_whitespace()
                || matches!(
                    c,
                    '#' | '/' | ':' | '<' | '>' | '?' | '@' | '[' | '\\' | ']' | '^' | '|' | '%'
                )
        })
        .map(|c| format!("character {c:?} is not allowed in a host name"))
}

/// The host's text in a URL that failed to parse: what stands between `://` and the path, query
/// or fragment, without user info and port.
fn url_host_text(input: &str) -> &str {
    let after_scheme = input.split_once("://").map_or(input, |(_, rest)| rest);
    let authority = after_scheme
        .split(['/', '?', '#', '\\'])
        .next()
        .unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    match host_port.rsplit_once(':') {
        Some((host, port))
            if !host_port.starts_with('[') && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            host
        }
        _ => host_port,
    }
}

/// RFC 1123 hostname rules after IDNA, allowing `_` (common in real host names): labels of
/// 1..=63 characters from `[a-z0-9_-]`, not starting or ending with `-`, 253 characters in all.
fn check_hostname(host: &str) -> Result<(), InvalidReason> {
    if host.is_empty() {
        return Err(InvalidReason::InvalidHost("empty host".into()));
    }
    if host.len() > 253 {
        return Err(InvalidReason::InvalidHost(format!(
            "{} characters, at most 253 allowed",
            host.len()
        )));
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Err(InvalidReason::InvalidHost("empty label".into()));
        }
        if label.len() > 63 {
            return Err(InvalidReason::InvalidHost(format!(
                "label of {} characters, at most 63 allowed",
                label.len()
            )));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(InvalidReason::InvalidHost(format!(
                "label {label:?} starts or ends with '-'"
            )));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
        {
            return Err(InvalidReason::InvalidHost(format!(
                "character {c:?} is not allowed in a host name"
            )));
        }
    }
    Ok(())
}

/// Resolve `href` (as found in a page) against the page's URL, as a browser does; `None` when
/// either is not a URL. The result is not canonicalized: seeding does that.
///
/// ```
/// assert_eq!(crawlq::normalize::resolve("http://a.com/x/y", "../z?q#f").as_deref(), Some("http://a.com/z?q#f"));
/// assert_eq!(crawlq::normalize::resolve("not a url", "/z"), None);
/// ```
pub fn resolve(base: &str, href: &str) -> Option<String> {
    Url::parse(base).ok()?.join(href).ok().map(String::from)
}

/// The politeness key of a canonical host.
///
/// ```
/// use crawlq::normalize::{host_key, HostKeyMode};
/// # #[cfg(feature = "registrable-domain")]
/// assert_eq!(host_key("www.example.co.uk", HostKeyMode::Domain), "example.co.uk");
/// assert_eq!(host_key("www.example.co.uk", HostKeyMode::Host), "www.example.co.uk");
/// ```
pub fn host_key(host: &str, mode: HostKeyMode) -> String {
    match mode {
        HostKeyMode::Host => host.to_string(),
        HostKeyMode::Domain => registrable_domain(host),
    }
}

#[cfg(feature = "registrable-domain")]
fn registrable_domain(host: &str) -> String {
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return host.to_string();
    }
    psl::domain_str(host).unwrap_or(host).to_string()
}

/// Without the Public Suffix List, `Config::validate` refuses `host_key = domain`, so this is
/// not reached; the host is the safe answer (stricter politeness would not be).
#[cfg(not(feature = "registrable-domain"))]
fn registrable_domain(host: &str) -> String {
    host.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_canonicalized() {
        let cases = [
            ("HTTP://Example.COM/", "http://example.com/"),
            ("https://example.com:443/a", "https://example.com/a"),
            ("http://example.com:8080/a", "http://example.com:8080/a"),
            ("http://example.com/a#top", "http://example.com/a"),
            ("http://example.com./a", "http://example.com/a"),
            ("http://bücher.de/", "http://xn--bcher-kva.de/"),
            ("http://example.com/a/./b/../c", "http://example.com/a/c"),
            ("  http://example.com  ", "http://example.com/"),
            ("http://example.com/a b", "http://example.com/a%20b"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).unwrap().canonical, want, "{input}");
        }
    }

    #[test]
    fn invalid_inputs_have_codes() {
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("ftp://example.com/", "unsupported_scheme"),
            ("http://", "invalid_url"),
            ("example.com:8080", "invalid_url"),
            ("localhost:3000/x", "invalid_url"),
            ("example.com:x", "invalid_url"),
            ("http:example.com", "invalid_url"),
            ("mailto:someone@example.com", "unsupported_scheme"),
            ("JavaScript:void(0)", "unsupported_scheme"),
            ("tel:+1-555-0100", "unsupported_scheme"),
            ("data:text/plain,hi", "unsupported_scheme"),
            ("about:blank", "unsupported_scheme"),
            ("exa mple.com", "invalid_host"),
            ("-bad.example.com", "invalid_host"),
            ("a..b", "invalid_host"),
        ];
        for (input, code) in cases {
            assert_eq!(normalize(input).unwrap_err().code(), code, "{input:?}");
        }
    }

    #[test]
    fn a_url_without_its_slashes_is_told_so() {
        for (input, why) in [
            ("http:example.com", "no // after the scheme"),
            ("HTTPS:/example.com/a", "no // after the scheme"),
            ("example.com/a", "no scheme"),
            ("localhost:3000", "no scheme"),
        ] {
            let reason = normalize(input).unwrap_err();
            assert_eq!(reason.code(), "invalid_url", "{input}");
            assert!(reason.to_string().contains(why), "{input}: {reason}");
        }
    }

    #[test]
    fn a_character_no_host_may_hold_is_named() {
        let cases = [
            (
                "exa mple.com",
                "not a valid host: character ' ' is not allowed in a host name",
            ),
            (
                "bad url",
                "not a valid host: character ' ' is not allowed in a host name",
            ),
            (
                "a<b>.com",
                "not a valid host: character '<' is not allowed in a host name",
            ),
            (
                "a\u{3000}b.com",
                "not a valid host: character '\\u{3000}' is not allowed in a host name",
            ),
            (
                "https://exa mple.com/x y",
                "not a valid URL: character ' ' is not allowed in a host name",
            ),
            (
                "http://user:pw@a|b.com:8080/p",
                "not a valid URL: character '|' is not allowed in a host name",
            ),
            (
                "http://a%zz.com/",
                "not a valid URL: character '%' is not allowed in a host name",
            ),
        ];
        for (input, reason) in cases {
            assert_eq!(
                normalize(input).unwrap_err().to_string(),
                reason,
                "{input:?}"
            );
        }
        // other failures keep the parser's own words
        assert_eq!(
            normalize("http://a.com:99999/").unwrap_err().to_string(),
            "not a valid URL: invalid port number"
        );
    }

    #[test]
    fn fingerprint_parts_are_stable() {
        let fp = Fingerprint::of("http://example.com/");
        assert_eq!(fp.seen_member().to_be_bytes(), fp.0[0..8]);
        assert_eq!(fp.bucket_hash().to_be_bytes(), fp.0[8..12]);
        assert_ne!(fp, Fingerprint::of("example.com"));
    }
}
