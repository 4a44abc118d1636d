//! Worker loops behind every binding's `work()` iterator: lease `max` at a time, hand the
//! leases out one by one, give back what is still held when the loop stops. Written once here,
//! so each binding only converts leases and drives the future its own way.

use crate::error::Result;
use crate::model::*;
use crate::queue::{Executor, Interrupt, LeaseOptions, Queue, StopSignal};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A worker loop's view of the queue, behind every binding's `work()` iterator: leases `max`
/// at a time, hands the leases out one by one, and gives back what it still holds when
/// closed (the prefetched leases and the one handed out last; releasing a lease that was
/// already answered changes nothing, by its fencing token).
///
/// The fetch does not borrow the cursor, so an async binding can keep the cursor behind a
/// plain mutex: [`LeaseCursor::pop`], then [`LeaseCursor::fetch`], then [`LeaseCursor::refill`].
///
/// ```no_run
/// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let mut cursor = crawlq::binding::work::LeaseCursor::new(crawlq::LeaseOptions { max: 10, ..Default::default() }, true);
/// while let Some(lease) = cursor.next(q, || false).await? {
///     q.ack(&[lease.handle()]).await?;
/// }
/// q.release(&cursor.close()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeaseCursor {
    opts: LeaseOptions,
    stop_when_empty: bool,
    buffer: VecDeque<Lease>,
    current: Option<LeaseHandle>,
    finished: bool,
}

impl LeaseCursor {
    /// A cursor leasing with `opts`. With `stop_when_empty` it finishes when a fetch waited
    /// `opts.wait` and got nothing; otherwise it keeps waiting until stopped or closed.
    pub fn new(opts: LeaseOptions, stop_when_empty: bool) -> LeaseCursor {
        LeaseCursor {
            opts,
            stop_when_empty,
            buffer: VecDeque::new(),
            current: None,
            finished: false,
        }
    }

    pub fn options(&self) -> LeaseOptions {
        self.opts
    }

    pub fn stop_when_empty(&self) -> bool {
        self.stop_when_empty
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Hand out the next prefetched lease, if any (no I/O).
    pub fn pop(&mut self) -> Option<Lease> {
        if self.finished {
            return None;
        }
        let next = self.buffer.pop_front()?;
        self.current = Some(next.handle());
        Some(next)
    }

    /// Take in a batch from [`LeaseCursor::fetch`] and hand out its first lease. An empty
    /// batch (nothing came, or the fetch was stopped) finishes the cursor. A cursor closed
    /// meanwhile keeps nothing: the batch is returned for release instead.
    pub fn refill(&mut self, leases: Vec<Lease>) -> Result<Option<Lease>, Vec<LeaseHandle>> {
        if self.finished {
            return Err(leases.iter().map(Lease::handle).collect());
        }
        if leases.is_empty() {
            self.finished = true;
            return Ok(None);
        }
        self.buffer.extend(leases);
        Ok(self.pop())
    }

    /// Fetch the next batch for a cursor with these settings. Without `stop_when_empty` it
    /// waits until leases come or `stop` (an [`Interrupt`]) says to give up (empty result).
    pub async fn fetch<E: Executor, S>(
        q: &Queue<E>,
        opts: &LeaseOptions,
        stop_when_empty: bool,
        mut stop: S,
    ) -> Result<Vec<Lease>>
    where
        S: Interrupt,
    {
        loop {
            let leases = q.lease_interrupted_by(opts, &mut stop).await?;
            if !leases.is_empty() || stop_when_empty || stop.interrupted() || q.is_closed() {
                return Ok(leases);
            }
        }
    }

    /// The next lease: prefetched, else fetched. `None` when finished.
    pub async fn next<E: Executor, S>(&mut self, q: &Queue<E>, stop: S) -> Result<Option<Lease>>
    where
        S: Interrupt,
    {
        if let Some(lease) = self.pop() {
            return Ok(Some(lease));
        }
        if self.finished {
            return Ok(None);
        }
        let leases = Self::fetch(q, &self.opts, self.stop_when_empty, stop).await?;
        match self.refill(leases) {
            Ok(next) => Ok(next),
            Err(_) => Ok(None),
        }
    }

    /// Finish, and return what the cursor still holds, to release.
    pub fn close(&mut self) -> Vec<LeaseHandle> {
        self.finished = true;
        let mut held: Vec<LeaseHandle> = self.current.take().into_iter().collect();
        held.extend(self.buffer.drain(..).map(|l| l.handle()));
        held
    }
}

/// A [`Work`] loop's interrupt: the caller's, or the loop's own close. The wait listens to
/// the caller's signal when it has one (a cancelled call; made by [`Work::call_signal`] it
/// hears the close too), else to the close; either ends a wait under way at once, and both are
/// checked between slices of the wait.
struct ClosedOr<'a, S: Interrupt> {
    closing: &'a StopSignal,
    stop: S,
}

impl<S: Interrupt> Interrupt for ClosedOr<'_, S> {
    fn interrupted(&mut self) -> bool {
        self.closing.is_stopped() || self.stop.interrupted()
    }

    fn signal(&self) -> Option<&StopSignal> {
        self.stop.signal().or(Some(self.closing))
    }
}

/// What [`Work::pop`] found without any I/O.
#[derive(Debug)]
pub enum Popped {
    /// A prefetched lease.
    Lease(Box<Lease>),
    /// The loop is over (stopped, closed, or the queue stayed empty with `stop_when_empty`).
    Finished,
    /// Nothing prefetched: [`Work::next`] has to fetch.
    Empty,
}

/// A `work()` loop that can be shared between threads and driven by any async runtime: every
/// method takes `&self`, and no lock is held across an await. The queue is passed to each call,
/// so a binding that reconnects (after a fork, say) keeps its loop.
///
/// ```no_run
/// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let work = crawlq::binding::Work::new(crawlq::LeaseOptions { max: 10, ..Default::default() }, true);
/// while let Some(lease) = work.next(q, || false).await? {
///     q.ack(&[lease.handle()]).await?;
/// }
/// work.finish(q).await?; // releases what it still holds (nothing, here)
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Work {
    cursor: Mutex<LeaseCursor>,
    closing: StopSignal,
    /// Whether [`Work::close`] was called: a `next()` that ends then waits for `released`.
    closed: AtomicBool,
    /// Whether a close took what the loop held (set under the cursor's lock: one close does).
    taken: AtomicBool,
    /// Given once what that close took is released (or dropped unreleased).
    released: StopSignal,
}

/// What [`Work::close`] took from a loop: the leases it still held (the prefetched ones and the
/// one handed out last), for [`Work::release`]. A [`Work::next`] ended by the close resolves
/// only once these are released, or this is dropped: a loop left because it was closed (an
/// aborted `for await`, say) has given its leases back by the time the loop's code goes on.
///
/// ```no_run
/// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
/// let work = crawlq::binding::Work::new(crawlq::LeaseOptions::default(), false);
/// let held = work.close(); // a next() under way stops at its wait...
/// crawlq::binding::Work::release(q, held).await?; // ...and resolves once these went back
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "release what the loop held with Work::release (dropping it leaves the leases to expire)"]
pub struct HeldByLoop {
    leases: Vec<LeaseHandle>,
    released: Option<StopSignal>,
}

impl HeldByLoop {
    /// The leases to release.
    pub fn leases(&self) -> &[LeaseHandle] {
        &self.leases
    }
}

impl AsRef<[LeaseHandle]> for HeldByLoop {
    fn as_ref(&self) -> &[LeaseHandle] {
        &self.leases
    }
}

impl Drop for HeldByLoop {
    fn drop(&mut self) {
        if let Some(released) = &self.released {
            released.stop();
        }
    }
}

impl Work {
    /// A loop leasing with `opts`; with `stop_when_empty` it ends when a fetch waited
    /// `opts.wait` and got nothing, otherwise it waits until closed.
    pub fn new(opts: LeaseOptions, stop_when_empty: bool) -> Work {
        Work {
            cursor: Mutex::new(LeaseCursor::new(opts, stop_when_empty)),
            closing: StopSignal::new(),
            closed: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            released: StopSignal::new(),
        }
    }

    fn cursor(&self) -> std::sync::MutexGuard<'_, LeaseCursor> {
        self.cursor.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next prefetched lease, or whether the loop is over, without I/O.
    pub fn pop(&self) -> Popped {
        let mut cursor = self.cursor();
        match cursor.pop() {
            Some(lease) => Popped::Lease(Box::new(lease)),
            None if cursor.is_finished() => Popped::Finished,
            None => Popped::Empty,
        }
    }

    /// The next lease: prefetched, else fetched (waiting in slices, checking `stop` and
    /// [`Work::close`] between them). `None` when the loop is over; when it is over because it
    /// was closed, `None` comes once what the close took is released ([`HeldByLoop`]). Leases
    /// that arrive after the loop was closed are released, not handed out.
    pub async fn next<E: Executor, S>(&self, q: &Queue<E>, stop: S) -> Result<Option<Lease>>
    where
        S: Interrupt,
    {
        // (the cursor's guard ends with this block: it is not held across an await)
        let settings = {
            let mut cursor = self.cursor();
            if let Some(lease) = cursor.pop() {
                return Ok(Some(lease));
            }
            (!cursor.is_finished()).then(|| (cursor.options(), cursor.stop_when_empty()))
        };
        let Some((opts, stop_when_empty)) = settings else {
            self.released_if_closed().await;
            return Ok(None);
        };
        let leases = LeaseCursor::fetch(
            q,
            &opts,
            stop_when_empty,
            ClosedOr {
                closing: &self.closing,
                stop,
            },
        )
        .await?;
        let refilled = self.cursor().refill(leases);
        match refilled {
            Ok(Some(next)) => Ok(Some(next)),
            Ok(None) => {
                self.released_if_closed().await;
                Ok(None)
            }
            Err(late) => {
                if !late.is_empty() {
                    q.release(&late).await?;
                }
                self.released_if_closed().await;
                Ok(None)
            }
        }
    }

    /// Once the loop was closed: wait until what the close took is released.
    async fn released_if_closed(&self) {
        if self.closed.load(Ordering::SeqCst) {
            self.released.stopped().await;
        }
    }

    /// A signal for one [`Work::next`] call that whoever cancels that call gives, and that
    /// [`Work::close`] gives too: passed as the call's interrupt, either ends its wait at once.
    ///
    /// ```no_run
    /// # async fn demo(q: &crawlq::Queue<crawlq::RedisExecutor>) -> crawlq::Result<()> {
    /// let work = crawlq::binding::Work::new(crawlq::LeaseOptions::default(), false);
    /// let cancel = work.call_signal(); // kept by whatever may cancel this call
    /// let next = work.next(q, cancel.clone()).await?; // ends at cancel.stop() or work.close()
    /// # let _ = next;
    /// # Ok(()) }
    /// ```
    pub fn call_signal(&self) -> StopSignal {
        self.closing.child()
    }

    /// Stop the loop and return what it still holds (the prefetched leases and the one handed
    /// out last), for the caller to release. A fetch under way stops at its wait at once (a
    /// script call under way finishes first; the leases it took are released by
    /// [`Work::next`], not handed out).
    pub fn close(&self) -> HeldByLoop {
        // (marked before the wait is ended, so the next() it ends sees it)
        self.closed.store(true, Ordering::SeqCst);
        self.closing.stop();
        let mut cursor = self.cursor();
        // (a later close takes nothing: the first one's release is what a next() waits for)
        let first = !self.taken.swap(true, Ordering::SeqCst);
        HeldByLoop {
            leases: cursor.close(),
            released: first.then(|| self.released.clone()),
        }
    }

    /// [`Work::close`], then release what was held (a lease already answered is unaffected:
    /// its lease key is not live any more). A binding whose `close` returns a promise calls
    /// [`Work::close`] itself when the call is made and [`Work::release`] in the promise, so a
    /// `next()` made right after the close cannot lease first.
    pub async fn finish<E: Executor>(&self, q: &Queue<E>) -> Result<()> {
        Work::release(q, self.close()).await
    }

    /// Release the leases [`Work::close`] returned (no round trip when there are none); a
    /// `next()` the close ended resolves then, whether the release succeeded or not.
    pub async fn release<E: Executor>(q: &Queue<E>, held: HeldByLoop) -> Result<()> {
        if !held.leases.is_empty() {
            q.release(&held.leases).await?;
        }
        Ok(())
    }
}
