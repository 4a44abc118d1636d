//! Python values <-> JSON values. Payloads and options cross here; anything that is not
//! JSON-compatible is a TypeError before anything is sent to Redis.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use serde_json::{Map, Number, Value};

use crawlq::style::MAX_VALUE_DEPTH as MAX_DEPTH;

/// A str as Rust text. Each lone surrogate becomes one U+FFFD, exactly as JavaScript strings
/// convert: one bad character never refuses a whole batch, and every language stores the same.
pub fn text(s: &Bound<'_, PyString>) -> PyResult<String> {
    if let Ok(t) = s.extract::<String>() {
        return Ok(t);
    }
    let units = s.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let bytes: Vec<u8> = units.extract()?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    Ok(String::from_utf16_lossy(&units))
}

/// A JSON value from dict / list / tuple / str / int / float / bool / None; bytes and
/// bytearray become `{"$bytes": base64}` (crawlq::wire::BYTES_KEY), read back as bytes.
pub fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_at(obj, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "payload nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyTypeError::new_err(
            "integers in payloads must fit in 64 bits",
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("NaN and infinite floats are not JSON"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(text(s)?));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(crawlq::wire::bytes_value(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(crawlq::wire::bytes_value(&b.to_vec()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("payload keys must be str, got {}", type_name(&k)))
            })?;
            map.insert(
                key.to_string_lossy().into_owned(),
                to_json_at(&v, depth + 1)?,
            );
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for item in obj.try_iter()? {
            items.push(to_json_at(&item?, depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "payloads must be JSON-compatible (dict, list, tuple, str, int, float, bool, None) or bytes, got {}",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A Python value from JSON: dict / list / str / int / float / bool / None, and bytes for a
/// `{"$bytes": base64}` object.
pub fn from_json(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else {
                n.as_f64()
                    .unwrap_or(f64::NAN)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_json(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            if let Some(bytes) = crawlq::wire::value_bytes(value) {
                return Ok(PyBytes::new(py, &bytes).into_any().unbind());
            }
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, from_json(py, v)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// Keyword arguments as a JSON object (`None` values dropped: they mean "default").
pub fn kwargs_to_json(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Value> {
    let mut map = Map::new();
    if let Some(kwargs) = kwargs {
        for (k, v) in kwargs.iter() {
            if v.is_none() {
                continue;
            }
            // a NaN or infinite option is refused by the option parser, by name (ConfigError)
            let value = match v.cast::<PyFloat>() {
                Ok(f) => crawlq::config::number_value(f.value()),
                Err(_) => to_json(&v)?,
            };
            map.insert(k.extract::<String>()?, value);
        }
    }
    Ok(Value::Object(map))
}
