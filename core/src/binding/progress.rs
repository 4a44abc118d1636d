//! Long calls (deleting a crawl, a host or the whole queue) that report their progress to a
//! caller's callback. A blocking caller ([`Reporting`]: Python's `Queue`, PHP) runs its callback
//! on its own thread *between* polls of the call, never inside the runtime: a Python exception
//! or a PHP fatal error (a `longjmp`) raised in the callback must not cross tokio's frames. An
//! asynchronous one ([`forward_reports`]: asyncio, JavaScript) awaits its callback. Either way
//! the call is not polled while its report is handled (and it yields after each report, before
//! its next step is sent), so a callback that fails stops it right after the step it reported
//! (each shard's step under way, with several): each step is one atomic script, so what is
//! deleted stays deleted and calling again finishes the job.

use futures_channel::mpsc::{UnboundedSender, unbounded};
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use std::future::Future;
#[cfg(feature = "redis-executor")]
use std::pin::Pin;
#[cfg(feature = "redis-executor")]
use tokio::runtime::Runtime;

/// Where a long call sends its reports (each a snapshot of its totals so far).
pub type Reporter<R> = UnboundedSender<R>;

/// A reporter whose reports go nowhere: for a long call run without a reader, as any call runs.
pub fn unread<R>() -> Reporter<R> {
    unbounded().0
}

#[cfg(feature = "redis-executor")]
type Call<T> = Pin<Box<dyn Future<Output = crate::Result<T>> + Send>>;

#[cfg(feature = "redis-executor")]
/// What [`Reporting::next`] found: a report to hand to the caller, or the call's end.
#[derive(Debug)]
pub enum Step<T, R> {
    /// A report, in the order the call made them.
    Report(R),
    /// The call ended (after every report it made was handed out).
    Done(crate::Result<T>),
}

#[cfg(feature = "redis-executor")]
/// A long call driven step by step from a blocking caller: [`Reporting::next`] blocks until
/// the call reports or ends.
///
/// ```
/// use crawlq::binding::progress::{Reporting, Step};
/// let rt = crawlq::binding::process::runtime(crawlq::binding::process::Flavor::CurrentThread);
/// let mut call = Reporting::new(|reporter| async move {
///     for done in [10u64, 20, 30] {
///         let _ = reporter.unbounded_send(done);
///     }
///     Ok("deleted")
/// });
/// let mut seen = Vec::new();
/// let end = loop {
///     match call.next(rt) {
///         Step::Report(n) => seen.push(n), // the caller's callback runs here, outside the runtime
///         Step::Done(result) => break result,
///     }
/// };
/// assert_eq!(seen, [10, 20, 30]);
/// assert_eq!(end.unwrap(), "deleted");
/// ```
pub struct Reporting<T, R> {
    call: Option<Call<T>>,
    reports: futures_channel::mpsc::UnboundedReceiver<R>,
    result: Option<crate::Result<T>>,
}

#[cfg(feature = "redis-executor")]
impl<T: Send + 'static, R: Send + 'static> Reporting<T, R> {
    /// Start nothing yet: `call` is polled by [`Reporting::next`] only.
    pub fn new<F, Fut>(call: F) -> Self
    where
        F: FnOnce(Reporter<R>) -> Fut,
        Fut: Future<Output = crate::Result<T>> + Send + 'static,
    {
        let (reporter, reports) = unbounded();
        Reporting {
            call: Some(Box::pin(call(reporter))),
            reports,
            result: None,
        }
    }

    /// Drive the call to its end on the caller's thread: `next` blocks for its next step (a
    /// binding calls [`Reporting::next`] there, releasing its interpreter lock meanwhile) and
    /// each report goes to `on_report`, outside the runtime; an error from `on_report` stops the
    /// call right after the step it reported and is returned.
    ///
    /// ```
    /// use crawlq::binding::progress::Reporting;
    /// let rt = crawlq::binding::process::runtime(crawlq::binding::process::Flavor::CurrentThread);
    /// let call = |reporter: crawlq::binding::progress::Reporter<u64>| async move {
    ///     for n in [1, 2, 3] {
    ///         let _ = reporter.unbounded_send(n);
    ///         tokio::task::yield_now().await; // a bounded step
    ///     }
    ///     Ok(3u64)
    /// };
    /// let mut seen = Vec::new();
    /// let end = Reporting::new(call).drive(|c| c.next(rt), |n| {
    ///     seen.push(n);
    ///     Ok::<_, String>(())
    /// });
    /// assert_eq!((end.unwrap().unwrap(), seen), (3, vec![1, 2, 3]));
    /// let stopped = Reporting::new(call).drive(|c| c.next(rt), |n| if n < 2 { Ok(()) } else { Err(n) });
    /// assert_eq!(stopped.unwrap_err(), 2);
    /// ```
    pub fn drive<E>(
        mut self,
        mut next: impl FnMut(&mut Self) -> Step<T, R>,
        mut on_report: impl FnMut(R) -> Result<(), E>,
    ) -> Result<crate::Result<T>, E> {
        loop {
            match next(&mut self) {
                Step::Report(report) => on_report(report)?,
                Step::Done(result) => return Ok(result),
            }
        }
    }

    /// Block on `rt` until the call's next report or its end. Reports made before the end
    /// come out before it; after [`Step::Done`] the call is over (a further `next` answers an
    /// error).
    pub fn next(&mut self, rt: &Runtime) -> Step<T, R> {
        if let Ok(report) = self.reports.try_recv() {
            return Step::Report(report);
        }
        if let Some(result) = self.result.take() {
            return Step::Done(result);
        }
        let Some(call) = self.call.as_mut() else {
            return Step::Done(Err(crate::Error::InvalidArgument(
                "this call has already ended".into(),
            )));
        };
        let reports = &mut self.reports;
        // reports first: the call yields after each one, before its next step is sent
        let result = rt.block_on(async {
            match select(reports.next(), call.as_mut()).await {
                Either::Left((Some(report), _)) => Err(report),
                // the call dropped its reporter: only its end is left
                Either::Left((None, call)) => Ok(call.await),
                Either::Right((result, _)) => Ok(result),
            }
        });
        match result {
            Err(report) => Step::Report(report),
            Ok(result) => {
                self.call = None;
                match self.reports.try_recv() {
                    Ok(report) => {
                        self.result = Some(result);
                        Step::Report(report)
                    }
                    _ => Step::Done(result),
                }
            }
        }
    }
}

/// Drive a long call (made with a reporter) inside the runtime, awaiting `on_report` for each
/// report in order; the reports made before the end all come out before it. While a report is
/// handled the call is not polled, so when `on_report` answers false (the caller's callback
/// failed) the call stops after its bounded step under way, and this answers None. (The
/// asynchronous bindings hand each report to their event loop and wait for its callback.)
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use crawlq::binding::progress::forward_reports;
/// let call = |reporter: crawlq::binding::progress::Reporter<u64>| async move {
///     for n in [1, 2, 3] {
///         let _ = reporter.unbounded_send(n);
///         tokio::task::yield_now().await; // a bounded step
///     }
///     Ok("done")
/// };
/// let mut seen = Vec::new();
/// let end = forward_reports(call, |n| { seen.push(n); async { true } }).await;
/// assert_eq!(end.unwrap().unwrap(), "done");
/// assert_eq!(seen, [1, 2, 3]);
/// // stopped at its second report: the call does not run on
/// assert!(forward_reports(call, |n| async move { n < 2 }).await.is_none());
/// # });
/// ```
pub async fn forward_reports<T, R, C, F, G>(
    call: C,
    mut on_report: impl FnMut(R) -> G,
) -> Option<crate::Result<T>>
where
    C: FnOnce(Reporter<R>) -> F,
    F: Future<Output = crate::Result<T>>,
    G: Future<Output = bool>,
{
    let (reporter, mut reports) = unbounded();
    let call = call(reporter);
    futures_util::pin_mut!(call);
    loop {
        // reports first: the call yields after each one, before its next step is sent
        match select(reports.next(), call.as_mut()).await {
            Either::Left((Some(report), _)) => {
                if !on_report(report).await {
                    return None;
                }
            }
            Either::Left((None, _)) => return Some(call.await),
            Either::Right((result, _)) => {
                while let Ok(report) = reports.try_recv() {
                    if !on_report(report).await {
                        return None;
                    }
                }
                return Some(result);
            }
        }
    }
}
