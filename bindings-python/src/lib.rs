//! `import crawlq`: the Python binding of the crawlq core. Types are converted and errors
//! mapped here; every queue operation is the core's.

mod args;
mod convert;
mod errors;
mod handle;
mod queue;
mod runtime;
mod types;
mod work;

use pyo3::prelude::*;

/// The canonical form crawlq gives an input: {"kind", "canonical", "host", "fingerprint"}.
/// Raises InvalidItemError (with `.reason`, the refusal code) for an input it would refuse.
#[pyfunction]
fn normalize(py: Python<'_>, input: &Bound<'_, pyo3::types::PyString>) -> PyResult<Py<PyAny>> {
    let value = ::crawlq::binding::json::normalized_to_json(&convert::text(input)?)
        .map_err(errors::to_pyerr)?;
    convert::from_json(py, &value)
}

/// The shard an input (URL or host) belongs to in a queue of `shards` shards.
#[pyfunction]
fn shard_of(input: &Bound<'_, pyo3::types::PyString>, shards: i64) -> PyResult<u32> {
    ::crawlq::binding::json::shard_of_input(&convert::text(input)?, shards)
        .map_err(errors::to_pyerr)
}

/// The crawl request of a lease (docs/PROTOCOL.md section 10): a dict with url, method,
/// headers, body (bytes or None), user_data, label, depth, retries, found_on, frameworks. An
/// item seeded through the plain API is a GET of its URL with its payload as user_data.
/// Raises ProtocolError for a host item or a request this version cannot read (dead-letter it
/// as `undecodable: ...`).
#[pyfunction]
fn request_of(py: Python<'_>, lease: PyRef<'_, types::Lease>) -> PyResult<Py<PyAny>> {
    let value = ::crawlq::binding::json::request_of_item(
        lease.core.url.as_deref(),
        lease.core.payload.as_ref(),
        ::crawlq::Style::Snake,
    )
    .map_err(errors::to_pyerr)?;
    convert::from_json(py, &value)
}

/// The payload a crawl request (a dict as request_of returns it) is stored as: what a nack or
/// release stores to keep an updated request (its retries, its framework's fields).
#[pyfunction]
fn request_payload(
    py: Python<'_>,
    request: &Bound<'_, pyo3::types::PyDict>,
) -> PyResult<Py<PyAny>> {
    let value = convert::to_json(request, "request")?;
    let request = ::crawlq::binding::json::request_from_json(&value, ::crawlq::Style::Snake)
        .map_err(errors::to_pyerr)?;
    convert::from_json(py, &request.payload())
}

/// The payload that stores a leased crawl request again with `changes` (request_of's fields;
/// `frameworks` changes replace that framework's namespace only), read from the item as stored:
/// what a retry's nack or a release stores. Raises ProtocolError for an item that is not a
/// crawl request, InvalidArgumentError for a bad change or a change of its URL.
#[pyfunction]
#[pyo3(signature = (lease, changes = None))]
fn request_update(
    py: Python<'_>,
    lease: PyRef<'_, types::Lease>,
    changes: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<Py<PyAny>> {
    let changes = changes
        .map(|c| convert::to_json(c, "changes"))
        .transpose()?
        .unwrap_or_default();
    let value = ::crawlq::binding::json::request_update(
        lease.core.url.as_deref(),
        lease.core.payload.as_ref(),
        &changes,
        ::crawlq::Style::Snake,
    )
    .map_err(errors::to_pyerr)?;
    convert::from_json(py, &value)
}

/// The default of every queue option (seconds for durations; None: unset), from the core's
/// option table: what framework adapters read instead of defaults of their own.
#[pyfunction]
fn default_options(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let defaults = ::crawlq::Config::default().to_options(::crawlq::Style::Snake);
    convert::from_json(py, &serde_json::Value::Object(defaults))
}

/// The options a framework adapter opens its queue with: `options` (queue keyword options),
/// checked, with `extend_every` a third of `lease_ttl` unless given.
#[pyfunction]
#[pyo3(signature = (options = None))]
fn framework_options(
    py: Python<'_>,
    options: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<Py<PyAny>> {
    let options = convert::kwargs_to_json(options)?;
    let options = ::crawlq::binding::json::framework_options_json(&options, ::crawlq::Style::Snake)
        .map_err(errors::to_pyerr)?;
    convert::from_json(py, &options)
}

/// A Redis URL without its user info (`redis://***@host:6379/0`), as connect errors name it:
/// for logging where a queue is without its password.
#[pyfunction]
fn redacted_url(url: &str) -> String {
    ::crawlq::config::redacted_url(url)
}

#[pymodule]
fn crawlq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(default_options, m)?)?;
    m.add_function(wrap_pyfunction!(framework_options, m)?)?;
    m.add_function(wrap_pyfunction!(request_of, m)?)?;
    m.add_function(wrap_pyfunction!(request_payload, m)?)?;
    m.add_function(wrap_pyfunction!(request_update, m)?)?;
    m.add_function(wrap_pyfunction!(shard_of, m)?)?;
    m.add_function(wrap_pyfunction!(redacted_url, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<queue::Queue>()?;
    m.add_class::<queue::AsyncQueue>()?;
    m.add_class::<types::Lease>()?;
    m.add_class::<types::SeedReport>()?;
    m.add_class::<types::InvalidInput>()?;
    m.add_class::<work::Leased>()?;
    m.add_class::<work::AsyncLeased>()?;
    m.add_class::<work::Work>()?;
    m.add_class::<work::AsyncWork>()?;
    errors::register(m)?;
    Ok(())
}
