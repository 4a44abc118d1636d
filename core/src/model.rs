//! The values operations take and return.

use crate::config::DelayAfter;
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
        }
    }
}

/// The part of a [`Lease`] that identifies it. A lease is live only for its own token *and*
/// item id, so a stale token, even one that Redis handed out again after losing writes, cannot
/// answer for another item.
///
/// ```
/// let h = crawlq::LeaseHandle { token: 7, id: "3".into(), host: "a.com".into(), url: None, key: None };
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
}

impl LeaseHandle {
    /// The key of the lease in Redis: `<token>:<id>`.
    pub fn lease_key(&self) -> String {
        format!("{}:{}", self.token, self.id)
    }

    /// What identifies the item in the live set: its key, else its URL, else its host key.
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

/// Depth and counters of a queue, read in one O(1) script call per shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Server time of the reading, ms since epoch.
    pub now_ms: i64,
    /// ready + delayed: queued and not leased.
    pub pending: u64,
    /// Queued in host lanes, leasable as soon as politeness allows.
    pub ready: u64,
    /// Waiting for their delay or retry backoff.
    pub delayed: u64,
    /// Leased now (including expired leases not yet reclaimed).
    pub leased: u64,
    /// In dead letters.
    pub dead: u64,
    /// Acked over the queue's life.
    pub done: u64,
    /// Distinct items ever seeded.
    pub seen: u64,
    /// Hosts with at least one ready item.
    pub hosts: u64,
    /// Hosts held back by politeness right now (including ones with no ready item).
    pub hosts_waiting: u64,
    /// Age of the oldest item at the front of a host lane (its time since it was queued).
    pub oldest_pending_age_ms: Option<u64>,
    pub seeded_total: u64,
    pub duplicates_total: u64,
    pub leased_total: u64,
    pub acked_total: u64,
    pub nacked_total: u64,
    pub retried_total: u64,
    pub reclaimed_total: u64,
    pub released_total: u64,
    pub dead_total: u64,
    /// New URLs refused by a host budget ([`crate::Queue::set_host_budget`]).
    pub over_budget_total: u64,
    /// Acked items scheduled to come back ([`crate::Queue::ack_revisit`]); also in `delayed`.
    pub revisits: u64,
    /// Each shard's own figures, for a queue of several shards (empty for one shard).
    pub shards: Vec<Stats>,
}

impl Stats {
    /// Nothing queued and nothing leased in this reading (done and dead items do not count).
    /// An expired lease counts until a lease call or [`crate::Queue::reclaim`] takes it back.
    pub fn is_idle(&self) -> bool {
        self.pending == 0 && self.leased == 0
    }

    /// The figures that change whenever an item enters or leaves the queued and leased
    /// states: equal in two idle readings of a shard means it stayed idle in between.
    fn movement(&self) -> [u64; 4] {
        [
            self.seeded_total,
            self.leased_total,
            self.dead,
            self.dead_total,
        ]
    }

    /// Two readings of the same queue were idle throughout on every shard (each shard idle in
    /// both and nothing moved in between), so at one moment between them the whole queue was.
    pub fn idle_across(&self, later: &Stats) -> bool {
        if !self.is_idle() || !later.is_idle() || self.shards.len() != later.shards.len() {
            return false;
        }
        if self.shards.is_empty() {
            return self.movement() == later.movement();
        }
        self.shards
            .iter()
            .zip(&later.shards)
            .all(|(a, b)| a.movement() == b.movement())
    }

    /// The figures of a whole queue from its shards': sums, the latest reading time and the
    /// oldest pending age. One shard's figures are the queue's.
    pub fn total(mut shards: Vec<Stats>) -> Stats {
        if shards.len() == 1 {
            return shards.pop().expect("one shard");
        }
        let mut t = Stats::default();
        for s in &shards {
            t.now_ms = t.now_ms.max(s.now_ms);
            t.pending += s.pending;
            t.ready += s.ready;
            t.delayed += s.delayed;
            t.leased += s.leased;
            t.dead += s.dead;
            t.done += s.done;
            t.seen += s.seen;
            t.hosts += s.hosts;
            t.hosts_waiting += s.hosts_waiting;
            t.oldest_pending_age_ms = t.oldest_pending_age_ms.max(s.oldest_pending_age_ms);
            t.seeded_total += s.seeded_total;
            t.duplicates_total += s.duplicates_total;
            t.leased_total += s.leased_total;
            t.acked_total += s.acked_total;
            t.nacked_total += s.nacked_total;
            t.retried_total += s.retried_total;
            t.reclaimed_total += s.reclaimed_total;
            t.released_total += s.released_total;
            t.dead_total += s.dead_total;
            t.over_budget_total += s.over_budget_total;
            t.revisits += s.revisits;
        }
        t.shards = shards;
        t
    }
}

/// One dead letter.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    pub id: String,
    pub url: Option<String>,
    /// The caller's de-duplication key, if the item was seeded with one.
    pub key: Option<String>,
    pub host: String,
    pub payload: Option<Value>,
    pub priority: i16,
    /// Failed deliveries before it died.
    pub attempts: u32,
    pub last_error: Option<String>,
    pub died_at_ms: i64,
    /// The record as stored, when it could not be decoded (the other fields are then what could
    /// be read of it).
    pub raw: Option<String>,
}

/// A page of dead letters, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeadPage {
    /// Dead letters in the queue (not only on this page).
    pub total: u64,
    pub items: Vec<DeadLetter>,
}

/// Politeness state of one host ([`crate::Queue::host_info`]).
///
/// ```no_run
/// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let info = q.pause_host("example.com", None).await?;
/// assert!(info.paused && info.paused_until_ms.is_none()); // until resumed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HostInfo {
    pub host: String,
    /// The per-host delay override stored in Redis (`None`: the workers' default applies).
    pub delay_override_ms: Option<u64>,
    /// Extra delay built up by rate-limited nacks.
    pub adaptive_extra_ms: u64,
    /// Ready items of the host.
    pub ready: u64,
    /// Not leasable before this time (ms since epoch), if held back by its politeness delay
    /// or a timed pause (`None` while paused until resumed).
    pub held_until_ms: Option<i64>,
    /// Paused ([`crate::Queue::pause_host`]): no lease takes its items.
    pub paused: bool,
    /// When a timed pause ends (ms since epoch, the Redis clock); `None` when not paused or
    /// paused until resumed.
    pub paused_until_ms: Option<i64>,
    /// The most new URLs the host may add ([`crate::Queue::set_host_budget`], else the
    /// queue's default); `None`: no budget.
    pub budget: Option<u64>,
    /// New URLs the host added while budgets were set on the queue.
    pub budget_used: u64,
    /// A deletion of the host ([`crate::Queue::delete_host`]) is running: it holds the host
    /// paused, and pausing or resuming it changes nothing until it ends. A deletion that was
    /// interrupted (its client died) is finished by calling `delete_host` again.
    pub deleting: bool,
    /// The host's own in-flight limit ([`crate::Queue::set_host_in_flight`]; `Some(0)`: no
    /// limit whatever the workers' default); `None`: the workers' `host_in_flight` applies.
    pub in_flight_limit: Option<u32>,
    /// Items of the host counted in flight: leased while a limit applied to it, not answered.
    pub in_flight: u64,
    /// Held because it has as many items leased as its limit allows: leasable again once an
    /// answer frees a slot (and its politeness delay has passed).
    pub full: bool,
    /// The delay override came from the host's robots.txt Crawl-delay
    /// ([`crate::Queue::set_host_crawl_delay`]), not from an operator.
    pub delay_from_robots: bool,
    /// The host's own pacing ([`crate::Queue::set_host_delay_after`]); `None`: the workers'
    /// `host_delay_after` and `host_delay_factor` apply.
    pub pacing: Option<HostPacing>,
}

impl HostInfo {
    /// New URLs the host may still add (`None`: no budget).
    pub fn budget_remaining(&self) -> Option<u64> {
        self.budget.map(|b| b.saturating_sub(self.budget_used))
    }
}

/// One host's items ([`crate::Queue::list_hosts`]): every count is exact at the moment its
/// shard was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostCounts {
    pub host: String,
    /// Items the host holds: ready + delayed + leased + dead.
    pub items: u64,
    pub ready: u64,
    pub delayed: u64,
    pub leased: u64,
    pub dead: u64,
    /// When its next ready item may be leased (ms since epoch, the Redis clock; now when it is
    /// due); `None` when it has no ready item or is paused until resumed.
    pub next_due_ms: Option<i64>,
    /// Paused ([`crate::Queue::pause_host`]).
    pub paused: bool,
    /// When a timed pause ends; `None` when not paused or paused until resumed.
    pub paused_until_ms: Option<i64>,
}

/// A page of [`crate::Queue::list_hosts`]: hosts with the most items first, then by name.
///
/// ```no_run
/// # async fn example(q: crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let mut cursor = None;
/// loop {
///     let page = q.list_hosts(cursor.as_deref(), 500).await?;
///     for h in &page.hosts {
///         println!("{} {} ready, {} leased", h.host, h.ready, h.leased);
///     }
///     match page.cursor {
///         Some(next) => cursor = Some(next),
///         None => break,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPage {
    pub hosts: Vec<HostCounts>,
    /// Hosts that hold at least one item, in the whole queue.
    pub total: u64,
    /// Where the next page starts; `None` after the last one.
    pub cursor: Option<String>,
}

/// What [`crate::Queue::delete_host`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostDeletion {
    pub host: String,
    pub ready: u64,
    pub delayed: u64,
    /// Leases removed: their acks answer lost.
    pub leased: u64,
    pub dead: u64,
    /// Items of the host that arrived while it was being deleted (seeded, or retried into
    /// the delayed set after the scan passed): they stay, and are leasable.
    pub left: u64,
    /// Removed items whose fingerprints left the seen set (asked with `forget_seen`).
    pub forgotten: u64,
}

impl HostDeletion {
    /// Count one step of a deletion (one `host_delete` call) into this total: its removals add
    /// up, and what it left is what is left now.
    pub fn add_step(&mut self, step: &HostDeletion) {
        self.ready += step.ready;
        self.delayed += step.delayed;
        self.leased += step.leased;
        self.dead += step.dead;
        self.left = step.left;
    }

    /// Items removed in all.
    pub fn removed(&self) -> u64 {
        self.ready + self.delayed + self.leased + self.dead
    }
}

/// A change to a host's pause, as the `host_config` script takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostPause {
    /// Leave it as it is.
    #[default]
    Keep,
    /// End it: the host is leasable again (after what is left of its politeness delay).
    Resume,
    /// Pause for this long from now (the Redis clock), or until resumed (`None`).
    Pause(Option<Duration>),
}

/// What one `host_config` call changes of a host (each part `None`: left as it is; an
/// inner `None`: removed, so the workers' default applies).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HostChange {
    /// The operator's delay.
    pub delay: Option<Option<Duration>>,
    pub pause: HostPause,
    /// The host's own in-flight limit.
    pub in_flight: Option<Option<u32>>,
    /// The delay from its robots.txt `Crawl-delay`, already capped.
    pub robots_delay: Option<Option<Duration>>,
    /// The host's own pacing (when its delay is counted from, and its delay factor).
    pub pacing: Option<Option<HostPacing>>,
}

/// What the `host_turn` script answered for a request to a host outside the frontier (see
/// [`crate::Queue::wait_host_turn`], which waits on it).
///
/// ```
/// use crawlq::HostTurn;
/// assert_ne!(HostTurn::Taken(std::time::Duration::ZERO), HostTurn::Full);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTurn {
    /// A turn was taken: start the request after this long.
    Taken(std::time::Duration),
    /// The host's next turn is further away than the caller would wait (nothing taken).
    TooFar(std::time::Duration),
    /// The host has as many items in flight as its limit allows.
    Full,
    /// The host is paused until this time (ms since epoch), `None`: until resumed.
    Paused(Option<i64>),
}

/// A host's own pacing ([`crate::Queue::set_host_delay_after`]): when its delay is counted
/// from and, after the answer, its delay factor (`None`: the workers' `host_delay_factor`).
///
/// ```
/// use crawlq::{DelayAfter, HostPacing};
/// let slow = HostPacing { after: DelayAfter::Answer, factor: Some(2.0) };
/// assert_eq!(slow.to_string(), "answer:2");
/// assert_eq!("answer:2".parse::<HostPacing>().unwrap(), slow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostPacing {
    pub after: DelayAfter,
    pub factor: Option<f64>,
}

impl HostPacing {
    /// A host's pacing as the bindings take it: `after` `"lease"`, `"answer"` or `None`
    /// (back to the workers' default; no factor then) and an optional factor (after the
    /// answer only). Range checks are [`crate::Queue::set_host_delay_after`]'s.
    ///
    /// ```
    /// use crawlq::{DelayAfter, HostPacing};
    /// let p = HostPacing::from_parts(Some("answer"), Some(2.0)).unwrap().unwrap();
    /// assert_eq!((p.after, p.factor), (DelayAfter::Answer, Some(2.0)));
    /// assert!(HostPacing::from_parts(None, None).unwrap().is_none());
    /// assert!(HostPacing::from_parts(Some("response"), None).is_err());
    /// assert!(HostPacing::from_parts(None, Some(2.0)).is_err());
    /// ```
    pub fn from_parts(
        after: Option<&str>,
        factor: Option<f64>,
    ) -> crate::Result<Option<HostPacing>> {
        match (after, factor) {
            (None, None) => Ok(None),
            (None, Some(f)) => Err(crate::Error::InvalidArgument(format!(
                "a delay factor ({f}) needs the mode \"answer\""
            ))),
            (Some(text), factor) => match DelayAfter::parse(text) {
                Some(after) => Ok(Some(HostPacing { after, factor })),
                None => Err(crate::Error::InvalidArgument(format!(
                    "a host's delay is counted after \"lease\" or \"answer\", got {text:?}"
                ))),
            },
        }
    }
}

/// As the `hostpacing` hash stores it: `lease`, `answer` or `answer:<factor>`.
impl std::fmt::Display for HostPacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.after, self.factor) {
            (DelayAfter::Answer, Some(factor)) => write!(f, "answer:{factor}"),
            (after, _) => f.write_str(after.as_str()),
        }
    }
}

impl std::str::FromStr for HostPacing {
    type Err = crate::Error;

    fn from_str(text: &str) -> crate::Result<HostPacing> {
        let (mode, factor) = match text.split_once(':') {
            Some((mode, factor)) => (mode, Some(factor)),
            None => (text, None),
        };
        let after = DelayAfter::parse(mode);
        let factor = factor.map(|f| f.parse::<f64>().ok());
        match (after, factor) {
            (Some(after), None) => Ok(HostPacing {
                after,
                factor: None,
            }),
            (Some(DelayAfter::Answer), Some(Some(f))) => Ok(HostPacing {
                after: DelayAfter::Answer,
                factor: Some(f),
            }),
            _ => Err(crate::Error::Protocol(format!(
                "unexpected host pacing {text:?}"
            ))),
        }
    }
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
