//! `require('crawlq')`: the Node.js binding of the crawlq core (napi-rs). JavaScript values
//! are converted to JSON and back, errors get their `code`; every operation is the core's.
//! Async methods never block the event loop: they run on napi's tokio runtime and settle a
//! promise; every failure (argument types included) is a rejection.

#[macro_use]
extern crate napi_derive;

mod convert;
mod errors;

use crawlq::{
    Answer, LeaseHandle, Style,
    binding::{
        Popped,
        js::{ArgError, JsCall},
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

/// The `options` of lease calls (`LeaseOptions`), checked by the core.
fn lease_options(env: &Env, options: Option<Unknown<'_>>) -> Result<crawlq::LeaseOptions> {
    let options = json_arg(env, options, "options")?;
    core_arg(env, json::lease_options_from_json(&options, Style::Camel))
}

/// The items and options of a seed (`seed`, `ackWithLinks`): a value that is not a list of
/// items is a TypeError, bad items or options an argument error.
fn seed_arg(
    env: &Env,
    items: Unknown<'_>,
    options: Option<Unknown<'_>>,
    name: &str,
) -> Result<(Vec<crawlq::SeedItem>, crawlq::SeedOptions)> {
    let items = json_arg(env, Some(items), name)?;
    if let Some(problem) = json::seed_items_type_error(&items) {
        return Err(type_error(env, problem));
    }
    let options = json_arg(env, options, "options")?;
    let items = core_arg(env, json::seed_items_from_json(&items, Style::Camel))?;
    let opts = core_arg(env, json::seed_options_from_json(&options, Style::Camel))?;
    Ok((items, opts))
}

/// The crawl requests and options of `seedRequests` and `ackWithRequests` as seed items: a
/// value that is not an array is a TypeError, bad options an argument error.
fn requests_arg(
    env: &Env,
    queue: &CoreQueue,
    requests: Unknown<'_>,
    options: Option<Unknown<'_>>,
) -> Result<(Vec<crawlq::SeedItem>, crawlq::SeedOptions)> {
    let requests = json_arg(env, Some(requests), "requests")?;
    if !requests.is_array() {
        return Err(type_error(
            env,
            "requests must be an array of request objects".into(),
        ));
    }
    let options = json_arg(env, options, "options")?;
    let opts = core_arg(env, json::seed_options_from_json(&options, Style::Camel))?;
    let items = core_arg(
        env,
        json::request_seed_items(&requests, Style::Camel, queue.ops()),
    )?;
    Ok((items, opts))
}

/// One lease (an array is a TypeError).
fn one_lease(env: &Env, value: Unknown<'_>) -> Result<LeaseHandle> {
    let (mut handles, single) = lease_arg(env, value)?;
    if !single {
        return Err(type_error(env, "lease must be one Lease".to_string()));
    }
    Ok(handles.remove(0))
}

/// One lease (object) or an array of leases.
fn lease_arg(env: &Env, value: Unknown<'_>) -> Result<(Vec<LeaseHandle>, bool)> {
    let raw = env.raw();
    let mut is_array = false;
    unsafe { sys::napi_is_array(raw, value.raw(), &mut is_array) };
    let not_a_lease =
        |e: convert::NotJson| js_error(env, crawlq::Error::InvalidArgument(e.message));
    if !is_array {
        let one =
            unsafe { convert::lease_handle(raw, value.raw(), "lease") }.map_err(not_a_lease)?;
        return Ok((vec![one], true));
    }
    let mut len = 0;
    unsafe { sys::napi_get_array_length(raw, value.raw(), &mut len) };
    let mut handles = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut element = std::ptr::null_mut();
        unsafe { sys::napi_get_element(raw, value.raw(), i, &mut element) };
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

impl Queue {
    /// ack / nack / extend / release: one lease or an array, answered by the core.
    fn answer<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        answer: crawlq::Result<Answer>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let (handles, single) = try_arg!(env, lease_arg(env, lease));
        let answer = try_arg!(env, core_arg(env, answer));
        let q = self.inner.clone();
        promise(
            env,
            async move { q.answer(&answer, &handles, single).await },
            |_, answers| Ok(answers.to_json(Style::Camel)),
        )
    }

    /// ackWithLinks / ackWithRequests: the page's ack and its links, `{ acked, links }`.
    fn answer_page<'env>(
        &self,
        env: &'env Env,
        lease: LeaseHandle,
        links: Vec<crawlq::SeedItem>,
        opts: crawlq::SeedOptions,
    ) -> Result<PromiseRaw<'env, Value>> {
        let q = self.inner.clone();
        promise(
            env,
            async move { q.ack_with_links(&lease, &links, &opts).await },
            |_, (acked, report)| {
                Ok(json!({
                    "acked": acked,
                    "links": json::seed_report_to_json(&report, Style::Camel),
                }))
            },
        )
    }
}

/// A crawl frontier in Redis. Create one with `await Queue.connect(url, name, options)`.
#[napi]
pub struct Queue {
    inner: Arc<CoreQueue>,
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
            |_, q| Ok(Queue { inner: Arc::new(q) }),
        )
    }

    /// The queue's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Seed URLs or hosts (strings, or `{url | host, priority, delayMs, payload, force}`).
    /// Invalid items are reported with their index, never thrown.
    #[napi(
        ts_args_type = "items: string | Array<string | SeedItem>, options?: SeedOptions",
        ts_return_type = "Promise<SeedReport>"
    )]
    pub fn seed<'env>(
        &self,
        env: &'env Env,
        items: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let (items, opts) = try_arg!(env, seed_arg(env, items, options, "items"));
        let q = self.inner.clone();
        promise(env, async move { q.seed(&items, &opts).await }, |_, r| {
            Ok(json::seed_report_to_json(&r, Style::Camel))
        })
    }

    /// Seed crawl requests (`{ url, method, headers, body, userData, label, depth, retries,
    /// foundOn, frameworks }` and each one's `priority`, `delayMs`, `force`): stored in the
    /// request shape every framework adapter reads, known by their URL (a plain GET) or by
    /// method, URL and body. A request whose fields cannot be read is in the report's
    /// `invalid` (`invalid_request`); options: `priority`, `delayMs`, `force`.
    #[napi(
        ts_args_type = "requests: CrawlRequestInput[], options?: SeedOptions",
        ts_return_type = "Promise<SeedReport>"
    )]
    pub fn seed_requests<'env>(
        &self,
        env: &'env Env,
        requests: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let (items, opts) = try_arg!(env, requests_arg(env, &self.inner, requests, options));
        let q = self.inner.clone();
        promise(env, async move { q.seed(&items, &opts).await }, |_, r| {
            Ok(json::seed_report_to_json(&r, Style::Camel))
        })
    }

    /// Lease up to `max` items (default 1), waiting up to `waitMs` (default 5000) when none is
    /// ready; resolves with `[]` after that.
    #[napi(
        ts_args_type = "options?: LeaseOptions",
        ts_return_type = "Promise<Lease[]>"
    )]
    pub fn lease<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, convert::LeaseRows>> {
        let opts = try_arg!(env, lease_options(env, options));
        let q = self.inner.clone();
        promise(
            env,
            async move { q.lease_with(&opts).await },
            |_, leases| Ok(convert::LeaseRows(leases)),
        )
    }

    /// Ack a lease (or an array, in one round trip): `true`, or `false` when the lease was no
    /// longer live (nothing changed). `revisitAfterMs` queues the URL again that much later (a
    /// recrawl; 0: never; absent: the queue's option).
    #[napi(
        ts_generic_types = "T extends Lease | Lease[]",
        ts_args_type = "lease: T, options?: AckOptions",
        ts_return_type = "Promise<T extends Lease[] ? boolean[] : boolean>"
    )]
    pub fn ack<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let options = try_arg!(env, json_arg(env, options, "options"));
        self.answer(
            env,
            lease,
            json::ack_answer_from_json(&options, Style::Camel),
        )
    }

    /// Ack a lease (or an array) and lease up to `max` more items in one call (one round
    /// trip): resolves with `{ acked, leases }`, `acked` as `ack` resolves, `leases` as
    /// `lease` does (waiting up to `waitMs`, default 5000, when none is ready).
    #[napi(
        ts_generic_types = "T extends Lease | Lease[]",
        ts_args_type = "lease: T, options?: LeaseOptions",
        ts_return_type = "Promise<AckAndLease<T extends Lease[] ? boolean[] : boolean>>"
    )]
    pub fn ack_and_lease<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, convert::AckedLeaseRows>> {
        let (handles, single) = try_arg!(env, lease_arg(env, lease));
        let opts = try_arg!(env, lease_options(env, options));
        let q = self.inner.clone();
        promise(
            env,
            async move {
                q.ack_and_lease_answers(&handles, single, &opts, || false)
                    .await
            },
            |_, (answers, leases)| {
                Ok(convert::AckedLeaseRows {
                    acked: answers.to_json(Style::Camel),
                    leases,
                })
            },
        )
    }

    /// Answer a fetched page and seed the links it found, in one round trip: the links are
    /// seeded as `seed` seeds them (with `options`), then the lease is acked as `ack` acks it.
    /// Resolves with `{ acked, links }`: `acked` false when the lease was not live any more
    /// (its links are seeded all the same), `links` the links' seed report.
    #[napi(
        ts_args_type = "lease: Lease, links: Array<string | SeedItem>, options?: SeedOptions",
        ts_return_type = "Promise<AckWithLinks>"
    )]
    pub fn ack_with_links<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        links: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let handle = try_arg!(env, one_lease(env, lease));
        let (links, opts) = try_arg!(env, seed_arg(env, links, options, "links"));
        self.answer_page(env, handle, links, opts)
    }

    /// `ackWithLinks` for crawl requests (as `seedRequests` takes them): the page's lease acked
    /// and the requests found on it seeded, in one round trip. Resolves with `{ acked, links }`
    /// as `ackWithLinks` does.
    #[napi(
        ts_args_type = "lease: Lease, requests: CrawlRequestInput[], options?: SeedOptions",
        ts_return_type = "Promise<AckWithLinks>"
    )]
    pub fn ack_with_requests<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        requests: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let handle = try_arg!(env, one_lease(env, lease));
        let (items, opts) = try_arg!(env, requests_arg(env, &self.inner, requests, options));
        self.answer_page(env, handle, items, opts)
    }

    /// `ackWithLinks`, then lease up to `max` more items in the same call (one round trip per
    /// page): resolves with `{ acked, links, leases }`, `leases` as `lease` resolves (waiting
    /// up to `waitMs`, default 5000, when none is ready; the lease runs whether or not `lease`
    /// was still live). `options` takes the seed options for the links and `max`, `waitMs`,
    /// `ttlMs` for the lease.
    #[napi(
        ts_args_type = "lease: Lease, links: Array<string | SeedItem>, options?: SeedOptions & LeaseOptions",
        ts_return_type = "Promise<AckWithLinksAndLease>"
    )]
    pub fn ack_with_links_and_lease<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        links: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, convert::AckedLeaseRows>> {
        let handle = try_arg!(env, one_lease(env, lease));
        let (links, _) = try_arg!(env, seed_arg(env, links, None, "links"));
        let options = try_arg!(env, json_arg(env, options, "options"));
        let (opts, next) = try_arg!(
            env,
            core_arg(
                env,
                json::seed_and_lease_options_from_json(&options, Style::Camel)
            )
        );
        let q = self.inner.clone();
        promise(
            env,
            async move {
                q.ack_with_links_and_lease(&handle, &links, &opts, &next)
                    .await
            },
            |_, (acked, report, leases)| {
                Ok(convert::AckedLeaseRows {
                    acked: json!({
                        "acked": acked,
                        "links": json::seed_report_to_json(&report, Style::Camel),
                    }),
                    leases,
                })
            },
        )
    }

    /// Fail a lease (or an array): `"retried"`, `"dead"` or `"lost"`.
    #[napi(
        ts_generic_types = "T extends Lease | Lease[]",
        ts_args_type = "lease: T, options?: NackOptions",
        ts_return_type = "Promise<T extends Lease[] ? NackOutcome[] : NackOutcome>"
    )]
    pub fn nack<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let options = try_arg!(env, json_arg(env, options, "options"));
        let answer = json::nack_options_from_json(&options, Style::Camel).map(Answer::Nack);
        self.answer(env, lease, answer)
    }

    /// Push a lease's deadline to now + `ttlMs`. One lease: the new `expiresAt`, or a
    /// rejection with `ERR_CRAWLQ_LEASE_LOST`. An array: one `expiresAt` or `null` per lease.
    #[napi(
        ts_generic_types = "T extends Lease | Lease[]",
        ts_args_type = "lease: T, ttlMs: number",
        ts_return_type = "Promise<T extends Lease[] ? Array<number | null> : number>"
    )]
    pub fn extend<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        ttl_ms: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let ttl = try_arg!(env, json_arg(env, Some(ttl_ms), "ttlMs"));
        let answer = json::duration_arg(&ttl, "ttlMs", Style::Camel).map(Answer::Extend);
        self.answer(env, lease, answer)
    }

    /// Give a lease (or an array) back: front of its lane, attempt not counted; a `payload`
    /// option replaces the item's stored payload.
    #[napi(
        ts_generic_types = "T extends Lease | Lease[]",
        ts_args_type = "lease: T, options?: ReleaseOptions",
        ts_return_type = "Promise<T extends Lease[] ? boolean[] : boolean>"
    )]
    pub fn release<'env>(
        &self,
        env: &'env Env,
        lease: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let options = try_arg!(env, json_arg(env, options, "options"));
        let answer = json::release_options_from_json(&options, Style::Camel).map(Answer::Release);
        self.answer(env, lease, answer)
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

    /// Let go of the connection. The addon's connection does not keep Node.js running, so this
    /// only resolves; it is here so code written for both builds can close (the WebAssembly
    /// build's JavaScript client connections do keep Node.js running until closed).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        promise(env, async { Ok(()) }, |_, ()| Ok(()))
    }

    /// Test only: pin the scripts' clock to `ms` since the epoch (`null`: the server's clock).
    #[napi(js_name = "_setFixedClock")]
    pub fn set_fixed_clock(&self, ms: Option<f64>) {
        self.inner.set_fixed_clock(ms.map(|m| m as i64));
    }
}

/// The shard an input (URL or host) belongs to in a queue of `shards` shards (1..1024).
#[napi(js_name = "shardOf")]
pub fn shard_of(env: &Env, input: String, shards: i64) -> Result<u32> {
    json::shard_of_input(&input, shards).map_err(|e| js_error(env, e))
}

/// The canonical form crawlq gives an input: `{ kind, canonical, host, fingerprint }`. Throws
/// an `Error` with code `ERR_CRAWLQ_INVALID_ITEM` (and `reason`) for an input it would refuse.
#[napi(ts_return_type = "Normalized")]
pub fn normalize(env: &Env, input: String) -> Result<Value> {
    crawlq::binding::json::normalized_to_json(&input).map_err(|e| js_error(env, e))
}

/// The crawl request of a lease (docs/PROTOCOL.md section 10): `{ url, method, headers, body
/// (a Buffer or null), userData, label, depth, retries, foundOn, frameworks }`. An item seeded
/// through the plain API is a GET of its URL with its payload as `userData`. Throws an `Error`
/// with code `ERR_CRAWLQ_PROTOCOL` for a host item or a request this version cannot read
/// (dead-letter it as `undecodable: ...`).
#[napi(
    js_name = "requestOf",
    ts_args_type = "lease: Lease",
    ts_return_type = "CrawlRequest"
)]
pub fn request_of(env: &Env, lease: Unknown<'_>) -> Result<convert::JsonOut> {
    let lease = json_arg(env, Some(lease), "lease")?;
    let url = lease.get("url").and_then(Value::as_str);
    let request = json::request_of_item(url, lease.get("payload"), Style::Camel)
        .map_err(|e| js_error(env, e))?;
    Ok(convert::JsonOut(request))
}

/// The payload a crawl request (an object as `requestOf` returns it) is stored as: what a
/// nack or release stores to keep an updated request (its retries, its framework's fields).
#[napi(
    js_name = "requestPayload",
    ts_args_type = "request: CrawlRequestInput",
    ts_return_type = "Record<string, unknown>"
)]
pub fn request_payload(env: &Env, request: Unknown<'_>) -> Result<convert::JsonOut> {
    let request = json_arg(env, Some(request), "request")?;
    let request = json::request_from_json(&request, Style::Camel).map_err(|e| js_error(env, e))?;
    Ok(convert::JsonOut(request.payload()))
}

/// The payload that stores a leased crawl request again with `changes` (`requestOf`'s fields;
/// `frameworks` changes replace that framework's namespace only), read from the item as
/// stored: what a retry's nack or a release stores.
#[napi(
    js_name = "requestUpdate",
    ts_args_type = "lease: Lease, changes?: Partial<CrawlRequestInput>",
    ts_return_type = "Record<string, unknown>"
)]
pub fn request_update(
    env: &Env,
    lease: Unknown<'_>,
    changes: Option<Unknown<'_>>,
) -> Result<convert::JsonOut> {
    let lease = json_arg(env, Some(lease), "lease")?;
    let changes = json_arg(env, changes, "changes")?;
    let url = lease.get("url").and_then(Value::as_str);
    let payload = json::request_update(url, lease.get("payload"), &changes, Style::Camel)
        .map_err(|e| js_error(env, e))?;
    Ok(convert::JsonOut(payload))
}

/// The default of every queue option (milliseconds for durations; `null`: unset), from the
/// core's option table: what framework adapters read instead of defaults of their own.
#[napi(
    js_name = "defaultOptions",
    ts_return_type = "{ [K in Exclude<keyof QueueOptions, 'fixedClock'>]-?: QueueOptions[K] | null }"
)]
pub fn default_options() -> Value {
    Value::Object(crawlq::Config::default().to_options(Style::Camel))
}

/// The options a framework adapter opens its queue with: `options`, checked, with
/// `extendEveryMs` a third of `leaseTtlMs` unless given.
#[napi(
    js_name = "frameworkOptions",
    ts_args_type = "options?: QueueOptions",
    ts_return_type = "QueueOptions"
)]
pub fn framework_options(env: &Env, options: Option<Unknown<'_>>) -> Result<Value> {
    let options = json_value(env, options, "options", crawlq::Error::Config)?;
    core_arg(env, json::framework_options_json(&options, Style::Camel))
}

/// The queue methods whose arguments and results are JSON, from the list both JavaScript
/// packages expand (`crawlq::binding::js`): each converts its arguments to JSON and runs the
/// core's call, resolving with its result (`undefined` for a `Promise<void>`).
macro_rules! napi_json_methods {
    ($( $name:ident $js:tt ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
        #[napi]
        impl Queue {
            $(
                $(#[doc = $doc])*
                #[napi(js_name = $js, ts_args_type = $ts_args, ts_return_type = $ts_ret)]
                #[allow(non_snake_case)]
                pub fn $name<'env>(
                    &self,
                    env: &'env Env,
                    $($arg: Option<Unknown<'env>>),*
                ) -> Result<PromiseRaw<'env, convert::JsonOrUndefined>> {
                    let args: Vec<Value> = vec![$(try_arg!(env, json_arg(env, $arg, stringify!($arg)))),*];
                    self.json_call(env, $js, &args)
                }
            )*
        }
    };
}

crawlq::js_json_methods!(napi_json_methods);

impl Queue {
    /// The body of every JSON method: its arguments checked (a rejection when refused), then
    /// the core's call.
    fn json_call<'env>(
        &self,
        env: &'env Env,
        method: &str,
        args: &[Value],
    ) -> Result<PromiseRaw<'env, convert::JsonOrUndefined>> {
        let call = match JsCall::prepare(method, args) {
            Ok(call) => call,
            Err(ArgError::Type(m)) => return rejected(env, type_error(env, m)),
            Err(ArgError::Core(e)) => return rejected(env, js_error(env, e)),
        };
        let q = self.inner.clone();
        promise(env, async move { call.run(&q).await }, |_, v| {
            Ok(convert::JsonOrUndefined(v))
        })
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
