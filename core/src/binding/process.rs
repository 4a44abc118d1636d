//! What one process owns that must not cross a `fork()`: the tokio runtime the bindings drive
//! their calls on. Crawlers, process pools and PHP-FPM fork after loading the library; a child
//! finds the parent's runtime threads gone, so it builds its own on first use. The parent's
//! runtime is leaked in the child, never dropped (dropping it would wait for threads that do
//! not exist there).

use crate::binding::held::HeldLeases;
use std::sync::Mutex;
use tokio::runtime::Runtime;

/// Which runtime a binding wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Driven by each blocking call on the caller's thread (PHP: one request at a time per
    /// process, no extra threads in every worker).
    CurrentThread,
    /// Worker threads named `crawlq-io` (Python: calls from many threads and an event loop).
    MultiThread { workers: usize },
}

static CURRENT_THREAD: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);
static MULTI_THREAD: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The runtime of this process in `flavor`, built on first use and again after a fork.
///
/// ```
/// use crawlq::binding::process::{Flavor, runtime};
/// let rt = runtime(Flavor::CurrentThread);
/// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
/// assert!(std::ptr::eq(rt, runtime(Flavor::CurrentThread)));
/// ```
pub fn runtime(flavor: Flavor) -> &'static Runtime {
    let slot = match flavor {
        Flavor::CurrentThread => &CURRENT_THREAD,
        Flavor::MultiThread { .. } => &MULTI_THREAD,
    };
    let pid = std::process::id();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    match *slot {
        Some((owner, rt)) if owner == pid => rt,
        _ => {
            let mut builder = match flavor {
                Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
                Flavor::MultiThread { workers } => {
                    let mut b = tokio::runtime::Builder::new_multi_thread();
                    b.worker_threads(workers).thread_name("crawlq-io");
                    b
                }
            };
            let rt = builder.enable_all().build().expect("a tokio runtime");
            let rt: &'static Runtime = Box::leak(Box::new(rt));
            *slot = Some((pid, rt));
            rt
        }
    }
}

/// The queue a binding object uses in the current process: connected on first use, again in a
/// forked child (which must not share the parent's socket and runtime), with its background
/// extender (`extend_every`) started when it is installed and stopped when it is closed or
/// dropped.
///
/// ```
/// let slot: crawlq::binding::process::ProcessQueue<crawlq::RedisExecutor> = Default::default();
/// assert!(slot.current().is_none());
/// slot.close(); // nothing to close yet
/// ```
#[derive(Debug)]
pub struct ProcessQueue<E: crate::queue::Executor> {
    slot: Mutex<Option<(u32, std::sync::Arc<crate::Queue<E>>)>>,
    /// The leases a closed queue still held (and its process): the next queue installed in
    /// this process takes them over, so a call after `close` (an answer, `release_held`)
    /// still finds them.
    closed_held: Mutex<Option<(u32, std::sync::Arc<HeldLeases>)>>,
}

impl<E: crate::queue::Executor> Default for ProcessQueue<E> {
    fn default() -> Self {
        ProcessQueue {
            slot: Mutex::new(None),
            closed_held: Mutex::new(None),
        }
    }
}

impl<E: crate::queue::Executor> ProcessQueue<E> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u32, std::sync::Arc<crate::Queue<E>>)>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue connected in this process, if any.
    pub fn current(&self) -> Option<std::sync::Arc<crate::Queue<E>>> {
        match &*self.lock() {
            Some((owner, q)) if *owner == std::process::id() => Some(q.clone()),
            _ => None,
        }
    }

    /// Keep `queue`, just connected to `url`, as this process's, and start its extender. When
    /// another call connected and installed one meanwhile (two first calls at once), that one
    /// is kept and returned, and `queue` is dropped: every call of the process uses one queue,
    /// which is what [`ProcessQueue::close`] closes.
    pub fn install(&self, queue: crate::Queue<E>, url: &str) -> std::sync::Arc<crate::Queue<E>> {
        let pid = std::process::id();
        let mut slot = self.lock();
        if let Some((owner, installed)) = &*slot
            && *owner == pid
        {
            return installed.clone();
        }
        let queue = std::sync::Arc::new(queue);
        let closed_held = self
            .closed_held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((owner, held)) = closed_held
            && owner == pid
        {
            queue.held().adopt(&held);
        }
        spawn_extender(
            url,
            queue.name(),
            queue.config().clone(),
            queue.held().clone(),
        );
        *slot = Some((pid, queue.clone()));
        queue
    }

    /// Forget the queue (a later use connects again), end the waits of the lease calls under
    /// way on it ([`crate::Queue::close`]) and stop its extender. The leases it still holds
    /// go to the queue connected next in this process (extended again, released by its
    /// `release_held`).
    pub fn close(&self) {
        let Some((owner, q)) = self.lock().take() else {
            return;
        };
        q.close();
        let mut closed_held = self.closed_held.lock().unwrap_or_else(|e| e.into_inner());
        match &*closed_held {
            // a book left by an earlier close and not taken over yet: it keeps both's leases
            Some((held_owner, held)) if *held_owner == owner => held.adopt(q.held()),
            _ => *closed_held = Some((owner, q.held().clone())),
        }
    }
}

impl<E: crate::queue::Executor> Drop for ProcessQueue<E> {
    fn drop(&mut self) {
        let slot = self.slot.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some((_, q)) = slot.take() {
            q.held().close();
        }
    }
}

/// Extend the leases in `held` every `config.extend_every`, on a connection of its own on this
/// process's multi-threaded runtime (so it goes on while the owner's thread runs a long job:
/// a Python function holding the GIL, a PHP script), until `held` is closed. It connects only
/// once something is held. A failed round is retried at the next turn; a lease that expired
/// meanwhile is reported lost by its answer (ack false, nack `lost`).
///
/// ```no_run
/// # async fn demo() -> crawlq::Result<()> {
/// use std::{sync::Arc, time::Duration};
/// let config = crawlq::Config { extend_every: Duration::from_secs(20), ..Default::default() };
/// let q = Arc::new(crawlq::Queue::connect("redis://127.0.0.1/", "jobs", config.clone()).await?);
/// crawlq::binding::process::spawn_extender("redis://127.0.0.1/", "jobs", config, q.held().clone());
/// // ... lease and work; leases stay alive until answered ...
/// q.held().close();
/// # Ok(()) }
/// ```
pub fn spawn_extender(
    url: &str,
    name: &str,
    config: crate::Config,
    held: std::sync::Arc<crate::binding::held::HeldLeases>,
) {
    let every = config.extend_every;
    if every.is_zero() {
        return;
    }
    let (url, name) = (url.to_string(), name.to_string());
    runtime(Flavor::MultiThread { workers: 1 }).spawn(async move {
        let mut queue: Option<crate::Queue<crate::RedisExecutor>> = None;
        loop {
            tokio::time::sleep(every).await;
            if held.is_closed() {
                break;
            }
            if held.is_empty() {
                continue;
            }
            if queue.is_none() {
                queue = crate::Queue::connect(&url, &name, config.clone())
                    .await
                    .ok()
                    .map(|q| q.with_held(held.clone()));
            }
            if let Some(q) = &queue {
                // an error here (Redis away) is retried next turn; see above for what a
                // lease that expired meanwhile does
                let _ = q.extend_held().await;
            }
        }
    });
}
