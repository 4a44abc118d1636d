//! The exception hierarchy and the one mapping from core errors to it.
//!
//! ```text
//! CrawlqError(Exception)                        .code
//! ├── InvalidItemError(CrawlqError, ValueError) .index .input .reason
//! ├── ConfigError(CrawlqError, ValueError)
//! ├── InvalidArgumentError(CrawlqError, ValueError)
//! ├── UnavailableError(CrawlqError, ConnectionError)
//! │   └── TimeoutError(UnavailableError, builtins.TimeoutError)
//! ├── ProtocolError(CrawlqError)
//! ├── LeaseLostError(CrawlqError)               .id .token
//! └── ServerError(CrawlqError)
//! ```
//! The classes are created at import with multiple bases, so `except ValueError` and
//! `except ConnectionError` work as a Python user expects.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// (class name, code, base class names, doc)
const CLASSES: [(&str, Option<&str>, &[&str], &str); 9] = [
    (
        "CrawlqError",
        None,
        &["Exception"],
        "Base class of every crawlq error; `code` names the kind.",
    ),
    (
        "InvalidItemError",
        Some("INVALID_ITEM"),
        &["CrawlqError", "ValueError"],
        "An item was refused (index, input, reason).",
    ),
    (
        "ConfigError",
        Some("CONFIG"),
        &["CrawlqError", "ValueError"],
        "An unknown option, or an option with a wrong type or value.",
    ),
    (
        "InvalidArgumentError",
        Some("INVALID_ARGUMENT"),
        &["CrawlqError", "ValueError"],
        "A method argument out of range or of the wrong shape.",
    ),
    (
        "UnavailableError",
        Some("UNAVAILABLE"),
        &["CrawlqError", "ConnectionError"],
        "Redis could not be reached, or the connection dropped during a call.",
    ),
    (
        "TimeoutError",
        Some("TIMEOUT"),
        &["UnavailableError", "TimeoutError"],
        "Redis did not answer within command_timeout.",
    ),
    (
        "ProtocolError",
        Some("PROTOCOL"),
        &["CrawlqError"],
        "The queue holds data of a newer format, or a reply had an unexpected shape.",
    ),
    (
        "LeaseLostError",
        Some("LEASE_LOST"),
        &["CrawlqError"],
        "The lease is not held any more (expired and reclaimed, or already answered).",
    ),
    (
        "ServerError",
        Some("SERVER"),
        &["CrawlqError"],
        "Redis answered with an error (out of memory, read-only replica, ...).",
    ),
];

static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn types(py: Python<'_>) -> &Vec<Py<PyType>> {
    TYPES.get_or_init(py, || {
        build(py).expect("creating the crawlq exception classes")
    })
}

fn build(py: Python<'_>) -> PyResult<Vec<Py<PyType>>> {
    let builtins = py.import("builtins")?;
    let type_type = builtins.getattr("type")?;
    let mut made: Vec<(&str, Bound<'_, PyAny>)> = Vec::new();
    for (name, code, bases, doc) in CLASSES {
        let bases: Vec<Bound<'_, PyAny>> = bases
            .iter()
            .map(|b| match made.iter().find(|(n, _)| n == b) {
                Some((_, t)) => Ok(t.clone()),
                None => builtins.getattr(*b),
            })
            .collect::<PyResult<_>>()?;
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "crawlq")?;
        namespace.set_item("__doc__", doc)?;
        namespace.set_item("code", code)?;
        let class = type_type.call1((name, PyTuple::new(py, bases)?, namespace))?;
        made.push((name, class));
    }
    made.into_iter()
        .map(|(_, t)| Ok(t.cast_into::<PyType>()?.unbind()))
        .collect()
}

/// Add the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for (t, (name, ..)) in types(py).iter().zip(CLASSES) {
        m.add(name, t.clone_ref(py))?;
    }
    Ok(())
}

fn class<'py>(py: Python<'py>, name: &str) -> Bound<'py, PyType> {
    let i = CLASSES
        .iter()
        .position(|c| c.0 == name)
        .expect("known exception class");
    types(py)[i].bind(py).clone()
}

/// The Python exception for a core error.
pub fn to_pyerr(err: crawlq::Error) -> PyErr {
    Python::attach(|py| match make(py, &err) {
        Ok(e) => e,
        Err(e) => e,
    })
}

fn make(py: Python<'_>, err: &crawlq::Error) -> PyResult<PyErr> {
    let name = CLASSES
        .iter()
        .find(|c| c.1 == Some(err.code()))
        .map_or("CrawlqError", |c| c.0);
    let instance = class(py, name).call1((err.to_string(),))?;
    match err {
        crawlq::Error::InvalidItem {
            index,
            input,
            reason,
        } => {
            instance.setattr("index", index)?;
            instance.setattr("input", input)?;
            instance.setattr("reason", reason.to_string())?;
            instance.setattr("reason_code", reason.code())?;
        }
        crawlq::Error::LeaseLost { id, token } => {
            instance.setattr("id", id)?;
            instance.setattr("token", token)?;
        }
        _ => {}
    }
    Ok(PyErr::from_value(instance))
}
