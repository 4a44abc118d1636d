//! The tokio runtime behind every call, and the bridge to asyncio.
//!
//! The runtime is created lazily and again in a forked child (crawlers and process pools
//! fork): the parent's worker threads do not exist there. A parent's runtime is leaked in the
//! child rather than dropped, because dropping it would wait for threads that are gone.
//!
//! Runtime threads never touch Python. A finished task queues its completion and writes one
//! byte to a socket pair the event loop watches (`loop.add_reader`); the loop's thread then
//! builds the Python result and resolves the future. So no foreign thread holds a Python
//! thread state when the interpreter shuts down.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use tokio::runtime::Runtime;

/// The runtime of this process (rebuilt in a forked child).
pub fn runtime() -> &'static Runtime {
    crawlq::binding::process::runtime(crawlq::binding::process::Flavor::MultiThread { workers: 2 })
}

/// Run a future to completion with the GIL released.
pub fn block_on<F: Future + Send>(py: Python<'_>, fut: F) -> F::Output
where
    F::Output: Send,
{
    py.detach(|| runtime().block_on(fut))
}

/// Turns a result into a Python value (or exception); runs on the event loop's thread.
pub type Convert<T> = Box<dyn FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send>;

/// Called with the value when the awaiting Python task was cancelled before the result
/// arrived (for leases: give them back instead of leaving them to expire).
pub type Discard<T> = Box<dyn FnOnce(T) + Send>;

type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// The Rust half of one event loop's bridge: completions waiting for the loop's thread.
struct Pending {
    jobs: Mutex<Vec<Job>>,
    wake: UnixStream,
}

impl Pending {
    fn push(&self, job: Job) {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job);
        // A full socket buffer already holds a wake-up; a closed one means the loop is gone.
        let _ = (&self.wake).write(&[1]);
    }
}

/// The Python half: registered with `loop.add_reader`, runs queued completions.
#[pyclass(frozen)]
struct Bridge {
    pending: Arc<Pending>,
    reader: UnixStream,
}

#[pymethods]
impl Bridge {
    fn drain(&self, py: Python<'_>) {
        let mut sink = [0u8; 256];
        loop {
            match (&self.reader).read(&mut sink) {
                Ok(n) if n == sink.len() => continue,
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let jobs =
            std::mem::take(&mut *self.pending.jobs.lock().unwrap_or_else(|e| e.into_inner()));
        for job in jobs {
            job(py);
        }
    }
}

/// One bridge per event loop, dropped with the loop.
static BRIDGES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn bridge_for(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Arc<Pending>> {
    let bridges = BRIDGES
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("weakref")?
                    .call_method0("WeakKeyDictionary")?
                    .unbind(),
            )
        })?
        .bind(py);
    if let Ok(existing) = bridges.call_method1("get", (event_loop,))?.cast::<Bridge>() {
        return Ok(existing.get().pending.clone());
    }
    let (reader, wake) =
        UnixStream::pair().map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    reader.set_nonblocking(true)?;
    wake.set_nonblocking(true)?;
    let fd = reader.as_raw_fd();
    let pending = Arc::new(Pending {
        jobs: Mutex::new(Vec::new()),
        wake,
    });
    let bridge = Bound::new(
        py,
        Bridge {
            pending: pending.clone(),
            reader,
        },
    )?;
    event_loop.call_method1("add_reader", (fd, bridge.getattr("drain")?))?;
    bridges.set_item(event_loop, bridge)?;
    Ok(pending)
}

/// `async def` that awaits an asyncio future: what every async method returns, so the result is
/// a real coroutine (`asyncio.create_task`, `TaskGroup.create_task` and `inspect.iscoroutine`
/// accept it; a bare future they refuse).
static AS_COROUTINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn as_coroutine<'py>(py: Python<'py>, future: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let wrap = AS_COROUTINE.get_or_try_init(py, || {
        let module = PyModule::from_code(
            py,
            c"async def as_coroutine(future):\n    return await future\n",
            c"crawlq/_coroutine.py",
            c"crawlq._coroutine",
        )?;
        Ok::<_, PyErr>(module.getattr("as_coroutine")?.unbind())
    })?;
    wrap.bind(py).call1((future,))
}

/// A coroutine for a Rust future running on the runtime. The Rust future starts at once (as
/// the call did before it returned a coroutine); cancelling the task that awaits the coroutine
/// cancels the asyncio future inside it, which aborts the Rust task (`discard` gets a result
/// that arrived all the same).
pub fn awaitable<'py, F, T>(
    py: Python<'py>,
    fut: F,
    convert: Convert<T>,
    discard: Option<Discard<T>>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    spawn_awaitable(py, fut, convert, discard, None)
}

/// [`awaitable`] for a call that hands out leases: cancelling gives `stop` (which `fut`
/// listens to) instead of aborting the task, so the call ends at its wait, or after the script
/// call under way, and what it returns goes to `discard`. An abort would drop the reply of a
/// script that had taken leases, leaving them held until their lease time passed.
pub fn awaitable_stopping<'py, F, T>(
    py: Python<'py>,
    fut: F,
    convert: Convert<T>,
    discard: Discard<T>,
    stop: crawlq::StopSignal,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    spawn_awaitable(py, fut, convert, Some(discard), Some(stop))
}

fn spawn_awaitable<'py, F, T>(
    py: Python<'py>,
    fut: F,
    convert: Convert<T>,
    discard: Option<Discard<T>>,
    stop: Option<crawlq::StopSignal>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (pending, py_future) = loop_future(py)?;
    spawn_into(py, pending, py_future, fut, convert, discard, stop)
}

/// The running loop's bridge and a new future of that loop.
fn loop_future(py: Python<'_>) -> PyResult<(Arc<Pending>, Bound<'_, PyAny>)> {
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let pending = bridge_for(py, &event_loop)?;
    let py_future = event_loop.call_method0("create_future")?;
    Ok((pending, py_future))
}

/// Spawn `fut`, its result going to `py_future` through `pending`; the coroutine awaiting
/// that future.
fn spawn_into<'py, F, T>(
    py: Python<'py>,
    pending: Arc<Pending>,
    py_future: Bound<'py, PyAny>,
    fut: F,
    convert: Convert<T>,
    discard: Option<Discard<T>>,
    stop: Option<crawlq::StopSignal>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let future_ref: Py<PyAny> = py_future.clone().unbind();
    // boxed: a call's future is several kilobytes, copied at each move of the spawn otherwise
    let fut = Box::pin(fut);
    let task = runtime().spawn(async move {
        let result = fut.await;
        pending.push(Box::new(move |py| {
            let future = future_ref.bind(py);
            if future
                .call_method0("done")
                .and_then(|d| d.is_truthy())
                .unwrap_or(true)
            {
                // cancelled while the result was on its way
                if let (Ok(value), Some(discard)) = (result, discard) {
                    discard(value);
                }
                return;
            }
            let outcome = match result
                .map_err(crate::errors::to_pyerr)
                .and_then(|v| convert(py, v))
            {
                Ok(value) => future.call_method1("set_result", (value,)),
                Err(err) => future.call_method1("set_exception", (err.into_value(py),)),
            };
            if let Err(e) = outcome {
                e.write_unraisable(py, Some(future));
            }
        }));
    });
    let on_cancel = OnCancel(match stop {
        Some(stop) => Cancel::Stop(stop),
        None => Cancel::Abort(task.abort_handle()),
    });
    py_future.call_method1("add_done_callback", (on_cancel,))?;
    as_coroutine(py, py_future)
}

/// What a long call's report becomes on the event loop's thread (the caller's callback).
pub type OnReport<R> = Box<dyn Fn(Python<'_>, R) -> PyResult<()> + Send + Sync>;

/// [`awaitable`] for a long call that reports its progress (`call`, given where to send its
/// reports): each report goes to `on_report` on the event loop's thread, in order and before
/// the result, and the call waits for it. An exception `on_report` raises is the awaitable's,
/// and the call stops after its bounded step under way (each step is one atomic script;
/// calling again finishes it).
pub fn awaitable_reporting<'py, C, F, T, R>(
    py: Python<'py>,
    call: C,
    on_report: OnReport<R>,
    convert: Convert<T>,
) -> PyResult<Bound<'py, PyAny>>
where
    C: FnOnce(crawlq::binding::progress::Reporter<R>) -> F + Send + 'static,
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    T: Send + 'static,
    R: Send + 'static,
{
    let (pending, py_future) = loop_future(py)?;
    let on_report = Arc::new(on_report);
    let future_ref = Arc::new(py_future.clone().unbind());
    let reports_to = pending.clone();
    let fut = async move {
        let handled = crawlq::binding::progress::forward_reports(call, |report| {
            let (on_report, future_ref) = (on_report.clone(), future_ref.clone());
            let (go_on, answer) = tokio::sync::oneshot::channel();
            reports_to.push(Box::new(move |py| {
                let future = future_ref.bind(py);
                if future
                    .call_method0("done")
                    .and_then(|d| d.is_truthy())
                    .unwrap_or(true)
                {
                    let _ = go_on.send(false);
                    return;
                }
                let ok = match on_report(py, report) {
                    Ok(()) => true,
                    Err(err) => {
                        if let Err(e) = future.call_method1("set_exception", (err.into_value(py),))
                        {
                            e.write_unraisable(py, Some(future));
                        }
                        false
                    }
                };
                let _ = go_on.send(ok);
            }));
            // a job dropped unrun (its loop gone) stops the call too
            async move { answer.await.unwrap_or(false) }
        })
        .await;
        // stopped: the awaitable already holds the callback's exception
        handled.transpose()
    };
    let convert: Convert<Option<T>> = Box::new(move |py, value| match value {
        Some(value) => convert(py, value),
        None => Ok(py.None()),
    });
    spawn_into(py, pending, py_future, fut, convert, None, None)
}

/// What cancelling the awaiting task does to the Rust task (a done callback of the future).
#[pyclass(frozen)]
struct OnCancel(Cancel);

enum Cancel {
    /// Abort it (a call that hands out nothing a dropped reply would lose).
    Abort(tokio::task::AbortHandle),
    /// Tell it to stop at its next wait (a call that hands out leases).
    Stop(crawlq::StopSignal),
}

#[pymethods]
impl OnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            match &self.0 {
                Cancel::Abort(task) => task.abort(),
                Cancel::Stop(stop) => stop.stop(),
            }
        }
        Ok(())
    }
}
