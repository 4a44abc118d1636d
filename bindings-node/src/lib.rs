//! `require('crawlq')`: the Node.js binding of the crawlq core (napi-rs). JavaScript values
//! are converted to JSON and back, errors get their `code`; every operation is the core's.
//! Async methods never block the event loop: they run on napi's tokio runtime and settle a
//! promise; every failure (argument types included) is a rejection.

#[macro_use]
extern crate napi_derive;

mod convert;
mod errors;

use crawlq::{
    LeaseHandle, Style,
    binding::{
        Popped,
        js::{ArgError, JsArg, JsCall, NextCallProgress, NextCallSignal, ProgressFeed},
        json,
    },
};
use errors::{js_error, type_error};
use napi::bindgen_prelude::*;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;

type CoreQueue = crawlq::Queue<crawlq::RedisExecutor>;

/// A promise that settles with `convert(value)`, or rejects with the crawlq error.
fn promise<'env, T, V, F, C>(env: &'env Env, fut: F, convert: C) -> Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    F: Future<Output = crawlq::Result<T>> + Send + 'static,
    C: FnOnce(&Env, T) -> Result<V> + 'static,
{
    // boxed: a call's future is several kilobytes, moved (copied) at each step of the spawn
    let fut = Box::pin(fut);
    env.spawn_future_with_callback(
        async move { Ok(fut.await) },
        move |env, outcome| match outcome {
            Ok(value) => convert(env, value),
            Err(err) => Err(js_error(env, err)),
        },
    )
}

/// A promise that rejects with `err` (argument errors found before any I/O).
fn rejected<'env, V: ToNapiValue + 'static>(
    env: &'env Env,
    err: Error,
) -> Result<PromiseRaw<'env, V>> {
    env.spawn_future_with_callback(async { Ok(()) }, move |_, ()| Err::<V, _>(err))
}

/// A JSON argument (`undefined` -> null), or a TypeError naming the path.
fn json_arg(env: &Env, value: Option<Unknown<'_>>, path: &str) -> Result<Value> {
    json_value(env, value, path, crawlq::Error::InvalidArgument)
}

/// [`json_arg`], a value JSON cannot hold being the error `bad_value` makes (an argument
/// error; a config error for the queue's options) and a value of another type a TypeError.
fn json_value(
    env: &Env,
    value: Option<Unknown<'_>>,
    path: &str,
    bad_value: fn(String) -> crawlq::Error,
) -> Result<Value> {
    match value {
        None => Ok(Value::Null),
        Some(v) => unsafe { convert::to_json(env.raw(), v.raw(), path) }.map_err(|e| {
            if e.bad_value {
                js_error(env, bad_value(e.message))
            } else {
                type_error(env, e.message)
            }
        }),
    }
}

/// Core validation errors found before I/O, as JavaScript errors.
fn core_arg<T>(env: &Env, result: crawlq::Result<T>) -> Result<T> {
    result.map_err(|e| js_error(env, e))
}

/// One lease (object) or an array of leases (`undefined`: refused as a value that is not a
/// lease).
fn lease_arg(env: &Env, value: Option<Unknown<'_>>) -> Result<(Vec<LeaseHandle>, bool)> {
    let raw = env.raw();
    let value = match value {
        Some(v) => v.raw(),
        None => {
            let mut undefined = std::ptr::null_mut();
            unsafe { sys::napi_get_undefined(raw, &mut undefined) };
            undefined
        }
    };
    let mut is_array = false;
    unsafe { sys::napi_is_array(raw, value, &mut is_array) };
    let not_a_lease =
        |e: convert::NotJson| js_error(env, crawlq::Error::InvalidArgument(e.message));
    if !is_array {
        let one = unsafe { convert::lease_handle(raw, value, "lease") }.map_err(not_a_lease)?;
        return Ok((vec![one], true));
    }
    let mut len = 0;
    unsafe { sys::napi_get_array_length(raw, value, &mut len) };
    let mut handles = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut element = std::ptr::null_mut();
        unsafe { sys::napi_get_element(raw, value, i, &mut element) };
        handles.push(
            unsafe { convert::lease_handle(raw, element, &format!("lease[{i}]")) }
                .map_err(not_a_lease)?,
        );
    }
    Ok((handles, false))
}

macro_rules! try_arg {
    ($env:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => return rejected($env, err),
        }
    };
}

/// A crawl frontier in Redis. Create one with `await Queue.connect(url, name, options)`.
#[napi]
pub struct Queue {
    inner: Arc<CoreQueue>,
    next_call: NextCallSignal,
    next_progress: NextCallProgress,
}

/// Internal: the reports of one long call whose options held `onProgress` (protocol.js reads
/// them with `next()` and calls `stop()` when the callback throws).
#[napi]
pub struct CallProgress(Arc<ProgressFeed>);

#[napi]
impl CallProgress {
    /// Let the call go on past the last report and resolve with its next (null at its end).
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<Value>>> {
        let feed = self.0.clone();
        promise(env, async move { Ok(feed.next().await) }, |_, v| Ok(v))
    }

    /// Stop the call right after the step it reported last.
    #[napi]
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// Internal: the signal of one leasing call whose options held an `AbortSignal` (protocol.js
/// calls `stop()` when it aborts).
#[napi]
pub struct CallSignal(crawlq::StopSignal);

#[napi]
impl CallSignal {
    /// End the call's wait (a script under way finishes first).
    #[napi]
    pub fn stop(&self) {
        self.0.stop();
    }
}

#[napi]
impl Queue {
    /// Connect to Redis at `url` (`redis://`, `rediss://`, `unix://`) and open the queue
    /// `name`. Rejects with `ERR_CRAWLQ_UNAVAILABLE` when Redis cannot be reached and
    /// `ERR_CRAWLQ_CONFIG` for an unknown or invalid option.
    #[napi(
        ts_args_type = "url: string, name: string, options?: QueueOptions",
        ts_return_type = "Promise<Queue>"
    )]
    pub fn connect<'env>(
        env: &'env Env,
        url: String,
        name: String,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Queue>> {
        let options = try_arg!(
            env,
            json_value(env, options, "options", crawlq::Error::Config)
        );
        let config = try_arg!(
            env,
            core_arg(env, json::config_from_json(&options, Style::Camel))
        );
        promise(
            env,
            async move { CoreQueue::connect(&url, &name, config).await },
            |_, q| {
                Ok(Queue {
                    inner: Arc::new(q),
                    next_call: NextCallSignal::default(),
                    next_progress: NextCallProgress::default(),
                })
            },
        )
    }

    /// The queue's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The `extendEveryMs` option (0: off).
    #[napi(getter)]
    pub fn extend_every_ms(&self) -> f64 {
        self.inner.config().extend_every.as_millis() as f64
    }

    /// An async iterator over leases: `for await (const lease of q.work({ max, waitMs, signal }))`.
    /// Leaving the loop (break, throw, abort) releases the prefetched leases and the current
    /// one if it was not answered.
    #[napi(
        js_name = "work",
        ts_args_type = "options?: WorkOptions",
        ts_return_type = "Work"
    )]
    pub fn work_iterator(&self, env: &Env, options: Option<Unknown<'_>>) -> Result<Work> {
        let options = json_arg(env, options, "options")?;
        let (opts, stop_when_empty) =
            core_arg(env, json::work_options_from_json(&options, Style::Camel))?;
        Ok(Work {
            queue: self.inner.clone(),
            work: Arc::new(crawlq::binding::Work::new(opts, stop_when_empty)),
        })
    }

    /// Shut the queue down for waiting: every lease call waiting on it (`lease`,
    /// `ackAndLease`, `ackWithLinksAndLease`, a `work()` loop's fetch) resolves at once with no
    /// leases, `work()` loops end, a lease call made later leases nothing (at once), and the
    /// background extender stops. Answers and other calls keep working. The addon's connection does not keep Node.js
    /// running, so there is nothing else to let go of (the WebAssembly build's JavaScript
    /// client connections do keep it running until closed).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.inner.close();
        promise(env, async { Ok(()) }, |_, ()| Ok(()))
    }

    /// Internal (protocol.js): the signal the next method call listens to, for a leasing
    /// call given an `AbortSignal`.
    #[napi(js_name = "_armNextCall")]
    pub fn arm_next_call(&self) -> CallSignal {
        CallSignal(self.next_call.arm())
    }

    /// Internal (protocol.js): the reports of the next method call, for a long call given
    /// `onProgress`.
    #[napi(js_name = "_armNextProgress")]
    pub fn arm_next_progress(&self) -> CallProgress {
        CallProgress(self.next_progress.arm())
    }

    /// Test only: pin the scripts' clock to `ms` since the epoch (`null`: the server's clock).
    #[napi(js_name = "_setFixedClock")]
    pub fn set_fixed_clock(&self, ms: Option<f64>) {
        self.inner.set_fixed_clock(ms.map(|m| m as i64));
    }
}

/// An argument of a listed function as JSON: `config` holds queue options (a value JSON cannot
/// hold in it is a configuration error), any other is an argument.
macro_rules! napi_fn_arg {
    ($env:ident, config, $value:ident) => {
        json_value($env, $value, "options", crawlq::Error::Config)?
    };
    ($env:ident, $name:ident, $value:ident) => {
        json_arg($env, $value, stringify!($name))?
    };
}

/// The package's functions from the list both JavaScript packages expand
/// (`crawlq::js_functions!`, see `crawlq::binding::js`).
macro_rules! napi_functions {
    ($( $name:ident $js:tt ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
        $(
            $(#[doc = $doc])*
            #[napi(js_name = $js, ts_args_type = $ts_args, ts_return_type = $ts_ret)]
            pub fn $name(env: &Env, $($arg: Option<Unknown<'_>>),*) -> Result<convert::JsonOut> {
                let args: Vec<Value> = vec![$(napi_fn_arg!(env, $arg, $arg)),*];
                crawlq::binding::js::call_function($js, &args)
                    .map(convert::JsonOut)
                    .map_err(|e| arg_error(env, e))
            }
        )*
    };
}

crawlq::js_functions!(napi_functions);

/// A refusal of arguments as the JavaScript error: a TypeError, or the core's error.
fn arg_error(env: &Env, err: ArgError) -> Error {
    match err {
        ArgError::Type(m) => type_error(env, m),
        ArgError::Core(e) => js_error(env, e),
    }
}

/// An argument of a listed method as the core takes it: `lease` read from the lease objects
/// (or an array of them) without JSON, any other as JSON.
macro_rules! napi_arg {
    ($env:ident, lease, $value:ident) => {
        match lease_arg($env, $value) {
            Ok((handles, single)) => JsArg::Leases { handles, single },
            Err(err) => return rejected($env, err),
        }
    };
    ($env:ident, $name:ident, $value:ident) => {
        JsArg::Json(try_arg!($env, json_arg($env, $value, stringify!($name))))
    };
}

/// The queue's methods from the list both JavaScript packages expand
/// (`crawlq::js_queue_methods!`, see `crawlq::binding::js`): each reads its arguments and runs
/// the core's call.
macro_rules! napi_queue_methods {
    ($( $name:ident $js:tt $(<$generics:tt>)? ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
        #[napi]
        impl Queue {
            $(
                $(#[doc = $doc])*
                #[napi(
                    js_name = $js,
                    $(ts_generic_types = $generics,)?
                    ts_args_type = $ts_args,
                    ts_return_type = $ts_ret
                )]
                #[allow(non_snake_case)]
                pub fn $name<'env>(
                    &self,
                    env: &'env Env,
                    $($arg: Option<Unknown<'env>>),*
                ) -> Result<PromiseRaw<'env, convert::Reply>> {
                    let args = vec![$(napi_arg!(env, $arg, $arg)),*];
                    self.call(env, $js, args)
                }
            )*
        }
    };
}

crawlq::js_queue_methods!(napi_queue_methods);

impl Queue {
    /// The body of every listed method: its arguments checked (a rejection when refused), then
    /// the core's call.
    fn call<'env>(
        &self,
        env: &'env Env,
        method: &str,
        args: Vec<JsArg>,
    ) -> Result<PromiseRaw<'env, convert::Reply>> {
        // taken first: a call refused before any I/O does not leave it for the next one
        let (until, progress) = (self.next_call.take(), self.next_progress.take());
        let call = match JsCall::prepare(method, args, self.inner.ops()) {
            Ok(call) => call,
            Err(err) => return rejected(env, arg_error(env, err)),
        };
        let q = self.inner.clone();
        promise(
            env,
            async move { call.run_with(&q, until, progress).await },
            |_, reply| Ok(convert::Reply(reply)),
        )
    }
}

/// The iterator `Queue.work()` returns: the core's `Work` loop behind the async iterator
/// protocol (`next`, `return`).
#[napi]
pub struct Work {
    queue: Arc<CoreQueue>,
    work: Arc<crawlq::binding::Work>,
}

#[napi]
impl Work {
    /// The next lease (`{ value, done: false }`), or `{ done: true }` once finished.
    #[napi(ts_return_type = "Promise<IteratorResult<Lease, undefined>>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
    ) -> Result<PromiseRaw<'env, Option<convert::LeaseRows>>> {
        let rows = |lease: crawlq::Lease| Some(convert::LeaseRows(vec![lease]));
        match self.work.pop() {
            Popped::Lease(lease) => promise(env, async { Ok(()) }, move |_, ()| Ok(rows(*lease))),
            Popped::Finished => promise(env, async { Ok(()) }, |_, ()| Ok(None)),
            Popped::Empty => {
                let (q, work) = (self.queue.clone(), self.work.clone());
                promise(
                    env,
                    async move { work.next(&q, || false).await },
                    move |_, next| Ok(next.and_then(rows)),
                )
            }
        }
    }

    /// Stop and release what the iterator still holds (called by `for await` on `break`).
    #[napi(
        js_name = "return",
        ts_return_type = "Promise<IteratorResult<Lease, undefined>>"
    )]
    pub fn finish<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Value>> {
        let (q, held) = (self.queue.clone(), self.work.close());
        promise(
            env,
            async move { crawlq::binding::Work::release(&q, held).await },
            |_, ()| Ok(json!({"done": true})),
        )
    }

    /// Stop and release what the iterator still holds.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let (q, held) = (self.queue.clone(), self.work.close());
        promise(
            env,
            async move { crawlq::binding::Work::release(&q, held).await },
            |_, ()| Ok(()),
        )
    }
}
