//! The exception hierarchy and the one mapping from core errors to it.
//!
//! ```text
//! CrawlqError(Exception)                        .code
//! ├── InvalidItemError(CrawlqError, ValueError) .index .input .reason (the refusal code)
//! ├── ConfigError(CrawlqError, ValueError)
//! ├── InvalidArgumentError(CrawlqError, ValueError)
//! ├── UnavailableError(CrawlqError, ConnectionError)
//! │   └── TimeoutError(UnavailableError, builtins.TimeoutError)
//! ├── ProtocolError(CrawlqError)
//! ├── LeaseLostError(CrawlqError)               .lease_id .token
//! ├── ServerError(CrawlqError)
//! └── CorruptError(CrawlqError)
//! ```
//! Built at import from the core's table of error kinds (`crawlq::ERROR_KINDS`), with multiple
//! bases, so `except ValueError` and `except ConnectionError` work as a Python user expects.

use crawlq::{ERROR_KINDS, ErrorKind, Style};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// The base class, then one class per core error kind, in `ERROR_KINDS` order.
static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn class_name(kind: &ErrorKind) -> String {
    format!("{}Error", kind.name)
}

fn types(py: Python<'_>) -> &Vec<Py<PyType>> {
    TYPES.get_or_init(py, || {
        build(py).expect("creating the crawlq exception classes")
    })
}

fn new_class<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyAny>>,
    code: Option<&str>,
    doc: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "crawlq")?;
    namespace.set_item("__doc__", doc)?;
    namespace.set_item("code", code)?;
    py.import("builtins")?
        .getattr("type")?
        .call1((name, PyTuple::new(py, bases)?, namespace))
}

fn build(py: Python<'_>) -> PyResult<Vec<Py<PyType>>> {
    let builtins = py.import("builtins")?;
    let make = |name: &str, bases, code, doc| new_class(py, name, bases, code, doc);
    let base = make(
        "CrawlqError",
        vec![builtins.getattr("Exception")?],
        None,
        "Base class of every crawlq error; `code` names the kind.",
    )?;
    let mut made = vec![base.clone()];
    for kind in ERROR_KINDS {
        let parent = match kind.parent {
            Some(code) => made[1 + ERROR_KINDS
                .iter()
                .position(|k| k.code == code)
                .expect("parent")]
            .clone(),
            None => base.clone(),
        };
        let mut bases = vec![parent];
        if let Some(builtin) = kind.python_builtin {
            bases.push(builtins.getattr(builtin)?);
        }
        made.push(make(&class_name(&kind), bases, Some(kind.code), kind.doc)?);
    }
    made.into_iter()
        .map(|t| Ok(t.cast_into::<PyType>()?.unbind()))
        .collect()
}

/// Add the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let types = types(py);
    m.add("CrawlqError", types[0].clone_ref(py))?;
    for (kind, t) in ERROR_KINDS.iter().zip(&types[1..]) {
        m.add(class_name(kind), t.clone_ref(py))?;
    }
    Ok(())
}

/// The Python exception for a core error.
pub fn to_pyerr(err: crawlq::Error) -> PyErr {
    Python::attach(|py| match make(py, &err) {
        Ok(e) => e,
        Err(e) => e,
    })
}

fn make(py: Python<'_>, err: &crawlq::Error) -> PyResult<PyErr> {
    let index = ERROR_KINDS
        .iter()
        .position(|k| k.code == err.code())
        .map_or(0, |i| i + 1);
    let instance = types(py)[index].bind(py).call1((err.to_string(),))?;
    for (name, value) in err.fields(Style::Snake) {
        instance.setattr(name, crate::convert::from_json(py, &value)?)?;
    }
    Ok(PyErr::from_value(instance))
}
