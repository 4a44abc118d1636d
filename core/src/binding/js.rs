//! The methods of the JavaScript `Queue` class, declared once for the native addon and the
//! WebAssembly build: [`js_queue_methods!`](crate::js_queue_methods) lists them (Rust name,
//! JavaScript name, argument names, TypeScript types, doc lines), each package expands the
//! list into methods of its class, and every method's body is [`JsCall::prepare`] (the
//! arguments, checked before any I/O) then [`JsCall::run`]. A method is added here alone: a row
//! in the list and an arm in each of those two functions. An argument named `lease` is a lease
//! or an array of leases, which each package reads from its own objects ([`JsArg::Leases`]);
//! every other argument is JSON. Results are JSON, or leases ([`JsReply`]), which the addon
//! hands to JavaScript without JSON.
//!
//! The package's functions (`normalize`, `shardOf`, the crawl request helpers,
//! `defaultOptions`, `frameworkOptions`) are listed the same way
//! ([`js_functions!`](crate::js_functions), bodies in [`call_function`]). What stays in each
//! package: opening a queue (a Redis URL in the addon, a JavaScript transport in the WebAssembly
//! build), `close`, `work()` and its iterator, and the `extendEveryMs` getter.
//!
//! ```
//! use crawlq::binding::js::{JsArg, JsCall};
//! use serde_json::json;
//! let ops = crawlq::ops::Ops::new("q", crawlq::Config::default()).unwrap();
//! let args = vec![JsArg::Json(json!("example.com")), JsArg::Json(json!(1500))];
//! let call = JsCall::prepare("setHostDelay", args, &ops).unwrap();
//! assert!(matches!(call, JsCall::SetHostDelay { .. }));
//! assert!(JsCall::prepare("setHostDelay", vec![JsArg::Json(json!(7))], &ops).is_err());
//! ```

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::calls;
use super::defaults;
use super::json::{self as j};
use crate::error::{Error, Result};
use crate::ops::Ops;
use crate::queue::Executor;
use crate::{
    Answer, HostPacing, Lease, LeaseHandle, LeaseOptions, Queue, SeedItem, SeedOptions, Style,
};

/// The list of queue methods, handed to the macro `$expand` of a JavaScript package. Each row:
/// the Rust name, the JavaScript name, the TypeScript generic parameters in angle brackets
/// (optional), the argument names in parentheses (camelCase: they name the argument in error
/// messages; `lease` is a lease or an array of them), the TypeScript argument list, the
/// TypeScript return type and the lines of the method's doc comment (plain string literals:
/// napi copies them into index.d.ts as they are spelled).
#[doc(hidden)]
#[macro_export]
macro_rules! js_queue_methods {
    ($expand:ident) => {
        $expand! {
            seed "seed" (items, options) "items: string | Array<string | SeedItem>, options?: SeedOptions" "Promise<SeedReport>"
                "Seed URLs or hosts (strings, or `{url | host, priority, delayMs, payload, force}`)."
                "Invalid items are reported with their index, never thrown.";
            seed_requests "seedRequests" (requests, options) "requests: CrawlRequestInput[], options?: SeedOptions" "Promise<SeedReport>"
                "Seed crawl requests (`{ url, method, headers, body, userData, label, depth, retries,"
                "foundOn, frameworks }` and each one's `priority`, `delayMs`, `force`): stored in the"
                "request shape every framework adapter reads, known by their URL (a plain GET) or by"
                "method, URL and body. A request whose fields cannot be read is in the report's"
                "`invalid` (`invalid_request`); options: `priority`, `delayMs`, `force`.";
            lease "lease" (options) "options?: LeaseOptions" "Promise<Lease[]>"
                "Lease up to `max` items (default 1), waiting up to `waitMs` (default 5000) when none is"
                "ready; resolves with `[]` after that.";
            ack "ack" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: AckOptions" "Promise<T extends Lease[] ? boolean[] : boolean>"
                "Ack a lease (or an array, in one round trip): `true`, or `false` when the lease was no"
                "longer live (nothing changed). `revisitAfterMs` queues the URL again that much later (a"
                "recrawl; 0: never; absent: the queue's option).";
            ack_and_lease "ackAndLease" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: LeaseOptions" "Promise<AckAndLease<T extends Lease[] ? boolean[] : boolean>>"
                "Ack a lease (or an array) and lease up to `max` more items in one call (one round"
                "trip): resolves with `{ acked, leases }`, `acked` as `ack` resolves, `leases` as"
                "`lease` does (waiting up to `waitMs`, default 5000, when none is ready).";
            ack_with_links "ackWithLinks" (lease, links, options) "lease: Lease, links: Array<string | SeedItem>, options?: SeedOptions" "Promise<AckWithLinks>"
                "Answer a fetched page and seed the links it found, in one round trip: the links are"
                "seeded as `seed` seeds them (with `options`), then the lease is acked as `ack` acks it."
                "Resolves with `{ acked, links }`: `acked` false when the lease was not live any more"
                "(its links are seeded all the same), `links` the links' seed report.";
            ack_with_requests "ackWithRequests" (lease, requests, options) "lease: Lease, requests: CrawlRequestInput[], options?: SeedOptions" "Promise<AckWithLinks>"
                "`ackWithLinks` for crawl requests (as `seedRequests` takes them): the page's lease acked"
                "and the requests found on it seeded, in one round trip. Resolves with `{ acked, links }`"
                "as `ackWithLinks` does.";
            ack_with_links_and_lease "ackWithLinksAndLease" (lease, links, options) "lease: Lease, links: Array<string | SeedItem>, options?: SeedOptions & LeaseOptions" "Promise<AckWithLinksAndLease>"
                "`ackWithLinks`, then lease up to `max` more items in the same call (one round trip per"
                "page): resolves with `{ acked, links, leases }`, `leases` as `lease` resolves (waiting"
                "up to `waitMs`, default 5000, when none is ready; the lease runs whether or not `lease`"
                "was still live). `options` takes the seed options for the links and `max`, `waitMs`,"
                "`ttlMs` for the lease.";
            nack "nack" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: NackOptions" "Promise<T extends Lease[] ? NackOutcome[] : NackOutcome>"
                "Fail a lease (or an array): `'retried'`, `'dead'` or `'lost'`.";
            extend "extend" <"T extends Lease | Lease[]"> (lease, ttlMs) "lease: T, ttlMs: number" "Promise<T extends Lease[] ? Array<number | null> : number>"
                "Push a lease's deadline to now + `ttlMs`. One lease: the new `expiresAt`, or a"
                "rejection with `ERR_CRAWLQ_LEASE_LOST`. An array: one `expiresAt` or `null` per lease.";
            release "release" <"T extends Lease | Lease[]"> (lease, options) "lease: T, options?: ReleaseOptions" "Promise<T extends Lease[] ? boolean[] : boolean>"
                "Give a lease (or an array) back: front of its lane, attempt not counted; a `payload`"
                "option replaces the item's stored payload.";
            reclaim "reclaim" (options) "options?: { limit?: number }" "Promise<ReclaimReport>"
                "Recover up to `limit` (default 1000) expired leases now; lease calls also do this.";
            stats "stats" () "" "Promise<Stats>"
                "Depth and counters, exact and O(1).";
            dead "dead" (options) "options?: { limit?: number; offset?: number }" "Promise<DeadLetter[]>"
                "A page of dead letters, oldest first.";
            requeue_dead "requeueDead" (ids) "ids?: string[]" "Promise<number>"
                "Queue dead letters again (the given ids, or all); resolves with how many.";
            purge_dead "purgeDead" (ids) "ids?: string[]" "Promise<number>"
                "Delete the dead letters with these ids, or every one (they stay seen), in calls of"
                "at most 500; resolves with how many were deleted.";
            is_finished "isFinished" () "" "Promise<boolean>"
                "Resolves with true when nothing is queued or leased anywhere in the queue: the crawl"
                "is over for every worker (done and dead items do not count).";
            extend_held "extendHeld" () "" "Promise<number>"
                "Extend every lease this queue handed out and that was not answered yet, each to its"
                "lease time (what `extendEveryMs` does from a timer); resolves with how many.";
            release_held "releaseHeld" () "" "Promise<number>"
                "Release every lease this queue handed out and that was not answered yet (a worker"
                "stopping: SIGTERM), so other workers take the items at once; resolves with how many.";
            seen_cache_stats "seenCacheStats" () "" "Promise<SeenCacheStats>"
                "The known-seen cache's counters (option `seenCache`): `{ entries, hits, misses,"
                "resent, resets }` (hits: links answered from it; misses: links sent).";
            set_host_delay "setHostDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's politeness delay in ms for every worker (`null`: back to the default).";
            set_host_crawl_delay "setHostCrawlDelay" (host, delayMs) "host: string, delayMs: number | null" "Promise<HostInfo>"
                "Set a host's delay from its robots.txt Crawl-delay in ms (`null`: it has none),"
                "unless an operator set one (`setHostDelay`); capped by `crawlDelayMaxMs`.";
            set_host_in_flight "setHostInFlight" (host, limit) "host: string, limit: number | null" "Promise<HostInfo>"
                "Set the most items of a host leased at once, across every worker (`0`: no limit"
                "whatever `hostInFlight`; `null`: back to it).";
            set_host_delay_after "setHostDelayAfter" (host, after, factor) "host: string, after: 'lease' | 'answer' | null, factor?: number | null" "Promise<HostInfo>"
                "Set when a host's delay is counted from, for every worker: `'lease'` or `'answer'`"
                "(with an optional `factor`: wait factor x the fetch time when longer); `null`: back"
                "to `hostDelayAfter` / `hostDelayFactor`. Applies to the items leased from then on.";
            wait_host_turn "waitHostTurn" (url, options) "url: string, options?: HostTurnOptions" "Promise<boolean>"
                "Wait for a turn of the host of `url` for a request the frontier does not lease (a"
                "redirect the HTTP client follows while fetching a lease): spaced from the host's"
                "leases and turns by its delay, across every worker; held while the host is at its"
                "in-flight limit (except for `lease`'s own host) or paused. Resolves `true` when the"
                "request may start now, `false` when its turn would come after `timeoutMs` (default"
                "30000).";
            set_host_budget "setHostBudget" (host, urls) "host: string, urls: number | null" "Promise<HostInfo>"
                "Set the most new URLs a host may add (`null`: back to the queue's default). Seeds of"
                "new URLs past it are reported in the seed report's `invalid` with code"
                "`budget_exhausted`.";
            set_default_host_budget "setDefaultHostBudget" (urls) "urls: number | null" "Promise<void>"
                "Set the budget of every host without its own (`null`: no default).";
            default_host_budget "defaultHostBudget" () "" "Promise<number | null>"
                "The queue's default host budget, or `null`.";
            pause "pause" (durationMs) "durationMs?: number | null" "Promise<boolean>"
                "Pause the whole queue for every worker: lease calls hand out nothing (blocking ones"
                "keep waiting) for `durationMs` (the Redis clock) or, without it, until `resume`."
                "Resolves with whether it was paused already.";
            resume "resume" () "" "Promise<boolean>"
                "Let a paused queue lease again (blocked lease calls wake); resolves with whether it"
                "was paused.";
            is_paused "isPaused" () "" "Promise<boolean>"
                "Whether the queue is paused.";
            pause_host "pauseHost" (host, durationMs) "host: string, durationMs?: number | null" "Promise<HostInfo>"
                "Pause a host for every worker: no lease takes its items for `durationMs` (the Redis"
                "clock) or, without it (or `null`), until `resumeHost`.";
            resume_host "resumeHost" (host) "host: string" "Promise<HostInfo>"
                "End a host's pause (what is left of its politeness delay still applies); blocked"
                "lease calls wake.";
            host_info "hostInfo" (host) "host: string" "Promise<HostInfo>"
                "Politeness state of a host.";
            list_hosts "listHosts" (options) "options?: { cursor?: string | null; limit?: number }" "Promise<HostPage>"
                "A page of the hosts holding items (queued, leased or dead), the most items first,"
                "with their ready, delayed, leased and dead counts. Pass the page's `cursor` for the"
                "next one (`null` after the last). Each call is bounded (`limit` at most 1000,"
                "default 100).";
            delete_host "deleteHost" (host, options) "host: string, options?: { forgetSeen?: boolean }" "Promise<HostDeletion>"
                "Delete a host: its ready, delayed, leased and dead items and its settings (delay,"
                "pause, budget). Its leases answer lost. Its URLs stay seen unless `forgetSeen` (then"
                "the removed items can be seeded again). Safe while workers run.";
            peek "peek" (options) "options?: { limit?: number }" "Promise<QueuedItem[]>"
                "The next items lease would take (one per leasable host), without leasing them.";
            peek_host "peekHost" (host, options) "host: string, options?: { limit?: number, offset?: number }" "Promise<QueuedItem[]>"
                "One host's ready items in the order its leases take them, from `offset` on (paused"
                "or held or not; delayed items are not listed; at most 250 a call), without leasing"
                "them.";
        }
    };
}

/// The list of the package's functions (beside `Queue`), handed to the macro `$expand` of a
/// JavaScript package, rows as in [`js_queue_methods!`](crate::js_queue_methods); an argument
/// named `config` holds queue options (a value JSON cannot hold in it is a configuration
/// error). Their bodies are [`call_function`].
#[doc(hidden)]
#[macro_export]
macro_rules! js_functions {
    ($expand:ident) => {
        $expand! {
            shard_of "shardOf" (input, shards) "input: string, shards: number" "number"
                "The shard an input (URL or host) belongs to in a queue of `shards` shards (1..1024).";
            normalize "normalize" (input) "input: string" "Normalized"
                "The canonical form crawlq gives an input: `{ kind, canonical, host, fingerprint }`. Throws"
                "an `Error` with code `ERR_CRAWLQ_INVALID_ITEM` (and `reason`) for an input it would refuse.";
            request_of "requestOf" (lease) "lease: Lease" "CrawlRequest"
                "The crawl request of a lease (docs/PROTOCOL.md section 10): `{ url, method, headers, body"
                "(a Buffer or null), userData, label, depth, retries, foundOn, frameworks }`. An item seeded"
                "through the plain API is a GET of its URL with its payload as `userData`. Throws an `Error`"
                "with code `ERR_CRAWLQ_PROTOCOL` for a host item or a request this version cannot read"
                "(dead-letter it as `undecodable: ...`).";
            request_payload "requestPayload" (request) "request: CrawlRequestInput" "Record<string, unknown>"
                "The payload a crawl request (an object as `requestOf` returns it) is stored as: what a"
                "nack or release stores to keep an updated request (its retries, its framework's fields).";
            request_update "requestUpdate" (lease, changes) "lease: Lease, changes?: Partial<CrawlRequestInput>" "Record<string, unknown>"
                "The payload that stores a leased crawl request again with `changes` (`requestOf`'s fields;"
                "`frameworks` changes replace that framework's namespace only), read from the item as"
                "stored: what a retry's nack or a release stores.";
            default_options "defaultOptions" () "" "{ [K in Exclude<keyof QueueOptions, 'fixedClock'>]-?: QueueOptions[K] | null }"
                "The default of every queue option (milliseconds for durations; `null`: unset), from the"
                "core's option table: what framework adapters read instead of defaults of their own.";
            framework_options "frameworkOptions" (config) "options?: QueueOptions" "QueueOptions"
                "The options a framework adapter opens its queue with: `options`, checked, with"
                "`extendEveryMs` a third of `leaseTtlMs` unless given.";
        }
    };
}

/// The body of every function of [`js_functions!`](crate::js_functions): `name` (its
/// JavaScript name) with `args` (JSON, in the list's order; absent ones null).
///
/// ```
/// use crawlq::binding::js::call_function;
/// use serde_json::json;
/// assert_eq!(call_function("shardOf", &[json!("a.com"), json!(1)]).unwrap(), json!(0));
/// assert!(call_function("normalize", &[json!(7)]).is_err());
/// ```
pub fn call_function(name: &str, args: &[Value]) -> std::result::Result<Value, ArgError> {
    let camel = Style::Camel;
    let a = |i: usize| args.get(i).unwrap_or(&Value::Null);
    let string = |i: usize, name: &str| match a(i) {
        Value::String(s) => Ok(s.as_str()),
        other => Err(ArgError::Type(format!(
            "{name} must be a string, got {}",
            j::json_kind(other)
        ))),
    };
    let lease_url = || a(0).get("url").and_then(Value::as_str);
    Ok(match name {
        "shardOf" => {
            let input = string(0, "input")?;
            let shards = a(1).as_f64().ok_or_else(|| {
                ArgError::Type(format!(
                    "shards must be a number, got {}",
                    j::json_kind(a(1))
                ))
            })?;
            json!(j::shard_of_input(input, shards as i64)?)
        }
        "normalize" => j::normalized_to_json(string(0, "input")?)?,
        "requestOf" => j::request_of_item(lease_url(), a(0).get("payload"), camel)?,
        "requestPayload" => j::request_from_json(a(0), camel)?.payload(),
        "requestUpdate" => j::request_update(lease_url(), a(0).get("payload"), a(1), camel)?,
        "defaultOptions" => Value::Object(crate::Config::default().to_options(camel)),
        "frameworkOptions" => j::framework_options_json(a(0), camel)?,
        other => {
            return Err(ArgError::Core(Error::InvalidArgument(format!(
                "no function {other:?}"
            ))));
        }
    })
}

/// Why a method's arguments were refused before any I/O: a value of the wrong type (a
/// `TypeError` in JavaScript) or a value the core refuses (its error, with its code).
#[derive(Debug)]
pub enum ArgError {
    /// A value of the wrong type; the message names the argument.
    Type(String),
    /// A value of the right type that the core refuses.
    Core(Error),
}

impl From<Error> for ArgError {
    fn from(e: Error) -> ArgError {
        ArgError::Core(e)
    }
}

/// An argument as a package read it.
#[derive(Debug)]
pub enum JsArg {
    /// Any argument but `lease`, as JSON (`undefined`: null).
    Json(Value),
    /// The `lease` argument: one lease (`single`) or an array of them.
    Leases {
        /// The leases, in order.
        handles: Vec<LeaseHandle>,
        /// Whether one lease was given rather than an array.
        single: bool,
    },
}

/// What a method resolves with.
#[derive(Debug)]
pub enum JsReply {
    /// A JSON value (camelCase, ms).
    Json(Value),
    /// `undefined` (a `Promise<void>`).
    Undefined,
    /// Leases (`lease`).
    Leases(Vec<Lease>),
    /// An object with `leases` besides the fields of `head` (`ackAndLease`,
    /// `ackWithLinksAndLease`).
    WithLeases {
        /// The other fields of the object.
        head: Map<String, Value>,
        /// The value of its `leases`.
        leases: Vec<Lease>,
    },
}

impl JsReply {
    /// The reply as one JSON value, leases included (what the WebAssembly build resolves with).
    pub fn into_json(self) -> Option<Value> {
        let leases = |l: Vec<Lease>| {
            Value::Array(
                l.iter()
                    .map(|l| j::lease_to_json(l, Style::Camel))
                    .collect(),
            )
        };
        match self {
            JsReply::Json(v) => Some(v),
            JsReply::Undefined => None,
            JsReply::Leases(l) => Some(leases(l)),
            JsReply::WithLeases {
                mut head,
                leases: l,
            } => {
                head.insert("leases".into(), leases(l));
                Some(Value::Object(head))
            }
        }
    }
}

/// A method with its arguments checked: what [`JsCall::run`] sends.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum JsCall {
    Seed {
        items: Vec<SeedItem>,
        opts: SeedOptions,
    },
    Lease {
        opts: LeaseOptions,
    },
    Answer {
        answer: Answer,
        handles: Vec<LeaseHandle>,
        single: bool,
    },
    AckAndLease {
        handles: Vec<LeaseHandle>,
        single: bool,
        opts: LeaseOptions,
    },
    AckWithLinks {
        lease: LeaseHandle,
        links: Vec<SeedItem>,
        opts: SeedOptions,
    },
    AckWithLinksAndLease {
        lease: LeaseHandle,
        links: Vec<SeedItem>,
        opts: SeedOptions,
        next: LeaseOptions,
    },
    Reclaim {
        limit: usize,
    },
    Stats,
    Dead {
        limit: usize,
        offset: usize,
    },
    RequeueDead {
        ids: Option<Vec<String>>,
    },
    PurgeDead {
        ids: Option<Vec<String>>,
    },
    IsFinished,
    ExtendHeld,
    ReleaseHeld,
    SeenCacheStats,
    SetHostDelay {
        host: String,
        delay: Option<Duration>,
    },
    SetHostCrawlDelay {
        host: String,
        delay: Option<Duration>,
    },
    SetHostInFlight {
        host: String,
        limit: Option<u64>,
    },
    SetHostDelayAfter {
        host: String,
        pacing: Option<HostPacing>,
    },
    WaitHostTurn {
        url: String,
        lease: Option<LeaseHandle>,
        timeout: Duration,
    },
    SetHostBudget {
        host: String,
        urls: Option<u64>,
    },
    SetDefaultHostBudget {
        urls: Option<u64>,
    },
    DefaultHostBudget,
    Pause {
        duration: Option<Duration>,
    },
    Resume,
    IsPaused,
    PauseHost {
        host: String,
        duration: Option<Duration>,
    },
    ResumeHost {
        host: String,
    },
    HostInfo {
        host: String,
    },
    ListHosts {
        cursor: Option<String>,
        limit: usize,
    },
    DeleteHost {
        host: String,
        forget_seen: bool,
    },
    Peek {
        limit: usize,
    },
    PeekHost {
        host: String,
        limit: usize,
        offset: usize,
    },
}

/// The arguments of one call, taken by position.
struct Args(Vec<JsArg>);

impl Args {
    /// The JSON argument at `i` (absent: null).
    fn json(&self, i: usize) -> &Value {
        match self.0.get(i) {
            Some(JsArg::Json(v)) => v,
            _ => &Value::Null,
        }
    }

    /// A string argument, or a type error naming it.
    fn string(&self, i: usize, name: &str) -> std::result::Result<String, ArgError> {
        match self.json(i) {
            Value::String(s) => Ok(s.clone()),
            other => Err(ArgError::Type(format!(
                "{name} must be a string, got {}",
                j::json_kind(other)
            ))),
        }
    }

    /// The leases at `i` (the list names that argument `lease`).
    fn leases(&mut self, i: usize) -> std::result::Result<(Vec<LeaseHandle>, bool), ArgError> {
        match self.0.get_mut(i) {
            Some(JsArg::Leases { handles, single }) => Ok((std::mem::take(handles), *single)),
            _ => Err(ArgError::Core(Error::InvalidArgument(format!(
                "argument {i} must be leases"
            )))),
        }
    }

    /// One lease at `i` (an array is a type error).
    fn lease(&mut self, i: usize) -> std::result::Result<LeaseHandle, ArgError> {
        match self.leases(i)? {
            (mut handles, true) if handles.len() == 1 => Ok(handles.remove(0)),
            _ => Err(ArgError::Type("lease must be one Lease".into())),
        }
    }

    /// Seed items at `i` (a value that is not a list of items is a type error), with the seed
    /// options at `options` (none: the defaults).
    fn seed(
        &self,
        i: usize,
        options: Option<usize>,
    ) -> std::result::Result<(Vec<SeedItem>, SeedOptions), ArgError> {
        if let Some(problem) = j::seed_items_type_error(self.json(i)) {
            return Err(ArgError::Type(problem));
        }
        let opts = j::seed_options_from_json(
            options.map_or(&Value::Null, |o| self.json(o)),
            Style::Camel,
        )?;
        Ok((j::seed_items_from_json(self.json(i), Style::Camel)?, opts))
    }

    /// Crawl requests at `i` as seed items, with the seed options at `i + 1`.
    fn requests(
        &self,
        i: usize,
        ops: &Ops,
    ) -> std::result::Result<(Vec<SeedItem>, SeedOptions), ArgError> {
        let requests = self.json(i);
        if !requests.is_array() {
            return Err(ArgError::Type(
                "requests must be an array of request objects".into(),
            ));
        }
        let opts = j::seed_options_from_json(self.json(i + 1), Style::Camel)?;
        Ok((j::request_seed_items(requests, Style::Camel, ops)?, opts))
    }

    fn ids(&self, i: usize) -> std::result::Result<Option<Vec<String>>, ArgError> {
        j::ids_from_json(self.json(i)).map_err(ArgError::Type)
    }
}

impl JsCall {
    /// The call `method` (its JavaScript name) with `args` (in the list's order; absent ones
    /// null), checked; `ops` are the queue's (crawl requests are keyed by them). An unknown
    /// method name is an argument error.
    pub fn prepare(
        method: &str,
        args: Vec<JsArg>,
        ops: &Ops,
    ) -> std::result::Result<JsCall, ArgError> {
        let camel = Style::Camel;
        let mut a = Args(args);
        let ms = |a: &Args, i: usize, name: &str| j::optional_duration_arg(a.json(i), name, camel);
        let count = |a: &Args, i: usize, name: &str| j::optional_count_arg(a.json(i), name);
        let answer =
            |a: &mut Args, answer: Result<Answer>| -> std::result::Result<JsCall, ArgError> {
                let (handles, single) = a.leases(0)?;
                Ok(JsCall::Answer {
                    answer: answer?,
                    handles,
                    single,
                })
            };
        Ok(match method {
            "seed" => {
                let (items, opts) = a.seed(0, Some(1))?;
                JsCall::Seed { items, opts }
            }
            "seedRequests" => {
                let (items, opts) = a.requests(0, ops)?;
                JsCall::Seed { items, opts }
            }
            "lease" => JsCall::Lease {
                opts: j::lease_options_from_json(a.json(0), camel)?,
            },
            "ack" => {
                let ack = j::ack_answer_from_json(a.json(1), camel);
                answer(&mut a, ack)?
            }
            "nack" => {
                let nack = j::nack_options_from_json(a.json(1), camel).map(Answer::Nack);
                answer(&mut a, nack)?
            }
            "extend" => {
                let ttl = j::duration_arg(a.json(1), "ttlMs", camel).map(Answer::Extend);
                answer(&mut a, ttl)?
            }
            "release" => {
                let release = j::release_options_from_json(a.json(1), camel).map(Answer::Release);
                answer(&mut a, release)?
            }
            "ackAndLease" => {
                let (handles, single) = a.leases(0)?;
                let opts = j::lease_options_from_json(a.json(1), camel)?;
                JsCall::AckAndLease {
                    handles,
                    single,
                    opts,
                }
            }
            "ackWithLinks" => {
                let lease = a.lease(0)?;
                let (links, opts) = a.seed(1, Some(2))?;
                JsCall::AckWithLinks { lease, links, opts }
            }
            "ackWithRequests" => {
                let lease = a.lease(0)?;
                let (links, opts) = a.requests(1, ops)?;
                JsCall::AckWithLinks { lease, links, opts }
            }
            "ackWithLinksAndLease" => {
                let lease = a.lease(0)?;
                let (links, _) = a.seed(1, None)?;
                let (opts, next) = j::seed_and_lease_options_from_json(a.json(2), camel)?;
                JsCall::AckWithLinksAndLease {
                    lease,
                    links,
                    opts,
                    next,
                }
            }
            "reclaim" => {
                let [limit] =
                    j::counts_from_json(a.json(0), &[("limit", defaults::RECLAIM_LIMIT)])?;
                JsCall::Reclaim { limit }
            }
            "stats" => JsCall::Stats,
            "dead" => {
                let [limit, offset] = j::counts_from_json(
                    a.json(0),
                    &[("limit", defaults::DEAD_PAGE), ("offset", 0)],
                )?;
                JsCall::Dead { limit, offset }
            }
            "requeueDead" => JsCall::RequeueDead { ids: a.ids(0)? },
            "purgeDead" => JsCall::PurgeDead { ids: a.ids(0)? },
            "isFinished" => JsCall::IsFinished,
            "extendHeld" => JsCall::ExtendHeld,
            "releaseHeld" => JsCall::ReleaseHeld,
            "seenCacheStats" => JsCall::SeenCacheStats,
            "setHostDelay" => JsCall::SetHostDelay {
                host: a.string(0, "host")?,
                delay: ms(&a, 1, "delayMs")?,
            },
            "setHostCrawlDelay" => JsCall::SetHostCrawlDelay {
                host: a.string(0, "host")?,
                delay: ms(&a, 1, "delayMs")?,
            },
            "setHostInFlight" => JsCall::SetHostInFlight {
                host: a.string(0, "host")?,
                limit: count(&a, 1, "limit")?,
            },
            "setHostDelayAfter" => JsCall::SetHostDelayAfter {
                host: a.string(0, "host")?,
                pacing: j::pacing_arg(a.json(1), a.json(2))?,
            },
            "waitHostTurn" => {
                let url = a.string(0, "url")?;
                let (lease, timeout) = j::host_turn_options_from_json(a.json(1), camel)?;
                JsCall::WaitHostTurn {
                    url,
                    lease,
                    timeout,
                }
            }
            "setHostBudget" => JsCall::SetHostBudget {
                host: a.string(0, "host")?,
                urls: count(&a, 1, "urls")?,
            },
            "setDefaultHostBudget" => JsCall::SetDefaultHostBudget {
                urls: count(&a, 0, "urls")?,
            },
            "defaultHostBudget" => JsCall::DefaultHostBudget,
            "pause" => JsCall::Pause {
                duration: ms(&a, 0, "durationMs")?,
            },
            "resume" => JsCall::Resume,
            "isPaused" => JsCall::IsPaused,
            "pauseHost" => JsCall::PauseHost {
                host: a.string(0, "host")?,
                duration: ms(&a, 1, "durationMs")?,
            },
            "resumeHost" => JsCall::ResumeHost {
                host: a.string(0, "host")?,
            },
            "hostInfo" => JsCall::HostInfo {
                host: a.string(0, "host")?,
            },
            "listHosts" => {
                let (cursor, limit) = j::host_page_args(a.json(0))?;
                JsCall::ListHosts { cursor, limit }
            }
            "deleteHost" => JsCall::DeleteHost {
                host: a.string(0, "host")?,
                forget_seen: j::delete_host_options(a.json(1), camel)?,
            },
            "peek" => {
                let [limit] = j::counts_from_json(a.json(0), &[("limit", defaults::PEEK_LIMIT)])?;
                JsCall::Peek { limit }
            }
            "peekHost" => {
                let host = a.string(0, "host")?;
                let [limit, offset] = j::counts_from_json(
                    a.json(1),
                    &[("limit", defaults::PEEK_LIMIT), ("offset", 0)],
                )?;
                JsCall::PeekHost {
                    host,
                    limit,
                    offset,
                }
            }
            other => {
                return Err(ArgError::Core(Error::InvalidArgument(format!(
                    "no queue method {other:?}"
                ))));
            }
        })
    }

    /// Run the call on `q`.
    pub async fn run<E: Executor>(self, q: &Queue<E>) -> Result<JsReply> {
        let camel = Style::Camel;
        let info = |h: crate::HostInfo| j::host_info_to_json(&h, camel);
        let page = |acked: bool, report: &crate::SeedReport| {
            let mut head = Map::new();
            head.insert("acked".into(), json!(acked));
            head.insert("links".into(), j::seed_report_to_json(report, camel));
            head
        };
        let json = match self {
            JsCall::Seed { items, opts } => {
                j::seed_report_to_json(&q.seed(&items, &opts).await?, camel)
            }
            JsCall::Lease { opts } => return Ok(JsReply::Leases(q.lease_with(&opts).await?)),
            JsCall::Answer {
                answer,
                handles,
                single,
            } => q.answer(&answer, &handles, single).await?.to_json(camel),
            JsCall::AckAndLease {
                handles,
                single,
                opts,
            } => {
                let (answers, leases) = q
                    .ack_and_lease_answers(&handles, single, &opts, || false)
                    .await?;
                let mut head = Map::new();
                head.insert("acked".into(), answers.to_json(camel));
                return Ok(JsReply::WithLeases { head, leases });
            }
            JsCall::AckWithLinks { lease, links, opts } => {
                let (acked, report) = q.ack_with_links(&lease, &links, &opts).await?;
                Value::Object(page(acked, &report))
            }
            JsCall::AckWithLinksAndLease {
                lease,
                links,
                opts,
                next,
            } => {
                let (acked, report, leases) = q
                    .ack_with_links_and_lease(&lease, &links, &opts, &next)
                    .await?;
                return Ok(JsReply::WithLeases {
                    head: page(acked, &report),
                    leases,
                });
            }
            JsCall::Reclaim { limit } => j::reclaim_to_json(&q.reclaim(limit).await?, camel),
            JsCall::Stats => j::stats_to_json(&q.stats().await?, camel),
            JsCall::Dead { limit, offset } => {
                let page = q.dead(limit, offset).await?;
                Value::Array(
                    page.items
                        .iter()
                        .map(|d| j::dead_letter_to_json(d, camel))
                        .collect(),
                )
            }
            JsCall::RequeueDead { ids } => json!(q.requeue_dead(ids.as_deref()).await?),
            JsCall::PurgeDead { ids } => json!(calls::purge_dead(q, ids.as_deref()).await?),
            JsCall::IsFinished => json!(q.is_finished().await?),
            JsCall::ExtendHeld => json!(q.extend_held().await?),
            JsCall::ReleaseHeld => json!(q.release_held().await?),
            JsCall::SeenCacheStats => j::seen_cache_stats_to_json(&q.seen_cache_stats(), camel),
            JsCall::SetHostDelay { host, delay } => info(q.set_host_delay(&host, delay).await?),
            JsCall::SetHostCrawlDelay { host, delay } => {
                info(q.set_host_crawl_delay(&host, delay).await?)
            }
            JsCall::SetHostInFlight { host, limit } => {
                info(q.set_host_in_flight(&host, limit).await?)
            }
            JsCall::SetHostDelayAfter { host, pacing } => {
                info(q.set_host_delay_after(&host, pacing).await?)
            }
            JsCall::WaitHostTurn {
                url,
                lease,
                timeout,
            } => {
                json!(q.wait_host_turn(&url, lease.as_ref(), timeout).await?)
            }
            JsCall::SetHostBudget { host, urls } => info(q.set_host_budget(&host, urls).await?),
            JsCall::SetDefaultHostBudget { urls } => {
                q.set_default_host_budget(urls).await?;
                return Ok(JsReply::Undefined);
            }
            JsCall::DefaultHostBudget => json!(q.default_host_budget().await?),
            JsCall::Pause { duration } => json!(match duration {
                Some(d) => q.pause_for(d).await?,
                None => q.pause().await?,
            }),
            JsCall::Resume => json!(q.resume().await?),
            JsCall::IsPaused => json!(q.is_paused().await?),
            JsCall::PauseHost { host, duration } => info(q.pause_host(&host, duration).await?),
            JsCall::ResumeHost { host } => info(q.resume_host(&host).await?),
            JsCall::HostInfo { host } => info(q.host_info(&host).await?),
            JsCall::ListHosts { cursor, limit } => {
                j::host_page_to_json(&q.list_hosts(cursor.as_deref(), limit).await?, camel)
            }
            JsCall::DeleteHost { host, forget_seen } => {
                j::host_deletion_to_json(&q.delete_host(&host, forget_seen).await?, camel)
            }
            JsCall::Peek { limit } => j::stored_items_to_json(&q.peek(limit).await?, camel),
            JsCall::PeekHost {
                host,
                limit,
                offset,
            } => j::stored_items_to_json(&q.peek_host(&host, limit, offset).await?, camel),
        };
        Ok(JsReply::Json(json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! rows {
        ($( $name:ident $js:tt $(<$gen:tt>)? ($($arg:ident),*) $ts_args:tt $ts_ret:tt $($doc:literal)*; )*) => {
            [$(($js, vec![$(stringify!($arg)),*])),*]
        };
    }

    #[test]
    fn every_listed_method_has_a_call_and_takes_its_listed_arguments() {
        let ops = Ops::new("q", crate::Config::default()).unwrap();
        let lease = LeaseHandle {
            token: 1,
            host: "a.com".into(),
            id: "1".into(),
            url: None,
            key: None,
        };
        for (js, names) in js_queue_methods!(rows) {
            let args = names
                .iter()
                .map(|&n| match n {
                    "lease" => JsArg::Leases {
                        handles: vec![lease.clone()],
                        single: true,
                    },
                    // what a call needs to be prepared with every other argument absent
                    "ttlMs" => JsArg::Json(json!(1000)),
                    "host" | "url" => JsArg::Json(json!("a.com")),
                    "items" | "links" | "requests" => JsArg::Json(json!([])),
                    _ => JsArg::Json(Value::Null),
                })
                .collect();
            if let Err(e) = JsCall::prepare(js, args, &ops) {
                panic!("{js} is listed, and refused its listed arguments: {e:?}");
            }
        }
        assert!(matches!(
            JsCall::prepare("noSuchMethod", vec![], &ops),
            Err(ArgError::Core(Error::InvalidArgument(_)))
        ));
    }

    #[test]
    fn every_listed_function_has_a_body() {
        for (js, names) in js_functions!(rows) {
            let args: Vec<Value> = names
                .iter()
                .map(|&n| match n {
                    "input" => json!("a.com"),
                    "shards" => json!(1),
                    "lease" => json!({"url": "http://a.com/", "payload": null}),
                    "request" => json!({"url": "http://a.com/"}),
                    _ => Value::Null,
                })
                .collect();
            if let Err(e) = call_function(js, &args) {
                panic!("{js} is listed, and refused its listed arguments: {e:?}");
            }
        }
        assert!(matches!(
            call_function("noSuchFunction", &[]),
            Err(ArgError::Core(_))
        ));
    }

    #[test]
    fn a_lease_argument_that_is_an_array_where_one_lease_is_taken_is_a_type_error() {
        let ops = Ops::new("q", crate::Config::default()).unwrap();
        let args = vec![
            JsArg::Leases {
                handles: vec![],
                single: false,
            },
            JsArg::Json(json!([])),
        ];
        assert!(
            matches!(JsCall::prepare("ackWithLinks", args, &ops), Err(ArgError::Type(m)) if m == "lease must be one Lease")
        );
    }
}
