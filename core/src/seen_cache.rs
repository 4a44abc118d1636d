//! The known-seen cache ([`crate::Config::seen_cache`]): fingerprints of URLs Redis confirmed
//! are in a queue's seen set, kept per shard with the seen epoch they were confirmed under, so
//! a seed of one of them is answered "duplicate" without reaching Redis. It never answers for
//! an epoch it was not filled in: every seed reply carries the shard's epoch, and a reply whose
//! epoch differs from the one a call's cache hits were judged by makes the caller send those
//! items after all (docs/PROTOCOL.md, `seed`). The epoch also changes when the server restarts
//! or a replica takes over, when Redis may have lost writes the cache learned from; scripts run
//! by EVAL cannot tell that, and the cache then keeps nothing.

use crate::ops::{PreparedItem, Seeded};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Fingerprints are looked up for every link a client seeds: a fast hash, randomly keyed per
/// process (links are chosen by the sites crawled).
type Fingerprints = HashSet<i64, foldhash::fast::RandomState>;

/// Whether a seen epoch names the server's Lua state too (`<born>:<forgotten>:<state>`, as a
/// functions library answers), so that it changes when the server restarts or a replica takes
/// over; under one without (`<born>:<forgotten>`, scripts run by EVAL) the cache keeps nothing.
fn tells_restarts(epoch: &str) -> bool {
    epoch.matches(':').count() >= 2
}

/// Counters of a [`SeenCache`] (`Queue::seen_cache_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeenCacheStats {
    /// Fingerprints held now (all shards).
    pub entries: u64,
    /// Links answered "duplicate" from the cache (not sent).
    pub hits: u64,
    /// Links looked up and sent to Redis.
    pub misses: u64,
    /// Links sent again because the seen epoch had changed under their hit.
    pub resent: u64,
    /// Times part of the cache was dropped: a shard's part for a new epoch, or the older
    /// half of what it held, to make room.
    pub resets: u64,
}

/// One shard's part: the epoch it was learned under, and its fingerprints in two
/// generations (see [`Held`]).
#[derive(Default)]
struct ShardSeen {
    epoch: Option<String>,
    recent: Fingerprints,
    older: Fingerprints,
}

impl ShardSeen {
    fn holds(&self, fingerprint: i64) -> bool {
        self.recent.contains(&fingerprint) || self.older.contains(&fingerprint)
    }
}

/// What the cache holds: each shard's part, and how many fingerprints they hold together (the
/// bound is the whole cache's, however many shards the queue has). Fingerprints go into the
/// recent generation; when it holds half the bound (or the whole cache the bound), the older
/// generation is dropped and the recent one becomes it. A fingerprint found in the older
/// generation moves back to the recent one, so the links a crawl meets again and again (a
/// site's navigation) stay while the ones met once make room.
#[derive(Default)]
struct Held {
    shards: HashMap<usize, ShardSeen>,
    /// Fingerprints held, both generations of every shard.
    entries: usize,
    /// Fingerprints of the recent generation, every shard.
    recent: usize,
}

impl Held {
    /// Drop one shard's fingerprints (a new epoch).
    fn clear(&mut self, shard: usize) {
        if let Some(seen) = self.shards.get_mut(&shard) {
            self.entries -= seen.recent.len() + seen.older.len();
            self.recent -= seen.recent.len();
            seen.recent.clear();
            seen.older.clear();
        }
    }

    /// Make room for one more fingerprint in a cache of `capacity`: the older generation is
    /// dropped while the recent one is half the bound or the whole cache is full. Returns how
    /// many generations held something when dropped.
    fn make_room(&mut self, capacity: usize) -> u64 {
        let half = capacity - capacity / 2;
        let mut dropped = 0;
        while self.entries >= capacity || self.recent >= half {
            dropped += u64::from(self.entries > self.recent);
            for seen in self.shards.values_mut() {
                seen.older = std::mem::take(&mut seen.recent);
            }
            self.entries = self.recent;
            self.recent = 0;
        }
        dropped
    }

    /// Put `fingerprint` in `shard`'s recent generation (it is in neither).
    fn insert(&mut self, shard: usize, fingerprint: i64, capacity: usize) -> u64 {
        let dropped = self.make_room(capacity);
        let seen = self.shards.entry(shard).or_default();
        seen.recent.insert(fingerprint);
        self.entries += 1;
        self.recent += 1;
        dropped
    }
}

/// See the module documentation.
pub struct SeenCache {
    capacity: usize,
    held: Mutex<Held>,
    hits: AtomicU64,
    misses: AtomicU64,
    resent: AtomicU64,
    resets: AtomicU64,
}

impl std::fmt::Debug for SeenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeenCache")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SeenCache {
    /// A cache of at most `capacity` fingerprints, all shards together (0: off).
    pub fn new(capacity: usize) -> SeenCache {
        SeenCache {
            capacity,
            held: Mutex::new(Held::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            resent: AtomicU64::new(0),
            resets: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Which of `items` (for `shard`) the cache knows as seen, and the epoch that says so.
    /// Forced items are never known (a forced seed must reach Redis).
    pub fn known(&self, shard: usize, items: &[PreparedItem]) -> (Vec<bool>, Option<String>) {
        if !self.enabled() {
            return (vec![false; items.len()], None);
        }
        let mut held = self.held.lock().expect("seen cache");
        let Some(seen) = held.shards.get(&shard).filter(|s| s.epoch.is_some()) else {
            self.misses.fetch_add(items.len() as u64, Ordering::Relaxed);
            return (vec![false; items.len()], None);
        };
        let epoch = seen.epoch.clone();
        let known: Vec<bool> = items
            .iter()
            .map(|i| !i.force && seen.holds(i.seen_member))
            .collect();
        // (the older generation's hits move to the recent one: met again, kept longer)
        let mut dropped = 0;
        for (item, _) in items.iter().zip(&known).filter(|(_, k)| **k) {
            let seen = held.shards.get_mut(&shard).expect("looked up above");
            if seen.older.remove(&item.seen_member) {
                held.entries -= 1;
                dropped += held.insert(shard, item.seen_member, self.capacity);
            }
        }
        self.resets.fetch_add(dropped, Ordering::Relaxed);
        let hits = known.iter().filter(|k| **k).count() as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(items.len() as u64 - hits, Ordering::Relaxed);
        (known, epoch)
    }

    /// Learn what a seed reply of `shard` (at `epoch`) says of the `items` it was sent: an item
    /// added, or a duplicate not forced, is in the seen set now (an item over its host's budget
    /// is not; a forced duplicate may be queued without being seen). A new epoch drops what
    /// was known before. A full cache drops its older generation ([`Held`]; exact, and a miss
    /// only costs a Redis lookup).
    pub fn learn(
        &self,
        shard: usize,
        epoch: Option<&str>,
        items: &[PreparedItem],
        seeded: &[Seeded],
    ) {
        let (Some(epoch), true) = (epoch, self.enabled()) else {
            return;
        };
        let mut held = self.held.lock().expect("seen cache");
        if !tells_restarts(epoch) {
            // scripts run by EVAL (a server without Redis Functions, the WebAssembly build):
            // the epoch cannot tell a restart that lost writes, so nothing is kept under it
            held.clear(shard);
            if let Some(seen) = held.shards.get_mut(&shard) {
                seen.epoch = None;
            }
            return;
        }
        let seen = held.shards.entry(shard).or_default();
        if seen.epoch.as_deref() != Some(epoch) {
            if seen.epoch.is_some() {
                self.resets.fetch_add(1, Ordering::Relaxed);
            }
            seen.epoch = Some(epoch.to_string());
            held.clear(shard);
        }
        for (item, what) in items.iter().zip(seeded) {
            let in_seen_set = match what {
                Seeded::Added(_) => true,
                Seeded::Duplicate => !item.force,
                Seeded::OverBudget => false,
            };
            if !in_seen_set || held.shards[&shard].holds(item.seen_member) {
                continue;
            }
            let dropped = held.insert(shard, item.seen_member, self.capacity);
            self.resets.fetch_add(dropped, Ordering::Relaxed);
        }
    }

    /// Count `n` links sent again after an epoch change.
    pub fn count_resent(&self, n: usize) {
        self.resent.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn stats(&self) -> SeenCacheStats {
        let entries = self.held.lock().expect("seen cache").entries as u64;
        SeenCacheStats {
            entries,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            resent: self.resent.load(Ordering::Relaxed),
            resets: self.resets.load(Ordering::Relaxed),
        }
    }
}
