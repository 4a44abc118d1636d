//! Stopping a lease call that waits: a check between the slices of its wait, or a signal that
//! ends the wait itself. Either way a call stops only at a wait, never while one of its script
//! calls is under way, so a reply that carries leases is never dropped on its way back.

use super::MaybeSend;
use futures_util::task::AtomicWaker;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

/// A stop request that a waiting lease call hears at once: its wait ends (with no leases) as
/// soon as [`StopSignal::stop`] is called, from any thread. A script call already under way
/// finishes first and its leases are returned, for the caller to hand out or release; no lease
/// is ever left held by a reply nobody read. What an asyncio cancellation or an abort maps to.
///
/// The wait of one call at a time hears it at once (of two calls waiting on one signal
/// together, the other stops at the end of its current slice of [`crate::WAIT_SLICE`]); once
/// given it stays given.
///
/// ```
/// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// use crawlq::{LeaseOptions, StopSignal};
/// use std::time::Duration;
/// let stop = StopSignal::new();
/// let from_elsewhere = stop.clone();
/// std::thread::spawn(move || {
///     std::thread::sleep(Duration::from_millis(100));
///     from_elsewhere.stop();
/// });
/// let opts = LeaseOptions { max: 1, wait: Duration::from_secs(60), ttl: None };
/// let leases = q.lease_interruptible(&opts, stop).await?; // back after about 100 ms
/// # let _ = leases;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct StopSignal(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    stopped: AtomicBool,
    waker: AtomicWaker,
}

impl StopSignal {
    /// A signal not yet given.
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Give the signal: the call listening stops at its wait (at once when it is waiting).
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        self.0.waker.wake();
    }

    /// Whether the signal was given.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Resolves once the signal is given.
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + MaybeSend + '_ {
        std::future::poll_fn(move |cx| {
            if self.is_stopped() {
                return Poll::Ready(());
            }
            self.0.waker.register(cx.waker());
            // checked again: a stop between the first check and the registration woke nobody
            if self.is_stopped() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// What tells an interruptible lease call ([`crate::Queue::lease_interruptible`] and the
/// calls alike) to give up waiting: a closure checked between the slices of the wait (a
/// binding's Ctrl-C check, say), or a [`StopSignal`], which also ends the wait under way.
///
/// ```
/// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let opts = crawlq::LeaseOptions::default();
/// let mut checks = 0;
/// // a closure: checked between slices of the wait
/// let leases = q.lease_interruptible(&opts, || { checks += 1; checks > 3 }).await?;
/// # let _ = leases;
/// # Ok(()) }
/// ```
pub trait Interrupt: MaybeSend {
    /// Whether to stop now (asked between the slices of a wait).
    fn interrupted(&mut self) -> bool;

    /// The signal the wait itself listens to, if any.
    fn signal(&self) -> Option<&StopSignal> {
        None
    }
}

impl<F: FnMut() -> bool + MaybeSend> Interrupt for F {
    fn interrupted(&mut self) -> bool {
        self()
    }
}

impl Interrupt for StopSignal {
    fn interrupted(&mut self) -> bool {
        self.is_stopped()
    }

    fn signal(&self) -> Option<&StopSignal> {
        Some(self)
    }
}
