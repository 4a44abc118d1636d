//! PHP values <-> JSON values. Payloads and options cross here: null, bool, int, float, string
//! and arrays (a list when its keys are 0..n-1, an object otherwise); anything else (objects,
//! resources, NaN) is a TypeError before anything reaches Redis. PHP strings are bytes: in a
//! payload, one that is not UTF-8 is stored as `{"$bytes": base64}` (crawlq::wire::BYTES_KEY)
//! and such an object reads back as that string.

use ext_php_rs::flags::DataType;
use ext_php_rs::types::{ArrayKey, ZendHashTable, Zval};
use serde_json::{Map, Number, Value};

use crawlq::binding::json::MAX_VALUE_DEPTH as MAX_DEPTH;

/// A JSON value from a PHP value found at `path`, or why it is not one.
/// A string argument as text: bytes that are not UTF-8 become U+FFFD (a queue name, a host, a
/// cursor), as Python and JavaScript store a lone surrogate; anything but a string is a
/// TypeError, as for a declared `string` parameter.
pub struct Text(pub String);

impl<'a> ext_php_rs::convert::FromZval<'a> for Text {
    const TYPE: DataType = DataType::String;

    fn from_zval(zval: &'a Zval) -> Option<Text> {
        let bytes = zval.dereference().zend_str()?.as_bytes();
        Some(Text(String::from_utf8_lossy(bytes).into_owned()))
    }
}

impl ext_php_rs::convert::StubLiteral for Text {
    fn stub_literal(&self) -> String {
        self.0.stub_literal()
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

pub use crawlq::binding::json::NotJson;

pub fn to_json(z: &Zval, path: &str) -> Result<Value, NotJson> {
    to_json_at(z, path, 0)
}

/// An options array as JSON. A NaN or infinite option (other than a payload) is handed to the
/// option parser as a named non-number, so it is refused by name as in every language (an
/// argument or config error), not as a type error.
pub fn options_to_json(z: &Zval, path: &str) -> Result<Value, NotJson> {
    let mut value = to_json_at(z, path, 0);
    if let (Err(_), Some(array)) = (&value, z.array()) {
        let mut map = serde_json::Map::new();
        for (key, v) in array.iter() {
            let key = key.to_string();
            let converted = match v.double() {
                Some(f) if !f.is_finite() && key != "payload" => crawlq::config::number_value(f),
                _ => to_json_at(v, &format!("{path}['{key}']"), 1)?,
            };
            map.insert(key, converted);
        }
        value = Ok(Value::Object(map));
    }
    value
}

fn to_json_at(z: &Zval, path: &str, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson::value(format!(
            "{path} is nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if z.is_reference()
        && let Some(inner) = z.reference()
    {
        return to_json_at(inner, path, depth);
    }
    // a payload the core made (request_update): its JSON as it is
    if let Some(object) = z.object()
        && let Some(payload) =
            ext_php_rs::types::ZendClassObject::<crate::Payload>::from_zend_obj(object)
    {
        return Ok(payload.value.clone());
    }
    match z.get_type() {
        DataType::Null | DataType::Undef => Ok(Value::Null),
        DataType::True => Ok(Value::Bool(true)),
        DataType::False => Ok(Value::Bool(false)),
        DataType::Long => Ok(Value::from(z.long().unwrap_or_default())),
        DataType::Double => {
            let f = z.double().unwrap_or(f64::NAN);
            Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| NotJson::non_finite(path, f, crawlq::binding::json::PHP_NON_FINITE))
        }
        DataType::String => {
            let bytes = z
                .zend_str()
                .map(|s| s.as_bytes())
                .ok_or_else(|| NotJson::of_type(format!("{path} is not a string")))?;
            Ok(match std::str::from_utf8(bytes) {
                Ok(text) => Value::String(text.to_owned()),
                // binary data in a payload is kept byte for byte
                Err(_) if path.contains(PAYLOAD_PATH) || path.ends_with(BODY_PATH) => {
                    crawlq::wire::bytes_value(bytes)
                }
                // elsewhere (URLs, options) bytes that are not UTF-8 are replaced by U+FFFD,
                // as JavaScript and Python do with lone surrogates: one bad character never
                // refuses a whole batch
                Err(_) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
            })
        }
        DataType::Array => array_to_json(z.array().expect("array"), path, depth),
        other => Err(NotJson::of_type(format!(
            "{path} is {}, which is not JSON (use arrays and scalars)",
            type_name(other)
        ))),
    }
}

/// How a value's path says it is inside a payload (`items[3]['payload']['body']`).
const PAYLOAD_PATH: &str = "['payload']";
/// How a value's path says it is a crawl request's body (`requests[0]['body']`): bytes too.
const BODY_PATH: &str = "['body']";

fn type_name(t: DataType) -> &'static str {
    match t {
        DataType::Object(_) => "an object",
        DataType::Resource => "a resource",
        DataType::Callable => "a callable",
        _ => "not a JSON value",
    }
}

fn array_to_json(a: &ZendHashTable, path: &str, depth: usize) -> Result<Value, NotJson> {
    if a.has_sequential_keys() {
        let mut items = Vec::with_capacity(a.len());
        for (i, v) in a.values().enumerate() {
            items.push(to_json_at(v, &format!("{path}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    let mut map = Map::new();
    for (k, v) in a.iter() {
        let key = match k {
            ArrayKey::Long(i) => i.to_string(),
            ArrayKey::String(s) => s,
            ArrayKey::Str(s) => s.to_string(),
            ArrayKey::ZendString(s) => s
                .as_str()
                .map_err(|_| NotJson::of_type(format!("{path} has a key that is not valid UTF-8")))?
                .to_string(),
        };
        let value = match to_json_at(v, &format!("{path}['{key}']"), depth + 1) {
            // a seed item's field that is not JSON refuses that item only
            Err(why) if crawlq::binding::json::is_item_field(path, &key) => {
                crawlq::binding::json::unreadable(&why.message)
            }
            other => other?,
        };
        map.insert(key, value);
    }
    Ok(Value::Object(map))
}

/// A PHP value from JSON: null, bool, int, float, string, array; a `{"$bytes": base64}`
/// object is the string of those bytes.
pub fn from_json(v: &Value) -> Zval {
    let mut z = Zval::new();
    match v {
        Value::Null => z.set_null(),
        Value::Bool(b) => z.set_bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => z.set_long(i),
            None => z.set_double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => {
            let _ = z.set_string(s, false);
        }
        Value::Array(items) => {
            let mut table = ZendHashTable::with_capacity(items.len() as u32);
            for item in items {
                let _ = table.push(from_json(item));
            }
            z.set_hashtable(table);
        }
        Value::Object(_) if let Some(bytes) = crawlq::wire::value_bytes(v) => z.set_binary(bytes),
        Value::Object(map) => {
            let mut table = ZendHashTable::with_capacity(map.len() as u32);
            for (k, item) in map {
                let _ = table.insert(k.as_str(), from_json(item));
            }
            z.set_hashtable(table);
        }
    }
    z
}
