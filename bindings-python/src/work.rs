//! `with q.leased()`, `for lease in q.work()` and their asyncio twins. They only sequence the
//! core's lease / ack / nack / release calls; what to do with an item stays the caller's.

use crate::errors::to_pyerr;
use crate::handle::{
    Awaiting, Handle, Mode, lease_blocking, release_in_background, release_quietly, signal_check,
};
use crate::runtime::{awaitable, awaitable_stopping, block_on};
use crate::types::Lease;
use crawlq::{Answer, BlockEnd, LeaseHandle, LeaseOptions, binding::Popped};
use pyo3::exceptions::{PyException, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::sync::{Arc, Mutex};

/// How a `leased()` block ended, and what to answer for its lease.
/// How a `with` block ended: Python's half of the core's rule (`Answer::after`).
fn block_end(exc_type: &Bound<'_, PyAny>, exc: &Bound<'_, PyAny>) -> PyResult<BlockEnd> {
    if exc_type.is_none() {
        return Ok(BlockEnd::Succeeded);
    }
    // KeyboardInterrupt, SystemExit, asyncio.CancelledError derive from BaseException only
    let py = exc_type.py();
    if !exc_type
        .cast::<PyType>()?
        .is_subclass(&py.get_type::<PyException>())?
    {
        return Ok(BlockEnd::Interrupted);
    }
    let name = exc_type.getattr("__name__")?.extract::<String>()?;
    let text = exc.str()?.to_string();
    Ok(BlockEnd::Failed(if text.is_empty() {
        name
    } else {
        format!("{name}: {text}")
    }))
}

async fn answer(handle: Arc<Handle>, lease: LeaseHandle, end: BlockEnd) -> crawlq::Result<()> {
    let q = handle.queue().await?;
    q.answer_one(&Answer::after(end), &lease).await
}

/// The first of the leases a `leased()` block took, as a Python object, kept in `slot` so the
/// block's end can answer it.
fn hold_first(
    py: Python<'_>,
    leases: Vec<crawlq::Lease>,
    slot: &Mutex<Option<Py<Lease>>>,
) -> PyResult<Option<Py<Lease>>> {
    let lease = leases
        .into_iter()
        .next()
        .map(|l| lease_object(py, l))
        .transpose()?;
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = lease.as_ref().map(|l| l.clone_ref(py));
    Ok(lease)
}

fn lease_object(py: Python<'_>, lease: crawlq::Lease) -> PyResult<Py<Lease>> {
    Py::new(py, Lease::new(py, lease)?)
}

/// Context manager returned by `Queue.leased()`.
#[pyclass(frozen, module = "crawlq")]
pub struct Leased {
    handle: Arc<Handle>,
    opts: LeaseOptions,
    lease: Mutex<Option<Py<Lease>>>,
}

impl Leased {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions) -> Leased {
        Leased {
            handle,
            opts,
            lease: Mutex::new(None),
        }
    }
}

#[pymethods]
impl Leased {
    fn __enter__(&self, py: Python<'_>) -> PyResult<Option<Py<Lease>>> {
        let leases = lease_blocking(py, &self.handle, self.opts)?;
        hold_first(py, leases, &self.lease)
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let Some(lease) = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Ok(false);
        };
        let lease = lease.get();
        if lease.is_answered() {
            return Ok(false);
        }
        let outcome = block_end(exc_type, exc)?;
        let (h, handle) = (self.handle.clone(), lease.handle());
        lease.mark_answered();
        match block_on(py, answer(h, handle, outcome)) {
            // a lost lease only matters when the block succeeded; otherwise the block's own
            // exception is the one to see
            Err(e @ crawlq::Error::LeaseLost { .. }) if exc_type.is_none() => Err(to_pyerr(e)),
            Err(e) if exc_type.is_none() => Err(to_pyerr(e)),
            _ => Ok(false),
        }
    }
}

/// Async context manager returned by `AsyncQueue.leased()`.
#[pyclass(frozen, module = "crawlq")]
pub struct AsyncLeased {
    handle: Arc<Handle>,
    opts: LeaseOptions,
    lease: Arc<Mutex<Option<Py<Lease>>>>,
}

impl AsyncLeased {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions) -> AsyncLeased {
        AsyncLeased {
            handle,
            opts,
            lease: Arc::default(),
        }
    }
}

#[pymethods]
impl AsyncLeased {
    fn __aenter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let slot = self.lease.clone();
        let fill = Box::new(move |py: Python<'_>, leases: Vec<crawlq::Lease>| {
            let lease = hold_first(py, leases, &slot)?;
            Ok(lease.into_pyobject(py)?.into_any().unbind())
        });
        Ok(Awaiting::lease(py, &self.handle, self.opts, fill)?.into_bound(py))
    }

    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: &Bound<'py, PyAny>,
        exc: &Bound<'py, PyAny>,
        _tb: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        let pending = match lease {
            Some(lease) if !lease.get().is_answered() => {
                let outcome = block_end(exc_type, exc)?;
                lease.get().mark_answered();
                Some((lease.get().handle(), outcome))
            }
            _ => None,
        };
        let block_succeeded = exc_type.is_none();
        let h = self.handle.clone();
        awaitable(
            py,
            async move {
                match pending {
                    Some((lease, outcome)) => match answer(h, lease, outcome).await {
                        Err(e) if block_succeeded => Err(e),
                        _ => Ok(()),
                    },
                    None => Ok(()),
                }
            },
            Box::new(|py, ()| Ok(false.into_pyobject(py)?.to_owned().into_any().unbind())),
            None,
        )
    }
}

/// Iterator returned by `Queue.work()`: the core's `LeaseCursor`, with Ctrl-C noticed while
/// it waits.
#[pyclass(frozen, module = "crawlq")]
pub struct Work {
    handle: Arc<Handle>,
    work: crawlq::binding::Work,
}

impl Work {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> Work {
        Work {
            handle,
            work: crawlq::binding::Work::new(opts, stop_when_empty),
        }
    }

    fn stop(&self) {
        release_quietly(&self.handle, self.work.close());
    }
}

#[pymethods]
impl Work {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<Lease>>> {
        if let Popped::Lease(next) = self.work.pop() {
            return lease_object(py, *next).map(Some);
        }
        let raised = Mutex::new(None);
        let h = self.handle.clone();
        let next = block_on(py, async {
            let q = h.queue().await?;
            self.work.next(&q, signal_check(&raised)).await
        });
        if let Some(err) = raised.into_inner().unwrap_or_else(|e| e.into_inner()) {
            self.stop();
            return Err(err);
        }
        match next {
            Ok(next) => next.map(|l| lease_object(py, l)).transpose(),
            Err(e) => {
                self.stop();
                Err(to_pyerr(e))
            }
        }
    }

    fn close(&self) {
        self.stop();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.stop();
        false
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        self.stop();
    }
}

#[pyclass(frozen, module = "crawlq")]
pub struct AsyncWork {
    handle: Arc<Handle>,
    work: Arc<crawlq::binding::Work>,
}

impl AsyncWork {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> AsyncWork {
        AsyncWork {
            handle,
            work: Arc::new(crawlq::binding::Work::new(opts, stop_when_empty)),
        }
    }
}

#[pymethods]
impl AsyncWork {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = |py: Python<'_>, lease: Option<crawlq::Lease>| match lease {
            Some(lease) => Ok(lease_object(py, lease)?.into_any()),
            None => Err(PyStopAsyncIteration::new_err(())),
        };
        match self.work.pop() {
            Popped::Lease(lease) => awaitable(
                py,
                async { Ok(()) },
                Box::new(move |py, ()| next(py, Some(*lease))),
                None,
            ),
            Popped::Finished => Err(PyStopAsyncIteration::new_err(())),
            Popped::Empty => {
                let (h, work, for_discard) =
                    (self.handle.clone(), self.work.clone(), self.handle.clone());
                // heard by the fetch's wait when the awaitable is cancelled and on aclose()
                let stop = self.work.call_signal();
                let listening = stop.clone();
                // cancelled: the fetch stops at its wait; a lease it got all the same goes back
                // (what it prefetched stays in the loop, released when the loop closes)
                awaitable_stopping(
                    py,
                    async move { work.next(&*h.queue().await?, listening).await },
                    Box::new(next),
                    Box::new(move |lease: Option<crawlq::Lease>| {
                        release_in_background(
                            &for_discard,
                            lease.iter().map(|l| l.handle()).collect(),
                        );
                    }),
                    stop,
                )
            }
        }
    }

    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // Closed now, released when awaited: an anext() right after cannot lease first.
        let (h, held) = (self.handle.clone(), self.work.close());
        awaitable(
            py,
            async move { crawlq::binding::Work::release(&*h.queue().await?, held).await },
            Box::new(|py, ()| Ok(py.None())),
            None,
        )
    }
}

impl Drop for AsyncWork {
    fn drop(&mut self) {
        release_quietly(&self.handle, self.work.close());
    }
}
