//! What a seed call takes (items, options) and answers (report, progress).

use crate::error::InvalidReason;
use serde_json::Value;
use std::time::Duration;

/// One item to seed: a URL or a bare host, with optional per-item overrides of the batch's
/// [`SeedOptions`].
///
/// ```
/// let item = crawlq::SeedItem::from("https://example.com/")
///     .with_priority(5)
///     .with_payload(serde_json::json!({"depth": 1}));
/// assert_eq!(item.priority, Some(5));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedItem {
    pub input: String,
    pub priority: Option<i64>,
    pub delay: Option<Duration>,
    pub payload: Option<Value>,
    pub force: Option<bool>,
    /// The item's identity for de-duplication instead of its canonical URL (or host): a
    /// caller's fingerprint that includes a method or body, a crawler's unique key. Two items
    /// with one key are one item, whatever their URLs; a key equal to a canonical URL is that
    /// URL. See [`normalize::check_key`](crate::normalize::check_key) for what a key may be.
    pub key: Option<String>,
    /// Refused before it is looked at: the reason a binding found reading one of its fields (a
    /// delay or priority that is not a number in range, a payload with a NaN). The seed report
    /// lists it with its index and this reason, and the rest of the batch is seeded.
    pub refused: Option<crate::InvalidReason>,
}

impl SeedItem {
    pub fn with_priority(mut self, priority: i64) -> SeedItem {
        self.priority = Some(priority);
        self
    }
    pub fn with_delay(mut self, delay: Duration) -> SeedItem {
        self.delay = Some(delay);
        self
    }
    pub fn with_payload(mut self, payload: Value) -> SeedItem {
        self.payload = Some(payload);
        self
    }
    pub fn with_force(mut self, force: bool) -> SeedItem {
        self.force = Some(force);
        self
    }
    pub fn with_key(mut self, key: impl Into<String>) -> SeedItem {
        self.key = Some(key.into());
        self
    }
    /// Refuse this item with `reason` (see [`SeedItem::refused`]).
    ///
    /// ```
    /// let item = crawlq::SeedItem::from("https://example.com/")
    ///     .with_refusal(crawlq::InvalidReason::InvalidDelay("NaN".into()));
    /// assert_eq!(item.refused.unwrap().code(), "invalid_delay");
    /// ```
    pub fn with_refusal(mut self, reason: crate::InvalidReason) -> SeedItem {
        self.refused = Some(reason);
        self
    }
}

impl From<&str> for SeedItem {
    fn from(input: &str) -> SeedItem {
        SeedItem {
            input: input.to_string(),
            ..SeedItem::default()
        }
    }
}

impl From<String> for SeedItem {
    fn from(input: String) -> SeedItem {
        SeedItem {
            input,
            ..SeedItem::default()
        }
    }
}

/// Batch-wide seed options; each [`SeedItem`] may override them.
///
/// ```
/// let opts = crawlq::SeedOptions { priority: 10, ..Default::default() };
/// assert!(!opts.force);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedOptions {
    /// Higher is leased first; within `-32768..=32767`.
    pub priority: i64,
    /// Not leasable before this much time has passed.
    pub delay: Duration,
    /// JSON payload stored with every item of the batch (unless an item has its own).
    pub payload: Option<Value>,
    /// Queue even if the item was seen before (the seen set is left as it is).
    pub force: bool,
    /// The named crawl to seed into (`None`: the default crawl). De-duplication is per crawl:
    /// a URL may be queued in two crawls at once. A crawl's items share their hosts'
    /// politeness with every other crawl of the queue, and crawls with due work are leased
    /// from in turn (docs/crawls.md). A name is 1 to 64 bytes of printable ASCII other than
    /// `"`, `\`, `{`, `}` and `:` ([`crate::normalize::check_crawl`]); another is refused
    /// with [`crate::Error::InvalidArgument`] for the whole call.
    ///
    /// ```
    /// let opts = crawlq::SeedOptions { crawl: Some("customer-42".into()), ..Default::default() };
    /// assert_eq!(opts.crawl.as_deref(), Some("customer-42"));
    /// ```
    pub crawl: Option<String>,
}

/// An item that was refused, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidInput {
    /// Position in the seeded batch (0-based).
    pub index: usize,
    pub input: String,
    pub reason: InvalidReason,
}

/// What a seed call did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedReport {
    /// Items queued (including ones queued again by `force`).
    pub added: u64,
    /// Items not queued because they were seen before (in this batch or the queue's past).
    pub duplicates: u64,
    /// Items refused, with their index, input and reason.
    pub invalid: Vec<InvalidInput>,
    /// One entry per item of the batch, in its order: the id the item was queued under (the
    /// id its lease will carry), or `None` for a duplicate or an invalid item.
    pub ids: Vec<Option<String>>,
}

impl SeedReport {
    /// Fold the report of a later part of the same batch into this one.
    pub fn merge(&mut self, other: SeedReport) {
        self.added += other.added;
        self.duplicates += other.duplicates;
        self.invalid.extend(other.invalid);
        self.ids.extend(other.ids);
    }
}

/// Progress of a long seed call, reported after each round trip.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeedProgress {
    pub done: usize,
    pub total: usize,
    pub added: u64,
    pub duplicates: u64,
    pub invalid: usize,
}

impl SeedProgress {
    /// The progress of a seed call that has handled `done` of `total` items so far.
    pub(crate) fn of(report: &SeedReport, done: usize, total: usize) -> Self {
        SeedProgress {
            done,
            total,
            added: report.added,
            duplicates: report.duplicates,
            invalid: report.invalid.len(),
        }
    }
}
