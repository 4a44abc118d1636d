//! The leases a [`crate::Queue`] handed out and that were not answered through it yet: what
//! `extend_held` keeps alive for long jobs (the `extend_every` option) and what `release_held`
//! gives back when a worker stops (SIGTERM). Bookkeeping only, no I/O: the queue records a
//! lease when it hands it out, forgets it when it is acked, nacked, released or found lost,
//! and drops it once its deadline passed without an extension.

use crate::model::{Lease, LeaseHandle};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Below this many held leases, `record` does not bother dropping expired ones.
const PRUNE_MIN: usize = 1024;

/// One held lease: its handle, the lease time it is extended to, and when it expires on the
/// local monotonic clock (ms).
#[derive(Debug, Clone)]
struct Held {
    handle: LeaseHandle,
    ttl: Duration,
    expires_mono_ms: u64,
}

/// The leases held through one queue, by lease key (`<token>:<id>`).
///
/// ```
/// use crawlq::binding::held::HeldLeases;
/// use std::time::Duration;
/// let held = HeldLeases::default();
/// assert!(held.is_empty());
/// assert!(held.due(0).is_empty());
/// ```
#[derive(Debug, Default)]
pub struct HeldLeases {
    by_key: Mutex<HashMap<String, Held>>,
    /// Set when the queue that owns these leases is closed: a background extender stops.
    closed: AtomicBool,
    /// Size at which `record` next drops expired leases: pruning is amortized, so a worker
    /// holding many leases does not scan them all on every lease call.
    prune_at: AtomicUsize,
}

impl HeldLeases {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // bookkeeping stays usable after a panic elsewhere: the map is never left half-written
        self.by_key.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record leases just handed out for `ttl`, at `now_mono_ms`; leases whose deadline passed
    /// are forgotten on the way once many are held (their items are someone else's after a
    /// reclaim; `due` and `take_all` skip them anyway).
    pub fn record(&self, leases: &[Lease], ttl: Duration, now_mono_ms: u64) {
        let mut map = self.map();
        if map.len() >= self.prune_at.load(Ordering::Relaxed) {
            map.retain(|_, h| h.expires_mono_ms > now_mono_ms);
            self.prune_at
                .store((2 * map.len()).max(PRUNE_MIN), Ordering::Relaxed);
        }
        let expires_mono_ms = now_mono_ms + ttl.as_millis() as u64;
        for lease in leases {
            let handle = lease.handle();
            map.insert(
                handle.lease_key(),
                Held {
                    handle,
                    ttl,
                    expires_mono_ms,
                },
            );
        }
    }

    /// Forget leases that were answered (or found lost).
    pub fn forget<'a>(&self, handles: impl IntoIterator<Item = &'a LeaseHandle>) {
        let mut map = self.map();
        for handle in handles {
            map.remove(&handle.lease_key());
        }
    }

    /// Note a successful extension of `handle` to `ttl` from `now_mono_ms`.
    pub fn extended(&self, handle: &LeaseHandle, ttl: Duration, now_mono_ms: u64) {
        if let Some(held) = self.map().get_mut(&handle.lease_key()) {
            held.ttl = ttl;
            held.expires_mono_ms = now_mono_ms + ttl.as_millis() as u64;
        }
    }

    /// The live leases, grouped by the lease time they are extended to (one extend call per
    /// group; usually one).
    pub fn due(&self, now_mono_ms: u64) -> Vec<(Duration, Vec<LeaseHandle>)> {
        let mut map = self.map();
        map.retain(|_, h| h.expires_mono_ms > now_mono_ms);
        let mut groups: Vec<(Duration, Vec<LeaseHandle>)> = Vec::new();
        for held in map.values() {
            match groups.iter_mut().find(|(ttl, _)| *ttl == held.ttl) {
                Some((_, handles)) => handles.push(held.handle.clone()),
                None => groups.push((held.ttl, vec![held.handle.clone()])),
            }
        }
        groups
    }

    /// Take every live lease out (to release them).
    pub fn take_all(&self, now_mono_ms: u64) -> Vec<LeaseHandle> {
        let mut map = self.map();
        let handles = map
            .values()
            .filter(|h| h.expires_mono_ms > now_mono_ms)
            .map(|h| h.handle.clone())
            .collect();
        map.clear();
        handles
    }

    /// Take over the leases `other` holds (those of a queue closed before this one connected
    /// in its place), so this book extends and releases them; `other` is left empty.
    ///
    /// ```
    /// use crawlq::binding::held::HeldLeases;
    /// let (closed, next) = (HeldLeases::default(), HeldLeases::default());
    /// next.adopt(&closed);
    /// assert!(closed.is_empty() && next.is_empty());
    /// ```
    pub fn adopt(&self, other: &HeldLeases) {
        if std::ptr::eq(self, other) {
            return;
        }
        let taken = std::mem::take(&mut *other.map());
        self.map().extend(taken);
    }

    /// How many leases are held (expired ones included until the next record or look).
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether no lease is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The owning queue is closed (or gone): extenders stop at their next turn.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Whether [`HeldLeases::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leases(from: u64, n: u64) -> Vec<Lease> {
        (from..from + n)
            .map(|i| Lease {
                id: i.to_string(),
                url: Some(format!("http://h{i}.example/")),
                host: format!("h{i}.example"),
                key: None,
                crawl: None,
                payload: None,
                priority: 0,
                attempt: 1,
                token: 1_000 + i,
                leased_at_ms: 0,
                expires_at_ms: 0,
                enqueued_at_ms: 0,
                last_error: None,
            })
            .collect()
    }

    #[test]
    fn expired_leases_are_dropped_once_many_are_held_and_never_handed_back() {
        let held = HeldLeases::default();
        held.record(&leases(0, 10), Duration::from_millis(5), 0);
        held.record(&leases(10, 1), Duration::from_secs(60), 10);
        assert_eq!(held.len(), 11, "few held: no scan on record");
        assert_eq!(
            held.take_all(10).len(),
            1,
            "expired ones are never released"
        );
        held.record(&leases(100, 2000), Duration::from_millis(5), 20);
        held.record(&leases(5000, 1), Duration::from_secs(60), 30);
        assert_eq!(held.len(), 1, "many held: the expired ones are dropped");
        let groups = held.due(30);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].1[0].id, "5000");
    }

    #[test]
    fn answers_and_extensions_update_the_book() {
        let held = HeldLeases::default();
        let batch = leases(0, 3);
        held.record(&batch, Duration::from_millis(100), 0);
        held.forget([&batch[0].handle()]);
        held.extended(&batch[1].handle(), Duration::from_secs(1), 50);
        let due: Vec<_> = held.due(120).into_iter().flat_map(|(_, h)| h).collect();
        assert_eq!(due.len(), 1, "the unextended lease expired at 100");
        assert_eq!(due[0].id, "1");
        held.close();
        assert!(held.is_closed());
    }
}
