//! `extension=crawlq`: the PHP extension of the crawlq core (ext-php-rs), namespace `Crawlq`.
//! PHP values are converted to JSON and back, errors become `Crawlq\Exception` subclasses;
//! every queue operation is the core's.

mod convert;
mod errors;
mod runtime;

use convert::{Text, from_json, to_json};
use crawlq::config::number_value;
use crawlq::{Answer, LeaseHandle, RedisExecutor, Style, binding::json};
use errors::{throw, type_error};
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendCallable, ZendClassObject, ZendHashTable, Zval};
use ext_php_rs::zend::ce;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type CoreQueue = crawlq::Queue<Arc<RedisExecutor>>;

/// How a `Crawlq\Queue` connects, and the queue of the current process: a forked child
/// (PHP-FPM workers, pcntl_fork) gets its own connection instead of the parent's.
struct Handle {
    url: String,
    name: String,
    config: crawlq::Config,
    current: crawlq::binding::process::ProcessQueue<Arc<RedisExecutor>>,
    fixed_clock: Mutex<Option<i64>>,
}

impl Handle {
    fn queue(&self) -> PhpResult<Arc<CoreQueue>> {
        if let Some(q) = self.current.current() {
            return Ok(q);
        }
        let exec = runtime::connection(&self.url, &self.config).map_err(throw)?;
        let q =
            crawlq::Queue::with_executor(exec, &self.name, self.config.clone()).map_err(throw)?;
        q.set_fixed_clock(*self.fixed_clock.lock().unwrap_or_else(|e| e.into_inner()));
        // extend_every runs on a thread of its own: this process's runtime only runs during a call
        Ok(self.current.install(q, &self.url))
    }
}

/// The arguments of lease calls (seconds), checked by the core.
fn lease_options(max: i64, wait: f64, ttl: Option<f64>) -> PhpResult<crawlq::LeaseOptions> {
    json::lease_options_from_json(
        &json!({"max": max, "wait": number_value(wait), "ttl": ttl.map(number_value)}),
        Style::Snake,
    )
    .map_err(throw)
}

fn zval_of(value: &Value) -> Zval {
    from_json(value)
}

fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// An optional PHP options array as a JSON object (`null` when absent).
/// A value that is not JSON: a number JSON cannot hold is the error `bad_value` makes (an
/// argument error), a value of another type a TypeError.
fn not_json(e: convert::NotJson, bad_value: fn(String) -> crawlq::Error) -> PhpException {
    if e.bad_value {
        throw(bad_value(e.message))
    } else {
        type_error(e.message)
    }
}

fn options_json(options: Option<&Zval>, what: &str) -> PhpResult<Value> {
    match options {
        None => Ok(Value::Null),
        Some(z) if z.is_null() => Ok(Value::Null),
        Some(z) if z.is_array() => {
            let v = crate::convert::options_to_json(z, what)
                .map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?;
            // an empty PHP array is a list in JSON terms; as options it means "none"
            Ok(if v.as_array().is_some_and(Vec::is_empty) {
                Value::Null
            } else {
                v
            })
        }
        Some(_) => Err(type_error(format!("{what} must be an array"))),
    }
}

/// A whole-number argument from PHP (a budget, a limit, a cap, a weight): negative is refused
/// here, the operation checks the rest of its range.
fn whole_number(n: i64, name: &str, from: u64) -> PhpResult<u64> {
    u64::try_from(n).map_err(|_| {
        throw(crawlq::Error::InvalidArgument(format!(
            "{name} must be a whole number from {from} or null, got {n}"
        )))
    })
}

fn duration(value: f64, what: &str) -> PhpResult<Duration> {
    crawlq::config::duration_from_number(value, Style::Snake).ok_or_else(|| {
        throw(crawlq::Error::InvalidArgument(format!(
            "{what} must be a non-negative number of seconds, got {value}"
        )))
    })
}

/// A leased item. Its properties are read-only.
#[php_class]
#[php(name = "Crawlq\\Lease")]
#[php(flags = ClassFlags::Final)]
pub struct Lease {
    core: crawlq::Lease,
    expires_at_ms: AtomicI64,
}

#[php_impl]
impl Lease {
    /// Queue-assigned id of the item.
    #[php(getter)]
    pub fn id(&self) -> String {
        self.core.id.clone()
    }
    /// The canonical URL, or null for a host item.
    #[php(getter)]
    pub fn url(&self) -> Option<String> {
        self.core.url.clone()
    }
    /// The host key the item is scheduled under.
    #[php(getter)]
    pub fn host(&self) -> String {
        self.core.host.clone()
    }
    /// The de-duplication key the item was seeded with, or null.
    #[php(getter)]
    pub fn key(&self) -> Option<String> {
        self.core.key.clone()
    }
    /// The JSON payload as PHP values (arrays and scalars), or null.
    #[php(getter)]
    pub fn payload(&self) -> Zval {
        zval_of(self.core.payload.as_ref().unwrap_or(&Value::Null))
    }
    #[php(getter)]
    pub fn priority(&self) -> i64 {
        self.core.priority.into()
    }
    /// 1 on the first delivery, 2 on the first retry, ...
    #[php(getter)]
    pub fn attempt(&self) -> i64 {
        self.core.attempt.into()
    }
    /// Fencing token of this lease.
    #[php(getter)]
    pub fn token(&self) -> i64 {
        self.core.token as i64
    }
    /// Server time of the lease, seconds since the epoch.
    #[php(getter)]
    pub fn leased_at(&self) -> f64 {
        seconds(self.core.leased_at_ms)
    }
    /// When the lease may be reclaimed, seconds since the epoch.
    #[php(getter)]
    pub fn expires_at(&self) -> f64 {
        seconds(self.expires_at_ms.load(Ordering::Relaxed))
    }
    /// When the item was last queued, seconds since the epoch.
    #[php(getter)]
    pub fn enqueued_at(&self) -> f64 {
        seconds(self.core.enqueued_at_ms)
    }
    /// Why the previous attempt failed, if one did.
    #[php(getter)]
    pub fn last_error(&self) -> Option<String> {
        self.core.last_error.clone()
    }
    /// The named crawl the item was seeded into, or null (the default crawl).
    #[php(getter)]
    pub fn crawl(&self) -> Option<String> {
        self.core.crawl.clone()
    }
}

impl Lease {
    fn new(core: crawlq::Lease) -> Lease {
        Lease {
            expires_at_ms: AtomicI64::new(core.expires_at_ms),
            core,
        }
    }
}

/// What a seed call did.
#[php_class]
#[php(name = "Crawlq\\SeedReport")]
#[php(flags = ClassFlags::Final)]
pub struct SeedReport {
    report: crawlq::SeedReport,
}

#[php_impl]
impl SeedReport {
    /// Items queued (including ones queued again by force).
    #[php(getter)]
    pub fn added(&self) -> i64 {
        self.report.added as i64
    }
    /// Items not queued because they were seen before.
    #[php(getter)]
    pub fn duplicates(&self) -> i64 {
        self.report.duplicates as i64
    }
    /// Items refused: a list of ['index' => int, 'input' => string, 'code' => string, 'reason' => string].
    #[php(getter)]
    pub fn invalid(&self) -> Zval {
        zval_of(&json::seed_report_to_json(&self.report, Style::Snake)["invalid"])
    }
    /// One entry per seeded item, in order: the id it was queued under (the `id` of its
    /// lease), or null for a duplicate or an invalid item.
    #[php(getter)]
    pub fn ids(&self) -> Zval {
        zval_of(&serde_json::Value::from(self.report.ids.clone()))
    }
}

/// What the combined answers return: ['acked' => what the ack answered, 'links' =>
/// SeedReport when it seeded links, 'leases' => [Lease] when it leased the next items].
fn answer_table(
    acked: Zval,
    links: Option<crawlq::SeedReport>,
    leases: Option<Vec<crawlq::Lease>>,
) -> PhpResult<Zval> {
    let mut table = ZendHashTable::with_capacity(3);
    table.insert("acked", acked)?;
    if let Some(report) = links {
        table.insert("links", SeedReport { report })?;
    }
    if let Some(leases) = leases {
        table.insert(
            "leases",
            leases.into_iter().map(Lease::new).collect::<Vec<_>>(),
        )?;
    }
    let mut z = Zval::new();
    z.set_hashtable(table);
    Ok(z)
}

/// ['acked' => bool, 'links' => SeedReport] of an answer with links, and 'leases' when it
/// leased the next items.
fn acked_and_links(
    acked: bool,
    report: crawlq::SeedReport,
    leases: Option<Vec<crawlq::Lease>>,
) -> PhpResult<Zval> {
    let mut flag = Zval::new();
    flag.set_bool(acked);
    answer_table(flag, Some(report), leases)
}

/// The crawl requests and options of seedRequests() and ackWithRequests() (found on the page
/// at `page_url`) as seed items: a value that is not an array is a TypeError, bad options an
/// argument error.
fn requests_arg(
    queue: &CoreQueue,
    requests: &Zval,
    options: Option<&Zval>,
    page_url: Option<&str>,
) -> PhpResult<(Vec<crawlq::SeedItem>, crawlq::SeedOptions)> {
    let requests = request_list(requests)?;
    let opts = json::request_options_from_json(&options_json(options, "options")?, Style::Snake)
        .map_err(throw)?;
    let items = json::page_request_seed_items(&requests, Style::Snake, queue.ops(), page_url)
        .map_err(throw)?;
    Ok((items, opts))
}

/// The crawl requests argument as JSON: a value that is not an array is a TypeError.
fn request_list(requests: &Zval) -> PhpResult<Value> {
    let listed = traversed(requests)?;
    let requests = listed.as_ref().unwrap_or(requests);
    if !requests.is_array() {
        return Err(type_error(
            "requests must be an array or a Traversable of request arrays".into(),
        ));
    }
    let requests =
        to_json(requests, "requests").map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?;
    Ok(match requests {
        // an empty PHP array is a JSON list
        Value::Object(map) if map.is_empty() => Value::Array(Vec::new()),
        other => other,
    })
}

/// A Traversable's values as a list, as `iterator_to_array($items, false)` reads them (a
/// generator, an `ArrayIterator`, a Laravel `Collection`): PHP walks it and frees its
/// iterator; an exception it throws stays pending and reaches the caller unchanged, before
/// anything is sent. `None` for any other value.
fn traversed(items: &Zval) -> PhpResult<Option<Zval>> {
    if !items.is_traversable() {
        return Ok(None);
    }
    let to_array = ZendCallable::try_from_name("iterator_to_array")
        .map_err(|e| PhpException::from(format!("iterator_to_array: {e}")))?;
    let mut keep_keys = Zval::new();
    keep_keys.set_bool(false);
    Ok(Some(to_array.try_call(vec![items, &keep_keys])?))
}

/// Seed `items` on `queue`, its progress (how far it is after each round trip) going to
/// `progress` when given; an exception it throws stops the seed there.
fn seeded(
    queue: Arc<CoreQueue>,
    items: Vec<crawlq::SeedItem>,
    opts: crawlq::SeedOptions,
    progress: Option<ZendCallable>,
) -> PhpResult<SeedReport> {
    let to_zval = |p: &crawlq::SeedProgress| zval_of(&json::seed_progress_to_json(p, Style::Snake));
    let report = runtime::with_progress(progress.as_ref(), to_zval, |reporter| async move {
        queue
            .seed_with_progress(&items, &opts, |p| {
                let _ = reporter.unbounded_send(p);
            })
            .await
    })?;
    Ok(SeedReport { report })
}

/// The items and options of a seed (`seed`, `ackWithLinks`): a string or an array of items
/// (anything else, or items of the wrong type, a TypeError), bad items or options an
/// argument error.
fn seed_arg(
    items: &Zval,
    options: Option<&Zval>,
    name: &str,
) -> PhpResult<(Vec<crawlq::SeedItem>, crawlq::SeedOptions)> {
    let listed = traversed(items)?;
    let items = listed.as_ref().unwrap_or(items);
    let items = if items.is_string() || items.is_array() {
        to_json(items, name).map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?
    } else {
        return Err(type_error(format!(
            "{name} must be a string, an array or a Traversable"
        )));
    };
    if let Some(problem) = json::seed_items_type_error(&items, name, json::TypeWords::PHP) {
        return Err(type_error(problem));
    }
    let items = json::seed_items_from_json(&items, Style::Snake).map_err(throw)?;
    let opts = json::seed_options_from_json(&options_json(options, "options")?, Style::Snake)
        .map_err(throw)?;
    Ok((items, opts))
}

/// One `Crawlq\Lease` or an array of them, as given.
struct LeaseArg {
    handles: Vec<LeaseHandle>,
    leases: Vec<*const Lease>,
    single: bool,
}

fn lease_of(z: &Zval) -> Option<&Lease> {
    let object = z.object()?;
    ZendClassObject::<Lease>::from_zend_obj(object).map(|o| &**o)
}

impl LeaseArg {
    fn extract(z: &Zval) -> PhpResult<LeaseArg> {
        if let Some(one) = lease_of(z) {
            return Ok(LeaseArg {
                handles: vec![one.core.handle()],
                leases: vec![one as *const Lease],
                single: true,
            });
        }
        let Some(array) = z.array() else {
            return Err(type_error(
                "expected a Crawlq\\Lease or an array of them".into(),
            ));
        };
        let mut arg = LeaseArg {
            handles: Vec::with_capacity(array.len()),
            leases: Vec::with_capacity(array.len()),
            single: false,
        };
        for item in array.values() {
            let lease = lease_of(item)
                .ok_or_else(|| type_error("expected a Crawlq\\Lease or an array of them".into()))?;
            arg.handles.push(lease.core.handle());
            arg.leases.push(lease as *const Lease);
        }
        Ok(arg)
    }

    /// ack / nack / extend / release, answered by the core; an extend also moves the lease
    /// objects' expiresAt.
    fn answer(self, handle: &Handle, answer: crawlq::Result<Answer>) -> PhpResult<Zval> {
        let answer = answer.map_err(throw)?;
        let queue = handle.queue()?;
        let answers =
            runtime::block_on(queue.answer(&answer, &self.handles, self.single)).map_err(throw)?;
        for (lease, deadline) in self.leases.iter().zip(answers.deadlines().unwrap_or(&[])) {
            if let Some(d) = deadline {
                // SAFETY: the Lease objects are alive: the caller's arguments hold them.
                unsafe { &**lease }
                    .expires_at_ms
                    .store(*d, Ordering::Relaxed);
            }
        }
        Ok(zval_of(&answers.to_json(Style::Snake)))
    }
}

/// A crawl frontier in Redis.
#[php_class]
#[php(name = "Crawlq\\Queue")]
#[php(flags = ClassFlags::Final)]
pub struct Queue {
    handle: Arc<Handle>,
}

#[php_impl]
impl Queue {
    /// Open the queue `$name` on the Redis at `$url` (`redis://`, `rediss://`, `unix://`).
    /// Options (snake_case, seconds): lease_ttl, max_attempts, backoff, backoff_base,
    /// backoff_max, backoff_jitter, host_delay, host_key, key_prefix, connect_timeout,
    /// command_timeout, max_payload_bytes, seed_batch, reclaim_batch, adaptive_delay_step,
    /// adaptive_delay_max, tls_ca_file. The connection is shared by every queue of the process
    /// with the same URL and connection settings, across requests.
    pub fn __construct(url: Text, name: Text, options: Option<&Zval>) -> PhpResult<Self> {
        let options = options_json(options, "options")?;
        let config = json::config_from_json(&options, Style::Snake).map_err(throw)?;
        crawlq::keys::check_queue_name(&config.key_prefix, &name).map_err(throw)?;
        let fixed_clock = Mutex::new(config.fixed_clock_ms);
        let handle = Handle {
            url: url.0,
            name: name.0,
            config,
            current: Default::default(),
            fixed_clock,
        };
        handle.queue()?; // connect now: a bad URL or an unreachable Redis fails here
        Ok(Queue {
            handle: Arc::new(handle),
        })
    }

    /// The queue's name.
    pub fn get_name(&self) -> String {
        self.handle.name.clone()
    }

    /// Seed URLs or hosts: strings, or ['url' | 'host' => ..., 'priority', 'delay', 'payload',
    /// 'force']. Options: priority, delay (seconds), payload, force, crawl (the named crawl to
    /// seed into: de-duplication per crawl, hosts shared by every crawl, crawls leased from in
    /// turn). Invalid items are reported with their index, never thrown. `$progress`
    /// (optional) is called after each round trip with how far the seed is.
    pub fn seed(
        &self,
        items: &Zval,
        options: Option<&Zval>,
        progress: Option<ZendCallable>,
    ) -> PhpResult<SeedReport> {
        let (items, opts) = seed_arg(items, options, "items")?;
        seeded(self.handle.queue()?, items, opts, progress)
    }

    /// Seed crawl requests (arrays with 'url' and optional 'method', 'headers', 'body',
    /// 'user_data', 'label', 'depth', 'retries', 'found_on', 'frameworks', and each one's
    /// 'priority', 'delay', 'force'): stored in the request shape every framework adapter
    /// reads, known by their URL (a plain GET) or by method, URL and body. A request whose
    /// fields cannot be read is in the report's `invalid` (`invalid_request`). Options:
    /// priority, delay (seconds), force. `$progress`: as `seed`'s.
    pub fn seed_requests(
        &self,
        requests: &Zval,
        options: Option<&Zval>,
        progress: Option<ZendCallable>,
    ) -> PhpResult<SeedReport> {
        let queue = self.handle.queue()?;
        let (items, opts) = requests_arg(&queue, requests, options, None)?;
        seeded(queue, items, opts, progress)
    }

    /// Lease up to `$max` items, waiting up to `$wait` seconds when none is ready (an empty
    /// array after that). `$ttl`: lease time in seconds (default: the queue's lease_ttl).
    #[php(defaults(max = 1, wait = 5.0))]
    pub fn lease(&self, max: i64, wait: f64, ttl: Option<f64>) -> PhpResult<Vec<Lease>> {
        let opts = lease_options(max, wait, ttl)?;
        let leases = runtime::block_on(self.handle.queue()?.lease_with(&opts)).map_err(throw)?;
        Ok(leases.into_iter().map(Lease::new).collect())
    }

    /// Ack a lease (or an array of leases, in one round trip): true, or false when the lease
    /// was not live any more (nothing changed). Option revisit_after (seconds) queues the URL
    /// again that much later (a recrawl; 0: never; absent: the queue's option).
    pub fn ack(&self, lease: &Zval, options: Option<&Zval>) -> PhpResult<Zval> {
        let arg = LeaseArg::extract(lease)?;
        let options = options_json(options, "options")?;
        arg.answer(
            &self.handle,
            json::ack_answer_from_json(&options, Style::Snake),
        )
    }

    /// Ack a lease (or an array) and lease up to `$max` more items in one call (one round
    /// trip): ['acked' => what ack() answers, 'leases' => what lease() answers], waiting up to
    /// `$wait` seconds when none is ready.
    #[php(defaults(max = 1, wait = 5.0))]
    pub fn ack_and_lease(
        &self,
        lease: &Zval,
        max: i64,
        wait: f64,
        ttl: Option<f64>,
    ) -> PhpResult<Zval> {
        let arg = LeaseArg::extract(lease)?;
        let opts = lease_options(max, wait, ttl)?;
        let queue = self.handle.queue()?;
        let (answers, leases) =
            runtime::block_on(
                queue.ack_and_lease_answers(&arg.handles, arg.single, &opts, || false),
            )
            .map_err(throw)?;
        answer_table(zval_of(&answers.to_json(Style::Snake)), None, Some(leases))
    }

    /// Answer a fetched page and seed the links it found, in one round trip: the links are
    /// seeded as seed() seeds them (with `$options`), then the lease is acked as ack() acks it;
    /// links resolve against the page's URL as a browser resolves an href.
    /// ['acked' => bool, 'links' => SeedReport]: acked false when the lease was not live any
    /// more (its links are seeded all the same).
    pub fn ack_with_links(
        &self,
        lease: &Lease,
        links: &Zval,
        options: Option<&Zval>,
    ) -> PhpResult<Zval> {
        let (links, opts) = seed_arg(links, options, "links")?;
        let handle = lease.core.handle();
        let (acked, report) =
            runtime::block_on(self.handle.queue()?.ack_with_links(&handle, &links, &opts))
                .map_err(throw)?;
        acked_and_links(acked, report, None)
    }

    /// ackWithLinks() for crawl requests (as seedRequests() takes them): the page's lease
    /// acked and the requests found on it seeded, in one round trip. ['acked' => bool,
    /// 'links' => SeedReport] as ackWithLinks() answers.
    pub fn ack_with_requests(
        &self,
        lease: &Lease,
        requests: &Zval,
        options: Option<&Zval>,
    ) -> PhpResult<Zval> {
        let queue = self.handle.queue()?;
        let handle = lease.core.handle();
        let (items, opts) = requests_arg(&queue, requests, options, handle.url.as_deref())?;
        let (acked, report) =
            runtime::block_on(queue.ack_with_links(&handle, &items, &opts)).map_err(throw)?;
        acked_and_links(acked, report, None)
    }

    /// ackWithLinks(), then lease up to `$max` more items in the same call (one round trip per
    /// page): ['acked' => bool, 'links' => SeedReport, 'leases' => what lease() answers],
    /// waiting up to `$wait` seconds when none is ready (the lease runs whether or not
    /// `$lease` was still live). `$options`: the links' seed options, and `ttl` (seconds) for
    /// the new leases.
    #[php(defaults(max = 1, wait = 5.0))]
    pub fn ack_with_links_and_lease(
        &self,
        lease: &Lease,
        links: &Zval,
        max: i64,
        wait: f64,
        options: Option<&Zval>,
    ) -> PhpResult<Zval> {
        let (links, _) = seed_arg(links, None, "links")?;
        let (opts, next) = json::seed_and_lease_arguments_from_json(
            &options_json(options, "options")?,
            max,
            number_value(wait),
            "ackWithLinksAndLease",
            Style::Snake,
            json::Found::Links,
        )
        .map_err(throw)?;
        let handle = lease.core.handle();
        let (acked, report, leases) = runtime::block_on(
            self.handle
                .queue()?
                .ack_with_links_and_lease(&handle, &links, &opts, &next),
        )
        .map_err(throw)?;
        acked_and_links(acked, report, Some(leases))
    }

    /// ackWithRequests(), then lease up to `$max` more items in the same call, as
    /// ackWithLinksAndLease() does (one round trip per page for a crawler of crawl requests):
    /// ['acked' => bool, 'links' => SeedReport, 'leases' => what lease() answers]. `$options`:
    /// the requests' options (priority, delay, force, crawl) and `ttl` (seconds) for the new
    /// leases.
    #[php(defaults(max = 1, wait = 5.0))]
    pub fn ack_with_requests_and_lease(
        &self,
        lease: &Lease,
        requests: &Zval,
        max: i64,
        wait: f64,
        options: Option<&Zval>,
    ) -> PhpResult<Zval> {
        let queue = self.handle.queue()?;
        let requests = request_list(requests)?;
        let (opts, next) = json::seed_and_lease_arguments_from_json(
            &options_json(options, "options")?,
            max,
            number_value(wait),
            "ackWithRequestsAndLease",
            Style::Snake,
            json::Found::Requests,
        )
        .map_err(throw)?;
        let handle = lease.core.handle();
        let items = json::page_request_seed_items(
            &requests,
            Style::Snake,
            queue.ops(),
            handle.url.as_deref(),
        )
        .map_err(throw)?;
        let (acked, report, leases) =
            runtime::block_on(queue.ack_with_links_and_lease(&handle, &items, &opts, &next))
                .map_err(throw)?;
        acked_and_links(acked, report, Some(leases))
    }

    /// Fail a lease (or an array): 'retried', 'dead' or 'lost'. Options: retry (bool), delay
    /// (seconds or null for the backoff policy), reason (string), rate_limited (bool), payload
    /// (stored in place of the item's payload; null keeps it), retry_after (the host's
    /// Retry-After text, or seconds: the retry and the host wait at least that long, at most
    /// the queue's retry_after_max).
    pub fn nack(&self, lease: &Zval, options: Option<&Zval>) -> PhpResult<Zval> {
        let arg = LeaseArg::extract(lease)?;
        let options = options_json(options, "options")?;
        let answer = json::nack_options_from_json(&options, Style::Snake).map(Answer::Nack);
        arg.answer(&self.handle, answer)
    }

    /// Push a lease's deadline to now + `$ttl` seconds. One lease: the new expiresAt, or a
    /// Crawlq\LeaseLostException. An array: one expiresAt or null per lease.
    pub fn extend(&self, lease: &Zval, ttl: f64) -> PhpResult<Zval> {
        let arg = LeaseArg::extract(lease)?;
        let ttl = json::duration_arg(&number_value(ttl), "ttl", Style::Snake);
        arg.answer(&self.handle, ttl.map(Answer::Extend))
    }

    /// Give a lease (or an array) back: front of its lane, attempt not counted. Options:
    /// payload (stored in place of the item's payload; null keeps it).
    pub fn release(&self, lease: &Zval, options: Option<&Zval>) -> PhpResult<Zval> {
        let arg = LeaseArg::extract(lease)?;
        let options = options_json(options, "options")?;
        let answer = json::release_options_from_json(&options, Style::Snake).map(Answer::Release);
        arg.answer(&self.handle, answer)
    }

    /// Recover up to `$limit` expired leases now: ['requeued' => int, 'dead' => int, 'remaining' => int].
    #[php(defaults(limit = 1000))]
    pub fn reclaim(&self, limit: i64) -> PhpResult<Zval> {
        let r = runtime::block_on(self.handle.queue()?.reclaim(limit.max(0) as usize))
            .map_err(throw)?;
        Ok(zval_of(&json::reclaim_to_json(&r, Style::Snake)))
    }

    /// Depth and counters (exact, O(1)): pending, ready, delayed, leased, dead, done, seen,
    /// hosts, hosts_waiting, oldest_pending_age (seconds or null), the *_total counters, now.
    pub fn stats(&self) -> PhpResult<Zval> {
        let s = runtime::block_on(self.handle.queue()?.stats()).map_err(throw)?;
        Ok(zval_of(&json::stats_to_json(&s, Style::Snake)))
    }

    /// A page of dead letters, oldest first (arrays with id, url, host, payload, priority,
    /// attempts, last_error, died_at).
    #[php(defaults(limit = 100, offset = 0))]
    pub fn dead(&self, limit: i64, offset: i64) -> PhpResult<Zval> {
        if limit < 0 || offset < 0 {
            return Err(throw(crawlq::Error::InvalidArgument(
                "limit and offset must not be negative".into(),
            )));
        }
        let page = runtime::block_on(self.handle.queue()?.dead(limit as usize, offset as usize))
            .map_err(throw)?;
        Ok(zval_of(&Value::Array(
            page.items
                .iter()
                .map(|d| json::dead_letter_to_json(d, Style::Snake))
                .collect(),
        )))
    }

    /// The leases workers hold now, soonest expiry first (an expired one until a lease call
    /// reclaims it), `$limit` of them from the `$offset`-th on: an array with total, now and
    /// items (each as its lease shows it, without leased_at).
    #[php(defaults(limit = 100, offset = 0))]
    pub fn leased_items(&self, limit: i64, offset: i64) -> PhpResult<Zval> {
        if limit < 0 || offset < 0 {
            return Err(throw(crawlq::Error::InvalidArgument(
                "limit and offset must not be negative".into(),
            )));
        }
        let page = runtime::block_on(
            self.handle
                .queue()?
                .leased_items(limit as usize, offset as usize),
        )
        .map_err(throw)?;
        Ok(zval_of(&json::leased_page_to_json(&page, Style::Snake)))
    }

    /// The dead letters with these ids, in the order given (null for an id that is not a dead
    /// letter: unknown, requeued or purged).
    pub fn dead_letters(&self, ids: Vec<Text>) -> PhpResult<Zval> {
        let ids: Vec<String> = ids.into_iter().map(|t| t.0).collect();
        let found = runtime::block_on(self.handle.queue()?.dead_letters(&ids)).map_err(throw)?;
        Ok(zval_of(&Value::Array(
            found
                .iter()
                .map(|d| {
                    d.as_ref()
                        .map_or(Value::Null, |d| json::dead_letter_to_json(d, Style::Snake))
                })
                .collect(),
        )))
    }

    /// Queue dead letters again (the given ids, or all); returns how many.
    pub fn requeue_dead(&self, ids: Option<Vec<Text>>) -> PhpResult<i64> {
        let ids: Option<Vec<String>> = ids.map(|ids| ids.into_iter().map(|t| t.0).collect());
        let n =
            runtime::block_on(self.handle.queue()?.requeue_dead(ids.as_deref())).map_err(throw)?;
        Ok(n as i64)
    }

    /// True when nothing is queued or leased anywhere in the queue: the crawl is over for every
    /// worker (done and dead items do not count).
    pub fn is_finished(&self) -> PhpResult<bool> {
        runtime::block_on(self.handle.queue()?.is_finished()).map_err(throw)
    }

    /// Extend every lease this queue handed out and that was not answered yet, each to its
    /// lease time (what `extend_every` does from a thread of its own); returns how many.
    pub fn extend_held(&self) -> PhpResult<i64> {
        Ok(runtime::block_on(self.handle.queue()?.extend_held()).map_err(throw)? as i64)
    }

    /// Release every lease this queue handed out and that was not answered yet (a worker
    /// stopping: SIGTERM), so other workers take the items at once; returns how many.
    pub fn release_held(&self) -> PhpResult<i64> {
        Ok(runtime::block_on(self.handle.queue()?.release_held()).map_err(throw)? as i64)
    }

    /// Stop the background extender (`extend_every`) and let go of the connection once no
    /// other `Queue` object of the process uses it (queues share one connection per URL and
    /// connection settings). A later call connects again and keeps the leases still held:
    /// answer them or `releaseHeld()` (not extended meanwhile).
    pub fn close(&self) {
        self.handle.current.close();
        runtime::drop_unused_connection(&self.handle.url, &self.handle.config);
    }

    /// Delete the dead letters with these ids, or every one (they stay seen), in calls of at
    /// most 500; returns how many were deleted.
    pub fn purge_dead(&self, ids: Option<Vec<Text>>) -> PhpResult<i64> {
        let ids: Option<Vec<String>> = ids.map(|ids| ids.into_iter().map(|t| t.0).collect());
        let q = self.handle.queue()?;
        let n = runtime::block_on(crawlq::binding::calls::purge_dead(&q, ids.as_deref()))
            .map_err(throw)?;
        Ok(n as i64)
    }

    /// Set a host's politeness delay in seconds for every worker (null: back to the default).
    pub fn set_host_delay(&self, host: Text, seconds: Option<f64>) -> PhpResult<Zval> {
        let delay = seconds.map(|s| duration(s, "seconds")).transpose()?;
        let info =
            runtime::block_on(self.handle.queue()?.set_host_delay(&host, delay)).map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// Set a host's delay from its robots.txt Crawl-delay in seconds (null: it has none),
    /// unless an operator set one (setHostDelay); capped by `crawl_delay_max`.
    pub fn set_host_crawl_delay(&self, host: Text, seconds: Option<f64>) -> PhpResult<Zval> {
        let delay = seconds.map(|s| duration(s, "seconds")).transpose()?;
        let info = runtime::block_on(self.handle.queue()?.set_host_crawl_delay(&host, delay))
            .map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// A named crawl's counts: pending, ready, delayed, leased, dead, done, seen, hosts,
    /// oldest_pending_age (seconds; null: none ready), seeded_total; exact, summed over the
    /// shards; zeros for a crawl never seeded; with cap, paused, deleting and held_hosts.
    pub fn crawl_stats(&self, crawl: Text) -> PhpResult<Zval> {
        let stats = runtime::block_on(self.handle.queue()?.crawl_stats(&crawl)).map_err(throw)?;
        Ok(zval_of(&json::crawl_stats_to_json(&stats, Style::Snake)))
    }

    /// Cap a named crawl: at most `cap` of its items leased at once by all workers together
    /// (null: no cap). Returns the crawl's stats.
    pub fn set_crawl_cap(&self, crawl: Text, cap: Option<i64>) -> PhpResult<Zval> {
        let cap = cap.map(|n| whole_number(n, "cap", 1)).transpose()?;
        let stats =
            runtime::block_on(self.handle.queue()?.set_crawl_cap(&crawl, cap)).map_err(throw)?;
        Ok(zval_of(&json::crawl_stats_to_json(&stats, Style::Snake)))
    }

    /// Weigh a named crawl against the others on its hosts (null: the default, 1). Returns the
    /// crawl's stats.
    pub fn set_crawl_weight(&self, crawl: Text, weight: Option<i64>) -> PhpResult<Zval> {
        let weight = weight.map(|n| whole_number(n, "weight", 1)).transpose()?;
        let stats = runtime::block_on(self.handle.queue()?.set_crawl_weight(&crawl, weight))
            .map_err(throw)?;
        Ok(zval_of(&json::crawl_stats_to_json(&stats, Style::Snake)))
    }

    /// Give a named crawl a host budget: each host may add at most `$urls` new URLs to it
    /// (null: no budget). Returns the crawl's stats.
    pub fn set_crawl_host_budget(&self, crawl: Text, urls: Option<i64>) -> PhpResult<Zval> {
        let urls = urls.map(|n| whole_number(n, "urls", 0)).transpose()?;
        let stats = runtime::block_on(self.handle.queue()?.set_crawl_host_budget(&crawl, urls))
            .map_err(throw)?;
        Ok(zval_of(&json::crawl_stats_to_json(&stats, Style::Snake)))
    }

    /// Limit a named crawl's rate: at most `$per_second` of its items leased a second by all
    /// workers together (null: no rate). Returns the crawl's stats.
    pub fn set_crawl_rate(&self, crawl: Text, per_second: Option<f64>) -> PhpResult<Zval> {
        let stats = runtime::block_on(self.handle.queue()?.set_crawl_rate(&crawl, per_second))
            .map_err(throw)?;
        Ok(zval_of(&json::crawl_stats_to_json(&stats, Style::Snake)))
    }

    /// Pause a named crawl: none of its items is leased until resumed.
    pub fn pause_crawl(&self, crawl: Text) -> PhpResult<()> {
        runtime::block_on(self.handle.queue()?.pause_crawl(&crawl)).map_err(throw)
    }

    /// Resume a paused crawl: the hosts held for it go back to be leased.
    pub fn resume_crawl(&self, crawl: Text) -> PhpResult<()> {
        runtime::block_on(self.handle.queue()?.resume_crawl(&crawl)).map_err(throw)
    }

    /// Delete a named crawl: its items, counts, limits and listing; other crawls untouched.
    /// `$progress` (optional) is called with the totals so far after each bounded step.
    pub fn delete_crawl(&self, crawl: Text, progress: Option<ZendCallable>) -> PhpResult<Zval> {
        let q = self.handle.queue()?;
        let as_zval =
            |d: &crawlq::CrawlDeletion| zval_of(&json::crawl_deletion_to_json(d, Style::Snake));
        let gone = runtime::with_progress(progress.as_ref(), as_zval, |reporter| async move {
            q.delete_crawl_with_progress(&crawl, |d| {
                let _ = reporter.unbounded_send(d.clone());
            })
            .await
        })?;
        Ok(as_zval(&gone))
    }

    /// The queue's named crawls, sorted.
    pub fn crawls(&self) -> PhpResult<Vec<String>> {
        runtime::block_on(self.handle.queue()?.crawls()).map_err(throw)
    }

    /// Politeness state of a host: host, delay, adaptive_extra, ready, held_until.
    pub fn host_info(&self, host: Text) -> PhpResult<Zval> {
        let info = runtime::block_on(self.handle.queue()?.host_info(&host)).map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// Set the most items of a host leased at once, across every worker (0: no limit whatever
    /// `host_in_flight`; null: back to it).
    pub fn set_host_in_flight(&self, host: Text, limit: Option<i64>) -> PhpResult<Zval> {
        let limit = limit.map(|n| whole_number(n, "limit", 0)).transpose()?;
        let info = runtime::block_on(self.handle.queue()?.set_host_in_flight(&host, limit))
            .map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// Set when a host's delay is counted from ('lease' or 'answer', with an optional factor;
    /// null: back to the workers' default).
    pub fn set_host_delay_after(
        &self,
        host: Text,
        after: Option<String>,
        factor: Option<f64>,
    ) -> PhpResult<Zval> {
        let pacing = crawlq::HostPacing::from_parts(after.as_deref(), factor).map_err(throw)?;
        let info = runtime::block_on(self.handle.queue()?.set_host_delay_after(&host, pacing))
            .map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// The known-seen cache's counters (option seen_cache): ['entries' =>, 'hits' =>,
    /// 'misses' =>, 'resent' =>, 'resets' =>].
    pub fn seen_cache_stats(&self) -> PhpResult<Zval> {
        let s = self.handle.queue()?.seen_cache_stats();
        Ok(zval_of(&json::seen_cache_stats_to_json(&s, Style::Snake)))
    }

    /// Wait for a turn of the host of `$url` for a request the frontier does not lease (a
    /// redirect the HTTP client follows while fetching `$lease`): spaced from the host's
    /// leases and turns by its delay, across every worker; held while the host is at its
    /// in-flight limit (except for `$lease`'s own host) or paused. True when the request may
    /// start now, false when its turn would come after `$timeout` seconds (default 30).
    pub fn wait_host_turn(
        &self,
        url: Text,
        lease: Option<&Lease>,
        timeout: Option<f64>,
    ) -> PhpResult<bool> {
        let lease = lease.map(|l| l.core.handle());
        let timeout = match timeout {
            Some(t) => {
                json::duration_arg(&number_value(t), "timeout", Style::Snake).map_err(throw)?
            }
            None => json::HOST_TURN_TIMEOUT,
        };
        runtime::block_on(
            self.handle
                .queue()?
                .wait_host_turn(&url, lease.as_ref(), timeout),
        )
        .map_err(throw)
    }

    /// Set the most new URLs a host may add (null: back to the queue's default).
    pub fn set_host_budget(&self, host: Text, urls: Option<i64>) -> PhpResult<Zval> {
        let urls = urls.map(|n| whole_number(n, "urls", 0)).transpose()?;
        let info =
            runtime::block_on(self.handle.queue()?.set_host_budget(&host, urls)).map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// Set the budget of every host without its own (null: no default).
    pub fn set_default_host_budget(&self, urls: Option<i64>) -> PhpResult<()> {
        let urls = urls.map(|n| whole_number(n, "urls", 0)).transpose()?;
        runtime::block_on(self.handle.queue()?.set_default_host_budget(urls)).map_err(throw)
    }

    /// The queue's default host budget, or null.
    pub fn default_host_budget(&self) -> PhpResult<Option<i64>> {
        let budget =
            runtime::block_on(self.handle.queue()?.default_host_budget()).map_err(throw)?;
        Ok(budget.map(|n| n.min(i64::MAX as u64) as i64))
    }

    /// Pause the whole queue for every worker, for `$seconds` (the Redis clock) or, with null,
    /// until resume(); returns whether it was paused already.
    #[php(defaults(seconds = None))]
    pub fn pause(&self, seconds: Option<f64>) -> PhpResult<bool> {
        let q = self.handle.queue()?;
        let was = match seconds.map(|s| duration(s, "seconds")).transpose()? {
            Some(d) => runtime::block_on(q.pause_for(d)),
            None => runtime::block_on(q.pause()),
        };
        was.map_err(throw)
    }

    /// Let a paused queue lease again (blocked lease calls wake); returns whether it was paused.
    pub fn resume(&self) -> PhpResult<bool> {
        runtime::block_on(self.handle.queue()?.resume()).map_err(throw)
    }

    /// Whether the queue is paused.
    pub fn is_paused(&self) -> PhpResult<bool> {
        runtime::block_on(self.handle.queue()?.is_paused()).map_err(throw)
    }

    /// Whether the Redis server holding the queue may evict its keys when its memory is full
    /// (every master holding a shard on a Redis Cluster): null when none may, else why, as the
    /// ConfigException a queue opened without `allow_eviction` throws. Only reads.
    pub fn eviction_risk(&self) -> PhpResult<Option<String>> {
        runtime::block_on(self.handle.queue()?.eviction_risk()).map_err(throw)
    }

    /// Pause a host for every worker: no lease takes its items for `$seconds` (the Redis
    /// clock) or, with null, until resumeHost.
    #[php(defaults(seconds = None))]
    pub fn pause_host(&self, host: Text, seconds: Option<f64>) -> PhpResult<Zval> {
        let duration = seconds.map(|s| duration(s, "seconds")).transpose()?;
        let info =
            runtime::block_on(self.handle.queue()?.pause_host(&host, duration)).map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// End a host's pause; blocked lease calls wake.
    pub fn resume_host(&self, host: Text) -> PhpResult<Zval> {
        let info = runtime::block_on(self.handle.queue()?.resume_host(&host)).map_err(throw)?;
        Ok(zval_of(&json::host_info_to_json(&info, Style::Snake)))
    }

    /// A page of the hosts holding items, the most first, with their counts; pass the page's
    /// `cursor` for the next one (null after the last).
    #[php(defaults(cursor = None, limit = 100))]
    pub fn list_hosts(&self, cursor: Option<Text>, limit: i64) -> PhpResult<Zval> {
        let limit = usize::try_from(limit).map_err(|_| {
            throw(crawlq::Error::InvalidArgument(format!(
                "list_hosts limit must be 1..=1000, got {limit}"
            )))
        })?;
        let page = runtime::block_on(self.handle.queue()?.list_hosts(cursor.as_deref(), limit))
            .map_err(throw)?;
        Ok(zval_of(&json::host_page_to_json(&page, Style::Snake)))
    }

    /// Delete a host: its items, leases (they answer lost) and settings; its URLs stay seen
    /// unless `$forget_seen`.
    /// `$progress` (optional) is called with the totals so far after each bounded step.
    #[php(defaults(forget_seen = false))]
    pub fn delete_host(
        &self,
        host: Text,
        forget_seen: bool,
        progress: Option<ZendCallable>,
    ) -> PhpResult<Zval> {
        let q = self.handle.queue()?;
        let as_zval =
            |d: &crawlq::HostDeletion| zval_of(&json::host_deletion_to_json(d, Style::Snake));
        let gone = runtime::with_progress(progress.as_ref(), as_zval, |reporter| async move {
            q.delete_host_with_progress(&host, forget_seen, |d| {
                let _ = reporter.unbounded_send(d.clone());
            })
            .await
        })?;
        Ok(as_zval(&gone))
    }

    /// Delete the whole queue (every shard's items, dead letters, settings, counters and seen
    /// set): how many Redis keys were deleted. Refused while items are leased unless
    /// `$even_if_leased`.
    /// `$progress` (optional) is called with the keys deleted so far after each bounded step.
    #[php(defaults(even_if_leased = false))]
    pub fn remove_queue(
        &self,
        even_if_leased: bool,
        progress: Option<ZendCallable>,
    ) -> PhpResult<i64> {
        let q = self.handle.queue()?;
        let as_int = |n: &u64| i64::try_from(*n).unwrap_or(i64::MAX);
        let as_zval = |n: &u64| {
            let mut z = Zval::new();
            z.set_long(as_int(n));
            z
        };
        let deleted = runtime::with_progress(progress.as_ref(), as_zval, |reporter| async move {
            q.remove_queue_with_progress(even_if_leased, |n| {
                let _ = reporter.unbounded_send(n);
            })
            .await
        })?;
        Ok(as_int(&deleted))
    }

    /// The next items lease would take (one per leasable host), without leasing them.
    #[php(defaults(limit = 10))]
    pub fn peek(&self, limit: i64) -> PhpResult<Zval> {
        let items =
            runtime::block_on(self.handle.queue()?.peek(limit.max(0) as usize)).map_err(throw)?;
        Ok(zval_of(&json::stored_items_to_json(&items, Style::Snake)))
    }

    /// One host's ready items in the order its leases take them, from `offset` on (paused or
    /// held or not; delayed items are not listed; at most 250 a call), without leasing them.
    #[php(defaults(limit = 10, offset = 0))]
    pub fn peek_host(&self, host: Text, limit: i64, offset: i64) -> PhpResult<Zval> {
        if limit < 0 || offset < 0 {
            return Err(throw(crawlq::Error::InvalidArgument(
                "limit and offset must not be negative".into(),
            )));
        }
        let items = runtime::block_on(self.handle.queue()?.peek_host(
            &host,
            limit as usize,
            offset as usize,
        ))
        .map_err(throw)?;
        Ok(zval_of(&json::stored_items_to_json(&items, Style::Snake)))
    }

    /// An iterator over leases for `foreach`, `$max` per round trip. It stops when a lease call
    /// waited `$wait` seconds for nothing if `$stopWhenEmpty`, and otherwise waits on. Closing
    /// it (or letting it go) releases what it still holds.
    #[php(defaults(max = 10, wait = 5.0, stop_when_empty = false))]
    pub fn work(
        &self,
        max: i64,
        wait: f64,
        ttl: Option<f64>,
        stop_when_empty: bool,
    ) -> PhpResult<Work> {
        let opts = lease_options(max, wait, ttl)?;
        Ok(Work {
            handle: self.handle.clone(),
            work: crawlq::binding::Work::new(opts, stop_when_empty),
            current: Default::default(),
            position: AtomicI64::new(-1),
        })
    }

    /// Test only: pin the scripts' clock to `$ms` since the epoch (null: the server's clock).
    #[php(name = "_setFixedClock")]
    pub fn set_fixed_clock(&self, ms: Option<i64>) -> PhpResult<()> {
        *self
            .handle
            .fixed_clock
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = ms;
        self.handle.queue()?.set_fixed_clock(ms);
        Ok(())
    }
}

/// The `foreach` iterator `Crawlq\Queue::work()` returns.
#[php_class]
#[php(name = "Crawlq\\Work")]
#[php(flags = ClassFlags::Final)]
#[php(implements(ce = ce::iterator, stub = "\\Iterator"))]
pub struct Work {
    handle: Arc<Handle>,
    work: crawlq::binding::Work,
    current: Mutex<Option<crawlq::Lease>>,
    position: AtomicI64,
}

impl Work {
    fn advance(&self) -> PhpResult<()> {
        let queue = self.handle.queue()?;
        let next = runtime::block_on(self.work.next(&queue, || false)).map_err(throw)?;
        if next.is_some() {
            self.position.fetch_add(1, Ordering::Relaxed);
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = next;
        Ok(())
    }

    fn stop(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Ok(queue) = self.handle.queue() {
            let _ = runtime::block_on(self.work.finish(&queue));
        }
    }
}

#[php_impl]
impl Work {
    /// The current lease.
    pub fn current(&self) -> Option<Lease> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .map(Lease::new)
    }

    /// 0, 1, 2, ... for the leases handed out.
    pub fn key(&self) -> i64 {
        self.position.load(Ordering::Relaxed)
    }

    /// Lease the next item (waiting as configured).
    pub fn next(&self) -> PhpResult<()> {
        self.advance()
    }

    /// Start: lease the first item (only once; a Work is not rewindable).
    pub fn rewind(&self) -> PhpResult<()> {
        if self.position.load(Ordering::Relaxed) < 0
            && self
                .current
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none()
        {
            return self.advance();
        }
        Ok(())
    }

    /// Whether there is a current lease.
    pub fn valid(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Stop and release the prefetched leases and the current one (a no-op for a lease
    /// already answered).
    pub fn close(&self) {
        self.stop();
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Resolve a link found on `$base` (a page URL) against it, as a browser would; null when it
/// is not a valid URL. PHP has no URL join of its own (ackWithLinks() and ackWithRequests()
/// resolve a page's links against its URL themselves).
#[php_function]
#[php(name = "Crawlq\\resolve_url")]
pub fn resolve_url(base: String, href: String) -> Option<String> {
    crawlq::normalize::resolve(&base, &href)
}

/// A Redis URL without its user info (`redis://***@host:6379/0`), as connect errors name it:
/// for logging where a queue is without its password.
#[php_function]
#[php(name = "Crawlq\\redacted_url")]
pub fn redacted_url(url: String) -> String {
    crawlq::config::redacted_url(&url)
}

/// The canonical form crawlq gives an input: ['kind' =>, 'canonical' =>, 'host' =>,
/// 'fingerprint' =>]. Throws Crawlq\InvalidItemException (with `$reason`) for an input it
/// would refuse.
#[php_function]
#[php(name = "Crawlq\\normalize")]
pub fn normalize(input: ext_php_rs::binary::Binary<u8>) -> PhpResult<Zval> {
    // bytes that are not UTF-8 become U+FFFD, as seeded items do
    let input = String::from_utf8_lossy(&input);
    Ok(zval_of(&json::normalized_to_json(&input).map_err(throw)?))
}

/// The shard an input (URL or host) belongs to in a queue of `$shards` shards (1..1024).
#[php_function]
#[php(name = "Crawlq\\shard_of")]
pub fn shard_of(input: ext_php_rs::binary::Binary<u8>, shards: i64) -> PhpResult<i64> {
    let input = String::from_utf8_lossy(&input);
    Ok(i64::from(
        json::shard_of_input(&input, shards).map_err(throw)?,
    ))
}

/// The crawl request of a lease (docs/PROTOCOL.md section 10): ['url', 'method', 'headers'
/// (list of [name, value]), 'body' (a string of bytes, or null), 'user_data', 'label', 'depth',
/// 'retries', 'found_on', 'frameworks']. An item seeded through the plain API is a GET of its
/// URL with its payload as 'user_data'. Throws Crawlq\ProtocolException for a host item or a
/// request this version cannot read (dead-letter it as `undecodable: ...`).
#[php_function]
#[php(name = "Crawlq\\request_of")]
pub fn request_of(lease: &Lease) -> PhpResult<Zval> {
    let request = json::request_of_item(
        lease.core.url.as_deref(),
        lease.core.payload.as_ref(),
        Style::Snake,
    )
    .map_err(throw)?;
    Ok(zval_of(&request))
}

/// The crawl request of a dead letter (an array as dead() or deadLetters() return it), as
/// request_of reads a lease's: what a failed-job store shows of it.
#[php_function]
#[php(name = "Crawlq\\request_of_dead_letter")]
pub fn request_of_dead_letter(dead: &Zval) -> PhpResult<Zval> {
    let value = to_json(dead, "dead").map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?;
    let url = value.get("url").and_then(Value::as_str);
    let request = json::request_of_item(url, value.get("payload"), Style::Snake).map_err(throw)?;
    Ok(zval_of(&request))
}

/// The payload a crawl request (an array as request_of returns it) is stored as: what a nack
/// or release stores to keep an updated request (its retries, its framework's fields).
#[php_function]
#[php(name = "Crawlq\\request_payload")]
pub fn request_payload(request: &Zval) -> PhpResult<Zval> {
    let value =
        to_json(request, "request").map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?;
    let request = json::request_from_json(&value, Style::Snake).map_err(throw)?;
    Ok(zval_of(&request.payload()))
}

/// A payload kept as the JSON the core made it, for a nack's or release's `payload` option: PHP
/// arrays cannot tell an empty JSON object from an empty list, so a request read as arrays and
/// written back could change another framework's `{}` into `[]`; this one is stored as it is.
#[php_class]
#[php(name = "Crawlq\\Payload")]
#[php(flags = ClassFlags::Final)]
pub struct Payload {
    pub(crate) value: Value,
}

#[php_impl]
impl Payload {
    /// A payload from JSON text, for a value PHP arrays cannot hold as it is (`{}`).
    pub fn from_json(json: Text) -> PhpResult<Payload> {
        serde_json::from_str(&json.0)
            .map(|value| Payload { value })
            .map_err(|e| {
                throw(crawlq::Error::InvalidArgument(format!(
                    "a payload must be JSON text: {e}"
                )))
            })
    }

    /// The payload as PHP values (an empty JSON object reads as an empty array).
    pub fn to_array(&self) -> Zval {
        zval_of(&self.value)
    }
}

/// The payload that stores a leased crawl request again with `$changes` (request_of's fields;
/// `frameworks` changes replace that framework's namespace only), read from the item as stored
/// so nothing another framework wrote is changed: what a retry's nack stores (`['retries' =>
/// $request['retries'] + 1]`). Throws Crawlq\ProtocolException for an item that is not a crawl
/// request, Crawlq\InvalidArgumentException for a bad change or a change of its URL.
#[php_function]
#[php(name = "Crawlq\\request_update")]
pub fn request_update(lease: &Lease, changes: Option<&Zval>) -> PhpResult<Payload> {
    let changes = match changes {
        Some(z) => {
            to_json(z, "changes").map_err(|e| not_json(e, crawlq::Error::InvalidArgument))?
        }
        None => Value::Null,
    };
    let value = json::request_update(
        lease.core.url.as_deref(),
        lease.core.payload.as_ref(),
        &changes,
        Style::Snake,
    )
    .map_err(throw)?;
    Ok(Payload { value })
}

/// The default of every queue option (seconds for durations; null: unset), from the core's
/// option table: what framework adapters read instead of defaults of their own.
#[php_function]
#[php(name = "Crawlq\\default_options")]
pub fn default_options() -> Zval {
    zval_of(&Value::Object(
        crawlq::Config::default().to_options(Style::Snake),
    ))
}

/// The options a framework adapter opens its queue with: `options`, checked, with
/// `extend_every` a third of `lease_ttl` unless given.
#[php_function]
#[php(name = "Crawlq\\framework_options")]
pub fn framework_options(options: Option<&Zval>) -> PhpResult<Zval> {
    let options = match options {
        Some(z) => convert::options_to_json(z, "options")
            .map_err(|e| not_json(e, crawlq::Error::Config))?,
        None => Value::Null,
    };
    let options = json::framework_options_json(&options, Style::Snake).map_err(throw)?;
    Ok(zval_of(&options))
}

#[php_function]
#[php(name = "Crawlq\\connection_count")]
pub fn connection_count() -> i64 {
    runtime::connection_count() as i64
}

#[php_module]
pub fn module(module: ModuleBuilder) -> ModuleBuilder {
    module
        .name("crawlq")
        .startup_function(errors::register)
        .class::<Queue>()
        .class::<Lease>()
        .class::<SeedReport>()
        .class::<Work>()
        .class::<Payload>()
        .function(wrap_function!(connection_count))
        .function(wrap_function!(resolve_url))
        .function(wrap_function!(redacted_url))
        .function(wrap_function!(normalize))
        .function(wrap_function!(shard_of))
        .function(wrap_function!(request_of))
        .function(wrap_function!(request_of_dead_letter))
        .function(wrap_function!(request_payload))
        .function(wrap_function!(request_update))
        .function(wrap_function!(default_options))
        .function(wrap_function!(framework_options))
}
