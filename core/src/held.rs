//! The leases a [`crate::Queue`] handed out and that were not answered through it yet: what
//! `extend_held` keeps alive for long jobs (the `extend_every` option) and what `release_held`
//! gives back when a worker stops (SIGTERM). Bookkeeping only, no I/O: the queue records a
//! lease when it hands it out, forgets it when it is acked, nacked, released or found lost,
//! and drops it once its deadline passed without an extension.

use crate::model::{Lease, LeaseHandle};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
/// use crawlq::held::HeldLeases;
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
}

impl HeldLeases {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // bookkeeping stays usable after a panic elsewhere: the map is never left half-written
        self.by_key.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record leases just handed out for `ttl`, at `now_mono_ms`; leases whose deadline passed
    /// are forgotten on the way (their items are someone else's after a reclaim).
    pub fn record(&self, leases: &[Lease], ttl: Duration, now_mono_ms: u64) {
        let mut map = self.map();
        map.retain(|_, h| h.expires_mono_ms > now_mono_ms);
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
