//! Python arguments as the core's values: keyword arguments become the JSON options the core's
//! `style` parsers read (durations in seconds), and `Lease` objects become lease handles.

use crate::convert::{Int, from_json, to_json, to_json_or_reason};
use crate::errors::to_pyerr;
use crate::types::Lease;
use crawlq::config::number_value;
use crawlq::{
    Answers, LeaseHandle, LeaseOptions, NackOptions, ReleaseOptions, SeedItem, SeedOptions, Style,
    binding::json,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{Value, json};
use std::time::Duration;

/// A seed call's items (the argument `name`: `items`, or `links` for a page's links) and its
/// batch options.
pub fn seed_args(
    items: &Bound<'_, PyAny>,
    name: &str,
    priority: Int,
    delay: f64,
    payload: Option<&Bound<'_, PyAny>>,
    force: bool,
    crawl: Option<String>,
) -> PyResult<(Vec<SeedItem>, SeedOptions)> {
    let items_json = if items.is_instance_of::<PyString>() {
        to_json(items, name)?
    } else if items.is_instance_of::<PyDict>() {
        // iterating a dict would seed its keys as hosts
        return Err(PyTypeError::new_err(format!(
            "{name} must be an iterable of URLs or hosts (str or dict): put one item dict in a list"
        )));
    } else {
        let not_items = |_| {
            PyTypeError::new_err(format!(
                "{name} must be an iterable of URLs or hosts (str or dict)"
            ))
        };
        let mut list = Vec::new();
        for (index, item) in items.try_iter().map_err(not_items)?.enumerate() {
            list.push(item_to_json(&item?, name, index)?);
        }
        Value::Array(list)
    };
    if let Some(problem) = json::seed_items_type_error(&items_json, name, json::TypeWords::PYTHON) {
        return Err(PyTypeError::new_err(problem));
    }
    let items = json::seed_items_from_json(&items_json, Style::Snake).map_err(to_pyerr)?;
    let payload = payload.map(|p| to_json(p, "payload")).transpose()?;
    Ok((items, seed_options(priority, delay, payload, force, crawl)?))
}

/// A seed call's batch options.
pub fn seed_options(
    priority: Int,
    delay: f64,
    payload: Option<Value>,
    force: bool,
    crawl: Option<String>,
) -> PyResult<SeedOptions> {
    let priority = priority.get("priority")?;
    let opts = json!({"priority": priority, "delay": number_value(delay), "payload": payload, "force": force, "crawl": crawl});
    json::seed_options_from_json(&opts, Style::Snake).map_err(to_pyerr)
}

/// Crawl requests as JSON for `seed_requests`: each dict's fields that are not JSON are marked
/// unreadable, so the core refuses that request only.
pub fn requests_json(requests: &Bound<'_, PyAny>) -> PyResult<Value> {
    if requests.is_instance_of::<PyDict>() || requests.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "requests must be an iterable of request dicts: put one request in a list",
        ));
    }
    let not_requests = |_| PyTypeError::new_err("requests must be an iterable of request dicts");
    let mut list = Vec::new();
    for (index, request) in requests.try_iter().map_err(not_requests)?.enumerate() {
        let request = request?;
        if !request.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err(format!(
                "requests[{index}] must be a dict with at least a url"
            )));
        }
        list.push(dict_to_json(&request, &format!("requests[{index}]"))?);
    }
    Ok(Value::Array(list))
}

/// One seed item as JSON: a dict's priority, delay, payload or key that is not JSON (a NaN, an
/// integer past 64 bits, an object that is not JSON) is marked unreadable, so the core refuses
/// that item only (`crawlq::binding::json::is_item_field`).
fn item_to_json(item: &Bound<'_, PyAny>, name: &str, index: usize) -> PyResult<Value> {
    if item.is_instance_of::<PyString>() {
        return to_json(item, &format!("{name}[{index}]"));
    }
    if !item.is_instance_of::<PyDict>() {
        // (named in Python's terms: the core's check would name the JSON type)
        let kind = item.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "{name}[{index}] must be a str or a dict, got {kind}"
        )));
    }
    dict_to_json(item, &format!("{name}[{index}]"))
}

/// A dict at `parent` (`items[3]`, `requests[0]`) as a JSON object, its fields that are not JSON
/// marked unreadable where the core refuses that entry only (`json::is_item_field`).
fn dict_to_json(item: &Bound<'_, PyAny>, parent: &str) -> PyResult<Value> {
    let dict = item.cast::<PyDict>()?;
    let parent = parent.to_string();
    let mut map = serde_json::Map::with_capacity(dict.len());
    for (k, v) in dict.iter() {
        let key = k
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("{parent} has a key that is not a str")))?;
        let name = crate::convert::text(key)?;
        let value = match to_json_or_reason(&v) {
            Ok(value) => value,
            // (an item's field the queue refuses alone, with where and why)
            Err(why) if json::is_item_field(&parent, &name) => {
                json::unreadable(&why.reason_at(item.py(), &format!("{parent}['{name}']")))
            }
            Err(why) => return Err(why.into_pyerr_at(&format!("{parent}['{name}']"))),
        };
        map.insert(name, value);
    }
    Ok(Value::Object(map))
}

/// A count argument (a limit, an offset, a budget): negative is an InvalidArgumentError, as
/// everywhere else, not the OverflowError of a bare conversion.
pub fn count(n: Int, name: &str) -> PyResult<usize> {
    let n = n.get(name)?;
    usize::try_from(n).map_err(|_| {
        to_pyerr(crawlq::Error::InvalidArgument(format!(
            "{name} must be a non-negative integer, got {n}"
        )))
    })
}

pub fn lease_args(max: Int, wait: f64, ttl: Option<f64>) -> PyResult<LeaseOptions> {
    let max = max.get("max")?;
    let opts = json!({"max": max, "wait": number_value(wait), "ttl": ttl.map(number_value)});
    json::lease_options_from_json(&opts, Style::Snake).map_err(to_pyerr)
}

pub fn nack_args(
    retry: bool,
    delay: Option<f64>,
    reason: Option<String>,
    rate_limited: bool,
    payload: Option<Value>,
    retry_after: Option<Value>,
    retry_after_header: Option<String>,
) -> crawlq::Result<NackOptions> {
    let opts = json!({"retry": retry, "delay": delay.map(number_value), "reason": reason,
                      "rate_limited": rate_limited, "payload": payload, "retry_after": retry_after,
                      "retry_after_header": retry_after_header});
    json::nack_options_from_json(&opts, Style::Snake)
}

pub fn release_args(payload: Option<Value>) -> crawlq::Result<ReleaseOptions> {
    json::release_options_from_json(&json!({ "payload": payload }), Style::Snake)
}

/// A duration argument in seconds (`name` in errors).
pub fn seconds(value: f64, name: &str) -> crawlq::Result<Duration> {
    json::duration_arg(&number_value(value), name, Style::Snake)
}

/// A result the core already shaped as JSON, as Python objects.
pub fn json_out(py: Python<'_>, value: Value) -> PyResult<Py<PyAny>> {
    from_json(py, &value)
}

/// One lease or a sequence of leases, as given.
pub struct LeaseArg {
    leases: Vec<Py<Lease>>,
    pub single: bool,
}

impl LeaseArg {
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<LeaseArg> {
        let not_leases = || PyTypeError::new_err("expected a Lease or a sequence of Lease objects");
        if let Ok(one) = obj.cast::<Lease>() {
            return Ok(LeaseArg {
                leases: vec![one.clone().unbind()],
                single: true,
            });
        }
        if obj.is_instance_of::<PyString>() {
            return Err(not_leases());
        }
        let mut leases = Vec::new();
        for item in obj.try_iter().map_err(|_| not_leases())? {
            let item = item?;
            let lease = item.cast::<Lease>().map_err(|_| not_leases())?;
            leases.push(lease.clone().unbind());
        }
        Ok(LeaseArg {
            leases,
            single: false,
        })
    }

    /// One Lease (a sequence is a TypeError): the argument and its handle.
    pub fn extract_one(obj: &Bound<'_, PyAny>) -> PyResult<(LeaseArg, LeaseHandle)> {
        let arg = LeaseArg::extract(obj)?;
        if !arg.single {
            return Err(PyTypeError::new_err("lease must be one Lease"));
        }
        let handle = arg.handles().remove(0);
        Ok((arg, handle))
    }

    pub fn handles(&self) -> Vec<LeaseHandle> {
        self.leases.iter().map(|l| l.get().handle()).collect()
    }

    /// Bring the Lease objects up to date with what an answer did (finished, new deadline),
    /// and return its results as Python objects.
    pub fn apply(&self, py: Python<'_>, answers: &Answers) -> PyResult<Py<PyAny>> {
        for (lease, finished) in self.leases.iter().zip(answers.finished()) {
            if finished {
                lease.get().mark_answered();
            }
        }
        for (lease, deadline) in self.leases.iter().zip(answers.deadlines().unwrap_or(&[])) {
            if let Some(ms) = deadline {
                lease.get().set_expires_at_ms(*ms);
            }
        }
        json_out(py, answers.to_json(Style::Snake))
    }
}
