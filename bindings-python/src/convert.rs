//! Python values <-> JSON values. Payloads and options cross here; anything that is not
//! JSON-compatible is a TypeError before anything is sent to Redis.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use serde_json::{Map, Number, Value};

use crawlq::binding::json::MAX_VALUE_DEPTH as MAX_DEPTH;

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

/// A `str` argument as Rust text, each lone surrogate one U+FFFD as [`text`] makes it (a
/// queue name, a host, a nack reason): the same text Node.js and PHP store. Anything else is a
/// TypeError, which Python names with the argument.
pub struct Text(pub String);

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Text> {
        match obj.cast::<PyString>() {
            Ok(s) => Ok(Text(text(&s)?)),
            Err(_) => Err(PyTypeError::new_err(format!(
                "expected a str, got {}",
                type_name(&obj)
            ))),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// An int argument (a count, a limit, a priority). An int past 64 bits is kept as its digits
/// until [`Int::get`] refuses it by the argument's name (pyo3 names an argument only in a
/// TypeError), an InvalidArgumentError like any other out-of-range value; a float or another
/// type is Python's TypeError, as everywhere an int is expected.
pub struct Int(Result<i64, String>);

impl Int {
    /// An argument's default.
    pub const fn of(value: i64) -> Int {
        Int(Ok(value))
    }

    /// The value of the argument `name`.
    pub fn get(self, name: &str) -> PyResult<i64> {
        self.0.map_err(|digits| {
            crate::errors::to_pyerr(crawlq::Error::InvalidArgument(format!(
                "{name} is outside the 64-bit integers, got {digits}"
            )))
        })
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Int> {
        if !obj.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "expected an int, got {}",
                type_name(&obj)
            )));
        }
        Ok(Int(obj.extract::<i64>().map_err(|_| {
            // (str() itself refuses ints past sys.get_int_max_str_digits())
            obj.str()
                .map(|s| s.to_string())
                .unwrap_or_else(|_| "an int of more digits than str() writes".into())
        })))
    }
}

/// A JSON value from dict / list / tuple / str / int / float / bool / None; bytes and
/// bytearray become `{"$bytes": base64}` (crawlq::wire::BYTES_KEY), read back as bytes. `name`
/// is what the value is to the caller (`payload`): a value inside it that is not JSON is named
/// from there (`payload['tags'][2]: ...`).
pub fn to_json(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Value> {
    to_json_or_reason(obj).map_err(|why| why.into_pyerr_at(name))
}

/// Why a value could not become JSON, and where inside it (`['tags'][2]`, empty for the value
/// itself), kept apart from the exception it becomes so that a caller can put the value's own
/// name before it (an item's field the queue refuses alone).
pub enum Unconvertible {
    /// A value of a type JSON has that JSON cannot hold (NaN, an infinity, an int past 64
    /// bits, nesting too deep): crawlq's InvalidArgumentError (a ValueError).
    Value { at: String, why: String },
    /// A value of a type JSON does not have: a TypeError.
    Type { at: String, why: String },
    /// Python itself failed (a key's text, an iterator that raised): passed on as it is.
    Python(PyErr),
}

impl From<PyErr> for Unconvertible {
    fn from(e: PyErr) -> Self {
        Unconvertible::Python(e)
    }
}

impl Unconvertible {
    fn value(why: impl Into<String>) -> Self {
        Unconvertible::Value {
            at: String::new(),
            why: why.into(),
        }
    }

    fn of_type(why: impl Into<String>) -> Self {
        Unconvertible::Type {
            at: String::new(),
            why: why.into(),
        }
    }

    /// The same reason one level out: the value was at `step` (`['key']`, `[3]`) of its parent.
    /// (Built only on the way out of a refusal, so a value that converts pays nothing for it.)
    fn within(self, step: std::fmt::Arguments<'_>) -> Self {
        match self {
            Unconvertible::Value { at, why } => Unconvertible::Value {
                at: format!("{step}{at}"),
                why,
            },
            Unconvertible::Type { at, why } => Unconvertible::Type {
                at: format!("{step}{at}"),
                why,
            },
            python => python,
        }
    }

    /// The reason, after the name of the value and where in it: `items[0]['payload']['n']: why`.
    pub fn reason_at(&self, py: Python<'_>, name: &str) -> String {
        match self {
            Unconvertible::Value { at, why } | Unconvertible::Type { at, why } => {
                format!("{name}{at}: {why}")
            }
            Unconvertible::Python(e) => format!("{name}: {}", e.value(py)),
        }
    }

    /// The exception the reason is when it fails the whole call, the value named as
    /// [`Unconvertible::reason_at`] names it (a Python error passed on as it is).
    pub fn into_pyerr_at(self, name: &str) -> PyErr {
        match self {
            Unconvertible::Value { at, why } => crate::errors::to_pyerr(
                crawlq::Error::InvalidArgument(format!("{name}{at}: {why}")),
            ),
            Unconvertible::Type { at, why } => PyTypeError::new_err(format!("{name}{at}: {why}")),
            Unconvertible::Python(e) => e,
        }
    }
}

/// [`to_json`] with the reason kept as [`Unconvertible`].
pub fn to_json_or_reason(obj: &Bound<'_, PyAny>) -> Result<Value, Unconvertible> {
    to_json_at(obj, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Unconvertible> {
    if depth > MAX_DEPTH {
        return Err(Unconvertible::value(format!(
            "nested deeper than {MAX_DEPTH} levels"
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
        return Err(Unconvertible::value("integers must fit in 64 bits"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| {
            // (as Python writes it, where Rust writes NaN)
            let spelt = if f.is_nan() {
                "nan"
            } else if f > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            Unconvertible::value(format!("NaN and infinite floats are not JSON, got {spelt}"))
        });
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
                Unconvertible::of_type(format!("keys must be str, got {}", type_name(&k)))
            })?;
            // a lone surrogate is one U+FFFD, as everywhere else (text)
            let key = text(key)?;
            let value =
                to_json_at(&v, depth + 1).map_err(|e| e.within(format_args!("['{key}']")))?;
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (index, item) in obj.try_iter()?.enumerate() {
            items.push(
                to_json_at(&item?, depth + 1).map_err(|e| e.within(format_args!("[{index}]")))?,
            );
        }
        return Ok(Value::Array(items));
    }
    Err(Unconvertible::of_type(format!(
        "must be JSON-compatible (dict, list, tuple, str, int, float, bool, None) or bytes, got {}",
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

/// Whether `obj` is an int that neither `i64` nor `u64` holds.
fn is_int_past_64_bits(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyInt>() && obj.extract::<i64>().is_err() && obj.extract::<u64>().is_err()
}

/// Keyword arguments as a JSON object (`None` values dropped: they mean "default").
pub fn kwargs_to_json(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Value> {
    let mut map = Map::new();
    if let Some(kwargs) = kwargs {
        for (k, v) in kwargs.iter() {
            if v.is_none() {
                continue;
            }
            // a NaN or infinite option, or an int past 64 bits, is refused by the option
            // parser, by name (ConfigError), as any other number out of its range
            let value = match v.cast::<PyFloat>() {
                Ok(f) => crawlq::config::number_value(f.value()),
                Err(_) if is_int_past_64_bits(&v) => {
                    let negative = v.lt(0)?;
                    let n = v.extract::<f64>().unwrap_or(if negative {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    });
                    crawlq::config::number_value(n)
                }
                Err(_) => to_json(&v, &k.str()?.to_string_lossy())?,
            };
            map.insert(k.extract::<String>()?, value);
        }
    }
    Ok(Value::Object(map))
}
