//! JavaScript values <-> JSON values, with the same rules and messages as the native addon:
//! plain objects, arrays, strings, finite numbers, booleans and null, and byte strings (a
//! `Uint8Array` is `{"$bytes": base64}`, read back as a `Uint8Array`); `undefined` object
//! fields are skipped; anything else is a TypeError naming where it was found.

use js_sys::{Array, Object, Reflect};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crawlq::binding::json::MAX_VALUE_DEPTH as MAX_DEPTH;

pub use crawlq::binding::json::NotJson;

/// Convert `value`, found at `path`, to JSON (`undefined` -> null).
pub fn to_json(value: &JsValue, path: &str) -> Result<Value, NotJson> {
    convert(value, path, 0).map(|v| v.unwrap_or(Value::Null))
}

fn convert(value: &JsValue, path: &str, depth: usize) -> Result<Option<Value>, NotJson> {
    let bad_value = |message: String| NotJson {
        message,
        bad_value: true,
    };
    if depth > MAX_DEPTH {
        return Err(bad_value(format!(
            "{path} is nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if value.is_undefined() {
        return Ok(None);
    }
    if value.is_null() {
        return Ok(Some(Value::Null));
    }
    if let Some(b) = value.as_bool() {
        return Ok(Some(Value::Bool(b)));
    }
    if let Some(f) = value.as_f64() {
        if !f.is_finite() {
            return Err(NotJson::non_finite(
                path,
                f,
                crawlq::binding::json::JS_NON_FINITE,
            ));
        }
        return Ok(Some(
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                Value::from(f as i64)
            } else {
                Value::Number(Number::from_f64(f).expect("finite"))
            },
        ));
    }
    if let Some(s) = value.as_string() {
        return Ok(Some(Value::String(s)));
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        let mut items = Vec::with_capacity(array.length() as usize);
        for (i, item) in array.iter().enumerate() {
            items.push(convert(&item, &format!("{path}[{i}]"), depth + 1)?.unwrap_or(Value::Null));
        }
        return Ok(Some(Value::Array(items)));
    }
    let what = if value.is_function() {
        "a function"
    } else if value.is_symbol() {
        "a symbol"
    } else if value.is_bigint() {
        "a BigInt"
    } else if let Some(bytes) = value.dyn_ref::<js_sys::Uint8Array>() {
        // a Uint8Array (a Buffer) is a byte string: `{"$bytes": base64}` in the payload
        return Ok(Some(crawlq::wire::bytes_value(&bytes.to_vec())));
    } else if value.is_object() {
        let proto = Object::get_prototype_of(value);
        if proto.is_null() || proto == Object::get_prototype_of(&Object::new()) {
            let object: &Object = value.unchecked_ref();
            let mut map = Map::new();
            for key in Object::keys(object).iter() {
                let name = key.as_string().unwrap_or_default();
                let field = Reflect::get(object, &key).unwrap_or(JsValue::UNDEFINED);
                let at = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let converted = match convert(&field, &at, depth + 1) {
                    // a seed item's field that is not JSON refuses that item only
                    Err(why) if crawlq::binding::json::is_item_field(path, &name) => {
                        Some(crawlq::binding::json::unreadable(&why.message))
                    }
                    other => other?,
                };
                if let Some(v) = converted {
                    map.insert(name, v);
                }
            }
            return Ok(Some(Value::Object(map)));
        }
        return Err(NotJson::of_type(format!(
            "{path} is not a plain object (a Date, Map or class instance is not JSON)"
        )));
    } else {
        "not a JSON value"
    };
    Err(NotJson::of_type(format!(
        "{path} is {what}, which is not JSON"
    )))
}

/// A JavaScript value from JSON (through JSON.parse, which V8 does fast); a value holding byte
/// strings is built value by value, each `{"$bytes": base64}` as a `Uint8Array`.
pub fn to_js(value: &Value) -> JsValue {
    if crawlq::wire::has_bytes(value) {
        return to_js_with_bytes(value);
    }
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}

fn to_js_with_bytes(value: &Value) -> JsValue {
    if let Some(bytes) = crawlq::wire::value_bytes(value) {
        return js_sys::Uint8Array::from(bytes.as_slice()).into();
    }
    match value {
        Value::Array(items) => items.iter().map(to_js_with_bytes).collect::<Array>().into(),
        Value::Object(map) => {
            let object = Object::new();
            for (key, item) in map {
                let _ = Reflect::set(&object, &JsValue::from_str(key), &to_js_with_bytes(item));
            }
            object.into()
        }
        scalar => to_js(scalar),
    }
}

/// The `token`, `id`, `host` and `url` of a lease object, read directly.
pub fn lease_handle(value: &JsValue, path: &str) -> Result<crawlq::LeaseHandle, String> {
    let bad = || {
        format!(
            "{path} must be a lease (an object with token, id, host and url, as lease returned it)"
        )
    };
    if !value.is_object() || Array::is_array(value) {
        return Err(bad());
    }
    let get =
        |name: &str| Reflect::get(value, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
    let token = get("token")
        .as_f64()
        .filter(|t| *t >= 0.0 && t.fract() == 0.0 && *t < 9_007_199_254_740_992.0)
        .ok_or_else(bad)?;
    let host = get("host").as_string().ok_or_else(bad)?;
    let id = get("id").as_string().ok_or_else(bad)?;
    let url = get("url");
    let url = if url.is_null() || url.is_undefined() {
        None
    } else {
        Some(url.as_string().ok_or_else(bad)?)
    };
    let key = get("key");
    let key = if key.is_null() || key.is_undefined() {
        None
    } else {
        Some(key.as_string().ok_or_else(bad)?)
    };
    let crawl = get("crawl");
    let crawl = if crawl.is_null() || crawl.is_undefined() {
        None
    } else {
        Some(crawl.as_string().ok_or_else(bad)?)
    };
    Ok(crawlq::LeaseHandle {
        token: token as u64,
        host,
        id,
        url,
        key,
        crawl,
    })
}
