//! Core errors -> JavaScript `Error` objects with a stable `code` (`ERR_CRAWLQ_<KIND>`), and
//! TypeErrors (`ERR_INVALID_ARG_TYPE`) for values that are not JSON.

use napi::bindgen_prelude::*;
use napi::{JsError, JsTypeError, sys};

/// The `code` of a core error kind: `ERR_CRAWLQ_INVALID_ITEM`, `ERR_CRAWLQ_LEASE_LOST`, ...
pub fn code_of(err: &crawlq::Error) -> String {
    format!("ERR_CRAWLQ_{}", err.code())
}

unsafe fn set(
    env: sys::napi_env,
    obj: sys::napi_value,
    name: &std::ffi::CStr,
    value: sys::napi_value,
) {
    unsafe { sys::napi_set_named_property(env, obj, name.as_ptr(), value) };
}

/// The JavaScript error for a core error, as a `napi::Error` that keeps the object (so a
/// promise rejects with it, `code` and extra fields included).
pub fn js_error(env: &Env, err: crawlq::Error) -> Error {
    let raw = env.raw();
    let value =
        unsafe { JsError::from(Error::new(code_of(&err), err.to_string())).into_value(raw) };
    unsafe {
        for (name, field) in err.fields(crawlq::Style::Camel) {
            let name = std::ffi::CString::new(name).expect("field names have no NUL");
            let js = ToNapiValue::to_napi_value(raw, field).unwrap_or(std::ptr::null_mut());
            set(raw, value, &name, js);
        }
        Error::from(Unknown::from_raw_unchecked(raw, value))
    }
}

/// A TypeError (`ERR_INVALID_ARG_TYPE`) kept as its JavaScript object.
pub fn type_error(env: &Env, message: String) -> Error {
    let raw = env.raw();
    unsafe {
        let value = JsTypeError::from(Error::new("ERR_INVALID_ARG_TYPE", message)).into_value(raw);
        Error::from(Unknown::from_raw_unchecked(raw, value))
    }
}
