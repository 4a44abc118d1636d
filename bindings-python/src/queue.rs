//! `Queue` (blocking, GIL released during every Redis call) and `AsyncQueue` (asyncio). Both
//! only convert arguments and results; every operation is the core's.

use crate::convert::{from_json, kwargs_to_json, to_json};
use crate::errors::to_pyerr;
use crate::runtime::{Convert, awaitable, block_on, runtime};
use crate::types::{Lease, SeedReport, quoted};
use crate::work::{AsyncLeased, AsyncWork, Leased, Work};
use crawlq::config::number_value;
use crawlq::{LeaseHandle, LeaseOptions, NackOptions, SeedItem, SeedOptions, Style, style};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub type CoreQueue = crawlq::Queue<crawlq::RedisExecutor>;

/// What a `Queue`/`AsyncQueue` holds: how to connect, and the connection of this process.
pub struct Handle {
    url: String,
    name: String,
    config: crawlq::Config,
    /// (pid that connected, queue): a forked child connects again instead of sharing the
    /// parent's socket and runtime.
    current: Mutex<Option<(u32, Arc<CoreQueue>)>>,
    fixed_clock: AtomicI64,
}

impl Handle {
    pub fn new(
        url: &str,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Arc<Handle>> {
        let config =
            style::config_from_json(&kwargs_to_json(options)?, Style::Snake).map_err(to_pyerr)?;
        crawlq::keys::Keys::new(&config.key_prefix, name).map_err(to_pyerr)?;
        Ok(Arc::new(Handle {
            url: url.to_string(),
            name: name.to_string(),
            fixed_clock: AtomicI64::new(config.fixed_clock_ms.unwrap_or(i64::MIN)),
            config,
            current: Mutex::new(None),
        }))
    }

    /// The connected queue of this process (connecting on first use and after a fork).
    pub async fn queue(&self) -> crawlq::Result<Arc<CoreQueue>> {
        let pid = std::process::id();
        if let Some((owner, q)) = &*self.current.lock().unwrap_or_else(|e| e.into_inner())
            && *owner == pid
        {
            return Ok(q.clone());
        }
        let q = Arc::new(CoreQueue::connect(&self.url, &self.name, self.config.clone()).await?);
        let clock = self.fixed_clock.load(Ordering::Relaxed);
        q.set_fixed_clock((clock != i64::MIN).then_some(clock));
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((pid, q.clone()));
        Ok(q)
    }

    fn close(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn set_fixed_clock(&self, ms: Option<i64>) {
        self.fixed_clock
            .store(ms.unwrap_or(i64::MIN), Ordering::Relaxed);
        if let Some((_, q)) = &*self.current.lock().unwrap_or_else(|e| e.into_inner()) {
            q.set_fixed_clock(ms);
        }
    }

    fn repr(&self, class: &str) -> String {
        format!(
            "{class}(name={}, prefix={})",
            quoted(&self.name),
            quoted(&self.config.key_prefix)
        )
    }
}

// ---- argument conversion shared by both classes ----

pub fn seed_args(
    items: &Bound<'_, PyAny>,
    priority: i64,
    delay: f64,
    payload: Option<&Bound<'_, PyAny>>,
    force: bool,
) -> PyResult<(Vec<SeedItem>, SeedOptions)> {
    let items_json = if items.is_instance_of::<PyString>() {
        to_json(items)?
    } else {
        let mut list = Vec::new();
        for item in items.try_iter().map_err(|_| {
            PyTypeError::new_err("items must be an iterable of URLs or hosts (str or dict)")
        })? {
            list.push(to_json(&item?)?);
        }
        Value::Array(list)
    };
    if let Some(problem) = style::seed_items_type_error(&items_json) {
        return Err(PyTypeError::new_err(problem));
    }
    let items = style::seed_items_from_json(&items_json, Style::Snake).map_err(to_pyerr)?;
    let payload = payload.map(to_json).transpose()?;
    let opts = json!({"priority": priority, "delay": number_value(delay), "payload": payload, "force": force});
    let opts = style::seed_options_from_json(&opts, Style::Snake).map_err(to_pyerr)?;
    Ok((items, opts))
}

pub fn lease_args(max: i64, wait: f64, ttl: Option<f64>) -> PyResult<LeaseOptions> {
    let opts = json!({"max": max, "wait": number_value(wait), "ttl": ttl.map(number_value)});
    style::lease_options_from_json(&opts, Style::Snake).map_err(to_pyerr)
}

fn nack_args(
    retry: bool,
    delay: Option<f64>,
    reason: Option<String>,
    rate_limited: bool,
) -> PyResult<NackOptions> {
    let opts = json!({"retry": retry, "delay": delay.map(number_value), "reason": reason, "rate_limited": rate_limited});
    style::nack_options_from_json(&opts, Style::Snake).map_err(to_pyerr)
}

fn seconds_arg(value: f64, what: &str) -> PyResult<Duration> {
    crawlq::config::duration_from_number(value, Style::Snake).ok_or_else(|| {
        to_pyerr(crawlq::Error::InvalidArgument(format!(
            "{what} must be a non-negative number of seconds"
        )))
    })
}

/// One lease or a sequence of leases, as given.
pub struct LeaseArg {
    pub leases: Vec<Py<Lease>>,
    pub single: bool,
}

impl LeaseArg {
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<LeaseArg> {
        if let Ok(one) = obj.cast::<Lease>() {
            return Ok(LeaseArg {
                leases: vec![one.clone().unbind()],
                single: true,
            });
        }
        let mut leases = Vec::new();
        if !obj.is_instance_of::<PyString>()
            && let Ok(iter) = obj.try_iter()
        {
            for item in iter {
                let item = item?;
                let lease = item.cast::<Lease>().map_err(|_| {
                    PyTypeError::new_err("expected a Lease or a sequence of Lease objects")
                })?;
                leases.push(lease.clone().unbind());
            }
            return Ok(LeaseArg {
                leases,
                single: false,
            });
        }
        Err(PyTypeError::new_err(
            "expected a Lease or a sequence of Lease objects",
        ))
    }

    pub fn handles(&self) -> Vec<LeaseHandle> {
        self.leases.iter().map(|l| l.get().handle()).collect()
    }

    fn mark_answered(&self, answered: &[bool]) {
        for (lease, done) in self.leases.iter().zip(answered) {
            if *done {
                lease.get().mark_answered();
            }
        }
    }

    /// One result for a single lease, a list for a sequence.
    fn shape<T: for<'py> IntoPyObject<'py> + Clone>(
        &self,
        py: Python<'_>,
        results: Vec<T>,
    ) -> PyResult<Py<PyAny>> {
        if self.single {
            Ok(results
                .into_iter()
                .next()
                .into_pyobject(py)
                .map_err(Into::<PyErr>::into)?
                .into_any()
                .unbind())
        } else {
            Ok(results.into_pyobject(py)?.into_any().unbind())
        }
    }
}

pub fn leases_to_py(py: Python<'_>, leases: Vec<crawlq::Lease>) -> PyResult<Vec<Py<Lease>>> {
    leases
        .into_iter()
        .map(|l| Py::new(py, Lease::new(py, l)?))
        .collect()
}

fn json_out(py: Python<'_>, value: Value) -> PyResult<Py<PyAny>> {
    from_json(py, &value)
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
    let raised = Mutex::new(None);
    let h = handle.clone();
    let leases = block_on(py, async {
        h.queue()
            .await?
            .lease_interruptible(&opts, signal_check(&raised))
            .await
    })
    .map_err(to_pyerr)?;
    match raised.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(err) => {
            release_quietly(handle, leases.iter().map(|l| l.handle()).collect());
            Err(err)
        }
        None => Ok(leases),
    }
}

/// Release leases the caller will not hand out (interrupted iterations, cancelled awaits).
/// Waits (briefly, GIL released) when called from Python; from inside the runtime it only
/// schedules the release.
pub fn release_quietly(handle: &Arc<Handle>, leases: Vec<LeaseHandle>) {
    if leases.is_empty() {
        return;
    }
    let h = handle.clone();
    let release = async move {
        if let Ok(q) = h.queue().await {
            let _ = tokio::time::timeout(Duration::from_secs(2), q.release(&leases)).await;
        }
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
    let h = handle.clone();
    runtime().spawn(async move {
        if let Ok(q) = h.queue().await {
            let _ = q.release(&leases).await;
        }
    });
}

/// A crawl frontier in Redis (blocking API; the GIL is released during every Redis call, so
/// threads run in parallel).
#[pyclass(frozen, module = "crawlq")]
pub struct Queue {
    pub handle: Arc<Handle>,
}

#[pymethods]
impl Queue {
    /// Connect to Redis at `url` and open the queue `name`. Options (seconds for durations):
    /// lease_ttl, max_attempts, backoff, backoff_base, backoff_max, backoff_jitter, host_delay,
    /// host_key, key_prefix, connect_timeout, command_timeout, max_payload_bytes, seed_batch,
    /// reclaim_batch, adaptive_delay_step, adaptive_delay_max, tls_ca_file.
    #[new]
    #[pyo3(signature = (url, name, **options))]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Queue> {
        let handle = Handle::new(url, name, options)?;
        let h = handle.clone();
        block_on(py, async move { h.queue().await.map(|_| ()) }).map_err(to_pyerr)?;
        Ok(Queue { handle })
    }

    /// The queue's name.
    #[getter]
    fn name(&self) -> &str {
        &self.handle.name
    }

    /// Seed URLs or hosts (str, or dict with url/host and optional priority, delay, payload,
    /// force). Returns a SeedReport; invalid items are reported, never raised.
    #[pyo3(signature = (items, *, priority = 0, delay = 0.0, payload = None, force = false))]
    fn seed(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        priority: i64,
        delay: f64,
        payload: Option<&Bound<'_, PyAny>>,
        force: bool,
    ) -> PyResult<SeedReport> {
        let (items, opts) = seed_args(items, priority, delay, payload, force)?;
        let h = self.handle.clone();
        let report = block_on(
            py,
            async move { h.queue().await?.seed(&items, &opts).await },
        )
        .map_err(to_pyerr)?;
        SeedReport::new(py, report)
    }

    /// Lease up to `max` items, waiting up to `wait` seconds when none is ready.
    #[pyo3(signature = (max = 1, wait = 5.0, *, ttl = None))]
    fn lease(
        &self,
        py: Python<'_>,
        max: i64,
        wait: f64,
        ttl: Option<f64>,
    ) -> PyResult<Vec<Py<Lease>>> {
        let opts = lease_args(max, wait, ttl)?;
        let leases = lease_blocking(py, &self.handle, opts)?;
        leases_to_py(py, leases)
    }

    /// Ack a lease (or a sequence, in one round trip): True, or False when the lease was not
    /// live any more (nothing changed).
    fn ack(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let handles = arg.handles();
        let h = self.handle.clone();
        let flags =
            block_on(py, async move { h.queue().await?.ack(&handles).await }).map_err(to_pyerr)?;
        arg.mark_answered(&flags);
        arg.shape(py, flags)
    }

    /// Fail a lease (or a sequence): "retried", "dead" or "lost".
    #[pyo3(signature = (lease, *, retry = true, delay = None, reason = None, rate_limited = false))]
    fn nack(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, PyAny>,
        retry: bool,
        delay: Option<f64>,
        reason: Option<String>,
        rate_limited: bool,
    ) -> PyResult<Py<PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let opts = nack_args(retry, delay, reason, rate_limited)?;
        let pairs: Vec<_> = arg
            .handles()
            .into_iter()
            .map(|h| (h, opts.clone()))
            .collect();
        let h = self.handle.clone();
        let outcomes =
            block_on(py, async move { h.queue().await?.nack(&pairs).await }).map_err(to_pyerr)?;
        arg.mark_answered(
            &outcomes
                .iter()
                .map(|o| *o != crawlq::NackOutcome::Lost)
                .collect::<Vec<_>>(),
        );
        arg.shape(py, outcomes.iter().map(|o| o.as_str()).collect())
    }

    /// Push a lease's deadline to now + `ttl` seconds. For one lease: the new `expires_at`,
    /// or LeaseLostError. For a sequence: one new `expires_at` or None per lease.
    fn extend(&self, py: Python<'_>, lease: &Bound<'_, PyAny>, ttl: f64) -> PyResult<Py<PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let ttl = seconds_arg(ttl, "ttl")?;
        let handles = arg.handles();
        let h = self.handle.clone();
        let deadlines = block_on(
            py,
            async move { h.queue().await?.extend(&handles, ttl).await },
        )
        .map_err(to_pyerr)?;
        extend_result(py, &arg, deadlines)
    }

    /// Give a lease (or a sequence) back untouched: front of its lane, attempt not counted.
    fn release(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let handles = arg.handles();
        let h = self.handle.clone();
        let flags = block_on(py, async move { h.queue().await?.release(&handles).await })
            .map_err(to_pyerr)?;
        arg.mark_answered(&flags);
        arg.shape(py, flags)
    }

    /// Recover up to `limit` expired leases now (lease calls also do this, bounded).
    #[pyo3(signature = (limit = 1000))]
    fn reclaim(&self, py: Python<'_>, limit: usize) -> PyResult<Py<PyAny>> {
        let h = self.handle.clone();
        let r =
            block_on(py, async move { h.queue().await?.reclaim(limit).await }).map_err(to_pyerr)?;
        json_out(py, style::reclaim_to_json(&r, Style::Snake))
    }

    /// Depth and counters (exact, O(1)).
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let h = self.handle.clone();
        let s = block_on(py, async move { h.queue().await?.stats().await }).map_err(to_pyerr)?;
        json_out(py, style::stats_to_json(&s, Style::Snake))
    }

    /// A page of dead letters, oldest first.
    #[pyo3(signature = (limit = 100, offset = 0))]
    fn dead(&self, py: Python<'_>, limit: usize, offset: usize) -> PyResult<Py<PyAny>> {
        let h = self.handle.clone();
        let page = block_on(
            py,
            async move { h.queue().await?.dead(limit, offset).await },
        )
        .map_err(to_pyerr)?;
        json_out(
            py,
            Value::Array(
                page.items
                    .iter()
                    .map(|d| style::dead_letter_to_json(d, Style::Snake))
                    .collect(),
            ),
        )
    }

    /// Queue dead letters again (the given ids, or all); returns how many.
    #[pyo3(signature = (ids = None))]
    fn requeue_dead(&self, py: Python<'_>, ids: Option<Vec<String>>) -> PyResult<u64> {
        let h = self.handle.clone();
        block_on(py, async move {
            h.queue().await?.requeue_dead(ids.as_deref()).await
        })
        .map_err(to_pyerr)
    }

    /// Delete every dead letter; returns how many.
    fn purge_dead(&self, py: Python<'_>) -> PyResult<u64> {
        let h = self.handle.clone();
        block_on(py, async move { h.queue().await?.purge_dead().await }).map_err(to_pyerr)
    }

    /// Set a host's politeness delay in seconds for every worker (None: back to the default).
    fn set_host_delay(
        &self,
        py: Python<'_>,
        host: &str,
        seconds: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let delay = seconds.map(|s| seconds_arg(s, "seconds")).transpose()?;
        let (h, host) = (self.handle.clone(), host.to_string());
        let info = block_on(py, async move {
            h.queue().await?.set_host_delay(&host, delay).await
        })
        .map_err(to_pyerr)?;
        json_out(py, style::host_info_to_json(&info, Style::Snake))
    }

    /// Politeness state of a host.
    fn host_info(&self, py: Python<'_>, host: &str) -> PyResult<Py<PyAny>> {
        let (h, host) = (self.handle.clone(), host.to_string());
        let info = block_on(py, async move { h.queue().await?.host_info(&host).await })
            .map_err(to_pyerr)?;
        json_out(py, style::host_info_to_json(&info, Style::Snake))
    }

    /// The next items lease would take (one per leasable host), without leasing them.
    #[pyo3(signature = (limit = 10))]
    fn peek(&self, py: Python<'_>, limit: usize) -> PyResult<Py<PyAny>> {
        let h = self.handle.clone();
        let items =
            block_on(py, async move { h.queue().await?.peek(limit).await }).map_err(to_pyerr)?;
        json_out(
            py,
            Value::Array(
                items
                    .iter()
                    .map(|i| style::stored_item_to_json(i, Style::Snake))
                    .collect(),
            ),
        )
    }

    /// `with q.leased() as lease:` acks when the block succeeds, nacks (with the exception as
    /// reason) when it raises, releases on KeyboardInterrupt. `lease` is None if nothing came
    /// within `wait` seconds.
    #[pyo3(signature = (wait = 5.0, *, ttl = None))]
    fn leased(&self, wait: f64, ttl: Option<f64>) -> PyResult<Leased> {
        let opts = lease_args(1, wait, ttl)?;
        Ok(Leased::new(self.handle.clone(), opts))
    }

    /// Iterate over leases (`max` per round trip) until interrupted, or until the queue stays
    /// empty for `wait` seconds when `stop_when_empty`. Leaving the loop releases what the
    /// iterator still holds: prefetched leases and the current one if it was not answered.
    #[pyo3(signature = (max = 10, wait = 5.0, *, ttl = None, stop_when_empty = false))]
    fn work(&self, max: i64, wait: f64, ttl: Option<f64>, stop_when_empty: bool) -> PyResult<Work> {
        let opts = lease_args(max, wait, ttl)?;
        Ok(Work::new(self.handle.clone(), opts, stop_when_empty))
    }

    /// Drop the connection (a later call connects again).
    fn close(&self) {
        self.handle.close();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.handle.close();
        false
    }

    /// Test only: pin the scripts' clock to `ms` since the epoch (None: the server's clock).
    fn _set_fixed_clock(&self, ms: Option<i64>) {
        self.handle.set_fixed_clock(ms);
    }

    fn __repr__(&self) -> String {
        self.handle.repr("Queue")
    }
}

fn extend_result(
    py: Python<'_>,
    arg: &LeaseArg,
    deadlines: Vec<Option<i64>>,
) -> PyResult<Py<PyAny>> {
    for (lease, deadline) in arg.leases.iter().zip(&deadlines) {
        if let Some(d) = deadline {
            lease.get().set_expires_at_ms(*d);
        }
    }
    let seconds: Vec<Option<f64>> = deadlines
        .iter()
        .map(|d| d.map(|ms| ms as f64 / 1000.0))
        .collect();
    if arg.single {
        let lease = arg.leases[0].get();
        return match seconds[0] {
            Some(s) => Ok(s.into_pyobject(py)?.into_any().unbind()),
            None => Err(to_pyerr(crawlq::Error::LeaseLost {
                id: lease.core.id.clone(),
                token: lease.core.token,
            })),
        };
    }
    arg.shape(py, seconds)
}

/// The asyncio twin of `Queue`: every method returns an awaitable. Constructing it does no
/// I/O; it connects on first use (or use `await AsyncQueue.connect(...)`).
#[pyclass(frozen, module = "crawlq")]
pub struct AsyncQueue {
    pub handle: Arc<Handle>,
}

/// Results that core already shaped as JSON (stats, dead letters, host info...).
fn json_convert() -> Convert<Value> {
    Box::new(|py, v| from_json(py, &v))
}

fn convert_with<T: Send + 'static>(
    f: impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
) -> Convert<T> {
    Box::new(f)
}

impl AsyncQueue {
    fn run<'py, T, F, Fut>(
        &self,
        py: Python<'py>,
        op: F,
        convert: Convert<T>,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(Arc<CoreQueue>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = crawlq::Result<T>> + Send,
        T: Send + 'static,
    {
        let h = self.handle.clone();
        awaitable(py, async move { op(h.queue().await?).await }, convert, None)
    }
}

#[pymethods]
impl AsyncQueue {
    #[new]
    #[pyo3(signature = (url, name, **options))]
    fn new(url: &str, name: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<AsyncQueue> {
        Ok(AsyncQueue {
            handle: Handle::new(url, name, options)?,
        })
    }

    /// Create and connect (fails at once when Redis is unreachable).
    #[classmethod]
    #[pyo3(signature = (url, name, **options))]
    fn connect<'py>(
        _cls: &Bound<'py, PyType>,
        py: Python<'py>,
        url: &str,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let handle = Handle::new(url, name, options)?;
        let h = handle.clone();
        awaitable(
            py,
            async move { h.queue().await.map(|_| ()) },
            convert_with(move |py, ()| Ok(Py::new(py, AsyncQueue { handle })?.into_any())),
            None,
        )
    }

    #[getter]
    fn name(&self) -> &str {
        &self.handle.name
    }

    #[pyo3(signature = (items, *, priority = 0, delay = 0.0, payload = None, force = false))]
    fn seed<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        priority: i64,
        delay: f64,
        payload: Option<&Bound<'py, PyAny>>,
        force: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (items, opts) = seed_args(items, priority, delay, payload, force)?;
        self.run(
            py,
            move |q| async move { q.seed(&items, &opts).await },
            convert_with(|py, r| Ok(Py::new(py, SeedReport::new(py, r)?)?.into_any())),
        )
    }

    #[pyo3(signature = (max = 1, wait = 5.0, *, ttl = None))]
    fn lease<'py>(
        &self,
        py: Python<'py>,
        max: i64,
        wait: f64,
        ttl: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = lease_args(max, wait, ttl)?;
        lease_awaitable(
            py,
            &self.handle,
            opts,
            convert_with(|py, leases| {
                Ok(leases_to_py(py, leases)?
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }),
        )
    }

    fn ack<'py>(&self, py: Python<'py>, lease: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let handles = arg.handles();
        self.run(
            py,
            move |q| async move { q.ack(&handles).await },
            convert_with(move |py, flags: Vec<bool>| {
                arg.mark_answered(&flags);
                arg.shape(py, flags)
            }),
        )
    }

    #[pyo3(signature = (lease, *, retry = true, delay = None, reason = None, rate_limited = false))]
    fn nack<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyAny>,
        retry: bool,
        delay: Option<f64>,
        reason: Option<String>,
        rate_limited: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let opts = nack_args(retry, delay, reason, rate_limited)?;
        let pairs: Vec<_> = arg
            .handles()
            .into_iter()
            .map(|h| (h, opts.clone()))
            .collect();
        self.run(
            py,
            move |q| async move { q.nack(&pairs).await },
            convert_with(move |py, outcomes: Vec<crawlq::NackOutcome>| {
                arg.mark_answered(
                    &outcomes
                        .iter()
                        .map(|o| *o != crawlq::NackOutcome::Lost)
                        .collect::<Vec<_>>(),
                );
                arg.shape(py, outcomes.iter().map(|o| o.as_str()).collect())
            }),
        )
    }

    fn extend<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyAny>,
        ttl: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let ttl = seconds_arg(ttl, "ttl")?;
        let handles = arg.handles();
        self.run(
            py,
            move |q| async move { q.extend(&handles, ttl).await },
            convert_with(move |py, d| extend_result(py, &arg, d)),
        )
    }

    fn release<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arg = LeaseArg::extract(lease)?;
        let handles = arg.handles();
        self.run(
            py,
            move |q| async move { q.release(&handles).await },
            convert_with(move |py, flags: Vec<bool>| {
                arg.mark_answered(&flags);
                arg.shape(py, flags)
            }),
        )
    }

    #[pyo3(signature = (limit = 1000))]
    fn reclaim<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            move |q| async move {
                q.reclaim(limit)
                    .await
                    .map(|r| style::reclaim_to_json(&r, Style::Snake))
            },
            json_convert(),
        )
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            |q| async move {
                q.stats()
                    .await
                    .map(|s| style::stats_to_json(&s, Style::Snake))
            },
            json_convert(),
        )
    }

    #[pyo3(signature = (limit = 100, offset = 0))]
    fn dead<'py>(
        &self,
        py: Python<'py>,
        limit: usize,
        offset: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            move |q| async move {
                let page = q.dead(limit, offset).await?;
                Ok(Value::Array(
                    page.items
                        .iter()
                        .map(|d| style::dead_letter_to_json(d, Style::Snake))
                        .collect(),
                ))
            },
            json_convert(),
        )
    }

    #[pyo3(signature = (ids = None))]
    fn requeue_dead<'py>(
        &self,
        py: Python<'py>,
        ids: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            move |q| async move { q.requeue_dead(ids.as_deref()).await },
            convert_with(|py, n: u64| Ok(n.into_pyobject(py)?.into_any().unbind())),
        )
    }

    fn purge_dead<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            |q| async move { q.purge_dead().await },
            convert_with(|py, n: u64| Ok(n.into_pyobject(py)?.into_any().unbind())),
        )
    }

    fn set_host_delay<'py>(
        &self,
        py: Python<'py>,
        host: String,
        seconds: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let delay = seconds.map(|s| seconds_arg(s, "seconds")).transpose()?;
        self.run(
            py,
            move |q| async move {
                q.set_host_delay(&host, delay)
                    .await
                    .map(|i| style::host_info_to_json(&i, Style::Snake))
            },
            json_convert(),
        )
    }

    fn host_info<'py>(&self, py: Python<'py>, host: String) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            move |q| async move {
                q.host_info(&host)
                    .await
                    .map(|i| style::host_info_to_json(&i, Style::Snake))
            },
            json_convert(),
        )
    }

    #[pyo3(signature = (limit = 10))]
    fn peek<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        self.run(
            py,
            move |q| async move {
                let items = q.peek(limit).await?;
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|i| style::stored_item_to_json(i, Style::Snake))
                        .collect(),
                ))
            },
            json_convert(),
        )
    }

    /// `async with aq.leased() as lease:` (see Queue.leased).
    #[pyo3(signature = (wait = 5.0, *, ttl = None))]
    fn leased(&self, wait: f64, ttl: Option<f64>) -> PyResult<AsyncLeased> {
        let opts = lease_args(1, wait, ttl)?;
        Ok(AsyncLeased::new(self.handle.clone(), opts))
    }

    /// `async for lease in aq.work():` (see Queue.work); stops cleanly when the task is
    /// cancelled, releasing what it holds.
    #[pyo3(signature = (max = 10, wait = 5.0, *, ttl = None, stop_when_empty = false))]
    fn work(
        &self,
        max: i64,
        wait: f64,
        ttl: Option<f64>,
        stop_when_empty: bool,
    ) -> PyResult<AsyncWork> {
        let opts = lease_args(max, wait, ttl)?;
        Ok(AsyncWork::new(self.handle.clone(), opts, stop_when_empty))
    }

    fn close(&self) {
        self.handle.close();
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.unbind();
        awaitable(
            py,
            async { Ok(()) },
            convert_with(move |_py, ()| Ok(me.into_any())),
            None,
        )
    }

    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.handle.close();
        awaitable(
            py,
            async { Ok(()) },
            convert_with(|py, ()| Ok(false.into_pyobject(py)?.to_owned().into_any().unbind())),
            None,
        )
    }

    fn _set_fixed_clock(&self, ms: Option<i64>) {
        self.handle.set_fixed_clock(ms);
    }

    fn __repr__(&self) -> String {
        self.handle.repr("AsyncQueue")
    }
}

/// An awaitable lease call; leases that arrive after the awaiting task was cancelled are
/// released rather than left to expire.
pub fn lease_awaitable<'py>(
    py: Python<'py>,
    handle: &Arc<Handle>,
    opts: LeaseOptions,
    convert: Convert<Vec<crawlq::Lease>>,
) -> PyResult<Bound<'py, PyAny>> {
    let h = handle.clone();
    let for_discard = handle.clone();
    awaitable(
        py,
        async move { h.queue().await?.lease_with(&opts).await },
        convert,
        Some(Box::new(move |leases: Vec<crawlq::Lease>| {
            release_in_background(&for_discard, leases.iter().map(|l| l.handle()).collect());
        })),
    )
}
