//! `with q.leased()`, `for lease in q.work()` and their asyncio twins. They only sequence the
//! core's lease / ack / nack / release calls; what to do with an item stays the caller's.

use crate::errors::to_pyerr;
use crate::queue::{
    Handle, lease_awaitable, lease_blocking, leases_to_py, release_in_background, release_quietly,
    signal_check,
};
use crate::runtime::{awaitable, block_on};
use crate::types::Lease;
use crawlq::{LeaseCursor, LeaseHandle, LeaseOptions, NackOptions};
use pyo3::exceptions::{PyException, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::sync::{Arc, Mutex};

/// How a `leased()` block ended, and what to answer for its lease.
enum Outcome {
    Ack,
    Nack(String),
    Release,
}

fn outcome(
    py: Python<'_>,
    exc_type: &Bound<'_, PyAny>,
    exc: &Bound<'_, PyAny>,
) -> PyResult<Outcome> {
    if exc_type.is_none() {
        return Ok(Outcome::Ack);
    }
    // KeyboardInterrupt, SystemExit, asyncio.CancelledError: not the item's fault
    if !exc_type
        .cast::<PyType>()?
        .is_subclass(&py.get_type::<PyException>())?
    {
        return Ok(Outcome::Release);
    }
    let name = exc_type.getattr("__name__")?.extract::<String>()?;
    let text = exc.str()?.to_string();
    Ok(Outcome::Nack(if text.is_empty() {
        name
    } else {
        format!("{name}: {text}")
    }))
}

async fn answer(handle: Arc<Handle>, lease: LeaseHandle, outcome: Outcome) -> crawlq::Result<()> {
    let q = handle.queue().await?;
    let kept = match outcome {
        Outcome::Ack => q.ack(std::slice::from_ref(&lease)).await?[0],
        Outcome::Nack(reason) => {
            let opts = NackOptions {
                reason: Some(reason),
                ..NackOptions::default()
            };
            q.nack(&[(lease.clone(), opts)]).await?[0] != crawlq::NackOutcome::Lost
        }
        Outcome::Release => q.release(std::slice::from_ref(&lease)).await?[0],
    };
    if kept {
        Ok(())
    } else {
        Err(crawlq::Error::LeaseLost {
            id: lease.id,
            token: lease.token,
        })
    }
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
        let leases = leases_to_py(py, lease_blocking(py, &self.handle, self.opts)?)?;
        let lease = leases.into_iter().next();
        *self.lease.lock().unwrap_or_else(|e| e.into_inner()) =
            lease.as_ref().map(|l| l.clone_ref(py));
        Ok(lease)
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
        let outcome = outcome(py, exc_type, exc)?;
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
        lease_awaitable(
            py,
            &self.handle,
            self.opts,
            Box::new(move |py, leases| {
                let lease = leases_to_py(py, leases)?.into_iter().next();
                *slot.lock().unwrap_or_else(|e| e.into_inner()) =
                    lease.as_ref().map(|l| l.clone_ref(py));
                Ok(lease.into_pyobject(py)?.into_any().unbind())
            }),
        )
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
                let outcome = outcome(py, exc_type, exc)?;
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
    cursor: Mutex<LeaseCursor>,
}

impl Work {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> Work {
        Work {
            handle,
            cursor: Mutex::new(LeaseCursor::new(opts, stop_when_empty)),
        }
    }

    fn cursor(&self) -> std::sync::MutexGuard<'_, LeaseCursor> {
        self.cursor.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stop(&self) {
        let held = self.cursor().close();
        release_quietly(&self.handle, held);
    }
}

#[pymethods]
impl Work {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<Lease>>> {
        let (opts, stop_when_empty) = {
            let mut cursor = self.cursor();
            if let Some(next) = cursor.pop() {
                return Ok(Some(Py::new(py, Lease::new(py, next)?)?));
            }
            if cursor.is_finished() {
                return Ok(None);
            }
            (cursor.options(), cursor.stop_when_empty())
        };
        let raised = Mutex::new(None);
        let h = self.handle.clone();
        let fetched = block_on(py, async {
            let q = h.queue().await?;
            LeaseCursor::fetch(&q, &opts, stop_when_empty, signal_check(&raised)).await
        });
        let refilled = fetched.map(|leases| self.cursor().refill(leases));
        if let Some(err) = raised.into_inner().unwrap_or_else(|e| e.into_inner()) {
            self.stop();
            return Err(err);
        }
        match refilled {
            Ok(Ok(next)) => next.map(|l| Py::new(py, Lease::new(py, l)?)).transpose(),
            Ok(Err(late)) => {
                release_quietly(&self.handle, late);
                Ok(None)
            }
            Err(e) => {
                self.stop();
                Err(to_pyerr(e))
            }
        }
    }

    /// Stop and release what the iterator still holds.
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

/// Async iterator returned by `AsyncQueue.work()`.
#[pyclass(frozen, module = "crawlq")]
pub struct AsyncWork {
    handle: Arc<Handle>,
    cursor: Arc<Mutex<LeaseCursor>>,
}

impl AsyncWork {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> AsyncWork {
        AsyncWork {
            handle,
            cursor: Arc::new(Mutex::new(LeaseCursor::new(opts, stop_when_empty))),
        }
    }

    fn close_cursor(&self) -> Vec<LeaseHandle> {
        self.cursor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .close()
    }
}

#[pymethods]
impl AsyncWork {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (opts, stop_when_empty) = {
            let mut cursor = self.cursor.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(next) = cursor.pop() {
                let lease = Py::new(py, Lease::new(py, next)?)?;
                return awaitable(
                    py,
                    async { Ok(()) },
                    Box::new(move |_py, ()| Ok(lease.into_any())),
                    None,
                );
            }
            if cursor.is_finished() {
                return Err(PyStopAsyncIteration::new_err(()));
            }
            (cursor.options(), cursor.stop_when_empty())
        };
        let h = self.handle.clone();
        let (cursor, for_late, for_discard) = (
            self.cursor.clone(),
            self.handle.clone(),
            self.handle.clone(),
        );
        awaitable(
            py,
            async move {
                let q = h.queue().await?;
                LeaseCursor::fetch(&q, &opts, stop_when_empty, || false).await
            },
            Box::new(move |py, leases| {
                match cursor
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .refill(leases)
                {
                    Ok(Some(next)) => Ok(Py::new(py, Lease::new(py, next)?)?.into_any()),
                    Ok(None) => Err(PyStopAsyncIteration::new_err(())),
                    Err(late) => {
                        release_in_background(&for_late, late);
                        Err(PyStopAsyncIteration::new_err(()))
                    }
                }
            }),
            Some(Box::new(move |leases: Vec<crawlq::Lease>| {
                release_in_background(&for_discard, leases.iter().map(|l| l.handle()).collect());
            })),
        )
    }

    /// Stop and release what the iterator still holds.
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let held = self.close_cursor();
        let h = self.handle.clone();
        awaitable(
            py,
            async move {
                if !held.is_empty() {
                    h.queue().await?.release(&held).await?;
                }
                Ok(())
            },
            Box::new(|py, ()| Ok(py.None())),
            None,
        )
    }
}

impl Drop for AsyncWork {
    fn drop(&mut self) {
        let held = self.close_cursor();
        release_quietly(&self.handle, held);
    }
}
