//! Stopping a lease call that waits: a check between the slices of its wait, or a signal that
//! ends the wait itself. Either way a call stops only at a wait, never while one of its script
//! calls is under way, so a reply that carries leases is never dropped on its way back.

use super::MaybeSend;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

/// A stop request that a waiting lease call hears at once: its wait ends (with no leases) as
/// soon as [`StopSignal::stop`] is called, from any thread. A script call already under way
/// finishes first and its leases are returned, for the caller to hand out or release; no lease
/// is ever left held by a reply nobody read. What an asyncio cancellation or an abort maps to.
///
/// One signal can be shared: every call waiting on it hears it at once. Once given it stays
/// given.
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
    waiting: Mutex<Waiting>,
}

/// The calls waiting on a signal now. Each wait takes its entry out again when it ends, so a
/// signal that lives as long as a worker (a `work()` loop's) holds only the waits under way.
#[derive(Debug, Default)]
struct Waiting {
    next_id: u64,
    wakers: Vec<(u64, Waker)>,
    /// Signals made by [`StopSignal::child`], given with this one (dropped ones pruned).
    children: Vec<Weak<Inner>>,
}

impl StopSignal {
    /// A signal not yet given.
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// A signal given when this one is given, and on its own without giving this one: for one
    /// call that a shutdown signal also ends. Made after this one was given, it starts given.
    ///
    /// ```
    /// let shutdown = crawlq::StopSignal::new();
    /// let (one_call, another) = (shutdown.child(), shutdown.child());
    /// one_call.stop(); // cancels that call only
    /// assert!(!shutdown.is_stopped() && !another.is_stopped());
    /// shutdown.stop();
    /// assert!(another.is_stopped() && shutdown.child().is_stopped());
    /// ```
    pub fn child(&self) -> StopSignal {
        let child = StopSignal::new();
        let mut waiting = self.waiting();
        // under the lock: a stop() either finds the child listed or was seen here
        if self.is_stopped() {
            child.0.stopped.store(true, Ordering::SeqCst);
        } else {
            waiting.children.retain(|listed| listed.strong_count() > 0);
            waiting.children.push(Arc::downgrade(&child.0));
        }
        child
    }

    /// Give the signal: every call listening stops at its wait (at once when it is waiting),
    /// and so do the calls listening to its children.
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        let (wakers, children) = {
            let mut waiting = self.waiting();
            (
                std::mem::take(&mut waiting.wakers),
                std::mem::take(&mut waiting.children),
            )
        };
        // woken outside the lock: a waker may poll (and so lock) at once
        for (_, waker) in wakers {
            waker.wake();
        }
        for child in children.iter().filter_map(Weak::upgrade) {
            StopSignal(child).stop();
        }
    }

    /// Whether the signal was given.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Resolves once the signal is given.
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + MaybeSend + '_ {
        Stopped {
            signal: self,
            id: None,
        }
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        // the list holds no invariant a panic elsewhere could break
        self.0
            .waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One call's wait for a signal; its waker is listed while it waits.
struct Stopped<'a> {
    signal: &'a StopSignal,
    id: Option<u64>,
}

impl Future for Stopped<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_stopped() {
            return Poll::Ready(());
        }
        let signal = self.signal;
        let mut waiting = signal.waiting();
        // checked again under the lock: a stop that came between took the list before this
        // waker was in it
        if signal.is_stopped() {
            return Poll::Ready(());
        }
        match self.id {
            Some(id) => {
                if let Some((_, waker)) = waiting.wakers.iter_mut().find(|(at, _)| *at == id)
                    && !waker.will_wake(cx.waker())
                {
                    *waker = cx.waker().clone();
                }
            }
            None => {
                let id = waiting.next_id;
                waiting.next_id += 1;
                waiting.wakers.push((id, cx.waker().clone()));
                drop(waiting);
                self.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let mut waiting = self.signal.waiting();
            if let Some(at) = waiting.wakers.iter().position(|(listed, _)| *listed == id) {
                waiting.wakers.swap_remove(at);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll_once(future: Pin<&mut impl Future<Output = ()>>, waker: &Arc<CountingWaker>) -> bool {
        let waker = Waker::from(waker.clone());
        future.poll(&mut Context::from_waker(&waker)).is_ready()
    }

    #[test]
    fn every_wait_on_one_signal_is_woken_and_an_ended_wait_leaves_no_entry() {
        let signal = StopSignal::new();
        let (first_waker, second_waker) = (Arc::default(), Arc::default());
        let mut first = std::pin::pin!(signal.stopped());
        let mut second = std::pin::pin!(signal.stopped());
        assert!(!poll_once(first.as_mut(), &first_waker));
        assert!(!poll_once(second.as_mut(), &second_waker));
        // polled again with the same waker: still one entry each
        assert!(!poll_once(first.as_mut(), &first_waker));
        assert_eq!(signal.waiting().wakers.len(), 2);
        {
            let dropped_waker = Arc::default();
            let mut dropped = Box::pin(signal.stopped());
            assert!(!poll_once(dropped.as_mut(), &dropped_waker));
            assert_eq!(signal.waiting().wakers.len(), 3);
        }
        assert_eq!(
            signal.waiting().wakers.len(),
            2,
            "a wait that ended is unlisted"
        );

        signal.stop();
        assert_eq!(first_waker.0.load(Ordering::SeqCst), 1);
        assert_eq!(second_waker.0.load(Ordering::SeqCst), 1);
        assert!(poll_once(first.as_mut(), &first_waker));
        assert!(poll_once(second.as_mut(), &second_waker));
        assert!(signal.waiting().wakers.is_empty());
        // a wait begun after the signal is ready at once, and lists nothing
        let late_waker = Arc::default();
        assert!(poll_once(std::pin::pin!(signal.stopped()), &late_waker));
        assert!(signal.waiting().wakers.is_empty());
    }

    #[test]
    fn a_child_hears_its_parent_and_the_parent_does_not_hear_the_child() {
        let parent = StopSignal::new();
        let (child, other) = (parent.child(), parent.child());
        let grandchild = child.child();
        let waker = Arc::default();
        let mut waiting = std::pin::pin!(grandchild.stopped());
        assert!(!poll_once(waiting.as_mut(), &waker));
        other.stop();
        assert!(!parent.is_stopped() && !child.is_stopped() && !grandchild.is_stopped());
        {
            let _dropped = parent.child();
        }
        parent.child(); // prunes the dropped one
        assert_eq!(
            parent.waiting().children.len(),
            3,
            "the live two and the last one made"
        );
        parent.stop();
        assert!(child.is_stopped() && grandchild.is_stopped());
        assert_eq!(
            waker.0.load(Ordering::SeqCst),
            1,
            "a grandchild's wait is woken"
        );
        assert!(poll_once(waiting.as_mut(), &waker));
        assert!(parent.child().is_stopped());
    }
}
