//! The executor of the WebAssembly build: every command is built and every reply decoded by
//! the core; a JavaScript transport only runs one script call (FCALL of the operation's Redis
//! function when it takes `fn`, else EVALSHA, falling back to EVAL on NOSCRIPT) and one
//! blocking wait.
//!
//! ```ts
//! interface Transport {
//!   evalScript(sha: string, source: string, keys: string[], args: string[],
//!              fn?: { name: string, library: string }): Promise<Reply>
//!   blockingWait(key: string, timeoutSeconds: number): Promise<boolean>
//!   yieldNow?(): Promise<void>
//!   close?(): Promise<void>
//! }
//! type Reply = null | number | string | Uint8Array | Reply[]
//! ```
//! A transport rejects with an `Error` whose `kind` is `'server'` (Redis answered with an
//! error), `'timeout'` or `'unavailable'` (anything else). `yieldNow`, when there, resolves once
//! the client has sent what it was handed (a seed calls it after each chunk, before it
//! normalizes the next, so that Redis runs one while the other is prepared).

use crawlq::ops::{Reply, ScriptCall};
use crawlq::{Error, Executor, Result};
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

pub struct JsTransport {
    this: JsValue,
    eval_script: Function,
    blocking_wait: Function,
    yield_now: Option<Function>,
    /// Per script, its source and its function (`{name, library}`) as JavaScript values, made
    /// once: each is a handle passed to every call, where a string made from Rust's would be
    /// copied into JavaScript on every call (the library is about 240 KB).
    scripts: RefCell<HashMap<&'static str, (JsValue, JsValue)>>,
    library: JsValue,
}

impl JsTransport {
    pub fn new(transport: JsValue) -> std::result::Result<JsTransport, String> {
        let method = |name: &str| -> std::result::Result<Function, String> {
            Reflect::get(&transport, &JsValue::from_str(name))
                .ok()
                .and_then(|f| f.dyn_into::<Function>().ok())
                .ok_or_else(|| format!("the transport must have a method {name}()"))
        };
        Ok(JsTransport {
            eval_script: method("evalScript")?,
            blocking_wait: method("blockingWait")?,
            yield_now: method("yieldNow").ok(),
            this: transport,
            scripts: RefCell::default(),
            library: JsValue::from_str(crawlq::scripts::library().source),
        })
    }

    /// The script's source and its function (`{name, library}`), as JavaScript values.
    fn script_values(&self, script: &'static crawlq::scripts::Script) -> (JsValue, JsValue) {
        self.scripts
            .borrow_mut()
            .entry(script.name)
            .or_insert_with(|| {
                let function = Object::new();
                let _ = Reflect::set(
                    &function,
                    &JsValue::from_str("name"),
                    &JsValue::from_str(script.function_name()),
                );
                let _ = Reflect::set(&function, &JsValue::from_str("library"), &self.library);
                (JsValue::from_str(script.source()), function.into())
            })
            .clone()
    }

    pub fn object(&self) -> &JsValue {
        &self.this
    }
}

fn text(bytes: &[u8]) -> JsValue {
    JsValue::from_str(&String::from_utf8_lossy(bytes))
}

/// A transport's rejection as a crawlq error.
fn transport_error(err: JsValue, context: &str) -> Error {
    let message = Reflect::get(&err, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| err.as_string())
        .unwrap_or_else(|| "transport error".into());
    let kind = Reflect::get(&err, &JsValue::from_str("kind"))
        .ok()
        .and_then(|k| k.as_string())
        .unwrap_or_default();
    match kind.as_str() {
        "server" => match Error::from_server_reply(&message) {
            Error::Server(m) => Error::Server(format!("{context}: {m}")),
            decided => decided,
        },
        "timeout" => Error::Timeout(format!("{context}: {message}")),
        _ => Error::Unavailable(format!("{context}: {message}")),
    }
}

fn to_reply(value: JsValue) -> Reply {
    if value.is_null() || value.is_undefined() {
        Reply::Nil
    } else if let Some(f) = value.as_f64() {
        Reply::Int(f as i64)
    } else if let Some(b) = value.as_bool() {
        Reply::Int(b as i64)
    } else if let Some(s) = value.as_string() {
        Reply::Data(s.into_bytes())
    } else if Array::is_array(&value) {
        Reply::Array(
            value
                .unchecked_into::<Array>()
                .iter()
                .map(to_reply)
                .collect(),
        )
    } else if value.is_instance_of::<Uint8Array>() {
        Reply::Data(value.unchecked_into::<Uint8Array>().to_vec())
    } else {
        Reply::Data(format!("{value:?}").into_bytes())
    }
}

impl Executor for JsTransport {
    async fn eval(&self, call: ScriptCall) -> Result<Reply> {
        let keys: Array = call.keys.iter().map(|k| JsValue::from_str(k)).collect();
        let args: Array = call.args.iter().map(|a| text(a)).collect();
        let (source, function) = self.script_values(call.script);
        let call_args = Array::of5(
            &JsValue::from_str(call.script.sha1()),
            &source,
            &keys,
            &args,
            &function,
        );
        let promise = self
            .eval_script
            .apply(&self.this, &call_args)
            .map_err(|e| transport_error(e, call.script.name))?;
        let value = JsFuture::from(Promise::resolve(&promise))
            .await
            .map_err(|e| transport_error(e, call.script.name))?;
        Ok(to_reply(value))
    }

    async fn wait(&self, key: &str, timeout: Duration) -> Result<bool> {
        let seconds = JsValue::from_f64(timeout.as_secs_f64().max(0.001));
        let promise = self
            .blocking_wait
            .call2(&self.this, &JsValue::from_str(key), &seconds)
            .map_err(|e| transport_error(e, "waiting for work"))?;
        let woken = JsFuture::from(Promise::resolve(&promise))
            .await
            .map_err(|e| transport_error(e, "waiting for work"))?;
        Ok(woken.is_truthy())
    }

    fn monotonic_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }

    async fn sleep(&self, duration: Duration) {
        // the host's `setTimeout` (every JavaScript runtime has one); without it, no wait
        let Ok(set_timeout) = Reflect::get(&js_sys::global(), &JsValue::from_str("setTimeout"))
        else {
            return;
        };
        let Ok(set_timeout) = set_timeout.dyn_into::<Function>() else {
            return;
        };
        let ms = JsValue::from_f64(duration.as_millis() as f64);
        let timer = Promise::new(&mut |resolve, _reject| {
            let _ = set_timeout.call2(&JsValue::UNDEFINED, &resolve, &ms);
        });
        let _ = JsFuture::from(timer).await;
    }

    async fn yield_now(&self) {
        // Without `yieldNow` there is nothing to wait for: a JavaScript client writes on a
        // later turn of the event loop, which no wake-up of this task reaches.
        let Some(yield_now) = &self.yield_now else {
            return;
        };
        if let Ok(promise) = yield_now.call0(&self.this) {
            // a rejected yield only means no turn was given: the seed goes on either way
            let _ = JsFuture::from(Promise::resolve(&promise)).await;
        }
    }
}
