//! Depth and counters of a queue, and its dead letters.

use serde_json::Value;

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
    /// Seeded items that clients' known-seen caches answered as duplicates without sending
    /// them (option `seen_cache`), counted by Redis in the same call that sends the others
    /// (they are in `duplicates_total` too, as they would be without the cache).
    pub seen_cache_hits_total: u64,
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
            t.seen_cache_hits_total += s.seen_cache_hits_total;
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

/// The counts of one named crawl ([`crate::Queue::crawl_stats`]), exact and O(1) per shard:
/// kept by every script that moves one of its items (docs/crawls.md, "Stats").
///
/// ```
/// let s = crawlq::CrawlStats { ready: 2, delayed: 1, ..Default::default() };
/// assert_eq!(s.pending(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrawlStats {
    /// Queued in its crawl lanes, leasable as soon as politeness allows.
    pub ready: u64,
    /// Waiting for their delay, retry backoff or revisit.
    pub delayed: u64,
    /// Leased now (including expired leases not yet reclaimed).
    pub leased: u64,
    /// Dead letters.
    pub dead: u64,
    /// Acked (a revisit counts when it is acked again too).
    pub done: u64,
    /// URLs of the crawl in the seen set (less those a host deletion forgot).
    pub seen: u64,
    /// Items its seeds queued (forced re-adds included).
    pub seeded_total: u64,
    /// Its cap, the most of its items leased at once ([`crate::Queue::set_crawl_cap`]); `None`
    /// for no cap.
    pub cap: Option<u64>,
    /// Whether it is paused ([`crate::Queue::pause_crawl`]); a crawl being deleted is paused
    /// too.
    pub paused: bool,
    /// Whether it is being deleted ([`crate::Queue::delete_crawl`]): a deletion is under way,
    /// or one stopped part-way (its seeds and limit changes are refused until a deletion of it
    /// runs to the end).
    pub deleting: bool,
    /// Hosts held back because every ready item they have is of crawls that are paused or at
    /// their cap, this one among them.
    pub held_hosts: u64,
    /// Its weight ([`crate::Queue::set_crawl_weight`]): its share of each host against the
    /// other crawls with due work there; 1 by default.
    pub weight: u64,
    /// Its rate, the most leases a second ([`crate::Queue::set_crawl_rate`]); `None` for none.
    pub rate: Option<f64>,
    /// Its host budget, the most new URLs each host may add to it
    /// ([`crate::Queue::set_crawl_host_budget`]); `None` for none.
    pub host_budget: Option<u64>,
    /// Hosts with at least one ready item of the crawl (as [`crate::Stats::hosts`] counts them
    /// for the whole queue).
    pub hosts: u64,
    /// Age of the oldest item at the front of one of the crawl's lanes (its time since it was
    /// queued), as [`crate::Stats::oldest_pending_age_ms`] for the whole queue; `None` with no
    /// ready item.
    pub oldest_pending_age_ms: Option<u64>,
    /// Its items acked over the last minute of the Redis clock, a second: the current
    /// minute's count and the share of the minute before that the last 60 seconds still
    /// cover, over 60 (0 for a crawl that acked none since; an earlier build's scripts keep
    /// no such counts).
    pub done_per_second: f64,
    /// Its items seeded (added, forced re-adds included) over the last minute, a second,
    /// reckoned as [`CrawlStats::done_per_second`] is.
    pub seeded_per_second: f64,
}

impl Default for CrawlStats {
    /// A crawl with nothing: zeros, no cap, not paused, weight 1.
    fn default() -> Self {
        CrawlStats {
            ready: 0,
            delayed: 0,
            leased: 0,
            dead: 0,
            done: 0,
            seen: 0,
            seeded_total: 0,
            cap: None,
            paused: false,
            deleting: false,
            held_hosts: 0,
            weight: 1,
            rate: None,
            host_budget: None,
            hosts: 0,
            oldest_pending_age_ms: None,
            done_per_second: 0.0,
            seeded_per_second: 0.0,
        }
    }
}

/// Two shards' rates summed, kept to a millionth (so that a rate read from one shard or
/// several compares equal).
fn per_second_sum(a: f64, b: f64) -> f64 {
    ((a + b) * 1e6).round() / 1e6
}

/// A count over the last minute as a rate a second, from the counts of the clock's current
/// minute and of the minute before, `into_ms` into the current one: the minute before counts
/// for the part of it the last 60 seconds still cover (its items spread evenly over it).
pub(crate) fn per_second_of_last_minute(current: u64, before: u64, into_ms: u64) -> f64 {
    let into_ms = into_ms.min(60_000) as f64;
    let count = current as f64 + before as f64 * (60_000.0 - into_ms) / 60_000.0;
    per_second_sum(count / 60.0, 0.0)
}

impl CrawlStats {
    /// ready + delayed: queued and not leased.
    pub fn pending(&self) -> u64 {
        self.ready + self.delayed
    }

    /// The sum of two shards' counts.
    pub(crate) fn add(mut self, other: CrawlStats) -> CrawlStats {
        self.ready += other.ready;
        self.delayed += other.delayed;
        self.leased += other.leased;
        self.dead += other.dead;
        self.done += other.done;
        self.seen += other.seen;
        self.seeded_total += other.seeded_total;
        self.cap = match (self.cap, other.cap) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.paused |= other.paused;
        self.deleting |= other.deleting;
        self.held_hosts += other.held_hosts;
        // (the same in every shard)
        self.weight = self.weight.max(other.weight);
        // (the shards' shares of a rate sum back to it, but for the last bits of a float)
        self.rate = match (self.rate, other.rate) {
            (Some(a), Some(b)) => Some(((a + b) * 1e6).round() / 1e6),
            (a, b) => a.or(b),
        };
        // (the same in every shard)
        self.host_budget = self.host_budget.or(other.host_budget);
        // (a host is in one shard)
        self.hosts += other.hosts;
        self.oldest_pending_age_ms = self.oldest_pending_age_ms.max(other.oldest_pending_age_ms);
        self.done_per_second = per_second_sum(self.done_per_second, other.done_per_second);
        self.seeded_per_second = per_second_sum(self.seeded_per_second, other.seeded_per_second);
        self
    }
}

/// What [`crate::Queue::delete_crawl`] removed, summed over its steps and shards.
///
/// ```
/// let gone = crawlq::CrawlDeletion { ready: 3, leased: 1, ..Default::default() };
/// assert_eq!(gone.removed(), 4);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrawlDeletion {
    pub crawl: String,
    pub ready: u64,
    pub delayed: u64,
    /// Leases removed: their acks answer lost.
    pub leased: u64,
    pub dead: u64,
}

impl CrawlDeletion {
    /// Items removed in all.
    pub fn removed(&self) -> u64 {
        self.ready + self.delayed + self.leased + self.dead
    }

    /// Count one step (one `crawl_delete` call) into this total.
    pub fn add_step(&mut self, step: &CrawlDeletion) {
        self.ready += step.ready;
        self.delayed += step.delayed;
        self.leased += step.leased;
        self.dead += step.dead;
    }
}

/// A change to a named crawl's limits in one shard (`crawl_config`, docs/PROTOCOL.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CrawlChange {
    /// The shard's share of the crawl's cap (`None`: no cap).
    Cap(Option<u64>),
    /// The crawl's weight (`None`: the default, 1).
    Weight(Option<u64>),
    /// The shard's share of the crawl's rate, leases a second (`None`: no rate).
    Rate(Option<f64>),
    /// The most new URLs each host may add to the crawl (`None`: no budget); the same in every
    /// shard.
    HostBudget(Option<u64>),
    Pause,
    Resume,
    /// No change: release hosts held for the crawl if it is not blocked.
    Release,
}

/// A page of dead letters, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeadPage {
    /// Dead letters in the queue (not only on this page).
    pub total: u64,
    pub items: Vec<DeadLetter>,
}

/// One lease held now ([`crate::Queue::leased_items`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LeasedItem {
    /// The lease's fencing token.
    pub token: u64,
    /// When the lease expires, ms since the epoch by the Redis clock. An expired lease stays
    /// listed (its worker can still answer it) until a lease call reclaims it.
    pub expires_at_ms: i64,
    /// The leased record (its `id` is the item's, as its lease and [`crate::Queue::dead`]
    /// name it); a record that could not be decoded is what could be read of it. Its
    /// `attempt` counts the failed deliveries before this one: the worker's
    /// [`crate::Lease::attempt`] is one more.
    pub item: crate::wire::StoredItem,
}

/// A page of the leases held now, soonest expiry first ([`crate::Queue::leased_items`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeasedPage {
    /// Leases held now in the queue (not only on this page), expired ones not reclaimed yet
    /// included.
    pub total: u64,
    /// The Redis clock when the page was read (ms since the epoch; the first shard's).
    pub now_ms: i64,
    pub items: Vec<LeasedItem>,
}
