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
    /// Times a shard's cache was dropped (a new epoch, or full).
    pub resets: u64,
}

#[derive(Default)]
struct ShardSeen {
    epoch: Option<String>,
    fingerprints: HashSet<i64>,
}

/// See the module documentation.
pub struct SeenCache {
    capacity: usize,
    shards: Mutex<HashMap<usize, ShardSeen>>,
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
    /// A cache of at most `capacity` fingerprints per shard (0: off).
    pub fn new(capacity: usize) -> SeenCache {
        SeenCache {
            capacity,
            shards: Mutex::new(HashMap::new()),
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
        let shards = self.shards.lock().expect("seen cache");
        let Some(seen) = shards.get(&shard).filter(|s| s.epoch.is_some()) else {
            self.misses.fetch_add(items.len() as u64, Ordering::Relaxed);
            return (vec![false; items.len()], None);
        };
        let known: Vec<bool> = items
            .iter()
            .map(|i| !i.force && seen.fingerprints.contains(&i.seen_member))
            .collect();
        let hits = known.iter().filter(|k| **k).count() as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(items.len() as u64 - hits, Ordering::Relaxed);
        (known, seen.epoch.clone())
    }

    /// Learn what a seed reply of `shard` (at `epoch`) says of the `items` it was sent: an item
    /// added, or a duplicate not forced, is in the seen set now (an item over its host's budget
    /// is not; a forced duplicate may be queued without being seen). A new epoch drops what
    /// was known before.
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
        let mut shards = self.shards.lock().expect("seen cache");
        if !tells_restarts(epoch) {
            // scripts run by EVAL (a server without Redis Functions, the WebAssembly build):
            // the epoch cannot tell a restart that lost writes, so nothing is kept under it
            if let Some(seen) = shards.get_mut(&shard) {
                seen.fingerprints.clear();
                seen.epoch = None;
            }
            return;
        }
        let seen = shards.entry(shard).or_default();
        if seen.epoch.as_deref() != Some(epoch) {
            if seen.epoch.is_some() {
                self.resets.fetch_add(1, Ordering::Relaxed);
            }
            seen.fingerprints.clear();
            seen.epoch = Some(epoch.to_string());
        }
        for (item, what) in items.iter().zip(seeded) {
            let in_seen_set = match what {
                Seeded::Added(_) => true,
                Seeded::Duplicate => !item.force,
                Seeded::OverBudget => false,
            };
            if in_seen_set {
                if seen.fingerprints.len() >= self.capacity {
                    // full: start again (exact, and a miss only costs a Redis lookup)
                    seen.fingerprints.clear();
                    self.resets.fetch_add(1, Ordering::Relaxed);
                }
                seen.fingerprints.insert(item.seen_member);
            }
        }
    }

    /// Count `n` links sent again after an epoch change.
    pub fn count_resent(&self, n: usize) {
        self.resent.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn stats(&self) -> SeenCacheStats {
        let entries = self
            .shards
            .lock()
            .expect("seen cache")
            .values()
            .map(|s| s.fingerprints.len() as u64)
            .sum();
        SeenCacheStats {
            entries,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            resent: self.resent.load(Ordering::Relaxed),
            resets: self.resets.load(Ordering::Relaxed),
        }
    }
}
