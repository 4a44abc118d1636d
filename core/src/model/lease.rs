//! Leases and their answers: what a lease call hands out and what ack, nack, extend and
//! release take and report.

use serde_json::Value;
use std::time::Duration;

/// A leased item. Hold on to it: ack, nack, extend and release take it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub id: String,
    /// The canonical URL, or `None` for a host item.
    pub url: Option<String>,
    /// The host key the item is scheduled under.
    pub host: String,
    /// The de-duplication key it was seeded with, if it had one.
    pub key: Option<String>,
    /// The named crawl it was seeded into (`None`: the default crawl).
    pub crawl: Option<String>,
    pub payload: Option<Value>,
    pub priority: i16,
    /// 1 on the first delivery, 2 on the first retry, ...
    pub attempt: u32,
    /// Fencing token: unique per lease, increasing. A call with a token that is no longer live
    /// changes nothing.
    pub token: u64,
    /// Server time of the lease, ms since epoch.
    pub leased_at_ms: i64,
    /// When the lease may be reclaimed, ms since epoch (server clock).
    pub expires_at_ms: i64,
    /// When the item was last queued, ms since epoch.
    pub enqueued_at_ms: i64,
    /// Why the previous attempt failed, if one did.
    pub last_error: Option<String>,
}

impl Lease {
    /// What ack, nack, extend and release need to find the lease.
    pub fn handle(&self) -> LeaseHandle {
        LeaseHandle {
            token: self.token,
            host: self.host.clone(),
            id: self.id.clone(),
            url: self.url.clone(),
            key: self.key.clone(),
            crawl: self.crawl.clone(),
        }
    }
}

/// The part of a [`Lease`] that identifies it. A lease is live only for its own token *and*
/// item id, so a stale token, even one that Redis handed out again after losing writes, cannot
/// answer for another item.
///
/// ```
/// let h = crawlq::LeaseHandle {
///     token: 7, id: "3".into(), host: "a.com".into(), url: None, key: None, crawl: None,
/// };
/// assert_eq!(h.lease_key(), "7:3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHandle {
    pub token: u64,
    pub host: String,
    pub id: String,
    /// The leased URL (`None` for a host item): ack uses it to take the item out of the live
    /// set.
    pub url: Option<String>,
    /// The item's de-duplication key, if it was seeded with one (then its live identity).
    pub key: Option<String>,
    /// The item's named crawl (`None`: the default crawl): its live identity is scoped to it
    /// ([`crate::normalize::scoped_identity`]).
    pub crawl: Option<String>,
}

impl LeaseHandle {
    /// The key of the lease in Redis: `<token>:<id>`.
    pub fn lease_key(&self) -> String {
        format!("{}:{}", self.token, self.id)
    }

    /// What identifies the item in the live set: its key, else its URL, else its host key
    /// (within its crawl: [`crate::normalize::scoped_identity`]).
    pub fn identity(&self) -> &str {
        self.key
            .as_deref()
            .or(self.url.as_deref())
            .unwrap_or(&self.host)
    }
}

/// A leased record that could not be decoded (written by another program, or with a payload
/// nested deeper than a reader accepts). The lease call sends it to dead letters with the
/// reason `undecodable: ...` instead of failing, and hands out the rest of the batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Undecodable {
    pub token: u64,
    pub id: String,
    /// The record as stored (lossy UTF-8).
    pub raw: String,
    /// Why it could not be decoded.
    pub error: String,
}

impl From<&Lease> for LeaseHandle {
    fn from(lease: &Lease) -> LeaseHandle {
        lease.handle()
    }
}

/// How to fail a lease.
///
/// ```
/// let o = crawlq::NackOptions { reason: Some("HTTP 503".into()), ..Default::default() };
/// assert!(o.retry);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NackOptions {
    /// Retry (default) or send straight to dead letters.
    pub retry: bool,
    /// Retry after exactly this long instead of the backoff policy.
    pub delay: Option<Duration>,
    /// Stored on the item as `last_error`.
    pub reason: Option<String>,
    /// The host answered "slow down" (HTTP 429, 503 with Retry-After...): the attempt is not
    /// counted, and the host's adaptive extra delay grows.
    pub rate_limited: bool,
    /// The host said when to try again (an HTTP `Retry-After`, [`crate::RetryAfter::parse`]):
    /// the retry waits at least that long, and so does every lease of the host. The adaptive
    /// slow-down of `rate_limited` applies as before, on top.
    pub retry_after: Option<crate::RetryAfter>,
    /// A JSON payload stored in place of the item's own, for its next attempt (or in its dead
    /// letter); `None` (or JSON null) keeps the stored payload.
    pub payload: Option<Value>,
}

impl Default for NackOptions {
    fn default() -> NackOptions {
        NackOptions {
            retry: true,
            delay: None,
            reason: None,
            rate_limited: false,
            retry_after: None,
            payload: None,
        }
    }
}

/// How to give a lease back ([`crate::Queue::release_with`]).
///
/// ```
/// let o = crawlq::ReleaseOptions { payload: Some(serde_json::json!({"page": 2})) };
/// assert_ne!(o, crawlq::ReleaseOptions::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReleaseOptions {
    /// A JSON payload stored in place of the item's own; `None` (or JSON null) keeps it.
    pub payload: Option<Value>,
}

/// The outcome of a nack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NackOutcome {
    /// Queued again (now or after a delay).
    Retried,
    /// Moved to dead letters.
    Dead,
    /// The lease was not live: nothing changed.
    Lost,
}

impl NackOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            NackOutcome::Retried => "retried",
            NackOutcome::Dead => "dead",
            NackOutcome::Lost => "lost",
        }
    }
}

impl std::fmt::Display for NackOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a reclaim call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimReport {
    /// Expired leases queued again.
    pub requeued: u64,
    /// Expired leases that had used up their attempts and went to dead letters.
    pub dead: u64,
    /// Expired leases left for a later call (beyond the limit).
    pub remaining: u64,
}

/// When acked items come back ([`crate::Queue::ack_revisit`], [`crate::Queue::ack_revisit_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revisit {
    /// This long after the ack (zero: never).
    After(Duration),
    /// At this time, ms since the epoch.
    At(i64),
}

/// What to do with leases handed back ([`crate::Queue::answer`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Done (queued again after the config's `revisit_after`, when it is set).
    Ack,
    /// Done, and queued again this much later (zero: never, whatever the config says).
    Revisit(Duration),
    /// Done, and queued again at this time (ms since the epoch, the Redis clock; a time
    /// already past: at once).
    RevisitAt(i64),
    Nack(NackOptions),
    /// Push the deadline to now + this.
    Extend(Duration),
    Release(ReleaseOptions),
}

/// How the block of code that held a lease ended, for the context managers of the bindings
/// (`with q.leased() as lease:`): it decides the answer ([`Answer::after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockEnd {
    /// The block finished: the work is done.
    Succeeded,
    /// The block failed with an error (its text becomes the nack reason).
    Failed(String),
    /// The block was interrupted (Ctrl-C, shutdown, task cancelled): not the item's fault.
    Interrupted,
}

impl Answer {
    /// The answer for a lease whose block ended so: ack a success, nack (retry with backoff) a
    /// failure with its reason, release an interruption untouched.
    ///
    /// ```
    /// use crawlq::{Answer, BlockEnd};
    /// assert_eq!(Answer::after(BlockEnd::Succeeded), Answer::Ack);
    /// assert_eq!(Answer::after(BlockEnd::Interrupted), Answer::Release(Default::default()));
    /// ```
    pub fn after(end: BlockEnd) -> Answer {
        match end {
            BlockEnd::Succeeded => Answer::Ack,
            BlockEnd::Failed(reason) => Answer::Nack(NackOptions {
                reason: Some(reason),
                ..NackOptions::default()
            }),
            BlockEnd::Interrupted => Answer::Release(ReleaseOptions::default()),
        }
    }
}

/// The per-lease results of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerResults {
    /// ack, release: `false` for a lease that was not live.
    Flags(Vec<bool>),
    /// nack.
    Outcomes(Vec<NackOutcome>),
    /// extend: the new deadline (ms since epoch), `None` for a lease that was not live.
    Deadlines(Vec<Option<i64>>),
}

/// What [`crate::Queue::answer`] did, for one lease or a list of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    pub results: AnswerResults,
    /// Whether the caller gave one lease (its result is one value) or a list.
    pub single: bool,
}

impl Answers {
    /// Which leases this answer finished (acked, nacked or released: their holder must not
    /// answer them again). An extend finishes nothing.
    pub fn finished(&self) -> Vec<bool> {
        match &self.results {
            AnswerResults::Flags(flags) => flags.clone(),
            AnswerResults::Outcomes(o) => o.iter().map(|o| *o != NackOutcome::Lost).collect(),
            AnswerResults::Deadlines(d) => vec![false; d.len()],
        }
    }

    /// The new deadlines of an extend (ms since epoch), to update the caller's lease objects.
    pub fn deadlines(&self) -> Option<&[Option<i64>]> {
        match &self.results {
            AnswerResults::Deadlines(d) => Some(d),
            _ => None,
        }
    }

    /// The results in a binding's style: one value for a single lease, an array for a list;
    /// flags as booleans, nack outcomes as `"retried"`/`"dead"`/`"lost"`, deadlines as the
    /// style's timestamps (seconds or milliseconds) or null.
    ///
    /// ```
    /// use crawlq::{AnswerResults, Answers, Style};
    /// let a = Answers { results: AnswerResults::Deadlines(vec![Some(1500), None]), single: false };
    /// assert_eq!(a.to_json(Style::Snake), serde_json::json!([1.5, null]));
    /// ```
    #[doc(hidden)] // for the bindings: their JSON boundary
    pub fn to_json(&self, style: crate::Style) -> Value {
        let values: Vec<Value> = match &self.results {
            AnswerResults::Flags(f) => f.iter().map(|b| Value::Bool(*b)).collect(),
            AnswerResults::Outcomes(o) => o.iter().map(|o| Value::from(o.as_str())).collect(),
            AnswerResults::Deadlines(d) => d
                .iter()
                .map(|d| {
                    d.map_or(Value::Null, |ms| {
                        crate::binding::json::time_value(ms, style)
                    })
                })
                .collect(),
        };
        crate::binding::json::one_or_many(values, self.single)
    }
}
