//! `with q.leased()`, `for lease in q.work()` and their asyncio twins. They only sequence the
//! core's lease / ack / nack / release calls; what to do with an item stays the caller's.

use crate::errors::to_pyerr;
use crate::queue::{
    Handle, lease_awaitable, lease_blocking, leases_to_py, release_in_background, release_quietly,
};
use crate::runtime::{awaitable, block_on};
use crate::types::Lease;
use crawlq::{LeaseHandle, LeaseOptions, NackOptions};
use pyo3::exceptions::{PyException, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// What an iterator holds: leases fetched but not handed out, and the one handed out last.
#[derive(Default)]
struct Held {
    buffer: VecDeque<Py<Lease>>,
    current: Option<Py<Lease>>,
}

impl Held {
    fn next(&mut self) -> Option<Py<Lease>> {
        let next = self.buffer.pop_front()?;
        self.current = Some(Python::attach(|py| next.clone_ref(py)));
        Some(next)
    }

    /// Everything still held that was not answered.
    fn drain_unanswered(&mut self) -> Vec<LeaseHandle> {
        let current = self.current.take();
        self.buffer
            .drain(..)
            .chain(current)
            .filter(|l| !l.get().is_answered())
            .map(|l| {
                l.get().mark_answered();
                l.get().handle()
            })
            .collect()
    }
}

/// Iterator returned by `Queue.work()`.
#[pyclass(frozen, module = "crawlq")]
pub struct Work {
    handle: Arc<Handle>,
    opts: LeaseOptions,
    stop_when_empty: bool,
    held: Mutex<Held>,
    finished: AtomicBool,
}

impl Work {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> Work {
        Work {
            handle,
            opts,
            stop_when_empty,
            held: Mutex::default(),
            finished: AtomicBool::new(false),
        }
    }

    fn stop(&self) {
        self.finished.store(true, Ordering::Relaxed);
        let leases = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain_unanswered();
        release_quietly(&self.handle, leases);
    }
}

#[pymethods]
impl Work {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<Lease>>> {
        if self.finished.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(next) = self.held.lock().unwrap_or_else(|e| e.into_inner()).next() {
            return Ok(Some(next));
        }
        loop {
            let leases = match lease_blocking(py, &self.handle, self.opts)
                .and_then(|l| leases_to_py(py, l))
            {
                Ok(leases) => leases,
                Err(e) => {
                    self.stop();
                    return Err(e);
                }
            };
            if leases.is_empty() {
                if self.stop_when_empty {
                    self.stop();
                    return Ok(None);
                }
                if let Err(e) = py.check_signals() {
                    self.stop();
                    return Err(e);
                }
                continue;
            }
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            held.buffer.extend(leases);
            return Ok(held.next());
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
    opts: LeaseOptions,
    stop_when_empty: bool,
    held: Arc<Mutex<Held>>,
    finished: Arc<AtomicBool>,
}

impl AsyncWork {
    pub fn new(handle: Arc<Handle>, opts: LeaseOptions, stop_when_empty: bool) -> AsyncWork {
        AsyncWork {
            handle,
            opts,
            stop_when_empty,
            held: Arc::default(),
            finished: Arc::default(),
        }
    }

    fn stop(&self) {
        self.finished.store(true, Ordering::Relaxed);
        let leases = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain_unanswered();
        release_quietly(&self.handle, leases);
    }
}

#[pymethods]
impl AsyncWork {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.finished.load(Ordering::Relaxed) {
            return Err(PyStopAsyncIteration::new_err(()));
        }
        let held = self.held.clone();
        if let Some(next) = held.lock().unwrap_or_else(|e| e.into_inner()).next() {
            return awaitable(
                py,
                async { Ok(()) },
                Box::new(move |_py, ()| Ok(next.into_any())),
                None,
            );
        }
        let (h, opts, stop_when_empty) = (self.handle.clone(), self.opts, self.stop_when_empty);
        let finished = self.finished.clone();
        let for_discard = self.handle.clone();
        awaitable(
            py,
            async move {
                let q = h.queue().await?;
                loop {
                    let leases = q.lease_with(&opts).await?;
                    if !leases.is_empty() || stop_when_empty {
                        return Ok(leases);
                    }
                }
            },
            Box::new(move |py, leases| {
                if leases.is_empty() {
                    finished.store(true, Ordering::Relaxed);
                    return Err(PyStopAsyncIteration::new_err(()));
                }
                let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
                held.buffer.extend(leases_to_py(py, leases)?);
                Ok(held.next().map(Py::into_any).unwrap_or_else(|| py.None()))
            }),
            Some(Box::new(move |leases: Vec<crawlq::Lease>| {
                release_in_background(&for_discard, leases.iter().map(|l| l.handle()).collect());
            })),
        )
    }

    /// Stop and release what the iterator still holds.
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.finished.store(true, Ordering::Relaxed);
        let leases = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain_unanswered();
        let h = self.handle.clone();
        awaitable(
            py,
            async move {
                if !leases.is_empty() {
                    h.queue().await?.release(&leases).await?;
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
        self.stop();
    }
}
