//! JavaScript values <-> JSON values. Only plain objects, arrays, strings, finite numbers,
//! booleans and null cross, and byte strings: a `Uint8Array` (a `Buffer`) is stored as
//! `{"$bytes": base64}` (crawlq::wire::BYTES_KEY) and read back as a `Buffer`. `undefined`
//! object fields are skipped (as `JSON.stringify` does). Anything else is a TypeError naming
//! where it was found.

use napi::bindgen_prelude::ToNapiValue;
use napi::sys;
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;
use std::ptr;

use crawlq::binding::js::JsReply;
use crawlq::binding::json::MAX_VALUE_DEPTH as MAX_DEPTH;

pub use crawlq::binding::json::NotJson;

struct Ctx {
    env: sys::napi_env,
    /// `Object.prototype`, looked up for the first object met (a page's links are strings).
    object_prototype: Cell<Option<sys::napi_value>>,
}

impl Ctx {
    unsafe fn object_prototype(&self) -> Result<sys::napi_value, NotJson> {
        if let Some(proto) = self.object_prototype.get() {
            return Ok(proto);
        }
        let proto = unsafe { object_prototype(self.env)? };
        self.object_prototype.set(Some(proto));
        Ok(proto)
    }
}

/// Where a value was found (`links[3].payload`), written out only for an error's message:
/// a batch's values are many and their errors rare.
#[derive(Clone, Copy)]
enum At<'a> {
    Root(&'a str),
    Element(&'a At<'a>, u32),
    Field(&'a At<'a>, &'a str),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root(path) => f.write_str(path),
            At::Element(parent, i) => write!(f, "{parent}[{i}]"),
            At::Field(At::Root(""), name) => f.write_str(name),
            At::Field(parent, name) => write!(f, "{parent}.{name}"),
        }
    }
}

fn status(s: sys::napi_status, what: impl fmt::Display) -> Result<(), NotJson> {
    if s == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(NotJson::of_type(format!("could not read {what}")))
    }
}

/// Convert `value`, found at `path`, to JSON.
///
/// # Safety
/// `env` and `value` must be valid for the current N-API call.
pub unsafe fn to_json(
    env: sys::napi_env,
    value: sys::napi_value,
    path: &str,
) -> Result<Value, NotJson> {
    let ctx = Ctx {
        env,
        object_prototype: Cell::new(None),
    };
    unsafe { convert(&ctx, value, At::Root(path), 0) }.map(|v| v.unwrap_or(Value::Null))
}

unsafe fn object_prototype(env: sys::napi_env) -> Result<sys::napi_value, NotJson> {
    let mut global = ptr::null_mut();
    status(
        unsafe { sys::napi_get_global(env, &mut global) },
        "the global object",
    )?;
    let mut object = ptr::null_mut();
    status(
        unsafe { sys::napi_get_named_property(env, global, c"Object".as_ptr(), &mut object) },
        "Object",
    )?;
    let mut proto = ptr::null_mut();
    status(
        unsafe { sys::napi_get_named_property(env, object, c"prototype".as_ptr(), &mut proto) },
        "Object.prototype",
    )?;
    Ok(proto)
}

/// `None` for `undefined` (the caller drops the field).
unsafe fn convert(
    ctx: &Ctx,
    value: sys::napi_value,
    path: At<'_>,
    depth: usize,
) -> Result<Option<Value>, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson::value(format!(
            "{path} is nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let env = ctx.env;
    let mut ty = 0;
    status(unsafe { sys::napi_typeof(env, value, &mut ty) }, path)?;
    Ok(Some(match ty {
        sys::ValueType::napi_undefined => return Ok(None),
        sys::ValueType::napi_null => Value::Null,
        sys::ValueType::napi_boolean => {
            let mut b = false;
            status(
                unsafe { sys::napi_get_value_bool(env, value, &mut b) },
                path,
            )?;
            Value::Bool(b)
        }
        sys::ValueType::napi_number => {
            let mut f = 0.0;
            status(
                unsafe { sys::napi_get_value_double(env, value, &mut f) },
                path,
            )?;
            if !f.is_finite() {
                return Err(NotJson::non_finite(
                    path,
                    f,
                    crawlq::binding::json::JS_NON_FINITE,
                ));
            }
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                Value::from(f as i64)
            } else {
                Value::Number(Number::from_f64(f).expect("finite"))
            }
        }
        sys::ValueType::napi_string => Value::String(unsafe { string(env, value, path)? }),
        sys::ValueType::napi_object => unsafe { object(ctx, value, path, depth)? },
        other => {
            let what = match other {
                sys::ValueType::napi_function => "a function",
                sys::ValueType::napi_symbol => "a symbol",
                sys::ValueType::napi_bigint => "a BigInt",
                _ => "not a JSON value",
            };
            return Err(NotJson::of_type(format!(
                "{path} is {what}, which is not JSON"
            )));
        }
    }))
}

unsafe fn string(
    env: sys::napi_env,
    value: sys::napi_value,
    path: impl fmt::Display,
) -> Result<String, NotJson> {
    let utf8 = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| NotJson::of_type(format!("{path} is not valid UTF-8")))
    };
    // Most strings (URLs, hosts, ids) fit a small buffer: one read instead of a length query
    // and a read. N-API writes whole characters only, so a string cut short leaves at most 3
    // of the buffer's bytes unused before its terminating NUL.
    let mut small = [0u8; 512];
    let written = unsafe { read_utf8(env, value, &mut small, &path)? };
    if written + 4 < small.len() {
        return utf8(small[..written].to_vec());
    }
    let mut len = 0;
    status(
        unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) },
        &path,
    )?;
    let mut buf = vec![0u8; len + 1];
    let written = unsafe { read_utf8(env, value, &mut buf, &path)? };
    buf.truncate(written);
    utf8(buf)
}

/// Write the string `value` into `buf` as UTF-8 followed by a NUL (cut short to fit): the
/// bytes written before the NUL.
unsafe fn read_utf8(
    env: sys::napi_env,
    value: sys::napi_value,
    buf: &mut [u8],
    path: impl fmt::Display,
) -> Result<usize, NotJson> {
    let mut written = 0;
    status(
        unsafe {
            sys::napi_get_value_string_utf8(
                env,
                value,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut written,
            )
        },
        path,
    )?;
    Ok(written)
}

unsafe fn object(
    ctx: &Ctx,
    value: sys::napi_value,
    path: At<'_>,
    depth: usize,
) -> Result<Value, NotJson> {
    let env = ctx.env;
    let mut is_array = false;
    status(
        unsafe { sys::napi_is_array(env, value, &mut is_array) },
        path,
    )?;
    if is_array {
        let mut len = 0;
        status(
            unsafe { sys::napi_get_array_length(env, value, &mut len) },
            path,
        )?;
        let mut items = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut element = ptr::null_mut();
            status(
                unsafe { sys::napi_get_element(env, value, i, &mut element) },
                path,
            )?;
            let at = At::Element(&path, i);
            items.push(unsafe { convert(ctx, element, at, depth + 1)? }.unwrap_or(Value::Null));
        }
        return Ok(Value::Array(items));
    }
    let mut is_typed_array = false;
    status(
        unsafe { sys::napi_is_typedarray(env, value, &mut is_typed_array) },
        path,
    )?;
    if is_typed_array {
        return unsafe { typed_array_bytes(env, value, path) }
            .map(|b| crawlq::wire::bytes_value(&b));
    }
    // plain objects only: a Date, Map or class instance has another prototype
    let mut proto = ptr::null_mut();
    status(
        unsafe { sys::napi_get_prototype(env, value, &mut proto) },
        path,
    )?;
    let mut proto_type = 0;
    status(
        unsafe { sys::napi_typeof(env, proto, &mut proto_type) },
        path,
    )?;
    let mut plain = proto_type == sys::ValueType::napi_null;
    if !plain {
        status(
            unsafe { sys::napi_strict_equals(env, proto, ctx.object_prototype()?, &mut plain) },
            path,
        )?;
    }
    if !plain {
        return Err(NotJson::of_type(format!(
            "{path} is not a plain object (a Date, Map or class instance is not JSON)"
        )));
    }
    let mut keys = ptr::null_mut();
    status(
        unsafe {
            sys::napi_get_all_property_names(
                env,
                value,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        },
        path,
    )?;
    let mut len = 0;
    status(
        unsafe { sys::napi_get_array_length(env, keys, &mut len) },
        path,
    )?;
    let mut map = Map::new();
    for i in 0..len {
        let mut key = ptr::null_mut();
        status(
            unsafe { sys::napi_get_element(env, keys, i, &mut key) },
            path,
        )?;
        let name = unsafe { string(env, key, path)? };
        let mut field = ptr::null_mut();
        status(
            unsafe { sys::napi_get_property(env, value, key, &mut field) },
            path,
        )?;
        let converted = match unsafe { convert(ctx, field, At::Field(&path, &name), depth + 1) } {
            // a seed item's field that is not JSON refuses that item only
            Err(NotJson { message, .. })
                if crawlq::binding::json::is_item_field(&path.to_string(), &name) =>
            {
                Some(crawlq::binding::json::unreadable(&message))
            }
            other => other?,
        };
        if let Some(v) = converted {
            map.insert(name, v);
        }
    }
    Ok(Value::Object(map))
}

/// The bytes of a `Uint8Array` (a `Buffer`); other typed arrays are refused by name.
unsafe fn typed_array_bytes(
    env: sys::napi_env,
    value: sys::napi_value,
    path: At<'_>,
) -> Result<Vec<u8>, NotJson> {
    let mut kind = 0;
    let mut length = 0;
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0;
    status(
        unsafe {
            sys::napi_get_typedarray_info(
                env,
                value,
                &mut kind,
                &mut length,
                &mut data,
                &mut buffer,
                &mut offset,
            )
        },
        path,
    )?;
    if kind != sys::TypedarrayType::uint8_array {
        return Err(NotJson::of_type(format!(
            "{path} is a typed array other than Uint8Array, which is not JSON (bytes are a Uint8Array or Buffer)"
        )));
    }
    if length == 0 || data.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: N-API points `data` at the view's first byte, `length` bytes long.
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) }.to_vec())
}

/// A JSON value for JavaScript in which `{"$bytes": base64}` objects are `Buffer`s; values
/// without bytes take napi's own conversion.
pub struct JsonOut(pub Value);

impl ToNapiValue for JsonOut {
    unsafe fn to_napi_value(env: sys::napi_env, value: JsonOut) -> napi::Result<sys::napi_value> {
        unsafe { json_to_js(env, value.0) }
    }
}

/// What a listed queue method resolves with (see `crawlq::binding::js::JsReply`): JSON as
/// [`JsonOut`], leases as the rows of [`LeaseRows`], after the other fields' object when there are
/// some (index.js builds the objects), `undefined` for a `Promise<void>`.
pub struct Reply(pub JsReply);

impl ToNapiValue for Reply {
    unsafe fn to_napi_value(env: sys::napi_env, reply: Reply) -> napi::Result<sys::napi_value> {
        match reply.0 {
            JsReply::Json(v) => unsafe { json_to_js(env, v) },
            JsReply::Undefined => unsafe { <()>::to_napi_value(env, ()) },
            JsReply::Leases(leases) => unsafe { lease_rows(env, leases, None) },
            JsReply::WithLeases { head, leases } => {
                let head = unsafe { json_to_js(env, serde_json::Value::Object(head))? };
                unsafe { lease_rows(env, leases, Some(head)) }
            }
        }
    }
}

/// A raw N-API call's status as a result (`failure`: the error's message).
fn napi_ok(status: sys::napi_status, failure: &'static str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_reason(failure))
    }
}

/// `value` as a JavaScript value, byte strings as `Buffer`s.
pub unsafe fn json_to_js(env: sys::napi_env, value: Value) -> napi::Result<sys::napi_value> {
    if !crawlq::wire::has_bytes(&value) {
        return unsafe { Value::to_napi_value(env, value) };
    }
    let check = |s| napi_ok(s, "could not build a payload value");
    let mut out = ptr::null_mut();
    if let Some(bytes) = crawlq::wire::value_bytes(&value) {
        let mut data = ptr::null_mut();
        check(unsafe {
            sys::napi_create_buffer_copy(
                env,
                bytes.len(),
                bytes.as_ptr().cast(),
                &mut data,
                &mut out,
            )
        })?;
        return Ok(out);
    }
    match value {
        Value::Array(items) => {
            check(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut out) })?;
            for (i, item) in items.into_iter().enumerate() {
                let item = unsafe { json_to_js(env, item)? };
                check(unsafe { sys::napi_set_element(env, out, i as u32, item) })?;
            }
        }
        Value::Object(map) => {
            check(unsafe { sys::napi_create_object(env, &mut out) })?;
            for (key, item) in map {
                let mut name = ptr::null_mut();
                check(unsafe {
                    sys::napi_create_string_utf8(
                        env,
                        key.as_ptr().cast(),
                        key.len() as isize,
                        &mut name,
                    )
                })?;
                let item = unsafe { json_to_js(env, item)? };
                check(unsafe { sys::napi_set_property(env, out, name, item) })?;
            }
        }
        scalar => return unsafe { Value::to_napi_value(env, scalar) },
    }
    Ok(out)
}

/// The `token`, `host` and `id` of a lease object, read directly (ack and friends need
/// nothing else, and leases carry payloads that would be costly to convert).
///
/// # Safety
/// `env` and `value` must be valid for the current N-API call.
pub unsafe fn lease_handle(
    env: sys::napi_env,
    value: sys::napi_value,
    path: &str,
) -> Result<crawlq::LeaseHandle, NotJson> {
    let bad = || {
        NotJson::of_type(format!(
            "{path} must be a lease (an object with token, id, host and url, as lease returned it)"
        ))
    };
    let mut ty = 0;
    status(unsafe { sys::napi_typeof(env, value, &mut ty) }, path)?;
    if ty != sys::ValueType::napi_object {
        return Err(bad());
    }
    let field = |name: &std::ffi::CStr| -> Result<(sys::napi_value, i32), NotJson> {
        let mut v = ptr::null_mut();
        status(
            unsafe { sys::napi_get_named_property(env, value, name.as_ptr(), &mut v) },
            path,
        )?;
        let mut t = 0;
        status(unsafe { sys::napi_typeof(env, v, &mut t) }, path)?;
        Ok((v, t))
    };
    let (token, t) = field(c"token")?;
    if t != sys::ValueType::napi_number {
        return Err(bad());
    }
    let mut token_f = 0.0;
    status(
        unsafe { sys::napi_get_value_double(env, token, &mut token_f) },
        path,
    )?;
    if !(token_f >= 0.0 && token_f.fract() == 0.0 && token_f < 9_007_199_254_740_992.0) {
        return Err(bad());
    }
    let (host, t) = field(c"host")?;
    if t != sys::ValueType::napi_string {
        return Err(bad());
    }
    let (id, t) = field(c"id")?;
    if t != sys::ValueType::napi_string {
        return Err(bad());
    }
    let id = unsafe { string(env, id, path)? };
    let (url, t) = field(c"url")?;
    let url = match t {
        sys::ValueType::napi_string => Some(unsafe { string(env, url, path)? }),
        sys::ValueType::napi_null | sys::ValueType::napi_undefined => None,
        _ => return Err(bad()),
    };
    let (key, t) = field(c"key")?;
    let key = match t {
        sys::ValueType::napi_string => Some(unsafe { string(env, key, path)? }),
        sys::ValueType::napi_null | sys::ValueType::napi_undefined => None,
        _ => return Err(bad()),
    };
    let (crawl, t) = field(c"crawl")?;
    let crawl = match t {
        sys::ValueType::napi_string => Some(unsafe { string(env, crawl, path)? }),
        sys::ValueType::napi_null | sys::ValueType::napi_undefined => None,
        _ => return Err(bad()),
    };
    Ok(crawlq::LeaseHandle {
        token: token_f as u64,
        host: unsafe { string(env, host, path)? },
        id,
        url,
        key,
        crawl,
    })
}

/// Leases as one flat array of [`LEASE_FIELDS`] values per lease, in the order of the `Lease`
/// type's fields; index.js turns each run into an object literal. V8 builds those far faster
/// than objects assembled property by property through N-API.
pub struct LeaseRows(pub Vec<crawlq::Lease>);

/// Values per lease in a [`LeaseRows`] array (index.js reads them in this order).
pub const LEASE_FIELDS: u32 = 13;

impl ToNapiValue for LeaseRows {
    unsafe fn to_napi_value(env: sys::napi_env, rows: LeaseRows) -> napi::Result<sys::napi_value> {
        unsafe { lease_rows(env, rows.0, None) }
    }
}

/// The flat lease array, after `first` when given.
unsafe fn lease_rows(
    env: sys::napi_env,
    leases: Vec<crawlq::Lease>,
    first: Option<sys::napi_value>,
) -> napi::Result<sys::napi_value> {
    {
        let check = |s| napi_ok(s, "could not build the lease array");
        let mut array = ptr::null_mut();
        check(unsafe {
            sys::napi_create_array_with_length(
                env,
                leases.len() * LEASE_FIELDS as usize + usize::from(first.is_some()),
                &mut array,
            )
        })?;
        let mut null = ptr::null_mut();
        check(unsafe { sys::napi_get_null(env, &mut null) })?;
        let string = |s: &str| -> napi::Result<sys::napi_value> {
            let mut v = ptr::null_mut();
            check(unsafe {
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v)
            })?;
            Ok(v)
        };
        let number = |n: f64| -> napi::Result<sys::napi_value> {
            let mut v = ptr::null_mut();
            check(unsafe { sys::napi_create_double(env, n, &mut v) })?;
            Ok(v)
        };
        let mut index = 0;
        if let Some(value) = first {
            check(unsafe { sys::napi_set_element(env, array, 0, value) })?;
            index = 1;
        }
        for lease in leases {
            let values = [
                string(&lease.id)?,
                lease.url.as_deref().map_or(Ok(null), string)?,
                string(&lease.host)?,
                lease.key.as_deref().map_or(Ok(null), string)?,
                match lease.payload {
                    Some(payload) => unsafe { json_to_js(env, payload)? },
                    None => null,
                },
                number(f64::from(lease.priority))?,
                number(f64::from(lease.attempt))?,
                number(lease.token as f64)?,
                number(lease.leased_at_ms as f64)?,
                number(lease.expires_at_ms as f64)?,
                number(lease.enqueued_at_ms as f64)?,
                lease.last_error.as_deref().map_or(Ok(null), string)?,
                lease.crawl.as_deref().map_or(Ok(null), string)?,
            ];
            for value in values {
                check(unsafe { sys::napi_set_element(env, array, index, value) })?;
                index += 1;
            }
        }
        Ok(array)
    }
}
