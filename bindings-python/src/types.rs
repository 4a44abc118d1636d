//! Result classes: `Lease`, `SeedReport`, `InvalidInput`.

use crate::convert::from_json;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// A str as Python's repr() writes it (single quotes).
pub fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A leased item. Pass it back to `ack`, `nack`, `extend` or `release`.
#[pyclass(frozen, module = "crawlq")]
pub struct Lease {
    pub core: crawlq::Lease,
    payload: Py<PyAny>,
    expires_at_ms: AtomicI64,
    answered: AtomicBool,
}

impl Lease {
    pub fn new(py: Python<'_>, core: crawlq::Lease) -> PyResult<Lease> {
        let payload = match &core.payload {
            Some(p) => from_json(py, p)?,
            None => py.None(),
        };
        Ok(Lease {
            expires_at_ms: AtomicI64::new(core.expires_at_ms),
            answered: AtomicBool::new(false),
            core,
            payload,
        })
    }

    pub fn handle(&self) -> crawlq::LeaseHandle {
        self.core.handle()
    }

    pub fn set_expires_at_ms(&self, ms: i64) {
        self.expires_at_ms.store(ms, Ordering::Relaxed);
    }

    /// Acked, nacked or released through this object.
    pub fn mark_answered(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    pub fn is_answered(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }
}

#[pymethods]
impl Lease {
    /// Queue-assigned id of the item.
    #[getter]
    fn id(&self) -> &str {
        &self.core.id
    }
    /// The canonical URL, or None for a host item.
    #[getter]
    fn url(&self) -> Option<&str> {
        self.core.url.as_deref()
    }
    /// The host key the item is scheduled under.
    #[getter]
    fn host(&self) -> &str {
        &self.core.host
    }
    /// The de-duplication key the item was seeded with, or None.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.core.key.as_deref()
    }
    /// The named crawl the item was seeded into, or None (the default crawl).
    #[getter]
    fn crawl(&self) -> Option<&str> {
        self.core.crawl.as_deref()
    }
    /// The JSON payload stored with the item (dict, list, str, int, float, bool or None).
    #[getter]
    fn payload(&self, py: Python<'_>) -> Py<PyAny> {
        self.payload.clone_ref(py)
    }
    #[getter]
    fn priority(&self) -> i16 {
        self.core.priority
    }
    /// 1 on the first delivery, 2 on the first retry, ...
    #[getter]
    fn attempt(&self) -> u32 {
        self.core.attempt
    }
    /// Fencing token of this lease.
    #[getter]
    fn token(&self) -> u64 {
        self.core.token
    }
    /// Server time of the lease, seconds since the epoch.
    #[getter]
    fn leased_at(&self) -> f64 {
        seconds(self.core.leased_at_ms)
    }
    /// When the lease may be reclaimed (server clock), seconds since the epoch.
    #[getter]
    fn expires_at(&self) -> f64 {
        seconds(self.expires_at_ms.load(Ordering::Relaxed))
    }
    /// When the item was last queued, seconds since the epoch.
    #[getter]
    fn enqueued_at(&self) -> f64 {
        seconds(self.core.enqueued_at_ms)
    }
    /// Why the previous attempt failed, if one did.
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.core.last_error.as_deref()
    }
    /// True once acked, nacked or released through this object.
    #[getter]
    fn answered(&self) -> bool {
        self.is_answered()
    }

    fn __repr__(&self) -> String {
        format!(
            "Lease(id={}, {}={}, attempt={}, token={})",
            quoted(&self.core.id),
            if self.core.url.is_some() {
                "url"
            } else {
                "host"
            },
            quoted(self.core.url.as_deref().unwrap_or(&self.core.host)),
            self.core.attempt,
            self.core.token
        )
    }
}

/// An item a seed call refused.
#[pyclass(frozen, module = "crawlq")]
pub struct InvalidInput {
    /// Position in the seeded batch.
    #[pyo3(get)]
    index: usize,
    #[pyo3(get)]
    input: String,
    /// Stable reason code (`invalid_url`, `payload_too_large`, ...).
    #[pyo3(get)]
    code: &'static str,
    /// Human-readable reason.
    #[pyo3(get)]
    reason: String,
}

#[pymethods]
impl InvalidInput {
    fn __repr__(&self) -> String {
        format!(
            "InvalidInput(index={}, input={}, code={})",
            self.index,
            quoted(&self.input),
            quoted(self.code)
        )
    }
}

/// What a seed call did.
#[pyclass(frozen, module = "crawlq")]
pub struct SeedReport {
    /// Items queued (including ones queued again by force).
    #[pyo3(get)]
    added: u64,
    /// Items not queued because they were seen before.
    #[pyo3(get)]
    duplicates: u64,
    invalid: Vec<Py<InvalidInput>>,
    ids: Vec<Option<String>>,
}

impl SeedReport {
    pub fn new(py: Python<'_>, report: crawlq::SeedReport) -> PyResult<SeedReport> {
        let invalid = report
            .invalid
            .into_iter()
            .map(|i| {
                Py::new(
                    py,
                    InvalidInput {
                        index: i.index,
                        input: i.input,
                        code: i.reason.code(),
                        reason: i.reason.to_string(),
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Ok(SeedReport {
            added: report.added,
            duplicates: report.duplicates,
            invalid,
            ids: report.ids,
        })
    }
}

#[pymethods]
impl SeedReport {
    /// Items refused, with their index, input and reason.
    #[getter]
    fn invalid(&self, py: Python<'_>) -> Vec<Py<InvalidInput>> {
        self.invalid.iter().map(|i| i.clone_ref(py)).collect()
    }

    /// One entry per seeded item, in order: the id it was queued under (the `id` of its
    /// lease), or None for a duplicate or an invalid item.
    #[getter]
    fn ids(&self) -> Vec<Option<String>> {
        self.ids.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "SeedReport(added={}, duplicates={}, invalid={})",
            self.added,
            self.duplicates,
            self.invalid.len()
        )
    }
}
