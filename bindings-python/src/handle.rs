//! The connection a `Queue` or `AsyncQueue` holds, and the two ways of running a core call from
//! Python: blocking with the GIL released (`Blocking`), or as an asyncio awaitable (`Awaiting`).
//! Every operation is written once against [`Mode`].

use crate::errors::to_pyerr;
use crate::runtime::{
    Convert, OnReport, awaitable, awaitable_reporting, awaitable_stopping, block_on, runtime,
};
use crate::types::quoted;
use crawlq::binding::progress::{Reporter, Reporting, unread};
use crawlq::{Answers, LeaseHandle, LeaseOptions, StopSignal, Style, binding::json};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub type CoreQueue = crawlq::Queue<crawlq::RedisExecutor>;

/// What a `Queue`/`AsyncQueue` holds: how to connect, and the connection of this process.
pub struct Handle {
    pub name: String,
    url: String,
    config: crawlq::Config,
    /// The queue of this process: a forked child connects again instead of sharing the
    /// parent's socket and runtime.
    current: crawlq::binding::process::ProcessQueue<crawlq::RedisExecutor>,
    fixed_clock: AtomicI64,
}

impl Handle {
    pub fn new(
        url: &str,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Arc<Handle>> {
        let options = crate::convert::kwargs_to_json(options)?;
        let config = json::config_from_json(&options, Style::Snake).map_err(to_pyerr)?;
        crawlq::keys::check_queue_name(&config.key_prefix, name).map_err(to_pyerr)?;
        Ok(Arc::new(Handle {
            url: url.to_string(),
            name: name.to_string(),
            fixed_clock: AtomicI64::new(config.fixed_clock_ms.unwrap_or(i64::MIN)),
            config,
            current: Default::default(),
        }))
    }

    /// The connected queue of this process (connecting on first use and after a fork).
    pub async fn queue(&self) -> crawlq::Result<Arc<CoreQueue>> {
        if let Some(q) = self.current.current() {
            return Ok(q);
        }
        let q = CoreQueue::connect(&self.url, &self.name, self.config.clone()).await?;
        let clock = self.fixed_clock.load(Ordering::Relaxed);
        q.set_fixed_clock((clock != i64::MIN).then_some(clock));
        Ok(self.current.install(q, &self.url))
    }

    pub fn close(&self) {
        self.current.close();
    }

    pub fn set_fixed_clock(&self, ms: Option<i64>) {
        self.fixed_clock
            .store(ms.unwrap_or(i64::MIN), Ordering::Relaxed);
        if let Some(q) = self.current.current() {
            q.set_fixed_clock(ms);
        }
    }

    pub fn repr(&self, class: &str) -> String {
        format!(
            "{class}(name={}, prefix={})",
            quoted(&self.name),
            quoted(&self.config.key_prefix)
        )
    }
}

/// How a class runs a core call.
pub trait Mode {
    /// Run `op` on the connected queue and convert its result.
    fn run<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static;

    /// Lease: noticing Ctrl-C during a blocking wait, or releasing what arrives after the
    /// awaiting task was cancelled.
    fn lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        opts: LeaseOptions,
        convert: Convert<Vec<crawlq::Lease>>,
    ) -> PyResult<Py<PyAny>>;

    /// Ack `acks` and lease the next ones in one call, with the waits of [`Mode::lease`].
    fn ack_and_lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        acks: (Vec<LeaseHandle>, bool),
        opts: LeaseOptions,
        convert: Convert<(Answers, Vec<crawlq::Lease>)>,
    ) -> PyResult<Py<PyAny>>;

    /// Run a call that hands out leases (`leases_of` its result) with the waits of
    /// [`Mode::lease`]: `op` gets the stop of a blocking wait (Ctrl-C) or of an awaited one
    /// (the task's cancellation).
    fn leasing<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        leases_of: fn(&T) -> &Vec<crawlq::Lease>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Stop) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static;

    /// A long call that reports its progress: `op` gets where to send its reports, each of
    /// which goes (made a Python value by `report_out`) to `progress`, on the caller's thread
    /// (the event loop's for `AsyncQueue`). An exception `progress` raises (or Ctrl-C, when
    /// blocking) stops the call after its bounded step under way and is raised by the call.
    fn reporting<T, R, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        progress: Option<Py<PyAny>>,
        op: F,
        report_out: fn(Python<'_>, &R) -> PyResult<Py<PyAny>>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Reporter<R>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
        R: Send + 'static;
}

/// `Queue`: block with the GIL released, so threads run in parallel.
pub struct Blocking;

/// `AsyncQueue`: an asyncio awaitable.
pub struct Awaiting;

impl Mode for Blocking {
    fn run<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let h = handle.clone();
        let value = block_on(py, async move { op(h.queue().await?).await }).map_err(to_pyerr)?;
        convert(py, value)
    }

    fn lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        opts: LeaseOptions,
        convert: Convert<Vec<crawlq::Lease>>,
    ) -> PyResult<Py<PyAny>> {
        convert(py, lease_blocking(py, handle, opts)?)
    }

    fn ack_and_lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        (acks, single): (Vec<LeaseHandle>, bool),
        opts: LeaseOptions,
        convert: Convert<(Answers, Vec<crawlq::Lease>)>,
    ) -> PyResult<Py<PyAny>> {
        let value = interruptible(
            py,
            handle,
            move |q, stop| async move { q.ack_and_lease_answers(&acks, single, &opts, stop).await },
            |(_, leases)| leases,
        )?;
        convert(py, value)
    }

    fn leasing<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        leases_of: fn(&T) -> &Vec<crawlq::Lease>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Stop) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let value = interruptible(py, handle, op, leases_of)?;
        convert(py, value)
    }

    fn reporting<T, R, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        progress: Option<Py<PyAny>>,
        op: F,
        report_out: fn(Python<'_>, &R) -> PyResult<Py<PyAny>>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Reporter<R>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
        R: Send + 'static,
    {
        check_callable(py, &progress)?;
        let h = handle.clone();
        let call =
            Reporting::new(move |reporter| async move { op(h.queue().await?, reporter).await });
        let result = call.drive(
            |call| py.detach(|| call.next(runtime())),
            |report| {
                // between two bounded steps: Ctrl-C stops the call here
                py.check_signals()?;
                match &progress {
                    Some(progress) => progress.call1(py, (report_out(py, &report)?,)).map(drop),
                    None => Ok(()),
                }
            },
        )?;
        convert(py, result.map_err(to_pyerr)?)
    }
}

impl Mode for Awaiting {
    fn run<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let h = handle.clone();
        let fut = async move { op(h.queue().await?).await };
        Ok(awaitable(py, fut, convert, None)?.unbind())
    }

    fn lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        opts: LeaseOptions,
        convert: Convert<Vec<crawlq::Lease>>,
    ) -> PyResult<Py<PyAny>> {
        let h = handle.clone();
        let fut = |stop| async move { h.queue().await?.lease_interruptible(&opts, stop).await };
        awaitable_releasing(py, handle, fut, convert, |leases| leases)
    }

    fn ack_and_lease(
        py: Python<'_>,
        handle: &Arc<Handle>,
        (acks, single): (Vec<LeaseHandle>, bool),
        opts: LeaseOptions,
        convert: Convert<(Answers, Vec<crawlq::Lease>)>,
    ) -> PyResult<Py<PyAny>> {
        let h = handle.clone();
        let fut = |stop| async move {
            h.queue()
                .await?
                .ack_and_lease_answers(&acks, single, &opts, stop)
                .await
        };
        // cancelled while it ran: the acks stand, the new leases go back
        awaitable_releasing(py, handle, fut, convert, |(_, leases)| leases)
    }

    fn leasing<T, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        op: F,
        leases_of: fn(&T) -> &Vec<crawlq::Lease>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Stop) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let h = handle.clone();
        let fut = |stop: StopSignal| async move { op(h.queue().await?, Stop::Signal(stop)).await };
        // cancelled while it ran: what it answered stands, the new leases go back
        awaitable_releasing(py, handle, fut, convert, leases_of)
    }

    fn reporting<T, R, F, Fut>(
        py: Python<'_>,
        handle: &Arc<Handle>,
        progress: Option<Py<PyAny>>,
        op: F,
        report_out: fn(Python<'_>, &R) -> PyResult<Py<PyAny>>,
        convert: Convert<T>,
    ) -> PyResult<Py<PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>, Reporter<R>) -> Fut + Send + 'static,
        Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
        T: Send + 'static,
        R: Send + 'static,
    {
        check_callable(py, &progress)?;
        let h = handle.clone();
        if progress.is_none() {
            // no reader: the call runs as any call does, its reports going nowhere (a report
            // handled on the loop would hold each step up for a turn of it)
            let fut = async move { op(h.queue().await?, unread()).await };
            return Ok(awaitable(py, fut, convert, None)?.unbind());
        }
        let call = move |reporter| async move { op(h.queue().await?, reporter).await };
        let on_report: OnReport<R> = Box::new(move |py, report| match &progress {
            Some(progress) => progress.call1(py, (report_out(py, &report)?,)).map(drop),
            None => Ok(()),
        });
        Ok(awaitable_reporting(py, call, on_report, convert)?.unbind())
    }
}

/// A `progress` that is not callable is refused before anything is deleted.
fn check_callable(py: Python<'_>, progress: &Option<Py<PyAny>>) -> PyResult<()> {
    match progress {
        Some(p) if !p.bind(py).is_callable() => {
            Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "progress must be callable, got {}",
                p.bind(py).get_type().name()?
            )))
        }
        _ => Ok(()),
    }
}

/// A stop check for the core's interruptible waits: true once Ctrl-C (or another signal
/// handler) raised, with the exception kept to re-raise.
pub fn signal_check(raised: &Mutex<Option<PyErr>>) -> impl FnMut() -> bool + Send + '_ {
    move || {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                *raised.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                true
            }
        })
    }
}

/// Lease, noticing Ctrl-C (KeyboardInterrupt) while a blocking wait goes on.
pub fn lease_blocking(
    py: Python<'_>,
    handle: &Arc<Handle>,
    opts: LeaseOptions,
) -> PyResult<Vec<crawlq::Lease>> {
    interruptible(
        py,
        handle,
        move |q, stop| async move { q.lease_interruptible(&opts, stop).await },
        |leases| leases,
    )
}

/// Run a call that hands out leases, blocking with the GIL released; `op` gets a stop check
/// that notices Ctrl-C (or another signal handler that raised) between the slices of its wait.
/// An interrupted call's leases (`leases_of` its result) are released and the exception raised.
fn interruptible<T, F, Fut>(
    py: Python<'_>,
    handle: &Arc<Handle>,
    op: F,
    leases_of: fn(&T) -> &Vec<crawlq::Lease>,
) -> PyResult<T>
where
    F: FnOnce(Arc<CoreQueue>, Stop) -> Fut + Send,
    Fut: Future<Output = crawlq::Result<T>> + Send,
    T: Send,
{
    let raised = Arc::new(Mutex::new(None));
    let stop = {
        let raised = raised.clone();
        Stop::Check(Box::new(move || signal_check(&raised)()))
    };
    let h = handle.clone();
    let value = block_on(py, async move { op(h.queue().await?, stop).await }).map_err(to_pyerr)?;
    let err = raised.lock().unwrap_or_else(|e| e.into_inner()).take();
    match err {
        Some(err) => {
            release_quietly(
                handle,
                leases_of(&value)
                    .iter()
                    .map(|l| l.handle())
                    .collect::<Vec<_>>(),
            );
            Err(err)
        }
        None => Ok(value),
    }
}

/// An awaitable of a call that hands out leases (`call`, given the stop signal the awaiting
/// task's cancellation gives): cancelled, the call stops at its wait, or finishes the script
/// call under way, and the leases it returns (`leases_of` the result) are released, not left
/// to expire.
fn awaitable_releasing<T, C, Fut>(
    py: Python<'_>,
    handle: &Arc<Handle>,
    call: C,
    convert: Convert<T>,
    leases_of: fn(&T) -> &Vec<crawlq::Lease>,
) -> PyResult<Py<PyAny>>
where
    C: FnOnce(StopSignal) -> Fut,
    Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let for_discard = handle.clone();
    let discard = Box::new(move |value: T| {
        let leases = leases_of(&value).iter().map(|l| l.handle()).collect();
        release_in_background(&for_discard, leases);
    });
    let stop = StopSignal::new();
    let fut = call(stop.clone());
    Ok(awaitable_stopping(py, fut, convert, discard, stop)?.unbind())
}

/// How a call that hands out leases is told to stop: Ctrl-C noticed between the slices of a
/// blocking wait, or the awaiting task's cancellation.
pub enum Stop {
    /// Asked between the slices of the wait.
    Check(Box<dyn FnMut() -> bool + Send>),
    /// Ends the wait under way.
    Signal(StopSignal),
}

impl crawlq::Interrupt for Stop {
    fn interrupted(&mut self) -> bool {
        match self {
            Stop::Check(check) => check(),
            Stop::Signal(signal) => signal.is_stopped(),
        }
    }

    fn signal(&self) -> Option<&StopSignal> {
        match self {
            Stop::Check(_) => None,
            Stop::Signal(signal) => Some(signal),
        }
    }
}

/// Release leases the caller will not hand out (interrupted iterations, dropped iterators).
/// Waits (briefly, GIL released) when called from Python; from inside the runtime it only
/// schedules the release. `leases` is dropped once released (a closed loop's
/// `HeldByLoop` then lets the `next()` the close ended return).
pub fn release_quietly<L>(handle: &Arc<Handle>, leases: L)
where
    L: AsRef<[LeaseHandle]> + Send + 'static,
{
    if leases.as_ref().is_empty() {
        return;
    }
    let h = handle.clone();
    let release = async move {
        if let Ok(q) = h.queue().await {
            let _ = tokio::time::timeout(Duration::from_secs(2), q.release(leases.as_ref())).await;
        }
        drop(leases);
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        runtime().spawn(release);
        return;
    }
    // None: the interpreter is going away; the leases expire and are reclaimed instead.
    let _ = Python::try_attach(|py| py.detach(|| runtime().block_on(release)));
}

/// Release leases without waiting for the answer (from the event loop's thread).
pub fn release_in_background(handle: &Arc<Handle>, leases: Vec<LeaseHandle>) {
    if leases.is_empty() {
        return;
    }
    let h = handle.clone();
    runtime().spawn(async move {
        if let Ok(q) = h.queue().await {
            let _ = q.release(&leases).await;
        }
    });
}
