//! crawlq compiled to WebAssembly. The same `Queue` as the Node.js addon (names, options,
//! results, error codes); the core builds every command and decodes every reply, and a
//! JavaScript transport (see [`transport`]) runs them on whatever Redis client the runtime has.

mod convert;
mod transport;

use crawlq::{
    LeaseHandle, Style,
    binding::{
        Popped,
        js::{ArgError, JsArg, JsCall, NextCallProgress, NextCallSignal, ProgressFeed},
        json,
    },
};
use js_sys::{Array, Promise, Reflect};
use serde_json::{Value, json};
use std::future::Future;
use std::rc::Rc;
use transport::JsTransport;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

type CoreQueue = crawlq::Queue<JsTransport>;

/// The JavaScript error for a core error: an `Error` with `code` (`ERR_CRAWLQ_<KIND>`) and
/// the same extra fields as the native addon.
fn js_error(err: crawlq::Error) -> JsValue {
    let e = js_sys::Error::new(&err.to_string());
    let set = |name: &str, value: JsValue| {
        let _ = Reflect::set(&e, &JsValue::from_str(name), &value);
    };
    set(
        "code",
        JsValue::from_str(&format!("ERR_CRAWLQ_{}", err.code())),
    );
    for (name, field) in err.fields(crawlq::Style::Camel) {
        set(&name, crate::convert::to_js(&field));
    }
    e.into()
}

/// A TypeError with code `ERR_INVALID_ARG_TYPE`.
fn type_error(message: String) -> JsValue {
    let e = js_sys::TypeError::new(&message);
    let _ = Reflect::set(
        &e,
        &JsValue::from_str("code"),
        &JsValue::from_str("ERR_INVALID_ARG_TYPE"),
    );
    e.into()
}

fn json_arg(value: &JsValue, path: &str) -> Result<Value, JsValue> {
    json_value(value, path, crawlq::Error::InvalidArgument)
}

/// [`json_arg`], a value JSON cannot hold being the error `bad_value` makes (an argument
/// error; a config error for the queue's options) and a value of another type a TypeError.
fn json_value(
    value: &JsValue,
    path: &str,
    bad_value: fn(String) -> crawlq::Error,
) -> Result<Value, JsValue> {
    convert::to_json(value, path).map_err(|e| {
        if e.bad_value {
            js_error(bad_value(e.message))
        } else {
            type_error(e.message)
        }
    })
}

fn core<T>(result: crawlq::Result<T>) -> Result<T, JsValue> {
    result.map_err(js_error)
}

/// A promise settling with `f`'s JSON result, or rejecting with its error. Argument errors
/// found before I/O reject too (never throw), as in the native addon.
fn promise<F>(f: F) -> Promise
where
    F: Future<Output = Result<Value, JsValue>> + 'static,
{
    future_to_promise(async move { f.await.map(|v| convert::to_js(&v)) })
}

fn rejected(err: JsValue) -> Promise {
    Promise::reject(&err)
}

macro_rules! try_arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => return rejected(err),
        }
    };
}

fn lease_arg(value: &JsValue) -> Result<(Vec<LeaseHandle>, bool), JsValue> {
    let not_a_lease = |m: String| js_error(crawlq::Error::InvalidArgument(m));
    if !Array::is_array(value) {
        return Ok((
            vec![convert::lease_handle(value, "lease").map_err(not_a_lease)?],
            true,
        ));
    }
    let handles = Array::from(value)
        .iter()
        .enumerate()
        .map(|(i, v)| convert::lease_handle(&v, &format!("lease[{i}]")).map_err(not_a_lease))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((handles, false))
}

/// Check a Redis URL's scheme and queue options the way the native addon's connect and
/// `new Queue()` will, before a transport is created for them.
#[wasm_bindgen(js_name = validateOptions)]
pub fn validate_options(options: JsValue, name: String, url: String) -> Result<(), JsValue> {
    core(crawlq::config::check_redis_url_scheme(&url))?;
    let options = json_value(&options, "options", crawlq::Error::Config)?;
    let config = core(wasm_config(&options))?;
    core(crawlq::keys::check_queue_name(&config.key_prefix, &name))?;
    Ok(())
}

/// The queue options this build supports: all of the native addon's but `minReplicas`, whose
/// `WAIT` the JavaScript transports do not send.
fn wasm_config(options: &serde_json::Value) -> crawlq::Result<crawlq::Config> {
    let config = json::config_from_json(options, Style::Camel)?;
    if config.min_replicas > 0 {
        return Err(crawlq::Error::Config(
            "minReplicas is not supported by the WebAssembly build (its transports do not send \
             WAIT); use the native addon"
                .into(),
        ));
    }
    Ok(config)
}

/// An argument of a listed function as JSON: `config` holds queue options (a value JSON cannot
/// hold in it is a configuration error), any other is an argument.
macro_rules! wasm_fn_arg {
    (config, $value:ident) => {
        json_value(&$value, "options", crawlq::Error::Config)?
    };
    ($name:ident, $value:ident) => {
        json_arg(&$value, stringify!($name))?
    };
}

/// The package's functions from the list both JavaScript packages expand
/// (`crawlq::js_functions!`, see `crawlq::binding::js`).
macro_rules! wasm_functions {
    ($( $name:ident $js:tt ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
        $(
            $(#[doc = $doc])*
            #[wasm_bindgen(js_name = $js)]
            pub fn $name($($arg: JsValue),*) -> Result<JsValue, JsValue> {
                let args: Vec<Value> = vec![$(wasm_fn_arg!($arg, $arg)),*];
                crawlq::binding::js::call_function($js, &args)
                    .map(|v| convert::to_js(&v))
                    .map_err(arg_error)
            }
        )*
    };
}

crawlq::js_functions!(wasm_functions);

/// For the transports (js/adapters): the core's words for a server's refusal of a connection's
/// handshake (a wrong password, a database it lacks), or undefined for another reply; such a
/// refusal is a configuration error, as in the native bindings.
#[wasm_bindgen(js_name = handshakeRefusal, skip_typescript)]
pub fn handshake_refusal(context: &str, reply: &str) -> Option<String> {
    crawlq::config::handshake_refusal(context, reply).map(config_message)
}

/// For the transports: what is wrong with a URL's scheme (another one, or none: `host:port`,
/// which ioredis reads and the native bindings refuse), in the core's words; undefined if none.
#[wasm_bindgen(js_name = redisUrlProblem, skip_typescript)]
pub fn redis_url_problem(url: &str) -> Option<String> {
    crawlq::config::check_redis_url_scheme(url)
        .err()
        .map(config_message)
}

/// For the transports: a connection answered in another protocol than Redis's (`said`: the
/// client's parse error), as the native bindings word it.
#[wasm_bindgen(js_name = notRedisProtocol, skip_typescript)]
pub fn not_redis_protocol(context: &str, said: &str) -> String {
    config_message(crawlq::config::not_redis_protocol(context, said))
}

/// A configuration error's words without its kind's prefix: the transports' errors carry
/// their kind apart (`err.kind`), as their other errors do.
fn config_message(err: crawlq::Error) -> String {
    match err {
        crawlq::Error::Config(message) => message,
        other => other.to_string(),
    }
}

/// For `Queue.connect`: a transport's connect failure (its `kind` and message) in the words of
/// the native addon's error of that kind (`redis unavailable: connecting to ...`).
#[wasm_bindgen(js_name = connectFailureMessage, skip_typescript)]
pub fn connect_failure_message(kind: &str, message: &str) -> String {
    match kind {
        "config" => crawlq::Error::Config(message.into()),
        "timeout" => crawlq::Error::Timeout(message.into()),
        "server" => crawlq::Error::from_server_reply(message),
        _ => crawlq::Error::Unavailable(message.into()),
    }
    .to_string()
}

/// For the transports: why a URL the client could not read is wrong (`clientSays`: the
/// client's own words), as the native bindings say it.
#[wasm_bindgen(js_name = whyUrlUnread, skip_typescript)]
pub fn why_url_unread(url: &str, client_says: &str) -> String {
    crawlq::config::why_url_unread(url, client_says)
}

/// A refusal of arguments as the JavaScript error: a TypeError, or the core's error.
fn arg_error(err: ArgError) -> JsValue {
    match err {
        ArgError::Type(m) => type_error(m),
        ArgError::Core(e) => js_error(e),
    }
}

/// A crawl frontier in Redis, over a JavaScript transport.
#[wasm_bindgen]
pub struct Queue {
    inner: Rc<CoreQueue>,
    next_call: NextCallSignal,
    next_progress: NextCallProgress,
}

/// The reports of one long call whose options held `onProgress`: protocol.js reads them with
/// `next()` and calls `stop()` when the callback throws.
#[wasm_bindgen(skip_typescript)]
pub struct CallProgress(std::sync::Arc<ProgressFeed>);

#[wasm_bindgen]
impl CallProgress {
    /// Let the call go on past the last report and resolve with its next (null at its end).
    pub fn next(&self) -> Promise {
        let feed = self.0.clone();
        promise(async move { Ok(feed.next().await.unwrap_or(Value::Null)) })
    }

    /// Stop the call right after the step it reported last.
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// The signal of one leasing call whose options held an `AbortSignal`: protocol.js calls
/// `stop()` when it aborts.
#[wasm_bindgen(skip_typescript)]
pub struct CallSignal(crawlq::StopSignal);

#[wasm_bindgen]
impl CallSignal {
    /// End the call's wait (a script under way finishes first).
    pub fn stop(&self) {
        self.0.stop();
    }
}

#[wasm_bindgen]
impl Queue {
    /// A queue named `name` over `transport` (see the package README for the interface and
    /// the node-redis / ioredis adapters). `Queue.connect(url, name, options)` builds one.
    #[wasm_bindgen(constructor)]
    pub fn new(transport: JsValue, name: String, options: JsValue) -> Result<Queue, JsValue> {
        let options = json_value(&options, "options", crawlq::Error::Config)?;
        let config = core(wasm_config(&options))?;
        let exec = JsTransport::new(transport).map_err(type_error)?;
        Ok(Queue {
            inner: Rc::new(core(crawlq::Queue::with_executor(exec, &name, config))?),
            next_call: NextCallSignal::default(),
            next_progress: NextCallProgress::default(),
        })
    }

    /// The queue's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The transport this queue runs on.
    #[wasm_bindgen(getter)]
    pub fn transport(&self) -> JsValue {
        self.inner.executor().object().clone()
    }

    /// The `extendEveryMs` option (0: off).
    #[wasm_bindgen(getter, js_name = extendEveryMs)]
    pub fn extend_every_ms(&self) -> f64 {
        self.inner.config().extend_every.as_millis() as f64
    }

    /// The iterator behind `for await (const lease of q.work({ max, waitMs, stopWhenEmpty }))`.
    pub fn work(&self, options: JsValue) -> Result<Work, JsValue> {
        let options = json_arg(&options, "options")?;
        let (opts, stop_when_empty) = core(json::work_options_from_json(&options, Style::Camel))?;
        Ok(Work {
            queue: self.inner.clone(),
            work: Rc::new(crawlq::binding::Work::new(opts, stop_when_empty)),
        })
    }

    /// Shut the queue down for waiting (lease calls waiting on it resolve with no leases,
    /// `work()` loops end, later lease calls lease nothing), then close the transport (if it
    /// can be closed).
    pub fn close(&self) -> Promise {
        self.inner.close();
        let transport = self.inner.executor().object().clone();
        future_to_promise(async move {
            if let Ok(close) = Reflect::get(&transport, &JsValue::from_str("close"))
                .and_then(|f| f.dyn_into::<js_sys::Function>())
            {
                let p = close.call0(&transport)?;
                wasm_bindgen_futures::JsFuture::from(Promise::resolve(&p)).await?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Internal (connect.js): the queue's first call, made by `Queue.connect` as the native
    /// addon's makes it, so a queue opened with another shard count, or a server that would
    /// evict the queue's keys, is refused at connect.
    #[wasm_bindgen(js_name = _open, skip_typescript)]
    pub fn open(&self) -> Promise {
        let q = self.inner.clone();
        future_to_promise(async move {
            core(q.layout().await.map(|_| ()))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Internal (protocol.js): the signal the next method call listens to, for a leasing
    /// call given an `AbortSignal`.
    #[wasm_bindgen(js_name = _armNextCall, skip_typescript)]
    pub fn arm_next_call(&self) -> CallSignal {
        CallSignal(self.next_call.arm())
    }

    /// Internal (protocol.js): the reports of the next method call, for a long call given
    /// `onProgress`.
    #[wasm_bindgen(js_name = _armNextProgress, skip_typescript)]
    pub fn arm_next_progress(&self) -> CallProgress {
        CallProgress(self.next_progress.arm())
    }

    /// Test only: pin the scripts' clock to `ms` since the epoch (`null`: the server's clock).
    #[wasm_bindgen(js_name = _setFixedClock)]
    pub fn set_fixed_clock(&self, ms: Option<f64>) {
        self.inner.set_fixed_clock(ms.map(|m| m as i64));
    }
}

/// An argument of a listed method as the core takes it: `lease` read from the lease objects
/// (or an array of them), any other as JSON.
macro_rules! wasm_arg {
    (lease, $value:ident) => {
        match lease_arg(&$value) {
            Ok((handles, single)) => JsArg::Leases { handles, single },
            Err(err) => return rejected(err),
        }
    };
    ($name:ident, $value:ident) => {
        JsArg::Json(try_arg!(json_arg(&$value, stringify!($name))))
    };
}

/// The queue's methods from the list both JavaScript packages expand
/// (`crawlq::js_queue_methods!`, see `crawlq::binding::js`): each reads its arguments and runs
/// the core's call.
macro_rules! wasm_queue_methods {
    ($( $name:ident $js:tt $(<$generics:tt>)? ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
        #[wasm_bindgen]
        impl Queue {
            $(
                $(#[doc = $doc])*
                #[wasm_bindgen(js_name = $js)]
                #[allow(non_snake_case)]
                pub fn $name(&self, $($arg: JsValue),*) -> Promise {
                    let args = vec![$(wasm_arg!($arg, $arg)),*];
                    self.call($js, args)
                }
            )*
        }
    };
}

crawlq::js_queue_methods!(wasm_queue_methods);

impl Queue {
    /// The body of every listed method: its arguments checked (a rejection when refused), then
    /// the core's call, its reply as one JavaScript value.
    fn call(&self, method: &str, args: Vec<JsArg>) -> Promise {
        // taken first: a call refused before any I/O does not leave it for the next one
        let (until, progress) = (self.next_call.take(), self.next_progress.take());
        let call = match JsCall::prepare(method, args, self.inner.ops()) {
            Ok(call) => call,
            Err(err) => return rejected(arg_error(err)),
        };
        let q = self.inner.clone();
        future_to_promise(async move {
            Ok(
                match core(call.run_with(&q, until, progress).await)?.into_json() {
                    Some(v) => convert::to_js(&v),
                    None => JsValue::UNDEFINED,
                },
            )
        })
    }
}

/// The async iterator `Queue.work()` returns (the core's `Work` loop).
#[wasm_bindgen]
pub struct Work {
    queue: Rc<CoreQueue>,
    work: Rc<crawlq::binding::Work>,
}

fn item(lease: Option<crawlq::Lease>) -> Value {
    match lease {
        Some(lease) => json!({"value": json::lease_to_json(&lease, Style::Camel), "done": false}),
        None => json!({"done": true}),
    }
}

#[wasm_bindgen]
impl Work {
    /// The next lease (`{ value, done: false }`), or `{ done: true }` once finished.
    pub fn next(&self) -> Promise {
        match self.work.pop() {
            Popped::Lease(lease) => promise(async move { Ok(item(Some(*lease))) }),
            Popped::Finished => promise(async { Ok(item(None)) }),
            Popped::Empty => {
                let (q, work) = (self.queue.clone(), self.work.clone());
                promise(async move { Ok(item(core(work.next(&q, || false).await)?)) })
            }
        }
    }

    /// Stop and release what the iterator still holds (called by `for await` on `break`).
    #[wasm_bindgen(js_name = "return")]
    pub fn finish(&self) -> Promise {
        let (q, held) = (self.queue.clone(), self.work.close());
        promise(async move {
            core(crawlq::binding::Work::release(&q, held).await)?;
            Ok(item(None))
        })
    }

    /// Stop and release what the iterator still holds.
    pub fn close(&self) -> Promise {
        let (q, held) = (self.queue.clone(), self.work.close());
        future_to_promise(async move {
            core(crawlq::binding::Work::release(&q, held).await)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}
