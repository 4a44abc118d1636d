//! The canonical forms of absolute links a client met before, so that a link a crawl meets on
//! page after page (a site's navigation, its footer) is parsed once, not on every page.
//!
//! A link's canonical form, host key and fingerprint depend only on its text and the queue's
//! configuration (`sort_query`, `host_key`), which a client's queue keeps for its life, so the
//! memo answers exactly what [`crate::normalize::normalize_link`] would. It holds only links
//! whose text starts with `http://` or `https://` (absolute whatever the page they were found
//! on), and only those that canonicalize without error. A link is found by the 128-bit XXH3
//! hash of its text, the hash [`Fingerprint`] takes of canonical forms: the memo relies on it
//! as de-duplication already does. It is on with the known-seen cache
//! ([`crate::Config::seen_cache`]): the links it saves parsing are the ones that cache then
//! answers without Redis.

use crate::error::InvalidReason;
use crate::normalize::{self, Fingerprint, HostKeyMode, ItemKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most links the memo holds: about 2.5 MiB of the process's memory when full (about 300-400
/// bytes a link: its canonical form, host key and entry). A crawl's links that repeat (its
/// sites' navigation) are fewer; the others pass through, a link met once costing about a
/// third more than canonicalizing it alone.
pub const LINK_MEMO_ENTRIES: usize = 8_192;

/// What a link canonicalizes to, with the queue's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalLink {
    pub kind: ItemKind,
    /// The canonical URL (or host, for a host item).
    pub canonical: Arc<str>,
    /// Its politeness key ([`normalize::host_key`]).
    pub host_key: Arc<str>,
    /// The fingerprint of `canonical` (an item's identity without a caller key or crawl).
    pub fingerprint: Fingerprint,
}

impl CanonicalLink {
    /// Canonicalize `input`, found on the page at `page` (none: an input as `seed` takes it).
    ///
    /// ```
    /// use crawlq::link_memo::CanonicalLink;
    /// use crawlq::normalize::HostKeyMode;
    /// let link = CanonicalLink::of("HTTP://Example.COM/b?z=1&a=2", None, true, HostKeyMode::Host).unwrap();
    /// assert_eq!(&*link.canonical, "http://example.com/b?a=2&z=1");
    /// assert_eq!(&*link.host_key, "example.com");
    /// ```
    pub fn of(
        input: &str,
        page: Option<&url::Url>,
        sort_query: bool,
        host_key: HostKeyMode,
    ) -> Result<CanonicalLink, InvalidReason> {
        let mut normalized = normalize::normalize_link(input, page)?;
        if sort_query {
            normalized = normalized.with_sorted_query();
        }
        Ok(CanonicalLink {
            kind: normalized.kind,
            fingerprint: normalized.fingerprint(),
            host_key: normalize::host_key(&normalized.host, host_key).into(),
            canonical: normalized.canonical.into(),
        })
    }
}

/// Whether `input` means the same URL on every page: an absolute `http`/`https` URL (the only
/// texts the memo keeps, so it needs no page in its key).
fn absolute(input: &str) -> bool {
    input.starts_with("https://") || input.starts_with("http://")
}

/// Two generations, as the known-seen cache keeps its fingerprints: links go into the recent
/// one; when it holds half the bound the older one is dropped and the recent one becomes it,
/// and a link found in the older one moves back to the recent one, so links met on every page
/// stay while links met once make room.
#[derive(Default)]
struct Generations {
    recent: HashMap<u128, CanonicalLink, foldhash::fast::RandomState>,
    older: HashMap<u128, CanonicalLink, foldhash::fast::RandomState>,
}

/// See the module documentation.
pub struct LinkMemo {
    capacity: usize,
    held: Mutex<Generations>,
}

impl std::fmt::Debug for LinkMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkMemo")
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl LinkMemo {
    /// A memo of at most `capacity` links (0: off, every link is canonicalized).
    pub fn new(capacity: usize) -> LinkMemo {
        LinkMemo {
            capacity,
            held: Mutex::new(Generations::default()),
        }
    }

    /// What `input` (found on the page at `page`) canonicalizes to, from the memo when it holds
    /// it; `sort_query` and `host_key` must be the same on every call (the queue's).
    ///
    /// ```
    /// use crawlq::link_memo::LinkMemo;
    /// use crawlq::normalize::HostKeyMode;
    /// let memo = LinkMemo::new(100);
    /// let first = memo.canonical("https://a.example/x", None, false, HostKeyMode::Host).unwrap();
    /// let again = memo.canonical("https://a.example/x", None, false, HostKeyMode::Host).unwrap();
    /// assert_eq!((first, memo.len()), (again, 1));
    /// ```
    pub fn canonical(
        &self,
        input: &str,
        page: Option<&url::Url>,
        sort_query: bool,
        host_key: HostKeyMode,
    ) -> Result<CanonicalLink, InvalidReason> {
        if self.capacity == 0 || !absolute(input) {
            return CanonicalLink::of(input, page, sort_query, host_key);
        }
        let text = xxhash_rust::xxh3::xxh3_128(input.as_bytes());
        {
            let mut held = self.held.lock().expect("link memo");
            if let Some(link) = held.recent.get(&text) {
                return Ok(link.clone());
            }
            if let Some(link) = held.older.remove(&text) {
                self.keep(&mut held, text, link.clone());
                return Ok(link);
            }
        }
        // (canonicalized outside the lock: other tasks' links go on meanwhile)
        let link = CanonicalLink::of(input, page, sort_query, host_key)?;
        let mut held = self.held.lock().expect("link memo");
        self.keep(&mut held, text, link.clone());
        Ok(link)
    }

    fn keep(&self, held: &mut Generations, text: u128, link: CanonicalLink) {
        if held.recent.len() >= (self.capacity / 2).max(1) {
            // (the older generation's table is reused: no growing from empty each time)
            std::mem::swap(&mut held.recent, &mut held.older);
            held.recent.clear();
        }
        if held.recent.len() + held.older.len() >= self.capacity {
            held.older.clear();
        }
        held.recent.insert(text, link);
    }

    /// Links held now (both generations).
    pub fn len(&self) -> usize {
        let held = self.held.lock().expect("link memo");
        held.recent.len() + held.older.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINKS: &[&str] = &[
        "https://Example.COM:443/a/../b?z=1&a=2#frag",
        "http://xn--bcher-kva.example/ü?q=ä b",
        "https://bücher.example/",
        "http://[::1]:8080/x",
        "http://127.0.0.1/",
        "https://www.example.co.uk/p?b&a",
        "next.html",
        "/about",
        "//cdn.example.org/x",
        "https:relative",
        "http:/one-slash",
        "mailto:team@example.com",
        "https://exa mple.com/",
        "https://",
    ];

    /// The memo answers what canonicalizing the link answers, on every page and configuration,
    /// the first time and from the memo; it keeps only the absolute links it could canonicalize.
    #[test]
    fn answers_what_canonicalizing_answers() {
        let pages = [
            None,
            Some(url::Url::parse("https://page.example/dir/index.html").unwrap()),
            Some(url::Url::parse("http://other.example/").unwrap()),
        ];
        let modes = [HostKeyMode::Host, HostKeyMode::Domain];
        for sort_query in [false, true] {
            for mode in modes {
                if mode == HostKeyMode::Domain && !cfg!(feature = "registrable-domain") {
                    continue;
                }
                let memo = LinkMemo::new(1000);
                for round in 0..3 {
                    for page in &pages {
                        for link in LINKS {
                            let fresh = CanonicalLink::of(link, page.as_ref(), sort_query, mode);
                            let memo_said = memo.canonical(link, page.as_ref(), sort_query, mode);
                            assert_eq!(
                                memo_said, fresh,
                                "{link} on {page:?}, round {round}, sort_query {sort_query}"
                            );
                        }
                    }
                }
                let kept = LINKS
                    .iter()
                    .filter(|l| absolute(l) && CanonicalLink::of(l, None, false, mode).is_ok())
                    .count();
                assert_eq!(memo.len(), kept);
                assert!(kept >= 5, "the vector has absolute links the memo keeps");
            }
        }
    }

    #[test]
    fn stays_within_its_bound_and_keeps_links_met_again() {
        let memo = LinkMemo::new(10);
        let nav = "https://site.example/nav";
        for i in 0..100 {
            memo.canonical(nav, None, false, HostKeyMode::Host).unwrap();
            let once = format!("https://site.example/page/{i}");
            let link = memo
                .canonical(&once, None, false, HostKeyMode::Host)
                .unwrap();
            assert_eq!(&*link.canonical, once);
            assert!(memo.len() <= 10, "{} links held", memo.len());
        }
        let nav = xxhash_rust::xxh3::xxh3_128(nav.as_bytes());
        let held = memo.held.lock().unwrap();
        assert!(held.recent.contains_key(&nav) || held.older.contains_key(&nav));
    }

    #[test]
    fn off_holds_nothing() {
        let memo = LinkMemo::new(0);
        let link = memo
            .canonical("https://a.example/", None, false, HostKeyMode::Host)
            .unwrap();
        assert_eq!(&*link.canonical, "https://a.example/");
        assert!(memo.is_empty());
    }
}
